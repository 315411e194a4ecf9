/*
 * docker: one exec through the resident agent.
 *
 * The agent (cordon/sdk/agent.h) is the container's init, cordon-init
 * --agent, found by provision as State.Pid and recorded with its start
 * time: the host pins it with a pidfd, takes its channel and hands it the
 * command with the host's own stdio fds. No daemon call is made for the
 * command, and the result is the command's real exit or signal. The env
 * is the init's own (what the daemon gives every process of the
 * container: PATH, HOSTNAME, the image's and the spec's variables, HOME)
 * with the request's over it, as the exec API merges them; cwd, user and
 * confinement are the init's, which an exec through the API gets as well.
 * exec.c parses the request and falls back to the exec API.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cordon/sdk/agent.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include "plugins/common/strv.h"
#include "plugins/docker/docker.h"

#define DK_ENVIRON_MAX (256u << 10)       /* the init's /proc/PID/environ */
#define DK_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/*
 * The environment of an exec through the API, built from the init's: the
 * daemon starts the init and every exec alike with PATH, HOSTNAME and the
 * container's Config.Env (the image's, then the spec's), runc adds HOME
 * from the image's passwd to both, and cordon-init never changes its own.
 * The request's variables replace or extend it by name, as the API's
 * ReplaceOrAppendEnvValues does. /proc/PID/environ is the init's original
 * block, which nothing inside can write (the init is not dumpable).
 */
static int agent_env(pid_t pid, const struct cordon_env *over, struct strv *ret,
                     struct cordon_error *err)
{
    char path[64], *buf = malloc(DK_ENVIRON_MAX);
    size_t len = 0;
    ssize_t n = 0;
    int fd, r = 0;

    if (buf == NULL)
        return dk__nomem(err, "exec: env");
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && len < DK_ENVIRON_MAX &&
           ((n = read(fd, buf + len, DK_ENVIRON_MAX - len)) > 0 || (n < 0 && errno == EINTR)))
        len += n > 0 ? (size_t)n : 0;
    if (fd < 0 || n < 0 || len >= DK_ENVIRON_MAX) {
        r = cordon_error_set(err, fd < 0 || n < 0 ? CORDON_E_NOT_FOUND : CORDON_E_LIMIT,
                             fd < 0 || n < 0 ? errno : 0,
                             "exec: %s: %s", path, fd < 0 || n < 0 ? strerror(errno)
                                                               : "longer than 256 KiB");
        goto out;
    }
    for (size_t i = 0; r == 0 && i < len;) {
        size_t k = strnlen(buf + i, len - i);

        if (k > 0 && memchr(buf + i, '=', k) != NULL)
            r = strv__take(ret, strndup(buf + i, k), err);
        i += k + 1;
    }
    for (size_t i = 0; r == 0 && i < over->n; i++)
        r = strv__env_set(ret, over->vars[i].name, over->vars[i].value, err);
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return r;
}

static bool pidfd_alive(int pidfd)
{
    return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0u) == 0;
}

/* Fail closed: the agent is the container's init, and without it the
 * container is over; whatever is left of it goes now, so that the record
 * never points at a live sandbox. r and err are the caller's error. */
static int agent_fail_closed(struct cordon_resource *res, struct dk_conn **conn,
                             const struct dk_state *st, int r, struct cordon_error *err)
{
    struct cordon_error ignored;

    cordon_error_init(&ignored);
    if (*conn != NULL || dk__conn_open(&res->engine, conn, &ignored) == 0)
        dk__container_remove(*conn, st->container_id, &ignored);
    if (ignored.code != 0 && err != NULL &&
        strlen(err->message) + strlen(ignored.message) + 40 < sizeof(err->message)) {
        strcat(err->message, "; removing the container: ");
        strcat(err->message, ignored.message);
    }
    return r;
}

/*
 * One exec through the agent. *ret_used false (and 0) when it cannot be:
 * the command does not fit one message, or this process may not take the
 * channel of an init that still lives (another user than the one that
 * provisioned); the caller then uses the exec API.
 */
int dk__agent_exec(struct cordon_resource *res, const struct dk_state *st,
                   const struct dk_request *rq, const struct cordon_exec_io *io,
                   uint64_t remaining, bool *ret_used, char **ret, struct cordon_error *err)
{
    struct strv envp = { 0 };
    struct cordon_agent_cmd cmd;
    struct cordon_exec_outcome o = { 0 };
    struct cordon_exec_stdio sio = CORDON_EXEC_STDIO_INIT;
    struct cordon_error oerr;
    struct dk_conn *conn = NULL;
    char root[64];
    const char *path;
    size_t at;
    uint64_t started_wall;
    int pidfd = -1, root_fd = -1, agent_fd = -1, r;

    *ret_used = true;
    r = dk__init_pin(st, &pidfd, err);
    if (r < 0)
        return agent_fail_closed(res, &conn, st, r, err);
    snprintf(root, sizeof(root), "/proc/%d/root", (int)st->init_pid);
    root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* Still alive after the opens: what they read was our init's. */
    if (root_fd < 0 || !pidfd_alive(pidfd)) {
        r = agent_fail_closed(res, &conn, st,
                              cordon_error_set(err, CORDON_E_NOT_FOUND, errno,
                                               "exec: execution \"%s\": its init (pid %d) is "
                                               "gone", st->execution_id, (int)st->init_pid),
                              err);
        goto out;
    }
    if ((r = agent_env(st->init_pid, &rq->env, &envp, err)) < 0)
        goto out;
    at = strv__env_find(&envp, "PATH=");
    path = at < envp.n ? envp.v[at] + 5 : DK_DEFAULT_PATH;
    cmd = (struct cordon_agent_cmd){ (const char *const *)rq->req.argv,
                                     (const char *const *)envp.v, rq->workdir, -1, -1, -1 };
    if (!cordon_agent_fits(&cmd)) {
        *ret_used = false;
        goto out;
    }
    /* Before anything is read from the host's stdin or made in the
     * workspace, so that falling back leaves both to the exec API. */
    cordon_error_init(&oerr);
    if (cordon_agent_open(pidfd, &agent_fd, &oerr) < 0) {
        /* Alive and ours, but not ours to ptrace: not a dead agent. */
        if (pidfd_alive(pidfd) && (oerr.os_errno == EPERM || oerr.os_errno == EACCES)) {
            *ret_used = false;
            goto out;
        }
        r = agent_fail_closed(res, &conn, st,
                              cordon_error_set(err, oerr.code, oerr.os_errno, "exec: %s",
                                               oerr.message),
                              err);
        goto out;
    }
    r = cordon_fs_find_program(root_fd, rq->req.argv[0], rq->workdir, path, err);
    if (r == 0 && (rq->ndirs > 0 || rq->must_exist != NULL)) {
        r = dk__conn_open(&res->engine, &conn, err);
        if (r == 0)
            r = dk__make_dirs(res, conn, st, rq, err);
    }
    if (r < 0)
        goto out;
    /* fd 0 goes into the container: the agent needs one, and anything but
     * a pipe or /dev/null is relayed. */
    r = cordon_exec_stdio_open(io, CORDON_EXEC_STDIO_NULL_STDIN, &sio, err);
    if (r < 0)
        goto out;
    cmd.stdin_fd = sio.stdin_fd;
    cmd.stdout_fd = sio.stdout_fd;
    cmd.stderr_fd = sio.stderr_fd;
    started_wall = cordon_now_wall_ms();
    r = cordon_agent_run(agent_fd, pidfd, &cmd, io->cancel_fd, remaining, &o, err);
    cordon_exec_stdio_close(&sio); /* the command ended: so does its stdin */
    if (r == CORDON_E_UNAVAILABLE) {
        r = agent_fail_closed(res, &conn, st, r, err);
        goto out;
    }
    if (r == CORDON_E_TIMEOUT &&
        (o.status == CORDON_RUN_CANCELLED || o.status == CORDON_RUN_TIMEOUT)) {
        /* Cancelled, and the agent never said the group was gone: to be
         * sure it is, the whole execution goes, and the result says so. */
        r = dk__conn_open(&res->engine, &conn, err);
        if (r == 0)
            r = dk__container_remove(conn, st->container_id, err);
        if (r == 0)
            r = dk__exec_result_ended(res->host, o.status == CORDON_RUN_CANCELLED, false, ret,
                                      err);
        goto out;
    }
    if (r < 0)
        goto out;
    if (o.status == CORDON_RUN_CANCELLED || o.status == CORDON_RUN_TIMEOUT) {
        /* The agent killed the command's process group and saw it gone:
         * the container stays, ready for the next command. */
        r = o.status == CORDON_RUN_CANCELLED
                ? dk__exec_result(res->host, "cancelled", 0, 0, false, false, ret, err)
                : dk__exec_result(res->host, "signaled", 0, SIGKILL, true, false, ret, err);
    } else if (o.status == CORDON_RUN_SIGNALED || o.status == CORDON_RUN_EXITED) {
        /* The memory cgroup's kill shows in the daemon's events only; a
         * shell whose child it killed exits 137, which the exec API's path
         * reports as the OOM it was, and so does this one. */
        bool oom = false;

        if (((o.status == CORDON_RUN_SIGNALED && o.signal == SIGKILL) ||
             (o.status == CORDON_RUN_EXITED && o.exit_code == DK_OOM_EXIT)) &&
            dk__conn_open(&res->engine, &conn, NULL) == 0)
            oom = dk__oom_killed(conn, st->container_id, started_wall);
        /* The agent saw the real end: 128+N is an exit, never a signal. */
        r = oom ? dk__exec_result(res->host, "oom", 0, SIGKILL, false, false, ret, err)
            : o.status == CORDON_RUN_SIGNALED
                ? dk__exec_result(res->host, "signaled", 0, o.signal, false, false, ret, err)
                : dk__exec_result(res->host, "exited", o.exit_code, 0, false, false, ret, err);
    } else {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec: the agent reported status %s",
                             cordon_run_status_name(o.status));
    }
out:
    cordon_exec_stdio_close(&sio);
    cordon_exec_outcome_clear(&o);
    if (agent_fd >= 0)
        close(agent_fd);
    if (root_fd >= 0)
        close(root_fd);
    if (pidfd >= 0)
        close(pidfd);
    dk__conn_close(conn);
    strv__clear(&envp);
    return r;
}

/*
 * extend (provider.h): the deadline lives in the container's init,
 * cordon-init, which only the host reaches, through the agent's channel;
 * the state's copy (exec's backstop) follows. Without the agent (runsc runs
 * the init inside gVisor's Sentry, out of any host pidfd's reach; a config
 * with exec_agent false started none) nothing can move that clock: the
 * extend is refused and nothing changes.
 */
int dk__op_extend(struct cordon_resource *res, const char *state_json, uint64_t expires_at_ms,
                  char **ret_state_json, struct cordon_error *err)
{
    struct dk_state st = { 0 };
    int pidfd = -1, r;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: resource and ret_state_json required");
    if ((r = dk__state_parse(res, state_json, true, &st, err)) < 0)
        goto out;
    if (!st.agent) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "extend: docker execution \"%s\" has no resident agent (its runtime runs "
                             "the init out of the host's reach, as runsc does, or exec_agent is "
                             "false): its deadline cannot move", st.execution_id);
        goto out;
    }
    if ((r = dk__init_pin(&st, &pidfd, err)) == 0)
        r = cordon_agent_extend(res->host, pidfd, state_json, expires_at_ms, ret_state_json, err);
out:
    if (pidfd >= 0)
        close(pidfd);
    dk__state_clear(&st);
    return r;
}
