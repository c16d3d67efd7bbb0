#include "budgets/selector.h"

#include "budgets/internal.h"

#include "common/arena.h"
#include "common/intern.h"
#include "common/limits.h"

#include <stdio.h>
#include <string.h>

/* ---- matching ---- */

static bool parse_int(const char *s, size_t len, int64_t *ret);

static bool value_in(const struct kube_requirement *r, uint32_t v)
{
	for (uint16_t i = 0; i < r->nvalues; i++)
		if (r->values[i] == v)
			return true;
	return false;
}

bool bud_requirement_matches(const struct kube_requirement *r, const struct kube_label *labels,
			     size_t n, const struct ng_intern *pool)
{
	uint32_t v;
	bool has = kube_labels_get(labels, n, r->key, &v);
	switch (r->op) {
	case KUBE_OP_IN:
		return has && value_in(r, v);
	case KUBE_OP_NOTIN:
		return !has || !value_in(r, v);
	case KUBE_OP_EXISTS:
		return has;
	case KUBE_OP_DOES_NOT_EXIST:
		return !has;
	case KUBE_OP_GT:
	case KUBE_OP_LT: {
		if (!has)
			return false;
		size_t len;
		const char *s = ng_intern_str(pool, v, &len);
		int64_t num;
		if (!parse_int(s, len, &num))
			return false; /* a label that is not an integer is neither more nor less */
		return r->op == KUBE_OP_GT ? num > r->num : num < r->num;
	}
	}
	return false;
}

bool bud_selector_matches(const struct kube_selector *sel, const struct kube_label *labels,
			  size_t n, const struct ng_intern *pool)
{
	if (!sel->present)
		return false;
	for (uint16_t i = 0; i < sel->nreqs; i++)
		if (!bud_requirement_matches(&sel->reqs[i], labels, n, pool))
			return false;
	return true;
}

static bool term_matches(const struct kube_node_term *t, const struct kube_node *node,
			 const struct ng_intern *pool)
{
	if (t->invalid || (t->nexprs == 0 && t->nfields == 0))
		return false;
	for (uint16_t i = 0; i < t->nexprs; i++)
		if (!bud_requirement_matches(&t->exprs[i], node->labels, node->nlabels, pool))
			return false;
	for (uint16_t i = 0; i < t->nfields; i++) {
		const struct kube_requirement *r = &t->fields[i];
		bool eq = r->nvalues == 1 && r->values[0] == node->name;
		if (r->op == KUBE_OP_IN ? !eq : eq)
			return false;
	}
	return true;
}

bool bud_node_selector_matches(const struct kube_node_selector *sel, const struct kube_node *node,
			       const struct ng_intern *pool)
{
	if (!sel->present)
		return false;
	for (uint16_t i = 0; i < sel->nterms; i++)
		if (term_matches(&sel->terms[i], node, pool))
			return true;
	return false;
}

/* ---- string form ---- */

/* The grammar is Kubernetes' own (apimachinery's label selector parser, what `kubectl -l` and
 * `labelSelector=` read), token for token:
 *
 *   selector    := "" | requirement ("," requirement)*
 *   requirement := "!" KEY | KEY | KEY ("in" | "notin") "(" values ")"
 *                | KEY ("=" | "==" | "!=" | ">" | "<") [VALUE]
 *   values      := [VALUE] ("," [VALUE])*        an empty entry is the value ""
 *
 * Tokens are separated by whitespace (space, tab, CR, LF: nothing else) or by the symbols
 * ! = ( ) , > <; the longest of "!=" and "==" is taken. Any other run of bytes is one identifier
 * (KEY or VALUE), checked afterwards as the API server checks label keys and values; "in" and
 * "notin" are operators only where an operator is expected, so they are fine keys and values.
 * The values of > and < are label values that read as base-10 int64s. */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_special(char c)
{
	return c == '!' || c == '=' || c == ',' || c == '(' || c == ')' || c == '>' || c == '<';
}

struct lexer {
	const char *buf;
	size_t len, pos;
	/* the current token */
	enum bud_tok t;
	const char *s;
	size_t slen;
	size_t at;
};

/* Reads the next token into lx. With @values (a key or a value is expected), "in" and "notin"
 * are identifiers. */
static void next(struct lexer *lx, bool values)
{
	while (lx->pos < lx->len && is_space(lx->buf[lx->pos]))
		lx->pos++;
	lx->at = lx->pos;
	lx->s = lx->buf + lx->pos;
	lx->slen = 0;
	if (lx->pos >= lx->len) {
		lx->t = BUD_TOK_EOF;
		return;
	}
	char c = lx->buf[lx->pos];
	char d = lx->pos + 1 < lx->len ? lx->buf[lx->pos + 1] : '\0';
	lx->slen = 1;
	switch (c) {
	case '!':
		lx->t = d == '=' ? BUD_TOK_NEQ : BUD_TOK_BANG;
		break;
	case '=':
		lx->t = d == '=' ? BUD_TOK_DEQ : BUD_TOK_EQ;
		break;
	case ',':
		lx->t = BUD_TOK_COMMA;
		break;
	case '(':
		lx->t = BUD_TOK_LPAREN;
		break;
	case ')':
		lx->t = BUD_TOK_RPAREN;
		break;
	case '>':
		lx->t = BUD_TOK_GT;
		break;
	case '<':
		lx->t = BUD_TOK_LT;
		break;
	default: {
		size_t e = lx->pos;
		while (e < lx->len && !is_space(lx->buf[e]) && !is_special(lx->buf[e]))
			e++;
		lx->slen = e - lx->pos;
		lx->t = BUD_TOK_IDENT;
		if (!values && lx->slen == 2 && memcmp(lx->s, "in", 2) == 0)
			lx->t = BUD_TOK_IN;
		else if (!values && lx->slen == 5 && memcmp(lx->s, "notin", 5) == 0)
			lx->t = BUD_TOK_NOTIN;
		lx->pos = e;
		return;
	}
	}
	if (lx->t == BUD_TOK_NEQ || lx->t == BUD_TOK_DEQ)
		lx->slen = 2;
	lx->pos += lx->slen;
}

size_t bud_selector_lex(const char *buf, size_t len, bool values, enum bud_tok *out, size_t cap)
{
	struct lexer lx = {.buf = buf, .len = len};
	size_t n = 0;
	do {
		next(&lx, values);
		if (n < cap)
			out[n] = lx.t;
		n++;
	} while (lx.t != BUD_TOK_EOF);
	return n;
}

/* A base-10 int64 as Kubernetes reads the value of > and < and the label it is compared with
 * (Go's strconv.ParseInt): an optional sign, then one or more digits, leading zeros allowed
 * whatever their number; false when out of range. */
static bool parse_int(const char *s, size_t len, int64_t *ret)
{
	size_t i = 0;
	bool neg = len && s[0] == '-';
	if (len && (s[0] == '-' || s[0] == '+'))
		i = 1;
	if (i == len)
		return false;
	uint64_t lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX, v = 0;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned digit = (unsigned)(s[i] - '0');
		if (v > (lim - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	if (!neg)
		*ret = (int64_t)v;
	else
		*ret = v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
	return true;
}

struct parser {
	struct lexer lx;
	struct ng_intern *pool;
	struct ng_arena *arena;
	struct ng_err *err;
	struct kube_requirement reqs[NG_MAX_SELECTOR_TERMS];
	size_t nreqs;
	uint32_t vals[NG_MAX_SELECTOR_VALUES];
	size_t nvals;
};

static ng_status perr(struct parser *p, size_t at, const char *what)
{
	const struct lexer *lx = &p->lx;
	if (lx->t == BUD_TOK_EOF)
		return ng_err_set(p->err, NG_EPARSE, at,
				  "at byte %zu: found end of string, expected %s", at, what);
	return ng_err_set(p->err, NG_EPARSE, at, "at byte %zu: found '%.*s', expected %s", at,
			  (int)(lx->slen > 40 ? 40 : lx->slen), lx->s, what);
}

/* @what (a key or a value, @s of @len bytes at byte @at) is refused because of @problem. Quotes at
 * most 40 bytes of it, so the reason is never cut off. */
static ng_status refuse(struct parser *p, const char *what, const char *s, size_t len, size_t at,
			const char *problem)
{
	return ng_err_set(p->err, NG_EPARSE, at, "at byte %zu: invalid %s '%.*s%s': %s", at, what,
			  (int)(len > 40 ? 40 : len), s, len > 40 ? "..." : "", problem);
}

static ng_status add_value(struct parser *p, const char *s, size_t len, size_t at)
{
	const char *problem = kube_label_value_problem(s, len);
	if (problem)
		return refuse(p, "value", s, len, at, problem);
	uint32_t id;
	ng_status st = ng_intern_add(p->pool, s, len, &id);
	if (st != NG_OK)
		return ng_err_set(p->err, st, at, "interning: %s", ng_status_str(st));
	for (size_t i = 0; i < p->nvals; i++)
		if (p->vals[i] == id)
			return NG_OK; /* a set: duplicates collapse */
	if (p->nvals == NG_MAX_SELECTOR_VALUES)
		return ng_err_set(p->err, NG_ELIMIT, at, "more than %d values in one requirement",
				  NG_MAX_SELECTOR_VALUES);
	p->vals[p->nvals++] = id;
	return NG_OK;
}

/* "(" values ")": "()", "(,", ",," and ",)" add the empty string. */
static ng_status parse_set(struct parser *p)
{
	struct lexer *lx = &p->lx;
	next(lx, true);
	if (lx->t != BUD_TOK_LPAREN)
		return perr(p, lx->at, "'('");
	next(lx, true);
	if (lx->t == BUD_TOK_RPAREN)
		return add_value(p, "", 0, lx->at);
	for (;;) {
		ng_status st;
		if (lx->t == BUD_TOK_IDENT) {
			if ((st = add_value(p, lx->s, lx->slen, lx->at)) != NG_OK)
				return st;
			next(lx, true);
			if (lx->t == BUD_TOK_RPAREN)
				return NG_OK;
			if (lx->t != BUD_TOK_COMMA)
				return perr(p, lx->at, "',' or ')'");
			next(lx, true);
			if (lx->t == BUD_TOK_RPAREN)
				return add_value(p, "", 0, lx->at);
		} else if (lx->t == BUD_TOK_COMMA) {
			if ((st = add_value(p, "", 0, lx->at)) != NG_OK)
				return st;
			next(lx, true);
			if (lx->t == BUD_TOK_RPAREN)
				return NG_OK;
		} else {
			return perr(p, lx->at, "',', ')' or a value");
		}
	}
}

/* A requirement is "[!]key [operator values]". The key ("in" and "notin" are keys here): checked
 * as the API server checks label keys, and interned into @r. */
static ng_status parse_key(struct parser *p, struct kube_requirement *r, bool *ret_bang,
			   size_t *ret_at)
{
	struct lexer *lx = &p->lx;
	bool bang = false;
	next(lx, true);
	if (lx->t == BUD_TOK_BANG) {
		bang = true;
		next(lx, true);
	}
	if (lx->t != BUD_TOK_IDENT)
		return perr(p, lx->at, bang ? "a key after '!'" : "'!' or a key");
	const char *key = lx->s;
	size_t klen = lx->slen, kat = lx->at;
	const char *problem = kube_label_key_problem(key, klen);
	if (problem)
		return refuse(p, "key", key, klen, kat, problem);
	ng_status st = ng_intern_add(p->pool, key, klen, &r->key);
	if (st != NG_OK)
		return ng_err_set(p->err, st, kat, "interning: %s", ng_status_str(st));
	*ret_bang = bang;
	*ret_at = kat;
	return NG_OK;
}

/* The one value after =, ==, !=, > or < (@op): "a=" is a = "". The value of > and < is a label
 * value that reads as an integer ("-5" is not a label value). */
static ng_status parse_single_value(struct parser *p, enum bud_tok op, struct kube_requirement *r)
{
	struct lexer *lx = &p->lx;
	r->op = op == BUD_TOK_NEQ  ? KUBE_OP_NOTIN
		: op == BUD_TOK_GT ? KUBE_OP_GT
		: op == BUD_TOK_LT ? KUBE_OP_LT
				   : KUBE_OP_IN;
	struct lexer save = *lx;
	next(lx, true);
	const char *v = "";
	size_t vlen = 0, vat = lx->at;
	if (lx->t == BUD_TOK_IDENT) {
		v = lx->s;
		vlen = lx->slen;
	} else if (lx->t == BUD_TOK_EOF || lx->t == BUD_TOK_COMMA) {
		*lx = save; /* "a=" is a = "" */
	} else {
		return perr(p, lx->at, "a value");
	}
	if ((op == BUD_TOK_GT || op == BUD_TOK_LT) && !parse_int(v, vlen, &r->num))
		return refuse(p, "value", v, vlen, vat,
			      "the value of > and < must be an integer (a decimal int64)");
	return add_value(p, v, vlen, vat);
}

/* What follows the key: nothing (a bare key exists; "!key" must not), or an operator and its
 * values into p->vals. */
static ng_status parse_operator(struct parser *p, bool bang, struct kube_requirement *r)
{
	struct lexer *lx = &p->lx;
	/* Peek: a bare key (or !key) ends at ',' or the end. */
	struct lexer save = *lx;
	next(lx, false);
	if (bang || lx->t == BUD_TOK_EOF || lx->t == BUD_TOK_COMMA) {
		*lx = save;
		r->op = bang ? KUBE_OP_DOES_NOT_EXIST : KUBE_OP_EXISTS;
		return NG_OK;
	}
	switch (lx->t) {
	case BUD_TOK_IN:
	case BUD_TOK_NOTIN:
		r->op = lx->t == BUD_TOK_IN ? KUBE_OP_IN : KUBE_OP_NOTIN;
		return parse_set(p);
	case BUD_TOK_EQ:
	case BUD_TOK_DEQ:
	case BUD_TOK_NEQ:
	case BUD_TOK_GT:
	case BUD_TOK_LT:
		return parse_single_value(p, lx->t, r);
	default:
		return perr(p, lx->at, "one of =, ==, !=, in, notin, >, <, ',' or end of string");
	}
}

/* Appends @r, with the values collected in p->vals copied to the arena, to the selector. */
static ng_status add_requirement(struct parser *p, struct kube_requirement *r, size_t kat)
{
	if (p->nvals) {
		uint32_t *vals = ng_arena_alloc(p->arena, p->nvals * sizeof(*vals));
		if (!vals)
			return ng_err_set(p->err, NG_ENOMEM, kat, "out of memory");
		memcpy(vals, p->vals, p->nvals * sizeof(*vals));
		r->values = vals;
		r->nvalues = (uint16_t)p->nvals;
	}
	if (p->nreqs == NG_MAX_SELECTOR_TERMS)
		return ng_err_set(p->err, NG_ELIMIT, kat, "more than %d requirements",
				  NG_MAX_SELECTOR_TERMS);
	p->reqs[p->nreqs++] = *r;
	return NG_OK;
}

static ng_status parse_requirement(struct parser *p)
{
	struct kube_requirement r = {0};
	bool bang = false;
	size_t kat = 0;
	ng_status st = parse_key(p, &r, &bang, &kat);
	if (st != NG_OK)
		return st;
	p->nvals = 0;
	if ((st = parse_operator(p, bang, &r)) != NG_OK)
		return st;
	return add_requirement(p, &r, kat);
}

ng_status bud_selector_parse(const char *buf, size_t len, struct ng_intern *pool,
			     struct ng_arena *arena, struct kube_selector *ret_sel,
			     struct ng_err *reterr)
{
	if (len > NG_MAX_SELECTOR_STRING_BYTES)
		return ng_err_set(reterr, NG_ELIMIT, 0, "selector longer than %d bytes",
				  NG_MAX_SELECTOR_STRING_BYTES);
	/* Kubernetes' lexer reads a NUL byte as an end of string it then reads past ("a=b\0,c"
	 * selects a=b and c; " \0x" selects everything). No JSON string nodegate accepts holds one,
	 * so rather than reproduce that, a selector with a NUL is refused. */
	const char *nul = len ? memchr(buf, '\0', len) : NULL;
	if (nul)
		return ng_err_set(reterr, NG_EPARSE, (size_t)(nul - buf),
				  "at byte %zu: a NUL byte cannot be part of a label selector",
				  (size_t)(nul - buf));
	/* The parser state is ~1.3 KiB; it lives in the arena so fuzzing and threads with small
	 * stacks stay safe. */
	struct parser *p = ng_arena_alloc(arena, sizeof(*p));
	if (!p)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	memset(p, 0, sizeof(*p));
	p->lx.buf = buf;
	p->lx.len = len;
	p->pool = pool;
	p->arena = arena;
	p->err = reterr;
	struct lexer probe = p->lx;
	next(&probe, false);
	if (probe.t != BUD_TOK_EOF) {
		for (;;) {
			ng_status st = parse_requirement(p);
			if (st != NG_OK)
				return st;
			next(&p->lx, false);
			if (p->lx.t == BUD_TOK_EOF)
				break;
			if (p->lx.t != BUD_TOK_COMMA)
				return perr(p, p->lx.at, "',' or end of string");
		}
	}
	struct kube_requirement *reqs = NULL;
	if (p->nreqs) {
		reqs = ng_arena_alloc(arena, p->nreqs * sizeof(*reqs));
		if (!reqs)
			return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		memcpy(reqs, p->reqs, p->nreqs * sizeof(*reqs));
	}
	ret_sel->present = true;
	ret_sel->nreqs = (uint16_t)p->nreqs;
	ret_sel->reqs = reqs;
	return NG_OK;
}

/* ---- formatting ---- */

struct out {
	char *p;
	size_t cap, len;
};

static void emit(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, o->len++)
		if (o->len + 1 < o->cap)
			o->p[o->len] = s[i];
	if (o->cap)
		o->p[o->len < o->cap ? o->len : o->cap - 1] = '\0';
}

static void emit_id(struct out *o, const struct ng_intern *pool, uint32_t id)
{
	size_t n;
	const char *s = ng_intern_str(pool, id, &n);
	emit(o, s, n);
}

size_t bud_selector_format(const struct kube_selector *sel, const struct ng_intern *pool, char *out,
			   size_t cap)
{
	struct out o = {out, cap, 0};
	if (cap)
		out[0] = '\0';
	if (!sel->present) {
		emit(&o, "<none>", 6);
		return o.len;
	}
	if (sel->nreqs == 0) {
		emit(&o, "<all>", 5);
		return o.len;
	}
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *r = &sel->reqs[i];
		if (i)
			emit(&o, ",", 1);
		if (r->op == KUBE_OP_DOES_NOT_EXIST)
			emit(&o, "!", 1);
		emit_id(&o, pool, r->key);
		if (r->op == KUBE_OP_EXISTS || r->op == KUBE_OP_DOES_NOT_EXIST)
			continue;
		if (r->nvalues == 1 && (r->op == KUBE_OP_IN || r->op == KUBE_OP_NOTIN)) {
			emit(&o, r->op == KUBE_OP_IN ? "=" : "!=", r->op == KUBE_OP_IN ? 1 : 2);
			emit_id(&o, pool, r->values[0]);
			continue;
		}
		if (r->op == KUBE_OP_GT || r->op == KUBE_OP_LT) {
			char num[24];
			int n = snprintf(num, sizeof(num), "%c%lld",
					 r->op == KUBE_OP_GT ? '>' : '<', (long long)r->num);
			emit(&o, num, (size_t)n);
			continue;
		}
		emit(&o, r->op == KUBE_OP_IN ? " in (" : " notin (", r->op == KUBE_OP_IN ? 5 : 8);
		for (uint16_t k = 0; k < r->nvalues; k++) {
			if (k)
				emit(&o, ",", 1);
			emit_id(&o, pool, r->values[k]);
		}
		emit(&o, ")", 1);
	}
	return o.len;
}
