/* Output of the decision: its reason, budget statuses and verdicts as JSON. */
#include "policy/disruption_internal.h"

#include "common/jw.h"

/* Whether verdict @v is named in @d's reason: it fails, and when the request can never fit, it
 * is one of the budgets that never allow it. */
static bool named(const struct pol_gate_decision *d, const struct pol_budget_verdict *v)
{
	return !v->ok && (!d->unsatisfiable || v->never);
}

void pol_decision_reason(struct pol_gate_decision *d)
{
	/* Room kept for the tail while more failures follow: " | and " + 20 digits + the rest. */
	static const char tail[] = " more (status.disruptedDisruptionBudgets lists each)";
	const size_t reserve = sizeof(" | and ") - 1 + 20 + sizeof(tail);
	size_t nfail = 0;
	for (size_t i = 0; i < d->nverdicts; i++)
		nfail += named(d, &d->verdicts[i]);
	if (nfail == 0)
		return;
	size_t len = 0, k = 0;
	d->reason[0] = '\0';
	if (nfail > 1)
		ng_fmt(d->reason, sizeof(d->reason),
		       d->unsatisfiable ? "%zu budgets can never allow it: " : "%zu budgets fail: ",
		       nfail);
	len = strlen(d->reason);
	for (size_t i = 0; i < d->nverdicts; i++) {
		const char *r = d->verdicts[i].reason;
		if (!named(d, &d->verdicts[i]))
			continue;
		size_t need = (k ? 3 : 0) + strlen(r) + (k + 1 < nfail ? reserve : 0);
		if (k > 0 && len + need >= sizeof(d->reason)) {
			ng_fmt(d->reason + len, sizeof(d->reason) - len, " | and %zu%s", nfail - k,
			       tail);
			return;
		}
		ng_fmt(d->reason + len, sizeof(d->reason) - len, "%s%s", k ? " | " : "", r);
		len += strlen(d->reason + len);
		k++;
	}
}

/* ---- budget status ---- */

/* The scope of a budget from the ledger's index (@ret_sc), and how many of its nodes are
 * disrupted: an NDB's pool counts them as the grants are recorded (pd_ndb_scope(),
 * pol_ledger_grant()), so only an ADB's walks its scope. */
static ng_status scope_of(struct pol_ledger *ledger, enum kube_resource kind, size_t index,
			  const struct bscope **ret_sc, size_t *ret_current)
{
	bool ndb = kind == KUBE_RES_NDBS;
	const struct bscope *sc;
	if (ndb ? pd_ndb_scope(ledger, index, &sc) != NG_OK : pd_adb_index(ledger) != NG_OK)
		return NG_ENOMEM;
	if (!ndb)
		sc = &ledger->adb[index];
	size_t current = ndb ? sc->disrupted : 0;
	for (size_t k = 0; !ndb && k < sc->n; k++)
		current += pol_ledger_holder(ledger, sc->names[k]) != NG_INTERN_NONE;
	*ret_sc = sc;
	*ret_current = current;
	return NG_OK;
}

/* ledger->nd_by_node, once: every request that is not Rejected under each of its nodes (a
 * Granted one's status.disruptedNodes, another's nodes as the gate would resolve them). */
static ng_status nd_index(const struct kube_snapshot *s, struct pol_ledger *l,
			  struct ng_arena *arena)
{
	if (l->nd_indexed)
		return NG_OK;
	size_t nnd, nlinks = 0, cap = 64;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	struct budget_link *links = malloc(cap * sizeof(*links));
	uint32_t *link_node = malloc(cap * sizeof(*link_node));
	uint32_t *seen = calloc(nnd ? nnd : 1, sizeof(*seen));
	ng_status st = links && link_node && seen ? ng_map_init(&l->nd_by_node, 64) : NG_ENOMEM;
	for (size_t i = 0; st == NG_OK && i < nnd; i++) {
		if (nds[i].state == KUBE_ND_REJECTED)
			continue;
		const uint32_t *nodes = nds[i].disrupted;
		size_t n = nds[i].ndisrupted;
		uint32_t *resolved;
		if (nds[i].state != KUBE_ND_GRANTED) {
			ng_arena_reset(arena);
			if ((st = pd_resolve_nodes(s, &nds[i], arena, &resolved, &n)) != NG_OK)
				break;
			nodes = resolved;
		}
		for (size_t k = 0; st == NG_OK && k < n; k++) {
			if (nlinks == cap) {
				size_t grown = cap;
				struct budget_link *more =
				    ng_array_grow(links, &grown, nlinks, sizeof(*links));
				if (more)
					links = more;
				uint32_t *more_nodes = more ? ng_array_grow(link_node, &cap, nlinks,
									    sizeof(*link_node))
							    : NULL;
				if (!more_nodes) {
					st = NG_ENOMEM;
					break;
				}
				link_node = more_nodes;
			}
			uint32_t head = UINT32_MAX;
			(void)ng_map_get(&l->nd_by_node, nodes[k], &head);
			links[nlinks] = (struct budget_link){(uint32_t)i, head};
			link_node[nlinks] = nodes[k];
			st = ng_map_put_grow(&l->nd_by_node, nodes[k], (uint32_t)nlinks++);
		}
	}
	if (st != NG_OK) {
		free(links);
		free(link_node);
		free(seen);
		ng_map_finish(&l->nd_by_node);
		memset(&l->nd_by_node, 0, sizeof(l->nd_by_node));
		return st;
	}
	l->nd_links = links;
	l->nd_link_node = link_node;
	l->nd_nlinks = nlinks;
	l->nd_seen = seen;
	l->nd_indexed = true;
	return NG_OK;
}

/* Adds request @i to @hit unless this status listed it already (the ledger's marks). */
static void hit_once(struct pol_ledger *l, uint32_t i, uint32_t *hit, size_t *nhit)
{
	if (l->nd_seen[i] == l->nd_gen)
		return;
	l->nd_seen[i] = l->nd_gen;
	hit[(*nhit)++] = i;
}

ng_status pol_budget_status(const struct kube_snapshot *s, struct pol_ledger *ledger,
			    enum kube_resource kind, size_t index, int64_t now_wall_ms,
			    struct ng_arena *arena, struct pol_budget_status *ret)
{
	struct pol_budget_status st = {0};
	if (pol_budget_now(s, ledger, kind, index, now_wall_ms, arena, &st.now) != NG_OK)
		return NG_ENOMEM;
	bool ndb = kind == KUBE_RES_NDBS;
	const struct bscope *sc;
	if (scope_of(ledger, kind, index, &sc, &st.current) != NG_OK)
		return NG_ENOMEM;
	st.watched = sc->n;
	st.unavailable = ndb ? sc->unavailable : 0;
	st.current += st.now.soaking; /* soaking nodes count as disrupted (soakSeconds) */
	/* The limit in force now: an open window's, none outside them with Deny. */
	st.invalid = st.now.invalid;
	st.allowed = st.invalid ? 0 : st.now.allowed;
	st.nodes = sc->n ? sc->names : NULL; /* the ledger's, not a copy of 100,000 ids */
	/* Requests touching the scope, as status.disruptions lists them (in the snapshot's
	 * order): found from the scope's nodes or from the requests' nodes, whichever are
	 * fewer, so a budget costs the smaller of its scope and the requests. */
	size_t nnd;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	uint32_t *names = ng_arena_alloc(arena, (nnd ? nnd : 1) * sizeof(*names));
	uint8_t *states = ng_arena_alloc(arena, nnd ? nnd : 1);
	if (!names || !states)
		return NG_ENOMEM;
	/* The index resolves requests in an arena of its own making: @arena holds the scope. */
	struct ng_arena *scratch =
	    ledger->nd_indexed ? NULL : ng_arena_create_sized(SIZE_MAX, 64u << 10);
	ng_status ist = ledger->nd_indexed ? NG_OK
			: scratch          ? nd_index(s, ledger, scratch)
					   : NG_ENOMEM;
	ng_arena_destroy(scratch);
	if (ist != NG_OK)
		return ist;
	if (++ledger->nd_gen == 0) { /* wrapped: no mark may look current */
		memset(ledger->nd_seen, 0, (nnd ? nnd : 1) * sizeof(*ledger->nd_seen));
		ledger->nd_gen = 1;
	}
	uint32_t *hit = names; /* request indexes first, then their names in place */
	size_t nhit = 0;
	if (ledger->nd_nlinks < st.watched) {
		/* Fewer requested nodes than scope nodes: the requests' nodes, each looked up in
		 * the scope. */
		for (size_t j = 0; j < ledger->nd_nlinks; j++)
			if (pd_scope_has(ledger, sc, ledger->nd_link_node[j]))
				hit_once(ledger, ledger->nd_links[j].budget, hit, &nhit);
	} else {
		/* The scope's nodes, each looked up in the requests by node. */
		for (size_t k = 0; k < st.watched; k++) {
			uint32_t link = UINT32_MAX;
			(void)ng_map_get(&ledger->nd_by_node, st.nodes[k], &link);
			for (; link != UINT32_MAX; link = ledger->nd_links[link].next)
				hit_once(ledger, ledger->nd_links[link].budget, hit, &nhit);
		}
	}
	qsort(hit, nhit, sizeof(*hit), cmp_u32);
	for (size_t j = 0; j < nhit; j++) {
		const struct kube_nd *nd = &nds[hit[j]];
		names[st.nnds] = nd->name;
		states[st.nnds++] =
		    nd->state == KUBE_ND_GRANTED ? KUBE_ND_GRANTED : KUBE_ND_PENDING;
	}
	st.nd_names = names;
	st.nd_states = states;
	*ret = st;
	return NG_OK;
}

static const char *kind_name(enum kube_resource kind)
{
	return kind == KUBE_RES_NDBS   ? "NodeDisruptionBudget"
	       : kind == KUBE_RES_PDBS ? "PodDisruptionBudget"
				       : "ApplicationDisruptionBudget";
}

static void verdict_json(struct ng_jw *w, const struct ng_intern *pool, const char *kind,
			 uint32_t ns, uint32_t name, bool ok, const char *reason, bool preparing)
{
	size_t len;
	ng_jw_obj(w);
	ng_jw_key(w, "reference");
	ng_jw_obj(w);
	ng_jw_kstr(w, "kind", kind);
	if (ns != NG_INTERN_NONE) {
		const char *s = ng_intern_str(pool, ns, &len);
		ng_jw_key(w, "namespace");
		ng_jw_strn(w, s, len);
	}
	const char *s = ng_intern_str(pool, name, &len);
	ng_jw_key(w, "name");
	ng_jw_strn(w, s ? s : "", s ? len : 0);
	ng_jw_obj_end(w);
	ng_jw_kbool(w, "ok", ok);
	ng_jw_kstr(w, "reason", reason);
	if (preparing)
		ng_jw_kbool(w, "preparing", true);
	ng_jw_obj_end(w);
}

/* Whether verdict @v names the budget of status entry @p. */
static bool same_budget(const struct ng_intern *pool, const struct pol_budget_verdict *v,
			const struct kube_nd_verdict *p)
{
	const char *kind = ng_intern_str(pool, p->kind, NULL);
	return v->name == p->name && v->ns == p->ns && kind &&
	       strcmp(kind, kind_name(v->kind)) == 0;
}

ng_status pol_verdicts_json(const struct kube_snapshot *s, const struct pol_budget_verdict *v,
			    size_t n, const struct kube_nd *prior, struct ng_buf *b)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const struct kube_nd_detail *x = prior ? prior->detail : NULL;
	size_t nprior = x ? x->nverdicts : 0;
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		bool preparing = v[i].preparing;
		for (size_t k = 0; k < nprior && !preparing; k++)
			preparing =
			    x->verdicts[k].preparing && same_budget(pool, &v[i], &x->verdicts[k]);
		verdict_json(&w, pool, kind_name(v[i].kind), v[i].ns, v[i].name, v[i].ok,
			     v[i].reason, preparing);
	}
	/* Budgets that prepared for the request but are not decided now: still owed /terminate. */
	for (size_t k = 0; k < nprior; k++) {
		const struct kube_nd_verdict *p = &x->verdicts[k];
		bool named = false;
		for (size_t i = 0; i < n && !named; i++)
			named = same_budget(pool, &v[i], p);
		if (p->preparing && !named)
			verdict_json(&w, pool, ng_intern_str(pool, p->kind, NULL), p->ns, p->name,
				     p->ok, p->reason, true);
	}
	ng_jw_arr_end(&w);
	return ng_jw_finish(&w);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **pol_node_names_sorted(const struct kube_snapshot *s, const struct pol_gate_decision *d,
				   struct ng_arena *arena)
{
	const char **names = ng_arena_alloc(arena, (d->nnodes ? d->nnodes : 1) * sizeof(*names));
	if (!names)
		return NULL;
	for (size_t i = 0; i < d->nnodes; i++)
		names[i] = ng_intern_str(kube_snapshot_pool(s), d->nodes[i], NULL);
	qsort(names, d->nnodes, sizeof(*names), cmp_str);
	return names;
}
