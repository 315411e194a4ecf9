/*
 * cordon-contract: nothing an execution writes outside its workspace
 * outlives it on the host.
 *
 * A program's temporary files go to /tmp, /var/tmp and /dev/shm. In a
 * contained sandbox those are the sandbox's own and were never the host's;
 * a provider that runs on the host (trusted-local) must give the execution
 * its own or remove them. A file left on the host's belongs to the
 * execution's uid, which the next execution of any provider may be given,
 * and one in /dev/shm is host memory outside every limit.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "contract/contract.h"

static const char *const tmp_dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };
#define N_TMP_DIRS (sizeof(tmp_dirs) / sizeof(tmp_dirs[0]))

Test(contract, terminate_leaves_no_temporary_file_on_the_host)
{
    char marker[64], hex[17], script[512], path[256];
    struct contract_text left = { 0 };
    struct cordon_exec_outcome out;
    struct cordon_error err;
    const char *state;
    struct stat st;

    contract_random_hex(hex, 8);
    snprintf(marker, sizeof(marker), "cordon-contract-leftover-%s", hex);
    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    /* A tiny file in each directory the sandbox has; which ones it has is
     * the provider's business, the host's side is what is checked. */
    snprintf(script, sizeof(script),
             "for d in /tmp /var/tmp /dev/shm; do [ -d $d ] && echo x > $d/%s; done; true",
             marker);
    contract_sh(state, script, &out);
    cordon_exec_outcome_clear(&out);
    cordon_error_init(&err);
    cr_assert_eq(contract.vt.terminate(contract.resource, state, &err), 0, "terminate failed: %s",
                 err.message);
    contract_untrack(state);
    for (size_t i = 0; i < N_TMP_DIRS; i++) {
        snprintf(path, sizeof(path), "%s/%s", tmp_dirs[i], marker);
        if (lstat(path, &st) != 0)
            continue;
        contract_text_add(&left, "%s%s (uid %u)", left.len > 0 ? ", " : "", path,
                          (unsigned)st.st_uid);
        /* Never left behind by a failing run of the suite. */
        unlink(path);
    }
    cr_expect_eq(left.len, 0, "files the execution wrote outlived terminate on the host: %s",
                 CONTRACT_CLIP(contract_text_str(&left)));
    contract_text_clear(&left);
}
