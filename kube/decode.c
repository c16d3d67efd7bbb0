/* Kubernetes objects (cJSON trees) -> compact cache records. The tree is dropped by the caller
 * right after; a record keeps intern ids and small arrays in an arena of its own. This file holds
 * the helpers every family of kinds shares (kube/decode_internal.h), the dispatch by kind, and
 * objects decoded on their own (kube/one.h); the families are kube/decode_*.c. */
#include "kube/decode_internal.h"
#include "kube/kinds.h"
#include "kube/one.h"
#include "kube/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/cron.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/regex.h"
#include "common/tz.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages start with where the object came from ("items[3] (Pod default/web-1): "), except for
 * an object decoded on its own (kube_one_*), whose caller knows which object it is. */
ng_status kd_fail(struct kd_ctx *c, ng_status st, const char *field, const char *what)
{
	char label[200];
	const char *where = c->where;
	if (c->name) {
		(void)snprintf(label, sizeof(label), "%s (%s %s%s%.100s)", c->where, c->kind,
			       c->ns ? c->ns : "", c->ns ? "/" : "", c->name);
		where = label;
	}
	return ng_err_set(c->err, st, 0, "%s%s%s: %s", where, *where ? ": " : "", field, what);
}

ng_status kd_intern(struct kd_ctx *c, const char *s, uint32_t *ret)
{
	ng_status st = ng_intern_add(c->pool, s, strlen(s), ret);
	if (st != NG_OK)
		return kd_fail(c, st, "string pool", ng_status_str(st));
	return NG_OK;
}

void *kd_alloc(struct kd_ctx *c, size_t n)
{
	return n ? ng_arena_alloc(c->arena, n) : NULL;
}

/* @s (NULL: "") copied into the record's arena; NULL on OOM. */
const char *kd_dup_or_empty(struct kd_ctx *c, const char *s)
{
	return ng_arena_strndup(c->arena, s ? s : "", s ? strlen(s) : 0);
}

/* Optional string field: absent or null -> NG_INTERN_NONE; wrong type -> error. */
ng_status kd_opt_str(struct kd_ctx *c, const cJSON *obj, const char *key, const char *field,
		     uint32_t *ret)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*ret = NG_INTERN_NONE;
		return NG_OK;
	}
	if (!cJSON_IsString(v))
		return kd_fail(c, NG_EPARSE, field, "expected a string");
	return kd_intern(c, v->valuestring, ret);
}

static int cmp_label(const void *a, const void *b)
{
	const struct kube_label *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

ng_status kd_decode_labels(struct kd_ctx *c, const cJSON *j, const char *field,
			   const struct kube_label **ret, uint16_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j))
		return kd_fail(c, NG_EPARSE, field, "expected an object");
	size_t n = (size_t)cJSON_GetArraySize(j);
	if (n > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, field, "more than 256 labels");
	struct kube_label *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, field, "out of memory");
	size_t i = 0;
	for (const cJSON *e = j->child; e; e = e->next, i++) {
		if (!cJSON_IsString(e))
			return kd_fail(c, NG_EPARSE, field, "label values must be strings");
		ng_status st = kd_intern(c, e->string, &out[i].key);
		if (st == NG_OK)
			st = kd_intern(c, e->valuestring, &out[i].val);
		if (st != NG_OK)
			return st;
	}
	if (n > 1) /* qsort(NULL, 0) is undefined, and a "labels: {}" object has none */
		qsort(out, n, sizeof(*out), cmp_label);
	*ret = out;
	*ret_n = (uint16_t)n;
	return NG_OK;
}

const char *kube_exempt_entry_problem(const char *s)
{
	if (strcmp(s, "*") == 0)
		return "\"*\" alone would exempt every user: name a user or group, or a prefix "
		       "followed by '*' (e.g. system:serviceaccount:kube-system:*)";
	return NULL;
}

/* Array of strings -> array of intern ids. */
ng_status kd_decode_str_array(struct kd_ctx *c, const cJSON *j, const char *field, size_t max,
			      const uint32_t **ret, uint16_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsArray(j))
		return kd_fail(c, NG_EPARSE, field, "expected an array of strings");
	size_t n = (size_t)cJSON_GetArraySize(j);
	if (n > max)
		return kd_fail(c, NG_ELIMIT, field, "too many entries");
	uint32_t *out = kd_alloc(c, n * sizeof(*out));
	if (n && !out)
		return kd_fail(c, NG_ENOMEM, field, "out of memory");
	size_t i = 0;
	for (const cJSON *e = j->child; e; e = e->next, i++) {
		if (!cJSON_IsString(e))
			return kd_fail(c, NG_EPARSE, field, "expected an array of strings");
		ng_status st = kd_intern(c, e->valuestring, &out[i]);
		if (st != NG_OK)
			return st;
	}
	*ret = out;
	*ret_n = (uint16_t)n;
	return NG_OK;
}

/* The record being decoded, zeroed. */
void *kd_record(struct kd_ctx *c, enum kube_resource r)
{
	c->obj->res = r;
	memset(&c->obj->rec, 0, sizeof(c->obj->rec));
	return &c->obj->rec;
}

uint8_t kd_cond_status(const char *s)
{
	return !s                        ? KUBE_COND_UNKNOWN
	       : strcmp(s, "True") == 0  ? KUBE_COND_TRUE
	       : strcmp(s, "False") == 0 ? KUBE_COND_FALSE
					 : KUBE_COND_UNKNOWN;
}

/* Room in the record's arena for the first @max items of @arr (none unless it is an array), of
 * @size bytes each; *@ret_n gets how many. NULL with *@ret_n > 0 is out of memory. */
void *kd_items_room(struct kd_ctx *c, const cJSON *arr, size_t max, size_t size, size_t *ret_n)
{
	size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
	*ret_n = n < max ? n : max;
	return *ret_n ? kd_alloc(c, *ret_n * size) : NULL;
}

/* Records the first problem of a field the gate does not read (kube_nd_detail.spec_error): such
 * a problem refuses the request at admission but never drops it from the cache. */
void kd_problem(struct ng_err *verr, const char *fmt, ...)
{
	if (verr->status != NG_OK)
		return;
	verr->status = NG_EPARSE;
	verr->offset = 0;
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(verr->msg, sizeof(verr->msg), fmt, ap);
	va_end(ap);
}

/* Optional non-negative integer of seconds @key of @obj: -1 when absent or null. */
int64_t kd_opt_seconds(const cJSON *obj, const char *key, const char *field, struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	int64_t secs;
	if (!v || cJSON_IsNull(v))
		return -1;
	if (!ng_json_int64(v, &secs) || secs < 0) {
		kd_problem(verr, "%s: expected a non-negative integer of seconds", field);
		return -1;
	}
	return secs;
}

/* Optional string @key of @obj copied into the record's arena: NULL when absent, null or not a
 * string of at most @max bytes (then a problem saying it expected @what). Only OOM fails. */
ng_status kd_opt_text(struct kd_ctx *c, const cJSON *obj, const char *key, const char *field,
		      const char *what, size_t max, const char **ret, struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return NG_OK;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > max) {
		kd_problem(verr, "%s: expected %s", field, what);
		return NG_OK;
	}
	*ret = ng_arena_strndup(c->arena, v->valuestring, strlen(v->valuestring));
	return *ret ? NG_OK : kd_fail(c, NG_ENOMEM, field, "out of memory");
}

static int cmp_member(const void *a, const void *b)
{
	const cJSON *const *x = a, *const *y = b;
	return strcmp((*x)->string, (*y)->string);
}

/* Appends @v as compact JSON with every object's keys sorted: two equal values (keys are unique:
 * ng_json_parse() refuses duplicates) give equal text. Depth is bounded by the parser's. */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH (parser) */
ng_status kd_canonical_json(struct kd_ctx *c, const cJSON *v, struct ng_buf *b)
{
	if (cJSON_IsString(v))
		return ng_buf_json_str(b, v->valuestring, strlen(v->valuestring));
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (isnan(d) || isinf(d))
			return ng_buf_puts(b, "null"); /* as cJSON prints what JSON cannot hold */
		/* Integers JSON numbers hold exactly (|d| < 2^53) print as integers. */
		if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(int64_t)d)
			return ng_buf_i64(b, (int64_t)d);
		return ng_buf_printf(b, "%.17g", d);
	}
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return ng_buf_puts(b, cJSON_IsTrue(v)    ? "true"
				      : cJSON_IsFalse(v) ? "false"
							 : "null");
	size_t n = (size_t)cJSON_GetArraySize(v);
	const cJSON **kids = kd_alloc(c, n * sizeof(*kids));
	if (n && !kids)
		return NG_ENOMEM;
	size_t i = 0;
	for (const cJSON *e = v->child; e; e = e->next)
		kids[i++] = e;
	bool obj = cJSON_IsObject(v);
	if (obj && n > 1)
		qsort(kids, n, sizeof(*kids), cmp_member);
	ng_status st = ng_buf_puts(b, obj ? "{" : "[");
	for (i = 0; st == NG_OK && i < n; i++) {
		st = i ? ng_buf_puts(b, ",") : NG_OK;
		if (st == NG_OK && obj)
			st = ng_buf_json_str(b, kids[i]->string, strlen(kids[i]->string));
		st = st == NG_OK && obj ? ng_buf_puts(b, ":") : st;
		st = st == NG_OK ? kd_canonical_json(c, kids[i], b) : st;
	}
	return st == NG_OK ? ng_buf_puts(b, obj ? "}" : "]") : st;
}

/* A Go duration ("90m", "1h30m", "2.5s"): decimal numbers, each with a unit of ns, us, µs, ms, s,
 * m or h, summed. False when @s is not one or is over ~146 years. */
bool kd_parse_duration_ms(const char *s, int64_t *ret_ms)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
		     {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
	double total = 0;
	if (!*s)
		return false;
	while (*s) {
		double num = 0, scale = 1;
		bool digits = false;
		for (; *s >= '0' && *s <= '9'; s++, digits = true)
			num = num * 10 + (*s - '0');
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9'; s++, digits = true)
				num += (*s - '0') * (scale /= 10);
		size_t u = 0, nu = sizeof(units) / sizeof(units[0]);
		while (u < nu && strncmp(s, units[u].unit, strlen(units[u].unit)) != 0)
			u++;
		/* "ms" is listed before "m" and "s", so "5ms" is not read as minutes. */
		if (!digits || u == nu)
			return false;
		total += num * units[u].ns;
		s += strlen(units[u].unit);
	}
	if (total > 4.6e18)
		return false;
	*ret_ms = (int64_t)(total / 1e6);
	return true;
}

int64_t kd_opt_time_ms(const cJSON *obj, const char *key)
{
	const char *t = ng_json_str(obj, key);
	int64_t ms = 0;
	if (t && ng_parse_rfc3339_ms(t, strlen(t), &ms) != NG_OK)
		ms = 0;
	return ms;
}

ng_status kd_decode_int_or_string(struct kd_ctx *c, const cJSON *j, const char *field,
				  struct kube_int_or_string *ret, struct ng_err *verr)
{
	memset(ret, 0, sizeof(*ret));
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	ret->set = true;
	if (cJSON_IsString(j)) {
		ret->is_str = true;
		return kd_intern(c, j->valuestring, &ret->str);
	}
	if (!ng_json_int64(j, &ret->i))
		return ng_err_set(verr, NG_EPARSE, 0, "%s: expected an integer or a percentage",
				  field);
	return NG_OK;
}

/* The first chunk of an object's own arena (the kinds not compacted): a node's side data
 * (labels, conditions, taints, a few strings) is a few hundred bytes; one of 1 KiB was most of
 * a cached node's memory, and at 100,000 nodes writing it a good part of the start's time.
 * What does not fit goes on in further chunks. */
#define OBJECT_ARENA_CHUNK 256

/* kube_decode_as(); @where NULL for an object decoded on its own (messages without a prefix),
 * and with @name_optional a missing metadata.name decodes as NG_INTERN_NONE. */
static ng_status decode_as(struct ng_intern *pool, struct ng_arena *scratch, enum kube_resource res,
			   const cJSON *obj, const char *where, bool name_optional,
			   struct kube_object *ret, struct ng_err *reterr)
{
	struct kube_object out;
	struct kd_ctx c = {.obj = &out, .pool = pool, .err = reterr, .where = where ? where : ""};
	const char *sep = where ? ": " : "";
	if (!cJSON_IsObject(obj))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s%sexpected an object", c.where, sep);
	const cJSON *meta = ng_json_get(obj, "metadata");
	const char *name = ng_json_str(meta, "name");
	const char *ns = ng_json_str(meta, "namespace");
	const struct kube_kind_row *k = &kube_kinds[res];
	const char *kind = k->kind;
	if ((!name && !name_optional) || (name && !*name))
		return where ? ng_err_set(reterr, NG_EPARSE, 0, "%s (%s): metadata.name: required",
					  where, kind)
			     : ng_err_set(reterr, NG_EPARSE, 0, "metadata.name: required");
	/* Objects written by hand may leave the namespace out; kubectl would use "default". */
	if (k->namespaced && (!ns || !*ns))
		ns = "default";
	if (where) {
		c.kind = kind;
		c.ns = k->namespaced ? ns : NULL;
		c.name = name;
	}
	/* Pods (the many) are decoded in scratch and copied into one exact block; the few other
	 * objects keep an arena, whose nested selectors would be tedious to copy. */
	bool compact = k->compact && scratch;
	if (compact)
		ng_arena_reset(scratch);
	c.arena = compact ? scratch : ng_arena_create_sized(SIZE_MAX, OBJECT_ARENA_CHUNK);
	if (!c.arena)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s%sout of memory", where ? where : "",
				  sep);
	uint32_t name_id = NG_INTERN_NONE, ns_id = NG_INTERN_NONE;
	ng_status st = NG_OK;
	if (!k->compact && name)
		st = kd_intern(&c, name, &name_id);
	if (st == NG_OK && k->namespaced)
		st = kd_intern(&c, ns, &ns_id);
	struct kd_id id = {.name = name ? name : "", .name_id = name_id, .ns_id = ns_id};
	if (st == NG_OK)
		st = k->decode(&c, obj, &id);
	if (st == NG_OK && compact) {
		out.side = k->compact(&out.rec);
		if (!out.side)
			st = ng_err_set(reterr, NG_ENOMEM, 0, "%s%sout of memory",
					where ? where : "", sep);
	} else if (st == NG_OK) {
		out.side = c.arena;
	}
	if (st != NG_OK) {
		if (!compact)
			ng_arena_destroy(c.arena);
		return st;
	}
	*ret = out;
	return NG_OK;
}

ng_status kube_decode_as(struct ng_intern *pool, struct ng_arena *scratch, enum kube_resource res,
			 const cJSON *obj, const char *where, struct kube_object *ret,
			 struct ng_err *reterr)
{
	return decode_as(pool, scratch, res, obj, where, false, ret, reterr);
}

/* Whether @api (an object's apiVersion) is one @k reads: its group and version, or any version
 * of its group for nodegate's own kinds. */
static bool api_matches(const struct kube_kind_row *k, const char *api)
{
	size_t glen = strlen(k->group);
	if (!api)
		return false;
	if (glen && (strncmp(api, k->group, glen) != 0 || api[glen] != '/'))
		return false;
	const char *version = glen ? api + glen + 1 : api;
	return k->any_version || strcmp(version, k->version) == 0;
}

/* The kind @obj's kind and apiVersion name among those kept, or KUBE_RES_COUNT. */
static enum kube_resource resource_of(const cJSON *obj)
{
	const char *kind = ng_json_str(obj, "kind");
	const char *api = ng_json_str(obj, "apiVersion");
	for (int r = 0; kind && r < KUBE_RES_COUNT; r++)
		if (strcmp(kind, kube_kinds[r].kind) == 0 && api_matches(&kube_kinds[r], api))
			return (enum kube_resource)r;
	return KUBE_RES_COUNT;
}

ng_status kube_decode_object(struct ng_intern *pool, struct ng_arena *scratch, const cJSON *obj,
			     const char *where, struct kube_object *ret, struct ng_err *reterr)
{
	if (!cJSON_IsObject(obj))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: expected an object", where);
	if (!ng_json_str(obj, "kind"))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: kind: required", where);
	enum kube_resource r = resource_of(obj);
	if (r == KUBE_RES_COUNT)
		return NG_ENOTFOUND;
	return kube_decode_as(pool, scratch, r, obj, where, ret, reterr);
}

/* ---- one object on its own ---- */

ng_status kube_one_decode_as(enum kube_resource res, const cJSON *obj, unsigned flags,
			     struct kube_one **ret_one, struct ng_err *reterr)
{
	if (res >= KUBE_RES_COUNT)
		return ng_err_set(reterr, NG_EINVAL, 0, "no such resource");
	struct kube_one *one = calloc(1, sizeof(*one));
	if (!one || !(one->pool = ng_intern_create())) {
		free(one);
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	}
	/* No scratch: a pod keeps an arena of its own, which kube_side_free() frees too. */
	ng_status st = decode_as(one->pool, NULL, res, obj, NULL, flags & KUBE_ONE_NAME_OPTIONAL,
				 &one->obj, reterr);
	if (st != NG_OK) {
		ng_intern_destroy(one->pool);
		free(one);
		return st;
	}
	*ret_one = one;
	return NG_OK;
}

ng_status kube_one_decode(const cJSON *obj, struct kube_one **ret_one, struct ng_err *reterr)
{
	if (!cJSON_IsObject(obj))
		return ng_err_set(reterr, NG_EPARSE, 0, "expected an object");
	if (!ng_json_str(obj, "kind"))
		return ng_err_set(reterr, NG_EPARSE, 0, "kind: required");
	enum kube_resource r = resource_of(obj);
	if (r == KUBE_RES_COUNT)
		return ng_err_set(
		    reterr, NG_ENOTFOUND, 0, "kind: %.60s %.60s is not a kind nodegate reads",
		    ng_json_str(obj, "apiVersion") ? ng_json_str(obj, "apiVersion") : "",
		    ng_json_str(obj, "kind"));
	return kube_one_decode_as(r, obj, 0, ret_one, reterr);
}

ng_status kube_parse_scratch(const char *buf, size_t len, struct ng_arena **ret_arena,
			     cJSON **ret_root, struct ng_err *reterr)
{
	cJSON *root = NULL;
	struct ng_arena *arena = ng_arena_create(SIZE_MAX);
	if (!arena)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	ng_status st = ng_json_parse(buf, len, arena, &root, reterr);
	if (st != NG_OK) {
		ng_arena_destroy(arena);
		return st;
	}
	*ret_arena = arena;
	*ret_root = root;
	return NG_OK;
}

ng_status kube_one_parse(const char *buf, size_t len, struct kube_one **ret_one,
			 struct ng_err *reterr)
{
	struct ng_arena *arena = NULL;
	cJSON *root = NULL;
	ng_status st = kube_parse_scratch(buf, len, &arena, &root, reterr);
	if (st == NG_OK)
		st = kube_one_decode(root, ret_one, reterr);
	ng_arena_destroy(arena);
	return st;
}

void kube_one_destroy(struct kube_one *one)
{
	if (!one)
		return;
	kube_side_free(one->obj.side);
	ng_intern_destroy(one->pool);
	free(one);
}

enum kube_resource kube_one_resource(const struct kube_one *one)
{
	return one->obj.res;
}

const struct ng_intern *kube_one_pool(const struct kube_one *one)
{
	return one->pool;
}

const void *kd_one_record(const struct kube_one *one, enum kube_resource res)
{
	return one && one->obj.res == res ? &one->obj.rec : NULL;
}
