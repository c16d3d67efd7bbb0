/* Budget scopes: which nodes each budget covers, counted and indexed once per ledger. */
#include "policy/disruption_internal.h"

/* Whether value @k of @r already appeared earlier in it: a repeat finds nothing new. */
static bool repeated_value(const struct kube_requirement *r, uint16_t k)
{
	for (uint16_t j = 0; j < k; j++)
		if (r->values[j] == r->values[k])
			return true;
	return false;
}

static uint64_t label_key(uint32_t key, uint32_t val)
{
	return (uint64_t)key << 32 | val;
}

/* Adds @budget to the list of label @lk in @m (links from @links, *@nlinks used so far). */
static ng_status link_budget(struct ng_map *m, struct budget_link *links, size_t *nlinks,
			     uint64_t lk, uint32_t budget)
{
	uint32_t head = UINT32_MAX;
	(void)ng_map_get(m, lk, &head);
	links[*nlinks] = (struct budget_link){budget, head};
	if (ng_map_put_grow(m, lk, (uint32_t)*nlinks) != NG_OK)
		return NG_ENOMEM;
	(*nlinks)++;
	return NG_OK;
}

ng_status pd_scopes_init(struct pol_ledger *l)
{
	if (l->scopes_ok)
		return NG_OK;
	if (l->arena) /* a failed first try: start again */
		ng_arena_destroy(l->arena);
	ng_map_finish(&l->ndb_by_label);
	memset(&l->ndb_by_label, 0, sizeof(l->ndb_by_label));
	l->nndb_scan = l->nndb_invalid = l->nadb_invalid = 0;
	size_t nndb, nadb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(l->s, &nndb);
	const struct kube_adb *adbs = kube_snapshot_adbs(l->s, &nadb);
	size_t nb = nndb + nadb, nlinks = 0;
	/* Small chunks come from the heap and are reused round after round. */
	l->arena = ng_arena_create_sized(SIZE_MAX, 64u << 10);
	l->ndb = l->arena ? ng_arena_alloc(l->arena, (nb ? nb : 1) * sizeof(*l->ndb)) : NULL;
	for (size_t k = 0; l->ndb && k < nndb; k++) {
		const struct kube_requirement *in = pd_in_requirement(&ndbs[k].node_selector);
		nlinks += in ? in->nvalues : 0;
	}
	l->ndb_links =
	    l->ndb ? ng_arena_alloc(l->arena, (nlinks ? nlinks : 1) * sizeof(*l->ndb_links)) : NULL;
	if (!l->ndb_links)
		return NG_ENOMEM;
	l->ndb_scan = ng_arena_alloc(l->arena, (nndb ? nndb : 1) * sizeof(*l->ndb_scan));
	l->ndb_invalid = ng_arena_alloc(l->arena, (nndb ? nndb : 1) * sizeof(*l->ndb_invalid));
	l->adb_invalid = ng_arena_alloc(l->arena, (nadb ? nadb : 1) * sizeof(*l->adb_invalid));
	if (!l->ndb_scan || !l->ndb_invalid || !l->adb_invalid)
		return NG_ENOMEM;
	memset(l->ndb, 0, (nb ? nb : 1) * sizeof(*l->ndb));
	l->nndb = nndb;
	l->nadb = nadb;
	l->adb = l->ndb + l->nndb;
	nlinks = 0;
	for (size_t k = 0; k < nndb; k++) {
		const struct kube_requirement *in = pd_in_requirement(&ndbs[k].node_selector);
		if (ndbs[k].b.invalid) {
			l->ndb_invalid[l->nndb_invalid++] = (uint32_t)k;
			continue;
		}
		if (!in) {
			l->ndb_scan[l->nndb_scan++] = (uint32_t)k;
			continue;
		}
		for (uint16_t v = 0; v < in->nvalues; v++)
			if (!repeated_value(in, v) &&
			    link_budget(&l->ndb_by_label, l->ndb_links, &nlinks,
					label_key(in->key, in->values[v]), (uint32_t)k) != NG_OK)
				return NG_ENOMEM;
	}
	for (size_t k = 0; k < nadb; k++)
		if (adbs[k].b.invalid)
			l->adb_invalid[l->nadb_invalid++] = (uint32_t)k;
	l->scopes_ok = true;
	return NG_OK;
}

/* Calls @fn for every valid NodeDisruptionBudget whose pool holds node @i: those requiring
 * one of the node's labels, and those without an In requirement, each matched against the
 * node. Stops when @fn fails. */
ng_status pd_ndbs_of_node(struct pol_ledger *l, size_t i,
			  ng_status (*fn)(struct pol_ledger *l, size_t ndb, size_t node, void *arg),
			  void *arg)
{
	size_t nb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(l->s, &nb);
	const struct ng_intern *pool = kube_snapshot_pool(l->s);
	const struct kube_node *node = &l->nodes[i];
	ng_status st = NG_OK;
	for (uint32_t j = 0; st == NG_OK && j < node->nlabels; j++) {
		uint32_t at;
		if (!ng_map_get(&l->ndb_by_label,
				label_key(node->labels[j].key, node->labels[j].val), &at))
			continue;
		for (; st == NG_OK && at != UINT32_MAX; at = l->ndb_links[at].next) {
			uint32_t k = l->ndb_links[at].budget;
			if (bud_selector_matches(&ndbs[k].node_selector, node->labels,
						 node->nlabels, pool))
				st = fn(l, k, i, arg);
		}
	}
	for (size_t j = 0; st == NG_OK && j < l->nndb_scan; j++) {
		uint32_t k = l->ndb_scan[j];
		if (bud_selector_matches(&ndbs[k].node_selector, node->labels, node->nlabels, pool))
			st = fn(l, k, i, arg);
	}
	return st;
}

/* A node newly held: one more disrupted node in every computed pool holding it, unless the
 * pool counted it already as unavailable. */
static ng_status ndb_count_one(struct pol_ledger *l, size_t k, size_t i, void *arg)
{
	(void)arg;
	size_t nb;
	const struct kube_ndb *b = &kube_snapshot_ndbs(l->s, &nb)[k];
	struct bscope *sc = &l->ndb[k];
	if (!sc->ready)
		return NG_OK;
	sc->gen++; /* held now: a holder more */
	if (node_counted(&l->nodes[i], b))
		return NG_OK;
	sc->disrupted++;
	size_t j = sc->doms ? pd_scope_pos(sc, i) : SIZE_MAX;
	if (j != SIZE_MAX && sc->doms[sc->dom[j]].disrupted++ == 0)
		sc->ndoms_disrupted++;
	/* A soaking node counted already: held now, it is counted as held instead. */
	if (sc->soak_ready && pd_scope_soaks(sc, b, l->nodes[i].name, i))
		sc->soaking--;
	if (l->granting_ms > sc->last_grant_ms)
		sc->last_grant_ms = l->granting_ms;
	return NG_OK;
}

/* The position of node @node (an index of the snapshot's nodes) in NDB scope @sc, SIZE_MAX when
 * it is not one of its nodes. sc->idx holds distinct indexes in node order, so idx[j] >= j: the
 * node is at @node or before it, and exactly there in a scope of every node up to it (a
 * pool-wide budget's), found without a search. Asked for every held node of a round. */
size_t pd_scope_pos(const struct bscope *sc, size_t node)
{
	if (sc->whole) /* every node, in node order: found without reading the pool */
		return node < sc->n ? node : SIZE_MAX;
	size_t hi = node < sc->n ? node : sc->n - 1, lo = 0;
	if (!sc->n)
		return SIZE_MAX;
	if (sc->idx[hi] == node)
		return hi;
	while (lo < hi) { /* the first position whose index is >= @node, in [lo, hi] */
		size_t mid = lo + (hi - lo) / 2;
		if (sc->idx[mid] < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return sc->idx[lo] == node ? lo : SIZE_MAX;
}

/* Assigns each of @sc's nodes its domain by @b's topologyKey: dom[j], domains numbered in the
 * order the scope's nodes first show them, each with its nodes and (here) those counted by their
 * state; arrays from @a. */
static ng_status assign_domains(const struct pol_ledger *l, const struct bscope *sc,
				const struct kube_ndb *b, struct ng_arena *a, uint32_t **ret_dom,
				struct scope_domain **ret_doms, size_t *ret_n)
{
	uint32_t *dom = ng_arena_alloc(a, (sc->n ? sc->n : 1) * sizeof(*dom));
	struct scope_domain *doms = ng_arena_alloc(a, (sc->n ? sc->n : 1) * sizeof(*doms));
	struct ng_map at;
	if (!dom || !doms || ng_map_init(&at, sc->n + 1) != NG_OK)
		return NG_ENOMEM;
	size_t nd = 0;
	for (size_t j = 0; j < sc->n; j++) {
		const struct kube_node *n = &l->nodes[sc->idx[j]];
		uint32_t value = NG_INTERN_NONE, slot = 0;
		if (!kube_labels_get(n->labels, n->nlabels, b->topology_key, &value))
			value = NG_INTERN_NONE;
		if (!ng_map_get(&at, (uint64_t)value + 1, &slot)) {
			slot = (uint32_t)nd;
			doms[nd++] = (struct scope_domain){.value = value};
			ng_map_put(&at, (uint64_t)value + 1, slot); /* sized for every node */
		}
		dom[j] = slot;
		doms[slot].nodes++;
		doms[slot].disrupted += sc->unavail[j];
	}
	ng_map_finish(&at);
	*ret_dom = dom;
	*ret_doms = doms;
	*ret_n = nd;
	return NG_OK;
}

static ng_status kept_domains(struct pol_ledger *l, struct bscope *sc, const struct kube_ndb *b);

/* @sc's topology domains by @b's topologyKey, with their disrupted nodes now; grants keep them
 * (ndb_count_one()). */
ng_status pd_ndb_domains(struct pol_ledger *l, struct bscope *sc, const struct kube_ndb *b)
{
	if (sc->doms)
		return NG_OK;
	if (sc->kept)
		return kept_domains(l, sc, b);
	uint32_t *dom;
	struct scope_domain *doms;
	size_t nd;
	if (assign_domains(l, sc, b, l->arena, &dom, &doms, &nd) != NG_OK)
		return NG_ENOMEM;
	/* Held nodes not counted by their state already. */
	for (size_t j = 0; j < sc->n; j++)
		doms[dom[j]].disrupted += l->held[sc->idx[j]] && !sc->unavail[j];
	size_t disrupted = 0;
	for (size_t d = 0; d < nd; d++)
		disrupted += doms[d].disrupted > 0;
	sc->dom = dom;
	sc->doms = doms;
	sc->ndoms = nd;
	sc->ndoms_disrupted = disrupted;
	return NG_OK;
}

void pd_ndb_counts_grant(struct pol_ledger *l, size_t i)
{
	if (l->scopes_ok)
		(void)pd_ndbs_of_node(l, i, ndb_count_one, NULL);
}

/* ---- pools kept across ledgers ---- */

/* One NodeDisruptionBudget's pool as the snapshot's tables make it: what does not depend on
 * which nodes are held. */
struct kept_pool {
	bool ready;
	const uint32_t *names, *idx;
	const uint8_t *unavail;
	size_t n, unavailable, ncounted;
	/* With a topologyKey, once a ledger asked: each node's domain, and the domains with their
	 * nodes counted by state (a ledger adds its held ones to a copy). */
	bool doms_ready;
	const uint32_t *dom;
	const struct scope_domain *doms;
	size_t ndoms;
};

struct pol_scope_cache {
	uint64_t nodes_serial, ndbs_serial;
	struct ng_arena *arena; /* the pools' arrays; dropped with them */
	struct kept_pool *pools;
	size_t npools;
};

struct pol_scope_cache *pol_scope_cache_create(void)
{
	return calloc(1, sizeof(struct pol_scope_cache));
}

void pol_scope_cache_destroy(struct pol_scope_cache *c)
{
	if (!c)
		return;
	ng_arena_destroy(c->arena);
	free(c->pools);
	free(c);
}

void pol_ledger_use_cache(struct pol_ledger *l, struct pol_scope_cache *c)
{
	l->cache = c;
}

/* @l's cache, emptied first when @l's snapshot has other nodes or budgets than its pools were
 * made from (kube_snapshot_table_shape(): a kubelet's status heartbeat keeps them); NULL when
 * there is none (or no memory for it), or when the ledger is paced (a pool's last grant is read
 * from every node's grant time). One ledger at a time uses it: the pools of the one before are
 * dropped here. */
static struct pol_scope_cache *pools_for(struct pol_ledger *l, size_t nndb)
{
	struct pol_scope_cache *c = l->cache;
	if (!c || l->paced)
		return NULL;
	uint64_t ns = kube_snapshot_table_shape(l->s, KUBE_RES_NODES),
		 bs = kube_snapshot_table_shape(l->s, KUBE_RES_NDBS);
	if (c->pools && c->nodes_serial == ns && c->ndbs_serial == bs && c->npools == nndb)
		return c;
	ng_arena_destroy(c->arena);
	free(c->pools);
	c->arena = ng_arena_create_sized(SIZE_MAX, 64u << 10);
	c->pools = calloc(nndb ? nndb : 1, sizeof(*c->pools));
	if (!c->arena || !c->pools) {
		ng_arena_destroy(c->arena);
		free(c->pools);
		*c = (struct pol_scope_cache){0};
		return NULL;
	}
	c->npools = nndb;
	c->nodes_serial = ns;
	c->ndbs_serial = bs;
	return c;
}

/* Scope @sc from kept pool @p: its disrupted nodes are those counted by state and the held
 * ones that are not, found from the ledger's held nodes (not by walking the pool). */
static void scope_from_kept(struct pol_ledger *l, struct bscope *sc, struct kept_pool *p)
{
	*sc = (struct bscope){.names = p->names,
			      .idx = p->idx,
			      .unavail = p->unavail,
			      .n = p->n,
			      .whole = p->n == l->nnodes,
			      .unavailable = p->unavailable,
			      .ncounted = p->ncounted,
			      .disrupted = p->ncounted,
			      .lost_pvc = NG_INTERN_NONE,
			      .kept = p,
			      .ready = true};
	for (size_t i = 0; i < l->nheld; i++) {
		uint32_t at = l->held_nodes[i].at;
		size_t j = at != UINT32_MAX ? pd_scope_pos(sc, at) : SIZE_MAX;
		sc->disrupted += j != SIZE_MAX && !p->unavail[j];
	}
}

/* The nodes @b's selector may match (indexes into the snapshot's nodes, in node order, each
 * once, *ret_n of them, from @l's arena; NULL on OOM): with an In requirement, the nodes carrying
 * one of its values (the snapshot's label index), else every node. */
static const uint32_t *pool_candidates(struct pol_ledger *l, const struct kube_ndb *b,
				       size_t *ret_n)
{
	const struct kube_requirement *in = pd_in_requirement(&b->node_selector);
	size_t cap = 0;
	for (uint16_t v = 0; in && v < in->nvalues; v++) {
		size_t m;
		(void)kube_snapshot_nodes_with_label(l->s, in->key, in->values[v], &m);
		cap += m;
	}
	if (!in)
		cap = l->nnodes;
	uint32_t *cand = ng_arena_alloc(l->arena, (cap ? cap : 1) * sizeof(*cand));
	if (!cand)
		return NULL;
	if (!in) {
		for (size_t i = 0; i < l->nnodes; i++)
			cand[i] = (uint32_t)i;
		*ret_n = l->nnodes;
		return cand;
	}
	size_t nc = 0;
	for (uint16_t v = 0; v < in->nvalues; v++) {
		size_t m;
		const uint32_t *c =
		    kube_snapshot_nodes_with_label(l->s, in->key, in->values[v], &m);
		if (m)
			memcpy(cand + nc, c, m * sizeof(*c));
		nc += m;
	}
	qsort(cand, nc, sizeof(*cand), cmp_u32); /* in node order, as a scan finds them */
	size_t u = 0;
	for (size_t j = 0; j < nc; j++)
		if (u == 0 || cand[j] != cand[u - 1])
			cand[u++] = cand[j];
	*ret_n = u;
	return cand;
}

/* NodeDisruptionBudget @k's pool: its nodes, which are unavailable, and how many disrupted,
 * matched among pool_candidates(). */
ng_status pd_ndb_scope(struct pol_ledger *l, size_t k, const struct bscope **ret)
{
	if (pd_scopes_init(l) != NG_OK)
		return NG_ENOMEM;
	struct bscope *sc = &l->ndb[k];
	*ret = sc;
	if (sc->ready)
		return NG_OK;
	struct pol_scope_cache *kc = pools_for(l, l->nndb);
	if (kc && kc->pools[k].ready) {
		scope_from_kept(l, sc, &kc->pools[k]);
		return NG_OK;
	}
	/* Made for the cache when there is one, else for this ledger. */
	struct ng_arena *to = kc ? kc->arena : l->arena;
	size_t nb;
	const struct kube_ndb *b = &kube_snapshot_ndbs(l->s, &nb)[k];
	const struct ng_intern *pool = kube_snapshot_pool(l->s);
	size_t nc = 0;
	const uint32_t *cand = pool_candidates(l, b, &nc);
	uint32_t *names = ng_arena_alloc(to, (nc ? nc : 1) * sizeof(*names));
	uint32_t *idx = ng_arena_alloc(to, (nc ? nc : 1) * sizeof(*idx));
	uint8_t *unavail = ng_arena_alloc(to, nc ? nc : 1);
	if (!cand || !names || !idx || !unavail)
		return NG_ENOMEM;
	size_t n = 0, nun = 0, dis = 0, ncounted = 0;
	int64_t last = 0;
	for (size_t j = 0; !b->b.invalid && j < nc; j++) {
		const struct kube_node *node = &l->nodes[cand[j]];
		if (!bud_selector_matches(&b->node_selector, node->labels, node->nlabels, pool))
			continue;
		unavail[n] = node_counted(node, b);
		ncounted += unavail[n];
		nun += node_unavailable(node, b);
		dis += l->held[cand[j]] || unavail[n];
		if (l->held_at_ms && l->held_at_ms[cand[j]] > last)
			last = l->held_at_ms[cand[j]];
		idx[n] = cand[j];
		names[n++] = node->name;
	}
	*sc = (struct bscope){.names = names,
			      .idx = idx,
			      .unavail = unavail,
			      .n = n,
			      .whole = n == l->nnodes,
			      .unavailable = nun,
			      .ncounted = ncounted,
			      .disrupted = dis,
			      .lost_pvc = NG_INTERN_NONE,
			      .last_grant_ms = last,
			      .ready = true};
	if (kc) {
		kc->pools[k] = (struct kept_pool){.ready = true,
						  .names = names,
						  .idx = idx,
						  .unavail = unavail,
						  .n = n,
						  .unavailable = nun,
						  .ncounted = ncounted};
		sc->kept = &kc->pools[k];
	}
	return NG_OK;
}

/* pd_ndb_domains() of a kept pool's scope: the domains assigned once for the pool (in the
 * cache's arena), a copy of their counts for @l with its held nodes added. */
static ng_status kept_domains(struct pol_ledger *l, struct bscope *sc, const struct kube_ndb *b)
{
	struct kept_pool *p = sc->kept;
	if (!p->doms_ready) {
		uint32_t *dom;
		struct scope_domain *doms;
		if (assign_domains(l, sc, b, l->cache->arena, &dom, &doms, &p->ndoms) != NG_OK)
			return NG_ENOMEM;
		p->dom = dom;
		p->doms = doms;
		p->doms_ready = true;
	}
	struct scope_domain *doms =
	    ng_arena_alloc(l->arena, (p->ndoms ? p->ndoms : 1) * sizeof(*doms));
	if (!doms)
		return NG_ENOMEM;
	if (p->ndoms)
		memcpy(doms, p->doms, p->ndoms * sizeof(*doms));
	for (size_t i = 0; i < l->nheld; i++) {
		uint32_t at = l->held_nodes[i].at;
		size_t j = at != UINT32_MAX ? pd_scope_pos(sc, at) : SIZE_MAX;
		if (j != SIZE_MAX && !sc->unavail[j])
			doms[p->dom[j]].disrupted++;
	}
	size_t disrupted = 0;
	for (size_t d = 0; d < p->ndoms; d++)
		disrupted += doms[d].disrupted > 0;
	sc->dom = p->dom;
	sc->doms = doms;
	sc->ndoms = p->ndoms;
	sc->ndoms_disrupted = disrupted;
	return NG_OK;
}

/* Node @node (index @at, SIZE_MAX without a record) newly held in ADB scope @sc. */
static void adb_count_one(struct pol_ledger *l, struct bscope *sc, uint32_t node, size_t at)
{
	sc->gen++;
	sc->disrupted++;
	if (sc->soak_ready && pd_scope_soaks(sc, NULL, node, at))
		sc->soaking--;
	if (l->granting_ms > sc->last_grant_ms)
		sc->last_grant_ms = l->granting_ms;
}

/* A node newly held (@k its record, NULL when the snapshot has no such node): one more
 * disrupted node in every ADB watching it. */
void pd_adb_counts_grant(struct pol_ledger *l, uint32_t node, const struct kube_node *k)
{
	if (!l->adb_indexed)
		return;
	if (k) {
		size_t at = (size_t)(k - l->nodes);
		for (uint32_t j = l->by_node_off[at]; j < l->by_node_off[at + 1]; j++)
			adb_count_one(l, &l->adb[l->by_node[j]], node, at);
		return;
	}
	/* A pod on a node the cache does not know is watched too; rare, so looked for. */
	for (size_t a = 0; a < l->nadb; a++)
		if (in_sorted(l->adb[a].names, l->adb[a].n, node))
			adb_count_one(l, &l->adb[a], node, SIZE_MAX);
}

/* Whether ADB @a's scope can be computed from the pods' labels alone: a podSelector with an
 * In requirement, and no pvcSelector (whose claims and volumes bud_adb_scope() follows). */
static const struct kube_requirement *adb_by_labels(const struct kube_adb *a)
{
	if (a->b.invalid || a->pvc_selector.present)
		return NULL;
	return pd_in_requirement(&a->pod_selector);
}

/* The pairs (budget << 32 | node) of every running pod an ADB of @by_label selects (its labels
 * looked up in @by_label, whose lists are in @links), in *@ret_pairs (heap; NULL when none). */
static ng_status adb_pod_pairs(const struct pol_ledger *l, const struct kube_adb *adbs,
			       const struct ng_map *by_label, const struct budget_link *links,
			       uint64_t **ret_pairs, size_t *ret_n)
{
	size_t npods, npairs = 0, cap_pairs = 0;
	const struct kube_pod *pods = kube_snapshot_pods(l->s, &npods);
	uint64_t *pairs = NULL;
	ng_status st = NG_OK;
	for (size_t p = 0; st == NG_OK && p < npods; p++) {
		const struct kube_pod *pod = &pods[p];
		if (pod->node == NG_INTERN_NONE || pod->phase == KUBE_POD_SUCCEEDED ||
		    pod->phase == KUBE_POD_FAILED)
			continue;
		for (uint32_t j = 0; st == NG_OK && j < pod->nlabels; j++) {
			uint32_t at;
			if (!ng_map_get(by_label, label_key(pod->labels[j].key, pod->labels[j].val),
					&at))
				continue;
			for (; st == NG_OK && at != UINT32_MAX; at = links[at].next) {
				uint32_t k = links[at].budget;
				if (adbs[k].b.ns != pod->ns ||
				    !bud_adb_selects_pod(l->s, &adbs[k], pod))
					continue;
				if (npairs == cap_pairs) {
					size_t c = cap_pairs ? 2 * cap_pairs : 1024;
					uint64_t *g = realloc(pairs, c * sizeof(*g));
					if (!g) {
						st = NG_ENOMEM;
						break;
					}
					pairs = g;
					cap_pairs = c;
				}
				pairs[npairs++] = (uint64_t)k << 32 | pod->node;
			}
		}
	}
	*ret_pairs = pairs;
	*ret_n = npairs;
	return st;
}

/* The scopes of the ADBs adb_by_labels() takes, from @pairs: grouped by budget (counts,
 * offsets, then each budget's nodes), sorted, unique. */
static ng_status adb_scopes_from_pairs(struct pol_ledger *l, const struct kube_adb *adbs, size_t na,
				       const uint64_t *pairs, size_t npairs)
{
	ng_status st = NG_OK;
	uint32_t *off = calloc(na + 1, sizeof(*off));
	uint32_t *nodes =
	    off ? ng_arena_alloc(l->arena, (npairs ? npairs : 1) * sizeof(*nodes)) : NULL;
	if (!off || !nodes)
		st = NG_ENOMEM;
	for (size_t j = 0; st == NG_OK && j < npairs; j++)
		off[(pairs[j] >> 32) + 1]++;
	for (size_t k = 0; st == NG_OK && k < na; k++)
		off[k + 1] += off[k];
	for (size_t j = 0; st == NG_OK && j < npairs; j++)
		nodes[off[pairs[j] >> 32]++] = (uint32_t)pairs[j];
	for (size_t k = na; st == NG_OK && k > 0; k--)
		off[k] = off[k - 1];
	if (off)
		off[0] = 0;
	for (size_t k = 0; st == NG_OK && k < na; k++) {
		if (!adb_by_labels(&adbs[k]))
			continue;
		uint32_t *v = nodes + off[k];
		size_t n = off[k + 1] - off[k], u = 0;
		qsort(v, n, sizeof(*v), cmp_u32);
		for (size_t j = 0; j < n; j++)
			if (u == 0 || v[j] != v[u - 1])
				v[u++] = v[j];
		l->adb[k] =
		    (struct bscope){.names = v, .n = u, .lost_pvc = NG_INTERN_NONE, .ready = true};
	}
	free(off);
	return st;
}

/* The watched nodes of the ADBs adb_by_labels() takes, in one walk over the pods: a pod's
 * labels name the ADBs that may select it ((key, value) -> ADBs requiring it), and only those
 * are matched. The same pods as bud_adb_scope() finds (scheduled, not finished, of the
 * budget's namespace, selected), so the same nodes, sorted by id, each once. */
static ng_status adb_scopes_by_labels(struct pol_ledger *l)
{
	size_t na;
	const struct kube_adb *adbs = kube_snapshot_adbs(l->s, &na);
	struct ng_map by_label = {0};
	size_t nlinks = 0, npairs = 0;
	for (size_t k = 0; k < na; k++) {
		const struct kube_requirement *in = adb_by_labels(&adbs[k]);
		nlinks += in ? in->nvalues : 0;
	}
	if (nlinks == 0)
		return NG_OK;
	struct budget_link *links = calloc(nlinks, sizeof(*links));
	uint64_t *pairs = NULL; /* budget << 32 | node */
	ng_status st = links ? NG_OK : NG_ENOMEM;
	nlinks = 0;
	for (size_t k = 0; st == NG_OK && k < na; k++) {
		const struct kube_requirement *in = adb_by_labels(&adbs[k]);
		for (uint16_t v = 0; st == NG_OK && in && v < in->nvalues; v++)
			if (!repeated_value(in, v))
				st = link_budget(&by_label, links, &nlinks,
						 label_key(in->key, in->values[v]), (uint32_t)k);
	}
	if (st == NG_OK)
		st = adb_pod_pairs(l, adbs, &by_label, links, &pairs, &npairs);
	if (st == NG_OK)
		st = adb_scopes_from_pairs(l, adbs, na, pairs, npairs);
	free(pairs);
	free(links);
	ng_map_finish(&by_label);
	return st;
}

/* Every ApplicationDisruptionBudget's watched nodes, how many are held, and node -> the ADBs
 * watching it: which ADBs a request touches is only known from their scopes, so all are
 * computed together. */
ng_status pd_adb_index(struct pol_ledger *l)
{
	if (pd_scopes_init(l) != NG_OK)
		return NG_ENOMEM;
	if (l->adb_indexed)
		return NG_OK;
	size_t na;
	const struct kube_adb *adbs = kube_snapshot_adbs(l->s, &na);
	if (adb_scopes_by_labels(l) != NG_OK)
		return NG_ENOMEM;
	for (size_t k = 0; k < l->nadb; k++) {
		struct bud_adb_scope sc;
		if (l->adb[k].ready)
			continue;
		l->adb[k] = (struct bscope){.lost_pvc = NG_INTERN_NONE, .ready = true};
		if (adbs[k].b.invalid)
			continue;
		if (bud_adb_scope(l->s, &adbs[k], l->arena, &sc) != NG_OK)
			return NG_ENOMEM;
		l->adb[k].names = sc.nodes;
		l->adb[k].n = sc.nnodes;
		l->adb[k].lost_pvc = sc.lost_pvc;
	}
	/* Count per node, prefix sums, then fill through a cursor per node; the held nodes of
	 * each scope are counted on the way. */
	l->by_node_off = ng_arena_alloc(l->arena, (l->nnodes + 1) * sizeof(*l->by_node_off));
	uint32_t *cur = ng_arena_alloc(l->arena, (l->nnodes ? l->nnodes : 1) * sizeof(*cur));
	if (!l->by_node_off || !cur)
		return NG_ENOMEM;
	memset(l->by_node_off, 0, (l->nnodes + 1) * sizeof(*l->by_node_off));
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < l->nadb; k++) {
			for (size_t j = 0; j < l->adb[k].n; j++) {
				const struct kube_node *node =
				    kube_snapshot_find_node(l->s, l->adb[k].names[j]);
				if (!node) {
					/* a pod on a node the cache does not know */
					if (pass == 0 && pol_ledger_holder(l, l->adb[k].names[j]) !=
							     NG_INTERN_NONE)
						l->adb[k].disrupted++;
					continue;
				}
				size_t i = (size_t)(node - l->nodes);
				if (pass == 0) {
					l->by_node_off[i + 1]++;
					l->adb[k].disrupted += l->held[i];
					if (l->held_at_ms &&
					    l->held_at_ms[i] > l->adb[k].last_grant_ms)
						l->adb[k].last_grant_ms = l->held_at_ms[i];
				} else {
					l->by_node[cur[i]++] = (uint32_t)k;
				}
			}
		}
		if (pass == 1)
			break;
		for (size_t i = 0; i < l->nnodes; i++) {
			l->by_node_off[i + 1] += l->by_node_off[i];
			cur[i] = l->by_node_off[i];
		}
		size_t total = l->by_node_off[l->nnodes];
		l->by_node = ng_arena_alloc(l->arena, (total ? total : 1) * sizeof(*l->by_node));
		if (!l->by_node)
			return NG_ENOMEM;
	}
	l->adb_indexed = true;
	return NG_OK;
}

/* ---- pacing: soaking nodes ---- */

/* When node @n (its record, NULL when the cache has none; @name its name) stops soaking for
 * budget @b: the latest of its Ready condition's turn to True plus soakSeconds, the give-back
 * the gate saw plus soakSeconds, and the budget's status.soakingNodes entry; KUBE_SOAK_NOT_BACK
 * while given back and not Ready and schedulable yet; 0 when it does not soak. What the gate
 * saw decides over a status entry still waiting for the node (the gate writes what it saw). */
int64_t pd_soak_until(const struct pol_ledger *l, const struct kube_budget_common *b,
		      const struct kube_node *n, uint32_t name)
{
	int64_t until = 0;
	if (!b->soak_ms)
		return 0;
	if (n && (n->flags & KUBE_NODE_READY) && l->ready_type != NG_INTERN_NONE)
		for (uint16_t c = 0; c < n->nconditions; c++)
			if (n->conditions[c].type == l->ready_type && n->conditions[c].since_ms > 0)
				until = n->conditions[c].since_ms + b->soak_ms;
	bool seen = false;
	if (n && l->back_ms) {
		int64_t back = l->back_ms[n - l->nodes];
		seen = back != 0;
		if (back == KUBE_SOAK_NOT_BACK)
			return KUBE_SOAK_NOT_BACK;
		if (back && back + b->soak_ms > until)
			until = back + b->soak_ms;
	}
	if (b->nsoaking) {
		struct kube_soaking key = {.node = name};
		const struct kube_soaking *e =
		    bsearch(&key, b->soaking, b->nsoaking, sizeof(key), kube_soaking_cmp);
		if (e && e->until_ms == KUBE_SOAK_NOT_BACK && !seen)
			return KUBE_SOAK_NOT_BACK;
		if (e && e->until_ms != KUBE_SOAK_NOT_BACK && e->until_ms > until)
			until = e->until_ms;
	}
	return until;
}

/* Scope node @name (index @node of the snapshot's nodes, SIZE_MAX without a record) soaks
 * in @sc at its soak instant (@ndb: the NodeDisruptionBudget's scope, NULL for an ADB's). */
bool pd_scope_soaks(const struct bscope *sc, const struct kube_ndb *ndb, uint32_t name, size_t node)
{
	if (!sc->soak_ready || !sc->n)
		return false;
	if (ndb) {
		size_t j = node == SIZE_MAX ? SIZE_MAX : pd_scope_pos(sc, node);
		return j != SIZE_MAX && sc->soak[j];
	}
	const uint32_t *at = bsearch(&name, sc->names, sc->n, sizeof(name), cmp_u32);
	return at && sc->soak[at - sc->names];
}

/* Which of @sc's nodes soak at @now_ms for budget @b (@ndb: it, when a NodeDisruptionBudget),
 * and how many count for that alone: once per instant, for budgets with soakSeconds only. */
ng_status pd_scope_soak(struct pol_ledger *l, struct bscope *sc, const struct kube_budget_common *b,
			const struct kube_ndb *ndb, int64_t now_ms)
{
	if (!b->soak_ms || (sc->soak_ready && sc->soak_at_ms == now_ms))
		return NG_OK;
	if (!sc->soak) {
		sc->soak = ng_arena_alloc(l->arena, sc->n ? sc->n : 1);
		if (!sc->soak)
			return NG_ENOMEM;
	}
	size_t soaking = 0;
	int64_t next = -1;
	for (size_t j = 0; j < sc->n; j++) {
		const struct kube_node *n =
		    ndb ? &l->nodes[sc->idx[j]] : kube_snapshot_find_node(l->s, sc->names[j]);
		int64_t until = pd_soak_until(l, b, n, sc->names[j]);
		sc->soak[j] = until > now_ms;
		if (!sc->soak[j])
			continue;
		bool counted = n ? l->held[n - l->nodes] != 0
				 : pol_ledger_holder(l, sc->names[j]) != NG_INTERN_NONE;
		counted |= ndb && sc->unavail[j];
		soaking += !counted;
		if (until != KUBE_SOAK_NOT_BACK && (next < 0 || until < next))
			next = until;
	}
	sc->soaking = soaking;
	sc->soak_next_ms = next;
	sc->soak_at_ms = now_ms;
	sc->soak_ready = true;
	return NG_OK;
}
