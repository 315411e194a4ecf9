/*
 * trusted-local through the cordon command: `cordon exec ID --stdin DIR`,
 * `--stdin -` from a terminal, exit statuses and `ulimit -s unlimited;
 * cordon exec`. trusted-local protects nothing else, but stdin still
 * crosses through a pipe and the process's rlimits are its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <cordon/sdk/fs.h>

#include "tests/mechanism/cli_exec.h"
#include "tests/mechanism/cli_files.h"
#include "tests/mechanism/cli_extend.h"

static struct cli_exec cli;
static char tmp[PATH_MAX];

static void setup(void)
{
    const char *bin = getenv("CORDON_BIN") ?: "./cordon";
    const char *so = getenv("CORDON_TL_PROVIDER") ?: ".libs/trusted-local.so";
    char dir[PATH_MAX + 16], link[PATH_MAX + 48], real[PATH_MAX];
    FILE *f;

    memset(&cli, 0, sizeof(cli));
    snprintf(tmp, sizeof(tmp), "%s/cordon-tl-cli.XXXXXX", getenv("TMPDIR") ?: "/tmp");
    cr_assert_not_null(mkdtemp(tmp));
    /* 0711: the sandbox user passes through to its execution area. */
    cr_assert_eq(chmod(tmp, 0711), 0);
    cr_assert_not_null(realpath(bin, cli.bin), "%s: %s", bin, strerror(errno));
    cr_assert_not_null(realpath(so, real), "%s: %s (set CORDON_TL_PROVIDER)", so,
                       strerror(errno));
    /* The cordon command finds trusted-local.so alone in this directory. */
    snprintf(dir, sizeof(dir), "%s/providers", tmp);
    snprintf(link, sizeof(link), "%s/trusted-local.so", dir);
    cr_assert(mkdir(dir, 0755) == 0 && symlink(real, link) == 0);
    snprintf(cli.config, sizeof(cli.config), "%s/config.json", tmp);
    f = fopen(cli.config, "we");
    cr_assert_not_null(f);
    fprintf(f, "{\"provider_configs\": {\"trusted-local\": {\"allow_unsafe_local\": true, "
               "\"root\": \"%s/root\"}}}\n", tmp);
    fclose(f);
    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/state", tmp);
    snprintf(cli.env[0], sizeof(cli.env[0]), "CORDON_PROVIDER_PATH=%s", dir);
    snprintf(cli.env[1], sizeof(cli.env[1]), "CORDON_OBSERVER=%s",
             getenv("CORDON_OBSERVER") ?: "./cordon-observe");
    cli.provision_args[0] = "--allow-unsafe-local";
    cli.provision_args[1] = "--isolation";
    cli.provision_args[2] = "none";
}

static void teardown(void)
{
    cli_exec_cleanup(&cli);
    if (tmp[0] != '\0')
        cordon_fs_remove_tree_path(tmp, NULL);
    tmp[0] = '\0';
}

TestSuite(trusted_local_cli, .init = setup, .fini = teardown, .timeout = 120);

Test(trusted_local_cli, exec_stdin_directory_is_not_handed_in)
{
    cli_exec_check_stdin_directory(&cli, "trusted-local");
}

Test(trusted_local_cli, exec_stdin_terminal_is_not_handed_in)
{
    cli_exec_check_stdin_terminal(&cli, "trusted-local");
}

Test(trusted_local_cli, exec_output_streams_as_it_comes)
{
    cli_exec_check_output_streams(&cli, "trusted-local");
}

Test(trusted_local_cli, exec_exit_status_is_the_truth)
{
    cli_exec_check_exit_status(&cli, "trusted-local", true);
}

/* Timeout, cancel and an output overflow end the command's group and
 * leave the execution ready. */
Test(trusted_local_cli, exec_timeout_cancel_and_overflow_keep_the_execution)
{
    cli_exec_check_command_ends_alone(&cli, "trusted-local");
}

Test(trusted_local_cli, exec_does_not_inherit_the_callers_rlimits)
{
    cli_exec_check_rlimits(&cli, "trusted-local", "8388608", "1024");
}

Test(trusted_local_cli, run_without_a_workspace_returns_outputs_inline)
{
    cli_exec_check_inline_outputs(&cli, "trusted-local", "none");
}

Test(trusted_local_cli, files_put_cat_get_ls_rm_round_trip)
{
    cli_files_check_round_trip(&cli, "trusted-local");
}

Test(trusted_local_cli, files_never_pass_a_link_the_sandbox_planted)
{
    cli_files_check_hostile(&cli, "trusted-local");
}

Test(trusted_local_cli, files_move_50_mib_under_a_1_mib_output_limit)
{
    cli_files_check_large(&cli, "trusted-local");
}

/* extend reaches where trusted-local enforces the deadline: the execution outlives its first one. */
Test(trusted_local_cli, extend_outlives_the_first_deadline, .timeout = 120)
{
    cli_extend_check_outlives_its_first_deadline(&cli, "trusted-local");
}

Test(trusted_local_cli, checkpoint_ls_and_rm)
{
    cli_extend_check_checkpoint_ls_rm(&cli, "trusted-local");
}
