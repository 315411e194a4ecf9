/*
 * cordon-contract: the external-provider contract suite.
 *
 * main() (contract.c) turns the command line into environment variables,
 * because Criterion runs every test in a worker process that does not run
 * main() again. Each test then loads the provider itself, with a fresh
 * host state directory, through the same calls the host uses
 * (cordon__provider_load, cordon__drive_exec, cordon_observe_run), so that
 * what passes here behaves the same way under the host.
 *
 * The helpers below (support.c) assert on their own failures: a test reads
 * as the sequence of operations it checks. Everything a helper creates
 * (executions, temp dirs, host processes, the resource) is registered in
 * the per-test context and removed by contract_teardown, also when an
 * assertion ends the test early.
 */
#ifndef CORDON_CONTRACT_H
#define CORDON_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/capture.h>
#include <cordon/sdk/spec.h>

/* Environment variables that carry the command line to the workers. */
#define CONTRACT_ENV_PROVIDER "CORDON_CONTRACT_PROVIDER"
#define CONTRACT_ENV_CONFIG "CORDON_CONTRACT_CONFIG"
#define CONTRACT_ENV_IMAGE "CORDON_CONTRACT_IMAGE"
#define CONTRACT_ENV_INIT "CORDON_INIT"
#define CONTRACT_ENV_ALLOW_SYNTHETIC "CORDON_CONTRACT_ALLOW_SYNTHETIC"
#define CONTRACT_ENV_OBSERVER "CORDON_OBSERVER"

/* The host instance id the suite labels everything with: 32 lowercase hex
 * digits, the format a host passes ("cordon-contract" in ASCII, padded). */
#define CONTRACT_HOST_INSTANCE "636f72646f6e2d636f6e747261637400"

/* Limits of every execution the suite provisions. */
#define CONTRACT_CPUS 1
#define CONTRACT_MEMORY_BYTES (256ull << 20)
#define CONTRACT_DISK_BYTES (64ull << 20)
#define CONTRACT_PIDS 128
#define CONTRACT_RUNTIME_MS 60000ull
#define CONTRACT_MAX_OUTPUT_BYTES (1ull << 20)
/* The same six as a struct, the limits of contract_spec. */
extern const struct cordon_limits contract_limits;

/* Default timeout of one exec when a test does not set its own. */
#define CONTRACT_EXEC_TIMEOUT_MS 30000ull

#define CONTRACT_MAX_TRACKED 16

/* The per-test context; lives in the Criterion worker. */
struct contract {
    const char *provider_path;   /* absolute, from the environment */
    const char *observer_path;
    const char *init_path;
    const char *image;           /* NULL: the provider's default */
    char *config_json;           /* the caller's config merged with allow_unsafe_local */
    bool allow_synthetic;
    const char *state_dir;       /* borrowed from host */
    bool shared_state;           /* made by main(), removed there */
    /* This context's host services table, with its strings: never written
     * or freed once made, as provider.h promises a provider (support.c). */
    const struct cordon_host_v1 *host;
    struct cordon_provider_v1 vt;
    bool loaded;
    struct cordon_resource *resource;
    /* Everything to undo in teardown. */
    char *states[CONTRACT_MAX_TRACKED];
    char *temp_dirs[CONTRACT_MAX_TRACKED];
    pid_t pids[CONTRACT_MAX_TRACKED];
    char markers[CONTRACT_MAX_TRACKED][32]; /* host processes carrying one are killed */
};

extern struct contract contract;

/* Criterion .init / .fini of every test: read the environment, make the
 * state dir; undo everything. Teardown is idempotent. */
void contract_setup(void);
void contract_teardown(void);

/* Clean up, then mark the test skipped with a reason (Criterion does not
 * run .fini after a skip). */
void contract_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Load the provider (assert). */
void contract_load(void);
/* Probe with the suite's config and flags; returns the parsed facts
 * (cJSON_Delete) and, when ret_text is not NULL, the text (free). */
cJSON *contract_probe(uint32_t flags, char **ret_text);
/* True when facts.isolation[axis] is the boolean true. */
bool contract_claims(const cJSON *facts, const char *axis);
/* Load, probe fully, and skip the test when axis is not claimed true. */
cJSON *contract_require_claim(const char *axis);
/*
 * Containment before harm (contain.c). Every check that signals, fills,
 * forks or floods inside an execution does it only through these two:
 * the provider's claim is not enough, since the suite is run on providers
 * not trusted yet, and one that runs commands on the host while claiming
 * isolation would have them run against the host.
 */
#define CONTRACT_NOT_CONTAINED "not run: the sandbox is not contained"
#define CONTRACT_NOT_CONTAINED_EXIT 86
/* What a check is about to do inside an execution, and so what it proves
 * first. */
enum contract_harm {
    /* Signals processes: process_contained observed, and the script in
     * none of the suite's pid, mount and user namespaces. */
    CONTRACT_HARM_SIGNAL,
    /* Fills a file system: host_filesystem_restricted observed, those
     * namespaces, and a file the suite has just made out of sight. */
    CONTRACT_HARM_FILL,
};
/* contract_require_claim of harm's axis, then the suite's own observation
 * through the provider (one per test) must show that axis true, or the
 * check fails with CONTRACT_NOT_CONTAINED. Returns the facts
 * (cJSON_Delete). */
cJSON *contract_require_contained(enum contract_harm harm);
/* script behind a guard that exits CONTRACT_NOT_CONTAINED_EXIT, printing
 * CONTRACT_NOT_CONTAINED and why, unless it proves from inside that it
 * shares neither the pid nor the mount namespace of the suite (nor of PID
 * 1 as the suite sees it, nor, on the suite's kernel, the kernel's initial
 * ones), nor such a user namespace with a uid 0 or a capability; and, for
 * CONTRACT_HARM_FILL, that it cannot see a file the suite has just made.
 * malloc'd. */
char *contract_contained_script(enum contract_harm harm, const char *script);
/* Whether out (with its stdout text) is that guard's refusal. */
bool contract_refused_as_not_contained(const struct cordon_exec_outcome *out,
                                       const char *stdout_text);
/* contract_sh of the guarded script; the check fails with the guard's
 * words when it refused. */
void contract_sh_contained(const char *state, enum contract_harm harm, const char *script,
                           struct cordon_exec_outcome *ret);
/* The tag of the suite's fill files (contract/fill.h), and so their
 * names' start. */
#define CONTRACT_FILL_TAG "contract"
#define CONTRACT_FILL_PREFIX ".cordon-fill-" CONTRACT_FILL_TAG "-"
/* Remove CONTRACT_FILL_PREFIX* files at the top of /dev/shm, /tmp, /run
 * and $TMPDIR: what a fill through a provider that turned out to share
 * the suite's mounts left when the run was killed. Run once by main(); prints each
 * removal to stderr; returns how many. */
int contract_remove_stale_fills(void);
/* Ensure the resource (assert); idempotent within a test. */
void contract_ensure(void);
/* The suite's own observation through the provider (cordon_observe_run
 * with the suite's image; assert); parsed, cJSON_Delete. */
cJSON *contract_observe(void);
/* The check of that observation's isolation named check on axis, or NULL. */
const cJSON *contract_observed_check(const cJSON *observation, const char *axis, const char *check);

/* A provision spec written as the host writes one (a struct cordon_spec
 * through cordon_spec_print): id NULL a fresh random id; limits NULL the
 * suite's (contract_limits); the suite's image; network "none"; expires_at_ms
 * runtime_ms from now, also into *ret_expires_at_ms when not NULL.
 * Returns malloc'd JSON. */
char *contract_spec_with(const char *id, enum cordon_spec_layout layout,
                         const struct cordon_limits *limits, uint64_t *ret_expires_at_ms);
/* contract_spec_with the suite's limits. */
char *contract_spec(const char *id, enum cordon_spec_layout layout);
/* A fresh execution id ("contract-" + random hex) in a static buffer of
 * the caller (at least 48 bytes). */
void contract_new_id(char *buf, size_t size);
/* Provision (assert success); the state is tracked and terminated in
 * teardown. Returns the borrowed state JSON. */
const char *contract_provision(const char *id, enum cordon_spec_layout layout);
/* Provision without asserting; a returned state is tracked. */
int contract_try_provision(const char *spec_json, const char **ret_state, char *ret_msg,
                           size_t msg_size);
/* Forget a tracked state (after the test terminated it itself). */
void contract_untrack(const char *state);

/* A request for argv (NULL-terminated); malloc'd JSON. */
char *contract_request(const char *const *argv, uint64_t timeout_ms);

struct contract_exec {
    uint64_t timeout_ms;      /* 0: CONTRACT_EXEC_TIMEOUT_MS */
    uint64_t output_budget;   /* 0: CONTRACT_MAX_OUTPUT_BYTES */
    int cancel_fd;            /* -1: none */
    const char *request_json; /* NULL: built from argv */
    bool *ret_execution_ended; /* NULL, or set from the result's execution_ended */
};
void contract_exec_init(struct contract_exec *opts);

/* Run through cordon__drive_exec. Returns its code; ret is always filled
 * (status CORDON_RUN_HOST_ERROR on a refusal), msg gets the error. */
int contract_exec(const char *state, const char *const *argv, const struct contract_exec *opts,
                  struct cordon_exec_outcome *ret, char *ret_msg, size_t msg_size);
/* Run a shell command line; assert that the provider ran it. */
void contract_sh(const char *state, const char *script, struct cordon_exec_outcome *ret);
/* A NUL-terminated copy of what was retained of a stream (free). */
char *contract_stream_text(const struct cordon_stream_capture *stream);
/* text for a failure message, at most max bytes of it: cut after a whole
 * word (never inside one or inside a character), marked "…" and said how
 * much was left out. Written into buf, which holds max +
 * CONTRACT_CLIP_MARK bytes (assert); returns buf. */
const char *contract_clip(const char *text, size_t max, char *buf, size_t size);
/* Room for the mark: " … (N more bytes)" and the NUL. */
#define CONTRACT_CLIP_MARK 48
/* contract_clip to 300 bytes, in a buffer of the caller's block. */
#define CONTRACT_CLIP(text) \
    contract_clip((text), 300, (char[300 + CONTRACT_CLIP_MARK]){ 0 }, 300 + CONTRACT_CLIP_MARK)

/* A message built in pieces, in memory that grows: nothing is cut while
 * it is built (contract_clip cuts it, at a word, where it is shown).
 * Zero it to start; contract_text_clear frees it. */
struct contract_text {
    char *s;      /* NULL until something is added */
    size_t len;
};
/* Append the formatted piece (assert: out of memory). */
void contract_text_add(struct contract_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* What t holds; "" when nothing was added. */
const char *contract_text_str(const struct contract_text *t);
void contract_text_clear(struct contract_text *t);

/* A tar stream of the given files (path, content pairs; NULL-terminated)
 * in an anonymous temp file, rewound. Directories implied by the paths
 * are added first. */
int contract_tar_of(const char *const *files);
/* An anonymous, rewound temp file for tar streams. */
int contract_temp_fd(void);
/* import_tar of fd into dest; returns the provider's code. */
int contract_import(const char *state, const char *dest, int tar_fd, char *ret_msg,
                    size_t msg_size);
/* export_tar of src into a temp fd; returns the code and, on success, the
 * rewound fd in *ret_fd. */
int contract_export(const char *state, const char *src, int *ret_fd, char *ret_msg,
                    size_t msg_size);
/* Extract a tar fd with cordon_tar_extract_fd into a fresh temp dir
 * (tracked); returns its path (borrowed). Asserts success. */
const char *contract_extract(int tar_fd);

/* One entry of a tar stream, listed with libarchive (never extracted). */
struct contract_tar_entry {
    char *name;          /* "./" prefix removed */
    unsigned type;       /* AE_IFREG, AE_IFDIR, AE_IFLNK, ... */
    unsigned mode;       /* permission bits */
    char *link;          /* symlink target or NULL */
    char *data;          /* regular file bytes, NUL-terminated (bounded) */
    size_t size;
};
/* List every entry except the root ("." and ""). Returns the count or -1;
 * *ret is an array to free with contract_tar_entries_free. */
int contract_tar_list(int tar_fd, struct contract_tar_entry **ret);
void contract_tar_entries_free(struct contract_tar_entry *entries, int n);

/* A tar stream holding the observer as "cordon-observe", mode 0755, in a
 * rewound temp file (close it). Asserts. */
int contract_observer_tar(void);
/* A fresh temp dir under $TMPDIR or /tmp with mode (tracked). */
const char *contract_temp_dir(mode_t mode);
/* n random bytes as lowercase hex into buf (size >= 2n+1). */
void contract_random_hex(char *buf, size_t n);
/* A unique argument for sleep ("1000." + random digits) that marks a
 * process tree in /proc. Tracked: teardown kills every host process whose
 * command line still carries it, so that a provider that leaks processes
 * leaves nothing running after the test. */
void contract_sleep_marker(char *buf, size_t size);
/* Start a host process "sleep MARKER" (tracked, killed in teardown). */
pid_t contract_spawn_sleeper(const char *marker);
/* Host processes whose command line contains needle. */
int contract_count_processes(const char *needle);
/* Wait up to ms for no host process to match needle; returns what is left. */
int contract_wait_no_processes(const char *needle, unsigned ms);
/* SIGKILL every host process whose command line contains needle; returns
 * how many were signalled. */
int contract_kill_processes(const char *needle);

#endif
