/* The maintenance windows that bear on a plan, as open spans on its simulated clock
 * (policy/plan.h), for pictures of it. */
#include "policy/plan.h"

#include "common/arena.h"
#include "common/cron.h"
#include "common/intern.h"
#include "budgets/selector.h"
#include "kube/snapshot.h"

#include <stdlib.h>
#include <string.h>

/* The interval a plan's windows are drawn over. */
struct span_range {
	int64_t from_ms, to_ms;
};

/* Appends @sp to @v (sorted by start, merging what overlaps or touches the last span); false
 * when @v is full and @sp is a span of its own. */
static bool add_span(struct pol_plan_span *v, size_t *n, struct pol_plan_span sp)
{
	if (*n && sp.from_wall_ms <= v[*n - 1].to_wall_ms) {
		if (sp.to_wall_ms > v[*n - 1].to_wall_ms)
			v[*n - 1].to_wall_ms = sp.to_wall_ms;
		return true;
	}
	if (*n == POL_PLAN_MAX_SPANS)
		return false;
	v[(*n)++] = sp;
	return true;
}

/* Window @w's open spans within @r into @v (unsorted across windows). At most
 * POL_PLAN_MAX_SPANS + 1 steps: each step moves past a span or to the next opening. True when
 * @v filled up before @r's end. */
static bool window_spans(const struct kube_window *w, struct span_range r, struct pol_plan_span *v,
			 size_t *n)
{
	int64_t t = r.from_ms;
	for (size_t step = 0; t < r.to_ms && step <= POL_PLAN_MAX_SPANS; step++) {
		struct ng_window_at at;
		ng_window_at(&w->cron, w->tz, w->duration_ms, t, &at);
		int64_t next;
		if (at.open) {
			next = at.closes_ms < 0 || at.closes_ms > r.to_ms ? r.to_ms : at.closes_ms;
			if (next > t && !add_span(v, n, (struct pol_plan_span){t, next}))
				return true;
		} else if (at.next_open_ms < 0) {
			return false;
		} else {
			next = at.next_open_ms;
		}
		if (next <= t) /* no progress: a schedule the window code cannot follow further */
			return false;
		t = next;
	}
	return t < r.to_ms;
}

static int cmp_span(const void *a, const void *b)
{
	const struct pol_plan_span *x = a, *y = b;
	return x->from_wall_ms < y->from_wall_ms ? -1 : x->from_wall_ms > y->from_wall_ms;
}

/* Budget @b's windows as merged spans within @r into @ret (arena memory). */
static ng_status budget_spans(const struct kube_budget_common *b, struct span_range r,
			      struct ng_arena *arena, struct pol_plan_windows *ret)
{
	size_t cap = (size_t)b->nwindows * POL_PLAN_MAX_SPANS;
	struct pol_plan_span *all = malloc(cap * sizeof(*all));
	struct pol_plan_span *v = ng_arena_alloc(arena, POL_PLAN_MAX_SPANS * sizeof(*v));
	if (!all || !v) {
		free(all);
		return NG_ENOMEM;
	}
	size_t nall = 0, n = 0;
	bool more = false;
	for (size_t i = 0; i < b->nwindows; i++) {
		size_t ni = 0;
		more |= window_spans(&b->windows[i], r, all + nall, &ni);
		nall += ni;
	}
	qsort(all, nall, sizeof(*all), cmp_span);
	for (size_t i = 0; i < nall; i++)
		if (!add_span(v, &n, all[i])) {
			more = true;
			break;
		}
	free(all);
	ret->spans = v;
	ret->nspans = n;
	ret->more_spans = more;
	ret->outside_use_default = b->outside_use_default;
	return NG_OK;
}

/* Whether a wave of @p names budget (@kind, @b) as having held requests back. */
static bool named_by_plan(const struct pol_plan *p, enum kube_resource kind,
			  const struct kube_budget_common *b)
{
	for (size_t i = 0; i < p->nwaves; i++)
		for (size_t k = 0; k < p->waves[i].nlimits; k++) {
			const struct pol_plan_limit *l = &p->waves[i].limits[k];
			if (l->budget && l->kind == kind && l->ns == b->ns && l->name == b->name)
				return true;
		}
	return false;
}

/* Whether @ndb selects a node of a wave of @p or a node @p never grants. */
static bool selects_plan_node(const struct kube_snapshot *s, const struct kube_ndb *ndb,
			      const struct pol_plan *p)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < p->nwaves + p->nnever; i++) {
		size_t nn = i < p->nwaves ? p->waves[i].nnodes : 1;
		for (size_t k = 0; k < nn; k++) {
			uint32_t id =
			    i < p->nwaves ? p->waves[i].nodes[k] : p->never[i - p->nwaves].node;
			const struct kube_node *node =
			    id == NG_INTERN_NONE ? NULL : kube_snapshot_find_node(s, id);
			if (node && bud_selector_matches(&ndb->node_selector, node->labels,
							 node->nlabels, pool))
				return true;
		}
	}
	return false;
}

ng_status pol_plan_windows(const struct kube_snapshot *s, const struct pol_plan_input *in,
			   const struct pol_plan *p, struct ng_arena *arena,
			   struct pol_plan_windows **ret_v, size_t *ret_n, size_t *ret_more)
{
	size_t nndb, nadb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nndb);
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nadb);
	struct pol_plan_windows *v = ng_arena_alloc(arena, POL_PLAN_MAX_WINDOWED * sizeof(*v));
	if (!v)
		return NG_ENOMEM;
	struct span_range r = {in->start_wall_ms, p->end_wall_ms};
	if (r.to_ms < r.from_ms + in->drain_ms)
		r.to_ms = r.from_ms + in->drain_ms;
	size_t n = 0, more = 0;
	for (size_t i = 0; i < nndb + nadb; i++) {
		bool ndb = i < nndb;
		const struct kube_budget_common *b = ndb ? &ndbs[i].b : &adbs[i - nndb].b;
		enum kube_resource kind = ndb ? KUBE_RES_NDBS : KUBE_RES_ADBS;
		if (!b->nwindows || b->invalid ||
		    !(named_by_plan(p, kind, b) || (ndb && selects_plan_node(s, &ndbs[i], p))))
			continue;
		if (n == POL_PLAN_MAX_WINDOWED) {
			more++;
			continue;
		}
		v[n] = (struct pol_plan_windows){.kind = kind, .ns = b->ns, .name = b->name};
		ng_status st = budget_spans(b, r, arena, &v[n]);
		if (st != NG_OK)
			return st;
		n++;
	}
	*ret_v = v;
	*ret_n = n;
	*ret_more = more;
	return NG_OK;
}
