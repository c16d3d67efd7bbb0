/* common/tz and common/cron: TZif zones from the system's tz database (tzdata, real files),
 * POSIX TZ footers, cron schedules on a zone's wall clock across DST changes, and maintenance
 * windows. Expected instants were computed independently (Python's zoneinfo) and are written
 * as UTC dates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/cron.h"
#include "common/file.h"
#include "common/tz.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR_MS (3600 * INT64_C(1000))
#define MIN_MS (60 * INT64_C(1000))

/* ms since the epoch of a UTC date and time. */
static int64_t utc(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi)
{
	return (ng_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60) * 1000;
}

static const struct ng_tz *zone(const char *name)
{
	const struct ng_tz *tz = NULL;
	struct ng_err err = {0};
	if (ng_tz_get(name, &tz, &err) != NG_OK)
		fail_msg("%s: %s", name, err.msg);
	return tz;
}

static struct ng_cron cron(const char *s)
{
	struct ng_cron c;
	struct ng_err err = {0};
	if (ng_cron_parse(s, &c, &err) != NG_OK)
		fail_msg("%s: %s", s, err.msg);
	return c;
}

/* @s is refused with @want and exactly @msg; the output is left as it was. */
static void refused(const char *s, ng_status want, const char *msg)
{
	struct ng_cron c, before;
	memset(&c, 0xad, sizeof(c));
	memset(&before, 0xad, sizeof(before));
	struct ng_err err = {0};
	ng_status st = ng_cron_parse(s, &c, &err);
	if (st != want || strcmp(err.msg, msg) != 0)
		fail_msg("\"%s\": got %s \"%s\", want %s \"%s\"", s, ng_status_str(st), err.msg,
			 ng_status_str(want), msg);
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_civil_dates(void **state)
{
	(void)state;
	assert_int_equal(ng_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(ng_days_from_civil(2026, 3, 29) * 86400, 1774746000 - 3600);
	assert_int_equal(ng_days_from_civil(2100, 7, 1) * 86400, INT64_C(4118083200));
	assert_int_equal(ng_days_from_civil(1969, 12, 31), -1);
	int64_t y;
	unsigned m, d;
	ng_civil_from_days(ng_days_from_civil(2024, 2, 29), &y, &m, &d);
	assert_true(y == 2024 && m == 2 && d == 29);
	ng_civil_from_days(-719468, &y, &m, &d); /* 0000-03-01 */
	assert_true(y == 0 && m == 3 && d == 1);
	assert_int_equal(ng_weekday_from_days(0), 4);                                /* Thursday */
	assert_int_equal(ng_weekday_from_days(ng_days_from_civil(2026, 11, 23)), 1); /* Monday */
	assert_int_equal(ng_weekday_from_days(-1), 3);
	assert_int_equal(ng_days_in_month(2024, 2), 29);
	assert_int_equal(ng_days_in_month(2100, 2), 28);
	assert_int_equal(ng_days_in_month(2000, 2), 29);
}

static void test_parse_errors(void **state)
{
	(void)state;
	refused("61 * * * *", NG_EPARSE, "schedule: minute field \"61\": value out of range 0-59");
	refused("0 25 * * *", NG_EPARSE, "schedule: hour field \"25\": value out of range 0-23");
	refused("0 0 0 * *", NG_EPARSE,
		"schedule: day-of-month field \"0\": value out of range 1-31");
	refused("0 0 32 * *", NG_EPARSE,
		"schedule: day-of-month field \"32\": value out of range 1-31");
	refused("0 0 * 13 *", NG_EPARSE,
		"schedule: month field \"13\": value out of range 1-12 (or jan-dec)");
	refused("0 0 * 0 *", NG_EPARSE,
		"schedule: month field \"0\": value out of range 1-12 (or jan-dec)");
	refused("0 0 * * 8", NG_EPARSE,
		"schedule: day-of-week field \"8\": value out of range 0-7 (or sun-sat)");
	refused("*/0 * * * *", NG_EPARSE,
		"schedule: minute field \"*/0\": bad step (out of range for the field)");
	refused("*/x * * * *", NG_EPARSE,
		"schedule: minute field \"*/x\": bad step (not a number)");
	refused("0 */ * * *", NG_EPARSE, "schedule: hour field \"*/\": bad step (missing)");
	refused("0 */25 * * *", NG_EPARSE,
		"schedule: hour field \"*/25\": bad step (out of range for the field)");
	refused("0 0 * foo *", NG_EPARSE,
		"schedule: month field \"foo\": unknown month name (jan-dec)");
	refused("0 0 * * funday", NG_EPARSE,
		"schedule: day-of-week field \"funday\": unknown day name (sun-sat)");
	refused("x 0 * * *", NG_EPARSE, "schedule: minute field \"x\": not a number");
	refused("5-1 0 * * *", NG_EPARSE, "schedule: minute field \"5-1\": range goes backwards");
	refused("1,,2 0 * * *", NG_EPARSE, "schedule: minute field \"1,,2\": empty list element");
	refused("0 ? * * *", NG_EPARSE,
		"schedule: hour field \"?\": '?' is only for the day fields");
	refused("0 0 * * mon-", NG_EPARSE, "schedule: day-of-week field \"mon-\": missing value");
	/* The bad element is quoted, not the whole field. */
	refused("0 1,2,99 * * *", NG_EPARSE,
		"schedule: hour field \"99\": value out of range 0-23");
	refused("0 0 * *", NG_EPARSE,
		"schedule: expected 5 fields (minute hour day-of-month month day-of-week), got 4");
	refused("0 0 * * * *", NG_EPARSE,
		"schedule: expected 5 fields (minute hour day-of-month month day-of-week), got 6");
	refused("", NG_EPARSE, "schedule: empty");
	refused(" \t ", NG_EPARSE, "schedule: empty");
	refused("0 0 30 2 *", NG_EPARSE,
		"schedule: never fires (day 30 of February does not exist)");
	refused("0 0 31 4,6 *", NG_EPARSE,
		"schedule: never fires (day 31 and the others chosen exist in none of the months "
		"chosen)");
	refused("@often", NG_EPARSE,
		"schedule: unknown macro \"@often\" (@yearly, @annually, @monthly, @weekly, "
		"@daily, @midnight, @hourly)");
	refused("@daily 0", NG_EPARSE, "schedule: a macro such as @daily stands alone");

	char big[NG_CRON_MAX_BYTES + 2];
	memset(big, ' ', sizeof(big));
	memcpy(big, "0 0 * * *", 9);
	big[sizeof(big) - 1] = '\0';
	refused(big, NG_ELIMIT, "schedule: longer than 256 bytes");
	/* Exactly the limit is fine (trailing blanks allowed). */
	big[NG_CRON_MAX_BYTES] = '\0';
	struct ng_cron c;
	assert_int_equal(ng_cron_parse(big, &c, NULL), NG_OK);
}

static void test_parse_fields(void **state)
{
	(void)state;
	struct ng_cron c = cron("*/15 9-17/2 1,15 * *");
	assert_true(c.minutes == (1ull << 0 | 1ull << 15 | 1ull << 30 | 1ull << 45));
	assert_true(c.hours == (1u << 9 | 1u << 11 | 1u << 13 | 1u << 15 | 1u << 17));
	assert_true(c.days == (1u << 1 | 1u << 15));
	assert_true(c.months == 0x1ffe);
	assert_true(c.weekdays == 0x7f);
	assert_false(c.days_star);
	assert_true(c.weekdays_star);

	/* n/step runs to the end of the field; names in any case; 7 is Sunday. */
	c = cron("\t 50/5 0 ? JAN-mar,Dec fri-7 ");
	assert_true(c.minutes == (1ull << 50 | 1ull << 55));
	assert_true(c.months == (1u << 1 | 1u << 2 | 1u << 3 | 1u << 12));
	assert_true(c.weekdays == (1u << 5 | 1u << 6 | 1u << 0));
	assert_true(c.days_star);
	assert_false(c.weekdays_star);
	c = cron("0 0 * * 0");
	assert_true(c.weekdays == 1);
	assert_true(cron("0 0 * * 7").weekdays == 1);
	assert_true(cron("0 0 * * */1").weekdays_star);
	assert_false(cron("0 0 * * */2").weekdays_star);

	/* Macros are their expansions. */
	struct {
		const char *macro, *expansion;
	} macros[] = {
	    {"@yearly", "0 0 1 1 *"}, {"@ANNUALLY", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
	    {"@weekly", "0 0 * * 0"}, {" @daily ", "0 0 * * *"},  {"@midnight", "0 0 * * *"},
	    {"@hourly", "0 * * * *"},
	};
	for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
		struct ng_cron a = cron(macros[i].macro), b = cron(macros[i].expansion);
		assert_true(a.minutes == b.minutes && a.hours == b.hours && a.days == b.days &&
			    a.months == b.months && a.weekdays == b.weekdays &&
			    a.days_star == b.days_star && a.weekdays_star == b.weekdays_star);
	}
	/* Feb 29 fires (in leap years); so does day 30 of February when a weekday is named too
	 * (the OR rule). */
	c = cron("0 0 29 2 *");
	assert_int_equal(ng_cron_next(&c, zone("UTC"), utc(2097, 1, 1, 0, 0)),
			 utc(2104, 2, 29, 0, 0));
	(void)cron("0 0 30 2 mon");
}

static void test_day_of_month_or_day_of_week(void **state)
{
	(void)state;
	const struct ng_tz *u = zone("UTC");
	/* Both restricted: the 13th OR a Friday. 2026-11-01 is a Sunday. */
	struct ng_cron c = cron("0 12 13 * 5");
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 1, 0, 0)), utc(2026, 11, 6, 12, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 7, 0, 0)), utc(2026, 11, 13, 12, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 10, 0, 0)), utc(2026, 11, 13, 12, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 13, 12, 1)), utc(2026, 11, 20, 12, 0));
	/* Day-of-week '*': the 13th only. */
	c = cron("0 12 13 * *");
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 1, 0, 0)), utc(2026, 11, 13, 12, 0));
	/* Day-of-month '*': Fridays only; '?' is the same as '*'. */
	c = cron("0 12 ? * fri");
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 7, 0, 0)), utc(2026, 11, 13, 12, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 14, 0, 0)), utc(2026, 11, 20, 12, 0));
	/* Day-of-month "*" stepped ("*\/2") is a restriction: the OR rule applies. */
	c = cron("0 12 */10 * fri");
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 1, 0, 0)), utc(2026, 11, 1, 12, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 2, 0, 0)), utc(2026, 11, 6, 12, 0));
}

static void test_next_in_utc(void **state)
{
	(void)state;
	const struct ng_tz *u = zone("UTC");
	struct ng_cron c = cron("30 2 * * *");
	int64_t t = utc(2026, 3, 29, 2, 30);
	assert_int_equal(ng_cron_next(&c, u, t), t); /* on a firing: that one */
	assert_int_equal(ng_cron_next(&c, u, t + 1), utc(2026, 3, 30, 2, 30));
	assert_int_equal(ng_cron_next(&c, u, t - 59999), t); /* rounds up to the minute */
	c = cron("* * * * *");
	assert_int_equal(ng_cron_next(&c, u, t + 1), t + MIN_MS);
	/* Before 1970 too. */
	c = cron("0 0 1 1 *");
	assert_int_equal(ng_cron_next(&c, u, utc(1969, 6, 1, 0, 0)), 0);
	assert_int_equal(ng_cron_next(&c, u, INT64_MAX), -1);
}

static void test_next_across_dst_paris(void **state)
{
	(void)state;
	const struct ng_tz *p = zone("Europe/Paris");
	struct ng_cron c = cron("30 2 * * *");
	/* 29 Mar 2026, 02:00 -> 03:00 (01:00 UTC): 02:30 does not exist, it fires once at 03:30
	 * CEST (01:30 UTC); the next day at 02:30 CEST. */
	int64_t at = ng_cron_next(&c, p, utc(2026, 3, 28, 12, 0));
	assert_int_equal(at, INT64_C(1774747800) * 1000);
	assert_int_equal(at, utc(2026, 3, 29, 1, 30));
	assert_int_equal(ng_cron_next(&c, p, at + 1), utc(2026, 3, 30, 0, 30));
	/* 25 Oct 2026, 03:00 -> 02:00 (01:00 UTC): 02:30 happens twice, it fires at the first
	 * (00:30 UTC) only; from between the two, the next is the next day's (CET). */
	at = ng_cron_next(&c, p, utc(2026, 10, 24, 12, 0));
	assert_int_equal(at, INT64_C(1792888200) * 1000);
	assert_int_equal(ng_cron_next(&c, p, at + 1), utc(2026, 10, 26, 1, 30));
	assert_int_equal(ng_cron_next(&c, p, utc(2026, 10, 25, 1, 15)), utc(2026, 10, 26, 1, 30));

	/* Two wall times that both fall in the gap (02:00 and 02:30) and their equivalents past
	 * it (03:00, 03:30) give two firings, not four. */
	c = cron("0,30 2,3 29 3 *");
	at = ng_cron_next(&c, p, utc(2026, 3, 28, 0, 0));
	assert_int_equal(at, utc(2026, 3, 29, 1, 0));
	at = ng_cron_next(&c, p, at + 1);
	assert_int_equal(at, utc(2026, 3, 29, 1, 30));
	assert_int_equal(ng_cron_next(&c, p, at + 1), utc(2027, 3, 29, 0, 0));

	/* Every minute across the fall-back: the repeated hour does not fire again. */
	c = cron("* * * * *");
	assert_int_equal(ng_cron_next(&c, p, utc(2026, 10, 25, 0, 59) + 1),
			 utc(2026, 10, 25, 2, 0));
	/* ... and across the spring-forward, every instant still fires. */
	assert_int_equal(ng_cron_next(&c, p, utc(2026, 3, 29, 0, 59) + 1), utc(2026, 3, 29, 1, 0));
}

static void test_next_across_dst_new_york(void **state)
{
	(void)state;
	const struct ng_tz *ny = zone("America/New_York");
	struct ng_cron c = cron("30 2 * * *");
	/* 8 Mar 2026, 02:00 EST -> 03:00 EDT (07:00 UTC): fires once at 03:30 EDT. */
	int64_t at = ng_cron_next(&c, ny, utc(2026, 3, 7, 12, 0));
	assert_int_equal(at, INT64_C(1772955000) * 1000);
	assert_int_equal(ng_cron_next(&c, ny, at + 1), utc(2026, 3, 9, 6, 30));
	/* 1 Nov 2026, 02:00 EDT -> 01:00 EST (06:00 UTC): 01:30 fires at its first occurrence,
	 * 05:30 UTC; 02:30 happens once (EST). */
	c = cron("30 1 * * *");
	at = ng_cron_next(&c, ny, utc(2026, 10, 31, 12, 0));
	assert_int_equal(at, INT64_C(1793511000) * 1000);
	assert_int_equal(ng_cron_next(&c, ny, at + 1), INT64_C(1793601000) * 1000);
	c = cron("30 2 * * *");
	assert_int_equal(ng_cron_next(&c, ny, utc(2026, 10, 31, 12, 0)), utc(2026, 11, 1, 7, 30));
	/* Weekdays at 22:00 local, read on the local calendar: Friday 27 Nov 22:00 EST is
	 * Saturday 03:00 UTC; then Monday 30 Nov 22:00 EST. */
	c = cron("0 22 * * 1-5");
	assert_int_equal(ng_cron_next(&c, ny, utc(2026, 11, 28, 0, 0)), utc(2026, 11, 28, 3, 0));
	assert_int_equal(ng_cron_next(&c, ny, utc(2026, 11, 28, 3, 1)), utc(2026, 12, 1, 3, 0));
}

static void test_windows(void **state)
{
	(void)state;
	const struct ng_tz *p = zone("Europe/Paris");
	struct ng_cron c = cron("0 22 * * 1-5");
	const int64_t h8 = 8 * HOUR_MS;
	struct ng_window_at w;
	/* Monday 23 Nov 2026 22:00 CET (21:00 UTC) to Tuesday 06:00 CET (05:00 UTC). */
	int64_t mon22 = utc(2026, 11, 23, 21, 0), tue06 = utc(2026, 11, 24, 5, 0);
	ng_window_at(&c, p, h8, tue06 - MIN_MS, &w); /* Tuesday 05:59 */
	assert_true(w.open);
	assert_int_equal(w.opened_ms, mon22);
	assert_int_equal(w.closes_ms, tue06);
	assert_int_equal(w.next_open_ms, -1);
	ng_window_at(&c, p, h8, tue06 - 1, &w);
	assert_true(w.open);
	ng_window_at(&c, p, h8, tue06, &w); /* exact end: closed */
	assert_false(w.open);
	assert_int_equal(w.opened_ms, -1);
	assert_int_equal(w.next_open_ms, utc(2026, 11, 24, 21, 0)); /* Tuesday 22:00 */
	ng_window_at(&c, p, h8, mon22, &w);                         /* exact start: open */
	assert_true(w.open);
	assert_int_equal(w.opened_ms, mon22);
	ng_window_at(&c, p, h8, mon22 - 1, &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, mon22);
	/* Friday 22:00 -> Saturday 06:00; then nothing until Monday 22:00. */
	ng_window_at(&c, p, h8, utc(2026, 11, 28, 12, 0), &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, utc(2026, 11, 30, 21, 0));

	/* Overlapping windows merge: [08:00, 10:00) and [09:00, 11:00). */
	const struct ng_tz *u = zone("UTC");
	c = cron("0 8,9 * * *");
	ng_window_at(&c, u, 2 * HOUR_MS, utc(2026, 6, 1, 8, 30), &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, utc(2026, 6, 1, 8, 0));
	assert_int_equal(w.closes_ms, utc(2026, 6, 1, 11, 0));
	ng_window_at(&c, u, 2 * HOUR_MS, utc(2026, 6, 1, 10, 30), &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, utc(2026, 6, 1, 9, 0));
	assert_int_equal(w.closes_ms, utc(2026, 6, 1, 11, 0));
	/* Back to back: [08:00, 10:00) and [10:00, 12:00) are one span. */
	c = cron("0 8,10 * * *");
	ng_window_at(&c, u, 2 * HOUR_MS, utc(2026, 6, 1, 9, 0), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, utc(2026, 6, 1, 12, 0));
	/* A gap of one minute does not merge. */
	ng_window_at(&c, u, 2 * HOUR_MS - MIN_MS, utc(2026, 6, 1, 9, 0), &w);
	assert_int_equal(w.closes_ms, utc(2026, 6, 1, 9, 59));

	/* A one-minute window. */
	c = cron("30 12 * * *");
	ng_window_at(&c, u, MIN_MS, utc(2026, 6, 1, 12, 30), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, utc(2026, 6, 1, 12, 31));
	ng_window_at(&c, u, MIN_MS, utc(2026, 6, 1, 12, 31) - 1, &w);
	assert_true(w.open);
	ng_window_at(&c, u, MIN_MS, utc(2026, 6, 1, 12, 31), &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, utc(2026, 6, 2, 12, 30));

	/* Every minute for a day: open at every instant, recognised without following the
	 * firings (Paris's fall-back hour is shorter than the day). */
	c = cron("* * * * *");
	int64_t now = utc(2026, 6, 1, 12, 0);
	ng_window_at(&c, p, 24 * HOUR_MS, now, &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, now - 24 * HOUR_MS + MIN_MS);
	assert_int_equal(w.closes_ms, -1);
	assert_int_equal(w.searches, 1);

	/* Before 1970: instants are negative, and valid. */
	c = cron("0 22 * * *");
	ng_window_at(&c, u, h8, 0, &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, -2 * HOUR_MS);
	assert_int_equal(w.closes_ms, 6 * HOUR_MS);
	ng_window_at(&c, u, h8, -3 * HOUR_MS, &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, -2 * HOUR_MS);

	/* A window across the spring-forward lasts its duration in real time: 8 h from 22:00
	 * CET on Saturday 28 Mar is 07:00 CEST. */
	c = cron("0 22 28 3 *");
	ng_window_at(&c, p, h8, utc(2026, 3, 29, 4, 59), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, utc(2026, 3, 29, 5, 0));
}

/* Security finding 6: a window that is always open costs one search, however long it lasts
 * and however often it fires; any other costs at most NG_WINDOW_MAX_JUMPS + 2. (Merging firing
 * by firing, "* * * * *" for 744 h took 10,000 searches per window and instant.) */
static void test_always_open_windows_cost_one_search(void **state)
{
	(void)state;
	const struct ng_tz *u = zone("UTC"), *p = zone("Europe/Paris"),
			   *ny = zone("America/New_York");
	const int64_t now = utc(2026, 11, 30, 11, 0), h744 = 744 * HOUR_MS;
	static const struct {
		const char *schedule;
		int64_t duration_ms;
	} always[] = {
	    {"* * * * *", 744 * HOUR_MS},
	    {"* * * * *", MIN_MS},
	    {"@hourly", HOUR_MS},
	    {"0 * * * *", 2 * HOUR_MS},
	    {"*/5 * * * *", 5 * MIN_MS},
	    {"@daily", 24 * HOUR_MS},
	    {"0,30 * * * *", 30 * MIN_MS},
	    {"50 */2 * * *", 2 * HOUR_MS},
	    {"0 0 1-31 * *", 24 * HOUR_MS},
	    {"0 0 * * 0-6", 24 * HOUR_MS},
	    {"0 0 * jan-dec 0,1,2,3,4,5,6", 24 * HOUR_MS},
	};
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
		struct ng_cron c = cron(always[i].schedule);
		struct ng_window_at w;
		ng_window_at(&c, u, always[i].duration_ms, now, &w);
		if (!w.open || w.closes_ms != -1 || w.searches != 1)
			fail_msg("\"%s\" for %lld ms: open %d, closes %lld, %u searches",
				 always[i].schedule, (long long)always[i].duration_ms, w.open,
				 (long long)w.closes_ms, w.searches);
	}
	/* In a zone with daylight saving time, the fall-back hour is a gap: "* * * * *" is
	 * always open for 744 h there, not for one minute. */
	struct ng_cron c = cron("* * * * *");
	struct ng_window_at w;
	ng_window_at(&c, p, h744, now, &w);
	assert_true(w.open && w.closes_ms == -1 && w.searches == 1);
	ng_window_at(&c, ny, h744, now, &w);
	assert_true(w.open && w.closes_ms == -1 && w.searches == 1);
	ng_window_at(&c, p, MIN_MS, now, &w);
	assert_true(w.open);
	assert_true(w.closes_ms > now);
	assert_true(w.searches <= NG_WINDOW_MAX_JUMPS + 2);
	/* Not every day fires: not always open, but bounded whatever the duration. */
	c = cron("0 0 1 * *");
	ng_window_at(&c, u, h744, now, &w);
	assert_true(w.open);
	assert_true(w.closes_ms > now);
	assert_true(w.searches <= NG_WINDOW_MAX_JUMPS + 2);
	c = cron("0 22 * * 1-5");
	ng_window_at(&c, p, h744, now, &w);
	assert_true(w.open && w.closes_ms > now && w.searches <= NG_WINDOW_MAX_JUMPS + 2);
}

/* @hourly for an hour in Paris is open every hour but one a year: the fall-back hour's wall
 * times fire once, the first time, so its second hour is closed. Followed to the close from
 * the day before; from months before, known open at least as far as the jumps reach. */
static void test_window_spans_across_dst(void **state)
{
	(void)state;
	const struct ng_tz *p = zone("Europe/Paris");
	struct ng_cron c = cron("@hourly");
	struct ng_window_at w;
	/* Sunday 25 Oct 2026: 02:00 CEST is 00:00 UTC, 03:00 CET is 02:00 UTC. */
	ng_window_at(&c, p, HOUR_MS, utc(2026, 10, 25, 0, 30), &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, utc(2026, 10, 25, 0, 0));
	assert_int_equal(w.closes_ms, utc(2026, 10, 25, 1, 0));
	ng_window_at(&c, p, HOUR_MS, utc(2026, 10, 24, 12, 0), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, utc(2026, 10, 25, 1, 0));
	ng_window_at(&c, p, HOUR_MS, utc(2026, 10, 25, 1, 0), &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, utc(2026, 10, 25, 2, 0));
	ng_window_at(&c, p, HOUR_MS, utc(2026, 10, 25, 2, 0) - 1, &w);
	assert_false(w.open);
	/* Two hours each and the hours overlap across the fall back too: always open (the zone
	 * has set its clocks back by an hour at most since 1977, by two in its history). */
	ng_window_at(&c, p, 2 * HOUR_MS, utc(2026, 10, 25, 1, 30), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, -1);
	/* From June the close is months away: open, and known to reach 32 hours or more. */
	int64_t june = utc(2026, 6, 1, 12, 0);
	ng_window_at(&c, p, HOUR_MS, june, &w);
	assert_true(w.open);
	assert_true(w.closes_ms >= june + 32 * HOUR_MS);
	assert_true(w.closes_ms <= utc(2026, 10, 25, 1, 0));
	assert_true(w.searches <= NG_WINDOW_MAX_JUMPS + 2);
	/* The spring forward skips 02:00, which fires at 03:00 CEST with 03:00 itself: no gap,
	 * the span goes on. */
	ng_window_at(&c, p, HOUR_MS, utc(2026, 3, 29, 0, 30), &w);
	assert_true(w.open);
	assert_true(w.closes_ms > utc(2026, 3, 29, 2, 0));
	/* New York falls back on 1 Nov 2026 at 06:00 UTC (02:00 EDT -> 01:00 EST): 01:00 EDT
	 * (05:00 UTC) fires, 01:00 EST does not, 02:00 EST (07:00 UTC) does. */
	const struct ng_tz *ny = zone("America/New_York");
	ng_window_at(&c, ny, HOUR_MS, utc(2026, 11, 1, 5, 59), &w);
	assert_true(w.open);
	assert_int_equal(w.closes_ms, utc(2026, 11, 1, 6, 0));
	ng_window_at(&c, ny, HOUR_MS, utc(2026, 11, 1, 6, 30), &w);
	assert_false(w.open);
	assert_int_equal(w.next_open_ms, utc(2026, 11, 1, 7, 0));
}

/* ng_cron_prev() mirrors ng_cron_next(): the firing it gives is one, and nothing fires
 * between it and the instant asked about, across DST changes too. */
static void test_prev(void **state)
{
	(void)state;
	const char *zones[] = {"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"};
	const char *schedules[] = {"* * * * *",     "30 2 * * *",    "0 22 * * 1-5",
				   "*/7 1-3 * * *", "0 0 29 2 *",    "15 2 * 3 0",
				   "0 0 1 * *",     "59 23 31 12 *", "0,30 1,2 * * *"};
	const int64_t around[] = {utc(2026, 3, 29, 0, 0), utc(2026, 10, 25, 0, 0),
				  utc(2026, 3, 8, 6, 0),  utc(2026, 11, 1, 5, 0),
				  utc(2026, 4, 4, 15, 0), utc(2026, 10, 3, 15, 0),
				  utc(2028, 2, 29, 0, 0), -HOUR_MS};
	for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++)
		for (size_t i = 0; i < sizeof(schedules) / sizeof(schedules[0]); i++) {
			const struct ng_tz *tz = zone(zones[z]);
			struct ng_cron c = cron(schedules[i]);
			for (size_t a = 0; a < sizeof(around) / sizeof(around[0]); a++)
				for (int64_t t = around[a] - 2 * HOUR_MS;
				     t <= around[a] + 2 * HOUR_MS; t += 17 * MIN_MS + 1001) {
					int64_t f = ng_cron_prev(&c, tz, t);
					if (f == -1 || f > t || ng_cron_next(&c, tz, f) != f ||
					    ng_cron_next(&c, tz, f + 1) <= t)
						fail_msg("%s in %s, before %lld: %lld",
							 schedules[i], zones[z], (long long)t,
							 (long long)f);
				}
		}
	const struct ng_tz *u = zone("UTC");
	struct ng_cron c = cron("0 22 * * 1-5");
	assert_int_equal(ng_cron_prev(&c, u, utc(2026, 11, 30, 12, 0)), utc(2026, 11, 27, 22, 0));
	assert_int_equal(ng_cron_prev(&c, u, utc(2026, 11, 27, 22, 0)), utc(2026, 11, 27, 22, 0));
	assert_int_equal(ng_cron_prev(&c, u, utc(2026, 11, 27, 22, 0) - 1),
			 utc(2026, 11, 26, 22, 0));
	assert_int_equal(ng_cron_prev(&c, u, INT64_MIN), -1);
}

/* The span ng_window_at() gives, against the spans merged firing by firing with
 * ng_cron_next(): the same close; or, when the jumps ran out, a close the merging goes past
 * (open at least that long); or, when it says the span never closes, 3,000 firings merged
 * without a gap. */
static void agrees_with_merging(const char *schedule, const char *zone_name, int64_t d, int64_t now)
{
	const struct ng_tz *tz = zone(zone_name);
	struct ng_cron c = cron(schedule);
	struct ng_window_at w;
	ng_window_at(&c, tz, d, now, &w);
	const unsigned cap = 3000;
	int64_t f = ng_cron_next(&c, tz, now - d + 1);
	bool open = f >= 0 && f <= now;
	int64_t end = -1;
	unsigned merged = 0;
	if (open) {
		/* Merged until the span ends, or (said never to close) for 3,000 firings, or past
		 * the close it is said to have. */
		end = f + d;
		for (int64_t g = ng_cron_next(&c, tz, f + 1);
		     g >= 0 && g <= end && (w.closes_ms == -1 ? merged < cap : end <= w.closes_ms);
		     g = ng_cron_next(&c, tz, g + 1), merged++)
			end = g + d > end ? g + d : end;
	}
	bool ok = w.open == open && w.searches <= NG_WINDOW_MAX_JUMPS + 2;
	if (ok && open) {
		ok = w.opened_ms == f && w.next_open_ms == -1;
		if (w.closes_ms == -1)
			ok = ok && merged == cap;
		else if (w.closes_ms != end) /* the jumps ran out before the close */
			ok = ok && w.closes_ms > now && w.closes_ms < end &&
			     w.searches == NG_WINDOW_MAX_JUMPS + 2;
	} else if (ok) {
		ok = w.next_open_ms == f && w.closes_ms == -1;
	}
	if (!ok)
		fail_msg("\"%s\" %s for %lld min at %lld: open %d (want %d), opened %lld (want "
			 "%lld), closes %lld (want %lld), next %lld, %u searches",
			 schedule, zone_name, (long long)(d / MIN_MS), (long long)now, w.open, open,
			 (long long)w.opened_ms, (long long)f, (long long)w.closes_ms,
			 (long long)end, (long long)w.next_open_ms, w.searches);
}

static void test_windows_agree_with_merging(void **state)
{
	(void)state;
	const char *zones[] = {"UTC", "Europe/Paris", "America/New_York"};
	const char *schedules[] = {"0 22 * * 1-5", "0 8,9 * * *",    "*/7 * * * *",
				   "0 * * * *",    "30 1,2,3 * * *", "0 0 1 * *",
				   "15 2 * * 0",   "0 0 29 2 *",     "0,1 * * * *"};
	const int64_t durations[] = {MIN_MS,      59 * MIN_MS,  HOUR_MS,      61 * MIN_MS,
				     8 * HOUR_MS, 25 * HOUR_MS, 744 * HOUR_MS};
	/* Around both DST changes of Paris and New York in 2026, and a plain day. */
	const int64_t around[] = {utc(2026, 3, 29, 1, 0), utc(2026, 10, 25, 1, 0),
				  utc(2026, 3, 8, 7, 0), utc(2026, 11, 1, 6, 0),
				  utc(2026, 6, 1, 12, 0)};
	for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++)
		for (size_t i = 0; i < sizeof(schedules) / sizeof(schedules[0]); i++)
			for (size_t k = 0; k < sizeof(durations) / sizeof(durations[0]); k++)
				for (size_t a = 0; a < sizeof(around) / sizeof(around[0]); a++)
					for (int64_t t = around[a] - 90 * MIN_MS;
					     t <= around[a] + 90 * MIN_MS; t += 37 * MIN_MS)
						agrees_with_merging(schedules[i], zones[z],
								    durations[k], t);
}

/* Random schedules, durations and instants (2020-2040) in zones with unusual changes: a
 * negative DST (Dublin), half an hour (Lord Howe), a skipped day (Apia), two hours (Troll),
 * Ramadan changes (Casablanca): ng_window_at() agrees with merging firing by firing. */
static void test_windows_agree_with_merging_anywhere(void **state)
{
	(void)state;
	static const char *const zones[] = {
	    "Europe/Dublin",     "Australia/Lord_Howe", "Pacific/Apia",     "Antarctica/Troll",
	    "Africa/Casablanca", "America/Santiago",    "America/St_Johns", "Asia/Kolkata"};
	static const char *const mins[] = {"*", "0", "30", "*/5", "*/7", "0,30", "59", "15-45/10"};
	static const char *const hours[] = {"*", "*", "0", "2", "1-3", "*/2", "22", "0,12"};
	static const char *const days[] = {"* * *",    "* * *",   "1 * *",    "29 * *",
					   "* 3,10 *", "* * 1-5", "1-15 * 0", "* 2 *"};
	static const int64_t minutes[] = {1,   30,  59,   60,   61,    90,
					  120, 121, 1440, 1500, 10080, 44640};
	uint64_t seed = 0x2545f4914f6cdd1dull;
	for (int it = 0; it < 400; it++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		char sched[64];
		(void)snprintf(sched, sizeof(sched), "%s %s %s", mins[seed % 8],
			       hours[(seed >> 3) % 8], days[(seed >> 6) % 8]);
		int64_t d = minutes[(seed >> 9) % 12] * MIN_MS;
		int64_t now = utc(2020, 1, 1, 0, 0) +
			      (int64_t)((seed >> 13) % (20ull * 365 * 86400)) * 1000 +
			      (int64_t)((seed >> 50) % 1000);
		agrees_with_merging(sched, zones[(seed >> 60) % 8], d, now);
	}
}

static void test_tz_get(void **state)
{
	(void)state;
	const struct ng_tz *tz = (const struct ng_tz *)&tz, *before = tz;
	struct ng_err err = {0};
	assert_int_equal(ng_tz_get("Mars/Olympus_Mons", &tz, &err), NG_ENOTFOUND);
	assert_string_equal(err.msg,
			    "unknown time zone \"Mars/Olympus_Mons\" (not in /usr/share/zoneinfo)");
	assert_ptr_equal(tz, before);
	/* A directory is not a zone. */
	assert_int_equal(ng_tz_get("America", &tz, &err), NG_ENOTFOUND);
	/* Leap-second zones count leap seconds in their times. */
	assert_int_equal(ng_tz_get("right/Europe/Paris", &tz, &err), NG_EPARSE);
	assert_string_equal(err.msg, "time zone \"right/Europe/Paris\": a zone with leap seconds "
				     "(right/...) is not supported: use the zone without right/");
	assert_ptr_equal(tz, before);
	/* A file of the database that is not TZif. */
	assert_int_equal(ng_tz_get("zone.tab", &tz, &err), NG_EPARSE);
	assert_string_equal(err.msg, "time zone \"zone.tab\": not a TZif file (no TZif magic)");

	const char *bad[] = {"../etc/passwd", "/etc/x",        "",
			     "a//b",          "Europe/",       "Europe/../Paris",
			     "./UTC",         "Europe/Pa ris", "Europe/Par\xc3\xads",
			     "a/./b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (ng_tz_get(bad[i], &tz, &err) != NG_EPARSE)
			fail_msg("\"%s\" was not refused", bad[i]);
		assert_string_equal(err.msg, "not a zone name (an IANA name such as Europe/Paris)");
		assert_ptr_equal(tz, before);
	}
	/* The database's aliases for the host's own zone are not places. */
	assert_int_equal(ng_tz_get("localtime", &tz, &err), NG_EPARSE);
	assert_string_equal(err.msg, "\"localtime\" is the host's zone, not an IANA zone name");
	char longname[NG_TZ_MAX_NAME + 2];
	memset(longname, 'a', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(ng_tz_get(longname, &tz, &err), NG_EPARSE);

	/* Loaded once: the same pointer. */
	const struct ng_tz *a = zone("Europe/Paris"), *b = zone("Europe/Paris");
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, zone("Europe/London"));
	/* Zone names with '+', '-' and digits exist. */
	assert_int_equal(ng_tz_offset(zone("Etc/GMT+5"), 0), -5 * 3600);
}

/* Zones no other test loads, so the threads race to load them first. */
static const char *const race_zones[] = {"Asia/Tokyo",       "America/Chicago", "Africa/Cairo",
					 "Pacific/Auckland", "Europe/Madrid",   "Asia/Dubai"};
#define RACE_THREADS 8

static void *get_race_zones(void *arg)
{
	const struct ng_tz **got = arg;
	for (size_t i = 0; i < sizeof(race_zones) / sizeof(race_zones[0]); i++)
		if (ng_tz_get(race_zones[i], &got[i], NULL) != NG_OK)
			got[i] = NULL;
	return NULL;
}

static void test_tz_get_from_many_threads(void **state)
{
	(void)state;
	enum { NZ = sizeof(race_zones) / sizeof(race_zones[0]) };
	const struct ng_tz *got[RACE_THREADS][NZ];
	pthread_t th[RACE_THREADS];
	for (int t = 0; t < RACE_THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, get_race_zones, got[t]), 0);
	for (int t = 0; t < RACE_THREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	for (size_t i = 0; i < NZ; i++) {
		assert_non_null(got[0][i]);
		for (int t = 1; t < RACE_THREADS; t++)
			assert_ptr_equal(got[t][i], got[0][i]);
		assert_ptr_equal(zone(race_zones[i]), got[0][i]);
	}
	assert_int_equal(ng_tz_offset(got[0][0], 0), 9 * 3600);
}

static void test_utc_needs_no_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/ng-tzdir-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	const struct ng_tz *tz = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_tz_get("UTC", &tz, &err), NG_OK);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 7, 1, 0, 0) / 1000), 0);
	assert_int_equal(ng_tz_from_local(tz, 12345), 12345);
	assert_int_equal(ng_tz_get("Etc/UTC", &tz, &err), NG_OK);
	assert_int_equal(ng_tz_get("Europe/Berlin", &tz, &err), NG_ENOTFOUND);
	char want[128];
	(void)snprintf(want, sizeof(want), "unknown time zone \"Europe/Berlin\" (not in %s)", dir);
	assert_string_equal(err.msg, want);
	assert_int_equal(unsetenv("TZDIR"), 0);
	assert_int_equal(rmdir(dir), 0);
	/* With the database back, it loads. */
	assert_int_equal(ng_tz_offset(zone("Europe/Berlin"), utc(2026, 7, 1, 0, 0) / 1000), 7200);
}

static void test_offsets(void **state)
{
	(void)state;
	int64_t jan = utc(2026, 1, 15, 0, 0) / 1000, jul = utc(2026, 7, 15, 0, 0) / 1000;
	const struct ng_tz *k = zone("Asia/Kolkata");
	assert_int_equal(ng_tz_offset(k, jan), 5 * 3600 + 1800);
	assert_int_equal(ng_tz_offset(k, jul), 5 * 3600 + 1800);
	/* Lord Howe: +10:30, and +11 in the southern summer (a 30-minute DST). */
	const struct ng_tz *lh = zone("Australia/Lord_Howe");
	assert_int_equal(ng_tz_offset(lh, jan), 11 * 3600);
	assert_int_equal(ng_tz_offset(lh, jul), 10 * 3600 + 1800);
	assert_int_equal(ng_tz_offset(lh, utc(2090, 1, 15, 0, 0) / 1000), 11 * 3600);
	/* After 2037 the footer's rule decides. */
	const struct ng_tz *p = zone("Europe/Paris");
	assert_int_equal(ng_tz_offset(p, INT64_C(4118083200)), 7200); /* 2100-07-01 */
	assert_int_equal(ng_tz_offset(p, utc(2100, 1, 1, 0, 0) / 1000), 3600);
	/* Last Sunday of March 2100 is the 28th: 01:00 UTC. */
	assert_int_equal(ng_tz_offset(p, utc(2100, 3, 28, 1, 0) / 1000 - 1), 3600);
	assert_int_equal(ng_tz_offset(p, utc(2100, 3, 28, 1, 0) / 1000), 7200);
	const struct ng_tz *ny = zone("America/New_York");
	assert_int_equal(ng_tz_offset(ny, utc(2200, 7, 1, 0, 0) / 1000), -4 * 3600);
	assert_int_equal(ng_tz_offset(ny, utc(2200, 12, 1, 0, 0) / 1000), -5 * 3600);
	struct ng_cron c = cron("30 2 * * *");
	/* Second Sunday of March 2200 is the 9th: 02:30 EST-read is 07:30 UTC. */
	assert_int_equal(ng_cron_next(&c, ny, utc(2200, 3, 8, 12, 0)), utc(2200, 3, 9, 7, 30));
	/* Before the first transition: local mean time. */
	assert_int_equal(ng_tz_offset(p, utc(1800, 1, 1, 0, 0) / 1000), 561);
	/* Extremes do not overflow. */
	(void)ng_tz_offset(p, INT64_MAX);
	(void)ng_tz_offset(p, INT64_MIN);
	(void)ng_tz_from_local(p, INT64_MAX);
	(void)ng_tz_from_local(ny, INT64_MIN);
}

static void test_from_local(void **state)
{
	(void)state;
	const struct ng_tz *p = zone("Europe/Paris");
	/* 02:30 on 29 Mar 2026 is skipped: read with CET, 01:30 UTC = 03:30 CEST. */
	assert_int_equal(ng_tz_from_local(p, utc(2026, 3, 29, 2, 30) / 1000),
			 utc(2026, 3, 29, 1, 30) / 1000);
	assert_int_equal(ng_tz_from_local(p, utc(2026, 3, 29, 3, 0) / 1000),
			 utc(2026, 3, 29, 1, 0) / 1000);
	assert_int_equal(ng_tz_from_local(p, utc(2026, 3, 29, 1, 59) / 1000),
			 utc(2026, 3, 29, 0, 59) / 1000);
	/* 02:30 on 25 Oct 2026 happens twice: the first (CEST). */
	assert_int_equal(ng_tz_from_local(p, utc(2026, 10, 25, 2, 30) / 1000),
			 utc(2026, 10, 25, 0, 30) / 1000);
	assert_int_equal(ng_tz_from_local(p, utc(2026, 10, 25, 3, 0) / 1000),
			 utc(2026, 10, 25, 2, 0) / 1000);
	/* Far future, through the footer. */
	assert_int_equal(ng_tz_from_local(p, utc(2100, 3, 28, 2, 30) / 1000),
			 utc(2100, 3, 28, 1, 30) / 1000);
	/* Every wall time of a year maps to an instant showing that wall time, except in the
	 * gap, where it is read with the offset before it. */
	int64_t gap_lo = utc(2026, 3, 29, 2, 0) / 1000, gap_hi = utc(2026, 3, 29, 3, 0) / 1000;
	unsigned skipped = 0;
	for (int64_t l = utc(2026, 1, 1, 0, 0) / 1000; l < utc(2027, 1, 1, 0, 0) / 1000; l += 900) {
		int64_t t = ng_tz_from_local(p, l);
		if (t + ng_tz_offset(p, t) == l)
			continue;
		assert_true(l >= gap_lo && l < gap_hi);
		assert_int_equal(t + 3600, l);
		skipped++;
	}
	assert_int_equal(skipped, 4);
}

/* A TZif v2 file: an empty version 1 block, then the 64-bit block with @ntrans transitions at
 * @trans to types @idx of @types (offset, dst), and the footer @footer. */
static size_t build_tzif(uint8_t *out, size_t cap, const int64_t *trans, const uint8_t *idx,
			 uint32_t ntrans, const int32_t (*types)[2], uint32_t ntypes,
			 const char *footer)
{
	size_t n = 0;
#define PUT8(v) (out[n++] = (uint8_t)(v))
#define PUT32(v)                                                                                   \
	do {                                                                                       \
		uint32_t x_ = (uint32_t)(v);                                                       \
		PUT8(x_ >> 24);                                                                    \
		PUT8(x_ >> 16);                                                                    \
		PUT8(x_ >> 8);                                                                     \
		PUT8(x_);                                                                          \
	} while (0)
	for (int block = 1; block <= 2; block++) {
		memcpy(out + n, "TZif2", 5);
		n += 5;
		memset(out + n, 0, 15);
		n += 15;
		uint32_t tc = block == 1 ? 0 : ntrans, ty = block == 1 ? 1 : ntypes;
		PUT32(0);  /* isutcnt */
		PUT32(0);  /* isstdcnt */
		PUT32(0);  /* leapcnt */
		PUT32(tc); /* timecnt */
		PUT32(ty); /* typecnt */
		PUT32(4);  /* charcnt */
		for (uint32_t i = 0; i < tc; i++) {
			PUT32((uint64_t)trans[i] >> 32);
			PUT32((uint64_t)trans[i]);
		}
		for (uint32_t i = 0; i < tc; i++)
			PUT8(idx[i]);
		for (uint32_t i = 0; i < ty; i++) {
			PUT32(block == 1 ? 0 : types[i][0]);
			PUT8(block == 1 ? 0 : types[i][1]);
			PUT8(0);
		}
		memcpy(out + n, "XYZ", 4);
		n += 4;
	}
	PUT8('\n');
	memcpy(out + n, footer, strlen(footer));
	n += strlen(footer);
	PUT8('\n');
	assert_true(n <= cap);
	return n;
#undef PUT8
#undef PUT32
}

static struct ng_tz *parse_ok(const uint8_t *data, size_t len)
{
	struct ng_tz *tz = NULL;
	struct ng_err err = {0};
	if (ng_tz_parse(data, len, &tz, &err) != NG_OK)
		fail_msg("parse: %s", err.msg);
	return tz;
}

/* Offset at a UTC date, for a zone built with only a footer. */
static int32_t footer_offset(const char *footer, int64_t at_ms)
{
	uint8_t buf[512];
	static const int32_t types[1][2] = {{0, 0}};
	size_t len = build_tzif(buf, sizeof(buf), NULL, NULL, 0, types, 1, footer);
	struct ng_tz *tz = parse_ok(buf, len);
	int32_t o = ng_tz_offset(tz, at_ms / 1000);
	ng_tz_free(tz);
	return o;
}

static void test_tzif_footer_decides(void **state)
{
	(void)state;
	/* One transition in 2000 to a DST type; after it the footer decides, so winter 2026 is
	 * CET although the table's last type is CEST. */
	uint8_t buf[512];
	const int64_t trans[1] = {946684800};
	const uint8_t idx[1] = {1};
	static const int32_t types[2][2] = {{3600, 0}, {7200, 1}};
	size_t len =
	    build_tzif(buf, sizeof(buf), trans, idx, 1, types, 2, "CET-1CEST,M3.5.0,M10.5.0/3");
	struct ng_tz *tz = parse_ok(buf, len);
	assert_int_equal(ng_tz_offset(tz, 946684800 - 1), 3600);
	assert_int_equal(ng_tz_offset(tz, 946684800), 7200);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 1, 15, 0, 0) / 1000), 3600);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 7, 15, 0, 0) / 1000), 7200);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 10, 25, 1, 0) / 1000 - 1), 7200);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 10, 25, 1, 0) / 1000), 3600);
	struct ng_cron c = cron("30 2 * * *");
	assert_int_equal(ng_cron_next(&c, tz, utc(2026, 3, 28, 12, 0)), utc(2026, 3, 29, 1, 30));
	ng_tz_free(tz);

	/* Quoted names, no DST. */
	assert_int_equal(footer_offset("<+03>-3", utc(2026, 7, 1, 0, 0)), 3 * 3600);
	assert_int_equal(footer_offset("<-0330>3:30", utc(2026, 7, 1, 0, 0)), -3 * 3600 - 1800);
	/* A /time over 24 h: DST from Thursday of the 4th week of March at 26:00, i.e. Friday
	 * 27 Mar 2026 02:00 IST (00:00 UTC). */
	assert_int_equal(footer_offset("IST-2IDT,M3.4.4/26,M10.5.0", utc(2026, 3, 27, 0, 0) - 1000),
			 7200);
	assert_int_equal(footer_offset("IST-2IDT,M3.4.4/26,M10.5.0", utc(2026, 3, 27, 0, 0)),
			 10800);
	/* A negative /time: the last Sunday of March at -1:00 (-02), 01:00 UTC. */
	const char *nuuk = "<-02>2<-01>,M3.5.0/-1,M10.5.0/0";
	assert_int_equal(footer_offset(nuuk, utc(2026, 3, 29, 1, 0) - 1000), -7200);
	assert_int_equal(footer_offset(nuuk, utc(2026, 3, 29, 1, 0)), -3600);
	/* DST all year: the end (Dec 31 25:00 DST) meets the next start (Jan 1 00:00). */
	assert_int_equal(footer_offset("EST5EDT,0/0,J365/25", utc(2026, 1, 1, 0, 0)), -4 * 3600);
	assert_int_equal(footer_offset("EST5EDT,0/0,J365/25", utc(2026, 12, 31, 23, 0)), -4 * 3600);
	assert_int_equal(footer_offset("EST5EDT,0/0,J365/25", utc(2026, 7, 1, 0, 0)), -4 * 3600);
	/* Jn never counts Feb 29 (J60 is 1 March); n does (zero-based): day 300 of 2026 is
	 * 28 Oct, of 2028 (leap) 27 Oct. */
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2028, 3, 1, 0, 0) - 1000), 0);
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2028, 3, 1, 0, 0)), 3600);
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2026, 3, 1, 0, 0)), 3600);
	/* The end is 00:00 DST, 23:00 UTC the day before. */
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2026, 10, 27, 22, 59)), 3600);
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2026, 10, 27, 23, 0)), 0);
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2028, 10, 26, 22, 59)), 3600);
	assert_int_equal(footer_offset("AAA0BBB,J60/0,300/0", utc(2028, 10, 26, 23, 0)), 0);
	/* A rule whose end (Dec 31 + 65 h, 2 Jan 23:00 UTC) comes after the next year's start
	 * (2 Jan 05:00 UTC): found by the fuzzer, the offset at 1 Jan must not depend on which
	 * side of the new year it is asked from. */
	const char *late = "EST5EDT6,1/0,J365/65";
	assert_int_equal(footer_offset(late, -1800 * INT64_C(1000)), -5 * 3600);
	assert_int_equal(footer_offset(late, 1800 * INT64_C(1000)), -5 * 3600);
	assert_int_equal(footer_offset(late, utc(1970, 1, 2, 5, 0)), -6 * 3600);
	assert_int_equal(footer_offset(late, utc(1970, 1, 2, 23, 0)), -5 * 3600);
	/* No rule after the DST name: the US rules. */
	assert_int_equal(footer_offset("EST5EDT", utc(2026, 7, 1, 0, 0)), -4 * 3600);
	assert_int_equal(footer_offset("EST5EDT", utc(2026, 1, 1, 0, 0)), -5 * 3600);
	/* Southern hemisphere: DST across the new year. */
	assert_int_equal(footer_offset("AEST-10AEDT,M10.1.0,M4.1.0/3", utc(2026, 1, 1, 0, 0)),
			 11 * 3600);
	assert_int_equal(footer_offset("AEST-10AEDT,M10.1.0,M4.1.0/3", utc(2026, 7, 1, 0, 0)),
			 10 * 3600);
}

static void test_tzif_real_file_and_refusals(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(ng_read_file("/usr/share/zoneinfo/America/New_York", 1 << 20, "zone",
				      false, &buf, &len, NULL),
			 NG_OK);
	struct ng_tz *tz = parse_ok((const uint8_t *)buf, len);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 7, 1, 0, 0) / 1000), -4 * 3600);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 3, 8, 7, 0) / 1000 - 1), -5 * 3600);
	assert_int_equal(ng_tz_offset(tz, utc(2026, 3, 8, 7, 0) / 1000), -4 * 3600);
	assert_int_equal(ng_tz_offset(tz, utc(2050, 1, 1, 0, 0) / 1000), -5 * 3600);
	int32_t min, max;
	ng_tz_offset_range(tz, &min, &max);
	assert_int_equal(max, -4 * 3600);
	ng_tz_offset_range_in(tz, utc(2026, 3, 1, 0, 0) / 1000, utc(2026, 3, 2, 0, 0) / 1000, &min,
			      &max);
	assert_true(min == -5 * 3600 && max == -5 * 3600);
	ng_tz_offset_range_in(tz, utc(2026, 3, 8, 0, 0) / 1000, utc(2026, 3, 9, 0, 0) / 1000, &min,
			      &max);
	assert_true(min == -5 * 3600 && max == -4 * 3600);
	/* Through the footer: DST starts on 12 Mar 2090. */
	ng_tz_offset_range_in(tz, utc(2090, 3, 12, 0, 0) / 1000, utc(2090, 3, 13, 0, 0) / 1000,
			      &min, &max);
	assert_true(min == -5 * 3600 && max == -4 * 3600);
	ng_tz_offset_range_in(tz, utc(2090, 3, 13, 0, 0) / 1000, utc(2090, 3, 14, 0, 0) / 1000,
			      &min, &max);
	assert_true(min == -4 * 3600 && max == -4 * 3600);
	ng_tz_free(tz);

	/* Every truncation is refused (the footer's final newline included). */
	struct ng_tz *out = (struct ng_tz *)&out, *before = out;
	struct ng_err err = {0};
	for (size_t n = 0; n < len; n++) {
		ng_status st = ng_tz_parse(buf, n, &out, &err);
		if (st != NG_EPARSE)
			fail_msg("prefix of %zu bytes: %s", n, ng_status_str(st));
		assert_ptr_equal(out, before);
	}
	assert_int_equal(ng_tz_parse(buf, 20, &out, &err), NG_EPARSE);
	assert_string_equal(err.msg, "not a TZif file (too short)");

	/* A bad type index in the 64-bit block. */
	uint8_t b[512];
	const int64_t trans[2] = {0, 100};
	uint8_t idx[2] = {0, 1};
	static const int32_t types[2][2] = {{0, 0}, {3600, 1}};
	size_t blen = build_tzif(b, sizeof(b), trans, idx, 2, types, 2, "");
	tz = parse_ok(b, blen); /* empty footer: the table's last type continues */
	assert_int_equal(ng_tz_offset(tz, utc(2026, 1, 1, 0, 0) / 1000), 3600);
	ng_tz_free(tz);
	idx[1] = 2;
	blen = build_tzif(b, sizeof(b), trans, idx, 2, types, 2, "");
	assert_int_equal(ng_tz_parse(b, blen, &out, &err), NG_EPARSE);
	assert_string_equal(err.msg, "transition 1 names type 2 of 2");
	/* Transitions out of order. */
	const int64_t back[2] = {100, 100};
	idx[1] = 1;
	blen = build_tzif(b, sizeof(b), back, idx, 2, types, 2, "");
	assert_int_equal(ng_tz_parse(b, blen, &out, &err), NG_EPARSE);
	assert_string_equal(err.msg, "transition 1 is not after the one before");
	/* A bad footer. */
	const char *footers[] = {"CET",    "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0",
				 "CET-25", "<+0>-3",           "CET-1CEST,M3.5.0/168,M10.5.0",
				 "X-1",    "CET-1CEST,J0,J365"};
	for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++) {
		blen = build_tzif(b, sizeof(b), trans, idx, 2, types, 2, footers[i]);
		if (ng_tz_parse(b, blen, &out, &err) != NG_EPARSE)
			fail_msg("footer \"%s\" accepted", footers[i]);
		assert_string_equal(err.msg, "bad TZ string in the footer");
	}
	/* Counts over the limits. */
	blen = build_tzif(b, sizeof(b), trans, idx, 2, types, 2, "");
	uint8_t big[600];
	memcpy(big, b, blen);
	big[44 + 10 + 32] = 0xff; /* second header's timecnt, high byte */
	assert_int_equal(ng_tz_parse(big, blen, &out, &err), NG_EPARSE);
	assert_ptr_equal(out, before);
	free(buf);
}

/* Runs last: it fills the process's table of zones. */
static void test_tz_get_keeps_a_bounded_number_of_zones(void **state)
{
	(void)state;
	char dir[] = "/tmp/ng-tzdir-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *zbuf = NULL;
	size_t zlen = 0;
	assert_int_equal(
	    ng_read_file("/usr/share/zoneinfo/Etc/GMT+5", 4096, "zone", false, &zbuf, &zlen, NULL),
	    NG_OK);
	char path[64];
	for (unsigned i = 0; i <= NG_TZ_MAX_ZONES; i++) {
		(void)snprintf(path, sizeof(path), "%s/z%04u", dir, i);
		FILE *f = fopen(path, "wbe");
		assert_non_null(f);
		assert_int_equal(fwrite(zbuf, 1, zlen, f), zlen);
		assert_int_equal(fclose(f), 0);
	}
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	unsigned loaded = 0, refused = 0;
	for (unsigned i = 0; i <= NG_TZ_MAX_ZONES; i++) {
		const struct ng_tz *tz = NULL;
		struct ng_err err = {0};
		(void)snprintf(path, sizeof(path), "z%04u", i);
		ng_status st = ng_tz_get(path, &tz, &err);
		if (st == NG_OK) {
			assert_int_equal(ng_tz_offset(tz, 0), -5 * 3600);
			loaded++;
			continue;
		}
		assert_int_equal(st, NG_ELIMIT);
		char want[128];
		(void)snprintf(want, sizeof(want), "time zone \"%s\": over %u distinct zones", path,
			       NG_TZ_MAX_ZONES);
		assert_string_equal(err.msg, want);
		refused++;
	}
	/* Other tests loaded some zones first: the table holds NG_TZ_MAX_ZONES in all. */
	assert_true(refused > 0 && loaded < NG_TZ_MAX_ZONES);
	assert_int_equal(unsetenv("TZDIR"), 0);
	/* The zones kept before still answer, from the table. */
	assert_int_equal(ng_tz_offset(zone("Europe/Paris"), INT64_C(4118083200)), 7200);
	assert_int_equal(ng_tz_offset(zone("z0000"), 0), -5 * 3600);
	for (unsigned i = 0; i <= NG_TZ_MAX_ZONES; i++) {
		(void)snprintf(path, sizeof(path), "%s/z%04u", dir, i);
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(rmdir(dir), 0);
	free(zbuf);
}

/* A weekday's rank in its month: "sun#1" the first Sunday, "fri#L", "friL" and "5L" the last
 * Friday, as croniter and cron-parser write them (0 or 7 Sunday, as everywhere here). */
static void test_cron_nth_weekday_of_the_month(void **state)
{
	(void)state;
	const struct ng_tz *u = zone("UTC");
	/* 2026-11-28 is a Saturday; December 2026 starts on a Tuesday. */
	const int64_t sat = utc(2026, 11, 28, 12, 0);
	struct ng_cron c = cron("0 2 * * sun#1");
	assert_int_equal(c.weekdays, 0);
	assert_false(c.weekdays_star);
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2026, 12, 6, 2, 0));
	assert_int_equal(ng_cron_prev(&c, u, sat), utc(2026, 11, 1, 2, 0));
	/* The fifth Sunday of November 2026 is the 29th; December has none, January 2027 has
	 * five Sundays (3, 10, 17, 24, 31). */
	c = cron("0 2 * * 0#5");
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2026, 11, 29, 2, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 11, 29, 3, 0)), utc(2027, 1, 31, 2, 0));
	/* The last Friday: November's was the 27th, December's is the 25th. */
	const char *last[] = {"0 2 * * fri#L", "0 2 * * FRI#l", "0 2 * * friL", "0 2 * * 5L"};
	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++) {
		c = cron(last[i]);
		assert_int_equal(ng_cron_next(&c, u, sat), utc(2026, 12, 25, 2, 0));
		assert_int_equal(ng_cron_prev(&c, u, sat), utc(2026, 11, 27, 2, 0));
	}
	/* The last Sunday in a month with five, 7 for Sunday: January 2027's 31st. */
	c = cron("0 2 * jan 7L");
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2027, 1, 31, 2, 0));
	/* Listed with plain weekdays, and OR'ed with a day of the month as cron does. */
	c = cron("0 2 * * mon,sun#1");
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2026, 11, 30, 2, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 12, 5, 0, 0)), utc(2026, 12, 6, 2, 0));
	c = cron("0 2 15 * sun#1");
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2026, 12, 6, 2, 0));
	assert_int_equal(ng_cron_next(&c, u, utc(2026, 12, 7, 0, 0)), utc(2026, 12, 15, 2, 0));
	/* The window of the first Sunday opens and closes with it. */
	struct ng_window_at w;
	c = cron("0 22 * * sat#1");
	ng_window_at(&c, zone("Europe/Paris"), 8 * HOUR_MS, utc(2026, 12, 5, 22, 0), &w);
	assert_true(w.open);
	assert_int_equal(w.opened_ms, utc(2026, 12, 5, 21, 0));
	assert_int_equal(w.closes_ms, utc(2026, 12, 6, 5, 0));
	/* Refusals name the field and say why. */
	refused(
	    "0 0 * * sun#6", NG_EPARSE,
	    "schedule: day-of-week field \"sun#6\": rank after '#' must be 1-5 or L (the last)");
	refused(
	    "0 0 * * sun#0", NG_EPARSE,
	    "schedule: day-of-week field \"sun#0\": rank after '#' must be 1-5 or L (the last)");
	refused("0 0 * * sun#", NG_EPARSE,
		"schedule: day-of-week field \"sun#\": rank after '#' must be 1-5 or L (the last)");
	refused("0 0 * * mon-fri#1", NG_EPARSE,
		"schedule: day-of-week field \"mon-fri#1\": a rank in the month ('#' or 'L') takes "
		"one day, not a range, step or '*'");
	refused("0 0 * * */2L", NG_EPARSE,
		"schedule: day-of-week field \"*/2L\": bad step (not a number)");
	refused("0 0 * * 8#1", NG_EPARSE,
		"schedule: day-of-week field \"8#1\": value out of range 0-7 (or sun-sat)");
	refused("0 0 * * funday#1", NG_EPARSE,
		"schedule: day-of-week field \"funday#1\": unknown day name (sun-sat)");
	refused("0 0 5#1 * *", NG_EPARSE, "schedule: day-of-month field \"5#1\": not a number");
	refused("0 0 * feb sun#5", NG_EPARSE,
		"schedule: never fires within 8 years (the fifth weekday of February occurs only "
		"in some leap years)");
	/* Beside a day of the month (OR), that day must exist. */
	refused("3 1 31 2 2#5", NG_EPARSE,
		"schedule: never fires (day 31 of February does not exist)");
	(void)cron("3 1 29 2 2#5");
	/* A fifth weekday in February is fine beside another month (March 2027-2029 have four
	 * Sundays), or another day. */
	c = cron("0 0 * feb,mar sun#5");
	assert_int_equal(ng_cron_next(&c, u, sat), utc(2030, 3, 31, 0, 0)); /* none before */
	(void)cron("0 0 * feb sun#5,mon");
}

int main(void)
{
	(void)unsetenv("TZDIR");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_civil_dates),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_parse_fields),
	    cmocka_unit_test(test_day_of_month_or_day_of_week),
	    cmocka_unit_test(test_next_in_utc),
	    cmocka_unit_test(test_next_across_dst_paris),
	    cmocka_unit_test(test_next_across_dst_new_york),
	    cmocka_unit_test(test_windows),
	    cmocka_unit_test(test_always_open_windows_cost_one_search),
	    cmocka_unit_test(test_window_spans_across_dst),
	    cmocka_unit_test(test_prev),
	    cmocka_unit_test(test_windows_agree_with_merging),
	    cmocka_unit_test(test_windows_agree_with_merging_anywhere),
	    cmocka_unit_test(test_tz_get),
	    cmocka_unit_test(test_tz_get_from_many_threads),
	    cmocka_unit_test(test_utc_needs_no_file),
	    cmocka_unit_test(test_offsets),
	    cmocka_unit_test(test_from_local),
	    cmocka_unit_test(test_cron_nth_weekday_of_the_month),
	    cmocka_unit_test(test_tzif_footer_decides),
	    cmocka_unit_test(test_tzif_real_file_and_refusals),
	    cmocka_unit_test(test_tz_get_keeps_a_bounded_number_of_zones),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
