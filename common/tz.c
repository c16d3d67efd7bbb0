/* TZif reading (RFC 8536), POSIX TZ rules, zone lookup and civil-date arithmetic. */
#include "common/tz.h"

#include "common/alloc.h"
#include "common/file.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A date rule of a POSIX TZ string (RFC 8536 §3.3.1, POSIX "TZ"). */
enum rule_kind { RULE_JULIAN1 /* Jn, 1-365, no Feb 29 */, RULE_JULIAN0 /* n, 0-365 */, RULE_MWD };
struct rule {
	enum rule_kind kind;
	unsigned day, month, week, wday;
	int32_t time_s; /* local time of day of the change, -167h..167h */
};

struct ng_tz {
	uint32_t ntrans, ntypes;
	const int64_t *trans; /* ascending */
	const uint8_t *idx;   /* type of each transition */
	const int32_t *utoff; /* seconds east of UTC of each type */
	bool has_rule, rule_dst;
	int32_t std_off, dst_off; /* the footer's, seconds east */
	struct rule start, end;
	int32_t min_off, max_off;
};

/* Instants are clamped to this many seconds either side of the epoch before any arithmetic
 * (about 34,800 years), so nothing overflows whatever a caller passes. */
#define TZ_CLAMP_S (INT64_C(1) << 40)

static int64_t clamp_s(int64_t t)
{
	return t < -TZ_CLAMP_S ? -TZ_CLAMP_S : t > TZ_CLAMP_S ? TZ_CLAMP_S : t;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Civil dates: the era-based algorithm (400-year cycles of 146097 days). */
int64_t ng_days_from_civil(int64_t year, unsigned month, unsigned day)
{
	int64_t y = month <= 2 ? year - 1 : year;
	int64_t era = floor_div(y, 400);
	int64_t yoe = y - era * 400;
	int64_t mp = month > 2 ? (int64_t)month - 3 : (int64_t)month + 9;
	int64_t doy = (153 * mp + 2) / 5 + (int64_t)day - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void ng_civil_from_days(int64_t days, int64_t *ret_year, unsigned *ret_month, unsigned *ret_day)
{
	int64_t z = days + 719468;
	int64_t era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	unsigned d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	unsigned m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*ret_year = yoe + era * 400 + (m <= 2);
	*ret_month = m;
	*ret_day = d;
}

unsigned ng_weekday_from_days(int64_t days)
{
	/* 1970-01-01 was a Thursday. */
	int64_t w = (days + 4) % 7;
	return (unsigned)(w < 0 ? w + 7 : w);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned ng_days_in_month(int64_t year, unsigned month)
{
	static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (month < 1 || month > 12)
		return 0;
	return mdays[month - 1] + (month == 2 && is_leap(year));
}

/* ---- POSIX TZ strings (the TZif footer) ---- */

struct tzstr {
	const char *s;
	size_t i, len;
};

static int peek(const struct tzstr *p)
{
	return p->i < p->len ? (unsigned char)p->s[p->i] : -1;
}

static bool is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* A zone abbreviation: 3 or more letters, or <...> of letters, digits, '+' and '-'. */
static bool tzstr_name(struct tzstr *p)
{
	size_t n = 0;
	if (peek(p) == '<') {
		p->i++;
		while (is_alpha(peek(p)) || is_digit(peek(p)) || peek(p) == '+' || peek(p) == '-') {
			p->i++;
			n++;
		}
		if (peek(p) != '>')
			return false;
		p->i++;
		return n >= 3;
	}
	while (is_alpha(peek(p))) {
		p->i++;
		n++;
	}
	return n >= 3;
}

/* An unsigned number of 1 to @digits digits, at most @max. */
static bool tzstr_num(struct tzstr *p, unsigned digits, unsigned max, unsigned *ret)
{
	unsigned v = 0, n = 0;
	while (n < digits && is_digit(peek(p))) {
		v = v * 10 + (unsigned)(peek(p) - '0');
		p->i++;
		n++;
	}
	if (n == 0 || v > max)
		return false;
	*ret = v;
	return true;
}

/* [+-]hh[:mm[:ss]] with hours at most @max_h, in seconds. */
static bool tzstr_time(struct tzstr *p, unsigned max_h, int32_t *ret_s)
{
	int sign = 1;
	if (peek(p) == '+' || peek(p) == '-') {
		sign = peek(p) == '-' ? -1 : 1;
		p->i++;
	}
	unsigned h, m = 0, s = 0;
	if (!tzstr_num(p, 3, max_h, &h))
		return false;
	if (peek(p) == ':') {
		p->i++;
		if (!tzstr_num(p, 2, 59, &m))
			return false;
		if (peek(p) == ':') {
			p->i++;
			if (!tzstr_num(p, 2, 59, &s))
				return false;
		}
	}
	*ret_s = sign * (int32_t)(h * 3600 + m * 60 + s);
	return true;
}

/* A date rule and its optional /time (02:00 when absent). */
static bool tzstr_rule(struct tzstr *p, struct rule *r)
{
	memset(r, 0, sizeof(*r));
	if (peek(p) == 'J') {
		p->i++;
		r->kind = RULE_JULIAN1;
		if (!tzstr_num(p, 3, 365, &r->day) || r->day < 1)
			return false;
	} else if (peek(p) == 'M') {
		p->i++;
		r->kind = RULE_MWD;
		if (!tzstr_num(p, 2, 12, &r->month) || r->month < 1 || peek(p) != '.')
			return false;
		p->i++;
		if (!tzstr_num(p, 1, 5, &r->week) || r->week < 1 || peek(p) != '.')
			return false;
		p->i++;
		if (!tzstr_num(p, 1, 6, &r->wday))
			return false;
	} else {
		r->kind = RULE_JULIAN0;
		if (!tzstr_num(p, 3, 365, &r->day))
			return false;
	}
	r->time_s = 2 * 3600;
	if (peek(p) == '/') {
		p->i++;
		/* RFC 8536 §3.3.1: -167 to 167 hours. */
		if (!tzstr_time(p, 167, &r->time_s))
			return false;
	}
	return true;
}

static bool parse_footer(const char *s, size_t len, struct ng_tz *tz)
{
	struct tzstr p = {s, 0, len};
	int32_t off;
	if (!tzstr_name(&p) || !tzstr_time(&p, 24, &off))
		return false;
	/* POSIX offsets count hours west of UTC. */
	tz->std_off = -off;
	tz->has_rule = true;
	if (p.i == len)
		return true;
	if (!tzstr_name(&p))
		return false;
	tz->rule_dst = true;
	tz->dst_off = tz->std_off + 3600;
	if (peek(&p) != ',' && p.i < len) {
		if (!tzstr_time(&p, 24, &off))
			return false;
		tz->dst_off = -off;
	}
	if (p.i == len) {
		/* No rule: POSIX leaves it to the implementation; tzcode uses the US rules. */
		tz->start = (struct rule){RULE_MWD, 0, 3, 2, 0, 7200};
		tz->end = (struct rule){RULE_MWD, 0, 11, 1, 0, 7200};
		return true;
	}
	if (peek(&p) != ',')
		return false;
	p.i++;
	if (!tzstr_rule(&p, &tz->start) || peek(&p) != ',')
		return false;
	p.i++;
	if (!tzstr_rule(&p, &tz->end))
		return false;
	return p.i == len;
}

/* Days since the epoch of the day @r names in @year. */
static int64_t rule_day(const struct rule *r, int64_t year)
{
	int64_t jan1 = ng_days_from_civil(year, 1, 1);
	switch (r->kind) {
	case RULE_JULIAN1:
		/* Feb 29 is never counted: J60 is March 1 in every year. */
		return jan1 + r->day - 1 + (is_leap(year) && r->day >= 60);
	case RULE_JULIAN0:
		return jan1 + r->day;
	case RULE_MWD:
	default: {
		int64_t first = ng_days_from_civil(year, r->month, 1);
		unsigned wd = ng_weekday_from_days(first);
		int64_t d = first + (int64_t)((r->wday + 7 - wd) % 7) + 7 * ((int64_t)r->week - 1);
		int64_t last = first + ng_days_in_month(year, r->month) - 1;
		while (d > last)
			d -= 7;
		return d;
	}
	}
}

/* The offset the footer's rule gives at @t (clamped). */
static int32_t rule_offset(const struct ng_tz *tz, int64_t t)
{
	if (!tz->rule_dst)
		return tz->std_off;
	int64_t y;
	unsigned m, d;
	ng_civil_from_days(floor_div(t, 86400), &y, &m, &d);
	/* The latest change at or before @t. A /time of up to 167 h (plus the offset) moves a
	 * change up to 8 days across a year's end, so the changes of year y - 1 can all fall
	 * after an early-January @t, and the last one before it be of year y - 2 (a rule such as
	 * ",1/0,J365/65" ends year y - 2's DST after year y - 1's starts): the years y - 2 to
	 * y + 1 hold it. At equal instants the start of DST wins, so a rule whose end meets the
	 * next start ("EST5EDT,0/0,J365/25") is DST all year. */
	bool found = false, dst = false, have_first = false, first_dst = false;
	int64_t best = 0, first = 0;
	for (int64_t yy = y - 2; yy <= y + 1; yy++) {
		int64_t s = rule_day(&tz->start, yy) * 86400 + tz->start.time_s - tz->std_off;
		int64_t e = rule_day(&tz->end, yy) * 86400 + tz->end.time_s - tz->dst_off;
		int64_t at[2] = {e, s};
		for (int k = 0; k < 2; k++) {
			bool on = k == 1;
			if (at[k] <= t && (!found || at[k] > best || (at[k] == best && on))) {
				found = true;
				best = at[k];
				dst = on;
			}
			if (!have_first || at[k] < first) {
				have_first = true;
				first = at[k];
				first_dst = !on;
			}
		}
	}
	if (!found)
		dst = first_dst;
	return dst ? tz->dst_off : tz->std_off;
}

int32_t ng_tz_offset(const struct ng_tz *tz, int64_t utc_s)
{
	int64_t t = clamp_s(utc_s);
	uint32_t n = tz->ntrans;
	if (n == 0)
		return tz->has_rule ? rule_offset(tz, t) : tz->utoff[0];
	if (t < tz->trans[0])
		return tz->utoff[0];
	if (t > tz->trans[n - 1] && tz->has_rule)
		return rule_offset(tz, t);
	/* The last transition at or before t. */
	uint32_t lo = 0, hi = n; /* trans[lo] <= t < trans[hi] */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (tz->trans[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return tz->utoff[tz->idx[lo]];
}

void ng_tz_offset_range(const struct ng_tz *tz, int32_t *ret_min_s, int32_t *ret_max_s)
{
	*ret_min_s = tz->min_off;
	*ret_max_s = tz->max_off;
}

static void widen(int32_t o, int32_t *min, int32_t *max)
{
	*min = o < *min ? o : *min;
	*max = o > *max ? o : *max;
}

void ng_tz_offset_range_in(const struct ng_tz *tz, int64_t lo_s, int64_t hi_s, int32_t *ret_min_s,
			   int32_t *ret_max_s)
{
	int64_t lo = clamp_s(lo_s), hi = clamp_s(hi_s);
	int32_t min = ng_tz_offset(tz, lo), max = min;
	if (tz->min_off == tz->max_off || hi <= lo)
		goto out;
	uint32_t n = tz->ntrans;
	/* Transitions of the table in (lo, hi]. */
	uint32_t a = 0, b = n; /* first index with trans > lo */
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (tz->trans[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (uint32_t i = a; i < n && tz->trans[i] <= hi; i++)
		widen(tz->utoff[tz->idx[i]], &min, &max);
	/* The footer's part, after the last transition. */
	if (tz->has_rule && (n == 0 || hi > tz->trans[n - 1])) {
		int64_t from = n == 0 || lo > tz->trans[n - 1] ? lo : tz->trans[n - 1] + 1;
		widen(rule_offset(tz, from), &min, &max);
		if (tz->rule_dst) {
			int64_t y0, y1;
			unsigned m, d;
			ng_civil_from_days(floor_div(from, 86400), &y0, &m, &d);
			ng_civil_from_days(floor_div(hi, 86400), &y1, &m, &d);
			for (int64_t y = y0 - 1; y <= y1 + 1; y++) {
				if (y - y0 > 4) {
					/* A span of years holds both. */
					widen(tz->std_off, &min, &max);
					widen(tz->dst_off, &min, &max);
					break;
				}
				int64_t s = rule_day(&tz->start, y) * 86400 + tz->start.time_s -
					    tz->std_off;
				int64_t e =
				    rule_day(&tz->end, y) * 86400 + tz->end.time_s - tz->dst_off;
				if ((s > from && s <= hi) || (e > from && e <= hi)) {
					widen(tz->std_off, &min, &max);
					widen(tz->dst_off, &min, &max);
				}
			}
		}
	}
out:
	*ret_min_s = min;
	*ret_max_s = max;
}

int64_t ng_tz_from_local(const struct ng_tz *tz, int64_t local_s)
{
	int64_t l = clamp_s(local_s);
	if (tz->min_off == tz->max_off)
		return l - tz->min_off;
	/* Every instant at which wall time l occurs lies in [l - max_off, l - min_off]. Try the
	 * offsets in force around that span: o is right when the instant l - o has offset o. */
	int32_t before = ng_tz_offset(tz, l - tz->max_off - 1);
	int32_t after = ng_tz_offset(tz, l - tz->min_off + 1);
	if (before == after && ng_tz_offset(tz, l - before) == before)
		return l - before; /* no change near: the common case */
	int32_t cand[5] = {
	    before,
	    ng_tz_offset(tz, l - tz->max_off),
	    ng_tz_offset(tz, l - (tz->max_off / 2 + tz->min_off / 2)),
	    ng_tz_offset(tz, l - tz->min_off),
	    after,
	};
	bool found = false;
	int64_t best = 0;
	for (int k = 0; k < 5; k++) {
		int64_t t = l - cand[k];
		if (ng_tz_offset(tz, t) == cand[k] && (!found || t < best)) {
			found = true;
			best = t;
		}
	}
	/* None: the wall time was skipped; read it with the offset before the change. */
	return found ? best : l - before;
}

/* ---- TZif ---- */

struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_hdr {
	uint8_t version;
	uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static ng_status read_header(struct rd *r, struct tzif_hdr *h, struct ng_err *reterr)
{
	if (r->len - r->pos < 44)
		return ng_err_set(reterr, NG_EPARSE, r->pos, "not a TZif file (too short)");
	const uint8_t *p = r->p + r->pos;
	if (memcmp(p, "TZif", 4) != 0)
		return ng_err_set(reterr, NG_EPARSE, r->pos, "not a TZif file (no TZif magic)");
	h->version = p[4];
	if (h->version != 0 && h->version < '2')
		return ng_err_set(reterr, NG_EPARSE, r->pos + 4, "unknown TZif version 0x%02x",
				  h->version);
	h->isutcnt = be32(p + 20);
	h->isstdcnt = be32(p + 24);
	h->leapcnt = be32(p + 28);
	h->timecnt = be32(p + 32);
	h->typecnt = be32(p + 36);
	h->charcnt = be32(p + 40);
	r->pos += 44;
	if (h->timecnt > NG_TZ_MAX_TRANSITIONS)
		return ng_err_set(reterr, NG_EPARSE, r->pos, "%u transitions, over the limit of %u",
				  h->timecnt, NG_TZ_MAX_TRANSITIONS);
	if (h->typecnt < 1 || h->typecnt > NG_TZ_MAX_TYPES)
		return ng_err_set(reterr, NG_EPARSE, r->pos, "%u local time types, not 1-%u",
				  h->typecnt, NG_TZ_MAX_TYPES);
	if (h->charcnt > NG_TZ_MAX_CHARS)
		return ng_err_set(reterr, NG_EPARSE, r->pos,
				  "%u bytes of abbreviations, over the limit of %u", h->charcnt,
				  NG_TZ_MAX_CHARS);
	if (h->leapcnt > NG_TZ_MAX_LEAPS)
		return ng_err_set(reterr, NG_EPARSE, r->pos,
				  "%u leap-second records, over the limit of %u", h->leapcnt,
				  NG_TZ_MAX_LEAPS);
	if ((h->isutcnt != 0 && h->isutcnt != h->typecnt) ||
	    (h->isstdcnt != 0 && h->isstdcnt != h->typecnt))
		return ng_err_set(reterr, NG_EPARSE, r->pos,
				  "standard/UT indicator counts do not match the type count");
	return NG_OK;
}

/* Bytes of the data block @h describes with @tsize-byte times (the counts are bounded, so
 * this cannot overflow). */
static size_t block_size(const struct tzif_hdr *h, size_t tsize)
{
	return (size_t)h->timecnt * tsize + h->timecnt + (size_t)h->typecnt * 6 + h->charcnt +
	       (size_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

/* The header that describes the data block nodegate reads (the 64-bit one of version 2 and
 * later) into @h, and the size of its times into *@ret_tsize; @r is left at the block. */
static ng_status locate_block(struct rd *r, struct tzif_hdr *h, size_t *ret_tsize,
			      struct ng_err *reterr)
{
	ng_status st = read_header(r, h, reterr);
	if (st != NG_OK)
		return st;
	*ret_tsize = 4;
	if (h->version >= '2') {
		/* Skip the 32-bit block to the 64-bit one. */
		size_t skip = block_size(h, 4);
		if (r->len - r->pos < skip)
			return ng_err_set(reterr, NG_EPARSE, r->len, "truncated (version 1 data)");
		r->pos += skip;
		uint8_t v1 = h->version;
		st = read_header(r, h, reterr);
		if (st != NG_OK)
			return st;
		if (h->version != v1)
			return ng_err_set(reterr, NG_EPARSE, r->pos - 40,
					  "the two headers state different versions");
		*ret_tsize = 8;
	}
	if (h->leapcnt > 0)
		/* Their transition times count leap seconds (up to 27 s off POSIX time), and
		 * nodegate's clock is POSIX time. */
		return ng_err_set(reterr, NG_EPARSE, r->pos - 16,
				  "a zone with leap seconds (right/...) is not supported: use the "
				  "zone without right/");
	if (r->len - r->pos < block_size(h, *ret_tsize))
		return ng_err_set(reterr, NG_EPARSE, r->len, "truncated (data block)");
	return NG_OK;
}

/* The transition times and their type indexes of the block at @r into @trans and @tidx. */
static ng_status read_transitions(const struct rd *r, const struct tzif_hdr *h, size_t tsize,
				  int64_t *trans, uint8_t *tidx, struct ng_err *reterr)
{
	const uint8_t *times = r->p + r->pos;
	const uint8_t *idx = times + (size_t)h->timecnt * tsize;
	for (uint32_t i = 0; i < h->timecnt; i++) {
		trans[i] = tsize == 8 ? be64(times + 8 * (size_t)i)
				      : (int64_t)(int32_t)be32(times + 4 * (size_t)i);
		if (i > 0 && trans[i] <= trans[i - 1])
			return ng_err_set(reterr, NG_EPARSE, (size_t)(times - r->p) + i * tsize,
					  "transition %u is not after the one before", i);
		tidx[i] = idx[i];
		if (idx[i] >= h->typecnt)
			return ng_err_set(reterr, NG_EPARSE, (size_t)(idx - r->p) + i,
					  "transition %u names type %u of %u", i, idx[i],
					  h->typecnt);
	}
	return NG_OK;
}

/* The UTC offsets of the local time types of the block at @r into @utoff, and their range into
 * @tz. */
static ng_status read_types(const struct rd *r, const struct tzif_hdr *h, size_t tsize,
			    int32_t *utoff, struct ng_tz *tz, struct ng_err *reterr)
{
	const uint8_t *types = r->p + r->pos + (size_t)h->timecnt * tsize + h->timecnt;
	tz->min_off = INT32_MAX;
	tz->max_off = INT32_MIN;
	for (uint32_t i = 0; i < h->typecnt; i++) {
		const uint8_t *t = types + 6 * (size_t)i;
		int32_t off = (int32_t)be32(t);
		if (off < -NG_TZ_MAX_OFFSET_S || off > NG_TZ_MAX_OFFSET_S)
			return ng_err_set(reterr, NG_EPARSE, (size_t)(t - r->p),
					  "type %u: UTC offset %d out of range", i, off);
		if (t[4] > 1 || t[5] >= h->charcnt)
			return ng_err_set(reterr, NG_EPARSE, (size_t)(t - r->p) + 4,
					  "type %u: bad DST flag or abbreviation index", i);
		utoff[i] = off;
		/* Types no transition uses (other than type 0, used before the first) state
		 * nothing in force, but counting them only widens the range. */
		tz->min_off = off < tz->min_off ? off : tz->min_off;
		tz->max_off = off > tz->max_off ? off : tz->max_off;
	}
	return NG_OK;
}

/* The TZ string after the 64-bit block, at @footer_at of @r, into @tz: the rule for times
 * after the last transition. */
static ng_status read_footer(const struct rd *r, size_t footer_at, struct ng_tz *tz,
			     struct ng_err *reterr)
{
	if (footer_at >= r->len || r->p[footer_at] != '\n')
		return ng_err_set(reterr, NG_EPARSE, footer_at, "footer missing");
	const char *fs = (const char *)r->p + footer_at + 1;
	size_t avail = r->len - footer_at - 1;
	const char *nl =
	    memchr(fs, '\n', avail < NG_TZ_MAX_FOOTER + 1 ? avail : NG_TZ_MAX_FOOTER + 1);
	if (!nl)
		return ng_err_set(reterr, NG_EPARSE, footer_at, "footer unterminated or too long");
	size_t flen = (size_t)(nl - fs);
	if (flen > 0 && !parse_footer(fs, flen, tz))
		return ng_err_set(reterr, NG_EPARSE, footer_at + 1, "bad TZ string in the footer");
	if (!tz->has_rule)
		return NG_OK;
	int32_t o[2] = {tz->std_off, tz->rule_dst ? tz->dst_off : tz->std_off};
	for (int k = 0; k < 2; k++) {
		if (o[k] < -NG_TZ_MAX_OFFSET_S || o[k] > NG_TZ_MAX_OFFSET_S)
			return ng_err_set(reterr, NG_EPARSE, footer_at + 1,
					  "footer: UTC offset out of range");
		tz->min_off = o[k] < tz->min_off ? o[k] : tz->min_off;
		tz->max_off = o[k] > tz->max_off ? o[k] : tz->max_off;
	}
	return NG_OK;
}

ng_status ng_tz_parse(const void *data, size_t len, struct ng_tz **ret_tz, struct ng_err *reterr)
{
	struct rd r = {data, len, 0};
	struct tzif_hdr h;
	size_t tsize;
	ng_status st = locate_block(&r, &h, &tsize, reterr);
	if (st != NG_OK)
		return st;
	size_t bytes =
	    sizeof(struct ng_tz) + (size_t)h.timecnt * 8 + (size_t)h.typecnt * 4 + h.timecnt;
	struct ng_tz *tz = calloc(1, bytes);
	if (!tz)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	int64_t *trans = (int64_t *)(tz + 1);
	int32_t *utoff = (int32_t *)(trans + h.timecnt);
	tz->ntrans = h.timecnt;
	tz->ntypes = h.typecnt;
	tz->trans = trans;
	tz->utoff = utoff;
	uint8_t *tidx = (uint8_t *)(utoff + h.typecnt);
	tz->idx = tidx;
	st = read_transitions(&r, &h, tsize, trans, tidx, reterr);
	if (st == NG_OK)
		st = read_types(&r, &h, tsize, utoff, tz, reterr);
	if (st == NG_OK && tsize == 8)
		st = read_footer(&r, r.pos + block_size(&h, tsize), tz, reterr);
	if (st != NG_OK) {
		free(tz);
		return st;
	}
	*ret_tz = tz;
	return NG_OK;
}

void ng_tz_free(struct ng_tz *tz)
{
	free(tz);
}

/* ---- Zone lookup ---- */

static const int32_t utc_offsets[1] = {0};
static const struct ng_tz utc_zone = {
    .ntrans = 0, .ntypes = 1, .utoff = utc_offsets, .min_off = 0, .max_off = 0};

static pthread_mutex_t zones_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *name;
	struct ng_tz *tz;
} zones[NG_TZ_MAX_ZONES];
static size_t nzones;

static bool zone_name_ok(const char *name, size_t *ret_len)
{
	size_t n = strnlen(name, NG_TZ_MAX_NAME + 1);
	if (n < 1 || n > NG_TZ_MAX_NAME || name[0] == '/' || strstr(name, "..") != NULL)
		return false;
	size_t comp = 0; /* bytes of the current component */
	for (size_t i = 0; i <= n; i++) {
		char c = name[i];
		if (c == '/' || c == '\0') {
			if (comp == 0 || (comp == 1 && name[i - 1] == '.'))
				return false;
			comp = 0;
			continue;
		}
		if (!(is_alpha((unsigned char)c) || is_digit((unsigned char)c) || c == '_' ||
		      c == '+' || c == '-' || c == '.'))
			return false;
		comp++;
	}
	*ret_len = n;
	return true;
}

/* The kept zone @name, or NULL; with zones_mu held. */
static struct ng_tz *zone_find(const char *name)
{
	for (size_t i = 0; i < nzones; i++)
		if (strcmp(zones[i].name, name) == 0)
			return zones[i].tz;
	return NULL;
}

static ng_status zone_load(const char *name, struct ng_tz **ret_tz, struct ng_err *reterr)
{
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *dir = getenv("TZDIR");
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	char path[4096 + NG_TZ_MAX_NAME + 2];
	int w = snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct stat sb;
	if (w < 0 || (size_t)w >= sizeof(path) || stat(path, &sb) != 0 || S_ISDIR(sb.st_mode))
		return ng_err_set(reterr, NG_ENOTFOUND, 0, "unknown time zone \"%s\" (not in %s)",
				  name, dir);
	char *buf = NULL;
	size_t len = 0;
	struct ng_err ferr = {0};
	ng_status st =
	    ng_read_file(path, NG_TZ_MAX_FILE_BYTES, "time zone", false, &buf, &len, &ferr);
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s", ferr.msg);
	struct ng_err perr = {0};
	st = ng_tz_parse(buf, len, ret_tz, &perr);
	free(buf);
	if (st != NG_OK)
		return ng_err_set(reterr, st, perr.offset, "time zone \"%s\": %s", name, perr.msg);
	return NG_OK;
}

ng_status ng_tz_get(const char *name, const struct ng_tz **ret_tz, struct ng_err *reterr)
{
	size_t len;
	if (!name || !zone_name_ok(name, &len))
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "not a zone name (an IANA name such as Europe/Paris)");
	/* Names of the database's own files that stand for the host's zone, not for a place. */
	if (strcmp(name, "localtime") == 0 || strcmp(name, "posixrules") == 0)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "\"%s\" is the host's zone, not an IANA zone name", name);
	if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
		*ret_tz = &utc_zone;
		return NG_OK;
	}
	pthread_mutex_lock(&zones_mu);
	struct ng_tz *tz = zone_find(name);
	bool full = nzones >= NG_TZ_MAX_ZONES;
	pthread_mutex_unlock(&zones_mu);
	if (tz) {
		*ret_tz = tz;
		return NG_OK;
	}
	if (full)
		return ng_err_set(reterr, NG_ELIMIT, 0, "time zone \"%s\": over %u distinct zones",
				  name, NG_TZ_MAX_ZONES);
	/* Read outside the lock (no lock across I/O); a thread that lost the race frees its
	 * copy and returns the kept one, so every caller sees the same pointer. */
	struct ng_tz *loaded = NULL;
	ng_status st = zone_load(name, &loaded, reterr);
	if (st != NG_OK)
		return st;
	pthread_mutex_lock(&zones_mu);
	tz = zone_find(name);
	if (!tz && nzones < NG_TZ_MAX_ZONES) {
		zones[nzones].name = ng_xstrdup(name);
		zones[nzones].tz = loaded;
		nzones++;
		tz = loaded;
		loaded = NULL;
	}
	pthread_mutex_unlock(&zones_mu);
	ng_tz_free(loaded);
	if (!tz)
		return ng_err_set(reterr, NG_ELIMIT, 0, "time zone \"%s\": over %u distinct zones",
				  name, NG_TZ_MAX_ZONES);
	*ret_tz = tz;
	return NG_OK;
}
