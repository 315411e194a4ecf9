/*
 * runc provider: what its files share. runc.c holds the vtable (config,
 * resource, tar in and out, terminate, probe); provision.c makes one
 * execution's container; runtime.c runs the runtime binary; container.c
 * reaches, enters and destroys a running container; exec.c runs commands
 * in it; config.c writes config.json;
 * seccomp.c the seccomp profile inside it; rootfs.c the pinned image
 * cache; cgroup.c reads limits back and removes cgroup directories.
 * Nothing here is exported from runc.so (-fvisibility=hidden).
 *
 * Functions and variables shared across the files are runc__NAME
 * (declared here), types shared here runc_NAME; what one file keeps to
 * itself is static and unprefixed. A vtable operation is op_SLOT: static
 * beside the vtable in runc.c, runc__op_SLOT when another file holds it.
 */
#ifndef CORDON_PLUGIN_RUNC_H
#define CORDON_PLUGIN_RUNC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/filter.h>

#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/uid.h>

#define RUNC_ID "runc"
#define RUNC_INIT_IN_CONTAINER "/run/cordon-init"
#define RUNC_CGROUP_PREFIX "/cordon-"   /* one top-level cgroup per execution: no shared parent left behind */
#define RUNC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define RUNC_CPU_PERIOD_US 100000u

/* A parsed image reference: "/abs/rootfs.tar@sha256:<64 hex>", or the bare
 * path when unpinned references are allowed (digest then computed). */
struct runc_image {
    char *tar_path;          /* malloc'd */
    char digest[65];         /* lowercase hex; "" when unpinned */
    bool pinned;
};

#define RUNC_RUNTIME_ENV_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define RUNC_PATH_MAX 1024u                   /* host paths we build: state dir, bundle */
#define RUNC_LOG_MAX (64u << 10)              /* what we read of the runtime's messages */

/* The parsed provider config. */
struct runc_config {
    char *runtime_path;    /* as configured, or NULL */
    char *root;            /* the runtime's --root */
    char *image;           /* default image reference, or NULL */
    uid_t uid;             /* config.user; with pooled, only the facts' fallback */
    gid_t gid;
    bool pooled;           /* no config.user: each execution takes a uid of the pool */
    bool no_agent;         /* config.exec_agent false: exec never uses the resident agent */
    bool allow_unpinned;
};

/* A classic BPF program (the seccomp filter), malloc'd. */

struct cordon_resource {
    const struct cordon_host_v1 *host;
    struct runc_config cfg;
    char *runtime;               /* absolute path of the runtime binary */
    char runtime_name[32];       /* "runc", "crun", "runsc" from its --version */
    char runtime_version[64];
    char spec_version[32];
    char *base;                  /* <state_dir>/providers/runc */
    int cgroup_version;
    bool memsw;
    bool exec_setns;             /* exec enters the container itself (runc, crun), else `exec` */
    struct runc_bpf_cache *seccomp; /* the profile compiled on first use, for exec_setns */
};

/* One execution, parsed back from its state JSON. */
struct runc_state {
    cJSON *doc;                  /* owns the strings below */
    const char *id;
    char *bundle;                /* <base>/bundles/<id>, malloc'd */
    pid_t pid;                   /* the container's init; 0 when unknown */
    uid_t uid;
    gid_t gid;
    bool code_layout;
    struct cordon_limits limits;
    uint64_t expires_at_ms;
    const cJSON *environment;    /* object of strings or NULL */
    bool agent;                  /* the init is cordon-init --agent: exec goes through it */
};

/* ---- runc.c: shared helpers -------------------------------------------------- */

int runc__nomem(struct cordon_error *err, const char *what);
/* bytes random bytes as hex into buf (2 * bytes + 1, bytes <= 16). */
int runc__random_hex(char *buf, size_t bytes, struct cordon_error *err);

/* An absolute, clean path: no "//", "." or ".." component, no trailing
 * '/', no control characters, at most RUNC_PATH_MAX bytes, not "/". */
int runc__check_abs_path(const char *field, const char *path, struct cordon_error *err);

/* mkdir -p of an absolute host path (a host setting, not sandbox input):
 * missing parents 0755, the last directory mode. */
int runc__mkdir_p(const char *field, const char *path, mode_t mode, struct cordon_error *err);

/* <base>/bundles/<id> (malloc'd), NULL when out of memory. */
char *runc__bundle_path(const struct cordon_resource *res, const char *id);

/* Parse a state written by provision; full also reads the limits, the
 * user, the layout and the deadline. Clear with runc__state_clear. */
int runc__state_parse(const struct cordon_resource *res, const char *json, bool full,
                      struct runc_state *ret, struct cordon_error *err);
void runc__state_clear(struct runc_state *st);

/* ---- runtime.c ----------------------------------------------------------------- */

/* What one runtime command printed. */
struct runc_cmd_result {
    int exit_code;               /* -1 when it did not exit by itself */
    char *out;                   /* NUL-terminated, malloc'd */
    char *errtext;
};
void runc__cmd_result_clear(struct runc_cmd_result *c);

bool runc__executable(const char *path);
/* runtime_path, else /usr/bin/runc, the host's PATH, the sbin fallbacks. */
int runc__runtime_find(const struct runc_config *cfg, char **ret, struct cordon_error *err);
/* Fill res->runtime_name, runtime_version, spec_version from --version
 * (cached in <base>/runtime-version for the same binary; base must exist). */
int runc__runtime_version(struct cordon_resource *res, struct cordon_error *err);
/* runtime --root R --log-format json ARGS... (NULL-terminated, at most
 * 10); 0 when it ran: read ret->exit_code. */
int runc__runtime_cmd(const struct cordon_resource *res, const char *const *args,
                      struct runc_cmd_result *ret, struct cordon_error *err);
/* The message of the last JSON log line, else the last line (<= 300 bytes). */
void runc__cmd_message(const char *text, char *buf, size_t size);
/* The init pid of a container the runtime knows, or 0. */
pid_t runc__runtime_pid(const struct cordon_resource *res, const char *id);

/* ---- container.c --------------------------------------------------------------- */

/* A pidfd of the execution's init, checked to be in its cgroup. */
int runc__init_pin(const struct cordon_resource *res, const char *id, pid_t pid, int *ret_fd,
                   struct cordon_error *err);
/* /proc/<pid>/root as an O_PATH directory fd, pid still pidfd's after. */
int runc__init_root(int pidfd, pid_t pid, const char *id, int *ret_fd, struct cordon_error *err);
/* SIGKILL the init of execution id (its pid namespace dies with it) and
 * wait, thawing the execution's cgroup while it waits; false if it did
 * not die. */
bool runc__init_kill(const struct cordon_resource *res, const char *id, int pidfd);
/* Bring lo up in the container's network namespace. */
int runc__lo_up(int pidfd, pid_t pid, struct cordon_error *err);

/* What the entering child reports into shared memory when a step fails. */
struct runc_enter_report {
    int step;                    /* 0: no failure reported */
    int errnum;
};

#define RUNC_ENTER_CGROUPS_MAX 32u
#define RUNC_CGROUP_FILE_MAX 384u

/* Where a process joins the execution's cgroups: a cgroup2 directory
 * (clone3 CLONE_INTO_CGROUP) and the v1 "tasks" files, to which a
 * single-threaded process writes "0" (moving only the calling thread
 * spares the kernel the global lock, and its RCU grace period, that a
 * cgroup.procs write takes). */
struct runc_cgroup_join {
    char tasks[RUNC_ENTER_CGROUPS_MAX][RUNC_CGROUP_FILE_MAX];
    size_t n_tasks;
    char dir2[RUNC_CGROUP_FILE_MAX];     /* "" when there is no cgroup2 hierarchy */
};

/*
 * Everything needed to start a process inside a running container without
 * the runtime (exec's path when exec_setns), prepared before the runner
 * forks: the child only reads it and makes raw system calls. Opened with
 * runc__enter_open, which fills every field but argv, envp and cwd (the
 * caller's, borrowed); closed with runc__enter_close.
 */
struct runc_enter {
    pid_t pid;                           /* the init's host pid */
    char ns_path[48];                    /* /proc/<pid>/ns/pid */
    dev_t ns_dev;
    ino_t ns_ino;
    int ns_fd;                           /* ours: keeps that namespace and its inode alive */
    struct runc_cgroup_join cgroups;     /* what to join */
    uid_t uid;
    gid_t gid;
    long max_fd;                         /* close loop bound without close_range */
    unsigned long arg_start, arg_end;    /* our argv area, overwritten in the child */
    struct sock_fprog seccomp;           /* borrowed from the resource */
    char *const *argv;                   /* cordon-init --exec ARGV, borrowed */
    char *const *envp;                   /* borrowed */
    const char *cwd;                     /* absolute inside the container, borrowed */
    struct runc_enter_report *report;    /* MAP_SHARED: survives the child */
};

/* Prepare e for the pinned init (pidfd of st->pid). */
int runc__enter_open(const struct cordon_resource *res, const struct runc_state *st, int pidfd,
                     struct runc_enter *ret, struct cordon_error *err);
void runc__enter_close(struct runc_enter *e);
/* The runner's child_setup (arg: struct runc_enter *). Never returns 0:
 * it ends as the relay of the command's exit, or returns an errno. */
int runc__enter_child(void *arg);
/* Turn a failed run into the child's own words (r: the runner's code). */
int runc__enter_error(const struct runc_enter *e, const char *id, int r,
                      struct cordon_error *err);

/* Everything of one execution; already gone is success. pid 0: ask the runtime. */
int runc__destroy(const struct cordon_resource *res, const char *id, pid_t pid,
                  struct cordon_error *err);
/* /workspace beneath the container's root fd. */
int runc__workspace_open(int root_fd, int *ret_fd, struct cordon_error *err);
/* The workspace of a running execution from its state. */
int runc__state_workspace(const struct cordon_resource *res, const struct runc_state *st,
                          int *ret_fd, struct cordon_error *err);
/* Layout "code": source/ root's; build/ output/ logs/ the user's. */
int runc__workspace_layout(int ws_fd, uid_t uid, gid_t gid, struct cordon_error *err);

/* ---- provision.c ---------------------------------------------------------- */

/* The vtable's provision: the container made, started and checked. */
int runc__op_provision(struct cordon_resource *res, const char *spec_json,
                       char **ret_state_json, struct cordon_error *err);

/* ---- exec.c ------------------------------------------------------------------ */

/* Whether provision starts the resident agent: only where exec enters the
 * container's namespaces itself (runc, crun), and the config allows it. */
bool runc__agent_wanted(const struct cordon_resource *res);

/* The vtable's exec. */
int runc__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                  const struct cordon_exec_io *io, char **ret_result_json, struct cordon_error *err);

/* ---- config.c -------------------------------------------------------------- */

/* What config.json is built from; every pointer is borrowed. */
struct runc_spec_in {
    const char *execution_id;
    const char *host_instance_id;    /* NULL: no host annotation */
    const char *rootfs;              /* absolute host path, mounted read-only */
    const char *init_path;           /* host path of cordon-init */
    uid_t uid;
    gid_t gid;
    bool code_layout;                /* /workspace root-owned (true) or the user's */
    bool limit_swap;                 /* memory.swap = memory.limit (needs memsw) */
    const struct cordon_limits *limits;
    uint64_t init_deadline_ms;       /* cordon-init --deadline-ms */
    bool agent;                      /* and --agent */
};

/* The cgroupsPath of an execution: RUNC_CGROUP_PREFIX "<id>" into buf. */
void runc__cgroup_path(const char *execution_id, char *buf, size_t size);

/* One rlimit of the container's processes (soft = hard = value). */
struct runc_rlimit {
    int resource;                /* RLIMIT_* */
    const char *name;            /* as config.json spells it; NULL ends the table */
    uint64_t value;
};
extern const struct runc_rlimit runc__rlimits[];
/* l->value, or the calling process's hard limit when that is lower. */
uint64_t runc__rlimit_value(const struct runc_rlimit *l);

/* CPU quota in microseconds per RUNC_CPU_PERIOD_US for cpus (at least 1000). */
uint64_t runc__cpu_quota_us(double cpus);

/* config.json as text (malloc'd). */
int runc__spec_build(const struct runc_spec_in *in, char **ret_json, struct cordon_error *err);

/* ---- seccomp.c ------------------------------------------------------------- */

/* The OCI linux.seccomp object ("Seccomp profile" in cordon-provider-runc(7))
 * for the running architecture (names it lacks are left out). *ret is a new cJSON object. */
int runc__seccomp_profile(cJSON **ret, struct cordon_error *err);

/* For the facts: how many syscalls the profile refuses outright on this
 * architecture, or -1 when libseccomp cannot say. */
int runc__seccomp_denied_count(void);

/* The same profile compiled for this architecture, as the runtime
 * compiles it. Clear with runc__seccomp_bpf_clear. */
int runc__seccomp_bpf(struct sock_fprog *ret, struct cordon_error *err);
void runc__seccomp_bpf_clear(struct sock_fprog *bpf);

/* The compiled profile of one resource, built on the first exec that
 * enters a container by setns: compiling it costs libseccomp a
 * millisecond, which an exec through the agent never needs to pay. */
struct runc_bpf_cache;
int runc__bpf_cache_new(struct runc_bpf_cache **ret, struct cordon_error *err);
void runc__bpf_cache_free(struct runc_bpf_cache *c);
/* The filter (built now if it was not yet; thread-safe). *ret borrows the
 * cache's program, valid until runc__bpf_cache_free. */
int runc__bpf_cache_get(struct runc_bpf_cache *c, struct sock_fprog *ret,
                        struct cordon_error *err);

/* ---- rootfs.c -------------------------------------------------------------- */

/* Parse ref (see struct runc_image). allow_unpinned admits a bare path. */
int runc__image_parse(const char *ref, bool allow_unpinned, struct runc_image *ret,
                      struct cordon_error *err);
void runc__image_clear(struct runc_image *img);

/* Cheap: is the tarball there (a readable regular file), and, when the
 * cache already holds its digest, does its size still match what was
 * unpacked? Never hashes. ret_cached tells whether the cache holds it. */
int runc__image_check(const char *base, const struct runc_image *img, bool *ret_cached,
                      struct cordon_error *err);

/*
 * The read-only root filesystem for img under base/rootfs/<sha256>/,
 * unpacked once (flock per digest; published by rename of a temp dir)
 * through the sdk's tar checks with CORDON_TAR_ROOTFS, its digest verified
 * while unpacking. An unpinned image is hashed first to find its key.
 * ret_path and ret_digest (65 bytes) are optional; ret_path is malloc'd.
 */
int runc__rootfs_ensure(const char *base, const struct runc_image *img, char **ret_path,
                        char *ret_digest, struct cordon_error *err);

/* ---- cgroup.c -------------------------------------------------------------- */

/* 1 or 2 (unified), from the filesystem mounted at /sys/fs/cgroup. */
int runc__cgroup_version(void);

/* Whether cgroup v1 memory has swap accounting (memory.memsw.*); always
 * true on v2. */
bool runc__cgroup_has_memsw(int version);

/* Read back every limit of the execution from its cgroup files and check
 * that pid is a member; CORDON_E_UNSAFE naming the first limit that is
 * missing or differs. */
int runc__cgroup_verify(int version, const char *execution_id, pid_t pid,
                        const struct cordon_limits *limits, bool swap, struct cordon_error *err);

/* The cgroup's count of OOM kills (0 when it cannot be read). */
uint64_t runc__cgroup_oom_kills(int version, const char *execution_id);

/* True when pid's cgroup (pids, or the unified one) is the execution's. */
bool runc__cgroup_holds(int version, const char *execution_id, pid_t pid);

/* Remove the execution's cgroup directories in every hierarchy; missing
 * ones are success; busy ones are retried for up to timeout_ms. */
int runc__cgroup_remove(int version, const char *execution_id, unsigned timeout_ms,
                        struct cordon_error *err);

/* The execution's cgroup in every hierarchy that has one; CORDON_E_UNSAFE
 * unless they are as many as the hierarchies in which pid is a member of it. */
int runc__cgroup_join_files(int version, const char *execution_id, pid_t pid,
                            struct runc_cgroup_join *ret, struct cordon_error *err);

/* Thaw the execution's cgroup and SIGCONT each of its processes: what was
 * frozen or stopped from the host side can then die of SIGKILL. Missing
 * files are nothing to do. */
#define RUNC_THAW_PROCS_MAX (64u << 10)   /* the cgroup.procs read: 8000 pids and more */
void runc__cgroup_thaw(int version, const char *execution_id);

#endif
