/* libFuzzer target for users' regexes, common/regex (STYLE.md B12 "Fuzz").
 *
 * Input: the pattern, then a NUL byte and the subject; without a NUL the whole input is the
 * pattern and it is matched against a few resource names. Whatever the input:
 * - ng_regex_get() answers NG_OK with a reference, or NG_EPARSE/NG_ELIMIT (NG_ENOMEM) with no
 *   reference, a message in the documented form and an offset inside the pattern;
 * - asking again gives the same reference, or the same refusal (the cache);
 * - a match decides, or stops with NG_ELIMIT, or with NG_EPARSE only for a subject that is not
 *   valid UTF-8 — and never says "matched" with an error;
 * - the empty subject and the pattern's own text are matched too, and an empty pattern matches
 *   everything.
 * Any broken invariant calls abort() so libFuzzer keeps the input. The cache is emptied every
 * 256 inputs, so eviction and teardown with references outstanding run as well. */
#include "common/regex.h"
#include "common/status.h"
#include "common/utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool valid_utf8(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = ng_utf8_seq_len((const unsigned char *)s + i, len - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

static void check_match(const struct ng_regex *re, const char *subject, size_t len)
{
	bool matched = true;
	struct ng_err err = {0};
	ng_status st = ng_regex_match(re, subject, len, &matched, &err);
	if (st == NG_OK)
		return;
	check(!matched && err.status == st);
	check(st == NG_ELIMIT || st == NG_EPARSE || st == NG_ENOMEM);
	if (st == NG_ELIMIT)
		check(starts(err.msg, "is too complex ("));
	if (st == NG_EPARSE)
		check(!valid_utf8(subject, len) && err.offset < len);
}

static void check_refusal(ng_status st, const struct ng_err *err, size_t len)
{
	check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
	check(err->status == st && err->offset <= len);
	if (st == NG_EPARSE)
		check(starts(err->msg, "does not compile: "));
	if (st == NG_ELIMIT)
		check(starts(err->msg, "is too complex (") || starts(err->msg, "is too long ("));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned inputs;
	if (++inputs % 256 == 0)
		ng_regex_teardown();
	const char *pattern = (const char *)data;
	/* An empty input comes as NULL, and memchr() may not be given NULL. */
	const uint8_t *nul = size ? memchr(data, 0, size) : NULL;
	size_t plen = nul ? (size_t)(nul - data) : size;

	struct ng_regex *re = (struct ng_regex *)&re, *again = NULL;
	struct ng_err err = {0}, err2 = {0};
	ng_status st = ng_regex_get(pattern, plen, &re, &err);
	ng_status st2 = ng_regex_get(pattern, plen, &again, &err2);
	if (st != NG_OK) {
		check(re == NULL);
		check_refusal(st, &err, plen);
		check(st == NG_ENOMEM || st2 == NG_ENOMEM ||
		      (st2 == st && again == NULL && strcmp(err.msg, err2.msg) == 0));
		ng_regex_put(again);
		return 0;
	}
	check(re != NULL && st2 == NG_OK && again == re);
	ng_regex_put(again);
	size_t len;
	check(ng_regex_pattern(re, &len) != NULL && len == plen);

	if (nul) {
		check_match(re, (const char *)nul + 1, size - plen - 1);
	} else {
		static const char *const names[] = {"nvidia.com/gpu", "example.com/fpga-1",
						    "ephemeral-storage", "cpu"};
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			check_match(re, names[i], strlen(names[i]));
	}
	check_match(re, pattern, plen);
	bool matched = false;
	if (plen == 0)
		check(ng_regex_match(re, "x\xc3\xa9", 3, &matched, NULL) == NG_OK && matched);
	check_match(re, "", 0);
	ng_regex_put(re);
	return 0;
}
