/*
 * core: the checkpoint store (json.md §9, §10). A checkpoint is the
 * bytes of an execution's /workspace as a checked tar stream plus a
 * versioned manifest, nothing else (no processes, memory or credentials):
 *
 *   <store>/<checkpoint_id>/            0700
 *       workspace.tar                   0600, a clean pax stream
 *       manifest.json                   0600
 *
 * manifest.json holds exactly: version (CORDON_CHECKPOINT_VERSION),
 * checkpoint_id, source_execution_id, provider_id, image (string or null),
 * resources (the six limits as numbers), network (object), environment
 * (object of strings), metadata (object), created_at (RFC 3339 UTC,
 * "2024-05-01T12:00:00Z") and workspace {sha256, bytes, entries}, where
 * sha256 and bytes describe workspace.tar itself and entries counts its
 * entries. A checkpoint appears in the store complete or not at all: it is
 * written in <store>/.tmp-<id> and renamed into place. Ids are local to
 * their store.
 */
#ifndef CORDON_CORE_CHECKPOINT_H
#define CORDON_CORE_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>

#define CORDON_CHECKPOINT_VERSION 1
/* "ckpt-" and 24 lowercase hex digits, plus NUL. */
#define CORDON_CHECKPOINT_ID_SIZE 30
/* Largest manifest.json written or read. */
#define CORDON_CHECKPOINT_MANIFEST_MAX (1u << 20)
/* Most entries cordon__checkpoint_list reports. */
#define CORDON_CHECKPOINT_LIST_MAX 65536u

/* True for "ckpt-" followed by exactly 24 lowercase hex digits. */
bool cordon__checkpoint_id_valid(const char *id);

/*
 * Write a new checkpoint into store_dir (absolute; created 0700 with
 * parents 0755 when missing) from the tar stream read from tar_in_fd (to
 * its end; borrowed, not closed). Every entry is checked as extraction
 * checks it (sdk cordon_tar_filter_fd: no absolute names, "..", hardlinks,
 * unsafe symlinks, special files, setuid/setgid) and bounded by max_bytes
 * of file content and max_entries (0 = none); a refusal is CORDON_E_UNSAFE,
 * CORDON_E_LIMIT or CORDON_E_INVALID naming the entry, and the stream is
 * then not read further. fields (borrowed) is an object with exactly
 * source_execution_id, provider_id, image, resources, network, environment
 * and metadata (CORDON_E_INVALID "fields.<key>: ..." otherwise). On success
 * *ret_manifest is the manifest written (freed with cJSON_Delete); on any
 * failure nothing is left in store_dir.
 */
int cordon__checkpoint_write(const char *store_dir, int tar_in_fd, const cJSON *fields,
                             uint64_t max_bytes, uint64_t max_entries, cJSON **ret_manifest,
                             struct cordon_error *err);

/*
 * Open checkpoint_id in store_dir for restoring: the manifest is read
 * without following links (at most CORDON_CHECKPOINT_MANIFEST_MAX bytes)
 * and validated strictly, workspace.tar is opened as a regular file and
 * its size and sha256 are checked against the manifest. A malformed id is
 * CORDON_E_INVALID; a missing checkpoint CORDON_E_CHECKPOINT_NOT_FOUND;
 * any unknown, missing, duplicated or mistyped key, another version, an id
 * that is not the directory's name, a link in place of a file or a digest
 * mismatch is CORDON_E_CHECKPOINT_INVALID naming the key. On success
 * *ret_manifest (cJSON_Delete) and *ret_tar_fd (O_CLOEXEC, at offset 0,
 * closed by the caller). The tar fd holds workspace.tar locked shared: the
 * checkpoint cannot be removed until it is closed.
 */
int cordon__checkpoint_open(const char *store_dir, const char *checkpoint_id, cJSON **ret_manifest,
                            int *ret_tar_fd, struct cordon_error *err);

/* Remove checkpoint_id from store_dir. It leaves the store's namespace in
 * one rename before its files are deleted. Missing is
 * CORDON_E_CHECKPOINT_NOT_FOUND; one that a restore is reading (between
 * cordon__checkpoint_open and the close of its tar fd, which holds
 * workspace.tar shared) is CORDON_E_BUSY, and stays. */
int cordon__checkpoint_remove(const char *store_dir, const char *checkpoint_id,
                              struct cordon_error *err);

/*
 * Remove what a checkpoint writer or remover that died (kill -9, a crash)
 * left in store_dir: ".tmp-ckpt-*" and ".rm-ckpt-*" directories that
 * nobody holds locked and that are older than min_age_s seconds (a live
 * writer holds its lock from just after its mkdir to the rename). Each
 * name removed is added to removed (optional). A missing store is
 * success.
 */
int cordon__checkpoint_sweep(const char *store_dir, unsigned min_age_s, cJSON *removed,
                             struct cordon_error *err);

/*
 * Every checkpoint in store_dir, sorted by id, as a new array (cJSON_Delete):
 * the manifest of each valid one (validated as by cordon__checkpoint_open,
 * and the size of workspace.tar checked, but not its digest: listing does
 * not read every workspace), and {"checkpoint_id": NAME, "invalid": REASON}
 * for each entry that is not a valid checkpoint. Names starting with '.'
 * (checkpoints being written or removed) are not listed. A missing store
 * is an empty array.
 */
int cordon__checkpoint_list(const char *store_dir, cJSON **ret_array, struct cordon_error *err);

#endif
