/* A budget at one instant (pol_budget_now()): the limit its windows put in force, how many of
 * its nodes are disrupted, and which Granted requests hold them. */
#include "policy/disruption_internal.h"

/* qsort has no context argument: the pool of the sort under way on this thread. */
static _Thread_local const struct ng_intern *sort_pool;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(ng_intern_str(sort_pool, *(const uint32_t *)a, NULL),
		      ng_intern_str(sort_pool, *(const uint32_t *)b, NULL));
}

/* Sorts @ids (intern ids of @pool) by their strings. */
void pd_sort_by_name(const struct ng_intern *pool, uint32_t *ids, size_t n)
{
	if (n < 2)
		return;
	sort_pool = pool;
	qsort(ids, n, sizeof(*ids), cmp_name);
	sort_pool = NULL;
}

/* Whether held node @hn is in scope @sc: an NDB's scope is in node order (its idx), an ADB's
 * sorted by name id. */
static bool scope_has_held(const struct bscope *sc, const struct held_node *hn)
{
	if (!sc->idx)
		return in_sorted(sc->names, sc->n, hn->name);
	return hn->at != UINT32_MAX && pd_scope_pos(sc, hn->at) != SIZE_MAX;
}

bool pd_scope_has(const struct pol_ledger *l, const struct bscope *sc, uint32_t name)
{
	const struct kube_node *k = kube_snapshot_find_node(l->s, name);
	return scope_has_held(
	    sc, &(struct held_node){.name = name, .at = k ? (uint32_t)(k - l->nodes) : UINT32_MAX});
}

/* The distinct requests holding nodes of scope @sc (an NDB's or an ADB's, computed), sorted
 * by intern id, into @ret (@arena memory). Found from the held nodes when they are fewer than
 * the scope, else from the scope's nodes, so it costs the smaller of the two. NG_ENOMEM. */
ng_status pd_scope_holders(struct pol_ledger *l, const struct bscope *sc, struct ng_arena *arena,
			   uint32_t **ret, size_t *ret_n)
{
	size_t cap = (l->nheld < sc->n ? l->nheld : sc->n) + l->nco;
	uint32_t *h = ng_arena_alloc(arena, (cap ? cap : 1) * sizeof(*h));
	if (!h)
		return NG_ENOMEM;
	size_t n = 0;
	if (l->nheld < sc->n) {
		for (size_t i = 0; i < l->nheld; i++)
			if (scope_has_held(sc, &l->held_nodes[i]))
				h[n++] = pol_ledger_holder(l, l->held_nodes[i].name);
	} else {
		for (size_t k = 0; k < sc->n; k++) {
			if (sc->idx && !l->held[sc->idx[k]])
				continue;
			uint32_t who = pol_ledger_holder(l, sc->names[k]);
			if (who != NG_INTERN_NONE)
				h[n++] = who;
		}
	}
	for (size_t i = 0; i < l->nco; i++)
		if (pd_scope_has(l, sc, l->co[i].node))
			h[n++] = l->co[i].nd;
	if (n > 1)
		qsort(h, n, sizeof(*h), cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || h[u - 1] != h[i])
			h[u++] = h[i];
	*ret = h;
	*ret_n = u;
	return NG_OK;
}

/* The budget's own limits from its spec, as the decision reads them. False when one does not
 * read (the budget is then invalid here too). */
static bool own_limits(const struct ng_intern *pool, const struct kube_ndb *b,
		       const struct kube_adb *a, struct bud_limits *ret)
{
	struct bud_limits lim = {0};
	bool ok = true;
	if (a) {
		lim.has_max = true;
		ok =
		    bud_int_or_percent_from(&a->max_disruptions, pool, "", &lim.max, NULL) == NG_OK;
	}
	if (b && b->max_disrupted.set) {
		lim.has_max = true;
		ok &= bud_int_or_percent_from(&b->max_disrupted, pool, "", &lim.max, NULL) == NG_OK;
	}
	if (b && b->min_undisrupted.set) {
		lim.has_min = true;
		ok &=
		    bud_int_or_percent_from(&b->min_undisrupted, pool, "", &lim.min, NULL) == NG_OK;
	}
	*ret = lim;
	return ok;
}

/* Where @c's windows stand at @now into @ret, and the limits they put in force into @lim:
 * an open window's own maximum replaces the budget's. False when that limit does not read. */
static bool windows_now(const struct ng_intern *pool, struct bscope *sc,
			const struct kube_budget_common *c, int64_t now, struct bud_limits *lim,
			struct pol_budget_now *ret)
{
	ret->window = -1;
	ret->closes_wall_ms = ret->next_opens_wall_ms = ret->edge_wall_ms = -1;
	if (!c->nwindows)
		return true;
	const struct win *w = pd_scope_windows(sc, c, now);
	ret->has_windows = true;
	ret->edge_wall_ms = w->edge_ms;
	ret->window_open = w->open;
	if (w->open) {
		ret->window = (int32_t)w->which;
		ret->closes_wall_ms = w->closes_ms;
	} else {
		ret->next_opens_wall_ms = w->next_ms;
	}
	if (w->deny) {
		*lim = (struct bud_limits){.has_max = true};
		return true;
	}
	if (ret->window_open && w->limit) {
		lim->has_max = true;
		return bud_int_or_percent_from(w->limit, pool, "", &lim->max, NULL) == NG_OK;
	}
	return true;
}

/* Whether an exclusion of @c is in force at @now (then nothing more is allowed), and the next
 * start or end of one folded into ret->edge_wall_ms. */
static void exclusions_now(const struct kube_budget_common *c, int64_t now,
			   struct pol_budget_now *ret)
{
	if (!c->nexclusions)
		return;
	ret->excluded = pol_excluded_at(c->exclusions, c->nexclusions, now, &ret->excluded_until,
					&ret->excluded_reason);
	if (ret->excluded)
		ret->allowed = 0;
	for (size_t i = 0; i < c->nexclusions; i++) {
		int64_t edge = c->exclusions[i].start_ms > now ? c->exclusions[i].start_ms
			       : c->exclusions[i].end_ms > now ? c->exclusions[i].end_ms
							       : -1;
		if (edge > now && (ret->edge_wall_ms < 0 || edge < ret->edge_wall_ms))
			ret->edge_wall_ms = edge;
	}
}

/* Pacing at @now: the next grant a minIntervalSeconds allows, and the soaking nodes (@b: the
 * NodeDisruptionBudget, NULL for an ADB), their count in in_use and their ends in edge_wall_ms.
 * Costs the scope only for a budget with soakSeconds. */
static ng_status pacing_now(struct pol_ledger *l, struct bscope *sc,
			    const struct kube_budget_common *c, const struct kube_ndb *b,
			    int64_t now, struct ng_arena *arena, struct pol_budget_now *ret)
{
	ret->next_grant_wall_ms = -1;
	int64_t last = c->last_grant_ms > sc->last_grant_ms ? c->last_grant_ms : sc->last_grant_ms;
	if (c->min_interval_ms)
		ret->last_grant_wall_ms = last > 0 ? last : 0;
	if (c->min_interval_ms && last > 0 && last + c->min_interval_ms > now) {
		ret->next_grant_wall_ms = last + c->min_interval_ms;
		ret->allowed = 0;
		if (ret->edge_wall_ms < 0 || ret->next_grant_wall_ms < ret->edge_wall_ms)
			ret->edge_wall_ms = ret->next_grant_wall_ms;
	}
	if (!c->soak_ms)
		return NG_OK;
	if (pd_scope_soak(l, sc, c, b, now) != NG_OK)
		return NG_ENOMEM;
	size_t n = 0;
	for (size_t j = 0; j < sc->n; j++)
		n += sc->soak[j];
	struct kube_soaking *v = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*v));
	uint32_t *names = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*names));
	if (!v || !names)
		return NG_ENOMEM;
	n = 0;
	for (size_t j = 0; j < sc->n; j++)
		if (sc->soak[j])
			names[n++] = sc->names[j];
	pd_sort_by_name(kube_snapshot_pool(l->s), names, n);
	for (size_t j = 0; j < n; j++)
		v[j] = (struct kube_soaking){
		    names[j],
		    pd_soak_until(l, c, kube_snapshot_find_node(l->s, names[j]), names[j])};
	ret->soaking = sc->soaking;
	ret->soaking_nodes = v;
	ret->nsoaking_nodes = n;
	ret->in_use += sc->soaking;
	if (sc->soak_next_ms > now &&
	    (ret->edge_wall_ms < 0 || sc->soak_next_ms < ret->edge_wall_ms))
		ret->edge_wall_ms = sc->soak_next_ms;
	return NG_OK;
}

ng_status pol_budget_now(const struct kube_snapshot *s, struct pol_ledger *ledger,
			 enum kube_resource kind, size_t index, int64_t now_wall_ms,
			 struct ng_arena *arena, struct pol_budget_now *ret)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool ndb = kind == KUBE_RES_NDBS;
	size_t nb;
	const struct kube_ndb *ndbs = ndb ? kube_snapshot_ndbs(s, &nb) : NULL;
	const struct kube_adb *adbs = ndb ? NULL : kube_snapshot_adbs(s, &nb);
	if ((ndb ? !ndbs : !adbs) || index >= nb)
		return NG_EINVAL;
	const struct kube_ndb *b = ndb ? &ndbs[index] : NULL;
	const struct kube_adb *a = ndb ? NULL : &adbs[index];
	const struct kube_budget_common *c = b ? &b->b : &a->b;
	const struct bscope *csc;
	if (ndb ? pd_ndb_scope(ledger, index, &csc) != NG_OK : pd_adb_index(ledger) != NG_OK)
		return NG_ENOMEM;
	struct bscope *sc = ndb ? &ledger->ndb[index] : &ledger->adb[index];
	struct pol_budget_now now = {
	    .watched = sc->n, .in_use = sc->disrupted, .limit_now = -1, .next_grant_wall_ms = -1};
	uint32_t *holders;
	if (pd_scope_holders(ledger, sc, arena, &holders, &now.nholders) != NG_OK)
		return NG_ENOMEM;
	pd_sort_by_name(pool, holders, now.nholders);
	now.holders = holders;
	struct bud_limits lim;
	now.invalid = c->invalid || !own_limits(pool, b, a, &lim);
	if (!now.invalid && !windows_now(pool, sc, c, now_wall_ms, &lim, &now))
		now.invalid = true;
	if (!now.invalid && (c->soak_ms || c->min_interval_ms) &&
	    pacing_now(ledger, sc, c, b, now_wall_ms, arena, &now) != NG_OK)
		return NG_ENOMEM;
	if (!now.invalid) {
		struct bud_check chk;
		bud_check_limits(&lim, (int64_t)now.watched, (int64_t)now.in_use, 0, &chk);
		now.allowed = now.next_grant_wall_ms > now_wall_ms ? 0 : chk.allowed;
		now.limit_now = chk.max;
		exclusions_now(c, now_wall_ms, &now);
	} else {
		now.window = -1;
		now.closes_wall_ms = now.next_opens_wall_ms = now.edge_wall_ms = -1;
	}
	*ret = now;
	return NG_OK;
}
