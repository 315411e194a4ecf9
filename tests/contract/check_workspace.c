/* cordon-contract: the workspace layout. Source stays read-only for the
 * sandboxed code, and exports never follow a link it planted. */
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "tests/contract/contract.h"

static const char original[] = "original source\n";

/* Regular files of a listing, as "a, b" into buf. */
static void regular_names(const struct contract_tar_entry *e, int n, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && len < size; i++)
        if (e[i].type == AE_IFREG)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", e[i].name);
}

Test(contract, source_is_read_only_in_code_layout)
{
    static const struct {
        const char *script;
        const char *what;
    } denied[] = {
        { "echo x > source/hello.txt", "overwrite a source file" },
        { "echo x > source/new.txt", "create a file in source/" },
        { "rm -f source/hello.txt", "delete a source file" },
        { "mv source s2", "rename source/ away" },
        { "chmod u+w source source/hello.txt && echo x > source/hello.txt",
          "chmod source writable" },
    };
    const char *files[] = { "hello.txt", original, NULL };
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    char msg[600], names[512];
    const char *state = contract_provision(NULL, "code");
    int tar, n;

    tar = contract_tar_of(files);
    cr_assert_eq(contract_import(state, "source", tar, msg, sizeof(msg)), 0,
                 "import_tar into source failed: %s", msg);
    close(tar);
    /* As the sandbox user: each attempt must run and fail. */
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        contract_sh(state, denied[i].script, &out);
        cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code != 0,
                  "the sandboxed code could %s (`%s` succeeded)", denied[i].what,
                  denied[i].script);
        cordon_exec_outcome_clear(&out);
    }
    contract_sh(state, "echo x > output/ok.txt", &out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "writing output/ok.txt failed (%s %d): output/ must be writable",
              cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);

    cr_assert_eq(contract_export(state, "source", &tar, msg, sizeof(msg)), 0,
                 "export_tar of source failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "the export of source is not a tar stream");
    regular_names(entries, n, names, sizeof(names));
    cr_expect(n == 1 && entries[0].type == AE_IFREG && strcmp(entries[0].name, "hello.txt") == 0 &&
                  strcmp(entries[0].data, original) == 0,
              "source/ changed: it holds [%s]", names);
    contract_tar_entries_free(entries, n);

    cr_assert_eq(contract_export(state, "output", &tar, msg, sizeof(msg)), 0,
                 "export_tar of output failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "the export of output is not a tar stream");
    regular_names(entries, n, names, sizeof(names));
    cr_expect(n == 1 && entries[0].type == AE_IFREG && strcmp(entries[0].name, "ok.txt") == 0 &&
                  strcmp(entries[0].data, "x\n") == 0,
              "the export of output/ should hold ok.txt only, it holds [%s]", names);
    contract_tar_entries_free(entries, n);
}

Test(contract, export_never_follows_a_planted_symlink)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    char msg[600];
    const char *state = contract_provision(NULL, "code");
    bool link_seen = false;
    int tar, n, r;

    contract_sh(state, "ln -s /etc/passwd output/leak && ln -s /etc output/etcdir", &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "planting symlinks in output/ failed (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cordon_exec_outcome_clear(&out);

    /* Refusing the export is as good as exporting the links as links. */
    r = contract_export(state, "output", &tar, msg, sizeof(msg));
    if (r < 0) {
        cr_log_info("export_tar refused output/ holding a planted symlink: %s", msg);
        return;
    }
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "the export of output is not a tar stream");
    for (int i = 0; i < n; i++) {
        const struct contract_tar_entry *e = &entries[i];

        /* Every passwd file starts with root's line, in any image. */
        cr_expect(e->type != AE_IFREG || strstr(e->data, "root:") == NULL,
                  "the export holds %s with /etc/passwd's bytes: a planted link was followed",
                  e->name);
        cr_expect(strncmp(e->name, "etcdir/", 7) != 0,
                  "the export descends into the planted directory link (%s)", e->name);
        if (strcmp(e->name, "leak") == 0) {
            cr_expect_eq(e->type, AE_IFLNK, "output/leak is exported as type %o, not a symlink",
                         e->type);
            link_seen = true;
        }
    }
    cr_expect(link_seen, "the export neither refused nor listed the symlink output/leak");
    contract_tar_entries_free(entries, n);
}

/* import_files (ABI 1.1, optional): a manifest and its bytes land where
 * import_tar would put them, as read-only source; a name that climbs out
 * is refused and nothing lands outside. */
static int import_files(const char *state, const char *json, const char *bytes, char *msg,
                        size_t size)
{
    struct cordon_error err;
    int fd = contract_temp_fd(), r;

    cr_assert_eq(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    cordon_error_init(&err);
    r = contract.vt.import_files(contract.resource, state, "source", json, fd, &err);
    snprintf(msg, size, "%s: %s", cordon_error_name(r), err.message);
    close(fd);
    return r;
}

Test(contract, import_files_lands_like_import_tar)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    const char *state;
    char msg[600], names[512];
    int tar, n;

    contract_load();
    if (contract.vt.import_files == NULL)
        contract_skip("the provider has no import_files (optional since ABI 1.1)");
    state = contract_provision(NULL, "code");
    cr_assert_eq(import_files(state, "{\"files\":[{\"path\":\"hello.txt\",\"size\":16,\"mode\":420},"
                                     "{\"path\":\"pkg/run.sh\",\"size\":9,\"mode\":493}]}",
                              "original source\necho hi; ", msg, sizeof(msg)), 0,
                 "import_files into source failed: %s", msg);
    contract_sh(state, "cat source/hello.txt && sh source/pkg/run.sh && "
                       "! (echo x > source/hello.txt) 2>/dev/null", &out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "the landed files are not readable, or source/hello.txt is writable (%s %d)",
              cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);

    cr_assert_eq(import_files(state, "{\"files\":[{\"path\":\"../escape\",\"size\":1,\"mode\":420}]}",
                              "x", msg, sizeof(msg)), CORDON_E_UNSAFE,
                 "import_files of ../escape was not refused as unsafe: %s", msg);
    cr_assert_eq(contract_export(state, "", &tar, msg, sizeof(msg)), 0,
                 "export_tar of the workspace failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "the export of the workspace is not a tar stream");
    regular_names(entries, n, names, sizeof(names));
    cr_expect(strcmp(names, "source/hello.txt, source/pkg/run.sh") == 0,
              "the workspace should hold source/hello.txt and source/pkg/run.sh only, it holds [%s]",
              names);
    contract_tar_entries_free(entries, n);
}
