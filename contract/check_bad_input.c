/*
 * cordon-contract: bad input is refused with the code the ABI gives that
 * input (docs/provider-abi.md, error codes: CORDON_E_INVALID for a
 * malformed document, CORDON_E_UNSUPPORTED for a network mode the provider
 * cannot honour, CORDON_E_UNSAFE for a refused path or tar entry) and
 * leaves nothing behind; the same operation with good input still works,
 * so that a provider that refuses everything does not pass. One table per
 * operation: provision specs, exec requests, tar entries. Each row is a
 * check of its own, named TABLE__ROW ("bad_exec_request_is_refused__argv_empty"),
 * so that results, TAP and XML name the row that failed and --filter can
 * pick one; "TABLE*" selects the whole table.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "contract/contract.h"

/* ---- provision ----------------------------------------------------------- */

/* patch merged into doc as a JSON merge patch (RFC 7386): an object into
 * an object key by key, null deletes the key, anything else replaces it. */
static void merge_patch(cJSON *doc, const cJSON *patch)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, patch) {
        cJSON *have = cJSON_GetObjectItemCaseSensitive(doc, item->string);
        cJSON *copy;

        if (cJSON_IsObject(item) && cJSON_IsObject(have)) {
            merge_patch(have, item);
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(doc, item->string);
        if (cJSON_IsNull(item))
            continue;
        copy = cJSON_Duplicate(item, true);
        cr_assert_not_null(copy);
        cJSON_AddItemToObject(doc, item->string, copy);
    }
}

/* The good spec for id (the host's writing of it) with patch merged in:
 * only what the row breaks differs from a spec the host sends. malloc'd. */
static char *patched_spec(const char *id, const char *patch)
{
    char *good = contract_spec(id, CORDON_SPEC_LAYOUT_HOST), *text;
    cJSON *spec, *p;

    if (patch[0] == '!') {
        free(good);
        text = strdup(patch + 1);
        cr_assert(text != NULL);
        return text;
    }
    spec = cJSON_Parse(good);
    p = cJSON_Parse(patch);
    cr_assert(spec != NULL && cJSON_IsObject(p), "bad table row: %s", patch);
    merge_patch(spec, p);
    text = cJSON_PrintUnformatted(spec);
    cJSON_Delete(spec);
    cJSON_Delete(p);
    free(good);
    cr_assert(text != NULL);
    return text;
}

/* name: the row as messages say it; patch: a merge patch of the good spec
 * (null deletes a key), or after a "!" the raw text; code: the CORDON_E_*
 * the ABI gives this input. */
static void check_bad_spec(const char *name, const char *patch, int code)
{
    struct cordon_error err;
    char id[48], msg[600], *spec;
    const char *state = NULL;
    int r;

    contract_new_id(id, sizeof(id));
    spec = patched_spec(id, patch);
    r = contract_try_provision(spec, &state, msg, sizeof(msg));
    free(spec);
    cr_expect_lt(r, 0, "provision with %s was accepted", name);
    if (r == 0)
        return;
    cr_expect_eq(r, code, "provision with %s was refused with %s, not %s (%s)", name,
                 cordon_error_name(r), cordon_error_name(code), msg);
    cr_log_info("%s refused: %s", name, msg);
    /* Nothing remains: the id can be reclaimed and used again. */
    cordon_error_init(&err);
    cr_expect_eq(contract.vt.reclaim(contract.resource, id, &err), 0,
                 "reclaim after refusing a provision with %s failed: %s", name, err.message);
    spec = contract_spec(id, CORDON_SPEC_LAYOUT_HOST);
    r = contract_try_provision(spec, &state, msg, sizeof(msg));
    free(spec);
    cr_expect_eq(r, 0, "provision with the id of the spec with %s failed afterwards: %s", name,
                 msg);
}


#define BAD_SPEC(label, name, patch, code)                                       \
    Test(contract, bad_provision_spec_is_refused_and_leaves_nothing__##label) \
    {                                                                            \
        check_bad_spec(name, patch, code);                                       \
    }

BAD_SPEC(network_bridge, "network bridge", "{\"network\":{\"mode\":\"bridge\"}}", CORDON_E_UNSUPPORTED)
BAD_SPEC(network_host, "network host", "{\"network\":{\"mode\":\"host\"}}", CORDON_E_UNSUPPORTED)
BAD_SPEC(network_not_an_object, "network not an object", "{\"network\":\"none\"}", CORDON_E_INVALID)
BAD_SPEC(resources_missing, "resources missing", "{\"resources\":null}", CORDON_E_INVALID)
BAD_SPEC(pids_missing, "resources.pids missing", "{\"resources\":{\"pids\":null}}", CORDON_E_INVALID)
BAD_SPEC(memory_bytes_missing, "resources.memory_bytes missing",
         "{\"resources\":{\"memory_bytes\":null}}", CORDON_E_INVALID)
BAD_SPEC(resources_not_an_object, "resources not an object", "{\"resources\":\"small\"}", CORDON_E_INVALID)
BAD_SPEC(layout_unknown, "layout unknown", "{\"layout\":\"everything\"}", CORDON_E_INVALID)
BAD_SPEC(not_json, "spec not JSON", "!{\"execution_id\": ", CORDON_E_INVALID)

/* ---- exec ---------------------------------------------------------------- */

/* name: the row as messages say it; request: the exec request; code: the
 * CORDON_E_* the ABI gives this input. */
static void check_bad_request(const char *name, const char *request, int code)
{
    struct contract_exec opts;
    struct cordon_exec_outcome out;
    char msg[600];
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    int r;

    contract_exec_init(&opts);
    opts.request_json = request;
    r = contract_exec(state, NULL, &opts, &out, msg, sizeof(msg));
    cr_expect_lt(r, 0, "exec with %s was accepted (status %s, exit %d)", name,
                 cordon_run_status_name(out.status), out.exit_code);
    if (r < 0) {
        cr_expect_eq(r, code, "exec with %s was refused with %s, not %s (%s)", name,
                     cordon_error_name(r), cordon_error_name(code), msg);
        cr_log_info("%s refused: %s", name, msg);
    }
    cordon_exec_outcome_clear(&out);
    /* The refusal is about the request: the execution still runs a good
     * one, so that an exec that fails everything cannot pass this. */
    contract_sh(state, "exit 7", &out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 7,
              "after refusing %s, exec of `sh -c 'exit 7'` ended %s %d, not exited 7", name,
              cordon_run_status_name(out.status), out.exit_code);
    cordon_exec_outcome_clear(&out);
}


#define BAD_REQUEST(label, name, request, code)                 \
    Test(contract, bad_exec_request_is_refused__##label)        \
    {                                                           \
        check_bad_request(name, request, code);                 \
    }

BAD_REQUEST(argv_a_string, "argv a string",
            "{\"argv\":\"id\",\"cwd\":\".\",\"env\":{},\"timeout_ms\":5000}", CORDON_E_INVALID)
BAD_REQUEST(argv_empty, "argv empty",
            "{\"argv\":[],\"cwd\":\".\",\"env\":{},\"timeout_ms\":5000}", CORDON_E_INVALID)
BAD_REQUEST(argv_holding_a_number, "argv holding a number",
            "{\"argv\":[\"id\",3],\"cwd\":\".\",\"env\":{},\"timeout_ms\":5000}", CORDON_E_INVALID)
BAD_REQUEST(argv_missing, "argv missing", "{\"cwd\":\".\",\"env\":{},\"timeout_ms\":5000}",
            CORDON_E_INVALID)
BAD_REQUEST(cwd_leaving_the_workspace, "cwd leaving the workspace",
            "{\"argv\":[\"touch\",\"escaped\"],\"cwd\":\"../..\",\"env\":{},\"timeout_ms\":5000}",
            CORDON_E_UNSAFE)
BAD_REQUEST(cwd_absolute, "cwd absolute",
            "{\"argv\":[\"touch\",\"escaped\"],\"cwd\":\"/tmp\",\"env\":{},\"timeout_ms\":5000}",
            CORDON_E_UNSAFE)
BAD_REQUEST(not_json, "request not JSON", "{\"argv\": [", CORDON_E_INVALID)

/* ---- import_tar ---------------------------------------------------------- */

enum tar_attack {
    TAR_DOTDOT,
    TAR_DOTDOT_NESTED,
    TAR_ABSOLUTE,
    TAR_SYMLINK_UP,
    TAR_SYMLINK_ABSOLUTE,
    TAR_HARDLINK_OUT,
    TAR_FIFO,
    TAR_DEVICE,
    TAR_SETUID,
};

static void tar_entry(struct archive *a, const char *path, unsigned type, unsigned perm,
                      const char *data, const char *link)
{
    struct archive_entry *e = archive_entry_new();
    size_t len = data != NULL ? strlen(data) : 0;

    cr_assert(e != NULL);
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    archive_entry_set_size(e, (la_int64_t)len);
    if (type == AE_IFLNK)
        archive_entry_set_symlink(e, link);
    if (type == AE_IFREG && link != NULL) {
        archive_entry_set_hardlink(e, link);
        archive_entry_set_size(e, 0);
        len = 0;
    }
    if (type == AE_IFCHR) {
        archive_entry_set_rdevmajor(e, 1);
        archive_entry_set_rdevminor(e, 3);
    }
    cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK, "libarchive: %s",
                 archive_error_string(a));
    if (len > 0)
        cr_assert_eq(archive_write_data(a, data, len), (la_ssize_t)len);
    archive_entry_free(e);
}

/* A tar stream holding one hostile entry (libarchive directly: the sdk's
 * writer would refuse to write it). abs_path is used by TAR_ABSOLUTE. */
static int hostile_tar(enum tar_attack attack, const char *abs_path)
{
    struct archive *a = archive_write_new();
    int fd = contract_temp_fd();

    cr_assert(a != NULL);
    cr_assert_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK, "libarchive: %s",
                 archive_error_string(a));
    switch (attack) {
    case TAR_DOTDOT:
        tar_entry(a, "../evil", AE_IFREG, 0644, "evil\n", NULL);
        break;
    case TAR_DOTDOT_NESTED:
        tar_entry(a, "a/../../evil", AE_IFREG, 0644, "evil\n", NULL);
        break;
    case TAR_ABSOLUTE:
        tar_entry(a, abs_path, AE_IFREG, 0644, "evil\n", NULL);
        break;
    case TAR_SYMLINK_UP:
        tar_entry(a, "up", AE_IFLNK, 0777, NULL, "../../..");
        break;
    case TAR_SYMLINK_ABSOLUTE:
        tar_entry(a, "etc", AE_IFLNK, 0777, NULL, "/etc");
        break;
    case TAR_HARDLINK_OUT:
        tar_entry(a, "passwd", AE_IFREG, 0644, NULL, "/etc/passwd");
        break;
    case TAR_FIFO:
        tar_entry(a, "fifo", AE_IFIFO, 0644, NULL, NULL);
        break;
    case TAR_DEVICE:
        tar_entry(a, "null", AE_IFCHR, 0666, NULL, NULL);
        break;
    case TAR_SETUID:
        tar_entry(a, "suid", AE_IFREG, 04755, "#!/bin/sh\nid\n", NULL);
        break;
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK, "libarchive: %s", archive_error_string(a));
    archive_write_free(a);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/* name: the row as messages say it; attack: the hostile entry. */
static void check_bad_tar(const char *name, enum tar_attack attack)
{
    struct cordon_exec_outcome out;
    char abs_path[4096], msg[600];
    const char *state = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    const char *host_dir = contract_temp_dir(0755);
    struct stat st;
    int tar, r;

    /* Import below "in", so that one ".." too many lands in the workspace
     * root, where the suite can look. */
    contract_sh(state, "mkdir in", &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "before importing %s: mkdir in failed", name);
    cordon_exec_outcome_clear(&out);
    snprintf(abs_path, sizeof(abs_path), "%s/evil", host_dir);
    tar = hostile_tar(attack, abs_path);
    r = contract_import(state, "in", tar, msg, sizeof(msg));
    close(tar);
    cr_expect_lt(r, 0, "import_tar accepted %s", name);
    if (r < 0) {
        cr_expect_eq(r, CORDON_E_UNSAFE, "import_tar refused %s with %s, not %s (%s)", name,
                     cordon_error_name(r), cordon_error_name(CORDON_E_UNSAFE), msg);
        cr_log_info("%s refused: %s", name, msg);
    }
    cr_expect(lstat(abs_path, &st) != 0 && errno == ENOENT,
              "import_tar of %s wrote %s on the host", name, abs_path);
    contract_sh(state, "test ! -e evil && test ! -e in/evil", &out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "import_tar of %s wrote outside its destination", name);
    cordon_exec_outcome_clear(&out);
}

#define BAD_TAR(label, name, attack)                     \
    Test(contract, unsafe_tar_entry_is_refused__##label) \
    {                                                    \
        check_bad_tar(name, attack);                     \
    }

BAD_TAR(dotdot, "an entry named ../evil", TAR_DOTDOT)
BAD_TAR(dotdot_nested, "an entry named a/../../evil", TAR_DOTDOT_NESTED)
BAD_TAR(absolute, "an absolute entry name", TAR_ABSOLUTE)
BAD_TAR(symlink_up, "a symlink leaving the root (../../..)", TAR_SYMLINK_UP)
BAD_TAR(symlink_absolute, "an absolute symlink (/etc)", TAR_SYMLINK_ABSOLUTE)
BAD_TAR(hardlink_out, "a hardlink to /etc/passwd", TAR_HARDLINK_OUT)
BAD_TAR(fifo, "a FIFO", TAR_FIFO)
BAD_TAR(device, "a character device", TAR_DEVICE)
BAD_TAR(setuid, "a setuid file", TAR_SETUID)
