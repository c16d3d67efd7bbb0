/* The writer side of the cache: pending changes per resource, and publishing them as a new
 * snapshot that shares every unchanged table with the previous one. One thread only. */
#include "kube/internal.h"
#include "kube/kinds.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct delta_entry {
	union kube_record rec;
	void *side;
	bool deleted;
	bool placed; /* publish_one(): written at its old record's place */
};

/* Pending changes of one resource since the last publish. A later change to the same object
 * replaces the earlier one, whose side arena was never published and is freed at once. */
struct delta {
	struct delta_entry *e;
	size_t n, cap;
	struct ng_map map; /* identity key -> entry (pods probe past equal hashes) */
	bool reset;        /* relist: everything not upserted since is gone */
};

struct kube_cache {
	struct kube_pool *pool;
	uint32_t intern_min;       /* see kube_cache_set_intern_min() */
	uint32_t intern_live;      /* strings the pool held after its last rebuild */
	struct kube_stage *stages; /* lists being received: their records hold ids too */
	struct kube_table *cur[KUBE_RES_COUNT];   /* last published; a reference is held */
	struct kube_retire *open[KUBE_RES_COUNT]; /* retire list of cur[r]; a reference is held */
	struct delta d[KUBE_RES_COUNT];
	struct ng_arena *scratch;
	uint64_t generation;
	uint64_t rv_given[KUBE_RES_COUNT]; /* kube_cache_note_rv() */
	uint64_t rv_cur[KUBE_RES_COUNT];   /* as of the last publish of each kind */
};

/* A delta this long came from a burst (or a whole list, with the builder): its array, sized
 * for the largest record kind, is freed rather than kept for the next batch. */
#define DELTA_KEEP 1024

static void delta_clear(struct delta *d)
{
	for (size_t i = 0; i < d->n; i++)
		kube_side_free(d->e[i].side);
	d->n = 0;
	d->reset = false;
	ng_map_finish(&d->map);
	if (d->cap > DELTA_KEEP) {
		free(d->e);
		d->e = NULL;
		d->cap = 0;
	}
}

/* Starts the retire list of a new version of resource @r. The previous list keeps a
 * reference on it, so lists are freed oldest first. */
static ng_status next_retire(struct kube_cache *c, enum kube_resource r)
{
	struct kube_retire *ret = kube_retire_new();
	if (!ret)
		return NG_ENOMEM;
	if (c->open[r]) {
		atomic_fetch_add_explicit(&ret->refs, 1, memory_order_relaxed);
		c->open[r]->next = ret;
		kube_retire_release(c->open[r]);
	}
	c->open[r] = ret;
	return NG_OK;
}

static struct kube_table *empty_table(struct kube_cache *c, enum kube_resource r)
{
	void *recs = malloc(1);
	void **sides = malloc(sizeof(*sides));
	struct kube_table *t =
	    recs && sides ? kube_table_build(r, recs, sides, 0, c->pool->in, c->open[r]) : NULL;
	if (!t) {
		free(recs);
		free(sides);
	}
	return t;
}

struct kube_cache *kube_cache_create(void)
{
	struct kube_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->pool = kube_pool_new();
	c->intern_min = KUBE_INTERN_REBUILD_MIN;
	/* Scratch for decoding one object: its side data is copied out right after. */
	c->scratch = ng_arena_create(SIZE_MAX);
	if (!c->pool || !c->scratch)
		goto fail;
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		if (next_retire(c, (enum kube_resource)r) != NG_OK)
			goto fail;
		c->cur[r] = empty_table(c, (enum kube_resource)r);
		if (!c->cur[r])
			goto fail;
	}
	return c;
fail:
	kube_cache_destroy(c);
	return NULL;
}

/* Adds every side table @t holds to the open retire list of @r (room for t->n + t->npatches
 * reserved by the caller): a patched table's base's and its patches'. */
static void retire_held(struct kube_cache *c, enum kube_resource r, const struct kube_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		kube_retire_add(c->open[r], t->sides[i]);
	for (size_t i = 0; i < t->npatches; i++)
		kube_retire_add(c->open[r], t->patches[i].side);
}

/* Makes @t the current table of @r and @ret (the caller's reference, which the cache keeps)
 * its open retire list: the previous list keeps a reference on it, so lists are freed oldest
 * first. */
static void install(struct kube_cache *c, enum kube_resource r, struct kube_table *t,
		    struct kube_retire *ret)
{
	atomic_fetch_add_explicit(&ret->refs, 1, memory_order_relaxed);
	c->open[r]->next = ret;
	kube_retire_release(c->open[r]);
	c->open[r] = ret;
	kube_table_release(c->cur[r]);
	c->cur[r] = t;
}

void kube_cache_destroy(struct kube_cache *c)
{
	if (!c)
		return;
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		delta_clear(&c->d[r]);
		free(c->d[r].e);
		struct kube_table *t = c->cur[r];
		/* Live records die with the last table that shows them. */
		if (t && c->open[r] && kube_retire_reserve(c->open[r], t->n + t->npatches) == NG_OK)
			retire_held(c, (enum kube_resource)r, t);
		kube_table_release(t);
		kube_retire_release(c->open[r]);
	}
	kube_pool_release(c->pool);
	ng_arena_destroy(c->scratch);
	free(c);
}

struct ng_intern *kube_cache_pool(struct kube_cache *c)
{
	return c->pool->in;
}

void kube_cache_set_intern_min(struct kube_cache *c, uint32_t min)
{
	c->intern_min = min;
}

struct ng_arena *kube_cache_scratch(struct kube_cache *c)
{
	return c->scratch;
}

static long delta_find(const struct delta *d, enum kube_resource r, const void *probe)
{
	uint64_t k = kube_record_key(r, probe);
	uint32_t i;
	for (; ng_map_get(&d->map, k, &i); k++)
		if (kube_record_same(r, &d->e[i].rec, probe))
			return (long)i;
	return -1;
}

static ng_status delta_put(struct delta *d, struct kube_object *obj, bool deleted)
{
	long i = delta_find(d, obj->res, &obj->rec);
	if (i < 0) {
		struct delta_entry *e = ng_array_grow(d->e, &d->cap, d->n, sizeof(*e));
		if (!e)
			goto oom;
		d->e = e;
		uint64_t k = kube_record_key(obj->res, &obj->rec);
		uint32_t j;
		while (ng_map_get(&d->map, k, &j))
			k++;
		if (ng_map_put_grow(&d->map, k, (uint32_t)d->n) != NG_OK)
			goto oom;
		i = (long)d->n++;
	} else {
		kube_side_free(d->e[i].side); /* never published */
	}
	d->e[i].rec = obj->rec;
	d->e[i].side = obj->side;
	d->e[i].deleted = deleted;
	d->e[i].placed = false;
	obj->side = NULL;
	return NG_OK;
oom:
	kube_side_free(obj->side);
	obj->side = NULL;
	return NG_ENOMEM;
}

ng_status kube_cache_upsert(struct kube_cache *c, struct kube_object *obj)
{
	return delta_put(&c->d[obj->res], obj, false);
}

ng_status kube_cache_delete(struct kube_cache *c, struct kube_object *obj)
{
	/* The entry keeps its side arena until publish: a pod's key is its name, stored there. */
	return delta_put(&c->d[obj->res], obj, true);
}

void kube_cache_reset(struct kube_cache *c, enum kube_resource r)
{
	delta_clear(&c->d[r]);
	c->d[r].reset = true;
}

void kube_cache_discard(struct kube_cache *c, enum kube_resource r)
{
	delta_clear(&c->d[r]);
}

bool kube_cache_dirty(const struct kube_cache *c)
{
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		if (c->d[r].n || c->d[r].reset)
			return true;
	return false;
}

/* Writes the records of @r's next table to @recs and @sides (*ret_n of them): @old's, those the
 * delta changed replaced, those it deleted dropped, new ones last. For a kind with a shape
 * (kube_kind_row.same_shape) an update takes its old record's place, so positions stay while
 * nothing comes or goes; returns whether the result keeps @old's shape. */
static bool merge_delta(struct delta *d, enum kube_resource r, const struct kube_table *old,
			char *recs, void **sides, size_t *ret_n)
{
	size_t size = kube_record_size(r);
	bool (*same_shape)(const void *, const void *) = kube_kinds[r].same_shape;
	bool in_place = same_shape && !d->reset, kept = in_place;
	size_t n = 0;
	for (size_t i = 0; !d->reset && i < old->n; i++) {
		const char *rec = (const char *)old->recs + i * size;
		long j = d->n ? delta_find(d, r, rec) : -1;
		if (j < 0) {
			memcpy(recs + n * size, rec, size);
			sides[n++] = old->sides[i];
		} else if (in_place && !d->e[j].deleted) {
			kept = kept && same_shape(rec, &d->e[j].rec);
			d->e[j].placed = true;
			memcpy(recs + n * size, &d->e[j].rec, size);
			sides[n++] = d->e[j].side;
		} else {
			kept = false; /* deleted, or moved to the end below */
		}
	}
	for (size_t i = 0; i < d->n; i++) {
		if (d->e[i].deleted || d->e[i].placed)
			continue;
		kept = false;
		memcpy(recs + n * size, &d->e[i].rec, size);
		sides[n++] = d->e[i].side;
	}
	*ret_n = n;
	return kept;
}

static int cmp_patch_idx(const void *a, const void *b)
{
	uint32_t x = ((const struct kube_patch *)a)->idx, y = ((const struct kube_patch *)b)->idx;
	return x < y ? -1 : x > y;
}

/* The delta of @r as patches (fresh[i] for entry i, sorted by index) when every entry is a
 * later version of a record of @old that differs from it in its version alone; each record is
 * copied into its side, which the patch takes at commit. NG_ENOTFOUND when it is not so. */
static ng_status delta_patches(struct delta *d, enum kube_resource r, const struct kube_table *old,
			       struct kube_patch **ret)
{
	bool (*same_but_version)(const void *, const void *) = kube_kinds[r].same_but_version;
	size_t size = kube_record_size(r);
	struct kube_patch *fresh = malloc(d->n * sizeof(*fresh));
	if (!fresh)
		return NG_ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const struct delta_entry *e = &d->e[i];
		long j = e->deleted || !e->side ? -1 : kube_table_find(old, &e->rec);
		if (j < 0 || !same_but_version(kube_table_rec(old, (size_t)j), &e->rec)) {
			free(fresh);
			return NG_ENOTFOUND;
		}
		fresh[i] = (struct kube_patch){(uint32_t)j, NULL, e->side};
	}
	for (size_t i = 0; i < d->n; i++) {
		void *copy = ng_arena_alloc(d->e[i].side, size);
		if (!copy) {
			free(fresh);
			return NG_ENOMEM;
		}
		fresh[i].rec = memcpy(copy, &d->e[i].rec, size);
	}
	qsort(fresh, d->n, sizeof(*fresh), cmp_patch_idx);
	*ret = fresh;
	return NG_OK;
}

/* Publishes the delta of @r as patches over the current table (struct kube_table) when every
 * change in it is a later version that changed nothing else (kube_kind_row.same_but_version:
 * a node's status heartbeat), and the patches stay under a sixteenth of the table: beyond, the
 * next change copies the table once (materialize()). No other record is copied. NG_ENOTFOUND
 * when the delta is not such. */
static ng_status publish_patches(struct kube_cache *c, enum kube_resource r)
{
	const struct kube_kind_row *k = &kube_kinds[r];
	struct delta *d = &c->d[r];
	struct kube_table *old = c->cur[r];
	if (!k->same_but_version || k->compact || d->reset || !d->n ||
	    old->npatches + d->n > old->n / 16)
		return NG_ENOTFOUND;
	struct kube_patch *fresh = NULL;
	ng_status st = delta_patches(d, r, old, &fresh);
	if (st != NG_OK)
		return st;
	size_t np = 0, a = 0, b = 0;
	struct kube_patch *all = malloc((old->npatches + d->n) * sizeof(*all));
	struct kube_retire *ret = kube_retire_new();
	if (!all || !ret || kube_retire_reserve(c->open[r], old->npatches) != NG_OK)
		goto oom;
	while (a < old->npatches || b < d->n) {
		if (b == d->n || (a < old->npatches && old->patches[a].idx < fresh[b].idx))
			all[np++] = old->patches[a++];
		else if (a < old->npatches && old->patches[a].idx == fresh[b].idx)
			a++; /* superseded: retires below */
		else
			all[np++] = fresh[b++];
	}
	struct kube_table *t = kube_table_build_patched(old, all, np, ret);
	if (!t)
		goto oom;
	/* Committed. A patch superseded retires with the table that showed it. */
	for (size_t i = 0; i < old->npatches; i++)
		if (bsearch(&old->patches[i], fresh, d->n, sizeof(*fresh), cmp_patch_idx))
			kube_retire_add(c->open[r], old->patches[i].side);
	for (size_t i = 0; i < d->n; i++)
		d->e[i].side = NULL; /* the patches' now */
	delta_clear(d);
	free(fresh);
	install(c, r, t, ret);
	return NG_OK;
oom:
	free(fresh);
	free(all);
	kube_retire_release(ret);
	return NG_ENOMEM;
}

/* Replaces the current table of @r, a patched one, with one of its own showing the same records
 * (its base's with the patches written over them): before a change that is not a version. */
static ng_status materialize(struct kube_cache *c, enum kube_resource r)
{
	struct kube_table *old = c->cur[r], *t = NULL;
	size_t size = kube_record_size(r), n = old->n;
	char *recs = malloc((n ? n : 1) * size);
	void **sides = malloc((n ? n : 1) * sizeof(*sides));
	struct kube_retire *ret = kube_retire_new();
	if (recs && sides && ret && kube_retire_reserve(c->open[r], old->npatches) == NG_OK) {
		memcpy(recs, old->recs, n * size);
		memcpy(sides, old->sides, n * sizeof(*sides));
		for (size_t i = 0; i < old->npatches; i++) {
			const struct kube_patch *p = &old->patches[i];
			memcpy(recs + p->idx * size, p->rec, size);
			sides[p->idx] = p->side;
		}
		t = kube_table_build_like(r, recs, sides, n, old, ret);
	}
	if (!t) {
		free(recs);
		free(sides);
		kube_retire_release(ret);
		return NG_ENOMEM;
	}
	/* What the base showed under a patch retires with the patched table. */
	for (size_t i = 0; i < old->npatches; i++)
		kube_retire_add(c->open[r], old->sides[old->patches[i].idx]);
	install(c, r, t, ret);
	return NG_OK;
}

/* Builds the next table of @r from the current one and the delta; on success retires what the
 * new table no longer shows and clears the delta. */
static ng_status publish_one(struct kube_cache *c, enum kube_resource r)
{
	ng_status pst = publish_patches(c, r);
	if (pst != NG_ENOTFOUND)
		return pst;
	if (c->cur[r]->base && materialize(c, r) != NG_OK)
		return NG_ENOMEM;
	struct delta *d = &c->d[r];
	struct kube_table *old = c->cur[r];
	size_t cap = (d->reset ? 0 : old->n) + d->n;
	char *recs = malloc((cap ? cap : 1) * kube_record_size(r));
	void **sides = malloc((cap ? cap : 1) * sizeof(*sides));
	struct kube_retire *ret = kube_retire_new();
	if (!recs || !sides || !ret || kube_retire_reserve(c->open[r], old->n) != NG_OK)
		goto oom;
	size_t n;
	/* The same shape: the old table's identity map and indexes are copied rather than sorted
	 * and hashed again (a kubelet's heartbeat publishes nodes this way; at 100,000 nodes the
	 * label index was most of a publish). */
	struct kube_table *t = merge_delta(d, r, old, recs, sides, &n)
				   ? kube_table_build_like(r, recs, sides, n, old, ret)
				   : kube_table_build(r, recs, sides, n, c->pool->in, ret);
	if (!t)
		goto oom;
	/* Committed. What the old table shows and the new one does not retires with the old. */
	size_t size = kube_record_size(r);
	for (size_t i = 0; i < old->n; i++) {
		const char *rec = (const char *)old->recs + i * size;
		if (d->reset || (d->n && delta_find(d, r, rec) >= 0))
			kube_retire_add(c->open[r], old->sides[i]);
	}
	/* Deleted entries' arenas were never published and go now (delta_clear); the rest are
	 * the new table's. */
	for (size_t i = 0; i < d->n; i++)
		if (!d->e[i].deleted)
			d->e[i].side = NULL;
	delta_clear(d);
	install(c, r, t, ret);
	return NG_OK;
oom:
	for (size_t i = 0; i < d->n; i++)
		d->e[i].placed = false; /* the delta stays for the next try */
	free(recs);
	free(sides);
	kube_retire_release(ret);
	return NG_ENOMEM;
}

unsigned kube_cache_dirty_mask(const struct kube_cache *c)
{
	unsigned mask = 0;
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		if (c->d[r].n || c->d[r].reset)
			mask |= 1u << r;
	return mask;
}

ng_status kube_cache_publish(struct kube_cache *c, struct kube_snapshot **ret_snap)
{
	return kube_cache_publish_some(c, ~0u, ret_snap);
}

/* ---- rebuilding the pool ---- */

struct kube_stage {
	enum kube_resource res;
	struct kube_cache *cache;
	struct kube_stage *next, **prevp; /* on cache->stages */
	char *recs;
	void **sides;
	size_t n, cap;
	struct ng_map by_key; /* identity key -> index, as the table probes it */
};

struct keeper {
	struct ng_intern *to;
	const struct ng_intern *from;
	ng_status st;
};

static void keep_id(void *ctx, uint32_t id)
{
	struct keeper *k = ctx;
	if (k->st == NG_OK)
		k->st = ng_intern_keep(k->to, k->from, id);
}

static void keep_recs(struct keeper *k, enum kube_resource r, const char *recs, size_t n)
{
	size_t size = kube_record_size(r);
	for (size_t i = 0; i < n && k->st == NG_OK; i++)
		kube_record_ids(r, recs + i * size, keep_id, k);
}

/* The pool only grows: label values of pods that come and go (pod-template-hash, job-name)
 * would pile up forever. Once it has doubled since its last rebuild, the strings still in use —
 * by the current tables, the pending changes (a deletion's record is a key that compares ids)
 * and the lists being staged — move to a successor under the same ids, and later snapshots use
 * that. Ids are never given again (records.h), so whoever kept an id of an older snapshot reads
 * its string or "" in a newer pool, never another string. A failure keeps the old pool. */
static void maybe_rebuild_pool(struct kube_cache *c)
{
	const struct ng_intern *from = c->pool->in;
	uint32_t n = ng_intern_count(from);
	if (!c->intern_min || n <= c->intern_min || n / 2 <= c->intern_live)
		return;
	struct kube_pool *p = calloc(1, sizeof(*p));
	struct keeper k = {ng_intern_successor(from), from, NG_OK};
	if (!p || !k.to) {
		free(p);
		ng_intern_destroy(k.to);
		return;
	}
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		enum kube_resource res = (enum kube_resource)r;
		keep_recs(&k, res, c->cur[r]->recs, c->cur[r]->n);
		for (size_t i = 0; i < c->d[r].n && k.st == NG_OK; i++)
			kube_record_ids(res, &c->d[r].e[i].rec, keep_id, &k);
	}
	for (const struct kube_stage *s = c->stages; s; s = s->next)
		keep_recs(&k, s->res, s->recs, s->n);
	/* NG_ENOTFOUND would be a record holding an id the pool never gave: a bug, which must
	 * not cost its strings (debug builds stop on it). */
	assert(k.st != NG_ENOTFOUND && k.st != NG_EINVAL);
	if (k.st != NG_OK) {
		free(p);
		ng_intern_destroy(k.to);
		return;
	}
	atomic_init(&p->refs, 1);
	p->in = k.to;
	kube_pool_release(c->pool);
	c->pool = p;
	c->intern_live = ng_intern_count(p->in);
}

ng_status kube_cache_publish_some(struct kube_cache *c, unsigned mask,
				  struct kube_snapshot **ret_snap)
{
	struct kube_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NG_ENOMEM;
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		if ((mask & (1u << r)) && (c->d[r].n || c->d[r].reset) &&
		    publish_one(c, (enum kube_resource)r) != NG_OK) {
			free(s);
			return NG_ENOMEM;
		}
	}
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		if (mask & (1u << r))
			c->rv_cur[r] = c->rv_given[r];
	maybe_rebuild_pool(c);
	atomic_init(&s->refs, 1);
	s->generation = ++c->generation;
	atomic_fetch_add_explicit(&c->pool->refs, 1, memory_order_relaxed);
	s->pool = c->pool;
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		atomic_fetch_add_explicit(&c->cur[r]->refs, 1, memory_order_relaxed);
		s->t[r] = c->cur[r];
		s->rv[r] = c->rv_cur[r];
	}
	*ret_snap = s;
	return NG_OK;
}

void kube_cache_note_rv(struct kube_cache *c, enum kube_resource r, const char *rv)
{
	c->rv_given[r] = kube_rv_number(rv);
}

/* ---- lists ---- */

struct kube_stage *kube_stage_create(struct kube_cache *c, enum kube_resource r)
{
	struct kube_stage *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->res = r;
	s->cache = c;
	s->next = c->stages;
	if (c->stages)
		c->stages->prevp = &s->next;
	s->prevp = &c->stages;
	c->stages = s;
	return s;
}

void kube_stage_destroy(struct kube_stage *s)
{
	if (!s)
		return;
	*s->prevp = s->next;
	if (s->next)
		s->next->prevp = s->prevp;
	for (size_t i = 0; i < s->n; i++)
		kube_side_free(s->sides[i]);
	free(s->recs);
	free(s->sides);
	ng_map_finish(&s->by_key);
	free(s);
}

size_t kube_stage_count(const struct kube_stage *s)
{
	return s->n;
}

ng_status kube_stage_add(struct kube_stage *s, struct kube_object *obj)
{
	size_t size = kube_record_size(s->res);
	uint64_t k = kube_record_key(s->res, &obj->rec);
	uint32_t i;
	for (; ng_map_get(&s->by_key, k, &i); k++) {
		if (kube_record_same(s->res, s->recs + i * size, &obj->rec)) {
			/* Listed twice (a server that repeats an item): the later one wins. */
			kube_side_free(s->sides[i]);
			memcpy(s->recs + i * size, &obj->rec, size);
			s->sides[i] = obj->side;
			obj->side = NULL;
			return NG_OK;
		}
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char *recs = realloc(s->recs, cap * size);
		if (!recs)
			goto oom;
		s->recs = recs;
		void **sides = realloc(s->sides, cap * sizeof(*sides));
		if (!sides)
			goto oom;
		s->sides = sides;
		s->cap = cap;
	}
	if (ng_map_put_grow(&s->by_key, k, (uint32_t)s->n) != NG_OK)
		goto oom;
	memcpy(s->recs + s->n * size, &obj->rec, size);
	s->sides[s->n++] = obj->side;
	obj->side = NULL;
	return NG_OK;
oom:
	kube_side_free(obj->side);
	obj->side = NULL;
	return NG_ENOMEM;
}

ng_status kube_cache_replace(struct kube_cache *c, struct kube_stage *s)
{
	enum kube_resource r = s->res;
	struct kube_table *old = c->cur[r];
	size_t size = kube_record_size(r);
	struct kube_retire *ret = kube_retire_new();
	if (!ret || kube_retire_reserve(c->open[r], old->n + old->npatches) != NG_OK)
		goto oom;
	/* The arrays grew by doubling: give back the unused end before they become the table's. */
	if (s->n && s->n < s->cap) {
		char *recs = realloc(s->recs, s->n * size);
		void **sides = recs ? realloc(s->sides, s->n * sizeof(*sides)) : NULL;
		if (recs)
			s->recs = recs;
		if (sides)
			s->sides = sides;
		if (recs && sides)
			s->cap = s->n;
	}
	char *recs = s->recs ? s->recs : malloc(1);
	void **sides = s->sides ? s->sides : malloc(sizeof(*sides));
	if (!recs || !sides) {
		if (recs != s->recs)
			free(recs);
		if (sides != s->sides)
			free(sides);
		goto oom;
	}
	s->recs = recs;
	s->sides = sides;
	if (!s->by_key.cap && ng_map_init(&s->by_key, 0) != NG_OK)
		goto oom;
	struct kube_table *t =
	    kube_table_build_keyed(r, s->recs, s->sides, s->n, &s->by_key, c->pool->in, ret);
	if (!t)
		goto oom;
	s->recs = NULL;
	s->sides = NULL;
	s->n = s->cap = 0;
	/* Committed: every object of the old table retires with it. */
	retire_held(c, r, old);
	delta_clear(&c->d[r]);
	install(c, r, t, ret);
	return NG_OK;
oom:
	kube_retire_release(ret);
	return NG_ENOMEM;
}
