#include "kube/internal.h"

#include <pthread.h>
#include <stdlib.h>

struct kube_store {
	pthread_mutex_t mu; /* guards current; held for one pointer copy and one increment */
	struct kube_snapshot *current;
	uint64_t generation;
};

struct kube_store *kube_store_create(void)
{
	struct kube_store *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	struct kube_builder *b = kube_builder_create();
	if (!b || kube_builder_finish(b, &st->current) != NG_OK) {
		free(st);
		return NULL;
	}
	pthread_mutex_init(&st->mu, NULL);
	return st;
}

void kube_store_destroy(struct kube_store *st)
{
	if (!st)
		return;
	kube_snapshot_release(st->current);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

void kube_store_publish(struct kube_store *st, struct kube_snapshot *next)
{
	pthread_mutex_lock(&st->mu);
	struct kube_snapshot *old = st->current;
	st->current = next;
	st->generation++;
	pthread_mutex_unlock(&st->mu);
	kube_snapshot_release(old);
}

struct kube_snapshot *kube_store_acquire(struct kube_store *st)
{
	pthread_mutex_lock(&st->mu);
	struct kube_snapshot *s = st->current;
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&st->mu);
	return s;
}

uint64_t kube_store_generation(struct kube_store *st)
{
	pthread_mutex_lock(&st->mu);
	uint64_t g = st->generation;
	pthread_mutex_unlock(&st->mu);
	return g;
}
