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
 * acts, that it is in neither the suite's pid, mount nor user namespace.
 * Either failing fails the check with CONTRACT_NOT_CONTAINED: a liar must
 * fail, and nothing was done to find that out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    static const char *const always[] = { CORDON_AXIS_PROCESS_CONTAINED,
                                          CORDON_AXIS_HOST_FS_RESTRICTED };
    cJSON *facts = contract_require_claim(axis);
    cJSON *observed = contract_observe();
    struct contract_text missing = { 0 };

    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]) + 1; i++) {
        const char *a = i < sizeof(always) / sizeof(always[0]) ? always[i] : axis;

        if (!contract_claims(observed, a) && strstr(contract_text_str(&missing), a) == NULL)
            contract_text_add(&missing, "%s%s", missing.len ? ", " : "", a);
    }
    cJSON_Delete(observed);
    if (missing.len > 0) {
        cJSON_Delete(facts);
        cr_assert_fail("%s: the suite's own observation through the provider shows %s false, "
                       "so nothing that signals, fills, forks or floods was run inside",
                       CONTRACT_NOT_CONTAINED, contract_text_str(&missing));
    }
    return facts;
}

/*
 * The guard, in POSIX sh: every namespace link of the script's own must be
 * readable and none of the forbidden ones. A user namespace shared with
 * the host is how most containers run, and harmless to a process that has
 * no uid 0 and no capability in it; it is refused only for such a one.
 */
char *contract_contained_script(const char *script)
{
    struct contract_text forbidden = { 0 };
    char *text = NULL;
    int n;

    forbidden_links(&forbidden);
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
                 "  [ -n \"$cordon_seen\" ] || cordon_refuse \"/proc/self/ns/$cordon_ns cannot be "
                 "read inside\"\n"
                 "  case '%s ' in *\" $cordon_seen \"*)\n"
                 "    [ $cordon_ns = user ] && cordon_unprivileged ||\n"
                 "      cordon_refuse \"its $cordon_ns namespace $cordon_seen is the suite's\" ;;\n"
                 "  esac\n"
                 "done\n"
                 "%s",
                 CONTRACT_NOT_CONTAINED_EXIT, contract_text_str(&forbidden), script);
    contract_text_clear(&forbidden);
    cr_assert(n >= 0, "out of memory for a guarded script");
    return text;
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
 * Run the guarded script with /bin/sh in a child of the suite, in new
 * user, pid and mount namespaces when fresh is true; its stdout into buf.
 * Returns the exit status, or -1 when fresh namespaces cannot be made
 * here (unshare refused).
 */
static int run_guard_here(bool fresh, const char *guarded, char *buf, size_t size)
{
    int p[2], status = 0;
    size_t len = 0;
    ssize_t n;
    pid_t pid;

    cr_assert_eq(pipe(p), 0, "pipe: %s", strerror(errno));
    pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* The child only unshares, forks (a new pid namespace takes
         * effect for children) and execs or exits. */
        dup2(p[1], STDOUT_FILENO);
        if (fresh) {
            pid_t inner;

            if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0)
                _exit(125);
            inner = fork();
            if (inner < 0)
                _exit(126);
            if (inner > 0) {
                int st;

                while (waitpid(inner, &st, 0) < 0 && errno == EINTR)
                    ;
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
            }
        }
        execl("/bin/sh", "sh", "-c", guarded, (char *)NULL);
        _exit(127);
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
    if (fresh && WEXITSTATUS(status) == 125)
        return -1;
    return WEXITSTATUS(status);
}

/*
 * The guard itself, on the suite's own host and not through the provider:
 * a script run in the suite's namespaces must be refused, whatever the
 * provider; one run in namespaces of its own (where this kernel lets the
 * suite make them) must pass it. What the checks that signal or fill rely
 * on is then seen to work on every run, on the machine it protects.
 */
Test(contract, containment_guard_refuses_the_suites_own_namespaces)
{
    char *guarded = contract_contained_script("echo ran");
    char out[1024];
    int rc;

    rc = run_guard_here(false, guarded, out, sizeof(out));
    cr_expect(rc == CONTRACT_NOT_CONTAINED_EXIT &&
                  strncmp(out, CONTRACT_NOT_CONTAINED, strlen(CONTRACT_NOT_CONTAINED)) == 0,
              "a script in the suite's own namespaces passed the containment guard (exit %d): %s",
              rc, CONTRACT_CLIP(out));
    rc = run_guard_here(true, guarded, out, sizeof(out));
    if (rc < 0)
        cr_log_info("this kernel does not let the suite make a user namespace: only the refusal "
                    "was checked");
    else
        cr_expect(rc == 0 && strcmp(out, "ran\n") == 0,
                  "a script in fresh user, pid and mount namespaces was refused by the guard "
                  "(exit %d): %s", rc, CONTRACT_CLIP(out));
    free(guarded);
}
