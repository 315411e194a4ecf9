/*
 * exec-bench: the library call behind `cordon exec`, timed.
 *
 *   exec-bench STATE_DIR EXECUTION_ID N
 *
 * Calls cordon_exec_json(ctx, ID, {"command": "true"}) N times on one
 * context (after 3 warm-up calls) and prints one JSON line: the runs and
 * the p50, p95, mean and min in milliseconds. The execution must already
 * be provisioned in STATE_DIR (bench/run-exec.sh does that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cordon/cordon.h>

#define RUNS_MAX 100000

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    struct cordon_ctx_opts opts = { .struct_size = sizeof(opts) };
    struct cordon_ctx *ctx = NULL;
    struct cordon_error err;
    double *ms, sum = 0;
    long n;

    if (argc != 4 || (n = strtol(argv[3], NULL, 10)) < 1 || n > RUNS_MAX) {
        fprintf(stderr, "usage: exec-bench STATE_DIR EXECUTION_ID N (1..%d)\n", RUNS_MAX);
        return 2;
    }
    opts.state_dir = argv[1];
    cordon_error_init(&err);
    if (cordon_ctx_new(&opts, &ctx, &err) < 0) {
        fprintf(stderr, "exec-bench: %s\n", err.message);
        return 1;
    }
    ms = calloc((size_t)n, sizeof(*ms));
    if (ms == NULL)
        return 1;
    for (long i = -3; i < n; i++) {
        char *result = NULL;
        double t = now_ms();

        if (cordon_exec_json(ctx, argv[2], "{\"command\": \"true\"}", -1, -1, &result, &err) < 0 ||
            strstr(result, "\"exited\"") == NULL) {
            fprintf(stderr, "exec-bench: %s %s\n", err.message, result != NULL ? result : "");
            return 1;
        }
        if (i >= 0) {
            ms[i] = now_ms() - t;
            sum += ms[i];
        }
        free(result);
    }
    qsort(ms, (size_t)n, sizeof(*ms), cmp);
    printf("{\"runs\": %ld, \"p50_ms\": %.3f, \"p95_ms\": %.3f, \"mean_ms\": %.3f, "
           "\"min_ms\": %.3f}\n",
           n, ms[n / 2], ms[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1], sum / (double)n, ms[0]);
    free(ms);
    cordon_ctx_free(ctx);
    return 0;
}
