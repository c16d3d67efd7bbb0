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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kube_resource_name(enum kube_resource r)
{
	static const char *const names[KUBE_RES_COUNT] = {
	    "nodes",
	    "pods",
	    "persistentvolumeclaims",
	    "persistentvolumes",
	    "nodedisruptions",
	    "applicationdisruptionbudgets",
	    "nodedisruptionbudgets",
	    "nodegateconfigs",
	    "nodedisruptiontemplates",
	    "noderemediations",
	    "poddisruptionbudgets",
	};
	return r < KUBE_RES_COUNT ? names[r] : "unknown";
}

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

ng_status kube_snapshot_load_files(const char *const *paths, size_t npaths,
				   struct kube_snapshot **ret_snap, struct ng_err *reterr)
{
	struct kube_builder *b = kube_builder_create();
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

/* ---- accessors ---- */

const struct ng_intern *kube_snapshot_pool(const struct kube_snapshot *s)
{
	return s->pool->in;
}

uint64_t kube_snapshot_generation(const struct kube_snapshot *s)
{
	return s->generation;
}

size_t kube_snapshot_count(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->t[r]->n : 0;
}

#define ACCESSOR(fn, type, res)                                                                    \
	const type *fn(const struct kube_snapshot *s, size_t *ret_n)                               \
	{                                                                                          \
		*ret_n = s->t[res]->n;                                                             \
		return s->t[res]->recs;                                                            \
	}
ACCESSOR(kube_snapshot_nodes, struct kube_node, KUBE_RES_NODES)
ACCESSOR(kube_snapshot_pods, struct kube_pod, KUBE_RES_PODS)
ACCESSOR(kube_snapshot_pvcs, struct kube_pvc, KUBE_RES_PVCS)
ACCESSOR(kube_snapshot_pvs, struct kube_pv, KUBE_RES_PVS)
ACCESSOR(kube_snapshot_nds, struct kube_nd, KUBE_RES_NDS)
ACCESSOR(kube_snapshot_adbs, struct kube_adb, KUBE_RES_ADBS)
ACCESSOR(kube_snapshot_ndbs, struct kube_ndb, KUBE_RES_NDBS)
ACCESSOR(kube_snapshot_ngcs, struct kube_ngc, KUBE_RES_NGCS)
ACCESSOR(kube_snapshot_ndts, struct kube_ndt, KUBE_RES_NDTS)
ACCESSOR(kube_snapshot_nrems, struct kube_nrem, KUBE_RES_NREMS)
ACCESSOR(kube_snapshot_pdbs, struct kube_pdb, KUBE_RES_PDBS)
#undef ACCESSOR

static const void *find_by_key(const struct kube_table *t, uint64_t key)
{
	uint32_t i;
	return ng_map_get(&t->by_key, key, &i)
		   ? (const char *)t->recs + i * kube_record_size(t->res)
		   : NULL;
}

const struct kube_ngc *kube_snapshot_config(const struct kube_snapshot *s)
{
	uint32_t id = ng_intern_find(s->pool->in, "default", 7);
	return id == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NGCS], id);
}

uint64_t kube_snapshot_table_serial(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->t[r]->serial : 0;
}

const struct kube_ndt *kube_snapshot_find_ndt(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NDTS], name);
}

const uint32_t *kube_snapshot_nodes_with_label(const struct kube_snapshot *s, uint32_t key,
					       uint32_t val, size_t *ret_n)
{
	const struct kube_index *ix = &s->t[KUBE_RES_NODES]->idx_a;
	uint32_t r;
	if (key == NG_INTERN_NONE || val == NG_INTERN_NONE || !ix->ranges ||
	    !ng_map_get(&ix->map, kube_key2(key, val), &r)) {
		*ret_n = 0;
		return NULL;
	}
	*ret_n = ix->ranges[r].count;
	return ix->items + ix->ranges[r].start;
}

const struct kube_node *kube_snapshot_find_node(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NODES], name);
}

const struct kube_pod *kube_snapshot_find_pod_str(const struct kube_snapshot *s, const char *ns,
						  size_t ns_len, const char *name, size_t name_len)
{
	uint32_t ns_id = ng_intern_find(s->pool->in, ns, ns_len);
	if (ns_id == NG_INTERN_NONE)
		return NULL;
	const struct kube_table *t = s->t[KUBE_RES_PODS];
	const struct kube_pod *pods = t->recs;
	uint32_t i;
	for (uint64_t k = kube_pod_key(ns_id, name, name_len); ng_map_get(&t->by_key, k, &i); k++)
		if (pods[i].ns == ns_id && strncmp(pods[i].name, name, name_len) == 0 &&
		    pods[i].name[name_len] == '\0')
			return &pods[i];
	return NULL;
}

const struct kube_pvc *kube_snapshot_find_pvc(const struct kube_snapshot *s, uint32_t ns,
					      uint32_t name)
{
	if (ns == NG_INTERN_NONE || name == NG_INTERN_NONE)
		return NULL;
	return find_by_key(s->t[KUBE_RES_PVCS], kube_key2(ns, name));
}

const struct kube_pv *kube_snapshot_find_pv(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_PVS], name);
}

const uint32_t *kube_snapshot_pods_on_node(const struct kube_snapshot *s, uint32_t node,
					   size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PODS]->idx_a, node, ret_n);
}

const uint32_t *kube_snapshot_pods_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PODS]->idx_b, ns, ret_n);
}

const uint32_t *kube_snapshot_adbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_ADBS]->idx_a, ns, ret_n);
}

const uint32_t *kube_snapshot_pdbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PDBS]->idx_a, ns, ret_n);
}

const struct kube_nd *kube_snapshot_node_grant(const struct kube_snapshot *s, uint32_t node)
{
	const struct kube_table *t = s->t[KUBE_RES_NDS];
	uint32_t i;
	return ng_map_get(&t->grant, node, &i) ? &((const struct kube_nd *)t->recs)[i] : NULL;
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
