/* sdk: one exec of a host process, resolved and run (see cordon/sdk/request.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>

void cordon_exec_plan_clear(struct cordon_exec_plan *plan)
{
    if (plan == NULL)
        return;
    cordon_exec_request_clear(&plan->req);
    free(plan->envp);
    free(plan->cwd);
    memset(plan, 0, sizeof(*plan));
}

/* The absolute path of rel, a normalised directory of the workspace. */
static char *workspace_path(const struct cordon_exec_place *place, const char *rel)
{
    char *path;

    if (asprintf(&path, "%s%s%s", place->ws_path, rel[0] != '\0' ? "/" : "", rel) < 0)
        return NULL;
    return path;
}

int cordon_exec_plan_build(const struct cordon_exec_place *place, const char *request_json,
                           struct cordon_exec_plan *ret, struct cordon_error *err)
{
    struct cordon_exec_plan plan = { 0 };
    struct cordon_env env;
    int fd = -1, r;

    if (place == NULL || place->ws_path == NULL || place->ws_fd < 0 || ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: place and ret required");
    cordon_env_init(&env);
    cordon_exec_request_init(&plan.req);
    r = cordon_exec_request_parse(request_json, &plan.req, err);
    /* cwd must already be a real directory inside the workspace. */
    if (r == 0)
        r = cordon_fs_walk_dirs(place->ws_fd, "cwd", plan.req.cwd, false, false, 0, 0, &fd, err);
    if (r == 0 && place->path != NULL)
        r = cordon_env_set(&env, "PATH", place->path, err);
    for (size_t i = 0; r == 0 && place->env != NULL && i < place->env->n; i++)
        r = cordon_env_set(&env, place->env->vars[i].name, place->env->vars[i].value, err);
    for (size_t i = 0; r == 0 && i < plan.req.env.n; i++)
        r = cordon_env_set(&env, plan.req.env.vars[i].name, plan.req.env.vars[i].value, err);
    for (size_t i = 0; r == 0 && i < plan.req.workspace_env.n; i++) {
        const struct cordon_env_var *w = &plan.req.workspace_env.vars[i];
        /* Never a sandbox-owned directory inside the read-only source/. */
        bool in_source = place->code_layout && cordon_path_is_under(w->value, "source");
        char field[CORDON_ENV_NAME_MAX + 32], *value;
        int dfd = -1;

        snprintf(field, sizeof(field), "workspace_env.%s", w->name);
        r = cordon_fs_walk_dirs(place->ws_fd, field, w->value, !in_source, place->chown, place->uid,
                                place->gid, &dfd, err);
        if (r < 0)
            break;
        close(dfd);
        value = workspace_path(place, w->value);
        r = value != NULL ? cordon_env_set(&env, w->name, value, err)
                          : cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", field);
        free(value);
    }
    if (r == 0 && ((plan.envp = cordon_env_envp(&env)) == NULL ||
                   (plan.cwd = workspace_path(place, plan.req.cwd)) == NULL))
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "exec: out of memory");
    if (r == 0) {
        *ret = plan;
        memset(&plan, 0, sizeof(plan));
    }
    if (fd >= 0)
        close(fd);
    cordon_env_clear(&env);
    cordon_exec_plan_clear(&plan);
    return r;
}

int cordon_exec_plan_run(const struct cordon_host_v1 *host, const struct cordon_exec_plan *plan,
                         const struct cordon_exec_io *io, uint64_t expires_at_ms,
                         int (*child_setup)(void *arg), void *child_arg, char **ret_result_json,
                         struct cordon_error *err)
{
    struct cordon_exec_stdio sio = CORDON_EXEC_STDIO_INIT;
    struct cordon_exec_outcome outcome = { 0 };
    struct cordon_exec_result result;
    struct cordon_runner_opts opts;
    uint64_t timeout;
    int r;

    if (host == NULL || plan == NULL || plan->req.argv == NULL || io == NULL || ret_result_json == NULL ||
        io->struct_size < CORDON_EXEC_IO_V1_0_SIZE)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: host, plan, io and ret_result_json required");
    /* A backstop only: the host keeps the clock and fires cancel_fd. No
     * host fd but a pipe or /dev/null is handed over; none discards. */
    if ((r = cordon_exec_backstop_ms(expires_at_ms, plan->req.timeout_ms, cordon_now_wall_ms(), &timeout,
                                     err)) < 0 ||
        (r = cordon_exec_stdio_open(io, 0, &sio, err)) < 0)
        return r;
    cordon_runner_opts_init(&opts);
    opts.argv = (const char *const *)plan->req.argv;
    opts.envp = (const char *const *)plan->envp;
    opts.cwd = plan->cwd;
    opts.stdin_fd = sio.stdin_fd;
    opts.stdout_fd = sio.stdout_fd;
    opts.stderr_fd = sio.stderr_fd;
    opts.timeout_ms = timeout;
    opts.grace_ms = 0;
    opts.cancel_fd = io->cancel_fd;
    opts.child_setup = child_setup;
    opts.child_setup_arg = child_arg;
    r = cordon_runner_run(&opts, &outcome, err);
    cordon_exec_stdio_close(&sio);   /* the process ended: so does its stdin */
    if (r == 0 && (r = cordon_exec_result_from_outcome(&outcome, &result, err)) == 0)
        r = cordon_exec_result_print_host(host, &result, ret_result_json, err);
    cordon_exec_outcome_clear(&outcome);
    return r;
}
