#include "common/intern.h"

#include "common/limits.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Strings are packed into 64 KiB chunks; a longer string gets a chunk of its own. */
#define CHUNK_BYTES (64u * 1024u)
/* Entries live in blocks of 4096 behind a fixed directory, so the array grows without ever
 * moving an entry a reader may be looking at. 2^15 blocks of 2^12 = 2^27 strings in one pool,
 * far beyond the ~1M distinct strings of a 150k-pod cluster (a rebuilt pool holds only the
 * strings still in use, plus what was added since). */
#define BLOCK_SHIFT 12u
#define BLOCK_ENTRIES (1u << BLOCK_SHIFT)
#define MAX_BLOCKS (1u << 15)

/* Entry i of a pool is either carried over from the pool it succeeds (i < kept, any id below
 * base) or added here (id = base + i - kept): new ids are found by arithmetic, carried ones
 * through the by_id table. */
struct entry {
	const char *s;
	uint32_t len;
	uint32_t hash;
	uint32_t id;
};

struct strchunk {
	struct strchunk *next;
	size_t used, size;
	char data[];
};

/* A hash table readers probe: slots hold an entry index + 1 (0 = empty). Growing one builds a
 * new table and swaps the pointer; the old one stays allocated (on the retired list) until the
 * pool is destroyed, so a reader that loaded it keeps probing valid memory. Old tables add up
 * to less than the current one. */
struct slot_table {
	struct slot_table *retired; /* older tables, freed with the pool */
	uint32_t n;                 /* power of two */
	_Atomic uint32_t slots[];
};

struct ng_intern {
	_Atomic(struct entry *) blocks[MAX_BLOCKS];
	_Atomic uint32_t count;              /* entries */
	_Atomic uint32_t kept;               /* entries carried over (the first ones) */
	uint32_t base;                       /* first id this pool gives; set before sharing */
	uint32_t rebuilds;                   /* pools before this one in its line */
	_Atomic(struct slot_table *) by_str; /* string hash -> entry */
	_Atomic(struct slot_table *) by_id;  /* carried id -> entry */
	struct strchunk *chunks;
	_Atomic size_t bytes;
};

static uint32_t hash_bytes(const char *s, size_t len)
{
	/* FNV-1a: short keys, no allocation, good enough spread with a power-of-two table. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t hash_id(uint32_t id)
{
	/* Fibonacci hashing: carried ids come in runs, which an identity hash would pile up. */
	return id * 2654435769u;
}

static struct ng_intern *mut(const struct ng_intern *in)
{
	return (struct ng_intern *)(uintptr_t)in;
}

/* Readers reach an entry only through an index the writer published with release ordering (a
 * slot, or the count), so the entry's fields are visible. */
static struct entry *entry_at(const struct ng_intern *in, uint32_t i)
{
	struct entry *blk =
	    atomic_load_explicit(&mut(in)->blocks[i >> BLOCK_SHIFT], memory_order_acquire);
	return &blk[i & (BLOCK_ENTRIES - 1)];
}

static struct slot_table *table_new(uint32_t n)
{
	struct slot_table *t = calloc(1, sizeof(*t) + (size_t)n * sizeof(t->slots[0]));
	if (t)
		t->n = n;
	return t;
}

static void add_bytes(struct ng_intern *in, size_t n)
{
	atomic_fetch_add_explicit(&in->bytes, n, memory_order_relaxed);
}

struct ng_intern *ng_intern_create(void)
{
	struct ng_intern *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	struct slot_table *s = table_new(1024);
	struct slot_table *d = table_new(16);
	if (!s || !d) {
		free(s);
		free(d);
		free(in);
		return NULL;
	}
	atomic_init(&in->by_str, s);
	atomic_init(&in->by_id, d);
	atomic_init(&in->bytes, sizeof(*in) + sizeof(*s) + s->n * sizeof(s->slots[0]) + sizeof(*d) +
				    d->n * sizeof(d->slots[0]));
	return in;
}

static void tables_free(struct slot_table *t)
{
	while (t) {
		struct slot_table *next = t->retired;
		free(t);
		t = next;
	}
}

void ng_intern_destroy(struct ng_intern *in)
{
	if (!in)
		return;
	for (uint32_t b = 0; b < MAX_BLOCKS; b++) {
		struct entry *blk = atomic_load_explicit(&in->blocks[b], memory_order_relaxed);
		if (!blk)
			break;
		free(blk);
	}
	struct strchunk *c = in->chunks;
	while (c) {
		struct strchunk *n = c->next;
		free(c);
		c = n;
	}
	tables_free(atomic_load_explicit(&in->by_str, memory_order_relaxed));
	tables_free(atomic_load_explicit(&in->by_id, memory_order_relaxed));
	free(in);
}

/* Index of the entry with string @s (hash @h) or UINT32_MAX. */
static uint32_t find_str(const struct ng_intern *in, const char *s, size_t len, uint32_t h)
{
	struct slot_table *t = atomic_load_explicit(&mut(in)->by_str, memory_order_acquire);
	uint32_t mask = t->n - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
		if (v == 0)
			return UINT32_MAX;
		const struct entry *e = entry_at(in, v - 1);
		if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
			return v - 1;
	}
}

/* Index of the entry of carried id @id or UINT32_MAX. */
static uint32_t find_kept(const struct ng_intern *in, uint32_t id)
{
	struct slot_table *t = atomic_load_explicit(&mut(in)->by_id, memory_order_acquire);
	uint32_t mask = t->n - 1;
	for (uint32_t i = hash_id(id) & mask;; i = (i + 1) & mask) {
		uint32_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
		if (v == 0)
			return UINT32_MAX;
		if (entry_at(in, v - 1)->id == id)
			return v - 1;
	}
}

/* Index of the entry of @id or UINT32_MAX when this pool does not hold it. */
static uint32_t find_id(const struct ng_intern *in, uint32_t id)
{
	if (id == NG_INTERN_NONE)
		return UINT32_MAX;
	uint32_t count = atomic_load_explicit(&mut(in)->count, memory_order_acquire);
	if (id < in->base)
		return find_kept(in, id);
	uint64_t i =
	    (uint64_t)id - in->base + atomic_load_explicit(&mut(in)->kept, memory_order_relaxed);
	return i < count ? (uint32_t)i : UINT32_MAX;
}

uint32_t ng_intern_find(const struct ng_intern *in, const char *s, size_t len)
{
	if (!in || len > UINT32_MAX)
		return NG_INTERN_NONE;
	uint32_t i = find_str(in, s, len, hash_bytes(s, len));
	return i == UINT32_MAX ? NG_INTERN_NONE : entry_at(in, i)->id;
}

/* Doubles a table: by_str holds every entry, by_id the carried ones (the first kept). */
static ng_status grow(struct ng_intern *in, _Atomic(struct slot_table *) *which, bool by_id)
{
	struct slot_table *old = atomic_load_explicit(which, memory_order_relaxed);
	uint32_t n = old->n * 2;
	struct slot_table *t = table_new(n);
	if (!t)
		return NG_ENOMEM;
	uint32_t count = atomic_load_explicit(&in->count, memory_order_relaxed);
	if (by_id)
		count = atomic_load_explicit(&in->kept, memory_order_relaxed);
	for (uint32_t k = 0; k < count; k++) {
		const struct entry *e = entry_at(in, k);
		uint32_t i = (by_id ? hash_id(e->id) : e->hash) & (n - 1);
		while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
			i = (i + 1) & (n - 1);
		atomic_store_explicit(&t->slots[i], k + 1, memory_order_relaxed);
	}
	t->retired = old;
	add_bytes(in, sizeof(*t) + (size_t)n * sizeof(t->slots[0]));
	atomic_store_explicit(which, t, memory_order_release);
	return NG_OK;
}

static void slot_put(struct slot_table *t, uint32_t h, uint32_t k)
{
	uint32_t mask = t->n - 1;
	uint32_t i = h & mask;
	while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
		i = (i + 1) & mask;
	/* Release: a reader that sees the slot sees the entry. */
	atomic_store_explicit(&t->slots[i], k + 1, memory_order_release);
}

static char *store_bytes(struct ng_intern *in, const char *s, size_t len)
{
	struct strchunk *c = in->chunks;
	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > CHUNK_BYTES ? len + 1 : CHUNK_BYTES;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		/* A dedicated chunk for a long string goes behind the current one so the
		 * current chunk's free space stays usable. */
		if (in->chunks && size > CHUNK_BYTES) {
			c->next = in->chunks->next;
			in->chunks->next = c;
		} else {
			c->next = in->chunks;
			in->chunks = c;
		}
		add_bytes(in, sizeof(*c) + size);
	}
	char *p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

/* Appends an entry for (@s, @len, @h) under @id; the caller publishes it in the tables and the
 * count. Returns its index or UINT32_MAX on OOM or when the pool is full. */
static uint32_t append(struct ng_intern *in, const char *s, size_t len, uint32_t h, uint32_t id)
{
	uint32_t k = atomic_load_explicit(&in->count, memory_order_relaxed);
	if ((k >> BLOCK_SHIFT) >= MAX_BLOCKS)
		return UINT32_MAX;
	/* Keep the load factor under 1/2. */
	struct slot_table *t = atomic_load_explicit(&in->by_str, memory_order_relaxed);
	if ((k + 1) * 2 > t->n && grow(in, &in->by_str, false) != NG_OK)
		return UINT32_MAX;
	struct entry *blk =
	    atomic_load_explicit(&in->blocks[k >> BLOCK_SHIFT], memory_order_relaxed);
	if (!blk) {
		blk = calloc(BLOCK_ENTRIES, sizeof(*blk));
		if (!blk)
			return UINT32_MAX;
		atomic_store_explicit(&in->blocks[k >> BLOCK_SHIFT], blk, memory_order_release);
		add_bytes(in, BLOCK_ENTRIES * sizeof(*blk));
	}
	char *p = store_bytes(in, s, len);
	if (!p)
		return UINT32_MAX;
	struct entry *e = &blk[k & (BLOCK_ENTRIES - 1)];
	e->s = p;
	e->len = (uint32_t)len;
	e->hash = h;
	e->id = id;
	return k;
}

ng_status ng_intern_add(struct ng_intern *in, const char *s, size_t len, uint32_t *ret_id)
{
	if (len > UINT32_MAX)
		return NG_ELIMIT;
	uint32_t h = hash_bytes(s, len);
	uint32_t found = find_str(in, s, len, h);
	if (found != UINT32_MAX) {
		*ret_id = entry_at(in, found)->id;
		return NG_OK;
	}
	uint32_t k = atomic_load_explicit(&in->count, memory_order_relaxed);
	uint64_t id =
	    (uint64_t)in->base + k - atomic_load_explicit(&in->kept, memory_order_relaxed);
	if (id >= NG_MAX_INTERNED || (k >> BLOCK_SHIFT) >= MAX_BLOCKS)
		return NG_ELIMIT;
	if (append(in, s, len, h, (uint32_t)id) == UINT32_MAX)
		return NG_ENOMEM;
	slot_put(atomic_load_explicit(&in->by_str, memory_order_relaxed), h, k);
	/* Release: a reader that sees the count sees the entry. */
	atomic_store_explicit(&in->count, k + 1, memory_order_release);
	*ret_id = (uint32_t)id;
	return NG_OK;
}

struct ng_intern *ng_intern_successor(const struct ng_intern *prev)
{
	struct ng_intern *in = ng_intern_create();
	if (!in)
		return NULL;
	uint32_t count = atomic_load_explicit(&mut(prev)->count, memory_order_relaxed);
	in->base =
	    prev->base + count - atomic_load_explicit(&mut(prev)->kept, memory_order_relaxed);
	in->rebuilds = prev->rebuilds + 1;
	return in;
}

ng_status ng_intern_keep(struct ng_intern *in, const struct ng_intern *prev, uint32_t id)
{
	if (id == NG_INTERN_NONE)
		return NG_OK;
	uint32_t k = atomic_load_explicit(&in->count, memory_order_relaxed);
	if (id >= in->base || k != atomic_load_explicit(&in->kept, memory_order_relaxed))
		return NG_EINVAL; /* not an id of @prev, or strings were added already */
	if (find_kept(in, id) != UINT32_MAX)
		return NG_OK;
	uint32_t from = find_id(prev, id);
	if (from == UINT32_MAX)
		return NG_ENOTFOUND;
	const struct entry *pe = entry_at(prev, from);
	struct slot_table *t = atomic_load_explicit(&in->by_id, memory_order_relaxed);
	if ((k + 1) * 2 > t->n && grow(in, &in->by_id, true) != NG_OK)
		return NG_ENOMEM;
	if (append(in, pe->s, pe->len, pe->hash, id) == UINT32_MAX)
		return k >> BLOCK_SHIFT >= MAX_BLOCKS ? NG_ELIMIT : NG_ENOMEM;
	slot_put(atomic_load_explicit(&in->by_id, memory_order_relaxed), hash_id(id), k);
	slot_put(atomic_load_explicit(&in->by_str, memory_order_relaxed), pe->hash, k);
	atomic_store_explicit(&in->kept, k + 1, memory_order_relaxed);
	atomic_store_explicit(&in->count, k + 1, memory_order_release);
	return NG_OK;
}

const char *ng_intern_str(const struct ng_intern *in, uint32_t id, size_t *ret_len)
{
	uint32_t i = in ? find_id(in, id) : UINT32_MAX;
	if (i == UINT32_MAX) {
		if (ret_len)
			*ret_len = 0;
		return "";
	}
	const struct entry *e = entry_at(in, i);
	if (ret_len)
		*ret_len = e->len;
	return e->s;
}

bool ng_intern_has(const struct ng_intern *in, uint32_t id)
{
	return in && find_id(in, id) != UINT32_MAX;
}

uint32_t ng_intern_count(const struct ng_intern *in)
{
	return in ? atomic_load_explicit(&mut(in)->count, memory_order_acquire) : 0;
}

uint32_t ng_intern_next_id(const struct ng_intern *in)
{
	if (!in)
		return 0;
	uint32_t count = atomic_load_explicit(&mut(in)->count, memory_order_acquire);
	return in->base + count - atomic_load_explicit(&mut(in)->kept, memory_order_relaxed);
}

uint32_t ng_intern_rebuilds(const struct ng_intern *in)
{
	return in ? in->rebuilds : 0;
}

size_t ng_intern_bytes(const struct ng_intern *in)
{
	return in ? atomic_load_explicit(&mut(in)->bytes, memory_order_relaxed) : 0;
}
