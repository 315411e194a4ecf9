/* sdk: finding argv[0] inside a sandbox's root (see cordon/sdk/fs.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>
#include <cordon/text.h>

/* 1: an executable regular file at path inside root_fd; 0: not; -1: the
 * kernel cannot tell (no openat2). Nothing is read. */
static int program_at(int root_fd, const char *path)
{
    struct open_how how = { .flags = O_PATH | O_CLOEXEC,
                            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
    struct stat st;
    int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how)), found;

    if (fd < 0)
        return errno == ENOSYS ? -1 : 0;
    found = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
    close(fd);
    return found;
}

int cordon_fs_find_program(int root_fd, const char *argv0, const char *cwd, const char *path,
                           struct cordon_error *err)
{
    char cand[2 * CORDON_PATH_MAX + 2];

    if (argv0 == NULL || argv0[0] == '\0' || strlen(argv0) > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "argv[0]: must be 1 to %d bytes", CORDON_PATH_MAX);
    if (cwd == NULL || strlen(cwd) > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "cwd: longer than %d bytes",
                                CORDON_PATH_MAX);
    if (strchr(argv0, '/') != NULL) {
        snprintf(cand, sizeof(cand), "%s%s%s", argv0[0] == '/' ? "" : cwd,
                 argv0[0] == '/' ? "" : "/", argv0);
        if (program_at(root_fd, cand) != 0)
            return 0;
        return cordon_error_set(err, CORDON_E_NOT_FOUND, ENOENT,
                                "argv[0]: \"%.*s\": no such program inside the sandbox",
                                cordon_text_fit(argv0, 200), argv0);
    }
    for (const char *p = path != NULL ? path : ""; *p != '\0';) {
        const char *end = strchrnul(p, ':');
        size_t n = (size_t)(end - p);

        if (n > 0 && p[0] == '/' && n <= CORDON_PATH_MAX) {
            snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, argv0);
            if (program_at(root_fd, cand) != 0)
                return 0;
        }
        p = *end == ':' ? end + 1 : end;
    }
    return cordon_error_set(err, CORDON_E_NOT_FOUND, ENOENT,
                            "argv[0]: \"%.*s\": not found in PATH inside the sandbox "
                            "(PATH=%.*s)", cordon_text_fit(argv0, 200), argv0,
                            cordon_text_fit(path != NULL ? path : "", 200),
                            path != NULL ? path : "");
}
