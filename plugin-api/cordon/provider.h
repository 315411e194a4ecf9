/*
 * cordon provider ABI, major 1.
 *
 * A provider is one shared object that exports exactly one symbol,
 * cordon_provider_init_v1 (write it with CORDON_PROVIDER_DEFINE). The host
 * calls it once, checks the vtable it hands back, and never unloads the
 * object. Everything else crosses as:
 *   - opaque handles (struct cordon_resource),
 *   - UTF-8 JSON text (facts, specs, requests, results, provider state),
 *   - file descriptors (stdio of a sandboxed process, tar streams).
 * No cJSON, libarchive or libgit2 type ever crosses this boundary.
 *
 * The documents named in these headers (provider-abi.md, provider-authoring.md,
 * json.md, observation.md) are installed in cordon's documentation directory
 * (share/doc/cordon).
 *
 * Compatibility rules (see provider-abi.md):
 *   - Every struct that crosses starts with abi_version and struct_size.
 *   - Within a major, structs only grow at the end; nothing is reordered,
 *     no signature changes. An optional slot that is NULL means unsupported.
 *   - The host accepts a provider of its own major whose minor is not newer
 *     than its own, and whose struct_size lies between the 1.0 size and the
 *     host's sizeof.
 *
 * Ownership: every argument is borrowed for the duration of the call.
 * Output parameters are named ret_*, come last, and are written only when
 * the call returns 0. Strings handed back to the host (facts, state,
 * results) are allocated with host->alloc; the host frees them.
 *
 * Threads: init runs once per host context that loads the provider (see
 * CORDON_PROVIDER_DEFINE). Different executions may be driven from
 * different threads at the same time; calls on one execution are serialised
 * by the host. A provider never calls exit or abort, never installs signal
 * handlers, never changes the process's cwd, umask or environment, reaps
 * every child it starts, and opens every fd close-on-exec.
 */
#ifndef CORDON_PROVIDER_H
#define CORDON_PROVIDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <cordon/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of these headers: major << 16 | minor. */
#define CORDON_ABI_MAJOR 1
#define CORDON_ABI_MINOR 3
#define CORDON_ABI_VERSION ((uint32_t)((CORDON_ABI_MAJOR << 16) | CORDON_ABI_MINOR))
#define CORDON_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define CORDON_ABI_MINOR_OF(v) ((uint32_t)(v) & 0xffffu)

/* Marks a symbol as exported from a library or provider built with
 * -fvisibility=hidden. */
#if defined(__GNUC__)
#define CORDON_EXTERN __attribute__((visibility("default")))
#else
#define CORDON_EXTERN
#endif

/* Log levels for cordon_host_v1.log. Fixed values. */
enum cordon_log_level {
    CORDON_LOG_ERROR = 0,
    CORDON_LOG_WARNING = 1,
    CORDON_LOG_INFO = 2,
    CORDON_LOG_DEBUG = 3,
};

/*
 * Services the host offers a provider. Owned by the host and valid, with
 * every string it points to, for the life of the process: the host never
 * changes or frees a table it has passed. A process whose contexts differ
 * in state_dir, paths or instance id passes one table per context, so use
 * the table each probe and ensure receives. Append-only: test a member
 * added after 1.0 with CORDON_HOST_HAS(host, member) before touching it.
 */
struct cordon_host_v1 {
    uint32_t abi_version;   /* CORDON_ABI_VERSION of the host */
    uint32_t struct_size;   /* sizeof(struct cordon_host_v1) of the host */

    /* Allocator for every buffer handed back to the host. Never NULL. */
    void *(*alloc)(size_t size);
    void (*free)(void *ptr);

    /* Diagnostic log; msg is borrowed. May be called from any thread. */
    void (*log)(enum cordon_log_level level, const char *provider_id, const char *msg);

    /* Absolute path of the static observer program (cordon-observe). */
    const char *observer_path;
    /* Absolute path of the static reaping init, cordon-init. Three forms
     * (provider-authoring.md §4.6): "--deadline-ms N", the sandbox's first
     * process, which reaps orphans and exits after N ms (as PID 1, taking
     * its pid namespace with it); "--deadline-ms N --agent", the same and also the resident
     * agent that runs the host's commands (<cordon/sdk/agent.h>); and
     * "--exec PROGRAM [ARG...]", a wrapper that runs PROGRAM as a process
     * group leader, kills the group when it ends, and ends as it did. */
    const char *init_path;
    /* Identifies this host installation: 32 lowercase hex digits, the
     * same for as long as its state directory lives. Providers label every
     * sandbox object with it (org.cordon.host). */
    const char *host_instance_id;
    /* The host's state directory, absolute; other host processes may use it
     * at the same time. A provider keeps its files (caches, per-execution
     * files named by execution id, removed by terminate and reclaim) under
     * <state_dir>/providers/<provider_id>/, which it creates, and nowhere
     * else in it (provider-authoring.md §4.5). */
    const char *state_dir;
};

/* True when the host's services table is new enough to carry member. */
#define CORDON_HOST_HAS(host, member)                                         \
    ((host) != NULL &&                                                        \
     (host)->struct_size >= offsetof(struct cordon_host_v1, member) +         \
                                sizeof(((struct cordon_host_v1 *)0)->member))

/* A bound provider resource (daemon connection, verified runtime). Opaque;
 * created by ensure, destroyed by release. */
struct cordon_resource;

/*
 * The stdio and cancellation of one exec. Every fd belongs to the host and
 * is borrowed for the call: the provider neither closes them nor keeps them
 * after it returns.
 */
struct cordon_exec_io {
    uint32_t abi_version;
    uint32_t struct_size;
    int stdin_fd;    /* read by the sandboxed process; -1 means /dev/null */
    int stdout_fd;   /* written by it */
    int stderr_fd;   /* written by it */
    /* Becomes readable when the host decides the process must stop
     * (timeout, output budget, caller's cancel). The provider then kills
     * the whole process tree, reaps it, and returns with "status":
     * "cancelled". */
    int cancel_fd;
};

/* Flags for cordon_provider_init_v1; ABI 1 defines none. */
#define CORDON_INIT_FLAGS_NONE 0u

/* Flags for probe. Unknown flags are ignored by a provider. */
#define CORDON_PROBE_FULL 0u
#define CORDON_PROBE_AVAILABILITY 0x1u

/*
 * The provider's vtable. Lives in the provider's static storage; the host
 * copies it into a zeroed local of its own size and never writes to it.
 *
 * JSON documents (schemas in provider-abi.md §7):
 *   config_json   provider config object (candidate config merged over the
 *                 base config); "{}" when none.
 *   facts         probe facts, json.md §3.
 *   spec_json     {"execution_id", "image", "resources": {cpus,
 *                 memory_bytes, disk_bytes, pids, runtime_ms,
 *                 max_output_bytes}, "network": {"mode": "none"},
 *                 "environment": {...}, "layout": "code"|"host",
 *                 "expires_at_ms"}
 *   state_json    the provider's own state of one execution, returned by
 *                 provision, persisted by the host and passed back on every
 *                 later call (possibly by another process).
 *   request_json  {"argv": [...], "cwd": "relative/to/workspace",
 *                 "env": {...}, "workspace_env": {"NAME": "relative/path"},
 *                 "timeout_ms"}. argv[0] without '/' is looked up in
 *                 env.PATH inside the sandbox. workspace_env names get the
 *                 absolute path of that directory inside the sandbox's
 *                 workspace; the provider creates a missing one, owned by
 *                 the sandbox user. timeout_ms is a backstop only: the host
 *                 keeps the clock and fires cancel_fd.
 *   result_json   {"status": "exited"|"signaled"|"oom"|"cancelled",
 *                 "exit_code", "signal", "signal_folded",
 *                 "backstop_timeout"}, at most 64 KiB: exit_code 0..255
 *                 with exited, signal 1..64 with signaled. signal_folded
 *                 true (optional, with exited 129..192; ignored otherwise)
 *                 says the mechanism reports a death by signal N as exit
 *                 128+N too and cannot tell which it was; never turn
 *                 128+N into signaled by guessing. backstop_timeout true
 *                 (optional) says the provider's own backstop deadline
 *                 killed the process, reported as signaled 9; the host
 *                 reports such an exec as any other signal death.
 *                 struct cordon_exec_result (<cordon/sdk/request.h>) is
 *                 this document as C fields.
 */
struct cordon_provider_v1 {
    uint32_t abi_version;            /* CORDON_ABI_VERSION the provider was built against */
    uint32_t struct_size;            /* sizeof(struct cordon_provider_v1) as built */
    const char *provider_id;         /* equals the file's basename, [a-z0-9][a-z0-9-]{0,63} */
    const char *version;             /* the provider's own version string */
    const char *const *supported_kinds; /* NULL-terminated, e.g. {"code_execution", NULL} */

    /* Required. Observe what the provider can do now with this config.
     * Returns 0 with facts even when unavailable ("available": false and a
     * "reason"); a negative code only when it could not say anything.
     * With CORDON_PROBE_AVAILABILITY the provider only re-checks that it
     * can be used now (daemon alive, runtime registered, image present) and
     * returns facts holding provider_id, available and reason; the host
     * calls it right before ensure of the candidate it selected, every
     * time (whether the full facts came from its cache or not). */
    int (*probe)(const struct cordon_host_v1 *host, const char *config_json, uint32_t flags,
                 char **ret_facts_json, struct cordon_error *err);

    /* Required. Bind the resource. The handle is the provider's until
     * release. */
    int (*ensure)(const struct cordon_host_v1 *host, const char *config_json,
                  struct cordon_resource **ret_resource, struct cordon_error *err);

    /* Optional. Cheap liveness check of a bound resource. */
    int (*health_check)(struct cordon_resource *resource, struct cordon_error *err);

    /* Required. Release the resource and free the handle, also on failure;
     * a non-zero return makes the host quarantine the handle's resource. */
    int (*release)(struct cordon_resource *resource, struct cordon_error *err);

    /* Required. Create one execution with /workspace bounded by
     * disk_bytes. Layout "code": /workspace root-owned 0755 with source/
     * read-only for the sandbox user and build/, output/, logs/ writable by
     * it. Layout "host": /workspace belongs to the sandbox user. */
    int (*provision)(struct cordon_resource *resource, const char *spec_json,
                     char **ret_state_json, struct cordon_error *err);

    /* Required. Run argv inside the execution, stdio connected to io.
     * Blocks until the process ends or cancel_fd fires. */
    int (*exec)(struct cordon_resource *resource, const char *state_json,
                const char *request_json, const struct cordon_exec_io *io,
                char **ret_result_json, struct cordon_error *err);

    /* Required. Unpack the tar stream read from tar_fd under dest, a path
     * relative to /workspace ("" for the root). The provider refuses
     * unsafe entries (absolute, "..", links leaving the root, devices,
     * FIFOs, setuid) and stops at disk_bytes. */
    int (*import_tar)(struct cordon_resource *resource, const char *state_json,
                      const char *dest, int tar_fd, struct cordon_error *err);

    /* Required. Write src (relative to /workspace) as a tar stream to
     * tar_fd; entries are named relative to src. */
    int (*export_tar)(struct cordon_resource *resource, const char *state_json,
                      const char *src, int tar_fd, struct cordon_error *err);

    /* Required. Destroy the execution and every process in it. Idempotent:
     * already gone is success. */
    int (*terminate)(struct cordon_resource *resource, const char *state_json,
                     struct cordon_error *err);

    /* Required. Destroy whatever this provider created for execution_id
     * (found by label or naming), without its state. Idempotent. */
    int (*reclaim)(struct cordon_resource *resource, const char *execution_id,
                   struct cordon_error *err);

    /* Optional. The ids of every execution this provider holds for this
     * host (labelled or named with host->host_instance_id), as a JSON
     * array of strings allocated with host->alloc. `cordon gc` reclaims
     * those whose record is gone or expired. */
    int (*list_executions)(struct cordon_resource *resource, char **ret_ids_json,
                           struct cordon_error *err);

    /* ---- ABI 1.1 ---- */

    /* Optional. Land regular files without a tar stream: the host uses it,
     * when set, to land a bundle's source, and falls back to import_tar
     * otherwise (import_tar stays required). files_json is
     *   {"files": [{"path": "a/b.py", "size": 12, "mode": 292}, ...]}
     * with path a relative path (parents implied, created as import_tar
     * creates them), size in bytes and mode the permission bits (0 to 0777,
     * nothing else). data_fd holds the files' bytes back to back in that
     * order and nothing more. dest as for import_tar. The same refusals and
     * bounds as import_tar apply, and the same placement and ownership;
     * cordon_files_import_workspace (<cordon/sdk/tar.h>) implements it for a
     * workspace reachable as a directory. */
    int (*import_files)(struct cordon_resource *resource, const char *state_json,
                        const char *dest, const char *files_json, int data_fd,
                        struct cordon_error *err);

    /* ---- ABI 1.2 ---- */

    /* Optional. Write exactly the paths of paths_json (a JSON array of at
     * most 256 paths relative to /workspace, e.g. ["output/r.txt"]) as a
     * tar stream to tar_fd, each entry named by its path: a regular file
     * with its bytes, a symlink as a symlink (never followed), a directory
     * as an entry of its own without its contents; a path that does not
     * exist is left out. Nothing else of the workspace is read. The run's
     * collect step uses it, when set, to read only the declared outputs,
     * and falls back to export_tar of "output" otherwise.
     * cordon_tar_create_paths_fd (<cordon/sdk/tar.h>) implements it for a workspace
     * reachable as a directory. */
    int (*export_files)(struct cordon_resource *resource, const char *state_json,
                        const char *paths_json, int tar_fd, struct cordon_error *err);

    /* Optional. The host pids of the execution's boundary: its outermost
     * processes, the ones that run or serve the sandbox's code and that
     * every other process of it descends from, as the host's /proc numbers
     * them (a container's init; for gVisor the sandbox process that runs
     * the Sentry). ret_boundary_json is {"pids": [N, ...]}, 1 to 8 pids,
     * allocated with host->alloc. The host takes no pid on trust: it reads
     * each one's namespaces, seccomp mode, no_new_privs, capabilities and
     * descendants from /proc itself, and a pid that does not belong to the
     * sandbox it observed makes every check that needs it fail
     * (observation.md). Without it the host sees the sandbox from
     * inside only, and a userspace kernel's axes stay false. */
    int (*boundary)(struct cordon_resource *resource, const char *state_json,
                    char **ret_boundary_json, struct cordon_error *err);

    /* ---- ABI 1.3 ---- */

    /* Optional. Move the execution's deadline to expires_at_ms (wall-clock
     * Unix ms, later than now; sooner or later than the one it has)
     * everywhere the provider enforces it: the sandbox's init that holds
     * the clock, a timer, the backstop its state keeps. *ret_state_json
     * (host->alloc) is the state with the new deadline, which the host
     * persists in place of the old. Return 0 only once the sandbox will end
     * by expires_at_ms and not before; on failure leave the deadline as it
     * was where possible (the host takes a failure as "not moved" for a
     * later deadline and as "maybe moved" for a sooner one). Only the host
     * may reach what moves the deadline: never a channel the sandbox's code
     * can write to. Without it, `cordon extend` is refused for the
     * provider's executions (unsupported): a provider that cannot move the
     * deadline must not pretend to. cordon_spec_state_set_deadline
     * (<cordon/sdk/spec.h>) rewrites the state; cordon_agent_set_deadline
     * (<cordon/sdk/agent.h>) moves a resident agent's clock. */
    int (*extend)(struct cordon_resource *resource, const char *state_json, uint64_t expires_at_ms,
                  char **ret_state_json, struct cordon_error *err);
};

/* The size of struct cordon_provider_v1 at ABI 1.0: the host refuses a
 * smaller struct_size. */
#define CORDON_PROVIDER_V1_0_SIZE (offsetof(struct cordon_provider_v1, list_executions) + \
                                   sizeof(((struct cordon_provider_v1 *)0)->list_executions))
#define CORDON_HOST_V1_0_SIZE (offsetof(struct cordon_host_v1, state_dir) + \
                               sizeof(((struct cordon_host_v1 *)0)->state_dir))
#define CORDON_EXEC_IO_V1_0_SIZE (offsetof(struct cordon_exec_io, cancel_fd) + sizeof(int))

/* The entry point's name and type for ABI major 1. */
#define CORDON_PROVIDER_INIT_SYMBOL "cordon_provider_init_v1"
typedef int (*cordon_provider_init_v1_fn)(const struct cordon_host_v1 *host, uint32_t flags,
                                          const struct cordon_provider_v1 **ret_provider,
                                          struct cordon_error *err);

/* The entry point every ABI-1 provider exports (written by the macro
 * below). Declared here so that providers compile with
 * -Wmissing-prototypes; the host finds it with dlsym, never by linking. */
CORDON_EXTERN int cordon_provider_init_v1(const struct cordon_host_v1 *host, uint32_t flags,
                                          const struct cordon_provider_v1 **ret_provider,
                                          struct cordon_error *err);

/*
 * The services table of the first init, for the provider's own use (valid
 * for the life of the process). Defined by CORDON_PROVIDER_DEFINE.
 */
extern const struct cordon_host_v1 *cordon_provider_host;

/*
 * Writes the entry point for a provider whose vtable is the static
 * struct cordon_provider_v1 `vtable`. The host calls it once for each
 * context that loads the provider (a second context in one process calls
 * it again); the first call's table is kept in cordon_provider_host.
 */
#define CORDON_PROVIDER_DEFINE(vtable)                                          \
    const struct cordon_host_v1 *cordon_provider_host;                          \
    CORDON_EXTERN int cordon_provider_init_v1(const struct cordon_host_v1 *host,\
                                              uint32_t flags,                   \
                                              const struct cordon_provider_v1 **ret_provider, \
                                              struct cordon_error *err)         \
    {                                                                           \
        if (flags != CORDON_INIT_FLAGS_NONE || host == NULL || ret_provider == NULL) \
            return cordon_error_set(err, CORDON_E_INVALID, 0,                  \
                                    "init: flags must be 0 and host, ret_provider set"); \
        if (CORDON_ABI_MAJOR_OF(host->abi_version) != CORDON_ABI_MAJOR)         \
            return cordon_error_set(err, CORDON_E_ABI, 0,                      \
                                    "init: host speaks ABI major %u, provider %u", \
                                    (unsigned)CORDON_ABI_MAJOR_OF(host->abi_version), \
                                    (unsigned)CORDON_ABI_MAJOR);                \
        if (cordon_provider_host == NULL)                                       \
            cordon_provider_host = host;                                        \
        *ret_provider = &(vtable);                                              \
        return 0;                                                               \
    }

#ifdef __cplusplus
}
#endif

#endif /* CORDON_PROVIDER_H */
