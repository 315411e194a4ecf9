/*
 * cordon-contract: what a check proves before it does anything that could
 * harm a host.
 *
 * The suite is run on providers nobody trusts yet. A check that signals,
 * fills, forks or floods inside an execution would do it to the host if
 * the provider runs commands there while claiming isolation, so such a
 * check runs only when two things hold: the suite's own observation
 * through the provider (not the provider's word) shows the sandbox
 * contained, and the script itself proves from inside, right before it
 * acts, that it is in neither the suite's pid, mount nor user namespace
 * and cannot see a file the suite has just made.
 * Either failing fails the check with CONTRACT_NOT_CONTAINED: a liar must
 * fail, and nothing was done to find that out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/facts.h>
#include "tests/contract/contract.h"

/* The namespaces a script must not share with the suite. */
static const char *const contain_ns[] = { "pid", "mnt", "user" };
#define CONTAIN_NS_COUNT (sizeof(contain_ns) / sizeof(contain_ns[0]))

/* readlink of /proc/PID/ns/NAME into buf ("pid:[4026531836]"); false when
 * it cannot be read. */
static bool ns_link(const char *pid, const char *name, char *buf, size_t size)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, name);
    n = readlink(path, buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return false;
    buf[n] = '\0';
    /* The text goes into a shell script between single quotes. */
    return strspn(buf, "abcdefghijklmnopqrstuvwxyz_:[]0123456789") == (size_t)n;
}

/*
 * The namespace links the script must not see as its own, each after a
 * space: the suite's, and PID 1's as the suite sees them where it may read
 * them (a suite run in a namespace of its own thus also keeps a sandbox
 * out of its parent's). A link the suite cannot read of itself fails the
 * check: without it nothing can be proved.
 */
static void forbidden_links(struct contract_text *t)
{
    char link[64];

    for (size_t i = 0; i < CONTAIN_NS_COUNT; i++) {
        cr_assert(ns_link("self", contain_ns[i], link, sizeof(link)),
                  "%s: cannot read /proc/self/ns/%s of the suite: %s", CONTRACT_NOT_CONTAINED,
                  contain_ns[i], strerror(errno));
        contract_text_add(t, " %s", link);
        if (ns_link("1", contain_ns[i], link, sizeof(link)))
            contract_text_add(t, " %s", link);
    }
}

cJSON *contract_require_contained(const char *axis)
{
    cJSON *facts = contract_require_claim(axis);
    cJSON *observed = contract_observe();
    bool seen = contract_claims(observed, axis);

    cJSON_Delete(observed);
    if (!seen) {
        cJSON_Delete(facts);
        cr_assert_fail("%s: %s is claimed, but the suite's own observation through the provider "
                       "shows it false, so nothing that signals, fills, forks or floods was run "
                       "inside", CONTRACT_NOT_CONTAINED, axis);
    }
    return facts;
}

/*
 * A file of the suite's that no sandbox may see: a fresh token in a temp
 * dir (tracked, removed in teardown), world-readable so that only a
 * boundary can hide it. Its path into buf.
 */
static void host_canary(char *buf, size_t size)
{
    const char *dir = contract_temp_dir(0755);
    char token[33];
    FILE *f;

    contract_random_hex(token, 16);
    snprintf(buf, size, "%s/cordon-contained-%s", dir, token);
    /* It goes between single quotes into the script. */
    cr_assert(strchr(buf, '\'') == NULL, "a quote in the temp path %s", buf);
    f = fopen(buf, "wx");
    cr_assert_not_null(f, "create %s: %s", buf, strerror(errno));
    fclose(f);
    cr_assert_eq(chmod(buf, 0644), 0, "chmod %s: %s", buf, strerror(errno));
}

/*
 * The guard, in POSIX sh. The pid and user namespace links of the
 * script's own must be readable and none of the forbidden ones; so must
 * the mount namespace's, where the kernel has the link (gVisor's Sentry
 * has none), and the suite's own canary file must not be visible: a
 * different mount namespace with the host's tree bound in would not
 * contain a fill either. A user namespace shared with the host is how
 * most containers run, and harmless to a process that has no uid 0 and no
 * capability in it; it is refused only for such a one.
 */
static char *guarded_script(const char *script, char *canary, size_t canary_size)
{
    struct contract_text forbidden = { 0 };
    char *text = NULL;
    int n;

    forbidden_links(&forbidden);
    host_canary(canary, canary_size);
    n = asprintf(&text,
                 "cordon_refuse() { echo '" CONTRACT_NOT_CONTAINED ": '\"$*\"; exit %d; }\n"
                 "cordon_unprivileged() {\n"
                 "  cordon_u=; cordon_c=\n"
                 "  while read -r cordon_k cordon_v cordon_rest; do\n"
                 "    case $cordon_k in Uid:) cordon_u=$cordon_v ;; CapEff:) cordon_c=$cordon_v ;; "
                 "esac\n"
                 "  done </proc/self/status\n"
                 "  [ -n \"$cordon_u\" ] && [ \"$cordon_u\" != 0 ] || return 1\n"
                 "  case ${cordon_c:-x} in *[!0]*) return 1 ;; esac\n"
                 "}\n"
                 "for cordon_ns in pid mnt user; do\n"
                 "  cordon_seen=$(readlink /proc/self/ns/$cordon_ns 2>/dev/null)\n"
                 "  if [ -z \"$cordon_seen\" ]; then\n"
                 "    [ $cordon_ns = mnt ] && continue\n"
                 "    cordon_refuse \"/proc/self/ns/$cordon_ns cannot be read inside\"\n"
                 "  fi\n"
                 "  case '%s ' in *\" $cordon_seen \"*)\n"
                 "    [ $cordon_ns = user ] && cordon_unprivileged ||\n"
                 "      cordon_refuse \"its $cordon_ns namespace $cordon_seen is the suite's\" ;;\n"
                 "  esac\n"
                 "done\n"
                 "! [ -e '%s' ] || cordon_refuse \"the suite's file %s is visible inside\"\n"
                 "%s",
                 CONTRACT_NOT_CONTAINED_EXIT, contract_text_str(&forbidden), canary, canary, script);
    contract_text_clear(&forbidden);
    cr_assert(n >= 0, "out of memory for a guarded script");
    return text;
}

char *contract_contained_script(const char *script)
{
    char canary[PATH_MAX];

    return guarded_script(script, canary, sizeof(canary));
}

bool contract_refused_as_not_contained(const struct cordon_exec_outcome *out, const char *stdout_text)
{
    return out->status == CORDON_RUN_EXITED && out->exit_code == CONTRACT_NOT_CONTAINED_EXIT &&
           strncmp(stdout_text, CONTRACT_NOT_CONTAINED, strlen(CONTRACT_NOT_CONTAINED)) == 0;
}

void contract_sh_contained(const char *state, const char *script, struct cordon_exec_outcome *ret)
{
    char *guarded = contract_contained_script(script), *text;

    contract_sh(state, guarded, ret);
    free(guarded);
    text = contract_stream_text(&ret->out);
    if (contract_refused_as_not_contained(ret, text)) {
        char why[300 + CONTRACT_CLIP_MARK];

        contract_clip(text, 300, why, sizeof(why));
        free(text);
        cordon_exec_outcome_clear(ret);
        cr_assert_fail("%s", why);
    }
    free(text);
}

/* A mountinfo field with its octal escapes (\040) undone, in place. */
static void unescape_mountinfo(char *s)
{
    char *w = s;

    for (char *r = s; *r != '\0'; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w = *r++;
        }
    }
    *w = '\0';
}

/* Remove the fill files at the top of one mountpoint; returns how many. */
static int remove_fills_in(const char *mountpoint)
{
    DIR *dir = opendir(mountpoint);
    struct dirent *de;
    int removed = 0;

    if (dir == NULL)
        return 0;
    while ((de = readdir(dir)) != NULL) {
        struct stat st;

        if (strncmp(de->d_name, CONTRACT_FILL_PREFIX, strlen(CONTRACT_FILL_PREFIX)) != 0)
            continue;
        /* Only a file the fill made: never a link, a directory or another's. */
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlinkat(dirfd(dir), de->d_name, 0) == 0) {
            fprintf(stderr, "cordon-contract: removed %s/%s, left by an earlier run\n", mountpoint,
                    de->d_name);
            removed++;
        }
    }
    closedir(dir);
    return removed;
}

int contract_remove_stale_fills(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    int removed = 0;

    if (f == NULL)
        return 0;
    while (getline(&line, &cap, f) > 0) {
        char *mountpoint = NULL, *sep = strstr(line, " - tmpfs ");
        char *save = NULL, *field = strtok_r(line, " ", &save);

        /* Field 5 is the mountpoint; " - tmpfs " the filesystem type. */
        for (int i = 1; field != NULL && i < 5; i++)
            field = strtok_r(NULL, " ", &save);
        mountpoint = field;
        if (sep == NULL || mountpoint == NULL || mountpoint > sep)
            continue;
        unescape_mountinfo(mountpoint);
        removed += remove_fills_in(mountpoint);
    }
    free(line);
    fclose(f);
    return removed;
}

/*
 * Run the guarded script with /bin/sh in a child of the suite, after
 * unshare(flags) (a new pid namespace takes effect for a child, so the
 * script then runs in a grandchild) and, with CLONE_NEWNS, an empty tmpfs
 * over the directory hide (the canary's: a file system of its own); its
 * stdout into buf. Returns the exit status, or -1 when this kernel or
 * this user cannot make those namespaces.
 */
static int run_guard_here(int flags, const char *guarded, const char *hide, char *buf, size_t size)
{
    int p[2], status = 0;
    size_t len = 0;
    ssize_t n;
    pid_t pid;

    cr_assert_eq(pipe(p), 0, "pipe: %s", strerror(errno));
    pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* The child only unshares, mounts, forks and execs or exits. */
        pid_t inner;
        int st;

        dup2(p[1], STDOUT_FILENO);
        if (flags != 0 &&
            (unshare(flags) != 0 ||
             ((flags & CLONE_NEWNS) != 0 &&
              (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
               mount("none", hide, "tmpfs", 0, "size=64k") != 0))))
            _exit(125);
        inner = fork();
        if (inner < 0)
            _exit(126);
        if (inner == 0) {
            execl("/bin/sh", "sh", "-c", guarded, (char *)NULL);
            _exit(127);
        }
        while (waitpid(inner, &st, 0) < 0 && errno == EINTR)
            ;
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
    }
    close(p[1]);
    while (len + 1 < size && (n = read(p[0], buf + len, size - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    cr_assert(WIFEXITED(status), "the guarded shell did not exit (status %d)", status);
    return WEXITSTATUS(status) == 125 ? -1 : WEXITSTATUS(status);
}

/*
 * The guard itself, on the suite's own host and not through the provider,
 * one protection at a time: a script in the suite's namespaces is refused;
 * with the suite's file hidden, one in the suite's pid namespace is
 * refused for it, and one in a pid namespace of its own but the suite's
 * user namespace, as root, for that; one in user, pid and mount
 * namespaces of its own passes. A case this kernel or user cannot make
 * is said and left out; the first never is. What the checks that signal
 * or fill rely on is thus seen to work on every run, on the machine it
 * protects.
 */
Test(contract, containment_guard_refuses_the_suites_own_namespaces)
{
    static const struct {
        int flags;
        const char *what, *refusal; /* refusal NULL: must run */
    } cases[] = {
        { 0, "the suite's own namespaces", "" },
        { CLONE_NEWNS, "a mount namespace of its own, the suite's file hidden", "pid namespace" },
        { CLONE_NEWNS | CLONE_NEWPID, "mount and pid namespaces of its own, as root in the "
          "suite's user namespace", "user namespace" },
        { CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, "user, mount and pid namespaces of its own",
          NULL },
    };
    char canary[PATH_MAX], out[1024];
    char *guarded = guarded_script("echo ran", canary, sizeof(canary));

    *strrchr(canary, '/') = '\0';
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run_guard_here(cases[i].flags, guarded, canary, out, sizeof(out));

        if (rc < 0 && cases[i].flags != 0) {
            cr_log_info("a script in %s: this kernel or user cannot make them here, not checked",
                        cases[i].what);
            continue;
        }
        if (cases[i].refusal == NULL)
            cr_expect(rc == 0 && strcmp(out, "ran\n") == 0,
                      "a script in %s was refused by the containment guard (exit %d): %s",
                      cases[i].what, rc, CONTRACT_CLIP(out));
        else
            cr_expect(rc == CONTRACT_NOT_CONTAINED_EXIT &&
                          strncmp(out, CONTRACT_NOT_CONTAINED, strlen(CONTRACT_NOT_CONTAINED)) == 0 &&
                          strstr(out, cases[i].refusal) != NULL,
                      "a script in %s was not refused by the containment guard for its %s "
                      "(exit %d): %s", cases[i].what, cases[i].refusal[0] ? cases[i].refusal : "host",
                      rc, CONTRACT_CLIP(out));
    }
    free(guarded);
}
