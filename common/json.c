#include "common/json.h"

#include "common/arena.h"
#include "common/limits.h"
#include "common/utf8.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The parser: one pass over the bytes, building cJSON's own node layout (so every reader keeps
 * using cJSON's accessors) into the arena or the heap. It is strict RFC 8259: numbers follow
 * the grammar exactly (no "+1", "01", "1.", ".5"), whitespace is space, tab, CR and LF only.
 * Besides, it refuses what cJSON would accept but nodegate does not: raw control characters,
 * \u0000 (it would truncate C strings) and bytes that are not UTF-8 inside strings (a uid we
 * cannot echo byte for byte would fail the review), depth past NG_MAX_JSON_DEPTH, and duplicate
 * keys (the API server rejects them in strict decoding: "which value wins" differs between
 * parsers). Parsing a webhook's review this way, rather than a validating prescan, cJSON and a
 * walk for duplicates, halved the JSON's share of an admission request's CPU. */

/* The tree parser and the token reader (ng_json_reader) share one state, and every lexical
 * step below: both accept the same texts and fail with the same message at the same byte. */
#define jp ng_json_reader

static ng_status jp_fail(struct jp *j, const char *at, const char *msg)
{
	size_t off = (size_t)(at - j->start);
	return ng_err_set(j->err, NG_EPARSE, off, "%s at byte %zu", msg, off);
}

static ng_status jp_nomem(struct jp *j)
{
	if (j->arena && ng_arena_exhausted(j->arena))
		return ng_err_set(j->err, NG_ELIMIT, (size_t)(j->p - j->start),
				  "JSON has too many values to decode within the %zu MiB "
				  "per-request limit",
				  ng_arena_cap(j->arena) >> 20);
	return ng_err_set(j->err, NG_ENOMEM, 0, "out of memory");
}

static void *jp_alloc(struct jp *j, size_t n)
{
	return j->arena ? ng_arena_alloc(j->arena, n) : malloc(n);
}

static cJSON *jp_node(struct jp *j)
{
	cJSON *n = jp_alloc(j, sizeof(*n));
	if (n)
		memset(n, 0, sizeof(*n));
	return n;
}

static void jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int hex4(const char *s)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The escaped string between @s and @q (already scanned: every escape has its second byte)
 * unescaped into @o, which holds q - s + 1 bytes. */
static ng_status jp_unescape(struct jp *j, const char *s, const char *q, char *o)
{
	size_t k = 0;
	for (const char *r = s; r < q;) {
		if (*r != '\\') {
			o[k++] = *r++;
			continue;
		}
		char e = r[1];
		r += 2;
		switch (e) {
		case '"':
			o[k++] = '"';
			break;
		case '\\':
			o[k++] = '\\';
			break;
		case '/':
			o[k++] = '/';
			break;
		case 'b':
			o[k++] = '\b';
			break;
		case 'f':
			o[k++] = '\f';
			break;
		case 'n':
			o[k++] = '\n';
			break;
		case 'r':
			o[k++] = '\r';
			break;
		case 't':
			o[k++] = '\t';
			break;
		case 'u': {
			int hi = q - r >= 4 ? hex4(r) : -1;
			if (hi < 0)
				return jp_fail(j, r - 2, "invalid \\u escape in a JSON string");
			r += 4;
			unsigned cp = (unsigned)hi;
			if (cp == 0)
				return jp_fail(j, r - 6,
					       "NUL character (\\u0000) in a JSON string");
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return jp_fail(j, r - 6, "lone surrogate in a JSON string");
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				int lo =
				    q - r >= 6 && r[0] == '\\' && r[1] == 'u' ? hex4(r + 2) : -1;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return jp_fail(j, r - 6, "lone surrogate in a JSON string");
				cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
				r += 6;
			}
			k += put_utf8(o + k, cp);
			break;
		}
		default:
			return jp_fail(j, r - 2, "invalid escape in a JSON string");
		}
	}
	o[k] = '\0';
	return NG_OK;
}

/* Scans the string at j->p (the opening quote): its bytes are [*@ret_s, *@ret_q), j->p moves
 * past the closing quote, *@ret_esc says whether it has escapes (not checked yet). */
static ng_status jp_scan_string(struct jp *j, const char **ret_s, const char **ret_q, bool *ret_esc)
{
	const char *s = ++j->p;
	bool escapes = false;
	const char *q = s;
	for (;;) {
		if (q >= j->end)
			return jp_fail(j, q, "unterminated JSON string");
		unsigned char c = (unsigned char)*q;
		if (c == '"')
			break;
		if (c == '\\') {
			escapes = true;
			if (q + 1 >= j->end)
				return jp_fail(j, q, "unterminated JSON string");
			q += 2;
			continue;
		}
		if (c < 0x20)
			return jp_fail(j, q,
				       c ? "control character in a JSON string"
					 : "NUL byte in a JSON string");
		if (c >= 0x80) {
			size_t n = ng_utf8_seq_len((const unsigned char *)q, (size_t)(j->end - q));
			if (n == 0)
				return jp_fail(j, q, "invalid UTF-8 in a JSON string");
			q += n;
			continue;
		}
		q++;
	}
	*ret_s = s;
	*ret_q = q;
	*ret_esc = escapes;
	j->p = q + 1;
	return NG_OK;
}

/* A string at j->p (the opening quote) into *@ret (NUL-terminated, unescaped). */
static ng_status jp_string(struct jp *j, char **ret)
{
	const char *s = NULL, *q = NULL;
	bool escapes = false;
	ng_status st = jp_scan_string(j, &s, &q, &escapes);
	if (st != NG_OK)
		return st;
	size_t len = (size_t)(q - s);
	char *o = jp_alloc(j, len + 1);
	if (!o)
		return jp_nomem(j);
	*ret = o;
	if (!escapes) {
		memcpy(o, s, len);
		o[len] = '\0';
		return NG_OK;
	}
	return jp_unescape(j, s, q, o);
}

/* The number at j->p into *@ret. */
static ng_status jp_number(struct jp *j, double *ret)
{
	const char *s = j->p, *q = s;
	bool minus = q < j->end && *q == '-';
	q += minus;
	if (q >= j->end || *q < '0' || *q > '9')
		return jp_fail(j, s, "malformed JSON number");
	int64_t iv = 0;
	int digits = 0;
	if (*q == '0') {
		q++;
	} else {
		for (; q < j->end && *q >= '0' && *q <= '9'; q++, digits++)
			if (digits < 18)
				iv = iv * 10 + (*q - '0');
	}
	bool integral = true;
	if (q < j->end && *q == '.') {
		integral = false;
		if (++q >= j->end || *q < '0' || *q > '9')
			return jp_fail(j, s, "malformed JSON number");
		while (q < j->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < j->end && (*q == 'e' || *q == 'E')) {
		integral = false;
		q++;
		if (q < j->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= j->end || *q < '0' || *q > '9')
			return jp_fail(j, s, "malformed JSON number");
		while (q < j->end && *q >= '0' && *q <= '9')
			q++;
	}
	double d;
	if (integral && digits <= 15) {
		d = minus ? -(double)iv : (double)iv; /* exact below 2^53; "-0" is -0.0 */
	} else {
		char small[64];
		size_t len = (size_t)(q - s);
		char *buf = len < sizeof(small) ? small : malloc(len + 1);
		if (!buf)
			return jp_nomem(j);
		memcpy(buf, s, len);
		buf[len] = '\0';
		d = strtod(buf, NULL);
		if (buf != small)
			free(buf);
	}
	*ret = d;
	j->p = q;
	return NG_OK;
}

static bool same_key(const cJSON *a, const cJSON *b)
{
	return a->string[0] == b->string[0] && strcmp(a->string, b->string) == 0;
}

static int cmp_key(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a;
	const cJSON *y = *(const cJSON *const *)b;
	return strcmp(x->string, y->string);
}

/* Duplicate keys among the @n members of @o. Small objects compare pairwise; large ones sort a
 * copy. */
static ng_status jp_dups(struct jp *j, const cJSON *o, size_t n, const char *at)
{
	const cJSON *dup = NULL;
	if (n <= 16) {
		for (const cJSON *a = o->child; a && !dup; a = a->next)
			for (const cJSON *b = a->next; b && !dup; b = b->next)
				if (same_key(a, b))
					dup = a;
	} else {
		const cJSON **arr = malloc(n * sizeof(*arr));
		if (!arr)
			return jp_nomem(j);
		size_t i = 0;
		for (const cJSON *c = o->child; c; c = c->next)
			arr[i++] = c;
		qsort(arr, n, sizeof(*arr), cmp_key);
		for (i = 1; i < n && !dup; i++)
			if (strcmp(arr[i - 1]->string, arr[i]->string) == 0)
				dup = arr[i];
		free(arr);
	}
	if (!dup)
		return NG_OK;
	size_t off = (size_t)(at - j->start);
	return ng_err_set(j->err, NG_EPARSE, off, "duplicate JSON key \"%.60s\"", dup->string);
}

static ng_status jp_value(struct jp *j, cJSON *n);

/* An object or array at j->p into @n: members are linked into @n as they are made, so a failed
 * parse leaves one tree cJSON_Delete() can free. */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH */
static ng_status jp_container(struct jp *j, cJSON *n, bool object)
{
	const char *open = j->p;
	if (++j->depth > NG_MAX_JSON_DEPTH)
		return ng_err_set(j->err, NG_ELIMIT, (size_t)(open - j->start),
				  "JSON nested deeper than %d levels", NG_MAX_JSON_DEPTH);
	n->type = object ? cJSON_Object : cJSON_Array;
	char close = object ? '}' : ']';
	j->p++;
	jp_ws(j);
	size_t count = 0;
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return NG_OK;
	}
	cJSON *last = NULL;
	for (;;) {
		cJSON *c = jp_node(j);
		if (!c)
			return jp_nomem(j);
		if (last) {
			last->next = c;
			c->prev = last;
		} else {
			n->child = c;
		}
		n->child->prev = c; /* cJSON's layout: the first child's prev is the last */
		last = c;
		count++;
		ng_status st;
		if (object) {
			if (j->p >= j->end || *j->p != '"')
				return jp_fail(j, j->p, "malformed JSON: expected a key");
			if ((st = jp_string(j, &c->string)) != NG_OK)
				return st;
			jp_ws(j);
			if (j->p >= j->end || *j->p != ':')
				return jp_fail(j, j->p, "malformed JSON: expected ':'");
			j->p++;
			jp_ws(j);
		}
		if ((st = jp_value(j, c)) != NG_OK)
			return st;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			jp_ws(j);
			continue;
		}
		if (j->p < j->end && *j->p == close)
			break;
		return jp_fail(j, j->p,
			       object ? "malformed JSON: expected ',' or '}'"
				      : "malformed JSON: expected ',' or ']'");
	}
	j->p++;
	j->depth--;
	return object && count > 1 ? jp_dups(j, n, count, open) : NG_OK;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH */
static ng_status jp_value(struct jp *j, cJSON *n)
{
	if (j->p >= j->end)
		return jp_fail(j, j->p, "malformed JSON: unexpected end");
	size_t left = (size_t)(j->end - j->p);
	switch (*j->p) {
	case '{':
		return jp_container(j, n, true);
	case '[':
		return jp_container(j, n, false);
	case '"':
		n->type = cJSON_String;
		return jp_string(j, &n->valuestring);
	case 't':
		if (left < 4 || memcmp(j->p, "true", 4) != 0)
			break;
		n->type = cJSON_True;
		n->valueint = 1;
		j->p += 4;
		return NG_OK;
	case 'f':
		if (left < 5 || memcmp(j->p, "false", 5) != 0)
			break;
		n->type = cJSON_False;
		j->p += 5;
		return NG_OK;
	case 'n':
		if (left < 4 || memcmp(j->p, "null", 4) != 0)
			break;
		n->type = cJSON_NULL;
		j->p += 4;
		return NG_OK;
	case '\0':
		return jp_fail(j, j->p, "NUL byte in JSON text");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
			double d;
			ng_status st = jp_number(j, &d);
			if (st != NG_OK)
				return st;
			n->type = cJSON_Number;
			n->valuedouble = d;
			n->valueint = d >= (double)INT_MAX   ? INT_MAX
				      : d <= (double)INT_MIN ? INT_MIN
							     : (int)d;
			return NG_OK;
		}
	}
	return jp_fail(j, j->p, "malformed JSON");
}

ng_status ng_json_parse(const char *buf, size_t len, struct ng_arena *arena, cJSON **ret_root,
			struct ng_err *reterr)
{
	struct jp j = {.start = buf, .p = buf, .end = buf + len, .arena = arena, .err = reterr};
	jp_ws(&j);
	cJSON *root = jp_node(&j);
	ng_status st = root ? jp_value(&j, root) : jp_nomem(&j);
	if (st == NG_OK) {
		jp_ws(&j);
		if (j.p != j.end)
			st = *j.p == '\0'
				 ? jp_fail(&j, j.p, "NUL byte in JSON text")
				 : ng_err_set(reterr, NG_EPARSE, (size_t)(j.p - buf),
					      "unexpected data after JSON value at byte %zu",
					      (size_t)(j.p - buf));
	}
	if (st != NG_OK) {
		if (!arena)
			cJSON_Delete(root);
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): cJSON_Delete() freed it */
		return st;
	}
	*ret_root = root;
	return NG_OK;
}

const cJSON *ng_json_get(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	/* cJSON_GetObjectItemCaseSensitive's answer, but the first byte is compared before a call
	 * to strcmp: a review's decode looks up some 25 keys among 15, and those calls were 2 % of
	 * its CPU. */
	for (const cJSON *c = obj->child; c; c = c->next)
		if (c->string && c->string[0] == key[0] && strcmp(c->string, key) == 0)
			return c;
	return NULL;
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

/* ---- the token reader (common/json.h) ----
 *
 * The steps of jp_container() and jp_value(), taken one call at a time: the same checks in the
 * same order, so a text fails here where and as it fails in ng_json_parse(). */

static bool jr_fail(struct jp *r, ng_status st)
{
	if (r->st == NG_OK)
		r->st = st;
	return false;
}

void ng_json_reader_init(struct ng_json_reader *r, const char *buf, size_t len,
			 struct ng_arena *arena, struct ng_err *err)
{
	r->start = r->p = buf;
	r->end = buf + len;
	r->arena = arena;
	r->err = err;
	r->depth = 0;
	r->st = NG_OK;
	r->keys = NULL;
	r->nkeys = r->capkeys = 0;
	jp_ws(r);
}

ng_status ng_json_reader_status(const struct ng_json_reader *r)
{
	return r->st;
}

enum ng_json_type ng_json_peek(const struct ng_json_reader *r)
{
	if (r->st != NG_OK || r->p >= r->end)
		return NG_JSON_BAD;
	size_t left = (size_t)(r->end - r->p);
	switch (*r->p) {
	case '{':
		return NG_JSON_OBJECT;
	case '[':
		return NG_JSON_ARRAY;
	case '"':
		return NG_JSON_STRING;
	case 't':
		return left >= 4 && memcmp(r->p, "true", 4) == 0 ? NG_JSON_TRUE : NG_JSON_BAD;
	case 'f':
		return left >= 5 && memcmp(r->p, "false", 5) == 0 ? NG_JSON_FALSE : NG_JSON_BAD;
	case 'n':
		return left >= 4 && memcmp(r->p, "null", 4) == 0 ? NG_JSON_NULL : NG_JSON_BAD;
	default:
		return *r->p == '-' || (*r->p >= '0' && *r->p <= '9') ? NG_JSON_NUMBER
								      : NG_JSON_BAD;
	}
}

bool ng_json_enter(struct ng_json_reader *r)
{
	if (r->st != NG_OK)
		return false;
	const char *open = r->p;
	if (++r->depth > NG_MAX_JSON_DEPTH)
		return jr_fail(r,
			       ng_err_set(r->err, NG_ELIMIT, (size_t)(open - r->start),
					  "JSON nested deeper than %d levels", NG_MAX_JSON_DEPTH));
	struct ng_json_level *lv = &r->lv[r->depth];
	lv->open = open;
	lv->object = *open == '{';
	lv->first = true;
	lv->key0 = r->nkeys;
	r->p++;
	jp_ws(r);
	return true;
}

/* The string at r->p: in the text when it has no escapes, else unescaped into the arena. */
static bool jr_str(struct jp *r, struct ng_json_str *ret)
{
	const char *s = NULL, *q = NULL;
	bool escapes = false;
	ng_status st = jp_scan_string(r, &s, &q, &escapes);
	if (st != NG_OK)
		return jr_fail(r, st);
	if (!escapes) {
		*ret = (struct ng_json_str){s, (size_t)(q - s)};
		return true;
	}
	char *o = ng_arena_alloc(r->arena, (size_t)(q - s) + 1);
	if (!o)
		return jr_fail(r, jp_nomem(r));
	if ((st = jp_unescape(r, s, q, o)) != NG_OK)
		return jr_fail(r, st);
	*ret = (struct ng_json_str){o, strlen(o)};
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	const struct ng_json_str *x = *(const struct ng_json_str *const *)a;
	const struct ng_json_str *y = *(const struct ng_json_str *const *)b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len); /* strcmp's order */
}

static bool same_str(const struct ng_json_str *a, const struct ng_json_str *b)
{
	return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* jp_dups() over the @n keys of the object being closed (from keys[@k0]), opened at @at. */
static ng_status jr_dups(struct jp *r, size_t k0, size_t n, const char *at)
{
	const struct ng_json_str *k = r->keys + k0, *dup = NULL;
	if (n <= 16) {
		for (size_t a = 0; a < n && !dup; a++)
			for (size_t b = a + 1; b < n && !dup; b++)
				if (same_str(&k[a], &k[b]))
					dup = &k[a];
	} else {
		const struct ng_json_str **arr = malloc(n * sizeof(*arr));
		if (!arr)
			return jp_nomem(r);
		for (size_t i = 0; i < n; i++)
			arr[i] = &k[i];
		qsort(arr, n, sizeof(*arr), cmp_str);
		for (size_t i = 1; i < n && !dup; i++)
			if (same_str(arr[i - 1], arr[i]))
				dup = arr[i];
		free(arr);
	}
	if (!dup)
		return NG_OK;
	size_t off = (size_t)(at - r->start);
	return ng_err_set(r->err, NG_EPARSE, off, "duplicate JSON key \"%.*s\"",
			  (int)(dup->len < 60 ? dup->len : 60), dup->s);
}

/* The innermost container ends (its closing byte consumed): false, as ng_json_next() is. */
static bool jr_close(struct jp *r)
{
	struct ng_json_level *lv = &r->lv[r->depth];
	size_t n = r->nkeys - lv->key0;
	ng_status st = lv->object && n > 1 ? jr_dups(r, lv->key0, n, lv->open) : NG_OK;
	r->nkeys = lv->key0;
	r->depth--;
	if (st != NG_OK)
		(void)jr_fail(r, st);
	return false;
}

static bool jr_push_key(struct jp *r, const struct ng_json_str *k)
{
	if (r->nkeys == r->capkeys) {
		size_t cap = r->capkeys ? r->capkeys * 2 : 64;
		struct ng_json_str *keys = ng_arena_alloc(r->arena, cap * sizeof(*keys));
		if (!keys)
			return jr_fail(r, jp_nomem(r));
		if (r->nkeys)
			memcpy(keys, r->keys, r->nkeys * sizeof(*keys));
		r->keys = keys;
		r->capkeys = cap;
	}
	r->keys[r->nkeys++] = *k;
	return true;
}

bool ng_json_next(struct ng_json_reader *r, struct ng_json_str *ret_key)
{
	if (r->st != NG_OK || r->depth <= 0)
		return false;
	struct ng_json_level *lv = &r->lv[r->depth];
	char close = lv->object ? '}' : ']';
	if (lv->first) {
		lv->first = false;
		if (r->p < r->end && *r->p == close) {
			r->p++;
			return jr_close(r);
		}
	} else {
		jp_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			jp_ws(r);
		} else if (r->p < r->end && *r->p == close) {
			r->p++;
			return jr_close(r);
		} else {
			return jr_fail(r,
				       jp_fail(r, r->p,
					       lv->object ? "malformed JSON: expected ',' or '}'"
							  : "malformed JSON: expected ',' or ']'"));
		}
	}
	if (!lv->object)
		return true;
	if (r->p >= r->end || *r->p != '"')
		return jr_fail(r, jp_fail(r, r->p, "malformed JSON: expected a key"));
	struct ng_json_str k;
	if (!jr_str(r, &k) || !jr_push_key(r, &k))
		return false;
	jp_ws(r);
	if (r->p >= r->end || *r->p != ':')
		return jr_fail(r, jp_fail(r, r->p, "malformed JSON: expected ':'"));
	r->p++;
	jp_ws(r);
	*ret_key = k;
	return true;
}

bool ng_json_string(struct ng_json_reader *r, struct ng_json_str *ret)
{
	if (r->st != NG_OK)
		return false;
	if (ng_json_peek(r) != NG_JSON_STRING) {
		(void)ng_json_skip(r);
		return false;
	}
	return jr_str(r, ret);
}

bool ng_json_number(struct ng_json_reader *r, double *ret)
{
	if (r->st != NG_OK)
		return false;
	if (ng_json_peek(r) != NG_JSON_NUMBER) {
		(void)ng_json_skip(r);
		return false;
	}
	ng_status st = jp_number(r, ret);
	return st == NG_OK || jr_fail(r, st);
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH */
bool ng_json_skip(struct ng_json_reader *r)
{
	if (r->st != NG_OK)
		return false;
	if (r->p >= r->end)
		return jr_fail(r, jp_fail(r, r->p, "malformed JSON: unexpected end"));
	struct ng_json_str s;
	switch (ng_json_peek(r)) {
	case NG_JSON_OBJECT:
	case NG_JSON_ARRAY:
		if (!ng_json_enter(r))
			return false;
		while (ng_json_next(r, &s))
			if (!ng_json_skip(r))
				return false;
		return r->st == NG_OK;
	case NG_JSON_STRING:
		return jr_str(r, &s);
	case NG_JSON_NUMBER: {
		double d;
		ng_status st = jp_number(r, &d);
		return st == NG_OK || jr_fail(r, st);
	}
	case NG_JSON_TRUE:
	case NG_JSON_NULL:
		r->p += 4;
		return true;
	case NG_JSON_FALSE:
		r->p += 5;
		return true;
	case NG_JSON_BAD:
		break;
	}
	return jr_fail(
	    r, jp_fail(r, r->p, *r->p == '\0' ? "NUL byte in JSON text" : "malformed JSON"));
}

bool ng_json_reader_end(struct ng_json_reader *r)
{
	if (r->st != NG_OK)
		return false;
	jp_ws(r);
	if (r->p == r->end)
		return true;
	if (*r->p == '\0')
		return jr_fail(r, jp_fail(r, r->p, "NUL byte in JSON text"));
	size_t off = (size_t)(r->p - r->start);
	return jr_fail(r, ng_err_set(r->err, NG_EPARSE, off,
				     "unexpected data after JSON value at byte %zu", off));
}
