/* The autoRequest controller without its runtime, for its unit test
 * (tests/unit/test-controller-autorequest.c) and controller/autorequest.c itself: a controller
 * made with a given kube client, and one step of it. Nothing else includes this.
 *
 * Threads: a controller made here is driven from one thread, the test's (autoreq_submit() may
 * be called from it too). */
#ifndef NG_CONTROLLER_AUTOREQUEST_INTERNAL_H
#define NG_CONTROLLER_AUTOREQUEST_INTERNAL_H

#include "controller/autorequest.h"

#include <stdint.h>

struct kube_client;

/**
 * A controller with no runtime thread, creating requests through @client (borrowed). Free with
 * autoreq_stop(). NULL with @reterr (NG_ENOMEM).
 */
struct autoreq *autoreq_create(const struct autoreq_config *cfg, struct kube_client *client,
			       struct ng_err *reterr);

/**
 * One step: the oldest queued node is asked for when the rate allows. Returns as the runtime
 * step does: KUBE_RUNTIME_IDLE (queue empty), KUBE_RUNTIME_AGAIN (more queued), or the
 * monotonic time the next token is there.
 */
int64_t autoreq_step(struct autoreq *a);

#endif
