/*
 * runc provider: exec. Two paths to the same process, chosen by the
 * runtime (res->exec_setns):
 *
 *   setns    runc and crun: the provider enters the running container
 *            itself (container.c, runc__enter_child) and applies what
 *            `runc exec` would: the init's namespaces and cgroups, the
 *            user, no capabilities, no_new_privs, the rlimits, the seccomp
 *            filter compiled from the same profile (seccomp.c), the env and
 *            the cwd. No Go runtime starts: one exec costs a fork, not a
 *            runtime invocation.
 *   runtime  any other runtime (runsc: entering gVisor's namespaces would
 *            bypass gVisor itself): `runtime exec` with --user, --cwd and
 *            --env.
 *
 * Either way the command runs under `cordon-init --exec` (its process
 * group ends with it, and it dies of the command's signal), started by the
 * sdk's runner in pass-through mode:
 * the host's stdout and stderr descriptors are the command's, and the host
 * bounds them. On cancel the command's process group is killed and the
 * container stays. The agent kills the group and waits for it. Entered,
 * the command is in a session of its own, beyond the runner's kill of the
 * relay's group: cordon-init --exec hears of the relay's end (a
 * parent-death SIGTERM) and kills the group itself. Through the runtime's
 * exec (which ends only its own client) the container's init is killed,
 * which ends the whole execution, and the result says so (execution_ended).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>


#include <cordon/sdk/agent.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>

#include "plugins/common/strv.h"
#include "plugins/runc/runc.h"

#define SIGNAL_EXIT_BASE 128           /* a runtime's exec exits 128+N for a signal N */
#define PASSWD_MAX (1u << 20)          /* the image's /etc/passwd, read for HOME */

/* The value PATH will have inside: the last PATH of the objects given. */
static const char *final_path(const cJSON *spec_env, const struct cordon_env *env)
{
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec_env, "PATH"));

    if (cordon_env_get(env, "PATH") != NULL)
        path = cordon_env_get(env, "PATH");
    return path != NULL ? path : RUNC_DEFAULT_PATH;
}

/* A request as read (the sdk's), and what exec makes of it here. */
struct request {
    struct cordon_exec_request req;
    struct strv env;         /* NAME=VALUE after config.json's PATH, a later one replacing an earlier */
    char *cwd;               /* absolute inside the container */
    uint64_t timeout_ms;
};

static void request_clear(struct request *rq)
{
    cordon_exec_request_clear(&rq->req);
    strv__clear(&rq->env);
    free(rq->cwd);
    memset(rq, 0, sizeof(*rq));
}

/* workspace_env: each name gets /workspace/<rel>, created when missing. */
static int request_workspace_env(const struct runc_state *st, int ws_fd,
                                 const struct cordon_env *wenv, struct strv *a,
                                 struct cordon_error *err)
{
    int r = 0;

    for (size_t i = 0; r == 0 && i < wenv->n; i++) {
        const struct cordon_env_var *v = &wenv->vars[i];
        char field[CORDON_ENV_NAME_MAX + 32], *value = NULL;
        int dfd;

        snprintf(field, sizeof(field), "workspace_env.%s", v->name);
        /* Never create the user's directories inside read-only source/. */
        r = cordon_fs_walk_dirs(ws_fd, field, v->value, true,
                                !(st->code_layout && cordon_path_is_under(v->value, "source")),
                                st->uid, st->gid, &dfd, err);
        if (r == 0) {
            close(dfd);
            if (asprintf(&value, "/workspace%s%s", v->value[0] ? "/" : "", v->value) < 0)
                value = NULL;
            r = value != NULL ? strv__env_set(a, v->name, value, err) : runc__nomem(err, field);
        }
        free(value);
    }
    return r;
}

static int request_parse(const struct runc_state *st, int root_fd, int ws_fd, const char *json,
                         struct request *ret, struct cordon_error *err)
{
    struct request rq = { 0 };
    const cJSON *e;
    int fd, r;

    cordon_exec_request_init(&rq.req);
    if ((r = cordon_exec_request_parse(json, &rq.req, err)) < 0)
        goto out;
    /* cwd must already be a directory inside the workspace. */
    r = cordon_fs_walk_dirs(ws_fd, "cwd", rq.req.cwd, false, false, 0, 0, &fd, err);
    if (r < 0)
        goto out;
    close(fd);
    if (asprintf(&rq.cwd, "/workspace%s%s", rq.req.cwd[0] ? "/" : "", rq.req.cwd) < 0) {
        rq.cwd = NULL;
        r = runc__nomem(err, "cwd");
        goto out;
    }
    rq.timeout_ms = rq.req.timeout_ms;

    /* The spec's environment, then the request's, then workspace paths. */
    cJSON_ArrayForEach(e, st->environment) {
        if ((r = strv__env_set(&rq.env, e->string, e->valuestring, err)) < 0)
            goto out;
    }
    for (size_t i = 0; r == 0 && i < rq.req.env.n; i++)
        r = strv__env_set(&rq.env, rq.req.env.vars[i].name, rq.req.env.vars[i].value, err);
    if (r == 0)
        r = request_workspace_env(st, ws_fd, &rq.req.workspace_env, &rq.env, err);
    if (r == 0)
        r = cordon_fs_find_program(root_fd, rq.req.argv[0], rq.cwd,
                                   final_path(st->environment, &rq.req.env), err);
    if (r < 0)
        goto out;
    *ret = rq;
    memset(&rq, 0, sizeof(rq));
out:
    request_clear(&rq);
    return r;
}

/* cordon-init --exec ARGV...: the command's process group ends with it,
 * as the host's runner does, so that a background child cannot hold the
 * exec open on its output. */
static int init_argv(const struct request *rq, struct strv *a, struct cordon_error *err)
{
    int r = strv__add(a, RUNC_INIT_IN_CONTAINER, err);

    if (r == 0)
        r = strv__add(a, "--exec", err);
    for (size_t i = 0; r == 0 && i < rq->req.argc; i++)
        r = strv__add(a, rq->req.argv[i], err);
    return r;
}

/* runtime --root R --log L --log-format json exec --user U --cwd C --env
 * NAME=VALUE... ID cordon-init --exec ARGV: the runtime appends the env to
 * config.json's PATH, a later name wins. */
static int runtime_argv(const struct cordon_resource *res, const struct runc_state *st,
                        const struct request *rq, const char *log_path, struct strv *ret,
                        struct cordon_error *err)
{
    struct strv a = { 0 };
    char user[32];
    int r = 0;

    snprintf(user, sizeof(user), "%u:%u", (unsigned)st->uid, (unsigned)st->gid);
    {
        const char *head[] = { res->runtime, "--root", res->cfg.root, "--log", log_path,
                               "--log-format", "json", "exec", "--user", user, "--cwd", rq->cwd };

        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]) && r == 0; i++)
            r = strv__add(&a, head[i], err);
    }
    for (size_t i = 0; i < rq->env.n && r == 0; i++) {
        r = strv__add(&a, "--env", err);
        if (r == 0)
            r = strv__add(&a, rq->env.v[i], err);
    }
    if (r == 0)
        r = strv__add(&a, st->id, err);
    if (r == 0)
        r = init_argv(rq, &a, err);
    if (r == 0) {
        *ret = a;
        memset(&a, 0, sizeof(a));
    }
    strv__clear(&a);
    return r;
}

/* The home directory of uid in the image's /etc/passwd, as runc looks it
 * up for HOME; "/" (runc's default) when there is no such entry. */
static int passwd_home(int root_fd, uid_t uid, char **ret, struct cordon_error *err)
{
    char *text = NULL, want[24];
    const char *home = "/";
    size_t len;

    snprintf(want, sizeof(want), "%u", (unsigned)uid);
    if (cordon_fs_read_file(root_fd, "etc/passwd", PASSWD_MAX, &text, &len, NULL) == 0) {
        /* name:password:uid:gid:gecos:home:shell; the first match wins. */
        for (char *line = text, *next; line != NULL; line = next) {
            char *f[7] = { line };
            size_t k = 1;

            next = strchr(line, '\n');
            if (next != NULL)
                *next++ = '\0';
            for (char *c = line; *c != '\0' && k < 7; c++)
                if (*c == ':') {
                    *c = '\0';
                    f[k++] = c + 1;
                }
            if (k >= 6 && strcmp(f[2], want) == 0) {
                home = f[5];
                break;
            }
        }
    }
    *ret = strdup(home);
    free(text);
    return *ret != NULL ? 0 : runc__nomem(err, "HOME");
}

/* The environment runc exec would give: config.json's PATH, the pairs (a
 * later name replacing an earlier one in place), HOME when none is set. */
static int enter_env(int root_fd, uid_t uid, const struct request *rq, struct strv *ret,
                     struct cordon_error *err)
{
    struct strv a = { 0 };
    char *home = NULL;
    size_t i;
    int r = strv__add(&a, "PATH=" RUNC_DEFAULT_PATH, err);

    for (size_t k = 0; k < rq->env.n && r == 0; k++)
        r = strv__env_take(&a, strdup(rq->env.v[k]), err);
    i = r == 0 ? strv__env_find(&a, "HOME=") : 0;
    if (r == 0 && (i == a.n || a.v[i][5] == '\0')) {
        r = passwd_home(root_fd, uid, &home, err);
        if (r == 0)
            r = strv__env_set(&a, "HOME", home, err);
    }
    if (r == 0) {
        *ret = a;
        memset(&a, 0, sizeof(a));
    }
    free(home);
    strv__clear(&a);
    return r;
}

/* A runtime failure logged by `exec` (not the program's own exit 255). */
static int exec_log_error(const char *bundle, const char *log_name, struct cordon_error *err)
{
    char *text = NULL, msg[320];
    size_t len;
    int dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

    if (dfd < 0 || cordon_fs_read_file(dfd, log_name, RUNC_LOG_MAX, &text, &len, NULL) != 0) {
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    close(dfd);
    if (strstr(text, "\"level\":\"error\"") != NULL ||
        strstr(text, "\"level\":\"fatal\"") != NULL) {
        runc__cmd_message(text, msg, sizeof(msg));
        r = cordon_error_set(err,
                             strstr(msg, "executable file not found") != NULL ||
                                     strstr(msg, "no such file or directory") != NULL
                                 ? CORDON_E_NOT_FOUND : CORDON_E_PROVIDER,
                             0, "exec: the runtime failed: %s", msg);
    }
    free(text);
    return r;
}

/* folded: the runtime reported an exit status 128+N that a signal N would
 * also give, and nothing tells the two apart (see runc__op_exec). */
static int exec_result(const struct cordon_host_v1 *host, const char *status, int code, int sig,
                       bool backstop, bool folded, char **ret, struct cordon_error *err)
{
    const struct cordon_exec_result r = { (enum cordon_run_status)cordon_run_status_parse(status),
                                          code, sig, folded, backstop, false };

    return cordon_exec_result_print_host(host, &r, ret, err);
}

/* The runtime's exec: its exit 255 with an error logged is the runtime's
 * failure; 128+N is an exit 128+N or a signal N, which it does not say. */
static int run_runtime(const struct cordon_resource *res, const struct runc_state *st,
                       const struct request *rq, struct cordon_runner_opts *opts,
                       struct cordon_exec_outcome *o, struct cordon_error *err)
{
    struct strv a = { 0 };
    char log_path[RUNC_PATH_MAX + 64], log_name[32], hex[13];
    int r = runc__random_hex(hex, 6, err);

    if (r < 0)
        return r;
    snprintf(log_name, sizeof(log_name), "exec-%s.log", hex);
    snprintf(log_path, sizeof(log_path), "%s/%s", st->bundle, log_name);
    r = runtime_argv(res, st, rq, log_path, &a, err);
    if (r == 0) {
        opts->argv = (const char *const *)a.v;
        r = cordon_runner_run(opts, o, err);
    }
    if (r == 0 && o->status == CORDON_RUN_EXITED && o->exit_code == 255)
        r = exec_log_error(st->bundle, log_name, err);
    unlink(log_path);
    strv__clear(&a);
    return r;
}

/* Entering the container ourselves (see runc__enter_child). */
static int run_entered(const struct cordon_resource *res, const struct runc_state *st,
                       int pidfd, int root_fd, const struct request *rq,
                       struct cordon_runner_opts *opts, struct cordon_exec_outcome *o,
                       struct cordon_error *err)
{
    /* Never executed: child_setup execs the command itself or fails, and
     * /dev/null cannot be executed, should it ever return 0. */
    static const char *const never[] = { "/dev/null", NULL };
    struct runc_enter e;
    struct strv argv = { 0 }, envp = { 0 };
    int r;

    if ((r = init_argv(rq, &argv, err)) < 0 ||
        (r = enter_env(root_fd, st->uid, rq, &envp, err)) < 0 ||
        (r = runc__enter_open(res, st, pidfd, &e, err)) < 0)
        goto out;
    e.argv = argv.v;
    e.envp = envp.v;
    e.cwd = rq->cwd;
    opts->argv = never;
    opts->child_setup = runc__enter_child;
    opts->child_setup_arg = &e;
    /* The entering child changes per-address-space state (not dumpable,
     * the argv area): it needs its own copy, not the runner's vfork. */
    opts->fork_child = true;
    r = cordon_runner_run(opts, o, err);
    if (r < 0)
        r = runc__enter_error(&e, st->id, r, err);
    runc__enter_close(&e);
out:
    strv__clear(&argv);
    strv__clear(&envp);
    return r;
}

bool runc__agent_wanted(const struct cordon_resource *res)
{
    return res->exec_setns && !res->cfg.no_agent;
}

/* Through the resident agent (cordon/sdk/agent.h): the container's init
 * forks the command itself, with its own confinement, which is what
 * run_entered applies by hand (user, no capabilities, no_new_privs,
 * rlimits, seccomp, cgroups, namespaces): no runtime, no setns. The same
 * argv, environment and cwd as run_entered. *ret_used false (and 0) when
 * the request does not fit one agent message: the caller then enters the
 * container as before. */
static int run_agent(const struct runc_state *st, int pidfd, int root_fd,
                     const struct request *rq, const struct cordon_runner_opts *opts,
                     struct cordon_exec_outcome *o, bool *ret_used, struct cordon_error *err)
{
    struct strv envp = { 0 };
    struct cordon_agent_cmd cmd;
    int agent_fd = -1, null_fd = -1, r;

    *ret_used = false;
    if ((r = enter_env(root_fd, st->uid, rq, &envp, err)) < 0)
        goto out;
    cmd = (struct cordon_agent_cmd){ (const char *const *)rq->req.argv,
                                     (const char *const *)envp.v, rq->cwd,
                                     opts->stdin_fd, opts->stdout_fd, opts->stderr_fd };
    if (!cordon_agent_fits(&cmd))
        goto out;
    /* Provisioned with the agent, the channel must be there: a process
     * without it is no longer the sandbox's init (fails closed, below). */
    *ret_used = true;
    if ((r = cordon_agent_open(pidfd, &agent_fd, err)) < 0)
        goto out;
    if (cmd.stdin_fd < 0) {
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "exec: /dev/null: %s", strerror(errno));
            goto out;
        }
        cmd.stdin_fd = null_fd;
    }
    r = cordon_agent_run(agent_fd, pidfd, &cmd, opts->cancel_fd, opts->timeout_ms, o, err);
out:
    if (agent_fd >= 0)
        close(agent_fd);
    if (null_fd >= 0)
        close(null_fd);
    strv__clear(&envp);
    return r;
}

int runc__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                  const struct cordon_exec_io *io, char **ret_result_json,
                  struct cordon_error *err)
{
    static const char *const envp[] = { RUNC_RUNTIME_ENV_PATH, NULL };
    struct runc_state st = { 0 };
    struct request rq = { 0 };
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    struct cordon_exec_stdio sio = CORDON_EXEC_STDIO_INIT;
    int code = 0, sig = 0;   /* how the command ended: exited with code, or signal sig */
    bool folded = false;     /* code is 128+N from a runtime that folds signals */
    bool used_agent = false;
    const char *kill_args[] = { "kill", "--all", NULL, "KILL", NULL };
    uint64_t timeout, oom_before;
    int pidfd = -1, root_fd = -1, ws_fd = -1, r;

    if (res == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "exec: resource, io (struct_size >= %zu) and ret_result_json "
                                "required", (size_t)CORDON_EXEC_IO_V1_0_SIZE);
    if ((r = runc__state_parse(res, state_json, true, &st, err)) < 0)
        goto out;
    if ((r = cordon_exec_backstop_ms(st.expires_at_ms, 0, cordon_now_wall_ms(), &timeout, err)) < 0)
        goto out;
    if ((r = runc__init_pin(res, st.id, st.pid, &pidfd, err)) < 0 ||
        (r = runc__init_root(pidfd, st.pid, st.id, &root_fd, err)) < 0 ||
        (r = runc__workspace_open(root_fd, &ws_fd, err)) < 0 ||
        (r = request_parse(&st, root_fd, ws_fd, request_json, &rq, err)) < 0)
        goto out;

    /* A backstop only: the host keeps the clock and fires cancel_fd. */
    if ((r = cordon_exec_backstop_ms(st.expires_at_ms, rq.timeout_ms, cordon_now_wall_ms(),
                                     &timeout, err)) < 0)
        goto out;
    /* Both paths hand fd 0 into the container: a terminal or a directory
     * would be a way out of it (/proc/self/fd/0/..), so it is relayed. */
    if ((r = cordon_exec_stdio_open(io, 0, &sio, err)) < 0)
        goto out;
    oom_before = runc__cgroup_oom_kills(res->cgroup_version, st.id);
    cordon_runner_opts_init(&opts);
    opts.envp = envp;
    /* Pass-through: the sandbox writes into the host's fds. */
    opts.stdin_fd = sio.stdin_fd;
    opts.stdout_fd = sio.stdout_fd;
    opts.stderr_fd = sio.stderr_fd;
    opts.timeout_ms = timeout;
    opts.cancel_fd = io->cancel_fd;
    if (st.agent && res->exec_setns)
        r = run_agent(&st, pidfd, root_fd, &rq, &opts, &o, &used_agent, err);
    if (r == 0 && !used_agent)
        r = res->exec_setns ? run_entered(res, &st, pidfd, root_fd, &rq, &opts, &o, err)
                            : run_runtime(res, &st, &rq, &opts, &o, err);
    if (r == CORDON_E_UNAVAILABLE && used_agent) {
        /* The agent is the container's init: its death ended the sandbox.
         * Fail closed: whatever is left of the execution goes now. */
        runc__init_kill(res, st.id, pidfd);      /* reaps it when it is our child */
        runc__destroy(res, st.id, st.pid, NULL);
        goto out;
    }
    cordon_exec_stdio_close(&sio);   /* the command ended: so does its stdin */
    /* Cancelled (or past the backstop): the agent and the runner killed
     * the command's process group and waited for it to go, and the
     * container stays ready. The runtime's exec (runsc) kills only its own
     * client, and an agent that never said the group was gone leaves no
     * certainty: there the whole execution ends, and the result says so. */
    if ((r == 0 || (r == CORDON_E_TIMEOUT && used_agent)) &&
        (o.status == CORDON_RUN_CANCELLED || o.status == CORDON_RUN_TIMEOUT)) {
        bool ended = r < 0 || !res->exec_setns;
        const struct cordon_exec_result er = {
            o.status == CORDON_RUN_CANCELLED ? CORDON_RUN_CANCELLED : CORDON_RUN_SIGNALED,
            0, o.status == CORDON_RUN_CANCELLED ? 0 : SIGKILL, false,
            o.status == CORDON_RUN_TIMEOUT, ended,
        };

        if (ended && !runc__init_kill(res, st.id, pidfd)) {
            struct runc_cmd_result c;

            /* thawed first, when frozen from the host: why many a command
             * never answered */
            kill_args[2] = st.id;
            if (runc__runtime_cmd(res, kill_args, &c, NULL) == 0)
                runc__cmd_result_clear(&c);
        }
        r = cordon_exec_result_print_host(res->host, &er, ret_result_json, err);
        goto out;
    }
    if (r < 0)
        goto out;
    /* Entered, cordon-init is our own child: it exits with the command's
     * code or dies of the command's signal, and waitpid tells which. The
     * runtime's exec folds a signal N into an exit 128+N: that is reported
     * as the exit it is, marked as possibly a signal. */
    if (o.status == CORDON_RUN_EXITED) {
        code = o.exit_code;
        folded = !res->exec_setns && code > SIGNAL_EXIT_BASE && code <= SIGNAL_EXIT_BASE + 64;
    } else if (o.status == CORDON_RUN_SIGNALED && res->exec_setns) {
        sig = o.signal;
    } else {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec: %s ended with status %s "
                             "(signal %d)", res->exec_setns ? "the command" : res->runtime_name,
                             cordon_run_status_name(o.status), o.signal);
        goto out;
    }
    if ((sig == SIGKILL || (folded && code == SIGNAL_EXIT_BASE + SIGKILL)) &&
        runc__cgroup_oom_kills(res->cgroup_version, st.id) > oom_before)
        r = exec_result(res->host, "oom", 0, SIGKILL, false, false, ret_result_json, err);
    else if (sig != 0)
        r = exec_result(res->host, "signaled", 0, sig, false, false, ret_result_json, err);
    else
        r = exec_result(res->host, "exited", code, 0, false, folded, ret_result_json, err);
out:
    cordon_exec_stdio_close(&sio);
    cordon_exec_outcome_clear(&o);
    if (ws_fd >= 0)
        close(ws_fd);
    if (root_fd >= 0)
        close(root_fd);
    if (pidfd >= 0)
        close(pidfd);
    request_clear(&rq);
    runc__state_clear(&st);
    return r;
}
