/* The drainer's round without its runtime, for its unit test (tests/unit/test-controller-drain.c)
 * and controller/drain.c itself: a drainer made with a given kube client, and one round of it
 * against a given snapshot at given times. Nothing else includes this.
 *
 * Threads: a drainer made here is driven from one thread, the test's. */
#ifndef NG_CONTROLLER_DRAIN_INTERNAL_H
#define NG_CONTROLLER_DRAIN_INTERNAL_H

#include "controller/drain.h"
#include "controller/scaffold.h"

#include <stdint.h>

struct kube_client;
struct kube_snapshot;

/**
 * A drainer with no runtime thread, writing through @client (borrowed). @cfg's store, watch
 * and leader may be NULL (always acts). Free with drain_stop(). NULL with @reterr as
 * drain_start().
 */
struct drain *drain_create(const struct drain_config *cfg, struct kube_client *client,
			   struct ng_err *reterr);

/**
 * One round over @s (borrowed) at @now_wall_ms (epoch) and @now_mono_ms (the monotonic clock the
 * drainer's waits are kept in): every request's next step, then the sweep of notes whose request
 * is gone. Returns the monotonic time at which the next round is due.
 */
int64_t drain_round(struct drain *d, const struct kube_snapshot *s, int64_t now_wall_ms,
		    int64_t now_mono_ms);

#endif
