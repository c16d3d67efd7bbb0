/* NodeDisruption: spec, drain, operation, and the status read back. */
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

static uint8_t nd_state(const char *s)
{
	if (!s)
		return KUBE_ND_UNKNOWN;
	if (strcmp(s, "Granted") == 0)
		return KUBE_ND_GRANTED;
	if (strcmp(s, "Rejected") == 0)
		return KUBE_ND_REJECTED;
	if (strcmp(s, "Pending") == 0)
		return KUBE_ND_PENDING;
	return KUBE_ND_UNKNOWN;
}

/* The annotation the mutating webhook writes on create: who created the request. */
#define CREATED_BY "nodegate.io/created-by"

/* Optional boolean @key of @obj: @def when absent or null. */
static bool opt_bool(const cJSON *obj, const char *key, const char *field, bool def,
		     struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v))
		return def;
	if (!cJSON_IsBool(v)) {
		kd_problem(verr, "%s: expected true or false", field);
		return def;
	}
	return cJSON_IsTrue(v);
}

/* spec.drain.taint into @dr. */
static ng_status nd_taint(struct kd_ctx *c, const cJSON *t, struct kube_nd_drain *dr,
			  struct ng_err *verr)
{
	static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
	if (!t || cJSON_IsNull(t))
		return NG_OK;
	const char *key = ng_json_str(t, "key"), *effect = ng_json_str(t, "effect");
	const cJSON *val = ng_json_get(t, "value");
	bool known = false;
	for (size_t i = 0; effect && i < sizeof(effects) / sizeof(effects[0]); i++)
		known = known || strcmp(effect, effects[i]) == 0;
	/* The drainer puts this taint on Nodes: what the API server would refuse there (a key or
	 * value not of label syntax, another effect) is refused here, before the drain starts. */
	const char *why;
	if (!cJSON_IsObject(t))
		kd_problem(verr, "spec.drain.taint: expected an object");
	else if (!key || !*key)
		kd_problem(verr, "spec.drain.taint.key: required");
	else if ((why = kube_label_key_problem(key, strlen(key))))
		kd_problem(verr, "spec.drain.taint.key: invalid '%.63s%s': %s", key,
			   strlen(key) > 63 ? "..." : "", why);
	else if (!known)
		kd_problem(verr, "spec.drain.taint.effect: must be one of NoSchedule, "
				 "PreferNoSchedule, NoExecute");
	else if (val && !cJSON_IsNull(val) && !cJSON_IsString(val))
		kd_problem(verr, "spec.drain.taint.value: expected a string");
	else if (cJSON_IsString(val) &&
		 (why = kube_label_value_problem(val->valuestring, strlen(val->valuestring))))
		kd_problem(verr, "spec.drain.taint.value: invalid '%.63s%s': %s", val->valuestring,
			   strlen(val->valuestring) > 63 ? "..." : "", why);
	if (verr->status != NG_OK || !key || !effect) /* the checks above refused those */
		return NG_OK;
	dr->has_taint = true;
	ng_status st = kd_intern(c, key, &dr->taint.key);
	st = st ? st : kd_opt_str(c, t, "value", "spec.drain.taint.value", &dr->taint.val);
	return st ? st : kd_intern(c, effect, &dr->taint.effect);
}

/* spec.drain.podEvictionFilters into @dr. */
static ng_status nd_filters(struct kd_ctx *c, const cJSON *f, struct kube_nd_drain *dr,
			    struct ng_err *verr)
{
	if (!f || cJSON_IsNull(f))
		return NG_OK;
	size_t n = cJSON_IsArray(f) ? (size_t)cJSON_GetArraySize(f) : 0;
	if (!cJSON_IsArray(f) || n > KUBE_MAX_ND_LIST) {
		kd_problem(verr, "spec.drain.podEvictionFilters: expected an array of at most %d",
			   KUBE_MAX_ND_LIST);
		return NG_OK;
	}
	struct kube_eviction_filter *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "spec.drain.podEvictionFilters", "out of memory");
	size_t i = 0;
	for (const cJSON *e = f->child; e; e = e->next, i++) {
		char field[96], what[64];
		ng_fmt(field, sizeof(field), "spec.drain.podEvictionFilters[%zu]", i);
		if (!cJSON_IsObject(e)) {
			kd_problem(verr, "%s: expected an object", field);
			return NG_OK;
		}
		ng_fmt(field, sizeof(field),
		       "spec.drain.podEvictionFilters[%zu].byResourceNameRegex", i);
		ng_fmt(what, sizeof(what), "a regular expression of at most %d bytes",
		       KUBE_MAX_REGEX_BYTES);
		ng_status st =
		    kd_opt_text(c, e, "byResourceNameRegex", field, what, KUBE_MAX_REGEX_BYTES,
				&out[i].by_resource_name_regex, verr);
		if (st != NG_OK || verr->status != NG_OK)
			return st;
	}
	dr->filters = out;
	dr->nfilters = (uint16_t)n;
	return NG_OK;
}

/* spec.drain.evictionStrategy. */
static uint8_t nd_strategy(const cJSON *drain, struct ng_err *verr)
{
	static const char *const names[] = {"Evict", "Delete", "ForceDelete", "None"};
	const cJSON *v = ng_json_get(drain, "evictionStrategy");
	if (!v || cJSON_IsNull(v))
		return KUBE_DRAIN_EVICT;
	for (uint8_t i = 0; cJSON_IsString(v) && i < 4; i++)
		if (strcmp(v->valuestring, names[i]) == 0)
			return i;
	kd_problem(verr, "spec.drain.evictionStrategy: must be one of Evict, Delete, ForceDelete, "
			 "None");
	return KUBE_DRAIN_EVICT;
}

/* spec.drain.onDeadline; Retry when absent. */
static uint8_t nd_on_deadline(const cJSON *j, struct ng_err *verr)
{
	static const char *const names[] = {"Retry", "Release", "Quarantine"};
	const cJSON *v = ng_json_get(j, "onDeadline");
	if (!v || cJSON_IsNull(v))
		return KUBE_ON_DEADLINE_RETRY;
	for (uint8_t i = 0; cJSON_IsString(v) && i < 3; i++)
		if (strcmp(v->valuestring, names[i]) == 0)
			return i;
	kd_problem(verr, "spec.drain.onDeadline: must be one of Retry, Release, Quarantine");
	return KUBE_ON_DEADLINE_RETRY;
}

/* spec.drain.rules[@i] @e into @r. */
static ng_status drain_rule(struct kd_ctx *c, const cJSON *e, size_t i, struct kube_drain_rule *r,
			    struct ng_err *verr)
{
	static const char *const behaviors[] = {"Drain", "Skip", "WaitCompleted"};
	char field[64];
	if (!cJSON_IsObject(e)) {
		kd_problem(verr, "spec.drain.rules[%zu]: expected an object", i);
		return NG_OK;
	}
	const char *b = ng_json_str(e, "behavior");
	uint8_t k = 0;
	while (b && k < 3 && strcmp(b, behaviors[k]) != 0)
		k++;
	if (!b || k == 3) {
		kd_problem(verr,
			   "spec.drain.rules[%zu].behavior: must be Drain, Skip or WaitCompleted",
			   i);
		return NG_OK;
	}
	r->behavior = k;
	const cJSON *o = ng_json_get(e, "order");
	int64_t order = 0;
	if (o && !cJSON_IsNull(o)) {
		/* Cluster API refuses an order where nothing is evicted: it would mean nothing. */
		if (k != KUBE_DRAIN_BEHAVIOR_DRAIN) {
			kd_problem(verr,
				   "spec.drain.rules[%zu].order: only allowed with behavior Drain",
				   i);
			return NG_OK;
		}
		if (!ng_json_int64(o, &order) || order < INT32_MIN || order > INT32_MAX) {
			kd_problem(verr,
				   "spec.drain.rules[%zu].order: expected an integer in "
				   "-2147483648..2147483647",
				   i);
			return NG_OK;
		}
	}
	r->order = (int32_t)order;
	static const char *const keys[2] = {"podSelector", "namespaceSelector"};
	struct kube_selector *sels[2] = {&r->pod_selector, &r->ns_selector};
	for (int s = 0; s < 2; s++) {
		struct ng_err err = {0};
		ng_fmt(field, sizeof(field), "spec.drain.rules[%zu].%s", i, keys[s]);
		ng_status st = kube_decode_selector(c->pool, c->arena, ng_json_get(e, keys[s]),
						    field, sels[s], &err);
		if (st == NG_ENOMEM)
			return kd_fail(c, st, field, "out of memory");
		if (st != NG_OK) {
			kd_problem(verr, "%s", err.msg);
			return NG_OK;
		}
	}
	return NG_OK;
}

ng_status kd_drain_rules(struct kd_ctx *c, const cJSON *j, const struct kube_drain_rule **ret,
			 uint16_t *ret_n, struct ng_err *verr)
{
	*ret = NULL;
	*ret_n = 0;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	size_t n = cJSON_IsArray(j) ? (size_t)cJSON_GetArraySize(j) : 0;
	if (!cJSON_IsArray(j) || n > KUBE_MAX_DRAIN_RULES) {
		kd_problem(verr, "spec.drain.rules: expected an array of at most %d rules",
			   KUBE_MAX_DRAIN_RULES);
		return NG_OK;
	}
	struct kube_drain_rule *out = n ? kd_alloc(c, n * sizeof(*out)) : NULL;
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "spec.drain.rules", "out of memory");
	size_t i = 0;
	for (const cJSON *e = j->child; e && i < n; e = e->next, i++) {
		memset(&out[i], 0, sizeof(out[i]));
		ng_status st = drain_rule(c, e, i, &out[i], verr);
		if (st != NG_OK)
			return st;
		if (verr->status != NG_OK)
			return NG_OK; /* the rules are not used: the spec is refused */
	}
	*ret = out;
	*ret_n = (uint16_t)n;
	return NG_OK;
}

/* spec.drain into @dr, defaults when absent. The label selector strings are checked in the
 * order admission reports them: podSelector, waitForPodCompletion, the filters. */
ng_status kd_nd_drain(struct kd_ctx *c, const cJSON *j, struct kube_nd_drain *dr,
		      struct ng_err *verr)
{
	dr->cordon = true;
	dr->wait_for_volume_detach = true;
	dr->timeout_s = -1;
	dr->deadline_s = -1;
	dr->wait_timeout_s = -1;
	dr->strategy = KUBE_DRAIN_EVICT;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j)) {
		kd_problem(verr, "spec.drain: expected an object");
		return NG_OK;
	}
	dr->present = true;
	ng_status st = kd_opt_text(c, j, "podSelector", "spec.drain.podSelector",
				   "a label selector string", SIZE_MAX, &dr->pod_selector, verr);
	const cJSON *w = ng_json_get(j, "waitForPodCompletion");
	if (st == NG_OK && w && !cJSON_IsNull(w) && !cJSON_IsObject(w)) {
		kd_problem(verr, "spec.drain.waitForPodCompletion: expected an object");
	} else if (st == NG_OK && cJSON_IsObject(w)) {
		dr->has_wait = true;
		st = kd_opt_text(c, w, "podSelector", "spec.drain.waitForPodCompletion.podSelector",
				 "a label selector string", SIZE_MAX, &dr->wait_pod_selector, verr);
		dr->wait_timeout_s = kd_opt_seconds(
		    w, "timeoutSeconds", "spec.drain.waitForPodCompletion.timeoutSeconds", verr);
	}
	st = st ? st : nd_filters(c, ng_json_get(j, "podEvictionFilters"), dr, verr);
	st = st ? st : nd_taint(c, ng_json_get(j, "taint"), dr, verr);
	st = st ? st : kd_drain_rules(c, ng_json_get(j, "rules"), &dr->rules, &dr->nrules, verr);
	dr->strategy = nd_strategy(j, verr);
	dr->cordon = opt_bool(j, "cordon", "spec.drain.cordon", true, verr);
	dr->force = opt_bool(j, "force", "spec.drain.force", false, verr);
	dr->delete_empty_dir =
	    opt_bool(j, "deleteEmptyDir", "spec.drain.deleteEmptyDir", false, verr);
	dr->skip_waiting_for_eviction =
	    opt_bool(j, "skipWaitingForEviction", "spec.drain.skipWaitingForEviction", false, verr);
	dr->wait_for_volume_detach =
	    opt_bool(j, "waitForVolumeDetach", "spec.drain.waitForVolumeDetach", true, verr);
	dr->timeout_s = kd_opt_seconds(j, "timeoutSeconds", "spec.drain.timeoutSeconds", verr);
	dr->deadline_s = kd_opt_seconds(j, "deadlineSeconds", "spec.drain.deadlineSeconds", verr);
	dr->on_deadline = nd_on_deadline(j, verr);
	return st;
}

/* A container list @key of pod spec @ps: each container's securityContext that makes the pod
 * privileged, written to @field (relative to the pod spec). */
static bool privileged_container(const cJSON *ps, const char *key, char *field, size_t cap)
{
	const cJSON *cs = ng_json_get(ps, key);
	size_t i = 0;
	for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, i++) {
		const cJSON *sc = ng_json_get(c, "securityContext");
		const cJSON *add = ng_json_get(ng_json_get(sc, "capabilities"), "add");
		const char *what = cJSON_IsTrue(ng_json_get(sc, "privileged")) ? "privileged"
				   : cJSON_IsTrue(ng_json_get(sc, "allowPrivilegeEscalation"))
				       ? "allowPrivilegeEscalation"
				   : cJSON_IsArray(add) && cJSON_GetArraySize(add) > 0
				       ? "capabilities.add"
				       : NULL;
		if (what) {
			ng_fmt(field, cap, "%s[%zu].securityContext.%s", key, i, what);
			return true;
		}
	}
	return false;
}

bool kube_pod_spec_privileged(const cJSON *ps, char *field, size_t cap)
{
	static const char *const host[] = {"hostPID", "hostNetwork", "hostIPC"};
	for (size_t k = 0; k < sizeof(host) / sizeof(host[0]); k++) {
		if (cJSON_IsTrue(ng_json_get(ps, host[k]))) {
			ng_fmt(field, cap, "%s", host[k]);
			return true;
		}
	}
	const cJSON *vs = ng_json_get(ps, "volumes");
	size_t i = 0;
	for (const cJSON *v = cJSON_IsArray(vs) ? vs->child : NULL; v; v = v->next, i++) {
		const cJSON *hp = ng_json_get(v, "hostPath");
		if (hp && !cJSON_IsNull(hp)) {
			ng_fmt(field, cap, "volumes[%zu].hostPath", i);
			return true;
		}
	}
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		if (privileged_container(ps, lists[k], field, cap))
			return true;
	return false;
}

/* A container list @key of pod spec @ps: an environment variable taken from a Secret. */
static bool secret_env(const cJSON *ps, const char *key, char *field, size_t cap)
{
	const cJSON *cs = ng_json_get(ps, key);
	size_t i = 0;
	for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, i++) {
		const cJSON *env = ng_json_get(c, "env"), *from = ng_json_get(c, "envFrom");
		size_t k = 0;
		for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next, k++) {
			const cJSON *ref = ng_json_get(ng_json_get(e, "valueFrom"), "secretKeyRef");
			if (ref && !cJSON_IsNull(ref)) {
				ng_fmt(field, cap, "%s[%zu].env[%zu].valueFrom.secretKeyRef", key,
				       i, k);
				return true;
			}
		}
		k = 0;
		for (const cJSON *e = cJSON_IsArray(from) ? from->child : NULL; e;
		     e = e->next, k++) {
			const cJSON *ref = ng_json_get(e, "secretRef");
			if (ref && !cJSON_IsNull(ref)) {
				ng_fmt(field, cap, "%s[%zu].envFrom[%zu].secretRef", key, i, k);
				return true;
			}
		}
	}
	return false;
}

const char *kube_pod_spec_forbidden(const cJSON *ps, char *field, size_t cap)
{
	static const char secrets[] = "not allowed: an operation may not read Secrets";
	static const char tokens[] = "not allowed: an operation gets no service account token";
	if (cJSON_IsTrue(ng_json_get(ps, "automountServiceAccountToken"))) {
		ng_fmt(field, cap, "automountServiceAccountToken");
		return tokens;
	}
	const cJSON *vs = ng_json_get(ps, "volumes");
	size_t i = 0;
	for (const cJSON *v = cJSON_IsArray(vs) ? vs->child : NULL; v; v = v->next, i++) {
		const cJSON *sec = ng_json_get(v, "secret");
		if (sec && !cJSON_IsNull(sec)) {
			ng_fmt(field, cap, "volumes[%zu].secret", i);
			return secrets;
		}
		const cJSON *srcs = ng_json_get(ng_json_get(v, "projected"), "sources");
		size_t k = 0;
		for (const cJSON *p = cJSON_IsArray(srcs) ? srcs->child : NULL; p;
		     p = p->next, k++) {
			const cJSON *ps_sec = ng_json_get(p, "secret");
			const cJSON *tok = ng_json_get(p, "serviceAccountToken");
			if (ps_sec && !cJSON_IsNull(ps_sec)) {
				ng_fmt(field, cap, "volumes[%zu].projected.sources[%zu].secret", i,
				       k);
				return secrets;
			}
			if (tok && !cJSON_IsNull(tok)) {
				ng_fmt(field, cap,
				       "volumes[%zu].projected.sources[%zu].serviceAccountToken", i,
				       k);
				return tokens;
			}
		}
	}
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		if (secret_env(ps, lists[k], field, cap))
			return secrets;
	return NULL;
}

/* What a Job needs of jobTemplate @jt (an object) to be created at all: spec.template.spec with
 * at least one container, each named (a DNS-1123 label) and with an image. The rest of the
 * template is the API server's to check when the drainer creates the Job; these are the
 * mistakes that would otherwise surface only then, after the node was drained. Also what an
 * operation may never hold (kube_pod_spec_forbidden()), and whether it is privileged (into
 * @op->privileged, from @c's arena). */
static ng_status nd_job_template(struct kd_ctx *c, const cJSON *jt, struct kube_nd_operation *op,
				 struct ng_err *verr)
{
	static const char *const path[] = {"spec", "template", "spec"};
	char field[160] = "spec.operation.jobTemplate";
	const cJSON *o = jt;
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
		o = ng_json_get(o, path[i]);
		size_t at = strlen(field);
		ng_fmt(field + at, sizeof(field) - at, ".%s", path[i]);
		if (!o || cJSON_IsNull(o))
			break;
		if (!cJSON_IsObject(o)) {
			kd_problem(verr, "%s: expected an object", field);
			return NG_OK;
		}
	}
	/* The Job runs as the drainer's operation ServiceAccount: a template naming another
	 * (nodegate's own among them) would hand its rights to whoever may create a request. */
	for (int k = 0; o && !cJSON_IsNull(o) && k < 2; k++) {
		static const char *const sa[2] = {"serviceAccountName", "serviceAccount"};
		const cJSON *v = ng_json_get(o, sa[k]);
		if (v && !cJSON_IsNull(v))
			kd_problem(
			    verr,
			    "spec.operation.jobTemplate.spec.template.spec.%s: not allowed: the "
			    "Job runs as the drainer's operation ServiceAccount "
			    "(nodegate drain --operation-service-account); grant that one what "
			    "the operation needs",
			    sa[k]);
	}
	/* Secrets and tokens: what an operation could read beyond the node itself. */
	char sub[112];
	const char *why = cJSON_IsObject(o) ? kube_pod_spec_forbidden(o, sub, sizeof(sub)) : NULL;
	if (why)
		kd_problem(verr, "spec.operation.jobTemplate.spec.template.spec.%s: %s", sub, why);
	if (cJSON_IsObject(o) && kube_pod_spec_privileged(o, sub, sizeof(sub))) {
		ng_fmt(field, sizeof(field), "spec.operation.jobTemplate.spec.template.spec.%s",
		       sub);
		if (!(op->privileged = ng_arena_strndup(c->arena, field, strlen(field))))
			return kd_fail(c, NG_ENOMEM, "spec.operation.jobTemplate", "out of memory");
	}
	const cJSON *cs = o && !cJSON_IsNull(o) ? ng_json_get(o, "containers") : NULL;
	if (cs && !cJSON_IsNull(cs) && !cJSON_IsArray(cs)) {
		kd_problem(verr,
			   "spec.operation.jobTemplate.spec.template.spec.containers: expected an "
			   "array");
		return NG_OK;
	}
	if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) == 0) {
		kd_problem(verr,
			   "spec.operation.jobTemplate.spec.template.spec.containers: required: "
			   "at least one container, with a name and an image");
		return NG_OK;
	}
	size_t i = 0;
	for (const cJSON *ct = cs->child; ct; ct = ct->next, i++) {
		const char *name = ng_json_str(ct, "name"), *image = ng_json_str(ct, "image");
		ng_fmt(field, sizeof(field),
		       "spec.operation.jobTemplate.spec.template.spec."
		       "containers[%zu]",
		       i);
		if (!cJSON_IsObject(ct))
			kd_problem(verr, "%s: expected an object", field);
		else if (!name || !*name)
			kd_problem(verr, "%s.name: required", field);
		else if (!ng_dns_label(name))
			kd_problem(
			    verr,
			    "%s.name: '%.63s' is not a DNS-1123 label (at most 63 lower case "
			    "alphanumerics or '-', starting and ending alphanumeric)",
			    field, name);
		else if (!image || !*image)
			kd_problem(verr, "%s.image: required", field);
		if (verr->status != NG_OK)
			return NG_OK;
	}
	return NG_OK;
}

/* spec.operation into @op. */
ng_status kd_nd_operation(struct kd_ctx *c, const cJSON *j, struct kube_nd_operation *op,
			  struct ng_err *verr)
{
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j)) {
		kd_problem(verr, "spec.operation: expected an object");
		return NG_OK;
	}
	op->present = true;
	op->wait_for_reboot =
	    opt_bool(j, "waitForReboot", "spec.operation.waitForReboot", false, verr);
	const cJSON *jt = ng_json_get(j, "jobTemplate");
	if (!jt || cJSON_IsNull(jt))
		return NG_OK;
	if (!cJSON_IsObject(jt)) {
		kd_problem(verr, "spec.operation.jobTemplate: expected an object");
		return NG_OK;
	}
	ng_status st = nd_job_template(c, jt, op, verr);
	if (st != NG_OK)
		return st;
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	st = kd_canonical_json(c, jt, &b);
	if (st == NG_OK && !(op->job_template = ng_arena_strndup(c->arena, b.data, b.len)))
		st = NG_ENOMEM;
	ng_buf_finish(&b);
	if (st != NG_OK)
		return kd_fail(c, st, "spec.operation.jobTemplate", ng_status_str(st));
	return NG_OK;
}

/* Optional spec.@key, seconds in 0..KUBE_MAX_LIFECYCLE_S; -1 when absent or malformed (then a
 * problem naming the field). */
static int64_t lifecycle_seconds(const cJSON *spec, const char *key, struct ng_err *verr)
{
	const cJSON *v = ng_json_get(spec, key);
	int64_t secs;
	if (!v || cJSON_IsNull(v))
		return -1;
	if (!ng_json_int64(v, &secs) || secs < 0 || secs > KUBE_MAX_LIFECYCLE_S) {
		kd_problem(verr, "spec.%s: expected an integer of seconds in 0..%d", key,
			   KUBE_MAX_LIFECYCLE_S);
		return -1;
	}
	return secs;
}

/* spec.additionalRequestors, spec.startDate, spec.duration and the lifecycle's seconds into @x. */
static ng_status nd_more(struct kd_ctx *c, const cJSON *spec, struct kube_nd_detail *x,
			 struct ng_err *verr)
{
	const cJSON *more = ng_json_get(spec, "additionalRequestors");
	bool ok = !more || cJSON_IsNull(more) ||
		  (cJSON_IsArray(more) && cJSON_GetArraySize(more) <= KUBE_MAX_ND_LIST);
	for (const cJSON *e = cJSON_IsArray(more) ? more->child : NULL; ok && e; e = e->next)
		ok = cJSON_IsString(e);
	ng_status st = NG_OK;
	if (!ok)
		kd_problem(verr,
			   "spec.additionalRequestors: expected an array of at most %d strings",
			   KUBE_MAX_ND_LIST);
	else
		st = kd_decode_str_array(c, more, "spec.additionalRequestors", KUBE_MAX_ND_LIST,
					 &x->more_requestors, &x->nmore_requestors);
	const cJSON *start = ng_json_get(spec, "startDate");
	if (start && !cJSON_IsNull(start) &&
	    (!cJSON_IsString(start) ||
	     ng_parse_rfc3339_ms(start->valuestring, strlen(start->valuestring), &x->start_ms) !=
		 NG_OK))
		kd_problem(verr, "spec.startDate: expected an RFC 3339 time");
	const cJSON *dur = ng_json_get(spec, "duration");
	x->duration_ms = -1;
	if (dur && !cJSON_IsNull(dur) &&
	    (!cJSON_IsString(dur) || !kd_parse_duration_ms(dur->valuestring, &x->duration_ms)))
		kd_problem(verr, "spec.duration: expected a duration such as 90m or 1h30m");
	x->active_deadline_s = lifecycle_seconds(spec, "activeDeadlineSeconds", verr);
	x->ttl_after_completion_s = lifecycle_seconds(spec, "ttlSecondsAfterCompletion", verr);
	return st;
}

/* status.grantedAt, status.expiresAt and status.disruptedDisruptionBudgets into @x (the gate
 * writes them; what is not of the expected type reads as absent). */
static ng_status nd_verdicts(struct kd_ctx *c, const cJSON *status, struct kube_nd_detail *x)
{
	const char *granted = ng_json_str(status, "grantedAt");
	if (granted && ng_parse_rfc3339_ms(granted, strlen(granted), &x->granted_ms) != NG_OK)
		x->granted_ms = -1;
	x->expires_ms = kd_opt_time_ms(status, "expiresAt");
	ng_status st =
	    kd_decode_str_array(c, ng_json_get(status, "deletedNodes"), "status.deletedNodes",
				KUBE_MAX_ND_LIST, &x->deleted_nodes, &x->ndeleted_nodes);
	if (st != NG_OK)
		return st;
	const cJSON *dbs = ng_json_get(status, "disruptedDisruptionBudgets");
	size_t n = cJSON_IsArray(dbs) ? (size_t)cJSON_GetArraySize(dbs) : 0;
	if (n > KUBE_MAX_ND_LIST)
		return kd_fail(c, NG_ELIMIT, "status.disruptedDisruptionBudgets",
			       "too many entries");
	struct kube_nd_verdict *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "status.disruptedDisruptionBudgets", "out of memory");
	size_t i = 0;
	for (const cJSON *e = n ? dbs->child : NULL; e; e = e->next, i++) {
		const cJSON *ref = ng_json_get(e, "reference");
		const char *kind = ng_json_str(ref, "kind"), *ns = ng_json_str(ref, "namespace");
		const char *name = ng_json_str(ref, "name"), *reason = ng_json_str(e, "reason");
		struct kube_nd_verdict *v = &out[i];
		v->kind = v->ns = v->name = NG_INTERN_NONE;
		v->ok = cJSON_IsTrue(ng_json_get(e, "ok"));
		v->preparing = cJSON_IsTrue(ng_json_get(e, "preparing"));
		st = kind ? kd_intern(c, kind, &v->kind) : NG_OK;
		st = st == NG_OK && ns ? kd_intern(c, ns, &v->ns) : st;
		st = st == NG_OK && name ? kd_intern(c, name, &v->name) : st;
		if (st != NG_OK)
			return st;
		v->reason =
		    ng_arena_strndup(c->arena, reason ? reason : "", reason ? strlen(reason) : 0);
		if (!v->reason)
			return kd_fail(c, NG_ENOMEM, "status.disruptedDisruptionBudgets",
				       "out of memory");
	}
	x->verdicts = out;
	x->nverdicts = (uint16_t)n;
	return NG_OK;
}

/* status.conditions and status.drain: what the drainer wrote, and the requestor's
 * RequestorFailed. Entries of the wrong shape are skipped: status is nodegate's to rewrite. */
static ng_status nd_progress(struct kd_ctx *c, const cJSON *status, struct kube_nd_detail *x)
{
	const cJSON *conds = ng_json_get(status, "conditions");
	size_t n = cJSON_IsArray(conds) ? (size_t)cJSON_GetArraySize(conds) : 0;
	if (n > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, "status.conditions", "too many entries");
	struct kube_condition *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	size_t i = 0;
	for (const cJSON *e = n ? conds->child : NULL; e; e = e->next) {
		const char *type = ng_json_str(e, "type"), *st = ng_json_str(e, "status");
		if (!type)
			continue;
		struct kube_condition *k = &out[i++];
		k->status = !st                        ? KUBE_COND_UNKNOWN
			    : strcmp(st, "True") == 0  ? KUBE_COND_TRUE
			    : strcmp(st, "False") == 0 ? KUBE_COND_FALSE
						       : KUBE_COND_UNKNOWN;
		k->type = kd_dup_or_empty(c, type);
		k->reason = kd_dup_or_empty(c, ng_json_str(e, "reason"));
		k->message = kd_dup_or_empty(c, ng_json_str(e, "message"));
		k->since_ms = kd_opt_time_ms(e, "lastTransitionTime");
		if (!k->type || !k->reason || !k->message)
			return kd_fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	}
	x->conditions = out;
	x->nconditions = (uint16_t)i;
	const cJSON *d = ng_json_get(status, "drain");
	static const char *const keys[5] = {"totalPods", "evictedPods", "remainingPods", "progress",
					    "attempts"};
	int64_t *vals[5] = {&x->drain_status.total, &x->drain_status.evicted,
			    &x->drain_status.remaining, &x->drain_status.progress,
			    &x->drain_status.attempts};
	for (int k = 0; k < 5; k++)
		if (!ng_json_int64(ng_json_get(d, keys[k]), vals[k]) || *vals[k] < 0)
			*vals[k] = 0;
	x->drain_status.backoff_until_ms = kd_opt_time_ms(d, "backoffUntil");
	x->drain_status.attempt_started_ms = kd_opt_time_ms(d, "attemptStartedAt");
	return NG_OK;
}

/* What marks a request autoRequest made, and what records its use (struct kube_nd_detail). */
static void nd_auto(const cJSON *o, struct kube_nd_detail *x)
{
	const cJSON *meta = ng_json_get(o, "metadata");
	const cJSON *ann = ng_json_get(meta, "annotations");
	const char *label = ng_json_str(ng_json_get(meta, "labels"), KUBE_AUTO_REQUEST_LABEL);
	x->auto_request = label && strcmp(label, "true") == 0;
	x->has_annotations = cJSON_IsObject(ann);
	const char *cordoned = ng_json_str(ann, KUBE_NODE_CORDONED_ANNOTATION);
	x->node_cordoned = cordoned && strcmp(cordoned, "true") == 0;
	int64_t used = kd_opt_time_ms(ann, KUBE_LAST_USED_ANNOTATION);
	x->last_used_ms = used > 0 ? used : 0;
}

/* The fields only admission and the drainer read (struct kube_nd_detail). */
static ng_status nd_detail(struct kd_ctx *c, const cJSON *o, struct kube_nd *d)
{
	struct kube_nd_detail *x = kd_alloc(c, sizeof(*x));
	if (!x)
		return kd_fail(c, NG_ENOMEM, "spec", "out of memory");
	memset(x, 0, sizeof(*x));
	x->spec_error = x->created_by = NG_INTERN_NONE;
	x->active_deadline_s = x->ttl_after_completion_s = -1;
	d->detail = x;
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *sel = ng_json_get(spec, "nodeSelector");
	const cJSON *names = ng_json_get(spec, "nodeNames");
	x->has_node_selector = sel && !cJSON_IsNull(sel);
	x->has_node_names = names && !cJSON_IsNull(names);
	struct ng_err verr = {0};
	ng_status st = kd_nd_drain(c, ng_json_get(spec, "drain"), &x->drain, &verr);
	st = st ? st : kd_nd_operation(c, ng_json_get(spec, "operation"), &x->operation, &verr);
	st = st ? st : nd_more(c, spec, x, &verr);
	st = st ? st : nd_verdicts(c, ng_json_get(o, "status"), x);
	st = st ? st : nd_progress(c, ng_json_get(o, "status"), x);
	const char *by =
	    ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "annotations"), CREATED_BY);
	if (st == NG_OK && by)
		st = kd_intern(c, by, &x->created_by);
	nd_auto(o, x);
	const char *rem =
	    ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "labels"), KUBE_REMEDIATION_LABEL);
	x->remediation = NG_INTERN_NONE;
	if (st == NG_OK && rem)
		st = kd_intern(c, rem, &x->remediation);
	const char *capi =
	    ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "labels"), KUBE_CAPI_REQUEST_LABEL);
	const char *machine = ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "annotations"),
					  KUBE_CAPI_MACHINE_ANNOTATION);
	x->capi_machine = NG_INTERN_NONE;
	if (st == NG_OK && capi && strcmp(capi, "true") == 0 && machine)
		st = kd_intern(c, machine, &x->capi_machine);
	if (st == NG_OK && verr.status != NG_OK)
		st = kd_intern(c, verr.msg, &x->spec_error);
	return st;
}

/* spec.nodeSelector: an invalid one selects nothing; the validating webhook rejects it, and
 * the gate reports it. Only OOM fails. */
static ng_status nd_selector(struct kd_ctx *c, const cJSON *spec, struct kube_nd *d)
{
	struct ng_err serr = {0};
	ng_status st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					    "spec.nodeSelector", &d->node_selector, &serr);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, "spec.nodeSelector", "out of memory");
	if (st == NG_OK)
		return NG_OK;
	memset(&d->node_selector, 0, sizeof(d->node_selector));
	d->selector_invalid = true;
	return kd_intern(c, serr.msg, &d->selector_error);
}

/* What the gate reads of spec: type, requestor, priority, nodeNames (and the decision's nodes),
 * the selector, retry. */
static ng_status nd_spec(struct kd_ctx *c, const cJSON *spec, const cJSON *status,
			 struct kube_nd *d)
{
	ng_status st;
	if ((st = kd_opt_str(c, spec, "type", "spec.type", &d->type)) != NG_OK ||
	    (st = kd_opt_str(c, spec, "requestor", "spec.requestor", &d->requestor)) != NG_OK)
		return st;
	int64_t prio = 0;
	const cJSON *pj = ng_json_get(spec, "priority");
	if (pj && !ng_json_int64(pj, &prio))
		return kd_fail(c, NG_EPARSE, "spec.priority", "expected an integer");
	if (prio < INT32_MIN || prio > INT32_MAX)
		return kd_fail(c, NG_ELIMIT, "spec.priority", "out of int32 range");
	d->priority = (int32_t)prio;
	if ((st = kd_decode_str_array(c, ng_json_get(spec, "nodeNames"), "spec.nodeNames",
				      KUBE_MAX_ND_LIST, &d->node_names, &d->nnode_names)) !=
		NG_OK ||
	    (st = kd_decode_str_array(c, ng_json_get(status, "disruptedNodes"),
				      "status.disruptedNodes", KUBE_MAX_ND_LIST, &d->disrupted,
				      &d->ndisrupted)) != NG_OK ||
	    (st = nd_selector(c, spec, d)) != NG_OK)
		return st;
	const cJSON *retry = ng_json_get(spec, "retry");
	d->retry = cJSON_IsTrue(ng_json_get(retry, "enabled"));
	const char *deadline = ng_json_str(retry, "deadline");
	if (deadline && ng_parse_rfc3339_ms(deadline, strlen(deadline), &d->deadline_ms) != NG_OK)
		return kd_fail(c, NG_EPARSE, "spec.retry.deadline", "expected an RFC 3339 time");
	const cJSON *more = ng_json_get(spec, "additionalRequestors");
	d->additional_requestors = cJSON_IsArray(more) && cJSON_GetArraySize(more) > 0;
	return NG_OK;
}

/* What the gate reads of metadata and status besides the decision's nodes. */
static ng_status nd_meta(struct kd_ctx *c, const cJSON *meta, const cJSON *status,
			 struct kube_nd *d)
{
	const char *created = ng_json_str(meta, "creationTimestamp");
	if (created && ng_parse_rfc3339_ms(created, strlen(created), &d->created_ms) != NG_OK)
		d->created_ms = 0;
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	d->deleting = del && !cJSON_IsNull(del);
	int64_t count = 0;
	if (ng_json_int64(ng_json_get(status, "retryCount"), &count) && count >= 0 &&
	    count <= UINT32_MAX)
		d->retry_count = (uint32_t)count;
	const char *next = ng_json_str(status, "nextRetryDate");
	if (next && ng_parse_rfc3339_ms(next, strlen(next), &d->next_retry_ms) != NG_OK)
		d->next_retry_ms = 0;
	ng_status st =
	    kd_decode_str_array(c, ng_json_get(meta, "finalizers"), "metadata.finalizers",
				NG_MAX_LABELS, &d->finalizers, &d->nfinalizers);
	if (st != NG_OK)
		return st;
	const char *rv = ng_json_str(meta, "resourceVersion");
	d->rv = ng_arena_strndup(c->arena, rv ? rv : "", rv ? strlen(rv) : 0);
	const char *uid = ng_json_str(meta, "uid");
	d->uid = ng_arena_strndup(c->arena, uid ? uid : "", uid ? strlen(uid) : 0);
	/* The reason of the first failing budget, so the gate writes status only on change. */
	const char *reason = "";
	const cJSON *dbs = ng_json_get(status, "disruptedDisruptionBudgets");
	for (const cJSON *e = cJSON_IsArray(dbs) ? dbs->child : NULL; e; e = e->next) {
		if (cJSON_IsFalse(ng_json_get(e, "ok")) && ng_json_str(e, "reason")) {
			reason = ng_json_str(e, "reason");
			break;
		}
	}
	d->status_reason = ng_arena_strndup(c->arena, reason, strlen(reason));
	if (!d->rv || !d->uid || !d->status_reason)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	return NG_OK;
}

ng_status kd_decode_nd(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_nd *d = kd_record(c, KUBE_RES_NDS);
	d->name = name;
	d->read_mono_us = ng_now_mono_us();
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *status = ng_json_get(o, "status");
	d->state = nd_state(ng_json_str(status, "state"));
	ng_status st = nd_spec(c, spec, status, d);
	st = st ? st : nd_meta(c, ng_json_get(o, "metadata"), status, d);
	return st ? st : nd_detail(c, o, d);
}

const struct kube_nd *kube_one_nd(const struct kube_one *one)
{
	return kd_one_record(one, KUBE_RES_NDS);
}
