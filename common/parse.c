#include "common/parse.h"

#include <errno.h>
#include <stdbool.h>
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

static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

ng_status ng_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	char *out = malloc(len / 4 * 3 + 4);
	*ret = NULL;
	if (!out)
		return NG_ENOMEM;
	uint32_t acc = 0;
	size_t o = 0;
	int qn = 0, pad = 0;
	bool ended = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\r' || ch == '\n')
			continue;
		if (ended)
			goto fail;
		int v;
		if (ch == '=') {
			if (qn < 2)
				goto fail;
			pad++;
			v = 0;
		} else {
			v = b64_value(ch);
			if (v < 0 || pad > 0)
				goto fail;
		}
		acc = (acc << 6) | (uint32_t)v;
		if (++qn < 4)
			continue;
		out[o++] = (char)(acc >> 16);
		if (pad < 2)
			out[o++] = (char)(acc >> 8);
		if (pad < 1)
			out[o++] = (char)acc;
		ended = pad > 0;
		acc = 0;
		qn = 0;
	}
	if (qn != 0)
		goto fail;
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return NG_OK;
fail:
	explicit_bzero(out, o);
	free(out);
	return NG_EPARSE;
}

bool ng_dns_label(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}
