/*
 * cordon-observe: what the observer can reach of the processes in its
 * sandbox that it did not start (docs/observation.md, "process_contained").
 *
 * Two questions, both about the sandbox's own process table:
 * - Can code inside touch PID 1, the sandbox's init (which often holds the
 *   deadline and serves the host's commands)? It runs as the sandbox's
 *   uid, and prlimit(2) on another process asks only for matching uids:
 *   code inside that sets PID 1's RLIMIT_SIGPENDING to 0 or its
 *   RLIMIT_NOFILE to 4 ends or starves it. The observer reads PID 1's
 *   RLIMIT_NOFILE and writes the same values back, which changes
 *   nothing; the write is what counts (a kernel may let a read through
 *   and refuse a change).
 * - Does anything run that neither is PID 1 nor was started by this
 *   exec? A docker image's HEALTHCHECK, a daemon left by an earlier
 *   exec or planted by the image runs image code outside any exec the
 *   host asked for. This exec's tree is the observer's topmost ancestor
 *   below PID 1 (or below a parent outside the namespace, pid 0) and
 *   everything under it.
 *
 * The table is read from /proc, bounded: at most MAX_PROCS entries (a
 * table that was cut short is reported so, and the host does not take it
 * as complete), at most MAX_LISTED of the others named in the report.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inside/observer.h"

#define MAX_PROCS 4096
#define MAX_LISTED 32
#define COMM_MAX 16

struct proc {
    pid_t pid, ppid;
    char comm[COMM_MAX + 1];
};

/* Whether pid's limits can be changed: prlimit(pid, RLIMIT_NOFILE) read,
 * then the same values written back (no change). ret_read_ok says whether
 * the read worked; returns 0 when the write worked, else the errno of the
 * step that failed. */
static int limits_reach(pid_t pid, bool *ret_read_ok)
{
    struct rlimit old;

    *ret_read_ok = false;
    if (prlimit(pid, RLIMIT_NOFILE, NULL, &old) != 0)
        return errno;
    *ret_read_ok = true;
    return prlimit(pid, RLIMIT_NOFILE, &old, NULL) == 0 ? 0 : errno;
}

/* pid, comm and ppid from /proc/PID/stat; comm may hold spaces and ')',
 * so the fields after it are found from the last ')'. */
static bool stat_read(pid_t pid, struct proc *ret)
{
    char path[64], buf[512], *open_paren, *close_paren;
    ssize_t n;
    long ppid;
    size_t len;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    n = cordon__fs_read_small(AT_FDCWD, path, buf, sizeof(buf));
    if (n <= 0)
        return false;
    buf[n] = '\0';
    open_paren = strchr(buf, '(');
    close_paren = strrchr(buf, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
        sscanf(close_paren + 1, " %*c %ld", &ppid) != 1)
        return false;
    len = (size_t)(close_paren - open_paren - 1);
    if (len > COMM_MAX)
        len = COMM_MAX;
    memcpy(ret->comm, open_paren + 1, len);
    ret->comm[len] = '\0';
    ret->pid = pid;
    ret->ppid = (pid_t)ppid;
    return true;
}

static const struct proc *find(const struct proc *t, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].pid == pid)
            return &t[i];
    return NULL;
}

/* The topmost ancestor of pid below PID 1 or below a parent this table
 * does not hold (pid 0: outside the namespace). Bounded by the table. */
static pid_t tree_root(const struct proc *t, size_t n, pid_t pid)
{
    for (size_t steps = 0; steps <= n; steps++) {
        const struct proc *p = find(t, n, pid);

        if (p == NULL || p->ppid <= 1 || find(t, n, p->ppid) == NULL)
            return pid;
        pid = p->ppid;
    }
    return pid;
}

static bool in_tree(const struct proc *t, size_t n, pid_t pid, pid_t root)
{
    for (size_t steps = 0; steps <= n; steps++) {
        const struct proc *p;

        if (pid == root)
            return true;
        if ((p = find(t, n, pid)) == NULL || p->ppid <= 1)
            return false;
        pid = p->ppid;
    }
    return false;
}

void cordon__observe_reach(struct cordon__jw *w)
{
    struct proc *t = calloc(MAX_PROCS, sizeof(*t));
    size_t n = 0, others = 0, others_reached = 0;
    bool complete = true;
    pid_t self = getpid(), root;
    DIR *d = opendir("/proc");
    struct dirent *de;
    bool read_ok = false;
    int e1;

    if (t == NULL || d == NULL) {
        cordon__note_error("reach: %s", t == NULL ? "out of memory" : "cannot list /proc");
        complete = false;
    }
    while (t != NULL && d != NULL && (de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);

        if (!isdigit((unsigned char)de->d_name[0]) || *end != '\0' || pid <= 0)
            continue;
        if (n == MAX_PROCS) {
            complete = false;
            break;
        }
        /* A process that ended between readdir and the read is gone. */
        if (stat_read((pid_t)pid, &t[n]))
            n++;
    }
    if (d != NULL)
        closedir(d);
    root = tree_root(t, n, self);

    cordon__jw_open(w, "reach", '{');
    cordon__jw_open(w, "pid1", '{');
    /* The observer as PID 1 would read its own limits: nothing to learn. */
    cordon__jw_bool(w, "self", self == 1);
    e1 = self == 1 ? 0 : limits_reach(1, &read_ok);
    cordon__jw_bool(w, "read_ok", read_ok);
    cordon__jw_bool(w, "set_ok", self != 1 && e1 == 0);
    cordon__jw_errno(w, e1);
    cordon__jw_close(w, '}');
    cordon__jw_int(w, "exec_root", root);
    cordon__jw_uint(w, "scanned", n);
    cordon__jw_bool(w, "complete", complete);
    cordon__jw_open(w, "others", '[');
    for (size_t i = 0; i < n; i++) {
        struct rlimit old;
        bool reached;

        if (t[i].pid == 1 || in_tree(t, n, t[i].pid, root))
            continue;
        /* Only read: the write-back is for PID 1 alone, so that the
         * observer never races a process that changes its own limits. */
        reached = prlimit(t[i].pid, RLIMIT_NOFILE, NULL, &old) == 0;
        others++;
        others_reached += reached;
        if (others > MAX_LISTED)
            continue;
        cordon__jw_open(w, NULL, '{');
        cordon__jw_int(w, "pid", t[i].pid);
        cordon__jw_int(w, "ppid", t[i].ppid);
        cordon__jw_string(w, "comm", t[i].comm);
        cordon__jw_bool(w, "read_ok", reached);
        cordon__jw_close(w, '}');
    }
    cordon__jw_close(w, ']');
    cordon__jw_uint(w, "others_count", others);
    cordon__jw_uint(w, "others_reached", others_reached);
    cordon__jw_close(w, '}');
    free(t);
}

/*
 * --attack-pid1 HOST_PID_NS: a hostile program for the contract suite. In
 * a sandbox of its own pid namespace (the observer's /proc/self/ns/pid
 * must differ from HOST_PID_NS, the suite's own, so that PID 1 is the
 * init of that namespace and not the host's; PID 1's own link is closed
 * to a process that may not ptrace it; and the observer is not PID 1),
 * it goes for PID 1 through its limits: RLIMIT_SIGPENDING to 0, so that a
 * sigqueue or tgkill arrives without its siginfo (as SI_USER from pid 0,
 * what a kill from outside looks like), then SIGTERM, SIGINT and SIGHUP by
 * both; then RLIMIT_NOFILE's soft limit to 4, which starves an agent of a
 * request's descriptors. Prints what the kernel allowed ("sigpending set"
 * or "sigpending refused ERRNO", the same for nofile), waits a second and
 * prints "alive". Exit 3, sending nothing, when the observer shares the
 * host's pid namespace ("host") or cannot tell.
 */
int cordon__attack_pid1(const char *host_pid_ns)
{
    struct rlimit none = { 0, 0 }, nofile;
    char link[128];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
    static const int stops[] = { SIGTERM, SIGINT, SIGHUP };

    if (n < 0 || getpid() == 1) {
        printf("pid namespace unknown: %s\n", n < 0 ? strerror(errno) : "the observer is PID 1");
        return 3;
    }
    link[n] = '\0';
    if (strcmp(link, host_pid_ns) == 0) {
        printf("host\n");
        return 3;
    }
    printf("sigpending %s\n", prlimit(1, RLIMIT_SIGPENDING, &none, NULL) == 0 ? "set" : strerror(errno));
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        union sigval v = { 0 };

        sigqueue(1, stops[i], v);
        syscall(SYS_tgkill, 1, 1, stops[i]);
    }
    if (prlimit(1, RLIMIT_NOFILE, NULL, &nofile) == 0) {
        nofile.rlim_cur = 4;
        printf("nofile %s\n", prlimit(1, RLIMIT_NOFILE, &nofile, NULL) == 0 ? "set" : strerror(errno));
    } else {
        printf("nofile %s\n", strerror(errno));
    }
    fflush(stdout);
    sleep(1);
    printf("alive\n");
    return 0;
}
