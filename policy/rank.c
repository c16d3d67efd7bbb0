/* The order in which pending requests are decided (pol_rank_pending). */
#include "policy/disruption_internal.h"

struct rank {
	const struct kube_nd *nd;
	const char *name;
	bool cp;
	bool in_progress; /* the requestor holds a Granted request */
	size_t requestor_pending;
};

static int cmp_rank(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->cp != y->cp)
		return x->cp ? -1 : 1;
	if (x->nd->priority != y->nd->priority)
		return x->nd->priority > y->nd->priority ? -1 : 1;
	if (x->in_progress != y->in_progress)
		return x->in_progress ? -1 : 1;
	if (x->requestor_pending != y->requestor_pending)
		return x->requestor_pending < y->requestor_pending ? -1 : 1;
	if (x->nd->created_ms != y->nd->created_ms)
		return x->nd->created_ms < y->nd->created_ms ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The control-plane nodes (a handful), found on first use: only a request selecting its nodes
 * needs them, and finding them reads every node (100,000 of them, 1-5 ms, every round when it
 * was done up front). */
struct cp_nodes {
	const struct kube_node **v;
	size_t n;
	bool ready;
};

static ng_status find_cp_nodes(const struct kube_snapshot *s, const struct cp_match *m,
			       struct ng_arena *arena, struct cp_nodes *cp)
{
	size_t nnodes;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	cp->v = ng_arena_alloc(arena, (nnodes ? nnodes : 1) * sizeof(*cp->v));
	if (!cp->v)
		return NG_ENOMEM;
	for (size_t i = 0; i < nnodes; i++)
		if (pd_node_is_control_plane(s, m, &nodes[i]))
			cp->v[cp->n++] = &nodes[i];
	cp->ready = true;
	return NG_OK;
}

/* Whether request @nd touches a control-plane node (into *@ret): its nodeNames, or its selector
 * against the control-plane nodes @cp instead of resolving it against every node. */
static ng_status touches_control_plane(const struct kube_snapshot *s, const struct cp_match *m,
				       const struct kube_nd *nd, struct ng_arena *arena,
				       struct cp_nodes *cp, bool *ret)
{
	*ret = false;
	if (nd->nnode_names) {
		for (size_t i = 0; !*ret && i < nd->nnode_names; i++)
			*ret = pd_is_control_plane(s, m, nd->node_names[i]);
		return NG_OK;
	}
	if (!nd->node_selector.present || nd->node_selector.nreqs == 0)
		return NG_OK; /* selects nothing (see resolve_nodes) */
	if (!cp->ready && find_cp_nodes(s, m, arena, cp) != NG_OK)
		return NG_ENOMEM;
	for (size_t i = 0; !*ret && i < cp->n; i++)
		*ret = bud_selector_matches(&nd->node_selector, cp->v[i]->labels, cp->v[i]->nlabels,
					    kube_snapshot_pool(s));
	return NG_OK;
}

ng_status pol_rank_pending(const struct kube_snapshot *s, struct pol_gate_config *cfg,
			   const struct kube_nd **nds, size_t n, struct ng_arena *arena)
{
	struct rank *r = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*r));
	if (!r)
		return NG_ENOMEM;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct cp_match cpm = pd_control_plane_match(s, cfg);
	size_t nall;
	const struct kube_nd *all = kube_snapshot_nds(s, &nall);
	bool serial = cfg->serial_control_plane && (cpm.sel || cpm.key != NG_INTERN_NONE);
	struct cp_nodes cp = {0};
	/* Per requestor: pending requests, and whether one of its requests is Granted. Counted
	 * once, not per request (that was quadratic in the queue). */
	struct ng_map pending = {0}, granted = {0};
	ng_status st = NG_OK;
	for (size_t k = 0; st == NG_OK && k < nall; k++)
		if (all[k].requestor != NG_INTERN_NONE && all[k].state == KUBE_ND_GRANTED)
			st = ng_map_put_grow(&granted, all[k].requestor, 1);
	for (size_t k = 0; st == NG_OK && k < n; k++) {
		uint32_t c = 0;
		if (nds[k]->requestor != NG_INTERN_NONE) {
			(void)ng_map_get(&pending, nds[k]->requestor, &c);
			st = ng_map_put_grow(&pending, nds[k]->requestor, c + 1);
		}
	}
	cfg->control_plane_pending = 0;
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		r[i] = (struct rank){.nd = nds[i], .name = ng_intern_str(pool, nds[i]->name, NULL)};
		uint32_t who = nds[i]->requestor, c = 0;
		if (who != NG_INTERN_NONE) {
			r[i].in_progress = ng_map_get(&granted, who, &c);
			(void)ng_map_get(&pending, who, &c);
			r[i].requestor_pending = c;
		}
		if (serial) {
			st = touches_control_plane(s, &cpm, nds[i], arena, &cp, &r[i].cp);
			cfg->control_plane_pending += r[i].cp;
		}
	}
	ng_map_finish(&pending);
	ng_map_finish(&granted);
	if (st != NG_OK)
		return st;
	qsort(r, n, sizeof(*r), cmp_rank);
	for (size_t i = 0; i < n; i++)
		nds[i] = r[i].nd;
	return NG_OK;
}
