/*
 * core: the host side of one exec through a provider.
 *
 * The host owns output and time: this runs provider->exec on a thread of
 * its own with pipes as stdout and stderr and a cancel pipe, reads the
 * pipes into a bounded capture, keeps the deadline, and makes cancel_fd
 * readable on timeout, budget overflow or the caller's cancel. The
 * provider reports exit code, signal or OOM; this call turns the two views
 * into one typed status. The host's runs and its observation both use it.
 *
 * core (internal): the host's side of an exec, not a provider's; built
 * into libcordon and not exported.
 */
#ifndef CORDON_SDK_DRIVE_H
#define CORDON_SDK_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cordon/provider.h>
#include <cordon/sdk/capture.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cordon_drive_opts {
    uint32_t struct_size;                        /* sizeof(struct cordon_drive_opts) */
    const struct cordon_host_v1 *host;           /* frees the provider's result JSON */
    const struct cordon_provider_v1 *provider;   /* borrowed */
    struct cordon_resource *resource;            /* borrowed */
    const char *state_json;                      /* borrowed */
    const char *request_json;                    /* borrowed, the ABI's request_json */
    int stdin_fd;                                /* borrowed; -1: /dev/null. Never handed to
                                                  * the provider: relayed through a pipe of
                                                  * the drive's, read only during the exec */
    uint64_t timeout_ms;                         /* 0 = none */
    size_t retention_bytes;                      /* per stream */
    uint64_t output_budget;                      /* combined; 0 = none */
    int cancel_fd;                               /* caller's cancel, -1 = none */
    bool *ret_execution_ended;                   /* optional: set true when the provider's
                                                  * result says it ended the whole execution
                                                  * to end the command (execution_ended) */
    int stdout_sink_fd, stderr_sink_fd;          /* borrowed; -1 = none. Each stream's bytes,
                                                  * up to the budget, are also written there as
                                                  * they arrive. A sink that is not writable
                                                  * stops the reading of its stream (one chunk
                                                  * held), never the deadline or the cancel */
};

void cordon__drive_opts_init(struct cordon_drive_opts *opts);

/* Returns 0 when the provider ran the exec (read ret->status), or the
 * provider's negative code with its error copied into err (ret->status is
 * then CORDON_RUN_HOST_ERROR). Release ret with cordon_exec_outcome_clear. */
int cordon__drive_exec(const struct cordon_drive_opts *opts,
                                    struct cordon_exec_outcome *ret, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
