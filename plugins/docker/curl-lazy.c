/* docker: libcurl loaded on first use (see curl-lazy.h). */
#define DK_CURL_NO_REDIRECT
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "plugins/docker/curl-lazy.h"

struct dk_curl_api dk__curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[256];

static void load(void)
{
    /* RTLD_LOCAL: nothing else in the process sees these symbols;
     * RTLD_NODELETE: libcurl stays mapped after a dlclose of docker.so. A
     * docker.so loaded again runs curl_global_init once more, which
     * libcurl counts (and its cleanup is never called). */
    void *h = dlopen(CORDON_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    const char *e;
    CURLcode rc;

    if (h == NULL) {
        e = dlerror();
        snprintf(load_error, sizeof(load_error), "%s", e != NULL ? e : "dlopen failed");
        return;
    }
#define DK_CURL_RESOLVE(name)                                                                 \
    if ((dk__curl.name = (__typeof__(dk__curl.name))dlsym(h, #name)) == NULL) {               \
        snprintf(load_error, sizeof(load_error), "it has no symbol %s", #name);               \
        return;                                                                               \
    }
    DK_CURL_FUNCS(DK_CURL_RESOLVE)
#undef DK_CURL_RESOLVE
    /* libcurl's global init is not thread-safe on every version: here,
     * under the once, it runs exactly once. */
    rc = dk__curl.curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(load_error, sizeof(load_error), "its global init failed: %s",
                 dk__curl.curl_easy_strerror(rc));
        return;
    }
    loaded = true;
}

int dk__curl_load(struct cordon_error *err)
{
    pthread_once(&load_once, load);
    if (loaded)
        return 0;
    return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                            "libcurl (" CORDON_LIBCURL_SONAME ") cannot be loaded: %s "
                            "(install the libcurl package that holds it)", load_error);
}
