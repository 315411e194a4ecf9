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
 * nor, on the suite's own kernel, the kernel's initial ones, and, before a
 * fill, that it cannot see a file the suite has just made.
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
#include "contract/contract.h"

/* The namespaces a script must not share with the suite. */
static const char *const contain_ns[] = { "pid", "mnt", "user" };
#define CONTAIN_NS_COUNT (sizeof(contain_ns) / sizeof(contain_ns[0]))

/*
 * The kernel's initial namespaces, by the inode numbers the kernel gives
 * them whatever the machine (include/uapi/linux/nsfs.h: PID_NS_INIT_INO,
 * USER_NS_INIT_INO since Linux 3.8, MNT_NS_INIT_INO since 6.18, below the
 * range any other namespace is numbered from). A suite run inside a
 * container does not share them, yet a provider that runs commands on the
 * outer host does. Before 6.18 the initial mount namespace is in practice
 * mnt:[4026531840], the first number handed out at boot, but not by a
 * constant: from 6.18 on any namespace may get that number, so it is not
 * forbidden, and the pid and user ones cover that case.
 * A VM runs its commands in its own kernel's initial namespaces, which
 * harms nothing: they are forbidden only where the script sees the
 * suite's boot id (the same kernel; containers and a liar on the host see
 * it) or none (it cannot tell).
 */
#define CONTAIN_INIT_NS " pid:[4026531836] user:[4026531837] mnt:[4026531832]"
#define CONTAIN_BOOT_ID "/proc/sys/kernel/random/boot_id"

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

/* The suite's kernel boot id into buf, "" when it cannot be read (every
 * script then gets the initial namespaces forbidden). */
static void suite_boot_id(char *buf, size_t size)
{
    FILE *f = fopen(CONTAIN_BOOT_ID, "re");

    buf[0] = '\0';
    if (f != NULL) {
        if (fgets(buf, (int)size, f) == NULL)
            buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    /* It goes into the script between single quotes. */
    if (strspn(buf, "0123456789abcdef-") != strlen(buf))
        buf[0] = '\0';
}

/* The axis the suite's observation must show before harm is done. */
static const char *harm_axis(enum contract_harm harm)
{
    return harm == CONTRACT_HARM_FILL ? CORDON_AXIS_HOST_FS_RESTRICTED
                                      : CORDON_AXIS_PROCESS_CONTAINED;
}

cJSON *contract_require_contained(enum contract_harm harm)
{
    const char *axis = harm_axis(harm);
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
 * The guard, in POSIX sh, before script. The pid and user namespace links
 * of the script's own must be readable and none of the forbidden ones
 * (the suite's, and the kernel's initial ones where the script sees the
 * suite's boot id or none); so must the mount namespace's, where the
 * kernel has the link (gVisor's Sentry has none). A user namespace shared
 * with the host is how most containers run, and harmless to a process
 * that has no uid 0 and no capability in it; it is refused only for such
 * a one. Before a fill (canary not NULL), the suite's canary file must not
 * be visible either: a different mount namespace with the host's tree
 * bound in would not contain a fill. A signal needs no such proof, and a
 * sandbox that honestly shows the host's files read-only in a mount
 * namespace of its own (bubblewrap) passes it.
 */
static char *guard_text(const char *forbidden, const char *boot_id, const char *canary,
                        const char *script)
{
    char *text = NULL, *hidden = NULL;
    int n;

    if (canary != NULL) {
        n = asprintf(&hidden,
                     "! [ -e '%s' ] || cordon_refuse \"the suite's file %s is visible inside\"\n",
                     canary, canary);
        cr_assert(n >= 0, "out of memory for a guarded script");
    }
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
                 "cordon_init=\n"
                 "case \"$(cat " CONTAIN_BOOT_ID " 2>/dev/null)\" in\n"
                 "  '' | '%s') cordon_init='" CONTAIN_INIT_NS "' ;;\n"
                 "esac\n"
                 "for cordon_ns in pid mnt user; do\n"
                 "  cordon_seen=$(readlink /proc/self/ns/$cordon_ns 2>/dev/null)\n"
                 "  if [ -z \"$cordon_seen\" ]; then\n"
                 "    [ $cordon_ns = mnt ] && continue\n"
                 "    cordon_refuse \"/proc/self/ns/$cordon_ns cannot be read inside\"\n"
                 "  fi\n"
                 "  cordon_whose=\n"
                 "  case \"$cordon_init \" in *\" $cordon_seen \"*)\n"
                 "    cordon_whose=\"the kernel's initial one, and this the suite's kernel\" ;;\n"
                 "  esac\n"
                 "  case '%s ' in *\" $cordon_seen \"*) cordon_whose=\"the suite's\" ;; esac\n"
                 "  if [ -n \"$cordon_whose\" ]; then\n"
                 "    [ $cordon_ns = user ] && cordon_unprivileged ||\n"
                 "      cordon_refuse \"its $cordon_ns namespace $cordon_seen is $cordon_whose\"\n"
                 "  fi\n"
                 "done\n"
                 "%s%s",
                 CONTRACT_NOT_CONTAINED_EXIT, boot_id, forbidden, hidden != NULL ? hidden : "",
                 script);
    free(hidden);
    cr_assert(n >= 0, "out of memory for a guarded script");
    return text;
}

char *contract_contained_script(enum contract_harm harm, const char *script)
{
    struct contract_text forbidden = { 0 };
    char canary[PATH_MAX], boot_id[64], *text;

    forbidden_links(&forbidden);
    suite_boot_id(boot_id, sizeof(boot_id));
    if (harm == CONTRACT_HARM_FILL)
        host_canary(canary, sizeof(canary));
    text = guard_text(contract_text_str(&forbidden), boot_id,
                      harm == CONTRACT_HARM_FILL ? canary : NULL, script);
    contract_text_clear(&forbidden);
    return text;
}

bool contract_refused_as_not_contained(const struct cordon_exec_outcome *out, const char *stdout_text)
{
    return out->status == CORDON_RUN_EXITED && out->exit_code == CONTRACT_NOT_CONTAINED_EXIT &&
           strncmp(stdout_text, CONTRACT_NOT_CONTAINED, strlen(CONTRACT_NOT_CONTAINED)) == 0;
}

void contract_sh_contained(const char *state, enum contract_harm harm, const char *script,
                           struct cordon_exec_outcome *ret)
{
    char *guarded = contract_contained_script(harm, script), *text;

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

/* Remove the suite's fill files at the top of one directory; returns how
 * many. */
static int remove_fills_in(const char *path)
{
    DIR *dir = opendir(path);
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
            fprintf(stderr, "cordon-contract: removed %s/%s, left by an earlier run\n", path,
                    de->d_name);
            removed++;
        }
    }
    closedir(dir);
    return removed;
}

/*
 * Only the host's usual tmpfs tops, where a fill through a provider that
 * runs commands on the host writes (the fill writes at the top of every
 * tmpfs it sees), and the suite's $TMPDIR: never every tmpfs mounted, which
 * as root would reach Docker's tmpfs volumes under /var/lib/docker and
 * other sandboxes' workspaces, nor a directory below these.
 */
int contract_remove_stale_fills(void)
{
    const char *dirs[] = { "/dev/shm", "/tmp", "/run", getenv("TMPDIR") };
    struct stat seen[sizeof(dirs) / sizeof(dirs[0])];
    size_t nseen = 0;
    int removed = 0;

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        struct stat st;
        bool again = false;

        if (dirs[i] == NULL || dirs[i][0] != '/' || stat(dirs[i], &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        /* $TMPDIR is often /tmp: each directory once. */
        for (size_t j = 0; j < nseen; j++)
            again = again || (seen[j].st_dev == st.st_dev && seen[j].st_ino == st.st_ino);
        if (again)
            continue;
        seen[nseen++] = st;
        removed += remove_fills_in(dirs[i]);
    }
    return removed;
}

/*
 * Run the guarded script with /bin/sh in a child of the suite, after
 * unshare(flags) (a new pid namespace takes effect for a child, so the
 * script then runs in a grandchild) and, with CLONE_NEWNS and hide not
 * NULL, an empty tmpfs over the directory hide (the canary's: a file
 * system of its own); its
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
               (hide != NULL && mount("none", hide, "tmpfs", 0, "size=64k") != 0)))))
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
 * namespaces of its own passes, and so does it with the suite's file in
 * sight before a signal, not before a fill. Where the suite runs in the
 * kernel's initial namespaces, a script there is refused for them even
 * when the suite's own links are not those (a suite in a container, a
 * provider running commands on the outer host), unless it sees another
 * kernel's boot id (a VM's). A case this kernel or user cannot make is
 * said and left out; the first never is. What the checks that signal or
 * fill rely on is thus seen to work on every run, on the machine it
 * protects.
 */
Test(contract, containment_guard_refuses_the_suites_own_namespaces)
{
    enum { OWN = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID };
    /* Links no namespace has: the suite seen as if it were elsewhere. */
    static const char elsewhere[] = " pid:[1] mnt:[1] user:[1]";
    static const struct {
        int flags;
        bool hide, fill, initial; /* initial: the suite elsewhere, only in the initial namespaces */
        const char *boot_id;      /* NULL: the suite's */
        const char *what, *refusal; /* refusal NULL: must run */
    } cases[] = {
        { 0, false, true, false, NULL, "the suite's own namespaces", "" },
        { CLONE_NEWNS, true, true, false, NULL, "a mount namespace of its own, the suite's file "
          "hidden", "pid namespace" },
        { CLONE_NEWNS | CLONE_NEWPID, true, true, false, NULL, "mount and pid namespaces of its "
          "own, as root in the suite's user namespace", "user namespace" },
        { OWN, true, true, false, NULL, "user, mount and pid namespaces of its own", NULL },
        { OWN, false, true, false, NULL, "namespaces of its own, the suite's file in sight, before "
          "a fill", "is visible inside" },
        { OWN, false, false, false, NULL, "namespaces of its own, the suite's file in sight, "
          "before a signal", NULL },
        { 0, false, false, true, NULL, "the kernel's initial namespaces, the suite elsewhere",
          "pid namespace pid:[4026531836] is the kernel's initial one" },
        { 0, false, false, true, "00000000-0000-4000-8000-000000000000", "another kernel's "
          "initial namespaces (a VM's), the suite elsewhere", NULL },
    };
    struct contract_text forbidden = { 0 };
    char canary[PATH_MAX], boot_id[64], link[64], out[1024];
    bool initial = ns_link("self", "pid", link, sizeof(link)) &&
                   strcmp(link, "pid:[4026531836]") == 0;

    forbidden_links(&forbidden);
    suite_boot_id(boot_id, sizeof(boot_id));
    host_canary(canary, sizeof(canary));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *guarded, hide[PATH_MAX];
        int rc;

        if (cases[i].initial && !initial) {
            cr_log_info("a script in %s: the suite is not in the initial pid namespace, not "
                        "checked", cases[i].what);
            continue;
        }
        guarded = guard_text(cases[i].initial ? elsewhere : contract_text_str(&forbidden),
                             cases[i].boot_id != NULL ? cases[i].boot_id : boot_id,
                             cases[i].fill ? canary : NULL, "echo ran");
        snprintf(hide, sizeof(hide), "%s", canary);
        *strrchr(hide, '/') = '\0';
        rc = run_guard_here(cases[i].flags, guarded, cases[i].hide ? hide : NULL, out, sizeof(out));
        free(guarded);
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
                      "a script in %s was not refused by the containment guard for \"%s\" "
                      "(exit %d): %s", cases[i].what, cases[i].refusal[0] ? cases[i].refusal : "host",
                      rc, CONTRACT_CLIP(out));
    }
    contract_text_clear(&forbidden);
}
