/* The drainer's decisions (policy/drain.h). */
#include "policy/drain.h"

#include "budgets/selector.h"
#include "common/arena.h"
#include "common/backoff.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/regex.h"
#include "kube/snapshot.h"

#include <stdio.h>
#include <string.h>

const char *pol_drain_pod_str(enum pol_drain_pod c)
{
	static const char *const names[] = {
	    "finished",       "daemonset", "mirror",        "nodegate", "unselected", "skip",
	    "wait-completed", "undecided", "no-controller", "emptydir", "evict"};
	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

bool pol_pod_active(const struct kube_pod *p)
{
	return p->phase != KUBE_POD_SUCCEEDED && p->phase != KUBE_POD_FAILED;
}

/* Whether one of @p's resource names matches a filter (undecided counts as a match). */
static bool filtered_in(const struct ng_intern *pool, const struct kube_pod *p,
			const struct pol_drain_rules *r)
{
	for (uint16_t i = 0; i < p->nrequests; i++) {
		size_t len;
		const char *name = ng_intern_str(pool, p->requests[i], &len);
		for (size_t f = 0; name && f < r->nfilters; f++) {
			bool matched = false;
			if (ng_regex_match(r->filters[f], name, len, &matched, NULL) != NG_OK ||
			    matched)
				return true;
		}
	}
	return false;
}

/* The value of @p's label @key ("" when absent or not in @pool). */
static const char *label_of(const struct ng_intern *pool, const struct kube_pod *p, const char *key)
{
	uint32_t k = ng_intern_find(pool, key, strlen(key));
	for (uint16_t i = 0; k != NG_INTERN_NONE && i < p->nlabels; i++)
		if (p->labels[i].key == k)
			return ng_intern_str(pool, p->labels[i].val, NULL);
	return "";
}

/* Whether rule @rule matches @p: 1 yes, 0 no, -1 when its namespaceSelector needs labels that
 * cannot be known. */
static int rule_matches(const struct ng_intern *pool, const struct kube_pod *p,
			const struct pol_drain_rules *r, const struct kube_drain_rule *rule)
{
	if (rule->pod_selector.present &&
	    !bud_selector_matches(&rule->pod_selector, p->labels, p->nlabels, pool))
		return 0;
	if (!rule->ns_selector.present)
		return 1;
	const struct kube_label *labels = NULL;
	uint16_t n = 0;
	if (!r->ns_labels || !r->ns_labels(r->ns_ctx, p->ns, &labels, &n))
		return -1;
	return bud_selector_matches(&rule->ns_selector, labels, n, pool) ? 1 : 0;
}

/* What the label and the rules of @r make of @p: its behavior (enum kube_drain_behavior), -1
 * when undecided; its order in *@order and what decided in @source. */
static int rule_behavior(const struct ng_intern *pool, const struct kube_pod *p,
			 const struct pol_drain_rules *r, int32_t *order, char *source, size_t cap)
{
	const char *label = label_of(pool, p, KUBE_POD_DRAIN_LABEL);
	/* The label takes precedence over every rule, as in Cluster API; other values are not
	 * the label's and are ignored. */
	bool skip = strcmp(label, "skip") == 0, wait = strcmp(label, "wait-completed") == 0;
	if (skip || wait) {
		if (source)
			ng_fmt(source, cap, "label " KUBE_POD_DRAIN_LABEL "=%s", label);
		return skip ? KUBE_DRAIN_BEHAVIOR_SKIP : KUBE_DRAIN_BEHAVIOR_WAIT_COMPLETED;
	}
	const struct kube_drain_rule *lists[2] = {r->req_rules, r->cfg_rules};
	const size_t counts[2] = {r->nreq_rules, r->ncfg_rules};
	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; lists[l] && i < counts[l]; i++) {
			int m = rule_matches(pool, p, r, &lists[l][i]);
			if (m == 0)
				continue;
			if (source)
				ng_fmt(source, cap, "%s rule %zu", l ? "NodeGateConfig" : "request",
				       i);
			if (m < 0)
				return -1;
			*order = lists[l][i].order;
			return lists[l][i].behavior;
		}
	}
	if (source && cap)
		*source = '\0';
	return KUBE_DRAIN_BEHAVIOR_DRAIN;
}

enum pol_drain_pod pol_drain_classify(const struct ng_intern *pool, const struct kube_pod *p,
				      const struct pol_drain_rules *r)
{
	int32_t order;
	return pol_drain_classify_ordered(pool, p, r, &order, NULL, 0);
}

enum pol_drain_pod pol_drain_classify_ordered(const struct ng_intern *pool,
					      const struct kube_pod *p,
					      const struct pol_drain_rules *r, int32_t *ret_order,
					      char *ret_source, size_t cap)
{
	*ret_order = 0;
	if (ret_source && cap)
		*ret_source = '\0';
	if (!pol_pod_active(p))
		return POL_DRAIN_SKIP_FINISHED;
	if (p->flags & KUBE_POD_DAEMONSET)
		return POL_DRAIN_SKIP_DAEMONSET;
	if (p->flags & KUBE_POD_MIRROR)
		return POL_DRAIN_SKIP_MIRROR;
	if (r->self_selector && r->self_ns != NG_INTERN_NONE && p->ns == r->self_ns &&
	    bud_selector_matches(r->self_selector, p->labels, p->nlabels, pool))
		return POL_DRAIN_SKIP_SELF;
	if (r->pod_selector && !bud_selector_matches(r->pod_selector, p->labels, p->nlabels, pool))
		return POL_DRAIN_SKIP_UNSELECTED;
	if (r->nfilters && !filtered_in(pool, p, r))
		return POL_DRAIN_SKIP_UNSELECTED;
	switch (rule_behavior(pool, p, r, ret_order, ret_source, cap)) {
	case KUBE_DRAIN_BEHAVIOR_SKIP:
		return POL_DRAIN_SKIP_RULE;
	case KUBE_DRAIN_BEHAVIOR_WAIT_COMPLETED:
		return POL_DRAIN_WAIT_COMPLETED;
	case KUBE_DRAIN_BEHAVIOR_DRAIN:
		break;
	default:
		return POL_DRAIN_UNDECIDED;
	}
	if (p->owner_kind == NG_INTERN_NONE && !r->force)
		return POL_DRAIN_BLOCK_NO_CONTROLLER;
	if ((p->flags & KUBE_POD_EMPTYDIR) && !r->delete_empty_dir)
		return POL_DRAIN_BLOCK_EMPTYDIR;
	return POL_DRAIN_EVICT;
}

/* @id of @from as an id of @to (NG_INTERN_NONE when @to lacks it). */
static uint32_t remap(const struct ng_intern *from, const struct ng_intern *to, uint32_t id)
{
	size_t len;
	const char *s = id == NG_INTERN_NONE ? NULL : ng_intern_str(from, id, &len);
	return s ? ng_intern_find(to, s, len) : NG_INTERN_NONE;
}

ng_status pol_selector_to_pool(const struct kube_selector *sel, const struct ng_intern *from,
			       const struct ng_intern *to, struct ng_arena *arena,
			       struct kube_selector *ret, struct ng_err *reterr)
{
	struct kube_requirement *reqs =
	    sel->nreqs ? ng_arena_alloc(arena, sel->nreqs * sizeof(*reqs)) : NULL;
	if (sel->nreqs && !reqs)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *q = &sel->reqs[i];
		uint32_t *vals =
		    q->nvalues ? ng_arena_alloc(arena, q->nvalues * sizeof(*vals)) : NULL;
		if (q->nvalues && !vals)
			return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		for (uint16_t v = 0; v < q->nvalues; v++)
			vals[v] = remap(from, to, q->values[v]);
		reqs[i] = *q;
		reqs[i].key = remap(from, to, q->key);
		reqs[i].values = vals;
	}
	*ret = (struct kube_selector){sel->present, sel->nreqs, reqs};
	return NG_OK;
}

ng_status pol_selector_for_pool(const char *text, const struct ng_intern *pool,
				struct ng_arena *arena, struct kube_selector *ret,
				struct ng_err *reterr)
{
	struct ng_intern *own = ng_intern_create();
	if (!own)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	struct kube_selector sel;
	ng_status st = bud_selector_parse(text, strlen(text), own, arena, &sel, reterr);
	if (st == NG_OK)
		st = pol_selector_to_pool(&sel, own, pool, arena, ret, reterr);
	ng_intern_destroy(own);
	return st;
}

int64_t pol_drain_backoff_ms(int64_t attempts, int64_t base_ms, int64_t max_ms,
			     int64_t jitter_draw_ms)
{
	/* Attempt 1 waits base: one doubling fewer than ng_backoff_ms counts. */
	int64_t doublings = attempts < 1 ? 0 : attempts - 1;
	if (doublings > (int64_t)UINT32_MAX)
		doublings = (int64_t)UINT32_MAX;
	int64_t wait = ng_backoff_ms(base_ms < 0 ? 0 : base_ms, max_ms, (uint32_t)doublings);
	return wait + (jitter_draw_ms > 0 ? jitter_draw_ms : 0);
}

int64_t pol_drain_deadline_ms(const struct kube_nd_detail *x, const struct kube_ngc *ngc)
{
	int64_t secs = x->drain.deadline_s;
	if (secs < 0)
		secs = ngc && !ngc->invalid ? ngc->drain_deadline_s : -1;
	if (!x->drain.present || secs <= 0 || x->granted_ms <= 0)
		return 0;
	return x->granted_ms + secs * 1000;
}

bool pol_drain_protected_job(const struct ng_intern *pool, const struct kube_pod *p,
			     const struct kube_selector *sel)
{
	size_t len;
	const char *kind =
	    p->owner_kind == NG_INTERN_NONE ? NULL : ng_intern_str(pool, p->owner_kind, &len);
	return sel && sel->present && kind && strcmp(kind, "Job") == 0 &&
	       p->phase == KUBE_POD_RUNNING &&
	       bud_selector_matches(sel, p->labels, p->nlabels, pool);
}

/* Appends "ns/name" of @p to @buf (@cap) as the @k-th of a list, "and N more" past
 * POL_DRAIN_MSG_PODS. */
static void list_pod(const struct ng_intern *pool, char *buf, size_t cap, size_t k,
		     const struct kube_pod *p)
{
	size_t len = strlen(buf);
	const char *ns = p->ns == NG_INTERN_NONE ? NULL : ng_intern_str(pool, p->ns, NULL);
	if (k < POL_DRAIN_MSG_PODS)
		(void)snprintf(buf + len, cap - len, "%s%s/%s", k ? ", " : "", ns ? ns : "",
			       p->name);
}

size_t pol_drain_waiting(const struct kube_snapshot *s, const struct kube_node *const *nodes,
			 size_t nn, const struct kube_selector *sel, char *msg, size_t cap)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t np, waiting = 0;
	const struct kube_pod *pods = kube_snapshot_pods(s, &np);
	char names[512] = "";
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			const struct kube_pod *p = &pods[idx[j]];
			if (pol_pod_active(p) &&
			    (!sel || bud_selector_matches(sel, p->labels, p->nlabels, pool)))
				list_pod(pool, names, sizeof(names), waiting++, p);
		}
	}
	if (waiting > POL_DRAIN_MSG_PODS) {
		size_t len = strlen(names);
		(void)snprintf(names + len, sizeof(names) - len, " and %zu more",
			       waiting - POL_DRAIN_MSG_PODS);
	}
	if (waiting)
		ng_fmt(msg, cap, "waiting for %zu pod(s) to complete: %s", waiting, names);
	return waiting;
}

ng_status pol_drain_rules_from(const struct ng_intern *pool, const struct kube_nd_drain *dr,
			       struct ng_arena *arena, struct pol_drain_rules *rules,
			       struct kube_selector *sel, struct ng_err *reterr)
{
	struct ng_err err = {0};
	memset(rules, 0, sizeof(*rules));
	rules->self_ns = NG_INTERN_NONE;
	rules->force = dr->force;
	rules->delete_empty_dir = dr->delete_empty_dir;
	if (dr->pod_selector) {
		ng_status st = pol_selector_for_pool(dr->pod_selector, pool, arena, sel, &err);
		if (st != NG_OK)
			return ng_err_set(reterr, st, 0, "spec.drain.podSelector: %s", err.msg);
		rules->pod_selector = sel;
	}
	struct ng_regex **f =
	    dr->nfilters ? ng_arena_alloc(arena, dr->nfilters * sizeof(*f)) : NULL;
	if (dr->nfilters && !f)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	for (uint16_t i = 0; i < dr->nfilters; i++) {
		const char *re = dr->filters[i].by_resource_name_regex;
		ng_status st = ng_regex_get(re ? re : "", re ? strlen(re) : 0, &f[i], &err);
		if (st != NG_OK) {
			for (uint16_t k = 0; k < i; k++)
				ng_regex_put(f[k]);
			return ng_err_set(
			    reterr, st, 0,
			    "spec.drain.podEvictionFilters[%u].byResourceNameRegex %s", i, err.msg);
		}
	}
	rules->filters = f;
	rules->nfilters = dr->nfilters;
	rules->req_rules = dr->rules;
	rules->nreq_rules = dr->nrules;
	return NG_OK;
}

void pol_drain_rules_config(struct pol_drain_rules *rules, const struct kube_ngc *ngc,
			    pol_ns_labels_fn ns_labels, void *ns_ctx)
{
	bool valid = ngc && !ngc->invalid;
	rules->cfg_rules = valid ? ngc->drain_rules : NULL;
	rules->ncfg_rules = valid ? ngc->ndrain_rules : 0;
	rules->ns_labels = ns_labels;
	rules->ns_ctx = ns_ctx;
}

void pol_drain_rules_put(struct pol_drain_rules *rules)
{
	for (size_t i = 0; i < rules->nfilters; i++)
		ng_regex_put(rules->filters[i]);
	rules->nfilters = 0;
}
