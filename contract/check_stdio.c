/*
 * cordon-contract: what crosses into the sandbox and what comes back out.
 *
 * No host file descriptor may enter a sandbox: a directory given as stdin
 * is a way to host files (/proc/self/fd/0/..), a terminal a way to the
 * user's next keystrokes. These checks call the provider's exec directly,
 * not through the host's drive (which relays every stdin itself), so that
 * it is the provider's own handling that is tested. Then the exit status
 * a provider reports (an exit 137 is not a SIGKILL, and the other way
 * round) and the rlimits of the sandboxed process, which must be the
 * execution's and not its caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/host.h>
#include <cordon/sdk/request.h>
#include "contract/contract.h"

#define RAW_TIMEOUT_MS 30000u
#define RAW_OUT_MAX (64u << 10)

/* One exec straight through the provider's vtable. */
struct raw {
    const char *state;
    char *request;
    struct cordon_exec_io io;
    int rc;
    char *result;     /* the provider's result JSON (host->free) */
    struct cordon_error err;
    int done_w;       /* written once exec returned */
};

static void *raw_main(void *arg)
{
    struct raw *x = arg;

    x->rc = contract.vt.exec(contract.resource, x->state, x->request, &x->io, &x->result,
                             &x->err);
    if (write(x->done_w, "x", 1) != 1) {
        /* the reader then only stops at its deadline */
    }
    return NULL;
}

/* Run sh -c script with stdin_fd as the provider's io.stdin_fd; stdout
 * and stderr together into one pipe. Returns the result as the host reads
 * it (assert success: a result the host would refuse fails the check,
 * saying what is wrong with it) and the output in *ret_out (free). */
static struct cordon_exec_result raw_exec(const char *state, const char *script, int stdin_fd,
                                          char **ret_out)
{
    const char *argv[] = { "sh", "-c", script, NULL };
    struct raw x = { 0 };
    char *out = calloc(1, RAW_OUT_MAX + 1);
    int out_p[2], cancel_p[2], done_p[2];
    size_t len = 0;
    uint64_t end = cordon_now_monotonic_ms() + RAW_TIMEOUT_MS, drain_end = 0;
    pthread_t t;
    struct cordon_exec_result res;
    struct cordon_error perr;
    char shown[400];
    bool cancelled = false, done = false;
    int r;

    cr_assert_not_null(out);
    contract_ensure();
    cr_assert_eq(pipe2(out_p, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(cancel_p, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(done_p, O_CLOEXEC), 0);
    x.done_w = done_p[1];
    x.state = state;
    x.request = contract_request(argv, RAW_TIMEOUT_MS);
    x.io = (struct cordon_exec_io){ .abi_version = CORDON_ABI_VERSION,
                                    .struct_size = (uint32_t)sizeof(x.io),
                                    .stdin_fd = stdin_fd,
                                    .stdout_fd = out_p[1],
                                    .stderr_fd = out_p[1],
                                    .cancel_fd = cancel_p[0] };
    cordon_error_init(&x.err);
    cr_assert_eq(pthread_create(&t, NULL, raw_main, &x), 0);
    /* Read while the provider runs, and a moment after it returned. */
    while (len < RAW_OUT_MAX) {
        struct pollfd pfd[2] = { { .fd = out_p[0], .events = POLLIN },
                                 { .fd = done_p[0], .events = POLLIN } };
        uint64_t now = cordon_now_monotonic_ms();
        ssize_t n;

        if (!done && now >= end && !cancelled) {
            /* The provider did not return: make it, then fail below. */
            cancelled = write(cancel_p[1], "x", 1) == 1;
            end = now + RAW_TIMEOUT_MS;
        }
        if (done && now >= drain_end)
            break;
        if (poll(pfd, done ? 1 : 2, 100) <= 0)
            continue;
        if (!done && pfd[1].revents != 0) {
            done = true;
            drain_end = now + 300;
        }
        if (pfd[0].revents == 0)
            continue;
        n = read(out_p[0], out + len, RAW_OUT_MAX - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    pthread_join(t, NULL);
    close(out_p[0]);
    close(out_p[1]);
    close(done_p[0]);
    close(done_p[1]);
    close(cancel_p[0]);
    close(cancel_p[1]);
    free(x.request);
    cr_assert_not(cancelled, "exec of '%s' did not return within %u ms", script, RAW_TIMEOUT_MS);
    cr_assert_eq(x.rc, 0, "exec of '%s' failed: %s: %s", script, cordon_error_name(x.rc),
                 x.err.message);
    contract_clip(x.result, 300, shown, sizeof(shown));
    cordon_error_init(&perr);
    r = cordon_exec_result_parse(x.result, &res, &perr);
    contract.host->free(x.result);
    cr_assert_eq(r, 0, "exec of '%s' returned a result the host refuses (%s): %s", script,
                 perr.message, shown);
    *ret_out = out;
    return res;
}

/* A result as messages say it: "exited 137", "signaled 9", "oom". */
static const char *result_text(const struct cordon_exec_result *res, char *buf, size_t size)
{
    if (res->status == CORDON_RUN_EXITED)
        snprintf(buf, size, "exited %d%s", res->exit_code,
                 res->signal_folded ? " (signal_folded)" : "");
    else if (res->signal != 0)
        snprintf(buf, size, "%s %d", cordon_run_status_name(res->status), res->signal);
    else
        snprintf(buf, size, "%s", cordon_run_status_name(res->status));
    return buf;
}

/* The exec ended by itself with an exit status, whatever the status. */
static void expect_exited(const struct cordon_exec_result *res, const char *out)
{
    char said[64];

    cr_expect_eq(res->status, CORDON_RUN_EXITED, "reported as %s, not exited:\n%s",
                 result_text(res, said, sizeof(said)), out);
}

/* What fd 0 is, and what it leads to, seen from inside. */
static const char fd0_probe[] =
    "echo \"link=$(readlink /proc/self/fd/0)\"; "
    "if test -p /proc/self/fd/0; then echo type=fifo; fi; "
    "if test -t 0; then echo FD0_IS_A_TERMINAL; fi; "
    "if test -d /proc/self/fd/0; then echo FD0_IS_A_DIRECTORY; fi; "
    "if ls /proc/self/fd/0/ >/dev/null 2>&1; then echo FD0_LISTS; fi; "
    "if ls /proc/self/fd/0/../.. >/dev/null 2>&1; then echo FD0_PARENT_LISTS; fi; "
    "cat /proc/self/fd/0/marker 2>/dev/null; exit 0";

static void assert_fd0_is_a_pipe(const char *what, const char *out)
{
    /* gVisor's Sentry names an fd it took from the runtime "host:[N]":
     * then the FIFO test says what it is. */
    cr_assert(strstr(out, "link=pipe:[") != NULL || strstr(out, "link=/dev/null\n") != NULL ||
                  (strstr(out, "link=host:[") != NULL && strstr(out, "type=fifo\n") != NULL),
              "with %s as stdin, fd 0 inside is neither a pipe nor /dev/null:\n%s", what, out);
    cr_assert_null(strstr(out, "FD0_"), "with %s as stdin, fd 0 inside leads out:\n%s", what,
                   out);
}

Test(contract, stdin_directory_is_relayed_not_handed_in)
{
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    const char *dir = contract_temp_dir(0755);
    char path[4200], secret[33], *out = NULL;
    struct cordon_exec_result res;
    int fd, dfd;

    contract_random_hex(secret, 16);
    snprintf(path, sizeof(path), "%s/marker", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, secret, strlen(secret)), (ssize_t)strlen(secret));
    close(fd);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(dfd, 0);
    res = raw_exec(state, fd0_probe, dfd, &out);
    close(dfd);
    assert_fd0_is_a_pipe("a host directory", out);
    cr_assert_null(strstr(out, secret), "a host file was read through fd 0:\n%s", out);
    expect_exited(&res, out);
    free(out);
}

/* A pty pair; the slave opened without becoming our controlling terminal. */
static void open_pty(int *ret_master, int *ret_slave)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s;

    cr_assert_geq(m, 0, "posix_openpt: %s", strerror(errno));
    cr_assert(grantpt(m) == 0 && unlockpt(m) == 0, "grantpt/unlockpt: %s", strerror(errno));
    s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(s, 0, "open %s: %s", ptsname(m), strerror(errno));
    *ret_master = m;
    *ret_slave = s;
}

Test(contract, stdin_terminal_is_relayed_not_handed_in)
{
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    char *out = NULL;
    struct cordon_exec_result res;
    int m, s;

    open_pty(&m, &s);
    res = raw_exec(state, fd0_probe, s, &out);
    assert_fd0_is_a_pipe("a terminal", out);
    expect_exited(&res, out);
    free(out);
    close(s);
    close(m);
}

/*
 * The attack: a detached child (its own session, out of the exec's
 * process group) keeps fd 0 and reads on after the exec returned. What
 * the user types next must reach neither it nor anything else: it is
 * still there, unread, on the terminal.
 */
Test(contract, detached_child_cannot_read_the_terminal_after_exec)
{
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    char secret[33], line[64], got[128], *out = NULL;
    struct cordon_exec_outcome o;
    struct pollfd pfd;
    struct cordon_exec_result res;
    ssize_t n;
    int m, s;

    open_pty(&m, &s);
    res = raw_exec(state,
                   "exec 3<&0; setsid sh -c 'IFS= read -r l <&3; echo \"got:$l\" > stolen' "
                   ">/dev/null 2>&1 & sleep 0.3; exit 0",
                   s, &out);
    expect_exited(&res, out);
    free(out);
    contract_random_hex(secret, 16);
    snprintf(line, sizeof(line), "%s\n", secret);
    cr_assert_eq(write(m, line, strlen(line)), (ssize_t)strlen(line));
    usleep(500 * 1000);
    contract_sh(state, "cat stolen 2>/dev/null; exit 0", &o);
    out = contract_stream_text(&o.out);
    cr_assert_null(strstr(out, secret), "a child left in the sandbox read the terminal:\n%s",
                   out);
    free(out);
    cordon_exec_outcome_clear(&o);
    /* Nothing on the host side read it either: the line waits on the slave. */
    pfd = (struct pollfd){ .fd = s, .events = POLLIN };
    cr_assert_eq(poll(&pfd, 1, 2000), 1, "the line typed after the exec was taken by someone");
    n = read(s, got, sizeof(got) - 1);
    cr_assert_gt(n, 0);
    got[n] = '\0';
    cr_assert_str_eq(got, line, "the terminal gave %s instead of the line typed", got);
    close(s);
    close(m);
}

/* ---- the exit status ----------------------------------------------------------- */

/*
 * A plain exit 128+N is an exit, never a signal. A death by signal N is
 * "signaled" N; a provider whose runtime folds it into an exit status
 * 128+N and that has no other way to learn the truth must say so
 * ("signal_folded": true) rather than present a guess as fact.
 */
static void check_exit_status(const char *script, int exit_code, int signal)
{
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    char *out = NULL, said[64];
    struct cordon_exec_result res = raw_exec(state, script, -1, &out);

    result_text(&res, said, sizeof(said));
    if (exit_code >= 0) {
        cr_expect(res.status == CORDON_RUN_EXITED && res.exit_code == exit_code,
                  "'%s' is reported as %s, not exited %d", script, said, exit_code);
    } else if (res.status == CORDON_RUN_EXITED) {
        cr_expect(res.signal_folded, "'%s' is reported as exited %d, not signaled %d, without "
                  "\"signal_folded\"", script, res.exit_code, signal);
        cr_expect_eq(res.exit_code, 128 + signal, "'%s' gave exit_code %d", script,
                     res.exit_code);
    } else {
        cr_expect(res.status == CORDON_RUN_SIGNALED && res.signal == signal,
                  "'%s' is reported as %s, not signaled %d", script, said, signal);
    }
    free(out);
}

/* exit_code >= 0: must be exited with this code; signal > 0: must be
 * signaled with it (or a declared fold into 128+N). One check per row,
 * named exit_status_is_the_truth__ROW. */
#define EXIT_CASE(label, script, exit_code, signal)       \
    Test(contract, exit_status_is_the_truth__##label)     \
    {                                                     \
        check_exit_status(script, exit_code, signal);     \
    }

EXIT_CASE(exit_137, "exit 137", 137, 0)
EXIT_CASE(exit_143, "exit 143", 143, 0)
EXIT_CASE(exit_129, "exit 129", 129, 0)
EXIT_CASE(sigkill, "kill -9 $$", -1, SIGKILL)
EXIT_CASE(sigterm, "kill -TERM $$", -1, SIGTERM)
EXIT_CASE(sighup, "kill -HUP $$", -1, SIGHUP)

/* ---- rlimits ------------------------------------------------------------------- */

/* The soft value of a /proc/self/limits row ("Max stack size"), as text. */
static void limits_soft(const char *limits, const char *row, char *buf, size_t size)
{
    const char *p = strstr(limits, row);

    buf[0] = '\0';
    if (p != NULL)
        sscanf(p + strlen(row), " %31s", buf);
    (void)size;
}

/* Raise the caller's soft limit to its hard one, or to hard - 7 where that
 * gives a value nothing would choose; returns it as /proc/self/limits
 * spells it, or "" when no distinctive value is possible. */
static void raise_own(int resource, bool odd, char *buf, size_t size)
{
    struct rlimit rl;

    buf[0] = '\0';
    cr_assert_eq(getrlimit(resource, &rl), 0);
    if (rl.rlim_max == RLIM_INFINITY) {
        rl.rlim_cur = odd ? (rlim_t)1048569 : RLIM_INFINITY;
    } else if (rl.rlim_max > 4096) {
        rl.rlim_cur = odd ? rl.rlim_max - 7 : rl.rlim_max;
    } else {
        return;
    }
    cr_assert_eq(setrlimit(resource, &rl), 0, "setrlimit: %s", strerror(errno));
    if (rl.rlim_cur == RLIM_INFINITY)
        snprintf(buf, size, "unlimited");
    else
        snprintf(buf, size, "%llu", (unsigned long long)rl.rlim_cur);
}

/*
 * The sandboxed process gets the execution's rlimits, not the ones of the
 * process that called exec: a caller's `ulimit -s unlimited` must not give
 * the sandbox an unlimited stack (nor its open-files or core limits).
 */
Test(contract, exec_does_not_inherit_the_callers_rlimits)
{
    static const struct {
        int resource;
        const char *row;
        bool odd;
    } rows[] = {
        { RLIMIT_STACK, "Max stack size", false },
        { RLIMIT_NOFILE, "Max open files", true },
        { RLIMIT_CORE, "Max core file size", false },
    };
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    char mine[3][32], inside[32], *out = NULL;
    int checked = 0;
    struct cordon_exec_result res;

    for (size_t i = 0; i < 3; i++)
        raise_own(rows[i].resource, rows[i].odd, mine[i], sizeof(mine[i]));
    /* gVisor has no /proc/self/limits; prlimit(1) asks the kernel itself,
     * and its rows are turned into the same lines. */
    res = raw_exec(state,
                   "cat /proc/self/limits 2>/dev/null || prlimit --pid $$ --raw --noheadings -o RESOURCE,SOFT | "
                   "sed -n 's/^STACK /Max stack size /p; s/^NOFILE /Max open files /p; "
                   "s/^CORE /Max core file size /p'",
                   -1, &out);
    cr_assert_eq(res.status, CORDON_RUN_EXITED, "reported as %s, not exited:\n%s",
                 cordon_run_status_name(res.status), out);
    for (size_t i = 0; i < 3; i++) {
        limits_soft(out, rows[i].row, inside, sizeof(inside));
        cr_assert_neq(inside[0], '\0', "no \"%s\" row inside:\n%s", rows[i].row, out);
        if (mine[i][0] == '\0') {
            cr_log_info("%s: the caller's hard limit leaves no distinctive value", rows[i].row);
            continue;
        }
        checked++;
        cr_expect_str_neq(inside, mine[i], "%s inside follows the caller's (%s):\n%s",
                          rows[i].row, mine[i], out);
    }
    cr_assert_gt(checked, 0, "no rlimit could be raised to a distinctive value");
    free(out);
}
