#include "server/admission.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/parse.h"
#include "kube/auth.h"
#include "kube/records.h"
#include "kube/one.h"
#include "kube/snapshot.h"
#include "policy/disruption.h"
#include "policy/hook.h"
#include "policy/drain.h"
#include "policy/lifecycle.h"
#include "policy/plan.h"
#include "policy/validate.h"

#include <stdarg.h>
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
		const char *ns = *r->ns ? r->ns : r->object_ns;
		const char *name = *r->name ? r->name : r->object_name;
		struct pol_eviction_request pr = {
		    .ns = ns,
		    .ns_len = strlen(ns),
		    .name = name,
		    .name_len = strlen(name),
		    .username = r->username,
		    .groups = r->user.groups,
		    .ngroups = r->user.ngroups,
		    .now_wall_ms = ng_now_wall_ms(),
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
	srv_review_finish(&a.review);
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

/* As printable_ascii(), line by line: a warning holds one warning a line. */
static void printable_lines(char *s)
{
	for (char *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		*nl = '\0';
		printable_ascii(s);
		*nl = '\n';
	}
	printable_ascii(s);
}

/* The answer {"message":@msg} and a newline, of a request that cannot be answered otherwise. */
static ng_status message_answer(const char *msg, struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "message", msg);
	ng_jw_obj_end(&w);
	ng_status st = ng_jw_finish(&w);
	return st ? st : ng_buf_puts(out, "\n");
}

/* The JSONPatch recording who created the request: the annotation nodegate.io/created-by, set
 * to the authenticated user whatever the request says. */
static ng_status created_by_patch(const struct srv_review *r, struct ng_buf *b)
{
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_arr(&w);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "op", "add");
	if (r->object_has_annotations) {
		ng_jw_kstr(&w, "path", "/metadata/annotations/nodegate.io~1created-by");
		ng_jw_kstr(&w, "value", r->username);
	} else {
		ng_jw_kstr(&w, "path", "/metadata/annotations");
		ng_jw_key(&w, "value");
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "nodegate.io/created-by", r->username);
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	ng_jw_arr_end(&w);
	return ng_jw_finish(&w);
}

/* The 200 answer of a dry run for decision @d; a grant's deadline at @expires_ms (0: none). */
static ng_status evaluation_answer(const struct kube_snapshot *snap,
				   const struct pol_gate_decision *d, int64_t expires_ms,
				   struct ng_arena *arena, struct ng_buf *out, int *ret_code,
				   bool *ret_granted, struct ng_err *reterr)
{
	ng_status st;
	*ret_code = 200;
	*ret_granted = d->outcome == POL_GATE_GRANT;
	const char *state = pol_gate_outcome_str(d->outcome);
	const char **names = pol_node_names_sorted(snap, d, arena);
	if (!names)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "state", state);
	ng_jw_kstr(&w, "reason", d->reason);
	/* No budget change yet would let it through: waiting or retrying is no use. */
	if (d->unsatisfiable)
		ng_jw_kbool(&w, "unsatisfiable", true);
	if (d->wake_wall_ms) { /* waiting for a maintenance window: when it opens */
		ng_jw_key(&w, "windowOpensAt");
		ng_jw_time_ms(&w, d->wake_wall_ms);
	}
	if (expires_ms) { /* granted now, its deadline would pass then */
		ng_jw_key(&w, "expiresAt");
		ng_jw_time_ms(&w, expires_ms);
	}
	ng_jw_key(&w, "disruptedNodes");
	ng_jw_arr(&w);
	for (size_t i = 0; i < d->nnodes; i++)
		ng_jw_str(&w, names[i]);
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "disruptedDisruptionBudgets");
	struct ng_buf *vb = ng_jw_value_buf(&w);
	if (vb)
		ng_jw_fail(&w, pol_verdicts_json(snap, d->verdicts, d->nverdicts, NULL, vb));
	/* A grant still waits on these (not called by a dry run). */
	ng_jw_key(&w, "healthHooks");
	ng_jw_arr(&w);
	size_t nadb;
	const struct kube_adb *adbs = kube_snapshot_adbs(snap, &nadb);
	const struct ng_intern *pool = kube_snapshot_pool(snap);
	for (size_t i = 0; d->outcome == POL_GATE_GRANT && i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->kind != KUBE_RES_ADBS || v->index >= nadb || !adbs[v->index].hook.present)
			continue;
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "namespace", ng_intern_str(pool, v->ns, NULL));
		ng_jw_kstr(&w, "name", ng_intern_str(pool, v->name, NULL));
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	/* Nor the multistep hooks: a grant would still wait on /prepare and /ready of these. */
	ng_jw_key(&w, "multistepHooks");
	ng_jw_arr(&w);
	for (size_t i = 0; d->outcome == POL_GATE_GRANT && i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (!pol_hook2_budget(snap, v))
			continue;
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "kind",
			   v->kind == KUBE_RES_NDBS ? "NodeDisruptionBudget"
						    : "ApplicationDisruptionBudget");
		if (v->ns != NG_INTERN_NONE)
			ng_jw_kstr(&w, "namespace", ng_intern_str(pool, v->ns, NULL));
		ng_jw_kstr(&w, "name", ng_intern_str(pool, v->name, NULL));
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	/* Nor is Prometheus asked: a grant would still wait on NodeGateConfig alertGate. */
	const struct kube_ngc *ngc = kube_snapshot_config(snap);
	if (d->outcome == POL_GATE_GRANT && ngc && !ngc->invalid &&
	    ngc->alert.mode != KUBE_ALERT_NONE)
		ng_jw_kstr(&w, "alertGate", "not evaluated in a dry run");
	ng_jw_obj_end(&w);
	st = ng_jw_finish(&w);
	st = st ? st : ng_buf_puts(out, "\n");
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the answer: %s", ng_status_str(st));
	return NG_OK;
}

/* The object (@old: the stored one) of @r decoded, or why not: NG_ENOTFOUND for a kind nodegate
 * does not read. NG_OK with NULL when the review has none. */
static ng_status object_of(const struct srv_review *r, bool old, const struct kube_one **ret,
			   struct ng_err *why)
{
	const struct ng_err *err = old ? &r->old_object_err : &r->object_err;
	*ret = old ? r->old_object : r->object;
	if (*ret || !(old ? r->has_old_object : r->has_object))
		return NG_OK;
	return ng_err_set(why, err->status, 0, "%s%s", old ? "oldObject: " : "", err->msg);
}

static bool decides(const struct srv_object_config *cfg, const char *user)
{
	for (size_t i = 0; i < cfg->ndeciders; i++)
		if (strcmp(user, cfg->deciders[i]) == 0)
			return true;
	return false;
}

/* Denies @a with @code and the message "Kind name: ...". */
static void refuse(struct srv_object_admission *a, const struct srv_review *r, int32_t code,
		   const char *fmt, ...) NG_PRINTF(4, 5);
static void refuse(struct srv_object_admission *a, const struct srv_review *r, int32_t code,
		   const char *fmt, ...)
{
	char m[sizeof(a->message)];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	a->allowed = false;
	a->code = code;
	ng_fmt(a->message, sizeof(a->message), "%s %s%s%s: %s", r->kind_kind, r->ns,
	       *r->ns ? "/" : "", r->name, m);
}

/* Refuses a privileged operation (its first privileged field @field) unless the review's user
 * may create nodedisruptions/privileged-operation, asked of the API server. */
static void check_privileged(struct srv_object_admission *a, const struct srv_review *r,
			     const struct srv_object_config *cfg, const char *field)
{
	static const struct kube_auth_resource what = {SRV_PRIVILEGED_VERB,
						       SRV_PRIVILEGED_GROUP,
						       SRV_PRIVILEGED_RESOURCE,
						       SRV_PRIVILEGED_SUBRESOURCE,
						       NULL,
						       NULL};
	static const char grant[] = "a privileged operation is allowed only to users RBAC allows "
				    "verb create on nodedisruptions/privileged-operation in API "
				    "group nodegate.io";
	struct ng_err e = {0};
	if (!cfg->authz) {
		refuse(a, r, 403,
		       "%s: %s, which could not be checked: nodegate runs without an API server",
		       field, grant);
		return;
	}
	if (!*r->username || r->user_over) {
		refuse(a, r, 403, "%s: %s, which could not be checked: the request's user is %s",
		       field, grant,
		       *r->username ? "in too many groups to ask about" : "not named");
		return;
	}
	enum kube_auth_result res = kube_auth_can(cfg->authz, &r->user, &what, &e);
	if (res == KUBE_AUTH_ALLOWED)
		return;
	if (res == KUBE_AUTH_FORBIDDEN)
		refuse(a, r, 403, "%s: %s: %s", field, grant, e.msg);
	else
		refuse(a, r, 403, "%s: %s, which could not be checked: %s", field, grant, e.msg);
}

/* The author groups annotation's value for the review's user: a compact JSON array, in the
 * arena. NULL when the user's groups are over the bounds (KUBE_MAX_AUTHOR_GROUPS,
 * KUBE_MAX_AUTHOR_GROUPS_BYTES, or not all known), or on ENOMEM (*@ret_st). */
static const char *groups_json(const struct srv_review *r, struct ng_arena *arena,
			       ng_status *ret_st)
{
	*ret_st = NG_OK;
	if (r->user_over || r->user.ngroups > KUBE_MAX_AUTHOR_GROUPS)
		return NULL;
	struct ng_buf b;
	ng_buf_init(&b, KUBE_MAX_AUTHOR_GROUPS_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_arr(&w);
	for (size_t i = 0; i < r->user.ngroups; i++)
		ng_jw_str(&w, r->user.groups[i]);
	ng_jw_arr_end(&w);
	ng_status st = ng_jw_finish(&w);
	const char *out = st == NG_OK ? ng_arena_strndup(arena, b.data, b.len) : NULL;
	if (st == NG_OK && !out)
		st = NG_ENOMEM;
	ng_buf_finish(&b);
	*ret_st = st == NG_ELIMIT ? NG_OK : st;
	return out;
}

/* The author annotations the review's object must carry: the user's at create and at a change
 * of spec (not through the status subresource), else the stored ones (NULL: absent). False,
 * with the object refused, when the user cannot be recorded; NG_ENOMEM in *@ret_st. */
static bool wanted_author(struct srv_object_admission *a, const struct srv_review *r,
			  struct ng_arena *arena, const char **ret_author, const char **ret_groups,
			  ng_status *ret_st)
{
	*ret_st = NG_OK;
	bool create = strcmp(r->operation, "CREATE") == 0;
	if (!create && (*r->sub_resource || !r->spec_changed)) {
		*ret_author = r->old_author;
		*ret_groups = r->old_author_groups;
		return true;
	}
	if (!*r->username) {
		refuse(a, r, 403, "metadata.annotations[%s]: the request names no user to record",
		       KUBE_AUTHOR_ANNOTATION);
		return false;
	}
	*ret_author = r->username;
	*ret_groups = groups_json(r, arena, ret_st);
	if (*ret_st != NG_OK)
		return false;
	if (!*ret_groups) {
		refuse(a, r, 403,
		       "metadata.annotations[%s]: user %.100s is in more groups than nodegate "
		       "records for an author (%d, %d bytes as JSON); the author's rights are "
		       "checked with them, so none is left out",
		       KUBE_AUTHOR_GROUPS_ANNOTATION, r->username, KUBE_MAX_AUTHOR_GROUPS,
		       KUBE_MAX_AUTHOR_GROUPS_BYTES);
		return false;
	}
	return true;
}

static bool same(const char *x, const char *y)
{
	return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

/* /validate/authored: the author annotations are what /mutate/author writes; a template is
 * refused as a request with its spec would be, and its privileged operation as its user may. */
static ng_status judge_authored(struct srv_object_admission *a, const struct srv_review *r,
				struct ng_arena *arena, const struct srv_object_config *cfg)
{
	const char *author = NULL, *groups = NULL;
	ng_status st;
	if (!wanted_author(a, r, arena, &author, &groups, &st))
		return st;
	if (!same(author, r->author) || !same(groups, r->author_groups)) {
		refuse(a, r, 403,
		       "metadata.annotations: %s and %s record who wrote the spec; only "
		       "nodegate's author webhook (/mutate/author) sets them",
		       KUBE_AUTHOR_ANNOTATION, KUBE_AUTHOR_GROUPS_ANNOTATION);
		return NG_OK;
	}
	/* A template's spec is judged when it is written: metadata changes of one stored before
	 * these checks existed stay possible. */
	if (strcmp(r->kind_kind, "NodeDisruptionTemplate") != 0 || *r->sub_resource ||
	    !r->spec_changed)
		return NG_OK;
	if (!r->object) {
		refuse(a, r, r->object_err.status == NG_ENOMEM ? 500 : 422, "%s",
		       r->object_err.msg);
		return NG_OK;
	}
	const struct kube_ndt *t = kube_one_ndt(r->object);
	if (t && t->error != NG_INTERN_NONE) {
		refuse(a, r, 422, "%s", ng_intern_str(kube_one_pool(r->object), t->error, NULL));
		return NG_OK;
	}
	if (t && t->privileged)
		check_privileged(a, r, cfg, t->privileged);
	return NG_OK;
}

/* /mutate/author: the JSONPatch that sets the author annotations to what they must be. */
static ng_status author_patch(struct srv_object_admission *a, const struct srv_review *r,
			      struct ng_arena *arena, struct ng_buf *b)
{
	const char *want[2] = {NULL, NULL};
	ng_status st;
	if (!wanted_author(a, r, arena, &want[0], &want[1], &st))
		return st;
	const char *have[2] = {r->author, r->author_groups};
	static const char *const keys[2] = {KUBE_AUTHOR_ANNOTATION, KUBE_AUTHOR_GROUPS_ANNOTATION};
	static const char *const paths[2] = {
	    "/metadata/annotations/nodegate.io~1created-by",
	    "/metadata/annotations/nodegate.io~1created-by-groups"};
	bool any = false;
	st = NG_OK;
	if (!r->object_has_annotations) {
		if (!want[0] && !want[1])
			return NG_OK; /* nothing stored, nothing there */
		struct ng_jw w;
		ng_jw_init(&w, b);
		ng_jw_arr(&w);
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "op", "add");
		ng_jw_kstr(&w, "path", "/metadata/annotations");
		ng_jw_key(&w, "value");
		ng_jw_obj(&w);
		for (int k = 0; k < 2; k++)
			if (want[k])
				ng_jw_kstr(&w, keys[k], want[k]);
		ng_jw_obj_end(&w);
		ng_jw_obj_end(&w);
		ng_jw_arr_end(&w);
		st = ng_jw_finish(&w);
		a->patched = st == NG_OK;
		return st;
	}
	struct ng_jw w;
	ng_jw_init(&w, b);
	for (int k = 0; k < 2; k++) {
		if (same(want[k], have[k]))
			continue;
		if (!any)
			ng_jw_arr(&w);
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "op", want[k] ? "add" : "remove");
		ng_jw_kstr(&w, "path", paths[k]);
		if (want[k])
			ng_jw_kstr(&w, "value", want[k]);
		ng_jw_obj_end(&w);
		any = true;
	}
	if (any)
		ng_jw_arr_end(&w);
	st = ng_jw_finish(&w);
	a->patched = st == NG_OK && any;
	return st;
}

/* The object webhooks' checks: NG_OK, or why the request is refused. */
static ng_status judge(enum srv_object_webhook wh, const struct srv_review *r,
		       const struct kube_snapshot *snap, const struct srv_object_config *cfg,
		       char *warning, size_t wcap, struct ng_err *why)
{
	const struct kube_one *obj = NULL, *old = NULL;
	bool update = strcmp(r->operation, "UPDATE") == 0;
	ng_status st = object_of(r, false, &obj, why);
	if (wh == SRV_OBJ_BUDGET) {
		/* Kinds the cache does not keep are not this webhook's to judge. */
		if (st == NG_ENOTFOUND)
			return NG_OK;
		st = st ? st : pol_check_budget(snap, obj, why);
		if (st == NG_OK)
			pol_warn_budget(snap, obj, warning, wcap);
		return st;
	}
	if (st == NG_ENOTFOUND)
		return ng_err_set(why, NG_EPARSE, 0, "kind: expected a NodeDisruption");
	if (st == NG_OK && update)
		st = object_of(r, true, &old, why);
	if (wh == SRV_OBJ_ND)
		return st ? st : pol_check_nd(snap, obj, old, warning, wcap, why);
	/* The status webhook: nodegate's own writes pass whatever the object holds. */
	if (st != NG_OK && !decides(cfg, r->username))
		return st;
	return pol_check_nd_status(obj, old, r->username, cfg->deciders, cfg->ndeciders, why);
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
	bool ours = r->has_object && strcmp(r->kind_group, "nodegate.io") == 0;
	bool nd = ours && strcmp(r->kind_kind, "NodeDisruption") == 0;
	const char *sub = r->sub_resource;
	struct ng_err why = {0};
	ng_status verdict = NG_OK;
	struct ng_buf patch;
	ng_buf_init(&patch, 64 * 1024);
	bool authored = ours && (strcmp(r->kind_kind, "NodeDisruptionTemplate") == 0 ||
				 strcmp(r->kind_kind, "NodeRemediation") == 0);
	if ((wh == SRV_OBJ_BUDGET && ours && !nd && !authored && (create || update) && !*sub) ||
	    (wh == SRV_OBJ_ND && nd && (create || update) && !*sub) ||
	    (wh == SRV_OBJ_ND_STATUS && nd && update && strcmp(sub, "status") == 0))
		verdict = judge(wh, r, snap, cfg, a.warning, sizeof(a.warning), &why);
	else if ((wh == SRV_OBJ_AUTHORED || wh == SRV_OBJ_AUTHOR_MUTATE) && authored &&
		 (create || update) && (!*sub || strcmp(sub, "status") == 0)) {
		st = wh == SRV_OBJ_AUTHORED ? judge_authored(&a, r, arena, cfg)
					    : author_patch(&a, r, arena, &patch);
		if (st != NG_OK) {
			ng_buf_finish(&patch);
			srv_review_finish(&a.review);
			return ng_err_set(reterr, st, 0, "answering: %s", ng_status_str(st));
		}
	} else if (wh == SRV_OBJ_ND_MUTATE && nd && create && !*sub && *r->username) {
		if ((st = created_by_patch(r, &patch)) != NG_OK) {
			ng_buf_finish(&patch);
			srv_review_finish(&a.review);
			return ng_err_set(reterr, st, 0, "encoding the patch: %s",
					  ng_status_str(st));
		}
		a.patched = true;
	}
	/* A request that asks for a privileged operation (at create, or by changing it). */
	const struct kube_nd *ndr =
	    wh == SRV_OBJ_ND && verdict == NG_OK && nd && !*sub && (create || update)
		? kube_one_nd(r->object)
		: NULL;
	const struct kube_nd *oldr = update ? kube_one_nd(r->old_object) : NULL;
	const char *tpl = ndr && ndr->detail ? ndr->detail->operation.job_template : NULL;
	const char *old_tpl = oldr && oldr->detail ? oldr->detail->operation.job_template : NULL;
	if (ndr && ndr->detail && ndr->detail->operation.privileged &&
	    (create || !old_tpl || strcmp(tpl, old_tpl) != 0))
		check_privileged(&a, r, cfg, ndr->detail->operation.privileged);
	if (verdict != NG_OK) {
		a.allowed = false;
		/* Forbidden to this user or by the policy: 403; anything else is invalid. */
		a.code = verdict == NG_EFORBIDDEN ? 403 : 422;
		(void)snprintf(a.message, sizeof(a.message), "%s %s%s%s: %s", r->kind_kind, r->ns,
			       *r->ns ? "/" : "", r->name, why.msg);
	}
	/* Names, URLs and selectors are echoed: messages stay printable ASCII. */
	printable_ascii(a.message);
	printable_lines(a.warning);
	struct srv_review_response resp = {.allowed = a.allowed,
					   .code = a.code,
					   .message = a.message,
					   .warning = a.warning,
					   .patch = a.patched ? patch.data : NULL};
	st = srv_review_encode(r->uid, &resp, out);
	ng_buf_finish(&patch);
	srv_review_finish(&a.review);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the response: %s", ng_status_str(st));
	*ret = a;
	return NG_OK;
}

/* One node of a remediation's dry run: what happens to it and, for a request it would get, the
 * gate's decision. */
static ng_status explained_node(const struct kube_snapshot *snap, const struct pol_rem_node *e,
				const struct pol_gate_decision *d, struct ng_buf *out)
{
	const struct ng_intern *pool = kube_snapshot_pool(snap);
	const char *node = ng_intern_str(pool, e->node, NULL), *act = pol_rem_action_str(e->action);
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "node", node);
	ng_jw_kstr(&w, "action", act);
	ng_jw_kstr(&w, "reason", e->reason);
	if (e->request)
		ng_jw_kstr(&w, "request", ng_intern_str(pool, e->request->name, NULL));
	if (e->action == POL_REM_CREATE) {
		ng_jw_key(&w, "decision");
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "state", pol_gate_outcome_str(d->outcome));
		ng_jw_kstr(&w, "reason", d->reason);
		ng_jw_key(&w, "disruptedDisruptionBudgets");
		struct ng_buf *vb = ng_jw_value_buf(&w);
		if (vb)
			ng_jw_fail(&w,
				   pol_verdicts_json(snap, d->verdicts, d->nverdicts, NULL, vb));
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* POST /v1/evaluate of a NodeRemediation: its plan, each request it would create decided. */
static ng_status explain_remediation(const cJSON *in, struct ng_arena *arena,
				     const struct kube_snapshot *snap, int64_t now_wall_ms,
				     struct ng_buf *out, int *ret_code, bool *ret_granted,
				     struct ng_err *reterr)
{
	struct kube_one *one = NULL;
	struct pol_rem_explain x;
	struct ng_err why = {0};
	ng_status st = kube_one_decode_as(KUBE_RES_NREMS, in, KUBE_ONE_NAME_OPTIONAL, &one, &why);
	if (st == NG_OK)
		st = pol_explain_remediation(snap, one, now_wall_ms, arena, &x, &why);
	kube_one_destroy(one);
	if (st == NG_ENOMEM)
		return ng_err_set(reterr, st, 0, "out of memory");
	if (st != NG_OK) {
		printable_ascii(why.msg);
		*ret_code = 422;
		return message_answer(why.msg, out);
	}
	*ret_code = 200;
	const struct pol_rem_plan *p = &x.plan;
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "kind", "NodeRemediation");
	ng_jw_ki64(&w, "matchedNodes", (int64_t)p->matched);
	ng_jw_ki64(&w, "unhealthyNodes", (int64_t)p->unhealthy);
	ng_jw_ki64(&w, "maxConcurrent", p->max_concurrent);
	ng_jw_kbool(&w, "storm", p->storm);
	if (p->max_unhealthy >= 0)
		ng_jw_ki64(&w, "maxUnhealthy", p->max_unhealthy);
	ng_jw_kstr(&w, "problem", p->problem);
	ng_jw_key(&w, "nodes");
	ng_jw_arr(&w);
	for (size_t i = 0; w.st == NG_OK && i < p->n; i++) {
		struct ng_buf *vb = ng_jw_value_buf(&w);
		if (vb)
			ng_jw_fail(&w, explained_node(snap, &p->nodes[i], &x.decisions[i], vb));
		*ret_granted |= p->nodes[i].action == POL_REM_CREATE &&
				x.decisions[i].outcome == POL_GATE_GRANT;
	}
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	st = ng_jw_finish(&w);
	st = st ? st : ng_buf_puts(out, "\n");
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "encoding the answer: %s", ng_status_str(st));
	return NG_OK;
}

ng_status srv_evaluate(const char *body, size_t len, struct ng_arena *arena,
		       const struct kube_snapshot *snap, int64_t now_wall_ms, struct ng_buf *out,
		       int *ret_code, bool *ret_granted, struct ng_err *reterr)
{
	*ret_granted = false;
	cJSON *in = NULL;
	ng_status st = ng_json_parse(body, len, arena, &in, reterr);
	if (st != NG_OK)
		return st;
	if (!cJSON_IsObject(in))
		return ng_err_set(reterr, NG_EPARSE, 0, "expected a NodeDisruption object");
	const char *kind = ng_json_str(in, "kind");
	if (kind && strcmp(kind, "NodeRemediation") == 0)
		return explain_remediation(in, arena, snap, now_wall_ms, out, ret_code, ret_granted,
					   reterr);
	/* Whatever kind and apiVersion it says, the body is a NodeDisruption to decide; a name is
	 * optional (pol_evaluate_object() names it "evaluate"), and a status is not the caller's
	 * to give: it is dropped unread (the tree lives in @arena, so nothing is freed). */
	(void)cJSON_DetachItemFromObjectCaseSensitive(in, "status");
	struct kube_one *one = NULL;
	struct pol_gate_decision d;
	struct ng_err why = {0};
	st = kube_one_decode_as(KUBE_RES_NDS, in, KUBE_ONE_NAME_OPTIONAL, &one, &why);
	int64_t expires_ms = 0;
	if (st == NG_OK)
		st = pol_evaluate_object(snap, one, now_wall_ms, arena, &d, &why);
	if (st == NG_OK && d.outcome == POL_GATE_GRANT)
		expires_ms =
		    pol_grant_expires_ms(kube_one_nd(one), kube_snapshot_config(snap), now_wall_ms);
	kube_one_destroy(one);
	if (st != NG_OK) {
		printable_ascii(why.msg);
		*ret_code = st == NG_EFORBIDDEN ? 403 : 422;
		return message_answer(why.msg, out);
	}
	return evaluation_answer(snap, &d, expires_ms, arena, out, ret_code, ret_granted, reterr);
}

/* ---- POST /v1/plan ---- */

/* A plan's own memory: node lists and reasons, a few hundred bytes per wave. */
#define PLAN_ARENA_BYTES (256u << 20)
/* Whether @sel is a LabelSelector object with only its own members; else a message in @why.
 * What the members hold is kube_decode_selector()'s to check. */
static bool selector_shape(const cJSON *sel, char *why, size_t cap)
{
	if (!cJSON_IsObject(sel)) {
		ng_fmt(why, cap, "nodeSelector: expected a LabelSelector object");
		return false;
	}
	const cJSON *m;
	cJSON_ArrayForEach(m, sel)
	{
		if (strcmp(m->string, "matchLabels") != 0 &&
		    strcmp(m->string, "matchExpressions") != 0) {
			ng_fmt(why, cap, "nodeSelector.%.40s: not a LabelSelector field",
			       m->string);
			return false;
		}
	}
	return true;
}

/* Whether every member of the plan request @in_json is one it may have; else a message in @why. */
static bool known_fields(const cJSON *in_json, char *why, size_t cap)
{
	static const char *const known[] = {"nodes", "nodeSelector", "drainSeconds",
					    "start", "type",         "requestor"};
	const cJSON *m;
	cJSON_ArrayForEach(m, in_json)
	{
		bool ok = false;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= strcmp(m->string, known[i]) == 0;
		if (!ok) {
			ng_fmt(why, cap,
			       "unknown field \"%.40s\": a plan request has nodes, nodeSelector, "
			       "drainSeconds, start, type and requestor",
			       m->string);
			return false;
		}
	}
	return true;
}

/* drainSeconds, start, type and requestor of @in_json into @in; false with a message in @why. */
static bool plan_settings(const cJSON *in_json, struct pol_plan_input *in, char *why, size_t cap)
{
	const cJSON *v = ng_json_get(in_json, "drainSeconds");
	int64_t drain_s = 300;
	if (v && (!ng_json_int64(v, &drain_s) || drain_s < 1 || drain_s > 2592000)) {
		ng_fmt(why, cap, "drainSeconds: expected an integer between 1 and 2592000");
		return false;
	}
	in->drain_ms = drain_s * 1000;
	v = ng_json_get(in_json, "start");
	if (v && (!cJSON_IsString(v) || ng_parse_rfc3339_ms(v->valuestring, strlen(v->valuestring),
							    &in->start_wall_ms) != NG_OK)) {
		ng_fmt(why, cap, "start: expected an RFC 3339 time, e.g. 2026-11-22T00:00:00Z");
		return false;
	}
	static const char *const strs[] = {"type", "requestor"};
	for (size_t i = 0; i < 2; i++) {
		v = ng_json_get(in_json, strs[i]);
		if (v && (!cJSON_IsString(v) || strlen(v->valuestring) > 253)) {
			ng_fmt(why, cap, "%s: expected a string of at most 253 bytes", strs[i]);
			return false;
		}
		if (v)
			*(i ? &in->requestor : &in->type) = v->valuestring;
	}
	return true;
}

/* The node names listed in @nodes into @in (the array from @arena). */
static ng_status plan_listed_nodes(const cJSON *nodes, struct ng_arena *arena,
				   struct pol_plan_input *in, char *why, size_t cap)
{
	int n = cJSON_GetArraySize(nodes);
	if (!cJSON_IsArray(nodes) || n > POL_PLAN_MAX_NODES) {
		ng_fmt(why, cap, "nodes: expected a list of at most %d node names",
		       POL_PLAN_MAX_NODES);
		return NG_EPARSE;
	}
	const char **names = ng_arena_alloc(arena, ((size_t)n + 1) * sizeof(*names));
	if (!names)
		return NG_ENOMEM;
	size_t k = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, nodes)
	{
		if (!cJSON_IsString(v)) {
			ng_fmt(why, cap, "nodes: expected node names");
			return NG_EPARSE;
		}
		names[k++] = v->valuestring;
	}
	in->nodes = names;
	in->nnodes = k;
	return NG_OK;
}

/* The nodes of @snap the LabelSelector @sel selects into @in (the array from @arena). The
 * selector is decoded once, as the kinds' decoders read one, over a pool of its own, then
 * matched against the snapshot's labels. */
static ng_status plan_selected_nodes(const cJSON *sel, const struct kube_snapshot *snap,
				     struct ng_arena *arena, struct pol_plan_input *in, char *why,
				     size_t cap)
{
	if (!selector_shape(sel, why, cap))
		return NG_EPARSE;
	struct ng_intern *own = ng_intern_create();
	if (!own)
		return NG_ENOMEM;
	struct ng_err e = {0};
	struct kube_selector decoded, over_snap;
	const char **names = NULL;
	size_t n = 0;
	ng_status st = kube_decode_selector(own, arena, sel, "nodeSelector", &decoded, &e);
	if (st == NG_OK)
		st = pol_selector_to_pool(&decoded, own, kube_snapshot_pool(snap), arena,
					  &over_snap, &e);
	ng_intern_destroy(own);
	if (st == NG_OK)
		st = pol_plan_select_nodes(snap, &over_snap, arena, &names, &n, &e);
	if (st == NG_OK) {
		in->nodes = names;
		in->nnodes = n;
	} else if (st != NG_ENOMEM) {
		if (strncmp(e.msg, "nodeSelector", 12) == 0)
			ng_fmt(why, cap, "%s", e.msg);
		else
			ng_fmt(why, cap, "nodeSelector: %s", e.msg);
		st = NG_EPARSE;
	}
	return st;
}

/* What the body asks for, into @in (names from @arena, strings borrowed from the tree), or a
 * message in @why. */
static ng_status plan_request(const cJSON *in_json, const struct kube_snapshot *snap,
			      int64_t now_wall_ms, struct ng_arena *arena,
			      struct pol_plan_input *in, char *why, size_t cap)
{
	*in = (struct pol_plan_input){.start_wall_ms = now_wall_ms,
				      .drain_ms = 300000,
				      .type = "maintenance",
				      .requestor = "nodegate-plan"};
	if (!known_fields(in_json, why, cap))
		return NG_EPARSE;
	const cJSON *nodes = ng_json_get(in_json, "nodes"),
		    *sel = ng_json_get(in_json, "nodeSelector");
	if (!nodes == !sel) {
		ng_fmt(why, cap,
		       "give nodes (a list of node names) or nodeSelector (a LabelSelector)");
		return NG_EPARSE;
	}
	if (!plan_settings(in_json, in, why, cap))
		return NG_EPARSE;
	return nodes ? plan_listed_nodes(nodes, arena, in, why, cap)
		     : plan_selected_nodes(sel, snap, arena, in, why, cap);
}

ng_status srv_plan(const char *body, size_t len, struct ng_arena *arena,
		   const struct kube_snapshot *snap, int64_t now_wall_ms,
		   const struct srv_plan_caps *caps, struct ng_buf *out, int *ret_code,
		   struct ng_err *reterr)
{
	cJSON *in_json = NULL;
	ng_status st = ng_json_parse(body, len, arena, &in_json, reterr);
	if (st != NG_OK)
		return st;
	char why[256] = "";
	struct pol_plan_input in;
	struct pol_plan p;
	struct ng_arena *mem = ng_arena_create(PLAN_ARENA_BYTES);
	if (!mem)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	if (!cJSON_IsObject(in_json)) {
		ng_fmt(why, sizeof(why), "expected a plan request object");
		st = NG_EPARSE;
	} else {
		st = plan_request(in_json, snap, now_wall_ms, mem, &in, why, sizeof(why));
	}
	if (st == NG_OK && caps) {
		in.max_rounds = caps->max_rounds;
		in.max_decisions = caps->max_decisions;
		in.max_mono_us = caps->max_mono_us;
		in.clock_mono_us = caps->clock_mono_us;
		in.clock_ctx = caps->clock_ctx;
	}
	if (st == NG_OK) {
		st = pol_plan_run(snap, &in, mem, &p);
		if (st == NG_ELIMIT)
			ng_fmt(why, sizeof(why), "more than %d nodes", POL_PLAN_MAX_NODES);
	}
	if (st == NG_OK) {
		*ret_code = 200;
		st = pol_plan_json(snap, &in, &p, out);
		if (st == NG_ELIMIT) {
			ng_buf_reset(out);
			ng_fmt(why, sizeof(why), "the plan is larger than the answer may be");
		}
	}
	ng_arena_destroy(mem);
	if (st == NG_ENOMEM)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK)
		return NG_OK;
	printable_ascii(why);
	*ret_code = 422;
	return message_answer(why, out);
}
