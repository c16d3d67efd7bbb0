/* The YAML reader (common/yaml.h): one loop over libyaml's events and two consumers of them, a
 * tree in an arena and a JSON text in a capped buffer. Events rather than libyaml's document API
 * let us refuse aliases before anything is expanded and stop at the depth limit before any memory
 * is spent on it; the JSON consumer streams, so converting a 1 GB `kubectl get -o yaml` costs the
 * JSON it produces and no tree. */
#include "common/yaml.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"

#include <yaml.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a consumer does with each node event (a scalar, or the start of a mapping or sequence)
 * and with the end of a mapping or sequence. @line is 1-based. */
struct sink {
	ng_status (*node)(void *ctx, const yaml_event_t *ev, size_t line, struct ng_err *err);
	ng_status (*end)(void *ctx, struct ng_err *err);
	void *ctx;
};

/* A document holding nothing: what a trailing "---" or a file of comments parses to. kubectl
 * skips these, and so do we. */
static bool empty_document(const yaml_event_t *ev)
{
	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == 0 &&
	       ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
}

/* Runs the parser over @buf and hands each event to @sk. *@ret_any says whether a non-empty
 * document was seen. */
static ng_status read_events(const char *buf, size_t len, const char *what, size_t max_depth,
			     const struct sink *sk, bool *ret_any, struct ng_err *err)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return ng_err_set(err, NG_ENOMEM, 0, "%s: out of memory", what);
	yaml_parser_set_input_string(&p, (const unsigned char *)(buf ? buf : ""), len);
	size_t depth = 0;
	bool any = false, done = false;
	ng_status st = NG_OK;
	while (!done && st == NG_OK) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			if (p.error == YAML_MEMORY_ERROR)
				st = ng_err_set(err, NG_ENOMEM, 0, "%s: out of memory", what);
			else
				st = ng_err_set(err, NG_EPARSE, p.problem_mark.index,
						"%s: line %zu column %zu: %s", what,
						(size_t)p.problem_mark.line + 1,
						(size_t)p.problem_mark.column + 1,
						p.problem ? p.problem : "invalid YAML");
			break;
		}
		size_t off = ev.start_mark.index, line = ev.start_mark.line + 1;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_ALIAS_EVENT:
			st = ng_err_set(err, NG_EPARSE, off,
					"%s: line %zu: YAML aliases are not supported", what, line);
			break;
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth == 0 && empty_document(&ev))
				break;
			if (depth == 0 && any) {
				st = ng_err_set(err, NG_EPARSE, off,
						"%s: line %zu: more than one YAML document", what,
						line);
				break;
			}
			any = true;
			if (ev.type != YAML_SCALAR_EVENT && depth == max_depth) {
				st = ng_err_set(err, NG_ELIMIT, off,
						"%s: line %zu: nested deeper than %zu levels", what,
						line, max_depth);
				break;
			}
			st = sk->node(sk->ctx, &ev, line, err);
			if (ev.type != YAML_SCALAR_EVENT)
				depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			st = sk->end(sk->ctx, err);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (st == NG_OK)
		*ret_any = any;
	return st;
}

/* ---- the tree -------------------------------------------------------------------------- */

struct tree {
	struct ng_arena *arena;
	const char *what;
	struct ng_yaml_node *stack[NG_YAML_MAX_DEPTH];
	size_t depth;
	struct ng_yaml_node *root;
};

static ng_status tree_node(void *ctx, const yaml_event_t *ev, size_t line, struct ng_err *err)
{
	struct tree *t = ctx;
	struct ng_yaml_node *n = ng_arena_alloc(t->arena, sizeof(*n));
	if (n) {
		memset(n, 0, sizeof(*n));
		n->off = ev->start_mark.index;
		n->kind = ev->type == YAML_SCALAR_EVENT          ? NG_YAML_SCALAR
			  : ev->type == YAML_MAPPING_START_EVENT ? NG_YAML_MAP
								 : NG_YAML_SEQ;
	}
	if (n && n->kind == NG_YAML_SCALAR) {
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
		n->len = ev->data.scalar.length;
		n->s = ng_arena_strndup(t->arena, (const char *)ev->data.scalar.value, n->len);
	}
	if (!n || (n->kind == NG_YAML_SCALAR && !n->s))
		return ng_err_set(err, NG_ELIMIT, ev->start_mark.index,
				  "%s: line %zu: more than %zu bytes of YAML", t->what, line,
				  ng_arena_cap(t->arena));
	if (t->depth == 0) {
		t->root = n;
	} else {
		struct ng_yaml_node *parent = t->stack[t->depth - 1];
		if (parent->last)
			parent->last->next = n;
		else
			parent->first = n;
		parent->last = n;
	}
	if (n->kind != NG_YAML_SCALAR)
		t->stack[t->depth++] = n;
	return NG_OK;
}

static ng_status tree_end(void *ctx, struct ng_err *err)
{
	struct tree *t = ctx;
	if (t->depth > 0)
		t->depth--;
	return NG_OK;
}

ng_status ng_yaml_load(const char *buf, size_t len, const char *what, size_t max_depth,
		       struct ng_arena *arena, struct ng_yaml_node **ret_root,
		       struct ng_err *reterr)
{
	struct tree t = {.arena = arena, .what = what};
	struct sink sk = {tree_node, tree_end, &t};
	bool any;
	if (max_depth > NG_YAML_MAX_DEPTH)
		max_depth = NG_YAML_MAX_DEPTH;
	ng_status st = read_events(buf, len, what, max_depth, &sk, &any, reterr);
	if (st == NG_OK)
		*ret_root = t.root;
	return st;
}

/* ---- YAML to JSON ---------------------------------------------------------------------- */

struct frame {
	bool map, want_key; /* in a mapping, whether the next node is a key */
	size_t n;           /* keys or items written */
};

struct conv {
	struct ng_buf *out;
	const char *what;
	struct frame stack[NG_YAML_MAX_DEPTH];
	size_t depth;
};

static bool is_word(const char *s, size_t len, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (strlen(words[i]) == len && memcmp(s, words[i], len) == 0)
			return true;
	return false;
}

/* YAML 1.1's null and booleans, the spellings go-yaml v2 (under sigs.k8s.io/yaml, so kubectl)
 * resolves. */
static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
					 "on",   "On",   "ON",   "y",   "Y",   NULL};
static const char *const false_words[] = {"false", "False", "FALSE", "no", "No", "NO",
					  "off",   "Off",   "OFF",   "n",  "N",  NULL};
static const char *const nonfinite_words[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
					      "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
					      ".NaN",  ".NAN",  NULL};

/* @s (@len bytes, '_' already removed) as go-yaml v2 reads an integer (Go's strconv base 0): an
 * optional sign, then 0x hex, 0o or leading-0 octal, 0b binary, or decimal digits. Writes the
 * sign and magnitude; false when it is not one or the magnitude passes 64 bits. */
static bool parse_int(const char *s, size_t len, bool *ret_neg, uint64_t *ret_mag)
{
	size_t i = 0;
	bool neg = false;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	unsigned base = 10;
	if (len - i >= 2 && s[i] == '0') {
		char p = (char)(s[i + 1] | 0x20);
		if (p == 'x' || p == 'o' || p == 'b') {
			base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
			i += 2;
		} else {
			base = 8;
			i++;
		}
	}
	if (i == len)
		return false;
	uint64_t mag = 0;
	for (; i < len; i++) {
		char c = s[i], lc = (char)(c | 0x20);
		unsigned d = c >= '0' && c <= '9'     ? (unsigned)(c - '0')
			     : lc >= 'a' && lc <= 'f' ? (unsigned)(lc - 'a' + 10)
						      : 16;
		if (d >= base || mag > (UINT64_MAX - d) / base)
			return false;
		mag = mag * base + d;
	}
	if (neg && mag > (uint64_t)INT64_MAX + 1)
		return false;
	*ret_neg = neg;
	*ret_mag = mag;
	return true;
}

/* @s (@len bytes, '_' removed) when it matches go-yaml v2's float pattern,
 * [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, appended to @out as a JSON number
 * (no '+', no leading zeros, a digit on each side of the point). NG_EPARSE when it does not
 * match. */
static ng_status put_float(struct ng_buf *out, const char *s, size_t len)
{
	size_t i = 0, int_start, int_end, frac_start, frac_end;
	bool neg = false;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	for (int_start = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		;
	int_end = i;
	frac_start = frac_end = i;
	if (i < len && s[i] == '.') {
		for (frac_start = ++i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		frac_end = i;
	}
	if (int_end == int_start && frac_end == frac_start)
		return NG_EPARSE;
	size_t exp_start = i;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t d = i;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return NG_EPARSE;
	}
	if (i != len)
		return NG_EPARSE;
	while (int_start + 1 < int_end && s[int_start] == '0')
		int_start++;
	ng_status st = neg ? ng_buf_puts(out, "-") : NG_OK;
	if (st == NG_OK)
		st = int_end > int_start ? ng_buf_append(out, s + int_start, int_end - int_start)
					 : ng_buf_puts(out, "0");
	if (st == NG_OK && frac_end > frac_start) {
		st = ng_buf_puts(out, ".");
		if (st == NG_OK)
			st = ng_buf_append(out, s + frac_start, frac_end - frac_start);
	}
	if (st == NG_OK && len > exp_start)
		st = ng_buf_append(out, s + exp_start, len - exp_start);
	return st;
}

enum want { W_ANY, W_STR, W_NULL, W_BOOL, W_INT, W_FLOAT };

/* What a scalar's tag asks for; W_ANY for an untagged plain scalar, -1 for a tag we refuse. */
static int scalar_want(const yaml_event_t *ev)
{
	static const char core[] = "tag:yaml.org,2002:";
	static const struct {
		const char *name;
		enum want w;
	} tags[] = {
	    {"str", W_STR}, {"null", W_NULL}, {"bool", W_BOOL}, {"int", W_INT}, {"float", W_FLOAT}};
	const char *tag = (const char *)ev->data.scalar.tag;
	if (!tag)
		return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? W_ANY : W_STR;
	if (strcmp(tag, "!") == 0)
		return W_STR;
	if (strncmp(tag, core, sizeof(core) - 1) == 0)
		for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
			if (strcmp(tag + sizeof(core) - 1, tags[i].name) == 0)
				return (int)tags[i].w;
	return -1;
}

/* Appends the JSON for a value scalar, resolved as kubectl resolves it. */
static ng_status put_scalar(struct conv *c, const yaml_event_t *ev, size_t line, struct ng_err *err)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	int w = scalar_want(ev);
	if (w < 0)
		return ng_err_set(err, NG_EPARSE, ev->start_mark.index,
				  "%s: line %zu: tag %.60s is not supported", c->what, line,
				  (const char *)ev->data.scalar.tag);
	if (w == W_STR)
		return ng_buf_json_str(c->out, s, len);
	if ((w == W_ANY || w == W_NULL) && is_word(s, len, null_words))
		return ng_buf_puts(c->out, "null");
	if ((w == W_ANY || w == W_BOOL) && is_word(s, len, true_words))
		return ng_buf_puts(c->out, "true");
	if ((w == W_ANY || w == W_BOOL) && is_word(s, len, false_words))
		return ng_buf_puts(c->out, "false");
	if ((w == W_ANY || w == W_FLOAT) && is_word(s, len, nonfinite_words))
		return ng_err_set(err, NG_EPARSE, ev->start_mark.index,
				  "%s: line %zu: %.*s has no JSON form", c->what, line, (int)len,
				  s);
	/* Numbers start with a digit, a sign or a point, and may use '_' between digits. */
	char num[128];
	size_t n = 0;
	bool numeric =
	    len > 0 && len < sizeof(num) && (w != W_ANY || strchr("+-.0123456789", s[0]));
	for (size_t i = 0; numeric && i < len; i++)
		if (s[i] != '_')
			num[n++] = s[i];
	bool neg;
	uint64_t mag;
	if (numeric && (w == W_ANY || w == W_INT || w == W_FLOAT) && parse_int(num, n, &neg, &mag))
		return ng_buf_printf(c->out, "%s%llu", neg && mag ? "-" : "",
				     (unsigned long long)mag);
	if (numeric && (w == W_ANY || w == W_FLOAT)) {
		size_t before = c->out->len;
		ng_status st = put_float(c->out, num, n);
		if (st != NG_EPARSE)
			return st;
		c->out->len = before;
	}
	if (w == W_ANY)
		return ng_buf_json_str(c->out, s, len);
	return ng_err_set(err, NG_EPARSE, ev->start_mark.index,
			  "%s: line %zu: \"%.40s\" does not match its tag %.40s", c->what, line, s,
			  (const char *)ev->data.scalar.tag);
}

/* ng_buf failures as messages: the output cap is the caller's JSON limit. */
static ng_status out_err(const struct conv *c, ng_status st, size_t off, struct ng_err *err)
{
	if (st == NG_ELIMIT)
		return ng_err_set(err, st, off, "%s: more than %zu bytes as JSON", c->what,
				  c->out->cap);
	if (st == NG_ENOMEM)
		return ng_err_set(err, st, off, "%s: out of memory", c->what);
	return st;
}

static ng_status json_node(void *ctx, const yaml_event_t *ev, size_t line, struct ng_err *err)
{
	struct conv *c = ctx;
	struct frame *f = c->depth ? &c->stack[c->depth - 1] : NULL;
	size_t off = ev->start_mark.index;
	bool scalar = ev->type == YAML_SCALAR_EVENT;
	if (scalar && memchr(ev->data.scalar.value, '\0', ev->data.scalar.length))
		return ng_err_set(err, NG_EPARSE, off, "%s: line %zu: a NUL character", c->what,
				  line);
	ng_status st = NG_OK;
	if (f && (!f->map || f->want_key) && f->n > 0)
		st = ng_buf_puts(c->out, ",");
	if (f && f->map && f->want_key) {
		if (!scalar)
			return ng_err_set(err, NG_EPARSE, off,
					  "%s: line %zu: a mapping key must be a string, not a "
					  "mapping or a list",
					  c->what, line);
		const char *k = (const char *)ev->data.scalar.value;
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(k, "<<") == 0)
			return ng_err_set(err, NG_EPARSE, off,
					  "%s: line %zu: merge keys (<<) are not supported",
					  c->what, line);
		if (st == NG_OK)
			st = ng_buf_json_str(c->out, k, ev->data.scalar.length);
		if (st == NG_OK)
			st = ng_buf_puts(c->out, ":");
		f->want_key = false;
		f->n++;
		return out_err(c, st, off, err);
	}
	if (f && f->map)
		f->want_key = true;
	else if (f)
		f->n++;
	if (st == NG_OK && scalar)
		st = put_scalar(c, ev, line, err);
	if (st == NG_OK && !scalar) {
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		const char *tag =
		    (const char *)(map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
		if (tag && strcmp(tag, "!") != 0 &&
		    strcmp(tag, map ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq") != 0)
			return ng_err_set(err, NG_EPARSE, off,
					  "%s: line %zu: tag %.60s is not supported", c->what, line,
					  tag);
		/* read_events() stops at NG_YAML_MAX_DEPTH, so the stack has room. */
		c->stack[c->depth++] = (struct frame){.map = map, .want_key = map};
		st = ng_buf_puts(c->out, map ? "{" : "[");
	}
	return out_err(c, st, off, err);
}

static ng_status json_end(void *ctx, struct ng_err *err)
{
	struct conv *c = ctx;
	bool map = c->stack[--c->depth].map;
	return out_err(c, ng_buf_puts(c->out, map ? "}" : "]"), 0, err);
}

ng_status ng_yaml_to_json(const char *buf, size_t len, const char *what, struct ng_buf *out,
			  struct ng_err *reterr)
{
	struct conv c = {.out = out, .what = what};
	struct sink sk = {json_node, json_end, &c};
	size_t before = out->len;
	bool any = false;
	ng_status st = read_events(buf, len, what, NG_YAML_MAX_DEPTH, &sk, &any, reterr);
	if (st == NG_OK && !any)
		st = ng_err_set(reterr, NG_EPARSE, 0, "%s: no YAML or JSON document", what);
	if (st != NG_OK) {
		out->len = before;
		if (out->data)
			out->data[before] = '\0';
	}
	return st;
}

bool ng_yaml_is_json(const char *buf, size_t len)
{
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	return i < len && (buf[i] == '{' || buf[i] == '[');
}

/* ---- JSON to YAML ---------------------------------------------------------------------- */

/* Whether @s (@len bytes) written as a plain scalar would be read back as something other than
 * this string: the words and numbers put_scalar() resolves, a merge key, an empty value. */
static bool plain_misreads(const char *s, size_t len)
{
	if (is_word(s, len, null_words) || is_word(s, len, true_words) ||
	    is_word(s, len, false_words) || is_word(s, len, nonfinite_words) ||
	    (len == 2 && memcmp(s, "<<", 2) == 0))
		return true;
	char num[128];
	size_t n = 0;
	if (len == 0 || len >= sizeof(num) || !strchr("+-.0123456789", s[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] != '_')
			num[n++] = s[i];
	bool neg;
	uint64_t mag;
	if (parse_int(num, n, &neg, &mag))
		return true;
	struct ng_buf b;
	ng_buf_init(&b, 2 * sizeof(num));
	bool is_float = put_float(&b, num, n) == NG_OK;
	ng_buf_finish(&b);
	return is_float;
}

struct emit {
	yaml_emitter_t e;
	struct ng_buf *out;
	ng_status out_st; /* why the output handler refused, NG_OK so far */
};

static int emit_write(void *data, unsigned char *buf, size_t size)
{
	struct emit *em = data;
	em->out_st = ng_buf_append(em->out, buf, size);
	return em->out_st == NG_OK;
}

static bool emit_str(struct emit *em, const char *s, bool key)
{
	size_t len = strlen(s);
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	if (plain_misreads(s, len))
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	else if (!key && memchr(s, '\n', len))
		style = YAML_LITERAL_SCALAR_STYLE;
	yaml_event_t ev;
	return yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)s, (int)len,
					    style == YAML_ANY_SCALAR_STYLE, 1, style) &&
	       yaml_emitter_emit(&em->e, &ev);
}

/* A JSON number as YAML reads it back: integers exactly, others in the fewest digits that
 * give the same double. */
static void number_text(const cJSON *v, char *out, size_t cap)
{
	int64_t i;
	if (ng_json_int64(v, &i)) {
		ng_fmt(out, cap, "%lld", (long long)i);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		ng_fmt(out, cap, "%.*g", prec, v->valuedouble);
		if (strtod(out, NULL) == v->valuedouble)
			break;
	}
	/* %g writes "1e+20" and "5": both read back as numbers, the first as a float. */
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= NG_MAX_JSON_DEPTH, the parser's bound */
static bool emit_value(struct emit *em, const cJSON *v)
{
	yaml_event_t ev;
	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		bool map = cJSON_IsObject(v);
		if (!(map ? yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
								YAML_BLOCK_MAPPING_STYLE)
			  : yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
								 YAML_BLOCK_SEQUENCE_STYLE)) ||
		    !yaml_emitter_emit(&em->e, &ev))
			return false;
		for (const cJSON *c = v->child; c; c = c->next)
			if ((map && !emit_str(em, c->string, true)) || !emit_value(em, c))
				return false;
		if (!(map ? yaml_mapping_end_event_initialize(&ev)
			  : yaml_sequence_end_event_initialize(&ev)))
			return false;
		return yaml_emitter_emit(&em->e, &ev);
	}
	if (cJSON_IsString(v))
		return emit_str(em, v->valuestring, false);
	char text[40];
	if (cJSON_IsNumber(v))
		number_text(v, text, sizeof(text));
	else
		ng_fmt(text, sizeof(text), "%s",
		       cJSON_IsTrue(v)    ? "true"
		       : cJSON_IsFalse(v) ? "false"
					  : "null");
	return yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)text,
					    (int)strlen(text), 1, 1, YAML_PLAIN_SCALAR_STYLE) &&
	       yaml_emitter_emit(&em->e, &ev);
}

static bool emit_document(struct emit *em, const cJSON *root)
{
	yaml_event_t ev;
	return yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
	       yaml_emitter_emit(&em->e, &ev) &&
	       yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
	       yaml_emitter_emit(&em->e, &ev) && emit_value(em, root) &&
	       yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em->e, &ev) &&
	       yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em->e, &ev) &&
	       yaml_emitter_flush(&em->e);
}

ng_status ng_yaml_from_json(const char *json, size_t len, struct ng_buf *out, struct ng_err *reterr)
{
	cJSON *root = NULL;
	ng_status st = ng_json_parse(json, len, NULL, &root, reterr);
	if (st != NG_OK)
		return st;
	struct emit em = {.out = out};
	size_t before = out->len;
	if (!yaml_emitter_initialize(&em.e)) {
		cJSON_Delete(root);
		return ng_err_set(reterr, NG_ENOMEM, 0, "YAML output: out of memory");
	}
	yaml_emitter_set_output(&em.e, emit_write, &em);
	yaml_emitter_set_unicode(&em.e, 1);
	yaml_emitter_set_indent(&em.e, 2);
	yaml_emitter_set_width(&em.e, -1);
	if (!emit_document(&em, root)) {
		if (em.out_st == NG_ELIMIT)
			st = ng_err_set(reterr, NG_ELIMIT, 0, "YAML output: more than %zu bytes",
					out->cap);
		else if (em.out_st != NG_OK || em.e.error == YAML_MEMORY_ERROR)
			st = ng_err_set(reterr, NG_ENOMEM, 0, "YAML output: out of memory");
		else
			st = ng_err_set(reterr, NG_EPARSE, 0, "YAML output: %s",
					em.e.problem ? em.e.problem : "cannot be written");
		out->len = before;
		if (out->data)
			out->data[before] = '\0';
	}
	yaml_emitter_delete(&em.e);
	cJSON_Delete(root);
	return st;
}
