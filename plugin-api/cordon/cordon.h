/*
 * libcordon: the host library behind the `cordon` command.
 *
 * Integrators link it and speak JSON: a request object in, a result object
 * out, the same documents `cordon ... --request FILE --json` reads and
 * prints (cordon(1), json.md).
 */
#ifndef CORDON_CORDON_H
#define CORDON_CORDON_H

#include <stdbool.h>
#include <stdint.h>
#include <cordon/error.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A host context: state directory, provider search path, loaded
 * providers (never unloaded), the services table handed to them. */
struct cordon_ctx;

struct cordon_ctx_opts {
    uint32_t struct_size;          /* sizeof(struct cordon_ctx_opts) */
    const char *state_dir;         /* NULL: $CORDON_STATE_DIR, else /var/lib/cordon (root) or
                                      $XDG_STATE_HOME/cordon, ~/.local/state/cordon */
    const char *config_path;       /* JSON config file; NULL: none */
    const char *observer_path;     /* NULL: $CORDON_OBSERVER, else the installed cordon-observe */
    bool fresh;                    /* bypass the probe cache */
};

/* Create a context; creates the state directory (0700) if missing. Every
 * string in opts is copied. Free with cordon_ctx_free. */
CORDON_EXTERN int cordon_ctx_new(const struct cordon_ctx_opts *opts, struct cordon_ctx **ret_ctx,
                                 struct cordon_error *err);
CORDON_EXTERN void cordon_ctx_free(struct cordon_ctx *ctx);

/* Free a document (char *) that a cordon_*_json call returned. The same as
 * free(3) in C; a binding that cannot be sure it shares libcordon's
 * allocator (ctypes, another runtime) frees with this. NULL is fine. */
CORDON_EXTERN void cordon_free(void *p);

/* {"providers": [{"provider_id", "path", "loaded", "version", "kinds",
 * "error"}]} for every provider .so on the search path. Loads them all. */
CORDON_EXTERN int cordon_providers_json(struct cordon_ctx *ctx, char **ret_json,
                                        struct cordon_error *err);

/* Probe the named providers (all installed ones when ids is NULL or
 * empty); config_json (may be NULL) is merged over each one's base config.
 * {"probes": [facts...]}; a provider that cannot be loaded or probed gets
 * {"provider_id", "available": false, "reason", "error"}. */
CORDON_EXTERN int cordon_probe_json(struct cordon_ctx *ctx, const char *const *ids,
                                    const char *config_json, char **ret_json,
                                    struct cordon_error *err);

/*
 * The code-execution flow (json.md §5, §6): grant, select, ensure,
 * provision, land, run, collect, terminate, release, close. Returns 0
 * whenever a result document was produced — also for a refused request
 * ("status": "blocked") or a failing program — and a negative code only
 * when not even that was possible. ret_result_json is malloc'd.
 */
CORDON_EXTERN int cordon_run_json(struct cordon_ctx *ctx, const char *request_json,
                                  char **ret_result_json, struct cordon_error *err);

/* cordon_run_json with a cancel: cancel_fd (borrowed; -1 for none)
 * becoming readable ends the run with status "cancelled" (its command's
 * process group killed, what the run made torn down, the grant closed),
 * within the time a provider's exec takes to answer a cancel. Any
 * thread may make it readable (a pipe the caller writes, an eventfd). */
CORDON_EXTERN int cordon_run_cancellable_json(struct cordon_ctx *ctx, const char *request_json, int cancel_fd,
                                              char **ret_result_json, struct cordon_error *err);

/* The exit status the `cordon` command uses for a result document of
 * cordon_run_json: the program's own status, 124 timeout, 125 cordon's own
 * failure, 126 cannot invoke, 127 not found, 137 killed (oom,
 * output_limit, cancelled), 128+N for signal N; 125 too when result_json
 * is NULL or not a result. One mapping serves run and exec alike. */
CORDON_EXTERN int cordon_result_exit_status(const char *result_json);

/*
 * The execution-host lifecycle (json.md §7-§11). Every call returns 0 with
 * a result document in *ret_json (malloc'd), or a negative code with err
 * filled and nothing left behind. Documents: json.md.
 */

/* {"provider", "provider_config", "allow_unsafe_local", "allow_unpinned",
 * "image", "workspace": {"kind": "empty"} | {"kind": "git", "repository",
 * "revision"}, "resources": {all six}, "network": {"mode": "none"},
 * "environment", "metadata", "execution_id"} -> {"execution_id",
 * "provider_id", "expires_at", "expires_at_ms", "workspace"}. */
CORDON_EXTERN int cordon_provision_json(struct cordon_ctx *ctx, const char *request_json,
                                        char **ret_json, struct cordon_error *err);

/* {"command", "args", "cwd", "environment", "timeout_ms"}; stdin_fd (-1:
 * /dev/null) and cancel_fd (-1: none) are borrowed. The result has one
 * terminal "status"; timeout, output_limit and cancelled end the command's
 * process group and leave the execution ready (json.md §8). */
CORDON_EXTERN int cordon_exec_json(struct cordon_ctx *ctx, const char *execution_id,
                                   const char *request_json, int stdin_fd, int cancel_fd,
                                   char **ret_json, struct cordon_error *err);

/* cordon_exec_json that also writes each stream's bytes, as they arrive,
 * to stdout_fd and stderr_fd (borrowed; -1: that stream is not forwarded;
 * both may be the same fd). The streams stay apart: a stream's bytes go to
 * its own fd only. What passes counts against max_output_bytes as before:
 * bytes past the budget are not forwarded, and the command ends with
 * "output_limit". The result document is the same as cordon_exec_json's,
 * streams included. A blocking fd is written only once poll says it is
 * writable, PIPE_BUF bytes at a time (a pipe never blocks the call); a
 * non-blocking one as much as it takes. While an fd does not take its
 * bytes, its stream is not read (the sandbox's writes block: host memory
 * stays bounded, one 64 KiB chunk per stream), and the command's timeout
 * and cancel_fd still end it. After the command ended, what is held still
 * goes until the command's deadline, for 200 ms when it was stopped, or
 * until cancel_fd is readable; a write that fails (EPIPE...) stops that
 * stream's forwarding and the command runs on. Writing to a closed pipe
 * raises SIGPIPE as any write does: ignore it in the process. */
CORDON_EXTERN int cordon_exec_stream_json(struct cordon_ctx *ctx, const char *execution_id,
                                          const char *request_json, int stdin_fd, int stdout_fd,
                                          int stderr_fd, int cancel_fd, char **ret_json,
                                          struct cordon_error *err);

/* metadata_json may be NULL. -> the checkpoint's manifest. */
CORDON_EXTERN int cordon_checkpoint_json(struct cordon_ctx *ctx, const char *execution_id,
                                         const char *metadata_json, char **ret_json,
                                         struct cordon_error *err);

/* {"provider", "provider_config", "image", "execution_id",
 * "allow_unsafe_local"} (all optional) -> as provision, plus
 * "restored_from". */
CORDON_EXTERN int cordon_restore_json(struct cordon_ctx *ctx, const char *checkpoint_id,
                                      const char *request_json, char **ret_json,
                                      struct cordon_error *err);

/* {"runtime_ms": N}: the execution's deadline becomes now + N ms, sooner or
 * later than before, at most CORDON_LIMIT_RUNTIME_MAX (24 h) after the
 * execution's creation, wherever the sandbox enforces it (the provider's
 * extend). -> {"ok", "execution_id", "provider_id", "runtime_ms",
 * "expires_at_ms", "previous_expires_at_ms", "max_expires_at_ms"}. A
 * refusal (runtime_ms out of bounds or past the maximum, an expired, busy,
 * pooled or unknown execution, a provider without extend: unsupported)
 * names the field and the limit and changes nothing. json.md §11.1. */
CORDON_EXTERN int cordon_extend_json(struct cordon_ctx *ctx, const char *execution_id,
                                     const char *request_json, char **ret_json,
                                     struct cordon_error *err);

/* The checkpoints of the store, or only those taken of execution_id (not
 * NULL; the execution itself may be gone). -> {"checkpoints": [manifest or
 * {"checkpoint_id", "invalid"}, ...]}, sorted by id. */
CORDON_EXTERN int cordon_checkpoint_list_json(struct cordon_ctx *ctx, const char *execution_id,
                                              char **ret_json, struct cordon_error *err);

/* Remove a checkpoint -> {"ok": true, "checkpoint_id"}. Missing is
 * checkpoint_not_found; one a restore is reading is busy, and stays. */
CORDON_EXTERN int cordon_checkpoint_remove_json(struct cordon_ctx *ctx, const char *checkpoint_id,
                                                char **ret_json, struct cordon_error *err);

/* Idempotent: an execution already gone is success ("already_gone": true). */
CORDON_EXTERN int cordon_terminate_json(struct cordon_ctx *ctx, const char *execution_id,
                                        char **ret_json, struct cordon_error *err);

/* Destroy whatever any provider (or provider_id, when not NULL) holds for
 * execution_id, with or without its record. Idempotent. */
CORDON_EXTERN int cordon_reclaim_json(struct cordon_ctx *ctx, const char *execution_id,
                                      const char *provider_id, char **ret_json,
                                      struct cordon_error *err);

/* {"executions": [...]} */
CORDON_EXTERN int cordon_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);

/* Reclaim every execution whose record expired or whose cordon process
 * died mid-call, and every provider sandbox of this host without a
 * record. {"reclaimed": [...], "kept": N, "errors": [...]} */
CORDON_EXTERN int cordon_gc_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);

/* The exit status of `cordon exec` for its result document: the same
 * mapping as cordon_result_exit_status ("exited" is a run's "success",
 * "signaled" 128+N). */
CORDON_EXTERN int cordon_exec_exit_status(const char *result_json);

/* The warm pool (cordon pool): executions provisioned ahead, each claimed
 * by one run or provision whose provider, image, limits (and, for a
 * provision, environment) are the same, and destroyed after that use.
 * cordon_pool_fill_json tops up the pool of one such target: request is a
 * run request (docs/json.md section 5) or, with "for": "provision", a
 * provision request (section 7), plus "size" (required, 1..64) and
 * "ttl_ms" (how long each stays claimable; default 10 minutes, 1 s..24 h).
 * {"ok", "key", "provider_id", "size", "ready_before", "added": [...]}.
 * A refusal names the field and its bound and creates nothing. */
CORDON_EXTERN int cordon_pool_fill_json(struct cordon_ctx *ctx, const char *request_json, char **ret_json,
                                        struct cordon_error *err);
/* {"pools": [{"key", "provider_id", "image", "layout", "ready", "expired",
 * "executions": [...]}]}: the unclaimed pooled executions, by key. */
CORDON_EXTERN int cordon_pool_ls_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);
/* Destroy every unclaimed pooled execution: {"ok", "drained": [...], "errors": [...]}. */
CORDON_EXTERN int cordon_pool_drain_json(struct cordon_ctx *ctx, char **ret_json, struct cordon_error *err);

/* This library's release, "MAJOR.MINOR.PATCH" (the package's version, not
 * the soname's): a binding built for one release checks that the library
 * it loaded is at least that release. Static storage; never NULL. */
CORDON_EXTERN const char *cordon_version(void);

/*
 * Files in an execution's workspace (json.md §13). path is relative to
 * /workspace ("/workspace/<p>" is accepted too); an absolute path
 * elsewhere, a ".." component or control characters are refused before
 * anything runs. Bytes stream through a pipe: no call holds a file in
 * memory, and max_output_bytes does not apply; the execution's
 * disk_bytes bounds every file. A symbolic link in the sandbox is never
 * followed: read refuses one; write refuses one among the parents, and one
 * at the path itself is refused or replaced by the file, as the provider's
 * import_files does it, never written through.
 */

/* Write the bytes of data_fd (borrowed, read from its offset to its end;
 * a pipe is spooled to an unlinked file in the state directory first) as
 * the regular file path, replacing a regular file there, with permission
 * bits mode (at most 0777); missing parents are created. A write the
 * mechanism fails part-way is followed by `rm -f -- path` in the
 * execution, so that no start of the file stays. -> {"ok",
 * "execution_id", "path", "size", "mode"}. */
CORDON_EXTERN int cordon_files_write_json(struct cordon_ctx *ctx, const char *execution_id,
                                          const char *path, uint32_t mode, int data_fd,
                                          char **ret_json, struct cordon_error *err);

/* Write the bytes of the regular file path to out_fd (borrowed) as they
 * arrive. On failure part of the file may already be on out_fd: the
 * caller discards it (the cordon command writes --to FILE through a
 * temporary file it renames). -> {"ok", "execution_id", "path", "size",
 * "mode"}. */
CORDON_EXTERN int cordon_files_read_json(struct cordon_ctx *ctx, const char *execution_id,
                                         const char *path, int out_fd, char **ret_json,
                                         struct cordon_error *err);

/* List path (NULL, "" or "." for the workspace): a directory's entries,
 * one level, or the one entry of a file or link. -> {"ok",
 * "execution_id", "path", "type", "entries": [{"name", "type", "size",
 * "mode", "mtime", "target"}]}. */
CORDON_EXTERN int cordon_files_list_json(struct cordon_ctx *ctx, const char *execution_id,
                                         const char *path, char **ret_json,
                                         struct cordon_error *err);

/* Remove path (a directory with what it holds) by running `rm -r -- path`
 * in the execution through the ordinary exec. -> {"ok", "execution_id",
 * "path"}; a missing path is CORDON_E_NOT_FOUND. */
CORDON_EXTERN int cordon_files_remove_json(struct cordon_ctx *ctx, const char *execution_id,
                                           const char *path, char **ret_json,
                                           struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
