/* libFuzzer target for cron schedules and maintenance windows, common/cron (STYLE.md B12
 * "Fuzz").
 *
 * Input: a schedule (up to 1 KiB, NUL-terminated by the harness; bytes after a NUL are ignored,
 * as a C string ends there). Whatever the input:
 * - a refusal is NG_EPARSE, or NG_ELIMIT exactly when the text is over NG_CRON_MAX_BYTES, with
 *   a message starting "schedule: ", and leaves the output as it was;
 * - an accepted schedule has every field non-empty and within its range (a day-of-week field
 *   may hold only ranked days, "sun#1"), parses the same twice,
 *   and fires (in UTC) within the horizon from every instant tried: on a whole minute, at or
 *   after the instant, at a minute the schedule names, and asking again from the firing gives
 *   it back; the last firing at or before the instant (ng_cron_prev()) is one, and the next
 *   firing after it comes after the instant;
 * - ng_window_at() agrees: open means opened <= now < closes (or closes -1: never) with opened
 *   a firing; closed means the next opening is the next firing; either costs at most
 *   NG_WINDOW_MAX_JUMPS + 2 searches.
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

/* Whether UTC minute @t_ms is one @c names. */
static bool names_minute(const struct ng_cron *c, int64_t t_ms)
{
	int64_t s = t_ms / 1000, day = s / 86400 - (s % 86400 < 0);
	int64_t sod = s - day * 86400, y;
	unsigned m, d;
	ng_civil_from_days(day, &y, &m, &d);
	bool dom = c->days & (UINT32_C(1) << d);
	unsigned wd = ng_weekday_from_days(day);
	bool dow = c->weekdays & (1u << wd);
	/* A ranked weekday: the how-many-th of its kind the day is, counted from the 1st; the
	 * last when a week later is another month. */
	unsigned rank = (d + 6) / 7;
	if (c->nth & (UINT64_C(1) << (wd * 8 + rank)))
		dow = true;
	if ((c->nth & (UINT64_C(1) << (wd * 8 + NG_CRON_LAST))) && d + 7 > ng_days_in_month(y, m))
		dow = true;
	bool day_ok = !c->days_star && !c->weekdays_star ? dom || dow : dom && dow;
	return day_ok && (c->months & (1u << m)) && (c->hours & (UINT32_C(1) << (sod / 3600))) &&
	       (c->minutes & (UINT64_C(1) << (sod % 3600 / 60)));
}

static bool same(const struct ng_cron *a, const struct ng_cron *b)
{
	return a->minutes == b->minutes && a->hours == b->hours && a->days == b->days &&
	       a->months == b->months && a->weekdays == b->weekdays && a->nth == b->nth &&
	       a->days_star == b->days_star && a->weekdays_star == b->weekdays_star;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1024)
		return 0;
	char s[1025];
	memcpy(s, data, size);
	s[size] = '\0';
	size_t len = strlen(s);

	/* Prefilled with values no schedule gives (minute 63), to see that a refusal leaves it. */
	const struct ng_cron before = {UINT64_MAX, 0xadadadad, 0xadadadad, 0xadad,
				       0xad,       UINT64_MAX, true,       true};
	struct ng_cron c = before, again;
	struct ng_err err = {0};
	ng_status st = ng_cron_parse(s, &c, &err);
	if (len > NG_CRON_MAX_BYTES)
		check(st == NG_ELIMIT);
	if (st != NG_OK) {
		check(st == NG_EPARSE || st == NG_ELIMIT);
		check(st != NG_ELIMIT || len > NG_CRON_MAX_BYTES);
		check(err.status == st && strncmp(err.msg, "schedule: ", 10) == 0);
		check(same(&c, &before));
		return 0;
	}
	check(c.minutes && c.minutes < UINT64_C(1) << 60);
	check(c.hours && c.hours < UINT32_C(1) << 24);
	check(c.days && !(c.days & 1));
	check(c.months && !(c.months & 1) && c.months < 1u << 13);
	check((c.weekdays || c.nth) && c.weekdays < 1u << 7);
	for (unsigned d = 0; d < 8; d++) /* ranks 1-5 and last, of weekdays 0-6 */
		check(((c.nth >> (d * 8)) & 0xff & ~0x7eu) == 0 && (d < 7 || !(c.nth >> 56)));
	check(ng_cron_parse(s, &again, NULL) == NG_OK);
	check(same(&again, &c));

	const struct ng_tz *utc = NULL;
	check(ng_tz_get("UTC", &utc, NULL) == NG_OK);
	const int64_t from[] = {0, 1774746000123 /* 2026-03-29 */, -1, 4102444799999 /* 2099 */};
	const int64_t durations[] = {1, 60000, 8 * 3600000, 40 * 86400000LL};
	for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
		int64_t next = ng_cron_next(&c, utc, from[i]);
		check(next >= from[i] && next % 60000 == 0);
		check(next - from[i] <= NG_CRON_HORIZON_DAYS * INT64_C(86400000));
		check(names_minute(&c, next));
		check(ng_cron_next(&c, utc, next) == next);
		check(ng_cron_next(&c, utc, next - 1) == next || next - 1 < from[i]);
		/* The last firing at or before: one, and nothing fires after it until then. */
		int64_t prev = ng_cron_prev(&c, utc, from[i]);
		check(prev != -1 && prev <= from[i] && names_minute(&c, prev));
		check(ng_cron_next(&c, utc, prev) == prev &&
		      ng_cron_next(&c, utc, prev + 1) > from[i]);
		for (size_t k = 0; k < sizeof(durations) / sizeof(durations[0]); k++) {
			struct ng_window_at w;
			int64_t now = from[i];
			ng_window_at(&c, utc, durations[k], now, &w);
			if (w.open) {
				check(w.opened_ms <= now &&
				      (now < w.closes_ms || w.closes_ms == -1));
				check(now - w.opened_ms < durations[k]);
				check(ng_cron_next(&c, utc, w.opened_ms) == w.opened_ms);
				check(w.next_open_ms == -1);
			} else {
				check(w.next_open_ms == next && w.next_open_ms > now);
				check(w.opened_ms == -1 && w.closes_ms == -1);
			}
			check(w.searches <= NG_WINDOW_MAX_JUMPS + 2);
		}
	}
	return 0;
}
