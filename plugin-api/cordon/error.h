/*
 * cordon error codes and the caller-allocated error struct.
 *
 * Every action in the ABI, libcordon and the sdk returns 0 or one of the
 * negative codes below, and fills a struct cordon_error that the caller
 * owns. The values are fixed forever; a code the host does not know is read
 * as CORDON_E_PROVIDER (a generic provider failure).
 */
#ifndef CORDON_ERROR_H
#define CORDON_ERROR_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cordon/text.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cordon_error_code {
    CORDON_OK = 0,
    CORDON_E_PROVIDER = -1,            /* generic provider failure */
    CORDON_E_INVALID = -2,             /* bad input; the message names the field */
    CORDON_E_NOMEM = -3,
    CORDON_E_LIMIT = -4,               /* a bound was exceeded; the message names it */
    CORDON_E_UNSAFE = -5,              /* a path, link or tar entry was refused */
    CORDON_E_NOT_FOUND = -6,
    CORDON_E_EXISTS = -7,
    CORDON_E_UNAVAILABLE = -8,         /* the mechanism is not reachable now */
    CORDON_E_UNSUPPORTED = -9,
    CORDON_E_DENIED = -10,             /* refused by policy (e.g. allow_unsafe_local) */
    CORDON_E_IO = -11,
    CORDON_E_TIMEOUT = -12,
    CORDON_E_CANCELLED = -13,
    CORDON_E_ABI = -14,                /* ABI mismatch or malformed provider */
    CORDON_E_PROVIDER_UNAVAILABLE = -15, /* selection found no usable provider */
    CORDON_E_CHECKPOINT_INVALID = -16,
    CORDON_E_CHECKPOINT_NOT_FOUND = -17,
    CORDON_E_BUSY = -18,               /* the execution is locked by another call */
    CORDON_E_MAX_ = -18
};

/* Details of a failure. struct_size is set by the caller
 * (sizeof(struct cordon_error)); code, os_errno and message by the callee. */
struct cordon_error {
    uint32_t struct_size;
    int32_t code;        /* a CORDON_E_* value */
    int32_t os_errno;    /* errno behind the failure, or 0 */
    char message[512];   /* NUL-terminated, one line, names field and limit */
};

/* Initialise a caller-owned error struct. */
static inline void cordon_error_init(struct cordon_error *err)
{
    if (err == NULL)
        return;
    memset(err, 0, sizeof(*err));
    err->struct_size = (uint32_t)sizeof(*err);
}

/*
 * Fill err (if not NULL) and return code, so that a failing path can say
 * `return cordon_error_set(err, CORDON_E_INVALID, 0, "argv: ...");`.
 * The message is escaped (cordon/text.h), so a name from inside a sandbox
 * cannot put a control sequence or invalid UTF-8 into it; one that does
 * not fit is cut at a word (cordon_text_mark_cut) and ends in
 * CORDON_TEXT_CUT_MARK, never inside a word, a character or an escape.
 */
static inline int cordon_error_set(struct cordon_error *err, int code, int os_errno,
                                   const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int cordon_error_set(struct cordon_error *err, int code, int os_errno,
                                   const char *fmt, ...)
{
    char raw[2 * sizeof(err->message)];
    size_t len, used = 0;
    va_list ap;
    int n;

    if (err == NULL)
        return code;
    err->struct_size = (uint32_t)sizeof(*err);
    err->code = code;
    err->os_errno = os_errno;
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    if (n < 0)
        raw[0] = '\0';
    len = strlen(raw);
    cordon_text_escape(err->message, sizeof(err->message), raw, len, 0, &used);
    /* Longer than the message holds, before or after escaping: cut at a
     * word, marked, never inside one. */
    if (used < len || (n > 0 && (size_t)n >= sizeof(raw)))
        cordon_text_mark_cut(err->message, sizeof(err->message));
    return code;
}

/* Stable snake_case name of a code ("invalid_input", ...); unknown codes
 * read as "provider_error". */
static inline const char *cordon_error_name(int code)
{
    switch (code) {
    case CORDON_OK: return "ok";
    case CORDON_E_INVALID: return "invalid_input";
    case CORDON_E_NOMEM: return "out_of_memory";
    case CORDON_E_LIMIT: return "limit_exceeded";
    case CORDON_E_UNSAFE: return "unsafe_path";
    case CORDON_E_NOT_FOUND: return "not_found";
    case CORDON_E_EXISTS: return "already_exists";
    case CORDON_E_UNAVAILABLE: return "unavailable";
    case CORDON_E_UNSUPPORTED: return "unsupported";
    case CORDON_E_DENIED: return "denied";
    case CORDON_E_IO: return "io_error";
    case CORDON_E_TIMEOUT: return "timeout";
    case CORDON_E_CANCELLED: return "cancelled";
    case CORDON_E_ABI: return "abi_mismatch";
    case CORDON_E_PROVIDER_UNAVAILABLE: return "provider_unavailable";
    case CORDON_E_CHECKPOINT_INVALID: return "checkpoint_invalid";
    case CORDON_E_CHECKPOINT_NOT_FOUND: return "checkpoint_not_found";
    case CORDON_E_BUSY: return "busy";
    default: return "provider_error";
    }
}

#ifdef __cplusplus
}
#endif

#endif /* CORDON_ERROR_H */
