/*
 * core: the observer landed in a sandbox for one observation, through the
 * provider's own import: as an ordinary file under the caller's name
 * (import_files, else a one-entry tar), its bytes the host's checked copy
 * plus random padding, or as the provider-facing .cordon/cordon-observe.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/observe/observe.h"
#include <cordon/sdk/tar.h>

#include "core/observe/observe-internal.h"

#define OBSERVER_MAX_BYTES (64u * 1024u * 1024u)
#define OBSERVER_PAD 32   /* random bytes after a landed observer (even) */

/* The observer, opened and checked: a regular file within OBSERVER_MAX_BYTES. */
static int observer_open(const char *observer, int *ret_fd, uint64_t *ret_size, struct cordon_error *err)
{
    struct stat st;
    int fd = open(observer, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        return cordon_error_set(err, CORDON_E_NOT_FOUND, e, "observe: observer %s: %s", observer, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > OBSERVER_MAX_BYTES) {
        close(fd);
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "observe: observer %s must be a regular file of at most %u bytes", observer,
                                OBSERVER_MAX_BYTES);
    }
    *ret_fd = fd;
    *ret_size = (uint64_t)st.st_size;
    return 0;
}

/* Exactly size bytes from src to dst: a file that changed length while we
 * read it is refused, not landed half. */
static int copy_exact(int src, int dst, uint64_t size, struct cordon_error *err)
{
    char buf[65536];
    uint64_t done = 0;

    while (done < size) {
        size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
        ssize_t n = read(src, buf, want);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return cordon_error_set(err, CORDON_E_IO, n < 0 ? errno : 0,
                                    "observe: reading the observer stopped at byte %llu of %llu",
                                    (unsigned long long)done, (unsigned long long)size);
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(dst, buf + off, (size_t)(n - off));

            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "observe: copying the observer failed: %s",
                                        strerror(errno));
            off += w;
        }
        done += (uint64_t)n;
    }
    return 0;
}

static bool has_import_files(const struct cordon_provider_v1 *p)
{
    return p->struct_size >= offsetof(struct cordon_provider_v1, import_files) + sizeof(p->import_files) &&
           p->import_files != NULL;
}

/*
 * Land the observer as one ordinary file, name, at the workspace root:
 * through import_files when the provider has it (the way a bundle's source
 * lands), else as a one-entry tar through import_tar. The bytes are the
 * host's own copy plus OBSERVER_PAD random bytes after its end (the kernel
 * never reads past the ELF's segments), read through a memfd so that what
 * lands is what the host checked, and so that no two landings share a
 * digest a provider could recognise.
 */
int cordon__observer_land_as(const struct cordon_observe_opts *opts, const char *state, const char *name,
                             struct cordon_error *err)
{
    struct cordon_tar_writer *w = NULL;
    struct cordon_error perr;
    char *files = NULL, pad[OBSERVER_PAD + 1];
    uint64_t size = 0;
    int bin_fd = -1, copy = -1, tar = -1, rc;

    cordon_error_init(&perr);
    if ((rc = observer_open(opts->host->observer_path, &bin_fd, &size, err)) < 0)
        return rc;
    copy = memfd_create("cordon-observer", MFD_CLOEXEC);
    if (copy < 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer failed: %s",
                              strerror(errno));
        goto out;
    }
    if ((rc = copy_exact(bin_fd, copy, size, err)) < 0 ||
        (rc = cordon__observe_random_hex(pad, OBSERVER_PAD / 2, err)) < 0)
        goto out;
    if (write(copy, pad, OBSERVER_PAD) != OBSERVER_PAD || lseek(copy, 0, SEEK_SET) != 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: preparing the observer failed: %s",
                              strerror(errno));
        goto out;
    }
    size += OBSERVER_PAD;
    if (has_import_files(opts->provider)) {
        if (asprintf(&files, "{\"files\":[{\"path\":\"%s\",\"size\":%llu,\"mode\":493}]}", name,
                     (unsigned long long)size) < 0) {
            files = NULL;
            rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "observe: out of memory");
            goto out;
        }
        rc = opts->provider->import_files(opts->resource, state, "", files, copy, &perr);
    } else {
        tar = memfd_create("cordon-observer.tar", MFD_CLOEXEC);
        if (tar < 0) {
            rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer tar failed: %s",
                                  strerror(errno));
            goto out;
        }
        if ((rc = cordon_tar_writer_open(tar, &w, err)) < 0 ||
            (rc = cordon_tar_writer_add_fd(w, name, copy, size, 0755, err)) < 0)
            goto out;
        rc = cordon_tar_writer_close(w, err);
        w = NULL;
        if (rc < 0)
            goto out;
        if (lseek(tar, 0, SEEK_SET) != 0) {
            rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: rewinding the observer tar failed: %s",
                                  strerror(errno));
            goto out;
        }
        rc = opts->provider->import_tar(opts->resource, state, "", tar, &perr);
    }
    if (rc < 0)
        rc = cordon_error_set(err, rc, perr.os_errno, "observe: %s failed: %s",
                              files != NULL ? "import_files" : "import_tar", perr.message);
out:
    cordon_tar_writer_free(w);
    free(files);
    if (tar >= 0)
        close(tar);
    if (copy >= 0)
        close(copy);
    if (bin_fd >= 0)
        close(bin_fd);
    return rc;
}

/* A tar stream in a memfd holding .cordon/ and .cordon/cordon-observe. */
int cordon__observer_tar(const char *observer, int *ret_fd, struct cordon_error *err)
{
    struct cordon_tar_writer *w = NULL;
    struct stat st;
    int tar_fd, bin_fd = -1, rc;

    tar_fd = memfd_create("cordon-observe.tar", MFD_CLOEXEC);
    if (tar_fd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "observe: memfd for the observer tar failed: %s",
                                strerror(errno));
    bin_fd = open(observer, O_RDONLY | O_CLOEXEC);
    if (bin_fd < 0 || fstat(bin_fd, &st) != 0) {
        rc = cordon_error_set(err, CORDON_E_NOT_FOUND, errno, "observe: observer %s: %s", observer,
                              strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > OBSERVER_MAX_BYTES) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "observe: observer %s must be a regular file of at most %u bytes", observer,
                              OBSERVER_MAX_BYTES);
        goto out;
    }
    if ((rc = cordon_tar_writer_open(tar_fd, &w, err)) < 0 ||
        (rc = cordon_tar_writer_add_dir(w, ".cordon", 0755, err)) < 0 ||
        (rc = cordon_tar_writer_add_fd(w, ".cordon/cordon-observe", bin_fd, (uint64_t)st.st_size, 0755, err)) < 0)
        goto out;
    rc = cordon_tar_writer_close(w, err);
    w = NULL;
    if (rc < 0)
        goto out;
    if (lseek(tar_fd, 0, SEEK_SET) != 0) {
        rc = cordon_error_set(err, CORDON_E_IO, errno, "observe: rewinding the observer tar failed: %s",
                              strerror(errno));
        goto out;
    }
    *ret_fd = tar_fd;
    tar_fd = -1;
    rc = 0;
out:
    cordon_tar_writer_free(w);
    if (bin_fd >= 0)
        close(bin_fd);
    if (tar_fd >= 0)
        close(tar_fd);
    return rc;
}
