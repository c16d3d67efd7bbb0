#define NG_COMMON_STATUS_C /* the real ng_err_set(), not the analyzer's model */
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ng_status_str(ng_status st)
{
	switch (st) {
	case NG_OK:
		return "ok";
	case NG_ENOMEM:
		return "out of memory";
	case NG_EINVAL:
		return "invalid argument";
	case NG_EPARSE:
		return "parse error";
	case NG_ELIMIT:
		return "over limit";
	case NG_ENOTFOUND:
		return "not found";
	case NG_EIO:
		return "i/o error";
	case NG_ETIMEDOUT:
		return "timed out";
	case NG_EKUBE:
		return "api server error";
	case NG_ESTALE:
		return "resource version expired";
	case NG_EFORBIDDEN:
		return "forbidden";
	}
	return "unknown status";
}

const char *ng_strerror(int errnum)
{
	/* 128 bytes: every glibc and musl message is shorter. */
	static _Thread_local char buf[128];
	if (strerror_r(errnum, buf, sizeof(buf)) != 0)
		(void)snprintf(buf, sizeof(buf), "error %d", errnum);
	return buf;
}

ng_status ng_err_set(struct ng_err *err, ng_status st, size_t offset, const char *fmt, ...)
{
	if (!err)
		return st;
	err->status = st;
	err->offset = offset;
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return st;
}
