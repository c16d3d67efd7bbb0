/* What the parts of the gate's decision (policy/disruption.h) share: the ledger and its budget
 * scopes, the evaluation of one request, and the helpers they call across files. Internal to
 * policy/: nothing outside it includes this header.
 *
 * The parts: ledger.c (the grant ledger, control-plane classes, a request's nodes), rank.c
 * (pol_rank_pending), scopes.c (budget scopes and their index), budget_eval.c (per-budget
 * evaluation), budget_topology.c (a node budget's topology limits), budget_windows.c (a
 * budget's maintenance windows), disruption.c (the decision steps), verdicts.c (reasons, budget
 * statuses, JSON).
 *
 * Functions named pd_* are shared between the parts and documented at their definitions, as
 * are the steps of a budget's verdict that budget_eval.c calls in budget_topology.c and
 * budget_windows.c; the small helpers of the hot loops are static inline here, so splitting the
 * files costs no call.
 *
 * Ownership and threads: as policy/disruption.h says; a ledger, its scopes (in its arena) and an
 * eval belong to one thread at a time. */
#ifndef NG_POLICY_DISRUPTION_INTERNAL_H
#define NG_POLICY_DISRUPTION_INTERNAL_H

#include "policy/disruption.h"
#include "policy/medik8s.h"
#include "policy/policy.h"

#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/cron.h"
#include "common/tz.h"
#include "common/map.h"
#include "common/intern.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pol_ledger {
	struct ng_map holders;
	/* held[i]: node i of the snapshot's nodes is held. The budget scans read this byte per
	 * node instead of a hash lookup: it took a pool-wide budget's decision on 5,000 nodes
	 * from 114 us to 44 us. */
	const struct kube_snapshot *s;
	const struct kube_node *nodes;
	size_t nnodes;
	uint8_t *held;
	/* Every held node, in the order held (nodes without a Node record too): its name, its
	 * index in the snapshot's nodes (UINT32_MAX without a record), found once when it is
	 * granted, its (first) holder, and whether it is a control-plane node (valid while
	 * cp_ready). A budget's holders and disrupted count are found from these when they are
	 * fewer than its scope, so naming the requests that fill a pool-wide budget does not walk
	 * the pool, and a round's per-held walks look nothing up by name. */
	struct held_node {
		uint32_t name, at, holder;
		bool cp;
	} * held_nodes;
	size_t nheld, capheld;
	/* Requests holding a node another request held first (overlapping grants): holders
	 * keeps the first, these the others, so a full budget's message names every request
	 * that must end before its nodes are free. */
	struct co_holder {
		uint32_t node, nd;
	} * co;
	size_t nco, capco;
	/* Which nodes each budget covers depends on the snapshot alone: computed on first use and
	 * kept, it serves every decision and budget status of the round. (Recomputed per decision,
	 * 250 rack budgets on 5,000 nodes cost 7.4 ms a decision.) Each scope also keeps how many
	 * of its nodes are disrupted, counted once when it is computed and kept up to date by
	 * every grant, so a decision never walks a budget's nodes: a pool-wide budget over 5,000
	 * nodes cost a decision 54-75 us when it did. */
	struct ng_arena *arena; /* NULL until a scope is first needed */
	struct bscope *ndb, *adb;
	size_t nndb, nadb;
	/* NDBs by one In requirement of their selector: (key << 32 | value) -> the first link of
	 * a list of the NDBs requiring it, so the budgets of a node are found from its labels.
	 * NDBs without such a requirement (`{}`, Exists, NotIn) are listed in scan and tried on
	 * every node asked about; invalid ones in invalid (they fail every request). */
	struct ng_map ndb_by_label;
	struct budget_link *ndb_links;
	uint32_t *ndb_scan, *ndb_invalid;
	size_t nndb_scan, nndb_invalid;
	uint32_t *adb_invalid; /* invalid ADBs */
	size_t nadb_invalid;
	bool scopes_ok;        /* pd_scopes_init() done */
	bool adb_indexed;      /* every ADB scope computed, and by_node built */
	uint32_t *by_node_off; /* node i runs ADBs by_node[by_node_off[i] .. by_node_off[i+1]) */
	uint32_t *by_node;
	/* Held nodes by class for the control-plane rule (step 6), each held node marked too, so
	 * a decision subtracts its own request's nodes (a walk of the held nodes, no lookup)
	 * instead of walking every node. Counted for one way of recognising control-plane nodes
	 * (cp_sel, cp_key), recounted if asked with another. */
	bool cp_ready;
	const struct kube_selector *cp_sel;
	uint32_t cp_key;
	size_t held_cp, held_other;
	/* The requests (not Rejected) by node name, for budget statuses: built on the first
	 * status, so a status pass resolves each request's nodes once, not once per budget
	 * (2,450 budgets and 1,000 pending requests took 600 ms a pass). nd_by_node maps a node
	 * name to the first link of its list; nd_seen[i] == nd_gen marks request i as found
	 * for the status being computed. The links are in request order, nd_link_node[j] the
	 * node of link j: a budget whose scope has more nodes than there are links walks the
	 * links instead of its scope (a pool-wide budget of 100,000 nodes costs the requests). */
	bool nd_indexed;
	struct ng_map nd_by_node;
	struct budget_link *nd_links;
	uint32_t *nd_link_node;
	size_t nd_nlinks;
	uint32_t *nd_seen, nd_gen;
	/* Pacing (docs/gate.md "Pacing"), kept only when a budget of the snapshot sets
	 * soakSeconds or minIntervalSeconds (paced): held_at_ms[i] is when the grant holding node
	 * i was made (its status.grantedAt, or now_ms for a grant recorded here), granting_ms the
	 * date of the grant being recorded; back_ms[i] when the gate saw node i given back (0
	 * unknown, KUBE_SOAK_NOT_BACK not Ready and schedulable yet; NULL none known). */
	bool paced;
	struct pol_scope_cache *cache; /* NULL: pools computed for this ledger alone */
	int64_t now_ms, granting_ms;
	int64_t *held_at_ms, *back_ms;
	uint32_t ready_type; /* intern id of the condition type "Ready" */
};

/* One entry of a list of budgets (ndb_by_label, and the ADBs by pod label while scopes are
 * computed), or of requests (nd_by_node: budget is then a request's index). */
struct budget_link {
	uint32_t budget, next; /* next: index of the next link, or UINT32_MAX */
};

/* A budget's scope in a snapshot. */
struct kept_pool;
struct bscope {
	const uint32_t *names;  /* node name ids (ADB: sorted by id; NDB: in node order) */
	const uint32_t *idx;    /* NDB: the same nodes' indexes into kube_snapshot_nodes() */
	const uint8_t *unavail; /* NDB: per node, counted by its state (node_counted()) */
	size_t n, unavailable;  /* nodes; NDB: how many are unavailable */
	bool whole;             /* NDB: every node of the snapshot (idx[i] == i) */
	/* Scope nodes disrupted now: NDB, held or (counting unavailable nodes) unavailable; ADB,
	 * held. Kept by pol_ledger_grant(). */
	size_t disrupted;
	uint32_t lost_pvc; /* ADB: a selected PVC in phase Lost, or NG_INTERN_NONE */
	bool ready;        /* computed */
	/* What verdicts repeat for every request on the budget, made on the first: its name as
	 * reasons start ("NodeDisruptionBudget rack1"), and its limits when they read well. */
	const char *what;
	size_t what_len;
	struct bud_limits lim;
	bool lim_ok;
	/* Where the budget's maintenance windows stand at win_at_ms (computed once per instant:
	 * a ledger outlives one instant only in simulations). */
	int64_t win_at_ms;
	bool win_ready;
	struct win {
		bool open; /* a window is open */
		bool deny; /* outside every window, and spec.outsideWindows is Deny */
		const struct kube_int_or_string *limit; /* an open window's own limit, or NULL */
		int64_t next_ms;                        /* when closed: the next opening; -1 none */
		int64_t closes_ms; /* when open: when the window in force closes; -1 never */
		int64_t edge_ms;   /* the next opening or closing of any window: limits change */
		size_t which;      /* the window open now, or the one opening next */
		/* The open window's limit read (against the budget's scope), once per instant:
		 * limit_read says max holds it. */
		bool limit_read;
		struct bud_int_or_percent max;
	} win;
	/* Pacing. last_grant_ms: the newest grant adding scope nodes the ledger knows (its
	 * holders' grantedAt, and grants recorded since). With soakSeconds: soak[j] says scope
	 * node j soaks at soak_at_ms (soak_ready), soaking how many of them count for that alone
	 * (not held, not unavailable-counted; disrupted does not include them), soak_next_ms the
	 * first soak end after soak_at_ms (-1 none). */
	int64_t last_grant_ms;
	uint8_t *soak;
	bool soak_ready;
	int64_t soak_at_ms, soak_next_ms;
	size_t soaking;
	/* NDB with a topologyKey: its domains, made on first use (pd_ndb_domains()) and kept by
	 * grants as disrupted is, so a decision looks at its own nodes' domains only (walking the
	 * pool's nodes per decision made planning 10,000 nodes cost 5.9 s, 1.9 s at 5,000).
	 * dom[j]: scope node j's domain, numbered in the order the scope's nodes first show it;
	 * ndoms_disrupted: domains with a disrupted node. */
	const uint32_t *dom;
	/* NDB: the pool kept across ledgers it was made from or for (scopes.c), or NULL: its
	 * domains are assigned once per pool, not once per ledger. */
	struct kept_pool *kept;
	/* Grants that held one of its nodes (ndb_count_one(), adb_count_one()); with the
	 * ledger's co-holders, what its holders text (put_holders()) was made at: every failing
	 * decision names the holders, and naming them walks every held node (a plan of 100,000
	 * nodes spent 68 % of its time there). */
	uint32_t gen, holders_gen;
	size_t holders_nco;
	const char *holders;
	size_t holders_len;
	bool holders_ready;
	/* NDB: how many of its nodes count by their state (unavail[]), and the "counted
	 * unavailable" text (put_counted()) as of counted_gen. */
	size_t ncounted;
	uint32_t counted_gen;
	const char *counted;
	size_t counted_len;
	bool counted_ready;
	struct scope_domain {
		uint32_t value; /* label value id; NG_INTERN_NONE: the nodes without the label */
		uint32_t nodes, disrupted;
	} * doms;
	size_t ndoms, ndoms_disrupted;
};

/* How control-plane nodes are recognised: NodeGateConfig's controlPlane.selector, or the
 * node-role label. */
struct cp_match {
	const struct kube_selector *sel;
	uint32_t key; /* the default label's intern id; NONE when no node carries it */
};

static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static inline bool in_sorted(const uint32_t *v, size_t n, uint32_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), cmp_u32) != NULL;
}

static inline bool type_applies(const struct kube_budget_common *b, uint32_t type)
{
	if (b->ntypes == 0)
		return true; /* an empty list applies to every type */
	for (uint16_t i = 0; i < b->ntypes; i++)
		if (b->types[i] == type)
			return true;
	return false;
}

/* NotReady, cordoned, being taken away by another actor (an autoscaler's or a cloud's deletion
 * taint, a graceful shutdown under way), or carrying one of the budget's taint targets. */
static inline bool node_unavailable(const struct kube_node *n, const struct kube_ndb *b)
{
	if (!(n->flags & KUBE_NODE_READY) ||
	    (n->flags & (KUBE_NODE_UNSCHEDULABLE | KUBE_NODE_LEAVING | KUBE_NODE_SHUTTING_DOWN)))
		return true;
	for (uint16_t i = 0; b && i < b->ntargets; i++) {
		const struct kube_taint_target *t = &b->taint_targets[i];
		for (uint32_t k = 0; k < n->ntaints; k++) {
			const struct kube_taint *x = &n->taints[k];
			if (x->key == t->key &&
			    (t->effect == NG_INTERN_NONE || x->effect == t->effect) &&
			    (t->exists || x->val == t->val))
				return true;
		}
	}
	return false;
}

/* Whether pool node @n counts as disrupted for @b by its own state, a grant aside: another
 * actor taking it away (whatever countUnavailableNodes says: that is a voluntary disruption, what
 * a budget bounds), or unavailable when the budget counts unavailable nodes. */
static inline bool node_counted(const struct kube_node *n, const struct kube_ndb *b)
{
	return (n->flags & (KUBE_NODE_LEAVING | KUBE_NODE_SHUTTING_DOWN)) ||
	       (b->count_unavailable && node_unavailable(n, b));
}

/* One request being decided (disruption.c): its nodes, and the verdicts budget_eval.c adds. */
struct eval {
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	struct pol_ledger *ledger;
	const struct kube_nd *nd;
	const uint32_t *nodes;
	size_t nnodes;
	const struct kube_node **recs; /* the request's nodes' records */
	struct pol_budget_verdict *v;
	size_t nv, capv;
	bool any_failed;
	size_t nfailed, nclosed; /* failing verdicts; of them, budgets outside their windows */
	size_t nnever;           /* failing verdicts that can never pass (verdict.never) */
	int64_t now_ms;
	int64_t wake_ms; /* the next window edge of a budget whose verdict fails; 0 none */
	struct ng_arena *arena;
	/* The namespaces with a pod on the request's nodes (sorted ids), found once per
	 * decision for the invalid ApplicationDisruptionBudgets. */
	uint32_t *ns_here;
	size_t nns_here;
	bool ns_ready;
};

static inline const char *str(const struct eval *e, uint32_t id)
{
	return ng_intern_str(e->pool, id, NULL);
}

/* A budget the request touches: its index, how many of the request's nodes in its scope are
 * not disrupted yet (what the request adds: a node counts once), and how many there are in all
 * (what it would add with nothing else disrupted). */
struct touch {
	uint32_t budget, added, own;
};

/* A growing list of touches (heap). */
struct touches {
	struct touch *v;
	size_t n, cap;
};

/* ledger.c */
struct cp_match pd_control_plane_match(const struct kube_snapshot *s,
				       const struct pol_gate_config *cfg);
bool pd_is_control_plane(const struct kube_snapshot *s, const struct cp_match *m, uint32_t node);
bool pd_node_is_control_plane(const struct kube_snapshot *s, const struct cp_match *m,
			      const struct kube_node *n);
ng_status pd_held_classes(struct pol_ledger *l, const struct cp_match *m);
/* The held nodes whose (first) holder is @holder, by class, as pd_held_classes() counted them. */
void pd_held_classes_of(const struct pol_ledger *l, uint32_t holder, size_t *ret_cp,
			size_t *ret_other);
const struct kube_requirement *pd_in_requirement(const struct kube_selector *sel);
ng_status pd_resolve_nodes(const struct kube_snapshot *s, const struct kube_nd *nd,
			   struct ng_arena *arena, uint32_t **ret, size_t *ret_n);

/* scopes.c */
ng_status pd_scopes_init(struct pol_ledger *l);
ng_status pd_ndbs_of_node(struct pol_ledger *l, size_t i,
			  ng_status (*fn)(struct pol_ledger *l, size_t ndb, size_t node, void *arg),
			  void *arg);
void pd_ndb_counts_grant(struct pol_ledger *l, size_t i);
ng_status pd_ndb_scope(struct pol_ledger *l, size_t k, const struct bscope **ret);
ng_status pd_ndb_domains(struct pol_ledger *l, struct bscope *sc, const struct kube_ndb *b);
size_t pd_scope_pos(const struct bscope *sc, size_t node);
/* Whether node @name (an intern id) is in scope @sc: an NDB's (sc->idx, in node order) or an
 * ADB's (sc->names sorted by id). budget_now.c. */
bool pd_scope_has(const struct pol_ledger *l, const struct bscope *sc, uint32_t name);
void pd_adb_counts_grant(struct pol_ledger *l, uint32_t node, const struct kube_node *k);
ng_status pd_adb_index(struct pol_ledger *l);

/* scopes.c: pacing */
int64_t pd_soak_until(const struct pol_ledger *l, const struct kube_budget_common *b,
		      const struct kube_node *n, uint32_t name);
ng_status pd_scope_soak(struct pol_ledger *l, struct bscope *sc, const struct kube_budget_common *b,
			const struct kube_ndb *ndb, int64_t now_ms);
bool pd_scope_soaks(const struct bscope *sc, const struct kube_ndb *ndb, uint32_t name,
		    size_t node);

/* budget_now.c */
void pd_exclusion_text(const struct ng_intern *pool, int64_t until, uint32_t reason, char *buf,
		       size_t cap);
ng_status pd_scope_holders(struct pol_ledger *l, const struct bscope *sc, struct ng_arena *arena,
			   uint32_t **ret, size_t *ret_n);
void pd_sort_by_name(const struct ng_intern *pool, uint32_t *ids, size_t n);

/* budget_eval.c */
struct pol_budget_verdict *pd_verdict(struct eval *e, enum kube_resource kind,
				      const struct kube_budget_common *b, size_t index);
void pd_fail_v(struct eval *e, struct pol_budget_verdict *v);
ng_status pd_touch_add(struct touches *t, uint32_t budget, bool adds);
void pd_touches_group(struct touches *t);
ng_status pd_ndb_touch(struct pol_ledger *l, size_t k, size_t i, void *arg);
ng_status pd_eval_ndb_invalid(struct eval *e, const struct kube_ndb *b, size_t index);
ng_status pd_eval_ndb(struct eval *e, const struct kube_ndb *b, size_t index,
		      const struct touch *t);
ng_status pd_eval_adb_invalid(struct eval *e, const struct kube_adb *a, size_t index);
ng_status pd_eval_adb(struct eval *e, const struct kube_adb *a, size_t index,
		      const struct touch *t);
void pd_mark_never(struct eval *e, struct pol_budget_verdict *v);

/* budget_topology.c */
ng_status pd_check_topology(struct eval *e, struct pol_budget_verdict *v, const struct kube_ndb *b,
			    struct bscope *sc);

/* budget_windows.c */
void pd_windows_at(const struct kube_budget_common *b, int64_t now_ms, struct win *ret);
struct win *pd_scope_windows(struct bscope *sc, const struct kube_budget_common *b, int64_t now_ms);
void pd_wake_at_edge(struct eval *e, const struct pol_budget_verdict *v, const struct win *w);
void pd_fail_closed(struct eval *e, struct pol_budget_verdict *v, const char *what,
		    const struct kube_budget_common *b, const struct win *w);
bool pd_window_limits(struct eval *e, struct win *w, struct bud_limits *lim, const char *field,
		      struct ng_err *err);

#endif
