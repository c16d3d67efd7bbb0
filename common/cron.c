/* 5-field cron schedules and the maintenance windows they open. */
#include "common/cron.h"

#include "common/tz.h"

#include <stddef.h>
#include <string.h>

enum { F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, NFIELDS };

/* Name tables end with NULL. */
static const char *const month_names[14] = {NULL,  "jan", "feb", "mar", "apr", "may", "jun",
					    "jul", "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const month_full[13] = {NULL,      "January",  "February", "March",  "April",
					   "May",     "June",     "July",     "August", "September",
					   "October", "November", "December"};
static const char *const day_names[8] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const struct field {
	const char *name;
	unsigned min, max; /* accepted values (day-of-week: 7 is Sunday too) */
	const char *const *names;
	unsigned first_name; /* value of names[first_name] */
} fields[NFIELDS] = {
    {"minute", 0, 59, NULL, 0},          {"hour", 0, 23, NULL, 0},
    {"day-of-month", 1, 31, NULL, 0},    {"month", 1, 12, month_names, 1},
    {"day-of-week", 0, 7, day_names, 0},
};

/* Quoted text in messages is cut here: enough to recognise, short enough for the message. */
#define QUOTE_MAX 48

static ng_status field_err(struct ng_err *reterr, size_t off, unsigned f, const char *text,
			   size_t len, const char *why)
{
	return ng_err_set(reterr, NG_EPARSE, off, "schedule: %s field \"%.*s%s\": %s",
			  fields[f].name, (int)(len > QUOTE_MAX ? QUOTE_MAX : len), text,
			  len > QUOTE_MAX ? "..." : "", why);
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* A value of field @f: a number or, in month and day-of-week, a 3-letter name. Returns NULL
 * or why not. */
static const char *parse_value(unsigned f, const char *s, size_t len, unsigned *ret)
{
	if (len == 0)
		return "missing value";
	if (s[0] >= '0' && s[0] <= '9') {
		unsigned v = 0;
		for (size_t i = 0; i < len; i++) {
			if (s[i] < '0' || s[i] > '9')
				return "not a number";
			if (v < 1000)
				v = v * 10 + (unsigned)(s[i] - '0');
		}
		if (v < fields[f].min || v > fields[f].max)
			return f == F_MINUTE  ? "value out of range 0-59"
			       : f == F_HOUR  ? "value out of range 0-23"
			       : f == F_DOM   ? "value out of range 1-31"
			       : f == F_MONTH ? "value out of range 1-12 (or jan-dec)"
					      : "value out of range 0-7 (or sun-sat)";
		*ret = v;
		return NULL;
	}
	if (!fields[f].names)
		return "not a number";
	for (unsigned i = fields[f].first_name; fields[f].names[i] != NULL; i++) {
		const char *n = fields[f].names[i];
		if (len == 3 && lower(s[0]) == n[0] && lower(s[1]) == n[1] && lower(s[2]) == n[2]) {
			*ret = i;
			return NULL;
		}
	}
	return f == F_MONTH ? "unknown month name (jan-dec)" : "unknown day name (sun-sat)";
}

/* A day-of-week element with a rank in the month: "D#N" (N 1-5), "D#L" or "DL" (the last), D a
 * day name or number. Sets *@ret_handled when @s is one (then returns NULL or why not). */
static const char *parse_nth(const char *s, size_t len, uint64_t *nth, bool *ret_handled)
{
	const char *hash = memchr(s, '#', len);
	bool last = !hash && len >= 2 && (s[len - 1] == 'L' || s[len - 1] == 'l') &&
		    !memchr(s, '-', len) && !memchr(s, '/', len) && !memchr(s, '*', len);
	*ret_handled = hash || last;
	if (!*ret_handled)
		return NULL;
	size_t dlen = hash ? (size_t)(hash - s) : len - 1;
	if (memchr(s, '-', dlen) || memchr(s, '/', len) || memchr(s, '*', dlen) ||
	    memchr(s, '?', dlen))
		return "a rank in the month ('#' or 'L') takes one day, not a range, step or '*'";
	unsigned day, rank;
	const char *why = parse_value(F_DOW, s, dlen, &day);
	if (why)
		return why;
	if (last) {
		rank = NG_CRON_LAST;
	} else {
		const char *r = hash + 1;
		size_t rlen = len - dlen - 1;
		if (rlen == 1 && (r[0] == 'L' || r[0] == 'l'))
			rank = NG_CRON_LAST;
		else if (rlen == 1 && r[0] >= '1' && r[0] <= '5')
			rank = (unsigned)(r[0] - '0');
		else
			return "rank after '#' must be 1-5 or L (the last)";
	}
	*nth |= UINT64_C(1) << ((day == 7 ? 0 : day) * 8 + rank);
	return NULL;
}

/* One comma-separated element of field @f into @bits (@nth: the day-of-week field's ranked
 * days). Returns NULL or why not. */
static const char *parse_element(unsigned f, const char *s, size_t len, uint64_t *bits,
				 uint64_t *nth)
{
	if (f == F_DOW) {
		bool handled;
		const char *why = parse_nth(s, len, nth, &handled);
		if (handled)
			return why;
	}
	const char *slash = memchr(s, '/', len);
	size_t blen = slash ? (size_t)(slash - s) : len;
	unsigned lo, hi, step = 1;
	bool star = blen == 1 && (s[0] == '*' || s[0] == '?');
	const char *why;
	if (star) {
		if (s[0] == '?' && f != F_DOM && f != F_DOW)
			return "'?' is only for the day fields";
		lo = fields[f].min;
		hi = f == F_DOW ? 6 : fields[f].max;
	} else {
		const char *dash = memchr(s, '-', blen);
		size_t alen = dash ? (size_t)(dash - s) : blen;
		why = parse_value(f, s, alen, &lo);
		if (why)
			return why;
		hi = lo;
		if (dash) {
			why = parse_value(f, dash + 1, blen - alen - 1, &hi);
			if (why)
				return why;
			if (hi < lo)
				return "range goes backwards";
		} else if (slash) {
			/* n/step: from n to the end of the field. */
			hi = f == F_DOW ? 6 : fields[f].max;
			if (lo > hi)
				hi = lo;
		}
	}
	if (slash) {
		const char *t = slash + 1;
		size_t tlen = len - blen - 1;
		unsigned v = 0;
		if (tlen == 0)
			return "bad step (missing)";
		for (size_t i = 0; i < tlen; i++) {
			if (t[i] < '0' || t[i] > '9')
				return "bad step (not a number)";
			if (v < 1000)
				v = v * 10 + (unsigned)(t[i] - '0');
		}
		if (v < 1 || v > fields[f].max + (f == F_DOW ? 0 : 1) - fields[f].min)
			return "bad step (out of range for the field)";
		step = v;
	}
	for (unsigned v = lo; v <= hi; v += step)
		*bits |= UINT64_C(1) << (f == F_DOW && v == 7 ? 0 : v);
	return NULL;
}

static ng_status parse_field(unsigned f, const char *s, size_t len, size_t off, uint64_t *ret_bits,
			     uint64_t *ret_nth, bool *ret_star, struct ng_err *reterr)
{
	uint64_t bits = 0, nth = 0;
	size_t i = 0;
	while (i <= len) {
		const char *comma = memchr(s + i, ',', len - i);
		size_t elen = comma ? (size_t)(comma - (s + i)) : len - i;
		if (elen == 0)
			return field_err(reterr, off + i, f, s, len, "empty list element");
		const char *why = parse_element(f, s + i, elen, &bits, &nth);
		if (why)
			return field_err(reterr, off + i, f, s + i, elen, why);
		i += elen + 1;
	}
	*ret_bits = bits;
	*ret_nth = nth;
	*ret_star = (len == 1 && (s[0] == '*' || s[0] == '?')) ||
		    (len == 3 && (s[0] == '*' || s[0] == '?') && s[1] == '/' && s[2] == '1');
	return NG_OK;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool ieq(const char *a, size_t alen, const char *b)
{
	if (alen != strlen(b))
		return false;
	for (size_t i = 0; i < alen; i++)
		if (lower(a[i]) != b[i])
			return false;
	return true;
}

static const struct {
	const char *name, *expansion;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* Whether some day of the days/months sets exists (Feb 29 counts: it exists in leap years). */
static ng_status check_fires(const struct ng_cron *c, struct ng_err *reterr)
{
	/* With the day-of-week restricted, a day matches on its weekday alone (OR rule) or
	 * needs both (day-of-month '*'): every weekday occurs in every month either way, and so
	 * does its first to fourth and last occurrence; a fifth one does in every month but
	 * February, whose fifth weekday comes once in 28 years, beyond what a search looks at. */
	if (!c->weekdays_star) {
		uint64_t fifth = 0;
		for (unsigned d = 0; d < 7; d++)
			fifth |= UINT64_C(1) << (d * 8 + 5);
		bool fifth_of_feb =
		    !c->weekdays && !(c->nth & ~fifth) && (c->months & 0x1ffe) == (1u << 2);
		if (!fifth_of_feb)
			return NG_OK;
		if (c->days_star)
			return ng_err_set(reterr, NG_EPARSE, 0,
					  "schedule: never fires within 8 years (the fifth weekday "
					  "of February occurs only in some leap years)");
		/* Either day field: the day of the month must exist. */
	} else if (c->days_star) {
		return NG_OK;
	}
	unsigned first_month = 0;
	for (unsigned m = 1; m <= 12; m++) {
		if (!(c->months & (1u << m)))
			continue;
		if (!first_month)
			first_month = m;
		for (unsigned d = 1; d <= ng_days_in_month(2000, m); d++)
			if (c->days & (UINT32_C(1) << d))
				return NG_OK;
	}
	unsigned first_day = 1;
	while (!(c->days & (UINT32_C(1) << first_day)))
		first_day++;
	unsigned nmonths = (unsigned)__builtin_popcount(c->months);
	if (nmonths == 1)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "schedule: never fires (day %u of %s does not exist)", first_day,
				  month_full[first_month]);
	return ng_err_set(reterr, NG_EPARSE, 0,
			  "schedule: never fires (day %u and the others chosen exist in none of "
			  "the months chosen)",
			  first_day);
}

/* Splits @s (@len bytes) at blanks: the first NFIELDS + 1 words' starts and lengths, and how
 * many words there are. */
static size_t split_words(const char *s, size_t len, size_t *start, size_t *flen)
{
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		if (is_space(s[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && !is_space(s[j]))
			j++;
		if (n <= NFIELDS) {
			start[n] = i;
			flen[n] = j - i;
		}
		n++;
		i = j;
	}
	return n;
}

ng_status ng_cron_parse(const char *s, struct ng_cron *ret_cron, struct ng_err *reterr)
{
	if (!s)
		return ng_err_set(reterr, NG_EINVAL, 0, "schedule: missing");
	size_t len = strnlen(s, NG_CRON_MAX_BYTES + 1);
	if (len > NG_CRON_MAX_BYTES)
		return ng_err_set(reterr, NG_ELIMIT, 0, "schedule: longer than %u bytes",
				  NG_CRON_MAX_BYTES);
	size_t start[NFIELDS + 1], flen[NFIELDS + 1];
	size_t total = split_words(s, len, start, flen);
	if (total == 0)
		return ng_err_set(reterr, NG_EPARSE, 0, "schedule: empty");
	if (s[start[0]] == '@') {
		if (total != 1)
			return ng_err_set(reterr, NG_EPARSE, start[0],
					  "schedule: a macro such as @daily stands alone");
		const char *expansion = NULL;
		for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
			if (ieq(s + start[0], flen[0], macros[i].name))
				expansion = macros[i].expansion;
		if (!expansion)
			return ng_err_set(reterr, NG_EPARSE, start[0],
					  "schedule: unknown macro \"%.*s\" (@yearly, @annually, "
					  "@monthly, @weekly, @daily, @midnight, @hourly)",
					  (int)(flen[0] > QUOTE_MAX ? QUOTE_MAX : flen[0]),
					  s + start[0]);
		s = expansion;
		total = split_words(s, strlen(s), start, flen);
	}
	if (total != NFIELDS)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "schedule: expected 5 fields (minute hour day-of-month month "
				  "day-of-week), got %zu",
				  total);
	uint64_t bits[NFIELDS], nth[NFIELDS];
	bool star[NFIELDS];
	for (unsigned f = 0; f < NFIELDS; f++) {
		ng_status st = parse_field(f, s + start[f], flen[f], start[f], &bits[f], &nth[f],
					   &star[f], reterr);
		if (st != NG_OK)
			return st;
	}
	struct ng_cron c = {
	    .minutes = bits[F_MINUTE],
	    .hours = (uint32_t)bits[F_HOUR],
	    .days = (uint32_t)bits[F_DOM],
	    .months = (uint16_t)bits[F_MONTH],
	    .weekdays = (uint8_t)bits[F_DOW],
	    .nth = nth[F_DOW],
	    .days_star = star[F_DOM],
	    .weekdays_star = star[F_DOW],
	};
	ng_status st = check_fires(&c, reterr);
	if (st != NG_OK)
		return st;
	*ret_cron = c;
	return NG_OK;
}

/* Instants ng_cron_next() accepts, in ms: those ng_tz computes exactly (about 34,800 years
 * either side of 1970). */
#define CRON_LIMIT_MS ((INT64_C(1) << 40) * 1000)

static bool day_matches(const struct ng_cron *c, int64_t day)
{
	int64_t y;
	unsigned m, d;
	ng_civil_from_days(day, &y, &m, &d);
	if (!(c->months & (1u << m)))
		return false;
	bool dom = c->days & (UINT32_C(1) << d);
	unsigned wd = ng_weekday_from_days(day);
	bool dow = c->weekdays & (1u << wd);
	if (!dow && c->nth) {
		uint64_t ranks = c->nth >> (wd * 8);
		dow = (ranks & (UINT64_C(1) << ((d - 1) / 7 + 1))) ||
		      ((ranks & (UINT64_C(1) << NG_CRON_LAST)) && d + 7 > ng_days_in_month(y, m));
	}
	if (!c->days_star && !c->weekdays_star)
		return dom || dow;
	return dom && dow;
}

/* A month the schedule leaves out is skipped whole: a yearly schedule ("0 0 29 2 *") looks at
 * 29 days a year instead of 366. The first day of the month after @day's when @day's month is
 * not one of @c's, else @day. */
static int64_t skip_month_forward(const struct ng_cron *c, int64_t day)
{
	int64_t y;
	unsigned m, d;
	ng_civil_from_days(day, &y, &m, &d);
	if (c->months & (1u << m))
		return day;
	return m == 12 ? ng_days_from_civil(y + 1, 1, 1) : ng_days_from_civil(y, m + 1, 1);
}

/* The last day of the month before @day's when @day's month is not one of @c's, else @day. */
static int64_t skip_month_back(const struct ng_cron *c, int64_t day)
{
	int64_t y;
	unsigned m, d;
	ng_civil_from_days(day, &y, &m, &d);
	if (c->months & (1u << m))
		return day;
	return ng_days_from_civil(y, m, 1) - 1;
}

int64_t ng_cron_next(const struct ng_cron *c, const struct ng_tz *tz, int64_t from_ms)
{
	if (from_ms < -CRON_LIMIT_MS || from_ms > CRON_LIMIT_MS)
		return -1;
	/* Firings are whole seconds (whole minutes in any zone of today): the first >= from. */
	int64_t t0 = from_ms / 1000 + (from_ms % 1000 > 0);
	int32_t gmin, gmax;
	ng_tz_offset_range(tz, &gmin, &gmax);
	/* A wall time W fires at W - o, o an offset of the zone; near a DST gap a later W can
	 * fire earlier than an earlier one, so the search keeps the smallest instant >= t0 and
	 * stops once no later W can beat it. Each day's offsets are narrowed to those in force
	 * over the instants its wall times can map to, which makes both bounds tight. */
	bool found = false;
	int64_t best = -1;
	int64_t first_day = (t0 + gmin) / 86400 - ((t0 + gmin) % 86400 < 0);
	for (int64_t day = first_day; day <= first_day + NG_CRON_HORIZON_DAYS; day++) {
		int64_t d0 = day * 86400;
		if (found && d0 - gmax >= best)
			break;
		int64_t skip = skip_month_forward(c, day);
		if (skip != day) {
			day = skip - 1;
			continue;
		}
		if (!day_matches(c, day))
			continue;
		int32_t lmin, lmax;
		ng_tz_offset_range_in(tz, d0 - gmax - 1, d0 + 86400 - gmin + 1, &lmin, &lmax);
		for (unsigned h = 0; h < 24; h++) {
			if (!(c->hours & (UINT32_C(1) << h)))
				continue;
			int64_t hw = d0 + h * 3600;
			if (hw + 3599 < t0 + lmin)
				continue;
			for (unsigned m = 0; m < 60; m++) {
				if (!(c->minutes & (UINT64_C(1) << m)))
					continue;
				int64_t w = hw + m * 60;
				if (w < t0 + lmin)
					continue;
				if (found && w - lmax >= best)
					goto out;
				int64_t at = ng_tz_from_local(tz, w);
				if (at >= t0 && (!found || at < best)) {
					found = true;
					best = at;
				}
			}
		}
	}
out:
	return found ? best * 1000 : -1;
}

int64_t ng_cron_prev(const struct ng_cron *c, const struct ng_tz *tz, int64_t from_ms)
{
	if (from_ms < -CRON_LIMIT_MS || from_ms > CRON_LIMIT_MS)
		return -1;
	/* The last whole second <= from. */
	int64_t t1 = from_ms / 1000 - (from_ms % 1000 < 0);
	int32_t gmin, gmax;
	ng_tz_offset_range(tz, &gmin, &gmax);
	/* ng_cron_next() backwards: a wall time W fires at W - o, so only W <= t1 + o can fire
	 * at or before t1; the largest instant found is kept until no earlier W can beat it (a
	 * day's wall times fire at d0 + 86400 - gmin at the latest). */
	bool found = false;
	int64_t best = -1;
	int64_t last_day = (t1 + gmax) / 86400 - ((t1 + gmax) % 86400 < 0);
	for (int64_t day = last_day; day >= last_day - NG_CRON_HORIZON_DAYS; day--) {
		int64_t d0 = day * 86400;
		if (found && d0 + 86400 - gmin <= best)
			break;
		int64_t skip = skip_month_back(c, day);
		if (skip != day) {
			day = skip + 1;
			continue;
		}
		if (!day_matches(c, day))
			continue;
		int32_t lmin, lmax;
		ng_tz_offset_range_in(tz, d0 - gmax - 1, d0 + 86400 - gmin + 1, &lmin, &lmax);
		for (unsigned h = 24; h-- > 0;) {
			if (!(c->hours & (UINT32_C(1) << h)))
				continue;
			int64_t hw = d0 + h * 3600;
			if (hw - lmax > t1)
				continue;
			for (unsigned m = 60; m-- > 0;) {
				if (!(c->minutes & (UINT64_C(1) << m)))
					continue;
				int64_t w = hw + m * 60;
				if (w - lmax > t1)
					continue;
				/* This day's earlier wall times fire at w - lmin at the latest. */
				if (found && w - lmin <= best)
					goto next_day;
				int64_t at = ng_tz_from_local(tz, w);
				if (at <= t1 && (!found || at > best)) {
					found = true;
					best = at;
				}
			}
		}
	next_day:;
	}
	return found ? best * 1000 : -1;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* The largest wall-clock gap, in minutes, between two firings in a row of a schedule that
 * fires every day (the same minutes of every day, the last of one day to the first of the
 * next); -1 when some day does not fire. */
static int64_t daily_gap_min(const struct ng_cron *c)
{
	const uint32_t all_days = UINT32_C(0xfffffffe); /* 1-31 */
	bool days = (c->days & all_days) == all_days, weekdays = (c->weekdays & 0x7f) == 0x7f;
	bool every_day = (c->months & 0x1ffe) == 0x1ffe &&
			 (!c->days_star && !c->weekdays_star ? days || weekdays : days && weekdays);
	if (!every_day || !c->hours || !c->minutes)
		return -1;
	unsigned m_first = (unsigned)__builtin_ctzll(c->minutes);
	unsigned m_last = 63u - (unsigned)__builtin_clzll(c->minutes);
	int64_t gap = 0, prev = -1;
	for (unsigned m = m_first + 1; m <= m_last; m++)
		if (c->minutes & (UINT64_C(1) << m)) {
			int64_t g = (int64_t)m - (prev < 0 ? m_first : prev);
			gap = g > gap ? g : gap;
			prev = m;
		}
	/* From an hour's last firing to the next firing hour's first, tomorrow's included. */
	unsigned h_first = (unsigned)__builtin_ctz(c->hours);
	int64_t h_prev = h_first;
	for (unsigned h = h_first + 1; h <= 24; h++) {
		if (h < 24 && !(c->hours & (UINT32_C(1) << h)))
			continue;
		int64_t next = h < 24 ? h : h_first + 24;
		int64_t g = (next - h_prev) * 60 + m_first - m_last;
		gap = g > gap ? g : gap;
		h_prev = h;
	}
	return gap;
}

/* Whether every instant from @now_ms on is inside a window of @d ms: firings are never further
 * apart than @d from then on. On the wall clock they are at most daily_gap_min() apart; on the
 * real clock a gap also grows by what the clock is set back (a fall-back hour's wall times fire
 * once, the first time), never by more than the range of the offsets in force from the firings
 * before @now_ms on. Offsets the zone stated long ago (local mean time, wartime double summer
 * time) do not count: Paris ranges over 2 h in its history, 1 h from 1977 on. */
static bool always_open(const struct ng_cron *c, const struct ng_tz *tz, int64_t d, int64_t now_ms)
{
	int64_t gap_min = daily_gap_min(c);
	if (gap_min < 0 || gap_min * 60 * 1000 > d)
		return false;
	int32_t gmin, gmax;
	ng_tz_offset_range(tz, &gmin, &gmax);
	if ((gap_min * 60 + ((int64_t)gmax - gmin)) * 1000 <= d)
		return true;
	/* Two days before the earliest firing that can hold now: its wall day, and the day
	 * before it. */
	int64_t from_s = (now_ms - d) / 1000 - 2 * 86400;
	ng_tz_offset_range_in(tz, from_s, CRON_LIMIT_MS / 1000, &gmin, &gmax);
	return (gap_min * 60 + ((int64_t)gmax - gmin)) * 1000 <= d;
}

void ng_window_at(const struct ng_cron *c, const struct ng_tz *tz, int64_t duration_ms,
		  int64_t now_ms, struct ng_window_at *ret)
{
	int64_t d = duration_ms < 1 ? 1 : duration_ms;
	*ret = (struct ng_window_at){
	    .open = false, .opened_ms = -1, .closes_ms = -1, .next_open_ms = -1, .searches = 0};
	/* The earliest firing whose window [f, f + d) can hold now. */
	int64_t lo = now_ms < -CRON_LIMIT_MS + d ? -CRON_LIMIT_MS : now_ms - d + 1;
	int64_t f = ng_cron_next(c, tz, lo);
	ret->searches++;
	if (f == -1)
		return;
	if (f > now_ms) {
		ret->next_open_ms = f;
		return;
	}
	ret->open = true;
	ret->opened_ms = f;
	if (always_open(c, tz, d, now_ms))
		return; /* never closes: closes_ms stays -1 */
	/* Every window lasts d, so the latest firing <= end decides how far the windows that
	 * overlap or touch reach: jump from one to the next instead of walking every firing.
	 * Two jumps in a row cover more than d, so a span of any length costs the number of
	 * durations it lasts, at most NG_WINDOW_MAX_JUMPS. */
	int64_t last = ng_cron_prev(c, tz, now_ms);
	ret->searches++;
	if (last < f)
		last = f; /* not for a zone ng_tz_from_local() reads exactly */
	int64_t end = sat_add(last, d);
	for (unsigned i = 0; i < NG_WINDOW_MAX_JUMPS && end < INT64_MAX; i++) {
		int64_t g = ng_cron_prev(c, tz, end);
		ret->searches++;
		if (g <= last)
			break;
		last = g;
		end = sat_add(g, d);
	}
	ret->closes_ms = end;
}
