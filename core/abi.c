/* core: loading provider shared objects and checking their vtables. */
#include <dlfcn.h>
#include <errno.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/abi.h"

bool cordon__provider_id_valid(const char *id)
{
    size_t len;

    if (id == NULL || id[0] == '\0')
        return false;
    len = strlen(id);
    if (len > CORDON_PROVIDER_ID_MAX)
        return false;
    if (!((id[0] >= 'a' && id[0] <= 'z') || (id[0] >= '0' && id[0] <= '9')))
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

int cordon__provider_id_from_path(const char *path, char *ret_id, struct cordon_error *err)
{
    const char *base, *dot;
    size_t len;

    if (path == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "provider path: missing");
    base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    dot = strrchr(base, '.');
    len = (dot != NULL && strcmp(dot, ".so") == 0) ? (size_t)(dot - base) : strlen(base);
    if (len == 0 || len > CORDON_PROVIDER_ID_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provider path %s: the file name does not give a provider id", path);
    memcpy(ret_id, base, len);
    ret_id[len] = '\0';
    if (!cordon__provider_id_valid(ret_id))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provider path %s: \"%s\" is not a provider id ([a-z0-9][a-z0-9-]{0,63})",
                                path, ret_id);
    return 0;
}

/* Why lt_dlopen failed. libltdl tries the file under each of its
 * extensions and keeps the last failure, so an unresolved symbol or a
 * wrong ELF class comes back as "file not found"; the dynamic loader's own
 * dlerror() names the cause. */
static const char *load_failure(const char *abs_path, char *buf, size_t size)
{
    const char *lt = lt_dlerror();
    void *h = dlopen(abs_path, RTLD_NOW | RTLD_LOCAL);

    if (h != NULL) {
        /* Loads here after all: libltdl's reason is all there is. */
        dlclose(h);
        return lt != NULL ? lt : "unknown error";
    }
    snprintf(buf, size, "%s", dlerror());
    return buf;
}

int cordon__provider_check(const struct cordon_provider_v1 *p, const char *expected_id,
                          struct cordon_provider_v1 *ret_copy, struct cordon_error *err)
{
    struct cordon_provider_v1 copy;
    uint32_t major, minor;

    if (p == NULL)
        return cordon_error_set(err, CORDON_E_ABI, 0, "provider: init returned no vtable");
    major = CORDON_ABI_MAJOR_OF(p->abi_version);
    minor = CORDON_ABI_MINOR_OF(p->abi_version);
    if (major != CORDON_ABI_MAJOR)
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider: built for ABI major %u; this host speaks major %u",
                                major, (unsigned)CORDON_ABI_MAJOR);
    if (minor > CORDON_ABI_MINOR)
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider: built for ABI %u.%u, newer than this host's %u.%u",
                                major, minor, (unsigned)CORDON_ABI_MAJOR, (unsigned)CORDON_ABI_MINOR);
    if (p->struct_size < CORDON_PROVIDER_V1_0_SIZE || p->struct_size > sizeof(copy))
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider: struct_size %u is outside %zu..%zu",
                                p->struct_size, (size_t)CORDON_PROVIDER_V1_0_SIZE, sizeof(copy));
    /* Copy only what the provider declared; newer slots stay NULL. */
    memset(&copy, 0, sizeof(copy));
    memcpy(&copy, p, p->struct_size);
    if (!cordon__provider_id_valid(copy.provider_id))
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider: provider_id \"%s\" is not [a-z0-9][a-z0-9-]{0,63}",
                                copy.provider_id != NULL ? copy.provider_id : "(null)");
    if (expected_id != NULL && strcmp(copy.provider_id, expected_id) != 0)
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider: provider_id \"%s\" differs from its file name \"%s\"",
                                copy.provider_id, expected_id);
    if (copy.version == NULL)
        return cordon_error_set(err, CORDON_E_ABI, 0, "provider %s: version is NULL",
                                copy.provider_id);
    if (copy.supported_kinds == NULL || copy.supported_kinds[0] == NULL)
        return cordon_error_set(err, CORDON_E_ABI, 0, "provider %s: supported_kinds is empty",
                                copy.provider_id);
#define REQUIRE(slot)                                                                     \
    if (copy.slot == NULL)                                                                \
        return cordon_error_set(err, CORDON_E_ABI, 0,                                     \
                                "provider %s: required operation " #slot " is missing",   \
                                copy.provider_id)
    REQUIRE(probe);
    REQUIRE(ensure);
    REQUIRE(release);
    REQUIRE(provision);
    REQUIRE(exec);
    REQUIRE(import_tar);
    REQUIRE(export_tar);
    REQUIRE(terminate);
    REQUIRE(reclaim);
#undef REQUIRE
    *ret_copy = copy;
    return 0;
}

static pthread_once_t ltdl_once = PTHREAD_ONCE_INIT;
static int ltdl_status;

static void ltdl_init(void)
{
    ltdl_status = lt_dlinit();
}

int cordon__provider_load(const char *abs_path, const struct cordon_host_v1 *host,
                         struct cordon_provider_v1 *ret_copy, struct cordon_error *err)
{
    char id[CORDON_PROVIDER_ID_MAX + 1];
    const struct cordon_provider_v1 *vt = NULL;
    cordon_provider_init_v1_fn init;
    struct cordon_error perr;
    lt_dlhandle handle;
    int r;

    if (abs_path == NULL || abs_path[0] != '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provider path %s: only absolute paths are loaded",
                                abs_path != NULL ? abs_path : "(null)");
    r = cordon__provider_id_from_path(abs_path, id, err);
    if (r < 0)
        return r;
    pthread_once(&ltdl_once, ltdl_init);
    if (ltdl_status != 0)
        return cordon_error_set(err, CORDON_E_ABI, 0, "libltdl: %s", lt_dlerror());
    handle = lt_dlopen(abs_path);
    if (handle == NULL) {
        char why[512];

        return cordon_error_set(err, CORDON_E_ABI, 0, "provider %s: cannot load: %s", abs_path,
                                load_failure(abs_path, why, sizeof(why)));
    }
    init = (cordon_provider_init_v1_fn)(uintptr_t)lt_dlsym(handle, CORDON_PROVIDER_INIT_SYMBOL);
    if (init == NULL) {
        /* Tell a newer provider from a .so that is no provider at all. */
        for (int major = CORDON_ABI_MAJOR + 1; major < CORDON_ABI_MAJOR + 8; major++) {
            char sym[64];
            snprintf(sym, sizeof(sym), "cordon_provider_init_v%d", major);
            if (lt_dlsym(handle, sym) != NULL) {
                lt_dlclose(handle);
                return cordon_error_set(err, CORDON_E_ABI, 0,
                                        "provider %s: built for ABI major %d (exports %s); "
                                        "this host speaks major %d",
                                        abs_path, major, sym, CORDON_ABI_MAJOR);
            }
        }
        lt_dlclose(handle);
        return cordon_error_set(err, CORDON_E_ABI, 0,
                                "provider %s: no entry point %s (not a cordon provider)", abs_path,
                                CORDON_PROVIDER_INIT_SYMBOL);
    }
    cordon_error_init(&perr);
    r = init(host, CORDON_INIT_FLAGS_NONE, &vt, &perr);
    if (r != 0)
        return cordon_error_set(err, CORDON_E_ABI, perr.os_errno, "provider %s: init failed: %s",
                                abs_path, perr.message[0] ? perr.message : cordon_error_name(r));
    r = cordon__provider_check(vt, id, ret_copy, err);
    if (r < 0 && err != NULL) {
        char msg[sizeof(err->message)];

        /* Through cordon_error_set, so that the longer message is cut
         * between characters. */
        memcpy(msg, err->message, sizeof(msg));
        cordon_error_set(err, err->code, err->os_errno, "%s: %s", abs_path, msg);
    }
    return r;
}

static void stderr_log(enum cordon_log_level level, const char *provider_id, const char *msg)
{
    static const char *const names[] = { "error", "warning", "info", "debug" };
    const char *debug = getenv("CORDON_DEBUG");
    char id[128], shown[4096];

    if (level > CORDON_LOG_WARNING && (debug == NULL || debug[0] == '\0' || debug[0] == '0'))
        return;
    if (level == CORDON_LOG_WARNING && debug == NULL)
        return;
    /* A provider's text, which may carry names from inside a sandbox:
     * escaped before it reaches a terminal. */
    cordon_text_escape(id, sizeof(id), provider_id != NULL ? provider_id : "host",
                       strlen(provider_id != NULL ? provider_id : "host"), 0, NULL);
    cordon_text_escape(shown, sizeof(shown), msg != NULL ? msg : "", msg != NULL ? strlen(msg) : 0,
                       0, NULL);
    fprintf(stderr, "cordon[%s] %s: %s\n", id, (unsigned)level < 4 ? names[level] : "log", shown);
}

void cordon__host_table_init(struct cordon_host_v1 *host, const char *observer_path,
                            const char *init_path, const char *host_instance_id,
                            const char *state_dir)
{
    memset(host, 0, sizeof(*host));
    host->abi_version = CORDON_ABI_VERSION;
    host->struct_size = (uint32_t)sizeof(*host);
    host->alloc = malloc;
    host->free = free;
    host->log = stderr_log;
    host->observer_path = observer_path;
    host->init_path = init_path;
    host->host_instance_id = host_instance_id;
    host->state_dir = state_dir;
}
