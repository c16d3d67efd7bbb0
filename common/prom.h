/* The Prometheus text exposition format (version 0.0.4) for every module's /metrics series: a
 * family header, counter and gauge samples with escaped label values, histograms, and the
 * relaxed-atomic counters and duration histogram the samples are read from.
 *
 * Ownership: every pointer is borrowed for the duration of the call; text is appended to the
 * caller's struct ng_buf. Metric and label names are the caller's constants and are written as
 * given (they must already be valid Prometheus names); label values and HELP text are escaped.
 * Threads: the writers keep no state and are reentrant. The atomic helpers (ng_prom_add,
 * ng_prom_get, ng_prom_hist_observe_us) may be called from any thread at once with a render of
 * the same counters (STYLE.md B9 rule 1: metrics are relaxed atomics, read without a lock).
 * Errors: the writers return NG_ELIMIT or NG_ENOMEM from the buffer; a family that failed half
 * way may leave a partial line in the buffer, which the caller discards with the whole scrape. */
#ifndef NG_COMMON_PROM_H
#define NG_COMMON_PROM_H

#include "common/status.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ng_buf;

/* Most bounds an ng_prom_hist holds: our largest histogram (admission latency) has 12; the rest
 * is headroom for a finer one without an allocation per histogram. */
#define NG_PROM_MAX_BUCKETS 16

enum ng_prom_type {
	NG_PROM_COUNTER,
	NG_PROM_GAUGE,
	NG_PROM_HISTOGRAM,
};

/* One label of a sample. Both strings borrowed; @value is escaped when written. */
struct ng_prom_label {
	const char *name;
	const char *value;
};

/**
 * Appends "# HELP @name @help" and "# TYPE @name <type>" lines. Backslashes and newlines in
 * @help are escaped as the format requires.
 */
NG_NODISCARD ng_status ng_prom_header(struct ng_buf *out, const char *name, enum ng_prom_type type,
				      const char *help);

/**
 * Appends one sample line: `@name{l1="v1",...} @value`, or `@name @value` when @nlabels is 0.
 * @labels (borrowed, @nlabels entries; may be NULL when @nlabels is 0) are written in order.
 */
NG_NODISCARD ng_status ng_prom_u64(struct ng_buf *out, const char *name,
				   const struct ng_prom_label *labels, size_t nlabels,
				   uint64_t value);
/** As ng_prom_u64, for a signed value (a gauge such as a Unix time). */
NG_NODISCARD ng_status ng_prom_i64(struct ng_buf *out, const char *name,
				   const struct ng_prom_label *labels, size_t nlabels,
				   int64_t value);

/**
 * Appends @value as a quoted label value: backslash, double quote and newline escaped as
 * `\\`, `\"` and `\n`; every other byte as is (label values are UTF-8 by contract).
 */
NG_NODISCARD ng_status ng_prom_label_value(struct ng_buf *out, const char *value);

/* A histogram as read at one moment, for ng_prom_histogram. */
struct ng_prom_hist_data {
	const double *bounds;    /* upper bounds, ascending, in the unit of @sum; borrowed */
	const uint64_t *buckets; /* observations per bound, NOT cumulative; @nbounds entries */
	size_t nbounds;
	uint64_t count; /* every observation, including those above the last bound */
	double sum;     /* the observations' total; written with 6 decimals */
};

/**
 * Appends @name's series: `@name_bucket{labels,le="B"}` with the running total for every
 * bound (B written as printf "%g"), `le="+Inf"` with @h->count, then `@name_sum{labels}` and
 * `@name_count{labels}`. No HELP/TYPE lines: write them once per family with ng_prom_header.
 */
NG_NODISCARD ng_status ng_prom_histogram(struct ng_buf *out, const char *name,
					 const struct ng_prom_label *labels, size_t nlabels,
					 const struct ng_prom_hist_data *h);

/* A histogram of durations that any thread may record into: bucket counts are per bound (not
 * cumulative) and the sum is kept in whole microseconds, so every field is one relaxed atomic.
 * Set up with ng_prom_hist_init; it holds no resources, so there is nothing to finish. */
struct ng_prom_hist {
	const double *bounds_s; /* borrowed, static in practice; set by ng_prom_hist_init */
	size_t nbounds;
	_Atomic uint64_t buckets[NG_PROM_MAX_BUCKETS];
	_Atomic uint64_t count;
	_Atomic uint64_t sum_us;
};

/**
 * Initialises @h (caller storage) empty, with the upper bounds @bounds_s in seconds (ascending,
 * @nbounds <= NG_PROM_MAX_BUCKETS, asserted, and bounds past it are ignored; borrowed, must
 * outlive @h). Before other threads see @h.
 */
void ng_prom_hist_init(struct ng_prom_hist *h, const double *bounds_s, size_t nbounds);

/**
 * Records one duration of @us microseconds into the first bucket whose bound is >= it; one above
 * every bound only counts. A negative duration counts as 0 in the sum. Any thread.
 */
void ng_prom_hist_observe_us(struct ng_prom_hist *h, int64_t us);

/**
 * Reads @h (each field atomically; an observation recorded meanwhile may be half counted) and
 * appends it as ng_prom_histogram does, the sum in seconds. Any thread.
 */
NG_NODISCARD ng_status ng_prom_hist_render(struct ng_buf *out, const char *name,
					   const struct ng_prom_label *labels, size_t nlabels,
					   struct ng_prom_hist *h);

/** Adds @n to the counter @c. Relaxed: counters order nothing. Any thread. */
static inline void ng_prom_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/** Reads the counter @c. Any thread. */
static inline uint64_t ng_prom_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
