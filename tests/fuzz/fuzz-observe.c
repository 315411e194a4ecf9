/*
 * The observer's report comes from inside the sandbox: the code under test
 * may forge any byte of it. The input is the report, a NUL, then the
 * host's view (which the host writes itself, fuzzed too so that every
 * branch of the comparison is reached). A comparison either refuses or
 * yields an isolation object whose axes are booleans.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>
#include "core/observe/observe.h"
#include "core/observe/compare.h"

static const char *const axes[] = { "process_contained", "host_filesystem_restricted",
                                    "privilege_escalation_blocked", "syscalls_restricted" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t rlen = nul != NULL ? (size_t)(nul - data) : size;
    char *report = fuzz_text(data, rlen);
    char *view = nul != NULL ? fuzz_text(nul + 1, size - rlen - 1) : fuzz_text(data, 0);
    struct cordon_error err;
    char *iso = NULL;
    int r;

    cordon_error_init(&err);
    r = cordon__observe_compare(report, view, &iso, &err);
    fuzz_check_refusal(r, &err);
    if (r == 0) {
        cJSON *doc = cJSON_Parse(iso);

        if (doc == NULL)
            abort();
        for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++)
            if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(doc, axes[i]))) {
                fprintf(stderr, "isolation.%s is not a boolean: %s\n", axes[i], iso);
                abort();
            }
        cJSON_Delete(doc);
    }
    free(iso);
    free(report);
    free(view);
    return 0;
}
