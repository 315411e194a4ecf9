/*
 * trusted-local: explicit, unprotected host execution
 * (cordon-provider-trusted-local(7)).
 *
 * Runs argv directly on the host, in a per-execution directory beneath a
 * root, with best-effort hardening in the child: rlimits, the bounding set
 * emptied and a dedicated uid:gid when running as root, no_new_privs and a
 * libseccomp deny-list. It contains nothing: the probe runs cordon-observe
 * through this very provider and reports what it saw, which is
 * process_contained false and host_filesystem_restricted false.
 *
 * Nothing global: every call works from the resource (parsed config and
 * the prepared seccomp program) and the execution's state JSON.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/magic.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/capability.h>
#include <seccomp.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/observe.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include <cordon/sdk/tar.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>
#include "plugins/common/scmp.h"

#define TL_ID "trusted-local"
#define TL_ROOT_DEFAULT_PRIVILEGED "/run/cordon/trusted-local"
#define TL_ROOT_MAX 1024u
#define TL_DEFAULT_UID 65532u
#define TL_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

#define TL_CONFIG_MAX (64u << 10)
#define TL_SWEEP_PASSES 8
#define TL_BACKSTOP_SLACK_MS 1000u          /* lets the host's own clock fire first */
#define TL_HOST_MARK "host-instance"         /* in <root>/<id>/: whose execution */
#define TL_AREA_SLACK (1u << 20)             /* the area's tmpfs: the marker, directories */
#define TL_AREA_INODES 65536u

static const struct cordon_provider_v1 tl_provider;

/* The parsed provider config. */
struct tl_config {
    bool allow_unsafe_local;
    bool seccomp;
    bool run_as_set;     /* "run_as" was given */
    bool switch_user;    /* euid 0: children switch to uid:gid */
    bool pooled;         /* each execution takes a uid of its own from the pool */
    uid_t uid;           /* the sandbox user (the current user when not root) */
    gid_t gid;
    uid_t run_as_uid;    /* as configured, for the facts */
    gid_t run_as_gid;
    char *root;
};

struct cordon_resource {
    const struct cordon_host_v1 *host;
    struct tl_config cfg;
    struct sock_fprog prog;  /* .filter malloc'd; NULL when seccomp is off */
    int cap_last;
};

/* One execution's state, parsed back from the state JSON. */
struct tl_state {
    cJSON *doc;                 /* owns the strings below */
    const char *execution_id;
    char *dir;                  /* <root>/<id>, malloc'd */
    char *workspace;            /* <dir>/workspace, malloc'd */
    uid_t uid;
    gid_t gid;
    bool code_layout;
    struct cordon_limits res;
    uint64_t expires_at_ms;
    const cJSON *environment;   /* object of strings, or NULL */
};

/* What the child needs, prepared in the parent: the child may not allocate. */
struct tl_child {
    struct { int resource; rlim_t value; } limits[7];
    int n_limits;
    bool switch_user;
    uid_t uid;
    gid_t gid;
    int cap_last;
    const struct sock_fprog *prog;
    pid_t parent;   /* the cordon process that spawns the child */
};

/* ---- small helpers ------------------------------------------------------ */

static int tl_nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* An absolute, clean directory path: no "." or ".." component, no "//",
 * no trailing '/', no control characters, not "/" itself. */
static int tl_check_root(const char *root, struct cordon_error *err)
{
    size_t len = strnlen(root, TL_ROOT_MAX + 1);
    const char *p;

    if (len > TL_ROOT_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "root: longer than %u bytes", TL_ROOT_MAX);
    if (root[0] != '/' || len < 2 || root[len - 1] == '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "root: \"%s\" must be an absolute directory path other than /",
                                root);
    for (p = root; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: control character in \"%s\"", root);
        if (*p == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                          (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: \"%s\" must be normalised (no \"//\", \".\" or \"..\")",
                                    root);
    }
    return 0;
}

/* "UID:GID", decimal, neither 0 nor -1. */
static int tl_parse_run_as(const char *text, uid_t *ret_uid, gid_t *ret_gid,
                           struct cordon_error *err)
{
    unsigned long long v[2];
    const char *p = text;
    int i;

    for (i = 0; i < 2; i++) {
        char *end;

        if (*p < '0' || *p > '9')
            goto bad;
        errno = 0;
        v[i] = strtoull(p, &end, 10);
        /* (uid_t)-1 means "unchanged" to setresuid: never a target. */
        if (errno != 0 || end - p > 10 || v[i] >= 0xffffffffull)
            goto bad;
        p = end;
        if (*p != (i == 0 ? ':' : '\0'))
            goto bad;
        p++;
    }
    if (v[0] == 0 || v[1] == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "config.run_as: \"%s\" refused: the sandbox user and group must "
                                "not be root (0)", text);
    *ret_uid = (uid_t)v[0];
    *ret_gid = (gid_t)v[1];
    return 0;
bad:
    return cordon_error_set(err, CORDON_E_INVALID, 0,
                            "config.run_as: \"%.*s\" must be \"UID:GID\" in decimal",
                            cordon_text_fit(text, 64), text);
}

/* ---- config ------------------------------------------------------------- */

static void tl_config_clear(struct tl_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->root);
    cfg->root = NULL;
}

static int tl_config_parse(const struct cordon_host_v1 *host, const char *json,
                           struct tl_config *ret, struct cordon_error *err)
{
    struct tl_config cfg = { .seccomp = true };
    const char *root = NULL;
    cJSON *doc = NULL, *item;
    int r;

    r = cordon_json_parse_object("config", json != NULL ? json : "{}", TL_CONFIG_MAX, &doc, err);
    if (r < 0)
        goto out;
    cJSON_ArrayForEach(item, doc) {
        const char *key = item->string;

        if (strcmp(key, "allow_unsafe_local") == 0 || strcmp(key, "seccomp") == 0) {
            if (!cJSON_IsBool(item)) {
                r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                     "config.%s: must be true or false", key);
                goto out;
            }
            if (key[0] == 'a')
                cfg.allow_unsafe_local = cJSON_IsTrue(item);
            else
                cfg.seccomp = cJSON_IsTrue(item);
        } else if (strcmp(key, "image") == 0) {
            /* the host passes a run's --image to every candidate */
            if (!cJSON_IsNull(item)) {
                r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                                     "config.image: trusted-local runs on the host and takes no image");
                goto out;
            }
        } else if (strcmp(key, "root") == 0) {
            if (!cJSON_IsString(item)) {
                r = cordon_error_set(err, CORDON_E_INVALID, 0, "config.root: must be a string");
                goto out;
            }
            root = item->valuestring;
        } else if (strcmp(key, "run_as") == 0) {
            if (!cJSON_IsString(item)) {
                r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                     "config.run_as: must be a string \"UID:GID\"");
                goto out;
            }
            r = tl_parse_run_as(item->valuestring, &cfg.run_as_uid, &cfg.run_as_gid, err);
            if (r < 0)
                goto out;
            cfg.run_as_set = true;
        } else {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.%.*s: unknown key (known: allow_unsafe_local, root, "
                                 "run_as, seccomp)",
                                 cordon_text_fit(key, 64), key);
            goto out;
        }
    }

    if (!cfg.run_as_set)
        cfg.run_as_uid = cfg.run_as_gid = TL_DEFAULT_UID;
    /* Only root can switch users; otherwise the sandbox is the current user. */
    cfg.switch_user = geteuid() == 0;
    cfg.uid = cfg.switch_user ? cfg.run_as_uid : geteuid();
    /* As root and with no run_as, every execution runs as a uid of its own:
     * per-user kernel limits and "kill every process of my uid" stay inside. */
    cfg.pooled = cfg.switch_user && !cfg.run_as_set;
    cfg.gid = cfg.switch_user ? cfg.run_as_gid : getegid();

    if (root != NULL) {
        cfg.root = strdup(root);
    } else if (cfg.switch_user) {
        cfg.root = strdup(TL_ROOT_DEFAULT_PRIVILEGED);
    } else {
        const char *sd = CORDON_HOST_HAS(host, state_dir) ? host->state_dir : NULL;

        if (sd == NULL || sd[0] != '/') {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "config.root: no default (the host has no absolute state_dir); "
                                 "set \"root\"");
            goto out;
        }
        if (asprintf(&cfg.root, "%s/providers/" TL_ID "/executions", sd) < 0)
            cfg.root = NULL;
    }
    if (cfg.root == NULL) {
        r = tl_nomem(err, "config.root");
        goto out;
    }
    r = tl_check_root(cfg.root, err);
    if (r < 0)
        goto out;
    *ret = cfg;
    cfg.root = NULL;
out:
    tl_config_clear(&cfg);
    cJSON_Delete(doc);
    return r;
}

/* ---- the execution root ------------------------------------------------- */

/*
 * Create the root and its missing parents (parents 0755, the root 0711),
 * then check that it can hold executions: a directory of ours, not
 * writable by others, and - when children switch users - every component
 * searchable by that user, or its workspace would be out of its reach.
 */
static int tl_root_prepare(const struct tl_config *cfg, struct cordon_error *err)
{
    char path[TL_ROOT_MAX + 1];
    struct stat st = { 0 };
    size_t i, len = strlen(cfg->root);

    memcpy(path, cfg->root, len + 1);
    for (i = 1; i <= len; i++) {
        bool last = i == len;
        mode_t mode = last ? 0711 : 0755;

        if (!last && path[i] != '/')
            continue;
        path[i] = '\0';
        if (mkdir(path, mode) == 0) {
            /* mkdir obeys the umask, which a provider may not change. */
            if (chmod(path, mode) != 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "root: chmod %s: %s", path,
                                        strerror(errno));
        } else if (errno != EEXIST) {
            return cordon_error_set(err, errno == EACCES || errno == EPERM ? CORDON_E_DENIED
                                                                           : CORDON_E_IO,
                                    errno, "root: cannot create %s: %s", path, strerror(errno));
        }
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return cordon_error_set(err, CORDON_E_INVALID, errno, "root: %s is not a directory",
                                    path);
        if (cfg->switch_user && (st.st_mode & S_IXOTH) == 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: %s (mode %04o) is not searchable by the sandbox user "
                                    "%u; use a root whose every directory has o+x",
                                    path, (unsigned)(st.st_mode & 07777), (unsigned)cfg->uid);
        if (!last)
            path[i] = '/';
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "root: %s must belong to uid %u and not be group/other writable "
                                "(owner %u, mode %04o)", cfg->root, (unsigned)geteuid(),
                                (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* ---- seccomp ------------------------------------------------------------ */

/* What sandboxed code has no business calling: the kernel keyring, bpf,
 * mounts, modules, kexec, ptrace, io_uring, namespaces and a few more. */
static const char *const tl_denied_syscalls[] = {
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
static int tl_seccomp_build(struct sock_fprog *ret, struct cordon_error *err)
{
    scmp_filter_ctx ctx;
    size_t i;
    int rc, nr, r = 0;

    ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        return tl_nomem(err, "seccomp");
    /* Another ABI (i386, x32) would bypass the numbers below: kill it. The
     * default, killing the thread, remains where the kernel is too old. */
    seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (i = 0; i < sizeof(tl_denied_syscalls) / sizeof(tl_denied_syscalls[0]); i++) {
        /* Negative numbers are names this architecture does not have. */
        nr = seccomp_syscall_resolve_name(tl_denied_syscalls[i]);
        if (nr < 0)
            continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc < 0) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, -rc, "seccomp: rule for %s: %s",
                                 tl_denied_syscalls[i], strerror(-rc));
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
static int tl_cap_last(void)
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
    /* No /proc: libcap probes the kernel itself. */
    return (int)cap_max_bits() - 1;
}

/* ---- resource ----------------------------------------------------------- */

static void tl_resource_free(struct cordon_resource *res)
{
    if (res == NULL)
        return;
    tl_config_clear(&res->cfg);
    free(res->prog.filter);
    free(res);
}

static int tl_resource_new(const struct cordon_host_v1 *host, const char *config_json,
                           bool require_allow, struct cordon_resource **ret,
                           struct cordon_error *err)
{
    struct cordon_resource *res;
    int r;

    res = calloc(1, sizeof(*res));
    if (res == NULL)
        return tl_nomem(err, "ensure");
    res->host = host;
    r = tl_config_parse(host, config_json, &res->cfg, err);
    if (r < 0)
        goto out;
    if (require_allow && !res->cfg.allow_unsafe_local) {
        r = cordon_error_set(err, CORDON_E_DENIED, 0,
                             TL_ID ": refusing to run code unprotected on this host without "
                             "\"allow_unsafe_local\": true in the provider config");
        goto out;
    }
    r = tl_root_prepare(&res->cfg, err);
    if (r < 0)
        goto out;
    /* Built once per resource and shared read-only by every exec. */
    if (res->cfg.seccomp) {
        r = tl_seccomp_build(&res->prog, err);
        if (r < 0)
            goto out;
    }
    res->cap_last = tl_cap_last();
    *ret = res;
    res = NULL;
out:
    tl_resource_free(res);
    return r;
}

static int tl_ensure(const struct cordon_host_v1 *host, const char *config_json,
                     struct cordon_resource **ret_resource, struct cordon_error *err)
{
    if (host == NULL || ret_resource == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "ensure: host and ret_resource required");
    return tl_resource_new(host, config_json, true, ret_resource, err);
}

static int tl_health_check(struct cordon_resource *res, struct cordon_error *err)
{
    struct stat st;

    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "health_check: resource required");
    if (stat(res->cfg.root, &st) != 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "root: %s: %s", res->cfg.root,
                                strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0, "root: %s is not a directory",
                                res->cfg.root);
    return 0;
}

static int tl_release(struct cordon_resource *res, struct cordon_error *err)
{
    tl_resource_free(res);
    return 0;
}

/* ---- processes left behind ---------------------------------------------- */

/* True when pid's working directory is dir or lies beneath it. */
static bool tl_cwd_under(pid_t pid, const char *dir, size_t dlen)
{
    char link[64], cwd[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
    n = readlink(link, cwd, sizeof(cwd) - 1);
    if (n < 0 || (size_t)n < dlen)
        return false;
    cwd[n] = '\0';
    return strncmp(cwd, dir, dlen) == 0 && (cwd[dlen] == '\0' || cwd[dlen] == '/');
}

/*
 * Kill what escaped the runner's process-group kill with setsid(). With a
 * uid of the pool, the uid is the execution's alone: every process of it,
 * wherever it went. With a configured run_as shared by every execution,
 * only those whose working directory lies in the execution area; one that
 * moved elsewhere is not found (the facts say process_contained false).
 */
static void tl_sweep(const char *dir, uid_t uid)
{
    bool own_uid = cordon_uid_in_pool(uid);

    size_t dlen = strlen(dir);
    int pass;

    for (pass = 0; pass < TL_SWEEP_PASSES; pass++) {
        DIR *proc = opendir("/proc");
        struct dirent *de;
        int killed = 0;

        if (proc == NULL)
            return;
        while ((de = readdir(proc)) != NULL) {
            char path[64];
            struct stat st;
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            int pidfd;

            if (*end != '\0' || pid <= 0 || pid == (long)getpid())
                continue;
            snprintf(path, sizeof(path), "/proc/%ld", pid);
            if (stat(path, &st) != 0 || st.st_uid != uid ||
                (!own_uid && !tl_cwd_under((pid_t)pid, dir, dlen)))
                continue;
            /* Pin the process, then look again: the pid may have been reused. */
            pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
            if (pidfd < 0)
                continue;
            if ((own_uid ? stat(path, &st) == 0 && st.st_uid == uid
                         : tl_cwd_under((pid_t)pid, dir, dlen)) &&
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
                killed++;
            close(pidfd);
        }
        closedir(proc);
        if (killed == 0)
            return;
    }
}

/* ---- spec and state ----------------------------------------------------- */


static void tl_state_clear(struct tl_state *st)
{
    cJSON_Delete(st->doc);
    free(st->dir);
    free(st->workspace);
    memset(st, 0, sizeof(*st));
}

/* Where an execution lives: <root>/<id>, and its workspace below it. */
static int tl_paths(const struct cordon_resource *res, const char *id, char **ret_dir,
                    char **ret_workspace, struct cordon_error *err)
{
    char *dir = NULL, *ws = NULL;

    if (asprintf(&dir, "%s/%s", res->cfg.root, id) < 0) {
        dir = NULL;
        goto nomem;
    }
    if (ret_workspace != NULL && asprintf(&ws, "%s/workspace", dir) < 0)
        goto nomem;
    *ret_dir = dir;
    if (ret_workspace != NULL)
        *ret_workspace = ws;
    return 0;
nomem:
    free(dir);
    return tl_nomem(err, "state");
}

/*
 * Parse a state written by provision. The paths are derived from the root
 * and the id, and a "dir" that disagrees is refused: a damaged record must
 * never make us remove or run somewhere else.
 */
static int tl_state_parse(const struct cordon_resource *res, const char *json, bool full,
                          struct tl_state *ret, struct cordon_error *err)
{
    struct tl_state st = { 0 };
    enum cordon_spec_layout layout;
    const cJSON *item;
    uint64_t v;
    int r;

    r = cordon_json_parse_object("state", json, CORDON_STATE_MAX, &st.doc, err);
    if (r < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "execution_id");
    st.execution_id = cJSON_IsString(item) ? item->valuestring : NULL;
    r = cordon_execution_id_check("state.execution_id", st.execution_id, err);
    if (r < 0)
        goto out;
    r = tl_paths(res, st.execution_id, &st.dir, &st.workspace, err);
    if (r < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "dir");
    if (item != NULL && (!cJSON_IsString(item) || strcmp(item->valuestring, st.dir) != 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.dir: must be %s (the provider root and the execution id)",
                             st.dir);
        goto out;
    }
    if (!full)
        goto done;

    r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "uid"), "state.uid", 0,
                    0xfffffffeu, &v, err);
    if (r < 0)
        goto out;
    st.uid = (uid_t)v;
    r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "gid"), "state.gid", 0,
                    0xfffffffeu, &v, err);
    if (r < 0)
        goto out;
    st.gid = (gid_t)v;
    r = cordon_spec_layout_from_json(cJSON_GetObjectItemCaseSensitive(st.doc, "layout"),
                                     "state.layout", false, &layout, err);
    if (r < 0)
        goto out;
    st.code_layout = layout == CORDON_SPEC_LAYOUT_CODE;
    r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(st.doc, "resources"),
                           "state.resources", &st.res, err);
    if (r < 0)
        goto out;
    r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "expires_at_ms"),
                    "state.expires_at_ms", 1, (uint64_t)CORDON_JSON_INT_MAX, &st.expires_at_ms, err);
    if (r < 0)
        goto out;
    st.environment = cJSON_GetObjectItemCaseSensitive(st.doc, "environment");
    if (st.environment != NULL) {
        r = cordon_env_object_check(st.environment, "state.environment", err);
        if (r < 0)
            goto out;
    }
    /* A pooled uid is the one this execution holds, never another's. */
    if (res->cfg.pooled &&
        (r = cordon_uid_check_state(NULL, res->host->host_instance_id, st.execution_id, st.uid,
                                    st.gid, err)) < 0)
        goto out;
    /* The sandbox may be root only when nobody switches users. */
    if (res->cfg.switch_user && (st.uid == 0 || st.gid == 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.uid: %u:%u refused: the sandbox user must not be root",
                             (unsigned)st.uid, (unsigned)st.gid);
        goto out;
    }
done:
    *ret = st;
    memset(&st, 0, sizeof(st));
out:
    tl_state_clear(&st);
    return r;
}

static int tl_open_workspace(const struct tl_state *st, int *ret_fd, struct cordon_error *err)
{
    int fd = open(st->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "state.workspace: %s: %s (terminated?)", st->workspace,
                                strerror(errno));
    *ret_fd = fd;
    return 0;
}

/* ---- probe -------------------------------------------------------------- */

static const char *const tl_kinds[] = { "code_execution", NULL };
static const char *const tl_access_modes[] = { "snapshot", NULL };
static const char *const tl_probe_toolchains[] = { "python", "node", "go", "c++", NULL };
/* pids only holds when children run as a dedicated uid (RLIMIT_NPROC). */
static const char *const tl_limits_user[] = { "memory_bytes", "pids", "runtime_ms",
                                              "max_output_bytes", NULL };
static const char *const tl_limits_self[] = { "memory_bytes", "runtime_ms", "max_output_bytes",
                                              NULL };
/* disk_bytes as a whole only when each area is a tmpfs of that size. */
static const char *const tl_limits_area[] = { "memory_bytes", "disk_bytes", "pids", "runtime_ms",
                                              "max_output_bytes", NULL };

static void tl_area_mount(const char *dir, uint64_t disk_bytes);
static void tl_area_unmount(const char *dir);

/* Whether provision can make an area a tmpfs here: tried, not assumed. */
static bool tl_area_tmpfs_works(const struct tl_config *cfg)
{
    char dir[TL_ROOT_MAX + 32];
    struct statfs sfs;
    bool ok;

    if (geteuid() != 0)
        return false;
    snprintf(dir, sizeof(dir), "%s/.area-probe-XXXXXX", cfg->root);
    if (mkdtemp(dir) == NULL)
        return false;
    tl_area_mount(dir, 4096);
    ok = statfs(dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
    tl_area_unmount(dir);
    rmdir(dir);
    return ok;
}

static char *tl_mechanism_facts(const struct tl_config *cfg, bool area_tmpfs)
{
    cJSON *obj = cJSON_CreateObject();
    char run_as[32];
    char *text = NULL;

    if (cfg->pooled)
        snprintf(run_as, sizeof(run_as), "per-execution");
    else
        snprintf(run_as, sizeof(run_as), "%u:%u", (unsigned)cfg->uid, (unsigned)cfg->gid);
    if (obj != NULL && cJSON_AddNumberToObject(obj, "euid", (double)geteuid()) != NULL &&
        (!cfg->pooled || (cJSON_AddNumberToObject(obj, "uid_pool_base", CORDON_UID_BASE) != NULL &&
                          cJSON_AddNumberToObject(obj, "uid_pool_size", CORDON_UID_COUNT) != NULL)) &&
        cJSON_AddStringToObject(obj, "run_as", run_as) != NULL &&
        cJSON_AddBoolToObject(obj, "seccomp", cfg->seccomp) != NULL &&
        cJSON_AddStringToObject(obj, "root", cfg->root) != NULL &&
        cJSON_AddStringToObject(obj, "area", area_tmpfs ? "tmpfs" : "directory") != NULL &&
        (cfg->switch_user || !cfg->run_as_set ||
         cJSON_AddBoolToObject(obj, "run_as_ignored", true) != NULL))
        text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    return text;
}

/* Facts of an unavailable provider. */
static int tl_unavailable(const struct cordon_host_v1 *host, const char *reason, char **ret,
                          struct cordon_error *err)
{
    struct cordon_facts_parts parts = {
        .struct_size = sizeof(parts),
        .provider_id = TL_ID,
        .supported_kinds = tl_kinds,
        .available = false,
        .reason = reason,
        .safety_class = "trusted_local",
        .mechanism = "host_process",
        .workspace_access_modes = tl_access_modes,
        .limits_enforced = tl_limits_self,
    };

    return cordon_facts_compose_host(host, &parts, ret, err);
}

static int tl_probe(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                    char **ret_facts_json, struct cordon_error *err)
{
    struct cordon_resource *res = NULL;
    struct tl_config cfg = { 0 };
    struct cordon_error perr;
    char *observation = NULL, *mech = NULL, *out = NULL;
    bool area_tmpfs;
    int r;

    if (host == NULL || ret_facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "probe: host and ret_facts_json required");
    cordon_error_init(&perr);
    /* A config we cannot parse is an error; a root we cannot use is facts. */
    r = tl_config_parse(host, config_json, &cfg, err);
    if (r < 0)
        goto out;

    if (flags & CORDON_PROBE_AVAILABILITY) {
        cJSON *doc = cJSON_CreateObject();
        bool ok = tl_root_prepare(&cfg, &perr) == 0;

        if (doc == NULL || cJSON_AddStringToObject(doc, "provider_id", TL_ID) == NULL ||
            cJSON_AddBoolToObject(doc, "available", ok) == NULL ||
            cJSON_AddStringToObject(doc, "reason", ok ? "ready" : perr.message) == NULL)
            r = tl_nomem(err, "facts");
        else
            r = cordon_json_print_host(host, doc, &out, err);
        cJSON_Delete(doc);
        goto out;
    }

    /* Probing runs only our own observer, so it needs no allow_unsafe_local. */
    if (tl_resource_new(host, config_json, false, &res, &perr) < 0) {
        r = tl_unavailable(host, perr.message, &out, err);
        goto out;
    }
    {
        struct cordon_observe_opts oo = {
            .struct_size = sizeof(oo),
            .host = host,
            .provider = &tl_provider,
            .resource = res,
            .toolchains = tl_probe_toolchains,
        };
        if (cordon_observe_run(&oo, &observation, &perr) < 0) {
            char reason[600];

            snprintf(reason, sizeof(reason), "observation failed: %s", perr.message);
            r = tl_unavailable(host, reason, &out, err);
            goto out;
        }
    }
    area_tmpfs = cfg.switch_user && tl_area_tmpfs_works(&cfg);
    mech = tl_mechanism_facts(&cfg, area_tmpfs);
    if (mech == NULL) {
        r = tl_nomem(err, "facts");
        goto out;
    }
    {
        struct cordon_facts_parts parts = {
            .struct_size = sizeof(parts),
            .provider_id = TL_ID,
            .supported_kinds = tl_kinds,
            .available = true,
            .reason = "ready",
            .safety_class = "trusted_local",
            .mechanism = "host_process",
            .rootfs_read_only = false,
            .workspace_access_modes = tl_access_modes,
            .limits_enforced = area_tmpfs ? tl_limits_area
                               : cfg.switch_user ? tl_limits_user : tl_limits_self,
            .observation_json = observation,
            .mechanism_facts_json = mech,
        };
        r = cordon_facts_compose_host(host, &parts, &out, err);
    }
out:
    if (r == 0)
        *ret_facts_json = out;
    else if (out != NULL)
        host->free(out);
    free(mech);
    free(observation);
    tl_resource_free(res);
    tl_config_clear(&cfg);
    return r;
}

/* ---- provision ---------------------------------------------------------- */

/*
 * As root, an execution's area is a tmpfs of its own, sized disk_bytes:
 * the limit then holds for the whole workspace rather than per file, a
 * program filling it cannot fill the file system the root lives on, and
 * removing the area is one unmount. Where mounting is refused (no
 * privilege, a container without CAP_SYS_ADMIN) the area stays a plain
 * directory and disk_bytes is RLIMIT_FSIZE alone, as the man page says.
 */
static void tl_area_mount(const char *dir, uint64_t disk_bytes)
{
    char opts[96];

    if (geteuid() != 0)
        return;
    snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%u,mode=0711",
             (unsigned long long)(disk_bytes + TL_AREA_SLACK), TL_AREA_INODES);
    (void)mount("cordon-" TL_ID, dir, "tmpfs", MS_NOSUID | MS_NODEV, opts);
}

/* Detach the area's tmpfs if it has one; processes still in it keep it
 * alive until they are gone, nobody can reach it by path any more. */
static void tl_area_unmount(const char *dir)
{
    if (geteuid() == 0)
        (void)umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
}

static int tl_mkdir_owned(int dirfd, const char *name, bool give, uid_t uid, gid_t gid,
                          struct cordon_error *err)
{
    int fd, r = 0;

    if (mkdirat(dirfd, name, 0700) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: mkdir %s: %s", name,
                                strerror(errno));
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0755) != 0 || (give && fchown(fd, uid, gid) != 0))
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: setting up %s: %s", name,
                             strerror(errno));
    if (fd >= 0)
        close(fd);
    return r;
}

/*
 * The workspace beneath the execution's directory. Layout "code": the
 * workspace root and source/ stay root's, so the sandbox user can neither
 * write into source/ nor rename it away; build/, output/, logs/ are its.
 * Layout "host": the whole workspace is the sandbox user's.
 */
static int tl_make_workspace(int dir_fd, const struct tl_config *cfg, bool code,
                             struct cordon_error *err)
{
    static const char *const user_dirs[] = { "build", "output", "logs" };
    size_t i;
    int ws_fd, r;

    r = tl_mkdir_owned(dir_fd, "workspace", cfg->switch_user && !code, cfg->uid, cfg->gid, err);
    if (r < 0 || !code)
        return r;
    ws_fd = openat(dir_fd, "workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ws_fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: workspace: %s",
                                strerror(errno));
    r = tl_mkdir_owned(ws_fd, "source", false, 0, 0, err);
    for (i = 0; r == 0 && i < sizeof(user_dirs) / sizeof(user_dirs[0]); i++)
        r = tl_mkdir_owned(ws_fd, user_dirs[i], cfg->switch_user, cfg->uid, cfg->gid, err);
    close(ws_fd);
    return r;
}

static int tl_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                        struct cordon_error *err)
{
    struct cordon_spec spec;
    cJSON *state = NULL;
    struct cordon_limits limits;
    struct tl_config cfg;
    const char *id = NULL, *layout;
    char *dir = NULL, *ws = NULL;
    uint64_t expires_at_ms = 0;
    int root_fd = -1, dir_fd = -1, r;
    bool created = false, took_uid = false, code;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provision: resource and ret_state_json required");
    cordon_spec_init(&spec);
    /* The network is "none" in every spec the sdk reads, and even that is
     * not enforced here: the facts say network "host", so a caller that
     * needs isolation sees it is not given. */
    r = cordon_spec_parse(spec_json, &spec, err);
    if (r == 0 && spec.image != NULL)
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "image: " TL_ID " runs on the host and takes no image");
    if (r == 0)
        r = cordon_spec_deadline(&spec, cordon_now_wall_ms(), &expires_at_ms, err);
    if (r < 0)
        goto out;
    id = spec.execution_id;
    limits = spec.resources;
    code = spec.layout == CORDON_SPEC_LAYOUT_CODE;
    layout = cordon_spec_layout_name(spec.layout);

    r = tl_paths(res, id, &dir, &ws, err);
    if (r < 0)
        goto out;
    root_fd = open(res->cfg.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "root: %s: %s", res->cfg.root,
                             strerror(errno));
        goto out;
    }
    /* mkdirat is the existence check, so two provisions of one id cannot
     * both succeed; until the modes are set the directory is ours alone. */
    if (mkdirat(root_fd, id, 0700) != 0) {
        r = cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno,
                             "execution_id: %s: %s", dir,
                             errno == EEXIST ? "already exists" : strerror(errno));
        goto out;
    }
    created = true;
    cfg = res->cfg;
    if (cfg.pooled) {
        if ((r = cordon_uid_take(NULL, res->host->host_instance_id, id, &cfg.uid, err)) < 0)
            goto out;
        took_uid = true;
        cfg.gid = (gid_t)cfg.uid;
    }
    tl_area_mount(dir, limits.disk_bytes);
    /* 0711: the sandbox user may pass through but not list or change it. */
    dir_fd = openat(root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0 || fchmod(dir_fd, 0711) != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", dir, strerror(errno));
        goto out;
    }
    r = tl_make_workspace(dir_fd, &cfg, code, err);
    if (r < 0)
        goto out;
    /* Whose execution this is, so that list_executions (cordon gc) never
     * touches another host instance's areas under a shared root. */
    if (res->host->host_instance_id != NULL)
        r = cordon_fs_write_new(dir_fd, TL_HOST_MARK, res->host->host_instance_id,
                                strlen(res->host->host_instance_id), 0600, err);
    if (r < 0)
        goto out;
    state = cJSON_CreateObject();
    if (state == NULL || cJSON_AddStringToObject(state, "execution_id", id) == NULL ||
        cJSON_AddStringToObject(state, "dir", dir) == NULL ||
        cJSON_AddStringToObject(state, "workspace", ws) == NULL ||
        cJSON_AddNumberToObject(state, "uid", (double)cfg.uid) == NULL ||
        cJSON_AddNumberToObject(state, "gid", (double)cfg.gid) == NULL ||
        cJSON_AddStringToObject(state, "layout", layout) == NULL ||
        !cordon_limits_add(state, "resources", &limits) ||
        cJSON_AddNumberToObject(state, "expires_at_ms", (double)expires_at_ms) == NULL) {
        r = tl_nomem(err, "state");
        goto out;
    }
    if (!cJSON_AddItemToObject(state, "environment", cordon_env_to_json(&spec.environment))) {
        r = tl_nomem(err, "state");
        goto out;
    }
    r = cordon_json_print_host(res->host, state, ret_state_json, err);
out:
    if (dir_fd >= 0)
        close(dir_fd);
    if (r < 0 && created) {
        tl_area_unmount(dir);
        cordon_fs_remove_tree(root_fd, id, NULL);
    }
    if (r < 0 && took_uid)
        cordon_uid_give_back(NULL, res->host->host_instance_id, id, NULL);
    if (root_fd >= 0)
        close(root_fd);
    cJSON_Delete(state);
    cordon_spec_clear(&spec);
    free(dir);
    free(ws);
    return r;
}

/* ---- exec --------------------------------------------------------------- */

/* The environment being built: "NAME=VALUE" strings, a later NAME wins. */
struct tl_env {
    char **entries;     /* NULL-terminated, malloc'd */
    size_t n, cap;
    size_t bytes;
};

static void tl_env_clear(struct tl_env *env)
{
    size_t i;

    for (i = 0; i < env->n; i++)
        free(env->entries[i]);
    free(env->entries);
    memset(env, 0, sizeof(*env));
}

static int tl_env_set(struct tl_env *env, const char *name, const char *value,
                      struct cordon_error *err)
{
    size_t i, nlen = strlen(name);
    char *entry;

    if (asprintf(&entry, "%s=%s", name, value) < 0)
        return tl_nomem(err, "env");
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
            return tl_nomem(err, "env");
        }
        env->entries = grown;
        env->cap = cap;
    }
    env->entries[env->n++] = entry;
    env->entries[env->n] = NULL;
    return 0;
}

static int tl_env_add_object(struct tl_env *env, const cJSON *obj, struct cordon_error *err)
{
    const cJSON *item;
    int r = 0;

    cJSON_ArrayForEach(item, obj) {
        r = tl_env_set(env, item->string, item->valuestring, err);
        if (r < 0)
            break;
    }
    return r;
}

/* A request as read (the sdk's), and what exec makes of it here. */
struct tl_request {
    struct cordon_exec_request req;
    char *cwd;              /* absolute, malloc'd */
    uint64_t timeout_ms;    /* 0 = none */
    struct tl_env env;
};

static void tl_request_clear(struct tl_request *rq)
{
    cordon_exec_request_clear(&rq->req);
    free(rq->cwd);
    tl_env_clear(&rq->env);
    memset(rq, 0, sizeof(*rq));
}

static int tl_request_parse(const struct tl_state *st, int ws_fd, const char *json,
                            struct tl_request *ret, struct cordon_error *err)
{
    struct tl_request rq = { 0 };
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
        r = tl_nomem(err, "cwd");
        goto out;
    }
    rq.timeout_ms = rq.req.timeout_ms;

    /* The spec's environment, then the request's, then workspace paths. */
    r = tl_env_set(&rq.env, "PATH", TL_DEFAULT_PATH, err);
    if (r == 0 && st->environment != NULL)
        r = tl_env_add_object(&rq.env, st->environment, err);
    for (size_t i = 0; r == 0 && i < rq.req.env.n; i++)
        r = tl_env_set(&rq.env, rq.req.env.vars[i].name, rq.req.env.vars[i].value, err);
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
            r = tl_nomem(err, field);
            break;
        }
        r = tl_env_set(&rq.env, v->name, value, err);
        free(value);
    }
    if (r < 0)
        goto out;
    *ret = rq;
    memset(&rq, 0, sizeof(rq));
out:
    if (fd >= 0)
        close(fd);
    tl_request_clear(&rq);
    return r;
}

/* Raw syscalls in the child: async-signal-safe, and they touch only this
 * process's credentials, without glibc's all-threads setxid machinery. */
static long tl_sys_prlimit(int resource, const struct rlimit *set, struct rlimit *old)
{
    return syscall(SYS_prlimit64, 0, resource, set, old);
}

/*
 * In the child, right before execve: limits, then (as root) the bounding
 * set, groups, gid and uid, then no_new_privs and the seccomp filter.
 * Async-signal-safe: no allocation, no libc state, raw syscalls only.
 */
static int tl_child_setup(void *arg)
{
    const struct tl_child *c = arg;
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
    int i;

    for (i = 0; i < c->n_limits; i++) {
        struct rlimit old, set;
        rlim_t v = c->limits[i].value;

        if (tl_sys_prlimit(c->limits[i].resource, NULL, &old) != 0)
            return errno;
        /* Without privilege a hard limit can only go down. */
        if (!c->switch_user && old.rlim_max != RLIM_INFINITY && v > old.rlim_max)
            v = old.rlim_max;
        set.rlim_cur = set.rlim_max = v;
        if (tl_sys_prlimit(c->limits[i].resource, &set, NULL) != 0)
            return errno;
    }
    if (c->switch_user) {
        for (i = 0; i <= c->cap_last; i++)
            if (syscall(SYS_prctl, PR_CAPBSET_DROP, (unsigned long)i, 0UL, 0UL, 0UL) != 0 &&
                errno != EINVAL)
                return errno;
#ifdef SYS_setresuid32
        if (syscall(SYS_setgroups32, 0, NULL) != 0 ||
            syscall(SYS_setresgid32, c->gid, c->gid, c->gid) != 0 ||
            syscall(SYS_setresuid32, c->uid, c->uid, c->uid) != 0)
            return errno;
#else
        if (syscall(SYS_setgroups, 0, NULL) != 0 ||
            syscall(SYS_setresgid, c->gid, c->gid, c->gid) != 0 ||
            syscall(SYS_setresuid, c->uid, c->uid, c->uid) != 0)
            return errno;
#endif
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

static void tl_child_prepare(const struct cordon_resource *res, const struct tl_state *st,
                             struct tl_child *c)
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
    c->cap_last = res->cap_last;
    c->prog = res->prog.filter != NULL ? &res->prog : NULL;
}

static int tl_result(const struct cordon_host_v1 *host, const struct cordon_exec_outcome *o,
                     char **ret, struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    bool ok = doc != NULL;
    int r;

    switch (o->status) {
    case CORDON_RUN_EXITED:
        ok = ok && cJSON_AddStringToObject(doc, "status", "exited") &&
             cJSON_AddNumberToObject(doc, "exit_code", o->exit_code);
        break;
    case CORDON_RUN_SIGNALED:
        ok = ok && cJSON_AddStringToObject(doc, "status", "signaled") &&
             cJSON_AddNumberToObject(doc, "signal", o->signal);
        break;
    case CORDON_RUN_CANCELLED:
        ok = ok && cJSON_AddStringToObject(doc, "status", "cancelled");
        break;
    case CORDON_RUN_TIMEOUT:
        /* Our backstop fired before the host's clock: we killed it. */
        ok = ok && cJSON_AddStringToObject(doc, "status", "signaled") &&
             cJSON_AddNumberToObject(doc, "signal", SIGKILL) &&
             cJSON_AddBoolToObject(doc, "backstop_timeout", true);
        break;
    default:
        cJSON_Delete(doc);
        return cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec: the runner ended with status %s",
                                cordon_run_status_name(o->status));
    }
    r = ok ? cordon_json_print_host(host, doc, ret, err) : tl_nomem(err, "result");
    cJSON_Delete(doc);
    return r;
}

static int tl_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                   const struct cordon_exec_io *io, char **ret_result_json,
                   struct cordon_error *err)
{
    struct tl_state st = { 0 };
    struct tl_request rq = { 0 };
    struct tl_child child;
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome outcome = { 0 };
    struct cordon_relay *relay = NULL;
    uint64_t now, remaining, timeout;
    int ws_fd = -1, null_out = -1, stdin_fd = -1, r;
    bool ran = false;

    if (res == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "exec: resource, io (struct_size >= %zu) and ret_result_json "
                                "required", (size_t)CORDON_EXEC_IO_V1_0_SIZE);
    r = tl_state_parse(res, state_json, true, &st, err);
    if (r < 0)
        goto out;
    r = tl_open_workspace(&st, &ws_fd, err);
    if (r < 0)
        goto out;
    r = tl_request_parse(&st, ws_fd, request_json, &rq, err);
    if (r < 0)
        goto out;

    /* A backstop only: the host keeps the clock and fires cancel_fd. */
    now = cordon_now_wall_ms();
    if (st.expires_at_ms <= now) {
        r = cordon_error_set(err, CORDON_E_TIMEOUT, 0,
                             "expires_at_ms: the execution expired %llu ms ago",
                             (unsigned long long)(now - st.expires_at_ms));
        goto out;
    }
    remaining = st.expires_at_ms - now;
    timeout = remaining;
    if (rq.timeout_ms != 0 && rq.timeout_ms + TL_BACKSTOP_SLACK_MS < remaining)
        timeout = rq.timeout_ms + TL_BACKSTOP_SLACK_MS;

    /* A host that passes no descriptor gets the stream discarded. */
    if (io->stdout_fd < 0 || io->stderr_fd < 0) {
        null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null_out < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "exec: /dev/null: %s", strerror(errno));
            goto out;
        }
    }
    /* A terminal or a directory as stdin is relayed, never handed over. */
    if (io->stdin_fd >= 0 && (r = cordon_relay_open(io->stdin_fd, 0, &stdin_fd, &relay, err)) < 0)
        goto out;
    tl_child_prepare(res, &st, &child);
    cordon_runner_opts_init(&opts);
    opts.argv = (const char *const *)rq.req.argv;
    opts.envp = (const char *const *)rq.env.entries;
    opts.cwd = rq.cwd;
    opts.stdin_fd = stdin_fd;
    opts.stdout_fd = io->stdout_fd >= 0 ? io->stdout_fd : null_out;
    opts.stderr_fd = io->stderr_fd >= 0 ? io->stderr_fd : null_out;
    opts.timeout_ms = timeout;
    opts.grace_ms = 0;
    opts.cancel_fd = io->cancel_fd;
    opts.child_setup = tl_child_setup;
    opts.child_setup_arg = &child;
    ran = true;
    r = cordon_runner_run(&opts, &outcome, err);
    cordon_relay_close(relay);   /* the process ended: so does its stdin */
    relay = NULL;
    if (r < 0)
        goto out;
    r = tl_result(res->host, &outcome, ret_result_json, err);
out:
    cordon_relay_close(relay);
    /* setsid() escapes the runner's group kill; look for what stayed. */
    if (ran)
        tl_sweep(st.dir, st.uid);
    cordon_exec_outcome_clear(&outcome);
    if (null_out >= 0)
        close(null_out);
    if (ws_fd >= 0)
        close(ws_fd);
    tl_request_clear(&rq);
    tl_state_clear(&st);
    return r;
}

/* ---- tar in and out ----------------------------------------------------- */

/* The execution's workspace, for the sdk's four file slots; who owns what
 * lands in it: not root, everything stays the invoking user's (see the
 * man page). */
static int tl_workspace(struct cordon_resource *res, const char *state_json,
                        struct cordon_workspace *ret, struct cordon_error *err)
{
    struct tl_state st = { 0 };
    int r = tl_state_parse(res, state_json, true, &st, err);

    if (r == 0)
        r = tl_open_workspace(&st, &ret->fd, err);
    if (r == 0) {
        ret->owner = (struct cordon_workspace_owner){ st.code_layout, geteuid() == 0, st.uid,
                                                      st.gid };
        ret->import_max_bytes = st.res.disk_bytes;
        ret->export_max_bytes = st.res.disk_bytes;
    }
    tl_state_clear(&st);
    return r;
}

CORDON_WORKSPACE_SLOTS(tl, tl_workspace)

/* ---- terminate and reclaim ---------------------------------------------- */

/* Kill what is left in the area and remove it; missing is success. The
 * execution's uid goes back to the pool only once nothing runs as it. */
static int tl_destroy(const struct cordon_resource *res, const char *dir, const char *id,
                      uid_t uid, struct cordon_error *err)
{
    const char *host = res->host->host_instance_id;
    uid_t held;
    int r;

    if (cordon_uid_held(NULL, host, id, &held, NULL) == 1)
        uid = held;
    tl_sweep(dir, uid);
    tl_area_unmount(dir);
    r = cordon_fs_remove_tree_path(dir, err);
    if (r == 0 && cordon_uid_in_pool(uid))
        r = cordon_uid_give_back(NULL, host, id, err);
    return r;
}

static int tl_terminate(struct cordon_resource *res, const char *state_json,
                        struct cordon_error *err)
{
    struct tl_state st = { 0 };
    struct cordon_error ignored;
    uint64_t uid;
    int r;

    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "terminate: resource required");
    uid = res->cfg.uid;
    /* Only the id is needed: terminate works from every state. The uid the
     * execution ran as, when the state has it, finds what it left behind. */
    r = tl_state_parse(res, state_json, false, &st, err);
    if (r == 0) {
        cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "uid"), "state.uid", 0,
                    0xfffffffeu, &uid, &ignored);
        r = tl_destroy(res, st.dir, st.execution_id, (uid_t)uid, err);
    }
    tl_state_clear(&st);
    return r;
}

static int tl_reclaim(struct cordon_resource *res, const char *execution_id,
                      struct cordon_error *err)
{
    char *dir = NULL;
    int r;

    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "reclaim: resource required");
    r = cordon_execution_id_check("execution_id", execution_id, err);
    if (r == 0)
        r = tl_paths(res, execution_id, &dir, NULL, err);
    if (r == 0)
        r = tl_destroy(res, dir, execution_id, res->cfg.uid, err);
    free(dir);
    return r;
}

static int tl_list_executions(struct cordon_resource *res, char **ret_ids_json,
                              struct cordon_error *err)
{
    const char *me = res != NULL ? res->host->host_instance_id : NULL;
    cJSON *ids = cJSON_CreateArray();
    struct dirent *de;
    DIR *dir;
    int r = 0;

    if (res == NULL || ids == NULL) {
        cJSON_Delete(ids);
        return cordon_error_set(err, CORDON_E_INVALID, 0, "list_executions: resource required");
    }
    dir = opendir(res->cfg.root);
    while (dir != NULL && (de = readdir(dir)) != NULL) {
        char *mark = NULL;
        size_t len = 0;
        int dfd;

        if (cordon_execution_id_check("execution_id", de->d_name, NULL) < 0)
            continue;
        dfd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            continue;
        if (cordon_fs_read_file(dfd, TL_HOST_MARK, 256, &mark, &len, NULL) == 0 && me != NULL &&
            strcmp(mark, me) == 0)
            cJSON_AddItemToArray(ids, cJSON_CreateString(de->d_name));
        free(mark);
        close(dfd);
    }
    if (dir != NULL)
        closedir(dir);
    r = cordon_json_print_host(res->host, ids, ret_ids_json, err);
    cJSON_Delete(ids);
    return r;
}

/* ---- entry point -------------------------------------------------------- */

static const struct cordon_provider_v1 tl_provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = TL_ID,
    .version = PACKAGE_VERSION,
    .supported_kinds = tl_kinds,
    .probe = tl_probe,
    .ensure = tl_ensure,
    .health_check = tl_health_check,
    .release = tl_release,
    .provision = tl_provision,
    .exec = tl_exec,
    .import_tar = tl_import_tar,
    .export_tar = tl_export_tar,
    .export_files = tl_export_files,
    .terminate = tl_terminate,
    .reclaim = tl_reclaim,
    .list_executions = tl_list_executions,
    .import_files = tl_import_files,
};

CORDON_PROVIDER_DEFINE(tl_provider)
