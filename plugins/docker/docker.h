/*
 * docker.so internals, shared by its source files and by nothing else
 * (the object is built with -fvisibility=hidden and exports only its entry
 * point). Functions and variables shared across the files are dk__NAME
 * (declared here), types shared here dk_NAME; what one file keeps to
 * itself is static and unprefixed. A vtable operation is op_SLOT: static
 * beside the vtable in docker.c, dk__op_SLOT when another file holds it.
 *
 *   engine.c     the Docker Engine API over its unix socket (libcurl)
 *   container.c  provision: the spec, create and start, the layout, removal
 *   create.c     the container's create body and its read-back
 *   exec.c       exec through the exec API with the attached stream
 *   agent.c      exec through the resident agent (the container's init)
 *   archive.c    import/export through the archive API, with tar checks
 *   reap.c       what a failed start leaves of the runtime on the host
 *   config.c     the provider config, image references
 *   docker.c     probe, ensure, terminate, reclaim, the vtable
 */
#ifndef CORDON_PLUGIN_DOCKER_H
#define CORDON_PLUGIN_DOCKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/tar.h>
#include <cordon/sdk/uid.h>

#define DK_ID "docker"
#define DK_SOCKET_DEFAULT "/var/run/docker.sock"
#define DK_SOCKET_MAX 107u              /* sun_path holds 108 bytes with the NUL */
#define DK_DEFAULT_UID 65532u
#define DK_LABEL_EXECUTION "org.cordon.execution-id"
#define DK_LABEL_HOST "org.cordon.host"
#define DK_LABEL_PROVIDER "org.cordon.provider"
#define DK_WORKSPACE "/workspace"
#define DK_INIT_IN_CONTAINER "/run/cordon-init" /* the host's cordon-init, bound read-only */
#define DK_CONTAINER_ID_LEN 64u
#define DK_REPLY_MAX (4u << 20)         /* a buffered API reply (inspect, info, lists) */

/* ---- engine.c: the Engine API ------------------------------------------- */

/* Where the daemon is and which API version this provider speaks to it. */
struct dk_engine {
    char socket[DK_SOCKET_MAX + 1];
    char version[16];                  /* "1.41" once negotiated (by the first versioned
                                        * call), "" before; fixed once negotiated is set */
    const struct cordon_host_v1 *host; /* for debug logs of each call; may be NULL */
    bool negotiated;                   /* read and set with atomics */
};

/* Check and copy the socket path (absolute, at most DK_SOCKET_MAX bytes). */
int dk__engine_init(struct dk_engine *e, const char *socket, struct cordon_error *err);

/* Choose the API version: the daemon's own if it is older than ours, the
 * daemon's oldest if it dropped ours, refused when older than the oldest
 * we speak. GET /_ping answers the daemon's version in a header; GET
 * /version (slower: it asks containerd and the runtime) is used when the
 * daemon is newer than us or when ret_server (64 bytes, optional) wants
 * the daemon's release. Only for an engine no other thread uses (the
 * probe's own): a resource's engine negotiates on its first versioned call. */
int dk__engine_negotiate(struct dk_engine *e, char *ret_server, struct cordon_error *err);

/* One HTTP connection to the daemon, reused by the calls made through it.
 * Not shared between threads. */
struct dk_conn;
int dk__conn_open(struct dk_engine *e, struct dk_conn **ret_conn, struct cordon_error *err);
void dk__conn_close(struct dk_conn *conn);

/* One request. path is the part after the API version ("/containers/json?all=1"),
 * with its query already escaped. */
struct dk_req {
    const char *method;        /* GET, POST, PUT, DELETE, HEAD */
    const char *path;
    bool unversioned;          /* /_ping, /version */
    const char *json;          /* request body (application/json) or NULL */
    int upload_fd;             /* >= 0: a tar body of upload_len bytes read from it */
    uint64_t upload_len;       /* DK_UPLOAD_STREAM: read (not pread) to EOF, sent chunked */
    const int *upload_abort;   /* streamed: set (atomically) before EOF, the body is abandoned */
    int download_fd;           /* >= 0: a 2xx body goes to it, at most max_bytes */
    uint64_t max_bytes;        /* bound of the body (0: DK_REPLY_MAX) */
    long timeout_ms;           /* 0: the default of 120 s */
    long stall_ms;             /* > 0: give up when no byte moves for this long */
};
#define DK_UPLOAD_STREAM UINT64_MAX
void dk__req_init(struct dk_req *rq, const char *method, const char *path);

/* A reply: the status, the daemon's API-Version header and (unless
 * downloaded) the body, NUL-terminated. */
struct dk_reply {
    long status;
    char api_version[16];
    char *body;
    size_t len;
};
void dk__reply_clear(struct dk_reply *reply);

/* Send rq and read the reply. Returns 0 when the daemon answered, whatever
 * the status; CORDON_E_UNAVAILABLE (naming the socket) when it could not be
 * reached; CORDON_E_LIMIT when the body passed its bound. */
int dk__conn_call(struct dk_conn *conn, const struct dk_req *rq, struct dk_reply *ret,
                  struct cordon_error *err);

/* The error of a non-2xx reply: 400 invalid, 404 not found, 409 exists,
 * else provider; the message is "what: the daemon answered N: message". */
int dk__reply_error(const struct dk_reply *reply, const char *what, struct cordon_error *err);

/*
 * A JSON call: send, then on 2xx parse the body (when ret_json is not NULL;
 * an empty body gives NULL), else fail with dk__reply_error. ret_status
 * (optional) is written in every case the daemon answered, so that a
 * caller can treat 404 as "already gone".
 */
int dk__api(struct dk_conn *conn, const char *method, const char *path, const char *body,
            const char *what, long *ret_status, cJSON **ret_json, struct cordon_error *err);

/* URL-escape s for a query parameter; malloc'd. */
char *dk__escape(const char *s);

/* An attached (hijacked) stream: the HTTP exchange is done, the socket
 * carries the process's multiplexed stdio both ways. */
struct dk_stream {
    void *curl;                /* CURL *, owns the socket */
    const char *socket;        /* the engine's, for messages */
    int fd;
    char *pending;             /* stream bytes read together with the headers */
    size_t pending_len;
};
/* POST path with body and "Upgrade: tcp"; accept 101 or 200. */
int dk__stream_open(struct dk_engine *e, const char *path, const char *body,
                    struct dk_stream *ret, struct cordon_error *err);
void dk__stream_close(struct dk_stream *s);
/* Non-blocking reads and writes: 0 with *ret_n bytes (0 and *ret_eof on
 * end of stream), 1 when the socket would block, or a negative code. */
int dk__stream_recv(struct dk_stream *s, void *buf, size_t len, size_t *ret_n, bool *ret_eof,
                    struct cordon_error *err);
int dk__stream_send(struct dk_stream *s, const void *buf, size_t len, size_t *ret_n,
                    struct cordon_error *err);

/* ---- config.c: the provider config ---------------------------------------- */

struct dk_config {
    char socket[DK_SOCKET_MAX + 1];
    char *image;               /* NULL: none configured */
    char *runtime;             /* NULL: the daemon's default runtime */
    uid_t uid;                 /* the sandbox user (config.user) */
    gid_t gid;
    bool pooled;               /* no config.user and root: a uid of the pool per execution */
    bool allow_unpinned;
    bool no_agent;             /* config.exec_agent false: every exec goes through the Engine API */
};

/* Parse the provider config (NULL: "{}"); clear with dk__config_clear. */
int dk__config_parse(const char *json, struct dk_config *ret, struct cordon_error *err);
void dk__config_clear(struct dk_config *cfg);
/* An image reference: NAME@sha256:<64 hex> or sha256:<64 hex> (pinned), or
 * any other reference when allow_unpinned. */
int dk__image_check(const char *field, const char *ref, bool allow_unpinned, bool *ret_pinned,
                    struct cordon_error *err);
/* True for exactly 64 lowercase hex digits (a digest, a container or exec id). */
bool dk__hex64(const char *s);

/* ---- docker.c: the resource, helpers -------------------------------------- */

struct cordon_resource {
    const struct cordon_host_v1 *host;
    struct dk_config cfg;
    struct dk_engine engine;
    char *spool_dir;           /* where import/export spool their streams */
    const char *init_path;     /* the host's cordon-init (absolute), borrowed from host */
};

/* One execution's state, parsed back from the state JSON provision wrote. */
struct dk_state {
    cJSON *doc;                /* owns the strings below */
    const char *execution_id;
    const char *container_id;  /* 64 hex digits */
    uid_t uid;
    gid_t gid;
    bool code_layout;
    struct cordon_limits limits;
    uint64_t expires_at_ms;
    bool agent;                /* the init is cordon-init --agent, reachable from the host */
    pid_t init_pid;            /* State.Pid, as the host numbers it (0: not recorded) */
    uint64_t init_start;       /* its start time (/proc/PID/stat field 22), against pid reuse */
};

/* CORDON_E_NOMEM with "what: out of memory". */
int dk__nomem(struct cordon_error *err, const char *what);
/* nanosleep for ms, resumed after a signal. */
void dk__sleep_ms(unsigned ms);
/* /proc/<pid>/<name> read whole into buf (size >= 1), NUL-terminated: its
 * length, or -1 when it cannot be opened or read. */
ssize_t dk__read_proc(pid_t pid, const char *name, char *buf, size_t size);

/* ---- container.c: provision and state ------------------------------------- */

/* The vtable's provision (provider.h): create, read back, start, lay out. */
int dk__op_provision(struct cordon_resource *res, const char *spec_json, char **ret_state_json,
                     struct cordon_error *err);
/* full: every field; otherwise only the ids (terminate works from any state). */
int dk__state_parse(const struct cordon_resource *res, const char *json, bool full,
                    struct dk_state *ret, struct cordon_error *err);
void dk__state_clear(struct dk_state *st);
/* Remove the container (force, with its anonymous volumes) and wait until
 * the daemon no longer knows it; gone already is success. */
int dk__container_remove(struct dk_conn *conn, const char *container_id, struct cordon_error *err);
/* Remove every container and volume labelled with execution_id and this host. */
int dk__remove_labelled(struct dk_conn *conn, const struct cordon_resource *res,
                        const char *execution_id, struct cordon_error *err);

/* The execution ids labelled on this host's containers and volumes, as a
 * JSON array (cJSON_Delete). */
int dk__list_labelled(struct dk_conn *conn, const struct cordon_resource *res, cJSON **ret_ids,
                      struct cordon_error *err);

/* A pidfd of the execution's init: st->init_pid, still started at
 * st->init_start (a reused pid is refused). CORDON_E_NOT_FOUND when it is gone. */
int dk__init_pin(const struct dk_state *st, int *ret_pidfd, struct cordon_error *err);

/* ---- create.c: the container asked for and read back ---------------------- */

/* What a spec asks for, parsed and checked before anything is created. */
struct dk_spec {
    struct cordon_spec in;     /* the spec as the sdk read it */
    const char *image;         /* in.image, else the config's */
    bool pinned;
    struct cordon_disk_split disk; /* resources.disk_bytes across /workspace, /tmp, /dev/shm */
    bool code_layout;
    uint64_t expires_at_ms;
    uid_t uid;                 /* who the execution runs as */
    gid_t gid;
};

/* "seccomp=<profile JSON>", the daemon's inline form of the profile; malloc'd. */
char *dk__seccomp_opt(void);
/* The host label of this host's containers and volumes ("unknown" without an id). */
const char *dk__host_label(const struct cordon_resource *res);
/* The body of POST /containers/create (malloc'd text; NULL when out of memory). */
char *dk__create_body(const struct cordon_resource *res, const struct dk_spec *sp,
                      uint64_t lifetime_ms, const char *seccomp);
/* Compare the container's inspect with what was asked, setting by setting:
 * CORDON_E_UNSUPPORTED naming the first one the daemon did not apply. */
int dk__verify(const struct cordon_resource *res, const struct dk_spec *sp,
               const char *seccomp, const cJSON *inspect, struct cordon_error *err);

/* ---- reap.c --------------------------------------------------------------- */

/*
 * After a failed start of container_id: wait a moment for the runtime's
 * containerd shim of that container to go by itself, then SIGKILL it and
 * every process below it. Returns how many processes were killed (0 when
 * none was left), or CORDON_E_PROVIDER when some still ran 10 s later.
 */
int dk__runtime_reap(const char *container_id, struct cordon_error *err);

/* ---- exec.c: the exec API ------------------------------------------------- */

#define DK_OOM_EXIT 137            /* 128 + SIGKILL */

/* An exec request as read (the sdk's), and what exec makes of it here. */
struct dk_request {
    struct cordon_exec_request req;   /* the request as read */
    cJSON *body;               /* the exec create body being built */
    char *workdir;
    char **dirs;               /* workspace_env directories to create, parents first */
    size_t ndirs;
    char *must_exist;          /* a workspace_env directory under source/ (not created) */
    uint64_t timeout_ms;
    struct cordon_env env;     /* env, then workspace_env over it */
};

/* The vtable's exec (provider.h): through the agent when the state has
 * one (agent.c), else the attached exec stream, cancel_fd removing the
 * whole container, the exit code or OOM read back. */
int dk__op_exec(struct cordon_resource *res, const char *state_json, const char *request_json,
                const struct cordon_exec_io *io, char **ret_result_json, struct cordon_error *err);
/* The request's workspace_env directories: must_exist checked, the others
 * made (one PUT, every parent with its own entry). */
int dk__make_dirs(const struct cordon_resource *res, struct dk_conn *conn,
                  const struct dk_state *st, const struct dk_request *rq,
                  struct cordon_error *err);
/* Whether the memory cgroup killed something in the container since
 * since_ms, by the daemon's events (looked up twice: they may trail). */
bool dk__oom_killed(struct dk_conn *conn, const char *container_id, uint64_t since_ms);
/* The result JSON (cordon_exec_result) for the host; folded: an exit
 * 128+N may have been signal N. */
int dk__exec_result(const struct cordon_host_v1 *host, const char *status, int code, int sig,
                    bool backstop, bool folded, char **ret, struct cordon_error *err);
/* The result of a command that was ended with its whole execution (the
 * container removed): cancelled, or the backstop's SIGKILL. */
int dk__exec_result_ended(const struct cordon_host_v1 *host, bool cancelled, bool folded,
                          char **ret, struct cordon_error *err);

/* ---- agent.c: exec through the resident agent ---------------------------- */

/* One exec through the agent, within remaining ms. *ret_used false (and 0)
 * when it cannot be: the command does not fit one message, or this
 * process may not take the init's channel; the caller uses the exec API. */
int dk__agent_exec(struct cordon_resource *res, const struct dk_state *st,
                   const struct dk_request *rq, const struct cordon_exec_io *io,
                   uint64_t remaining, bool *ret_used, char **ret, struct cordon_error *err);
/* The vtable's extend (provider.h): the init's clock moved through the
 * agent, then the state's deadline; unsupported without an agent. */
int dk__op_extend(struct cordon_resource *res, const char *state_json, uint64_t expires_at_ms,
                  char **ret_state_json, struct cordon_error *err);

/* ---- archive.c -------------------------------------------------------------- */

/* An anonymous read-write file in res->spool_dir (O_TMPFILE), for streams. */
int dk__spool_open(const struct cordon_resource *res, int *ret_fd, struct cordon_error *err);
/* CORDON_E_TIMEOUT for an archive call past its bounds, naming what and them. */
int dk__archive_timeout(const char *what, struct cordon_error *err);
/* PUT the tar in fd (all of it from offset 0: its length is where it ends)
 * at /workspace, telling the daemon never to replace a directory by a
 * non-directory or the reverse. what names a failure to find that length. */
int dk__archive_put(struct dk_conn *conn, const char *container_id, int fd, const char *what,
                    struct cordon_error *err);
/* n directory entries (paths[i] owned uids[i]:gids[i], modes[i]) written
 * to a spool and PUT as above. */
int dk__archive_put_dirs(const struct cordon_resource *res, struct dk_conn *conn,
                         const char *container_id, const char *const *paths, const uid_t *uids,
                         const gid_t *gids, const mode_t *modes, size_t n, const char *what,
                         struct cordon_error *err);
/* The same from a pipe read to its end (DK_UPLOAD_STREAM), abandoned when
 * *abort is set by then. */
int dk__archive_put_stream(struct dk_conn *conn, const char *container_id, int fd,
                           const int *abort, struct cordon_error *err);

/* The vtable's import_tar and export_tar (provider.h), through spools and
 * the filters above. */
int dk__op_import_tar(struct cordon_resource *res, const char *state_json, const char *dest,
                      int tar_fd, struct cordon_error *err);
int dk__op_export_tar(struct cordon_resource *res, const char *state_json, const char *src,
                      int tar_fd, struct cordon_error *err);
/* import_files (ABI 1.2): the named host files streamed as one tar into
 * the archive API, no spool. */
int dk__op_import_files(struct cordon_resource *res, const char *state_json, const char *dest,
                        const char *files_json, int data_fd, struct cordon_error *err);
/* export_files (ABI 1.2): only the named paths of the daemon's archive. */
int dk__op_export_files(struct cordon_resource *res, const char *state_json, const char *paths_json,
                        int tar_fd, struct cordon_error *err);

#endif
