/* Shared helpers of the unit tests. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include "tests/unit/helpers.h"

char *test_mkdtemp(void)
{
    const char *tmp = getenv("TMPDIR");
    char *path = NULL;

    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    if (asprintf(&path, "%s/cordon-test.XXXXXX", tmp) < 0)
        return NULL;
    if (mkdtemp(path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

void test_rmtree(const char *path)
{
    if (path != NULL)
        cordon_fs_remove_tree_path(path, NULL);
}

int test_write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

int test_unmount_under(const char *dir, char *first, size_t len)
{
    FILE *f = fopen("/proc/self/mounts", "re");
    char line[4096], point[4096];
    size_t n = strlen(dir);
    int count = 0;

    if (len > 0)
        first[0] = '\0';
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%*s %4095s", point) != 1 || strncmp(point, dir, n) != 0 ||
            (point[n] != '\0' && point[n] != '/'))
            continue;
        if (count++ == 0 && len > 0)
            snprintf(first, len, "%s", point);
        umount2(point, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
    fclose(f);
    return count;
}

struct cordon_ctx *test_ctx_open(const char *config_json, char **ret_state_dir)
{
    const char *dir = getenv("CORDON_TEST_PROVIDER_DIR");
    struct cordon_ctx_opts opts = { sizeof(opts), NULL, NULL, NULL, true };
    struct cordon_ctx *ctx = NULL;
    char *state = test_mkdtemp(), *config = NULL;

    if (state == NULL)
        return NULL;
    if (dir != NULL)
        setenv("CORDON_PROVIDER_PATH", dir, 1);
    if (config_json != NULL) {
        if (asprintf(&config, "%s/config.json", state) < 0 ||
            test_write_file(config, config_json, strlen(config_json)) < 0) {
            free(config);
            return NULL;
        }
        opts.config_path = config;
    }
    opts.state_dir = state;
    if (cordon_ctx_new(&opts, &ctx, NULL) < 0)
        ctx = NULL;
    free(config);
    *ret_state_dir = state;
    return ctx;
}

int test_count_open_fds(void)
{
    int n = 0;

    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            n++;
    return n;
}
