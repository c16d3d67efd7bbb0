/* Label syntax (apimachinery validation), LabelSelectors and node selectors. */
#include "kube/decode_internal.h"

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
bool kd_dns_subdomain_ok(const char *s, size_t len)
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
		if (!kd_dns_subdomain_ok(s, plen))
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
	sel.present = true;
	if (nml + nme == 0) { /* {}: every object */
		*ret_sel = sel;
		return NG_OK;
	}
	struct kube_requirement *reqs = ng_arena_alloc(arena, (nml + nme) * sizeof(*reqs));
	if (!reqs)
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
	sel.nreqs = (uint16_t)n;
	sel.reqs = reqs;
	*ret_sel = sel;
	return NG_OK;
}

/* Node-selector requirements: never an error, an invalid one marks its term invalid. */
static bool node_req(struct kd_ctx *c, const cJSON *e, bool field, struct kube_requirement *r,
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
	uint32_t *v = nv ? kd_alloc(c, nv * sizeof(*v)) : NULL;
	if (nv && !v) {
		*st = kd_fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
		return false;
	}
	size_t i = 0;
	for (const cJSON *ve = nv ? vals->child : NULL; ve; ve = ve->next, i++) {
		if (!cJSON_IsString(ve))
			return false;
		if ((*st = kd_intern(c, ve->valuestring, &v[i])) != NG_OK)
			return false;
	}
	if (op == KUBE_OP_GT || op == KUBE_OP_LT) {
		int64_t num;
		const char *s = nv == 1 && vals->child ? vals->child->valuestring : NULL;
		if (!s || ng_parse_i64(s, strlen(s), INT64_MIN, INT64_MAX, &num) != NG_OK)
			return false;
		r->num = num;
	}
	if ((*st = kd_intern(c, key, &r->key)) != NG_OK)
		return false;
	r->op = (uint8_t)op;
	r->nvalues = (uint16_t)nv;
	r->values = v;
	return true;
}

ng_status kd_decode_node_selector(struct kd_ctx *c, const cJSON *j, struct kube_node_selector *ret)
{
	memset(ret, 0, sizeof(*ret));
	const cJSON *terms = ng_json_get(ng_json_get(j, "required"), "nodeSelectorTerms");
	if (!cJSON_IsArray(terms))
		return NG_OK; /* no (required) affinity: pins nothing */
	size_t nt = (size_t)cJSON_GetArraySize(terms);
	if (nt > NG_MAX_NODE_SELECTOR_TERMS)
		return kd_fail(c, NG_ELIMIT, "spec.nodeAffinity", "too many nodeSelectorTerms");
	struct kube_node_term *out = kd_alloc(c, nt * sizeof(*out));
	if (nt && !out)
		return kd_fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
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
		struct kube_requirement *re = kd_alloc(c, ne * sizeof(*re));
		struct kube_requirement *rf = kd_alloc(c, nf * sizeof(*rf));
		if ((ne && !re) || (nf && !rf))
			return kd_fail(c, NG_ENOMEM, "spec.nodeAffinity", "out of memory");
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
