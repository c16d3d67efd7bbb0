/* common/regex: the bounded compile and match of users' patterns, and the process-wide cache.
 * Every test starts from an empty cache (ng_regex_teardown() after each). No timing assertions:
 * a bomb is shown refused or stopped by its error, not by how long it took. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/regex.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int empty_cache(void **state)
{
	ng_regex_teardown();
	return 0;
}

/* Whether @pattern matches @subject; fails the test on any error. */
static bool matches(const char *pattern, const char *subject)
{
	struct ng_regex *re = NULL;
	struct ng_err err = {0};
	if (ng_regex_get(pattern, strlen(pattern), &re, &err) != NG_OK)
		fail_msg("%s: %s", pattern, err.msg);
	bool got = true;
	if (ng_regex_match(re, subject, strlen(subject), &got, &err) != NG_OK)
		fail_msg("%s on %s: %s", pattern, subject, err.msg);
	ng_regex_put(re);
	return got;
}

/* @pattern is refused with @want and a message containing @part; returns the offset. */
static size_t refused(const char *pattern, size_t len, ng_status want, const char *part)
{
	struct ng_regex *re = (struct ng_regex *)&re; /* must come back NULL */
	struct ng_err err = {0};
	ng_status got = ng_regex_get(pattern, len, &re, &err);
	if (got != want || !strstr(err.msg, part) || re != NULL || err.status != want)
		fail_msg("%.60s: got %s \"%s\", expected %s containing \"%s\"", pattern,
			 ng_status_str(got), err.msg, ng_status_str(want), part);
	return err.offset;
}

/* Matching @pattern against @subject stops with @want and a message containing @part. */
static void match_fails(const char *pattern, const char *subject, ng_status want, const char *part)
{
	struct ng_regex *re = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_regex_get(pattern, strlen(pattern), &re, &err), NG_OK);
	bool got = true;
	ng_status st = ng_regex_match(re, subject, strlen(subject), &got, &err);
	if (st != want || got || !strstr(err.msg, part))
		fail_msg("%s: got %s \"%s\" (matched %d), expected %s containing \"%s\"", pattern,
			 ng_status_str(st), err.msg, got, ng_status_str(want), part);
	ng_regex_put(re);
}

static void test_benign_patterns_match_as_go_would(void **state)
{
	assert_true(matches("nvidia.com/gpu-.*", "nvidia.com/gpu-a100"));
	assert_true(matches("^example\\.com/(gpu|fpga)$", "example.com/fpga"));
	assert_true(matches(".*", ""));
	assert_true(matches("", "anything"));
	/* Unanchored, like regexp.MatchString. */
	assert_true(matches("gpu", "nvidia.com/gpu"));
	assert_true(matches("a.c", "xxabcxx"));
	/* RE2 syntax PCRE2 reads alike. */
	assert_true(matches("(?i)^NVIDIA\\.com/[[:alpha:]]+$", "nvidia.com/GPU"));
	assert_true(matches("^(?P<vendor>[a-z]+)\\.com/\\pL+$", "amd.com/gpu"));
	assert_true(matches("^\\x{e9}t\\x{e9}$", "\xc3\xa9t\xc3\xa9"));
	assert_true(matches("^.$", "\xc3\xa9")); /* one character, two bytes */
}

static void test_no_match(void **state)
{
	assert_false(matches("nvidia.com/gpu-.*", "amd.com/gpu"));
	assert_false(matches("^example\\.com/(gpu|fpga)$", "example.com/gpu2"));
	assert_false(matches("^gpu", "nvidia.com/gpu"));
	/* $ is the end of the text, as in RE2, not also before a final newline. */
	assert_false(matches("gpu$", "gpu\n"));
}

static void test_syntax_error_names_the_offset(void **state)
{
	assert_int_equal(refused("nvidia.com/gpu-(", 16, NG_EPARSE,
				 "does not compile: missing closing parenthesis at offset 16"),
			 16);
	refused("a)", 2, NG_EPARSE, "does not compile: unmatched closing parenthesis at offset 1");
	/* PCRE2 says offset 17 of this 16-byte pattern; we say the end. */
	assert_int_equal(refused("(*LIMIT_MATCH=10", 16, NG_EPARSE, "at offset 16"), 16);
	refused("[z-a]", 5, NG_EPARSE, "does not compile: range out of order");
	refused("\xff", 1, NG_EPARSE, "does not compile: UTF-8 error");
	refused("a\\C", 3, NG_EPARSE, "does not compile: using \\C is disabled");
	refused("(a)\\1", 5, NG_EPARSE, "does not compile: backreferences");
	refused("(?<n>a)\\k<n>", 12, NG_EPARSE, "does not compile: backreferences");
	/* Recursion can loop (PCRE2 then fails the match); RE2 has none. */
	assert_int_equal(
	    refused("x(?R)", 5, NG_EPARSE,
		    "does not compile: recursion and subroutine calls are not supported "
		    "(RE2 syntax has none) at offset 1"),
	    1);
	refused("(a)(?1)", 7, NG_EPARSE, "recursion and subroutine calls");
	refused("(a)(?-1)", 8, NG_EPARSE, "recursion and subroutine calls");
	refused("(?<n>a)(?&n)", 12, NG_EPARSE, "recursion and subroutine calls");
	refused("(?P<n>a)(?P>n)", 14, NG_EPARSE, "recursion and subroutine calls");
	refused("(?<n>a)\\g<n>", 12, NG_EPARSE, "recursion and subroutine calls");
	refused("\\c\\(?R)", 7, NG_EPARSE, "recursion and subroutine calls");
	assert_true(matches("^\\(?R\\)$", "(R)"));
	assert_true(matches("(?-i:a)(?i:B)", "ab"));
	char big[NG_REGEX_MAX_BYTES + 2];
	memset(big, 'a', sizeof(big));
	refused(big, sizeof(big), NG_ELIMIT, "is too long (1026 bytes; at most 1024)");
	assert_int_equal(ng_regex_check(big, NG_REGEX_MAX_BYTES, NULL), NG_OK);
}

static void test_bombs_are_refused_or_stopped(void **state)
{
	/* Took glibc's regcomp 2.4 s and 1.1 GiB. */
	refused("((a{1,100}){1,100}){1,100}", 26, NG_ELIMIT,
		"is too complex (regular expression is too large)");
	/* A nested quantifier is not a pattern in PCRE2 (nor in RE2). */
	refused("a{1000}{1000}", 13, NG_EPARSE,
		"does not compile: quantifier does not follow a repeatable item at offset 12");
	char deep[2 * 200 + 2];
	memset(deep, '(', 200);
	deep[200] = 'a';
	memset(deep + 201, ')', 200);
	deep[401] = '\0';
	refused(deep, strlen(deep), NG_ELIMIT,
		"is too complex (parentheses nested more than 32 deep)");
	assert_int_equal(ng_regex_check(deep + 200 - 32, 32 + 1 + 32, NULL), NG_OK);
	/* PCRE2 sees these cannot match without a b or y and answers at once. */
	assert_false(matches("(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	assert_false(matches("(x+x+)+y", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
	/* [yz] defeats that: exponential backtracking, stopped by the step limit. */
	match_fails("(x+x+)+[yz]", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", NG_ELIMIT,
		    "is too complex (match limit of 100000 steps reached)");
}

static void test_depth_and_heap_limits_stop_a_match(void **state)
{
	static char subject[3001];
	memset(subject, 'a', 3000);
	match_fails("(a|b)*[cd]", subject, NG_ELIMIT,
		    "is too complex (match depth limit of 5000 reached)");
	/* Sixty captures make each backtracking frame about a KiB. */
	char pattern[512] = "(";
	for (int i = 0; i < 60; i++)
		(void)strncat(pattern, "(a)|", sizeof(pattern) - strlen(pattern) - 1);
	(void)strncat(pattern, "(b))*[cd]", sizeof(pattern) - strlen(pattern) - 1);
	match_fails(pattern, subject, NG_ELIMIT,
		    "is too complex (match heap limit of 1024 KiB reached)");
}

static void test_subject_must_be_utf8(void **state)
{
	match_fails("gpu", "nvidia\xff/gpu", NG_EPARSE, "not UTF-8");
	struct ng_regex *re = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_regex_get("gpu", 3, &re, &err), NG_OK);
	bool got = true;
	assert_int_equal(ng_regex_match(re, "ab\xc3", 3, &got, &err), NG_EPARSE);
	assert_int_equal(err.offset, 2);
	assert_false(got);
	ng_regex_put(re);
}

static void test_cache_compiles_a_text_once(void **state)
{
	struct ng_regex *a = NULL, *b = NULL;
	assert_int_equal(ng_regex_get("nvidia.com/gpu-.*", 17, &a, NULL), NG_OK);
	assert_int_equal(ng_regex_get("nvidia.com/gpu-.*", 17, &b, NULL), NG_OK);
	assert_ptr_equal(a, b);
	size_t len;
	assert_string_equal(ng_regex_pattern(a, &len), "nvidia.com/gpu-.*");
	assert_int_equal(len, 17);
	/* A prefix is another pattern. */
	assert_int_equal(ng_regex_check("nvidia.com/gpu-", 15, NULL), NG_OK);
	struct ng_regex_stats s;
	ng_regex_stats(&s);
	assert_int_equal(s.compiles, 2);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.refused, 0);
	assert_int_equal(s.entries, 2);
	assert_true(s.bytes > 2 * 17);
	ng_regex_put(a);
	ng_regex_put(b);
	ng_regex_teardown();
	ng_regex_stats(&s);
	assert_int_equal(s.entries, 0);
	assert_int_equal(s.bytes, 0);
	assert_int_equal(s.compiles, 0);
}

static void test_refused_patterns_are_cached_with_their_error(void **state)
{
	const char *bomb = "((a{1,100}){1,100}){1,100}";
	struct ng_err first = {0}, again = {0};
	assert_int_equal(ng_regex_check(bomb, strlen(bomb), &first), NG_ELIMIT);
	assert_int_equal(ng_regex_check(bomb, strlen(bomb), &again), NG_ELIMIT);
	assert_string_equal(first.msg, again.msg);
	assert_int_equal(ng_regex_check("gpu-(", 5, &first), NG_EPARSE);
	assert_int_equal(ng_regex_check("gpu-(", 5, &again), NG_EPARSE);
	assert_string_equal(first.msg, again.msg);
	assert_int_equal(again.offset, 5);
	struct ng_regex_stats s;
	ng_regex_stats(&s);
	assert_int_equal(s.compiles, 2);
	assert_int_equal(s.refused, 2);
	assert_int_equal(s.hits, 2);
	assert_int_equal(s.entries, 2);
}

#define NTHREADS 8
#define NPATTERNS 16
#define ROUNDS 300

/* Gets pattern "^p<k>-[0-9]+$" for k in turn, matches it twice and puts it back. */
static void *hammer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		unsigned k = (seed + (unsigned)r * 7u) % NPATTERNS;
		char pattern[32], yes[32], no[32];
		(void)snprintf(pattern, sizeof(pattern), "^p%u-[0-9]+$", k);
		(void)snprintf(yes, sizeof(yes), "p%u-%d", k, r);
		(void)snprintf(no, sizeof(no), "p%u-x%d", k, r);
		struct ng_regex *re = NULL;
		bool a = false, b = true;
		if (ng_regex_get(pattern, strlen(pattern), &re, NULL) != NG_OK ||
		    ng_regex_match(re, yes, strlen(yes), &a, NULL) != NG_OK ||
		    ng_regex_match(re, no, strlen(no), &b, NULL) != NG_OK || !a || b)
			return (void *)1;
		ng_regex_put(re);
	}
	return NULL;
}

static void test_many_threads_share_the_cache(void **state)
{
	pthread_t t[NTHREADS];
	for (uintptr_t i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *rc = (void *)1;
		assert_int_equal(pthread_join(t[i], &rc), 0);
		assert_null(rc);
	}
	struct ng_regex_stats s;
	ng_regex_stats(&s);
	assert_int_equal(s.compiles, NPATTERNS);
	assert_int_equal(s.hits, NTHREADS * ROUNDS - NPATTERNS);
	assert_int_equal(s.entries, NPATTERNS);
	assert_int_equal(s.evictions, 0);
}

static void test_a_full_cache_drops_the_oldest(void **state)
{
	char pattern[32];
	struct ng_regex *first = NULL;
	assert_int_equal(ng_regex_get("^p0$", 4, &first, NULL), NG_OK);
	for (unsigned i = 1; i <= NG_REGEX_CACHE_ENTRIES; i++) {
		(void)snprintf(pattern, sizeof(pattern), "^p%u$", i);
		assert_int_equal(ng_regex_check(pattern, strlen(pattern), NULL), NG_OK);
	}
	struct ng_regex_stats s;
	ng_regex_stats(&s);
	assert_int_equal(s.entries, NG_REGEX_CACHE_ENTRIES);
	assert_int_equal(s.evictions, 1);
	/* The dropped pattern's reference is still good. */
	bool got = false;
	assert_int_equal(ng_regex_match(first, "p0", 2, &got, NULL), NG_OK);
	assert_true(got);
	ng_regex_put(first);
	/* Still cached: ^p1$. Back in, and dropping the oldest (^p1$, first in): ^p0$. */
	assert_int_equal(ng_regex_check("^p1$", 4, NULL), NG_OK);
	assert_int_equal(ng_regex_check("^p0$", 4, NULL), NG_OK);
	assert_int_equal(ng_regex_check("^p1$", 4, NULL), NG_OK);
	ng_regex_stats(&s);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.compiles, NG_REGEX_CACHE_ENTRIES + 1 + 2);
	assert_int_equal(s.evictions, 3);
	assert_int_equal(s.entries, NG_REGEX_CACHE_ENTRIES);
}

static void test_the_cache_is_capped_in_bytes(void **state)
{
	/* Each compiles to about 23 KiB: the byte cap binds long before the entry cap. */
	char pattern[64];
	for (unsigned i = 0; i < 400; i++) {
		(void)snprintf(pattern, sizeof(pattern), "(\\pL|\\pN|\\pP){1000}%u", i);
		assert_int_equal(ng_regex_check(pattern, strlen(pattern), NULL), NG_OK);
	}
	struct ng_regex_stats s;
	ng_regex_stats(&s);
	assert_true(s.bytes <= NG_REGEX_CACHE_BYTES);
	assert_true(s.evictions > 0);
	assert_int_equal(s.entries + s.evictions, 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_benign_patterns_match_as_go_would, empty_cache),
	    cmocka_unit_test_teardown(test_no_match, empty_cache),
	    cmocka_unit_test_teardown(test_syntax_error_names_the_offset, empty_cache),
	    cmocka_unit_test_teardown(test_bombs_are_refused_or_stopped, empty_cache),
	    cmocka_unit_test_teardown(test_depth_and_heap_limits_stop_a_match, empty_cache),
	    cmocka_unit_test_teardown(test_subject_must_be_utf8, empty_cache),
	    cmocka_unit_test_teardown(test_cache_compiles_a_text_once, empty_cache),
	    cmocka_unit_test_teardown(test_refused_patterns_are_cached_with_their_error,
				      empty_cache),
	    cmocka_unit_test_teardown(test_many_threads_share_the_cache, empty_cache),
	    cmocka_unit_test_teardown(test_a_full_cache_drops_the_oldest, empty_cache),
	    cmocka_unit_test_teardown(test_the_cache_is_capped_in_bytes, empty_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
