/* Unit tests of core/grant.c: issue, land, collect, close. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cordon/sdk/fs.h>
#include "core/grant.h"
#include "tests/unit/helpers.h"

static char *tmpdir;     /* holds ws/ (the task workspace), staging/ and host/ */

static char *at(const char *rel)
{
    char *path = NULL;

    cr_assert(asprintf(&path, "%s/%s", tmpdir, rel) > 0);
    return path;
}

static void make_dir(const char *rel)
{
    char *p = at(rel);

    cr_assert_eq(mkdir(p, 0755), 0, "%s", p);
    free(p);
}

static void write_at(const char *rel, const char *content)
{
    char *p = at(rel);

    cr_assert_eq(test_write_file(p, content, strlen(content)), 0, "%s", p);
    free(p);
}

static char *read_at(const char *rel)
{
    char *p = at(rel), *buf = calloc(1, 4096);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    cr_assert_geq(fd, 0, "%s", p);
    n = read(fd, buf, 4095);
    cr_assert_geq(n, 0);
    close(fd);
    free(p);
    return buf;
}

static bool exists_at(const char *rel)
{
    struct stat st;
    char *p = at(rel);
    bool found = lstat(p, &st) == 0;

    free(p);
    return found;
}

static mode_t mode_at(const char *rel)
{
    struct stat st;
    char *p = at(rel);

    cr_assert_eq(lstat(p, &st), 0, "%s", p);
    free(p);
    return st.st_mode & 07777;
}

/* Entries in a directory, "." and ".." aside. */
static int count_entries(const char *rel)
{
    char *p = at(rel);
    DIR *d = opendir(p);
    struct dirent *de;
    int n = 0;

    cr_assert_not_null(d, "%s", p);
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    free(p);
    return n;
}

static void setup(void)
{
    tmpdir = test_mkdtemp();
    cr_assert_not_null(tmpdir);
    make_dir("ws");
    make_dir("staging");
    make_dir("host");
}

static void teardown(void)
{
    test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

TestSuite(grant, .init = setup, .fini = teardown);

static struct cordon__grant *open_grant(void)
{
    struct cordon__grant *g = NULL;
    struct cordon_error err;
    char *ws = at("ws");

    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_open(ws, CORDON_GRANT_SNAPSHOT, &g, &err), 0, "%s", err.message);
    free(ws);
    return g;
}

static struct cordon__bundle *bundle_of(const char *json)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    cJSON *request = cJSON_Parse(json);

    cr_assert_not_null(request);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_request(request, &b, &err), 0, "%s", err.message);
    cJSON_Delete(request);
    return b;
}

/* The grant's area relative to tmpdir: "ws/.cordon/grants/<id>/<sub>". */
static char *area_rel(const struct cordon__grant *g, const char *sub)
{
    char *rel = NULL;

    cr_assert(asprintf(&rel, "ws/.cordon/grants/%s%s%s", g->id, sub[0] ? "/" : "", sub) > 0);
    return rel;
}

static int staging_fd(void)
{
    char *p = at("staging");
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    cr_assert_geq(fd, 0);
    free(p);
    return fd;
}

Test(grant, open_creates_the_area_and_output_root)
{
    struct cordon__grant *g = open_grant();
    char *area = area_rel(g, ""), *source = area_rel(g, "source"), *expected = NULL;
    char real[PATH_MAX];

    cr_assert_eq(strncmp(g->id, "grant-", 6), 0);
    cr_assert_eq(strlen(g->id), 6 + 24);
    cr_assert_eq(strspn(g->id + 6, "0123456789abcdef"), 24);
    cr_assert_eq(g->mode, CORDON_GRANT_SNAPSHOT);
    cr_assert_not_null(realpath(tmpdir, real));
    cr_assert(asprintf(&expected, "%s/ws/.cordon/grants/%s", real, g->id) > 0);
    cr_assert_str_eq(g->area, expected);
    cr_assert_eq(mode_at(area), 0700);
    cr_assert(S_ISDIR(mode_at(source) | S_IFDIR));
    cr_assert_eq(count_entries(area), 3, "source, build, logs");
    cr_assert_eq(mode_at("ws/output"), 0755);
    cr_assert(g->source_fd >= 0 && g->build_fd >= 0 && g->logs_fd >= 0 && g->output_fd >= 0);
    cr_assert_eq(fcntl(g->area_fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    cr_assert_not(g->closed);
    cordon__grant_free(g);
    free(area);
    free(source);
    free(expected);
}

Test(grant, two_grants_get_separate_areas)
{
    struct cordon__grant *a = open_grant(), *b = open_grant();
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_str_neq(a->id, b->id);
    cr_assert_eq(count_entries("ws/.cordon/grants"), 2);
    cr_assert_eq(cordon__grant_close(a, &err), 0, "%s", err.message);
    /* The other grant's area keeps .cordon/grants alive. */
    cr_assert(exists_at("ws/.cordon/grants"));
    cr_assert_eq(cordon__grant_close(b, &err), 0, "%s", err.message);
    cr_assert_not(exists_at("ws/.cordon"));
    cordon__grant_free(a);
    cordon__grant_free(b);
}

Test(grant, open_refuses_bad_workspaces_and_modes)
{
    struct cordon__grant *g = NULL;
    struct cordon_error err;
    char *ws = at("ws"), *missing = at("nope"), *file = at("host/f"), *ws2 = at("ws2");
    char *target = at("host");

    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_open(ws, CORDON_GRANT_READ_ONLY, &g, &err), CORDON_E_UNSUPPORTED);
    cr_assert(strstr(err.message, "read_only") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_open(ws, CORDON_GRANT_READ_WRITE, &g, &err), CORDON_E_UNSUPPORTED);
    cr_assert(strstr(err.message, "read_write") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_open(ws, (enum cordon__grant_mode)7, &g, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__grant_open(missing, CORDON_GRANT_SNAPSHOT, &g, &err), CORDON_E_NOT_FOUND);
    cr_assert_eq(cordon__grant_open("", CORDON_GRANT_SNAPSHOT, &g, &err), CORDON_E_INVALID);
    write_at("host/f", "x");
    cr_assert_eq(cordon__grant_open(file, CORDON_GRANT_SNAPSHOT, &g, &err), CORDON_E_INVALID);
    cr_assert_null(g);
    /* Nothing was created by the refused modes. */
    cr_assert_not(exists_at("ws/.cordon"));
    cr_assert_not(exists_at("ws/output"));

    /* output/ as a link to elsewhere would send outputs out of the workspace. */
    make_dir("ws2");
    cr_assert_eq(symlinkat(target, AT_FDCWD, (free(ws), ws = at("ws2/output"))), 0);
    cr_assert_eq(cordon__grant_open(ws2, CORDON_GRANT_SNAPSHOT, &g, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "output is a symbolic link") != NULL, "%s", err.message);
    cr_assert_null(g);
    cr_assert_not(exists_at("ws2/.cordon"), "a refused grant left its area behind");
    /* A plain file there is named as one (not a "special file"). */
    cr_assert_eq(unlink(ws), 0);
    write_at("ws2/output", "x");
    cr_assert_eq(cordon__grant_open(ws2, CORDON_GRANT_SNAPSHOT, &g, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "output is a regular file, not a directory") != NULL, "%s",
              err.message);
    cr_assert_null(g);
    cr_assert_not(exists_at("ws2/.cordon"), "a refused grant left its area behind");
    cr_assert_eq(count_entries("host"), 1);
    free(ws);
    free(ws2);
    free(missing);
    free(file);
    free(target);
}

Test(grant, write_source_lands_read_only_files_with_their_digests)
{
    struct cordon__grant *g = open_grant();
    struct cordon__bundle *b = bundle_of(
        "{\"files\":[{\"path\":\"main.py\",\"content\":\"print('hi')\\n\"},"
        "{\"path\":\"lib/deep/util.py\",\"content\":\"X = 1\\n\"},"
        "{\"path\":\"run.sh\",\"content\":\"#!/bin/sh\\n\",\"executable\":true}]}");
    struct cordon_error err;
    char *main_rel = area_rel(g, "source/main.py"), *util_rel = area_rel(g, "source/lib/deep/util.py");
    char *sh_rel = area_rel(g, "source/run.sh"), *lib_rel = area_rel(g, "source/lib");
    char *text, hex[65];
    int fd;

    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_write_source(g, b, &err), 0, "%s", err.message);
    cr_assert_eq(mode_at(main_rel), 0444);
    cr_assert_eq(mode_at(util_rel), 0444);
    cr_assert_eq(mode_at(sh_rel), 0555);
    cr_assert_eq(mode_at(lib_rel), 0755);
    text = read_at(main_rel);
    cr_assert_str_eq(text, "print('hi')\n");
    free(text);
    for (size_t i = 0; i < b->n_files; i++) {
        cr_assert_eq(cordon_fs_open_regular(g->source_fd, b->files[i].path, 0, &fd, NULL, &err), 0);
        cr_assert_eq(cordon_sha256_fd(fd, 0, hex, NULL, &err), 0);
        cr_assert_str_eq(hex, b->files[i].sha256, "%s", b->files[i].path);
        close(fd);
    }
    /* Landing twice replaces the files in place. */
    cr_assert_eq(cordon__grant_write_source(g, b, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__grant_close(g, &err), 0);
    cordon__grant_free(g);
    cordon__bundle_free(b);
    free(main_rel);
    free(util_rel);
    free(sh_rel);
    free(lib_rel);
}

Test(grant, write_source_refuses_a_link_planted_in_source)
{
    struct cordon__grant *g = open_grant();
    struct cordon__bundle *b = bundle_of(
        "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\"},{\"path\":\"lib/u.py\",\"content\":\"y\"}]}");
    struct cordon_error err;
    char *host = at("host");
    struct stat st;

    /* source/lib -> host/: landing must not write through it. */
    cr_assert_eq(symlinkat(host, g->source_fd, "lib"), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_write_source(g, b, &err), CORDON_E_UNSAFE, "%s", err.message);
    cr_assert_eq(count_entries("host"), 0, "a file was written through the link");
    cr_assert_eq(fstatat(g->source_fd, "lib", &st, AT_SYMLINK_NOFOLLOW), 0);
    cr_assert(S_ISLNK(st.st_mode));
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    cordon__bundle_free(b);
    free(host);
}

static cJSON *collect(struct cordon__grant *g, const char *bundle_json, int expected,
                      struct cordon_error *err)
{
    struct cordon__bundle *b = bundle_of(bundle_json);
    cJSON *outputs = NULL;
    int sfd = staging_fd();

    cordon_error_init(err);
    cr_assert_eq(cordon__grant_collect(g, sfd, b, false, &outputs, err), expected, "%s", err->message);
    if (expected != 0)
        cr_assert_null(outputs);
    close(sfd);
    cordon__bundle_free(b);
    return outputs;
}

#define WITH_OUTPUTS(list) "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\"}],\"outputs\":" list "}"

Test(grant, collect_copies_declared_outputs_only)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    cJSON *outputs, *o;
    char *text, *host = NULL, real[PATH_MAX];

    make_dir("staging/plots");
    write_at("staging/result.txt", "42\n");
    write_at("staging/plots/a.csv", "a,b\n");
    write_at("staging/junk.txt", "not declared");
    outputs = collect(g, WITH_OUTPUTS("[\"output/result.txt\",\"plots/a.csv\",\"absent.txt\"]"), 0, &err);
    cr_assert_eq(cJSON_GetArraySize(outputs), 3);
    /* b->outputs is sorted: absent.txt, plots/a.csv, result.txt. */
    o = cJSON_GetArrayItem(outputs, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, "output/absent.txt");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "missing")));
    cr_assert_null(cJSON_GetObjectItem(o, "sha256"));
    o = cJSON_GetArrayItem(outputs, 2);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, "output/result.txt");
    cr_assert_str_eq(cJSON_GetObjectItem(o, "sha256")->valuestring,
                     "084c799cd551dd1d8d5c5f9a5d593b2e931f5e36122ee5c793c1d08a19839cc0");
    cr_assert_eq(cJSON_GetObjectItem(o, "bytes")->valuedouble, 3);
    cr_assert_null(cJSON_GetObjectItem(o, "missing"));
    cr_assert_not_null(realpath(tmpdir, real));
    cr_assert(asprintf(&host, "%s/ws/output/result.txt", real) > 0);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "host_path")->valuestring, host);
    text = read_at("ws/output/result.txt");
    cr_assert_str_eq(text, "42\n");
    free(text);
    text = read_at("ws/output/plots/a.csv");
    cr_assert_str_eq(text, "a,b\n");
    free(text);
    cr_assert_not(exists_at("ws/output/junk.txt"), "an undeclared file was copied");
    cr_assert_not(exists_at("ws/output/absent.txt"));
    cr_assert_eq(count_entries("ws/output"), 2);
    cJSON_Delete(outputs);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(host);
}

/* Judge0 CVE-2024-28185: the sandbox makes its declared output a link to a
 * host file, hoping the host copies (or overwrites) it. */
Test(grant, collect_refuses_a_symlinked_output)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *secret = at("host/secret"), *link = at("staging/result.txt"), *text;

    write_at("host/secret", "host secret\n");
    cr_assert_eq(symlink(secret, link), 0);
    write_at("staging/other.txt", "fine");
    collect(g, WITH_OUTPUTS("[\"other.txt\",\"result.txt\"]"), CORDON_E_UNSAFE, &err);
    cr_assert_str_eq(err.message, "outputs: result.txt is a symbolic link, not a regular file (refused)");
    text = read_at("host/secret");
    cr_assert_str_eq(text, "host secret\n", "the host file was changed");
    free(text);
    cr_assert_eq(mode_at("host/secret"), 0644);
    cr_assert_eq(count_entries("ws/output"), 0, "something was written into the output root");
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(secret);
    free(link);
}

Test(grant, collect_refuses_an_output_behind_a_linked_directory)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *host = at("host"), *link = at("staging/sub");

    write_at("host/secret", "host secret\n");
    cr_assert_eq(symlink(host, link), 0);
    write_at("staging/first.txt", "copied aside, then dropped");
    collect(g, WITH_OUTPUTS("[\"first.txt\",\"sub/secret\"]"), CORDON_E_UNSAFE, &err);
    cr_assert_eq(count_entries("ws/output"), 0, "something was written into the output root");
    cr_assert_eq(count_entries("host"), 1);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(host);
    free(link);
}

Test(grant, collect_refuses_a_fifo_and_a_directory, .timeout = 10)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *fifo = at("staging/result.txt");

    cr_assert_eq(mkfifo(fifo, 0644), 0);
    collect(g, WITH_OUTPUTS("[\"result.txt\"]"), CORDON_E_UNSAFE, &err);
    cr_assert_str_eq(err.message, "outputs: result.txt is a FIFO, not a regular file (refused)");
    make_dir("staging/dir.txt");
    collect(g, WITH_OUTPUTS("[\"dir.txt\"]"), CORDON_E_UNSAFE, &err);
    cr_assert(strstr(err.message, "dir.txt is a directory") != NULL, "%s", err.message);
    cr_assert_eq(count_entries("ws/output"), 0);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(fifo);
}

Test(grant, collect_refuses_an_oversized_output)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *big = at("staging/big.bin");
    int fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (16 << 20) + 1), 0);
    close(fd);
    collect(g, WITH_OUTPUTS("[\"big.bin\"]"), CORDON_E_LIMIT, &err);
    cr_assert_str_eq(err.message, "outputs: big.bin is 16777217 bytes, exceeds the per-file limit of 16777216");
    cr_assert_eq(count_entries("ws/output"), 0);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(big);
}

Test(grant, close_removes_the_area_and_keeps_outputs)
{
    struct cordon__grant *g = open_grant();
    struct cordon__bundle *b = bundle_of("{\"files\":[{\"path\":\"a/b/main.py\",\"content\":\"x\"}]}");
    struct cordon_error err;
    cJSON *outputs;

    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_write_source(g, b, &err), 0, "%s", err.message);
    write_at("staging/r.txt", "r");
    outputs = collect(g, WITH_OUTPUTS("[\"r.txt\"]"), 0, &err);
    /* A read-only directory inside the area must not stop the removal. */
    cr_assert_eq(mkdirat(g->build_fd, "ro", 0500), 0);
    cr_assert_eq(cordon__grant_close(g, &err), 0, "%s", err.message);
    cr_assert(g->closed);
    cr_assert_not(exists_at("ws/.cordon"));
    cr_assert(exists_at("ws/output/r.txt"));
    /* Idempotent, and the closed grant refuses more work. */
    cr_assert_eq(cordon__grant_close(g, &err), 0);
    cr_assert_eq(cordon__grant_write_source(g, b, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__grant_close(NULL, &err), 0);
    cordon__grant_free(g);
    cordon__grant_free(NULL);
    cordon__bundle_free(b);
    cJSON_Delete(outputs);
}

Test(grant, close_keeps_an_unrelated_cordon_directory)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;

    write_at("ws/.cordon/keep", "other state");
    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_close(g, &err), 0, "%s", err.message);
    cr_assert(exists_at("ws/.cordon/keep"));
    cr_assert_not(exists_at("ws/.cordon/grants"));
    cordon__grant_free(g);
}

Test(grant, add_input_copies_a_snapshot)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *src = at("host/data.csv"), *rel = area_rel(g, "source/input/data.csv"), *text;

    write_at("host/data.csv", "1,2\n");
    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_add_input(g, src, &err), 0, "%s", err.message);
    /* A snapshot: later changes on the host do not reach it. */
    write_at("host/data.csv", "changed\n");
    text = read_at(rel);
    cr_assert_str_eq(text, "1,2\n");
    free(text);
    cr_assert_eq(mode_at(rel), 0444);
    cr_assert_eq(g->n_inputs, 1);
    cr_assert_eq(g->input_bytes, 4);
    /* The same name twice would silently replace the first. */
    cr_assert_eq(cordon__grant_add_input(g, src, &err), CORDON_E_EXISTS);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(src);
    free(rel);
}

Test(grant, add_input_refuses_links_and_special_files)
{
    struct cordon__grant *g = open_grant();
    struct cordon_error err;
    char *secret = at("host/secret"), *link = at("host/link.txt"), *dir = at("host"),
         *fifo = at("host/pipe"), *missing = at("host/missing"), *big = at("host/big");
    char *input_dir = area_rel(g, "source/input");
    int fd;

    write_at("host/secret", "s");
    cr_assert_eq(symlink(secret, link), 0);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    cr_assert_eq(ftruncate(fd, (16 << 20) + 1), 0);
    close(fd);
    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_add_input(g, link, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "is a symbolic link") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_add_input(g, dir, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "is a directory") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_add_input(g, fifo, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "is a FIFO") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_add_input(g, missing, &err), CORDON_E_NOT_FOUND);
    cr_assert_eq(cordon__grant_add_input(g, big, &err), CORDON_E_LIMIT);
    cr_assert(strstr(err.message, "exceeds the per-file limit of 16777216") != NULL, "%s", err.message);
    cr_assert_eq(cordon__grant_add_input(g, "", &err), CORDON_E_INVALID);
    cr_assert_not(exists_at(input_dir), "a refused input left files behind");
    cr_assert_eq(g->n_inputs, 0);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    free(secret);
    free(link);
    free(dir);
    free(fifo);
    free(missing);
    free(big);
    free(input_dir);
}

Test(grant, bundle_may_not_replace_an_input)
{
    struct cordon__grant *g = open_grant();
    struct cordon__bundle *b = bundle_of(
        "{\"entrypoint\":\"main.py\",\"files\":[{\"path\":\"main.py\",\"content\":\"x\"},"
        "{\"path\":\"input/data.csv\",\"content\":\"forged\"}]}");
    struct cordon_error err;
    char *src = at("host/data.csv"), *rel = area_rel(g, "source/input/data.csv"), *text;

    write_at("host/data.csv", "real\n");
    cordon_error_init(&err);
    cr_assert_eq(cordon__grant_add_input(g, src, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__grant_write_source(g, b, &err), CORDON_E_EXISTS);
    text = read_at(rel);
    cr_assert_str_eq(text, "real\n");
    free(text);
    cordon__grant_close(g, &err);
    cordon__grant_free(g);
    cordon__bundle_free(b);
    free(src);
    free(rel);
}
