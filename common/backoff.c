#include "common/backoff.h"

#include "common/clock.h"

#include <unistd.h>

void ng_rng_seed(struct ng_rng *r, const char *salt)
{
	uint64_t s =
	    (uint64_t)ng_now_mono_us() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
	for (const char *p = salt; p && *p; p++)
		s = (s ^ (unsigned char)*p) * 0x100000001B3ull;
	r->s = s ? s : 1;
}

uint64_t ng_rng_next(struct ng_rng *r)
{
	if (!r->s)
		r->s = 1;
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

int64_t ng_jitter_ms(struct ng_rng *r, int64_t ms, int64_t below_pct, int64_t above_pct)
{
	if (ms <= 0)
		return ms;
	int64_t lo = ms - ms * below_pct / 100, hi = ms + ms * above_pct / 100;
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(ng_rng_next(r) % (uint64_t)(hi - lo + 1));
}

int64_t ng_backoff_ms(int64_t initial_ms, int64_t max_ms, uint32_t attempt)
{
	int64_t ms = initial_ms;
	for (uint32_t i = 0; i < attempt && ms < max_ms; i++)
		ms = ms > INT64_MAX / 2 ? INT64_MAX : ms * 2;
	return ms > max_ms ? max_ms : ms;
}
