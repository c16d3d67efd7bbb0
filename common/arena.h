/* A capped bump allocator for request-scoped memory (STYLE.md B8). Not thread-safe: one arena
 * belongs to one request, handled by one thread at a time. */
#ifndef NG_COMMON_ARENA_H
#define NG_COMMON_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct ng_arena;

/**
 * Creates an arena whose chunks total at most @cap_bytes. Returns NULL only on OOM of the
 * header itself. Caller frees with ng_arena_destroy().
 */
struct ng_arena *ng_arena_create(size_t cap_bytes);

/**
 * As ng_arena_create(), with chunks of @chunk_bytes (at least 64) instead of 16 KiB: for the
 * small per-object arenas of the cache, where a pod's side data is ~100-200 bytes.
 */
struct ng_arena *ng_arena_create_sized(size_t cap_bytes, size_t chunk_bytes);

/** Frees every chunk. Accepts NULL. */
void ng_arena_destroy(struct ng_arena *a);

/** Forgets every allocation but keeps the first chunk for reuse. */
void ng_arena_reset(struct ng_arena *a);

/**
 * Returns @n bytes aligned to 16, valid until reset/destroy, or NULL when the cap would be
 * exceeded or malloc fails. Never aborts: sizes here come from input.
 */
void *ng_arena_alloc(struct ng_arena *a, size_t n);

/** Copies @len bytes of @s plus a NUL into the arena. NULL when over the cap. */
char *ng_arena_strndup(struct ng_arena *a, const char *s, size_t len);

/** True when an allocation failed since the last reset (cap reached or malloc failed). */
bool ng_arena_exhausted(const struct ng_arena *a);
/** The cap given at creation. */
size_t ng_arena_cap(const struct ng_arena *a);

/** Bytes handed out so far (for tests and metrics). */
size_t ng_arena_used(const struct ng_arena *a);
/** Bytes held: headers and chunks (for memory accounting). */
size_t ng_arena_footprint(const struct ng_arena *a);

#endif
