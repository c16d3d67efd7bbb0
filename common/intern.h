/* String interning for the cache's repetitive vocabulary: namespaces, label keys and values,
 * node names, owner kinds (STYLE.md B8). Pod names, which are nearly unique and churn, are not
 * interned.
 *
 * Threads: one writer (the thread that builds the cache) calls ng_intern_add(); any number of
 * readers may call ng_intern_find() and ng_intern_str() at the same time. Strings live in
 * append-only chunks that never move, entries in blocks that never move, and a grown hash table
 * is swapped in while the old one stays readable until the pool is destroyed; ids and slots are
 * published with release ordering. So readers never lock and never see a half-written entry.
 *
 * Rebuilding. A pool only grows; a writer whose strings churn (label values of pods that come
 * and go) replaces it now and then with a successor (ng_intern_successor()) holding only the
 * strings still in use, each under the SAME id (ng_intern_keep()), and gives new strings ids
 * past every id the line of pools ever gave. So an id is never given to another string: looked
 * up in any pool of the line, an id gives its one string, or "" when that pool does not hold
 * it (gone before the pool was built, or given after it). The predecessor is not written again
 * and stays readable as it was for whoever still holds it. */
#ifndef NG_COMMON_INTERN_H
#define NG_COMMON_INTERN_H

#include "common/status.h"

#include <stdbool.h>
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

/** Returns the id of @s or NG_INTERN_NONE when this pool does not hold it. */
uint32_t ng_intern_find(const struct ng_intern *in, const char *s, size_t len);

/**
 * Returns the NUL-terminated string of @id (borrowed, valid for the pool's life) and its length
 * in @ret_len (may be NULL); "" for NG_INTERN_NONE or an id this pool does not hold.
 */
const char *ng_intern_str(const struct ng_intern *in, uint32_t id, size_t *ret_len);
/** True when this pool holds @id (ng_intern_str() of it is its string, not a stand-in ""). */
bool ng_intern_has(const struct ng_intern *in, uint32_t id);

/**
 * Starts the successor of @prev: an empty pool whose ids continue after every id @prev (and
 * the pools before it) gave. Fill it with ng_intern_keep() before the first ng_intern_add()
 * and before sharing it. Writer thread only. NULL on OOM; caller frees with ng_intern_destroy().
 */
struct ng_intern *ng_intern_successor(const struct ng_intern *prev);
/**
 * Carries @id's string from @prev (the pool @in succeeds) into @in under the same id; an id
 * already carried, or NG_INTERN_NONE, is fine. NG_ENOTFOUND when @prev does not hold @id,
 * NG_EINVAL when @id is not one of @prev's or ng_intern_add() was called on @in already,
 * NG_ENOMEM, NG_ELIMIT. Writer thread only, before @in is shared.
 */
NG_NODISCARD ng_status ng_intern_keep(struct ng_intern *in, const struct ng_intern *prev,
				      uint32_t id);

/** Number of distinct strings the pool holds. */
uint32_t ng_intern_count(const struct ng_intern *in);
/** The id the next new string gets: one past the largest id the line of pools gave. */
uint32_t ng_intern_next_id(const struct ng_intern *in);
/** How many pools came before this one in its line (0 for ng_intern_create()'s). */
uint32_t ng_intern_rebuilds(const struct ng_intern *in);
/** Bytes held by the pool (chunks, tables): the `intern_bytes` metric. */
size_t ng_intern_bytes(const struct ng_intern *in);

#endif
