#include "common/json.h"

#include "common/arena.h"
#include "common/limits.h"
#include "common/utf8.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* cJSON allocates through process-wide hooks. We install them once; while a thread parses
 * into an arena, its allocations come from that arena (allocation was a third of a webhook's
 * CPU in our measurements), otherwise from malloc. Frees during an arena parse are no-ops: cJSON
 * only frees what that same parse allocated. */
static _Thread_local struct ng_arena *tl_arena;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void *hook_malloc(size_t n)
{
	if (tl_arena)
		return ng_arena_alloc(tl_arena, n);
	return malloc(n);
}

static void hook_free(void *p)
{
	if (tl_arena)
		return;
	free(p);
}

static void install_hooks(void)
{
	cJSON_Hooks h = {.malloc_fn = hook_malloc, .free_fn = hook_free};
	cJSON_InitHooks(&h);
}

/* One pass over the bytes before cJSON sees them: depth, and string contents cJSON would accept
 * but we do not: raw control characters, \u0000 (it would truncate C strings) and bytes that
 * are not UTF-8 (RFC 8259 §8.1; a uid we cannot echo byte for byte would fail the review). */
static ng_status prescan(const char *buf, size_t len, struct ng_err *reterr)
{
	int depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (in_str) {
			if (c == '"') {
				in_str = false;
			} else if (c == '\\') {
				if (i + 1 < len && buf[i + 1] == 'u' && i + 5 < len &&
				    memcmp(buf + i + 2, "0000", 4) == 0)
					return ng_err_set(
					    reterr, NG_EPARSE, i,
					    "NUL character (\\u0000) in a JSON string");
				i++;
			} else if (c < 0x20) {
				return ng_err_set(reterr, NG_EPARSE, i,
						  "control character in a JSON string");
			} else if (c >= 0x80) {
				size_t n = ng_utf8_seq_len((const unsigned char *)buf + i, len - i);
				if (n == 0)
					return ng_err_set(
					    reterr, NG_EPARSE, i,
					    "invalid UTF-8 in a JSON string at byte %zu", i);
				i += n - 1;
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > NG_MAX_JSON_DEPTH)
				return ng_err_set(reterr, NG_ELIMIT, i,
						  "JSON nested deeper than %d levels",
						  NG_MAX_JSON_DEPTH);
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == '\0') {
			return ng_err_set(reterr, NG_EPARSE, i, "NUL byte in JSON text");
		}
	}
	return NG_OK;
}

static int cmp_key(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a;
	const cJSON *y = *(const cJSON *const *)b;
	return strcmp(x->string, y->string);
}

/* Duplicate keys make "which value wins" differ between parsers; the API server rejects them in
 * strict decoding, and so do we. Small objects compare pairwise; large ones sort a copy. */
static ng_status check_dups(const cJSON *v, struct ng_err *reterr)
{
	for (; v; v = v->next) {
		if (cJSON_IsObject(v)) {
			size_t n = 0;
			for (const cJSON *c = v->child; c; c = c->next)
				n++;
			if (n > 1 && n <= 16) {
				for (const cJSON *a = v->child; a; a = a->next)
					for (const cJSON *b = a->next; b; b = b->next)
						if (strcmp(a->string, b->string) == 0)
							return ng_err_set(
							    reterr, NG_EPARSE, 0,
							    "duplicate JSON key \"%.60s\"",
							    a->string);
			} else if (n > 16) {
				const cJSON **arr = malloc(n * sizeof(*arr));
				if (!arr)
					return NG_ENOMEM;
				size_t i = 0;
				for (const cJSON *c = v->child; c; c = c->next)
					arr[i++] = c;
				qsort(arr, n, sizeof(*arr), cmp_key);
				ng_status st = NG_OK;
				for (i = 1; i < n && st == NG_OK; i++)
					if (strcmp(arr[i - 1]->string, arr[i]->string) == 0)
						st = ng_err_set(reterr, NG_EPARSE, 0,
								"duplicate JSON key \"%.60s\"",
								arr[i]->string);
				free(arr);
				if (st != NG_OK)
					return st;
			}
		}
		if ((cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child) {
			ng_status st = check_dups(v->child, reterr);
			if (st != NG_OK)
				return st;
		}
	}
	return NG_OK;
}

ng_status ng_json_parse(const char *buf, size_t len, struct ng_arena *arena, cJSON **ret_root,
			struct ng_err *reterr)
{
	(void)pthread_once(&hooks_once, install_hooks);
	ng_status st = prescan(buf, len, reterr);
	if (st != NG_OK)
		return st;
	const char *end = NULL;
	tl_arena = arena;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	tl_arena = NULL;
	if (!root) {
		size_t off = end && end >= buf ? (size_t)(end - buf) : 0;
		/* cJSON reports a failed allocation like a syntax error: tell them apart. */
		if (arena && ng_arena_exhausted(arena))
			return ng_err_set(reterr, NG_ELIMIT, off,
					  "JSON has too many values to decode within the %zu MiB "
					  "per-request limit",
					  ng_arena_cap(arena) >> 20);
		return ng_err_set(reterr, NG_EPARSE, off, "malformed JSON at byte %zu", off);
	}
	size_t off = (size_t)(end - buf);
	while (off < len &&
	       (buf[off] == ' ' || buf[off] == '\n' || buf[off] == '\r' || buf[off] == '\t'))
		off++;
	if (off != len) {
		st = ng_err_set(reterr, NG_EPARSE, off,
				"unexpected data after JSON value at byte %zu", off);
		goto out;
	}
	st = check_dups(root, reterr);
out:
	if (st != NG_OK) {
		if (!arena)
			cJSON_Delete(root);
		return st;
	}
	*ret_root = root;
	return NG_OK;
}

const cJSON *ng_json_get(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const char *ng_json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = ng_json_get(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *ng_json_path(const cJSON *obj, const char *const *keys)
{
	for (; obj && *keys; keys++)
		obj = ng_json_get(obj, *keys);
	return obj;
}

bool ng_json_int64(const cJSON *v, int64_t *ret)
{
	if (!cJSON_IsNumber(v))
		return false;
	double d = v->valuedouble;
	/* 2^63 is exactly representable; anything at or beyond it is out of range. */
	if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 ||
	    d >= 9223372036854775808.0)
		return false;
	*ret = (int64_t)d;
	return true;
}
