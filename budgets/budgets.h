/* Budgets: label selector and node-affinity semantics, int-or-percent values, and which pods and
 * nodes an ApplicationDisruptionBudget watches. Pure functions over a kube snapshot; no I/O,
 * no logging, any thread (a snapshot is immutable).
 *
 * Ownership: every pointer argument is borrowed for the call and not kept. Arrays handed back
 * come from the caller's @arena (valid until it is reset or destroyed) and hold indexes and
 * intern ids of the snapshot, so the snapshot must outlive their use. Output parameters (ret)
 * are written only on success; reterr (optional, may be NULL) only on failure. */
#ifndef NG_BUDGETS_BUDGETS_H
#define NG_BUDGETS_BUDGETS_H

#include "budgets/selector.h"
#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;

/* ---- int-or-percent (maxDisruptions, maxDisruptedNodes, minUndisruptedNodes) ---- */

struct bud_int_or_percent {
	bool is_percent;
	int64_t value; /* count, or percent 0..100 */
};

/**
 * Parses the string form of an IntOrString budget value in @buf (@len bytes, no NUL needed): "3"
 * or "25%". Percentages must be 0..100, counts 0..1000000. Writes @ret only on success;
 * NG_EPARSE/NG_ELIMIT with a message in @reterr (may be NULL).
 */
NG_NODISCARD ng_status bud_int_or_percent_parse(const char *buf, size_t len,
						struct bud_int_or_percent *ret,
						struct ng_err *reterr);

/**
 * Validates a decoded IntOrString @v (a string is an id of @pool) and converts it; @field names
 * it in messages. Writes @ret only on success; NG_EPARSE (unset, negative, not a percentage) or
 * NG_ELIMIT (out of range) with a message in @reterr (may be NULL).
 */
NG_NODISCARD ng_status bud_int_or_percent_from(const struct kube_int_or_string *v,
					       const struct ng_intern *pool, const char *field,
					       struct bud_int_or_percent *ret,
					       struct ng_err *reterr);

/** Scales @v against @total: a count is itself, a percentage rounds up (as PodDisruptionBudget). */
int64_t bud_int_or_percent_scaled(const struct bud_int_or_percent *v, int64_t total);

/* ---- budget arithmetic ---- */

/* A budget's limits: maxDisruptedNodes/maxDisruptions and minUndisruptedNodes. */
struct bud_limits {
	bool has_max, has_min;
	struct bud_int_or_percent max, min;
};

struct bud_check {
	bool ok;
	int64_t pool;  /* nodes in the budget's scope */
	int64_t after; /* disrupted scope nodes if the request were granted */
	int64_t max,
	    min; /* the limits as node counts (percentages of pool, rounded up); -1 if unset */
	int64_t
	    allowed; /* more scope nodes that could be disrupted now (>= 0), before the request */
};

/**
 * The arithmetic of DESIGN.md §4 step 7: with @before scope nodes disrupted and a request adding
 * @added more (scope nodes it asks for that are not disrupted already: a node counts once), the
 * budget holds when after <= max and pool - after >= min. Always writes @ret.
 */
void bud_check_limits(const struct bud_limits *l, int64_t pool, int64_t before, int64_t added,
		      struct bud_check *ret);

/* ---- ApplicationDisruptionBudget scope ---- */

/**
 * True when @adb selects @pod: its podSelector matches the pod's labels, or the pod mounts a PVC
 * (in the budget's namespace) that its pvcSelector matches. Pods of other namespaces never match.
 * An invalid budget selects nothing here; callers decide how to treat invalid budgets.
 */
bool bud_adb_selects_pod(const struct kube_snapshot *s, const struct kube_adb *adb,
			 const struct kube_pod *pod);

/* What an ADB watches. Arrays live in the arena passed to bud_adb_scope(); their indexes and ids
 * are the snapshot's. */
struct bud_adb_scope {
	const uint32_t *pods; /* indexes into kube_snapshot_pods(), in index order */
	size_t npods;
	const uint32_t *nodes; /* node name ids, sorted by id, unique */
	size_t nnodes;
	uint32_t lost_pvc; /* name id of a selected PVC in phase Lost, or NG_INTERN_NONE */
};

/**
 * Resolves @adb (a budget of @s): the pods it selects (scheduled and not finished), and the
 * watched nodes = nodes running those pods ∪ nodes that Bound PVCs selected by pvcSelector are
 * pinned to by their PersistentVolume's nodeAffinity (a PV without affinity pins nothing). An
 * invalid budget watches nothing. @ret's arrays come from @arena; @ret is written only on
 * success. NG_ENOMEM when @arena is full.
 */
NG_NODISCARD ng_status bud_adb_scope(const struct kube_snapshot *s, const struct kube_adb *adb,
				     struct ng_arena *arena, struct bud_adb_scope *ret);

/** True when the PV's node affinity admits @node (terms ORed, requirements ANDed). */
bool bud_pv_pins_node(const struct kube_snapshot *s, const struct kube_pv *pv,
		      const struct kube_node *node);

#endif
