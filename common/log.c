#include "common/log.h"

#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic int g_level = NG_LOG_INFO;
static _Atomic int g_fd = 2;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void ng_log_set_level(enum ng_log_level level)
{
	atomic_store_explicit(&g_level, (int)level, memory_order_relaxed);
}

enum ng_log_level ng_log_get_level(void)
{
	return (enum ng_log_level)atomic_load_explicit(&g_level, memory_order_relaxed);
}

ng_status ng_log_parse_level(const char *s, enum ng_log_level *ret)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*ret = (enum ng_log_level)i;
			return NG_OK;
		}
	}
	return NG_EPARSE;
}

void ng_log_set_fd(int fd)
{
	atomic_store_explicit(&g_fd, fd, memory_order_relaxed);
}

/* Room kept for the closing `,"trunc":true}\n`. */
#define TAIL_RESERVE 16

static void put(struct ng_logline *l, const char *s, size_t n)
{
	if (l->trunc)
		return;
	if (l->len + n > sizeof(l->buf) - TAIL_RESERVE) {
		l->trunc = true;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_escaped(struct ng_logline *l, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	put(l, "\"", 1);
	for (size_t i = 0; i < n && !l->trunc; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put(l, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put(l, e, 6);
		} else {
			put(l, (const char *)&c, 1);
		}
	}
	put(l, "\"", 1);
}

bool ng_log_begin(struct ng_logline *l, enum ng_log_level level, const char *component,
		  const char *msg)
{
	if ((int)level < atomic_load_explicit(&g_level, memory_order_relaxed))
		return false;
	l->len = 0;
	l->trunc = false;
	char ts[32];
	size_t n = ng_format_rfc3339_ms(ng_now_wall_ms(), ts);
	put(l, "{\"ts\":\"", 7);
	put(l, ts, n);
	put(l, "\",\"level\":\"", 11);
	put(l, level_names[level], strlen(level_names[level]));
	put(l, "\",\"component\":", 14);
	put_escaped(l, component, strlen(component));
	put(l, ",\"msg\":", 7);
	put_escaped(l, msg, strlen(msg));
	return true;
}

/* A field is written whole or not at all: when it does not fit, the line keeps the fields
 * before it and ends with "trunc":true. */
static void key(struct ng_logline *l, const char *k)
{
	put(l, ",", 1);
	put_escaped(l, k, strlen(k));
	put(l, ":", 1);
}

static void field_done(struct ng_logline *l, size_t mark)
{
	if (l->trunc)
		l->len = mark;
}

void ng_log_str(struct ng_logline *l, const char *k, const char *val)
{
	if (val) {
		ng_log_strn(l, k, val, strlen(val));
		return;
	}
	size_t mark = l->len;
	key(l, k);
	put(l, "null", 4);
	field_done(l, mark);
}

void ng_log_strn(struct ng_logline *l, const char *k, const char *val, size_t len)
{
	size_t mark = l->len;
	key(l, k);
	put_escaped(l, val, len);
	field_done(l, mark);
}

void ng_log_i64(struct ng_logline *l, const char *k, int64_t val)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, val);
	size_t mark = l->len;
	key(l, k);
	put(l, tmp, (size_t)n);
	field_done(l, mark);
}

void ng_log_bool(struct ng_logline *l, const char *k, bool val)
{
	size_t mark = l->len;
	key(l, k);
	put(l, val ? "true" : "false", val ? 4 : 5);
	field_done(l, mark);
}

void ng_log_end(struct ng_logline *l)
{
	/* TAIL_RESERVE guarantees room for this. */
	if (l->trunc) {
		memcpy(l->buf + l->len, ",\"trunc\":true", 13);
		l->len += 13;
	}
	l->buf[l->len++] = '}';
	l->buf[l->len++] = '\n';
	int fd = atomic_load_explicit(&g_fd, memory_order_relaxed);
	ssize_t w;
	do {
		w = write(fd, l->buf, l->len);
	} while (w < 0 && errno == EINTR);
}
