/* A controller's queue of Events to post after its round (kube/event_queue.h). */
#include "kube/event_queue.h"

#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

/* One Event with its strings in one block (@ev's pointers point into @block). */
struct kube_queued_event {
	struct kube_event ev;
	char *block;
};

static size_t len_of(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Copies @s into @at (NULL stays NULL); moves @at past it. */
static const char *put(char **at, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *to = memcpy(*at, s, n);
	*at += n;
	return to;
}

bool kube_event_queue_put(struct kube_event_queue *q, const struct kube_event *ev)
{
	if (q->n >= KUBE_EVENT_QUEUE_MAX)
		return false;
	struct kube_queued_event *v = ng_array_grow(q->v, &q->cap, q->n, sizeof(*v));
	if (!v)
		return false;
	q->v = v;
	size_t len = len_of(ev->about.ns) + len_of(ev->about.name) + len_of(ev->reason) +
		     len_of(ev->type) + len_of(ev->message) + len_of(ev->instance) +
		     len_of(ev->uid);
	char *block = malloc(len ? len : 1), *at = block;
	if (!block)
		return false;
	struct kube_queued_event *e = &q->v[q->n++];
	e->block = block;
	e->ev = *ev;
	e->ev.about.ns = put(&at, ev->about.ns);
	e->ev.about.name = put(&at, ev->about.name);
	e->ev.reason = put(&at, ev->reason);
	e->ev.type = put(&at, ev->type);
	e->ev.message = put(&at, ev->message);
	e->ev.instance = put(&at, ev->instance);
	e->ev.uid = put(&at, ev->uid);
	return true;
}

void kube_event_queue_flush(struct kube_event_queue *q, struct kube_client *c,
			    const char *component, int64_t now_ms, bool (*news)(const void *ctx),
			    const void *ctx)
{
	size_t i = 0;
	for (; i < q->n; i++) {
		struct kube_queued_event *e = &q->v[i];
		if (news && now_ms - e->ev.now_wall_ms < KUBE_EVENT_QUEUE_WAIT_MS && news(ctx))
			break; /* the queue is oldest first: the rest are younger still */
		struct kube_write_result r;
		kube_create_event(c, &e->ev, &r);
		kube_write_log(component, "event not recorded", &e->ev.about, &r);
		free(e->block);
	}
	if (i && i < q->n) /* (never with NULL: memmove's arguments may not be) */
		memmove(q->v, q->v + i, (q->n - i) * sizeof(*q->v));
	q->n -= i;
}

void kube_event_queue_clear(struct kube_event_queue *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].block);
	free(q->v);
	*q = (struct kube_event_queue){0};
}
