/*
 * cordon-observe (internal): what the observer's files share, and nothing
 * else uses: inside/cordon-observe.c (the options, the report and the
 * observations of what the sandbox lets it see), inside/observer-json.c (the
 * bounded JSON writer), inside/observer-privileges.c (its ids, capabilities,
 * no_new_privs and seccomp) and inside/observer-syscalls.c (the system calls
 * and socket families tried). Linked only into the static cordon-observe.
 */
#ifndef CORDON_SDK_OBSERVER_H
#define CORDON_SDK_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/types.h>

#include "sdk/read-small.h"

#define CORDON__MAX_REPORT_BYTES (512u * 1024u)
#define CORDON__JW_MAX_DEPTH 16

/* ---- inside/observer-json.c ------------------------------------------------ */

/* A JSON document being written; failed once it would pass
 * CORDON__MAX_REPORT_BYTES, nest too deep or run out of memory. */
struct cordon__jw {
    char *buf;
    size_t len;
    size_t cap;
    unsigned depth;
    bool need_comma[CORDON__JW_MAX_DEPTH];
    bool failed;
};

/* Bytes as they are, outside any value. */
void cordon__jw_raw(struct cordon__jw *w, const char *s, size_t n);
/* An object ('{') or array ('['), and its end; key is NULL inside arrays. */
void cordon__jw_open(struct cordon__jw *w, const char *key, char bracket);
void cordon__jw_close(struct cordon__jw *w, char bracket);
/* A value under key (NULL inside arrays); a NULL string is null. */
void cordon__jw_string(struct cordon__jw *w, const char *key, const char *s);
void cordon__jw_string_n(struct cordon__jw *w, const char *key, const char *s, size_t n);
void cordon__jw_int(struct cordon__jw *w, const char *key, long long v);
void cordon__jw_uint(struct cordon__jw *w, const char *key, unsigned long long v);
void cordon__jw_bool(struct cordon__jw *w, const char *key, bool v);
void cordon__jw_null(struct cordon__jw *w, const char *key);
/* errno as a number plus its symbolic name, e.g. "errno": 1, "errno_name": "EPERM". */
void cordon__jw_errno(struct cordon__jw *w, int e);

/* ---- inside/cordon-observe.c ----------------------------------------------- */

/* What went wrong while observing, for the report's "errors". */
void cordon__note_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* All of buf to fd, through EINTR; 0 or -1 with errno. */
int cordon__write_all(int fd, const char *buf, size_t len);

/* ---- inside/observer-privileges.c ------------------------------------------ */

void cordon__observe_ids(struct cordon__jw *w);
void cordon__observe_status(struct cordon__jw *w);
void cordon__observe_prctl(struct cordon__jw *w);

/* ---- inside/observer-syscalls.c -------------------------------------------- */

void cordon__observe_syscalls(struct cordon__jw *w);
void cordon__observe_sockets(struct cordon__jw *w);

/* ---- inside/observer-limits.c ---------------------------------------------- */

/* --limits (argv[0] is "--limits") and --flood BYTES: exit statuses as main's. */
int cordon__limits_main(int argc, char **argv);
int cordon__flood_main(const char *bytes);

/* ---- inside/observer-reach.c ----------------------------------------------- */

/* "reach": PID 1's limits and the processes this exec did not start. */
void cordon__observe_reach(struct cordon__jw *w);
/* --attack-pid1 HOST_PID_NS, for the contract suite; the exit status. */
int cordon__attack_pid1(const char *host_pid_ns);

#endif
