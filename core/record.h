/*
 * core: execution records (json.md §12). One directory per execution,
 * <state_dir>/executions/<id>/ (0700), holding record.json (0600, written
 * atomically: temporary file, fsync, rename). mkdir is the duplicate-id
 * check; flock on the directory serialises exec, checkpoint and terminate
 * across processes. The record is written before the provider creates
 * anything, so a crash at any moment leaves something reclaim can find.
 */
#ifndef CORDON_CORE_RECORD_H
#define CORDON_CORE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <cordon/sdk/bounds.h>
#include "core/internal.h"

#define CORDON_RECORD_VERSION 1

/* Execution ids: cordon_execution_id_valid (cordon/sdk/bounds.h). */

struct cordon__record {
    char id[65];
    int dir_fd;        /* the record's directory, flock'ed while held */
    cJSON *doc;        /* the record; the caller edits it and saves */
};

/* Create the record of a new execution and hold its lock. doc is copied;
 * a duplicate id is CORDON_E_EXISTS. */
int cordon__record_create(struct cordon_ctx *ctx, const char *id, const cJSON *doc,
                          struct cordon__record **ret, struct cordon_error *err);

/* Open and lock an existing record (waits for another holder; with
 * nowait a held lock is CORDON_E_BUSY). Missing is CORDON_E_NOT_FOUND. */
int cordon__record_open(struct cordon_ctx *ctx, const char *id, bool nowait,
                        struct cordon__record **ret, struct cordon_error *err);

/* Read a record without its lock, for terminate while another call holds
 * it. Missing is CORDON_E_NOT_FOUND. */
int cordon__record_peek(struct cordon_ctx *ctx, const char *id, struct cordon__record **ret,
                        struct cordon_error *err);

/* Write rec->doc atomically. */
int cordon__record_save(struct cordon__record *rec, struct cordon_error *err);

/* Remove the record (its file and directory); the lock goes with it. */
int cordon__record_remove(struct cordon_ctx *ctx, struct cordon__record *rec,
                          struct cordon_error *err);

/* Unlock and free; accepts NULL. */
void cordon__record_close(struct cordon__record *rec);

/* Ids of every record, sorted (malloc'd strings in a malloc'd array). */
int cordon__record_list(struct cordon_ctx *ctx, char ***ret_ids, size_t *ret_n,
                        struct cordon_error *err);

/* Set "phase" (and the owning pid while a call is under way) and save. */
int cordon__record_phase(struct cordon__record *rec, const char *phase, bool owned,
                         struct cordon_error *err);

/*
 * An exec under way, marked without rewriting the record: an empty file
 * (CORDON__RECORD_EXEC_MARK) beside record.json, made before the
 * provider's exec and removed after, under the record's lock. Making and
 * removing an empty file writes no data; replacing record.json twice per
 * exec did (ext4 flushes a file renamed over another), and an exec is the
 * hot path. The mark means something only while this boot lasts: gc, which
 * holds the lock, takes a record with the mark as one whose cordon died
 * mid-exec; ls shows its phase as "exec".
 */
#define CORDON__RECORD_EXEC_MARK "exec.running"
int cordon__record_exec_begin(struct cordon__record *rec, struct cordon_error *err);
/* Remove the mark (a record already removed has none). */
void cordon__record_exec_end(struct cordon__record *rec);
/* The record's phase as its readers take it: "exec" while the mark is
 * there, else the record's own "phase" (NULL when it has none). */
const char *cordon__record_phase_now(const struct cordon__record *rec);
/* The same for a record read without its lock (ls): dir_fd its directory. */
const char *cordon__record_phase_at(int dir_fd, const cJSON *doc);

#endif
