/* IANA time zones read from the system's tz database (TZif files, RFC 8536), and the civil-date
 * arithmetic that maintenance windows are computed with.
 *
 * Nothing here calls libc's localtime/mktime/tzset or touches $TZ: those keep process-global
 * state, and nodegate evaluates windows from many threads at once. A zone is an immutable value
 * that any number of threads read without a lock.
 *
 * Zones with leap-second records ("right/...") are refused: their transition times count leap
 * seconds, and nodegate's clock is POSIX time. */
#ifndef NG_COMMON_TZ_H
#define NG_COMMON_TZ_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/* Transitions one TZif data block may hold: the largest zones of tzdata 2025b have about 240
 * (64-bit block); tzcode itself refuses more than 2000 (TZ_MAX_TIMES). */
#define NG_TZ_MAX_TRANSITIONS 2000u
/* Local time types: an index is one byte, so 256 at most (RFC 8536 §3.2). */
#define NG_TZ_MAX_TYPES 256u
/* Bytes of abbreviations: real zones use under 50; tzcode's TZ_MAX_CHARS is 50 as well, but a
 * hand-made zone may carry longer names, so some room. */
#define NG_TZ_MAX_CHARS 512u
/* Leap-second records a header may state: bounded so that the version 1 block of a version 2+
 * file is skipped safely (a zone that uses them is refused). 27 exist as of 2025. */
#define NG_TZ_MAX_LEAPS 512u
/* Length of the footer's POSIX TZ string: real ones are under 50 bytes. */
#define NG_TZ_MAX_FOOTER 256u
/* Largest zone file ng_tz_get() reads: real ones are under 4 KiB. */
#define NG_TZ_MAX_FILE_BYTES (256u * 1024u)
/* Distinct zone names ng_tz_get() keeps: a cluster's budgets name a handful. Zones are never
 * freed (callers keep the pointers), so the table is bounded instead. */
#define NG_TZ_MAX_ZONES 1024u
/* Longest zone name: the longest in tzdata is under 40 bytes; 255 is a file-name limit. */
#define NG_TZ_MAX_NAME 255u
/* Largest |UTC offset| a zone may state, in seconds: RFC 8536 §3.2 asks for -89999..93599. */
#define NG_TZ_MAX_OFFSET_S 93599

/* A time zone: immutable once built. */
struct ng_tz;

/**
 * Parses a TZif file of @len bytes at @data (borrowed; versions 1 to 4). For version 2 and later
 * the 64-bit block is read, and the footer's POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3",
 * with the Jn, n and Mm.w.d rule forms, <+03>-3 quoted names and the /time forms of RFC 8536
 * §3.3.1, negative and over 24 h) decides instants after the last transition. Bounded by the
 * NG_TZ_MAX_* limits above. NG_EPARSE with a message in @reterr for truncated data, counts over
 * the limits, bad indices, unordered transitions, out-of-range offsets, a bad footer or leap
 * seconds; NG_ENOMEM.
 * On NG_OK *@ret_tz is malloc'ed: free it with ng_tz_free(). Any thread.
 */
NG_NODISCARD ng_status ng_tz_parse(const void *data, size_t len, struct ng_tz **ret_tz,
				   struct ng_err *reterr);

/** Frees a zone from ng_tz_parse() (NULL is fine). Never give it one from ng_tz_get(). */
void ng_tz_free(struct ng_tz *tz);

/**
 * The zone @name ("Europe/Paris", "America/New_York", "UTC"), read from the directory $TZDIR
 * names, else /usr/share/zoneinfo. @name is checked first: 1 to NG_TZ_MAX_NAME bytes of
 * [A-Za-z0-9_+-./], not starting with '/', with no empty, "." or ".." component, else NG_EPARSE
 * "not a zone name (an IANA name such as Europe/Paris)"; "localtime" and "posixrules" (the
 * host's zone) too. A missing file (or a directory): NG_ENOTFOUND "unknown time zone
 * "X" (not in DIR)". A file that is not TZif: NG_EPARSE "time zone "X": <why>". "UTC" and
 * "Etc/UTC" are built in and need no file. More than NG_TZ_MAX_ZONES distinct names: NG_ELIMIT.
 *
 * Each name is loaded once per process and kept: *@ret_tz is valid for the life of the process
 * and the same pointer on every call. Any thread (a mutex guards the table; the file is read
 * outside it).
 */
NG_NODISCARD ng_status ng_tz_get(const char *name, const struct ng_tz **ret_tz,
				 struct ng_err *reterr);

/** Seconds east of UTC in force at @utc_s (seconds since the epoch). Any thread. */
int32_t ng_tz_offset(const struct ng_tz *tz, int64_t utc_s);

/**
 * The instant (seconds since the epoch) at which wall time @local_s (seconds since the epoch as
 * if the wall clock were UTC) occurs in @tz. A wall time skipped by a forward change (02:30 on a
 * spring-forward day) is read with the offset in force before the change, which puts it past the
 * gap (02:30 -> 03:30 new time). A wall time that occurs twice (fall back) maps to its first
 * occurrence. Exact when at most one change falls within a day and a bit of @local_s (true of
 * every zone in tzdata). Any thread.
 */
int64_t ng_tz_from_local(const struct ng_tz *tz, int64_t local_s);

/** The smallest and largest offsets (seconds east of UTC) @tz ever states. */
void ng_tz_offset_range(const struct ng_tz *tz, int32_t *ret_min_s, int32_t *ret_max_s);

/**
 * The smallest and largest offsets in force at any instant of [@lo_s, @hi_s] (seconds since the
 * epoch): what ng_cron_next() narrows its search with. Costs O(log n + changes in the span).
 */
void ng_tz_offset_range_in(const struct ng_tz *tz, int64_t lo_s, int64_t hi_s, int32_t *ret_min_s,
			   int32_t *ret_max_s);

/* Civil dates in the proleptic Gregorian calendar, as days since 1970-01-01. */

/** Days since 1970-01-01 of @year-@month-@day (@month 1-12, @day 1-31, not checked). */
int64_t ng_days_from_civil(int64_t year, unsigned month, unsigned day);

/** The date of @days since 1970-01-01. */
void ng_civil_from_days(int64_t days, int64_t *ret_year, unsigned *ret_month, unsigned *ret_day);

/** Day of the week of @days since 1970-01-01: 0 Sunday .. 6 Saturday. */
unsigned ng_weekday_from_days(int64_t days);

/** Days in @month (1-12) of @year. */
unsigned ng_days_in_month(int64_t year, unsigned month);

#endif
