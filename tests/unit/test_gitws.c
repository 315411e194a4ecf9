/* Unit tests of core/gitws.c: repositories made with libgit2, streams read back with libarchive. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "core/gitws.h"
#include "tests/unit/helpers.h"

/*
 * Every test gets a fresh repository <tmp>/repo with two commits on main:
 *   c1: README.md "v1\n"                         (tags: v1 annotated, HEAD~1)
 *   c2: the tree of want_c2 below, with a gitlink vendor/dep
 * and a plain directory <tmp>/plain that is not a repository.
 */
static char *tmp, *repo_path, *plain_path;
static git_repository *repo;
static git_oid c1, c2;

struct want {
    const char *name;
    mode_t type;     /* AE_IFREG, AE_IFDIR, AE_IFLNK */
    mode_t perm;
    const char *body; /* file content or link target */
};

/* Pre-order in git's order ("README.md" < "abs" < "bin" ...), nothing else. */
static const struct want want_c2[] = {
    {"README.md", AE_IFREG, 0644, "hello\n"},
    {"abs", AE_IFLNK, 0777, "/etc/passwd"},
    {"bin", AE_IFDIR, 0755, NULL},
    {"bin/run.sh", AE_IFREG, 0755, "#!/bin/sh\necho hi\n"},
    {"link", AE_IFLNK, 0777, "src/lib/util.c"},
    {"src", AE_IFDIR, 0755, NULL},
    {"src/lib", AE_IFDIR, 0755, NULL},
    {"src/lib/util.c", AE_IFREG, 0644, "int x;\n"},
    {"vendor", AE_IFDIR, 0755, NULL},
};
static const struct want want_c1[] = {
    {"README.md", AE_IFREG, 0644, "v1\n"},
};

static git_oid blob(const char *data)
{
    git_oid id;

    cr_assert_eq(git_blob_create_from_buffer(&id, repo, data, strlen(data)), 0);
    return id;
}

struct node {
    const char *name;
    git_filemode_t mode;
    git_oid id;
};

static git_oid tree(const struct node *ns, size_t n)
{
    git_treebuilder *tb = NULL;
    git_oid id;

    cr_assert_eq(git_treebuilder_new(&tb, repo, NULL), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(git_treebuilder_insert(NULL, tb, ns[i].name, &ns[i].id, ns[i].mode), 0,
                     "%s: %s", ns[i].name, git_error_last()->message);
    cr_assert_eq(git_treebuilder_write(&id, tb), 0);
    git_treebuilder_free(tb);
    return id;
}

/* A commit of tree_id on top of parent (may be NULL) that moves ref. */
static git_oid commit(git_oid tree_id, const git_oid *parent, const char *ref)
{
    git_signature *sig = NULL;
    git_commit *p = NULL;
    git_tree *t = NULL;
    git_oid id;

    cr_assert_eq(git_signature_new(&sig, "cordon test", "test@example.invalid", 1700000000, 0), 0);
    cr_assert_eq(git_tree_lookup(&t, repo, &tree_id), 0);
    if (parent != NULL)
        cr_assert_eq(git_commit_lookup(&p, repo, parent), 0);
    cr_assert_eq(git_commit_create_v(&id, repo, ref, sig, sig, NULL, "test", t, p ? 1 : 0, p), 0,
                 "%s", git_error_last()->message);
    git_commit_free(p);
    git_tree_free(t);
    git_signature_free(sig);
    return id;
}

static void setup(void)
{
    git_oid zero_gitlink, lib, src, bin, vendor, t1, t2;
    git_object *target = NULL;
    git_signature *sig = NULL;
    git_oid tag;

    git_libgit2_init();
    tmp = test_mkdtemp();
    cr_assert_not_null(tmp);
    cr_assert(asprintf(&repo_path, "%s/repo", tmp) > 0);
    cr_assert(asprintf(&plain_path, "%s/plain", tmp) > 0);
    cr_assert_eq(mkdir(plain_path, 0755), 0);
    cr_assert_eq(git_repository_init(&repo, repo_path, 0), 0);

    t1 = tree((struct node[]){{"README.md", GIT_FILEMODE_BLOB, blob("v1\n")}}, 1);
    c1 = commit(t1, NULL, "refs/heads/main");
    lib = tree((struct node[]){{"util.c", GIT_FILEMODE_BLOB, blob("int x;\n")}}, 1);
    src = tree((struct node[]){{"lib", GIT_FILEMODE_TREE, lib}}, 1);
    bin = tree((struct node[]){{"run.sh", GIT_FILEMODE_BLOB_EXECUTABLE,
                                blob("#!/bin/sh\necho hi\n")}},
               1);
    /* A gitlink names a commit of another repository: it need not exist here. */
    cr_assert_eq(git_oid_fromstr(&zero_gitlink, "1234567890123456789012345678901234567890"), 0);
    vendor = tree((struct node[]){{"dep", GIT_FILEMODE_COMMIT, zero_gitlink}}, 1);
    t2 = tree((struct node[]){
                  {"README.md", GIT_FILEMODE_BLOB, blob("hello\n")},
                  {"abs", GIT_FILEMODE_LINK, blob("/etc/passwd")},
                  {"bin", GIT_FILEMODE_TREE, bin},
                  {"link", GIT_FILEMODE_LINK, blob("src/lib/util.c")},
                  {"src", GIT_FILEMODE_TREE, src},
                  {"vendor", GIT_FILEMODE_TREE, vendor},
              },
              6);
    c2 = commit(t2, &c1, "refs/heads/main");
    cr_assert_eq(git_repository_set_head(repo, "refs/heads/main"), 0);
    /* An annotated tag: the export must peel it to its commit. */
    cr_assert_eq(git_signature_new(&sig, "cordon test", "test@example.invalid", 1700000000, 0), 0);
    cr_assert_eq(git_object_lookup(&target, repo, &c1, GIT_OBJECT_COMMIT), 0);
    cr_assert_eq(git_tag_create(&tag, repo, "v1", target, sig, "release 1", 0), 0);
    git_object_free(target);
    git_signature_free(sig);
}

static void teardown(void)
{
    git_repository_free(repo);
    repo = NULL;
    test_rmtree(tmp);
    free(tmp);
    free(repo_path);
    free(plain_path);
    git_libgit2_shutdown();
}

TestSuite(gitws, .init = setup, .fini = teardown, .timeout = 60);

/* A fresh file to receive a stream. */
static int stream_file(void)
{
    char *p = NULL;
    int fd;

    cr_assert(asprintf(&p, "%s/out.tar", tmp) > 0);
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    free(p);
    return fd;
}

struct got {
    char name[256];
    mode_t type, perm;
    char body[256];
};

/* Read the stream in fd back; *ret_complete tells whether it ended properly. */
static size_t read_back(int fd, struct got *got, size_t max, bool *ret_complete)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    size_t n = 0;
    int ar;

    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    archive_read_support_format_tar(a);
    archive_read_support_format_empty(a);
    cr_assert_eq(archive_read_open_fd(a, fd, 10240), ARCHIVE_OK);
    while ((ar = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        struct got *g = &got[n++];
        la_ssize_t got_len = 0;
        size_t len;

        cr_assert_leq(n, max, "more entries than expected");
        memset(g, 0, sizeof(*g));
        snprintf(g->name, sizeof(g->name), "%s", archive_entry_pathname(e));
        len = strlen(g->name);
        if (len > 0 && g->name[len - 1] == '/')
            g->name[len - 1] = '\0';
        g->type = archive_entry_filetype(e);
        g->perm = archive_entry_perm(e);
        if (g->type == AE_IFLNK)
            snprintf(g->body, sizeof(g->body), "%s", archive_entry_symlink(e));
        else if (g->type == AE_IFREG)
            got_len = archive_read_data(a, g->body, sizeof(g->body) - 1);
        /* A cut-off stream may end inside a file's data. */
        if (got_len < 0)
            break;
    }
    *ret_complete = ar == ARCHIVE_EOF;
    archive_read_free(a);
    return n;
}

static void assert_stream(int fd, const struct want *want, size_t n_want)
{
    struct got got[32];
    bool complete = false;
    size_t n = read_back(fd, got, 32, &complete);

    cr_assert(complete, "the stream does not end properly");
    cr_assert_eq(n, n_want, "%zu entries, want %zu", n, n_want);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(got[i].name, want[i].name, "entry %zu", i);
        cr_expect_eq(got[i].type, want[i].type, "%s: type %o", got[i].name, got[i].type);
        cr_expect_eq(got[i].perm, want[i].perm, "%s: mode %o", got[i].name, got[i].perm);
        if (want[i].body != NULL)
            cr_expect_str_eq(got[i].body, want[i].body, "%s", got[i].name);
        cr_expect_null(strstr(got[i].name, ".git"), "%s", got[i].name);
    }
}

/* ---- revisions that name a commit -------------------------------------- */

enum rev_kind { REV_BRANCH, REV_TAG, REV_FULL_SHA, REV_SHORT_SHA, REV_HEAD_1, REV_HEAD };

static const struct {
    enum rev_kind kind;
    int commit; /* 1 or 2 */
} revision_cases[] = {
    {REV_BRANCH, 2}, {REV_TAG, 1}, {REV_FULL_SHA, 2}, {REV_SHORT_SHA, 1}, {REV_HEAD_1, 1},
    {REV_HEAD, 2},
};

ParameterizedTestParameters(gitws, exports_each_kind_of_revision)
{
    static size_t idx[sizeof(revision_cases) / sizeof(revision_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, gitws, exports_each_kind_of_revision)
{
    const git_oid *want_id = revision_cases[*at].commit == 1 ? &c1 : &c2;
    struct cordon__git_export ex;
    struct cordon_error err;
    char rev[64], sha[41];
    int fd = stream_file();

    git_oid_tostr(sha, sizeof(sha), want_id);
    switch (revision_cases[*at].kind) {
    case REV_BRANCH: snprintf(rev, sizeof(rev), "main"); break;
    case REV_TAG: snprintf(rev, sizeof(rev), "v1"); break;
    case REV_FULL_SHA: snprintf(rev, sizeof(rev), "%s", sha); break;
    case REV_SHORT_SHA: snprintf(rev, sizeof(rev), "%.10s", sha); break;
    case REV_HEAD_1: snprintf(rev, sizeof(rev), "HEAD~1"); break;
    case REV_HEAD: snprintf(rev, sizeof(rev), "HEAD"); break;
    }
    cordon_error_init(&err);
    memset(&ex, 0, sizeof(ex));
    cr_assert_eq(cordon__git_export_tar(repo_path, rev, 0, 0, fd, &ex, &err), 0, "%s: %s", rev,
                 err.message);
    cr_expect_str_eq(ex.commit, sha, "%s", rev);
    if (revision_cases[*at].commit == 1) {
        assert_stream(fd, want_c1, 1);
        cr_expect_eq(ex.entries, 1);
        cr_expect_eq(ex.bytes, 3);
        cr_expect_eq(cJSON_GetArraySize(ex.submodules), 0);
    } else {
        assert_stream(fd, want_c2, sizeof(want_c2) / sizeof(want_c2[0]));
    }
    cordon__git_export_clear(&ex);
    close(fd);
}

Test(gitws, lists_submodules_and_counts)
{
    struct cordon__git_export ex;
    struct cordon_error err;
    int fd = stream_file();

    cordon_error_init(&err);
    cr_assert_eq(cordon__git_export_tar(repo_path, "main", 1 << 20, 100, fd, &ex, &err), 0, "%s",
                 err.message);
    cr_assert_eq(cJSON_GetArraySize(ex.submodules), 1);
    cr_expect_str_eq(cJSON_GetArrayItem(ex.submodules, 0)->valuestring, "vendor/dep");
    cr_expect_eq(ex.entries, sizeof(want_c2) / sizeof(want_c2[0]));
    /* Regular files only: "hello\n" + the script + "int x;\n". */
    cr_expect_eq(ex.bytes, 6 + 18 + 7);
    cordon__git_export_clear(&ex);
    cr_expect_null(ex.submodules);
    cordon__git_export_clear(NULL);
    close(fd);
}

/* Limits exactly at the tree's size pass; one less stops the stream. */
Test(gitws, limits_are_inclusive)
{
    struct cordon__git_export ex;
    struct cordon_error err;
    int fd = stream_file();

    cordon_error_init(&err);
    cr_assert_eq(cordon__git_export_tar(repo_path, "main", 31, 10, fd, &ex, &err), 0, "%s",
                 err.message);
    cordon__git_export_clear(&ex);
    close(fd);
}

/* The repository is found by its real path: a symlink to it works. */
Test(gitws, opens_through_a_symlinked_path)
{
    struct cordon__git_export ex;
    struct cordon_error err;
    char *alias = NULL;
    int fd = stream_file();

    cr_assert(asprintf(&alias, "%s/alias", tmp) > 0);
    cr_assert_eq(symlink(repo_path, alias), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon__git_export_tar(alias, "v1", 0, 0, fd, &ex, &err), 0, "%s", err.message);
    assert_stream(fd, want_c1, 1);
    cordon__git_export_clear(&ex);
    free(alias);
    close(fd);
}

/* ---- refusals ---------------------------------------------------------- */

enum bad_kind {
    BAD_REVISION,
    BAD_REVISION_BLOB,
    BAD_REVISION_EMPTY,
    BAD_REVISION_CONTROL,
    BAD_NOT_REPO,
    BAD_MISSING_PATH,
    BAD_RELATIVE,
    BAD_SUBDIR,
    BAD_MAX_BYTES,
    BAD_MAX_ENTRIES,
    BAD_DOTGIT,
    BAD_DOTGIT_CASE,
};

static const struct {
    enum bad_kind kind;
    int code;
    const char *needle;
    const char *never; /* an entry that must not be in the stream, or NULL */
} bad_cases[] = {
    {BAD_REVISION, CORDON_E_NOT_FOUND, "workspace.revision: \"nope\" does not name a commit in /",
     NULL},
    {BAD_REVISION_BLOB, CORDON_E_NOT_FOUND, "\"main:README.md\" does not name a commit", NULL},
    {BAD_REVISION_EMPTY, CORDON_E_INVALID, "workspace.revision: missing", NULL},
    {BAD_REVISION_CONTROL, CORDON_E_INVALID, "workspace.revision: control character", NULL},
    {BAD_NOT_REPO, CORDON_E_NOT_FOUND, "/plain is not a git repository", NULL},
    {BAD_MISSING_PATH, CORDON_E_NOT_FOUND, "/nothing-here is not a git repository", NULL},
    {BAD_RELATIVE, CORDON_E_INVALID, "workspace.repository: \"repo\" must be an absolute path",
     NULL},
    {BAD_SUBDIR, CORDON_E_NOT_FOUND, "/repo/.git/refs is not a git repository", NULL},
    {BAD_MAX_BYTES, CORDON_E_LIMIT, "workspace: 24 bytes at revision main exceed disk_bytes 10",
     "bin/run.sh"},
    {BAD_MAX_ENTRIES, CORDON_E_LIMIT, "workspace: more than 3 entries at revision main",
     "bin/run.sh"},
    {BAD_DOTGIT, CORDON_E_UNSAFE, "\".git\" at revision evil: a \".git\" entry is not allowed",
     NULL},
    {BAD_DOTGIT_CASE, CORDON_E_UNSAFE, "\"sub/.GiT\" at revision evil", NULL},
};

/* A commit on branch "evil" whose tree holds name (".git" in some spelling)
 * under sub/ or at the top: written as a raw object, since libgit2's tree
 * builder refuses such names just as git does. */
static void make_dotgit_branch(const char *name, bool nested)
{
    git_oid readme = blob("x"), raw, top;
    git_odb *odb = NULL;
    char buf[64];
    size_t len;

    len = (size_t)snprintf(buf, sizeof(buf), "100644 %s", name) + 1;
    memcpy(buf + len, readme.id, GIT_OID_RAWSZ);
    len += GIT_OID_RAWSZ;
    cr_assert_eq(git_repository_odb(&odb, repo), 0);
    cr_assert_eq(git_odb_write(&raw, odb, buf, len, GIT_OBJECT_TREE), 0);
    git_odb_free(odb);
    top = nested ? tree((struct node[]){{"sub", GIT_FILEMODE_TREE, raw}}, 1) : raw;
    commit(top, NULL, "refs/heads/evil");
}

ParameterizedTestParameters(gitws, refuses_bad_input)
{
    static size_t idx[sizeof(bad_cases) / sizeof(bad_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, gitws, refuses_bad_input)
{
    const char *rev = "main", *path = repo_path;
    uint64_t max_bytes = 0, max_entries = 0;
    struct cordon__git_export ex;
    struct cordon_error err;
    char *other = NULL;
    struct got got[32];
    bool complete = true;
    int fd = stream_file();
    size_t n;

    switch (bad_cases[*at].kind) {
    case BAD_REVISION: rev = "nope"; break;
    case BAD_REVISION_BLOB: rev = "main:README.md"; break;
    case BAD_REVISION_EMPTY: rev = ""; break;
    case BAD_REVISION_CONTROL: rev = "main\n"; break;
    case BAD_NOT_REPO: path = plain_path; break;
    case BAD_MISSING_PATH:
        cr_assert(asprintf(&other, "%s/nothing-here", tmp) > 0);
        path = other;
        break;
    case BAD_RELATIVE: path = "repo"; break;
    case BAD_SUBDIR:
        /* Inside a repository is not a repository: no search upwards. */
        cr_assert(asprintf(&other, "%s/.git/refs", repo_path) > 0);
        path = other;
        break;
    case BAD_MAX_BYTES: max_bytes = 10; break;
    case BAD_MAX_ENTRIES: max_entries = 3; break;
    case BAD_DOTGIT:
        make_dotgit_branch(".git", false);
        rev = "evil";
        break;
    case BAD_DOTGIT_CASE:
        make_dotgit_branch(".GiT", true);
        rev = "evil";
        break;
    }
    cordon_error_init(&err);
    memset(&ex, 0, sizeof(ex));
    cr_assert_eq(cordon__git_export_tar(path, rev, max_bytes, max_entries, fd, &ex, &err),
                 bad_cases[*at].code, "%s", err.message);
    cr_expect(strstr(err.message, bad_cases[*at].needle) != NULL, "\"%s\" lacks \"%s\"",
              err.message, bad_cases[*at].needle);
    /* Nothing is handed back, and a stream cut short does not end like a whole one. */
    cr_expect_null(ex.submodules);
    cr_expect_eq(ex.commit[0], '\0');
    n = read_back(fd, got, 32, &complete);
    cr_expect_not(complete && n > 0, "a refused export left a complete stream");
    for (size_t i = 0; i < n && bad_cases[*at].never != NULL; i++)
        cr_expect_str_neq(got[i].name, bad_cases[*at].never, "written past the limit");
    free(other);
    close(fd);
}
