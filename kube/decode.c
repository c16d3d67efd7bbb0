/* Kubernetes objects (cJSON trees) -> compact cache records. The tree is dropped by the caller
 * right after; a record keeps intern ids and small arrays in an arena of its own. */
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

struct ctx {
	struct kube_object *obj;
	struct ng_intern *pool;
	struct ng_arena *arena;
	const char *where; /* "items[3] (Pod default/web-1)" */
	struct ng_err *err;
};

/* Messages start with where the object came from ("items[3] (Pod default/web-1): "), except for
 * an object decoded on its own (kube_one_*), whose caller knows which object it is. */
static ng_status fail(struct ctx *c, ng_status st, const char *field, const char *what)
{
	return ng_err_set(c->err, st, 0, "%s%s%s: %s", c->where, *c->where ? ": " : "", field,
			  what);
}

static ng_status intern(struct ctx *c, const char *s, uint32_t *ret)
{
	ng_status st = ng_intern_add(c->pool, s, strlen(s), ret);
	if (st != NG_OK)
		return fail(c, st, "string pool", ng_status_str(st));
	return NG_OK;
}

static void *alloc(struct ctx *c, size_t n)
{
	return n ? ng_arena_alloc(c->arena, n) : NULL;
}

/* @s (NULL: "") copied into the record's arena; NULL on OOM. */
static const char *dup_or_empty(struct ctx *c, const char *s)
{
	return ng_arena_strndup(c->arena, s ? s : "", s ? strlen(s) : 0);
}

/* Optional string field: absent or null -> NG_INTERN_NONE; wrong type -> error. */
static ng_status opt_str(struct ctx *c, const cJSON *obj, const char *key, const char *field,
			 uint32_t *ret)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*ret = NG_INTERN_NONE;
		return NG_OK;
	}
	if (!cJSON_IsString(v))
		return fail(c, NG_EPARSE, field, "expected a string");
	return intern(c, v->valuestring, ret);
}

static int cmp_label(const void *a, const void *b)
{
	const struct kube_label *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static ng_status decode_labels(struct ctx *c, const cJSON *j, const char *field,
			       const struct kube_label **ret, uint16_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j))
		return fail(c, NG_EPARSE, field, "expected an object");
	size_t n = (size_t)cJSON_GetArraySize(j);
	if (n > NG_MAX_LABELS)
		return fail(c, NG_ELIMIT, field, "more than 256 labels");
	struct kube_label *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, field, "out of memory");
	size_t i = 0;
	for (const cJSON *e = j->child; e; e = e->next, i++) {
		if (!cJSON_IsString(e))
			return fail(c, NG_EPARSE, field, "label values must be strings");
		ng_status st = intern(c, e->string, &out[i].key);
		if (st == NG_OK)
			st = intern(c, e->valuestring, &out[i].val);
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
static ng_status decode_str_array(struct ctx *c, const cJSON *j, const char *field, size_t max,
				  const uint32_t **ret, uint16_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsArray(j))
		return fail(c, NG_EPARSE, field, "expected an array of strings");
	size_t n = (size_t)cJSON_GetArraySize(j);
	if (n > max)
		return fail(c, NG_ELIMIT, field, "too many entries");
	uint32_t *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, field, "out of memory");
	size_t i = 0;
	for (const cJSON *e = j->child; e; e = e->next, i++) {
		if (!cJSON_IsString(e))
			return fail(c, NG_EPARSE, field, "expected an array of strings");
		ng_status st = intern(c, e->valuestring, &out[i]);
		if (st != NG_OK)
			return st;
	}
	*ret = out;
	*ret_n = (uint16_t)n;
	return NG_OK;
}

/* ---- label syntax (apimachinery validation) ---- */

static bool alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* A qualified name part: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 bytes. */
static bool name_part_ok(const char *s, size_t len, bool allow_empty)
{
	if (len == 0)
		return allow_empty;
	if (len > 63 || !alnum(s[0]) || !alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* DNS-1123 subdomain: lower-case alphanumerics, '-' and '.', each label starting and ending
 * alphanumeric, at most 253 bytes. */
static bool dns_subdomain_ok(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || s[i] == '.') {
			if (i == start)
				return false;
			char a = s[start], z = s[i - 1];
			if (!((a >= 'a' && a <= 'z') || (a >= '0' && a <= '9')) ||
			    !((z >= 'a' && z <= 'z') || (z >= '0' && z <= '9')))
				return false;
			start = i + 1;
			continue;
		}
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
			return false;
	}
	return true;
}

/* The reasons are worded as the API server words them (apimachinery's IsQualifiedName and
 * IsValidLabelValue), without the examples and regular expressions that would not fit a
 * message; the first problem is reported, in the order the API server lists them. */
const char *kube_label_key_problem(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);
	if (slash) {
		size_t plen = (size_t)(slash - s);
		if (memchr(slash + 1, '/', len - plen - 1))
			return "a qualified name is a name part with an optional DNS subdomain "
			       "prefix and one '/' (e.g. 'MyName' or 'example.com/MyName')";
		if (plen == 0)
			return "prefix part must be non-empty";
		if (plen > 253)
			return "prefix part must be no more than 253 characters";
		if (!dns_subdomain_ok(s, plen))
			return "prefix part a lowercase RFC 1123 subdomain must consist of lower "
			       "case alphanumeric characters, '-' or '.', and must start and end "
			       "with an alphanumeric character";
		s = slash + 1;
		len -= plen + 1;
	}
	if (len == 0)
		return "name part must be non-empty";
	if (len > 63)
		return "name part must be no more than 63 characters";
	if (!name_part_ok(s, len, false))
		return "name part must consist of alphanumeric characters, '-', '_' or '.', and "
		       "must start and end with an alphanumeric character";
	return NULL;
}

const char *kube_label_value_problem(const char *s, size_t len)
{
	if (len > 63)
		return "must be no more than 63 characters";
	if (!name_part_ok(s, len, true))
		return "a valid label must be an empty string or consist of alphanumeric "
		       "characters, '-', '_' or '.', and must start and end with an alphanumeric "
		       "character";
	return NULL;
}

static int op_from_str(const char *s, bool node_ops)
{
	static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
	int n = node_ops ? 6 : 4;
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* One matchLabels entry @e as an In requirement with one value. */
static ng_status match_label(struct ng_intern *pool, struct ng_arena *arena, const cJSON *e,
			     const char *field, struct kube_requirement *r, struct ng_err *reterr)
{
	const char *p;
	if (!cJSON_IsString(e))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchLabels[%.60s]: value must be a string", field,
				  e->string);
	if ((p = kube_label_key_problem(e->string, strlen(e->string))) ||
	    (p = kube_label_value_problem(e->valuestring, strlen(e->valuestring))))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s.matchLabels[%.60s]: %s", field,
				  e->string, p);
	uint32_t *v = ng_arena_alloc(arena, sizeof(*v));
	if (!v)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s: out of memory", field);
	memset(r, 0, sizeof(*r));
	r->op = KUBE_OP_IN;
	r->nvalues = 1;
	r->values = v;
	ng_status st = ng_intern_add(pool, e->string, strlen(e->string), &r->key);
	if (st == NG_OK)
		st = ng_intern_add(pool, e->valuestring, strlen(e->valuestring), v);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s: %s", field, ng_status_str(st));
	return NG_OK;
}

/* The values of matchExpressions[@idx] (@nv of them, in @vals) into @v: strings of label value
 * syntax. */
static ng_status expression_values(struct ng_intern *pool, const cJSON *vals, size_t nv,
				   const char *field, size_t idx, uint32_t *v,
				   struct ng_err *reterr)
{
	size_t vi = 0;
	for (const cJSON *ve = nv ? vals->child : NULL; ve; ve = ve->next, vi++) {
		const char *p;
		if (!cJSON_IsString(ve))
			return ng_err_set(reterr, NG_EPARSE, 0,
					  "%s.matchExpressions[%zu].values[%zu]: expected a string",
					  field, idx, vi);
		if ((p = kube_label_value_problem(ve->valuestring, strlen(ve->valuestring))))
			return ng_err_set(reterr, NG_EPARSE, 0,
					  "%s.matchExpressions[%zu].values[%zu]: %s", field, idx,
					  vi, p);
		ng_status st =
		    ng_intern_add(pool, ve->valuestring, strlen(ve->valuestring), &v[vi]);
		if (st != NG_OK)
			return ng_err_set(reterr, st, 0, "%s: %s", field, ng_status_str(st));
	}
	return NG_OK;
}

/* Key, operator and value count of matchExpressions[@idx]; the operator in *@ret_op. */
static ng_status expression_form(const cJSON *e, const char *field, size_t idx, int *ret_op,
				 struct ng_err *reterr)
{
	const char *key = ng_json_str(e, "key");
	const char *opname = ng_json_str(e, "operator");
	const cJSON *vals = ng_json_get(e, "values");
	const char *p;
	if (!cJSON_IsObject(e))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchExpressions[%zu]: expected an object", field, idx);
	if (!key)
		return ng_err_set(reterr, NG_EPARSE, 0, "%s.matchExpressions[%zu].key: required",
				  field, idx);
	if ((p = kube_label_key_problem(key, strlen(key))))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s.matchExpressions[%zu].key: %s", field,
				  idx, p);
	int op = opname ? op_from_str(opname, false) : -1;
	if (op < 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchExpressions[%zu].operator: \"%.40s\" is not one of In, "
				  "NotIn, Exists, DoesNotExist",
				  field, idx, opname ? opname : "");
	if (vals && !cJSON_IsNull(vals) && !cJSON_IsArray(vals))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchExpressions[%zu].values: expected an array", field, idx);
	size_t nv = cJSON_IsArray(vals) ? (size_t)cJSON_GetArraySize(vals) : 0;
	if ((op == KUBE_OP_IN || op == KUBE_OP_NOTIN) && nv == 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchExpressions[%zu].values: must be non-empty when "
				  "operator is %s",
				  field, idx, opname);
	if ((op == KUBE_OP_EXISTS || op == KUBE_OP_DOES_NOT_EXIST) && nv != 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "%s.matchExpressions[%zu].values: must be empty when operator "
				  "is %s",
				  field, idx, opname);
	if (nv > NG_MAX_SELECTOR_VALUES)
		return ng_err_set(reterr, NG_ELIMIT, 0,
				  "%s.matchExpressions[%zu].values: more than %d values", field,
				  idx, NG_MAX_SELECTOR_VALUES);
	*ret_op = op;
	return NG_OK;
}

/* One matchExpressions entry @e (index @idx) into @r. */
static ng_status match_expression(struct ng_intern *pool, struct ng_arena *arena, const cJSON *e,
				  const char *field, size_t idx, struct kube_requirement *r,
				  struct ng_err *reterr)
{
	int op = 0; /* written by expression_form() on success */
	ng_status st = expression_form(e, field, idx, &op, reterr);
	if (st != NG_OK)
		return st;
	const char *key = ng_json_str(e, "key");
	const cJSON *vals = ng_json_get(e, "values");
	size_t nv = cJSON_IsArray(vals) ? (size_t)cJSON_GetArraySize(vals) : 0;
	uint32_t *v = nv ? ng_arena_alloc(arena, nv * sizeof(*v)) : NULL;
	if (nv && !v)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s: out of memory", field);
	memset(r, 0, sizeof(*r));
	r->op = (uint8_t)op;
	r->nvalues = (uint16_t)nv;
	r->values = v;
	st = ng_intern_add(pool, key, strlen(key), &r->key);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s: %s", field, ng_status_str(st));
	return expression_values(pool, vals, nv, field, idx, v, reterr);
}

ng_status kube_decode_selector(struct ng_intern *pool, struct ng_arena *arena, const cJSON *j,
			       const char *field, struct kube_selector *ret_sel,
			       struct ng_err *reterr)
{
	struct kube_selector sel = {0};
	if (!j || cJSON_IsNull(j)) {
		*ret_sel = sel;
		return NG_OK;
	}
	if (!cJSON_IsObject(j))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: expected an object", field);
	const cJSON *ml = ng_json_get(j, "matchLabels");
	const cJSON *me = ng_json_get(j, "matchExpressions");
	if (ml && !cJSON_IsNull(ml) && !cJSON_IsObject(ml))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s.matchLabels: expected an object",
				  field);
	if (me && !cJSON_IsNull(me) && !cJSON_IsArray(me))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s.matchExpressions: expected an array",
				  field);
	size_t nml = cJSON_IsObject(ml) ? (size_t)cJSON_GetArraySize(ml) : 0;
	size_t nme = cJSON_IsArray(me) ? (size_t)cJSON_GetArraySize(me) : 0;
	if (nml + nme > NG_MAX_SELECTOR_TERMS)
		return ng_err_set(reterr, NG_ELIMIT, 0, "%s: more than %d requirements", field,
				  NG_MAX_SELECTOR_TERMS);
	struct kube_requirement *reqs =
	    nml + nme ? ng_arena_alloc(arena, (nml + nme) * sizeof(*reqs)) : NULL;
	if (nml + nme && !reqs)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s: out of memory", field);
	size_t n = 0;
	ng_status st = NG_OK;
	for (const cJSON *e = nml ? ml->child : NULL; st == NG_OK && e; e = e->next)
		st = match_label(pool, arena, e, field, &reqs[n++], reterr);
	size_t idx = 0;
	for (const cJSON *e = nme ? me->child : NULL; st == NG_OK && e; e = e->next, idx++)
		st = match_expression(pool, arena, e, field, idx, &reqs[n++], reterr);
	if (st != NG_OK)
		return st;
	sel.present = true;
	sel.nreqs = (uint16_t)n;
	sel.reqs = reqs;
	*ret_sel = sel;
	return NG_OK;
}

/* Node-selector requirements: never an error, an invalid one marks its term invalid. */
static bool node_req(struct ctx *c, const cJSON *e, bool field, struct kube_requirement *r,
		     ng_status *st)
{
	memset(r, 0, sizeof(*r));
	const char *key = ng_json_str(e, "key");
	const char *opname = ng_json_str(e, "operator");
	const cJSON *vals = ng_json_get(e, "values");
	int op = opname ? op_from_str(opname, true) : -1;
	if (!key || op < 0 || (vals && !cJSON_IsNull(vals) && !cJSON_IsArray(vals)))
		return false;
	size_t nv = cJSON_IsArray(vals) ? (size_t)cJSON_GetArraySize(vals) : 0;
	if (nv > NG_MAX_SELECTOR_VALUES)
		return false;
	if ((op == KUBE_OP_IN || op == KUBE_OP_NOTIN) && nv == 0)
		return false;
	if ((op == KUBE_OP_EXISTS || op == KUBE_OP_DOES_NOT_EXIST) && nv != 0)
		return false;
	if (field && (strcmp(key, "metadata.name") != 0 ||
		      (op != KUBE_OP_IN && op != KUBE_OP_NOTIN) || nv != 1))
		return false;
	/* A label requirement's key and values must be a label key and label values, as
	 * component-helpers' node selector parses them (labels.NewRequirement): an invalid one
	 * makes its term match no node, though the term's operator and value count are fine. So a
	 * Gt/Lt value is digits only: "-1" reads as an integer but is no label value. */
	if (!field && kube_label_key_problem(key, strlen(key)))
		return false;
	for (const cJSON *ve = field || !nv ? NULL : vals->child; ve; ve = ve->next)
		if (!cJSON_IsString(ve) ||
		    kube_label_value_problem(ve->valuestring, strlen(ve->valuestring)))
			return false;
	uint32_t *v = nv ? alloc(c, nv * sizeof(*v)) : NULL;
	if (nv && !v) {
		*st = fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
		return false;
	}
	size_t i = 0;
	for (const cJSON *ve = nv ? vals->child : NULL; ve; ve = ve->next, i++) {
		if (!cJSON_IsString(ve))
			return false;
		if ((*st = intern(c, ve->valuestring, &v[i])) != NG_OK)
			return false;
	}
	if (op == KUBE_OP_GT || op == KUBE_OP_LT) {
		int64_t num;
		const char *s = nv == 1 && vals->child ? vals->child->valuestring : NULL;
		if (!s || ng_parse_i64(s, strlen(s), INT64_MIN, INT64_MAX, &num) != NG_OK)
			return false;
		r->num = num;
	}
	if ((*st = intern(c, key, &r->key)) != NG_OK)
		return false;
	r->op = (uint8_t)op;
	r->nvalues = (uint16_t)nv;
	r->values = v;
	return true;
}

static ng_status decode_node_selector(struct ctx *c, const cJSON *j, struct kube_node_selector *ret)
{
	memset(ret, 0, sizeof(*ret));
	const cJSON *terms = ng_json_get(ng_json_get(j, "required"), "nodeSelectorTerms");
	if (!cJSON_IsArray(terms))
		return NG_OK; /* no (required) affinity: pins nothing */
	size_t nt = (size_t)cJSON_GetArraySize(terms);
	if (nt > NG_MAX_NODE_SELECTOR_TERMS)
		return fail(c, NG_ELIMIT, "spec.nodeAffinity", "too many nodeSelectorTerms");
	struct kube_node_term *out = alloc(c, nt * sizeof(*out));
	if (nt && !out)
		return fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
	size_t ti = 0;
	for (const cJSON *t = terms->child; t; t = t->next, ti++) {
		struct kube_node_term *term = &out[ti];
		memset(term, 0, sizeof(*term));
		const cJSON *ex = ng_json_get(t, "matchExpressions");
		const cJSON *fi = ng_json_get(t, "matchFields");
		size_t ne = cJSON_IsArray(ex) ? (size_t)cJSON_GetArraySize(ex) : 0;
		size_t nf = cJSON_IsArray(fi) ? (size_t)cJSON_GetArraySize(fi) : 0;
		if (!cJSON_IsObject(t) || (ex && !cJSON_IsNull(ex) && !cJSON_IsArray(ex)) ||
		    (fi && !cJSON_IsNull(fi) && !cJSON_IsArray(fi)) ||
		    ne + nf > NG_MAX_SELECTOR_TERMS) {
			term->invalid = true;
			continue;
		}
		struct kube_requirement *re = alloc(c, ne * sizeof(*re));
		struct kube_requirement *rf = alloc(c, nf * sizeof(*rf));
		if ((ne && !re) || (nf && !rf))
			return fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
		ng_status st = NG_OK;
		size_t i = 0;
		for (const cJSON *e = ne ? ex->child : NULL; e; e = e->next)
			if (!node_req(c, e, false, &re[i++], &st))
				term->invalid = true;
		i = 0;
		for (const cJSON *e = nf ? fi->child : NULL; e; e = e->next)
			if (!node_req(c, e, true, &rf[i++], &st))
				term->invalid = true;
		if (st != NG_OK)
			return st;
		term->exprs = re;
		term->nexprs = (uint16_t)ne;
		term->fields = rf;
		term->nfields = (uint16_t)nf;
	}
	ret->present = true;
	ret->nterms = (uint16_t)nt;
	ret->terms = out;
	return NG_OK;
}

/* ---- records ---- */

/* The record being decoded, zeroed. */
static void *record(struct ctx *c, enum kube_resource r)
{
	c->obj->res = r;
	memset(&c->obj->rec, 0, sizeof(c->obj->rec));
	return &c->obj->rec;
}

#define DRAIN_NOTE "nodegate.io/drain"
/* Longest drain note read: the holders of one node are a few request names. */
#define DRAIN_NOTE_MAX (64u * 1024u)

/* The note's "taints" (absent: none): [{key, effect}] with strings, at most NG_MAX_NOTE_TAINTS;
 * anything else marks the note invalid. */
static ng_status drain_note_taints(struct ctx *c, const cJSON *j, struct kube_drain_note *note)
{
	if (!j)
		return NG_OK;
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
	if (n < 0 || n > NG_MAX_NOTE_TAINTS) {
		note->invalid = true;
		return NG_OK;
	}
	struct kube_taint *t = n ? alloc(c, (size_t)n * sizeof(*t)) : NULL;
	if (n && !t)
		return fail(c, NG_ENOMEM, "metadata.annotations", "out of memory");
	int i = 0;
	for (const cJSON *e = j->child; e && i < n; e = e->next, i++) {
		const char *key = ng_json_str(e, "key"), *effect = ng_json_str(e, "effect");
		if (!key || !effect || !*key || !*effect) {
			note->invalid = true;
			return NG_OK;
		}
		ng_status st = intern(c, key, &t[i].key);
		st = st ? st : intern(c, effect, &t[i].effect);
		if (st)
			return st;
		t[i].val = NG_INTERN_NONE;
	}
	note->taints = t;
	note->ntaints = (uint16_t)n;
	return NG_OK;
}

/* The annotation nodegate.io/drain (struct kube_drain_note). One that does not parse is marked
 * invalid, never an error: the node stays in the cache. */
static ng_status drain_note(struct ctx *c, const char *text, struct kube_drain_note *note)
{
	note->present = true;
	note->boot_id = "";
	size_t len = strlen(text);
	struct ng_arena *tmp =
	    len <= DRAIN_NOTE_MAX ? ng_arena_create((64u << 10) + 8 * len) : NULL;
	cJSON *root = NULL;
	if (!tmp || ng_json_parse(text, len, tmp, &root, NULL) != NG_OK || !cJSON_IsObject(root)) {
		note->invalid = true;
		ng_arena_destroy(tmp);
		return NG_OK;
	}
	const cJSON *was = ng_json_get(root, "wasUnschedulable");
	const cJSON *holders = ng_json_get(root, "holders");
	const cJSON *boot = ng_json_get(root, "bootID");
	note->was_unschedulable = cJSON_IsTrue(was);
	note->invalid =
	    !cJSON_IsBool(was) || !cJSON_IsArray(holders) || (boot && !cJSON_IsString(boot));
	ng_status st = NG_OK;
	if (!note->invalid) {
		struct ng_err ignored;
		struct ng_err *keep = c->err;
		c->err = &ignored;
		st = decode_str_array(c, holders, "holders", NG_MAX_LABELS, &note->holders,
				      &note->nholders);
		c->err = keep;
		if (st == NG_EPARSE || st == NG_ELIMIT) {
			note->invalid = true;
			st = NG_OK;
		}
		if (st == NG_OK && !(note->boot_id = dup_or_empty(c, ng_json_str(root, "bootID"))))
			st = fail(c, NG_ENOMEM, "metadata.annotations", "out of memory");
		if (st == NG_OK)
			st = drain_note_taints(c, ng_json_get(root, "taints"), note);
	}
	ng_arena_destroy(tmp);
	return st;
}

static bool parse_duration_ms(const char *s, int64_t *ret_ms);
static int64_t opt_time_ms(const cJSON *obj, const char *key);

/* The annotation nodegate.io/do-not-disrupt on @meta: KUBE_DND_NONE without it or "false",
 * KUBE_DND_ALWAYS for "true", else a duration counted from @since_ms (0: not yet, protected for
 * good meanwhile). Anything else protects for good and sets *@ret_invalid: an unreadable "not
 * now" must not read as "go ahead". */
static int64_t dnd_until(const cJSON *meta, int64_t since_ms, bool *ret_invalid)
{
	const char *v = ng_json_str(ng_json_get(meta, "annotations"), KUBE_DO_NOT_DISRUPT);
	int64_t dur = 0;
	*ret_invalid = false;
	if (!v || strcmp(v, "false") == 0)
		return KUBE_DND_NONE;
	if (strcmp(v, "true") == 0)
		return KUBE_DND_ALWAYS;
	if (!parse_duration_ms(v, &dur) || dur <= 0) {
		*ret_invalid = true;
		return KUBE_DND_ALWAYS;
	}
	return since_ms > 0 && since_ms <= INT64_MAX - dur ? since_ms + dur : KUBE_DND_ALWAYS;
}

/* What the drainer reads of a node besides the gate's fields. */
static ng_status node_extra(struct ctx *c, const cJSON *o, const cJSON *meta, struct kube_node *n)
{
	const cJSON *info = ng_json_path(o, (const char *const[]){"status", "nodeInfo", NULL});
	n->boot_id = dup_or_empty(c, ng_json_str(info, "bootID"));
	n->rv = dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	n->uid = dup_or_empty(c, ng_json_str(meta, "uid"));
	if (!n->boot_id || !n->rv || !n->uid)
		return fail(c, NG_ENOMEM, "metadata", "out of memory");
	const cJSON *ann = ng_json_get(meta, "annotations");
	n->has_annotations = cJSON_IsObject(ann);
	bool dnd_invalid;
	n->dnd_until_ms = dnd_until(meta, opt_time_ms(meta, "creationTimestamp"), &dnd_invalid);
	if (dnd_invalid)
		n->flags |= KUBE_NODE_DND_INVALID;
	const char *note = ng_json_str(ann, DRAIN_NOTE);
	return note ? drain_note(c, note, &n->note) : NG_OK;
}

static uint8_t cond_status(const char *s)
{
	return !s                        ? KUBE_COND_UNKNOWN
	       : strcmp(s, "True") == 0  ? KUBE_COND_TRUE
	       : strcmp(s, "False") == 0 ? KUBE_COND_FALSE
					 : KUBE_COND_UNKNOWN;
}

/* Room in the record's arena for the first @max items of @arr (none unless it is an array), of
 * @size bytes each; *@ret_n gets how many. NULL with *@ret_n > 0 is out of memory. */
static void *items_room(struct ctx *c, const cJSON *arr, size_t max, size_t size, size_t *ret_n)
{
	size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
	*ret_n = n < max ? n : max;
	return *ret_n ? alloc(c, *ret_n * size) : NULL;
}

/* status.conditions: Ready sets KUBE_NODE_READY; every entry with a type is kept for
 * NodeRemediation rules (at most KUBE_MAX_NODE_CONDITIONS, the first ones). Entries of the wrong
 * shape are skipped: a node's status is the kubelet's. */
static ng_status node_conditions(struct ctx *c, const cJSON *o, struct kube_node *n)
{
	const cJSON *conds = ng_json_path(o, (const char *const[]){"status", "conditions", NULL});
	size_t cap;
	struct kube_node_condition *out =
	    items_room(c, conds, KUBE_MAX_NODE_CONDITIONS, sizeof(*out), &cap);
	if (cap && !out)
		return fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	size_t k = 0;
	for (const cJSON *e = cap ? conds->child : NULL; e && k < cap; e = e->next) {
		const char *t = ng_json_str(e, "type"), *s = ng_json_str(e, "status");
		if (!t || !*t || strlen(t) > NG_MAX_LABEL_KEY_BYTES)
			continue;
		if (s && strcmp(t, "Ready") == 0 && strcmp(s, "True") == 0)
			n->flags |= KUBE_NODE_READY;
		ng_status st = intern(c, t, &out[k].type);
		if (st != NG_OK)
			return st;
		out[k].status = cond_status(s);
		const char *lt = ng_json_str(e, "lastTransitionTime");
		if (!lt || ng_parse_rfc3339_ms(lt, strlen(lt), &out[k].since_ms) != NG_OK)
			out[k].since_ms = 0;
		k++;
	}
	n->conditions = k ? out : NULL;
	n->nconditions = (uint16_t)k;
	return NG_OK;
}

static ng_status decode_node(struct ctx *c, const cJSON *o, uint32_t name, const cJSON *meta)
{
	struct kube_node *n = record(c, KUBE_RES_NODES);
	n->name = name;
	uint16_t nl;
	ng_status st =
	    decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels", &n->labels, &nl);
	if (st != NG_OK)
		return st;
	n->nlabels = nl;
	const cJSON *spec = ng_json_get(o, "spec");
	if (cJSON_IsTrue(ng_json_get(spec, "unschedulable")))
		n->flags |= KUBE_NODE_UNSCHEDULABLE;
	if ((st = node_conditions(c, o, n)) != NG_OK || (st = node_extra(c, o, meta, n)) != NG_OK)
		return st;
	const cJSON *taints = ng_json_get(spec, "taints");
	if (cJSON_IsArray(taints)) {
		size_t nt = (size_t)cJSON_GetArraySize(taints);
		if (nt > NG_MAX_LABELS)
			return fail(c, NG_ELIMIT, "spec.taints", "too many taints");
		struct kube_taint *t = alloc(c, nt * sizeof(*t));
		if (nt && !t)
			return fail(c, NG_ENOMEM, "spec.taints", "out of memory");
		size_t i = 0;
		for (const cJSON *e = taints->child; e; e = e->next, i++) {
			if ((st = opt_str(c, e, "key", "spec.taints.key", &t[i].key)) != NG_OK ||
			    (st = opt_str(c, e, "value", "spec.taints.value", &t[i].val)) !=
				NG_OK ||
			    (st = opt_str(c, e, "effect", "spec.taints.effect", &t[i].effect)) !=
				NG_OK)
				return st;
		}
		n->taints = t;
		n->ntaints = (uint32_t)nt;
	}
	return NG_OK;
}

static uint8_t pod_phase(const char *s)
{
	if (!s)
		return KUBE_POD_PENDING;
	if (strcmp(s, "Running") == 0)
		return KUBE_POD_RUNNING;
	if (strcmp(s, "Succeeded") == 0)
		return KUBE_POD_SUCCEEDED;
	if (strcmp(s, "Failed") == 0)
		return KUBE_POD_FAILED;
	if (strcmp(s, "Pending") == 0)
		return KUBE_POD_PENDING;
	return KUBE_POD_UNKNOWN;
}

/* The controller's kind (and whether it is a DaemonSet) from metadata.ownerReferences. */
static ng_status pod_owner(struct ctx *c, const cJSON *meta, struct kube_pod *p)
{
	const cJSON *owners = ng_json_get(meta, "ownerReferences");
	for (const cJSON *e = cJSON_IsArray(owners) ? owners->child : NULL; e; e = e->next) {
		if (!cJSON_IsTrue(ng_json_get(e, "controller")))
			continue;
		const char *kind = ng_json_str(e, "kind");
		if (!kind)
			continue;
		ng_status st = intern(c, kind, &p->owner_kind);
		if (st != NG_OK)
			return st;
		if (strcmp(kind, "DaemonSet") == 0)
			p->flags |= KUBE_POD_DAEMONSET;
		break;
	}
	return NG_OK;
}

/* The PVC claim names of spec.volumes, bounded. */
static ng_status pod_claims(struct ctx *c, const cJSON *spec, struct kube_pod *p)
{
	const cJSON *vols = ng_json_get(spec, "volumes");
	size_t nclaims = 0;
	for (const cJSON *e = cJSON_IsArray(vols) ? vols->child : NULL; e; e = e->next) {
		if (ng_json_str(ng_json_get(e, "persistentVolumeClaim"), "claimName"))
			nclaims++;
		if (ng_json_get(e, "emptyDir"))
			p->flags |= KUBE_POD_EMPTYDIR;
	}
	if (nclaims > NG_MAX_LABELS)
		return fail(c, NG_ELIMIT, "spec.volumes", "too many PVC volumes");
	uint32_t *claims = alloc(c, nclaims * sizeof(*claims));
	if (nclaims && !claims)
		return fail(c, NG_ENOMEM, "spec.volumes", "out of memory");
	size_t i = 0;
	for (const cJSON *e = nclaims ? vols->child : NULL; e; e = e->next) {
		const char *cn = ng_json_str(ng_json_get(e, "persistentVolumeClaim"), "claimName");
		ng_status st;
		if (cn && (st = intern(c, cn, &claims[i++])) != NG_OK)
			return st;
	}
	p->claims = claims;
	p->nclaims = (uint16_t)nclaims;
	return NG_OK;
}

/* The distinct resource names of spec.containers' requests and limits, bounded. */
static ng_status pod_requests(struct ctx *c, const cJSON *spec, struct kube_pod *p)
{
	static const char *const paths[2][3] = {{"resources", "requests", NULL},
						{"resources", "limits", NULL}};
	const cJSON *ctrs = ng_json_get(spec, "containers");
	size_t nreq = 0;
	for (const cJSON *e = cJSON_IsArray(ctrs) ? ctrs->child : NULL; e; e = e->next) {
		for (int k = 0; k < 2; k++) {
			const cJSON *r = ng_json_path(e, paths[k]);
			if (cJSON_IsObject(r))
				nreq += (size_t)cJSON_GetArraySize(r);
		}
	}
	if (nreq > NG_MAX_LABELS)
		return fail(c, NG_ELIMIT, "spec.containers", "too many resource requests");
	uint32_t *reqs = alloc(c, nreq * sizeof(*reqs));
	if (nreq && !reqs)
		return fail(c, NG_ENOMEM, "spec.containers", "out of memory");
	size_t i = 0;
	for (const cJSON *e = nreq ? ctrs->child : NULL; e; e = e->next) {
		for (int w = 0; w < 2; w++) {
			const cJSON *r = ng_json_path(e, paths[w]);
			for (const cJSON *k = cJSON_IsObject(r) ? r->child : NULL; k; k = k->next) {
				uint32_t id;
				ng_status st = intern(c, k->string, &id);
				if (st != NG_OK)
					return st;
				bool dup = false;
				for (size_t j = 0; j < i; j++)
					dup = dup || reqs[j] == id;
				if (!dup)
					reqs[i++] = id;
			}
		}
	}
	p->requests = reqs;
	p->nrequests = (uint16_t)i;
	return NG_OK;
}

static ng_status decode_pod(struct ctx *c, const cJSON *o, uint32_t ns, const char *name,
			    const cJSON *meta)
{
	struct kube_pod *p = record(c, KUBE_RES_PODS);
	p->ns = ns;
	p->name = ng_arena_strndup(c->arena, name, strlen(name));
	if (!p->name)
		return fail(c, NG_ENOMEM, "metadata.name", "out of memory");
	p->owner_kind = NG_INTERN_NONE;
	ng_status st = decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels", &p->labels,
				     &p->nlabels);
	if (st != NG_OK)
		return st;
	const cJSON *spec = ng_json_get(o, "spec");
	if ((st = opt_str(c, spec, "nodeName", "spec.nodeName", &p->node)) != NG_OK)
		return st;
	p->phase = pod_phase(ng_json_str(ng_json_get(o, "status"), "phase"));
	const cJSON *ann = ng_json_get(meta, "annotations");
	if (ng_json_get(ann, "kubernetes.io/config.mirror"))
		p->flags |= KUBE_POD_MIRROR;
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	if (del && !cJSON_IsNull(del))
		p->flags |= KUBE_POD_TERMINATING;
	const cJSON *pconds = ng_json_get(ng_json_get(o, "status"), "conditions");
	for (const cJSON *e = cJSON_IsArray(pconds) ? pconds->child : NULL; e; e = e->next) {
		const char *t = ng_json_str(e, "type"), *v = ng_json_str(e, "status");
		if (t && v && strcmp(t, "Ready") == 0 && strcmp(v, "True") == 0)
			p->flags |= KUBE_POD_READY;
	}
	bool dnd_invalid;
	p->dnd_until_ms =
	    dnd_until(meta, opt_time_ms(ng_json_get(o, "status"), "startTime"), &dnd_invalid);
	if (dnd_invalid)
		p->flags |= KUBE_POD_DND_INVALID;
	if ((st = pod_owner(c, meta, p)) != NG_OK || (st = pod_claims(c, spec, p)) != NG_OK)
		return st;
	return pod_requests(c, spec, p);
}

static ng_status decode_pvc(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name,
			    const cJSON *meta)
{
	struct kube_pvc *v = record(c, KUBE_RES_PVCS);
	v->ns = ns;
	v->name = name;
	ng_status st = decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels", &v->labels,
				     &v->nlabels);
	if (st != NG_OK)
		return st;
	if ((st = opt_str(c, ng_json_get(o, "spec"), "volumeName", "spec.volumeName",
			  &v->volume)) != NG_OK)
		return st;
	const char *ph = ng_json_str(ng_json_get(o, "status"), "phase");
	v->phase = ph && strcmp(ph, "Bound") == 0  ? KUBE_PVC_BOUND
		   : ph && strcmp(ph, "Lost") == 0 ? KUBE_PVC_LOST
						   : KUBE_PVC_PENDING;
	return NG_OK;
}

static ng_status decode_pv(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_pv *v = record(c, KUBE_RES_PVS);
	v->name = name;
	return decode_node_selector(c, ng_json_get(ng_json_get(o, "spec"), "nodeAffinity"),
				    &v->affinity);
}

static uint8_t nd_state(const char *s)
{
	if (!s)
		return KUBE_ND_UNKNOWN;
	if (strcmp(s, "Granted") == 0)
		return KUBE_ND_GRANTED;
	if (strcmp(s, "Rejected") == 0)
		return KUBE_ND_REJECTED;
	if (strcmp(s, "Pending") == 0)
		return KUBE_ND_PENDING;
	return KUBE_ND_UNKNOWN;
}

/* The annotation the mutating webhook writes on create: who created the request. */
#define CREATED_BY "nodegate.io/created-by"

/* Records the first problem of a field the gate does not read (kube_nd_detail.spec_error): such
 * a problem refuses the request at admission but never drops it from the cache. */
static void problem(struct ng_err *verr, const char *fmt, ...) NG_PRINTF(2, 3);
static void problem(struct ng_err *verr, const char *fmt, ...)
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

/* Optional boolean @key of @obj: @def when absent or null. */
static bool opt_bool(const cJSON *obj, const char *key, const char *field, bool def,
		     struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	if (!v || cJSON_IsNull(v))
		return def;
	if (!cJSON_IsBool(v)) {
		problem(verr, "%s: expected true or false", field);
		return def;
	}
	return cJSON_IsTrue(v);
}

/* Optional non-negative integer of seconds @key of @obj: -1 when absent or null. */
static int64_t opt_seconds(const cJSON *obj, const char *key, const char *field,
			   struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	int64_t secs;
	if (!v || cJSON_IsNull(v))
		return -1;
	if (!ng_json_int64(v, &secs) || secs < 0) {
		problem(verr, "%s: expected a non-negative integer of seconds", field);
		return -1;
	}
	return secs;
}

/* Optional string @key of @obj copied into the record's arena: NULL when absent, null or not a
 * string of at most @max bytes (then a problem saying it expected @what). Only OOM fails. */
static ng_status opt_text(struct ctx *c, const cJSON *obj, const char *key, const char *field,
			  const char *what, size_t max, const char **ret, struct ng_err *verr)
{
	const cJSON *v = ng_json_get(obj, key);
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return NG_OK;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > max) {
		problem(verr, "%s: expected %s", field, what);
		return NG_OK;
	}
	*ret = ng_arena_strndup(c->arena, v->valuestring, strlen(v->valuestring));
	return *ret ? NG_OK : fail(c, NG_ENOMEM, field, "out of memory");
}

static int cmp_member(const void *a, const void *b)
{
	const cJSON *const *x = a, *const *y = b;
	return strcmp((*x)->string, (*y)->string);
}

/* Appends @v as compact JSON with every object's keys sorted: two equal values (keys are unique:
 * ng_json_parse() refuses duplicates) give equal text. Depth is bounded by the parser's. */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH (parser) */
static ng_status canonical_json(struct ctx *c, const cJSON *v, struct ng_buf *b)
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
	const cJSON **kids = alloc(c, n * sizeof(*kids));
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
		st = st == NG_OK ? canonical_json(c, kids[i], b) : st;
	}
	return st == NG_OK ? ng_buf_puts(b, obj ? "}" : "]") : st;
}

/* A Go duration ("90m", "1h30m", "2.5s"): decimal numbers, each with a unit of ns, us, µs, ms, s,
 * m or h, summed. False when @s is not one or is over ~146 years. */
static bool parse_duration_ms(const char *s, int64_t *ret_ms)
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

/* spec.drain.taint into @dr. */
static ng_status nd_taint(struct ctx *c, const cJSON *t, struct kube_nd_drain *dr,
			  struct ng_err *verr)
{
	static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
	if (!t || cJSON_IsNull(t))
		return NG_OK;
	const char *key = ng_json_str(t, "key"), *effect = ng_json_str(t, "effect");
	const cJSON *val = ng_json_get(t, "value");
	bool known = false;
	for (size_t i = 0; effect && i < sizeof(effects) / sizeof(effects[0]); i++)
		known = known || strcmp(effect, effects[i]) == 0;
	/* The drainer puts this taint on Nodes: what the API server would refuse there (a key or
	 * value not of label syntax, another effect) is refused here, before the drain starts. */
	const char *why;
	if (!cJSON_IsObject(t))
		problem(verr, "spec.drain.taint: expected an object");
	else if (!key || !*key)
		problem(verr, "spec.drain.taint.key: required");
	else if ((why = kube_label_key_problem(key, strlen(key))))
		problem(verr, "spec.drain.taint.key: invalid '%.63s%s': %s", key,
			strlen(key) > 63 ? "..." : "", why);
	else if (!known)
		problem(verr, "spec.drain.taint.effect: must be one of NoSchedule, "
			      "PreferNoSchedule, NoExecute");
	else if (val && !cJSON_IsNull(val) && !cJSON_IsString(val))
		problem(verr, "spec.drain.taint.value: expected a string");
	else if (cJSON_IsString(val) &&
		 (why = kube_label_value_problem(val->valuestring, strlen(val->valuestring))))
		problem(verr, "spec.drain.taint.value: invalid '%.63s%s': %s", val->valuestring,
			strlen(val->valuestring) > 63 ? "..." : "", why);
	if (verr->status != NG_OK || !key || !effect) /* the checks above refused those */
		return NG_OK;
	dr->has_taint = true;
	ng_status st = intern(c, key, &dr->taint.key);
	st = st ? st : opt_str(c, t, "value", "spec.drain.taint.value", &dr->taint.val);
	return st ? st : intern(c, effect, &dr->taint.effect);
}

/* spec.drain.podEvictionFilters into @dr. */
static ng_status nd_filters(struct ctx *c, const cJSON *f, struct kube_nd_drain *dr,
			    struct ng_err *verr)
{
	if (!f || cJSON_IsNull(f))
		return NG_OK;
	size_t n = cJSON_IsArray(f) ? (size_t)cJSON_GetArraySize(f) : 0;
	if (!cJSON_IsArray(f) || n > KUBE_MAX_ND_LIST) {
		problem(verr, "spec.drain.podEvictionFilters: expected an array of at most %d",
			KUBE_MAX_ND_LIST);
		return NG_OK;
	}
	struct kube_eviction_filter *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, "spec.drain.podEvictionFilters", "out of memory");
	size_t i = 0;
	for (const cJSON *e = f->child; e; e = e->next, i++) {
		char field[96], what[64];
		ng_fmt(field, sizeof(field), "spec.drain.podEvictionFilters[%zu]", i);
		if (!cJSON_IsObject(e)) {
			problem(verr, "%s: expected an object", field);
			return NG_OK;
		}
		ng_fmt(field, sizeof(field),
		       "spec.drain.podEvictionFilters[%zu].byResourceNameRegex", i);
		ng_fmt(what, sizeof(what), "a regular expression of at most %d bytes",
		       KUBE_MAX_REGEX_BYTES);
		ng_status st = opt_text(c, e, "byResourceNameRegex", field, what,
					KUBE_MAX_REGEX_BYTES, &out[i].by_resource_name_regex, verr);
		if (st != NG_OK || verr->status != NG_OK)
			return st;
	}
	dr->filters = out;
	dr->nfilters = (uint16_t)n;
	return NG_OK;
}

/* spec.drain.evictionStrategy. */
static uint8_t nd_strategy(const cJSON *drain, struct ng_err *verr)
{
	static const char *const names[] = {"Evict", "Delete", "ForceDelete", "None"};
	const cJSON *v = ng_json_get(drain, "evictionStrategy");
	if (!v || cJSON_IsNull(v))
		return KUBE_DRAIN_EVICT;
	for (uint8_t i = 0; cJSON_IsString(v) && i < 4; i++)
		if (strcmp(v->valuestring, names[i]) == 0)
			return i;
	problem(verr, "spec.drain.evictionStrategy: must be one of Evict, Delete, ForceDelete, "
		      "None");
	return KUBE_DRAIN_EVICT;
}

/* spec.drain into @dr, defaults when absent. The label selector strings are checked in the
 * order admission reports them: podSelector, waitForPodCompletion, the filters. */
static ng_status nd_drain(struct ctx *c, const cJSON *j, struct kube_nd_drain *dr,
			  struct ng_err *verr)
{
	dr->cordon = true;
	dr->wait_for_volume_detach = true;
	dr->timeout_s = -1;
	dr->wait_timeout_s = -1;
	dr->strategy = KUBE_DRAIN_EVICT;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j)) {
		problem(verr, "spec.drain: expected an object");
		return NG_OK;
	}
	dr->present = true;
	ng_status st = opt_text(c, j, "podSelector", "spec.drain.podSelector",
				"a label selector string", SIZE_MAX, &dr->pod_selector, verr);
	const cJSON *w = ng_json_get(j, "waitForPodCompletion");
	if (st == NG_OK && w && !cJSON_IsNull(w) && !cJSON_IsObject(w)) {
		problem(verr, "spec.drain.waitForPodCompletion: expected an object");
	} else if (st == NG_OK && cJSON_IsObject(w)) {
		dr->has_wait = true;
		st = opt_text(c, w, "podSelector", "spec.drain.waitForPodCompletion.podSelector",
			      "a label selector string", SIZE_MAX, &dr->wait_pod_selector, verr);
		dr->wait_timeout_s = opt_seconds(
		    w, "timeoutSeconds", "spec.drain.waitForPodCompletion.timeoutSeconds", verr);
	}
	st = st ? st : nd_filters(c, ng_json_get(j, "podEvictionFilters"), dr, verr);
	st = st ? st : nd_taint(c, ng_json_get(j, "taint"), dr, verr);
	dr->strategy = nd_strategy(j, verr);
	dr->cordon = opt_bool(j, "cordon", "spec.drain.cordon", true, verr);
	dr->force = opt_bool(j, "force", "spec.drain.force", false, verr);
	dr->delete_empty_dir =
	    opt_bool(j, "deleteEmptyDir", "spec.drain.deleteEmptyDir", false, verr);
	dr->skip_waiting_for_eviction =
	    opt_bool(j, "skipWaitingForEviction", "spec.drain.skipWaitingForEviction", false, verr);
	dr->wait_for_volume_detach =
	    opt_bool(j, "waitForVolumeDetach", "spec.drain.waitForVolumeDetach", true, verr);
	dr->timeout_s = opt_seconds(j, "timeoutSeconds", "spec.drain.timeoutSeconds", verr);
	return st;
}

/* A container list @key of pod spec @ps: each container's securityContext that makes the pod
 * privileged, written to @field (relative to the pod spec). */
static bool privileged_container(const cJSON *ps, const char *key, char *field, size_t cap)
{
	const cJSON *cs = ng_json_get(ps, key);
	size_t i = 0;
	for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, i++) {
		const cJSON *sc = ng_json_get(c, "securityContext");
		const cJSON *add = ng_json_get(ng_json_get(sc, "capabilities"), "add");
		const char *what = cJSON_IsTrue(ng_json_get(sc, "privileged")) ? "privileged"
				   : cJSON_IsTrue(ng_json_get(sc, "allowPrivilegeEscalation"))
				       ? "allowPrivilegeEscalation"
				   : cJSON_IsArray(add) && cJSON_GetArraySize(add) > 0
				       ? "capabilities.add"
				       : NULL;
		if (what) {
			ng_fmt(field, cap, "%s[%zu].securityContext.%s", key, i, what);
			return true;
		}
	}
	return false;
}

bool kube_pod_spec_privileged(const cJSON *ps, char *field, size_t cap)
{
	static const char *const host[] = {"hostPID", "hostNetwork", "hostIPC"};
	for (size_t k = 0; k < sizeof(host) / sizeof(host[0]); k++) {
		if (cJSON_IsTrue(ng_json_get(ps, host[k]))) {
			ng_fmt(field, cap, "%s", host[k]);
			return true;
		}
	}
	const cJSON *vs = ng_json_get(ps, "volumes");
	size_t i = 0;
	for (const cJSON *v = cJSON_IsArray(vs) ? vs->child : NULL; v; v = v->next, i++) {
		const cJSON *hp = ng_json_get(v, "hostPath");
		if (hp && !cJSON_IsNull(hp)) {
			ng_fmt(field, cap, "volumes[%zu].hostPath", i);
			return true;
		}
	}
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		if (privileged_container(ps, lists[k], field, cap))
			return true;
	return false;
}

/* A container list @key of pod spec @ps: an environment variable taken from a Secret. */
static bool secret_env(const cJSON *ps, const char *key, char *field, size_t cap)
{
	const cJSON *cs = ng_json_get(ps, key);
	size_t i = 0;
	for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, i++) {
		const cJSON *env = ng_json_get(c, "env"), *from = ng_json_get(c, "envFrom");
		size_t k = 0;
		for (const cJSON *e = cJSON_IsArray(env) ? env->child : NULL; e; e = e->next, k++) {
			const cJSON *ref = ng_json_get(ng_json_get(e, "valueFrom"), "secretKeyRef");
			if (ref && !cJSON_IsNull(ref)) {
				ng_fmt(field, cap, "%s[%zu].env[%zu].valueFrom.secretKeyRef", key,
				       i, k);
				return true;
			}
		}
		k = 0;
		for (const cJSON *e = cJSON_IsArray(from) ? from->child : NULL; e;
		     e = e->next, k++) {
			const cJSON *ref = ng_json_get(e, "secretRef");
			if (ref && !cJSON_IsNull(ref)) {
				ng_fmt(field, cap, "%s[%zu].envFrom[%zu].secretRef", key, i, k);
				return true;
			}
		}
	}
	return false;
}

const char *kube_pod_spec_forbidden(const cJSON *ps, char *field, size_t cap)
{
	static const char secrets[] = "not allowed: an operation may not read Secrets";
	static const char tokens[] = "not allowed: an operation gets no service account token";
	if (cJSON_IsTrue(ng_json_get(ps, "automountServiceAccountToken"))) {
		ng_fmt(field, cap, "automountServiceAccountToken");
		return tokens;
	}
	const cJSON *vs = ng_json_get(ps, "volumes");
	size_t i = 0;
	for (const cJSON *v = cJSON_IsArray(vs) ? vs->child : NULL; v; v = v->next, i++) {
		const cJSON *sec = ng_json_get(v, "secret");
		if (sec && !cJSON_IsNull(sec)) {
			ng_fmt(field, cap, "volumes[%zu].secret", i);
			return secrets;
		}
		const cJSON *srcs = ng_json_get(ng_json_get(v, "projected"), "sources");
		size_t k = 0;
		for (const cJSON *p = cJSON_IsArray(srcs) ? srcs->child : NULL; p;
		     p = p->next, k++) {
			const cJSON *ps_sec = ng_json_get(p, "secret");
			const cJSON *tok = ng_json_get(p, "serviceAccountToken");
			if (ps_sec && !cJSON_IsNull(ps_sec)) {
				ng_fmt(field, cap, "volumes[%zu].projected.sources[%zu].secret", i,
				       k);
				return secrets;
			}
			if (tok && !cJSON_IsNull(tok)) {
				ng_fmt(field, cap,
				       "volumes[%zu].projected.sources[%zu].serviceAccountToken", i,
				       k);
				return tokens;
			}
		}
	}
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		if (secret_env(ps, lists[k], field, cap))
			return secrets;
	return NULL;
}

/* What a Job needs of jobTemplate @jt (an object) to be created at all: spec.template.spec with
 * at least one container, each named (a DNS-1123 label) and with an image. The rest of the
 * template is the API server's to check when the drainer creates the Job; these are the
 * mistakes that would otherwise surface only then, after the node was drained. Also what an
 * operation may never hold (kube_pod_spec_forbidden()), and whether it is privileged (into
 * @op->privileged, from @c's arena). */
static ng_status nd_job_template(struct ctx *c, const cJSON *jt, struct kube_nd_operation *op,
				 struct ng_err *verr)
{
	static const char *const path[] = {"spec", "template", "spec"};
	char field[160] = "spec.operation.jobTemplate";
	const cJSON *o = jt;
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
		o = ng_json_get(o, path[i]);
		size_t at = strlen(field);
		ng_fmt(field + at, sizeof(field) - at, ".%s", path[i]);
		if (!o || cJSON_IsNull(o))
			break;
		if (!cJSON_IsObject(o)) {
			problem(verr, "%s: expected an object", field);
			return NG_OK;
		}
	}
	/* The Job runs as the drainer's operation ServiceAccount: a template naming another
	 * (nodegate's own among them) would hand its rights to whoever may create a request. */
	for (int k = 0; o && !cJSON_IsNull(o) && k < 2; k++) {
		static const char *const sa[2] = {"serviceAccountName", "serviceAccount"};
		const cJSON *v = ng_json_get(o, sa[k]);
		if (v && !cJSON_IsNull(v))
			problem(
			    verr,
			    "spec.operation.jobTemplate.spec.template.spec.%s: not allowed: the "
			    "Job runs as the drainer's operation ServiceAccount "
			    "(nodegate drain --operation-service-account); grant that one what "
			    "the operation needs",
			    sa[k]);
	}
	/* Secrets and tokens: what an operation could read beyond the node itself. */
	char sub[112];
	const char *why = cJSON_IsObject(o) ? kube_pod_spec_forbidden(o, sub, sizeof(sub)) : NULL;
	if (why)
		problem(verr, "spec.operation.jobTemplate.spec.template.spec.%s: %s", sub, why);
	if (cJSON_IsObject(o) && kube_pod_spec_privileged(o, sub, sizeof(sub))) {
		ng_fmt(field, sizeof(field), "spec.operation.jobTemplate.spec.template.spec.%s",
		       sub);
		if (!(op->privileged = ng_arena_strndup(c->arena, field, strlen(field))))
			return fail(c, NG_ENOMEM, "spec.operation.jobTemplate", "out of memory");
	}
	const cJSON *cs = o && !cJSON_IsNull(o) ? ng_json_get(o, "containers") : NULL;
	if (cs && !cJSON_IsNull(cs) && !cJSON_IsArray(cs)) {
		problem(verr,
			"spec.operation.jobTemplate.spec.template.spec.containers: expected an "
			"array");
		return NG_OK;
	}
	if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) == 0) {
		problem(verr, "spec.operation.jobTemplate.spec.template.spec.containers: required: "
			      "at least one container, with a name and an image");
		return NG_OK;
	}
	size_t i = 0;
	for (const cJSON *ct = cs->child; ct; ct = ct->next, i++) {
		const char *name = ng_json_str(ct, "name"), *image = ng_json_str(ct, "image");
		ng_fmt(field, sizeof(field),
		       "spec.operation.jobTemplate.spec.template.spec."
		       "containers[%zu]",
		       i);
		if (!cJSON_IsObject(ct))
			problem(verr, "%s: expected an object", field);
		else if (!name || !*name)
			problem(verr, "%s.name: required", field);
		else if (!ng_dns_label(name))
			problem(verr,
				"%s.name: '%.63s' is not a DNS-1123 label (at most 63 lower case "
				"alphanumerics or '-', starting and ending alphanumeric)",
				field, name);
		else if (!image || !*image)
			problem(verr, "%s.image: required", field);
		if (verr->status != NG_OK)
			return NG_OK;
	}
	return NG_OK;
}

/* spec.operation into @op. */
static ng_status nd_operation(struct ctx *c, const cJSON *j, struct kube_nd_operation *op,
			      struct ng_err *verr)
{
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j)) {
		problem(verr, "spec.operation: expected an object");
		return NG_OK;
	}
	op->present = true;
	op->wait_for_reboot =
	    opt_bool(j, "waitForReboot", "spec.operation.waitForReboot", false, verr);
	const cJSON *jt = ng_json_get(j, "jobTemplate");
	if (!jt || cJSON_IsNull(jt))
		return NG_OK;
	if (!cJSON_IsObject(jt)) {
		problem(verr, "spec.operation.jobTemplate: expected an object");
		return NG_OK;
	}
	ng_status st = nd_job_template(c, jt, op, verr);
	if (st != NG_OK)
		return st;
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	st = canonical_json(c, jt, &b);
	if (st == NG_OK && !(op->job_template = ng_arena_strndup(c->arena, b.data, b.len)))
		st = NG_ENOMEM;
	ng_buf_finish(&b);
	if (st != NG_OK)
		return fail(c, st, "spec.operation.jobTemplate", ng_status_str(st));
	return NG_OK;
}

/* spec.additionalRequestors, spec.startDate and spec.duration into @x. */
static ng_status nd_more(struct ctx *c, const cJSON *spec, struct kube_nd_detail *x,
			 struct ng_err *verr)
{
	const cJSON *more = ng_json_get(spec, "additionalRequestors");
	bool ok = !more || cJSON_IsNull(more) ||
		  (cJSON_IsArray(more) && cJSON_GetArraySize(more) <= KUBE_MAX_ND_LIST);
	for (const cJSON *e = cJSON_IsArray(more) ? more->child : NULL; ok && e; e = e->next)
		ok = cJSON_IsString(e);
	ng_status st = NG_OK;
	if (!ok)
		problem(verr, "spec.additionalRequestors: expected an array of at most %d strings",
			KUBE_MAX_ND_LIST);
	else
		st = decode_str_array(c, more, "spec.additionalRequestors", KUBE_MAX_ND_LIST,
				      &x->more_requestors, &x->nmore_requestors);
	const cJSON *start = ng_json_get(spec, "startDate");
	if (start && !cJSON_IsNull(start) &&
	    (!cJSON_IsString(start) ||
	     ng_parse_rfc3339_ms(start->valuestring, strlen(start->valuestring), &x->start_ms) !=
		 NG_OK))
		problem(verr, "spec.startDate: expected an RFC 3339 time");
	const cJSON *dur = ng_json_get(spec, "duration");
	x->duration_ms = -1;
	if (dur && !cJSON_IsNull(dur) &&
	    (!cJSON_IsString(dur) || !parse_duration_ms(dur->valuestring, &x->duration_ms)))
		problem(verr, "spec.duration: expected a duration such as 90m or 1h30m");
	return st;
}

/* status.grantedAt and status.disruptedDisruptionBudgets into @x (the gate writes them; what
 * is not of the expected type reads as absent). */
static ng_status nd_verdicts(struct ctx *c, const cJSON *status, struct kube_nd_detail *x)
{
	const char *granted = ng_json_str(status, "grantedAt");
	if (granted && ng_parse_rfc3339_ms(granted, strlen(granted), &x->granted_ms) != NG_OK)
		x->granted_ms = -1;
	const cJSON *dbs = ng_json_get(status, "disruptedDisruptionBudgets");
	size_t n = cJSON_IsArray(dbs) ? (size_t)cJSON_GetArraySize(dbs) : 0;
	if (n > KUBE_MAX_ND_LIST)
		return fail(c, NG_ELIMIT, "status.disruptedDisruptionBudgets", "too many entries");
	struct kube_nd_verdict *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, "status.disruptedDisruptionBudgets", "out of memory");
	size_t i = 0;
	for (const cJSON *e = n ? dbs->child : NULL; e; e = e->next, i++) {
		const cJSON *ref = ng_json_get(e, "reference");
		const char *kind = ng_json_str(ref, "kind"), *ns = ng_json_str(ref, "namespace");
		const char *name = ng_json_str(ref, "name"), *reason = ng_json_str(e, "reason");
		struct kube_nd_verdict *v = &out[i];
		v->kind = v->ns = v->name = NG_INTERN_NONE;
		v->ok = cJSON_IsTrue(ng_json_get(e, "ok"));
		ng_status st = kind ? intern(c, kind, &v->kind) : NG_OK;
		st = st == NG_OK && ns ? intern(c, ns, &v->ns) : st;
		st = st == NG_OK && name ? intern(c, name, &v->name) : st;
		if (st != NG_OK)
			return st;
		v->reason =
		    ng_arena_strndup(c->arena, reason ? reason : "", reason ? strlen(reason) : 0);
		if (!v->reason)
			return fail(c, NG_ENOMEM, "status.disruptedDisruptionBudgets",
				    "out of memory");
	}
	x->verdicts = out;
	x->nverdicts = (uint16_t)n;
	return NG_OK;
}

static int64_t opt_time_ms(const cJSON *obj, const char *key)
{
	const char *t = ng_json_str(obj, key);
	int64_t ms = 0;
	if (t && ng_parse_rfc3339_ms(t, strlen(t), &ms) != NG_OK)
		ms = 0;
	return ms;
}

/* status.conditions and status.drain: what the drainer wrote, and the requestor's
 * RequestorFailed. Entries of the wrong shape are skipped: status is nodegate's to rewrite. */
static ng_status nd_progress(struct ctx *c, const cJSON *status, struct kube_nd_detail *x)
{
	const cJSON *conds = ng_json_get(status, "conditions");
	size_t n = cJSON_IsArray(conds) ? (size_t)cJSON_GetArraySize(conds) : 0;
	if (n > NG_MAX_LABELS)
		return fail(c, NG_ELIMIT, "status.conditions", "too many entries");
	struct kube_condition *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	size_t i = 0;
	for (const cJSON *e = n ? conds->child : NULL; e; e = e->next) {
		const char *type = ng_json_str(e, "type"), *st = ng_json_str(e, "status");
		if (!type)
			continue;
		struct kube_condition *k = &out[i++];
		k->status = !st                        ? KUBE_COND_UNKNOWN
			    : strcmp(st, "True") == 0  ? KUBE_COND_TRUE
			    : strcmp(st, "False") == 0 ? KUBE_COND_FALSE
						       : KUBE_COND_UNKNOWN;
		k->type = dup_or_empty(c, type);
		k->reason = dup_or_empty(c, ng_json_str(e, "reason"));
		k->message = dup_or_empty(c, ng_json_str(e, "message"));
		k->since_ms = opt_time_ms(e, "lastTransitionTime");
		if (!k->type || !k->reason || !k->message)
			return fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	}
	x->conditions = out;
	x->nconditions = (uint16_t)i;
	const cJSON *d = ng_json_get(status, "drain");
	static const char *const keys[5] = {"totalPods", "evictedPods", "remainingPods", "progress",
					    "attempts"};
	int64_t *vals[5] = {&x->drain_status.total, &x->drain_status.evicted,
			    &x->drain_status.remaining, &x->drain_status.progress,
			    &x->drain_status.attempts};
	for (int k = 0; k < 5; k++)
		if (!ng_json_int64(ng_json_get(d, keys[k]), vals[k]) || *vals[k] < 0)
			*vals[k] = 0;
	x->drain_status.backoff_until_ms = opt_time_ms(d, "backoffUntil");
	x->drain_status.attempt_started_ms = opt_time_ms(d, "attemptStartedAt");
	return NG_OK;
}

/* The fields only admission and the drainer read (struct kube_nd_detail). */
static ng_status nd_detail(struct ctx *c, const cJSON *o, struct kube_nd *d)
{
	struct kube_nd_detail *x = alloc(c, sizeof(*x));
	if (!x)
		return fail(c, NG_ENOMEM, "spec", "out of memory");
	memset(x, 0, sizeof(*x));
	x->spec_error = x->created_by = NG_INTERN_NONE;
	d->detail = x;
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *sel = ng_json_get(spec, "nodeSelector");
	const cJSON *names = ng_json_get(spec, "nodeNames");
	x->has_node_selector = sel && !cJSON_IsNull(sel);
	x->has_node_names = names && !cJSON_IsNull(names);
	struct ng_err verr = {0};
	ng_status st = nd_drain(c, ng_json_get(spec, "drain"), &x->drain, &verr);
	st = st ? st : nd_operation(c, ng_json_get(spec, "operation"), &x->operation, &verr);
	st = st ? st : nd_more(c, spec, x, &verr);
	st = st ? st : nd_verdicts(c, ng_json_get(o, "status"), x);
	st = st ? st : nd_progress(c, ng_json_get(o, "status"), x);
	const char *by =
	    ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "annotations"), CREATED_BY);
	if (st == NG_OK && by)
		st = intern(c, by, &x->created_by);
	const char *rem =
	    ng_json_str(ng_json_get(ng_json_get(o, "metadata"), "labels"), KUBE_REMEDIATION_LABEL);
	x->remediation = NG_INTERN_NONE;
	if (st == NG_OK && rem)
		st = intern(c, rem, &x->remediation);
	if (st == NG_OK && verr.status != NG_OK)
		st = intern(c, verr.msg, &x->spec_error);
	return st;
}

/* spec.nodeSelector: an invalid one selects nothing; the validating webhook rejects it, and
 * the gate reports it. Only OOM fails. */
static ng_status nd_selector(struct ctx *c, const cJSON *spec, struct kube_nd *d)
{
	struct ng_err serr = {0};
	ng_status st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					    "spec.nodeSelector", &d->node_selector, &serr);
	if (st == NG_ENOMEM)
		return fail(c, st, "spec.nodeSelector", "out of memory");
	if (st == NG_OK)
		return NG_OK;
	memset(&d->node_selector, 0, sizeof(d->node_selector));
	d->selector_invalid = true;
	return intern(c, serr.msg, &d->selector_error);
}

/* What the gate reads of spec: type, requestor, priority, nodeNames (and the decision's nodes),
 * the selector, retry. */
static ng_status nd_spec(struct ctx *c, const cJSON *spec, const cJSON *status, struct kube_nd *d)
{
	ng_status st;
	if ((st = opt_str(c, spec, "type", "spec.type", &d->type)) != NG_OK ||
	    (st = opt_str(c, spec, "requestor", "spec.requestor", &d->requestor)) != NG_OK)
		return st;
	int64_t prio = 0;
	const cJSON *pj = ng_json_get(spec, "priority");
	if (pj && !ng_json_int64(pj, &prio))
		return fail(c, NG_EPARSE, "spec.priority", "expected an integer");
	if (prio < INT32_MIN || prio > INT32_MAX)
		return fail(c, NG_ELIMIT, "spec.priority", "out of int32 range");
	d->priority = (int32_t)prio;
	if ((st = decode_str_array(c, ng_json_get(spec, "nodeNames"), "spec.nodeNames",
				   KUBE_MAX_ND_LIST, &d->node_names, &d->nnode_names)) != NG_OK ||
	    (st =
		 decode_str_array(c, ng_json_get(status, "disruptedNodes"), "status.disruptedNodes",
				  KUBE_MAX_ND_LIST, &d->disrupted, &d->ndisrupted)) != NG_OK ||
	    (st = nd_selector(c, spec, d)) != NG_OK)
		return st;
	const cJSON *retry = ng_json_get(spec, "retry");
	d->retry = cJSON_IsTrue(ng_json_get(retry, "enabled"));
	const char *deadline = ng_json_str(retry, "deadline");
	if (deadline && ng_parse_rfc3339_ms(deadline, strlen(deadline), &d->deadline_ms) != NG_OK)
		return fail(c, NG_EPARSE, "spec.retry.deadline", "expected an RFC 3339 time");
	const cJSON *more = ng_json_get(spec, "additionalRequestors");
	d->additional_requestors = cJSON_IsArray(more) && cJSON_GetArraySize(more) > 0;
	return NG_OK;
}

/* What the gate reads of metadata and status besides the decision's nodes. */
static ng_status nd_meta(struct ctx *c, const cJSON *meta, const cJSON *status, struct kube_nd *d)
{
	const char *created = ng_json_str(meta, "creationTimestamp");
	if (created && ng_parse_rfc3339_ms(created, strlen(created), &d->created_ms) != NG_OK)
		d->created_ms = 0;
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	d->deleting = del && !cJSON_IsNull(del);
	int64_t count = 0;
	if (ng_json_int64(ng_json_get(status, "retryCount"), &count) && count >= 0 &&
	    count <= UINT32_MAX)
		d->retry_count = (uint32_t)count;
	const char *next = ng_json_str(status, "nextRetryDate");
	if (next && ng_parse_rfc3339_ms(next, strlen(next), &d->next_retry_ms) != NG_OK)
		d->next_retry_ms = 0;
	ng_status st = decode_str_array(c, ng_json_get(meta, "finalizers"), "metadata.finalizers",
					NG_MAX_LABELS, &d->finalizers, &d->nfinalizers);
	if (st != NG_OK)
		return st;
	const char *rv = ng_json_str(meta, "resourceVersion");
	d->rv = ng_arena_strndup(c->arena, rv ? rv : "", rv ? strlen(rv) : 0);
	const char *uid = ng_json_str(meta, "uid");
	d->uid = ng_arena_strndup(c->arena, uid ? uid : "", uid ? strlen(uid) : 0);
	/* The reason of the first failing budget, so the gate writes status only on change. */
	const char *reason = "";
	const cJSON *dbs = ng_json_get(status, "disruptedDisruptionBudgets");
	for (const cJSON *e = cJSON_IsArray(dbs) ? dbs->child : NULL; e; e = e->next) {
		if (cJSON_IsFalse(ng_json_get(e, "ok")) && ng_json_str(e, "reason")) {
			reason = ng_json_str(e, "reason");
			break;
		}
	}
	d->status_reason = ng_arena_strndup(c->arena, reason, strlen(reason));
	if (!d->rv || !d->uid || !d->status_reason)
		return fail(c, NG_ENOMEM, "metadata", "out of memory");
	return NG_OK;
}

static ng_status decode_nd(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_nd *d = record(c, KUBE_RES_NDS);
	d->name = name;
	d->read_mono_us = ng_now_mono_us();
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *status = ng_json_get(o, "status");
	d->state = nd_state(ng_json_str(status, "state"));
	ng_status st = nd_spec(c, spec, status, d);
	st = st ? st : nd_meta(c, ng_json_get(o, "metadata"), status, d);
	return st ? st : nd_detail(c, o, d);
}

static ng_status decode_int_or_string(struct ctx *c, const cJSON *j, const char *field,
				      struct kube_int_or_string *ret, struct ng_err *verr)
{
	memset(ret, 0, sizeof(*ret));
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	ret->set = true;
	if (cJSON_IsString(j)) {
		ret->is_str = true;
		return intern(c, j->valuestring, &ret->str);
	}
	if (!ng_json_int64(j, &ret->i))
		return ng_err_set(verr, NG_EPARSE, 0, "%s: expected an integer or a percentage",
				  field);
	return NG_OK;
}

/* The longest maintenance window: a month. */
#define WINDOW_MAX_MS (31LL * 24 * 3600 * 1000)

/* spec.windows[@i] @j into @w; @limit_field is the kind's limit (maxDisruptedNodes or
 * maxDisruptions). Problems go to @verr. */
static ng_status decode_window(struct ctx *c, const cJSON *j, size_t i, const char *limit_field,
			       struct kube_window *w, struct ng_err *verr)
{
	struct ng_err e = {0};
	const char *sched = ng_json_str(j, "schedule"), *zone = ng_json_str(j, "timeZone");
	const cJSON *dur = ng_json_get(j, "duration"), *tz = ng_json_get(j, "timeZone");
	if (!cJSON_IsObject(j)) {
		problem(verr, "spec.windows[%zu]: expected an object", i);
		return NG_OK;
	}
	if (!sched) {
		problem(verr,
			"spec.windows[%zu].schedule: required (a cron schedule such as "
			"\"0 22 * * 1-5\")",
			i);
		return NG_OK;
	}
	if (ng_cron_parse(sched, &w->cron, &e) != NG_OK) {
		problem(verr, "spec.windows[%zu].%s", i, e.msg);
		return NG_OK;
	}
	if (!cJSON_IsString(dur) || !parse_duration_ms(dur->valuestring, &w->duration_ms) ||
	    w->duration_ms < 60000 || w->duration_ms > WINDOW_MAX_MS) {
		problem(verr,
			"spec.windows[%zu].duration: expected a duration from 1m to 744h, such as "
			"8h or 90m",
			i);
		return NG_OK;
	}
	if (tz && !cJSON_IsNull(tz) && !zone) {
		problem(verr,
			"spec.windows[%zu].timeZone: expected a zone name such as "
			"Europe/Paris",
			i);
		return NG_OK;
	}
	if (!zone)
		zone = "UTC";
	ng_status st = ng_tz_get(zone, &w->tz, &e);
	if (st == NG_ENOMEM)
		return st;
	if (st != NG_OK) {
		problem(verr, "spec.windows[%zu].timeZone: %s", i, e.msg);
		return NG_OK;
	}
	char field[64];
	ng_fmt(field, sizeof(field), "spec.windows[%zu].%s", i, limit_field);
	if ((st = decode_int_or_string(c, ng_json_get(j, limit_field), field, &w->limit, verr)) !=
	    NG_OK)
		return st;
	if ((st = intern(c, sched, &w->schedule)) != NG_OK)
		return st;
	return intern(c, zone, &w->zone);
}

/* spec.windows and spec.outsideWindows into @b. */
static ng_status decode_windows(struct ctx *c, const cJSON *spec, const char *limit_field,
				struct kube_budget_common *b, struct ng_err *verr)
{
	const cJSON *ws = ng_json_get(spec, "windows"), *out = ng_json_get(spec, "outsideWindows");
	if (out && !cJSON_IsNull(out)) {
		const char *v = cJSON_IsString(out) ? out->valuestring : "";
		b->outside_use_default = strcmp(v, "UseDefault") == 0;
		if (!b->outside_use_default && strcmp(v, "Deny") != 0) {
			problem(verr, "spec.outsideWindows: must be Deny or UseDefault");
			return NG_OK;
		}
	}
	if (!ws || cJSON_IsNull(ws))
		return NG_OK;
	if (!cJSON_IsArray(ws)) {
		problem(verr, "spec.windows: expected an array");
		return NG_OK;
	}
	size_t n = (size_t)cJSON_GetArraySize(ws);
	if (n > KUBE_MAX_WINDOWS) {
		(void)ng_err_set(verr, NG_ELIMIT, 0, "spec.windows: at most %d windows (%zu given)",
				 KUBE_MAX_WINDOWS, n);
		return NG_OK;
	}
	if (!n)
		return NG_OK;
	struct kube_window *w = alloc(c, n * sizeof(*w));
	if (!w)
		return fail(c, NG_ENOMEM, "spec.windows", "out of memory");
	memset(w, 0, n * sizeof(*w));
	size_t i = 0;
	for (const cJSON *e = ws->child; e && verr->status == NG_OK; e = e->next, i++) {
		ng_status st = decode_window(c, e, i, limit_field, &w[i], verr);
		if (st != NG_OK)
			return st;
	}
	if (verr->status != NG_OK)
		return NG_OK;
	b->windows = w;
	b->nwindows = (uint16_t)n;
	return NG_OK;
}

/* Fields every budget has. Validation problems go to @verr and make the budget invalid;
 * only OOM fails the load. */
static ng_status decode_budget_common(struct ctx *c, const cJSON *o, const cJSON *spec,
				      const char *limit_field, struct kube_budget_common *b,
				      struct ng_err *verr)
{
	if (!(b->uid = dup_or_empty(c, ng_json_str(ng_json_get(o, "metadata"), "uid"))))
		return fail(c, NG_ENOMEM, "metadata.uid", "out of memory");
	const cJSON *types = ng_json_get(spec, "supportedNodeDisruptionTypes");
	ng_status st = decode_str_array(c, types, "spec.supportedNodeDisruptionTypes",
					NG_MAX_LABELS, &b->types, &b->ntypes);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		*verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	const cJSON *fr = ng_json_get(spec, "freeze");
	if (cJSON_IsTrue(ng_json_get(fr, "enabled"))) {
		b->frozen = true;
		const char *reason = ng_json_str(fr, "reason");
		if ((st = intern(c, reason ? reason : "", &b->freeze_reason)) != NG_OK)
			return st;
	}
	return verr->status == NG_OK ? decode_windows(c, spec, limit_field, b, verr) : NG_OK;
}

static ng_status finish_budget(struct ctx *c, struct kube_budget_common *b, struct ng_err *verr)
{
	if (verr->status == NG_OK)
		return NG_OK;
	b->invalid = true;
	return intern(c, verr->msg, &b->error);
}

/* Bounds of spec.healthHook: a URL (or service path) and a CA bundle. */
#define HOOK_URL_MAX 2048
#define HOOK_CA_MAX (64u * 1024u)

/* What is checked before the URL: the shape of spec.healthHook @j and timeoutSeconds (into
 * *@secs). Why not into @why (@cap bytes), left "" when fine. */
static void hook_form(const cJSON *j, int64_t *secs, char *why, size_t cap)
{
	const cJSON *url = ng_json_get(j, "url");
	const cJSON *svc = ng_json_get(j, "service");
	bool has_url = url && !cJSON_IsNull(url), has_svc = svc && !cJSON_IsNull(svc);
	const cJSON *to = ng_json_get(j, "timeoutSeconds");
	const cJSON *ca = ng_json_get(j, "caBundle");
	if (!cJSON_IsObject(j))
		ng_fmt(why, cap, "spec.healthHook: expected an object");
	else if (has_url == has_svc)
		ng_fmt(why, cap, "spec.healthHook: exactly one of url and service is required");
	else if (to && !cJSON_IsNull(to) && (!ng_json_int64(to, secs) || *secs < 1 || *secs > 25))
		ng_fmt(why, cap, "spec.healthHook.timeoutSeconds: must be 1..25");
	else if (ca && !cJSON_IsNull(ca) && !cJSON_IsString(ca))
		ng_fmt(why, cap, "spec.healthHook.caBundle: expected a base64 string");
}

/* spec.healthHook.url @url copied into @buf (HOOK_URL_MAX + 1 bytes), or why not. */
static void hook_url(const cJSON *url, char *buf, char *why, size_t cap)
{
	if (!cJSON_IsString(url) || !*url->valuestring)
		ng_fmt(why, cap, "spec.healthHook.url: expected a non-empty string");
	else if (strlen(url->valuestring) > HOOK_URL_MAX)
		ng_fmt(why, cap, "spec.healthHook.url: longer than %d bytes", HOOK_URL_MAX);
	else
		ng_fmt(buf, HOOK_URL_MAX + 1, "%s", url->valuestring);
}

/* spec.healthHook.service @svc as the URL of its cluster DNS name in @buf, or why not. */
static void hook_service(const cJSON *svc, char *buf, char *why, size_t cap)
{
	const char *ns = ng_json_str(svc, "namespace"), *name = ng_json_str(svc, "name");
	const char *path = ng_json_str(svc, "path");
	const cJSON *port = ng_json_get(svc, "port");
	int64_t p = 443;
	if (!ns || !dns_subdomain_ok(ns, strlen(ns)) || strlen(ns) > 63 || strchr(ns, '.'))
		ng_fmt(why, cap, "spec.healthHook.service.namespace: must be a namespace name");
	else if (!name || !dns_subdomain_ok(name, strlen(name)) || strlen(name) > 63 ||
		 strchr(name, '.'))
		ng_fmt(why, cap, "spec.healthHook.service.name: must be a Service name");
	else if (port && !cJSON_IsNull(port) && (!ng_json_int64(port, &p) || p < 1 || p > 65535))
		ng_fmt(why, cap, "spec.healthHook.service.port: must be 1..65535");
	else if (path && (path[0] != '/' || strlen(path) > 1024 || strpbrk(path, " \t\r\n?#")))
		ng_fmt(why, cap,
		       "spec.healthHook.service.path: must start with '/' and hold no spaces, '?' "
		       "or '#' (at most 1024 bytes)");
	else
		ng_fmt(buf, HOOK_URL_MAX + 1, "https://%s.%s.svc:%d%s", name, ns, (int)p,
		       path ? path : "/");
}

static char *arena_lower(struct ng_arena *a, const char *s, size_t len)
{
	char *out = ng_arena_strndup(a, s, len);
	for (char *p = out; p && *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return out;
}

/* The scheme, host and credentials of URL @url into @h (the arena's), or why it is not a URL.
 * Only OOM fails. */
static ng_status hook_parts(struct ctx *c, const char *url, const char *field, struct kube_hook *h,
			    char *why, size_t cap)
{
	CURLU *u = curl_url();
	if (!u)
		return fail(c, NG_ENOMEM, field, "out of memory");
	char *scheme = NULL, *host = NULL, *user = NULL;
	ng_status st = NG_OK;
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		ng_fmt(why, cap, "%s: \"%.100s\" is not a URL", field, url);
		goto out;
	}
	h->userinfo = curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK;
	/* An IPv6 literal comes back bracketed; allowedHosts globs are written without. */
	size_t hl = strlen(host);
	bool bracketed = host[0] == '[' && hl > 2 && host[hl - 1] == ']';
	h->scheme = arena_lower(c->arena, scheme, strlen(scheme));
	h->host = arena_lower(c->arena, host + bracketed, hl - 2 * bracketed);
	if (!h->scheme || !h->host)
		st = fail(c, NG_ENOMEM, field, "out of memory");
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(u);
	return st;
}

/* spec.healthHook.caBundle @ca decoded into @h's arena copy, or why not. Only OOM fails. */
static ng_status hook_ca(struct ctx *c, const cJSON *ca, const char *field, struct kube_hook *h,
			 char *why, size_t cap)
{
	char *pem;
	size_t n;
	ng_status st = ng_base64_decode(ca->valuestring, strlen(ca->valuestring), &pem, &n);
	if (st == NG_ENOMEM)
		return fail(c, st, field, "out of memory");
	if (st != NG_OK || n > HOOK_CA_MAX || !strstr(pem, "-----BEGIN CERTIFICATE-----"))
		ng_fmt(why, cap, "%s: must be base64 of PEM certificates (at most %u bytes)", field,
		       HOOK_CA_MAX);
	else if (!(h->ca = ng_arena_strndup(c->arena, pem, n)))
		st = NG_ENOMEM;
	h->nca = h->ca ? n : 0;
	free(pem);
	if (st == NG_ENOMEM)
		return fail(c, st, field, "out of memory");
	return NG_OK;
}

/* spec.healthHook into @h. A hook that cannot be called gets @h->error and fails closed when
 * its budget is impacted; the budget's scope stays readable. Only OOM fails. */
static ng_status decode_hook(struct ctx *c, const cJSON *j, struct kube_hook *h)
{
	char why[256] = "";
	memset(h, 0, sizeof(*h));
	h->error = NG_INTERN_NONE;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	h->present = true;
	int64_t secs = 5;
	hook_form(j, &secs, why, sizeof(why));
	h->timeout_s = (int32_t)secs;
	const cJSON *url = ng_json_get(j, "url");
	const cJSON *ca = ng_json_get(j, "caBundle");
	char buf[HOOK_URL_MAX + 1];
	if (!*why && url && !cJSON_IsNull(url)) {
		hook_url(url, buf, why, sizeof(why));
	} else if (!*why) {
		hook_service(ng_json_get(j, "service"), buf, why, sizeof(why));
		h->service = true;
	}
	ng_status st = NG_OK;
	if (!*why && cJSON_IsString(ca) && *ca->valuestring)
		st = hook_ca(c, ca, "spec.healthHook.caBundle", h, why, sizeof(why));
	if (st == NG_OK && !*why)
		st = hook_parts(c, buf, "spec.healthHook.url", h, why, sizeof(why));
	if (st != NG_OK)
		return st;
	if (*why) {
		h->ca = NULL;
		h->nca = 0;
		h->scheme = h->host = NULL;
		return intern(c, why, &h->error);
	}
	if (!(h->url = ng_arena_strndup(c->arena, buf, strlen(buf))))
		return fail(c, NG_ENOMEM, "spec.healthHook", "out of memory");
	return NG_OK;
}

static ng_status decode_adb(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name)
{
	struct kube_adb *a = record(c, KUBE_RES_ADBS);
	a->b.ns = ns;
	a->b.name = name;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = decode_budget_common(c, o, spec, "maxDisruptions", &a->b, &verr);
	if (st != NG_OK)
		return st;
	if (verr.status == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "podSelector"),
					  "spec.podSelector", &a->pod_selector, &verr);
	if (st == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "pvcSelector"),
					  "spec.pvcSelector", &a->pvc_selector, &verr);
	if (st == NG_OK)
		st = decode_int_or_string(c, ng_json_get(spec, "maxDisruptions"),
					  "spec.maxDisruptions", &a->max_disruptions, &verr);
	if (st == NG_ENOMEM)
		return fail(c, st, "spec", "out of memory");
	/* The selectors are not decoded after an earlier problem (a window's): that one is
	 * the message. */
	if (st == NG_OK && verr.status == NG_OK && !a->pod_selector.present &&
	    !a->pvc_selector.present)
		(void)ng_err_set(&verr, NG_EPARSE, 0,
				 "spec: at least one of podSelector and pvcSelector is required");
	if (verr.status != NG_OK) {
		memset(&a->pod_selector, 0, sizeof(a->pod_selector));
		memset(&a->pvc_selector, 0, sizeof(a->pvc_selector));
	}
	if (st == NG_OK || st == NG_EPARSE || st == NG_ELIMIT)
		st = decode_hook(c, ng_json_get(spec, "healthHook"), &a->hook);
	if (st != NG_OK)
		return st;
	return finish_budget(c, &a->b, &verr);
}

/* spec.topologyKey with spec.maxDisruptedDomains and spec.maxDisruptedNodesPerDomain: the key a
 * label key, each limit needing it, and it needing one of them. */
static ng_status ndb_topology(struct ctx *c, const cJSON *spec, struct kube_ndb *n,
			      struct ng_err *verr)
{
	n->topology_key = NG_INTERN_NONE;
	n->max_domains = -1;
	const cJSON *key = ng_json_get(spec, "topologyKey");
	const cJSON *dom = ng_json_get(spec, "maxDisruptedDomains");
	ng_status st =
	    decode_int_or_string(c, ng_json_get(spec, "maxDisruptedNodesPerDomain"),
				 "spec.maxDisruptedNodesPerDomain", &n->max_per_domain, verr);
	if (st != NG_OK || verr->status != NG_OK)
		return st;
	if (dom && !cJSON_IsNull(dom) &&
	    (!ng_json_int64(dom, &n->max_domains) || n->max_domains < 0 ||
	     n->max_domains > 1000000)) {
		problem(verr, "spec.maxDisruptedDomains: expected an integer 0..1000000");
		return NG_OK;
	}
	bool limits = n->max_domains >= 0 || n->max_per_domain.set;
	if (!key || cJSON_IsNull(key)) {
		if (limits)
			problem(verr, "spec.topologyKey: required with maxDisruptedDomains or "
				      "maxDisruptedNodesPerDomain");
		return NG_OK;
	}
	const char *why = cJSON_IsString(key)
			      ? kube_label_key_problem(key->valuestring, strlen(key->valuestring))
			      : "expected a label key";
	if (why) {
		problem(verr, "spec.topologyKey: %s", why);
		return NG_OK;
	}
	if (!limits) {
		problem(verr, "spec.topologyKey: needs maxDisruptedDomains or "
			      "maxDisruptedNodesPerDomain");
		return NG_OK;
	}
	return intern(c, key->valuestring, &n->topology_key);
}

static ng_status decode_ndb(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_ndb *n = record(c, KUBE_RES_NDBS);
	n->b.ns = NG_INTERN_NONE;
	n->b.name = name;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = decode_budget_common(c, o, spec, "maxDisruptedNodes", &n->b, &verr);
	if (st != NG_OK)
		return st;
	if (verr.status == NG_OK)
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					  "spec.nodeSelector", &n->node_selector, &verr);
	if (st == NG_OK)
		st = decode_int_or_string(c, ng_json_get(spec, "maxDisruptedNodes"),
					  "spec.maxDisruptedNodes", &n->max_disrupted, &verr);
	if (st == NG_OK)
		st = decode_int_or_string(c, ng_json_get(spec, "minUndisruptedNodes"),
					  "spec.minUndisruptedNodes", &n->min_undisrupted, &verr);
	if (st == NG_OK)
		st = ndb_topology(c, spec, n, &verr);
	if (st == NG_ENOMEM)
		return fail(c, st, "spec", "out of memory");
	const cJSON *cu = ng_json_get(spec, "countUnavailableNodes");
	n->count_unavailable = !cJSON_IsFalse(cu);
	const cJSON *tt = ng_json_get(spec, "taintTargets");
	if (tt && !cJSON_IsNull(tt) && !cJSON_IsArray(tt) && verr.status == NG_OK)
		(void)ng_err_set(&verr, NG_EPARSE, 0, "spec.taintTargets: expected an array");
	size_t nt = cJSON_IsArray(tt) ? (size_t)cJSON_GetArraySize(tt) : 0;
	if (nt > NG_MAX_LABELS && verr.status == NG_OK)
		(void)ng_err_set(&verr, NG_ELIMIT, 0, "spec.taintTargets: too many entries");
	if (nt && verr.status == NG_OK) {
		struct kube_taint_target *t = alloc(c, nt * sizeof(*t));
		if (!t)
			return fail(c, NG_ENOMEM, "spec.taintTargets", "out of memory");
		size_t i = 0;
		for (const cJSON *e = tt->child; e && verr.status == NG_OK; e = e->next, i++) {
			const char *op = ng_json_str(e, "operator");
			t[i].exists = op && strcmp(op, "Exists") == 0;
			if (op && !t[i].exists && strcmp(op, "Equal") != 0)
				(void)ng_err_set(
				    &verr, NG_EPARSE, 0,
				    "spec.taintTargets[%zu].operator: must be Equal or Exists", i);
			if (!ng_json_str(e, "key"))
				(void)ng_err_set(&verr, NG_EPARSE, 0,
						 "spec.taintTargets[%zu].key: required", i);
			if (verr.status != NG_OK)
				break;
			if ((st = opt_str(c, e, "key", "spec.taintTargets.key", &t[i].key)) !=
				NG_OK ||
			    (st = opt_str(c, e, "value", "spec.taintTargets.value", &t[i].val)) !=
				NG_OK ||
			    (st = opt_str(c, e, "effect", "spec.taintTargets.effect",
					  &t[i].effect)) != NG_OK) {
				if (st == NG_ENOMEM)
					return st;
				verr = *c->err;
			}
		}
		n->taint_targets = t;
		n->ntargets = (uint16_t)nt;
	}
	if (verr.status != NG_OK)
		memset(&n->node_selector, 0, sizeof(n->node_selector));
	return finish_budget(c, &n->b, &verr);
}

/* One entry of healthHooks.allowedCIDRs: "10.0.0.0/8", "fd00::/8", or an address alone. */
static bool parse_cidr(const char *s, struct kube_cidr *ret)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(addr))
		return false;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, addr, ret->addr) == 1)
		ret->family = 4;
	else if (inet_pton(AF_INET6, addr, ret->addr) == 1)
		ret->family = 6;
	else
		return false;
	int64_t max = ret->family == 4 ? 32 : 128, bits = max;
	if (slash && ng_parse_i64(slash + 1, strlen(slash + 1), 0, max, &bits) != NG_OK)
		return false;
	ret->bits = (uint8_t)bits;
	return true;
}

/* spec.healthHooks; problems go to @verr (the config is then invalid). */
static ng_status decode_hook_policy(struct ctx *c, const cJSON *j, struct kube_hook_policy *p,
				    struct ng_err *verr)
{
	p->allow_service_refs = !cJSON_IsFalse(ng_json_get(j, "allowServiceRefs"));
	p->allow_http = cJSON_IsTrue(ng_json_get(j, "allowHTTP"));
	p->max_response_bytes = 65536;
	const cJSON *mx = ng_json_get(j, "maxResponseBytes");
	if (mx && !cJSON_IsNull(mx) &&
	    (!ng_json_int64(mx, &p->max_response_bytes) || p->max_response_bytes < 1 ||
	     p->max_response_bytes > 16 * 1024 * 1024))
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.healthHooks.maxResponseBytes: must be 1..16777216");
	ng_status st =
	    decode_str_array(c, ng_json_get(j, "allowedHosts"), "spec.healthHooks.allowedHosts",
			     NG_MAX_LABELS, &p->hosts, &p->nhosts);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		*verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	const cJSON *cidrs = ng_json_get(j, "allowedCIDRs");
	if (!cidrs || cJSON_IsNull(cidrs))
		return NG_OK;
	size_t n = cJSON_IsArray(cidrs) ? (size_t)cJSON_GetArraySize(cidrs) : 0;
	if (!cJSON_IsArray(cidrs) || n > NG_MAX_LABELS) {
		(void)ng_err_set(verr, NG_EPARSE, 0,
				 "spec.healthHooks.allowedCIDRs: expected at most %d strings",
				 NG_MAX_LABELS);
		return NG_OK;
	}
	struct kube_cidr *out = alloc(c, n * sizeof(*out));
	if (n && !out)
		return fail(c, NG_ENOMEM, "spec.healthHooks.allowedCIDRs", "out of memory");
	size_t i = 0;
	for (const cJSON *e = cidrs->child; e; e = e->next, i++)
		if (!cJSON_IsString(e) || !parse_cidr(e->valuestring, &out[i])) {
			(void)ng_err_set(verr, NG_EPARSE, 0,
					 "spec.healthHooks.allowedCIDRs[%zu]: not a CIDR like "
					 "10.0.0.0/8 or fd00::/8",
					 i);
			return NG_OK;
		}
	p->cidrs = out;
	p->ncidrs = (uint16_t)n;
	return NG_OK;
}

/* spec.alertGate's scalar fields @j into @a, or why not into @why: timeoutSeconds, cacheSeconds,
 * failurePolicy, and exactly one of query and alertNameRegex (the regex compiled as the gate
 * matches it: ng_regex_get_label_matcher()). */
static void alert_form(const cJSON *j, struct kube_alert_gate *a, char *why, size_t cap)
{
	const cJSON *to = ng_json_get(j, "timeoutSeconds"), *cs = ng_json_get(j, "cacheSeconds");
	const cJSON *q = ng_json_get(j, "query"), *re = ng_json_get(j, "alertNameRegex");
	const cJSON *fp = ng_json_get(j, "failurePolicy");
	bool has_q = q && !cJSON_IsNull(q), has_re = re && !cJSON_IsNull(re);
	int64_t secs = 5, cache = 10;
	if (to && !cJSON_IsNull(to) && (!ng_json_int64(to, &secs) || secs < 1 || secs > 30))
		ng_fmt(why, cap, "spec.alertGate.timeoutSeconds: must be 1..30");
	else if (cs && !cJSON_IsNull(cs) &&
		 (!ng_json_int64(cs, &cache) || cache < 1 || cache > 300))
		ng_fmt(why, cap, "spec.alertGate.cacheSeconds: must be 1..300");
	else if (fp && !cJSON_IsNull(fp) &&
		 (!cJSON_IsString(fp) ||
		  (strcmp(fp->valuestring, "Deny") != 0 && strcmp(fp->valuestring, "Ignore") != 0)))
		ng_fmt(why, cap, "spec.alertGate.failurePolicy: must be Deny or Ignore");
	else if (has_q == has_re)
		ng_fmt(why, cap,
		       "spec.alertGate: exactly one of query and alertNameRegex is required");
	else if (has_q && (!cJSON_IsString(q) || !*q->valuestring ||
			   strlen(q->valuestring) > KUBE_ALERT_QUERY_MAX))
		ng_fmt(why, cap,
		       "spec.alertGate.query: expected a non-empty string of at most %d bytes",
		       KUBE_ALERT_QUERY_MAX);
	else if (has_re && (!cJSON_IsString(re) || !*re->valuestring ||
			    strlen(re->valuestring) > KUBE_ALERT_REGEX_MAX))
		ng_fmt(why, cap,
		       "spec.alertGate.alertNameRegex: expected a non-empty string of at most %d "
		       "bytes",
		       KUBE_ALERT_REGEX_MAX);
	a->target.timeout_s = (int32_t)secs;
	a->cache_s = (int32_t)cache;
	a->fail_open = cJSON_IsString(fp) && strcmp(fp->valuestring, "Ignore") == 0;
	a->mode = has_q ? KUBE_ALERT_QUERY : KUBE_ALERT_REGEX;
	if (*why || !has_re)
		return;
	/* Compiled as the gate matches alert names: as Prometheus matches a label value. */
	struct ng_regex *compiled = NULL;
	struct ng_err err = {0};
	if (ng_regex_get_label_matcher(re->valuestring, strlen(re->valuestring), &compiled, &err) !=
	    NG_OK)
		ng_fmt(why, cap, "spec.alertGate.alertNameRegex: %.120s", err.msg);
	ng_regex_put(compiled);
}

/* spec.alertGate.prometheusURL @url into @a->target (the arena's copy, without a trailing '/'),
 * or why not: an https URL without credentials, query or fragment. Only OOM fails. */
static ng_status alert_url(struct ctx *c, const cJSON *url, struct kube_alert_gate *a, char *why,
			   size_t cap)
{
	static const char field[] = "spec.alertGate.prometheusURL";
	if (!cJSON_IsString(url) || !*url->valuestring) {
		ng_fmt(why, cap, "%s: expected a non-empty string", field);
		return NG_OK;
	}
	size_t len = strlen(url->valuestring);
	if (len > HOOK_URL_MAX) {
		ng_fmt(why, cap, "%s: longer than %d bytes", field, HOOK_URL_MAX);
		return NG_OK;
	}
	if (strpbrk(url->valuestring, "?# \t\r\n")) {
		ng_fmt(why, cap, "%s: must hold no query, fragment or spaces", field);
		return NG_OK;
	}
	ng_status st = hook_parts(c, url->valuestring, field, &a->target, why, cap);
	if (st != NG_OK || *why)
		return st;
	if (strcmp(a->target.scheme, "https") != 0)
		ng_fmt(why, cap, "%s: must be an https URL", field);
	else if (a->target.userinfo)
		ng_fmt(why, cap, "%s: must carry no credentials", field);
	while (len > 0 && url->valuestring[len - 1] == '/')
		len--;
	if (!*why && !(a->target.url = ng_arena_strndup(c->arena, url->valuestring, len)))
		return fail(c, NG_ENOMEM, field, "out of memory");
	return NG_OK;
}

/* spec.alertGate @j into @a; a problem goes to @verr (the config is then invalid and @a stays
 * NONE). Only OOM fails. */
static ng_status decode_alert_gate(struct ctx *c, const cJSON *j, struct kube_alert_gate *a,
				   struct ng_err *verr)
{
	char why[160] = "";
	memset(a, 0, sizeof(*a));
	a->target.error = NG_INTERN_NONE;
	if (!j || cJSON_IsNull(j))
		return NG_OK;
	if (!cJSON_IsObject(j))
		ng_fmt(why, sizeof(why), "spec.alertGate: expected an object");
	else
		alert_form(j, a, why, sizeof(why));
	const cJSON *ca = ng_json_get(j, "caBundle");
	ng_status st = NG_OK;
	if (!*why)
		st = alert_url(c, ng_json_get(j, "prometheusURL"), a, why, sizeof(why));
	if (st == NG_OK && !*why && ca && !cJSON_IsNull(ca)) {
		if (!cJSON_IsString(ca))
			ng_fmt(why, sizeof(why),
			       "spec.alertGate.caBundle: expected a base64 string");
		else if (*ca->valuestring)
			st =
			    hook_ca(c, ca, "spec.alertGate.caBundle", &a->target, why, sizeof(why));
	}
	const cJSON *e = ng_json_get(j, a->mode == KUBE_ALERT_QUERY ? "query" : "alertNameRegex");
	if (st == NG_OK && !*why && !(a->expr = dup_or_empty(c, e->valuestring)))
		st = fail(c, NG_ENOMEM, "spec.alertGate", "out of memory");
	if (st != NG_OK)
		return st;
	if (*why) {
		memset(a, 0, sizeof(*a));
		a->target.error = NG_INTERN_NONE;
		problem(verr, "%s", why);
		return NG_OK;
	}
	a->target.present = true;
	return NG_OK;
}

/* NodeGateConfig spec.drain: protected namespaces and Job pods, the attempts' backoff. A
 * problem goes to @verr (the config is then invalid); only OOM fails. */
static ng_status decode_ngc_drain(struct ctx *c, const cJSON *d, struct kube_ngc *g,
				  struct ng_err *verr)
{
	static const char *const skeys[2] = {"protectedNamespaces", "protectedJobPods"};
	struct kube_selector *sels[2] = {&g->protected_namespaces, &g->protected_job_pods};
	for (int k = 0; k < 2; k++) {
		const cJSON *j = ng_json_get(d, skeys[k]);
		if (!j || cJSON_IsNull(j))
			continue;
		char field[48];
		ng_fmt(field, sizeof(field), "spec.drain.%s", skeys[k]);
		ng_status st = kube_decode_selector(c->pool, c->arena, j, field, sels[k], verr);
		/* A selector over the limits makes the config invalid too: it never goes unread. */
		if (st == NG_ENOMEM)
			return fail(c, st, field, "out of memory");
	}
	const cJSON *b = ng_json_get(d, "backoff");
	static const char *const bkeys[3] = {"base", "max", "jitter"};
	int64_t *bvals[3] = {&g->drain_backoff_base_ms, &g->drain_backoff_max_ms,
			     &g->drain_backoff_jitter_ms};
	for (int k = 0; k < 3; k++) {
		const cJSON *v = ng_json_get(b, bkeys[k]);
		int64_t secs;
		*bvals[k] = -1;
		if (!v || cJSON_IsNull(v))
			continue;
		/* A day bounds a backoff; more is a typo. */
		if (!ng_json_int64(v, &secs) || secs < 0 || secs > 86400)
			(void)ng_err_set(verr, NG_EPARSE, 0,
					 "spec.drain.backoff.%s: must be an integer of seconds in "
					 "0..86400",
					 bkeys[k]);
		else
			*bvals[k] = secs * 1000;
	}
	return NG_OK;
}

/* NodeGateConfig spec.eviction.exemptUsers holds no entry kube_exempt_entry_problem refuses
 * ("*" alone); else @verr says which. Checked here, not by the CRD alone: a config that reaches
 * the cache some other way (a snapshot file, an older CRD) must not exempt everyone either, and
 * before the list is interned, so a refused config leaves no string without a record. */
static bool exempt_entries_valid(const cJSON *users, struct ng_err *verr)
{
	size_t idx = 0;
	for (const cJSON *e = cJSON_IsArray(users) ? users->child : NULL; e; e = e->next, idx++) {
		const char *why =
		    cJSON_IsString(e) ? kube_exempt_entry_problem(e->valuestring) : NULL;
		if (why) {
			(void)ng_err_set(verr, NG_EPARSE, 0, "spec.eviction.exemptUsers[%zu]: %s",
					 idx, why);
			return false;
		}
	}
	return true;
}

static ng_status decode_ngc(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_ngc *g = record(c, KUBE_RES_NGCS);
	g->name = name;
	const cJSON *spec = ng_json_get(o, "spec");
	const cJSON *ev = ng_json_get(spec, "eviction");
	const char *mode = ng_json_str(ev, "mode");
	struct ng_err verr = {0};
	g->paused = cJSON_IsTrue(ng_json_get(spec, "paused"));
	g->reject_empty = !cJSON_IsFalse(ng_json_get(spec, "rejectEmptyDisruptions"));
	g->reject_overlapping = cJSON_IsTrue(ng_json_get(spec, "rejectOverlappingDisruptions"));
	const cJSON *cp = ng_json_get(spec, "controlPlane");
	g->serial_control_plane = !cJSON_IsFalse(ng_json_get(cp, "serial"));
	const cJSON *cpsel = ng_json_get(cp, "selector");
	if (cpsel && !cJSON_IsNull(cpsel)) {
		ng_status sst =
		    kube_decode_selector(c->pool, c->arena, cpsel, "spec.controlPlane.selector",
					 &g->control_plane_selector, &verr);
		if (sst == NG_ENOMEM)
			return fail(c, sst, "spec.controlPlane.selector", "out of memory");
	}
	const cJSON *retry = ng_json_get(spec, "retry");
	static const char *const rkeys[2] = {"initialIntervalSeconds", "maxIntervalSeconds"};
	int64_t *rvals[2] = {&g->retry_initial_ms, &g->retry_max_ms};
	for (int k = 0; k < 2; k++) {
		const cJSON *v = ng_json_get(retry, rkeys[k]);
		int64_t secs;
		if (!v || cJSON_IsNull(v))
			continue;
		/* A day bounds a retry interval; more is a typo. */
		if (!ng_json_int64(v, &secs) || secs < 1 || secs > 86400)
			(void)ng_err_set(&verr, NG_EPARSE, 0,
					 "spec.retry.%s: must be an integer of seconds in 1..86400",
					 rkeys[k]);
		else
			*rvals[k] = secs * 1000;
	}
	if (!mode)
		g->eviction_mode = KUBE_EVICTION_UNSET;
	else if (strcmp(mode, "Enforce") == 0)
		g->eviction_mode = KUBE_EVICTION_ENFORCE;
	else if (strcmp(mode, "Warn") == 0)
		g->eviction_mode = KUBE_EVICTION_WARN;
	else if (strcmp(mode, "Off") == 0)
		g->eviction_mode = KUBE_EVICTION_OFF;
	else
		(void)ng_err_set(&verr, NG_EPARSE, 0,
				 "spec.eviction.mode: \"%.40s\" is not one of Enforce, Warn, Off",
				 mode);
	ng_status tst = decode_str_array(c, ng_json_get(spec, "allowedTypes"), "spec.allowedTypes",
					 NG_MAX_LABELS, &g->allowed_types, &g->nallowed_types);
	if (tst == NG_EPARSE || tst == NG_ELIMIT)
		verr = *c->err;
	else if (tst != NG_OK)
		return tst;
	g->auto_request = cJSON_IsTrue(ng_json_get(ev, "autoRequest"));
	g->respect_pdbs = cJSON_IsTrue(ng_json_get(spec, "respectPodDisruptionBudgets"));
	const cJSON *users = ng_json_get(ev, "exemptUsers");
	g->has_exempt_users = users && !cJSON_IsNull(users);
	if (!exempt_entries_valid(users, &verr))
		users = NULL;
	ng_status st = decode_str_array(c, users, "spec.eviction.exemptUsers", NG_MAX_LABELS,
					&g->exempt_users, &g->nexempt);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	if ((st = decode_hook_policy(c, ng_json_get(spec, "healthHooks"), &g->hooks, &verr)) !=
	    NG_OK)
		return st;
	st = decode_str_array(c, ng_json_get(spec, "doNotDisruptOverrideTypes"),
			      "spec.doNotDisruptOverrideTypes", NG_MAX_LABELS, &g->dnd_override,
			      &g->ndnd_override);
	if (st == NG_EPARSE || st == NG_ELIMIT) {
		verr = *c->err;
		st = NG_OK;
	}
	if (st != NG_OK)
		return st;
	if ((st = decode_ngc_drain(c, ng_json_get(spec, "drain"), g, &verr)) != NG_OK)
		return st;
	if ((st = decode_alert_gate(c, ng_json_get(spec, "alertGate"), &g->alert, &verr)) != NG_OK)
		return st;
	if (verr.status == NG_OK)
		return NG_OK;
	memset(&g->alert, 0, sizeof(g->alert));
	/* An unreadable config enforces: it must never loosen the eviction guard. */
	g->invalid = true;
	g->eviction_mode = KUBE_EVICTION_ENFORCE;
	g->auto_request = false;
	g->has_exempt_users = false;
	g->nexempt = 0;
	return intern(c, verr.msg, &g->error);
}

/* The author annotations of @meta (KUBE_AUTHOR_ANNOTATION, KUBE_AUTHOR_GROUPS_ANNOTATION) into
 * @a: no author unless both are there and the groups are a JSON array of at most
 * KUBE_MAX_AUTHOR_GROUPS strings in at most KUBE_MAX_AUTHOR_GROUPS_BYTES. */
static ng_status decode_author(struct ctx *c, const cJSON *meta, struct kube_author *a)
{
	a->name = NG_INTERN_NONE;
	a->ngroups = 0;
	a->groups = NULL;
	const cJSON *ann = ng_json_get(meta, "annotations");
	const char *by = ng_json_str(ann, KUBE_AUTHOR_ANNOTATION);
	const char *gs = ng_json_str(ann, KUBE_AUTHOR_GROUPS_ANNOTATION);
	size_t len = gs ? strnlen(gs, KUBE_MAX_AUTHOR_GROUPS_BYTES + 1) : 0;
	if (!by || !*by || !gs || len > KUBE_MAX_AUTHOR_GROUPS_BYTES)
		return NG_OK;
	cJSON *root = NULL;
	struct ng_err e = {0};
	if (ng_json_parse(gs, len, NULL, &root, &e) != NG_OK || !cJSON_IsArray(root) ||
	    cJSON_GetArraySize(root) > KUBE_MAX_AUTHOR_GROUPS) {
		cJSON_Delete(root);
		return NG_OK;
	}
	size_t n = (size_t)cJSON_GetArraySize(root), i = 0;
	uint32_t *ids = n ? alloc(c, n * sizeof(*ids)) : NULL;
	ng_status st =
	    n && !ids ? fail(c, NG_ENOMEM, "metadata.annotations", "out of memory") : NG_OK;
	for (const cJSON *g = root->child; st == NG_OK && g; g = g->next, i++) {
		if (!cJSON_IsString(g)) {
			cJSON_Delete(root);
			return NG_OK;
		}
		st = intern(c, g->valuestring, &ids[i]);
	}
	cJSON_Delete(root);
	st = st ? st : intern(c, by, &a->name);
	if (st != NG_OK) {
		a->name = NG_INTERN_NONE;
		return st;
	}
	a->ngroups = (uint16_t)n;
	a->groups = ids;
	return NG_OK;
}

/* A NodeDisruptionTemplate: its spec kept whole (canonical JSON) for the requests, and checked
 * as a request's spec.drain and spec.operation are, so a broken template is reported on the
 * NodeRemediation instead of as a refused create per node. */
static ng_status decode_ndt(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_ndt *t = record(c, KUBE_RES_NDTS);
	t->name = name;
	t->error = t->type = t->requestor = NG_INTERN_NONE;
	const cJSON *spec = ng_json_get(o, "spec");
	struct ng_err verr = {0};
	if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
		problem(&verr, "spec: expected an object");
	struct kube_nd_drain dr = {0};
	struct kube_nd_operation op = {0};
	ng_status st =
	    cJSON_IsObject(spec) ? nd_drain(c, ng_json_get(spec, "drain"), &dr, &verr) : NG_OK;
	st = st || !cJSON_IsObject(spec)
		 ? st
		 : nd_operation(c, ng_json_get(spec, "operation"), &op, &verr);
	int64_t prio = 0;
	if (ng_json_int64(ng_json_get(spec, "priority"), &prio) && prio >= INT32_MIN &&
	    prio <= INT32_MAX)
		t->priority = (int32_t)prio;
	t->retry = cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled"));
	t->privileged = op.privileged;
	st = st ? st : decode_author(c, ng_json_get(o, "metadata"), &t->author);
	const char *type = ng_json_str(spec, "type"), *req = ng_json_str(spec, "requestor");
	if (st == NG_OK && type)
		st = intern(c, type, &t->type);
	if (st == NG_OK && req)
		st = intern(c, req, &t->requestor);
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	if (st == NG_OK)
		st = cJSON_IsObject(spec) ? canonical_json(c, spec, &b) : ng_buf_puts(&b, "{}");
	if (st == NG_OK && !(t->spec_json = ng_arena_strndup(c->arena, b.data, b.len)))
		st = NG_ENOMEM;
	ng_buf_finish(&b);
	if (st != NG_OK)
		return fail(c, st, "spec", ng_status_str(st));
	return verr.status != NG_OK ? intern(c, verr.msg, &t->error) : NG_OK;
}

/* spec.rule.conditions: 1..KUBE_MAX_REM_CONDITIONS of {type, status True|False|Unknown,
 * forSeconds >= 0}. */
static ng_status nrem_conditions(struct ctx *c, const cJSON *rule, struct kube_nrem *r,
				 struct ng_err *verr)
{
	const cJSON *conds = ng_json_get(rule, "conditions");
	size_t n = cJSON_IsArray(conds) ? (size_t)cJSON_GetArraySize(conds) : 0;
	if (n == 0 || n > KUBE_MAX_REM_CONDITIONS) {
		problem(verr, "spec.rule.conditions: expected 1 to %d conditions",
			KUBE_MAX_REM_CONDITIONS);
		return NG_OK;
	}
	struct kube_rem_condition *out = alloc(c, n * sizeof(*out));
	if (!out)
		return fail(c, NG_ENOMEM, "spec.rule.conditions", "out of memory");
	size_t i = 0;
	for (const cJSON *e = conds->child; e; e = e->next, i++) {
		const char *t = ng_json_str(e, "type"), *s = ng_json_str(e, "status");
		if (!t || !*t || strlen(t) > NG_MAX_LABEL_KEY_BYTES) {
			problem(verr, "spec.rule.conditions[%zu].type: expected a condition type",
				i);
			return NG_OK;
		}
		if (!s || (strcmp(s, "True") != 0 && strcmp(s, "False") != 0 &&
			   strcmp(s, "Unknown") != 0)) {
			problem(verr,
				"spec.rule.conditions[%zu].status: must be True, False or "
				"Unknown",
				i);
			return NG_OK;
		}
		char field[64];
		(void)snprintf(field, sizeof(field), "spec.rule.conditions[%zu].forSeconds", i);
		int64_t secs = opt_seconds(e, "forSeconds", field, verr);
		if (secs > 31536000)
			problem(verr, "%s: at most 31536000 (a year)", field);
		/* In ms only within the bound: a larger value would overflow. */
		out[i].for_ms = secs > 0 && secs <= 31536000 ? secs * 1000 : 0;
		out[i].status = cond_status(s);
		ng_status st = intern(c, t, &out[i].type);
		if (st != NG_OK)
			return st;
	}
	r->conds = out;
	r->nconds = (uint16_t)n;
	return NG_OK;
}

/* status.lastRemediated and status.storm, read back: the cooldown and the storm's start
 * survive a restart. Entries of the wrong shape are skipped (status is nodegate's). */
static ng_status nrem_status(struct ctx *c, const cJSON *status, struct kube_nrem *r)
{
	const cJSON *storm = ng_json_get(status, "storm");
	r->storm = cJSON_IsTrue(ng_json_get(storm, "active"));
	r->storm_since_ms = r->storm ? opt_time_ms(storm, "since") : 0;
	const cJSON *last = ng_json_get(status, "lastRemediated");
	size_t n;
	struct kube_rem_last *out = items_room(c, last, KUBE_MAX_REM_LAST, sizeof(*out), &n);
	if (n && !out)
		return fail(c, NG_ENOMEM, "status.lastRemediated", "out of memory");
	size_t k = 0;
	for (const cJSON *e = n ? last->child : NULL; e && k < n; e = e->next) {
		const char *node = ng_json_str(e, "node"), *req = ng_json_str(e, "request");
		int64_t at = opt_time_ms(e, "time");
		if (!node || !*node || at <= 0)
			continue;
		ng_status st = intern(c, node, &out[k].node);
		st = st ? st : intern(c, req ? req : "", &out[k].request);
		if (st != NG_OK)
			return st;
		out[k].at_ms = at;
		if (!(out[k].uid = dup_or_empty(c, ng_json_str(e, "uid"))))
			return fail(c, NG_ENOMEM, "status.lastRemediated", "out of memory");
		k++;
	}
	r->last = k ? out : NULL;
	r->nlast = (uint16_t)k;
	return NG_OK;
}

/* metadata of a NodeRemediation: uid, resourceVersion, deletion and finalizers. */
static ng_status nrem_meta(struct ctx *c, const cJSON *meta, uint32_t name, struct kube_nrem *r,
			   struct ng_err *verr)
{
	r->uid = dup_or_empty(c, ng_json_str(meta, "uid"));
	r->rv = dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	if (!r->uid || !r->rv)
		return fail(c, NG_ENOMEM, "metadata", "out of memory");
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	r->deleting = del && !cJSON_IsNull(del);
	ng_status st = decode_str_array(c, ng_json_get(meta, "finalizers"), "metadata.finalizers",
					NG_MAX_LABELS, &r->finalizers, &r->nfinalizers);
	if (st != NG_OK)
		return st;
	for (uint16_t i = 0; i < r->nfinalizers; i++) {
		const char *f = ng_intern_str(c->pool, r->finalizers[i], NULL);
		r->has_finalizer |= f && strcmp(f, KUBE_REMEDIATION_FINALIZER) == 0;
	}
	const char *nm = ng_intern_str(c->pool, name, NULL);
	if (nm && strlen(nm) > NG_MAX_LABEL_VALUE_BYTES)
		problem(verr, "metadata.name: at most %d characters (it labels the requests)",
			NG_MAX_LABEL_VALUE_BYTES);
	return NG_OK;
}

/* An int-or-percent of a NodeRemediation: an integer 0..1000000 or "N%" with N 0..100. */
static void nrem_count(const struct kube_int_or_string *v, const char *field,
		       const struct ng_intern *pool, struct ng_err *verr)
{
	if (!v->set || verr->status != NG_OK)
		return;
	if (!v->is_str) {
		if (v->i < 0 || v->i > 1000000)
			problem(verr, "%s: expected 0 to 1000000 or a percentage", field);
		return;
	}
	size_t len;
	const char *s = ng_intern_str(pool, v->str, &len);
	size_t digits = 0;
	long pct = 0;
	while (digits < len && digits < 4 && s[digits] >= '0' && s[digits] <= '9')
		pct = pct * 10 + (s[digits++] - '0');
	if (digits == 0 || digits + 1 != len || s[digits] != '%' || pct > 100)
		problem(verr, "%s: expected an integer or a percentage such as \"25%%\"", field);
}

/* decode_int_or_string() for a NodeRemediation: a value that is neither an integer nor a
 * string makes the remediation invalid (the first problem in @verr says why); only the pool and
 * memory fail the decode. */
static ng_status nrem_int_or_string(struct ctx *c, const cJSON *j, const char *field,
				    struct kube_int_or_string *ret, struct ng_err *verr)
{
	struct ng_err e = {0};
	ng_status st = decode_int_or_string(c, j, field, ret, &e);
	if (st != NG_EPARSE)
		return st;
	problem(verr, "%s", e.msg);
	return NG_OK;
}

static ng_status decode_nrem(struct ctx *c, const cJSON *o, uint32_t name)
{
	struct kube_nrem *r = record(c, KUBE_RES_NREMS);
	r->name = name;
	r->error = r->template_name = NG_INTERN_NONE;
	struct ng_err verr = {0};
	const cJSON *spec = ng_json_get(o, "spec");
	ng_status st = nrem_meta(c, ng_json_get(o, "metadata"), name, r, &verr);
	st = st ? st : decode_author(c, ng_json_get(o, "metadata"), &r->author);
	if (st == NG_OK && verr.status == NG_OK) {
		st = kube_decode_selector(c->pool, c->arena, ng_json_get(spec, "nodeSelector"),
					  "spec.nodeSelector", &r->node_selector, &verr);
		/* Malformed, it makes the remediation invalid (@verr says why), as any field. */
		st = st == NG_EPARSE || st == NG_ELIMIT ? NG_OK : st;
	}
	if (st == NG_OK && verr.status == NG_OK && !r->node_selector.present)
		problem(&verr, "spec.nodeSelector: required");
	st = st ? st : nrem_conditions(c, ng_json_get(spec, "rule"), r, &verr);
	const char *tn = ng_json_str(spec, "templateName");
	if (st == NG_OK && (!tn || !*tn))
		problem(&verr, "spec.templateName: required");
	st = st || !tn ? st : intern(c, tn, &r->template_name);
	st = st ? st
		: nrem_int_or_string(c, ng_json_get(spec, "maxConcurrent"), "spec.maxConcurrent",
				     &r->max_concurrent, &verr);
	if (st == NG_OK && !r->max_concurrent.set)
		r->max_concurrent = (struct kube_int_or_string){.set = true, .i = 1};
	const cJSON *guard = ng_json_get(spec, "stormGuard");
	r->storm_guard = cJSON_IsObject(guard);
	st = st || !r->storm_guard
		 ? st
		 : nrem_int_or_string(c, ng_json_get(guard, "maxUnhealthy"),
				      "spec.stormGuard.maxUnhealthy", &r->max_unhealthy, &verr);
	if (st == NG_OK && r->storm_guard && !r->max_unhealthy.set)
		problem(&verr, "spec.stormGuard.maxUnhealthy: required");
	if (st == NG_OK) {
		nrem_count(&r->max_concurrent, "spec.maxConcurrent", c->pool, &verr);
		nrem_count(&r->max_unhealthy, "spec.stormGuard.maxUnhealthy", c->pool, &verr);
	}
	int64_t cool = opt_seconds(spec, "cooldownSeconds", "spec.cooldownSeconds", &verr);
	if (cool > 31536000)
		problem(&verr, "spec.cooldownSeconds: at most 31536000 (a year)");
	r->cooldown_ms = (cool < 0 || cool > 31536000 ? 3600 : cool) * 1000;
	st = st ? st : nrem_status(c, ng_json_get(o, "status"), r);
	if (st != NG_OK)
		return st == NG_ENOMEM ? fail(c, st, "spec", "out of memory") : st;
	if (verr.status == NG_OK)
		return NG_OK;
	r->invalid = true;
	return intern(c, verr.msg, &r->error);
}

/* A PodDisruptionBudget: its selector and status. A selector that does not read makes it
 * invalid: it then covers every pod of its namespace and allows nothing. */
static ng_status decode_pdb(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name)
{
	struct kube_pdb *p = record(c, KUBE_RES_PDBS);
	p->ns = ns;
	p->name = name;
	struct ng_err verr = {0};
	ng_status st =
	    kube_decode_selector(c->pool, c->arena, ng_json_get(ng_json_get(o, "spec"), "selector"),
				 "spec.selector", &p->selector, &verr);
	if (st == NG_ENOMEM)
		return fail(c, st, "spec.selector", "out of memory");
	if (verr.status != NG_OK) {
		p->invalid = true;
		p->selector = (struct kube_selector){.present = true};
	}
	const cJSON *status = ng_json_get(o, "status");
	p->has_status =
	    ng_json_int64(ng_json_get(status, "disruptionsAllowed"), &p->disruptions_allowed);
	(void)ng_json_int64(ng_json_get(status, "currentHealthy"), &p->current_healthy);
	(void)ng_json_int64(ng_json_get(status, "desiredHealthy"), &p->desired_healthy);
	(void)ng_json_int64(ng_json_get(status, "expectedPods"), &p->expected_pods);
	if (p->invalid || !p->has_status || p->disruptions_allowed < 0)
		p->disruptions_allowed = 0;
	return NG_OK;
}

static bool is_nodegate(const char *api_version)
{
	return api_version && strncmp(api_version, "nodegate.io/", 12) == 0;
}

static const char *const kinds[KUBE_RES_COUNT] = {
    "Node",
    "Pod",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "NodeDisruption",
    "ApplicationDisruptionBudget",
    "NodeDisruptionBudget",
    "NodeGateConfig",
    "NodeDisruptionTemplate",
    "NodeRemediation",
    "PodDisruptionBudget",
};

static bool namespaced(enum kube_resource r)
{
	return r == KUBE_RES_PODS || r == KUBE_RES_PVCS || r == KUBE_RES_ADBS || r == KUBE_RES_PDBS;
}

/* Copies a pod's side data (decoded in scratch) into one exactly sized block, tagged as such.
 * NULL on OOM. */
static void *compact_pod(struct kube_pod *p)
{
	size_t nl = (size_t)p->nlabels * sizeof(*p->labels);
	size_t nc = (size_t)p->nclaims * sizeof(*p->claims);
	size_t nr = (size_t)p->nrequests * sizeof(*p->requests);
	size_t nn = strlen(p->name) + 1;
	char *block = malloc(nl + nc + nr + nn);
	if (!block)
		return NULL;
	char *at = block;
	if (nl)
		memcpy(at, p->labels, nl);
	p->labels = nl ? (const struct kube_label *)(void *)at : NULL;
	at += nl;
	if (nc)
		memcpy(at, p->claims, nc);
	p->claims = nc ? (const uint32_t *)(void *)at : NULL;
	at += nc;
	if (nr)
		memcpy(at, p->requests, nr);
	p->requests = nr ? (const uint32_t *)(void *)at : NULL;
	at += nr;
	memcpy(at, p->name, nn);
	p->name = at;
	return (void *)((uintptr_t)block | KUBE_SIDE_BLOCK);
}

/* The record of kind @res from @obj, whose name (interned unless a pod's) and namespace are
 * decoded already. */
static ng_status decode_record(struct ctx *c, enum kube_resource res, const cJSON *obj,
			       const char *name, uint32_t name_id, uint32_t ns_id)
{
	const cJSON *meta = ng_json_get(obj, "metadata");
	switch (res) {
	case KUBE_RES_NODES:
		return decode_node(c, obj, name_id, meta);
	case KUBE_RES_PODS:
		return decode_pod(c, obj, ns_id, name, meta);
	case KUBE_RES_PVCS:
		return decode_pvc(c, obj, ns_id, name_id, meta);
	case KUBE_RES_PVS:
		return decode_pv(c, obj, name_id);
	case KUBE_RES_NDS:
		return decode_nd(c, obj, name_id);
	case KUBE_RES_ADBS:
		return decode_adb(c, obj, ns_id, name_id);
	case KUBE_RES_NDBS:
		return decode_ndb(c, obj, name_id);
	case KUBE_RES_NDTS:
		return decode_ndt(c, obj, name_id);
	case KUBE_RES_NREMS:
		return decode_nrem(c, obj, name_id);
	case KUBE_RES_PDBS:
		return decode_pdb(c, obj, ns_id, name_id);
	default:
		return decode_ngc(c, obj, name_id);
	}
}

/* kube_decode_as(); @where NULL for an object decoded on its own (messages without a prefix),
 * and with @name_optional a missing metadata.name decodes as NG_INTERN_NONE. */
static ng_status decode_as(struct ng_intern *pool, struct ng_arena *scratch, enum kube_resource res,
			   const cJSON *obj, const char *where, bool name_optional,
			   struct kube_object *ret, struct ng_err *reterr)
{
	struct kube_object out;
	struct ctx c = {.obj = &out, .pool = pool, .err = reterr, .where = where ? where : ""};
	char label[200] = "";
	const char *sep = where ? ": " : "";
	if (!cJSON_IsObject(obj))
		return ng_err_set(reterr, NG_EPARSE, 0, "%s%sexpected an object", c.where, sep);
	const cJSON *meta = ng_json_get(obj, "metadata");
	const char *name = ng_json_str(meta, "name");
	const char *ns = ng_json_str(meta, "namespace");
	const char *kind = kinds[res];
	if ((!name && !name_optional) || (name && !*name))
		return where ? ng_err_set(reterr, NG_EPARSE, 0, "%s (%s): metadata.name: required",
					  where, kind)
			     : ng_err_set(reterr, NG_EPARSE, 0, "metadata.name: required");
	/* Objects written by hand may leave the namespace out; kubectl would use "default". */
	if (namespaced(res) && (!ns || !*ns))
		ns = "default";
	if (where)
		(void)snprintf(label, sizeof(label), "%s (%s %s%s%.100s)", where, kind,
			       namespaced(res) ? ns : "", namespaced(res) ? "/" : "", name);
	c.where = label;
	/* Pods (the many) are decoded in scratch and copied into one exact block; the few other
	 * objects keep an arena, whose nested selectors would be tedious to copy. */
	bool compact = res == KUBE_RES_PODS && scratch;
	if (compact)
		ng_arena_reset(scratch);
	c.arena = compact ? scratch : ng_arena_create_sized(SIZE_MAX, 1024);
	if (!c.arena)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s%sout of memory", where ? where : "",
				  sep);
	uint32_t name_id = NG_INTERN_NONE, ns_id = NG_INTERN_NONE;
	ng_status st = NG_OK;
	if (res != KUBE_RES_PODS && name)
		st = intern(&c, name, &name_id);
	if (st == NG_OK && namespaced(res))
		st = intern(&c, ns, &ns_id);
	if (st == NG_OK)
		st = decode_record(&c, res, obj, name ? name : "", name_id, ns_id);
	if (st == NG_OK && compact) {
		out.side = compact_pod(&out.rec.pod);
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

/* The kind @obj's kind and apiVersion name among those kept, or KUBE_RES_COUNT. */
static enum kube_resource resource_of(const cJSON *obj)
{
	const char *kind = ng_json_str(obj, "kind");
	const char *api = ng_json_str(obj, "apiVersion");
	bool core = api && strcmp(api, "v1") == 0;
	for (int r = 0; kind && r < KUBE_RES_COUNT; r++) {
		if (strcmp(kind, kinds[r]) != 0)
			continue;
		bool ours = r >= KUBE_RES_NDS && r != KUBE_RES_PDBS;
		bool match = r == KUBE_RES_PDBS ? api && strcmp(api, "policy/v1") == 0
			     : ours             ? is_nodegate(api)
						: core;
		if (match)
			return (enum kube_resource)r;
	}
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

struct kube_one {
	struct ng_intern *pool;
	struct kube_object obj;
};

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

#define ONE_ACCESSOR(fn, type, kind, member)                                                       \
	const type *fn(const struct kube_one *one)                                                 \
	{                                                                                          \
		return one && one->obj.res == (kind) ? &one->obj.rec.member : NULL;                \
	}
ONE_ACCESSOR(kube_one_nd, struct kube_nd, KUBE_RES_NDS, nd)
ONE_ACCESSOR(kube_one_adb, struct kube_adb, KUBE_RES_ADBS, adb)
ONE_ACCESSOR(kube_one_ndb, struct kube_ndb, KUBE_RES_NDBS, ndb)
ONE_ACCESSOR(kube_one_ngc, struct kube_ngc, KUBE_RES_NGCS, ngc)
ONE_ACCESSOR(kube_one_nrem, struct kube_nrem, KUBE_RES_NREMS, nrem)
ONE_ACCESSOR(kube_one_ndt, struct kube_ndt, KUBE_RES_NDTS, ndt)
#undef ONE_ACCESSOR
