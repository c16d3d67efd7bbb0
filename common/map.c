#include "common/map.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
	/* splitmix64 finaliser: ids are small consecutive integers, so spread them. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

ng_status ng_map_init(struct ng_map *m, size_t expected)
{
	size_t cap = 16;
	while (cap < expected * 2)
		cap *= 2;
	m->keys = malloc(cap * sizeof(*m->keys));
	m->vals = malloc(cap * sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		m->cap = 0;
		return NG_ENOMEM;
	}
	for (size_t i = 0; i < cap; i++)
		m->keys[i] = NG_MAP_EMPTY;
	m->cap = cap;
	m->n = 0;
	return NG_OK;
}

ng_status ng_map_copy(struct ng_map *to, const struct ng_map *from)
{
	*to = (struct ng_map){0};
	if (!from->cap)
		return NG_OK;
	to->keys = malloc(from->cap * sizeof(*to->keys));
	to->vals = malloc(from->cap * sizeof(*to->vals));
	if (!to->keys || !to->vals) {
		ng_map_finish(to);
		return NG_ENOMEM;
	}
	memcpy(to->keys, from->keys, from->cap * sizeof(*to->keys));
	memcpy(to->vals, from->vals, from->cap * sizeof(*to->vals));
	to->cap = from->cap;
	to->n = from->n;
	return NG_OK;
}

void ng_map_finish(struct ng_map *m)
{
	if (!m)
		return;
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = 0;
	m->n = 0;
}

void ng_map_put(struct ng_map *m, uint64_t key, uint32_t val)
{
	size_t mask = m->cap - 1;
	for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
		if (m->keys[i] == NG_MAP_EMPTY) {
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return;
		}
	}
}

bool ng_map_get(const struct ng_map *m, uint64_t key, uint32_t *ret_val)
{
	if (m->cap == 0)
		return false;
	size_t mask = m->cap - 1;
	for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
		if (m->keys[i] == NG_MAP_EMPTY)
			return false;
		if (m->keys[i] == key) {
			*ret_val = m->vals[i];
			return true;
		}
	}
}

ng_status ng_map_put_grow(struct ng_map *m, uint64_t key, uint32_t val)
{
	if (m->cap == 0 || (m->n + 1) * 2 > m->cap) {
		struct ng_map bigger;
		ng_status st = ng_map_init(&bigger, m->n + 1 > 8 ? (m->n + 1) * 2 : 16);
		if (st != NG_OK)
			return st;
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i] != NG_MAP_EMPTY)
				ng_map_put(&bigger, m->keys[i], m->vals[i]);
		ng_map_finish(m);
		/* Field by field: clang's analyzer loses a struct copy from a local whose address
		 * was taken, and reports a use after free in ng_map_put() below. */
		m->keys = bigger.keys;
		m->vals = bigger.vals;
		m->cap = bigger.cap;
		m->n = bigger.n;
	}
	ng_map_put(m, key, val);
	return NG_OK;
}

uint64_t ng_fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}
