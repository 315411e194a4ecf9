/* core: the bytes of one stream as result fields (cordon__result_add_stream,
 * core/run.h), text where they are UTF-8 and base64 where they are not. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/text.h>
#include "core/run-internal.h"
#include "core/run.h"

/* Append data to out as UTF-8, invalid bytes replaced by U+FFFD; a
 * sequence cut by a head/tail boundary (at the very end or start) is
 * dropped rather than counted as invalid. Returns true when data was
 * valid apart from such cuts. */
static bool utf8_append(char *out, size_t *pos, const unsigned char *s, size_t len, bool cut_start,
                        bool cut_end)
{
    bool valid = true;
    size_t i = 0;

    if (cut_start)
        while (i < len && i < 3 && (s[i] & 0xc0) == 0x80)
            i++;
    while (i < len) {
        uint32_t cp;
        size_t n = cordon_text_utf8_seq(s + i, len - i, &cp);
        if (n == 0 && cut_end && len - i < 4 && s[i] >= 0xc2) {
            break;
        }
        if (n == 0 || (n == 1 && s[i] == 0)) {
            /* NUL and invalid bytes are not text; keep the exact bytes in base64 */
            memcpy(out + *pos, "\xef\xbf\xbd", 3);
            *pos += 3;
            valid = false;
            i++;
            continue;
        }
        memcpy(out + *pos, s + i, n);
        *pos += n;
        i += n;
    }
    return valid;
}

char *cordon__base64_encode(const unsigned char *s, size_t len)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < len)
            v |= s[i + 2];
        *o++ = t[(v >> 18) & 63];
        *o++ = t[(v >> 12) & 63];
        *o++ = i + 1 < len ? t[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? t[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

void cordon__result_add_stream(cJSON *result, const char *name, const char *data, size_t len,
                               size_t head_len, uint64_t dropped)
{
    const unsigned char *d = (const unsigned char *)data;
    char marker[64], field[64];
    size_t pos = 0, mlen = 0;
    bool valid;
    char *text;

    if (dropped > 0)
        mlen = (size_t)snprintf(marker, sizeof(marker), "\n[cordon: %llu bytes dropped]\n",
                                (unsigned long long)dropped);
    else
        head_len = len;
    text = malloc(len * 3 + mlen + 1);
    if (text == NULL)
        return;
    valid = utf8_append(text, &pos, d, head_len, false, dropped > 0);
    if (dropped > 0) {
        memcpy(text + pos, marker, mlen);
        pos += mlen;
        valid = utf8_append(text, &pos, d + head_len, len - head_len, true, false) && valid;
    }
    text[pos] = '\0';
    cJSON_AddStringToObject(result, name, text);
    free(text);
    snprintf(field, sizeof(field), "%s_truncated", name);
    cJSON_AddBoolToObject(result, field, dropped > 0);
    snprintf(field, sizeof(field), "%s_dropped_bytes", name);
    cJSON_AddNumberToObject(result, field, (double)dropped);
    if (!valid) {
        char *b64 = cordon__base64_encode(d, len);
        snprintf(field, sizeof(field), "%s_base64", name);
        if (b64 != NULL)
            cJSON_AddStringToObject(result, field, b64);
        free(b64);
    }
}
