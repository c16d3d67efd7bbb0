/* The remediation plan (policy/remediation.h): pure, over one snapshot. */
#include "policy/remediation.h"

#include "budgets/budgets.h"
#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/map.h"
#include "policy/drain_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pol_rem_action_str(enum pol_rem_action a)
{
	static const char *const names[] = {"create",        "active",   "done",     "delete",
					    "rejected",      "waiting",  "cooldown", "storm",
					    "maxConcurrent", "template", "deleting", "unknown"};
	return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "unknown";
}

void pol_request_name(const char *prefix, const char *node, char *out, size_t cap)
{
	size_t p = strlen(prefix), n = strlen(node);
	if (p + n <= 253) {
		ng_fmt(out, cap, "%s%s", prefix, node);
		return;
	}
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, node, n);
	size_t keep = p < 235 ? 235 - p : 0;
	while (keep > 0 && (node[keep - 1] == '.' || node[keep - 1] == '-'))
		keep--; /* "x.-hash" would not be a DNS subdomain */
	ng_fmt(out, cap, "%s%.*s-%08x", prefix, (int)keep, node, (unsigned)(h & 0xffffffffu));
}

void pol_remediation_request_name(const char *rem, const char *node, char *out, size_t cap)
{
	char prefix[72];
	ng_fmt(prefix, sizeof(prefix), "%.64s-", rem);
	pol_request_name(prefix, node, out, cap);
}

/* The Ready condition's reason on @nd (the drainer's step), or "". */
static const char *request_phase(const struct kube_nd *nd)
{
	const struct kube_nd_detail *x = nd->detail;
	for (uint16_t i = 0; x && i < x->nconditions; i++)
		if (strcmp(x->conditions[i].type, "Ready") == 0)
			return x->conditions[i].reason;
	return "";
}

enum health { HEALTHY, UNHEALTHY, UNKNOWN };

/* UNHEALTHY when every rule condition holds on @node now (*@ret_due gets when each has held its
 * forSeconds; a condition without lastTransitionTime has held since ever); HEALTHY when one is
 * absent or has another known status; else UNKNOWN: a condition the rule wants True or False is
 * Unknown (node-problem-detector not reporting, a node rebooting), which neither starts nor
 * ends a repair. */
static enum health node_health(const struct kube_nrem *r, const struct kube_node *node,
			       int64_t *ret_due)
{
	int64_t due = 0;
	bool unknown = false;
	for (uint16_t i = 0; i < r->nconds; i++) {
		const struct kube_rem_condition *rc = &r->conds[i];
		const struct kube_node_condition *nc = NULL;
		for (uint16_t k = 0; k < node->nconditions && !nc; k++)
			if (node->conditions[k].type == rc->type)
				nc = &node->conditions[k];
		if (nc && nc->status != rc->status && nc->status == KUBE_COND_UNKNOWN) {
			unknown = true;
			continue;
		}
		if (!nc || nc->status != rc->status)
			return HEALTHY;
		int64_t d = nc->since_ms > 0 ? nc->since_ms + rc->for_ms : 0;
		if (d > due)
			due = d;
	}
	*ret_due = due;
	return unknown ? UNKNOWN : UNHEALTHY;
}

/* When @node was last repaired by @r (status.lastRemediated), or 0. */
static int64_t last_repair(const struct kube_nrem *r, uint32_t node)
{
	for (uint16_t i = 0; i < r->nlast; i++)
		if (r->last[i].node == node)
			return r->last[i].at_ms;
	return 0;
}

static void earliest(struct pol_rem_plan *p, int64_t at_ms)
{
	if (at_ms > 0 && (p->next_ms == 0 || at_ms < p->next_ms))
		p->next_ms = at_ms;
}

/* An int-or-percent field of @r resolved against the pool, or @def when it does not read. */
static int64_t resolve(const struct kube_int_or_string *v, const struct ng_intern *pool,
		       size_t matched, int64_t def)
{
	struct bud_int_or_percent ip;
	if (!v->set || bud_int_or_percent_from(v, pool, "", &ip, NULL) != NG_OK)
		return def;
	return bud_int_or_percent_scaled(&ip, (int64_t)matched);
}

/* The problem that keeps @r from starting anything, into @p->problem (or ""). The template's
 * name is a string of @values, looked up in @s. */
static void find_problem(const struct kube_snapshot *s, const struct kube_nrem *r,
			 const struct ng_intern *values, struct pol_rem_plan *p)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t len;
	const char *tn = ng_intern_str(values, r->template_name, &len);
	p->tmpl = kube_snapshot_find_ndt(s, ng_intern_find(pool, tn, len));
	if (r->invalid)
		ng_fmt(p->problem, sizeof(p->problem), "invalid: %s",
		       ng_intern_str(pool, r->error, NULL));
	else if (!p->tmpl)
		ng_fmt(p->problem, sizeof(p->problem), "NodeDisruptionTemplate %s not found", tn);
	else if (p->tmpl->error != NG_INTERN_NONE)
		ng_fmt(p->problem, sizeof(p->problem), "NodeDisruptionTemplate %s: %s", tn,
		       ng_intern_str(pool, p->tmpl->error, NULL));
}

/* A new entry for @node (room for every node and request is made by the caller). */
static struct pol_rem_node *append(struct pol_rem_plan *p, uint32_t node)
{
	struct pol_rem_node *e = &p->nodes[p->n++];
	memset(e, 0, sizeof(*e));
	e->node = node;
	e->phase = "";
	e->action = POL_REM_UNKNOWN; /* never "create" by default */
	return e;
}

/* The plan's entry for @node, added when missing. */
static struct pol_rem_node *entry(struct pol_rem_plan *p, uint32_t node)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].node == node)
			return &p->nodes[i];
	return append(p, node);
}

/* What to do with a node's existing request @e->request. */
static void judge_request(const struct kube_nrem *r, struct pol_rem_plan *p, struct pol_rem_node *e)
{
	const struct kube_nd *nd = e->request;
	e->phase = request_phase(nd);
	bool granted = nd->state == KUBE_ND_GRANTED;
	bool healthy = !e->unhealthy && !e->unknown;
	/* The drainer's last step: Completed after an operation, Drained without one. */
	bool no_operation = !nd->detail || !nd->detail->operation.present;
	bool completed = strcmp(e->phase, "Completed") == 0 ||
			 (no_operation && strcmp(e->phase, "Drained") == 0);
	bool finished = completed || pol_drain_phase_failed(pol_drain_phase_of(e->phase));
	e->action = POL_REM_ACTIVE;
	if (nd->deleting) {
		ng_fmt(e->reason, sizeof(e->reason), "request being deleted");
	} else if (r->deleting && (!granted || finished)) {
		e->action = POL_REM_DELETE;
		ng_fmt(e->reason, sizeof(e->reason), "remediation deleted");
	} else if (r->deleting) {
		ng_fmt(e->reason, sizeof(e->reason),
		       "remediation deleted: the running request "
		       "finishes first");
	} else if (nd->state == KUBE_ND_REJECTED) {
		e->action = healthy ? POL_REM_DELETE : POL_REM_REJECTED;
		ng_fmt(e->reason, sizeof(e->reason), "%s",
		       healthy ? "request Rejected and the node is healthy again"
			       : "request Rejected by the gate (delete it to try again)");
	} else if (completed && healthy) {
		e->action = POL_REM_DONE;
		ng_fmt(e->reason, sizeof(e->reason), "repaired: request %s, conditions gone",
		       e->phase);
	} else if (completed) {
		ng_fmt(e->reason, sizeof(e->reason), "request %s but %s: the node stays out",
		       e->phase,
		       e->unknown ? "a rule condition is Unknown" : "the conditions still hold");
	} else if (!granted && healthy) {
		e->action = POL_REM_DELETE;
		ng_fmt(e->reason, sizeof(e->reason), "healthy again before the grant");
	} else {
		ng_fmt(e->reason, sizeof(e->reason), "request %s%s%s",
		       granted ? "Granted" : "Pending", *e->phase ? ", " : "", e->phase);
	}
	if (e->action == POL_REM_ACTIVE || e->action == POL_REM_DONE)
		p->open++;
}

/* The pool: every node the selector matches, with its health. */
static void scan_pool(const struct kube_snapshot *s, const struct kube_nrem *r,
		      struct pol_rem_plan *p)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t nn;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	for (size_t i = 0; i < nn; i++) {
		if (r->invalid || !bud_selector_matches(&r->node_selector, nodes[i].labels,
							nodes[i].nlabels, pool))
			continue;
		p->matched++;
		int64_t due = 0;
		enum health h = node_health(r, &nodes[i], &due);
		if (h == HEALTHY)
			continue;
		/* The pool comes first and names each node once: no lookup (a storm of 5,000
		 * unhealthy nodes would make it quadratic). */
		struct pol_rem_node *e = append(p, nodes[i].name);
		e->unhealthy = h == UNHEALTHY;
		e->unknown = h == UNKNOWN;
		e->due_ms = due;
		p->unhealthy += e->unhealthy;
	}
}

static int by_due(const void *a, const void *b)
{
	const struct pol_rem_node *const *x = a, *const *y = b;
	if ((*x)->due_ms != (*y)->due_ms)
		return (*x)->due_ms < (*y)->due_ms ? -1 : 1;
	return (*x)->node < (*y)->node ? -1 : (*x)->node > (*y)->node;
}

/* Unhealthy nodes without a request: held back, or created, earliest due first. */
static ng_status plan_new(const struct kube_nrem *r, int64_t now, struct ng_arena *arena,
			  struct pol_rem_plan *p)
{
	struct pol_rem_node **due = ng_arena_alloc(arena, (p->n + 1) * sizeof(*due));
	if (!due)
		return NG_ENOMEM;
	size_t nd = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct pol_rem_node *e = &p->nodes[i];
		if (e->request)
			continue;
		if (!e->unhealthy) {
			ng_fmt(e->reason, sizeof(e->reason),
			       "a rule condition is Unknown: waits until it is known");
			continue;
		}
		int64_t repaired = last_repair(r, e->node);
		if (r->deleting) {
			e->action = POL_REM_DELETING;
			ng_fmt(e->reason, sizeof(e->reason), "remediation deleted");
		} else if (p->problem[0]) {
			e->action = POL_REM_NO_TEMPLATE;
			ng_fmt(e->reason, sizeof(e->reason), "%s", p->problem);
		} else if (e->due_ms > now) {
			/* Times, not durations: the reason goes to status, which is written when
			 * it changes. */
			char at[40];
			ng_format_rfc3339_ms(e->due_ms, at);
			e->action = POL_REM_WAIT_FOR;
			ng_fmt(e->reason, sizeof(e->reason),
			       "conditions hold, not yet for forSeconds: due at %s", at);
			earliest(p, e->due_ms);
		} else if (repaired > 0 && repaired + r->cooldown_ms > now) {
			char at[40], until[40];
			ng_format_rfc3339_ms(repaired, at);
			ng_format_rfc3339_ms(repaired + r->cooldown_ms, until);
			e->action = POL_REM_COOLDOWN;
			p->loops++;
			ng_fmt(
			    e->reason, sizeof(e->reason),
			    "unhealthy again after its repair at %s, within cooldownSeconds (until "
			    "%s): a loop, not repaired",
			    at, until);
			earliest(p, repaired + r->cooldown_ms);
		} else if (p->storm) {
			e->action = POL_REM_STORM;
			ng_fmt(e->reason, sizeof(e->reason),
			       "storm: %zu pool nodes unhealthy, stormGuard.maxUnhealthy %lld",
			       p->unhealthy, (long long)p->max_unhealthy);
		} else {
			due[nd++] = e;
		}
	}
	qsort(due, nd, sizeof(*due), by_due);
	for (size_t i = 0; i < nd; i++) {
		if ((int64_t)p->open < p->max_concurrent) {
			due[i]->action = POL_REM_CREATE;
			ng_fmt(due[i]->reason, sizeof(due[i]->reason), "due: a request is created");
			p->open++;
		} else {
			due[i]->action = POL_REM_MAX;
			ng_fmt(due[i]->reason, sizeof(due[i]->reason),
			       "maxConcurrent %lld reached: waits for an open request to finish",
			       (long long)p->max_concurrent);
		}
	}
	return NG_OK;
}

ng_status pol_remediation_plan(const struct kube_snapshot *s, const struct kube_nrem *r,
			       int64_t now_wall_ms, struct ng_arena *arena,
			       struct pol_rem_plan *ret)
{
	return pol_remediation_plan_in(s, r, kube_snapshot_pool(s), now_wall_ms, arena, ret);
}

ng_status pol_remediation_plan_in(const struct kube_snapshot *s, const struct kube_nrem *r,
				  const struct ng_intern *values, int64_t now_wall_ms,
				  struct ng_arena *arena, struct pol_rem_plan *ret)
{
	struct pol_rem_plan p;
	memset(&p, 0, sizeof(p));
	size_t nn, nr;
	(void)kube_snapshot_nodes(s, &nn);
	const struct kube_nd *nds = kube_snapshot_nds(s, &nr);
	size_t mine = 0;
	for (size_t i = 0; i < nr; i++)
		mine += nds[i].detail && nds[i].detail->remediation == r->name &&
			r->name != NG_INTERN_NONE;
	p.nodes = ng_arena_alloc(arena, (nn + mine + 1) * sizeof(*p.nodes));
	if (!p.nodes)
		return NG_ENOMEM;
	find_problem(s, r, values, &p);
	scan_pool(s, r, &p);
	p.max_concurrent = resolve(&r->max_concurrent, values, p.matched, 1);
	p.max_unhealthy = r->storm_guard ? resolve(&r->max_unhealthy, values, p.matched, 0) : -1;
	p.storm = r->storm_guard && (int64_t)p.unhealthy > p.max_unhealthy;
	for (size_t i = 0; mine && i < nr; i++) {
		const struct kube_nd *nd = &nds[i];
		if (!nd->detail || nd->detail->remediation != r->name)
			continue;
		/* A request names one node; one without (edited by hand) is judged on its own. */
		struct pol_rem_node *e =
		    entry(&p, nd->nnode_names ? nd->node_names[0] : NG_INTERN_NONE);
		if (e->request) /* a second request for the node: the first by name decides */
			continue;
		e->request = nd;
		judge_request(r, &p, e);
	}
	ng_status st = plan_new(r, now_wall_ms, arena, &p);
	if (st != NG_OK)
		return st;
	*ret = p;
	return NG_OK;
}
