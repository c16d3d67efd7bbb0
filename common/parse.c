#include "common/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

ng_status ng_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *ret)
{
	char tmp[32];
	if (len == 0 || len >= sizeof(tmp))
		return len == 0 ? NG_EPARSE : NG_ELIMIT;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	size_t i = (tmp[0] == '-' || tmp[0] == '+') ? 1 : 0;
	if (i == len)
		return NG_EPARSE;
	for (; i < len; i++)
		if (tmp[i] < '0' || tmp[i] > '9')
			return NG_EPARSE;
	errno = 0;
	char *end = NULL;
	long long v = strtoll(tmp, &end, 10);
	if (errno == ERANGE)
		return NG_ELIMIT;
	if (errno || end != tmp + len)
		return NG_EPARSE;
	if (v < min || v > max)
		return NG_ELIMIT;
	*ret = (int64_t)v;
	return NG_OK;
}
