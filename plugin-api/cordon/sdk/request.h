/*
 * sdk: the exec request as a typed struct, read and written in one place.
 *
 * The request crosses the ABI as JSON text (provider-abi.md §7.5); the host
 * builds one, every provider reads one. cordon_exec_request_parse is the
 * one reading, with every rule of the document and the shared bounds of
 * cordon/sdk/bounds.h; cordon_exec_request_print the one writing, and it
 * refuses a request the parser would refuse, so the host never sends what
 * a provider must turn away. Inside a module the request is C fields.
 *
 * Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_REQUEST_H
#define CORDON_SDK_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/capture.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- environments -------------------------------------------------------- */

/* One variable. */
struct cordon_env_var {
    char *name;     /* [A-Za-z_][A-Za-z0-9_]*, malloc'd */
    char *value;    /* malloc'd */
};

/* Variables in document order, each name once. Caller-owned: zero it (or
 * cordon_env_init), free what it holds with cordon_env_clear. */
struct cordon_env {
    struct cordon_env_var *vars;   /* n entries, malloc'd */
    size_t n;
};

CORDON_EXTERN void cordon_env_init(struct cordon_env *env);
/* Free every variable; env is empty afterwards. NULL is fine. */
CORDON_EXTERN void cordon_env_clear(struct cordon_env *env);
/* The value of name, borrowed from env, or NULL. */
CORDON_EXTERN const char *cordon_env_get(const struct cordon_env *env, const char *name);
/* Set name to value (both copied): a name already there gets the new
 * value in its place. CORDON_E_INVALID for a bad name, CORDON_E_LIMIT past
 * CORDON_ENV_MAX variables or a value past CORDON_ARG_BYTES_MAX. */
CORDON_EXTERN int cordon_env_set(struct cordon_env *env, const char *name, const char *value,
                                 struct cordon_error *err);
/*
 * Read an environment object (borrowed; NULL or JSON null is empty) into
 * *ret, which must be empty: cordon_env_object_check's rules, and each name
 * once (cJSON keeps a repeated key; "<field>.<name>: appears twice").
 */
CORDON_EXTERN int cordon_env_from_json(const cJSON *obj, const char *field,
                                       struct cordon_env *ret, struct cordon_error *err);
/* The variables as a new JSON object (free with cJSON_Delete); NULL when
 * out of memory. */
CORDON_EXTERN cJSON *cordon_env_to_json(const struct cordon_env *env);
/* The variables as an envp for execve or the runner: env->n "NAME=VALUE"
 * strings in order and a NULL, in one malloc'd block (one free()); NULL
 * when out of memory. */
CORDON_EXTERN char **cordon_env_envp(const struct cordon_env *env);

/* ---- the exec request ---------------------------------------------------- */

/* One exec's request. Caller-owned: cordon_exec_request_init, then
 * cordon_exec_request_clear. */
struct cordon_exec_request {
    char **argv;                 /* argc strings and a NULL, each malloc'd; argv[0] non-empty */
    size_t argc;                 /* 1..CORDON_ARGV_MAX */
    char *cwd;                   /* normalised, relative to /workspace, "" the root; malloc'd */
    struct cordon_env env;       /* this exec's variables, over the spec's environment */
    struct cordon_env workspace_env; /* NAME: a normalised directory relative to /workspace */
    uint64_t timeout_ms;         /* the host's deadline, a provider's backstop; 0 none */
};

CORDON_EXTERN void cordon_exec_request_init(struct cordon_exec_request *rq);
/* Free what rq holds; rq is as after init. NULL is fine. */
CORDON_EXTERN void cordon_exec_request_clear(struct cordon_exec_request *rq);

/* Append one argument (copied) to rq->argv. CORDON_E_LIMIT past
 * CORDON_ARGV_MAX entries or CORDON_ARG_BYTES_MAX bytes. */
CORDON_EXTERN int cordon_exec_request_add_arg(struct cordon_exec_request *rq, const char *arg,
                                              struct cordon_error *err);

/*
 * Parse request text (borrowed, at most CORDON_REQUEST_MAX bytes) into
 * *ret, which must be as after init; written only on success. The rules,
 * each refusal naming the field and the limit:
 *   argv           required, 1..CORDON_ARGV_MAX strings, each at most
 *                  CORDON_ARG_BYTES_MAX bytes, argv[0] non-empty;
 *   cwd            a string or null/absent (""), normalised with
 *                  cordon_path_normalize_dir: CORDON_E_UNSAFE for ".." or
 *                  an absolute path;
 *   env            an environment object or null/absent;
 *   workspace_env  likewise, each value a directory as cwd is, named
 *                  "workspace_env.<NAME>";
 *   timeout_ms     a whole number, or null/absent (0);
 *   together       argv, env and workspace_env at most
 *                  CORDON_ARGS_TOTAL_MAX bytes (each string with its NUL,
 *                  a variable as NAME=VALUE).
 * Other keys are ignored: a newer host may add optional ones. A malformed
 * document is CORDON_E_INVALID, a bound CORDON_E_LIMIT.
 */
CORDON_EXTERN int cordon_exec_request_parse(const char *json, struct cordon_exec_request *ret,
                                            struct cordon_error *err);

/* rq as request text into *ret_json (malloc'd, free()), with every key
 * present. Refuses, with the parser's error, a request the parser would
 * refuse. */
CORDON_EXTERN int cordon_exec_request_print(const struct cordon_exec_request *rq,
                                            char **ret_json, struct cordon_error *err);

/* ---- the exec result ----------------------------------------------------- */

/* Text of a result, as the host reads it. */
#define CORDON_RESULT_MAX (64u << 10)

/* One exec's result (provider-abi.md §7.6), as a provider reports it. */
struct cordon_exec_result {
    enum cordon_run_status status;  /* report exited, signaled, oom or cancelled */
    int exit_code;          /* with exited: 0..255 */
    int signal;             /* with signaled: 1..64 */
    bool signal_folded;     /* with exited 129..192: the mechanism reports a death by
                             * signal N as 128+N too, and cannot tell which it was */
    bool backstop_timeout;  /* the provider's own backstop deadline ended it */
    bool execution_ended;   /* to end the command the provider ended the whole execution
                             * (its mechanism cannot end one command alone): the host
                             * terminates the record and says so ("execution_ended") */
};

/*
 * Parse result text (borrowed, at most CORDON_RESULT_MAX bytes) into *ret,
 * written only on success: status one of enum cordon_run_status's names
 * (the ABI defines four; the others pass through), exit_code an integer
 * 0..255 with exited, signal 1..64 with signaled (with a status other than
 * exited a valid one is kept, anything else ignored), signal_folded true
 * only counts with an exit 129..192, backstop_timeout and execution_ended
 * only when true (optional keys are read leniently: another value of any
 * of them is ignored).
 * Every refusal is CORDON_E_INVALID naming "result_json.<key>".
 */
CORDON_EXTERN int cordon_exec_result_parse(const char *json, struct cordon_exec_result *ret,
                                           struct cordon_error *err);

/* r as result text in memory from host->alloc (exec's ret_result_json):
 * only the keys its status takes. Refuses, with the parser's error, a
 * result the parser would refuse. */
CORDON_EXTERN int cordon_exec_result_print_host(const struct cordon_host_v1 *host,
                                                const struct cordon_exec_result *r,
                                                char **ret_json, struct cordon_error *err);

/*
 * The result of a command the provider ran with the sdk's runner
 * (cordon/sdk/runner.h) on the host: exited, signaled, cancelled and oom
 * as the runner saw them; the runner's timeout (the provider's backstop,
 * which the host's own clock normally beats) as signaled SIGKILL with
 * backstop_timeout. Another status is CORDON_E_PROVIDER naming it.
 */
CORDON_EXTERN int cordon_exec_result_from_outcome(const struct cordon_exec_outcome *o,
                                                  struct cordon_exec_result *ret,
                                                  struct cordon_error *err);

/* How much later than the host's own clock a provider's backstop fires:
 * the host keeps the real deadline (cancel_fd) and is meant to win. */
#define CORDON_EXEC_BACKSTOP_SLACK_MS 1000u

/*
 * How long an exec may run by the provider's own clock, its backstop: what
 * is left of the execution's lifetime (expires_at_ms, wall-clock Unix ms,
 * against now_ms), or timeout_ms + CORDON_EXEC_BACKSTOP_SLACK_MS when the
 * request has a timeout (non-zero) that ends sooner. CORDON_E_TIMEOUT,
 * naming expires_at_ms and by how much, when the execution has expired:
 * the command must not start.
 */
CORDON_EXTERN int cordon_exec_backstop_ms(uint64_t expires_at_ms, uint64_t timeout_ms,
                                          uint64_t now_ms, uint64_t *ret_ms,
                                          struct cordon_error *err);

/*
 * Where one exec runs, for a provider whose workspace is a directory of
 * the host (trusted-local, provider-hello): what cordon_exec_plan_build
 * resolves a request against. Every member is borrowed.
 */
struct cordon_exec_place {
    int ws_fd;                          /* the workspace directory */
    const char *ws_path;                /* its absolute path, as the command sees it */
    const char *path;                   /* PATH, set first; NULL for none */
    const struct cordon_env *env;       /* the spec's environment; NULL for none */
    bool code_layout;                   /* layout "code": source/ is read-only */
    bool chown;                         /* directories made are uid:gid's */
    uid_t uid;
    gid_t gid;
};

/* One request resolved for a runner. Caller-owned: zero it; clear frees. */
struct cordon_exec_plan {
    struct cordon_exec_request req;     /* as parsed */
    char **envp;                        /* cordon_env_envp's: one block */
    char *cwd;                          /* absolute, malloc'd */
};

/*
 * Parse request_json (cordon_exec_request_parse) and resolve it against
 * place into *ret (written only on success): cwd must be an existing
 * directory of the workspace, never reached through a link; the
 * environment is PATH, the spec's, the request's, then each workspace_env
 * directory, made (uid:gid's with chown; never inside a read-only
 * source/) and given as its absolute path.
 */
CORDON_EXTERN int cordon_exec_plan_build(const struct cordon_exec_place *place,
                                         const char *request_json, struct cordon_exec_plan *ret,
                                         struct cordon_error *err);
/* Free what plan holds; it is zeroed. NULL is fine. */
CORDON_EXTERN void cordon_exec_plan_clear(struct cordon_exec_plan *plan);

/*
 * Run plan (borrowed) as exec's command with cordon_runner_run: the host's
 * io (cordon_exec_stdio_open: a stdin that is no pipe relayed, /dev/null
 * for a stream the host did not pass), its cancel_fd, a backstop deadline
 * from expires_at_ms and the request's timeout (cordon_exec_backstop_ms),
 * child_setup(child_arg) in the child before execve; the result printed
 * into memory from host->alloc (exec's ret_result_json).
 */
CORDON_EXTERN int cordon_exec_plan_run(const struct cordon_host_v1 *host,
                                       const struct cordon_exec_plan *plan,
                                       const struct cordon_exec_io *io, uint64_t expires_at_ms,
                                       int (*child_setup)(void *arg), void *child_arg,
                                       char **ret_result_json, struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
