/* Unit tests of core/bundle.c: requests, host paths, limits, digest, manifest. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/sdk/fs.h>
#include "core/bundle.h"
#include "tests/unit/helpers.h"

/* Criterion runs each case in a fresh process where pointers taken in the
 * runner mean nothing: the parameters are indices into a static table. */
#define INDEX_PARAMS(table)                                                  \
    static size_t indices_[sizeof(table) / sizeof(table[0])];               \
    for (size_t i_ = 0; i_ < sizeof(indices_) / sizeof(indices_[0]); i_++) \
        indices_[i_] = i_;                                                   \
    return cr_make_param_array(size_t, indices_, sizeof(indices_) / sizeof(indices_[0]))

/* The python bundle whose digest was computed by hand (python3 hashlib over
 * the canonical text below). */
#define GOOD_REQUEST                                                                  \
    "{\"language\": \"python\", \"entrypoint\": \"main.py\", \"args\": [\"--n\", \"3\"]," \
    " \"files\": [{\"path\": \"main.py\", \"content\": \"print('hi')\\n\"},"           \
    "             {\"path\": \"lib/util.py\", \"content\": \"X = 1\\n\", \"executable\": true}]," \
    " \"outputs\": [\"output/result.txt\"], \"toolchain\": {\"min_version\": \"3.11\"}}"
#define GOOD_REQUEST_REORDERED                                                        \
    "{\"toolchain\": {\"min_version\": \"3.11\"}, \"outputs\": [\"result.txt\"],"      \
    " \"files\": [{\"executable\": true, \"content\": \"X = 1\\n\", \"path\": \"./lib//util.py\"}," \
    "             {\"content_base64\": \"cHJpbnQoJ2hpJykK\", \"path\": \"main.py\", \"executable\": false}]," \
    " \"args\": [\"--n\", \"3\"], \"entrypoint\": \"main.py\", \"language\": \"PY\"," \
    " \"provider\": \"docker\", \"limits\": {\"cpus\": 1}, \"timeout_ms\": 1000}"
#define GOOD_CANONICAL                                                                              \
    "{\"args\":[\"--n\",\"3\"],\"entrypoint\":\"main.py\",\"files\":[{\"executable\":true,"          \
    "\"path\":\"lib/util.py\",\"sha256\":"                                                         \
    "\"0abae1e0ae728216ee44993c5a3a755f8b1c387d947fc4c4f72cab0e4a84214b\",\"size\":6},"            \
    "{\"executable\":false,\"path\":\"main.py\",\"sha256\":"                                        \
    "\"caf026f25d7140209f98072605307a438914b9ce6f3c14b23d15d9667241de52\",\"size\":12}],"          \
    "\"language\":\"python\",\"outputs\":[\"result.txt\"],\"toolchain\":{\"min_version\":\"3.11\"}}"
#define GOOD_DIGEST "sha256:7a9509e7964ae319fc859c96909842ee1a54a7eb44befc0ece659c8e8d6b90e9"
/* main.py alone, no args, outputs or toolchain. */
#define MINIMAL_DIGEST "sha256:e9d69cfbd1ba71b8cc86f13881a7a69d0c129666fd93531b7fced03f1fd99204"

static char *tmpdir;

static void setup(void)
{
    tmpdir = test_mkdtemp();
    cr_assert_not_null(tmpdir);
}

static void teardown(void)
{
    test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

TestSuite(bundle, .init = setup, .fini = teardown);

static struct cordon__bundle *from_text(const char *text, int expected, struct cordon_error *err)
{
    struct cordon__bundle *b = NULL;
    cJSON *request = cJSON_Parse(text);
    int r;

    cr_assert_not_null(request, "test request does not parse: %.200s", text);
    cordon_error_init(err);
    r = cordon__bundle_from_request(request, &b, err);
    cJSON_Delete(request);
    cr_assert_eq(r, expected, "got %d (%s), wanted %d", r, err->message, expected);
    if (expected != 0)
        cr_assert_null(b, "the result was written on failure");
    return b;
}

Test(bundle, good_request_has_hand_computed_digest)
{
    struct cordon_error err;
    struct cordon__bundle *b = from_text(GOOD_REQUEST, 0, &err);
    char hex[65];

    /* The canonical text in this file really is what the digest is over. */
    cordon_sha256_hex(GOOD_CANONICAL, strlen(GOOD_CANONICAL), hex);
    cr_assert_str_eq(hex, &GOOD_DIGEST[7]);   /* past "sha256:" */
    cr_assert_str_eq(b->digest, GOOD_DIGEST);
    cr_assert_str_eq(b->id, "bundle-7a9509e7964ae319fc859c96");
    cr_assert_str_eq(b->language, "python");
    cr_assert_str_eq(b->entrypoint, "main.py");
    cr_assert_eq(b->n_args, 2);
    cr_assert_str_eq(b->args[0], "--n");
    cr_assert_eq(b->n_files, 2);
    cr_assert_str_eq(b->files[0].path, "lib/util.py");   /* sorted by path */
    cr_assert(b->files[0].executable);
    cr_assert_not(b->files[1].executable);
    cr_assert_eq(b->files[1].len, 12);
    cr_assert_eq(memcmp(b->files[1].data, "print('hi')\n", 12), 0);
    cr_assert_eq(b->n_outputs, 1);
    cr_assert_str_eq(b->outputs[0], "result.txt");
    cr_assert_str_eq(b->min_version, "3.11");
    cr_assert_eq(b->total_bytes, 18);
    cordon__bundle_free(b);
}

Test(bundle, digest_is_stable_across_spelling)
{
    struct cordon_error err;
    struct cordon__bundle *a = from_text(GOOD_REQUEST, 0, &err);
    struct cordon__bundle *b = from_text(GOOD_REQUEST_REORDERED, 0, &err);
    struct cordon__bundle *c = from_text(
        "{\"files\":[{\"path\":\"main.py\",\"content\":\"print('hi')\\n\"}]}", 0, &err);
    struct cordon__bundle *d = from_text(
        "{\"files\":[{\"path\":\"main.py\",\"content\":\"print('hi')\\n\"}],\"args\":[\"x\"]}", 0, &err);

    cr_assert_str_eq(a->digest, b->digest);
    cr_assert_str_eq(a->id, b->id);
    /* Language and entrypoint found from the one file; nothing else. */
    cr_assert_str_eq(c->language, "python");
    cr_assert_str_eq(c->entrypoint, "main.py");
    cr_assert_str_eq(c->digest, MINIMAL_DIGEST);
    /* One more argument is another bundle. */
    cr_assert_str_neq(d->digest, c->digest);
    cordon__bundle_free(a);
    cordon__bundle_free(b);
    cordon__bundle_free(c);
    cordon__bundle_free(d);
}

Test(bundle, base64_content_is_decoded)
{
    struct cordon_error err;
    /* "\0\x01\xff" + "ab" and "a" padded and unpadded. */
    struct cordon__bundle *b = from_text(
        "{\"language\":\"node\",\"entrypoint\":\"main.js\",\"files\":["
        "{\"path\":\"main.js\",\"content\":\"1\"},"
        "{\"path\":\"bin.dat\",\"content_base64\":\"AAH/YWI=\"},"
        "{\"path\":\"one\",\"content_base64\":\"YQ\"},"
        "{\"path\":\"empty\",\"content_base64\":\"\"}]}", 0, &err);

    cr_assert_eq(b->n_files, 4);
    cr_assert_str_eq(b->files[0].path, "bin.dat");
    cr_assert_eq(b->files[0].len, 5);
    cr_assert_eq(memcmp(b->files[0].data, "\0\x01\xff" "ab", 5), 0);
    cr_assert_str_eq(b->files[1].path, "empty");
    cr_assert_eq(b->files[1].len, 0);
    cr_assert_str_eq(b->files[3].path, "one");
    cr_assert_eq(b->files[3].len, 1);
    cr_assert_eq(b->files[3].data[0], 'a');
    cordon__bundle_free(b);
}

Test(bundle, outputs_are_normalised_sorted_and_in_the_manifest)
{
    struct cordon_error err;
    struct cordon__bundle *b = from_text(
        "{\"language\":\"go\",\"files\":[{\"path\":\"main.go\",\"content\":\"package main\"},"
        "{\"path\":\"pkg/a.go\",\"content\":\"package pkg\"}],"
        "\"outputs\":[\"output/r.txt\",\"plots/./a.png\",\"output//b.csv\"]}", 0, &err);
    cJSON *m = cordon__bundle_manifest(b), *files, *declared;

    cr_assert_eq(b->n_outputs, 3);
    cr_assert_str_eq(b->outputs[0], "b.csv");
    cr_assert_str_eq(b->outputs[1], "plots/a.png");
    cr_assert_str_eq(b->outputs[2], "r.txt");
    cr_assert_str_eq(b->entrypoint, "main.go");
    cr_assert_not_null(m);
    cr_assert_str_eq(cJSON_GetObjectItem(m, "bundle_id")->valuestring, b->id);
    cr_assert_str_eq(cJSON_GetObjectItem(m, "bundle_digest")->valuestring, b->digest);
    cr_assert_str_eq(cJSON_GetObjectItem(m, "language")->valuestring, "go");
    files = cJSON_GetObjectItem(m, "files");
    cr_assert_eq(cJSON_GetArraySize(files), 2);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 0), "role")->valuestring,
                     "entrypoint");
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 1), "role")->valuestring,
                     "source");
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 1), "bytes")->valuedouble, 11);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 1), "sha256")->valuestring,
                     b->files[1].sha256);
    declared = cJSON_GetObjectItem(m, "declared_outputs");
    cr_assert_eq(cJSON_GetArraySize(declared), 3);
    cr_assert_str_eq(cJSON_GetArrayItem(declared, 2)->valuestring, "output/r.txt");
    cJSON_Delete(m);
    cordon__bundle_free(b);
}

struct bad_request {
    const char *json;
    int code;
    const char *message;   /* part of the message */
};

#define FILE_MAIN "{\"path\":\"main.py\",\"content\":\"x\"}"
#define WITH_MAIN(extra) "{\"files\":[" FILE_MAIN "]," extra "}"

static const struct bad_request refuses_bad_request_cases[] = {
    { WITH_MAIN("\"args\":\"--n 3\""), CORDON_E_INVALID,
      "args: must be an array of strings (one argv entry each), not a shell string" },
    { WITH_MAIN("\"args\":{\"n\":3}"), CORDON_E_INVALID, "args: must be an array of strings" },
    { WITH_MAIN("\"args\":[\"a\",1]"), CORDON_E_INVALID, "args[1]: must be a string" },
    { "{\"files\":[{\"path\":\"../x\",\"content\":\"\"}]}", CORDON_E_UNSAFE, "files[0].path" },
    { "{\"files\":[{\"path\":\"/etc/passwd\",\"content\":\"\"}]}", CORDON_E_UNSAFE, "files[0].path" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"a/../../b\",\"content\":\"\"}]}", CORDON_E_UNSAFE,
      "files[1].path" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"a\\u0001b\",\"content\":\"\"}]}", CORDON_E_INVALID,
      "files[1].path" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"Util.py\",\"content\":\"\"},{\"path\":\"util.py\","
      "\"content\":\"\"}]}", CORDON_E_INVALID, "differs only in case" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"main.py\",\"content\":\"y\"}]}", CORDON_E_INVALID,
      "duplicates" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a/b\","
      "\"content\":\"\"}]}", CORDON_E_INVALID, "lies below" },
    { WITH_MAIN("\"entrypoint\":\"other.py\""), CORDON_E_INVALID,
      "entrypoint: \"other.py\" is not among the bundle's 1 files" },
    { WITH_MAIN("\"entrypoint\":\"../main.py\""), CORDON_E_UNSAFE, "entrypoint" },
    { WITH_MAIN("\"entrypoint\":7"), CORDON_E_INVALID, "entrypoint: must be a string" },
    { WITH_MAIN("\"outputs\":[\"../x\"]"), CORDON_E_UNSAFE, "outputs[0]: \"../x\" must stay inside output/" },
    { WITH_MAIN("\"outputs\":[\"/abs\"]"), CORDON_E_UNSAFE, "outputs[0]: \"/abs\" must stay inside output/" },
    { WITH_MAIN("\"outputs\":[\"r.txt\",\"output/../../x\"]"), CORDON_E_UNSAFE,
      "outputs[1]: \"output/../../x\" must stay inside output/" },
    { WITH_MAIN("\"outputs\":[\"output/../x\"]"), CORDON_E_UNSAFE, "must stay inside output/" },
    { WITH_MAIN("\"outputs\":[\"output\"]"), CORDON_E_INVALID, "the output directory itself" },
    { WITH_MAIN("\"outputs\":[\"r.txt\",\"output/r.txt\"]"), CORDON_E_INVALID, "duplicates" },
    { WITH_MAIN("\"outputs\":\"r.txt\""), CORDON_E_INVALID, "outputs: must be an array" },
    { WITH_MAIN("\"outputs\":[\"\"]"), CORDON_E_INVALID, "outputs[0]" },
    { WITH_MAIN("\"command\":\"rm -rf /\""), CORDON_E_INVALID, "request: unknown key \"command\"" },
    { WITH_MAIN("\"mounts\":[]"), CORDON_E_INVALID, "unknown key \"mounts\"" },
    { WITH_MAIN("\"language\":\"cobol\""), CORDON_E_INVALID, "language: \"cobol\" is not supported" },
    { WITH_MAIN("\"language\":3"), CORDON_E_INVALID, "language: must be a string" },
    { "{\"language\":\"python\"}", CORDON_E_INVALID, "files: missing" },
    { "{\"files\":{}}", CORDON_E_INVALID, "files: must be an array" },
    { "{\"files\":[]}", CORDON_E_INVALID, "holds no file" },
    { "{\"files\":[\"main.py\"]}", CORDON_E_INVALID, "files[0]: must be an object" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\",\"content_base64\":\"eA==\"}]}",
      CORDON_E_INVALID, "exactly one of" },
    { "{\"files\":[{\"path\":\"main.py\"}]}", CORDON_E_INVALID, "exactly one of" },
    { "{\"files\":[{\"content\":\"x\"}]}", CORDON_E_INVALID, "files[0].path: missing" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\",\"mode\":493}]}", CORDON_E_INVALID,
      "files[0]: unknown key \"mode\"" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\",\"path\":\"b\"}]}", CORDON_E_INVALID,
      "appears twice" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":3}]}", CORDON_E_INVALID, "must be a string" },
    { "{\"files\":[{\"path\":\"main.py\",\"content\":\"x\",\"executable\":\"yes\"}]}",
      CORDON_E_INVALID, "executable: must be true or false" },
    { "{\"files\":[{\"path\":\"main.py\",\"content_base64\":\"!!!!\"}]}", CORDON_E_INVALID,
      "invalid base64 (character 0x21 at offset 0)" },
    { "{\"files\":[{\"path\":\"main.py\",\"content_base64\":\"abcde\"}]}", CORDON_E_INVALID,
      "invalid base64" },
    { "{\"files\":[{\"path\":\"main.py\",\"content_base64\":\"ab=c\"}]}", CORDON_E_INVALID,
      "invalid base64" },
    { "{\"files\":[{\"path\":\"main.py\",\"content_base64\":\"YWJj\\nZGVm\"}]}", CORDON_E_INVALID,
      "invalid base64" },
    { "{\"files\":[{\"path\":\"main.py\",\"content_base64\":\"YQ===\"}]}", CORDON_E_INVALID,
      "invalid base64" },
    { WITH_MAIN("\"toolchain\":{\"min_version\":\"latest\"}"), CORDON_E_INVALID,
      "toolchain.min_version: \"latest\" is not a dotted version" },
    { WITH_MAIN("\"toolchain\":{\"min_version\":\"3..1\"}"), CORDON_E_INVALID, "not a dotted version" },
    { WITH_MAIN("\"toolchain\":{\"min_version\":\"3.\"}"), CORDON_E_INVALID, "not a dotted version" },
    { WITH_MAIN("\"toolchain\":{\"image\":\"x\"}"), CORDON_E_INVALID, "toolchain: unknown key \"image\"" },
    { WITH_MAIN("\"toolchain\":\"3.10\""), CORDON_E_INVALID, "toolchain: must be an object" },
    { "{\"files\":[" FILE_MAIN "],\"files\":[" FILE_MAIN "]}", CORDON_E_INVALID,
      "key \"files\" appears twice" },
    { "[]", CORDON_E_INVALID, "request: must be a JSON object" },
    { "{\"files\":[{\"path\":\"main.rb\",\"content\":\"x\"},{\"path\":\"b.rb\",\"content\":\"x\"}]}",
      CORDON_E_INVALID, "entrypoint: none given" },
    { "{\"entrypoint\":\"main.rb\",\"files\":[{\"path\":\"main.rb\",\"content\":\"x\"}]}",
      CORDON_E_INVALID, "language: not given" },
    { "{\"files\":[" FILE_MAIN ",{\"path\":\"main.go\",\"content\":\"x\"}]}", CORDON_E_INVALID,
      "language: ambiguous" },
    { "{\"language\":\"node\",\"files\":[" FILE_MAIN ",{\"path\":\"app.js\",\"content\":\"x\"}]}",
      CORDON_E_INVALID, "no main.js or index.js" },
    { WITH_MAIN("\"limits\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"),
      CORDON_E_LIMIT, "nesting deeper than the limit of 32" },
};

ParameterizedTestParameters(bundle, refuses_bad_request)
{
    INDEX_PARAMS(refuses_bad_request_cases);
}

ParameterizedTest(size_t *index, bundle, refuses_bad_request)
{
    const struct bad_request *c = &refuses_bad_request_cases[*index];
    struct cordon_error err;

    from_text(c->json, c->code, &err);
    cr_assert(strstr(err.message, c->message) != NULL, "message \"%s\" lacks \"%s\"", err.message,
              c->message);
}

/* A request built in code, for the cases too large to spell out. */
static cJSON *request_with_files(size_t n, size_t bytes_each)
{
    cJSON *req = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(req, "files");
    char *content = malloc(bytes_each + 1);

    cr_assert_not_null(content);
    memset(content, 'a', bytes_each);
    content[bytes_each] = '\0';
    cJSON_AddStringToObject(req, "entrypoint", "f0.py");
    for (size_t i = 0; i < n; i++) {
        cJSON *f = cJSON_CreateObject();
        char path[32];

        snprintf(path, sizeof(path), "f%zu.py", i);
        cJSON_AddStringToObject(f, "path", path);
        cJSON_AddStringToObject(f, "content", content);
        cJSON_AddItemToArray(files, f);
    }
    free(content);
    return req;
}

static void expect_refusal(cJSON *req, int code, const char *message)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_request(req, &b, &err), code, "%s", err.message);
    cr_assert_null(b);
    cr_assert(strstr(err.message, message) != NULL, "message \"%s\" lacks \"%s\"", err.message, message);
    cJSON_Delete(req);
}

static void expect_accepted(cJSON *req)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;

    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_request(req, &b, &err), 0, "%s", err.message);
    cordon__bundle_free(b);
    cJSON_Delete(req);
}

Test(bundle, refuses_more_than_1024_files)
{
    expect_accepted(request_with_files(1024, 1));
    expect_refusal(request_with_files(1025, 1), CORDON_E_LIMIT, "files: 1025 files exceeds the limit of 1024");
}

Test(bundle, refuses_a_17_mib_file)
{
    cJSON *req = request_with_files(1, 16u << 20);

    expect_accepted(req);
    req = request_with_files(1, 17u << 20);
    expect_refusal(req, CORDON_E_LIMIT,
                   "files[0] (f0.py): 17825792 bytes exceeds the per-file limit of 16777216");
}

Test(bundle, refuses_more_than_64_mib_in_total)
{
    expect_refusal(request_with_files(5, 15u << 20), CORDON_E_LIMIT,
                   "files: 78643200 bytes in total (at f4.py) exceeds the limit of 67108864");
}

Test(bundle, refuses_a_large_base64_file_before_decoding)
{
    cJSON *req = request_with_files(1, 1);
    size_t chars = ((17u << 20) / 3 + 1) * 4;
    char *b64 = malloc(chars + 1);
    cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(req, "files"), 0);

    memset(b64, 'A', chars);
    b64[chars] = '\0';
    cJSON_DeleteItemFromObject(f, "content");
    cJSON_AddStringToObject(f, "content_base64", b64);
    free(b64);
    expect_refusal(req, CORDON_E_LIMIT, "exceeds the per-file limit of 16777216");
}

static cJSON *request_with_strings(const char *key, size_t n, size_t len)
{
    cJSON *req = request_with_files(1, 1), *list = cJSON_AddArrayToObject(req, key);
    char *s = malloc(len + 8);

    for (size_t i = 0; i < n; i++) {
        /* A distinct entry of exactly len bytes: the index, then padding. */
        size_t prefix = (size_t)snprintf(s, len + 8, "%zu", i);
        size_t total = len > prefix ? len : prefix;

        memset(s + prefix, 'x', total - prefix);
        s[total] = '\0';
        cJSON_AddItemToArray(list, cJSON_CreateString(s));
    }
    free(s);
    return req;
}

Test(bundle, refuses_too_many_args_and_outputs)
{
    expect_accepted(request_with_strings("args", 256, 8));
    expect_refusal(request_with_strings("args", 257, 8), CORDON_E_LIMIT,
                   "args: 257 entries exceeds the limit of 256");
    expect_accepted(request_with_strings("outputs", 128, 8));
    expect_refusal(request_with_strings("outputs", 129, 8), CORDON_E_LIMIT,
                   "outputs: 129 entries exceeds the limit of 128");
}

Test(bundle, refuses_args_beyond_128_kib)
{
    /* 128 entries of 1023 bytes plus their NULs is exactly 128 KiB. */
    expect_accepted(request_with_strings("args", 128, 1023));
    expect_refusal(request_with_strings("args", 128, 1024), CORDON_E_LIMIT,
                   "args: 131200 bytes in total exceeds the limit of 131072");
}

struct language_case {
    const char *name;
    const char *canonical;   /* NULL: unknown */
};

static const struct language_case language_names_cases[] = {
    { "python", "python" }, { "py", "python" }, { "Python3", "python" }, { "PY", "python" },
    { "node", "node" }, { "nodejs", "node" }, { "JS", "node" }, { "javascript", "node" },
    { "go", "go" }, { "golang", "go" }, { "GoLang", "go" },
    { "cpp", "cpp" }, { "c++", "cpp" }, { "C++", "cpp" }, { "cplusplus", "cpp" },
    { "c", NULL }, { "", NULL }, { "python2", NULL }, { "rust", NULL }, { "node ", NULL },
    { "typescript", NULL }, { "pyth", NULL }, { "gol", NULL },
};

ParameterizedTestParameters(bundle, language_names)
{
    INDEX_PARAMS(language_names_cases);
}

ParameterizedTest(size_t *index, bundle, language_names)
{
    const struct language_case *c = &language_names_cases[*index];
    const char *got = cordon__language_canonical(c->name);

    if (c->canonical == NULL)
        cr_assert_null(got, "\"%s\" gave %s", c->name, got);
    else
        cr_assert_str_eq(got, c->canonical, "\"%s\"", c->name);
}

/* ---- bundles from a host path ------------------------------------------- */

static void write_at(const char *rel, const char *content, mode_t mode)
{
    char *path = NULL, *slash;

    cr_assert(asprintf(&path, "%s/%s", tmpdir, rel) > 0);
    /* Create the parents, one level at a time. */
    for (slash = strchr(path + strlen(tmpdir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    cr_assert_eq(test_write_file(path, content, strlen(content)), 0, "%s", path);
    cr_assert_eq(chmod(path, mode), 0);
    free(path);
}

static char *in_tmp(const char *rel)
{
    char *path = NULL;

    cr_assert(asprintf(&path, "%s/%s", tmpdir, rel) > 0);
    return path;
}

Test(bundle, from_path_single_file)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    const char *args[] = { "a b", "c" };
    const char *outputs[] = { "output/out.txt" };
    char *path = in_tmp("hello.py");

    write_at("hello.py", "print('hi')\n", 0755);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_path(path, NULL, args, 2, outputs, 1, &b, &err), 0, "%s",
                 err.message);
    cr_assert_str_eq(b->language, "python");
    cr_assert_str_eq(b->entrypoint, "hello.py");
    cr_assert_eq(b->n_files, 1);
    cr_assert(b->files[0].executable);
    cr_assert_str_eq(b->files[0].sha256, "caf026f25d7140209f98072605307a438914b9ce6f3c14b23d15d9667241de52");
    cr_assert_str_eq(b->args[0], "a b");
    cr_assert_str_eq(b->outputs[0], "out.txt");
    cordon__bundle_free(b);
    free(path);
}

Test(bundle, from_path_directory_matches_the_request_digest)
{
    struct cordon__bundle *b = NULL, *r;
    struct cordon_error err;
    char *dir = in_tmp("proj");

    write_at("proj/main.py", "print('hi')\n", 0644);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_path(dir, NULL, NULL, 0, NULL, 0, &b, &err), 0, "%s", err.message);
    cr_assert_str_eq(b->digest, MINIMAL_DIGEST);
    cordon__bundle_free(b);
    b = NULL;

    /* Nested files, read recursively, and an executable bit. */
    write_at("proj/lib/util.py", "X = 1\n", 0755);
    write_at("proj/data/deep/er/table.csv", "a,b\n", 0644);
    cr_assert_eq(cordon__bundle_from_path(dir, "python", NULL, 0, NULL, 0, &b, &err), 0, "%s", err.message);
    cr_assert_eq(b->n_files, 3);
    cr_assert_str_eq(b->files[0].path, "data/deep/er/table.csv");
    cr_assert_str_eq(b->files[1].path, "lib/util.py");
    cr_assert(b->files[1].executable);
    cr_assert_str_eq(b->files[2].path, "main.py");
    cr_assert_eq(b->total_bytes, 12 + 6 + 4);
    r = from_text("{\"files\":[{\"path\":\"main.py\",\"content\":\"print('hi')\\n\"},"
                  "{\"path\":\"lib/util.py\",\"content\":\"X = 1\\n\",\"executable\":true},"
                  "{\"path\":\"data/deep/er/table.csv\",\"content\":\"a,b\\n\"}]}", 0, &err);
    cr_assert_str_eq(b->digest, r->digest);
    cordon__bundle_free(b);
    cordon__bundle_free(r);
    free(dir);
}

struct detect_case {
    const char *files[3];
    const char *language;    /* given, or NULL */
    const char *entry;       /* expected; NULL: refused */
    const char *expected;    /* expected language, or the refusal's message part */
};

static const struct detect_case from_path_detects_language_cases[] = {
    { { "main.py", "x.txt" }, NULL, "main.py", "python" },
    { { "index.js", "lib.js" }, NULL, "index.js", "node" },
    { { "main.js", "index.js" }, NULL, "main.js", "node" },
    { { "main.go", "util.go" }, NULL, "main.go", "go" },
    { { "main.cc", "util.h" }, NULL, "main.cc", "cpp" },
    { { "main.cpp", "main.cc" }, NULL, "main.cpp", "cpp" },
    { { "main.py", "main.go" }, "golang", "main.go", "go" },
    { { "main.py", "main.go" }, "py", "main.py", "python" },
    { { "main.py", "main.go" }, NULL, NULL, "language: ambiguous" },
    { { "app.py", "util.py" }, NULL, NULL, "entrypoint: none given" },
    { { "main.py" }, "node", NULL, "no main.js or index.js" },
    { { "main.py" }, "perl", NULL, "language: \"perl\" is not supported" },
};

ParameterizedTestParameters(bundle, from_path_detects_language)
{
    INDEX_PARAMS(from_path_detects_language_cases);
}

ParameterizedTest(size_t *index, bundle, from_path_detects_language)
{
    const struct detect_case *c = &from_path_detects_language_cases[*index];
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    char *dir = in_tmp("d");
    int r;

    for (size_t i = 0; i < 3 && c->files[i] != NULL; i++) {
        char rel[64];

        snprintf(rel, sizeof(rel), "d/%s", c->files[i]);
        write_at(rel, "x", 0644);
    }
    cordon_error_init(&err);
    r = cordon__bundle_from_path(dir, c->language, NULL, 0, NULL, 0, &b, &err);
    if (c->entry != NULL) {
        cr_assert_eq(r, 0, "%s", err.message);
        cr_assert_str_eq(b->entrypoint, c->entry);
        cr_assert_str_eq(b->language, c->expected);
    } else {
        cr_assert_eq(r, CORDON_E_INVALID);
        cr_assert_null(b);
        cr_assert(strstr(err.message, c->expected) != NULL, "\"%s\" lacks \"%s\"", err.message,
                  c->expected);
    }
    cordon__bundle_free(b);
    free(dir);
}

Test(bundle, from_path_refuses_links_and_special_files)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    char *dir = in_tmp("p"), *link = in_tmp("p/sub/passwd"), *fifo = in_tmp("q/sub/pipe");
    char *qdir = in_tmp("q"), *ldir = in_tmp("r/lib"), *rdir = in_tmp("r");

    write_at("p/main.py", "x", 0644);
    write_at("p/sub/ok.txt", "x", 0644);
    cr_assert_eq(symlink("/etc/passwd", link), 0);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_path(dir, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_UNSAFE);
    cr_assert_null(b);
    cr_assert_str_eq(err.message, "bundle: sub/passwd is a symbolic link (refused; copy the file in)");

    write_at("q/main.py", "x", 0644);
    write_at("q/sub/ok.txt", "x", 0644);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cr_assert_eq(cordon__bundle_from_path(qdir, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "sub/pipe is a FIFO") != NULL, "%s", err.message);

    /* A linked directory is refused as well, not walked. */
    write_at("r/main.py", "x", 0644);
    cr_assert_eq(symlink(tmpdir, ldir), 0);
    cr_assert_eq(cordon__bundle_from_path(rdir, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "lib is a symbolic link") != NULL, "%s", err.message);

    /* The FIFO itself as the bundle path neither hangs nor is read. */
    cr_assert_eq(cordon__bundle_from_path(fifo, "python", NULL, 0, NULL, 0, &b, &err), CORDON_E_UNSAFE);
    free(dir);
    free(link);
    free(fifo);
    free(qdir);
    free(ldir);
    free(rdir);
}

Test(bundle, from_path_refuses_bad_arguments_and_limits)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    const char *bad_outputs[] = { "../escape" };
    char *file = in_tmp("main.py"), *missing = in_tmp("nope.py"), *ruby = in_tmp("main.rb");
    char *big = in_tmp("big.py");
    int fd;

    write_at("main.py", "x", 0644);
    write_at("main.rb", "x", 0644);
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_path(file, NULL, NULL, 0, bad_outputs, 1, &b, &err), CORDON_E_UNSAFE);
    cr_assert(strstr(err.message, "outputs[0]") != NULL, "%s", err.message);
    cr_assert_eq(cordon__bundle_from_path(missing, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_NOT_FOUND);
    cr_assert_eq(cordon__bundle_from_path(ruby, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_INVALID);
    cr_assert(strstr(err.message, "language: not given") != NULL, "%s", err.message);
    cr_assert_eq(cordon__bundle_from_path("", NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_INVALID);

    /* A sparse 17 MiB file is refused from its size, before reading. */
    fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 17 << 20), 0);
    close(fd);
    cr_assert_eq(cordon__bundle_from_path(big, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_LIMIT);
    cr_assert_str_eq(err.message, "files[0] (big.py): 17825792 bytes exceeds the per-file limit of 16777216");
    cr_assert_null(b);
    free(file);
    free(missing);
    free(ruby);
    free(big);
}

Test(bundle, from_path_stops_at_1025_files)
{
    struct cordon__bundle *b = NULL;
    struct cordon_error err;
    char *dir = in_tmp("many");

    write_at("many/main.py", "x", 0644);
    for (int i = 0; i < 1024; i++) {
        char rel[64];

        snprintf(rel, sizeof(rel), "many/d%d/f%d", i % 4, i);
        write_at(rel, "", 0644);
    }
    cordon_error_init(&err);
    cr_assert_eq(cordon__bundle_from_path(dir, NULL, NULL, 0, NULL, 0, &b, &err), CORDON_E_LIMIT);
    cr_assert(strstr(err.message, "exceeds the limit of 1024") != NULL, "%s", err.message);
    cr_assert_null(b);
    free(dir);
}
