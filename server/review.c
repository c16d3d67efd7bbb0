#include "server/review.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/jw.h"
#include "kube/records.h"
#include "kube/one.h"

#include <string.h>

/* Kubernetes UIDs are 36 characters; anything past 256 is not a UID we should echo. */
#define MAX_UID_BYTES 256
/* Longest object name (DNS subdomain) and namespace (DNS label) the API server accepts. */
#define MAX_NAME_BYTES 253
#define MAX_NS_BYTES 63
/* Usernames carry service-account prefixes; 512 bounds the log line and comparisons. */
#define MAX_USER_BYTES 512

static ng_status str_field(const cJSON *obj, const char *key, const char *path, size_t max,
			   bool required, const char **ret, struct ng_err *reterr)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return ng_err_set(reterr, NG_EPARSE, 0, "%s: required", path);
		*ret = "";
		return NG_OK;
	}
	if (!cJSON_IsString(v))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: expected a string", path);
	size_t len = strlen(v->valuestring);
	if (required && len == 0)
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: must not be empty", path);
	if (len > max)
		return ng_err_set(reterr, NG_ELIMIT, 0, "%s: longer than %zu bytes", path, max);
	*ret = v->valuestring;
	return NG_OK;
}

static ng_status gvk(const cJSON *req, const char *key, const char *const names[3],
		     const char **out[3], struct ng_err *reterr)
{
	const cJSON *o = ng_json_get(req, key);
	for (int i = 0; i < 3; i++)
		*out[i] = "";
	if (!o || cJSON_IsNull(o))
		return NG_OK;
	if (!cJSON_IsObject(o))
		return ng_err_set(reterr, NG_EPARSE, 0, "request.%s: expected an object", key);
	for (int i = 0; i < 3; i++) {
		char path[48];
		size_t kl = strlen(key), nl = strlen(names[i]);
		/* "request." + key + "." + name, both short constants. */
		memcpy(path, "request.", 8);
		memcpy(path + 8, key, kl);
		path[8 + kl] = '.';
		memcpy(path + 9 + kl, names[i], nl + 1);
		ng_status st = str_field(o, names[i], path, MAX_NAME_BYTES, false, out[i], reterr);
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

/* request.* but the objects, into @r. */
static ng_status request_fields(const cJSON *req, struct srv_review *r, struct ng_err *reterr)
{
	static const char *const gvk_names[3] = {"group", "version", "kind"};
	static const char *const gvr_names[3] = {"group", "version", "resource"};
	ng_status st;
	if ((st = str_field(req, "uid", "request.uid", MAX_UID_BYTES, true, &r->uid, reterr)) !=
		NG_OK ||
	    (st = gvk(req, "kind", gvk_names,
		      (const char **[3]){&r->kind_group, &r->kind_version, &r->kind_kind},
		      reterr)) != NG_OK ||
	    (st = gvk(req, "resource", gvr_names,
		      (const char **[3]){&r->resource_group, &r->resource_version, &r->resource},
		      reterr)) != NG_OK ||
	    (st = str_field(req, "subResource", "request.subResource", MAX_NAME_BYTES, false,
			    &r->sub_resource, reterr)) != NG_OK ||
	    (st = str_field(req, "name", "request.name", MAX_NAME_BYTES, false, &r->name,
			    reterr)) != NG_OK ||
	    (st = str_field(req, "namespace", "request.namespace", MAX_NS_BYTES, false, &r->ns,
			    reterr)) != NG_OK ||
	    (st = str_field(req, "operation", "request.operation", 16, true, &r->operation,
			    reterr)) != NG_OK)
		return st;
	if (strcmp(r->operation, "CREATE") != 0 && strcmp(r->operation, "UPDATE") != 0 &&
	    strcmp(r->operation, "DELETE") != 0 && strcmp(r->operation, "CONNECT") != 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "request.operation: must be CREATE, UPDATE, DELETE or CONNECT");
	const cJSON *ui = ng_json_get(req, "userInfo");
	if (ui && !cJSON_IsNull(ui) && !cJSON_IsObject(ui))
		return ng_err_set(reterr, NG_EPARSE, 0, "request.userInfo: expected an object");
	if ((st = str_field(ui, "username", "request.userInfo.username", MAX_USER_BYTES, false,
			    &r->username, reterr)) != NG_OK)
		return st;
	const cJSON *dry = ng_json_get(req, "dryRun");
	if (dry && !cJSON_IsNull(dry) && !cJSON_IsBool(dry))
		return ng_err_set(reterr, NG_EPARSE, 0, "request.dryRun: expected a boolean");
	r->dry_run = cJSON_IsTrue(dry);
	return NG_OK;
}

/* A list of at most KUBE_AUTH_MAX_GROUPS strings @v (absent or null: none) into the arena. */
static bool string_list(struct ng_arena *arena, const cJSON *v, const char *const **ret,
			size_t *ret_n, bool *over)
{
	*ret = NULL;
	*ret_n = 0;
	if (!v || cJSON_IsNull(v))
		return true;
	int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
	if (n < 0 || n > KUBE_AUTH_MAX_GROUPS) {
		*over = true;
		return true;
	}
	const char **out = n ? ng_arena_alloc(arena, (size_t)n * sizeof(*out)) : NULL;
	if (n && !out)
		return false;
	size_t i = 0;
	for (const cJSON *e = v->child; e && i < (size_t)n; e = e->next) {
		if (!cJSON_IsString(e)) {
			*over = true;
			return true;
		}
		out[i++] = e->valuestring;
	}
	*ret = out;
	*ret_n = i;
	return true;
}

/* request.userInfo's uid, groups and extra into @r->user (its name is r->username). */
static ng_status user_info(const cJSON *req, struct ng_arena *arena, struct srv_review *r,
			   struct ng_err *reterr)
{
	const cJSON *ui = ng_json_get(req, "userInfo");
	struct kube_auth_subject *u = &r->user;
	u->user = r->username;
	const char *uid = ng_json_str(ui, "uid");
	u->uid = uid ? uid : "";
	if (!string_list(arena, ng_json_get(ui, "groups"), &u->groups, &u->ngroups, &r->user_over))
		return ng_err_set(reterr, NG_ENOMEM, 0, "request.userInfo.groups: out of memory");
	const cJSON *extra = ng_json_get(ui, "extra");
	if (!extra || cJSON_IsNull(extra))
		return NG_OK;
	int n = cJSON_IsObject(extra) ? cJSON_GetArraySize(extra) : -1;
	if (n < 0 || n > KUBE_AUTH_MAX_GROUPS) {
		r->user_over = true;
		return NG_OK;
	}
	struct kube_auth_extra *out = n ? ng_arena_alloc(arena, (size_t)n * sizeof(*out)) : NULL;
	if (n && !out)
		return ng_err_set(reterr, NG_ENOMEM, 0, "request.userInfo.extra: out of memory");
	size_t i = 0;
	for (const cJSON *e = extra->child; e && i < (size_t)n; e = e->next, i++) {
		out[i].key = e->string;
		if (!string_list(arena, e, &out[i].values, &out[i].nvalues, &r->user_over))
			return ng_err_set(reterr, NG_ENOMEM, 0,
					  "request.userInfo.extra: out of memory");
	}
	u->extra = out;
	u->nextra = i;
	return NG_OK;
}

/* @obj decoded into *@ret when it is one of nodegate's, or why not into @err. */
static void decode_object(const cJSON *obj, struct kube_one **ret, struct ng_err *err)
{
	*ret = NULL;
	if (kube_one_decode(obj, ret, err) != NG_OK)
		*ret = NULL;
}

/* request.object and request.oldObject into @r: what every webhook reads of the object, and the
 * decoded object when it is nodegate's. */
static ng_status request_objects(const cJSON *req, struct srv_review *r, struct ng_err *reterr)
{
	const cJSON *obj = ng_json_get(req, "object");
	const cJSON *old = ng_json_get(req, "oldObject");
	if (obj && !cJSON_IsNull(obj) && !cJSON_IsObject(obj))
		return ng_err_set(reterr, NG_EPARSE, 0, "request.object: expected an object");
	if (old && !cJSON_IsNull(old) && !cJSON_IsObject(old))
		return ng_err_set(reterr, NG_EPARSE, 0, "request.oldObject: expected an object");
	r->has_object = cJSON_IsObject(obj);
	r->has_old_object = cJSON_IsObject(old);
	const cJSON *meta = ng_json_get(obj, "metadata");
	const char *ns = ng_json_str(meta, "namespace"), *name = ng_json_str(meta, "name");
	r->object_ns = ns ? ns : "";
	r->object_name = name ? name : "";
	r->object_has_annotations = cJSON_IsObject(ng_json_get(meta, "annotations"));
	const cJSON *ann = ng_json_get(meta, "annotations");
	const cJSON *old_ann = ng_json_get(ng_json_get(old, "metadata"), "annotations");
	r->author = ng_json_str(ann, KUBE_AUTHOR_ANNOTATION);
	r->author_groups = ng_json_str(ann, KUBE_AUTHOR_GROUPS_ANNOTATION);
	r->old_author = ng_json_str(old_ann, KUBE_AUTHOR_ANNOTATION);
	r->old_author_groups = ng_json_str(old_ann, KUBE_AUTHOR_GROUPS_ANNOTATION);
	const cJSON *spec = ng_json_get(obj, "spec"), *old_spec = ng_json_get(old, "spec");
	r->spec_changed = strcmp(r->operation, "CREATE") == 0 || (!spec) != (!old_spec) ||
			  (spec && !cJSON_Compare(spec, old_spec, true));
	if (strcmp(r->kind_group, "nodegate.io") != 0)
		return NG_OK;
	if (r->has_object)
		decode_object(obj, &r->object, &r->object_err);
	if (r->has_old_object)
		decode_object(old, &r->old_object, &r->old_object_err);
	return NG_OK;
}

ng_status srv_review_decode(const char *buf, size_t len, struct ng_arena *arena,
			    struct srv_review *ret, struct ng_err *reterr)
{
	cJSON *root = NULL;
	struct ng_err perr = {0};
	ng_status st = ng_json_parse(buf, len, arena, &root, &perr);
	if (st != NG_OK)
		return ng_err_set(reterr, st, perr.offset,
				  st == NG_EPARSE ? "body is not valid JSON: %s" : "body: %s",
				  perr.msg);
	if (!cJSON_IsObject(root))
		return ng_err_set(reterr, NG_EPARSE, 0, "body: expected a JSON object");
	const char *api = ng_json_str(root, "apiVersion");
	const char *kind = ng_json_str(root, "kind");
	if (!api || strcmp(api, "admission.k8s.io/v1") != 0)
		return ng_err_set(
		    reterr, NG_EPARSE, 0,
		    "apiVersion: must be admission.k8s.io/v1 (got \"%.40s\"); register "
		    "the webhook with admissionReviewVersions: [\"v1\"]",
		    api ? api : "");
	if (!kind || strcmp(kind, "AdmissionReview") != 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "kind: must be AdmissionReview (got \"%.40s\")",
				  kind ? kind : "");
	const cJSON *req = ng_json_get(root, "request");
	if (!req || cJSON_IsNull(req))
		return ng_err_set(reterr, NG_EPARSE, 0, "request: required");
	if (!cJSON_IsObject(req))
		return ng_err_set(reterr, NG_EPARSE, 0, "request: expected an object");
	struct srv_review r;
	memset(&r, 0, sizeof(r));
	if ((st = request_fields(req, &r, reterr)) != NG_OK ||
	    (st = user_info(req, arena, &r, reterr)) != NG_OK ||
	    (st = request_objects(req, &r, reterr)) != NG_OK)
		return st;
	*ret = r;
	return NG_OK;
}

void srv_review_finish(struct srv_review *r)
{
	if (!r)
		return;
	kube_one_destroy(r->object);
	kube_one_destroy(r->old_object);
	r->object = r->old_object = NULL;
}

const char *srv_status_reason(int32_t code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 409:
		return "Conflict";
	case 413:
		return "RequestEntityTooLarge";
	case 415:
		return "UnsupportedMediaType";
	case 421:
		return "MisdirectedRequest";
	case 422:
		return "Invalid";
	case 429:
		return "TooManyRequests";
	case 500:
		return "InternalError";
	case 503:
		return "ServiceUnavailable";
	case 504:
		return "Timeout";
	default:
		return code >= 500 ? "InternalError" : "BadRequest";
	}
}

/* The API server keeps this many bytes of a warning (kube-apiserver truncates longer ones), and
 * kubectl prints each on a line of its own: more than a few would bury the answer. */
#define MAX_WARNING_BYTES 256
#define MAX_WARNINGS 4

/* @warning's lines as the response's warnings: at most MAX_WARNINGS, each cut to
 * MAX_WARNING_BYTES (not inside a UTF-8 sequence), empty lines skipped. */
static void put_warnings(struct ng_jw *w, const char *warning)
{
	ng_jw_key(w, "warnings");
	ng_jw_arr(w);
	size_t n = 0;
	for (const char *s = warning; *s && n < MAX_WARNINGS;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		size_t keep = len;
		if (keep > MAX_WARNING_BYTES) {
			keep = MAX_WARNING_BYTES;
			while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
				keep--;
		}
		if (keep > 0) {
			ng_jw_strn(w, s, keep);
			n++;
		}
		s += len + (nl ? 1 : 0);
	}
	ng_jw_arr_end(w);
}

ng_status srv_review_encode(const char *uid, const struct srv_review_response *resp,
			    struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "admission.k8s.io/v1");
	ng_jw_kstr(&w, "kind", "AdmissionReview");
	ng_jw_key(&w, "response");
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "uid", uid);
	ng_jw_kbool(&w, "allowed", resp->allowed);
	if (!resp->allowed) {
		ng_jw_key(&w, "status");
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "status", "Failure");
		ng_jw_ki64(&w, "code", resp->code);
		ng_jw_kstr(&w, "reason", srv_status_reason(resp->code));
		ng_jw_kstr(&w, "message", resp->message ? resp->message : "");
		if (resp->retry_after_seconds > 0) {
			ng_jw_key(&w, "details");
			ng_jw_obj(&w);
			ng_jw_ki64(&w, "retryAfterSeconds", resp->retry_after_seconds);
			ng_jw_obj_end(&w);
		}
		ng_jw_obj_end(&w);
	}
	if (resp->allowed && resp->patch) {
		ng_jw_kstr(&w, "patchType", "JSONPatch");
		ng_jw_key(&w, "patch");
		ng_jw_base64(&w, resp->patch, strlen(resp->patch));
	}
	if (resp->warning && *resp->warning)
		put_warnings(&w, resp->warning);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}
