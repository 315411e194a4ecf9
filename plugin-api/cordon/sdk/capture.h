/*
 * sdk: bounded capture of a process's stdout and stderr.
 *
 * One combined budget for both streams (exceeding it is a terminal status,
 * output_limit), and per-stream retention that keeps the first and the last
 * bytes of each stream (half the retention each) and counts what was
 * dropped between them. Binary-safe.
 */
#ifndef CORDON_SDK_CAPTURE_H
#define CORDON_SDK_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Terminal status of one process run. Fixed values, never renumbered. */
enum cordon_run_status {
    CORDON_RUN_EXITED = 0,       /* exited by itself; exit_code is valid */
    CORDON_RUN_SIGNALED = 1,     /* killed by a signal it did not get from us; signal is valid */
    CORDON_RUN_TIMEOUT = 2,      /* the deadline passed; the whole tree was killed */
    CORDON_RUN_OUTPUT_LIMIT = 3, /* the combined output budget was exceeded; tree killed */
    CORDON_RUN_CANCELLED = 4,    /* the caller's cancel fd fired; tree killed */
    CORDON_RUN_OOM = 5,          /* the memory limit killed it */
    CORDON_RUN_EXPIRED = 6,      /* the execution's lifetime ended */
    CORDON_RUN_HOST_ERROR = 7,   /* cordon or the mechanism failed */
};

/* "exited", "signaled", "timeout", "output_limit", "cancelled", "oom",
 * "expired", "host_error". */
CORDON_EXTERN const char *cordon_run_status_name(enum cordon_run_status status);
/* Inverse of the above; returns -1 for an unknown name. */
CORDON_EXTERN int cordon_run_status_parse(const char *name);

/* What was retained of one stream. data is malloc'd (free with free()). */
struct cordon_stream_capture {
    char *data;              /* head, then (if truncated) tail; a NUL follows, not counted in len */
    size_t len;              /* bytes in data */
    size_t head_len;         /* the first head_len bytes are the head; the rest is the tail */
    uint64_t total_bytes;    /* bytes the process wrote to the stream */
    uint64_t dropped_bytes;  /* total_bytes - len: dropped between head and tail */
};

/* The outcome of one run: the process runner's and the exec driver's. */
struct cordon_exec_outcome {
    enum cordon_run_status status;
    int exit_code;           /* valid for CORDON_RUN_EXITED, else -1 */
    int signal;              /* valid for CORDON_RUN_SIGNALED (and the kill signal otherwise), else 0;
                              * with CORDON_RUN_EXITED, N when the provider marked the exit
                              * 128+N "signal_folded": its mechanism reports a death by
                              * signal N that way too, and cannot say which it was */
    uint64_t duration_ms;
    struct cordon_stream_capture out;
    struct cordon_stream_capture err;
};

/* Free the buffers of an outcome and zero it; accepts a zeroed outcome. */
CORDON_EXTERN void cordon_exec_outcome_clear(struct cordon_exec_outcome *outcome);

/* An opaque capture of two streams. */
struct cordon_capture;

/* retention_bytes: kept per stream (head half + tail half), 0 keeps nothing.
 * budget_bytes: combined limit on both streams, 0 for none. */
CORDON_EXTERN int cordon_capture_new(size_t retention_bytes, uint64_t budget_bytes,
                                     struct cordon_capture **ret_capture, struct cordon_error *err);
CORDON_EXTERN void cordon_capture_free(struct cordon_capture *capture);

/* Account len bytes written to stream (1 = stdout, 2 = stderr). Returns
 * true once the combined total exceeds the budget; bytes past the budget
 * are counted but not retained. */
CORDON_EXTERN bool cordon_capture_feed(struct cordon_capture *capture, int stream,
                                       const void *buf, size_t len);
CORDON_EXTERN bool cordon_capture_over_budget(const struct cordon_capture *capture);

/* Move what was retained of stream (1 or 2) into *ret (overwriting it);
 * the capture keeps nothing of that stream afterwards. */
CORDON_EXTERN int cordon_capture_take(struct cordon_capture *capture, int stream,
                                      struct cordon_stream_capture *ret, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
