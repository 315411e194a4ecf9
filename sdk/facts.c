/* sdk: probe facts (json.md §3): composing, validating, versions. */
#include <ctype.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <cordon/sdk/bounds.h>
#include <cordon/sdk/facts.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>

#include "sdk/json-internal.h"
#include "sdk/facts-validate.h"

#define FACTS_MAX_BYTES CORDON_FACTS_MAX_BYTES
#define FACTS_MAX_LIST 64
/* The host's comparison makes a few dozen checks; a list far past that is
 * no observation, and every entry is kept in each probe record. */
#define FACTS_MAX_CHECKS 256
#define VERSION_MAX_LEN 64
#define FIRST_LINE_MAX 4096

static const char *const axes[] = {
    CORDON_AXIS_PROCESS_CONTAINED, CORDON_AXIS_HOST_FS_RESTRICTED,
    CORDON_AXIS_PRIVESC_BLOCKED, CORDON_AXIS_SYSCALLS_RESTRICTED,
};

/* Canonical toolchain id and the language it serves, in canonical order. */
static const struct {
    const char *toolchain;
    const char *language;
} toolchain_languages[] = {
    { "python", "python" }, { "node", "node" }, { "go", "go" }, { "c++", "cpp" },
};

static const char *const safety_classes[] = {
    "isolated", "namespace", "host_policy", "filesystem_only", "trusted_local",
};
static const char *const network_modes[] = { "none", "private", "host" };
static const char *const access_modes[] = { "snapshot", "read_only", "read_write" };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* The parts as first published, and with limits_enforcement_json. */
#define PARTS_V1_SIZE (offsetof(struct cordon_facts_parts, mechanism_facts_json) + sizeof(const char *))
#define PARTS_ENFORCEMENT_SIZE \
    (offsetof(struct cordon_facts_parts, limits_enforcement_json) + sizeof(const char *))
#define PARTS_CLAIM_SIZE (offsetof(struct cordon_facts_parts, network) + sizeof(const char *))

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; s != NULL && i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* ---- versions ------------------------------------------------------------ */

/*
 * Length of the dotted number starting at s (digits, single dots between
 * digit runs); 0 when s does not start with a digit. *ret_dots counts dots.
 */
static size_t dotted_len(const char *s, size_t avail, unsigned *ret_dots)
{
    size_t i = 0, end = 0;
    unsigned dots = 0, dots_at_end = 0;

    while (i < avail && isdigit((unsigned char)s[i])) {
        while (i < avail && isdigit((unsigned char)s[i]))
            i++;
        end = i;
        dots_at_end = dots;
        if (i + 1 < avail && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
            i++;
            dots++;
        } else {
            break;
        }
    }
    *ret_dots = dots_at_end;
    return end;
}

/* Where the dotted number with at least one dot is: first or last on the line. */
static bool find_dotted(const char *line, size_t len, bool last, size_t *ret_off, size_t *ret_len)
{
    bool found = false;

    for (size_t i = 0; i < len;) {
        unsigned dots;
        size_t n;

        /* Start only at the beginning of a run of digits. */
        if (!isdigit((unsigned char)line[i]) || (i > 0 && isdigit((unsigned char)line[i - 1]))) {
            i++;
            continue;
        }
        n = dotted_len(line + i, len - i, &dots);
        if (dots >= 1 && (i == 0 || line[i - 1] != '.')) {
            *ret_off = i;
            *ret_len = n;
            found = true;
            if (!last)
                return true;
        }
        i += n > 0 ? n : 1;
    }
    return found;
}

int cordon_version_normalize(const char *tool, const char *raw, char *ret, size_t ret_size,
                             struct cordon_error *err)
{
    /* The prefix each tool prints before its version; c++ has none that is
     * stable across vendors, so it takes the last dotted number. */
    static const struct {
        const char *tool;
        const char *prefix;
        bool last;
    } table[] = {
        { "python", "Python ", false },
        { "node", "v", false },
        { "go", "go version go", false },
        { "c++", NULL, true },
    };
    const char *line, *nl;
    size_t len, off = 0, vlen = 0;
    bool last = false, found = false;

    if (raw == NULL || ret == NULL || ret_size == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "version: raw output and ret are required");
    line = raw;
    while (*line == ' ' || *line == '\t' || *line == '\r' || *line == '\n')
        line++;
    nl = strchr(line, '\n');
    len = nl != NULL ? (size_t)(nl - line) : strlen(line);
    if (len > FIRST_LINE_MAX)
        len = FIRST_LINE_MAX;
    for (size_t i = 0; tool != NULL && i < COUNT(table); i++) {
        size_t plen;
        unsigned dots;

        if (strcmp(tool, table[i].tool) != 0)
            continue;
        last = table[i].last;
        if (table[i].prefix == NULL)
            break;
        plen = strlen(table[i].prefix);
        if (len > plen && strncmp(line, table[i].prefix, plen) == 0) {
            vlen = dotted_len(line + plen, len - plen, &dots);
            off = plen;
            found = vlen > 0;
        }
        break;
    }
    if (!found)
        found = find_dotted(line, len, last, &off, &vlen);
    if (!found)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "version: no version number in the %s output \"%.*s\"",
                                tool != NULL ? tool : "tool", (int)(len > 80 ? 80 : len), line);
    if (vlen > VERSION_MAX_LEN || vlen >= ret_size)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "version: \"%.*s\" is %zu bytes; the limit is %d and ret holds %zu",
                                (int)(vlen > 80 ? 80 : vlen), line + off, vlen, VERSION_MAX_LEN, ret_size - 1);
    memcpy(ret, line + off, vlen);
    ret[vlen] = '\0';
    return 0;
}

/* The next numeric component of *p: its significant digits; advances *p past
 * one dot, or to the end when anything else follows. */
static void next_component(const char **p, const char **ret_digits, size_t *ret_len)
{
    const char *s = *p;
    size_t n = 0;

    while (*s == '0' && isdigit((unsigned char)s[1]))
        s++;
    while (isdigit((unsigned char)s[n]))
        n++;
    *ret_digits = s;
    *ret_len = n;
    if (s[n] == '.' && isdigit((unsigned char)s[n + 1]))
        *p = s + n + 1;
    else
        *p = "";
    /* "0" has no significant digit; compare it as the empty number. */
    if (n == 1 && s[0] == '0')
        *ret_len = 0;
}

int cordon_version_compare(const char *a, const char *b)
{
    a = a != NULL && isdigit((unsigned char)*a) ? a : "";
    b = b != NULL && isdigit((unsigned char)*b) ? b : "";
    while (*a != '\0' || *b != '\0') {
        const char *da = "", *db = "";
        size_t la = 0, lb = 0;
        int c;

        if (*a != '\0')
            next_component(&a, &da, &la);
        if (*b != '\0')
            next_component(&b, &db, &lb);
        /* Arbitrarily long components compare by length, then digit by digit. */
        if (la != lb)
            return la < lb ? -1 : 1;
        c = memcmp(da, db, la);
        if (c != 0)
            return c < 0 ? -1 : 1;
    }
    return 0;
}

static bool version_well_formed(const char *v)
{
    unsigned dots;
    size_t n;

    if (v == NULL || !isdigit((unsigned char)v[0]))
        return false;
    n = dotted_len(v, strlen(v), &dots);
    return n == strlen(v) && n <= VERSION_MAX_LEN;
}

bool cordon__safety_class_valid(const char *safety_class)
{
    return in_list(safety_class, safety_classes, COUNT(safety_classes));
}

/* ---- validation ----------------------------------------------------------- */

static const char *type_name(const cJSON *item)
{
    if (item == NULL)
        return "missing";
    if (cJSON_IsString(item))
        return "string";
    if (cJSON_IsBool(item))
        return "boolean";
    if (cJSON_IsNumber(item))
        return "number";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsArray(item))
        return "array";
    return "object";
}

static bool id_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

static bool kind_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 64 || !islower((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

static int need_string(const cJSON *obj, const char *key, const char **ret, struct cordon_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsString(item) || item->valuestring[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.%s: must be a non-empty string (got %s)", key,
                                cJSON_IsString(item) ? "an empty string" : type_name(item));
    *ret = item->valuestring;
    return 0;
}

/* An array of strings, each accepted by ok() or found in allowed. */
static int check_string_list(const cJSON *obj, const char *key, bool need_one,
                             const char *const *allowed, size_t nallowed, bool (*ok)(const char *),
                             struct cordon_error *err)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    int n = 0;

    if (!cJSON_IsArray(list))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.%s: must be an array of strings (got %s)",
                                key, type_name(list));
    cJSON_ArrayForEach(item, list) {
        if (++n > FACTS_MAX_LIST)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "facts.%s: more than %d entries", key,
                                    FACTS_MAX_LIST);
        if (!cJSON_IsString(item))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.%s[%d]: must be a string (got %s)",
                                    key, n - 1, type_name(item));
        if (ok != NULL ? !ok(item->valuestring) : !in_list(item->valuestring, allowed, nallowed))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.%s[%d]: \"%.*s\" is not a known value", key, n - 1,
                                    cordon_text_fit(item->valuestring, 64), item->valuestring);
    }
    if (need_one && n == 0)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.%s: must not be empty", key);
    return 0;
}

/* The words a provider may use for how it enforces a limit. */
static const char *const enforcement_words[] = { "cgroup", "tmpfs_size", "rlimit", "sandbox_init", "host", "none" };

/* Optional: {"memory_bytes": "cgroup", ...}, keys among the six limits,
 * values among enforcement_words. */
static int check_limits_enforcement(const cJSON *facts, struct cordon_error *err)
{
    const cJSON *how = cJSON_GetObjectItemCaseSensitive(facts, "limits_enforcement"), *item;

    if (how == NULL)
        return 0;
    if (!cJSON_IsObject(how))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.limits_enforcement: must be an object (got %s)",
                                type_name(how));
    cJSON_ArrayForEach(item, how) {
        if (!in_list(item->string, cordon_limit_keys, CORDON_LIMIT_KEYS_COUNT))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.limits_enforcement: \"%.*s\" is not a limit (cpus, memory_bytes, "
                                    "disk_bytes, pids, runtime_ms, max_output_bytes)",
                                    cordon_text_fit(item->string, 64), item->string);
        if (!cJSON_IsString(item) || !in_list(item->valuestring, enforcement_words, COUNT(enforcement_words)))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.limits_enforcement.%s: must be one of cgroup, tmpfs_size, rlimit, "
                                    "sandbox_init, host, none", item->string);
    }
    return 0;
}

static int check_checks(const cJSON *iso, struct cordon_error *err)
{
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(iso, "checks");
    const cJSON *c;
    int n = 0;

    if (checks == NULL)
        return 0;
    if (!cJSON_IsArray(checks))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.isolation.checks: must be an array (got %s)",
                                type_name(checks));
    if (cJSON_GetArraySize(checks) > FACTS_MAX_CHECKS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "facts.isolation.checks: %d entries, more than the limit of %d",
                                cJSON_GetArraySize(checks), FACTS_MAX_CHECKS);
    cJSON_ArrayForEach(c, checks) {
        const cJSON *axis = cJSON_GetObjectItemCaseSensitive(c, "axis");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "check");
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(c, "ok");
        const cJSON *detail = cJSON_GetObjectItemCaseSensitive(c, "detail");
        const cJSON *claimed;

        if (!cJSON_IsObject(c) || !cJSON_IsString(axis) || !in_list(axis->valuestring, axes, COUNT(axes)) ||
            !cJSON_IsString(name) || !cJSON_IsBool(ok) || (detail != NULL && !cJSON_IsString(detail)))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.isolation.checks[%d]: must be {\"axis\": one of the four axes, "
                                    "\"check\": string, \"ok\": boolean, \"detail\": string}", n);
        /* An axis claimed true with a failed check behind it is a false claim. */
        claimed = cJSON_GetObjectItemCaseSensitive(iso, axis->valuestring);
        if (cJSON_IsTrue(claimed) && cJSON_IsFalse(ok))
            return cordon_error_set(
                err, CORDON_E_INVALID, 0,
                "facts.isolation.%s: claimed true, but its check \"%.*s\" failed",
                axis->valuestring, cordon_text_fit(name->valuestring, 64), name->valuestring);
        n++;
    }
    return 0;
}

static int check_isolation(const cJSON *facts, struct cordon_error *err)
{
    const cJSON *iso = cJSON_GetObjectItemCaseSensitive(facts, "isolation");
    const cJSON *item;

    if (cJSON_IsString(iso))
        return cordon_error_set(
            err, CORDON_E_INVALID, 0,
            "facts.isolation: a string label (\"%.*s\") is not accepted; it must be an "
            "object of four observed booleans",
            cordon_text_fit(iso->valuestring, 32), iso->valuestring);
    if (!cJSON_IsObject(iso))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts.isolation: must be an object of four observed booleans (got %s)",
                                type_name(iso));
    for (size_t i = 0; i < COUNT(axes); i++) {
        item = cJSON_GetObjectItemCaseSensitive(iso, axes[i]);
        if (!cJSON_IsBool(item))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.isolation.%s: must be an observed boolean (got %s)", axes[i],
                                    type_name(item));
    }
    item = cJSON_GetObjectItemCaseSensitive(iso, "mechanism");
    if (item != NULL && !cJSON_IsString(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.isolation.mechanism: must be a string (got %s)",
                                type_name(item));
    item = cJSON_GetObjectItemCaseSensitive(iso, "rootfs_read_only");
    if (item != NULL && !cJSON_IsBool(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts.isolation.rootfs_read_only: must be a boolean (got %s)", type_name(item));
    item = cJSON_GetObjectItemCaseSensitive(iso, "network_mode");
    if (item != NULL && !(cJSON_IsString(item) && in_list(item->valuestring, network_modes, COUNT(network_modes))))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts.isolation.network_mode: must be \"none\", \"private\" or \"host\"");
    item = cJSON_GetObjectItemCaseSensitive(iso, "deferred");
    if (item != NULL) {
        const cJSON *d;
        bool ok = cJSON_IsArray(item) && cJSON_GetArraySize(item) <= (int)COUNT(axes);

        cJSON_ArrayForEach(d, (ok ? item : NULL))
            ok = ok && cJSON_IsString(d) && in_list(d->valuestring, axes, COUNT(axes)) &&
                 cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(iso, d->valuestring));
        if (!ok)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.isolation.deferred: must list axes, each claimed false");
    }
    return check_checks(iso, err);
}

static bool toolchain_available(const cJSON *toolchains, const char *id)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(toolchains, id);

    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "available"));
}

static int check_toolchains(const cJSON *facts, struct cordon_error *err)
{
    const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(facts, "toolchains");
    const cJSON *langs = cJSON_GetObjectItemCaseSensitive(facts, "languages");
    const cJSON *t;

    if (!cJSON_IsObject(tcs))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.toolchains: must be an object (got %s)",
                                type_name(tcs));
    cJSON_ArrayForEach(t, tcs) {
        const cJSON *avail = cJSON_GetObjectItemCaseSensitive(t, "available");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(t, "version");
        const cJSON *raw = cJSON_GetObjectItemCaseSensitive(t, "raw_version");
        bool known = false;

        for (size_t i = 0; i < COUNT(toolchain_languages); i++)
            known = known || strcmp(t->string, toolchain_languages[i].toolchain) == 0;
        if (!known)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.toolchains: \"%.*s\" is not a canonical toolchain id "
                                    "(python, node, go, c++)",
                                    cordon_text_fit(t->string, 64), t->string);
        if (!cJSON_IsObject(t) || !cJSON_IsBool(avail))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.toolchains.%s: must be an object with a boolean \"available\"",
                                    t->string);
        if (cJSON_IsTrue(avail) && !(cJSON_IsString(version) && version_well_formed(version->valuestring)))
            return cordon_error_set(
                err, CORDON_E_INVALID, 0,
                "facts.toolchains.%s.version: \"%.*s\" is not a normalised version "
                "(^[0-9]+(\\.[0-9]+)*$)",
                t->string,
                cordon_text_fit(cJSON_IsString(version) ? version->valuestring : type_name(version),
                                64),
                cJSON_IsString(version) ? version->valuestring : type_name(version));
        if (cJSON_IsTrue(avail) && !cJSON_IsString(raw))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.toolchains.%s.raw_version: must be the tool's own output (got %s)",
                                    t->string, type_name(raw));
        if (!cJSON_IsTrue(avail) && version != NULL && !cJSON_IsNull(version) &&
            !(cJSON_IsString(version) && version_well_formed(version->valuestring)))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "facts.toolchains.%s.version: must be null or a normalised version",
                                    t->string);
    }
    /* Every language claimed must rest on an observed toolchain. */
    cJSON_ArrayForEach(t, langs) {
        for (size_t i = 0; i < COUNT(toolchain_languages); i++) {
            if (strcmp(t->valuestring, toolchain_languages[i].language) != 0)
                continue;
            if (!toolchain_available(tcs, toolchain_languages[i].toolchain))
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "facts.languages: \"%s\" is listed but toolchains.%s is not available",
                                        t->valuestring, toolchain_languages[i].toolchain);
        }
    }
    return 0;
}

static bool language_known(const char *s)
{
    for (size_t i = 0; i < COUNT(toolchain_languages); i++)
        if (strcmp(s, toolchain_languages[i].language) == 0)
            return true;
    return false;
}

static int validate_tree(const cJSON *facts, struct cordon_error *err)
{
    const cJSON *available = cJSON_GetObjectItemCaseSensitive(facts, "available");
    const cJSON *item;
    const char *s;
    int rc;

    if (!cJSON_IsObject(facts))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts: must be a JSON object (got %s)",
                                type_name(facts));
    if ((rc = need_string(facts, "provider_id", &s, err)) < 0)
        return rc;
    if (!id_valid(s))
        return cordon_error_set(
            err, CORDON_E_INVALID, 0,
            "facts.provider_id: \"%.*s\" does not match [a-z0-9][a-z0-9-]{0,63}",
            cordon_text_fit(s, 64), s);
    if (!cJSON_IsBool(available))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.available: must be a boolean (got %s)",
                                type_name(available));
    if ((rc = need_string(facts, "reason", &s, err)) < 0)
        return rc;
    item = cJSON_GetObjectItemCaseSensitive(facts, "observed_by");
    if (cJSON_IsFalse(available)) {
        /* Unavailable facts say only why; what is there must still be well-typed. */
        if (item != NULL && !cJSON_IsString(item))
            return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.observed_by: must be a string (got %s)",
                                    type_name(item));
        if (cJSON_GetObjectItemCaseSensitive(facts, "supported_kinds") != NULL)
            return check_string_list(facts, "supported_kinds", false, NULL, 0, kind_valid, err);
        return 0;
    }
    if ((rc = check_string_list(facts, "supported_kinds", true, NULL, 0, kind_valid, err)) < 0)
        return rc;
    /* "none": a provider's claim, before the host's observation judges it. */
    if (!cJSON_IsString(item) ||
        (strcmp(item->valuestring, "cordon-observe") != 0 && strcmp(item->valuestring, "synthetic") != 0 &&
         strcmp(item->valuestring, "none") != 0))
        return cordon_error_set(
            err, CORDON_E_INVALID, 0,
            "facts.observed_by: must be \"cordon-observe\", \"none\" or \"synthetic\" (got %s%.*s%s)",
            cJSON_IsString(item) ? "\"" : "",
            cordon_text_fit(cJSON_IsString(item) ? item->valuestring : type_name(item), 32),
            cJSON_IsString(item) ? item->valuestring : type_name(item),
            cJSON_IsString(item) ? "\"" : "");
    if ((rc = need_string(facts, "safety_class", &s, err)) < 0)
        return rc;
    if (!cordon__safety_class_valid(s))
        return cordon_error_set(
            err, CORDON_E_INVALID, 0,
            "facts.safety_class: \"%.*s\" is not one of isolated, namespace, host_policy, "
            "filesystem_only, trusted_local",
            cordon_text_fit(s, 64), s);
    if ((rc = check_isolation(facts, err)) < 0)
        return rc;
    item = cJSON_GetObjectItemCaseSensitive(facts, "network");
    if (!(cJSON_IsString(item) && in_list(item->valuestring, network_modes, COUNT(network_modes))))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts.network: must be \"none\", \"private\" or \"host\"");
    if ((rc = check_string_list(facts, "workspace_access_modes", false, access_modes, COUNT(access_modes),
                                NULL, err)) < 0)
        return rc;
    if ((rc = check_string_list(facts, "languages", false, NULL, 0, language_known, err)) < 0)
        return rc;
    if ((rc = check_toolchains(facts, err)) < 0)
        return rc;
    if ((rc = check_string_list(facts, "limits_enforced", false, cordon_limit_keys, CORDON_LIMIT_KEYS_COUNT, NULL,
                                err)) < 0)
        return rc;
    if ((rc = check_limits_enforcement(facts, err)) < 0)
        return rc;
    item = cJSON_GetObjectItemCaseSensitive(facts, "mechanism_facts");
    if (!cJSON_IsObject(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts.mechanism_facts: must be an object (got %s)",
                                type_name(item));
    return 0;
}

int cordon__facts_parse_valid(const char *facts_json, cJSON **ret_facts, struct cordon_error *err)
{
    cJSON *facts = NULL;
    int rc;

    if (ret_facts != NULL)
        *ret_facts = NULL;
    if (facts_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts: no document");
    /* A provider's claim: the one bounded parse (size and depth). */
    rc = cordon__json_parse("facts", facts_json, FACTS_MAX_BYTES, &facts, err);
    if (rc < 0)
        return rc;
    rc = validate_tree(facts, err);
    if (rc == 0 && ret_facts != NULL)
        *ret_facts = facts;
    else
        cJSON_Delete(facts);
    return rc;
}

int cordon__facts_validate(const char *facts_json, struct cordon_error *err)
{
    return cordon__facts_parse_valid(facts_json, NULL, err);
}

/* ---- composition ---------------------------------------------------------- */

static cJSON *string_array(const char *const *list)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr != NULL && list != NULL && list[i] != NULL && i < FACTS_MAX_LIST; i++) {
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(list[i]))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

/* Move key out of src into dst (dst takes ownership); absent keys stay absent. */
static void move_item(cJSON *src, cJSON *dst, const char *key)
{
    cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(src, key);

    if (item != NULL)
        cJSON_AddItemToObject(dst, key, item);
}

static int compose_isolation(const struct cordon_facts_parts *parts, cJSON *obs, cJSON *facts,
                             const char **ret_network, struct cordon_error *err)
{
    cJSON *src = cJSON_GetObjectItemCaseSensitive(obs, "isolation");
    cJSON *net = cJSON_GetObjectItemCaseSensitive(obs, "network");
    cJSON *iso;

    if (!cJSON_IsObject(src))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts compose: observation.isolation must be an object (got %s)",
                                type_name(src));
    if (!cJSON_IsString(net))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts compose: observation.network must be a string (got %s)", type_name(net));
    iso = cJSON_AddObjectToObject(facts, "isolation");
    if (iso == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
    for (size_t i = 0; i < COUNT(axes); i++)
        move_item(src, iso, axes[i]);
    if (!cJSON_AddStringToObject(iso, "mechanism", parts->mechanism != NULL ? parts->mechanism : "unknown") ||
        !cJSON_AddBoolToObject(iso, "rootfs_read_only", parts->rootfs_read_only) ||
        !cJSON_AddStringToObject(iso, "network_mode", net->valuestring))
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
    move_item(src, iso, "mechanism_kind");
    move_item(src, iso, "checks");
    move_item(src, iso, "deferred");
    *ret_network = net->valuestring;
    return 0;
}

/* A claim in an observation's shape: the axes promised, the network
 * promised, no checks and no toolchains ("observed_by": "none"). */
static cJSON *claim_as_observation(const struct cordon_facts_parts *parts)
{
    cJSON *obs = cJSON_CreateObject(), *iso = cJSON_AddObjectToObject(obs, "isolation");
    cJSON *deferred = cJSON_CreateArray();
    bool ok = iso != NULL && cJSON_AddStringToObject(obs, "observed_by", "none") &&
              cJSON_AddArrayToObject(iso, "checks") != NULL &&
              cJSON_AddStringToObject(obs, "network", parts->network);

    /* A deferred axis is not claimed: false here, the host's finding later. */
    for (size_t i = 0; ok && i < COUNT(axes); i++) {
        bool claimed = (parts->claims & (1u << i)) != 0, defer = !claimed && (parts->deferred & (1u << i)) != 0;

        ok = cJSON_AddBoolToObject(iso, axes[i], claimed) != NULL &&
             (!defer || cJSON_AddItemToArray(deferred, cJSON_CreateString(axes[i])));
    }
    if (ok && cJSON_GetArraySize(deferred) > 0) {
        ok = cJSON_AddItemToObject(iso, "deferred", deferred);
        deferred = NULL;
    }
    cJSON_Delete(deferred);
    if (!ok) {
        cJSON_Delete(obs);
        return NULL;
    }
    return obs;
}

bool cordon__facts_set_toolchains(cJSON *facts, cJSON *toolchains)
{
    cJSON *langs = cJSON_CreateArray();

    if (toolchains == NULL)
        toolchains = cJSON_CreateObject();
    for (size_t i = 0; langs != NULL && i < COUNT(toolchain_languages); i++)
        if (toolchain_available(toolchains, toolchain_languages[i].toolchain))
            cJSON_AddItemToArray(langs, cJSON_CreateString(toolchain_languages[i].language));
    if (toolchains == NULL || langs == NULL) {
        cJSON_Delete(toolchains);
        cJSON_Delete(langs);
        return false;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(facts, "toolchains");
    cJSON_DeleteItemFromObjectCaseSensitive(facts, "languages");
    return cJSON_AddItemToObject(facts, "toolchains", toolchains) && cJSON_AddItemToObject(facts, "languages", langs);
}

static int compose_available(const struct cordon_facts_parts *parts, cJSON *facts, struct cordon_error *err)
{
    cJSON *obs = NULL, *mech = NULL, *by;
    const char *network = NULL;
    int rc;

    if (parts->observation_json != NULL)
        obs = cJSON_Parse(parts->observation_json);
    else if (parts->struct_size >= PARTS_CLAIM_SIZE && parts->network == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts compose: network is required with a claim (\"none\", \"private\" or "
                                "\"host\")");
    else if (parts->struct_size >= PARTS_CLAIM_SIZE)
        obs = claim_as_observation(parts);
    else
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts compose: a claim (claims, network) or observation_json is required "
                                "when available");
    if (!cJSON_IsObject(obs)) {
        rc = cordon_error_set(err, CORDON_E_INVALID, 0, "facts compose: observation_json is not a JSON object");
        goto out;
    }
    if (parts->mechanism_facts_json != NULL) {
        mech = cJSON_Parse(parts->mechanism_facts_json);
        if (!cJSON_IsObject(mech)) {
            rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                                  "facts compose: mechanism_facts_json is not a JSON object");
            goto out;
        }
    } else {
        mech = cJSON_CreateObject();
    }
    by = cJSON_GetObjectItemCaseSensitive(obs, "observed_by");
    if (!cJSON_AddStringToObject(facts, "observed_by", cJSON_IsString(by) ? by->valuestring : "cordon-observe") ||
        !cJSON_AddStringToObject(facts, "safety_class", parts->safety_class != NULL ? parts->safety_class : "")) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
        goto out;
    }
    if ((rc = compose_isolation(parts, obs, facts, &network, err)) < 0)
        goto out;
    if (!cJSON_AddStringToObject(facts, "network", network) ||
        !cJSON_AddItemToObject(facts, "workspace_access_modes", string_array(parts->workspace_access_modes))) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
        goto out;
    }
    /* The observation's toolchains move over as they are; languages follow them. */
    if (!cordon__facts_set_toolchains(facts, cJSON_DetachItemFromObjectCaseSensitive(obs, "toolchains")) ||
        !cJSON_AddItemToObject(facts, "limits_enforced", string_array(parts->limits_enforced)) ||
        !cJSON_AddItemToObject(facts, "mechanism_facts", mech)) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
        goto out;
    }
    mech = NULL;
    if (parts->struct_size >= PARTS_ENFORCEMENT_SIZE && parts->limits_enforcement_json != NULL) {
        cJSON *how = cJSON_Parse(parts->limits_enforcement_json);

        if (!cJSON_IsObject(how)) {
            cJSON_Delete(how);
            rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                                  "facts compose: limits_enforcement_json must be a JSON object");
            goto out;
        }
        cJSON_AddItemToObject(facts, "limits_enforcement", how);
    }
    rc = 0;
out:
    cJSON_Delete(mech);
    cJSON_Delete(obs);
    return rc;
}

int cordon_facts_compose(const struct cordon_facts_parts *parts, char **ret_json, struct cordon_error *err)
{
    cJSON *facts = NULL;
    char *text = NULL;
    int rc;

    if (parts == NULL || ret_json == NULL || parts->struct_size < PARTS_V1_SIZE ||
        parts->struct_size > sizeof(*parts))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "facts compose: parts (struct_size %u, want %zu to %zu) and ret_json are required",
                                parts != NULL ? parts->struct_size : 0, (size_t)PARTS_V1_SIZE, sizeof(*parts));
    if (parts->provider_id == NULL || parts->reason == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts compose: provider_id and reason are required");
    facts = cJSON_CreateObject();
    if (facts == NULL || !cJSON_AddStringToObject(facts, "provider_id", parts->provider_id) ||
        !cJSON_AddBoolToObject(facts, "available", parts->available) ||
        !cJSON_AddStringToObject(facts, "reason", parts->reason) ||
        !cJSON_AddItemToObject(facts, "supported_kinds", string_array(parts->supported_kinds))) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
        goto out;
    }
    if (!parts->available) {
        if (!cJSON_AddStringToObject(facts, "observed_by", "none")) {
            rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
            goto out;
        }
    } else if ((rc = compose_available(parts, facts, err)) < 0) {
        goto out;
    }
    /* What we hand out must pass the same schema every reader applies. */
    if ((rc = validate_tree(facts, err)) < 0)
        goto out;
    text = cJSON_PrintUnformatted(facts);
    if (text == NULL) {
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
        goto out;
    }
    *ret_json = text;
    rc = 0;
out:
    cJSON_Delete(facts);
    return rc;
}

int cordon_facts_compose_host(const struct cordon_host_v1 *host,
                              const struct cordon_facts_parts *parts, char **ret_json,
                              struct cordon_error *err)
{
    char *text = NULL, *copy;
    int rc;

    if (host == NULL || ret_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "facts compose: host and ret_json are required");
    if ((rc = cordon_facts_compose(parts, &text, err)) < 0)
        return rc;
    copy = cordon_host_strdup(host, text);
    free(text);
    if (copy == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, 0, "facts compose: out of memory");
    *ret_json = copy;
    return 0;
}

int cordon_facts_availability_host(const struct cordon_host_v1 *host, const char *provider_id,
                                   const char *reason, const char *detail, char **ret_json,
                                   struct cordon_error *err)
{
    bool ready = reason != NULL && strcmp(reason, "ready") == 0;
    cJSON *doc = cJSON_CreateObject();
    int rc;

    if (host == NULL || provider_id == NULL || reason == NULL || ret_json == NULL)
        rc = cordon_error_set(err, CORDON_E_INVALID, 0,
                              "facts availability: host, provider_id, reason and ret_json are required");
    else if (!cJSON_AddStringToObject(doc, "provider_id", provider_id) ||
             !cJSON_AddBoolToObject(doc, "available", ready) ||
             !cJSON_AddStringToObject(doc, "reason", reason) ||
             (!ready && detail != NULL && !cJSON_AddStringToObject(doc, "detail", detail)))
        rc = cordon_error_set(err, CORDON_E_NOMEM, 0, "facts availability: out of memory");
    else
        rc = cordon_json_print_host(host, doc, ret_json, err);
    cJSON_Delete(doc);
    return rc;
}
