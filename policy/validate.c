#include "policy/validate.h"

#include "budgets/budgets.h"
#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "policy/disruption.h"
#include "policy/hook.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* Regexes of drain filters: longer is a mistake, and regcomp's cost grows with it. */
#define MAX_REGEX_BYTES 1024
/* The annotation the mutating webhook writes on create. */
#define CREATED_BY "nodegate.io/created-by"

/* @obj read by the cache's decoder into a snapshot of its own. NULL with why on failure. */
static struct kube_snapshot *decode_one(const cJSON *obj, char *why, size_t cap)
{
	char *json = cJSON_PrintUnformatted(obj);
	struct kube_builder *b = json ? kube_builder_create() : NULL;
	struct kube_snapshot *one = NULL;
	struct ng_err err = {0};
	if (!b) {
		ng_fmt(why, cap, "out of memory");
	} else if (kube_builder_add_json(b, json, strlen(json), &err) != NG_OK) {
		kube_builder_destroy(b);
		/* "object (Kind ns/name): field: problem": the field is what a person needs. */
		const char *msg = strstr(err.msg, "): ");
		ng_fmt(why, cap, "%s", msg ? msg + 3 : err.msg);
	} else if (kube_builder_finish(b, &one) != NG_OK) {
		ng_fmt(why, cap, "out of memory");
		one = NULL;
	}
	cJSON_free(json);
	return one;
}

/* ---- budgets and the config ---- */

static enum pol_check limit_ok(const struct kube_snapshot *one, const struct kube_int_or_string *v,
			       const char *field, char *why, size_t cap)
{
	struct bud_int_or_percent out;
	struct ng_err err = {0};
	if (!v->set)
		return POL_CHECK_OK;
	if (bud_int_or_percent_from(v, kube_snapshot_pool(one), field, &out, &err) == NG_OK)
		return POL_CHECK_OK;
	ng_fmt(why, cap, "%s", err.msg);
	return POL_CHECK_INVALID;
}

static enum pol_check check_adb(const struct kube_snapshot *cluster,
				const struct kube_snapshot *one, const struct kube_adb *adb,
				char *why, size_t cap)
{
	const struct ng_intern *pool = kube_snapshot_pool(one);
	if (adb->b.invalid) {
		ng_fmt(why, cap, "%s", ng_intern_str(pool, adb->b.error, NULL));
		return POL_CHECK_INVALID;
	}
	if (!adb->max_disruptions.set) {
		ng_fmt(why, cap, "spec.maxDisruptions: required");
		return POL_CHECK_INVALID;
	}
	enum pol_check c = limit_ok(one, &adb->max_disruptions, "spec.maxDisruptions", why, cap);
	if (c != POL_CHECK_OK || !adb->hook.present)
		return c;
	if (adb->hook.error != NG_INTERN_NONE) {
		ng_fmt(why, cap, "%s", ng_intern_str(pool, adb->hook.error, NULL));
		return POL_CHECK_INVALID;
	}
	struct kube_hook_policy p;
	pol_hook_policy_from(cluster, &p);
	char reason[300];
	if (pol_hook_allowed(&adb->hook, &p, kube_snapshot_pool(cluster), reason, sizeof(reason)))
		return POL_CHECK_OK;
	ng_fmt(why, cap, "spec.healthHook: %s", reason);
	return strstr(reason, "not allowed") ? POL_CHECK_FORBIDDEN : POL_CHECK_INVALID;
}

static enum pol_check check_ndb(const struct kube_snapshot *one, const struct kube_ndb *ndb,
				char *why, size_t cap)
{
	if (ndb->b.invalid) {
		ng_fmt(why, cap, "%s", ng_intern_str(kube_snapshot_pool(one), ndb->b.error, NULL));
		return POL_CHECK_INVALID;
	}
	if (!ndb->max_disrupted.set && !ndb->min_undisrupted.set) {
		ng_fmt(why, cap,
		       "spec: one of maxDisruptedNodes and minUndisruptedNodes is required");
		return POL_CHECK_INVALID;
	}
	enum pol_check c = limit_ok(one, &ndb->max_disrupted, "spec.maxDisruptedNodes", why, cap);
	return c != POL_CHECK_OK
		   ? c
		   : limit_ok(one, &ndb->min_undisrupted, "spec.minUndisruptedNodes", why, cap);
}

enum pol_check pol_check_budget(const struct kube_snapshot *cluster, const cJSON *obj, char *why,
				size_t cap)
{
	struct kube_snapshot *one = decode_one(obj, why, cap);
	if (!one)
		return POL_CHECK_INVALID;
	size_t n;
	enum pol_check c = POL_CHECK_OK;
	const struct kube_adb *adb = kube_snapshot_adbs(one, &n);
	if (n)
		c = check_adb(cluster, one, adb, why, cap);
	const struct kube_ndb *ndb = kube_snapshot_ndbs(one, &n);
	if (n)
		c = check_ndb(one, ndb, why, cap);
	const struct kube_ngc *ngc = kube_snapshot_ngcs(one, &n);
	if (n && ngc->invalid) {
		ng_fmt(why, cap, "%s", ng_intern_str(kube_snapshot_pool(one), ngc->error, NULL));
		c = POL_CHECK_INVALID;
	}
	kube_snapshot_release(one);
	return c;
}

/* ---- NodeDisruptions ---- */

static bool present(const cJSON *obj, const char *key)
{
	const cJSON *v = ng_json_get(obj, key);
	return v && !cJSON_IsNull(v);
}

/* A label selector string (drain.podSelector and the like) that must parse. */
static enum pol_check selector_string_ok(const cJSON *v, const char *field, char *why, size_t cap)
{
	if (!v || cJSON_IsNull(v))
		return POL_CHECK_OK;
	if (!cJSON_IsString(v)) {
		ng_fmt(why, cap, "%s: expected a label selector string", field);
		return POL_CHECK_INVALID;
	}
	struct ng_intern *pool = ng_intern_create();
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct kube_selector sel;
	struct ng_err err = {0};
	ng_status st = pool && arena ? bud_selector_parse(v->valuestring, strlen(v->valuestring),
							  pool, arena, &sel, &err)
				     : NG_ENOMEM;
	ng_arena_destroy(arena);
	ng_intern_destroy(pool);
	if (st == NG_OK)
		return POL_CHECK_OK;
	ng_fmt(why, cap, "%s: %s", field, st == NG_ENOMEM ? "out of memory" : err.msg);
	return POL_CHECK_INVALID;
}

static enum pol_check drain_ok(const cJSON *drain, char *why, size_t cap)
{
	enum pol_check c = selector_string_ok(ng_json_get(drain, "podSelector"),
					      "spec.drain.podSelector", why, cap);
	if (c == POL_CHECK_OK)
		c = selector_string_ok(
		    ng_json_get(ng_json_get(drain, "waitForPodCompletion"), "podSelector"),
		    "spec.drain.waitForPodCompletion.podSelector", why, cap);
	const cJSON *filters = ng_json_get(drain, "podEvictionFilters");
	size_t i = 0;
	for (const cJSON *f = cJSON_IsArray(filters) ? filters->child : NULL;
	     c == POL_CHECK_OK && f; f = f->next, i++) {
		const cJSON *re = ng_json_get(f, "byResourceNameRegex");
		if (!re || cJSON_IsNull(re))
			continue;
		if (!cJSON_IsString(re) || strlen(re->valuestring) > MAX_REGEX_BYTES) {
			ng_fmt(why, cap,
			       "spec.drain.podEvictionFilters[%zu].byResourceNameRegex: expected a "
			       "regular expression of at most %d bytes",
			       i, MAX_REGEX_BYTES);
			return POL_CHECK_INVALID;
		}
		regex_t rx;
		int rc = regcomp(&rx, re->valuestring, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			char msg[160];
			(void)regerror(rc, &rx, msg, sizeof(msg));
			ng_fmt(why, cap,
			       "spec.drain.podEvictionFilters[%zu].byResourceNameRegex: \"%.80s\" "
			       "does not compile: %s",
			       i, re->valuestring, msg);
			return POL_CHECK_INVALID;
		}
		regfree(&rx);
	}
	return c;
}

/* @spec without the fields that may change once Granted; NULL on OOM. */
static cJSON *frozen_part(const cJSON *spec)
{
	cJSON *c = spec ? cJSON_Duplicate(spec, true) : cJSON_CreateObject();
	if (!c)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(c, "additionalRequestors");
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "retry"),
						"deadline");
	return c;
}

static const char *created_by(const cJSON *obj)
{
	return ng_json_str(ng_json_get(ng_json_get(obj, "metadata"), "annotations"), CREATED_BY);
}

static enum pol_check update_ok(const cJSON *obj, const cJSON *old, char *why, size_t cap)
{
	const char *was = created_by(old), *is = created_by(obj);
	if ((was || is) && (!was || !is || strcmp(was, is) != 0)) {
		ng_fmt(why, cap,
		       "metadata.annotations[%s]: set by nodegate when the request is "
		       "created; it cannot change",
		       CREATED_BY);
		return POL_CHECK_INVALID;
	}
	const char *state = ng_json_str(ng_json_get(old, "status"), "state");
	if (!state || strcmp(state, "Granted") != 0)
		return POL_CHECK_OK;
	cJSON *a = frozen_part(ng_json_get(old, "spec"));
	cJSON *b = frozen_part(ng_json_get(obj, "spec"));
	bool same = a && b && cJSON_Compare(a, b, true);
	cJSON_Delete(a);
	cJSON_Delete(b);
	if (same)
		return POL_CHECK_OK;
	ng_fmt(why, cap,
	       "spec: immutable once Granted, except spec.retry.deadline and "
	       "spec.additionalRequestors (delete the request and create a new one)");
	return POL_CHECK_INVALID;
}

/* Warnings on an admitted request naming its nodes: nodes nodegate does not know, nodes already
 * granted to another request. */
static void warn(const struct kube_snapshot *cluster, const struct kube_nd *nd,
		 const struct ng_intern *pool, char *warning, size_t wcap)
{
	const struct ng_intern *cpool = kube_snapshot_pool(cluster);
	size_t at = 0, unknown = 0;
	for (uint16_t i = 0; i < nd->nnode_names; i++) {
		size_t len;
		const char *name = ng_intern_str(pool, nd->node_names[i], &len);
		uint32_t id = ng_intern_find(cpool, name, len);
		const struct kube_node *node =
		    id == NG_INTERN_NONE ? NULL : kube_snapshot_find_node(cluster, id);
		const struct kube_nd *holder = node ? kube_snapshot_node_grant(cluster, id) : NULL;
		if (!node && unknown++ < 5 && at + 1 < wcap) {
			ng_fmt(warning + at, wcap - at, "%snode %.63s is not in the cluster",
			       at ? "; " : "", name);
			at += strlen(warning + at);
		} else if (holder && at + 1 < wcap &&
			   strcmp(ng_intern_str(cpool, holder->name, NULL),
				  ng_intern_str(pool, nd->name, NULL)) != 0) {
			ng_fmt(warning + at, wcap - at,
			       "%snode %.63s is already granted to NodeDisruption %.100s",
			       at ? "; " : "", name, ng_intern_str(cpool, holder->name, NULL));
			at += strlen(warning + at);
		}
	}
}

/* pol_check_nd(); when the request passes and @ret_one is not NULL, the decoded request is
 * handed over there (the caller releases it) instead of being decoded again. */
static enum pol_check check_nd(const struct kube_snapshot *cluster, const cJSON *obj,
			       const cJSON *old, char *why, size_t cap, char *warning, size_t wcap,
			       struct kube_snapshot **ret_one)
{
	warning[0] = '\0';
	const cJSON *spec = ng_json_get(obj, "spec");
	if (present(spec, "nodeSelector") == present(spec, "nodeNames")) {
		ng_fmt(why, cap, "spec: exactly one of nodeSelector and nodeNames is required");
		return POL_CHECK_INVALID;
	}
	struct kube_snapshot *one = decode_one(obj, why, cap);
	if (!one)
		return POL_CHECK_INVALID;
	size_t n;
	const struct kube_nd *nd = kube_snapshot_nds(one, &n);
	const struct ng_intern *pool = kube_snapshot_pool(one);
	enum pol_check c = POL_CHECK_OK;
	if (n != 1) {
		ng_fmt(why, cap, "kind: expected a NodeDisruption");
		c = POL_CHECK_INVALID;
	} else if (nd->selector_invalid) {
		ng_fmt(why, cap, "%s", ng_intern_str(pool, nd->selector_error, NULL));
		c = POL_CHECK_INVALID;
	} else if (present(spec, "nodeSelector") && nd->node_selector.nreqs == 0) {
		ng_fmt(why, cap,
		       "spec.nodeSelector: {} would select every node: give labels to "
		       "match, or name the nodes in spec.nodeNames");
		c = POL_CHECK_INVALID;
	}
	if (c == POL_CHECK_OK)
		c = drain_ok(ng_json_get(spec, "drain"), why, cap);
	if (c == POL_CHECK_OK && old)
		c = update_ok(obj, old, why, cap);
	if (c == POL_CHECK_OK)
		warn(cluster, nd, pool, warning, wcap);
	if (c == POL_CHECK_OK && ret_one)
		*ret_one = one;
	else
		kube_snapshot_release(one);
	return c;
}

enum pol_check pol_check_nd(const struct kube_snapshot *cluster, const cJSON *obj, const cJSON *old,
			    char *why, size_t cap, char *warning, size_t wcap)
{
	return check_nd(cluster, obj, old, why, cap, warning, wcap, NULL);
}

/* The fields that are the gate's decision. */
static const char *const decision_fields[] = {"state", "disruptedNodes", "grantedAt",
					      "disruptedDisruptionBudgets"};

enum pol_check pol_check_nd_status(const cJSON *obj, const cJSON *old, const char *user,
				   const char *const *deciders, size_t ndeciders, char *why,
				   size_t cap)
{
	for (size_t i = 0; i < ndeciders; i++)
		if (strcmp(user, deciders[i]) == 0)
			return POL_CHECK_OK;
	const cJSON *st = ng_json_get(obj, "status"), *was = ng_json_get(old, "status");
	for (size_t i = 0; i < sizeof(decision_fields) / sizeof(decision_fields[0]); i++) {
		const cJSON *a = ng_json_get(was, decision_fields[i]);
		const cJSON *b = ng_json_get(st, decision_fields[i]);
		bool same = (!a || cJSON_IsNull(a)) && (!b || cJSON_IsNull(b));
		same = same || (a && b && cJSON_Compare(a, b, true));
		if (same)
			continue;
		ng_fmt(why, cap,
		       "status.%s: only nodegate (%s) decides a NodeDisruption; %.100s may not "
		       "change it",
		       decision_fields[i], ndeciders ? deciders[0] : "its service account", user);
		return POL_CHECK_FORBIDDEN;
	}
	return POL_CHECK_OK;
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

/* @nd (decoded into @one) re-expressed in @cluster's ids, arrays from @arena. */
static ng_status remap_nd(const struct kube_snapshot *one, const struct kube_snapshot *cluster,
			  const struct kube_nd *nd, struct ng_arena *arena, struct kube_nd *ret)
{
	const struct ng_intern *from = kube_snapshot_pool(one), *to = kube_snapshot_pool(cluster);
	struct kube_nd r = *nd;
	r.name = remap(from, to, nd->name);
	r.type = remap(from, to, nd->type);
	r.requestor = remap(from, to, nd->requestor);
	r.state = KUBE_ND_UNKNOWN;
	r.ndisrupted = 0;
	r.disrupted = NULL;
	r.nfinalizers = 0;
	r.finalizers = NULL;
	uint32_t *names = ng_arena_alloc(arena, (nd->nnode_names + 1u) * sizeof(*names));
	struct kube_requirement *reqs =
	    ng_arena_alloc(arena, (nd->node_selector.nreqs + 1u) * sizeof(*reqs));
	if (!names || !reqs)
		return NG_ENOMEM;
	for (uint16_t i = 0; i < nd->nnode_names; i++)
		names[i] = remap(from, to, nd->node_names[i]);
	r.node_names = names;
	for (uint16_t i = 0; i < nd->node_selector.nreqs; i++) {
		const struct kube_requirement *q = &nd->node_selector.reqs[i];
		uint32_t *vals = ng_arena_alloc(arena, (q->nvalues + 1u) * sizeof(*vals));
		if (!vals)
			return NG_ENOMEM;
		for (uint16_t k = 0; k < q->nvalues; k++)
			vals[k] = remap(from, to, q->values[k]);
		reqs[i] = *q;
		reqs[i].key = remap(from, to, q->key);
		reqs[i].values = vals;
	}
	r.node_selector.reqs = reqs;
	*ret = r;
	return NG_OK;
}

enum pol_check pol_evaluate_object(const struct kube_snapshot *cluster, const cJSON *obj,
				   int64_t now_ms, struct ng_arena *arena,
				   struct pol_gate_decision *ret, char *why, size_t cap)
{
	char warning[400];
	struct kube_snapshot *one = NULL;
	enum pol_check c = check_nd(cluster, obj, NULL, why, cap, warning, sizeof(warning), &one);
	if (c != POL_CHECK_OK)
		return c;
	size_t n;
	struct kube_nd nd;
	struct pol_gate_config cfg;
	pol_gate_config_from(cluster, &cfg);
	struct pol_ledger *ledger = pol_ledger_create(cluster);
	ng_status st =
	    ledger ? remap_nd(one, cluster, kube_snapshot_nds(one, &n), arena, &nd) : NG_ENOMEM;
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
	st = st ? st : pol_evaluate_disruption(cluster, &cfg, ledger, &nd, now_ms, arena, ret);
	pol_ledger_destroy(ledger);
	kube_snapshot_release(one);
	if (st != NG_OK) {
		ng_fmt(why, cap, "out of memory");
		return POL_CHECK_INVALID;
	}
	return POL_CHECK_OK;
}
