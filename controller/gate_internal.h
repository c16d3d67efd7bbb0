/* The gate controller's rooms (controller/gate*.c) and their unit test: the state one gate
 * keeps between rounds and the functions each file offers the others. Only the gate's own
 * files and tests/unit/test-controller-gate.c include this.
 *
 *   gate.c          lifecycle, the runtime step, the round: rank, decide, write (DESIGN.md §4)
 *   gate_status.c   a decision's status write, finalizers, Events on requests
 *   gate_budgets.c  budget status and the budget gauges
 *   gate_hooks.c    step 8: the hooks a grant needs, asked on threads of their own while the
 *                   request holds its share; their body, results, metrics
 *   gate_hookcall.c the hook calls themselves (curl multi), and the alert gate's one GET
 *   gate_alert.c    NodeGateConfig alertGate: asked on a thread of its own before any grant,
 *                   its answer kept for cacheSeconds; the reading of Prometheus's answers
 *   gate_hookaddr.c the addresses hooks may not reach: the API server's, nodegate's own
 *   gate_lifecycle.c the ends of grants: deadline and TTL after completion (Events, delete),
 *                   status.expiresAt kept up to date
 *   gate_leases.c   NodeGateConfig medik8sLeases: medik8s's node Leases held while nodes are
 *                   granted
 *
 * Threads: everything here runs on the gate's runtime thread (or a test's), except the
 * metrics renderers, which take metrics_mu. */
#ifndef NG_CONTROLLER_GATE_INTERNAL_H
#define NG_CONTROLLER_GATE_INTERNAL_H

#include "common/backoff.h"
#include "common/map.h"
#include "common/prom.h"
#include "controller/gate.h"
#include "controller/leader.h"
#include "kube/kube.h"
#include "kube/write.h"
#include "policy/disruption.h"
#include "policy/hook.h"
#include "policy/lifecycle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct kube_client;
struct kube_runtime;
struct ng_arena;

/* nodegate_health_hook_duration_seconds buckets: hooks time out at 1..25 s. */
#define GATE_HOOK_BUCKETS 10

/* Held on every request the gate decided to grant or keep Pending, so a deletion is seen,
 * released and recorded before the object goes. */
#define GATE_FINALIZER "nodegate.io/gate"

/* Budget status writes per pass; the rest follow BUDGET_MORE_MS later. */
#define BUDGET_WRITES_PER_PASS 16
#define BUDGET_MORE_MS 20

/* At most this many requests have their health hooks out at once: more wait for a place (the
 * curl transfers of one request run on its own thread). */
#define GATE_MAX_HOOK_JOBS 128

struct gate_hook_job;
struct gate_alert_job;

/* The alert gate's last answer (gate_alert.c), kept for its cacheSeconds. */
struct gate_alert_last {
	bool have;
	uint64_t key;          /* the alertGate config it answered (a changed config asks again) */
	uint8_t result;        /* clear, firing, error */
	bool fail_open;        /* the config's failurePolicy is Ignore */
	int64_t until_mono_us; /* kept until */
	char reason[POL_REASON_BYTES / 2]; /* what a held request says */
};

/* What this replica last wrote for a request, so an unchanged decision is not written again. */
struct gate_written {
	uint32_t name;
	uint8_t outcome;
	uint64_t reason_hash;
	int64_t next_retry_wall_ms; /* when to decide again while Pending with retry */
	uint32_t retry_count;
	bool hook_failed; /* the last decision failed on a health hook */
	uint64_t rv_hash; /* hash of the resourceVersion that decision was made on */
	/* Its last decision waits on the alert gate's question: while that is out its retry is
	 * not due (the answer starts a round). */
	bool alert_wait;
};

/* A request this term ended (gate_lifecycle.c), so its Events are recorded once: by name and
 * uid (a request created again under the name is another). */
struct gate_ended {
	uint32_t name;
	uint64_t uid;          /* FNV-1a of metadata.uid */
	bool deleted;          /* the delete was answered: the cache shows it soon */
	int64_t retry_wall_ms; /* a failed delete is tried again then */
};

/* What this replica last wrote to a budget's status. */
struct gate_budget_written {
	uint8_t kind;
	uint32_t ns, name;
	uint64_t hash;
};

/* One budget's gauges, as of the last budget status pass (nodegate_budget_*{kind,namespace,name}).
 * Intern ids: the names are read from the snapshot /metrics renders against, which shows
 * whether the budget still exists. */
struct gate_budget_gauge {
	uint8_t kind; /* enum kube_resource: KUBE_RES_NDBS or KUBE_RES_ADBS */
	uint32_t ns, name;
	int64_t allowed, current;
};

/* A node given back since its grant ended, as this replica saw it (pacing, soakSeconds):
 * back_wall_ms, when it was first seen Ready and schedulable again, or KUBE_SOAK_NOT_BACK. */
struct gate_back {
	uint32_t node;
	int64_t back_wall_ms;
};

/* A grant written whose effect the cache does not show yet. */
struct gate_inflight {
	uint32_t name;
	uint32_t *nodes;
	size_t n;
	int64_t until_wall_ms;
};

/* A write that records what happened but decides nothing (an Event, a budget's
 * lastHookResult): made after the round's status writes, so no grant waits behind it. */
struct gate_later {
	bool hook_result; /* a budget's status.lastHookResult; else an Event */
	enum kube_kind kind;
	/* Borrowed when handed to gate_defer(), copies (freed by the flush) in the queue. */
	const char *ns, *name, *uid, *reason, *type, *msg;
	struct pol_hook_call c; /* hook_result: what the call reported */
	int64_t now_wall_ms;
};

/* nodegate_health_hook_requests_total{namespace,name,result}: one row per budget and result. */
struct gate_hook_count {
	char ns[64], name[254]; /* ns "" for a NodeDisruptionBudget */
	uint8_t result;         /* enum pol_hook_result */
	uint8_t phase;          /* enum pol_hook_phase: health hooks and multistep steps apart */
	uint64_t n;
};

/* A deleted request that owes /terminate calls to budgets that prepared for it (gate_hooks.c):
 * its finalizer stays until each answered 200, its budget is gone, or NodeGateConfig
 * healthHooks.terminateDeadlineSeconds passed since the gate first saw it deleted (a hook that
 * never answers does not keep the object forever). */
struct gate_term {
	uint32_t name;
	uint64_t uid; /* FNV-1a of metadata.uid */
	struct gate_hook_job *job;
	int64_t since_wall_ms, next_wall_ms, until_wall_ms;
	uint32_t attempts;
};

/* Work the gate runs on a thread of its own (gate_job.c): the health-hook calls of one request,
 * the alert gate's question. Embedded first in the job's own struct. The thread runs @run, then
 * sets @done and *@answered and wakes the gate's runtime; the gate's thread reads the job's
 * results only once gate_job_done() says so, and ends every job with gate_job_stop(). */
struct gate_job {
	struct gate *g;
	void (*run)(struct gate_job *t); /* on the job's thread; reads @cancel to stop early */
	_Atomic bool *answered;          /* the gate's flag: some job ended since it last looked */
	pthread_t thread;
	_Atomic bool done;   /* @run has returned */
	_Atomic bool cancel; /* stop: the answers will not be used */
};

/** Starts @run on a new thread; false when no thread could be had (nothing was started). */
bool gate_job_start(struct gate_job *t, struct gate *g, _Atomic bool *answered,
		    void (*run)(struct gate_job *t));
/** Whether the job's @run has returned (its results may be read). */
bool gate_job_done(struct gate_job *t);
/** Asks the job to stop and joins its thread. */
void gate_job_stop(struct gate_job *t);

struct gate {
	struct gate_config cfg;
	/* NodeDisruptionBudget pools from one round's ledger to the next, while the nodes and the
	 * budgets are the same: a round pays for its own requests' nodes, not for matching every
	 * node against a pool-wide budget again (4.9 ms a decision at 100,000 nodes). */
	struct pol_scope_cache *pools;
	struct kube_runtime *rt;    /* NULL when a test drives the rounds */
	struct kube_client *client; /* the runtime's, or the test's (borrowed) */
	const _Atomic bool *stop;   /* the runtime's stop flag, or never_stop */
	struct ng_rng rng;          /* retry jitter */
	uint64_t seen_generation;
	uint64_t term;
	/* A new term decides nothing until the cache shows every NodeDisruption as new as the API
	 * server held it when the term began: what the last leader granted just before it lost
	 * the lease may not have reached this replica's watch yet (gate.md "A new leader"). */
	bool sync_needed;           /* the version to wait for is still to be read */
	uint64_t sync_rv;           /* waiting for kube_snapshot_rv() of NodeDisruptions >= this */
	int64_t sync_since_wall_ms; /* when the term began */
	/* Intern ids (names) stay comparable across snapshots: a rebuilt pool keeps the ids of
	 * the strings in use and never gives an id to another string, so a record of a request
	 * that is gone matches no later request, even one created again under its name. */
	struct gate_written *w;
	size_t nw, capw;
	struct ng_map w_by_name; /* name -> index into w */
	struct gate_inflight *inf;
	size_t ninf, capinf;
	struct gate_budget_written *bw;
	size_t nbw, capbw;
	struct ng_map bw_by_key; /* ns << 32 | name -> index into bw */
	int64_t budgets_written_wall_ms;
	bool budgets_dirty; /* the cache changed since budget status was last written */
	bool budgets_more;  /* the last pass left statuses for the next (a few per pass) */
	/* The next opening or closing of any budget's window, as of the last status pass: the
	 * limits in force change then, so the statuses are computed again (0 = none). */
	int64_t budgets_edge_wall_ms;
	int64_t again_wall_ms; /* run a round at this time even when nothing changed; 0 = none */
	/* The monotonic clock at the start of the round: with its now_wall_ms, the one instant
	 * every decision of the round reads (an answer kept until a monotonic time expires at
	 * the same wall time for every request the round holds on it). */
	int64_t round_mono_us;
	pthread_mutex_t metrics_mu; /* guards the three below: written here, read by /metrics */
	struct gate_budget_gauge *gauges;
	size_t ngauges;
	struct gate_hook_count *hc;
	size_t nhc, caphc;
	/* nodegate_health_hook_duration_seconds: the calls this replica made (not the denied). */
	struct ng_prom_hist hook_duration;
	/* nodegate_hook_v2_duration_seconds: multistep steps (prepare, ready, terminate). */
	struct ng_prom_hist hook2_duration;
	/* nodegate_gate_grant_latency_seconds: a new request granted at its first decision, from
	 * the watch reading it to the status write being sent. */
	struct ng_prom_hist grant_latency;
	struct kube_cidr *deny; /* addresses no hook may reach (gate_hook_deny_find()) */
	size_t ndeny;
	/* Requests whose hooks are out (gate_hooks.c): gate thread only, but for the flags. */
	struct gate_hook_job **jobs;
	size_t njobs, capjobs;
	struct gate_term *terms; /* deleted requests owing /terminate (gate_hooks.c) */
	size_t nterms, capterms;
	_Atomic bool hooks_answered; /* a job ended since the last step looked */
	struct gate_later *later;    /* queued during a round, written at its end */
	size_t nlater, caplater;
	bool deferring;                 /* in a round: Events and hook results are queued */
	_Atomic uint64_t hooks_waiting; /* njobs, for /metrics */
	pthread_mutex_t wake_mu; /* guards wake_rt: a job's thread wakes the gate through it */
	struct kube_runtime *wake_rt;
	_Atomic uint64_t decisions[3], writes, conflicts, errors;
	/* nodegate_decision_duration_seconds: every evaluation of a request, timed. */
	struct ng_prom_hist decision_duration;
	/* The alert gate (gate_alert.c): gate thread only, but for the atomics. */
	struct gate_alert_job *alert_job; /* the question in flight, or answered and not read */
	struct gate_alert_last alert;
	_Atomic bool alert_answered; /* the question ended since the last step looked */
	_Atomic uint64_t alert_evals[3], alert_ignored, alert_firing;
	/* The ends of grants (gate_lifecycle.c): gate thread only, but for the counters. */
	struct gate_ended *ended;
	size_t nended, capended;
	int64_t lifecycle_next_wall_ms; /* the next end due (or a failed one's retry); 0: none */
	/* The last lifecycle pass found nothing to end or restamp, on these tables (the
	 * NodeDisruptions', the nodes' shape, NodeGateConfig's): while they stay and nothing falls
	 * due, a pass would find nothing again, so none is made (it looks up every grant's nodes:
	 * 10,000 grants cost milliseconds a round). */
	struct {
		bool valid;
		uint64_t nds, nodes, ngcs;
	} lifecycle_quiet;
	/* Pacing (gate_budgets.c), only while a budget sets soakSeconds: the nodes Granted
	 * requests held at the last round (sorted ids), and the nodes given back since. */
	uint32_t *held_prev;
	size_t nheld_prev;
	struct gate_back *back;
	size_t nback, capback;
	_Atomic uint64_t ends[POL_END_COUNT]; /* nodegate_requests_ended_total{reason} */
	/* medik8s Leases (gate_leases.c): the next renewal, expiry or retry; 0: none. */
	int64_t leases_next_wall_ms;
};

/* Whether this replica writes: no leader configured, or it holds the Lease. */
static inline bool gate_leading(const struct gate *g)
{
	return !g->cfg.leader || leader_is_leader(g->cfg.leader);
}

/* gate.c */

/**
 * A gate without a thread, writing through @client (borrowed): what gate_start() runs, and
 * what a unit test drives with gate_round(). NULL on OOM. Free with gate_destroy().
 */
struct gate *gate_create(const struct gate_config *cfg, struct kube_client *client);
void gate_destroy(struct gate *g);
/**
 * One round over snapshot @s at @now_wall_ms: decide the Pending requests (all of them when
 * @changed, else only retries that fell due), tend finalizers, write budget status when due.
 */
void gate_round(struct gate *g, const struct kube_snapshot *s, bool changed, int64_t now_wall_ms);
struct gate_written *gate_written_get(struct gate *g, uint32_t name);
struct gate_written *gate_written_put(struct gate *g, uint32_t name);
void gate_inflight_add(struct gate *g, uint32_t name, const uint32_t *nodes, size_t n,
		       int64_t now_wall_ms);

/* gate_status.c */

/* A decision about to be written, with the retry bookkeeping that goes with it. */
struct gate_write {
	const struct pol_gate_decision *d;
	int64_t now_wall_ms;
	int64_t next_retry_wall_ms; /* 0: none */
	uint32_t retry_count;
	uint64_t hash;           /* what it says, as gate_written.reason_hash keeps it */
	int64_t expires_wall_ms; /* a grant's status.expiresAt; 0: none */
};

/** Writes @wr for @nd; the outcome says whether the round may go on. */
enum kube_write_outcome gate_write_status(struct gate *g, const struct kube_snapshot *s,
					  const struct kube_nd *nd, const struct gate_write *wr,
					  struct ng_arena *arena, struct ng_err *reterr);
/** Sets up nodegate_gate_grant_latency_seconds (gate_create()). */
void gate_grant_latency_init(struct gate *g);
/** An Event on NodeDisruption @name, record @nd (its uid; NULL: none), best effort: a failure
 * is logged. */
void gate_event_nd(struct gate *g, const struct kube_nd *nd, const char *name, const char *reason,
		   const char *type, const char *msg, int64_t now_wall_ms);
/** An Event on budget @ns/@name of @kind (KUBE_RES_ADBS or KUBE_RES_NDBS; @ns NULL for the
 * latter), uid @uid (NULL or "": none). */
void gate_event_budget(struct gate *g, enum kube_resource kind, const char *ns, const char *name,
		       const char *uid, const char *reason, const char *type, const char *msg,
		       int64_t now_wall_ms);
/** Writes what was queued during the round (Events, hook results), in order, until a hook
 * answers or the cluster changes (gate_news(): the rest stay queued for the end of the next
 * round, which comes at once); what was queued GATE_FLUSH_WAIT_MS or more before @now_wall_ms
 * (the round's clock) is written anyway, so a busy cluster cannot starve the queue. */
void gate_flush_later(struct gate *g, int64_t now_wall_ms);
#define GATE_FLUSH_WAIT_MS 1000
/** Whether a round has something new to decide: a hook answered, or the cache published. */
bool gate_news(const struct gate *g);
/** Frees @l's strings (a queued write not made). */
void gate_later_free(struct gate_later *l);
/** Queues @l (its strings are copied) when the round defers; false when it does not (the
 * caller writes at once) or there is no memory (the write is dropped: best effort). */
bool gate_defer(struct gate *g, const struct gate_later *l);
/** Whether request @nd of @s carries nodegate's finalizer (GATE_FINALIZER). */
bool gate_has_finalizer(const struct kube_snapshot *s, const struct kube_nd *nd);
/** Sets metadata.finalizers of request @nd (@name) of @s to its list with GATE_FINALIZER added
 * (@present) or removed, carrying the resourceVersion it was read at (another writer's change
 * makes it a conflict: the next round looks again). */
enum kube_write_outcome gate_set_finalizer(struct gate *g, const struct kube_snapshot *s,
					   const struct kube_nd *nd, const char *name, bool present,
					   struct ng_arena *arena);
/** Adds the finalizer to decided requests, releases deleted ones (DESIGN.md §4). */
void gate_tend_finalizers(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms);

/** Writes @c (a call to a hook of ApplicationDisruptionBudget @ns/@name) as that budget's
 * status.lastHookResult dated @now_wall_ms. */
void gate_write_hook_result(struct gate *g, const char *ns, const char *name,
			    const struct pol_hook_call *c, int64_t now_wall_ms);

/* gate_lifecycle.c */

/**
 * Ends the Granted requests of @s whose deadline or TTL after completion has passed at
 * @now_wall_ms (policy/lifecycle.h): an Event on the request and on each of its nodes (once per
 * term), then a DELETE with preconditions.uid (a 404 or 409 ends it too); a failed delete is
 * tried again a second later. Rewrites a stale status.expiresAt (a few per round). Sets
 * lifecycle_next_wall_ms to the next end due. @arena is the round's, reset here. Leader only:
 * stops when the lease is lost.
 */
void gate_end_grants(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms,
		     struct ng_arena *arena);
/** Forgets the ends recorded this term (a new term, or the gate stopping). */
void gate_lifecycle_forget(struct gate *g);

/* gate_leases.c */

/**
 * Holds, renews, takes over and releases medik8s's node Leases (medik8s-leases/node-<node>,
 * holder "nodegate") as policy/medik8s.h decides for @s at @now_wall_ms: held for every node a
 * Granted request covers while NodeGateConfig medik8sLeases is on, deleted otherwise. Writes are
 * conditional on the version read; a 409 waits for the cache. Sets leases_next_wall_ms to the
 * next renewal, expiry of another holder's Lease, or retry. Leader only.
 */
void gate_tend_leases(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms);

/* gate_budgets.c */

/** Writes every budget's status that changed since this replica last wrote it, as it stands at
 * @now_wall_ms (the limits its windows put in force then). */
void gate_write_budget_status(struct gate *g, const struct kube_snapshot *s,
			      struct pol_ledger *ledger, int64_t now_wall_ms,
			      struct ng_arena *arena);

/**
 * Pacing, soakSeconds: notes the nodes whose Granted request ended since the last round (and
 * those a budget's status.soakingNodes says are not back yet), dates their return when first
 * seen Ready and schedulable, and tells @ledger (pol_ledger_given_back()). Nothing while no
 * budget of @s sets soakSeconds. NG_ENOMEM.
 */
NG_NODISCARD ng_status gate_pacing_track(struct gate *g, const struct kube_snapshot *s,
					 struct pol_ledger *ledger, int64_t now_wall_ms);
/**
 * Pacing, minIntervalSeconds: before grant @d is written at @now_wall_ms, writes
 * status.lastGrantAt of every paced budget the grant touches, so a crash or a failover
 * after the grant can never shorten the interval. False when one could not be written: the
 * grant must not be written now.
 */
bool gate_pacing_before_grant(struct gate *g, const struct kube_snapshot *s,
			      const struct pol_gate_decision *d, int64_t now_wall_ms);
/** Forgets the nodes noted (a new term starts from the budgets' status). */
void gate_pacing_forget(struct gate *g);

/* A budget as a key of gate_budgets_present()'s set: @ns and @name intern ids (@ns
 * NG_INTERN_NONE for a NodeDisruptionBudget, the one kind without a namespace). */
static inline uint64_t gate_budget_key(uint32_t ns, uint32_t name)
{
	return (uint64_t)ns << 32 | name;
}

/**
 * Fills @ret (a zeroed map the caller finishes) with gate_budget_key() of every budget @s
 * holds, so a render names only budgets that exist: a deleted budget's series are gone. One
 * pass over the budgets, whatever the number of series. NG_ENOMEM. Any thread.
 */
NG_NODISCARD ng_status gate_budgets_present(const struct kube_snapshot *s, struct ng_map *ret);

/* gate_hooks.c */

/** Sets up the hooks' metrics of a new gate (before its thread starts). */
void gate_hooks_init(struct gate *g);

/* What step 8 did for a decision that passed every capacity check. */
enum gate_hooks_step {
	GATE_HOOKS_NONE,     /* no impacted budget has a hook: decide now */
	GATE_HOOKS_ANSWERED, /* every hook answered (or was refused): folded into the decision */
	GATE_HOOKS_ASKED,    /* asked now on a thread of their own; the request holds its share */
	GATE_HOOKS_WAIT,     /* not asked now (asked about this version, or no place): later */
	GATE_HOOKS_AGAIN,    /* the request could not be read for its hooks: look again soon */
};

/**
 * Step 8 for decision @d whose capacity checks passed. Hooks whose answers came back for this
 * request (asked in an earlier round about the same nodes and budgets) are folded into @d and
 * recorded. Else the hooks are asked on a thread of their own and the request's nodes are held
 * in @ledger, as every later round's ledger will hold them until the answers are in
 * (gate_hooks_hold()): a request waiting on its hooks keeps its tentative share, so no budget is
 * ever granted past its limit while another request's hooks are out, and no decision waits on
 * a hook it does not depend on. Sets *@ret_called when hooks were called for this decision.
 */
enum gate_hooks_step gate_hooks_step(struct gate *g, const struct kube_snapshot *s,
				     const struct kube_nd *nd, const char *name,
				     struct pol_gate_decision *d, struct pol_ledger *ledger,
				     int64_t now_wall_ms, struct ng_arena *arena);
/**
 * At the start of a round over @s: drops the hooks of requests gone, decided or no longer
 * Pending, and holds in @ledger the nodes of every request whose hooks are still out. NG_ENOMEM.
 */
NG_NODISCARD ng_status gate_hooks_hold(struct gate *g, const struct kube_snapshot *s,
				       struct pol_ledger *ledger);
/** Whether request @name's hooks are out (held this round: not decided until they answer). */
bool gate_hooks_out(const struct gate *g, uint32_t name);
/** Whether request @name's hooks have answered and wait for its decision (decided first). */
bool gate_hooks_answered(const struct gate *g, uint32_t name);
/** Drops request @name's hooks, recording what they answered: its decision no longer needs
 * them (it is not a grant now). */
void gate_hooks_drop(struct gate *g, uint32_t name);
/** Forgets every request's hooks: the calls still running are stopped and their answers
 * dropped (a new term, or the gate stopping). */
void gate_hooks_forget(struct gate *g);
/**
 * Deleted request @nd (@name) of @s, whose budgets may have prepared for it: sends /terminate
 * to each budget its status marks preparing that still has multistep hooks, on a thread of its
 * own, retried with backoff. True once nothing is owed: every call answered 200, or its budget
 * is gone, or healthHooks.terminateDeadlineSeconds passed since the gate first saw it deleted
 * (then a TerminateAbandoned Event names each budget not heard): the finalizer may go. False
 * while calls are out or due later. Leader only.
 */
bool gate_hooks_terminate(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd,
			  const char *name, int64_t now_wall_ms);
/** Whether a /terminate job ended or a retry fell due by @now_wall_ms (tend the finalizers);
 * *@ret_next gets the earliest retry still ahead (0: none). */
bool gate_terms_due(const struct gate *g, int64_t now_wall_ms, int64_t *ret_next);

/* gate_alert.c */

/* What the alert gate says about a decision that would grant. */
enum gate_alert_step {
	GATE_ALERT_PASS, /* no alertGate, clear, or failed under failurePolicy Ignore: grant */
	GATE_ALERT_HOLD, /* firing, or failed under Deny: the decision is now Pending */
	GATE_ALERT_WAIT, /* being asked: not decided now; the answer starts a round */
};

/**
 * The alert gate for decision @d (a grant) over @s: PASS, or HOLD with @d made Pending with the
 * gate's reason and *@ret_retry_by_wall_ms set to when the answer it is held by expires (its
 * retry comes no later), or WAIT when no fresh answer is kept: the question is asked on a thread
 * of its own (once, whatever the number of requests waiting) and its end wakes the gate. An
 * answer is kept for cacheSeconds from its arrival, and dropped when the config changes.
 */
enum gate_alert_step gate_alert_check(struct gate *g, const struct kube_snapshot *s,
				      struct pol_gate_decision *d, int64_t now_wall_ms,
				      int64_t *ret_retry_by_wall_ms);
/** Stops the question in flight and forgets the last answer (a new term, the gate stopping). */
void gate_alert_forget(struct gate *g);

/* gate_hookcall.c */

/**
 * Calls every POL_HOOK_PENDING hook of @calls at once: POST @body (@len bytes of JSON) with
 * Content-Type application/json and User-Agent nodegate/<version>. Each connection is checked
 * with pol_hook_addr_allowed(@p, @deny, @ndeny) on the address curl is about to connect to.
 * Each call's message is one of the fixed words of docs/health-hooks.md, never the answer's
 * bytes or curl's error text. Returns when all have ended or at the first failure (the rest
 * become POL_HOOK_CANCELLED), or when @stop turns true. NG_ENOMEM/NG_EIO when curl cannot be set
 * up (no hook was decided). Blocks its caller (the gate's thread, never an admission thread).
 */
NG_NODISCARD ng_status gate_hooks_call(struct pol_hook_call *calls, size_t n,
				       const struct kube_hook_policy *p,
				       const struct kube_cidr *deny, size_t ndeny, const char *body,
				       size_t len, const _Atomic bool *stop);

/**
 * GET @url (the alert gate's Prometheus) with @target's timeout and CA bundle (kube_hook.ca; NULL:
 * the system's roots), https only, TLS verified, no redirect followed, no proxy, every address
 * checked with pol_hook_addr_allowed(@p, @deny, @ndeny) before it is connected to. The answer's
 * body goes to @body, which bounds it (its cap). NG_OK: an answer came, whatever its status
 * (*@ret_code). Otherwise *@reterr_word says what happened in a fixed word ("timeout", "address
 * not allowed", "answer too large", "TLS certificate not verified", ...; never curl's text):
 * NG_ETIMEDOUT, NG_ELIMIT, NG_EFORBIDDEN, NG_EIO, NG_ENOMEM; also NG_EIO ("cancelled") when
 * @stop turned true. Blocks its caller (the alert gate's own thread).
 */
NG_NODISCARD ng_status gate_http_get(const char *url, const struct kube_hook *target,
				     const struct kube_hook_policy *p, const struct kube_cidr *deny,
				     size_t ndeny, const _Atomic bool *stop, struct ng_buf *body,
				     long *ret_code, const char **reterr_word);

/* gate_hookaddr.c */

/**
 * The addresses no hook may reach whatever the policy, besides policy/hook.c's fixed ranges:
 * every address of the host of @kube's server URL (resolved now; @kube may be NULL) and of
 * $KUBERNETES_SERVICE_HOST, and every address of this host's interfaces (getifaddrs), as
 * normalized single-address CIDRs. A name that does not resolve is logged and skipped. Sets
 * @ret (caller frees with free(); NULL when none) and @ret_n; NG_ENOMEM. Blocks on DNS: call it
 * when the gate is created, not in a round.
 */
NG_NODISCARD ng_status gate_hook_deny_find(const struct kube_config *kube, struct kube_cidr **ret,
					   size_t *ret_n);

#endif
