/*
 * The documents that cross the provider ABI, as the sdk reads and writes
 * them for host and providers alike: first byte 0 an exec request, 1 a
 * provision spec, 2 an exec result; the rest is the text. Every refusal names its field; a
 * document that parses prints, and what it prints parses to a struct that
 * prints the same text again (parse -> print -> parse round-trips).
 */
#include "fuzz.h"

#include <cordon/provider.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/spec.h>

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

static void spec(const char *text)
{
    struct cordon_spec sp, again;
    struct cordon_error err;
    char *printed = NULL, *reprinted = NULL;
    int r;

    cordon_error_init(&err);
    cordon_spec_init(&sp);
    r = cordon_spec_parse(text, &sp, &err);
    fuzz_check_refusal(r, &err);
    if (r < 0) {
        if (sp.execution_id[0] != '\0' || sp.image != NULL || sp.environment.n != 0)
            abort();   /* a refusal leaves the result alone */
        return;
    }
    if (!cordon_execution_id_valid(sp.execution_id) ||
        cordon_limits_validate("resources", &sp.resources, &err) < 0)
        abort();       /* what parsed holds the shared bounds */
    if (cordon_spec_print(&sp, &printed, &err) < 0)
        abort();       /* what parsed must print */
    cordon_spec_init(&again);
    if (cordon_spec_parse(printed, &again, &err) < 0 ||
        cordon_spec_print(&again, &reprinted, &err) < 0 || strcmp(printed, reprinted) != 0 ||
        strcmp(again.execution_id, sp.execution_id) != 0 || again.layout != sp.layout ||
        again.expires_at_ms != sp.expires_at_ms || again.environment.n != sp.environment.n ||
        (again.image == NULL) != (sp.image == NULL) ||
        (sp.image != NULL && strcmp(again.image, sp.image) != 0) ||
        memcmp(&again.resources, &sp.resources, sizeof(sp.resources)) != 0)
        abort();
    free(printed);
    free(reprinted);
    cordon_spec_clear(&again);
    cordon_spec_clear(&sp);
}

static void result(const char *text)
{
    static const struct cordon_host_v1 host = { .abi_version = CORDON_ABI_VERSION,
                                                .struct_size = sizeof(host), .alloc = malloc,
                                                .free = free };
    struct cordon_exec_result res, again;
    struct cordon_error err;
    char *printed = NULL, *reprinted = NULL;
    int r;

    cordon_error_init(&err);
    r = cordon_exec_result_parse(text, &res, &err);
    fuzz_check_refusal(r, &err);
    if (r < 0)
        return;
    if ((res.status == CORDON_RUN_EXITED && (res.exit_code < 0 || res.exit_code > 255)) ||
        (res.status == CORDON_RUN_SIGNALED && (res.signal < 1 || res.signal > 64)))
        abort();       /* what parsed holds the ABI's bounds */
    if (cordon_exec_result_print_host(&host, &res, &printed, &err) < 0 ||
        cordon_exec_result_parse(printed, &again, &err) < 0 ||
        cordon_exec_result_print_host(&host, &again, &reprinted, &err) < 0 ||
        strcmp(printed, reprinted) != 0 || memcmp(&res, &again, sizeof(res)) != 0)
        abort();       /* parse -> print -> parse round-trips */
    free(printed);
    free(reprinted);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    if (size < 1)
        return 0;
    text = fuzz_text(data + 1, size - 1);
    switch (data[0] % 3) {
    case 0:
        request(text);
        break;
    case 1:
        spec(text);
        break;
    default:
        result(text);
        break;
    }
    free(text);
    return 0;
}
