#include "common/clock.h"

#include "common/parse.h"

#include <stdio.h>
#include <time.h>

int64_t ng_now_mono_us(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ng_now_wall_ms(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

size_t ng_format_rfc3339_ms(int64_t wall_ms, char *out)
{
	if (wall_ms < NG_RFC3339_MIN_MS)
		wall_ms = NG_RFC3339_MIN_MS;
	if (wall_ms > NG_RFC3339_MAX_MS)
		wall_ms = NG_RFC3339_MAX_MS;
	/* Floored, so an instant before 1970 keeps a fraction in 0..999. */
	int64_t ms = wall_ms % 1000, secs = wall_ms / 1000;
	if (ms < 0) {
		ms += 1000;
		secs--;
	}
	time_t t = (time_t)secs;
	struct tm tm;
	(void)gmtime_r(&t, &tm);
	/* strftime's %Y does not pad years before 1000 to the four digits RFC 3339 wants. */
	int n = snprintf(out, 25, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
	return n > 0 ? (size_t)n : 0;
}

static int digits(const char *s, size_t n, int64_t *ret)
{
	return ng_parse_i64(s, n, 0, 9999, ret) == NG_OK && s[0] != '-' && s[0] != '+' ? 0 : -1;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

ng_status ng_parse_rfc3339_ms(const char *s, size_t len, int64_t *ret_ms)
{
	int64_t y, mo, d, h, mi, se, ms = 0;
	if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':')
		return NG_EPARSE;
	if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
	    digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &se))
		return NG_EPARSE;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return NG_EPARSE;
	size_t i = 19;
	if (i < len && s[i] == '.') {
		i++;
		size_t start = i;
		int scale = 100;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			ms += (s[i] - '0') * scale;
			scale /= 10;
			i++;
		}
		if (i == start)
			return NG_EPARSE;
	}
	int64_t off_min = 0;
	if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
		int64_t oh, om;
		if (digits(s + i + 1, 2, &oh) || digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
			return NG_EPARSE;
		off_min = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
		i += 6;
	} else {
		return NG_EPARSE;
	}
	if (i != len)
		return NG_EPARSE;
	int64_t days = days_from_civil(y, mo, d);
	*ret_ms = ((days * 24 + h) * 60 + mi - off_min) * 60000 + se * 1000 + ms;
	return NG_OK;
}
