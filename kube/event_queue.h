/* Events a controller posts after the writes that decide something: queued during its round,
 * posted at its end, and held back while something new is waiting to be decided, for a bounded
 * time (docs/architecture.md, "The controller runtime"). One queue per controller thread. */
#ifndef NG_KUBE_EVENT_QUEUE_H
#define NG_KUBE_EVENT_QUEUE_H

#include "kube/write.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_queued_event;

struct kube_event_queue {
	struct kube_queued_event *v;
	size_t n, cap;
};

/* Events queued at most; past this they are posted at once. */
#define KUBE_EVENT_QUEUE_MAX 4096
/* An Event queued this long (on the Events' own clock) is posted even while news waits. */
#define KUBE_EVENT_QUEUE_WAIT_MS 1000

/**
 * Copies @ev (its strings) to the end of @q. False when @q holds KUBE_EVENT_QUEUE_MAX Events or
 * memory runs out: the caller posts it at once.
 */
bool kube_event_queue_put(struct kube_event_queue *q, const struct kube_event *ev);

/**
 * Posts @q's Events oldest first with @c (failures logged as @component's), while @news(@ctx)
 * is false; once it is true, only those queued KUBE_EVENT_QUEUE_WAIT_MS or more before @now_ms
 * (the clock of the Events' now_wall_ms). The rest stay queued, in order. @news may be NULL.
 */
void kube_event_queue_flush(struct kube_event_queue *q, struct kube_client *c,
			    const char *component, int64_t now_ms, bool (*news)(const void *ctx),
			    const void *ctx);

/** Drops what is queued, unposted (a controller that stops, or a new leadership term). */
void kube_event_queue_clear(struct kube_event_queue *q);

#endif
