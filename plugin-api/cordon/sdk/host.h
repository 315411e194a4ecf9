/*
 * sdk: small helpers around the host's services table.
 */
#ifndef CORDON_SDK_HOST_H
#define CORDON_SDK_HOST_H

#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copy s into a buffer from host->alloc, for handing back to the host.
 * Returns NULL when s is NULL or memory runs out. */
CORDON_EXTERN char *cordon_host_strdup(const struct cordon_host_v1 *host, const char *s);

/* Log through host->log when the host offers one; fmt is printf-like. */
CORDON_EXTERN void cordon_host_logf(const struct cordon_host_v1 *host, enum cordon_log_level level,
                                    const char *provider_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Milliseconds on CLOCK_MONOTONIC and on the wall clock (CLOCK_REALTIME). */
CORDON_EXTERN uint64_t cordon_now_monotonic_ms(void);
CORDON_EXTERN uint64_t cordon_now_wall_ms(void);

#ifdef __cplusplus
}
#endif
#endif
