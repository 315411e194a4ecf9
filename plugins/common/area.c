/* Execution areas in host directories (see plugins/common/area.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/json.h>
#include <cordon/sdk/request.h>
#include <cordon/sdk/spec.h>
#include <cordon/sdk/uid.h>
#include <cordon/sdk/workspace.h>
#include "plugins/common/area.h"

#define AREA_INODES 65536u

int area__path_check(const char *field, const char *path, struct cordon_error *err)
{
    size_t len = strnlen(path, AREA_ROOT_MAX + 1);

    if (len > AREA_ROOT_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "%s: longer than %u bytes", field, AREA_ROOT_MAX);
    if (path[0] != '/' || len < 2 || path[len - 1] == '/')
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "%s: \"%s\" must be an absolute directory path other than /", field, path);
    for (const char *p = path; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cordon_error_set(err, CORDON_E_INVALID, 0, "%s: control character in \"%s\"", field, path);
        if (*p == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                          (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "%s: \"%s\" must be normalised (no \"//\", \".\" or \"..\")", field, path);
    }
    return 0;
}

int area__root_prepare(const char *root, bool others_search, uid_t sandbox_uid, struct cordon_error *err)
{
    char path[AREA_ROOT_MAX + 1];
    struct stat st = { 0 };
    size_t i, len = strlen(root);

    if (len > AREA_ROOT_MAX)
        return cordon_error_set(err, CORDON_E_LIMIT, 0, "root: longer than %u bytes", AREA_ROOT_MAX);
    memcpy(path, root, len + 1);
    for (i = 1; i <= len; i++) {
        bool last = i == len;
        mode_t mode = last ? 0711 : 0755;

        if (!last && path[i] != '/')
            continue;
        path[i] = '\0';
        if (mkdir(path, mode) == 0) {
            /* mkdir obeys the umask, which a provider may not change. */
            if (chmod(path, mode) != 0)
                return cordon_error_set(err, CORDON_E_IO, errno, "root: chmod %s: %s", path, strerror(errno));
        } else if (errno != EEXIST) {
            return cordon_error_set(err, errno == EACCES || errno == EPERM ? CORDON_E_DENIED : CORDON_E_IO, errno,
                                    "root: cannot create %s: %s", path, strerror(errno));
        }
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return cordon_error_set(err, CORDON_E_INVALID, errno, "root: %s is not a directory", path);
        if (others_search && (st.st_mode & S_IXOTH) == 0)
            return cordon_error_set(err, CORDON_E_INVALID, 0,
                                    "root: %s (mode %04o) is not searchable by the sandbox user %u; use a root "
                                    "whose every directory has o+x",
                                    path, (unsigned)(st.st_mode & 07777), (unsigned)sandbox_uid);
        if (!last)
            path[i] = '/';
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        return cordon_error_set(err, CORDON_E_UNSAFE, 0,
                                "root: %s must belong to uid %u and not be group/other writable (owner %u, mode %04o)",
                                root, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

int area__paths(const char *root, const char *id, char **ret_dir, char **ret_ws, struct cordon_error *err)
{
    char *dir = NULL, *ws = NULL;

    if (asprintf(&dir, "%s/%s", root, id) < 0)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "state: out of memory");
    if (ret_ws != NULL && asprintf(&ws, "%s/workspace", dir) < 0) {
        free(dir);
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "state: out of memory");
    }
    *ret_dir = dir;
    if (ret_ws != NULL)
        *ret_ws = ws;
    return 0;
}

/* The state provision writes, with what area__state_parse reads back. */
static cJSON *state_new(const char *id, const char *dir, const char *ws, uid_t uid, gid_t gid,
                        const struct cordon_spec_state *kept, const struct cordon_env *environment)
{
    cJSON *state = cJSON_CreateObject();

    if (state == NULL || cJSON_AddStringToObject(state, "execution_id", id) == NULL ||
        cJSON_AddStringToObject(state, "dir", dir) == NULL || cJSON_AddStringToObject(state, "workspace", ws) == NULL ||
        cJSON_AddNumberToObject(state, "uid", (double)uid) == NULL ||
        cJSON_AddNumberToObject(state, "gid", (double)gid) == NULL || !cordon_spec_state_add(state, kept) ||
        !cJSON_AddItemToObject(state, "environment", cordon_env_to_json(environment))) {
        cJSON_Delete(state);
        return NULL;
    }
    return state;
}

int area__spec_read(const char *spec_json, struct cordon_spec *spec, struct cordon_spec_state *ret_kept,
                    struct cordon_error *err)
{
    int r = cordon_spec_parse(spec_json, spec, err);

    if (r == 0)
        r = cordon_spec_deadline(spec, cordon_now_wall_ms(), &ret_kept->expires_at_ms, err);
    if (r == 0) {
        ret_kept->resources = spec->resources;
        ret_kept->layout = spec->layout;
    }
    return r;
}

int area__state_print(const struct cordon_host_v1 *host, const struct area_new *a, const struct cordon_spec *spec,
                      const struct cordon_spec_state *kept, const char *key, bool value, char **ret_state_json,
                      struct cordon_error *err)
{
    cJSON *state = state_new(spec->execution_id, a->dir, a->ws, a->uid, a->gid, kept, &spec->environment);
    int r;

    if (state == NULL || cJSON_AddBoolToObject(state, key, value) == NULL)
        r = cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "state: out of memory");
    else
        r = cordon_json_print_host(host, state, ret_state_json, err);
    cJSON_Delete(state);
    return r;
}

void area__state_clear(struct area_state *st)
{
    cJSON_Delete(st->doc);
    free(st->dir);
    free(st->workspace);
    memset(st, 0, sizeof(*st));
}

int area__state_parse(const char *root, const char *json, bool full, struct area_state *ret,
                      struct cordon_error *err)
{
    struct area_state st = { 0 };
    struct cordon_spec_state kept;
    const cJSON *item;
    uint64_t v;
    int r;

    if ((r = cordon_spec_state_parse(json, &st.doc, &st.execution_id, err)) < 0 ||
        (r = area__paths(root, st.execution_id, &st.dir, &st.workspace, err)) < 0)
        goto out;
    item = cJSON_GetObjectItemCaseSensitive(st.doc, "dir");
    if (item != NULL && (!cJSON_IsString(item) || strcmp(item->valuestring, st.dir) != 0)) {
        r = cordon_error_set(err, CORDON_E_INVALID, 0,
                             "state.dir: must be %s (the provider root and the execution id)", st.dir);
        goto out;
    }
    if (!full)
        goto done;
    if ((r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "uid"), "state.uid", 0, 0xfffffffeu, &v,
                             err)) < 0)
        goto out;
    st.uid = (uid_t)v;
    if ((r = cordon_json_u64(cJSON_GetObjectItemCaseSensitive(st.doc, "gid"), "state.gid", 0, 0xfffffffeu, &v,
                             err)) < 0)
        goto out;
    st.gid = (gid_t)v;
    if ((r = cordon_spec_state_from_json(st.doc, &kept, err)) < 0)
        goto out;
    st.code_layout = kept.layout == CORDON_SPEC_LAYOUT_CODE;
    st.res = kept.resources;
    st.expires_at_ms = kept.expires_at_ms;
    st.environment = cJSON_GetObjectItemCaseSensitive(st.doc, "environment");
    if (st.environment != NULL && (r = cordon_env_object_check(st.environment, "state.environment", err)) < 0)
        goto out;
done:
    *ret = st;
    memset(&st, 0, sizeof(st));
out:
    area__state_clear(&st);
    return r;
}

int area__state_parse_uid(const struct cordon_host_v1 *host, const char *root, enum area_uid_rule rule,
                          const char *json, bool full, struct area_state *ret, struct cordon_error *err)
{
    struct area_state st = { 0 };
    int r = area__state_parse(root, json, full, &st, err);

    if (r < 0 || !full)
        goto out;
    /* A pooled uid is the one this execution holds, never another's. */
    if (rule == AREA_UID_POOL)
        r = cordon_uid_check_state(NULL, host->host_instance_id, st.execution_id, st.uid, st.gid, err);
    else if (rule == AREA_UID_NOT_ROOT && (st.uid == 0 || st.gid == 0))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "state.uid: %u:%u refused: the sandbox user must not be root",
                             (unsigned)st.uid, (unsigned)st.gid);
    else if (rule == AREA_UID_CALLER && (st.uid != geteuid() || st.gid != getegid()))
        r = cordon_error_set(err, CORDON_E_INVALID, 0, "state.uid: %u:%u is not the caller's %u:%u",
                             (unsigned)st.uid, (unsigned)st.gid, (unsigned)geteuid(), (unsigned)getegid());
out:
    if (r == 0) {
        *ret = st;
        memset(&st, 0, sizeof(st));
    }
    area__state_clear(&st);
    return r;
}

int area__open_workspace(const struct area_state *st, int *ret_fd, struct cordon_error *err)
{
    int fd = open(st->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return cordon_error_set(err, errno == ENOENT ? CORDON_E_NOT_FOUND : CORDON_E_IO, errno,
                                "state.workspace: %s: %s (terminated?)", st->workspace, strerror(errno));
    *ret_fd = fd;
    return 0;
}

int area__workspace(const struct area_state *st, bool give, struct cordon_workspace *ret, struct cordon_error *err)
{
    int r = area__open_workspace(st, &ret->fd, err);

    if (r < 0)
        return r;
    ret->owner = (struct cordon_workspace_owner){ st->code_layout, give, st->uid, st->gid };
    ret->import_max_bytes = st->res.disk_bytes;
    ret->export_max_bytes = st->res.disk_bytes;
    return 0;
}

int area__remove(const struct cordon_host_v1 *host, const char *dir, const char *id, bool give_back,
                 struct cordon_error *err)
{
    int r;

    area__unmount(dir);
    r = cordon_fs_remove_tree_path(dir, err);
    if (r == 0 && give_back)
        r = cordon_uid_give_back(NULL, host->host_instance_id, id, err);
    return r;
}

bool area__mount(const char *source, const char *dir, uint64_t bytes)
{
    char opts[96];

    if (geteuid() != 0)
        return false;
    snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%u,mode=0700", (unsigned long long)bytes, AREA_INODES);
    return mount(source, dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0;
}

/* Processes still in it keep it alive until they are gone; nobody can
 * reach it by path any more. */
void area__unmount(const char *dir)
{
    if (geteuid() == 0)
        (void)umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
}

bool area__tmpfs_works(const char *source, const char *root)
{
    char dir[AREA_ROOT_MAX + 32];
    struct statfs sfs;
    bool ok;

    if (geteuid() != 0)
        return false;
    snprintf(dir, sizeof(dir), "%s/.area-probe-XXXXXX", root);
    if (mkdtemp(dir) == NULL)
        return false;
    (void)area__mount(source, dir, 4096);
    ok = statfs(dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
    area__unmount(dir);
    rmdir(dir);
    return ok;
}

int area__mark(int dir_fd, const struct cordon_host_v1 *host, struct cordon_error *err)
{
    if (host->host_instance_id == NULL)
        return 0;
    return cordon_fs_write_new(dir_fd, AREA_HOST_MARK, host->host_instance_id, strlen(host->host_instance_id), 0600,
                               err);
}

int area__create(const struct area_opts *o, struct area_new *a, struct cordon_error *err)
{
    int r;

    memset(a, 0, sizeof(*a));
    a->root_fd = a->dir_fd = -1;
    a->id = o->id;
    a->host_id = o->host->host_instance_id;
    a->uid = o->uid;
    a->gid = o->gid;
    if ((r = area__paths(o->root, o->id, &a->dir, &a->ws, err)) < 0)
        return r;
    a->root_fd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (a->root_fd < 0)
        return cordon_error_set(err, CORDON_E_UNAVAILABLE, errno, "root: %s: %s", o->root, strerror(errno));
    /* Until the modes are set the directory is ours alone. */
    if (mkdirat(a->root_fd, o->id, 0700) != 0)
        return cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno, "execution_id: %s: %s",
                                a->dir, errno == EEXIST ? "already exists" : strerror(errno));
    a->created = true;
    if (o->take_uid) {
        if ((r = cordon_uid_take(NULL, a->host_id, o->id, &a->uid, err)) < 0)
            return r;
        a->took_uid = true;
        a->gid = (gid_t)a->uid;
    }
    if (o->mount_source != NULL)
        a->mounted = area__mount(o->mount_source, a->dir, o->mount_bytes);
    /*
     * Nobody but the execution reaches into its area. With give, the area
     * is root's with the sandbox's group only allowed to pass (0710): the
     * sandbox user can neither list nor change it, other local users
     * cannot enter at all, whatever the modes the program gives its files
     * (the workspace's 0755, a umask of 022) - and those modes stay the
     * program's, as an export carries them out. Without, the area is the
     * invoking user's alone (0700).
     */
    a->dir_fd = openat(a->root_fd, o->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (a->dir_fd < 0 || (o->give && fchown(a->dir_fd, 0, a->gid) != 0) ||
        fchmod(a->dir_fd, o->give ? 0710 : 0700) != 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "provision: %s: %s", a->dir, strerror(errno));
    /* Layout "code": source/ root's, build/, output/, logs/ the sandbox
     * user's; layout "host": all of it (cordon_workspace_make). Then whose
     * execution this is, so that list_executions (cordon gc) never touches
     * another host instance's areas under a shared root. */
    if ((r = cordon_workspace_make(a->dir_fd, o->code_layout, o->give, a->uid, a->gid, err)) < 0)
        return r;
    return area__mark(a->dir_fd, o->host, err);
}

void area__new_finish(struct area_new *a, bool failed)
{
    if (a->dir_fd >= 0)
        close(a->dir_fd);
    if (failed && a->created) {
        area__unmount(a->dir);
        cordon_fs_remove_tree(a->root_fd, a->id, NULL);
    }
    if (failed && a->took_uid)
        cordon_uid_give_back(NULL, a->host_id, a->id, NULL);
    if (a->root_fd >= 0)
        close(a->root_fd);
    free(a->dir);
    free(a->ws);
    memset(a, 0, sizeof(*a));
    a->root_fd = a->dir_fd = -1;
}

int area__list(const struct cordon_host_v1 *host, const char *root, char **ret_ids_json, struct cordon_error *err)
{
    const char *me = host->host_instance_id;
    cJSON *ids = cJSON_CreateArray();
    struct dirent *de;
    DIR *dir;
    int r;

    if (ids == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "list_executions: out of memory");
    dir = opendir(root);
    while (dir != NULL && (de = readdir(dir)) != NULL) {
        char *mark = NULL;
        size_t len = 0;
        int dfd;

        if (cordon_execution_id_check("execution_id", de->d_name, NULL) < 0)
            continue;
        dfd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            continue;
        if (cordon_fs_read_file(dfd, AREA_HOST_MARK, 256, &mark, &len, NULL) == 0 && me != NULL &&
            strcmp(mark, me) == 0)
            cJSON_AddItemToArray(ids, cJSON_CreateString(de->d_name));
        free(mark);
        close(dfd);
    }
    if (dir != NULL)
        closedir(dir);
    r = cordon_json_print_host(host, ids, ret_ids_json, err);
    cJSON_Delete(ids);
    return r;
}

int area__extend(const struct cordon_host_v1 *host, const char *root, const char *state_json,
                 uint64_t expires_at_ms, char **ret_state_json, struct cordon_error *err)
{
    struct area_state st = { 0 };
    int r;

    if (ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: ret_state_json required");
    if (expires_at_ms <= cordon_now_wall_ms())
        return cordon_error_set(err, CORDON_E_INVALID, 0, "extend: expires_at_ms is not after now");
    r = area__state_parse(root, state_json, true, &st, err);
    if (r == 0)
        r = cordon_spec_state_set_deadline(host, state_json, expires_at_ms, ret_state_json, err);
    area__state_clear(&st);
    return r;
}
