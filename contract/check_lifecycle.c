/* cordon-contract: the lifecycle, terminate, reclaim and the checkpoint
 * round trip at the ABI level. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "contract/contract.h"

static const char hello[] = "hello from the contract suite\n";
static const char nested[] = "nested bytes \x01\x02\xff end\n";

/* Read a file of an extracted export, bounded; malloc'd, NUL-terminated. */
static char *read_extracted(const char *dir, const char *rel)
{
    char path[4096], *buf;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    cr_assert(fd >= 0, "the export lacks %s: %s", rel, strerror(errno));
    buf = malloc(65537);
    cr_assert(buf != NULL);
    n = read(fd, buf, 65536);
    close(fd);
    cr_assert(n >= 0);
    buf[n] = '\0';
    return buf;
}

Test(contract, lifecycle_runs_in_order_and_round_trips_bytes)
{
    const char *files[] = { "hello.txt", hello, "sub/nested.txt", nested, NULL };
    const char *argv[] = { "sh", "-c", "cat source/hello.txt; echo err >&2; exit 3", NULL };
    struct cordon_exec_outcome out;
    struct cordon_error err;
    char msg[600], *text;
    const char *state, *dir;
    int tar, exported;

    /* Each step in the host's order; every one must succeed for the next. */
    contract_ensure();
    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
    tar = contract_tar_of(files);
    cr_assert_eq(contract_import(state, "source", tar, msg, sizeof(msg)), 0,
                 "import_tar into source failed: %s", msg);
    close(tar);

    cr_assert_eq(contract_exec(state, argv, NULL, &out, msg, sizeof(msg)), 0, "exec failed: %s",
                 msg);
    cr_expect_eq(out.status, CORDON_RUN_EXITED, "status is %s, not exited",
                 cordon_run_status_name(out.status));
    cr_expect_eq(out.exit_code, 3, "exit code is %d, not 3", out.exit_code);
    text = contract_stream_text(&out.out);
    cr_expect_str_eq(text, hello, "stdout is \"%s\"", text);
    free(text);
    text = contract_stream_text(&out.err);
    cr_expect_str_eq(text, "err\n", "stderr is \"%s\"", text);
    free(text);
    cordon_exec_outcome_clear(&out);

    /* Through the sdk's own extractor: the stream must also be safe. */
    cr_assert_eq(contract_export(state, "source", &exported, msg, sizeof(msg)), 0,
                 "export_tar of source failed: %s", msg);
    dir = contract_extract(exported);
    close(exported);
    text = read_extracted(dir, "hello.txt");
    cr_expect_str_eq(text, hello, "exported hello.txt differs: \"%s\"", text);
    free(text);
    text = read_extracted(dir, "sub/nested.txt");
    cr_expect_str_eq(text, nested, "exported sub/nested.txt differs");
    free(text);

    cordon_error_init(&err);
    cr_expect_eq(contract.vt.terminate(contract.resource, state, &err), 0, "terminate failed: %s",
                 err.message);
    cr_expect_eq(contract.vt.terminate(contract.resource, state, &err), 0,
                 "terminate of a terminated execution failed: %s", err.message);
    contract_untrack(state);
    cr_expect_eq(contract.vt.release(contract.resource, &err), 0, "release failed: %s",
                 err.message);
    contract.resource = NULL;
}

Test(contract, terminate_is_idempotent_and_final)
{
    const char *argv[] = { "true", NULL };
    struct cordon_exec_outcome out;
    struct cordon_error err;
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    int r;

    cordon_error_init(&err);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(contract.vt.terminate(contract.resource, state, &err), 0,
                     "terminate #%d failed: %s", i + 1, err.message);
    /* Terminated means gone: nothing may run in it any more. */
    r = contract_exec(state, argv, NULL, &out, NULL, 0);
    cr_expect(r < 0 || out.status != CORDON_RUN_EXITED || out.exit_code != 0,
              "an exec into a terminated execution still ran `true`");
    cordon_exec_outcome_clear(&out);
}

/*
 * Code inside can mkdir and cd without end. Whatever it made in its
 * workspace, terminate and reclaim remove: a tree nested 1,200 deep (more
 * than four times what a walk that holds a directory fd per level may go
 * down) must not make either fail or stay behind. Three `mkdir -p` of 400
 * levels each, so that it takes three processes, not 1,200.
 */
#define DEEP_LEVELS 1200

static void make_deep_tree(const char *state)
{
    static const char script[] =
        "p=d; i=1; while [ $i -lt 400 ]; do p=$p/d; i=$((i+1)); done; "
        "mkdir -p $p && cd $p && mkdir -p $p && cd $p && mkdir -p $p && cd $p && echo x > leaf";
    struct cordon_exec_outcome out;

    contract_sh(state, script, &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "making a tree %d deep in the workspace failed (%s %d)", DEEP_LEVELS,
              cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);
}

static bool listed(const char *id)
{
    struct cordon_error err;
    char *ids = NULL, quoted[64];
    bool found;

    if (contract.vt.list_executions == NULL)
        return false;
    cordon_error_init(&err);
    cr_assert_eq(contract.vt.list_executions(contract.resource, &ids, &err), 0,
                 "list_executions failed: %s", err.message);
    snprintf(quoted, sizeof(quoted), "\"%s\"", id);
    found = ids != NULL && strstr(ids, quoted) != NULL;
    contract.host->free(ids);
    return found;
}

Test(contract, terminate_and_reclaim_remove_a_tree_nested_without_end)
{
    struct cordon_error err;
    char id[48], other[48];
    const char *state;

    contract_new_id(id, sizeof(id));
    state = contract_provision(id, CORDON_SPEC_LAYOUT_HOST);
    make_deep_tree(state);
    cordon_error_init(&err);
    cr_expect_eq(contract.vt.terminate(contract.resource, state, &err), 0,
                 "terminate of an execution with a tree %d deep failed: %s", DEEP_LEVELS,
                 err.message);
    cr_expect_not(listed(id), "after terminate, list_executions still holds %s", id);

    contract_new_id(other, sizeof(other));
    state = contract_provision(other, CORDON_SPEC_LAYOUT_HOST);
    make_deep_tree(state);
    cr_expect_eq(contract.vt.reclaim(contract.resource, other, &err), 0,
                 "reclaim of an execution with a tree %d deep failed: %s", DEEP_LEVELS,
                 err.message);
    cr_expect_not(listed(other), "after reclaim, list_executions still holds %s", other);
}

/* How long processes may take to vanish from the host after terminate. */
#define LEFTOVER_MS 2000u

/* The ways a program puts a child out of its exec's reach. Each runs
 * with the marker as $0 and its row as $1 appended, touches started.$1 in
 * the workspace ($w), then becomes `sleep MARKER`. */
static const struct {
    const char *how;
    const char *script;
    bool contained_only;   /* asked only of a provider that claims process_contained */
} detached_forms[] = {
    { "setsid", "setsid sh -c 'touch \"$w/started.$1\"; exec sleep \"$0\"'", false },
    { "double fork", "sh -c '(touch \"$w/started.$1\"; exec sleep \"$0\") &'", false },
    { "nohup", "nohup sh -c 'touch \"$w/started.$1\"; exec sleep \"$0\"'", false },
    /* Out of the workspace as well: what a provider that finds its
     * processes by their working directory misses. */
    { "setsid after cd /", "cd / && setsid sh -c 'touch \"$w/started.$1\"; exec sleep \"$0\"'",
      true },
};
#define N_DETACHED (sizeof(detached_forms) / sizeof(detached_forms[0]))
#define DETACHED_PIDS 1024

/* The host processes of the boundary a provider names (provider.h), and
 * everything below them, each with its start time: what must be gone
 * after terminate. Under gVisor the sandbox's own processes are no host
 * processes at all; the Sentry and its stubs are. */
#define BOUNDARY_MAX 64

struct host_proc {
    long pid;
    unsigned long long start;
};

static bool proc_start(long pid, unsigned long long *ret)
{
    char path[64], buf[1024], *p;
    FILE *f;
    bool ok = false;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return false;
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL) {
        /* Field 22 is the 20th after the command name; a zombie runs nothing. */
        p++;
        for (int field = 3; field < 22 && p != NULL; field++) {
            if (field == 3 && (p[1] == 'Z' || p[1] == 'X'))
                break;
            p = strchr(p + 1, ' ');
        }
        ok = p != NULL && sscanf(p, " %llu", ret) == 1;
    }
    fclose(f);
    return ok;
}

static size_t boundary_processes(const char *state, struct host_proc *procs)
{
    struct cordon_error err;
    char *answer = NULL;
    size_t n = 0;
    cJSON *doc;
    const cJSON *pid;

    if (contract.vt.boundary == NULL)
        return 0;
    cordon_error_init(&err);
    cr_assert_eq(contract.vt.boundary(contract.resource, state, &answer, &err), 0,
                 "boundary of a running execution failed: %s", err.message);
    doc = cJSON_Parse(answer);
    contract.host->free(answer);
    cJSON_ArrayForEach(pid, cJSON_GetObjectItemCaseSensitive(doc, "pids"))
        if (cJSON_IsNumber(pid) && n < BOUNDARY_MAX && proc_start((long)pid->valuedouble, &procs[n].start))
            procs[n++].pid = (long)pid->valuedouble;
    cJSON_Delete(doc);
    /* Breadth first through the children of every thread. */
    for (size_t i = 0; i < n; i++) {
        char path[96];
        struct dirent *de;
        DIR *tasks;

        snprintf(path, sizeof(path), "/proc/%ld/task", procs[i].pid);
        tasks = opendir(path);
        while (tasks != NULL && (de = readdir(tasks)) != NULL) {
            FILE *f;
            long kid;

            if (de->d_name[0] < '0' || de->d_name[0] > '9')
                continue;
            snprintf(path, sizeof(path), "/proc/%ld/task/%s/children", procs[i].pid, de->d_name);
            f = fopen(path, "re");
            while (f != NULL && n < BOUNDARY_MAX && fscanf(f, "%ld", &kid) == 1)
                if (proc_start(kid, &procs[n].start))
                    procs[n++].pid = kid;
            if (f != NULL)
                fclose(f);
        }
        if (tasks != NULL)
            closedir(tasks);
    }
    return n;
}

/* How many of procs still run (the same pid and start time) after ms. */
static int boundary_left_after(const struct host_proc *procs, size_t n, unsigned ms)
{
    struct timespec pause = { 0, 50 * 1000 * 1000 };
    int left;

    for (unsigned waited = 0;; waited += 50) {
        left = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned long long start;

            left += proc_start(procs[i].pid, &start) && start == procs[i].start;
        }
        if (left == 0 || waited >= ms)
            return left;
        nanosleep(&pause, NULL);
    }
}

Test(contract, terminate_leaves_no_detached_child_on_the_host)
{
    char markers[N_DETACHED][64], script[2048], msg[600];
    struct contract_text left_desc = { 0 };
    const char *argv[] = { "sh", "-c", script, NULL };
    struct host_proc boundary[BOUNDARY_MAX];
    size_t n_boundary;
    struct cordon_exec_outcome out;
    struct cordon_error err;
    const char *state;
    size_t used, n_forms = 0;
    cJSON *facts;
    bool contained;
    int alive = 0, left = 0;

    facts = contract_probe(CORDON_PROBE_FULL, NULL);
    contained = contract_claims(facts, "process_contained");
    cJSON_Delete(facts);
    {
        /* What is tested is terminate, not the pids limit, so the limit
         * leaves room for the runtime's own tasks: under gVisor's ptrace
         * platform the host's pids cgroup counts some forty tasks of the
         * Sentry and about thirty stub threads per sandbox process, and
         * three detached children with their shells exhaust 128. */
        struct cordon_limits limits = contract_limits;
        char *text;
        int r;

        limits.pids = DETACHED_PIDS;
        text = contract_spec_with(NULL, CORDON_SPEC_LAYOUT_HOST, &limits, NULL);
        r = contract_try_provision(text, &state, msg, sizeof(msg));
        free(text);
        cr_assert_eq(r, 0, "provision with pids %d failed: %s", DETACHED_PIDS, msg);
    }

    /* One shell starts every child detached, with its stdio off the exec's
     * pipes, and waits until each has started: the exec then ends by
     * itself, leaving them behind. */
    used = (size_t)snprintf(script, sizeof(script),
                            "command -v setsid >/dev/null && command -v nohup >/dev/null || "
                            "exit 99\nw=$PWD; export w\n");
    for (size_t i = 0; i < N_DETACHED; i++) {
        if (detached_forms[i].contained_only && !contained)
            continue;
        contract_sleep_marker(markers[i], sizeof(markers[i]));
        used += (size_t)snprintf(script + used, sizeof(script) - used,
                                 "(%s %s %zu) </dev/null >/dev/null 2>&1 &\n",
                                 detached_forms[i].script, markers[i], i);
        n_forms++;
    }
    /* The shell counts the files itself: ls(1) would stat them (statx,
     * which older gVisor releases refuse). */
    used += (size_t)snprintf(script + used, sizeof(script) - used,
                             "n() { set -- started.*; [ -e \"$1\" ] && echo $# || echo 0; }\n"
                             "i=0; while [ \"$(n)\" -lt %zu ]; do "
                             "i=$((i+1)); [ $i -le 200 ] || exit 98; sleep 0.05; done\n",
                             n_forms);
    cr_assert_lt(used, sizeof(script));
    cr_assert_eq(contract_exec(state, argv, NULL, &out, msg, sizeof(msg)), 0, "exec failed: %s",
                 msg);
    if (out.status == CORDON_RUN_EXITED && out.exit_code == 99) {
        cordon_exec_outcome_clear(&out);
        contract_skip("the sandbox lacks setsid or nohup: cannot start detached children");
    }
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "starting %zu detached children failed (%s %d; 98: not all started in 10 s)",
              n_forms, cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);
    for (size_t i = 0; i < N_DETACHED; i++)
        if (!detached_forms[i].contained_only || contained)
            alive += contract_count_processes(markers[i]);
    /* A provider may end them when the exec ends; terminate must. */
    cr_log_info("%d of %zu detached children still run on the host after the exec", alive,
                n_forms);
    n_boundary = boundary_processes(state, boundary);
    cr_log_info("the boundary names %zu host process(es) with what is below them", n_boundary);

    cordon_error_init(&err);
    cr_assert_eq(contract.vt.terminate(contract.resource, state, &err), 0, "terminate failed: %s",
                 err.message);
    contract_untrack(state);
    for (size_t i = 0; i < N_DETACHED; i++) {
        int n;

        if (detached_forms[i].contained_only && !contained)
            continue;
        n = contract_wait_no_processes(markers[i], LEFTOVER_MS);
        if (n > 0) {
            contract_text_add(&left_desc, "%s%s (sleep %s)", left > 0 ? ", " : "",
                              detached_forms[i].how, markers[i]);
            left += n;
        }
    }
    cr_expect_eq(left, 0,
                 "%d process(es) an exec started survive terminate on the host by %u ms: %s",
                 left, LEFTOVER_MS, contract_text_str(&left_desc));
    contract_text_clear(&left_desc);
    cr_expect_eq(boundary_left_after(boundary, n_boundary, LEFTOVER_MS), 0,
                 "host processes of the execution's boundary survive terminate by %u ms", LEFTOVER_MS);
}

Test(contract, reclaim_by_id_destroys_the_execution)
{
    char id[48], token[33], script[128], msg[600];
    const char *files[] = { "marker.txt", token, NULL };
    const char *argv[] = { "cat", "marker.txt", NULL };
    struct cordon_exec_outcome out;
    struct cordon_error err;
    const char *state;
    char *text;
    int tar, r;

    contract_random_hex(token, 16);
    contract_new_id(id, sizeof(id));
    state = contract_provision(id, CORDON_SPEC_LAYOUT_HOST);
    tar = contract_tar_of(files);
    cr_assert_eq(contract_import(state, "", tar, msg, sizeof(msg)), 0, "import failed: %s", msg);
    close(tar);
    snprintf(script, sizeof(script), "test \"$(cat marker.txt)\" = %s", token);
    contract_sh(state, script, &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "the imported marker is not visible inside before reclaim");
    cordon_exec_outcome_clear(&out);

    /* reclaim knows only the id, as after a crash that lost the state. */
    cordon_error_init(&err);
    cr_assert_eq(contract.vt.reclaim(contract.resource, id, &err), 0, "reclaim(%s) failed: %s",
                 id, err.message);
    /* A provider that kept the execution would still show the marker. */
    r = contract_exec(state, argv, NULL, &out, NULL, 0);
    text = contract_stream_text(&out.out);
    cr_expect(r < 0 || strstr(text, token) == NULL,
              "after reclaim(%s) an exec with the old state still sees the execution's files", id);
    free(text);
    cordon_exec_outcome_clear(&out);
    cr_expect_eq(contract.vt.terminate(contract.resource, state, &err), 0,
                 "terminate after reclaim failed (gone must be success): %s", err.message);
    cr_expect_eq(contract.vt.reclaim(contract.resource, id, &err), 0,
                 "a second reclaim(%s) failed: %s", id, err.message);
}

Test(contract, reclaim_of_unknown_id_succeeds)
{
    struct cordon_error err;
    char id[48];

    contract_ensure();
    contract_new_id(id, sizeof(id));
    cordon_error_init(&err);
    cr_expect_eq(contract.vt.reclaim(contract.resource, id, &err), 0,
                 "reclaim of an id that never existed failed: %s", err.message);
}

Test(contract, checkpoint_tar_round_trips_files_and_modes)
{
    static const char *const make =
        "mkdir -p d/e && printf 'data\\n' > d/e/f.txt && chmod 0600 d/e/f.txt && "
        "printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod 0755 run.sh && chmod 0750 d";
    /* find -printf, not stat(1): coreutils' statx is refused by older
     * gVisor releases (EINVAL), whose fstatat answers. */
    static const char *const check =
        "find run.sh d d/e/f.txt -maxdepth 0 -printf '%m %p\\n' && cat d/e/f.txt && ./run.sh";
    static const char *const expected = "755 run.sh\n750 d\n600 d/e/f.txt\ndata\nran\n";
    struct cordon_exec_outcome out;
    char msg[600], *text;
    const char *first = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST), *second;
    int tar;

    /* What a checkpoint is at the ABI level: export of the workspace root
     * from one execution, import into a fresh one. */
    contract_sh(first, make, &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "writing files inside failed (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cordon_exec_outcome_clear(&out);
    cr_assert_eq(contract_export(first, "", &tar, msg, sizeof(msg)), 0,
                 "export_tar of the workspace failed: %s", msg);

    second = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    cr_assert_eq(contract_import(second, "", tar, msg, sizeof(msg)), 0,
                 "import_tar of the exported workspace failed: %s", msg);
    close(tar);
    contract_sh(second, check, &out);
    text = contract_stream_text(&out.out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "checking the restored files failed (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cr_expect_str_eq(text, expected, "the restored workspace differs:\n%s", text);
    free(text);
    cordon_exec_outcome_clear(&out);
}
