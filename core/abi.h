/*
 * core (internal): loading a provider shared object and checking its vtable
 * exactly as the host does. Shared by libcordon's loader and by
 * cordon-contract, so that a provider that passes the contract suite loads
 * in the host. Host-only: no provider needs it, so it is not part of the
 * installed sdk headers.
 */
#ifndef CORDON_CORE_ABI_H
#define CORDON_CORE_ABI_H

#include <stdbool.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CORDON_PROVIDER_ID_MAX 64

/* True for [a-z0-9][a-z0-9-]{0,63}. */
bool cordon__provider_id_valid(const char *id);

/* The provider id a path implies: its basename without ".so". ret_id must
 * hold CORDON_PROVIDER_ID_MAX + 1 bytes. CORDON_E_INVALID when the name is
 * not a valid id. */
int cordon__provider_id_from_path(const char *path, char *ret_id,
                                               struct cordon_error *err);

/*
 * Check a vtable the way the host does and copy it into *ret_copy (zeroed
 * first, so the slots of a smaller, older provider read as NULL): same
 * major, minor not newer than ours, struct_size between the 1.0 size and
 * ours, provider_id valid and equal to expected_id (when not NULL),
 * version and supported_kinds present, every required operation set.
 * Each refusal is CORDON_E_ABI with a one-line message.
 */
int cordon__provider_check(const struct cordon_provider_v1 *provider,
                                        const char *expected_id,
                                        struct cordon_provider_v1 *ret_copy,
                                        struct cordon_error *err);

/*
 * Load the shared object at abs_path with libltdl, find the ABI-1 entry
 * point, call it with host and flags 0, and check the vtable with
 * cordon__provider_check against the id the file name implies. The object
 * is never unloaded once its entry point ran. A relative path, a missing
 * entry point (with a hint when a newer major's entry point is there), a
 * failing init and a bad vtable are each a one-line error.
 */
int cordon__provider_load(const char *abs_path, const struct cordon_host_v1 *host,
                                       struct cordon_provider_v1 *ret_copy,
                                       struct cordon_error *err);

/* Fill a host services table with malloc/free, a stderr logger that
 * prints only when CORDON_DEBUG is set, and the given strings (borrowed:
 * they must outlive the table). */
void cordon__host_table_init(struct cordon_host_v1 *host, const char *observer_path,
                                          const char *init_path, const char *host_instance_id,
                                          const char *state_dir);

#ifdef __cplusplus
}
#endif
#endif
