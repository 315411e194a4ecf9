/*
 * core (internal): what the two ways of building a bundle share
 * (bundle-request.c, bundle-path.c): the bundle's own rules, each applied
 * once in bundle.c, whichever way its parts arrived.
 */
#ifndef CORDON_CORE_BUNDLE_INTERNAL_H
#define CORDON_CORE_BUNDLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cordon/error.h>

#include "core/bundle.h"

/* Out of memory while handling what. */
int cordon__bundle_nomem(struct cordon_error *err, const char *what);
/* Store the canonical name of a language given by name or alias. */
int cordon__bundle_set_language(struct cordon__bundle *b, const char *field, const char *name,
                                struct cordon_error *err);
/* Copy argv entries after checking their count and total size against
 * what execve and the sandbox will take. */
int cordon__bundle_take_args(struct cordon__bundle *b, const char *const *args, size_t n,
                             struct cordon_error *err);
/* Normalise, sort and de-duplicate the declared outputs. */
int cordon__bundle_take_outputs(struct cordon__bundle *b, const char *const *outputs, size_t n,
                                struct cordon_error *err);
/* qsort order of strings (char *), by their bytes. */
int cordon__bundle_string_order(const void *a, const void *b);
/* Room for one more file, checked before its bytes are read. */
int cordon__bundle_check_file_room(const struct cordon__bundle *b, const char *path, uint64_t len,
                                   struct cordon_error *err);
/* Append a file; path and data move into the bundle (also on failure). */
int cordon__bundle_add_file(struct cordon__bundle *b, char *path, unsigned char *data, size_t len,
                            bool executable, struct cordon_error *err);
/* Checks that need every file, then the digest; where names the source
 * in messages ("the request", a path). */
int cordon__bundle_finish(struct cordon__bundle *b, const char *where, struct cordon_error *err);

#endif
