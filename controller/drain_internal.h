/* The drainer's insides, shared by its files and its unit test: controller/drain.c (the step,
 * the status, the small things and the memo of what was asked a moment ago),
 * controller/drain_nodes.c (holding and releasing nodes: cordon, taints, the nodegate.io/drain
 * note, the request's finalizer) and controller/drain_pods.c (waiting for pods, choosing them,
 * evicting or deleting them, volumes); tests/unit/test-controller-drain.c drives one round
 * against a snapshot: a drainer made with a given kube client, and one round of it at given
 * times. Nothing else includes this.
 *
 * Threads: a round runs on the drainer's thread (its runtime's step), or on the test's for a
 * drainer made by drain_create(); the requests' steps of a round run on that thread and on the
 * drainer's workers at once (controller/drain_wave.c), each step with a kube client of its own
 * thread. What the steps share is struct drain's: its memo, chosen counts, Events and random
 * draws behind d->mu (the asked_*() helpers, the functions that take it), its counters atomic.
 * Everything else a step touches is its struct req's or the snapshot's (read only). */
#ifndef NG_CONTROLLER_DRAIN_INTERNAL_H
#define NG_CONTROLLER_DRAIN_INTERNAL_H

#include "common/backoff.h"
#include "common/memo.h"
#include "common/prom.h"
#include "controller/drain.h"
#include "controller/scaffold.h"
#include "kube/records.h"
#include "kube/write.h"
#include "policy/drain_step.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct drain_wave;
struct kube_client;
struct kube_snapshot;
struct ng_arena;
struct ng_intern;

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

/* ---- shared by drain.c, drain_nodes.c and drain_pods.c ---- */
/* One step's scratch: selectors, names, patch bodies. */
#define STEP_ARENA_BYTES (16u << 20)
/* Jobs, VolumeAttachments and reboots are not in the cache: they are looked at this often. */
#define POLL_MS 2000
/* Without a publish, a step runs at least this often (backoffs and timeouts set sooner). */
#define IDLE_MS 30000
/* An eviction or delete that was answered is not repeated for this long: the cache shows the
 * pod terminating or gone well before. A 429 waits for the answer's Retry-After instead. */
#define ASKED_MS 15000
/* A pod asked to leave is awaited by the watch (kube_watch_await_gone()) this long, and again at
 * every round while it is leaving (a round comes at least every IDLE_MS): its deletion is
 * published at once, not at the end of the batch window, and the drain sees it gone. */
#define AWAIT_GONE_MS (2 * IDLE_MS)
/* Entries of the asked memo: far more pods than a wave asks to leave within ASKED_MS. */
#define ASKED_MAX 65536
#define DEFAULT_RETRY_AFTER_S 5
/* NodeGateConfig spec.drain.backoff defaults (DESIGN.md §3.4), in ms. */
#define BACKOFF_BASE_MS 300000
#define BACKOFF_MAX_MS 1200000
#define BACKOFF_JITTER_MS 300000
/* Pods named in a message before "and N more". */
#define MSG_PODS 8

/* Failure reasons of nodegate_drain_failures_total. */
enum failure { F_BLOCKED, F_HELD, F_TIMEOUT, F_SPEC, F_OPERATION, F_COUNT };

struct chosen {
	uint64_t key; /* hash of the request's name */
	int64_t pods;
};

/* An Event of the round, written once every request has had its step: Events tell people what
 * happened and nothing waits on them, so they come after the writes the drains wait on. */
struct queued_event {
	enum kube_kind kind;
	int64_t at_ms;
	char *ns, *name, *uid, *reason, *type, *msg; /* one malloc'd block, from ns on */
};
/* Events queued at most; past this they are written at once. */
#define EVENTS_QUEUED_MAX 4096
/* Events a round writes even when a newer snapshot is out already. */
#define EVENTS_AT_LEAST 8

struct drain {
	struct drain_config cfg;
	struct kube_runtime *rt;
	struct kube_client *client; /* the round's thread's */
	/* The workers that step a round's requests beside the round's thread, so the requests a
	 * wave grants together are evicted together (NULL: the round's thread steps them all). */
	struct drain_wave *wave;
	/* Guards asked, chosen, events and rng while a round's steps run at once. */
	pthread_mutex_t mu;
	struct ng_rng rng;
	/* What this drainer wrote a moment ago and its cache may not show yet: pods asked to leave
	 * (hash of namespace/name), versions of requests and nodes written over. */
	struct ng_memo asked;
	/* The most pods the current attempts chose, per request, so totalPods survives a status
	 * write lost to a conflict while pods were already leaving; forgotten once Drained. */
	struct chosen *chosen;
	size_t nchosen, capchosen;
	/* The round's Events, written at its end (struct queued_event). */
	struct queued_event *events;
	size_t nevents, capevents;
	_Atomic uint64_t evicted[4]; /* by enum kube_drain_strategy */
	_Atomic uint64_t attempts;
	_Atomic uint64_t failures[F_COUNT];
	_Atomic uint64_t nodes_held;
	_Atomic uint64_t writes, conflicts, errors;
	struct ng_prom_hist duration;
};

/* One request in one step: what was read, and the status being built. */
struct req {
	struct drain *d;
	struct kube_client
	    *client; /* the step's thread's: every write of the step goes through it */
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	const struct kube_ngc *ngc; /* NULL: defaults */
	const struct kube_nd *nd;
	const struct kube_nd_detail *x;
	const char *name;
	/* The request's version this step's conditional writes carry: the cache's, then the one the
	 * answer to this step's finalizer write gave (the step goes on without waiting for the
	 * watch to bring it). */
	const char *rv;
	struct ng_arena *arena;
	int64_t now_ms, now_mono_ms;
	int64_t *next_mono_ms;
	const struct kube_condition *ready; /* the current Ready condition; NULL: none */
	enum pol_drain_phase was;           /* its reason as a phase */
	bool began;                         /* this step starts a drain attempt */
	/* The status this step wants. */
	enum pol_drain_phase phase;
	char msg[1024];
	struct kube_nd_drain_status ds;
	/* Namespaces whose labels this step has read (one GET each, not one per pod), for
	 * protectedNamespaces and the drain rules' namespaceSelectors; ok false: unreadable. */
	struct ns_seen {
		uint32_t ns;
		bool ok;
		uint16_t nlabels;
		const struct kube_label *labels;
	} ns_seen[32];
	size_t nns;
};

/* nodegate_drain_evictions_total's strategy labels, by enum kube_drain_strategy. */
extern const char *const strategy_names[4];

/* controller/drain.c: the small things. */
/* The string @id of the snapshot's pool. */
const char *str(const struct req *r, uint32_t id);
/* The request's step comes back by @at_mono_ms at the latest. */
void soon(struct req *r, int64_t at_mono_ms);
/* One log line about the request (@node and @detail may be NULL). */
void logline(const struct req *r, const char *msg, const char *node, const char *detail);
/* Counts write @w (@what to @ref) in the drainer's metrics; logs it unless it was a conflict. */
void count_write(struct drain *d, const struct kube_write_result *w, const char *what,
		 const struct kube_ref *ref);
/* An Event on the request. */
void event(struct req *r, const char *reason, const char *type, const char *msg);
/* An Event on node @n. */
void node_event(struct req *r, const struct kube_node *n, const char *reason, const char *msg);
/* controller/drain.c: a step's state for work of the round that is no one request's (the sweep
 * of notes, the lifecycle conditions): no request, no config, logged as @name. */
struct req round_req(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		     int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms,
		     const char *name);
/* controller/drain.c: whether a snapshot newer than @s is out: writes nothing waits on (Events,
 * node conditions) yield to the next round, so the drains it moves on come first. */
bool newer_snapshot(const struct drain *d, const struct kube_snapshot *s);
/* controller/drain_nodes.c: the lifecycle conditions of every node, after the requests' steps:
 * those the requests holding it want, and False once nothing holds it. */
void node_lifecycle(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		    int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms);
/* Whether note @n lists request @name as a holder. */
bool note_holds(const struct kube_drain_note *n, uint32_t name);
/* Whether node @n carries taint @t (key, value and effect). */
bool node_has_taint(const struct kube_node *n, const struct kube_taint *t);
/* Pod @p as a key of the asked table. */
uint64_t pod_key(const struct req *r, const struct kube_pod *p);

/* controller/drain.c: keys of the asked memo (d->asked, common/memo.h; in memory only). */
/* Whether @key is in the asked memo at the step's time (under d->mu). */
bool asked_has(struct req *r, uint64_t key);
/* Puts @key into the asked memo until @until_mono_ms (under d->mu). */
void asked_put(struct req *r, uint64_t key, int64_t until_mono_ms);
/* After a status write @w: the request's version is remembered as written over. */
void nd_written(struct req *r, const struct kube_write_result *w);
/* Node @n as a key of the asked table (its version included). */
uint64_t node_key(const struct req *r, const struct kube_node *n);
/* Whether node @n is in a version this drainer has written over; the step comes back soon. */
bool node_written(struct req *r, const struct kube_node *n);

/* controller/drain.c: the status. */
/* Writes the status @r built (r->phase, r->msg, r->ds) when it differs from what the request
 * shows, with the Events and metrics of a phase change. Whether the request is as @r says now. */
bool write_status(struct req *r);
/* The attempt failed for reason @f: counts it, backs off, says @why. */
void fail_attempt(struct req *r, enum failure f, const char *why);

/* controller/drain_nodes.c */
/* Holds node @n for the request; true when it is held as asked now. */
bool hold_node(struct req *r, const struct kube_node *n);
/* Gives node @n back from holder @holder (its request @x, NULL when gone); true when nothing
 * was left to do or the API server just took the patch that gives it back. */
bool release_node(struct req *r, const struct kube_node *n, uint32_t holder,
		  const struct kube_nd_detail *x);
/* Adds or removes the drainer's finalizer, conditional on r->rv; when the answer gives the new
 * version, r->rv is that from then on. */
enum kube_write_outcome set_finalizer(struct req *r, bool present);
/* The nodes of the request that exist, in @ret (arena); their count. */
size_t request_nodes(struct req *r, const struct kube_node ***ret);
/* Labels node @n quarantined for the request (DRAIN_QUARANTINE_LABEL). True when it is (the cache
 * shows it, or the API server just took the patch). */
bool quarantine_node(struct req *r, const struct kube_node *n);

/* controller/drain.c: one request's step in a round, through @client (the calling thread's),
 * with @arena as its scratch; lowers *@next_mono_ms to when it wants to come back. */
void drain_one_request(struct drain *d, struct kube_client *client, const struct kube_snapshot *s,
		       const struct kube_nd *nd, struct ng_arena *arena, int64_t now_wall_ms,
		       int64_t now_mono_ms, int64_t *next_mono_ms);

/* controller/drain_wave.c: the workers that step a round's requests at once. */
/* Workers that step requests beside the round's thread, each with its own kube client. */
#define DRAIN_WORKERS 7
/* Starts the workers for @d, their clients made from @d->cfg.kube. NULL on failure (the round's
 * thread then steps every request itself). */
struct drain_wave *drain_wave_start(struct drain *d);
/* Steps the @n requests @nds of @s on the workers and the calling thread at once (each request
 * by one thread), until every step is done or the drainer stops; the soonest time a step wants
 * to come back lowers *@next_mono_ms. @w NULL: the calling thread steps them one by one. */
void drain_wave_round(struct drain_wave *w, struct drain *d, const struct kube_snapshot *s,
		      const struct kube_nd *nds, size_t n, int64_t now_wall_ms, int64_t now_mono_ms,
		      int64_t *next_mono_ms);
/* Stops and joins the workers, frees their clients. Accepts NULL. */
void drain_wave_stop(struct drain_wave *w);
/* controller/drain.c: whether the drainer stops (its runtime stops, or it lost its lease). */
bool drain_stopping(const struct drain *d);

/* controller/drain_pods.c */
/* Whether the request waits for pods on its @nodes (@nn) to leave on their own. */
bool waiting_for_pods(struct req *r, const struct kube_node *const *nodes, size_t nn);
/* Forgets the most pods the attempts of request @name chose (it is Drained, or given back). */
void forget_chosen(struct drain *d, const char *name);
/* The attempt's evictions and waits on @nodes (@nn): true when the pods are gone (and the
 * volumes detached). */
bool drain_pods(struct req *r, const struct kube_node *const *nodes, size_t nn);

#endif
