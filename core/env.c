/* core: validation of environment variables handed to sandboxes. */
#include <ctype.h>
#include <string.h>

#include "core/env.h"

bool cordon__env_name_is_credential(const char *name)
{
    /* Compare on the name folded to lowercase letters and digits only, so
     * that API_KEY, ApiKey, api-key and API__KEY all read "apikey". */
    static const char *const words[] = { "token", "secret", "password", "passwd", "apikey",
                                         "accesskey", "privatekey", "credential" };
    char folded[CORDON_ENV_NAME_MAX + 1];
    size_t n = 0;

    for (const char *p = name; *p != '\0' && n < CORDON_ENV_NAME_MAX; p++)
        if (isalnum((unsigned char)*p))
            folded[n++] = (char)tolower((unsigned char)*p);
    folded[n] = '\0';
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strstr(folded, words[i]) != NULL)
            return true;
    return false;
}

int cordon__env_validate(const char *field, const cJSON *env, struct cordon_error *err)
{
    const cJSON *v;
    int r;

    if (env == NULL || cJSON_IsNull(env))
        return 0;
    if ((r = cordon_env_object_check(env, field, err)) < 0)
        return r;
    cJSON_ArrayForEach(v, env) {
        if (cordon__env_name_is_credential(v->string))
            return cordon_error_set(err, CORDON_E_DENIED, 0,
                                    "%s.%s: looks like a credential (token, secret, password, API key, "
                                    "access key, private key, credential); secrets are not passed into sandboxes",
                                    field, v->string);
        if (strlen(v->valuestring) > CORDON_ENV_HOST_VALUE_MAX)
            return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s.%s: value longer than %u bytes", field,
                                    v->string, CORDON_ENV_HOST_VALUE_MAX);
    }
    return 0;
}
