/* JSON decoding into cJSON's tree (chosen by measurement: see docs/architecture.md), by a strict
 * RFC 8259 parser of nodegate's own, or token by token by the same parser (ng_json_reader, below).
 * Every parse goes through ng_json_parse() or the reader, which bound depth, rejects NUL, raw
 * control characters and invalid UTF-8 in strings and duplicate object keys, and reports the byte
 * offset of the first problem.
 *
 * A tree parsed into an arena lives in that arena: never cJSON_Delete() it, drop the arena.
 * A tree parsed without an arena is freed with cJSON_Delete(). Trees are decoded into our own
 * structs at once and never kept in the cache (STYLE.md B7). */
#ifndef NG_COMMON_JSON_H
#define NG_COMMON_JSON_H

#include "common/limits.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* ---- reading JSON token by token ----
 *
 * For a decoder that wants a few fields of a large text without building its tree: the same
 * parser, driven value by value. It accepts exactly the texts ng_json_parse() accepts and
 * fails with the same status, message and offset at the first problem (duplicate keys of every
 * object included, skipped ones too), provided the caller consumes every value: with
 * ng_json_string(), ng_json_number(), ng_json_enter() and ng_json_next(), or ng_json_skip().
 * Strings without escapes point into the text (not NUL-terminated); others, and the keys the
 * duplicate check keeps, are allocated in the arena. Errors are sticky: after one, every call
 * returns false and ng_json_reader_status() tells it. */

/* A string of the text: @len bytes at @s, valid UTF-8, no NUL. */
struct ng_json_str {
	const char *s;
	size_t len;
};

/* Whether @k is the string literal @lit. */
#define NG_JSON_IS(k, lit) ((k).len == sizeof(lit) - 1 && memcmp((k).s, lit, sizeof(lit) - 1) == 0)

enum ng_json_type {
	NG_JSON_BAD, /* not a value (or an error already): ng_json_skip() reports it */
	NG_JSON_OBJECT,
	NG_JSON_ARRAY,
	NG_JSON_STRING,
	NG_JSON_NUMBER,
	NG_JSON_TRUE,
	NG_JSON_FALSE,
	NG_JSON_NULL,
};

struct ng_json_level {
	const char *open; /* its '{' or '[' */
	size_t key0;      /* an object's first key in keys[] */
	bool object, first;
};

/* Private: the parser's state (common/json.c); on the stack of its caller. */
struct ng_json_reader {
	const char *start, *p, *end;
	struct ng_arena *arena; /* NULL: malloc (the tree parser only) */
	struct ng_err *err;
	int depth;
	ng_status st;
	struct ng_json_str *keys; /* the keys of the open objects, innermost last */
	size_t nkeys, capkeys;
	struct ng_json_level lv[NG_MAX_JSON_DEPTH + 1];
};

/** Starts reading the @len bytes at @buf; @arena (required) holds what a read allocates, @err
 * (may be NULL) gets the first problem. */
void ng_json_reader_init(struct ng_json_reader *r, const char *buf, size_t len,
			 struct ng_arena *arena, struct ng_err *err);
/** NG_OK, or the first problem's status. */
ng_status ng_json_reader_status(const struct ng_json_reader *r);
/** The type of the value at the reader, not consumed. */
enum ng_json_type ng_json_peek(const struct ng_json_reader *r);
/** Consumes the '{' or '[' of the value at the reader (ng_json_peek() said which). */
bool ng_json_enter(struct ng_json_reader *r);
/** In the innermost container entered: true when another member follows (an object's key in
 * *@ret_key, the reader at its value), false at its end (consumed) or on an error. */
bool ng_json_next(struct ng_json_reader *r, struct ng_json_str *ret_key);
/** Consumes the value at the reader: true when it is a string (in *@ret), false when it is not
 * (consumed all the same) or on an error. */
bool ng_json_string(struct ng_json_reader *r, struct ng_json_str *ret);
/** Consumes the value at the reader: true when it is a number (in *@ret), as
 * ng_json_string(). */
bool ng_json_number(struct ng_json_reader *r, double *ret);
/** Consumes the value at the reader, whatever it is, checking all of it. */
bool ng_json_skip(struct ng_json_reader *r);
/** After the top value: true when only whitespace follows. */
bool ng_json_reader_end(struct ng_json_reader *r);

#endif
