#include "kube/runtime.h"

#include "common/backoff.h"
#include "common/buf.h"
#include "common/clock.h"
#include "kube/client.h"
#include "kube/kube.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* While the watch has not synced, look again this often even without a publish: the flag may
 * turn true just after the publish that woke us was handled. */
#define SYNC_POLL_US 50000

struct kube_runtime {
	struct kube_runtime_config cfg;
	char name[32];
	struct kube_client *client;
	struct ng_rng rng;
	pthread_t thread;
	bool started;
	int sub; /* store subscription, -1 when none */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool woken;        /* guarded by mu */
	_Atomic bool stop;
	_Atomic uint64_t steps;
};

static void wake_cb(void *ctx)
{
	kube_runtime_wake(ctx);
}

struct kube_runtime *kube_runtime_create(const struct kube_runtime_config *cfg,
					 struct ng_err *reterr)
{
	if (!cfg || !cfg->step) {
		(void)ng_err_set(reterr, NG_EINVAL, 0, "runtime: no step function");
		return NULL;
	}
	struct kube_runtime *rt = calloc(1, sizeof(*rt));
	if (!rt) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	rt->cfg = *cfg;
	rt->sub = -1;
	ng_fmt(rt->name, sizeof(rt->name), "%s", cfg->name ? cfg->name : "controller");
	rt->cfg.name = rt->name;
	ng_rng_seed(&rt->rng, rt->name);
	pthread_condattr_t ca;
	bool ok = pthread_mutex_init(&rt->mu, NULL) == 0 && pthread_condattr_init(&ca) == 0;
	if (ok) {
		ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		     pthread_cond_init(&rt->cv, &ca) == 0;
		pthread_condattr_destroy(&ca);
	}
	if (ok && cfg->kube)
		ok = (rt->client = kube_client_create(cfg->kube)) != NULL;
	if (!ok) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "%s: cannot allocate its state", rt->name);
		kube_runtime_destroy(rt);
		return NULL;
	}
	return rt;
}

/* Waits until @deadline_us (monotonic), a wake-up or a stop; clears the wake-up. */
static void wait_until(struct kube_runtime *rt, int64_t deadline_us)
{
	pthread_mutex_lock(&rt->mu);
	while (!rt->woken && !atomic_load(&rt->stop)) {
		if (deadline_us == KUBE_RUNTIME_IDLE) {
			pthread_cond_wait(&rt->cv, &rt->mu);
			continue;
		}
		struct timespec ts = {.tv_sec = (time_t)(deadline_us / 1000000),
				      .tv_nsec = (long)(deadline_us % 1000000) * 1000};
		if (pthread_cond_timedwait(&rt->cv, &rt->mu, &ts) == ETIMEDOUT)
			break;
	}
	rt->woken = false;
	pthread_mutex_unlock(&rt->mu);
}

/* The gate a watch begins with (kube_runtime_gate): a pointer to a struct converts to a pointer
 * to its first member, so the runtime asks without knowing the watch. */
static bool watch_ready(const struct kube_watch *w)
{
	const struct kube_runtime_gate *g = (const struct kube_runtime_gate *)(const void *)w;
	return g->ready(g);
}

static void *run(void *arg)
{
	struct kube_runtime *rt = arg;
	while (!atomic_load(&rt->stop)) {
		if (rt->cfg.watch && !watch_ready(rt->cfg.watch)) {
			wait_until(rt, ng_now_mono_us() + SYNC_POLL_US);
			continue;
		}
		atomic_fetch_add_explicit(&rt->steps, 1, memory_order_relaxed);
		int64_t next = rt->cfg.step(rt, rt->cfg.ctx);
		if (next != KUBE_RUNTIME_AGAIN)
			wait_until(rt, next);
	}
	if (rt->cfg.finish)
		rt->cfg.finish(rt, rt->cfg.ctx);
	return NULL;
}

ng_status kube_runtime_start(struct kube_runtime *rt, struct ng_err *reterr)
{
	if (rt->cfg.store) {
		rt->sub = kube_store_subscribe(rt->cfg.store, wake_cb, rt);
		if (rt->sub < 0)
			return ng_err_set(reterr, NG_ELIMIT, 0, "%s: too many store subscribers",
					  rt->name);
	}
	/* Signals belong to main's sigwait(): block them in the new thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&rt->thread, NULL, run, rt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return ng_err_set(reterr, NG_EIO, 0, "%s: cannot start its thread (error %d)",
				  rt->name, rc);
	rt->started = true;
	return NG_OK;
}

void kube_runtime_wake(struct kube_runtime *rt)
{
	if (!rt)
		return;
	pthread_mutex_lock(&rt->mu);
	rt->woken = true;
	pthread_cond_signal(&rt->cv);
	pthread_mutex_unlock(&rt->mu);
	if (rt->cfg.interrupt)
		rt->cfg.interrupt(rt->cfg.ctx);
}

bool kube_runtime_stopping(const struct kube_runtime *rt)
{
	return atomic_load(&rt->stop);
}

const _Atomic bool *kube_runtime_stop_flag(const struct kube_runtime *rt)
{
	return &rt->stop;
}

struct kube_client *kube_runtime_client(struct kube_runtime *rt)
{
	return rt->client;
}

struct ng_rng *kube_runtime_rng(struct kube_runtime *rt)
{
	return &rt->rng;
}

uint64_t kube_runtime_steps(const struct kube_runtime *rt)
{
	return atomic_load_explicit(&((struct kube_runtime *)(uintptr_t)rt)->steps,
				    memory_order_relaxed);
}

void kube_runtime_destroy(struct kube_runtime *rt)
{
	if (!rt)
		return;
	if (rt->sub >= 0)
		kube_store_unsubscribe(rt->cfg.store, rt->sub);
	pthread_mutex_lock(&rt->mu);
	atomic_store(&rt->stop, true);
	pthread_cond_broadcast(&rt->cv);
	pthread_mutex_unlock(&rt->mu);
	if (rt->cfg.interrupt)
		rt->cfg.interrupt(rt->cfg.ctx);
	if (rt->started)
		(void)pthread_join(rt->thread, NULL);
	kube_client_destroy(rt->client);
	pthread_cond_destroy(&rt->cv);
	pthread_mutex_destroy(&rt->mu);
	free(rt);
}
