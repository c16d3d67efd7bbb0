/* The drainer's survey of the pods on the nodes it drains (policy/drain.h): which stop an
 * attempt, which it asks to go, and what holds each one that has not gone. */
#include "policy/drain.h"

#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "kube/snapshot.h"
#include "policy/policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A pod the drain evicts, with its batch order, before the batch in progress is known. */
struct candidate {
	const struct kube_pod *p;
	int32_t order;
};

/* The candidates found so far (@arena-grown). */
struct candidates {
	struct candidate *v;
	size_t n, cap;
};

static ng_status add_candidate(struct candidates *cs, struct ng_arena *arena,
			       const struct kube_pod *p, int32_t order)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 64;
		struct candidate *more = ng_arena_alloc(arena, cap * sizeof(*more));
		if (!more)
			return NG_ENOMEM;
		if (cs->n)
			memcpy(more, cs->v, cs->n * sizeof(*more));
		cs->v = more;
		cs->cap = cap;
	}
	cs->v[cs->n++] = (struct candidate){p, order};
	return NG_OK;
}

/* The PersistentVolumes of skipped pod @p's claims into sv->kept_volumes. */
static ng_status keep_volumes(const struct kube_snapshot *s, const struct kube_pod *p,
			      struct ng_arena *arena, struct pol_drain_survey *sv)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (uint16_t i = 0; i < p->nclaims; i++) {
		const struct kube_pvc *pvc = kube_snapshot_find_pvc(s, p->ns, p->claims[i]);
		if (!pvc || pvc->volume == NG_INTERN_NONE)
			continue;
		if (sv->nkept == sv->capkept) {
			size_t cap = sv->capkept ? 2 * sv->capkept : 16;
			const char **more = ng_arena_alloc(arena, cap * sizeof(*more));
			if (!more)
				return NG_ENOMEM;
			if (sv->nkept)
				memcpy(more, sv->kept_volumes, sv->nkept * sizeof(*more));
			sv->kept_volumes = more;
			sv->capkept = cap;
		}
		sv->kept_volumes[sv->nkept++] = ng_intern_str(pool, pvc->volume, NULL);
	}
	return NG_OK;
}

/* One pod's place in the survey @sv: those the drain evicts go to @cs. */
static ng_status survey_pod(const struct kube_snapshot *s, const struct pol_drain_context *cx,
			    const struct kube_pod *p, struct ng_arena *arena,
			    struct pol_drain_survey *sv, struct candidates *cs)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	int32_t order = 0;
	enum pol_drain_pod c = pol_drain_classify_ordered(pool, p, cx->rules, &order, NULL, 0);
	switch (c) {
	case POL_DRAIN_SKIP_RULE:
		sv->nskipped++;
		return keep_volumes(s, p, arena, sv);
	case POL_DRAIN_WAIT_COMPLETED:
		list_pod(pool, sv->waiting, sizeof(sv->waiting), sv->nwaiting++, p, NULL);
		return NG_OK;
	case POL_DRAIN_UNDECIDED:
		list_pod(pool, sv->undecided, sizeof(sv->undecided), sv->nundecided++, p, NULL);
		return NG_OK;
	case POL_DRAIN_BLOCK_NO_CONTROLLER:
	case POL_DRAIN_BLOCK_EMPTYDIR:
		/* Nothing is evicted with strategy None: nothing can be lost. */
		if (cx->evicts)
			list_pod(pool, sv->blocked, sizeof(sv->blocked), sv->nblocked++, p,
				 c == POL_DRAIN_BLOCK_NO_CONTROLLER
				     ? " has no controller (set force)"
				     : " uses emptyDir (set deleteEmptyDir)");
		return NG_OK;
	case POL_DRAIN_EVICT:
		break;
	default:
		return NG_OK;
	}
	if (pol_drain_protected_job(pool, p, cx->protected_jobs))
		list_pod(pool, sv->held, sizeof(sv->held), sv->nheld++, p, NULL);
	return add_candidate(cs, arena, p, order);
}

static int cmp_order(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* The batch in progress out of @cs: the pods of the lowest order are chosen, each named with
 * what holds it; the later ones counted, with their distinct orders. */
static ng_status choose_batch(const struct kube_snapshot *s, const struct pol_drain_context *cx,
			      const struct candidates *cs, struct ng_arena *arena,
			      struct pol_drain_survey *sv)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	if (!cs->n)
		return NG_OK;
	int32_t *orders = ng_arena_alloc(arena, cs->n * sizeof(*orders));
	sv->chosen = ng_arena_alloc(arena, cs->n * sizeof(*sv->chosen));
	if (!orders || !sv->chosen)
		return NG_ENOMEM;
	sv->cap = cs->n;
	for (size_t i = 0; i < cs->n; i++)
		orders[i] = cs->v[i].order;
	qsort(orders, cs->n, sizeof(*orders), cmp_order);
	sv->batch_order = orders[0];
	for (size_t i = 1; i < cs->n; i++)
		if (orders[i] != orders[i - 1])
			sv->nbatches_after++;
	sv->ordered = orders[0] != 0 || orders[cs->n - 1] != 0;
	for (size_t i = 0; i < cs->n; i++) {
		const struct kube_pod *p = cs->v[i].p;
		if (cs->v[i].order != sv->batch_order) {
			sv->nlater++;
			continue;
		}
		char why[300];
		pol_drain_pod_blocker(s, cx->nd, p, cx->now_wall_ms, why, sizeof(why));
		list_pod(pool, sv->left, sizeof(sv->left), sv->nchosen, p, why);
		sv->chosen[sv->nchosen++] = p;
	}
	return NG_OK;
}

ng_status pol_drain_survey(const struct kube_snapshot *s, const struct kube_node *const *nodes,
			   size_t nn, const struct pol_drain_context *cx, struct ng_arena *arena,
			   struct pol_drain_survey *ret)
{
	memset(ret, 0, sizeof(*ret));
	size_t np;
	const struct kube_pod *pods = kube_snapshot_pods(s, &np);
	struct candidates cs = {0};
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			ng_status st = survey_pod(s, cx, &pods[idx[j]], arena, ret, &cs);
			if (st != NG_OK)
				return st;
		}
	}
	ng_status st = choose_batch(s, cx, &cs, arena, ret);
	if (st != NG_OK)
		return st;
	list_more(ret->blocked, sizeof(ret->blocked), ret->nblocked);
	list_more(ret->held, sizeof(ret->held), ret->nheld);
	list_more(ret->left, sizeof(ret->left), ret->nchosen);
	list_more(ret->waiting, sizeof(ret->waiting), ret->nwaiting);
	list_more(ret->undecided, sizeof(ret->undecided), ret->nundecided);
	if (ret->nblocked)
		ng_fmt(ret->stop, sizeof(ret->stop), "cannot drain: %s", ret->blocked);
	else if (ret->nheld)
		ng_fmt(ret->stop, sizeof(ret->stop), "held back by running Job pod %s", ret->held);
	return NG_OK;
}

/* "1 pod" or "3 pods". */
static const char *pods_word(size_t n)
{
	return n == 1 ? "pod" : "pods";
}

/* Appends to the message @buf (@cap), cut at @cap. */
static void append(char *buf, size_t cap, const char *fmt, ...) NG_PRINTF(3, 4);
static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	if (len + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

void pol_drain_progress(const struct pol_drain_survey *sv, char *buf, size_t cap)
{
	*buf = '\0';
	if (!sv->nbatches_after && !sv->ordered && !sv->nwaiting && !sv->nskipped &&
	    !sv->nundecided)
		return;
	const char *sep = "";
	if (sv->nchosen) {
		append(buf, cap, "batch order %d: %zu %s left", (int)sv->batch_order, sv->nchosen,
		       pods_word(sv->nchosen));
		if (sv->nbatches_after)
			append(buf, cap, " (%zu more %s after it)", sv->nbatches_after,
			       sv->nbatches_after == 1 ? "batch" : "batches");
		append(buf, cap, ": %s", sv->left);
		sep = "; ";
	}
	if (sv->nwaiting) {
		append(buf, cap, "%s%zu %s waited for to complete (wait-completed): %s", sep,
		       sv->nwaiting, pods_word(sv->nwaiting), sv->waiting);
		sep = "; ";
	}
	if (sv->nundecided) {
		append(buf, cap,
		       "%s%zu %s not asked yet: their namespace's labels could not be read for the "
		       "drain rules: %s",
		       sep, sv->nundecided, pods_word(sv->nundecided), sv->undecided);
		sep = "; ";
	}
	if (sv->nskipped)
		append(buf, cap, "%s%zu %s skipped", sep, sv->nskipped, pods_word(sv->nskipped));
}
