#include "kube/internal.h"

#include <pthread.h>
#include <stdlib.h>

struct kube_store {
	pthread_mutex_t mu; /* guards current; held for one pointer copy and one increment */
	struct kube_snapshot *current;
	uint64_t generation;
	/* Subscribers: their own lock, held while they are called, so unsubscribe waits for a
	 * call in progress. Lock order: sub_mu, then whatever a subscriber takes. */
	pthread_mutex_t sub_mu;
	struct {
		void (*fn)(void *ctx);
		void *ctx;
	} subs[KUBE_STORE_MAX_SUBSCRIBERS];
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
	pthread_mutex_init(&st->sub_mu, NULL);
	return st;
}

void kube_store_destroy(struct kube_store *st)
{
	if (!st)
		return;
	kube_snapshot_release(st->current);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->sub_mu);
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
	pthread_mutex_lock(&st->sub_mu);
	for (int i = 0; i < KUBE_STORE_MAX_SUBSCRIBERS; i++)
		if (st->subs[i].fn)
			st->subs[i].fn(st->subs[i].ctx);
	pthread_mutex_unlock(&st->sub_mu);
}

int kube_store_subscribe(struct kube_store *st, void (*fn)(void *ctx), void *ctx)
{
	int sub = -1;
	pthread_mutex_lock(&st->sub_mu);
	for (int i = 0; i < KUBE_STORE_MAX_SUBSCRIBERS && sub < 0; i++)
		if (!st->subs[i].fn) {
			st->subs[i].fn = fn;
			st->subs[i].ctx = ctx;
			sub = i;
		}
	pthread_mutex_unlock(&st->sub_mu);
	return sub;
}

void kube_store_unsubscribe(struct kube_store *st, int sub)
{
	if (sub < 0 || sub >= KUBE_STORE_MAX_SUBSCRIBERS)
		return;
	pthread_mutex_lock(&st->sub_mu);
	st->subs[sub].fn = NULL;
	st->subs[sub].ctx = NULL;
	pthread_mutex_unlock(&st->sub_mu);
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
