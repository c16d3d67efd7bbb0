/* An RFC 8259 validator written from the RFC's ABNF, sharing no code with common/ (its UTF-8
 * check included), and a cJSON tree comparator. */
#include "tests/support/json-check.h"

#include "common/arena.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/status.h"
#include "tests/support/json-ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Deep enough for any text a parser with NG_MAX_JSON_DEPTH (64) or cJSON's 1000 accepts, shallow
 * enough for the recursion to fit a fuzzer's stack. */
#define CHECK_MAX_DEPTH 2048

struct cur {
	const unsigned char *p, *end;
	int depth;
};

static bool at(const struct cur *c, unsigned char ch)
{
	return c->p < c->end && *c->p == ch;
}

static bool is_digit(const struct cur *c)
{
	return c->p < c->end && *c->p >= '0' && *c->p <= '9';
}

/* ws = *( %x20 / %x09 / %x0A / %x0D ) */
static void skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool literal(struct cur *c, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return false;
	c->p += n;
	return true;
}

/* number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT ) */
static bool number(struct cur *c)
{
	if (at(c, '-'))
		c->p++;
	if (at(c, '0')) {
		c->p++;
	} else if (is_digit(c)) {
		while (is_digit(c))
			c->p++;
	} else {
		return false;
	}
	if (at(c, '.')) {
		c->p++;
		if (!is_digit(c))
			return false;
		while (is_digit(c))
			c->p++;
	}
	if (at(c, 'e') || at(c, 'E')) {
		c->p++;
		if (at(c, '+') || at(c, '-'))
			c->p++;
		if (!is_digit(c))
			return false;
		while (is_digit(c))
			c->p++;
	}
	return true;
}

/* One well-formed UTF-8 sequence (RFC 3629 §4) starting at a byte >= 0x80. */
static bool utf8_seq(struct cur *c)
{
	unsigned char b0 = *c->p;
	size_t n;
	uint32_t cp, min;
	if (b0 >= 0xc2 && b0 <= 0xdf) {
		n = 2, cp = b0 & 0x1f, min = 0x80;
	} else if (b0 >= 0xe0 && b0 <= 0xef) {
		n = 3, cp = b0 & 0x0f, min = 0x800;
	} else if (b0 >= 0xf0 && b0 <= 0xf4) {
		n = 4, cp = b0 & 0x07, min = 0x10000;
	} else {
		return false;
	}
	if ((size_t)(c->end - c->p) < n)
		return false;
	for (size_t i = 1; i < n; i++) {
		if ((c->p[i] & 0xc0) != 0x80)
			return false;
		cp = (cp << 6) | (c->p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return false;
	c->p += n;
	return true;
}

static bool is_hex(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* string = quotation-mark *char quotation-mark */
static bool string(struct cur *c)
{
	if (!at(c, '"'))
		return false;
	c->p++;
	for (;;) {
		if (c->p >= c->end)
			return false;
		unsigned char ch = *c->p;
		if (ch == '"') {
			c->p++;
			return true;
		}
		if (ch < 0x20)
			return false;
		if (ch >= 0x80) {
			if (!utf8_seq(c))
				return false;
			continue;
		}
		c->p++;
		if (ch != '\\')
			continue;
		if (c->p >= c->end)
			return false;
		ch = *c->p++;
		if (ch == 'u') {
			if (c->end - c->p < 4)
				return false;
			for (int i = 0; i < 4; i++)
				if (!is_hex(c->p[i]))
					return false;
			c->p += 4;
		} else if (!strchr("\"\\/bfnrt", ch) || ch == '\0') {
			return false;
		}
	}
}

static bool value(struct cur *c);

/* object = begin-object [ member *( value-separator member ) ] end-object, where the
 * structural characters carry ws on both sides. */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= CHECK_MAX_DEPTH */
static bool object(struct cur *c)
{
	c->p++;
	skip_ws(c);
	if (at(c, '}')) {
		c->p++;
		return true;
	}
	for (;;) {
		skip_ws(c);
		if (!string(c))
			return false;
		skip_ws(c);
		if (!at(c, ':'))
			return false;
		c->p++;
		skip_ws(c);
		if (!value(c))
			return false;
		skip_ws(c);
		if (at(c, '}')) {
			c->p++;
			return true;
		}
		if (!at(c, ','))
			return false;
		c->p++;
	}
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= CHECK_MAX_DEPTH */
static bool array(struct cur *c)
{
	c->p++;
	skip_ws(c);
	if (at(c, ']')) {
		c->p++;
		return true;
	}
	for (;;) {
		skip_ws(c);
		if (!value(c))
			return false;
		skip_ws(c);
		if (at(c, ']')) {
			c->p++;
			return true;
		}
		if (!at(c, ','))
			return false;
		c->p++;
	}
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= CHECK_MAX_DEPTH */
static bool value(struct cur *c)
{
	if (c->p >= c->end)
		return false;
	switch (*c->p) {
	case '{':
	case '[': {
		if (++c->depth > CHECK_MAX_DEPTH)
			return false;
		bool ok = *c->p == '{' ? object(c) : array(c);
		c->depth--;
		return ok;
	}
	case '"':
		return string(c);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	default:
		return number(c);
	}
}

/* JSON-text = ws value ws */
bool ng_test_json_rfc8259(const char *buf, size_t len)
{
	struct cur c = {(const unsigned char *)buf, (const unsigned char *)buf + len, 0};
	skip_ws(&c);
	if (!value(&c))
		return false;
	skip_ws(&c);
	return c.p == c.end;
}

static bool differ(char *why, size_t why_size, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool differ(char *why, size_t why_size, const char *path, const char *fmt, ...)
{
	if (why && why_size) {
		char detail[160];
		va_list ap;
		va_start(ap, fmt);
		(void)vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
		if (path[0])
			(void)snprintf(why, why_size, "at %s: %s", path, detail);
		else
			(void)snprintf(why, why_size, "%s", detail);
	}
	return false;
}

/* The path of the child @i of @path (its key, when it has one) in @out. */
static void child_path(char *out, size_t size, const char *path, const cJSON *child, size_t i)
{
	if (child->string)
		(void)snprintf(out, size, "%s.%.40s", path, child->string);
	else
		(void)snprintf(out, size, "%s[%zu]", path, i);
}

/* NOLINTNEXTLINE(misc-no-recursion): trees from the depth-bounded parsers */
static bool nodes_equal(const cJSON *a, const cJSON *b, const char *path, char *why,
			size_t why_size)
{
	if (a->type != b->type)
		return differ(why, why_size, path, "type %d vs %d", a->type, b->type);
	if (!a->string != !b->string || (a->string && strcmp(a->string, b->string) != 0))
		return differ(why, why_size, path, "key \"%.40s\" vs \"%.40s\"",
			      a->string ? a->string : "(null)", b->string ? b->string : "(null)");
	if (!a->valuestring != !b->valuestring ||
	    (a->valuestring && strcmp(a->valuestring, b->valuestring) != 0))
		return differ(why, why_size, path, "string \"%.40s\" vs \"%.40s\"",
			      a->valuestring ? a->valuestring : "(null)",
			      b->valuestring ? b->valuestring : "(null)");
	bool both_nan = isnan(a->valuedouble) && isnan(b->valuedouble);
	/* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bits: -0 is not 0 */
	if (!both_nan && memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0)
		return differ(why, why_size, path, "number %.17g vs %.17g", a->valuedouble,
			      b->valuedouble);
	if (a->valueint != b->valueint)
		return differ(why, why_size, path, "valueint %d vs %d", a->valueint, b->valueint);

	const cJSON *ca = a->child, *cb = b->child;
	const cJSON *pa = NULL, *pb = NULL;
	size_t i = 0;
	char sub[512];
	for (; ca && cb; pa = ca, pb = cb, ca = ca->next, cb = cb->next, i++) {
		child_path(sub, sizeof(sub), path, ca, i);
		if (i > 0 && (ca->prev != pa || cb->prev != pb))
			return differ(why, why_size, sub, "prev is not the previous sibling");
		if (!nodes_equal(ca, cb, sub, why, why_size))
			return false;
	}
	if (ca || cb)
		return differ(why, why_size, path, "%zu children in one tree, more in the other",
			      i);
	if (a->child && (a->child->prev != pa || b->child->prev != pb))
		return differ(why, why_size, path, "first child's prev is not the last child");
	return true;
}

bool ng_test_json_tree_equal(const cJSON *a, const cJSON *b, char *why, size_t why_size)
{
	if (!a || !b)
		return differ(why, why_size, "", "a NULL tree");
	if (a->next || a->prev || b->next || b->prev)
		return differ(why, why_size, "", "the root has siblings");
	return nodes_equal(a, b, "$", why, why_size);
}

/* The sentinel a failed parse must leave in its output parameter. */
static cJSON untouched;

/* The invariants of one parser's answer, whichever it was. */
static bool answer_sane(const char *who, ng_status st, const cJSON *root, const struct ng_err *err,
			size_t len, char *why, size_t why_size)
{
	if (st == NG_OK) {
		if (!root || root == &untouched)
			return differ(why, why_size, "", "%s: NG_OK without a tree", who);
		return true;
	}
	if (st != NG_EPARSE && st != NG_ELIMIT && st != NG_ENOMEM)
		return differ(why, why_size, "", "%s: unexpected status %s", who,
			      ng_status_str(st));
	if (root != &untouched)
		return differ(why, why_size, "", "%s: failed but wrote its output", who);
	if (err->status != st)
		return differ(why, why_size, "", "%s: returned %s but reterr says %s", who,
			      ng_status_str(st), ng_status_str(err->status));
	if (err->offset > len)
		return differ(why, why_size, "", "%s: error offset %zu past the %zu bytes", who,
			      err->offset, len);
	return true;
}

/* True when the reference accepts @buf once its depth limit is out of the way (cJSON's own
 * limit of 1000 still applies). */
static bool ref_accepts_but_for_depth(const char *buf, size_t len)
{
	cJSON *root = NULL;
	ng_status st = ng_json_parse_ref_depth(buf, len, NULL, 1000, &root, NULL);
	if (st != NG_OK)
		return false;
	cJSON_Delete(root);
	return true;
}

bool ng_test_json_diff(const char *buf, size_t len, bool use_arena, bool *ret_lax, char *why,
		       size_t why_size)
{
	struct ng_arena *arena_n = NULL, *arena_r = NULL;
	cJSON *root_n = &untouched, *root_r = &untouched;
	struct ng_err err_n = {0}, err_r = {0};
	bool ok = false;
	if (ret_lax)
		*ret_lax = false;
	if (use_arena) {
		arena_n = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
		arena_r = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
		if (!arena_n || !arena_r) {
			differ(why, why_size, "", "out of memory for the arenas");
			goto out;
		}
	}
	ng_status st_n = ng_json_parse(buf, len, arena_n, &root_n, &err_n);
	ng_status st_r = ng_json_parse_ref(buf, len, arena_r, &root_r, &err_r);
	if (!answer_sane("ng_json_parse", st_n, root_n, &err_n, len, why, why_size) ||
	    !answer_sane("reference", st_r, root_r, &err_r, len, why, why_size))
		goto out;

	if (st_n == NG_OK && st_r == NG_OK) {
		ok = ng_test_json_tree_equal(root_n, root_r, why, why_size);
	} else if (st_n == NG_OK) {
		differ(why, why_size, "", "ng_json_parse accepts what the reference rejects (%s)",
		       err_r.msg);
	} else if (st_r == NG_OK) {
		if (ng_test_json_rfc8259(buf, len))
			differ(why, why_size, "",
			       "ng_json_parse rejects RFC 8259 JSON the reference accepts (%s)",
			       err_n.msg);
		else
			ok = true;
		if (ok && ret_lax)
			*ret_lax = true;
	} else if (st_n == NG_ELIMIT && st_r == NG_EPARSE &&
		   !(arena_n && ng_arena_exhausted(arena_n))) {
		differ(why, why_size, "", "ng_json_parse says NG_ELIMIT (%s), the reference %s",
		       err_n.msg, err_r.msg);
	} else if (st_n != NG_ELIMIT && st_r == NG_ELIMIT && ng_test_json_rfc8259(buf, len) &&
		   ref_accepts_but_for_depth(buf, len)) {
		differ(why, why_size, "", "too deep, yet ng_json_parse says %s (%s)",
		       ng_status_str(st_n), err_n.msg);
	} else {
		ok = true;
	}
out:
	if (!arena_n && root_n != &untouched)
		cJSON_Delete(root_n);
	if (!arena_r && root_r != &untouched)
		cJSON_Delete(root_r);
	ng_arena_destroy(arena_n);
	ng_arena_destroy(arena_r);
	return ok;
}
