/* Clocks. Durations are int64_t with the unit in the name (STYLE.md B4). */
#ifndef NG_COMMON_CLOCK_H
#define NG_COMMON_CLOCK_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/** Monotonic clock in microseconds (for durations). */
int64_t ng_now_mono_us(void);
/** Wall clock in milliseconds since the epoch. */
int64_t ng_now_wall_ms(void);
/* The instants RFC 3339 can write in UTC, 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z:
 * its years have four digits. */
#define NG_RFC3339_MIN_MS (-62167219200000LL)
#define NG_RFC3339_MAX_MS 253402300799999LL

/**
 * Writes @wall_ms as RFC 3339 UTC with milliseconds ("2026-11-22T05:00:00.123Z") into @out,
 * which must hold 25 bytes. An instant outside NG_RFC3339_MIN_MS..NG_RFC3339_MAX_MS (which
 * ng_parse_rfc3339_ms() reads from a year 0000 or 9999 with an offset) is written as the nearest
 * of the two. Returns the length written (24).
 */
size_t ng_format_rfc3339_ms(int64_t wall_ms, char *out);
/**
 * Parses an RFC 3339 timestamp as Kubernetes writes it ("2026-11-22T05:00:00Z", optional
 * fraction, 'Z' or ±hh:mm offset). Writes milliseconds since the epoch to @ret_ms (only on
 * success). NG_EPARSE on malformed input.
 */
NG_NODISCARD ng_status ng_parse_rfc3339_ms(const char *s, size_t len, int64_t *ret_ms);

#endif
