/*
 * What sdk/tar.c and sdk/tar-rewrite.c share, and nothing else uses: the
 * one libarchive error mapping and the one reader of plain tar. Private
 * to libcordon-sdk (hidden, in no installed header).
 */
#ifndef CORDON_SDK_TAR_INTERNAL_H
#define CORDON_SDK_TAR_INTERNAL_H

#include "sdk/archive-lazy.h"

#include <cordon/error.h>

/* libarchive's error on a as a cordon error: "tar stream: WHAT: MSG";
 * ENOMEM is NOMEM, a real errno from the fd is IO, a format error INVALID. */
int cordon__tar_fail(struct cordon_error *err, struct archive *a, const char *what);

/* A reader of plain tar (ustar, pax, GNU) on fd: no compression; an empty
 * stream is no entries. Loads libarchive on first use. */
int cordon__tar_reader_open(int fd, struct archive **ret_a, struct cordon_error *err);

#endif
