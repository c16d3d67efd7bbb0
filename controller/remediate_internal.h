/* The remediation controller without its runtime, for its unit test
 * (tests/unit/test-controller-remediate.c) and controller/remediate.c itself: a controller made
 * with a given kube client, and one pass of it over a given snapshot at a given time. Nothing
 * else includes this.
 *
 * Threads: a controller made here is driven from one thread, the test's. */
#ifndef NG_CONTROLLER_REMEDIATE_INTERNAL_H
#define NG_CONTROLLER_REMEDIATE_INTERNAL_H

#include "controller/remediate.h"

#include <stdint.h>

struct kube_client;
struct kube_snapshot;

/**
 * A controller with no runtime thread, writing through @client (borrowed). @cfg's store, watch
 * and leader may be NULL (always acts). Free with remediate_stop(). NULL with @reterr as
 * remediate_start().
 */
struct remediate *remediate_create(const struct remediate_config *cfg, struct kube_client *client,
				   struct ng_err *reterr);

/**
 * One pass over every NodeRemediation of @s (borrowed) at @now_wall_ms: plan, finalizer, status,
 * then deletions and creations. Returns the wall time at which a plan changes on its own (a
 * condition falls due, a cooldown ends), or 0 for none.
 */
int64_t remediate_pass(struct remediate *m, const struct kube_snapshot *s, int64_t now_wall_ms);

#endif
