/*
 * bubblewrap through the cordon command, as an ordinary user: what the
 * contract suite does not cover. Run as root, every command runs as uid
 * 65534 (nobody) with a home of its own in a temporary directory; run as
 * another user, as that user. The host's probe observes four axes there;
 * code inside reaches nothing of the caller's (home, ~/.ssh, cordon's
 * state, $XDG_RUNTIME_DIR, the caller's processes, the network); the
 * limits hold as the facts say, and a limit that is not enforced is not
 * claimed, so isolation required refuses the provider naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include <cordon/provider.h>
#include <cordon/sdk/child.h>
#include <cordon/sdk/fs.h>
#include <cordon/sdk/runner.h>

#define USER_UID 65534u
#define SECRET "bw-test-secret-6a1f0c"

static char tmp[PATH_MAX], bin[PATH_MAX], home[PATH_MAX + 16];
static char env[6][PATH_MAX + 64];
static uid_t user;

static void give(const char *path)
{
    if (geteuid() == 0)
        cr_assert_eq(chown(path, USER_UID, USER_UID), 0, "chown %s: %s", path, strerror(errno));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    give(path);
}

static void make_dir(const char *path, mode_t mode)
{
    cr_assert_eq(mkdir(path, mode), 0, "mkdir %s: %s", path, strerror(errno));
    cr_assert_eq(chmod(path, mode), 0);
    give(path);
}

static void setup(void)
{
    const char *so = getenv("CORDON_BW_PROVIDER") ?: ".libs/bubblewrap.so";
    char path[PATH_MAX + 64], real[PATH_MAX];

    user = geteuid() == 0 ? USER_UID : geteuid();
    snprintf(tmp, sizeof(tmp), "%s/cordon-bw.XXXXXX", getenv("TMPDIR") ?: "/tmp");
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_eq(chmod(tmp, 0755), 0);
    cr_assert_not_null(realpath(getenv("CORDON_BIN") ?: "./cordon", bin));
    cr_assert_not_null(realpath(so, real), "%s: %s (set CORDON_BW_PROVIDER)", so, strerror(errno));
    /* The cordon command finds bubblewrap.so alone in this directory. */
    snprintf(path, sizeof(path), "%s/providers", tmp);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/providers/bubblewrap.so", tmp);
    cr_assert_eq(symlink(real, path), 0);
    /* The user's home, with what hostile code would look for. */
    snprintf(home, sizeof(home), "%s/home", tmp);
    make_dir(home, 0700);
    snprintf(path, sizeof(path), "%s/.ssh", home);
    make_dir(path, 0700);
    snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", home);
    write_file(path, SECRET "\n", 0600);
    snprintf(path, sizeof(path), "%s/run", tmp);
    make_dir(path, 0700);
    snprintf(path, sizeof(path), "%s/run/bus", tmp);
    write_file(path, SECRET "\n", 0600);
    snprintf(env[0], sizeof(env[0]), "HOME=%s", home);
    snprintf(env[1], sizeof(env[1]), "XDG_RUNTIME_DIR=%s/run", tmp);
    snprintf(env[2], sizeof(env[2]), "CORDON_PROVIDER_PATH=%s/providers", tmp);
    snprintf(env[3], sizeof(env[3]), "CORDON_OBSERVER=%s", getenv("CORDON_OBSERVER") ?: "./cordon-observe");
    snprintf(env[4], sizeof(env[4]), "PATH=/usr/bin:/bin");
    if (env[3][16] != '/') {
        cr_assert_not_null(realpath(env[3] + 16, real));
        snprintf(env[3], sizeof(env[3]), "CORDON_OBSERVER=%s", real);
    }
}

static void teardown(void)
{
    if (tmp[0] != '\0')
        cordon_fs_remove_tree_path(tmp, NULL);
    tmp[0] = '\0';
}

TestSuite(bubblewrap_user, .init = setup, .fini = teardown, .timeout = 240);

static CORDON_RUNNER_CHILD int become_user(void *arg)
{
    (void)arg;
    return geteuid() == 0 && cordon_child_become(USER_UID, USER_UID) != 0 ? errno : 0;
}

/* cordon ARGS... as the user, in tmp; its exit code, stdout and stderr. */
static int cordon(const char *const *args, char **ret_out, char **ret_err)
{
    const char *argv[24], *envp[7];
    struct cordon_runner_opts opts;
    struct cordon_exec_outcome o = { 0 };
    struct cordon_error e;
    size_t n = 0;
    int code;

    argv[n++] = bin;
    for (size_t i = 0; args[i] != NULL && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    for (size_t i = 0; i < 5; i++)
        envp[i] = env[i];
    envp[5] = NULL;
    cordon_runner_opts_init(&opts);
    opts.argv = argv;
    opts.envp = envp;
    opts.cwd = tmp;
    opts.retention_bytes = 1u << 20;
    opts.timeout_ms = 200000;
    opts.child_setup = become_user;
    opts.fork_child = true;
    cordon_error_init(&e);
    cr_assert_eq(cordon_runner_run(&opts, &o, &e), 0, "cordon: %s", e.message);
    cr_assert_eq(o.status, CORDON_RUN_EXITED, "cordon ended with status %d", (int)o.status);
    code = o.exit_code;
    *ret_out = strdup(o.out.data != NULL ? o.out.data : "");
    *ret_err = strdup(o.err.data != NULL ? o.err.data : "");
    cordon_exec_outcome_clear(&o);
    return code;
}

static const cJSON *get(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

    return b != NULL ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

Test(bubblewrap_user, probe_observes_four_axes_and_claims_only_what_holds)
{
    const char *args[] = { "probe", "--json", "bubblewrap", NULL };
    static const char *const axes[] = { "process_contained", "host_filesystem_restricted",
                                        "privilege_escalation_blocked", "syscalls_restricted" };
    static const char *const held[] = { "memory_bytes", "pids", "max_output_bytes" };
    static const char *const unclaimed[] = { "cpus", "disk_bytes" };
    char *out, *err;
    cJSON *doc;
    const cJSON *f;
    int code = cordon(args, &out, &err);

    cr_assert_eq(code, 0, "probe exited %d: %s", code, err);
    doc = cJSON_Parse(out);
    f = cJSON_GetArrayItem(get(doc, "probes", NULL), 0);
    cr_assert_not_null(f, "no probe in %s", out);
    cr_assert_str_eq(cJSON_GetStringValue(get(f, "verification", "status")), "verified", "%s", out);
    for (size_t i = 0; i < 4; i++)
        cr_assert(cJSON_IsTrue(get(f, "isolation", axes[i])), "%s not observed true: %s", axes[i], out);
    cr_assert_str_eq(cJSON_GetStringValue(get(f, "isolation", "network_mode")), "none");
    cr_assert_str_eq(cJSON_GetStringValue(get(f, "mechanism_facts", "run_as")), "caller");
    for (size_t i = 0; i < 3; i++)
        cr_assert_str_eq(cJSON_GetStringValue(get(get(f, "limits_verified", held[i]), "status", NULL)), "held",
                         "%s: %s", held[i], out);
    /* Not enforced without root: not claimed, never a weaker limit. */
    for (size_t i = 0; i < 2; i++) {
        cr_assert_str_eq(cJSON_GetStringValue(get(get(f, "limits_verified", unclaimed[i]), "status", NULL)),
                         "not_claimed", "%s: %s", unclaimed[i], out);
        cr_assert_str_eq(cJSON_GetStringValue(get(f, "limits_enforcement", unclaimed[i])), "none");
    }
    cJSON_Delete(doc);
    free(out);
    free(err);
}

/* Hostile code looks for what the caller has: every reach prints LEAK. */
static const char hostile_py[] =
    "import os, socket, sys\n"
    "home, run, state, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
    "def leak(what):\n"
    "    print('LEAK', what)\n"
    "for p in (home + '/.ssh/id_ed25519', run + '/bus', home, state):\n"
    "    try:\n"
    "        leak(p + ': ' + (open(p).read() if os.path.isfile(p) else str(os.listdir(p))))\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    os.kill(pid, 0); leak('signal to the caller')\n"
    "except OSError:\n"
    "    pass\n"
    "if os.path.exists('/proc/%d' % pid): leak('caller in /proc')\n"
    "if [n for n in os.listdir('/sys/class/net') if n != 'lo'] if os.path.isdir('/sys/class/net') else False:\n"
    "    leak('network interfaces')\n"
    "s = socket.socket()\n"
    "s.settimeout(2)\n"
    "try:\n"
    "    s.connect(('1.1.1.1', 53)); leak('network')\n"
    "except OSError:\n"
    "    pass\n"
    "print('uid', os.getuid(), 'checked')\n";

Test(bubblewrap_user, hostile_code_reaches_nothing_of_the_caller)
{
    char py[PATH_MAX + 16], run[PATH_MAX + 16], state[PATH_MAX + 64], pid[16], *out, *err;
    const char *args[] = { "run", "--provider", "bubblewrap", "--isolation", "preferred", py, "--",
                           home, run, state, pid, NULL };
    int code;

    snprintf(py, sizeof(py), "%s/main.py", tmp);
    write_file(py, hostile_py, 0644);
    snprintf(run, sizeof(run), "%s/run", tmp);
    snprintf(state, sizeof(state), "%s/.local/state/cordon", home);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    code = cordon(args, &out, &err);
    cr_assert_eq(code, 0, "run exited %d: %s%s", code, out, err);
    cr_assert_not_null(strstr(out, "uid 1000 checked"), "the code did not finish: %s%s", out, err);
    cr_assert_null(strstr(out, "LEAK"), "hostile code reached the caller's: %s", out);
    cr_assert_null(strstr(out, SECRET), "%s", out);
    free(out);
    free(err);
}

/* pids 16 and memory 64M, as RLIMIT_NPROC inside and RLIMIT_DATA. */
static const char limits_py[] =
    "import os, signal\n"
    "n = 0\n"
    "try:\n"
    "    while n < 64:\n"
    "        if os.fork() == 0:\n"
    "            signal.pause()\n"
    "        n += 1\n"
    "except OSError:\n"
    "    pass\n"
    "print('forks', n)\n"
    "try:\n"
    "    b = bytearray(128 << 20); print('memory given')\n"
    "except MemoryError:\n"
    "    print('memory refused')\n";

Test(bubblewrap_user, limits_hold_as_the_facts_say)
{
    char py[PATH_MAX + 16], *out, *err, *forks;
    const char *args[] = { "run", "--provider", "bubblewrap", "--isolation", "preferred", "--pids", "16",
                           "--memory", "64M", py, NULL };
    int code, n;

    snprintf(py, sizeof(py), "%s/main.py", tmp);
    write_file(py, limits_py, 0644);
    code = cordon(args, &out, &err);
    cr_assert_eq(code, 0, "run exited %d: %s%s", code, out, err);
    forks = strstr(out, "forks ");
    cr_assert_not_null(forks, "%s%s", out, err);
    n = atoi(forks + 6);
    cr_assert(n > 0 && n < 16, "%d forks with pids 16: %s", n, out);
    cr_assert_not_null(strstr(out, "memory refused"), "128 MiB given with memory 64M: %s", out);
    free(out);
    free(err);
}

/* disk 16M: /tmp gets an eighth (cordon_disk_split), a sized tmpfs even
 * without root; the workspace is bounded per file (RLIMIT_FSIZE). */
static const char disk_py[] =
    "import errno, os\n"
    "def fill(path, total):\n"
    "    n = 0\n"
    "    try:\n"
    "        with open(path, 'wb') as f:\n"
    "            while n < total:\n"
    "                f.write(b'x' * 65536); f.flush(); n += 65536\n"
    "    except OSError as e:\n"
    "        return n, errno.errorcode.get(e.errno, e.errno)\n"
    "    return n, 'none'\n"
    "print('tmp', *fill('/tmp/fill', 8 << 20))\n"
    "print('ws', *fill('/workspace/output/fill', 32 << 20))\n";

Test(bubblewrap_user, tmp_is_sized_and_files_are_bounded)
{
    char py[PATH_MAX + 16], *out, *err, *tmp_line, *ws_line;
    const char *args[] = { "run", "--provider", "bubblewrap", "--isolation", "preferred", "--disk", "16M",
                           py, NULL };
    long long n;
    int code;

    snprintf(py, sizeof(py), "%s/main.py", tmp);
    write_file(py, disk_py, 0644);
    code = cordon(args, &out, &err);
    cr_assert_eq(code, 0, "run exited %d: %s%s", code, out, err);
    tmp_line = strstr(out, "tmp ");
    ws_line = strstr(out, "ws ");
    cr_assert(tmp_line != NULL && ws_line != NULL, "%s%s", out, err);
    n = atoll(tmp_line + 4);
    cr_assert(n <= (2 << 20) && strstr(tmp_line, "ENOSPC") != NULL, "/tmp took %lld bytes of 8 MiB: %s", n, out);
    /* One file stops at disk_bytes (EFBIG, SIGXFSZ ignored by python). */
    n = atoll(ws_line + 3);
    cr_assert(n <= (16 << 20) && strstr(ws_line, "EFBIG") != NULL, "one file took %lld bytes: %s", n, out);
    free(out);
    free(err);
}

Test(bubblewrap_user, isolation_required_refuses_naming_the_unenforced_limit)
{
    char py[PATH_MAX + 16], *out, *err;
    const char *args[] = { "run", "--provider", "bubblewrap", "--isolation", "required", py, NULL };
    int code;

    snprintf(py, sizeof(py), "%s/main.py", tmp);
    write_file(py, "print('ran')\n", 0644);
    code = cordon(args, &out, &err);
    cr_assert_eq(code, 125, "run exited %d: %s%s", code, out, err);
    cr_assert_null(strstr(out, "ran"), "%s", out);
    cr_assert_not_null(strstr(err, "does not enforce cpus"), "%s", err);
    free(out);
    free(err);
}

/* Naming the two limits it cannot hold, an ordinary user gets isolation
 * required: the four axes still observed, the verdict listing both. */
Test(bubblewrap_user, isolation_required_runs_with_the_unenforced_limits_named_best_effort)
{
    char py[PATH_MAX + 16], *out, *err;
    const char *args[] = { "run", "--provider", "bubblewrap", "--isolation", "required", "--best-effort",
                           "cpus,disk", "--json", py, NULL };
    const cJSON *verdict;
    cJSON *doc;
    int code;

    snprintf(py, sizeof(py), "%s/main.py", tmp);
    write_file(py, "print('ran')\n", 0644);
    code = cordon(args, &out, &err);
    cr_assert_eq(code, 0, "run exited %d: %s%s", code, out, err);
    doc = cJSON_Parse(out);
    cr_assert_not_null(doc, "%s", out);
    cr_expect_str_eq(cJSON_GetStringValue(get(doc, "stdout", NULL)), "ran\n");
    verdict = get(get(doc, "meta", NULL), "verdict", NULL);
    cr_expect_str_eq(cJSON_GetStringValue(get(verdict, "isolation_requested", NULL)), "required");
    cr_expect_str_eq(cJSON_GetStringValue(get(verdict, "status", NULL)), "verified");
    cr_expect_eq(cJSON_GetArraySize(get(verdict, "limits_not_enforced", NULL)), 2, "%s", out);
    cr_expect_eq(cJSON_GetArraySize(get(verdict, "best_effort_limits", NULL)), 2, "%s", out);
    cJSON_Delete(doc);
    free(out);
    free(err);
}

Test(bubblewrap_user, the_execution_area_lives_in_the_users_state_dir)
{
    const char *prov[] = { "provision", "--provider", "bubblewrap", "--isolation", "preferred", "--cpus", "1",
                           "--memory", "128M", "--disk", "16M", "--pids", "32", "--runtime", "60s",
                           "--max-output", "1M", "--json", NULL };
    char *out, *err, ws[PATH_MAX + 256];
    const char *id;
    cJSON *doc;
    struct stat sb;
    int code = cordon(prov, &out, &err);

    cr_assert_eq(code, 0, "provision exited %d: %s%s", code, out, err);
    doc = cJSON_Parse(out);
    id = cJSON_GetStringValue(get(doc, "execution_id", NULL));
    cr_assert_not_null(id, "%s", out);
    snprintf(ws, sizeof(ws), "%s/.local/state/cordon/providers/bubblewrap/executions/%s/workspace", home, id);
    cr_assert_eq(stat(ws, &sb), 0, "%s: %s", ws, strerror(errno));
    cr_assert_eq(sb.st_uid, user, "%s belongs to %u", ws, (unsigned)sb.st_uid);
    {
        const char *term[] = { "terminate", id, NULL };
        char *o2, *e2;

        cr_assert_eq(cordon(term, &o2, &e2), 0, "terminate: %s", e2);
        free(o2);
        free(e2);
    }
    cr_assert_neq(stat(ws, &sb), 0, "%s is left after terminate", ws);
    cJSON_Delete(doc);
    free(out);
    free(err);
}

/* ---- the availability probe, called directly ------------------------------------ */

/* CORDON_PROBE_AVAILABILITY answers provider_id, available and reason, and
 * nothing else; a bwrap that is not there makes it unavailable, named. */
Test(bubblewrap_user, availability_probe_answers_three_keys)
{
    const char *so = getenv("CORDON_BW_PROVIDER") ?: ".libs/bubblewrap.so";
    struct cordon_host_v1 host = { .abi_version = CORDON_ABI_VERSION, .struct_size = sizeof(host),
                                   .alloc = malloc, .free = free, .host_instance_id = "test-bw-probe",
                                   .state_dir = home };
    const struct cordon_provider_v1 *p = NULL;
    cordon_provider_init_v1_fn init;
    struct cordon_error e;
    char cfg[PATH_MAX + 128], *facts = NULL;
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cJSON *doc;

    cordon_error_init(&e);
    cr_assert_not_null(dl, "dlopen %s: %s (set CORDON_BW_PROVIDER)", so, dlerror());
    init = (cordon_provider_init_v1_fn)dlsym(dl, CORDON_PROVIDER_INIT_SYMBOL);
    cr_assert_not_null(init, "%s exports no %s", so, CORDON_PROVIDER_INIT_SYMBOL);
    cr_assert_eq(init(&host, 0, &p, &e), 0, "init: %s", e.message);

    snprintf(cfg, sizeof(cfg), "{\"root\": \"%s/areas\"}", tmp);
    cr_assert_eq(p->probe(&host, cfg, CORDON_PROBE_AVAILABILITY, &facts, &e), 0, "%s", e.message);
    doc = cJSON_Parse(facts);
    cr_assert_str_eq(cJSON_GetStringValue(get(doc, "provider_id", NULL)), "bubblewrap", "%s", facts);
    cr_assert(cJSON_IsTrue(get(doc, "available", NULL)), "%s", facts);
    cr_assert_str_eq(cJSON_GetStringValue(get(doc, "reason", NULL)), "ready", "%s", facts);
    cr_assert_eq(cJSON_GetArraySize(doc), 3, "%s", facts);
    cJSON_Delete(doc);
    free(facts);

    snprintf(cfg, sizeof(cfg), "{\"root\": \"%s/areas\", \"bwrap\": \"%s/no-bwrap\"}", tmp, tmp);
    cr_assert_eq(p->probe(&host, cfg, CORDON_PROBE_AVAILABILITY, &facts, &e), 0, "%s", e.message);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsFalse(get(doc, "available", NULL)), "%s", facts);
    cr_assert_not_null(strstr(cJSON_GetStringValue(get(doc, "reason", NULL)), "no-bwrap"), "%s", facts);
    cr_assert_eq(cJSON_GetArraySize(doc), 3, "%s", facts);
    cJSON_Delete(doc);
    free(facts);
    dlclose(dl);
}
