/*
 * sdk: the host's half of the limit checks (docs/observation.md,
 * "Limits"). The probe execution is provisioned with small limits; once
 * the observation has shown the sandbox contained, the observer runs again
 * in --limits mode (sdk/observer-limits.c) and reports how far each bounded
 * attempt got, an exec that prints more than the output budget shows the
 * host's own budget at work, and this file judges: each limit "held",
 * "disproved" or "not_run", with the evidence. Never held on no evidence,
 * and never disproved on none either: what could not be run is not_run.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/capture.h>

#include "sdk/observe-internal.h"

/* cpus 0.5: a single spinning thread can show at most 1.0, so a limit
 * below 1 / (1 + CPU_TOLERANCE) is one it can disprove. 64 MiB holds the
 * observer and the runtimes' own processes with room; 64 pids, because a
 * runtime's own threads may share the count (gVisor's Sentry does not
 * start under 32); 4 MiB of disk hold the 1 MiB observer in /workspace
 * and a fill that ends quickly. */
const struct cordon_limits cordon__observe_small_limits = {
    .cpus = 0.5,
    .memory_bytes = 64u << 20,
    .disk_bytes = 4u << 20,
    .pids = 64,
    .runtime_ms = 120000,
    .max_output_bytes = 256u << 10,
};

/* CPU time may pass cpus x wall time by this fraction: a quota is granted
 * per period (100 ms by default), so a 400 ms window may straddle one
 * period more than it fills. */
#define CPU_TOLERANCE 0.4
/* Below this much wall time the spin proves nothing. */
#define CPU_MIN_WALL_MS 200
/* What --flood prints beyond the output budget. */
#define FLOOD_EXTRA (64u << 10)
#define LIMITS_RETENTION (4u << 10)
#define LIMITS_REPORT_MAX (64u << 10)

static cJSON *verdict(cJSON *limits, const char *key, const char *status, const char *detail)
{
    cJSON *v = cJSON_AddObjectToObject(limits, key);

    if (v == NULL || !cJSON_AddStringToObject(v, "status", status) || !cJSON_AddStringToObject(v, "detail", detail))
        return NULL;
    return v;
}

static double num(const cJSON *obj, const char *key, double missing)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsNumber(n) ? n->valuedouble : missing;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(s) ? s->valuestring : NULL;
}

static bool stop_errno(const char *name)
{
    return name != NULL && (strcmp(name, "ENOSPC") == 0 || strcmp(name, "EDQUOT") == 0 ||
                            strcmp(name, "EFBIG") == 0);
}

/* Writes that stopped on their own (ENOSPC, EDQUOT, EFBIG) before the cap
 * of disk + 1 MiB: held; the cap reached: disproved. */
static bool judge_disk(cJSON *limits, const cJSON *r)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "disk_bytes"), *m;
    double written = num(d, "written", -1), limit = num(d, "limit", 0);
    char detail[512], paths[256] = "";
    size_t used = 0;
    const char *odd = NULL, *odd_errno = NULL;

    if (!cJSON_IsObject(d) || written < 0)
        return verdict(limits, "disk_bytes", "not_run", "not reported") != NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(d, "mounts")) {
        const char *path = str(m, "path"), *e = str(m, "errno_name");

        if (num(m, "written", 0) <= 0)
            continue;
        if (used < sizeof(paths) - 1)
            used += (size_t)snprintf(paths + used, sizeof(paths) - used, "%s%s", used > 0 ? ", " : "",
                                     path != NULL ? path : "?");
        if (!stop_errno(e) && odd == NULL) {
            odd = path != NULL ? path : "?";
            odd_errno = e != NULL ? e : "no error";
        }
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "capped"))) {
        snprintf(detail, sizeof(detail), "wrote %.0f bytes into %s without being stopped (disk_bytes %.0f)",
                 written, paths, limit);
        return verdict(limits, "disk_bytes", "disproved", detail) != NULL;
    }
    if (odd != NULL) {
        snprintf(detail, sizeof(detail), "inconclusive: writing to %s ended with %s, not ENOSPC", odd, odd_errno);
        return verdict(limits, "disk_bytes", "not_run", detail) != NULL;
    }
    snprintf(detail, sizeof(detail), "writes stopped after %.0f bytes (disk_bytes %.0f) in %s%s", written, limit,
             used > 0 ? paths : "no writable mount",
             cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(d, "removed")) ? "; a fill file was not removed" : "");
    return verdict(limits, "disk_bytes", "held", detail) != NULL;
}

/* The child killed (the OOM killer's SIGKILL) or its allocation refused
 * before memory + 8 MiB: held; everything touched: disproved. */
static bool judge_memory(cJSON *limits, const cJSON *r)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "memory_bytes");
    const char *end = str(m, "end");
    double touched = num(m, "touched", -1), limit = num(m, "limit", 0);
    char detail[256];

    if (end == NULL || touched < 0)
        return verdict(limits, "memory_bytes", "not_run", "not reported") != NULL;
    if (strcmp(end, "completed") == 0) {
        snprintf(detail, sizeof(detail), "a child touched %.0f bytes and was not stopped (memory_bytes %.0f)",
                 touched, limit);
        return verdict(limits, "memory_bytes", "disproved", detail) != NULL;
    }
    if (strcmp(end, "refused") == 0 || (strcmp(end, "signal") == 0 && num(m, "signal", 0) == SIGKILL)) {
        snprintf(detail, sizeof(detail), "a child was %s after touching %.0f bytes (memory_bytes %.0f)",
                 strcmp(end, "refused") == 0 ? "refused memory" : "killed", touched, limit);
        return verdict(limits, "memory_bytes", "held", detail) != NULL;
    }
    snprintf(detail, sizeof(detail), "inconclusive: the child ended by signal %.0f after %.0f bytes",
             num(m, "signal", 0), touched);
    return verdict(limits, "memory_bytes", "not_run", detail) != NULL;
}

/* fork refused with EAGAIN before pids + 4 children: held; the cap
 * reached: disproved. */
static bool judge_pids(cJSON *limits, const cJSON *r)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "pids");
    double forked = num(p, "forked", -1), cap = num(p, "cap", 0), limit = num(p, "limit", 0);
    const char *e = str(p, "errno_name");
    char detail[256];

    if (forked < 0)
        return verdict(limits, "pids", "not_run", "not reported") != NULL;
    if (forked >= cap) {
        snprintf(detail, sizeof(detail), "%.0f children forked without a refusal (pids %.0f)", forked, limit);
        return verdict(limits, "pids", "disproved", detail) != NULL;
    }
    if (e == NULL || strcmp(e, "EAGAIN") != 0) {
        snprintf(detail, sizeof(detail), "inconclusive: fork ended with %s after %.0f children",
                 e != NULL ? e : "no error", forked);
        return verdict(limits, "pids", "not_run", detail) != NULL;
    }
    snprintf(detail, sizeof(detail), "fork refused (EAGAIN) after %.0f children (pids %.0f)", forked, limit);
    return verdict(limits, "pids", "held", detail) != NULL;
}

/* CPU time over wall time at most cpus x (1 + CPU_TOLERANCE): held. */
static bool judge_cpus(cJSON *limits, const cJSON *r)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "cpus");
    double wall = num(c, "wall_ms", -1), cpu = num(c, "cpu_ms", -1), limit = num(c, "limit_milli", 0) / 1000.0;
    char detail[256];
    bool held;

    if (wall < CPU_MIN_WALL_MS || cpu < 0)
        return verdict(limits, "cpus", "not_run", "not reported") != NULL;
    held = cpu <= wall * limit * (1 + CPU_TOLERANCE);
    snprintf(detail, sizeof(detail), "%.0f ms of CPU in %.0f ms of wall time: %.2f cpus (cpus %.2f, at most %.2f)",
             cpu, wall, cpu / wall, limit, limit * (1 + CPU_TOLERANCE));
    return verdict(limits, "cpus", held ? "held" : "disproved", detail) != NULL;
}

bool cordon__observe_limits_judge(const cJSON *r, cJSON *limits)
{
    /* The deadline is the host's too, but waiting it out is not worth a
     * probe's time. */
    return judge_disk(limits, r) && judge_memory(limits, r) && judge_pids(limits, r) && judge_cpus(limits, r) &&
           verdict(limits, "runtime_ms", "not_run", "the host's deadline is not waited out by a probe") != NULL;
}

static bool all_not_run(cJSON *limits, const char *why)
{
    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++)
        if (verdict(limits, cordon_limit_keys[i], "not_run", why) == NULL)
            return false;
    return true;
}

/* The observer's --limits report, or NULL with why. */
static cJSON *limits_report(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                            const char *ns_arg, uint64_t timeout_ms, char *why, size_t why_size)
{
    const struct cordon_limits *l = &cordon__observe_small_limits;
    char disk[24], memory[24], pids[24], cpus[24];
    const char *const argv[] = { argv0, "--limits", "--host-ns", ns_arg, "--disk", disk, "--memory", memory,
                                 "--pids", pids, "--cpus-milli", cpus, NULL };
    struct cordon_exec_outcome o;
    struct cordon_error derr;
    cJSON *r = NULL;

    snprintf(disk, sizeof(disk), "%llu", (unsigned long long)l->disk_bytes);
    snprintf(memory, sizeof(memory), "%llu", (unsigned long long)l->memory_bytes);
    snprintf(pids, sizeof(pids), "%llu", (unsigned long long)l->pids);
    snprintf(cpus, sizeof(cpus), "%.0f", l->cpus * 1000);
    memset(&o, 0, sizeof(o));
    cordon_error_init(&derr);
    /* A provider that cannot run it leaves the limits unverified, not the
     * isolation: the observation itself went through. */
    if (cordon__observe_drive(opts, state, argv, timeout_ms, LIMITS_REPORT_MAX, LIMITS_REPORT_MAX, &o, &derr) < 0)
        snprintf(why, why_size, "the observer's --limits run failed: %s", derr.message);
    else if (o.status != CORDON_RUN_EXITED || o.exit_code != 0 || o.out.dropped_bytes > 0)
        snprintf(why, why_size, "the observer's --limits run ended with status %s (code %d)",
                 cordon_run_status_name(o.status), o.exit_code);
    else if (!cJSON_IsObject(r = cJSON_ParseWithLength(o.out.data, o.out.len)))
        snprintf(why, why_size, "the observer's --limits report is not a JSON object");
    cordon_exec_outcome_clear(&o);
    if (why[0] != '\0') {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* An exec that prints FLOOD_EXTRA more than the output budget must end in
 * output_limit: the host's own budget, whatever the provider does. */
static bool judge_output(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                         uint64_t timeout_ms, cJSON *limits)
{
    uint64_t budget = cordon__observe_small_limits.max_output_bytes;
    char bytes[24], detail[256];
    const char *const argv[] = { argv0, "--flood", bytes, NULL };
    struct cordon_exec_outcome o;
    struct cordon_error derr;
    bool ok;

    snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)(budget + FLOOD_EXTRA));
    memset(&o, 0, sizeof(o));
    cordon_error_init(&derr);
    if (cordon__observe_drive(opts, state, argv, timeout_ms, LIMITS_RETENTION, budget, &o, &derr) < 0) {
        snprintf(detail, sizeof(detail), "the --flood run failed: %s", derr.message);
        cordon_exec_outcome_clear(&o);
        return verdict(limits, "max_output_bytes", "not_run", detail) != NULL;
    }
    snprintf(detail, sizeof(detail), "printing %llu bytes (max_output_bytes %llu) ended with status %s",
             (unsigned long long)(budget + FLOOD_EXTRA), (unsigned long long)budget,
             cordon_run_status_name(o.status));
    ok = verdict(limits, "max_output_bytes", o.status == CORDON_RUN_OUTPUT_LIMIT ? "held" : "disproved",
                 detail) != NULL;
    cordon_exec_outcome_clear(&o);
    return ok;
}

int cordon__observe_limits(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                           const char *ns_arg, uint64_t timeout_ms, const cJSON *iso, cJSON **ret_limits,
                           struct cordon_error *err)
{
    cJSON *limits = cJSON_CreateObject(), *r = NULL;
    char why[256] = "";
    bool ok = limits != NULL;

    /* Filling, forking and allocating happen only where the observation
     * just showed they cannot reach the host. */
    if (ok && (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, "process_contained")) ||
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, "host_filesystem_restricted")))) {
        ok = all_not_run(limits, "the sandbox is not contained");
        goto out;
    }
    if (ok)
        r = limits_report(opts, state, argv0, ns_arg, timeout_ms, why, sizeof(why));
    if (ok && r != NULL && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "contained"))) {
        snprintf(why, sizeof(why), "the sandbox is not contained: the observer saw %s",
                 str(r, "contained_detail") != NULL ? str(r, "contained_detail") : "no answer");
    }
    if (ok && why[0] != '\0') {
        ok = all_not_run(limits, why);
        goto out;
    }
    ok = ok && cordon__observe_limits_judge(r, limits);
    /* Last: an output_limit may take the execution's process tree down. */
    ok = ok && judge_output(opts, state, argv0, timeout_ms, limits);
out:
    cJSON_Delete(r);
    if (!ok) {
        cJSON_Delete(limits);
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
    }
    *ret_limits = limits;
    return 0;
}
