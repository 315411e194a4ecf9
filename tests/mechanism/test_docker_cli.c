/*
 * docker through the cordon command: `cordon exec ID --stdin DIR`,
 * `--stdin -` from a terminal, exit statuses and `ulimit -s unlimited;
 * cordon exec`, against the real daemon and the minimal test image.
 * Docker relays stdin through its attach stream and starts the process
 * from the daemon, so the descriptor and the caller's rlimits never
 * reach it; the exit status is the daemon's, which folds a signal N into
 * 128+N (cordon-provider-docker(7)).
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
static char tmp[PATH_MAX], image[200];

static void setup(void)
{
    const char *bin = getenv("CORDON_BIN") ?: CORDON_BUILDDIR "/cordon";
    const char *so = getenv("CORDON_DOCKER_PROVIDER") ?: CORDON_BUILDDIR "/.libs/docker.so";
    const char *img = getenv("CORDON_DOCKER_IMAGE_MINIMAL");
    char dir[PATH_MAX + 16], link[PATH_MAX + 48], real[PATH_MAX];
    FILE *f;

    memset(&cli, 0, sizeof(cli));
    tmp[0] = '\0';
    cr_assert(img != NULL && img[0] != '\0', "CORDON_DOCKER_IMAGE_MINIMAL is not set");
    snprintf(image, sizeof(image), "%s", img);
    snprintf(tmp, sizeof(tmp), "%s/cordon-docker-cli.XXXXXX", getenv("TMPDIR") ?: "/tmp");
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_not_null(realpath(bin, cli.bin), "%s: %s", bin, strerror(errno));
    cr_assert_not_null(realpath(so, real), "%s: %s (set CORDON_DOCKER_PROVIDER)", so,
                       strerror(errno));
    /* The cordon command finds docker.so alone in this directory. */
    snprintf(dir, sizeof(dir), "%s/providers", tmp);
    snprintf(link, sizeof(link), "%s/docker.so", dir);
    cr_assert(mkdir(dir, 0755) == 0 && symlink(real, link) == 0);
    snprintf(cli.config, sizeof(cli.config), "%s/config.json", tmp);
    f = fopen(cli.config, "we");
    cr_assert_not_null(f);
    fprintf(f, "{\"provider_configs\": {\"docker\": {\"image\": \"%s\"}}}\n", image);
    fclose(f);
    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/state", tmp);
    snprintf(cli.env[0], sizeof(cli.env[0]), "CORDON_PROVIDER_PATH=%s", dir);
    snprintf(cli.env[1], sizeof(cli.env[1]), "CORDON_OBSERVER=%s",
             getenv("CORDON_OBSERVER") ?: CORDON_BUILDDIR "/cordon-observe");
    /* The built cordon-init, never one an earlier install left in the helper dir. */
    snprintf(cli.env[2], sizeof(cli.env[2]), "CORDON_INIT=%s",
             getenv("CORDON_INIT") ?: CORDON_BUILDDIR "/cordon-init");
    cli.provision_args[0] = "--image";
    cli.provision_args[1] = image;
}

static void teardown(void)
{
    cli_exec_cleanup(&cli);
    if (tmp[0] != '\0')
        cordon_fs_remove_tree_path(tmp, NULL);
    tmp[0] = '\0';
}

TestSuite(docker_cli, .init = setup, .fini = teardown, .timeout = 300);

Test(docker_cli, exec_stdin_directory_is_not_handed_in)
{
    cli_exec_check_stdin_directory(&cli, "docker");
}

Test(docker_cli, exec_stdin_terminal_is_not_handed_in)
{
    cli_exec_check_stdin_terminal(&cli, "docker");
}

/* Through the resident agent (the default): an exit and a signal are
 * told apart. */
Test(docker_cli, exec_exit_status_through_the_agent_is_the_truth)
{
    cli_exec_check_exit_status(&cli, "docker", true);
}

/* The same with the exec API: the daemon folds kill -9 into exited 137. */
static void use_the_exec_api(void)
{
    FILE *f = fopen(cli.config, "we");

    cr_assert_not_null(f);
    fprintf(f, "{\"provider_configs\": {\"docker\": {\"image\": \"%s\", \"exec_agent\": false}}}\n",
            image);
    fclose(f);
}

Test(docker_cli, exec_exit_status_through_the_exec_api_is_the_daemons_exit_code)
{
    use_the_exec_api();
    cli_exec_check_exit_status(&cli, "docker", false);
}

/* Through the agent: timeout, cancel and an output overflow end the
 * command's group and leave the container ready. */
Test(docker_cli, exec_timeout_cancel_and_overflow_keep_the_execution)
{
    cli_exec_check_command_ends_alone(&cli, "docker");
}

/* The exec API kills nothing of an exec: the container goes, and the
 * result says so. */
Test(docker_cli, exec_timeout_through_the_exec_api_ends_the_execution)
{
    use_the_exec_api();
    cli_exec_check_command_ends_execution(&cli, "docker");
}

Test(docker_cli, exec_stdin_directory_is_not_handed_in_by_the_exec_api)
{
    use_the_exec_api();
    cli_exec_check_stdin_directory(&cli, "docker");
}

Test(docker_cli, exec_does_not_inherit_the_callers_rlimits)
{
    cli_exec_check_rlimits(&cli, "docker", NULL, NULL);
}

/* The host's probe execution gets small limits and checks each from inside:
 * docker's cgroup and tmpfs sizes hold, and so does the host's output
 * budget; the deadline is not waited out. */
Test(docker_cli, probe_sees_every_limit_of_docker_hold)
{
    static const char *const held[] = { "cpus", "memory_bytes", "disk_bytes", "pids", "max_output_bytes" };
    const char *args[] = { "probe", "docker", "--fresh", "--json", NULL };
    const cJSON *limits;
    char *out = NULL;
    cJSON *doc;

    cr_assert_eq(cli_exec_run(&cli, args, -1, &out), 0, "%s", out);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    limits = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "probes"), 0), "limits_verified");
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
        const cJSON *v = cJSON_GetObjectItem(limits, held[i]);

        cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(v, "status")) ?: "", "held", "%s: %s", held[i],
                         cJSON_GetStringValue(cJSON_GetObjectItem(v, "detail")) ?: "(none)");
    }
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "runtime_ms"), "status"))
                         ?: "", "not_run");
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "pids"), "enforced_by"))
                         ?: "", "cgroup");
    /* The pids asked were drawn for this probe, within their range. */
    cr_expect(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "pids"), "asked")) >= 48 &&
                  cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(limits, "pids"), "asked")) <= 80,
              "pids asked: %s", out);
    cJSON_Delete(doc);
    free(out);
}

Test(docker_cli, files_put_cat_get_ls_rm_round_trip)
{
    cli_files_check_round_trip(&cli, "docker");
}

Test(docker_cli, files_never_pass_a_link_the_sandbox_planted)
{
    cli_files_check_hostile(&cli, "docker");
}

Test(docker_cli, files_move_50_mib_under_a_1_mib_output_limit)
{
    cli_files_check_large(&cli, "docker");
}

/* extend reaches where docker enforces the deadline: the execution outlives its first one. */
Test(docker_cli, extend_outlives_the_first_deadline, .timeout = 120)
{
    cli_extend_check_outlives_its_first_deadline(&cli, "docker");
}

Test(docker_cli, checkpoint_ls_and_rm)
{
    cli_extend_check_checkpoint_ls_rm(&cli, "docker");
}
