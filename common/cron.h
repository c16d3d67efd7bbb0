/* 5-field cron schedules read on a time zone's wall clock, and the maintenance windows they
 * open. Pure functions of their arguments: any thread. */
#ifndef NG_COMMON_CRON_H
#define NG_COMMON_CRON_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct ng_tz;

/* Longest schedule accepted: real ones are under 40 bytes. */
#define NG_CRON_MAX_BYTES 256u
/* How far ng_cron_next() looks: the sparsest schedule that parses (Feb 29 on a given weekday
 * set is OR'ed, so Feb 29 alone) fires at least every 8 years (2096 -> 2104). */
#define NG_CRON_HORIZON_DAYS (8 * 366 + 2)
/* Jumps ng_window_at() makes along windows that overlap or touch: each jump goes to the latest
 * firing before the span's end, so two jumps cover more than a duration and 32 cover 16
 * durations or more (past that, closes_ms is where the span is known to reach). A schedule that
 * never leaves a gap longer than the duration ("* * * * *" for 1h) is recognised first and
 * costs no jump at all. */
#define NG_WINDOW_MAX_JUMPS 32u

/* The rank of the last such weekday of a month, in struct ng_cron's nth. */
#define NG_CRON_LAST 6u

/* A parsed schedule. */
struct ng_cron {
	uint64_t minutes; /* bit m set: minute m (0-59) */
	uint32_t hours;   /* bit h: 0-23 */
	uint32_t days;    /* bit d: day of month 1-31 */
	uint16_t months;  /* bit m: 1-12 */
	uint8_t weekdays; /* bit d: 0-6, Sunday 0 (7 also means Sunday when parsing) */
	/* Weekdays of a given rank in the month ("sun#1", "fri#L"): bit d * 8 + k for weekday d
	 * (0-6) and rank k, 1-5 for the k-th such day of the month, NG_CRON_LAST for the last.
	 * They belong to the day-of-week field: a day matches it when its weekday is in
	 * weekdays or its weekday and rank are here. */
	uint64_t nth;
	/* The field was '*' or '?' (or '* /1'): standard cron day matching — when both day
	 * fields are restricted a day matches if EITHER matches, else both must. */
	bool days_star, weekdays_star;
};

/**
 * Parses "m h dom mon dow": each field '*', '?' (day fields only), numbers, ranges a-b, steps
 * * /n, a-b/n and n/n (n through the field's end), comma lists, month names jan-dec and day
 * names sun-sat (any case; 7 is Sunday too), in the day-of-week field a day's rank in its month
 * ("sun#1" the first Sunday, 1-5; "fri#L" or "5L" or "friL" the last Friday; numbers as
 * elsewhere, 0 or 7 Sunday), or one of the macros @yearly @annually @monthly
 * @weekly @daily @midnight @hourly. Fields are separated by spaces or tabs; leading and trailing
 * ones are allowed. Input over NG_CRON_MAX_BYTES: NG_ELIMIT. Malformed: NG_EPARSE with a
 * message that names the field and quotes the bad text ("schedule: hour field \"25\": value out
 * of range 0-23"). A schedule that can never fire ("0 0 30 2 *") is refused: "schedule: never
 * fires (day 30 of February does not exist)". Writes *@ret_cron only on NG_OK.
 */
NG_NODISCARD ng_status ng_cron_parse(const char *s, struct ng_cron *ret_cron,
				     struct ng_err *reterr);

/**
 * The first instant (ms since the epoch) >= @from_ms at which @c fires on @tz's wall clock ("0 22
 * * * 1-5" is 22:00 local on weekdays). A firing whose wall time falls in a DST gap fires once,
 * at the instant ng_tz_from_local() gives (past the gap); a wall time that occurs twice fires at
 * its first occurrence only. @from_ms is rounded up to a whole minute. Instants before 1970 are
 * negative and valid; -1 (never a firing: firings are whole seconds) when nothing fires
 * within NG_CRON_HORIZON_DAYS (not for a schedule ng_cron_parse() accepted) or @from_ms is
 * beyond +-2^62.
 */
int64_t ng_cron_next(const struct ng_cron *c, const struct ng_tz *tz, int64_t from_ms);

/**
 * The last instant (ms since the epoch) <= @from_ms at which @c fires on @tz's wall clock: the
 * mirror of ng_cron_next(), with the same DST rules (a firing is the instant ng_cron_next()
 * gives). @from_ms is rounded down to a whole second. -1 when nothing fires within
 * NG_CRON_HORIZON_DAYS before it or @from_ms is beyond +-2^62.
 */
int64_t ng_cron_prev(const struct ng_cron *c, const struct ng_tz *tz, int64_t from_ms);

/* Where an instant stands against a schedule's maintenance windows. */
struct ng_window_at {
	bool open;            /* @now_ms is inside a window */
	int64_t opened_ms;    /* when open: the earliest firing whose window contains now */
	int64_t closes_ms;    /* when open: when the span closes (overlapping or back-to-back
			       * windows merge into one span); -1 when it never does */
	int64_t next_open_ms; /* when closed: the next firing (> now); -1 none */
	/* What the answer cost: ng_cron_next() and ng_cron_prev() searches made, at most
	 * NG_WINDOW_MAX_JUMPS + 2 whatever the schedule and duration (tests count them). */
	unsigned searches;
};

/**
 * Where @now_ms stands against the windows that @c opens on @tz's wall clock, each open for
 * @duration_ms (> 0; a smaller value counts as 1 ms) from its firing. Windows that overlap or
 * touch merge. A schedule whose firings are never further apart than the duration from now on
 * (DST included: a fall-back hour fires once, so it widens a gap by an hour) is open at every
 * instant from now on: closes_ms is -1. Otherwise the span is followed for at
 * most NG_WINDOW_MAX_JUMPS jumps; past that, closes_ms is where it is known to reach so far
 * (earlier than the real close, never later: the window is open until then). Bounded work
 * whatever the schedule and duration: at most NG_WINDOW_MAX_JUMPS + 2 searches. Fields that
 * do not apply are -1.
 */
void ng_window_at(const struct ng_cron *c, const struct ng_tz *tz, int64_t duration_ms,
		  int64_t now_ms, struct ng_window_at *ret);

#endif
