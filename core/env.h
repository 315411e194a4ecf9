/*
 * core: environment variables that callers pass into a sandbox. Names are
 * [A-Za-z_][A-Za-z0-9_]*; a name that looks like a credential (TOKEN,
 * SECRET, PASSWORD, PASSWD, API KEY, ACCESS KEY, PRIVATE KEY, CREDENTIAL,
 * in any case and spelling: API_KEY, apiKey, X-Api-Key...) is refused, so
 * that secrets are not handed to untrusted code by accident.
 */
#ifndef CORDON_CORE_ENV_H
#define CORDON_CORE_ENV_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>
#include <cordon/sdk/bounds.h>

/*
 * Host policy, stricter than the sdk's bound on one value
 * (CORDON_ARG_BYTES_MAX, 128 KiB: what the kernel takes for one string): a
 * caller's variable is a setting, not a payload (data goes in as files),
 * so one variable takes at most 1/32 of the CORDON_ARGS_TOTAL_MAX that
 * argv and environment share (that total is held where the exec request
 * is written). json.md documents 32 KiB.
 */
#define CORDON_ENV_HOST_VALUE_MAX (CORDON_ARG_BYTES_MAX / 4)

/* True when name looks like it holds a credential. */
bool cordon__env_name_is_credential(const char *name);

/* Validate an environment object (NULL is fine: no variables): the sdk's
 * rule (cordon_env_object_check: at most CORDON_ENV_MAX string values
 * under well-formed names), then the host's own: no credential-looking
 * name, no value over CORDON_ENV_HOST_VALUE_MAX. field names the object in
 * messages ("environment"). */
int cordon__env_validate(const char *field, const cJSON *env, struct cordon_error *err);

#endif
