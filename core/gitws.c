/* core: a revision of a git repository as a tar stream, with libgit2. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <git2.h>

#include <cordon/sdk/path.h>
#include <cordon/sdk/tar.h>
#include "core/gitws.h"

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static int git_init_result;

/* libgit2 is set up once per process and never shut down: other threads
 * (and the caller's other uses of libgit2) may still need it. */
static void git_init(void)
{
    git_init_result = git_libgit2_init();
}

/* libgit2's own words for the last failure. */
static const char *git_why(void)
{
    const git_error *e = git_error_last();

    return e != NULL && e->message != NULL ? e->message : "unknown error";
}

struct walk {
    git_repository *repo;
    git_odb *odb;
    struct cordon_tar_writer *w;
    const char *revision;
    uint64_t max_bytes, max_entries;
    uint64_t entries, bytes, visited;
    cJSON *submodules;
};

/* The same name as ".git" to git on any filesystem that folds case. */
static bool is_dotgit(const char *name)
{
    return strcasecmp(name, ".git") == 0;
}

/* Re-issue an sdk error with the path it concerns. */
static int tar_fail(struct cordon_error *err, const char *path, const struct cordon_error *in)
{
    return cordon_error_set(err, in->code, in->os_errno, "workspace: \"%.*s\": %s",
                            cordon_text_fit(path, 300), path, in->message);
}

/* A blob of the tree: a regular file, or a symlink whose target is its bytes. */
static int add_blob(struct walk *wk, const git_tree_entry *te, const char *path, bool link,
                    mode_t mode, struct cordon_error *err)
{
    struct cordon_error in;
    git_object_t type;
    git_blob *blob = NULL;
    size_t size = 0;
    char *target = NULL;
    int r;

    /* The size from the object header is checked before the blob is loaded. */
    if (git_odb_read_header(&size, &type, wk->odb, git_tree_entry_id(te)) < 0)
        return cordon_error_set(err, CORDON_E_IO, 0, "workspace: \"%.*s\": read object: %s",
                                cordon_text_fit(path, 300), path, git_why());
    if (!link && wk->max_bytes != 0 && size > wk->max_bytes - wk->bytes)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "workspace: %" PRIu64 " bytes at revision %.*s exceed "
                                "disk_bytes %" PRIu64,
                                wk->bytes + (uint64_t)size, cordon_text_fit(wk->revision, 200),
                                wk->revision, wk->max_bytes);
    if (link && size > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "workspace: \"%.*s\": symbolic link target is longer than %d "
                                "bytes",
                                cordon_text_fit(path, 300), path, CORDON_PATH_MAX);
    if (git_blob_lookup(&blob, wk->repo, git_tree_entry_id(te)) < 0)
        return cordon_error_set(err, CORDON_E_IO, 0, "workspace: \"%.*s\": read blob: %s",
                                cordon_text_fit(path, 300), path, git_why());
    cordon_error_init(&in);
    if (link) {
        size = (size_t)git_blob_rawsize(blob);
        target = strndup(git_blob_rawcontent(blob), size);
        if (target == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "workspace: out of memory");
            goto out;
        }
        if (strlen(target) != size) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "workspace: \"%.*s\": symbolic link target holds a NUL byte",
                                 cordon_text_fit(path, 300), path);
            goto out;
        }
        r = cordon_tar_writer_add_symlink(wk->w, path, target, &in);
    } else {
        r = cordon_tar_writer_add_file(wk->w, path, git_blob_rawcontent(blob),
                                       (size_t)git_blob_rawsize(blob), mode, &in);
        if (r == 0)
            wk->bytes += (uint64_t)git_blob_rawsize(blob);
    }
    if (r < 0)
        r = tar_fail(err, path, &in);
out:
    free(target);
    git_blob_free(blob);
    return r;
}

static int walk_tree(struct walk *wk, const git_tree *tree, const char *prefix, unsigned depth,
                     struct cordon_error *err);

static int walk_entry(struct walk *wk, const git_tree_entry *te, const char *prefix,
                      unsigned depth, struct cordon_error *err)
{
    struct cordon_error in;
    const char *name = git_tree_entry_name(te);
    git_tree *sub = NULL;
    char *path = NULL;
    int r = 0;

    /* A tree holding ".git" is what git itself refuses to check out. */
    if (is_dotgit(name))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "workspace: \"%.*s%s%.*s\" at revision %.*s: a \".git\" "
                                "entry is not allowed",
                                cordon_text_fit(prefix, 300), prefix, prefix[0] ? "/" : "",
                                cordon_text_fit(name, 100), name,
                                cordon_text_fit(wk->revision, 200), wk->revision);
    wk->visited++;
    if (wk->max_entries != 0 && wk->visited > wk->max_entries)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "workspace: more than %" PRIu64 " entries at revision %.*s",
                                wk->max_entries, cordon_text_fit(wk->revision, 200), wk->revision);
    if (prefix[0] == '\0')
        path = strdup(name);
    else if (asprintf(&path, "%s/%s", prefix, name) < 0)
        path = NULL;
    if (path == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "workspace: out of memory");
    cordon_error_init(&in);
    switch (git_tree_entry_filemode(te)) {
    case GIT_FILEMODE_TREE:
        r = cordon_tar_writer_add_dir(wk->w, path, 0755, &in);
        if (r < 0) {
            r = tar_fail(err, path, &in);
            break;
        }
        if (git_tree_lookup(&sub, wk->repo, git_tree_entry_id(te)) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, 0, "workspace: \"%.*s\": read tree: %s",
                                 cordon_text_fit(path, 300), path, git_why());
            break;
        }
        wk->entries++;
        r = walk_tree(wk, sub, path, depth + 1, err);
        break;
    case GIT_FILEMODE_BLOB:
    case GIT_FILEMODE_BLOB_EXECUTABLE:
        r = add_blob(wk, te, path, false,
                     git_tree_entry_filemode(te) == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644,
                     err);
        wk->entries += r == 0;
        break;
    case GIT_FILEMODE_LINK:
        r = add_blob(wk, te, path, true, 0777, err);
        wk->entries += r == 0;
        break;
    case GIT_FILEMODE_COMMIT:
        /* A submodule's commit lives in another repository: listed, not followed. */
        if (!cJSON_AddItemToArray(wk->submodules, cJSON_CreateString(path)))
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "workspace: out of memory");
        break;
    default:
        r = cordon_error_set(
            err, CORDON_E_INVALID, 0, "workspace: \"%.*s\": unknown git file mode %06o",
            cordon_text_fit(path, 300), path, (unsigned)git_tree_entry_filemode_raw(te));
        break;
    }
    git_tree_free(sub);
    free(path);
    return r;
}

/* Pre-order, in the tree's own (git's) order. */
static int walk_tree(struct walk *wk, const git_tree *tree, const char *prefix, unsigned depth,
                     struct cordon_error *err)
{
    size_t n = git_tree_entrycount(tree);

    if (depth >= CORDON_GITWS_DEPTH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "workspace: \"%.*s\": directories nested more than %d deep",
                                cordon_text_fit(prefix, 300), prefix, CORDON_GITWS_DEPTH_MAX);
    for (size_t i = 0; i < n; i++) {
        int r = walk_entry(wk, git_tree_entry_byindex(tree, i), prefix, depth, err);

        if (r < 0)
            return r;
    }
    return 0;
}

static int check_args(const char *repository, const char *revision, int tar_fd,
                      const struct cordon__git_export *ret, struct cordon_error *err)
{
    size_t len;

    if (tar_fd < 0 || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "workspace: no stream or result");
    if (repository == NULL || repository[0] != '/')
        return cordon_error_set(
            err, CORDON_E_INVALID, 0, "workspace.repository: \"%.*s\" must be an absolute path",
            cordon_text_fit(repository ? repository : "", 300), repository ? repository : "");
    if (revision == NULL || revision[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "workspace.revision: missing");
    len = strnlen(revision, CORDON_GITWS_REVISION_MAX + 1);
    if (len > CORDON_GITWS_REVISION_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "workspace.revision: longer than %d bytes",
                                CORDON_GITWS_REVISION_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)revision[i] < 0x20 || revision[i] == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "workspace.revision: control character at byte %zu", i);
    return 0;
}

/* The repository at its real path, and the tree of the commit revision names. */
static int resolve_revision(const char *repository, const char *revision, git_repository **ret_repo,
                            git_tree **ret_tree, char ret_commit[41], struct cordon_error *err)
{
    char *real = realpath(repository, NULL);
    git_repository *repo = NULL;
    git_object *obj = NULL, *commit = NULL;
    int r = 0, gr;

    if (real == NULL)
        return cordon_error_set(err, errno == ENOMEM ? CORDON_E_NOMEM : CORDON_E_NOT_FOUND, errno,
                                "workspace.repository: %.*s is not a git repository (%s)",
                                cordon_text_fit(repository, 300), repository, strerror(errno));
    /* NO_SEARCH: the path itself must be the repository, not a directory inside one. */
    gr = git_repository_open_ext(&repo, real, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
    if (gr == GIT_ENOTFOUND) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "workspace.repository: %.*s is not a git repository",
                             cordon_text_fit(repository, 300), repository);
        goto out;
    }
    if (gr < 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "workspace.repository: %.*s: %s",
                             cordon_text_fit(repository, 300), repository, git_why());
        goto out;
    }
    gr = git_revparse_single(&obj, repo, revision);
    if (gr == GIT_EAMBIGUOUS) {
        r = cordon_error_set(
            err, CORDON_E_INVALID, 0, "workspace.revision: \"%.*s\" is ambiguous in %.*s",
            cordon_text_fit(revision, 200), revision, cordon_text_fit(repository, 300), repository);
        goto out;
    }
    if (gr < 0 || git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) < 0) {
        r = cordon_error_set(err, CORDON_E_NOT_FOUND, 0,
                             "workspace.revision: \"%.*s\" does not name a commit in %.*s",
                             cordon_text_fit(revision, 200), revision,
                             cordon_text_fit(repository, 300), repository);
        goto out;
    }
    if (git_commit_tree(ret_tree, (git_commit *)commit) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "workspace.revision: \"%.*s\": read tree: %s",
                             cordon_text_fit(revision, 200), revision, git_why());
        goto out;
    }
    git_oid_tostr(ret_commit, 41, git_object_id(commit));
    *ret_repo = repo;
    repo = NULL;
out:
    git_object_free(commit);
    git_object_free(obj);
    git_repository_free(repo);
    free(real);
    return r;
}

int cordon__git_export_tar(const char *repository, const char *revision, uint64_t max_bytes,
                           uint64_t max_entries, int tar_fd, struct cordon__git_export *ret,
                           struct cordon_error *err)
{
    struct cordon__git_export out;
    struct cordon_error in;
    struct walk wk;
    git_tree *tree = NULL;
    int r;

    memset(&out, 0, sizeof(out));
    memset(&wk, 0, sizeof(wk));
    r = check_args(repository, revision, tar_fd, ret, err);
    if (r < 0)
        return r;
    pthread_once(&git_once, git_init);
    if (git_init_result < 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "workspace: libgit2: %s",
                                git_why());
    r = resolve_revision(repository, revision, &wk.repo, &tree, out.commit, err);
    if (r < 0)
        goto out;
    wk.revision = revision;
    wk.max_bytes = max_bytes;
    wk.max_entries = max_entries;
    wk.submodules = cJSON_CreateArray();
    if (wk.submodules == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "workspace: out of memory");
        goto out;
    }
    if (git_repository_odb(&wk.odb, wk.repo) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, 0, "workspace.repository: %.*s: %s",
                             cordon_text_fit(repository, 300), repository, git_why());
        goto out;
    }
    cordon_error_init(&in);
    r = cordon_tar_writer_open(tar_fd, &wk.w, &in);
    if (r < 0) {
        r = cordon_error_set(err, in.code, in.os_errno, "workspace: %s", in.message);
        goto out;
    }
    r = walk_tree(&wk, tree, "", 0, err);
    if (r < 0)
        goto out;
    r = cordon_tar_writer_close(wk.w, &in);
    wk.w = NULL;
    if (r < 0) {
        r = cordon_error_set(err, in.code, in.os_errno, "workspace: %s", in.message);
        goto out;
    }
    out.entries = wk.entries;
    out.bytes = wk.bytes;
    out.submodules = wk.submodules;
    wk.submodules = NULL;
    *ret = out;
out:
    /* Abandoned, a cut-off stream gets no end blocks and cannot pass for a whole one. */
    cordon_tar_writer_free(wk.w);
    cJSON_Delete(wk.submodules);
    git_odb_free(wk.odb);
    git_tree_free(tree);
    git_repository_free(wk.repo);
    return r;
}

void cordon__git_export_clear(struct cordon__git_export *e)
{
    if (e == NULL)
        return;
    cJSON_Delete(e->submodules);
    memset(e, 0, sizeof(*e));
}
