/* Unit tests of core/observe/observe.c (the comparison) and of the real cordon-observe. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cjson/cJSON.h>

#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"
#include <cordon/sdk/fs.h>
#include "core/observe/observe.h"
#include "core/observe/compare.h"
#include <cordon/sdk/runner.h>
#include <cordon/sdk/tar.h>
#include "tests/unit/helpers.h"

/* What cordon-observe prints inside a well-built sandbox. */
static const char contained_report[] =
    "{\"report_version\": 1, \"observer\": \"cordon-observe\", \"pid\": 7,"
    " \"host_ns\": \"pid:4026531836,mnt:4026531840,net:4026531992\","
    " \"ns\": {\"pid\": 4026532300, \"mnt\": 4026532298, \"net\": 4026532303, \"ipc\": 4026532299,"
    "        \"uts\": 4026532297, \"user\": 4026531837, \"cgroup\": 4026532301},"
    " \"canary_file\": {\"path\": \"/tmp/cordon-observe-abc123/canary\", \"exists\": false, \"stat_errno\": 2,"
    "                   \"readable\": false, \"read_errno\": 2, \"content_matches\": false},"
    " \"host_pid\": {\"pid\": 4242, \"cmdline_readable\": false, \"cmdline_errno\": 2, \"visible\": false,"
    "                \"kill_ok\": false, \"signalable\": false, \"kill_errno\": 3},"
    " \"reach\": {\"pid1\": {\"self\": false, \"read_ok\": false, \"set_ok\": false, \"errno\": 1, "
    "\"errno_name\": \"EPERM\"},"
    "           \"exec_root\": 7, \"scanned\": 2, \"complete\": true, \"others\": [], \"others_count\": 0,"
    "           \"others_reached\": 0},"
    " \"writes\": [{\"path\": \"/\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/etc\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/usr\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"},"
    "             {\"path\": \"/bin\", \"writable\": false, \"errno\": 30, \"errno_name\": \"EROFS\"}],"
    " \"fds\": [],"
    " \"ids\": {\"uid\": 65532, \"euid\": 65532, \"gid\": 65532, \"egid\": 65532, \"groups\": 0,"
    "         \"uid_map\": \"         0     100000      65536\\n\"},"
    " \"status\": {\"NoNewPrivs\": 1, \"Seccomp\": 2, \"Seccomp_filters\": 1, \"CapInh\": \"0000000000000000\","
    "              \"CapPrm\": \"0000000000000000\", \"CapEff\": \"0000000000000000\","
    "              \"CapBnd\": \"0000000000000000\", \"CapAmb\": \"0000000000000000\", \"caps_text\": \"=\"},"
    " \"syscalls\": [{\"name\": \"keyctl\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"bpf\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"mount\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"unshare_user\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"},"
    "               {\"name\": \"io_uring_setup\", \"result\": \"refused\", \"errno\": 38,"
    "                \"errno_name\": \"ENOSYS\"},"
    "               {\"name\": \"file_lease\", \"result\": \"refused\", \"errno\": 1, \"errno_name\": \"EPERM\"}],"
    " \"sockets\": [{\"name\": \"vsock\", \"family\": 40, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"packet\", \"family\": 17, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"xdp\", \"family\": 44, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"bluetooth\", \"family\": 31, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"can\", \"family\": 29, \"protocol\": 1, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"nfc\", \"family\": 39, \"protocol\": 1, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"qipcrtr\", \"family\": 42, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"rds\", \"family\": 21, \"protocol\": 0, \"created\": false, \"errno\": 97},"
    "               {\"name\": \"netlink_uevent\", \"family\": 16, \"protocol\": 15, \"created\": false,"
    "                \"errno\": 93}],"
    " \"net\": {\"interfaces\": [\"lo\"]},"
    " \"files\": {\"proc_kcore\": {\"readable\": false, \"errno\": 13},"
    "            \"sys_firmware\": {\"readable\": false, \"errno\": 0}},"
    " \"errors\": []}";

static const char host_view[] =
    "{\"ns\": {\"pid\": 4026531836, \"mnt\": 4026531840, \"net\": 4026531992, \"ipc\": 4026531839,"
    "        \"uts\": 4026531838, \"user\": 4026531837, \"cgroup\": 4026531835},"
    " \"canary_path\": \"/tmp/cordon-observe-abc123/canary\", \"canary_token\": \"0123456789abcdef\","
    " \"host_pid\": 4242}";

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

/* Set (value non-NULL) or delete the member at a dotted path; numeric
 * components index arrays. */
static void json_set(cJSON *root, const char *path, const char *value)
{
    char buf[128], *key = buf, *dot;
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

static char *report_with(const char *path, const char *value)
{
    cJSON *root = cJSON_Parse(contained_report);
    char *text;

    cr_assert_not_null(root);
    if (path != NULL)
        json_set(root, path, value);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* compare() must succeed; the isolation object is returned parsed. */
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

static const cJSON *find_check(const cJSON *iso, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks"))
        if (strcmp(cJSON_GetObjectItem(c, "check")->valuestring, name) == 0)
            return c;
    return NULL;
}

Test(observe, contained_report_gives_four_true_axes)
{
    cJSON *iso = compare_ok(contained_report, host_view);
    const cJSON *c;
    int n = 0;

    for (size_t i = 0; i < 4; i++)
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), "%s", axes[i]);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks")) {
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), "%s: %s",
                  cJSON_GetObjectItem(c, "check")->valuestring, cJSON_GetObjectItem(c, "detail")->valuestring);
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(c, "detail")));
        n++;
    }
    cr_assert_eq(n, 28, "every check is listed (got %d)", n);
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "none");
    cJSON_Delete(iso);
}

/* Criterion may re-execute workers: rows hold their strings inline. */
struct flip_row {
    char check[32];
    int axis;
    char path[40];
    char value[72];
};

static struct flip_row flip_rows[] = {
    { "pid_namespace", 0, "ns.pid", "4026531836" },
    { "canary_pid_not_visible", 0, "host_pid.visible", "true" },
    { "canary_pid_not_signalable", 0, "host_pid.signalable", "true" },
    { "pid1_limits_unreachable", 0, "reach.pid1.set_ok", "true" },
    { "no_foreign_processes", 0, "reach.others_count", "1" },
    { "no_foreign_processes", 0, "reach.complete", "false" },
    { "mount_namespace", 1, "ns.mnt", "4026531840" },
    { "canary_file_not_visible", 1, "canary_file.exists", "true" },
    { "canary_file_not_readable", 1, "canary_file.readable", "true" },
    { "root_not_writable", 1, "writes.0.writable", "true" },
    { "rootfs_not_writable", 1, "writes.2.writable", "true" },
    { "no_inherited_fds", 1, "fds", "[{\"fd\": 7, \"target\": \"/sys/fs/cgroup\"}]" },
    { "proc_kcore_not_readable", 1, "files.proc_kcore.readable", "true" },
    { "sys_firmware_not_readable", 1, "files.sys_firmware.readable", "true" },
    { "euid_not_root", 2, "ids.euid", "0" },
    { "uid_not_host_root", 2, "ids.uid_map", "\"65532 0 1\\n\"" },
    { "no_new_privs", 2, "status.NoNewPrivs", "0" },
    { "cap_effective_empty", 2, "status.CapEff", "\"00000000a80425fb\"" },
    { "cap_permitted_empty", 2, "status.CapPrm", "\"0000000000000400\"" },
    { "cap_bounding_empty", 2, "status.CapBnd", "\"000001ffffffffff\"" },
    { "cap_ambient_empty", 2, "status.CapAmb", "\"0000000000000001\"" },
    { "seccomp_filter", 3, "status.Seccomp", "0" },
    { "keyctl_refused", 3, "syscalls.0.result", "\"reachable\"" },
    { "bpf_refused", 3, "syscalls.1.result", "\"ok\"" },
    { "mount_refused", 3, "syscalls.2.result", "\"reachable\"" },
    { "unshare_user_refused", 3, "syscalls.3.result", "\"ok\"" },
    { "io_uring_setup_refused", 3, "syscalls.4.result", "\"untested\"" },
    { "file_lease_refused", 3, "syscalls.5.result", "\"ok\"" },
    { "file_lease_refused", 3, "syscalls.5.result", "\"reachable\"" },
    { "socket_families_refused", 3, "sockets.0.created", "true" },
    { "socket_families_refused", 3, "sockets.1.created", "true" },
    { "socket_families_refused", 3, "sockets.8.created", "true" },
};

ParameterizedTestParameters(observe, one_failed_check_fails_its_axis_only)
{
    return cr_make_param_array(struct flip_row, flip_rows, sizeof(flip_rows) / sizeof(flip_rows[0]));
}

ParameterizedTest(struct flip_row *row, observe, one_failed_check_fails_its_axis_only)
{
    char *report = report_with(row->path, row->value);
    cJSON *iso = compare_ok(report, host_view);
    const cJSON *c;

    for (int i = 0; i < 4; i++)
        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), i != row->axis, "%s with %s = %s",
                     axes[i], row->path, row->value);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(iso, "checks")) {
        bool flipped = strcmp(cJSON_GetObjectItem(c, "check")->valuestring, row->check) == 0;

        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")), !flipped, "check %s",
                     cJSON_GetObjectItem(c, "check")->valuestring);
        if (flipped)
            cr_assert_str_eq(cJSON_GetObjectItem(c, "axis")->valuestring, axes[row->axis]);
    }
    cr_assert_not_null(find_check(iso, row->check), "check %s is listed", row->check);
    cJSON_Delete(iso);
    free(report);
}

struct missing_row {
    char path[32];     /* deleted from the report */
    char checks[160];  /* space-separated checks that must read "not reported" */
    char axes_false[8]; /* one digit per axis that must be false */
};

static struct missing_row missing_rows[] = {
    { "ns", "pid_namespace mount_namespace", "01" },
    { "ns.pid", "pid_namespace", "0" },
    { "host_pid", "canary_pid_not_visible canary_pid_not_signalable", "0" },
    { "host_pid.signalable", "canary_pid_not_signalable", "0" },
    { "reach", "pid1_limits_unreachable no_foreign_processes", "0" },
    { "reach.pid1", "pid1_limits_unreachable", "0" },
    { "reach.others", "no_foreign_processes", "0" },
    { "canary_file", "canary_file_not_visible canary_file_not_readable", "1" },
    { "writes.3", "rootfs_not_writable", "1" },
    { "writes", "root_not_writable rootfs_not_writable", "1" },
    { "fds", "no_inherited_fds", "1" },
    { "files", "proc_kcore_not_readable sys_firmware_not_readable", "1" },
    { "ids", "euid_not_root uid_not_host_root", "2" },
    { "ids.uid_map", "uid_not_host_root", "2" },
    { "status", "no_new_privs cap_effective_empty cap_permitted_empty cap_bounding_empty cap_ambient_empty "
                "seccomp_filter", "23" },
    { "status.CapBnd", "cap_bounding_empty", "2" },
    { "syscalls", "keyctl_refused bpf_refused mount_refused unshare_user_refused io_uring_setup_refused "
                  "file_lease_refused", "3" },
    { "syscalls.4", "io_uring_setup_refused", "3" },
    { "syscalls.5", "file_lease_refused", "3" },
    { "sockets", "socket_families_refused", "3" },
    { "sockets.3", "socket_families_refused", "3" },
    { "sockets.8.created", "socket_families_refused", "3" },
};

ParameterizedTestParameters(observe, missing_field_is_not_reported)
{
    return cr_make_param_array(struct missing_row, missing_rows, sizeof(missing_rows) / sizeof(missing_rows[0]));
}

ParameterizedTest(struct missing_row *row, observe, missing_field_is_not_reported)
{
    char *report = report_with(row->path, NULL);
    cJSON *iso = compare_ok(report, host_view);
    char names[160], *save = NULL;

    for (int i = 0; i < 4; i++)
        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(iso, axes[i])), strchr(row->axes_false, '0' + i) == NULL,
                     "%s without %s", axes[i], row->path);
    snprintf(names, sizeof(names), "%s", row->checks);
    for (char *name = strtok_r(names, " ", &save); name != NULL; name = strtok_r(NULL, " ", &save)) {
        const cJSON *c = find_check(iso, name);

        cr_assert_not_null(c, "%s", name);
        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")), "%s", name);
        cr_assert_str_eq(cJSON_GetObjectItem(c, "detail")->valuestring, "not reported", "%s", name);
    }
    cJSON_Delete(iso);
    free(report);
}

Test(observe, report_about_another_canary_counts_as_not_reported)
{
    /* An observer that looked at some other path or pid proves nothing. */
    char *report = report_with("canary_file.path", "\"/tmp/elsewhere\"");
    cJSON *iso = compare_ok(report, host_view);

    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_HOST_FS_RESTRICTED)));
    cr_assert_str_eq(cJSON_GetObjectItem(find_check(iso, "canary_file_not_visible"), "detail")->valuestring,
                     "not reported");
    cJSON_Delete(iso);
    free(report);
    report = report_with("host_pid.pid", "4243");
    iso = compare_ok(report, host_view);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_PROCESS_CONTAINED)));
    cJSON_Delete(iso);
    free(report);
}

struct net_row {
    char interfaces[48]; /* "" deletes net */
    char net_ns[16];
    char sockets[24];    /* "": as contained; "-": deleted; else the path of one set created */
    char want[8];
};

static struct net_row net_rows[] = {
    { "[\"lo\"]", "4026532303", "", "none" },
    { "[]", "4026532303", "", "none" },
    { "[\"lo\"]", "4026531992", "", "none" },
    { "[\"lo\", \"eth0\"]", "4026532303", "", "private" },
    { "[\"lo\", \"eth0\"]", "4026531992", "", "host" },
    { "[\"eth0\"]", "4026532303", "", "private" },
    { "", "4026532303", "", "private" },
    { "", "4026531992", "", "host" },
    /* Only lo, but a vsock socket reaches the hypervisor's host. */
    { "[\"lo\"]", "4026532303", "sockets.0.created", "private" },
    { "[\"lo\"]", "4026531992", "sockets.0.created", "host" },
    { "[]", "4026532303", "sockets.1.created", "private" },
    { "[\"lo\"]", "4026532303", "sockets.7.created", "private" },
    /* A uevent socket hears the host's device events; it is no way out. */
    { "[\"lo\"]", "4026532303", "sockets.8.created", "none" },
    /* A report that does not say cannot be "none". */
    { "[\"lo\"]", "4026532303", "-", "private" },
    { "[\"lo\"]", "4026532303", "sockets.2", "private" },
};

ParameterizedTestParameters(observe, network_mode_derivation)
{
    return cr_make_param_array(struct net_row, net_rows, sizeof(net_rows) / sizeof(net_rows[0]));
}

ParameterizedTest(struct net_row *row, observe, network_mode_derivation)
{
    cJSON *root = cJSON_Parse(contained_report), *iso;
    char *report;

    json_set(root, "ns.net", row->net_ns);
    if (row->interfaces[0] != '\0')
        json_set(root, "net.interfaces", row->interfaces);
    else
        json_set(root, "net", NULL);
    if (strcmp(row->sockets, "-") == 0)
        json_set(root, "sockets", NULL);
    else if (strstr(row->sockets, ".created") != NULL)
        json_set(root, row->sockets, "true");
    else if (row->sockets[0] != '\0')
        json_set(root, row->sockets, NULL);
    report = cJSON_PrintUnformatted(root);
    iso = compare_ok(report, host_view);
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, row->want, "%s in ns %s, %s",
                     row->interfaces, row->net_ns, row->sockets);
    cJSON_Delete(iso);
    cJSON_Delete(root);
    free(report);
}

struct bad_input_row {
    char report[64];  /* "@" the contained report */
    char view[96];    /* "@" the host view */
    char want[56];
};

static struct bad_input_row bad_input_rows[] = {
    { "not json", "@", "report is not a JSON object" },
    { "[1, 2]", "@", "report is not a JSON object" },
    { "{\"report_version\": 2}", "@", "report_version 2 is not supported" },
    { "{\"ns\": {}}", "@", "report_version 0 is not supported" },
    { "{\"report_version\": \"1\"}", "@", "is not supported" },
    { "@", "{}", "host view needs" },
    { "@", "{\"ns\": {}, \"canary_path\": \"/x\"}", "host view needs" },
    { "@", "{\"ns\": 1, \"canary_path\": \"/x\", \"host_pid\": 1}", "host view needs" },
    { "@", "nope", "host view is not a JSON object" },
};

ParameterizedTestParameters(observe, compare_refuses_bad_input)
{
    return cr_make_param_array(struct bad_input_row, bad_input_rows,
                               sizeof(bad_input_rows) / sizeof(bad_input_rows[0]));
}

ParameterizedTest(struct bad_input_row *row, observe, compare_refuses_bad_input)
{
    struct cordon_error err;
    char *iso = (char *)"untouched";
    const char *report = strcmp(row->report, "@") == 0 ? contained_report : row->report;
    const char *view = strcmp(row->view, "@") == 0 ? host_view : row->view;

    cordon_error_init(&err);
    cr_assert_eq(cordon__observe_compare(report, view, &iso, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, row->want) != NULL, "message \"%s\" lacks \"%s\"", err.message, row->want);
    cr_assert_str_eq(iso, "untouched");
}

Test(observe, compare_refuses_null)
{
    struct cordon_error err;
    char *iso = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon__observe_compare(NULL, host_view, &iso, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__observe_compare(contained_report, NULL, &iso, &err), CORDON_E_INVALID);
    cr_assert_eq(cordon__observe_compare(contained_report, host_view, NULL, &err), CORDON_E_INVALID);
    cr_assert_null(iso);
}

/* ---- the real observer, run straight on the host -------------------------- */

static pid_t spawn(const char *const *argv, int out_fd)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);

        if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd >= 0 ? out_fd : null, 1) < 0 || dup2(null, 2) < 0)
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void reap(pid_t pid, bool kill_first)
{
    if (pid <= 0)
        return;
    if (kill_first)
        kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* The canary's command line carries "--idle\0TOKEN" once it has exec'd. */
static bool idle_started(pid_t pid, const char *token)
{
    char path[64], cmd[1024], pattern[64];
    size_t plen = (size_t)snprintf(pattern, sizeof(pattern), "--idle%c%s", '\0', token);
    ssize_t n = 0;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, cmd, sizeof(cmd));
        close(fd);
    }
    return n > 0 && memmem(cmd, (size_t)n, pattern, plen) != NULL;
}

Test(observe, real_observer_sees_the_uncontained_host)
{
    const char *observer = getenv("CORDON_OBSERVER");
    char canary[512], pid_arg[24], view[1024], buf[65536], ns_path[64];
    const char *token = "c0ffee0123456789c0ffee0123456789", *pid_token = "feedfacefeedface";
    char *dir, *iso_text = NULL;
    cJSON *report, *iso;
    struct cordon_error err;
    struct stat st;
    size_t len = 0;
    pid_t idle, obs;
    int pipefd[2], status;

    if (observer == NULL || observer[0] == '\0')
        cr_skip("CORDON_OBSERVER is not set: build cordon-observe and point CORDON_OBSERVER at it");
    dir = test_mkdtemp();
    cr_assert_not_null(dir);
    snprintf(canary, sizeof(canary), "%s/canary", dir);
    cr_assert_eq(test_write_file(canary, token, strlen(token)), 0);

    {
        const char *argv[] = { observer, "--idle", pid_token, "30", NULL };

        idle = spawn(argv, -1);
    }
    cr_assert(TEST_WAIT_UNTIL(idle_started(idle, pid_token), 10000), "the --idle canary did not start");

    snprintf(pid_arg, sizeof(pid_arg), "%ld", (long)idle);
    cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
    {
        const char *argv[] = { observer, "--canary-path", canary, "--canary-token", token, "--host-pid", pid_arg,
                               "--host-pid-token", pid_token, "--host-ns", "pid:1", NULL };

        obs = spawn(argv, pipefd[1]);
    }
    close(pipefd[1]);
    for (;;) {
        ssize_t n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(pipefd[0]);
    buf[len] = '\0';
    cr_assert_eq(waitpid(obs, &status, 0), obs);
    reap(idle, true);
    test_rmtree(dir);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "observer status %d", status);

    report = cJSON_Parse(buf);
    cr_assert_not_null(report, "report is not JSON: %s", buf);
    cr_assert_eq(cJSON_GetObjectItem(report, "report_version")->valueint, 1);
    cr_assert_str_eq(cJSON_GetObjectItem(report, "host_ns")->valuestring, "pid:1");
    {
        const cJSON *cf = cJSON_GetObjectItem(report, "canary_file");
        const cJSON *hp = cJSON_GetObjectItem(report, "host_pid");

        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cf, "exists")), "%s", buf);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cf, "readable")), "%s", buf);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cf, "content_matches")), "%s", buf);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(hp, "visible")), "%s", buf);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(hp, "signalable")), "%s", buf);
        cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(report, "syscalls")), 6);
        /* Nothing refuses a lease on the host: the check can fail. */
        cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(report, "syscalls"),
                                                                5),
                                             "name")->valuestring,
                         "file_lease");
        cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(report, "syscalls"),
                                                                5),
                                             "result")->valuestring,
                         "ok", "%s", buf);
        cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(report, "writes")), 4);
        /* Nothing refuses a family on the host either: each try says what it got. */
        {
            static const char *const tries[] = { "vsock", "packet", "xdp", "bluetooth", "can",
                                                 "nfc", "qipcrtr", "rds", "netlink_uevent" };
            const cJSON *sockets = cJSON_GetObjectItem(report, "sockets");

            cr_assert_eq(cJSON_GetArraySize(sockets), 9, "%s", buf);
            for (int i = 0; i < 9; i++) {
                const cJSON *t = cJSON_GetArrayItem(sockets, i);

                cr_assert_str_eq(cJSON_GetObjectItem(t, "name")->valuestring, tries[i]);
                cr_assert(cJSON_IsBool(cJSON_GetObjectItem(t, "created")), "%s", buf);
                cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "created")) ==
                              (cJSON_GetObjectItem(t, "errno")->valueint == 0), "%s", buf);
            }
            /* A netlink uevent socket is no privilege: the host makes one. */
            cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(sockets, 8), "created")), "%s",
                      buf);
        }
    }
    /* Same namespaces as ours: the host compares and finds nothing contained. */
    snprintf(ns_path, sizeof(ns_path), "/proc/self/ns/pid");
    cr_assert_eq(stat(ns_path, &st), 0);
    cr_assert_eq((double)st.st_ino, cJSON_GetObjectItem(cJSON_GetObjectItem(report, "ns"), "pid")->valuedouble);
    {
        struct stat mnt, net;

        cr_assert_eq(stat("/proc/self/ns/mnt", &mnt), 0);
        cr_assert_eq(stat("/proc/self/ns/net", &net), 0);
        snprintf(view, sizeof(view),
                 "{\"ns\": {\"pid\": %llu, \"mnt\": %llu, \"net\": %llu}, \"canary_path\": \"%s\","
                 " \"canary_token\": \"%s\", \"host_pid\": %ld}",
                 (unsigned long long)st.st_ino, (unsigned long long)mnt.st_ino, (unsigned long long)net.st_ino,
                 canary, token, (long)idle);
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon__observe_compare(buf, view, &iso_text, &err), 0, "%s", err.message);
    iso = cJSON_Parse(iso_text);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_PROCESS_CONTAINED)), "%s", iso_text);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_HOST_FS_RESTRICTED)), "%s", iso_text);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "canary_file_not_readable"), "ok")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "canary_pid_not_signalable"), "ok")));
    cr_assert_neq(strcmp(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "private"), 0);
    cJSON_Delete(iso);
    cJSON_Delete(report);
    free(iso_text);
    free(dir);
}

Test(observe, real_observer_refuses_bad_arguments)
{
    static const char *const cases[][4] = {
        { "--canary-path", "/x", NULL, NULL },          /* token missing */
        { "--host-pid", "abc", "--host-pid-token", "t" },
        { "--host-pid", "-5", "--host-pid-token", "t" },
        { "--bogus", "1", NULL, NULL },
        { "--idle", "tok", "ten", NULL },
    };
    const char *observer = getenv("CORDON_OBSERVER");

    if (observer == NULL || observer[0] == '\0')
        cr_skip("CORDON_OBSERVER is not set: build cordon-observe and point CORDON_OBSERVER at it");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *argv[6] = { observer, cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL };
        int status;
        pid_t pid = spawn(argv, -1);

        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "case %zu: status %d", i, status);
    }
}

/* ---- cordon_observe_run through a fake provider that runs on the host ----- */

/* The fake's whole state lives in the state JSON, as a provider's should. */
static int fake_terminations;
static bool fake_fail_import;

static char *fake_dir(const char *state_json)
{
    cJSON *state = cJSON_Parse(state_json);
    char *dir = strdup(cJSON_GetObjectItem(state, "dir")->valuestring);

    cJSON_Delete(state);
    return dir;
}

static int fake_provision(struct cordon_resource *r, const char *spec_json, char **ret_state_json,
                          struct cordon_error *err)
{
    cJSON *spec = cJSON_Parse(spec_json);
    char *dir = test_mkdtemp(), *state = NULL;

    cr_assert_not_null(spec);
    cr_assert_str_eq(cJSON_GetObjectItem(spec, "layout")->valuestring, "host");
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "network"), "mode")->valuestring, "none");
    cr_assert(strncmp(cJSON_GetObjectItem(spec, "execution_id")->valuestring, "observe-", 8) == 0);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "resources"), "pids")->valueint, 128);
    cJSON_Delete(spec);
    cr_assert_gt(asprintf(&state, "{\"dir\": \"%s\"}", dir), 0);
    free(dir);
    *ret_state_json = state;
    return 0;
}

static int fake_import_tar(struct cordon_resource *r, const char *state_json, const char *dest, int tar_fd,
                           struct cordon_error *err)
{
    struct cordon_tar_limits limits = { .max_bytes = 64u << 20, .max_entries = 16 };
    char *dir = fake_dir(state_json);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

    free(dir);
    cr_assert_str_eq(dest, "");
    if (fake_fail_import) {
        close(dirfd);
        return cordon_error_set(err, CORDON_E_IO, 0, "disk full (fake)");
    }
    rc = cordon_tar_extract_fd(tar_fd, dirfd, &limits, 0, NULL, err);
    close(dirfd);
    return rc;
}

static bool fake_remove_canary;

static int fake_exec(struct cordon_resource *r, const char *state_json, const char *request_json,
                     const struct cordon_exec_io *io, char **ret_result_json, struct cordon_error *err)
{
    cJSON *req = cJSON_Parse(request_json), *item;
    const char *argv[32] = { NULL };
    char path_env[256], *dir = fake_dir(state_json), *result = NULL;
    const char *envp[] = { path_env, NULL };
    struct cordon_runner_opts o;
    struct cordon_exec_outcome out;
    int n = 0, rc;

    cJSON_ArrayForEach(item, cJSON_GetObjectItem(req, "argv"))
        if (n < 31)
            argv[n++] = item->valuestring;
    /* A provider (or a tmp cleaner) that removes the host's canary while
     * the observer looks for it. */
    for (int i = 0; fake_remove_canary && i + 1 < n; i++)
        if (strcmp(argv[i], "--canary-path") == 0)
            unlink(argv[i + 1]);
    cr_assert_str_eq(cJSON_GetObjectItem(req, "cwd")->valuestring, "");
    snprintf(path_env, sizeof(path_env), "PATH=%s",
             cJSON_GetObjectItem(cJSON_GetObjectItem(req, "env"), "PATH")->valuestring);
    cordon_runner_opts_init(&o);
    o.argv = argv;
    o.envp = envp;
    o.cwd = dir;
    o.stdout_fd = io->stdout_fd;
    o.stderr_fd = io->stderr_fd;
    o.cancel_fd = io->cancel_fd;
    memset(&out, 0, sizeof(out));
    rc = cordon_runner_run(&o, &out, err);
    if (rc == 0 && asprintf(&result, "{\"status\": \"%s\", \"exit_code\": %d, \"signal\": %d}",
                            cordon_run_status_name(out.status), out.exit_code, out.signal) < 0)
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "fake: out of memory");
    cordon_exec_outcome_clear(&out);
    cJSON_Delete(req);
    free(dir);
    if (rc == 0)
        *ret_result_json = result;
    return rc;
}

static int fake_terminate(struct cordon_resource *r, const char *state_json, struct cordon_error *err)
{
    char *dir = fake_dir(state_json);

    fake_terminations++;
    test_rmtree(dir);
    free(dir);
    return 0;
}

static const char *const fake_kinds[] = { "code_execution", NULL };
static const struct cordon_provider_v1 fake_provider = {
    .abi_version = CORDON_ABI_VERSION,
    .struct_size = sizeof(struct cordon_provider_v1),
    .provider_id = "fake",
    .version = "0",
    .supported_kinds = fake_kinds,
    .provision = fake_provision,
    .exec = fake_exec,
    .import_tar = fake_import_tar,
    .terminate = fake_terminate,
};

static struct cordon_host_v1 fake_host(const char *observer)
{
    struct cordon_host_v1 h = {
        .abi_version = CORDON_ABI_VERSION,
        .struct_size = sizeof(struct cordon_host_v1),
        .alloc = malloc,
        .free = free,
        .observer_path = observer,
    };

    return h;
}

static void assert_no_children(void)
{
    errno = 0;
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child was left behind");
    cr_assert_eq(errno, ECHILD);
}

Test(observe, run_through_a_host_provider_reports_it_uncontained)
{
    const char *observer = getenv("CORDON_OBSERVER");
    static const char *const tools[] = { "python", "c++", NULL };
    struct cordon_observe_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_host_v1 host;
    struct cordon_error err;
    char *json = NULL;
    cJSON *res, *iso, *tc, *report;
    const char *canary;
    struct stat st;

    if (observer == NULL || observer[0] == '\0')
        cr_skip("CORDON_OBSERVER is not set: build cordon-observe and point CORDON_OBSERVER at it");
    host = fake_host(observer);
    opts.host = &host;
    opts.provider = &fake_provider;
    opts.toolchains = tools;
    cordon_error_init(&err);
    cr_assert_eq(cordon_observe_run(&opts, &json, &err), 0, "%s", err.message);
    cr_assert_eq(fake_terminations, 1);
    assert_no_children();

    res = cJSON_Parse(json);
    cr_assert_not_null(res, "%s", json);
    cr_assert_str_eq(cJSON_GetObjectItem(res, "observed_by")->valuestring, "cordon-observe");
    iso = cJSON_GetObjectItem(res, "isolation");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_PROCESS_CONTAINED)), "%s", json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, CORDON_AXIS_HOST_FS_RESTRICTED)), "%s", json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "canary_pid_not_visible"), "ok")), "%s", json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(find_check(iso, "canary_file_not_readable"), "ok")), "%s", json);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(find_check(iso, "no_inherited_fds"), "ok")), "%s", json);
    cr_assert_str_eq(cJSON_GetObjectItem(res, "network")->valuestring,
                     cJSON_GetObjectItem(iso, "network_mode")->valuestring);
    cr_assert(cJSON_IsArray(cJSON_GetObjectItem(res, "interfaces")));
    tc = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "toolchains"), "python");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(tc, "available")), "%s", json);
    cr_assert(strncmp(cJSON_GetObjectItem(tc, "version")->valuestring, "3.", 2) == 0, "%s", json);
    cr_assert(strncmp(cJSON_GetObjectItem(tc, "raw_version")->valuestring, "Python 3.", 9) == 0);
    tc = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "toolchains"), "c++");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(tc, "available")), "%s", json);
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "toolchains"), "node"), "only what was asked");
    /* The canary directory is gone once the observation is over. */
    report = cJSON_GetObjectItem(res, "report");
    canary = cJSON_GetObjectItem(cJSON_GetObjectItem(report, "canary_file"), "path")->valuestring;
    cr_assert(strncmp(canary, "/run/cordon-observe-", 20) == 0 || strncmp(canary, "/tmp/cordon-observe-", 20) == 0,
              "%s", canary);
    cr_assert_neq(stat(canary, &st), 0, "%s survived", canary);
    {
        /* The observation composes into facts that pass the schema. */
        struct cordon_facts_parts parts = { .struct_size = sizeof(parts) };
        char *facts = NULL;

        parts.provider_id = "fake";
        parts.supported_kinds = fake_kinds;
        parts.available = true;
        parts.reason = "ready";
        parts.safety_class = "trusted_local";
        parts.mechanism = "host_process";
        parts.observation_json = json;
        cr_assert_eq(cordon_facts_compose(&parts, &facts, &err), 0, "%s", err.message);
        cr_assert_eq(cordon__facts_validate(facts, &err), 0, "%s", err.message);
        free(facts);
    }
    cJSON_Delete(res);
    free(json);
}

Test(observe, run_failure_names_the_step_and_still_tears_down)
{
    const char *observer = getenv("CORDON_OBSERVER");
    struct cordon_observe_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_host_v1 host;
    struct cordon_error err;
    char *json = (char *)"untouched";

    if (observer == NULL || observer[0] == '\0')
        cr_skip("CORDON_OBSERVER is not set: build cordon-observe and point CORDON_OBSERVER at it");
    host = fake_host(observer);
    opts.host = &host;
    opts.provider = &fake_provider;
    fake_fail_import = true;
    cordon_error_init(&err);
    cr_assert_eq(cordon_observe_run(&opts, &json, &err), CORDON_E_IO);
    cr_assert_str_eq(err.message, "observe: import_tar failed: disk full (fake)");
    cr_assert_str_eq(json, "untouched");
    cr_assert_eq(fake_terminations, 1, "terminate runs on failure too");
    assert_no_children();
}

/* A canary file gone while the observer looked would read as a host file
 * system the sandbox cannot see: the observation fails instead. */
Test(observe, a_canary_file_removed_during_the_observation_proves_nothing)
{
    const char *observer = getenv("CORDON_OBSERVER");
    struct cordon_observe_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_host_v1 host;
    struct cordon_error err;
    char *json = (char *)"untouched";

    cr_assert(observer != NULL && observer[0] != '\0', "CORDON_OBSERVER is not set");
    host = fake_host(observer);
    opts.host = &host;
    opts.provider = &fake_provider;
    fake_remove_canary = true;
    cordon_error_init(&err);
    cr_assert_eq(cordon_observe_run(&opts, &json, &err), CORDON_E_PROVIDER, "%s", err.message);
    cr_expect_neq(strstr(err.message, "was removed or changed while the observer looked"), NULL, "%s",
                  err.message);
    cr_assert_str_eq(json, "untouched");
    fake_remove_canary = false;
    assert_no_children();
}

struct run_bad_row {
    char observer[32];   /* "" leaves it NULL */
    char toolchain[16];  /* "" asks none */
    char environment[24];
    char want[64];
};

static struct run_bad_row run_bad_rows[] = {
    { "", "", "", "host.observer_path must be an absolute path" },
    { "cordon-observe", "", "", "host.observer_path must be an absolute path" },
    { "/bin/true", "python3", "", "toolchains[0]: \"python3\" is not a canonical id" },
    { "/bin/true", "cpp", "", "toolchains[0]: \"cpp\" is not a canonical id" },
    { "/bin/true", "", "[1]", "environment_json: must be a JSON object" },
    { "/nonexistent/cordon-observe", "", "", "canary process" },
};

ParameterizedTestParameters(observe, run_refuses_bad_options)
{
    return cr_make_param_array(struct run_bad_row, run_bad_rows, sizeof(run_bad_rows) / sizeof(run_bad_rows[0]));
}

ParameterizedTest(struct run_bad_row *row, observe, run_refuses_bad_options)
{
    const char *tools[] = { row->toolchain, NULL };
    struct cordon_observe_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_host_v1 host = fake_host(row->observer[0] != '\0' ? row->observer : NULL);
    struct cordon_error err;
    char *json = (char *)"untouched";

    opts.host = &host;
    opts.provider = &fake_provider;
    opts.toolchains = row->toolchain[0] != '\0' ? tools : NULL;
    opts.environment_json = row->environment[0] != '\0' ? row->environment : NULL;
    cordon_error_init(&err);
    cr_assert_lt(cordon_observe_run(&opts, &json, &err), 0);
    cr_assert(strstr(err.message, row->want) != NULL, "message \"%s\" lacks \"%s\"", err.message, row->want);
    cr_assert_str_eq(json, "untouched");
    cr_assert_eq(fake_terminations, 0, "nothing was provisioned");
    assert_no_children();
}

/* ---- the boundary, read from the host's /proc ------------------------------- */

static char fake_answer[128];

static int fake_boundary(struct cordon_resource *r, const char *state_json, char **ret_boundary_json,
                         struct cordon_error *err)
{
    if (fake_answer[0] == '\0')
        return cordon_error_set(err, CORDON_E_NOT_FOUND, 0, "no such execution (fake)");
    *ret_boundary_json = strdup(fake_answer);
    return 0;
}

/* The observation's host view and isolation, through a fake that names answer. */
static cJSON *observe_naming(const char *answer, bool with_boundary)
{
    const char *observer = getenv("CORDON_OBSERVER");
    struct cordon_provider_v1 p = fake_provider;
    struct cordon_observe_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_host_v1 host;
    struct cordon_error err;
    char *json = NULL;
    cJSON *res;

    cr_assert(observer != NULL && observer[0] != '\0', "CORDON_OBSERVER is not set");
    snprintf(fake_answer, sizeof(fake_answer), "%s", answer);
    if (with_boundary)
        p.boundary = fake_boundary;
    host = fake_host(observer);
    opts.host = &host;
    opts.provider = &p;
    cordon_error_init(&err);
    cr_assert_eq(cordon_observe_run(&opts, &json, &err), 0, "%s", err.message);
    res = cJSON_Parse(json);
    cr_assert_not_null(res);
    free(json);
    return res;
}

static const char *boundary_detail(const cJSON *res, const char *axis)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(res, "isolation"), "checks"))
        if (strcmp(cJSON_GetObjectItem(c, "check")->valuestring, "boundary_verified") == 0 &&
            strcmp(cJSON_GetObjectItem(c, "axis")->valuestring, axis) == 0) {
            cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "ok")));
            return cJSON_GetObjectItem(c, "detail")->valuestring;
        }
    cr_assert_fail("no boundary_verified check on %s", axis);
    return NULL;
}

Test(observe, named_boundary_is_read_from_proc_and_the_hosts_init_is_refused)
{
    cJSON *res = observe_naming("{\"pids\": [1]}", true);
    const cJSON *view = cJSON_GetObjectItem(res, "host_view");
    const cJSON *b = cJSON_GetObjectItem(view, "boundary");
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "processes"), 0);
    struct stat st;

    cr_assert_str_eq(cJSON_GetObjectItem(b, "status")->valuestring, "reported");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(p, "readable")));
    cr_assert_eq(cJSON_GetObjectItem(p, "pid")->valuedouble, 1);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(p, "boundary")));
    /* Where pid 1's namespaces can be read (not in every test host). */
    if (stat("/proc/1/ns/mnt", &st) == 0)
        cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(view, "pid1_ns"), "mnt")->valuedouble,
                     (double)st.st_ino);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(view, "self"), "pid")->valuedouble, (double)getpid());
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "isolation"), "mechanism_kind")->valuestring,
                     "namespaces", "the observer ran on this host's kernel");
    for (size_t i = 0; i < 4; i++)
        cr_assert(strstr(boundary_detail(res, axes[i]), "the host's init") != NULL, "%s",
                  boundary_detail(res, axes[i]));
    cJSON_Delete(res);
    assert_no_children();
}

/* unshare(CLONE_NEWNS) needs CAP_SYS_ADMIN: the suite observe_root runs
 * from make check-integration (a suite whose name ends in _root needs root). */
Test(observe_root, named_boundary_in_a_mount_namespace_of_its_own_is_not_the_observers)
{
    char answer[64], ns_path[64];
    int ready[2];
    pid_t child;
    cJSON *res;
    const cJSON *procs, *p, *kid;
    struct stat st;
    char c;

    /* A process (and its child) in a mount namespace of its own: a
     * sandbox, but not the one the observer ran in. */
    cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
    child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        /* Both die with their parent: a failed assertion below ends the
         * test's worker before it can reap them. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || unshare(CLONE_NEWNS) != 0)
            _exit(1);
        if (fork() == 0) {
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
                _exit(1);
            close(ready[1]);
            pause();
            _exit(0);
        }
        close(ready[1]);
        pause();
        _exit(0);
    }
    close(ready[1]);
    /* The grandchild closed its copy too: EOF once both are set up. */
    cr_assert_eq(read(ready[0], &c, 1), 0);
    close(ready[0]);
    snprintf(answer, sizeof(answer), "{\"pids\": [%ld]}", (long)child);
    res = observe_naming(answer, true);
    procs = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "host_view"), "boundary"), "processes");
    p = cJSON_GetArrayItem(procs, 0);
    kid = cJSON_GetArrayItem(procs, 1);
    snprintf(ns_path, sizeof(ns_path), "/proc/%ld/ns/mnt", (long)child);
    cr_assert_eq(stat(ns_path, &st), 0);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "ns"), "mnt")->valuedouble, (double)st.st_ino);
    cr_assert_eq(cJSON_GetObjectItem(p, "seccomp")->valuedouble, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "uids")), 4);
    cr_assert(cJSON_IsArray(cJSON_GetObjectItem(p, "tasks")));
    /* Its child is found below it, rooted at it. */
    cr_assert_not_null(kid, "the boundary's child is read too");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(kid, "boundary")));
    cr_assert_eq(cJSON_GetObjectItem(kid, "root")->valuedouble, (double)child);
    cr_assert_eq(cJSON_GetObjectItem(kid, "parent")->valuedouble, (double)child);
    for (size_t i = 0; i < 4; i++)
        cr_assert(strstr(boundary_detail(res, axes[i]), "is in mnt namespace") != NULL, "%s",
                  boundary_detail(res, axes[i]));
    kill((pid_t)cJSON_GetObjectItem(kid, "pid")->valuedouble, SIGKILL);
    cJSON_Delete(res);
    reap(child, true);
}

struct answer_row {
    char answer[64];
    char says[64];
};

static struct answer_row answer_rows[] = {
    { "{\"pids\": [0]}", "answer is refused: a pid is not a whole number" },
    { "{\"pids\": [1.5]}", "answer is refused: a pid is not a whole number" },
    { "{\"pids\": []}", "answer is refused: it is not a JSON object" },
    { "{\"pids\": [2, 3, 4, 5, 6, 7, 8, 9, 10]}", "answer is refused: it is not a JSON object" },
    { "[1]", "answer is refused" },
    { "", "the provider's boundary failed: no such execution (fake)" },
};

ParameterizedTestParameters(observe, boundary_answer_that_is_not_pids_is_refused)
{
    return cr_make_param_array(struct answer_row, answer_rows, sizeof(answer_rows) / sizeof(answer_rows[0]));
}

ParameterizedTest(struct answer_row *row, observe, boundary_answer_that_is_not_pids_is_refused)
{
    cJSON *res = observe_naming(row->answer, true);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "host_view"), "boundary");

    cr_assert_str_eq(cJSON_GetObjectItem(b, "status")->valuestring, "failed");
    cr_assert(strstr(cJSON_GetObjectItem(b, "error")->valuestring, row->says) != NULL, "%s",
              cJSON_GetObjectItem(b, "error")->valuestring);
    for (size_t i = 0; i < 4; i++)
        cr_assert(strstr(boundary_detail(res, axes[i]), row->says) != NULL);
    cJSON_Delete(res);
    assert_no_children();
}

Test(observe, provider_without_a_boundary_is_observed_from_inside_as_before)
{
    cJSON *res = observe_naming("", false);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "host_view"), "boundary");
    const cJSON *iso = cJSON_GetObjectItem(res, "isolation");

    cr_assert_str_eq(cJSON_GetObjectItem(b, "status")->valuestring, "unsupported");
    cr_assert_null(find_check(iso, "boundary_verified"));
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "mechanism_kind")->valuestring, "namespaces");
    /* The host's own boot id went to the observer, which saw the same. */
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "report"), "kernel"),
                                         "kind")->valuestring, "host");
    cJSON_Delete(res);
    assert_no_children();
}
