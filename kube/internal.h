/* kube/ internals: shared by the module's files and its unit tests only. */
#ifndef NG_KUBE_INTERNAL_H
#define NG_KUBE_INTERNAL_H

#include "kube/kube.h"

#include <stdatomic.h>

struct ng_arena;

/* An open-addressing hash map from uint64 keys to uint32 values. Built by the writer, then
 * read-only. */
struct kube_map {
	uint64_t *keys; /* KUBE_MAP_EMPTY marks a free slot */
	uint32_t *vals;
	size_t cap; /* power of two, or 0 */
	size_t n;
};
#define KUBE_MAP_EMPTY UINT64_MAX

NG_NODISCARD ng_status kube_map_init(struct kube_map *m, size_t expected);
void kube_map_finish(struct kube_map *m);
/** Inserts or replaces. The map never grows past its initial capacity, sized for @expected. */
void kube_map_put(struct kube_map *m, uint64_t key, uint32_t val);
/** Returns true and writes the value when @key is present. */
bool kube_map_get(const struct kube_map *m, uint64_t key, uint32_t *ret_val);

static inline uint64_t kube_key2(uint32_t a, uint32_t b)
{
	return ((uint64_t)a << 32) | b;
}

struct kube_range {
	uint32_t start, count;
};

/* An index from a key (node id, namespace id) to a run of record indexes. */
struct kube_index {
	struct kube_map map; /* key -> range number */
	struct kube_range *ranges;
	uint32_t *items;
};

struct kube_snapshot {
	atomic_uint refs;
	struct ng_intern *pool;
	struct ng_arena *arena; /* labels, values, terms of every record */
	struct kube_node *nodes;
	struct kube_pod *pods;
	struct kube_pvc *pvcs;
	struct kube_pv *pvs;
	struct kube_nd *nds;
	struct kube_adb *adbs;
	struct kube_ndb *ndbs;
	size_t count[KUBE_RES_COUNT];
	struct kube_map node_by_name, pod_by_key, pvc_by_key, pv_by_name, grant_by_node;
	struct kube_index pods_by_node, pods_by_ns, adbs_by_ns;
};

/* Decoding one object into a builder (decode.c). */
struct kube_builder {
	struct kube_snapshot *s; /* being filled */
	size_t cap[KUBE_RES_COUNT];
	size_t skipped;
};

/**
 * Decodes one Kubernetes object (already parsed) into the builder. @where names the object in
 * messages ("items[3]"). NG_EPARSE/NG_ELIMIT with @reterr on a malformed core object; a
 * malformed budget is kept and marked invalid instead.
 */
NG_NODISCARD ng_status kube_decode_object(struct kube_builder *b, const struct cJSON *obj,
					  const char *where, struct ng_err *reterr);

/**
 * Decodes a metav1.LabelSelector (JSON null or absent: a null selector). Validates operators,
 * value counts and label syntax. @field names it in messages.
 */
NG_NODISCARD ng_status kube_decode_selector(struct ng_intern *pool, struct ng_arena *arena,
					    const struct cJSON *j, const char *field,
					    struct kube_selector *ret_sel, struct ng_err *reterr);

#endif
