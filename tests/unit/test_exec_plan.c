/* Unit tests of sdk/exec-plan.c, sdk/child.c and cordon_workspace_make:
 * what every host-process provider once wrote for itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cordon/sdk/child.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/workspace.h>

static char root[64];

static void root_make(void)
{
    snprintf(root, sizeof(root), "/tmp/cordon-plan-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
}

static void root_remove(void)
{
    cordon_fs_remove_tree_path(root, NULL);
}

static bool is_dir(const char *rel, mode_t mode)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == mode;
}

/* A workspace of layout "code" beneath root, its fd open. */
static int workspace(bool code)
{
    struct cordon_error err;
    int dir_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

    cordon_error_init(&err);
    cr_assert_eq(cordon_workspace_make(dir_fd, code, false, 0, 0, &err), 0, "%s", err.message);
    fd = openat(dir_fd, "workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(dir_fd);
    cr_assert_geq(fd, 0);
    return fd;
}

Test(workspace_make, code_layout_has_source_and_the_user_dirs, .init = root_make, .fini = root_remove)
{
    close(workspace(true));
    cr_expect(is_dir("workspace", 0755));
    cr_expect(is_dir("workspace/source", 0755));
    cr_expect(is_dir("workspace/build", 0755));
    cr_expect(is_dir("workspace/output", 0755));
    cr_expect(is_dir("workspace/logs", 0755));
}

Test(workspace_make, host_layout_is_the_workspace_alone_and_never_twice, .init = root_make,
     .fini = root_remove)
{
    struct cordon_error err;
    int dir_fd;

    close(workspace(false));
    cr_expect(is_dir("workspace", 0755));
    cr_expect_not(is_dir("workspace/source", 0755));
    dir_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cordon_error_init(&err);
    cr_expect_eq(cordon_workspace_make(dir_fd, false, false, 0, 0, &err), CORDON_E_IO);
    cr_expect(strstr(err.message, "workspace") != NULL, "%s", err.message);
    close(dir_fd);
}

/* The environment layered in order (PATH, the spec's, the request's, then
 * the workspace_env directories, made and given as absolute paths), cwd
 * resolved inside the workspace. */
Test(exec_plan, layers_the_environment_and_makes_workspace_dirs, .init = root_make, .fini = root_remove)
{
    struct cordon_exec_plan plan = { 0 };
    struct cordon_error err;
    struct cordon_env spec;
    char ws[128], want[200];
    int fd = workspace(true);
    struct cordon_exec_place place = { .ws_fd = fd, .ws_path = ws, .path = "/bin", .env = &spec,
                                       .code_layout = true };
    bool saw_a = false, saw_b = false, saw_home = false;

    snprintf(ws, sizeof(ws), "%s/workspace", root);
    cordon_env_init(&spec);
    cordon_error_init(&err);
    cr_assert_eq(cordon_env_set(&spec, "A", "spec", &err), 0);
    cr_assert_eq(cordon_env_set(&spec, "B", "spec", &err), 0);
    cr_assert_eq(cordon_exec_plan_build(&place,
                                        "{\"argv\":[\"id\"],\"cwd\":\"build\",\"env\":{\"A\":\"request\"},"
                                        "\"workspace_env\":{\"HOME\":\"build/home\"}}",
                                        &plan, &err),
                 0, "%s", err.message);
    snprintf(want, sizeof(want), "%s/build", ws);
    cr_expect_str_eq(plan.cwd, want);
    cr_expect_str_eq(plan.envp[0], "PATH=/bin");
    snprintf(want, sizeof(want), "HOME=%s/build/home", ws);
    for (size_t i = 0; plan.envp[i] != NULL; i++) {
        saw_a = saw_a || strcmp(plan.envp[i], "A=request") == 0;
        saw_b = saw_b || strcmp(plan.envp[i], "B=spec") == 0;
        saw_home = saw_home || strcmp(plan.envp[i], want) == 0;
    }
    cr_expect(saw_a, "the request's A wins over the spec's");
    cr_expect(saw_b, "the spec's B stays");
    cr_expect(saw_home, "HOME is the absolute path of the directory made");
    cr_expect(is_dir("workspace/build/home", 0755));
    cordon_exec_plan_clear(&plan);
    cordon_env_clear(&spec);
    close(fd);
}

struct plan_bad_row {
    const char *request;
    int code;
    const char *message;
};

static const struct plan_bad_row plan_bad_rows[] = {
    { "{\"argv\":[\"id\"],\"cwd\":\"missing\"}", CORDON_E_NOT_FOUND, "cwd" },
    { "{\"argv\":[\"id\"],\"cwd\":\"../etc\"}", CORDON_E_UNSAFE, "cwd" },
    { "{\"argv\":[]}", CORDON_E_INVALID, "argv" },
    /* Never a directory made inside the read-only source/. */
    { "{\"argv\":[\"id\"],\"workspace_env\":{\"CACHE\":\"source/cache\"}}", CORDON_E_NOT_FOUND,
      "workspace_env.CACHE" },
    { "not json", CORDON_E_INVALID, "request" },
};

Test(exec_plan, refusals_name_the_field_and_leave_ret_alone, .init = root_make, .fini = root_remove)
{
    int fd = workspace(true);
    char ws[128];
    struct cordon_exec_place place = { .ws_fd = fd, .ws_path = ws, .code_layout = true };

    snprintf(ws, sizeof(ws), "%s/workspace", root);
    for (size_t i = 0; i < sizeof(plan_bad_rows) / sizeof(plan_bad_rows[0]); i++) {
        struct cordon_exec_plan plan = { 0 };
        struct cordon_error err;
        int r;

        cordon_error_init(&err);
        r = cordon_exec_plan_build(&place, plan_bad_rows[i].request, &plan, &err);
        cr_expect_eq(r, plan_bad_rows[i].code, "%s: %d (%s)", plan_bad_rows[i].request, r, err.message);
        cr_expect(strstr(err.message, plan_bad_rows[i].message) != NULL, "%s: %s", plan_bad_rows[i].request,
                  err.message);
        cr_expect_null(plan.envp);
        cr_expect_null(plan.cwd);
    }
    cr_expect_not(is_dir("workspace/source/cache", 0755));
    close(fd);
}

/* The plan's rlimits, with RLIMIT_NPROC only for a uid of its own. */
Test(child_plan, init_sets_the_execution_limits)
{
    const struct cordon_limits lim = { 1, 256u << 20, 64u << 20, 50, 2500, 1u << 20 };
    struct cordon_child_plan plan;
    bool nproc = false;

    cordon_child_plan_init(&plan, &lim, false, 1234, 1234);
    cr_expect_eq(plan.n_limits, 6);
    cr_expect_eq(plan.limits[0].resource, RLIMIT_DATA);
    cr_expect_eq(plan.limits[0].value, 256u << 20);
    cr_expect_eq(plan.limits[1].value, 64u << 20);
    cr_expect_eq(plan.limits[2].value, 4, "2.5 s of runtime: 3 s and one more of cpu");
    cr_expect_eq(plan.parent, getpid());
    cr_expect_gt(plan.cap_last, 0);
    cordon_child_plan_init(&plan, &lim, true, 1234, 1234);
    for (uint32_t i = 0; i < plan.n_limits; i++)
        nproc = nproc || (plan.limits[i].resource == RLIMIT_NPROC && plan.limits[i].value == 50);
    cr_expect(nproc, "pids is RLIMIT_NPROC for a uid of its own");
}

/* Applied in a child of ours (no uid switch): the limits hold and
 * no_new_privs is set; the child exits at once with what it saw. */
Test(child_plan, apply_sets_the_limits_and_no_new_privs)
{
    const struct cordon_limits lim = { 1, 512u << 20, 8u << 20, 50, 60000, 1u << 20 };
    struct cordon_child_plan plan;
    int status = 0;
    pid_t pid;

    cordon_child_plan_init(&plan, &lim, false, 0, 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct rlimit fsize, core;
        int r = cordon_child_plan_apply(&plan);

        if (r != 0)
            _exit(10);
        if (getrlimit(RLIMIT_FSIZE, &fsize) != 0 || fsize.rlim_cur > (8u << 20))
            _exit(11);
        if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_max != 0)
            _exit(12);
        _exit(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 13);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child saw %d", WEXITSTATUS(status));
}
