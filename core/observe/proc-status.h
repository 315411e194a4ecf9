/*
 * core (internal): one field of a /proc status file, for the host's boundary
 * reader and the static observer alike (both compile proc-status.c), and
 * for the contract suite's reading of a sandbox's own status.
 */
#ifndef CORDON_SDK_PROC_STATUS_H
#define CORDON_SDK_PROC_STATUS_H

#include <stddef.h>

/* The value after "Key:" (blanks skipped) on key's line of status, cut to
 * size - 1 bytes, in out; NULL when status is NULL or has no such line. */
const char *cordon__status_value(const char *status, const char *key, char *out, size_t size);

#endif
