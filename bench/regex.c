/* Which regex engine for user-supplied patterns: glibc's POSIX regcomp()/regexec() against PCRE2
 * (10.42, JIT off), on benign patterns and on pattern bombs, each measured in a child process of
 * its own so its peak memory is its own.
 *
 * Engines: "glibc" (REG_EXTENDED | REG_NOSUB, as policy/validate.c used it), "pcre2" (PCRE2_UTF,
 * the library's default limits) and "pcre2-lim" (the same with the limits common/regex.c sets:
 * parentheses nested 32 deep, 256 KiB for a compile, 100,000 match steps, depth 5,000, 1 MiB of
 * match heap), and "ng_regex", common/regex itself: its cache, its match data per call. Per case
 * and engine it prints the time per compile and per match (each repeated until 50 ms have passed),
 * the outcome, the child's peak RSS above an idle child's, and for PCRE2 the bytes its allocator
 * saw at most. A child gets 30 s and, without a sanitizer, 4 GiB of address space.
 *
 * Usage: bench-regex [FILTER]   (FILTER: run only cases whose name contains it) */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "common/clock.h"
#include "common/regex.h"

#include <pcre2.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif

#define CHILD_SECONDS 30
#define CHILD_AS_BYTES (4ull << 30)

struct bench_case {
	const char *name, *pattern;
	const char *unit; /* the subject: @n copies of @unit */
	int n;
};

enum engine { ENGINE_GLIBC, ENGINE_PCRE2, ENGINE_PCRE2_LIM, ENGINE_NG, ENGINE_COUNT };
static const char *const engine_names[ENGINE_COUNT] = {"glibc", "pcre2", "pcre2-lim", "ng_regex"};

/* What a child reports through its pipe. */
struct outcome {
	int compiled;      /* 1 compiled, 0 refused */
	int matched;       /* 1 match, 0 no match, -1 error (limit) */
	double compile_us; /* one compile */
	double match_us;   /* per match */
	long matches;      /* how many were timed */
	size_t peak_bytes; /* PCRE2's allocator, at most (compile and match) */
	char msg[256];
};

/* ---- PCRE2's allocator: counts, and caps when asked ---- */

struct meter {
	size_t used, peak, cap; /* cap 0: none */
};

#define HDR 16 /* keeps malloc's alignment */

static void *meter_malloc(PCRE2_SIZE n, void *data)
{
	struct meter *m = data;
	if (m->cap && n > m->cap - m->used)
		return NULL;
	unsigned char *p = malloc(HDR + n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	m->used += n;
	if (m->used > m->peak)
		m->peak = m->used;
	return p + HDR;
}

static void meter_free(void *ptr, void *data)
{
	struct meter *m = data;
	if (!ptr)
		return;
	unsigned char *p = (unsigned char *)ptr - HDR;
	size_t n;
	memcpy(&n, p, sizeof(n));
	m->used -= n;
	free(p);
}

/* ---- the engines, run in the child ---- */

static double since_us(int64_t t0)
{
	return (double)(ng_now_mono_us() - t0);
}

/* Evaluates @expr (a match) until 50 ms have passed (once at least) into @o. */
#define TIME_MATCHES(o, expr)                                                                      \
	do {                                                                                       \
		int64_t t0_ = ng_now_mono_us();                                                    \
		long n_ = 0;                                                                       \
		do {                                                                               \
			(o)->matched = (expr);                                                     \
			n_++;                                                                      \
		} while (ng_now_mono_us() - t0_ < 50000 && n_ < 1000000);                          \
		(o)->matches = n_;                                                                 \
		(o)->match_us = since_us(t0_) / (double)n_;                                        \
	} while (0)

/* Compiles (repeatedly, for the time) and matches @pattern with glibc. */
static void run_glibc(const char *pattern, const char *subject, struct outcome *o)
{
	regex_t rx;
	int rc;
	int64_t t0 = ng_now_mono_us();
	long n = 0;
	for (;;) {
		rc = regcomp(&rx, pattern, REG_EXTENDED | REG_NOSUB);
		n++;
		if (rc != 0 || ng_now_mono_us() - t0 >= 50000)
			break;
		regfree(&rx);
	}
	o->compile_us = since_us(t0) / (double)n;
	if (rc != 0) {
		(void)regerror(rc, &rx, o->msg, sizeof(o->msg));
		return;
	}
	o->compiled = 1;
	TIME_MATCHES(o, regexec(&rx, subject, 0, NULL, 0) == 0);
	regfree(&rx);
}

static int pcre2_outcome(int rc, struct outcome *o)
{
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	(void)pcre2_get_error_message(rc, (PCRE2_UCHAR *)o->msg, sizeof(o->msg));
	return -1;
}

/* Compiles (repeatedly, for the time) and matches @pattern with PCRE2, @limited or not. */
static void run_pcre2(const char *pattern, const char *subject, bool limited, struct outcome *o)
{
	struct meter m = {.cap = limited ? 256u * 1024u : 0};
	pcre2_general_context *g = pcre2_general_context_create(meter_malloc, meter_free, &m);
	pcre2_compile_context *cc = pcre2_compile_context_create(g);
	pcre2_match_context *mc = pcre2_match_context_create(g);
	if (!g || !cc || !mc)
		abort();
	if (limited) {
		(void)pcre2_set_parens_nest_limit(cc, 32);
		(void)pcre2_set_match_limit(mc, 100000);
		(void)pcre2_set_depth_limit(mc, 5000);
		(void)pcre2_set_heap_limit(mc, 1024);
	}
	int err;
	PCRE2_SIZE off;
	pcre2_code *re;
	int64_t t0 = ng_now_mono_us();
	long n = 0;
	for (;;) {
		re = pcre2_compile((PCRE2_SPTR)pattern, strlen(pattern), PCRE2_UTF, &err, &off, cc);
		n++;
		if (ng_now_mono_us() - t0 >= 50000)
			break;
		pcre2_code_free(re);
	}
	o->compile_us = since_us(t0) / (double)n;
	if (!re) {
		char why[100];
		(void)pcre2_get_error_message(err, (PCRE2_UCHAR *)why, sizeof(why));
		(void)snprintf(o->msg, sizeof(o->msg), "%s at offset %zu", why, (size_t)off);
	} else {
		o->compiled = 1;
		pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, g);
		if (!md)
			abort();
		size_t len = strlen(subject);
		TIME_MATCHES(
		    o, pcre2_outcome(pcre2_match(re, (PCRE2_SPTR)subject, len, 0, 0, md, mc), o));
		pcre2_match_data_free(md);
		pcre2_code_free(re);
	}
	pcre2_match_context_free(mc);
	pcre2_compile_context_free(cc);
	pcre2_general_context_free(g);
	o->peak_bytes = m.peak;
}

/* Through common/regex: a compile is a get on an empty cache (teardown between), a match is
 * ng_regex_match() with its match data per call; the message gives a cache hit's get+put. */
static void run_ng(const char *pattern, const char *subject, struct outcome *o)
{
	struct ng_regex *re = NULL;
	struct ng_err err = {0};
	ng_status st;
	size_t plen = strlen(pattern), slen = strlen(subject);
	int64_t t0 = ng_now_mono_us();
	long n = 0;
	do {
		ng_regex_teardown();
		st = ng_regex_get(pattern, plen, &re, &err);
		ng_regex_put(re);
		n++;
	} while (ng_now_mono_us() - t0 < 50000);
	o->compile_us = since_us(t0) / (double)n;
	if (st != NG_OK) {
		(void)snprintf(o->msg, sizeof(o->msg), "%s", err.msg);
		return;
	}
	o->compiled = 1;
	t0 = ng_now_mono_us();
	n = 0;
	do {
		if (ng_regex_get(pattern, plen, &re, NULL) != NG_OK)
			abort();
		ng_regex_put(re);
		n++;
	} while (ng_now_mono_us() - t0 < 50000);
	(void)snprintf(o->msg, sizeof(o->msg), "cache hit %.2f us", since_us(t0) / (double)n);
	if (ng_regex_get(pattern, plen, &re, NULL) != NG_OK)
		abort();
	bool m = false;
	TIME_MATCHES(o, (st = ng_regex_match(re, subject, slen, &m, &err)) == NG_OK ? m : -1);
	if (st != NG_OK)
		(void)snprintf(o->msg, sizeof(o->msg), "%s", err.msg);
	ng_regex_put(re);
	ng_regex_teardown();
}

/* ---- one measurement per child ---- */

static void child(enum engine e, const char *pattern, const char *subject, int fd)
{
	(void)alarm(CHILD_SECONDS);
#ifndef BENCH_SANITIZED
	struct rlimit as = {CHILD_AS_BYTES, CHILD_AS_BYTES};
	(void)setrlimit(RLIMIT_AS, &as);
#endif
	struct outcome o = {.matched = -1};
	if (e == ENGINE_GLIBC)
		run_glibc(pattern, subject, &o);
	else if (e == ENGINE_NG)
		run_ng(pattern, subject, &o);
	else if (e != ENGINE_COUNT)
		run_pcre2(pattern, subject, e == ENGINE_PCRE2_LIM, &o);
	ssize_t w = write(fd, &o, sizeof(o));
	_exit(w == (ssize_t)sizeof(o) ? 0 : 1);
}

/* Runs engine @e (ENGINE_COUNT: do nothing) in a child. Returns its peak RSS in KiB, fills @o;
 * a child that died says how in o->msg. */
static long measure(enum engine e, const char *pattern, const char *subject, struct outcome *o)
{
	int fds[2];
	if (pipe(fds) != 0)
		abort();
	(void)fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		(void)close(fds[0]);
		child(e, pattern, subject, fds[1]);
	}
	(void)close(fds[1]);
	memset(o, 0, sizeof(*o));
	ssize_t got = read(fds[0], o, sizeof(*o));
	(void)close(fds[0]);
	int status = 0;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		abort();
	if (got != (ssize_t)sizeof(*o)) {
		memset(o, 0, sizeof(*o));
		o->compile_us = -1;
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): this process has one thread */
		const char *how = WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit";
		(void)snprintf(o->msg, sizeof(o->msg), "child died: %s", how);
	}
	return ru.ru_maxrss;
}

/* ---- the cases ---- */

static void nested(char *buf, size_t cap, int depth)
{
	size_t at = 0;
	for (int i = 0; i < depth && at + 1 < cap; i++)
		buf[at++] = '(';
	buf[at++] = 'a';
	for (int i = 0; i < depth && at + 1 < cap; i++)
		buf[at++] = ')';
	buf[at] = '\0';
}

static void print_row(const struct bench_case *c, enum engine e, const struct outcome *o,
		      long rss_kib)
{
	char result[32];
	if (o->compile_us < 0)
		(void)snprintf(result, sizeof(result), "died");
	else if (!o->compiled)
		(void)snprintf(result, sizeof(result), "refused");
	else
		(void)snprintf(result, sizeof(result), "%s",
			       o->matched > 0    ? "match"
			       : o->matched == 0 ? "no match"
						 : "error");
	(void)printf("%-14s %-9s %12.1f %12.2f %-9s %10ld %10.1f  %s\n", c->name, engine_names[e],
		     o->compile_us, o->compiled ? o->match_us : 0.0, result, rss_kib,
		     (double)o->peak_bytes / 1024.0, o->msg);
}

int main(int argc, char **argv)
{
	static char deep[512];
	nested(deep, sizeof(deep), 200);
	const struct bench_case cases[] = {
	    {"gpu-prefix", "nvidia.com/gpu-.*", "nvidia.com/gpu-a100", 1},
	    {"anchored-alt", "^example\\.com/(gpu|fpga)$", "example.com/fpga", 1},
	    {"dot-star", ".*", "ephemeral-storage", 1},
	    {"dns-253", "^([a-z0-9]+(-[a-z0-9]+)*\\.)+[a-z]+/gpu$", "ab-", 84},
	    {"nested-count", "((a{1,100}){1,100}){1,100}", "a", 40},
	    {"star-star", "(a*)*b", "a", 40},
	    {"x+x+", "(x+x+)+y", "x", 30},
	    {"x+x+-class", "(x+x+)+[yz]", "x", 30},
	    {"count-count", "a{1000}{1000}", "a", 1},
	    {"nest-200", deep, "a", 1},
	};
	const char *filter = argc > 1 ? argv[1] : NULL;
	struct outcome o;
	long idle = measure(ENGINE_COUNT, "", "", &o);
	(void)printf("idle child: %ld KiB peak RSS; columns: compile us, us per match, outcome, "
		     "peak RSS above idle (KiB), PCRE2 allocator peak (KiB)\n",
		     idle);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bench_case *c = &cases[i];
		if (filter && !strstr(c->name, filter))
			continue;
		char subject[256] = "";
		for (int k = 0; k < c->n; k++)
			(void)strncat(subject, c->unit, sizeof(subject) - 1 - strlen(subject));
		for (int e = 0; e < ENGINE_COUNT; e++) {
			long rss = measure((enum engine)e, c->pattern, subject, &o);
			print_row(c, (enum engine)e, &o, rss - idle);
		}
	}
	return 0;
}
