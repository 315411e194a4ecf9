/*
 * cordon-contract: hard links in a checkpoint. import_tar refuses hardlink
 * entries, so export_tar writes each name of a multiply-linked file as a
 * regular file with the content: a checkpoint restores every name.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive_entry.h>
#include <criterion/criterion.h>

#include "contract/contract.h"

Test(contract, checkpoint_of_a_hard_link_restores_every_name)
{
    struct contract_tar_entry *entries = NULL;
    struct cordon_exec_outcome out;
    char msg[600], *text;
    const char *first = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST), *second;
    int tar, n, regular = 0;

    contract_sh(first, "mkdir d && printf content > d/a && ln d/a d/b && ln d/a top", &out);
    cr_assert(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "making the hard links inside failed (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cordon_exec_outcome_clear(&out);
    cr_assert_eq(contract_export(first, "", &tar, msg, sizeof(msg)), 0,
                 "export_tar of a workspace with hard links failed: %s", msg);
    n = contract_tar_list(tar, &entries);
    cr_assert_geq(n, 0, "the exported stream does not list");
    for (int i = 0; i < n; i++) {
        if (strcmp(entries[i].name, "d/a") != 0 && strcmp(entries[i].name, "d/b") != 0 &&
            strcmp(entries[i].name, "top") != 0)
            continue;
        cr_expect_eq(entries[i].type, AE_IFREG, "%s is not a regular file entry (type %o)",
                     entries[i].name, entries[i].type);
        cr_expect_str_eq(entries[i].data != NULL ? entries[i].data : "", "content",
                         "%s does not carry the content", entries[i].name);
        regular++;
    }
    contract_tar_entries_free(entries, n);
    cr_expect_eq(regular, 3, "the export holds %d of the 3 names", regular);
    cr_assert_eq(lseek(tar, 0, SEEK_SET), 0);

    second = contract_provision(NULL, CORDON_SPEC_LAYOUT_HOST);
    cr_assert_eq(contract_import(second, "", tar, msg, sizeof(msg)), 0,
                 "restoring the export failed: %s", msg);
    close(tar);
    contract_sh(second, "cat d/a d/b top", &out);
    text = contract_stream_text(&out.out);
    cr_expect(out.status == CORDON_RUN_EXITED && out.exit_code == 0,
              "reading the restored names failed (%s %d)", cordon_run_status_name(out.status),
              out.exit_code);
    cr_expect_str_eq(text, "contentcontentcontent", "the restored names read: %s", text);
    free(text);
    cordon_exec_outcome_clear(&out);
}
