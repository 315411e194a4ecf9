/*
 * sdk: probe facts (json.md §3): building them and normalising tool
 * versions. The host validates what a probe returns against json.md §3.
 */
#ifndef CORDON_SDK_FACTS_H
#define CORDON_SDK_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The four observed isolation axes, in this order everywhere. */
#define CORDON_AXIS_PROCESS_CONTAINED "process_contained"
#define CORDON_AXIS_HOST_FS_RESTRICTED "host_filesystem_restricted"
#define CORDON_AXIS_PRIVESC_BLOCKED "privilege_escalation_blocked"
#define CORDON_AXIS_SYSCALLS_RESTRICTED "syscalls_restricted"

/* Canonical toolchain ids and the language each serves. */
#define CORDON_TOOLCHAIN_IDS { "python", "node", "go", "c++" }

/*
 * Turn a tool's own version output into dotted numbers:
 * "Python 3.11.2" -> "3.11.2", "v20.19.2" -> "20.19.2",
 * "go version go1.19.8 linux/amd64" -> "1.19.8",
 * "c++ (Debian 12.2.0-14) 12.2.0" -> "12.2.0" (the last dotted number on
 * the first line). CORDON_E_INVALID when raw holds no version.
 */
CORDON_EXTERN int cordon_version_normalize(const char *tool, const char *raw, char *ret,
                                           size_t ret_size, struct cordon_error *err);

/* Compare dotted versions numerically ("3.10" > "3.9"); missing parts are 0.
 * Returns <0, 0, >0. */
CORDON_EXTERN int cordon_version_compare(const char *a, const char *b);

/* The axes a provider claims (cordon_facts_parts.claims), one bit each. */
#define CORDON_CLAIM_PROCESS_CONTAINED 0x1u
#define CORDON_CLAIM_HOST_FS_RESTRICTED 0x2u
#define CORDON_CLAIM_PRIVESC_BLOCKED 0x4u
#define CORDON_CLAIM_SYSCALLS_RESTRICTED 0x8u
#define CORDON_CLAIM_ALL 0xfu

/*
 * Compose a facts document for a provider from its own parts: its claim
 * (claims and network, "observed_by": "none"), which the host then judges
 * with an observation of its own and completes with the toolchains it saw.
 * A provider built against an older header passed an observation instead
 * (the JSON of cordon_observe_run, which libcordon-sdk.so.0 exported and
 * the host now runs alone); that is still accepted. Every argument
 * is borrowed; mechanism_facts_json may be NULL ("{}"). ret_json is malloc'd.
 */
struct cordon_facts_parts {
    uint32_t struct_size;
#if UINTPTR_MAX > 0xffffffffu
    uint32_t padding_0;                     /* the layout's own gap, named; leave 0 */
#endif
    const char *provider_id;
    const char *const *supported_kinds;     /* NULL-terminated */
    bool available;
    char padding_1[sizeof(void *) - sizeof(bool)];
    const char *reason;                     /* "ready" or why not */
    const char *safety_class;
    const char *mechanism;                  /* "container", "host_process", ... */
    bool rootfs_read_only;
    char padding_2[sizeof(void *) - sizeof(bool)];
    const char *const *workspace_access_modes; /* NULL-terminated */
    const char *const *limits_enforced;     /* NULL-terminated */
    const char *observation_json;           /* NULL: the host observes (an observation of the
                                               provider's own is still accepted) */
    const char *mechanism_facts_json;       /* a JSON object or NULL */
    /* Appended: a caller built against an older header passes a smaller
     * struct_size and gets no limits_enforcement. */
    const char *limits_enforcement_json;    /* NULL, or a JSON object: how each limit is enforced,
                                               {"memory_bytes": "cgroup", ...} (json.md §3) */
    /* Appended (CORDON_SDK_1): the claim, used when observation_json is
     * NULL and available is true. */
    uint32_t claims;                        /* CORDON_CLAIM_* bits: the axes promised */
    uint32_t deferred;                      /* CORDON_CLAIM_* bits of axes not in claims that the
                                               mechanism's configuration decides and the provider
                                               cannot tell in advance: the verified facts take
                                               what the host saw, never a disproval */
    const char *network;                    /* promised: "none", "private" or "host" */
};
CORDON_EXTERN int cordon_facts_compose(const struct cordon_facts_parts *parts, char **ret_json,
                                       struct cordon_error *err);

/* The end of every probe: cordon_facts_compose, the text copied into
 * memory from host->alloc (the probe's ret_facts_json, which the host
 * frees). *ret_json is written only on success. */
CORDON_EXTERN int cordon_facts_compose_host(const struct cordon_host_v1 *host,
                                            const struct cordon_facts_parts *parts,
                                            char **ret_json, struct cordon_error *err);

/* The answer of a probe called with CORDON_PROBE_AVAILABILITY (provider.h):
 * {"provider_id", "available", "reason"}, available when reason is
 * "ready", with "detail" when not and detail is not NULL. In text from
 * host->alloc, as cordon_facts_compose_host. */
CORDON_EXTERN int cordon_facts_availability_host(const struct cordon_host_v1 *host,
                                                 const char *provider_id, const char *reason,
                                                 const char *detail, char **ret_json,
                                                 struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
