/* The API-write toolkit (kube/write.h). */
#include "kube/write.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/log.h"
#include "kube/client.h"
#include "kube/internal.h"
#include "kube/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bodies nodegate writes are small: a status with 5,000 node names is ~100 KB. */
#define BODY_CAP_BYTES (8u << 20)
/* The answer is read only for its status and, on failure, its message. */
#define RESPONSE_CAP_BYTES (1u << 20)

/* The kinds nodegate writes without caching them; a cached kind it writes is its kube_kinds[]
 * row (its `write`), so each kind's API facts are in one place. */
static const struct kube_kind_row uncached[KUBE_KIND_COUNT] = {
    [KUBE_KIND_EVENT] =
	{.group = "", .version = "v1", .plural = "events", .kind = "Event", .namespaced = true},
    [KUBE_KIND_JOB] =
	{.group = "batch", .version = "v1", .plural = "jobs", .kind = "Job", .namespaced = true},
    [KUBE_KIND_SECRET] =
	{.group = "", .version = "v1", .plural = "secrets", .kind = "Secret", .namespaced = true},
    [KUBE_KIND_VWC] = {.group = "admissionregistration.k8s.io",
		       .version = "v1",
		       .plural = "validatingwebhookconfigurations",
		       .kind = "ValidatingWebhookConfiguration"},
    [KUBE_KIND_MWC] = {.group = "admissionregistration.k8s.io",
		       .version = "v1",
		       .plural = "mutatingwebhookconfigurations",
		       .kind = "MutatingWebhookConfiguration"},
};

/* The API facts of @k: its cached row or its entry above; NULL for none. */
static const struct kube_kind_row *api_of(enum kube_kind k)
{
	if (k <= KUBE_KIND_NONE || k >= KUBE_KIND_COUNT)
		return NULL;
	const struct kube_kind_row *row = kube_kind_of_write(k);
	return row ? row : uncached[k].kind ? &uncached[k] : NULL;
}

const char *kube_kind_name(enum kube_kind k)
{
	const struct kube_kind_row *a = api_of(k);
	return a ? a->kind : "?";
}

const char *kube_write_outcome_str(enum kube_write_outcome o)
{
	static const char *const names[] = {"ok", "conflict", "gone", "refused", "failed"};
	return o <= KUBE_WRITE_FAILED ? names[o] : "?";
}

ng_status kube_ref_path(const struct kube_ref *ref, const char *sub, char *out, size_t cap)
{
	const struct kube_kind_row *a = api_of(ref->kind);
	if (!a || (a->namespaced && !ref->ns))
		return NG_EINVAL;
	bool ns = a->namespaced;
	int n = snprintf(out, cap, "%s%s/%s%s%s/%s%s%s%s%s", *a->group ? "/apis/" : "/api",
			 a->group, a->version, ns ? "/namespaces/" : "", ns ? ref->ns : "",
			 a->plural, ref->name ? "/" : "", ref->name ? ref->name : "",
			 sub ? "/" : "", sub ? sub : "");
	return n < 0 || (size_t)n >= cap ? NG_ELIMIT : NG_OK;
}

static void classify(ng_status st, long http, const struct ng_buf *resp,
		     struct kube_write_result *ret)
{
	ret->http = st == NG_OK ? http : 0;
	if (st != NG_OK)
		/* NOLINTNEXTLINE(bugprone-branch-clone): no answer and a 5xx both fail */
		ret->outcome = KUBE_WRITE_FAILED;
	else if (http >= 200 && http < 300)
		ret->outcome = KUBE_WRITE_OK;
	else if (http == 409)
		ret->outcome = KUBE_WRITE_CONFLICT;
	else if (http == 404)
		ret->outcome = KUBE_WRITE_GONE;
	else if (http >= 400 && http < 500)
		ret->outcome = KUBE_WRITE_REFUSED;
	else
		ret->outcome = KUBE_WRITE_FAILED;
	if (st == NG_OK && ret->outcome != KUBE_WRITE_OK)
		(void)ng_err_set(&ret->err, NG_EKUBE, 0, "HTTP %ld: %.120s", http,
				 resp->data ? resp->data : "");
}

/* Sends @body (NULL with @st: it could not be built) within @timeout_ms, classifies the answer
 * and leaves it in @resp. */
static void send_timed(struct kube_client *c, const char *method, const struct kube_ref *ref,
		       const char *sub, const char *ctype, ng_status st, const struct ng_buf *body,
		       int64_t timeout_ms, struct ng_buf *resp, struct kube_write_result *ret)
{
	*ret = (struct kube_write_result){0};
	char path[1024];
	long http = 0;
	if (st != NG_OK) {
		(void)ng_err_set(&ret->err, st, 0, "request body: %s", ng_status_str(st));
	} else if ((st = kube_ref_path(ref, sub, path, sizeof(path))) != NG_OK) {
		(void)ng_err_set(&ret->err, st, 0, "no path for %s %s", kube_kind_name(ref->kind),
				 ref->name ? ref->name : "");
	} else {
		st = kube_client_request(c, method, path, ctype, body->data, body->len, timeout_ms,
					 resp->cap, resp, &http, &ret->err);
	}
	classify(st, http, resp, ret);
}

static void send_write(struct kube_client *c, const char *method, const struct kube_ref *ref,
		       const char *sub, const char *ctype, ng_status st, const struct ng_buf *body,
		       struct kube_write_result *ret)
{
	struct ng_buf resp;
	ng_buf_init(&resp, RESPONSE_CAP_BYTES);
	send_timed(c, method, ref, sub, ctype, st, body, KUBE_WRITE_TIMEOUT_MS, &resp, ret);
	ng_buf_finish(&resp);
}

void kube_send_object(struct kube_client *c, const char *method, const struct kube_ref *ref,
		      const char *body, size_t len, int64_t timeout_ms, struct ng_buf *resp,
		      struct kube_write_result *ret)
{
	const struct ng_buf b = {(char *)(uintptr_t)body, len, len, len};
	send_timed(c, method, ref, NULL, "application/json", NG_OK, &b, timeout_ms, resp, ret);
}

static void meta_rv(struct ng_jw *w, const char *rv)
{
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	if (rv)
		ng_jw_kstr(w, "resourceVersion", rv);
	ng_jw_obj_end(w);
}

static void patch_status(struct kube_client *c, const struct kube_ref *ref, const char *rv,
			 const char *ctype, kube_body_fn fn, void *ctx,
			 struct kube_write_result *ret)
{
	struct ng_buf b;
	ng_buf_init(&b, BODY_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	if (rv)
		meta_rv(&w, rv);
	ng_jw_key(&w, "status");
	ng_jw_obj(&w);
	fn(&w, ctx);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	send_write(c, "PATCH", ref, "status", ctype, ng_jw_finish(&w), &b, ret);
	ng_buf_finish(&b);
}

void kube_patch_status(struct kube_client *c, const struct kube_ref *ref, const char *rv,
		       kube_body_fn fn, void *ctx, struct kube_write_result *ret)
{
	patch_status(c, ref, rv, "application/merge-patch+json", fn, ctx, ret);
}

void kube_patch_status_strategic(struct kube_client *c, const struct kube_ref *ref, kube_body_fn fn,
				 void *ctx, struct kube_write_result *ret)
{
	patch_status(c, ref, NULL, "application/strategic-merge-patch+json", fn, ctx, ret);
}

void kube_patch_status_json(struct kube_client *c, const struct kube_ref *ref, const char *rv,
			    const char *status, size_t len, struct kube_write_result *ret)
{
	struct ng_buf b;
	ng_buf_init(&b, BODY_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	if (rv)
		meta_rv(&w, rv);
	ng_jw_key(&w, "status");
	ng_jw_raw(&w, status, len);
	ng_jw_obj_end(&w);
	send_write(c, "PATCH", ref, "status", "application/merge-patch+json", ng_jw_finish(&w), &b,
		   ret);
	ng_buf_finish(&b);
}

/* metadata.resourceVersion of the object answered in @resp into @out (KUBE_WRITE_RV_BYTES); ""
 * when it has none that fits. */
static void answer_rv(const struct ng_buf *resp, char *out)
{
	out[0] = '\0';
	struct ng_arena *a = resp->len ? ng_arena_create((64u << 10) + 8 * resp->len) : NULL;
	cJSON *root = NULL;
	if (a && ng_json_parse(resp->data, resp->len, a, &root, NULL) == NG_OK) {
		const char *rv = ng_json_str(ng_json_get(root, "metadata"), "resourceVersion");
		if (rv && strlen(rv) < KUBE_WRITE_RV_BYTES)
			memcpy(out, rv, strlen(rv) + 1);
	}
	ng_arena_destroy(a);
}

void kube_set_finalizer(struct kube_client *c, const struct kube_ref *ref, const char *rv,
			const char *const *current, size_t n, const char *fin, bool present,
			char *ret_rv, struct kube_write_result *ret)
{
	if (ret_rv)
		ret_rv[0] = '\0';
	bool has = false;
	for (size_t i = 0; i < n && !has; i++)
		has = strcmp(current[i], fin) == 0;
	if (has == present) {
		*ret = (struct kube_write_result){0};
		return;
	}
	struct ng_buf b;
	ng_buf_init(&b, BODY_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_key(&w, "metadata");
	ng_jw_obj(&w);
	if (rv)
		ng_jw_kstr(&w, "resourceVersion", rv);
	ng_jw_key(&w, "finalizers");
	ng_jw_arr(&w);
	for (size_t i = 0; i < n; i++)
		if (strcmp(current[i], fin) != 0)
			ng_jw_str(&w, current[i]);
	if (present)
		ng_jw_str(&w, fin);
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	struct ng_buf resp;
	ng_buf_init(&resp, RESPONSE_CAP_BYTES);
	send_timed(c, "PATCH", ref, NULL, "application/merge-patch+json", ng_jw_finish(&w), &b,
		   KUBE_WRITE_TIMEOUT_MS, &resp, ret);
	if (ret_rv && ret->outcome == KUBE_WRITE_OK)
		answer_rv(&resp, ret_rv);
	ng_buf_finish(&resp);
	ng_buf_finish(&b);
}

static void event_body(struct ng_jw *w, const struct kube_event *ev)
{
	const char *ns = ev->about.ns ? ev->about.ns : "default";
	char name[300];
	ng_fmt(name, sizeof(name), "%.200s.%llx", ev->about.name ? ev->about.name : "",
	       (unsigned long long)ng_now_mono_us());
	ng_jw_obj(w);
	ng_jw_kstr(w, "apiVersion", "v1");
	ng_jw_kstr(w, "kind", "Event");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", name);
	ng_jw_kstr(w, "namespace", ns);
	ng_jw_obj_end(w);
	ng_jw_key(w, "involvedObject");
	ng_jw_obj(w);
	const struct kube_kind_row *a = api_of(ev->about.kind);
	char api_version[128];
	ng_fmt(api_version, sizeof(api_version), "%s%s%s", a ? a->group : "",
	       a && *a->group ? "/" : "", a ? a->version : "");
	ng_jw_kstr(w, "apiVersion", api_version);
	ng_jw_kstr(w, "kind", kube_kind_name(ev->about.kind));
	if (ev->about.ns)
		ng_jw_kstr(w, "namespace", ev->about.ns);
	ng_jw_kstr(w, "name", ev->about.name);
	if (ev->uid && *ev->uid)
		ng_jw_kstr(w, "uid", ev->uid);
	ng_jw_obj_end(w);
	ng_jw_kstr(w, "reason", ev->reason);
	ng_jw_kstr(w, "message", ev->message);
	ng_jw_kstr(w, "type", ev->type);
	ng_jw_key(w, "source");
	ng_jw_obj(w);
	ng_jw_kstr(w, "component", "nodegate");
	ng_jw_obj_end(w);
	ng_jw_kstr(w, "reportingComponent", "nodegate");
	ng_jw_kstr(w, "reportingInstance", ev->instance ? ev->instance : "nodegate");
	ng_jw_ki64(w, "count", 1);
	ng_jw_key(w, "firstTimestamp");
	ng_jw_time(w, ev->now_wall_ms);
	ng_jw_key(w, "lastTimestamp");
	ng_jw_time(w, ev->now_wall_ms);
	ng_jw_obj_end(w);
}

void kube_create_event(struct kube_client *c, const struct kube_event *ev,
		       struct kube_write_result *ret)
{
	struct ng_buf b;
	ng_buf_init(&b, BODY_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	event_body(&w, ev);
	const struct kube_ref events = {KUBE_KIND_EVENT, ev->about.ns ? ev->about.ns : "default",
					NULL};
	send_write(c, "POST", &events, NULL, "application/json", ng_jw_finish(&w), &b, ret);
	ng_buf_finish(&b);
}

void kube_create(struct kube_client *c, const struct kube_ref *collection, kube_body_fn fn,
		 void *ctx, struct kube_write_result *ret)
{
	struct ng_buf b;
	ng_buf_init(&b, BODY_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	fn(&w, ctx);
	ng_jw_obj_end(&w);
	send_write(c, "POST", collection, NULL, "application/json", ng_jw_finish(&w), &b, ret);
	ng_buf_finish(&b);
}

/* details.retryAfterSeconds of a Status answer; 0 when absent or unreadable. */
/* A refused eviction's Status answer: its details.retryAfterSeconds (0 when none) and, into
 * @ret->err, its message and its first cause's ("Cannot evict pod as it would violate the pod's
 * disruption budget. (The disruption budget db needs 2 healthy pods and has 2 currently)", or
 * the words of the admission webhook that denied it) in place of the raw answer. */
static int64_t read_refusal(const struct ng_buf *resp, struct kube_write_result *ret)
{
	struct ng_arena *a = resp->len ? ng_arena_create((64u << 10) + 8 * resp->len) : NULL;
	cJSON *root = NULL;
	int64_t secs = 0;
	if (!a || ng_json_parse(resp->data, resp->len, a, &root, NULL) != NG_OK) {
		ng_arena_destroy(a);
		return 0;
	}
	const cJSON *details = ng_json_get(root, "details");
	if (!ng_json_int64(ng_json_get(details, "retryAfterSeconds"), &secs) || secs < 0)
		secs = 0;
	const char *msg = ng_json_str(root, "message");
	const cJSON *causes = ng_json_get(details, "causes");
	const char *cause =
	    cJSON_IsArray(causes) && causes->child ? ng_json_str(causes->child, "message") : NULL;
	if (msg && cause)
		(void)ng_err_set(&ret->err, NG_EKUBE, 0, "%.120s (%.120s)", msg, cause);
	else if (msg)
		(void)ng_err_set(&ret->err, NG_EKUBE, 0, "%.240s", msg);
	ng_arena_destroy(a);
	return secs;
}

void kube_evict_pod(struct kube_client *c, const char *ns, const char *name,
		    int64_t *ret_retry_after_s, struct kube_write_result *ret)
{
	struct ng_buf b, resp;
	ng_buf_init(&b, 4096);
	ng_buf_init(&resp, RESPONSE_CAP_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "policy/v1");
	ng_jw_kstr(&w, "kind", "Eviction");
	ng_jw_key(&w, "metadata");
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "name", name);
	ng_jw_kstr(&w, "namespace", ns);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	const struct kube_ref ref = {KUBE_KIND_POD, ns, name};
	send_timed(c, "POST", &ref, "eviction", "application/json", ng_jw_finish(&w), &b,
		   KUBE_WRITE_TIMEOUT_MS, &resp, ret);
	*ret_retry_after_s = ret->outcome == KUBE_WRITE_REFUSED ? read_refusal(&resp, ret) : 0;
	if (ret->http != 429)
		*ret_retry_after_s = 0;
	ng_buf_finish(&resp);
	ng_buf_finish(&b);
}

/* DELETE of @ref with DeleteOptions: @grace_s (< 0: none), @uid (NULL: no precondition). */
static void delete_with(struct kube_client *c, const struct kube_ref *ref, int64_t grace_s,
			const char *uid, const char *rv, struct kube_write_result *ret)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "v1");
	ng_jw_kstr(&w, "kind", "DeleteOptions");
	if (grace_s >= 0)
		ng_jw_ki64(&w, "gracePeriodSeconds", grace_s);
	if (ref->kind == KUBE_KIND_JOB)
		ng_jw_kstr(&w, "propagationPolicy", "Background");
	if (uid || rv) {
		ng_jw_key(&w, "preconditions");
		ng_jw_obj(&w);
		if (uid)
			ng_jw_kstr(&w, "uid", uid);
		if (rv)
			ng_jw_kstr(&w, "resourceVersion", rv);
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	send_write(c, "DELETE", ref, NULL, "application/json", ng_jw_finish(&w), &b, ret);
	ng_buf_finish(&b);
}

void kube_delete(struct kube_client *c, const struct kube_ref *ref, int64_t grace_s,
		 struct kube_write_result *ret)
{
	delete_with(c, ref, grace_s, NULL, NULL, ret);
}

void kube_delete_uid(struct kube_client *c, const struct kube_ref *ref, const char *uid,
		     struct kube_write_result *ret)
{
	delete_with(c, ref, -1, uid, NULL, ret);
}

void kube_delete_rv(struct kube_client *c, const struct kube_ref *ref, const char *rv,
		    struct kube_write_result *ret)
{
	delete_with(c, ref, -1, NULL, rv, ret);
}

/* Sets @obj[@key] to @v, replacing what was there. False on OOM. */
static bool put(cJSON *obj, const char *key, cJSON *v)
{
	if (!v)
		return false;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddItemToObjectCS(obj, key, v) != 0;
}

/* @obj[@key] as an object, created when absent or not an object. NULL on OOM. */
static cJSON *object_at(cJSON *obj, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsObject(v))
		return v;
	v = cJSON_CreateObject();
	return put(obj, key, v) ? v : NULL;
}

static bool add_toleration(cJSON *list, const char *key, const char *value, const char *effect)
{
	cJSON *t = cJSON_CreateObject();
	if (!t || !cJSON_AddItemToArray(list, t))
		return false;
	bool ok = cJSON_AddStringToObject(t, "key", key) != NULL &&
		  cJSON_AddStringToObject(t, "operator", value ? "Equal" : "Exists") != NULL &&
		  (!value || cJSON_AddStringToObject(t, "value", value) != NULL);
	return ok && (!effect || cJSON_AddStringToObject(t, "effect", effect) != NULL);
}

/* The Job object of @j from the parsed template @tpl (changed in place). False on OOM. */
static bool job_object(cJSON *tpl, const struct kube_job_spec *j)
{
	cJSON *meta = object_at(tpl, "metadata"), *spec = object_at(tpl, "spec");
	cJSON *pod_tpl = spec ? object_at(spec, "template") : NULL;
	cJSON *pod_meta = pod_tpl ? object_at(pod_tpl, "metadata") : NULL;
	cJSON *pod_spec = pod_tpl ? object_at(pod_tpl, "spec") : NULL;
	if (!meta || !pod_meta || !pod_spec ||
	    !put(tpl, "apiVersion", cJSON_CreateString("batch/v1")) ||
	    !put(tpl, "kind", cJSON_CreateString("Job")) ||
	    !put(meta, "name", cJSON_CreateString(j->name)) ||
	    !put(meta, "namespace", cJSON_CreateString(j->ns)))
		return false;
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "generateName");
	cJSON *labels[2] = {object_at(meta, "labels"), object_at(pod_meta, "labels")};
	for (size_t i = 0; i < j->nlabels; i++)
		for (int k = 0; k < 2; k++)
			if (!labels[k] || !put(labels[k], j->label_keys[i],
					       cJSON_CreateString(j->label_values[i])))
				return false;
	if (!put(pod_spec, "nodeName", cJSON_CreateString(j->node)))
		return false;
	/* The operation's identity is the drainer's choice, never the request author's. */
	cJSON_DeleteItemFromObjectCaseSensitive(pod_spec, "serviceAccount");
	if (j->service_account &&
	    !put(pod_spec, "serviceAccountName", cJSON_CreateString(j->service_account)))
		return false;
	/* Nor does it get a token to call the API server with (kube_create_job() refuses a
	 * template that asks for one, or for a Secret). */
	if (!put(pod_spec, "automountServiceAccountToken", cJSON_CreateFalse()))
		return false;
	/* Finished Jobs would pile up, one per node per maintenance: Kubernetes removes this one a
	 * day after it finishes (time to read its logs) unless the template says otherwise. */
	if (!cJSON_GetObjectItemCaseSensitive(spec, "ttlSecondsAfterFinished") &&
	    !put(spec, "ttlSecondsAfterFinished", cJSON_CreateNumber(KUBE_JOB_TTL_S)))
		return false;
	/* A Job's pods must not restart in place (Always, the pod default, is refused). */
	if (!cJSON_GetObjectItemCaseSensitive(pod_spec, "restartPolicy") &&
	    !put(pod_spec, "restartPolicy", cJSON_CreateString("Never")))
		return false;
	cJSON *tol = cJSON_GetObjectItemCaseSensitive(pod_spec, "tolerations");
	if (!cJSON_IsArray(tol) && !put(pod_spec, "tolerations", tol = cJSON_CreateArray()))
		return false;
	if (!add_toleration(tol, "node.kubernetes.io/unschedulable", NULL, "NoSchedule"))
		return false;
	for (size_t i = 0; i < j->ntolerate; i++)
		if (!add_toleration(tol, j->tolerate[i].key, j->tolerate[i].value,
				    j->tolerate[i].effect))
			return false;
	return true;
}

void kube_create_job(struct kube_client *c, const char *template_json,
		     const struct kube_job_spec *j, struct kube_write_result *ret)
{
	*ret = (struct kube_write_result){.outcome = KUBE_WRITE_FAILED};
	cJSON *tpl = NULL;
	struct ng_err perr = {0};
	/* Parsed with malloc (no arena): the tree is changed and printed. */
	if (ng_json_parse(template_json, strlen(template_json), NULL, &tpl, &perr) != NG_OK ||
	    !cJSON_IsObject(tpl) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(tpl, "spec"))) {
		cJSON_Delete(tpl);
		(void)ng_err_set(&ret->err, NG_EPARSE, 0, "jobTemplate: not an object with a spec");
		return;
	}
	/* The object webhook refuses these; a request admitted without it must not get them. */
	char field[112];
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tpl, "spec"),
					     "template"),
	    "spec");
	const char *why =
	    cJSON_IsObject(ps) ? kube_pod_spec_forbidden(ps, field, sizeof(field)) : NULL;
	if (why) {
		cJSON_Delete(tpl);
		(void)ng_err_set(&ret->err, NG_EPARSE, 0, "jobTemplate: spec.template.spec.%s: %s",
				 field, why);
		return;
	}
	char *text = job_object(tpl, j) ? cJSON_PrintUnformatted(tpl) : NULL;
	cJSON_Delete(tpl);
	if (!text) {
		(void)ng_err_set(&ret->err, NG_ENOMEM, 0, "jobTemplate: out of memory");
		return;
	}
	const struct ng_buf b = {text, strlen(text), strlen(text), strlen(text)};
	const struct kube_ref jobs = {KUBE_KIND_JOB, j->ns, NULL};
	send_write(c, "POST", &jobs, NULL, "application/json", NG_OK, &b, ret);
	cJSON_free(text);
}

/* ---- JSON patch ---- */

struct kube_json_patch {
	struct ng_buf b;
	struct ng_jw w;
	char *text; /* the closed document, for kube_json_patch_body() */
};

struct kube_json_patch *kube_json_patch_create(const char *rv)
{
	struct kube_json_patch *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	ng_buf_init(&p->b, BODY_CAP_BYTES);
	ng_jw_init(&p->w, &p->b);
	ng_jw_arr(&p->w);
	if (rv) {
		ng_jw_obj(&p->w);
		ng_jw_kstr(&p->w, "op", "replace");
		ng_jw_kstr(&p->w, "path", "/metadata/resourceVersion");
		ng_jw_kstr(&p->w, "value", rv);
		ng_jw_obj_end(&p->w);
	}
	return p;
}

void kube_json_patch_destroy(struct kube_json_patch *p)
{
	if (!p)
		return;
	ng_buf_finish(&p->b);
	free(p->text);
	free(p);
}

/* "/metadata/labels/" + @key as a JSON pointer: '~' is "~0", '/' is "~1" (RFC 6901). */
static void pointer(struct ng_jw *w, const char *base, const char *key)
{
	struct ng_buf b;
	ng_buf_init(&b, 2048);
	ng_status st = ng_buf_puts(&b, base);
	for (const char *k = key; st == NG_OK && *k; k++)
		st = *k == '~'   ? ng_buf_puts(&b, "~0")
		     : *k == '/' ? ng_buf_puts(&b, "~1")
				 : ng_buf_append(&b, k, 1);
	if (st == NG_OK)
		ng_jw_strn(w, b.data, b.len);
	else if (w->st == NG_OK)
		w->st = st;
	ng_buf_finish(&b);
}

static void map_entry(struct kube_json_patch *p, const char *map, const char *key,
		      const char *value, bool map_exists)
{
	struct ng_jw *w = &p->w;
	char base[64];
	ng_fmt(base, sizeof(base), "/metadata/%s", map);
	ng_jw_obj(w);
	if (!value) {
		ng_jw_kstr(w, "op", "remove");
		ng_jw_key(w, "path");
		ng_fmt(base, sizeof(base), "/metadata/%s/", map);
		pointer(w, base, key);
	} else if (!map_exists) {
		ng_jw_kstr(w, "op", "add");
		ng_jw_kstr(w, "path", base);
		ng_jw_key(w, "value");
		ng_jw_obj(w);
		ng_jw_kstr(w, key, value);
		ng_jw_obj_end(w);
	} else {
		ng_jw_kstr(w, "op", "add"); /* add replaces an existing member (RFC 6902 §4.1) */
		ng_jw_key(w, "path");
		ng_fmt(base, sizeof(base), "/metadata/%s/", map);
		pointer(w, base, key);
		ng_jw_kstr(w, "value", value);
	}
	ng_jw_obj_end(w);
}

void kube_json_patch_label(struct kube_json_patch *p, const char *key, const char *value,
			   bool map_exists)
{
	map_entry(p, "labels", key, value, map_exists);
}

void kube_json_patch_annotation(struct kube_json_patch *p, const char *key, const char *value,
				bool map_exists)
{
	map_entry(p, "annotations", key, value, map_exists);
}

void kube_json_patch_string(struct kube_json_patch *p, const char *path, const char *value)
{
	ng_jw_obj(&p->w);
	ng_jw_kstr(&p->w, "op", "add");
	ng_jw_kstr(&p->w, "path", path);
	ng_jw_kstr(&p->w, "value", value);
	ng_jw_obj_end(&p->w);
}

void kube_json_patch_i64(struct kube_json_patch *p, const char *path, int64_t value)
{
	ng_jw_obj(&p->w);
	ng_jw_kstr(&p->w, "op", "add");
	ng_jw_kstr(&p->w, "path", path);
	ng_jw_ki64(&p->w, "value", value);
	ng_jw_obj_end(&p->w);
}

void kube_json_patch_unschedulable(struct kube_json_patch *p, bool on)
{
	ng_jw_obj(&p->w);
	ng_jw_kstr(&p->w, "op", "add");
	ng_jw_kstr(&p->w, "path", "/spec/unschedulable");
	ng_jw_kbool(&p->w, "value", on);
	ng_jw_obj_end(&p->w);
}

void kube_json_patch_taints(struct kube_json_patch *p, const struct kube_taint_spec *taints,
			    size_t n)
{
	struct ng_jw *w = &p->w;
	ng_jw_obj(w);
	ng_jw_kstr(w, "op", "add");
	ng_jw_kstr(w, "path", "/spec/taints");
	ng_jw_key(w, "value");
	ng_jw_arr(w);
	for (size_t i = 0; i < n; i++) {
		ng_jw_obj(w);
		ng_jw_kstr(w, "key", taints[i].key);
		if (taints[i].value)
			ng_jw_kstr(w, "value", taints[i].value);
		ng_jw_kstr(w, "effect", taints[i].effect);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
	ng_jw_obj_end(w);
}

const char *kube_json_patch_body(const struct kube_json_patch *cp, size_t *ret_len)
{
	struct kube_json_patch *p = (struct kube_json_patch *)(uintptr_t)cp;
	if (p->w.st != NG_OK || p->w.depth != 1)
		return NULL;
	free(p->text);
	p->text = malloc(p->b.len + 2);
	if (!p->text)
		return NULL;
	memcpy(p->text, p->b.data, p->b.len);
	p->text[p->b.len] = ']';
	p->text[p->b.len + 1] = '\0';
	if (ret_len)
		*ret_len = p->b.len + 1;
	return p->text;
}

void kube_apply_json_patch(struct kube_client *c, const struct kube_ref *ref,
			   const struct kube_json_patch *p, struct kube_write_result *ret)
{
	size_t len = 0;
	const char *text = kube_json_patch_body(p, &len);
	struct ng_buf b = {(char *)(uintptr_t)text, len, len, len};
	send_write(c, "PATCH", ref, NULL, "application/json-patch+json", text ? NG_OK : NG_ENOMEM,
		   &b, ret);
}

void kube_write_log(const char *component, const char *what, const struct kube_ref *ref,
		    const struct kube_write_result *r)
{
	struct ng_logline l;
	if (r->outcome == KUBE_WRITE_OK || !ng_log_begin(&l, NG_LOG_WARN, component, what))
		return;
	ng_log_str(&l, "kind", kube_kind_name(ref->kind));
	if (ref->ns)
		ng_log_str(&l, "ns", ref->ns);
	ng_log_str(&l, "name", ref->name ? ref->name : "");
	ng_log_str(&l, "outcome", kube_write_outcome_str(r->outcome));
	ng_log_i64(&l, "http", r->http);
	ng_log_str(&l, "err", r->err.msg);
	ng_log_end(&l);
}

ng_status kube_object_with_status_list(const char *json, size_t len, const char *field,
				       const char *const *values, size_t n, char **ret,
				       size_t *ret_len, struct ng_err *reterr)
{
	cJSON *root = NULL;
	char *text = NULL;
	ng_status st = ng_json_parse(json, len, NULL, &root, reterr);
	if (st == NG_OK && !cJSON_IsObject(root))
		st = ng_err_set(reterr, NG_EPARSE, 0, "not an object");
	if (st != NG_OK)
		goto out;
	cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
	if (!cJSON_IsObject(status)) {
		cJSON_DeleteItemFromObjectCaseSensitive(root, "status");
		status = cJSON_AddObjectToObject(root, "status");
	}
	cJSON *list = cJSON_CreateArray();
	for (size_t i = 0; list && i < n; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(values[i]));
	if (status)
		cJSON_DeleteItemFromObjectCaseSensitive(status, field);
	if (status && list && cJSON_AddItemToObject(status, field, list))
		text = cJSON_PrintUnformatted(root);
	else
		cJSON_Delete(list);
	if (!text) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}
	*ret_len = strlen(text);
	*ret = text;
out:
	cJSON_Delete(root);
	return st;
}
