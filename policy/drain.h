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
	POL_DRAIN_SKIP_RULE,       /* a drain rule or its cluster.x-k8s.io/drain label: Skip */
	POL_DRAIN_WAIT_COMPLETED,  /* a rule or the label: WaitCompleted, waited for, never asked */
	POL_DRAIN_UNDECIDED, /* a rule's namespaceSelector needs labels that could not be read */
	POL_DRAIN_BLOCK_NO_CONTROLLER, /* no controller and not force: it would not come back */
	POL_DRAIN_BLOCK_EMPTYDIR,      /* emptyDir data and not deleteEmptyDir: it would be lost */
	POL_DRAIN_EVICT,
};

/** "finished", "daemonset", …, "evict": for logs. */
const char *pol_drain_pod_str(enum pol_drain_pod c);

/**
 * The labels of namespace @ns (an id of the snapshot's pool) into *@ret and *@ret_n, ids of
 * the same pool (keys and values it lacks as NG_INTERN_NONE); false when they cannot be known
 * now. Called only for a rule with a namespaceSelector, at most once per namespace and step
 * when the callee caches.
 */
typedef bool (*pol_ns_labels_fn)(void *ctx, uint32_t ns, const struct kube_label **ret,
				 uint16_t *ret_n);

/* What chooses the pods: spec.drain and who nodegate is. */
struct pol_drain_rules {
	const struct kube_selector *pod_selector; /* spec.drain.podSelector; NULL: every pod */
	struct ng_regex *const *filters;          /* podEvictionFilters, compiled; ORed */
	size_t nfilters;                          /* 0: every resource */
	bool force, delete_empty_dir;
	uint32_t self_ns;                          /* nodegate's namespace (id); NONE: none */
	const struct kube_selector *self_selector; /* its pods there; NULL: none */
	/* spec.drain.rules of the request, then NodeGateConfig's: the first that matches a pod
	 * decides, after the pod's cluster.x-k8s.io/drain label. Ids of the snapshot's pool. */
	const struct kube_drain_rule *req_rules, *cfg_rules;
	size_t nreq_rules, ncfg_rules;
	pol_ns_labels_fn ns_labels; /* NULL: a rule with a namespaceSelector cannot decide */
	void *ns_ctx;
};

/**
 * How a drain under @r treats pod @p of snapshot @pool's ids. A filter that cannot decide (the
 * match limit) counts as a match: evicting a pod the filter meant is safer than a drain that
 * never ends, and the webhook refused such patterns already.
 */
enum pol_drain_pod pol_drain_classify(const struct ng_intern *pool, const struct kube_pod *p,
				      const struct pol_drain_rules *r);

/**
 * pol_drain_classify() and, for a pod the drain evicts (POL_DRAIN_EVICT or a BLOCK), its batch
 * order into *@ret_order (0 when no rule orders it). @ret_source, when not NULL, gets what
 * decided the pod's behavior: "label cluster.x-k8s.io/drain", "request rule 2", "NodeGateConfig
 * rule 0" (static or @buf, @cap), or "" when no rule matched.
 */
enum pol_drain_pod pol_drain_classify_ordered(const struct ng_intern *pool,
					      const struct kube_pod *p,
					      const struct pol_drain_rules *r, int32_t *ret_order,
					      char *ret_source, size_t cap);

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
 * The rules of @dr (a request's spec.drain, ids of @pool) into @rules: force, deleteEmptyDir,
 * podSelector (parsed into @sel, caller storage that must outlive @rules) and
 * podEvictionFilters (compiled: give them back with pol_drain_rules_put()). nodegate's own pods
 * (self_ns, self_selector) are left to the caller. NG_EPARSE or NG_ELIMIT with @reterr naming
 * the field; NG_ENOMEM. On failure nothing is held.
 */
NG_NODISCARD ng_status pol_drain_rules_from(const struct ng_intern *pool,
					    const struct kube_nd_drain *dr, struct ng_arena *arena,
					    struct pol_drain_rules *rules,
					    struct kube_selector *sel, struct ng_err *reterr);

/** Gives back the filters pol_drain_rules_from() compiled. */
void pol_drain_rules_put(struct pol_drain_rules *rules);

/**
 * The wait before attempt @attempts + 1 after @attempts failed ones (>= 1):
 * min(2^(attempts-1) * base, max) plus @jitter_draw (the caller's random draw in [0, jitter)).
 */
int64_t pol_drain_backoff_ms(int64_t attempts, int64_t base_ms, int64_t max_ms,
			     int64_t jitter_draw_ms);

/**
 * When request @x's drain deadline passes, in wall ms: status.grantedAt plus
 * spec.drain.deadlineSeconds, or plus NodeGateConfig @ngc (NULL: none) drain.deadlineSeconds when
 * the request sets none. 0 when it has no deadline: no drain, 0 set on the request, no default,
 * or not granted yet.
 */
int64_t pol_drain_deadline_ms(const struct kube_nd_detail *x, const struct kube_ngc *ngc);

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

/* What the survey of an attempt needs besides the snapshot. */
struct pol_drain_context {
	const struct pol_drain_rules *rules;
	bool evicts; /* the strategy asks pods to go (not None): blocking pods stop the attempt */
	const struct kube_selector *protected_jobs; /* NodeGateConfig protectedJobPods; NULL */
	const struct kube_nd *nd;                   /* the request (its type may override
						       do-not-disrupt); NULL */
	int64_t now_wall_ms;
};

/* An attempt's pods, as the drainer sees them before it asks anyone to go. */
struct pol_drain_survey {
	size_t nblocked, nheld;
	char blocked[700]; /* "ns/a has no controller (set force), ..." */
	char held[400];    /* running Job pods NodeGateConfig protectedJobPods holds */
	/* Why the attempt stops before anything is asked ("cannot drain: ...", "held back by
	 * running Job pod ..."); "" when it goes on. */
	char stop[1200];
	/* The pods the drain chooses now (POL_DRAIN_EVICT of the lowest order still on the nodes:
	 * the batch in progress), in @arena, and their list for a message: "ns/a
	 * (PodDisruptionBudget ns/x allows 0 disruptions: ...), ns/b". */
	const struct kube_pod **chosen;
	size_t nchosen, cap;
	char left[900];
	/* The batches: the order of the one in progress, the pods of later ones (not asked yet)
	 * and how many orders they make. */
	int32_t batch_order;
	size_t nlater, nbatches_after;
	/* WaitCompleted pods still active (never asked; the drain waits for them), Skip pods (they
	 * stay; the drain is done without them), and pods whose rules could not be decided (their
	 * namespace's labels unknown: nothing is asked while there are any). */
	size_t nwaiting, nskipped, nundecided;
	char waiting[500];
	char undecided[300];
	/* The PersistentVolumes (names, in @arena) of the Skip pods' claims: they stay attached
	 * with their pods, so the wait for volumes to detach leaves them out. */
	const char **kept_volumes;
	size_t nkept, capkept;
	bool ordered; /* some chosen pod has an order other than 0 */
};

/**
 * Where the drain of @sv stands, for a status message, into @buf (@cap): "batch order 10: 3
 * pod(s) left (2 more batches after it): ns/a, ns/b; 1 pod waited for to complete
 * (wait-completed): ns/w; 2 pods skipped". "" when the drain is a plain one: a single batch of
 * order 0, nothing waited for, skipped or undecided (the caller says "waiting for N pod(s)").
 */
void pol_drain_progress(const struct pol_drain_survey *sv, char *buf, size_t cap);

/**
 * The request's rules into @rules (already filled by pol_drain_rules_from()): NodeGateConfig
 * @ngc's (NULL or invalid: none) after the request's own, and the namespace labels' source.
 */
void pol_drain_rules_config(struct pol_drain_rules *rules, const struct kube_ngc *ngc,
			    pol_ns_labels_fn ns_labels, void *ns_ctx);

/**
 * The pods on @nodes (@nn, of @s) under @cx: those that stop the attempt (kubectl's blocking
 * rule unless nothing is evicted, then protected Job pods) and those it chooses, each named
 * with what holds it (pol_drain_pod_blocker()). NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_drain_survey(const struct kube_snapshot *s,
					const struct kube_node *const *nodes, size_t nn,
					const struct pol_drain_context *cx, struct ng_arena *arena,
					struct pol_drain_survey *ret);

/**
 * What holds chosen pod @p of @s that has not gone, as " (why)" into @buf (@cap), "" when
 * nothing is known to: terminating with a finalizer (named), do-not-disrupt on the pod or its
 * node (unless @nd's type overrides it), or a PodDisruptionBudget of its namespace that
 * selects it, counts it healthy and allows no disruption (named, with its counts).
 */
void pol_drain_pod_blocker(const struct kube_snapshot *s, const struct kube_nd *nd,
			   const struct kube_pod *p, int64_t now_wall_ms, char *buf, size_t cap);

#endif
