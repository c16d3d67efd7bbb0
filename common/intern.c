#include "common/intern.h"

#include "common/limits.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Strings are packed into 64 KiB chunks; a longer string gets a chunk of its own. */
#define CHUNK_BYTES (64u * 1024u)
/* Entries (id -> string) live in blocks of 4096 behind a fixed directory, so the table grows
 * without ever moving an entry a reader may be looking at. 2^15 blocks of 2^12 = 2^27 ids, far
 * beyond the ~1M distinct strings of a 150k-pod cluster. */
#define BLOCK_SHIFT 12u
#define BLOCK_ENTRIES (1u << BLOCK_SHIFT)
#define MAX_BLOCKS (1u << 15)

struct entry {
	const char *s;
	uint32_t len;
	uint32_t hash;
};

struct strchunk {
	struct strchunk *next;
	size_t used, size;
	char data[];
};

/* The hash table readers probe. Growing it builds a new table and swaps the pointer; the old
 * one stays allocated (on the retired list) until the pool is destroyed, so a reader that loaded
 * it keeps probing valid memory. Old tables add up to less than the current one. */
struct slot_table {
	struct slot_table *retired; /* older tables, freed with the pool */
	uint32_t n;                 /* power of two */
	_Atomic uint32_t slots[];   /* id + 1; 0 = empty */
};

struct ng_intern {
	_Atomic(struct entry *) blocks[MAX_BLOCKS];
	_Atomic uint32_t count;
	_Atomic(struct slot_table *) table;
	struct strchunk *chunks;
	size_t bytes;
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

/* Readers reach an entry only through an id the writer published with release ordering (a
 * slot, the count, or a record in a published snapshot), so the entry's fields are visible. */
static const struct entry *entry_at(const struct ng_intern *in, uint32_t id)
{
	struct entry *blk = atomic_load_explicit(
	    &((struct ng_intern *)(uintptr_t)in)->blocks[id >> BLOCK_SHIFT], memory_order_acquire);
	return &blk[id & (BLOCK_ENTRIES - 1)];
}

static struct slot_table *table_new(uint32_t n)
{
	struct slot_table *t = calloc(1, sizeof(*t) + (size_t)n * sizeof(t->slots[0]));
	if (t)
		t->n = n;
	return t;
}

struct ng_intern *ng_intern_create(void)
{
	struct ng_intern *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	struct slot_table *t = table_new(1024);
	if (!t) {
		free(in);
		return NULL;
	}
	atomic_init(&in->table, t);
	in->bytes = sizeof(*in) + sizeof(*t) + t->n * sizeof(t->slots[0]);
	return in;
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
	struct slot_table *t = atomic_load_explicit(&in->table, memory_order_relaxed);
	while (t) {
		struct slot_table *next = t->retired;
		free(t);
		t = next;
	}
	free(in);
}

uint32_t ng_intern_find(const struct ng_intern *in, const char *s, size_t len)
{
	if (!in || len > UINT32_MAX)
		return NG_INTERN_NONE;
	uint32_t h = hash_bytes(s, len);
	struct slot_table *t =
	    atomic_load_explicit(&((struct ng_intern *)(uintptr_t)in)->table, memory_order_acquire);
	uint32_t mask = t->n - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
		if (v == 0)
			return NG_INTERN_NONE;
		const struct entry *e = entry_at(in, v - 1);
		if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
			return v - 1;
	}
}

static ng_status grow_slots(struct ng_intern *in)
{
	struct slot_table *old = atomic_load_explicit(&in->table, memory_order_relaxed);
	uint32_t n = old->n * 2;
	struct slot_table *t = table_new(n);
	if (!t)
		return NG_ENOMEM;
	uint32_t count = atomic_load_explicit(&in->count, memory_order_relaxed);
	for (uint32_t id = 0; id < count; id++) {
		uint32_t i = entry_at(in, id)->hash & (n - 1);
		while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
			i = (i + 1) & (n - 1);
		atomic_store_explicit(&t->slots[i], id + 1, memory_order_relaxed);
	}
	t->retired = old;
	in->bytes += sizeof(*t) + (size_t)n * sizeof(t->slots[0]);
	atomic_store_explicit(&in->table, t, memory_order_release);
	return NG_OK;
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
		in->bytes += sizeof(*c) + size;
	}
	char *p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

ng_status ng_intern_add(struct ng_intern *in, const char *s, size_t len, uint32_t *ret_id)
{
	if (len > UINT32_MAX)
		return NG_ELIMIT;
	uint32_t found = ng_intern_find(in, s, len);
	if (found != NG_INTERN_NONE) {
		*ret_id = found;
		return NG_OK;
	}
	uint32_t id = atomic_load_explicit(&in->count, memory_order_relaxed);
	if (id >= NG_MAX_INTERNED || (id >> BLOCK_SHIFT) >= MAX_BLOCKS)
		return NG_ELIMIT;
	/* Keep the load factor under 1/2. */
	struct slot_table *t = atomic_load_explicit(&in->table, memory_order_relaxed);
	if ((id + 1) * 2 > t->n) {
		if (grow_slots(in) != NG_OK)
			return NG_ENOMEM;
		t = atomic_load_explicit(&in->table, memory_order_relaxed);
	}
	struct entry *blk =
	    atomic_load_explicit(&in->blocks[id >> BLOCK_SHIFT], memory_order_relaxed);
	if (!blk) {
		blk = calloc(BLOCK_ENTRIES, sizeof(*blk));
		if (!blk)
			return NG_ENOMEM;
		atomic_store_explicit(&in->blocks[id >> BLOCK_SHIFT], blk, memory_order_release);
		in->bytes += BLOCK_ENTRIES * sizeof(*blk);
	}
	char *p = store_bytes(in, s, len);
	if (!p)
		return NG_ENOMEM;
	uint32_t h = hash_bytes(s, len);
	struct entry *e = &blk[id & (BLOCK_ENTRIES - 1)];
	e->s = p;
	e->len = (uint32_t)len;
	e->hash = h;
	uint32_t mask = t->n - 1;
	uint32_t i = h & mask;
	while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
		i = (i + 1) & mask;
	/* Release: a reader that sees the slot (or the count) sees the entry. */
	atomic_store_explicit(&t->slots[i], id + 1, memory_order_release);
	atomic_store_explicit(&in->count, id + 1, memory_order_release);
	*ret_id = id;
	return NG_OK;
}

const char *ng_intern_str(const struct ng_intern *in, uint32_t id, size_t *ret_len)
{
	if (!in || id >= atomic_load_explicit(&((struct ng_intern *)(uintptr_t)in)->count,
					      memory_order_acquire)) {
		if (ret_len)
			*ret_len = 0;
		return "";
	}
	const struct entry *e = entry_at(in, id);
	if (ret_len)
		*ret_len = e->len;
	return e->s;
}

uint32_t ng_intern_count(const struct ng_intern *in)
{
	return in ? atomic_load_explicit(&((struct ng_intern *)(uintptr_t)in)->count,
					 memory_order_acquire)
		  : 0;
}

size_t ng_intern_bytes(const struct ng_intern *in)
{
	return in ? in->bytes : 0;
}
