/* Records written back as Kubernetes objects, and compared (roundtrip.h). */
#include "tests/fuzz/roundtrip.h"

#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/limits.h"
#include "kube/one.h"
#include "kube/snapshot.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ng_fuzz_fail(void)
{
	abort();
}

ng_status ng_fuzz_decode_twice(enum kube_resource res, const struct cJSON *root,
			       const uint8_t *data, size_t size, struct kube_one **ret_a,
			       struct kube_one **ret_b, struct ng_err *err)
{
	struct ng_err eb = {0};
	*ret_a = *ret_b = NULL;
	ng_status sa = kube_one_decode_as(res, root, 0, ret_a, err);
	ng_status sb = kube_one_decode_as(res, root, 0, ret_b, &eb);
	ng_fuzz_check(sa == sb);
	if (sa != NG_OK) {
		ng_fuzz_check(err->status == sa && strcmp(err->msg, eb.msg) == 0);
		ng_fuzz_check(ng_fuzz_message_ok(err->msg, data, size));
	}
	return sa;
}

struct kube_one *ng_fuzz_reparse(const struct ng_buf *out, enum kube_resource res)
{
	struct kube_one *again = NULL;
	struct ng_err err = {0};
	ng_status st = kube_one_parse(out->data, out->len, &again, &err);
	if (st != NG_OK)
		(void)fprintf(stderr, "roundtrip: %s\n%s\n", err.msg, out->data);
	ng_fuzz_check(st == NG_OK && kube_one_resource(again) == res);
	return again;
}

void ng_fuzz_differs(const struct ng_buf *out)
{
	(void)fprintf(stderr, "roundtrip: written back as\n%s\n", out->data);
	abort();
}

bool ng_fuzz_message_ok(const char *msg, const uint8_t *input, size_t len)
{
	unsigned char first = (unsigned char)msg[0];
	if (first < 0x21 || first > 0x7e)
		return false;
	bool plain = true;
	for (size_t i = 0; plain && i < len; i++)
		plain = input[i] >= 0x20 && input[i] != 0x7f && input[i] != '\\';
	for (const char *p = msg; plain && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

int64_t ng_fuzz_time_written(int64_t ms)
{
	return ms < NG_RFC3339_MIN_MS   ? NG_RFC3339_MIN_MS
	       : ms > NG_RFC3339_MAX_MS ? NG_RFC3339_MAX_MS
					: ms;
}

/* ---- writing ---- */

static void id(struct ng_jw *w, const struct ng_intern *pool, uint32_t v)
{
	size_t len;
	const char *s = ng_intern_str(pool, v, &len);
	ng_jw_strn(w, s, len);
}

/* Key @key with the string of @v, left out when @v is NG_INTERN_NONE. */
static void kid(struct ng_jw *w, const struct ng_intern *pool, const char *key, uint32_t v)
{
	if (v == NG_INTERN_NONE)
		return;
	ng_jw_key(w, key);
	id(w, pool, v);
}

static void kids(struct ng_jw *w, const struct ng_intern *pool, const char *key, const uint32_t *v,
		 size_t n)
{
	ng_jw_key(w, key);
	ng_jw_arr(w);
	for (size_t i = 0; i < n; i++)
		id(w, pool, v[i]);
	ng_jw_arr_end(w);
}

static void ktime(struct ng_jw *w, const char *key, int64_t ms)
{
	ng_jw_key(w, key);
	ng_jw_time_ms(w, ms);
}

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

static void requirement(struct ng_jw *w, const struct kube_requirement *r,
			const struct ng_intern *pool)
{
	ng_jw_obj(w);
	ng_jw_key(w, "key");
	id(w, pool, r->key);
	ng_jw_kstr(w, "operator", op_names[r->op < 6 ? r->op : 0]);
	if (r->nvalues)
		kids(w, pool, "values", r->values, r->nvalues);
	ng_jw_obj_end(w);
}

void ng_fuzz_write_selector(struct ng_jw *w, const struct kube_selector *sel,
			    const struct ng_intern *pool)
{
	if (!sel->present) {
		ng_jw_null(w);
		return;
	}
	ng_jw_obj(w);
	if (sel->nreqs) {
		ng_jw_key(w, "matchExpressions");
		ng_jw_arr(w);
		for (uint16_t i = 0; i < sel->nreqs; i++)
			requirement(w, &sel->reqs[i], pool);
		ng_jw_arr_end(w);
	}
	ng_jw_obj_end(w);
}

static void ksel(struct ng_jw *w, const char *key, const struct kube_selector *sel,
		 const struct ng_intern *pool)
{
	if (!sel->present)
		return;
	ng_jw_key(w, key);
	ng_fuzz_write_selector(w, sel, pool);
}

static void head(struct ng_jw *w, const char *api, const char *kind)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "apiVersion", api);
	ng_jw_kstr(w, "kind", kind);
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
}

static ng_status done(struct ng_jw *w)
{
	ng_jw_obj_end(w);
	return ng_jw_finish(w);
}

/* spec.drain.rules, as a NodeDisruption and a NodeGateConfig write them. */
static void drain_rules(struct ng_jw *w, const struct kube_drain_rule *r, size_t n,
			const struct ng_intern *pool)
{
	static const char *const behaviors[] = {"Drain", "Skip", "WaitCompleted"};
	if (!n)
		return;
	ng_jw_key(w, "rules");
	ng_jw_arr(w);
	for (size_t i = 0; i < n; i++) {
		ng_jw_obj(w);
		ksel(w, "podSelector", &r[i].pod_selector, pool);
		ksel(w, "namespaceSelector", &r[i].ns_selector, pool);
		ng_jw_kstr(w, "behavior", behaviors[r[i].behavior < 3 ? r[i].behavior : 0]);
		if (r[i].behavior == KUBE_DRAIN_BEHAVIOR_DRAIN && r[i].order)
			ng_jw_ki64(w, "order", r[i].order);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
}

/* ---- NodeDisruption ---- */

static void nd_drain(struct ng_jw *w, const struct kube_nd_drain *d, const struct ng_intern *pool)
{
	static const char *const strategies[] = {"Evict", "Delete", "ForceDelete", "None"};
	ng_jw_key(w, "drain");
	ng_jw_obj(w);
	ng_jw_kbool(w, "cordon", d->cordon);
	ng_jw_kbool(w, "force", d->force);
	ng_jw_kbool(w, "deleteEmptyDir", d->delete_empty_dir);
	ng_jw_kbool(w, "skipWaitingForEviction", d->skip_waiting_for_eviction);
	ng_jw_kbool(w, "waitForVolumeDetach", d->wait_for_volume_detach);
	ng_jw_kstr(w, "evictionStrategy", strategies[d->strategy < 4 ? d->strategy : 0]);
	if (d->timeout_s >= 0)
		ng_jw_ki64(w, "timeoutSeconds", d->timeout_s);
	if (d->deadline_s >= 0)
		ng_jw_ki64(w, "deadlineSeconds", d->deadline_s);
	static const char *const on_deadline[] = {"Retry", "Release", "Quarantine"};
	ng_jw_kstr(w, "onDeadline", on_deadline[d->on_deadline < 3 ? d->on_deadline : 0]);
	drain_rules(w, d->rules, d->nrules, pool);
	if (d->pod_selector)
		ng_jw_kstr(w, "podSelector", d->pod_selector);
	if (d->has_wait) {
		ng_jw_key(w, "waitForPodCompletion");
		ng_jw_obj(w);
		if (d->wait_pod_selector)
			ng_jw_kstr(w, "podSelector", d->wait_pod_selector);
		if (d->wait_timeout_s >= 0)
			ng_jw_ki64(w, "timeoutSeconds", d->wait_timeout_s);
		ng_jw_obj_end(w);
	}
	if (d->nfilters) {
		ng_jw_key(w, "podEvictionFilters");
		ng_jw_arr(w);
		for (uint16_t i = 0; i < d->nfilters; i++) {
			ng_jw_obj(w);
			if (d->filters[i].by_resource_name_regex)
				ng_jw_kstr(w, "byResourceNameRegex",
					   d->filters[i].by_resource_name_regex);
			ng_jw_obj_end(w);
		}
		ng_jw_arr_end(w);
	}
	if (d->has_taint) {
		ng_jw_key(w, "taint");
		ng_jw_obj(w);
		kid(w, pool, "key", d->taint.key);
		kid(w, pool, "value", d->taint.val);
		kid(w, pool, "effect", d->taint.effect);
		ng_jw_obj_end(w);
	}
	ng_jw_obj_end(w);
}

static void nd_spec(struct ng_jw *w, const struct kube_nd *nd, const struct ng_intern *pool,
		    unsigned skip)
{
	const struct kube_nd_detail *x = nd->detail;
	ng_jw_key(w, "spec");
	ng_jw_obj(w);
	kid(w, pool, "type", nd->type);
	kid(w, pool, "requestor", nd->requestor);
	ng_jw_ki64(w, "priority", nd->priority);
	if (x->has_node_names)
		kids(w, pool, "nodeNames", nd->node_names, nd->nnode_names);
	if (x->has_node_selector && !(skip & NG_FUZZ_SKIP_SELECTOR))
		ksel(w, "nodeSelector", &nd->node_selector, pool);
	ng_jw_key(w, "retry");
	ng_jw_obj(w);
	ng_jw_kbool(w, "enabled", nd->retry);
	if (nd->deadline_ms)
		ktime(w, "deadline", nd->deadline_ms);
	ng_jw_obj_end(w);
	if (!(skip & NG_FUZZ_SKIP_DETAIL)) {
		if (x->nmore_requestors)
			kids(w, pool, "additionalRequestors", x->more_requestors,
			     x->nmore_requestors);
		if (x->start_ms)
			ktime(w, "startDate", x->start_ms);
		if (x->duration_ms >= 0) {
			char d[32];
			(void)snprintf(d, sizeof(d), "%lldms", (long long)x->duration_ms);
			ng_jw_kstr(w, "duration", d);
		}
		if (x->active_deadline_s >= 0)
			ng_jw_ki64(w, "activeDeadlineSeconds", x->active_deadline_s);
		if (x->ttl_after_completion_s >= 0)
			ng_jw_ki64(w, "ttlSecondsAfterCompletion", x->ttl_after_completion_s);
		if (x->drain.present)
			nd_drain(w, &x->drain, pool);
		if (x->operation.present) {
			ng_jw_key(w, "operation");
			ng_jw_obj(w);
			ng_jw_kbool(w, "waitForReboot", x->operation.wait_for_reboot);
			if (x->operation.job_template) {
				ng_jw_key(w, "jobTemplate");
				ng_jw_raw(w, x->operation.job_template,
					  strlen(x->operation.job_template));
			}
			ng_jw_obj_end(w);
		}
	}
	ng_jw_obj_end(w);
}

static void nd_status(struct ng_jw *w, const struct kube_nd *nd, const struct ng_intern *pool)
{
	static const char *const states[] = {"", "Pending", "Granted", "Rejected"};
	static const char *const cond[] = {"Unknown", "True", "False"};
	const struct kube_nd_detail *x = nd->detail;
	ng_jw_key(w, "status");
	ng_jw_obj(w);
	if (nd->state != KUBE_ND_UNKNOWN)
		ng_jw_kstr(w, "state", states[nd->state < 4 ? nd->state : 0]);
	if (nd->ndisrupted)
		kids(w, pool, "disruptedNodes", nd->disrupted, nd->ndisrupted);
	ng_jw_ki64(w, "retryCount", nd->retry_count);
	if (nd->next_retry_ms)
		ktime(w, "nextRetryDate", nd->next_retry_ms);
	if (x->granted_ms == -1)
		ng_jw_kstr(w, "grantedAt", "not a time");
	else if (x->granted_ms)
		ktime(w, "grantedAt", x->granted_ms);
	if (x->expires_ms)
		ktime(w, "expiresAt", x->expires_ms);
	ng_jw_key(w, "disruptedDisruptionBudgets");
	ng_jw_arr(w);
	for (uint16_t i = 0; i < x->nverdicts; i++) {
		const struct kube_nd_verdict *v = &x->verdicts[i];
		ng_jw_obj(w);
		ng_jw_key(w, "reference");
		ng_jw_obj(w);
		kid(w, pool, "kind", v->kind);
		kid(w, pool, "namespace", v->ns);
		kid(w, pool, "name", v->name);
		ng_jw_obj_end(w);
		ng_jw_kbool(w, "ok", v->ok);
		ng_jw_kstr(w, "reason", v->reason);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	for (uint16_t i = 0; i < x->nconditions; i++) {
		const struct kube_condition *c = &x->conditions[i];
		ng_jw_obj(w);
		ng_jw_kstr(w, "type", c->type);
		ng_jw_kstr(w, "status", cond[c->status < 3 ? c->status : 0]);
		ng_jw_kstr(w, "reason", c->reason);
		ng_jw_kstr(w, "message", c->message);
		if (c->since_ms)
			ktime(w, "lastTransitionTime", c->since_ms);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
	const struct kube_nd_drain_status *d = &x->drain_status;
	ng_jw_key(w, "drain");
	ng_jw_obj(w);
	ng_jw_ki64(w, "totalPods", d->total);
	ng_jw_ki64(w, "evictedPods", d->evicted);
	ng_jw_ki64(w, "remainingPods", d->remaining);
	ng_jw_ki64(w, "progress", d->progress);
	ng_jw_ki64(w, "attempts", d->attempts);
	if (d->backoff_until_ms)
		ktime(w, "backoffUntil", d->backoff_until_ms);
	if (d->attempt_started_ms)
		ktime(w, "attemptStartedAt", d->attempt_started_ms);
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
}

ng_status ng_fuzz_encode_nd(const struct kube_nd *nd, const struct ng_intern *pool, unsigned skip,
			    struct ng_buf *out)
{
	const struct kube_nd_detail *x = nd->detail;
	struct ng_jw w;
	ng_jw_init(&w, out);
	head(&w, "nodegate.io/v1alpha1", "NodeDisruption");
	kid(&w, pool, "name", nd->name);
	ng_jw_kstr(&w, "resourceVersion", nd->rv);
	ng_jw_kstr(&w, "uid", nd->uid);
	if (nd->created_ms)
		ktime(&w, "creationTimestamp", nd->created_ms);
	if (nd->deleting)
		ng_jw_kstr(&w, "deletionTimestamp", "2030-01-01T00:00:00Z");
	if (nd->nfinalizers)
		kids(&w, pool, "finalizers", nd->finalizers, nd->nfinalizers);
	if (x->created_by != NG_INTERN_NONE) {
		ng_jw_key(&w, "annotations");
		ng_jw_obj(&w);
		kid(&w, pool, "nodegate.io/created-by", x->created_by);
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	nd_spec(&w, nd, pool, skip);
	nd_status(&w, nd, pool);
	return done(&w);
}

/* ---- budgets ---- */

static void int_or_string(struct ng_jw *w, const char *key, const struct kube_int_or_string *v,
			  const struct ng_intern *pool);

/* spec.windows and spec.outsideWindows; @limit is the kind's limit field. */
static void windows(struct ng_jw *w, const struct kube_budget_common *b, const char *limit,
		    const struct ng_intern *pool)
{
	if (b->outside_use_default)
		ng_jw_kstr(w, "outsideWindows", "UseDefault");
	if (!b->nwindows)
		return;
	ng_jw_key(w, "windows");
	ng_jw_arr(w);
	for (size_t i = 0; i < b->nwindows; i++) {
		const struct kube_window *x = &b->windows[i];
		char dur[32];
		(void)snprintf(dur, sizeof(dur), "%lldms", (long long)x->duration_ms);
		ng_jw_obj(w);
		kid(w, pool, "schedule", x->schedule);
		ng_jw_kstr(w, "duration", dur);
		kid(w, pool, "timeZone", x->zone);
		int_or_string(w, limit, &x->limit, pool);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
}

static void budget_common(struct ng_jw *w, const struct kube_budget_common *b,
			  const struct ng_intern *pool)
{
	if (b->ntypes)
		kids(w, pool, "supportedNodeDisruptionTypes", b->types, b->ntypes);
	if (b->frozen) {
		ng_jw_key(w, "freeze");
		ng_jw_obj(w);
		ng_jw_kbool(w, "enabled", true);
		kid(w, pool, "reason", b->freeze_reason);
		ng_jw_obj_end(w);
	}
}

static void int_or_string(struct ng_jw *w, const char *key, const struct kube_int_or_string *v,
			  const struct ng_intern *pool)
{
	if (!v->set)
		return;
	ng_jw_key(w, key);
	if (v->is_str)
		id(w, pool, v->str);
	else
		ng_jw_i64(w, v->i);
}

/* A service hook's URL is https://<name>.<namespace>.svc:<port><path>, and neither name nor
 * namespace holds a dot: split it back. */
static void hook_service(struct ng_jw *w, const char *url)
{
	const char *name = url + strlen("https://");
	const char *dot = strchr(name, '.');
	const char *svc = dot ? strstr(dot, ".svc:") : NULL;
	ng_fuzz_check(strncmp(url, "https://", 8) == 0 && svc != NULL);
	const char *port = svc + strlen(".svc:");
	const char *path = strchr(port, '/');
	ng_fuzz_check(path != NULL);
	ng_jw_key(w, "service");
	ng_jw_obj(w);
	ng_jw_key(w, "name");
	ng_jw_strn(w, name, (size_t)(dot - name));
	ng_jw_key(w, "namespace");
	ng_jw_strn(w, dot + 1, (size_t)(svc - dot - 1));
	ng_jw_key(w, "port");
	ng_jw_raw(w, port, (size_t)(path - port));
	ng_jw_kstr(w, "path", path);
	ng_jw_obj_end(w);
}

static void hook(struct ng_jw *w, const struct kube_hook *h)
{
	ng_jw_key(w, "healthHook");
	ng_jw_obj(w);
	if (h->service)
		hook_service(w, h->url);
	else
		ng_jw_kstr(w, "url", h->url);
	ng_jw_ki64(w, "timeoutSeconds", h->timeout_s);
	if (h->ca) {
		struct ng_buf b64;
		ng_buf_init(&b64, NG_MAX_BODY_BYTES);
		ng_fuzz_check(ng_buf_base64(&b64, h->ca, h->nca) == NG_OK);
		ng_jw_key(w, "caBundle");
		ng_jw_strn(w, b64.data, b64.len);
		ng_buf_finish(&b64);
	}
	ng_jw_obj_end(w);
}

ng_status ng_fuzz_encode_adb(const struct kube_adb *adb, const struct ng_intern *pool,
			     unsigned skip, struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	head(&w, "nodegate.io/v1alpha1", "ApplicationDisruptionBudget");
	kid(&w, pool, "name", adb->b.name);
	kid(&w, pool, "namespace", adb->b.ns);
	ng_jw_kstr(&w, "uid", adb->b.uid);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	budget_common(&w, &adb->b, pool);
	windows(&w, &adb->b, "maxDisruptions", pool);
	ksel(&w, "podSelector", &adb->pod_selector, pool);
	ksel(&w, "pvcSelector", &adb->pvc_selector, pool);
	int_or_string(&w, "maxDisruptions", &adb->max_disruptions, pool);
	if (adb->hook.present && !(skip & NG_FUZZ_SKIP_HOOK))
		hook(&w, &adb->hook);
	ng_jw_obj_end(&w);
	return done(&w);
}

ng_status ng_fuzz_encode_ndb(const struct kube_ndb *ndb, const struct ng_intern *pool,
			     struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	head(&w, "nodegate.io/v1alpha1", "NodeDisruptionBudget");
	kid(&w, pool, "name", ndb->b.name);
	ng_jw_kstr(&w, "uid", ndb->b.uid);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	budget_common(&w, &ndb->b, pool);
	windows(&w, &ndb->b, "maxDisruptedNodes", pool);
	ksel(&w, "nodeSelector", &ndb->node_selector, pool);
	int_or_string(&w, "maxDisruptedNodes", &ndb->max_disrupted, pool);
	int_or_string(&w, "minUndisruptedNodes", &ndb->min_undisrupted, pool);
	kid(&w, pool, "topologyKey", ndb->topology_key);
	if (ndb->max_domains >= 0)
		ng_jw_ki64(&w, "maxDisruptedDomains", ndb->max_domains);
	int_or_string(&w, "maxDisruptedNodesPerDomain", &ndb->max_per_domain, pool);
	ng_jw_kbool(&w, "countUnavailableNodes", ndb->count_unavailable);
	if (ndb->ntargets) {
		ng_jw_key(&w, "taintTargets");
		ng_jw_arr(&w);
		for (uint16_t i = 0; i < ndb->ntargets; i++) {
			const struct kube_taint_target *t = &ndb->taint_targets[i];
			ng_jw_obj(&w);
			kid(&w, pool, "key", t->key);
			kid(&w, pool, "value", t->val);
			kid(&w, pool, "effect", t->effect);
			ng_jw_kstr(&w, "operator", t->exists ? "Exists" : "Equal");
			ng_jw_obj_end(&w);
		}
		ng_jw_arr_end(&w);
	}
	ng_jw_obj_end(&w);
	return done(&w);
}

/* ---- NodeGateConfig ---- */

static void cidr(struct ng_jw *w, const struct kube_cidr *c)
{
	char addr[INET6_ADDRSTRLEN], text[INET6_ADDRSTRLEN + 8];
	ng_fuzz_check(inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, addr, sizeof(addr)) !=
		      NULL);
	(void)snprintf(text, sizeof(text), "%s/%u", addr, (unsigned)c->bits);
	ng_jw_str(w, text);
}

static void ngc_hooks(struct ng_jw *w, const struct kube_hook_policy *p,
		      const struct ng_intern *pool)
{
	ng_jw_key(w, "healthHooks");
	ng_jw_obj(w);
	ng_jw_kbool(w, "allowServiceRefs", p->allow_service_refs);
	ng_jw_kbool(w, "allowHTTP", p->allow_http);
	ng_jw_ki64(w, "maxResponseBytes", p->max_response_bytes);
	if (p->nhosts)
		kids(w, pool, "allowedHosts", p->hosts, p->nhosts);
	if (p->ncidrs) {
		ng_jw_key(w, "allowedCIDRs");
		ng_jw_arr(w);
		for (uint16_t i = 0; i < p->ncidrs; i++)
			cidr(w, &p->cidrs[i]);
		ng_jw_arr_end(w);
	}
	ng_jw_obj_end(w);
}

static void ngc_drain(struct ng_jw *w, const struct kube_ngc *g, const struct ng_intern *pool)
{
	static const char *const bkeys[3] = {"base", "max", "jitter"};
	const int64_t bvals[3] = {g->drain_backoff_base_ms, g->drain_backoff_max_ms,
				  g->drain_backoff_jitter_ms};
	ng_jw_key(w, "drain");
	ng_jw_obj(w);
	ksel(w, "protectedNamespaces", &g->protected_namespaces, pool);
	ksel(w, "protectedJobPods", &g->protected_job_pods, pool);
	drain_rules(w, g->drain_rules, g->ndrain_rules, pool);
	if (g->drain_deadline_s >= 0)
		ng_jw_ki64(w, "deadlineSeconds", g->drain_deadline_s);
	ng_jw_key(w, "backoff");
	ng_jw_obj(w);
	for (int k = 0; k < 3; k++)
		if (bvals[k] >= 0)
			ng_jw_ki64(w, bkeys[k], bvals[k] / 1000);
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
}

static void ngc_alert(struct ng_jw *w, const struct kube_alert_gate *a)
{
	if (a->mode == KUBE_ALERT_NONE)
		return;
	ng_jw_key(w, "alertGate");
	ng_jw_obj(w);
	ng_jw_kstr(w, "prometheusURL", a->target.url);
	ng_jw_kstr(w, a->mode == KUBE_ALERT_QUERY ? "query" : "alertNameRegex", a->expr);
	ng_jw_ki64(w, "timeoutSeconds", a->target.timeout_s);
	ng_jw_ki64(w, "cacheSeconds", a->cache_s);
	ng_jw_kstr(w, "failurePolicy", a->fail_open ? "Ignore" : "Deny");
	if (a->target.ca) {
		struct ng_buf b64;
		ng_buf_init(&b64, NG_MAX_BODY_BYTES);
		ng_fuzz_check(ng_buf_base64(&b64, a->target.ca, a->target.nca) == NG_OK);
		ng_jw_key(w, "caBundle");
		ng_jw_strn(w, b64.data, b64.len);
		ng_buf_finish(&b64);
	}
	ng_jw_obj_end(w);
}

ng_status ng_fuzz_encode_ngc(const struct kube_ngc *g, const struct ng_intern *pool,
			     struct ng_buf *out)
{
	static const char *const modes[] = {"", "Enforce", "Warn", "Off"};
	struct ng_jw w;
	ng_jw_init(&w, out);
	head(&w, "nodegate.io/v1alpha1", "NodeGateConfig");
	kid(&w, pool, "name", g->name);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_kbool(&w, "paused", g->paused);
	ng_jw_kbool(&w, "rejectEmptyDisruptions", g->reject_empty);
	ng_jw_kbool(&w, "rejectOverlappingDisruptions", g->reject_overlapping);
	ng_jw_kbool(&w, "nodeConditions", !g->no_node_conditions);
	ng_jw_kbool(&w, "protectHeldNodes", !g->no_protect_held);
	ng_jw_key(&w, "controlPlane");
	ng_jw_obj(&w);
	ng_jw_kbool(&w, "serial", g->serial_control_plane);
	ksel(&w, "selector", &g->control_plane_selector, pool);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "retry");
	ng_jw_obj(&w);
	if (g->retry_initial_ms)
		ng_jw_ki64(&w, "initialIntervalSeconds", g->retry_initial_ms / 1000);
	if (g->retry_max_ms)
		ng_jw_ki64(&w, "maxIntervalSeconds", g->retry_max_ms / 1000);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "lifecycle");
	ng_jw_obj(&w);
	if (g->has_default_deadline)
		ng_jw_ki64(&w, "defaultActiveDeadlineSeconds", g->default_deadline_s);
	if (g->has_default_ttl)
		ng_jw_ki64(&w, "defaultTTLSecondsAfterCompletion", g->default_ttl_s);
	ng_jw_obj_end(&w);
	if (g->nallowed_types)
		kids(&w, pool, "allowedTypes", g->allowed_types, g->nallowed_types);
	if (g->ndnd_override)
		kids(&w, pool, "doNotDisruptOverrideTypes", g->dnd_override, g->ndnd_override);
	ng_jw_kbool(&w, "respectPodDisruptionBudgets", g->respect_pdbs);
	ng_jw_key(&w, "eviction");
	ng_jw_obj(&w);
	if (g->eviction_mode != KUBE_EVICTION_UNSET)
		ng_jw_kstr(&w, "mode", modes[g->eviction_mode < 4 ? g->eviction_mode : 0]);
	ng_jw_kbool(&w, "autoRequest", g->auto_request);
	if (g->has_exempt_users)
		kids(&w, pool, "exemptUsers", g->exempt_users, g->nexempt);
	ng_jw_obj_end(&w);
	ngc_hooks(&w, &g->hooks, pool);
	ngc_drain(&w, g, pool);
	ngc_alert(&w, &g->alert);
	ng_jw_obj_end(&w);
	return done(&w);
}

/* ---- PersistentVolume ---- */

/* A requirement written as one that makes its term invalid: an unknown operator. */
static void invalid_requirement(struct ng_jw *w)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "key", "k");
	ng_jw_kstr(w, "operator", "Invalid");
	ng_jw_obj_end(w);
}

static void node_term(struct ng_jw *w, const struct kube_node_term *t, const struct ng_intern *pool)
{
	ng_jw_obj(w);
	ng_jw_key(w, "matchExpressions");
	ng_jw_arr(w);
	if (t->invalid)
		invalid_requirement(w);
	for (uint16_t i = 0; !t->invalid && i < t->nexprs; i++)
		requirement(w, &t->exprs[i], pool);
	ng_jw_arr_end(w);
	ng_jw_key(w, "matchFields");
	ng_jw_arr(w);
	for (uint16_t i = 0; !t->invalid && i < t->nfields; i++)
		requirement(w, &t->fields[i], pool);
	ng_jw_arr_end(w);
	ng_jw_obj_end(w);
}

ng_status ng_fuzz_encode_pv(const struct kube_pv *pv, const struct ng_intern *pool,
			    struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	head(&w, "v1", "PersistentVolume");
	kid(&w, pool, "name", pv->name);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	if (pv->affinity.present) {
		ng_jw_key(&w, "nodeAffinity");
		ng_jw_obj(&w);
		ng_jw_key(&w, "required");
		ng_jw_obj(&w);
		ng_jw_key(&w, "nodeSelectorTerms");
		ng_jw_arr(&w);
		for (uint16_t i = 0; i < pv->affinity.nterms; i++)
			node_term(&w, &pv->affinity.terms[i], pool);
		ng_jw_arr_end(&w);
		ng_jw_obj_end(&w);
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	return done(&w);
}

/* ---- comparing ---- */

/* A comparison under way: the pools of both sides, and whether all was equal so far. */
struct cmp {
	const struct ng_intern *pa, *pb;
	bool ok;
};

static void differ(struct cmp *c, const char *field)
{
	if (c->ok)
		(void)fprintf(stderr, "roundtrip: %s differs\n", field);
	c->ok = false;
}

static void same_i64(struct cmp *c, const char *field, int64_t a, int64_t b)
{
	if (a != b)
		differ(c, field);
}

static void same_id(struct cmp *c, const char *field, uint32_t a, uint32_t b)
{
	size_t alen, blen;
	const char *as = ng_intern_str(c->pa, a, &alen);
	const char *bs = ng_intern_str(c->pb, b, &blen);
	if ((a == NG_INTERN_NONE) != (b == NG_INTERN_NONE) || alen != blen ||
	    memcmp(as, bs, alen) != 0)
		differ(c, field);
}

static void same_ids(struct cmp *c, const char *field, const uint32_t *a, size_t na,
		     const uint32_t *b, size_t nb)
{
	if (na != nb) {
		differ(c, field);
		return;
	}
	for (size_t i = 0; i < na; i++)
		same_id(c, field, a[i], b[i]);
}

/* Strings that may be NULL (absent). */
static void same_str(struct cmp *c, const char *field, const char *a, const char *b)
{
	if (!a != !b || (a && strcmp(a, b) != 0))
		differ(c, field);
}

static void same_req(struct cmp *c, const char *field, const struct kube_requirement *a,
		     const struct kube_requirement *b)
{
	same_id(c, field, a->key, b->key);
	same_i64(c, field, a->op, b->op);
	same_ids(c, field, a->values, a->nvalues, b->values, b->nvalues);
	if (a->op == KUBE_OP_GT || a->op == KUBE_OP_LT)
		same_i64(c, field, a->num, b->num);
}

static void same_sel(struct cmp *c, const char *field, const struct kube_selector *a,
		     const struct kube_selector *b)
{
	if (a->present != b->present || a->nreqs != b->nreqs) {
		differ(c, field);
		return;
	}
	for (uint16_t i = 0; i < a->nreqs; i++)
		same_req(c, field, &a->reqs[i], &b->reqs[i]);
}

bool ng_fuzz_same_selector(const struct kube_selector *a, const struct ng_intern *pa,
			   const struct kube_selector *b, const struct ng_intern *pb)
{
	struct cmp c = {pa, pb, true};
	same_sel(&c, "selector", a, b);
	return c.ok;
}

static void same_rules(struct cmp *c, const char *field, const struct kube_drain_rule *a, size_t na,
		       const struct kube_drain_rule *b, size_t nb)
{
	if (na != nb) {
		differ(c, field);
		return;
	}
	for (size_t i = 0; c->ok && i < na; i++) {
		same_sel(c, field, &a[i].pod_selector, &b[i].pod_selector);
		same_sel(c, field, &a[i].ns_selector, &b[i].ns_selector);
		same_i64(c, field, a[i].behavior, b[i].behavior);
		same_i64(c, field, a[i].order, b[i].order);
	}
}

static void same_drain(struct cmp *c, const struct kube_nd_drain *a, const struct kube_nd_drain *b)
{
	same_rules(c, "spec.drain.rules", a->rules, a->nrules, b->rules, b->nrules);
	same_i64(c, "spec.drain", a->present, b->present);
	same_i64(c, "spec.drain.cordon", a->cordon, b->cordon);
	same_i64(c, "spec.drain.force", a->force, b->force);
	same_i64(c, "spec.drain.deleteEmptyDir", a->delete_empty_dir, b->delete_empty_dir);
	same_i64(c, "spec.drain.skipWaitingForEviction", a->skip_waiting_for_eviction,
		 b->skip_waiting_for_eviction);
	same_i64(c, "spec.drain.waitForVolumeDetach", a->wait_for_volume_detach,
		 b->wait_for_volume_detach);
	same_i64(c, "spec.drain.evictionStrategy", a->strategy, b->strategy);
	same_i64(c, "spec.drain.timeoutSeconds", a->timeout_s, b->timeout_s);
	same_i64(c, "spec.drain.deadlineSeconds", a->deadline_s, b->deadline_s);
	same_i64(c, "spec.drain.onDeadline", a->on_deadline, b->on_deadline);
	same_str(c, "spec.drain.podSelector", a->pod_selector, b->pod_selector);
	same_i64(c, "spec.drain.waitForPodCompletion", a->has_wait, b->has_wait);
	same_str(c, "spec.drain.waitForPodCompletion.podSelector", a->wait_pod_selector,
		 b->wait_pod_selector);
	same_i64(c, "spec.drain.waitForPodCompletion.timeoutSeconds", a->wait_timeout_s,
		 b->wait_timeout_s);
	if (a->nfilters != b->nfilters)
		differ(c, "spec.drain.podEvictionFilters");
	for (uint16_t i = 0; c->ok && i < a->nfilters; i++)
		same_str(c, "spec.drain.podEvictionFilters[].byResourceNameRegex",
			 a->filters[i].by_resource_name_regex,
			 b->filters[i].by_resource_name_regex);
	same_i64(c, "spec.drain.taint", a->has_taint, b->has_taint);
	if (a->has_taint && b->has_taint) {
		same_id(c, "spec.drain.taint.key", a->taint.key, b->taint.key);
		same_id(c, "spec.drain.taint.value", a->taint.val, b->taint.val);
		same_id(c, "spec.drain.taint.effect", a->taint.effect, b->taint.effect);
	}
}

static void same_detail_spec(struct cmp *c, const struct kube_nd_detail *a,
			     const struct kube_nd_detail *b)
{
	same_i64(c, "spec.startDate", ng_fuzz_time_written(a->start_ms), b->start_ms);
	same_i64(c, "spec.duration", a->duration_ms, b->duration_ms);
	same_i64(c, "spec.activeDeadlineSeconds", a->active_deadline_s, b->active_deadline_s);
	same_i64(c, "spec.ttlSecondsAfterCompletion", a->ttl_after_completion_s,
		 b->ttl_after_completion_s);
	same_drain(c, &a->drain, &b->drain);
	same_i64(c, "spec.operation", a->operation.present, b->operation.present);
	same_i64(c, "spec.operation.waitForReboot", a->operation.wait_for_reboot,
		 b->operation.wait_for_reboot);
	same_str(c, "spec.operation.jobTemplate", a->operation.job_template,
		 b->operation.job_template);
	same_ids(c, "spec.additionalRequestors", a->more_requestors, a->nmore_requestors,
		 b->more_requestors, b->nmore_requestors);
	same_id(c, "spec problem", a->spec_error, b->spec_error);
}

static void same_status(struct cmp *c, const struct kube_nd_detail *a,
			const struct kube_nd_detail *b)
{
	same_i64(c, "status.grantedAt",
		 a->granted_ms == -1 ? -1 : ng_fuzz_time_written(a->granted_ms), b->granted_ms);
	same_i64(c, "status.expiresAt", ng_fuzz_time_written(a->expires_ms), b->expires_ms);
	if (a->nverdicts != b->nverdicts)
		differ(c, "status.disruptedDisruptionBudgets");
	for (uint16_t i = 0; c->ok && i < a->nverdicts; i++) {
		const struct kube_nd_verdict *x = &a->verdicts[i], *y = &b->verdicts[i];
		same_id(c, "status.disruptedDisruptionBudgets[].reference.kind", x->kind, y->kind);
		same_id(c, "status.disruptedDisruptionBudgets[].reference.namespace", x->ns, y->ns);
		same_id(c, "status.disruptedDisruptionBudgets[].reference.name", x->name, y->name);
		same_i64(c, "status.disruptedDisruptionBudgets[].ok", x->ok, y->ok);
		same_str(c, "status.disruptedDisruptionBudgets[].reason", x->reason, y->reason);
	}
	if (a->nconditions != b->nconditions)
		differ(c, "status.conditions");
	for (uint16_t i = 0; c->ok && i < a->nconditions; i++) {
		const struct kube_condition *x = &a->conditions[i], *y = &b->conditions[i];
		same_str(c, "status.conditions[].type", x->type, y->type);
		same_str(c, "status.conditions[].reason", x->reason, y->reason);
		same_str(c, "status.conditions[].message", x->message, y->message);
		same_i64(c, "status.conditions[].status", x->status, y->status);
		same_i64(c, "status.conditions[].lastTransitionTime",
			 ng_fuzz_time_written(x->since_ms), y->since_ms);
	}
	const struct kube_nd_drain_status *x = &a->drain_status, *y = &b->drain_status;
	same_i64(c, "status.drain.totalPods", x->total, y->total);
	same_i64(c, "status.drain.evictedPods", x->evicted, y->evicted);
	same_i64(c, "status.drain.remainingPods", x->remaining, y->remaining);
	same_i64(c, "status.drain.progress", x->progress, y->progress);
	same_i64(c, "status.drain.attempts", x->attempts, y->attempts);
	same_i64(c, "status.drain.backoffUntil", ng_fuzz_time_written(x->backoff_until_ms),
		 y->backoff_until_ms);
	same_i64(c, "status.drain.attemptStartedAt", ng_fuzz_time_written(x->attempt_started_ms),
		 y->attempt_started_ms);
}

bool ng_fuzz_same_nd(const struct kube_nd *a, const struct ng_intern *pa, const struct kube_nd *b,
		     const struct ng_intern *pb, unsigned skip)
{
	struct cmp c = {pa, pb, true};
	const struct kube_nd_detail *x = a->detail, *y = b->detail;
	ng_fuzz_check(x != NULL && y != NULL);
	same_id(&c, "metadata.name", a->name, b->name);
	same_str(&c, "metadata.resourceVersion", a->rv, b->rv);
	same_str(&c, "metadata.uid", a->uid, b->uid);
	same_i64(&c, "metadata.creationTimestamp", ng_fuzz_time_written(a->created_ms),
		 b->created_ms);
	same_i64(&c, "metadata.deletionTimestamp", a->deleting, b->deleting);
	same_ids(&c, "metadata.finalizers", a->finalizers, a->nfinalizers, b->finalizers,
		 b->nfinalizers);
	same_id(&c, "metadata.annotations[nodegate.io/created-by]", x->created_by, y->created_by);
	same_id(&c, "spec.type", a->type, b->type);
	same_id(&c, "spec.requestor", a->requestor, b->requestor);
	same_i64(&c, "spec.priority", a->priority, b->priority);
	same_i64(&c, "spec.nodeNames", x->has_node_names, y->has_node_names);
	same_ids(&c, "spec.nodeNames", a->node_names, a->nnode_names, b->node_names,
		 b->nnode_names);
	if (!(skip & NG_FUZZ_SKIP_SELECTOR)) {
		same_i64(&c, "spec.nodeSelector", x->has_node_selector, y->has_node_selector);
		same_i64(&c, "spec.nodeSelector (invalid)", a->selector_invalid,
			 b->selector_invalid);
		if (a->selector_invalid && b->selector_invalid)
			same_id(&c, "spec.nodeSelector (why invalid)", a->selector_error,
				b->selector_error);
		same_sel(&c, "spec.nodeSelector", &a->node_selector, &b->node_selector);
	}
	same_i64(&c, "spec.retry.enabled", a->retry, b->retry);
	same_i64(&c, "spec.retry.deadline", ng_fuzz_time_written(a->deadline_ms), b->deadline_ms);
	if (!(skip & NG_FUZZ_SKIP_DETAIL)) {
		same_i64(&c, "spec.additionalRequestors (set)", a->additional_requestors,
			 b->additional_requestors);
		same_detail_spec(&c, x, y);
	}
	same_i64(&c, "status.state", a->state, b->state);
	same_ids(&c, "status.disruptedNodes", a->disrupted, a->ndisrupted, b->disrupted,
		 b->ndisrupted);
	same_i64(&c, "status.retryCount", a->retry_count, b->retry_count);
	same_i64(&c, "status.nextRetryDate", ng_fuzz_time_written(a->next_retry_ms),
		 b->next_retry_ms);
	same_status(&c, x, y);
	return c.ok;
}

static void same_ios(struct cmp *c, const char *field, const struct kube_int_or_string *a,
		     const struct kube_int_or_string *b);

static void same_common(struct cmp *c, const struct kube_budget_common *a,
			const struct kube_budget_common *b)
{
	same_id(c, "metadata.namespace", a->ns, b->ns);
	same_id(c, "metadata.name", a->name, b->name);
	same_str(c, "metadata.uid", a->uid, b->uid);
	same_i64(c, "invalid", a->invalid, b->invalid);
	/* The reason is an id only when invalid. */
	if (a->invalid && b->invalid)
		same_id(c, "invalid (why)", a->error, b->error);
	same_i64(c, "spec.freeze.enabled", a->frozen, b->frozen);
	if (a->frozen && b->frozen)
		same_id(c, "spec.freeze.reason", a->freeze_reason, b->freeze_reason);
	same_ids(c, "spec.supportedNodeDisruptionTypes", a->types, a->ntypes, b->types, b->ntypes);
	same_i64(c, "spec.outsideWindows", a->outside_use_default, b->outside_use_default);
	same_i64(c, "spec.windows", a->nwindows, b->nwindows);
	for (size_t i = 0; i < a->nwindows && i < b->nwindows; i++) {
		const struct kube_window *x = &a->windows[i], *y = &b->windows[i];
		same_id(c, "spec.windows.schedule", x->schedule, y->schedule);
		same_id(c, "spec.windows.timeZone", x->zone, y->zone);
		same_i64(c, "spec.windows.duration", x->duration_ms, y->duration_ms);
		same_i64(c, "spec.windows (zone)", x->tz == y->tz, 1);
		same_i64(c, "spec.windows (minutes)", (int64_t)x->cron.minutes,
			 (int64_t)y->cron.minutes);
		same_i64(c, "spec.windows (hours)", x->cron.hours, y->cron.hours);
		same_i64(c, "spec.windows (days)", x->cron.days, y->cron.days);
		same_i64(c, "spec.windows (months)", x->cron.months, y->cron.months);
		same_i64(c, "spec.windows (weekdays)", x->cron.weekdays, y->cron.weekdays);
		same_i64(c, "spec.windows (day stars)",
			 x->cron.days_star * 2 + x->cron.weekdays_star,
			 y->cron.days_star * 2 + y->cron.weekdays_star);
		same_ios(c, "spec.windows.limit", &x->limit, &y->limit);
	}
}

static void same_ios(struct cmp *c, const char *field, const struct kube_int_or_string *a,
		     const struct kube_int_or_string *b)
{
	same_i64(c, field, a->set, b->set);
	same_i64(c, field, a->is_str, b->is_str);
	if (a->is_str && b->is_str)
		same_id(c, field, a->str, b->str);
	else
		same_i64(c, field, a->i, b->i);
}

static void same_hook(struct cmp *c, const struct kube_hook *a, const struct kube_hook *b)
{
	same_i64(c, "spec.healthHook", a->present, b->present);
	same_i64(c, "spec.healthHook.service", a->service, b->service);
	same_str(c, "spec.healthHook.url", a->url, b->url);
	same_i64(c, "spec.healthHook.caBundle", (int64_t)a->nca, (int64_t)b->nca);
	if (!a->ca != !b->ca || (a->ca && memcmp(a->ca, b->ca, a->nca) != 0))
		differ(c, "spec.healthHook.caBundle");
	same_i64(c, "spec.healthHook.timeoutSeconds", a->timeout_s, b->timeout_s);
	same_id(c, "spec.healthHook (why not)", a->error, b->error);
	same_str(c, "spec.healthHook.url (scheme)", a->scheme, b->scheme);
	same_str(c, "spec.healthHook.url (host)", a->host, b->host);
	same_i64(c, "spec.healthHook.url (userinfo)", a->userinfo, b->userinfo);
}

bool ng_fuzz_same_adb(const struct kube_adb *a, const struct ng_intern *pa,
		      const struct kube_adb *b, const struct ng_intern *pb, unsigned skip)
{
	struct cmp c = {pa, pb, true};
	same_common(&c, &a->b, &b->b);
	same_sel(&c, "spec.podSelector", &a->pod_selector, &b->pod_selector);
	same_sel(&c, "spec.pvcSelector", &a->pvc_selector, &b->pvc_selector);
	same_ios(&c, "spec.maxDisruptions", &a->max_disruptions, &b->max_disruptions);
	if (!(skip & NG_FUZZ_SKIP_HOOK))
		same_hook(&c, &a->hook, &b->hook);
	return c.ok;
}

bool ng_fuzz_same_ndb(const struct kube_ndb *a, const struct ng_intern *pa,
		      const struct kube_ndb *b, const struct ng_intern *pb)
{
	struct cmp c = {pa, pb, true};
	same_common(&c, &a->b, &b->b);
	same_sel(&c, "spec.nodeSelector", &a->node_selector, &b->node_selector);
	same_ios(&c, "spec.maxDisruptedNodes", &a->max_disrupted, &b->max_disrupted);
	same_ios(&c, "spec.minUndisruptedNodes", &a->min_undisrupted, &b->min_undisrupted);
	same_i64(&c, "spec.countUnavailableNodes", a->count_unavailable, b->count_unavailable);
	same_id(&c, "spec.topologyKey", a->topology_key, b->topology_key);
	same_i64(&c, "spec.maxDisruptedDomains", a->max_domains, b->max_domains);
	same_ios(&c, "spec.maxDisruptedNodesPerDomain", &a->max_per_domain, &b->max_per_domain);
	if (a->ntargets != b->ntargets)
		differ(&c, "spec.taintTargets");
	for (uint16_t i = 0; c.ok && i < a->ntargets; i++) {
		const struct kube_taint_target *x = &a->taint_targets[i], *y = &b->taint_targets[i];
		same_id(&c, "spec.taintTargets[].key", x->key, y->key);
		same_id(&c, "spec.taintTargets[].value", x->val, y->val);
		same_id(&c, "spec.taintTargets[].effect", x->effect, y->effect);
		same_i64(&c, "spec.taintTargets[].operator", x->exists, y->exists);
	}
	return c.ok;
}

bool ng_fuzz_same_ngc(const struct kube_ngc *a, const struct ng_intern *pa,
		      const struct kube_ngc *b, const struct ng_intern *pb)
{
	struct cmp c = {pa, pb, true};
	same_id(&c, "metadata.name", a->name, b->name);
	same_i64(&c, "invalid", a->invalid, b->invalid);
	if (a->invalid && b->invalid)
		same_id(&c, "invalid (why)", a->error, b->error);
	same_i64(&c, "spec.paused", a->paused, b->paused);
	same_i64(&c, "spec.rejectEmptyDisruptions", a->reject_empty, b->reject_empty);
	same_i64(&c, "spec.rejectOverlappingDisruptions", a->reject_overlapping,
		 b->reject_overlapping);
	same_i64(&c, "spec.nodeConditions", a->no_node_conditions, b->no_node_conditions);
	same_i64(&c, "spec.protectHeldNodes", a->no_protect_held, b->no_protect_held);
	same_i64(&c, "spec.controlPlane.serial", a->serial_control_plane, b->serial_control_plane);
	same_sel(&c, "spec.controlPlane.selector", &a->control_plane_selector,
		 &b->control_plane_selector);
	same_i64(&c, "spec.retry.initialIntervalSeconds", a->retry_initial_ms, b->retry_initial_ms);
	same_i64(&c, "spec.retry.maxIntervalSeconds", a->retry_max_ms, b->retry_max_ms);
	same_ids(&c, "spec.allowedTypes", a->allowed_types, a->nallowed_types, b->allowed_types,
		 b->nallowed_types);
	same_ids(&c, "spec.doNotDisruptOverrideTypes", a->dnd_override, a->ndnd_override,
		 b->dnd_override, b->ndnd_override);
	same_i64(&c, "spec.respectPodDisruptionBudgets", a->respect_pdbs, b->respect_pdbs);
	same_i64(&c, "spec.eviction.mode", a->eviction_mode, b->eviction_mode);
	same_i64(&c, "spec.eviction.autoRequest", a->auto_request, b->auto_request);
	same_i64(&c, "spec.eviction.exemptUsers (set)", a->has_exempt_users, b->has_exempt_users);
	same_ids(&c, "spec.eviction.exemptUsers", a->exempt_users, a->nexempt, b->exempt_users,
		 b->nexempt);
	const struct kube_hook_policy *x = &a->hooks, *y = &b->hooks;
	same_ids(&c, "spec.healthHooks.allowedHosts", x->hosts, x->nhosts, y->hosts, y->nhosts);
	if (x->ncidrs != y->ncidrs ||
	    (x->ncidrs && memcmp(x->cidrs, y->cidrs, x->ncidrs * sizeof(*x->cidrs)) != 0))
		differ(&c, "spec.healthHooks.allowedCIDRs");
	same_i64(&c, "spec.healthHooks.allowServiceRefs", x->allow_service_refs,
		 y->allow_service_refs);
	same_i64(&c, "spec.healthHooks.allowHTTP", x->allow_http, y->allow_http);
	same_i64(&c, "spec.healthHooks.maxResponseBytes", x->max_response_bytes,
		 y->max_response_bytes);
	same_sel(&c, "spec.drain.protectedNamespaces", &a->protected_namespaces,
		 &b->protected_namespaces);
	same_sel(&c, "spec.drain.protectedJobPods", &a->protected_job_pods, &b->protected_job_pods);
	same_rules(&c, "spec.drain.rules", a->drain_rules, a->ndrain_rules, b->drain_rules,
		   b->ndrain_rules);
	same_i64(&c, "spec.drain.deadlineSeconds", a->drain_deadline_s, b->drain_deadline_s);
	same_i64(&c, "spec.drain.backoff.base", a->drain_backoff_base_ms, b->drain_backoff_base_ms);
	same_i64(&c, "spec.drain.backoff.max", a->drain_backoff_max_ms, b->drain_backoff_max_ms);
	same_i64(&c, "spec.drain.backoff.jitter", a->drain_backoff_jitter_ms,
		 b->drain_backoff_jitter_ms);
	same_i64(&c, "spec.lifecycle.defaultActiveDeadlineSeconds",
		 a->has_default_deadline ? a->default_deadline_s : -1,
		 b->has_default_deadline ? b->default_deadline_s : -1);
	same_i64(&c, "spec.lifecycle.defaultTTLSecondsAfterCompletion",
		 a->has_default_ttl ? a->default_ttl_s : -1,
		 b->has_default_ttl ? b->default_ttl_s : -1);
	const struct kube_alert_gate *p = &a->alert, *q = &b->alert;
	same_i64(&c, "spec.alertGate (mode)", p->mode, q->mode);
	same_str(&c, "spec.alertGate.query/alertNameRegex", p->expr, q->expr);
	same_i64(&c, "spec.alertGate.cacheSeconds", p->cache_s, q->cache_s);
	same_i64(&c, "spec.alertGate.failurePolicy", p->fail_open, q->fail_open);
	same_hook(&c, &p->target, &q->target);
	return c.ok;
}

bool ng_fuzz_same_pv(const struct kube_pv *a, const struct ng_intern *pa, const struct kube_pv *b,
		     const struct ng_intern *pb)
{
	struct cmp c = {pa, pb, true};
	const struct kube_node_selector *x = &a->affinity, *y = &b->affinity;
	same_id(&c, "metadata.name", a->name, b->name);
	if (x->present != y->present || x->nterms != y->nterms) {
		differ(&c, "spec.nodeAffinity");
		return false;
	}
	for (uint16_t i = 0; c.ok && i < x->nterms; i++) {
		const struct kube_node_term *s = &x->terms[i], *t = &y->terms[i];
		same_i64(&c, "nodeSelectorTerms[] (invalid)", s->invalid, t->invalid);
		if (s->invalid || t->invalid)
			continue;
		if (s->nexprs != t->nexprs || s->nfields != t->nfields) {
			differ(&c, "nodeSelectorTerms[]");
			break;
		}
		for (uint16_t k = 0; k < s->nexprs; k++)
			same_req(&c, "nodeSelectorTerms[].matchExpressions[]", &s->exprs[k],
				 &t->exprs[k]);
		for (uint16_t k = 0; k < s->nfields; k++)
			same_req(&c, "nodeSelectorTerms[].matchFields[]", &s->fields[k],
				 &t->fields[k]);
	}
	return c.ok;
}

struct kube_snapshot *ng_fuzz_snapshot(const char *const *items, size_t n)
{
	struct kube_builder *b = kube_builder_create();
	ng_fuzz_check(b != NULL);
	for (size_t i = 0; i < n; i++)
		ng_fuzz_check(kube_builder_add_json(b, items[i], strlen(items[i]), NULL) == NG_OK);
	struct kube_snapshot *s = NULL;
	ng_fuzz_check(kube_builder_finish(b, &s) == NG_OK);
	return s;
}
