#include "policy/validate.h"

#include "budgets/budgets.h"
#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/regex.h"
#include "kube/records.h"
#include "kube/one.h"
#include "kube/snapshot.h"
#include "policy/disruption.h"
#include "policy/hook.h"

#include <stdlib.h>
#include <string.h>

/* A problem the decoder recorded (intern id @why of @pool, naming the field): the object is
 * invalid. */
static ng_status invalid(const struct ng_intern *pool, uint32_t why, struct ng_err *reterr)
{
	return ng_err_set(reterr, NG_EPARSE, 0, "%s", ng_intern_str(pool, why, NULL));
}

/* ---- budgets and the config ---- */

static ng_status limit_ok(const struct ng_intern *pool, const struct kube_int_or_string *v,
			  const char *field, struct ng_err *reterr)
{
	struct bud_int_or_percent out;
	if (!v->set)
		return NG_OK;
	return bud_int_or_percent_from(v, pool, field, &out, reterr);
}

/* Each window's own limit (@field: the kind's name for it) must read as the budget's does. */
static ng_status windows_ok(const struct ng_intern *pool, const struct kube_budget_common *b,
			    const char *field, struct ng_err *reterr)
{
	for (size_t i = 0; i < b->nwindows; i++) {
		char f[64];
		ng_fmt(f, sizeof(f), "spec.windows[%zu].%s", i, field);
		ng_status st = limit_ok(pool, &b->windows[i].limit, f, reterr);
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

/* Hook @h of field @field: malformed (422) or forbidden by @cluster's healthHooks policy (403);
 * NG_OK when absent. pol_hook_allowed() tells which. */
static ng_status hook_ok(const struct kube_snapshot *cluster, const struct ng_intern *pool,
			 const struct kube_hook *h, const char *field, struct ng_err *reterr)
{
	if (!h->present)
		return NG_OK;
	if (h->error != NG_INTERN_NONE)
		return invalid(pool, h->error, reterr);
	struct kube_hook_policy p;
	pol_hook_policy_from(cluster, &p);
	struct ng_err why = {0};
	ng_status st = pol_hook_allowed(h, &p, kube_snapshot_pool(cluster), &why);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s: %s", field, why.msg);
	return NG_OK;
}

static ng_status check_adb(const struct kube_snapshot *cluster, const struct ng_intern *pool,
			   const struct kube_adb *adb, struct ng_err *reterr)
{
	if (adb->b.invalid)
		return invalid(pool, adb->b.error, reterr);
	if (!adb->max_disruptions.set)
		return ng_err_set(reterr, NG_EPARSE, 0, "spec.maxDisruptions: required");
	ng_status st = limit_ok(pool, &adb->max_disruptions, "spec.maxDisruptions", reterr);
	st = st ? st : windows_ok(pool, &adb->b, "maxDisruptions", reterr);
	st = st ? st : hook_ok(cluster, pool, &adb->hook, "spec.healthHook", reterr);
	return st ? st : hook_ok(cluster, pool, &adb->b.hook2, "spec.hookV2BasePath", reterr);
}

static ng_status check_ndb(const struct kube_snapshot *cluster, const struct ng_intern *pool,
			   const struct kube_ndb *ndb, struct ng_err *reterr)
{
	if (ndb->b.invalid)
		return invalid(pool, ndb->b.error, reterr);
	if (!ndb->max_disrupted.set && !ndb->min_undisrupted.set &&
	    ndb->topology_key == NG_INTERN_NONE)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "spec: one of maxDisruptedNodes and minUndisruptedNodes is "
				  "required");
	ng_status st = limit_ok(pool, &ndb->max_disrupted, "spec.maxDisruptedNodes", reterr);
	st = st ? st : limit_ok(pool, &ndb->min_undisrupted, "spec.minUndisruptedNodes", reterr);
	st = st ? st : windows_ok(pool, &ndb->b, "maxDisruptedNodes", reterr);
	st = st ? st
		: limit_ok(pool, &ndb->max_per_domain, "spec.maxDisruptedNodesPerDomain", reterr);
	return st ? st : hook_ok(cluster, pool, &ndb->b.hook2, "spec.hookV2BasePath", reterr);
}

ng_status pol_check_budget(const struct kube_snapshot *cluster, const struct kube_one *obj,
			   struct ng_err *reterr)
{
	const struct ng_intern *pool = kube_one_pool(obj);
	const struct kube_adb *adb = kube_one_adb(obj);
	const struct kube_ndb *ndb = kube_one_ndb(obj);
	const struct kube_ngc *ngc = kube_one_ngc(obj);
	if (adb)
		return check_adb(cluster, pool, adb, reterr);
	if (ndb)
		return check_ndb(cluster, pool, ndb, reterr);
	/* nodegate reads only the singleton: another one would be created and silently ignored,
	 * its pause or alert gate doing nothing. */
	const char *ngc_name = ngc ? ng_intern_str(pool, ngc->name, NULL) : NULL;
	if (ngc && (!ngc_name || strcmp(ngc_name, "default") != 0))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "metadata.name: nodegate reads only the NodeGateConfig named "
				  "\"default\"; name it default");
	if (ngc && ngc->invalid)
		return invalid(pool, ngc->error, reterr);
	if (ngc && ngc->alert.mode != KUBE_ALERT_NONE) {
		/* The alert gate is called under the same object's healthHooks policy. */
		struct ng_err why = {0};
		ng_status st = pol_hook_allowed(&ngc->alert.target, &ngc->hooks, pool, &why);
		/* Past the "hook not allowed: " the message is about the URL. */
		const char *what = strstr(why.msg, ": ");
		if (st != NG_OK)
			return ng_err_set(reterr, st == NG_ENOMEM ? st : NG_EPARSE, 0,
					  "spec.alertGate.prometheusURL: %s",
					  what ? what + 2 : why.msg);
	}
	return NG_OK;
}

/* ---- NodeDisruptions ---- */

/* A label selector string (drain.podSelector and the like) that must parse. */
static ng_status selector_string_ok(const char *sel, const char *field, struct ng_err *reterr)
{
	if (!sel)
		return NG_OK;
	struct ng_intern *pool = ng_intern_create();
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct kube_selector out;
	struct ng_err err = {0};
	ng_status st = pool && arena ? bud_selector_parse(sel, strlen(sel), pool, arena, &out, &err)
				     : NG_ENOMEM;
	ng_arena_destroy(arena);
	ng_intern_destroy(pool);
	if (st == NG_OK)
		return NG_OK;
	return ng_err_set(reterr, st, 0, "%s: %s", field,
			  st == NG_ENOMEM ? "out of memory" : err.msg);
}

/* Every pattern the decoder admits reaches the compiler, which refuses longer ones. */
_Static_assert(KUBE_MAX_REGEX_BYTES <= NG_REGEX_MAX_BYTES, "drain filter regex longer than "
							   "common/regex.h compiles");

/* Filter @i's regex @re compiles (common/regex.h: bounded, and cached for the drainer). */
static ng_status filter_regex_ok(uint16_t i, const char *re, struct ng_err *reterr)
{
	struct ng_err why = {0};
	ng_status st = re ? ng_regex_check(re, strlen(re), &why) : NG_OK;
	if (st == NG_OK)
		return NG_OK;
	return ng_err_set(reterr, st, why.offset,
			  "spec.drain.podEvictionFilters[%u].byResourceNameRegex: \"%.80s\" %s",
			  (unsigned)i, re,
			  st == NG_ENOMEM ? "cannot be checked: out of memory" : why.msg);
}

/* The drain's selector strings parse and its filter regexes compile (the decoder checked their
 * types and lengths). */
static ng_status drain_ok(const struct kube_nd_drain *d, struct ng_err *reterr)
{
	ng_status st = selector_string_ok(d->pod_selector, "spec.drain.podSelector", reterr);
	st = st ? st
		: selector_string_ok(d->wait_pod_selector,
				     "spec.drain.waitForPodCompletion.podSelector", reterr);
	for (uint16_t i = 0; st == NG_OK && i < d->nfilters; i++)
		st = filter_regex_ok(i, d->filters[i].by_resource_name_regex, reterr);
	return st;
}

/* The form of NodeDisruption @nd (decoded into @pool). */
static ng_status nd_form(const struct kube_nd *nd, const struct ng_intern *pool,
			 struct ng_err *reterr)
{
	const struct kube_nd_detail *x = nd->detail;
	if (x->has_node_selector == x->has_node_names)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "spec: exactly one of nodeSelector and nodeNames is required");
	if (nd->selector_invalid)
		return invalid(pool, nd->selector_error, reterr);
	if (x->has_node_names && nd->nnode_names == 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "spec.nodeNames: empty: name at least one node, or select nodes "
				  "with spec.nodeSelector");
	if (x->has_node_selector && nd->node_selector.nreqs == 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "spec.nodeSelector: {} would select every node: give labels to "
				  "match, or name the nodes in spec.nodeNames");
	if (x->spec_error != NG_INTERN_NONE)
		return invalid(pool, x->spec_error, reterr);
	return drain_ok(&x->drain, reterr);
}

/* ---- comparing two decoded NodeDisruptions, each with its own pool ---- */

struct pools {
	const struct ng_intern *a, *b;
};

/* Intern id @x of pool a and @y of pool b name the same string (or are both absent). */
static bool same_id(const struct pools *p, uint32_t x, uint32_t y)
{
	if (x == NG_INTERN_NONE || y == NG_INTERN_NONE)
		return x == y;
	size_t lx, ly;
	const char *sx = ng_intern_str(p->a, x, &lx), *sy = ng_intern_str(p->b, y, &ly);
	return lx == ly && memcmp(sx, sy, lx) == 0;
}

static bool same_ids(const struct pools *p, const uint32_t *x, size_t nx, const uint32_t *y,
		     size_t ny)
{
	if (nx != ny)
		return false;
	for (size_t i = 0; i < nx; i++)
		if (!same_id(p, x[i], y[i]))
			return false;
	return true;
}

static bool same_text(const char *x, const char *y)
{
	return x == y || (x && y && strcmp(x, y) == 0);
}

/* Whether id @x (pool a) is among @ys (pool b). */
static bool has_id(const struct pools *p, uint32_t x, const uint32_t *ys, size_t ny)
{
	for (size_t i = 0; i < ny; i++)
		if (same_id(p, x, ys[i]))
			return true;
	return false;
}

static bool same_requirement(const struct pools *p, const struct kube_requirement *x,
			     const struct kube_requirement *y)
{
	if (!same_id(p, x->key, y->key) || x->op != y->op || x->num != y->num ||
	    x->nvalues != y->nvalues)
		return false;
	for (uint16_t i = 0; i < x->nvalues; i++)
		if (!has_id(p, x->values[i], y->values, y->nvalues))
			return false;
	return true;
}

/* Two label selectors make the same selection: the same requirements, in any order (a value
 * list is a set, and requirements are ANDed). */
static bool same_selector(const struct pools *p, const struct kube_selector *x,
			  const struct kube_selector *y)
{
	if (x->present != y->present || x->nreqs != y->nreqs)
		return false;
	for (uint16_t i = 0; i < x->nreqs; i++) {
		bool found = false;
		for (uint16_t k = 0; !found && k < y->nreqs; k++)
			found = same_requirement(p, &x->reqs[i], &y->reqs[k]);
		if (!found)
			return false;
	}
	return true;
}

static bool same_drain(const struct pools *p, const struct kube_nd_drain *x,
		       const struct kube_nd_drain *y)
{
	if (x->present != y->present || x->cordon != y->cordon || x->has_taint != y->has_taint ||
	    !same_id(p, x->taint.key, y->taint.key) || !same_id(p, x->taint.val, y->taint.val) ||
	    !same_id(p, x->taint.effect, y->taint.effect) || x->has_wait != y->has_wait ||
	    !same_text(x->wait_pod_selector, y->wait_pod_selector) ||
	    x->wait_timeout_s != y->wait_timeout_s || x->strategy != y->strategy ||
	    !same_text(x->pod_selector, y->pod_selector) || x->force != y->force ||
	    x->delete_empty_dir != y->delete_empty_dir ||
	    x->skip_waiting_for_eviction != y->skip_waiting_for_eviction ||
	    x->wait_for_volume_detach != y->wait_for_volume_detach ||
	    x->timeout_s != y->timeout_s || x->nfilters != y->nfilters)
		return false;
	for (uint16_t i = 0; i < x->nfilters; i++)
		if (!same_text(x->filters[i].by_resource_name_regex,
			       y->filters[i].by_resource_name_regex))
			return false;
	return true;
}

/* Every field of the CRD's spec but retry.deadline and additionalRequestors, the two that may
 * change once Granted. The structural schema prunes unknown fields, so this is the whole spec;
 * tests/unit/test-policy-validate.c changes each field in turn. */
static bool same_spec(const struct pools *p, const struct kube_nd *x, const struct kube_nd *y)
{
	const struct kube_nd_detail *dx = x->detail, *dy = y->detail;
	const struct kube_nd_operation *ox = &dx->operation, *oy = &dy->operation;
	return same_id(p, x->type, y->type) && same_id(p, x->requestor, y->requestor) &&
	       x->priority == y->priority && dx->has_node_names == dy->has_node_names &&
	       same_ids(p, x->node_names, x->nnode_names, y->node_names, y->nnode_names) &&
	       dx->has_node_selector == dy->has_node_selector &&
	       x->selector_invalid == y->selector_invalid &&
	       same_id(p, x->selector_error, y->selector_error) &&
	       same_selector(p, &x->node_selector, &y->node_selector) && x->retry == y->retry &&
	       dx->start_ms == dy->start_ms && dx->duration_ms == dy->duration_ms &&
	       same_drain(p, &dx->drain, &dy->drain) && ox->present == oy->present &&
	       same_text(ox->job_template, oy->job_template) &&
	       ox->wait_for_reboot == oy->wait_for_reboot;
}

/* The created-by annotation of @nd, or NULL. */
static const char *created_by(const struct kube_nd *nd, const struct ng_intern *pool)
{
	uint32_t id = nd && nd->detail ? nd->detail->created_by : NG_INTERN_NONE;
	return id == NG_INTERN_NONE ? NULL : ng_intern_str(pool, id, NULL);
}

static ng_status update_ok(const struct kube_one *obj, const struct kube_one *old,
			   struct ng_err *reterr)
{
	const struct kube_nd *nd = kube_one_nd(obj), *was = kube_one_nd(old);
	const char *by_was = created_by(was, kube_one_pool(old));
	const char *by_is = created_by(nd, kube_one_pool(obj));
	if (!same_text(by_was, by_is))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "metadata.annotations[nodegate.io/created-by]: set by nodegate "
				  "when the request is created; it cannot change");
	if (!was || was->state != KUBE_ND_GRANTED)
		return NG_OK;
	struct pools p = {kube_one_pool(obj), kube_one_pool(old)};
	if (same_spec(&p, nd, was))
		return NG_OK;
	return ng_err_set(reterr, NG_EPARSE, 0,
			  "spec: immutable once Granted, except spec.retry.deadline and "
			  "spec.additionalRequestors (delete the request and create a new one)");
}

/* Names listed in a warning before "and N more": enough to recognise a typo, few enough that
 * the line stays readable (and within the 256 bytes an API server keeps of a warning). */
#define WARN_NAMES 3

/* Appends warning @text (a line of its own) to @warning (@wcap bytes); a line that does not fit
 * whole is left out. */
static void add_warning(char *warning, size_t wcap, const char *text)
{
	size_t at = strlen(warning), len = strlen(text);
	if (at + (at ? 1 : 0) + len + 1 > wcap)
		return;
	ng_fmt(warning + at, wcap - at, "%s%s", at ? "\n" : "", text);
}

/* Warnings on an admitted request naming its nodes, one line each (server/review.c makes each
 * line a warning): how many nodes it names are not in the cluster, the first few by name; and
 * nodes already granted to another request. */
static void warn(const struct kube_snapshot *cluster, const struct kube_nd *nd,
		 const struct ng_intern *pool, char *warning, size_t wcap)
{
	const struct ng_intern *cpool = kube_snapshot_pool(cluster);
	char names[200] = "", line[256];
	size_t unknown = 0, granted = 0;
	for (uint16_t i = 0; i < nd->nnode_names; i++) {
		size_t len;
		const char *name = ng_intern_str(pool, nd->node_names[i], &len);
		uint32_t id = ng_intern_find(cpool, name, len);
		const struct kube_node *node =
		    id == NG_INTERN_NONE ? NULL : kube_snapshot_find_node(cluster, id);
		const struct kube_nd *holder = node ? kube_snapshot_node_grant(cluster, id) : NULL;
		bool other = holder && strcmp(ng_intern_str(cpool, holder->name, NULL),
					      ng_intern_str(pool, nd->name, NULL)) != 0;
		if (!node && unknown++ < WARN_NAMES) {
			size_t at = strlen(names);
			ng_fmt(names + at, sizeof(names) - at, "%s%.50s", at ? ", " : "", name);
		} else if (other && granted++ < WARN_NAMES) {
			ng_fmt(line, sizeof(line),
			       "node %.63s is already granted to NodeDisruption %.100s", name,
			       ng_intern_str(cpool, holder->name, NULL));
			add_warning(warning, wcap, line);
		}
	}
	if (unknown == 0)
		return;
	char more[40] = "";
	if (unknown > WARN_NAMES)
		ng_fmt(more, sizeof(more), " and %zu more", unknown - WARN_NAMES);
	ng_fmt(line, sizeof(line), "%zu of %u node%s %s not in the cluster: %s%s", unknown,
	       (unsigned)nd->nnode_names, nd->nnode_names == 1 ? "" : "s",
	       nd->nnode_names == 1 ? "is" : "are", names, more);
	/* The count goes first: it is the line a person needs when the request names many. */
	size_t at = strlen(warning);
	if (at && at + strlen(line) + 2 <= wcap) {
		memmove(warning + strlen(line) + 1, warning, at + 1);
		memcpy(warning, line, strlen(line));
		warning[strlen(line)] = '\n';
	} else if (!at) {
		add_warning(warning, wcap, line);
	}
}

ng_status pol_check_nd(const struct kube_snapshot *cluster, const struct kube_one *obj,
		       const struct kube_one *old, char *warning, size_t wcap,
		       struct ng_err *reterr)
{
	warning[0] = '\0';
	const struct kube_nd *nd = kube_one_nd(obj);
	if (!nd)
		return ng_err_set(reterr, NG_EPARSE, 0, "kind: expected a NodeDisruption");
	ng_status st = nd_form(nd, kube_one_pool(obj), reterr);
	if (st == NG_OK && old)
		st = update_ok(obj, old, reterr);
	if (st == NG_OK)
		warn(cluster, nd, kube_one_pool(obj), warning, wcap);
	return st;
}

/* The fields that are the gate's decision, in the order they are checked. */
enum decision_field { DF_STATE, DF_NODES, DF_GRANTED_AT, DF_BUDGETS, DF_COUNT };
static const char *const decision_fields[DF_COUNT] = {"state", "disruptedNodes", "grantedAt",
						      "disruptedDisruptionBudgets"};

static bool same_verdicts(const struct pools *p, const struct kube_nd_detail *x,
			  const struct kube_nd_detail *y)
{
	if (x->nverdicts != y->nverdicts)
		return false;
	for (uint16_t i = 0; i < x->nverdicts; i++) {
		const struct kube_nd_verdict *a = &x->verdicts[i], *b = &y->verdicts[i];
		if (!same_id(p, a->kind, b->kind) || !same_id(p, a->ns, b->ns) ||
		    !same_id(p, a->name, b->name) || a->ok != b->ok ||
		    !same_text(a->reason, b->reason))
			return false;
	}
	return true;
}

/* Whether decision field @f is the same in @x (pool a) and @y (pool b). */
static bool same_decision(const struct pools *p, enum decision_field f, const struct kube_nd *x,
			  const struct kube_nd *y)
{
	switch (f) {
	case DF_STATE:
		return x->state == y->state;
	case DF_NODES:
		return same_ids(p, x->disrupted, x->ndisrupted, y->disrupted, y->ndisrupted);
	case DF_GRANTED_AT:
		return x->detail->granted_ms == y->detail->granted_ms;
	default:
		return same_verdicts(p, x->detail, y->detail);
	}
}

ng_status pol_check_nd_status(const struct kube_one *obj, const struct kube_one *old,
			      const char *user, const char *const *deciders, size_t ndeciders,
			      struct ng_err *reterr)
{
	for (size_t i = 0; i < ndeciders; i++)
		if (strcmp(user, deciders[i]) == 0)
			return NG_OK;
	/* A missing status (or object) reads as a request with no decision. */
	static const struct kube_nd_detail no_detail = {.duration_ms = -1};
	static const struct kube_nd none = {.detail = &no_detail};
	const struct kube_nd *is = kube_one_nd(obj), *was = kube_one_nd(old);
	struct pools p = {is ? kube_one_pool(obj) : NULL, was ? kube_one_pool(old) : NULL};
	for (int f = 0; f < DF_COUNT; f++) {
		if (same_decision(&p, (enum decision_field)f, is ? is : &none, was ? was : &none))
			continue;
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "status.%s: only nodegate (%s) decides a NodeDisruption; %.100s "
				  "may not change it",
				  decision_fields[f],
				  ndeciders ? deciders[0] : "its service account", user);
	}
	return NG_OK;
}

/* ---- dry run: a request from outside the cache, decided against it ---- */

/* @id of @from's pool as an id of @to's pool: NG_INTERN_NONE when no cached object carries the
 * string (a value nothing carries matches nothing, as in the cache's own decoding). */
static uint32_t remap(const struct ng_intern *from, const struct ng_intern *to, uint32_t id)
{
	if (id == NG_INTERN_NONE)
		return NG_INTERN_NONE;
	size_t len;
	const char *s = ng_intern_str(from, id, &len);
	return ng_intern_find(to, s, len);
}

/* @sel (ids of @from) in @to's ids into @ret, arrays from @arena. */
static ng_status remap_selector(const struct ng_intern *from, const struct ng_intern *to,
				const struct kube_selector *sel, struct ng_arena *arena,
				struct kube_selector *ret)
{
	struct kube_requirement *reqs = ng_arena_alloc(arena, (sel->nreqs + 1u) * sizeof(*reqs));
	if (!reqs)
		return NG_ENOMEM;
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *q = &sel->reqs[i];
		uint32_t *vals = ng_arena_alloc(arena, (q->nvalues + 1u) * sizeof(*vals));
		if (!vals)
			return NG_ENOMEM;
		for (uint16_t k = 0; k < q->nvalues; k++)
			vals[k] = remap(from, to, q->values[k]);
		reqs[i] = *q;
		reqs[i].key = remap(from, to, q->key);
		reqs[i].values = vals;
	}
	*ret = *sel;
	ret->reqs = reqs;
	return NG_OK;
}

/* @nd (decoded into @from) re-expressed in @cluster's ids, arrays from @arena, as a request the
 * gate has not decided: its status does not count, and without a name it is "evaluate". */
static ng_status remap_nd(const struct ng_intern *from, const struct kube_snapshot *cluster,
			  const struct kube_nd *nd, struct ng_arena *arena, struct kube_nd *ret)
{
	const struct ng_intern *to = kube_snapshot_pool(cluster);
	struct kube_nd r = *nd;
	r.name = nd->name == NG_INTERN_NONE ? ng_intern_find(to, "evaluate", 8)
					    : remap(from, to, nd->name);
	r.type = remap(from, to, nd->type);
	r.requestor = remap(from, to, nd->requestor);
	r.state = KUBE_ND_UNKNOWN;
	r.ndisrupted = 0;
	r.disrupted = NULL;
	r.nfinalizers = 0;
	r.finalizers = NULL;
	r.retry_count = 0;
	r.next_retry_ms = 0;
	r.status_reason = "";
	r.detail = NULL; /* its ids are @from's; the gate does not read it */
	uint32_t *names = ng_arena_alloc(arena, (nd->nnode_names + 1u) * sizeof(*names));
	if (!names)
		return NG_ENOMEM;
	for (uint16_t i = 0; i < nd->nnode_names; i++)
		names[i] = remap(from, to, nd->node_names[i]);
	r.node_names = names;
	ng_status st = remap_selector(from, to, &nd->node_selector, arena, &r.node_selector);
	if (st == NG_OK)
		*ret = r;
	return st;
}

ng_status pol_evaluate_object(const struct kube_snapshot *cluster, const struct kube_one *obj,
			      int64_t now_wall_ms, struct ng_arena *arena,
			      struct pol_gate_decision *ret, struct ng_err *reterr)
{
	char warning[400];
	ng_status st = pol_check_nd(cluster, obj, NULL, warning, sizeof(warning), reterr);
	if (st != NG_OK)
		return st;
	struct kube_nd nd;
	struct pol_gate_config cfg;
	pol_gate_config_from(cluster, &cfg);
	struct pol_ledger *ledger = pol_ledger_create(cluster);
	st = ledger ? remap_nd(kube_one_pool(obj), cluster, kube_one_nd(obj), arena, &nd)
		    : NG_ENOMEM;
	size_t nall;
	const struct kube_nd *all = kube_snapshot_nds(cluster, &nall);
	if (st == NG_OK && cfg.serial_control_plane) {
		/* The pending requests count for the control-plane rule as in the gate's round. */
		const struct kube_nd **pend = ng_arena_alloc(arena, (nall + 1) * sizeof(*pend));
		size_t np = 0;
		for (size_t i = 0; pend && i < nall; i++)
			if (!all[i].deleting &&
			    (all[i].state == KUBE_ND_UNKNOWN || all[i].state == KUBE_ND_PENDING))
				pend[np++] = &all[i];
		st = pend ? pol_rank_pending(cluster, &cfg, pend, np, arena) : NG_ENOMEM;
	}
	st = st ? st : pol_evaluate_disruption(cluster, &cfg, ledger, &nd, now_wall_ms, arena, ret);
	pol_ledger_destroy(ledger);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "out of memory");
	return NG_OK;
}

/* @r (decoded into @from) in @cluster's ids, as the cluster would hold it: its status is the
 * cluster's copy's (the repairs it remembers), if the cluster has one by that name. */
static ng_status remap_nrem(const struct ng_intern *from, const struct kube_snapshot *cluster,
			    const struct kube_nrem *r, struct ng_arena *arena,
			    struct kube_nrem *ret)
{
	const struct ng_intern *to = kube_snapshot_pool(cluster);
	struct kube_nrem x = *r;
	x.name = remap(from, to, r->name);
	x.nfinalizers = 0;
	x.finalizers = NULL;
	x.error = NG_INTERN_NONE;
	x.nlast = 0;
	x.last = NULL;
	x.storm = false;
	struct kube_rem_condition *conds = ng_arena_alloc(arena, (r->nconds + 1u) * sizeof(*conds));
	if (!conds)
		return NG_ENOMEM;
	for (uint16_t i = 0; i < r->nconds; i++) {
		conds[i] = r->conds[i];
		conds[i].type = remap(from, to, r->conds[i].type);
	}
	x.conds = conds;
	size_t n;
	const struct kube_nrem *all = kube_snapshot_nrems(cluster, &n);
	for (size_t i = 0; x.name != NG_INTERN_NONE && i < n; i++)
		if (all[i].name == x.name) {
			x.nlast = all[i].nlast;
			x.last = all[i].last;
			x.storm = all[i].storm;
			x.storm_since_ms = all[i].storm_since_ms;
		}
	ng_status st = remap_selector(from, to, &r->node_selector, arena, &x.node_selector);
	if (st == NG_OK)
		*ret = x;
	return st;
}

ng_status pol_explain_remediation(const struct kube_snapshot *cluster, const struct kube_one *obj,
				  int64_t now_wall_ms, struct ng_arena *arena,
				  struct pol_rem_explain *ret, struct ng_err *reterr)
{
	const struct kube_nrem *in = kube_one_nrem(obj);
	if (!in)
		return ng_err_set(reterr, NG_EPARSE, 0, "expected a NodeRemediation");
	if (in->invalid)
		return ng_err_set(reterr, NG_EPARSE, 0, "%s",
				  ng_intern_str(kube_one_pool(obj), in->error, NULL));
	const struct ng_intern *from = kube_one_pool(obj);
	struct pol_rem_explain x;
	memset(&x, 0, sizeof(x));
	struct kube_nrem r;
	ng_status st = remap_nrem(from, cluster, in, arena, &r);
	/* templateName and the maxConcurrent and maxUnhealthy percentages stay @from's strings. */
	st = st ? st : pol_remediation_plan_in(cluster, &r, from, now_wall_ms, arena, &x.plan);
	x.decisions = st ? NULL : ng_arena_alloc(arena, (x.plan.n + 1) * sizeof(*x.decisions));
	struct pol_ledger *ledger = x.decisions ? pol_ledger_create(cluster) : NULL;
	if (!ledger) {
		pol_ledger_destroy(ledger);
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	}
	struct pol_gate_config cfg;
	pol_gate_config_from(cluster, &cfg);
	const struct kube_ndt *t = x.plan.tmpl;
	for (size_t i = 0; st == NG_OK && i < x.plan.n; i++) {
		struct pol_rem_node *e = &x.plan.nodes[i];
		if (e->action != POL_REM_CREATE)
			continue;
		/* The request as it would be created, decided as if the ones before it were
		 * granted when they are: the ledger carries each grant to the next. */
		struct kube_nd nd = {.name = r.name != NG_INTERN_NONE ? r.name : e->node,
				     .state = KUBE_ND_UNKNOWN,
				     .type = t->type,
				     .requestor = t->requestor,
				     .priority = t->priority,
				     .nnode_names = 1,
				     .node_names = &e->node,
				     .retry = t->retry,
				     .created_ms = now_wall_ms,
				     .rv = "",
				     .uid = "",
				     .status_reason = ""};
		st = pol_evaluate_disruption(cluster, &cfg, ledger, &nd, now_wall_ms, arena,
					     &x.decisions[i]);
		if (st == NG_OK && x.decisions[i].outcome == POL_GATE_GRANT)
			st = pol_ledger_grant(ledger, nd.name, &e->node, 1);
	}
	pol_ledger_destroy(ledger);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "out of memory");
	*ret = x;
	return NG_OK;
}

/* ---- warnings on admitted budgets ---- */

/* Whether any PVC of namespace @ns (cluster ids) carries labels @sel matches. */
static bool any_pvc(const struct kube_snapshot *cluster, uint32_t ns,
		    const struct kube_selector *sel)
{
	size_t n;
	const struct kube_pvc *pvcs = kube_snapshot_pvcs(cluster, &n);
	for (size_t i = 0; i < n; i++)
		if (pvcs[i].ns == ns && bud_selector_matches(sel, pvcs[i].labels, pvcs[i].nlabels,
							     kube_snapshot_pool(cluster)))
			return true;
	return false;
}

/* ADB @in (ids of @from) selects nothing in @cluster now: no pod, and no PVC by pvcSelector. */
static ng_status adb_selects_nothing(const struct kube_snapshot *cluster,
				     const struct ng_intern *from, const struct kube_adb *in,
				     struct ng_arena *arena, bool *ret)
{
	const struct ng_intern *to = kube_snapshot_pool(cluster);
	struct kube_adb adb = *in;
	adb.b.ns = remap(from, to, in->b.ns);
	ng_status st = remap_selector(from, to, &in->pod_selector, arena, &adb.pod_selector);
	st = st ? st : remap_selector(from, to, &in->pvc_selector, arena, &adb.pvc_selector);
	if (st != NG_OK)
		return st;
	size_t n;
	size_t npods;
	const struct kube_pod *pods = kube_snapshot_pods(cluster, &npods);
	const uint32_t *in_ns =
	    adb.b.ns == NG_INTERN_NONE ? NULL : kube_snapshot_pods_in_ns(cluster, adb.b.ns, &n);
	bool any = adb.pvc_selector.present && adb.b.ns != NG_INTERN_NONE &&
		   any_pvc(cluster, adb.b.ns, &adb.pvc_selector);
	for (size_t i = 0; in_ns && !any && i < n; i++)
		any = bud_adb_selects_pod(cluster, &adb, &pods[in_ns[i]]);
	*ret = !any;
	return NG_OK;
}

/* NDB @in (ids of @from) selects no node of @cluster now. */
static ng_status ndb_selects_nothing(const struct kube_snapshot *cluster,
				     const struct ng_intern *from, const struct kube_ndb *in,
				     struct ng_arena *arena, bool *ret)
{
	struct kube_selector sel;
	ng_status st =
	    remap_selector(from, kube_snapshot_pool(cluster), &in->node_selector, arena, &sel);
	if (st != NG_OK)
		return st;
	size_t n;
	const struct kube_node *nodes = kube_snapshot_nodes(cluster, &n);
	bool any = false;
	for (size_t i = 0; !any && i < n; i++)
		any = bud_selector_matches(&sel, nodes[i].labels, nodes[i].nlabels,
					   kube_snapshot_pool(cluster));
	*ret = !any;
	return NG_OK;
}

void pol_warn_budget(const struct kube_snapshot *cluster, const struct kube_one *obj, char *warning,
		     size_t wcap)
{
	warning[0] = '\0';
	const struct kube_adb *adb = kube_one_adb(obj);
	const struct kube_ndb *ndb = kube_one_ndb(obj);
	size_t nnodes;
	(void)kube_snapshot_nodes(cluster, &nnodes);
	/* No node at all: nodegate has no view of the cluster (yet) to judge selectors by. */
	if ((!adb && !ndb) || nnodes == 0)
		return;
	struct ng_arena *arena = ng_arena_create(1u << 20);
	const struct ng_intern *from = kube_one_pool(obj);
	bool nothing = false;
	ng_status st = !arena ? NG_ENOMEM
		       : adb  ? adb_selects_nothing(cluster, from, adb, arena, &nothing)
			      : ndb_selects_nothing(cluster, from, ndb, arena, &nothing);
	ng_arena_destroy(arena);
	if (st != NG_OK || !nothing)
		return;
	if (adb)
		ng_fmt(warning, wcap,
		       "no pod in namespace %.63s matches spec.podSelector%s now: this budget "
		       "protects nothing until one does",
		       ng_intern_str(from, adb->b.ns, NULL),
		       adb->pvc_selector.present ? " and no PVC spec.pvcSelector" : "");
	else
		ng_fmt(warning, wcap,
		       "no node matches spec.nodeSelector now: this budget limits nothing until "
		       "one does");
}
