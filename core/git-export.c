/*
 * cordon-git-export: the tree of a git repository at a revision, as a tar
 * stream on stdout (core/gitws.c does the work).
 *
 *   cordon-git-export REPOSITORY REVISION MAX_BYTES MAX_ENTRIES
 *
 * On success it exits 0 and prints {"commit", "entries", "bytes",
 * "submodules"} on stderr; on failure it exits 1 and prints {"code",
 * "message"}. A helper process of its own keeps libgit2 (and what it links)
 * out of the cordon command and out of the host process that parses the
 * repository.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gitws.h"

static int report_error(const struct cordon_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(doc, "code", cordon_error_name(err->code));
    cJSON_AddNumberToObject(doc, "errno", err->code);
    cJSON_AddStringToObject(doc, "message", err->message);
    text = cJSON_PrintUnformatted(doc);
    if (text != NULL)
        fprintf(stderr, "%s\n", text);
    free(text);
    cJSON_Delete(doc);
    return 1;
}

int main(int argc, char **argv)
{
    struct cordon__git_export out;
    struct cordon_error err;
    unsigned long long max_bytes, max_entries;
    char *end1 = NULL, *end2 = NULL, *text;
    cJSON *doc;
    int r;

    cordon_error_init(&err);
    memset(&out, 0, sizeof(out));
    if (argc != 5) {
        cordon_error_set(&err, CORDON_E_INVALID, 0,
                         "usage: cordon-git-export REPOSITORY REVISION MAX_BYTES MAX_ENTRIES");
        return report_error(&err);
    }
    max_bytes = strtoull(argv[3], &end1, 10);
    max_entries = strtoull(argv[4], &end2, 10);
    if (*argv[3] == '\0' || *end1 != '\0' || *argv[4] == '\0' || *end2 != '\0') {
        cordon_error_set(&err, CORDON_E_INVALID, 0, "cordon-git-export: MAX_BYTES and MAX_ENTRIES are numbers");
        return report_error(&err);
    }
    /* A reader that stops early (a refused stream) is not our failure to report. */
    signal(SIGPIPE, SIG_IGN);
    r = cordon__git_export_tar(argv[1], argv[2], max_bytes, max_entries, 1, &out, &err);
    if (r < 0) {
        cordon__git_export_clear(&out);
        return report_error(&err);
    }
    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "commit", out.commit);
    cJSON_AddNumberToObject(doc, "entries", (double)out.entries);
    cJSON_AddNumberToObject(doc, "bytes", (double)out.bytes);
    cJSON_AddItemToObject(doc, "submodules",
                          out.submodules != NULL ? cJSON_Duplicate(out.submodules, 1) : cJSON_CreateArray());
    text = cJSON_PrintUnformatted(doc);
    if (text != NULL)
        fprintf(stderr, "%s\n", text);
    free(text);
    cJSON_Delete(doc);
    cordon__git_export_clear(&out);
    return 0;
}
