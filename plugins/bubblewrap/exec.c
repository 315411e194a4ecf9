/* bubblewrap: one command under bwrap (see bubblewrap.h). */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/child.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/uid.h>
#include "plugins/bubblewrap/bubblewrap.h"

/* The host's top-level links into /usr, mirrored inside when the host has
 * them as links (merged /usr); a real directory there is not exposed. */
static const char *const usr_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
/* What of the host's /etc the userland needs to run (the dynamic loader's
 * cache, Debian's alternatives, the time zone), read-only; the rest of
 * /etc (passwd, shadow, the host's configuration) stays out of sight.
 * passwd and group are the sandbox's own. */
static const char *const etc_entries[] = { "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
                                           "os-release", "debian_version", "mime.types", "ssl", "nsswitch.conf" };
/* The devices a program may open, bound from the host's /dev, and the
 * usual links into /proc. */
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom" };
static const char *const dev_links[][2] = {
    { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" }, { "stdout", "/proc/self/fd/1" },
    { "stderr", "/proc/self/fd/2" },
};
#define ETC_PREFIX "python3"   /* Debian's python3 reads /etc/python3.N/sitecustomize.py */

/* An argv under construction: the strings are borrowed or in owned[]. */
#define ARGV_MAX (CORDON_ARGV_MAX + 256)
struct argv_buf {
    const char *v[ARGV_MAX + 1];
    size_t n;
    char *owned[128];
    size_t n_owned;
    bool full;
};

static void add(struct argv_buf *a, const char *s)
{
    if (a->n >= ARGV_MAX || s == NULL) {
        a->full = true;
        return;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

static void add_fmt(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_fmt(struct argv_buf *a, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    if (a->n_owned >= sizeof(a->owned) / sizeof(a->owned[0])) {
        a->full = true;
        return;
    }
    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        a->full = true;
        return;
    }
    a->owned[a->n_owned++] = s;
    add(a, s);
}

static void argv_clear(struct argv_buf *a)
{
    for (size_t i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
}

/* A sealed memfd holding len bytes at offset 0, for bwrap to read. */
static int memfd_with(const char *name, const void *buf, size_t len, int *ret_fd, struct cordon_error *err)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "exec: memfd_create %s: %s", name, strerror(errno));
    if (cordon_fs_write_all(fd, buf, len) < 0 || lseek(fd, 0, SEEK_SET) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        int e = errno;

        close(fd);
        return cordon_error_set(err, CORDON_E_IO, e, "exec: %s: %s", name, strerror(e));
    }
    *ret_fd = fd;
    return 0;
}

/* The host's /usr and what lets it run; a fresh /proc, /dev, /tmp and
 * /dev/shm, the latter two sized from disk_bytes (cordon_disk_split). */
static void add_userland(struct argv_buf *a, const struct cordon_disk_split *split)
{
    char target[64];
    DIR *etc;
    struct dirent *de;

    add(a, "--ro-bind"), add(a, "/usr"), add(a, "/usr");
    for (size_t i = 0; i < sizeof(usr_links) / sizeof(usr_links[0]); i++) {
        char link[16];
        ssize_t n;

        snprintf(link, sizeof(link), "/%s", usr_links[i]);
        n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0 || (size_t)n >= sizeof(target) - 1)
            continue;
        target[n] = '\0';
        /* Only a link into /usr: the sandbox sees nothing else of the host. */
        if (strncmp(target, "usr/", 4) != 0 && strncmp(target, "/usr/", 5) != 0)
            continue;
        add(a, "--symlink"), add_fmt(a, "%s", target), add_fmt(a, "%s", link);
    }
    for (size_t i = 0; i < sizeof(etc_entries) / sizeof(etc_entries[0]); i++)
        add(a, "--ro-bind-try"), add_fmt(a, "/etc/%s", etc_entries[i]), add_fmt(a, "/etc/%s", etc_entries[i]);
    etc = opendir("/etc");
    while (etc != NULL && (de = readdir(etc)) != NULL)
        if (strncmp(de->d_name, ETC_PREFIX, strlen(ETC_PREFIX)) == 0 && strchr(de->d_name, '/') == NULL)
            add(a, "--ro-bind-try"), add_fmt(a, "/etc/%s", de->d_name), add_fmt(a, "/etc/%s", de->d_name);
    if (etc != NULL)
        closedir(etc);
    add(a, "--proc"), add(a, "/proc");
    /*
     * /dev by hand, not bwrap's --dev: that one needs a devpts, for which
     * bwrap maps the caller to uid 0 of a first user namespace and the
     * sandbox's uid to that 0 in a second; the sandbox's uid must map to
     * the caller itself. A tmpfs with the harmless devices bound in, made
     * read-only below once /dev/shm is on it. No terminal, no devpts.
     */
    add(a, "--tmpfs"), add(a, "/dev");
    for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++)
        add(a, "--dev-bind"), add_fmt(a, "/dev/%s", dev_nodes[i]), add_fmt(a, "/dev/%s", dev_nodes[i]);
    for (size_t i = 0; i < sizeof(dev_links) / sizeof(dev_links[0]); i++)
        add(a, "--symlink"), add(a, dev_links[i][1]), add_fmt(a, "/dev/%s", dev_links[i][0]);
    add(a, "--size"), add_fmt(a, "%llu", (unsigned long long)split->tmp_bytes), add(a, "--tmpfs"), add(a, "/tmp");
    add(a, "--size"), add_fmt(a, "%llu", (unsigned long long)split->shm_bytes), add(a, "--tmpfs"),
        add(a, "/dev/shm");
    add(a, "--remount-ro"), add(a, "/dev");
    add(a, "--dir"), add(a, "/var"), add(a, "--symlink"), add(a, "../tmp"), add(a, "/var/tmp");
}

/*
 * The workspace at /workspace. Layout "host": all of it, writable. Layout
 * "code": the root read-only (it is root's in every other provider),
 * source/ read-only, every other directory at the top writable. The paths
 * are the area's, which the sandbox cannot change: nothing of an earlier
 * exec runs while this one is set up (each exec's pid namespace ended with
 * it), and in layout "code" the top of the workspace is read-only inside.
 */
static int add_workspace(struct argv_buf *a, const struct area_state *st, int ws_fd, struct cordon_error *err)
{
    DIR *d;
    struct dirent *de;
    int fd;

    add(a, "--bind"), add(a, st->workspace), add(a, "/workspace");
    if (!st->code_layout)
        return 0;
    fd = openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_IO, errno, "exec: listing %s: %s", st->workspace, strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        struct stat sb;

        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        add(a, strcmp(de->d_name, "source") == 0 ? "--ro-bind" : "--bind");
        add_fmt(a, "%s/%s", st->workspace, de->d_name);
        add_fmt(a, "/workspace/%s", de->d_name);
    }
    closedir(d);
    add(a, "--remount-ro"), add(a, "/workspace");
    return 0;
}

/* The sandbox's passwd and group: its one user, and nobody for the rest. */
static const char passwd_text[] = "sandbox:x:1000:1000:cordon sandbox:/workspace:/bin/sh\n"
                                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] = "sandbox:x:1000:\nnogroup:x:65534:\n";

/* PATH as the command will see it, from the plan's environment. */
static const char *plan_path(const struct cordon_exec_plan *plan)
{
    for (char **e = plan->envp; e != NULL && *e != NULL; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            return *e + 5;
    return NULL;
}

/*
 * A missing program is CORDON_E_NOT_FOUND, not bwrap's exit 1: looked up
 * in the host's root, which the sandbox shares for /usr and its links.
 * A name with '/' (it may lie in the workspace) and a PATH that names a
 * directory outside /usr or its links are left to the command itself.
 */
static int find_program(const struct cordon_exec_plan *plan, struct cordon_error *err)
{
    const char *argv0 = plan->req.argv[0], *path = plan_path(plan), *p;
    int root_fd, r;

    if (strchr(argv0, '/') != NULL || path == NULL)
        return 0;
    for (p = path; *p != '\0'; p += strcspn(p, ":"), p += *p == ':') {
        size_t n = strcspn(p, ":");
        bool shared = (n >= 4 && strncmp(p, "/usr", 4) == 0 && (n == 4 || p[4] == '/'));

        for (size_t i = 0; !shared && i < sizeof(usr_links) / sizeof(usr_links[0]); i++)
            shared = n == strlen(usr_links[i]) + 1 && p[0] == '/' && strncmp(p + 1, usr_links[i], n - 1) == 0;
        if (!shared)
            return 0;
    }
    root_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return 0;
    r = cordon_fs_find_program(root_fd, argv0, "/", path, err);
    close(root_fd);
    return r;
}

/*
 * bwrap returns as soon as its PID 1 reports the command's status, while
 * the kernel is still killing the rest of the pid namespace. An exec ends
 * when all of it is gone: PID 1 (its host pid from --info-fd) exits only
 * once every other process of its namespace has been released, so its
 * pidfd is waited for, bounded. A pid already reused by a process of
 * another namespace is not waited for.
 */
static void wait_sandbox_gone(int info_fd)
{
    char buf[4096], link[64];
    ssize_t n, got = 0;
    cJSON *doc;
    double pid = 0, ns = 0;
    struct stat sb;
    struct pollfd p;

    while (got < (ssize_t)sizeof(buf) - 1 && (n = read(info_fd, buf + got, sizeof(buf) - 1 - (size_t)got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return;
        got += n;
    }
    buf[got] = '\0';
    if ((doc = cJSON_Parse(buf)) != NULL) {
        pid = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "child-pid"));
        ns = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "pid-namespace"));
        cJSON_Delete(doc);
    }
    if (!(pid >= 2 && pid < 4194304 && ns > 0))
        return;
    p.fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    p.events = POLLIN;
    if (p.fd < 0)
        return;   /* gone already */
    snprintf(link, sizeof(link), "/proc/%d/ns/pid", (int)pid);
    if (stat(link, &sb) == 0 && (double)sb.st_ino == ns)
        while (poll(&p, 1, 10000) < 0 && errno == EINTR)
            ;
    close(p.fd);
}

/* What the child applies before execve of bwrap: the sdk's plan. */
static CORDON_RUNNER_CHILD int child_setup(void *arg)
{
    return cordon_child_plan_apply(arg);
}

int bw__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json, struct cordon_error *err)
{
    struct area_state st = { 0 };
    struct cordon_exec_plan plan = { 0 };
    struct cordon_exec_stdio sio = CORDON_EXEC_STDIO_INIT;
    struct cordon_exec_outcome outcome = { 0 };
    struct cordon_exec_result result;
    struct cordon_runner_opts opts;
    struct cordon_child_plan child;
    struct cordon_disk_split split;
    struct cordon_env env;
    struct argv_buf *a = NULL;
    int ws_fd = -1, fds[4] = { -1, -1, -1, -1 }, info_fd = -1, r;
    uint64_t timeout;

    cordon_env_init(&env);
    if (res == NULL || io == NULL || ret_result_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: resource, io and ret_result_json required");
    if ((r = bw__state_parse(res, state_json, true, &st, err)) < 0 ||
        (r = area__open_workspace(&st, &ws_fd, err)) < 0 ||
        (r = cordon_env_from_json(st.environment, "state.environment", &env, err)) < 0 ||
        (r = cordon_disk_split("state.resources.disk_bytes", st.res.disk_bytes, &split, err)) < 0)
        goto out;
    {
        /* cwd must be a real directory of the workspace; the workspace_env
         * directories are made (as root, the pool uid's). */
        struct cordon_exec_place place = {
            .ws_fd = ws_fd, .ws_path = "/workspace", .path = BW_DEFAULT_PATH, .env = &env,
            .code_layout = st.code_layout, .chown = res->cfg.pooled, .uid = st.uid, .gid = st.gid,
        };

        if ((r = cordon_exec_plan_build(&place, request_json, &plan, err)) < 0 || (r = find_program(&plan, err)) < 0)
            goto out;
    }
    if ((r = memfd_with("cordon-bwrap-seccomp", res->prog.filter, (size_t)res->prog.len * sizeof(*res->prog.filter),
                        &fds[0], err)) < 0 ||
        (r = memfd_with("cordon-bwrap-passwd", passwd_text, strlen(passwd_text), &fds[1], err)) < 0 ||
        (r = memfd_with("cordon-bwrap-group", group_text, strlen(group_text), &fds[2], err)) < 0)
        goto out;
    {
        int pfd[2];

        if (pipe2(pfd, O_CLOEXEC) != 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "exec: pipe: %s", strerror(errno));
            goto out;
        }
        info_fd = pfd[0];
        fds[3] = pfd[1];
    }
    if ((a = calloc(1, sizeof(*a))) == NULL) {
        r = bw__nomem(err, "exec");
        goto out;
    }
    /*
     * One uid mapped, namespaces of its own for everything bwrap knows (an
     * empty network), a session of its own (no TIOCSTI into a terminal of
     * the host's), death with its parent; the seccomp program on fds[0].
     */
    add(a, res->cfg.bwrap);
    add(a, "--unshare-user"), add(a, "--uid"), add_fmt(a, "%u", BW_SANDBOX_UID), add(a, "--gid"),
        add_fmt(a, "%u", BW_SANDBOX_GID);
    add(a, "--unshare-pid"), add(a, "--unshare-ipc"), add(a, "--unshare-net"), add(a, "--unshare-uts");
    add(a, "--unshare-cgroup-try"), add(a, "--hostname"), add(a, "cordon");
    add(a, "--die-with-parent"), add(a, "--new-session"), add(a, "--info-fd"), add_fmt(a, "%d", fds[3]);
    add_userland(a, &split);
    add(a, "--ro-bind-data"), add_fmt(a, "%d", fds[1]), add(a, "/etc/passwd");
    add(a, "--ro-bind-data"), add_fmt(a, "%d", fds[2]), add(a, "/etc/group");
    if ((r = add_workspace(a, &st, ws_fd, err)) < 0)
        goto out;
    /* Every other mount point is made: the root tmpfs goes read-only. */
    add(a, "--remount-ro"), add(a, "/");
    add(a, "--chdir"), add(a, plan.cwd);
    add(a, "--seccomp"), add_fmt(a, "%d", fds[0]);
    /* RLIMIT_NPROC set inside the user namespace counts only its processes. */
    add(a, "--"), add(a, BW_PRLIMIT), add_fmt(a, "--nproc=%llu:%llu", (unsigned long long)st.res.pids,
                                              (unsigned long long)st.res.pids);
    add(a, "--");
    for (size_t i = 0; plan.req.argv[i] != NULL; i++)
        add(a, plan.req.argv[i]);
    if (a->full) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "exec: the bwrap command line is over %d arguments", ARGV_MAX);
        goto out;
    }
    /* The rlimits for bwrap and what it starts; as root the pool uid,
     * without privilege. RLIMIT_NPROC is prlimit's, inside. */
    cordon_child_plan_init(&child, &st.res, false, st.uid, st.gid);
    child.switch_user = res->cfg.pooled;
    if ((r = cordon_exec_backstop_ms(st.expires_at_ms, plan.req.timeout_ms, cordon_now_wall_ms(), &timeout, err)) < 0 ||
        (r = cordon_exec_stdio_open(io, 0, &sio, err)) < 0)
        goto out;
    cordon_host_logf(res->host, CORDON_LOG_DEBUG, BW_ID, "exec %s: bwrap as uid %u, %zu arguments",
                     st.execution_id, (unsigned)(res->cfg.pooled ? st.uid : geteuid()), a->n);
    cordon_runner_opts_init(&opts);
    opts.argv = a->v;
    opts.envp = (const char *const *)plan.envp;
    opts.cwd = "/";
    opts.stdin_fd = sio.stdin_fd;
    opts.stdout_fd = sio.stdout_fd;
    opts.stderr_fd = sio.stderr_fd;
    opts.timeout_ms = timeout;
    opts.cancel_fd = io->cancel_fd;
    opts.child_setup = child_setup;
    opts.child_setup_arg = &child;
    opts.pass_fds = fds;
    opts.n_pass_fds = 4;
    r = cordon_runner_run(&opts, &outcome, err);
    cordon_exec_stdio_close(&sio);
    close(fds[3]);
    fds[3] = -1;
    if (r == 0)
        wait_sandbox_gone(info_fd);
    if (r == 0 && (r = cordon_exec_result_from_outcome(&outcome, &result, err)) == 0) {
        /* bwrap reports a command killed by signal N as exit 128+N. */
        if (result.status == CORDON_RUN_EXITED && result.exit_code > 128 && result.exit_code <= 192)
            result.signal_folded = true;
        r = cordon_exec_result_print_host(res->host, &result, ret_result_json, err);
    }
out:
    /* As root a process of the pool uid left behind is killed now. */
    if (res->cfg.pooled && st.uid != 0 && cordon_uid_in_pool(st.uid))
        cordon_uid_sweep(st.uid);
    cordon_exec_outcome_clear(&outcome);
    for (size_t i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (info_fd >= 0)
        close(info_fd);
    if (a != NULL)
        argv_clear(a);
    free(a);
    if (ws_fd >= 0)
        close(ws_fd);
    cordon_exec_plan_clear(&plan);
    cordon_env_clear(&env);
    area__state_clear(&st);
    return r;
}
