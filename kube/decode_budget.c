/* Budgets: ApplicationDisruptionBudget and NodeDisruptionBudget, their windows and hooks. */
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

/* The longest maintenance window: a month. */
#define WINDOW_MAX_MS (31LL * 24 * 3600 * 1000)

/* The timeZone of element @i of spec.@list (@j): a zone name, UTC when absent. Problems go to
 * @verr (then *@ret_tz stays NULL); only OOM fails. */
static ng_status decode_zone(const cJSON *j, const char *list, size_t i, const char **ret_name,
			     const struct ng_tz **ret_tz, struct ng_err *verr)
{
	const cJSON *tz = ng_json_get(j, "timeZone");
	const char *zone = ng_json_str(j, "timeZone");
	*ret_tz = NULL;
	if (tz && !cJSON_IsNull(tz) && !zone) {
		kd_problem(verr, "spec.%s[%zu].timeZone: expected a zone name such as Europe/Paris",
			   list, i);
		return NG_OK;
	}
	*ret_name = zone ? zone : "UTC";
	struct ng_err e = {0};
	ng_status st = ng_tz_get(*ret_name, ret_tz, &e);
	if (st == NG_ENOMEM)
		return st;
	if (st != NG_OK) {
		*ret_tz = NULL;
		kd_problem(verr, "spec.%s[%zu].timeZone: %s", list, i, e.msg);
	}
	return NG_OK;
}

/* spec.@key when it is an array of at most @max elements: the array, its size in *@ret_n. NULL
 * (and *@ret_n 0) when absent, null, empty, or a problem, which goes to @verr. */
static const cJSON *bounded_array(const cJSON *spec, const char *key, size_t max, size_t *ret_n,
				  struct ng_err *verr)
{
	const cJSON *a = ng_json_get(spec, key);
	*ret_n = 0;
	if (!a || cJSON_IsNull(a))
		return NULL;
	if (!cJSON_IsArray(a)) {
		kd_problem(verr, "spec.%s: expected an array", key);
		return NULL;
	}
	size_t n = (size_t)cJSON_GetArraySize(a);
	if (n > max) {
		(void)ng_err_set(verr, NG_ELIMIT, 0, "spec.%s: at most %zu %s (%zu given)", key,
				 max, key, n);
		return NULL;
	}
	*ret_n = n;
	return n ? a : NULL;
}

/* spec.windows[@i] @j into @w; @limit_field is the kind's limit (maxDisruptedNodes or
 * maxDisruptions). Problems go to @verr. */
static ng_status decode_window(struct kd_ctx *c, const cJSON *j, size_t i, const char *limit_field,
			       struct kube_window *w, struct ng_err *verr)
{
	struct ng_err e = {0};
	const char *sched = ng_json_str(j, "schedule"), *zone = NULL;
	const cJSON *dur = ng_json_get(j, "duration");
	if (!cJSON_IsObject(j)) {
		kd_problem(verr, "spec.windows[%zu]: expected an object", i);
		return NG_OK;
	}
	if (!sched) {
		kd_problem(verr,
			   "spec.windows[%zu].schedule: required (a cron schedule such as "
			   "\"0 22 * * 1-5\")",
			   i);
		return NG_OK;
	}
	if (ng_cron_parse(sched, &w->cron, &e) != NG_OK) {
		kd_problem(verr, "spec.windows[%zu].%s", i, e.msg);
		return NG_OK;
	}
	if (!cJSON_IsString(dur) || !kd_parse_duration_ms(dur->valuestring, &w->duration_ms) ||
	    w->duration_ms < 60000 || w->duration_ms > WINDOW_MAX_MS) {
		kd_problem(
		    verr,
		    "spec.windows[%zu].duration: expected a duration from 1m to 744h, such as "
		    "8h or 90m",
		    i);
		return NG_OK;
	}
	ng_status st = decode_zone(j, "windows", i, &zone, &w->tz, verr);
	if (st != NG_OK || !w->tz)
		return st;
	char field[64];
	ng_fmt(field, sizeof(field), "spec.windows[%zu].%s", i, limit_field);
	if ((st = kd_decode_int_or_string(c, ng_json_get(j, limit_field), field, &w->limit,
					  verr)) != NG_OK)
		return st;
	if ((st = kd_intern(c, sched, &w->schedule)) != NG_OK)
		return st;
	return kd_intern(c, zone, &w->zone);
}

/* The longest reason of an exclusion: a sentence for the messages that quote it. */
#define EXCLUSION_REASON_MAX 256

/* @n decimal digits at @s into *@ret. */
static bool digits(const char *s, size_t n, unsigned *ret)
{
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*ret = v;
	return true;
}

/* An exclusion's @key ("start" or "end") of exclusion @i: an RFC 3339 instant, or a date
 * (YYYY-MM-DD) read on @tz's wall clock, the start of that day, or for "end" the end of it (the
 * dates are inclusive). False (with the problem in @verr) when it reads as neither. */
static bool exclusion_instant(const cJSON *j, const char *key, size_t i, const struct ng_tz *tz,
			      int64_t *ret_ms, struct ng_err *verr)
{
	const char *s = ng_json_str(j, key);
	size_t len = s ? strlen(s) : 0;
	unsigned y, m, d;
	if (len == 10 && s[4] == '-' && s[7] == '-' && digits(s, 4, &y) && digits(s + 5, 2, &m) &&
	    digits(s + 8, 2, &d) && m >= 1 && m <= 12 && d >= 1 && d <= ng_days_in_month(y, m)) {
		int64_t day = ng_days_from_civil(y, m, d) + (strcmp(key, "end") == 0);
		*ret_ms = ng_tz_from_local(tz, day * 86400) * 1000;
		return true;
	}
	if (s && ng_parse_rfc3339_ms(s, len, ret_ms) == NG_OK)
		return true;
	kd_problem(verr,
		   "spec.exclusions[%zu].%s: expected an RFC 3339 instant "
		   "(2026-12-20T00:00:00Z) or a date (2026-12-20)",
		   i, key);
	return false;
}

static int cmp_exclusion(const void *a, const void *b)
{
	const struct kube_exclusion *x = a, *y = b;
	return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

ng_status kd_decode_exclusions(struct kd_ctx *c, const cJSON *spec,
			       const struct kube_exclusion **ret, uint16_t *ret_n,
			       struct ng_err *verr)
{
	size_t n;
	const cJSON *xs = bounded_array(spec, "exclusions", KUBE_MAX_EXCLUSIONS, &n, verr);
	if (!xs)
		return NG_OK;
	struct kube_exclusion *x = kd_alloc(c, n * sizeof(*x));
	if (!x)
		return kd_fail(c, NG_ENOMEM, "spec.exclusions", "out of memory");
	size_t i = 0;
	for (const cJSON *j = xs->child; j; j = j->next, i++) {
		if (!cJSON_IsObject(j)) {
			kd_problem(verr, "spec.exclusions[%zu]: expected an object", i);
			return NG_OK;
		}
		const char *zone, *reason = ng_json_str(j, "reason");
		const cJSON *rj = ng_json_get(j, "reason");
		const struct ng_tz *tz;
		ng_status st = decode_zone(j, "exclusions", i, &zone, &tz, verr);
		if (st != NG_OK || !tz)
			return st;
		if (!exclusion_instant(j, "start", i, tz, &x[i].start_ms, verr) ||
		    !exclusion_instant(j, "end", i, tz, &x[i].end_ms, verr))
			return NG_OK;
		if (x[i].end_ms <= x[i].start_ms) {
			kd_problem(verr, "spec.exclusions[%zu].end: must be after start", i);
			return NG_OK;
		}
		if ((rj && !cJSON_IsNull(rj) && !reason) ||
		    (reason && strlen(reason) > EXCLUSION_REASON_MAX)) {
			kd_problem(verr,
				   "spec.exclusions[%zu].reason: expected text of at most %d bytes",
				   i, EXCLUSION_REASON_MAX);
			return NG_OK;
		}
		if ((st = kd_intern(c, reason ? reason : "", &x[i].reason)) != NG_OK)
			return st;
	}
	qsort(x, n, sizeof(*x), cmp_exclusion);
	*ret = x;
	*ret_n = (uint16_t)n;
	return NG_OK;
}

/* spec.windows and spec.outsideWindows into @b. */
static ng_status decode_windows(struct kd_ctx *c, const cJSON *spec, const char *limit_field,
				struct kube_budget_common *b, struct ng_err *verr)
{
	const cJSON *out = ng_json_get(spec, "outsideWindows");
	if (out && !cJSON_IsNull(out)) {
		const char *v = cJSON_IsString(out) ? out->valuestring : "";
		b->outside_use_default = strcmp(v, "UseDefault") == 0;
		if (!b->outside_use_default && strcmp(v, "Deny") != 0) {
			kd_problem(verr, "spec.outsideWindows: must be Deny or UseDefault");
			return NG_OK;
		}
	}
	size_t n;
	const cJSON *ws = bounded_array(spec, "windows", KUBE_MAX_WINDOWS, &n, verr);
	if (!ws)
		return NG_OK;
	struct kube_window *w = kd_alloc(c, n * sizeof(*w));
	if (!w)
		return kd_fail(c, NG_ENOMEM, "spec.windows", "out of memory");
	memset(w, 0, n * sizeof(*w));
	size_t i = 0;
	for (const cJSON *e = ws->child; e && verr->status == NG_OK; e = e->next, i++) {
		ng_status st = decode_window(c, e, i, limit_field, &w[i], verr);
		if (st != NG_OK)
			return st;
	}
	if (verr->status != NG_OK)
		return NG_OK;
	b->windows = w;
	b->nwindows = (uint16_t)n;
	return NG_OK;
}

/* spec.soakSeconds or spec.minIntervalSeconds (@key) in ms: 0..KUBE_MAX_PACING_SECONDS
 * seconds, absent or null 0. */
static int64_t pacing_ms(const cJSON *spec, const char *key, struct ng_err *verr)
{
	const cJSON *v = ng_json_get(spec, key);
	int64_t secs;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!ng_json_int64(v, &secs) || secs < 0 || secs > KUBE_MAX_PACING_SECONDS) {
		kd_problem(verr, "spec.%s: expected an integer of seconds from 0 to %d (a week)",
			   key, KUBE_MAX_PACING_SECONDS);
		return 0;
	}
	return secs * 1000;
}

/* What the gate wrote of its pacing: status.lastGrantAt and status.soakingNodes. The status is
 * nodegate's own; entries that do not read are skipped (a lost entry costs a soak, never a
 * wrong grant: the node's Ready transition still counts). Only OOM fails. */
static ng_status decode_pacing_status(struct kd_ctx *c, const cJSON *o,
				      struct kube_budget_common *b)
{
	const cJSON *status = ng_json_get(o, "status");
	const char *at = ng_json_str(status, "lastGrantAt");
	if (at && ng_parse_rfc3339_ms(at, strlen(at), &b->last_grant_ms) != NG_OK)
		b->last_grant_ms = 0;
	const cJSON *arr = ng_json_get(status, "soakingNodes");
	size_t cap;
	struct kube_soaking *out = kd_items_room(c, arr, KUBE_MAX_SOAKING, sizeof(*out), &cap);
	if (cap && !out)
		return kd_fail(c, NG_ENOMEM, "status.soakingNodes", "out of memory");
	size_t k = 0;
	for (const cJSON *e = cap ? arr->child : NULL; e && k < cap; e = e->next) {
		const char *name = ng_json_str(e, "name"), *until = ng_json_str(e, "until");
		if (!name || !*name)
			continue;
		if (!until)
			out[k].until_ms = KUBE_SOAK_NOT_BACK;
		else if (ng_parse_rfc3339_ms(until, strlen(until), &out[k].until_ms) != NG_OK)
			continue;
		ng_status st = kd_intern(c, name, &out[k].node);
		if (st != NG_OK)
			return st;
		k++;
	}
	if (k)
		qsort(out, k, sizeof(*out), kube_soaking_cmp);
	b->soaking = k ? out : NULL;
	b->nsoaking = (uint16_t)k;
	return NG_OK;
}

/* Fields every budget has. Validation problems go to @verr and make the budget invalid;
 * only OOM fails the load. */
static ng_status decode_budget_common(struct kd_ctx *c, const cJSON *o, const cJSON *spec,
				      const char *limit_field, struct kube_budget_common *b,
				      struct ng_err *verr)
{
	if (!(b->uid = kd_dup_or_empty(c, ng_json_str(ng_json_get(o, "metadata"), "uid"))))
		return kd_fail(c, NG_ENOMEM, "metadata.uid", "out of memory");
	const cJSON *types = ng_json_get(spec, "supportedNodeDisruptionTypes");
	ng_status st = kd_decode_str_array(c, types, "spec.supportedNodeDisruptionTypes",
					   NG_MAX_LABELS, &b->types, &b->ntypes);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		*verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	const cJSON *fr = ng_json_get(spec, "freeze");
	if (cJSON_IsTrue(ng_json_get(fr, "enabled"))) {
		b->frozen = true;
		const char *reason = ng_json_str(fr, "reason");
		if ((st = kd_intern(c, reason ? reason : "", &b->freeze_reason)) != NG_OK)
			return st;
	}
	if (verr->status == NG_OK &&
	    (st = kd_decode_exclusions(c, spec, &b->exclusions, &b->nexclusions, verr)) != NG_OK)
		return st;
	if (verr->status == NG_OK)
		b->soak_ms = pacing_ms(spec, "soakSeconds", verr);
	if (verr->status == NG_OK)
		b->min_interval_ms = pacing_ms(spec, "minIntervalSeconds", verr);
	if ((st = decode_pacing_status(c, o, b)) != NG_OK)
		return st;
	return verr->status == NG_OK ? decode_windows(c, spec, limit_field, b, verr) : NG_OK;
}

static ng_status finish_budget(struct kd_ctx *c, struct kube_budget_common *b, struct ng_err *verr)
{
	if (verr->status == NG_OK)
		return NG_OK;
	b->invalid = true;
	return kd_intern(c, verr->msg, &b->error);
}

/* Which hook a budget field is: its name in messages and its timeout's bounds. */
struct hook_field {
	const char *name; /* "spec.healthHook" */
	int64_t max_timeout_s, default_timeout_s;
};

/* What is checked before the URL: the shape of hook @j and timeoutSeconds (into *@secs). Why
 * not into @why (@cap bytes), left "" when fine. */
static void hook_form(const struct hook_field *f, const cJSON *j, int64_t *secs, char *why,
		      size_t cap)
{
	const cJSON *url = ng_json_get(j, "url");
	const cJSON *svc = ng_json_get(j, "service");
	bool has_url = url && !cJSON_IsNull(url), has_svc = svc && !cJSON_IsNull(svc);
	const cJSON *to = ng_json_get(j, "timeoutSeconds");
	const cJSON *ca = ng_json_get(j, "caBundle");
	if (!cJSON_IsObject(j))
		ng_fmt(why, cap, "%s: expected an object", f->name);
	else if (has_url == has_svc)
		ng_fmt(why, cap, "%s: exactly one of url and service is required", f->name);
	else if (to && !cJSON_IsNull(to) &&
		 (!ng_json_int64(to, secs) || *secs < 1 || *secs > f->max_timeout_s))
		ng_fmt(why, cap, "%s.timeoutSeconds: must be 1..%lld", f->name,
		       (long long)f->max_timeout_s);
	else if (ca && !cJSON_IsNull(ca) && !cJSON_IsString(ca))
		ng_fmt(why, cap, "%s.caBundle: expected a base64 string", f->name);
}

/* Hook URL @url copied into @buf (HOOK_URL_MAX + 1 bytes), or why not. */
static void hook_url(const struct hook_field *f, const cJSON *url, char *buf, char *why, size_t cap)
{
	if (!cJSON_IsString(url) || !*url->valuestring)
		ng_fmt(why, cap, "%s.url: expected a non-empty string", f->name);
	else if (strlen(url->valuestring) > HOOK_URL_MAX)
		ng_fmt(why, cap, "%s.url: longer than %d bytes", f->name, HOOK_URL_MAX);
	else
		ng_fmt(buf, HOOK_URL_MAX + 1, "%s", url->valuestring);
}

/* Hook service reference @svc as the URL of its cluster DNS name in @buf, or why not. */
static void hook_service(const struct hook_field *f, const cJSON *svc, char *buf, char *why,
			 size_t cap)
{
	const char *ns = ng_json_str(svc, "namespace"), *name = ng_json_str(svc, "name");
	const char *path = ng_json_str(svc, "path");
	const cJSON *port = ng_json_get(svc, "port");
	int64_t p = 443;
	if (!ns || !kd_dns_subdomain_ok(ns, strlen(ns)) || strlen(ns) > 63 || strchr(ns, '.'))
		ng_fmt(why, cap, "%s.service.namespace: must be a namespace name", f->name);
	else if (!name || !kd_dns_subdomain_ok(name, strlen(name)) || strlen(name) > 63 ||
		 strchr(name, '.'))
		ng_fmt(why, cap, "%s.service.name: must be a Service name", f->name);
	else if (port && !cJSON_IsNull(port) && (!ng_json_int64(port, &p) || p < 1 || p > 65535))
		ng_fmt(why, cap, "%s.service.port: must be 1..65535", f->name);
	else if (path && (path[0] != '/' || strlen(path) > 1024 || strpbrk(path, " \t\r\n?#")))
		ng_fmt(why, cap,
		       "%s.service.path: must start with '/' and hold no spaces, '?' or '#' (at "
		       "most 1024 bytes)",
		       f->name);
	else
		ng_fmt(buf, HOOK_URL_MAX + 1, "https://%s.%s.svc:%d%s", name, ns, (int)p,
		       path ? path : "/");
}

/* Hook @j's tokenSecretRef {namespace, name, key} into @h, or why not. Only OOM fails. */
static ng_status hook_token(struct kd_ctx *c, const struct hook_field *f, const cJSON *j,
			    struct kube_hook *h, char *why, size_t cap)
{
	const cJSON *t = ng_json_get(j, "tokenSecretRef");
	if (!t || cJSON_IsNull(t))
		return NG_OK;
	const char *ns = ng_json_str(t, "namespace"), *name = ng_json_str(t, "name");
	const char *key = ng_json_str(t, "key");
	if (!cJSON_IsObject(t))
		ng_fmt(why, cap, "%s.tokenSecretRef: expected an object", f->name);
	else if (!ns || !kd_dns_subdomain_ok(ns, strlen(ns)) || strlen(ns) > 63 || strchr(ns, '.'))
		ng_fmt(why, cap, "%s.tokenSecretRef.namespace: must be a namespace name", f->name);
	else if (!name || !kd_dns_subdomain_ok(name, strlen(name)))
		ng_fmt(why, cap, "%s.tokenSecretRef.name: must be a Secret name", f->name);
	else if (!key || !*key || strlen(key) > 253 ||
		 strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
		     strlen(key))
		ng_fmt(why, cap, "%s.tokenSecretRef.key: must be a Secret data key", f->name);
	if (*why)
		return NG_OK;
	ng_status st = kd_intern(c, ns, &h->token_ns);
	st = st ? st : kd_intern(c, name, &h->token_name);
	return st ? st : kd_intern(c, key, &h->token_key);
}

static char *arena_lower(struct ng_arena *a, const char *s, size_t len)
{
	char *out = ng_arena_strndup(a, s, len);
	for (char *p = out; p && *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return out;
}

/* The scheme, host and credentials of URL @url into @h (the arena's), or why it is not a URL.
 * Only OOM fails. */
ng_status kd_hook_parts(struct kd_ctx *c, const char *url, const char *field, struct kube_hook *h,
			char *why, size_t cap)
{
	CURLU *u = curl_url();
	if (!u)
		return kd_fail(c, NG_ENOMEM, field, "out of memory");
	char *scheme = NULL, *host = NULL, *user = NULL;
	ng_status st = NG_OK;
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		ng_fmt(why, cap, "%s: \"%.100s\" is not a URL", field, url);
		goto out;
	}
	h->userinfo = curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK;
	/* An IPv6 literal comes back bracketed; allowedHosts globs are written without. */
	size_t hl = strlen(host);
	bool bracketed = host[0] == '[' && hl > 2 && host[hl - 1] == ']';
	h->scheme = arena_lower(c->arena, scheme, strlen(scheme));
	h->host = arena_lower(c->arena, host + bracketed, hl - 2 * bracketed);
	if (!h->scheme || !h->host)
		st = kd_fail(c, NG_ENOMEM, field, "out of memory");
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(u);
	return st;
}

/* spec.healthHook.caBundle @ca decoded into @h's arena copy, or why not. Only OOM fails. */
ng_status kd_hook_ca(struct kd_ctx *c, const cJSON *ca, const char *field, struct kube_hook *h,
		     char *why, size_t cap)
{
	char *pem;
	size_t n;
	ng_status st = ng_base64_decode(ca->valuestring, strlen(ca->valuestring), &pem, &n);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, field, "out of memory");
	if (st != NG_OK || n > HOOK_CA_MAX || !strstr(pem, "-----BEGIN CERTIFICATE-----"))
		ng_fmt(why, cap, "%s: must be base64 of PEM certificates (at most %u bytes)", field,
		       HOOK_CA_MAX);
	else if (!(h->ca = ng_arena_strndup(c->arena, pem, n)))
		st = NG_ENOMEM;
	h->nca = h->ca ? n : 0;
	free(pem);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, field, "out of memory");
	return NG_OK;
}

/* Hook field @f of @j into @h. A hook that cannot be called gets @h->error and fails closed
 * when its budget is impacted; the budget's scope stays readable. Only OOM fails. */
static ng_status decode_hook(struct kd_ctx *c, const struct hook_field *f, const cJSON *j,
			     struct kube_hook *h)
{
	char why[256] = "";
	char field[64];
	memset(h, 0, sizeof(*h));
	h->error = h->token_ns = h->token_name = h->token_key = NG_INTERN_NONE;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	h->present = true;
	int64_t secs = f->default_timeout_s;
	hook_form(f, j, &secs, why, sizeof(why));
	h->timeout_s = (int32_t)secs;
	const cJSON *url = ng_json_get(j, "url");
	const cJSON *ca = ng_json_get(j, "caBundle");
	char buf[HOOK_URL_MAX + 1];
	if (!*why && url && !cJSON_IsNull(url)) {
		hook_url(f, url, buf, why, sizeof(why));
	} else if (!*why) {
		hook_service(f, ng_json_get(j, "service"), buf, why, sizeof(why));
		h->service = true;
	}
	ng_status st = NG_OK;
	ng_fmt(field, sizeof(field), "%s.caBundle", f->name);
	if (!*why && cJSON_IsString(ca) && *ca->valuestring)
		st = kd_hook_ca(c, ca, field, h, why, sizeof(why));
	ng_fmt(field, sizeof(field), "%s.url", f->name);
	if (st == NG_OK && !*why)
		st = kd_hook_parts(c, buf, field, h, why, sizeof(why));
	if (st == NG_OK && !*why)
		st = hook_token(c, f, j, h, why, sizeof(why));
	if (st != NG_OK)
		return st;
	if (*why) {
		h->ca = NULL;
		h->nca = 0;
		h->scheme = h->host = NULL;
		h->token_ns = h->token_name = h->token_key = NG_INTERN_NONE;
		return kd_intern(c, why, &h->error);
	}
	if (!(h->url = ng_arena_strndup(c->arena, buf, strlen(buf))))
		return kd_fail(c, NG_ENOMEM, f->name, "out of memory");
	return NG_OK;
}

static const struct hook_field health_hook = {"spec.healthHook", 25, 5};
/* Criteo's controller gives these calls 30 s; an answer may take longer than a health check. */
static const struct hook_field hook_v2 = {"spec.hookV2BasePath", 60, 30};

ng_status kd_decode_adb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t ns = id->ns_id, name = id->name_id;
	struct kube_adb *a = kd_record(c, KUBE_RES_ADBS);
	a->b.ns = ns;
	a->b.name = name;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = decode_budget_common(c, o, spec, "maxDisruptions", &a->b, &verr);
	if (st != NG_OK)
		return st;
	if (verr.status == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "podSelector"),
					  "spec.podSelector", &a->pod_selector, &verr);
	if (st == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "pvcSelector"),
					  "spec.pvcSelector", &a->pvc_selector, &verr);
	if (st == NG_OK)
		st = kd_decode_int_or_string(c, ng_json_get(spec, "maxDisruptions"),
					     "spec.maxDisruptions", &a->max_disruptions, &verr);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, "spec", "out of memory");
	/* The selectors are not decoded after an earlier problem (a window's): that one is
	 * the message. */
	if (st == NG_OK && verr.status == NG_OK && !a->pod_selector.present &&
	    !a->pvc_selector.present)
		(void)ng_err_set(&verr, NG_EPARSE, 0,
				 "spec: at least one of podSelector and pvcSelector is required");
	if (verr.status != NG_OK) {
		memset(&a->pod_selector, 0, sizeof(a->pod_selector));
		memset(&a->pvc_selector, 0, sizeof(a->pvc_selector));
	}
	if (st == NG_OK || st == NG_EPARSE || st == NG_ELIMIT)
		st = decode_hook(c, &health_hook, ng_json_get(spec, "healthHook"), &a->hook);
	if (st == NG_OK)
		st = decode_hook(c, &hook_v2, ng_json_get(spec, "hookV2BasePath"), &a->b.hook2);
	if (st != NG_OK)
		return st;
	return finish_budget(c, &a->b, &verr);
}

/* spec.topologyKey with spec.maxDisruptedDomains and spec.maxDisruptedNodesPerDomain: the key a
 * label key, each limit needing it, and it needing one of them. */
static ng_status ndb_topology(struct kd_ctx *c, const cJSON *spec, struct kube_ndb *n,
			      struct ng_err *verr)
{
	n->topology_key = NG_INTERN_NONE;
	n->max_domains = -1;
	const cJSON *key = ng_json_get(spec, "topologyKey");
	const cJSON *dom = ng_json_get(spec, "maxDisruptedDomains");
	ng_status st =
	    kd_decode_int_or_string(c, ng_json_get(spec, "maxDisruptedNodesPerDomain"),
				    "spec.maxDisruptedNodesPerDomain", &n->max_per_domain, verr);
	if (st != NG_OK || verr->status != NG_OK)
		return st;
	if (dom && !cJSON_IsNull(dom) &&
	    (!ng_json_int64(dom, &n->max_domains) || n->max_domains < 0 ||
	     n->max_domains > 1000000)) {
		kd_problem(verr, "spec.maxDisruptedDomains: expected an integer 0..1000000");
		return NG_OK;
	}
	bool limits = n->max_domains >= 0 || n->max_per_domain.set;
	if (!key || cJSON_IsNull(key)) {
		if (limits)
			kd_problem(verr, "spec.topologyKey: required with maxDisruptedDomains or "
					 "maxDisruptedNodesPerDomain");
		return NG_OK;
	}
	const char *why = cJSON_IsString(key)
			      ? kube_label_key_problem(key->valuestring, strlen(key->valuestring))
			      : "expected a label key";
	if (why) {
		kd_problem(verr, "spec.topologyKey: %s", why);
		return NG_OK;
	}
	if (!limits) {
		kd_problem(verr, "spec.topologyKey: needs maxDisruptedDomains or "
				 "maxDisruptedNodesPerDomain");
		return NG_OK;
	}
	return kd_intern(c, key->valuestring, &n->topology_key);
}

ng_status kd_decode_ndb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_ndb *n = kd_record(c, KUBE_RES_NDBS);
	n->b.ns = NG_INTERN_NONE;
	n->b.name = name;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = decode_budget_common(c, o, spec, "maxDisruptedNodes", &n->b, &verr);
	if (st != NG_OK)
		return st;
	if (verr.status == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					  "spec.nodeSelector", &n->node_selector, &verr);
	if (st == NG_OK)
		st = kd_decode_int_or_string(c, ng_json_get(spec, "maxDisruptedNodes"),
					     "spec.maxDisruptedNodes", &n->max_disrupted, &verr);
	if (st == NG_OK)
		st =
		    kd_decode_int_or_string(c, ng_json_get(spec, "minUndisruptedNodes"),
					    "spec.minUndisruptedNodes", &n->min_undisrupted, &verr);
	if (st == NG_OK)
		st = ndb_topology(c, spec, n, &verr);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, "spec", "out of memory");
	const cJSON *cu = ng_json_get(spec, "countUnavailableNodes");
	n->count_unavailable = !cJSON_IsFalse(cu);
	const cJSON *tt = ng_json_get(spec, "taintTargets");
	if (tt && !cJSON_IsNull(tt) && !cJSON_IsArray(tt) && verr.status == NG_OK)
		(void)ng_err_set(&verr, NG_EPARSE, 0, "spec.taintTargets: expected an array");
	size_t nt = cJSON_IsArray(tt) ? (size_t)cJSON_GetArraySize(tt) : 0;
	if (nt > NG_MAX_LABELS && verr.status == NG_OK)
		(void)ng_err_set(&verr, NG_ELIMIT, 0, "spec.taintTargets: too many entries");
	if (nt && verr.status == NG_OK) {
		struct kube_taint_target *t = kd_alloc(c, nt * sizeof(*t));
		if (!t)
			return kd_fail(c, NG_ENOMEM, "spec.taintTargets", "out of memory");
		/* Entries after an invalid one are never read from the JSON: zero, never garbage,
		 * since an invalid budget is still walked (ids, round trips). */
		memset(t, 0, nt * sizeof(*t));
		size_t i = 0;
		for (const cJSON *e = tt->child; e && verr.status == NG_OK; e = e->next, i++) {
			const char *op = ng_json_str(e, "operator");
			t[i].exists = op && strcmp(op, "Exists") == 0;
			if (op && !t[i].exists && strcmp(op, "Equal") != 0)
				(void)ng_err_set(
				    &verr, NG_EPARSE, 0,
				    "spec.taintTargets[%zu].operator: must be Equal or Exists", i);
			if (!ng_json_str(e, "key"))
				(void)ng_err_set(&verr, NG_EPARSE, 0,
						 "spec.taintTargets[%zu].key: required", i);
			if (verr.status != NG_OK)
				break;
			if ((st = kd_opt_str(c, e, "key", "spec.taintTargets.key", &t[i].key)) !=
				NG_OK ||
			    (st = kd_opt_str(c, e, "value", "spec.taintTargets.value",
					     &t[i].val)) != NG_OK ||
			    (st = kd_opt_str(c, e, "effect", "spec.taintTargets.effect",
					     &t[i].effect)) != NG_OK) {
				if (st == NG_ENOMEM)
					return st;
				verr = *c->err;
			}
		}
		n->taint_targets = t;
		n->ntargets = (uint16_t)nt;
	}
	if (verr.status != NG_OK)
		memset(&n->node_selector, 0, sizeof(n->node_selector));
	st = decode_hook(c, &hook_v2, ng_json_get(spec, "hookV2BasePath"), &n->b.hook2);
	if (st != NG_OK)
		return st;
	return finish_budget(c, &n->b, &verr);
}

const struct kube_adb *kube_one_adb(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_ADBS);
}

const struct kube_ndb *kube_one_ndb(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_NDBS);
}
