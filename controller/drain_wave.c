/* The drainer's workers (docs/drainer.md "A wave at once"): a round's requests are stepped by the
 * round's thread and DRAIN_WORKERS workers at once, each request by one thread, each thread with
 * a kube client of its own. Without them the requests a wave grants together were stepped one
 * after another, each step's writes (finalizer, cordon, evictions, status) waiting for the
 * answers of every step before it; now the 20th request's eviction does not wait for the 19
 * steps before it.
 *
 * What the steps share is guarded in struct drain (drain_internal.h); one request is never
 * stepped by two threads in a round, and a round ends when every step has. */
#include "controller/drain_internal.h"

#include "common/arena.h"
#include "common/log.h"
#include "kube/client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct drain_wave {
	struct drain *d;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t threads[DRAIN_WORKERS];
	struct kube_client *clients[DRAIN_WORKERS];
	size_t nthreads;
	bool quit;
	/* The round in progress; its number moves when the round's thread hands one out. */
	uint64_t round;
	const struct kube_snapshot *s;
	const struct kube_nd *nds;
	size_t n;
	int64_t now_wall_ms, now_mono_ms;
	_Atomic size_t taken; /* requests handed to a thread so far */
	size_t busy;          /* workers still in the round */
	int64_t next_mono_ms; /* the soonest a step of the round wants to come back */
};

/* Steps requests of the round until none is left to take; the soonest time a step wants to
 * come back lowers *@next_mono_ms. */
static void take_requests(struct drain_wave *w, struct drain *d, struct kube_client *client,
			  const struct kube_snapshot *s, const struct kube_nd *nds, size_t n,
			  int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms)
{
	struct ng_arena *arena = ng_arena_create(STEP_ARENA_BYTES);
	if (!arena) {
		*next_mono_ms = now_mono_ms + POLL_MS; /* out of memory: another round soon */
		return;
	}
	for (;;) {
		size_t i = atomic_fetch_add(&w->taken, 1);
		if (i >= n || drain_stopping(d))
			break;
		ng_arena_reset(arena);
		drain_one_request(d, client, s, &nds[i], arena, now_wall_ms, now_mono_ms,
				  next_mono_ms);
	}
	ng_arena_destroy(arena);
}

static void *worker_main(void *arg)
{
	struct drain_wave *w = ((void **)arg)[0];
	size_t k = (size_t)(uintptr_t)((void **)arg)[1];
	free(arg);
	uint64_t seen = 0;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->quit && w->round == seen)
			pthread_cond_wait(&w->go, &w->mu);
		if (w->quit)
			break;
		seen = w->round;
		const struct kube_snapshot *s = w->s;
		const struct kube_nd *nds = w->nds;
		size_t n = w->n;
		int64_t wall = w->now_wall_ms, mono = w->now_mono_ms;
		pthread_mutex_unlock(&w->mu);
		int64_t next = INT64_MAX;
		take_requests(w, w->d, w->clients[k], s, nds, n, wall, mono, &next);
		pthread_mutex_lock(&w->mu);
		if (next < w->next_mono_ms)
			w->next_mono_ms = next;
		if (--w->busy == 0)
			pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct drain_wave *drain_wave_start(struct drain *d)
{
	if (!d->cfg.kube)
		return NULL;
	struct drain_wave *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->d = d;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->done, NULL);
	for (size_t k = 0; k < DRAIN_WORKERS; k++) {
		void **arg = malloc(2 * sizeof(*arg));
		w->clients[k] = kube_client_create(d->cfg.kube);
		if (!arg || !w->clients[k]) {
			free(arg);
			kube_client_destroy(w->clients[k]);
			w->clients[k] = NULL;
			break;
		}
		arg[0] = w;
		arg[1] = (void *)(uintptr_t)k;
		if (pthread_create(&w->threads[k], NULL, worker_main, arg) != 0) {
			free(arg);
			kube_client_destroy(w->clients[k]);
			w->clients[k] = NULL;
			break;
		}
		w->nthreads++;
	}
	struct ng_logline l;
	if (w->nthreads < DRAIN_WORKERS &&
	    ng_log_begin(&l, NG_LOG_WARN, "drain",
			 "fewer workers than wanted: a wave's requests wait for each other")) {
		ng_log_i64(&l, "workers", (int64_t)w->nthreads);
		ng_log_end(&l);
	}
	if (!w->nthreads) {
		drain_wave_stop(w);
		return NULL;
	}
	return w;
}

void drain_wave_round(struct drain_wave *w, struct drain *d, const struct kube_snapshot *s,
		      const struct kube_nd *nds, size_t n, int64_t now_wall_ms, int64_t now_mono_ms,
		      int64_t *next_mono_ms)
{
	if (!w || n < 2) {
		/* One thread: each request in turn. */
		struct ng_arena *arena = ng_arena_create(STEP_ARENA_BYTES);
		for (size_t i = 0; arena && i < n && !drain_stopping(d); i++) {
			ng_arena_reset(arena);
			drain_one_request(d, d->client, s, &nds[i], arena, now_wall_ms, now_mono_ms,
					  next_mono_ms);
		}
		ng_arena_destroy(arena);
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->s = s;
	w->nds = nds;
	w->n = n;
	w->now_wall_ms = now_wall_ms;
	w->now_mono_ms = now_mono_ms;
	atomic_store(&w->taken, 0);
	w->busy = w->nthreads;
	w->next_mono_ms = INT64_MAX;
	w->round++;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->mu);
	int64_t next = INT64_MAX;
	take_requests(w, d, d->client, s, nds, n, now_wall_ms, now_mono_ms, &next);
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->done, &w->mu);
	if (w->next_mono_ms < next)
		next = w->next_mono_ms;
	pthread_mutex_unlock(&w->mu);
	if (next < *next_mono_ms)
		*next_mono_ms = next;
}

void drain_wave_stop(struct drain_wave *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->quit = true;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->mu);
	for (size_t k = 0; k < w->nthreads; k++) {
		(void)pthread_join(w->threads[k], NULL);
		kube_client_destroy(w->clients[k]);
	}
	pthread_cond_destroy(&w->go);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
