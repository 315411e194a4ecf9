/*
 * sdk: the provision spec as a typed struct, read and written in one place.
 *
 * The spec crosses the ABI as JSON text (provider-abi.md §7.3): the host
 * writes one for each execution it provisions, every provider reads one.
 * cordon_spec_parse is the one reading, with every rule of the document
 * and the shared bounds of cordon/sdk/bounds.h; cordon_spec_print the one
 * writing, and it refuses a spec the parser would refuse, so the host
 * never sends what a provider must turn away. Inside a module the spec is
 * C fields.
 *
 * What stays the provider's: whether it takes an image at all and in
 * which grammar, how it splits disk_bytes, and when the deadline is
 * checked against the clock (cordon_spec_deadline, once any slow
 * preparation is done).
 *
 * Including this header needs cJSON's.
 */
#ifndef CORDON_SDK_SPEC_H
#define CORDON_SDK_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/provider.h>
#include <cordon/sdk/bounds.h>
#include <cordon/sdk/request.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the execution's files live (provider-abi.md §7.3). */
enum cordon_spec_layout {
    CORDON_SPEC_LAYOUT_CODE = 0,   /* "code": /workspace/{source,build,output,logs}, a run */
    CORDON_SPEC_LAYOUT_HOST = 1,   /* "host": /workspace as one tree, the host flow */
};

/* One provision's spec. Caller-owned: cordon_spec_init, then
 * cordon_spec_clear. The network is always "none": the only mode the
 * document defines, and the parser refuses any other. */
struct cordon_spec {
    char *image;                  /* malloc'd; NULL when the spec's is null, "" or absent */
    struct cordon_limits resources;   /* all six, within their bounds */
    struct cordon_env environment;    /* the variables of every exec */
    uint64_t expires_at_ms;       /* wall-clock Unix ms; 0 when the spec had none */
    enum cordon_spec_layout layout;   /* absent reads as code */
    /* cordon_execution_id_valid; the id, its NUL, and room to end the
     * struct on its alignment without padding */
    char execution_id[CORDON_EXECUTION_ID_MAX + 4];
};

CORDON_EXTERN void cordon_spec_init(struct cordon_spec *spec);
/* Free what spec holds; spec is as after init. NULL is fine. */
CORDON_EXTERN void cordon_spec_clear(struct cordon_spec *spec);

/* Set spec->image to a copy of image; NULL or "" leaves none.
 * CORDON_E_LIMIT past CORDON_IMAGE_REF_MAX bytes. */
CORDON_EXTERN int cordon_spec_set_image(struct cordon_spec *spec, const char *image,
                                        struct cordon_error *err);

/* "code" or "host". */
CORDON_EXTERN const char *cordon_spec_layout_name(enum cordon_spec_layout layout);
/* A layout as a document holds it, a spec's or a provider's own state's:
 * the string "code" or "host". Absent (item NULL) reads as code when
 * absent_ok; anything else is CORDON_E_INVALID naming field. */
CORDON_EXTERN int cordon_spec_layout_from_json(const cJSON *item, const char *field,
                                               bool absent_ok, enum cordon_spec_layout *ret,
                                               struct cordon_error *err);

/*
 * Parse spec text (borrowed, at most CORDON_SPEC_MAX bytes) into *ret,
 * which must be as after init; written only on success. The rules, each
 * refusal naming the field and the limit:
 *   execution_id   required, cordon_execution_id_check's grammar;
 *   image          a string, or null/absent (NULL); "" reads as null;
 *   resources      required, cordon_limits_from_json's rules;
 *   network        absent, or exactly {"mode": "none"}: another mode is
 *                  CORDON_E_UNSUPPORTED (refused, never downgraded),
 *                  another shape CORDON_E_INVALID;
 *   environment    an environment object or null/absent, each name once;
 *   layout         "code" or "host", or absent (code);
 *   expires_at_ms  a whole number of at least 1, or null/absent (0).
 * Other keys are ignored: a newer host may add optional ones. A malformed
 * document is CORDON_E_INVALID, a bound CORDON_E_LIMIT.
 */
CORDON_EXTERN int cordon_spec_parse(const char *json, struct cordon_spec *ret,
                                    struct cordon_error *err);

/* spec as spec text into *ret_json (malloc'd, free()), with every key
 * present and the network {"mode": "none"}. Refuses, with the parser's
 * error, a spec the parser would refuse. */
CORDON_EXTERN int cordon_spec_print(const struct cordon_spec *spec, char **ret_json,
                                    struct cordon_error *err);

/*
 * The deadline of the execution, read against now_ms (wall-clock Unix
 * ms): the spec's expires_at_ms, or now_ms + resources.runtime_ms when it
 * had none. CORDON_E_TIMEOUT, saying by how much, when it is not after
 * now_ms: a provider calls this once any slow preparation (an image's
 * first unpacking) is done, just before the sandbox comes to exist.
 */
CORDON_EXTERN int cordon_spec_deadline(const struct cordon_spec *spec, uint64_t now_ms,
                                       uint64_t *ret_ms, struct cordon_error *err);

/*
 * What a sandbox provider's state keeps of its spec, so that exec, import
 * and export read back exactly what provision was given. Caller-owned,
 * nothing to free.
 */
struct cordon_spec_state {
    struct cordon_limits resources;   /* the spec's, all six */
    uint64_t expires_at_ms;           /* the deadline cordon_spec_deadline gave, >= 1 */
    enum cordon_spec_layout layout;
};

/* Add "layout", "resources" and "expires_at_ms" to state (a JSON object,
 * borrowed). false when out of memory (state may then hold some). */
CORDON_EXTERN bool cordon_spec_state_add(cJSON *state, const struct cordon_spec_state *kept);

/* Read back what cordon_spec_state_add wrote into *ret (written only on
 * success): each key required, a refusal CORDON_E_INVALID naming
 * "state.layout", "state.resources..." or "state.expires_at_ms". */
CORDON_EXTERN int cordon_spec_state_from_json(const cJSON *state, struct cordon_spec_state *ret,
                                              struct cordon_error *err);

/* The provider's extend (provider.h, ABI 1.3) for what the state holds:
 * state_json (as cordon_spec_state_add wrote it, with the provider's own
 * keys) with expires_at_ms replaced, the rest as it was, into
 * *ret_state_json (host->alloc). A state that does not read back is
 * CORDON_E_INVALID naming the key. The sandbox is the provider's to move:
 * this changes the document only. */
CORDON_EXTERN int cordon_spec_state_set_deadline(const struct cordon_host_v1 *host,
                                                 const char *state_json, uint64_t expires_at_ms,
                                                 char **ret_state_json, struct cordon_error *err);

/* A state the host handed back: json, at most CORDON_STATE_MAX bytes, as
 * an object into *ret_doc (free with cJSON_Delete; NULL on failure) and
 * its "execution_id", checked against the grammar ("state.execution_id"),
 * into *ret_id (borrowed from the document). */
CORDON_EXTERN int cordon_spec_state_parse(const char *json, cJSON **ret_doc, const char **ret_id,
                                          struct cordon_error *err);

#ifdef __cplusplus
}
#endif
#endif
