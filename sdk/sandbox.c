/* sdk: one disk budget and the socket families of a sandbox (see cordon/sdk/sandbox.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <cordon/sdk/sandbox.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- one disk budget ------------------------------------------------------ */

static uint64_t page_floor(uint64_t bytes, uint64_t page)
{
    return bytes - bytes % page;
}

int cordon_disk_split(const char *field, uint64_t disk_bytes, struct cordon_disk_split *ret,
                      struct cordon_error *err)
{
    long page_size = sysconf(_SC_PAGESIZE);
    uint64_t page = page_size > 0 ? (uint64_t)page_size : 4096u;
    struct cordon_disk_split d;

    if (ret == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "disk split: ret is required");
    if (disk_bytes < CORDON_DISK_MIN_BYTES)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: %llu is below the minimum %llu (1 MiB), which /workspace, "
                                "/tmp and /dev/shm share",
                                field != NULL ? field : "disk_bytes",
                                (unsigned long long)disk_bytes,
                                (unsigned long long)CORDON_DISK_MIN_BYTES);
    d.tmp_bytes = page_floor(disk_bytes / 8, page);
    d.shm_bytes = page_floor(disk_bytes / 16 < CORDON_DISK_SHM_MAX_BYTES
                                 ? disk_bytes / 16
                                 : CORDON_DISK_SHM_MAX_BYTES, page);
    d.workspace_bytes = page_floor(disk_bytes - d.tmp_bytes - d.shm_bytes, page);
    /* A tmpfs of size 0 has no limit at all: never hand one out. Only a
     * page larger than 64 KiB could get here from 1 MiB. */
    if (d.tmp_bytes == 0 || d.shm_bytes == 0 || d.workspace_bytes == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: %llu bytes leave /tmp or /dev/shm less than one %llu-byte "
                                "page", field != NULL ? field : "disk_bytes",
                                (unsigned long long)disk_bytes, (unsigned long long)page);
    *ret = d;
    return 0;
}

/* ---- socket families ------------------------------------------------------ */

static const int families_allowed[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

const int *cordon_socket_families_allowed(size_t *ret_count)
{
    if (ret_count != NULL)
        *ret_count = COUNT(families_allowed);
    return families_allowed;
}

static bool family_allowed(uint64_t family)
{
    for (size_t i = 0; i < COUNT(families_allowed); i++)
        if ((uint64_t)families_allowed[i] == family)
            return true;
    return false;
}

/*
 * A seccomp rule compares one argument with one value, and runtimes OR
 * two comparisons of the same argument, so "not one of four" cannot be
 * one rule. The allow-list becomes: one "family == N" rule for each N
 * below the highest allowed family that is not allowed, and one "family
 * >= highest + 1" for everything above, future families included.
 */
size_t cordon_socket_rules(struct cordon_socket_rule *out, size_t max)
{
    uint64_t top = 0;
    size_t n = 0;

    for (size_t i = 0; i < COUNT(families_allowed); i++)
        if ((uint64_t)families_allowed[i] > top)
            top = (uint64_t)families_allowed[i];
    for (uint64_t f = 0; f <= top + 1; f++) {
        if (f <= top && family_allowed(f))
            continue;
        if (n >= max)
            return 0;
        out[n++] = (struct cordon_socket_rule){
            .socketpair = true,
            .errno_ret = EAFNOSUPPORT,
            .nargs = 1,
            .args = { { 0, f <= top ? CORDON_SECCOMP_EQ : CORDON_SECCOMP_GE, f } },
        };
    }
    /* Netlink, but NETLINK_ROUTE only: the kernel's own answer to a
     * protocol it lacks. socketpair has no netlink to give. */
    if (n >= max)
        return 0;
    out[n++] = (struct cordon_socket_rule){
        .socketpair = false,
        .errno_ret = EPROTONOSUPPORT,
        .nargs = 2,
        .args = { { 0, CORDON_SECCOMP_EQ, AF_NETLINK }, { 2, CORDON_SECCOMP_NE, NETLINK_ROUTE } },
    };
    return n;
}

const char *cordon_seccomp_op_name(enum cordon_seccomp_op op)
{
    switch (op) {
    case CORDON_SECCOMP_EQ:
        return "SCMP_CMP_EQ";
    case CORDON_SECCOMP_NE:
        return "SCMP_CMP_NE";
    case CORDON_SECCOMP_GE:
        return "SCMP_CMP_GE";
    }
    return NULL;
}

int cordon_socket_rules_oci(cJSON *syscalls, struct cordon_error *err)
{
    static const char *const both[] = { "socket", "socketpair" };
    struct cordon_socket_rule rules[CORDON_SOCKET_RULES_MAX];
    size_t n = cordon_socket_rules(rules, COUNT(rules));

    if (!cJSON_IsArray(syscalls))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "socket rules: syscalls must be an array");
    if (n == 0)
        return cordon_error_set(err, CORDON_E_PROVIDER, 0,
                                "socket rules: more than %d rules", CORDON_SOCKET_RULES_MAX);
    for (size_t i = 0; i < n; i++) {
        cJSON *rule = cJSON_CreateObject(), *args = NULL;
        bool ok = rule != NULL &&
                  cJSON_AddItemToObject(rule, "names",
                                        cJSON_CreateStringArray(both, rules[i].socketpair ? 2 : 1)) &&
                  cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO") != NULL &&
                  cJSON_AddNumberToObject(rule, "errnoRet", rules[i].errno_ret) != NULL &&
                  (args = cJSON_AddArrayToObject(rule, "args")) != NULL;

        for (unsigned k = 0; ok && k < rules[i].nargs; k++) {
            const struct cordon_seccomp_arg *a = &rules[i].args[k];
            cJSON *arg = cJSON_CreateObject();

            /* The values are small (families, protocols): exact as doubles. */
            ok = arg != NULL && cJSON_AddNumberToObject(arg, "index", a->index) != NULL &&
                 cJSON_AddNumberToObject(arg, "value", (double)a->value) != NULL &&
                 cJSON_AddNumberToObject(arg, "valueTwo", 0) != NULL &&
                 cJSON_AddStringToObject(arg, "op", cordon_seccomp_op_name(a->op)) != NULL &&
                 cJSON_AddItemToArray(args, arg);
            if (!ok)
                cJSON_Delete(arg);
        }
        if (!ok || !cJSON_AddItemToArray(syscalls, rule)) {
            cJSON_Delete(rule);
            goto nomem;
        }
    }
    return 0;
nomem:
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "socket rules: out of memory");
}
