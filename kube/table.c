/* Immutable per-resource tables, their indexes, and the retire chain that frees side data. */
#include "kube/kinds.h"

#include "common/arena.h"
#include "common/intern.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

size_t kube_record_size(enum kube_resource r)
{
	return kube_kinds[r].size;
}

uint64_t kube_pod_key(uint32_t ns, const char *name, size_t len)
{
	/* FNV-1a 64 over the namespace id (little-endian) and the name. */
	const unsigned char nsb[4] = {ns & 0xff, (ns >> 8) & 0xff, (ns >> 16) & 0xff, ns >> 24};
	uint64_t h = ng_fnv1a64(ng_fnv1a64(NG_FNV64_INIT, nsb, sizeof(nsb)), name, len);
	/* NG_MAP_EMPTY is reserved, and probing steps +1: keep clear of the top. */
	return h >> 1;
}

uint64_t kube_record_key(enum kube_resource r, const void *rec)
{
	return kube_kinds[r].key(rec);
}

bool kube_record_same(enum kube_resource r, const void *a, const void *b)
{
	const struct kube_kind_row *k = &kube_kinds[r];
	return k->same ? k->same(a, b) : k->key(a) == k->key(b);
}

/* ---- retire chain ---- */

struct kube_retire *kube_retire_new(void)
{
	struct kube_retire *r = calloc(1, sizeof(*r));
	if (r)
		atomic_init(&r->refs, 1);
	return r;
}

void kube_side_free(void *side)
{
	if ((uintptr_t)side & KUBE_SIDE_BLOCK)
		free((void *)((uintptr_t)side & ~KUBE_SIDE_BLOCK));
	else
		ng_arena_destroy(side);
}

ng_status kube_retire_reserve(struct kube_retire *r, size_t extra)
{
	if (r->cap - r->n >= extra)
		return NG_OK;
	size_t cap = r->cap ? r->cap : 16;
	while (cap - r->n < extra)
		cap *= 2;
	void **p = realloc(r->sides, cap * sizeof(*p));
	if (!p)
		return NG_ENOMEM;
	r->sides = p;
	r->cap = cap;
	return NG_OK;
}

void kube_retire_add(struct kube_retire *r, void *side)
{
	if (side)
		r->sides[r->n++] = side;
}

void kube_retire_release(struct kube_retire *r)
{
	/* Iterative: freeing one list may free a long chain after it. */
	while (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		struct kube_retire *next = r->next;
		for (size_t i = 0; i < r->n; i++)
			kube_side_free(r->sides[i]);
		free(r->sides);
		free(r);
		r = next;
	}
}

/* ---- pool ---- */

struct kube_pool *kube_pool_new(void)
{
	struct kube_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->in = ng_intern_create();
	if (!p->in) {
		free(p);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	return p;
}

void kube_pool_release(struct kube_pool *p)
{
	if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
		ng_intern_destroy(p->in);
		free(p);
	}
}

/* ---- tables ---- */

static void index_finish(struct kube_index *ix)
{
	ng_map_finish(&ix->map);
	free(ix->ranges);
	free(ix->items);
	memset(ix, 0, sizeof(*ix));
}

void kube_table_release(struct kube_table *t)
{
	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (t->base) { /* the arrays and indexes are the base's; the patches' sides retire */
		struct kube_table *base = t->base;
		free(t->patches);
		kube_retire_release(t->retire);
		free(t);
		/* A base has no base of its own: its last reference frees it below. */
		if (atomic_fetch_sub_explicit(&base->refs, 1, memory_order_acq_rel) != 1)
			return;
		t = base;
	}
	free(t->recs);
	free(t->sides);
	ng_map_finish(&t->by_key);
	ng_map_finish(&t->grant);
	index_finish(&t->idx_a);
	index_finish(&t->idx_b);
	kube_retire_release(t->retire);
	free(t);
}

static const void *rec_at(const struct kube_table *t, size_t i)
{
	return (const char *)t->recs + i * kube_record_size(t->res);
}

long kube_table_find(const struct kube_table *t, const void *probe)
{
	uint64_t k = kube_record_key(t->res, probe);
	uint32_t i;
	/* Equal keys of different pods were inserted at key+1, key+2, ... */
	for (; ng_map_get(&t->by_key, k, &i); k++)
		if (kube_record_same(t->res, rec_at(t, i), probe))
			return (long)i;
	return -1;
}

/* Groups @n records by @keys[i] (NG_INTERN_NONE keys are left out). */
static ng_status build_index(struct kube_index *ix, const uint32_t *keys, size_t n)
{
	struct ng_map groups;
	ng_status st = ng_map_init(&groups, n);
	if (st != NG_OK)
		return st;
	size_t nranges = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t r;
		if (keys[i] != NG_INTERN_NONE && !ng_map_get(&groups, keys[i], &r))
			ng_map_put(&groups, keys[i], (uint32_t)nranges++);
	}
	ix->ranges = calloc(nranges ? nranges : 1, sizeof(*ix->ranges));
	ix->items = malloc((n ? n : 1) * sizeof(*ix->items));
	if (!ix->ranges || !ix->items) {
		ng_map_finish(&groups);
		return NG_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t r;
		if (keys[i] != NG_INTERN_NONE && ng_map_get(&groups, keys[i], &r))
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
		if (keys[i] != NG_INTERN_NONE && ng_map_get(&groups, keys[i], &r)) {
			struct kube_range *rg = &ix->ranges[r];
			ix->items[rg->start + rg->count++] = (uint32_t)i;
		}
	}
	ix->map = groups;
	return NG_OK;
}

const uint32_t *kube_index_get(const struct kube_index *ix, uint32_t key, size_t *ret_n)
{
	uint32_t r;
	if (key == NG_INTERN_NONE || !ix->ranges || !ng_map_get(&ix->map, key, &r)) {
		*ret_n = 0;
		return NULL;
	}
	*ret_n = ix->ranges[r].count;
	return ix->items + ix->ranges[r].start;
}

struct pair {
	uint64_t key;
	uint32_t idx;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Nodes by (label key, value): how node selectors of budgets find their pool without scanning
 * every node. */
static ng_status build_label_index(struct kube_table *t)
{
	const struct kube_node *nodes = t->recs;
	size_t npairs = 0;
	for (size_t i = 0; i < t->n; i++)
		npairs += nodes[i].nlabels;
	struct pair *pairs = malloc((npairs ? npairs : 1) * sizeof(*pairs));
	struct kube_index *ix = &t->idx_a;
	if (!pairs)
		return NG_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		for (uint32_t l = 0; l < nodes[i].nlabels; l++)
			pairs[k++] = (struct pair){
			    kube_key2(nodes[i].labels[l].key, nodes[i].labels[l].val), (uint32_t)i};
	if (npairs > 1)
		qsort(pairs, npairs, sizeof(*pairs), cmp_pair);
	size_t nranges = 0;
	for (size_t i = 0; i < npairs; i++)
		if (i == 0 || pairs[i].key != pairs[i - 1].key)
			nranges++;
	ng_status st = ng_map_init(&ix->map, nranges);
	ix->ranges = calloc(nranges ? nranges : 1, sizeof(*ix->ranges));
	ix->items = malloc((npairs ? npairs : 1) * sizeof(*ix->items));
	if (st != NG_OK || !ix->ranges || !ix->items) {
		free(pairs);
		return NG_ENOMEM;
	}
	size_t r = 0;
	for (size_t i = 0; i < npairs; i++) {
		if (i == 0 || pairs[i].key != pairs[i - 1].key) {
			if (i)
				r++;
			ix->ranges[r].start = (uint32_t)i;
			ng_map_put(&ix->map, pairs[i].key, (uint32_t)r);
		}
		ix->ranges[r].count++;
		ix->items[i] = pairs[i].idx;
	}
	free(pairs);
	return NG_OK;
}

static ng_status build_indexes(struct kube_table *t, const struct ng_intern *pool, bool keyed)
{
	ng_status st = keyed ? NG_OK : ng_map_init(&t->by_key, t->n);
	if (st != NG_OK)
		return st;
	for (size_t i = 0; !keyed && i < t->n; i++) {
		const void *rec = rec_at(t, i);
		uint64_t k = kube_record_key(t->res, rec);
		uint32_t j;
		while (ng_map_get(&t->by_key, k, &j))
			k++; /* a different pod with an equal hash (callers never add duplicates) */
		ng_map_put(&t->by_key, k, (uint32_t)i);
	}
	kube_index_fn *index = kube_kinds[t->res].index;
	return index ? index(t, pool) : NG_OK;
}

ng_status kube_index_node_labels(struct kube_table *t, const struct ng_intern *pool)
{
	(void)pool;
	return build_label_index(t);
}

/* The first Granted request by name wins, so answers are stable. */
ng_status kube_index_nd_grants(struct kube_table *t, const struct ng_intern *pool)
{
	const struct kube_nd *nds = t->recs;
	size_t ngranted = 0;
	for (size_t i = 0; i < t->n; i++)
		if (nds[i].state == KUBE_ND_GRANTED)
			ngranted += nds[i].ndisrupted;
	ng_status st = ng_map_init(&t->grant, ngranted);
	if (st != NG_OK)
		return st;
	for (size_t i = 0; i < t->n; i++) {
		const struct kube_nd *d = &nds[i];
		/* A request being deleted no longer covers its nodes. */
		if (d->state != KUBE_ND_GRANTED || d->deleting)
			continue;
		for (size_t k = 0; k < d->ndisrupted; k++) {
			uint32_t prev;
			if (ng_map_get(&t->grant, d->disrupted[k], &prev) &&
			    strcmp(ng_intern_str(pool, nds[prev].name, NULL),
				   ng_intern_str(pool, d->name, NULL)) < 0)
				continue;
			ng_map_put(&t->grant, d->disrupted[k], (uint32_t)i);
		}
	}
	return NG_OK;
}

/* @ix over the uint32 at @offset of each record of @t (a node or namespace id). */
static ng_status index_field(struct kube_table *t, struct kube_index *ix, size_t offset)
{
	uint32_t *keys = calloc(t->n + 1, sizeof(*keys));
	if (!keys)
		return NG_ENOMEM;
	size_t size = kube_kinds[t->res].size;
	for (size_t i = 0; i < t->n; i++)
		memcpy(&keys[i], (const char *)t->recs + i * size + offset, sizeof(keys[i]));
	ng_status st = build_index(ix, keys, t->n);
	free(keys);
	return st;
}

ng_status kube_index_pods(struct kube_table *t, const struct ng_intern *pool)
{
	(void)pool;
	ng_status st = index_field(t, &t->idx_a, offsetof(struct kube_pod, node));
	return st != NG_OK ? st : index_field(t, &t->idx_b, offsetof(struct kube_pod, ns));
}

ng_status kube_index_adbs(struct kube_table *t, const struct ng_intern *pool)
{
	(void)pool;
	return index_field(t, &t->idx_a, offsetof(struct kube_adb, b.ns));
}

ng_status kube_index_pdbs(struct kube_table *t, const struct ng_intern *pool)
{
	(void)pool;
	return index_field(t, &t->idx_a, offsetof(struct kube_pdb, ns));
}

static _Atomic uint64_t serials;

/* A table over @n records, without its indexes yet; NULL on OOM. */
static struct kube_table *new_table(enum kube_resource res, void *recs, void **sides, size_t n)
{
	struct kube_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	atomic_init(&t->refs, 1);
	t->res = res;
	t->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
	t->shape = t->serial;
	t->n = n;
	t->recs = recs;
	t->sides = sides;
	return t;
}

/* Frees @t that failed to be built; its arrays (records, sides) stay the caller's. */
static void drop_unbuilt(struct kube_table *t)
{
	t->recs = NULL;
	t->sides = NULL;
	kube_table_release(t);
}

static struct kube_table *build(enum kube_resource res, void *recs, void **sides, size_t n,
				struct ng_map *by_key, const struct ng_intern *pool,
				struct kube_retire *retire)
{
	struct kube_table *t = new_table(res, recs, sides, n);
	if (!t)
		return NULL;
	if (by_key)
		t->by_key = *by_key;
	if (build_indexes(t, pool, by_key != NULL) != NG_OK) {
		/* A given map stays the caller's too. */
		if (by_key)
			memset(&t->by_key, 0, sizeof(t->by_key));
		drop_unbuilt(t);
		return NULL;
	}
	if (by_key)
		memset(by_key, 0, sizeof(*by_key));
	atomic_fetch_add_explicit(&retire->refs, 1, memory_order_relaxed);
	t->retire = retire;
	return t;
}

static ng_status copy_index(struct kube_index *to, const struct kube_index *from)
{
	*to = (struct kube_index){0};
	if (!from->ranges)
		return NG_OK;
	size_t nranges = from->map.n, nitems = 0;
	for (size_t r = 0; r < nranges; r++)
		nitems += from->ranges[r].count;
	to->ranges = malloc((nranges ? nranges : 1) * sizeof(*to->ranges));
	to->items = malloc((nitems ? nitems : 1) * sizeof(*to->items));
	if (!to->ranges || !to->items || ng_map_copy(&to->map, &from->map) != NG_OK)
		return NG_ENOMEM; /* what was allocated is freed with the table */
	if (nranges)
		memcpy(to->ranges, from->ranges, nranges * sizeof(*to->ranges));
	if (nitems)
		memcpy(to->items, from->items, nitems * sizeof(*to->items));
	return NG_OK;
}

struct kube_table *kube_table_build_like(enum kube_resource res, void *recs, void **sides, size_t n,
					 const struct kube_table *like, struct kube_retire *retire)
{
	struct kube_table *t = new_table(res, recs, sides, n);
	if (!t)
		return NULL;
	if (ng_map_copy(&t->by_key, &like->by_key) != NG_OK ||
	    ng_map_copy(&t->grant, &like->grant) != NG_OK ||
	    copy_index(&t->idx_a, &like->idx_a) != NG_OK ||
	    copy_index(&t->idx_b, &like->idx_b) != NG_OK) {
		drop_unbuilt(t);
		return NULL;
	}
	t->shape = like->shape;
	atomic_fetch_add_explicit(&retire->refs, 1, memory_order_relaxed);
	t->retire = retire;
	return t;
}

struct kube_table *kube_table_build_patched(struct kube_table *like, struct kube_patch *patches,
					    size_t n, struct kube_retire *retire)
{
	struct kube_table *base = like->base ? like->base : like;
	struct kube_table *t = new_table(like->res, base->recs, base->sides, base->n);
	if (!t)
		return NULL;
	t->by_key = base->by_key;
	t->idx_a = base->idx_a;
	t->idx_b = base->idx_b;
	t->grant = base->grant;
	t->shape = like->shape;
	atomic_fetch_add_explicit(&base->refs, 1, memory_order_relaxed);
	t->base = base;
	t->patches = patches;
	t->npatches = n;
	atomic_fetch_add_explicit(&retire->refs, 1, memory_order_relaxed);
	t->retire = retire;
	return t;
}

static int cmp_patch(const void *key, const void *p)
{
	uint32_t i = *(const uint32_t *)key, j = ((const struct kube_patch *)p)->idx;
	return i < j ? -1 : i > j;
}

const void *kube_table_rec(const struct kube_table *t, size_t i)
{
	uint32_t key = (uint32_t)i;
	const struct kube_patch *p =
	    t->npatches ? bsearch(&key, t->patches, t->npatches, sizeof(*p), cmp_patch) : NULL;
	return p ? p->rec : rec_at(t, i);
}

struct kube_table *kube_table_build(enum kube_resource res, void *recs, void **sides, size_t n,
				    const struct ng_intern *pool, struct kube_retire *retire)
{
	return build(res, recs, sides, n, NULL, pool, retire);
}

struct kube_table *kube_table_build_keyed(enum kube_resource res, void *recs, void **sides,
					  size_t n, struct ng_map *by_key,
					  const struct ng_intern *pool, struct kube_retire *retire)
{
	return build(res, recs, sides, n, by_key, pool, retire);
}
