/*
 * What a user types on the command line and puts in a request: sizes
 * ("512M"), durations ("250ms"), the limits object, isolation and the
 * environment object. First byte: 0 size, 1 duration, 2 limits, 3
 * isolation, 4 environment; the rest is the text. A parsed value must
 * print back the way it was understood; every refusal names its field.
 */
#include "fuzz.h"

#include <inttypes.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include "core/env.h"
#include "core/limits.h"
#include "core/select.h"

static void json_doc(unsigned sel, const char *text)
{
    struct cordon_error err;
    cJSON *doc = cJSON_ParseWithOpts(text, NULL, true);
    int r;

    if (doc == NULL)
        return;
    cordon_error_init(&err);
    if (sel == 2) {
        struct cordon_limits lim;

        r = cordon_limits_from_json(doc, "resources", &lim, &err);
        fuzz_check_refusal(r, &err);
        if (r == 0) {
            cordon_error_init(&err);
            fuzz_check_refusal(cordon_limits_validate("resources", &lim, &err), &err);
        }
    } else if (sel == 3) {
        enum cordon__isolation iso;

        r = cordon__isolation_parse("isolation", doc, &iso, &err);
        fuzz_check_refusal(r, &err);
    } else {
        r = cordon__env_validate("environment", doc, &err);
        fuzz_check_refusal(r, &err);
    }
    cJSON_Delete(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cordon_error err;
    uint64_t v = 0, again = 0;
    char *text, back[32];
    unsigned sel;
    int r;

    if (size < 1)
        return 0;
    sel = data[0] % 5;
    text = fuzz_text(data + 1, size - 1);
    cordon_error_init(&err);
    if (sel == 0) {
        r = cordon__parse_size("--memory", text, &v, &err);
        fuzz_check_refusal(r, &err);
        /* A parsed size reads back as the same number of bytes. */
        if (r == 0) {
            snprintf(back, sizeof(back), "%" PRIu64, v);
            if (cordon__parse_size("--memory", back, &again, &err) != 0 || again != v)
                abort();
        }
    } else if (sel == 1) {
        r = cordon__parse_duration_ms("--runtime", text, &v, &err);
        fuzz_check_refusal(r, &err);
        if (r == 0) {
            snprintf(back, sizeof(back), "%" PRIu64 "ms", v);
            if (cordon__parse_duration_ms("--runtime", back, &again, &err) != 0 || again != v)
                abort();
        }
    } else {
        json_doc(sel, text);
    }
    free(text);
    return 0;
}
