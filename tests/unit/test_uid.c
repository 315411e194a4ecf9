/* Unit tests of sdk/uid.c: the per-execution uid pool, in a private directory. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/uid.h>

static char dir[64];
static char pool[80];
static struct cordon_error err;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/cordon-uid-test.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(pool, sizeof(pool), "%s/uids", dir);
    cordon_error_init(&err);
}

static void teardown(void)
{
    cordon_fs_remove_tree_path(dir, NULL);
}

TestSuite(uid, .init = setup, .fini = teardown);

static size_t entries(void)
{
    char cmd[128];
    FILE *p;
    size_t n = 0;

    snprintf(cmd, sizeof(cmd), "ls -A %s", pool);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    while (fgets(cmd, sizeof(cmd), p) != NULL)
        n++;
    pclose(p);
    return n;
}

Test(uid, owners_get_distinct_uids_of_the_pool_and_never_two)
{
    uid_t a, b, again, held;

    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-b", &b, &err), 0, "%s", err.message);
    cr_assert(cordon_uid_in_pool(a) && cordon_uid_in_pool(b));
    cr_assert_neq(a, b);
    again = 0;
    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &again, &err), CORDON_E_EXISTS);
    cr_assert(strstr(err.message, "exec-a already holds a uid") != NULL, "%s", err.message);
    cr_assert_eq(again, 0);
    cr_assert_eq(cordon_uid_held(pool, NULL, "exec-b", &held, &err), 1);
    cr_assert_eq(held, b);
    cr_assert_eq(entries(), 2, "one lock file per owner, no temporary left");
}

Test(uid, give_back_frees_only_the_owners_uid)
{
    uid_t a, b, held;

    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-b", &b, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_give_back(pool, NULL, "exec-a", &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_held(pool, NULL, "exec-a", &held, &err), 0);
    cr_assert_eq(cordon_uid_held(pool, NULL, "exec-b", &held, &err), 1);
    cr_assert_eq(held, b);
    /* Giving back what is not held is success and touches nothing. */
    cr_assert_eq(cordon_uid_give_back(pool, NULL, "exec-a", &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_give_back(pool, NULL, "nobody", &err), 0, "%s", err.message);
    cr_assert_eq(entries(), 1);
}

/* Execution ids are unique per host installation only: two hosts on one
 * machine may both run an execution "job", and neither may take, see or
 * free the other's uid. */
Test(uid, two_hosts_with_one_execution_id_hold_two_uids)
{
    static const char h1[] = "0123456789abcdef0123456789abcdef";
    static const char h2[] = "fedcba9876543210fedcba9876543210";
    uid_t a, b, held;

    cr_assert_eq(cordon_uid_take(pool, h1, "job", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_take(pool, h2, "job", &b, &err), 0, "%s", err.message);
    cr_assert_neq(a, b);
    cr_assert_eq(cordon_uid_held(pool, NULL, "job", &held, &err), 0, "the bare id holds nothing");
    cr_assert_eq(cordon_uid_give_back(pool, h1, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_held(pool, h1, "job", &held, &err), 0);
    cr_assert_eq(cordon_uid_held(pool, h2, "job", &held, &err), 1);
    cr_assert_eq(held, b);
    cr_assert_eq(entries(), 1);
}

Test(uid, a_taken_uid_is_skipped)
{
    uid_t a, b;
    char path[128];
    FILE *f;

    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_give_back(pool, NULL, "exec-a", &err), 0, "%s", err.message);
    /* Someone else holds the uid exec-a would get first. */
    snprintf(path, sizeof(path), "%s/%u", pool, (unsigned)a);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("squatter\n", f);
    fclose(f);
    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &b, &err), 0, "%s", err.message);
    cr_assert_neq(a, b);
    cr_assert(cordon_uid_in_pool(b));
}

Test(uid, bad_owners_are_refused_and_leave_nothing)
{
    static const char *const bad[] = { "", "a/b", "../x", "a b", "a\nb" };
    char long_owner[200];
    uid_t u;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cordon_error_init(&err);
        cr_assert_eq(cordon_uid_take(pool, NULL, bad[i], &u, &err), CORDON_E_INVALID, "owner \"%s\"",
                     bad[i]);
        cr_assert(strstr(err.message, "uid owner: execution id") != NULL, "%s", err.message);
    }
    memset(long_owner, 'a', sizeof(long_owner) - 1);
    long_owner[sizeof(long_owner) - 1] = '\0';
    cordon_error_init(&err);
    cr_assert_eq(cordon_uid_take(pool, NULL, long_owner, &u, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "1..128") != NULL, "%s", err.message);
    cordon_error_init(&err);
    cr_assert_eq(cordon_uid_take(pool, NULL, NULL, &u, &err), CORDON_E_INVALID);
    cordon_error_init(&err);
    cr_assert_eq(cordon_uid_take(pool, "a/b", "exec-a", &u, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "uid owner: host instance id") != NULL, "%s", err.message);
    cr_assert(access(pool, F_OK) != 0 || entries() == 0);
}

Test(uid, a_pool_others_can_write_is_refused)
{
    uid_t u;

    cr_assert_eq(mkdir(pool, 0777), 0);
    cr_assert_eq(chmod(pool, 0777), 0);
    cr_assert_eq(cordon_uid_take(pool, NULL, "exec-a", &u, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "not writable by group or others") != NULL, "%s", err.message);
    cr_assert_eq(entries(), 0);
}

struct racer {
    char owner[16];
    uid_t uid;
    int rc;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct cordon_error e;

    cordon_error_init(&e);
    r->rc = cordon_uid_take(pool, NULL, r->owner, &r->uid, &e);
    return NULL;
}

Test(uid, concurrent_takers_never_share_a_uid)
{
    struct racer r[16];
    pthread_t t[16];

    for (int i = 0; i < 16; i++) {
        snprintf(r[i].owner, sizeof(r[i].owner), "racer-%d", i);
        cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < 16; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(r[i].rc, 0);
        for (int j = 0; j < i; j++)
            cr_assert_neq(r[i].uid, r[j].uid, "%s and %s share %u", r[i].owner, r[j].owner,
                          (unsigned)r[i].uid);
    }
    cr_assert_eq(entries(), 16);
}

/* The state check: only the uid the owner holds, with gid = uid, passes;
 * another owner's uid, a uid of nobody, a gid apart, a uid outside the
 * pool and the same id under another host are refused, naming state.uid. */
Test(uid, check_state_accepts_only_the_owners_uid)
{
    static const char h1[] = "0123456789abcdef0123456789abcdef";
    uid_t a, b;

    cr_assert_eq(cordon_uid_take(pool, h1, "exec-a", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_take(pool, h1, "exec-b", &b, &err), 0, "%s", err.message);
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", a, (gid_t)a, &err), 0, "%s",
                 err.message);
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-b", b, (gid_t)b, &err), 0, "%s",
                 err.message);
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", b, (gid_t)b, &err), CORDON_E_INVALID,
                 "another execution's uid passed");
    cr_expect(strstr(err.message, "state.uid:") != NULL &&
                  strstr(err.message, "is not the uid execution exec-a holds") != NULL,
              "%s", err.message);
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", a, (gid_t)b, &err), CORDON_E_INVALID,
                 "a gid apart from the uid passed");
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", a + 7, (gid_t)(a + 7), &err),
                 CORDON_E_INVALID, "a uid nobody holds passed");
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", 1000, 1000, &err), CORDON_E_INVALID,
                 "a uid outside the pool passed");
    cr_expect_eq(cordon_uid_check_state(pool, NULL, "exec-a", a, (gid_t)a, &err),
                 CORDON_E_INVALID, "the bare id passed for a host's execution");
    cr_expect_eq(cordon_uid_check_state(pool, h1, "bad/id", a, (gid_t)a, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_uid_give_back(pool, h1, "exec-a", &err), 0, "%s", err.message);
    cr_expect_eq(cordon_uid_check_state(pool, h1, "exec-a", a, (gid_t)a, &err), CORDON_E_INVALID,
                 "a uid given back still passed");
}

/* cordon_uid_parse: the one reading of a configured "UID:GID". */
struct parse_case {
    const char *text;
    int code;
    unsigned uid, gid;
    const char *message;
};

static const struct parse_case parse_cases[] = {
    { "65532:65532", 0, 65532, 65532, NULL },
    { "1000:1001", 0, 1000, 1001, NULL },
    { "1:1", 0, 1, 1, NULL },
    { "4294967294:4294967294", 0, 4294967294u, 4294967294u, NULL },
    { "1879048191:1879048191", 0, 1879048191u, 1879048191u, NULL }, /* just below the pool */
    { "1879113728:1879113728", 0, 1879113728u, 1879113728u, NULL }, /* just above it */
    { "0:0", CORDON_E_INVALID, 0, 0, "config.user: \"0:0\" refused: the sandbox user and group must not be root (0)" },
    { "1000:0", CORDON_E_INVALID, 0, 0, "must not be root" },
    { "0:1000", CORDON_E_INVALID, 0, 0, "must not be root" },
    { "4294967295:1", CORDON_E_INVALID, 0, 0, "must be \"UID:GID\" in decimal" },
    { "1:4294967295", CORDON_E_INVALID, 0, 0, "must be \"UID:GID\" in decimal" },
    { "18446744073709551617:1", CORDON_E_INVALID, 0, 0, "must be \"UID:GID\" in decimal" },
    { "1879048192:1000", CORDON_E_INVALID, 0, 0, "1879048192..1879113727 is the uid pool" },
    { "1000:1879113727", CORDON_E_INVALID, 0, 0, "is the uid pool" },
    { "65532", CORDON_E_INVALID, 0, 0, "config.user: \"65532\" must be \"UID:GID\" in decimal" },
    { "65532:", CORDON_E_INVALID, 0, 0, "in decimal" },
    { ":65532", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "+1:1", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "1:-1", CORDON_E_INVALID, 0, 0, "in decimal" },
    { " 1:1", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "1:1 ", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "0x10:1", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "1:1:1", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "nobody", CORDON_E_INVALID, 0, 0, "in decimal" },
    { "", CORDON_E_INVALID, 0, 0, "in decimal" },
    { NULL, CORDON_E_INVALID, 0, 0, "config.user: must be a string \"UID:GID\"" },
};

ParameterizedTestParameters(uid, parse)
{
    static size_t idx[sizeof(parse_cases) / sizeof(parse_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, uid, parse)
{
    const struct parse_case *c = &parse_cases[*i];
    uid_t u = 7;
    gid_t g = 7;
    int r = cordon_uid_parse("config.user", c->text, &u, &g, &err);

    cr_assert_eq(r, c->code, "\"%s\": %d (%s)", c->text ? c->text : "(null)", r, err.message);
    if (r == 0) {
        cr_expect_eq(u, c->uid);
        cr_expect_eq(g, c->gid);
        return;
    }
    cr_expect(strstr(err.message, c->message) != NULL, "\"%s\" lacks \"%s\"", err.message,
              c->message);
    cr_expect(u == 7 && g == 7, "a refusal wrote its outputs");
}

/* cordon_uid_from_state: a state's uid and gid, and the pool's rule on them. */
Test(uid, from_state_reads_ids_and_holds_the_pool_to_its_owner)
{
    static const char h1[] = "0123456789abcdef0123456789abcdef";
    char text[256];
    cJSON *doc;
    uid_t a, b, u = 7;
    gid_t g = 7;

    cr_assert_eq(cordon_uid_take(pool, h1, "exec-a", &a, &err), 0, "%s", err.message);
    cr_assert_eq(cordon_uid_take(pool, h1, "exec-b", &b, &err), 0, "%s", err.message);
    snprintf(text, sizeof(text), "{\"uid\": %u, \"gid\": %u}", (unsigned)a, (unsigned)a);
    doc = cJSON_Parse(text);
    cr_assert_eq(cordon_uid_from_state(pool, doc, h1, "exec-a", true, &u, &g, &err), 0, "%s",
                 err.message);
    cr_expect(u == a && g == (gid_t)a);
    /* Another execution's pool uid is refused, pooled or not. */
    u = 7;
    cr_expect_eq(cordon_uid_from_state(pool, doc, h1, "exec-b", false, &u, &g, &err),
                 CORDON_E_INVALID);
    cr_expect(strstr(err.message, "is not the uid execution exec-b holds") != NULL, "%s",
              err.message);
    cr_expect_eq(u, 7, "a refusal wrote its outputs");
    cJSON_Delete(doc);

    /* A configured uid outside the pool passes unpooled, never pooled. */
    doc = cJSON_Parse("{\"uid\": 1000, \"gid\": 1001}");
    cr_expect_eq(cordon_uid_from_state(pool, doc, h1, "exec-a", false, &u, &g, &err), 0, "%s",
                 err.message);
    cr_expect(u == 1000 && g == 1001);
    cr_expect_eq(cordon_uid_from_state(pool, doc, h1, "exec-a", true, &u, &g, &err),
                 CORDON_E_INVALID);
    cJSON_Delete(doc);

    static const struct {
        const char *json, *message;
    } bad[] = {
        { "{}", "state.uid" },
        { "{\"uid\": 0, \"gid\": 1000}", "state.uid" },
        { "{\"uid\": 1000, \"gid\": 0}", "state.gid" },
        { "{\"uid\": 4294967295, \"gid\": 1000}", "state.uid" },
        { "{\"uid\": \"1000\", \"gid\": 1000}", "state.uid" },
        { "{\"uid\": 1000.5, \"gid\": 1000}", "state.uid" },
        { "{\"uid\": 1000}", "state.gid" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        doc = cJSON_Parse(bad[i].json);
        cr_assert_not_null(doc);
        cr_expect_eq(cordon_uid_from_state(pool, doc, h1, "exec-a", false, &u, &g, &err),
                     CORDON_E_INVALID, "%s", bad[i].json);
        cr_expect(strstr(err.message, bad[i].message) != NULL, "%s: %s", bad[i].json,
                  err.message);
        cJSON_Delete(doc);
    }
}

/* Only the process match names is killed, and it is killed. */
static bool is_pid(pid_t pid, void *arg)
{
    return pid == *(const pid_t *)arg;
}

Test(uid, sweep_matching_kills_only_what_matches)
{
    pid_t target = fork(), bystander;
    int status = 0;

    cr_assert_geq(target, 0);
    if (target == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    bystander = fork();
    cr_assert_geq(bystander, 0);
    if (bystander == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    usleep(50000);
    cordon_uid_sweep_matching(getuid(), is_pid, &target);
    cr_assert_eq(waitpid(target, &status, 0), target);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the target was killed");
    cr_expect_eq(waitpid(bystander, &status, WNOHANG), 0, "the bystander still runs");
    kill(bystander, SIGKILL);
    waitpid(bystander, &status, 0);
}
