/* String interning for the cache's repetitive vocabulary: namespaces, label keys and values,
 * node names, owner kinds (STYLE.md B8). Pod names, which are nearly unique and churn, are not
 * interned.
 *
 * Threads: one writer (the thread that builds the cache) calls ng_intern_add(); any number of
 * readers may call ng_intern_find() and ng_intern_str() at the same time. Strings live in
 * append-only chunks that never move, entries in blocks that never move, and a grown hash table
 * is swapped in while the old one stays readable until the pool is destroyed; ids and slots are
 * published with release ordering. So readers never lock and never see a half-written entry. */
#ifndef NG_COMMON_INTERN_H
#define NG_COMMON_INTERN_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/* The id no string has: lookups of unknown strings return it, and it never equals a real id,
 * so a selector term holding it matches no object's label. */
#define NG_INTERN_NONE UINT32_MAX

struct ng_intern;

/** Creates an empty pool. Returns NULL on OOM. Caller frees with ng_intern_destroy(). */
struct ng_intern *ng_intern_create(void);
/** Frees the pool and every string in it. Accepts NULL. */
void ng_intern_destroy(struct ng_intern *in);

/**
 * Interns @len bytes at @s (no NUL needed) and writes its id to @ret_id; the same bytes always
 * get the same id. Returns NG_ELIMIT past NG_MAX_INTERNED strings, NG_ENOMEM on OOM.
 * Writer thread only.
 */
NG_NODISCARD ng_status ng_intern_add(struct ng_intern *in, const char *s, size_t len,
				     uint32_t *ret_id);

/** Returns the id of @s or NG_INTERN_NONE when it was never interned. */
uint32_t ng_intern_find(const struct ng_intern *in, const char *s, size_t len);

/**
 * Returns the NUL-terminated string of @id (borrowed, valid for the pool's life) and its length
 * in @ret_len (may be NULL); "" for NG_INTERN_NONE or an id out of range.
 */
const char *ng_intern_str(const struct ng_intern *in, uint32_t id, size_t *ret_len);

/** Number of distinct strings. */
uint32_t ng_intern_count(const struct ng_intern *in);
/** Bytes held by the pool (chunks, tables): the `intern_bytes` metric. */
size_t ng_intern_bytes(const struct ng_intern *in);

#endif
