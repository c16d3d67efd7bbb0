/* The reference parser: ng_json_parse() as it stood when it wrapped cJSON, moved here so the
 * purpose-built parser has something to be compared with. The prescan, the cJSON call and the
 * duplicate-key check are the old code; what changed is where an arena tree's memory comes
 * from (see json-ref.h). */
#include "tests/support/json-ref.h"

#include "common/arena.h"
#include "common/limits.h"
#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

/* One pass over the bytes before cJSON sees them: depth, and string contents cJSON would accept
 * but nodegate does not: raw control characters, \u0000 (it would truncate C strings) and bytes
 * that are not UTF-8 (RFC 8259 §8.1). */
static ng_status prescan(const char *buf, size_t len, int max_depth, struct ng_err *reterr)
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
			if (++depth > max_depth)
				return ng_err_set(reterr, NG_ELIMIT, i,
						  "JSON nested deeper than %d levels", max_depth);
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

/* Duplicate keys: small objects compare pairwise, large ones sort a copy. */
/* NOLINTNEXTLINE(misc-no-recursion): trees from the depth-bounded prescan */
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

/* A copy of @src and its children in @arena, linked as cJSON links them; NULL when the arena is
 * full. Recursion is bounded by the prescan's depth limit. */
/* NOLINTNEXTLINE(misc-no-recursion): trees from the depth-bounded prescan */
static cJSON *copy_to_arena(const cJSON *src, struct ng_arena *arena)
{
	cJSON *n = ng_arena_alloc(arena, sizeof(*n));
	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->type = src->type;
	n->valueint = src->valueint;
	n->valuedouble = src->valuedouble;
	if (src->valuestring) {
		n->valuestring =
		    ng_arena_strndup(arena, src->valuestring, strlen(src->valuestring));
		if (!n->valuestring)
			return NULL;
	}
	if (src->string) {
		n->string = ng_arena_strndup(arena, src->string, strlen(src->string));
		if (!n->string)
			return NULL;
	}
	cJSON *last = NULL;
	for (const cJSON *c = src->child; c; c = c->next) {
		cJSON *cc = copy_to_arena(c, arena);
		if (!cc)
			return NULL;
		if (last) {
			last->next = cc;
			cc->prev = last;
		} else {
			n->child = cc;
		}
		last = cc;
	}
	if (n->child)
		n->child->prev = last;
	return n;
}

ng_status ng_json_parse_ref_depth(const char *buf, size_t len, struct ng_arena *arena,
				  int max_depth, cJSON **ret_root, struct ng_err *reterr)
{
	ng_status st = prescan(buf, len, max_depth, reterr);
	if (st != NG_OK)
		return st;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root) {
		size_t off = end && end >= buf ? (size_t)(end - buf) : 0;
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
	if (st != NG_OK || !arena)
		goto out;
	cJSON *copy = copy_to_arena(root, arena);
	if (!copy) {
		st = ng_err_set(reterr, NG_ELIMIT, 0,
				"JSON has too many values to decode within the %zu MiB "
				"per-request limit",
				ng_arena_cap(arena) >> 20);
		goto out;
	}
	cJSON_Delete(root);
	root = copy;
out:
	if (st != NG_OK) {
		cJSON_Delete(root);
		return st;
	}
	*ret_root = root;
	return NG_OK;
}

ng_status ng_json_parse_ref(const char *buf, size_t len, struct ng_arena *arena, cJSON **ret_root,
			    struct ng_err *reterr)
{
	return ng_json_parse_ref_depth(buf, len, arena, NG_MAX_JSON_DEPTH, ret_root, reterr);
}
