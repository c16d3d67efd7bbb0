/* Strict field checking of nodegate's objects against the CRDs' schemas (kube/strict.h). */
#include "kube/strict.h"

#include "common/buf.h"
#include "common/json.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Paths longer than this are cut in messages (nodegate's deepest field path is under 100). */
#define PATH_BYTES 256
/* Names longer than this are not compared for a suggestion: no field of ours is near it, and
 * the distance table stays on the stack. */
#define SUGGEST_MAX 64

struct kube_strict {
	cJSON *schemas[16]; /* parsed kube_crd_schemas[i], NULL until needed */
};

_Static_assert(16 >= 6, "room for every kind");

struct kube_strict *kube_strict_create(void)
{
	return calloc(1, sizeof(struct kube_strict));
}

void kube_strict_destroy(struct kube_strict *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < sizeof(s->schemas) / sizeof(s->schemas[0]); i++)
		cJSON_Delete(s->schemas[i]);
	free(s);
}

/* Edit distance of @a and @b (each at most SUGGEST_MAX bytes): insertions, deletions,
 * substitutions and swaps of two neighbours ("spce" is one from "spec"), each counting one. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t rows[3][SUGGEST_MAX + 1];
	size_t *two = rows[0], *one = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= lb; j++)
		one[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = one[j - 1] + (a[i - 1] != b[j - 1]);
			if (one[j] + 1 < best)
				best = one[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    two[j - 2] + 1 < best)
				best = two[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = two;
		two = one;
		one = cur;
		cur = t;
	}
	return one[lb];
}

/* The property of @props closest to @key when a typo away (a third of its length, at least 1),
 * or NULL. */
static const char *suggest(const cJSON *props, const char *key)
{
	size_t lk = strlen(key), best = (size_t)-1;
	const char *name = NULL;
	if (lk > SUGGEST_MAX)
		return NULL;
	const cJSON *p;
	cJSON_ArrayForEach(p, props)
	{
		size_t lp = strlen(p->string);
		if (lp > SUGGEST_MAX)
			continue;
		size_t d = distance(key, lk, p->string, lp);
		if (d < best) {
			best = d;
			name = p->string;
		}
	}
	size_t allowed = lk / 3 > 1 ? lk / 3 : 1;
	return best <= allowed ? name : NULL;
}

/* @key as a message shows it: at most 60 bytes, anything but printable ASCII as '?' (a key is
 * the input's, and a message is read on a terminal), in double quotes unless it is a plain
 * name (letters, digits, '_', '-', '.'), so " spec" reads as the odd key it is. */
static void put_name(char *out, size_t cap, const char *key)
{
	bool plain = key[0] != '\0';
	for (size_t i = 0; plain && key[i] && i < 60; i++)
		plain = isalnum((unsigned char)key[i]) || key[i] == '_' || key[i] == '-' ||
			key[i] == '.';
	size_t n = 0;
	if (!plain && cap > 3)
		out[n++] = '"';
	for (size_t i = 0; i < 60 && n + 2 < cap && key[i]; i++) {
		unsigned char c = (unsigned char)key[i];
		out[n++] = c < 0x20 || c >= 0x7f || c == '"' ? '?' : (char)c;
	}
	if (!plain && n + 1 < cap)
		out[n++] = '"';
	out[n] = '\0';
}

struct walk {
	char path[PATH_BYTES];
	const char *where;
	struct ng_err *err;
};

static ng_status check_value(struct walk *w, const cJSON *v, const cJSON *schema);

/* The error for @key, unknown at @w->path (@props: the fields it has, for a suggestion). */
static ng_status unknown(struct walk *w, const cJSON *props, const char *key)
{
	const char *meant = props ? suggest(props, key) : NULL;
	const char *sep = w->where && *w->where ? ": " : "";
	char name[64];
	put_name(name, sizeof(name), key);
	return ng_err_set(w->err, NG_EPARSE, 0, "%s%s%s%s%s: unknown field%s%.60s%s",
			  w->where ? w->where : "", sep, w->path, *w->path ? "." : "", name,
			  meant ? " (did you mean " : "", meant ? meant : "", meant ? "?)" : "");
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH, the parser's bound */
static ng_status check_object(struct walk *w, const cJSON *v, const cJSON *schema, bool top)
{
	const cJSON *props = ng_json_get(schema, "properties");
	const cJSON *extra = ng_json_get(schema, "additionalProperties");
	size_t at = strlen(w->path);
	const cJSON *m;
	cJSON_ArrayForEach(m, v)
	{
		if (top && (strcmp(m->string, "apiVersion") == 0 ||
			    strcmp(m->string, "kind") == 0 || strcmp(m->string, "metadata") == 0))
			continue;
		const cJSON *sub = ng_json_get(props, m->string);
		if (!sub && cJSON_IsObject(extra))
			sub = extra;
		if (!sub)
			return unknown(w, props, m->string);
		char name[64];
		put_name(name, sizeof(name), m->string);
		ng_fmt(w->path + at, sizeof(w->path) - at, "%s%s", at ? "." : "", name);
		ng_status st = check_value(w, m, sub);
		w->path[at] = '\0';
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH, the parser's bound */
static ng_status check_value(struct walk *w, const cJSON *v, const cJSON *schema)
{
	if (cJSON_IsTrue(ng_json_get(schema, "x-kubernetes-preserve-unknown-fields")))
		return NG_OK;
	if (cJSON_IsObject(v))
		return check_object(w, v, schema, false);
	const cJSON *items = ng_json_get(schema, "items");
	if (!cJSON_IsArray(v) || !items)
		return NG_OK; /* scalars, and a type mismatch: the decoder's to say */
	size_t at = strlen(w->path), i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, v)
	{
		ng_fmt(w->path + at, sizeof(w->path) - at, "[%zu]", i++);
		ng_status st = check_value(w, e, items);
		w->path[at] = '\0';
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

/* The index in kube_crd_schemas of @obj's kind, or -1 when it is not one of nodegate's. */
static int kind_index(const cJSON *obj)
{
	const char *kind = ng_json_str(obj, "kind"), *api = ng_json_str(obj, "apiVersion");
	if (!kind || !api)
		return -1;
	for (size_t i = 0; i < kube_ncrd_schemas; i++) {
		size_t lg = strlen(kube_crd_schemas[i].group);
		if (strcmp(kind, kube_crd_schemas[i].kind) == 0 &&
		    strncmp(api, kube_crd_schemas[i].group, lg) == 0 && api[lg] == '/')
			return (int)i;
	}
	return -1;
}

ng_status kube_strict_check(struct kube_strict *s, const cJSON *obj, const char *where,
			    struct ng_err *reterr)
{
	int k = cJSON_IsObject(obj) ? kind_index(obj) : -1;
	if (k < 0 || (size_t)k >= sizeof(s->schemas) / sizeof(s->schemas[0]))
		return NG_OK;
	if (!s->schemas[k]) {
		const struct kube_crd_schema *c = &kube_crd_schemas[k];
		struct ng_err e = {0};
		ng_status st = ng_json_parse(c->json, c->len, NULL, &s->schemas[k], &e);
		if (st != NG_OK) /* generated by us: only memory can fail */
			return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	}
	struct walk w = {.where = where, .err = reterr};
	return check_object(&w, obj, s->schemas[k], true);
}

ng_status kube_strict_check_json(const char *buf, size_t len, struct ng_err *reterr)
{
	cJSON *root = NULL;
	ng_status st = ng_json_parse(buf, len, NULL, &root, reterr);
	if (st != NG_OK)
		return st;
	struct kube_strict *s = kube_strict_create();
	st = s ? kube_strict_check(s, root, NULL, reterr)
	       : ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	kube_strict_destroy(s);
	cJSON_Delete(root);
	return st;
}
