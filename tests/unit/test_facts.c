/* Unit tests of sdk/facts.c: versions, safety classes, the facts schema. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cjson/cJSON.h>

#include <cordon/sdk/facts.h>
#include "sdk/facts-validate.h"

/* ---- version normalisation ------------------------------------------------ */

/*
 * Criterion may run each parameter in a re-executed worker, so rows hold
 * their strings inline: a pointer into our image would not survive.
 */
struct norm_row {
    char tool[8];  /* "" passes NULL */
    char raw[80];
    char want[16]; /* "": must fail with CORDON_E_INVALID */
};

static struct norm_row norm_rows[] = {
    { "python", "Python 3.11.2", "3.11.2" },
    { "python", "Python 3.11.2\n", "3.11.2" },
    { "python", "  Python 3.10.0\r\n", "3.10.0" },
    { "python", "Python 3.12.0rc1", "3.12.0" },
    { "node", "v20.19.2", "20.19.2" },
    { "node", "v18.0.0\n", "18.0.0" },
    { "go", "go version go1.19.8 linux/amd64", "1.19.8" },
    { "go", "go version devel go1.23-abc123 linux/amd64", "1.23" },
    { "c++", "c++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022", "12.2.0" },
    { "c++", "c++ (GCC) 13.1.1 20230614 (Red Hat 13.1.1-4)", "13.1.1" },
    { "c++", "Debian clang version 14.0.6", "14.0.6" },
    { "c++", "c++ (Ubuntu 9.4.0-1ubuntu1~20.04.2) 9.4.0", "9.4.0" },
    { "c++", "c++ (vendor build 2.1) 12.2.0", "12.2.0" },
    { "", "sometool 1.2.3 (built with 4.5.6)", "1.2.3" },
    { "python", "garbage", "" },
    { "node", "", "" },
    { "go", "bash: go: command not found", "" },
    { "c++", "c++: fatal error 12", "" },
    { "python", "Python three", "" },
    { "node", "v", "" },
    { "python", "oops\nPython 3.11.2", "" },
    { "go", "go version go", "" },
    { "", "1..2", "" },
    { "python", "\n\n\n", "" },
};

ParameterizedTestParameters(facts, version_normalize)
{
    return cr_make_param_array(struct norm_row, norm_rows, sizeof(norm_rows) / sizeof(norm_rows[0]));
}

ParameterizedTest(struct norm_row *row, facts, version_normalize)
{
    struct cordon_error err;
    char out[64] = "untouched";
    int rc;

    cordon_error_init(&err);
    rc = cordon_version_normalize(row->tool[0] != '\0' ? row->tool : NULL, row->raw, out, sizeof(out), &err);
    if (row->want[0] != '\0') {
        cr_assert_eq(rc, 0, "%s \"%s\": %s", row->tool, row->raw, err.message);
        cr_assert_str_eq(out, row->want, "%s \"%s\"", row->tool, row->raw);
    } else {
        cr_assert_eq(rc, CORDON_E_INVALID, "%s \"%s\" gave %d (%s)", row->tool, row->raw, rc, out);
        cr_assert_str_eq(out, "untouched", "ret written on failure");
        cr_assert(strstr(err.message, "version") != NULL, "message: %s", err.message);
    }
}

Test(facts, version_normalize_refuses_small_buffer_and_null)
{
    struct cordon_error err;
    char out[4] = "abc";

    cordon_error_init(&err);
    cr_assert_eq(cordon_version_normalize("node", "v20.19.2", out, sizeof(out), &err), CORDON_E_LIMIT);
    cr_assert_str_eq(out, "abc");
    cr_assert(strstr(err.message, "20.19.2") != NULL, "%s", err.message);
    cr_assert_eq(cordon_version_normalize("node", NULL, out, sizeof(out), &err), CORDON_E_INVALID);
    cr_assert_eq(cordon_version_normalize("node", "v1.2", NULL, 8, &err), CORDON_E_INVALID);
}

struct cmp_row {
    const char *a;
    const char *b;
    int sign;
};

static const struct cmp_row cmp_rows[] = {
    { "3.10", "3.9", 1 },
    { "1.2", "1.2.0", 0 },
    { "1.2.1", "1.2", 1 },
    { "2", "10", -1 },
    { "1.02", "1.2", 0 },
    { "20.19.2", "18", 1 },
    { "0.9", "1", -1 },
    { "", "0", 0 },
    { "1.10.0", "1.9.9", 1 },
    { "99999999999999999999.1", "99999999999999999999.0", 1 },
    { "100000000000000000000", "99999999999999999999", 1 },
    { "3.11.2", "3.11.2", 0 },
    { "0.0.0", "", 0 },
    { "1.0.0.1", "1", 1 },
};

Test(facts, version_compare_is_numeric_and_antisymmetric)
{
    for (size_t i = 0; i < sizeof(cmp_rows) / sizeof(cmp_rows[0]); i++) {
        int ab = cordon_version_compare(cmp_rows[i].a, cmp_rows[i].b);
        int ba = cordon_version_compare(cmp_rows[i].b, cmp_rows[i].a);

        cr_assert_eq((ab > 0) - (ab < 0), cmp_rows[i].sign, "\"%s\" vs \"%s\" gave %d", cmp_rows[i].a,
                     cmp_rows[i].b, ab);
        cr_assert_eq((ba > 0) - (ba < 0), -cmp_rows[i].sign, "\"%s\" vs \"%s\" gave %d", cmp_rows[i].b,
                     cmp_rows[i].a, ba);
    }
}

Test(facts, safety_class_list_is_fixed)
{
    static const char *const good[] = { "isolated", "namespace", "host_policy", "filesystem_only",
                                        "trusted_local" };
    static const char *const bad[] = { "Isolated", "", "container", "trusted-local", "isolated ", "required" };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert(cordon__safety_class_valid(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(!cordon__safety_class_valid(bad[i]), "\"%s\"", bad[i]);
    cr_assert(!cordon__safety_class_valid(NULL));
}

/* ---- validation ------------------------------------------------------------ */

static const char good_facts[] =
    "{\"provider_id\": \"docker\", \"available\": true, \"reason\": \"ready\","
    " \"supported_kinds\": [\"code_execution\"], \"observed_by\": \"cordon-observe\","
    " \"safety_class\": \"isolated\","
    " \"isolation\": {\"process_contained\": true, \"host_filesystem_restricted\": true,"
    "   \"privilege_escalation_blocked\": true, \"syscalls_restricted\": true,"
    "   \"mechanism\": \"container\", \"rootfs_read_only\": true, \"network_mode\": \"none\","
    "   \"checks\": [{\"axis\": \"process_contained\", \"check\": \"pid_namespace\", \"ok\": true,"
    "                 \"detail\": \"differs\"}]},"
    " \"network\": \"none\", \"workspace_access_modes\": [\"snapshot\"],"
    " \"languages\": [\"python\", \"node\", \"go\", \"cpp\"],"
    " \"toolchains\": {\"python\": {\"available\": true, \"version\": \"3.11.2\", \"raw_version\": \"Python 3.11.2\"},"
    "   \"node\": {\"available\": true, \"version\": \"20.19.2\", \"raw_version\": \"v20.19.2\"},"
    "   \"go\": {\"available\": true, \"version\": \"1.19.8\", \"raw_version\": \"go version go1.19.8\"},"
    "   \"c++\": {\"available\": true, \"version\": \"12.2.0\", \"raw_version\": \"c++ 12.2.0\"}},"
    " \"limits_enforced\": [\"cpus\", \"memory_bytes\", \"disk_bytes\", \"pids\", \"runtime_ms\","
    "   \"max_output_bytes\"],"
    " \"mechanism_facts\": {\"server_version\": \"20.10.24\", \"runtime\": \"runc\", \"cgroup_version\": 1}}";

/* Set (or with value NULL delete) the member at a dotted path. */
static void json_set(cJSON *root, const char *path, const char *value)
{
    char buf[256], *key, *rest, *dot;
    cJSON *parent = root;

    snprintf(buf, sizeof(buf), "%s", path);
    key = buf;
    while ((dot = strchr(key, '.')) != NULL) {
        *dot = '\0';
        parent = cJSON_GetObjectItemCaseSensitive(parent, key);
        cr_assert_not_null(parent, "path %s", path);
        key = dot + 1;
    }
    rest = key;
    cJSON_DeleteItemFromObjectCaseSensitive(parent, rest);
    if (value != NULL) {
        cJSON *v = cJSON_Parse(value);

        cr_assert_not_null(v, "value %s", value);
        cJSON_AddItemToObject(parent, rest, v);
    }
}

static char *mutated(const char *doc, const char *path, const char *value)
{
    cJSON *root = cJSON_Parse(doc);
    char *text;

    cr_assert_not_null(root);
    if (path != NULL)
        json_set(root, path, value);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

Test(facts, validate_accepts_good_documents)
{
    struct cordon_error err;
    char *doc;

    cordon_error_init(&err);
    cr_assert_eq(cordon__facts_validate(good_facts, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__facts_validate("{\"provider_id\": \"runc\", \"available\": false,"
                                       " \"reason\": \"runc not found in PATH\"}", &err), 0, "%s", err.message);
    /* A fixture says it did not observe, and unknown keys are tolerated. */
    doc = mutated(good_facts, "observed_by", "\"synthetic\"");
    cr_assert_eq(cordon__facts_validate(doc, &err), 0, "%s", err.message);
    free(doc);
    doc = mutated(good_facts, "image_digest", "\"sha256:00\"");
    cr_assert_eq(cordon__facts_validate(doc, &err), 0, "%s", err.message);
    free(doc);
    /* How each limit is enforced, in the schema's words. */
    doc = mutated(good_facts, "limits_enforcement",
                  "{\"cpus\": \"none\", \"memory_bytes\": \"cgroup\", \"disk_bytes\": \"tmpfs_size\","
                  " \"pids\": \"rlimit\", \"runtime_ms\": \"sandbox_init\", \"max_output_bytes\": \"host\"}");
    cr_assert_eq(cordon__facts_validate(doc, &err), 0, "%s", err.message);
    free(doc);
    /* An unavailable toolchain needs no version, and its language is absent. */
    doc = mutated(good_facts, "toolchains.go", "{\"available\": false, \"reason\": \"go not found\"}");
    {
        char *doc2 = mutated(doc, "languages", "[\"python\", \"node\", \"cpp\"]");

        cr_assert_eq(cordon__facts_validate(doc2, &err), 0, "%s", err.message);
        free(doc2);
    }
    free(doc);
}

struct bad_row {
    char path[48];
    char value[112]; /* "" deletes */
    char want[72];   /* substring of the message */
};

static struct bad_row bad_rows[] = {
    { "isolation", "\"required\"", "a string label (\"required\") is not accepted" },
    { "isolation", "42", "facts.isolation: must be an object" },
    { "isolation.process_contained", "\"yes\"", "isolation.process_contained: must be an observed boolean" },
    { "isolation.syscalls_restricted", "", "isolation.syscalls_restricted" },
    { "isolation.privilege_escalation_blocked", "1", "privilege_escalation_blocked" },
    { "isolation.network_mode", "\"bridge\"", "isolation.network_mode" },
    { "isolation.checks", "[{\"axis\": \"process_contained\", \"check\": \"pid_namespace\", \"ok\": false}]",
      "claimed true" },
    { "isolation.checks", "[{\"axis\": \"speed\", \"check\": \"x\", \"ok\": true}]", "checks[0]" },
    { "safety_class", "\"secure\"", "facts.safety_class" },
    { "safety_class", "", "facts.safety_class" },
    { "toolchains.python3", "{\"available\": true, \"version\": \"3.11.2\", \"raw_version\": \"x\"}",
      "\"python3\" is not a canonical toolchain id" },
    { "toolchains.python.version", "\"3.11.2rc1\"", "toolchains.python.version" },
    { "toolchains.node.version", "20", "toolchains.node.version" },
    { "toolchains.node.raw_version", "", "toolchains.node.raw_version" },
    { "toolchains.c++", "{\"available\": \"yes\"}", "toolchains.c++" },
    { "toolchains.go", "{\"available\": false}", "languages: \"go\" is listed" },
    { "toolchains", "[]", "facts.toolchains" },
    { "observed_by", "", "facts.observed_by" },
    { "observed_by", "\"guess\"", "facts.observed_by" },
    { "provider_id", "\"Docker\"", "facts.provider_id" },
    { "provider_id", "", "facts.provider_id" },
    { "available", "\"true\"", "facts.available" },
    { "reason", "", "facts.reason" },
    { "network", "\"bridge\"", "facts.network" },
    { "languages", "[\"ruby\"]", "facts.languages[0]" },
    { "languages", "\"python\"", "facts.languages" },
    { "limits_enforced", "[\"swap\"]", "facts.limits_enforced[0]" },
    { "limits_enforcement", "[\"cgroup\"]", "facts.limits_enforcement: must be an object" },
    { "limits_enforcement", "{\"swap\": \"cgroup\"}", "facts.limits_enforcement: \"swap\" is not a limit" },
    { "limits_enforcement", "{\"memory_bytes\": \"hope\"}", "facts.limits_enforcement.memory_bytes" },
    { "limits_enforcement", "{\"pids\": 1}", "facts.limits_enforcement.pids" },
    { "limits_enforcement", "{\"cpus\": null}", "facts.limits_enforcement.cpus" },
    { "workspace_access_modes", "[\"rw\"]", "facts.workspace_access_modes[0]" },
    { "supported_kinds", "[]", "facts.supported_kinds: must not be empty" },
    { "mechanism_facts", "\"runc\"", "facts.mechanism_facts" },
    { "mechanism_facts", "", "facts.mechanism_facts" },
};

ParameterizedTestParameters(facts, validate_refuses)
{
    return cr_make_param_array(struct bad_row, bad_rows, sizeof(bad_rows) / sizeof(bad_rows[0]));
}

ParameterizedTest(struct bad_row *row, facts, validate_refuses)
{
    struct cordon_error err;
    char *doc = mutated(good_facts, row->path, row->value[0] != '\0' ? row->value : NULL);

    cordon_error_init(&err);
    cr_assert_eq(cordon__facts_validate(doc, &err), CORDON_E_INVALID, "%s = %s was accepted", row->path,
                 row->value[0] != '\0' ? row->value : "(deleted)");
    cr_assert(strstr(err.message, row->want) != NULL, "%s: message \"%s\" lacks \"%s\"", row->path, err.message,
              row->want);
    free(doc);
}

Test(facts, validate_refuses_non_documents)
{
    static const char *const docs[] = { "", "not json", "[]", "\"facts\"", "{\"provider_id\": \"x\"}" };
    struct cordon_error err;

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        cordon_error_init(&err);
        cr_assert_eq(cordon__facts_validate(docs[i], &err), CORDON_E_INVALID, "\"%s\"", docs[i]);
        cr_assert(strncmp(err.message, "facts", 5) == 0, "%s", err.message);
    }
    cr_assert_eq(cordon__facts_validate(NULL, &err), CORDON_E_INVALID);
}

/* The host parses facts once: the tree handed back is the document, and a
 * refused document hands back nothing. */
Test(facts, parse_valid_hands_back_the_checked_tree_or_nothing)
{
    struct cordon_error err;
    cJSON *tree = (cJSON *)1, *want = cJSON_Parse(good_facts);
    char *doc = mutated(good_facts, "isolation", "\"isolated\"");

    cordon_error_init(&err);
    cr_assert_eq(cordon__facts_parse_valid(good_facts, &tree, &err), 0, "%s", err.message);
    cr_assert_not_null(tree);
    cr_assert(cJSON_Compare(tree, want, 1));
    cJSON_Delete(tree);
    tree = (cJSON *)1;
    cr_assert_eq(cordon__facts_parse_valid(doc, &tree, &err), CORDON_E_INVALID);
    cr_assert_null(tree);
    cr_assert(strstr(err.message, "facts.isolation") != NULL, "%s", err.message);
    tree = (cJSON *)1;
    cr_assert_eq(cordon__facts_parse_valid("not json", &tree, &err), CORDON_E_INVALID);
    cr_assert_null(tree);
    free(doc);
    cJSON_Delete(want);
}

/* ---- composition ---------------------------------------------------------- */

static const char observation[] =
    "{\"observed_by\": \"cordon-observe\","
    " \"isolation\": {\"process_contained\": true, \"host_filesystem_restricted\": false,"
    "   \"privilege_escalation_blocked\": true, \"syscalls_restricted\": true, \"network_mode\": \"none\","
    "   \"checks\": [{\"axis\": \"host_filesystem_restricted\", \"check\": \"no_inherited_fds\", \"ok\": false,"
    "                 \"detail\": \"inherited beyond stdio: fd 7 -> /sys/fs/cgroup\"}]},"
    " \"network\": \"none\", \"interfaces\": [\"lo\"],"
    " \"toolchains\": {\"python\": {\"available\": true, \"version\": \"3.11.2\", \"raw_version\": \"Python 3.11.2\"},"
    "   \"go\": {\"available\": false, \"reason\": \"go not found\"},"
    "   \"c++\": {\"available\": true, \"version\": \"12.2.0\", \"raw_version\": \"c++ (Debian) 12.2.0\"}},"
    " \"report\": {\"report_version\": 1}}";

static const char *const kinds[] = { "code_execution", NULL };
static const char *const modes[] = { "snapshot", "read_only", NULL };
static const char *const limits[] = { "cpus", "memory_bytes", "pids", NULL };

static void parts_init(struct cordon_facts_parts *p)
{
    memset(p, 0, sizeof(*p));
    p->struct_size = sizeof(*p);
    p->provider_id = "docker";
    p->supported_kinds = kinds;
    p->available = true;
    p->reason = "ready";
    p->safety_class = "isolated";
    p->mechanism = "container";
    p->rootfs_read_only = true;
    p->workspace_access_modes = modes;
    p->limits_enforced = limits;
    p->observation_json = observation;
    p->mechanism_facts_json = "{\"runtime\": \"runc\"}";
}

Test(facts, compose_round_trips_through_validate)
{
    struct cordon_facts_parts parts;
    struct cordon_error err;
    char *json = NULL;
    cJSON *f, *iso, *langs;

    parts_init(&parts);
    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__facts_validate(json, &err), 0, "%s: %s", err.message, json);
    f = cJSON_Parse(json);
    iso = cJSON_GetObjectItem(f, "isolation");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, "process_contained")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, "host_filesystem_restricted")));
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "mechanism")->valuestring, "container");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, "rootfs_read_only")));
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "none");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(iso, "checks")), 1);
    cr_assert_str_eq(cJSON_GetObjectItem(f, "network")->valuestring, "none");
    cr_assert_str_eq(cJSON_GetObjectItem(f, "observed_by")->valuestring, "cordon-observe");
    cr_assert_str_eq(cJSON_GetObjectItem(f, "safety_class")->valuestring, "isolated");
    /* Languages follow the toolchains that were observed available. */
    langs = cJSON_GetObjectItem(f, "languages");
    cr_assert_eq(cJSON_GetArraySize(langs), 2, "%s", json);
    cr_assert_str_eq(cJSON_GetArrayItem(langs, 0)->valuestring, "python");
    cr_assert_str_eq(cJSON_GetArrayItem(langs, 1)->valuestring, "cpp");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "limits_enforced")), 3);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "mechanism_facts"), "runtime")->valuestring,
                     "runc");
    cr_assert_null(cJSON_GetObjectItem(f, "report"), "the raw report does not belong in facts");
    cJSON_Delete(f);
    free(json);
}

Test(facts, compose_unavailable_says_why)
{
    struct cordon_facts_parts parts;
    struct cordon_error err;
    char *json = NULL;
    cJSON *f;

    parts_init(&parts);
    parts.available = false;
    parts.reason = "docker daemon not reachable at /run/docker.sock";
    parts.observation_json = NULL;
    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__facts_validate(json, &err), 0, "%s", err.message);
    f = cJSON_Parse(json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(f, "available")));
    cr_assert_str_eq(cJSON_GetObjectItem(f, "observed_by")->valuestring, "none");
    cr_assert_str_eq(cJSON_GetObjectItem(f, "reason")->valuestring, parts.reason);
    cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "supported_kinds"), 0)->valuestring,
                     "code_execution");
    cr_assert_null(cJSON_GetObjectItem(f, "isolation"));
    cJSON_Delete(f);
    free(json);
}

/* A probe that only claims: the axes of its bits, the network it names,
 * nothing observed, no toolchain (the host's observation adds them). */
Test(facts, compose_a_claim_without_observing)
{
    struct cordon_facts_parts parts;
    struct cordon_error err;
    char *json = NULL;
    cJSON *f, *iso;

    parts_init(&parts);
    parts.observation_json = NULL;
    parts.claims = CORDON_CLAIM_PROCESS_CONTAINED | CORDON_CLAIM_SYSCALLS_RESTRICTED;
    parts.network = "private";
    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), 0, "%s", err.message);
    cr_assert_eq(cordon__facts_validate(json, &err), 0, "%s: %s", err.message, json);
    f = cJSON_Parse(json);
    iso = cJSON_GetObjectItem(f, "isolation");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, "process_contained")), "%s", json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, "host_filesystem_restricted")), "%s", json);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, "privilege_escalation_blocked")), "%s", json);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(iso, "syscalls_restricted")), "%s", json);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(iso, "checks")), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(iso, "network_mode")->valuestring, "private");
    cr_assert_str_eq(cJSON_GetObjectItem(f, "network")->valuestring, "private");
    cr_assert_str_eq(cJSON_GetObjectItem(f, "observed_by")->valuestring, "none");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "toolchains")), 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "languages")), 0);
    cJSON_Delete(f);
    free(json);
    /* A deferred axis is claimed false and listed for the host to decide;
     * one the provider also claims stays a claim. */
    parts.deferred = CORDON_CLAIM_HOST_FS_RESTRICTED | CORDON_CLAIM_PROCESS_CONTAINED;
    json = NULL;
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), 0, "%s", err.message);
    f = cJSON_Parse(json);
    iso = cJSON_GetObjectItem(f, "isolation");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(iso, "deferred")), 1, "%s", json);
    cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(iso, "deferred"), 0)->valuestring,
                     "host_filesystem_restricted");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(iso, "host_filesystem_restricted")));
    cJSON_Delete(f);
    free(json);
    cr_assert_eq(cordon__facts_validate("{\"provider_id\": \"x\", \"available\": true, \"reason\": \"ready\","
                                       " \"supported_kinds\": [\"code_execution\"], \"observed_by\": \"none\","
                                       " \"safety_class\": \"isolated\", \"isolation\": {\"process_contained\": true,"
                                       " \"host_filesystem_restricted\": true, \"privilege_escalation_blocked\": true,"
                                       " \"syscalls_restricted\": true, \"deferred\": [\"process_contained\"]},"
                                       " \"network\": \"none\", \"workspace_access_modes\": [], \"languages\": [],"
                                       " \"toolchains\": {}, \"limits_enforced\": [], \"mechanism_facts\": {}}",
                                       &err),
                 CORDON_E_INVALID, "a deferred axis claimed true is refused");
    cr_assert(strstr(err.message, "deferred") != NULL, "%s", err.message);
    parts.deferred = 0;
    /* A network the schema does not know is refused, naming it. */
    parts.network = "wifi";
    json = NULL;
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "network") != NULL, "%s", err.message);
    cr_assert_null(json);
}

/* The host's toolchains replace a provider's, and languages follow. */
Test(facts, set_toolchains_replaces_and_derives_languages)
{
    cJSON *f = cJSON_Parse("{\"toolchains\": {\"go\": {\"available\": true}}, \"languages\": [\"go\"]}");
    cJSON *t = cJSON_Parse("{\"python\": {\"available\": true, \"version\": \"3.11.2\"},"
                           " \"node\": {\"available\": false, \"reason\": \"node not found\"}}");
    cJSON *langs;

    cr_assert(cordon__facts_set_toolchains(f, t));
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "toolchains"), "go"));
    langs = cJSON_GetObjectItem(f, "languages");
    cr_assert_eq(cJSON_GetArraySize(langs), 1);
    cr_assert_str_eq(cJSON_GetArrayItem(langs, 0)->valuestring, "python");
    cr_assert(cordon__facts_set_toolchains(f, NULL));
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "toolchains")), 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "languages")), 0);
    cJSON_Delete(f);
}

struct compose_bad_row {
    char observation[400]; /* "" passes NULL; "@" the good observation */
    char safety_class[16];
    char mechanism_facts[16]; /* "" passes NULL */
    char want[48];
};

static struct compose_bad_row compose_bad_rows[] = {
    { "", "isolated", "", "network is required with a claim" },
    { "[1]", "isolated", "", "observation_json is not a JSON object" },
    { "{\"isolation\": \"required\", \"network\": \"none\"}", "isolated", "", "observation.isolation" },
    { "{\"isolation\": {}, \"network\": \"none\"}", "isolated", "", "facts.isolation.process_contained" },
    { "{\"isolation\": {\"process_contained\": true, \"host_filesystem_restricted\": true,"
      " \"privilege_escalation_blocked\": true, \"syscalls_restricted\": true}}",
      "isolated", "", "observation.network" },
    { "@", "secure", "", "facts.safety_class" },
    { "@", "isolated", "[]", "mechanism_facts_json is not a JSON object" },
    { "{\"isolation\": {\"process_contained\": true, \"host_filesystem_restricted\": true,"
      " \"privilege_escalation_blocked\": true, \"syscalls_restricted\": true,"
      " \"checks\": [{\"axis\": \"syscalls_restricted\", \"check\": \"seccomp_filter\", \"ok\": false}]},"
      " \"network\": \"none\"}",
      "isolated", "", "claimed true" },
};

ParameterizedTestParameters(facts, compose_refuses)
{
    return cr_make_param_array(struct compose_bad_row, compose_bad_rows,
                               sizeof(compose_bad_rows) / sizeof(compose_bad_rows[0]));
}

ParameterizedTest(struct compose_bad_row *row, facts, compose_refuses)
{
    struct cordon_facts_parts parts;
    struct cordon_error err;
    char *json = (char *)"untouched";

    parts_init(&parts);
    parts.observation_json = strcmp(row->observation, "@") == 0 ? observation :
                             row->observation[0] != '\0' ? row->observation : NULL;
    parts.safety_class = row->safety_class;
    parts.mechanism_facts_json = row->mechanism_facts[0] != '\0' ? row->mechanism_facts : NULL;
    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_compose(&parts, &json, &err), CORDON_E_INVALID, "want \"%s\"", row->want);
    cr_assert(strstr(err.message, row->want) != NULL, "message \"%s\" lacks \"%s\"", err.message, row->want);
    cr_assert_str_eq(json, "untouched");
}

/* The host's allocator, counted: what compose_host hands back is its own. */
static int host_allocs;
static void *counting_alloc(size_t n)
{
    host_allocs++;
    return malloc(n);
}

Test(facts, compose_host_copies_into_the_hosts_memory)
{
    const struct cordon_host_v1 host = { .abi_version = CORDON_ABI_VERSION,
                                         .struct_size = sizeof(host), .alloc = counting_alloc,
                                         .free = free };
    struct cordon_facts_parts parts;
    struct cordon_error err;
    char *json = NULL, *plain = NULL;

    parts_init(&parts);
    parts.available = false;
    parts.reason = "not here";
    parts.observation_json = NULL;
    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_compose_host(&host, &parts, &json, &err), 0, "%s", err.message);
    cr_expect_eq(host_allocs, 1, "the result comes from host->alloc");
    cr_assert_eq(cordon_facts_compose(&parts, &plain, &err), 0);
    cr_expect_str_eq(json, plain, "the same text as cordon_facts_compose");
    free(json);
    free(plain);
    /* A refusal of compose's leaves *ret alone and allocates nothing. */
    json = NULL;
    parts.reason = NULL;
    cr_expect_eq(cordon_facts_compose_host(&host, &parts, &json, &err), CORDON_E_INVALID);
    cr_expect_null(json);
    cr_expect_eq(host_allocs, 1);
    cr_expect_eq(cordon_facts_compose_host(NULL, &parts, &json, &err), CORDON_E_INVALID);
}

/* isolation.checks is bounded: 256 entries pass, 257 are refused naming the limit. */
Test(facts, validate_bounds_the_checks)
{
    struct cordon_error err;

    for (int n = 256; n <= 257; n++) {
        cJSON *root = cJSON_Parse(good_facts), *iso, *checks = cJSON_CreateArray();
        char *doc;

        cr_assert_not_null(root);
        iso = cJSON_GetObjectItemCaseSensitive(root, "isolation");
        for (int i = 0; i < n; i++) {
            cJSON *c = cJSON_CreateObject();

            cJSON_AddStringToObject(c, "axis", "process_contained");
            cJSON_AddStringToObject(c, "check", "pid_namespace");
            cJSON_AddBoolToObject(c, "ok", true);
            cJSON_AddItemToArray(checks, c);
        }
        cJSON_DeleteItemFromObjectCaseSensitive(iso, "checks");
        cJSON_AddItemToObject(iso, "checks", checks);
        doc = cJSON_PrintUnformatted(root);
        cordon_error_init(&err);
        if (n == 256) {
            cr_expect_eq(cordon__facts_validate(doc, &err), 0, "%s", err.message);
        } else {
            cr_expect_eq(cordon__facts_validate(doc, &err), CORDON_E_LIMIT);
            cr_expect_str_eq(err.message,
                             "facts.isolation.checks: 257 entries, more than the limit of 256");
        }
        free(doc);
        cJSON_Delete(root);
    }
}

/* The availability probe's answer: available only for "ready", the detail
 * only when not ready, in the host's memory; a refusal writes nothing. */
Test(facts, availability_host_answers_in_the_hosts_memory)
{
    const struct cordon_host_v1 host = { .abi_version = CORDON_ABI_VERSION,
                                         .struct_size = sizeof(host), .alloc = counting_alloc,
                                         .free = free };
    struct cordon_error err;
    char *json = NULL;
    int before = host_allocs;

    cordon_error_init(&err);
    cr_assert_eq(cordon_facts_availability_host(&host, "p", "ready", "unused", &json, &err), 0, "%s",
                 err.message);
    cr_expect_str_eq(json, "{\"provider_id\":\"p\",\"available\":true,\"reason\":\"ready\"}");
    cr_expect_eq(host_allocs, before + 1, "the result comes from host->alloc");
    free(json);
    cr_assert_eq(cordon_facts_availability_host(&host, "p", "image_missing", "no such image", &json,
                                                &err), 0, "%s", err.message);
    cr_expect_str_eq(json, "{\"provider_id\":\"p\",\"available\":false,\"reason\":\"image_missing\","
                           "\"detail\":\"no such image\"}");
    free(json);
    json = NULL;
    cr_expect_eq(cordon_facts_availability_host(&host, "p", NULL, NULL, &json, &err), CORDON_E_INVALID);
    cr_expect(strstr(err.message, "reason") != NULL, "%s", err.message);
    cr_expect_eq(cordon_facts_availability_host(NULL, "p", "ready", NULL, &json, &err), CORDON_E_INVALID);
    cr_expect_null(json, "a refusal wrote its result");
}
