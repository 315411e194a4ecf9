/* Mechanism-test helper: cordon files against a provider (cli_files.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cordon/sdk/fs.h>

#include "tests/mechanism/cli_files.h"

#define BIG_BYTES (50u << 20)

/* A host directory of the check's own beside the suite's state directory,
 * so that the suite's teardown removes it when a failed assertion ends the
 * check first (files_dir_free removes it otherwise). */
static char *files_dir(const struct cli_exec *c)
{
    char *dir = NULL;
    int len = (int)(strrchr(c->state_dir, '/') - c->state_dir);

    cr_assert(strrchr(c->state_dir, '/') != NULL && asprintf(&dir, "%.*s/files.XXXXXX", len, c->state_dir) > 0);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    return dir;
}

static void files_dir_free(char *dir)
{
    cordon_fs_remove_tree_path(dir, NULL);
    free(dir);
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* The whole file (malloc'd), its length in *ret_len. */
static char *read_file(const char *path, size_t *ret_len)
{
    struct stat st;
    char *buf;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(fstat(fd, &st), 0);
    buf = malloc((size_t)st.st_size + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
    buf[st.st_size] = '\0';
    close(fd);
    *ret_len = (size_t)st.st_size;
    return buf;
}

/* Run cordon with args; the printed JSON document (asserted), the exit
 * code in *ret_rc. */
static cJSON *run_json(const struct cli_exec *c, const char *const *args, int stdin_fd, int *ret_rc)
{
    char *out = NULL;
    cJSON *doc;

    *ret_rc = cli_exec_run(c, args, stdin_fd, &out);
    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "%s %s printed no JSON object: %.800s", args[0], args[1], out);
    free(out);
    return doc;
}

static const char *doc_str(const cJSON *doc, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, key)) ?: "";
}

/* The refusal's code and message (asserted: exit 125, ok false). */
static void assert_refused(const cJSON *doc, int rc, const char *code, const char *needle, const char *what)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    char *text = cJSON_PrintUnformatted(doc);

    cr_assert_eq(rc, 125, "%s: exit %d, want 125: %s", what, rc, text);
    cr_assert_str_eq(doc_str(e, "code"), code, "%s: %s", what, text);
    cr_assert_not_null(strstr(doc_str(e, "message"), needle), "%s: message lacks \"%s\": %s", what,
                       needle, text);
    free(text);
}

/* The entry of a listing named name, or NULL. */
static const cJSON *listed(const cJSON *doc, const char *name)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "entries"))
        if (strcmp(doc_str(e, "name"), name) == 0)
            return e;
    return NULL;
}

static cJSON *list(const struct cli_exec *c, const char *id, const char *path)
{
    const char *args[] = { "files", "ls", id, path, "--json", NULL };
    cJSON *doc;
    int rc;

    doc = run_json(c, args, -1, &rc);
    cr_assert_eq(rc, 0, "files ls %s exited %d", path, rc);
    return doc;
}

void cli_files_check_round_trip(const struct cli_exec *c, const char *provider)
{
    /* bytes a text path would change: NUL, CR, invalid UTF-8 */
    static const char data[] = "line one\r\n\0binary \xff\xfe tail\n";
    char *dir = files_dir(c), *id = cli_exec_provision(c, provider), *got, src[PATH_MAX], back[PATH_MAX];
    const char *put[] = { "files", "put", id, "sub/dir/data.bin", "--from", src, "--mode", "640", "--json",
                          NULL };
    static const char text[] = "from stdin \xff\xfe\r\n";
    const char *put_stdin[] = { "files", "put", id, "sub/text.txt", "--json", NULL };
    const char *get[] = { "files", "get", id, "/workspace/sub/text.txt", NULL };
    const char *get_to[] = { "files", "get", id, "sub/dir/data.bin", "--to", back, "--json", NULL };
    const char *rm[] = { "files", "rm", id, "sub", "--json", NULL };
    const cJSON *e;
    cJSON *doc;
    size_t len;
    int rc, fd;

    snprintf(src, sizeof(src), "%s/in.bin", dir);
    snprintf(back, sizeof(back), "%s/back.bin", dir);
    write_file(src, data, sizeof(data) - 1);
    doc = run_json(c, put, -1, &rc);
    cr_assert_eq(rc, 0, "files put exited %d", rc);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(doc, "size")->valuedouble, sizeof(data) - 1);
    cJSON_Delete(doc);
    /* the sandbox sees exactly those bytes, with that mode */
    doc = cli_exec_sh(c, id, NULL, -1, "od -An -c sub/dir/data.bin | tr -s ' ' | tr -d '\\n'; "
                                       "stat -c ' %a' sub/dir/data.bin");
    cr_assert_str_eq(doc_str(doc, "stdout"),
                     " l i n e o n e \\r \\n \\0 b i n a r y 377 376 t a i l \\n 640\n", "%s",
                     doc_str(doc, "stderr"));
    cJSON_Delete(doc);
    /* in from stdin and out to stdout (no NUL: the runner's text ends there) */
    write_file(src, text, sizeof(text) - 1);
    fd = open(src, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    doc = run_json(c, put_stdin, fd, &rc);
    close(fd);
    cr_assert_eq(rc, 0, "files put from stdin exited %d", rc);
    cJSON_Delete(doc);
    cr_assert_eq(cli_exec_run(c, get, -1, &got), 0);
    cr_assert_str_eq(got, text, "files get to stdout changed the bytes");
    free(got);
    /* back out through --to, byte for byte */
    doc = run_json(c, get_to, -1, &rc);
    cr_assert_eq(rc, 0);
    cJSON_Delete(doc);
    got = read_file(back, &len);
    cr_assert_eq(len, sizeof(data) - 1);
    cr_assert_eq(memcmp(got, data, len), 0, "files get --to changed the bytes");
    free(got);
    /* ls: one level, with type and size */
    doc = list(c, id, "sub/dir");
    cr_assert_str_eq(doc_str(doc, "type"), "directory");
    e = listed(doc, "data.bin");
    cr_assert_not_null(e, "ls sub/dir does not list data.bin");
    cr_assert_str_eq(doc_str(e, "type"), "file");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(e, "size")->valuedouble, sizeof(data) - 1);
    cJSON_Delete(doc);
    doc = list(c, id, "");
    cr_assert_not_null(listed(doc, "sub"));
    cr_assert_null(listed(doc, "data.bin"), "ls of the root listed a deeper entry");
    cJSON_Delete(doc);
    /* rm takes the directory and what it holds; a second rm finds nothing */
    doc = run_json(c, rm, -1, &rc);
    cr_assert_eq(rc, 0, "files rm exited %d", rc);
    cJSON_Delete(doc);
    doc = list(c, id, "");
    cr_assert_null(listed(doc, "sub"), "sub is still listed after rm");
    cJSON_Delete(doc);
    doc = run_json(c, rm, -1, &rc);
    assert_refused(doc, rc, "not_found", "sub", "rm of a removed path");
    cJSON_Delete(doc);
    doc = run_json(c, get_to, -1, &rc);
    assert_refused(doc, rc, "not_found", "sub/dir/data.bin", "get of a removed file");
    cJSON_Delete(doc);
    cli_exec_terminate(c, id);
    free(id);
    files_dir_free(dir);
}

void cli_files_check_hostile(const struct cli_exec *c, const char *provider)
{
    static const char secret[] = "host secret: never in a sandbox's file\n";
    char *dir = files_dir(c), *id = cli_exec_provision(c, provider), *script = NULL, *got;
    char canary[PATH_MAX], out[PATH_MAX], src[PATH_MAX], planted[PATH_MAX];
    const char *get_link[] = { "files", "get", id, "links/link", "--to", out, "--json", NULL };
    const char *get_through[] = { "files", "get", id, "links/hostdir/canary", "--to", out, "--json", NULL };
    const char *get_fifo[] = { "files", "get", id, "special/fifo", "--to", out, "--json", NULL };
    const char *get_dir[] = { "files", "get", id, "links/adir", "--to", out, "--json", NULL };
    const char *put_link[] = { "files", "put", id, "links/link", "--from", src, "--json", NULL };
    const char *put_through[] = { "files", "put", id, "links/hostdir/planted", "--from", src, "--json", NULL };
    const char *ls_special[] = { "files", "ls", id, "special", "--json", NULL };
    const char *escapes[][8] = {
        { "files", "get", id, "../etc/passwd", "--to", out, "--json", NULL },
        { "files", "get", id, "/etc/passwd", "--to", out, "--json", NULL },
        { "files", "put", id, "/workspace/../x", "--json", NULL },
        { "files", "rm", id, "/workspace", "--json", NULL },
        { "files", "ls", id, "a/../../..", "--json", NULL },
    };
    const cJSON *e;
    cJSON *doc;
    struct stat st;
    size_t len;
    int rc;

    snprintf(canary, sizeof(canary), "%s/canary", dir);
    snprintf(out, sizeof(out), "%s/out.bin", dir);
    snprintf(src, sizeof(src), "%s/src.bin", dir);
    snprintf(planted, sizeof(planted), "%s/planted", dir);
    write_file(canary, secret, sizeof(secret) - 1);
    write_file(src, "overwritten\n", 12);
    /* links to the host's paths (under trusted-local they are the very
     * files; in a container they name the container's own) */
    cr_assert(asprintf(&script, "mkdir links special && cd links && ln -s %s link && ln -s %s hostdir && "
                       "mkdir adir && mkfifo ../special/fifo", canary,
                       dir) > 0);
    doc = cli_exec_sh(c, id, NULL, -1, script);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok")), "%s", doc_str(doc, "stderr"));
    cJSON_Delete(doc);
    free(script);

    doc = run_json(c, get_link, -1, &rc);
    assert_refused(doc, rc, "unsafe_path", "symlink", "get of a planted link");
    cJSON_Delete(doc);
    doc = run_json(c, get_through, -1, &rc);
    cr_assert_eq(rc, 125, "get through a planted directory link succeeded");
    cJSON_Delete(doc);
    /* a refused get --to leaves no file, not even an empty one */
    cr_assert_eq(lstat(out, &st), -1, "a refused get left %s", out);
    doc = run_json(c, get_fifo, -1, &rc);
    cr_assert_eq(rc, 125, "get of a FIFO succeeded");
    cJSON_Delete(doc);
    doc = run_json(c, get_dir, -1, &rc);
    assert_refused(doc, rc, "invalid_input", "directory", "get of a directory");
    cJSON_Delete(doc);
    cr_assert_eq(lstat(out, &st), -1, "a refused get left %s", out);

    /* over a link: refused (sdk providers), or the link replaced by the
     * file (the Docker daemon); never written through */
    doc = run_json(c, put_link, -1, &rc);
    cJSON_Delete(doc);
    cr_assert(asprintf(&script, "test ! -e %s || test -L links/link || exit 1; "
                                "if test -L links/link; then echo refused; else cat links/link; fi",
                       canary) > 0);
    doc = cli_exec_sh(c, id, NULL, -1, script);
    free(script);
    cr_assert_str_eq(doc_str(doc, "stdout"), rc == 0 ? "overwritten\n" : "refused\n",
                     "put over a planted link (exit %d) wrote through it", rc);
    cJSON_Delete(doc);
    doc = run_json(c, put_through, -1, &rc);
    cr_assert_eq(rc, 125, "put through a planted directory link succeeded");
    cJSON_Delete(doc);
    /* the host's file and directory are as they were */
    got = read_file(canary, &len);
    cr_assert_str_eq(got, secret, "a put wrote through a link into the host's file");
    free(got);
    cr_assert_eq(lstat(planted, &st), -1, "a put created %s through a link", planted);

    /* ls shows a link as a link, with its target, and never lists through it */
    doc = list(c, id, "links");
    e = listed(doc, "hostdir");
    cr_assert_not_null(e);
    cr_assert_str_eq(doc_str(e, "type"), "symlink");
    cr_assert_str_eq(doc_str(e, "target"), dir);
    cJSON_Delete(doc);
    doc = list(c, id, "links/hostdir");
    cr_assert_str_eq(doc_str(doc, "type"), "symlink");
    cr_assert_null(listed(doc, "canary"), "ls listed through a planted link");
    cJSON_Delete(doc);

    /* a FIFO below a directory: its listing is refused at once, naming it */
    doc = run_json(c, ls_special, -1, &rc);
    assert_refused(doc, rc, "unsafe_path", "fifo", "ls of a directory with a FIFO");
    cJSON_Delete(doc);

    for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
        doc = run_json(c, escapes[i], -1, &rc);
        cr_assert_eq(rc, 125, "files %s %s succeeded", escapes[i][1], escapes[i][3]);
        cr_assert_not_null(strstr(doc_str(cJSON_GetObjectItemCaseSensitive(doc, "error"), "message"), "path"),
                           "files %s %s: the refusal does not name the path", escapes[i][1], escapes[i][3]);
        cJSON_Delete(doc);
    }
    cli_exec_terminate(c, id);
    free(id);
    files_dir_free(dir);
}

void cli_files_check_large(const struct cli_exec *c, const char *provider)
{
    char *dir = files_dir(c), *id = cli_exec_provision(c, provider), *data, *got, src[PATH_MAX], back[PATH_MAX];
    char huge[PATH_MAX];
    const char *put[] = { "files", "put", id, "big.bin", "--from", src, "--json", NULL };
    const char *put_huge[] = { "files", "put", id, "huge.bin", "--from", huge, "--json", NULL };
    const char *put_second[] = { "files", "put", id, "second.bin", "--from", huge, "--json", NULL };
    const char *get[] = { "files", "get", id, "big.bin", "--to", back, "--json", NULL };
    cJSON *doc;
    size_t len;
    int rc, fd;

    snprintf(src, sizeof(src), "%s/big.bin", dir);
    snprintf(back, sizeof(back), "%s/back.bin", dir);
    snprintf(huge, sizeof(huge), "%s/huge.bin", dir);
    data = malloc(BIG_BYTES);
    cr_assert_not_null(data);
    /* not compressible, not periodic: a dropped or repeated block shows */
    for (size_t i = 0; i < BIG_BYTES; i += 4) {
        uint32_t v = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7);
        memcpy(data + i, &v, 4);
    }
    write_file(src, data, BIG_BYTES);
    doc = run_json(c, put, -1, &rc);
    cr_assert_eq(rc, 0, "files put of 50 MiB exited %d", rc);
    cJSON_Delete(doc);
    doc = cli_exec_sh(c, id, NULL, -1, "wc -c < big.bin");
    cr_assert_eq(atol(doc_str(doc, "stdout")), (long)BIG_BYTES, "%s", doc_str(doc, "stdout"));
    cJSON_Delete(doc);
    doc = run_json(c, get, -1, &rc);
    cr_assert_eq(rc, 0, "files get of 50 MiB with a 1 MiB output limit exited %d", rc);
    cJSON_Delete(doc);
    got = read_file(back, &len);
    cr_assert_eq(len, BIG_BYTES);
    cr_assert_eq(memcmp(got, data, len), 0, "the 50 MiB file came back changed");
    free(got);
    free(data);
    /* 65 MiB does not fit a 64 MiB disk: refused before anything lands */
    fd = open(huge, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 65 << 20), 0);
    close(fd);
    doc = run_json(c, put_huge, -1, &rc);
    assert_refused(doc, rc, "limit_exceeded", "disk_bytes", "put beyond the disk");
    cJSON_Delete(doc);
    doc = list(c, id, "");
    cr_assert_null(listed(doc, "huge.bin"), "a refused put left huge.bin");
    cJSON_Delete(doc);
    /* 20 MiB more fits the limit but not the disk beside the 50: the
     * mechanism fails part-way, and the start it wrote does not stay */
    cr_assert_eq(truncate(huge, 20 << 20), 0);
    doc = run_json(c, put_second, -1, &rc);
    cr_assert_eq(rc, 125, "a put beyond the free space succeeded");
    cJSON_Delete(doc);
    doc = list(c, id, "");
    cr_assert_null(listed(doc, "second.bin"), "a put that failed part-way left second.bin");
    cr_assert_not_null(listed(doc, "big.bin"));
    cJSON_Delete(doc);
    cli_exec_terminate(c, id);
    free(id);
    files_dir_free(dir);
}
