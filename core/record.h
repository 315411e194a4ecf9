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

/* The same, written atomically but not fsync'd (cordon_fs_write_replace):
 * for the exec path's "exec" and back to "ready", twice per exec. Those
 * phases mean something only while this boot lasts (an owner pid that is
 * alive or not), and every other field of the record was made durable when
 * it was written; after a power loss no sandbox runs anyway, and gc goes
 * by what the mechanism still holds. */
int cordon__record_phase_passing(struct cordon__record *rec, const char *phase, bool owned,
                                 struct cordon_error *err);

#endif
