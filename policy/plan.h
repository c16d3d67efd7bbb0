/* The what-if planner (docs/planner.md): rolling maintenance of chosen nodes simulated against
 * every rule the gate applies, with the gate's own decision code. As if a maintenance tool
 * created, at the start, one NodeDisruption per chosen node (retry enabled, no deadline) and
 * deleted each one a fixed drain time after its grant, the gate's rounds are replayed on a
 * simulated clock: rank the pending requests (pol_rank_pending()), decide them one at a time
 * (pol_evaluate_disruption()) against a ledger of what is held, record each grant before the
 * next decision. Health hooks answer healthy. Pure: no I/O.
 *
 * Ownership: every pointer argument is borrowed for the call. A plan's arrays and strings come
 * from the caller's @arena, and its ids are the snapshot's: both must outlive the plan.
 * Threads: any thread, on a snapshot the caller holds.
 * Errors: NG_ENOMEM (an arena or the heap is full), NG_ELIMIT (over POL_PLAN_MAX_NODES). A plan
 * that reaches one of its caps (waves, rounds, decisions, time) is not an error: it is answered
 * truncated, saying which cap stopped it and where on the simulated clock. */
#ifndef NG_POLICY_PLAN_H
#define NG_POLICY_PLAN_H

#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;
struct ng_buf;

/* Nodes one plan may simulate: 20 times the 5,000-node cluster nodegate is sized for. */
#define POL_PLAN_MAX_NODES 100000
/* Waves one plan may simulate: one node per wave over a 10,000-node cluster; the nodes a capped
 * plan did not reach are listed as not planned. */
#define POL_PLAN_MAX_WAVES 10000
/* Budgets named per wave as having held requests back, the first ones met in rank order. */
#define POL_PLAN_MAX_LIMITS 8
/* Limits of a reason kept in a plan (a budget verdict's reason is under 320 bytes). */
#define POL_PLAN_REASON_BYTES 320

/* Default caps on one plan's work (docs/planner.md "Limits"). A plan of every node of the
 * 5,000-node cluster of benchmarks.md B9 takes 9 rounds and 16,296 decisions in under 2 s;
 * one node at a time over 5,000 nodes takes 5,000 rounds and 12.5 million decisions (7 s
 * measured in a release build). Window edges may add two rounds per wave. */
#define POL_PLAN_DEFAULT_MAX_ROUNDS 100000
#define POL_PLAN_DEFAULT_MAX_DECISIONS 50000000
#define POL_PLAN_DEFAULT_MAX_SECONDS 30

/* What to simulate. */
struct pol_plan_input {
	const char *const *nodes; /* the chosen nodes' names */
	size_t nnodes;
	int64_t start_wall_ms; /* when the requests are created: the simulated clock starts here */
	int64_t drain_ms;      /* how long a granted request holds its node before it is deleted */
	/* The synthetic requests' spec.type and spec.requestor (NULL: none). A string the
	 * snapshot does not hold is in no allowedTypes or supportedNodeDisruptionTypes list. */
	const char *type, *requestor;
	size_t max_waves; /* waves to simulate at most: 0 or over POL_PLAN_MAX_WAVES means that */
	/* Caps on the work; 0: none. The plan stops before the round or decision that would go
	 * over, or once max_mono_us have passed since it began (read before each round and every
	 * few decisions), and is answered truncated (struct pol_plan.stopped). */
	size_t max_rounds;
	size_t max_decisions;
	int64_t max_mono_us;
	/* The clock max_mono_us is measured on, in µs (NULL: ng_now_mono_us()); tests pass one of
	 * their own so that a time cap is deterministic. Called with @clock_ctx. */
	int64_t (*clock_mono_us)(void *clock_ctx);
	void *clock_ctx;
};

/* What stopped a plan before every node was granted or known never to be. */
enum pol_plan_stop {
	POL_PLAN_COMPLETE,       /* nothing: the plan is whole */
	POL_PLAN_STOP_WAVES,     /* max_waves (or POL_PLAN_MAX_WAVES) waves were planned */
	POL_PLAN_STOP_ROUNDS,    /* max_rounds rounds were simulated */
	POL_PLAN_STOP_DECISIONS, /* max_decisions decisions were made */
	POL_PLAN_STOP_TIME,      /* max_mono_us passed */
};

/** "waves", "rounds", "decisions", "time" (the JSON's summary.stoppedBy), or NULL for
 * POL_PLAN_COMPLETE: a static string. */
const char *pol_plan_stop_str(enum pol_plan_stop why);

/* Why requests waited in a wave's round: a budget (its first failing verdict), or, for a
 * request no budget held back (the control-plane rule, a PodDisruptionBudget, do-not-disrupt,
 * a paused gate), the decision's reason. */
struct pol_plan_limit {
	bool budget;             /* kind, ns, name name a budget */
	enum kube_resource kind; /* KUBE_RES_NDBS, KUBE_RES_ADBS or KUBE_RES_PDBS */
	uint32_t ns, name;       /* ns NG_INTERN_NONE for NodeDisruptionBudgets */
	size_t waiting;          /* requests this limit was the first reason of */
	const char *reason;      /* the first such request's reason; arena memory */
};

struct pol_plan_wave {
	int64_t start_wall_ms;
	const uint32_t *nodes; /* granted together, sorted by name; arena memory */
	size_t nnodes;
	struct pol_plan_limit *limits; /* at most POL_PLAN_MAX_LIMITS, by first met */
	size_t nlimits;
	size_t more_limits; /* further distinct limits not listed */
	size_t waiting;     /* requests still waiting after the round */
};

/* A node the plan never grants. */
struct pol_plan_never {
	uint32_t node;      /* intern id; NG_INTERN_NONE when @name is not a node of the cluster */
	const char *name;   /* the node's name; arena memory */
	const char *reason; /* the gate's last reason; arena memory */
	bool rejected;      /* the gate rejected the request (else it would wait forever) */
	bool unsatisfiable; /* a budget can never allow it, whatever else ends (known at once) */
};

struct pol_plan {
	struct pol_plan_wave *waves;
	size_t nwaves;
	struct pol_plan_never *never; /* sorted by name */
	size_t nnever;
	size_t nplanned;        /* nodes in some wave */
	size_t nunplanned;      /* nodes still waiting when a cap stopped the plan */
	const char **unplanned; /* their names, sorted; arena memory */
	bool truncated;         /* a cap stopped the plan (stopped says which) */
	enum pol_plan_stop stopped;
	/* Truncated: the simulated time at which it stopped. A plan stopped by the decisions or
	 * time cap in the middle of a round keeps that round's grants as its last wave, whose
	 * waiting count then includes the requests the round did not reach. */
	int64_t stopped_wall_ms;
	int64_t end_wall_ms;  /* when the last wave's requests are deleted (start when none) */
	size_t decisions;     /* decisions made (requests whose failing budgets did not change
			       * since their last decision are not decided again) */
	size_t rounds;        /* gate rounds simulated */
	size_t held_at_start; /* Granted requests of the snapshot holding nodes at the start */
};

/**
 * Simulates @in over @s (see the top of this file) into @ret, whose arrays come from @arena.
 * Nodes of @in that are not nodes of @s are listed in ret->never with "not a node of the
 * cluster"; duplicates count once. Granted requests of @s hold their nodes until their
 * spec.duration after status.grantedAt, or @in->drain_ms after it when they have no duration,
 * and at least until the start. Pending requests of @s are not simulated. @ret is written only
 * on success. NG_ELIMIT when @in->nnodes > POL_PLAN_MAX_NODES, NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_plan_run(const struct kube_snapshot *s, const struct pol_plan_input *in,
				    struct ng_arena *arena, struct pol_plan *ret);

/**
 * The names of @s's nodes that the label selector string @text (kubectl -l syntax; "" selects
 * every node) selects, in node order, into *@ret_names (from @arena; the strings are @s's) and
 * *@ret_n. NG_EPARSE with @reterr for a selector that does not parse, NG_ELIMIT when it selects
 * more than POL_PLAN_MAX_NODES, NG_ENOMEM. Outputs are written only on success.
 */
NG_NODISCARD ng_status pol_plan_select(const struct kube_snapshot *s, const char *text,
				       struct ng_arena *arena, const char ***ret_names,
				       size_t *ret_n, struct ng_err *reterr);

/**
 * As pol_plan_select() for a selector already decoded over @s's pool (pol_selector_to_pool()).
 */
NG_NODISCARD ng_status pol_plan_select_nodes(const struct kube_snapshot *s,
					     const struct kube_selector *sel,
					     struct ng_arena *arena, const char ***ret_names,
					     size_t *ret_n, struct ng_err *reterr);

/* Budgets whose maintenance windows a plan's picture shades, and open spans per budget: a
 * picture of 2,000 nodes stays readable with a band per budget, and a daily window over the
 * longest plan worth drawing (10,000 waves of minutes, a few months) opens a few hundred times. */
#define POL_PLAN_MAX_WINDOWED 16
#define POL_PLAN_MAX_SPANS 512

/* Where a budget's maintenance windows are open on a plan's simulated clock. */
struct pol_plan_span {
	int64_t from_wall_ms, to_wall_ms; /* to > from */
};

struct pol_plan_windows {
	enum kube_resource kind;  /* KUBE_RES_NDBS or KUBE_RES_ADBS */
	uint32_t ns, name;        /* ns NG_INTERN_NONE for NodeDisruptionBudgets */
	bool outside_use_default; /* spec.outsideWindows UseDefault: it still allows outside */
	const struct pol_plan_span *spans; /* sorted, merged, none touching; arena memory */
	size_t nspans;
	bool more_spans; /* it opens again before the end: POL_PLAN_MAX_SPANS were kept */
};

/**
 * The maintenance windows of the budgets that bear on plan @p (of @s for @in): budgets with
 * spec.windows that a wave names as having held requests back, then NodeDisruptionBudgets with
 * windows selecting a node of a wave or a node never granted; NodeDisruptionBudgets first, each
 * in snapshot order, at most POL_PLAN_MAX_WINDOWED (*@ret_more counts the others). Each with
 * the spans during which one of its windows is open between @in->start_wall_ms and
 * @p->end_wall_ms (at least one drain after the start), cut to that interval. Pure: the
 * answer is a function of its inputs. Arrays from @arena; NG_ENOMEM. Outputs are written only
 * on success.
 */
NG_NODISCARD ng_status pol_plan_windows(const struct kube_snapshot *s,
					const struct pol_plan_input *in, const struct pol_plan *p,
					struct ng_arena *arena, struct pol_plan_windows **ret_v,
					size_t *ret_n, size_t *ret_more);

/**
 * Appends @p (a plan of @s for @in) to @b as the JSON document docs/planner.md describes,
 * followed by a newline. NG_ELIMIT/NG_ENOMEM from the buffer, which may then hold part of it.
 */
NG_NODISCARD ng_status pol_plan_json(const struct kube_snapshot *s, const struct pol_plan_input *in,
				     const struct pol_plan *p, struct ng_buf *b);

#endif
