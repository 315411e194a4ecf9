/*
 * core: finding and loading providers by id on the search path
 * (CORDON_PROVIDER_PATH, then the installed provider directory).
 */
#ifndef CORDON_CORE_LOADER_H
#define CORDON_CORE_LOADER_H

#include "core/internal.h"

/* Load the provider named id (once per ctx; later calls return the same
 * entry). CORDON_E_NOT_FOUND when no <dir>/<id>.so exists, CORDON_E_ABI
 * when it exists but cannot be loaded. *ret is owned by ctx. */
int cordon__loader_get(struct cordon_ctx *ctx, const char *id, struct cordon__loaded **ret,
                       struct cordon_error *err);

/* Release res, ensured from p. The one quarantine rule: a resource that
 * would not let go leaves p quarantined (never ensured again in this ctx),
 * and the failure is CORDON_E_PROVIDER "release_failed: <why> (provider
 * quarantined)". res NULL is 0. */
int cordon__loader_release(struct cordon__loaded *p, struct cordon_resource *res,
                           struct cordon_error *err);

/* The ids of every <id>.so on the search path, sorted, duplicates (a later
 * directory's) dropped. ret_ids is a malloc'd array of malloc'd strings. */
int cordon__loader_list(struct cordon_ctx *ctx, char ***ret_ids, size_t *ret_n,
                        struct cordon_error *err);
void cordon__loader_list_free(char **ids, size_t n);

/* The path <id>.so resolves to, or NULL (malloc'd). */
char *cordon__loader_find(const struct cordon_ctx *ctx, const char *id);

#endif
