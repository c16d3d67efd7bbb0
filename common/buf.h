/* A growable byte buffer with a hard cap (curl's dynbuf idea): every append either fits under
 * the cap or fails with NG_ELIMIT and leaves the buffer as it was. */
#ifndef NG_COMMON_BUF_H
#define NG_COMMON_BUF_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_buf {
	char *data; /* NUL-terminated when len > 0; owned */
	size_t len;
	size_t alloc;
	size_t cap; /* the buffer never holds more than cap bytes */
};

/** Initialises an empty buffer that may grow to @cap bytes. No allocation happens yet. */
void ng_buf_init(struct ng_buf *b, size_t cap);
/** Frees the storage and returns the buffer to empty. Accepts a zeroed buffer. */
void ng_buf_finish(struct ng_buf *b);
/** Sets the length to 0, keeping storage. */
void ng_buf_reset(struct ng_buf *b);
/** Returns the data and its length, leaving the buffer empty. Caller frees with free(). */
char *ng_buf_take(struct ng_buf *b, size_t *ret_len);

/** Appends @len bytes. NG_ELIMIT over the cap, NG_ENOMEM when malloc fails. */
NG_NODISCARD ng_status ng_buf_append(struct ng_buf *b, const void *p, size_t len);
/** Appends a NUL-terminated string. */
NG_NODISCARD ng_status ng_buf_puts(struct ng_buf *b, const char *s);
/** Appends formatted text. */
NG_NODISCARD ng_status ng_buf_printf(struct ng_buf *b, const char *fmt, ...) NG_PRINTF(2, 3);
/** Appends a decimal integer. */
NG_NODISCARD ng_status ng_buf_i64(struct ng_buf *b, int64_t v);
/**
 * Appends @len bytes as a JSON string literal, quotes included, escaping what RFC 8259 requires
 * and any byte < 0x20. Invalid UTF-8 is replaced by U+FFFD so the output is always valid JSON.
 */
NG_NODISCARD ng_status ng_buf_json_str(struct ng_buf *b, const char *s, size_t len);
/** As ng_buf_json_str() followed by @ntail bytes of @tail (a key's ':' or nothing), in one
 * append when @s needs no escape. */
NG_NODISCARD ng_status ng_buf_json_str_tail(struct ng_buf *b, const char *s, size_t len,
					    const char *tail, size_t ntail);
/**
 * Appends @len bytes escaped for XML and HTML text and quoted attribute values: & < > " ' as
 * character references, tab, newline and carriage return as numeric references (an attribute
 * keeps them), and what XML 1.0 cannot hold (other bytes < 0x20, U+FFFE, U+FFFF) or invalid
 * UTF-8 as U+FFFD, so the output is always well-formed. NG_ELIMIT over the buffer's cap,
 * NG_ENOMEM; the buffer may then hold part of it.
 */
NG_NODISCARD ng_status ng_buf_xml_str(struct ng_buf *b, const char *s, size_t len);
/** Appends @len bytes at @p as standard base64 with padding (no line breaks). */
NG_NODISCARD ng_status ng_buf_base64(struct ng_buf *b, const void *p, size_t len);

/**
 * snprintf into a fixed array where truncation is intended (messages bounded by design): always
 * NUL-terminates, never fails.
 */
void ng_fmt(char *out, size_t cap, const char *fmt, ...) NG_PRINTF(3, 4);

/**
 * Room for one more element in the heap array @items (@n of *@cap elements of @size bytes used):
 * when full, reallocates it to twice the capacity (16 at first) and updates *@cap. Returns the
 * array to use from now on, or NULL (and @items, *@cap untouched) on OOM or overflow.
 */
NG_NODISCARD void *ng_array_grow(void *items, size_t *cap, size_t n, size_t size);

#endif
