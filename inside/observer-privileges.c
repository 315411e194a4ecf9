/*
 * cordon-observe: what the observer's own process may do, as the kernel
 * reports it: its ids and user namespace's uid map, /proc/self/status's
 * NoNewPrivs, Seccomp and capability lines, libcap's reading of its
 * capabilities, and prctl(2) for the kernels whose status is silent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "inside/observer.h"
#include "core/observe/proc-status.h"

#define CAP_PROBE_MAX 64

/* Our user namespace's uid map as the kernel prints it (bounded): the host
 * maps our euid through it to the uid that would act on its files. */
static void observe_uid_map(struct cordon__jw *w)
{
    char map[1024];
    ssize_t n = -1;
    int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, map, sizeof(map) - 1);
        close(fd);
    }
    if (n >= 0)
        cordon__jw_string_n(w, "uid_map", map, (size_t)n);
    else
        cordon__jw_null(w, "uid_map");
}

void cordon__observe_ids(struct cordon__jw *w)
{
    int groups = getgroups(0, NULL);

    cordon__jw_open(w, "ids", '{');
    cordon__jw_uint(w, "uid", getuid());
    cordon__jw_uint(w, "euid", geteuid());
    cordon__jw_uint(w, "gid", getgid());
    cordon__jw_uint(w, "egid", getegid());
    cordon__jw_int(w, "groups", groups);
    observe_uid_map(w);
    cordon__jw_close(w, '}');
}

void cordon__observe_status(struct cordon__jw *w)
{
    static const char *const int_keys[] = { "NoNewPrivs", "Seccomp", "Seccomp_filters" };
    static const char *const cap_keys[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
    static char status[64 * 1024];
    ssize_t n = cordon__fs_read_small(AT_FDCWD, "/proc/self/status", status, sizeof(status));
    cap_t caps;

    if (n < 0) {
        cordon__note_error("status: cannot read /proc/self/status: %s", strerror(errno));
        n = 0;
    }
    status[n] = '\0';
    cordon__jw_open(w, "status", '{');
    for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
        char v[64], *end;
        long val;

        if (cordon__status_value(status, int_keys[i], v, sizeof(v)) == NULL) {
            cordon__jw_null(w, int_keys[i]);
            continue;
        }
        val = strtol(v, &end, 10);
        if (end == v || *end != '\0') {
            cordon__note_error("status: %s has an unexpected value \"%s\"", int_keys[i], v);
            cordon__jw_null(w, int_keys[i]);
        } else {
            cordon__jw_int(w, int_keys[i], val);
        }
    }
    for (size_t i = 0; i < sizeof(cap_keys) / sizeof(cap_keys[0]); i++) {
        char v[64];

        cordon__jw_string(w, cap_keys[i], cordon__status_value(status, cap_keys[i], v, sizeof(v)));
    }
    caps = cap_get_proc();
    if (caps != NULL) {
        char *text = cap_to_text(caps, NULL);

        cordon__jw_string(w, "caps_text", text);
        if (text == NULL)
            cordon__note_error("status: cap_to_text failed: %s", strerror(errno));
        cap_free(text);
        cap_free(caps);
    } else {
        cordon__note_error("status: cap_get_proc failed: %s", strerror(errno));
        cordon__jw_null(w, "caps_text");
    }
    cordon__jw_close(w, '}');
}

/*
 * What prctl(2) says, for the kernels whose /proc/self/status is silent
 * (gVisor's has no NoNewPrivs and no CapAmb line). Ambient capabilities
 * are probed one by one; EINVAL for the first one means the kernel has
 * none at all, "unsupported".
 */
void cordon__observe_prctl(struct cordon__jw *w)
{
    unsigned long long ambient = 0;
    bool unsupported = false, failed = false;
    int r;

    cordon__jw_open(w, "prctl", '{');
    errno = 0;
    r = prctl(PR_GET_NO_NEW_PRIVS, 0UL, 0UL, 0UL, 0UL);
    if (r >= 0)
        cordon__jw_int(w, "no_new_privs", r);
    else
        cordon__jw_null(w, "no_new_privs");
    errno = 0;
    r = prctl(PR_GET_SECCOMP, 0UL, 0UL, 0UL, 0UL);
    if (r >= 0)
        cordon__jw_int(w, "seccomp", r);
    else
        cordon__jw_null(w, "seccomp");
    for (int cap = 0; cap < CAP_PROBE_MAX; cap++) {
        errno = 0;
        r = prctl(PR_CAP_AMBIENT, (unsigned long)PR_CAP_AMBIENT_IS_SET, (unsigned long)cap, 0UL, 0UL);
        if (r < 0 && errno == EINVAL) {
            /* Past the kernel's last capability, or no ambient set at all. */
            unsupported = cap == 0;
            break;
        }
        if (r < 0) {
            failed = true;
            break;
        }
        if (r == 1)
            ambient |= 1ull << cap;
    }
    if (failed)
        cordon__jw_null(w, "ambient");
    else if (unsupported)
        cordon__jw_string(w, "ambient", "unsupported");
    else {
        char hex[17];

        snprintf(hex, sizeof(hex), "%016llx", ambient);
        cordon__jw_string(w, "ambient", hex);
    }
    cordon__jw_close(w, '}');
}
