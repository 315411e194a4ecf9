/*
 * core: language adapters. An adapter turns a bundle and the execution's
 * limits into a fixed argv plan (cordon(1), run): the model never supplies
 * a command, only the bundle's files and args.
 */
#ifndef CORDON_CORE_ADAPTER_H
#define CORDON_CORE_ADAPTER_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>
#include <cordon/sdk/request.h>
#include "core/bundle.h"
#include "core/limits.h"

/* One step of a plan; owned by the plan. */
struct cordon__step {
    char *name;              /* "build" | "run" */
    char **argv;             /* argc entries, NULL-terminated as well */
    size_t argc;
    char *cwd;               /* relative to the execution area: "source" */
};

/*
 * What to run, in order: zero or one build step, then the run step; the
 * caller stops at the first failing step. Owned; freed with
 * cordon__plan_free.
 */
struct cordon__plan {
    char *language;          /* canonical bundle language */
    char *toolchain;         /* canonical toolchain id: python node go c++ */
    char *min_version;       /* the adapter's floor or the bundle's stricter one; NULL: none */
    struct cordon__step *steps;
    size_t n_steps;
    cJSON *env;              /* object NAME -> value */
    cJSON *workspace_env;    /* object NAME -> path relative to the execution area; the
                                provider makes it absolute inside its workspace */
};

/*
 * Plan bundle b (borrowed) under limits (borrowed; NULL means the run
 * defaults of core/limits.h). env carries PATH and LANG, the values derived
 * from the limits so that toolchains agree with the pids and memory limits
 * (GOMAXPROCS, GOFLAGS=-p=N, MAKEFLAGS=-jN with N = max(1, floor(cpus)),
 * NODE_OPTIONS=--max-old-space-size=<3/4 of memory in MiB, at least 16>),
 * and the language's switches (python: PYTHONDONTWRITEBYTECODE,
 * PYTHONUNBUFFERED; go: GOTOOLCHAIN=local, CGO_ENABLED=0, GOPROXY=off).
 * workspace_env: HOME=build/home, TMPDIR=build/tmp, and for go
 * GOCACHE=build/gocache, GOPATH=build/gopath. No plan installs dependencies.
 * An unknown language is CORDON_E_UNSUPPORTED. *ret is freed with
 * cordon__plan_free.
 */
int cordon__adapter_plan(const struct cordon__bundle *b, const struct cordon_limits *limits,
                         struct cordon__plan **ret, struct cordon_error *err);

/* Free a plan; NULL is fine. */
void cordon__plan_free(struct cordon__plan *p);

/*
 * The exec request of step number step into *ret (as after
 * cordon_exec_request_init; the caller clears it): the step's argv and
 * cwd ("source"), the plan's env and workspace_env, timeout_ms. Every
 * member is a copy. CORDON_E_INVALID when step is out of range, else what
 * the request's bounds refuse (cordon/sdk/request.h).
 */
int cordon__plan_step_request(const struct cordon__plan *p, size_t step, uint64_t timeout_ms,
                              struct cordon_exec_request *ret, struct cordon_error *err);

#endif
