/*
 * core (internal): what the comparison's two files share, and nothing else
 * uses: core/observe/compare.c (the verdict, the checks on what the observer saw
 * inside, and cordon__observe_compare putting them together for the kernel
 * that answered) and core/observe/compare-boundary.c (which kernel answered, and
 * the boundary seen from outside). core/observe/compare.h is the comparison's own
 * interface; this header is in no installed header's place and neither
 * library exports what it declares.
 */
#ifndef CORDON_SDK_COMPARE_INTERNAL_H
#define CORDON_SDK_COMPARE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* ---- core/observe/compare.c -------------------------------------------- */

/* The isolation axes, in the order of compare.c's axis_names. */
enum cordon__axis { CORDON__AX_PROCESS, CORDON__AX_HOST_FS, CORDON__AX_PRIVESC, CORDON__AX_SYSCALLS, CORDON__AX_COUNT };

/* The checks so far; an axis stays true only while every check behind it held. */
struct cordon__verdict {
    cJSON *checks;
    bool axis_ok[CORDON__AX_COUNT];
    bool oom;
};

/* One check of axis, its detail formatted as printf's; a failed one fails the axis. */
void cordon__compare_add_check(struct cordon__verdict *v, enum cordon__axis axis, const char *name, bool ok,
                               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The member key of obj, NULL when obj is no object or has none. */
const cJSON *cordon__compare_get(const cJSON *obj, const char *key);
/* -1 when key is missing or not a boolean, else 0 or 1. */
int cordon__compare_get_bool(const cJSON *obj, const char *key);
/* False when key is missing or not a number. */
bool cordon__compare_get_num(const cJSON *obj, const char *key, double *ret);
/* NULL when key is missing or not a string. */
const char *cordon__compare_get_str(const cJSON *obj, const char *key);

/* ---- core/observe/compare-boundary.c ----------------------------------- */

/* Which kernel answered the observer, in the order of compare.c's kind_names. */
enum cordon__kind { CORDON__KIND_NAMESPACES, CORDON__KIND_GVISOR, CORDON__KIND_VM };

struct cordon__boundary {
    const cJSON *view;           /* host_view.boundary */
    const cJSON *procs;          /* its processes: boundary ones first, then descendants */
    bool present;                /* the provider has the boundary operation */
    bool verified;               /* every boundary pid belongs to the sandbox observed */
    char why[320];               /* why not verified */
};

/* Which kernel answered, from the raw report, never from its "kind";
 * evidence says why. */
enum cordon__kind cordon__compare_kernel_kind(const cJSON *report, const cJSON *host, char *evidence, size_t size);
/* Whether the pids the provider named are plausibly the sandbox's (b->verified, else b->why). */
void cordon__compare_boundary_verify(struct cordon__boundary *b, enum cordon__kind kind, const cJSON *report,
                                     const cJSON *host);
/* The check "boundary_verified" of axis. */
void cordon__compare_check_boundary_verified(struct cordon__verdict *v, enum cordon__axis axis,
                                             const struct cordon__boundary *b);

/* A test of one process of the boundary: false with a reason in why. */
typedef bool (*cordon__proc_test)(const cJSON *p, const cJSON *host, char *why, size_t size);
/* One check over every process of the boundary; an unverified boundary fails it. */
void cordon__compare_check_each(struct cordon__verdict *v, enum cordon__axis axis, const char *check,
                                const struct cordon__boundary *b, const cJSON *host, cordon__proc_test test,
                                const char *all_ok);
bool cordon__compare_t_seccomp(const cJSON *p, const cJSON *host, char *why, size_t size);
bool cordon__compare_t_no_new_privs(const cJSON *p, const cJSON *host, char *why, size_t size);
bool cordon__compare_t_uid_not_root(const cJSON *p, const cJSON *host, char *why, size_t size);
bool cordon__compare_t_caps_not_host(const cJSON *p, const cJSON *host, char *why, size_t size);
bool cordon__compare_t_pid_ns(const cJSON *p, const cJSON *host, char *why, size_t size);
bool cordon__compare_t_mnt_ns(const cJSON *p, const cJSON *host, char *why, size_t size);
/* That the boundary serves its sandbox's system calls (gVisor's ptrace or
 * kvm platform, as the host sees them); why says how, or why not. */
bool cordon__compare_serves_syscalls(const struct cordon__boundary *b, char *why, size_t size);

#endif
