/* libFuzzer target for the watch stream's framing (STYLE.md B12 "Fuzz"): kube_lines_feed()
 * (kube/watch.c), which splits the bytes of a watch response into newline-delimited events
 * however the HTTP chunks cut them. Decoding one event is the watch-event target's.
 *
 * The input is the stream. The first bytes also choose how it is cut: chunk lengths 1..64 taken
 * in turn from the first eight bytes, a line after which the reader stops, and a small cap.
 * Invariants, each abort()ing when broken:
 * - fed whole, the lines handed over are the input's '\n'-separated pieces but for the empty
 *   ones and the last, which stays held until its '\n' comes;
 * - fed in chunks, the same lines, in the same order;
 * - a reader that stops after some lines gets the rest, in order, from the next calls (with no
 *   new bytes when need be): the same lines again;
 * - with a cap, a chunk is refused with NG_ELIMIT exactly when what is held plus the chunk is
 *   over the cap, and then nothing changes: the lines handed over until then are the ones that
 *   ended before that chunk. */
#include "common/buf.h"
#include "common/limits.h"
#include "common/status.h"
#include "kube/internal.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The lines handed over so far, each as its length (8 bytes) and its bytes. */
struct seen {
	struct ng_buf lines;
	size_t count;
	size_t stop_every; /* 0: never stop */
	bool stopped;
};

static bool on_line(void *ctx, const char *line, size_t len)
{
	struct seen *s = ctx;
	uint64_t n = len;
	ng_fuzz_check(len > 0 && memchr(line, '\n', len) == NULL);
	ng_fuzz_check(ng_buf_append(&s->lines, &n, sizeof(n)) == NG_OK &&
		      ng_buf_append(&s->lines, line, len) == NG_OK);
	s->count++;
	s->stopped = s->stop_every && s->count % s->stop_every == 0;
	return !s->stopped;
}

static void seen_init(struct seen *s, size_t stop_every)
{
	ng_buf_init(&s->lines, 16 * (size_t)NG_MAX_BODY_BYTES);
	s->count = 0;
	s->stop_every = stop_every;
	s->stopped = false;
}

static bool same(const struct seen *a, const struct seen *b)
{
	return a->count == b->count && a->lines.len == b->lines.len &&
	       (a->lines.len == 0 || memcmp(a->lines.data, b->lines.data, a->lines.len) == 0);
}

/* The lines of @data's first @size bytes, as the framing must hand them over. */
static void expected(const uint8_t *data, size_t size, struct seen *s)
{
	size_t start = 0;
	for (size_t i = 0; i < size; i++) {
		if (data[i] != '\n')
			continue;
		if (i > start)
			(void)on_line(s, (const char *)data + start, i - start);
		start = i + 1;
	}
}

/* Bytes after the last '\n' of @data's first @size. */
static size_t tail(const uint8_t *data, size_t size)
{
	size_t n = 0;
	while (n < size && data[size - 1 - n] != '\n')
		n++;
	return n;
}

static size_t chunk_len(const uint8_t *data, size_t size, size_t k)
{
	size_t nsel = size < 8 ? size : 8;
	return nsel ? (size_t)(data[k % nsel] % 64) + 1 : 1;
}

/* Feeds @data in chunks (whole when @whole) into @l (capped at @cap), with @s reading; with a
 * stop, drains the held lines with empty feeds. Returns at the first refused chunk, with its
 * offset in *@ret_at. */
static ng_status feed(struct kube_lines *l, size_t cap, const uint8_t *data, size_t size,
		      bool whole, struct seen *s, size_t *ret_at)
{
	size_t at = 0, k = 0;
	while (at < size) {
		size_t n = whole ? size : chunk_len(data, size, k++);
		if (n > size - at)
			n = size - at;
		size_t held = l->buf.len;
		ng_status st = kube_lines_feed(l, (const char *)data + at, n, on_line, s);
		if (st != NG_OK) {
			ng_fuzz_check(st == NG_ELIMIT && held + n > cap && l->buf.len == held);
			*ret_at = at;
			return st;
		}
		ng_fuzz_check(held + n <= cap);
		while (s->stopped) {
			s->stopped = false;
			ng_fuzz_check(kube_lines_feed(l, NULL, 0, on_line, s) == NG_OK);
		}
		at += n;
	}
	*ret_at = size;
	return NG_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen want, whole, chunked, stopping, capped;
	struct kube_lines l;
	size_t at;
	seen_init(&want, 0);
	expected(data, size, &want);

	/* Whole, then in chunks: the same lines, and the last piece held. */
	seen_init(&whole, 0);
	kube_lines_init(&l, size);
	ng_fuzz_check(feed(&l, size, data, size, true, &whole, &at) == NG_OK);
	ng_fuzz_check(same(&want, &whole));
	size_t t = tail(data, size);
	ng_fuzz_check(l.buf.len == t && (t == 0 || memcmp(l.buf.data, data + size - t, t) == 0));
	kube_lines_finish(&l);

	seen_init(&chunked, 0);
	kube_lines_init(&l, size);
	ng_fuzz_check(feed(&l, size, data, size, false, &chunked, &at) == NG_OK);
	ng_fuzz_check(same(&want, &chunked) && l.buf.len == t);
	kube_lines_finish(&l);

	seen_init(&stopping, size > 8 ? (size_t)(data[8] % 4) + 1 : 1);
	kube_lines_init(&l, size);
	ng_fuzz_check(feed(&l, size, data, size, false, &stopping, &at) == NG_OK);
	stopping.stop_every = 0;
	ng_fuzz_check(same(&want, &stopping) && l.buf.len == t);
	kube_lines_finish(&l);

	/* A small cap: refused exactly when what is held plus the chunk is over it. */
	size_t cap = size > 9 ? (size_t)(data[9] % 128) + 1 : 16;
	seen_init(&capped, 0);
	kube_lines_init(&l, cap);
	ng_status st = feed(&l, cap, data, size, false, &capped, &at);
	struct seen before;
	seen_init(&before, 0);
	expected(data, at, &before);
	ng_fuzz_check(same(&before, &capped) && (st != NG_OK || at == size));
	kube_lines_finish(&l);

	ng_buf_finish(&want.lines);
	ng_buf_finish(&whole.lines);
	ng_buf_finish(&chunked.lines);
	ng_buf_finish(&stopping.lines);
	ng_buf_finish(&capped.lines);
	ng_buf_finish(&before.lines);
	return 0;
}
