/* Regular expressions that users write (spec.drain.podEvictionFilters[].byResourceNameRegex):
 * the one place such a pattern is compiled and matched. The engine is PCRE2 (docs/benchmarks.md
 * says why); pcre2.h is included nowhere else in nodegate.
 *
 * Dialect: PCRE2 with PCRE2_UTF (pattern and subject must be valid UTF-8) and
 * PCRE2_DOLLAR_ENDONLY, which reads the RE2 syntax Kubernetes users write (Go's regexp) with
 * the same meaning for what patterns use. Matching is an unanchored search, like Go's
 * regexp.MatchString: write ^…$ to match a whole name. Refused, as RE2 has none of them and they
 * make matching expensive: backreferences (\1, \k<name>), recursion and subroutine calls ((?R),
 * (?1), (?&name), \g<name>); and \C.
 *
 * Bounds: a compile sees at most NG_REGEX_MAX_BYTES of pattern, parentheses nested at most
 * NG_REGEX_MAX_NEST deep and NG_REGEX_COMPILE_BYTES of memory, so a pattern bomb is refused in
 * microseconds; a match stops after NG_REGEX_MATCH_STEPS backtracking steps, a backtracking depth
 * of NG_REGEX_MATCH_DEPTH or NG_REGEX_MATCH_HEAP_KIB of heap, with an error that is not "no
 * match".
 *
 * Cache: compiled patterns are kept for the process, keyed by their text and shared by every
 * caller (the webhooks, the drainer); refused patterns are kept too, with their error, so a
 * refused pattern sent again costs a hash lookup. At most NG_REGEX_CACHE_ENTRIES patterns and
 * NG_REGEX_CACHE_BYTES: a new pattern drops the oldest ones as needed.
 *
 * Ownership and threads: any thread. ng_regex_get() returns a counted reference to an immutable
 * compiled pattern; it stays valid, even if the cache drops it meanwhile, until the caller gives
 * it back with ng_regex_put(). ng_regex_get() and ng_regex_put() take one process-wide mutex (a
 * compile runs under it: the bounds keep it to microseconds); ng_regex_match() takes no lock, so
 * any number of threads may match with the same reference at once.
 *
 * Errors: ng_status and a message in @reterr that starts with a verb, for the caller to prefix
 * with the field ("spec…byResourceNameRegex: does not compile: …"): NG_EPARSE "does not compile:
 * <PCRE2's message> at offset N" (offset also in reterr->offset); NG_ELIMIT "is too long (…)" or
 * "is too complex (…)" naming the bound; NG_ENOMEM. */
#ifndef NG_COMMON_REGEX_H
#define NG_COMMON_REGEX_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest pattern: resource-name patterns are tens of bytes. At least the decoder's limit on the
 * field (KUBE_MAX_REGEX_BYTES), so every pattern it accepts gets here. */
#define NG_REGEX_MAX_BYTES 1024u
/* Deepest nesting of parentheses: real patterns nest two or three deep. PCRE2's default of 250
 * lets 200 nested groups compile and cost 1.5 MiB and 9 µs per match. */
#define NG_REGEX_MAX_NEST 32u
/* Memory one compile may allocate, the compiled pattern included: a 1 KiB pattern compiles to a
 * few KiB. PCRE2 as Debian builds it (link size 2) refuses compiled forms over 64 KiB itself, so
 * this bounds the compile's working memory, and the compiled form of a PCRE2 built otherwise. */
#define NG_REGEX_COMPILE_BYTES (256u * 1024u)
/* Backtracking steps one match may take: PCRE2's match() calls, about 10 ns each, so ~1 ms. A
 * benign pattern takes a few hundred on a 253-byte name; PCRE2's default (10 M) is 0.1 s. */
#define NG_REGEX_MATCH_STEPS 100000u
/* Backtracking depth: `(a|b|c)*` takes two per character, and names are at most 317 bytes. */
#define NG_REGEX_MATCH_DEPTH 5000u
/* Heap for one match's backtracking frames (PCRE2 starts with 20 KiB). */
#define NG_REGEX_MATCH_HEAP_KIB 1024u
/* Patterns kept: a cluster's NodeDisruptions use a handful of distinct filters. An entry is the
 * pattern, its error and its compiled form: ~1 KiB typically, but a 19-byte pattern such as
 * (\pL|\pN|\pP){1000} compiles to 23 KiB, so the cache's memory is capped as well. */
#define NG_REGEX_CACHE_ENTRIES 512u
#define NG_REGEX_CACHE_BYTES (8u * 1024u * 1024u)

/* A compiled pattern, immutable and shared. */
struct ng_regex;

/**
 * Looks up @pattern (@len bytes, no NUL needed) in the cache, compiling it on the first use.
 * NG_OK: *@ret is a reference the caller gives back with ng_regex_put(). Otherwise *@ret is
 * NULL and @reterr (may be NULL) says why: NG_EPARSE (does not compile, or uses a refused
 * construct), NG_ELIMIT (too long, too complex), NG_ENOMEM (not cached: the next get tries
 * again), NG_EINVAL (@pattern NULL with @len > 0).
 */
NG_NODISCARD ng_status ng_regex_get(const char *pattern, size_t len, struct ng_regex **ret,
				    struct ng_err *reterr);

/** Gives back a reference from ng_regex_get(). Accepts NULL. */
void ng_regex_put(struct ng_regex *re);

/**
 * Whether @pattern compiles: ng_regex_get() and ng_regex_put() for callers that only check (the
 * admission webhook). The compiled pattern stays cached for whoever matches with it next.
 */
NG_NODISCARD ng_status ng_regex_check(const char *pattern, size_t len, struct ng_err *reterr);

/**
 * Searches @subject (@len bytes) for a match of @re anywhere in it. NG_OK: *@ret_matched says
 * whether it matched. Otherwise *@ret_matched is false and the match is undecided: NG_ELIMIT
 * "is too complex (… limit … reached)" when a bound stopped it, NG_EPARSE when @subject is not
 * valid UTF-8 (the offset in @reterr), NG_ENOMEM. Callers treat an undecided match as no match
 * and log the error. No lock; any thread.
 */
NG_NODISCARD ng_status ng_regex_match(const struct ng_regex *re, const char *subject, size_t len,
				      bool *ret_matched, struct ng_err *reterr);

/* What ng_regex_get_label_matcher() adds around a pattern: "^(?s:" and ")$". */
#define NG_REGEX_LABEL_MATCHER_EXTRA_BYTES 7u

/**
 * Looks up @pattern (@len bytes) as Prometheus matches a label value with it (`=~`): fully
 * anchored, with `.` matching every character, newlines included. Prometheus 3 compiles a
 * matcher as "^(?s:" pattern ")$" (model/labels/regexp.go, NewFastRegexMatcher), and so does
 * this; `$` is the end of the subject (PCRE2_DOLLAR_ENDONLY, as in Go). @pattern must compile on
 * its own as well, so that no pattern reaches outside the group (an unclosed \Q, a comment) and
 * an error's offset is the pattern's own. NG_OK: *@ret as from ng_regex_get(). Errors as
 * ng_regex_get(); NG_ELIMIT when @len is over NG_REGEX_MAX_BYTES minus the wrapping.
 */
NG_NODISCARD ng_status ng_regex_get_label_matcher(const char *pattern, size_t len,
						  struct ng_regex **ret, struct ng_err *reterr);

/** The text @re was compiled from (NUL-terminated, valid as long as the reference). */
const char *ng_regex_pattern(const struct ng_regex *re, size_t *ret_len);

struct ng_regex_stats {
	uint64_t compiles;  /* pcre2_compile() calls */
	uint64_t refused;   /* of which refused (cached with their error) */
	uint64_t hits;      /* gets answered from the cache, compiled or refused */
	uint64_t evictions; /* entries dropped to make room */
	uint32_t entries;   /* patterns cached now */
	size_t bytes;       /* their memory: entries, pattern text, compiled forms */
};

/** A consistent copy of the cache's counters (for tests and metrics). */
void ng_regex_stats(struct ng_regex_stats *ret);

/**
 * Empties the cache and zeroes the counters: for tests, and for the process's exit so leak
 * checkers see nothing left. References still held stay valid and are freed by their
 * ng_regex_put(). Any thread; the cache is usable again afterwards.
 */
void ng_regex_teardown(void);

#endif
