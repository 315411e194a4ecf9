/* Unit tests of sdk/tar.c: hostile and good tar streams, creation, the writer. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/tar.h>
#include "tests/unit/helpers.h"

#define SECRET "outside-secret-contents"
#define MTIME 1700000000

/*
 * Every test gets <root>/dest (where streams are extracted), <root>/outside
 * holding "secret", and the streams in <root>/t.tar. A refused stream must
 * leave root with exactly those three and outside exactly as it was.
 */
static char *root, *outside;
static int rootfd = -1, destfd = -1, outfd = -1;

static int write_at(int dirfd, const char *name, const void *buf, size_t len)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

/* Content of a regular file (NUL-terminated, length in *ret_len), or NULL. */
static char *read_at(int dirfd, const char *name, size_t *ret_len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    size_t len = 0, cap = 4096;
    char *buf;

    if (fd < 0)
        return NULL;
    buf = malloc(cap);
    cr_assert_not_null(buf);
    for (;;) {
        ssize_t n;

        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        n = read(fd, buf + len, cap - 1 - len);
        cr_assert_geq(n, 0);
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    if (ret_len != NULL)
        *ret_len = len;
    return buf;
}

static bool exists_at(int dirfd, const char *name)
{
    struct stat st;

    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int count_entries(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *de;
    int n = 0;
    DIR *dir;

    cr_assert_geq(fd, 0, "open %s", name);
    dir = fdopendir(fd);
    cr_assert_not_null(dir);
    while ((de = readdir(dir)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(dir);
    return n;
}

static void assert_nothing_outside(const char *what)
{
    char *s = read_at(outfd, "secret", NULL);

    cr_assert_not_null(s, "%s: outside/secret is gone", what);
    cr_assert_str_eq(s, SECRET, "%s: outside/secret was changed", what);
    free(s);
    cr_assert_eq(count_entries(outfd, "."), 1, "%s: something was created in outside/", what);
    cr_assert_leq(count_entries(rootfd, "."), 4, "%s: something was created next to dest/", what);
    cr_assert_not(exists_at(rootfd, "evil"), "%s: root/evil exists", what);
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
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(rootfd, 0);
    cr_assert_eq(mkdirat(rootfd, "dest", 0755), 0);
    cr_assert_eq(mkdirat(rootfd, "outside", 0755), 0);
    destfd = openat(rootfd, "dest", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    outfd = openat(rootfd, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(destfd, 0);
    cr_assert_geq(outfd, 0);
    cr_assert_eq(write_at(outfd, "secret", SECRET, strlen(SECRET)), 0);
    cr_assert(asprintf(&outside, "%s/outside", root) > 0);
}

static void teardown(void)
{
    if (destfd >= 0)
        close(destfd);
    if (outfd >= 0)
        close(outfd);
    if (rootfd >= 0)
        close(rootfd);
    test_rmtree(root);
    free(root);
    free(outside);
}

TestSuite(tar, .init = setup, .fini = teardown, .timeout = 60);

/* ---- building streams with libarchive directly ------------------------- */

enum ttype { T_FILE, T_DIR, T_LINK, T_HARD, T_CHR, T_BLK, T_FIFO };

struct tent {
    enum ttype type;
    const char *name;
    const char *link;   /* symlink target or hardlink name */
    unsigned mode;      /* 0: 0644 for files, 0755 for directories */
    const char *data;   /* NULL: size bytes of 'x' */
    size_t size;
};

/* s with "@OUT@" replaced by the absolute path of outside/. */
static char *subst(const char *s)
{
    const char *at = strstr(s, "@OUT@");
    char *r = NULL;

    if (at == NULL)
        r = strdup(s);
    else
        cr_assert(asprintf(&r, "%.*s%s%s", (int)(at - s), s, outside, at + 5) > 0);
    cr_assert_not_null(r);
    return r;
}

/* Write es as a pax tar to root/t.tar, cut it at truncate_to (0: no cut),
 * and return an fd reading it from the start. */
static int build_tar(const struct tent *es, size_t n, off_t truncate_to)
{
    struct archive *a = archive_write_new();
    int fd = openat(rootfd, "t.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    cr_assert_geq(fd, 0);
    cr_assert_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        const struct tent *t = &es[i];
        struct archive_entry *e = archive_entry_new();
        char *name = subst(t->name), *link = t->link ? subst(t->link) : NULL, *data = NULL;
        size_t size = 0;
        mode_t type = AE_IFREG;
        unsigned mode = t->mode;

        switch (t->type) {
        case T_FILE:
        case T_HARD: type = AE_IFREG; break;
        case T_DIR: type = AE_IFDIR; break;
        case T_LINK: type = AE_IFLNK; break;
        case T_CHR: type = AE_IFCHR; break;
        case T_BLK: type = AE_IFBLK; break;
        case T_FIFO: type = AE_IFIFO; break;
        }
        if (mode == 0)
            mode = t->type == T_DIR ? 0755 : t->type == T_LINK ? 0777 : 0644;
        archive_entry_set_pathname(e, name);
        archive_entry_set_mode(e, type | mode);
        archive_entry_set_mtime(e, MTIME, 0);
        if (t->type == T_LINK)
            archive_entry_set_symlink(e, link);
        if (t->type == T_HARD)
            archive_entry_set_hardlink(e, link);
        if (t->type == T_CHR || t->type == T_BLK)
            archive_entry_set_rdev(e, makedev(1, 3));
        if (t->type == T_FILE) {
            size = t->data != NULL ? strlen(t->data) : t->size;
            data = malloc(size + 1);
            cr_assert_not_null(data);
            if (t->data != NULL)
                memcpy(data, t->data, size);
            else
                memset(data, 'x', size);
            archive_entry_set_size(e, (la_int64_t)size);
        }
        /* ARCHIVE_WARN: a non-UTF-8 name, written byte for byte. */
        cr_assert_geq(archive_write_header(a, e), ARCHIVE_WARN, "%s", archive_error_string(a));
        if (size > 0)
            cr_assert_eq(archive_write_data(a, data, size), (la_ssize_t)size);
        archive_entry_free(e);
        free(name);
        free(link);
        free(data);
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    if (truncate_to > 0)
        cr_assert_eq(ftruncate(fd, truncate_to), 0);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static int extract(const struct tent *es, size_t n, unsigned flags,
                   const struct cordon_tar_limits *limits, struct cordon_tar_stats *stats,
                   struct cordon_error *err)
{
    int fd = build_tar(es, n, 0), r;

    cordon_error_init(err);
    r = cordon_tar_extract_fd(fd, destfd, limits, flags, stats, err);
    close(fd);
    return r;
}

/* ---- hostile streams: one row each ------------------------------------- */

#define HOSTILE_MAX 4

struct hostile {
    const char *what;
    struct tent es[HOSTILE_MAX];
    size_t n;
    unsigned flags;
    uint64_t max_bytes, max_entries;
    off_t truncate_to;
    int code;
    const char *absent;     /* beneath dest/: must not exist afterwards */
    const char *present;    /* beneath dest/: extracted before the refusal */
    const char *fragment;   /* a piece of the message */
};

#define AL CORDON_TAR_ALLOW_SYMLINKS

static const struct hostile hostile_cases[] = {
    {"dotdot", {{T_FILE, "../evil", NULL, 0, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE,
     "evil", NULL, "\"..\""},
    {"dotdot_deep", {{T_FILE, "a/../../evil", NULL, 0, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE,
     "a", NULL, "\"..\""},
    {"absolute", {{T_FILE, "@OUT@/evil", NULL, 0, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE,
     "evil", NULL, "absolute"},
    {"symlink_to_root_then_through",
     {{T_LINK, "l", "/", 0, NULL, 0}, {T_FILE, "l@OUT@/evil", NULL, 0, "x", 0}}, 2, AL, 0, 0, 0,
     CORDON_E_UNSAFE, "l", NULL, "absolute"},
    {"symlink_to_outside_then_through",
     {{T_LINK, "l", "@OUT@", 0, NULL, 0}, {T_FILE, "l/evil", NULL, 0, "x", 0}}, 2, AL, 0, 0, 0,
     CORDON_E_UNSAFE, "l", NULL, "absolute"},
    {"symlink_inside_then_through",
     {{T_DIR, "d", NULL, 0, NULL, 0}, {T_LINK, "l", "d", 0, NULL, 0},
      {T_FILE, "l/evil", NULL, 0, "x", 0}},
     3, AL, 0, 0, 0, CORDON_E_UNSAFE, "d/evil", "l", "symbolic link"},
    {"symlink_escape",
     {{T_DIR, "a", NULL, 0, NULL, 0}, {T_LINK, "a/l", "../../outside", 0, NULL, 0}}, 2, AL, 0, 0,
     0, CORDON_E_UNSAFE, "a/l", "a", "leaves the extraction root"},
    {"symlink_dotdot_after_name", {{T_LINK, "x", "d/../..", 0, NULL, 0}}, 1, AL, 0, 0, 0,
     CORDON_E_UNSAFE, "x", NULL, "after a name"},
    {"symlink_without_allow",
     {{T_DIR, "d", NULL, 0, NULL, 0}, {T_LINK, "l", "d", 0, NULL, 0}}, 2, 0, 0, 0, 0,
     CORDON_E_UNSAFE, "l", "d", "symbolic links are not allowed"},
    {"hardlink_outside", {{T_HARD, "h", "../outside/secret", 0, NULL, 0}}, 1, 0, 0, 0, 0,
     CORDON_E_UNSAFE, "h", NULL, "hardlinks are not allowed"},
    {"hardlink_inside",
     {{T_FILE, "f", NULL, 0, "x", 0}, {T_HARD, "h", "f", 0, NULL, 0}}, 2, 0, 0, 0, 0,
     CORDON_E_UNSAFE, "h", "f", "hardlinks are not allowed"},
    {"hardlink_binary_name",
     {{T_FILE, "f", NULL, 0, "x", 0}, {T_HARD, "h\xff", "f\xfe", 0, NULL, 0}}, 2, 0, 0, 0, 0,
     CORDON_E_UNSAFE, "h\xff", "f", "hardlinks are not allowed"},
    {"char_device", {{T_CHR, "dev", NULL, 0666, NULL, 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE, "dev",
     NULL, "device"},
    {"block_device", {{T_BLK, "blk", NULL, 0666, NULL, 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE,
     "blk", NULL, "device"},
    {"fifo", {{T_FIFO, "fifo", NULL, 0644, NULL, 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE, "fifo",
     NULL, "FIFO"},
    {"setuid_file", {{T_FILE, "su", NULL, 04755, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE, "su",
     NULL, "setuid bit on tar entry \"su\""},
    {"setgid_dir", {{T_DIR, "sg", NULL, 02755, NULL, 0}}, 1, 0, 0, 0, 0, CORDON_E_UNSAFE, "sg",
     NULL, "setgid"},
    {"file_over_max_bytes", {{T_FILE, "big", NULL, 0, NULL, 2000}}, 1, 0, 1000, 0, 0,
     CORDON_E_LIMIT, "big", NULL, "\"big\": 2000 bytes"},
    {"total_over_max_bytes",
     {{T_FILE, "a", NULL, 0, NULL, 600}, {T_FILE, "b", NULL, 0, NULL, 600}}, 2, 0, 1000, 0, 0,
     CORDON_E_LIMIT, "b", "a", "\"b\": 600 bytes bring the total to more than the limit of 1000"},
    {"over_max_entries",
     {{T_FILE, "f1", NULL, 0, "1", 0}, {T_FILE, "f2", NULL, 0, "2", 0},
      {T_FILE, "f3", NULL, 0, "3", 0}, {T_FILE, "f4", NULL, 0, "4", 0}},
     4, 0, 0, 3, 0, CORDON_E_LIMIT, "f4", "f3", "limit of 3 entries"},
    {"header_size_lies", {{T_FILE, "trunc", NULL, 0, NULL, 10000}}, 1, 0, 0, 0, 512 + 4096,
     CORDON_E_INVALID, "trunc", NULL, "trunc"},
    {"file_over_symlink",
     {{T_DIR, "d", NULL, 0, NULL, 0}, {T_LINK, "l", "d", 0, NULL, 0},
      {T_FILE, "l", NULL, 0, "x", 0}},
     3, AL, 0, 0, 0, CORDON_E_UNSAFE, "d/l", "l", "symbolic link is already there"},
    {"file_over_directory",
     {{T_DIR, "d", NULL, 0, NULL, 0}, {T_FILE, "d", NULL, 0, "x", 0}}, 2, 0, 0, 0, 0,
     CORDON_E_EXISTS, "d/d", "d", "directory is already there"},
    {"directory_below_file",
     {{T_FILE, "f", NULL, 0, "x", 0}, {T_DIR, "f/sub", NULL, 0, NULL, 0}}, 2, 0, 0, 0, 0,
     CORDON_E_EXISTS, "f/sub", "f", "not a directory"},
    {"control_character", {{T_FILE, "a\nb", NULL, 0, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_INVALID,
     "a\nb", NULL, "control characters"},
    {"file_named_dot", {{T_FILE, ".", NULL, 0, "x", 0}}, 1, 0, 0, 0, 0, CORDON_E_INVALID, NULL,
     NULL, "directory itself"},
};

ParameterizedTestParameters(tar, extract_refuses)
{
    static size_t idx[sizeof(hostile_cases) / sizeof(hostile_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, tar, extract_refuses)
{
    const struct hostile *c = &hostile_cases[*i];
    struct cordon_tar_limits limits = {c->max_bytes, c->max_entries, 0, 0};
    struct cordon_tar_stats stats = {777, 777};
    struct cordon_error err;
    int fd = build_tar(c->es, c->n, c->truncate_to), r;

    cordon_error_init(&err);
    r = cordon_tar_extract_fd(fd, destfd, &limits, c->flags, &stats, &err);
    close(fd);
    cr_assert_eq(r, c->code, "%s: got %d (%s)", c->what, r, err.message);
    cr_assert_eq(err.code, c->code, "%s", c->what);
    cr_assert(strstr(err.message, c->fragment) != NULL, "%s: message \"%s\" lacks \"%s\"",
              c->what, err.message, c->fragment);
    cr_assert_eq(stats.entries, 777, "%s: stats written on failure", c->what);
    if (c->absent != NULL)
        cr_assert_not(exists_at(destfd, c->absent), "%s: dest/%s exists", c->what, c->absent);
    if (c->present != NULL)
        cr_assert(exists_at(destfd, c->present), "%s: dest/%s is missing", c->what, c->present);
    assert_nothing_outside(c->what);
}

Test(tar, extract_refuses_garbage)
{
    static const char junk[] = "this is not a tar stream, just some bytes that go on and on";
    struct cordon_error err;
    char buf[4096];
    int fd;

    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = junk[i % (sizeof(junk) - 1)];
    cr_assert_eq(write_at(rootfd, "t.tar", buf, sizeof(buf)), 0);
    fd = openat(rootfd, "t.tar", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_extract_fd(fd, destfd, NULL, 0, NULL, &err), CORDON_E_INVALID, "%s",
                 err.message);
    close(fd);
    cr_assert_eq(count_entries(destfd, "."), 0);
}

Test(tar, extract_refuses_bad_arguments)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_extract_fd(-1, destfd, NULL, 0, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_extract_fd(0, destfd, NULL, 0x100, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_extract_fd(0, destfd, NULL, CORDON_TAR_SET_OWNER, NULL, &err),
                 CORDON_E_INVALID);
}

/* ---- good streams ------------------------------------------------------ */

static mode_t mode_at(const char *name)
{
    struct stat st;

    cr_assert_eq(fstatat(destfd, name, &st, AT_SYMLINK_NOFOLLOW), 0, "stat %s", name);
    return st.st_mode;
}

Test(tar, extract_dirs_files_modes)
{
    static const struct tent es[] = {
        {T_DIR, "a", NULL, 0750, NULL, 0},
        {T_FILE, "a/x", NULL, 0640, "hello", 0},
        {T_FILE, "b", NULL, 0755, "", 0},
        {T_FILE, "c/d/e", NULL, 0600, "implicit parents", 0},
        {T_DIR, "ro", NULL, 0555, NULL, 0},
        {T_FILE, "ro/inside", NULL, 0444, "after its read-only dir", 0},
    };
    struct cordon_tar_stats stats = {0, 0};
    struct cordon_error err;
    struct stat st;
    char *s;

    /* A read-only directory must still receive the entries after it. */
    drop_dac_override();
    cr_assert_eq(extract(es, 6, 0, NULL, &stats, &err), 0, "%s", err.message);
    cr_assert_eq(stats.entries, 6);
    cr_assert_eq(stats.bytes, 5 + 16 + 23);
    cr_assert_eq(mode_at("a") & 07777, 0750);
    cr_assert_eq(mode_at("a/x") & 07777, 0640);
    cr_assert_eq(mode_at("b") & 07777, 0755);
    cr_assert_eq(mode_at("c/d/e") & 07777, 0600);
    cr_assert(S_ISDIR(mode_at("c/d")));
    cr_assert_eq(mode_at("ro") & 07777, 0555);
    s = read_at(destfd, "a/x", NULL);
    cr_assert_str_eq(s, "hello");
    free(s);
    s = read_at(destfd, "ro/inside", NULL);
    cr_assert_str_eq(s, "after its read-only dir");
    free(s);
    cr_assert_eq(fstatat(destfd, "a/x", &st, 0), 0);
    cr_assert_eq(st.st_mtime, MTIME);
    cr_assert_eq(fstatat(destfd, "a", &st, 0), 0);
    cr_assert_eq(st.st_mtime, MTIME, "directory mtime must be set after its entries");
}

Test(tar, extract_empty_stream_and_dot_entries)
{
    static const struct tent es[] = {
        {T_DIR, "./", NULL, 0700, NULL, 0},
        {T_FILE, "./a", NULL, 0644, "A", 0},
        {T_DIR, "./sub/", NULL, 0755, NULL, 0},
    };
    struct cordon_tar_stats stats = {9, 9};
    struct cordon_error err;
    int fd;

    cr_assert_eq(write_at(rootfd, "t.tar", "", 0), 0);
    fd = openat(rootfd, "t.tar", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_extract_fd(fd, destfd, NULL, 0, &stats, &err), 0, "%s", err.message);
    close(fd);
    cr_assert_eq(stats.entries, 0);
    cr_assert_eq(stats.bytes, 0);
    cr_assert_eq(extract(es, 3, 0, NULL, &stats, &err), 0, "%s", err.message);
    cr_assert(exists_at(destfd, "a"));
    cr_assert(S_ISDIR(mode_at("sub")));
    /* "./" names the destination, whose own mode is left alone. */
    cr_assert_eq(mode_at(".") & 07777, 0755);
}

Test(tar, extract_keeps_safe_symlinks)
{
    static const struct tent es[] = {
        {T_DIR, "d", NULL, 0, NULL, 0},
        {T_FILE, "d/f", NULL, 0, "target", 0},
        {T_LINK, "l", "d/f", 0, NULL, 0},
        {T_LINK, "d/up", "../d/./f", 0, NULL, 0},
        {T_LINK, "d/self", ".", 0, NULL, 0},
        {T_LINK, "dangling", "nowhere/yet", 0, NULL, 0},
    };
    struct cordon_error err;
    char buf[64];
    ssize_t n;
    char *s;

    cr_assert_eq(extract(es, 6, CORDON_TAR_ALLOW_SYMLINKS, NULL, NULL, &err), 0, "%s",
                 err.message);
    cr_assert(S_ISLNK(mode_at("l")));
    n = readlinkat(destfd, "l", buf, sizeof(buf) - 1);
    cr_assert_eq(n, 3);
    buf[n] = '\0';
    cr_assert_str_eq(buf, "d/f");
    n = readlinkat(destfd, "d/up", buf, sizeof(buf) - 1);
    buf[n < 0 ? 0 : n] = '\0';
    cr_assert_str_eq(buf, "../d/./f");
    cr_assert(S_ISLNK(mode_at("dangling")));
    /* Following them (as the sandbox would) stays inside. */
    s = read_at(destfd, "d/f", NULL);
    cr_assert_str_eq(s, "target");
    free(s);
    assert_nothing_outside("safe symlinks");
}

Test(tar, extract_read_only_strips_write_bits)
{
    static const struct tent es[] = {
        {T_DIR, "ro", NULL, 0775, NULL, 0},
        {T_FILE, "ro/f", NULL, 0666, "data", 0},
        {T_FILE, "x", NULL, 0755, "exec", 0},
    };
    struct cordon_error err;

    cr_assert_eq(extract(es, 3, CORDON_TAR_READ_ONLY, NULL, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(mode_at("ro") & 07777, 0555);
    cr_assert_eq(mode_at("ro/f") & 07777, 0444);
    cr_assert_eq(mode_at("x") & 07777, 0555);
}

/* Changing owners needs root: the suite tar_root runs from make
 * check-integration (tests/need.sh skips it for a user). */
Test(tar_root, extract_sets_owner, .init = setup, .fini = teardown, .timeout = 60)
{
    static const struct tent es[] = {
        {T_DIR, "d", NULL, 0, NULL, 0},
        {T_FILE, "d/f", NULL, 0, "data", 0},
        {T_LINK, "d/l", "f", 0, NULL, 0},
        {T_FILE, "implicit/g", NULL, 0, "g", 0},
    };
    static const char *const names[] = {"d", "d/f", "d/l", "implicit", "implicit/g"};
    struct cordon_tar_limits limits = {0, 0, 65532, 65532};
    struct cordon_error err;
    struct stat st;

    cr_assert_eq(geteuid(), 0, "changing owners needs root");
    cr_assert_eq(extract(es, 4, CORDON_TAR_SET_OWNER | CORDON_TAR_ALLOW_SYMLINKS, &limits, NULL,
                         &err),
                 0, "%s", err.message);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cr_assert_eq(fstatat(destfd, names[i], &st, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert_eq(st.st_uid, 65532, "%s uid %u", names[i], (unsigned)st.st_uid);
        cr_assert_eq(st.st_gid, 65532, "%s gid %u", names[i], (unsigned)st.st_gid);
    }
    /* The destination itself is the caller's. */
    cr_assert_eq(fstat(destfd, &st), 0);
    cr_assert_eq(st.st_uid, 0);
}

Test(tar, extract_replaces_regular_file)
{
    static const struct tent es[] = {
        {T_FILE, "f", NULL, 0644, "first", 0},
        {T_FILE, "f", NULL, 0600, "second", 0},
    };
    struct cordon_error err;
    char *s;

    cr_assert_eq(extract(es, 2, 0, NULL, NULL, &err), 0, "%s", err.message);
    s = read_at(destfd, "f", NULL);
    cr_assert_str_eq(s, "second");
    free(s);
    cr_assert_eq(mode_at("f") & 07777, 0600);
}

/* A name longer than ustar's 100 + 155 bytes needs a pax header both ways. */
static char *long_name(void)
{
    char *name = malloc(301);

    cr_assert_not_null(name);
    memset(name, 'n', 300);
    name[100] = '/';
    name[200] = '/';
    name[300] = '\0';
    return name;
}

Test(tar, extract_long_pax_path)
{
    char *name = long_name();
    struct tent es[] = {{T_FILE, name, NULL, 0644, "long", 0}};
    struct cordon_error err;
    char *s;

    cr_assert_eq(extract(es, 1, 0, NULL, NULL, &err), 0, "%s", err.message);
    s = read_at(destfd, name, NULL);
    cr_assert_str_eq(s, "long");
    free(s);
    free(name);
}

/* ---- create_fd --------------------------------------------------------- */

static void make_source_tree(int srcfd)
{
    char *big = malloc(70001);

    cr_assert_not_null(big);
    for (size_t i = 0; i < 70001; i++)
        big[i] = (char)(i * 7 + 3);
    cr_assert_eq(mkdirat(srcfd, "a", 0750), 0);
    cr_assert_eq(write_at(srcfd, "a/f1", big, 70001), 0);
    cr_assert_eq(fchmodat(srcfd, "a/f1", 0600, 0), 0);
    cr_assert_eq(write_at(srcfd, "b.txt", "bee", 3), 0);
    cr_assert_eq(write_at(srcfd, "empty", "", 0), 0);
    cr_assert_eq(fchmodat(srcfd, "empty", 0755, 0), 0);
    cr_assert_eq(mkdirat(srcfd, "e", 0700), 0);
    cr_assert_eq(symlinkat("f1", srcfd, "a/l"), 0);
    cr_assert_eq(mkdirat(srcfd, "x", 0755), 0);
    cr_assert_eq(mkdirat(srcfd, "x/y", 0755), 0);
    cr_assert_eq(write_at(srcfd, "x/y/z", "deep", 4), 0);
    /* Names are bytes: UTF-8 and not, in whatever locale the tests run. */
    cr_assert_eq(write_at(srcfd, "x/caf\xc3\xa9 \xe2\x82\xac.txt", "utf8", 4), 0);
    cr_assert_eq(write_at(srcfd, "x/raw\xff\xfe", "", 0), 0);
    free(big);
}

/* Same names, types, permission bits, bytes and link targets below both fds. */
static void assert_same_tree(int afd, int bfd, const char *where)
{
    int fd = openat(afd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *de;
    DIR *dir;

    cr_assert_eq(count_entries(afd, "."), count_entries(bfd, "."), "%s: entry count", where);
    dir = fdopendir(fd);
    cr_assert_not_null(dir);
    while ((de = readdir(dir)) != NULL) {
        struct stat sa, sb;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cr_assert_eq(fstatat(afd, de->d_name, &sa, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert_eq(fstatat(bfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW), 0, "%s/%s missing",
                     where, de->d_name);
        cr_assert_eq(sa.st_mode & S_IFMT, sb.st_mode & S_IFMT, "%s/%s type", where, de->d_name);
        if (S_ISLNK(sa.st_mode)) {
            char la[256] = {0}, lb[256] = {0};

            cr_assert_gt(readlinkat(afd, de->d_name, la, sizeof(la) - 1), 0);
            cr_assert_gt(readlinkat(bfd, de->d_name, lb, sizeof(lb) - 1), 0);
            cr_assert_str_eq(la, lb);
            continue;
        }
        cr_assert_eq(sa.st_mode & 07777, sb.st_mode & 07777, "%s/%s mode", where, de->d_name);
        if (S_ISREG(sa.st_mode)) {
            size_t la, lb;
            char *ca = read_at(afd, de->d_name, &la), *cb = read_at(bfd, de->d_name, &lb);

            cr_assert_eq(la, lb, "%s/%s size", where, de->d_name);
            cr_assert_eq(memcmp(ca, cb, la), 0, "%s/%s bytes", where, de->d_name);
            free(ca);
            free(cb);
        } else {
            int ca = openat(afd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int cb = openat(bfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            char *sub = NULL;

            cr_assert(asprintf(&sub, "%s/%s", where, de->d_name) > 0);
            assert_same_tree(ca, cb, sub);
            free(sub);
            close(ca);
            close(cb);
        }
    }
    closedir(dir);
}

static int open_tar_out(void)
{
    int fd = openat(rootfd, "c.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    cr_assert_geq(fd, 0);
    return fd;
}

Test(tar, create_then_extract_round_trip)
{
    struct cordon_tar_stats cs = {0, 0}, xs = {0, 0};
    struct cordon_error err;
    int srcfd, tfd;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    make_source_tree(srcfd);
    tfd = open_tar_out();
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_create_fd(srcfd, "", tfd, NULL, &cs, &err), 0, "%s", err.message);
    cr_assert_eq(cs.entries, 11);
    cr_assert_eq(cs.bytes, 70001 + 3 + 4 + 4);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, &xs, &err),
                 0, "%s", err.message);
    cr_assert_eq(xs.entries, cs.entries);
    cr_assert_eq(xs.bytes, cs.bytes);
    assert_same_tree(srcfd, destfd, "src");
    close(tfd);
    close(srcfd);
}

Test(tar, create_is_deterministic_and_relative_to_rel)
{
    struct cordon_tar_stats cs = {0, 0};
    struct cordon_error err;
    char *one, *two;
    size_t l1, l2;
    int srcfd, tfd;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    make_source_tree(srcfd);
    cordon_error_init(&err);
    tfd = open_tar_out();
    cr_assert_eq(cordon_tar_create_fd(srcfd, "", tfd, NULL, NULL, &err), 0, "%s", err.message);
    close(tfd);
    one = read_at(rootfd, "c.tar", &l1);
    tfd = open_tar_out();
    cr_assert_eq(cordon_tar_create_fd(srcfd, "./", tfd, NULL, NULL, &err), 0, "%s", err.message);
    close(tfd);
    two = read_at(rootfd, "c.tar", &l2);
    cr_assert_eq(l1, l2);
    cr_assert_eq(memcmp(one, two, l1), 0, "two runs gave different streams");
    cr_assert_eq(l1 % 512, 0);
    free(one);
    free(two);

    /* rel "a": its entries are named relative to it, and a/ is not one. */
    tfd = open_tar_out();
    cr_assert_eq(cordon_tar_create_fd(srcfd, "a", tfd, NULL, &cs, &err), 0, "%s", err.message);
    cr_assert_eq(cs.entries, 2);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err),
                 0, "%s", err.message);
    cr_assert(S_ISREG(mode_at("f1")));
    cr_assert(S_ISLNK(mode_at("l")));
    cr_assert_eq(count_entries(destfd, "."), 2);
    close(tfd);
    close(srcfd);
}

/* A symlink to a host file goes into the stream as a link; the file's bytes never do. */
Test(tar, create_stores_symlink_not_its_target)
{
    static const char marker[] = "HOST-ONLY-MARKER-6d1f0e";
    struct archive_entry *entry;
    struct cordon_error err;
    struct archive *a;
    char *target = NULL, *stream;
    bool seen = false;
    size_t len;
    int srcfd, tfd;

    cr_assert_eq(write_at(outfd, "hostfile", marker, strlen(marker)), 0);
    cr_assert(asprintf(&target, "%s/hostfile", outside) > 0);
    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(symlinkat(target, srcfd, "host"), 0);
    cr_assert_eq(symlinkat(outside, srcfd, "hostdir"), 0);
    tfd = open_tar_out();
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_create_fd(srcfd, "", tfd, NULL, NULL, &err), 0, "%s", err.message);
    close(tfd);
    stream = read_at(rootfd, "c.tar", &len);
    cr_assert_null(memmem(stream, len, marker, strlen(marker)), "the target's bytes leaked");
    cr_assert_null(memmem(stream, len, SECRET, strlen(SECRET)), "outside/secret leaked");
    free(stream);

    a = archive_read_new();
    archive_read_support_format_tar(a);
    tfd = openat(rootfd, "c.tar", O_RDONLY | O_CLOEXEC);
    cr_assert_eq(archive_read_open_fd(a, tfd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
        if (strcmp(archive_entry_pathname(entry), "host") == 0) {
            cr_assert_eq(archive_entry_filetype(entry), AE_IFLNK);
            cr_assert_str_eq(archive_entry_symlink(entry), target);
            seen = true;
        } else {
            cr_assert_str_eq(archive_entry_pathname(entry), "hostdir");
            cr_assert_eq(archive_entry_filetype(entry), AE_IFLNK);
        }
    }
    archive_read_free(a);
    close(tfd);
    cr_assert(seen);
    /* rel through a symlink is refused too. */
    tfd = open_tar_out();
    cr_assert_eq(cordon_tar_create_fd(srcfd, "hostdir", tfd, NULL, NULL, &err), CORDON_E_UNSAFE);
    close(tfd);
    close(srcfd);
    free(target);
}

struct create_refusal {
    const char *what;
    const char *rel;
    uint64_t max_bytes, max_entries;
    bool fifo;
    int code;
};

static const struct create_refusal create_refusals[] = {
    {"fifo_in_tree", "", 0, 0, true, CORDON_E_UNSAFE},
    {"over_max_bytes", "", 70000, 0, false, CORDON_E_LIMIT},
    {"over_max_entries", "", 0, 10, false, CORDON_E_LIMIT},
    {"rel_outside", "../outside", 0, 0, false, CORDON_E_UNSAFE},
    {"rel_absolute", "/etc", 0, 0, false, CORDON_E_UNSAFE},
    {"rel_missing", "nothing", 0, 0, false, CORDON_E_NOT_FOUND},
};

ParameterizedTestParameters(tar, create_refuses)
{
    static size_t idx[sizeof(create_refusals) / sizeof(create_refusals[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, tar, create_refuses)
{
    const struct create_refusal *c = &create_refusals[*i];
    struct cordon_tar_limits limits = {c->max_bytes, c->max_entries, 0, 0};
    struct cordon_tar_stats stats = {777, 777};
    struct cordon_error err;
    int srcfd, tfd, r;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    make_source_tree(srcfd);
    if (c->fifo)
        cr_assert_eq(mkfifoat(srcfd, "x/y/pipe", 0644), 0);
    tfd = open_tar_out();
    cordon_error_init(&err);
    r = cordon_tar_create_fd(srcfd, c->rel, tfd, &limits, &stats, &err);
    cr_assert_eq(r, c->code, "%s: got %d (%s)", c->what, r, err.message);
    cr_assert_eq(stats.entries, 777, "%s: stats written on failure", c->what);
    close(tfd);
    close(srcfd);
}

/* ---- writer ------------------------------------------------------------ */

/* ---- cordon_tar_create_paths_fd (export_files, ABI 1.2) ------------------ */

/* The names and types of the stream in <root>/c.tar, "name:t" joined by ' '. */
static char *stream_listing(void)
{
    struct archive_entry *entry;
    struct archive *a = archive_read_new();
    char *out = calloc(1, 4096);
    int tfd = openat(rootfd, "c.tar", O_RDONLY | O_CLOEXEC);

    cr_assert_not_null(out);
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_fd(a, tfd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
        unsigned t = archive_entry_filetype(entry);

        snprintf(out + strlen(out), 4096 - strlen(out), "%s%s:%c", out[0] ? " " : "",
                 archive_entry_pathname(entry),
                 t == AE_IFREG ? 'f' : t == AE_IFDIR ? 'd' : t == AE_IFLNK ? 'l' : '?');
    }
    archive_read_free(a);
    close(tfd);
    return out;
}

Test(tar, create_paths_writes_only_the_named_paths)
{
    struct cordon_tar_stats cs;
    struct cordon_error err;
    char *listing, *target = NULL;
    int srcfd, subfd, tfd;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(mkdirat(srcfd, "sub", 0755), 0);
    subfd = openat(srcfd, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(write_at(srcfd, "a", "AAA", 3), 0);
    cr_assert_eq(write_at(srcfd, "beside", "BBB", 3), 0);
    cr_assert_eq(write_at(subfd, "c", "C", 1), 0);
    cr_assert_eq(write_at(subfd, "d", "D", 1), 0);
    cr_assert(asprintf(&target, "%s/secret", outside) > 0);
    cr_assert_eq(symlinkat(target, srcfd, "link"), 0);
    cr_assert_eq(mkfifoat(srcfd, "fifo-beside", 0644), 0);
    tfd = open_tar_out();
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_create_paths_fd(
                     srcfd, "[\"a\", \"sub/c\", \"missing\", \"nodir/x\", \"a/under-a-file\", "
                            "\"link\", \"sub\"]", tfd, NULL, &cs, &err), 0, "%s", err.message);
    close(tfd);
    listing = stream_listing();
    /* In order, as named; the directory without its contents; the link as
     * a link; the missing ones left out; nothing beside them read (the FIFO
     * would have been refused). */
    cr_assert_str_eq(listing, "a:f sub/c:f link:l sub/:d");
    cr_assert_eq(cs.entries, 4);
    cr_assert_eq(cs.bytes, 4);
    free(listing);
    free(target);
    close(subfd);
    close(srcfd);
}

Test(tar, create_paths_refuses_bad_paths_and_writes_nothing)
{
    static const char *const bad[] = { "{}", "[1]", "[\"../x\"]", "[\"/etc/passwd\"]", "[\"\"]",
                                       "not json", "[\"fifo\"]", "[\"via/x\"]" };
    struct cordon_error err;
    char big[256 * 6 + 64];
    int srcfd, tfd;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_eq(mkfifoat(srcfd, "fifo", 0644), 0);
    cr_assert_eq(symlinkat(outside, srcfd, "via"), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct stat st;

        tfd = open_tar_out();
        cordon_error_init(&err);
        cr_assert_lt(cordon_tar_create_paths_fd(srcfd, bad[i], tfd, NULL, NULL, &err), 0,
                     "%s accepted", bad[i]);
        cr_assert_neq(err.message[0], '\0');
        cr_assert_eq(fstat(tfd, &st), 0);
        /* A refusal before any entry writes nothing that looks like a stream. */
        cr_assert_lt(st.st_size, 1024, "%s: %lld bytes written", bad[i], (long long)st.st_size);
        close(tfd);
    }
    strcpy(big, "[");
    for (int i = 0; i <= CORDON_TAR_PATHS_MAX; i++)
        strcat(big, i ? ",\"a\"" : "\"a\"");
    strcat(big, "]");
    tfd = open_tar_out();
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_create_paths_fd(srcfd, big, tfd, NULL, NULL, &err), CORDON_E_LIMIT);
    cr_assert(strstr(err.message, "limit of 256") != NULL, "%s", err.message);
    close(tfd);
    close(srcfd);
}

Test(tar, writer_builds_a_stream)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_tar_stats stats = {0, 0};
    struct cordon_error err;
    struct stat st;
    int tfd = open_tar_out(), src;
    char *s;

    cr_assert_eq(write_at(outfd, "payload", "0123456789", 10), 0);
    src = openat(outfd, "payload", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_dir(w, "d", 0750, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_file(w, "d/f", "hello", 5, 0640, &err), 0, "%s",
                 err.message);
    cr_assert_eq(cordon_tar_writer_add_fd(w, "g", src, 10, 0755, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "%s", err.message);
    close(src);
    /* The fd stays open, and the last block is not padded to 10 KiB. */
    cr_assert_geq(fcntl(tfd, F_GETFD), 0);
    cr_assert_eq(fstat(tfd, &st), 0);
    cr_assert_eq(st.st_size, 512 + (512 + 512) + (512 + 512) + 1024, "size %lld",
                 (long long)st.st_size);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, 0, &stats, &err), 0, "%s", err.message);
    close(tfd);
    cr_assert_eq(stats.entries, 3);
    cr_assert_eq(mode_at("d") & 07777, 0750);
    cr_assert_eq(mode_at("d/f") & 07777, 0640);
    cr_assert_eq(mode_at("g") & 07777, 0755);
    s = read_at(destfd, "d/f", NULL);
    cr_assert_str_eq(s, "hello");
    free(s);
    s = read_at(destfd, "g", NULL);
    cr_assert_str_eq(s, "0123456789");
    free(s);
}

Test(tar, writer_long_pax_path_round_trip)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    char *name = long_name(), *s;
    int tfd = open_tar_out();

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0);
    cr_assert_eq(cordon_tar_writer_add_file(w, name, "pax", 3, 0644, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "%s", err.message);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, 0, NULL, &err), 0, "%s", err.message);
    close(tfd);
    s = read_at(destfd, name, NULL);
    cr_assert_str_eq(s, "pax");
    free(s);
    free(name);
}

Test(tar, writer_add_fd_short_breaks_the_stream)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    int tfd = open_tar_out(), src;

    cr_assert_eq(write_at(outfd, "short", "0123456789", 10), 0);
    src = openat(outfd, "short", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0);
    cr_assert_eq(cordon_tar_writer_add_fd(w, "g", src, 20, 0644, &err), CORDON_E_IO);
    cr_assert(strstr(err.message, "10 of 20") != NULL, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_file(w, "h", "x", 1, 0644, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_writer_close(w, &err), CORDON_E_IO);
    close(src);
    /* What reached the fd must not pass for a stream holding a zero-padded "g". */
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cordon_tar_extract_fd(tfd, destfd, NULL, 0, NULL, &err);
    cr_assert_not(exists_at(destfd, "g"));
    close(tfd);
}

Test(tar, writer_refuses_bad_paths)
{
    static const char *const bad[] = {"../x", "/abs", "", ".", "a/../../b", "c\x01"};
    struct cordon_tar_writer *w = NULL;
    struct cordon_tar_stats stats = {9, 9};
    struct cordon_error err;
    int tfd = open_tar_out();

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_lt(cordon_tar_writer_add_file(w, bad[i], "x", 1, 0644, &err), 0, "%s", bad[i]);
        cr_assert_lt(cordon_tar_writer_add_dir(w, bad[i], 0755, &err), 0, "%s", bad[i]);
    }
    /* A refused path leaves the stream usable and empty. */
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "%s", err.message);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, 0, &stats, &err), 0, "%s", err.message);
    cr_assert_eq(stats.entries, 0);
    close(tfd);
}

Test(tar, writer_free_abandons)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    int tfd = open_tar_out();

    cordon_error_init(&err);
    cordon_tar_writer_free(NULL);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0);
    cr_assert_eq(cordon_tar_writer_add_file(w, "f", "x", 1, 0644, &err), 0);
    cordon_tar_writer_free(w);
    cr_assert_geq(fcntl(tfd, F_GETFD), 0);
    /* No end-of-archive blocks: an abandoned stream does not read as complete. */
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cordon_tar_extract_fd(tfd, destfd, NULL, 0, NULL, &err);
    cr_assert_not(exists_at(destfd, "f"));
    close(tfd);
    cr_assert_eq(cordon_tar_writer_open(-1, &w, &err), CORDON_E_INVALID);
}

/* ---- filter_fd and writer_add_symlink ---------------------------------- */

static int filter_file(int in_fd, const char *out_name, const struct cordon_tar_limits *limits,
                       unsigned flags, struct cordon_tar_stats *stats, char sha[65],
                       struct cordon_error *err)
{
    int out = openat(rootfd, out_name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r;

    cr_assert_geq(out, 0);
    cordon_error_init(err);
    r = cordon_tar_filter_fd(in_fd, out, limits, flags, stats, sha, err);
    close(out);
    return r;
}

/* The filter refuses what extraction refuses, with the same check, clashes
 * between two entries of the stream included (a file where an earlier
 * entry made a directory, a directory beneath a file): a stream the filter
 * passed always extracts into an empty directory. */
ParameterizedTestParameters(tar, filter_refuses_what_extraction_refuses)
{
    static size_t idx[sizeof(hostile_cases) / sizeof(hostile_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, tar, filter_refuses_what_extraction_refuses)
{
    const struct hostile *c = &hostile_cases[*i];
    struct cordon_tar_limits limits = {c->max_bytes, c->max_entries, 0, 0};
    struct cordon_tar_stats stats = {777, 777};
    struct cordon_error err;
    char sha[65] = "untouched";
    int fd = build_tar(c->es, c->n, c->truncate_to), r;

    r = filter_file(fd, "c.tar", &limits, c->flags, &stats, sha, &err);
    close(fd);
    cr_assert_eq(r, c->code, "%s: got %d (%s)", c->what, r, err.message);
    cr_assert(strstr(err.message, c->fragment) != NULL ||
                  strstr(err.message, "beneath an earlier symbolic link") != NULL,
              "%s: message \"%s\" lacks \"%s\"", c->what, err.message, c->fragment);
    cr_assert_eq(stats.entries, 777, "%s: stats written on failure", c->what);
    cr_assert_str_eq(sha, "untouched", "%s: digest written on failure", c->what);
    assert_nothing_outside(c->what);
}

/* What extraction allows of names that meet again passes the filter and
 * extracts: a file replaced by a file or by a link, a directory named
 * twice, a directory an earlier entry's name made on the way. */
Test(tar, filter_passes_what_extraction_allows_and_it_extracts)
{
    static const struct tent es[] = {
        {T_FILE, "a/b/f", NULL, 0, "one", 0}, {T_DIR, "a", NULL, 0, NULL, 0},
        {T_DIR, "a/b", NULL, 0, NULL, 0},     {T_DIR, "a", NULL, 0, NULL, 0},
        {T_FILE, "a/b/f", NULL, 0, "two", 0}, {T_FILE, "g", NULL, 0, "x", 0},
        {T_LINK, "g", "a/b/f", 0, NULL, 0},
    };
    struct cordon_error err;
    char *data;
    size_t len;
    int fd = build_tar(es, sizeof(es) / sizeof(es[0]), 0), cfd;

    cr_assert_eq(filter_file(fd, "c.tar", NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, NULL, &err), 0,
                 "%s", err.message);
    close(fd);
    cfd = openat(rootfd, "c.tar", O_RDONLY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_extract_fd(cfd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err),
                 0, "%s", err.message);
    close(cfd);
    data = read_at(destfd, "a/b/f", &len);
    cr_assert_eq(len, 3);
    cr_assert_eq(memcmp(data, "two", 3), 0);
    free(data);
}

/* A directory where an earlier entry left a file or link, and a file where
 * a parent directory was made on the way, are refused by the filter as by
 * extraction (found by fuzz-tar: the filter used to pass them, and a
 * checkpoint written from such a stream could never be restored). */
Test(tar, filter_refuses_clashes_between_entries)
{
    static const struct tent implicit_parent[] = {
        {T_FILE, "d/f", NULL, 0, "x", 0}, {T_FILE, "d", NULL, 0, "x", 0} };
    static const struct tent dir_over_file[] = {
        {T_FILE, "f", NULL, 0, "x", 0}, {T_DIR, "f", NULL, 0, NULL, 0} };
    static const struct tent dir_over_link[] = {
        {T_DIR, "t", NULL, 0, NULL, 0}, {T_LINK, "l", "t", 0, NULL, 0},
        {T_DIR, "l", NULL, 0, NULL, 0} };
    const struct { const struct tent *es; size_t n; const char *fragment; } cases[] = {
        {implicit_parent, 2, "an earlier entry's directory is already there"},
        {dir_over_file, 2, "an earlier entry's regular file is already there"},
        {dir_over_link, 3, "beneath an earlier symbolic link"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cordon_error err;
        int fd = build_tar(cases[i].es, cases[i].n, 0), cfd, r;

        r = filter_file(fd, "c.tar", NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, NULL, &err);
        close(fd);
        cr_assert_lt(r, 0, "case %zu passed the filter", i);
        cr_assert_not_null(strstr(err.message, cases[i].fragment), "case %zu: %s", i,
                           err.message);
        /* and extraction, given the same stream, refuses it as well */
        char sub[16];

        snprintf(sub, sizeof(sub), "x%zu", i);
        cr_assert_eq(mkdirat(rootfd, sub, 0755), 0);
        cfd = openat(rootfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = build_tar(cases[i].es, cases[i].n, 0);
        cordon_error_init(&err);
        cr_assert_lt(cordon_tar_extract_fd(fd, cfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err),
                     0, "case %zu: extraction took it", i);
        close(fd);
        close(cfd);
    }
}

Test(tar, filter_round_trip_and_digest)
{
    struct cordon_tar_stats cs = {0, 0}, fs = {0, 0}, fs2 = {0, 0}, xs = {0, 0};
    struct cordon_error err;
    char sha[65], sha2[65], own[65];
    char *once, *twice;
    size_t l1, l2;
    int srcfd, tfd, cfd;

    cr_assert_eq(mkdirat(rootfd, "src", 0755), 0);
    srcfd = openat(rootfd, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    make_source_tree(srcfd);
    tfd = openat(rootfd, "t.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_create_fd(srcfd, "", tfd, NULL, &cs, &err), 0, "%s", err.message);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(filter_file(tfd, "c.tar", NULL, CORDON_TAR_ALLOW_SYMLINKS, &fs, sha, &err), 0,
                 "%s", err.message);
    close(tfd);
    cr_assert_eq(fs.entries, cs.entries);
    cr_assert_eq(fs.bytes, cs.bytes);
    /* The digest is of exactly the bytes that reached the fd. */
    once = read_at(rootfd, "c.tar", &l1);
    cordon_sha256_hex(once, l1, own);
    cr_assert_str_eq(sha, own);
    /* A clean stream is a fixed point: filtering it again changes nothing. */
    cfd = openat(rootfd, "c.tar", O_RDONLY | O_CLOEXEC);
    cr_assert_eq(filter_file(cfd, "c2.tar", NULL, CORDON_TAR_ALLOW_SYMLINKS, &fs2, sha2, &err),
                 0, "%s", err.message);
    twice = read_at(rootfd, "c2.tar", &l2);
    cr_assert_eq(l1, l2);
    cr_assert_eq(memcmp(once, twice, l1), 0);
    cr_assert_str_eq(sha, sha2);
    cr_assert_eq(lseek(cfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(cfd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, &xs, &err),
                 0, "%s", err.message);
    cr_assert_eq(xs.entries, cs.entries);
    assert_same_tree(srcfd, destfd, "src");
    close(cfd);
    close(srcfd);
    free(once);
    free(twice);
}

/* Names come out normalised, owners numeric (or forced), nothing else of the header. */
Test(tar, filter_cleans_headers)
{
    static const struct tent es[] = {
        {T_DIR, "./", NULL, 0755, NULL, 0},
        {T_DIR, "./d//", NULL, 0750, NULL, 0},
        {T_FILE, "./d/./f", NULL, 0664, "data", 0},
    };
    static const char *const want[] = {".", "d", "d/f"};
    struct cordon_tar_limits owner = {0, 0, 4242, 4343};
    struct archive_entry *e;
    struct cordon_error err;
    struct archive *a;
    size_t n = 0;
    int fd = build_tar(es, 3, 0), cfd;

    cr_assert_eq(filter_file(fd, "c.tar", &owner, CORDON_TAR_SET_OWNER | CORDON_TAR_READ_ONLY,
                             NULL, NULL, &err),
                 0, "%s", err.message);
    close(fd);
    cfd = openat(rootfd, "c.tar", O_RDONLY | O_CLOEXEC);
    a = archive_read_new();
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_fd(a, cfd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        char name[64];
        size_t len;

        cr_assert_lt(n, 3);
        snprintf(name, sizeof(name), "%s", archive_entry_pathname(e));
        len = strlen(name);
        if (len > 1 && name[len - 1] == '/')
            name[len - 1] = '\0';
        if (strcmp(name, "./") == 0)
            name[1] = '\0';
        cr_expect_str_eq(name, want[n]);
        cr_expect_eq(archive_entry_uid(e), 4242);
        cr_expect_eq(archive_entry_gid(e), 4343);
        /* No user name travels: the reader sees an empty field. */
        cr_expect(archive_entry_uname(e) == NULL || archive_entry_uname(e)[0] == '\0');
        cr_expect_eq(archive_entry_perm(e) & 0222, 0, "%s: write bits", name);
        cr_expect_eq(archive_entry_mtime(e), MTIME);
        n++;
    }
    cr_expect_eq(n, 3);
    archive_read_free(a);
    close(cfd);
}

struct pipe_feed {
    int fd;
    const char *buf;
    size_t len;
    ssize_t wrote;
};

static void *feed(void *arg)
{
    struct pipe_feed *f = arg;
    size_t done = 0;

    while (done < f->len) {
        ssize_t n = write(f->fd, f->buf + done, f->len - done);

        if (n <= 0)
            break;
        done += (size_t)n;
    }
    f->wrote = (ssize_t)done;
    close(f->fd);
    return NULL;
}

/* Padding after the end blocks (tar(1) writes whole records) is read, so
 * that a writer on a pipe finishes instead of meeting EPIPE. */
Test(tar, filter_drains_a_pipe)
{
    static const struct tent es[] = {{T_FILE, "f", NULL, 0, "x", 0}};
    struct cordon_tar_stats fs = {0, 0};
    struct pipe_feed f;
    struct cordon_error err;
    pthread_t th;
    size_t len;
    int fds[2], tfd = build_tar(es, 1, 0);
    char *buf;

    close(tfd);
    buf = read_at(rootfd, "t.tar", &len);
    buf = realloc(buf, len + 200000);
    memset(buf + len, 0, 200000);
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    f.fd = fds[1];
    f.buf = buf;
    f.len = len + 200000;
    cr_assert_eq(pthread_create(&th, NULL, feed, &f), 0);
    cr_assert_eq(filter_file(fds[0], "c.tar", NULL, 0, &fs, NULL, &err), 0, "%s", err.message);
    close(fds[0]);
    pthread_join(th, NULL);
    cr_assert_eq(f.wrote, (ssize_t)f.len, "the writer was cut off");
    cr_assert_eq(fs.entries, 1);
    free(buf);
}

Test(tar, filter_refuses_bad_arguments)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_filter_fd(-1, 1, NULL, 0, NULL, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_filter_fd(0, -1, NULL, 0, NULL, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_filter_fd(0, 1, NULL, 0x100, NULL, NULL, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_filter_fd(0, 1, NULL, CORDON_TAR_SET_OWNER, NULL, NULL, &err),
                 CORDON_E_INVALID);
    /* Unpacking a root filesystem is extraction's alone. */
    cr_assert_eq(cordon_tar_filter_fd(0, 1, NULL, CORDON_TAR_ROOTFS, NULL, NULL, &err),
                 CORDON_E_INVALID);
}

/* The writer stores any target; extraction is where a link is judged. */
Test(tar, writer_add_symlink_stores_target_as_given)
{
    static const char *const targets[] = {"rel/target", "/etc/passwd", "../../up"};
    struct cordon_tar_writer *w = NULL;
    struct archive_entry *e;
    struct cordon_error err;
    struct archive *a;
    size_t n = 0;
    int tfd = open_tar_out();

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tfd, &w, &err), 0);
    cr_assert_eq(cordon_tar_writer_add_symlink(w, "l0", targets[0], &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_symlink(w, "l1", targets[1], &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_symlink(w, "l2", targets[2], &err), 0, "%s", err.message);
    cr_assert_eq(cordon_tar_writer_add_symlink(w, "l3", "", &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_tar_writer_add_symlink(w, "l4", NULL, &err), CORDON_E_INVALID);
    cr_assert_lt(cordon_tar_writer_add_symlink(w, "../l5", "x", &err), 0);
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "%s", err.message);
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    a = archive_read_new();
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_fd(a, tfd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        cr_assert_lt(n, 3);
        cr_expect_eq(archive_entry_filetype(e), AE_IFLNK);
        cr_expect_str_eq(archive_entry_symlink(e), targets[n]);
        n++;
    }
    cr_expect_eq(n, 3);
    archive_read_free(a);
    /* Extraction keeps the safe one and refuses the absolute one. */
    cr_assert_eq(lseek(tfd, 0, SEEK_SET), 0);
    cr_assert_eq(cordon_tar_extract_fd(tfd, destfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err),
                 CORDON_E_UNSAFE);
    cr_assert(exists_at(destfd, "l0"));
    cr_assert_not(exists_at(destfd, "l1"));
    close(tfd);
}

/* ---- CORDON_TAR_ROOTFS: a container's root filesystem ------------------ */

#define RF CORDON_TAR_ROOTFS

/* What a root filesystem still may not do: hardlink out of the tree or to
 * something that is not an earlier regular file, or write through a link. */
static const struct hostile rootfs_hostile_cases[] = {
    {"rootfs_hardlink_dotdot", {{T_HARD, "h", "../outside/secret", 0, NULL, 0}}, 1, RF, 0, 0, 0,
     CORDON_E_UNSAFE, "h", NULL, "\"..\""},
    {"rootfs_hardlink_absolute", {{T_HARD, "h", "@OUT@/secret", 0, NULL, 0}}, 1, RF, 0, 0, 0,
     CORDON_E_UNSAFE, "h", NULL, "absolute"},
    {"rootfs_hardlink_to_missing", {{T_HARD, "h", "nothere", 0, NULL, 0}}, 1, RF, 0, 0, 0,
     CORDON_E_UNSAFE, "h", NULL, "not an earlier regular file"},
    {"rootfs_hardlink_to_directory",
     {{T_DIR, "d", NULL, 0, NULL, 0}, {T_HARD, "h", "d", 0, NULL, 0}}, 2, RF, 0, 0, 0,
     CORDON_E_UNSAFE, "h", "d", "not an earlier regular file"},
    {"rootfs_hardlink_through_symlink",
     {{T_LINK, "l", "@OUT@", 0, NULL, 0}, {T_HARD, "h", "l/secret", 0, NULL, 0}}, 2, RF, 0, 0, 0,
     CORDON_E_UNSAFE, "h", "l", "tar entry \"h\""},
    {"rootfs_file_through_absolute_symlink",
     {{T_LINK, "l", "@OUT@", 0, NULL, 0}, {T_FILE, "l/evil", NULL, 0, "x", 0}}, 2, RF, 0, 0, 0,
     CORDON_E_UNSAFE, NULL, "l", "tar entry \"l/evil\""},
};

ParameterizedTestParameters(tar, extract_rootfs_refuses)
{
    static size_t idx[sizeof(rootfs_hostile_cases) / sizeof(rootfs_hostile_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, tar, extract_rootfs_refuses)
{
    const struct hostile *c = &rootfs_hostile_cases[*i];
    struct cordon_error err;
    int r;

    r = extract(c->es, c->n, c->flags, NULL, NULL, &err);
    cr_assert_eq(r, c->code, "%s: got %d (%s)", c->what, r, err.message);
    cr_assert(strstr(err.message, c->fragment) != NULL, "%s: message \"%s\" lacks \"%s\"",
              c->what, err.message, c->fragment);
    if (c->absent != NULL)
        cr_assert_not(exists_at(destfd, c->absent), "%s: dest/%s exists", c->what, c->absent);
    if (c->present != NULL)
        cr_assert(exists_at(destfd, c->present), "%s: dest/%s is missing", c->what, c->present);
    assert_nothing_outside(c->what);
}

Test(tar, extract_rootfs_keeps_links_strips_privilege_bits)
{
    static const struct tent es[] = {
        {T_DIR, "usr", NULL, 0, NULL, 0},
        {T_DIR, "usr/bin", NULL, 0, NULL, 0},
        {T_FILE, "usr/bin/perl", NULL, 0755, "#!perl", 0},
        {T_HARD, "usr/bin/perl5", "usr/bin/perl", 0, NULL, 0},
        {T_FILE, "usr/bin/su", NULL, 04755, "su", 0},
        {T_FILE, "usr/bin/chage", NULL, 02755, "chage", 0},
        {T_LINK, "bin", "usr/bin", 0, NULL, 0},
        {T_LINK, "usr/bin/abs", "/usr/bin/perl", 0, NULL, 0},
        {T_LINK, "climb", "../../../etc", 0, NULL, 0},
        {T_DIR, "tmp", NULL, 01777, NULL, 0},
        {T_CHR, "dev/null", NULL, 0666, NULL, 0},
        {T_FIFO, "run/fifo", NULL, 0644, NULL, 0},
    };
    struct cordon_tar_stats stats = {0, 0};
    struct stat a, b;
    struct cordon_error err;
    char buf[64];
    ssize_t n;

    cr_assert_eq(extract(es, 12, RF, NULL, &stats, &err), 0, "%s", err.message);
    /* The bits go, the programs stay. */
    cr_assert_eq(mode_at("usr/bin/su") & 07777, 0755);
    cr_assert_eq(mode_at("usr/bin/chage") & 07777, 0755);
    cr_assert_eq(mode_at("tmp") & 07777, 0777);
    /* A hardlink joins two names of the tree: one inode. */
    cr_assert_eq(fstatat(destfd, "usr/bin/perl", &a, AT_SYMLINK_NOFOLLOW), 0);
    cr_assert_eq(fstatat(destfd, "usr/bin/perl5", &b, AT_SYMLINK_NOFOLLOW), 0);
    cr_assert_eq(a.st_ino, b.st_ino);
    cr_assert_eq(a.st_nlink, 2);
    /* Links stay links, whatever they point at; the host never followed them. */
    n = readlinkat(destfd, "usr/bin/abs", buf, sizeof(buf) - 1);
    cr_assert_eq(n, 13);
    buf[n] = '\0';
    cr_assert_str_eq(buf, "/usr/bin/perl");
    n = readlinkat(destfd, "climb", buf, sizeof(buf) - 1);
    cr_assert_eq(n, 12);
    buf[n] = '\0';
    cr_assert_str_eq(buf, "../../../etc");
    cr_assert(S_ISLNK(mode_at("bin")));
    /* Device nodes and FIFOs are counted and skipped: the runtime makes /dev. */
    cr_assert_not(exists_at(destfd, "dev/null"));
    cr_assert_not(exists_at(destfd, "run/fifo"));
    cr_assert_eq(stats.entries, 12);
    assert_nothing_outside("rootfs");
}

Test(tar, rootfs_flag_is_for_extraction_only)
{
    static const struct tent es[] = {{T_FILE, "f", NULL, 0, "x", 0}};
    struct cordon_error err;
    int fd = build_tar(es, 1, 0), out = openat(rootfd, "o.tar", O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    cr_assert_geq(out, 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_filter_fd(fd, out, NULL, RF, NULL, NULL, &err), CORDON_E_INVALID,
                 "%s", err.message);
    close(out);
    close(fd);
    cr_assert_eq(unlinkat(rootfd, "o.tar", 0), 0);
}

/* ---- cordon_files_import_workspace (import_files, ABI 1.1) ---------------- */

/* A data fd holding bytes, positioned at the start. */
static int data_fd_of(const char *bytes)
{
    int fd = memfd_create("files-data", MFD_CLOEXEC);

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/* Import into dest/ws/<dest> as layout "code", as the test's own user. */
static int import_files(const char *json, const char *bytes, const char *dest, uint64_t max_bytes,
                        uint64_t max_entries, struct cordon_error *err)
{
    struct cordon_workspace_owner owner = { true, false, getuid(), getgid() };
    int fd = data_fd_of(bytes), r;

    cordon_error_init(err);
    r = cordon_files_import_workspace(json, fd, destfd, dest, &owner, max_bytes, max_entries, err);
    close(fd);
    return r;
}

Test(tar, files_land_with_parents_and_modes)
{
    struct cordon_error err;
    char *s;

    cr_assert_eq(import_files("{\"files\":[{\"path\":\"main.py\",\"size\":5,\"mode\":420},"
                              "{\"path\":\"pkg/sub/run.sh\",\"size\":3,\"mode\":493}]}",
                              "helloabc", "source", 1 << 20, 16, &err), 0, "%s", err.message);
    s = read_at(destfd, "source/main.py", NULL);
    cr_assert_str_eq(s, "hello");
    free(s);
    s = read_at(destfd, "source/pkg/sub/run.sh", NULL);
    cr_assert_str_eq(s, "abc");
    free(s);
    /* source/ in layout "code" is read-only, as import_tar makes it */
    cr_assert_eq(mode_at("source/main.py") & 07777, 0444);
    cr_assert_eq(mode_at("source/pkg/sub/run.sh") & 07777, 0555);
    cr_assert(S_ISDIR(mode_at("source/pkg/sub")));
    assert_nothing_outside("files");
}

/* Each refusal names the field or file and leaves nothing outside. */
struct files_bad {
    const char *json, *bytes, *message;
    int code;
};
static const struct files_bad files_bad_cases[] = {
    { "{\"files\":[{\"path\":\"../evil\",\"size\":1,\"mode\":420}]}", "x", "..", CORDON_E_UNSAFE },
    { "{\"files\":[{\"path\":\"/etc/evil\",\"size\":1,\"mode\":420}]}", "x", "absolute",
      CORDON_E_UNSAFE },
    { "{\"files\":[{\"path\":\"a\",\"size\":1,\"mode\":2541}]}", "x", "files[0].mode",
      CORDON_E_INVALID },
    { "{\"files\":[{\"path\":\"a\",\"size\":-1,\"mode\":420}]}", "x", "files[0].size",
      CORDON_E_INVALID },
    { "{\"files\":[{\"path\":\"a\",\"size\":4,\"mode\":420}]}", "xy", "ends 2 bytes early",
      CORDON_E_INVALID },
    { "{\"files\":[{\"path\":\"a\",\"size\":1,\"mode\":420}]}", "xy", "more bytes than the files",
      CORDON_E_INVALID },
    { "{\"files\":[{\"path\":\"a\",\"size\":100,\"mode\":420}]}", "x", "limit of 10 bytes",
      CORDON_E_LIMIT },
    { "{\"files\":[{\"path\":\"a\",\"size\":0,\"mode\":420},{\"path\":\"b\",\"size\":0,\"mode\":420},"
      "{\"path\":\"c\",\"size\":0,\"mode\":420}]}", "", "limit of 2 entries", CORDON_E_LIMIT },
    { "{\"file\":[]}", "", "{\"files\": [...]}", CORDON_E_INVALID },
    { "not json", "", "{\"files\": [...]}", CORDON_E_INVALID },
};

ParameterizedTestParameters(tar, files_refused)
{
    static size_t idx[sizeof(files_bad_cases) / sizeof(files_bad_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, tar, files_refused)
{
    const struct files_bad *c = &files_bad_cases[*i];
    struct cordon_error err;

    cr_assert_eq(import_files(c->json, c->bytes, "build", 10, 2, &err), c->code,
                 "%s: %s", c->json, err.message);
    cr_assert_not_null(strstr(err.message, c->message), "%s: message \"%s\" lacks \"%s\"", c->json,
                       err.message, c->message);
    cr_assert_not(exists_at(destfd, "evil"));
    assert_nothing_outside(c->json);
}

/* A file the manifest names over a link already in the workspace is refused, not followed. */
Test(tar, files_do_not_follow_links)
{
    struct cordon_error err;

    cr_assert_eq(mkdirat(destfd, "build", 0755), 0);
    cr_assert_eq(symlinkat("../../outside", destfd, "build/out"), 0);
    cr_assert_lt(import_files("{\"files\":[{\"path\":\"out/secret\",\"size\":4,\"mode\":420}]}",
                              "evil", "build", 1 << 20, 16, &err), 0);
    assert_nothing_outside("files through a link");
}

/* ---- rewriting for an archive API (cordon_tar_filter_workspace_fd) ------ */

/* The entries of the stream in <root>/name, "name:t:uid:mode" joined by ' '
 * (a directory's name as the writer stored it, with its '/'). */
static char *owner_listing(const char *name)
{
    struct archive_entry *entry;
    struct archive *a = archive_read_new();
    char *out = calloc(1, 4096);
    int tfd = openat(rootfd, name, O_RDONLY | O_CLOEXEC);

    cr_assert_not_null(out);
    cr_assert_geq(tfd, 0);
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_fd(a, tfd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
        unsigned t = archive_entry_filetype(entry);

        snprintf(out + strlen(out), 4096 - strlen(out), "%s%s:%c:%ld:%o", out[0] ? " " : "",
                 archive_entry_pathname(entry),
                 t == AE_IFREG ? 'f' : t == AE_IFDIR ? 'd' : t == AE_IFLNK ? 'l' : '?',
                 (long)archive_entry_uid(entry), (unsigned)archive_entry_perm(entry));
    }
    archive_read_free(a);
    close(tfd);
    return out;
}

static int workspace_filter(const struct tent *es, size_t n, const char *dest, bool code_layout,
                            struct cordon_error *err)
{
    const struct cordon_workspace_owner owner = { .code_layout = code_layout, .set_owner = true,
                                                  .uid = 1000, .gid = 1000 };
    int in = build_tar(es, n, 0);
    int checked = openat(rootfd, "checked.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int out = openat(rootfd, "w.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r;

    cr_assert_geq(checked, 0);
    cr_assert_geq(out, 0);
    cordon_error_init(err);
    r = cordon_tar_filter_workspace_fd(in, checked, out, dest, &owner, 1 << 20, 64, err);
    close(in);
    close(checked);
    close(out);
    return r;
}

/* Each directory on the way is an entry of its own, before what it holds;
 * source/ is root's and read-only in layout "code", the rest the user's. */
Test(tar, workspace_filter_writes_parents_and_owners)
{
    const struct tent es[] = {
        { T_FILE, "source/main.py", NULL, 0644, "print(1)", 0 },
        { T_DIR, "out/", NULL, 0750, NULL, 0 },
        { T_FILE, "out/deep/r.txt", NULL, 0600, "r", 0 },
    };
    struct cordon_error err;
    char *got;

    cr_assert_eq(workspace_filter(es, 3, "", true, &err), 0, "%s", err.message);
    got = owner_listing("w.tar");
    cr_expect_str_eq(got, "source/:d:0:555 source/main.py:f:0:444 out/:d:1000:750 "
                          "out/deep/:d:1000:755 out/deep/r.txt:f:1000:600");
    free(got);
    /* Under a destination: dest and its parents first, even for no entry. */
    cr_assert_eq(workspace_filter(es, 0, "build/x", true, &err), 0, "%s", err.message);
    got = owner_listing("w.tar");
    cr_expect_str_eq(got, "build/:d:1000:755 build/x/:d:1000:755");
    free(got);
}

Test(tar, workspace_filter_refuses_links_under_source_and_hostile_entries)
{
    const struct tent link_in_source[] = { { T_LINK, "source/l", "main.py", 0, NULL, 0 } };
    const struct tent link_elsewhere[] = { { T_LINK, "out/l", "r.txt", 0, NULL, 0 } };
    const struct tent escape[] = { { T_FILE, "../x", NULL, 0, "x", 0 } };
    struct cordon_error err;

    cr_expect_eq(workspace_filter(link_in_source, 1, "", true, &err), CORDON_E_UNSAFE);
    cr_expect(strstr(err.message, "source/l") != NULL, "%s", err.message);
    cr_expect_eq(workspace_filter(link_in_source, 1, "", false, &err), 0, "%s", err.message);
    cr_expect_eq(workspace_filter(link_elsewhere, 1, "", true, &err), 0, "%s", err.message);
    cr_expect_eq(workspace_filter(link_elsewhere, 1, "source", true, &err), CORDON_E_UNSAFE);
    cr_expect_neq(workspace_filter(escape, 1, "", false, &err), 0);
    cordon_error_init(&err);
    cr_expect_eq(cordon_tar_filter_workspace_fd(0, 1, 2, "", NULL, 0, 0, &err), CORDON_E_INVALID);
}

/* ---- import_files as a stream (cordon_files_tar_workspace_fd) ------------- */

static int files_stream(const char *json, const char *data, const char *dest, bool code_layout,
                        uint64_t max_bytes, struct cordon_error *err)
{
    const struct cordon_workspace_owner owner = { .code_layout = code_layout, .set_owner = true,
                                                  .uid = 1000, .gid = 1000 };
    int in = openat(rootfd, "files.data", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int out = openat(rootfd, "f.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r;

    cr_assert_geq(in, 0);
    cr_assert_geq(out, 0);
    cr_assert_eq(write(in, data, strlen(data)), (ssize_t)strlen(data));
    cr_assert_eq(lseek(in, 0, SEEK_SET), 0);
    cordon_error_init(err);
    r = cordon_files_tar_workspace_fd(json, in, out, dest, &owner, max_bytes, 64, err);
    close(in);
    close(out);
    return r;
}

/* The stream cordon_tar_filter_workspace_fd would write for the same files:
 * dest and each directory on the way first, the owners of the policy. */
Test(tar, files_stream_writes_parents_owners_and_bytes)
{
    struct cordon_error err;
    char *got;

    cr_assert_eq(files_stream("{\"files\":[{\"path\":\"a/b.py\",\"size\":3,\"mode\":420},"
                              "{\"path\":\"./c\",\"size\":2,\"mode\":493}]}",
                              "abcde", "source", true, 1 << 20, &err), 0, "%s", err.message);
    got = owner_listing("f.tar");
    cr_expect_str_eq(got, "source/:d:0:555 source/a/:d:0:555 source/a/b.py:f:0:444 "
                          "source/c:f:0:555");
    free(got);
    cr_assert_eq(files_stream("{\"files\":[{\"path\":\"x/y\",\"size\":5,\"mode\":384}]}",
                              "hello", "build", true, 1 << 20, &err), 0, "%s", err.message);
    got = owner_listing("f.tar");
    cr_expect_str_eq(got, "build/:d:1000:755 build/x/:d:1000:755 build/x/y:f:1000:600");
    free(got);
    {
        size_t len = 0;

        got = read_at(rootfd, "f.tar", &len);
        cr_expect(got != NULL && memmem(got, len, "hello", 5) != NULL, "the bytes are not in it");
        free(got);
    }
}

/* The manifest is checked whole before anything is written: the stream
 * stays empty; data that disagrees refuses the call. */
Test(tar, files_stream_refuses_bad_manifests_and_data)
{
    struct cordon_error err;
    struct stat st;

    cr_expect_eq(files_stream("{\"files\":[{\"path\":\"ok\",\"size\":1,\"mode\":420},"
                              "{\"path\":\"../x\",\"size\":1,\"mode\":420}]}",
                              "ab", "", false, 1 << 20, &err), CORDON_E_UNSAFE, "%s", err.message);
    cr_expect_eq(fstatat(rootfd, "f.tar", &st, 0), 0);
    cr_expect_eq(st.st_size, 0, "%lld bytes written before the refusal", (long long)st.st_size);
    cr_expect_eq(files_stream("{\"files\":[{\"path\":\"big\",\"size\":11,\"mode\":420}]}",
                              "01234567890", "", false, 10, &err), CORDON_E_LIMIT);
    cr_expect(strstr(err.message, "big") != NULL && strstr(err.message, "10") != NULL, "%s",
              err.message);
    cr_expect_eq(files_stream("{\"files\":[{\"path\":\"m\",\"size\":1,\"mode\":2048}]}",
                              "a", "", false, 0, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "files[0].mode") != NULL, "%s", err.message);
    cr_expect_eq(files_stream("{\"files\":[{\"path\":\"short\",\"size\":4,\"mode\":420}]}",
                              "abcdef", "", false, 0, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "data_fd holds 6 bytes") != NULL, "%s", err.message);
    cr_expect_eq(files_stream("{\"nope\": 1}", "", "", false, 0, &err), CORDON_E_INVALID);
    cr_expect_eq(files_stream("{\"files\":[{\"path\":\"\",\"size\":0,\"mode\":420}]}",
                              "", "", false, 0, &err), CORDON_E_INVALID, "%s", err.message);
}

/* ---- cordon_tar_export_rewrite_fd ---------------------------------------- */

static int export_rewrite(const struct tent *es, size_t n, const struct cordon_tar_export *ex,
                          struct cordon_error *err)
{
    int in = build_tar(es, n, 0);
    int out = openat(rootfd, "e.tar", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r;

    cr_assert_geq(out, 0);
    cordon_error_init(err);
    r = cordon_tar_export_rewrite_fd(in, out, ex, err);
    close(in);
    close(out);
    return r;
}

Test(tar, export_rewrite_renames_narrows_and_copies_hardlinks)
{
    const struct tent es[] = {
        { T_DIR, "workspace/", NULL, 0755, NULL, 0 },
        { T_FILE, "workspace/a", NULL, 04755, "hi", 0 },
        { T_HARD, "workspace/b", "workspace/a", 0644, NULL, 0 },
        { T_FILE, "other/z", NULL, 0644, "z", 0 },
    };
    const char *const only[] = { "b" };
    struct cordon_tar_export ex = { .struct_size = sizeof(ex), .root = "workspace",
                                    .max_bytes = 1 << 20, .max_entries = 64 };
    struct cordon_error err;
    char *got;

    cr_assert_eq(export_rewrite(es, 4, &ex, &err), 0, "%s", err.message);
    got = owner_listing("e.tar");
    /* setuid stripped; the link a regular file of its own, after its target */
    cr_expect_str_eq(got, "a:f:0:755 b:f:0:644");
    free(got);
    ex.paths = only;
    ex.n_paths = 1;
    ex.paths_from_root = true;
    cr_assert_eq(export_rewrite(es, 4, &ex, &err), 0, "%s", err.message);
    got = owner_listing("e.tar");
    cr_expect_str_eq(got, "b:f:0:644");
    free(got);
    ex.paths = NULL;
    ex.n_paths = 0;
    ex.root = "missing";
    cr_expect_eq(export_rewrite(es, 4, &ex, &err), CORDON_E_NOT_FOUND);
    ex.root = "workspace";
    ex.max_bytes = 3;   /* "hi" and its copy are four bytes */
    cr_expect_eq(export_rewrite(es, 4, &ex, &err), CORDON_E_LIMIT);
}
