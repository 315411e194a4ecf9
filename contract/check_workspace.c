/* cordon-contract: the workspace layout. Source stays read-only for the
 * sandboxed code, exports never follow a link it planted, and disk_bytes
 * bounds everything the sandbox can store. */
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <cordon/sdk/facts.h>
#include "contract/fill.h"
#include "contract/contract.h"

static const char original[] = "original source\n";

/* Regular files of a listing, as "a, b" (every one: contract_text_clear). */
static struct contract_text regular_names(const struct contract_tar_entry *e, int n)
{
    struct contract_text names = { 0 };

    for (int i = 0; i < n; i++)
        if (e[i].type == AE_IFREG)
            contract_text_add(&names, "%s%s", names.len ? ", " : "", e[i].name);
    return names;
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
    struct contract_text names;
    char msg[600];
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
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
    names = regular_names(entries, n);
    cr_expect(n == 1 && entries[0].type == AE_IFREG && strcmp(entries[0].name, "hello.txt") == 0 &&
                  strcmp(entries[0].data, original) == 0,
              "source/ changed: it holds [%s]", CONTRACT_CLIP(contract_text_str(&names)));
    contract_text_clear(&names);
    contract_tar_entries_free(entries, n);

    cr_assert_eq(contract_export(state, "output", &tar, msg, sizeof(msg)), 0,
                 "export_tar of output failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "the export of output is not a tar stream");
    names = regular_names(entries, n);
    cr_expect(n == 1 && entries[0].type == AE_IFREG && strcmp(entries[0].name, "ok.txt") == 0 &&
                  strcmp(entries[0].data, "x\n") == 0,
              "the export of output/ should hold ok.txt only, it holds [%s]",
              CONTRACT_CLIP(contract_text_str(&names)));
    contract_text_clear(&names);
    contract_tar_entries_free(entries, n);
}

Test(contract, export_never_follows_a_planted_symlink)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    char msg[600];
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
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
    struct contract_text names;
    char msg[600];
    int tar, n;

    contract_load();
    if (contract.vt.import_files == NULL)
        contract_skip("the provider has no import_files (optional since ABI 1.1)");
    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_CODE);
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
    names = regular_names(entries, n);
    cr_expect(strcmp(contract_text_str(&names), "source/hello.txt, source/pkg/run.sh") == 0,
              "the workspace should hold source/hello.txt and source/pkg/run.sh only, it holds [%s]",
              CONTRACT_CLIP(contract_text_str(&names)));
    contract_text_clear(&names);
    contract_tar_entries_free(entries, n);
}

/* export_files (ABI 1.2, optional): exactly the named paths, a link as a
 * link, a missing name left out, nothing beside them (the run's collect
 * step reads only declared outputs through it). */
static int export_files(const char *state, const char *paths, int *ret_fd, char *msg, size_t size)
{
    struct cordon_error err;
    int fd = contract_temp_fd(), r;

    cordon_error_init(&err);
    r = contract.vt.export_files(contract.resource, state, paths, fd, &err);
    snprintf(msg, size, "%s: %s", cordon_error_name(r), err.message);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    *ret_fd = fd;
    return r;
}

/* An execution of layout to export from; skipped without the slot. */
static const char *export_files_provision(enum cordon_spec_layout layout)
{
    contract_load();
    if (contract.vt.export_files == NULL)
        contract_skip("the provider has no export_files (optional since ABI 1.2)");
    return contract_provision(NULL, layout);
}

Test(contract, export_files_reads_only_the_named_paths)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    bool file_seen = false, link_seen = false;
    const char *state;
    char msg[600];
    int tar, n;

    state = export_files_provision(CORDON_SPEC_LAYOUT_CODE);
    contract_sh(state, "mkdir -p output/scratch && : > output/scratch/1 && : > output/scratch/2 && "
                       "echo 42 > output/r.txt && ln -s /etc/passwd output/leak && "
                       "mkfifo output/pipe", &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "could not lay out output/ (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cr_assert_eq(export_files(state, "[\"output/r.txt\", \"output/leak\", \"output/none\"]", &tar,
                              msg, sizeof(msg)), 0,
                 "export_files of a file, a link and a missing name failed (a FIFO lies beside "
                 "them): %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_assert(n >= 0, "export_files did not write a tar stream");
    for (int i = 0; i < n; i++) {
        const struct contract_tar_entry *e = &entries[i];

        if (strcmp(e->name, "output/r.txt") == 0) {
            cr_expect(e->type == AE_IFREG && e->data != NULL && strcmp(e->data, "42\n") == 0,
                      "output/r.txt is exported as type %o with other bytes", e->type);
            file_seen = true;
        } else if (strcmp(e->name, "output/leak") == 0) {
            cr_expect_eq(e->type, AE_IFLNK, "output/leak is exported as type %o, not a symlink",
                         e->type);
            link_seen = true;
        } else {
            cr_expect_fail("export_files wrote %s, which was not asked for", e->name);
        }
    }
    cr_expect(file_seen, "export_files left out output/r.txt");
    cr_expect(link_seen, "export_files left out the symlink output/leak");
    contract_tar_entries_free(entries, n);

    cr_expect_lt(export_files(state, "[\"../escape\"]", &tar, msg, sizeof(msg)), 0,
                 "export_files of ../escape was not refused");
    close(tar);
}

/* `cordon files get` asks for any path of a host-flow workspace, one at its
 * top level too: a file there is exported as itself, a link as a link. */
Test(contract, export_files_reads_a_top_level_file)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    const char *state;
    char msg[600];
    int tar, n;

    state = export_files_provision(CORDON_SPEC_LAYOUT_HOST);
    contract_sh(state, "echo 7 > top.txt && ln -s /etc/passwd top.lnk", &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0, "could not write top.txt");
    cr_assert_eq(export_files(state, "[\"top.txt\"]", &tar, msg, sizeof(msg)), 0,
                 "export_files of a top-level file failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_expect(n == 1 && strcmp(entries[0].name, "top.txt") == 0 && entries[0].type == AE_IFREG &&
                  entries[0].data != NULL && strcmp(entries[0].data, "7\n") == 0,
              "export_files of the top-level file top.txt wrote %d entries, not that file alone", n);
    contract_tar_entries_free(entries, n);
    cr_assert_eq(export_files(state, "[\"top.lnk\"]", &tar, msg, sizeof(msg)), 0,
                 "export_files of a top-level link failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    close(tar);
    cr_expect(n == 1 && strcmp(entries[0].name, "top.lnk") == 0 && entries[0].type == AE_IFLNK,
              "export_files of the top-level link top.lnk wrote %d entries, not that link alone", n);
    contract_tar_entries_free(entries, n);
}

/* Rounding of a tmpfs size up to a whole page, per mount: 64 KiB covers
 * the largest pages Linux uses. */
#define DISK_SLACK_PER_MOUNT (64u << 10)

static bool list_has(const cJSON *list, const char *name)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, list)
        if (cJSON_IsString(item) && strcmp(item->valuestring, name) == 0)
            return true;
    return false;
}

/*
 * disk_bytes is everything the sandbox can store: the sandboxed code
 * writes zeros into every tmpfs it can write to (/workspace, /tmp,
 * /dev/shm, whatever the provider mounts), keeping every file until all
 * are full, and the total must stay within disk_bytes. A workspace of
 * disk_bytes with a /tmp and a /dev/shm of their own on top would let
 * --disk 64M store 192 MB, in the host's memory. The fill writes at most
 * disk_bytes + 1 MiB in all, and only where the sandbox is seen to be
 * contained: through a provider that runs commands on the host it would
 * fill the host's /dev/shm.
 */
Test(contract, disk_budget_covers_every_writable_tmpfs)
{
    cJSON *facts = contract_require_contained(CONTRACT_HARM_FILL);
    struct cordon_exec_outcome out;
    const char *state;
    long long total, mounts;
    uint64_t slack;
    char *text, *script;

    if (!list_has(cJSON_GetObjectItemCaseSensitive(facts, "limits_enforced"), "disk_bytes")) {
        cJSON_Delete(facts);
        contract_skip("disk_bytes is not in limits_enforced: the provider promises no disk bound");
    }
    cJSON_Delete(facts);
    state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    script = test_fill_tmpfs_script(CONTRACT_FILL_TAG, CONTRACT_DISK_BYTES, "");
    cr_assert_not_null(script, "out of memory for the fill script");
    contract_sh_contained(state, CONTRACT_HARM_FILL, script, &out);
    free(script);
    text = contract_stream_text(&out.out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "the fill script did not finish (%s %d): %s", cordon_run_status_name(out.status),
              out.exit_code, text);
    total = test_fill_value(text, "total");
    mounts = test_fill_value(text, "mounts");
    cr_assert(total >= 0 && mounts >= 0, "the fill script printed no total: %s", text);
    cr_log_info("%lld bytes in %lld writable tmpfs mounts, disk_bytes %llu:\n%s", total, mounts,
                (unsigned long long)CONTRACT_DISK_BYTES, text);
    /* The slack stays under the fill's margin, or a sandbox that stores
     * without bound would pass at the fill's cap. */
    slack = (uint64_t)mounts * DISK_SLACK_PER_MOUNT;
    if (slack > TEST_FILL_MARGIN_BYTES - TEST_FILL_BLOCK_BYTES)
        slack = TEST_FILL_MARGIN_BYTES - TEST_FILL_BLOCK_BYTES;
    cr_expect_leq(total, (long long)(CONTRACT_DISK_BYTES + slack),
                  "the sandbox stored %lld bytes in %lld tmpfs mounts with disk_bytes %llu: %s", total,
                  mounts, (unsigned long long)CONTRACT_DISK_BYTES, text);
    free(text);
    cordon_exec_outcome_clear(&out);
}
