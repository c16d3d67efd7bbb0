/* Reads outside the cache (kube/lookup.h). */
#include "kube/lookup.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/parse.h"
#include "kube/client.h"
#include "kube/kinds.h"
#include "kube/snapshot.h"
#include "kube/records.h"
#include "kube/write.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A Job, a namespace or a page of 500 VolumeAttachments is well under this. */
#define LOOKUP_CAP_BYTES (4u << 20)

/* GET @path into a tree in a new arena (*@ret_arena, the caller destroys it). A 404 is NG_OK
 * with *@ret_root NULL. */
static ng_status get_json(struct kube_client *c, const char *path, struct ng_arena **ret_arena,
			  cJSON **ret_root, struct ng_err *reterr)
{
	*ret_arena = NULL;
	*ret_root = NULL;
	struct ng_buf resp;
	ng_buf_init(&resp, LOOKUP_CAP_BYTES);
	long http = 0;
	ng_status st = kube_client_request(c, "GET", path, NULL, NULL, 0, KUBE_WRITE_TIMEOUT_MS,
					   LOOKUP_CAP_BYTES, &resp, &http, reterr);
	if (st == NG_OK && http != 200 && http != 404)
		st = ng_err_set(reterr, NG_EKUBE, 0, "GET %.200s: HTTP %ld: %.120s", path, http,
				resp.data ? resp.data : "");
	if (st == NG_OK && http == 200) {
		struct ng_arena *a = ng_arena_create((64u << 10) + 8 * resp.len);
		if (!a)
			st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		else if ((st = ng_json_parse(resp.data, resp.len, a, ret_root, reterr)) != NG_OK ||
			 !cJSON_IsObject(*ret_root))
			st = ng_err_set(reterr, NG_EPARSE, 0, "GET %.200s: not an object", path);
		*ret_arena = a;
	}
	ng_buf_finish(&resp);
	return st;
}

/* GET of the object @ref names, as get_json(). On failure the arena is already destroyed. */
static ng_status get_ref(struct kube_client *c, const struct kube_ref *ref,
			 struct ng_arena **ret_arena, cJSON **ret_root, struct ng_err *reterr)
{
	char path[1024];
	*ret_arena = NULL;
	*ret_root = NULL;
	ng_status st = kube_ref_path(ref, NULL, path, sizeof(path));
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "no path for %s %.100s/%.100s",
				  kube_kind_name(ref->kind), ref->ns ? ref->ns : "", ref->name);
	if ((st = get_json(c, path, ret_arena, ret_root, reterr)) != NG_OK) {
		ng_arena_destroy(*ret_arena);
		*ret_arena = NULL;
	}
	return st;
}

ng_status kube_get_job(struct kube_client *c, const char *ns, const char *name,
		       enum kube_job_state *ret, char *reason, size_t cap, struct ng_err *reterr)
{
	const struct kube_ref ref = {KUBE_KIND_JOB, ns, name};
	struct ng_arena *a;
	cJSON *root;
	ng_status st = get_ref(c, &ref, &a, &root, reterr);
	if (st != NG_OK)
		return st;
	*ret = root ? KUBE_JOB_RUNNING : KUBE_JOB_ABSENT;
	const cJSON *conds =
	    ng_json_path(root, (const char *const[]){"status", "conditions", NULL});
	for (const cJSON *e = cJSON_IsArray(conds) ? conds->child : NULL; e; e = e->next) {
		const char *t = ng_json_str(e, "type"), *s = ng_json_str(e, "status");
		if (!t || !s || strcmp(s, "True") != 0)
			continue;
		if (strcmp(t, "Complete") == 0) {
			*ret = KUBE_JOB_COMPLETE;
		} else if (strcmp(t, "Failed") == 0) {
			const char *r = ng_json_str(e, "reason"), *m = ng_json_str(e, "message");
			*ret = KUBE_JOB_FAILED;
			(void)snprintf(reason, cap, "%.100s%s%.200s", r ? r : "Failed",
				       m ? ": " : "", m ? m : "");
			break;
		}
	}
	ng_arena_destroy(a);
	return NG_OK;
}

/* Calls @fn(@ctx, item) for every item of the list at @base (pages of 500). A 404 is an empty
 * list. */
static ng_status each_item(struct kube_client *c, const char *base,
			   void (*fn)(void *ctx, const cJSON *item), void *ctx,
			   struct ng_err *reterr)
{
	char cont[1024] = "";
	/* A bound on pages: 5,000 nodes with a few volumes each is tens of pages. */
	for (int page = 0; page < 1000; page++) {
		char path[1400];
		int n = snprintf(path, sizeof(path), "%s?limit=500%s%s", base,
				 *cont ? "&continue=" : "", cont);
		if (n < 0 || (size_t)n >= sizeof(path))
			return ng_err_set(reterr, NG_EINVAL, 0, "list path too long");
		struct ng_arena *a;
		cJSON *root;
		ng_status st = get_json(c, path, &a, &root, reterr);
		if (st != NG_OK || !root) {
			ng_arena_destroy(a);
			return st;
		}
		const cJSON *items = ng_json_get(root, "items");
		for (const cJSON *e = cJSON_IsArray(items) ? items->child : NULL; e; e = e->next)
			fn(ctx, e);
		const char *next = ng_json_str(ng_json_get(root, "metadata"), "continue");
		bool more = next && *next && strlen(next) < sizeof(cont) &&
			    strspn(next, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					 "0123456789-_=.") == strlen(next);
		if (more)
			memcpy(cont, next, strlen(next) + 1);
		ng_arena_destroy(a);
		if (!more)
			return NG_OK;
	}
	return ng_err_set(reterr, NG_ELIMIT, 0, "%.200s: too many pages", base);
}

struct attachments {
	const char *node;
	const char *const *keep;
	size_t nkeep, n;
};

static void count_attachment(void *ctx, const cJSON *item)
{
	struct attachments *at = ctx;
	const char *n = ng_json_str(ng_json_get(item, "spec"), "nodeName");
	if (!n || strcmp(n, at->node) != 0)
		return;
	const char *pv =
	    ng_json_str(ng_json_get(ng_json_get(item, "spec"), "source"), "persistentVolumeName");
	for (size_t i = 0; pv && i < at->nkeep; i++)
		if (strcmp(pv, at->keep[i]) == 0)
			return;
	at->n++;
}

ng_status kube_count_volume_attachments(struct kube_client *c, const char *node,
					const char *const *keep, size_t nkeep, size_t *ret,
					struct ng_err *reterr)
{
	struct attachments at = {node, keep, nkeep, 0};
	ng_status st = each_item(c, "/apis/storage.k8s.io/v1/volumeattachments", count_attachment,
				 &at, reterr);
	*ret = st == NG_OK ? at.n : 0;
	return st;
}

struct newest {
	uint64_t rv;
	bool unknown;
};

static void newer_rv(void *ctx, const cJSON *item)
{
	struct newest *nw = ctx;
	uint64_t rv = kube_rv_number(ng_json_str(ng_json_get(item, "metadata"), "resourceVersion"));
	if (!rv)
		nw->unknown = true;
	else if (rv > nw->rv)
		nw->rv = rv;
}

ng_status kube_newest_rv(struct kube_client *c, enum kube_resource r, uint64_t *ret,
			 struct ng_err *reterr)
{
	char base[KUBE_KIND_PATH_MAX];
	kube_kind_path(r, base, sizeof(base));
	struct newest nw = {0, false};
	ng_status st = each_item(c, base, newer_rv, &nw, reterr);
	*ret = st == NG_OK && !nw.unknown ? nw.rv : 0;
	return st;
}

static int cmp_label(const void *a, const void *b)
{
	const struct kube_label *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

ng_status kube_get_namespace_labels(struct kube_client *c, const char *ns,
				    const struct ng_intern *pool, struct ng_arena *arena,
				    const struct kube_label **ret, uint16_t *ret_n,
				    struct ng_err *reterr)
{
	*ret = NULL;
	*ret_n = 0;
	char path[512];
	if ((size_t)snprintf(path, sizeof(path), "/api/v1/namespaces/%s", ns) >= sizeof(path) ||
	    strpbrk(ns, "/?#% ") || !*ns)
		return ng_err_set(reterr, NG_EINVAL, 0, "bad namespace name");
	struct ng_arena *a;
	cJSON *root;
	ng_status st = get_json(c, path, &a, &root, reterr);
	const cJSON *labels = ng_json_get(ng_json_get(root, "metadata"), "labels");
	size_t n = cJSON_IsObject(labels) ? (size_t)cJSON_GetArraySize(labels) : 0;
	struct kube_label *out = n && st == NG_OK ? ng_arena_alloc(arena, n * sizeof(*out)) : NULL;
	if (n && st == NG_OK && !out)
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	size_t i = 0;
	for (const cJSON *e = out ? labels->child : NULL; e && i < UINT16_MAX; e = e->next) {
		uint32_t key = ng_intern_find(pool, e->string, strlen(e->string));
		if (key == NG_INTERN_NONE || !cJSON_IsString(e))
			continue;
		out[i].key = key;
		out[i].val = ng_intern_find(pool, e->valuestring, strlen(e->valuestring));
		i++;
	}
	if (i)
		qsort(out, i, sizeof(*out), cmp_label);
	*ret = out;
	*ret_n = (uint16_t)i;
	ng_arena_destroy(a);
	return st;
}

ng_status kube_get_secret_data(struct kube_client *c, const char *ns, const char *name,
			       const char *const *keys, size_t n, char **ret, bool *ret_found,
			       char *ret_rv, size_t rvcap, struct ng_err *reterr)
{
	for (size_t i = 0; i < n; i++)
		ret[i] = NULL;
	*ret_found = false;
	if (rvcap)
		ret_rv[0] = '\0';
	const struct kube_ref ref = {KUBE_KIND_SECRET, ns, name};
	struct ng_arena *a;
	cJSON *root;
	ng_status st = get_ref(c, &ref, &a, &root, reterr);
	if (st != NG_OK || !root) {
		ng_arena_destroy(a);
		return st;
	}
	*ret_found = true;
	const char *rv = ng_json_str(ng_json_get(root, "metadata"), "resourceVersion");
	if (rvcap)
		(void)snprintf(ret_rv, rvcap, "%s", rv ? rv : "");
	const cJSON *data = ng_json_get(root, "data");
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		const char *b64 = ng_json_str(data, keys[i]);
		size_t len;
		if (b64 && ng_base64_decode(b64, strlen(b64), &ret[i], &len) != NG_OK)
			st = ng_err_set(reterr, NG_EPARSE, 0,
					"Secret %.100s/%.100s: data.%.60s: not base64", ns, name,
					keys[i]);
	}
	if (st != NG_OK)
		for (size_t i = 0; i < n; i++) {
			if (ret[i])
				explicit_bzero(ret[i], strlen(ret[i]));
			free(ret[i]);
			ret[i] = NULL;
		}
	ng_arena_destroy(a);
	return st;
}

/* @s percent-encoded for a query value into @out (@cap). NG_ELIMIT when it does not fit. */
static ng_status query_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
			     ch == '~';
		if (k + (plain ? 1 : 3) >= cap)
			return NG_ELIMIT;
		if (plain) {
			out[k++] = (char)ch;
		} else {
			out[k++] = '%';
			out[k++] = hex[ch >> 4];
			out[k++] = hex[ch & 15];
		}
	}
	out[k] = '\0';
	return NG_OK;
}

ng_status kube_each_webhook(struct kube_client *c, const char *selector,
			    ng_status (*fn)(const struct kube_webhook_ref *w, void *ctx), void *ctx,
			    struct ng_err *reterr)
{
	char sel[512];
	if (query_escape(selector, sel, sizeof(sel)) != NG_OK)
		return ng_err_set(reterr, NG_ELIMIT, 0, "label selector too long");
	static const int kinds[] = {KUBE_KIND_VWC, KUBE_KIND_MWC};
	ng_status st = NG_OK;
	for (size_t k = 0; st == NG_OK && k < 2; k++) {
		char path[1024];
		const struct kube_ref ref = {(enum kube_kind)kinds[k], NULL, NULL};
		if ((st = kube_ref_path(&ref, NULL, path, sizeof(path))) != NG_OK)
			return ng_err_set(reterr, st, 0, "no path for webhook configurations");
		size_t len = strlen(path);
		(void)snprintf(path + len, sizeof(path) - len, "?labelSelector=%s", sel);
		struct ng_arena *a;
		cJSON *root;
		if ((st = get_json(c, path, &a, &root, reterr)) != NG_OK) {
			ng_arena_destroy(a);
			return st;
		}
		const cJSON *items = ng_json_get(root, "items");
		for (const cJSON *o = cJSON_IsArray(items) ? items->child : NULL; st == NG_OK && o;
		     o = o->next) {
			const cJSON *meta = ng_json_get(o, "metadata");
			const char *name = ng_json_str(meta, "name"),
				   *rv = ng_json_str(meta, "resourceVersion");
			const cJSON *hooks = ng_json_get(o, "webhooks");
			size_t i = 0;
			for (const cJSON *h = cJSON_IsArray(hooks) ? hooks->child : NULL;
			     st == NG_OK && h && name; h = h->next, i++) {
				const char *ca =
				    ng_json_str(ng_json_get(h, "clientConfig"), "caBundle");
				const struct kube_webhook_ref w = {kinds[k], name, rv ? rv : "", i,
								   ca ? ca : ""};
				st = fn(&w, ctx);
			}
		}
		ng_arena_destroy(a);
	}
	return st;
}
