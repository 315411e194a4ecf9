/*
 * tests/fuzz: what every libFuzzer target shares. Each target reads one
 * hostile input the way cordon meets it (a tar stream from a sandbox, a
 * report, the daemon's bytes) and must neither crash nor trip ASan or
 * UBSan; a refusal is a normal outcome. Built with --enable-fuzz (clang).
 */
#ifndef CORDON_FUZZ_H
#define CORDON_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A NUL-terminated copy (NULs inside stay: parsers must stop at them). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* All of data to fd; the harness has no way on without it. */
static inline void fuzz_write_all(int fd, const uint8_t *data, size_t size)
{
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);

        if (n <= 0)
            abort();
        off += (size_t)n;
    }
}

/* The bytes as a file read from offset 0, as a stream from a sandbox. */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-input", MFD_CLOEXEC);

    if (fd < 0)
        abort();
    fuzz_write_all(fd, data, size);
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    return fd;
}

/* An empty memfd to write into. */
static inline int fuzz_sink(void)
{
    int fd = memfd_create("fuzz-output", MFD_CLOEXEC);

    if (fd < 0)
        abort();
    return fd;
}

/*
 * Remove a tree the target made, with the host's own removal: whatever an
 * import can create (any depth, read-only directories), the host must be
 * able to remove again, so a refusal here is a finding.
 */
static inline void fuzz_rmtree(const char *path)
{
    struct cordon_error err;

    cordon_error_init(&err);
    if (cordon_fs_remove_tree_path(path, &err) < 0) {
        fprintf(stderr, "fuzz: removing %s: %s\n", path, err.message);
        abort();
    }
}

/* A fresh directory for one input, under a per-process parent. */
static inline char *fuzz_tmpdir(void)
{
    static char parent[64];
    static unsigned n;
    char *dir;

    if (parent[0] == '\0') {
        snprintf(parent, sizeof(parent), "/tmp/fuzz-cordon-%d", (int)getpid());
        if (mkdir(parent, 0700) < 0)
            abort();
    }
    if (asprintf(&dir, "%s/%u", parent, n++) < 0 || mkdir(dir, 0700) < 0)
        abort();
    return dir;
}

/* Remove the per-process parent at exit (libFuzzer exits through exit()). */
static inline void fuzz_tmp_cleanup(void)
{
    char parent[64];

    snprintf(parent, sizeof(parent), "/tmp/fuzz-cordon-%d", (int)getpid());
    if (access(parent, F_OK) == 0)
        fuzz_rmtree(parent);
}

/* For a target that uses fuzz_tmpdir: the parent goes at exit. */
#define FUZZ_TMPDIR_CLEANUP                                  \
    int LLVMFuzzerInitialize(int *argc, char ***argv)        \
    {                                                        \
        (void)argc;                                          \
        (void)argv;                                          \
        atexit(fuzz_tmp_cleanup);                            \
        return 0;                                            \
    }



#include <dirent.h>
#include <cordon/error.h>

/* A refusal says why: a negative return always comes with a message. */
static inline void fuzz_check_refusal(int r, const struct cordon_error *err)
{
    if (r < 0 && err->message[0] == '\0') {
        fprintf(stderr, "refusal %d without a message\n", r);
        abort();
    }
}

/* Nothing was written beside dir (its parent holds dir alone). */
static inline void fuzz_check_contained(const char *dir)
{
    char parent[4096];
    const char *slash = strrchr(dir, '/');
    struct dirent *de;
    unsigned n = 0;
    DIR *d;

    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
    if ((d = opendir(parent)) == NULL)
        abort();
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    if (n != 1) {
        fprintf(stderr, "%u entries beside %s: something escaped the destination\n", n, dir);
        abort();
    }
}
#endif
