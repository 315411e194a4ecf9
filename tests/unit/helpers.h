/* Shared helpers of the unit tests. */
#ifndef CORDON_TEST_HELPERS_H
#define CORDON_TEST_HELPERS_H

#include <stddef.h>

/* A fresh private directory under $TMPDIR (or /tmp), malloc'd path; the
 * caller removes it with test_rmtree. */
char *test_mkdtemp(void);
/* rm -rf without following links. */
void test_rmtree(const char *path);
/* Write len bytes to path (0644), creating it. Returns 0 or -1. */
int test_write_file(const char *path, const void *buf, size_t len);
/* Count live processes whose command line contains needle. */
int test_count_processes(const char *needle);

#endif
