/* Unit tests of core/exit-status.c: the one status -> exit status mapping
 * of the cordon command, for run results and exec results alike. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cordon/cordon.h>

struct exit_case {
    const char *result;   /* a result document, or NULL */
    int run;              /* cordon_result_exit_status */
    int exec;             /* cordon_exec_exit_status */
};

static const struct exit_case exit_cases[] = {
    { "{\"status\":\"success\",\"exit_code\":0}", 0, 0 },
    { "{\"status\":\"exited\",\"exit_code\":3}", 3, 3 },
    { "{\"status\":\"error\",\"exit_code\":3}", 3, 3 },
    /* the program succeeded, cordon did not */
    { "{\"status\":\"error\",\"exit_code\":0}", 125, 125 },
    { "{\"status\":\"signaled\",\"signal\":9}", 137, 137 },
    { "{\"status\":\"signaled\",\"signal\":15}", 143, 143 },
    { "{\"status\":\"timeout\"}", 124, 124 },
    { "{\"status\":\"expired\"}", 124, 124 },
    { "{\"status\":\"oom\"}", 137, 137 },
    { "{\"status\":\"output_limit\"}", 137, 137 },
    { "{\"status\":\"cancelled\"}", 137, 137 },
    { "{\"status\":\"blocked\"}", 125, 125 },
    { "{\"status\":\"host_error\"}", 125, 125 },
    { "{\"status\":\"success\"}", 125, 125 },
    { "{}", 125, 125 },
    { "not json", 125, 125 },
    { NULL, 125, 125 },
};

ParameterizedTestParameters(exit_status, cases)
{
    static size_t idx[sizeof(exit_cases) / sizeof(exit_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, exit_status, cases)
{
    const struct exit_case *c = &exit_cases[*i];

    cr_expect_eq(cordon_result_exit_status(c->result), c->run, "%s", c->result ? c->result : "NULL");
    cr_expect_eq(cordon_exec_exit_status(c->result), c->exec, "%s", c->result ? c->result : "NULL");
}
