#include "policy/disruption.h"

#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/map.h"
#include "common/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pol_gate_outcome_str(enum pol_gate_outcome o)
{
	return o == POL_GATE_GRANT ? "Granted" : o == POL_GATE_REJECT ? "Rejected" : "Pending";
}

void pol_gate_config_from(const struct kube_snapshot *s, struct pol_gate_config *ret)
{
	struct pol_gate_config c = {.reject_empty = true, .serial_control_plane = true};
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	if (ngc) {
		/* An unreadable config pauses: deciding on half-read rules could grant what they
		 * forbid. */
		c.paused = ngc->paused || ngc->invalid;
		c.reject_empty = ngc->reject_empty;
		c.reject_overlapping = ngc->reject_overlapping;
		c.allowed_types = ngc->allowed_types;
		c.nallowed = ngc->nallowed_types;
		c.serial_control_plane = ngc->serial_control_plane;
		if (ngc->control_plane_selector.present)
			c.control_plane_selector = &ngc->control_plane_selector;
		c.retry_initial_ms = ngc->retry_initial_ms;
		c.retry_max_ms = ngc->retry_max_ms;
	}
	*ret = c;
}

/* ---- ledger: node -> the request holding it ---- */

struct pol_ledger {
	struct ng_map holders;
	/* held[i]: node i of the snapshot's nodes is held. The budget scans read this byte per
	 * node instead of a hash lookup: it took a pool-wide budget's decision on 5,000 nodes
	 * from 114 us to 44 us. */
	const struct kube_snapshot *s;
	const struct kube_node *nodes;
	size_t nnodes;
	uint8_t *held;
	/* Which nodes each budget covers depends on the snapshot alone: computed on first use and
	 * kept, it serves every decision and budget status of the round. (Recomputed per decision,
	 * 250 rack budgets on 5,000 nodes cost 7.4 ms a decision.) */
	struct ng_arena *arena; /* NULL until a scope is first needed */
	struct bscope *ndb, *adb;
	size_t nndb, nadb;
	bool adb_indexed;      /* every ADB scope computed, and by_node built */
	uint32_t *by_node_off; /* node i runs ADBs by_node[by_node_off[i] .. by_node_off[i+1]) */
	uint32_t *by_node;
};

/* A budget's scope in a snapshot. */
struct bscope {
	const uint32_t *names;  /* node name ids (ADB: sorted by id; NDB: in node order) */
	const uint32_t *idx;    /* NDB: the same nodes' indexes into kube_snapshot_nodes() */
	const uint8_t *unavail; /* NDB: per node, NotReady, cordoned or carrying a taint target */
	size_t n, unavailable;  /* nodes; NDB: how many are unavailable */
	uint32_t lost_pvc;      /* ADB: a selected PVC in phase Lost, or NG_INTERN_NONE */
	bool ready;             /* computed */
};

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
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		/* Deleting a Granted request releases its nodes at once (DESIGN.md §4). */
		if (nds[i].state != KUBE_ND_GRANTED || nds[i].deleting)
			continue;
		if (pol_ledger_grant(l, nds[i].name, nds[i].disrupted, nds[i].ndisrupted) !=
		    NG_OK) {
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
	free(l->held);
	ng_arena_destroy(l->arena);
	free(l);
}

ng_status pol_ledger_grant(struct pol_ledger *l, uint32_t nd_name, const uint32_t *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t h;
		if (ng_map_get(&l->holders, nodes[i], &h))
			continue; /* the first holder stays */
		if (ng_map_put_grow(&l->holders, nodes[i], nd_name) != NG_OK)
			return NG_ENOMEM;
		const struct kube_node *k = kube_snapshot_find_node(l->s, nodes[i]);
		if (k)
			l->held[k - l->nodes] = 1;
	}
	return NG_OK;
}

/* ---- evaluation ---- */

/* How control-plane nodes are recognised: NodeGateConfig's controlPlane.selector, or the
 * node-role label. */
struct cp_match {
	const struct kube_selector *sel;
	uint32_t key; /* the default label's intern id; NONE when no node carries it */
};

static struct cp_match control_plane_match(const struct kube_snapshot *s,
					   const struct pol_gate_config *cfg)
{
	static const char key[] = "node-role.kubernetes.io/control-plane";
	return (struct cp_match){
	    .sel = cfg->control_plane_selector,
	    .key = ng_intern_find(kube_snapshot_pool(s), key, sizeof(key) - 1),
	};
}

static bool is_control_plane(const struct kube_snapshot *s, const struct cp_match *m, uint32_t node)
{
	uint32_t v;
	const struct kube_node *n = kube_snapshot_find_node(s, node);
	if (!n)
		return false;
	if (m->sel)
		return bud_selector_matches(m->sel, n->labels, n->nlabels, kube_snapshot_pool(s));
	return m->key != NG_INTERN_NONE && kube_labels_get(n->labels, n->nlabels, m->key, &v);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static bool in_sorted(const uint32_t *v, size_t n, uint32_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), cmp_u32) != NULL;
}

/* The request's nodes: spec.nodeNames that exist, or the nodes its selector matches. */
static ng_status resolve_nodes(const struct kube_snapshot *s, const struct kube_nd *nd,
			       struct ng_arena *arena, uint32_t **ret, size_t *ret_n)
{
	size_t nall;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nall);
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t cap = nd->nnode_names > nall ? nd->nnode_names : nall;
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
		for (size_t i = 0; i < nall; i++)
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

/* Whether request @nd touches a control-plane node: its nodeNames, or its selector against the
 * control-plane nodes @cp (a handful) instead of resolving it against every node. */
static bool touches_control_plane(const struct kube_snapshot *s, const struct cp_match *m,
				  const struct kube_nd *nd, const struct kube_node *const *cp,
				  size_t ncp)
{
	if (nd->nnode_names) {
		for (size_t i = 0; i < nd->nnode_names; i++)
			if (is_control_plane(s, m, nd->node_names[i]))
				return true;
		return false;
	}
	if (!nd->node_selector.present || nd->node_selector.nreqs == 0)
		return false; /* selects nothing (see resolve_nodes) */
	for (size_t i = 0; i < ncp; i++)
		if (bud_selector_matches(&nd->node_selector, cp[i]->labels, cp[i]->nlabels,
					 kube_snapshot_pool(s)))
			return true;
	return false;
}

ng_status pol_rank_pending(const struct kube_snapshot *s, struct pol_gate_config *cfg,
			   const struct kube_nd **nds, size_t n, struct ng_arena *arena)
{
	struct rank *r = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*r));
	if (!r)
		return NG_ENOMEM;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct cp_match cpm = control_plane_match(s, cfg);
	size_t nall, nnodes, ncp = 0;
	const struct kube_nd *all = kube_snapshot_nds(s, &nall);
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	bool serial = cfg->serial_control_plane && (cpm.sel || cpm.key != NG_INTERN_NONE);
	const struct kube_node **cp = ng_arena_alloc(arena, (nnodes ? nnodes : 1) * sizeof(*cp));
	if (!cp)
		return NG_ENOMEM;
	for (size_t i = 0; serial && i < nnodes; i++)
		if (is_control_plane(s, &cpm, nodes[i].name))
			cp[ncp++] = &nodes[i];
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
			r[i].cp = touches_control_plane(s, &cpm, nds[i], cp, ncp);
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

static bool type_applies(const struct kube_budget_common *b, uint32_t type)
{
	if (b->ntypes == 0)
		return true; /* an empty list applies to every type */
	for (uint16_t i = 0; i < b->ntypes; i++)
		if (b->types[i] == type)
			return true;
	return false;
}

/* NotReady, cordoned, or carrying one of the budget's taint targets. */
static bool node_unavailable(const struct kube_node *n, const struct kube_ndb *b)
{
	if (!(n->flags & KUBE_NODE_READY) || (n->flags & KUBE_NODE_UNSCHEDULABLE))
		return true;
	for (uint16_t i = 0; b && i < b->ntargets; i++) {
		const struct kube_taint_target *t = &b->taint_targets[i];
		for (uint32_t k = 0; k < n->ntaints; k++) {
			const struct kube_taint *x = &n->taints[k];
			if (x->key == t->key &&
			    (t->effect == NG_INTERN_NONE || x->effect == t->effect) &&
			    (t->exists || x->val == t->val))
				return true;
		}
	}
	return false;
}

static ng_status scopes_init(struct pol_ledger *l)
{
	if (l->arena)
		return NG_OK;
	(void)kube_snapshot_ndbs(l->s, &l->nndb);
	(void)kube_snapshot_adbs(l->s, &l->nadb);
	size_t nb = l->nndb + l->nadb;
	/* Small chunks come from the heap and are reused round after round. */
	l->arena = ng_arena_create_sized(SIZE_MAX, 64u << 10);
	l->ndb = l->arena ? ng_arena_alloc(l->arena, (nb ? nb : 1) * sizeof(*l->ndb)) : NULL;
	if (!l->ndb)
		return NG_ENOMEM;
	memset(l->ndb, 0, (nb ? nb : 1) * sizeof(*l->ndb));
	l->adb = l->ndb + l->nndb;
	return NG_OK;
}

/* NodeDisruptionBudget @k's pool: its nodes, and which are unavailable. */
static ng_status ndb_scope(struct pol_ledger *l, size_t k, const struct bscope **ret)
{
	if (scopes_init(l) != NG_OK)
		return NG_ENOMEM;
	struct bscope *sc = &l->ndb[k];
	*ret = sc;
	if (sc->ready)
		return NG_OK;
	size_t nb;
	const struct kube_ndb *b = &kube_snapshot_ndbs(l->s, &nb)[k];
	const struct ng_intern *pool = kube_snapshot_pool(l->s);
	uint32_t *names = ng_arena_alloc(l->arena, (l->nnodes ? l->nnodes : 1) * sizeof(*names));
	uint32_t *idx = ng_arena_alloc(l->arena, (l->nnodes ? l->nnodes : 1) * sizeof(*idx));
	uint8_t *unavail = ng_arena_alloc(l->arena, l->nnodes ? l->nnodes : 1);
	if (!names || !idx || !unavail)
		return NG_ENOMEM;
	size_t n = 0, nun = 0;
	for (size_t i = 0; !b->b.invalid && i < l->nnodes; i++) {
		const struct kube_node *node = &l->nodes[i];
		if (!bud_selector_matches(&b->node_selector, node->labels, node->nlabels, pool))
			continue;
		unavail[n] = node_unavailable(node, b);
		nun += unavail[n];
		idx[n] = (uint32_t)i;
		names[n++] = node->name;
	}
	*sc = (struct bscope){names, idx, unavail, n, nun, NG_INTERN_NONE, true};
	return NG_OK;
}

/* Every ApplicationDisruptionBudget's watched nodes, and node -> the ADBs watching it: which
 * ADBs a request touches is only known from their scopes, so all are computed together. */
static ng_status adb_index(struct pol_ledger *l)
{
	if (scopes_init(l) != NG_OK)
		return NG_ENOMEM;
	if (l->adb_indexed)
		return NG_OK;
	size_t na;
	const struct kube_adb *adbs = kube_snapshot_adbs(l->s, &na);
	for (size_t k = 0; k < l->nadb; k++) {
		struct bud_adb_scope sc;
		l->adb[k] = (struct bscope){.lost_pvc = NG_INTERN_NONE, .ready = true};
		if (adbs[k].b.invalid)
			continue;
		if (bud_adb_scope(l->s, &adbs[k], l->arena, &sc) != NG_OK)
			return NG_ENOMEM;
		l->adb[k].names = sc.nodes;
		l->adb[k].n = sc.nnodes;
		l->adb[k].lost_pvc = sc.lost_pvc;
	}
	/* Count per node, prefix sums, then fill through a cursor per node. */
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
				if (!node)
					continue; /* a pod on a node the cache does not know */
				size_t i = (size_t)(node - l->nodes);
				if (pass == 0)
					l->by_node_off[i + 1]++;
				else
					l->by_node[cur[i]++] = (uint32_t)k;
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

struct eval {
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	struct pol_ledger *ledger;
	const struct kube_nd *nd;
	const uint32_t *nodes;
	size_t nnodes;
	const struct kube_node **recs; /* the request's nodes' records */
	const uint8_t *adb_impacted;   /* per ADB: watches one of the request's nodes */
	struct pol_budget_verdict *v;
	size_t nv, capv;
	bool any_failed;
};

static struct pol_budget_verdict *verdict(struct eval *e, enum kube_resource kind,
					  const struct kube_budget_common *b, size_t index)
{
	if (e->nv == e->capv)
		return NULL;
	struct pol_budget_verdict *v = &e->v[e->nv++];
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->ns = b->ns;
	v->name = b->name;
	v->index = (uint32_t)index;
	v->ok = true;
	return v;
}

static void fail_v(struct eval *e, struct pol_budget_verdict *v)
{
	v->ok = false;
	e->any_failed = true;
}

static const char *str(const struct eval *e, uint32_t id)
{
	return ng_intern_str(e->pool, id, NULL);
}

/* Applies the limits to a scope (sorted node ids) with @before disrupted and reports. */
static void check_scope(struct eval *e, struct pol_budget_verdict *v, const char *what,
			const struct bud_limits *lim, const uint32_t *scope, size_t nscope,
			const uint8_t *disrupted /* per scope node */)
{
	int64_t before = 0, added = 0;
	for (size_t i = 0; i < nscope; i++) {
		if (disrupted[i])
			before++;
		else if (in_sorted(e->nodes, e->nnodes, scope[i]))
			added++;
	}
	struct bud_check c;
	bud_check_limits(lim, (int64_t)nscope, before, added, &c);
	v->allowed = c.allowed;
	v->current = before;
	if (c.ok) {
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s: %lld of %lld in use, this request adds %lld", what, (long long)before,
		       (long long)(c.max >= 0 ? c.max : (int64_t)nscope), (long long)added);
		return;
	}
	fail_v(e, v);
	if (c.max >= 0 && c.after > c.max)
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s: %lld of %lld in use; this request adds %lld (limit %lld of %lld nodes)",
		       what, (long long)before, (long long)c.max, (long long)added,
		       (long long)c.max, (long long)nscope);
	else
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s: %lld of %lld nodes must stay undisrupted; %lld would remain", what,
		       (long long)c.min, (long long)nscope, (long long)(nscope - c.after));
}

static ng_status eval_ndb(struct eval *e, const struct kube_ndb *b, size_t index,
			  struct ng_arena *arena)
{
	char what[120];
	ng_fmt(what, sizeof(what), "NodeDisruptionBudget %s", str(e, b->b.name));
	if (b->b.invalid) {
		/* Its pool is unknowable: it holds every request back until it is fixed. */
		struct pol_budget_verdict *v = verdict(e, KUBE_RES_NDBS, &b->b, index);
		if (!v)
			return NG_ENOMEM;
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, str(e, b->b.error));
		return NG_OK;
	}
	if (!type_applies(&b->b, e->nd->type))
		return NG_OK;
	/* Whether the pool holds one of the request's nodes: its selector on those few nodes,
	 * before the pool is computed at all. */
	bool touched = false;
	for (size_t i = 0; i < e->nnodes && !touched; i++)
		touched = e->recs[i] && bud_selector_matches(&b->node_selector, e->recs[i]->labels,
							     e->recs[i]->nlabels, e->pool);
	if (!touched)
		return NG_OK;
	const struct bscope *sc;
	if (ndb_scope(e->ledger, index, &sc) != NG_OK)
		return NG_ENOMEM;
	uint8_t *dis = ng_arena_alloc(arena, sc->n ? sc->n : 1);
	if (!dis)
		return NG_ENOMEM;
	for (size_t k = 0; k < sc->n; k++)
		dis[k] = pol_ledger_held_at(e->ledger, sc->idx[k]) ||
			 (b->count_unavailable && sc->unavail[k]);
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_NDBS, &b->b, index);
	if (!v)
		return NG_ENOMEM;
	if (b->b.frozen) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is frozen: %s", what,
		       str(e, b->b.freeze_reason));
		return NG_OK;
	}
	struct bud_limits lim = {0};
	struct ng_err err = {0};
	if (b->max_disrupted.set) {
		lim.has_max = true;
		if (bud_int_or_percent_from(&b->max_disrupted, e->pool, "spec.maxDisruptedNodes",
					    &lim.max, &err) != NG_OK)
			goto bad;
	}
	if (b->min_undisrupted.set) {
		lim.has_min = true;
		if (bud_int_or_percent_from(&b->min_undisrupted, e->pool,
					    "spec.minUndisruptedNodes", &lim.min, &err) != NG_OK)
			goto bad;
	}
	if (!lim.has_max && !lim.has_min) {
		(void)ng_err_set(&err, NG_EPARSE, 0,
				 "one of maxDisruptedNodes and minUndisruptedNodes is required");
		goto bad;
	}
	check_scope(e, v, what, &lim, sc->names, sc->n, dis);
	return NG_OK;
bad:
	fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
	return NG_OK;
}

static ng_status eval_adb(struct eval *e, const struct kube_adb *a, size_t index,
			  struct ng_arena *arena)
{
	char what[160];
	ng_fmt(what, sizeof(what), "ApplicationDisruptionBudget %s/%s", str(e, a->b.ns),
	       str(e, a->b.name));
	if (a->b.invalid) {
		/* Which pods it means is unknowable: hold back requests touching any node that
		 * runs a pod of its namespace. */
		size_t np;
		const uint32_t *in_ns = kube_snapshot_pods_in_ns(e->s, a->b.ns, &np);
		size_t nall;
		const struct kube_pod *pods = kube_snapshot_pods(e->s, &nall);
		bool touched = false;
		for (size_t i = 0; i < np && !touched; i++)
			touched = in_sorted(e->nodes, e->nnodes, pods[in_ns[i]].node);
		if (!touched)
			return NG_OK;
		struct pol_budget_verdict *v = verdict(e, KUBE_RES_ADBS, &a->b, index);
		if (!v)
			return NG_ENOMEM;
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, str(e, a->b.error));
		return NG_OK;
	}
	if (!type_applies(&a->b, e->nd->type) || !e->adb_impacted[index])
		return NG_OK;
	const struct bscope *sc = &e->ledger->adb[index];
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_ADBS, &a->b, index);
	if (!v)
		return NG_ENOMEM;
	if (a->b.frozen) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is frozen: %s", what,
		       str(e, a->b.freeze_reason));
		return NG_OK;
	}
	if (sc->lost_pvc != NG_INTERN_NONE) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s selects PersistentVolumeClaim %s/%s in phase Lost: data may be at risk",
		       what, str(e, a->b.ns), str(e, sc->lost_pvc));
		return NG_OK;
	}
	struct bud_limits lim = {.has_max = true};
	struct ng_err err = {0};
	if (bud_int_or_percent_from(&a->max_disruptions, e->pool, "spec.maxDisruptions", &lim.max,
				    &err) != NG_OK) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
		return NG_OK;
	}
	uint8_t *dis = ng_arena_alloc(arena, sc->n ? sc->n : 1);
	if (!dis)
		return NG_ENOMEM;
	for (size_t i = 0; i < sc->n; i++)
		dis[i] = pol_ledger_holder(e->ledger, sc->names[i]) != NG_INTERN_NONE;
	check_scope(e, v, what, &lim, sc->names, sc->n, dis);
	return NG_OK;
}

/* DESIGN.md §4's evaluation, one function per step. A step that decides writes the outcome and
 * reason into @d and returns true; false passes the request on to the next step. */

/* Step 1: past spec.retry.deadline → Rejected. */
static bool step1_deadline(const struct kube_nd *nd, int64_t now_wall_ms,
			   struct pol_gate_decision *d)
{
	if (!nd->deadline_ms || now_wall_ms <= nd->deadline_ms)
		return false;
	d->outcome = POL_GATE_REJECT;
	ng_fmt(d->reason, sizeof(d->reason), "deadline passed");
	return true;
}

/* Step 2: no node selected → Rejected with rejectEmptyDisruptions, else Granted. */
static bool step2_empty(const struct pol_gate_config *cfg, const struct kube_nd *nd,
			struct pol_gate_decision *d)
{
	if (d->nnodes != 0)
		return false;
	d->outcome = cfg->reject_empty ? POL_GATE_REJECT : POL_GATE_GRANT;
	ng_fmt(d->reason, sizeof(d->reason), "%s",
	       nd->selector_invalid ? "spec.nodeSelector is invalid: it selects no node"
				    : "no node matched the request");
	return true;
}

/* Step 3: NodeGateConfig paused → stays Pending. */
static bool step3_paused(const struct pol_gate_config *cfg, struct pol_gate_decision *d)
{
	if (!cfg->paused)
		return false;
	d->outcome = POL_GATE_PENDING;
	ng_fmt(d->reason, sizeof(d->reason), "paused by NodeGateConfig");
	return true;
}

/* Step 4: a type not in allowedTypes (when it lists any) → Rejected. */
static bool step4_type(const struct eval *e, const struct pol_gate_config *cfg,
		       struct pol_gate_decision *d)
{
	if (!cfg->nallowed)
		return false;
	for (size_t i = 0; i < cfg->nallowed; i++)
		if (cfg->allowed_types[i] == e->nd->type)
			return false;
	d->outcome = POL_GATE_REJECT;
	ng_fmt(d->reason, sizeof(d->reason), "type \"%s\" is not an allowed disruption type",
	       e->nd->type == NG_INTERN_NONE ? "" : str(e, e->nd->type));
	return true;
}

/* Step 5: a node already granted to another request → Rejected with
 * rejectOverlappingDisruptions. */
static bool step5_overlap(const struct eval *e, const struct pol_gate_config *cfg,
			  struct pol_gate_decision *d)
{
	if (!cfg->reject_overlapping)
		return false;
	for (size_t i = 0; i < e->nnodes; i++) {
		uint32_t h = pol_ledger_holder(e->ledger, e->nodes[i]);
		if (h != NG_INTERN_NONE && h != e->nd->name) {
			d->outcome = POL_GATE_REJECT;
			ng_fmt(d->reason, sizeof(d->reason),
			       "node %s is already granted to NodeDisruption %s",
			       str(e, e->nodes[i]), str(e, h));
			return true;
		}
	}
	return false;
}

/* Nodes held by requests other than the one evaluated: control-plane and others. */
static void held_by_others(const struct eval *e, const struct cp_match *cpm, size_t *ret_cp,
			   size_t *ret_other)
{
	size_t nall, held_cp = 0, held_other = 0;
	const struct kube_node *all = kube_snapshot_nodes(e->s, &nall);
	for (size_t i = 0; i < nall; i++) {
		if (!pol_ledger_held_at(e->ledger, i))
			continue;
		uint32_t h = pol_ledger_holder(e->ledger, all[i].name);
		if (h == e->nd->name)
			continue;
		if (is_control_plane(e->s, cpm, all[i].name))
			held_cp++;
		else
			held_other++;
	}
	*ret_cp = held_cp;
	*ret_other = held_other;
}

/* Step 6 (controlPlane.serial): control-plane nodes one at a time, first, never with workers.
 * Mixing them or naming two → Rejected; having to wait for others → Pending. */
static bool step6_control_plane(const struct eval *e, const struct pol_gate_config *cfg,
				struct pol_gate_decision *d)
{
	if (!cfg->serial_control_plane)
		return false;
	struct cp_match cpm = control_plane_match(e->s, cfg);
	size_t cp = 0;
	for (size_t i = 0; i < e->nnodes; i++)
		cp += is_control_plane(e->s, &cpm, e->nodes[i]);
	if (cp && cp < e->nnodes) {
		d->outcome = POL_GATE_REJECT;
		ng_fmt(d->reason, sizeof(d->reason),
		       "control-plane nodes are never disrupted together with workers");
		return true;
	}
	if (cp > 1) {
		d->outcome = POL_GATE_REJECT;
		ng_fmt(d->reason, sizeof(d->reason),
		       "control-plane nodes are disrupted one at a time (%zu requested)", cp);
		return true;
	}
	size_t held_cp, held_other;
	held_by_others(e, &cpm, &held_cp, &held_other);
	bool wait = cp ? held_cp + held_other > 0 : held_cp > 0 || cfg->control_plane_pending > 0;
	if (!wait)
		return false;
	d->outcome = POL_GATE_PENDING;
	ng_fmt(d->reason, sizeof(d->reason), "%s",
	       cp ? "waiting: a control-plane node goes alone, and other nodes are disrupted now"
		  : "waiting: control-plane nodes are disrupted first, and one is pending or "
		    "disrupted now");
	return true;
}

/* Which ADBs watch one of the request's nodes (@ret_impacted, one byte per ADB), and the
 * request's node records into e->recs. */
static ng_status impacted_adbs(struct eval *e, size_t nadb, struct ng_arena *arena,
			       const uint8_t **ret_impacted)
{
	struct pol_ledger *l = e->ledger;
	uint8_t *impacted = ng_arena_alloc(arena, nadb ? nadb : 1);
	const struct kube_node **recs =
	    ng_arena_alloc(arena, (e->nnodes ? e->nnodes : 1) * sizeof(*recs));
	if (!impacted || !recs || (nadb && adb_index(l) != NG_OK))
		return NG_ENOMEM;
	memset(impacted, 0, nadb ? nadb : 1);
	for (size_t i = 0; i < e->nnodes; i++) {
		recs[i] = kube_snapshot_find_node(e->s, e->nodes[i]);
		if (!recs[i] || !nadb)
			continue;
		size_t at = (size_t)(recs[i] - l->nodes);
		for (uint32_t k = l->by_node_off[at]; k < l->by_node_off[at + 1]; k++)
			impacted[l->by_node[k]] = 1;
	}
	e->recs = recs;
	*ret_impacted = impacted;
	return NG_OK;
}

/* Step 7: every impacted budget for the request's type (frozen, limits, fail-closed when
 * unreadable) gets a verdict in e->v; every failure is listed, not only the first. */
static ng_status step7_budgets(struct eval *e, struct ng_arena *arena)
{
	size_t nndb, nadb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(e->s, &nndb);
	const struct kube_adb *adbs = kube_snapshot_adbs(e->s, &nadb);
	e->capv = nndb + nadb;
	e->v = ng_arena_alloc(arena, (e->capv ? e->capv : 1) * sizeof(*e->v));
	if (!e->v || impacted_adbs(e, nadb, arena, &e->adb_impacted) != NG_OK)
		return NG_ENOMEM;
	ng_status st;
	for (size_t i = 0; i < nndb; i++)
		if ((st = eval_ndb(e, &ndbs[i], i, arena)) != NG_OK)
			return st;
	for (size_t i = 0; i < nadb; i++)
		if ((st = eval_adb(e, &adbs[i], i, arena)) != NG_OK)
			return st;
	return NG_OK;
}

void pol_decision_reason(struct pol_gate_decision *d)
{
	/* Room kept for the tail while more failures follow: " | and " + 20 digits + the rest. */
	static const char tail[] = " more (status.disruptedDisruptionBudgets lists each)";
	const size_t reserve = sizeof(" | and ") - 1 + 20 + sizeof(tail);
	size_t nfail = 0;
	for (size_t i = 0; i < d->nverdicts; i++)
		nfail += !d->verdicts[i].ok;
	if (nfail == 0)
		return;
	size_t len = 0, k = 0;
	d->reason[0] = '\0';
	if (nfail > 1)
		ng_fmt(d->reason, sizeof(d->reason), "%zu budgets fail: ", nfail);
	len = strlen(d->reason);
	for (size_t i = 0; i < d->nverdicts; i++) {
		const char *r = d->verdicts[i].reason;
		if (d->verdicts[i].ok)
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

/* Step 9: no failure → Granted; otherwise Pending with retry (step 1 already rejected a
 * request past its deadline), else Rejected. The reason names every failing budget. */
static void step9_outcome(const struct eval *e, struct pol_gate_decision *d)
{
	d->verdicts = e->v;
	d->nverdicts = e->nv;
	if (!e->any_failed) {
		d->outcome = POL_GATE_GRANT;
		ng_fmt(d->reason, sizeof(d->reason), "granted");
		return;
	}
	pol_decision_reason(d);
	d->outcome = e->nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
}

ng_status pol_evaluate_disruption(const struct kube_snapshot *s, const struct pol_gate_config *cfg,
				  struct pol_ledger *ledger, const struct kube_nd *nd,
				  int64_t now_wall_ms, struct ng_arena *arena,
				  struct pol_gate_decision *ret)
{
	struct pol_gate_decision d;
	memset(&d, 0, sizeof(d));
	struct eval e = {.s = s, .pool = kube_snapshot_pool(s), .ledger = ledger, .nd = nd};
	uint32_t *nodes = NULL;
	ng_status st = resolve_nodes(s, nd, arena, &nodes, &d.nnodes);
	if (st != NG_OK)
		return st;
	d.nodes = nodes;
	e.nodes = nodes;
	e.nnodes = d.nnodes;
	if (step1_deadline(nd, now_wall_ms, &d) || step2_empty(cfg, nd, &d) ||
	    step3_paused(cfg, &d) || step4_type(&e, cfg, &d) || step5_overlap(&e, cfg, &d) ||
	    step6_control_plane(&e, cfg, &d))
		goto out;
	if ((st = step7_budgets(&e, arena)) != NG_OK)
		return st;
	step9_outcome(&e, &d);
	/* Step 8, the health hooks, is the caller's: the gate calls the hooks of a grant with
	 * impacted budgets, and pol_hooks_apply() (policy/hook.h) may still fail it. */
out:
	*ret = d;
	return NG_OK;
}

/* ---- budget status ---- */

/* The scope of a budget from the ledger's index, copied (the caller sorts it), with which of
 * its nodes are disrupted, the limits, and whether the budget is readable. */
static ng_status scope_of(const struct kube_snapshot *s, struct pol_ledger *ledger,
			  enum kube_resource kind, size_t index, struct ng_arena *arena,
			  uint32_t **ret_nodes, uint8_t **ret_dis, size_t *ret_n,
			  size_t *ret_unavail, struct bud_limits *ret_lim, bool *ret_invalid)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct ng_err err = {0};
	memset(ret_lim, 0, sizeof(*ret_lim));
	bool ndb = kind == KUBE_RES_NDBS;
	const struct bscope *sc;
	if (ndb ? ndb_scope(ledger, index, &sc) != NG_OK : adb_index(ledger) != NG_OK)
		return NG_ENOMEM;
	if (!ndb)
		sc = &ledger->adb[index];
	uint32_t *scope = ng_arena_alloc(arena, (sc->n ? sc->n : 1) * sizeof(*scope));
	uint8_t *dis = ng_arena_alloc(arena, sc->n ? sc->n : 1);
	if (!scope || !dis)
		return NG_ENOMEM;
	size_t nb;
	const struct kube_ndb *b = ndb ? &kube_snapshot_ndbs(s, &nb)[index] : NULL;
	if (sc->n) /* an invalid or empty scope has no array */
		memcpy(scope, sc->names, sc->n * sizeof(*scope));
	for (size_t k = 0; k < sc->n; k++)
		dis[k] = b ? pol_ledger_held_at(ledger, sc->idx[k]) ||
				 (b->count_unavailable && sc->unavail[k])
			   : pol_ledger_holder(ledger, sc->names[k]) != NG_INTERN_NONE;
	*ret_unavail = ndb ? sc->unavailable : 0;
	if (b) {
		*ret_invalid = b->b.invalid;
		if (b->max_disrupted.set) {
			ret_lim->has_max = true;
			*ret_invalid |= bud_int_or_percent_from(&b->max_disrupted, pool, "max",
								&ret_lim->max, &err) != NG_OK;
		}
		if (b->min_undisrupted.set) {
			ret_lim->has_min = true;
			*ret_invalid |= bud_int_or_percent_from(&b->min_undisrupted, pool, "min",
								&ret_lim->min, &err) != NG_OK;
		}
	} else {
		size_t na;
		const struct kube_adb *a = &kube_snapshot_adbs(s, &na)[index];
		*ret_invalid = a->b.invalid;
		if (!a->b.invalid) {
			ret_lim->has_max = true;
			*ret_invalid |= bud_int_or_percent_from(&a->max_disruptions, pool, "max",
								&ret_lim->max, &err) != NG_OK;
		}
	}
	*ret_nodes = scope;
	*ret_dis = dis;
	*ret_n = sc->n;
	return NG_OK;
}

ng_status pol_budget_status(const struct kube_snapshot *s, struct pol_ledger *ledger,
			    enum kube_resource kind, size_t index, struct ng_arena *arena,
			    struct pol_budget_status *ret)
{
	struct pol_budget_status st = {0};
	uint32_t *scope;
	uint8_t *dis;
	struct bud_limits lim;
	if (scope_of(s, ledger, kind, index, arena, &scope, &dis, &st.watched, &st.unavailable,
		     &lim, &st.invalid) != NG_OK)
		return NG_ENOMEM;
	for (size_t i = 0; i < st.watched; i++)
		st.current += dis[i];
	if (!st.invalid) {
		struct bud_check c;
		bud_check_limits(&lim, (int64_t)st.watched, (int64_t)st.current, 0, &c);
		st.allowed = c.allowed;
	}
	qsort(scope, st.watched, sizeof(*scope), cmp_u32);
	st.nodes = scope;
	/* Requests touching the scope, as status.disruptions lists them. */
	size_t nnd;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	uint32_t *names = ng_arena_alloc(arena, (nnd ? nnd : 1) * sizeof(*names));
	uint8_t *states = ng_arena_alloc(arena, nnd ? nnd : 1);
	if (!names || !states)
		return NG_ENOMEM;
	for (size_t i = 0; i < nnd; i++) {
		if (nds[i].state == KUBE_ND_REJECTED)
			continue;
		const uint32_t *nodes = nds[i].disrupted;
		size_t n = nds[i].ndisrupted;
		uint32_t *resolved;
		if (nds[i].state != KUBE_ND_GRANTED) {
			if (resolve_nodes(s, &nds[i], arena, &resolved, &n) != NG_OK)
				return NG_ENOMEM;
			nodes = resolved;
		}
		bool touches = false;
		for (size_t k = 0; k < n && !touches; k++)
			touches = in_sorted(scope, st.watched, nodes[k]);
		if (touches) {
			names[st.nnds] = nds[i].name;
			states[st.nnds++] =
			    nds[i].state == KUBE_ND_GRANTED ? KUBE_ND_GRANTED : KUBE_ND_PENDING;
		}
	}
	st.nd_names = names;
	st.nd_states = states;
	*ret = st;
	return NG_OK;
}

ng_status pol_verdicts_json(const struct kube_snapshot *s, const struct pol_budget_verdict *v,
			    size_t n, struct ng_buf *b)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	ng_status st = ng_buf_puts(b, "[");
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		const char *kind = v[i].kind == KUBE_RES_NDBS ? "NodeDisruptionBudget"
							      : "ApplicationDisruptionBudget";
		st = ng_buf_puts(b, i ? ",{\"reference\":{\"kind\":" : "{\"reference\":{\"kind\":");
		st = st ? st : ng_buf_json_str(b, kind, strlen(kind));
		if (st == NG_OK && v[i].ns != NG_INTERN_NONE) {
			size_t len;
			const char *ns = ng_intern_str(pool, v[i].ns, &len);
			st = ng_buf_puts(b, ",\"namespace\":");
			st = st ? st : ng_buf_json_str(b, ns, len);
		}
		size_t len;
		const char *name = ng_intern_str(pool, v[i].name, &len);
		st = st ? st : ng_buf_puts(b, ",\"name\":");
		st = st ? st : ng_buf_json_str(b, name, len);
		st = st ? st
			: ng_buf_puts(b, v[i].ok ? "},\"ok\":true,\"reason\":"
						 : "},\"ok\":false,\"reason\":");
		st = st ? st : ng_buf_json_str(b, v[i].reason, strlen(v[i].reason));
		st = st ? st : ng_buf_puts(b, "}");
	}
	return st ? st : ng_buf_puts(b, "]");
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
