/*
 * core (internal): observing a provider's isolation from inside its own
 * sandbox, the host's verification. Until libcordon-sdk.so.1 the SDK
 * exported cordon_observe_run; it is now the host's alone, built into
 * libcordon and exported by no library.
 *
 * cordon_observe_run provisions an execution through the provider's own
 * vtable (exactly as a user's would be), copies the static cordon-observe
 * program in (with import_files when observer_name is set and the provider has
 * that slot, with import_tar otherwise), runs it with the host's canary file and
 * canary process named on its command line, compares what it saw with the
 * host's own view, asks each toolchain for its version inside the same
 * execution, and terminates the execution (also on failure).
 *
 * The host's view: the host's namespace inodes and boot id, a canary file
 * with random content in a fresh host directory, a canary process (a pid
 * the host names), and, when the provider has the boundary operation (ABI
 * 1.2), the processes it names read from the host's own /proc with
 * everything below them. The observer reports: which kernel answered it
 * (boot id, kernel log, uname), its namespace inodes, whether the canary
 * file is visible/readable, whether the canary pid is visible/signalable,
 * writes to / and the rootfs, inherited fds beyond stdio, uid/gid,
 * NoNewPrivs, effective/permitted/bounding capabilities, Seccomp mode and
 * the answer to keyctl, bpf, mount, unshare(CLONE_NEWUSER),
 * io_uring_setup, network interfaces, and /proc/kcore, /sys/firmware.
 */
#ifndef CORDON_SDK_OBSERVE_H
#define CORDON_SDK_OBSERVE_H

#include <stdint.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cordon_observe_opts {
    uint32_t struct_size;                        /* sizeof(struct cordon_observe_opts) */
#if UINTPTR_MAX > 0xffffffffu
    uint32_t padding_0;                          /* the layout's own gap, named; leave 0 */
#endif
    const struct cordon_host_v1 *host;           /* observer_path comes from here */
    const struct cordon_provider_v1 *provider;
    struct cordon_resource *resource;
    const char *image;                           /* put in the spec; NULL for none */
    const char *const *toolchains;               /* canonical ids to ask, NULL-terminated; NULL = none */
    const char *environment_json;                /* extra spec environment, NULL = {} */
    uint64_t timeout_ms;                         /* per exec; 0 = 20000 */
    /* Appended fields: a caller built against an older header passes a
     * smaller struct_size and gets the defaults. */
    const char *observer_name;                   /* NULL: land .cordon/cordon-observe with import_tar;
                                                    else land the observer as this one file at the
                                                    workspace root ([a-z0-9._-], 1 to 64, no leading '.')
                                                    through import_files when the provider has it, else
                                                    import_tar, with 32 random bytes after its end, in an
                                                    execution with an ordinary id (exec-<24 hex>), and run
                                                    it as ./NAME */
    uint32_t flags;                              /* CORDON_OBSERVE_* below; 0 = none */
};

/* Provision the execution with small limits drawn per probe (memory
 * 128-176 MiB, pids 48-80, disk 3-6 MiB, cpus 0.40-0.60, output 256 KiB) and, once the same observation has
 * shown the sandbox contained, check from inside that each one holds:
 * the result gets "limits" (observation.md, "Limits"). The host's own
 * verification sets it. */
#define CORDON_OBSERVE_CHECK_LIMITS 1u

/*
 * Returns 0 with ret_json (malloc'd):
 * {"observed_by": "cordon-observe",
 *  "isolation": {"process_contained": b, "host_filesystem_restricted": b,
 *                "privilege_escalation_blocked": b, "syscalls_restricted": b,
 *                "mechanism_kind": "namespaces" | "gvisor" | "vm",
 *                "network_mode": same as "network",
 *                "checks": [{"axis", "check", "ok", "detail"}...]},
 *  "network": "none" | "host" | "private",
 *  "interfaces": [...],
 *  "toolchains": {"python": {"available": true, "version", "raw_version"},
 *                 "go": {"available": false, "reason"}, ...},
 *  "limits": {"memory_bytes": {"status": "held" | "disproved" | "not_run", "detail"}, ...}
 *            (only with CORDON_OBSERVE_CHECK_LIMITS),
 *  "report": {raw observer report},
 *  "host_view": {"ns", "canary_path", "canary_token", "host_pid", "uid_map",
 *                "boot_id", "self", "pid1_ns", "boundary"}}
 * (observation.md describes every field.) The comparison behind
 * "isolation" is the host's own: no installed header declares it and no
 * library exports it.
 */
int cordon_observe_run(const struct cordon_observe_opts *opts, char **ret_json, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
