/* Why things wait: the gate's and the drainer's own decisions, gathered for a person. */
#include "policy/explain.h"
#include "policy/hook.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "kube/snapshot.h"
#include "policy/drain.h"

#include <string.h>

#define QUARANTINE_LABEL "nodegate.io/quarantined"

/* ---- budgets ---- */

/* Budget @index of @kind, now, with the Granted requests that hold part of it. */
static ng_status budget_now(const struct kube_snapshot *s, struct pol_ledger *ledger,
			    enum kube_resource kind, size_t index, int64_t now_wall_ms,
			    struct ng_arena *arena, struct pol_explain_budget *ret)
{
	size_t n;
	memset(ret, 0, sizeof(*ret));
	ret->kind = kind;
	ret->index = index;
	ret->b = kind == KUBE_RES_NDBS ? &kube_snapshot_ndbs(s, &n)[index].b
				       : &kube_snapshot_adbs(s, &n)[index].b;
	ng_status st = pol_budget_status(s, ledger, kind, index, now_wall_ms, arena, &ret->st);
	if (st != NG_OK)
		return st;
	/* The scope is the ledger's, and the explanation outlives it. */
	uint32_t *scope =
	    ng_arena_alloc(arena, (ret->st.watched ? ret->st.watched : 1) * sizeof(uint32_t));
	if (!scope)
		return NG_ENOMEM;
	if (ret->st.watched)
		memcpy(scope, ret->st.nodes, ret->st.watched * sizeof(*scope));
	ret->st.nodes = scope;
	for (size_t i = 0; i < ret->st.nnds; i++)
		ret->npending += ret->st.nd_states[i] != KUBE_ND_GRANTED;
	ret->nheld = ret->st.now.nholders;
	ret->nholders = ret->nheld < POL_EXPLAIN_MAX_HOLDERS ? ret->nheld : POL_EXPLAIN_MAX_HOLDERS;
	if (ret->nholders)
		memcpy(ret->holders, ret->st.now.holders, ret->nholders * sizeof(*ret->holders));
	return NG_OK;
}

/* Every budget of @s into *@ret (NodeDisruptionBudgets first, then ApplicationDisruptionBudgets,
 * each in the snapshot's order). */
static ng_status budgets_all(const struct kube_snapshot *s, struct pol_ledger *ledger,
			     int64_t now_wall_ms, struct ng_arena *arena,
			     struct pol_explain_budget **ret, size_t *ret_n)
{
	size_t nn, na;
	(void)kube_snapshot_ndbs(s, &nn);
	(void)kube_snapshot_adbs(s, &na);
	struct pol_explain_budget *v = ng_arena_alloc(arena, (nn + na + 1) * sizeof(*v));
	if (!v)
		return NG_ENOMEM;
	for (size_t i = 0; i < nn + na; i++) {
		ng_status st = budget_now(s, ledger, i < nn ? KUBE_RES_NDBS : KUBE_RES_ADBS,
					  i < nn ? i : i - nn, now_wall_ms, arena, &v[i]);
		if (st != NG_OK)
			return st;
	}
	*ret = v;
	*ret_n = nn + na;
	return NG_OK;
}

/* The entry of @v (from budgets_all()) for verdict @vd. */
static const struct pol_explain_budget *budget_of(const struct kube_snapshot *s,
						  const struct pol_explain_budget *v,
						  const struct pol_budget_verdict *vd)
{
	size_t nn;
	(void)kube_snapshot_ndbs(s, &nn);
	return &v[vd->kind == KUBE_RES_NDBS ? vd->index : nn + vd->index];
}

/* ---- the queue ---- */

static const struct kube_condition *condition(const struct kube_nd *nd, const char *type)
{
	if (!nd->detail)
		return NULL;
	for (size_t i = 0; i < nd->detail->nconditions; i++)
		if (strcmp(nd->detail->conditions[i].type, type) == 0)
			return &nd->detail->conditions[i];
	return NULL;
}

/* The requests holding the budgets @w fails, from @bv, without repeats. */
static void wait_holders(const struct kube_snapshot *s, const struct pol_explain_budget *bv,
			 struct pol_explain_wait *w)
{
	for (size_t i = 0; i < w->d.nverdicts; i++) {
		if (w->d.verdicts[i].ok)
			continue;
		const struct pol_explain_budget *b = budget_of(s, bv, &w->d.verdicts[i]);
		for (size_t k = 0; k < b->nholders; k++) {
			bool seen = false;
			for (size_t j = 0; j < w->nholders && !seen; j++)
				seen = w->holders[j] == b->holders[k];
			if (seen)
				continue;
			if (w->nholders < POL_EXPLAIN_MAX_HOLDERS)
				w->holders[w->nholders++] = b->holders[k];
			w->nheld++;
		}
		w->nheld += b->nheld - b->nholders; /* those not named are not compared */
	}
}

/* Whether @d's grant waits for hooks: an ApplicationDisruptionBudget it impacts has a health
 * hook, or a budget of either kind has multistep hooks. */
static bool has_hooks(const struct kube_snapshot *s, const struct pol_gate_decision *d)
{
	size_t na;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
	for (size_t i = 0; i < d->nverdicts; i++)
		if ((d->verdicts[i].kind == KUBE_RES_ADBS && d->verdicts[i].index < na &&
		     adbs[d->verdicts[i].index].hook.present) ||
		    pol_hook2_budget(s, &d->verdicts[i]))
			return true;
	return false;
}

/* The Pending requests of @s in rank order, each decided as the gate's next round would. */
static ng_status queue(const struct kube_snapshot *s, struct pol_gate_config *cfg,
		       const struct pol_explain_budget *bv, int64_t now_wall_ms,
		       struct ng_arena *arena, struct pol_explain_wait **ret, size_t *ret_n)
{
	size_t n, nc = 0;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd **c = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*c));
	struct pol_explain_wait *w = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*w));
	if (!c || !w)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!nds[i].deleting &&
		    (nds[i].state == KUBE_ND_UNKNOWN || nds[i].state == KUBE_ND_PENDING))
			c[nc++] = &nds[i];
	ng_status st = pol_rank_pending(s, cfg, c, nc, arena);
	struct pol_ledger *ledger = st == NG_OK ? pol_ledger_create(s) : NULL;
	if (!ledger)
		return NG_ENOMEM;
	/* As in the gate: a request some budget prepares for holds its share. */
	st = pol_hooks_hold_preparing(s, ledger);
	uint32_t ahead[POL_EXPLAIN_MAX_HOLDERS] = {0};
	size_t nahead = 0;
	for (size_t i = 0; i < nc && st == NG_OK; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].nd = c[i];
		w[i].rank = i + 1;
		w[i].written = condition(c[i], "Granted");
		memcpy(w[i].ahead, ahead, nahead * sizeof(*ahead));
		w[i].nahead = nahead;
		st = pol_evaluate_disruption(s, cfg, ledger, c[i], now_wall_ms, arena, &w[i].d);
		if (st != NG_OK)
			break;
		if (w[i].d.outcome != POL_GATE_GRANT) {
			wait_holders(s, bv, &w[i]);
			continue;
		}
		w[i].needs_hooks = has_hooks(s, &w[i].d);
		st = pol_ledger_grant(ledger, c[i]->name, w[i].d.nodes, w[i].d.nnodes);
		if (nahead < POL_EXPLAIN_MAX_HOLDERS)
			ahead[nahead++] = c[i]->name;
	}
	pol_ledger_destroy(ledger);
	*ret = w;
	*ret_n = nc;
	return st;
}

/* ---- grants and held nodes ---- */

static void grant_of(const struct kube_nd *nd, struct pol_explain_grant *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->nd = nd;
	ret->ready = condition(nd, "Ready");
	if (nd->detail) {
		ret->granted_ms = nd->detail->granted_ms > 0 ? nd->detail->granted_ms : 0;
		ret->ends_ms = nd->detail->expires_ms;
	}
}

static ng_status grants_all(const struct kube_snapshot *s, struct ng_arena *arena,
			    struct pol_explain_status *ret)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	ret->grants = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*ret->grants));
	if (!ret->grants)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (nds[i].state == KUBE_ND_GRANTED)
			grant_of(&nds[i], &ret->grants[ret->ngrants++]);
		ret->nrejected += nds[i].state == KUBE_ND_REJECTED;
	}
	return NG_OK;
}

static ng_status held_all(const struct kube_snapshot *s, struct ng_arena *arena,
			  struct pol_explain_status *ret)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	uint32_t qkey = ng_intern_find(pool, QUARANTINE_LABEL, strlen(QUARANTINE_LABEL));
	size_t n;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &n);
	ret->held = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*ret->held));
	if (!ret->held)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t by = NG_INTERN_NONE;
		bool q = qkey != NG_INTERN_NONE &&
			 kube_labels_get(nodes[i].labels, nodes[i].nlabels, qkey, &by);
		if (!q && !nodes[i].note.present)
			continue;
		ret->held[ret->nheld++] = (struct pol_explain_held_node){&nodes[i], q, by};
	}
	return NG_OK;
}

ng_status pol_explain_status(const struct kube_snapshot *s, int64_t now_wall_ms,
			     struct ng_arena *arena, struct pol_explain_status *ret)
{
	memset(ret, 0, sizeof(*ret));
	pol_gate_config_from(s, &ret->cfg);
	ret->ngc = kube_snapshot_config(s);
	ret->excluded = pol_excluded_at(ret->cfg.exclusions, ret->cfg.nexclusions, now_wall_ms,
					&ret->excluded_until, &ret->excluded_reason);
	struct pol_ledger *ledger = pol_ledger_create(s);
	if (!ledger)
		return NG_ENOMEM;
	ng_status st = budgets_all(s, ledger, now_wall_ms, arena, &ret->budgets, &ret->nbudgets);
	pol_ledger_destroy(ledger);
	if (st == NG_OK)
		st = queue(s, &ret->cfg, ret->budgets, now_wall_ms, arena, &ret->waits,
			   &ret->nwaits);
	if (st == NG_OK)
		st = grants_all(s, arena, ret);
	if (st == NG_OK)
		st = held_all(s, arena, ret);
	return st;
}

/* ---- one request or one node ---- */

static bool has_id(const uint32_t *v, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* The budgets of @bv (@nb) whose scope holds one of @nodes (@n names). */
static ng_status budgets_covering(const struct pol_explain_budget *bv, size_t nb,
				  const uint32_t *nodes, size_t n, struct ng_arena *arena,
				  struct pol_explain_why *ret)
{
	ret->budgets = ng_arena_alloc(arena, (nb ? nb : 1) * sizeof(*ret->budgets));
	if (!ret->budgets)
		return NG_ENOMEM;
	for (size_t i = 0; i < nb; i++) {
		bool hit = false;
		for (size_t k = 0; k < n && !hit; k++)
			hit = has_id(bv[i].st.nodes, bv[i].st.watched, nodes[k]);
		if (hit)
			ret->budgets[ret->nbudgets++] = bv[i];
	}
	return NG_OK;
}

static const char *action_str(enum pol_drain_pod c)
{
	switch (c) {
	case POL_DRAIN_SKIP_FINISHED:
		return "stays (finished)";
	case POL_DRAIN_SKIP_DAEMONSET:
		return "stays (DaemonSet)";
	case POL_DRAIN_SKIP_MIRROR:
		return "stays (static pod)";
	case POL_DRAIN_SKIP_SELF:
		return "stays (nodegate)";
	case POL_DRAIN_SKIP_UNSELECTED:
		return "stays (not selected)";
	case POL_DRAIN_SKIP_RULE:
		return "stays (skip)";
	case POL_DRAIN_WAIT_COMPLETED:
		return "waited for to complete (wait-completed)";
	case POL_DRAIN_UNDECIDED:
		return "not decided (its namespace's labels are unknown here)";
	case POL_DRAIN_BLOCK_NO_CONTROLLER:
		return "blocks the drain (no controller; set force)";
	case POL_DRAIN_BLOCK_EMPTYDIR:
		return "blocks the drain (emptyDir; set deleteEmptyDir)";
	case POL_DRAIN_EVICT:
		break;
	}
	return "to evict";
}

/* What a namespace's labels are known to be without reading the namespace: the label
 * kubernetes.io/metadata.name the API server keeps on every namespace, valued with its name. */
struct ns_name_labels {
	const struct ng_intern *pool;
	struct kube_label label;
};

static bool ns_name_label(void *ctx, uint32_t ns, const struct kube_label **ret, uint16_t *ret_n)
{
	struct ns_name_labels *l = ctx;
	static const char key[] = "kubernetes.io/metadata.name";
	l->label = (struct kube_label){ng_intern_find(l->pool, key, sizeof(key) - 1), ns};
	*ret = &l->label;
	*ret_n = 1;
	return true;
}

/* The batch the drain of @nd is at (as the drainer's survey finds it) into ret->drain_batch;
 * *@ret_order its order, *@ret_any whether there is one. */
static ng_status batch_of(const struct kube_snapshot *s, const struct kube_nd *nd,
			  const struct pol_drain_rules *rules, int64_t now_wall_ms,
			  struct ng_arena *arena, struct pol_explain_why *ret, int32_t *ret_order,
			  bool *ret_any)
{
	const struct kube_node **nodes =
	    ng_arena_alloc(arena, (nd->ndisrupted ? nd->ndisrupted : 1) * sizeof(*nodes));
	struct pol_drain_survey *sv = ng_arena_alloc(arena, sizeof(*sv));
	if (!nodes || !sv)
		return NG_ENOMEM;
	size_t nn = 0;
	for (size_t i = 0; i < nd->ndisrupted; i++)
		if ((nodes[nn] = kube_snapshot_find_node(s, nd->disrupted[i])))
			nn++;
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	const struct pol_drain_context cx = {rules, nd->detail->drain.strategy != KUBE_DRAIN_NONE,
					     ngc && !ngc->invalid ? &ngc->protected_job_pods : NULL,
					     nd, now_wall_ms};
	ng_status st = pol_drain_survey(s, nodes, nn, &cx, arena, sv);
	if (st != NG_OK)
		return st;
	pol_drain_progress(sv, ret->drain_batch, sizeof(ret->drain_batch));
	*ret_order = sv->batch_order;
	*ret_any = sv->nchosen > 0;
	return NG_OK;
}

/* The pods still on @nd's nodes, with what the drain does with each and what holds it. */
static ng_status pods_left(const struct kube_snapshot *s, const struct kube_nd *nd,
			   int64_t now_wall_ms, struct ng_arena *arena, struct pol_explain_why *ret)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct pol_drain_rules rules;
	struct kube_selector sel;
	struct ng_err err = {0};
	if (pol_drain_rules_from(pool, &nd->detail->drain, arena, &rules, &sel, &err) != NG_OK) {
		ng_fmt(ret->drain_stop, sizeof(ret->drain_stop), "%s", err.msg);
		return err.status == NG_ENOMEM ? NG_ENOMEM : NG_OK;
	}
	struct ns_name_labels nsl = {pool, {0}};
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	pol_drain_rules_config(&rules, ngc, ns_name_label, &nsl);
	int32_t batch = 0;
	bool any = false;
	ng_status st = batch_of(s, nd, &rules, now_wall_ms, arena, ret, &batch, &any);
	if (st != NG_OK) {
		pol_drain_rules_put(&rules);
		return st;
	}
	size_t np, total = 0;
	const struct kube_pod *pods = kube_snapshot_pods(s, &np);
	for (size_t i = 0; i < nd->ndisrupted; i++)
		(void)kube_snapshot_pods_on_node(s, nd->disrupted[i], &np), total += np;
	ret->pods = ng_arena_alloc(arena, (total ? total : 1) * sizeof(*ret->pods));
	if (!ret->pods) {
		pol_drain_rules_put(&rules);
		return NG_ENOMEM;
	}
	for (size_t i = 0; i < nd->ndisrupted; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(s, nd->disrupted[i], &k);
		for (size_t j = 0; j < k; j++) {
			struct pol_explain_pod *p = &ret->pods[ret->npods++];
			p->pod = &pods[idx[j]];
			int32_t order = 0;
			enum pol_drain_pod c =
			    pol_drain_classify_ordered(pool, p->pod, &rules, &order, NULL, 0);
			p->action = action_str(c);
			p->blocker[0] = '\0';
			p->order = order;
			if (c == POL_DRAIN_EVICT && any && order > batch)
				p->action = "to evict in a later batch";
			else if (c == POL_DRAIN_EVICT)
				pol_drain_pod_blocker(s, nd, p->pod, now_wall_ms, p->blocker,
						      sizeof(p->blocker));
		}
	}
	pol_drain_rules_put(&rules);
	return NG_OK;
}

/* The request @nd: its place in the queue or its grant, and the budgets of its nodes. */
static ng_status why_request(const struct kube_snapshot *s, const struct pol_explain_status *all,
			     const struct kube_nd *nd, int64_t now_wall_ms, struct ng_arena *arena,
			     struct pol_explain_why *ret)
{
	ret->nd = nd;
	ret->paused = all->cfg.paused;
	for (size_t i = 0; i < all->nwaits; i++)
		if (all->waits[i].nd == nd) {
			ret->wait = all->waits[i];
			ret->waiting = true;
		}
	const uint32_t *nodes = nd->disrupted;
	size_t n = nd->ndisrupted;
	if (ret->waiting && ret->wait.d.nnodes) {
		nodes = ret->wait.d.nodes;
		n = ret->wait.d.nnodes;
	} else if (!n) {
		nodes = nd->node_names;
		n = nd->nnode_names;
	}
	ng_status st = budgets_covering(all->budgets, all->nbudgets, nodes, n, arena, ret);
	if (st != NG_OK || nd->state != KUBE_ND_GRANTED)
		return st;
	ret->granted = true;
	grant_of(nd, &ret->grant);
	if (nd->detail && nd->detail->drain.present)
		st = pods_left(s, nd, now_wall_ms, arena, ret);
	return st;
}

/* The node @node: the requests naming it, its holder's drain, the budgets covering it. */
static ng_status why_node(const struct kube_snapshot *s, const struct pol_explain_status *all,
			  const struct kube_node *node, int64_t now_wall_ms, struct ng_arena *arena,
			  struct pol_explain_why *ret)
{
	ret->node = node;
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	ret->requests = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*ret->requests));
	if (!ret->requests)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (has_id(nds[i].disrupted, nds[i].ndisrupted, node->name) ||
		    has_id(nds[i].node_names, nds[i].nnode_names, node->name))
			ret->requests[ret->nrequests++] = &nds[i];
	ng_status st = budgets_covering(all->budgets, all->nbudgets, &node->name, 1, arena, ret);
	const struct kube_nd *holder = kube_snapshot_node_grant(s, node->name);
	if (st != NG_OK || !holder)
		return st;
	ret->nd = holder;
	ret->granted = true;
	grant_of(holder, &ret->grant);
	if (holder->detail && holder->detail->drain.present)
		st = pods_left(s, holder, now_wall_ms, arena, ret);
	return st;
}

ng_status pol_explain_why(const struct kube_snapshot *s, uint32_t nd_name, uint32_t node_name,
			  int64_t now_wall_ms, struct ng_arena *arena, struct pol_explain_why *ret)
{
	memset(ret, 0, sizeof(*ret));
	const struct kube_nd *nd =
	    nd_name != NG_INTERN_NONE ? kube_snapshot_find_nd(s, nd_name) : NULL;
	const struct kube_node *node =
	    node_name != NG_INTERN_NONE ? kube_snapshot_find_node(s, node_name) : NULL;
	if (!nd && !node)
		return NG_ENOTFOUND;
	struct pol_explain_status *all = ng_arena_alloc(arena, sizeof(*all));
	if (!all)
		return NG_ENOMEM;
	ng_status st = pol_explain_status(s, now_wall_ms, arena, all);
	if (st != NG_OK)
		return st;
	return nd ? why_request(s, all, nd, now_wall_ms, arena, ret)
		  : why_node(s, all, node, now_wall_ms, arena, ret);
}
