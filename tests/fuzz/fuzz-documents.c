/*
 * The documents that cross the provider ABI, as the sdk reads and writes
 * them for host and providers alike: first byte 0 an exec request, 1 a
 * provision spec; the rest is the text. Every refusal names its field; a
 * document that parses prints, and what it prints parses to a struct that
 * prints the same text again (parse -> print -> parse round-trips).
 */
#include "fuzz.h"

#include <cordon/provider.h>
#include <cordon/sdk/request.h>

static void request(const char *text)
{
    struct cordon_exec_request rq, again;
    struct cordon_error err;
    char *printed = NULL, *reprinted = NULL;
    int r;

    cordon_error_init(&err);
    cordon_exec_request_init(&rq);
    r = cordon_exec_request_parse(text, &rq, &err);
    fuzz_check_refusal(r, &err);
    if (r < 0) {
        if (rq.argv != NULL || rq.cwd != NULL)
            abort();   /* a refusal leaves the result alone */
        return;
    }
    if (cordon_exec_request_print(&rq, &printed, &err) < 0)
        abort();       /* what parsed must print */
    cordon_exec_request_init(&again);
    if (cordon_exec_request_parse(printed, &again, &err) < 0 ||
        cordon_exec_request_print(&again, &reprinted, &err) < 0 ||
        strcmp(printed, reprinted) != 0 || again.argc != rq.argc ||
        strcmp(again.cwd, rq.cwd) != 0 || again.timeout_ms != rq.timeout_ms ||
        again.env.n != rq.env.n || again.workspace_env.n != rq.workspace_env.n)
        abort();
    for (size_t i = 0; i < rq.argc; i++)
        if (strcmp(rq.argv[i], again.argv[i]) != 0)
            abort();
    free(printed);
    free(reprinted);
    cordon_exec_request_clear(&again);
    cordon_exec_request_clear(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    if (size < 1)
        return 0;
    text = fuzz_text(data + 1, size - 1);
    switch (data[0] % 2) {
    case 0:
        request(text);
        break;
    default:
        break;
    }
    free(text);
    return 0;
}
