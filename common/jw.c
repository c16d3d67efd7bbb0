#include "common/jw.h"

#include "common/buf.h"
#include "common/clock.h"

#include <string.h>

void ng_jw_init(struct ng_jw *w, struct ng_buf *b)
{
	*w = (struct ng_jw){.b = b};
}

void ng_jw_resume(struct ng_jw *w, struct ng_buf *b, uint32_t depth, uint64_t nonempty)
{
	*w = (struct ng_jw){.b = b, .depth = depth, .nonempty = nonempty};
	if (depth > NG_JW_MAX_DEPTH)
		w->st = NG_ELIMIT;
}

static void put(struct ng_jw *w, const char *s, size_t len)
{
	if (w->st == NG_OK)
		w->st = ng_buf_append(w->b, s, len);
}

/* The separator before a value or a key: none after a key or first in its container. */
static void sep(struct ng_jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth == 0)
		return;
	uint64_t bit = 1ull << (w->depth - 1);
	if (w->nonempty & bit)
		put(w, ",", 1);
	w->nonempty |= bit;
}

static void open_c(struct ng_jw *w, const char *c)
{
	sep(w);
	if (w->depth >= NG_JW_MAX_DEPTH) {
		if (w->st == NG_OK)
			w->st = NG_ELIMIT;
		return;
	}
	put(w, c, 1);
	w->depth++;
	w->nonempty &= ~(1ull << (w->depth - 1));
}

static void close_c(struct ng_jw *w, const char *c)
{
	if (w->depth == 0) {
		if (w->st == NG_OK)
			w->st = NG_EINVAL;
		return;
	}
	w->depth--;
	put(w, c, 1);
}

void ng_jw_obj(struct ng_jw *w)
{
	open_c(w, "{");
}

void ng_jw_obj_end(struct ng_jw *w)
{
	close_c(w, "}");
}

void ng_jw_arr(struct ng_jw *w)
{
	open_c(w, "[");
}

void ng_jw_arr_end(struct ng_jw *w)
{
	close_c(w, "]");
}

void ng_jw_key(struct ng_jw *w, const char *key)
{
	sep(w);
	if (w->st == NG_OK)
		w->st = ng_buf_json_str_tail(w->b, key, strlen(key), ":", 1);
	w->after_key = true;
}

void ng_jw_strn(struct ng_jw *w, const char *s, size_t len)
{
	sep(w);
	if (w->st == NG_OK)
		w->st = ng_buf_json_str(w->b, s, len);
}

void ng_jw_str(struct ng_jw *w, const char *s)
{
	if (!s) {
		ng_jw_null(w);
		return;
	}
	ng_jw_strn(w, s, strlen(s));
}

void ng_jw_i64(struct ng_jw *w, int64_t v)
{
	sep(w);
	if (w->st == NG_OK)
		w->st = ng_buf_i64(w->b, v);
}

void ng_jw_bool(struct ng_jw *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void ng_jw_null(struct ng_jw *w)
{
	sep(w);
	put(w, "null", 4);
}

void ng_jw_time(struct ng_jw *w, int64_t wall_ms)
{
	char ts[32];
	size_t n = ng_format_rfc3339_ms(wall_ms, ts);
	/* Kubernetes Time has second precision: ".123Z" becomes "Z". */
	ts[n - 5] = 'Z';
	ng_jw_strn(w, ts, n - 4);
}

void ng_jw_time_ms(struct ng_jw *w, int64_t wall_ms)
{
	char ts[32];
	ng_jw_strn(w, ts, ng_format_rfc3339_ms(wall_ms, ts));
}

void ng_jw_base64(struct ng_jw *w, const void *data, size_t len)
{
	sep(w);
	put(w, "\"", 1);
	if (w->st == NG_OK)
		w->st = ng_buf_base64(w->b, data, len);
	put(w, "\"", 1);
}

void ng_jw_obj_extend(struct ng_jw *w, const char *obj_json, size_t len)
{
	open_c(w, "{");
	if (len < 2 || obj_json[0] != '{' || obj_json[len - 1] != '}') {
		if (w->st == NG_OK)
			w->st = NG_EINVAL;
		return;
	}
	if (len == 2 || w->st != NG_OK)
		return;
	put(w, obj_json + 1, len - 2);
	w->nonempty |= 1ull << (w->depth - 1);
}

void ng_jw_raw(struct ng_jw *w, const char *json, size_t len)
{
	sep(w);
	put(w, json, len);
}

struct ng_buf *ng_jw_value_buf(struct ng_jw *w)
{
	sep(w);
	return w->st == NG_OK ? w->b : NULL;
}

void ng_jw_fail(struct ng_jw *w, ng_status st)
{
	if (w->st == NG_OK)
		w->st = st;
}

void ng_jw_kstr(struct ng_jw *w, const char *key, const char *s)
{
	ng_jw_key(w, key);
	ng_jw_str(w, s);
}

void ng_jw_ki64(struct ng_jw *w, const char *key, int64_t v)
{
	ng_jw_key(w, key);
	ng_jw_i64(w, v);
}

void ng_jw_kbool(struct ng_jw *w, const char *key, bool v)
{
	ng_jw_key(w, key);
	ng_jw_bool(w, v);
}

ng_status ng_jw_finish(struct ng_jw *w)
{
	if (w->st == NG_OK && (w->depth || w->after_key))
		return NG_EINVAL;
	return w->st;
}
