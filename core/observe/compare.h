/*
 * core (internal): the pure comparison behind an observation.
 *
 * cordon_observe_run (core/observe/observe.h) calls it on what the observer
 * reported; the host, cordon-contract and the tests call it directly. It
 * is the host's judgement, not a provider's tool, so it is in no installed
 * header and no library exports it.
 */
#ifndef CORDON_SDK_COMPARE_H
#define CORDON_SDK_COMPARE_H

#include <cordon/provider.h>

/*
 * Compare an observer report with the host's view (both JSON; the host
 * view as written by cordon_observe_run) and produce the isolation object
 * with its checks. Which kernel answered (the host's own, gVisor's,
 * another) decides which checks apply; each axis is true only if every
 * check behind it held. ret_isolation_json is malloc'd (free).
 */
int cordon__observe_compare(const char *report_json, const char *host_view_json,
                           char **ret_isolation_json, struct cordon_error *err);

#endif
