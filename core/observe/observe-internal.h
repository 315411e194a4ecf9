/*
 * core (internal): what the files of one observation share, and nothing
 * else uses: core/observe/observe.c (cordon_observe_run: the host's view, the
 * provider driven, the result assembled) and core/observe/observe-land.c (the
 * observer landed in the sandbox). Private to libcordon (hidden, in no
 * installed header).
 */
#ifndef CORDON_SDK_OBSERVE_INTERNAL_H
#define CORDON_SDK_OBSERVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <cordon/error.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/capture.h>
#include "core/observe/observe.h"

/* ---- core/observe/observe.c -------------------------------------------- */

/* Removes the canary directories (/run or /tmp, cordon-observe-NS-PID-*) that
 * an observation in this pid namespace made and did not remove because its
 * cordon died (SIGKILL, a crash): the maker's pid no longer runs and the
 * directory is this uid's. Returns how many went. cordon gc calls it. */
size_t cordon__observe_sweep_canaries(void);

/* 2 * nbytes hex digits of getrandom and a NUL into out; nbytes at most 32. */
int cordon__observe_random_hex(char *out, size_t nbytes, struct cordon_error *err);

/* One exec of argv through the host-side driver, with its own retention
 * and output budget; 0 means it ran (read ret->status). */
int cordon__observe_drive(const struct cordon_observe_opts *opts, const char *state, const char *const *argv,
                          uint64_t timeout_ms, uint64_t retention, uint64_t budget,
                          struct cordon_exec_outcome *ret, struct cordon_error *err);

/* ---- core/observe/observe-limits.c ------------------------------------- */

/* The small limits the probe execution gets with CORDON_OBSERVE_CHECK_LIMITS,
 * drawn afresh (getrandom) within fixed ranges; fails only when getrandom
 * does. */
int cordon__observe_small_limits(struct cordon_limits *ret, struct cordon_error *err);

/* The verdicts on the observer's --limits report r (borrowed) into limits:
 * disk_bytes, memory_bytes, pids, cpus and runtime_ms (not_run). False
 * only when out of memory. */
bool cordon__observe_limits_judge(const cJSON *r, cJSON *limits);

/* The "limits" of an observation: every limit not_run when the provider
 * refused the small limits (refused: its message; the execution then has
 * the ordinary ones) or iso (the comparison's isolation) does not show the
 * sandbox contained, else the observer's --limits run against small and an
 * output flood in the execution state, judged. A check that should have
 * reported and did not is "unreported": true. Each verdict carries what
 * was "asked". *ret_limits is the caller's (cJSON_Delete); fails only for
 * memory. */
int cordon__observe_limits(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                           const char *ns_arg, uint64_t timeout_ms, const cJSON *iso,
                           const struct cordon_limits *small, const char *refused, cJSON **ret_limits,
                           bool *ret_flood, struct cordon_error *err);
/* The output check, when *ret_flood said so, after every other exec of
 * the observation: its verdict replaces max_output_bytes in limits. False
 * only when out of memory. */
bool cordon__observe_limits_output(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                                   uint64_t timeout_ms, uint64_t budget, cJSON *limits);

/* ---- core/observe/observe-land.c --------------------------------------- */

/* Land the observer as one ordinary file, name, at the workspace root:
 * through import_files when the provider has it, else import_tar. */
int cordon__observer_land_as(const struct cordon_observe_opts *opts, const char *state, const char *name,
                             struct cordon_error *err);
/* A tar stream in a memfd (*ret_fd, rewound) holding .cordon/ and
 * .cordon/cordon-observe. */
int cordon__observer_tar(const char *observer, int *ret_fd, struct cordon_error *err);

#endif
