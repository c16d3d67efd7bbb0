/* The self-signed renewer without its runtime, for its unit test
 * (tests/unit/test-controller-selfsigned.c) and controller/selfsigned.c itself: a renewer made
 * with a given kube client, and one step of it. Nothing else includes this.
 *
 * Threads: a renewer made here is driven from one thread, the test's (@install runs on it). */
#ifndef NG_CONTROLLER_SELFSIGNED_INTERNAL_H
#define NG_CONTROLLER_SELFSIGNED_INTERNAL_H

#include "controller/selfsigned.h"

#include <stdint.h>

struct kube_client;

/**
 * A renewer with no runtime thread, from @first (read only) and writing through @client
 * (borrowed). Free with selfsigned_stop(). NULL with @reterr (NG_ENOMEM).
 */
struct selfsigned *selfsigned_create(const struct selfsigned_config *cfg,
				     const struct selfsigned_first *first,
				     struct kube_client *client, struct ng_err *reterr);

/**
 * One step: the CA read (or created), the serving certificate renewed when due or when the CA
 * changed, the caBundles patched. Returns the monotonic time of the next step.
 */
int64_t selfsigned_step(struct selfsigned *s);

#endif
