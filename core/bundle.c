/* core: bundles from a request or a host path, their digest and manifest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "core/bundle.h"
#include "core/canonical.h"
#include "core/limits.h"

/* Directory levels below a bundle directory; each level holds one fd. */
#define BUNDLE_MAX_DIR_DEPTH 64
/* A toolchain floor such as "3.10": short, dotted digits. */
#define MIN_VERSION_MAX 32

/* A language, its aliases and its conventional entrypoints. */
struct language {
    const char *name;
    const char *aliases[4];
    const char *entrypoints[3];   /* candidates at the top, in order */
};

static const struct language languages[] = {
    { "python", { "py", "python3" }, { "main.py" } },
    { "node", { "nodejs", "js", "javascript" }, { "main.js", "index.js" } },
    { "go", { "golang" }, { "main.go" } },
    { "cpp", { "c++", "cplusplus" }, { "main.cpp", "main.cc" } },
};
#define N_LANGUAGES (sizeof(languages) / sizeof(languages[0]))

/* Case matters: ".C" is C++ to some and C to others, so it is not guessed. */
static const struct {
    const char *ext;
    const char *language;
} extensions[] = {
    { ".py", "python" },
    { ".js", "node" }, { ".mjs", "node" }, { ".cjs", "node" },
    { ".go", "go" },
    { ".cpp", "cpp" }, { ".cc", "cpp" }, { ".cxx", "cpp" }, { ".c++", "cpp" },
};

/* Top-level keys of a run request that a bundle accepts and ignores. */
static const char *const request_keys_ignored[] = {
    "provider", "providers", "isolation", "limits", "timeout_ms", "inputs", "workspace",
    "allow_unsafe_local", "image", "contract", "environment",
};
static const char *const request_keys_bundle[] = {
    "language", "entrypoint", "args", "files", "outputs", "toolchain",
};

const char *cordon__language_canonical(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < N_LANGUAGES; i++) {
        if (strcasecmp(name, languages[i].name) == 0)
            return languages[i].name;
        for (size_t j = 0; j < 4 && languages[i].aliases[j] != NULL; j++)
            if (strcasecmp(name, languages[i].aliases[j]) == 0)
                return languages[i].name;
    }
    return NULL;
}

static const struct language *language_find(const char *canonical)
{
    for (size_t i = 0; i < N_LANGUAGES; i++)
        if (strcmp(canonical, languages[i].name) == 0)
            return &languages[i];
    return NULL;
}

/* Language named by the extension of path, or NULL. */
static const char *language_from_extension(const char *path)
{
    const char *base = strrchr(path, '/');
    const char *dot;

    base = base != NULL ? base + 1 : path;
    dot = strrchr(base, '.');
    if (dot == NULL || dot == base)
        return NULL;
    for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++)
        if (strcmp(dot, extensions[i].ext) == 0)
            return extensions[i].language;
    return NULL;
}

void cordon__bundle_free(struct cordon__bundle *b)
{
    if (b == NULL)
        return;
    free(b->language);
    free(b->entrypoint);
    for (size_t i = 0; i < b->n_args; i++)
        free(b->args[i]);
    free(b->args);
    for (size_t i = 0; i < b->n_files; i++) {
        free(b->files[i].path);
        free(b->files[i].data);
    }
    free(b->files);
    for (size_t i = 0; i < b->n_outputs; i++)
        free(b->outputs[i]);
    free(b->outputs);
    free(b->min_version);
    free(b);
}

/* Out of memory while handling what. */
static int nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* Store the canonical name of a language given by name or alias. */
static int set_language(struct cordon__bundle *b, const char *field, const char *name,
                        struct cordon_error *err)
{
    const char *canonical = cordon__language_canonical(name);

    if (canonical == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%.*s\" is not supported (python, node, go, cpp or an alias)",
                                field, cordon_text_fit(name, 64), name);
    if ((b->language = strdup(canonical)) == NULL)
        return nomem(err, field);
    return 0;
}

/* Copy argv entries after checking their count and total size against
 * what execve and the sandbox will take. */
static int take_args(struct cordon__bundle *b, const char *const *args, size_t n,
                     struct cordon_error *err)
{
    uint64_t total = 0;

    if (n > CORDON_ARGV_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "args: %zu entries exceeds the limit of %d",
                                n, CORDON_ARGV_MAX);
    /* Each entry costs its bytes and the NUL that execve needs. */
    for (size_t i = 0; i < n; i++)
        total += strlen(args[i]) + 1;
    if (total > CORDON_HOST_ARGS_BYTES_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "args: %" PRIu64 " bytes in total exceeds the limit of %u",
                                total, CORDON_HOST_ARGS_BYTES_MAX);
    if (n > 0 && (b->args = calloc(n, sizeof(*b->args))) == NULL)
        return nomem(err, "args");
    for (size_t i = 0; i < n; i++) {
        if ((b->args[i] = strdup(args[i])) == NULL)
            return nomem(err, "args");
        b->n_args++;
    }
    return 0;
}

/* True when a component of path is "..". */
static bool has_dotdot(const char *path)
{
    for (const char *p = path; *p != '\0';) {
        const char *slash = strchr(p, '/');
        size_t len = slash != NULL ? (size_t)(slash - p) : strlen(p);

        if (len == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += len;
        if (*p == '/')
            p++;
    }
    return false;
}

/* A declared output: relative to output/, which may be spelled out. */
static int normalize_output(const char *field, const char *path, char **ret,
                            struct cordon_error *err)
{
    char *norm = NULL;
    int r;

    /* Checked here, before normalising, so the message says what the rule is for. */
    if (path[0] == '/' || has_dotdot(path))
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "%s: \"%.*s\" must stay inside output/ (absolute paths and .. "
                                "are refused)",
                                field, cordon_text_fit(path, 200), path);
    r = cordon_path_normalize(field, path, &norm, err);
    if (r < 0)
        return r;
    if (strcmp(norm, "output") == 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "%s: \"%.*s\" names the output directory itself, not a file", field,
                             cordon_text_fit(path, 200), path);
        goto out;
    }
    if (strncmp(norm, "output/", 7) == 0)
        memmove(norm, norm + 7, strlen(norm + 7) + 1);
    *ret = norm;
    norm = NULL;
out:
    free(norm);
    return r;
}

static int string_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Normalise, sort and de-duplicate the declared outputs. */
static int take_outputs(struct cordon__bundle *b, const char *const *outputs, size_t n,
                        struct cordon_error *err)
{
    char field[32];
    int r;

    if (n > CORDON_BUNDLE_MAX_OUTPUTS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "outputs: %zu entries exceeds the limit of %d",
                                n, CORDON_BUNDLE_MAX_OUTPUTS);
    if (n > 0 && (b->outputs = calloc(n, sizeof(*b->outputs))) == NULL)
        return nomem(err, "outputs");
    for (size_t i = 0; i < n; i++) {
        snprintf(field, sizeof(field), "outputs[%zu]", i);
        if ((r = normalize_output(field, outputs[i], &b->outputs[i], err)) < 0)
            return r;
        b->n_outputs++;
    }
    if (b->n_outputs > 1)
        qsort(b->outputs, b->n_outputs, sizeof(*b->outputs), string_order);
    return cordon_path_check_set("outputs", (const char *const *)b->outputs, b->n_outputs, err);
}

/* Accept a dotted version: digits, single dots between them, short. */
static int take_min_version(struct cordon__bundle *b, const char *v, struct cordon_error *err)
{
    size_t len = strnlen(v, MIN_VERSION_MAX + 1);
    bool digit = false;

    for (size_t i = 0; i < len; i++) {
        if (v[i] >= '0' && v[i] <= '9')
            digit = true;
        else if (v[i] == '.' && digit && v[i + 1] != '\0')
            digit = false;
        else
            len = 0;
    }
    if (len == 0 || len > MIN_VERSION_MAX || !digit)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "toolchain.min_version: \"%.*s\" is not a dotted version such as "
                                "\"3.10\" (at most %d characters)",
                                cordon_text_fit(v, 40), v, MIN_VERSION_MAX);
    if ((b->min_version = strdup(v)) == NULL)
        return nomem(err, "toolchain.min_version");
    return 0;
}

/* Room for one more file, checked before its bytes are read. */
static int check_file_room(const struct cordon__bundle *b, const char *path, uint64_t len,
                           struct cordon_error *err)
{
    if (b->n_files >= CORDON_BUNDLE_MAX_FILES)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "files: more than %d files exceeds the limit of %d",
                                CORDON_BUNDLE_MAX_FILES, CORDON_BUNDLE_MAX_FILES);
    if (len > CORDON_BUNDLE_MAX_FILE_BYTES)
        return cordon_error_set(
            err, CORDON_E_LIMIT, 0,
            "files[%zu] (%.*s): %" PRIu64 " bytes exceeds the per-file limit of %llu", b->n_files,
            cordon_text_fit(path, 200), path, len, CORDON_BUNDLE_MAX_FILE_BYTES);
    if (b->total_bytes + len > CORDON_BUNDLE_MAX_BYTES)
        return cordon_error_set(
            err, CORDON_E_LIMIT, 0,
            "files: %" PRIu64 " bytes in total (at %.*s) exceeds the limit of %llu",
            b->total_bytes + len, cordon_text_fit(path, 200), path, CORDON_BUNDLE_MAX_BYTES);
    return 0;
}

/* Append a file; path and data move into the bundle (also on failure). */
static int add_file(struct cordon__bundle *b, char *path, unsigned char *data, size_t len,
                    bool executable, struct cordon_error *err)
{
    struct cordon__bundle_file *f;
    int r;

    if ((r = check_file_room(b, path, len, err)) < 0)
        goto fail;
    /* One allocation at the bound: check_file_room keeps n_files below it. */
    if (b->files == NULL && (b->files = calloc(CORDON_BUNDLE_MAX_FILES, sizeof(*b->files))) == NULL) {
        r = nomem(err, "files");
        goto fail;
    }
    f = &b->files[b->n_files++];
    f->path = path;
    f->data = data;
    f->len = len;
    f->executable = executable;
    cordon_sha256_hex(data, len, f->sha256);
    b->total_bytes += len;
    return 0;
fail:
    free(path);
    free(data);
    return r;
}

/* The 6-bit value of a standard base64 character, or -1. */
static int base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decoded length of standard base64 ("=" padding optional, no whitespace),
 * so that the limit is checked before anything is allocated. */
static int base64_length(const char *field, const char *in, size_t *ret_chars, size_t *ret_len,
                         struct cordon_error *err)
{
    size_t len = strlen(in), pad = 0;

    while (pad < 2 && len > 0 && in[len - 1] == '=')
        len--, pad++;
    if ((pad > 0 && (len + pad) % 4 != 0) || len % 4 == 1)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: invalid base64 (%zu characters is not a whole number of "
                                "groups)", field, len + pad);
    *ret_chars = len;
    *ret_len = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    return 0;
}

/* Decode the first chars characters of in into out (ret length bytes). */
static int base64_decode(const char *field, const char *in, size_t chars, unsigned char *out,
                         struct cordon_error *err)
{
    uint32_t acc = 0;
    size_t o = 0;

    for (size_t i = 0; i < chars; i++) {
        int v = base64_value((unsigned char)in[i]);

        if (v < 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: invalid base64 (character 0x%02x at offset %zu)", field,
                                    (unsigned char)in[i], i);
        acc = (acc << 6) | (uint32_t)v;
        if (i % 4 == 3) {
            out[o++] = (unsigned char)(acc >> 16);
            out[o++] = (unsigned char)(acc >> 8);
            out[o++] = (unsigned char)acc;
            acc = 0;
        }
    }
    /* A final partial group carries one or two bytes. */
    if (chars % 4 == 2) {
        out[o++] = (unsigned char)(acc >> 4);
    } else if (chars % 4 == 3) {
        out[o++] = (unsigned char)(acc >> 10);
        out[o++] = (unsigned char)(acc >> 2);
    }
    return 0;
}

/* The file with exactly this normalised path, or NULL. */
static const struct cordon__bundle_file *find_file(const struct cordon__bundle *b, const char *path)
{
    for (size_t i = 0; i < b->n_files; i++)
        if (strcmp(b->files[i].path, path) == 0)
            return &b->files[i];
    return NULL;
}

/* The language's first conventional entrypoint present at the top, or NULL. */
static const char *conventional_entrypoint(const struct cordon__bundle *b, const struct language *l)
{
    for (size_t j = 0; j < 3 && l->entrypoints[j] != NULL; j++)
        if (find_file(b, l->entrypoints[j]) != NULL)
            return l->entrypoints[j];
    return NULL;
}

/* Fill in whichever of language and entrypoint the caller left out. */
static int resolve_entrypoint(struct cordon__bundle *b, const char *where, struct cordon_error *err)
{
    const char *entry = NULL, *lang = NULL;

    if (b->entrypoint == NULL && b->language != NULL) {
        const struct language *l = language_find(b->language);

        entry = conventional_entrypoint(b, l);
        if (entry == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "entrypoint: none given and %s has no %s%s%s at its top",
                                    where, l->entrypoints[0], l->entrypoints[1] ? " or " : "",
                                    l->entrypoints[1] ? l->entrypoints[1] : "");
    } else if (b->entrypoint == NULL) {
        for (size_t i = 0; i < N_LANGUAGES; i++) {
            const char *found = conventional_entrypoint(b, &languages[i]);

            if (found == NULL)
                continue;
            if (entry != NULL)
                return cordon_error_set(err, CORDON_E_INVALID, 0,
                                        "language: ambiguous, %s has both %s and %s (give a language)",
                                        where, entry, found);
            entry = found;
        }
        if (entry == NULL && b->n_files == 1)
            entry = b->files[0].path;
        if (entry == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "entrypoint: none given and %s has none of main.py, main.js, "
                                    "index.js, main.go, main.cpp, main.cc at its top", where);
    }
    if (entry != NULL && (b->entrypoint = strdup(entry)) == NULL)
        return nomem(err, "entrypoint");
    if (b->language == NULL) {
        lang = language_from_extension(b->entrypoint);
        if (lang == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "language: not given, and the extension of \"%.*s\" names none "
                                    "(.py .js .mjs .cjs .go .cpp .cc .cxx .c++)",
                                    cordon_text_fit(b->entrypoint, 200), b->entrypoint);
        if ((b->language = strdup(lang)) == NULL)
            return nomem(err, "language");
    }
    return 0;
}

/* cJSON_CreateStringArray refuses an empty list given as NULL. */
static cJSON *string_array(char *const *strings, size_t n)
{
    cJSON *array = cJSON_CreateArray();

    for (size_t i = 0; array != NULL && i < n; i++) {
        if (!cJSON_AddItemToArray(array, cJSON_CreateString(strings[i]))) {
            cJSON_Delete(array);
            array = NULL;
        }
    }
    return array;
}

/* The object the digest is taken over (json.md §5). */
static cJSON *digest_document(const struct cordon__bundle *b)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(doc, "files");
    cJSON *toolchain;
    bool ok = files != NULL;

    ok = ok && cJSON_AddStringToObject(doc, "language", b->language) != NULL;
    ok = ok && cJSON_AddStringToObject(doc, "entrypoint", b->entrypoint) != NULL;
    ok = ok && cJSON_AddItemToObject(doc, "args", string_array(b->args, b->n_args));
    ok = ok && cJSON_AddItemToObject(doc, "outputs", string_array(b->outputs, b->n_outputs));
    for (size_t i = 0; ok && i < b->n_files; i++) {
        cJSON *f = cJSON_CreateObject();

        ok = cJSON_AddItemToArray(files, f);
        ok = ok && cJSON_AddStringToObject(f, "path", b->files[i].path) != NULL;
        ok = ok && cJSON_AddStringToObject(f, "sha256", b->files[i].sha256) != NULL;
        ok = ok && cJSON_AddNumberToObject(f, "size", (double)b->files[i].len) != NULL;
        ok = ok && cJSON_AddBoolToObject(f, "executable", b->files[i].executable) != NULL;
    }
    if (ok && b->min_version != NULL) {
        toolchain = cJSON_AddObjectToObject(doc, "toolchain");
        ok = toolchain != NULL &&
             cJSON_AddStringToObject(toolchain, "min_version", b->min_version) != NULL;
    } else if (ok) {
        ok = cJSON_AddNullToObject(doc, "toolchain") != NULL;
    }
    if (!ok) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

/* qsort order of files: by the bytes of their paths, as the digest wants. */
static int file_order(const void *a, const void *b)
{
    return strcmp(((const struct cordon__bundle_file *)a)->path,
                  ((const struct cordon__bundle_file *)b)->path);
}

/* Checks that need every file, then the digest. */
static int bundle_finish(struct cordon__bundle *b, const char *where, struct cordon_error *err)
{
    const char **paths = NULL;
    cJSON *doc = NULL;
    char *text = NULL, hex[65];
    int r;

    if (b->n_files == 0) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "files: %s holds no file", where);
        goto out;
    }
    qsort(b->files, b->n_files, sizeof(*b->files), file_order);
    if ((paths = calloc(b->n_files, sizeof(*paths))) == NULL) {
        r = nomem(err, "files");
        goto out;
    }
    for (size_t i = 0; i < b->n_files; i++)
        paths[i] = b->files[i].path;
    if ((r = cordon_path_check_set("files", paths, b->n_files, err)) < 0)
        goto out;
    if ((r = resolve_entrypoint(b, where, err)) < 0)
        goto out;
    if (find_file(b, b->entrypoint) == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "entrypoint: \"%.*s\" is not among the bundle's %zu files",
                             cordon_text_fit(b->entrypoint, 200), b->entrypoint, b->n_files);
        goto out;
    }
    if ((doc = digest_document(b)) == NULL) {
        r = nomem(err, "bundle digest");
        goto out;
    }
    if ((r = cordon__json_canonical(doc, &text, err)) < 0)
        goto out;
    cordon_sha256_hex(text, strlen(text), hex);
    snprintf(b->digest, sizeof(b->digest), "sha256:%s", hex);
    snprintf(b->id, sizeof(b->id), "bundle-%.*s", cordon_text_fit(hex, 24), hex);
out:
    free(paths);
    free(text);
    cJSON_Delete(doc);
    return r;
}

/* True when item nests deeper than a request may (depth counts item itself). */
static bool too_deep(const cJSON *item, int depth)
{
    if (depth > CORDON_REQUEST_MAX_DEPTH)
        return true;
    for (const cJSON *c = item->child; c != NULL; c = c->next)
        if (too_deep(c, depth + 1))
            return true;
    return false;
}

/* An optional member that is missing or null means the same. */
static bool is_absent(const cJSON *item)
{
    return item == NULL || cJSON_IsNull(item);
}

/* Put c into the slot of its key among keys[]; false if the key is not there. */
static int match_key(const cJSON *c, const char *const *keys, size_t n_keys, const cJSON **slots,
                     const char *where, bool *ret_matched, struct cordon_error *err)
{
    *ret_matched = false;
    for (size_t k = 0; k < n_keys; k++) {
        if (strcmp(c->string, keys[k]) != 0)
            continue;
        if (slots[k] != NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: key \"%s\" appears twice",
                                    where, keys[k]);
        slots[k] = c;
        *ret_matched = true;
    }
    return 0;
}

/* Borrowed pointers to the strings of a JSON array, checked one by one. */
static int string_list(const char *field, const cJSON *array, size_t max, const char ***ret,
                       size_t *ret_n, struct cordon_error *err)
{
    const char **list = NULL;
    size_t n = 0, i = 0;
    const cJSON *c;

    if (!cJSON_IsArray(array))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: must be an array of strings", field);
    cJSON_ArrayForEach(c, array)
        n++;
    if (n > max)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: %zu entries exceeds the limit of %zu",
                                field, n, max);
    if (n > 0 && (list = calloc(n, sizeof(*list))) == NULL)
        return nomem(err, field);
    cJSON_ArrayForEach(c, array) {
        if (!cJSON_IsString(c) || c->valuestring == NULL) {
            free(list);
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s[%zu]: must be a string", field, i);
        }
        list[i++] = c->valuestring;
    }
    *ret = list;
    *ret_n = n;
    return 0;
}

/* One element of "files": shape, path, content (text or base64), limits. */
static int take_request_file(struct cordon__bundle *b, size_t index, const cJSON *item,
                             struct cordon_error *err)
{
    static const char *const keys[] = { "path", "content", "content_base64", "executable" };
    const cJSON *slots[4] = { NULL };
    unsigned char *data = NULL;
    char field[48], *norm = NULL;
    size_t len = 0, chars = 0;
    bool executable = false, matched;
    const cJSON *c;
    int r;

    snprintf(field, sizeof(field), "files[%zu]", index);
    if (!cJSON_IsObject(item))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: must be an object {\"path\", \"content\" or \"content_base64\", "
                                "\"executable\"}", field);
    cJSON_ArrayForEach(c, item) {
        if ((r = match_key(c, keys, 4, slots, field, &matched, err)) < 0)
            return r;
        if (!matched)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: unknown key \"%.*s\" (path, content, content_base64, "
                                    "executable)",
                                    field, cordon_text_fit(c->string, 64), c->string);
    }
    if (!cJSON_IsString(slots[0]))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s.path: missing or not a string", field);
    snprintf(field, sizeof(field), "files[%zu].path", index);
    if ((r = cordon_path_normalize(field, slots[0]->valuestring, &norm, err)) < 0)
        return r;
    snprintf(field, sizeof(field), "files[%zu] (%.*s)", index, cordon_text_fit(norm, 24), norm);
    if (!is_absent(slots[3]) && !cJSON_IsBool(slots[3])) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s.executable: must be true or false", field);
        goto out;
    }
    executable = cJSON_IsTrue(slots[3]);
    if ((slots[1] != NULL) == (slots[2] != NULL)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "%s: give exactly one of \"content\" and \"content_base64\"", field);
        goto out;
    }
    c = slots[1] != NULL ? slots[1] : slots[2];
    if (!cJSON_IsString(c) || c->valuestring == NULL) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s.%s: must be a string", field, c->string);
        goto out;
    }
    if (slots[1] != NULL)
        len = strlen(c->valuestring);
    else if ((r = base64_length(field, c->valuestring, &chars, &len, err)) < 0)
        goto out;
    /* The limits hold before a byte is copied. */
    if ((r = check_file_room(b, norm, len, err)) < 0)
        goto out;
    if ((data = malloc(len + 1)) == NULL) {
        r = nomem(err, field);
        goto out;
    }
    if (slots[1] != NULL)
        memcpy(data, c->valuestring, len);
    else if ((r = base64_decode(field, c->valuestring, chars, data, err)) < 0)
        goto out;
    data[len] = '\0';
    r = add_file(b, norm, data, len, executable, err);
    norm = NULL;
    data = NULL;
out:
    free(norm);
    free(data);
    return r;
}

/* The "toolchain" object: only min_version, which may be null. */
static int take_request_toolchain(struct cordon__bundle *b, const cJSON *toolchain,
                                  struct cordon_error *err)
{
    const cJSON *c;
    int r;

    if (!cJSON_IsObject(toolchain))
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "toolchain: must be an object {\"min_version\": \"3.10\"} or null");
    cJSON_ArrayForEach(c, toolchain) {
        if (strcmp(c->string, "min_version") != 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "toolchain: unknown key \"%.*s\" (min_version)",
                                    cordon_text_fit(c->string, 64), c->string);
        if (cJSON_IsNull(c))
            continue;
        if (!cJSON_IsString(c) || c->valuestring == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "toolchain.min_version: must be a string");
        if (b->min_version != NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "toolchain: key \"min_version\" appears twice");
        if ((r = take_min_version(b, c->valuestring, err)) < 0)
            return r;
    }
    return 0;
}

int cordon__bundle_from_request(const cJSON *request, struct cordon__bundle **ret,
                                struct cordon_error *err)
{
    enum { K_LANGUAGE, K_ENTRYPOINT, K_ARGS, K_FILES, K_OUTPUTS, K_TOOLCHAIN, K_N };
    const cJSON *slots[K_N] = { NULL }, *ignored[sizeof(request_keys_ignored) / sizeof(char *)] = { NULL };
    struct cordon__bundle *b = NULL;
    const char **list = NULL;
    size_t n = 0, i = 0;
    const cJSON *c;
    bool matched;
    int r;

    if (!cJSON_IsObject(request))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "request: must be a JSON object");
    if (too_deep(request, 1))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "request: nesting deeper than the limit of %d",
                                CORDON_REQUEST_MAX_DEPTH);
    /* Keys first: an unknown one is refused before any content is looked at. */
    cJSON_ArrayForEach(c, request) {
        if ((r = match_key(c, request_keys_bundle, K_N, slots, "request", &matched, err)) < 0)
            return r;
        if (!matched && (r = match_key(c, request_keys_ignored, sizeof(ignored) / sizeof(ignored[0]),
                                       ignored, "request", &matched, err)) < 0)
            return r;
        if (!matched)
            return cordon_error_set(
                err, CORDON_E_INVALID, 0,
                "request: unknown key \"%.*s\" (a bundle has language, entrypoint, "
                "args, files, outputs, toolchain)",
                cordon_text_fit(c->string, 64), c->string);
    }
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return nomem(err, "bundle");

    if (!is_absent(slots[K_LANGUAGE])) {
        if (!cJSON_IsString(slots[K_LANGUAGE])) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "language: must be a string");
            goto out;
        }
        if ((r = set_language(b, "language", slots[K_LANGUAGE]->valuestring, err)) < 0)
            goto out;
    }
    if (cJSON_IsString(slots[K_ARGS])) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "args: must be an array of strings (one argv entry each), not a shell string");
        goto out;
    }
    if (!is_absent(slots[K_ARGS])) {
        if ((r = string_list("args", slots[K_ARGS], CORDON_ARGV_MAX, &list, &n, err)) < 0 ||
            (r = take_args(b, list, n, err)) < 0)
            goto out;
        free(list);
        list = NULL;
    }

    c = slots[K_FILES];
    if (!cJSON_IsArray(c)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "files: %s (an array of {\"path\", \"content\"} objects)",
                             c == NULL ? "missing" : "must be an array");
        goto out;
    }
    /* The count is checked before any file is copied. */
    n = (size_t)cJSON_GetArraySize(c);
    if (n > CORDON_BUNDLE_MAX_FILES) {
        r = cordon_error_set(err, CORDON_E_LIMIT, 0, "files: %zu files exceeds the limit of %d", n,
                             CORDON_BUNDLE_MAX_FILES);
        goto out;
    }
    cJSON_ArrayForEach(c, slots[K_FILES])
        if ((r = take_request_file(b, i++, c, err)) < 0)
            goto out;

    if (!is_absent(slots[K_OUTPUTS])) {
        if ((r = string_list("outputs", slots[K_OUTPUTS], CORDON_BUNDLE_MAX_OUTPUTS, &list, &n, err)) < 0 ||
            (r = take_outputs(b, list, n, err)) < 0)
            goto out;
    }
    if (!is_absent(slots[K_TOOLCHAIN]) &&
        (r = take_request_toolchain(b, slots[K_TOOLCHAIN], err)) < 0)
        goto out;
    if (!is_absent(slots[K_ENTRYPOINT])) {
        if (!cJSON_IsString(slots[K_ENTRYPOINT])) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "entrypoint: must be a string");
            goto out;
        }
        if ((r = cordon_path_normalize("entrypoint", slots[K_ENTRYPOINT]->valuestring,
                                       &b->entrypoint, err)) < 0)
            goto out;
    }
    if ((r = bundle_finish(b, "the request", err)) < 0)
        goto out;
    *ret = b;
    b = NULL;
out:
    free(list);
    cordon__bundle_free(b);
    return r;
}

/* What a refused non-regular file is, for the message. */
static const char *file_type_name(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "FIFO";
    if (S_ISCHR(mode))
        return "character device";
    if (S_ISBLK(mode))
        return "block device";
    if (S_ISSOCK(mode))
        return "socket";
    return "special file";
}

/* Read what is left of fd, at most max bytes (one more means too big). */
static int read_fd_bounded(int fd, const char *name, size_t max, unsigned char **ret_data,
                           size_t *ret_len, struct cordon_error *err)
{
    size_t len = 0, cap = 4096;
    unsigned char *data = malloc(cap + 1), *grown;
    int r = 0;

    if (data == NULL)
        return nomem(err, name);
    for (;;) {
        ssize_t n;

        if (len == cap) {
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            if ((grown = realloc(data, cap + 1)) == NULL) {
                r = nomem(err, name);
                goto out;
            }
            data = grown;
        }
        n = read(fd, data + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: reading %.*s: %s",
                                 cordon_text_fit(name, 200), name, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max) {
            r = cordon_error_set(
                err, CORDON_E_LIMIT, 0,
                "files[0] (%.*s): more than %zu bytes exceeds the per-file limit of %zu",
                cordon_text_fit(name, 200), name, max, max);
            goto out;
        }
    }
    data[len] = '\0';
    *ret_data = data;
    *ret_len = len;
    data = NULL;
out:
    free(data);
    return r;
}

/* State of one directory walk: the bundle being filled and the root all
 * paths are opened beneath. */
struct walk {
    struct cordon__bundle *b;
    int root_fd;
};

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The entries of dirfd, sorted, so that errors and reads are deterministic. */
static int list_dir(int dirfd, const char *rel, char ***ret_names, size_t *ret_n,
                    struct cordon_error *err)
{
    char **names = NULL, **grown;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *dir = NULL;
    int fd, r = 0;

    if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0 || (dir = fdopendir(fd)) == NULL) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: cannot list %.*s: %s",
                             cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                             strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    while ((errno = 0, de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        /* Every entry becomes a file or is refused, so the file bound is the entry bound. */
        if (n >= CORDON_BUNDLE_MAX_FILES) {
            r = cordon_error_set(
                err, CORDON_E_LIMIT, 0,
                "files: directory %.*s has more than %d entries, exceeds the limit of %d files",
                cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                CORDON_BUNDLE_MAX_FILES, CORDON_BUNDLE_MAX_FILES);
            goto out;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            if ((grown = realloc(names, cap * sizeof(*names))) == NULL) {
                r = nomem(err, "bundle");
                goto out;
            }
            names = grown;
        }
        if ((names[n] = strdup(de->d_name)) == NULL) {
            r = nomem(err, "bundle");
            goto out;
        }
        n++;
    }
    if (errno != 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: cannot list %.*s: %s",
                             cordon_text_fit(rel[0] ? rel : ".", 200), rel[0] ? rel : ".",
                             strerror(errno));
        goto out;
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), string_order);
    *ret_names = names;
    *ret_n = n;
    names = NULL;
out:
    closedir(dir);
    if (names != NULL)
        free_names(names, n);
    return r;
}

/* Add every regular file below dirfd (at prefix, relative to the root);
 * links and special files end the walk with an error naming them. */
static int walk_dir(struct walk *w, int dirfd, const char *prefix, int depth, struct cordon_error *err)
{
    char **names = NULL, *rel = NULL, *norm = NULL, *data = NULL;
    size_t n = 0, len = 0;
    int r, sub = -1;

    if (depth > BUNDLE_MAX_DIR_DEPTH)
        return cordon_error_set(err, CORDON_E_LIMIT, 0,
                                "bundle: %.*s: directories nested deeper than the limit of %d",
                                cordon_text_fit(prefix, 200), prefix, BUNDLE_MAX_DIR_DEPTH);
    if ((r = list_dir(dirfd, prefix, &names, &n, err)) < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        struct stat st;

        free(rel);
        rel = NULL;
        if (asprintf(&rel, "%s%s%s", prefix, prefix[0] ? "/" : "", names[i]) < 0) {
            rel = NULL;
            r = nomem(err, "bundle");
            goto out;
        }
        /* lstat semantics: a link is seen as a link, never as its target. */
        if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                                 cordon_text_fit(rel, 200), rel, strerror(errno));
            goto out;
        }
        if (S_ISLNK(st.st_mode)) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "bundle: %.*s is a symbolic link (refused; copy the file in)",
                                 cordon_text_fit(rel, 200), rel);
            goto out;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                 "bundle: %.*s is a %s, not a regular file (refused)",
                                 cordon_text_fit(rel, 200), rel, file_type_name(st.st_mode));
            goto out;
        }
        if ((r = cordon_path_normalize("bundle", rel, &norm, err)) < 0)
            goto out;
        if (S_ISDIR(st.st_mode)) {
            /* Re-opened beneath the root, so a directory swapped for a link is refused. */
            if ((r = cordon_fs_open_beneath(w->root_fd, norm, O_RDONLY | O_DIRECTORY, 0, &sub, err)) < 0 ||
                (r = walk_dir(w, sub, norm, depth + 1, err)) < 0)
                goto out;
            close(sub);
            sub = -1;
            free(norm);
            norm = NULL;
            continue;
        }
        /* The size from stat stops a huge file before it is read; the read is bounded too. */
        if ((r = check_file_room(w->b, norm, (uint64_t)st.st_size, err)) < 0 ||
            (r = cordon_fs_read_file(w->root_fd, norm, CORDON_BUNDLE_MAX_FILE_BYTES, &data, &len,
                                     err)) < 0)
            goto out;
        r = add_file(w->b, norm, (unsigned char *)data, len, (st.st_mode & 0111) != 0, err);
        norm = NULL;
        data = NULL;
        if (r < 0)
            goto out;
    }
out:
    if (sub >= 0)
        close(sub);
    free(rel);
    free(norm);
    free(data);
    free_names(names, n);
    return r;
}

/* The bundle is the single regular file open on fd. */
static int take_single_file(struct cordon__bundle *b, int fd, const char *path,
                            const struct stat *st, struct cordon_error *err)
{
    const char *base = strrchr(path, '/');
    unsigned char *data = NULL;
    char *norm = NULL;
    size_t len = 0;
    int r;

    base = base != NULL ? base + 1 : path;
    if ((r = cordon_path_normalize("bundle", base, &norm, err)) < 0)
        return r;
    if ((r = check_file_room(b, norm, (uint64_t)st->st_size, err)) < 0 ||
        (r = read_fd_bounded(fd, norm, CORDON_BUNDLE_MAX_FILE_BYTES, &data, &len, err)) < 0)
        goto out;
    if ((b->entrypoint = strdup(norm)) == NULL) {
        r = nomem(err, "entrypoint");
        goto out;
    }
    r = add_file(b, norm, data, len, (st->st_mode & 0111) != 0, err);
    norm = NULL;
    data = NULL;
out:
    free(norm);
    free(data);
    return r;
}

int cordon__bundle_from_path(const char *path, const char *language, const char *const *args,
                             size_t n_args, const char *const *outputs, size_t n_outputs,
                             struct cordon__bundle **ret, struct cordon_error *err)
{
    struct cordon__bundle *b = NULL;
    struct walk w;
    struct stat st;
    int r, fd = -1;

    if (path == NULL || path[0] == '\0')
        return cordon_error_set(err, CORDON_E_INVALID, 0, "bundle: no path given");
    if ((n_args > 0 && args == NULL) || (n_outputs > 0 && outputs == NULL))
        return cordon_error_set(err, CORDON_E_INVALID, 0, "bundle: args or outputs missing");
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return nomem(err, "bundle");
    /* Cheap checks of the caller's own arguments come before any reading. */
    if ((language != NULL && (r = set_language(b, "language", language, err)) < 0) ||
        (r = take_args(b, args, n_args, err)) < 0 ||
        (r = take_outputs(b, outputs, n_outputs, err)) < 0)
        goto out;
    /* O_NONBLOCK: a FIFO given by mistake must not hang the open. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        r = cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                             "bundle: cannot open %.*s: %s", cordon_text_fit(path, 200), path,
                             strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                             cordon_text_fit(path, 200), path, strerror(errno));
        goto out;
    }
    /* fstat of the open fd: what was opened is what is read. */
    if (S_ISDIR(st.st_mode)) {
        w.b = b;
        w.root_fd = fd;
        r = walk_dir(&w, fd, "", 1, err);
    } else if (S_ISREG(st.st_mode)) {
        /* Back to blocking reads now that it is known to be a regular file. */
        if (fcntl(fd, F_SETFL, 0) < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "bundle: %.*s: %s",
                                 cordon_text_fit(path, 200), path, strerror(errno));
            goto out;
        }
        r = take_single_file(b, fd, path, &st, err);
    } else {
        r = cordon_error_set(err, CORDON_E_UNSAFE, 0,
                             "bundle: %.*s is a %s, not a regular file or directory (refused)",
                             cordon_text_fit(path, 200), path, file_type_name(st.st_mode));
    }
    if (r < 0 || (r = bundle_finish(b, path, err)) < 0)
        goto out;
    *ret = b;
    b = NULL;
out:
    if (fd >= 0)
        close(fd);
    cordon__bundle_free(b);
    return r;
}

cJSON *cordon__bundle_manifest(const struct cordon__bundle *b)
{
    cJSON *m, *files, *declared;
    bool ok;

    if (b == NULL || (m = cJSON_CreateObject()) == NULL)
        return NULL;
    ok = cJSON_AddStringToObject(m, "bundle_id", b->id) != NULL &&
         cJSON_AddStringToObject(m, "bundle_digest", b->digest) != NULL &&
         cJSON_AddStringToObject(m, "language", b->language) != NULL &&
         cJSON_AddStringToObject(m, "entrypoint", b->entrypoint) != NULL &&
         (files = cJSON_AddArrayToObject(m, "files")) != NULL &&
         (declared = cJSON_AddArrayToObject(m, "declared_outputs")) != NULL;
    for (size_t i = 0; ok && i < b->n_files; i++) {
        const struct cordon__bundle_file *f = &b->files[i];
        cJSON *o = cJSON_CreateObject();

        ok = cJSON_AddItemToArray(files, o) &&
             cJSON_AddStringToObject(o, "path", f->path) != NULL &&
             cJSON_AddStringToObject(o, "sha256", f->sha256) != NULL &&
             cJSON_AddNumberToObject(o, "bytes", (double)f->len) != NULL &&
             cJSON_AddStringToObject(o, "role", strcmp(f->path, b->entrypoint) == 0 ? "entrypoint"
                                                                                      : "source") != NULL;
    }
    for (size_t i = 0; ok && i < b->n_outputs; i++) {
        char *p = NULL;

        if ((ok = asprintf(&p, "output/%s", b->outputs[i]) >= 0)) {
            ok = cJSON_AddItemToArray(declared, cJSON_CreateString(p));
            free(p);
        }
    }
    if (!ok) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}
