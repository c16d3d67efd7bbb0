#include "common/intern.h"

#include "common/limits.h"

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

struct ng_intern {
	struct entry *blocks[MAX_BLOCKS];
	uint32_t count;
	uint32_t *slots; /* open addressing: id + 1, 0 = empty */
	uint32_t nslots; /* power of two */
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

static const struct entry *entry_at(const struct ng_intern *in, uint32_t id)
{
	return &in->blocks[id >> BLOCK_SHIFT][id & (BLOCK_ENTRIES - 1)];
}

struct ng_intern *ng_intern_create(void)
{
	struct ng_intern *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->nslots = 1024;
	in->slots = calloc(in->nslots, sizeof(uint32_t));
	if (!in->slots) {
		free(in);
		return NULL;
	}
	in->bytes = sizeof(*in) + in->nslots * sizeof(uint32_t);
	return in;
}

void ng_intern_destroy(struct ng_intern *in)
{
	if (!in)
		return;
	for (uint32_t b = 0; b < MAX_BLOCKS && in->blocks[b]; b++)
		free(in->blocks[b]);
	struct strchunk *c = in->chunks;
	while (c) {
		struct strchunk *n = c->next;
		free(c);
		c = n;
	}
	free(in->slots);
	free(in);
}

uint32_t ng_intern_find(const struct ng_intern *in, const char *s, size_t len)
{
	if (!in || len > UINT32_MAX)
		return NG_INTERN_NONE;
	uint32_t h = hash_bytes(s, len);
	uint32_t mask = in->nslots - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t v = in->slots[i];
		if (v == 0)
			return NG_INTERN_NONE;
		const struct entry *e = entry_at(in, v - 1);
		if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
			return v - 1;
	}
}

static ng_status grow_slots(struct ng_intern *in)
{
	uint32_t n = in->nslots * 2;
	uint32_t *slots = calloc(n, sizeof(uint32_t));
	if (!slots)
		return NG_ENOMEM;
	for (uint32_t id = 0; id < in->count; id++) {
		uint32_t i = entry_at(in, id)->hash & (n - 1);
		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = id + 1;
	}
	free(in->slots);
	in->bytes += (size_t)(n - in->nslots) * sizeof(uint32_t);
	in->slots = slots;
	in->nslots = n;
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
	uint32_t id = in->count;
	if (id >= NG_MAX_INTERNED || (id >> BLOCK_SHIFT) >= MAX_BLOCKS)
		return NG_ELIMIT;
	/* Keep the load factor under 1/2. */
	if ((in->count + 1) * 2 > in->nslots && grow_slots(in) != NG_OK)
		return NG_ENOMEM;
	struct entry *blk = in->blocks[id >> BLOCK_SHIFT];
	if (!blk) {
		blk = calloc(BLOCK_ENTRIES, sizeof(*blk));
		if (!blk)
			return NG_ENOMEM;
		in->blocks[id >> BLOCK_SHIFT] = blk;
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
	uint32_t mask = in->nslots - 1;
	uint32_t i = h & mask;
	while (in->slots[i])
		i = (i + 1) & mask;
	in->slots[i] = id + 1;
	in->count++;
	*ret_id = id;
	return NG_OK;
}

const char *ng_intern_str(const struct ng_intern *in, uint32_t id, size_t *ret_len)
{
	if (!in || id >= in->count) {
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
	return in ? in->count : 0;
}

size_t ng_intern_bytes(const struct ng_intern *in)
{
	return in ? in->bytes : 0;
}
