/*
 * Untrusted text: names chosen inside a sandbox, messages a provider
 * sends, program output shown on a terminal.
 *
 * Every byte from inside a sandbox is data. Before such text reaches a
 * terminal or a JSON document it goes through cordon_text_escape, which
 * leaves printable UTF-8 alone and writes everything else as visible
 * ASCII: a byte that is not part of valid UTF-8, a C0 control or DEL as
 * \xHH; a C1 control (U+0080..U+009F), a bidirectional control or a
 * line/paragraph separator as \uHHHH. Backslashes are not doubled, so
 * escaping is idempotent: a message that embeds an escaped message is
 * escaped once, not twice. cordon_error_set runs every message through it.
 *
 * Everything here is inline, so that a provider built against this header
 * escapes its messages the same way as the host does.
 */
#ifndef CORDON_TEXT_H
#define CORDON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of cordon_text_escape. */
enum cordon_text_flags {
    CORDON_TEXT_KEEP_LINES = 1u << 0 /* pass \n, \r and \t through (program output) */
};

/* Length (1..4) of the strict UTF-8 sequence at s[0..len), or 0 if the
 * bytes there are not one: no overlong forms, no surrogates, nothing above
 * U+10FFFF. The code point goes to *ret_cp. */
static inline size_t cordon_text_utf8_seq(const unsigned char *s, size_t len, uint32_t *ret_cp)
{
    uint32_t cp;
    size_t n;

    if (len == 0)
        return 0;
    if (s[0] < 0x80) {
        *ret_cp = s[0];
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        cp = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        cp = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *ret_cp = cp;
    return n;
}

/* Whether s[0..len) is strict UTF-8 throughout. */
static inline bool cordon_text_is_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;

    for (size_t i = 0, n; i < len; i += n)
        if ((n = cordon_text_utf8_seq(p + i, len - i, &cp)) == 0)
            return false;
    return true;
}

/* len, less a UTF-8 sequence that s[0..len) ends in the middle of: where
 * to cut text that was truncated at len bytes. */
static inline size_t cordon_text_utf8_end(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t back = 0;

    /* Walk back over continuation bytes (at most three) to the lead byte. */
    while (back < 3 && back < len && (p[len - 1 - back] & 0xc0) == 0x80)
        back++;
    if (back < len && p[len - 1 - back] >= 0xc0) {
        unsigned char lead = p[len - 1 - back];
        size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (back + 1 < want)
            return len - 1 - back;
    }
    return len;
}

/* The longest prefix of s, at most max bytes, that does not end inside a
 * UTF-8 sequence: for "%.*s" where "%.300s" would cut a character in two.
 * s is not NULL. */
static inline int cordon_text_fit(const char *s, size_t max)
{
    size_t len = 0;

    /* strnlen, which strict ISO C (-std=c11) does not declare */
    while (len < max && s[len] != '\0')
        len++;
    if (len == max)
        len = cordon_text_utf8_end(s, len);
    return len > (size_t)INT32_MAX ? INT32_MAX : (int)len;
}

/* What a cut text ends in, in place of the rest: "\u2026" (an ellipsis). */
#define CORDON_TEXT_CUT_MARK "\xe2\x80\xa6"

/*
 * End text that did not fit: buf (size bytes, at least 8) holds a
 * NUL-terminated prefix of a longer text, as snprintf leaves one. Cut it
 * back to the last blank within 48 bytes of where it must end (between
 * characters when there is none: one long token), then put
 * CORDON_TEXT_CUT_MARK there. So a reader sees that the text was cut, and
 * no word, character or escape is cut in two.
 */
static inline void cordon_text_mark_cut(char *buf, size_t size)
{
    size_t end = 0, k;

    if (size < 8) {
        if (size > 0)
            buf[0] = '\0';
        return;
    }
    while (end < size - 1 && buf[end] != '\0')
        end++;
    /* Room for the mark and the NUL. */
    if (end > size - sizeof(CORDON_TEXT_CUT_MARK))
        end = size - sizeof(CORDON_TEXT_CUT_MARK);
    end = cordon_text_utf8_end(buf, end);
    /* A blank at the cut already ends a word; otherwise back off to one
     * (at the NUL, the text that followed is unknown: back off too). */
    if (buf[end] != ' ') {
        size_t word = end;

        for (k = end; k > 0 && end - k < 48; k--) {
            if (buf[k - 1] == ' ') {
                word = k - 1;
                break;
            }
        }
        /* No blank near: at least never end inside an escape ("\xHH",
         * "\uHHHH", cordon_text_escape's). */
        for (k = end; word == end && k > 0 && end - k < 6; k--) {
            size_t esc = buf[k] == 'x' ? 4 : buf[k] == 'u' ? 6 : 0;

            if (buf[k - 1] == '\\' && esc != 0 && k - 1 + esc > end)
                word = k - 1;
        }
        end = word;
    }
    while (end > 0 && buf[end - 1] == ' ')
        end--;
    memcpy(buf + end, CORDON_TEXT_CUT_MARK, sizeof(CORDON_TEXT_CUT_MARK));
}

/* Whether code point cp is written escaped: controls, and the characters
 * that reorder or break a line on a terminal (bidi embeddings, overrides,
 * isolates and marks; U+2028, U+2029). */
static inline bool cordon_text_hidden(uint32_t cp, unsigned flags)
{
    if ((flags & CORDON_TEXT_KEEP_LINES) && (cp == '\n' || cp == '\r' || cp == '\t'))
        return false;
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
           cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * Escape len bytes of src into dst (dst_size bytes, NUL-terminated when
 * dst_size > 0); the result is printable, strict UTF-8. An escape or a
 * character that does not fit is left out whole, never cut, and so is
 * everything after it. Returns the bytes written (without the NUL); the
 * bytes of src consumed go to *ret_used when it is not NULL.
 */
static inline size_t cordon_text_escape(char *dst, size_t dst_size, const char *src, size_t len,
                                        unsigned flags, size_t *ret_used)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, o = 0;

    if (dst_size == 0) {
        if (ret_used != NULL)
            *ret_used = 0;
        return 0;
    }
    while (i < len) {
        uint32_t cp = 0;
        size_t n = cordon_text_utf8_seq(s + i, len - i, &cp);
        char esc[8];
        size_t elen;

        if (n == 0) {
            /* Not UTF-8: show the one byte and resynchronise on the next. */
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[s[i] >> 4];
            esc[3] = hex[s[i] & 15];
            elen = 4;
            n = 1;
        } else if (!cordon_text_hidden(cp, flags)) {
            if (o + n >= dst_size)
                break;
            memcpy(dst + o, s + i, n);
            o += n;
            i += n;
            continue;
        } else if (cp < 0x80) {
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[cp >> 4];
            esc[3] = hex[cp & 15];
            elen = 4;
        } else {
            esc[0] = '\\';
            esc[1] = 'u';
            for (int k = 0; k < 4; k++)
                esc[2 + k] = hex[(cp >> (12 - 4 * k)) & 15];
            elen = 6;
        }
        if (o + elen >= dst_size)
            break;
        memcpy(dst + o, esc, elen);
        o += elen;
        i += n;
    }
    dst[o] = '\0';
    if (ret_used != NULL)
        *ret_used = i;
    return o;
}

#ifdef __cplusplus
}
#endif

#endif /* CORDON_TEXT_H */
