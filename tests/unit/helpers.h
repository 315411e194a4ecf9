/* Shared helpers of the unit tests. */
#ifndef CORDON_TEST_HELPERS_H
#define CORDON_TEST_HELPERS_H

#include <stddef.h>

#include "tests/common/proc.h"
#include "tests/common/wait.h"

/* A fresh private directory under $TMPDIR (or /tmp), malloc'd path; the
 * caller removes it with test_rmtree. */
char *test_mkdtemp(void);
/* rm -rf without following links. */
void test_rmtree(const char *path);
/* Write len bytes to path (0644), creating it. Returns 0 or -1. */
int test_write_file(const char *path, const void *buf, size_t len);
/* Mounts of this mount namespace at or below dir: each is detached, and the
 * first one's mount point goes to first (len bytes). Returns how many there
 * were, so a test can fail for what it left behind instead of leaving it. */
int test_unmount_under(const char *dir, char *first, size_t len);
/* How many of the fds 0-1023 are open, to compare before and after. */
int test_count_open_fds(void);

#endif

#include <cordon/cordon.h>

/* A context over the test provider directory ($CORDON_TEST_PROVIDER_DIR:
 * trusted-local.so and the fixture providers) with a fresh state directory,
 * whose path goes to *ret_state_dir (remove it with test_rmtree). config_json
 * (may be NULL) is written to a config file in the state directory. */
struct cordon_ctx *test_ctx_open(const char *config_json, char **ret_state_dir);
