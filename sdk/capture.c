/* sdk: bounded capture of stdout and stderr, and the run status names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/capture.h>

static const char *const status_names[] = {
    [CORDON_RUN_EXITED] = "exited",
    [CORDON_RUN_SIGNALED] = "signaled",
    [CORDON_RUN_TIMEOUT] = "timeout",
    [CORDON_RUN_OUTPUT_LIMIT] = "output_limit",
    [CORDON_RUN_CANCELLED] = "cancelled",
    [CORDON_RUN_OOM] = "oom",
    [CORDON_RUN_EXPIRED] = "expired",
    [CORDON_RUN_HOST_ERROR] = "host_error",
};

#define STATUS_COUNT (sizeof(status_names) / sizeof(status_names[0]))

const char *cordon_run_status_name(enum cordon_run_status status)
{
    if ((unsigned)status >= STATUS_COUNT)
        return "host_error";
    return status_names[status];
}

int cordon_run_status_parse(const char *name)
{
    if (name == NULL)
        return -1;
    for (size_t i = 0; i < STATUS_COUNT; i++)
        if (strcmp(name, status_names[i]) == 0)
            return (int)i;
    return -1;
}

void cordon_exec_outcome_clear(struct cordon_exec_outcome *outcome)
{
    if (outcome == NULL)
        return;
    free(outcome->out.data);
    free(outcome->err.data);
    memset(outcome, 0, sizeof(*outcome));
}

/*
 * One stream. The head fills first; everything after it goes to the tail,
 * which grows like a plain buffer until it reaches its capacity and then
 * wraps as a ring, overwriting its oldest bytes. Both grow on demand, so a
 * large retention costs nothing for a quiet process.
 */
struct stream {
    char *head;
    size_t head_len, head_alloc, head_cap;
    char *tail;
    size_t tail_len, tail_alloc, tail_cap;
    size_t tail_start;      /* index of the oldest tail byte once the ring is full */
    uint64_t tail_lost;     /* bytes the ring overwrote */
    uint64_t total;         /* bytes the process wrote */
    bool nomem;             /* a buffer could not grow; take reports it */
};

struct cordon_capture {
    struct stream streams[2];
    uint64_t budget;        /* 0 = none */
    uint64_t combined;      /* bytes of both streams, saturating */
};

int cordon_capture_new(size_t retention_bytes, uint64_t budget_bytes,
                       struct cordon_capture **ret_capture, struct cordon_error *err)
{
    struct cordon_capture *c;

    if (ret_capture == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "capture: ret_capture is NULL");
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "capture: out of memory");
    for (int i = 0; i < 2; i++) {
        c->streams[i].head_cap = retention_bytes / 2;
        c->streams[i].tail_cap = retention_bytes - retention_bytes / 2;
    }
    c->budget = budget_bytes;
    *ret_capture = c;
    return 0;
}

static void stream_reset(struct stream *s)
{
    size_t head_cap = s->head_cap, tail_cap = s->tail_cap;

    free(s->head);
    free(s->tail);
    memset(s, 0, sizeof(*s));
    s->head_cap = head_cap;
    s->tail_cap = tail_cap;
}

void cordon_capture_free(struct cordon_capture *capture)
{
    if (capture == NULL)
        return;
    stream_reset(&capture->streams[0]);
    stream_reset(&capture->streams[1]);
    free(capture);
}

/* Make *buf hold at least need bytes (need <= cap), doubling up to cap. */
static bool grow(char **buf, size_t *alloc, size_t need, size_t cap)
{
    size_t n = *alloc ? *alloc : 4096;
    char *p;

    if (need <= *alloc)
        return true;
    while (n < need)
        n = n > SIZE_MAX / 2 ? SIZE_MAX : n * 2;
    if (n > cap)
        n = cap;
    p = realloc(*buf, n);
    if (p == NULL)
        return false;
    *buf = p;
    *alloc = n;
    return true;
}

static void tail_append(struct stream *s, const char *p, size_t n)
{
    size_t cap = s->tail_cap, k;

    if (cap == 0 || n == 0) {
        s->tail_lost += n;
        return;
    }
    if (n >= cap) {
        /* Only the last cap bytes of this chunk survive. */
        if (!grow(&s->tail, &s->tail_alloc, cap, cap)) {
            s->nomem = true;
            return;
        }
        s->tail_lost += s->tail_len + (n - cap);
        memcpy(s->tail, p + (n - cap), cap);
        s->tail_len = cap;
        s->tail_start = 0;
        return;
    }
    if (s->tail_len < cap) {
        /* Not yet full: append linearly (tail_start is still 0). */
        k = cap - s->tail_len < n ? cap - s->tail_len : n;
        if (!grow(&s->tail, &s->tail_alloc, s->tail_len + k, cap)) {
            s->nomem = true;
            return;
        }
        memcpy(s->tail + s->tail_len, p, k);
        s->tail_len += k;
        p += k;
        n -= k;
    }
    /* Full ring: overwrite the oldest n bytes (n < cap), in at most two pieces. */
    s->tail_lost += n;
    while (n > 0) {
        k = cap - s->tail_start < n ? cap - s->tail_start : n;
        memcpy(s->tail + s->tail_start, p, k);
        s->tail_start = (s->tail_start + k) % cap;
        p += k;
        n -= k;
    }
}

static void stream_feed(struct stream *s, const char *p, size_t n)
{
    size_t k;

    if (s->nomem)
        return;
    if (s->head_len < s->head_cap) {
        k = s->head_cap - s->head_len < n ? s->head_cap - s->head_len : n;
        if (!grow(&s->head, &s->head_alloc, s->head_len + k, s->head_cap)) {
            s->nomem = true;
            return;
        }
        memcpy(s->head + s->head_len, p, k);
        s->head_len += k;
        p += k;
        n -= k;
    }
    tail_append(s, p, n);
}

bool cordon_capture_feed(struct cordon_capture *capture, int stream, const void *buf, size_t len)
{
    struct stream *s;
    uint64_t keep = len;

    if (capture == NULL || (stream != 1 && stream != 2))
        return false;
    s = &capture->streams[stream - 1];
    if (capture->budget != 0) {
        /* Retain only what still fits in the combined budget. */
        uint64_t room = capture->combined < capture->budget
                            ? capture->budget - capture->combined
                            : 0;
        if (keep > room)
            keep = room;
    }
    s->total = UINT64_MAX - s->total < len ? UINT64_MAX : s->total + len;
    capture->combined = UINT64_MAX - capture->combined < len ? UINT64_MAX : capture->combined + len;
    if (keep > 0 && buf != NULL)
        stream_feed(s, buf, (size_t)keep);
    return cordon_capture_over_budget(capture);
}

bool cordon_capture_over_budget(const struct cordon_capture *capture)
{
    return capture != NULL && capture->budget != 0 && capture->combined > capture->budget;
}

int cordon_capture_take(struct cordon_capture *capture, int stream,
                        struct cordon_stream_capture *ret, struct cordon_error *err)
{
    struct stream *s;
    size_t len, first;
    char *data;

    if (capture == NULL || ret == NULL || (stream != 1 && stream != 2))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "capture: stream must be 1 or 2 (got %d) and capture, ret set",
                                stream);
    s = &capture->streams[stream - 1];
    if (s->nomem)
        return cordon_error_set(err, CORDON_E_NOMEM, 0,
                                "capture: out of memory retaining stream %d", stream);
    /* head_len + tail_len <= retention, which fit in size_t when allocated */
    len = s->head_len + s->tail_len;
    /* One byte more for a NUL after the data: text readers may treat it
     * as a string, binary ones use len (the data may hold NULs itself). */
    data = malloc(len + 1);
    if (data == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0,
                                "capture: out of memory (%zu bytes of stream %d)", len, stream);
    /* The ring's oldest byte is at tail_start: copy from there, then wrap. */
    first = s->tail_len - s->tail_start;
    if (s->head_len > 0)
        memcpy(data, s->head, s->head_len);
    if (first > 0)
        memcpy(data + s->head_len, s->tail + s->tail_start, first);
    if (s->tail_start > 0)
        memcpy(data + s->head_len + first, s->tail, s->tail_start);

    data[len] = '\0';
    ret->data = data;
    ret->len = len;
    /* Only a gap between head and tail makes the split worth reporting. */
    ret->head_len = s->tail_lost > 0 ? s->head_len : len;
    ret->total_bytes = s->total;
    ret->dropped_bytes = s->total - len;
    stream_reset(s);
    return 0;
}
