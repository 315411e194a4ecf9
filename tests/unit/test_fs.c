/* Unit tests of sdk/fs.c (link-safe file work beneath a directory fd) and sdk/sha256.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/fs.h>
#include "tests/unit/helpers.h"

#define SECRET "outside-secret-contents"

/*
 * Every test gets <root>/in (the directory fd under test) and
 * <root>/outside holding "secret": whatever a test does beneath "in" must
 * leave "outside" exactly as it was.
 */
static char *root, *outside;
static int infd = -1, outfd = -1;

static int write_n_at(int dirfd, const char *name, const void *buf, size_t len)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static int write_at(int dirfd, const char *name, const char *content)
{
    return write_n_at(dirfd, name, content, strlen(content));
}

/* The whole content of a file (NUL-terminated), or NULL. */
static char *read_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char *buf;
    ssize_t n;

    if (fd < 0)
        return NULL;
    buf = calloc(1, 1 << 20);
    cr_assert_not_null(buf);
    n = read(fd, buf, (1 << 20) - 1);
    close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static bool exists_at(int dirfd, const char *name)
{
    struct stat st;

    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Entries of directory name beneath dirfd; *ret_temps counts leftover temporary files. */
static int count_entries(int dirfd, const char *name, int *ret_temps)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *de;
    int n = 0, temps = 0;
    DIR *dir;

    cr_assert_geq(fd, 0, "open %s", name);
    dir = fdopendir(fd);
    cr_assert_not_null(dir);
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        n++;
        if (strncmp(de->d_name, ".cordon-tmp-", 12) == 0)
            temps++;
    }
    closedir(dir);
    if (ret_temps != NULL)
        *ret_temps = temps;
    return n;
}

/* outside/ holds exactly "secret", unchanged, and nothing else. */
static void assert_outside_untouched(void)
{
    char *s = read_at(outfd, "secret");

    cr_assert_not_null(s, "outside/secret is gone");
    cr_assert_str_eq(s, SECRET, "outside/secret was changed");
    free(s);
    cr_assert_eq(count_entries(outfd, ".", NULL), 1, "something was created outside");
}

/* Drop the effective capabilities that let root ignore permission bits, so
 * that this test process meets modes as an unprivileged caller would. */
static void drop_dac_override(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    cr_assert_eq(syscall(SYS_capget, &hdr, data), 0);
    data[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) |
                           (1u << CAP_FOWNER));
    cr_assert_eq(syscall(SYS_capset, &hdr, data), 0);
}

static void setup(void)
{
    root = test_mkdtemp();
    cr_assert_not_null(root);
    cr_assert(asprintf(&outside, "%s/outside", root) > 0);
    cr_assert_eq(mkdir(outside, 0755), 0);
    {
        char *in = NULL;

        cr_assert(asprintf(&in, "%s/in", root) > 0);
        cr_assert_eq(mkdir(in, 0755), 0);
        infd = open(in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(in);
    }
    outfd = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(infd, 0);
    cr_assert_geq(outfd, 0);
    cr_assert_eq(write_at(outfd, "secret", SECRET), 0);
}

static void teardown(void)
{
    if (infd >= 0)
        close(infd);
    if (outfd >= 0)
        close(outfd);
    test_rmtree(root);
    free(root);
    free(outside);
}

TestSuite(fs, .init = setup, .fini = teardown, .timeout = 60);

/* ---- open_beneath ------------------------------------------------------ */

/* The hostile layout beneath in/ (made for every row). */
static void plant(void)
{
    char *target = NULL;

    cr_assert_eq(mkdirat(infd, "sub", 0755), 0);
    cr_assert_eq(write_at(infd, "sub/file", "inside"), 0);
    cr_assert_eq(symlinkat("/etc/passwd", infd, "passwd"), 0);
    cr_assert(asprintf(&target, "%s/secret", outside) > 0);
    cr_assert_eq(symlinkat(target, infd, "to_secret"), 0);
    free(target);
    cr_assert_eq(symlinkat(outside, infd, "to_outside"), 0);
    cr_assert_eq(symlinkat("../outside", infd, "rel_outside"), 0);
    cr_assert_eq(symlinkat(".", infd, "dot"), 0);
    cr_assert_eq(symlinkat("sub", infd, "sub_link"), 0);
}

struct open_case {
    const char *rel;
    int flags;
    int code;
};

static const struct open_case open_refusals[] = {
    {"passwd", O_RDONLY, CORDON_E_UNSAFE},                         /* symlink at the end */
    {"to_secret", O_WRONLY | O_TRUNC, CORDON_E_UNSAFE},
    {"to_secret", O_WRONLY | O_CREAT | O_TRUNC, CORDON_E_UNSAFE},
    {"to_outside/secret", O_RDONLY, CORDON_E_UNSAFE},              /* symlink in the middle */
    {"to_outside/new", O_WRONLY | O_CREAT | O_EXCL, CORDON_E_UNSAFE},
    {"rel_outside/secret", O_RDONLY, CORDON_E_UNSAFE},
    {"dot/sub/file", O_RDONLY, CORDON_E_UNSAFE},                   /* a link staying inside */
    {"sub_link/file", O_RDONLY, CORDON_E_UNSAFE},
    {"sub_link", O_PATH, CORDON_E_UNSAFE},
    {"../outside/secret", O_RDONLY, CORDON_E_UNSAFE},
    {"sub/../../outside/secret", O_RDONLY, CORDON_E_UNSAFE},
    {"..", O_RDONLY | O_DIRECTORY, CORDON_E_UNSAFE},
    {"/etc/passwd", O_RDONLY, CORDON_E_UNSAFE},
    {"missing/file", O_RDONLY, CORDON_E_NOT_FOUND},
    {"sub/file", O_WRONLY | O_CREAT | O_EXCL, CORDON_E_EXISTS},
};

ParameterizedTestParameters(fs, open_beneath_refuses)
{
    static size_t idx[sizeof(open_refusals) / sizeof(open_refusals[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, fs, open_beneath_refuses)
{
    const struct open_case *c = &open_refusals[*i];
    struct cordon_error err;
    int fd = -77, r;

    plant();
    cordon_error_init(&err);
    r = cordon_fs_open_beneath(infd, c->rel, c->flags, 0644, &fd, &err);
    cr_assert_eq(r, c->code, "row %zu \"%s\": got %d (%s)", *i, c->rel, r, err.message);
    cr_assert_eq(fd, -77, "row %zu: ret_fd written on failure", *i);
    cr_assert(strstr(err.message, c->rel) != NULL, "row %zu: message \"%s\" does not name the path",
              *i, err.message);
    assert_outside_untouched();
    {
        char *s = read_at(infd, "sub/file");

        cr_assert_str_eq(s, "inside");
        free(s);
    }
}

Test(fs, open_beneath_opens_inside)
{
    struct cordon_error err;
    char buf[16] = {0};
    int fd = -1;

    plant();
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_open_beneath(infd, "sub//./file", O_RDONLY, 0, &fd, &err), 0, "%s",
                 err.message);
    cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 6);
    cr_assert_str_eq(buf, "inside");
    cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC, "fd is not close-on-exec");
    close(fd);
    cr_assert_eq(cordon_fs_open_beneath(infd, "", O_RDONLY | O_DIRECTORY, 0, &fd, &err), 0, "%s",
                 err.message);
    close(fd);
    cr_assert_eq(cordon_fs_open_beneath(infd, "sub/new", O_WRONLY | O_CREAT | O_EXCL, 0600, &fd,
                                        &err),
                 0, "%s", err.message);
    close(fd);
    cr_assert(exists_at(infd, "sub/new"));
}

/* ---- open_regular / read_file ------------------------------------------ */

Test(fs, open_regular_refuses_fifo)
{
    struct cordon_error err;
    int fd = -77;

    cr_assert_eq(mkfifoat(infd, "fifo", 0644), 0);
    cordon_error_init(&err);
    /* Must not block waiting for a writer (the suite's timeout would fire). */
    cr_assert_eq(cordon_fs_open_regular(infd, "fifo", 0, &fd, NULL, &err), CORDON_E_UNSAFE, "%s",
                 err.message);
    cr_assert_eq(fd, -77);
    cr_assert(strstr(err.message, "\"fifo\": is a FIFO") != NULL, "%s", err.message);
}

Test(fs, open_regular_refuses_directory)
{
    struct cordon_error err;
    int fd = -77;

    cr_assert_eq(mkdirat(infd, "dir", 0755), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_open_regular(infd, "dir", 0, &fd, NULL, &err), CORDON_E_UNSAFE, "%s",
                 err.message);
    cr_assert_eq(fd, -77);
}

/* mknod needs CAP_MKNOD: the suite fs_root runs from make check-integration,
 * as root, where a device node that cannot be made is a failure. */
Test(fs_root, open_regular_refuses_device, .init = setup, .fini = teardown, .timeout = 60)
{
    struct cordon_error err;
    int fd = -77;

    cr_assert_eq(mknodat(infd, "null", S_IFCHR | 0666, makedev(1, 3)), 0,
                 "cannot create a device node here: %s", strerror(errno));
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_open_regular(infd, "null", 0, &fd, NULL, &err), CORDON_E_UNSAFE, "%s",
                 err.message);
    cr_assert_eq(fd, -77);
}

Test(fs, open_regular_refuses_symlink_to_file)
{
    struct cordon_error err;
    int fd = -77;

    plant();
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_open_regular(infd, "to_secret", 0, &fd, NULL, &err), CORDON_E_UNSAFE,
                 "%s", err.message);
    cr_assert_eq(fd, -77);
}

Test(fs, open_regular_bounds_size)
{
    struct cordon_error err;
    uint64_t size = 0;
    char data[100];
    int fd = -77;

    memset(data, 'x', sizeof(data) - 1);
    data[sizeof(data) - 1] = 'y';
    cr_assert_eq(write_n_at(infd, "hundred", data, sizeof(data)), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_open_regular(infd, "hundred", 99, &fd, &size, &err), CORDON_E_LIMIT);
    cr_assert_eq(fd, -77);
    cr_assert(strstr(err.message, "100") != NULL && strstr(err.message, "99") != NULL,
              "message names size and limit: %s", err.message);
    cr_assert_eq(cordon_fs_open_regular(infd, "hundred", 100, &fd, &size, &err), 0, "%s",
                 err.message);
    cr_assert_eq(size, 100);
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    close(fd);
    cr_assert_eq(cordon_fs_open_regular(infd, "hundred", 0, &fd, &size, &err), 0);
    close(fd);
}

Test(fs, read_file_reads_and_bounds)
{
    struct cordon_error err;
    char *buf = NULL;
    size_t len = 0;

    cr_assert_eq(write_n_at(infd, "bin", "a\0b\n", 4), 0);
    cr_assert_eq(write_at(infd, "empty", ""), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_read_file(infd, "bin", 4, &buf, &len, &err), 0, "%s", err.message);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(buf, "a\0b\n", 5), 0, "content or terminating NUL wrong");
    free(buf);
    buf = NULL;
    cr_assert_eq(cordon_fs_read_file(infd, "bin", 3, &buf, &len, &err), CORDON_E_LIMIT);
    cr_assert_null(buf);
    cr_assert_eq(cordon_fs_read_file(infd, "empty", 10, &buf, &len, &err), 0, "%s", err.message);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(buf, "");
    free(buf);
    buf = NULL;
    plant();
    cr_assert_eq(cordon_fs_read_file(infd, "passwd", 0, &buf, &len, &err), CORDON_E_UNSAFE);
    cr_assert_null(buf);
}

/* ---- write_atomic ------------------------------------------------------ */

/* Drains a pipe, counting bytes, in small reads (so the writer sees short
 * writes and has to go on). */
static void *drain(void *arg)
{
    int fd = *(int *)arg;
    char buf[1000];
    size_t total = 0;
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf))) > 0)
        total += (size_t)n;
    return (void *)total;
}

Test(fs, write_all_writes_everything_or_says_errno)
{
    static char big[3 << 20];
    int p[2];
    pthread_t t;
    void *got;

    memset(big, 'x', sizeof(big));
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(pthread_create(&t, NULL, drain, &p[0]), 0);
    cr_expect_eq(cordon_fs_write_all(p[1], big, sizeof(big)), 0);
    close(p[1]);
    pthread_join(t, &got);
    cr_expect_eq((size_t)got, sizeof(big), "the reader got %zu of %zu bytes", (size_t)got,
                 sizeof(big));
    close(p[0]);
    /* A closed reader: -EPIPE (SIGPIPE ignored here), and a bad fd: -EBADF. */
    cr_assert_eq(pipe(p), 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    cr_expect_eq(cordon_fs_write_all(p[1], "a", 1), -EPIPE);
    close(p[1]);
    cr_expect_eq(cordon_fs_write_all(p[1], "a", 1), -EBADF);
    cr_expect_eq(cordon_fs_write_all(p[1], "", 0), 0, "nothing to write is no write");
}

/* write_atomic (durable) and write_replace (not fsync'd) share every rule
 * but the fsyncs: each test below runs both. */
typedef int (*replace_fn)(int, const char *, const void *, size_t, mode_t, struct cordon_error *);
static const struct {
    const char *name;
    replace_fn fn;
} writers[] = { { "write_atomic", cordon_fs_write_atomic },
                { "write_replace", cordon_fs_write_replace } };
#define N_WRITERS (sizeof(writers) / sizeof(writers[0]))

Test(fs, write_atomic_replaces_and_leaves_no_temp)
{
    struct cordon_error err;
    struct stat st;
    char *s, dir[16], file[32], top[16];
    int temps = -1;

    for (size_t w = 0; w < N_WRITERS; w++) {
        snprintf(dir, sizeof(dir), "d%zu", w);
        snprintf(file, sizeof(file), "d%zu/f", w);
        snprintf(top, sizeof(top), "top%zu", w);
        cr_assert_eq(mkdirat(infd, dir, 0755), 0);
        cr_assert_eq(write_at(infd, file, "old"), 0);
        cordon_error_init(&err);
        cr_assert_eq(writers[w].fn(infd, file, "new contents", 12, 0640, &err), 0, "%s: %s",
                     writers[w].name, err.message);
        s = read_at(infd, file);
        cr_assert_str_eq(s, "new contents", "%s", writers[w].name);
        free(s);
        cr_assert_eq(fstatat(infd, file, &st, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert_eq(st.st_mode & 07777, 0640, "%s: mode %o", writers[w].name, st.st_mode & 07777);
        cr_assert_eq(count_entries(infd, dir, &temps), 1);
        cr_assert_eq(temps, 0, "%s left a temporary file", writers[w].name);
        cr_assert_eq(writers[w].fn(infd, top, "", 0, 0600, &err), 0, "%s: %s", writers[w].name,
                     err.message);
        cr_assert(exists_at(infd, top), "%s", writers[w].name);
    }
}

struct atomic_case {
    const char *rel;
    int code;
    const char *dir;    /* directory that must hold no temporary file afterwards */
};

static const struct atomic_case atomic_refusals[] = {
    {"adir", CORDON_E_IO, "."},             /* rename over a non-empty directory fails */
    {"to_outside/new", CORDON_E_UNSAFE, "."},
    {"../outside/new", CORDON_E_UNSAFE, "."},
    {"/tmp/cordon-never", CORDON_E_UNSAFE, "."},
    {"missing/f", CORDON_E_NOT_FOUND, "."},
    {"sub/", CORDON_E_IO, "sub"},
};

ParameterizedTestParameters(fs, write_atomic_refuses)
{
    static size_t idx[sizeof(atomic_refusals) / sizeof(atomic_refusals[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, fs, write_atomic_refuses)
{
    const struct atomic_case *c = &atomic_refusals[*i];
    struct cordon_error err;
    int temps = -1, r;

    plant();
    cr_assert_eq(mkdirat(infd, "adir", 0755), 0);
    cr_assert_eq(write_at(infd, "adir/keep", "k"), 0);
    for (size_t w = 0; w < N_WRITERS; w++) {
        cordon_error_init(&err);
        r = writers[w].fn(infd, c->rel, "evil", 4, 0644, &err);
        cr_assert_eq(r, c->code, "%s row %zu \"%s\": got %d (%s)", writers[w].name, *i, c->rel,
                     r, err.message);
        count_entries(infd, c->dir, &temps);
        cr_assert_eq(temps, 0, "%s row %zu: a temporary file was left behind", writers[w].name,
                     *i);
    }
    assert_outside_untouched();
    cr_assert(exists_at(infd, "adir/keep"));
    cr_assert_not(exists_at(AT_FDCWD, "/tmp/cordon-never"));
}

/* Renaming over a planted symlink replaces the link itself, never its target. */
Test(fs, write_atomic_replaces_a_link_not_its_target)
{
    struct cordon_error err;
    struct stat st;
    char *s;

    plant();
    for (size_t w = 0; w < N_WRITERS; w++) {
        cordon_error_init(&err);
        cr_assert_eq(writers[w].fn(infd, "to_secret", "mine", 4, 0644, &err), 0, "%s: %s",
                     writers[w].name, err.message);
        cr_assert_eq(fstatat(infd, "to_secret", &st, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert(S_ISREG(st.st_mode), "%s", writers[w].name);
        s = read_at(infd, "to_secret");
        cr_assert_str_eq(s, "mine", "%s", writers[w].name);
        free(s);
        if (w + 1 < N_WRITERS) { /* the link again, for the next writer */
            char *target = NULL;

            cr_assert(asprintf(&target, "%s/secret", outside) > 0);
            cr_assert_eq(unlinkat(infd, "to_secret", 0), 0);
            cr_assert_eq(symlinkat(target, infd, "to_secret"), 0);
            free(target);
        }
    }
    assert_outside_untouched();
}

/* ---- copy_beneath ------------------------------------------------------ */

static char *pattern(size_t len)
{
    char *p = malloc(len);

    cr_assert_not_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (char)((i * 131u + i / 251u) & 0xff);
    return p;
}

Test(fs, copy_beneath_copies_and_hashes)
{
    enum { LEN = 300001 };
    struct cordon_error err;
    char *data = pattern(LEN), *copy;
    char want[65], got[65] = {0};
    uint64_t bytes = 0;
    struct stat st;
    int fd, temps = -1;

    cr_assert_eq(write_n_at(infd, "src", data, LEN), 0);
    cordon_sha256_hex(data, LEN, want);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_copy_beneath(infd, "src", infd, "d1/d2/dst", LEN, 0604, got, &bytes,
                                        &err),
                 0, "%s", err.message);
    cr_assert_str_eq(got, want);
    cr_assert_eq(bytes, LEN);
    cr_assert_eq(fstatat(infd, "d1/d2/dst", &st, AT_SYMLINK_NOFOLLOW), 0);
    cr_assert_eq(st.st_size, LEN);
    cr_assert_eq(st.st_mode & 07777, 0604);
    copy = malloc(LEN);
    fd = openat(infd, "d1/d2/dst", O_RDONLY | O_CLOEXEC);
    cr_assert_eq(read(fd, copy, LEN), LEN);
    close(fd);
    cr_assert_eq(memcmp(copy, data, LEN), 0);
    cr_assert_eq(count_entries(infd, "d1/d2", &temps), 1);
    cr_assert_eq(temps, 0);
    /* Optional outputs may be NULL. */
    cr_assert_eq(cordon_fs_copy_beneath(infd, "src", infd, "dst2", 0, 0600, NULL, NULL, &err), 0);
    free(copy);
    free(data);
}

struct copy_case {
    const char *src, *dst;
    uint64_t max;
    int code;
    const char *absent;     /* must not exist beneath in/ afterwards */
};

static const struct copy_case copy_refusals[] = {
    {"to_secret", "stolen", 0, CORDON_E_UNSAFE, "stolen"},
    {"passwd", "stolen", 0, CORDON_E_UNSAFE, "stolen"},
    {"big", "out/big", 1000, CORDON_E_LIMIT, "out/big"},
    {"big", "to_outside/big", 0, CORDON_E_UNSAFE, NULL},
    {"big", "sub_link/big", 0, CORDON_E_UNSAFE, "sub/big"},
    {"../outside/secret", "stolen", 0, CORDON_E_UNSAFE, "stolen"},
    {"sub", "stolen", 0, CORDON_E_UNSAFE, "stolen"},
    {"big", "full", 0, CORDON_E_IO, "full/big"},    /* fails after the temporary file exists */
};

ParameterizedTestParameters(fs, copy_beneath_refuses)
{
    static size_t idx[sizeof(copy_refusals) / sizeof(copy_refusals[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, fs, copy_beneath_refuses)
{
    const struct copy_case *c = &copy_refusals[*i];
    struct cordon_error err;
    char *data = pattern(5000), hex[65] = "untouched";
    uint64_t bytes = 77;
    int temps = -1, r;

    plant();
    cr_assert_eq(write_n_at(infd, "big", data, 5000), 0);
    cr_assert_eq(mkdirat(infd, "full", 0755), 0);
    cr_assert_eq(write_at(infd, "full/keep", "k"), 0);
    cordon_error_init(&err);
    r = cordon_fs_copy_beneath(infd, c->src, infd, c->dst, c->max, 0644, hex, &bytes, &err);
    cr_assert_eq(r, c->code, "row %zu: got %d (%s)", *i, r, err.message);
    cr_assert_str_eq(hex, "untouched");
    cr_assert_eq(bytes, 77);
    if (c->absent != NULL)
        cr_assert_not(exists_at(infd, c->absent), "row %zu: %s exists", *i, c->absent);
    count_entries(infd, ".", &temps);
    cr_assert_eq(temps, 0);
    if (exists_at(infd, "out")) {
        count_entries(infd, "out", &temps);
        cr_assert_eq(temps, 0, "row %zu: temporary file left in out/", *i);
    }
    assert_outside_untouched();
    free(data);
}

/* ---- mkdirs_beneath ---------------------------------------------------- */

Test(fs, mkdirs_beneath_creates_and_refuses)
{
    struct cordon_error err;
    struct stat st;

    plant();
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "a/b//c/", 0750, &err), 0, "%s", err.message);
    cr_assert_eq(fstatat(infd, "a/b/c", &st, AT_SYMLINK_NOFOLLOW), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "a/b/c", 0750, &err), 0, "existing is fine");
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "", 0750, &err), 0);
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "to_outside/x", 0755, &err), CORDON_E_UNSAFE);
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "sub_link/x", 0755, &err), CORDON_E_UNSAFE);
    cr_assert_not(exists_at(infd, "sub/x"));
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "sub/file/x", 0755, &err), CORDON_E_EXISTS);
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "../escape", 0755, &err), CORDON_E_UNSAFE);
    cr_assert_eq(cordon_fs_mkdirs_beneath(infd, "/tmp/cordon-never", 0755, &err),
                 CORDON_E_UNSAFE);
    cr_assert_not(exists_at(AT_FDCWD, "/tmp/cordon-never"));
    assert_outside_untouched();
}

/* ---- remove_tree ------------------------------------------------------- */

Test(fs, remove_tree_keeps_link_targets)
{
    struct cordon_error err;
    char *target = NULL;

    cr_assert_eq(mkdirat(infd, "t", 0755), 0);
    cr_assert_eq(mkdirat(infd, "t/ro", 0755), 0);
    cr_assert_eq(write_at(infd, "t/ro/f", "x"), 0);
    cr_assert_eq(mkdirat(infd, "t/ro/deeper", 0755), 0);
    cr_assert_eq(write_at(infd, "t/ro/deeper/g", "y"), 0);
    cr_assert_eq(mkdirat(infd, "t/closed", 0755), 0);
    cr_assert_eq(write_at(infd, "t/closed/h", "z"), 0);
    cr_assert(asprintf(&target, "%s/secret", outside) > 0);
    cr_assert_eq(symlinkat(target, infd, "t/ro/to_secret"), 0);
    cr_assert_eq(symlinkat(outside, infd, "t/to_outside"), 0);
    cr_assert_eq(mkfifoat(infd, "t/fifo", 0644), 0);
    cr_assert_eq(fchmodat(infd, "t/ro/deeper", 0555, 0), 0);
    cr_assert_eq(fchmodat(infd, "t/ro", 0555, 0), 0);
    cr_assert_eq(fchmodat(infd, "t/closed", 0, 0), 0);
    free(target);
    drop_dac_override();
    cr_assert_lt(openat(infd, "t/closed", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0,
                 "permission bits are still bypassed");
    cr_assert_lt(unlinkat(infd, "t/ro/f", 0), 0, "permission bits are still bypassed");

    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_remove_tree(infd, "t", &err), 0, "%s", err.message);
    cr_assert_not(exists_at(infd, "t"));
    assert_outside_untouched();
    /* Missing is success; so is a plain file. */
    cr_assert_eq(cordon_fs_remove_tree(infd, "t", &err), 0, "%s", err.message);
    cr_assert_eq(write_at(infd, "plain", "p"), 0);
    cr_assert_eq(cordon_fs_remove_tree(infd, "plain", &err), 0, "%s", err.message);
    cr_assert_not(exists_at(infd, "plain"));
}

Test(fs, remove_tree_removes_a_link_not_its_directory)
{
    struct cordon_error err;

    cr_assert_eq(symlinkat(outside, infd, "link"), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_remove_tree(infd, "link", &err), 0, "%s", err.message);
    cr_assert_not(exists_at(infd, "link"));
    assert_outside_untouched();
    /* A link in the middle of the name is not followed either. */
    cr_assert_eq(symlinkat(outside, infd, "link"), 0);
    cr_assert_eq(cordon_fs_remove_tree(infd, "link/secret", &err), CORDON_E_UNSAFE);
    assert_outside_untouched();
}

Test(fs, remove_tree_refuses_bad_names)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_remove_tree(infd, "../outside", &err), CORDON_E_UNSAFE);
    cr_assert_eq(cordon_fs_remove_tree(infd, "/tmp", &err), CORDON_E_UNSAFE);
    cr_assert_eq(cordon_fs_remove_tree(infd, "", &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_fs_remove_tree(infd, ".", &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_fs_remove_tree(infd, NULL, &err), CORDON_E_INVALID);
    assert_outside_untouched();
}

/* A sandbox can mkdir and chdir without end: a tree deeper than the walk
 * holds fds for, and longer than PATH_MAX, is removed all the same. */
Test(fs, remove_tree_removes_any_depth)
{
    struct cordon_error err;
    int cur = dup(infd), fds;

    /* 3000 levels of "dd/" are 9000 bytes of path; a file and, at every
     * 700th level, a read-only directory on the way (not the test's own
     * directory at level 0: only root may remove from a read-only parent). */
    for (int i = 0; i < 3000; i++) {
        int next;

        cr_assert_eq(mkdirat(cur, "dd", 0755), 0);
        if (i % 100 == 0)
            cr_assert_eq(write_at(cur, "f", "x"), 0);
        next = openat(cur, "dd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(next, 0);
        if (i % 700 == 699)
            cr_assert_eq(fchmod(cur, 0555), 0);
        close(cur);
        cur = next;
    }
    close(cur);
    fds = test_count_open_fds();
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_remove_tree(infd, "dd", &err), 0, "%s", err.message);
    cr_assert_not(exists_at(infd, "dd"));
    cr_assert_eq(test_count_open_fds(), fds, "the removal leaked a directory fd");
    assert_outside_untouched();
}

Test(fs, remove_tree_path_works)
{
    struct cordon_error err;
    char *path = NULL, *missing = NULL, *dot = NULL;

    cr_assert_eq(mkdirat(infd, "p", 0755), 0);
    cr_assert_eq(write_at(infd, "p/f", "x"), 0);
    cr_assert_eq(symlinkat(outside, infd, "p/l"), 0);
    cr_assert(asprintf(&path, "%s/in/p/", root) > 0);
    cr_assert(asprintf(&missing, "%s/in/nothing/here", root) > 0);
    cr_assert(asprintf(&dot, "%s/in/.", root) > 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_remove_tree_path(path, &err), 0, "%s", err.message);
    cr_assert_not(exists_at(infd, "p"));
    cr_assert_eq(cordon_fs_remove_tree_path(missing, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_fs_remove_tree_path(dot, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_fs_remove_tree_path("", &err), CORDON_E_INVALID);
    assert_outside_untouched();
    free(path);
    free(missing);
    free(dot);
}

/* ---- mkdtemp ----------------------------------------------------------- */

Test(fs, mkdtemp_makes_private_dirs)
{
    struct cordon_error err;
    char *a = NULL, *b = NULL, *prefix = NULL;
    struct stat st;

    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_mkdtemp(outside, "job-", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_fs_mkdtemp(outside, "job-", &b, &err), 0, "%s", err.message);
    cr_assert_str_neq(a, b);
    cr_assert(asprintf(&prefix, "%s/job-", outside) > 0);
    cr_assert_eq(strncmp(a, prefix, strlen(prefix)), 0, "%s", a);
    cr_assert_eq(strlen(a), strlen(prefix) + 6);
    cr_assert_eq(stat(a, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0700);
    cr_assert_eq(cordon_fs_mkdtemp(outside, "a/b", &b, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_fs_mkdtemp("/nonexistent-cordon-dir", "x", &b, &err), CORDON_E_NOT_FOUND);
    rmdir(a);
    free(a);
    free(b);
    free(prefix);
}

/* ---- SHA-256 ----------------------------------------------------------- */

struct sha_case {
    const char *in;     /* NULL: one million 'a' */
    const char *hex;
};

static const struct sha_case sha_cases[] = {
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmn"
     "opqrsmnopqrstnopqrstu",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    {NULL, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
};

Test(fs, sha256_known_vectors)
{
    for (size_t i = 0; i < sizeof(sha_cases) / sizeof(sha_cases[0]); i++) {
        const struct sha_case *c = &sha_cases[i];
        size_t len = c->in != NULL ? strlen(c->in) : 1000000;
        char *in = malloc(len + 1), hex[65];

        cr_assert_not_null(in);
        if (c->in != NULL)
            memcpy(in, c->in, len + 1);
        else
            memset(in, 'a', len);
        cordon_sha256_hex(in, len, hex);
        cr_expect_str_eq(hex, c->hex, "vector %zu", i);
        free(in);
    }
}

/* Feeding the same bytes in uneven pieces gives the same digest. */
Test(fs, sha256_incremental_matches_one_shot)
{
    static const size_t pieces[] = {1, 63, 64, 65, 0, 127, 128, 1000, 3};
    enum { LEN = 4000 };
    char *data = pattern(LEN), want[65], got[65];
    struct cordon_sha256 ctx;
    size_t off = 0;

    cordon_sha256_hex(data, LEN, want);
    cordon_sha256_init(&ctx);
    for (size_t i = 0; off < LEN; i = (i + 1) % (sizeof(pieces) / sizeof(pieces[0]))) {
        size_t n = pieces[i] < LEN - off ? pieces[i] : LEN - off;

        cordon_sha256_update(&ctx, data + off, n);
        off += n;
    }
    cordon_sha256_final_hex(&ctx, got);
    cr_assert_str_eq(got, want);
    /* 55 and 56 bytes straddle the padding boundary. */
    for (size_t len = 54; len <= 57; len++) {
        cordon_sha256_hex(data, len, want);
        cordon_sha256_init(&ctx);
        cordon_sha256_update(&ctx, data, 1);
        cordon_sha256_update(&ctx, data + 1, len - 1);
        cordon_sha256_final_hex(&ctx, got);
        cr_assert_str_eq(got, want, "len %zu", len);
    }
    free(data);
}

Test(fs, sha256_fd_reads_to_end_within_limit)
{
    struct cordon_error err;
    char hex[65] = "untouched";
    uint64_t bytes = 0;
    int fd;

    cr_assert_eq(write_at(infd, "abc", "abc"), 0);
    fd = openat(infd, "abc", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_sha256_fd(fd, 3, hex, &bytes, &err), 0, "%s", err.message);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cr_assert_eq(bytes, 3);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    strcpy(hex, "untouched");
    cr_assert_eq(cordon_sha256_fd(fd, 2, hex, &bytes, &err), CORDON_E_LIMIT);
    cr_assert_str_eq(hex, "untouched");
    close(fd);
}

/* ---- find_program ------------------------------------------------------- */

Test(fs, find_program_resolves_inside_the_root_only)
{
    struct cordon_error err;
    char *target = NULL;

    /* in/bin/tool and in/work/run.sh executable; in/bin/data not; an
     * executable outside, reached by an absolute link and by PATH. */
    cr_assert_eq(mkdirat(infd, "bin", 0755), 0);
    cr_assert_eq(mkdirat(infd, "work", 0755), 0);
    cr_assert_eq(write_at(infd, "bin/tool", "#!/bin/sh\n"), 0);
    cr_assert_eq(fchmodat(infd, "bin/tool", 0755, 0), 0);
    cr_assert_eq(write_at(infd, "bin/data", "x"), 0);
    cr_assert_eq(write_at(infd, "work/run.sh", "#!/bin/sh\n"), 0);
    cr_assert_eq(fchmodat(infd, "work/run.sh", 0700, 0), 0);
    cr_assert_eq(write_at(outfd, "escape", "#!/bin/sh\n"), 0);
    cr_assert_eq(fchmodat(outfd, "escape", 0755, 0), 0);
    cr_assert(asprintf(&target, "%s/escape", outside) > 0);
    cr_assert_eq(symlinkat(target, infd, "bin/escape"), 0);
    cordon_error_init(&err);
    cr_expect_eq(cordon_fs_find_program(infd, "tool", "/", "/nope:bin:/bin", &err), 0, "%s",
                 err.message);
    cr_expect_eq(cordon_fs_find_program(infd, "/bin/tool", "/work", "", &err), 0, "%s",
                 err.message);
    cr_expect_eq(cordon_fs_find_program(infd, "./run.sh", "/work", "/bin", &err), 0, "%s",
                 err.message);
    cr_expect_eq(cordon_fs_find_program(infd, "../work/run.sh", "/bin", "/bin", &err), 0, "%s",
                 err.message);
    /* not executable, not there, a relative PATH entry, outside the root */
    cr_expect_eq(cordon_fs_find_program(infd, "data", "/", "/bin", &err), CORDON_E_NOT_FOUND);
    cr_expect_str_eq(err.message,
                     "argv[0]: \"data\": not found in PATH inside the sandbox (PATH=/bin)");
    cr_expect_eq(cordon_fs_find_program(infd, "tool", "/", "bin", &err), CORDON_E_NOT_FOUND);
    cr_expect_eq(cordon_fs_find_program(infd, "./tool", "/", "/bin", &err), CORDON_E_NOT_FOUND);
    cr_expect_str_eq(err.message, "argv[0]: \"./tool\": no such program inside the sandbox");
    cr_expect_eq(cordon_fs_find_program(infd, "escape", "/", "/bin", &err), CORDON_E_NOT_FOUND,
                 "an absolute link is resolved inside the root, never on the host");
    cr_expect_eq(cordon_fs_find_program(infd, target, "/", "/bin", &err), CORDON_E_NOT_FOUND);
    cr_expect_eq(cordon_fs_find_program(infd, "../../outside/escape", "/bin", "", &err),
                 CORDON_E_NOT_FOUND, "dot-dot stops at the root");
    cr_expect_eq(cordon_fs_find_program(infd, "", "/", "/bin", &err), CORDON_E_INVALID);
    cr_expect_eq(cordon_fs_find_program(infd, NULL, "/", "/bin", &err), CORDON_E_INVALID);
    free(target);
}
