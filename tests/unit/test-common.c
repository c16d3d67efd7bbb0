/* common/: arena, buf, intern, number and time parsing, JSON guard rails, log lines. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/map.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/parse.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A cap below one chunk (16 KiB) still holds what fits under it: the drainer parses answers of a
 * few hundred bytes in arenas sized from them. */
static void test_arena_cap_below_a_chunk_holds_what_fits(void **state)
{
	(void)state;
	struct ng_arena *a = ng_arena_create(4096);
	assert_non_null(a);
	size_t total = 0;
	while (ng_arena_alloc(a, 1000) != NULL)
		total += 1000;
	assert_int_equal(total, 4000);
	assert_true(ng_arena_exhausted(a));
	ng_arena_reset(a);
	assert_non_null(ng_arena_alloc(a, 4096));
	assert_null(ng_arena_alloc(a, 16));
	ng_arena_destroy(a);
}

static void test_arena_cap_is_enforced(void **state)
{
	struct ng_arena *a = ng_arena_create(64 * 1024);
	assert_non_null(a);
	size_t total = 0;
	void *p;
	while ((p = ng_arena_alloc(a, 1000)) != NULL) {
		memset(p, 0xab, 1000);
		total += 1000;
		assert_true(total <= 64 * 1024);
	}
	assert_true(total >= 48 * 1000);
	/* A single allocation over the cap fails too, without aborting. */
	assert_null(ng_arena_alloc(a, 1u << 20));
	ng_arena_reset(a);
	assert_int_equal(ng_arena_used(a), 0);
	assert_non_null(ng_arena_alloc(a, 1000));
	char *s = ng_arena_strndup(a, "hello world", 5);
	assert_string_equal(s, "hello");
	ng_arena_destroy(a);
	ng_arena_destroy(NULL);
}

static void test_buf_cap_leaves_contents_unchanged(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 8);
	assert_int_equal(ng_buf_puts(&b, "abcd"), NG_OK);
	assert_int_equal(ng_buf_puts(&b, "efghi"), NG_ELIMIT);
	assert_int_equal(b.len, 4);
	assert_string_equal(b.data, "abcd");
	assert_int_equal(ng_buf_printf(&b, "%d", 1234), NG_OK);
	assert_string_equal(b.data, "abcd1234");
	assert_int_equal(ng_buf_i64(&b, 1), NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_buf_json_string_escaping(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
	    {"plain", 5, "\"plain\""},
	    {"q\"b\\", 4, "\"q\\\"b\\\\\""},
	    {"n\nt\tr\r", 6, "\"n\\nt\\tr\\r\""},
	    {"\x01\x1f", 2, "\"\\u0001\\u001f\""},
	    {"caf\xc3\xa9", 5, "\"caf\xc3\xa9\""},
	    /* invalid UTF-8 becomes U+FFFD so the output stays valid JSON */
	    {"a\xff"
	     "b",
	     3,
	     "\"a\xef\xbf\xbd"
	     "b\""},
	    {"\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
	    {"nul\0x", 5, "\"nul\\u0000x\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_buf b;
		ng_buf_init(&b, 1024);
		assert_int_equal(ng_buf_json_str(&b, cases[i].in, cases[i].len), NG_OK);
		assert_string_equal(b.data, cases[i].out);
		/* With a tail (a key's ':'), plain or escaped: the same string, then the tail. */
		ng_buf_reset(&b);
		assert_int_equal(ng_buf_json_str_tail(&b, cases[i].in, cases[i].len, ":", 1),
				 NG_OK);
		assert_int_equal(b.len, strlen(cases[i].out) + 1);
		assert_memory_equal(b.data, cases[i].out, b.len - 1);
		assert_int_equal(b.data[b.len - 1], ':');
		ng_buf_finish(&b);
	}
	/* Over the cap: nothing of the string is left behind. */
	struct ng_buf b;
	ng_buf_init(&b, 6);
	assert_int_equal(ng_buf_puts(&b, "x"), NG_OK);
	assert_int_equal(ng_buf_json_str(&b, "abcdefgh", 8), NG_ELIMIT);
	assert_string_equal(b.data, "x");
	assert_int_equal(ng_buf_json_str_tail(&b, "abc", 3, ":", 1), NG_ELIMIT);
	assert_string_equal(b.data, "x");
	ng_buf_finish(&b);
}

/* O33: names in a plan's picture are escaped for XML and HTML text and attributes, and bytes
 * XML cannot hold become U+FFFD, so a hostile node name cannot break the document. */
static void test_buf_xml_string_escaping(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
	    {"plain-node.1", 12, "plain-node.1"},
	    {"<script>&\"'", 11, "&lt;script&gt;&amp;&quot;&#39;"},
	    {"n\nt\tr\r", 6, "n&#10;t&#9;r&#13;"},
	    {"\x01\x1f", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
	    {"nul\0x", 5, "nul\xef\xbf\xbdx"},
	    {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
	    {"a\xff"
	     "b",
	     3,
	     "a\xef\xbf\xbd"
	     "b"},
	    {"\xef\xbf\xbf", 3, "\xef\xbf\xbd"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_buf b;
		ng_buf_init(&b, 1024);
		assert_int_equal(ng_buf_xml_str(&b, cases[i].in, cases[i].len), NG_OK);
		assert_string_equal(b.data, cases[i].out);
		ng_buf_finish(&b);
	}
	/* Bounded by the buffer's cap. */
	struct ng_buf b;
	ng_buf_init(&b, 8);
	assert_int_equal(ng_buf_xml_str(&b, "<<<<", 4), NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_intern_ids_are_stable(void **state)
{
	struct ng_intern *in = ng_intern_create();
	assert_non_null(in);
	uint32_t a, b, c;
	assert_int_equal(ng_intern_add(in, "app", 3, &a), NG_OK);
	assert_int_equal(ng_intern_add(in, "db", 2, &b), NG_OK);
	assert_int_equal(ng_intern_add(in, "app", 3, &c), NG_OK);
	assert_int_equal(a, c);
	assert_int_not_equal(a, b);
	assert_int_equal(ng_intern_find(in, "db", 2), b);
	assert_int_equal(ng_intern_find(in, "nope", 4), NG_INTERN_NONE);
	const char *p = ng_intern_str(in, a, NULL);
	/* Many more strings: pointers handed out earlier never move. */
	char tmp[32];
	for (int i = 0; i < 200000; i++) {
		int n = snprintf(tmp, sizeof(tmp), "value-%d", i);
		uint32_t id;
		assert_int_equal(ng_intern_add(in, tmp, (size_t)n, &id), NG_OK);
	}
	assert_ptr_equal(ng_intern_str(in, a, NULL), p);
	assert_string_equal(p, "app");
	assert_int_equal(ng_intern_count(in), 200002);
	size_t len;
	assert_string_equal(ng_intern_str(in, ng_intern_find(in, "value-199999", 12), &len),
			    "value-199999");
	assert_int_equal(len, 12);
	assert_string_equal(ng_intern_str(in, NG_INTERN_NONE, NULL), "");
	/* The empty string is a string like any other. */
	uint32_t e;
	assert_int_equal(ng_intern_add(in, "", 0, &e), NG_OK);
	assert_int_equal(ng_intern_find(in, "", 0), e);
	ng_intern_destroy(in);
}

static void test_parse_i64_table(void **state)
{
	static const struct {
		const char *s;
		int64_t min, max;
		ng_status st;
		int64_t v;
	} cases[] = {
	    {"0", 0, 10, NG_OK, 0},
	    {"10", 0, 10, NG_OK, 10},
	    {"11", 0, 10, NG_ELIMIT, 0},
	    {"-1", 0, 10, NG_ELIMIT, 0},
	    {"-1", -5, 10, NG_OK, -1},
	    {"+7", 0, 10, NG_OK, 7},
	    {"", 0, 10, NG_EPARSE, 0},
	    {"-", 0, 10, NG_EPARSE, 0},
	    {" 1", 0, 10, NG_EPARSE, 0},
	    {"1 ", 0, 10, NG_EPARSE, 0},
	    {"1x", 0, 10, NG_EPARSE, 0},
	    {"0x10", 0, 100, NG_EPARSE, 0},
	    {"9223372036854775807", INT64_MIN, INT64_MAX, NG_OK, INT64_MAX},
	    {"9223372036854775808", INT64_MIN, INT64_MAX, NG_ELIMIT, 0},
	    {"-9223372036854775808", INT64_MIN, INT64_MAX, NG_OK, INT64_MIN},
	    {"123456789012345678901234567890123", INT64_MIN, INT64_MAX, NG_ELIMIT, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t v = 0xad;
		ng_status st =
		    ng_parse_i64(cases[i].s, strlen(cases[i].s), cases[i].min, cases[i].max, &v);
		assert_int_equal(st, cases[i].st);
		if (st == NG_OK)
			assert_int_equal(v, cases[i].v);
		else
			assert_int_equal(v, 0xad); /* never clobbered on failure */
	}
}

static void test_rfc3339_round_trip(void **state)
{
	int64_t ms;
	assert_int_equal(ng_parse_rfc3339_ms("1970-01-01T00:00:00Z", 20, &ms), NG_OK);
	assert_int_equal(ms, 0);
	assert_int_equal(ng_parse_rfc3339_ms("2026-11-22T05:00:00.123Z", 24, &ms), NG_OK);
	char out[32];
	size_t n = ng_format_rfc3339_ms(ms, out);
	assert_int_equal(n, 24);
	assert_string_equal(out, "2026-11-22T05:00:00.123Z");
	int64_t off;
	assert_int_equal(ng_parse_rfc3339_ms("2026-11-22T06:00:00.123+01:00", 29, &off), NG_OK);
	assert_int_equal(off, ms);
	ms = 0xad;
	assert_int_equal(ng_parse_rfc3339_ms("2026-13-22T05:00:00Z", 20, &ms), NG_EPARSE);
	assert_int_equal(ng_parse_rfc3339_ms("2026-11-22 05:00:00Z", 20, &ms), NG_EPARSE);
	assert_int_equal(ng_parse_rfc3339_ms("2026-11-22T05:00:00", 19, &ms), NG_EPARSE);
	assert_int_equal(ms, 0xad);
}

/* Every instant RFC 3339 can write comes back from its text: before 1970 (a fraction of a second
 * was written as ".-875", a second late), before the year 1000 (strftime wrote "999-"), and at
 * both ends; past them, the nearest end is written (a year of five digits overran the buffer). */
static void test_rfc3339_format_reads_back(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"1013-11-24T10:05:00.125Z", "1013-11-24T10:05:00.125Z"},
	    {"1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"},
	    {"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"},
	    {"0999-03-01T12:00:00.5Z", "0999-03-01T12:00:00.500Z"},
	    {"0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000Z"},
	    {"9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"},
	    {"0000-01-01T00:00:00+23:59", "0000-01-01T00:00:00.000Z"},
	    {"9999-12-31T23:59:59.999-23:59", "9999-12-31T23:59:59.999Z"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms, again;
		char out[25];
		assert_int_equal(ng_parse_rfc3339_ms(cases[i].in, strlen(cases[i].in), &ms), NG_OK);
		assert_int_equal(ng_format_rfc3339_ms(ms, out), 24);
		assert_string_equal(out, cases[i].out);
		assert_int_equal(ng_parse_rfc3339_ms(out, 24, &again), NG_OK);
		if (ms >= NG_RFC3339_MIN_MS && ms <= NG_RFC3339_MAX_MS)
			assert_int_equal(again, ms);
	}
	char out[25];
	assert_int_equal(ng_format_rfc3339_ms(INT64_MIN, out), 24);
	assert_string_equal(out, "0000-01-01T00:00:00.000Z");
	assert_int_equal(ng_format_rfc3339_ms(INT64_MAX, out), 24);
	assert_string_equal(out, "9999-12-31T23:59:59.999Z");
}

static ng_status parse(const char *s, struct ng_err *err)
{
	cJSON *root = (cJSON *)0xad;
	ng_status st = ng_json_parse(s, strlen(s), NULL, &root, err);
	if (st == NG_OK)
		cJSON_Delete(root);
	else
		assert_ptr_equal(root, (cJSON *)0xad);
	return st;
}

static void test_json_guard_rails(void **state)
{
	struct ng_err err = {0};
	assert_int_equal(parse("{\"a\":[1,2,{\"b\":null}]}", &err), NG_OK);
	assert_int_equal(parse("{\"a\":1,\"a\":2}", &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "duplicate JSON key \"a\""));
	assert_int_equal(parse("{\"a\":\"x\\u0000y\"}", &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(parse("{\"a\":\"x\ty\"}", &err), NG_EPARSE);
	/* Strings must be UTF-8: a uid we could not echo byte for byte is refused up front. */
	assert_int_equal(parse("{\"a\":\"x\xff\"}", &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "invalid UTF-8"));
	assert_int_equal(err.offset, 7);
	assert_int_equal(parse("{\"a\":\"\xc0\xaf\"}", &err), NG_EPARSE);     /* overlong '/' */
	assert_int_equal(parse("{\"a\":\"\xed\xa0\x80\"}", &err), NG_EPARSE); /* surrogate */
	assert_int_equal(parse("{\"caf\xc3\xa9\":\"\xf0\x9f\x9a\x80\"}", &err), NG_OK);
	assert_int_equal(parse("{\"a\":1} x", &err), NG_EPARSE);
	assert_int_equal(err.offset, 8);
	assert_int_equal(parse("{\"a\":", &err), NG_EPARSE);
	assert_int_equal(parse("", &err), NG_EPARSE);
	/* A string that merely looks like brackets does not count toward depth. */
	assert_int_equal(parse("{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
			       "[[[[[[[[[[[[[[[\"}",
			       &err),
			 NG_OK);
	char deep[2 * (NG_MAX_JSON_DEPTH + 1) + 1];
	for (int i = 0; i <= NG_MAX_JSON_DEPTH; i++) {
		deep[i] = '[';
		deep[2 * (NG_MAX_JSON_DEPTH + 1) - 1 - i] = ']';
	}
	deep[2 * (NG_MAX_JSON_DEPTH + 1)] = '\0';
	assert_int_equal(parse(deep, &err), NG_ELIMIT);
	/* Duplicates in a large object are found too (sorted path). */
	char big[2048];
	size_t off = 0;
	off += (size_t)snprintf(big + off, sizeof(big) - off, "{");
	for (int i = 0; i < 40; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off, "\"k%d\":%d,", i, i);
	(void)snprintf(big + off, sizeof(big) - off, "\"k7\":0}");
	assert_int_equal(parse(big, &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "k7"));
}

static void test_json_arena_parse_respects_cap(void **state)
{
	struct ng_arena *a = ng_arena_create(16 * 1024);
	char body[64 * 1024];
	size_t off = 0;
	off += (size_t)snprintf(body + off, sizeof(body) - off, "[");
	while (off < sizeof(body) - 16)
		off += (size_t)snprintf(body + off, sizeof(body) - off, "1,");
	(void)snprintf(body + off, sizeof(body) - off, "1]");
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(body, strlen(body), a, &root, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "too many values"));
	assert_true(ng_arena_exhausted(a));
	ng_arena_reset(a);
	assert_false(ng_arena_exhausted(a));
	ng_arena_destroy(a);
	a = ng_arena_create(1u << 20);
	assert_int_equal(ng_json_parse("{\"x\":\"y\"}", 9, a, &root, &err), NG_OK);
	assert_string_equal(ng_json_str(root, "x"), "y");
	int64_t v;
	cJSON *n = NULL;
	assert_int_equal(ng_json_parse("12345678901", 11, a, &n, &err), NG_OK);
	assert_true(ng_json_int64(n, &v));
	assert_int_equal(v, 12345678901LL);
	assert_int_equal(ng_json_parse("1.5", 3, a, &n, &err), NG_OK);
	assert_false(ng_json_int64(n, &v));
	ng_arena_destroy(a);
}

static void test_log_line_is_one_json_object(void **state)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	ng_log_set_fd(fds[1]);
	ng_log_set_level(NG_LOG_INFO);
	struct ng_logline l;
	assert_false(ng_log_begin(&l, NG_LOG_DEBUG, "test", "hidden"));
	assert_true(ng_log_begin(&l, NG_LOG_INFO, "test", "decided"));
	ng_log_str(&l, "uid", "u-1\"x");
	ng_log_bool(&l, "allowed", false);
	ng_log_i64(&l, "dur_us", 42);
	ng_log_str(&l, "none", NULL);
	ng_log_end(&l);
	/* A field too large for one line is dropped whole and the line says so. */
	char huge[NG_LOG_LINE_BYTES * 2];
	memset(huge, 'x', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_true(ng_log_begin(&l, NG_LOG_WARN, "test", "big"));
	ng_log_str(&l, "small", "kept");
	ng_log_str(&l, "big", huge);
	ng_log_end(&l);
	ng_log_set_fd(2);
	(void)close(fds[1]);
	char buf[NG_LOG_LINE_BYTES * 3];
	ssize_t n = 0, r;
	while ((r = read(fds[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	(void)close(fds[0]);
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	assert_non_null(nl);
	*nl = '\0';
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(buf, strlen(buf), NULL, &root, &err), NG_OK);
	assert_string_equal(ng_json_str(root, "level"), "info");
	assert_string_equal(ng_json_str(root, "component"), "test");
	assert_string_equal(ng_json_str(root, "msg"), "decided");
	assert_string_equal(ng_json_str(root, "uid"), "u-1\"x");
	assert_true(cJSON_IsFalse(ng_json_get(root, "allowed")));
	assert_int_equal((int)ng_json_get(root, "dur_us")->valuedouble, 42);
	assert_true(cJSON_IsNull(ng_json_get(root, "none")));
	assert_non_null(ng_json_str(root, "ts"));
	cJSON_Delete(root);
	char *second = nl + 1;
	nl = strchr(second, '\n');
	assert_non_null(nl);
	*nl = '\0';
	assert_true(strlen(second) < NG_LOG_LINE_BYTES);
	assert_int_equal(ng_json_parse(second, strlen(second), NULL, &root, &err), NG_OK);
	assert_string_equal(ng_json_str(root, "small"), "kept");
	assert_null(ng_json_get(root, "big"));
	assert_true(cJSON_IsTrue(ng_json_get(root, "trunc")));
	cJSON_Delete(root);
}

static void test_array_grow_doubles_and_refuses_overflow(void **state)
{
	(void)state;
	size_t cap = 0, n = 0;
	int *a = NULL;
	for (int v = 0; v < 100; v++) {
		int *p = ng_array_grow(a, &cap, n, sizeof(*p));
		assert_non_null(p);
		a = p;
		a[n++] = v;
	}
	assert_int_equal(cap, 128); /* 16, 32, 64, 128 */
	for (int v = 0; v < 100; v++)
		assert_int_equal(a[v], v);
	/* Not full: the same array back, capacity unchanged. */
	n = 50;
	assert_ptr_equal(ng_array_grow(a, &cap, n, sizeof(*a)), a);
	assert_int_equal(cap, 128);
	/* A capacity whose double overflows the allocation: NULL, nothing changed. */
	size_t huge = SIZE_MAX / 4;
	assert_null(ng_array_grow(a, &huge, huge, 4));
	assert_int_equal(huge, SIZE_MAX / 4);
	free(a);
}

static void test_fnv1a64_known_values_and_chaining(void **state)
{
	(void)state;
	assert_true(ng_fnv1a64(NG_FNV64_INIT, "", 0) == 0xcbf29ce484222325ull);
	assert_true(ng_fnv1a64(NG_FNV64_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
	/* Feeding in two parts hashes the concatenation. */
	assert_true(ng_fnv1a64(ng_fnv1a64(NG_FNV64_INIT, "node", 4), "1", 1) ==
		    ng_fnv1a64(NG_FNV64_INIT, "node1", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_arena_cap_is_enforced),
	    cmocka_unit_test(test_arena_cap_below_a_chunk_holds_what_fits),
	    cmocka_unit_test(test_buf_cap_leaves_contents_unchanged),
	    cmocka_unit_test(test_buf_json_string_escaping),
	    cmocka_unit_test(test_buf_xml_string_escaping),
	    cmocka_unit_test(test_array_grow_doubles_and_refuses_overflow),
	    cmocka_unit_test(test_fnv1a64_known_values_and_chaining),
	    cmocka_unit_test(test_intern_ids_are_stable),
	    cmocka_unit_test(test_parse_i64_table),
	    cmocka_unit_test(test_rfc3339_round_trip),
	    cmocka_unit_test(test_rfc3339_format_reads_back),
	    cmocka_unit_test(test_json_guard_rails),
	    cmocka_unit_test(test_json_arena_parse_respects_cap),
	    cmocka_unit_test(test_log_line_is_one_json_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
