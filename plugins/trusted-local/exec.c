/* trusted-local: running one command, hardened in the child (see trusted-local.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/capability.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/child.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/path.h>
#include <cordon/sdk/relay.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/runner.h>
#include "plugins/common/scmp.h"
#include "plugins/trusted-local/trusted-local.h"

const struct tl_tmp_dir tl__tmp_dirs[TL_TMP_DIRS] = {
    { "tmp", "/tmp" },
    { "var-tmp", "/var/tmp" },
    { "shm", "/dev/shm" },
};

/* What the child needs, prepared in the parent: the child may not allocate. */
struct child {
    struct cordon_child_plan plan;   /* the sdk's: rlimits, uid, no privilege */
    bool private_tmp;
    char tmp_src[TL_TMP_DIRS][TL_ROOT_MAX + 160];   /* <area>/<tl__tmp_dirs[i].name> */
    const struct sock_fprog *prog;
};

/* ---- exec --------------------------------------------------------------- */

/*
 * In the child, right before execve (async-signal-safe: raw syscalls
 * only). The execution's own /tmp, /var/tmp and /dev/shm: the area's
 * directories bound over the host's in a mount namespace of this child
 * (slave: nothing of ours propagates to the host), and an IPC namespace of
 * its own for POSIX message queues and System V objects, with /dev/mqueue
 * showing that namespace's queues. Nothing written there can outlive the
 * execution on the host. A target the host does not have is left alone.
 * Done as root, before the filter that refuses mount and unshare. Then the
 * sdk's plan (limits, the bounding set, the uid, no_new_privs) and the
 * seccomp filter.
 */
static CORDON_RUNNER_CHILD int child_setup(void *arg)
{
    const struct child *c = arg;
    int i, r;

    if (c->private_tmp) {
        if (syscall(SYS_unshare, CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
            syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
            return errno;
        for (i = 0; i < TL_TMP_DIRS; i++)
            if (syscall(SYS_mount, c->tmp_src[i], tl__tmp_dirs[i].target, NULL, MS_BIND,
                        NULL) != 0 && errno != ENOENT)
                return errno;
        if (syscall(SYS_mount, "mqueue", "/dev/mqueue", "mqueue",
                    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0 && errno != ENOENT)
            return errno;
    }
    if ((r = cordon_child_plan_apply(&c->plan)) != 0)
        return r;
    if (c->prog != NULL &&
        syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, c->prog, 0UL, 0UL) != 0)
        return errno;
    return 0;
}

static void child_prepare(const struct cordon_resource *res, const struct area_state *st,
                          struct child *c)
{
    memset(c, 0, sizeof(*c));
    cordon_child_plan_init(&c->plan, &st->res, geteuid() == 0, st->uid, st->gid);
    /* Paths of the root (TL_ROOT_MAX) and an execution id: they fit. */
    c->private_tmp = c->plan.switch_user &&
                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st->doc, "private_tmp"));
    for (size_t i = 0; c->private_tmp && i < TL_TMP_DIRS; i++)
        snprintf(c->tmp_src[i], sizeof(c->tmp_src[i]), "%s/%s", st->dir, tl__tmp_dirs[i].name);
    c->prog = res->prog.filter != NULL ? &res->prog : NULL;
}

int tl__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json,
                struct cordon_error *err)
{
    struct area_state st = { 0 };
    struct cordon_exec_plan plan = { 0 };
    struct cordon_env env;
    struct child child;
    int ws_fd = -1, r;
    bool ran = false;

    cordon_env_init(&env);
    if (res == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "exec: resource required");
    if ((r = tl__state_parse(res, state_json, true, &st, err)) < 0 ||
        (r = area__open_workspace(&st, &ws_fd, err)) < 0 ||
        (r = cordon_env_from_json(st.environment, "state.environment", &env, err)) < 0)
        goto out;
    {
        /* cwd must already be a real directory inside the workspace; the
         * workspace_env directories are made the sandbox user's. */
        struct cordon_exec_place place = {
            .ws_fd = ws_fd, .ws_path = st.workspace, .path = TL_DEFAULT_PATH, .env = &env,
            .code_layout = st.code_layout, .chown = geteuid() == 0, .uid = st.uid, .gid = st.gid,
        };

        if ((r = cordon_exec_plan_build(&place, request_json, &plan, err)) < 0)
            goto out;
    }
    child_prepare(res, &st, &child);
    ran = true;
    r = cordon_exec_plan_run(res->host, &plan, io, st.expires_at_ms, child_setup, &child,
                             ret_result_json, err);
out:
    /* setsid() escapes the runner's group kill; look for what stayed. */
    if (ran)
        tl__sweep(st.dir, st.uid);
    if (ws_fd >= 0)
        close(ws_fd);
    cordon_exec_plan_clear(&plan);
    cordon_env_clear(&env);
    area__state_clear(&st);
    return r;
}
