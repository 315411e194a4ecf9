/*
 * Unit tests of the comparison for each kernel that can answer the
 * observer (core/observe/observe.c): the host's own (namespaces), gVisor's Sentry
 * and another kernel (a virtual machine's), and of the boundary the host
 * reads from outside, including a provider that names a pid which is not
 * its sandbox's.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cjson/cJSON.h>

#include <cordon/sdk/facts.h>
#include "core/observe/observe.h"
#include "core/observe/compare.h"

/* What cordon-observe prints inside gVisor under docker's settings. */
static const char gvisor_report[] =
    "{\"report_version\": 1, \"observer\": \"cordon-observe\", \"pid\": 3,"
    " \"host_ns\": \"pid:4026531836,mnt:4026531840\", \"host_boot_id\": \"8286-host\","
    " \"kernel\": {\"sysname\": \"Linux\", \"release\": \"4.4.0\", "
    "\"version\": \"#1 SMP Sun Jan 10 15:06:54 PST 2016\","
    "            \"machine\": \"x86_64\", \"boot_id\": null, \"errno\": 2, \"errno_name\": \"ENOENT\","
    "            \"klog_first\": \"[   0.000000] Starting gVisor...\", \"klog_errno\": 0, \"uptime_ms\": 2000,"
    "            \"hypervisor\": null, \"kind\": \"gvisor\"},"
    " \"ns\": {\"pid\": 124, \"mnt\": null, \"net\": 125, \"ipc\": null, \"uts\": null, \"user\": 126, "
    "\"cgroup\": null},"
    " \"canary_file\": {\"path\": \"/tmp/cordon-observe-abc123/canary\", \"exists\": false, \"stat_errno\": 2,"
    "                   \"readable\": false, \"read_errno\": 2, \"content_matches\": false},"
    " \"host_pid\": {\"pid\": 4242, \"cmdline_readable\": false, \"cmdline_errno\": 2, \"visible\": false,"
    "                \"kill_ok\": false, \"signalable\": false, \"kill_errno\": 3},"
    " \"reach\": {\"pid1\": {\"self\": false, \"read_ok\": false, \"set_ok\": false}, \"complete\": true, "
    "\"others\": [],"
    "           \"others_count\": 0},"
    " \"writes\": [{\"path\": \"/\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/etc\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/usr\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/bin\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"}],"
    " \"fds\": [],"
    " \"ids\": {\"uid\": 65532, \"euid\": 65532, \"gid\": 65532, \"egid\": 65532, \"groups\": 1,"
    "         \"uid_map\": \"         0          0 4294967295\\n\"},"
    " \"status\": {\"NoNewPrivs\": null, \"Seccomp\": 0, \"Seccomp_filters\": null, \"CapInh\": \"0000000000000000\","
    "              \"CapPrm\": \"0000000000000000\", \"CapEff\": \"0000000000000000\","
    "              \"CapBnd\": \"0000000000000000\", \"CapAmb\": null, \"caps_text\": \"=\"},"
    " \"prctl\": {\"no_new_privs\": 1, \"seccomp\": 0, \"ambient\": \"unsupported\"},"
    " \"syscalls\": [{\"name\": \"keyctl\", \"result\": \"refused\", \"errno\": 13, \"errno_name\": \"EACCES\"},"
    "               {\"name\": \"bpf\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"mount\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"unshare_user\", \"result\": \"ok\", \"errno\": 0, \"errno_name\": null},"
    "               {\"name\": \"io_uring_setup\", \"result\": \"ok\", \"errno\": 0, \"errno_name\": null},"
    "               {\"name\": \"file_lease\", \"result\": \"refused\", \"errno\": 22, \"errno_name\": \"EINVAL\"}],"
    " \"sockets\": [{\"name\": \"vsock\", \"created\": false}, {\"name\": \"packet\", \"created\": false}, "
    "{\"name\": \"xdp\", \"created\": false}, {\"name\": \"bluetooth\", \"created\": false}, {\"name\": \"can\", "
    "\"created\": false}, {\"name\": \"nfc\", \"created\": false}, {\"name\": \"qipcrtr\", \"created\": false}, "
    "{\"name\": \"rds\", \"created\": false}, {\"name\": \"netlink_uevent\", \"created\": false}],"
    " \"net\": {\"interfaces\": [\"lo\"]},"
    " \"files\": {\"proc_kcore\": {\"readable\": false, \"errno\": 2},"
    "            \"sys_firmware\": {\"readable\": false, \"errno\": 0}},"
    " \"errors\": []}";

/*
 * The host's view with a boundary as runsc would give it on a platform
 * that puts the sandbox process in a pid namespace of its own: process 500
 * started 0.5 s before its Sentry's clock (2 s old when the observer ran
 * in the host's window 100 s to 101 s after boot), holding an fd on the
 * observer's file as the Sentry does, one ptrace stub below it traced by
 * one of its threads.
 */
static const char gvisor_view[] =
    "{\"ns\": {\"pid\": 4026531836, \"mnt\": 4026531840, \"net\": 4026531992, \"ipc\": 4026531839,"
    "        \"uts\": 4026531838, \"user\": 4026531837, \"cgroup\": 4026531835},"
    " \"canary_path\": \"/tmp/cordon-observe-abc123/canary\", \"canary_token\": \"0123456789abcdef\","
    " \"host_pid\": 4242, \"uid_map\": \"         0          0 4294967295\\n\", \"boot_id\": \"8286-host\","
    " \"self\": {\"pid\": 100, \"ancestors\": [99, 1]}, \"pid1_ns\": {\"mnt\": 4026531841},"
    " \"boundary\": {\"status\": \"reported\", \"pids\": [500], \"clk_tck\": 100, \"observer\": \"5f3a9c0d11e24b77\","
    "   \"window_ms\": {\"before\": 100000, \"after\": 101000}, \"truncated\": false,"
    "   \"processes\": ["
    "     {\"pid\": 500, \"root\": 500, \"boundary\": true, \"readable\": true, \"state\": \"S\","
    "      \"starttime_ms\": 98500, \"name\": \"exe\", \"exe\": \"/usr/bin/runsc\", \"parent\": 400, \"tracer\": 0,"
    "      \"no_new_privs\": 1, \"seccomp\": 2, \"uids\": [65534, 65534, 65534, 65534],"
    "      \"caps\": {\"inh\": \"0000000000240000\", \"prm\": \"0000000000240000\", \"eff\": \"0000000000240000\","
    "                \"bnd\": \"000001ffffffffff\", \"amb\": \"0000000000240000\"},"
    "      \"ns\": {\"pid\": 4026532400, \"mnt\": 4026532401, \"net\": 4026532402, \"ipc\": 4026532403,"
    "             \"uts\": 4026532404, \"user\": 4026532405, \"cgroup\": 4026531835},"
    "      \"user_ns_parent\": 4026531837, \"uid_map\": \"     65534      65534          1\\n\","
    "      \"tasks\": [500, 501, 502], \"kvm_vm_fd\": false, \"observer_fd\": \"/root/workspace/5f3a9c0d11e24b77\"},"
    "     {\"pid\": 510, \"root\": 500, \"boundary\": false, \"readable\": true, \"state\": \"t\","
    "      \"starttime_ms\": 99900, \"name\": \"exe\", \"exe\": \"/usr/bin/runsc\", \"parent\": 500, \"tracer\": 501,"
    "      \"no_new_privs\": 1, \"seccomp\": 2, \"uids\": [65534, 65534, 65534, 65534],"
    "      \"caps\": {\"inh\": \"0000000000240000\", \"prm\": \"0000000000240000\", \"eff\": \"0000000000240000\","
    "                \"bnd\": \"000001ffffffffff\", \"amb\": \"0000000000240000\"},"
    "      \"ns\": {\"pid\": 4026532400, \"mnt\": 4026532401, \"net\": 4026532402, \"ipc\": 4026532403,"
    "             \"uts\": 4026532404, \"user\": 4026532405, \"cgroup\": 4026531835},"
    "      \"user_ns_parent\": 4026531837, \"uid_map\": \"     65534      65534          1\\n\"}]}}";

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

/* Set (value non-NULL) or delete the member at a dotted path; numeric
 * components index arrays. */
static void json_set(cJSON *root, const char *path, const char *value)
{
    char buf[160], *key = buf, *dot;
    cJSON *parent = root, *v = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    while ((dot = strchr(key, '.')) != NULL) {
        *dot = '\0';
        parent = cJSON_IsArray(parent) ? cJSON_GetArrayItem(parent, atoi(key))
                                       : cJSON_GetObjectItemCaseSensitive(parent, key);
        cr_assert_not_null(parent, "path %s", path);
        key = dot + 1;
    }
    if (value != NULL) {
        v = cJSON_Parse(value);
        cr_assert_not_null(v, "value %s", value);
    }
    if (cJSON_IsArray(parent)) {
        cJSON_DeleteItemFromArray(parent, atoi(key));
        if (v != NULL)
            cJSON_InsertItemInArray(parent, atoi(key), v);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        if (v != NULL)
            cJSON_AddItemToObject(parent, key, v);
    }
}

/* doc with one edit ("" path: none), printed. */
static char *edited(const char *doc, const char *path, const char *value)
{
    cJSON *root = cJSON_Parse(doc);
    char *text;

    cr_assert_not_null(root);
    if (path != NULL && path[0] != '\0')
        json_set(root, path, value[0] != '\0' ? value : NULL);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

static cJSON *compare_ok(const char *report, const char *view)
{
    struct cordon_error err;
    char *iso = NULL;
    cJSON *parsed;

    cordon_error_init(&err);
    cr_assert_eq(cordon__observe_compare(report, view, &iso, &err), 0, "%s", err.message);
    parsed = cJSON_Parse(iso);
    cr_assert_not_null(parsed, "%s", iso);
    free(iso);
    return parsed;
}

static const cJSON *find_check(const cJSON *iso, const char *name, const char *axis)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks"))
        if (strcmp(cJSON_GetObjectItem(c, "check")->valuestring, name) == 0 &&
            (axis == NULL || strcmp(cJSON_GetObjectItem(c, "axis")->valuestring, axis) == 0))
            return c;
    return NULL;
}

static const char *detail_of(const cJSON *iso, const char *name)
{
    const cJSON *c = find_check(iso, name, NULL);

    cr_assert_not_null(c, "check %s is listed", name);
    return cJSON_GetObjectItem(c, "detail")->valuestring;
}

static const char *kind_of(const cJSON *iso)
{
    const cJSON *k = cJSON_GetObjectItem(iso, "mechanism_kind");

    cr_assert(cJSON_IsString(k), "mechanism_kind is a string");
    return k->valuestring;
}

Test(observe_kinds, gvisor_with_a_verified_boundary_gives_four_true_axes)
{
    cJSON *iso = compare_ok(gvisor_report, gvisor_view);
    static const char *const outside[] = { "boundary_pid_namespace", "boundary_mount_namespace",
                                           "boundary_no_new_privs", "boundary_uid_not_root",
                                           "boundary_caps_not_host", "userspace_kernel",
                                           "boundary_serves_syscalls", "boundary_seccomp_filter" };
    const cJSON *c;

    cr_assert_str_eq(kind_of(iso), "gvisor");
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks"))
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), "%s: %s", cJSON_GetObjectItem(c, "check")->valuestring,
                  cJSON_GetObjectItem(c, "detail")->valuestring);
    for (size_t i = 0; i < 4; i++) {
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
        cr_assert_not_null(find_check(iso, "boundary_verified", axes[i]), "boundary_verified on %s", axes[i]);
    }
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
        cr_assert_not_null(find_check(iso, outside[i], NULL), "%s is listed", outside[i]);
    /* The inside checks that mean nothing under a userspace kernel are replaced, not passed. */
    cr_assert_null(find_check(iso, "pid_namespace", NULL));
    cr_assert_null(find_check(iso, "mount_namespace", NULL));
    cr_assert_null(find_check(iso, "seccomp_filter", NULL));
    /* What succeeded inside was gVisor's own implementation. */
    cr_assert_not_null(strstr(detail_of(iso, "io_uring_setup_refused"), "never saw the call"));
    cr_assert_not_null(strstr(detail_of(iso, "cap_ambient_empty"), "no ambient capabilities"));
    cr_assert_not_null(strstr(detail_of(iso, "no_new_privs"), "PR_GET_NO_NEW_PRIVS 1"));
    cr_assert_not_null(strstr(detail_of(iso, "boundary_serves_syscalls"), "ptrace platform"));
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "none");
    cJSON_Delete(iso);
}

/* Criterion may re-execute workers: rows hold their strings inline. */
struct one_row {
    char doc;            /* 'r': edit the report, 'v': the host view */
    char path[64];
    char value[72];      /* "" deletes */
    char check[32];      /* the one check that fails */
    int axis;            /* the one axis that goes false */
};

static struct one_row one_rows[] = {
    /* runsc on the ptrace platform: the Sentry in the host's pid namespace. */
    { 'v', "boundary.processes.0.ns.pid", "4026531836", "boundary_pid_namespace", 0 },
    { 'v', "boundary.processes.1.ns.pid", "4026531836", "boundary_pid_namespace", 0 },
    { 'r', "host_pid.visible", "true", "canary_pid_not_visible", 0 },
    { 'v', "boundary.processes.1.ns.mnt", "4026531840", "boundary_mount_namespace", 1 },
    { 'r', "canary_file.exists", "true", "canary_file_not_visible", 1 },
    { 'r', "fds", "[{\"fd\": 7, \"target\": \"/sys/fs/cgroup\"}]", "no_inherited_fds", 1 },
    { 'v', "boundary.processes.1.no_new_privs", "0", "boundary_no_new_privs", 2 },
    { 'v', "boundary.processes.0.no_new_privs", "", "boundary_no_new_privs", 2 },
    { 'v', "boundary.processes.0.uids", "[65534, 0, 65534, 65534]", "boundary_uid_not_root", 2 },
    /* Capabilities in the host's own user namespace, or one that maps root. */
    { 'v', "boundary.processes.0.ns.user", "4026531837", "boundary_caps_not_host", 2 },
    { 'v', "boundary.processes.1.uid_map", "\"0 0 1\\n\"", "boundary_caps_not_host", 2 },
    { 'v', "boundary.processes.0.user_ns_parent", "4026532999", "boundary_caps_not_host", 2 },
    { 'r', "prctl.no_new_privs", "0", "no_new_privs", 2 },
    { 'r', "ids.uid_map", "\"65532 0 1\\n\"", "uid_not_host_root", 2 },
    { 'v', "boundary.processes.0.seccomp", "0", "boundary_seccomp_filter", 3 },
    { 'v', "boundary.processes.1.seccomp", "1", "boundary_seccomp_filter", 3 },
    { 'r', "syscalls.5.result", "\"ok\"", "file_lease_refused", 3 },
};

ParameterizedTestParameters(observe_kinds, gvisor_one_failed_check_fails_its_axis_only)
{
    return cr_make_param_array(struct one_row, one_rows, sizeof(one_rows) / sizeof(one_rows[0]));
}

ParameterizedTest(struct one_row *row, observe_kinds, gvisor_one_failed_check_fails_its_axis_only)
{
    char *report = row->doc == 'r' ? edited(gvisor_report, row->path, row->value) : strdup(gvisor_report);
    char *view = row->doc == 'v' ? edited(gvisor_view, row->path, row->value) : strdup(gvisor_view);
    cJSON *iso = compare_ok(report, view);
    const cJSON *c;

    cr_assert_str_eq(kind_of(iso), "gvisor");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), i != row->axis, "%s with %s = %s", axes[i],
                     row->path, row->value);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks")) {
        bool flipped = strcmp(cJSON_GetObjectItem(c, "check")->valuestring, row->check) == 0;

        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), !flipped, "check %s: %s",
                     cJSON_GetObjectItem(c, "check")->valuestring, cJSON_GetObjectItem(c, "detail")->valuestring);
    }
    cr_assert_not_null(find_check(iso, row->check, axes[row->axis]), "check %s on %s", row->check,
                       axes[row->axis]);
    cJSON_Delete(iso);
    free(report);
    free(view);
}

/* What a provider says about its boundary is checked, never believed: a
 * pid that is not the sandbox observed makes every axis false. */
struct fake_row {
    char doc;
    char path[64];
    char value[96];
    char says[64];       /* in boundary_verified's detail */
};

static struct fake_row fake_rows[] = {
    { 'v', "boundary.processes.0.pid", "1", "the host's init" },
    { 'v', "boundary.processes.0.pid", "100", "the host itself" },
    { 'v', "boundary.processes.0.pid", "99", "one of its ancestors" },
    { 'v', "boundary.processes.0.ns.mnt", "4026531840", "the host's own mount namespace" },
    { 'v', "boundary.processes.0.ns.mnt", "4026531841", "the host's own mount namespace" },
    /* Started long before or after the Sentry's kernel began counting. */
    { 'v', "boundary.processes.0.starttime_ms", "50000", "not the sandbox the host observed" },
    { 'v', "boundary.processes.0.starttime_ms", "100500", "not the sandbox the host observed" },
    /* Another sandbox started at the same moment never ran the observer. */
    { 'v', "boundary.processes.0.observer_fd", "null", "holds no fd on the observer's file" },
    { 'v', "boundary.processes.0.state", "\"Z\"", "has exited" },
    { 'v', "boundary.processes.0.readable", "false", "pid 500" },
    { 'v', "boundary.truncated", "true", "did not see them all" },
    { 'v', "boundary.processes", "[]", "names no process" },
    { 'v', "boundary", "{\"status\": \"failed\", \"error\": \"the provider's boundary failed: gone\"}",
      "boundary failed: gone" },
    { 'v', "boundary", "{\"status\": \"unsupported\"}", "no boundary operation" },
    { 'v', "boundary", "", "no boundary operation" },
    { 'r', "kernel.uptime_ms", "", "cannot be tied" },
};

ParameterizedTestParameters(observe_kinds, gvisor_boundary_that_is_not_the_sandbox_proves_nothing)
{
    return cr_make_param_array(struct fake_row, fake_rows, sizeof(fake_rows) / sizeof(fake_rows[0]));
}

ParameterizedTest(struct fake_row *row, observe_kinds, gvisor_boundary_that_is_not_the_sandbox_proves_nothing)
{
    char *report = row->doc == 'r' ? edited(gvisor_report, row->path, row->value) : strdup(gvisor_report);
    char *view = row->doc == 'v' ? edited(gvisor_view, row->path, row->value) : strdup(gvisor_view);
    cJSON *iso = compare_ok(report, view);

    cr_assert_str_eq(kind_of(iso), "gvisor");
    for (int i = 0; i < 4; i++) {
        const cJSON *c = find_check(iso, "boundary_verified", axes[i]);

        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, axes[i])), "%s with %s = %s", axes[i], row->path,
                  row->value);
        cr_assert_not_null(c, "boundary_verified on %s", axes[i]);
        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")));
        cr_assert_not_null(strstr(cJSON_GetObjectItem(c, "detail")->valuestring, row->says), "%s: %s", row->says,
                           cJSON_GetObjectItem(c, "detail")->valuestring);
    }
    /* Facts about a process that may be another one count for nothing. */
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "boundary_seccomp_filter", NULL), "ok")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "boundary_serves_syscalls", NULL), "ok")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "io_uring_setup_refused", NULL), "ok")));
    cJSON_Delete(iso);
    free(report);
    free(view);
}

struct serve_row {
    char path[48];
    char value[48];
    char says[64];
};

static struct serve_row serve_rows[] = {
    { "boundary.processes.1.tracer", "0", "not traced" },
    { "boundary.processes.1.tracer", "999", "traced by a process outside the boundary" },
    { "boundary.processes.1", "", "no traced process below it and no KVM VM" },
};

ParameterizedTestParameters(observe_kinds, gvisor_syscalls_that_do_not_stop_in_the_boundary_are_not_served)
{
    return cr_make_param_array(struct serve_row, serve_rows, sizeof(serve_rows) / sizeof(serve_rows[0]));
}

ParameterizedTest(struct serve_row *row, observe_kinds,
                  gvisor_syscalls_that_do_not_stop_in_the_boundary_are_not_served)
{
    char *view = edited(gvisor_view, row->path, row->value);
    cJSON *iso = compare_ok(gvisor_report, view);

    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_SYSCALLS_RESTRICTED)));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "boundary_serves_syscalls", NULL), "ok")));
    cr_assert_not_null(strstr(detail_of(iso, "boundary_serves_syscalls"), row->says), "%s",
                       detail_of(iso, "boundary_serves_syscalls"));
    /* Then what succeeded inside may have been the host kernel's answer. */
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "unshare_user_refused", NULL), "ok")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "io_uring_setup_refused", NULL), "ok")));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(find_check(iso, "keyctl_refused", NULL), "ok")));
    cJSON_Delete(iso);
    free(view);
}

Test(observe_kinds, gvisor_kvm_platform_serves_through_its_vm)
{
    cJSON *root = cJSON_Parse(gvisor_view);
    char *view;
    cJSON *iso;

    /* No stubs: the sandbox runs inside the boundary's own KVM VM. */
    json_set(root, "boundary.processes.1", NULL);
    json_set(root, "boundary.processes.0.kvm_vm_fd", "true");
    view = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    iso = compare_ok(gvisor_report, view);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, CORDON_AXIS_SYSCALLS_RESTRICTED)), "%s",
              detail_of(iso, "boundary_serves_syscalls"));
    cr_assert_not_null(strstr(detail_of(iso, "boundary_serves_syscalls"), "kvm platform"));
    cJSON_Delete(iso);
    free(view);
}

Test(observe_kinds, gvisor_network_is_the_boundarys_on_the_host)
{
    char *report = edited(gvisor_report, "net.interfaces", "[\"lo\", \"eth0\"]");
    char *shared = edited(gvisor_view, "boundary.processes.0.ns.net", "4026531992");
    cJSON *iso = compare_ok(report, gvisor_view);

    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "private");
    cJSON_Delete(iso);
    /* The Sentry's network stack in the host's namespace: the host's network. */
    iso = compare_ok(report, shared);
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "host");
    cJSON_Delete(iso);
    free(report);
    free(shared);
}

Test(observe_kinds, kernel_facts_decide_the_kind_not_the_observers_word)
{
    /* gVisor's log line, but the host's own boot id: the host's kernel
     * answered, and its inside checks apply (and fail for this report). */
    char *host_kernel = edited(gvisor_report, "kernel.boot_id", "\"8286-host\"");
    /* The observer claiming gVisor without the Sentry's log line. */
    char *claim = edited(gvisor_report, "kernel.klog_first", "\"[    0.000000] Linux version 6.1\"");
    cJSON *iso = compare_ok(host_kernel, gvisor_view);

    cr_assert_str_eq(kind_of(iso), "namespaces");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_SYSCALLS_RESTRICTED)));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "io_uring_setup_refused", NULL), "ok")));
    cr_assert_str_eq(detail_of(iso, "io_uring_setup_refused"), "io_uring_setup succeeded");
    cJSON_Delete(iso);
    iso = compare_ok(claim, gvisor_view);
    cr_assert_str_eq(kind_of(iso), "namespaces");
    for (int i = 0; i < 4; i++)
        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
    cJSON_Delete(iso);
    free(host_kernel);
    free(claim);
}

Test(observe_kinds, another_kernel_is_a_vm_and_claims_nothing)
{
    char *report = edited(gvisor_report, "kernel", "{\"boot_id\": \"4711-guest\", \"klog_first\": \"[    0.000000] "
                                                   "Linux version 6.1.0\", \"uptime_ms\": 900}");
    cJSON *iso = compare_ok(report, gvisor_view);

    cr_assert_str_eq(kind_of(iso), "vm");
    for (int i = 0; i < 4; i++) {
        const cJSON *c = find_check(iso, "mechanism_verifiable", axes[i]);

        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
        cr_assert_not_null(c, "mechanism_verifiable on %s", axes[i]);
        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")));
        cr_assert_not_null(strstr(cJSON_GetObjectItem(c, "detail")->valuestring, "4711-guest"));
    }
    cJSON_Delete(iso);
    free(report);
}

/* ---- the host's own kernel, with a boundary named -------------------------------- */

/* A runc container as the observer inside it reports it. */
static const char runc_report[] =
    "{\"report_version\": 1, \"observer\": \"cordon-observe\", \"pid\": 7,"
    " \"kernel\": {\"boot_id\": \"8286-host\", \"klog_first\": null, \"klog_errno\": 1, \"uptime_ms\": 99000},"
    " \"ns\": {\"pid\": 4026532300, \"mnt\": 4026532298, \"net\": 4026532303, \"ipc\": 4026532299,"
    "        \"uts\": 4026532297, \"user\": 4026531837, \"cgroup\": 4026532301},"
    " \"canary_file\": {\"path\": \"/tmp/cordon-observe-abc123/canary\", \"exists\": false, \"readable\": false},"
    " \"host_pid\": {\"pid\": 4242, \"visible\": false, \"signalable\": false},"
    " \"reach\": {\"pid1\": {\"self\": false, \"read_ok\": false, \"set_ok\": false}, \"complete\": true, "
    "\"others\": [],"
    "           \"others_count\": 0},"
    " \"writes\": [{\"path\": \"/\", \"writable\": false}, {\"path\": \"/etc\", \"writable\": false},"
    "             {\"path\": \"/usr\", \"writable\": false}, {\"path\": \"/bin\", \"writable\": false}],"
    " \"fds\": [], \"ids\": {\"euid\": 65532, \"uid_map\": \"         0          0 4294967295\\n\"},"
    " \"status\": {\"NoNewPrivs\": 1, \"Seccomp\": 2, \"CapInh\": \"0000000000000000\", "
    "\"CapPrm\": \"0000000000000000\","
    "              \"CapEff\": \"0000000000000000\", \"CapBnd\": \"0000000000000000\", "
    "\"CapAmb\": \"0000000000000000\"},"
    " \"syscalls\": [{\"name\": \"keyctl\", \"result\": \"refused\"}, {\"name\": \"bpf\", \"result\": \"refused\"},"
    "               {\"name\": \"mount\", \"result\": \"refused\"}, {\"name\": \"unshare_user\", "
    "\"result\": \"refused\"},"
    "               {\"name\": \"io_uring_setup\", \"result\": \"refused\"}, {\"name\": \"file_lease\", "
    "\"result\": \"refused\"}],"
    " \"sockets\": [{\"name\": \"vsock\", \"created\": false}, {\"name\": \"packet\", \"created\": false}, "
    "{\"name\": \"xdp\", \"created\": false}, {\"name\": \"bluetooth\", \"created\": false}, {\"name\": \"can\", "
    "\"created\": false}, {\"name\": \"nfc\", \"created\": false}, {\"name\": \"qipcrtr\", \"created\": false}, "
    "{\"name\": \"rds\", \"created\": false}, {\"name\": \"netlink_uevent\", \"created\": false}],"
    " \"net\": {\"interfaces\": [\"lo\"]},"
    " \"files\": {\"proc_kcore\": {\"readable\": false}, \"sys_firmware\": {\"readable\": false}}}";

/* Its init as the host reads it: the same namespaces as the observer's. */
static const char runc_view[] =
    "{\"ns\": {\"pid\": 4026531836, \"mnt\": 4026531840, \"net\": 4026531992, \"ipc\": 4026531839,"
    "        \"uts\": 4026531838, \"user\": 4026531837, \"cgroup\": 4026531835},"
    " \"canary_path\": \"/tmp/cordon-observe-abc123/canary\", \"host_pid\": 4242, \"boot_id\": \"8286-host\","
    " \"self\": {\"pid\": 100, \"ancestors\": [1]}, \"pid1_ns\": {\"mnt\": 4026531840},"
    " \"boundary\": {\"status\": \"reported\", \"pids\": [700], \"window_ms\": {\"before\": 98000, \"after\": 99500},"
    "   \"truncated\": false, \"processes\": ["
    "     {\"pid\": 700, \"root\": 700, \"boundary\": true, \"readable\": true, \"state\": \"S\", "
    "\"starttime_ms\": 97000,"
    "      \"exe\": \"/run/cordon-init\", \"no_new_privs\": 1, \"seccomp\": 2, \"uids\": [65532, 65532, 65532, 65532],"
    "      \"caps\": {\"eff\": \"0000000000000000\", \"prm\": \"0000000000000000\", \"amb\": \"0000000000000000\"},"
    "      \"ns\": {\"pid\": 4026532300, \"mnt\": 4026532298, \"net\": 4026532303, \"ipc\": 4026532299,"
    "             \"uts\": 4026532297, \"user\": 4026531837, \"cgroup\": 4026532301},"
    "      \"tasks\": [700], \"kvm_vm_fd\": false}]}}";

Test(observe_kinds, namespaces_boundary_tied_to_the_observer_adds_one_check_per_axis)
{
    cJSON *iso = compare_ok(runc_report, runc_view);

    cr_assert_str_eq(kind_of(iso), "namespaces");
    for (int i = 0; i < 4; i++) {
        const cJSON *c = find_check(iso, "boundary_verified", axes[i]);

        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
        cr_assert_not_null(c, "boundary_verified on %s", axes[i]);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), "%s", cJSON_GetObjectItem(c, "detail")->valuestring);
    }
    /* The inside checks stay what they were: the kernel's own truth. */
    cr_assert_not_null(find_check(iso, "pid_namespace", NULL));
    cr_assert_not_null(find_check(iso, "seccomp_filter", NULL));
    cr_assert_null(find_check(iso, "boundary_seccomp_filter", NULL));
    cJSON_Delete(iso);
}

struct ns_row {
    char path[48];
    char value[96];
    char says[64];
};

static struct ns_row ns_rows[] = {
    /* Another container's init, or a process of the host. */
    { "boundary.processes.0.ns.pid", "4026532999", "pid namespace 4026532999" },
    { "boundary.processes.0.ns.net", "4026532999", "net namespace 4026532999" },
    { "boundary.processes.0.ns.mnt", "4026531840", "the host's own mount namespace" },
    { "boundary.processes.0.pid", "1", "the host's init" },
    { "boundary.processes.0.ns.pid", "", "the pid namespace of the boundary is not known" },
    { "boundary", "{\"status\": \"failed\", \"error\": \"the provider's boundary failed: no init\"}", "no init" },
};

ParameterizedTestParameters(observe_kinds, namespaces_boundary_of_another_sandbox_fails_every_axis)
{
    return cr_make_param_array(struct ns_row, ns_rows, sizeof(ns_rows) / sizeof(ns_rows[0]));
}

ParameterizedTest(struct ns_row *row, observe_kinds, namespaces_boundary_of_another_sandbox_fails_every_axis)
{
    char *view = edited(runc_view, row->path, row->value);
    cJSON *iso = compare_ok(runc_report, view);

    for (int i = 0; i < 4; i++) {
        const cJSON *c = find_check(iso, "boundary_verified", axes[i]);

        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
        cr_assert_not_null(c);
        cr_assert_not_null(strstr(cJSON_GetObjectItem(c, "detail")->valuestring, row->says), "%s",
                           cJSON_GetObjectItem(c, "detail")->valuestring);
    }
    cJSON_Delete(iso);
    free(view);
}

Test(observe_kinds, namespaces_without_a_boundary_operation_is_judged_as_before)
{
    char *view = edited(runc_view, "boundary", "{\"status\": \"unsupported\"}");
    cJSON *iso = compare_ok(runc_report, view);

    for (int i = 0; i < 4; i++)
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
    cr_assert_null(find_check(iso, "boundary_verified", NULL));
    cJSON_Delete(iso);
    free(view);
}
