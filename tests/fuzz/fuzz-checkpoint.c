/*
 * A checkpoint directory is data on disk that the sandbox's owner may have
 * tampered with: its manifest.json (up to the first NUL of the input) and
 * workspace.tar (the rest) are opened, validated and listed as `cordon
 * restore` and `cordon checkpoints` do. A manifest that validates has its
 * resources read as a restore reads them.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>
#include "core/checkpoint.h"
#include "core/limits.h"

#define ID "ckpt-000000000000000000000000"

static void put(int dirfd, const char *name, const uint8_t *data, size_t size)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd < 0)
        abort();
    fuzz_write_all(fd, data, size);
    close(fd);
}

FUZZ_TMPDIR_CLEANUP

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t mlen = nul != NULL ? (size_t)(nul - data) : size;
    char *store = fuzz_tmpdir(), ckpt[4200];
    struct cordon_error err;
    cJSON *manifest = NULL, *list = NULL;
    int dir, tar = -1, r;

    snprintf(ckpt, sizeof(ckpt), "%s/" ID, store);
    if (mkdir(ckpt, 0700) < 0 || (dir = open(ckpt, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        abort();
    put(dir, "manifest.json", data, mlen);
    put(dir, "workspace.tar", nul != NULL ? nul + 1 : data, nul != NULL ? size - mlen - 1 : 0);
    close(dir);

    cordon_error_init(&err);
    r = cordon__checkpoint_open(store, ID, &manifest, &tar, &err);
    fuzz_check_refusal(r, &err);
    if (r == 0) {
        struct cordon_limits lim;

        cordon_error_init(&err);
        r = cordon_limits_from_json(cJSON_GetObjectItemCaseSensitive(manifest, "resources"), "resources",
                                     &lim, &err);
        fuzz_check_refusal(r, &err);
        close(tar);
        cJSON_Delete(manifest);
    }
    cordon_error_init(&err);
    r = cordon__checkpoint_list(store, &list, &err);
    fuzz_check_refusal(r, &err);
    cJSON_Delete(list);
    fuzz_rmtree(store);
    free(store);
    return 0;
}
