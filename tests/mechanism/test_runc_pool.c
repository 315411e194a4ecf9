/*
 * The warm pool on real runc, through the cordon command: pool fill, a
 * `cordon run --isolation required` that claims one, pool ls one fewer,
 * pool drain, and then nothing of any pooled execution left: no container
 * under the runtime's root, no cgroup, no mount, no record, no pool
 * directory. The suite's image and shared directory (test_runc.c's main).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/mechanism/cli_exec.h"

#define RUNTIME_ROOT "/run/cordon-runc"

static struct cli_exec cli;
static char image[PATH_MAX + 80];
static pid_t watcher = -1;   /* a pool fill --watch this test started */

static void setup(void)
{
    const char *shared = getenv("CORDON_RUNC_TEST_SHARED"), *img = getenv("CORDON_RUNC_IMAGE");
    const char *bin = getenv("CORDON_BIN") ?: "./cordon";

    memset(&cli, 0, sizeof(cli));
    cr_assert(geteuid() == 0, "runc needs root");
    cr_assert(img != NULL && img[0] != '\0', "CORDON_RUNC_IMAGE is not set");
    cr_assert(shared != NULL && shared[0] == '/', "CORDON_RUNC_TEST_SHARED is not set: run the "
              "tests through runc-tests' main");
    cr_assert_not_null(realpath(bin, cli.bin), "%s: %s", bin, strerror(errno));
    snprintf(image, sizeof(image), "%s", img);
    snprintf(cli.config, sizeof(cli.config), "%s/cli-config.json", shared);
    /* A state directory of its own: the pool is the only thing in it
     * (the tests that run beside this one take others). */
    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/pool-state", shared);
    snprintf(cli.env[0], sizeof(cli.env[0]), "CORDON_PROVIDER_PATH=%s/providers", shared);
    snprintf(cli.env[1], sizeof(cli.env[1]), "CORDON_OBSERVER=%s",
             getenv("CORDON_OBSERVER") ?: "./cordon-observe");
    snprintf(cli.env[2], sizeof(cli.env[2]), "CORDON_INIT=%s",
             getenv("CORDON_INIT") ?: "./cordon-init");
}

static void teardown(void)
{
    char *out = NULL;

    /* A failed check left the watcher running: stopped first, or it
     * would refill what drain destroys. */
    if (watcher > 0) {
        kill(watcher, SIGTERM);
        waitpid(watcher, NULL, 0);
        watcher = -1;
    }
    /* Whatever a failed check left. */
    cli_exec_run(&cli, (const char *const[]){ "pool", "drain", "--json", NULL }, -1, &out);
    free(out);
}

TestSuite(runc_pool, .init = setup, .fini = teardown, .timeout = 600);

static cJSON *cordon_json(const char *const *args, int want_rc)
{
    char *out = NULL;
    cJSON *doc;
    int rc = cli_exec_run(&cli, args, -1, &out);

    doc = cJSON_Parse(out);
    cr_assert(cJSON_IsObject(doc), "cordon %s %s printed no JSON object: %.600s", args[0],
              args[1] != NULL ? args[1] : "", out);
    cr_assert_eq(rc, want_rc, "cordon %s %s: exit %d: %.600s", args[0], args[1] != NULL ? args[1] : "",
                 rc, out);
    free(out);
    return doc;
}

/* Unclaimed executions in pool ls, and their ids into ids (NULL-ended). */
static int pool_ready(char ids[][72], int max)
{
    cJSON *doc = cordon_json((const char *const[]){ "pool", "ls", "--json", NULL }, 0);
    const cJSON *p, *e;
    int n = 0;

    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pools")) {
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "executions")) {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "expired")))
                continue;
            if (ids != NULL && n < max)
                snprintf(ids[n], 72, "%s",
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "execution_id")));
            n++;
        }
    }
    cJSON_Delete(doc);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* What runc, the cgroup tree and the mount table still hold of id. */
static void assert_nothing_left(const char *id)
{
    char path[PATH_MAX], *mounts = NULL;
    size_t cap = 0;
    glob_t g;
    FILE *f;

    snprintf(path, sizeof(path), RUNTIME_ROOT "/%s", id);
    cr_assert_not(exists(path), "the runtime still has %s", path);
    for (int depth = 0; depth < 3; depth++) {
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/*%s*", depth == 0 ? "" : depth == 1 ? "/*" : "/*/*", id);
        memset(&g, 0, sizeof(g));
        cr_assert_neq(glob(path, 0, NULL, &g) == 0 && g.gl_pathc > 0, true, "a cgroup of %s remains: %s", id,
                      g.gl_pathc > 0 ? g.gl_pathv[0] : "");
        globfree(&g);
    }
    f = fopen("/proc/self/mountinfo", "re");
    cr_assert_not_null(f);
    while (getline(&mounts, &cap, f) > 0)
        cr_assert(strstr(mounts, id) == NULL, "a mount of %s remains: %s", id, mounts);
    free(mounts);
    fclose(f);
}

Test(runc_pool, fill_run_claims_one_ls_one_fewer_drain_leaves_nothing)
{
    char ids[4][72], bundle[PATH_MAX + 32], path[PATH_MAX + 64];
    const char *shared = getenv("CORDON_RUNC_TEST_SHARED");
    const char *id;
    cJSON *doc;
    int fd;

    doc = cordon_json((const char *const[]){ "pool", "fill", "--provider", "runc", "--image", image,
                                             "--isolation", "required", "--timeout", "60s",
                                             "--size", "2", "--json", NULL }, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "added")), 2);
    cJSON_Delete(doc);
    cr_assert_eq(pool_ready(ids, 4), 2);
    /* cordon ls labels them. */
    doc = cordon_json((const char *const[]){ "ls", "--json", NULL }, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "executions")), 2);
    cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "executions"), 0), "pool")));
    cJSON_Delete(doc);

    snprintf(bundle, sizeof(bundle), "%s/pool-hello", shared);
    mkdir(bundle, 0755);
    snprintf(path, sizeof(path), "%s/main.py", bundle);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "print('hello from the pool')\n", 29), 29);
    close(fd);
    doc = cordon_json((const char *const[]){ "run", "--provider", "runc", "--isolation", "required",
                                             "--image", image, "--timeout", "60s", "--json", path, NULL }, 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "stdout")), "hello from the pool\n");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"), "pooled")),
              "the run did not claim a pooled execution");
    id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
                                                                "execution_id"));
    cr_assert(id != NULL && (strcmp(id, ids[0]) == 0 || strcmp(id, ids[1]) == 0), "claimed %s, not a pooled one",
              id != NULL ? id : "nothing");
    /* Used once: the claimed one is gone like a fresh run's. */
    assert_nothing_left(id);
    cJSON_Delete(doc);
    cr_assert_eq(pool_ready(NULL, 0), 1);

    doc = cordon_json((const char *const[]){ "pool", "drain", "--json", NULL }, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "drained")), 1);
    cJSON_Delete(doc);
    cr_assert_eq(pool_ready(NULL, 0), 0);
    for (int i = 0; i < 2; i++)
        assert_nothing_left(ids[i]);
    doc = cordon_json((const char *const[]){ "ls", "--json", NULL }, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "executions")), 0);
    cJSON_Delete(doc);
    snprintf(path, sizeof(path), "%s/pool", cli.state_dir);
    cr_assert_not(exists(path), "drain left %s", path);
}

/* Bad input on the command line: the field and the bound, and nothing made. */
Test(runc_pool, fill_refusals_name_the_bound_and_leave_nothing)
{
    static const char *const sizes[] = { "0", "65", "-1", "x" };
    char path[PATH_MAX + 64];

    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/pool-refusal-state", getenv("CORDON_RUNC_TEST_SHARED"));

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *out = NULL;
        int rc = cli_exec_run(&cli, (const char *const[]){ "pool", "fill", "--provider", "runc", "--image",
                                                           image, "--size", sizes[i], "--json", NULL }, -1, &out);

        cr_assert_eq(rc, 125, "--size %s: exit %d", sizes[i], rc);
        cr_assert(strstr(out, "size") != NULL, "--size %s: %s", sizes[i], out);
        if (i < 2)
            cr_assert(strstr(out, "1..64") != NULL, "--size %s does not name the bound: %s", sizes[i], out);
        free(out);
    }
    cr_assert_eq(pool_ready(NULL, 0), 0);
    snprintf(path, sizeof(path), "%s/pool", cli.state_dir);
    cr_assert_not(exists(path), "a refused fill left %s", path);
}

/* pool fill --watch as its own process; the pid. */
static pid_t watch_start(void)
{
    const char *argv[] = { cli.bin, "--config", cli.config, "--state-dir", cli.state_dir, "pool", "fill",
                           "--provider", "runc", "--image", image, "--isolation", "required", "--timeout",
                           "60s", "--size", "1", "--watch", "--interval", "200ms", NULL };
    const char *envp[] = { cli.env[0], cli.env[1], cli.env[2], "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    return pid;
}

/* Wait up to ms for pool ls to show want claimable executions. */
static bool ready_within(int want, unsigned ms)
{
    for (unsigned waited = 0; waited <= ms; waited += 100) {
        if (pool_ready(NULL, 0) == want)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

Test(runc_pool, fill_watch_keeps_it_filled_and_stops_on_sigterm)
{
    char path[PATH_MAX + 64], dir[PATH_MAX + 32];
    const char *shared = getenv("CORDON_RUNC_TEST_SHARED");
    int status, fd;
    pid_t pid;
    cJSON *doc;

    snprintf(dir, sizeof(dir), "%s/pool-watch", shared);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/main.py", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "print('hello')\n", 15), 15);
    close(fd);
    /* Tests run in parallel: each has a state directory of its own. */
    snprintf(cli.state_dir, sizeof(cli.state_dir), "%s/pool-watch-state", shared);
    watcher = pid = watch_start();
    /* The first fill may unpack the toolchain rootfs into a fresh state
     * directory: about 30 s on a loaded 2-core machine. */
    cr_assert(ready_within(1, 120000), "--watch did not fill the pool within 120 s");
    for (int i = 0; i < 2; i++) {
        doc = cordon_json((const char *const[]){ "run", "--provider", "runc", "--isolation", "required",
                                                 "--image", image, "--timeout", "60s", "--json", path, NULL }, 0);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
                                                                 "pooled")), "run %d did not claim", i);
        cJSON_Delete(doc);
        /* Refilled by the watcher, not by the run. */
        cr_assert(ready_within(1, 60000), "--watch did not refill within 60 s after run %d", i);
    }
    cr_assert_eq(kill(pid, SIGTERM), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    watcher = -1;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the watcher ended with status %d", status);
    doc = cordon_json((const char *const[]){ "pool", "drain", "--json", NULL }, 0);
    cJSON_Delete(doc);
    cr_assert_eq(pool_ready(NULL, 0), 0);
}
