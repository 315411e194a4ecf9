/* Unit tests of cordon/text.h (the escaper of untrusted text), of error
 * messages cut between characters, and of sdk/json.c's way in and way out
 * for such text. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/error.h>
#include <cordon/sdk/json.h>
#include <cordon/text.h>

/* Strict UTF-8 and no control character: what a terminal can show as is. */
static bool shows_safely(const char *s)
{
    if (!cordon_text_is_utf8(s, strlen(s)))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

struct escape_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    unsigned flags;
    const char *want;
};

static const struct escape_case escape_cases[] = {
    { "plain name.txt", 0, 0, "plain name.txt" },
    { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0, 0, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
    { "back\\slash \\x1b", 0, 0, "back\\slash \\x1b" }, /* not doubled: idempotent */
    /* C0 controls and ESC: cursor, title, screen, hidden text */
    { "a\x1b[8mb", 0, 0, "a\\x1b[8mb" },
    { "\x1b]0;pwned\x07", 0, 0, "\\x1b]0;pwned\\x07" },
    { "\x1b[2J\x1b[H", 0, 0, "\\x1b[2J\\x1b[H" },
    { "cordon: success\r\n", 0, 0, "cordon: success\\x0d\\x0a" },
    { "tab\there\x08", 0, 0, "tab\\x09here\\x08" },
    { "a\0b", 3, 0, "a\\x00b" },
    { "del\x7f", 0, 0, "del\\x7f" },
    /* program output keeps its lines, nothing else */
    { "line\r\n\tnext\x1b[31m\n", 0, CORDON_TEXT_KEEP_LINES, "line\r\n\tnext\\x1b[31m\n" },
    /* C1 controls: as characters (UTF-8) and as raw 8-bit bytes */
    { "\xc2\x9b" "2J", 0, 0, "\\u009b2J" },
    { "\xc2\x85", 0, 0, "\\u0085" },
    { "\x9b" "2J", 0, 0, "\\x9b2J" },
    /* invalid UTF-8: every byte shown, the next one read afresh */
    { "\xff", 0, 0, "\\xff" },
    { "a\xfe\xff" "b", 0, 0, "a\\xfe\\xffb" },
    { "\xc0\xaf", 0, 0, "\\xc0\\xaf" },             /* overlong "/" */
    { "\xe0\x80\xaf", 0, 0, "\\xe0\\x80\\xaf" },    /* overlong, three bytes */
    { "\xed\xa0\x80", 0, 0, "\\xed\\xa0\\x80" },    /* a surrogate */
    { "\xf4\x90\x80\x80", 0, 0, "\\xf4\\x90\\x80\\x80" }, /* above U+10FFFF */
    { "\xe2\x82", 0, 0, "\\xe2\\x82" },             /* a cut sequence */
    { "\xe2\x82" "A", 0, 0, "\\xe2\\x82A" },
    /* characters that reorder or break a line */
    { "evil\xe2\x80\xae" "txt.exe", 0, 0, "evil\\u202etxt.exe" },
    { "\xe2\x81\xa6x\xe2\x81\xa9", 0, 0, "\\u2066x\\u2069" },
    { "a\xe2\x80\xa8" "b", 0, 0, "a\\u2028b" },
};

ParameterizedTestParameters(text, escape)
{
    static size_t idx[sizeof(escape_cases) / sizeof(escape_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, text, escape)
{
    const struct escape_case *c = &escape_cases[*at];
    size_t len = c->len != 0 ? c->len : strlen(c->in), used = 0, n;
    char out[256], again[256];

    n = cordon_text_escape(out, sizeof(out), c->in, len, c->flags, &used);
    cr_expect_str_eq(out, c->want, "row %zu", *at);
    cr_expect_eq(n, strlen(c->want));
    cr_expect_eq(used, len, "all of the input was consumed");
    cr_expect(cordon_text_is_utf8(out, n), "row %zu: the result is strict UTF-8", *at);
    if (c->flags == 0)
        cr_expect(shows_safely(out), "row %zu: no control character is left", *at);
    /* Escaping an escaped text changes nothing. */
    cordon_text_escape(again, sizeof(again), out, n, c->flags, NULL);
    cr_expect_str_eq(again, out, "row %zu: escaping is idempotent", *at);
}

struct utf8_case {
    const char *in;
    bool valid;
};

static const struct utf8_case utf8_cases[] = {
    { "", true }, { "ascii", true }, { "\xc3\xa9", true }, { "\xe2\x82\xac", true },
    { "\xf0\x9f\x98\x80", true }, { "\xf4\x8f\xbf\xbf", true }, { "\xef\xbf\xbf", true },
    { "\xff", false }, { "\xc3", false }, { "\xc0\x80", false }, { "\xc1\xbf", false },
    { "\xe0\x9f\xbf", false }, { "\xed\xbf\xbf", false }, { "\xf0\x8f\xbf\xbf", false },
    { "\xf4\x90\x80\x80", false }, { "\xf5\x80\x80\x80", false }, { "\x80", false },
    { "\xe2\x82", false }, { "a\xe2\x82\xac\xe2", false },
};

ParameterizedTestParameters(text, strict_utf8)
{
    static size_t idx[sizeof(utf8_cases) / sizeof(utf8_cases[0])];

    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *at, text, strict_utf8)
{
    cr_expect_eq(cordon_text_is_utf8(utf8_cases[*at].in, strlen(utf8_cases[*at].in)),
                 utf8_cases[*at].valid, "row %zu", *at);
}

/* A character or an escape that does not fit is left out whole. */
Test(text, escape_never_cuts_a_character_or_an_escape)
{
    const char *euro = "ab\xe2\x82\xac";
    char out[16];
    size_t used;

    cr_expect_eq(cordon_text_escape(out, 5, euro, strlen(euro), 0, &used), 2u);
    cr_expect_str_eq(out, "ab");
    cr_expect_eq(used, 2u);
    cr_expect_eq(cordon_text_escape(out, 6, euro, strlen(euro), 0, &used), 5u);
    cr_expect_str_eq(out, euro);
    cr_expect_eq(cordon_text_escape(out, 5, "a\x1b", 2, 0, &used), 1u);
    cr_expect_str_eq(out, "a", "\\x1b needs four bytes and the NUL");
    cr_expect_eq(used, 1u);
    cr_expect_eq(cordon_text_escape(out, 6, "a\x1b", 2, 0, &used), 5u);
    cr_expect_str_eq(out, "a\\x1b");
    cr_expect_eq(cordon_text_escape(out, 0, "a", 1, 0, &used), 0u);
    cr_expect_eq(used, 0u);
}

/* For "%.*s" in place of "%.300s": the prefix never ends inside a character. */
Test(text, fit_backs_off_a_cut_character)
{
    static const char s[16] = "aaa\xe2\x82\xac" "b";

    cr_expect_eq(cordon_text_fit(s, 3), 3);
    cr_expect_eq(cordon_text_fit(s, 4), 3);
    cr_expect_eq(cordon_text_fit(s, 5), 3);
    cr_expect_eq(cordon_text_fit(s, 6), 6);
    cr_expect_eq(cordon_text_fit(s, 10), 7);
    cr_expect_eq(cordon_text_fit("\xf0\x9f\x98\x80", 3), 0);
    cr_expect_eq(cordon_text_utf8_end("x\xf0\x9f\x98", 4), 1u);
    cr_expect_eq(cordon_text_utf8_end("x\xf0\x9f\x98\x80", 5), 5u);
}

/* A message longer than the 512 bytes of struct cordon_error with a
 * character across the boundary: cut before the character. */
Test(text, error_message_is_cut_between_characters)
{
    struct cordon_error err;
    char name[600];

    memset(name, 'a', 500);
    strcpy(name + 500, "\xe2\x82\xac tail");
    cordon_error_init(&err);
    /* "x: " + 500 + the euro at bytes 503..505; with 512 bytes the cut is
     * at 511: try every offset of the euro across the boundary. */
    for (int pad = 0; pad < 4; pad++) {
        cr_assert_eq(cordon_error_set(&err, CORDON_E_INVALID, 0, "x: %.*s%s", 5 + pad, "zzzzzzzz",
                                      name),
                     CORDON_E_INVALID);
        cr_expect(cordon_text_is_utf8(err.message, strlen(err.message)), "pad %d: \"%s\"", pad,
                  err.message);
        cr_expect_lt(strlen(err.message), sizeof(err.message));
    }
}

/* A name full of control characters expands fourfold when escaped; the
 * message still ends on a whole escape. */
Test(text, error_message_escapes_names)
{
    struct cordon_error err;
    char name[300];
    size_t len;

    memset(name, '\x1b', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    cordon_error_init(&err);
    cordon_error_set(&err, CORDON_E_UNSAFE, 0, "outputs: %s is a fifo", name);
    len = strlen(err.message);
    cr_expect(shows_safely(err.message), "%s", err.message);
    cr_expect_eq(strncmp(err.message, "outputs: \\x1b\\x1b", 17), 0, "%s", err.message);
    cr_expect_eq(strcmp(err.message + len - 7, "\\x1b" CORDON_TEXT_CUT_MARK), 0,
                 "ends on a whole escape, marked as cut: %s", err.message + len - 10);
    cordon_error_set(&err, CORDON_E_UNSAFE, 0, "tar entry \"%s\": %s", "\x1b]0;t\x07\xff",
                     "FIFOs are not allowed");
    cr_expect_str_eq(err.message, "tar entry \"\\x1b]0;t\\x07\\xff\": FIFOs are not allowed");
}

/* The way in: provider text added to JSON is escaped and bounded. */
Test(json, add_text_escapes_and_bounds)
{
    cJSON *doc = cJSON_CreateObject(), *back;
    char *big = malloc(20000), *text;

    cr_assert_not_null(cordon_json_add_text(doc, "message", "fifo \x1b[2J\xff\xc2\x9b here"));
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "message")->valuestring,
                     "fifo \\x1b[2J\\xff\\u009b here");
    memset(big, '\x07', 19999);
    big[19999] = '\0';
    cr_assert_not_null(cordon_json_add_text(doc, "big", big));
    cr_expect_leq(strlen(cJSON_GetObjectItem(doc, "big")->valuestring), (size_t)CORDON_JSON_TEXT_MAX);
    cr_assert_not_null(cordon_json_add_text(doc, "none", NULL));
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "none")->valuestring, "");
    text = cJSON_PrintUnformatted(doc);
    cr_expect(cordon_text_is_utf8(text, strlen(text)));
    back = cJSON_Parse(text);
    cr_expect(shows_safely(cJSON_GetObjectItem(back, "message")->valuestring));
    cJSON_Delete(back);
    cJSON_Delete(doc);
    free(text);
    free(big);
}

/* The way out: a document with invalid UTF-8 anywhere leaves strict UTF-8;
 * valid text (program output with its control characters) is untouched. */
Test(json, sanitize_makes_every_string_utf8)
{
    cJSON *doc = cJSON_Parse("{\"facts\": {\"reason\": \"x\", \"list\": [\"y\"]}, \"stdout\": \"z\"}");
    char *text;

    cr_assert_not_null(doc);
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "facts"), "reason"),
                         "ready\xff\xfe");
    cJSON_SetValuestring(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "facts"), "list"), 0),
                         "\xe2\x82");
    cJSON_SetValuestring(cJSON_GetObjectItem(doc, "stdout"), "red \x1b[31m\n");
    cJSON_AddStringToObject(cJSON_GetObjectItem(doc, "facts"), "k\xff", "v");
    cr_expect_eq(cordon_json_sanitize(doc), 3u);
    text = cJSON_PrintUnformatted(doc);
    cr_expect(cordon_text_is_utf8(text, strlen(text)), "%s", text);
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "facts"), "reason")->valuestring,
                     "ready\\xff\\xfe");
    cr_expect_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "facts"), "k\\xff"));
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "stdout")->valuestring, "red \x1b[31m\n",
                     "valid UTF-8 is data and stays as it is");
    cr_expect_eq(cordon_json_sanitize(doc), 0u, "a second pass has nothing to do");
    cJSON_Delete(doc);
    free(text);
}

/* A message that does not fit ends at a word, with the mark. */
Test(text, error_message_is_cut_at_a_word_and_marked)
{
    struct cordon_error err;
    char words[1200];
    size_t len, i;

    words[0] = '\0';
    for (i = 0; strlen(words) + 12 < sizeof(words); i++)
        strcat(words, i % 2 ? "bravo " : "alphabet ");
    cordon_error_init(&err);
    cordon_error_set(&err, CORDON_E_INVALID, 0, "field: %s", words);
    len = strlen(err.message);
    cr_assert_lt(len, sizeof(err.message));
    cr_assert_gt(len, sizeof(err.message) - 60, "cut too far back: %zu bytes", len);
    cr_assert_str_eq(err.message + len - 3, CORDON_TEXT_CUT_MARK, "%s", err.message);
    /* The word before the mark is whole. */
    err.message[len - 3] = '\0';
    cr_expect(strlen(err.message) > 6 &&
                  (strcmp(err.message + strlen(err.message) - 5, "bravo") == 0 ||
                   strcmp(err.message + strlen(err.message) - 8, "alphabet") == 0),
              "\"%s\"", err.message + strlen(err.message) - 20);

    /* One long token is cut between characters, and marked. */
    memset(words, 'z', 700);
    words[700] = '\0';
    cordon_error_set(&err, CORDON_E_INVALID, 0, "name \"%s\"", words);
    len = strlen(err.message);
    cr_assert_eq(len, sizeof(err.message) - 1, "%zu", len);
    cr_expect_str_eq(err.message + len - 3, CORDON_TEXT_CUT_MARK);

    /* A message that fits is left alone: no mark. */
    cordon_error_set(&err, CORDON_E_INVALID, 0, "field: %s", "short words");
    cr_expect_str_eq(err.message, "field: short words");

    /* Cut after escaping: a name of controls expands, the escapes stay whole. */
    memset(words, '\x01', 300);
    words[300] = '\0';
    cordon_error_set(&err, CORDON_E_INVALID, 0, "name %s end", words);
    len = strlen(err.message);
    cr_assert_lt(len, sizeof(err.message));
    cr_expect_str_eq(err.message + len - 3, CORDON_TEXT_CUT_MARK);
    cr_expect(cordon_text_is_utf8(err.message, len));
    cr_expect_eq((len - 3 - strlen("name ")) % 4, 0, "an escape was cut: \"%s\"", err.message);
}

Test(text, mark_cut_backs_off_only_within_a_window)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "%s", "one two three four five six seven eight nine ten eleven twelve");
    cordon_text_mark_cut(buf, 20);
    cr_expect_str_eq(buf, "one two three" CORDON_TEXT_CUT_MARK);
    snprintf(buf, sizeof(buf), "%s", "ab cd");
    cordon_text_mark_cut(buf, 4);
    cr_expect_str_eq(buf, "", "too small for the mark: nothing");
}

/* cordon_json_bool and cordon_json_strdup: a config key read once, for every provider. */
Test(text, json_bool_and_strdup_name_the_key)
{
    cJSON *doc = cJSON_Parse("{\"on\": true, \"off\": false, \"num\": 1, \"str\": \"x\","
                             " \"path\": \"/a/b\", \"nul\": null}");
    struct cordon_error err;
    bool b = false;
    char *s = NULL;

    cr_assert_not_null(doc);
    cordon_error_init(&err);
    cr_expect_eq(cordon_json_bool(cJSON_GetObjectItem(doc, "on"), "config", &b, &err), 0);
    cr_expect(b);
    cr_expect_eq(cordon_json_bool(cJSON_GetObjectItem(doc, "off"), "config", &b, &err), 0);
    cr_expect_not(b);
    b = true;
    cr_expect_eq(cordon_json_bool(cJSON_GetObjectItem(doc, "num"), "config", &b, &err),
                 CORDON_E_INVALID);
    cr_expect_str_eq(err.message, "config.num: must be true or false");
    cr_expect(b, "a refusal wrote its result");
    cr_expect_eq(cordon_json_bool(cJSON_GetObjectItem(doc, "str"), "config", &b, &err),
                 CORDON_E_INVALID);
    cr_expect_eq(cordon_json_bool(NULL, "config", &b, &err), CORDON_E_INVALID);

    cr_expect_eq(cordon_json_strdup(cJSON_GetObjectItem(doc, "str"), "config", &s, &err), 0);
    cr_expect_str_eq(s, "x");
    /* A second value replaces the first, which is freed (LSan would see it). */
    cr_expect_eq(cordon_json_strdup(cJSON_GetObjectItem(doc, "path"), "config", &s, &err), 0);
    cr_expect_str_eq(s, "/a/b");
    cr_expect_eq(cordon_json_strdup(cJSON_GetObjectItem(doc, "nul"), "config", &s, &err),
                 CORDON_E_INVALID);
    cr_expect_str_eq(err.message, "config.nul: must be a string");
    cr_expect_str_eq(s, "/a/b", "a refusal changed its result");
    cr_expect_eq(cordon_json_strdup(cJSON_GetObjectItem(doc, "on"), "state", &s, &err),
                 CORDON_E_INVALID);
    cr_expect_str_eq(err.message, "state.on: must be a string");
    free(s);
    cJSON_Delete(doc);
}
