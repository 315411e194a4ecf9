/*
 * Bundle requests (the JSON a caller, often a language model, hands to
 * `cordon run`) and the path rules every file and output name goes
 * through. First byte: 0 a request (then planned and turned into step
 * requests), 1 path rules on the NUL-separated names that follow.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>
#include <cordon/sdk/path.h>
#include "core/adapter.h"
#include "core/bundle.h"

static void request(const char *text)
{
    struct cordon__bundle *b = NULL;
    struct cordon__plan *plan = NULL;
    struct cordon_error err;
    cJSON *doc = cJSON_ParseWithOpts(text, NULL, true), *m;
    int r;

    if (doc == NULL)
        return;
    cordon_error_init(&err);
    r = cordon__bundle_from_request(doc, &b, &err);
    fuzz_check_refusal(r, &err);
    if (r == 0) {
        if ((m = cordon__bundle_manifest(b)) == NULL)
            abort();
        cJSON_Delete(m);
        cordon_error_init(&err);
        r = cordon__adapter_plan(b, NULL, &plan, &err);
        fuzz_check_refusal(r, &err);
        for (size_t i = 0; r == 0 && i < plan->n_steps; i++) {
            struct cordon_exec_request step;
            char *text = NULL;

            /* A plan the host accepted gives requests every provider reads. */
            cordon_exec_request_init(&step);
            r = cordon__plan_step_request(plan, i, 1000, &step, &err);
            if (r == 0)
                r = cordon_exec_request_print(&step, &text, &err);
            fuzz_check_refusal(r, &err);
            free(text);
            cordon_exec_request_clear(&step);
        }
        cordon__plan_free(plan);
    }
    cordon__bundle_free(b);
    cJSON_Delete(doc);
}

static void paths(const uint8_t *data, size_t size)
{
    char *norm[16] = { 0 };
    size_t n = 0;

    while (size > 0 && n < 16) {
        const uint8_t *nul = memchr(data, '\0', size);
        size_t len = nul != NULL ? (size_t)(nul - data) : size;
        char *p = fuzz_text(data, len), *again = NULL;
        struct cordon_error err;
        int r;

        cordon_error_init(&err);
        r = (n % 2 ? cordon_path_normalize_dir : cordon_path_normalize)("files[0].path", p,
                                                                        &norm[n], &err);
        fuzz_check_refusal(r, &err);
        if (r == 0) {
            /* Normalising is idempotent, and what it yields stays inside. */
            if (norm[n][0] == '/' ||
                (norm[n][0] != '\0' && !cordon_path_is_under(norm[n], norm[n])))
                abort();
            if (norm[n][0] != '\0') {
                if (cordon_path_normalize("again", norm[n], &again, &err) != 0 ||
                    strcmp(again, norm[n]) != 0)
                    abort();
                free(again);
                n++;
            } else {
                free(norm[n]);
                norm[n] = NULL;
            }
        }
        free(p);
        data += len + (nul != NULL);
        size -= len + (nul != NULL);
    }
    {
        struct cordon_error err;

        cordon_error_init(&err);
        fuzz_check_refusal(cordon_path_check_set("outputs", (const char *const *)norm, n, &err),
                           &err);
    }
    for (size_t i = 0; i < n; i++)
        free(norm[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        paths(data + 1, size - 1);
    } else {
        char *text = fuzz_text(data + 1, size - 1);

        request(text);
        free(text);
    }
    return 0;
}
