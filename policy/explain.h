/* Why things wait, for people: what `nodegate status` and `nodegate why` show, computed from a
 * snapshot with the gate's own decisions (policy/disruption.h) and the drainer's survey
 * (policy/drain.h). Pure: no I/O, no clock (the caller passes now).
 *
 * Ownership: every array and string a function here hands back comes from the caller's @arena
 * or from the snapshot (intern ids and record pointers), so both must outlive the result.
 * Threads: any thread; an arena belongs to one thread at a time.
 * Errors: NG_ENOMEM only (the arena or the heap is full); a request that waits is a result. */
#ifndef NG_POLICY_EXPLAIN_H
#define NG_POLICY_EXPLAIN_H

#include "common/status.h"
#include "kube/kube.h"
#include "policy/disruption.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;

/* At most this many holders are named per budget; the rest are counted. */
#define POL_EXPLAIN_MAX_HOLDERS 8

/* One budget, now: its numbers (@st, with @st.now the limit in force and its windows) and the
 * Granted requests that hold part of it. */
struct pol_explain_budget {
	enum kube_resource kind; /* KUBE_RES_NDBS or KUBE_RES_ADBS */
	size_t index;            /* in kube_snapshot_ndbs() or kube_snapshot_adbs() */
	const struct kube_budget_common *b;
	struct pol_budget_status st;
	uint32_t holders[POL_EXPLAIN_MAX_HOLDERS]; /* Granted requests in its scope (names) */
	size_t nholders;                           /* named */
	size_t nheld;                              /* all of them */
	size_t npending;                           /* Pending requests touching its scope */
};

/* A Pending request, as the gate's next round would see it. */
struct pol_explain_wait {
	const struct kube_nd *nd;
	size_t rank; /* from 1, in the gate's order */
	/* The decision if the gate decided now, after the requests ranked before it that would
	 * be granted (health hooks and the alert gate aside: see @needs_hooks). */
	struct pol_gate_decision d;
	/* The requests holding the budgets it fails (names), the first POL_EXPLAIN_MAX_HOLDERS;
	 * @nheld counts them all. Requests ranked before it that would be granted now are in
	 * @ahead (names). */
	uint32_t holders[POL_EXPLAIN_MAX_HOLDERS];
	size_t nholders, nheld;
	uint32_t ahead[POL_EXPLAIN_MAX_HOLDERS];
	size_t nahead;
	bool needs_hooks; /* would be granted, after the hooks of its budgets answer */
	/* What the gate last wrote (the Granted condition), which says what the policy alone
	 * cannot know: hooks out, the alert gate. */
	const struct kube_condition *written;
};

/* A Granted request and where its drain stands. */
struct pol_explain_grant {
	const struct kube_nd *nd;
	const struct kube_condition *ready; /* the drainer's Ready condition; NULL before it */
	int64_t granted_ms;                 /* status.grantedAt; 0 unknown */
	int64_t ends_ms; /* when it ends by itself (status.expiresAt); 0: only when deleted */
};

/* A node nodegate holds (the nodegate.io/drain annotation) or has quarantined. */
struct pol_explain_held_node {
	const struct kube_node *node;
	bool quarantined; /* label nodegate.io/quarantined */
	uint32_t quarantined_by;
};

/* The cluster at a glance. */
struct pol_explain_status {
	struct pol_gate_config cfg;
	const struct kube_ngc *ngc; /* NULL: defaults */
	/* A NodeGateConfig exclusion in force: no grant until excluded_until, for
	 * excluded_reason (intern id). */
	bool excluded;
	int64_t excluded_until;
	uint32_t excluded_reason;
	struct pol_explain_budget *budgets;
	size_t nbudgets;
	struct pol_explain_wait *waits; /* in rank order */
	size_t nwaits;
	struct pol_explain_grant *grants; /* by name */
	size_t ngrants;
	struct pol_explain_held_node *held;
	size_t nheld;
	size_t nrejected;
};

/** Everything `nodegate status` shows about @s at @now_wall_ms. */
NG_NODISCARD ng_status pol_explain_status(const struct kube_snapshot *s, int64_t now_wall_ms,
					  struct ng_arena *arena, struct pol_explain_status *ret);

/* One pod still on a node a request drains, and what holds it. */
struct pol_explain_pod {
	const struct kube_pod *pod;
	const char *action; /* "evict", "delete", "skip (daemonset)", ... (static) */
	char blocker[240];  /* " (PodDisruptionBudget ns/x allows 0 ...)"; "" when nothing */
	int32_t order;      /* its batch order (spec.drain.rules); 0 when none */
};

/* The chain for one request or one node. */
struct pol_explain_why {
	const struct kube_nd *nd;     /* the request asked about, or the node's holder; NULL */
	const struct kube_node *node; /* the node asked about; NULL for a request */
	struct pol_explain_wait wait; /* when @nd is Pending */
	bool waiting;
	bool paused;                    /* the gate is paused (NodeGateConfig) */
	struct pol_explain_grant grant; /* when @nd is Granted */
	bool granted;
	struct pol_explain_budget *budgets; /* covering the node or the request's nodes */
	size_t nbudgets;
	const struct kube_nd **requests; /* every request naming the node (node only) */
	size_t nrequests;
	struct pol_explain_pod *pods; /* pods still on the drained nodes (Granted, drain) */
	size_t npods;
	char drain_stop[400]; /* why the drain's attempt stops before evicting; "" */
	/* The batch in progress, what is waited for and skipped (pol_drain_progress()); "" for a
	 * drain of one batch of order 0 with nothing waited for or skipped. */
	char drain_batch[1200];
};

/**
 * The chain for request @nd_name or node @node_name (intern ids; the other NG_INTERN_NONE) of
 * @s at @now_wall_ms. NG_ENOTFOUND when @s has no such object.
 */
NG_NODISCARD ng_status pol_explain_why(const struct kube_snapshot *s, uint32_t nd_name,
				       uint32_t node_name, int64_t now_wall_ms,
				       struct ng_arena *arena, struct pol_explain_why *ret);

#endif
