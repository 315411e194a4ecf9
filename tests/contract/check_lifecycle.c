/* cordon-contract: the lifecycle, terminate, reclaim and the checkpoint
 * round trip at the ABI level. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "tests/contract/contract.h"

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
    state = contract_provision(NULL, "code");
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
    const char *state = contract_provision(NULL, "host");
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
    state = contract_provision(id, "host");
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
    static const char *const check =
        "stat -c '%a %n' run.sh d d/e/f.txt && cat d/e/f.txt && ./run.sh";
    static const char *const expected = "755 run.sh\n750 d\n600 d/e/f.txt\ndata\nran\n";
    struct cordon_exec_outcome out;
    char msg[600], *text;
    const char *first = contract_provision(NULL, "host"), *second;
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

    second = contract_provision(NULL, "host");
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
