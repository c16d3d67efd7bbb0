/* The gate's decision for one NodeDisruption (DESIGN.md §4 steps 1-9, hooks aside): pure, over a
 * cache snapshot and a ledger of what is granted. The controller that ranks requests and writes
 * status builds on this; step 8, the health hooks, is policy/hook.h and the controller. No I/O, no
 * logging.
 *
 * Ownership: every pointer argument is borrowed for the call unless its function says otherwise.
 * Intern ids (node and request names, budget names) are ids of the snapshot's string pool, and
 * strings returned from it stay valid while the snapshot does. Arrays a function hands back come
 * from the caller's @arena and live until that arena is reset or destroyed; they may also point
 * into the snapshot, so the snapshot must outlive them too. A ledger is created against one
 * snapshot, which must outlive it, and is freed with pol_ledger_destroy().
 * Threads: any thread; a snapshot is immutable and may be shared, but a ledger (which caches
 * budget scopes as it is used) and an arena belong to one thread at a time.
 * Errors: NG_ENOMEM only (an arena or the heap is full); a deny is a decision, not an error.
 * Output parameters (ret) are written only on success. */
#ifndef NG_POLICY_DISRUPTION_H
#define NG_POLICY_DISRUPTION_H

#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;

/* NodeGateConfig fields the decision reads, with DESIGN.md §3.4's defaults. The pointers are
 * borrowed from the snapshot's NodeGateConfig record: valid until kube_snapshot_release(). */
struct pol_gate_config {
	bool paused;
	bool reject_empty;             /* default true */
	bool reject_overlapping;       /* default false */
	const uint32_t *allowed_types; /* intern ids; none = any type */
	size_t nallowed;
	/* controlPlane.serial (default true): control-plane nodes are disrupted one at a time,
	 * before any pending worker request, and never together with workers. */
	bool serial_control_plane;
	/* respectPodDisruptionBudgets (default false): a grant whose drain would exceed a
	 * PodDisruptionBudget's disruptionsAllowed waits instead (step 7b). */
	bool respect_pdbs;
	/* controlPlane.selector: which nodes are control-plane. NULL = those with the label
	 * node-role.kubernetes.io/control-plane. */
	const struct kube_selector *control_plane_selector;
	/* Pending requests that touch control-plane nodes: set by pol_rank_pending(). */
	size_t control_plane_pending;
	int64_t retry_initial_ms, retry_max_ms; /* NodeGateConfig retry; 0 = the caller's default */
	/* NodeGateConfig exclusions: no grant anywhere while one is in force. */
	const struct kube_exclusion *exclusions;
	size_t nexclusions;
	/* medik8sLeases (default false): a node whose medik8s Lease another holder owns is not
	 * granted (step 6c). */
	bool medik8s_leases;
};

/**
 * Whether one of the exclusions @x (@n, sorted by start) is in force at @now_ms. Then
 * *@ret_until is when they end (exclusions that overlap or touch end together) and
 * *@ret_reason is the reason of the one in force that started last (an intern id). Pure.
 */
bool pol_excluded_at(const struct kube_exclusion *x, size_t n, int64_t now_ms, int64_t *ret_until,
		     uint32_t *ret_reason);

/**
 * The defaults of DESIGN.md §3.4 overlaid with what @s's NodeGateConfig sets; an unreadable
 * config pauses. Always writes @ret, whose pointers borrow from @s.
 */
void pol_gate_config_from(const struct kube_snapshot *s, struct pol_gate_config *ret);

/*
 * Nodes disrupted by granted requests: those the snapshot shows as Granted plus the grants the
 * gate made since (recorded before the next evaluation, so a stale cache can never grant the
 * same capacity twice). It also keeps, built on first use, which nodes each budget of the
 * snapshot covers, so the decisions and budget statuses of one round compute that once, and
 * how many of them are disrupted, kept up to date by pol_ledger_grant(): a decision looks at
 * its own nodes' budgets and counts, never at a budget's whole scope. Owned by one thread.
 */
struct pol_ledger;

/**
 * A ledger of @s's Granted requests (those being deleted hold nothing). @s is borrowed and must
 * outlive the ledger. Caller frees with pol_ledger_destroy(). NULL on OOM.
 */
struct pol_ledger *pol_ledger_create(const struct kube_snapshot *s);
/**
 * As pol_ledger_create(), but the Granted requests named in @ended (@nended intern ids, sorted
 * ascending; borrowed for the call) hold nothing, as if they had been deleted: what-if
 * simulations (policy/plan.h) end grants the snapshot still shows. NULL on OOM.
 */
struct pol_ledger *pol_ledger_create_without(const struct kube_snapshot *s, const uint32_t *ended,
					     size_t nended);
/** Frees @l and the scopes it cached. Accepts NULL. */
void pol_ledger_destroy(struct pol_ledger *l);

/**
 * NodeDisruptionBudget pools kept from one ledger to the next. Which nodes a budget covers
 * depends on the snapshot's node and budget tables alone: while neither changes what a budget
 * reads (kube_snapshot_table_shape(): the same nodes at the same places with the same labels,
 * taints and state), a ledger given this cache takes each pool from it instead
 * of matching every node against the budget again, and counts its disrupted nodes from the
 * held ones. Owned by one thread (the gate's, round after round).
 */
struct pol_scope_cache;
struct pol_scope_cache *pol_scope_cache_create(void);
void pol_scope_cache_destroy(struct pol_scope_cache *c);
/** @l takes its pools from @c (borrowed: it must outlive @l), before any is computed. */
void pol_ledger_use_cache(struct pol_ledger *l, struct pol_scope_cache *c);
/**
 * Records that request @nd_name (intern id) was granted @nodes (@n intern ids, borrowed: copied,
 * not kept). A node already held keeps its first holder. NG_ENOMEM on OOM, after which some of
 * the nodes may be recorded: stop granting from this ledger.
 */
NG_NODISCARD ng_status pol_ledger_grant(struct pol_ledger *l, uint32_t nd_name,
					const uint32_t *nodes, size_t n);
/**
 * As pol_ledger_grant(), the grant dated @at_wall_ms (pol_ledger_grant() dates it with the
 * instant pol_ledger_set_now() gave, 0 before): the minIntervalSeconds of a paced budget whose
 * nodes it adds start then. NG_ENOMEM as pol_ledger_grant().
 */
NG_NODISCARD ng_status pol_ledger_grant_at(struct pol_ledger *l, uint32_t nd_name,
					   const uint32_t *nodes, size_t n, int64_t at_wall_ms);
/** The instant (wall ms) the grants recorded from now on with pol_ledger_grant() are dated. */
void pol_ledger_set_now(struct pol_ledger *l, int64_t now_wall_ms);
/**
 * What the gate saw of node @node (intern id) since the grant holding it ended: given back at
 * @back_wall_ms (Ready and schedulable again), or KUBE_SOAK_NOT_BACK while it is not. Budgets
 * with soakSeconds count it as disrupted until then plus their soak (docs/gate.md "Pacing").
 * Nothing for a node the snapshot does not hold, or a snapshot without paced budgets.
 * NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_ledger_given_back(struct pol_ledger *l, uint32_t node,
					     int64_t back_wall_ms);
/**
 * Pacing, for simulations (policy/plan.h): a grant of @node (intern id) dated @at_wall_ms that
 * has ended since; the minIntervalSeconds of a paced budget holding @node still runs from it.
 */
void pol_ledger_past_grant(struct pol_ledger *l, uint32_t node, int64_t at_wall_ms);
/** Whether a valid budget of @s sets soakSeconds or minIntervalSeconds (pays for pacing). */
bool pol_snapshot_paced(const struct kube_snapshot *s);
/** The largest soakSeconds of @s's valid budgets, in ms; 0 none. */
int64_t pol_snapshot_max_soak_ms(const struct kube_snapshot *s);
/** The largest minIntervalSeconds of @s's valid budgets, in ms; 0 none. */
int64_t pol_snapshot_max_interval_ms(const struct kube_snapshot *s);
/** The request holding @node, or NG_INTERN_NONE. */
uint32_t pol_ledger_holder(const struct pol_ledger *l, uint32_t node);
/** Whether node @i of the ledger's snapshot (kube_snapshot_nodes()) is held: one byte read. */
bool pol_ledger_held_at(const struct pol_ledger *l, size_t i);

/**
 * Orders the Pending requests @nds (n pointers into @s's requests, in place) as DESIGN.md §4
 * says: control-plane requests first (when serial), priority descending, requestors that already
 * hold a grant, requestors with fewer pending requests, creation time, name. Counts the pending
 * control-plane requests into @cfg. Scratch memory comes from @arena. NG_ENOMEM when @arena or
 * the heap is full; @nds is then unchanged.
 */
NG_NODISCARD ng_status pol_rank_pending(const struct kube_snapshot *s, struct pol_gate_config *cfg,
					const struct kube_nd **nds, size_t n,
					struct ng_arena *arena);

enum pol_gate_outcome {
	POL_GATE_GRANT,
	POL_GATE_REJECT,
	POL_GATE_PENDING, /* paused, or failed with retry enabled before the deadline */
};

/** "Granted", "Rejected", "Pending": a static string. */
const char *pol_gate_outcome_str(enum pol_gate_outcome o);

/* A decision's reason: the condition's message, the Event's and the log line's. It names every
 * failing budget while they fit (a verdict's reason is under 320 bytes, so at least two whole
 * ones and the "and K more" tail always do); 1 KiB keeps the Event's message within the 1024
 * bytes the events.k8s.io API allows an Event's note, and the log line within its 4 KiB. */
#define POL_REASON_BYTES 1024

/* One budget's verdict on the request, as status.disruptedDisruptionBudgets lists it. */
struct pol_budget_verdict {
	enum kube_resource kind; /* KUBE_RES_NDBS or KUBE_RES_ADBS */
	uint32_t ns, name;       /* ns NG_INTERN_NONE for NodeDisruptionBudgets */
	uint32_t index;          /* the budget's index in the snapshot's NDBs or ADBs */
	bool ok;
	bool adds;       /* the request adds scope nodes not disrupted yet (pacing: a grant) */
	int64_t allowed; /* more scope nodes the budget allows now (status.disruptionsAllowed) */
	int64_t current; /* scope nodes disrupted before this request */
	/* Failed, and would fail with nothing else disrupted at any time: the request's own
	 * nodes in the scope are over the largest limit the budget can ever have (its own or
	 * any window's), or leave fewer than its minimum. The reason then says so, and what
	 * would make it fit. */
	bool never;
	/* Its multistep hooks accepted /prepare for this request (now or in an earlier
	 * decision): written as the status entry's "preparing". */
	bool preparing;
	char reason[320]; /* a failed health hook's reason quotes its answer */
};

/* How a failing budget's reason names the requests holding its nodes, after its counts
 * ("NodeDisruptionBudget pool: 2 of 2 in use; ... ; held by a, b (+3 more)"). What follows it
 * changes as grants come and go, not the decision: the gate leaves it out of what makes a
 * Pending request's status worth writing again. */
#define POL_HELD_BY "; held by "

/* A decision: its arrays are the caller's arena memory, their ids the snapshot's. */
struct pol_gate_decision {
	enum pol_gate_outcome outcome;
	const uint32_t *nodes; /* the request's nodes (intern ids, sorted by id); arena memory */
	size_t nnodes;
	struct pol_budget_verdict *verdicts; /* every impacted budget, arena memory */
	size_t nverdicts;
	char reason[POL_REASON_BYTES]; /* why, for a person: every failing budget (bounded, see
					* pol_decision_reason()), the step that decided, or
					* "granted" */
	/* When the clock alone may change this decision: the next opening or closing of a
	 * maintenance window of a failing budget, when its limits change (wall ms); 0 when none. */
	int64_t wake_wall_ms;
	/* Every failing budget fails only for being outside its windows: the request waits for
	 * one to open (Pending, retry or not). */
	bool only_windows;
	/* A budget can never allow the request, whatever else is disrupted and whatever its
	 * windows (a verdict with never set): Rejected without retry; with retry Pending, with
	 * the reason naming only such budgets, and no window to wait for (wake_wall_ms 0). Only
	 * a change of a budget or of the nodes can change this decision. */
	bool unsatisfiable;
};

/**
 * Writes @d->reason from @d's failing verdicts: one failure is its verdict's reason; several
 * are "N budgets fail: R1 | R2 | ..." in the order status.disruptedDisruptionBudgets lists
 * them, as many as fit in POL_REASON_BYTES, then "| and K more (status.disruptedDisruptionBudgets
 * lists each)". The first failure always fits whole. When @d->unsatisfiable, only the verdicts
 * that can never pass are named ("N budgets can never allow it: ..."): the others may pass
 * later, those never will. Leaves the reason alone when none failed.
 */
void pol_decision_reason(struct pol_gate_decision *d);

/**
 * Decides @nd (a request of @s) at @now_wall_ms (wall clock, ms since the epoch) per DESIGN.md
 * §4: deadline, empty, paused, type, overlap, control plane (with @cfg->control_plane_pending
 * from pol_rank_pending()), then every impacted budget (frozen, limits; every failure listed).
 * Budgets nodegate cannot read fail closed for requests that touch their namespace's nodes (ADB)
 * or for every request (NDB). Health hooks (step 8) are not called here. @ledger is read, and
 * caches the budget scopes it computes; recording a grant is the caller's (pol_ledger_grant()).
 * @ret's arrays come from @arena; @ret is written only on success. NG_ENOMEM when @arena or the
 * heap is full.
 */
NG_NODISCARD ng_status pol_evaluate_disruption(const struct kube_snapshot *s,
					       const struct pol_gate_config *cfg,
					       struct pol_ledger *ledger, const struct kube_nd *nd,
					       int64_t now_wall_ms, struct ng_arena *arena,
					       struct pol_gate_decision *ret);

/**
 * The decision's node names sorted as status.disruptedNodes lists them (the decision's ids are
 * in intern order, which is not the names' order). The array is from @arena; the strings are
 * @s's, valid while @s is. NULL when @arena is full.
 */
const char **pol_node_names_sorted(const struct kube_snapshot *s, const struct pol_gate_decision *d,
				   struct ng_arena *arena);

struct ng_buf;
/**
 * Appends @v (@n verdicts of a decision on @s) to @b as status.disruptedDisruptionBudgets
 * writes them: [{reference: {kind, namespace, name}, ok, reason, preparing (when true)}]. With
 * @prior (the request as the cache has it; may be NULL), every budget its status marks
 * preparing stays so: /terminate is owed to it whatever this decision says, so a budget no
 * verdict names is carried as it was. NG_ELIMIT/NG_ENOMEM from the buffer, which may then hold
 * part of the array.
 */
NG_NODISCARD ng_status pol_verdicts_json(const struct kube_snapshot *s,
					 const struct pol_budget_verdict *v, size_t n,
					 const struct kube_nd *prior, struct ng_buf *b);

/* A budget at one instant: the limit in force, how much of it is used and by which requests,
 * and where its maintenance windows stand. What `kubectl get` shows of a budget, what its
 * status says and what `nodegate status` prints come from this one computation. */
struct pol_budget_now {
	bool invalid;   /* the budget could not be read: allowed is 0, limit_now -1 */
	size_t watched; /* nodes in scope */
	/* Scope nodes disrupted now: held by a grant (NDB with countUnavailableNodes: or
	 * unavailable). */
	size_t in_use;
	/* The maximum in force now, as a node count (a percentage is of the scope, rounded up):
	 * an open window's own limit, else the budget's; 0 outside every window with
	 * outsideWindows Deny; -1 when no maximum applies (an NDB with only a minimum). */
	int64_t limit_now;
	int64_t allowed; /* more scope nodes that may be disrupted now (>= 0) */
	/* Maintenance windows, when the budget has some (has_windows): */
	bool has_windows;
	bool window_open;           /* a window is open now */
	int32_t window;             /* the open window's index in spec.windows, or -1 */
	int64_t closes_wall_ms;     /* open: when the open span closes; -1 never */
	int64_t next_opens_wall_ms; /* closed: the next opening (wall ms); -1 none in sight */
	/* The next opening or closing of any of its windows, when limit_now may change; -1
	 * none (and without windows). */
	int64_t edge_wall_ms;
	/* An exclusion in force (excluded): nothing more is allowed until excluded_until (wall
	 * ms), for excluded_reason (intern id). edge_wall_ms covers exclusions' starts and ends. */
	bool excluded;
	int64_t excluded_until;
	uint32_t excluded_reason;
	/* Pacing: with minIntervalSeconds, the newest grant adding its nodes (last_grant_wall_ms,
	 * 0 none known) and, while it is in the future, the earliest next one (next_grant_wall_ms,
	 * else -1); with soakSeconds, how many scope nodes count as disrupted for soaking alone
	 * (in in_use) and the soaking nodes (intern ids; until_ms KUBE_SOAK_NOT_BACK while not back
	 * yet), sorted by name, arena memory. edge_wall_ms covers the next grant and soak ends. */
	int64_t last_grant_wall_ms, next_grant_wall_ms;
	size_t soaking;
	const struct kube_soaking *soaking_nodes;
	size_t nsoaking_nodes;
	/* The Granted requests holding scope nodes (the ledger's grants, the gate's own
	 * not-yet-cached ones included): intern ids, sorted by name; arena memory. */
	const uint32_t *holders;
	size_t nholders;
};

/* What a budget's status shows (DESIGN.md §3.2, §3.3), computed from the same ledger. */
struct pol_budget_status {
	size_t watched;           /* nodes in scope */
	const uint32_t *nodes;    /* the scope (ADB: sorted name ids; NDB: node order); ledger's */
	size_t unavailable;       /* NDB: unavailable pool nodes */
	size_t current;           /* scope nodes disrupted now */
	int64_t allowed;          /* more scope nodes that may be disrupted now (>= 0) */
	const uint32_t *nd_names; /* requests touching the scope (Granted or Pending) */
	const uint8_t *nd_states; /* their enum kube_nd_state */
	size_t nnds;
	bool invalid;              /* the budget could not be read: allowed is 0 */
	struct pol_budget_now now; /* the limit in force, the windows, the holders */
};

/**
 * Computes @ret for NodeDisruptionBudget (@kind KUBE_RES_NDBS) or ApplicationDisruptionBudget
 * (KUBE_RES_ADBS) number @index of @s at @now_wall_ms (wall clock, ms since the epoch), from
 * @ledger (which caches the scope and counts the grants). Pure: the same snapshot, ledger and
 * instant give the same answer. Costs the budget's scope (or the held nodes, when fewer) and
 * its windows (bounded, common/cron.h). @ret->holders comes from @arena; @ret is written only
 * on success. NG_ENOMEM when @arena or the heap is full. Any thread that owns @ledger.
 */
NG_NODISCARD ng_status pol_budget_now(const struct kube_snapshot *s, struct pol_ledger *ledger,
				      enum kube_resource kind, size_t index, int64_t now_wall_ms,
				      struct ng_arena *arena, struct pol_budget_now *ret);

/**
 * Computes the status of NodeDisruptionBudget (@kind KUBE_RES_NDBS) or
 * ApplicationDisruptionBudget (KUBE_RES_ADBS) number @index of @s at @now_wall_ms, from
 * @ledger (which caches the scope): @ret->now is pol_budget_now()'s answer, and
 * @ret->allowed follows the window in force. Costs the smaller of the scope and the requests'
 * nodes (an NDB's disrupted count is the ledger's). @ret->nodes is the ledger's, valid while it
 * lives; @ret's other arrays come from @arena; @ret is written only on success. NG_ENOMEM when
 * @arena or the heap is full.
 */
NG_NODISCARD ng_status pol_budget_status(const struct kube_snapshot *s, struct pol_ledger *ledger,
					 enum kube_resource kind, size_t index, int64_t now_wall_ms,
					 struct ng_arena *arena, struct pol_budget_status *ret);

#endif
