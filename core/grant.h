/*
 * core: task-workspace grants (the steps grant, land, collect and close of
 * json.md §6.1). The task workspace issues a grant for one call: a fresh
 * area <ws>/.cordon/grants/<id>/ with source/, build/, logs/, and the output
 * root <ws>/output/ that collected outputs land in. Executions never see the
 * task workspace itself in snapshot mode.
 */
#ifndef CORDON_CORE_GRANT_H
#define CORDON_CORE_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>
#include "core/bundle.h"

/* Access a grant gives to the task workspace. Fixed values. */
enum cordon__grant_mode {
    CORDON_GRANT_SNAPSHOT = 0,    /* inputs copied in; the workspace is not visible */
    CORDON_GRANT_READ_ONLY = 1,   /* not implemented in v1 */
    CORDON_GRANT_READ_WRITE = 2   /* not implemented in v1 */
};

/* Bounds of the files a grant copies (inputs in, outputs out). */
#define CORDON_GRANT_MAX_INPUTS 128
#define CORDON_GRANT_MAX_FILE_BYTES (16ull << 20)
#define CORDON_GRANT_MAX_TOTAL_BYTES (64ull << 20)

/* Bounds of outputs returned inline in the result document, when the run
 * has no task workspace of the caller's to collect into (json.md §6). The
 * result carries them as text or base64, so they are kept well below the
 * document's own bound. */
#define CORDON_GRANT_INLINE_MAX_FILE_BYTES (4ull << 20)
#define CORDON_GRANT_INLINE_MAX_TOTAL_BYTES (16ull << 20)

/* An open grant. Owns its strings and fds; closed with cordon__grant_close,
 * freed with cordon__grant_free. */
struct cordon__grant {
    char id[40];                  /* "grant-<24 hex random>" */
    enum cordon__grant_mode mode;
    char *workspace;              /* task workspace, absolute real path */
    int workspace_fd;
    char *area;                   /* <workspace>/.cordon/grants/<id>, absolute */
    int area_fd;
    int source_fd, build_fd, logs_fd, output_fd;   /* output_fd: <workspace>/output */
    bool closed;                  /* the area has been removed */
    size_t n_inputs;              /* inputs copied so far */
    uint64_t input_bytes;
};

/*
 * Issue a grant on task_workspace (borrowed; must exist and be a
 * directory; resolved with realpath). Creates <ws>/.cordon/grants/<id>/
 * (0700) with source/ build/ logs/, and <ws>/output/ (0755) when missing;
 * an output/ that is a symbolic link or not a directory is
 * CORDON_E_UNSAFE. Only CORDON_GRANT_SNAPSHOT is implemented: the other
 * modes are CORDON_E_UNSUPPORTED naming the mode. *ret is freed with
 * cordon__grant_free (after cordon__grant_close).
 */
int cordon__grant_open(const char *task_workspace, enum cordon__grant_mode mode,
                       struct cordon__grant **ret, struct cordon_error *err);

/*
 * Copy the host regular file host_path (borrowed) into source/input/<basename>
 * as a read-only snapshot (0444). A symbolic link (as the last component),
 * a non-regular file, a file over CORDON_GRANT_MAX_FILE_BYTES, more than
 * CORDON_GRANT_MAX_INPUTS inputs or CORDON_GRANT_MAX_TOTAL_BYTES in total,
 * and two inputs with one basename are refused.
 */
int cordon__grant_add_input(struct cordon__grant *g, const char *host_path,
                            struct cordon_error *err);

/*
 * Land bundle b (borrowed): write every file into source/<path> (parent
 * directories 0755, files 0444, or 0555 when executable) without following
 * links, then re-read each one and compare its sha256 with the bundle's
 * (a mismatch is CORDON_E_IO). A bundle file that would replace an input is
 * CORDON_E_EXISTS.
 */
int cordon__grant_write_source(struct cordon__grant *g, const struct cordon__bundle *b,
                               struct cordon_error *err);

/*
 * The grant's source root as import_files takes it (provider.h, ABI 1.1):
 * every regular file's bytes appended to data_fd, depth first, and
 * *ret_files_json (malloc'd) {"files": [{"path", "size", "mode"}, ...]} in
 * the same order. Links and special files are refused; the bundle and
 * input bounds apply.
 */
int cordon__grant_source_files(struct cordon__grant *g, int data_fd, char **ret_files_json,
                               struct cordon_error *err);

/*
 * Collect b's declared outputs from staging_dirfd (borrowed; the directory
 * the execution's output/ was extracted into) into the grant's output root.
 * Each declared output must be a regular file opened beneath staging_dirfd
 * without following any link: a symbolic link is CORDON_E_UNSAFE ("outputs:
 * result.txt is a symbolic link, not a regular file (refused)"), so are a
 * FIFO, a device, a socket or a directory; each is at most
 * CORDON_GRANT_MAX_FILE_BYTES and all together CORDON_GRANT_MAX_TOTAL_BYTES
 * (CORDON_E_LIMIT). All outputs are checked and copied into the grant area
 * first and only then renamed into <ws>/output/, so a refusal leaves the
 * output root untouched.
 * A declared output that does not exist does not fail the call: it is
 * reported as {"path": "output/<p>", "missing": true}. Files in staging that
 * were not declared are ignored (never copied).
 * *ret_outputs (caller frees with cJSON_Delete) is an array, one entry per
 * declared output in b->outputs order:
 *   {"path": "output/<p>", "sha256": "<hex>", "bytes": N, "host_path": "<ws>/output/<p>"}
 * With inline_data the task workspace is the call's own and goes away: the
 * bounds are CORDON_GRANT_INLINE_MAX_FILE_BYTES and
 * CORDON_GRANT_INLINE_MAX_TOTAL_BYTES instead, and entries have no
 * "host_path" (the caller reads the files from g->output_fd).
 */
int cordon__grant_collect(struct cordon__grant *g, int staging_dirfd,
                          const struct cordon__bundle *b, bool inline_data, cJSON **ret_outputs,
                          struct cordon_error *err);

/*
 * Close the grant: remove its area (source/ build/ logs/ and anything else
 * in it, making directories writable where needed), then .cordon/grants and
 * .cordon if they are empty. The output root stays. Idempotent; NULL is fine.
 */
int cordon__grant_close(struct cordon__grant *g, struct cordon_error *err);

/* Close the fds and free the grant; removes nothing. NULL is fine. */
void cordon__grant_free(struct cordon__grant *g);

#endif
