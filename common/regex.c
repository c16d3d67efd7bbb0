#define PCRE2_CODE_UNIT_WIDTH 8

#include "common/regex.h"

#include "common/buf.h"
#include "common/map.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Compile options: UTF-8 pattern and subjects, checked; `$` is the end of the text as in RE2,
 * not also before a final newline; no \C (one byte, whatever the UTF-8 around it). */
#define COMPILE_OPTIONS (PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C)
/* Hash buckets: twice the entries, a power of two. */
#define NBUCKETS (2u * NG_REGEX_CACHE_ENTRIES)

/* Memory a compile allocates, counted against a cap. Each block carries its size in a header
 * so that frees (including pcre2_code_free() long after the compile) count down. */
struct meter {
	size_t used, cap;
	bool capped; /* an allocation was refused for the cap (not for malloc) */
};

/* One cached pattern. Immutable once in the cache, but for @refs and the links, which only
 * change under the cache's lock. */
struct ng_regex {
	struct ng_regex *next;          /* hash bucket chain */
	struct ng_regex *older, *newer; /* insertion order, for eviction */
	uint64_t hash;
	uint32_t refs; /* the cache's (while cached) + each ng_regex_get() */
	bool cached;
	struct meter meter; /* what @code and @mctx hold */
	pcre2_code *code;   /* NULL: refused, see @err */
	pcre2_match_context *mctx;
	struct ng_err err;
	size_t len;
	char pattern[]; /* @len bytes and a NUL */
};

static struct {
	pthread_mutex_t lock;
	struct ng_regex *buckets[NBUCKETS];
	struct ng_regex *oldest, *newest;
	struct ng_regex_stats stats;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the compile's allocator ---- */

#define HDR 16 /* keeps malloc's alignment for what PCRE2 puts after the header */

static void *meter_malloc(PCRE2_SIZE n, void *data)
{
	struct meter *m = data;
	if (n > m->cap - m->used) {
		m->capped = true;
		return NULL;
	}
	unsigned char *p = malloc(HDR + n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	m->used += n;
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

/* ---- compiling ---- */

/* @code from pcre2_compile() at @off as the refusal in @e: a bound is NG_ELIMIT, anything else
 * the pattern's syntax (NG_EPARSE). NG_ENOMEM when malloc failed, not the cap. */
static ng_status compile_error(int code, size_t off, const struct meter *m, struct ng_err *e)
{
	char why[128];
	if (pcre2_get_error_message(code, (PCRE2_UCHAR *)why, sizeof(why)) < 0)
		ng_fmt(why, sizeof(why), "PCRE2 error %d", code);
	switch (code) {
	case PCRE2_ERROR_PARENTHESES_NEST_TOO_DEEP:
		return ng_err_set(e, NG_ELIMIT, off,
				  "is too complex (parentheses nested more than %u deep)",
				  NG_REGEX_MAX_NEST);
	case PCRE2_ERROR_HEAP_FAILED:
		if (!m->capped)
			return ng_err_set(e, NG_ENOMEM, off, "out of memory");
		return ng_err_set(e, NG_ELIMIT, off,
				  "is too complex (compiling it needs more than the %u KiB limit)",
				  NG_REGEX_COMPILE_BYTES / 1024u);
	case PCRE2_ERROR_PATTERN_TOO_LARGE:
	case PCRE2_ERROR_PATTERN_TOO_COMPLICATED:
	case PCRE2_ERROR_PARENTHESES_STACK_CHECK:
		return ng_err_set(e, NG_ELIMIT, off, "is too complex (%s)", why);
	default:
		return ng_err_set(e, NG_EPARSE, off, "does not compile: %s at offset %zu", why,
				  off);
	}
}

/* Whether @s (@len bytes) calls a group: (?R), (?1), (?+1), (?-1), (?&name), (?P>name),
 * \g<…>, \g'…'. Returns its offset, or @len. A plain scan that skips escaped characters: it
 * cannot miss a call, and may refuse one written inside a class or \Q…\E (no name needs that). */
static size_t subroutine_call(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\') {
			if (i + 2 < len && s[i + 1] == 'g' && (s[i + 2] == '<' || s[i + 2] == '\''))
				return i;
			/* \c takes the next character, a backslash included. */
			i += i + 1 < len && s[i + 1] == 'c' ? 2 : 1;
			continue;
		}
		if (s[i] != '(' || i + 2 >= len || s[i + 1] != '?')
			continue;
		char c = s[i + 2], d = i + 3 < len ? s[i + 3] : '\0';
		if (c == 'R' || c == '&' || (c >= '0' && c <= '9') ||
		    ((c == '+' || c == '-') && d >= '0' && d <= '9') || (c == 'P' && d == '>'))
			return i;
	}
	return len;
}

/* Refuses a compiled pattern that uses what RE2 does not have and makes matching expensive:
 * backreferences (exponential), recursion and subroutine calls (deep, and can loop). */
static ng_status refuse_constructs(struct ng_regex *e)
{
	uint32_t backrefs = 0;
	size_t call = subroutine_call(e->pattern, e->len);
	if (pcre2_pattern_info(e->code, PCRE2_INFO_BACKREFMAX, &backrefs) != 0)
		backrefs = 0;
	if (!backrefs && call == e->len)
		return NG_OK;
	pcre2_code_free(e->code);
	e->code = NULL;
	if (backrefs)
		return ng_err_set(&e->err, NG_EPARSE, 0,
				  "does not compile: backreferences (\\%u) are not supported (RE2 "
				  "syntax has none, and they make matching exponential)",
				  backrefs);
	return ng_err_set(&e->err, NG_EPARSE, call,
			  "does not compile: recursion and subroutine calls are not supported (RE2 "
			  "syntax has none) at offset %zu",
			  call);
}

/* Compiles @e->pattern into @e: its code and match context, or the refusal in @e->err.
 * NG_ENOMEM when malloc failed (the entry is not to be cached), NG_OK otherwise. */
static ng_status compile_entry(struct ng_regex *e)
{
	e->meter.cap = NG_REGEX_COMPILE_BYTES;
	pcre2_general_context *g =
	    pcre2_general_context_create(meter_malloc, meter_free, &e->meter);
	pcre2_compile_context *cc = g ? pcre2_compile_context_create(g) : NULL;
	ng_status st = NG_ENOMEM;
	if (cc) {
		(void)pcre2_set_parens_nest_limit(cc, NG_REGEX_MAX_NEST);
		(void)pcre2_set_max_pattern_length(cc, NG_REGEX_MAX_BYTES);
		int code;
		PCRE2_SIZE off;
		e->code =
		    pcre2_compile((PCRE2_SPTR)e->pattern, e->len, COMPILE_OPTIONS, &code, &off, cc);
		/* PCRE2 can point past the end: "(*LIMIT_MATCH=10" (16 bytes) says 17. */
		size_t at = (size_t)off < e->len ? (size_t)off : e->len;
		st = e->code ? refuse_constructs(e) : compile_error(code, at, &e->meter, &e->err);
	}
	pcre2_compile_context_free(cc);
	pcre2_general_context_free(g);
	if (st != NG_OK || !e->code)
		return st == NG_ENOMEM ? NG_ENOMEM : NG_OK;
	/* Plain malloc for matching: matches run on many threads at once, the meter is not
	 * shared, and the heap limit bounds what a match takes. */
	e->mctx = pcre2_match_context_create(NULL);
	if (!e->mctx)
		return NG_ENOMEM;
	(void)pcre2_set_match_limit(e->mctx, NG_REGEX_MATCH_STEPS);
	(void)pcre2_set_depth_limit(e->mctx, NG_REGEX_MATCH_DEPTH);
	(void)pcre2_set_heap_limit(e->mctx, NG_REGEX_MATCH_HEAP_KIB);
	return NG_OK;
}

static size_t entry_bytes(const struct ng_regex *e)
{
	return sizeof(*e) + e->len + 1 + e->meter.used;
}

/* Frees @e and the entries chained after it through @next (unlinked, unreferenced). */
static void entry_free(struct ng_regex *e)
{
	while (e) {
		struct ng_regex *next = e->next;
		pcre2_match_context_free(e->mctx);
		pcre2_code_free(e->code); /* through e->meter, which is still here */
		free(e);
		e = next;
	}
}

/* ---- the cache (callers hold cache.lock) ---- */

static struct ng_regex **bucket_of(uint64_t hash)
{
	return &cache.buckets[hash & (NBUCKETS - 1)];
}

static struct ng_regex *find(const char *pattern, size_t len, uint64_t hash)
{
	for (struct ng_regex *e = *bucket_of(hash); e; e = e->next)
		if (e->hash == hash && e->len == len && memcmp(e->pattern, pattern, len) == 0)
			return e;
	return NULL;
}

/* Drops @e's reference; returns @e when that was the last one (the caller frees it after
 * unlocking), else NULL. */
static struct ng_regex *unref(struct ng_regex *e)
{
	return --e->refs == 0 ? e : NULL;
}

/* Takes @e out of the table and the age list and drops the cache's reference. Returns @e when
 * it is to be freed, as unref(). */
static struct ng_regex *unlink_entry(struct ng_regex *e)
{
	struct ng_regex **p = bucket_of(e->hash);
	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	if (e->older)
		e->older->newer = e->newer;
	else
		cache.oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		cache.newest = e->older;
	e->next = e->older = e->newer = NULL;
	e->cached = false;
	cache.stats.entries--;
	cache.stats.bytes -= entry_bytes(e);
	return unref(e);
}

/* Adds @e as the newest entry, first unlinking the oldest ones while the cache is full (entries
 * or bytes). Returns those of them that are to be freed, chained through @next. */
static struct ng_regex *insert(struct ng_regex *e)
{
	struct ng_regex *dead = NULL;
	while (cache.oldest && (cache.stats.entries >= NG_REGEX_CACHE_ENTRIES ||
				entry_bytes(e) > NG_REGEX_CACHE_BYTES - cache.stats.bytes)) {
		struct ng_regex *d = unlink_entry(cache.oldest);
		cache.stats.evictions++;
		if (d) {
			d->next = dead;
			dead = d;
		}
	}
	struct ng_regex **b = bucket_of(e->hash);
	e->next = *b;
	*b = e;
	e->older = cache.newest;
	if (cache.newest)
		cache.newest->newer = e;
	else
		cache.oldest = e;
	cache.newest = e;
	e->cached = true;
	e->refs++;
	cache.stats.entries++;
	cache.stats.bytes += entry_bytes(e);
	return dead;
}

/* The answer for cached @e: a reference, or its refusal copied to @reterr. */
static ng_status answer(struct ng_regex *e, struct ng_regex **ret, struct ng_err *reterr)
{
	if (e->code) {
		e->refs++;
		*ret = e;
		return NG_OK;
	}
	if (reterr)
		*reterr = e->err;
	return e->err.status;
}

/* Compiles @pattern into a new entry and caches it, compiled or refused (not on NG_ENOMEM);
 * @dead gets an evicted entry to free. */
static ng_status compile_and_insert(const char *pattern, size_t len, uint64_t hash,
				    struct ng_regex **ret, struct ng_regex **dead,
				    struct ng_err *reterr)
{
	struct ng_regex *e = calloc(1, sizeof(*e) + len + 1);
	if (!e)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	if (len)
		memcpy(e->pattern, pattern, len);
	e->len = len;
	e->hash = hash;
	cache.stats.compiles++;
	if (compile_entry(e) != NG_OK) {
		entry_free(e);
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	}
	if (!e->code)
		cache.stats.refused++;
	*dead = insert(e);
	return answer(e, ret, reterr);
}

/* ---- the API ---- */

ng_status ng_regex_get(const char *pattern, size_t len, struct ng_regex **ret,
		       struct ng_err *reterr)
{
	*ret = NULL;
	if (!pattern && len)
		return ng_err_set(reterr, NG_EINVAL, 0, "no pattern");
	pattern = pattern ? pattern : "";
	if (len > NG_REGEX_MAX_BYTES)
		return ng_err_set(reterr, NG_ELIMIT, NG_REGEX_MAX_BYTES,
				  "is too long (%zu bytes; at most %u)", len, NG_REGEX_MAX_BYTES);
	uint64_t hash = ng_fnv1a64(NG_FNV64_INIT, pattern, len);
	struct ng_regex *dead = NULL;
	ng_status st;
	(void)pthread_mutex_lock(&cache.lock);
	struct ng_regex *e = find(pattern, len, hash);
	if (e) {
		cache.stats.hits++;
		st = answer(e, ret, reterr);
	} else {
		st = compile_and_insert(pattern, len, hash, ret, &dead, reterr);
	}
	(void)pthread_mutex_unlock(&cache.lock);
	entry_free(dead);
	return st;
}

void ng_regex_put(struct ng_regex *re)
{
	if (!re)
		return;
	(void)pthread_mutex_lock(&cache.lock);
	struct ng_regex *dead = unref(re);
	(void)pthread_mutex_unlock(&cache.lock);
	entry_free(dead);
}

ng_status ng_regex_check(const char *pattern, size_t len, struct ng_err *reterr)
{
	struct ng_regex *re;
	ng_status st = ng_regex_get(pattern, len, &re, reterr);
	ng_regex_put(re);
	return st;
}

ng_status ng_regex_get_label_matcher(const char *pattern, size_t len, struct ng_regex **ret,
				     struct ng_err *reterr)
{
	*ret = NULL;
	const size_t max = NG_REGEX_MAX_BYTES - NG_REGEX_LABEL_MATCHER_EXTRA_BYTES;
	if (len > max)
		return ng_err_set(reterr, NG_ELIMIT, max, "is too long (%zu bytes; at most %zu)",
				  len, max);
	ng_status st = ng_regex_check(pattern, len, reterr);
	if (st != NG_OK)
		return st;
	char wrapped[NG_REGEX_MAX_BYTES];
	memcpy(wrapped, "^(?s:", 5);
	if (len)
		memcpy(wrapped + 5, pattern, len);
	memcpy(wrapped + 5 + len, ")$", 2);
	return ng_regex_get(wrapped, len + NG_REGEX_LABEL_MATCHER_EXTRA_BYTES, ret, reterr);
}

/* A pcre2_match() failure other than "no match" as an error. */
static ng_status match_error(int rc, pcre2_match_data *md, struct ng_err *reterr)
{
	if (rc == PCRE2_ERROR_MATCHLIMIT)
		return ng_err_set(reterr, NG_ELIMIT, 0,
				  "is too complex (match limit of %u steps reached)",
				  NG_REGEX_MATCH_STEPS);
	if (rc == PCRE2_ERROR_DEPTHLIMIT)
		return ng_err_set(reterr, NG_ELIMIT, 0,
				  "is too complex (match depth limit of %u reached)",
				  NG_REGEX_MATCH_DEPTH);
	if (rc == PCRE2_ERROR_HEAPLIMIT)
		return ng_err_set(reterr, NG_ELIMIT, 0,
				  "is too complex (match heap limit of %u KiB reached)",
				  NG_REGEX_MATCH_HEAP_KIB);
	if (rc == PCRE2_ERROR_NOMEMORY)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	char why[128];
	if (pcre2_get_error_message(rc, (PCRE2_UCHAR *)why, sizeof(why)) < 0)
		ng_fmt(why, sizeof(why), "PCRE2 error %d", rc);
	if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
		size_t at = (size_t)pcre2_get_startchar(md);
		return ng_err_set(reterr, NG_EPARSE, at,
				  "cannot match a name that is not UTF-8: %s at offset %zu", why,
				  at);
	}
	return ng_err_set(reterr, NG_EPARSE, 0, "cannot match: %s", why);
}

ng_status ng_regex_match(const struct ng_regex *re, const char *subject, size_t len,
			 bool *ret_matched, struct ng_err *reterr)
{
	*ret_matched = false;
	if (!re || (!subject && len))
		return ng_err_set(reterr, NG_EINVAL, 0, "no pattern or no subject");
	/* One ovector pair: whether it matched is all we ask. */
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	if (!md)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	int rc =
	    pcre2_match(re->code, (PCRE2_SPTR)(subject ? subject : ""), len, 0, 0, md, re->mctx);
	ng_status st = NG_OK;
	if (rc >= 0)
		*ret_matched = true;
	else if (rc != PCRE2_ERROR_NOMATCH)
		st = match_error(rc, md, reterr);
	pcre2_match_data_free(md);
	return st;
}

const char *ng_regex_pattern(const struct ng_regex *re, size_t *ret_len)
{
	if (ret_len)
		*ret_len = re->len;
	return re->pattern;
}

void ng_regex_stats(struct ng_regex_stats *ret)
{
	(void)pthread_mutex_lock(&cache.lock);
	*ret = cache.stats;
	(void)pthread_mutex_unlock(&cache.lock);
}

void ng_regex_teardown(void)
{
	struct ng_regex *dead = NULL;
	(void)pthread_mutex_lock(&cache.lock);
	while (cache.oldest) {
		struct ng_regex *e = unlink_entry(cache.oldest);
		if (e) {
			e->next = dead; /* freed once unlocked */
			dead = e;
		}
	}
	memset(&cache.stats, 0, sizeof(cache.stats));
	(void)pthread_mutex_unlock(&cache.lock);
	entry_free(dead);
}
