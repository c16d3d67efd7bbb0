/* Retry timing shared by every loop that talks to the API server: capped exponential backoff
 * and jitter from a small per-thread generator. One implementation, so the watch, the lease,
 * the gate and the controllers to come back off the same way.
 *
 * Threads: a struct ng_rng belongs to one thread (or is guarded by its owner); the functions
 * keep no other state. */
#ifndef NG_COMMON_BACKOFF_H
#define NG_COMMON_BACKOFF_H

#include <stdint.h>

/* xorshift64*: jitter only needs to decorrelate replicas, not to be unpredictable. */
struct ng_rng {
	uint64_t s; /* never 0 once seeded */
};

/**
 * Seeds @r from the monotonic clock, the process id and @salt (borrowed, may be NULL: e.g. a
 * replica identity), so that replicas started together drift apart.
 */
void ng_rng_seed(struct ng_rng *r, const char *salt);

/** The next 64 pseudo-random bits. */
uint64_t ng_rng_next(struct ng_rng *r);

/**
 * @ms spread uniformly over [ms - ms * below_pct / 100, ms + ms * above_pct / 100]: ±20 % is
 * (20, 20); client-go's wait.Jitter(d, 1.2) is (0, 120). @ms <= 0 is returned unchanged.
 */
int64_t ng_jitter_ms(struct ng_rng *r, int64_t ms, int64_t below_pct, int64_t above_pct);

/**
 * Capped exponential backoff without jitter: @initial_ms doubled @attempt times, at most
 * @max_ms (attempt 0 is @initial_ms). Never overflows.
 */
int64_t ng_backoff_ms(int64_t initial_ms, int64_t max_ms, uint32_t attempt);

#endif
