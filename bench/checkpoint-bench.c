/*
 * Checkpoint and restore throughput against tar(1), measured in the same
 * run on the same tree (target: at least 0.7 of tar's throughput; bench/README.md).
 *
 *   checkpoint-bench --dir DIR [--mib N] [--rounds N] [--json FILE]
 *
 * Builds a tree of about N MiB (default 200) under DIR/tree: many small
 * files (1-16 KiB), some of 1-4 MiB and a few of 32 MiB. Each round times
 *   tar:        tar -c -C tree . | tar -x -C out
 *   checkpoint: cordon_tar_create_fd of the tree into a pipe (a thread, as
 *               a provider's export would be) read by cordon__checkpoint_write
 *   restore:    cordon__checkpoint_open (digest check) + cordon_tar_extract_fd
 * and prints the medians, MiB/s of file content and the ratios against tar.
 * Every phase starts after sync(), so that none pays for the write-back of
 * the one before; only the checkpoint syncs its own data (it must). DIR is
 * removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>
#include <cordon/sdk/tar.h>
#include "core/checkpoint.h"

#define MIB (1024.0 * 1024.0)
#define ROUNDS_MAX 15
#define NOISE_BYTES (40u << 20)

extern char **environ;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t rng_between(uint64_t lo, uint64_t hi)
{
    return lo + rng() % (hi - lo + 1);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "checkpoint-bench: %s: %s\n", what, why);
    exit(1);
}

static void write_file(const char *path, const char *noise, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    uint64_t done = 0;

    if (fd < 0)
        die(path, strerror(errno));
    /* Slices of one random buffer at random offsets: no two files alike, nothing sparse. */
    while (done < size) {
        size_t off = (size_t)(rng() % (NOISE_BYTES / 2));
        size_t n = size - done < NOISE_BYTES / 2 ? (size_t)(size - done) : NOISE_BYTES / 2;
        ssize_t w = write(fd, noise + off, n);

        if (w <= 0)
            die(path, strerror(errno));
        done += (uint64_t)w;
    }
    close(fd);
}

struct tree_stats {
    uint64_t bytes, files, dirs;
};

/* About target bytes: 3/8 in small files, 5/16 in 1-4 MiB files, the rest in 32 MiB ones. */
static void make_tree(const char *root, uint64_t target, struct tree_stats *st)
{
    char *noise = malloc(NOISE_BYTES), path[4096];
    uint64_t small = target * 3 / 8, medium = target * 5 / 16, made = 0;

    if (noise == NULL)
        die("tree", "out of memory");
    for (size_t i = 0; i < NOISE_BYTES / 8; i++)
        ((uint64_t *)noise)[i] = rng();
    if (mkdir(root, 0755) < 0)
        die(root, strerror(errno));
    memset(st, 0, sizeof(*st));
    for (unsigned d = 0; made < small; d++) {
        snprintf(path, sizeof(path), "%s/pkg%03u", root, d);
        if (mkdir(path, 0755) < 0)
            die(path, strerror(errno));
        st->dirs++;
        for (unsigned f = 0; f < 100 && made < small; f++) {
            uint64_t size = rng_between(1024, 16384);

            snprintf(path, sizeof(path), "%s/pkg%03u/file%03u.txt", root, d, f);
            write_file(path, noise, size);
            made += size;
            st->files++;
        }
    }
    snprintf(path, sizeof(path), "%s/data", root);
    if (mkdir(path, 0755) < 0)
        die(path, strerror(errno));
    st->dirs++;
    for (unsigned f = 0; made < small + medium; f++) {
        uint64_t size = rng_between(1u << 20, 4u << 20);

        snprintf(path, sizeof(path), "%s/data/blob%03u.bin", root, f);
        write_file(path, noise, size);
        made += size;
        st->files++;
    }
    for (unsigned f = 0; made < target; f++) {
        snprintf(path, sizeof(path), "%s/big%u.img", root, f);
        write_file(path, noise, 32u << 20);
        made += 32u << 20;
        st->files++;
    }
    st->bytes = made;
    free(noise);
}

static void remove_tree(const char *path)
{
    struct cordon_error err;

    cordon_error_init(&err);
    if (cordon_fs_remove_tree_path(path, &err) < 0)
        die(path, err.message);
}

static void run_shell(const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    pid_t pid;
    int status;

    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
        die("spawn", strerror(errno));
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("tar pipeline", script);
}

static double time_tar(const char *tree, const char *out)
{
    char script[8192];
    double t0;

    if (mkdir(out, 0755) < 0)
        die(out, strerror(errno));
    snprintf(script, sizeof(script), "tar -c -C '%s' . | tar -x -C '%s'", tree, out);
    sync();
    t0 = now();
    run_shell(script);
    return now() - t0;
}

struct producer {
    int treefd, pipe_w, r;
    struct cordon_error err;
};

static void *produce(void *arg)
{
    struct producer *p = arg;

    cordon_error_init(&p->err);
    p->r = cordon_tar_create_fd(p->treefd, "", p->pipe_w, NULL, NULL, &p->err);
    close(p->pipe_w);
    return NULL;
}

static cJSON *bench_fields(void)
{
    cJSON *f = cJSON_Parse(
        "{\"source_execution_id\": \"bench\", \"provider_id\": \"trusted-local\","
        " \"image\": null, \"resources\": {\"cpus\": 1, \"memory_bytes\": 536870912,"
        " \"disk_bytes\": 1073741824, \"pids\": 256, \"runtime_ms\": 600000,"
        " \"max_output_bytes\": 8388608}, \"network\": {\"mode\": \"none\"},"
        " \"environment\": {}, \"metadata\": {\"reason\": \"bench\"}}");

    if (f == NULL)
        die("fields", "out of memory");
    return f;
}

/* One checkpoint of tree into store; its id goes to ret_id. */
static double time_checkpoint(const char *tree, const char *store, char ret_id[64],
                              uint64_t *ret_tar_bytes)
{
    struct producer p;
    struct cordon_error err;
    cJSON *fields = bench_fields(), *m = NULL, *ws;
    pthread_t th;
    int fds[2], r;
    double t0, t;

    p.treefd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p.treefd < 0 || pipe2(fds, O_CLOEXEC) < 0)
        die(tree, strerror(errno));
    p.pipe_w = fds[1];
    cordon_error_init(&err);
    sync();
    t0 = now();
    if (pthread_create(&th, NULL, produce, &p) != 0)
        die("thread", "cannot start");
    r = cordon__checkpoint_write(store, fds[0], fields, 0, 0, &m, &err);
    pthread_join(th, NULL);
    t = now() - t0;
    if (r < 0)
        die("checkpoint", err.message);
    if (p.r < 0)
        die("create", p.err.message);
    snprintf(ret_id, 64, "%s", cJSON_GetObjectItem(m, "checkpoint_id")->valuestring);
    ws = cJSON_GetObjectItem(m, "workspace");
    *ret_tar_bytes = (uint64_t)cJSON_GetObjectItem(ws, "bytes")->valuedouble;
    close(fds[0]);
    close(p.treefd);
    cJSON_Delete(m);
    cJSON_Delete(fields);
    return t;
}

static double time_restore(const char *store, const char *id, const char *out, double *ret_open)
{
    struct cordon_error err;
    cJSON *m = NULL;
    int tarfd = -1, outfd;
    double t0, t1;

    if (mkdir(out, 0755) < 0)
        die(out, strerror(errno));
    outfd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (outfd < 0)
        die(out, strerror(errno));
    cordon_error_init(&err);
    sync();
    t0 = now();
    if (cordon__checkpoint_open(store, id, &m, &tarfd, &err) < 0)
        die("open", err.message);
    t1 = now();
    if (cordon_tar_extract_fd(tarfd, outfd, NULL, CORDON_TAR_ALLOW_SYMLINKS, NULL, &err) < 0)
        die("extract", err.message);
    *ret_open = t1 - t0;
    t1 = now() - t0;
    close(tarfd);
    close(outfd);
    cJSON_Delete(m);
    return t1;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    double tar_s[ROUNDS_MAX], ck_s[ROUNDS_MAX], rs_s[ROUNDS_MAX], open_s[ROUNDS_MAX];
    const char *dir = NULL, *json = NULL;
    char tree[4096], out[4096], store[4096], id[64];
    uint64_t mib = 200, tar_bytes = 0;
    struct tree_stats st;
    struct cordon_error err;
    int rounds = 3;
    double mt, mc, mr, mo, t0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            mib = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else
            die("usage", "checkpoint-bench --dir DIR [--mib N] [--rounds N] [--json FILE]");
    }
    if (dir == NULL || dir[0] != '/' || mib < 8 || mib > 65536 || rounds < 1 ||
        rounds > ROUNDS_MAX)
        die("usage", "--dir must be absolute, --mib 8..65536, --rounds 1..15");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        die(dir, strerror(errno));
    snprintf(tree, sizeof(tree), "%s/tree", dir);
    snprintf(store, sizeof(store), "%s/store", dir);
    t0 = now();
    make_tree(tree, mib << 20, &st);
    fprintf(stderr, "tree: %.1f MiB in %" PRIu64 " files, %" PRIu64 " directories (%.1f s)\n",
            (double)st.bytes / MIB, st.files, st.dirs, now() - t0);
    /* One warm-up of each so that every measured round starts from the same page cache. */
    for (int i = -1; i < rounds; i++) {
        double t, c, r, o;

        snprintf(out, sizeof(out), "%s/out-tar", dir);
        t = time_tar(tree, out);
        remove_tree(out);
        c = time_checkpoint(tree, store, id, &tar_bytes);
        snprintf(out, sizeof(out), "%s/out-restore", dir);
        r = time_restore(store, id, out, &o);
        remove_tree(out);
        cordon_error_init(&err);
        if (cordon__checkpoint_remove(store, id, &err) < 0)
            die("remove", err.message);
        if (i < 0)
            continue;
        tar_s[i] = t, ck_s[i] = c, rs_s[i] = r, open_s[i] = o;
        fprintf(stderr, "round %d: tar %.3f s, checkpoint %.3f s, restore %.3f s\n", i + 1, t,
                c, r);
    }
    mt = median(tar_s, rounds);
    mc = median(ck_s, rounds);
    mr = median(rs_s, rounds);
    mo = median(open_s, rounds);
    printf("tree: %.1f MiB of file content, %" PRIu64 " files; workspace.tar %.1f MiB; "
           "median of %d rounds\n",
           (double)st.bytes / MIB, st.files, (double)tar_bytes / MIB, rounds);
    printf("%-34s %9s %9s %8s\n", "phase", "seconds", "MiB/s", "vs tar");
    printf("%-34s %9.3f %9.1f %8.2f\n", "tar -c | tar -x", mt, (double)st.bytes / MIB / mt, 1.0);
    printf("%-34s %9.3f %9.1f %8.2f\n", "checkpoint (create | write+fsync)", mc,
           (double)st.bytes / MIB / mc, mt / mc);
    printf("%-34s %9.3f %9.1f %8.2f\n", "restore (open+verify, extract)", mr,
           (double)st.bytes / MIB / mr, mt / mr);
    printf("  of which open+verify %.3f s\n", mo);
    printf("target: ratio >= 0.70 -> checkpoint %s, restore %s\n",
           mt / mc >= 0.7 ? "met" : "MISSED", mt / mr >= 0.7 ? "met" : "MISSED");
    if (json != NULL) {
        FILE *f = fopen(json, "w");

        if (f == NULL)
            die(json, strerror(errno));
        fprintf(f,
                "{\"tree_bytes\": %" PRIu64 ", \"files\": %" PRIu64 ", \"tar_bytes\": %" PRIu64
                ", \"rounds\": %d, \"tar_s\": %.4f, \"checkpoint_s\": %.4f, \"restore_s\": %.4f,"
                " \"restore_open_s\": %.4f, \"checkpoint_ratio\": %.3f,"
                " \"restore_ratio\": %.3f}\n",
                st.bytes, st.files, tar_bytes, rounds, mt, mc, mr, mo, mt / mc, mt / mr);
        fclose(f);
    }
    remove_tree(dir);
    return 0;
}
