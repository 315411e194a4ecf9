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

#define CORDON_ENV_MAX_VALUE (32u << 10)

/* True when name looks like it holds a credential. */
bool cordon__env_name_is_credential(const char *name);

/* Validate an environment object (NULL is fine: no variables): at most
 * CORDON_ENV_MAX string values, names well-formed and not
 * credential-looking, values without NUL and bounded. field names the
 * object in messages ("environment"). */
int cordon__env_validate(const char *field, const cJSON *env, struct cordon_error *err);

#endif
