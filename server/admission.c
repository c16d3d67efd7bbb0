#include "server/admission.h"

#include "common/buf.h"
#include "common/json.h"
#include "policy/hook.h"

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

ng_status srv_admit_budget(const char *body, size_t len, struct ng_arena *arena,
			   const struct kube_snapshot *snap, struct ng_buf *out,
			   struct srv_budget_admission *ret, struct ng_err *reterr)
{
	struct srv_budget_admission a;
	memset(&a, 0, sizeof(a));
	ng_status st = srv_review_decode(body, len, arena, &a.review, reterr);
	if (st != NG_OK)
		return st;
	const struct srv_review *r = &a.review;
	a.allowed = true;
	bool write = strcmp(r->operation, "CREATE") == 0 || strcmp(r->operation, "UPDATE") == 0;
	if (write && r->object && strcmp(r->kind_group, "nodegate.io") == 0) {
		char *json = cJSON_PrintUnformatted(r->object);
		if (!json)
			return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		char why[400];
		enum pol_budget_check c =
		    pol_check_budget(snap, json, strlen(json), why, sizeof(why));
		cJSON_free(json);
		if (c != POL_BUDGET_OK) {
			a.allowed = false;
			a.code = c == POL_BUDGET_FORBIDDEN ? 403 : 422;
			(void)snprintf(a.message, sizeof(a.message), "%s %s%s%s: %s", r->kind_kind,
				       r->ns, *r->ns ? "/" : "", r->name, why);
			/* Names and URLs are echoed: the message stays printable ASCII. */
			for (char *p = a.message; *p; p++)
				if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
					*p = '?';
		}
	}
	struct srv_review_response resp = {
	    .allowed = a.allowed, .code = a.code, .message = a.message};
	st = srv_review_encode(r->uid, &resp, out);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the response: %s", ng_status_str(st));
	*ret = a;
	return NG_OK;
}
