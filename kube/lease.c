#include "kube/lease.h"

#include "common/buf.h"
#include "common/json.h"

#include <stdlib.h>
#include <string.h>

ng_status kube_lease_strdup(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return NG_OK;
	}
	char *d = strdup(s);
	if (!d)
		return NG_ENOMEM;
	*ret = d;
	return NG_OK;
}

void kube_lease_record_finish(struct kube_lease_record *r)
{
	free(r->holder);
	free(r->acquire_time);
	free(r->renew_time);
	free(r->strategy);
	free(r->preferred_holder);
	memset(r, 0, sizeof(*r));
}

/* An optional string member: absent or null is NULL, another type is malformed. */
static ng_status opt_str(const cJSON *obj, const char *key, char **ret, struct ng_err *reterr)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*ret = NULL;
		return NG_OK;
	}
	if (!cJSON_IsString(v))
		return ng_err_set(reterr, NG_EPARSE, 0, "lease: spec.%s is not a string", key);
	if (kube_lease_strdup(v->valuestring, ret) != NG_OK)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	return NG_OK;
}

static ng_status opt_int(const cJSON *obj, const char *key, int64_t *ret, struct ng_err *reterr)
{
	const cJSON *v = ng_json_get(obj, key);
	*ret = 0;
	if (!v || cJSON_IsNull(v))
		return NG_OK;
	if (!ng_json_int64(v, ret) || *ret < 0 || *ret > INT32_MAX)
		return ng_err_set(reterr, NG_EPARSE, 0, "lease: spec.%s is not an int32 >= 0", key);
	return NG_OK;
}

ng_status kube_lease_decode(const char *buf, size_t len, struct kube_lease_record *ret_rec,
			    char **ret_meta, struct ng_err *reterr)
{
	cJSON *root = NULL;
	struct kube_lease_record rec = {0};
	char *meta = NULL;
	ng_status st = ng_json_parse(buf, len, NULL, &root, reterr);
	if (st != NG_OK)
		goto out;
	const cJSON *md = ng_json_get(root, "metadata");
	const char *rv = ng_json_str(md, "resourceVersion");
	if (!cJSON_IsObject(md) || !rv || !rv[0]) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "lease: no metadata.resourceVersion");
		goto out;
	}
	const cJSON *spec = ng_json_get(root, "spec");
	if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec)) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "lease: spec is not an object");
		goto out;
	}
	if ((st = opt_str(spec, "holderIdentity", &rec.holder, reterr)) != NG_OK ||
	    (st = opt_str(spec, "acquireTime", &rec.acquire_time, reterr)) != NG_OK ||
	    (st = opt_str(spec, "renewTime", &rec.renew_time, reterr)) != NG_OK ||
	    (st = opt_str(spec, "strategy", &rec.strategy, reterr)) != NG_OK ||
	    (st = opt_str(spec, "preferredHolder", &rec.preferred_holder, reterr)) != NG_OK ||
	    (st = opt_int(spec, "leaseDurationSeconds", &rec.duration_s, reterr)) != NG_OK ||
	    (st = opt_int(spec, "leaseTransitions", &rec.transitions, reterr)) != NG_OK)
		goto out;
	if (!rec.holder && (st = kube_lease_strdup("", &rec.holder)) != NG_OK) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}
	meta = cJSON_PrintUnformatted(md);
	if (!meta) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}
	*ret_rec = rec;
	memset(&rec, 0, sizeof(rec));
	*ret_meta = meta;
	meta = NULL;
out:
	kube_lease_record_finish(&rec);
	free(meta);
	cJSON_Delete(root);
	return st;
}

void kube_status_message(const char *buf, size_t len, char *out, size_t cap)
{
	cJSON *root = NULL;
	const char *msg = NULL;
	if (buf && len && ng_json_parse(buf, len, NULL, &root, NULL) == NG_OK)
		msg = ng_json_str(root, "message");
	ng_fmt(out, cap, "%s", msg ? msg : "");
	cJSON_Delete(root);
}
