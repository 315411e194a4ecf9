/*
 * sdk: validation of relative paths that come from outside (bundles, declared
 * outputs, tar entries, cwd). Pure string work; never touches the disk.
 */
#ifndef CORDON_SDK_PATH_H
#define CORDON_SDK_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <cordon/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CORDON_PATH_MAX 4096       /* bytes of a whole relative path */
#define CORDON_PATH_COMPONENT_MAX 255

/*
 * Normalise a relative path: collapse "//" and "./", drop a trailing '/'.
 * Refused (CORDON_E_UNSAFE or CORDON_E_INVALID, message naming field, the
 * value and the rule): empty, absolute, a ".." component, longer than
 * CORDON_PATH_MAX or a component longer than CORDON_PATH_COMPONENT_MAX,
 * control characters, a result that is "." alone. ret_norm is malloc'd.
 */
CORDON_EXTERN int cordon_path_normalize(const char *field, const char *path, char **ret_norm,
                                        struct cordon_error *err);

/* Like cordon_path_normalize, but "" and "." are accepted and give "". */
CORDON_EXTERN int cordon_path_normalize_dir(const char *field, const char *path, char **ret_norm,
                                            struct cordon_error *err);

/* True when the normalised path norm equals root or lies below it
 * ("output/a" is under "output"; "outputs/a" is not). */
CORDON_EXTERN bool cordon_path_is_under(const char *norm, const char *root);

/* Refuse duplicates among n normalised paths, also those that differ only
 * in ASCII case, and a path that is also another one's directory
 * ("a" and "a/b"). field names the list in the message. */
CORDON_EXTERN int cordon_path_check_set(const char *field, const char *const *paths, size_t n,
                                        struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
