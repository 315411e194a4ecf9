/*
 * runc provider: the runtime binary. Finding it, running one of its
 * commands to completion through the sdk's runner (argv only, a timeout,
 * its output read back bounded), and reading its own words out of a
 * failure (--log-format json).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/runner.h>

#include "plugins/runc/runc.h"

#define CMD_TIMEOUT_MS 60000u          /* one runtime command (create can be slow under load) */
#define CMD_OUT_MAX (1u << 20)         /* what we read back of its stdout */

/* Where runtimes are looked for when runtime_path is not set: /usr/bin/runc
 * first, then the host's PATH, then the usual sbin directories. */
static const char *const runtime_fallbacks[] = {
    "/usr/sbin/runc", "/usr/local/bin/runc", "/usr/local/sbin/runc", "/sbin/runc", "/bin/runc",
};

bool runc__executable(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* runtime_path, else /usr/bin/runc, the host's PATH, the fallbacks. */
int runc__runtime_find(const struct runc_config *cfg, char **ret, struct cordon_error *err)
{
    const char *path = getenv("PATH");
    char cand[RUNC_PATH_MAX + 8];

    if (cfg->runtime_path != NULL) {
        if (!runc__executable(cfg->runtime_path))
            return cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                                    "config.runtime_path: %s is not an executable file",
                                    cfg->runtime_path);
        *ret = strdup(cfg->runtime_path);
        return *ret != NULL ? 0 : runc__nomem(err, "runtime");
    }
    if (runc__executable("/usr/bin/runc")) {
        *ret = strdup("/usr/bin/runc");
        return *ret != NULL ? 0 : runc__nomem(err, "runtime");
    }
    for (const char *p = path; p != NULL && *p != '\0';) {
        const char *end = strchrnul(p, ':');
        size_t n = (size_t)(end - p);

        /* Only absolute entries: a relative one depends on the cwd. */
        if (n > 0 && p[0] == '/' && n < RUNC_PATH_MAX) {
            snprintf(cand, sizeof(cand), "%.*s/runc", (int)n, p);
            if (runc__executable(cand)) {
                *ret = strdup(cand);
                return *ret != NULL ? 0 : runc__nomem(err, "runtime");
            }
        }
        p = *end == ':' ? end + 1 : end;
    }
    for (size_t i = 0; i < sizeof(runtime_fallbacks) / sizeof(runtime_fallbacks[0]); i++)
        if (runc__executable(runtime_fallbacks[i])) {
            *ret = strdup(runtime_fallbacks[i]);
            return *ret != NULL ? 0 : runc__nomem(err, "runtime");
        }
    return cordon_error_set(err, CORDON_E_NOT_FOUND, ENOENT,
                            "runtime: no runc in /usr/bin, PATH or the sbin directories; install "
                            "it or set runtime_path");
}

void runc__cmd_result_clear(struct runc_cmd_result *c)
{
    free(c->out);
    free(c->errtext);
    memset(c, 0, sizeof(*c));
}

static char *read_memfd(int fd, size_t max)
{
    char *buf = malloc(max + 1);
    size_t got = 0;

    while (buf != NULL && got < max) {
        ssize_t n = pread(fd, buf + got, max - got, (off_t)got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (buf != NULL)
        buf[got] = '\0';
    return buf;
}

/*
 * Run the runtime with argv (argv[0] is the runtime) to completion. Its
 * stdout and stderr are memfds, never pipes: `create` hands its stdio to
 * the container's init, which would hold a pipe open long after the
 * command returned. 0 means it ran; read ret->exit_code.
 */
static int cmd_run(const char *const *argv, struct runc_cmd_result *ret, struct cordon_error *err)
{
    static const char *const envp[] = { RUNC_RUNTIME_ENV_PATH, NULL };
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    int out_fd = memfd_create("cordon-runc-out", MFD_CLOEXEC);
    int err_fd = memfd_create("cordon-runc-err", MFD_CLOEXEC);
    int r;

    memset(ret, 0, sizeof(*ret));
    if (out_fd < 0 || err_fd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "runtime: memfd_create: %s",
                             strerror(errno));
        goto out;
    }
    cordon_runner_opts_init(&opts);
    opts.argv = argv;
    opts.envp = envp;
    opts.stdout_fd = out_fd;
    opts.stderr_fd = err_fd;
    opts.timeout_ms = CMD_TIMEOUT_MS;
    r = cordon_runner_run(&opts, &o, err);
    if (r < 0)
        goto out;
    ret->exit_code = o.status == CORDON_RUN_EXITED ? o.exit_code : -1;
    ret->out = read_memfd(out_fd, CMD_OUT_MAX);
    ret->errtext = read_memfd(err_fd, RUNC_LOG_MAX);
    if (ret->out == NULL || ret->errtext == NULL) {
        runc__cmd_result_clear(ret);
        r = runc__nomem(err, "runtime");
        goto out;
    }
    if (o.status != CORDON_RUN_EXITED)
        ret->exit_code = -1;
out:
    cordon_exec_outcome_clear(&o);
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0)
        close(err_fd);
    return r;
}

/*
 * The runtime's own words for a failure: the message of the last JSON log
 * line (--log-format json), else the last non-empty line, at most 300 bytes.
 */
void runc__cmd_message(const char *text, char *buf, size_t size)
{
    const char *line = text, *best = NULL;
    size_t best_len = 0;

    buf[0] = '\0';
    while (line != NULL && *line != '\0') {
        const char *end = strchrnul(line, '\n');
        size_t n = (size_t)(end - line);

        if (n > 0 && line[0] == '{') {
            cJSON *doc = cJSON_ParseWithLength(line, n);
            const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "msg"));

            if (msg != NULL)
                snprintf(buf, size, "%.*s", cordon_text_fit(msg, 300), msg);
            cJSON_Delete(doc);
            best = NULL;
        } else if (n > 0) {
            best = line;
            best_len = n;
        }
        line = *end == '\n' ? end + 1 : NULL;
    }
    if (best != NULL)
        snprintf(buf, size, "%.*s", (int)(best_len < 300 ? best_len : 300), best);
    if (buf[0] == '\0')
        snprintf(buf, size, "no message");
}

/* runtime --root R --log-format json VERB ARGS...; NULL-terminated args. */
int runc__runtime_cmd(const struct cordon_resource *res, const char *const *args,
                      struct runc_cmd_result *ret, struct cordon_error *err)
{
    const char *argv[16];
    size_t n = 0;

    argv[n++] = res->runtime;
    argv[n++] = "--root";
    argv[n++] = res->cfg.root;
    argv[n++] = "--log-format";
    argv[n++] = "json";
    for (size_t i = 0; args[i] != NULL && n < sizeof(argv) / sizeof(argv[0]) - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return cmd_run(argv, ret, err);
}

/* "runc version 1.1.5+ds1\ncommit: ...\nspec: 1.0.2-dev" -> the pieces. */
/* The binary's identity as the version cache keys it: a replaced or
 * rewritten binary changes its inode, size or ctime. */
static bool binary_key(const char *path, char *buf, size_t size)
{
    struct stat st;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    snprintf(buf, size, "%ju %ju %jd %jd.%09ld %jd.%09ld %s\n", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, path);
    return true;
}

/*
 * `runtime --version`, from <base>/runtime-version when that was written
 * for the same binary (binary_key): starting the runtime (a Go program)
 * costs 10-40 ms, and every exec's ensure needs its name and version. The
 * cache is root's (base is 0700) and a miss runs the binary as before.
 */
static int version_text(const struct cordon_resource *res, struct runc_cmd_result *ret,
                        struct cordon_error *err)
{
    const char *argv[] = { res->runtime, "--version", NULL };
    char key[RUNC_PATH_MAX + 160], *text = NULL;
    size_t len, klen;
    bool keyed = binary_key(res->runtime, key, sizeof(key));
    int dfd = keyed ? open(res->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1, r;

    klen = strlen(key);
    if (dfd >= 0 &&
        cordon_fs_read_file(dfd, "runtime-version", CMD_OUT_MAX, &text, &len, NULL) == 0 &&
        len > klen && memcmp(text, key, klen) == 0) {
        memset(ret, 0, sizeof(*ret));
        ret->out = strdup(text + klen);
        ret->errtext = strdup("");
        free(text);
        close(dfd);
        if (ret->out == NULL || ret->errtext == NULL) {
            runc__cmd_result_clear(ret);
            return runc__nomem(err, "runtime --version");
        }
        return 0;
    }
    free(text);
    r = cmd_run(argv, ret, err);
    if (r == 0 && ret->exit_code == 0 && dfd >= 0 && asprintf(&text, "%s%s", key, ret->out) > 0) {
        (void)cordon_fs_write_atomic(dfd, "runtime-version", text, strlen(text), 0600, NULL);
        free(text);
    }
    if (dfd >= 0)
        close(dfd);
    return r;
}

int runc__runtime_version(struct cordon_resource *res, struct cordon_error *err)
{
    struct runc_cmd_result c;
    const char *spec;
    int r = version_text(res, &c, err);

    if (r == 0 && c.exit_code != 0)
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "runtime: %s --version exited %d",
                             res->runtime, c.exit_code);
    if (r == 0 && sscanf(c.out, "%31s version %63s", res->runtime_name,
                         res->runtime_version) != 2)
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                             "runtime: %s --version printed \"%.*s\", not \"NAME version V\"",
                             res->runtime, cordon_text_fit(c.out, 80), c.out);
    if (r == 0) {
        spec = strstr(c.out, "\nspec: ");
        if (spec == NULL || sscanf(spec, "\nspec: %31s", res->spec_version) != 1)
            snprintf(res->spec_version, sizeof(res->spec_version), "unknown");
    }
    runc__cmd_result_clear(&c);
    return r;
}

/* The init pid of a container the runtime knows, or 0. */
pid_t runc__runtime_pid(const struct cordon_resource *res, const char *id)
{
    const char *args[] = { "state", id, NULL };
    struct runc_cmd_result c;
    pid_t pid = 0;

    if (runc__runtime_cmd(res, args, &c, NULL) == 0 && c.exit_code == 0) {
        cJSON *doc = cJSON_Parse(c.out);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "pid");

        if (cJSON_IsNumber(p) && p->valuedouble > 1 && p->valuedouble < 0x7fffffff)
            pid = (pid_t)p->valuedouble;
        cJSON_Delete(doc);
    }
    runc__cmd_result_clear(&c);
    return pid;
}
