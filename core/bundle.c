/* core: a bundle's rules whichever way it was built — language, args,
 * outputs, files within their bounds, entrypoint — its digest and its
 * landing manifest. bundle-request.c builds one from a request,
 * bundle-path.c from a host path. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/path.h>

#include "core/bundle-internal.h"
#include "core/bundle.h"
#include "core/canonical.h"
#include "core/limits.h"

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
int cordon__bundle_nomem(struct cordon_error *err, const char *what)
{
    return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", what);
}

/* Store the canonical name of a language given by name or alias. */
int cordon__bundle_set_language(struct cordon__bundle *b, const char *field, const char *name,
                                struct cordon_error *err)
{
    const char *canonical = cordon__language_canonical(name);

    if (canonical == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%.*s\" is not supported (python, node, go, cpp or an alias)",
                                field, cordon_text_fit(name, 64), name);
    if ((b->language = strdup(canonical)) == NULL)
        return cordon__bundle_nomem(err, field);
    return 0;
}

/* Copy argv entries after checking their count and total size against
 * what execve and the sandbox will take. */
int cordon__bundle_take_args(struct cordon__bundle *b, const char *const *args, size_t n,
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
        return cordon__bundle_nomem(err, "args");
    for (size_t i = 0; i < n; i++) {
        if ((b->args[i] = strdup(args[i])) == NULL)
            return cordon__bundle_nomem(err, "args");
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

int cordon__bundle_string_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Normalise, sort and de-duplicate the declared outputs. */
int cordon__bundle_take_outputs(struct cordon__bundle *b, const char *const *outputs, size_t n,
                                struct cordon_error *err)
{
    char field[32];
    int r;

    if (n > CORDON_BUNDLE_MAX_OUTPUTS)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "outputs: %zu entries exceeds the limit of %d",
                                n, CORDON_BUNDLE_MAX_OUTPUTS);
    if (n > 0 && (b->outputs = calloc(n, sizeof(*b->outputs))) == NULL)
        return cordon__bundle_nomem(err, "outputs");
    for (size_t i = 0; i < n; i++) {
        snprintf(field, sizeof(field), "outputs[%zu]", i);
        if ((r = normalize_output(field, outputs[i], &b->outputs[i], err)) < 0)
            return r;
        b->n_outputs++;
    }
    if (b->n_outputs > 1)
        qsort(b->outputs, b->n_outputs, sizeof(*b->outputs), cordon__bundle_string_order);
    return cordon_path_check_set("outputs", (const char *const *)b->outputs, b->n_outputs, err);
}

/* Room for one more file, checked before its bytes are read. */
int cordon__bundle_check_file_room(const struct cordon__bundle *b, const char *path, uint64_t len,
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
int cordon__bundle_add_file(struct cordon__bundle *b, char *path, unsigned char *data, size_t len,
                            bool executable, struct cordon_error *err)
{
    struct cordon__bundle_file *f;
    int r;

    if ((r = cordon__bundle_check_file_room(b, path, len, err)) < 0)
        goto fail;
    /* Doubled as it fills: check_file_room keeps n_files below the bound,
     * and a one-file bundle (most runs) zeroes no 100 KiB table. */
    if (b->n_files == b->files_cap) {
        size_t cap = b->files_cap == 0 ? 8 : b->files_cap * 2;
        struct cordon__bundle_file *grown;

        if (cap > CORDON_BUNDLE_MAX_FILES)
            cap = CORDON_BUNDLE_MAX_FILES;
        if ((grown = realloc(b->files, cap * sizeof(*grown))) == NULL) {
            r = cordon__bundle_nomem(err, "files");
            goto fail;
        }
        b->files = grown;
        b->files_cap = cap;
    }
    f = &b->files[b->n_files++];
    memset(f, 0, sizeof(*f));
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
        return cordon__bundle_nomem(err, "entrypoint");
    if (b->language == NULL) {
        lang = language_from_extension(b->entrypoint);
        if (lang == NULL)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "language: not given, and the extension of \"%.*s\" names none "
                                    "(.py .js .mjs .cjs .go .cpp .cc .cxx .c++)",
                                    cordon_text_fit(b->entrypoint, 200), b->entrypoint);
        if ((b->language = strdup(lang)) == NULL)
            return cordon__bundle_nomem(err, "language");
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
int cordon__bundle_finish(struct cordon__bundle *b, const char *where, struct cordon_error *err)
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
        r = cordon__bundle_nomem(err, "files");
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
        r = cordon__bundle_nomem(err, "bundle digest");
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
