/* core: task-workspace grants: issue, land, collect, close (see grant.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "core/grant.h"
#include "core/internal.h"
#include "sdk/fs-internal.h"

#define GRANTS_DIR ".cordon/grants"
/* Scratch directory inside the area where outputs wait until all are in. */
#define COLLECT_DIR "collect"

/* Close *fd if open and mark it closed, so a second call is harmless. */
static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The fds into the area, which go before the area itself. */
static void close_area_fds(struct cordon__grant *g)
{
    close_fd(&g->source_fd);
    close_fd(&g->build_fd);
    close_fd(&g->logs_fd);
    close_fd(&g->area_fd);
}

void cordon__grant_free(struct cordon__grant *g)
{
    if (g == NULL)
        return;
    close_area_fds(g);
    close_fd(&g->output_fd);
    close_fd(&g->workspace_fd);
    free(g->workspace);
    free(g->area);
    free(g);
}

/* Remove the area, then .cordon/grants and .cordon when nothing else is in them. */
static int remove_area(struct cordon__grant *g, struct cordon_error *err)
{
    int dot_fd = -1, grants_fd = -1, r;

    r = cordon_fs_open_beneath(g->workspace_fd, ".cordon", O_PATH | O_DIRECTORY, 0, &dot_fd, err);
    if (r == CORDON_E_NOT_FOUND)
        return 0;
    if (r < 0)
        return r;
    r = cordon_fs_open_beneath(dot_fd, "grants", O_PATH | O_DIRECTORY, 0, &grants_fd, err);
    if (r == CORDON_E_NOT_FOUND) {
        r = 0;
        goto out;
    }
    if (r < 0 || (r = cordon_fs_remove_tree(grants_fd, g->id, err)) < 0)
        goto out;
    /* Another grant may still live next to this one: ENOTEMPTY is fine. */
    unlinkat(dot_fd, "grants", AT_REMOVEDIR);
    unlinkat(g->workspace_fd, ".cordon", AT_REMOVEDIR);
out:
    close_fd(&grants_fd);
    close_fd(&dot_fd);
    return r;
}

/* Create a fresh directory (EEXIST is an error: the area is new) and open it. */
static int make_subdir(int parent_fd, const char *name, mode_t mode, int *ret_fd,
                       struct cordon_error *err)
{
    int fd = -1, r;

    if (mkdirat(parent_fd, name, mode) < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "grant: cannot create %s/: %s", name,
                                strerror(errno));
    if ((r = cordon_fs_open_beneath(parent_fd, name, O_RDONLY | O_DIRECTORY, 0, &fd, err)) < 0)
        return r;
    /* The mode must not depend on the caller's umask. */
    if (fchmod(fd, mode) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "grant: chmod %s/: %s", name, strerror(errno));
        close(fd);
        return r;
    }
    *ret_fd = fd;
    return 0;
}

/* The output root <ws>/output/: created when missing, never through a link. */
static int open_output_root(struct cordon__grant *g, struct cordon_error *err)
{
    struct stat st;

    if (fstatat(g->workspace_fd, "output", &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return cordon_error_set(err, CORDON_E_IO, errno, "workspace: %.*s/output: %s",
                                    cordon_text_fit(g->workspace, 200), g->workspace,
                                    strerror(errno));
        if (mkdirat(g->workspace_fd, "output", 0755) < 0 && errno != EEXIST)
            return cordon_error_set(
                err, CORDON_E_IO, errno, "workspace: cannot create %.*s/output: %s",
                cordon_text_fit(g->workspace, 200), g->workspace, strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "workspace: %.*s/output is a symbolic link (refused)",
                                cordon_text_fit(g->workspace, 200), g->workspace);
    } else if (!S_ISDIR(st.st_mode)) {
        return cordon_error_set(
            err, CORDON_E_UNSAFE, 0, "workspace: %.*s/output is a %s, not a directory (refused)",
            cordon_text_fit(g->workspace, 200), g->workspace, cordon__file_type_name(st.st_mode));
    }
    return cordon_fs_open_beneath(g->workspace_fd, "output", O_RDONLY | O_DIRECTORY, 0,
                                  &g->output_fd, err);
}

/* "grant-" and 24 hex digits from the kernel's random source: unguessable,
 * so another process cannot prepare a grant area in advance. */
static int random_id(char id[40], struct cordon_error *err)
{
    unsigned char rnd[12];
    ssize_t n;

    do
        n = getrandom(rnd, sizeof(rnd), 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(rnd))
        return cordon_error_set(err, CORDON_E_IO, errno, "grant: no random bytes for an id");
    memcpy(id, "grant-", 6);
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(id + 6 + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

int cordon__grant_open(const char *task_workspace, enum cordon__grant_mode mode,
                       struct cordon__grant **ret, struct cordon_error *err)
{
    struct cordon__grant *g = NULL;
    bool area_made = false;
    int grants_fd = -1, r;

    switch (mode) {
    case CORDON_GRANT_SNAPSHOT:
        break;
    case CORDON_GRANT_READ_ONLY:
    case CORDON_GRANT_READ_WRITE:
        return cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                "mode: %s grants are not implemented in v1 (use snapshot)",
                                mode == CORDON_GRANT_READ_ONLY ? "read_only" : "read_write");
    default:
        return cordon_error_set(err, CORDON_E_INVALID, 0, "mode: unknown grant mode %d", (int)mode);
    }
    if (task_workspace == NULL || task_workspace[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "workspace: no path given");
    if (ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "grant: no result pointer");
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "grant: out of memory");
    g->mode = mode;
    g->workspace_fd = g->area_fd = g->source_fd = g->build_fd = g->logs_fd = g->output_fd = -1;
    /* The workspace itself is the integrator's: links in its path are theirs to use. */
    if ((g->workspace = realpath(task_workspace, NULL)) == NULL) {
        r = cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                             "workspace: %.*s: %s", cordon_text_fit(task_workspace, 200),
                             task_workspace, strerror(errno));
        goto out;
    }
    g->workspace_fd = open(g->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g->workspace_fd < 0) {
        r = cordon_error_set(err, errno == ENOTDIR ? CORDON_E_INVALID : CORDON_E_IO, errno,
                             "workspace: %.*s is not a usable directory: %s",
                             cordon_text_fit(g->workspace, 200), g->workspace, strerror(errno));
        goto out;
    }
    if ((r = random_id(g->id, err)) < 0 ||
        (r = cordon_fs_mkdirs_beneath(g->workspace_fd, GRANTS_DIR, 0700, err)) < 0 ||
        (r = cordon_fs_open_beneath(g->workspace_fd, GRANTS_DIR, O_RDONLY | O_DIRECTORY, 0,
                                    &grants_fd, err)) < 0)
        goto out;
    if ((r = make_subdir(grants_fd, g->id, 0700, &g->area_fd, err)) < 0)
        goto out;
    area_made = true;
    if ((r = make_subdir(g->area_fd, "source", 0755, &g->source_fd, err)) < 0 ||
        (r = make_subdir(g->area_fd, "build", 0755, &g->build_fd, err)) < 0 ||
        (r = make_subdir(g->area_fd, "logs", 0755, &g->logs_fd, err)) < 0 ||
        (r = open_output_root(g, err)) < 0)
        goto out;
    if (asprintf(&g->area, "%s/%s/%s", g->workspace, GRANTS_DIR, g->id) < 0) {
        g->area = NULL;
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "grant: out of memory");
        goto out;
    }
    *ret = g;
    g = NULL;
out:
    close_fd(&grants_fd);
    /* A grant that failed half-way leaves nothing behind but output/. */
    if (g != NULL && area_made)
        remove_area(g, NULL);
    cordon__grant_free(g);
    return r;
}

int cordon__grant_add_input(struct cordon__grant *g, const char *host_path,
                            struct cordon_error *err)
{
    char *dir = NULL, *base = NULL, *dst = NULL, *slash;
    uint64_t bytes = 0;
    struct stat st;
    int pfd = -1, r;

    if (g == NULL || g->closed)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "inputs: the grant is not open");
    if (host_path == NULL || host_path[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "inputs: no path given");
    /* lstat: the input named must itself be a file, not a link to one. */
    if (lstat(host_path, &st) < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "inputs: %.*s: %s", cordon_text_fit(host_path, 200), host_path,
                                strerror(errno));
    if (S_ISLNK(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "inputs: %.*s is a symbolic link (refused; name the file itself)",
                                cordon_text_fit(host_path, 200), host_path);
    if (!S_ISREG(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "inputs: %.*s is a %s, not a regular file (refused)",
                                cordon_text_fit(host_path, 200), host_path, cordon__file_type_name(st.st_mode));
    if ((uint64_t)st.st_size > CORDON_GRANT_MAX_FILE_BYTES)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "inputs: %.*s is %" PRIu64
                                " bytes, exceeds the per-file limit of %llu",
                                cordon_text_fit(host_path, 200), host_path, (uint64_t)st.st_size,
                                CORDON_GRANT_MAX_FILE_BYTES);
    if (g->n_inputs >= CORDON_GRANT_MAX_INPUTS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "inputs: more than %d files exceeds the limit of %d",
                                CORDON_GRANT_MAX_INPUTS, CORDON_GRANT_MAX_INPUTS);
    if (g->input_bytes + (uint64_t)st.st_size > CORDON_GRANT_MAX_TOTAL_BYTES)
        return cordon_error_set(
            err, CORDON_E_LIMIT, 0,
            "inputs: %" PRIu64 " bytes in total (at %.*s) exceeds the limit of %llu",
            g->input_bytes + (uint64_t)st.st_size, cordon_text_fit(host_path, 200), host_path,
            CORDON_GRANT_MAX_TOTAL_BYTES);
    if ((dir = strdup(host_path)) == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "inputs: out of memory");
        goto out;
    }
    slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    /* The basename becomes one path component under input/. */
    if ((r = cordon_path_normalize("inputs", slash != NULL ? slash + 1 : dir, &base, err)) < 0)
        goto out;
    if (strchr(base, '/') != NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "inputs: %.*s does not end in a file name",
                             cordon_text_fit(host_path, 200), host_path);
        goto out;
    }
    if (asprintf(&dst, "input/%s", base) < 0) {
        dst = NULL;
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "inputs: out of memory");
        goto out;
    }
    /* copy_beneath replaces atomically, so a clash is looked for first. */
    if (fstatat(g->source_fd, dst, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        r = cordon_error_set(err, CORDON_E_EXISTS, 0,
                             "inputs: %.*s would replace source/%s (two inputs share a name)",
                             cordon_text_fit(host_path, 200), host_path, dst);
        goto out;
    }
    /* The directories above the file are the caller's own and may hold links. */
    pfd = open(slash == NULL ? "." : dir[0] == '\0' ? "/" : dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "inputs: %.*s: %s",
                             cordon_text_fit(host_path, 200), host_path, strerror(errno));
        goto out;
    }
    /* copy_beneath opens the file itself with O_NOFOLLOW: a link swapped in now is refused. */
    if ((r = cordon_fs_copy_beneath(pfd, base, g->source_fd, dst, CORDON_GRANT_MAX_FILE_BYTES, 0444,
                                    NULL, &bytes, err)) < 0)
        goto out;
    g->n_inputs++;
    g->input_bytes += bytes;
out:
    if (pfd >= 0)
        close(pfd);
    free(dir);
    free(base);
    free(dst);
    return r;
}

/* Directory part of a normalised relative path (malloc'd, "" at the top). */
static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    return strndup(path, slash != NULL ? (size_t)(slash - path) : 0);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

/* Re-read a landed file and compare it with the bundle's record. */
static int verify_file(struct cordon__grant *g, const struct cordon__bundle_file *f,
                       struct cordon_error *err)
{
    char hex[65];
    uint64_t bytes = 0;
    int fd = -1, r;

    if ((r = cordon_fs_open_regular(g->source_fd, f->path, CORDON_BUNDLE_MAX_FILE_BYTES, &fd, NULL,
                                    err)) < 0 ||
        (r = cordon_sha256_fd(fd, CORDON_BUNDLE_MAX_FILE_BYTES, hex, &bytes, err)) < 0)
        goto out;
    if (bytes != f->len || strcmp(hex, f->sha256) != 0)
        r = cordon_error_set(err, CORDON_E_IO, 0,
                             "files: source/%.*s reads back as %" PRIu64 " bytes sha256 %s, "
                             "landed %zu bytes sha256 %s",
                             cordon_text_fit(f->path, 200), f->path, bytes, hex, f->len, f->sha256);
out:
    if (fd >= 0)
        close(fd);
    return r;
}

int cordon__grant_write_source(struct cordon__grant *g, const struct cordon__bundle *b,
                               struct cordon_error *err)
{
    char *parent = NULL;
    int r = 0;

    if (g == NULL || g->closed)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "grant: not open");
    if (b == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "grant: no bundle to land");
    for (size_t i = 0; i < b->n_files; i++) {
        const struct cordon__bundle_file *f = &b->files[i];
        struct stat st;

        /* Inputs are the integrator's data; the model's bundle may not overwrite them. */
        if (cordon_path_is_under(f->path, "input") &&
            fstatat(g->source_fd, f->path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            r = cordon_error_set(err, CORDON_E_EXISTS, 0,
                                 "files: %.*s would replace an input copied into the grant",
                                 cordon_text_fit(f->path, 200), f->path);
            goto out;
        }
        free(parent);
        if ((parent = parent_of(f->path)) == NULL) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "files: out of memory");
            goto out;
        }
        if ((parent[0] != '\0' &&
             (r = cordon_fs_mkdirs_beneath(g->source_fd, parent, 0755, err)) < 0) ||
            /* our own scratch area: no fsync (the bytes are verified below);
             * landing again replaces a file in place */
            ((unlinkat(g->source_fd, f->path, 0) < 0 && errno != ENOENT &&
              (r = cordon_error_set(err, CORDON_E_IO, errno, "files: %.*s: %s",
                                    cordon_text_fit(f->path, 200), f->path, strerror(errno))) <
                  0)) ||
            (r = cordon_fs_write_new(g->source_fd, f->path, f->data, f->len,
                                     f->executable ? 0555 : 0444, err)) < 0 ||
            (r = verify_file(g, f, err)) < 0)
            goto out;
    }
out:
    free(parent);
    return r;
}

/* ---- the source root as files (import_files, ABI 1.1) ------------------ */

#define SOURCE_DEPTH_MAX 64
#define COPY_CHUNK (64u << 10)

struct source_walk {
    cJSON *files;
    int data_fd;
    size_t n;
    uint64_t bytes;
    char *chunk;
};

static int append_file(struct source_walk *w, int dfd, const char *name, const char *path,
                       struct cordon_error *err)
{
    struct stat st;
    uint64_t left;
    cJSON *f;
    int fd = -1, r;

    r = cordon_fs_open_regular(dfd, name, CORDON_GRANT_MAX_TOTAL_BYTES + CORDON_BUNDLE_MAX_BYTES,
                               &fd, NULL, err);
    if (r < 0)
        return r;
    if (fstat(fd, &st) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "land: source/%.*s: %s",
                             cordon_text_fit(path, 200), path, strerror(errno));
        goto out;
    }
    if (++w->n > CORDON_BUNDLE_MAX_FILES + CORDON_GRANT_MAX_INPUTS ||
        (w->bytes += (uint64_t)st.st_size) > CORDON_BUNDLE_MAX_BYTES + CORDON_GRANT_MAX_TOTAL_BYTES) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                             "land: source/ holds more than a bundle "
                             "and its inputs may (at %.*s)",
                             cordon_text_fit(path, 200), path);
        goto out;
    }
    for (left = (uint64_t)st.st_size; left > 0;) {
        ssize_t n = read(fd, w->chunk, left < COPY_CHUNK ? (size_t)left : COPY_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0, "land: read source/%.*s: %s",
                                 cordon_text_fit(path, 200), path,
                                 n < 0 ? strerror(errno) : "shorter than its size");
            goto out;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t m = write(w->data_fd, w->chunk + off, (size_t)(n - off));

            if (m < 0 && errno == EINTR)
                continue;
            if (m < 0) {
                r = cordon_error_set(err, CORDON_E_IO, errno, "land: %s", strerror(errno));
                goto out;
            }
            off += m;
        }
        left -= (uint64_t)n;
    }
    f = cJSON_CreateObject();
    if (f == NULL || cJSON_AddStringToObject(f, "path", path) == NULL ||
        cJSON_AddNumberToObject(f, "size", (double)st.st_size) == NULL ||
        cJSON_AddNumberToObject(f, "mode", (double)(st.st_mode & 0777)) == NULL) {
        cJSON_Delete(f);
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "land: out of memory");
        goto out;
    }
    cJSON_AddItemToArray(w->files, f);
out:
    close(fd);
    return r;
}

/* Every regular file beneath dfd, depth first; anything else is refused
 * (the root is ours, written by write_source and add_input). */
static int walk_source(struct source_walk *w, int dfd, const char *prefix, unsigned depth,
                       struct cordon_error *err)
{
    DIR *d;
    struct dirent *de;
    int fd, r = 0;

    if (depth > SOURCE_DEPTH_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "land: source/%.*s is nested more than "
                                "%d deep",
                                cordon_text_fit(prefix, 200), prefix, SOURCE_DEPTH_MAX);
    fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "land: source/%.*s: %s",
                             cordon_text_fit(prefix, 200), prefix, strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    while (r == 0 && (errno = 0, de = readdir(d)) != NULL) {
        char *path;
        int sub;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (asprintf(&path, "%s%s%s", prefix, prefix[0] != '\0' ? "/" : "", de->d_name) < 0) {
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "land: out of memory");
            break;
        }
        if (de->d_type == DT_DIR) {
            r = cordon_fs_open_beneath(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY, 0, &sub, err);
            if (r == 0) {
                r = walk_source(w, sub, path, depth + 1, err);
                close(sub);
            }
        } else {
            /* open_regular refuses a link or anything but a regular file */
            r = append_file(w, dirfd(d), de->d_name, path, err);
        }
        free(path);
    }
    closedir(d);
    return r;
}

int cordon__grant_source_files(struct cordon__grant *g, int data_fd, char **ret_files_json,
                               struct cordon_error *err)
{
    struct source_walk w = { cJSON_CreateArray(), data_fd, 0, 0, malloc(COPY_CHUNK) };
    cJSON *doc = NULL;
    char *text = NULL;
    int r;

    if (g == NULL || g->closed || data_fd < 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "land: no open grant or data fd");
        goto out;
    }
    if (w.files == NULL || w.chunk == NULL || (doc = cJSON_CreateObject()) == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "land: out of memory");
        goto out;
    }
    r = walk_source(&w, g->source_fd, "", 0, err);
    if (r < 0)
        goto out;
    cJSON_AddItemToObject(doc, "files", w.files);
    w.files = NULL;
    if ((text = cJSON_PrintUnformatted(doc)) == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "land: out of memory");
        goto out;
    }
    *ret_files_json = text;
out:
    cJSON_Delete(w.files);
    cJSON_Delete(doc);
    free(w.chunk);
    return r;
}

/* First pass of collect: every declared output is a bounded regular file or missing. */
static int check_outputs(int staging_dirfd, const struct cordon__bundle *b, bool inline_data,
                         bool *missing, struct cordon_error *err)
{
    uint64_t max_file = inline_data ? CORDON_GRANT_INLINE_MAX_FILE_BYTES : CORDON_GRANT_MAX_FILE_BYTES;
    uint64_t max_total = inline_data ? CORDON_GRANT_INLINE_MAX_TOTAL_BYTES : CORDON_GRANT_MAX_TOTAL_BYTES;
    /* Inline, the limit is named for what it is and how to lift it. */
    const char *kind = inline_data ? "inline " : "";
    const char *hint = inline_data ? " (give a \"workspace\" to collect larger outputs)" : "";
    uint64_t total = 0;

    for (size_t i = 0; i < b->n_outputs; i++) {
        const char *p = b->outputs[i];
        struct stat st;

        /* Sorting missing from refused is stat's job; the copy opens again safely. */
        if (fstatat(staging_dirfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT || errno == ENOTDIR) {
                missing[i] = true;
                continue;
            }
            return cordon_error_set(err, CORDON_E_IO, errno, "outputs: %.*s: %s",
                                    cordon_text_fit(p, 200), p, strerror(errno));
        }
        if (S_ISLNK(st.st_mode))
            return cordon_error_set(
                err, CORDON_E_UNSAFE, 0,
                "outputs: %.*s is a symbolic link, not a regular file (refused)",
                cordon_text_fit(p, 200), p);
        if (!S_ISREG(st.st_mode))
            return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                    "outputs: %.*s is a %s, not a regular file (refused)",
                                    cordon_text_fit(p, 200), p, cordon__file_type_name(st.st_mode));
        if ((uint64_t)st.st_size > max_file)
            return cordon_error_set(
                err, CORDON_E_LIMIT, 0,
                "outputs: %.*s is %" PRIu64 " bytes, exceeds the %sper-file limit of %" PRIu64 "%s",
                cordon_text_fit(p, 200), p, (uint64_t)st.st_size, kind, max_file, hint);
        total += (uint64_t)st.st_size;
        if (total > max_total)
            return cordon_error_set(
                err, CORDON_E_LIMIT, 0,
                "outputs: %" PRIu64 " bytes in total (at %.*s) exceeds the %slimit of %" PRIu64 "%s",
                total, cordon_text_fit(p, 200), p, inline_data ? "inline total " : "", max_total,
                hint);
    }
    return 0;
}

/* Move collect/<p> from the area to output/<p>, creating parents. */
static int place_output(struct cordon__grant *g, const char *p, struct cordon_error *err)
{
    char *parent = parent_of(p), *src_parent = NULL;
    int sfd = -1, dfd = -1, r;

    if (parent == NULL || asprintf(&src_parent, "%s%s%s", COLLECT_DIR, parent[0] ? "/" : "", parent) < 0) {
        src_parent = NULL;
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
        goto out;
    }
    if ((parent[0] != '\0' && (r = cordon_fs_mkdirs_beneath(g->output_fd, parent, 0755, err)) < 0) ||
        (r = cordon_fs_open_beneath(g->area_fd, src_parent, O_PATH | O_DIRECTORY, 0, &sfd, err)) < 0 ||
        (r = cordon_fs_open_beneath(g->output_fd, parent, O_PATH | O_DIRECTORY, 0, &dfd, err)) < 0)
        goto out;
    /* Same file system (both inside the workspace), so the move is one rename. */
    if (renameat(sfd, base_of(p), dfd, base_of(p)) < 0)
        r = cordon_error_set(err, CORDON_E_IO, errno, "outputs: cannot place output/%.*s: %s",
                             cordon_text_fit(p, 200), p, strerror(errno));
out:
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    free(parent);
    free(src_parent);
    return r;
}

int cordon__grant_collect(struct cordon__grant *g, int staging_dirfd,
                          const struct cordon__bundle *b, bool inline_data, cJSON **ret_outputs,
                          struct cordon_error *err)
{
    uint64_t max_file = inline_data ? CORDON_GRANT_INLINE_MAX_FILE_BYTES : CORDON_GRANT_MAX_FILE_BYTES;
    uint64_t max_total = inline_data ? CORDON_GRANT_INLINE_MAX_TOTAL_BYTES : CORDON_GRANT_MAX_TOTAL_BYTES;
    char (*hex)[65] = NULL;
    uint64_t *bytes = NULL, copied = 0;
    bool *missing = NULL, ok = true;
    cJSON *outputs = NULL;
    char *rel = NULL;
    int r;

    if (g == NULL || g->closed)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "grant: not open");
    if (b == NULL || ret_outputs == NULL || staging_dirfd < 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "outputs: no bundle or staging directory");
    missing = calloc(b->n_outputs + 1, sizeof(*missing));
    bytes = calloc(b->n_outputs + 1, sizeof(*bytes));
    hex = calloc(b->n_outputs + 1, sizeof(*hex));
    if (missing == NULL || bytes == NULL || hex == NULL) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
        goto out;
    }
    if ((r = check_outputs(staging_dirfd, b, inline_data, missing, err)) < 0)
        goto out;
    /* Copy everything aside first, so a refusal leaves output/ as it was. */
    if ((r = cordon_fs_remove_tree(g->area_fd, COLLECT_DIR, err)) < 0)
        goto out;
    if (mkdirat(g->area_fd, COLLECT_DIR, 0700) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "outputs: cannot create the collect area: %s",
                             strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < b->n_outputs; i++) {
        uint64_t left = max_total - copied;

        if (missing[i])
            continue;
        free(rel);
        if (asprintf(&rel, "%s/%s", COLLECT_DIR, b->outputs[i]) < 0) {
            rel = NULL;
            r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
            goto out;
        }
        /* The file may have grown since check_outputs: the copy is bounded again. */
        if ((r = cordon_fs_copy_beneath(staging_dirfd, b->outputs[i], g->area_fd, rel,
                                        left < max_file ? left : max_file,
                                        0644, hex[i], &bytes[i], err)) < 0)
            goto out;
        copied += bytes[i];
    }
    /* Everything is in the area: only now does output/ change. */
    for (size_t i = 0; i < b->n_outputs; i++)
        if (!missing[i] && (r = place_output(g, b->outputs[i], err)) < 0)
            goto out;
    if ((outputs = cJSON_CreateArray()) == NULL)
        ok = false;
    for (size_t i = 0; ok && i < b->n_outputs; i++) {
        cJSON *o = cJSON_CreateObject();
        char *path = NULL, *host = NULL;

        ok = cJSON_AddItemToArray(outputs, o) && asprintf(&path, "output/%s", b->outputs[i]) >= 0;
        if (!ok)
            break;
        ok = cJSON_AddStringToObject(o, "path", path) != NULL;
        if (ok && missing[i]) {
            ok = cJSON_AddTrueToObject(o, "missing") != NULL;
        } else if (ok) {
            ok = cJSON_AddStringToObject(o, "sha256", hex[i]) != NULL &&
                 cJSON_AddNumberToObject(o, "bytes", (double)bytes[i]) != NULL;
            if (ok && !inline_data) {
                ok = asprintf(&host, "%s/%s", g->workspace, path) >= 0;
                if (!ok)
                    host = NULL;
                ok = ok && cJSON_AddStringToObject(o, "host_path", host) != NULL;
            }
        }
        free(path);
        free(host);
    }
    if (!ok) {
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "outputs: out of memory");
        goto out;
    }
    *ret_outputs = outputs;
    outputs = NULL;
out:
    cordon_fs_remove_tree(g->area_fd, COLLECT_DIR, NULL);
    cJSON_Delete(outputs);
    free(rel);
    free(missing);
    free(bytes);
    free(hex);
    return r;
}

int cordon__grant_close(struct cordon__grant *g, struct cordon_error *err)
{
    int r;

    if (g == NULL || g->closed)
        return 0;
    /* Closed fds first: nothing may keep writing into what is being removed. */
    close_area_fds(g);
    if ((r = remove_area(g, err)) < 0)
        return r;
    g->closed = true;
    return 0;
}
