/*
 * Probe facts come from third-party providers (and, through them, from
 * whatever their sandbox printed): validation must refuse any shape it
 * does not know with a message, and version strings of any form must
 * normalise or be refused. First byte: 0 facts, 1 version normalising
 * (the tool name up to the first NUL), 2 version comparison.
 */
#include "fuzz.h"

#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cordon_error err;
    char *a, *b, out[64];
    const uint8_t *nul;
    size_t alen;
    int r;

    if (size < 1)
        return 0;
    cordon_error_init(&err);
    nul = memchr(data + 1, '\0', size - 1);
    alen = nul != NULL ? (size_t)(nul - data - 1) : size - 1;
    a = fuzz_text(data + 1, alen);
    b = nul != NULL ? fuzz_text(nul + 1, size - 1 - alen - 1) : fuzz_text(data, 0);
    switch (data[0] % 3) {
    case 0:
        a = (free(a), fuzz_text(data + 1, size - 1));
        r = cordon__facts_validate(a, &err);
        fuzz_check_refusal(r, &err);
        break;
    case 1:
        r = cordon_version_normalize(a, b, out, sizeof(out), &err);
        fuzz_check_refusal(r, &err);
        if (r == 0 && strlen(out) >= sizeof(out))
            abort();
        break;
    default:
        r = cordon_version_compare(a, b);
        /* Antisymmetric, and a version equals itself. */
        if ((r > 0) != (cordon_version_compare(b, a) < 0) || cordon_version_compare(a, a) != 0)
            abort();
        break;
    }
    free(a);
    free(b);
    return 0;
}
