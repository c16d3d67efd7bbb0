/* libFuzzer target for TZif zones, common/tz (STYLE.md B12 "Fuzz").
 *
 * Input: the bytes of a zone file, given to ng_tz_parse(). Whatever the input:
 * - a refusal is NG_EPARSE (or NG_ENOMEM) with a non-empty message, and leaves the output as
 *   it was;
 * - parsing twice gives the same offsets;
 * - every offset ng_tz_offset() gives, at fixed instants, at the extremes and at an instant
 *   taken from the input's last 8 bytes, is within the zone's ng_tz_offset_range() and within
 *   +-NG_TZ_MAX_OFFSET_S; ng_tz_offset_range_in() over a day holds the offsets at its ends;
 * - ng_tz_from_local() gives an instant l - o with o in that range;
 * - a weekday schedule read on the zone ("0 22 * * 1-5") always fires, at or after the instant
 *   asked, within the search horizon, and asking again from the firing gives the firing.
 * Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "common/cron.h"
#include "common/status.h"
#include "common/tz.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_tz *tz = (struct ng_tz *)&tz, *again = NULL;
	struct ng_err err = {0};
	ng_status st = ng_tz_parse(data, size, &tz, &err);
	if (st != NG_OK) {
		check(st == NG_EPARSE || st == NG_ENOMEM);
		check(err.status == st && err.msg[0] != '\0' && err.offset <= size);
		check(tz == (struct ng_tz *)&tz);
		return 0;
	}
	check(ng_tz_parse(data, size, &again, NULL) == NG_OK);

	int64_t tail = 0;
	if (size >= 8)
		for (int i = 0; i < 8; i++)
			tail = (int64_t)((uint64_t)tail << 8 | data[size - 8 + (size_t)i]);
	const int64_t at[] = {
	    0,
	    -1,
	    INT64_MIN,
	    INT64_MAX,
	    -(INT64_C(1) << 31),
	    INT64_C(1) << 31,
	    1774746000 /* 2026-03-29 */,
	    INT64_C(4118083200) /* 2100 */,
	    tail,
	    tail / 1000,
	};
	int32_t min, max;
	ng_tz_offset_range(tz, &min, &max);
	check(min <= max && min >= -NG_TZ_MAX_OFFSET_S && max <= NG_TZ_MAX_OFFSET_S);
	struct ng_cron c;
	check(ng_cron_parse("0 22 * * 1-5", &c, NULL) == NG_OK);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		int32_t o = ng_tz_offset(tz, at[i]);
		check(o >= min && o <= max);
		check(o == ng_tz_offset(again, at[i]));
		int64_t l = at[i] / 2;
		int64_t t = ng_tz_from_local(tz, l);
		check(t == ng_tz_from_local(again, l));
		int64_t lc = l < -(INT64_C(1) << 40)  ? -(INT64_C(1) << 40)
			     : l > (INT64_C(1) << 40) ? (INT64_C(1) << 40)
						      : l;
		check(lc - t >= min && lc - t <= max);
		int64_t a = at[i] / 4, b = a + 86400;
		int32_t rmin, rmax;
		ng_tz_offset_range_in(tz, a, b, &rmin, &rmax);
		check(rmin >= min && rmax <= max && rmin <= rmax);
		int32_t oa = ng_tz_offset(tz, a), ob = ng_tz_offset(tz, b);
		check(oa >= rmin && oa <= rmax && ob >= rmin && ob <= rmax);

		int64_t from_ms = (at[i] / 1000) % (INT64_C(1) << 38) * 1000;
		int64_t next = ng_cron_next(&c, tz, from_ms);
		check(next >= from_ms &&
		      next - from_ms <= NG_CRON_HORIZON_DAYS * INT64_C(86400000));
		check(ng_cron_next(&c, tz, next) == next);
	}
	ng_tz_free(again);
	ng_tz_free(tz);
	return 0;
}
