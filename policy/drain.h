/* The drainer's decisions, pure (no I/O): which pods of a node a drain evicts, which stop it,
 * which it waits for, and how long a failed attempt backs off (docs/drainer.md).
 *
 * Ownership: everything passed in is borrowed for the call; results live in the caller's arena
 * or struct. Threads: any, on a snapshot the caller holds. */
#ifndef NG_POLICY_DRAIN_H
#define NG_POLICY_DRAIN_H

#include "common/status.h"
#include "kube/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_snapshot;
struct ng_arena;
struct ng_intern;
struct ng_regex;

/* How a drain treats one pod on a node it drains, in the order the checks run. */
enum pol_drain_pod {
	POL_DRAIN_SKIP_FINISHED,   /* Succeeded or Failed: nothing to evict */
	POL_DRAIN_SKIP_DAEMONSET,  /* its DaemonSet would put it back; it tolerates the cordon */
	POL_DRAIN_SKIP_MIRROR,     /* a static pod: only the kubelet removes it */
	POL_DRAIN_SKIP_SELF,       /* nodegate's own pods: never */
	POL_DRAIN_SKIP_UNSELECTED, /* not matched by podSelector or podEvictionFilters */
	POL_DRAIN_BLOCK_NO_CONTROLLER, /* no controller and not force: it would not come back */
	POL_DRAIN_BLOCK_EMPTYDIR,      /* emptyDir data and not deleteEmptyDir: it would be lost */
	POL_DRAIN_EVICT,
};

/** "finished", "daemonset", …, "evict": for logs. */
const char *pol_drain_pod_str(enum pol_drain_pod c);

/* What chooses the pods: spec.drain and who nodegate is. */
struct pol_drain_rules {
	const struct kube_selector *pod_selector; /* spec.drain.podSelector; NULL: every pod */
	struct ng_regex *const *filters;          /* podEvictionFilters, compiled; ORed */
	size_t nfilters;                          /* 0: every resource */
	bool force, delete_empty_dir;
	uint32_t self_ns;                          /* nodegate's namespace (id); NONE: none */
	const struct kube_selector *self_selector; /* its pods there; NULL: none */
};

/**
 * How a drain under @r treats pod @p of snapshot @pool's ids. A filter that cannot decide (the
 * match limit) counts as a match: evicting a pod the filter meant is safer than a drain that
 * never ends, and the webhook refused such patterns already.
 */
enum pol_drain_pod pol_drain_classify(const struct ng_intern *pool, const struct kube_pod *p,
				      const struct pol_drain_rules *r);

/**
 * @sel (ids of @from) as a selector over records of @to, adding nothing to @to: keys and values
 * @to does not hold become NG_INTERN_NONE, which no label carries (so `a=x` with an unknown x
 * matches nothing and `a!=x` everything that lacks it or has another value). Arrays in @arena;
 * *@ret is written only on success. NG_ENOMEM with @reterr.
 */
NG_NODISCARD ng_status pol_selector_to_pool(const struct kube_selector *sel,
					    const struct ng_intern *from,
					    const struct ng_intern *to, struct ng_arena *arena,
					    struct kube_selector *ret, struct ng_err *reterr);

/**
 * Parses the label selector string @text (kubectl -l syntax) for matching against records of
 * @pool without adding to it: keys and values @pool does not hold become NG_INTERN_NONE, which
 * no label carries, so `a=x` with an unknown x matches nothing and `a!=x` everything that
 * lacks it or has another value — what the string means. Arrays in @arena. NG_EPARSE/NG_ELIMIT
 * with @reterr for a string that does not parse, NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_selector_for_pool(const char *text, const struct ng_intern *pool,
					     struct ng_arena *arena, struct kube_selector *ret,
					     struct ng_err *reterr);

/**
 * The wait before attempt @attempts + 1 after @attempts failed ones (>= 1):
 * min(2^(attempts-1) * base, max) plus @jitter_draw (the caller's random draw in [0, jitter)).
 */
int64_t pol_drain_backoff_ms(int64_t attempts, int64_t base_ms, int64_t max_ms,
			     int64_t jitter_draw_ms);

/** Whether @p is a running Job pod matching @sel (NodeGateConfig protectedJobPods). */
bool pol_drain_protected_job(const struct ng_intern *pool, const struct kube_pod *p,
			     const struct kube_selector *sel);

/** Whether @p is still running or waiting to (not Succeeded or Failed). */
bool pol_pod_active(const struct kube_pod *p);

/** Pods named in a waiting message before "and N more". */
#define POL_DRAIN_MSG_PODS 8

/**
 * waitForPodCompletion's pods: those on @nodes (@nn, of @s) still active and matched by @sel
 * (NULL: every pod). Their number; when there are any, @msg (@cap) says "waiting for N pod(s)
 * to complete: ns/a, ns/b" naming the first POL_DRAIN_MSG_PODS, then "and K more".
 */
size_t pol_drain_waiting(const struct kube_snapshot *s, const struct kube_node *const *nodes,
			 size_t nn, const struct kube_selector *sel, char *msg, size_t cap);

#endif
