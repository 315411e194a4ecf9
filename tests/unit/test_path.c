/* Unit tests of sdk/path.c: normalisation, containment and path sets. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/path.h>

/* Inputs too long to write out: built at run time. */
enum gen {
    GEN_NONE,
    GEN_PATH_4096,  /* exactly the limit: accepted */
    GEN_PATH_4097,  /* one byte over */
    GEN_COMP_255,
    GEN_COMP_256,
};

static char *generate(enum gen gen, const char *literal)
{
    size_t len;
    char *s;

    switch (gen) {
    case GEN_PATH_4096:
    case GEN_PATH_4097:
        /* "aaaa/aaaa/..." with components far below the component limit. */
        len = gen == GEN_PATH_4096 ? 4096 : 4097;
        s = malloc(len + 1);
        cr_assert_not_null(s);
        for (size_t i = 0; i < len; i++)
            s[i] = (i % 5 == 4) ? '/' : 'a';
        if (s[len - 1] == '/')
            s[len - 1] = 'b';
        s[len] = '\0';
        return s;
    case GEN_COMP_255:
    case GEN_COMP_256:
        len = gen == GEN_COMP_255 ? 255 : 256;
        s = malloc(len + 3);
        cr_assert_not_null(s);
        memcpy(s, "d/", 2);
        memset(s + 2, 'c', len);
        s[len + 2] = '\0';
        return s;
    default:
        s = strdup(literal);
        cr_assert_not_null(s);
        return s;
    }
}

struct good_case {
    const char *in;
    const char *want;   /* NULL: the same as the generated input */
    bool dir;           /* through cordon_path_normalize_dir */
    enum gen gen;
};

static const struct good_case good_cases[] = {
    {"a", "a", false, GEN_NONE},
    {"a//b/./c", "a/b/c", false, GEN_NONE},
    {"a/", "a", false, GEN_NONE},
    {"./a", "a", false, GEN_NONE},
    {"a/./b//", "a/b", false, GEN_NONE},
    {".hidden/x", ".hidden/x", false, GEN_NONE},
    {"...", "...", false, GEN_NONE},
    {"a..b/..c/d..", "a..b/..c/d..", false, GEN_NONE},
    {"caf\xc3\xa9/\xe2\x82\xac.txt", "caf\xc3\xa9/\xe2\x82\xac.txt", false, GEN_NONE},
    {"with space/and-dash_", "with space/and-dash_", false, GEN_NONE},
    {NULL, NULL, false, GEN_PATH_4096},
    {NULL, NULL, false, GEN_COMP_255},
    {"", "", true, GEN_NONE},
    {".", "", true, GEN_NONE},
    {"./", "", true, GEN_NONE},
    {"src//lib/", "src/lib", true, GEN_NONE},
};

ParameterizedTestParameters(path, normalize_accepts)
{
    static size_t idx[sizeof(good_cases) / sizeof(good_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, path, normalize_accepts)
{
    const struct good_case *c = &good_cases[*i];
    struct cordon_error err;
    char *in = generate(c->gen, c->in);
    char *norm = NULL;
    int r;

    cordon_error_init(&err);
    if (c->dir)
        r = cordon_path_normalize_dir("files[0].path", in, &norm, &err);
    else
        r = cordon_path_normalize("files[0].path", in, &norm, &err);
    cr_assert_eq(r, 0, "row %zu: refused: %s", *i, err.message);
    cr_assert_not_null(norm);
    cr_assert_str_eq(norm, c->want != NULL ? c->want : in, "row %zu", *i);
    free(norm);
    free(in);
}

struct bad_case {
    const char *in;
    int code;
    const char *rule;   /* a piece of the message */
    bool dir;
    enum gen gen;
};

static const struct bad_case bad_cases[] = {
    {"", CORDON_E_INVALID, "empty", false, GEN_NONE},
    {"/etc/passwd", CORDON_E_UNSAFE, "absolute", false, GEN_NONE},
    {"//etc", CORDON_E_UNSAFE, "absolute", false, GEN_NONE},
    {"../x", CORDON_E_UNSAFE, "\"..\" components are not allowed", false, GEN_NONE},
    {"a/../../x", CORDON_E_UNSAFE, "\"..\"", false, GEN_NONE},
    {"a/..", CORDON_E_UNSAFE, "\"..\"", false, GEN_NONE},
    {"a/./../b", CORDON_E_UNSAFE, "\"..\"", false, GEN_NONE},
    {"..", CORDON_E_UNSAFE, "\"..\"", false, GEN_NONE},
    {NULL, CORDON_E_INVALID, "longer than 4096", false, GEN_PATH_4097},
    {NULL, CORDON_E_INVALID, "longer than 255", false, GEN_COMP_256},
    {"a\x01" "b", CORDON_E_INVALID, "control characters", false, GEN_NONE},
    {"a\nb", CORDON_E_INVALID, "control characters", false, GEN_NONE},
    {"tab\there", CORDON_E_INVALID, "control characters", false, GEN_NONE},
    {"del\x7f", CORDON_E_INVALID, "control characters", false, GEN_NONE},
    {".", CORDON_E_INVALID, "directory itself", false, GEN_NONE},
    {"./", CORDON_E_INVALID, "directory itself", false, GEN_NONE},
    {".//.", CORDON_E_INVALID, "directory itself", false, GEN_NONE},
    {"/", CORDON_E_UNSAFE, "absolute", true, GEN_NONE},
    {"..", CORDON_E_UNSAFE, "\"..\"", true, GEN_NONE},
    {NULL, CORDON_E_INVALID, "longer than 4096", true, GEN_PATH_4097},
};

ParameterizedTestParameters(path, normalize_refuses)
{
    static size_t idx[sizeof(bad_cases) / sizeof(bad_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, path, normalize_refuses)
{
    const struct bad_case *c = &bad_cases[*i];
    struct cordon_error err;
    char *in = generate(c->gen, c->in);
    char sentinel = 0, *norm = &sentinel;
    int r;

    cordon_error_init(&err);
    if (c->dir)
        r = cordon_path_normalize_dir("files[3].path", in, &norm, &err);
    else
        r = cordon_path_normalize("files[3].path", in, &norm, &err);
    cr_assert_eq(r, c->code, "row %zu: got %d (%s)", *i, r, err.message);
    cr_assert_eq(err.code, c->code, "row %zu", *i);
    cr_assert(norm == &sentinel, "row %zu: ret_norm written on failure", *i);
    cr_assert(strncmp(err.message, "files[3].path: ", 15) == 0, "row %zu: message \"%s\"", *i,
              err.message);
    cr_assert(strstr(err.message, c->rule) != NULL, "row %zu: message \"%s\" lacks \"%s\"", *i,
              err.message, c->rule);
    /* One line, no raw control characters copied from the input. */
    for (const char *m = err.message; *m != '\0'; m++)
        cr_assert((unsigned char)*m >= 0x20 && *m != 0x7f, "row %zu: raw control byte", *i);
    free(in);
}

Test(path, normalize_refuses_null)
{
    struct cordon_error err;
    char *norm = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon_path_normalize("cwd", NULL, &norm, &err), CORDON_E_INVALID);
    cr_assert_null(norm);
    cr_assert(strncmp(err.message, "cwd: ", 5) == 0, "%s", err.message);
}

Test(path, message_shows_the_value)
{
    struct cordon_error err;
    char *norm = NULL;

    cordon_error_init(&err);
    cr_assert_eq(cordon_path_normalize("files[3].path", "a/../b", &norm, &err), CORDON_E_UNSAFE);
    cr_assert_str_eq(err.message,
                     "files[3].path: path \"a/../b\": \"..\" components are not allowed");
}

struct under_case {
    const char *norm, *root;
    bool want;
};

static const struct under_case under_cases[] = {
    {"output/a", "output", true},
    {"output", "output", true},
    {"output/a/b/c", "output/a", true},
    {"anything", "", true},
    {"outputs/a", "output", false},
    {"output2", "output", false},
    {"out", "output", false},
    {"a/bc", "a/b", false},
    {"Output/a", "output", false},
    {"", "a", false},
};

Test(path, is_under_table)
{
    for (size_t i = 0; i < sizeof(under_cases) / sizeof(under_cases[0]); i++) {
        const struct under_case *c = &under_cases[i];

        cr_expect_eq(cordon_path_is_under(c->norm, c->root), c->want, "\"%s\" under \"%s\"",
                     c->norm, c->root);
    }
    cr_assert_not(cordon_path_is_under(NULL, "a"));
    cr_assert_not(cordon_path_is_under("a", NULL));
}

#define SET_MAX 5

struct set_case {
    const char *paths[SET_MAX];
    size_t n;
    int code;
    const char *fragment;   /* a piece of the message, for refusals */
};

static const struct set_case set_cases[] = {
    /* accepted */
    {{"a", "b", "c"}, 3, 0, NULL},
    {{"a/b", "a/c", "ab"}, 3, 0, NULL},
    {{"a", "a.txt", "a-b", "a b"}, 4, 0, NULL},
    {{"A/x", "b", "B.txt"}, 3, 0, NULL},
    {{"dir/file", "dir2/file", "dir.d/file"}, 3, 0, NULL},
    {{NULL}, 0, 0, NULL},
    /* refused */
    {{"x", "a", "x"}, 3, CORDON_E_INVALID, "files[2]: path \"x\" duplicates files[0]"},
    {{"A.txt", "a.txt"}, 2, CORDON_E_INVALID, "differs only in case"},
    {{"src/Main.c", "lib", "src/main.C"}, 3, CORDON_E_INVALID, "differs only in case"},
    {{"a", "a/b"}, 2, CORDON_E_INVALID, "both a file and a directory"},
    {{"a/b", "a"}, 2, CORDON_E_INVALID, "both a file and a directory"},
    {{"a/b/c", "a-b", "a.txt", "a", "a b"}, 5, CORDON_E_INVALID, "both a file and a directory"},
    {{"Dir", "dir/file"}, 2, CORDON_E_INVALID, "both a file and a directory"},
    {{"a/b", "x", "a/b/c/d"}, 3, CORDON_E_INVALID, "files[2]: path \"a/b/c/d\" lies below"},
    {{"ok", NULL}, 2, CORDON_E_INVALID, "files[1]: path is missing"},
};

ParameterizedTestParameters(path, check_set_table)
{
    static size_t idx[sizeof(set_cases) / sizeof(set_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, path, check_set_table)
{
    const struct set_case *c = &set_cases[*i];
    struct cordon_error err;
    int r;

    cordon_error_init(&err);
    r = cordon_path_check_set("files", c->paths, c->n, &err);
    cr_assert_eq(r, c->code, "row %zu: got %d (%s)", *i, r, err.message);
    if (c->fragment != NULL)
        cr_assert(strstr(err.message, c->fragment) != NULL, "row %zu: \"%s\" lacks \"%s\"", *i,
                  err.message, c->fragment);
}

/* Many paths: distinct ones pass, one late duplicate is found. */
Test(path, check_set_large)
{
    enum { N = 20000 };
    char **paths = calloc(N + 1, sizeof(*paths));
    struct cordon_error err;

    cr_assert_not_null(paths);
    for (size_t i = 0; i < N; i++) {
        cr_assert(asprintf(&paths[i], "d%zu/f%zu", i % 97, i) > 0);
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon_path_check_set("files", (const char *const *)paths, N, &err), 0, "%s",
                 err.message);
    cr_assert(asprintf(&paths[N], "D%u/F%u", 12345u % 97, 12345u) > 0);
    cr_assert_eq(cordon_path_check_set("files", (const char *const *)paths, N + 1, &err),
                 CORDON_E_INVALID);
    cr_assert(strstr(err.message, "differs only in case") != NULL, "%s", err.message);
    for (size_t i = 0; i <= N; i++)
        free(paths[i]);
    free(paths);
}
