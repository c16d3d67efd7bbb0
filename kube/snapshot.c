/* Snapshots (a pool and one table per resource), their accessors, and building one from
 * `kubectl get -o json` (or `-o yaml`) files. */
#include "kube/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/file.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/yaml.h"
#include "kube/strict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kube_snapshot *kube_snapshot_ref(struct kube_snapshot *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void kube_snapshot_release(struct kube_snapshot *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		kube_table_release(s->t[r]);
	kube_pool_release(s->pool);
	free(s);
}

/* ---- building from JSON: the cache's writer with every object an addition ---- */

struct kube_builder {
	struct kube_cache *cache;
	size_t skipped;
	struct kube_strict *strict; /* owned; NULL: unknown fields are dropped as decoded */
};

struct kube_builder *kube_builder_create(void)
{
	struct kube_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cache = kube_cache_create();
	if (!b->cache) {
		free(b);
		return NULL;
	}
	return b;
}

void kube_builder_destroy(struct kube_builder *b)
{
	if (!b)
		return;
	kube_cache_destroy(b->cache);
	kube_strict_destroy(b->strict);
	free(b);
}

size_t kube_builder_skipped(const struct kube_builder *b)
{
	return b->skipped;
}

static ng_status add_one(struct kube_builder *b, const cJSON *o, const char *where,
			 struct ng_err *reterr)
{
	struct kube_object obj;
	if (b->strict) {
		ng_status sst = kube_strict_check(b->strict, o, where, reterr);
		if (sst != NG_OK)
			return sst;
	}
	ng_status st = kube_decode_object(kube_cache_pool(b->cache), kube_cache_scratch(b->cache),
					  o, where, &obj, reterr);
	if (st == NG_ENOTFOUND) {
		b->skipped++;
		return NG_OK;
	}
	if (st != NG_OK)
		return st;
	st = kube_cache_upsert(b->cache, &obj);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s: out of memory", where);
	return NG_OK;
}

ng_status kube_builder_add_json(struct kube_builder *b, const char *buf, size_t len,
				struct ng_err *reterr)
{
	cJSON *root = NULL;
	struct ng_arena *arena = NULL;
	ng_status st = kube_parse_scratch(buf, len, &arena, &root, reterr);
	if (st != NG_OK)
		return st;
	const char *kind = ng_json_str(root, "kind");
	const cJSON *items = ng_json_get(root, "items");
	size_t klen = kind ? strlen(kind) : 0;
	bool list = kind && klen >= 4 && strcmp(kind + klen - 4, "List") == 0;
	if (list && cJSON_IsArray(items)) {
		size_t i = 0;
		char where[32];
		for (const cJSON *e = items->child; e && st == NG_OK; e = e->next, i++) {
			(void)snprintf(where, sizeof(where), "items[%zu]", i);
			st = add_one(b, e, where, reterr);
		}
	} else if (list) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "%s: items: expected an array", kind);
	} else {
		st = add_one(b, root, "object", reterr);
	}
	ng_arena_destroy(arena);
	return st;
}

ng_status kube_builder_finish(struct kube_builder *b, struct kube_snapshot **ret_snap)
{
	ng_status st = kube_cache_publish(b->cache, ret_snap);
	kube_builder_destroy(b);
	return st;
}

static ng_status load_files(const char *const *paths, size_t npaths, bool strict,
			    struct kube_snapshot **ret_snap, struct ng_err *reterr)
{
	struct kube_builder *b = kube_builder_create();
	if (b && strict && !(b->strict = kube_strict_create())) {
		kube_builder_destroy(b);
		b = NULL;
	}
	if (!b)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	ng_status st = NG_OK;
	for (size_t i = 0; i < npaths && st == NG_OK; i++) {
		char *buf = NULL;
		size_t len = 0;
		st = ng_read_file(paths[i], NG_MAX_SNAPSHOT_BYTES, "snapshot", false, &buf, &len,
				  reterr);
		if (st != NG_OK)
			break;
		struct ng_err e = {0};
		if (!ng_yaml_is_json(buf, len)) {
			/* `kubectl get -o yaml`: converted to the JSON `-o json` would have
			 * printed, under the same cap. */
			struct ng_buf json;
			ng_buf_init(&json, NG_MAX_SNAPSHOT_BYTES);
			st = ng_yaml_to_json(buf, len, "YAML", &json, &e);
			free(buf);
			buf = ng_buf_take(&json, &len);
		}
		if (st == NG_OK)
			st = kube_builder_add_json(b, buf, len, &e);
		free(buf);
		if (st != NG_OK)
			(void)ng_err_set(reterr, st, e.offset, "%s: %s", paths[i], e.msg);
	}
	if (st != NG_OK) {
		kube_builder_destroy(b);
		return st;
	}
	st = kube_builder_finish(b, ret_snap);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "building the cache: %s", ng_status_str(st));
	return NG_OK;
}

ng_status kube_snapshot_load_files(const char *const *paths, size_t npaths,
				   struct kube_snapshot **ret_snap, struct ng_err *reterr)
{
	return load_files(paths, npaths, false, ret_snap, reterr);
}

ng_status kube_snapshot_load_files_strict(const char *const *paths, size_t npaths,
					  struct kube_snapshot **ret_snap, struct ng_err *reterr)
{
	return load_files(paths, npaths, true, ret_snap, reterr);
}

/* ---- accessors ---- */

const struct ng_intern *kube_snapshot_pool(const struct kube_snapshot *s)
{
	return s->pool->in;
}

uint64_t kube_snapshot_generation(const struct kube_snapshot *s)
{
	return s->generation;
}

uint64_t kube_snapshot_rv(const struct kube_snapshot *s, enum kube_resource r)
{
	return s->rv[r];
}

uint64_t kube_rv_number(const char *rv)
{
	uint64_t v = 0;
	if (!rv || !*rv)
		return 0;
	for (const char *c = rv; *c; c++) {
		uint64_t d = (uint64_t)(*c - '0');
		if (*c < '0' || *c > '9' || v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	return v;
}

size_t kube_snapshot_count(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->t[r]->n : 0;
}

uint64_t kube_snapshot_table_serial(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->t[r]->serial : 0;
}

uint64_t kube_snapshot_table_shape(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->t[r]->shape : 0;
}

bool kube_labels_get(const struct kube_label *labels, size_t n, uint32_t key, uint32_t *ret_val)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (labels[mid].key == key) {
			*ret_val = labels[mid].val;
			return true;
		}
		if (labels[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}
