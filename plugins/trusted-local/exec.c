/* trusted-local: running one command, hardened in the child (see trusted-local.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include "plugins/common/scmp.h"
#include "plugins/trusted-local/trusted-local.h"

const struct tl_tmp_dir tl__tmp_dirs[TL_TMP_DIRS] = {
    { "tmp", "/tmp" },
    { "var-tmp", "/var/tmp" },
    { "shm", "/dev/shm" },
};

/* What the child needs, prepared in the parent: the child may not allocate. */
struct child_plan {
    bool private_tmp;
    char tmp_src[TL_TMP_DIRS][TL_ROOT_MAX + 160];   /* <area>/<tl__tmp_dirs[i].name> */
    struct { int resource; rlim_t value; } limits[7];
    int n_limits;
    bool switch_user;
    uid_t uid;
    gid_t gid;
    int cap_last;
    const struct sock_fprog *prog;
    pid_t parent;   /* the cordon process that spawns the child */
};

/* ---- seccomp ------------------------------------------------------------ */

/* What sandboxed code has no business calling: the kernel keyring, bpf,
 * mounts, modules, kexec, ptrace, io_uring, namespaces and a few more. */
static const char *const denied_syscalls[] = {
    "keyctl", "add_key", "request_key", "bpf", "mount", "umount2", "pivot_root", "chroot",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "setns", "unshare", "perf_event_open", "userfaultfd", "swapon", "swapoff", "reboot",
    "acct", "open_by_handle_at", "name_to_handle_at",
};

/*
 * Build the filter with libseccomp in the parent and keep the raw BPF, so
 * that the child needs only prctl(PR_SET_SECCOMP).
 */
int tl__seccomp_build(struct sock_fprog *ret, struct cordon_error *err)
{
    scmp_filter_ctx ctx;
    size_t i;
    int rc, nr, r = 0;

    ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        return tl__nomem(err, "seccomp");
    /* Another ABI (i386, x32) would bypass the numbers below: kill it. The
     * default, killing the thread, remains where the kernel is too old. */
    seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (i = 0; i < sizeof(denied_syscalls) / sizeof(denied_syscalls[0]); i++) {
        /* Negative numbers are names this architecture does not have. */
        nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
        if (nr < 0)
            continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc < 0) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: rule for %s: %s",
                                 denied_syscalls[i], strerror(-rc));
            goto out;
        }
    }
    /* A new user namespace through clone; s390 passes the flags second. */
#if defined(__s390__) || defined(__s390x__)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#else
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#endif
    if (rc >= 0) {
        /* clone3 hides its flags in memory: ENOSYS makes libc fall back to clone. */
        nr = seccomp_syscall_resolve_name("clone3");
        if (nr >= 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    }
    /* A file lease would make the host's export wait the lease-break time
     * (or fail): F_SETLEASE is refused, the low 32 bits of cmd compared, as
     * the kernel reads them. */
    for (i = 0; rc >= 0 && i < 2; i++) {
        nr = seccomp_syscall_resolve_name(i == 0 ? "fcntl" : "fcntl64");
        if (nr >= 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffull, F_SETLEASE));
    }
    if (rc < 0) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: clone and fcntl rules: %s",
                             strerror(-rc));
        goto out;
    }
    /* The sdk's socket-family allow-list, as docker and runc have it. The
     * host's network stays in reach (AF_INET, AF_INET6: nothing here is
     * contained), but AF_VSOCK, AF_PACKET, netlink uevents and the rest are
     * refused: cheap, and no program of the documented kind needs them. */
    if ((rc = scmp__socket_rules(ctx)) < 0) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: socket rules: %s",
                             strerror(-rc));
        goto out;
    }

    r = scmp__export(ctx, ret, err);
out:
    seccomp_release(ctx);
    return r;
}

/* The highest capability number of the running kernel. */
int tl__cap_last(void)
{
    char buf[16];
    ssize_t n;
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            n = strtol(buf, NULL, 10);
            if (n > 0 && n < 64)
                return (int)n;
        }
    }
    /* No /proc: ask the bounding set, which answers EINVAL past the last
     * capability the kernel knows. Not linking libcap for this one number
     * saves loading it on every command (a third of a millisecond). */
    for (int cap = 63; cap > 0; cap--) {
        if (prctl(PR_CAPBSET_READ, (unsigned long)cap, 0UL, 0UL, 0UL) >= 0)
            return cap;
        if (errno != EINVAL)
            break;
    }
    /* prctl answered nothing usable (refused, or EINVAL for every number):
     * the headers' number. The child drops every capability up to 63
     * whatever this says; the number only decides which refusals of that
     * drop it may ignore. */
    return CAP_LAST_CAP;
}

int tl__become(uid_t uid, gid_t gid)
{
    /* Where the 32-bit calls exist, the plain ones take 16-bit ids. */
#ifdef SYS_setresuid32
    if (syscall(SYS_setgroups32, 0, NULL) != 0 ||
        syscall(SYS_setresgid32, gid, gid, gid) != 0 ||
        syscall(SYS_setresuid32, uid, uid, uid) != 0)
        return -1;
#else
    if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, gid, gid, gid) != 0 ||
        syscall(SYS_setresuid, uid, uid, uid) != 0)
        return -1;
#endif
    return 0;
}

/* ---- exec --------------------------------------------------------------- */

/* The environment being built: "NAME=VALUE" strings, a later NAME wins. */
struct env_list {
    char **entries;     /* NULL-terminated, malloc'd */
    size_t n, cap;
    size_t bytes;
};

static void env_clear(struct env_list *env)
{
    size_t i;

    for (i = 0; i < env->n; i++)
        free(env->entries[i]);
    free(env->entries);
    memset(env, 0, sizeof(*env));
}

static int env_set(struct env_list *env, const char *name, const char *value,
                   struct cordon_error *err)
{
    size_t i, nlen = strlen(name);
    char *entry;

    if (asprintf(&entry, "%s=%s", name, value) < 0)
        return tl__nomem(err, "env");
    env->bytes += strlen(entry) + 1;
    if (env->bytes > CORDON_ARGS_TOTAL_MAX) {
        free(entry);
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "env: argv and environment exceed %u bytes", CORDON_ARGS_TOTAL_MAX);
    }
    for (i = 0; i < env->n; i++)
        if (strncmp(env->entries[i], name, nlen) == 0 && env->entries[i][nlen] == '=') {
            env->bytes -= strlen(env->entries[i]) + 1;
            free(env->entries[i]);
            env->entries[i] = entry;
            return 0;
        }
    if (env->n + 2 > env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 16;
        char **grown = reallocarray(env->entries, cap, sizeof(*grown));

        if (grown == NULL) {
            free(entry);
            return tl__nomem(err, "env");
        }
        env->entries = grown;
        env->cap = cap;
    }
    env->entries[env->n++] = entry;
    env->entries[env->n] = NULL;
    return 0;
}

static int env_add_object(struct env_list *env, const cJSON *obj, struct cordon_error *err)
{
    const cJSON *item;
    int r = 0;

    cJSON_ArrayForEach(item, obj) {
        r = env_set(env, item->string, item->valuestring, err);
        if (r < 0)
            break;
    }
    return r;
}

/* A request as read (the sdk's), and what exec makes of it here. */
struct request {
    struct cordon_exec_request req;
    char *cwd;              /* absolute, malloc'd */
    uint64_t timeout_ms;    /* 0 = none */
    struct env_list env;
};

static void request_clear(struct request *rq)
{
    cordon_exec_request_clear(&rq->req);
    free(rq->cwd);
    env_clear(&rq->env);
    memset(rq, 0, sizeof(*rq));
}

static int request_parse(const struct tl_state *st, int ws_fd, const char *json,
                         struct request *ret, struct cordon_error *err)
{
    struct request rq = { 0 };
    int fd = -1, r;

    cordon_exec_request_init(&rq.req);
    r = cordon_exec_request_parse(json, &rq.req, err);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < rq.req.argc; i++)
        rq.env.bytes += strlen(rq.req.argv[i]) + 1;
    /* cwd must already be a real directory inside the workspace. */
    r = cordon_fs_walk_dirs(ws_fd, "cwd", rq.req.cwd, false, false, 0, 0, &fd, err);
    if (r < 0)
        goto out;
    if (asprintf(&rq.cwd, "%s%s%s", st->workspace, rq.req.cwd[0] ? "/" : "", rq.req.cwd) < 0) {
        rq.cwd = NULL;
        r = tl__nomem(err, "cwd");
        goto out;
    }
    rq.timeout_ms = rq.req.timeout_ms;

    /* The spec's environment, then the request's, then workspace paths. */
    r = env_set(&rq.env, "PATH", TL_DEFAULT_PATH, err);
    if (r == 0 && st->environment != NULL)
        r = env_add_object(&rq.env, st->environment, err);
    for (size_t i = 0; r == 0 && i < rq.req.env.n; i++)
        r = env_set(&rq.env, rq.req.env.vars[i].name, rq.req.env.vars[i].value, err);
    for (size_t i = 0; r == 0 && i < rq.req.workspace_env.n; i++) {
        const struct cordon_env_var *v = &rq.req.workspace_env.vars[i];
        char field[CORDON_ENV_NAME_MAX + 32], *value = NULL;
        int dfd = -1;
        bool in_source;

        snprintf(field, sizeof(field), "workspace_env.%s", v->name);
        /* Never create sandbox-owned directories inside read-only source/. */
        in_source = st->code_layout && cordon_path_is_under(v->value, "source");
        r = cordon_fs_walk_dirs(ws_fd, field, v->value, !in_source, geteuid() == 0, st->uid,
                                st->gid, &dfd, err);
        if (r < 0)
            break;
        close(dfd);
        if (asprintf(&value, "%s%s%s", st->workspace, v->value[0] ? "/" : "", v->value) < 0) {
            r = tl__nomem(err, field);
            break;
        }
        r = env_set(&rq.env, v->name, value, err);
        free(value);
    }
    if (r < 0)
        goto out;
    *ret = rq;
    memset(&rq, 0, sizeof(rq));
out:
    if (fd >= 0)
        close(fd);
    request_clear(&rq);
    return r;
}

/* Raw syscalls in the child: async-signal-safe, and they touch only this
 * process's credentials, without glibc's all-threads setxid machinery. */
static long sys_prlimit(int resource, const struct rlimit *set, struct rlimit *old)
{
    return syscall(SYS_prlimit64, 0, resource, set, old);
}

/*
 * In the child, right before execve: limits, then (as root) the bounding
 * set, groups, gid and uid, then no_new_privs and the seccomp filter.
 * Async-signal-safe: no allocation, no libc state, raw syscalls only.
 */
static int child_setup(void *arg)
{
    const struct child_plan *c = arg;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
    int i;

    for (i = 0; i < c->n_limits; i++) {
        struct rlimit old, set;
        rlim_t v = c->limits[i].value;

        if (sys_prlimit(c->limits[i].resource, NULL, &old) != 0)
            return errno;
        /* Without privilege a hard limit can only go down. */
        if (!c->switch_user && old.rlim_max != RLIM_INFINITY && v > old.rlim_max)
            v = old.rlim_max;
        set.rlim_cur = set.rlim_max = v;
        if (sys_prlimit(c->limits[i].resource, &set, NULL) != 0)
            return errno;
    }
    /*
     * The execution's own /tmp, /var/tmp and /dev/shm: the area's
     * directories bound over the host's in a mount namespace of this child
     * (slave: nothing of ours propagates to the host), and an IPC
     * namespace of its own for POSIX message queues and System V objects,
     * with /dev/mqueue showing that namespace's queues. Nothing written
     * there can outlive the execution on the host. A target the host does
     * not have is left alone. Done as root, before the filter that refuses
     * mount and unshare.
     */
    if (c->private_tmp) {
        if (syscall(SYS_unshare, CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
            syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
            return errno;
        for (i = 0; i < TL_TMP_DIRS; i++)
            if (syscall(SYS_mount, c->tmp_src[i], tl__tmp_dirs[i].target, NULL, MS_BIND,
                        NULL) != 0 && errno != ENOENT)
                return errno;
        if (syscall(SYS_mount, "mqueue", "/dev/mqueue", "mqueue",
                    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0 && errno != ENOENT)
            return errno;
    }
    if (c->switch_user) {
        /* Every number a capability can have, so that a kernel newer than
         * cap_last says is still emptied; EINVAL (no such capability) is
         * accepted only past cap_last, so that a filter answering EINVAL
         * to prctl cannot leave the set as it was. */
        for (i = 0; i < 64; i++)
            if (syscall(SYS_prctl, PR_CAPBSET_DROP, (unsigned long)i, 0UL, 0UL, 0UL) != 0 &&
                (errno != EINVAL || i <= c->cap_last))
                return errno;
        if (tl__become(c->uid, c->gid) != 0)
            return errno;
    }
    /* The process dies with the cordon that started it. Without this a
     * kill -9 of cordon while the child was still being set up (as root)
     * left a child that went on to exec as the sandbox uid after gc had
     * swept that uid: it outlived gc. Set after the uid change, which
     * clears it; a parent that died before is caught by getppid. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0UL, 0UL, 0UL) != 0)
        return errno;
    if ((pid_t)syscall(SYS_getppid) != c->parent)
        return ESRCH;
    /* Ambient and inheritable sets survive a uid change; empty them too. */
    if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0 &&
        errno != EINVAL)
        return errno;
    if (syscall(SYS_capset, &hdr, data) != 0)
        return errno;
    if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0)
        return errno;
    if (c->prog != NULL &&
        syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, c->prog, 0UL, 0UL) != 0)
        return errno;
    return 0;
}

static void child_prepare(const struct cordon_resource *res, const struct tl_state *st,
                          struct child_plan *c)
{
    uint64_t cpu_s = st->res.runtime_ms / 1000 + (st->res.runtime_ms % 1000 != 0) + 1;

    memset(c, 0, sizeof(*c));
    /* RLIMIT_DATA, not RLIMIT_AS: node and go reserve huge virtual ranges. */
    c->limits[c->n_limits].resource = RLIMIT_DATA;
    c->limits[c->n_limits++].value = (rlim_t)st->res.memory_bytes;
    c->limits[c->n_limits].resource = RLIMIT_FSIZE;
    c->limits[c->n_limits++].value = (rlim_t)st->res.disk_bytes;
    c->limits[c->n_limits].resource = RLIMIT_CPU;
    c->limits[c->n_limits++].value = (rlim_t)cpu_s;
    c->limits[c->n_limits].resource = RLIMIT_CORE;
    c->limits[c->n_limits++].value = 0;
    c->limits[c->n_limits].resource = RLIMIT_NOFILE;
    c->limits[c->n_limits++].value = 1024;
    /* The usual stack, not the caller's: `ulimit -s unlimited` would
     * change how the process lays out its memory. */
    c->limits[c->n_limits].resource = RLIMIT_STACK;
    c->limits[c->n_limits++].value = 8u << 20;
    c->switch_user = geteuid() == 0;
    c->parent = getpid();
    /* RLIMIT_NPROC counts every process of the real uid: it is a pids
     * limit only for a dedicated sandbox uid, not for the current user. */
    if (c->switch_user) {
        c->limits[c->n_limits].resource = RLIMIT_NPROC;
        c->limits[c->n_limits++].value = (rlim_t)st->res.pids;
    }
    c->uid = st->uid;
    c->gid = st->gid;
    /* Paths of the root (TL_ROOT_MAX) and an execution id: they fit. */
    c->private_tmp = c->switch_user && st->private_tmp;
    for (size_t i = 0; c->private_tmp && i < TL_TMP_DIRS; i++)
        snprintf(c->tmp_src[i], sizeof(c->tmp_src[i]), "%s/%s", st->dir, tl__tmp_dirs[i].name);
    c->cap_last = res->cap_last;
    c->prog = res->prog.filter != NULL ? &res->prog : NULL;
}

static int exec_result(const struct cordon_host_v1 *host, const struct cordon_exec_outcome *o,
                       char **ret, struct cordon_error *err)
{
    struct cordon_exec_result res;
    int r = cordon_exec_result_from_outcome(o, &res, err);

    return r < 0 ? r : cordon_exec_result_print_host(host, &res, ret, err);
}

int tl__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json,
                struct cordon_error *err)
{
    struct tl_state st = { 0 };
    struct request rq = { 0 };
    struct child_plan child;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome outcome = { 0 };
    struct cordon_exec_stdio sio = CORDON_EXEC_STDIO_INIT;
    uint64_t timeout;
    int ws_fd = -1, r;
    bool ran = false;

    if (res == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "exec: resource, io (struct_size >= %zu) and ret_result_json "
                                "required", (size_t)CORDON_EXEC_IO_V1_0_SIZE);
    r = tl__state_parse(res, state_json, true, &st, err);
    if (r < 0)
        goto out;
    r = tl__open_workspace(&st, &ws_fd, err);
    if (r < 0)
        goto out;
    r = request_parse(&st, ws_fd, request_json, &rq, err);
    if (r < 0)
        goto out;

    /* A backstop only: the host keeps the clock and fires cancel_fd. */
    r = cordon_exec_backstop_ms(st.expires_at_ms, rq.timeout_ms, cordon_now_wall_ms(), &timeout,
                                err);
    if (r < 0)
        goto out;

    /* No host fd but a pipe or /dev/null is handed over; none discards. */
    if ((r = cordon_exec_stdio_open(io, 0, &sio, err)) < 0)
        goto out;
    child_prepare(res, &st, &child);
    cordon_runner_opts_init(&opts);
    opts.argv = (const char *const *)rq.req.argv;
    opts.envp = (const char *const *)rq.env.entries;
    opts.cwd = rq.cwd;
    opts.stdin_fd = sio.stdin_fd;
    opts.stdout_fd = sio.stdout_fd;
    opts.stderr_fd = sio.stderr_fd;
    opts.timeout_ms = timeout;
    opts.grace_ms = 0;
    opts.cancel_fd = io->cancel_fd;
    opts.child_setup = child_setup;
    opts.child_setup_arg = &child;
    ran = true;
    r = cordon_runner_run(&opts, &outcome, err);
    cordon_exec_stdio_close(&sio);   /* the process ended: so does its stdin */
    if (r < 0)
        goto out;
    r = exec_result(res->host, &outcome, ret_result_json, err);
out:
    cordon_exec_stdio_close(&sio);
    /* setsid() escapes the runner's group kill; look for what stayed. */
    if (ran)
        tl__sweep(st.dir, st.uid);
    cordon_exec_outcome_clear(&outcome);
    if (ws_fd >= 0)
        close(ws_fd);
    request_clear(&rq);
    tl__state_clear(&st);
    return r;
}

