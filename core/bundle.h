/*
 * core: bundles, the immutable unit of code that a run executes: source
 * bytes, language, entrypoint, argv, declared outputs and toolchain floor,
 * named by a sha256 digest over their canonical JSON (json.md §5).
 */
#ifndef CORDON_CORE_BUNDLE_H
#define CORDON_CORE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>

/* Bounds on everything a bundle or a request carries (json.md §5). Its
 * args are held to the sdk's CORDON_ARGV_MAX entries and the host's
 * CORDON_HOST_ARGS_BYTES_MAX bytes in all (core/limits.h), as an exec's. */
#define CORDON_BUNDLE_MAX_FILES 1024
#define CORDON_BUNDLE_MAX_FILE_BYTES (16ull << 20)
#define CORDON_BUNDLE_MAX_BYTES (64ull << 20)
#define CORDON_BUNDLE_MAX_OUTPUTS 128

/* One source file. path is normalised and relative to source/. */
struct cordon__bundle_file {
    char *path;
    unsigned char *data;     /* len bytes (plus a NUL not counted) */
    size_t len;
    char sha256[65];         /* lowercase hex of data */
    bool executable;
};

/*
 * A validated bundle; every member is owned by the bundle and freed with
 * cordon__bundle_free. files are sorted by path and outputs by bytes, so
 * that iteration order is the digest's order.
 */
struct cordon__bundle {
    char *language;          /* canonical: python node go cpp */
    char *entrypoint;        /* normalised; equal to one files[i].path */
    char **args;
    size_t n_args;
    struct cordon__bundle_file *files;
    size_t n_files, files_cap;
    char **outputs;          /* normalised, relative to output/ ("r.txt", not "output/r.txt") */
    size_t n_outputs;
    char *min_version;       /* toolchain floor asked by the request ("3.10"), or NULL */
    char digest[72];         /* "sha256:<64 hex>" */
    char id[32];             /* "bundle-" + first 24 hex of the digest */
    uint64_t total_bytes;    /* sum of files[i].len */
};

/*
 * Build a bundle from a request object (borrowed):
 *   {"language": "python" | alias, "entrypoint": "main.py", "args": ["a", ...],
 *    "files": [{"path": "main.py", "content": "<UTF-8 text>" | "content_base64": "...",
 *               "executable": false}, ...],
 *    "outputs": ["result.txt", "output/plot.png", ...],
 *    "toolchain": {"min_version": "3.10"}}
 * "language" may be omitted when the entrypoint's extension names one;
 * "entrypoint" may be omitted when main.py/main.js/index.js/main.go/
 * main.cpp/main.cc for the language exists at the top. The run request's
 * own keys ("provider", "providers", "isolation", "limits", "timeout_ms",
 * "inputs", "workspace", "allow_unsafe_local", "image", "contract") are
 * accepted and ignored; any other key is CORDON_E_INVALID.
 * Refusals: CORDON_E_INVALID for wrong shapes ("args" as a string, ...),
 * CORDON_E_UNSAFE for paths that leave their root, CORDON_E_LIMIT for every
 * bound above; each message names the field, the value and the limit.
 * *ret is freed with cordon__bundle_free.
 */
int cordon__bundle_from_request(const cJSON *request, struct cordon__bundle **ret,
                                struct cordon_error *err);

/*
 * Build a bundle from the host path (borrowed strings throughout):
 * - a regular file: the bundle is that one file, the entrypoint its name;
 * - a directory: every regular file below it, recursively (symbolic links,
 *   devices, FIFOs and sockets are CORDON_E_UNSAFE naming the path); the
 *   entrypoint is the first of main.py, main.js, index.js, main.go,
 *   main.cpp, main.cc that exists at the top for the language.
 * language NULL: from the entrypoint's extension (.py python; .js .mjs .cjs
 * node; .go go; .cpp .cc .cxx .c++ cpp), or for a directory from which
 * main.* exists (more than one language is CORDON_E_INVALID).
 * The path given itself may be a symbolic link (it is the caller's own
 * argument); nothing below it may. Same limits as a request; reading stops
 * as soon as one is exceeded. outputs as in a request.
 */
int cordon__bundle_from_path(const char *path, const char *language, const char *const *args,
                             size_t n_args, const char *const *outputs, size_t n_outputs,
                             struct cordon__bundle **ret, struct cordon_error *err);

/* Free a bundle and everything it owns; NULL is fine. */
void cordon__bundle_free(struct cordon__bundle *b);

/*
 * The landing manifest (caller frees with cJSON_Delete; NULL on OOM):
 *   {"bundle_id", "bundle_digest", "language", "entrypoint",
 *    "files": [{"path", "sha256", "bytes", "role": "entrypoint" | "source"}],
 *    "declared_outputs": ["output/<p>", ...]}
 */
cJSON *cordon__bundle_manifest(const struct cordon__bundle *b);

/* Canonical language for a name or alias, case-insensitive:
 * python (py, python3), node (nodejs, js, javascript), go (golang),
 * cpp (c++, cplusplus). NULL when unknown. Returns a static string. */
const char *cordon__language_canonical(const char *name);

#endif
