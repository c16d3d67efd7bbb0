/* An open-addressing hash map from uint64 keys to uint32 values (record indexes, ids). Built by
 * one thread; read-only maps may then be read by any number of threads. */
#ifndef NG_COMMON_MAP_H
#define NG_COMMON_MAP_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_map {
	uint64_t *keys; /* NG_MAP_EMPTY marks a free slot */
	uint32_t *vals;
	size_t cap; /* power of two, or 0 */
	size_t n;
};
/* The one key value that cannot be stored. */
#define NG_MAP_EMPTY UINT64_MAX

/* FNV-1a 64: start from NG_FNV64_INIT, feed bytes (chaining calls hashes the concatenation).
 * Callers turning it into a map key keep clear of NG_MAP_EMPTY. */
#define NG_FNV64_INIT 14695981039346656037ull
uint64_t ng_fnv1a64(uint64_t h, const void *p, size_t n);

/** Sizes the map for @expected keys at load 1/2. NG_ENOMEM on OOM. */
NG_NODISCARD ng_status ng_map_init(struct ng_map *m, size_t expected);
/** Makes @to a copy of @from (its own arrays). NG_ENOMEM on OOM, @to then zeroed. */
NG_NODISCARD ng_status ng_map_copy(struct ng_map *to, const struct ng_map *from);
/** Frees the arrays. Accepts a zeroed map. */
void ng_map_finish(struct ng_map *m);
/** Inserts or replaces. The map never grows past its initial capacity, sized for @expected. */
void ng_map_put(struct ng_map *m, uint64_t key, uint32_t val);
/** Inserts or replaces, doubling the capacity when half full. NG_ENOMEM on OOM. */
NG_NODISCARD ng_status ng_map_put_grow(struct ng_map *m, uint64_t key, uint32_t val);
/** Returns true and writes the value when @key is present. */
bool ng_map_get(const struct ng_map *m, uint64_t key, uint32_t *ret_val);

#endif
