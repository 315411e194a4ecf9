/*
 * Mechanism tests of the trusted-local provider on the real host: no mocks.
 *
 * The provider is loaded with dlopen from $CORDON_TL_PROVIDER (default
 * .libs/trusted-local.so, relative to the build directory) and observed with
 * $CORDON_OBSERVER (default ./cordon-observe). Every test gets a private
 * directory holding the host's state_dir and the provider's root, and
 * terminates what it provisioned in the suite's fini.
 */
#include <dirent.h>
#include <grp.h>
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/provider.h>
#include "core/drive.h"
#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/json.h>
#include <cordon/text.h>
#include <cordon/sdk/uid.h>

#include "tests/common/proc.h"
#include "tests/common/sockets.h"
#include "tests/common/wait.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const struct cordon_provider_v1 *prov;
static struct cordon_host_v1 host;
static char *tmp;                  /* private dir, 0711 so the sandbox user can pass */
static char root[PATH_MAX];        /* the provider's root beneath tmp */
static char observer[PATH_MAX];
static char config[PATH_MAX + 128];
static struct cordon_resource *res;
static char *state;                /* the provisioned execution, terminated in fini */
static char *other;                /* a second one, terminated in fini too */
static char *run_root_dir;         /* a root outside /tmp, removed in fini */
static struct cordon_error err;

/* ---- host helpers (self-contained: this file links only the sdk) ---------- */

static char *test_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *path = NULL;

    if (base == NULL || base[0] != '/')
        base = "/tmp";
    if (asprintf(&path, "%s/cordon-tl-test.XXXXXX", base) < 0)
        return NULL;
    if (mkdtemp(path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

static int test_write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static bool is_root(void)
{
    return geteuid() == 0;
}

static void teardown(void);

/* Skip when not root; Criterion runs no fini after a skip, so clean up first. */
static void skip_unless_root(const char *why)
{
    if (is_root())
        return;
    teardown();
    cr_skip_test("%s", why);
}

static void setup(void)
{
    const char *path = getenv("CORDON_TL_PROVIDER");
    const char *obs = getenv("CORDON_OBSERVER");
    cordon_provider_init_v1_fn init;
    void *dl;

    cordon_error_init(&err);
    if (path == NULL)
        path = ".libs/trusted-local.so";
    if (obs == NULL)
        obs = "./cordon-observe";
    cr_assert_not_null(realpath(obs, observer), "observer %s: %s (set CORDON_OBSERVER)", obs,
                       strerror(errno));
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl, "dlopen %s: %s (set CORDON_TL_PROVIDER)", path, dlerror());
    init = (cordon_provider_init_v1_fn)dlsym(dl, CORDON_PROVIDER_INIT_SYMBOL);
    cr_assert_not_null(init, "%s exports no %s", path, CORDON_PROVIDER_INIT_SYMBOL);

    tmp = test_mkdtemp();
    cr_assert_not_null(tmp);
    cr_assert_eq(chmod(tmp, 0711), 0);
    snprintf(root, sizeof(root), "%s/root", tmp);
    snprintf(config, sizeof(config), "{\"allow_unsafe_local\": true, \"root\": \"%s\"}", root);

    host.abi_version = CORDON_ABI_VERSION;
    host.struct_size = sizeof(host);
    host.alloc = malloc;
    host.free = free;
    host.observer_path = observer;
    host.init_path = NULL;
    /* Of this process: another run of this suite on the machine (the uid
     * pool is the machine's) must not share its executions' owners. */
    {
        static char instance[32];

        snprintf(instance, sizeof(instance), "test-%ld", (long)getpid());
        host.host_instance_id = instance;
    }
    host.state_dir = tmp;
    cr_assert_eq(init(&host, 0, &prov, &err), 0, "init: %s", err.message);
}

static void teardown(void)
{
    struct cordon_error e;

    if (tmp == NULL)
        return;
    cordon_error_init(&e);
    if (state != NULL)
        prov->terminate(res, state, &e);
    if (other != NULL)
        prov->terminate(res, other, &e);
    free(state);
    free(other);
    other = NULL;
    if (res != NULL)
        prov->release(res, &e);
    if (run_root_dir != NULL)
        cordon_fs_remove_tree_path(run_root_dir, NULL);
    free(run_root_dir);
    run_root_dir = NULL;
    cordon_fs_remove_tree_path(tmp, NULL);
    free(tmp);
    tmp = NULL;
    state = NULL;
    res = NULL;
}

TestSuite(trusted_local, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers --------------------------------------------------------------- */

static void ensure(void)
{
    cr_assert_eq(prov->ensure(&host, config, &res, &err), 0, "ensure: %s", err.message);
}

static char *spec_json_limits(const char *id, const char *layout, const char *network_mode,
                              double disk_bytes, int pids)
{
    static char buf[1024];

    snprintf(buf, sizeof(buf),
             "{\"execution_id\": \"%s\", \"image\": null, \"layout\": \"%s\","
             " \"resources\": {\"cpus\": 1, \"memory_bytes\": %.0f, \"disk_bytes\": %.0f,"
             " \"pids\": %d, \"runtime_ms\": 600000, \"max_output_bytes\": 1048576},"
             " \"network\": {\"mode\": \"%s\"}, \"environment\": {\"CORDON_TEST\": \"yes\"}}",
             id, layout, 1 * GIB, disk_bytes, pids, network_mode);
    return buf;
}

static char *spec_json(const char *id, const char *layout, const char *network_mode)
{
    return spec_json_limits(id, layout, network_mode, 1 * GIB, 256);
}

/* Provision id into the global state (terminated by fini). */
static void provision(const char *id, const char *layout)
{
    ensure();
    cr_assert_eq(prov->provision(res, spec_json(id, layout, "none"), &state, &err), 0,
                 "provision: %s", err.message);
}

static char *exec_dir(const char *id, const char *sub)
{
    static char buf[PATH_MAX];

    snprintf(buf, sizeof(buf), "%s/%s%s", root, id, sub);
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* An exec request; extra is spliced into the object (", \"env\": {...}"). */
static char *request(const char *cwd, const char *const *argv, const char *extra)
{
    cJSON *req = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(req, "argv");
    char *text, *out;

    for (size_t i = 0; argv[i] != NULL; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(argv[i]));
    cJSON_AddStringToObject(req, "cwd", cwd);
    text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    cr_assert_not_null(text);
    text[strlen(text) - 1] = '\0';
    cr_assert(asprintf(&out, "%s%s}", text, extra != NULL ? extra : "") > 0);
    free(text);
    return out;
}

/* Run through the host's driver; 0 when the provider ran the exec. */
static int drive(const char *request_json, uint64_t timeout_ms, struct cordon_exec_outcome *o)
{
    struct cordon_drive_opts opts;

    cordon__drive_opts_init(&opts);
    opts.host = &host;
    opts.provider = prov;
    opts.resource = res;
    opts.state_json = state;
    opts.request_json = request_json;
    opts.timeout_ms = timeout_ms;
    opts.retention_bytes = 64 * 1024;
    opts.output_budget = 1024 * 1024;
    return cordon__drive_exec(&opts, o, &err);
}

/* The uid the global execution runs as: as root, one of the pool's, taken
 * for this execution alone; otherwise the caller's own. */
static uid_t sandbox_uid(void)
{
    cJSON *doc = cJSON_Parse(state);
    uid_t uid = (uid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(doc, "uid"));

    cJSON_Delete(doc);
    if (!is_root())
        return geteuid();
    cr_assert(cordon_uid_in_pool(uid), "state.uid %u is not in the uid pool", (unsigned)uid);
    return uid;
}

/* Run sh -c script in cwd; returns the exit code, -1000-signal when killed. */
static int sh(const char *cwd, const char *script, char *out, size_t out_size)
{
    const char *argv[] = { "sh", "-c", script, NULL };
    struct cordon_exec_outcome o = { 0 };
    char *req = request(cwd, argv, NULL);
    int code;

    cr_assert_eq(drive(req, 60000, &o), 0, "exec %s: %s", script, err.message);
    free(req);
    if (out != NULL) {
        size_t n = o.out.len < out_size - 1 ? o.out.len : out_size - 1;
        memcpy(out, o.out.data, n);
        out[n] = '\0';
    }
    code = o.status == CORDON_RUN_EXITED ? o.exit_code : -1000 - o.signal;
    cordon_exec_outcome_clear(&o);
    return code;
}

/* A tar stream in a memfd: entries name[i] with data[i], a directory when
 * data[i] is NULL; n entries. */
static int tar_of(const char *const *name, const char *const *data, size_t n)
{
    struct archive *a = archive_write_new();
    int fd = memfd_create("test.tar", MFD_CLOEXEC);

    cr_assert(fd >= 0);
    archive_write_set_format_pax_restricted(a);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        size_t len = data[i] != NULL ? strlen(data[i]) : 0;

        archive_entry_set_pathname(e, name[i]);
        archive_entry_set_filetype(e, data[i] != NULL ? AE_IFREG : AE_IFDIR);
        archive_entry_set_perm(e, data[i] != NULL ? 0644 : 0755);
        archive_entry_set_size(e, (la_int64_t)len);
        cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
        if (len > 0)
            cr_assert_eq(archive_write_data(a, data[i], len), (la_ssize_t)len);
        archive_entry_free(e);
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static int tar_with(const char *name, const char *data)
{
    return tar_of(&name, &data, 1);
}

/* Wait (generously) until no process carries needle; returns the count left. */
static int processes_after(const char *needle)
{
    int n = 0;

    for (int i = 0; i < 100; i++) {
        n = test_count_processes(needle);
        if (n == 0)
            break;
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    return n;
}

static int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static cJSON *facts_get(const cJSON *doc, const char *a, const char *b)
{
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(doc, a);

    return b == NULL ? (cJSON *)obj : cJSON_GetObjectItemCaseSensitive(obj, b);
}

static bool list_has(const cJSON *arr, const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr)
        if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0)
            return true;
    return false;
}

/* ---- probe ----------------------------------------------------------------- */

Test(trusted_local, probe_claims_what_it_gives)
{
    char cfg[PATH_MAX + 64], *facts = NULL;
    cJSON *doc;

    /* Probing needs no allow_unsafe_local: it runs nothing. */
    snprintf(cfg, sizeof(cfg), "{\"root\": \"%s\"}", root);
    cr_assert_eq(prov->probe(&host, cfg, CORDON_PROBE_FULL, &facts, &err), 0, "probe: %s",
                 err.message);
    cr_assert_eq(cordon__facts_validate(facts, &err), 0, "facts invalid: %s\n%s", err.message,
                 facts);
    doc = cJSON_Parse(facts);
    cr_assert_not_null(doc);
    cr_assert(cJSON_IsTrue(facts_get(doc, "available", NULL)), "%s", facts);
    cr_assert_str_eq(facts_get(doc, "safety_class", NULL)->valuestring, "trusted_local");
    /* A claim: the host's verification observes (test_verify.c). */
    cr_assert_str_eq(facts_get(doc, "observed_by", NULL)->valuestring, "none");
    cr_assert_eq(cJSON_GetArraySize(facts_get(doc, "toolchains", NULL)), 0, "%s", facts);
    cr_assert(cJSON_IsFalse(facts_get(doc, "isolation", "process_contained")), "%s", facts);
    cr_assert(cJSON_IsFalse(facts_get(doc, "isolation", "host_filesystem_restricted")), "%s",
              facts);
    cr_assert_str_eq(facts_get(doc, "network", NULL)->valuestring, "host");
    cr_assert(!list_has(facts_get(doc, "limits_enforced", NULL), "cpus"));
    cr_assert(list_has(facts_get(doc, "limits_enforced", NULL), "memory_bytes"));
    /* disk_bytes holds for the whole workspace only where areas are tmpfs mounts,
     * which root can make on this machine */
    cr_assert_str_eq(facts_get(doc, "mechanism_facts", "area")->valuestring,
                     is_root() ? "tmpfs" : "directory");
    cr_assert_eq(list_has(facts_get(doc, "limits_enforced", NULL), "disk_bytes"), is_root(),
                 "%s", facts);
    cr_assert_str_eq(facts_get(doc, "mechanism_facts", "root")->valuestring, root);
    if (is_root()) {
        cr_assert(cJSON_IsTrue(facts_get(doc, "isolation", "privilege_escalation_blocked")),
                  "%s", facts);
        cr_assert(cJSON_IsTrue(facts_get(doc, "isolation", "syscalls_restricted")), "%s", facts);
        cr_assert_str_eq(facts_get(doc, "mechanism_facts", "run_as")->valuestring,
                         "per-execution");
        cr_assert_eq(cJSON_GetNumberValue(facts_get(doc, "mechanism_facts", "uid_pool_base")),
                     (double)CORDON_UID_BASE, "%s", facts);
    }
    /* The observation's execution is gone again: the root is empty. */
    cr_assert_eq(entries_in(root), 0);
    cJSON_Delete(doc);
    free(facts);
}

Test(trusted_local, probe_without_seccomp_says_syscalls_unrestricted)
{
    char cfg[PATH_MAX + 64], *facts = NULL;
    cJSON *doc;

    snprintf(cfg, sizeof(cfg), "{\"root\": \"%s\", \"seccomp\": false}", root);
    cr_assert_eq(prov->probe(&host, cfg, CORDON_PROBE_FULL, &facts, &err), 0, "probe: %s",
                 err.message);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsFalse(facts_get(doc, "isolation", "syscalls_restricted")), "%s", facts);
    cr_assert(cJSON_IsFalse(facts_get(doc, "mechanism_facts", "seccomp")), "%s", facts);
    cJSON_Delete(doc);
    free(facts);
}

Test(trusted_local, probe_availability_checks_the_root)
{
    char cfg[PATH_MAX + 64], blocker[PATH_MAX], *facts = NULL;
    cJSON *doc;

    cr_assert_eq(prov->probe(&host, config, CORDON_PROBE_AVAILABILITY, &facts, &err), 0);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsTrue(facts_get(doc, "available", NULL)), "%s", facts);
    cr_assert_str_eq(facts_get(doc, "reason", NULL)->valuestring, "ready");
    cr_assert_str_eq(facts_get(doc, "provider_id", NULL)->valuestring, "trusted-local");
    cJSON_Delete(doc);
    free(facts);

    /* A root beneath a regular file cannot be created. */
    snprintf(blocker, sizeof(blocker), "%s/file", tmp);
    cr_assert_eq(test_write_file(blocker, "x", 1), 0);
    snprintf(cfg, sizeof(cfg), "{\"root\": \"%s/sub\"}", blocker);
    cr_assert_eq(prov->probe(&host, cfg, CORDON_PROBE_AVAILABILITY, &facts, &err), 0);
    doc = cJSON_Parse(facts);
    cr_assert(cJSON_IsFalse(facts_get(doc, "available", NULL)), "%s", facts);
    cJSON_Delete(doc);
    free(facts);
}

/* ---- config and ensure ----------------------------------------------------- */

struct config_case {
    const char *tmpl;   /* @ is replaced by the root */
    int code;
};

static const struct config_case config_cases[] = {
    { "{\"root\": \"@\", \"allow_unsafe_local\": true}", 0 },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"seccomp\": false}", 0 },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"run_as\": \"1000:1000\"}", 0 },
    { "{\"root\": \"@\"}", CORDON_E_DENIED },
    { "{\"root\": \"@\", \"allow_unsafe_local\": false}", CORDON_E_DENIED },
    { "{\"root\": \"@\", \"allow_unsafe_local\": \"true\"}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"privileged\": true}", CORDON_E_INVALID },
    { "{\"root\": \"relative/@\", \"allow_unsafe_local\": true}", CORDON_E_INVALID },
    { "{\"root\": \"@/../x\", \"allow_unsafe_local\": true}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"run_as\": \"65532\"}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"run_as\": \"0:0\"}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"run_as\": \"a:b\"}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"run_as\": \"1879048200:1879048200\"}", CORDON_E_INVALID },
    { "{\"root\": \"@\", \"allow_unsafe_local\": true, \"seccomp\": \"yes\"}", CORDON_E_INVALID },
    { "[\"@\"]", CORDON_E_INVALID },
    { "{\"root\": \"@\",", CORDON_E_INVALID },
};

ParameterizedTestParameters(trusted_local, ensure_config)
{
    static size_t idx[sizeof(config_cases) / sizeof(config_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, trusted_local, ensure_config)
{
    const struct config_case *c = &config_cases[*i];
    char cfg[PATH_MAX + 256];
    const char *at = strchr(c->tmpl, '@');
    int rc;

    snprintf(cfg, sizeof(cfg), "%.*s%s%s", (int)(at - c->tmpl), c->tmpl, root, at + 1);
    rc = prov->ensure(&host, cfg, &res, &err);
    cr_assert_eq(rc, c->code, "%s: got %d (%s)", cfg, rc, err.message);
    if (c->code == CORDON_E_DENIED)
        cr_assert(strstr(err.message, "allow_unsafe_local") != NULL, "%s", err.message);
    if (rc == 0) {
        struct stat st;

        cr_assert_eq(prov->health_check(res, &err), 0);
        cr_assert_eq(stat(root, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0711, "root mode %o", st.st_mode & 07777);
    } else {
        res = NULL;
    }
}

/* ---- running code ---------------------------------------------------------- */

Test(trusted_local, python_runs_from_source)
{
    const char *argv[] = { "python3", "main.py", "arg1", NULL };
    struct cordon_exec_outcome o = { 0 };
    char *req;
    int fd;

    provision("py", "code");
    fd = tar_with("main.py", "import sys, os\nprint('hello', sys.argv[1], os.environ['CORDON_TEST'])\n");
    cr_assert_eq(prov->import_tar(res, state, "source", fd, &err), 0, "import: %s", err.message);
    close(fd);
    req = request("source", argv, NULL);
    cr_assert_eq(drive(req, 30000, &o), 0, "exec: %s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_EXITED, "status %d signal %d", o.status, o.signal);
    cr_assert_eq(o.exit_code, 0, "stderr: %.*s", (int)o.err.len, o.err.data);
    cr_assert_eq(o.out.len, strlen("hello arg1 yes\n"));
    cr_assert_arr_eq(o.out.data, "hello arg1 yes\n", o.out.len);
    cordon_exec_outcome_clear(&o);
    free(req);
}

Test(trusted_local, nested_source_imports_and_terminates)
{
    static const char *const names[] = { "pkg", "pkg/__init__.py", "pkg/deep", "pkg/deep/mod.py",
                                         "main.py" };
    static const char *const data[] = { NULL, "", NULL, "VALUE = 42\n",
                                        "from pkg.deep.mod import VALUE\nprint(VALUE)\n" };
    char out[64];
    struct stat st;
    int fd;

    provision("nested", "code");
    fd = tar_of(names, data, 5);
    cr_assert_eq(prov->import_tar(res, state, "source", fd, &err), 0, "import: %s", err.message);
    close(fd);
    cr_assert_eq(sh("source", "PYTHONDONTWRITEBYTECODE=1 python3 main.py", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "42\n");
    /* Read-only all the way down, and root's when cordon is root. */
    cr_assert_eq(stat(exec_dir("nested", "/workspace/source/pkg/deep/mod.py"), &st), 0);
    cr_assert_eq(st.st_mode & 0222, 0, "mode %o", st.st_mode & 07777);
    cr_assert_eq(st.st_uid, geteuid());
    cr_assert_eq(prov->terminate(res, state, &err), 0, "terminate: %s", err.message);
    cr_assert(!exists(exec_dir("nested", "")));
}

struct shell_case {
    const char *script;
    bool succeeds;
};

/* What the sandbox user may and may not do in the "code" layout. */
Test(trusted_local, source_is_read_only_for_the_sandbox_user)
{
    static const struct shell_case cases[] = {
        { "echo x > source/f", false },
        { "echo x >> source/main.py", false },
        { "rm -f source/main.py", false },
        { "mv source s2", false },
        { "mkdir source/d", false },
        { "echo x > f", false },
        { "echo x > build/f && cat build/f", true },
        { "echo x > output/f", true },
        { "echo x > logs/f", true },
        { "cat source/main.py", true },
    };
    int fd;

    skip_unless_root("needs root: without a user switch source/ is read-only by mode bits only");
    provision("ro", "code");
    fd = tar_with("main.py", "print(1)\n");
    cr_assert_eq(prov->import_tar(res, state, "source", fd, &err), 0, "import: %s", err.message);
    close(fd);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int code = sh("", cases[i].script, NULL, 0);

        cr_expect_eq(code == 0, cases[i].succeeds, "%s: exit %d", cases[i].script, code);
    }
    cr_assert(exists(exec_dir("ro", "/workspace/source/main.py")));
    cr_assert(!exists(exec_dir("ro", "/workspace/s2")));
}

Test(trusted_local, host_layout_belongs_to_the_sandbox_user)
{
    struct stat st;
    char out[64];

    provision("hl", "host");
    cr_assert_eq(sh("", "echo x > f && mkdir -p a/b && cat f", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "x\n");
    cr_assert_eq(stat(exec_dir("hl", "/workspace/a/b"), &st), 0);
    cr_assert_eq(st.st_uid, sandbox_uid());
}

Test(trusted_local, hardening_is_applied_in_the_child)
{
    static const struct { const char *script; const char *out; } cases[] = {
        { "grep ^NoNewPrivs: /proc/self/status", "NoNewPrivs:\t1\n" },
        { "grep ^Seccomp: /proc/self/status", "Seccomp:\t2\n" },
        { "ulimit -c", "0\n" },
        { "ulimit -n", "1024\n" },
        { "grep ^CapEff: /proc/self/status", "CapEff:\t0000000000000000\n" },
    };
    char out[256];

    provision("hard", "host");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(sh("", cases[i].script, out, sizeof(out)), 0, "%s", cases[i].script);
        cr_expect_str_eq(out, cases[i].out, "%s", cases[i].script);
    }
    if (is_root()) {
        char want[64];
        uid_t uid = sandbox_uid();

        snprintf(want, sizeof(want), "%u\n%u\n%u\n", (unsigned)uid, (unsigned)uid, (unsigned)uid);
        cr_assert_eq(sh("", "id -u; id -g; id -G", out, sizeof(out)), 0);
        cr_assert_str_eq(out, want);
        cr_assert_eq(sh("", "grep ^CapBnd: /proc/self/status", out, sizeof(out)), 0);
        cr_assert_str_eq(out, "CapBnd:\t0000000000000000\n");
    }
}

/* Hide /proc/sys (a tmpfs over it, in a mount namespace of this test
 * process alone), so that /proc/sys/kernel/cap_last_cap cannot be read. */
static void hide_proc_sys(void)
{
    if (!is_root())
        cr_skip_test("needs root: hides /proc/sys in a mount namespace");
    cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
    cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    cr_assert_eq(mount("none", "/proc/sys", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k"), 0,
                 "mount: %s", strerror(errno));
    cr_assert_eq(access("/proc/sys/kernel/cap_last_cap", F_OK), -1);
}

/* A seccomp filter on this test process (and so on the provider's child):
 * prctl(option, ...) fails with e, every other call is allowed. */
static void refuse_prctl(unsigned option, int e)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const unsigned arg0_low = offsetof(struct seccomp_data, args[0]) + 4;
#else
    const unsigned arg0_low = offsetof(struct seccomp_data, args[0]);
#endif
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg0_low),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, option, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)e & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), 0, "seccomp: %s",
                 strerror(errno));
}

/* Where cap_last_cap is hidden the provider asks the bounding set, and the
 * child still ends with an empty one. */
Test(trusted_local, bounding_set_is_emptied_without_proc_sys)
{
    char out[64];

    hide_proc_sys();
    provision("nosys", "host");
    cr_assert_eq(sh("", "grep ^CapBnd: /proc/self/status", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "CapBnd:\t0000000000000000\n");
}

/* ...and where the bounding set will not answer either, the build's
 * CAP_LAST_CAP stands in, and the child drops up to 63 all the same. */
Test(trusted_local, bounding_set_is_emptied_when_prctl_will_not_say)
{
    char out[64];

    hide_proc_sys();
    refuse_prctl(PR_CAPBSET_READ, EPERM);
    provision("noread", "host");
    cr_assert_eq(sh("", "grep ^CapBnd: /proc/self/status", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "CapBnd:\t0000000000000000\n");
}

/* A filter that answers EINVAL ("no such capability") to every drop must
 * not leave the bounding set as it was: the command does not run. */
Test(trusted_local, a_refused_capability_drop_fails_closed)
{
    const char *argv[] = { "sh", "-c", "grep ^CapBnd: /proc/self/status", NULL };
    struct cordon_exec_outcome o = { 0 };
    char *req;
    int r;

    if (!is_root())
        cr_skip_test("needs root: only root drops capabilities");
    provision("nodrop", "host");
    refuse_prctl(PR_CAPBSET_DROP, EINVAL);
    req = request("", argv, NULL);
    r = drive(req, 60000, &o);
    free(req);
    cr_assert(r != 0 || o.status != CORDON_RUN_EXITED || o.exit_code != 0,
              "the command ran: %.*s", (int)o.out.len, o.out.data);
    cr_assert(o.out.len == 0 || memmem(o.out.data, o.out.len, "CapBnd", 6) == NULL,
              "the command ran: %.*s", (int)o.out.len, o.out.data);
    cordon_exec_outcome_clear(&o);
}

Test(trusted_local, new_user_namespace_is_refused)
{
    char script[512], out[128];

    provision("userns", "host");
    cr_assert_neq(sh("", "unshare -U true", NULL, 0), 0);
    /* The answer itself: EPERM from the filter, also through clone(). */
    cr_assert_eq(sh("", "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
                        "print(l.unshare(0x10000000), ctypes.get_errno())'", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "-1 1\n");
    snprintf(script, sizeof(script),
             "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
             "print(l.syscall(%ld, 0, 0, 0, 0, 0), ctypes.get_errno())'", (long)SYS_keyctl);
    cr_assert_eq(sh("", script, out, sizeof(out)), 0);
    cr_assert_str_eq(out, "-1 1\n");
}

/*
 * Nothing here is contained (the host's network is in reach through
 * AF_INET), but the filter still refuses the families the docker and runc
 * sandboxes refuse: AF_VSOCK (this VM's hypervisor), AF_PACKET, a family
 * with high bits set, socketpair of a refused family (EAFNOSUPPORT each),
 * and netlink uevents (EPROTONOSUPPORT). What ordinary programs use works.
 */
Test(trusted_local, socket_families_outside_the_allow_list_are_refused)
{
    char out[1024];

    provision("sockets", "host");
    cr_assert_eq(sh("", TEST_SOCKETS_SCRIPT, out, sizeof(out)), 0, "%s", out);
    cr_expect(strstr(out, TEST_SOCKETS_ALLOWED) != NULL, "an allowed family was refused: %s", out);
    cr_expect(strstr(out, TEST_SOCKETS_REFUSED) != NULL,
              "a family outside the allow-list was not refused as the kernel would: %s", out);
    cr_expect(strstr(out, "\nifaces lo") != NULL, "netlink's interface list fails: %s", out);
}

Test(trusted_local, foreign_abi_syscall_kills_the_process)
{
#if defined(__x86_64__)
    int code;

    provision("x32", "host");
    /* getpid through the x32 ABI: the filter's bad-arch action kills. */
    code = sh("", "python3 -c 'import ctypes; ctypes.CDLL(None).syscall(0x40000027)'", NULL, 0);
    cr_assert(code == 128 + SIGSYS || code == -1000 - SIGSYS, "exit %d", code);
#else
    teardown();
    cr_skip_test("the x32 ABI exists on x86_64 only");
#endif
}

Test(trusted_local, go_and_cpp_toolchains_run)
{
    char out[128];

    provision("tools", "host");
    cr_assert_eq(sh("", "mkdir -p c && cd c && printf '#include <cstdio>\\nint main(){std::puts(\"cpp ok\");}' > a.cc "
                        "&& c++ -o a a.cc && ./a",
                    out, sizeof(out)), 0, "%s", out);
    cr_assert_str_eq(out, "cpp ok\n");
    cr_assert_eq(sh("", "node -e 'console.log(\"node ok\")'", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "node ok\n");
    cr_assert_eq(sh("", "mkdir -p g && cd g && export GOCACHE=$PWD/.c GOPATH=$PWD/.p HOME=$PWD && "
                        "printf 'package main\\nimport \"fmt\"\\nfunc main(){fmt.Println(\"go ok\")}\\n' > m.go && go "
                        "run m.go",
                    out, sizeof(out)), 0, "%s", out);
    cr_assert_str_eq(out, "go ok\n");
}

Test(trusted_local, workspace_env_directories_are_created)
{
    const char *argv[] = { "sh", "-c", "touch \"$GOCACHE/ok\" && echo \"$GOCACHE\"", NULL };
    struct cordon_exec_outcome o = { 0 };
    char want[PATH_MAX + 2];
    struct stat st;
    char *req;

    provision("wenv", "code");
    req = request("", argv, ", \"workspace_env\": {\"GOCACHE\": \"build/cache/./go\"}");
    cr_assert_eq(drive(req, 30000, &o), 0, "exec: %s", err.message);
    cr_assert_eq(o.exit_code, 0, "%.*s", (int)o.err.len, o.err.data);
    snprintf(want, sizeof(want), "%s\n", exec_dir("wenv", "/workspace/build/cache/go"));
    cr_assert_eq(o.out.len, strlen(want));
    cr_assert_arr_eq(o.out.data, want, o.out.len);
    cr_assert_eq(stat(exec_dir("wenv", "/workspace/build/cache/go"), &st), 0);
    cr_assert_eq(st.st_uid, sandbox_uid());
    cordon_exec_outcome_clear(&o);
    free(req);
}

struct request_case {
    const char *json;
    int code;
};

static const struct request_case request_cases[] = {
    { "{}", CORDON_E_INVALID },
    { "{\"argv\": []}", CORDON_E_INVALID },
    { "{\"argv\": [1]}", CORDON_E_INVALID },
    { "{\"argv\": [\"\"]}", CORDON_E_INVALID },
    { "{\"argv\": \"true\"}", CORDON_E_INVALID },
    { "{\"argv\": [\"true\"], \"cwd\": \"../\"}", CORDON_E_UNSAFE },
    { "{\"argv\": [\"true\"], \"cwd\": \"/etc\"}", CORDON_E_UNSAFE },
    { "{\"argv\": [\"true\"], \"cwd\": \"missing\"}", CORDON_E_NOT_FOUND },
    { "{\"argv\": [\"true\"], \"env\": {\"1A\": \"x\"}}", CORDON_E_INVALID },
    { "{\"argv\": [\"true\"], \"env\": {\"A\": 1}}", CORDON_E_INVALID },
    { "{\"argv\": [\"true\"], \"workspace_env\": {\"X\": \"../up\"}}", CORDON_E_UNSAFE },
    { "{\"argv\": [\"true\"], \"timeout_ms\": -1}", CORDON_E_INVALID },
    { "{\"argv\": [\"no-such-program-cordon\"]}", CORDON_E_NOT_FOUND },
    { "[\"true\"]", CORDON_E_INVALID },
};

ParameterizedTestParameters(trusted_local, bad_request_refused)
{
    static size_t idx[sizeof(request_cases) / sizeof(request_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, trusted_local, bad_request_refused)
{
    const struct request_case *c = &request_cases[*i];
    struct cordon_exec_io io = { CORDON_ABI_VERSION, sizeof(io), -1, -1, -1, -1 };
    char *result = NULL;
    int rc;

    provision("badreq", "host");
    rc = prov->exec(res, state, c->json, &io, &result, &err);
    /* Path checks may answer UNSAFE or INVALID; both refuse. */
    if (c->code == CORDON_E_UNSAFE)
        cr_assert(rc == CORDON_E_UNSAFE || rc == CORDON_E_INVALID, "%s: %d %s", c->json, rc,
                  err.message);
    else
        cr_assert_eq(rc, c->code, "%s: %d %s", c->json, rc, err.message);
    cr_assert_null(result);
}

/* ---- processes ------------------------------------------------------------- */

Test(trusted_local, background_sleeper_is_gone_after_exec)
{
    char script[128], needle[64];

    provision("bg", "host");
    snprintf(needle, sizeof(needle), "sleep 1000.%d1", (int)getpid());
    snprintf(script, sizeof(script), "%s & echo started", needle);
    cr_assert_eq(sh("", script, NULL, 0), 0);
    cr_assert_eq(processes_after(needle), 0, "%s survived the exec", needle);
}

Test(trusted_local, setsid_escapee_in_the_workspace_is_swept)
{
    char script[160], needle[64];

    provision("escape", "host");
    snprintf(needle, sizeof(needle), "sleep 1000.%d2", (int)getpid());
    snprintf(script, sizeof(script), "setsid %s </dev/null >/dev/null 2>&1 & sleep 0.3", needle);
    cr_assert_eq(sh("", script, NULL, 0), 0);
    cr_assert_eq(processes_after(needle), 0, "%s survived the exec", needle);
}

Test(trusted_local, timeout_kills_the_whole_tree)
{
    char script[128], needle[64];
    const char *argv[] = { "sh", "-c", script, NULL };
    struct cordon_exec_outcome o = { 0 };
    time_t start = time(NULL);
    char *req;

    provision("timeout", "host");
    snprintf(needle, sizeof(needle), "sleep 1000.%d3", (int)getpid());
    snprintf(script, sizeof(script), "%s & %s", needle, needle);
    req = request("", argv, NULL);
    cr_assert_eq(drive(req, 500, &o), 0, "exec: %s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_TIMEOUT, "status %d", o.status);
    cr_assert(time(NULL) - start < 15, "the timeout took %ld s", (long)(time(NULL) - start));
    cr_assert_eq(processes_after(needle), 0, "%s survived the timeout", needle);
    cordon_exec_outcome_clear(&o);
    free(req);
}

/* ---- abuse ----------------------------------------------------------------- */

Test(trusted_local, memory_bomb_hits_the_data_limit)
{
    char out[64];

    provision("membomb", "host");
    /* memory_bytes is 1 GiB: RLIMIT_DATA refuses a 3 GiB allocation. */
    cr_assert_eq(sh("", "python3 -c 'b = bytearray(3 * 1024 ** 3)' 2>&1 | grep -c MemoryError",
                    out, sizeof(out)), 0);
    cr_assert_str_eq(out, "1\n");
}

Test(trusted_local, fork_bomb_hits_the_pids_limit)
{
    char script[200], needle[64], out[256];

    skip_unless_root("needs root: pids is enforced by RLIMIT_NPROC of the dedicated uid only");
    ensure();
    cr_assert_eq(prov->provision(res, spec_json_limits("forkbomb", "host", "none", GIB, 64),
                                 &state, &err), 0, "%s", err.message);
    snprintf(needle, sizeof(needle), "sleep 1000.%d4", (int)getpid());
    snprintf(script, sizeof(script),
             "i=0; while [ $i -lt 200 ]; do %s & i=$((i+1)); done; echo survived", needle);
    cr_assert_neq(sh("", script, out, sizeof(out)), 0);
    cr_assert(strstr(out, "survived") == NULL, "%s", out);
    cr_assert_eq(processes_after(needle), 0, "%s survived the exec", needle);
}

Test(trusted_local, one_file_cannot_outgrow_disk_bytes)
{
    struct stat st;

    ensure();
    cr_assert_eq(prov->provision(res, spec_json_limits("fsize", "host", "none", 1 << 20, 256),
                                 &state, &err), 0, "%s", err.message);
    /* RLIMIT_FSIZE: head dies of SIGXFSZ at 1 MiB. */
    cr_assert_neq(sh("", "head -c 4000000 /dev/zero > big", NULL, 0), 0);
    cr_assert_eq(stat(exec_dir("fsize", "/workspace/big"), &st), 0);
    cr_assert_leq(st.st_size, 1 << 20);
}

/* As root the area is a tmpfs of disk_bytes: many files together cannot
 * outgrow it either, and terminating it leaves no mount behind. */
Test(trusted_local, the_whole_workspace_cannot_outgrow_disk_bytes)
{
    char out[512], mounts[1 << 16];
    size_t len;
    FILE *f;

    skip_unless_root("needs root: the area is a tmpfs only when cordon may mount");
    ensure();
    cr_assert_eq(prov->provision(res, spec_json_limits("disk", "host", "none", 1 << 20, 256),
                                 &state, &err), 0, "%s", err.message);
    /* five files of 512 KiB: each is under RLIMIT_FSIZE, together 2.5 MiB */
    cr_assert_neq(sh("", "for i in 1 2 3 4 5; do head -c 524288 /dev/zero > f$i || "
                         "{ echo full at $i; exit 1; }; done; echo all written",
                     out, sizeof(out)), 0, "%s", out);
    cr_assert(strstr(out, "all written") == NULL, "%s", out);
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    f = fopen("/proc/self/mountinfo", "r");
    cr_assert_not_null(f);
    len = fread(mounts, 1, sizeof(mounts) - 1, f);
    mounts[len] = '\0';
    fclose(f);
    cr_assert_null(strstr(mounts, exec_dir("disk", "")), "the area's tmpfs is still mounted");
}

Test(trusted_local, output_flood_is_cut_by_the_host)
{
    char marker[64];
    const char *argv[] = { "yes", marker, NULL };
    struct cordon_exec_outcome o = { 0 };
    char *req;

    provision("flood", "host");
    snprintf(marker, sizeof(marker), "cordon-flood-%d", (int)getpid());
    req = request("", argv, NULL);
    cr_assert_eq(drive(req, 30000, &o), 0, "exec: %s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_OUTPUT_LIMIT, "status %d", o.status);
    cr_assert_eq(processes_after(marker), 0, "yes survived the budget");
    cordon_exec_outcome_clear(&o);
    free(req);
}

Test(trusted_local, caller_cancel_stops_the_exec)
{
    char script[128], needle[64];
    const char *argv[] = { "sh", "-c", script, NULL };
    struct cordon_drive_opts opts;
    struct cordon_exec_outcome o = { 0 };
    int pipefd[2];
    char *req;

    provision("cancel", "host");
    snprintf(needle, sizeof(needle), "sleep 1000.%d5", (int)getpid());
    snprintf(script, sizeof(script), "%s", needle);
    req = request("", argv, NULL);
    cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
    cr_assert_eq(write(pipefd[1], "x", 1), 1);
    cordon__drive_opts_init(&opts);
    opts.host = &host;
    opts.provider = prov;
    opts.resource = res;
    opts.state_json = state;
    opts.request_json = req;
    opts.timeout_ms = 30000;
    opts.retention_bytes = 4096;
    opts.cancel_fd = pipefd[0];
    cr_assert_eq(cordon__drive_exec(&opts, &o, &err), 0, "exec: %s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_CANCELLED, "status %d", o.status);
    cr_assert_eq(processes_after(needle), 0);
    close(pipefd[0]);
    close(pipefd[1]);
    cordon_exec_outcome_clear(&o);
    free(req);
}

Test(trusted_local, backstop_timeout_without_the_host_clock)
{
    char script[128], needle[64];
    const char *argv[] = { "sh", "-c", script, NULL };
    struct cordon_exec_outcome o = { 0 };
    char *req;

    provision("backstop", "host");
    snprintf(needle, sizeof(needle), "sleep 1000.%d6", (int)getpid());
    snprintf(script, sizeof(script), "%s & %s", needle, needle);
    /* The host sets no deadline: the provider's own backstop must fire. */
    req = request("", argv, ", \"timeout_ms\": 200");
    cr_assert_eq(drive(req, 0, &o), 0, "exec: %s", err.message);
    cr_assert_eq(o.status, CORDON_RUN_SIGNALED, "status %d", o.status);
    cr_assert_eq(o.signal, SIGKILL);
    cr_assert_eq(processes_after(needle), 0);
    cordon_exec_outcome_clear(&o);
    free(req);
}

/* ---- lifecycle ------------------------------------------------------------- */

Test(trusted_local, terminate_is_idempotent)
{
    provision("term", "code");
    cr_assert(exists(exec_dir("term", "/workspace/source")));
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    cr_assert(!exists(exec_dir("term", "")));
    cr_assert_eq(prov->terminate(res, state, &err), 0, "second terminate: %s", err.message);
}

Test(trusted_local, terminate_refuses_a_foreign_dir)
{
    ensure();
    cr_assert_eq(prov->terminate(res, "{\"execution_id\": \"x\", \"dir\": \"/etc\"}", &err),
                 CORDON_E_INVALID);
    cr_assert(exists("/etc/passwd"));
}

Test(trusted_local, reclaim_by_id)
{
    static const char *const bad[] = { "../x", "", "a/b", ".hidden" };
    char *st = NULL;

    ensure();
    cr_assert_eq(prov->provision(res, spec_json("lost", "code", "none"), &st, &err), 0);
    free(st);   /* the state is "lost": only the id remains */
    cr_assert(exists(exec_dir("lost", "")));
    cr_assert_eq(prov->reclaim(res, "lost", &err), 0, "%s", err.message);
    cr_assert(!exists(exec_dir("lost", "")));
    cr_assert_eq(prov->reclaim(res, "lost", &err), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(prov->reclaim(res, bad[i], &err), CORDON_E_INVALID, "%s", bad[i]);
}

struct spec_case {
    const char *id;      /* also the name that must not appear under the root */
    const char *json;
    int code;
};

static const struct spec_case spec_cases[] = {
    { "net1", "{\"execution_id\":\"net1\",\"layout\":\"host\",\"network\":{\"mode\":\"bridge\"},"
              "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
              "\"max_output_bytes\":1e4}}",
      CORDON_E_UNSUPPORTED },
    { "net2", "{\"execution_id\":\"net2\",\"layout\":\"host\",\"network\":{\"mode\":\"host\"},"
              "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
              "\"max_output_bytes\":1e4}}",
      CORDON_E_UNSUPPORTED },
    { "img", "{\"execution_id\":\"img\",\"image\":\"debian@sha256:00\",\"layout\":\"host\",\"network\":{\"mode\":"
             "\"none\"},"
             "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
             "\"max_output_bytes\":1e4}}",
      CORDON_E_UNSUPPORTED },
    { "nores", "{\"execution_id\":\"nores\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"}}",
      CORDON_E_INVALID },
    { "pids", "{\"execution_id\":\"pids\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"},"
              "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":\"64\",\"runtime_ms\":1e4,"
              "\"max_output_bytes\":1e4}}",
      CORDON_E_INVALID },
    { "norun", "{\"execution_id\":\"norun\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"},"
               "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"max_output_bytes\":"
               "1e4}}",
      CORDON_E_INVALID },
    { "layout", "{\"execution_id\":\"layout\",\"layout\":\"vm\",\"network\":{\"mode\":\"none\"},"
                "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
                "\"max_output_bytes\":1e4}}",
      CORDON_E_INVALID },
    { "x", "{\"execution_id\":\"../x\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"},"
           "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
           "\"max_output_bytes\":1e4}}",
      CORDON_E_INVALID },
    { ".hidden", "{\"execution_id\":\".hidden\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"},"
                 "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
                 "\"max_output_bytes\":1e4}}",
      CORDON_E_INVALID },
    { "env", "{\"execution_id\":\"env\",\"layout\":\"host\",\"network\":{\"mode\":\"none\"},\"environment\":{\"A-B\":"
             "\"x\"},"
             "\"resources\":{\"cpus\":1,\"memory_bytes\":1e8,\"disk_bytes\":1e8,\"pids\":64,\"runtime_ms\":1e4,"
             "\"max_output_bytes\":1e4}}",
      CORDON_E_INVALID },
    { "json", "{\"execution_id\":\"json\",", CORDON_E_INVALID },
};

ParameterizedTestParameters(trusted_local, bad_spec_creates_nothing)
{
    static size_t idx[sizeof(spec_cases) / sizeof(spec_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, trusted_local, bad_spec_creates_nothing)
{
    const struct spec_case *c = &spec_cases[*i];
    char *st = NULL;
    int rc;

    ensure();
    rc = prov->provision(res, c->json, &st, &err);
    cr_assert_eq(rc, c->code, "%s: %d %s", c->json, rc, err.message);
    cr_assert_null(st);
    cr_assert(!exists(exec_dir(c->id, "")), "%s was created", c->id);
    if (c->code == CORDON_E_UNSUPPORTED && strncmp(c->id, "net", 3) == 0)
        cr_assert(strstr(err.message, "network.mode") != NULL, "%s", err.message);
}

Test(trusted_local, provision_twice_is_exists)
{
    char *st = NULL;

    provision("twice", "code");
    cr_assert_eq(prov->provision(res, spec_json("twice", "code", "none"), &st, &err),
                 CORDON_E_EXISTS, "%s", err.message);
    cr_assert_null(st);
    /* The first one is untouched. */
    cr_assert(exists(exec_dir("twice", "/workspace/source")));
}

/* ---- tar ------------------------------------------------------------------- */

Test(trusted_local, import_refuses_dotdot)
{
    int fd;

    provision("dotdot", "host");
    fd = tar_with("../x", "escaped\n");
    cr_assert_lt(prov->import_tar(res, state, "", fd, &err), 0);
    close(fd);
    cr_assert(!exists(exec_dir("dotdot", "/x")));
    cr_assert(!exists(exec_dir("dotdot", "/workspace/x")));
}

/* Strict UTF-8 without control characters: what a terminal shows as is. */
static bool shows_safely(const char *s)
{
    if (!cordon_text_is_utf8(s, strlen(s)))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* The sandboxed program plants a FIFO named with a title sequence, a
 * screen clear and a byte that is not UTF-8 in its output root. The export
 * that refuses it names it escaped, and the message put into JSON the way
 * the host puts it there is strict UTF-8. */
Test(trusted_local, hostile_fifo_name_is_escaped_in_the_refusal)
{
    cJSON *doc = cJSON_CreateObject();
    char *text;
    int fd;

    provision("fifo-name", "code");
    cr_assert_eq(sh("", "mkfifo \"output/$(printf '\\033]0;pwned\\007\\033[2J\\377')\"", NULL, 0), 0);
    fd = memfd_create("out.tar", MFD_CLOEXEC);
    cordon_error_init(&err);
    cr_assert_lt(prov->export_tar(res, state, "output", fd, &err), 0, "a FIFO is refused");
    close(fd);
    cr_expect(shows_safely(err.message), "the refusal carries the raw name: %s", err.message);
    cr_expect_not_null(strstr(err.message, "\\x1b]0;pwned\\x07\\x1b[2J\\xff"), "%s", err.message);
    cr_assert_not_null(cordon_json_add_text(doc, "message", err.message));
    text = cJSON_PrintUnformatted(doc);
    cr_expect(cordon_text_is_utf8(text, strlen(text)), "%s", text);
    cr_expect_null(strstr(text, "\\u001b"), "JSON carries ESC: %s", text);
    free(text);
    cJSON_Delete(doc);
}

Test(trusted_local, export_returns_what_was_written)
{
    struct archive *a;
    struct archive_entry *e;
    char buf[64] = "";
    bool found = false;
    int fd;

    provision("export", "code");
    cr_assert_eq(sh("", "echo result > output/r.txt", NULL, 0), 0);
    fd = memfd_create("out.tar", MFD_CLOEXEC);
    cr_assert_eq(prov->export_tar(res, state, "output", fd, &err), 0, "%s", err.message);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    a = archive_read_new();
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_fd(a, fd, 10240), ARCHIVE_OK);
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);

        if (strcmp(name, "r.txt") == 0 || strcmp(name, "./r.txt") == 0) {
            found = true;
            cr_assert_eq(archive_read_data(a, buf, sizeof(buf) - 1), 7);
        }
    }
    archive_read_free(a);
    close(fd);
    cr_assert(found, "r.txt not in the exported tar");
    cr_assert_str_eq(buf, "result\n");
    /* A path leaving the workspace is refused. */
    fd = memfd_create("out2.tar", MFD_CLOEXEC);
    cr_assert_lt(prov->export_tar(res, state, "../..", fd, &err), 0);
    close(fd);
}

/* ---- one uid per execution ------------------------------------------------- */

/* The driver's return code for an exec of true with state st. */
static int sh_in_rc(const char *st)
{
    const char *argv[] = { "true", NULL };
    struct cordon_exec_outcome o = { 0 };
    char *saved = state, *req = request("", argv, NULL);
    int r;

    state = (char *)st;
    r = drive(req, 30000, &o);
    state = saved;
    free(req);
    cordon_exec_outcome_clear(&o);
    return r;
}

/* Run sh -c script in the execution whose state is st. */
static int sh_in(const char *st, const char *script, char *out, size_t out_size)
{
    char *saved = state;
    int code;

    state = (char *)st;
    code = sh("", script, out, out_size);
    state = saved;
    return code;
}

static bool lock_exists(uid_t uid)
{
    char path[64];

    snprintf(path, sizeof(path), CORDON_UID_DIR "/%u", (unsigned)uid);
    return exists(path);
}

Test(trusted_local, each_execution_has_a_uid_of_its_own)
{
    char a[32], b[32], want[32];
    uid_t uid;

    skip_unless_root("the uid pool is root's");
    provision("uid-a", "host");
    cr_assert_eq(prov->provision(res, spec_json("uid-b", "host", "none"), &other, &err), 0,
                 "provision: %s", err.message);
    cr_assert_eq(sh("", "id -u", a, sizeof(a)), 0);
    cr_assert_eq(sh_in(other, "id -u", b, sizeof(b)), 0);
    cr_assert_str_neq(a, b, "two executions share uid %s", a);
    uid = sandbox_uid();
    snprintf(want, sizeof(want), "%u\n", (unsigned)uid);
    cr_assert_str_eq(a, want);
    cr_assert(lock_exists(uid), "no lock for uid %u in " CORDON_UID_DIR, (unsigned)uid);
    /* A state that names another execution's uid is refused. */
    {
        cJSON *doc = cJSON_Parse(other);
        char *forged;

        cJSON_ReplaceItemInObject(doc, "uid", cJSON_CreateNumber((double)uid));
        cJSON_ReplaceItemInObject(doc, "gid", cJSON_CreateNumber((double)uid));
        forged = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        cr_assert_lt(sh_in_rc(forged), 0);
        cr_assert(strstr(err.message, "state.uid") != NULL, "%s", err.message);
        free(forged);
    }
    /* Terminate gives the uid back. */
    cr_assert_eq(prov->terminate(res, other, &err), 0, "%s", err.message);
    free(other);
    other = NULL;
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    cr_assert_not(lock_exists(uid), "uid %u still taken after terminate", (unsigned)uid);
    free(state);
    state = NULL;
}

/* An exec of sh -c script in the execution st, on a thread of its own. */
struct side_exec {
    const char *state, *script;
    int rc;
    struct cordon_exec_outcome o;
    struct cordon_error e;
};

static void *side_exec_run(void *arg)
{
    struct side_exec *x = arg;
    const char *argv[] = { "sh", "-c", x->script, NULL };
    struct cordon_drive_opts opts;
    char *req = request("", argv, NULL);

    cordon_error_init(&x->e);
    cordon__drive_opts_init(&opts);
    opts.host = &host;
    opts.provider = prov;
    opts.resource = res;
    opts.state_json = x->state;
    opts.request_json = req;
    opts.timeout_ms = 60000;
    opts.retention_bytes = 64 * 1024;
    opts.output_budget = 1024 * 1024;
    x->rc = cordon__drive_exec(&opts, &x->o, &x->e);
    free(req);
    return NULL;
}

Test(trusted_local, one_execution_cannot_signal_or_starve_another)
{
    struct side_exec b = { 0 }, hog = { 0 };
    char b_script[160], b_sleep[48];
    pthread_t tb, th;

    skip_unless_root("the uid pool is root's");
    provision("sig-a", "host");
    cr_assert_eq(prov->provision(res, spec_json("sig-b", "host", "none"), &other, &err), 0,
                 "provision: %s", err.message);
    /* A holds every inotify instance its per-user limit allows... */
    hog.state = state;
    hog.script = "exec python3 -c 'import ctypes,os,time\nl=ctypes.CDLL(None)\nfds=[]\n"
                 "while l.inotify_init1(0) >= 0: fds.append(1)\nprint(len(fds), flush=True)\n"
                 "os.mkdir(\"held\")\ntime.sleep(4)'";
    cr_assert_eq(pthread_create(&th, NULL, side_exec_run, &hog), 0);
    /* (once it holds them and has said how many: the directory "held",
     * made without a descriptor, which it may have run out of too; looked
     * for from the host, as an exec in A would end the hog with it) */
    cr_assert(TEST_WAIT_UNTIL(exists(exec_dir("sig-a", "/workspace/held")), 20000), "the hog never held its limit");
    /* ...B runs while A signals "every process of my uid"... (B's sleep,
     * 2 s spelled to be this test's own, runs: then A signals) */
    snprintf(b_sleep, sizeof(b_sleep), "sleep 2.0%d", (int)getpid());
    snprintf(b_script, sizeof(b_script),
             "%s; python3 -c 'import ctypes;print(ctypes.CDLL(None).inotify_init1(0) >= 0)'", b_sleep);
    b.state = other;
    b.script = b_script;
    cr_assert_eq(pthread_create(&tb, NULL, side_exec_run, &b), 0);
    cr_assert(TEST_WAIT_UNTIL(test_count_command(b_sleep) > 0, 20000), "B's sleep never ran");
    sh("", "kill -STOP -1; kill -KILL -1", NULL, 0);
    pthread_join(tb, NULL);
    pthread_join(th, NULL);
    /* ...and B ends on its own, unstopped, and still gets an inotify instance. */
    cr_assert_eq(b.rc, 0, "%s", b.e.message);
    cr_assert_eq(b.o.status, CORDON_RUN_EXITED, "B was signalled (%d)", b.o.signal);
    cr_assert_eq(b.o.exit_code, 0, "%.*s", (int)b.o.err.len, b.o.err.data);
    cr_assert(b.o.out.len == 5 && memcmp(b.o.out.data, "True\n", 5) == 0,
              "B got no inotify instance while A held its own limit: %.*s", (int)b.o.out.len,
              b.o.out.data);
    /* A really did reach its limit (the test proves nothing otherwise). */
    cr_assert_eq(hog.rc, 0, "%s", hog.e.message);
    cr_assert_gt(hog.o.out.len, 0, "the hog printed nothing: %.*s", (int)hog.o.err.len,
                 hog.o.err.data);
    cr_assert_gt(atoi(hog.o.out.data), 0);
    cordon_exec_outcome_clear(&b.o);
    cordon_exec_outcome_clear(&hog.o);
    cr_assert_eq(prov->terminate(res, other, &err), 0, "%s", err.message);
    free(other);
    other = NULL;
}

Test(trusted_local, terminate_finds_a_process_that_left_the_area)
{
    char out[64];
    int n = -1;

    skip_unless_root("the uid pool is root's");
    provision("away", "host");
    /* Detached, and in a working directory outside the execution's area. */
    cr_assert_eq(sh("", "cd / && setsid sleep 4242.5 </dev/null >/dev/null 2>&1 &", out,
                    sizeof(out)), 0);
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    free(state);
    state = NULL;
    for (int i = 0; i < 100 && n != 0; i++) {
        n = test_count_processes("4242.5");
        if (n != 0)
            nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    }
    cr_assert_eq(n, 0, "a detached process outside the area outlived terminate");
}

/* ---- other local users, and what an execution leaves on the host ------------ */

/* A uid and gid of neither root, the pool, nor the caller: "nobody". */
#define OTHER_UID 65534

/*
 * What another local user (not the execution's uid) can do with the
 * execution's area, probed from a child that becomes that user: bit 0 set
 * when path_read could be opened for reading, bit 1 when dir_list could
 * be listed. 0xff when the child could not become the user.
 */
static int other_user_reaches(const char *path_read, const char *dir_list)
{
    pid_t pid = fork();
    int status = 0;

    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int got = 0, fd;
        DIR *d;

        if (setgroups(0, NULL) != 0 || setgid(OTHER_UID) != 0 || setuid(OTHER_UID) != 0)
            _exit(0xff);
        fd = open(path_read, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            got |= 1;
        d = opendir(dir_list);
        if (d != NULL)
            got |= 2;
        _exit(got);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

Test(trusted_local, other_local_users_cannot_read_or_list_the_workspace)
{
    static const char *const layouts[] = { "host", "code" };
    static const char *const files[] = { "/workspace/f", "/workspace/output/f" };
    static const char *const scripts[] = { "umask 022; echo secret > f", "umask 022; echo secret > output/f" };

    skip_unless_root("needs root to become another user");
    for (size_t i = 0; i < 2; i++) {
        char id[16], path[PATH_MAX], ws[PATH_MAX];
        int got;

        snprintf(id, sizeof(id), "other%zu", i);
        provision(id, layouts[i]);
        cr_assert_neq(sandbox_uid(), (uid_t)OTHER_UID);
        cr_assert_eq(sh("", scripts[i], NULL, 0), 0);
        snprintf(path, sizeof(path), "%s", exec_dir(id, files[i]));
        snprintf(ws, sizeof(ws), "%s", exec_dir(id, "/workspace"));
        cr_assert(exists(path), "%s was not written", path);
        got = other_user_reaches(path, ws);
        cr_assert_neq(got, 0xff, "could not become uid %d", OTHER_UID);
        cr_expect_eq(got & 1, 0, "layout %s: uid %d read %s", layouts[i], OTHER_UID, path);
        cr_expect_eq(got & 2, 0, "layout %s: uid %d listed %s", layouts[i], OTHER_UID, ws);
        cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
        free(state);
        state = NULL;
    }
}

/*
 * Files an execution writes to /tmp, /var/tmp and /dev/shm are its own:
 * a later exec of it finds them, and after terminate none is on the host,
 * where it would belong to a uid the pool hands to the next execution.
 * The root lies outside /tmp here: a root beneath /tmp keeps the host's.
 */
Test(trusted_local, temporary_files_stay_in_the_area_and_go_with_it)
{
    static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
    char marker[40], script[512], cfg[PATH_MAX + 128], path[PATH_MAX], out[256];
    ssize_t n;

    skip_unless_root("private temporary directories need root");
    run_root_dir = strdup("/run/cordon-tl-test.XXXXXX");
    cr_assert(run_root_dir != NULL && mkdtemp(run_root_dir) != NULL, "mkdtemp in /run: %s",
              strerror(errno));
    cr_assert_eq(chmod(run_root_dir, 0711), 0);
    snprintf(cfg, sizeof(cfg), "{\"allow_unsafe_local\": true, \"root\": \"%s/root\"}",
             run_root_dir);
    cr_assert_eq(prov->ensure(&host, cfg, &res, &err), 0, "ensure: %s", err.message);
    cr_assert_eq(prov->provision(res, spec_json("tmpfiles", "host", "none"), &state, &err), 0,
                 "provision: %s", err.message);
    snprintf(marker, sizeof(marker), "cordon-tl-leftover-%d", (int)getpid());
    snprintf(script, sizeof(script),
             "for d in /tmp /var/tmp /dev/shm; do echo x > $d/%s || exit 1; done", marker);
    cr_assert_eq(sh("", script, out, sizeof(out)), 0, "writing the markers");
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dirs[i], marker);
        cr_expect(!exists(path), "%s is on the host while the execution runs", path);
    }
    snprintf(script, sizeof(script), "cat /tmp/%s /var/tmp/%s /dev/shm/%s", marker, marker,
             marker);
    cr_assert_eq(sh("", script, out, sizeof(out)), 0, "a later exec lost the markers");
    cr_expect_str_eq(out, "x\nx\nx\n");
    /* POSIX message queues and System V objects live in the IPC namespace:
     * the command's is its own, and ends with it. */
    cr_assert_eq(sh("", "readlink /proc/self/ns/ipc", out, sizeof(out)), 0);
    n = readlink("/proc/self/ns/ipc", path, sizeof(path) - 1);
    cr_assert_gt(n, 0);
    path[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    cr_expect_str_neq(out, path, "the command shares the host's IPC namespace %s", path);
    cr_assert_eq(prov->terminate(res, state, &err), 0, "%s", err.message);
    free(state);
    state = NULL;
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dirs[i], marker);
        cr_expect(!exists(path), "%s outlived terminate", path);
        unlink(path);   /* the old build's leftovers: never left behind by a failing run */
    }
}
