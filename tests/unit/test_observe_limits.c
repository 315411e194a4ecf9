/*
 * Unit tests: the host's limit checks. How the observer's --limits report
 * is judged (core/observe/observe-limits.c), how the verdicts become facts and
 * disproved claims (core/verify.c), and that the observer itself refuses
 * to fill, fork or allocate where its namespaces are the host's.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cordon/text.h>

#include "core/verify.h"
#include "core/observe/observe-internal.h"

/* ---- judging the observer's report ----------------------------------------- */

/* Arrays, not pointers: Criterion copies the rows into each worker. */
struct judge_row {
    char report[256]; /* the observer's --limits report */
    char key[24];
    char status[16]; /* what the host must conclude */
};

#define DISK(m, extra) "{\"disk_bytes\":{\"limit\":4194304,\"mounts\":[" m "]" extra "}}"

static struct judge_row judge_rows[] = {
    /* disk: stopped by the file system, capped, stopped otherwise, not reported */
    { DISK("{\"path\":\"/workspace\",\"written\":3000000,\"errno_name\":\"ENOSPC\"}",
           ",\"written\":3000000,\"capped\":false,\"removed\":true"), "disk_bytes", "held" },
    { DISK("{\"path\":\"/a\",\"written\":100,\"errno_name\":\"EDQUOT\"},"
           "{\"path\":\"/b\",\"written\":100,\"errno_name\":\"ENOSPC\"}",
           ",\"written\":200,\"capped\":false"), "disk_bytes", "held" },
    /* EFBIG is a limit on one file, never the budget of a mount */
    { DISK("{\"path\":\"/b\",\"written\":0,\"errno_name\":\"EFBIG\"}",
           ",\"written\":0,\"capped\":false"), "disk_bytes", "held" },
    { DISK("{\"path\":\"/b\",\"written\":100,\"errno_name\":\"EFBIG\"}",
           ",\"written\":100,\"capped\":false"), "disk_bytes", "not_run" },
    /* more writable mounts than the observer tries: the rest was never tried */
    { DISK("{\"path\":\"/w\",\"written\":3000000,\"errno_name\":\"ENOSPC\"}",
           ",\"written\":3000000,\"capped\":false,\"more_mounts\":true,\"max_mounts\":64"), "disk_bytes",
      "not_run" },
    { DISK("", ",\"written\":0,\"capped\":false"), "disk_bytes", "held" },
    { DISK("{\"path\":\"/scratch\",\"written\":5242880}", ",\"written\":5242880,\"capped\":true"), "disk_bytes",
      "disproved" },
    { DISK("{\"path\":\"/x\",\"written\":4096,\"errno_name\":\"EIO\"}", ",\"written\":4096,\"capped\":false"),
      "disk_bytes", "not_run" },
    { "{}", "disk_bytes", "not_run" },
    { "{\"disk_bytes\":{\"written\":\"lots\"}}", "disk_bytes", "not_run" },
    /* memory: killed, refused, completed, another signal, not reported */
    { "{\"memory_bytes\":{\"limit\":67108864,\"touched\":66060288,\"end\":\"signal\",\"signal\":9}}", "memory_bytes",
      "held" },
    { "{\"memory_bytes\":{\"limit\":67108864,\"touched\":1048576,\"end\":\"refused\"}}", "memory_bytes", "held" },
    { "{\"memory_bytes\":{\"limit\":67108864,\"touched\":75497472,\"end\":\"completed\"}}", "memory_bytes",
      "disproved" },
    { "{\"memory_bytes\":{\"limit\":67108864,\"touched\":1048576,\"end\":\"signal\",\"signal\":11}}",
      "memory_bytes", "not_run" },
    { "{\"memory_bytes\":{\"error\":\"fork failed\"}}", "memory_bytes", "not_run" },
    /* pids: EAGAIN below the cap, the cap reached, another errno */
    { "{\"pids\":{\"limit\":32,\"cap\":36,\"forked\":30,\"errno_name\":\"EAGAIN\"}}", "pids", "held" },
    { "{\"pids\":{\"limit\":32,\"cap\":36,\"forked\":36}}", "pids", "disproved" },
    { "{\"pids\":{\"limit\":32,\"cap\":36,\"forked\":3,\"errno_name\":\"ENOMEM\"}}", "pids", "not_run" },
    { "{\"pids\":{}}", "pids", "not_run" },
    /* cpus 0.5: at most 0.7 of the wall time */
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":400,\"cpu_ms\":200}}", "cpus", "held" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":400,\"cpu_ms\":280}}", "cpus", "held" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":400,\"cpu_ms\":290}}", "cpus", "disproved" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":400,\"cpu_ms\":398}}", "cpus", "disproved" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":50,\"cpu_ms\":50}}", "cpus", "not_run" },
    /* one spinner can show at most 1.0, which a busy host brings lower */
    { "{\"cpus\":{\"limit_milli\":500,\"wall_ms\":400,\"cpu_ms\":200}}", "cpus", "not_run" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":1,\"wall_ms\":400,\"cpu_ms\":200}}", "cpus", "not_run" },
    { "{\"cpus\":{\"limit_milli\":500,\"spinners\":2,\"wall_ms\":400,\"cpu_ms\":790}}", "cpus",
      "disproved" },
    /* the deadline is never waited out */
    { "{}", "runtime_ms", "not_run" },
};

ParameterizedTestParameters(observe_limits, judge)
{
    return cr_make_param_array(struct judge_row, judge_rows, sizeof(judge_rows) / sizeof(judge_rows[0]));
}

ParameterizedTest(struct judge_row *row, observe_limits, judge)
{
    cJSON *report = cJSON_Parse(row->report), *limits = cJSON_CreateObject();
    const cJSON *v;

    cr_assert_not_null(report, "bad row: %s", row->report);
    cr_assert(cordon__observe_limits_judge(report, limits));
    v = cJSON_GetObjectItemCaseSensitive(limits, row->key);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v, "status")), row->status, "%s: %s (%s)", row->key,
                     cJSON_GetStringValue(cJSON_GetObjectItem(v, "detail")), row->report);
    cr_expect_not_null(cJSON_GetStringValue(cJSON_GetObjectItem(v, "detail")), "every verdict says why");
    cJSON_Delete(report);
    cJSON_Delete(limits);
}

/* ---- the verdicts in the facts ----------------------------------------------- */

static const char *field(const cJSON *facts, const char *key, const char *name)
{
    return cJSON_GetStringValue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "limits_verified"), key), name));
}

/* Facts (facts_json) after merging the observation obs_json, each
 * disproved limit appended to disproved. */
static cJSON *merged(const char *facts_json, const char *obs_json, cJSON *disproved)
{
    cJSON *facts = cJSON_Parse(facts_json), *obs = cJSON_Parse(obs_json);

    cr_assert_not_null(facts, "bad facts: %s", facts_json);
    cr_assert_not_null(obs, "bad observation: %s", obs_json);
    cr_assert(cordon__verify_merge_limits(facts, obs, disproved));
    cJSON_Delete(obs);
    return facts;
}

Test(observe_limits, a_limit_seen_not_to_hold_is_a_disproved_claim_named_by_its_field)
{
    cJSON *disproved = cJSON_CreateArray();
    cJSON *facts = merged("{\"limits_enforced\": [\"cpus\", \"memory_bytes\", \"disk_bytes\", \"pids\"],"
                          " \"limits_enforcement\": {\"memory_bytes\": \"cgroup\", \"pids\": \"cgroup\"}}",
                          "{\"limits\": {\"memory_bytes\": {\"status\": \"disproved\", \"detail\": \"75 MiB\"},"
                          " \"pids\": {\"status\": \"held\", \"detail\": \"EAGAIN\"},"
                          " \"cpus\": {\"status\": \"fine\", \"detail\": \"a word the host never writes\"}}}",
                          disproved);
    const cJSON *d;

    cr_expect_str_eq(field(facts, "memory_bytes", "status"), "disproved");
    cr_expect_str_eq(field(facts, "memory_bytes", "detail"), "75 MiB");
    cr_expect_str_eq(field(facts, "memory_bytes", "enforced_by"), "cgroup");
    cr_expect_str_eq(field(facts, "pids", "status"), "held");
    cr_expect_str_eq(field(facts, "cpus", "status"), "not_run", "an unknown word is not a verdict");
    cr_expect_str_eq(field(facts, "disk_bytes", "status"), "not_run", "a limit not observed is not_run");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "limits_verified"),
                                                                   "disk_bytes"), "enforced_by")));
    cr_assert_eq(cJSON_GetArraySize(disproved), 1);
    d = cJSON_GetArrayItem(disproved, 0);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "axis")), "limits");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "check")), "memory_bytes");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "detail")), "75 MiB");
    cJSON_Delete(facts);
    cJSON_Delete(disproved);
}

Test(observe_limits, without_an_observation_every_limit_is_not_run_and_nothing_disproved)
{
    static const char *const keys[] = { "cpus", "memory_bytes", "disk_bytes", "pids", "runtime_ms",
                                        "max_output_bytes" };
    cJSON *facts = cJSON_Parse("{\"limits_enforced\": [\"cpus\", \"memory_bytes\", \"disk_bytes\", \"pids\","
                          " \"runtime_ms\", \"max_output_bytes\"]}");
    cJSON *disproved = cJSON_CreateArray();

    cr_assert(cordon__verify_merge_limits(facts, NULL, disproved));
    for (size_t i = 0; i < 6; i++)
        cr_expect_str_eq(field(facts, keys[i], "status"), "not_run", "%s", keys[i]);
    cr_expect_eq(cJSON_GetArraySize(disproved), 0);
    cJSON_Delete(facts);
    cJSON_Delete(disproved);
}

/* Each check that should have reported and did not is marked so; the
 * deadline, which a probe never waits out, is not. */
Test(observe_limits, a_check_that_did_not_report_is_marked_unreported)
{
    static const char *const keys[] = { "cpus", "memory_bytes", "disk_bytes", "pids" };
    cJSON *report = cJSON_Parse("{}"), *limits = cJSON_CreateObject();

    cr_assert(cordon__observe_limits_judge(report, limits));
    for (size_t i = 0; i < 4; i++)
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, keys[i]), "unreported")), "%s",
                  keys[i]);
    cr_expect_null(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "runtime_ms"), "unreported"));
    cJSON_Delete(report);
    cJSON_Delete(limits);
}

/* A provider that says it does not enforce a limit ("none", or not in
 * limits_enforced) promised nothing: not_claimed, whatever was seen, and
 * nothing disproved. */
Test(observe_limits, a_limit_the_provider_does_not_claim_is_not_claimed_not_disproved)
{
    cJSON *disproved = cJSON_CreateArray();
    cJSON *facts = merged("{\"limits_enforced\": [\"cpus\", \"memory_bytes\"],"
                          " \"limits_enforcement\": {\"cpus\": \"none\", \"memory_bytes\": \"cgroup\"}}",
                          "{\"limits\": {\"cpus\": {\"status\": \"disproved\", \"detail\": \"1.9 cpus\"},"
                          " \"pids\": {\"status\": \"disproved\", \"detail\": \"84 children\", \"asked\": 64},"
                          " \"memory_bytes\": {\"status\": \"held\", \"detail\": \"killed\", \"asked\": 52428800}}}",
                          disproved);
    const cJSON *pids;

    cr_expect_str_eq(field(facts, "cpus", "status"), "not_claimed");
    cr_expect_str_eq(field(facts, "cpus", "observed"), "disproved");
    cr_expect_str_eq(field(facts, "pids", "status"), "not_claimed");
    cr_expect_str_eq(field(facts, "memory_bytes", "status"), "held");
    pids = cJSON_GetObjectItem(cJSON_GetObjectItem(facts, "limits_verified"), "pids");
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(pids, "asked")), 64, "what was asked is kept");
    cr_expect_eq(cJSON_GetArraySize(disproved), 0, "nothing promised, nothing disproved");
    cJSON_Delete(facts);
    cJSON_Delete(disproved);
}

/* A limit the provider claims, whose check did not report although the
 * sandbox was contained (the exec failed, the report was lost), costs the
 * provider a disproval: failing just that exec must not pass. A limit
 * never tried on purpose (the deadline) does not. */
Test(observe_limits, an_enforced_limit_whose_check_did_not_report_is_disproved)
{
    cJSON *disproved = cJSON_CreateArray();
    cJSON *facts = merged("{\"limits_enforced\": [\"memory_bytes\", \"runtime_ms\", \"pids\"]}",
                          "{\"limits\": {\"memory_bytes\": {\"status\": \"not_run\", \"detail\": \"not "
                          "reported\", \"unreported\": true}, \"runtime_ms\": {\"status\": \"not_run\","
                          " \"detail\": \"not waited out\"}, \"pids\": {\"status\": \"not_run\", \"detail\":"
                          " \"the sandbox is not contained\"}}}",
                          disproved);
    const cJSON *d;

    cr_expect_str_eq(field(facts, "memory_bytes", "status"), "not_run");
    cr_assert_eq(cJSON_GetArraySize(disproved), 1);
    d = cJSON_GetArrayItem(disproved, 0);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "axis")), "limits");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d, "check")), "limits_not_observed");
    cr_expect(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(d, "detail")), "memory_bytes") != NULL);
    cJSON_Delete(facts);
    cJSON_Delete(disproved);
}

/* The small limits are drawn per probe within their ranges: no fixed
 * value tells the probe execution from a user's. */
Test(observe_limits, the_small_limits_are_drawn_within_their_ranges)
{
    struct cordon_limits l, first;
    struct cordon_error err;
    bool differ = false;

    cordon_error_init(&err);
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(cordon__observe_small_limits(&l, &err), 0, "%s", err.message);
        if (i == 0)
            first = l;
        cr_expect(l.cpus >= 0.4 && l.cpus <= 0.6, "cpus %f", l.cpus);
        cr_expect(l.memory_bytes >= (128u << 20) && l.memory_bytes <= (176u << 20), "memory %llu",
                  (unsigned long long)l.memory_bytes);
        cr_expect(l.disk_bytes >= (3u << 20) && l.disk_bytes <= (6u << 20), "disk %llu",
                  (unsigned long long)l.disk_bytes);
        cr_expect(l.pids >= 48 && l.pids <= 80, "pids %llu", (unsigned long long)l.pids);
        cr_expect_eq(cordon_limits_validate("small", &l, &err), 0, "%s", err.message);
        differ = differ || l.memory_bytes != first.memory_bytes || l.pids != first.pids ||
                 l.disk_bytes != first.disk_bytes;
    }
    cr_expect(differ, "64 draws, all the same");
}

/* A provider's mount path cut in the detail is cut between characters:
 * the facts stay valid UTF-8. */
Test(observe_limits, a_long_path_is_cut_between_characters)
{
    char path[600], report[1024];
    cJSON *r, *limits = cJSON_CreateObject();
    const char *detail;

    /* "/" and 252 'a': the paths buffer (255 bytes) ends inside the first
     * two-byte "é" of each shift; try them all. */
    for (size_t pad = 250; pad < 258; pad++) {
        size_t n = 0;

        path[n++] = '/';
        memset(path + n, 'a', pad);
        n += pad;
        for (int k = 0; k < 20; k++)
            n += (size_t)snprintf(path + n, sizeof(path) - n, "\xc3\xa9");
        path[n] = '\0';
        snprintf(report, sizeof(report),
                 "{\"disk_bytes\":{\"limit\":4194304,\"mounts\":[{\"path\":\"%s\",\"written\":5242880}],"
                 "\"written\":5242880,\"capped\":true}}", path);
        r = cJSON_Parse(report);
        cr_assert_not_null(r);
        cJSON_DeleteItemFromObject(limits, "disk_bytes");
        cr_assert(cordon__observe_limits_judge(r, limits));
        detail = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "disk_bytes"), "detail"));
        cr_assert_not_null(detail);
        cr_expect(cordon_text_is_utf8(detail, strlen(detail)), "pad %zu: invalid UTF-8 in %s", pad, detail);
        cJSON_Delete(r);
    }
    cJSON_Delete(limits);
}

/* ---- the observer's own lock --------------------------------------------------- */

/* Run the observer with args; its stdout into out, its exit status back. */
static int observer(const char *const *args, char *out, size_t out_size)
{
    const char *path = getenv("CORDON_OBSERVER");
    int fds[2], status = -1;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    cr_assert_not_null(path, "CORDON_OBSERVER is not set (make check sets it)");
    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
        const char *argv[16] = { path };
        size_t k = 1;

        for (; args[k - 1] != NULL && k < 15; k++)
            argv[k] = args[k - 1];
        argv[k] = NULL;
        dup2(fds[1], 1);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    while (got + 1 < out_size && (n = read(fds[0], out + got, out_size - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Given the host's own namespaces (this test runs on the host), the
 * observer reports not contained and tries nothing: no fill, no fork, no
 * allocation on the machine that runs the tests. */
Test(observe_limits, the_observer_tries_nothing_in_the_hosts_namespaces)
{
    char ns[128], out[4096];
    struct stat pid_st, mnt_st;
    const char *args[] = { "--limits", "--host-ns", ns, "--disk", "1048576", "--memory", "16777216", "--pids", "8",
                           "--cpus-milli", "500", NULL };
    cJSON *doc;

    cr_assert_eq(stat("/proc/self/ns/pid", &pid_st), 0);
    cr_assert_eq(stat("/proc/self/ns/mnt", &mnt_st), 0);
    snprintf(ns, sizeof(ns), "pid:%llu,mnt:%llu", (unsigned long long)pid_st.st_ino,
             (unsigned long long)mnt_st.st_ino);
    cr_assert_eq(observer(args, out, sizeof(out)), 0, "%s", out);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(doc, "contained")), "%s", out);
    cr_expect(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "contained_detail")), "is the host's") != NULL,
              "%s", out);
    cr_expect_null(cJSON_GetObjectItem(doc, "disk_bytes"), "nothing was filled: %s", out);
    cr_expect_null(cJSON_GetObjectItem(doc, "pids"), "nothing was forked: %s", out);
    cr_expect_null(cJSON_GetObjectItem(doc, "memory_bytes"), "nothing was allocated: %s", out);
    cJSON_Delete(doc);
}

struct usage_row {
    char args[12][24]; /* "" ends the list */
};

/* Each bad command line is refused with status 2 before anything runs. */
static struct usage_row usage_rows[] = {
    { { "--limits" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--disk", "1048576", "--memory", "16777216", "--pids", "8" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--disk", "0", "--memory", "16777216", "--pids", "8",
        "--cpus-milli", "500" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--disk", "2147483648", "--memory", "16777216", "--pids", "8",
        "--cpus-milli", "500" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--disk", "1048576", "--memory", "16M", "--pids", "8",
        "--cpus-milli", "500" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--disk", "1048576", "--memory", "16777216", "--pids", "5000",
        "--cpus-milli", "500" } },
    { { "--limits", "--host-ns", "pid:1,mnt:2", "--swap", "1" } },
    { { "--flood", "0" } },
    { { "--flood", "-5" } },
    { { "--flood", "67108865" } },
};

ParameterizedTestParameters(observe_limits, bad_command_lines_are_refused)
{
    return cr_make_param_array(struct usage_row, usage_rows, sizeof(usage_rows) / sizeof(usage_rows[0]));
}

ParameterizedTest(struct usage_row *row, observe_limits, bad_command_lines_are_refused)
{
    const char *args[13];
    char out[4096];
    size_t n = 0;

    for (; n < 12 && row->args[n][0] != '\0'; n++)
        args[n] = row->args[n];
    args[n] = NULL;
    cr_expect_eq(observer(args, out, sizeof(out)), 2, "%s %s", row->args[0], row->args[1]);
    cr_expect_eq(out[0], '\0', "nothing on stdout: %s", out);
}

Test(observe_limits, flood_prints_exactly_what_it_is_asked)
{
    const char *args[] = { "--flood", "3000", NULL };
    static char out[8192];

    cr_assert_eq(observer(args, out, sizeof(out)), 0);
    cr_expect_eq(strlen(out), 3000);
}
