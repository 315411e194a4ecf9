/*
 * What the Docker daemon (or whatever answers on its socket) sends the
 * docker provider: the multiplexed exec stream, the head of the upgrade
 * reply, header lines, an error body; and what the provider parses for
 * the host: exec requests, and the tar streams it rewrites on their way
 * into and out of the container. The provider's own sources are compiled
 * in so that their static parsers are reached. First byte picks the
 * parser.
 */
#include "fuzz.h"

#include "plugins/docker/engine.c"
#include "plugins/docker/exec.c"

static void demux(const uint8_t *data, size_t size)
{
    struct cordon_exec_io io = { .abi_version = 1, .struct_size = sizeof(io),
                                 .stdin_fd = -1, .stdout_fd = fuzz_sink(), .stderr_fd = fuzz_sink(),
                                 .cancel_fd = -1 };
    struct pump p = { .io = &io, .deadline = UINT64_MAX, .holding = true };
    struct cordon_error err;
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;
    int r;

    /* Two reads, cut anywhere: a frame header may straddle them. */
    cordon_error_init(&err);
    r = feed(&p, (const char *)data, cut, &err);
    if (r == 0)
        r = feed(&p, (const char *)data + cut, size - cut, &err);
    if (r == 0 && p.holding)
        r = flush_held(&p, &err);
    fuzz_check_refusal(r, &err);
    /* Never more out than in. */
    if (lseek(io.stdout_fd, 0, SEEK_END) + lseek(io.stderr_fd, 0, SEEK_END) > (off_t)size)
        abort();
    close(io.stdout_fd);
    close(io.stderr_fd);
}

static void head(const uint8_t *data, size_t size)
{
    char *h, *rest = NULL;
    struct cordon_error err;
    int r;

    if (size > DK_STREAM_HEADER_MAX)
        size = DK_STREAM_HEADER_MAX;
    h = fuzz_text(data, size);
    /* dk__stream_open reads until the end of the headers first. */
    if (strstr(h, "\r\n\r\n") != NULL) {
        cordon_error_init(&err);
        r = stream_head(h, strlen(h), &rest, &err);
        fuzz_check_refusal(r, &err);
        if (r == 0 && (rest < h || rest > h + strlen(h)))
            abort();
    }
    free(h);
}

static void header(const uint8_t *data, size_t size)
{
    struct dk_reply reply = { 0 };
    char *line = fuzz_text(data, size);

    if (header_line(line, 1, size, &reply) != size || strlen(reply.api_version) >= 16)
        abort();
    free(line);
}

static void error_body(const uint8_t *data, size_t size)
{
    struct dk_reply reply = { .status = size > 0 ? 300 + data[0] : 500 };
    struct cordon_error err;

    reply.body = fuzz_text(data, size);
    reply.len = size;
    cordon_error_init(&err);
    if (dk__reply_error(&reply, "fuzz", &err) >= 0 || err.message[0] == '\0')
        abort();
    for (const char *c = err.message; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20)
            abort();
    free(reply.body);
}

static void request(const uint8_t *data, size_t size)
{
    struct dk_state st = { .uid = 100000, .gid = 100000, .code_layout = size > 0 && data[0] & 1 };
    struct dk_request rq = { 0 };
    struct cordon_error err;
    char *json = fuzz_text(data, size);
    int r;

    cordon_error_init(&err);
    r = request_parse(&st, json, size > 0 && data[0] & 2, &rq, &err);
    fuzz_check_refusal(r, &err);
    request_clear(&rq);
    free(json);
}

/* docker.so's import: the sdk's filter with the workspace-owner policy,
 * as dk__op_import_tar calls it. */
static void import_filter(const uint8_t *data, size_t size)
{
    const struct cordon_workspace_owner owner = { .code_layout = size > 0 && data[0] & 2,
                                                  .set_owner = true,
                                                  .uid = 100000, .gid = 100000 };
    const char *dest = size > 0 && data[0] & 1 ? "output/x" : "";
    struct cordon_error err;
    int in = fuzz_memfd(data, size), checked = fuzz_sink(), out = fuzz_sink(), r;

    cordon_error_init(&err);
    r = cordon_tar_filter_workspace_fd(in, checked, out, dest, &owner, 1 << 20, 512, &err);
    fuzz_check_refusal(r, &err);
    close(in);
    close(checked);
    close(out);
}

/* docker.so's export: the sdk's rewrite of the daemon's archive of root. */
static void export_filter(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t rlen = nul != NULL ? (size_t)(nul - data) : 0;
    char *root = fuzz_text(data, rlen);
    struct cordon_tar_export ex = { .struct_size = sizeof(ex), .max_bytes = 1 << 20,
                                    .max_entries = 512 };
    struct cordon_error err;
    int in, out = fuzz_sink(), r;

    in = nul != NULL ? fuzz_memfd(nul + 1, size - rlen - 1) : fuzz_memfd(data, size);
    ex.root = root[0] != '\0' ? root : "workspace";
    cordon_error_init(&err);
    r = cordon_tar_export_rewrite_fd(in, out, &ex, &err);
    fuzz_check_refusal(r, &err);
    close(in);
    close(out);
    free(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 6) {
    case 0: demux(data + 1, size - 1); break;
    case 1: head(data + 1, size - 1); break;
    case 2: header(data + 1, size - 1); break;
    case 3: error_body(data + 1, size - 1); break;
    case 4: request(data + 1, size - 1); break;
    default:
        if (data[0] & 0x80)
            export_filter(data + 1, size - 1);
        else
            import_filter(data + 1, size - 1);
        break;
    }
    return 0;
}
