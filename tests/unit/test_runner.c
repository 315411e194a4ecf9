/* Unit tests of sdk/runner.c: real processes, real pipes, real signals. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/runner.h>
#include "tests/unit/helpers.h"

static const char *const base_env[] = { "PATH=/usr/bin:/bin", NULL };

/* opts for argv with capture, 1 MiB retention per stream and a 20 s safety timeout. */
static void opts_for(struct cordon_runner_opts *o, const char *const *argv)
{
    cordon_runner_opts_init(o);
    o->argv = argv;
    o->envp = base_env;
    o->retention_bytes = 1 << 20;
    o->timeout_ms = 20000;
}

static void run_ok(const struct cordon_runner_opts *o, struct cordon_exec_outcome *res)
{
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(o, res, &err), 0, "run failed: %s", err.message);
}

/* stream content equals the C string s exactly */
static void assert_stream(const struct cordon_stream_capture *sc, const char *s)
{
    size_t len = strlen(s);

    cr_assert_eq(sc->len, len, "got %zu bytes \"%.*s\", want \"%s\"", sc->len, (int)sc->len,
                 sc->data ? sc->data : "", s);
    cr_assert_eq(memcmp(sc->data, s, len), 0, "got \"%.*s\", want \"%s\"", (int)sc->len,
                 sc->data, s);
}

/* No child of this process is left, reaped or not. */
static void assert_no_children(void)
{
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
    cr_assert_eq(errno, ECHILD);
}

/* Every process whose command line holds marker is gone within 10 s. */
static void assert_no_survivors(const char *marker)
{
    int count = -1;

    cr_assert(TEST_WAIT_UNTIL((count = test_count_processes(marker)) == 0, 10000),
              "%d processes with \"%s\" survived", count, marker);
}

/* A sleep argument unique to this test process, e.g. "1000.4711". */
static void make_marker(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "1000.%d%s", (int)getpid(), tag);
}

Test(runner, echo_output_is_captured)
{
    static const char *const argv[] = { "/bin/echo", "hello", "world", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.exit_code, 0);
    cr_assert_eq(res.signal, 0);
    assert_stream(&res.out, "hello world\n");
    assert_stream(&res.err, "");
    cr_assert_eq(res.out.dropped_bytes, 0);
    cr_assert_lt(res.duration_ms, 5000);
    cordon_exec_outcome_clear(&res);
    assert_no_children();
}

Test(runner, stdout_and_stderr_are_kept_apart)
{
    static const char *const argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; echo out2",
                                        NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    run_ok(&o, &res);
    assert_stream(&res.out, "out\nout2\n");
    assert_stream(&res.err, "err\n");
    cordon_exec_outcome_clear(&res);
}

ParameterizedTestParameters(runner, exit_code_is_reported)
{
    static int codes[] = { 0, 1, 42, 127, 255 };
    return cr_make_param_array(int, codes, sizeof(codes) / sizeof(codes[0]));
}

ParameterizedTest(int *code, runner, exit_code_is_reported)
{
    char script[64];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    snprintf(script, sizeof(script), "exit %d", *code);
    opts_for(&o, argv);
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.exit_code, *code);
    cordon_exec_outcome_clear(&res);
}

ParameterizedTestParameters(runner, death_by_signal_is_reported)
{
    static int sigs[] = { SIGKILL, SIGTERM, SIGSEGV, SIGUSR1 };
    return cr_make_param_array(int, sigs, sizeof(sigs) / sizeof(sigs[0]));
}

ParameterizedTest(int *sig, runner, death_by_signal_is_reported)
{
    char script[64];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    snprintf(script, sizeof(script), "kill -%d $$", *sig);
    opts_for(&o, argv);
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_SIGNALED, "status %s", cordon_run_status_name(res.status));
    cr_assert_eq(res.signal, *sig);
    cr_assert_eq(res.exit_code, -1);
    cordon_exec_outcome_clear(&res);
}

/* ---- programs that cannot start ------------------------------------------ */

struct missing_case {
    const char *argv0;
    const char *cwd;
    const char *const *envp;
};

static const char *const env_bad_path[] = { "PATH=/nonexistent:relative/bin:", NULL };

/* Criterion's workers are separate processes: parameters carry indices into
 * this table, never pointers. */
static const struct missing_case missing_cases[] = {
    { "cordon-no-such-program-4711", NULL, NULL },
    { "/nonexistent/cordon-prog", NULL, NULL },
    { "./cordon-no-such-program", "/", NULL },
    { "echo", NULL, env_bad_path },    /* relative PATH entries are not searched */
};

ParameterizedTestParameters(runner, missing_program_fails_before_fork)
{
    static int idx[] = { 0, 1, 2, 3 };
    return cr_make_param_array(int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(int *i, runner, missing_program_fails_before_fork)
{
    const struct missing_case *mc = &missing_cases[*i];
    const char *argv[] = { mc->argv0, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, argv);
    o.cwd = mc->cwd;
    if (mc->envp != NULL)
        o.envp = mc->envp;
    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(&o, &res, &err), CORDON_E_NOT_FOUND);
    cr_assert_eq(err.code, CORDON_E_NOT_FOUND);
    cr_assert_neq(strstr(err.message, mc->argv0), NULL, "message does not name it: %s",
                  err.message);
    cr_assert_null(res.out.data);
    assert_no_children();
}

Test(runner, program_found_through_envp_path)
{
    static const char *const argv[] = { "echo", "found", NULL };
    static const char *const env[] = { "X=1", "PATH=/nonexistent:/bin", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.envp = env;
    run_ok(&o, &res);
    assert_stream(&res.out, "found\n");
    cordon_exec_outcome_clear(&res);
}

Test(runner, file_without_exec_permission_fails_in_the_child)
{
    char *dir = test_mkdtemp(), path[PATH_MAX];
    const char *argv[] = { path, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/script", dir);
    cr_assert_eq(test_write_file(path, "#!/bin/sh\necho no\n", 18), 0);
    cr_assert_eq(chmod(path, 0644), 0);
    opts_for(&o, argv);
    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(&o, &res, &err), CORDON_E_PROVIDER);
    cr_assert_eq(err.os_errno, EACCES, "%s", err.message);
    cr_assert_neq(strstr(err.message, path), NULL, "%s", err.message);
    assert_no_children();
    test_rmtree(dir);
    free(dir);
}

static int setup_fails_eperm(void *arg)
{
    (void)arg;
    return EPERM;
}

Test(runner, child_setup_failure_fails_the_run_and_reaps)
{
    static const char *const argv[] = { "/bin/echo", "never", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, argv);
    o.child_setup = setup_fails_eperm;
    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(&o, &res, &err), CORDON_E_PROVIDER);
    cr_assert_eq(err.os_errno, EPERM);
    cr_assert_neq(strstr(err.message, "child_setup"), NULL, "%s", err.message);
    assert_no_children();
}

static int setup_umask(void *arg)
{
    umask(*(mode_t *)arg);
    return 0;
}

Test(runner, child_setup_runs_in_the_child_only)
{
    static const char *const argv[] = { "/bin/sh", "-c", "umask", NULL };
    static mode_t mask = 027;
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    mode_t before = umask(022);

    opts_for(&o, argv);
    o.child_setup = setup_umask;
    o.child_setup_arg = &mask;
    run_ok(&o, &res);
    assert_stream(&res.out, "0027\n");
    cr_assert_eq(umask(before), 022, "the parent's umask changed");
    cordon_exec_outcome_clear(&res);
}

/* What a fork_child setup writes stays in the child's own copy. */
static int setup_writes(void *arg)
{
    *(volatile int *)arg = 1;
    return 0;
}

Test(runner, fork_child_gives_the_setup_its_own_memory)
{
    static const char *const argv[] = { "/bin/true", NULL };
    static volatile int written;
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.child_setup = setup_writes;
    o.child_setup_arg = (void *)&written;
    o.fork_child = true;
    run_ok(&o, &res);
    cr_assert_eq(res.exit_code, 0);
    cr_assert_eq(written, 0, "the child's write reached the caller's memory");
    cordon_exec_outcome_clear(&res);
}

/* A caller built before fork_child was appended passes the older size. */
Test(runner, the_size_before_fork_child_is_accepted)
{
    static const char *const argv[] = { "/bin/true", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.fork_child = true; /* beyond the old size: must be ignored */
    o.struct_size = (uint32_t)(offsetof(struct cordon_runner_opts, child_setup_arg) +
                               sizeof(void *));
    run_ok(&o, &res);
    cr_assert_eq(res.exit_code, 0);
    cordon_exec_outcome_clear(&res);
    o.struct_size = 12;
    cr_assert_eq(cordon_runner_run(&o, &res, NULL), CORDON_E_INVALID);
}

Test(runner, missing_cwd_is_not_found)
{
    static const char *const argv[] = { "/bin/pwd", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, argv);
    o.cwd = "/nonexistent/cordon-dir";
    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(&o, &res, &err), CORDON_E_NOT_FOUND);
    cr_assert_neq(strstr(err.message, "cwd"), NULL, "%s", err.message);
    assert_no_children();
}

/* ---- bad options ---------------------------------------------------------- */

/* The word the message must contain, per broken field (index = mutation). */
static const char *const bad_opts_words[] = { "argv", "argv", "argv", "struct_size",
                                              "stdin_fd", "stdin_len", "cwd" };

ParameterizedTestParameters(runner, bad_options_are_refused)
{
    static int idx[] = { 0, 1, 2, 3, 4, 5, 6 };
    return cr_make_param_array(int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(int *mutate, runner, bad_options_are_refused)
{
    static const char *const good[] = { "/bin/true", NULL };
    static const char *const null_argv0[] = { NULL };
    static const char *const empty_argv0[] = { "", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;

    opts_for(&o, good);
    switch (*mutate) {
    case 0: o.argv = NULL; break;
    case 1: o.argv = null_argv0; break;
    case 2: o.argv = empty_argv0; break;
    case 3: o.struct_size = 8; break;
    case 4: o.stdin_fd = 0; o.stdin_data = "x"; o.stdin_len = 1; break;
    case 5: o.stdin_len = 3; break;
    case 6: o.cwd = ""; break;
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon_runner_run(&o, &res, &err), CORDON_E_INVALID);
    cr_assert_neq(strstr(err.message, bad_opts_words[*mutate]), NULL, "%s", err.message);
    cr_assert_eq(cordon_runner_run(NULL, &res, &err), CORDON_E_INVALID);
    assert_no_children();
}

/* ---- stdin, environment, cwd ----------------------------------------------- */

Test(runner, stdin_data_is_fed_to_cat)
{
    static const char *const argv[] = { "/bin/cat", NULL };
    /* Larger than a pipe buffer, so the parent must feed it while reading. */
    size_t len = 300000;
    char *data = malloc(len);
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    cr_assert_not_null(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)(i % 253);
    opts_for(&o, argv);
    o.stdin_data = data;
    o.stdin_len = len;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.out.len, len);
    cr_assert_eq(memcmp(res.out.data, data, len), 0);
    cordon_exec_outcome_clear(&res);
    free(data);
}

Test(runner, empty_stdin_data_gives_eof)
{
    static const char *const argv[] = { "/bin/sh", "-c", "cat; echo end", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.stdin_data = "";
    o.stdin_len = 0;
    run_ok(&o, &res);
    assert_stream(&res.out, "end\n");
    cordon_exec_outcome_clear(&res);
}

Test(runner, default_stdin_is_dev_null)
{
    static const char *const argv[] = { "/bin/sh", "-c", "cat; readlink /proc/self/fd/0", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    run_ok(&o, &res);
    assert_stream(&res.out, "/dev/null\n");
    cordon_exec_outcome_clear(&res);
}

Test(runner, stdin_fd_is_read_by_the_child)
{
    static const char *const argv[] = { "/bin/cat", NULL };
    char *dir = test_mkdtemp(), path[PATH_MAX];
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    int fd;

    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/in", dir);
    cr_assert_eq(test_write_file(path, "from a file\n", 12), 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    opts_for(&o, argv);
    o.stdin_fd = fd;
    run_ok(&o, &res);
    assert_stream(&res.out, "from a file\n");
    cr_assert_neq(fcntl(fd, F_GETFD), -1, "the caller's stdin_fd was closed");
    close(fd);
    cordon_exec_outcome_clear(&res);
    test_rmtree(dir);
    free(dir);
}

Test(runner, stdin_closed_by_the_child_does_not_raise_sigpipe)
{
    static const char *const argv[] = { "/bin/sh", "-c", "exec 0<&-; sleep 0.3; echo ok", NULL };
    size_t len = 4 << 20;
    char *data = calloc(1, len);
    sigset_t before, after, pending;
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    cr_assert_not_null(data);
    pthread_sigmask(SIG_SETMASK, NULL, &before);
    opts_for(&o, argv);
    o.stdin_data = data;
    o.stdin_len = len;
    run_ok(&o, &res);     /* a SIGPIPE would have killed this worker */
    assert_stream(&res.out, "ok\n");
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    cr_assert_eq(sigismember(&after, SIGPIPE), sigismember(&before, SIGPIPE), "mask not restored");
    cr_assert_eq(sigpending(&pending), 0);
    cr_assert_eq(sigismember(&pending, SIGPIPE), 0, "SIGPIPE left pending");
    cordon_exec_outcome_clear(&res);
    free(data);
}

Test(runner, only_the_given_environment_is_passed)
{
    static const char *const argv[] = { "/usr/bin/env", NULL };
    static const char *const env[] = { "A=1", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    cr_assert_eq(setenv("CORDON_TEST_LEAK", "yes", 1), 0);
    opts_for(&o, argv);
    o.envp = env;
    run_ok(&o, &res);
    assert_stream(&res.out, "A=1\n");
    cordon_exec_outcome_clear(&res);
    o.envp = NULL;
    run_ok(&o, &res);
    assert_stream(&res.out, "");
    cordon_exec_outcome_clear(&res);
}

Test(runner, cwd_is_entered)
{
    static const char *const argv[] = { "/bin/pwd", "-P", NULL };
    char *dir = test_mkdtemp(), real[PATH_MAX], want[PATH_MAX + 2], here[PATH_MAX], now[PATH_MAX];
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    cr_assert_not_null(dir);
    cr_assert_not_null(realpath(dir, real));
    cr_assert_not_null(getcwd(here, sizeof(here)));
    snprintf(want, sizeof(want), "%s\n", real);
    opts_for(&o, argv);
    o.cwd = dir;
    run_ok(&o, &res);
    assert_stream(&res.out, want);
    cr_assert_not_null(getcwd(now, sizeof(now)));
    cr_assert_str_eq(now, here, "the parent's cwd changed");
    cordon_exec_outcome_clear(&res);
    test_rmtree(dir);
    free(dir);
}

Test(runner, child_has_only_fds_0_1_2)
{
    static const char *const argv[] = { "/bin/sh", "-c", "ls -1 /proc/$$/fd", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    /* Not close-on-exec on purpose: the runner must close it anyway. */
    int leak = open("/dev/null", O_RDONLY);

    cr_assert_geq(leak, 3);
    opts_for(&o, argv);
    run_ok(&o, &res);
    assert_stream(&res.out, "0\n1\n2\n");
    cordon_exec_outcome_clear(&res);
    close(leak);
}

/* pass_fds: the chosen fds reach the child at their numbers (readable,
 * not close-on-exec there), and nothing else above 2 does. */
Test(runner, pass_fds_reach_the_child_at_their_numbers)
{
    char script[256];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    int p[2], leak = open("/dev/null", O_RDONLY), pass[2];

    cr_assert_geq(leak, 3);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cr_assert_eq(write(p[1], "seccomp bpf\n", 12), 12);
    close(p[1]);
    /* At numbers a shell keeps alone, above the leak. */
    pass[0] = fcntl(p[0], F_DUPFD_CLOEXEC, 40);
    pass[1] = fcntl(leak, F_DUPFD_CLOEXEC, 47);
    cr_assert(pass[0] == 40 && pass[1] == 47);
    close(p[0]);
    /* dash redirects only fds 0-9: cat opens the inherited fd by name.
     * No pipeline: the shell's own pipe ends would show in its fd list. */
    snprintf(script, sizeof(script), "cat /dev/fd/40; ls -1 /proc/$$/fd");
    opts_for(&o, argv);
    o.pass_fds = pass;
    o.n_pass_fds = 2;
    run_ok(&o, &res);
    assert_stream(&res.out, "seccomp bpf\n0\n1\n2\n40\n47\n");
    cordon_exec_outcome_clear(&res);
    /* In the caller they stay close-on-exec. */
    cr_expect_eq(fcntl(pass[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(pass[0]);
    close(pass[1]);
    close(leak);
}

Test(runner, pass_fds_refusals_name_the_entry)
{
    static const char *const argv[] = { "/bin/true", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), stdio[] = { 2 }, closed[] = { 900 },
        twice[] = { fd, fd }, many[CORDON_RUNNER_PASS_FDS_MAX + 1];

    cr_assert_geq(fd, 3);
    for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++)
        many[i] = fd;
    struct {
        const int *fds;
        size_t n;
        int code;
        const char *needle;
    } cases[] = {
        { stdio, 1, CORDON_E_INVALID, "pass_fds[0]: 2, must be 3 or more" },
        { closed, 1, CORDON_E_INVALID, "pass_fds[0]: 900 is not an open fd" },
        { twice, 2, CORDON_E_INVALID, "pass_fds[1]: " },
        { many, CORDON_RUNNER_PASS_FDS_MAX + 1, CORDON_E_LIMIT, "more than the limit of 64" },
        { NULL, 1, CORDON_E_INVALID, "pass_fds: NULL" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opts_for(&o, argv);
        o.pass_fds = cases[i].fds;
        o.n_pass_fds = cases[i].n;
        cordon_error_init(&err);
        cr_expect_eq(cordon_runner_run(&o, &res, &err), cases[i].code, "case %zu: %s", i,
                     err.message);
        cr_expect(strstr(err.message, cases[i].needle) != NULL, "case %zu: %s", i, err.message);
        cordon_exec_outcome_clear(&res);
    }
    assert_no_children();
    close(fd);
}

/* ---- timeout, limits, cancel ------------------------------------------------ */

Test(runner, timeout_kills_the_whole_tree)
{
    char marker[64], script[256];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    uint64_t t0 = cordon_now_monotonic_ms();

    make_marker(marker, sizeof(marker), "1");
    snprintf(script, sizeof(script), "sleep %s & sleep %s", marker, marker);
    opts_for(&o, argv);
    o.timeout_ms = 300;
    o.grace_ms = 100;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_TIMEOUT, "status %s", cordon_run_status_name(res.status));
    cr_assert_eq(res.exit_code, -1);
    cr_assert_neq(res.signal, 0);
    cr_assert_geq(res.duration_ms, 300);
    cr_assert_lt(cordon_now_monotonic_ms() - t0, 5000);
    assert_no_survivors(marker);
    assert_no_children();
    cordon_exec_outcome_clear(&res);
}

Test(runner, timeout_escalates_to_sigkill_after_grace)
{
    char marker[64], script[256];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    /* SIG_IGN survives exec: the whole tree ignores SIGTERM. */
    make_marker(marker, sizeof(marker), "2");
    snprintf(script, sizeof(script), "trap '' TERM; sleep %s & sleep %s; echo survived", marker,
             marker);
    opts_for(&o, argv);
    o.timeout_ms = 200;
    o.grace_ms = 200;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_TIMEOUT);
    cr_assert_eq(res.signal, SIGKILL);
    cr_assert_geq(res.duration_ms, 400);
    cr_assert_lt(res.duration_ms, 5000);
    assert_stream(&res.out, "");
    assert_no_survivors(marker);
    cordon_exec_outcome_clear(&res);
}

Test(runner, background_child_of_a_finished_leader_is_killed)
{
    char marker[64], script[256];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    make_marker(marker, sizeof(marker), "3");
    snprintf(script, sizeof(script), "sleep %s & echo done", marker);
    opts_for(&o, argv);
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.exit_code, 0);
    assert_stream(&res.out, "done\n");
    cr_assert_lt(res.duration_ms, 5000);
    assert_no_survivors(marker);
    assert_no_children();
    cordon_exec_outcome_clear(&res);
}

Test(runner, output_flood_over_budget_is_stopped)
{
    static const char *const argv[] = { "/usr/bin/head", "-c", "10000000", "/dev/zero", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.retention_bytes = 64 << 10;
    o.output_budget = 1 << 20;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_OUTPUT_LIMIT, "status %s",
                 cordon_run_status_name(res.status));
    cr_assert_gt(res.out.total_bytes, 1 << 20);
    cr_assert_lt(res.out.total_bytes, 10000000, "the flood was not stopped");
    cr_assert_eq(res.out.len, 64 << 10);
    cr_assert_eq(res.signal, SIGKILL);
    cr_assert_lt(res.duration_ms, 5000);
    cordon_exec_outcome_clear(&res);
}

Test(runner, small_overflow_is_output_limit_even_after_exit)
{
    static const char *const argv[] = { "/usr/bin/head", "-c", "8192", "/dev/zero", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    opts_for(&o, argv);
    o.output_budget = 1024;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_OUTPUT_LIMIT, "status %s",
                 cordon_run_status_name(res.status));
    cr_assert_eq(res.out.len, 1024, "only the budget is retained");
    cordon_exec_outcome_clear(&res);
}

Test(runner, flood_without_budget_keeps_head_and_tail)
{
    static const size_t total = 10 << 20, retention = 64 << 10;
    char *dir = test_mkdtemp(), path[PATH_MAX];
    const char *argv[] = { "/bin/cat", path, NULL };
    unsigned char *data = malloc(total);
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;

    cr_assert_not_null(dir);
    cr_assert_not_null(data);
    for (size_t i = 0; i < total; i++)
        data[i] = (unsigned char)(i % 251);
    snprintf(path, sizeof(path), "%s/flood", dir);
    cr_assert_eq(test_write_file(path, data, total), 0);
    opts_for(&o, argv);
    o.retention_bytes = retention;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.exit_code, 0);
    cr_assert_eq(res.out.total_bytes, total);
    cr_assert_eq(res.out.len, retention);
    cr_assert_eq(res.out.head_len, retention / 2);
    cr_assert_eq(res.out.dropped_bytes, total - retention);
    cr_assert_eq(memcmp(res.out.data, data, retention / 2), 0, "head differs");
    cr_assert_eq(memcmp(res.out.data + retention / 2, data + total - retention / 2, retention / 2),
                 0, "tail differs");
    cordon_exec_outcome_clear(&res);
    free(data);
    test_rmtree(dir);
    free(dir);
}

struct cancel_when {
    int fd;
    const char *marker;
};

/* Cancels once both sleepers run, so the cancel meets a whole tree. */
static void *cancel_when_running(void *arg)
{
    const struct cancel_when *c = arg;

    char sleeper[96];

    snprintf(sleeper, sizeof(sleeper), "sleep %s", c->marker);
    TEST_WAIT_UNTIL(test_count_command(sleeper) == 2, 10000);
    if (write(c->fd, "x", 1) != 1)
        return (void *)1;
    return NULL;
}

Test(runner, cancel_fd_kills_the_tree)
{
    char marker[64], script[256];
    const char *argv[] = { "/bin/sh", "-c", script, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cancel_when cancel;
    pthread_t th;
    int p[2];

    make_marker(marker, sizeof(marker), "4");
    snprintf(script, sizeof(script), "sleep %s & sleep %s", marker, marker);
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    cancel.fd = p[1];
    cancel.marker = marker;
    cr_assert_eq(pthread_create(&th, NULL, cancel_when_running, &cancel), 0);
    opts_for(&o, argv);
    o.cancel_fd = p[0];
    run_ok(&o, &res);
    pthread_join(th, NULL);
    cr_assert_eq(res.status, CORDON_RUN_CANCELLED, "status %s", cordon_run_status_name(res.status));
    cr_assert_eq(res.signal, SIGKILL);
    cr_assert_lt(res.duration_ms, 5000);
    assert_no_survivors(marker);
    assert_no_children();
    cordon_exec_outcome_clear(&res);
    close(p[0]);
    close(p[1]);
}

Test(runner, pass_through_writes_into_the_given_fd)
{
    static const char *const argv[] = { "/bin/sh", "-c", "echo to-file; echo to-capture >&2",
                                        NULL };
    char *dir = test_mkdtemp(), path[PATH_MAX], buf[64];
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    ssize_t n;
    int fd;

    cr_assert_not_null(dir);
    snprintf(path, sizeof(path), "%s/out", dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    opts_for(&o, argv);
    o.stdout_fd = fd;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_EXITED);
    cr_assert_eq(res.out.len, 0, "pass-through output was captured");
    cr_assert_eq(res.out.total_bytes, 0);
    assert_stream(&res.err, "to-capture\n");
    n = pread(fd, buf, sizeof(buf), 0);
    cr_assert_eq(n, 8);
    cr_assert_eq(memcmp(buf, "to-file\n", 8), 0);
    close(fd);
    cordon_exec_outcome_clear(&res);
    test_rmtree(dir);
    free(dir);
}

Test(runner, pass_through_on_both_streams_still_times_out)
{
    char marker[64];
    const char *argv[] = { "/bin/sleep", marker, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

    make_marker(marker, sizeof(marker), "5");
    opts_for(&o, argv);
    o.stdout_fd = fd;
    o.stderr_fd = fd;
    o.timeout_ms = 200;
    run_ok(&o, &res);
    cr_assert_eq(res.status, CORDON_RUN_TIMEOUT);
    cr_assert_null(res.out.data);
    assert_no_survivors(marker);
    cordon_exec_outcome_clear(&res);
    close(fd);
}

Test(runner, no_fd_is_leaked_on_any_path)
{
    static const char *const ok[] = { "/bin/echo", "x", NULL };
    static const char *const slow[] = { "/bin/sleep", "5", NULL };
    static const char *const cat[] = { "/bin/cat", NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome res;
    struct cordon_error err;
    int before = test_count_open_fds();

    for (int round = 0; round < 2; round++) {
        opts_for(&o, ok);
        run_ok(&o, &res);
        cordon_exec_outcome_clear(&res);
        opts_for(&o, cat);
        o.stdin_data = "data";
        o.stdin_len = 4;
        run_ok(&o, &res);
        cordon_exec_outcome_clear(&res);
        opts_for(&o, slow);
        o.timeout_ms = 50;
        run_ok(&o, &res);
        cordon_exec_outcome_clear(&res);
        opts_for(&o, ok);
        o.cwd = "/nonexistent/cordon-dir";
        cr_assert_lt(cordon_runner_run(&o, &res, &err), 0);
        opts_for(&o, ok);
        o.child_setup = setup_fails_eperm;
        cr_assert_lt(cordon_runner_run(&o, &res, &err), 0);
    }
    cr_assert_eq(test_count_open_fds(), before);
    assert_no_children();
}
