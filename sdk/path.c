/* sdk: validation and normalisation of relative paths from outside. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/sdk/path.h>

/* How much of an offending value a message shows. */
#define QUOTE_MAX 96

/*
 * Copy s into out (cap bytes) for a one-line message: control characters,
 * '"' and '\' escaped, long values cut with "...".
 */
static void quote(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    for (size_t i = 0; s[i] != '\0'; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i >= QUOTE_MAX || o + 8 >= cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 0xf];
        } else if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

static int refuse(struct cordon_error *err, int code, const char *field, const char *path,
                  const char *rule)
{
    char q[QUOTE_MAX * 4 + 8];

    quote(q, sizeof(q), path);
    return cordon_error_set(err, code, 0, "%s: path \"%s\": %s", field, q, rule);
}

/*
 * The common worker: validate every byte and component, then rebuild the
 * path without empty and "." components. allow_dot lets "" and "." stand
 * for the directory itself.
 */
static int normalize(const char *field, const char *path, bool allow_dot, char **ret_norm,
                     struct cordon_error *err)
{
    size_t len, o = 0;
    const char *p;
    char *norm;

    if (field == NULL)
        field = "path";
    if (path == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: path is missing", field);
    len = strnlen(path, CORDON_PATH_MAX + 1);
    if (len > CORDON_PATH_MAX)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: path is longer than %d bytes", field, CORDON_PATH_MAX);
    if (len == 0 && !allow_dot)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: path is empty", field);
    if (path[0] == '/')
        return refuse(err, CORDON_E_UNSAFE, field, path, "absolute paths are not allowed");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];

        if (c < 0x20 || c == 0x7f)
            return refuse(err, CORDON_E_INVALID, field, path,
                          "control characters are not allowed");
    }

    /* The result is never longer than the input. */
    norm = malloc(len + 1);
    if (norm == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", field);
    p = path;
    while (*p != '\0') {
        size_t clen = strcspn(p, "/");

        if (clen == 2 && p[0] == '.' && p[1] == '.') {
            free(norm);
            return refuse(err, CORDON_E_UNSAFE, field, path,
                          "\"..\" components are not allowed");
        }
        if (clen > CORDON_PATH_COMPONENT_MAX) {
            char msg[96];

            free(norm);
            snprintf(msg, sizeof(msg), "a component is longer than %d bytes",
                     CORDON_PATH_COMPONENT_MAX);
            return refuse(err, CORDON_E_INVALID, field, path, msg);
        }
        if (clen > 0 && !(clen == 1 && p[0] == '.')) {
            if (o > 0)
                norm[o++] = '/';
            memcpy(norm + o, p, clen);
            o += clen;
        }
        p += clen;
        if (*p == '/')
            p++;
    }
    norm[o] = '\0';
    if (o == 0 && !allow_dot) {
        free(norm);
        return refuse(err, CORDON_E_INVALID, field, path,
                      "names the directory itself, not an entry in it");
    }
    *ret_norm = norm;
    return 0;
}

int cordon_path_normalize(const char *field, const char *path, char **ret_norm,
                          struct cordon_error *err)
{
    if (ret_norm == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: no result pointer");
    return normalize(field, path, false, ret_norm, err);
}

int cordon_path_normalize_dir(const char *field, const char *path, char **ret_norm,
                              struct cordon_error *err)
{
    if (ret_norm == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "path: no result pointer");
    return normalize(field, path, true, ret_norm, err);
}

bool cordon_path_is_under(const char *norm, const char *root)
{
    size_t rlen;

    if (norm == NULL || root == NULL)
        return false;
    rlen = strlen(root);
    /* "" is the directory itself: everything lies below it. */
    if (rlen == 0)
        return true;
    if (strncmp(norm, root, rlen) != 0)
        return false;
    return norm[rlen] == '\0' || norm[rlen] == '/';
}

struct set_item {
    const char *path;
    size_t index;
};

/*
 * ASCII case folding in which '/' sorts before every other byte: then the
 * paths below "a" ("a/...") directly follow "a" in sorted order, and case
 * variants are neighbours too, so one pass over neighbours finds every
 * conflict.
 */
static unsigned fold(unsigned char c)
{
    if (c == '/')
        return 1;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 'a';
    return c;
}

static int fold_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        unsigned fa = fold((unsigned char)*a), fb = fold((unsigned char)*b);

        if (fa != fb)
            return fa < fb ? -1 : 1;
        if (fa == 0)
            return 0;
    }
}

static int set_item_cmp(const void *pa, const void *pb)
{
    const struct set_item *a = pa, *b = pb;
    int c = fold_cmp(a->path, b->path);

    if (c != 0)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* True when dir (case-folded) is a leading directory of path. */
static bool fold_is_dir_of(const char *dir, const char *path)
{
    size_t i;

    for (i = 0; dir[i] != '\0'; i++)
        if (fold((unsigned char)dir[i]) != fold((unsigned char)path[i]))
            return false;
    return path[i] == '/';
}

int cordon_path_check_set(const char *field, const char *const *paths, size_t n,
                          struct cordon_error *err)
{
    struct set_item *items = NULL;
    char qa[QUOTE_MAX * 4 + 8], qb[QUOTE_MAX * 4 + 8];
    int r = 0;

    if (field == NULL)
        field = "paths";
    if (n == 0)
        return 0;
    if (paths == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: list is missing", field);
    if (n > SIZE_MAX / sizeof(*items))
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: too many paths (%zu)", field, n);
    items = malloc(n * sizeof(*items));
    if (items == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "%s: out of memory", field);
    for (size_t i = 0; i < n; i++) {
        if (paths[i] == NULL) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0, "%s[%zu]: path is missing", field, i);
            goto out;
        }
        items[i].path = paths[i];
        items[i].index = i;
    }
    qsort(items, n, sizeof(*items), set_item_cmp);

    for (size_t i = 1; i < n; i++) {
        const struct set_item *a = &items[i - 1], *b = &items[i];

        if (fold_cmp(a->path, b->path) != 0 && !fold_is_dir_of(a->path, b->path))
            continue;
        quote(qa, sizeof(qa), a->path);
        quote(qb, sizeof(qb), b->path);
        if (strcmp(a->path, b->path) == 0) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "%s[%zu]: path \"%s\" duplicates %s[%zu]", field, b->index, qb,
                                 field, a->index);
            goto out;
        }
        if (fold_cmp(a->path, b->path) == 0) {
            r = cordon_error_set(err, CORDON_E_INVALID, 0,
                                 "%s[%zu]: path \"%s\" differs only in case from %s[%zu] \"%s\"",
                                 field, b->index, qb, field, a->index, qa);
            goto out;
        }
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "%s[%zu]: path \"%s\" lies below %s[%zu] \"%s\", which would have "
                             "to be both a file and a directory",
                             field, b->index, qb, field, a->index, qa);
        goto out;
    }
out:
    free(items);
    return r;
}
