/*
 * runc: provision, one execution made from its spec. The pinned image's
 * cached root filesystem (rootfs.c), a uid of its own, a bundle with
 * config.json (config.c), one `run --detach` starting cordon-init as the
 * container's first process (runtime.c), then every limit read back from
 * the cgroup (cgroup.c) and the loopback brought up before the state is
 * written: nothing of the user's runs before provision returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/host.h>
#include <cordon/sdk/sandbox.h>
#include <cordon/sdk/spec.h>

#include "plugins/runc/runc.h"

static int read_pid_file(const char *bundle, pid_t *ret, struct cordon_error *err)
{
    char *text = NULL, *end;
    size_t len;
    long v;
    int dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

    if (dfd < 0)
        return cordon_error_set(err, CORDON_E_IO, errno, "bundle %s: %s", bundle, strerror(errno));
    r = cordon_fs_read_file(dfd, "init.pid", 32, &text, &len, err);
    close(dfd);
    if (r < 0)
        return r;
    v = strtol(text, &end, 10);
    r = v > 1 && v < 0x7fffffff && end != text
            ? 0
            : cordon_error_set(err, CORDON_E_PROVIDER, 0, "init.pid: \"%.*s\"",
                               cordon_text_fit(text, 20), text);
    if (r == 0)
        *ret = (pid_t)v;
    free(text);
    return r;
}

/* What provision works from: the sdk's typed spec, and what follows. */
struct prov {
    struct cordon_spec spec;
    const char *image;           /* spec's, else the config's, else NULL */
    uint64_t expires_at_ms;      /* the deadline, once the image is ready */
    uid_t uid;                   /* who the execution runs as */
    gid_t gid;
};

static int spec_parse(const char *json, struct prov *p, struct cordon_error *err)
{
    struct cordon_disk_split disk;
    int r = cordon_spec_parse(json, &p->spec, err);

    /* /workspace, /tmp and /dev/shm share disk_bytes: it must split. */
    if (r == 0)
        r = cordon_disk_split("resources.disk_bytes", p->spec.resources.disk_bytes, &disk, err);
    return r;
}

/* The root filesystem of a provision: the pinned image's cached tree. */
static int provision_rootfs(const struct cordon_resource *res, const char *ref, char **ret_path,
                            char *ret_digest, struct cordon_error *err)
{
    struct runc_image img = { 0 };
    int r;

    if (ref == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "image: required (the spec's image or config.image), as "
                                "/absolute/path/rootfs.tar@sha256:<64 hex>");
    r = runc__image_parse(ref, res->cfg.allow_unpinned, &img, err);
    if (r == 0)
        r = runc__rootfs_ensure(res->base, &img, ret_path, ret_digest, err);
    runc__image_clear(&img);
    return r;
}

static int state_build(const struct cordon_resource *res, const struct prov *p,
                       const char *bundle, pid_t pid, const char *digest, char **ret,
                       struct cordon_error *err)
{
    const struct cordon_spec_state kept = { .resources = p->spec.resources,
                                            .expires_at_ms = p->expires_at_ms,
                                            .layout = p->spec.layout };
    cJSON *st = cJSON_CreateObject();
    int r;

    if (st == NULL || cJSON_AddStringToObject(st, "execution_id", p->spec.execution_id) == NULL ||
        cJSON_AddStringToObject(st, "container_id", p->spec.execution_id) == NULL ||
        cJSON_AddStringToObject(st, "bundle", bundle) == NULL ||
        cJSON_AddStringToObject(st, "runtime", res->runtime) == NULL ||
        cJSON_AddStringToObject(st, "root", res->cfg.root) == NULL ||
        cJSON_AddNumberToObject(st, "pid", (double)pid) == NULL ||
        cJSON_AddNumberToObject(st, "uid", (double)p->uid) == NULL ||
        cJSON_AddNumberToObject(st, "gid", (double)p->gid) == NULL ||
        !cordon_spec_state_add(st, &kept) ||
        cJSON_AddStringToObject(st, "rootfs_digest", digest) == NULL ||
        (runc__agent_wanted(res) && cJSON_AddTrueToObject(st, "agent") == NULL) ||
        !cJSON_AddItemToObject(st, "environment", cordon_env_to_json(&p->spec.environment))) {
        cJSON_Delete(st);
        return runc__nomem(err, "state");
    }
    r = cordon_json_print_host(res->host, st, ret, err);
    cJSON_Delete(st);
    return r;
}

int runc__op_provision(struct cordon_resource *res, const char *spec_json,
                       char **ret_state_json, struct cordon_error *err)
{
    struct runc_spec_in in = { 0 };
    struct prov p = { 0 };
    struct runc_cmd_result c = { 0 };
    char *bundle = NULL, *rootfs = NULL, *config = NULL, *bundles = NULL, digest[65] = "";
    char msg[320];
    uint64_t now;
    pid_t pid = 0;
    int pidfd = -1, root_fd = -1, ws_fd = -1, bfd = -1, r;
    bool made_bundle = false, created = false, took_uid = false;

    if (res == NULL || ret_state_json == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0,
                                "provision: resource and ret_state_json required");
    cordon_spec_init(&p.spec);
    if ((r = spec_parse(spec_json, &p, err)) < 0)
        goto out;
    p.image = p.spec.image != NULL ? p.spec.image : res->cfg.image;
    /* A first use of the image may take seconds: the clock is read after. */
    r = provision_rootfs(res, p.image, &rootfs, digest, err);
    if (r < 0)
        goto out;
    now = cordon_now_wall_ms();
    if ((r = cordon_spec_deadline(&p.spec, now, &p.expires_at_ms, err)) < 0)
        goto out;

    /* mkdir is the per-host existence check of the id. */
    bundle = runc__bundle_path(res, p.spec.execution_id);
    if (bundle == NULL || asprintf(&bundles, "%s/bundles", res->base) < 0) {
        bundles = NULL;
        r = runc__nomem(err, "provision");
        goto out;
    }
    if ((r = runc__mkdir_p("state_dir", bundles, 0700, err)) < 0)
        goto out;
    if (mkdir(bundle, 0700) != 0) {
        r = cordon_error_set(err, errno == EEXIST ? CORDON_E_EXISTS : CORDON_E_IO, errno,
                             "execution_id: %s: %s", bundle,
                             errno == EEXIST ? "already exists" : strerror(errno));
        goto out;
    }
    made_bundle = true;
    /* The id is ours now: so is a uid of its own (or the one configured). */
    p.uid = res->cfg.uid;
    p.gid = res->cfg.gid;
    if (res->cfg.pooled) {
        if ((r = cordon_uid_take(NULL, res->host->host_instance_id, p.spec.execution_id, &p.uid, err)) < 0)
            goto out;
        took_uid = true;
        p.gid = (gid_t)p.uid;
    }
    in.execution_id = p.spec.execution_id;
    in.host_instance_id = res->host->host_instance_id;
    in.rootfs = rootfs;
    in.init_path = res->host->init_path;
    in.uid = p.uid;
    in.gid = p.gid;
    in.code_layout = p.spec.layout == CORDON_SPEC_LAYOUT_CODE;
    in.limit_swap = res->memsw;
    in.limits = &p.spec.resources;
    in.init_deadline_ms = p.expires_at_ms - now;
    in.agent = runc__agent_wanted(res);
    bfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bfd < 0) {
        r = cordon_error_set(err, CORDON_E_IO, errno, "bundle %s: %s", bundle, strerror(errno));
        goto out;
    }
    if ((r = runc__spec_build(&in, &config, err)) < 0 ||
        (r = cordon_fs_write_new(bfd, "config.json", config, strlen(config), 0600, err)) < 0)
        goto out;

    /*
     * One runtime invocation: run --detach creates and starts the
     * container. Its first process is our cordon-init, which runs nothing
     * but its clock, so reading every limit back after the start still
     * holds the rule that nothing of the user's runs before: the first
     * command comes with exec, after provision returned. The runtime hands
     * its stdio to the init, which drops it at once; it is the memfds of
     * runtime.c, never a pipe that could be held open.
     */
    {
        char pid_file[RUNC_PATH_MAX + 16];
        const char *args[] = { "run", "--detach", "--bundle", bundle, "--pid-file", pid_file,
                               p.spec.execution_id, NULL };

        snprintf(pid_file, sizeof(pid_file), "%s/init.pid", bundle);
        r = runc__runtime_cmd(res, args, &c, err);
    }
    if (r < 0)
        goto out;
    if (c.exit_code != 0) {
        runc__cmd_message(c.errtext, msg, sizeof(msg));
        /* Another host's container of that id is not ours to clean up. */
        r = cordon_error_set(err, strstr(msg, "exists") != NULL ? CORDON_E_EXISTS
                                                                : CORDON_E_PROVIDER, 0,
                             "%s run %s: %s (exit %d)", res->runtime_name, p.spec.execution_id, msg,
                             c.exit_code);
        created = strstr(msg, "exists") == NULL;
        goto out;
    }
    created = true;
    if ((r = read_pid_file(bundle, &pid, err)) < 0 ||
        (r = runc__init_pin(res, p.spec.execution_id, pid, &pidfd, err)) < 0)
        goto out;
    /* Fail closed: no command before every limit reads back right. */
    r = runc__cgroup_verify(res->cgroup_version, p.spec.execution_id, pid, &p.spec.resources, res->memsw, err);
    if (r < 0 || (r = runc__lo_up(pidfd, pid, err)) < 0)
        goto out;
    if (p.spec.layout == CORDON_SPEC_LAYOUT_CODE &&
        ((r = runc__init_root(pidfd, pid, p.spec.execution_id, &root_fd, err)) < 0 ||
         (r = runc__workspace_open(root_fd, &ws_fd, err)) < 0 ||
         (r = runc__workspace_layout(ws_fd, p.uid, p.gid, err)) < 0))
        goto out;
    r = state_build(res, &p, bundle, pid, digest, ret_state_json, err);
out:
    if (r < 0 && created) {
        runc__destroy(res, p.spec.execution_id, pid, NULL); /* gives the uid back too */
        made_bundle = false;
        took_uid = false;
    }
    if (r < 0 && took_uid)
        cordon_uid_give_back(NULL, res->host->host_instance_id, p.spec.execution_id, NULL);
    if (r < 0 && made_bundle)
        cordon_fs_remove_tree_path(bundle, NULL);
    runc__cmd_result_clear(&c);
    if (ws_fd >= 0)
        close(ws_fd);
    if (root_fd >= 0)
        close(root_fd);
    if (pidfd >= 0)
        close(pidfd);
    if (bfd >= 0)
        close(bfd);
    free(config);
    free(rootfs);
    free(bundle);
    free(bundles);
    cordon_spec_clear(&p.spec);
    return r;
}
