#include "server/admission.h"

#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "policy/disruption.h"
#include "policy/validate.h"

#include <stdio.h>
#include <string.h>

ng_status srv_admit_eviction(const char *body, size_t len, struct ng_arena *arena,
			     const struct kube_snapshot *snap,
			     const struct pol_eviction_config *cfg, struct ng_buf *out,
			     struct srv_admission *ret, struct ng_err *reterr)
{
	struct srv_admission a;
	memset(&a, 0, sizeof(a));
	ng_status st = srv_review_decode(body, len, arena, &a.review, reterr);
	if (st != NG_OK)
		return st;
	const struct srv_review *r = &a.review;
	struct srv_review_response resp = {.allowed = true};
	char warning[200];
	a.eviction = strcmp(r->resource, "pods") == 0 && strcmp(r->sub_resource, "eviction") == 0 &&
		     strcmp(r->operation, "CREATE") == 0 && strcmp(r->resource_group, "") == 0;
	if (!a.eviction) {
		(void)snprintf(warning, sizeof(warning),
			       "nodegate: /validate/eviction received %.20s %.40s/%.40s, not a pod "
			       "eviction; allowed",
			       r->operation, r->resource, r->sub_resource);
		resp.warning = warning;
		a.decision.allowed = true;
		a.decision.reason = POL_R_UNPROTECTED;
	} else {
		/* request.name/namespace are the pod's; some clients leave them to the Eviction's
		 * metadata, so fall back to it. */
		const char *ns = r->ns, *name = r->name;
		const cJSON *meta = ng_json_get(r->object, "metadata");
		if (!*ns && ng_json_str(meta, "namespace"))
			ns = ng_json_str(meta, "namespace");
		if (!*name && ng_json_str(meta, "name"))
			name = ng_json_str(meta, "name");
		struct pol_eviction_request pr = {
		    .ns = ns,
		    .ns_len = strlen(ns),
		    .name = name,
		    .name_len = strlen(name),
		    .username = r->username,
		};
		a.review.ns = ns;
		a.review.name = name;
		pol_decide_eviction(snap, cfg, &pr, &a.decision);
		resp.allowed = a.decision.allowed;
		resp.code = a.decision.code;
		resp.message = a.decision.message;
		resp.retry_after_seconds = a.decision.retry_after_seconds;
		resp.warning = a.decision.warning;
	}
	st = srv_review_encode(r->uid, &resp, out);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the response: %s", ng_status_str(st));
	*ret = a;
	return NG_OK;
}

static void printable_ascii(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/* The JSONPatch recording who created the request: the annotation nodegate.io/created-by, set
 * to the authenticated user whatever the request says. */
static ng_status created_by_patch(const struct srv_review *r, struct ng_buf *b)
{
	const cJSON *ann = ng_json_get(ng_json_get(r->object, "metadata"), "annotations");
	ng_status st;
	if (cJSON_IsObject(ann)) {
		st = ng_buf_puts(b, "[{\"op\":\"add\",\"path\":\"/metadata/annotations/"
				    "nodegate.io~1created-by\",\"value\":");
		st = st ? st : ng_buf_json_str(b, r->username, strlen(r->username));
	} else {
		st =
		    ng_buf_puts(b, "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{"
				   "\"nodegate.io/created-by\":");
		st = st ? st : ng_buf_json_str(b, r->username, strlen(r->username));
		st = st ? st : ng_buf_puts(b, "}");
	}
	return st ? st : ng_buf_puts(b, "}]");
}

ng_status srv_admit_object(enum srv_object_webhook wh, const char *body, size_t len,
			   struct ng_arena *arena, const struct kube_snapshot *snap,
			   const struct srv_object_config *cfg, struct ng_buf *out,
			   struct srv_object_admission *ret, struct ng_err *reterr)
{
	struct srv_object_admission a;
	memset(&a, 0, sizeof(a));
	ng_status st = srv_review_decode(body, len, arena, &a.review, reterr);
	if (st != NG_OK)
		return st;
	const struct srv_review *r = &a.review;
	a.allowed = true;
	bool create = strcmp(r->operation, "CREATE") == 0;
	bool update = strcmp(r->operation, "UPDATE") == 0;
	bool ours = r->object && strcmp(r->kind_group, "nodegate.io") == 0;
	bool nd = ours && strcmp(r->kind_kind, "NodeDisruption") == 0;
	const char *sub = r->sub_resource;
	char why[400] = "";
	enum pol_check c = POL_CHECK_OK;
	struct ng_buf patch;
	ng_buf_init(&patch, 64 * 1024);
	if (wh == SRV_OBJ_BUDGET && ours && !nd && (create || update) && !*sub)
		c = pol_check_budget(snap, r->object, why, sizeof(why));
	else if (wh == SRV_OBJ_ND && nd && (create || update) && !*sub)
		c = pol_check_nd(snap, r->object, update ? r->old_object : NULL, why, sizeof(why),
				 a.warning, sizeof(a.warning));
	else if (wh == SRV_OBJ_ND_STATUS && nd && update && strcmp(sub, "status") == 0)
		c = pol_check_nd_status(r->object, r->old_object, r->username, cfg->deciders,
					cfg->ndeciders, why, sizeof(why));
	else if (wh == SRV_OBJ_ND_MUTATE && nd && create && !*sub && *r->username) {
		if ((st = created_by_patch(r, &patch)) != NG_OK) {
			ng_buf_finish(&patch);
			return ng_err_set(reterr, st, 0, "encoding the patch: %s",
					  ng_status_str(st));
		}
		a.patched = true;
	}
	if (c != POL_CHECK_OK) {
		a.allowed = false;
		a.code = c == POL_CHECK_FORBIDDEN ? 403 : 422;
		(void)snprintf(a.message, sizeof(a.message), "%s %s%s%s: %s", r->kind_kind, r->ns,
			       *r->ns ? "/" : "", r->name, why);
	}
	/* Names, URLs and selectors are echoed: messages stay printable ASCII. */
	printable_ascii(a.message);
	printable_ascii(a.warning);
	struct srv_review_response resp = {.allowed = a.allowed,
					   .code = a.code,
					   .message = a.message,
					   .warning = a.warning,
					   .patch = a.patched ? patch.data : NULL};
	st = srv_review_encode(r->uid, &resp, out);
	ng_buf_finish(&patch);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the response: %s", ng_status_str(st));
	*ret = a;
	return NG_OK;
}

/* The request to evaluate as a NodeDisruption object of its own (malloc'ed): the given
 * metadata (a name made up when there is none) and spec. NULL on OOM. */
static cJSON *as_nd(const cJSON *in)
{
	const cJSON *meta = ng_json_get(in, "metadata");
	cJSON *o = cJSON_CreateObject();
	cJSON *m = cJSON_IsObject(meta) ? cJSON_Duplicate(meta, true) : cJSON_CreateObject();
	cJSON *spec = ng_json_get(in, "spec") ? cJSON_Duplicate(ng_json_get(in, "spec"), true)
					      : cJSON_CreateObject();
	if (!o || !m || !spec ||
	    !cJSON_AddStringToObject(o, "apiVersion", "nodegate.io/v1alpha1") ||
	    !cJSON_AddStringToObject(o, "kind", "NodeDisruption")) {
		cJSON_Delete(o);
		cJSON_Delete(m);
		cJSON_Delete(spec);
		return NULL;
	}
	cJSON_AddItemToObject(o, "metadata", m);
	cJSON_AddItemToObject(o, "spec", spec);
	if (!ng_json_str(m, "name")) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, "name");
		if (!cJSON_AddStringToObject(m, "name", "evaluate")) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

ng_status srv_evaluate(const char *body, size_t len, struct ng_arena *arena,
		       const struct kube_snapshot *snap, int64_t now_ms, struct ng_buf *out,
		       int *ret_code, bool *ret_granted, struct ng_err *reterr)
{
	*ret_granted = false;
	cJSON *in = NULL;
	ng_status st = ng_json_parse(body, len, arena, &in, reterr);
	if (st != NG_OK)
		return st;
	if (!cJSON_IsObject(in))
		return ng_err_set(reterr, NG_EPARSE, 0, "expected a NodeDisruption object");
	cJSON *obj = as_nd(in);
	if (!obj)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	struct pol_gate_decision d;
	char why[400] = "";
	enum pol_check c = pol_evaluate_object(snap, obj, now_ms, arena, &d, why, sizeof(why));
	cJSON_Delete(obj);
	if (c != POL_CHECK_OK) {
		printable_ascii(why);
		*ret_code = c == POL_CHECK_FORBIDDEN ? 403 : 422;
		st = ng_buf_puts(out, "{\"message\":");
		st = st ? st : ng_buf_json_str(out, why, strlen(why));
		return st ? st : ng_buf_puts(out, "}\n");
	}
	*ret_code = 200;
	*ret_granted = d.outcome == POL_GATE_GRANT;
	const char *state = pol_gate_outcome_str(d.outcome);
	const char **names = pol_node_names_sorted(snap, &d, arena);
	if (!names)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	st = ng_buf_puts(out, "{\"state\":");
	st = st ? st : ng_buf_json_str(out, state, strlen(state));
	st = st ? st : ng_buf_puts(out, ",\"reason\":");
	st = st ? st : ng_buf_json_str(out, d.reason, strlen(d.reason));
	st = st ? st : ng_buf_puts(out, ",\"disruptedNodes\":[");
	for (size_t i = 0; st == NG_OK && i < d.nnodes; i++) {
		st = i ? ng_buf_puts(out, ",") : NG_OK;
		st = st ? st : ng_buf_json_str(out, names[i], strlen(names[i]));
	}
	st = st ? st : ng_buf_puts(out, "],\"disruptedDisruptionBudgets\":");
	st = st ? st : pol_verdicts_json(snap, d.verdicts, d.nverdicts, out);
	/* A grant still waits on these (not called by a dry run). */
	st = st ? st : ng_buf_puts(out, ",\"healthHooks\":[");
	size_t nadb;
	const struct kube_adb *adbs = kube_snapshot_adbs(snap, &nadb);
	const struct ng_intern *pool = kube_snapshot_pool(snap);
	bool first = true;
	for (size_t i = 0; st == NG_OK && d.outcome == POL_GATE_GRANT && i < d.nverdicts; i++) {
		const struct pol_budget_verdict *v = &d.verdicts[i];
		if (v->kind != KUBE_RES_ADBS || v->index >= nadb || !adbs[v->index].hook.present)
			continue;
		const char *ns = ng_intern_str(pool, v->ns, NULL);
		const char *name = ng_intern_str(pool, v->name, NULL);
		st = ng_buf_puts(out, first ? "{\"namespace\":" : ",{\"namespace\":");
		st = st ? st : ng_buf_json_str(out, ns, strlen(ns));
		st = st ? st : ng_buf_puts(out, ",\"name\":");
		st = st ? st : ng_buf_json_str(out, name, strlen(name));
		st = st ? st : ng_buf_puts(out, "}");
		first = false;
	}
	st = st ? st : ng_buf_puts(out, "]}\n");
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the answer: %s", ng_status_str(st));
	return NG_OK;
}
