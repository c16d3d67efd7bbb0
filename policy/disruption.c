/* The gate's decision for one NodeDisruption, steps 1-9 (policy/disruption.h). */
#include "policy/disruption_internal.h"

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
		c.exclusions = ngc->exclusions;
		c.nexclusions = ngc->nexclusions;
		c.medik8s_leases = ngc->medik8s_leases;
	}
	*ret = c;
}

bool pol_excluded_at(const struct kube_exclusion *x, size_t n, int64_t now_ms, int64_t *ret_until,
		     uint32_t *ret_reason)
{
	bool in = false;
	int64_t until = 0;
	uint32_t reason = NG_INTERN_NONE;
	for (size_t i = 0; i < n; i++) {
		if (!in) {
			if (x[i].start_ms <= now_ms && now_ms < x[i].end_ms) {
				in = true;
				until = x[i].end_ms;
				reason = x[i].reason;
			}
			continue;
		}
		if (x[i].start_ms > until)
			break; /* a gap: the exclusions in force end at until */
		if (x[i].start_ms <= now_ms)
			reason = x[i].reason;
		if (x[i].end_ms > until)
			until = x[i].end_ms;
	}
	if (in) {
		*ret_until = until;
		*ret_reason = reason;
	}
	return in;
}

/* The end of an exclusion, "2026-12-28T00:00:00.000Z", and its reason, for messages. */
void pd_exclusion_text(const struct ng_intern *pool, int64_t until, uint32_t reason, char *buf,
		       size_t cap)
{
	char at[32];
	ng_format_rfc3339_ms(until, at);
	const char *r = ng_intern_str(pool, reason, NULL);
	ng_fmt(buf, cap, "until %s (%s)", at, r && *r ? r : "no reason given");
}

/* Step 3b: a NodeGateConfig exclusion in force → stays Pending until it ends. */
static bool step3_excluded(const struct eval *e, const struct pol_gate_config *cfg,
			   struct pol_gate_decision *d)
{
	int64_t until;
	uint32_t reason;
	if (!pol_excluded_at(cfg->exclusions, cfg->nexclusions, e->now_ms, &until, &reason))
		return false;
	char text[POL_REASON_BYTES / 2];
	pd_exclusion_text(e->pool, until, reason, text, sizeof(text));
	d->outcome = POL_GATE_PENDING;
	d->only_windows = true; /* waits for the clock, retry or not */
	d->wake_wall_ms = until;
	ng_fmt(d->reason, sizeof(d->reason), "maintenance excluded by NodeGateConfig %s", text);
	return true;
}

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
 * ledger's counts (pd_held_classes() has counted them for @cpm). */
static void held_by_others(const struct eval *e, size_t *ret_cp, size_t *ret_other)
{
	const struct pol_ledger *l = e->ledger;
	size_t own_cp, own_other;
	pd_held_classes_of(l, e->nd->name, &own_cp, &own_other);
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
	struct cp_match cpm = pd_control_plane_match(e->s, cfg);
	size_t cp = 0;
	for (size_t i = 0; i < e->nnodes; i++)
		cp += pd_is_control_plane(e->s, &cpm, e->nodes[i]);
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

/* Step 6c (NodeGateConfig medik8sLeases): a node of the request whose medik8s Lease another
 * holder owns keeps the request Pending, retry or not, until that Lease expires (the gate wakes
 * then) or is released (a change of the cache decides again). Another actor is disrupting the
 * node: neither a budget nor a type overrides that. */
static bool step6c_medik8s(const struct eval *e, const struct pol_gate_config *cfg,
			   struct pol_gate_decision *d)
{
	char why[POL_REASON_BYTES / 2];
	int64_t until;
	for (size_t i = 0; cfg->medik8s_leases && i < e->nnodes; i++) {
		if (!pol_medik8s_node_blocked(e->s, true, e->nodes[i], e->now_ms, why, sizeof(why),
					      &until))
			continue;
		d->outcome = POL_GATE_PENDING;
		d->only_windows = true; /* waits for the clock, retry or not */
		d->wake_wall_ms = until;
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
	if (!recs || pd_scopes_init(l) != NG_OK || (l->nadb && pd_adb_index(l) != NG_OK))
		return NG_ENOMEM;
	e->recs = recs;
	for (size_t i = 0; i < e->nnodes; i++) {
		recs[i] = kube_snapshot_find_node(e->s, e->nodes[i]);
		if (!recs[i])
			continue;
		size_t at = (size_t)(recs[i] - l->nodes);
		if (pd_ndbs_of_node(l, at, pd_ndb_touch, ndb) != NG_OK)
			return NG_ENOMEM;
		for (uint32_t k = l->nadb ? l->by_node_off[at] : 0;
		     l->nadb && k < l->by_node_off[at + 1]; k++)
			if (pd_touch_add(adb, l->by_node[k], !l->held[at]) != NG_OK)
				return NG_ENOMEM;
	}
	pd_touches_group(ndb);
	pd_touches_group(adb);
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
			st = pd_eval_ndb_invalid(e, &ndbs[l->ndb_invalid[j]], l->ndb_invalid[j]);
			j++;
		} else {
			st = pd_eval_ndb(e, &ndbs[tn.v[i].budget], tn.v[i].budget, &tn.v[i]);
			i++;
		}
	}
	for (size_t i = 0, j = 0; st == NG_OK && (i < ta.n || j < l->nadb_invalid);) {
		if (j < l->nadb_invalid && (i == ta.n || l->adb_invalid[j] < ta.v[i].budget)) {
			st = pd_eval_adb_invalid(e, &adbs[l->adb_invalid[j]], l->adb_invalid[j]);
			j++;
		} else {
			st = pd_eval_adb(e, &adbs[ta.v[i].budget], ta.v[i].budget, &ta.v[i]);
			i++;
		}
	}
	(void)nndb;
	(void)nadb;
	free(tn.v);
	free(ta.v);
	return st;
}

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
			pd_fail_v(e, x);
	}
	return NG_OK;
}

/* Step 9: no failure → Granted; otherwise Pending with retry (step 1 already rejected a
 * request past its deadline), else Rejected. The reason names every failing budget, or, when
 * some budget can never allow the request, those budgets only. */
static void step9_outcome(const struct eval *e, struct pol_gate_decision *d)
{
	d->verdicts = e->v;
	d->nverdicts = e->nv;
	if (!e->any_failed) {
		d->outcome = POL_GATE_GRANT;
		ng_fmt(d->reason, sizeof(d->reason), "granted");
		return;
	}
	d->unsatisfiable = e->nnever > 0;
	pol_decision_reason(d);
	if (d->unsatisfiable) {
		/* No window and no release elsewhere lets it through: nothing to wait for but a
		 * change of the budgets or of the nodes. */
		d->outcome = e->nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
		return;
	}
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
	ng_status st = pd_resolve_nodes(s, nd, arena, &nodes, &d.nnodes);
	if (st != NG_OK)
		return st;
	d.nodes = nodes;
	e.nodes = nodes;
	e.nnodes = d.nnodes;
	struct cp_match cpm = pd_control_plane_match(s, cfg);
	if (cfg->serial_control_plane && pd_held_classes(ledger, &cpm) != NG_OK)
		return NG_ENOMEM;
	if (step1_deadline(nd, now_wall_ms, &d) || step2_empty(cfg, nd, &d) ||
	    step3_paused(cfg, &d) || step3_excluded(&e, cfg, &d) || step4_type(&e, cfg, &d) ||
	    step5_overlap(&e, cfg, &d) || step6_control_plane(&e, cfg, &d) ||
	    step6b_do_not_disrupt(&e, now_wall_ms, &d) || step6c_medik8s(&e, cfg, &d))
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
