/* The gate controller (docs/gate.md): while this replica holds the lease, it ranks Pending
 * NodeDisruptions, decides them one at a time with policy/disruption.h, asks the health hooks
 * before a grant, records each grant in the ledger before the next decision, and writes status
 * with a resourceVersion precondition (kube/write.h). It runs on a kube/runtime thread woken by
 * every cache publish and when a retry falls due, and is the only writer of decisions.
 *
 * Ownership: gate_start() returns the gate (freed by gate_stop()); everything in gate_config is
 * borrowed and must outlive it. Threads: start and stop from the owner (main), once each; the
 * stats and metrics functions from any thread (atomics, or a mutex held for a copy). */
#ifndef NG_CONTROLLER_GATE_H
#define NG_CONTROLLER_GATE_H

#include "common/status.h"
#include "policy/lifecycle.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_config;
struct kube_store;
struct kube_watch;
struct leader;

struct gate_config {
	const struct kube_config *kube; /* borrowed; must outlive the gate */
	struct kube_store *store;       /* borrowed: the cache the watch keeps current */
	const struct kube_watch *watch; /* borrowed; nothing is decided before it has synced */
	struct leader *leader;    /* borrowed (watched while the gate runs); NULL: always decide */
	const char *identity;     /* reportingInstance of events */
	int64_t retry_initial_ms; /* backoff of Pending requests with retry (5000) */
	int64_t retry_max_ms;     /* (300000) */
};

/** How many buckets nodegate_decision_duration_seconds has. */
#define GATE_DECISION_BUCKETS 12

struct gate_stats {
	uint64_t decisions[3];    /* by enum pol_gate_outcome */
	uint64_t writes;          /* status writes that succeeded */
	uint64_t conflicts;       /* 409: the object changed under us; decided again */
	uint64_t errors;          /* other failed writes */
	uint64_t decision_count;  /* evaluations timed (a request waiting on hooks or the alert
				   * gate is evaluated again before it counts as a decision) */
	uint64_t decision_us_sum; /* time inside pol_evaluate_disruption */
	uint64_t decision_buckets[GATE_DECISION_BUCKETS];
	uint64_t ended[POL_END_COUNT]; /* requests the gate deleted, by enum pol_end_reason */
};

/** Upper bounds of gate_stats.decision_buckets, in seconds. */
extern const double gate_decision_buckets_s[GATE_DECISION_BUCKETS];

struct gate;

/**
 * Starts the gate on a runtime thread of its own with its own kube client (from cfg->kube).
 * @cfg is copied; what it points to is borrowed. Returns the gate (caller frees with
 * gate_stop()), or NULL with @reterr: NG_ENOMEM, NG_EIO (no thread). Main thread.
 */
struct gate *gate_start(const struct gate_config *cfg, struct ng_err *reterr);
/** Counters (each read atomically). Any thread. */
void gate_get_stats(const struct gate *g, struct gate_stats *ret);
struct ng_buf;
/**
 * Appends nodegate_budget_disruptions_allowed and nodegate_budget_current_disruptions{kind,
 * namespace,name} for every budget, as of the last budget status pass, that the store's newest
 * snapshot still holds: a deleted budget's series are gone at the next render. None while not
 * leading, and none without a store (a gate driven by a test). Series that name cluster
 * objects: for a listener that may show them. Any thread.
 */
NG_NODISCARD ng_status gate_render_budget_metrics(const struct gate *g, struct ng_buf *out);
/**
 * Appends the nodegate_health_hook_duration_seconds histogram (the calls this replica made) and
 * the nodegate_health_hook_requests_waiting gauge; with @objects, first
 * nodegate_health_hook_requests_total{namespace,name,result}, whose rows of budgets the store's
 * newest snapshot no longer holds are dropped first. Any thread.
 */
NG_NODISCARD ng_status gate_render_hook_metrics(const struct gate *g, bool objects,
						struct ng_buf *out);
/**
 * Appends the alert gate's series: nodegate_alert_gate_evaluations_total{result},
 * nodegate_alert_gate_firing, nodegate_alert_gate_errors_ignored_total. Any thread.
 */
NG_NODISCARD ng_status gate_render_alert_metrics(const struct gate *g, struct ng_buf *out);
/**
 * Appends the nodegate_gate_grant_latency_seconds histogram: for each new NodeDisruption granted
 * at its first decision, from the watch reading it to its status write being sent (nodegate's
 * own share of create → Granted). Any thread.
 */
NG_NODISCARD ng_status gate_render_latency_metrics(const struct gate *g, struct ng_buf *out);

/**
 * Stops: the runtime is stopped (a round in progress ends at its next check, a hook call within
 * 100 ms) and joined, then @g is freed. Accepts NULL. Main thread.
 */
void gate_stop(struct gate *g);

/**
 * Appends the gate's series to @out (caller-owned) in the Prometheus text format: nodegate_leader
 * (whether @leader holds the lease; 0 when @leader is NULL), nodegate_gate_decisions_total,
 * nodegate_gate_status_writes_total, the nodegate_decision_duration_seconds histogram, then
 * gate_render_budget_metrics() (only with @objects), gate_render_hook_metrics() and the alert
 * gate's. @objects: also the series labelled with cluster objects' names (budgets), for a
 * listener whose callers may see them (docs/operations.md); without it, counts only. @g and
 * @leader are borrowed; @g NULL (no gate) appends nothing. NG_ELIMIT or NG_ENOMEM from the
 * buffer. Any thread.
 */
NG_NODISCARD ng_status gate_render_metrics(const struct gate *g, const struct leader *leader,
					   bool objects, struct ng_buf *out);

#endif
