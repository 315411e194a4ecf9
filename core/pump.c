/* core: streaming a tar between a producer thread and a consumer (core/pump.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/pump.h"

static void *pump_main(void *p)
{
    struct cordon__pump *pump = p;

    cordon_error_init(&pump->err);
    pump->r = pump->produce(pump->arg, pump->fd, &pump->err);
    /* EOF for the consumer, also when the producer failed half-way */
    close(pump->fd);
    pump->fd = -1;
    return NULL;
}

/* Run produce(arg, write_end) on a thread; the caller consumes *ret_read_fd
 * and then calls cordon__pump_join. */
int cordon__pump_start(struct cordon__pump *pump,
                       int (*produce)(void *, int, struct cordon_error *), void *arg,
                       int *ret_read_fd, struct cordon_error *err)
{
    int fds[2];

    memset(pump, 0, sizeof(*pump));
    if (pipe2(fds, O_CLOEXEC) < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    pump->fd = fds[1];
    pump->produce = produce;
    pump->arg = arg;
    if (pthread_create(&pump->thread, NULL, pump_main, pump) != 0) {
        close(fds[0]);
        close(fds[1]);
        return cordon_error_set(err, CORDON_E_NOMEM, errno, "cannot start a thread");
    }
    *ret_read_fd = fds[0];
    return 0;
}

/* Join the producer; its error wins over the consumer's (it came first). */
int cordon__pump_join(struct cordon__pump *pump, int consumer_r, struct cordon_error *err)
{
    pthread_join(pump->thread, NULL);
    if (pump->r < 0) {
        if (err != NULL)
            *err = pump->err;
        return pump->r;
    }
    return consumer_r;
}
