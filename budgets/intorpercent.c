#include "budgets/budgets.h"

#include "common/intern.h"
#include "common/parse.h"

#include <string.h>

/* Budgets count nodes; 1,000,000 is far above any cluster and keeps arithmetic in range. */
#define MAX_COUNT 1000000

ng_status bud_int_or_percent_parse(const char *buf, size_t len, struct bud_int_or_percent *ret,
				   struct ng_err *reterr)
{
	bool pct = len > 0 && buf[len - 1] == '%';
	size_t n = pct ? len - 1 : len;
	int64_t v;
	if (n == 0 || buf[0] == '+' || buf[0] == '-')
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "\"%.*s\" is not a non-negative integer or a percentage like "
				  "\"25%%\"",
				  (int)(len > 40 ? 40 : len), buf);
	ng_status st = ng_parse_i64(buf, n, 0, pct ? 100 : MAX_COUNT, &v);
	if (st == NG_ELIMIT)
		return ng_err_set(reterr, NG_ELIMIT, 0, "\"%.*s\" is out of range (%s)",
				  (int)(len > 40 ? 40 : len), buf,
				  pct ? "a percentage must be 0%..100%" : "at most 1000000");
	if (st != NG_OK)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "\"%.*s\" is not a non-negative integer or a percentage like "
				  "\"25%%\"",
				  (int)(len > 40 ? 40 : len), buf);
	ret->is_percent = pct;
	ret->value = v;
	return NG_OK;
}

ng_status bud_int_or_percent_from(const struct kube_int_or_string *v, const struct ng_intern *pool,
				  const char *field, struct bud_int_or_percent *ret,
				  struct ng_err *reterr)
{
	struct ng_err e = {0};
	struct bud_int_or_percent out;
	ng_status st;
	if (!v->set)
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: required", field);
	if (v->is_str) {
		size_t len;
		const char *s = ng_intern_str(pool, v->str, &len);
		/* A string must be a percentage; plain numbers are written as integers. */
		if (len == 0 || s[len - 1] != '%')
			return ng_err_set(reterr, NG_EPARSE, 0,
					  "%s: \"%.40s\" must be an integer or a percentage like "
					  "\"25%%\"",
					  field, s);
		st = bud_int_or_percent_parse(s, len, &out, &e);
	} else if (v->i < 0) {
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: must be >= 0 (got %lld)", field,
				  (long long)v->i);
	} else if (v->i > MAX_COUNT) {
		return ng_err_set(reterr, NG_ELIMIT, 0, "%s: must be <= %d", field, MAX_COUNT);
	} else {
		out.is_percent = false;
		out.value = v->i;
		st = NG_OK;
	}
	if (st != NG_OK)
		return ng_err_set(reterr, st, 0, "%s: %s", field, e.msg);
	*ret = out;
	return NG_OK;
}

int64_t bud_int_or_percent_scaled(const struct bud_int_or_percent *v, int64_t total)
{
	if (!v->is_percent)
		return v->value;
	return (v->value * total + 99) / 100;
}

void bud_check_limits(const struct bud_limits *l, int64_t pool, int64_t before, int64_t added,
		      struct bud_check *ret)
{
	struct bud_check c = {.pool = pool, .after = before + added, .max = -1, .min = -1};
	int64_t room = INT64_MAX;
	if (l->has_max) {
		c.max = bud_int_or_percent_scaled(&l->max, pool);
		room = c.max - before;
	}
	if (l->has_min) {
		c.min = bud_int_or_percent_scaled(&l->min, pool);
		int64_t keep = pool - before - c.min;
		room = keep < room ? keep : room;
	}
	c.ok = (c.max < 0 || c.after <= c.max) && (c.min < 0 || pool - c.after >= c.min);
	c.allowed = room == INT64_MAX ? pool - before : room;
	if (c.allowed < 0)
		c.allowed = 0;
	*ret = c;
}
