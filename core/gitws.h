/*
 * core: git workspaces (json.md §7 "workspace": {"kind": "git",
 * "repository", "revision"}). A revision of a local repository is read with libgit2 and
 * written as a tar stream that the provider imports into /workspace: the
 * files of the commit's tree and nothing else (no .git, no worktree, no
 * checkout on disk, no filters, hooks or LFS: blob bytes as stored).
 *
 * The stream holds directories (0755), regular files (0644, or 0755 for
 * git's executable mode) and symlinks, named relative to the workspace in
 * pre-order (a directory before what it holds). A symlink's target is the
 * blob's bytes, kept as given: a target that is absolute or leaves the
 * root is still written as a link, and the extraction side decides
 * (sdk/tar.h extraction refuses it). Submodules (gitlinks) are not
 * followed: they are left out of the stream and listed.
 */
#ifndef CORDON_CORE_GITWS_H
#define CORDON_CORE_GITWS_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include <cordon/error.h>

/* Deepest directory nesting exported. */
#define CORDON_GITWS_DEPTH_MAX 256
/* Longest revision string accepted. */
#define CORDON_GITWS_REVISION_MAX 1024

/* What an export wrote. Cleared with cordon__git_export_clear. */
struct cordon__git_export {
    char commit[41];     /* full sha of the commit exported */
    uint64_t entries;    /* entries in the stream */
    uint64_t bytes;      /* sum of regular files' sizes */
    cJSON *submodules;   /* array of the paths of the gitlinks skipped (owned) */
};

/* Free what e holds and zero it; NULL is fine. */
void cordon__git_export_clear(struct cordon__git_export *e);

/*
 * Write the tree of revision (a branch, tag, full or short sha, HEAD~n:
 * anything git_revparse_single names that peels to a commit) of the
 * repository at the absolute path repository (opened by its real path; no
 * search of parent directories) as a pax tar stream to tar_fd (borrowed,
 * not closed). Bounded: more than max_bytes of file content or max_entries
 * entries (0 = none) is CORDON_E_LIMIT, checked before anything of the
 * offending entry is written; each blob is held in memory once while it is
 * written. Errors: a relative path CORDON_E_INVALID ("workspace.repository"),
 * not a repository or a revision that names no commit CORDON_E_NOT_FOUND,
 * an ambiguous short sha CORDON_E_INVALID, a ".git" entry in the tree
 * CORDON_E_UNSAFE. After a failure the stream has no end-of-archive blocks.
 * *ret is filled only on success (clear it with cordon__git_export_clear).
 */
int cordon__git_export_tar(const char *repository, const char *revision, uint64_t max_bytes,
                           uint64_t max_entries, int tar_fd, struct cordon__git_export *ret,
                           struct cordon_error *err);

#endif
