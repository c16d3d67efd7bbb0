/* JSON decoding into cJSON's tree (chosen by measurement: see docs/architecture.md), by a strict
 * RFC 8259 parser of nodegate's own. Every parse goes through ng_json_parse(), which bounds
 * depth, rejects NUL, raw control characters and invalid UTF-8 in strings and duplicate object
 * keys, and reports the byte offset of the first problem.
 *
 * A tree parsed into an arena lives in that arena: never cJSON_Delete() it, drop the arena.
 * A tree parsed without an arena is freed with cJSON_Delete(). Trees are decoded into our own
 * structs at once and never kept in the cache (STYLE.md B7). */
#ifndef NG_COMMON_JSON_H
#define NG_COMMON_JSON_H

#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* For clang's static analyzer only (clang-tidy defines __clang_analyzer__): it cannot see into
 * libcjson, so it would follow paths where cJSON_IsArray(NULL) was true and report the NULL
 * dereference after it. These say what libcjson does: the predicates are false for NULL. */
#ifdef __clang_analyzer__
#define cJSON_IsArray(x) ((x) != NULL && (cJSON_IsArray)(x))
#define cJSON_IsObject(x) ((x) != NULL && (cJSON_IsObject)(x))
#define cJSON_IsString(x) ((x) != NULL && (cJSON_IsString)(x))
#endif

struct ng_arena;

/**
 * Parses @len bytes at @buf (no NUL needed). With @arena, every node and string is allocated
 * there (one request's tree costs no malloc); NG_ELIMIT when the arena cap is hit. Without,
 * they come from malloc and the caller frees the tree with cJSON_Delete() (NG_ENOMEM when malloc
 * fails). On failure *@ret_root is left alone and @reterr (may be NULL) gets the offset and a
 * message; NG_EPARSE for malformed JSON, NG_ELIMIT for depth over NG_MAX_JSON_DEPTH. Any
 * thread.
 */
NG_NODISCARD ng_status ng_json_parse(const char *buf, size_t len, struct ng_arena *arena,
				     cJSON **ret_root, struct ng_err *reterr);

/** The member @key of object @obj, or NULL when @obj is not an object or lacks it. */
const cJSON *ng_json_get(const cJSON *obj, const char *key);
/** The string member @key, or NULL when absent or not a string. Borrowed from the tree. */
const char *ng_json_str(const cJSON *obj, const char *key);
/** Follows a path of object keys (NULL-terminated list); NULL when any step is missing. */
const cJSON *ng_json_path(const cJSON *obj, const char *const *keys);
/** True when @v is a number with an integral value in int64 range; writes it to @ret. */
bool ng_json_int64(const cJSON *v, int64_t *ret);

#endif
