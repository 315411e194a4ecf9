/*
 * docker: the Docker Engine API over its unix socket, with libcurl
 * (loaded on the first call: curl-lazy.h).
 *
 * Plain calls go through one curl easy handle per dk_conn (so that a
 * sequence of calls reuses its connection); an attached exec stream is a
 * CONNECT_ONLY handle on which the HTTP upgrade is written and read by
 * hand, after which the socket carries the multiplexed stdio. Every reply
 * body is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>


#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include "plugins/docker/curl-lazy.h"
#include "plugins/docker/docker.h"

/* The API versions this provider was written and tested against. */
#define DK_API_MIN 125u           /* 1.25: Init, AutoRemove, Mounts, NanoCpus */
#define DK_API_MAX 141u           /* 1.41: Docker 20.10 */
#define DK_TIMEOUT_MS 120000L
#define DK_CONNECT_TIMEOUT_MS 10000L
#define DK_ERROR_BODY_MAX (64u << 10)
#define DK_STREAM_HEADER_MAX (16u << 10)
#define DK_STREAM_SETUP_MS 30000u

struct dk_conn {
    struct dk_engine *engine;
    CURL *curl;
};

/* The API version is chosen on the first versioned call of an engine, not
 * at ensure: an exec through the resident agent never reaches the daemon.
 * The negotiation runs on a copy, under no lock, so that a slow daemon
 * stalls only the calls that need its answer; two first calls may both
 * ask, and the first answer is kept. The lock guards the publication. */
static pthread_mutex_t version_lock = PTHREAD_MUTEX_INITIALIZER;

/* The engine's API version (at most 15 bytes), negotiated on first use. */
static int engine_version(struct dk_engine *e, char *ret, size_t size, struct cordon_error *err)
{
    struct dk_engine asked;
    int r;

    if (!__atomic_load_n(&e->negotiated, __ATOMIC_ACQUIRE)) {
        memset(&asked, 0, sizeof(asked));
        memcpy(asked.socket, e->socket, sizeof(asked.socket));
        asked.host = e->host;
        if ((r = dk__engine_negotiate(&asked, NULL, err)) < 0)
            return r;
        pthread_mutex_lock(&version_lock);
        if (!e->negotiated) {
            memcpy(e->version, asked.version, sizeof(e->version));
            __atomic_store_n(&e->negotiated, true, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&version_lock);
    }
    snprintf(ret, size, "%s", e->version);
    return 0;
}

int dk__engine_init(struct dk_engine *e, const char *socket, struct cordon_error *err)
{
    size_t len = strnlen(socket, DK_SOCKET_MAX + 1);

    if (socket[0] != '/' || len > DK_SOCKET_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "config.socket: \"%.*s\" must be an absolute path of at most "
                                "%u bytes",
                                cordon_text_fit(socket, 120), socket, DK_SOCKET_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)socket[i] < 0x20 || socket[i] == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "config.socket: control character in the path");
    memset(e, 0, sizeof(*e));
    memcpy(e->socket, socket, len + 1);
    return 0;
}

void dk__req_init(struct dk_req *rq, const char *method, const char *path)
{
    memset(rq, 0, sizeof(*rq));
    rq->method = method;
    rq->path = path;
    rq->upload_fd = -1;
    rq->download_fd = -1;
}

void dk__reply_clear(struct dk_reply *reply)
{
    if (reply == NULL)
        return;
    free(reply->body);
    memset(reply, 0, sizeof(*reply));
}

int dk__conn_open(struct dk_engine *e, struct dk_conn **ret_conn, struct cordon_error *err)
{
    struct dk_conn *conn;
    int r = dk__curl_load(err);

    if (r < 0)
        return r;
    conn = calloc(1, sizeof(*conn));
    if (conn == NULL)
        return dk__nomem(err, "engine");
    conn->engine = e;
    conn->curl = curl_easy_init();
    if (conn->curl == NULL) {
        free(conn);
        return dk__nomem(err, "engine: curl handle");
    }
    *ret_conn = conn;
    return 0;
}

void dk__conn_close(struct dk_conn *conn)
{
    if (conn == NULL)
        return;
    curl_easy_cleanup(conn->curl);
    free(conn);
}

/* Where a reply body goes while curl receives it. */
struct sink {
    CURL *curl;
    int fd;                     /* download target for a 2xx body, or -1 */
    char *buf;
    size_t len, cap;
    uint64_t max, downloaded;
    bool over;                  /* the body passed its bound */
    int write_errno;            /* writing to fd failed */
};

static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct sink *s = arg;
    size_t n = size * nmemb;
    long code = 0;

    /* The status is known once the headers are in: an error's body is the
     * daemon's JSON message, never bytes for the caller's fd. */
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
    if (s->fd >= 0 && code >= 200 && code < 300) {
        if (n > s->max - s->downloaded) {
            s->over = true;
            return 0;
        }
        s->write_errno = -cordon_fs_write_all(s->fd, ptr, n);
        if (s->write_errno != 0)
            return 0;
        s->downloaded += n;
        return n;
    }
    /* Buffered: the whole body of a JSON reply, or the error of a download. */
    {
        uint64_t max = s->fd >= 0 ? DK_ERROR_BODY_MAX : s->max;

        if (n > max - s->len) {
            s->over = true;
            return 0;
        }
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        char *grown;

        while (cap < s->len + n + 1)
            cap *= 2;
        grown = realloc(s->buf, cap);
        if (grown == NULL) {
            s->write_errno = ENOMEM;
            return 0;
        }
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, ptr, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

/* Keep the API-Version header (the daemon's newest API version). */
static size_t header_line(char *line, size_t size, size_t nmemb, void *arg)
{
    struct dk_reply *reply = arg;
    size_t n = size * nmemb, k = sizeof("Api-Version:") - 1;

    if (n > k && strncasecmp(line, "Api-Version:", k) == 0) {
        size_t i = k, j = 0;

        while (i < n && line[i] == ' ')
            i++;
        while (i < n && j + 1 < sizeof(reply->api_version) && line[i] != '\r' && line[i] != '\n')
            reply->api_version[j++] = line[i++];
        reply->api_version[j] = '\0';
    }
    return n;
}

/* An upload read with pread from offset 0, so that a request can be sent
 * again from the same spool. */
struct source {
    int fd;
    uint64_t off, len;
    int read_errno;
    const int *abort;          /* DK_UPLOAD_STREAM: the writer gave up */
};

/* A stream from a pipe: its end is the body's, unless the writer gave up,
 * when the body is abandoned so that the daemon never takes it whole. */
static size_t source_stream(struct source *s, char *ptr, size_t want)
{
    ssize_t n;

    do
        n = read(s->fd, ptr, want);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        s->read_errno = errno;
        return CURL_READFUNC_ABORT;
    }
    if (n == 0 && s->abort != NULL && __atomic_load_n(s->abort, __ATOMIC_SEQ_CST) != 0)
        return CURL_READFUNC_ABORT;
    s->off += (uint64_t)n;
    return (size_t)n;
}

static size_t source_read(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct source *s = arg;
    size_t want = size * nmemb;
    ssize_t n;

    if (s->len == DK_UPLOAD_STREAM)
        return source_stream(s, ptr, want);
    if (s->off >= s->len)
        return 0;
    if (want > s->len - s->off)
        want = (size_t)(s->len - s->off);
    do
        n = pread(s->fd, ptr, want, (off_t)s->off);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        s->read_errno = n < 0 ? errno : EIO;
        return CURL_READFUNC_ABORT;
    }
    s->off += (uint64_t)n;
    return (size_t)n;
}

/* No HTTP answer at all: the daemon is down or went away mid-call. Either
 * way the message names the socket, which is what an operator checks. */
static int transport_error(const struct dk_engine *e, CURL *curl, CURLcode rc, const char *what,
                           const struct dk_req *rq, struct cordon_error *err)
{
    long os_errno = 0;

    curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
    if (rc == CURLE_OPERATION_TIMEDOUT && rq != NULL && rq->stall_ms > 0)
        return cordon_error_set(err, CORDON_E_TIMEOUT, (int)os_errno,
                                "%s: the daemon at %s did not finish within the bound of %ld ms, "
                                "or moved no byte for %ld ms", what, e->socket,
                                rq->timeout_ms > 0 ? rq->timeout_ms : DK_TIMEOUT_MS, rq->stall_ms);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return cordon_error_set(err, CORDON_E_TIMEOUT, (int)os_errno,
                                "%s: the daemon at %s did not answer within the bound of %ld ms",
                                what, e->socket,
                                rq != NULL && rq->timeout_ms > 0 ? rq->timeout_ms : DK_TIMEOUT_MS);
    if (rc == CURLE_COULDNT_CONNECT)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, (int)os_errno,
                                "socket: cannot connect to the Docker daemon at %s (%s%s%s); is "
                                "dockerd running?", e->socket, curl_easy_strerror(rc),
                                os_errno ? ": " : "", os_errno ? strerror((int)os_errno) : "");
    return cordon_error_set(err, CORDON_E_UNAVAILABLE, (int)os_errno,
                            "%s: the connection to the Docker daemon at %s failed: %s", what,
                            e->socket, curl_easy_strerror(rc));
}

int dk__conn_call(struct dk_conn *conn, const struct dk_req *rq, struct dk_reply *ret,
                  struct cordon_error *err)
{
    struct sink sink = { .curl = conn->curl, .fd = rq->download_fd };
    struct source source = { .fd = rq->upload_fd, .len = rq->upload_len,
                             .abort = rq->upload_abort };
    struct curl_slist *headers = NULL, *h;
    CURL *c = conn->curl;
    char url[2048], version[16] = "";
    uint64_t started;
    CURLcode rc;
    int r = 0;

    memset(ret, 0, sizeof(*ret));
    sink.max = rq->max_bytes != 0 ? rq->max_bytes : DK_REPLY_MAX;
    if (!rq->unversioned && (r = engine_version(conn->engine, version, sizeof(version), err)) < 0)
        return r;
    if (snprintf(url, sizeof(url), "http://localhost%s%s%s", rq->unversioned ? "" : "/v",
                 version, rq->path) >= (int)sizeof(url))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "engine: request path over %zu bytes",
                                sizeof(url));
    /* A reset keeps the live connection: the next call reuses it. */
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, conn->engine->socket);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, DK_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : DK_TIMEOUT_MS);
    /* A stalled stream (the daemon's archive process waiting on a file)
     * ends at the stall bound, not at the whole call's. */
    if (rq->stall_ms > 0) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (rq->stall_ms + 999) / 1000);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_line);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, ret);
    /* curl would wait for a "100 Continue" before a large body otherwise. */
    h = curl_slist_append(headers, "Expect:");
    if (h == NULL)
        goto nomem;
    headers = h;
    if (strcmp(rq->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (rq->upload_fd >= 0) {
        h = curl_slist_append(headers, "Content-Type: application/x-tar");
        if (h == NULL)
            goto nomem;
        headers = h;
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, source_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &source);
        if (rq->upload_len == DK_UPLOAD_STREAM) {
            /* Its length is known at its end only. */
            h = curl_slist_append(headers, "Transfer-Encoding: chunked");
            if (h == NULL)
                goto nomem;
            headers = h;
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)-1);
        } else {
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->upload_len);
        }
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    } else if (strcmp(rq->method, "POST") == 0 || rq->json != NULL) {
        /* A POST without a body still sends one, empty: the daemon wants a
         * Content-Length. */
        const char *body = rq->json != NULL ? rq->json : "";

        h = curl_slist_append(headers, "Content-Type: application/json");
        if (h == NULL)
            goto nomem;
        headers = h;
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        if (strcmp(rq->method, "POST") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    } else if (strcmp(rq->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

    started = cordon_now_monotonic_ms();
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
    cordon_host_logf(conn->engine->host, CORDON_LOG_DEBUG, DK_ID, "%s %.*s: %ld in %llu ms",
                     rq->method, cordon_text_fit(rq->path, 120), rq->path, ret->status,
                     (unsigned long long)(cordon_now_monotonic_ms() - started));
    if (sink.over) {
        r = cordon_error_set(
            err, CORDON_E_LIMIT, 0,
            "%s %.*s: the daemon's reply is longer than the limit of %llu "
            "bytes",
            rq->method, cordon_text_fit(rq->path, 200), rq->path,
            (unsigned long long)(rq->download_fd >= 0 && (ret->status < 200 || ret->status >= 300)
                                     ? DK_ERROR_BODY_MAX
                                     : sink.max));
    } else if (sink.write_errno != 0) {
        r = cordon_error_set(err, sink.write_errno == ENOMEM ? CORDON_E_NOMEM : CORDON_E_IO,
                             sink.write_errno, "%s %.*s: storing the reply: %s", rq->method,
                             cordon_text_fit(rq->path, 200), rq->path, strerror(sink.write_errno));
    } else if (source.read_errno != 0) {
        r = cordon_error_set(err, CORDON_E_IO, source.read_errno, "%s %.*s: reading the upload: %s",
                             rq->method, cordon_text_fit(rq->path, 200), rq->path,
                             strerror(source.read_errno));
    } else if (rc != CURLE_OK) {
        char what[256];

        snprintf(what, sizeof(what), "%s %.*s", rq->method, cordon_text_fit(rq->path, 200),
                 rq->path);
        r = transport_error(conn->engine, c, rc, what, rq, err);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    if (r < 0) {
        free(sink.buf);
        ret->status = 0;
        return r;
    }
    ret->body = sink.buf;
    ret->len = sink.len;
    return 0;
nomem:
    curl_slist_free_all(headers);
    return dk__nomem(err, "engine: request headers");
}

int dk__reply_error(const struct dk_reply *reply, const char *what, struct cordon_error *err)
{
    char text[320] = "";
    cJSON *doc = NULL;
    const char *msg;
    int code;

    if (reply->body != NULL && reply->len > 0)
        doc = cJSON_ParseWithLength(reply->body, reply->len);
    msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "message"));
    if (msg == NULL && reply->body != NULL)
        msg = reply->body;
    /* One line of printable text: the message ends up in a one-line error. */
    for (size_t i = 0; msg != NULL && msg[i] != '\0' && i + 1 < sizeof(text); i++)
        text[i] = (unsigned char)msg[i] < 0x20 ? ' ' : msg[i];
    switch (reply->status) {
    case 400: code = CORDON_E_INVALID; break;
    case 404: code = CORDON_E_NOT_FOUND; break;
    case 409: code = CORDON_E_EXISTS; break;
    default: code = CORDON_E_PROVIDER; break;
    }
    cJSON_Delete(doc);
    return cordon_error_set(err, code, 0, "%s: the daemon answered %ld: %s", what, reply->status,
                            text[0] != '\0' ? text : "(no message)");
}

int dk__api(struct dk_conn *conn, const char *method, const char *path, const char *body,
            const char *what, long *ret_status, cJSON **ret_json, struct cordon_error *err)
{
    struct dk_reply reply;
    struct dk_req rq;
    cJSON *doc = NULL;
    int r;

    dk__req_init(&rq, method, path);
    rq.json = body;
    r = dk__conn_call(conn, &rq, &reply, err);
    if (r < 0)
        return r;
    if (ret_status != NULL)
        *ret_status = reply.status;
    if (reply.status < 200 || reply.status >= 300) {
        r = dk__reply_error(&reply, what, err);
        goto out;
    }
    if (ret_json != NULL && reply.len > 0) {
        doc = cJSON_ParseWithLength(reply.body, reply.len);
        if (doc == NULL) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                 "%s: the daemon's reply is not JSON", what);
            goto out;
        }
    }
    if (ret_json != NULL)
        *ret_json = doc;
    doc = NULL;
out:
    cJSON_Delete(doc);
    dk__reply_clear(&reply);
    return r;
}

/* Percent-encoding of everything but RFC 3986's unreserved characters, as
 * curl_easy_escape does, without loading libcurl for it. */
char *dk__escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(s), j = 0;
    char *e;

    if (len > (SIZE_MAX - 1) / 3 || (e = malloc(len * 3 + 1)) == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            e[j++] = (char)c;
        } else {
            e[j++] = '%';
            e[j++] = hex[c >> 4];
            e[j++] = hex[c & 15];
        }
    }
    e[j] = '\0';
    return e;
}

/* "1.41" as 141; 0 when malformed. */
static unsigned api_number(const char *v)
{
    unsigned major, minor;
    char tail;

    if (v == NULL || sscanf(v, "%u.%u%c", &major, &minor, &tail) != 2 || major > 9 || minor > 99)
        return 0;
    return major * 100 + minor;
}

/* One unversioned GET; the body parsed as JSON when ret_doc is not NULL. */
static int engine_get(struct dk_conn *conn, const char *path, struct dk_reply *ret,
                      cJSON **ret_doc, struct cordon_error *err)
{
    struct dk_req rq;
    int r;

    dk__req_init(&rq, "GET", path);
    rq.unversioned = true;
    rq.timeout_ms = 30000;
    r = dk__conn_call(conn, &rq, ret, err);
    if (r == 0 && ret->status != 200) {
        /* Something answers on the socket, but not as a usable daemon. */
        dk__reply_error(ret, path, err);
        if (err != NULL)
            err->code = CORDON_E_UNAVAILABLE;
        r = CORDON_E_UNAVAILABLE;
    }
    if (r == 0 && ret_doc != NULL)
        *ret_doc = cJSON_ParseWithLength(ret->body, ret->len);
    return r;
}

int dk__engine_negotiate(struct dk_engine *e, char *ret_server, struct cordon_error *err)
{
    struct dk_conn *conn = NULL;
    struct dk_reply reply = { 0 };
    cJSON *doc = NULL;
    unsigned theirs = 0, their_min = 0, use;
    int r;

    r = dk__conn_open(e, &conn, err);
    if (r < 0)
        return r;
    if (ret_server == NULL) {
        r = engine_get(conn, "/_ping", &reply, NULL, err);
        if (r < 0)
            goto out;
        theirs = api_number(reply.api_version);
        dk__reply_clear(&reply);
    }
    if (ret_server != NULL || theirs == 0 || theirs > DK_API_MAX) {
        r = engine_get(conn, "/version", &reply, &doc, err);
        if (r < 0)
            goto out;
        theirs = api_number(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc,
                                                                                    "ApiVersion")));
        their_min = api_number(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            doc, "MinAPIVersion")));
    }
    if (theirs == 0) {
        r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                             "GET /version: the daemon at %s names no ApiVersion", e->socket);
        goto out;
    }
    /* Our newest that the daemon knows; a daemon that dropped old versions
     * gets its oldest, whose requests keep the fields we use. */
    use = theirs < DK_API_MAX ? theirs : DK_API_MAX;
    if (their_min != 0 && use < their_min)
        use = their_min;
    if (use < DK_API_MIN) {
        r = cordon_error_set(err, CORDON_E_UNSUPPORTED, 0,
                             "socket: the daemon at %s speaks API %u.%02u, older than the oldest "
                             "this provider uses (%u.%02u)", e->socket, theirs / 100, theirs % 100,
                             DK_API_MIN / 100, DK_API_MIN % 100);
        goto out;
    }
    snprintf(e->version, sizeof(e->version), "%u.%u", use / 100, use % 100);
    __atomic_store_n(&e->negotiated, true, __ATOMIC_RELEASE);
    if (ret_server != NULL) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "Version"));

        snprintf(ret_server, 64, "%s", v != NULL ? v : "unknown");
    }
out:
    cJSON_Delete(doc);
    dk__reply_clear(&reply);
    dk__conn_close(conn);
    return r;
}

/* ---- attached streams --------------------------------------------------- */

/* Wait until fd is ready for events or the deadline passes. */
static int stream_wait(int fd, short events, uint64_t deadline, const char *what,
                       struct cordon_error *err)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = events };
        uint64_t now = cordon_now_monotonic_ms();
        int n;

        if (now >= deadline)
            return cordon_error_set(err, CORDON_E_TIMEOUT, 0, "%s: the daemon did not answer "
                                    "within %u ms", what, DK_STREAM_SETUP_MS);
        n = poll(&p, 1, (int)(deadline - now));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cordon_error_set(err, CORDON_E_IO, errno, "%s: poll: %s", what,
                                    strerror(errno));
        if (n > 0)
            return 0;
    }
}

/* curl_easy_send/recv on the CONNECT_ONLY handle: the socket is
 * non-blocking, so both report "would block" instead of waiting. */
int dk__stream_send(struct dk_stream *s, const void *buf, size_t len, size_t *ret_n,
                    struct cordon_error *err)
{
    size_t n = 0;
    CURLcode rc = curl_easy_send(s->curl, buf, len, &n);

    if (rc == CURLE_AGAIN)
        return 1;
    if (rc != CURLE_OK)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "exec stream: sending to the Docker daemon at %s failed: %s",
                                s->socket, curl_easy_strerror(rc));
    *ret_n = n;
    return 0;
}

int dk__stream_recv(struct dk_stream *s, void *buf, size_t len, size_t *ret_n, bool *ret_eof,
                    struct cordon_error *err)
{
    size_t n = 0;
    CURLcode rc;

    *ret_eof = false;
    if (s->pending_len > 0) {
        n = len < s->pending_len ? len : s->pending_len;
        memcpy(buf, s->pending, n);
        memmove(s->pending, s->pending + n, s->pending_len - n);
        s->pending_len -= n;
        *ret_n = n;
        return 0;
    }
    rc = curl_easy_recv(s->curl, buf, len, &n);
    if (rc == CURLE_AGAIN)
        return 1;
    if (rc != CURLE_OK)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                "exec stream: the connection to the Docker daemon at %s broke: %s",
                                s->socket, curl_easy_strerror(rc));
    *ret_n = n;
    *ret_eof = n == 0;
    return 0;
}

void dk__stream_close(struct dk_stream *s)
{
    if (s == NULL)
        return;
    if (s->curl != NULL)
        curl_easy_cleanup(s->curl);
    free(s->pending);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

/* Send all of buf before the deadline. */
static int stream_send_all(struct dk_stream *s, const char *buf, size_t len, uint64_t deadline,
                           struct cordon_error *err)
{
    while (len > 0) {
        size_t n = 0;
        int r = dk__stream_send(s, buf, len, &n, err);

        if (r < 0)
            return r;
        if (r == 1) {
            r = stream_wait(s->fd, POLLOUT, deadline, "exec stream: request", err);
            if (r < 0)
                return r;
            continue;
        }
        buf += n;
        len -= n;
    }
    return 0;
}

/* The status of "HTTP/1.x NNN ..." and the Content-Length, if any. */
static long parse_head(const char *head, long long *ret_length)
{
    const char *p;
    long status = 0;

    *ret_length = -1;
    if (sscanf(head, "HTTP/%*u.%*u %ld", &status) != 1)
        return 0;
    for (p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, "Content-Length:", 15) == 0)
            *ret_length = strtoll(p + 17, NULL, 10);
    return status;
}

/*
 * The daemon's answer to the upgrade: head holds head_len bytes, a NUL
 * after them, and "\r\n\r\n" among them. 101 or 200 leaves *ret_rest at
 * the first byte after the headers (the stream's first frames); any other
 * status is the error its JSON body says, bounded by Content-Length and
 * by what was read.
 */
static int stream_head(char *head, size_t head_len, char **ret_rest, struct cordon_error *err)
{
    struct dk_reply reply = { 0 };
    char *end = strstr(head, "\r\n\r\n") + 4;
    long long length;

    reply.status = parse_head(head, &length);
    if (reply.status == 101 || reply.status == 200) {
        *ret_rest = end;
        return 0;
    }
    /* An error reply carries its JSON body after the headers. */
    reply.body = end;
    reply.len = head_len - (size_t)(end - head);
    if (length >= 0 && (unsigned long long)length < reply.len)
        reply.len = (size_t)length;
    end[reply.len] = '\0';
    return dk__reply_error(&reply, "exec start", err);
}

int dk__stream_open(struct dk_engine *e, const char *path, const char *body,
                    struct dk_stream *ret, struct cordon_error *err)
{
    char version[16];
    struct dk_stream s = { .fd = -1, .socket = e->socket };
    uint64_t deadline = cordon_now_monotonic_ms() + DK_STREAM_SETUP_MS;
    char *request = NULL, *head = NULL, *end;
    size_t head_len = 0, blen = strlen(body);
    curl_socket_t sock = CURL_SOCKET_BAD;
    CURLcode rc;
    int r;

    r = dk__curl_load(err);
    if (r == 0)
        r = engine_version(e, version, sizeof(version), err);
    if (r < 0)
        return r;
    s.curl = curl_easy_init();
    head = malloc(DK_STREAM_HEADER_MAX + 1);
    if (s.curl == NULL || head == NULL) {
        r = dk__nomem(err, "exec stream");
        goto out;
    }
    curl_easy_setopt(s.curl, CURLOPT_UNIX_SOCKET_PATH, e->socket);
    curl_easy_setopt(s.curl, CURLOPT_URL, "http://localhost/");
    /* libcurl only connects; the upgrade is HTTP that curl does not speak. */
    curl_easy_setopt(s.curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s.curl, CURLOPT_CONNECTTIMEOUT_MS, DK_CONNECT_TIMEOUT_MS);
    rc = curl_easy_perform(s.curl);
    if (rc != CURLE_OK) {
        r = transport_error(e, s.curl, rc, "exec stream", NULL, err);
        goto out;
    }
    if (curl_easy_getinfo(s.curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK ||
        sock == CURL_SOCKET_BAD) {
        r = cordon_error_set(err, CORDON_E_PROVIDER, 0, "exec stream: no socket from libcurl");
        goto out;
    }
    s.fd = (int)sock;
    /* The upgrade asks the daemon to hand the connection over to the stream. */
    if (asprintf(&request, "POST /v%s%s HTTP/1.1\r\nHost: localhost\r\n"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                           "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n%s",
                 version, path, blen, body) < 0) {
        request = NULL;
        r = dk__nomem(err, "exec stream");
        goto out;
    }
    r = stream_send_all(&s, request, strlen(request), deadline, err);
    if (r < 0)
        goto out;
    /* Read until the end of the headers; what follows is the stream. */
    for (;;) {
        size_t n = 0;
        bool eof = false;

        head[head_len] = '\0';
        end = strstr(head, "\r\n\r\n");
        if (end != NULL)
            break;
        if (head_len == DK_STREAM_HEADER_MAX) {
            r = cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                 "exec stream: the daemon's headers exceed %u bytes",
                                 DK_STREAM_HEADER_MAX);
            goto out;
        }
        r = dk__stream_recv(&s, head + head_len, DK_STREAM_HEADER_MAX - head_len, &n, &eof, err);
        if (r == 1) {
            r = stream_wait(s.fd, POLLIN, deadline, "exec stream: reply", err);
            if (r < 0)
                goto out;
            continue;
        }
        if (r < 0)
            goto out;
        if (eof) {
            r = cordon_error_set(err, CORDON_E_UNAVAILABLE, 0,
                                 "exec stream: the daemon at %s closed the connection before "
                                 "answering", e->socket);
            goto out;
        }
        head_len += n;
    }
    r = stream_head(head, head_len, &end, err);
    if (r < 0)
        goto out;
    /* The first frames may have come with the headers: keep them for recv. */
    s.pending_len = head_len - (size_t)(end - head);
    if (s.pending_len > 0) {
        s.pending = malloc(s.pending_len);
        if (s.pending == NULL) {
            r = dk__nomem(err, "exec stream");
            goto out;
        }
        memcpy(s.pending, end, s.pending_len);
    }
    *ret = s;
    memset(&s, 0, sizeof(s));
    s.fd = -1;
out:
    free(request);
    free(head);
    dk__stream_close(&s);
    return r;
}
