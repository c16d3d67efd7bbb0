#include "policy/disruption.h"
#include "policy/policy.h"

#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/cron.h"
#include "common/tz.h"
#include "common/map.h"
#include "common/intern.h"

#include <stddef.h>
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
		c.respect_pdbs = ngc->respect_pdbs;
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
	 * 250 rack budgets on 5,000 nodes cost 7.4 ms a decision.) Each scope also keeps how many
	 * of its nodes are disrupted, counted once when it is computed and kept up to date by
	 * every grant, so a decision never walks a budget's nodes: a pool-wide budget over 5,000
	 * nodes cost a decision 54-75 us when it did. */
	struct ng_arena *arena; /* NULL until a scope is first needed */
	struct bscope *ndb, *adb;
	size_t nndb, nadb;
	/* NDBs by one In requirement of their selector: (key << 32 | value) -> the first link of
	 * a list of the NDBs requiring it, so the budgets of a node are found from its labels.
	 * NDBs without such a requirement (`{}`, Exists, NotIn) are listed in scan and tried on
	 * every node asked about; invalid ones in invalid (they fail every request). */
	struct ng_map ndb_by_label;
	struct budget_link *ndb_links;
	uint32_t *ndb_scan, *ndb_invalid;
	size_t nndb_scan, nndb_invalid;
	uint32_t *adb_invalid; /* invalid ADBs */
	size_t nadb_invalid;
	bool scopes_ok;        /* scopes_init() done */
	bool adb_indexed;      /* every ADB scope computed, and by_node built */
	uint32_t *by_node_off; /* node i runs ADBs by_node[by_node_off[i] .. by_node_off[i+1]) */
	uint32_t *by_node;
	/* Held nodes by class for the control-plane rule (step 6), per holder too, so a
	 * decision subtracts its own request's nodes instead of walking every node. Counted for
	 * one way of recognising control-plane nodes (cp_sel, cp_key), recounted if asked with
	 * another. */
	bool cp_ready;
	const struct kube_selector *cp_sel;
	uint32_t cp_key;
	size_t held_cp, held_other;
	struct ng_map holder_cp, holder_other; /* holder -> its held nodes of each class */
	/* The requests (not Rejected) by node name, for budget statuses: built on the first
	 * status, so a status pass resolves each request's nodes once, not once per budget
	 * (2,450 budgets and 1,000 pending requests took 600 ms a pass). nd_by_node maps a node
	 * name to the first link of its list; nd_seen[i] == nd_gen marks request i as found
	 * for the status being computed. */
	bool nd_indexed;
	struct ng_map nd_by_node;
	struct budget_link *nd_links;
	uint32_t *nd_seen, nd_gen;
};

/* One entry of a list of budgets (ndb_by_label, and the ADBs by pod label while scopes are
 * computed), or of requests (nd_by_node: budget is then a request's index). */
struct budget_link {
	uint32_t budget, next; /* next: index of the next link, or UINT32_MAX */
};

/* A budget's scope in a snapshot. */
struct bscope {
	const uint32_t *names;  /* node name ids (ADB: sorted by id; NDB: in node order) */
	const uint32_t *idx;    /* NDB: the same nodes' indexes into kube_snapshot_nodes() */
	const uint8_t *unavail; /* NDB: per node, NotReady, cordoned or carrying a taint target */
	size_t n, unavailable;  /* nodes; NDB: how many are unavailable */
	/* Scope nodes disrupted now: NDB, held or (counting unavailable nodes) unavailable; ADB,
	 * held. Kept by pol_ledger_grant(). */
	size_t disrupted;
	uint32_t lost_pvc; /* ADB: a selected PVC in phase Lost, or NG_INTERN_NONE */
	bool ready;        /* computed */
	/* What verdicts repeat for every request on the budget, made on the first: its name as
	 * reasons start ("NodeDisruptionBudget rack1"), and its limits when they read well. */
	const char *what;
	size_t what_len;
	struct bud_limits lim;
	bool lim_ok;
	/* Where the budget's maintenance windows stand at win_at_ms (computed once per instant:
	 * a ledger outlives one instant only in simulations). */
	int64_t win_at_ms;
	bool win_ready;
	struct win {
		bool deny; /* outside every window, and spec.outsideWindows is Deny */
		const struct kube_int_or_string *limit; /* an open window's own limit, or NULL */
		int64_t next_ms;                        /* when closed: the next opening; -1 none */
		int64_t edge_ms; /* the next opening or closing of any window: limits change */
		size_t which;    /* the window open now, or the one opening next */
		/* The open window's limit read (against the budget's scope), once per instant:
		 * limit_read says max holds it. */
		bool limit_read;
		struct bud_int_or_percent max;
	} win;
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

static int cmp_u32(const void *a, const void *b);

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
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		/* Deleting a Granted request releases its nodes at once (DESIGN.md §4). */
		if (nds[i].state != KUBE_ND_GRANTED || nds[i].deleting ||
		    (nended && bsearch(&nds[i].name, ended, nended, sizeof(*ended), cmp_u32)))
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
	ng_map_finish(&l->ndb_by_label);
	ng_map_finish(&l->holder_cp);
	ng_map_finish(&l->holder_other);
	ng_map_finish(&l->nd_by_node);
	free(l->nd_links);
	free(l->nd_seen);
	free(l->held);
	ng_arena_destroy(l->arena);
	free(l);
}

static bool is_control_plane_node(const struct kube_snapshot *s, const struct kube_selector *sel,
				  uint32_t key, const struct kube_node *n);
static ng_status count_held_class(struct pol_ledger *l, uint32_t holder, bool cp);
static void ndb_counts_grant(struct pol_ledger *l, size_t i);
static void adb_counts_grant(struct pol_ledger *l, uint32_t node, const struct kube_node *k);

ng_status pol_ledger_grant(struct pol_ledger *l, uint32_t nd_name, const uint32_t *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t h;
		if (ng_map_get(&l->holders, nodes[i], &h))
			continue; /* the first holder stays */
		if (ng_map_put_grow(&l->holders, nodes[i], nd_name) != NG_OK)
			return NG_ENOMEM;
		const struct kube_node *k = kube_snapshot_find_node(l->s, nodes[i]);
		if (k) {
			size_t at = (size_t)(k - l->nodes);
			l->held[at] = 1;
			if (l->cp_ready &&
			    count_held_class(
				l, nd_name, is_control_plane_node(l->s, l->cp_sel, l->cp_key, k)) !=
				NG_OK)
				return NG_ENOMEM;
			ndb_counts_grant(l, at);
		}
		adb_counts_grant(l, nodes[i], k);
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

static bool is_control_plane_node(const struct kube_snapshot *s, const struct kube_selector *sel,
				  uint32_t key, const struct kube_node *n)
{
	uint32_t v;
	if (sel)
		return bud_selector_matches(sel, n->labels, n->nlabels, kube_snapshot_pool(s));
	return key != NG_INTERN_NONE && kube_labels_get(n->labels, n->nlabels, key, &v);
}

static bool is_control_plane(const struct kube_snapshot *s, const struct cp_match *m, uint32_t node)
{
	const struct kube_node *n = kube_snapshot_find_node(s, node);
	return n && is_control_plane_node(s, m->sel, m->key, n);
}

/* One more held node of @holder, control-plane (@cp) or not. */
static ng_status count_held_class(struct pol_ledger *l, uint32_t holder, bool cp)
{
	struct ng_map *m = cp ? &l->holder_cp : &l->holder_other;
	uint32_t c = 0;
	(void)ng_map_get(m, holder, &c);
	if (ng_map_put_grow(m, holder, c + 1) != NG_OK)
		return NG_ENOMEM;
	*(cp ? &l->held_cp : &l->held_other) += 1;
	return NG_OK;
}

/* Counts the held nodes by class for @m, once (again only when asked with another @m); grants
 * keep the counts from then on. */
static ng_status held_classes(struct pol_ledger *l, const struct cp_match *m)
{
	if (l->cp_ready && l->cp_sel == m->sel && l->cp_key == m->key)
		return NG_OK;
	ng_map_finish(&l->holder_cp);
	ng_map_finish(&l->holder_other);
	memset(&l->holder_cp, 0, sizeof(l->holder_cp));
	memset(&l->holder_other, 0, sizeof(l->holder_other));
	l->held_cp = l->held_other = 0;
	l->cp_ready = false;
	for (size_t i = 0; i < l->nnodes; i++) {
		if (!l->held[i])
			continue;
		uint32_t h = pol_ledger_holder(l, l->nodes[i].name);
		if (count_held_class(
			l, h, is_control_plane_node(l->s, m->sel, m->key, &l->nodes[i])) != NG_OK)
			return NG_ENOMEM;
	}
	l->cp_sel = m->sel;
	l->cp_key = m->key;
	l->cp_ready = true;
	return NG_OK;
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

/* A requirement of @sel that only objects labelled key=value for one of its values can meet
 * (an In, which matchLabels is): those objects are found in a label index, and only they are
 * matched. NULL when there is none. An object has one value per key, so it is found once per
 * time its value is listed (callers drop repeats). */
static const struct kube_requirement *in_requirement(const struct kube_selector *sel)
{
	for (uint16_t i = 0; sel->present && i < sel->nreqs; i++)
		if (sel->reqs[i].op == KUBE_OP_IN)
			return &sel->reqs[i];
	return NULL;
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
		const struct kube_requirement *in = in_requirement(&nd->node_selector);
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

static ng_status scopes_init(struct pol_ledger *l)
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
		const struct kube_requirement *in = in_requirement(&ndbs[k].node_selector);
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
		const struct kube_requirement *in = in_requirement(&ndbs[k].node_selector);
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
static ng_status
ndbs_of_node(struct pol_ledger *l, size_t i,
	     ng_status (*fn)(struct pol_ledger *l, size_t ndb, size_t node, void *arg), void *arg)
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
	if (l->ndb[k].ready && !(b->count_unavailable && node_unavailable(&l->nodes[i], b)))
		l->ndb[k].disrupted++;
	return NG_OK;
}

static void ndb_counts_grant(struct pol_ledger *l, size_t i)
{
	if (l->scopes_ok)
		(void)ndbs_of_node(l, i, ndb_count_one, NULL);
}

/* NodeDisruptionBudget @k's pool: its nodes, which are unavailable, and how many disrupted.
 * A selector with an In requirement is matched against the nodes carrying one of its values
 * only (the snapshot's label index), others against every node. */
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
	const struct kube_requirement *in = in_requirement(&b->node_selector);
	size_t ncand = 0;
	for (uint16_t v = 0; in && v < in->nvalues; v++) {
		size_t nc;
		(void)kube_snapshot_nodes_with_label(l->s, in->key, in->values[v], &nc);
		ncand += nc;
	}
	size_t cap = in ? ncand : l->nnodes;
	uint32_t *cand = ng_arena_alloc(l->arena, (cap ? cap : 1) * sizeof(*cand));
	uint32_t *names = ng_arena_alloc(l->arena, (cap ? cap : 1) * sizeof(*names));
	uint32_t *idx = ng_arena_alloc(l->arena, (cap ? cap : 1) * sizeof(*idx));
	uint8_t *unavail = ng_arena_alloc(l->arena, cap ? cap : 1);
	if (!cand || !names || !idx || !unavail)
		return NG_ENOMEM;
	size_t nc = 0;
	for (uint16_t v = 0; in && v < in->nvalues; v++) {
		size_t m;
		const uint32_t *c =
		    kube_snapshot_nodes_with_label(l->s, in->key, in->values[v], &m);
		if (m)
			memcpy(cand + nc, c, m * sizeof(*c));
		nc += m;
	}
	if (in) { /* in node order, as a scan would find them, each once */
		qsort(cand, nc, sizeof(*cand), cmp_u32);
		size_t u = 0;
		for (size_t j = 0; j < nc; j++)
			if (u == 0 || cand[j] != cand[u - 1])
				cand[u++] = cand[j];
		nc = u;
	} else {
		for (size_t i = 0; i < l->nnodes; i++)
			cand[i] = (uint32_t)i;
		nc = l->nnodes;
	}
	size_t n = 0, nun = 0, dis = 0;
	for (size_t j = 0; !b->b.invalid && j < nc; j++) {
		const struct kube_node *node = &l->nodes[cand[j]];
		if (!bud_selector_matches(&b->node_selector, node->labels, node->nlabels, pool))
			continue;
		unavail[n] = node_unavailable(node, b);
		nun += unavail[n];
		dis += l->held[cand[j]] || (b->count_unavailable && unavail[n]);
		idx[n] = cand[j];
		names[n++] = node->name;
	}
	*sc = (struct bscope){.names = names,
			      .idx = idx,
			      .unavail = unavail,
			      .n = n,
			      .unavailable = nun,
			      .disrupted = dis,
			      .lost_pvc = NG_INTERN_NONE,
			      .ready = true};
	return NG_OK;
}

/* A node newly held (@k its record, NULL when the snapshot has no such node): one more
 * disrupted node in every ADB watching it. */
static void adb_counts_grant(struct pol_ledger *l, uint32_t node, const struct kube_node *k)
{
	if (!l->adb_indexed)
		return;
	if (k) {
		size_t at = (size_t)(k - l->nodes);
		for (uint32_t j = l->by_node_off[at]; j < l->by_node_off[at + 1]; j++)
			l->adb[l->by_node[j]].disrupted++;
		return;
	}
	/* A pod on a node the cache does not know is watched too; rare, so looked for. */
	for (size_t a = 0; a < l->nadb; a++)
		if (in_sorted(l->adb[a].names, l->adb[a].n, node))
			l->adb[a].disrupted++;
}

/* Whether ADB @a's scope can be computed from the pods' labels alone: a podSelector with an
 * In requirement, and no pvcSelector (whose claims and volumes bud_adb_scope() follows). */
static const struct kube_requirement *adb_by_labels(const struct kube_adb *a)
{
	if (a->b.invalid || a->pvc_selector.present)
		return NULL;
	return in_requirement(&a->pod_selector);
}

/* The watched nodes of the ADBs adb_by_labels() takes, in one walk over the pods: a pod's
 * labels name the ADBs that may select it ((key, value) -> ADBs requiring it), and only those
 * are matched. The same pods as bud_adb_scope() finds (scheduled, not finished, of the
 * budget's namespace, selected), so the same nodes, sorted by id, each once. */
static ng_status adb_scopes_by_labels(struct pol_ledger *l)
{
	size_t na, npods;
	const struct kube_adb *adbs = kube_snapshot_adbs(l->s, &na);
	const struct kube_pod *pods = kube_snapshot_pods(l->s, &npods);
	struct ng_map by_label = {0};
	size_t nlinks = 0, npairs = 0, cap_pairs = 0;
	for (size_t k = 0; k < na; k++) {
		const struct kube_requirement *in = adb_by_labels(&adbs[k]);
		nlinks += in ? in->nvalues : 0;
	}
	if (nlinks == 0)
		return NG_OK;
	struct budget_link *links = calloc(nlinks, sizeof(*links));
	uint64_t *pairs = NULL; /* budget << 32 | node */
	uint32_t *off = NULL;
	ng_status st = links ? NG_OK : NG_ENOMEM;
	nlinks = 0;
	for (size_t k = 0; st == NG_OK && k < na; k++) {
		const struct kube_requirement *in = adb_by_labels(&adbs[k]);
		for (uint16_t v = 0; st == NG_OK && in && v < in->nvalues; v++)
			if (!repeated_value(in, v))
				st = link_budget(&by_label, links, &nlinks,
						 label_key(in->key, in->values[v]), (uint32_t)k);
	}
	for (size_t p = 0; st == NG_OK && p < npods; p++) {
		const struct kube_pod *pod = &pods[p];
		if (pod->node == NG_INTERN_NONE || pod->phase == KUBE_POD_SUCCEEDED ||
		    pod->phase == KUBE_POD_FAILED)
			continue;
		for (uint32_t j = 0; st == NG_OK && j < pod->nlabels; j++) {
			uint32_t at;
			if (!ng_map_get(&by_label,
					label_key(pod->labels[j].key, pod->labels[j].val), &at))
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
	/* Grouped by budget (counts, offsets, then each budget's nodes), sorted, unique. */
	off = st == NG_OK ? calloc(na + 1, sizeof(*off)) : NULL;
	uint32_t *nodes =
	    off ? ng_arena_alloc(l->arena, (npairs ? npairs : 1) * sizeof(*nodes)) : NULL;
	if (st == NG_OK && (!off || !nodes))
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
	free(pairs);
	free(links);
	ng_map_finish(&by_label);
	return st;
}

/* Every ApplicationDisruptionBudget's watched nodes, how many are held, and node -> the ADBs
 * watching it: which ADBs a request touches is only known from their scopes, so all are
 * computed together. */
static ng_status adb_index(struct pol_ledger *l)
{
	if (scopes_init(l) != NG_OK)
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

struct eval {
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	struct pol_ledger *ledger;
	const struct kube_nd *nd;
	const uint32_t *nodes;
	size_t nnodes;
	const struct kube_node **recs; /* the request's nodes' records */
	struct pol_budget_verdict *v;
	size_t nv, capv;
	bool any_failed;
	size_t nfailed, nclosed; /* failing verdicts; of them, budgets outside their windows */
	int64_t now_ms;
	int64_t wake_ms; /* the next window edge of a budget whose verdict fails; 0 none */
	struct ng_arena *arena;
	/* The namespaces with a pod on the request's nodes (sorted ids), found once per
	 * decision for the invalid ApplicationDisruptionBudgets. */
	uint32_t *ns_here;
	size_t nns_here;
	bool ns_ready;
};

static struct pol_budget_verdict *verdict(struct eval *e, enum kube_resource kind,
					  const struct kube_budget_common *b, size_t index)
{
	if (e->nv == e->capv)
		return NULL;
	struct pol_budget_verdict *v = &e->v[e->nv++];
	/* The reason is written whole by whoever fills the verdict: clearing its 320 bytes for
	 * each of a decision's hundreds of verdicts was a cost of its own. */
	memset(v, 0, offsetof(struct pol_budget_verdict, reason));
	v->reason[0] = '\0';
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
	e->nfailed++;
}

static const char *str(const struct eval *e, uint32_t id)
{
	return ng_intern_str(e->pool, id, NULL);
}

/* A reason being written: as snprintf would write it, cut short at @cap - 1 bytes, without
 * parsing a format for each of the hundreds of verdicts a decision may have. */
struct line {
	char *p;
	size_t cap, len;
};

static void put_n(struct line *b, const char *s, size_t n)
{
	if (b->len + 1 < b->cap) {
		size_t room = b->cap - 1 - b->len;
		memcpy(b->p + b->len, s, n < room ? n : room);
		b->p[b->len + (n < room ? n : room)] = '\0';
	}
	b->len += n;
}

static void put_s(struct line *b, const char *s)
{
	put_n(b, s, strlen(s));
}

/* A string literal, its length known at compile time. */
#define PUT_LIT(b, lit) put_n((b), "" lit, sizeof(lit) - 1)

static void put_i(struct line *b, int64_t v)
{
	char tmp[24], *t = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	*--t = '\0';
	do
		*--t = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--t = '-';
	put_n(b, t, (size_t)(tmp + sizeof(tmp) - 1 - t));
}

/* Applies the limits to scope @sc (its nodes, how many are disrupted, its "what") to which the
 * request adds @added more, and reports. */
static void check_counts(struct eval *e, struct pol_budget_verdict *v, const struct bscope *sc,
			 const struct bud_limits *lim, int64_t added)
{
	size_t nscope = sc->n;
	int64_t before = (int64_t)sc->disrupted;
	struct bud_check c;
	bud_check_limits(lim, (int64_t)nscope, before, added, &c);
	v->allowed = c.allowed;
	v->current = before;
	struct line b = {v->reason, sizeof(v->reason), 0};
	v->reason[0] = '\0';
	put_n(&b, sc->what, sc->what_len);
	PUT_LIT(&b, ": ");
	if (c.ok) {
		put_i(&b, before);
		PUT_LIT(&b, " of ");
		put_i(&b, c.max >= 0 ? c.max : (int64_t)nscope);
		PUT_LIT(&b, " in use, this request adds ");
		put_i(&b, added);
		return;
	}
	fail_v(e, v);
	if (c.max >= 0 && c.after > c.max) {
		put_i(&b, before);
		PUT_LIT(&b, " of ");
		put_i(&b, c.max);
		PUT_LIT(&b, " in use; this request adds ");
		put_i(&b, added);
		PUT_LIT(&b, " (limit ");
		put_i(&b, c.max);
		PUT_LIT(&b, " of ");
		put_i(&b, (int64_t)nscope);
		PUT_LIT(&b, " nodes)");
	} else {
		put_i(&b, c.min);
		PUT_LIT(&b, " of ");
		put_i(&b, (int64_t)nscope);
		PUT_LIT(&b, " nodes must stay undisrupted; ");
		put_i(&b, (int64_t)nscope - c.after);
		PUT_LIT(&b, " would remain");
	}
}

/* @sc's "what", made once: @kind then @ns/@name (@ns NG_INTERN_NONE: @name alone), cut as
 * the verdicts' 120 (NDB) or 160 (ADB) bytes would cut it. NULL when @arena is full. */
static const char *scope_what(struct eval *e, struct bscope *sc, const char *kind, uint32_t ns,
			      uint32_t name, size_t cap)
{
	if (sc->what)
		return sc->what;
	char *w = ng_arena_alloc(e->ledger->arena, cap);
	if (!w)
		return NULL;
	struct line b = {w, cap, 0};
	w[0] = '\0';
	put_s(&b, kind);
	if (ns != NG_INTERN_NONE) {
		put_s(&b, str(e, ns));
		PUT_LIT(&b, "/");
	}
	put_s(&b, str(e, name));
	sc->what = w;
	sc->what_len = b.len < cap ? b.len : cap - 1;
	return w;
}

/* A budget the request touches: its index, and how many of the request's nodes in its scope
 * are not disrupted yet (what the request adds: a node counts once). */
struct touch {
	uint32_t budget, added;
};

static int cmp_touch(const void *a, const void *b)
{
	const struct touch *x = a, *y = b;
	return x->budget < y->budget ? -1 : x->budget > y->budget;
}

/* A growing list of touches (heap). */
struct touches {
	struct touch *v;
	size_t n, cap;
};

static ng_status touch_add(struct touches *t, uint32_t budget, bool adds)
{
	if (t->n == t->cap) {
		size_t c = t->cap ? 2 * t->cap : 64;
		struct touch *g = realloc(t->v, c * sizeof(*g));
		if (!g)
			return NG_ENOMEM;
		t->v = g;
		t->cap = c;
	}
	t->v[t->n++] = (struct touch){budget, adds};
	return NG_OK;
}

/* Sorts by budget and sums each budget's entries into one. */
static void touches_group(struct touches *t)
{
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_touch);
	size_t u = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (u && t->v[u - 1].budget == t->v[i].budget)
			t->v[u - 1].added += t->v[i].added;
		else
			t->v[u++] = t->v[i];
	}
	t->n = u;
}

/* ndbs_of_node() callback: request node @i is in pool @k; it adds to it unless disrupted. */
static ng_status ndb_touch(struct pol_ledger *l, size_t k, size_t i, void *arg)
{
	size_t nb;
	const struct kube_ndb *b = &kube_snapshot_ndbs(l->s, &nb)[k];
	bool dis = l->held[i] || (b->count_unavailable && node_unavailable(&l->nodes[i], b));
	return touch_add(arg, (uint32_t)k, !dis);
}

static ng_status eval_ndb_invalid(struct eval *e, const struct kube_ndb *b, size_t index)
{
	/* Its pool is unknowable: it holds every request back until it is fixed. */
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_NDBS, &b->b, index);
	if (!v)
		return NG_ENOMEM;
	fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "NodeDisruptionBudget %s is invalid: %s",
	       str(e, b->b.name), str(e, b->b.error));
	return NG_OK;
}

/* A valid NodeDisruptionBudget whose pool holds @added undisrupted nodes of the request (and
 * maybe disrupted ones: then @added is 0). */
/* One topology domain of a budget's scope: its nodes, those disrupted now, and after the
 * request. */
struct domain {
	uint32_t value; /* the label's value id; NG_INTERN_NONE for nodes without the label */
	int64_t nodes, before, after;
	bool touched; /* the request has a node in it */
};

/* The domains of scope @sc (an NDB's, with @b's topologyKey) into @ret (arena memory); how many
 * in *@ret_n. */
static ng_status domains_of(const struct eval *e, const struct kube_ndb *b, const struct bscope *sc,
			    struct domain **ret, size_t *ret_n)
{
	size_t nn;
	const struct kube_node *nodes = kube_snapshot_nodes(e->s, &nn);
	struct domain *d = calloc(sc->n ? sc->n : 1, sizeof(*d));
	struct ng_map at;
	if (!d || ng_map_init(&at, sc->n + 1) != NG_OK) {
		free(d);
		return NG_ENOMEM;
	}
	size_t nd = 0;
	for (size_t k = 0; k < sc->n; k++) {
		const struct kube_node *n = &nodes[sc->idx[k]];
		uint32_t value = NG_INTERN_NONE, slot = 0;
		if (!kube_labels_get(n->labels, n->nlabels, b->topology_key, &value))
			value = NG_INTERN_NONE;
		if (!ng_map_get(&at, (uint64_t)value + 1, &slot)) {
			slot = (uint32_t)nd;
			d[nd++] = (struct domain){.value = value};
			ng_map_put(&at, (uint64_t)value + 1, slot); /* sized for every node */
		}
		bool was = pol_ledger_held_at(e->ledger, sc->idx[k]) ||
			   (b->count_unavailable && sc->unavail[k]);
		bool asked = in_sorted(e->nodes, e->nnodes, sc->names[k]);
		d[slot].nodes++;
		d[slot].before += was;
		d[slot].after += was || asked;
		d[slot].touched |= asked;
	}
	ng_map_finish(&at);
	*ret = d;
	*ret_n = nd;
	return NG_OK;
}

/* The topology limits of NDB @b on its scope @sc: at most maxDisruptedDomains domains with a
 * disrupted node once the request is granted, and in each domain the request touches at most
 * maxDisruptedNodesPerDomain of its nodes (a percentage of the domain, rounded up). */
static ng_status check_topology(struct eval *e, struct pol_budget_verdict *v,
				const struct kube_ndb *b, const struct bscope *sc)
{
	struct domain *d;
	size_t nd;
	if (domains_of(e, b, sc, &d, &nd) != NG_OK)
		return NG_ENOMEM;
	struct bud_int_or_percent per = {0};
	bool has_per = b->max_per_domain.set && bud_int_or_percent_from(&b->max_per_domain, e->pool,
									"", &per, NULL) == NG_OK;
	int64_t domains = 0;
	for (size_t i = 0; i < nd; i++)
		domains += d[i].after > 0;
	const char *key = str(e, b->topology_key);
	if (b->max_domains >= 0 && domains > b->max_domains) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason),
		       "%.*s: nodes of %lld %s domains would be disrupted at once (limit "
		       "maxDisruptedDomains %lld)",
		       (int)sc->what_len, sc->what, (long long)domains, key,
		       (long long)b->max_domains);
	}
	for (size_t i = 0; v->ok && has_per && i < nd; i++) {
		int64_t limit = bud_int_or_percent_scaled(&per, d[i].nodes);
		if (!d[i].touched || d[i].after <= limit)
			continue;
		fail_v(e, v);
		ng_fmt(
		    v->reason, sizeof(v->reason),
		    "%.*s: %s=%s: %lld of its %lld nodes disrupted, this request adds %lld (limit "
		    "maxDisruptedNodesPerDomain %lld)",
		    (int)sc->what_len, sc->what, key,
		    d[i].value == NG_INTERN_NONE ? "(none)" : str(e, d[i].value),
		    (long long)d[i].before, (long long)d[i].nodes,
		    (long long)(d[i].after - d[i].before), (long long)limit);
	}
	free(d);
	return NG_OK;
}

/* ---- maintenance windows ---- */

static void earliest(int64_t *at, int64_t t)
{
	if (t >= 0 && (*at < 0 || t < *at))
		*at = t;
}

/* Where @b's windows stand at @now_ms: the first open window in spec order decides the limit;
 * outside all of them the budget denies (Deny) or applies its own limits (UseDefault). */
static void windows_at(const struct kube_budget_common *b, int64_t now_ms, struct win *ret)
{
	*ret = (struct win){.next_ms = -1, .edge_ms = -1};
	bool open = false;
	for (size_t i = 0; i < b->nwindows; i++) {
		const struct kube_window *w = &b->windows[i];
		struct ng_window_at at;
		ng_window_at(&w->cron, w->tz, w->duration_ms, now_ms, &at);
		earliest(&ret->edge_ms, at.open ? at.closes_ms : at.next_open_ms);
		if (at.open && !open) {
			open = true;
			ret->limit = w->limit.set ? &w->limit : NULL;
			ret->which = i;
		} else if (!at.open && !open && at.next_open_ms >= 0 &&
			   (ret->next_ms < 0 || at.next_open_ms < ret->next_ms)) {
			ret->next_ms = at.next_open_ms;
			ret->which = i;
		}
	}
	if (open)
		ret->next_ms = -1;
	ret->deny = !open && b->nwindows && !b->outside_use_default;
}

static struct win *scope_windows(struct bscope *sc, const struct kube_budget_common *b,
				 int64_t now_ms)
{
	if (!sc->win_ready || sc->win_at_ms != now_ms) {
		windows_at(b, now_ms, &sc->win);
		sc->win_at_ms = now_ms;
		sc->win_ready = true;
	}
	return &sc->win;
}

/* A verdict of a budget with windows failed: its limits change at the next window edge, when
 * the decision may change by the clock alone. */
static void wake_at_edge(struct eval *e, const struct pol_budget_verdict *v, const struct win *w)
{
	if (w && !v->ok && w->edge_ms > e->now_ms && (!e->wake_ms || w->edge_ms < e->wake_ms))
		e->wake_ms = w->edge_ms;
}

/* Fails @v because @b (named @what) is outside its windows, saying when the next one opens. */
static void fail_closed(struct eval *e, struct pol_budget_verdict *v, const char *what,
			const struct kube_budget_common *b, const struct win *w)
{
	fail_v(e, v);
	e->nclosed++;
	if (w->next_ms < 0) {
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s is outside its maintenance windows, and none opens again", what);
		return;
	}
	const struct kube_window *x = &b->windows[w->which];
	char at[32], local[32];
	ng_format_rfc3339_ms(w->next_ms, at);
	ng_format_rfc3339_ms(w->next_ms + (int64_t)ng_tz_offset(x->tz, w->next_ms / 1000) * 1000,
			     local);
	/* "2026-11-30T22:00": the local wall time, without seconds. */
	local[16] = '\0';
	ng_fmt(v->reason, sizeof(v->reason),
	       "%s is outside its maintenance windows; the next opens at %s (%s %s, schedule "
	       "\"%s\")",
	       what, at, local, str(e, x->zone), str(e, x->schedule));
	wake_at_edge(e, v, w);
}

/* @lim with an open window's own maximum in place of @base's, read once per instant (a limit
 * that does not read is read again, for its message). False (and @err) when it does not
 * read. */
static bool window_limits(struct eval *e, struct win *w, struct bud_limits *lim, const char *field,
			  struct ng_err *err)
{
	if (!w->limit)
		return true;
	lim->has_max = true;
	if (w->limit_read) {
		lim->max = w->max;
		return true;
	}
	if (bud_int_or_percent_from(w->limit, e->pool, field, &lim->max, err) != NG_OK)
		return false;
	w->max = lim->max;
	w->limit_read = true;
	return true;
}

static ng_status eval_ndb(struct eval *e, const struct kube_ndb *b, size_t index, int64_t added)
{
	if (!type_applies(&b->b, e->nd->type))
		return NG_OK;
	const struct bscope *csc;
	if (ndb_scope(e->ledger, index, &csc) != NG_OK)
		return NG_ENOMEM;
	struct bscope *sc = &e->ledger->ndb[index];
	const char *what =
	    scope_what(e, sc, "NodeDisruptionBudget ", NG_INTERN_NONE, b->b.name, 120);
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_NDBS, &b->b, index);
	if (!v || !what)
		return NG_ENOMEM;
	if (b->b.frozen) {
		fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is frozen: %s", what,
		       str(e, b->b.freeze_reason));
		return NG_OK;
	}
	struct win *w = b->b.nwindows ? scope_windows(sc, &b->b, e->now_ms) : NULL;
	if (w && w->deny && added > 0) {
		fail_closed(e, v, what, &b->b, w);
		return NG_OK;
	}
	struct ng_err err = {0};
	if (!sc->lim_ok) {
		struct bud_limits lim = {0};
		if (b->max_disrupted.set) {
			lim.has_max = true;
			if (bud_int_or_percent_from(&b->max_disrupted, e->pool,
						    "spec.maxDisruptedNodes", &lim.max,
						    &err) != NG_OK)
				goto bad;
		}
		if (b->min_undisrupted.set) {
			lim.has_min = true;
			if (bud_int_or_percent_from(&b->min_undisrupted, e->pool,
						    "spec.minUndisruptedNodes", &lim.min,
						    &err) != NG_OK)
				goto bad;
		}
		if (!lim.has_max && !lim.has_min && b->topology_key == NG_INTERN_NONE) {
			(void)ng_err_set(&err, NG_EPARSE, 0,
					 "one of maxDisruptedNodes and minUndisruptedNodes is "
					 "required");
			goto bad;
		}
		if (b->max_per_domain.set &&
		    bud_int_or_percent_from(&b->max_per_domain, e->pool,
					    "spec.maxDisruptedNodesPerDomain",
					    &(struct bud_int_or_percent){0}, &err) != NG_OK)
			goto bad;
		sc->lim = lim;
		sc->lim_ok = true;
	}
	/* An open window's maximum replaces the budget's own for this instant only. */
	struct bud_limits lim = sc->lim;
	if (w && !window_limits(e, w, &lim, "spec.windows.maxDisruptedNodes", &err))
		goto bad;
	check_counts(e, v, sc, &lim, added);
	ng_status st =
	    v->ok && b->topology_key != NG_INTERN_NONE ? check_topology(e, v, b, sc) : NG_OK;
	wake_at_edge(e, v, w);
	return st;
bad:
	fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
	return NG_OK;
}

static void adb_what(const struct eval *e, const struct kube_adb *a, char *what, size_t cap)
{
	ng_fmt(what, cap, "ApplicationDisruptionBudget %s/%s", str(e, a->b.ns), str(e, a->b.name));
}

/* e->ns_here, once per decision: the pods on the request's nodes, not every invalid budget's
 * namespace's pods for each (200 invalid budgets of a namespace of 5,000 pods walked a million
 * pods per decision). */
static ng_status namespaces_here(struct eval *e)
{
	if (e->ns_ready)
		return NG_OK;
	size_t total = 0, nall;
	for (size_t i = 0; i < e->nnodes; i++) {
		size_t np;
		(void)kube_snapshot_pods_on_node(e->s, e->nodes[i], &np);
		total += np;
	}
	uint32_t *ns = ng_arena_alloc(e->arena, (total ? total : 1) * sizeof(*ns));
	if (!ns)
		return NG_ENOMEM;
	const struct kube_pod *pods = kube_snapshot_pods(e->s, &nall);
	size_t n = 0;
	for (size_t i = 0; i < e->nnodes; i++) {
		size_t np;
		const uint32_t *on = kube_snapshot_pods_on_node(e->s, e->nodes[i], &np);
		for (size_t k = 0; k < np; k++)
			ns[n++] = pods[on[k]].ns;
	}
	qsort(ns, n, sizeof(*ns), cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || ns[u - 1] != ns[i])
			ns[u++] = ns[i];
	e->ns_here = ns;
	e->nns_here = u;
	e->ns_ready = true;
	return NG_OK;
}

static ng_status eval_adb_invalid(struct eval *e, const struct kube_adb *a, size_t index)
{
	/* Which pods it means is unknowable: hold back requests touching any node that runs a
	 * pod of its namespace. */
	if (namespaces_here(e) != NG_OK)
		return NG_ENOMEM;
	if (!in_sorted(e->ns_here, e->nns_here, a->b.ns))
		return NG_OK;
	char what[160];
	adb_what(e, a, what, sizeof(what));
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_ADBS, &a->b, index);
	if (!v)
		return NG_ENOMEM;
	fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, str(e, a->b.error));
	return NG_OK;
}

/* A valid ApplicationDisruptionBudget watching @added undisrupted nodes of the request (and
 * maybe disrupted ones). */
static ng_status eval_adb(struct eval *e, const struct kube_adb *a, size_t index, int64_t added)
{
	if (!type_applies(&a->b, e->nd->type))
		return NG_OK;
	struct bscope *sc = &e->ledger->adb[index];
	const char *what =
	    scope_what(e, sc, "ApplicationDisruptionBudget ", a->b.ns, a->b.name, 160);
	struct pol_budget_verdict *v = verdict(e, KUBE_RES_ADBS, &a->b, index);
	if (!v || !what)
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
	struct ng_err err = {0};
	struct win *w = a->b.nwindows ? scope_windows(sc, &a->b, e->now_ms) : NULL;
	if (w && w->deny && added > 0) {
		fail_closed(e, v, what, &a->b, w);
		return NG_OK;
	}
	if (!sc->lim_ok) {
		struct bud_limits lim = {.has_max = true};
		if (bud_int_or_percent_from(&a->max_disruptions, e->pool, "spec.maxDisruptions",
					    &lim.max, &err) != NG_OK)
			goto bad;
		sc->lim = lim;
		sc->lim_ok = true;
	}
	/* An open window's maximum replaces the budget's own for this instant only. */
	struct bud_limits lim = sc->lim;
	if (w && !window_limits(e, w, &lim, "spec.windows.maxDisruptions", &err))
		goto bad;
	check_counts(e, v, sc, &lim, added);
	wake_at_edge(e, v, w);
	return NG_OK;
bad:
	fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
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

/* Nodes held by requests other than the one evaluated: control-plane and others, from the
 * ledger's counts (held_classes() has counted them for @cpm). */
static void held_by_others(const struct eval *e, size_t *ret_cp, size_t *ret_other)
{
	const struct pol_ledger *l = e->ledger;
	uint32_t own_cp = 0, own_other = 0;
	(void)ng_map_get(&l->holder_cp, e->nd->name, &own_cp);
	(void)ng_map_get(&l->holder_other, e->nd->name, &own_other);
	*ret_cp = l->held_cp - own_cp;
	*ret_other = l->held_other - own_other;
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
	held_by_others(e, &held_cp, &held_other);
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

/* Step 6b: a node of the request that says nodegate.io/do-not-disrupt, or holds a pod that
 * does, keeps the request Pending (with retry) or Rejects it, unless its type is one of
 * NodeGateConfig doNotDisruptOverrideTypes. */
static bool step6b_do_not_disrupt(const struct eval *e, int64_t now_wall_ms,
				  struct pol_gate_decision *d)
{
	if (pol_dnd_overridden(e->s, e->nd->type))
		return false;
	char why[POL_REASON_BYTES - 64];
	for (size_t i = 0; i < e->nnodes; i++) {
		const struct kube_node *n = kube_snapshot_find_node(e->s, e->nodes[i]);
		if (!n || !pol_node_held_by_do_not_disrupt(e->s, n, now_wall_ms, why, sizeof(why)))
			continue;
		d->outcome = e->nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
		ng_fmt(d->reason, sizeof(d->reason), "%s", why);
		return true;
	}
	return false;
}

/* The budgets the request's nodes are in (@ndb, @adb: grouped by budget, with what the
 * request adds to each), and the request's node records into e->recs. */
static ng_status touched_budgets(struct eval *e, struct ng_arena *arena, struct touches *ndb,
				 struct touches *adb)
{
	struct pol_ledger *l = e->ledger;
	const struct kube_node **recs =
	    ng_arena_alloc(arena, (e->nnodes ? e->nnodes : 1) * sizeof(*recs));
	if (!recs || scopes_init(l) != NG_OK || (l->nadb && adb_index(l) != NG_OK))
		return NG_ENOMEM;
	e->recs = recs;
	for (size_t i = 0; i < e->nnodes; i++) {
		recs[i] = kube_snapshot_find_node(e->s, e->nodes[i]);
		if (!recs[i])
			continue;
		size_t at = (size_t)(recs[i] - l->nodes);
		if (ndbs_of_node(l, at, ndb_touch, ndb) != NG_OK)
			return NG_ENOMEM;
		for (uint32_t k = l->nadb ? l->by_node_off[at] : 0;
		     l->nadb && k < l->by_node_off[at + 1]; k++)
			if (touch_add(adb, l->by_node[k], !l->held[at]) != NG_OK)
				return NG_ENOMEM;
	}
	touches_group(ndb);
	touches_group(adb);
	return NG_OK;
}

/* Step 7: every impacted budget for the request's type (frozen, limits, fail-closed when
 * unreadable) gets a verdict in e->v; every failure is listed, not only the first. Budgets
 * are found from the request's nodes (node -> budgets), and their disrupted nodes are the
 * ledger's counts: nothing here walks a budget's scope. Verdicts come in the snapshot's order,
 * NDBs then ADBs, invalid ones among them. */
static ng_status step7_budgets(struct eval *e, struct ng_arena *arena)
{
	size_t nndb, nadb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(e->s, &nndb);
	const struct kube_adb *adbs = kube_snapshot_adbs(e->s, &nadb);
	struct pol_ledger *l = e->ledger;
	struct touches tn = {0}, ta = {0};
	ng_status st = touched_budgets(e, arena, &tn, &ta);
	if (st == NG_OK) {
		e->capv = tn.n + ta.n + l->nndb_invalid + l->nadb_invalid;
		e->v = ng_arena_alloc(arena, (e->capv ? e->capv : 1) * sizeof(*e->v));
		st = e->v ? NG_OK : NG_ENOMEM;
	}
	for (size_t i = 0, j = 0; st == NG_OK && (i < tn.n || j < l->nndb_invalid);) {
		if (j < l->nndb_invalid && (i == tn.n || l->ndb_invalid[j] < tn.v[i].budget)) {
			st = eval_ndb_invalid(e, &ndbs[l->ndb_invalid[j]], l->ndb_invalid[j]);
			j++;
		} else {
			st = eval_ndb(e, &ndbs[tn.v[i].budget], tn.v[i].budget, tn.v[i].added);
			i++;
		}
	}
	for (size_t i = 0, j = 0; st == NG_OK && (i < ta.n || j < l->nadb_invalid);) {
		if (j < l->nadb_invalid && (i == ta.n || l->adb_invalid[j] < ta.v[i].budget)) {
			st = eval_adb_invalid(e, &adbs[l->adb_invalid[j]], l->adb_invalid[j]);
			j++;
		} else {
			st = eval_adb(e, &adbs[ta.v[i].budget], ta.v[i].budget, ta.v[i].added);
			i++;
		}
	}
	(void)nndb;
	(void)nadb;
	free(tn.v);
	free(ta.v);
	return st;
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
/* Whether pod @p is one a drain moves, and one a PodDisruptionBudget counts as healthy. */
static bool pdb_counts(const struct kube_pod *p)
{
	return (p->flags & KUBE_POD_READY) &&
	       !(p->flags & (KUBE_POD_TERMINATING | KUBE_POD_DAEMONSET | KUBE_POD_MIRROR)) &&
	       p->phase == KUBE_POD_RUNNING;
}

static bool pdb_selects(const struct eval *e, const struct kube_pdb *b, const struct kube_pod *p)
{
	return bud_selector_matches(&b->selector, p->labels, p->nlabels, e->pool);
}

/* The PodDisruptionBudgets (indexes) covering a healthy pod on the request's nodes, each once,
 * into @ret (arena memory). */
static ng_status pdbs_touched(const struct eval *e, struct ng_arena *arena, uint32_t **ret,
			      size_t *ret_n)
{
	size_t npdb, npods, cap = 16, n = 0;
	const struct kube_pdb *pdbs = kube_snapshot_pdbs(e->s, &npdb);
	const struct kube_pod *pods = kube_snapshot_pods(e->s, &npods);
	uint32_t *hit = npdb ? malloc(cap * sizeof(*hit)) : NULL;
	if (npdb && !hit)
		return NG_ENOMEM;
	for (size_t i = 0; npdb && i < e->nnodes; i++) {
		size_t np;
		const uint32_t *on = kube_snapshot_pods_on_node(e->s, e->nodes[i], &np);
		for (size_t k = 0; k < np; k++) {
			const struct kube_pod *p = &pods[on[k]];
			size_t nb;
			const uint32_t *in_ns =
			    pdb_counts(p) ? kube_snapshot_pdbs_in_ns(e->s, p->ns, &nb) : NULL;
			for (size_t j = 0; in_ns && j < nb; j++) {
				bool seen = false;
				for (size_t x = 0; x < n && !seen; x++)
					seen = hit[x] == in_ns[j];
				if (seen || !pdb_selects(e, &pdbs[in_ns[j]], p))
					continue;
				if (n == cap) {
					uint32_t *more = ng_array_grow(hit, &cap, n, sizeof(*hit));
					if (!more) {
						free(hit);
						return NG_ENOMEM;
					}
					hit = more;
				}
				hit[n++] = in_ns[j];
			}
		}
	}
	uint32_t *out = n ? ng_arena_alloc(arena, n * sizeof(*out)) : NULL;
	if (n && !out) {
		free(hit);
		return NG_ENOMEM;
	}
	if (n)
		memcpy(out, hit, n * sizeof(*out));
	free(hit);
	*ret = out;
	*ret_n = n;
	return NG_OK;
}

/* Step 7b (NodeGateConfig respectPodDisruptionBudgets): for each PodDisruptionBudget covering a
 * healthy pod on the request's nodes, the healthy pods it covers on those nodes and on nodes
 * granted to other requests (a drain will evict them) must fit in its status.disruptionsAllowed;
 * else the budget fails, so the request waits instead of being granted and stalling its drain. */
static ng_status step7b_pdbs(struct eval *e, const struct pol_gate_config *cfg,
			     struct ng_arena *arena)
{
	uint32_t *hit = NULL;
	size_t nhit = 0;
	if (!cfg->respect_pdbs)
		return NG_OK;
	ng_status st = pdbs_touched(e, arena, &hit, &nhit);
	if (st != NG_OK || nhit == 0)
		return st;
	struct pol_budget_verdict *v = ng_arena_alloc(arena, (e->nv + nhit) * sizeof(*v));
	if (!v)
		return NG_ENOMEM;
	if (e->nv)
		memcpy(v, e->v, e->nv * sizeof(*v));
	e->v = v;
	e->capv = e->nv + nhit;
	size_t npdb, npods;
	const struct kube_pdb *pdbs = kube_snapshot_pdbs(e->s, &npdb);
	const struct kube_pod *pods = kube_snapshot_pods(e->s, &npods);
	for (size_t h = 0; h < nhit; h++) {
		const struct kube_pdb *b = &pdbs[hit[h]];
		size_t np;
		const uint32_t *in_ns = kube_snapshot_pods_in_ns(e->s, b->ns, &np);
		int64_t here = 0, granted = 0;
		for (size_t k = 0; k < np; k++) {
			const struct kube_pod *p = &pods[in_ns[k]];
			if (p->node == NG_INTERN_NONE || !pdb_counts(p) || !pdb_selects(e, b, p))
				continue;
			uint32_t holder = pol_ledger_holder(e->ledger, p->node);
			if (in_sorted(e->nodes, e->nnodes, p->node))
				here++;
			else if (holder != NG_INTERN_NONE && holder != e->nd->name)
				granted++;
		}
		struct pol_budget_verdict *x = &e->v[e->nv++];
		memset(x, 0, offsetof(struct pol_budget_verdict, reason));
		x->kind = KUBE_RES_PDBS;
		x->ns = b->ns;
		x->name = b->name;
		x->index = hit[h];
		x->ok = here + granted <= b->disruptions_allowed;
		x->allowed = b->disruptions_allowed;
		x->current = granted;
		ng_fmt(x->reason, sizeof(x->reason),
		       "PodDisruptionBudget %s/%s%s: %lld healthy pods on this request's nodes and "
		       "%lld "
		       "on nodes granted before, disruptionsAllowed %lld (currentHealthy %lld, "
		       "desiredHealthy %lld)",
		       str(e, b->ns), str(e, b->name), b->invalid ? " (selector unreadable)" : "",
		       (long long)here, (long long)granted, (long long)b->disruptions_allowed,
		       (long long)b->current_healthy, (long long)b->desired_healthy);
		if (!x->ok)
			fail_v(e, x);
	}
	return NG_OK;
}

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
	/* A request that only waits for a maintenance window waits, retry or not. */
	d->only_windows = e->nfailed == e->nclosed;
	d->outcome = e->nd->retry || d->only_windows ? POL_GATE_PENDING : POL_GATE_REJECT;
	d->wake_wall_ms = e->wake_ms;
}

ng_status pol_evaluate_disruption(const struct kube_snapshot *s, const struct pol_gate_config *cfg,
				  struct pol_ledger *ledger, const struct kube_nd *nd,
				  int64_t now_wall_ms, struct ng_arena *arena,
				  struct pol_gate_decision *ret)
{
	struct pol_gate_decision d;
	memset(&d, 0, sizeof(d));
	struct eval e = {.s = s,
			 .pool = kube_snapshot_pool(s),
			 .ledger = ledger,
			 .nd = nd,
			 .now_ms = now_wall_ms,
			 .arena = arena};
	uint32_t *nodes = NULL;
	ng_status st = resolve_nodes(s, nd, arena, &nodes, &d.nnodes);
	if (st != NG_OK)
		return st;
	d.nodes = nodes;
	e.nodes = nodes;
	e.nnodes = d.nnodes;
	struct cp_match cpm = control_plane_match(s, cfg);
	if (cfg->serial_control_plane && held_classes(ledger, &cpm) != NG_OK)
		return NG_ENOMEM;
	if (step1_deadline(nd, now_wall_ms, &d) || step2_empty(cfg, nd, &d) ||
	    step3_paused(cfg, &d) || step4_type(&e, cfg, &d) || step5_overlap(&e, cfg, &d) ||
	    step6_control_plane(&e, cfg, &d) || step6b_do_not_disrupt(&e, now_wall_ms, &d))
		goto out;
	if ((st = step7_budgets(&e, arena)) != NG_OK || (st = step7b_pdbs(&e, cfg, arena)) != NG_OK)
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
	uint32_t *seen = calloc(nnd ? nnd : 1, sizeof(*seen));
	ng_status st = links && seen ? ng_map_init(&l->nd_by_node, 64) : NG_ENOMEM;
	for (size_t i = 0; st == NG_OK && i < nnd; i++) {
		if (nds[i].state == KUBE_ND_REJECTED)
			continue;
		const uint32_t *nodes = nds[i].disrupted;
		size_t n = nds[i].ndisrupted;
		uint32_t *resolved;
		if (nds[i].state != KUBE_ND_GRANTED) {
			ng_arena_reset(arena);
			if ((st = resolve_nodes(s, &nds[i], arena, &resolved, &n)) != NG_OK)
				break;
			nodes = resolved;
		}
		for (size_t k = 0; st == NG_OK && k < n; k++) {
			if (nlinks == cap) {
				struct budget_link *more =
				    ng_array_grow(links, &cap, nlinks, sizeof(*links));
				if (!more) {
					st = NG_ENOMEM;
					break;
				}
				links = more;
			}
			uint32_t head = UINT32_MAX;
			(void)ng_map_get(&l->nd_by_node, nodes[k], &head);
			links[nlinks] = (struct budget_link){(uint32_t)i, head};
			st = ng_map_put_grow(&l->nd_by_node, nodes[k], (uint32_t)nlinks++);
		}
	}
	if (st != NG_OK) {
		free(links);
		free(seen);
		ng_map_finish(&l->nd_by_node);
		memset(&l->nd_by_node, 0, sizeof(l->nd_by_node));
		return st;
	}
	l->nd_links = links;
	l->nd_seen = seen;
	l->nd_indexed = true;
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
	/* Requests touching the scope, as status.disruptions lists them (in the snapshot's
	 * order): found from the scope's nodes, so a budget costs its own scope. */
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
	for (size_t k = 0; k < st.watched; k++) {
		uint32_t link = UINT32_MAX;
		(void)ng_map_get(&ledger->nd_by_node, scope[k], &link);
		for (; link != UINT32_MAX; link = ledger->nd_links[link].next) {
			uint32_t i = ledger->nd_links[link].budget;
			if (ledger->nd_seen[i] == ledger->nd_gen)
				continue;
			ledger->nd_seen[i] = ledger->nd_gen;
			hit[nhit++] = i;
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

ng_status pol_verdicts_json(const struct kube_snapshot *s, const struct pol_budget_verdict *v,
			    size_t n, struct ng_buf *b)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	ng_status st = ng_buf_puts(b, "[");
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		const char *kind = v[i].kind == KUBE_RES_NDBS   ? "NodeDisruptionBudget"
				   : v[i].kind == KUBE_RES_PDBS ? "PodDisruptionBudget"
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
