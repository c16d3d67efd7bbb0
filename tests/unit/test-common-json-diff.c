/* ng_json_parse() against the reference (the cJSON-wrapping parser it replaced, kept in
 * tests/support/json-ref.c): on a table of awkward inputs, on generated nesting, and on the
 * examples and fuzz corpora, both with an arena and without, the two must agree on accept or
 * reject, on the status class, and on every node of the tree. ng_json_parse() may reject more
 * than the reference only where the reference accepts text that is not RFC 8259 JSON (rows
 * marked LAX); never the other way round. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/json.h"
#include "common/limits.h"
#include "tests/support/json-check.h"
#include "tests/support/json-ref.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* While ng_json_parse() still wraps cJSON it accepts what the reference accepts, LAX rows
 * included. Once the purpose-built parser is in, set this to 1: every LAX row must then be
 * rejected (NG_EPARSE) rather than merely allowed to be. */
#define LAX_MUST_REJECT 1

enum want {
	OK,    /* RFC 8259 JSON both parsers accept, with identical trees */
	PARSE, /* both reject with NG_EPARSE */
	LIMIT, /* both reject with NG_ELIMIT */
	LAX,   /* not RFC 8259 JSON, yet the reference accepts it: ng_json_parse() may reject */
};

struct json_case {
	const char *text;
	size_t len;
	enum want want;
};

/* sizeof, not strlen: some rows hold NUL bytes. */
#define ROW(s, w)                                                                                  \
	{                                                                                          \
		s, sizeof(s) - 1, w                                                                \
	}

static const struct json_case cases[] = {
    /* Every kind of value, at the top level and inside containers. */
    ROW("{}", OK),
    ROW("[]", OK),
    ROW("{ }", OK),
    ROW("[ ]", OK),
    ROW("0", OK),
    ROW("\"s\"", OK),
    ROW("\"\"", OK),
    ROW("true", OK),
    ROW("false", OK),
    ROW("null", OK),
    ROW("[true,false,null,0,-1.5,\"x\",[],{}]", OK),
    ROW("{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":\"e\",\"f\":[[],[[]]]}", OK),
    ROW("{\"\":1}", OK),
    ROW("{\"a\":1,\"A\":2}", OK),
    /* Whitespace: the four of RFC 8259 everywhere... */
    ROW(" \t\n\r[ \t\n\r1 \t\n\r, \t\n\r{ \t\n\r\"k\" \t\n\r: \t\n\rtrue \t\n\r} \t\n\r] \t\n\r",
	OK),
    ROW("\n\n\"x\"\r\n", OK),
    /* ...and what cJSON also skips between tokens: any byte up to 0x20 except NUL
     * (buffer_skip_whitespace), but only those four after the value (our trailing check). */
    ROW("\f1", LAX),
    ROW("\v[]", LAX),
    ROW("[1,\v2]", LAX),
    ROW("{\"a\"\f:\x01 1}", LAX),
    ROW("1\f", PARSE),
    ROW("[]\v", PARSE),
    /* Escapes: all eight of §7, \u in both cases, surrogate pairs. */
    ROW("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", OK),
    ROW("\"\\u0061\\u00e9\\u00E9\\u20ac\\uFFFF\\u0001\\u001f\"", OK),
    ROW("\"\\uD83D\\uDE00\"", OK),
    ROW("\"\\udbff\\udfff\"", OK),
    ROW("{\"\\u006b\":\"\\ud800\\udc00\"}", OK),
    /* Lone surrogates: RFC 8259 §8.2 leaves them to the parser; the reference refuses. */
    ROW("\"\\uD800\"", PARSE),
    ROW("\"\\uDBFF x\"", PARSE),
    ROW("\"\\uDC00\"", PARSE),
    ROW("\"\\uDFFF\\uD800\"", PARSE),
    ROW("\"\\uD800\\u0041\"", PARSE),
    ROW("\"\\uD800\\uD800\"", PARSE),
    /* \u0000 would cut a C string short: refused. */
    ROW("\"\\u0000\"", PARSE),
    ROW("\"a\\u0000b\"", PARSE),
    ROW("{\"k\\u0000\":1}", PARSE),
    /* Bad escapes. cJSON reads a \u with a non-hex digit as U+0000 and cuts the string there
     * ("ab\u00G0cd" becomes "ab"): the reference accepts what no JSON parser should. */
    ROW("\"ab\\u00G0cd\"", LAX),
    ROW("\"\\uZZZZ\"", LAX),
    ROW("\"\\u12\"", PARSE),
    ROW("\"\\u\"", PARSE),
    ROW("\"\\x41\"", PARSE),
    ROW("\"\\U0041\"", PARSE),
    ROW("\"\\'\"", PARSE),
    ROW("\"\\", PARSE),
    ROW("\"abc", PARSE),
    /* Raw control characters inside strings; DEL is not one. */
    ROW("\"a\tb\"", PARSE),
    ROW("\"a\nb\"", PARSE),
    ROW("\"\x01\"", PARSE),
    ROW("\"\x1f\"", PARSE),
    ROW("\"\x7f\"", OK),
    /* UTF-8: well-formed up to U+10FFFF, and every way to be ill-formed. */
    ROW("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf\"", OK),
    ROW("\"\xc0\xaf\"", PARSE),         /* overlong '/' */
    ROW("\"\xe0\x80\xaf\"", PARSE),     /* overlong, 3 bytes */
    ROW("\"\xf0\x80\x80\xaf\"", PARSE), /* overlong, 4 bytes */
    ROW("\"\xed\xa0\x80\"", PARSE),     /* U+D800 encoded in UTF-8 */
    ROW("\"\xed\xbf\xbf\"", PARSE),     /* U+DFFF encoded in UTF-8 */
    ROW("\"\xe2\x82\"", PARSE),         /* truncated */
    ROW("\"\xe2\x82", PARSE),           /* truncated at the end of input */
    ROW("\"\xf4\x90\x80\x80\"", PARSE), /* U+110000 */
    ROW("\"\xf5\x80\x80\x80\"", PARSE),
    ROW("\"\x80\"", PARSE), /* lone continuation byte */
    ROW("\"\xff\"", PARSE),
    ROW("\xc3\xa9", PARSE), /* outside a string */
    /* A byte order mark: cJSON skips one at offset 0 when at least 5 bytes follow it. */
    ROW("\xef\xbb\xbf{}  ", LAX),
    ROW("\xef\xbb\xbf[1]", LAX),
    ROW("\xef\xbb\xbf"
	"1",
	PARSE),
    ROW(" \xef\xbb\xbf[1]", PARSE),
    /* Numbers. */
    ROW("-0", OK),
    ROW("[0,-0,0.0,-0.0,0e0,0E+0,0e-0]", OK),
    ROW("1e308", OK),
    ROW("1.7976931348623157e308", OK),
    ROW("1e309", OK), /* +inf in the tree, valueint INT_MAX: what cJSON makes of it */
    ROW("-1e309", OK),
    ROW("-1e-400", OK), /* -0.0 */
    ROW("4.9e-324", OK),
    ROW("2.4e-324", OK),
    ROW("1.5E+10", OK),
    ROW("1.5e-10", OK),
    ROW("2147483647", OK),
    ROW("2147483648", OK),       /* valueint saturates at INT_MAX */
    ROW("-2147483649", OK),      /* and at INT_MIN */
    ROW("[1.9,-1.9]", OK),       /* valueint truncates */
    ROW("9007199254740993", OK), /* rounds to 2^53 */
    ROW("9223372036854775807", OK),
    ROW("-9223372036854775809", OK),
    ROW("18446744073709551616", OK),
    ROW("12345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
	"0",
	OK),
    ROW("0.00000000000000000000000000000000000000000000000000000000000000000000000000000001", OK),
    ROW("[1E400,-1E400,1e-400]", OK),
    /* What strtod takes and RFC 8259 does not: leading zeros, no digit after '.', no digit
     * between '-' and '.'. */
    ROW("01", LAX),
    ROW("-01", LAX),
    ROW("00", LAX),
    ROW("[007.5]", LAX),
    ROW("1.", LAX),
    ROW("1.e5", LAX),
    ROW("0.e1", LAX),
    ROW("-.5", LAX),
    ROW("{\"a\":-0.}", LAX),
    /* And what neither takes. */
    ROW(".5", PARSE),
    ROW("[.5]", PARSE),
    ROW("+1", PARSE),
    ROW("[+1]", PARSE),
    ROW("-", PARSE),
    ROW("[-]", PARSE),
    ROW("--1", PARSE),
    ROW("-e5", PARSE),
    ROW("1e", PARSE),
    ROW("[1e]", PARSE),
    ROW("1e+", PARSE),
    ROW("1E+-5", PARSE),
    ROW("1.5.5", PARSE),
    ROW("[1.5.5]", PARSE),
    ROW("1-2", PARSE),
    ROW("0x10", PARSE),
    ROW("[0x10]", PARSE),
    ROW("Infinity", PARSE),
    ROW("-Infinity", PARSE),
    ROW("NaN", PARSE),
    ROW("[1,nan]", PARSE),
    /* Literals are lower case and whole. */
    ROW("truE", PARSE),
    ROW("True", PARSE),
    ROW("nul", PARSE),
    ROW("NULL", PARSE),
    ROW("nulll", PARSE),
    ROW("fals", PARSE),
    ROW("[true false]", PARSE),
    ROW("[truefalse]", PARSE),
    /* Structure. */
    ROW("[1,]", PARSE),
    ROW("{\"a\":1,}", PARSE),
    ROW("[,1]", PARSE),
    ROW("[,]", PARSE),
    ROW("{,}", PARSE),
    ROW("[1 2]", PARSE),
    ROW("{\"a\":1 \"b\":2}", PARSE),
    ROW("{\"a\" 1}", PARSE),
    ROW("{\"a\"}", PARSE),
    ROW("{\"a\":}", PARSE),
    ROW("{:1}", PARSE),
    ROW("[", PARSE),
    ROW("]", PARSE),
    ROW("{", PARSE),
    ROW("}", PARSE),
    ROW("[1", PARSE),
    ROW("{\"a\":1", PARSE),
    ROW("[1}", PARSE),
    ROW("{\"a\":1]", PARSE),
    /* Keys are strings. */
    ROW("{1:2}", PARSE),
    ROW("{null:1}", PARSE),
    ROW("{true:1}", PARSE),
    ROW("{[]:1}", PARSE),
    ROW("{{}:1}", PARSE),
    ROW("{'a':1}", PARSE),
    ROW("{a:1}", PARSE),
    /* Data after the value. */
    ROW("1 2", PARSE),
    ROW("{}{}", PARSE),
    ROW("[]]", PARSE),
    ROW("[]x", PARSE),
    ROW("\"a\"b", PARSE),
    ROW("null,", PARSE),
    ROW("1 /* c */", PARSE),
    ROW("{} // c", PARSE),
    /* Nothing at all. */
    ROW("", PARSE),
    ROW(" ", PARSE),
    ROW(" \t\n\r", PARSE),
    /* NUL bytes, inside and outside strings. */
    ROW("\0", PARSE),
    ROW("[1,\0 2]", PARSE),
    ROW("\"a\0b\"", PARSE),
    ROW("1\0", PARSE),
    ROW("{\"a\":1}\0", PARSE),
    /* Duplicate keys at every level, compared after unescaping, in small objects (pairwise)
     * and in objects of more than 16 keys (sorted). */
    ROW("{\"a\":1,\"a\":2}", PARSE),
    ROW("{\"a\":1,\"\\u0061\":2}", PARSE),
    ROW("{\"\":1,\"\":2}", PARSE),
    ROW("{\"x\":{\"a\":1,\"b\":2,\"a\":3}}", PARSE),
    ROW("[{\"a\":1},{\"a\":1,\"a\":1}]", PARSE),
    ROW("{\"x\":[[{\"y\":{\"z\":null,\"z\":null}}]]}", PARSE),
    ROW("{\"k01\":1,\"k02\":1,\"k03\":1,\"k04\":1,\"k05\":1,\"k06\":1,\"k07\":1,\"k08\":1,"
	"\"k09\":1,\"k10\":1,\"k11\":1,\"k12\":1,\"k13\":1,\"k14\":1,\"k15\":1,\"k16\":1,"
	"\"k17\":1}",
	OK),
    ROW("{\"k01\":1,\"k02\":1,\"k03\":1,\"k04\":1,\"k05\":1,\"k06\":1,\"k07\":1,\"k08\":1,"
	"\"k09\":1,\"k10\":1,\"k11\":1,\"k12\":1,\"k13\":1,\"k14\":1,\"k15\":1,\"k16\":1,"
	"\"k01\":1}",
	PARSE),
    ROW("{\"o\":{\"k01\":1,\"k02\":1,\"k03\":1,\"k04\":1,\"k05\":1,\"k06\":1,\"k07\":1,"
	"\"k08\":1,\"k09\":1,\"k10\":1,\"k11\":1,\"k12\":1,\"k13\":1,\"k14\":1,\"k15\":1,"
	"\"k16\":1,\"k17\":1,\"k18\":1,\"k17\":1}}",
	PARSE),
    ROW("[[{\"k01\":1,\"k02\":1,\"k03\":1,\"k04\":1,\"k05\":1,\"k06\":1,\"k07\":1,\"k08\":1,"
	"\"k09\":1,\"k10\":1,\"k11\":1,\"k12\":1,\"k13\":1,\"k14\":1,\"k15\":1,\"k16\":1,"
	"\"k\\u0031\\u0036\":1}]]",
	PARSE),
    /* Brackets inside strings are not nesting. */
    ROW("[\"[[[[{{{{\",\"]]]}}}\"]", OK),
};

static const char *want_name(enum want w)
{
	switch (w) {
	case OK:
		return "OK";
	case PARSE:
		return "PARSE";
	case LIMIT:
		return "LIMIT";
	case LAX:
		return "LAX";
	}
	return "?";
}

/* @buf as a C literal, cut to fit @out. */
static const char *escaped(const char *buf, size_t len, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

/* One parse with ng_json_parse() or the reference; the tree is the caller's to free. */
static ng_status parse(bool ref, const char *buf, size_t len, struct ng_arena *arena,
		       cJSON **ret_root, struct ng_err *err)
{
	if (ref)
		return ng_json_parse_ref(buf, len, arena, ret_root, err);
	return ng_json_parse(buf, len, arena, ret_root, err);
}

static ng_status status_of(enum want w)
{
	return w == PARSE ? NG_EPARSE : w == LIMIT ? NG_ELIMIT : NG_OK;
}

/* Checks one input in one allocation mode against its row's expectation. */
static void check_mode(const char *buf, size_t len, enum want want, bool use_arena,
		       const char *label)
{
	struct ng_arena *arena_n = use_arena ? ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES) : NULL;
	struct ng_arena *arena_r = use_arena ? ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES) : NULL;
	cJSON untouched;
	cJSON *root_n = &untouched, *root_r = &untouched;
	struct ng_err err_n = {0}, err_r = {0};
	const char *mode = use_arena ? "arena" : "malloc";

	ng_status st_r = parse(true, buf, len, arena_r, &root_r, &err_r);
	ng_status st_n = parse(false, buf, len, arena_n, &root_n, &err_n);

	/* The row documents what the reference does. */
	if (st_r != status_of(want))
		fail_msg("%s (%s): the reference says %s (%s), the table %s", label, mode,
			 ng_status_str(st_r), err_r.msg, want_name(want));
	/* OK rows are JSON; LAX rows are not: the table is checked against the RFC too. */
	if (want == OK && !ng_test_json_rfc8259(buf, len))
		fail_msg("%s: an OK row that is not RFC 8259 JSON", label);
	if (want == LAX && ng_test_json_rfc8259(buf, len))
		fail_msg("%s: a LAX row that is RFC 8259 JSON", label);

	if (st_n != NG_OK) {
		if (root_n != &untouched)
			fail_msg("%s (%s): ng_json_parse failed and wrote its output", label, mode);
		if (err_n.status != st_n)
			fail_msg("%s (%s): reterr says %s, the return %s", label, mode,
				 ng_status_str(err_n.status), ng_status_str(st_n));
	}
	switch (want) {
	case OK:
		if (st_n != NG_OK)
			fail_msg("%s (%s): ng_json_parse rejects JSON the reference accepts: %s",
				 label, mode, err_n.msg);
		break;
	case PARSE:
	case LIMIT:
		if (st_n != st_r)
			fail_msg("%s (%s): ng_json_parse says %s (%s), the reference %s", label,
				 mode, ng_status_str(st_n), err_n.msg, ng_status_str(st_r));
		break;
	case LAX:
		if (st_n != NG_OK && st_n != NG_EPARSE)
			fail_msg("%s (%s): ng_json_parse says %s on non-JSON, not %s", label, mode,
				 ng_status_str(st_n), ng_status_str(NG_EPARSE));
		if (st_n == NG_OK && LAX_MUST_REJECT)
			fail_msg("%s (%s): ng_json_parse accepts non-JSON", label, mode);
		break;
	}
	if (st_n == NG_OK && st_r == NG_OK) {
		char why[512];
		if (!ng_test_json_tree_equal(root_n, root_r, why, sizeof(why)))
			fail_msg("%s (%s): the trees differ %s", label, mode, why);
	}
	/* The shared oracle (the fuzz target's) agrees with the table. */
	char why[512];
	if (!ng_test_json_diff(buf, len, use_arena, NULL, why, sizeof(why)))
		fail_msg("%s (%s): %s", label, mode, why);

	if (!use_arena) {
		if (root_n != &untouched)
			cJSON_Delete(root_n);
		if (root_r != &untouched)
			cJSON_Delete(root_r);
	}
	ng_arena_destroy(arena_n);
	ng_arena_destroy(arena_r);
}

static void check_input(const char *buf, size_t len, enum want want, const char *name)
{
	char text[200], label[300];
	(void)snprintf(label, sizeof(label), "%s \"%s\"", name,
		       escaped(buf, len, text, sizeof(text)));
	check_mode(buf, len, want, false, label);
	check_mode(buf, len, want, true, label);
}

static void test_table(void **state)
{
	(void)state;
	size_t n = sizeof(cases) / sizeof(cases[0]);
	assert_true(n >= 80);
	for (size_t i = 0; i < n; i++) {
		char name[32];
		(void)snprintf(name, sizeof(name), "row %zu", i);
		check_input(cases[i].text, cases[i].len, cases[i].want, name);
	}
}

/* @depth containers, opened from @open (cycled) around @inner, closed in reverse. */
static char *nest(int depth, const char *open, const char *inner, size_t *ret_len)
{
	size_t nopen = strlen(open), ninner = strlen(inner);
	char *out = malloc((size_t)depth * 10 + ninner + 1);
	assert_non_null(out);
	size_t o = 0;
	for (int i = 0; i < depth; i++) {
		if (open[i % nopen] == '{') {
			memcpy(out + o, "{\"k\":", 5);
			o += 5;
		} else {
			out[o++] = '[';
		}
	}
	memcpy(out + o, inner, ninner);
	o += ninner;
	for (int i = depth - 1; i >= 0; i--)
		out[o++] = open[i % nopen] == '{' ? '}' : ']';
	out[o] = '\0';
	*ret_len = o;
	return out;
}

/* NG_MAX_JSON_DEPTH levels are fine, one more is NG_ELIMIT, whatever the containers, the
 * innermost value and whether the last level is empty. */
static void test_depth_limit(void **state)
{
	(void)state;
	static const struct {
		const char *open, *inner;
	} shapes[] = {
	    {"[", "1"},  {"[", ""},   {"{", "null"}, {"[{", "\"[[[[\""},
	    {"{[", "1"}, {"[", "[]"}, {"{", "{}"},
	};
	static const int depths[] = {1,
				     NG_MAX_JSON_DEPTH - 1,
				     NG_MAX_JSON_DEPTH,
				     NG_MAX_JSON_DEPTH + 1,
				     NG_MAX_JSON_DEPTH + 2,
				     1000,
				     5000};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
			/* "[]" and "{}" as the innermost value are one more level. */
			int levels =
			    depths[d] - (shapes[s].inner[0] == '[' || (shapes[s].inner[0] == '{'));
			if (levels < 0)
				continue;
			size_t len;
			char *text = nest(levels, shapes[s].open, shapes[s].inner, &len);
			char name[64];
			(void)snprintf(name, sizeof(name), "depth %d", depths[d]);
			check_input(text, len, depths[d] <= NG_MAX_JSON_DEPTH ? OK : LIMIT, name);
			/* Cut short, it is malformed at any depth. */
			if (depths[d] <= NG_MAX_JSON_DEPTH)
				check_input(text, len - 1, PARSE, name);
			free(text);
		}
	}
}

/* Files in @dir (relative to the source root): real documents and the other fuzz targets'
 * corpora, judged by the oracle alone (their expectations are not written down). Returns the
 * number checked. */
static size_t check_dir(const char *dir, const char *suffix)
{
	char path[1024];
	(void)snprintf(path, sizeof(path), "%s/%s", NG_SOURCE_ROOT, dir);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t nl = strlen(e->d_name), sl = strlen(suffix);
		if (e->d_name[0] == '.' || nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
			continue;
		char file[1400];
		(void)snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		FILE *f = fopen(file, "rbe");
		if (!f)
			continue;
		char *buf = malloc(1 << 20);
		assert_non_null(buf);
		size_t len = fread(buf, 1, 1 << 20, f);
		(void)fclose(f);
		for (int arena = 0; arena < 2; arena++) {
			char why[512];
			if (!ng_test_json_diff(buf, len, arena, NULL, why, sizeof(why)))
				fail_msg("%s (%s): %s", file, arena ? "arena" : "malloc", why);
		}
		free(buf);
		n++;
	}
	(void)closedir(d);
	return n;
}

static void test_examples_and_corpora(void **state)
{
	(void)state;
	assert_true(check_dir("examples", ".json") >= 4);
	assert_true(check_dir("tests/golden/eviction", ".json") > 0);
	static const char *const corpora[] = {
	    "admission-review", "object-admission", "watch-event", "kubeconfig", "json-diff",
	};
	for (size_t i = 0; i < sizeof(corpora) / sizeof(corpora[0]); i++) {
		char dir[128];
		(void)snprintf(dir, sizeof(dir), "tests/fuzz/corpus/%s", corpora[i]);
		(void)check_dir(dir, "");
		(void)snprintf(dir, sizeof(dir), "tests/fuzz/regression/%s", corpora[i]);
		(void)check_dir(dir, "");
	}
}

/* The oracle itself: it must catch a parser that is laxer or answers differently. */
static void test_comparator_catches_differences(void **state)
{
	(void)state;
	cJSON *a = NULL, *b = NULL;
	assert_int_equal(ng_json_parse_ref("{\"a\":[1,2,\"x\"]}", 15, NULL, &a, NULL), NG_OK);
	static const char *const others[] = {
	    "{\"a\":[1,2,\"y\"]}",   "{\"b\":[1,2,\"x\"]}",  "{\"a\":[1,2]}",
	    "{\"a\":[1,2,\"x\",3]}", "{\"a\":[1,-2,\"x\"]}", "{\"a\":[1,2,[]]}",
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		char why[256];
		assert_int_equal(ng_json_parse_ref(others[i], strlen(others[i]), NULL, &b, NULL),
				 NG_OK);
		assert_false(ng_test_json_tree_equal(a, b, why, sizeof(why)));
		assert_true(why[0] != '\0');
		cJSON_Delete(b);
	}
	/* -0.0 and 0.0 differ bit for bit; broken links are caught. */
	cJSON *z1 = cJSON_CreateNumber(0.0), *z2 = cJSON_CreateNumber(-0.0);
	assert_false(ng_test_json_tree_equal(z1, z2, NULL, 0));
	cJSON_Delete(z1);
	cJSON_Delete(z2);
	assert_int_equal(ng_json_parse_ref("{\"a\":[1,2,\"x\"]}", 15, NULL, &b, NULL), NG_OK);
	assert_true(ng_test_json_tree_equal(a, b, NULL, 0));
	cJSON *arr = b->child;
	cJSON *saved = arr->child->prev;
	arr->child->prev = NULL;
	assert_false(ng_test_json_tree_equal(a, b, NULL, 0));
	arr->child->prev = saved;
	saved = arr->child->next->prev;
	arr->child->next->prev = arr->child->next;
	assert_false(ng_test_json_tree_equal(a, b, NULL, 0));
	arr->child->next->prev = saved;
	assert_true(ng_test_json_tree_equal(a, b, NULL, 0));
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* The RFC 8259 validator on its own, so a LAX row rests on more than one opinion. */
static void test_rfc8259_validator(void **state)
{
	(void)state;
	static const char *const valid[] = {
	    "0",
	    "-0",
	    "-0.0e-0",
	    "1E+2",
	    "[]",
	    "{}",
	    " \t\n\r1 \t\n\r",
	    "\"\\u0000\"",
	    "\"\\uD800\"",
	    "{\"a\":1,\"a\":2}",
	    "\"\x7f\"",
	    "\"\xf4\x8f\xbf\xbf\"",
	    "[1,[2,{\"a\":[]}]]",
	};
	static const char *const invalid[] = {
	    "",
	    " ",
	    "01",
	    "-01",
	    "1.",
	    ".5",
	    "+1",
	    "-",
	    "1e",
	    "1e+",
	    "0x1",
	    "[1,]",
	    "{,}",
	    "\f1",
	    "\xef\xbb\xbf{}",
	    "\"\\x\"",
	    "\"\\u12\"",
	    "\"\\uZZZZ\"",
	    "\"\x01\"",
	    "\"\xc0\xaf\"",
	    "\"\xed\xa0\x80\"",
	    "\"\xf4\x90\x80\x80\"",
	    "truE",
	    "[1 2]",
	    "{1:2}",
	    "1 2",
	    "\"abc",
	};
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		if (!ng_test_json_rfc8259(valid[i], strlen(valid[i])))
			fail_msg("valid[%zu] judged invalid", i);
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		if (ng_test_json_rfc8259(invalid[i], strlen(invalid[i])))
			fail_msg("invalid[%zu] judged valid", i);
	/* The length counts, not a NUL. */
	assert_true(ng_test_json_rfc8259("[1]\0", 3));
	assert_false(ng_test_json_rfc8259("[1]\0", 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_examples_and_corpora),
	    cmocka_unit_test(test_comparator_catches_differences),
	    cmocka_unit_test(test_rfc8259_validator),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
