/* The controller runtime: one way to run a loop that talks to the API server (STYLE.md B15).
 * The watch, the lease, the gate and autoRequest run on it, and so will the drainer and
 * remediation; none of them starts, stops, wakes or waits for the cache on its own.
 *
 * A runtime owns one thread and one kube_client for that thread. The thread calls the
 * controller's step function over and over; the step says when it wants to run again at the
 * latest (a monotonic deadline), and the runtime sleeps until then or until woken:
 *   - by kube_runtime_wake() from any thread (autoRequest's queue, a test),
 *   - by every publish of the store it was given (level-triggered: the step looks at the
 *     newest snapshot and decides what to do; a missed or doubled wake-up is harmless),
 *   - by kube_runtime_destroy(), after which no step starts.
 * With a watch given, no step runs before the watch has listed everything: deciding with half a
 * cache could grant what an unseen budget forbids. Signals are blocked in the thread (they
 * belong to main's sigwait()).
 *
 * Threads: create, start and destroy from the owning thread (main), once each. wake() and
 * stopping() from any thread. client() and rng() only from the runtime's thread (or before
 * start). */
#ifndef NG_KUBE_RUNTIME_H
#define NG_KUBE_RUNTIME_H

#include "common/status.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct kube_client;
struct kube_config;
struct kube_store;
struct kube_watch;
struct ng_buf;
struct ng_rng;
struct kube_runtime;

/* Step results: run again at once, or only when woken. Anything else is a deadline on
 * ng_now_mono_us()'s clock. */
#define KUBE_RUNTIME_AGAIN INT64_MIN
#define KUBE_RUNTIME_IDLE INT64_MAX

/* What a runtime waits for before its first step, so that it does not depend on what provides
 * it: whether @g's source is ready (a watch: every kind listed). Any thread. A struct kube_watch
 * begins with one (kube/watch.c), so the watch a runtime is given is one. */
struct kube_runtime_gate {
	bool (*ready)(const struct kube_runtime_gate *g);
};

struct kube_runtime_config {
	const char *name;               /* "gate": the thread's name and the logs' component */
	const struct kube_config *kube; /* borrowed, read by create only; NULL: no client */
	struct kube_store *store;       /* borrowed, must outlive the runtime; NULL: no wake-ups */
	/* borrowed, must outlive it; NULL: run at once. Waited for through the
	 * struct kube_runtime_gate it begins with. */
	const struct kube_watch *watch;
	/* One pass of the controller, on the runtime's thread. Returns when to run again at the
	 * latest: KUBE_RUNTIME_AGAIN, KUBE_RUNTIME_IDLE or a monotonic deadline in µs. A step
	 * that blocks elsewhere (curl_multi_poll) must return when interrupt() is called. */
	int64_t (*step)(struct kube_runtime *rt, void *ctx);
	/* After the last step, on the thread: the last writes (a lease released). NULL: none. */
	void (*finish)(struct kube_runtime *rt, void *ctx);
	/* Called by wake() and destroy() besides the runtime's own wake-up: for a step that
	 * waits on something else. Any thread. NULL: none. */
	void (*interrupt)(void *ctx);
	void *ctx; /* borrowed: the controller; must outlive the runtime */
};

/**
 * Creates the runtime and its kube_client (from cfg->kube), without starting the thread, so
 * the controller can keep the handle before its first step. NULL with @reterr: NG_ENOMEM,
 * NG_EINVAL (no step). Caller frees with kube_runtime_destroy(). curl_global_init() must have
 * run.
 */
struct kube_runtime *kube_runtime_create(const struct kube_runtime_config *cfg,
					 struct ng_err *reterr);

/** Starts the thread (signals blocked in it). NG_EIO when it cannot be created. */
NG_NODISCARD ng_status kube_runtime_start(struct kube_runtime *rt, struct ng_err *reterr);

/** Makes the thread run a step soon (at once if it is waiting). Any thread; NULL is a no-op. */
void kube_runtime_wake(struct kube_runtime *rt);

/** True once destroy has begun: a long step should end early. Any thread. */
bool kube_runtime_stopping(const struct kube_runtime *rt);

/** The flag behind kube_runtime_stopping(), for calls that poll one (health hooks). */
const _Atomic bool *kube_runtime_stop_flag(const struct kube_runtime *rt);

/** The runtime thread's own client (borrowed; NULL without cfg->kube). */
struct kube_client *kube_runtime_client(struct kube_runtime *rt);

/** A jitter source for the runtime's thread (borrowed), seeded apart per process. */
struct ng_rng *kube_runtime_rng(struct kube_runtime *rt);

/** Steps run so far. Any thread. */
uint64_t kube_runtime_steps(const struct kube_runtime *rt);

/**
 * Stops: no new step starts, the running one is interrupted, finish() runs, the thread is
 * joined, the client freed. Accepts NULL and a runtime that was never started. Owner only.
 */
void kube_runtime_destroy(struct kube_runtime *rt);

#endif
