/*
 * core (internal): the host's view of an execution from outside.
 *
 * The observer reports from inside the sandbox; a userspace kernel such as
 * gVisor's answers it with its own view, so what confines the sandbox on
 * the host (the seccomp filter, no_new_privs, the capabilities and the
 * namespaces of the process that runs the Sentry) can only be read from
 * the host's /proc. A provider names those processes (provider.h,
 * boundary); observe.c reads them here, while the execution still lives,
 * and puts what it read into the host view, where the pure comparison
 * (cordon__observe_compare) judges it. Nothing here trusts the provider:
 * every number is read from /proc, and whether the pids belong to the
 * sandbox at all is the comparison's first question.
 */
#ifndef CORDON_SDK_BOUNDARY_H
#define CORDON_SDK_BOUNDARY_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <cordon/provider.h>

#define CORDON__BOUNDARY_PIDS_MAX 8
#define CORDON__BOUNDARY_PROCS_MAX 64   /* boundary processes and their descendants */

/*
 * The host's own facts the comparison needs: "boot_id" (the kernel's, or
 * null), "self": {"pid", "ancestors": [...]}, "pid1_ns": {"mnt"}. Added
 * to view; false when out of memory.
 */
bool cordon__host_self(cJSON *view);

/*
 * Ask p for the boundary of the execution in state and read each named
 * process and its descendants from /proc. observer_rel is the observer's
 * path relative to the workspace (its random name, or
 * .cordon/cordon-observe); before_ms and after_ms are CLOCK_BOOTTIME
 * readings around its exec. Returns a new object (NULL only when out of
 * memory):
 *   {"status": "unsupported"}                   p has no boundary operation
 *   {"status": "failed", "error": "..."}        it failed or answered nonsense
 *   {"status": "reported", "pids": [...], "observer", "clk_tck",
 *    "window_ms": {"before", "after"},
 *    "processes": [{"pid", "root", "boundary", "readable", ...}...], "truncated"}
 * docs/observation.md lists the fields of a process.
 */
cJSON *cordon__boundary_view(const struct cordon_host_v1 *host, const struct cordon_provider_v1 *p,
                             struct cordon_resource *res, const char *state, const char *observer_rel,
                             uint64_t before_ms, uint64_t after_ms);

/* CLOCK_BOOTTIME in milliseconds: the clock /proc/<pid>/stat's start
 * times count from. */
uint64_t cordon__now_boot_ms(void);

#endif
