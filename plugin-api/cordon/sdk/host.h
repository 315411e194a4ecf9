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

/*
 * A provider's ensure, health_check, release, terminate, reclaim and
 * list_executions, defined as prefix_ensure and so on around its own
 * functions, with the checks of their arguments that every provider makes
 * (CORDON_E_INVALID "ensure: host and ret_resource required",
 * "health_check: resource required" and so on; an execution id of the
 * grammar for reclaim):
 *
 *     make(host, config_json, ret_resource, err)   ensure
 *     health(resource, err)                        health_check
 *     drop(resource)                               release (then 0)
 *     terminate(resource, state_json, err)         terminate
 *     reclaim(resource, execution_id, err)         reclaim
 *     list(resource, ret_ids_json, err)            list_executions
 *
 * Using it needs <cordon/sdk/bounds.h> too (cordon_execution_id_check).
 */
#define CORDON_LIFECYCLE_OPS(prefix, make, health, drop, terminate, reclaim, list)                 \
    static int prefix##_ensure(const struct cordon_host_v1 *host_, const char *config_,          \
                               struct cordon_resource **ret_, struct cordon_error *err_)         \
    {                                                                                            \
        if (host_ == NULL || ret_ == NULL)                                                       \
            return cordon_error_set(err_, CORDON_E_INVALID, 0,                                   \
                                    "ensure: host and ret_resource required");                   \
        return make(host_, config_, ret_, err_);                                                 \
    }                                                                                            \
    static int prefix##_health_check(struct cordon_resource *res_, struct cordon_error *err_)    \
    {                                                                                            \
        if (res_ == NULL)                                                                        \
            return cordon_error_set(err_, CORDON_E_INVALID, 0, "health_check: resource required"); \
        return health(res_, err_);                                                               \
    }                                                                                            \
    static int prefix##_release(struct cordon_resource *res_, struct cordon_error *err_)         \
    {                                                                                            \
        (void)err_;                                                                              \
        drop(res_);                                                                              \
        return 0;                                                                                \
    }                                                                                            \
    static int prefix##_reclaim(struct cordon_resource *res_, const char *id_,                   \
                                struct cordon_error *err_)                                       \
    {                                                                                            \
        int r_ = res_ == NULL ? cordon_error_set(err_, CORDON_E_INVALID, 0,                     \
                                                 "reclaim: resource required")                   \
                              : cordon_execution_id_check("execution_id", id_, err_);            \
                                                                                                 \
        return r_ < 0 ? r_ : reclaim(res_, id_, err_);                                           \
    }                                                                                            \
    static int prefix##_terminate(struct cordon_resource *res_, const char *state_,              \
                                  struct cordon_error *err_)                                     \
    {                                                                                            \
        if (res_ == NULL)                                                                        \
            return cordon_error_set(err_, CORDON_E_INVALID, 0, "terminate: resource required");  \
        return terminate(res_, state_, err_);                                                    \
    }                                                                                            \
    static int prefix##_list_executions(struct cordon_resource *res_, char **ret_,               \
                                        struct cordon_error *err_)                               \
    {                                                                                            \
        if (res_ == NULL || ret_ == NULL)                                                        \
            return cordon_error_set(err_, CORDON_E_INVALID, 0,                                   \
                                    "list_executions: resource and ret_ids_json required");      \
        return list(res_, ret_, err_);                                                           \
    }

#ifdef __cplusplus
}
#endif
#endif
