/* cordon-contract: the per-test context and the helpers every check uses. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "core/abi.h"
#include "core/drive.h"
#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include "core/observe/observe.h"
#include <cordon/sdk/request.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/tar.h>
#include <cordon/text.h>
#include "contract/contract.h"

#define EXEC_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define RETENTION_BYTES (1u << 20)
#define TAR_LIST_MAX_ENTRIES 10000
#define TAR_LIST_MAX_DATA (1u << 20)

struct contract contract;

static const char *tmp_parent(void)
{
    const char *tmp = getenv("TMPDIR");

    return tmp != NULL && tmp[0] == '/' ? tmp : "/tmp";
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : fallback;
}

/* The caller's config with allow_unsafe_local forced on: running the suite
 * is the explicit consent trusted-local asks for. NULL when not an object. */
static char *merged_config(const char *config)
{
    cJSON *root = cJSON_Parse(config);
    char *text = NULL;

    if (cJSON_IsObject(root)) {
        cJSON_DeleteItemFromObjectCaseSensitive(root, "allow_unsafe_local");
        if (cJSON_AddTrueToObject(root, "allow_unsafe_local") != NULL)
            text = cJSON_PrintUnformatted(root);
    }
    cJSON_Delete(root);
    return text;
}

/*
 * The host services table of one context and every string it points to,
 * in one allocation. provider.h promises a provider that a table it was
 * given stays valid, unchanged, for the life of the process (and
 * CORDON_PROVIDER_DEFINE keeps the first one in cordon_provider_host), so
 * a table handed out is never written or freed again: a context whose
 * strings differ (a state directory of its own) gets a table of its own,
 * and every table stays reachable from host_tables until the process ends.
 */
struct host_table {
    struct host_table *older;
    struct cordon_host_v1 host;
    char strings[];
};
static struct host_table *host_tables;

/* Copy s (NULL stays NULL) to *at, advancing it. */
static const char *host_table_put(char **at, const char *s)
{
    char *copy = *at;
    size_t len;

    if (s == NULL)
        return NULL;
    len = strlen(s) + 1;
    memcpy(copy, s, len);
    *at += len;
    return copy;
}

static bool same_string(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The table for these strings: one made before for the same strings, or a
 * new one. NULL when out of memory. */
static const struct cordon_host_v1 *host_table_for(const char *observer_path,
                                                   const char *init_path, const char *state_dir)
{
    const char *const strings[] = { observer_path, init_path, CONTRACT_HOST_INSTANCE, state_dir };
    enum { N = sizeof(strings) / sizeof(strings[0]) };
    struct host_table *t;
    size_t size = 0;
    char *at;
    const char *s[N];

    for (t = host_tables; t != NULL; t = t->older)
        if (same_string(t->host.observer_path, observer_path) &&
            same_string(t->host.init_path, init_path) &&
            same_string(t->host.state_dir, state_dir))
            return &t->host;
    for (size_t i = 0; i < N; i++)
        size += strings[i] != NULL ? strlen(strings[i]) + 1 : 0;
    t = malloc(sizeof(*t) + size);
    if (t == NULL)
        return NULL;
    at = t->strings;
    for (size_t i = 0; i < N; i++)
        s[i] = host_table_put(&at, strings[i]);
    cordon__host_table_init(&t->host, s[0], s[1], s[2], s[3]);
    t->older = host_tables;
    host_tables = t;
    return &t->host;
}

void contract_setup(void)
{
    const char *shared = getenv("CORDON_CONTRACT_STATE_DIR");
    char *own = NULL;

    memset(&contract, 0, sizeof(contract));
    contract.provider_path = getenv(CONTRACT_ENV_PROVIDER);
    contract.observer_path = env_or(CONTRACT_ENV_OBSERVER, CORDON_HELPERDIR "/cordon-observe");
    contract.init_path = env_or(CONTRACT_ENV_INIT, CORDON_HELPERDIR "/cordon-init");
    contract.image = env_or(CONTRACT_ENV_IMAGE, NULL);
    contract.allow_synthetic = strcmp(env_or(CONTRACT_ENV_ALLOW_SYNTHETIC, "0"), "1") == 0;
    contract.config_json = merged_config(env_or(CONTRACT_ENV_CONFIG, "{}"));
    /* One state directory for the whole run when main() made one, so that a
     * provider's caches (runc's unpacked rootfs) are filled once, not per
     * test; otherwise a private one. Failures surface in contract_load. */
    if (shared != NULL) {
        contract.shared_state = true;
    } else if (cordon_fs_mkdtemp(tmp_parent(), "cordon-contract-state.", &own, NULL) < 0) {
        own = NULL;
    }
    contract.host = host_table_for(contract.observer_path, contract.init_path,
                                   shared != NULL ? shared : own);
    contract.state_dir = contract.host != NULL ? contract.host->state_dir : NULL;
    if (contract.host == NULL && own != NULL)
        cordon_fs_remove_tree_path(own, NULL);
    free(own);
}

void contract_teardown(void)
{
    struct cordon_error err;

    /* Terminate before releasing: terminate needs the resource. */
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.states[i] == NULL)
            continue;
        if (contract.resource != NULL) {
            cordon_error_init(&err);
            if (contract.vt.terminate(contract.resource, contract.states[i], &err) < 0)
                cr_log_warn("teardown: terminate failed: %s", err.message);
        }
        free(contract.states[i]);
        contract.states[i] = NULL;
    }
    /* Our host processes: killed and reaped, so Criterion sees no stray child. */
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.pids[i] <= 0)
            continue;
        kill(contract.pids[i], SIGKILL);
        while (waitpid(contract.pids[i], NULL, 0) < 0 && errno == EINTR)
            ;
        contract.pids[i] = 0;
    }
    /* What a leaking provider left on the host; never there otherwise. */
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.markers[i][0] == '\0')
            continue;
        if (contract_kill_processes(contract.markers[i]) > 0)
            cr_log_warn("teardown: killed host processes marked %s", contract.markers[i]);
        contract.markers[i][0] = '\0';
    }
    if (contract.resource != NULL) {
        cordon_error_init(&err);
        if (contract.vt.release(contract.resource, &err) < 0)
            cr_log_warn("teardown: release failed: %s", err.message);
        contract.resource = NULL;
    }
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        cordon_fs_remove_tree_path(contract.temp_dirs[i], NULL);
        free(contract.temp_dirs[i]);
        contract.temp_dirs[i] = NULL;
    }
    /* The directory goes; its name stays in the host table, which a
     * provider may still hold. */
    if (contract.state_dir != NULL && !contract.shared_state)
        cordon_fs_remove_tree_path(contract.state_dir, NULL);
    contract.state_dir = NULL;
    free(contract.config_json);
    contract.config_json = NULL;
}

void contract_skip(const char *fmt, ...)
{
    /* Kept: the skip ends the test with it (reachable, never cut). */
    static char *msg;
    va_list ap;

    free(msg);
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    contract_teardown();
    cr_skip_test("%s", msg != NULL ? msg : "(out of memory for the reason)");
}

void contract_load(void)
{
    struct cordon_error err;
    int r;

    if (contract.loaded)
        return;
    cr_assert(contract.provider_path != NULL && contract.provider_path[0] == '/',
              "no absolute provider path in %s", CONTRACT_ENV_PROVIDER);
    cr_assert(contract.config_json != NULL, "the provider config (%s) is not a JSON object",
              CONTRACT_ENV_CONFIG);
    cr_assert(contract.host != NULL, "out of memory for the host services table");
    cr_assert(contract.state_dir != NULL, "cannot create a state directory under %s",
              tmp_parent());
    cordon_error_init(&err);
    r = cordon__provider_load(contract.provider_path, contract.host, &contract.vt, &err);
    cr_assert_eq(r, 0, "loading the provider failed (%s): %s", cordon_error_name(r), err.message);
    contract.loaded = true;
}

cJSON *contract_probe(uint32_t flags, char **ret_text)
{
    struct cordon_error err;
    char *text = NULL;
    cJSON *facts;
    int r;

    contract_load();
    cordon_error_init(&err);
    r = contract.vt.probe(contract.host, contract.config_json, flags, &text, &err);
    cr_assert_eq(r, 0, "probe (flags %u) returned %d (%s): %s", flags, r, cordon_error_name(r),
                 err.message);
    cr_assert(text != NULL, "probe (flags %u) returned 0 without facts", flags);
    /* Every check reads the parsed document; the text is kept for validation. */
    facts = cJSON_Parse(text);
    cr_assert(cJSON_IsObject(facts), "probe (flags %u) facts are not a JSON object: %s", flags,
              CONTRACT_CLIP(text));
    if (ret_text != NULL)
        *ret_text = text;
    else
        contract.host->free(text);
    return facts;
}

bool contract_claims(const cJSON *facts, const char *axis)
{
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");

    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(iso, axis));
}

cJSON *contract_require_claim(const char *axis)
{
    cJSON *facts = contract_probe(CORDON_PROBE_FULL, NULL);

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "available"))) {
        cJSON_Delete(facts);
        contract_skip("the provider says it is unavailable: it claims nothing to attack "
                      "(probe_full_facts_are_valid fails for this)");
    }
    if (!contract_claims(facts, axis)) {
        cJSON_Delete(facts);
        contract_skip("the provider claims %s false (honest): nothing to attack", axis);
    }
    return facts;
}

void contract_ensure(void)
{
    struct cordon_error err;
    int r;

    contract_load();
    if (contract.resource != NULL)
        return;
    cordon_error_init(&err);
    r = contract.vt.ensure(contract.host, contract.config_json, &contract.resource, &err);
    cr_assert_eq(r, 0, "ensure failed (%s): %s", cordon_error_name(r), err.message);
    cr_assert(contract.resource != NULL, "ensure returned 0 without a resource");
}

void contract_random_hex(char *buf, size_t n)
{
    unsigned char raw[64];
    size_t got = 0;

    cr_assert(n <= sizeof(raw));
    while (got < n) {
        ssize_t r = getrandom(raw + got, n - got, 0);
        cr_assert(r > 0 || errno == EINTR, "getrandom: %s", strerror(errno));
        if (r > 0)
            got += (size_t)r;
    }
    for (size_t i = 0; i < n; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    buf[2 * n] = '\0';
}

void contract_new_id(char *buf, size_t size)
{
    char hex[17];

    contract_random_hex(hex, 8);
    snprintf(buf, size, "contract-%s", hex);
}

const struct cordon_limits contract_limits = {
    .cpus = CONTRACT_CPUS,
    .memory_bytes = CONTRACT_MEMORY_BYTES,
    .disk_bytes = CONTRACT_DISK_BYTES,
    .pids = CONTRACT_PIDS,
    .runtime_ms = CONTRACT_RUNTIME_MS,
    .max_output_bytes = CONTRACT_MAX_OUTPUT_BYTES,
};

char *contract_spec_with(const char *id, enum cordon_spec_layout layout,
                         const struct cordon_limits *limits, uint64_t *ret_expires_at_ms)
{
    struct cordon_spec spec;
    struct cordon_error err;
    char *text = NULL;

    cordon_spec_init(&spec);
    cordon_error_init(&err);
    if (id == NULL) {
        contract_new_id(spec.execution_id, sizeof(spec.execution_id));
    } else {
        cr_assert_lt(strlen(id), sizeof(spec.execution_id), "execution id %s: longer than %d bytes",
                     CONTRACT_CLIP(id), CORDON_EXECUTION_ID_MAX);
        memcpy(spec.execution_id, id, strlen(id) + 1);
    }
    spec.resources = limits != NULL ? *limits : contract_limits;
    spec.layout = layout;
    /* The lifetime is runtime_ms from now, as the host gives it. */
    spec.expires_at_ms = cordon_now_wall_ms() + spec.resources.runtime_ms;
    cr_assert(cordon_spec_set_image(&spec, contract.image, &err) == 0 &&
                  cordon_spec_print(&spec, &text, &err) == 0,
              "building a spec failed: %s", err.message);
    if (ret_expires_at_ms != NULL)
        *ret_expires_at_ms = spec.expires_at_ms;
    cordon_spec_clear(&spec);
    return text;
}

char *contract_spec(const char *id, enum cordon_spec_layout layout)
{
    return contract_spec_with(id, layout, NULL, NULL);
}

static void track_state(char *state)
{
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.states[i] == NULL) {
            contract.states[i] = state;
            return;
        }
    }
    free(state);
    cr_assert_fail("more than %d executions in one test", CONTRACT_MAX_TRACKED);
}

void contract_untrack(const char *state)
{
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.states[i] != NULL && contract.states[i] == state) {
            free(contract.states[i]);
            contract.states[i] = NULL;
        }
    }
}

int contract_try_provision(const char *spec_json, const char **ret_state, char *ret_msg,
                           size_t msg_size)
{
    struct cordon_error err;
    char *state = NULL;
    int r;

    contract_ensure();
    cordon_error_init(&err);
    r = contract.vt.provision(contract.resource, spec_json, &state, &err);
    if (ret_msg != NULL)
        snprintf(ret_msg, msg_size, "%s: %s", cordon_error_name(r), err.message);
    if (r == 0) {
        cr_assert(state != NULL, "provision returned 0 without a state");
        track_state(state);
        if (ret_state != NULL)
            *ret_state = state;
    }
    return r;
}

const char *contract_provision(const char *id, enum cordon_spec_layout layout)
{
    const char *state = NULL;
    char msg[600], *spec;
    int r;

    /* The first ensure may prepare an image for a minute: the lifetime in
     * the spec starts after it. */
    contract_ensure();
    spec = contract_spec(id, layout);
    r = contract_try_provision(spec, &state, msg, sizeof(msg));
    free(spec);
    cr_assert_eq(r, 0, "provision (layout \"%s\") failed: %s", cordon_spec_layout_name(layout),
                 msg);
    return state;
}

char *contract_request(const char *const *argv, uint64_t timeout_ms)
{
    struct cordon_exec_request rq;
    struct cordon_error err;
    char *text = NULL;

    cordon_error_init(&err);
    cordon_exec_request_init(&rq);
    for (size_t i = 0; argv[i] != NULL; i++)
        cr_assert_eq(cordon_exec_request_add_arg(&rq, argv[i], &err), 0, "%s", err.message);
    /* "" is the workspace root, as the sdk's own observation says it. */
    rq.cwd = strdup("");
    cr_assert(rq.cwd != NULL);
    cr_assert_eq(cordon_env_set(&rq.env, "PATH", EXEC_PATH, &err), 0, "%s", err.message);
    rq.timeout_ms = timeout_ms;
    cr_assert_eq(cordon_exec_request_print(&rq, &text, &err), 0, "%s", err.message);
    cordon_exec_request_clear(&rq);
    return text;
}

void contract_exec_init(struct contract_exec *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->cancel_fd = -1;
}

int contract_exec(const char *state, const char *const *argv, const struct contract_exec *opts,
                  struct cordon_exec_outcome *ret, char *ret_msg, size_t msg_size)
{
    struct contract_exec defaults;
    struct cordon_drive_opts d;
    struct cordon_error err;
    char *request = NULL;
    int r;

    if (opts == NULL) {
        contract_exec_init(&defaults);
        opts = &defaults;
    }
    contract_ensure();
    cordon__drive_opts_init(&d);
    d.host = contract.host;
    d.provider = &contract.vt;
    d.resource = contract.resource;
    d.state_json = state;
    d.timeout_ms = opts->timeout_ms != 0 ? opts->timeout_ms : CONTRACT_EXEC_TIMEOUT_MS;
    /* The request's timeout is only the provider's backstop; the host's
     * clock must be the one that fires, so give the backstop slack. */
    if (opts->request_json == NULL)
        request = contract_request(argv, d.timeout_ms + 5000);
    d.request_json = opts->request_json != NULL ? opts->request_json : request;
    d.stdin_fd = -1;
    d.retention_bytes = RETENTION_BYTES;
    d.output_budget = opts->output_budget != 0 ? opts->output_budget : CONTRACT_MAX_OUTPUT_BYTES;
    d.cancel_fd = opts->cancel_fd;
    d.ret_execution_ended = opts->ret_execution_ended;
    memset(ret, 0, sizeof(*ret));
    cordon_error_init(&err);
    r = cordon__drive_exec(&d, ret, &err);
    if (ret_msg != NULL)
        snprintf(ret_msg, msg_size, "%s: %s", cordon_error_name(r), err.message);
    free(request);
    return r;
}

void contract_sh(const char *state, const char *script, struct cordon_exec_outcome *ret)
{
    const char *argv[] = { "sh", "-c", script, NULL };
    char msg[600];
    int r;

    r = contract_exec(state, argv, NULL, ret, msg, sizeof(msg));
    cr_assert_eq(r, 0, "exec of sh -c '%s' failed: %s", script, msg);
}

char *contract_stream_text(const struct cordon_stream_capture *stream)
{
    char *text = malloc(stream->len + 1);

    cr_assert(text != NULL);
    if (stream->len > 0)
        memcpy(text, stream->data, stream->len);
    text[stream->len] = '\0';
    return text;
}

int contract_temp_fd(void)
{
    char path[PATH_MAX];
    int fd;

    fd = open(tmp_parent(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* Filesystems without O_TMPFILE: an unlinked named file. */
        snprintf(path, sizeof(path), "%s/cordon-contract-tar.XXXXXX", tmp_parent());
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    cr_assert(fd >= 0, "cannot create a temp file under %s: %s", tmp_parent(), strerror(errno));
    return fd;
}

/* Add every parent directory of path not added yet (tracked in dirs). */
static void tar_add_parents(struct cordon_tar_writer *w, const char *path, char dirs[][256],
                            int *ndirs)
{
    struct cordon_error err;
    char prefix[256];

    for (const char *p = strchr(path, '/'); p != NULL; p = strchr(p + 1, '/')) {
        size_t len = (size_t)(p - path);
        bool seen = false;

        cr_assert(len < sizeof(prefix));
        memcpy(prefix, path, len);
        prefix[len] = '\0';
        for (int i = 0; i < *ndirs; i++)
            seen = seen || strcmp(dirs[i], prefix) == 0;
        if (seen)
            continue;
        cr_assert(*ndirs < 32);
        cordon_error_init(&err);
        cr_assert_eq(cordon_tar_writer_add_dir(w, prefix, 0755, &err), 0,
                     "tar writer: %s", err.message);
        snprintf(dirs[(*ndirs)++], 256, "%s", prefix);
    }
}

int contract_tar_of(const char *const *files)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    char dirs[32][256];
    int ndirs = 0;
    int fd = contract_temp_fd();

    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(fd, &w, &err), 0, "tar writer: %s", err.message);
    for (size_t i = 0; files[i] != NULL; i += 2) {
        tar_add_parents(w, files[i], dirs, &ndirs);
        cr_assert_eq(cordon_tar_writer_add_file(w, files[i], files[i + 1], strlen(files[i + 1]),
                                                0644, &err),
                     0, "tar writer: %s", err.message);
    }
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "tar writer: %s", err.message);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

int contract_import(const char *state, const char *dest, int tar_fd, char *ret_msg,
                    size_t msg_size)
{
    struct cordon_error err;
    int r;

    contract_ensure();
    cordon_error_init(&err);
    r = contract.vt.import_tar(contract.resource, state, dest, tar_fd, &err);
    if (ret_msg != NULL)
        snprintf(ret_msg, msg_size, "%s: %s", cordon_error_name(r), err.message);
    return r;
}

int contract_export(const char *state, const char *src, int *ret_fd, char *ret_msg,
                    size_t msg_size)
{
    struct cordon_error err;
    int fd = contract_temp_fd();
    int r;

    contract_ensure();
    cordon_error_init(&err);
    r = contract.vt.export_tar(contract.resource, state, src, fd, &err);
    if (ret_msg != NULL)
        snprintf(ret_msg, msg_size, "%s: %s", cordon_error_name(r), err.message);
    if (r != 0) {
        close(fd);
        return r;
    }
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    *ret_fd = fd;
    return 0;
}

const char *contract_extract(int tar_fd)
{
    struct cordon_tar_limits limits = { .max_bytes = CONTRACT_DISK_BYTES, .max_entries = 10000 };
    const char *dir = contract_temp_dir(0700);
    struct cordon_error err;
    int dirfd, r;

    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert(dirfd >= 0, "open %s: %s", dir, strerror(errno));
    cordon_error_init(&err);
    r = cordon_tar_extract_fd(tar_fd, dirfd, &limits, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err);
    close(dirfd);
    cr_assert_eq(r, 0, "the provider's tar stream does not extract: %s", err.message);
    return dir;
}

/* Entry name without "./" prefixes and trailing slashes. */
static char *tar_clean_name(const char *name)
{
    char *copy;
    size_t len;

    while (strncmp(name, "./", 2) == 0)
        name += 2;
    copy = strdup(name);
    cr_assert(copy != NULL);
    len = strlen(copy);
    while (len > 0 && copy[len - 1] == '/')
        copy[--len] = '\0';
    return copy;
}

static void tar_read_data(struct archive *a, struct contract_tar_entry *e)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    la_ssize_t n;

    cr_assert(buf != NULL);
    for (;;) {
        if (len == cap && cap < TAR_LIST_MAX_DATA) {
            char *grown = realloc(buf, cap * 2 + 1);
            cr_assert(grown != NULL);
            buf = grown;
            cap *= 2;
        }
        if (len == cap)
            break; /* bounded: the rest is skipped by the next header */
        n = archive_read_data(a, buf + len, cap - len);
        cr_assert(n >= 0, "reading the tar stream: %s", archive_error_string(a));
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    e->data = buf;
    e->size = len;
}

/* Listed with libarchive, never extracted: the point is to see what the
 * provider put into the stream, links and all. */
int contract_tar_list(int tar_fd, struct contract_tar_entry **ret)
{
    struct contract_tar_entry *entries = NULL;
    struct archive *a = archive_read_new();
    struct archive_entry *ae;
    int n = 0, r;

    cr_assert(a != NULL);
    archive_read_support_format_tar(a);
    if (archive_read_open_fd(a, tar_fd, 10240) != ARCHIVE_OK) {
        cr_log_error("the tar stream does not open: %s", archive_error_string(a));
        archive_read_free(a);
        return -1;
    }
    while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
        struct contract_tar_entry *e;
        char *name = tar_clean_name(archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "");
        const char *link = archive_entry_symlink(ae);

        if (name[0] == '\0' || strcmp(name, ".") == 0) {
            free(name);
            continue;
        }
        cr_assert(n < TAR_LIST_MAX_ENTRIES, "more than %d tar entries", TAR_LIST_MAX_ENTRIES);
        e = realloc(entries, (size_t)(n + 1) * sizeof(*e));
        cr_assert(e != NULL);
        entries = e;
        e = &entries[n++];
        memset(e, 0, sizeof(*e));
        e->name = name;
        e->type = archive_entry_filetype(ae);
        e->mode = archive_entry_perm(ae);
        if (link == NULL)
            link = archive_entry_hardlink(ae);
        e->link = link != NULL ? strdup(link) : NULL;
        if (e->type == AE_IFREG)
            tar_read_data(a, e);
    }
    if (r != ARCHIVE_EOF) {
        cr_log_error("the tar stream is malformed: %s", archive_error_string(a));
        contract_tar_entries_free(entries, n);
        archive_read_free(a);
        return -1;
    }
    archive_read_free(a);
    *ret = entries;
    return n;
}

void contract_tar_entries_free(struct contract_tar_entry *entries, int n)
{
    for (int i = 0; entries != NULL && i < n; i++) {
        free(entries[i].name);
        free(entries[i].link);
        free(entries[i].data);
    }
    free(entries);
}

const char *contract_clip(const char *text, size_t max, char *buf, size_t size)
{
    size_t len, cut;

    cr_assert_geq(size, max + CONTRACT_CLIP_MARK, "contract_clip: a buffer of %zu bytes for %zu",
                  size, max);
    if (text == NULL)
        text = "(null)";
    len = strlen(text);
    if (len <= max) {
        memcpy(buf, text, len + 1);
        return buf;
    }
    /* Back to the last break in the second half; a text without one (a
     * long token) is cut between characters. */
    cut = (size_t)cordon_text_fit(text, max);
    for (size_t i = cut; i > max / 2; i--) {
        if (strchr(" \t\n,;:", text[i - 1]) != NULL) {
            cut = i;
            break;
        }
    }
    while (cut > 0 && strchr(" \t\n", text[cut - 1]) != NULL)
        cut--;
    snprintf(buf, size, "%.*s … (%zu more bytes)", (int)cut, text, len - cut);
    return buf;
}

void contract_text_add(struct contract_text *t, const char *fmt, ...)
{
    char *piece = NULL, *grown;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&piece, fmt, ap);
    va_end(ap);
    cr_assert_geq(n, 0, "out of memory for a message");
    grown = realloc(t->s, t->len + (size_t)n + 1);
    cr_assert_not_null(grown, "out of memory for a message of %zu bytes", t->len + (size_t)n);
    memcpy(grown + t->len, piece, (size_t)n + 1);
    free(piece);
    t->s = grown;
    t->len += (size_t)n;
}

const char *contract_text_str(const struct contract_text *t)
{
    return t->s != NULL ? t->s : "";
}

void contract_text_clear(struct contract_text *t)
{
    free(t->s);
    t->s = NULL;
    t->len = 0;
}

const char *contract_temp_dir(mode_t mode)
{
    struct cordon_error err;
    char *path = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon_fs_mkdtemp(tmp_parent(), "cordon-contract.", &path, &err), 0,
                 "temp dir: %s", err.message);
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.temp_dirs[i] == NULL) {
            contract.temp_dirs[i] = path;
            cr_assert_eq(chmod(path, mode), 0, "chmod %s: %s", path, strerror(errno));
            return path;
        }
    }
    cordon_fs_remove_tree_path(path, NULL);
    free(path);
    cr_assert_fail("more than %d temp dirs in one test", CONTRACT_MAX_TRACKED);
    return NULL;
}

static bool cmdline_contains(pid_t pid, const char *needle)
{
    char path[64], cmd[4096];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, cmd, sizeof(cmd) - 1);
    close(fd);
    if (n <= 0)
        return false;
    /* Arguments are NUL-separated; spaces let a needle span them. */
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    cmd[n] = '\0';
    return strstr(cmd, needle) != NULL;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* sleep accepts a fraction, so random digits make a harmless, unique
 * argument to look for in /proc. */
void contract_sleep_marker(char *buf, size_t size)
{
    char hex[13];
    unsigned long long n;

    contract_random_hex(hex, 6);
    n = strtoull(hex, NULL, 16);
    snprintf(buf, size, "1000.%015llu", n);
    for (int i = 0; i < CONTRACT_MAX_TRACKED; i++) {
        if (contract.markers[i][0] == '\0') {
            snprintf(contract.markers[i], sizeof(contract.markers[i]), "%s", buf);
            return;
        }
    }
    cr_assert_fail("more than %d markers in one test", CONTRACT_MAX_TRACKED);
}

pid_t contract_spawn_sleeper(const char *marker)
{
    int slot = -1;
    pid_t pid;

    for (int i = 0; i < CONTRACT_MAX_TRACKED && slot < 0; i++)
        if (contract.pids[i] <= 0)
            slot = i;
    cr_assert(slot >= 0, "more than %d host processes in one test", CONTRACT_MAX_TRACKED);
    pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        execlp("sleep", "sleep", marker, (char *)NULL);
        _exit(127);
    }
    contract.pids[slot] = pid;
    /* The attack means something only once the sleeper is really there. */
    for (int i = 0; i < 200 && !cmdline_contains(pid, marker); i++)
        sleep_ms(10);
    cr_assert(cmdline_contains(pid, marker), "the host sleeper (pid %d) did not start",
              (int)pid);
    return pid;
}

/* The host's /proc: a host sees the processes of its containers too, so
 * this finds survivors whatever the mechanism. */
int contract_count_processes(const char *needle)
{
    DIR *proc = opendir("/proc");
    struct dirent *de;
    int count = 0;

    cr_assert(proc != NULL, "opendir /proc: %s", strerror(errno));
    while ((de = readdir(proc)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        if (cmdline_contains((pid_t)atoi(de->d_name), needle))
            count++;
    }
    closedir(proc);
    return count;
}

int contract_wait_no_processes(const char *needle, unsigned ms)
{
    int left = contract_count_processes(needle);

    for (unsigned waited = 0; left > 0 && waited < ms; waited += 50) {
        sleep_ms(50);
        left = contract_count_processes(needle);
    }
    return left;
}

int contract_kill_processes(const char *needle)
{
    DIR *proc = opendir("/proc");
    struct dirent *de;
    int killed = 0;

    if (proc == NULL)
        return 0;
    while ((de = readdir(proc)) != NULL) {
        pid_t pid;
        int pidfd;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        pid = (pid_t)atoi(de->d_name);
        if (pid == getpid() || !cmdline_contains(pid, needle))
            continue;
        /* Pin the process, then look again: the pid may have been reused. */
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
            continue;
        if (cmdline_contains(pid, needle) &&
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
            killed++;
        close(pidfd);
    }
    closedir(proc);
    return killed;
}

/* A tar stream holding the observer as "cordon-observe", mode 0755. */
cJSON *contract_observe(void)
{
    struct cordon_observe_opts opts;
    struct cordon_error err;
    char *text = NULL;
    cJSON *observed;
    int r;

    contract_ensure();
    memset(&opts, 0, sizeof(opts));
    opts.struct_size = sizeof(opts);
    opts.host = contract.host;
    opts.provider = &contract.vt;
    opts.resource = contract.resource;
    opts.image = contract.image;
    cordon_error_init(&err);
    r = cordon_observe_run(&opts, &text, &err);
    cr_assert_eq(r, 0, "the suite's own observation through the provider failed (%s): %s",
                 cordon_error_name(r), err.message);
    observed = cJSON_Parse(text);
    cr_assert(cJSON_IsObject(observed), "the observation is not JSON: %s", CONTRACT_CLIP(text));
    free(text);
    return observed;
}

const cJSON *contract_observed_check(const cJSON *observation, const char *axis, const char *check)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(observation, "isolation"), "checks")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "axis")) ?: "", axis) == 0 &&
            strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "check")) ?: "", check) == 0)
            return c;
    }
    return NULL;
}

int contract_observer_tar(void)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error err;
    struct stat st;
    int fd, tar = contract_temp_fd();

    fd = open(contract.observer_path, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0, "open the observer %s: %s", contract.observer_path, strerror(errno));
    cr_assert_eq(fstat(fd, &st), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon_tar_writer_open(tar, &w, &err), 0, "tar writer: %s", err.message);
    cr_assert_eq(cordon_tar_writer_add_fd(w, "cordon-observe", fd, (uint64_t)st.st_size, 0755, &err),
                 0, "tar writer: %s", err.message);
    cr_assert_eq(cordon_tar_writer_close(w, &err), 0, "tar writer: %s", err.message);
    close(fd);
    cr_assert_eq(lseek(tar, 0, SEEK_SET), 0);
    return tar;
}
