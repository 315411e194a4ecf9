/* sdk: libarchive loaded on first use (see archive-lazy.h). */
#define CORDON__ARCHIVE_NO_REDIRECT
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "sdk/archive-lazy.h"

CORDON_EXTERN struct cordon__archive_api cordon__archive;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[256];

static void load(void)
{
    /* RTLD_LOCAL: a provider that links libarchive itself keeps its own
     * symbols; RTLD_NODELETE: the table outlives any dlclose. */
    void *h = dlopen(CORDON_LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    const char *e;

    if (h == NULL) {
        e = dlerror();
        snprintf(load_error, sizeof(load_error), "%s", e != NULL ? e : "dlopen failed");
        return;
    }
#define CORDON__ARCHIVE_RESOLVE(name)                                                         \
    if ((cordon__archive.name = (__typeof__(cordon__archive.name))dlsym(h, #name)) == NULL) { \
        snprintf(load_error, sizeof(load_error), "%s has no symbol %s",                      \
                 CORDON_LIBARCHIVE_SONAME, #name);                                           \
        return;                                                                              \
    }
    CORDON__ARCHIVE_FUNCS(CORDON__ARCHIVE_RESOLVE)
#undef CORDON__ARCHIVE_RESOLVE
    loaded = true;
}

int cordon__archive_load(struct cordon_error *err)
{
    pthread_once(&load_once, load);
    if (loaded)
        return 0;
    return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                            "libarchive (" CORDON_LIBARCHIVE_SONAME ") cannot be loaded: %s "
                            "(apt-get install libarchive13)", load_error);
}
