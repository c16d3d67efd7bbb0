/* NodeGateConfig, NodeDisruptionTemplate and NodeRemediation. */
#include "kube/decode_internal.h"
#include "kube/one.h"

#include "kube/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/cron.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/regex.h"
#include "common/tz.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry of healthHooks.allowedCIDRs: "10.0.0.0/8", "fd00::/8", or an address alone. */
static bool parse_cidr(const char *s, struct kube_cidr *ret)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(addr))
		return false;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, addr, ret->addr) == 1)
		ret->family = 4;
	else if (inet_pton(AF_INET6, addr, ret->addr) == 1)
		ret->family = 6;
	else
		return false;
	int64_t max = ret->family == 4 ? 32 : 128, bits = max;
	if (slash && ng_parse_i64(slash + 1, strlen(slash + 1), 0, max, &bits) != NG_OK)
		return false;
	ret->bits = (uint8_t)bits;
	return true;
}

/* spec.healthHooks; problems go to @verr (the config is then invalid). */
static ng_status decode_hook_policy(struct kd_ctx *c, const cJSON *j, struct kube_hook_policy *p,
				    struct ng_err *verr)
{
	p->allow_service_refs = !cJSON_IsFalse(ng_json_get(j, "allowServiceRefs"));
	p->allow_http = cJSON_IsTrue(ng_json_get(j, "allowHTTP"));
	p->max_response_bytes = 65536;
	const cJSON *mx = ng_json_get(j, "maxResponseBytes");
	if (mx && !cJSON_IsNull(mx) &&
	    (!ng_json_int64(mx, &p->max_response_bytes) || p->max_response_bytes < 1 ||
	     p->max_response_bytes > 16 * 1024 * 1024))
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.healthHooks.maxResponseBytes: must be 1..16777216");
	p->terminate_deadline_s = KUBE_DEFAULT_TERMINATE_DEADLINE_S;
	const cJSON *td = ng_json_get(j, "terminateDeadlineSeconds");
	if (td && !cJSON_IsNull(td) &&
	    (!ng_json_int64(td, &p->terminate_deadline_s) || p->terminate_deadline_s < 1 ||
	     p->terminate_deadline_s > 86400))
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.healthHooks.terminateDeadlineSeconds: must be 1..86400");
	ng_status st =
	    kd_decode_str_array(c, ng_json_get(j, "allowedHosts"), "spec.healthHooks.allowedHosts",
				NG_MAX_LABELS, &p->hosts, &p->nhosts);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		*verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	const cJSON *cidrs = ng_json_get(j, "allowedCIDRs");
	if (!cidrs || cJSON_IsNull(cidrs))
		return NG_OK;
	size_t n = cJSON_IsArray(cidrs) ? (size_t)cJSON_GetArraySize(cidrs) : 0;
	if (!cJSON_IsArray(cidrs) || n > NG_MAX_LABELS) {
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.healthHooks.allowedCIDRs: expected at most %d strings",
				 NG_MAX_LABELS);
		return NG_OK;
	}
	struct kube_cidr *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "spec.healthHooks.allowedCIDRs", "out of memory");
	size_t i = 0;
	for (const cJSON *e = cidrs->child; e; e = e->next, i++)
		if (!cJSON_IsString(e) || !parse_cidr(e->valuestring, &out[i])) {
			(void)ng_err_set(verr, NG_EPARSE, 0,
					 "spec.healthHooks.allowedCIDRs[%zu]: not a CIDR like "
					 "10.0.0.0/8 or fd00::/8",
					 i);
			return NG_OK;
		}
	p->cidrs = out;
	p->ncidrs = (uint16_t)n;
	return NG_OK;
}

/* spec.alertGate's scalar fields @j into @a, or why not into @why: timeoutSeconds, cacheSeconds,
 * failurePolicy, and exactly one of query and alertNameRegex (the regex compiled as the gate
 * matches it: ng_regex_get_label_matcher()). */
static void alert_form(const cJSON *j, struct kube_alert_gate *a, char *why, size_t cap)
{
	const cJSON *to = ng_json_get(j, "timeoutSeconds"), *cs = ng_json_get(j, "cacheSeconds");
	const cJSON *q = ng_json_get(j, "query"), *re = ng_json_get(j, "alertNameRegex");
	const cJSON *fp = ng_json_get(j, "failurePolicy");
	bool has_q = q && !cJSON_IsNull(q), has_re = re && !cJSON_IsNull(re);
	int64_t secs = 5, cache = 10;
	if (to && !cJSON_IsNull(to) && (!ng_json_int64(to, &secs) || secs < 1 || secs > 30))
		ng_fmt(why, cap, "spec.alertGate.timeoutSeconds: must be 1..30");
	else if (cs && !cJSON_IsNull(cs) &&
		 (!ng_json_int64(cs, &cache) || cache < 1 || cache > 300))
		ng_fmt(why, cap, "spec.alertGate.cacheSeconds: must be 1..300");
	else if (fp && !cJSON_IsNull(fp) &&
		 (!cJSON_IsString(fp) ||
		  (strcmp(fp->valuestring, "Deny") != 0 && strcmp(fp->valuestring, "Ignore") != 0)))
		ng_fmt(why, cap, "spec.alertGate.failurePolicy: must be Deny or Ignore");
	else if (has_q == has_re)
		ng_fmt(why, cap,
		       "spec.alertGate: exactly one of query and alertNameRegex is required");
	else if (has_q && (!cJSON_IsString(q) || !*q->valuestring ||
			   strlen(q->valuestring) > KUBE_ALERT_QUERY_MAX))
		ng_fmt(why, cap,
		       "spec.alertGate.query: expected a non-empty string of at most %d bytes",
		       KUBE_ALERT_QUERY_MAX);
	else if (has_re && (!cJSON_IsString(re) || !*re->valuestring ||
			    strlen(re->valuestring) > KUBE_ALERT_REGEX_MAX))
		ng_fmt(why, cap,
		       "spec.alertGate.alertNameRegex: expected a non-empty string of at most %d "
		       "bytes",
		       KUBE_ALERT_REGEX_MAX);
	a->target.timeout_s = (int32_t)secs;
	a->cache_s = (int32_t)cache;
	a->fail_open = cJSON_IsString(fp) && strcmp(fp->valuestring, "Ignore") == 0;
	a->mode = has_q ? KUBE_ALERT_QUERY : KUBE_ALERT_REGEX;
	if (*why || !has_re)
		return;
	/* Compiled as the gate matches alert names: as Prometheus matches a label value. */
	struct ng_regex *compiled = NULL;
	struct ng_err err = {0};
	if (ng_regex_get_label_matcher(re->valuestring, strlen(re->valuestring), &compiled, &err) !=
	    NG_OK)
		ng_fmt(why, cap, "spec.alertGate.alertNameRegex: %.120s", err.msg);
	ng_regex_put(compiled);
}

/* spec.alertGate.prometheusURL @url into @a->target (the arena's copy, without a trailing '/'),
 * or why not: an https URL without credentials, query or fragment. Only OOM fails. */
static ng_status alert_url(struct kd_ctx *c, const cJSON *url, struct kube_alert_gate *a, char *why,
			   size_t cap)
{
	static const char field[] = "spec.alertGate.prometheusURL";
	if (!cJSON_IsString(url) || !*url->valuestring) {
		ng_fmt(why, cap, "%s: expected a non-empty string", field);
		return NG_OK;
	}
	size_t len = strlen(url->valuestring);
	if (len > HOOK_URL_MAX) {
		ng_fmt(why, cap, "%s: longer than %d bytes", field, HOOK_URL_MAX);
		return NG_OK;
	}
	if (strpbrk(url->valuestring, "?# \t\r\n")) {
		ng_fmt(why, cap, "%s: must hold no query, fragment or spaces", field);
		return NG_OK;
	}
	ng_status st = kd_hook_parts(c, url->valuestring, field, &a->target, why, cap);
	if (st != NG_OK || *why)
		return st;
	if (strcmp(a->target.scheme, "https") != 0)
		ng_fmt(why, cap, "%s: must be an https URL", field);
	else if (a->target.userinfo)
		ng_fmt(why, cap, "%s: must carry no credentials", field);
	while (len > 0 && url->valuestring[len - 1] == '/')
		len--;
	if (!*why && !(a->target.url = ng_arena_strndup(c->arena, url->valuestring, len)))
		return kd_fail(c, NG_ENOMEM, field, "out of memory");
	return NG_OK;
}

/* spec.alertGate @j into @a; a problem goes to @verr (the config is then invalid and @a stays
 * NONE). Only OOM fails. */
static ng_status decode_alert_gate(struct kd_ctx *c, const cJSON *j, struct kube_alert_gate *a,
				   struct ng_err *verr)
{
	char why[160] = "";
	memset(a, 0, sizeof(*a));
	a->target.error = NG_INTERN_NONE;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j))
		ng_fmt(why, sizeof(why), "spec.alertGate: expected an object");
	else
		alert_form(j, a, why, sizeof(why));
	const cJSON *ca = ng_json_get(j, "caBundle");
	ng_status st = NG_OK;
	if (!*why)
		st = alert_url(c, ng_json_get(j, "prometheusURL"), a, why, sizeof(why));
	if (st == NG_OK && !*why && ca && !cJSON_IsNull(ca)) {
		if (!cJSON_IsString(ca))
			ng_fmt(why, sizeof(why),
			       "spec.alertGate.caBundle: expected a base64 string");
		else if (*ca->valuestring)
			st = kd_hook_ca(c, ca, "spec.alertGate.caBundle", &a->target, why,
					sizeof(why));
	}
	const cJSON *e = ng_json_get(j, a->mode == KUBE_ALERT_QUERY ? "query" : "alertNameRegex");
	if (st == NG_OK && !*why && !(a->expr = kd_dup_or_empty(c, e->valuestring)))
		st = kd_fail(c, NG_ENOMEM, "spec.alertGate", "out of memory");
	if (st != NG_OK)
		return st;
	if (*why) {
		memset(a, 0, sizeof(*a));
		a->target.error = NG_INTERN_NONE;
		kd_problem(verr, "%s", why);
		return NG_OK;
	}
	a->target.present = true;
	return NG_OK;
}

/* NodeGateConfig spec.drain: protected namespaces and Job pods, the attempts' backoff. A
 * problem goes to @verr (the config is then invalid); only OOM fails. */
static ng_status decode_ngc_drain(struct kd_ctx *c, const cJSON *d, struct kube_ngc *g,
				  struct ng_err *verr)
{
	static const char *const skeys[2] = {"protectedNamespaces", "protectedJobPods"};
	struct kube_selector *sels[2] = {&g->protected_namespaces, &g->protected_job_pods};
	for (int k = 0; k < 2; k++) {
		const cJSON *j = ng_json_get(d, skeys[k]);
		if (!j || cJSON_IsNull(j))
			continue;
		char field[48];
		ng_fmt(field, sizeof(field), "spec.drain.%s", skeys[k]);
		ng_status st = kube_decode_selector(c->pool, c->arena, j, field, sels[k], verr);
		/* A selector over the limits makes the config invalid too: it never goes unread. */
		if (st == NG_ENOMEM)
			return kd_fail(c, st, field, "out of memory");
	}
	ng_status st =
	    kd_drain_rules(c, ng_json_get(d, "rules"), &g->drain_rules, &g->ndrain_rules, verr);
	if (st != NG_OK)
		return st;
	const cJSON *dl = ng_json_get(d, "deadlineSeconds");
	g->drain_deadline_s = -1;
	/* A year bounds a drain; more is a typo. */
	if (dl && !cJSON_IsNull(dl) &&
	    (!ng_json_int64(dl, &g->drain_deadline_s) || g->drain_deadline_s < 1 ||
	     g->drain_deadline_s > 31536000)) {
		g->drain_deadline_s = -1;
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.drain.deadlineSeconds: must be an integer of seconds in "
				 "1..31536000");
	}
	const cJSON *b = ng_json_get(d, "backoff");
	static const char *const bkeys[3] = {"base", "max", "jitter"};
	int64_t *bvals[3] = {&g->drain_backoff_base_ms, &g->drain_backoff_max_ms,
			     &g->drain_backoff_jitter_ms};
	for (int k = 0; k < 3; k++) {
		const cJSON *v = ng_json_get(b, bkeys[k]);
		int64_t secs;
		*bvals[k] = -1;
		if (!v || cJSON_IsNull(v))
			continue;
		/* A day bounds a backoff; more is a typo. */
		if (!ng_json_int64(v, &secs) || secs < 0 || secs > 86400)
			(void)ng_err_set(verr, NG_EPARSE, 0,
					 "spec.drain.backoff.%s: must be an integer of seconds in "
					 "0..86400",
					 bkeys[k]);
		else
			*bvals[k] = secs * 1000;
	}
	return NG_OK;
}

/* NodeGateConfig spec.lifecycle: the defaults of requests that set no deadline or TTL. A problem
 * goes to @verr (the config is then invalid). */
static void decode_ngc_lifecycle(const cJSON *l, struct kube_ngc *g, struct ng_err *verr)
{
	static const char *const keys[2] = {"defaultActiveDeadlineSeconds",
					    "defaultTTLSecondsAfterCompletion"};
	int64_t *vals[2] = {&g->default_deadline_s, &g->default_ttl_s};
	bool *has[2] = {&g->has_default_deadline, &g->has_default_ttl};
	for (int k = 0; k < 2; k++) {
		const cJSON *v = ng_json_get(l, keys[k]);
		int64_t secs;
		if (!v || cJSON_IsNull(v))
			continue;
		if (!ng_json_int64(v, &secs) || secs < 0 || secs > KUBE_MAX_LIFECYCLE_S) {
			(void)ng_err_set(
			    verr, NG_EPARSE, 0,
			    "spec.lifecycle.%s: must be an integer of seconds in 0..%d", keys[k],
			    KUBE_MAX_LIFECYCLE_S);
		} else {
			*vals[k] = secs;
			*has[k] = true;
		}
	}
}

/* spec.eviction.autoRequestIdleSeconds: absent or null is the default. */
static void decode_auto_idle(const cJSON *v, struct kube_ngc *g, struct ng_err *verr)
{
	int64_t secs;
	g->auto_request_idle_s = KUBE_DEFAULT_AUTO_IDLE_S;
	if (!v || cJSON_IsNull(v))
		return;
	if (!ng_json_int64(v, &secs) || secs < KUBE_MIN_AUTO_IDLE_S || secs > KUBE_MAX_AUTO_IDLE_S)
		(void)ng_err_set(
		    verr, NG_EPARSE, 0,
		    "spec.eviction.autoRequestIdleSeconds: must be an integer of seconds "
		    "in %d..%d",
		    KUBE_MIN_AUTO_IDLE_S, KUBE_MAX_AUTO_IDLE_S);
	else
		g->auto_request_idle_s = secs;
}

/* NodeGateConfig spec.eviction.exemptUsers holds no entry kube_exempt_entry_problem refuses
 * ("*" alone); else @verr says which. Checked here, not by the CRD alone: a config that reaches
 * the cache some other way (a snapshot file, an older CRD) must not exempt everyone either, and
 * before the list is interned, so a refused config leaves no string without a record. */
static bool exempt_entries_valid(const cJSON *users, struct ng_err *verr)
{
	size_t idx = 0;
	for (const cJSON *e = cJSON_IsArray(users) ? users->child : NULL; e; e = e->next, idx++) {
		const char *why =
		    cJSON_IsString(e) ? kube_exempt_entry_problem(e->valuestring) : NULL;
		if (why) {
			(void)ng_err_set(verr, NG_EPARSE, 0, "spec.eviction.exemptUsers[%zu]: %s",
					 idx, why);
			return false;
		}
	}
	return true;
}

ng_status kube_eviction_mode_parse(const char *s, enum kube_eviction_mode *ret)
{
	if (strcmp(s, "Enforce") == 0)
		*ret = KUBE_EVICTION_ENFORCE;
	else if (strcmp(s, "Warn") == 0)
		*ret = KUBE_EVICTION_WARN;
	else if (strcmp(s, "Off") == 0)
		*ret = KUBE_EVICTION_OFF;
	else
		return NG_EPARSE;
	return NG_OK;
}

/* spec.clusterAPI: enabled (default true) gates Cluster API Machine deletions. Anything but an
 * object with a boolean enabled is refused, naming the field. */
static void decode_cluster_api(const cJSON *capi, struct kube_ngc *g, struct ng_err *verr)
{
	if (!capi || cJSON_IsNull(capi))
		return;
	if (!cJSON_IsObject(capi)) {
		(void)ng_err_set(verr, NG_EPARSE, 0, "spec.clusterAPI: expected an object");
		return;
	}
	const cJSON *on = ng_json_get(capi, "enabled");
	if (on && !cJSON_IsNull(on) && !cJSON_IsBool(on))
		(void)ng_err_set(verr, NG_EPARSE, 0, "spec.clusterAPI.enabled: expected a boolean");
	else
		g->capi_disabled = cJSON_IsFalse(on);
}

/* spec.paused, the request rules, spec.controlPlane and spec.retry of a NodeGateConfig. */
static ng_status ngc_control(struct kd_ctx *c, const cJSON *spec, struct kube_ngc *g,
			     struct ng_err *verr)
{
	g->paused = cJSON_IsTrue(ng_json_get(spec, "paused"));
	ng_status xst = kd_decode_exclusions(c, spec, &g->exclusions, &g->nexclusions, verr);
	if (xst != NG_OK)
		return xst;
	g->reject_empty = !cJSON_IsFalse(ng_json_get(spec, "rejectEmptyDisruptions"));
	g->reject_overlapping = cJSON_IsTrue(ng_json_get(spec, "rejectOverlappingDisruptions"));
	g->no_node_conditions = cJSON_IsFalse(ng_json_get(spec, "nodeConditions"));
	g->no_protect_held = cJSON_IsFalse(ng_json_get(spec, "protectHeldNodes"));
	const cJSON *cp = ng_json_get(spec, "controlPlane");
	g->serial_control_plane = !cJSON_IsFalse(ng_json_get(cp, "serial"));
	const cJSON *cpsel = ng_json_get(cp, "selector");
	if (cpsel && !cJSON_IsNull(cpsel)) {
		ng_status sst =
		    kube_decode_selector(c->pool, c->arena, cpsel, "spec.controlPlane.selector",
					 &g->control_plane_selector, verr);
		if (sst == NG_ENOMEM)
			return kd_fail(c, sst, "spec.controlPlane.selector", "out of memory");
	}
	const cJSON *retry = ng_json_get(spec, "retry");
	static const char *const rkeys[2] = {"initialIntervalSeconds", "maxIntervalSeconds"};
	int64_t *rvals[2] = {&g->retry_initial_ms, &g->retry_max_ms};
	for (int k = 0; k < 2; k++) {
		const cJSON *v = ng_json_get(retry, rkeys[k]);
		int64_t secs;
		if (!v || cJSON_IsNull(v))
			continue;
		/* A day bounds a retry interval; more is a typo. */
		if (!ng_json_int64(v, &secs) || secs < 1 || secs > 86400)
			(void)ng_err_set(verr, NG_EPARSE, 0,
					 "spec.retry.%s: must be an integer of seconds in 1..86400",
					 rkeys[k]);
		else
			*rvals[k] = secs * 1000;
	}
	return NG_OK;
}

ng_status kd_decode_ngc(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_ngc *g = kd_record(c, KUBE_RES_NGCS);
	g->name = name;
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *ev = ng_json_get(spec, "eviction");
	const char *mode = ng_json_str(ev, "mode");
	struct ng_err verr = {0};
	ng_status cst = ngc_control(c, spec, g, &verr);
	if (cst != NG_OK)
		return cst;
	enum kube_eviction_mode em = KUBE_EVICTION_UNSET;
	if (mode && kube_eviction_mode_parse(mode, &em) != NG_OK)
		(void)ng_err_set(&verr, NG_EPARSE, 0,
				 "spec.eviction.mode: \"%.40s\" is not one of Enforce, Warn, Off",
				 mode);
	g->eviction_mode = (uint8_t)em;
	ng_status tst =
	    kd_decode_str_array(c, ng_json_get(spec, "allowedTypes"), "spec.allowedTypes",
				NG_MAX_LABELS, &g->allowed_types, &g->nallowed_types);
	if (tst == NG_EPARSE || tst == NG_ELIMIT)
		verr = *c->err;
	else if (tst != NG_OK)
		return tst;
	g->auto_request = cJSON_IsTrue(ng_json_get(ev, "autoRequest"));
	decode_auto_idle(ng_json_get(ev, "autoRequestIdleSeconds"), g, &verr);
	g->respect_pdbs = cJSON_IsTrue(ng_json_get(spec, "respectPodDisruptionBudgets"));
	decode_cluster_api(ng_json_get(spec, "clusterAPI"), g, &verr);
	const cJSON *m8s = ng_json_get(spec, "medik8sLeases");
	g->medik8s_leases = cJSON_IsTrue(m8s);
	if (m8s && !cJSON_IsNull(m8s) && !cJSON_IsBool(m8s))
		(void)ng_err_set(&verr, NG_EPARSE, 0, "spec.medik8sLeases: must be true or false");
	const cJSON *users = ng_json_get(ev, "exemptUsers");
	g->has_exempt_users = users && !cJSON_IsNull(users);
	if (!exempt_entries_valid(users, &verr))
		users = NULL;
	ng_status st = kd_decode_str_array(c, users, "spec.eviction.exemptUsers", NG_MAX_LABELS,
					   &g->exempt_users, &g->nexempt);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	if ((st = decode_hook_policy(c, ng_json_get(spec, "healthHooks"), &g->hooks, &verr)) !=
	    NG_OK)
		return st;
	st = kd_decode_str_array(c, ng_json_get(spec, "doNotDisruptOverrideTypes"),
				 "spec.doNotDisruptOverrideTypes", NG_MAX_LABELS, &g->dnd_override,
				 &g->ndnd_override);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	if ((st = decode_ngc_drain(c, ng_json_get(spec, "drain"), g, &verr)) != NG_OK)
		return st;
	decode_ngc_lifecycle(ng_json_get(spec, "lifecycle"), g, &verr);
	if ((st = decode_alert_gate(c, ng_json_get(spec, "alertGate"), &g->alert, &verr)) != NG_OK)
		return st;
	if (verr.status == NG_OK)
		return NG_OK;
	memset(&g->alert, 0, sizeof(g->alert));
	/* An unreadable config enforces: it must never loosen the eviction guard. */
	g->invalid = true;
	g->eviction_mode = KUBE_EVICTION_ENFORCE;
	g->auto_request = false;
	g->has_exempt_users = false;
	g->nexempt = 0;
	/* Nor does it end requests by defaults it could not read. */
	g->has_default_deadline = g->has_default_ttl = false;
	return kd_intern(c, verr.msg, &g->error);
}

/* The author annotations of @meta (KUBE_AUTHOR_ANNOTATION, KUBE_AUTHOR_GROUPS_ANNOTATION) into
 * @a: no author unless both are there and the groups are a JSON array of at most
 * KUBE_MAX_AUTHOR_GROUPS strings in at most KUBE_MAX_AUTHOR_GROUPS_BYTES. */
static ng_status decode_author(struct kd_ctx *c, const cJSON *meta, struct kube_author *a)
{
	a->name = NG_INTERN_NONE;
	a->ngroups = 0;
	a->groups = NULL;
	const cJSON *ann = ng_json_get(meta, "annotations");
	const char *by = ng_json_str(ann, KUBE_AUTHOR_ANNOTATION);
	const char *gs = ng_json_str(ann, KUBE_AUTHOR_GROUPS_ANNOTATION);
	size_t len = gs ? strnlen(gs, KUBE_MAX_AUTHOR_GROUPS_BYTES + 1) : 0;
	if (!by || !*by || !gs || len > KUBE_MAX_AUTHOR_GROUPS_BYTES)
		return NG_OK;
	cJSON *root = NULL;
	struct ng_err e = {0};
	if (ng_json_parse(gs, len, NULL, &root, &e) != NG_OK || !cJSON_IsArray(root) ||
	    cJSON_GetArraySize(root) > KUBE_MAX_AUTHOR_GROUPS) {
		cJSON_Delete(root);
		return NG_OK;
	}
	size_t n = (size_t)cJSON_GetArraySize(root), i = 0;
	uint32_t *ids = n ? kd_alloc(c, n * sizeof(*ids)) : NULL;
	ng_status st =
	    n && !ids ? kd_fail(c, NG_ENOMEM, "metadata.annotations", "out of memory") : NG_OK;
	for (const cJSON *g = root->child; st == NG_OK && g; g = g->next, i++) {
		if (!cJSON_IsString(g)) {
			cJSON_Delete(root);
			return NG_OK;
		}
		st = kd_intern(c, g->valuestring, &ids[i]);
	}
	cJSON_Delete(root);
	st = st ? st : kd_intern(c, by, &a->name);
	if (st != NG_OK) {
		a->name = NG_INTERN_NONE;
		return st;
	}
	a->ngroups = (uint16_t)n;
	a->groups = ids;
	return NG_OK;
}

/* A NodeDisruptionTemplate: its spec kept whole (canonical JSON) for the requests, and checked
 * as a request's spec.drain and spec.operation are, so a broken template is reported on the
 * NodeRemediation instead of as a refused create per node. */
ng_status kd_decode_ndt(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_ndt *t = kd_record(c, KUBE_RES_NDTS);
	t->name = name;
	t->error = t->type = t->requestor = NG_INTERN_NONE;
	const cJSON *spec = ng_json_get(o, "spec");
	struct ng_err verr = {0};
	if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
		kd_problem(&verr, "spec: expected an object");
	struct kube_nd_drain dr = {0};
	struct kube_nd_operation op = {0};
	/* Only the problem is kept of spec.drain: its strings (taint, rules' selectors) go to a
	 * pool of their own, so the cache's holds no string the record does not. */
	struct ng_intern *own = ng_intern_create();
	struct kd_ctx dc = *c;
	dc.pool = own;
	ng_status st = !own ? kd_fail(c, NG_ENOMEM, "spec.drain", "out of memory")
		       : cJSON_IsObject(spec)
			   ? kd_nd_drain(&dc, ng_json_get(spec, "drain"), &dr, &verr)
			   : NG_OK;
	ng_intern_destroy(own);
	st = st || !cJSON_IsObject(spec)
		 ? st
		 : kd_nd_operation(c, ng_json_get(spec, "operation"), &op, &verr);
	int64_t prio = 0;
	if (ng_json_int64(ng_json_get(spec, "priority"), &prio) && prio >= INT32_MIN &&
	    prio <= INT32_MAX)
		t->priority = (int32_t)prio;
	t->retry = cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled"));
	t->privileged = op.privileged;
	st = st ? st : decode_author(c, ng_json_get(o, "metadata"), &t->author);
	const char *type = ng_json_str(spec, "type"), *req = ng_json_str(spec, "requestor");
	if (st == NG_OK && type)
		st = kd_intern(c, type, &t->type);
	if (st == NG_OK && req)
		st = kd_intern(c, req, &t->requestor);
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	if (st == NG_OK)
		st = cJSON_IsObject(spec) ? kd_canonical_json(c, spec, &b) : ng_buf_puts(&b, "{}");
	if (st == NG_OK && !(t->spec_json = ng_arena_strndup(c->arena, b.data, b.len)))
		st = NG_ENOMEM;
	ng_buf_finish(&b);
	if (st != NG_OK)
		return kd_fail(c, st, "spec", ng_status_str(st));
	return verr.status != NG_OK ? kd_intern(c, verr.msg, &t->error) : NG_OK;
}

/* spec.rule.conditions: 1..KUBE_MAX_REM_CONDITIONS of {type, status True|False|Unknown,
 * forSeconds >= 0}. */
static ng_status nrem_conditions(struct kd_ctx *c, const cJSON *rule, struct kube_nrem *r,
				 struct ng_err *verr)
{
	const cJSON *conds = ng_json_get(rule, "conditions");
	size_t n = cJSON_IsArray(conds) ? (size_t)cJSON_GetArraySize(conds) : 0;
	if (n == 0 || n > KUBE_MAX_REM_CONDITIONS) {
		kd_problem(verr, "spec.rule.conditions: expected 1 to %d conditions",
			   KUBE_MAX_REM_CONDITIONS);
		return NG_OK;
	}
	struct kube_rem_condition *out = kd_alloc(c, n * sizeof(*out));
	if (!out)
		return kd_fail(c, NG_ENOMEM, "spec.rule.conditions", "out of memory");
	size_t i = 0;
	for (const cJSON *e = conds->child; e; e = e->next, i++) {
		const char *t = ng_json_str(e, "type"), *s = ng_json_str(e, "status");
		if (!t || !*t || strlen(t) > NG_MAX_LABEL_KEY_BYTES) {
			kd_problem(verr,
				   "spec.rule.conditions[%zu].type: expected a condition type", i);
			return NG_OK;
		}
		if (!s || (strcmp(s, "True") != 0 && strcmp(s, "False") != 0 &&
			   strcmp(s, "Unknown") != 0)) {
			kd_problem(verr,
				   "spec.rule.conditions[%zu].status: must be True, False or "
				   "Unknown",
				   i);
			return NG_OK;
		}
		char field[64];
		(void)snprintf(field, sizeof(field), "spec.rule.conditions[%zu].forSeconds", i);
		int64_t secs = kd_opt_seconds(e, "forSeconds", field, verr);
		if (secs > 31536000)
			kd_problem(verr, "%s: at most 31536000 (a year)", field);
		/* In ms only within the bound: a larger value would overflow. */
		out[i].for_ms = secs > 0 && secs <= 31536000 ? secs * 1000 : 0;
		out[i].status = kd_cond_status(s);
		ng_status st = kd_intern(c, t, &out[i].type);
		if (st != NG_OK)
			return st;
	}
	r->conds = out;
	r->nconds = (uint16_t)n;
	return NG_OK;
}

/* status.lastRemediated and status.storm, read back: the cooldown and the storm's start
 * survive a restart. Entries of the wrong shape are skipped (status is nodegate's). */
static ng_status nrem_status(struct kd_ctx *c, const cJSON *status, struct kube_nrem *r)
{
	const cJSON *storm = ng_json_get(status, "storm");
	r->storm = cJSON_IsTrue(ng_json_get(storm, "active"));
	r->storm_since_ms = r->storm ? kd_opt_time_ms(storm, "since") : 0;
	const cJSON *last = ng_json_get(status, "lastRemediated");
	size_t n;
	struct kube_rem_last *out = kd_items_room(c, last, KUBE_MAX_REM_LAST, sizeof(*out), &n);
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "status.lastRemediated", "out of memory");
	size_t k = 0;
	for (const cJSON *e = n ? last->child : NULL; e && k < n; e = e->next) {
		const char *node = ng_json_str(e, "node"), *req = ng_json_str(e, "request");
		int64_t at = kd_opt_time_ms(e, "time");
		if (!node || !*node || at <= 0)
			continue;
		ng_status st = kd_intern(c, node, &out[k].node);
		st = st ? st : kd_intern(c, req ? req : "", &out[k].request);
		if (st != NG_OK)
			return st;
		out[k].at_ms = at;
		if (!(out[k].uid = kd_dup_or_empty(c, ng_json_str(e, "uid"))))
			return kd_fail(c, NG_ENOMEM, "status.lastRemediated", "out of memory");
		k++;
	}
	r->last = k ? out : NULL;
	r->nlast = (uint16_t)k;
	return NG_OK;
}

/* metadata of a NodeRemediation: uid, resourceVersion, deletion and finalizers. */
static ng_status nrem_meta(struct kd_ctx *c, const cJSON *meta, uint32_t name, struct kube_nrem *r,
			   struct ng_err *verr)
{
	r->uid = kd_dup_or_empty(c, ng_json_str(meta, "uid"));
	r->rv = kd_dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	if (!r->uid || !r->rv)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	r->deleting = del && !cJSON_IsNull(del);
	ng_status st =
	    kd_decode_str_array(c, ng_json_get(meta, "finalizers"), "metadata.finalizers",
				NG_MAX_LABELS, &r->finalizers, &r->nfinalizers);
	if (st != NG_OK)
		return st;
	for (uint16_t i = 0; i < r->nfinalizers; i++) {
		const char *f = ng_intern_str(c->pool, r->finalizers[i], NULL);
		r->has_finalizer |= f && strcmp(f, KUBE_REMEDIATION_FINALIZER) == 0;
	}
	const char *nm = ng_intern_str(c->pool, name, NULL);
	if (nm && strlen(nm) > NG_MAX_LABEL_VALUE_BYTES)
		kd_problem(verr, "metadata.name: at most %d characters (it labels the requests)",
			   NG_MAX_LABEL_VALUE_BYTES);
	return NG_OK;
}

/* An int-or-percent of a NodeRemediation: an integer 0..1000000 or "N%" with N 0..100. */
static void nrem_count(const struct kube_int_or_string *v, const char *field,
		       const struct ng_intern *pool, struct ng_err *verr)
{
	if (!v->set || verr->status != NG_OK)
		return;
	if (!v->is_str) {
		if (v->i < 0 || v->i > 1000000)
			kd_problem(verr, "%s: expected 0 to 1000000 or a percentage", field);
		return;
	}
	size_t len;
	const char *s = ng_intern_str(pool, v->str, &len);
	size_t digits = 0;
	long pct = 0;
	while (digits < len && digits < 4 && s[digits] >= '0' && s[digits] <= '9')
		pct = pct * 10 + (s[digits++] - '0');
	if (digits == 0 || digits + 1 != len || s[digits] != '%' || pct > 100)
		kd_problem(verr, "%s: expected an integer or a percentage such as \"25%%\"", field);
}

/* kd_decode_int_or_string() for a NodeRemediation: a value that is neither an integer nor a
 * string makes the remediation invalid (the first problem in @verr says why); only the pool and
 * memory fail the decode. */
static ng_status nrem_int_or_string(struct kd_ctx *c, const cJSON *j, const char *field,
				    struct kube_int_or_string *ret, struct ng_err *verr)
{
	struct ng_err e = {0};
	ng_status st = kd_decode_int_or_string(c, j, field, ret, &e);
	if (st != NG_EPARSE)
		return st;
	kd_problem(verr, "%s", e.msg);
	return NG_OK;
}

ng_status kd_decode_nrem(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_nrem *r = kd_record(c, KUBE_RES_NREMS);
	r->name = name;
	r->error = r->template_name = NG_INTERN_NONE;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = nrem_meta(c, ng_json_get(o, "metadata"), name, r, &verr);
	st = st ? st : decode_author(c, ng_json_get(o, "metadata"), &r->author);
	if (st == NG_OK && verr.status == NG_OK) {
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					  "spec.nodeSelector", &r->node_selector, &verr);
		/* Malformed, it makes the remediation invalid (@verr says why), as any field. */
		st = st == NG_EPARSE || st == NG_ELIMIT ? NG_OK : st;
	}
	if (st == NG_OK && verr.status == NG_OK && !r->node_selector.present)
		kd_problem(&verr, "spec.nodeSelector: required");
	st = st ? st : nrem_conditions(c, ng_json_get(spec, "rule"), r, &verr);
	const char *tn = ng_json_str(spec, "templateName");
	if (st == NG_OK && (!tn || !*tn))
		kd_problem(&verr, "spec.templateName: required");
	st = st || !tn ? st : kd_intern(c, tn, &r->template_name);
	st = st ? st
		: nrem_int_or_string(c, ng_json_get(spec, "maxConcurrent"), "spec.maxConcurrent",
				     &r->max_concurrent, &verr);
	if (st == NG_OK && !r->max_concurrent.set)
		r->max_concurrent = (struct kube_int_or_string){.set = true, .i = 1};
	const cJSON *guard = ng_json_get(spec, "stormGuard");
	r->storm_guard = cJSON_IsObject(guard);
	st = st || !r->storm_guard
		 ? st
		 : nrem_int_or_string(c, ng_json_get(guard, "maxUnhealthy"),
				      "spec.stormGuard.maxUnhealthy", &r->max_unhealthy, &verr);
	if (st == NG_OK && r->storm_guard && !r->max_unhealthy.set)
		kd_problem(&verr, "spec.stormGuard.maxUnhealthy: required");
	if (st == NG_OK) {
		nrem_count(&r->max_concurrent, "spec.maxConcurrent", c->pool, &verr);
		nrem_count(&r->max_unhealthy, "spec.stormGuard.maxUnhealthy", c->pool, &verr);
	}
	int64_t cool = kd_opt_seconds(spec, "cooldownSeconds", "spec.cooldownSeconds", &verr);
	if (cool > 31536000)
		kd_problem(&verr, "spec.cooldownSeconds: at most 31536000 (a year)");
	r->cooldown_ms = (cool < 0 || cool > 31536000 ? 3600 : cool) * 1000;
	st = st ? st : nrem_status(c, ng_json_get(o, "status"), r);
	if (st != NG_OK)
		return st == NG_ENOMEM ? kd_fail(c, st, "spec", "out of memory") : st;
	if (verr.status == NG_OK)
		return NG_OK;
	r->invalid = true;
	return kd_intern(c, verr.msg, &r->error);
}

const struct kube_ngc *kube_one_ngc(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_NGCS);
}

const struct kube_nrem *kube_one_nrem(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_NREMS);
}

const struct kube_ndt *kube_one_ndt(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_NDTS);
}
