/*
 * core: the host's half of the limit checks (docs/observation.md,
 * "Limits"). The probe execution is provisioned with small limits; once
 * the observation has shown the sandbox contained, the observer runs again
 * in --limits mode (inside/observer-limits.c) and reports how far each bounded
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
#include <sys/random.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/capture.h>
#include <cordon/text.h>

#include "core/observe/observe-internal.h"

/*
 * The small limits are drawn afresh for each probe from these ranges, with
 * the host's random source, so that a provider cannot tell the probe
 * execution by fixed values and enforce limits only there. cpus 0.40 to
 * 0.60: two spinners show about 2.0 unlimited, far above 0.6 x (1 +
 * CPU_TOLERANCE). 128 to 176 MiB hold the observer, the runtimes' own
 * processes and the toolchains asked in the same execution with room (go's
 * runtime does not start under a 64 MiB RLIMIT_DATA); 48 to 80 pids, because a runtime's own threads may
 * share the count (gVisor's Sentry does not start under 32); 3 to 6 MiB of
 * disk hold the 1 MiB observer in /workspace and a fill that ends quickly.
 */
#define SMALL_CPUS_MILLI_MIN 400u
#define SMALL_CPUS_MILLI_SPAN 201u
#define SMALL_MEMORY_MIN (128ull << 20)
#define SMALL_MEMORY_SPAN (48ull << 20)
#define SMALL_DISK_MIN (3ull << 20)
#define SMALL_DISK_SPAN (3ull << 20)
#define SMALL_PIDS_MIN 48u
#define SMALL_PIDS_SPAN 33u
#define SMALL_RUNTIME_MS 120000u
#define SMALL_OUTPUT_BYTES (256u << 10)
/* Memory and disk are drawn in whole pages. */
#define SMALL_STEP 4096u

int cordon__observe_small_limits(struct cordon_limits *ret, struct cordon_error *err)
{
    uint32_t r[4];
    size_t got = 0;

    while (got < sizeof(r)) {
        ssize_t n = getrandom((char *)r + got, sizeof(r) - got, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "observe: getrandom failed: %s", strerror(errno));
        got += (size_t)n;
    }
    ret->cpus = (SMALL_CPUS_MILLI_MIN + r[0] % SMALL_CPUS_MILLI_SPAN) / 1000.0;
    ret->memory_bytes = SMALL_MEMORY_MIN + (r[1] % (SMALL_MEMORY_SPAN / SMALL_STEP + 1)) * SMALL_STEP;
    ret->disk_bytes = SMALL_DISK_MIN + (r[2] % (SMALL_DISK_SPAN / SMALL_STEP + 1)) * SMALL_STEP;
    ret->pids = SMALL_PIDS_MIN + r[3] % SMALL_PIDS_SPAN;
    ret->runtime_ms = SMALL_RUNTIME_MS;
    ret->max_output_bytes = SMALL_OUTPUT_BYTES;
    return 0;
}

/* CPU time may pass cpus x wall time by this fraction: a quota is granted
 * per period (100 ms by default), so a 400 ms window may straddle one
 * period more than it fills. */
#define CPU_TOLERANCE 0.4
/* Fewer spinners than this prove nothing (judge_cpus). */
#define CPU_MIN_SPINNERS 2
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

/* A check that should have reported and did not (the exec failed, the
 * report was missing or unreadable): no verdict, and marked so, since a
 * provider could make a check it fails do exactly that. */
static bool unreported(cJSON *limits, const char *key, const char *detail)
{
    cJSON *v = verdict(limits, key, "not_run", detail);

    return v != NULL && cJSON_AddTrueToObject(v, "unreported") != NULL;
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

/* Only a budget of the whole mount stops a fill: EFBIG is a limit on one
 * file, which the observer's next file goes past. */
static bool stop_errno(const char *name)
{
    return name != NULL && (strcmp(name, "ENOSPC") == 0 || strcmp(name, "EDQUOT") == 0);
}

/* text to paths (size bytes, used so far), after a comma, cut between
 * characters where it does not fit: a path is the provider's text. */
static void append_text(char *paths, size_t size, size_t *used, const char *text)
{
    size_t room;
    int n;

    if (*used + 3 >= size)
        return;
    if (*used > 0) {
        memcpy(paths + *used, ", ", 2);
        *used += 2;
    }
    room = size - 1 - *used;
    n = cordon_text_fit(text, room);
    memcpy(paths + *used, text, (size_t)n);
    *used += (size_t)n;
    paths[*used] = '\0';
}

/* Writes that stopped on their own (ENOSPC, EDQUOT) before the cap of
 * disk + 1 MiB: held; the cap reached: disproved. */
static bool judge_disk(cJSON *limits, const cJSON *r)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "disk_bytes"), *m;
    double written = num(d, "written", -1), limit = num(d, "limit", 0);
    char detail[512], paths[256] = "", unwritable[160] = "";
    size_t used = 0, unused = 0;
    const char *odd = NULL, *odd_errno = NULL;

    if (!cJSON_IsObject(d) || written < 0)
        return unreported(limits, "disk_bytes", "not reported");
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(d, "mounts")) {
        const char *path = str(m, "path"), *e = str(m, "errno_name"), *skipped = str(m, "skipped");

        if (skipped != NULL && strcmp(skipped, "no place this uid can write") == 0)
            append_text(unwritable, sizeof(unwritable), &unused, path != NULL ? path : "?");
        if (num(m, "written", 0) <= 0)
            continue;
        append_text(paths, sizeof(paths), &used, path != NULL ? path : "?");
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
        snprintf(detail, sizeof(detail), "inconclusive: writing to %.*s ended with %s, not ENOSPC",
                 cordon_text_fit(odd, 200), odd, odd_errno);
        return verdict(limits, "disk_bytes", "not_run", detail) != NULL;
    }
    /* The mounts past the observer's count were never tried. */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "more_mounts"))) {
        snprintf(detail, sizeof(detail), "inconclusive: more than %.0f writable mounts", num(d, "max_mounts", 0));
        return verdict(limits, "disk_bytes", "not_run", detail) != NULL;
    }
    snprintf(detail, sizeof(detail), "writes stopped after %.0f bytes (disk_bytes %.0f) in %s%s%s%s", written,
             limit, used > 0 ? paths : "no writable mount",
             unused > 0 ? "; read-write but with no place this uid can write: " : "", unwritable,
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
        return unreported(limits, "memory_bytes", "not reported");
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
        return unreported(limits, "pids", "not reported");
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

/* CPU time over wall time at most cpus x (1 + CPU_TOLERANCE): held. Two
 * spinners at least: one shows at most 1.0, which a busy host may bring
 * below what the tolerance allows. */
static bool judge_cpus(cJSON *limits, const cJSON *r)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "cpus");
    double wall = num(c, "wall_ms", -1), cpu = num(c, "cpu_ms", -1), limit = num(c, "limit_milli", 0) / 1000.0;
    double spinners = num(c, "spinners", 0);
    char detail[256];
    bool held;

    if (wall < CPU_MIN_WALL_MS || cpu < 0)
        return unreported(limits, "cpus", "not reported");
    if (spinners < CPU_MIN_SPINNERS) {
        snprintf(detail, sizeof(detail), "inconclusive: %.0f spinning processes (at least %d)", spinners,
                 CPU_MIN_SPINNERS);
        return verdict(limits, "cpus", "not_run", detail) != NULL;
    }
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

/* Every limit not_run for why; as_unreported: each one a check that
 * should have reported (unreported), the runtime's deadline excepted,
 * which a probe never waits out. */
static bool all_not_run(cJSON *limits, const char *why, bool as_unreported)
{
    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++) {
        const char *key = cordon_limit_keys[i];
        bool ok = as_unreported && strcmp(key, "runtime_ms") != 0 ? unreported(limits, key, why)
                                                                  : verdict(limits, key, "not_run", why) != NULL;

        if (!ok)
            return false;
    }
    return true;
}

/* Each verdict's detail starts with the provider's refusal of the small
 * limits, so that a reader sees which limits were checked and why. */
static bool note_refusal(cJSON *limits, const char *refused)
{
    char buf[600];

    for (cJSON *v = limits != NULL ? limits->child : NULL; v != NULL; v = v->next) {
        const char *detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "detail"));

        snprintf(buf, sizeof(buf), "the provider refused the small limits (%.*s); checked with the ordinary "
                 "ones: %.*s", (int)cordon_text_fit(refused, 200), refused,
                 (int)cordon_text_fit(detail != NULL ? detail : "", 300), detail != NULL ? detail : "");
        if (!cJSON_ReplaceItemInObjectCaseSensitive(v, "detail", cJSON_CreateString(buf)))
            return false;
    }
    return true;
}

/* The observer's --limits report, or NULL with why. */
static cJSON *limits_report(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                            const char *ns_arg, uint64_t timeout_ms, const struct cordon_limits *l, char *why,
                            size_t why_size)
{
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
bool cordon__observe_limits_output(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                                   uint64_t timeout_ms, uint64_t budget, cJSON *limits)
{
    char bytes[24], detail[256];
    const char *const argv[] = { argv0, "--flood", bytes, NULL };
    struct cordon_exec_outcome o;
    struct cordon_error derr;
    bool ok;

    snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)(budget + FLOOD_EXTRA));
    cJSON_DeleteItemFromObjectCaseSensitive(limits, "max_output_bytes");
    memset(&o, 0, sizeof(o));
    cordon_error_init(&derr);
    if (cordon__observe_drive(opts, state, argv, timeout_ms, LIMITS_RETENTION, budget, &o, &derr) < 0) {
        snprintf(detail, sizeof(detail), "the --flood run failed: %s", derr.message);
        cordon_exec_outcome_clear(&o);
        return unreported(limits, "max_output_bytes", detail) &&
               cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(limits, "max_output_bytes"), "asked",
                                       (double)budget) != NULL;
    }
    snprintf(detail, sizeof(detail), "printing %llu bytes (max_output_bytes %llu) ended with status %s",
             (unsigned long long)(budget + FLOOD_EXTRA), (unsigned long long)budget,
             cordon_run_status_name(o.status));
    ok = verdict(limits, "max_output_bytes", o.status == CORDON_RUN_OUTPUT_LIMIT ? "held" : "disproved",
                 detail) != NULL;
    cordon_exec_outcome_clear(&o);
    return ok && cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(limits, "max_output_bytes"), "asked",
                                         (double)budget) != NULL;
}

/* What was asked of each limit, beside its verdict: the small limits are
 * drawn per probe, so a reader sees which. */
static bool add_asked(cJSON *limits, const struct cordon_limits *l)
{
    const double asked[CORDON_LIMIT_KEYS_COUNT] = { l->cpus, (double)l->memory_bytes, (double)l->disk_bytes,
                                                    (double)l->pids, (double)l->runtime_ms,
                                                    (double)l->max_output_bytes };

    for (size_t i = 0; i < CORDON_LIMIT_KEYS_COUNT; i++)
        if (!cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(limits, cordon_limit_keys[i]), "asked",
                                     asked[i]))
            return false;
    return true;
}

int cordon__observe_limits(const struct cordon_observe_opts *opts, const char *state, const char *argv0,
                           const char *ns_arg, uint64_t timeout_ms, const cJSON *iso,
                           const struct cordon_limits *small, const char *refused, cJSON **ret_limits,
                           bool *ret_flood, struct cordon_error *err)
{
    cJSON *limits = cJSON_CreateObject(), *r = NULL;
    char why[400] = "";
    bool ok = limits != NULL;

    *ret_flood = false;

    /* A provider that refused the small limits ran the observation with
     * the ordinary ones (small is those then), and they are checked the
     * same way: refusing must not buy a candidate out of the checks. */
    /* Filling, forking and allocating happen only where the observation
     * just showed they cannot reach the host. */
    if (ok && (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, "process_contained")) ||
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, "host_filesystem_restricted")))) {
        ok = all_not_run(limits, "the sandbox is not contained", false);
        goto out;
    }
    if (ok)
        r = limits_report(opts, state, argv0, ns_arg, timeout_ms, small, why, sizeof(why));
    /* The observation saw the sandbox contained: an observer that now sees
     * the host's namespaces ran somewhere else, which is no verdict either. */
    if (ok && r != NULL && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "contained"))) {
        snprintf(why, sizeof(why), "the --limits run was not contained: the observer saw %.*s",
                 cordon_text_fit(str(r, "contained_detail") != NULL ? str(r, "contained_detail") : "no answer",
                                 200),
                 str(r, "contained_detail") != NULL ? str(r, "contained_detail") : "no answer");
    }
    if (ok && why[0] != '\0') {
        ok = all_not_run(limits, why, true);
        goto out;
    }
    ok = ok && cordon__observe_limits_judge(r, limits);
    if (ok && refused != NULL)
        ok = note_refusal(limits, refused);
    /* The output check comes last of all (cordon__observe_limits_output):
     * an output_limit may take the execution's process tree down. Until
     * then, max_output_bytes says so. */
    ok = ok && unreported(limits, "max_output_bytes", "the output check did not run");
    if (ok)
        *ret_flood = true;
out:
    ok = ok && add_asked(limits, small);
    cJSON_Delete(r);
    if (!ok) {
        cJSON_Delete(limits);
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
    }
    *ret_limits = limits;
    return 0;
}
