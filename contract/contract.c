/*
 * cordon-contract: checks any provider .so against the provider contract.
 *
 * main() takes the cordon options off the command line and hands them to
 * Criterion's workers through the environment (a worker never runs main);
 * everything else goes to Criterion unchanged (--tap, --xml, --verbose,
 * --filter, -j...).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <cordon/sdk/fs.h>
#include "contract/contract.h"

TestSuite(contract, .init = contract_setup, .fini = contract_teardown, .timeout = 300);

/* How many checks the run started: a filter that selects none is a
 * failure, never a pass (a CI job with a typo would stay green). Criterion
 * counts a check its filter left out as skipped, like one that skipped
 * itself; only a started check fires PRE_INIT, in the runner process. */
static size_t checks_started;

ReportHook(PRE_INIT)(struct criterion_test *test)
{
    (void)test;
    checks_started++;
}

/*
 * --filter takes the names the suite prints: "contract::NAME" (results,
 * TAP, XML), a bare NAME (--list) and Criterion's own "contract/NAME",
 * each with Criterion's glob characters. Returns the Criterion argument,
 * malloc'd.
 */
static char *filter_argument(const char *pattern)
{
    const char *sep = strstr(pattern, "::");
    char *arg = NULL;
    int n;

    if (sep != NULL)
        n = asprintf(&arg, "--filter=%.*s/%s", (int)(sep - pattern), pattern, sep + 2);
    else if (strchr(pattern, '/') == NULL)
        n = asprintf(&arg, "--filter=contract/%s", pattern);
    else
        n = asprintf(&arg, "--filter=%s", pattern);
    return n < 0 ? NULL : arg;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon-contract --provider /abs/path/NAME.so [--config JSON]\n"
            "                       [--observer PATH] [--init PATH] [--image REF]\n"
            "                       [--allow-synthetic] [CRITERION OPTIONS]\n"
            "\n"
            "Checks a cordon provider shared object against the provider contract:\n"
            "the ABI, the probe facts, the claimed isolation (observed independently\n"
            "and attacked), the lifecycle, limits, bad input.\n"
            "\n"
            "  --provider PATH    the provider .so (a relative path is made absolute)\n"
            "  --config JSON      provider config object (default {}); the suite adds\n"
            "                     \"allow_unsafe_local\": true, running it is consent\n"
            "  --observer PATH    cordon-observe (default $%s,\n"
            "                     else %s)\n"
            "  --init PATH        cordon-init for the provider (default $%s,\n"
            "                     else %s)\n"
            "  --image REF        image put into every provision spec (default: none)\n"
            "  --allow-synthetic  accept \"observed_by\": \"synthetic\" facts\n"
            "  --criterion-help   Criterion's own options\n"
            "  -h, --help         this text\n"
            "\n"
            "  --filter PATTERN   run only the checks PATTERN names: a name as --list\n"
            "                     shows it, as results show it (contract::NAME) or\n"
            "                     Criterion's contract/NAME, with * ? [...] globs;\n"
            "                     selecting no check is a failure (exit 1)\n"
            "\n"
            "Criterion options pass through, e.g. --verbose, --tap[=FILE], --xml[=FILE],\n"
            "-j1, --list. Exit status 0 when every selected check passed, 1 when one\n"
            "failed or none was selected, 2 for a usage error.\n",
            CONTRACT_ENV_OBSERVER, CORDON_HELPERDIR "/cordon-observe", CONTRACT_ENV_INIT,
            CORDON_HELPERDIR "/cordon-init");
}

/* path made absolute against the cwd (not resolved: the basename is the
 * provider id and must stay what the caller named). */
static char *absolute(const char *path)
{
    char cwd[PATH_MAX];
    char *abs = NULL;

    if (path[0] == '/')
        return strdup(path);
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return NULL;
    if (asprintf(&abs, "%s/%s", cwd, path) < 0)
        return NULL;
    return abs;
}

/* Matches "--name VALUE" and "--name=VALUE"; advances *i past the value. */
static bool take_option(int argc, char **argv, int *i, const char *name, const char **ret)
{
    size_t len = strlen(name);

    if (strcmp(argv[*i], name) == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "cordon-contract: %s wants a value\n", name);
            exit(2);
        }
        *ret = argv[++*i];
        return true;
    }
    if (strncmp(argv[*i], name, len) == 0 && argv[*i][len] == '=') {
        *ret = argv[*i] + len + 1;
        return true;
    }
    return false;
}

static void set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "cordon-contract: setenv %s: %s\n", name, strerror(errno));
        exit(2);
    }
}

static void set_path_env(const char *name, const char *option, const char *path)
{
    char *abs = absolute(path);

    if (abs == NULL) {
        fprintf(stderr, "cordon-contract: %s %s: cannot make it absolute\n", option, path);
        exit(2);
    }
    set_env(name, abs);
    free(abs);
}

/* Checks the cordon options and exports them; 0, or the exit status. */
static int export_options(const char *provider, const char *config, const char *observer,
                          const char *init, const char *image, bool listing)
{
    cJSON *parsed;

    /* Listing the checks or Criterion's help runs nothing. */
    if (listing && provider == NULL)
        return 0;
    if (provider == NULL || provider[0] == '\0') {
        fprintf(stderr, "cordon-contract: --provider PATH is required\n");
        usage(stderr);
        return 2;
    }
    if (access(provider, R_OK) != 0) {
        fprintf(stderr, "cordon-contract: --provider %s: %s\n", provider, strerror(errno));
        return 2;
    }
    parsed = cJSON_Parse(config != NULL ? config : "{}");
    if (!cJSON_IsObject(parsed)) {
        fprintf(stderr, "cordon-contract: --config: not a JSON object\n");
        cJSON_Delete(parsed);
        return 2;
    }
    cJSON_Delete(parsed);
    set_path_env(CONTRACT_ENV_PROVIDER, "--provider", provider);
    set_env(CONTRACT_ENV_CONFIG, config != NULL ? config : "{}");
    if (observer != NULL)
        set_path_env(CONTRACT_ENV_OBSERVER, "--observer", observer);
    if (init != NULL)
        set_path_env(CONTRACT_ENV_INIT, "--init", init);
    if (image != NULL)
        set_env(CONTRACT_ENV_IMAGE, image);
    observer = getenv(CONTRACT_ENV_OBSERVER);
    if (observer == NULL)
        observer = CORDON_HELPERDIR "/cordon-observe";
    if (access(observer, X_OK) != 0)
        fprintf(stderr, "cordon-contract: warning: observer %s: %s (observation checks will fail)\n",
                observer, strerror(errno));
    return 0;
}

/* Exported: Criterion's sandbox (BoxFort) finds main by its symbol to run
 * a worker, and -fvisibility=hidden would make main a local symbol. */
CORDON_EXTERN int main(int argc, char **argv);

CORDON_EXTERN int main(int argc, char **argv)
{
    const char *provider = NULL, *config = NULL, *observer = NULL, *init = NULL, *image = NULL;
    struct criterion_test_set *tests;
    char *shared = NULL, *filter = NULL;
    const char *pattern = NULL;
    char **rest;
    int nrest = 1, rc;
    bool listing = false;

    /* First: in a Criterion worker this runs the test and never returns,
     * and a worker's command line carries none of our options. */
    tests = criterion_initialize();
    rest = calloc((size_t)argc + 1, sizeof(*rest));
    if (rest == NULL) {
        rc = 2;
        goto out;
    }
    rest[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            rc = 0;
            goto out;
        }
        if (strcmp(argv[i], "--criterion-help") == 0) {
            rest[nrest++] = "--help";
            listing = true;
            continue;
        }
        if (strcmp(argv[i], "--list") == 0 || strcmp(argv[i], "-l") == 0)
            listing = true;
        if (strcmp(argv[i], "--allow-synthetic") == 0) {
            set_env(CONTRACT_ENV_ALLOW_SYNTHETIC, "1");
            continue;
        }
        if (take_option(argc, argv, &i, "--provider", &provider) ||
            take_option(argc, argv, &i, "--config", &config) ||
            take_option(argc, argv, &i, "--observer", &observer) ||
            take_option(argc, argv, &i, "--init", &init) ||
            take_option(argc, argv, &i, "--image", &image))
            continue;
        if (take_option(argc, argv, &i, "--filter", &pattern)) {
            if (filter != NULL) {
                fprintf(stderr, "cordon-contract: --filter given twice (one pattern; "
                                "Criterion's globs can name several checks)\n");
                rc = 2;
                goto out;
            }
            filter = filter_argument(pattern);
            if (filter == NULL) {
                rc = 2;
                goto out;
            }
            rest[nrest++] = filter;
            continue;
        }
        rest[nrest++] = argv[i];
    }
    rc = export_options(provider, config, observer, init, image, listing);
    if (rc != 0)
        goto out;
    /* Criterion's own options; 0 means it already answered (e.g. --list). */
    if (!criterion_handle_args(nrest, rest, true))
        goto out;
    /* Before any check: a fill killed with the run is gone on the next. */
    contract_remove_stale_fills();
    /* The workers share one state directory (provider caches); it goes
     * when the run ends. */
    if (cordon_fs_mkdtemp(getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] == '/' ? getenv("TMPDIR") : "/tmp",
                          "cordon-contract-run.", &shared, NULL) == 0)
        setenv("CORDON_CONTRACT_STATE_DIR", shared, 1);
    rc = criterion_run_all_tests(tests) ? 0 : 1;
    if (checks_started == 0) {
        if (pattern != NULL)
            fprintf(stderr, "cordon-contract: --filter %s selects no check "
                            "(cordon-contract --list names them)\n", pattern);
        else
            fprintf(stderr, "cordon-contract: no check ran\n");
        rc = 1;
    }
    if (shared != NULL)
        cordon_fs_remove_tree_path(shared, NULL);
    free(shared);
out:
    criterion_finalize(tests);
    free(filter);
    free(rest);
    return rc;
}
