#include "kube/internal.h"

#include "common/arena.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	};
	return r < KUBE_RES_COUNT ? names[r] : "unknown";
}

static void index_finish(struct kube_index *ix)
{
	kube_map_finish(&ix->map);
	free(ix->ranges);
	free(ix->items);
	memset(ix, 0, sizeof(*ix));
}

static void snapshot_free(struct kube_snapshot *s)
{
	if (!s)
		return;
	ng_intern_destroy(s->pool);
	ng_arena_destroy(s->arena);
	free(s->nodes);
	free(s->pods);
	free(s->pvcs);
	free(s->pvs);
	free(s->nds);
	free(s->adbs);
	free(s->ndbs);
	kube_map_finish(&s->node_by_name);
	kube_map_finish(&s->pod_by_key);
	kube_map_finish(&s->pvc_by_key);
	kube_map_finish(&s->pv_by_name);
	kube_map_finish(&s->grant_by_node);
	index_finish(&s->pods_by_node);
	index_finish(&s->pods_by_ns);
	index_finish(&s->adbs_by_ns);
	free(s);
}

static struct kube_snapshot *snapshot_new(void)
{
	struct kube_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	s->pool = ng_intern_create();
	/* The cache's side data is bounded by what the API server holds, not by a request;
	 * the arena has no cap of its own. */
	s->arena = ng_arena_create(SIZE_MAX);
	if (!s->pool || !s->arena) {
		snapshot_free(s);
		return NULL;
	}
	return s;
}

struct kube_snapshot *kube_snapshot_ref(struct kube_snapshot *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void kube_snapshot_release(struct kube_snapshot *s)
{
	if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		snapshot_free(s);
}

struct kube_builder *kube_builder_create(void)
{
	struct kube_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->s = snapshot_new();
	if (!b->s) {
		free(b);
		return NULL;
	}
	return b;
}

void kube_builder_destroy(struct kube_builder *b)
{
	if (!b)
		return;
	snapshot_free(b->s);
	free(b);
}

size_t kube_builder_skipped(const struct kube_builder *b)
{
	return b->skipped;
}

ng_status kube_builder_add_json(struct kube_builder *b, const char *buf, size_t len,
				struct ng_err *reterr)
{
	cJSON *root = NULL;
	ng_status st = ng_json_parse(buf, len, NULL, &root, reterr);
	if (st != NG_OK)
		return st;
	const char *kind = ng_json_str(root, "kind");
	const cJSON *items = ng_json_get(root, "items");
	size_t klen = kind ? strlen(kind) : 0;
	if (kind && klen >= 4 && strcmp(kind + klen - 4, "List") == 0 && cJSON_IsArray(items)) {
		size_t i = 0;
		char where[32];
		for (const cJSON *e = items->child; e && st == NG_OK; e = e->next, i++) {
			(void)snprintf(where, sizeof(where), "items[%zu]", i);
			st = kube_decode_object(b, e, where, reterr);
		}
	} else if (kind && klen >= 4 && strcmp(kind + klen - 4, "List") == 0) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "%s: items: expected an array", kind);
	} else {
		st = kube_decode_object(b, root, "object", reterr);
	}
	cJSON_Delete(root);
	return st;
}

/* ---- finishing: drop replaced duplicates, build indexes ---- */

static uint64_t key_of(const struct kube_snapshot *s, enum kube_resource r, size_t i)
{
	switch (r) {
	case KUBE_RES_NODES:
		return s->nodes[i].name;
	case KUBE_RES_PODS:
		return kube_key2(s->pods[i].ns, s->pods[i].name);
	case KUBE_RES_PVCS:
		return kube_key2(s->pvcs[i].ns, s->pvcs[i].name);
	case KUBE_RES_PVS:
		return s->pvs[i].name;
	case KUBE_RES_NDS:
		return s->nds[i].name;
	case KUBE_RES_ADBS:
		return kube_key2(s->adbs[i].b.ns, s->adbs[i].b.name);
	default:
		return s->ndbs[i].b.name;
	}
}

static void *array_of(struct kube_snapshot *s, enum kube_resource r, size_t *ret_size)
{
	switch (r) {
	case KUBE_RES_NODES:
		*ret_size = sizeof(*s->nodes);
		return s->nodes;
	case KUBE_RES_PODS:
		*ret_size = sizeof(*s->pods);
		return s->pods;
	case KUBE_RES_PVCS:
		*ret_size = sizeof(*s->pvcs);
		return s->pvcs;
	case KUBE_RES_PVS:
		*ret_size = sizeof(*s->pvs);
		return s->pvs;
	case KUBE_RES_NDS:
		*ret_size = sizeof(*s->nds);
		return s->nds;
	case KUBE_RES_ADBS:
		*ret_size = sizeof(*s->adbs);
		return s->adbs;
	default:
		*ret_size = sizeof(*s->ndbs);
		return s->ndbs;
	}
}

/* Keeps the last record of each identity (a later file or item replaces an earlier one), in
 * their original order, and fills @m with identity -> index when @m is not NULL. */
static ng_status dedup(struct kube_snapshot *s, enum kube_resource r, struct kube_map *m)
{
	size_t n = s->count[r], size;
	struct kube_map tmp;
	ng_status st = kube_map_init(&tmp, n);
	if (st != NG_OK)
		return st;
	for (size_t i = 0; i < n; i++)
		kube_map_put(&tmp, key_of(s, r, i), (uint32_t)i);
	char *arr = array_of(s, r, &size);
	size_t out = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t last;
		(void)kube_map_get(&tmp, key_of(s, r, i), &last);
		if (last != i)
			continue;
		if (out != i)
			memcpy(arr + out * size, arr + i * size, size);
		out++;
	}
	s->count[r] = out;
	kube_map_finish(&tmp);
	if (!m)
		return NG_OK;
	if ((st = kube_map_init(m, out)) != NG_OK)
		return st;
	for (size_t i = 0; i < out; i++)
		kube_map_put(m, key_of(s, r, i), (uint32_t)i);
	return NG_OK;
}

/* Groups @n records by the key @keys[i] (NG_INTERN_NONE keys are left out). */
static ng_status build_index(struct kube_index *ix, const uint32_t *keys, size_t n)
{
	struct kube_map counts;
	ng_status st = kube_map_init(&counts, n);
	if (st != NG_OK)
		return st;
	size_t nranges = 0;
	for (size_t i = 0; i < n; i++) {
		if (keys[i] == NG_INTERN_NONE)
			continue;
		uint32_t r;
		if (!kube_map_get(&counts, keys[i], &r))
			kube_map_put(&counts, keys[i], (uint32_t)nranges++);
	}
	ix->ranges = calloc(nranges ? nranges : 1, sizeof(*ix->ranges));
	ix->items = malloc((n ? n : 1) * sizeof(*ix->items));
	if (!ix->ranges || !ix->items) {
		kube_map_finish(&counts);
		return NG_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t r;
		if (keys[i] != NG_INTERN_NONE && kube_map_get(&counts, keys[i], &r))
			ix->ranges[r].count++;
	}
	uint32_t pos = 0;
	for (size_t r = 0; r < nranges; r++) {
		ix->ranges[r].start = pos;
		pos += ix->ranges[r].count;
		ix->ranges[r].count = 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t r;
		if (keys[i] != NG_INTERN_NONE && kube_map_get(&counts, keys[i], &r)) {
			struct kube_range *rg = &ix->ranges[r];
			ix->items[rg->start + rg->count++] = (uint32_t)i;
		}
	}
	ix->map = counts; /* key -> range number */
	return NG_OK;
}

static const uint32_t *index_get(const struct kube_index *ix, uint32_t key, size_t *ret_n)
{
	uint32_t r;
	if (key == NG_INTERN_NONE || !kube_map_get(&ix->map, key, &r)) {
		*ret_n = 0;
		return NULL;
	}
	*ret_n = ix->ranges[r].count;
	return ix->items + ix->ranges[r].start;
}

ng_status kube_builder_finish(struct kube_builder *b, struct kube_snapshot **ret_snap)
{
	struct kube_snapshot *s = b->s;
	ng_status st = NG_OK;
	uint32_t *keys = NULL;
	if ((st = dedup(s, KUBE_RES_NODES, &s->node_by_name)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_PODS, &s->pod_by_key)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_PVCS, &s->pvc_by_key)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_PVS, &s->pv_by_name)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_NDS, NULL)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_ADBS, NULL)) != NG_OK ||
	    (st = dedup(s, KUBE_RES_NDBS, NULL)) != NG_OK)
		goto out;
	size_t npods = s->count[KUBE_RES_PODS], nadbs = s->count[KUBE_RES_ADBS];
	keys = calloc((npods > nadbs ? npods : nadbs) + 1, sizeof(uint32_t));
	if (!keys) {
		st = NG_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < npods; i++)
		keys[i] = s->pods[i].node;
	st = build_index(&s->pods_by_node, keys, npods);
	for (size_t i = 0; st == NG_OK && i < npods; i++)
		keys[i] = s->pods[i].ns;
	if (st == NG_OK)
		st = build_index(&s->pods_by_ns, keys, npods);
	for (size_t i = 0; st == NG_OK && i < nadbs; i++)
		keys[i] = s->adbs[i].b.ns;
	if (st == NG_OK)
		st = build_index(&s->adbs_by_ns, keys, nadbs);
	free(keys);
	if (st != NG_OK)
		goto out;
	/* Granted nodes: the first Granted request by name wins, so answers are stable. */
	size_t nnds = s->count[KUBE_RES_NDS];
	size_t ngranted = 0;
	for (size_t i = 0; i < nnds; i++)
		if (s->nds[i].state == KUBE_ND_GRANTED)
			ngranted += s->nds[i].ndisrupted;
	if ((st = kube_map_init(&s->grant_by_node, ngranted)) != NG_OK)
		goto out;
	for (size_t i = 0; i < nnds; i++) {
		const struct kube_nd *d = &s->nds[i];
		if (d->state != KUBE_ND_GRANTED)
			continue;
		for (size_t k = 0; k < d->ndisrupted; k++) {
			uint32_t prev;
			if (kube_map_get(&s->grant_by_node, d->disrupted[k], &prev) &&
			    strcmp(ng_intern_str(s->pool, s->nds[prev].name, NULL),
				   ng_intern_str(s->pool, d->name, NULL)) < 0)
				continue;
			kube_map_put(&s->grant_by_node, d->disrupted[k], (uint32_t)i);
		}
	}
out:
	if (st != NG_OK) {
		kube_builder_destroy(b);
		return st;
	}
	*ret_snap = s;
	free(b);
	return NG_OK;
}

static ng_status read_file(const char *path, char **ret_buf, size_t *ret_len, struct ng_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ng_err_set(err, NG_EIO, 0, "%s: %s", path, strerror(errno));
	struct stat sb;
	ng_status st = NG_OK;
	char *buf = NULL;
	if (fstat(fd, &sb) != 0) {
		st = ng_err_set(err, NG_EIO, 0, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		st = ng_err_set(err, NG_EINVAL, 0, "%s: not a regular file", path);
		goto out;
	}
	if ((unsigned long long)sb.st_size > NG_MAX_SNAPSHOT_BYTES) {
		st = ng_err_set(err, NG_ELIMIT, 0, "%s: larger than %llu bytes", path,
				NG_MAX_SNAPSHOT_BYTES);
		goto out;
	}
	size_t len = (size_t)sb.st_size;
	buf = malloc(len + 1);
	if (!buf) {
		st = ng_err_set(err, NG_ENOMEM, 0, "%s: out of memory", path);
		goto out;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			st = ng_err_set(err, NG_EIO, 0, "%s: short read", path);
			goto out;
		}
		got += (size_t)r;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(buf);
	(void)close(fd);
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
		st = read_file(paths[i], &buf, &len, reterr);
		if (st != NG_OK)
			break;
		struct ng_err e = {0};
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
	return s->pool;
}

size_t kube_snapshot_count(const struct kube_snapshot *s, enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? s->count[r] : 0;
}

#define ACCESSOR(fn, type, field, res)                                                             \
	const type *fn(const struct kube_snapshot *s, size_t *ret_n)                               \
	{                                                                                          \
		*ret_n = s->count[res];                                                            \
		return s->field;                                                                   \
	}
ACCESSOR(kube_snapshot_nodes, struct kube_node, nodes, KUBE_RES_NODES)
ACCESSOR(kube_snapshot_pods, struct kube_pod, pods, KUBE_RES_PODS)
ACCESSOR(kube_snapshot_pvcs, struct kube_pvc, pvcs, KUBE_RES_PVCS)
ACCESSOR(kube_snapshot_pvs, struct kube_pv, pvs, KUBE_RES_PVS)
ACCESSOR(kube_snapshot_nds, struct kube_nd, nds, KUBE_RES_NDS)
ACCESSOR(kube_snapshot_adbs, struct kube_adb, adbs, KUBE_RES_ADBS)
ACCESSOR(kube_snapshot_ndbs, struct kube_ndb, ndbs, KUBE_RES_NDBS)
#undef ACCESSOR

const struct kube_node *kube_snapshot_find_node(const struct kube_snapshot *s, uint32_t name)
{
	uint32_t i;
	return kube_map_get(&s->node_by_name, name, &i) ? &s->nodes[i] : NULL;
}

const struct kube_pod *kube_snapshot_find_pod(const struct kube_snapshot *s, uint32_t ns,
					      uint32_t name)
{
	uint32_t i;
	if (ns == NG_INTERN_NONE || name == NG_INTERN_NONE)
		return NULL;
	return kube_map_get(&s->pod_by_key, kube_key2(ns, name), &i) ? &s->pods[i] : NULL;
}

const struct kube_pod *kube_snapshot_find_pod_str(const struct kube_snapshot *s, const char *ns,
						  size_t ns_len, const char *name, size_t name_len)
{
	return kube_snapshot_find_pod(s, ng_intern_find(s->pool, ns, ns_len),
				      ng_intern_find(s->pool, name, name_len));
}

const struct kube_pvc *kube_snapshot_find_pvc(const struct kube_snapshot *s, uint32_t ns,
					      uint32_t name)
{
	uint32_t i;
	if (ns == NG_INTERN_NONE || name == NG_INTERN_NONE)
		return NULL;
	return kube_map_get(&s->pvc_by_key, kube_key2(ns, name), &i) ? &s->pvcs[i] : NULL;
}

const struct kube_pv *kube_snapshot_find_pv(const struct kube_snapshot *s, uint32_t name)
{
	uint32_t i;
	return kube_map_get(&s->pv_by_name, name, &i) ? &s->pvs[i] : NULL;
}

const uint32_t *kube_snapshot_pods_on_node(const struct kube_snapshot *s, uint32_t node,
					   size_t *ret_n)
{
	return index_get(&s->pods_by_node, node, ret_n);
}

const uint32_t *kube_snapshot_pods_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return index_get(&s->pods_by_ns, ns, ret_n);
}

const uint32_t *kube_snapshot_adbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return index_get(&s->adbs_by_ns, ns, ret_n);
}

const struct kube_nd *kube_snapshot_node_grant(const struct kube_snapshot *s, uint32_t node)
{
	uint32_t i;
	return kube_map_get(&s->grant_by_node, node, &i) ? &s->nds[i] : NULL;
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
