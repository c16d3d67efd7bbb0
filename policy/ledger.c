/* The grant ledger: which request holds each node, and held nodes by control-plane class. */
#include "policy/disruption_internal.h"

bool pol_ledger_held_at(const struct pol_ledger *l, size_t i)
{
	return i < l->nnodes && l->held[i];
}

uint32_t pol_ledger_holder(const struct pol_ledger *l, uint32_t node)
{
	uint32_t h;
	return ng_map_get(&l->holders, node, &h) ? h : NG_INTERN_NONE;
}

struct pol_ledger *pol_ledger_create(const struct kube_snapshot *s)
{
	return pol_ledger_create_without(s, NULL, 0);
}

struct pol_ledger *pol_ledger_create_without(const struct kube_snapshot *s, const uint32_t *ended,
					     size_t nended)
{
	struct pol_ledger *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->nodes = kube_snapshot_nodes(s, &l->nnodes);
	l->held = calloc(l->nnodes ? l->nnodes : 1, 1);
	l->s = s;
	if (!l->held) {
		free(l);
		return NULL;
	}
	l->paced = pol_snapshot_paced(s);
	l->ready_type = ng_intern_find(kube_snapshot_pool(s), "Ready", 5);
	if (l->paced && !(l->held_at_ms = calloc(l->nnodes ? l->nnodes : 1, sizeof(int64_t)))) {
		pol_ledger_destroy(l);
		return NULL;
	}
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		/* Deleting a Granted request releases its nodes at once (DESIGN.md §4). */
		if (nds[i].state != KUBE_ND_GRANTED || nds[i].deleting ||
		    (nended && bsearch(&nds[i].name, ended, nended, sizeof(*ended), cmp_u32)))
			continue;
		/* Its grant is dated when it was made: the interval of a paced budget starts
		 * there (a missing date is no later than the budget's status.lastGrantAt). */
		l->granting_ms =
		    nds[i].detail && nds[i].detail->granted_ms > 0 ? nds[i].detail->granted_ms : 0;
		if (pol_ledger_grant_at(l, nds[i].name, nds[i].disrupted, nds[i].ndisrupted,
					l->granting_ms) != NG_OK) {
			pol_ledger_destroy(l);
			return NULL;
		}
	}
	return l;
}

void pol_ledger_destroy(struct pol_ledger *l)
{
	if (!l)
		return;
	ng_map_finish(&l->holders);
	ng_map_finish(&l->ndb_by_label);
	ng_map_finish(&l->nd_by_node);
	free(l->nd_links);
	free(l->nd_link_node);
	free(l->nd_seen);
	free(l->held);
	free(l->held_at_ms);
	free(l->back_ms);
	free(l->held_nodes);
	free(l->co);
	ng_arena_destroy(l->arena);
	free(l);
}

static bool is_control_plane_node(const struct kube_snapshot *s, const struct kube_selector *sel,
				  uint32_t key, const struct kube_node *n);

bool pol_snapshot_paced(const struct kube_snapshot *s)
{
	return pol_snapshot_max_soak_ms(s) > 0 || pol_snapshot_max_interval_ms(s) > 0;
}

/* The largest soakSeconds (@soak) or minIntervalSeconds of @s's valid budgets, in ms. */
static int64_t max_pacing(const struct kube_snapshot *s, bool soak)
{
	size_t nn, na;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nn);
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
	int64_t m = 0;
	for (size_t i = 0; i < nn + na; i++) {
		const struct kube_budget_common *b = i < nn ? &ndbs[i].b : &adbs[i - nn].b;
		int64_t v = soak ? b->soak_ms : b->min_interval_ms;
		if (!b->invalid && v > m)
			m = v;
	}
	return m;
}

int64_t pol_snapshot_max_soak_ms(const struct kube_snapshot *s)
{
	return max_pacing(s, true);
}

int64_t pol_snapshot_max_interval_ms(const struct kube_snapshot *s)
{
	return max_pacing(s, false);
}

void pol_ledger_set_now(struct pol_ledger *l, int64_t now_wall_ms)
{
	l->now_ms = now_wall_ms;
}

ng_status pol_ledger_given_back(struct pol_ledger *l, uint32_t node, int64_t back_wall_ms)
{
	const struct kube_node *k = kube_snapshot_find_node(l->s, node);
	if (!k || !l->paced)
		return NG_OK;
	if (!l->back_ms && !(l->back_ms = calloc(l->nnodes ? l->nnodes : 1, sizeof(int64_t))))
		return NG_ENOMEM;
	l->back_ms[k - l->nodes] = back_wall_ms;
	/* Scopes counted their soaking nodes without it: counted again at their next use. */
	for (size_t i = 0; l->ndb && i < l->nndb + l->nadb; i++)
		l->ndb[i].soak_ready = false;
	return NG_OK;
}

void pol_ledger_past_grant(struct pol_ledger *l, uint32_t node, int64_t at_wall_ms)
{
	const struct kube_node *k = kube_snapshot_find_node(l->s, node);
	if (k && l->held_at_ms && at_wall_ms > l->held_at_ms[k - l->nodes])
		l->held_at_ms[k - l->nodes] = at_wall_ms;
}

ng_status pol_ledger_grant(struct pol_ledger *l, uint32_t nd_name, const uint32_t *nodes, size_t n)
{
	return pol_ledger_grant_at(l, nd_name, nodes, n, l->now_ms);
}

ng_status pol_ledger_grant_at(struct pol_ledger *l, uint32_t nd_name, const uint32_t *nodes,
			      size_t n, int64_t at_wall_ms)
{
	l->granting_ms = at_wall_ms;
	for (size_t i = 0; i < n; i++) {
		uint32_t h;
		if (ng_map_get(&l->holders, nodes[i], &h)) {
			if (h == nd_name)
				continue;
			/* The first holder stays; the others are noted beside it. */
			if (l->nco == l->capco) {
				struct co_holder *g =
				    ng_array_grow(l->co, &l->capco, l->nco, sizeof(*g));
				if (!g)
					return NG_ENOMEM;
				l->co = g;
			}
			l->co[l->nco++] = (struct co_holder){nodes[i], nd_name};
			continue;
		}
		if (ng_map_put_grow(&l->holders, nodes[i], nd_name) != NG_OK)
			return NG_ENOMEM;
		if (l->nheld == l->capheld) {
			struct held_node *g =
			    ng_array_grow(l->held_nodes, &l->capheld, l->nheld, sizeof(*g));
			if (!g)
				return NG_ENOMEM;
			l->held_nodes = g;
		}
		const struct kube_node *k = kube_snapshot_find_node(l->s, nodes[i]);
		struct held_node *hn = &l->held_nodes[l->nheld++];
		*hn = (struct held_node){nodes[i], k ? (uint32_t)(k - l->nodes) : UINT32_MAX,
					 nd_name, false};
		if (k) {
			size_t at = (size_t)(k - l->nodes);
			l->held[at] = 1;
			if (l->held_at_ms && at_wall_ms > l->held_at_ms[at])
				l->held_at_ms[at] = at_wall_ms;
			if (l->cp_ready) {
				hn->cp = is_control_plane_node(l->s, l->cp_sel, l->cp_key, k);
				*(hn->cp ? &l->held_cp : &l->held_other) += 1;
			}
			pd_ndb_counts_grant(l, at);
		}
		pd_adb_counts_grant(l, nodes[i], k);
	}
	return NG_OK;
}

/* ---- control-plane classes, a request's nodes ---- */

struct cp_match pd_control_plane_match(const struct kube_snapshot *s,
				       const struct pol_gate_config *cfg)
{
	static const char key[] = "node-role.kubernetes.io/control-plane";
	return (struct cp_match){
	    .sel = cfg->control_plane_selector,
	    .key = ng_intern_find(kube_snapshot_pool(s), key, sizeof(key) - 1),
	};
}

static bool is_control_plane_node(const struct kube_snapshot *s, const struct kube_selector *sel,
				  uint32_t key, const struct kube_node *n)
{
	uint32_t v;
	if (sel)
		return bud_selector_matches(sel, n->labels, n->nlabels, kube_snapshot_pool(s));
	return key != NG_INTERN_NONE && kube_labels_get(n->labels, n->nlabels, key, &v);
}

bool pd_node_is_control_plane(const struct kube_snapshot *s, const struct cp_match *m,
			      const struct kube_node *n)
{
	return is_control_plane_node(s, m->sel, m->key, n);
}

bool pd_is_control_plane(const struct kube_snapshot *s, const struct cp_match *m, uint32_t node)
{
	const struct kube_node *n = kube_snapshot_find_node(s, node);
	return n && is_control_plane_node(s, m->sel, m->key, n);
}

/* Counts the held nodes by class for @m, once (again only when asked with another @m); grants
 * keep the counts from then on. */
ng_status pd_held_classes(struct pol_ledger *l, const struct cp_match *m)
{
	if (l->cp_ready && l->cp_sel == m->sel && l->cp_key == m->key)
		return NG_OK;
	l->held_cp = l->held_other = 0;
	/* The held nodes, not every node: a round at 100,000 nodes holds a few hundred. */
	for (size_t i = 0; i < l->nheld; i++) {
		struct held_node *hn = &l->held_nodes[i];
		if (hn->at == UINT32_MAX)
			continue;
		hn->cp = is_control_plane_node(l->s, m->sel, m->key, &l->nodes[hn->at]);
		*(hn->cp ? &l->held_cp : &l->held_other) += 1;
	}
	l->cp_sel = m->sel;
	l->cp_key = m->key;
	l->cp_ready = true;
	return NG_OK;
}

void pd_held_classes_of(const struct pol_ledger *l, uint32_t holder, size_t *ret_cp,
			size_t *ret_other)
{
	size_t cp = 0, other = 0;
	for (size_t i = 0; i < l->nheld; i++) {
		const struct held_node *hn = &l->held_nodes[i];
		if (hn->holder == holder && hn->at != UINT32_MAX)
			*(hn->cp ? &cp : &other) += 1;
	}
	*ret_cp = cp;
	*ret_other = other;
}

/* A requirement of @sel that only objects labelled key=value for one of its values can meet
 * (an In, which matchLabels is): those objects are found in a label index, and only they are
 * matched. NULL when there is none. An object has one value per key, so it is found once per
 * time its value is listed (callers drop repeats). */
const struct kube_requirement *pd_in_requirement(const struct kube_selector *sel)
{
	for (uint16_t i = 0; sel->present && i < sel->nreqs; i++)
		if (sel->reqs[i].op == KUBE_OP_IN)
			return &sel->reqs[i];
	return NULL;
}

/* The request's nodes: spec.nodeNames that exist, or the nodes its selector matches. */
ng_status pd_resolve_nodes(const struct kube_snapshot *s, const struct kube_nd *nd,
			   struct ng_arena *arena, uint32_t **ret, size_t *ret_n)
{
	size_t nall;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nall);
	const struct ng_intern *pool = kube_snapshot_pool(s);
	/* Named nodes: as many as named (not room for every node of the cluster per request). */
	size_t cap = nd->nnode_names ? nd->nnode_names : nall;
	uint32_t *out = ng_arena_alloc(arena, (cap ? cap : 1) * sizeof(*out));
	if (!out)
		return NG_ENOMEM;
	size_t n = 0;
	if (nd->nnode_names) {
		for (size_t i = 0; i < nd->nnode_names; i++)
			if (kube_snapshot_find_node(s, nd->node_names[i]))
				out[n++] = nd->node_names[i];
	} else if (nd->node_selector.present && nd->node_selector.nreqs > 0) {
		/* An empty selector would take every node: the validating webhook denies it and
		 * the gate selects nothing for it (a null selector matches nothing, too). */
		const struct kube_requirement *in = pd_in_requirement(&nd->node_selector);
		for (uint16_t v = 0; in && v < in->nvalues; v++) {
			size_t nc;
			const uint32_t *c =
			    kube_snapshot_nodes_with_label(s, in->key, in->values[v], &nc);
			for (size_t j = 0; j < nc; j++)
				if (bud_selector_matches(&nd->node_selector, nodes[c[j]].labels,
							 nodes[c[j]].nlabels, pool))
					out[n++] = nodes[c[j]].name;
		}
		for (size_t i = 0; !in && i < nall; i++)
			if (bud_selector_matches(&nd->node_selector, nodes[i].labels,
						 nodes[i].nlabels, pool))
				out[n++] = nodes[i].name;
	}
	qsort(out, n, sizeof(*out), cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || out[i] != out[u - 1])
			out[u++] = out[i];
	*ret = out;
	*ret_n = u;
	return NG_OK;
}
