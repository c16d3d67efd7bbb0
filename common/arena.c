#include "common/arena.h"

#include "common/limits.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NG_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NG_ASAN 1
#endif

#ifdef NG_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct chunk {
	struct chunk *next;
	size_t size; /* usable bytes in data[] */
	size_t used;
	_Alignas(16) unsigned char data[];
};

struct ng_arena {
	struct chunk *head; /* current chunk; older ones follow */
	size_t cap;
	size_t chunk_bytes;
	size_t total; /* bytes of chunk data allocated */
	size_t handed;
	bool exhausted;
};

struct ng_arena *ng_arena_create_sized(size_t cap_bytes, size_t chunk_bytes)
{
	struct ng_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->cap = cap_bytes;
	a->chunk_bytes = chunk_bytes < 64 ? 64 : (chunk_bytes + 15u) & ~(size_t)15u;
	return a;
}

struct ng_arena *ng_arena_create(size_t cap_bytes)
{
	return ng_arena_create_sized(cap_bytes, NG_ARENA_CHUNK_BYTES);
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;
		UNPOISON(c->data, c->size);
		free(c);
		c = next;
	}
}

void ng_arena_destroy(struct ng_arena *a)
{
	if (!a)
		return;
	free_chunks(a->head);
	free(a);
}

void ng_arena_reset(struct ng_arena *a)
{
	if (!a || !a->head)
		return;
	/* Keep the oldest chunk (the last in the list): typical requests fit in it. */
	struct chunk *keep = a->head;
	struct chunk *prev = NULL;
	while (keep->next) {
		prev = keep;
		keep = keep->next;
	}
	if (prev) {
		prev->next = NULL;
		free_chunks(a->head);
	}
	keep->used = 0;
	POISON(keep->data, keep->size);
	a->head = keep;
	a->total = keep->size;
	a->handed = 0;
	a->exhausted = false;
}

void *ng_arena_alloc(struct ng_arena *a, size_t n)
{
	size_t need = (n + 15u) & ~(size_t)15u;
	if (need < n) {
		a->exhausted = true;
		return NULL;
	}
	struct chunk *c = a->head;
	if (!c || c->size - c->used < need) {
		size_t size = need > a->chunk_bytes ? need : a->chunk_bytes;
		size_t room = a->total < a->cap ? a->cap - a->total : 0;
		/* The last chunk under the cap may be smaller than the usual one: an arena capped
		 * below one chunk still holds what fits under its cap. */
		if (size > room)
			size = room;
		if (size < need) {
			a->exhausted = true;
			return NULL;
		}
		c = malloc(sizeof(*c) + size);
		if (!c) {
			a->exhausted = true;
			return NULL;
		}
		c->size = size;
		c->used = 0;
		POISON(c->data, size);
		c->next = a->head;
		a->head = c;
		a->total += size;
	}
	void *p = c->data + c->used;
	c->used += need;
	a->handed += need;
	UNPOISON(p, n);
	return p;
}

char *ng_arena_strndup(struct ng_arena *a, const char *s, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	char *p = ng_arena_alloc(a, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

bool ng_arena_exhausted(const struct ng_arena *a)
{
	return a->exhausted;
}

size_t ng_arena_cap(const struct ng_arena *a)
{
	return a->cap;
}

size_t ng_arena_used(const struct ng_arena *a)
{
	return a ? a->handed : 0;
}

size_t ng_arena_footprint(const struct ng_arena *a)
{
	size_t n = a ? sizeof(*a) : 0;
	for (const struct chunk *c = a ? a->head : NULL; c; c = c->next)
		n += sizeof(*c) + c->size;
	return n;
}
