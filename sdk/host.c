/* sdk: helpers around the host's services table. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cordon/sdk/host.h>

char *cordon_host_strdup(const struct cordon_host_v1 *host, const char *s)
{
    size_t len;
    char *copy;

    if (host == NULL || host->alloc == NULL || s == NULL)
        return NULL;
    len = strlen(s);
    copy = host->alloc(len + 1);
    if (copy != NULL)
        memcpy(copy, s, len + 1);
    return copy;
}

void cordon_host_logf(const struct cordon_host_v1 *host, enum cordon_log_level level,
                      const char *provider_id, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int n;

    if (host == NULL || host->log == NULL)
        return;
    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(msg))
        msg[cordon_text_utf8_end(msg, sizeof(msg) - 1)] = '\0';
    host->log(level, provider_id, msg);
}

static uint64_t clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t cordon_now_monotonic_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

uint64_t cordon_now_wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}
