/* The Cluster API gating controller without its runtime, for its unit test
 * (tests/unit/test-controller-capi.c) and controller/capi.c itself. Nothing else includes this.
 *
 * Threads: a controller made here is driven from one thread, the test's. */
#ifndef NG_CONTROLLER_CAPI_INTERNAL_H
#define NG_CONTROLLER_CAPI_INTERNAL_H

#include "controller/capi.h"

#include <stdint.h>

struct kube_client;
struct kube_snapshot;

/**
 * A controller with no runtime thread, writing through @client (borrowed). @cfg's store, watch
 * and leader may be NULL (always acts). Free with capi_stop(). NULL with @reterr (NG_ENOMEM).
 */
struct capi *capi_create(const struct capi_config *cfg, struct kube_client *client,
			 struct ng_err *reterr);

/**
 * One pass over every Machine and every cluster-api NodeDisruption of @s (borrowed), stopping
 * once CAPI_WRITES_PER_PASS writes (Events included; a release and its Event may pass it by one)
 * are made. True when it stopped so: writes may be left for another pass.
 */
bool capi_pass(struct capi *c, const struct kube_snapshot *s);

/* Writes one pass makes at most, so a rollout of hundreds of Machines does not hold the thread
 * (and the leadership check) for seconds: 64 writes take well under a second. */
#define CAPI_WRITES_PER_PASS 64

#endif
