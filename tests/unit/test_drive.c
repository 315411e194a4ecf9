/* Unit tests of core/drive.c against a fake provider defined here. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/drive.h"
#include <cordon/sdk/host.h>
#include "tests/unit/helpers.h"

static const struct cordon_host_v1 fake_host = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_host_v1),
    .alloc = malloc,
    .free = free,
};

/* What the fake saw, for the test to check. */
static atomic_bool fake_saw_cancel;
static atomic_bool fake_waits_for_cancel;
static atomic_bool fake_io_ok;

static bool wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, timeout_ms) == 1;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int reply(const char *json, char **ret_result_json, struct cordon_error *err)
{
    char *s = cordon_host_strdup(&fake_host, json);

    if (s == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "fake: out of memory");
    *ret_result_json = s;
    return 0;
}

/* The mode is the request itself: the fake reads no JSON. */
static int fake_exec(struct cordon_resource *resource, const char *state_json,
                     const char *request_json, const struct cordon_exec_io *io,
                     char **ret_result_json, struct cordon_error *err)
{
    const char *mode = request_json;
    char buf[4096];
    ssize_t n;

    atomic_store(&fake_io_ok, io->abi_version == CORDON_ABI_VERSION &&
                                  io->struct_size == sizeof(*io) && io->stdin_fd >= 0 &&
                                  io->stdout_fd >= 0 && io->stderr_fd >= 0 && io->cancel_fd >= 0 &&
                                  strcmp(state_json, "{\"id\":\"x\"}") == 0);
    if (strcmp(mode, "fd_link") == 0) {
        /* what the provider was handed as stdin */
        char path[64];

        snprintf(path, sizeof(path), "/proc/self/fd/%d", io->stdin_fd);
        n = readlink(path, buf, sizeof(buf) - 1);
        if (n < 0 || write_all(io->stdout_fd, buf, (size_t)n) < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "fake: readlink");
        return reply("{\"status\":\"exited\",\"exit_code\":0}", ret_result_json, err);
    }
    if (strcmp(mode, "echo") == 0) {
        /* stdin to stdout, then a line on each stream */
        while ((n = read(io->stdin_fd, buf, sizeof(buf))) > 0)
            if (write_all(io->stdout_fd, buf, (size_t)n) < 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "fake: write");
        if (write_all(io->stdout_fd, "out\n", 4) < 0 || write_all(io->stderr_fd, "err\n", 4) < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "fake: write");
        return reply("{\"status\":\"exited\",\"exit_code\":3}", ret_result_json, err);
    }
    if (strcmp(mode, "wait_cancel") == 0) {
        atomic_store(&fake_waits_for_cancel, true);
        if (!wait_readable(io->cancel_fd, 30000))
            return reply("{\"status\":\"exited\",\"exit_code\":0}", ret_result_json, err);
        atomic_store(&fake_saw_cancel, true);
        return reply("{\"status\":\"cancelled\"}", ret_result_json, err);
    }
    if (strcmp(mode, "flood") == 0) {
        /* 5 MiB, stopping as soon as the host cancels */
        memset(buf, 'f', sizeof(buf));
        for (size_t sent = 0; sent < (5u << 20); sent += sizeof(buf)) {
            if (wait_readable(io->cancel_fd, 0)) {
                atomic_store(&fake_saw_cancel, true);
                return reply("{\"status\":\"cancelled\"}", ret_result_json, err);
            }
            if (write_all(io->stdout_fd, buf, sizeof(buf)) < 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "fake: write");
        }
        return reply("{\"status\":\"exited\",\"exit_code\":0}", ret_result_json, err);
    }
    if (strcmp(mode, "burst") == 0) {
        /* fits in the pipe: returns before the host has read a byte */
        memset(buf, 'b', sizeof(buf));
        if (write_all(io->stderr_fd, buf, sizeof(buf)) < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "fake: write");
        return reply("{\"status\":\"exited\",\"exit_code\":0}", ret_result_json, err);
    }
    if (strcmp(mode, "ignore_cancel") == 0) {
        sleep(15);
        return reply("{\"status\":\"exited\",\"exit_code\":0}", ret_result_json, err);
    }
    if (strcmp(mode, "error") == 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, ECONNREFUSED, "fake: daemon gone");
    if (strcmp(mode, "error_silent") == 0)
        return -777;
    if (strcmp(mode, "no_result") == 0)
        return 0;
    /* Any other mode is a literal result JSON to hand back. */
    return reply(mode, ret_result_json, err);
}

static const char *const fake_kinds[] = { "code_execution", NULL };

static const struct cordon_provider_v1 fake_provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = "fake",
    .version = "0",
    .supported_kinds = fake_kinds,
    .exec = fake_exec,
};

static void opts_for(struct cordon_drive_opts *o, const char *mode)
{
    cordon__drive_opts_init(o);
    o->host = &fake_host;
    o->provider = &fake_provider;
    o->state_json = "{\"id\":\"x\"}";
    o->request_json = mode;
    o->retention_bytes = 64 << 10;
    o->timeout_ms = 20000;
}

static void assert_stream(const struct cordon_stream_capture *sc, const char *s)
{
    size_t len = strlen(s);

    cr_assert_eq(sc->len, len, "got %zu bytes, want \"%s\"", sc->len, s);
    cr_assert_eq(memcmp(sc->data, s, len), 0, "got \"%.*s\", want \"%s\"", (int)sc->len,
                 sc->data, s);
}

Test(drive, output_is_captured_and_exit_code_reported)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "echo");
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    cr_assert(atomic_load(&fake_io_ok), "the provider got a malformed cordon_exec_io");
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.exit_code, 3);
    assert_stream(&res.out, "out\n");   /* stdin was /dev/null: nothing echoed */
    assert_stream(&res.err, "err\n");
    cr_assert_lt(res.duration_ms, 5000);
    cordon_exec_outcome_clear(&res);
}

Test(drive, stdin_fd_reaches_the_provider)
{
    char *dir = test_mkdtemp(), path[4096];
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    int fd;

    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/in", dir);
    cr_assert_eq(test_write_file(path, "input\n", 6), 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    opts_for(&o, "echo");
    o.stdin_fd = fd;
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    assert_stream(&res.out, "input\nout\n");
    cr_assert_neq(fcntl(fd, F_GETFD), -1, "the caller's stdin_fd was closed");
    close(fd);
    cordon_exec_outcome_clear(&res);
    test_rmtree(dir);
    free(dir);
}

/* The caller's stdin, whatever it is, never reaches the provider: a
 * directory, a file and even the caller's own pipe arrive as a pipe of
 * the drive's. */
Test(drive, the_callers_stdin_is_relayed_through_a_pipe_of_its_own)
{
    char *dir = test_mkdtemp(), mine[64], *got;
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    struct stat st;
    int fds[3], p[2];

    cr_assert_not_null(dir);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    fds[0] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fds[1] = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    fds[2] = p[0];
    cr_assert(fds[0] >= 0 && fds[1] >= 0 && fstat(p[0], &st) == 0);
    snprintf(mine, sizeof(mine), "pipe:[%lu]", (unsigned long)st.st_ino);
    for (int i = 0; i < 3; i++) {
        opts_for(&o, "fd_link");
        o.stdin_fd = fds[i];
        cordon_error_init(&err);
        cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
        got = strndup(res.out.data != NULL ? res.out.data : "", res.out.len);
        cr_assert_not_null(got);
        cr_expect(strncmp(got, "pipe:[", 6) == 0 && strcmp(got, mine) != 0,
                  "stdin %d reached the provider as %s", i, got);
        free(got);
        cordon_exec_outcome_clear(&res);
    }
    close(fds[0]), close(fds[1]), close(p[0]), close(p[1]);
    test_rmtree(dir);
    free(dir);
}

Test(drive, timeout_fires_the_providers_cancel)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "wait_cancel");
    o.timeout_ms = 200;
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    cr_assert(atomic_load(&fake_saw_cancel), "the provider never saw its cancel fd");
    cr_assert_eq(res.status, CORDON_RUN_TIMEOUT, "status %s", cordon_run_status_name(res.status));
    cr_assert_eq(res.exit_code, -1);
    cr_assert_eq(res.signal, SIGKILL);
    cr_assert_geq(res.duration_ms, 200);
    cr_assert_lt(res.duration_ms, 5000);
    cordon_exec_outcome_clear(&res);
}

Test(drive, output_over_budget_fires_cancel)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "flood");
    o.output_budget = 1 << 20;
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    cr_assert(atomic_load(&fake_saw_cancel), "the provider wrote all 5 MiB without a cancel");
    cr_assert_eq(res.status, CORDON_RUN_OUTPUT_LIMIT, "status %s",
                 cordon_run_status_name(res.status));
    cr_assert_gt(res.out.total_bytes, 1 << 20);
    cr_assert_lt(res.out.total_bytes, 5u << 20);
    cr_assert_eq(res.out.len, 64 << 10);
    cordon_exec_outcome_clear(&res);
}

Test(drive, flood_within_budget_keeps_head_and_tail)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "flood");
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.out.total_bytes, 5u << 20);
    cr_assert_eq(res.out.dropped_bytes, (5u << 20) - (64u << 10));
    cr_assert_eq(res.out.data[0], 'f');
    cr_assert_eq(res.out.data[res.out.len - 1], 'f');
    cordon_exec_outcome_clear(&res);
}

Test(drive, overflow_found_after_the_provider_returned_is_output_limit)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "burst");
    o.output_budget = 1024;
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    cr_assert_eq(res.status, CORDON_RUN_OUTPUT_LIMIT, "status %s",
                 cordon_run_status_name(res.status));
    cr_assert_eq(res.err.total_bytes, 4096);
    cr_assert_eq(res.err.len, 1024, "only the budget is retained");
    cordon_exec_outcome_clear(&res);
}

/* Cancels once the provider waits for it, so the cancel comes mid-exec. */
static void *cancel_when_waiting(void *arg)
{
    int fd = *(int *)arg;

    TEST_WAIT_UNTIL(atomic_load(&fake_waits_for_cancel), 10000);
    if (write(fd, "x", 1) != 1)
        return (void *)1;
    return NULL;
}

Test(drive, caller_cancel_is_passed_on)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    pthread_t th;
    int p[2];

    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cr_assert_eq(pthread_create(&th, NULL, cancel_when_waiting, &p[1]), 0);
    opts_for(&o, "wait_cancel");
    o.cancel_fd = p[0];
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), 0, "%s", err.message);
    pthread_join(th, NULL);
    cr_assert(atomic_load(&fake_saw_cancel));
    cr_assert_eq(res.status, CORDON_RUN_CANCELLED, "status %s", cordon_run_status_name(res.status));
    cr_assert_lt(res.duration_ms, 5000);
    cordon_exec_outcome_clear(&res);
    close(p[0]);
    close(p[1]);
}

Test(drive, provider_error_is_copied)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "error");
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), CORDON_E_UNAVAILABLE);
    cr_assert_eq(err.code, CORDON_E_UNAVAILABLE);
    cr_assert_eq(err.os_errno, ECONNREFUSED);
    cr_assert_str_eq(err.message, "fake: daemon gone");
    cr_assert_eq(res.status, CORDON_RUN_HOST_ERROR);
    cr_assert_eq(res.exit_code, -1);
    cordon_exec_outcome_clear(&res);
}

Test(drive, unknown_provider_code_reads_as_provider_error)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "error_silent");
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), CORDON_E_PROVIDER);
    cr_assert_neq(strstr(err.message, "fake"), NULL, "%s", err.message);
    cr_assert_eq(res.status, CORDON_RUN_HOST_ERROR);
    cordon_exec_outcome_clear(&res);
}

Test(drive, no_fd_is_leaked)
{
    static const char *const modes[] = { "echo", "error", "not json", "wait_cancel" };
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    int before = test_count_open_fds();

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        opts_for(&o, modes[i]);
        o.timeout_ms = 50;
        cordon__drive_exec(&o, &res, &err);
        cordon_exec_outcome_clear(&res);
    }
    cr_assert_eq(test_count_open_fds(), before);
}

/* ---- result JSON mapping ---------------------------------------------------- */

struct result_case {
    const char *json;
    int rc;
    enum cordon_run_status status;
    int exit_code;
    int signal;
};

/* Indexed by the parameters: Criterion's workers cannot share pointers. */
static const struct result_case result_cases[] = {
    { "{\"status\":\"exited\",\"exit_code\":0}", 0, CORDON_RUN_EXITED, 0, 0 },
    { "{\"status\":\"exited\",\"exit_code\":255,\"signal\":0}", 0, CORDON_RUN_EXITED, 255, 0 },
    { "{\"status\":\"signaled\",\"signal\":15}", 0, CORDON_RUN_SIGNALED, -1, 15 },
    { "{\"status\":\"oom\",\"signal\":9}", 0, CORDON_RUN_OOM, -1, 9 },
    { "{\"status\":\"oom\"}", 0, CORDON_RUN_OOM, -1, 0 },
    { "{\"status\":\"cancelled\"}", 0, CORDON_RUN_CANCELLED, -1, 0 },
    /* an exit the mechanism may have folded from signal N: the exit, and N */
    { "{\"status\":\"exited\",\"exit_code\":137,\"signal_folded\":true}", 0, CORDON_RUN_EXITED,
      137, 9 },
    /* not 129-192: nothing a signal folds into */
    { "{\"status\":\"exited\",\"exit_code\":3,\"signal_folded\":true}", 0, CORDON_RUN_EXITED, 3,
      0 },
    /* bad results: as many as good ones */
    { "not json", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"status\":\"weird\"}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"exit_code\":0}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"status\":\"exited\"}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"status\":\"exited\",\"exit_code\":256}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1,
      0 },
    { "{\"status\":\"signaled\"}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "[\"exited\"]", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "no_result", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"status\":\"signaled\",\"signal\":65}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1, 0 },
    { "{\"status\":\"exited\",\"exit_code\":-1}", CORDON_E_PROVIDER, CORDON_RUN_HOST_ERROR, -1,
      0 },
};

ParameterizedTestParameters(drive, result_json_is_mapped)
{
    static int idx[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };
    return cr_make_param_array(int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(int *i, drive, result_json_is_mapped)
{
    const struct result_case *rc = &result_cases[*i];
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, rc->json);
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), rc->rc, "%s: %s", rc->json, err.message);
    cr_assert_eq(res.status, rc->status, "%s: status %s", rc->json,
                 cordon_run_status_name(res.status));
    cr_assert_eq(res.exit_code, rc->exit_code, "%s", rc->json);
    cr_assert_eq(res.signal, rc->signal, "%s", rc->json);
    if (rc->rc < 0)
        cr_assert_neq(strstr(err.message, "fake"), NULL, "message does not name the provider: %s",
                      err.message);
    cordon_exec_outcome_clear(&res);
}

/* ---- bad options ------------------------------------------------------------ */

static const char *const bad_opts_words[] = { "struct_size", "host", "host", "provider",
                                              "provider", "request_json", "state_json" };

ParameterizedTestParameters(drive, bad_options_are_refused)
{
    static int idx[] = { 0, 1, 2, 3, 4, 5, 6 };
    return cr_make_param_array(int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(int *mutate, drive, bad_options_are_refused)
{
    static const struct cordon_host_v1 host_without_free = { .alloc = malloc };
    static const struct cordon_provider_v1 provider_without_exec = { .provider_id = "empty" };
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, "echo");
    switch (*mutate) {
    case 0: o.struct_size = 4; break;
    case 1: o.host = NULL; break;
    case 2: o.host = &host_without_free; break;
    case 3: o.provider = NULL; break;
    case 4: o.provider = &provider_without_exec; break;
    case 5: o.request_json = NULL; break;
    case 6: o.state_json = NULL; break;
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), CORDON_E_INVALID);
    cr_assert_neq(strstr(err.message, bad_opts_words[*mutate]), NULL, "%s", err.message);
    cr_assert_eq(res.status, CORDON_RUN_EXITED, "ret is cleared");
    cr_assert_null(res.out.data);
    cr_assert_eq(cordon__drive_exec(NULL, &res, &err), CORDON_E_INVALID);
}

/* A provider that ignores its cancel fd is left behind after 10 s, not waited for. */
Test(drive, provider_ignoring_cancel_is_abandoned, .timeout = 60)
{
    struct cordon_drive_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    uint64_t t0 = cordon_now_monotonic_ms(), took;

    opts_for(&o, "ignore_cancel");
    o.timeout_ms = 100;
    cordon_error_init(&err);
    cr_assert_eq(cordon__drive_exec(&o, &res, &err), CORDON_E_TIMEOUT, "%s", err.message);
    took = cordon_now_monotonic_ms() - t0;
    cr_assert_geq(took, 10000);
    cr_assert_lt(took, 14000, "waited for the provider instead of leaving it");
    cr_assert_eq(res.status, CORDON_RUN_HOST_ERROR);
    cr_assert_neq(strstr(err.message, "detached"), NULL, "%s", err.message);
    cordon_exec_outcome_clear(&res);
}
