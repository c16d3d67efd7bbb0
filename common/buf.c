#include "common/buf.h"

#include "common/utf8.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ng_buf_init(struct ng_buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

void ng_buf_finish(struct ng_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
}

void ng_buf_reset(struct ng_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *ng_buf_take(struct ng_buf *b, size_t *ret_len)
{
	char *p = b->data;
	if (ret_len)
		*ret_len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	return p;
}

static ng_status reserve(struct ng_buf *b, size_t extra)
{
	if (extra > b->cap || b->len > b->cap - extra)
		return NG_ELIMIT;
	size_t need = b->len + extra + 1; /* room for the NUL */
	if (need <= b->alloc)
		return NG_OK;
	size_t n = b->alloc ? b->alloc : 256;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (n > b->cap + 1)
		n = b->cap + 1;
	char *p = realloc(b->data, n);
	if (!p)
		return NG_ENOMEM;
	b->data = p;
	b->alloc = n;
	return NG_OK;
}

ng_status ng_buf_append(struct ng_buf *b, const void *p, size_t len)
{
	ng_status st = reserve(b, len);
	if (st != NG_OK)
		return st;
	if (len)
		memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return NG_OK;
}

ng_status ng_buf_puts(struct ng_buf *b, const char *s)
{
	return ng_buf_append(b, s, strlen(s));
}

ng_status ng_buf_printf(struct ng_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NG_EINVAL;
	if ((size_t)n < sizeof(small))
		return ng_buf_append(b, small, (size_t)n);
	ng_status st = reserve(b, (size_t)n);
	if (st != NG_OK)
		return st;
	va_start(ap, fmt);
	(void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return NG_OK;
}

ng_status ng_buf_i64(struct ng_buf *b, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	return ng_buf_append(b, tmp, (size_t)n);
}

/* Whether @len bytes at @u need no escape in a JSON string (printable ASCII but '"' and '\\'). */
static bool json_plain(const unsigned char *u, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (u[i] < 0x20 || u[i] >= 0x80 || u[i] == '"' || u[i] == '\\')
			return false;
	return true;
}

/* @s (plain: json_plain()) quoted, then @ntail bytes of @tail: one reservation, one copy. */
static ng_status put_plain(struct ng_buf *b, const char *s, size_t len, const char *tail,
			   size_t ntail)
{
	ng_status st = reserve(b, len + 2 + ntail);
	if (st != NG_OK)
		return st;
	char *d = b->data + b->len;
	d[0] = '"';
	memcpy(d + 1, s, len);
	d[len + 1] = '"';
	if (ntail)
		memcpy(d + len + 2, tail, ntail);
	b->len += len + 2 + ntail;
	b->data[b->len] = '\0';
	return NG_OK;
}

ng_status ng_buf_json_str_tail(struct ng_buf *b, const char *s, size_t len, const char *tail,
			       size_t ntail)
{
	/* The common case, names and words, in one append. */
	if (json_plain((const unsigned char *)s, len))
		return put_plain(b, s, len, tail, ntail);
	ng_status st = ng_buf_json_str(b, s, len);
	return st ? st : ng_buf_append(b, tail, ntail);
}

ng_status ng_buf_json_str(struct ng_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	if (json_plain((const unsigned char *)s, len))
		return put_plain(b, s, len, "", 0);
	size_t start = b->len;
	ng_status st = ng_buf_append(b, "\"", 1);
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (st == NG_OK && i < len) {
		size_t run = i;
		/* Copy plain ASCII runs in one append. */
		while (run < len && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' &&
		       u[run] != '\\')
			run++;
		if (run > i) {
			st = ng_buf_append(b, s + i, run - i);
			i = run;
			continue;
		}
		unsigned char c = u[i];
		char esc[7];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			st = ng_buf_append(b, esc, 2);
			i++;
		} else if (c == '\n' || c == '\r' || c == '\t') {
			esc[0] = '\\';
			esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			st = ng_buf_append(b, esc, 2);
			i++;
		} else if (c < 0x20) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			st = ng_buf_append(b, esc, 6);
			i++;
		} else {
			size_t n = ng_utf8_seq_len(u + i, len - i);
			if (n == 0) {
				st = ng_buf_append(b, "\xef\xbf\xbd", 3);
				i++;
			} else {
				st = ng_buf_append(b, s + i, n);
				i += n;
			}
		}
	}
	if (st == NG_OK)
		st = ng_buf_append(b, "\"", 1);
	if (st != NG_OK) {
		b->len = start;
		if (b->data)
			b->data[start] = '\0';
	}
	return st;
}

void ng_fmt(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(out, cap, fmt, ap);
	va_end(ap);
}

void *ng_array_grow(void *items, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return items;
	size_t next = *cap ? *cap * 2 : 16;
	if (size == 0 || next < *cap || next > SIZE_MAX / size)
		return NULL;
	void *p = realloc(items, next * size);
	if (p)
		*cap = next;
	return p;
}

ng_status ng_buf_base64(struct ng_buf *b, const void *p, size_t len)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = p;
	ng_status st = NG_OK;
	for (size_t i = 0; st == NG_OK && i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		char q[4] = {abc[v >> 18], abc[(v >> 12) & 63],
			     i + 1 < len ? abc[(v >> 6) & 63] : '=',
			     i + 2 < len ? abc[v & 63] : '='};
		st = ng_buf_append(b, q, 4);
	}
	return st;
}

/* The reference that stands for byte @c in XML text and attributes, or NULL when it stands for
 * itself. */
static const char *xml_ref(unsigned char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	case '\t':
		return "&#9;";
	case '\n':
		return "&#10;";
	case '\r':
		return "&#13;";
	default:
		return c < 0x20 ? "\xef\xbf\xbd" : NULL;
	}
}

ng_status ng_buf_xml_str(struct ng_buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	ng_status st = NG_OK;
	size_t i = 0;
	while (st == NG_OK && i < len) {
		size_t run = i;
		/* Copy plain ASCII runs in one append. */
		while (run < len && u[run] < 0x80 && !xml_ref(u[run]))
			run++;
		if (run > i) {
			st = ng_buf_append(b, s + i, run - i);
			i = run;
			continue;
		}
		const char *ref = xml_ref(u[i]);
		size_t n = ref ? 1 : ng_utf8_seq_len(u + i, len - i);
		/* U+FFFE and U+FFFF are not XML characters. */
		if (n == 3 && u[i] == 0xef && u[i + 1] == 0xbf && u[i + 2] >= 0xbe)
			ref = "\xef\xbf\xbd";
		if (n == 0) {
			ref = "\xef\xbf\xbd";
			n = 1;
		}
		st = ref ? ng_buf_puts(b, ref) : ng_buf_append(b, s + i, n);
		i += n;
	}
	return st;
}
