/*
 * runc through the cordon command, as the attacker drove it: `cordon exec
 * ID --stdin DIR`, `--stdin -` from a terminal, exit statuses on both exec
 * paths, and `ulimit -s unlimited; cordon exec`. Real runc, the suite's
 * image and state directory (test_runc.c's main makes it and checks that
 * nothing is left).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/mechanism/cli_exec.h"
#include "tests/mechanism/cli_files.h"
#include "tests/mechanism/cli_extend.h"

static struct cli_exec cli;
static char runtime_config[PATH_MAX + 96];

static void setup(void)
{
    const char *shared = getenv("CORDON_RUNC_TEST_SHARED"), *image = getenv("CORDON_RUNC_IMAGE");
    const char *bin = getenv("CORDON_BIN") ?: "./cordon";
    static char image_arg[PATH_MAX + 80];

    memset(&cli, 0, sizeof(cli));
    cr_assert(geteuid() == 0, "runc needs root");
    cr_assert(image != NULL && image[0] != '\0', "CORDON_RUNC_IMAGE is not set");
    cr_assert(shared != NULL && shared[0] == '/', "CORDON_RUNC_TEST_SHARED is not set: run the "
              "tests through runc-tests' main");
    cr_assert_not_null(realpath(bin, cli.bin), "%s: %s", bin, strerror(errno));
    snprintf(cli.config, sizeof(cli.config), "%s/cli-config.json", shared);
    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/cli-state", shared);
    snprintf(cli.env[0], sizeof(cli.env[0]), "CORDON_PROVIDER_PATH=%s/providers", shared);
    snprintf(cli.env[1], sizeof(cli.env[1]), "CORDON_OBSERVER=%s",
             getenv("CORDON_OBSERVER") ?: "./cordon-observe");
    snprintf(cli.env[2], sizeof(cli.env[2]), "CORDON_INIT=%s",
             getenv("CORDON_INIT") ?: "./cordon-init");
    snprintf(image_arg, sizeof(image_arg), "%s", image);
    cli.provision_args[0] = "--image";
    cli.provision_args[1] = image_arg;
}

static void teardown(void)
{
    cli_exec_cleanup(&cli);
}

TestSuite(runc_cli, .init = setup, .fini = teardown, .timeout = 600);

/* The runtime path (`runtime exec`): a wrapper that is not runc or crun by
 * its --version, so the provider does not enter the container itself. */
static void use_the_runtime_path(void)
{
    static const char text[] =
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then printf 'othert version 1.1.5\\nspec: 1.0.2-dev\\n'; exit 0; fi\n"
        "exec runc \"$@\"\n";
    const char *shared = getenv("CORDON_RUNC_TEST_SHARED");
    char path[PATH_MAX + 32];
    int fd;

    snprintf(path, sizeof(path), "%s/othert-cli", shared);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(runtime_config, sizeof(runtime_config), "{\"runtime_path\": \"%s\"}", path);
    cli.provision_args[2] = "--provider-config";
    cli.provision_args[3] = runtime_config;
}

Test(runc_cli, exec_stdin_directory_is_not_handed_in)
{
    cli_exec_check_stdin_directory(&cli, "runc");
}

Test(runc_cli, exec_stdin_terminal_is_not_handed_in)
{
    cli_exec_check_stdin_terminal(&cli, "runc");
}

Test(runc_cli, exec_stdin_directory_is_not_handed_in_by_the_runtime_path)
{
    use_the_runtime_path();
    cli_exec_check_stdin_directory(&cli, "runc");
}

Test(runc_cli, exec_stdin_terminal_is_not_handed_in_by_the_runtime_path)
{
    use_the_runtime_path();
    cli_exec_check_stdin_terminal(&cli, "runc");
}

/* Entered (setns): cordon-init is the provider's child and dies of the
 * command's signal, so an exit and a signal are told apart. */
Test(runc_cli, exec_exit_status_is_the_truth)
{
    cli_exec_check_exit_status(&cli, "runc", true);
}

/* `runc exec` folds a signal into 128+N: reported as the exit it is. */
Test(runc_cli, exec_exit_status_through_the_runtime_is_an_exit)
{
    use_the_runtime_path();
    cli_exec_check_exit_status(&cli, "runc", false);
}

/* Through the agent: timeout, cancel and an output overflow end the
 * command's group and leave the container ready. */
Test(runc_cli, exec_timeout_cancel_and_overflow_keep_the_execution)
{
    cli_exec_check_command_ends_alone(&cli, "runc");
}

/* Another runtime's exec ends only its own client: the execution goes,
 * and the result says so. */
Test(runc_cli, exec_timeout_through_the_runtime_ends_the_execution)
{
    use_the_runtime_path();
    cli_exec_check_command_ends_execution(&cli, "runc");
}

Test(runc_cli, exec_does_not_inherit_the_callers_rlimits)
{
    cli_exec_check_rlimits(&cli, "runc", "8388608", "1024");
}

Test(runc_cli, exec_through_the_runtime_does_not_inherit_the_callers_rlimits)
{
    use_the_runtime_path();
    cli_exec_check_rlimits(&cli, "runc", "8388608", "1024");
}

Test(runc_cli, run_without_a_workspace_returns_outputs_inline)
{
    cli_exec_check_inline_outputs(&cli, "runc", "required");
}

Test(runc_cli, files_put_cat_get_ls_rm_round_trip)
{
    cli_files_check_round_trip(&cli, "runc");
}

Test(runc_cli, files_never_pass_a_link_the_sandbox_planted)
{
    cli_files_check_hostile(&cli, "runc");
}

Test(runc_cli, files_move_50_mib_under_a_1_mib_output_limit)
{
    cli_files_check_large(&cli, "runc");
}

/* extend reaches where runc enforces the deadline: the execution outlives its first one. */
Test(runc_cli, extend_outlives_the_first_deadline, .timeout = 120)
{
    cli_extend_check_outlives_its_first_deadline(&cli, "runc");
}

Test(runc_cli, checkpoint_ls_and_rm)
{
    cli_extend_check_checkpoint_ls_rm(&cli, "runc");
}
