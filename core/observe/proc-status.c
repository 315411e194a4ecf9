/* core: one field of a /proc status file (see proc-status.h). */
#include <string.h>

#include "core/observe/proc-status.h"

const char *cordon__status_value(const char *status, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);

    for (const char *line = status; line != NULL && *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t llen = nl != NULL ? (size_t)(nl - line) : strlen(line);

        if (llen > klen && memcmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            size_t vlen;

            while (v < line + llen && (*v == ' ' || *v == '\t'))
                v++;
            vlen = (size_t)(line + llen - v);
            if (vlen >= size)
                vlen = size - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return out;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return NULL;
}
