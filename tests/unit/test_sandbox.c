/* Unit tests of sdk/sandbox.c: the disk split and the socket rules as data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include <cordon/sdk/sandbox.h>

#define MIB (1ull << 20)

/* ---- the disk split ------------------------------------------------------- */

Test(sandbox, disk_split_adds_up_to_at_most_disk_bytes)
{
    static const uint64_t sizes[] = { MIB, MIB + 1, 8 * MIB, 64 * MIB - 1, 64 * MIB, 100000000,
                                      1ull << 30, 1ull << 40, (1ull << 40) + 12345 };
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct cordon_disk_split d;
        struct cordon_error err;
        uint64_t sum;

        cordon_error_init(&err);
        cr_assert_eq(cordon_disk_split("resources.disk_bytes", sizes[i], &d, &err), 0, "%llu: %s",
                     (unsigned long long)sizes[i], err.message);
        sum = d.workspace_bytes + d.tmp_bytes + d.shm_bytes;
        cr_expect_leq(sum, sizes[i], "%llu: the parts add up to %llu", (unsigned long long)sizes[i],
                      (unsigned long long)sum);
        /* What page rounding costs, and nothing more, goes unused. */
        cr_expect_lt(sizes[i] - sum, 3 * page, "%llu: %llu bytes unused", (unsigned long long)sizes[i],
                     (unsigned long long)(sizes[i] - sum));
        cr_expect(d.workspace_bytes % page == 0 && d.tmp_bytes % page == 0 && d.shm_bytes % page == 0,
                  "%llu: a part is not whole pages", (unsigned long long)sizes[i]);
        cr_expect(d.tmp_bytes > 0 && d.shm_bytes > 0 && d.workspace_bytes > 0,
                  "%llu: a size of 0 would be an unlimited tmpfs", (unsigned long long)sizes[i]);
        cr_expect_eq(d.tmp_bytes, sizes[i] / 8 - sizes[i] / 8 % page, "%llu: /tmp %llu",
                     (unsigned long long)sizes[i], (unsigned long long)d.tmp_bytes);
        cr_expect_leq(d.shm_bytes, CORDON_DISK_SHM_MAX_BYTES);
        cr_expect_leq(d.shm_bytes, sizes[i] / 16);
        cr_expect_gt(d.workspace_bytes, sizes[i] / 2, "%llu: the workspace gets %llu",
                     (unsigned long long)sizes[i], (unsigned long long)d.workspace_bytes);
    }
}

Test(sandbox, disk_split_of_64_mib)
{
    struct cordon_disk_split d;
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_disk_split(NULL, 64 * MIB, &d, &err), 0, "%s", err.message);
    cr_expect_eq(d.tmp_bytes, 8 * MIB);
    cr_expect_eq(d.shm_bytes, 4 * MIB);
    cr_expect_eq(d.workspace_bytes, 52 * MIB);
    cr_assert_eq(cordon_disk_split(NULL, 4ull << 30, &d, &err), 0, "%s", err.message);
    cr_expect_eq(d.shm_bytes, 64 * MIB, "/dev/shm is capped at 64 MiB");
    cr_expect_eq(d.tmp_bytes, 512 * MIB);
    cr_expect_eq(d.workspace_bytes, (4ull << 30) - 576 * MIB);
}

Test(sandbox, disk_split_refuses_less_than_one_mib)
{
    struct cordon_disk_split d = { 1, 2, 3 };
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon_disk_split("resources.disk_bytes", MIB - 1, &d, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "resources.disk_bytes") != NULL &&
                  strstr(err.message, "1048575") != NULL && strstr(err.message, "1048576") != NULL,
              "the message names the field, the value and the minimum: %s", err.message);
    cr_expect(d.workspace_bytes == 1 && d.tmp_bytes == 2 && d.shm_bytes == 3, "ret was written");
    cr_assert_eq(cordon_disk_split("x", 0, &d, &err), CORDON_E_INVALID);
}

/* ---- the socket rules ----------------------------------------------------- */

static bool cmp_holds(const struct cordon_seccomp_arg *a, const uint64_t *args)
{
    switch (a->op) {
    case CORDON_SECCOMP_EQ:
        return args[a->index] == a->value;
    case CORDON_SECCOMP_NE:
        return args[a->index] != a->value;
    case CORDON_SECCOMP_GE:
        return args[a->index] >= a->value;
    }
    return false;
}

/* The errno the rules give socket (or socketpair) with these argument
 * registers, 0 when none matches; asserts that at most one matches (the
 * rules must not depend on the order a runtime compiles them in). */
static int verdict(bool pair, uint64_t family, uint64_t type, uint64_t protocol)
{
    struct cordon_socket_rule rules[CORDON_SOCKET_RULES_MAX];
    size_t n = cordon_socket_rules(rules, CORDON_SOCKET_RULES_MAX);
    const uint64_t args[3] = { family, type, protocol };
    int found = 0, matches = 0;

    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        bool all = pair ? rules[i].socketpair : true;

        for (unsigned k = 0; all && k < rules[i].nargs; k++)
            all = cmp_holds(&rules[i].args[k], args);
        if (all) {
            found = rules[i].errno_ret;
            matches++;
        }
    }
    cr_assert_leq(matches, 1, "family %llu protocol %llu matches %d rules", (unsigned long long)family,
                  (unsigned long long)protocol, matches);
    return found;
}

Test(sandbox, socket_rules_allow_four_families_only)
{
    for (uint64_t f = 0; f < 256; f++) {
        bool allowed = f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;

        cr_expect_eq(verdict(false, f, SOCK_DGRAM, 0), allowed ? 0 : EAFNOSUPPORT, "socket family %llu",
                     (unsigned long long)f);
        if (f != AF_NETLINK)
            cr_expect_eq(verdict(true, f, SOCK_STREAM, 0), allowed ? 0 : EAFNOSUPPORT,
                         "socketpair family %llu", (unsigned long long)f);
    }
    /* The kernel reads an int: high bits must not turn AF_VSOCK into an
     * allowed family, nor slip any family past the rules. */
    cr_expect_eq(verdict(false, (1ull << 32) | AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT);
    cr_expect_eq(verdict(false, (1ull << 32) | AF_UNIX, SOCK_STREAM, 0), EAFNOSUPPORT);
    cr_expect_eq(verdict(false, 0xffffffffull, SOCK_STREAM, 0), EAFNOSUPPORT);
    cr_expect_eq(verdict(false, UINT64_MAX, SOCK_STREAM, 0), EAFNOSUPPORT);
}

Test(sandbox, socket_rules_keep_netlink_to_route)
{
    cr_expect_eq(verdict(false, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), 0);
    cr_expect_eq(verdict(false, AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE), 0);
    for (uint64_t p = 1; p < 64; p++)
        cr_expect_eq(verdict(false, AF_NETLINK, SOCK_DGRAM, p), EPROTONOSUPPORT, "protocol %llu",
                     (unsigned long long)p);
    cr_expect_eq(verdict(false, AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT), EPROTONOSUPPORT);
    cr_expect_eq(verdict(false, AF_NETLINK, SOCK_DGRAM, (1ull << 32) | NETLINK_KOBJECT_UEVENT),
                 EPROTONOSUPPORT);
    /* Other families' protocols are theirs: IPPROTO_UDP is not refused. */
    cr_expect_eq(verdict(false, AF_INET, SOCK_DGRAM, 17), 0);
}

Test(sandbox, socket_rules_need_room)
{
    struct cordon_socket_rule rules[4];
    size_t allowed_n;
    const int *allowed = cordon_socket_families_allowed(&allowed_n);

    cr_expect_eq(cordon_socket_rules(rules, 4), 0, "four rules are too few, and say so");
    cr_assert_eq(allowed_n, 4);
    cr_expect(allowed[0] == AF_UNIX && allowed[1] == AF_INET && allowed[2] == AF_INET6 &&
              allowed[3] == AF_NETLINK);
}

Test(sandbox, socket_rules_as_an_oci_profile)
{
    struct cordon_socket_rule rules[CORDON_SOCKET_RULES_MAX];
    size_t n = cordon_socket_rules(rules, CORDON_SOCKET_RULES_MAX);
    cJSON *syscalls = cJSON_CreateArray(), *rule;
    struct cordon_error err;
    size_t i = 0;

    cordon_error_init(&err);
    cr_assert_eq(cordon_socket_rules_oci(syscalls, &err), 0, "%s", err.message);
    cr_assert_eq((size_t)cJSON_GetArraySize(syscalls), n);
    cJSON_ArrayForEach(rule, syscalls) {
        const cJSON *names = cJSON_GetObjectItem(rule, "names");
        const cJSON *args = cJSON_GetObjectItem(rule, "args"), *arg;
        unsigned k = 0;

        cr_expect_str_eq(cJSON_GetObjectItem(rule, "action")->valuestring, "SCMP_ACT_ERRNO");
        cr_expect_eq(cJSON_GetObjectItem(rule, "errnoRet")->valueint, rules[i].errno_ret);
        cr_expect_str_eq(cJSON_GetArrayItem(names, 0)->valuestring, "socket");
        cr_expect_eq(cJSON_GetArraySize(names), rules[i].socketpair ? 2 : 1);
        cr_expect_eq((unsigned)cJSON_GetArraySize(args), rules[i].nargs);
        cJSON_ArrayForEach(arg, args) {
            cr_expect_eq((unsigned)cJSON_GetObjectItem(arg, "index")->valueint, rules[i].args[k].index);
            cr_expect_eq((uint64_t)cJSON_GetObjectItem(arg, "value")->valuedouble, rules[i].args[k].value);
            cr_expect_str_eq(cJSON_GetObjectItem(arg, "op")->valuestring,
                             cordon_seccomp_op_name(rules[i].args[k].op));
            k++;
        }
        i++;
    }
    cJSON_Delete(syscalls);
    cr_expect_eq(cordon_socket_rules_oci(NULL, &err), CORDON_E_INVALID);
}
