/*
 * The tar paths a sandbox feeds: extraction (workspace import, checkpoint
 * restore, rootfs unpack), the filter every import and export goes
 * through, import_tar into a code-layout workspace, and import_files'
 * manifest + data. The first byte picks the path and its flags; the rest
 * is the stream. Whatever is refused, nothing may appear outside the
 * destination.
 */
#include "fuzz.h"

#include <cordon/sdk/tar.h>

static const struct cordon_tar_limits limits = { .max_bytes = 1 << 20, .max_entries = 512 };

static void extract(const uint8_t *data, size_t size, unsigned flags)
{
    struct cordon_error err;
    struct cordon_tar_stats st;
    char *dir = fuzz_tmpdir();
    int in = fuzz_memfd(data, size), dest = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r;

    cordon_error_init(&err);
    r = cordon_tar_extract_fd(in, dest, &limits, flags, &st, &err);
    fuzz_check_refusal(r, &err);
    if (r == 0 && st.bytes > limits.max_bytes)
        abort();
    close(dest);
    close(in);
    fuzz_check_contained(dir);
    fuzz_rmtree(dir);
    free(dir);
}

static void filter(const uint8_t *data, size_t size, unsigned flags)
{
    struct cordon_error err;
    struct cordon_tar_stats st;
    char sha[65];
    int in = fuzz_memfd(data, size), out = fuzz_sink(), r;

    cordon_error_init(&err);
    r = cordon_tar_filter_fd(in, out, &limits, flags, &st, sha, &err);
    fuzz_check_refusal(r, &err);
    if (r == 0) {
        /* What passed the filter extracts cleanly under the same rules. */
        char *dir = fuzz_tmpdir();
        int dest = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (lseek(out, 0, SEEK_SET) != 0)
            abort();
        cordon_error_init(&err);
        r = cordon_tar_extract_fd(out, dest, &limits, flags, NULL, &err);
        if (r < 0) {
            fprintf(stderr, "the filter passed a stream extraction refuses: %s\n", err.message);
            abort();
        }
        close(dest);
        fuzz_check_contained(dir);
        fuzz_rmtree(dir);
        free(dir);
    }
    close(out);
    close(in);
}

static void import_workspace(const uint8_t *data, size_t size, bool files, bool code)
{
    struct cordon_workspace_owner owner = { .code_layout = code, .set_owner = true,
                                            .uid = 65534, .gid = 65534 };
    struct cordon_error err;
    char *dir = fuzz_tmpdir();
    int ws = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;
    const char *dest = code ? "source" : "output/in";

    cordon_error_init(&err);
    if (files) {
        /* import_files: the manifest up to the first NUL, then the data. */
        const uint8_t *nul = memchr(data, '\0', size);
        size_t mlen = nul != NULL ? (size_t)(nul - data) : size;
        char *manifest = fuzz_text(data, mlen);
        int in = fuzz_memfd(nul != NULL ? nul + 1 : data + size, nul != NULL ? size - mlen - 1 : 0);

        r = cordon_files_import_workspace(manifest, in, ws, dest, &owner, limits.max_bytes,
                                          limits.max_entries, &err);
        close(in);
        free(manifest);
    } else {
        int in = fuzz_memfd(data, size);

        r = cordon_tar_import_workspace(in, ws, dest, &owner, limits.max_bytes,
                                        limits.max_entries, &err);
        close(in);
    }
    fuzz_check_refusal(r, &err);
    close(ws);
    fuzz_check_contained(dir);
    fuzz_rmtree(dir);
    free(dir);
}

FUZZ_TMPDIR_CLEANUP

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned sel, flags;

    if (size < 1)
        return 0;
    sel = data[0] & 0x7;
    flags = (data[0] >> 3) & (CORDON_TAR_ALLOW_SYMLINKS | CORDON_TAR_SET_OWNER |
                              CORDON_TAR_READ_ONLY | CORDON_TAR_ROOTFS);
    data++;
    size--;
    switch (sel) {
    case 0: case 1: extract(data, size, flags); break;
    case 2: case 3: filter(data, size, flags & ~CORDON_TAR_ROOTFS); break;
    case 4: import_workspace(data, size, false, true); break;
    case 5: import_workspace(data, size, false, false); break;
    case 6: import_workspace(data, size, true, true); break;
    default: import_workspace(data, size, true, false); break;
    }
    return 0;
}
