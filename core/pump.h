/*
 * core (internal): a tar streamed from a producer thread to a consumer
 * through a pipe (a git tree into an import, an export into the
 * checkpoint store), so that neither end holds the whole stream.
 */
#ifndef CORDON_CORE_PUMP_H
#define CORDON_CORE_PUMP_H

#include <pthread.h>
#include <cordon/error.h>

struct cordon__pump {
    pthread_t thread;
    int fd;                       /* the pipe end the producer writes */
    int (*produce)(void *arg, int fd, struct cordon_error *err);
    void *arg;
    int r;
    struct cordon_error err;
};

/* Run produce(arg, write_end) on a thread; the caller consumes *ret_read_fd
 * and then calls cordon__pump_join. */
int cordon__pump_start(struct cordon__pump *pump,
                       int (*produce)(void *, int, struct cordon_error *), void *arg,
                       int *ret_read_fd, struct cordon_error *err);
/* Join the producer; its error wins over the consumer's (it came first). */
int cordon__pump_join(struct cordon__pump *pump, int consumer_r, struct cordon_error *err);

#endif
