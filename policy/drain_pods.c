/* The drainer's survey of the pods on the nodes it drains (policy/drain.h): which stop an
 * attempt, which it asks to go, and what holds each one that has not gone. */
#include "policy/drain.h"

#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "kube/snapshot.h"
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

/* Appends "ns/name" and @why (may be NULL) of @p to @buf (@cap) as the @k-th of a list. */
static void list_pod(const struct ng_intern *pool, char *buf, size_t cap, size_t k,
		     const struct kube_pod *p, const char *why)
{
	size_t len = strlen(buf);
	const char *ns = p->ns == NG_INTERN_NONE ? NULL : ng_intern_str(pool, p->ns, NULL);
	if (k < POL_DRAIN_MSG_PODS && len < cap)
		(void)snprintf(buf + len, cap - len, "%s%s/%s%s", k ? ", " : "", ns ? ns : "",
			       p->name, why ? why : "");
}

/* Ends a list of @k pods with "and N more" past POL_DRAIN_MSG_PODS. */
static void list_more(char *buf, size_t cap, size_t k)
{
	size_t len = strlen(buf);
	if (k > POL_DRAIN_MSG_PODS && len < cap)
		(void)snprintf(buf + len, cap - len, " and %zu more", k - POL_DRAIN_MSG_PODS);
}

/* Whether a PodDisruptionBudget counts @p among its healthy pods: the Eviction API checks
 * budgets only for those. */
static bool pdb_guards(const struct kube_pod *p)
{
	return (p->flags & KUBE_POD_READY) && !(p->flags & KUBE_POD_TERMINATING) &&
	       p->phase == KUBE_POD_RUNNING;
}

/* The first PodDisruptionBudget of @p's namespace that selects it and allows no disruption. */
static const struct kube_pdb *pdb_blocking(const struct kube_snapshot *s, const struct kube_pod *p)
{
	if (!pdb_guards(p))
		return NULL;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t npdb, nb;
	const struct kube_pdb *pdbs = kube_snapshot_pdbs(s, &npdb);
	const uint32_t *in_ns = kube_snapshot_pdbs_in_ns(s, p->ns, &nb);
	for (size_t j = 0; in_ns && j < nb; j++) {
		const struct kube_pdb *b = &pdbs[in_ns[j]];
		if (b->disruptions_allowed <= 0 &&
		    bud_selector_matches(&b->selector, p->labels, p->nlabels, pool))
			return b;
	}
	return NULL;
}

void pol_drain_pod_blocker(const struct kube_snapshot *s, const struct kube_nd *nd,
			   const struct kube_pod *p, int64_t now_wall_ms, char *buf, size_t cap)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	*buf = '\0';
	if (p->flags & KUBE_POD_TERMINATING) {
		if (p->finalizer != NG_INTERN_NONE)
			ng_fmt(buf, cap, " (terminating, held by finalizer %s%s)",
			       ng_intern_str(pool, p->finalizer, NULL),
			       (p->flags & KUBE_POD_MORE_FINALIZERS) ? " and others" : "");
		return;
	}
	const struct kube_node *node = kube_snapshot_find_node(s, p->node);
	bool dnd = pol_pod_do_not_disrupt(p, now_wall_ms) ||
		   (node && pol_node_do_not_disrupt(node, now_wall_ms));
	if (dnd && !(nd && pol_dnd_overridden(s, nd->type))) {
		ng_fmt(buf, cap, " (%s has " KUBE_DO_NOT_DISRUPT ")",
		       pol_pod_do_not_disrupt(p, now_wall_ms) ? "the pod" : "its node");
		return;
	}
	const struct kube_pdb *b = pdb_blocking(s, p);
	if (b)
		ng_fmt(buf, cap,
		       " (PodDisruptionBudget %s/%s allows 0 disruptions: %lld healthy, %lld "
		       "needed)",
		       ng_intern_str(pool, b->ns, NULL), ng_intern_str(pool, b->name, NULL),
		       (long long)b->current_healthy, (long long)b->desired_healthy);
}

/* One pod's place in the survey @sv. */
static ng_status survey_pod(const struct kube_snapshot *s, const struct pol_drain_context *cx,
			    const struct kube_pod *p, struct ng_arena *arena,
			    struct pol_drain_survey *sv)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	enum pol_drain_pod c = pol_drain_classify(pool, p, cx->rules);
	/* Nothing is evicted with strategy None: nothing can be lost. */
	if (c == POL_DRAIN_BLOCK_NO_CONTROLLER || c == POL_DRAIN_BLOCK_EMPTYDIR) {
		if (cx->evicts)
			list_pod(pool, sv->blocked, sizeof(sv->blocked), sv->nblocked++, p,
				 c == POL_DRAIN_BLOCK_NO_CONTROLLER
				     ? " has no controller (set force)"
				     : " uses emptyDir (set deleteEmptyDir)");
		return NG_OK;
	}
	if (c != POL_DRAIN_EVICT)
		return NG_OK;
	if (pol_drain_protected_job(pool, p, cx->protected_jobs))
		list_pod(pool, sv->held, sizeof(sv->held), sv->nheld++, p, NULL);
	char why[300];
	pol_drain_pod_blocker(s, cx->nd, p, cx->now_wall_ms, why, sizeof(why));
	list_pod(pool, sv->left, sizeof(sv->left), sv->nchosen, p, why);
	if (sv->nchosen == sv->cap) {
		size_t cap = sv->cap ? 2 * sv->cap : 64;
		const struct kube_pod **more = ng_arena_alloc(arena, cap * sizeof(*more));
		if (!more)
			return NG_ENOMEM;
		if (sv->nchosen)
			memcpy(more, sv->chosen, sv->nchosen * sizeof(*more));
		sv->chosen = more;
		sv->cap = cap;
	}
	sv->chosen[sv->nchosen++] = p;
	return NG_OK;
}

ng_status pol_drain_survey(const struct kube_snapshot *s, const struct kube_node *const *nodes,
			   size_t nn, const struct pol_drain_context *cx, struct ng_arena *arena,
			   struct pol_drain_survey *ret)
{
	memset(ret, 0, sizeof(*ret));
	size_t np;
	const struct kube_pod *pods = kube_snapshot_pods(s, &np);
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			ng_status st = survey_pod(s, cx, &pods[idx[j]], arena, ret);
			if (st != NG_OK)
				return st;
		}
	}
	list_more(ret->blocked, sizeof(ret->blocked), ret->nblocked);
	list_more(ret->held, sizeof(ret->held), ret->nheld);
	list_more(ret->left, sizeof(ret->left), ret->nchosen);
	if (ret->nblocked)
		ng_fmt(ret->stop, sizeof(ret->stop), "cannot drain: %s", ret->blocked);
	else if (ret->nheld)
		ng_fmt(ret->stop, sizeof(ret->stop), "held back by running Job pod %s", ret->held);
	return NG_OK;
}
