/* bench-loadgen: an HTTPS load client for nodegate's webhook benchmarks (bench/webhook.py).
 *
 * N keep-alive TLS connections post request bodies read from files (round-robin over them) and
 * time each answer. Two modes:
 *   --rate R   open loop: request i is due at t0 + i/R whether or not the server kept up; its
 *              latency runs from that scheduled time, so a request that waits for a free
 *              connection carries its wait (a stall of the server is not hidden by the client
 *              slowing down: no coordinated omission).
 *   (no rate)  closed loop: every idle connection sends at once, as fast as the server answers.
 * Latencies go into a log-linear histogram (under 0.8 % error at any magnitude, fixed size).
 * Progress goes to stderr; the last line on stdout is one JSON object:
 *   {"requests":N,"errors":N,"seconds":S,"rate":R,"p50_us":..,"p90_us":..,"p99_us":..,
 *    "p999_us":..,"max_us":..}
 * requests: answers and failures of the requests due (open loop) or sent (closed loop) in the
 * measured window after --warmup; errors: those that were not a 200, failed or timed out, plus
 * connection failures in the window; rate: requests per second of the window. Percentiles are
 * over the answered requests. */
#include "common/parse.h"
#include "common/status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* Admission reviews are a few KiB; the API server itself refuses bodies over 3 MiB. */
#define MAX_BODY_BYTES (4 << 20)
#define MAX_BODIES 16
/* nodegate's answers are under 4 KiB; a response that does not fit is an error, not a resize. */
#define RESP_CAP (64 * 1024)
#define HEAD_CAP (16 * 1024)
#define MAX_CONNECTIONS 4096
#define MAX_THREADS 64
/* A connect that failed is retried after this long, so a dead server is not a busy loop. */
#define RECONNECT_DELAY_NS INT64_C(100000000)
/* Error messages printed per thread; the rest are only counted. */
#define MAX_PRINTED_ERRORS 5

/* The histogram: values in ns below 256 are exact; above, each power of two is cut into 128
 * equal buckets (relative width 1/128). Values are clamped to 2^42 ns (73 minutes). */
#define HIST_LINEAR 256
#define HIST_SUB 128
#define HIST_MAX_EXP 34
#define HIST_BUCKETS (HIST_LINEAR + HIST_MAX_EXP * HIST_SUB)
#define HIST_CLAMP ((UINT64_C(1) << 42) - 1)

struct hist {
	uint64_t counts[HIST_BUCKETS];
	uint64_t total;
	uint64_t max_ns;
};

static size_t hist_index(uint64_t v)
{
	if (v > HIST_CLAMP)
		v = HIST_CLAMP;
	if (v < HIST_LINEAR)
		return (size_t)v;
	int e = 63 - __builtin_clzll(v) - 7; /* v >> e lies in [128, 256) */
	return HIST_LINEAR + (size_t)(e - 1) * HIST_SUB + (size_t)((v >> e) - HIST_SUB);
}

/* The highest value that falls into bucket i. */
static uint64_t hist_upper(size_t i)
{
	if (i < HIST_LINEAR)
		return i;
	int e = (int)((i - HIST_LINEAR) / HIST_SUB) + 1;
	uint64_t m = (i - HIST_LINEAR) % HIST_SUB + HIST_SUB;
	return ((m + 1) << e) - 1;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->counts[hist_index(v)]++;
	h->total++;
	if (v > h->max_ns)
		h->max_ns = v;
}

static void hist_merge(struct hist *into, const struct hist *from)
{
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		into->counts[i] += from->counts[i];
	into->total += from->total;
	if (from->max_ns > into->max_ns)
		into->max_ns = from->max_ns;
}

static double hist_quantile_us(const struct hist *h, double q)
{
	if (h->total == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)h->total);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t v = hist_upper(i);
			return (double)(v < h->max_ns ? v : h->max_ns) / 1e3;
		}
	}
	return (double)h->max_ns / 1e3;
}

struct request {
	char *data; /* head and body, sent with one SSL_write */
	size_t len;
};

struct options {
	const char *host;
	int port;
	const char *path;
	const char *cacert;
	const char *body_files[MAX_BODIES];
	int nbodies;
	int connections;
	int threads;
	double rate; /* requests per second in all; 0: closed loop */
	double duration_s;
	double warmup_s;
	int64_t timeout_ns;
};

static struct options opt = {
    .host = "127.0.0.1",
    .path = "/",
    .connections = 16,
    .threads = 1,
    .duration_s = 10,
    .timeout_ns = INT64_C(5000) * 1000000,
};
static struct request requests[MAX_BODIES];
static struct sockaddr_storage server_addr;
static socklen_t server_addrlen;
static bool host_is_ip;
static SSL_CTX *ssl_ctx;

/* Shared between the threads: the schedule's origin and the progress counters. */
static int64_t g_t0_ns;
static atomic_uint_fast64_t g_answers;
static atomic_uint_fast64_t g_failures;
static pthread_barrier_t g_barrier;
static atomic_bool g_setup_failed;

enum conn_state { C_CLOSED, C_CONNECTING, C_HANDSHAKE, C_IDLE, C_WRITING, C_READING };

struct resp {
	int status;
	size_t head_len;
	int64_t content_length; /* -1: none */
	bool chunked;
	bool close;
};

struct conn {
	int fd;
	SSL *ssl;
	enum conn_state state;
	bool in_idle_stack;
	bool measured;       /* the request in flight counts in the results */
	int64_t start_ns;    /* its scheduled (open loop) or send (closed loop) time */
	int64_t deadline_ns; /* connect, handshake or answer; 0: none */
	int64_t retry_ns;    /* C_CLOSED: reopen from then on */
	const struct request *req;
	struct resp resp;
	size_t rlen;
	char *rbuf; /* RESP_CAP bytes */
};

enum phase { PHASE_SETUP, PHASE_RUN };

struct worker {
	int id;
	pthread_t thread;
	int epfd;
	int tfd;
	int64_t armed_ns;
	enum phase phase;
	struct conn *conns;
	int nconns;
	int *idle;
	int nidle;
	/* open loop: this worker sends requests id, id + threads, ...: due at t0 + first_ns +
	 * j * interval_ns for its j-th one */
	double interval_ns;
	double first_ns;
	uint64_t next; /* the next of its requests to send */
	uint64_t end;  /* the number of its requests due before the window ends */
	uint64_t rr;   /* closed loop: body round robin */
	int64_t mstart_ns, mend_ns, hard_end_ns;
	int inflight;
	struct hist hist;
	uint64_t requests, errors;
	uint64_t warmup_errors; /* and after the window: not in the results */
	int printed;
	/* how late the loop woke up for its timer at worst: the client's own stalls, which a
	 * reader of the latencies must tell from the server's */
	int64_t max_lag_ns;
	char setup_error[256];
};

static int64_t now_ns(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void)fputs("bench-loadgen: ", stderr);
	(void)vfprintf(stderr, fmt, ap);
	(void)fputc('\n', stderr);
	va_end(ap);
	/* Workers die too: _exit() runs no atexit handler (OpenSSL's cleanup) under their feet. */
	(void)fflush(stdout);
	_exit(2);
}

static const char *ssl_reason(int ssl_err)
{
	unsigned long e = ERR_get_error();
	ERR_clear_error();
	if (e)
		return ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "TLS error";
	if (ssl_err == SSL_ERROR_SYSCALL)
		return errno ? ng_strerror(errno) : "connection closed by the server";
	if (ssl_err == SSL_ERROR_ZERO_RETURN)
		return "connection closed by the server";
	return "TLS error";
}

static void report(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct worker *w, const char *fmt, ...)
{
	if (w->printed > MAX_PRINTED_ERRORS)
		return;
	if (w->printed++ == MAX_PRINTED_ERRORS) {
		(void)fprintf(stderr, "bench-loadgen: thread %d: further errors only counted\n",
			      w->id);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	(void)fprintf(stderr, "bench-loadgen: thread %d: ", w->id);
	(void)vfprintf(stderr, fmt, ap);
	(void)fputc('\n', stderr);
	va_end(ap);
}

static void make_idle(struct worker *w, struct conn *c)
{
	c->state = C_IDLE;
	c->deadline_ns = 0;
	if (!c->in_idle_stack) {
		c->in_idle_stack = true;
		w->idle[w->nidle++] = (int)(c - w->conns);
	}
}

static struct conn *pop_idle(struct worker *w)
{
	while (w->nidle > 0) {
		struct conn *c = &w->conns[w->idle[--w->nidle]];
		c->in_idle_stack = false;
		if (c->state == C_IDLE)
			return c;
	}
	return NULL;
}

static void conn_close(struct conn *c)
{
	if (c->ssl)
		SSL_free(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		(void)close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	c->state = C_CLOSED;
	c->deadline_ns = 0;
	c->rlen = 0;
}

/* A connection or its request failed: count it, close, and reopen (after a delay if no
 * request was on it, so a refusing server is not hammered). */
static void conn_fail(struct worker *w, struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void conn_fail(struct worker *w, struct conn *c, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int64_t now = now_ns();
	bool had_request = c->state == C_WRITING || c->state == C_READING;
	if (w->phase == PHASE_SETUP) {
		if (!w->setup_error[0])
			(void)snprintf(w->setup_error, sizeof(w->setup_error), "%s", msg);
	} else if (had_request) {
		w->inflight--;
		if (c->measured) {
			w->requests++;
			w->errors++;
		} else {
			w->warmup_errors++;
		}
		atomic_fetch_add(&g_failures, 1);
		report(w, "%s", msg);
	} else {
		if (now >= w->mstart_ns && now < w->mend_ns)
			w->errors++;
		else
			w->warmup_errors++;
		atomic_fetch_add(&g_failures, 1);
		report(w, "%s", msg);
	}
	conn_close(c);
	c->retry_ns = had_request ? now : now + RECONNECT_DELAY_NS;
}

static void drive(struct worker *w, struct conn *c, uint32_t ev);

static void conn_open(struct worker *w, struct conn *c)
{
	int64_t now = now_ns();
	c->deadline_ns = now + opt.timeout_ns;
	c->state = C_CONNECTING;
	c->fd = socket(server_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		conn_fail(w, c, "socket: %s", ng_strerror(errno));
		return;
	}
	int one = 1;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->ssl = SSL_new(ssl_ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		conn_fail(w, c, "SSL_new: %s", ssl_reason(0));
		return;
	}
	SSL_set_connect_state(c->ssl);
	if (!host_is_ip) {
		/* SSL_set_tlsext_host_name() without its macro's cast that drops const */
		(void)SSL_ctrl(c->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
			       (void *)(uintptr_t)opt.host);
		if (opt.cacert)
			(void)SSL_set1_host(c->ssl, opt.host);
	} else if (opt.cacert) {
		/* an address is matched against the certificate's IP SANs */
		(void)X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), opt.host);
	}
	struct epoll_event ee = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				 .data.ptr = c};
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ee) != 0) {
		conn_fail(w, c, "epoll_ctl: %s", ng_strerror(errno));
		return;
	}
	if (connect(c->fd, (const struct sockaddr *)&server_addr, server_addrlen) == 0) {
		c->state = C_HANDSHAKE;
		drive(w, c, 0);
	} else if (errno != EINPROGRESS) {
		conn_fail(w, c, "connect to %s:%d: %s", opt.host, opt.port, ng_strerror(errno));
	}
}

static bool token_eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && strncasecmp(s, lit, len) == 0;
}

/* Does the comma-separated header value [v, v + len) hold token tok? */
static bool has_token(const char *v, size_t len, const char *tok)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < len && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (token_eq(v + s, e - s, tok))
			return true;
	}
	return false;
}

enum parse_result { P_MORE, P_DONE, P_ERROR };

/* The status line and headers, once all of them are in; *why says what was wrong. */
static enum parse_result parse_head(struct conn *c, const char **why)
{
	const char *b = c->rbuf;
	const char *end = NULL;
	for (size_t i = 3; i < c->rlen; i++)
		if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') {
			end = b + i + 1;
			break;
		}
	if (!end) {
		*why = "response head over 16 KiB";
		return c->rlen >= HEAD_CAP ? P_ERROR : P_MORE;
	}
	struct resp r = {.content_length = -1, .head_len = (size_t)(end - b)};
	/* "HTTP/1.x SSS" */
	if (r.head_len < 16 || memcmp(b, "HTTP/1.", 7) != 0 || (b[7] != '0' && b[7] != '1') ||
	    b[8] != ' ' || b[9] < '1' || b[9] > '5' || b[10] < '0' || b[10] > '9' || b[11] < '0' ||
	    b[11] > '9' || (b[12] != ' ' && b[12] != '\r')) {
		*why = "malformed status line";
		return P_ERROR;
	}
	bool http10 = b[7] == '0', keep_alive = false, close_token = false;
	r.status = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
	const char *line = (const char *)memchr(b, '\n', r.head_len) + 1;
	while (line < end - 2) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || eol[-1] != '\r') {
			*why = "malformed header line";
			return P_ERROR;
		}
		size_t nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		const char *ve = eol - 1;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		size_t vlen = (size_t)(ve - v);
		if (token_eq(line, nlen, "content-length")) {
			int64_t n;
			if (ng_parse_i64(v, vlen, 0, RESP_CAP, &n) != NG_OK ||
			    (r.content_length >= 0 && r.content_length != n)) {
				*why = "bad or over-large Content-Length";
				return P_ERROR;
			}
			r.content_length = n;
		} else if (token_eq(line, nlen, "transfer-encoding")) {
			r.chunked = has_token(v, vlen, "chunked");
		} else if (token_eq(line, nlen, "connection")) {
			close_token = close_token || has_token(v, vlen, "close");
			keep_alive = keep_alive || has_token(v, vlen, "keep-alive");
		}
		line = eol + 1;
	}
	if (r.status < 200) {
		*why = "interim (1xx) response to a request that did not ask for one";
		return P_ERROR;
	}
	if (r.status == 204 || r.status == 304) {
		r.content_length = 0;
		r.chunked = false;
	} else if (!r.chunked && r.content_length < 0) {
		*why = "response with neither Content-Length nor chunked encoding";
		return P_ERROR;
	}
	r.close = close_token || (http10 && !keep_alive);
	c->resp = r;
	return P_DONE;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Where the line starting at pos ends (the index of its '\n'), or 0 when not all in yet. */
static size_t line_end(const struct conn *c, size_t pos)
{
	for (size_t i = pos + 1; i < c->rlen; i++)
		if (c->rbuf[i] == '\n' && c->rbuf[i - 1] == '\r')
			return i;
	return 0;
}

/* A chunked body: walked from its start every time more arrives (it is at most RESP_CAP). */
static enum parse_result parse_chunked(const struct conn *c, size_t *ret_end, const char **why)
{
	size_t pos = c->resp.head_len;
	for (;;) {
		size_t eol = line_end(c, pos);
		if (!eol)
			return P_MORE;
		uint64_t size = 0;
		size_t i = pos, digits = 0;
		for (; i < eol - 1 && hexval(c->rbuf[i]) >= 0; i++, digits++)
			size = size * 16 + (uint64_t)hexval(c->rbuf[i]);
		if (digits == 0 || digits > 8 || (i < eol - 1 && c->rbuf[i] != ';')) {
			*why = "malformed chunk size";
			return P_ERROR;
		}
		pos = eol + 1;
		if (size == 0)
			break;
		if (size > RESP_CAP) {
			*why = "chunk over 64 KiB";
			return P_ERROR;
		}
		if (c->rlen < pos + size + 2)
			return P_MORE;
		if (c->rbuf[pos + size] != '\r' || c->rbuf[pos + size + 1] != '\n') {
			*why = "chunk not followed by CRLF";
			return P_ERROR;
		}
		pos += size + 2;
	}
	/* trailers, then the empty line */
	for (;;) {
		if (c->rlen < pos + 2)
			return P_MORE;
		if (c->rbuf[pos] == '\r' && c->rbuf[pos + 1] == '\n') {
			*ret_end = pos + 2;
			return P_DONE;
		}
		size_t eol = line_end(c, pos);
		if (!eol)
			return P_MORE;
		pos = eol + 1;
	}
}

static enum parse_result parse_response(struct conn *c, const char **why)
{
	if (c->resp.head_len == 0) {
		enum parse_result p = parse_head(c, why);
		if (p != P_DONE)
			return p;
	}
	size_t end;
	if (c->resp.chunked) {
		enum parse_result p = parse_chunked(c, &end, why);
		if (p != P_DONE)
			return p;
	} else {
		end = c->resp.head_len + (size_t)c->resp.content_length;
		if (c->rlen < end)
			return P_MORE;
	}
	if (c->rlen > end) {
		*why = "bytes after the response (nothing was pipelined)";
		return P_ERROR;
	}
	return P_DONE;
}

static void complete(struct worker *w, struct conn *c)
{
	int64_t now = now_ns();
	w->inflight--;
	atomic_fetch_add(&g_answers, 1);
	if (c->measured) {
		w->requests++;
		hist_add(&w->hist, (uint64_t)(now - c->start_ns));
		if (c->resp.status != 200) {
			w->errors++;
			atomic_fetch_add(&g_failures, 1);
			report(w, "HTTP status %d", c->resp.status);
		}
	} else if (c->resp.status != 200) {
		w->warmup_errors++;
		report(w, "HTTP status %d (warmup)", c->resp.status);
	}
	if (c->resp.close) {
		conn_close(c);
		c->retry_ns = now;
	} else {
		make_idle(w, c);
	}
}

static void drive(struct worker *w, struct conn *c, uint32_t ev)
{
	for (;;) {
		int r, e;
		const char *why = NULL;
		switch (c->state) {
		case C_CLOSED:
			return;
		case C_CONNECTING: {
			if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
				return;
			int err = 0;
			socklen_t len = sizeof(err);
			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
				err = errno;
			if (err == EINPROGRESS)
				return;
			if (err) {
				conn_fail(w, c, "connect to %s:%d: %s", opt.host, opt.port,
					  ng_strerror(err));
				return;
			}
			c->state = C_HANDSHAKE;
			break;
		}
		case C_HANDSHAKE:
			r = SSL_connect(c->ssl);
			if (r == 1) {
				make_idle(w, c);
				return;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			conn_fail(w, c, "TLS handshake with %s:%d: %s", opt.host, opt.port,
				  ssl_reason(e));
			return;
		case C_IDLE: {
			/* Nothing is due from the server: a close (keep-alive ended) or TLS
			 * housekeeping such as session tickets. */
			if (!(ev & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)))
				return;
			char tmp[512];
			r = SSL_read(c->ssl, tmp, (int)sizeof(tmp));
			if (r > 0) {
				conn_fail(w, c, "%d unexpected bytes on an idle connection", r);
				return;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			ERR_clear_error();
			conn_close(c); /* the server ended the keep-alive: reopen, no error */
			c->retry_ns = now_ns();
			return;
		}
		case C_WRITING:
			r = SSL_write(c->ssl, c->req->data, (int)c->req->len);
			if (r > 0) { /* without partial writes, all of it */
				c->state = C_READING;
				c->rlen = 0;
				c->resp = (struct resp){0};
				break;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			conn_fail(w, c, "sending: %s", ssl_reason(e));
			return;
		case C_READING:
			if (c->rlen == RESP_CAP) {
				conn_fail(w, c, "response over %d bytes", RESP_CAP);
				return;
			}
			r = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(RESP_CAP - c->rlen));
			if (r > 0) {
				c->rlen += (size_t)r;
				enum parse_result p = parse_response(c, &why);
				if (p == P_MORE)
					break;
				if (p == P_ERROR) {
					conn_fail(w, c, "bad response: %s", why);
					return;
				}
				complete(w, c);
				return;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			conn_fail(w, c, "reading the response: %s", ssl_reason(e));
			return;
		}
	}
}

static void send_request(struct worker *w, struct conn *c, int64_t start_ns, uint64_t body_idx)
{
	c->req = &requests[body_idx % (uint64_t)opt.nbodies];
	c->start_ns = start_ns;
	c->measured = start_ns >= w->mstart_ns;
	c->deadline_ns = now_ns() + opt.timeout_ns;
	c->state = C_WRITING;
	w->inflight++;
	drive(w, c, 0);
}

static int64_t due_ns(const struct worker *w, uint64_t j)
{
	return g_t0_ns + (int64_t)(w->first_ns + (double)j * w->interval_ns);
}

/* Hand due requests to idle connections. */
static void dispatch(struct worker *w)
{
	int64_t now = now_ns();
	struct conn *c;
	if (opt.rate > 0) {
		while (w->next < w->end && due_ns(w, w->next) <= now && (c = pop_idle(w))) {
			uint64_t global = w->next * (uint64_t)opt.threads + (uint64_t)w->id;
			send_request(w, c, due_ns(w, w->next), global);
			w->next++;
		}
	} else if (now < w->mend_ns) {
		while ((c = pop_idle(w)))
			send_request(w, c, now_ns(),
				     w->rr++ * (uint64_t)opt.threads + (uint64_t)w->id);
	}
}

/* Timeouts and reconnects; returns when the worker next needs to wake up. */
static int64_t housekeeping(struct worker *w, int64_t now)
{
	int64_t wake = w->phase == PHASE_SETUP ? INT64_MAX : w->hard_end_ns;
	if (w->phase == PHASE_RUN && opt.rate > 0 && w->nidle > 0 && w->next < w->end) {
		int64_t d = due_ns(w, w->next);
		wake = d < wake ? d : wake;
	}
	if (w->phase == PHASE_RUN && opt.rate <= 0 && w->mend_ns < wake && now < w->mend_ns)
		wake = w->mend_ns;
	for (int i = 0; i < w->nconns; i++) {
		struct conn *c = &w->conns[i];
		if (c->state == C_CLOSED && w->phase == PHASE_RUN) {
			if (c->retry_ns <= now)
				conn_open(w, c);
			else if (c->retry_ns < wake)
				wake = c->retry_ns;
		}
		if (c->deadline_ns && c->deadline_ns <= now)
			conn_fail(w, c, "no %s within %lld ms",
				  c->state == C_READING || c->state == C_WRITING ? "answer"
										 : "connection",
				  (long long)(opt.timeout_ns / 1000000));
		else if (c->deadline_ns && c->deadline_ns < wake)
			wake = c->deadline_ns;
	}
	return wake;
}

static void arm(struct worker *w, int64_t at_ns)
{
	if (at_ns == w->armed_ns)
		return;
	if (at_ns == INT64_MAX)
		at_ns = now_ns() + 1000000000; /* never sleep unbounded */
	struct itimerspec its = {0};
	its.it_value.tv_sec = at_ns / 1000000000;
	its.it_value.tv_nsec = at_ns % 1000000000;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1; /* zero would disarm */
	if (timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
		die("timerfd_settime: %s", ng_strerror(errno));
	w->armed_ns = at_ns;
}

static bool all_connected(const struct worker *w)
{
	for (int i = 0; i < w->nconns; i++)
		if (w->conns[i].state != C_IDLE)
			return false;
	return true;
}

/* Ends the run at the hard end: requests still waiting or in flight have failed. */
static void give_up(struct worker *w)
{
	for (int i = 0; i < w->nconns; i++) {
		struct conn *c = &w->conns[i];
		if (c->state == C_READING || c->state == C_WRITING)
			conn_fail(w, c, "no answer within %lld ms (end of the run)",
				  (long long)(opt.timeout_ns / 1000000));
	}
	for (; w->next < w->end; w->next++)
		if (due_ns(w, w->next) >= w->mstart_ns) {
			w->requests++;
			w->errors++;
		}
}

static bool finished(struct worker *w, int64_t now)
{
	if (w->phase == PHASE_SETUP)
		return all_connected(w) || w->setup_error[0] || now >= w->hard_end_ns;
	if (now >= w->hard_end_ns) {
		give_up(w);
		return true;
	}
	if (opt.rate > 0)
		return w->next >= w->end && w->inflight == 0;
	return now >= w->mend_ns && w->inflight == 0;
}

static void loop(struct worker *w)
{
	struct epoll_event evs[64];
	for (;;) {
		if (w->phase == PHASE_RUN)
			dispatch(w);
		int64_t now = now_ns();
		if (finished(w, now))
			return;
		arm(w, housekeeping(w, now));
		int n = epoll_wait(w->epfd, evs, 64, -1);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", ng_strerror(errno));
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr) {
				uint64_t ticks;
				(void)!read(w->tfd, &ticks, sizeof(ticks));
				int64_t lag = now_ns() - w->armed_ns;
				if (w->phase == PHASE_RUN && lag > w->max_lag_ns)
					w->max_lag_ns = lag;
				w->armed_ns = 0;
				continue;
			}
			drive(w, evs[i].data.ptr, evs[i].events);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	/* The schedule needs timers to fire on time: the default 50 us slack would be added to
	 * every open-loop request's latency. */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	w->phase = PHASE_SETUP;
	w->hard_end_ns = now_ns() + opt.timeout_ns;
	for (int i = 0; i < w->nconns; i++)
		conn_open(w, &w->conns[i]);
	loop(w);
	if (!all_connected(w)) {
		if (!w->setup_error[0])
			(void)snprintf(w->setup_error, sizeof(w->setup_error),
				       "connections not established within %lld ms",
				       (long long)(opt.timeout_ns / 1000000));
		atomic_store(&g_setup_failed, true);
	}
	(void)pthread_barrier_wait(&g_barrier); /* all connected (or not) */
	(void)pthread_barrier_wait(&g_barrier); /* g_t0_ns is set */
	if (atomic_load(&g_setup_failed))
		return NULL;
	w->phase = PHASE_RUN;
	w->mstart_ns = g_t0_ns + (int64_t)(opt.warmup_s * 1e9);
	w->mend_ns = w->mstart_ns + (int64_t)(opt.duration_s * 1e9);
	w->hard_end_ns = w->mend_ns + opt.timeout_ns;
	if (opt.rate > 0) {
		double span = (double)(w->mend_ns - g_t0_ns) - w->first_ns;
		w->end = span > 0 ? (uint64_t)ceil(span / w->interval_ns) : 0;
	}
	loop(w);
	return NULL;
}

static void usage(FILE *to)
{
	(void)fputs(
	    "usage: bench-loadgen --port P --body FILE [--body FILE ...] [options]\n"
	    "  --host H           server address (127.0.0.1)\n"
	    "  --port P           server port (required)\n"
	    "  --path P           request path and query (/)\n"
	    "  --body FILE        a request body (JSON); repeat for a mix, sent round-robin\n"
	    "  --connections N    keep-alive TLS connections (16)\n"
	    "  --threads N        threads sharing the connections (1)\n"
	    "  --rate R           open loop at R requests/s; without it: closed loop\n"
	    "  --duration S       seconds measured (10)\n"
	    "  --warmup S         seconds run before measuring (0)\n"
	    "  --timeout-ms MS    connect, handshake and answer timeout (5000)\n"
	    "  --cacert FILE      verify the server's certificate against this CA (default: no\n"
	    "                     verification, for loopback benchmarks)\n",
	    to);
}

static int64_t int_arg(const char *name, const char *v, int64_t min, int64_t max)
{
	int64_t n;
	if (ng_parse_i64(v, strlen(v), min, max, &n) != NG_OK)
		die("--%s %s: expected an integer from %lld to %lld", name, v, (long long)min,
		    (long long)max);
	return n;
}

static double num_arg(const char *name, const char *v, double min, double max)
{
	char *end = NULL;
	errno = 0;
	double d = strtod(v, &end);
	if (!*v || errno || *end || !isfinite(d) || d < min || d > max)
		die("--%s %s: expected a number from %g to %g", name, v, min, max);
	return d;
}

static void load_body(int i, const char *file)
{
	FILE *f = fopen(file, "rbe");
	if (!f)
		die("--body %s: %s", file, ng_strerror(errno));
	char *body = malloc(MAX_BODY_BYTES + 1);
	if (!body)
		die("out of memory");
	size_t n = fread(body, 1, MAX_BODY_BYTES + 1, f);
	bool bad = ferror(f);
	(void)fclose(f);
	if (bad)
		die("--body %s: read error", file);
	if (n > MAX_BODY_BYTES)
		die("--body %s: over %d bytes", file, MAX_BODY_BYTES);
	char head[1024];
	int hl =
	    snprintf(head, sizeof(head),
		     "POST %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: nodegate-bench-loadgen\r\n"
		     "Content-Type: application/json\r\nAccept: application/json\r\n"
		     "Content-Length: %zu\r\n\r\n",
		     opt.path, opt.host, opt.port, n);
	if (hl < 0 || (size_t)hl >= sizeof(head))
		die("--path or --host too long");
	struct request *r = &requests[i];
	r->len = (size_t)hl + n;
	r->data = malloc(r->len);
	if (!r->data)
		die("out of memory");
	memcpy(r->data, head, (size_t)hl);
	memcpy(r->data + hl, body, n);
	free(body);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"host", required_argument, NULL, 'h'},
	    {"port", required_argument, NULL, 'p'},
	    {"path", required_argument, NULL, 'P'},
	    {"body", required_argument, NULL, 'b'},
	    {"connections", required_argument, NULL, 'c'},
	    {"threads", required_argument, NULL, 't'},
	    {"rate", required_argument, NULL, 'r'},
	    {"duration", required_argument, NULL, 'd'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"timeout-ms", required_argument, NULL, 'T'},
	    {"cacert", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'H'},
	    {0},
	};
	int ch;
	opterr = 0;
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): no worker runs yet */
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			opt.host = optarg;
			break;
		case 'p':
			opt.port = (int)int_arg("port", optarg, 1, 65535);
			break;
		case 'P':
			if (optarg[0] != '/')
				die("--path %s: must start with /", optarg);
			opt.path = optarg;
			break;
		case 'b':
			if (opt.nbodies == MAX_BODIES)
				die("at most %d --body files", MAX_BODIES);
			opt.body_files[opt.nbodies++] = optarg;
			break;
		case 'c':
			opt.connections = (int)int_arg("connections", optarg, 1, MAX_CONNECTIONS);
			break;
		case 't':
			opt.threads = (int)int_arg("threads", optarg, 1, MAX_THREADS);
			break;
		case 'r':
			opt.rate = num_arg("rate", optarg, 0.001, 1e8);
			break;
		case 'd':
			opt.duration_s = num_arg("duration", optarg, 0.001, 86400);
			break;
		case 'w':
			opt.warmup_s = num_arg("warmup", optarg, 0, 86400);
			break;
		case 'T':
			opt.timeout_ns = int_arg("timeout-ms", optarg, 1, 3600000) * 1000000;
			break;
		case 'C':
			opt.cacert = optarg;
			break;
		case 'H':
			usage(stdout);
			/* NOLINTNEXTLINE(concurrency-mt-unsafe): no worker runs yet */
			exit(0);
		default:
			usage(stderr);
			if (optopt)
				die("option needs a value or is unknown: %s", argv[optind - 1]);
			die("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		usage(stderr);
		die("unexpected argument %s", argv[optind]);
	}
	if (!opt.port) {
		usage(stderr);
		die("--port is required");
	}
	if (!opt.nbodies) {
		usage(stderr);
		die("at least one --body is required");
	}
	if (opt.threads > opt.connections)
		die("--threads %d is more than --connections %d", opt.threads, opt.connections);
}

static void resolve(void)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	char port[16];
	(void)snprintf(port, sizeof(port), "%d", opt.port);
	int rc = getaddrinfo(opt.host, port, &hints, &res);
	if (rc != 0)
		die("--host %s: %s", opt.host, gai_strerror(rc));
	memcpy(&server_addr, res->ai_addr, res->ai_addrlen);
	server_addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	struct in6_addr probe;
	host_is_ip =
	    inet_pton(AF_INET, opt.host, &probe) == 1 || inet_pton(AF_INET6, opt.host, &probe) == 1;
}

static void setup_tls(void)
{
	ssl_ctx = SSL_CTX_new(TLS_client_method());
	if (!ssl_ctx || SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION) != 1)
		die("TLS setup: %s", ssl_reason(0));
	if (opt.cacert) {
		if (access(opt.cacert, R_OK) != 0)
			die("--cacert %s: %s", opt.cacert, ng_strerror(errno));
		if (SSL_CTX_load_verify_locations(ssl_ctx, opt.cacert, NULL) != 1)
			die("--cacert %s: %s", opt.cacert, ssl_reason(0));
		SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_PEER, NULL);
	} else {
		SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_NONE, NULL);
	}
}

static void worker_init(struct worker *w, int id, int nconns)
{
	w->id = id;
	w->nconns = nconns;
	w->conns = calloc((size_t)nconns, sizeof(*w->conns));
	w->idle = calloc((size_t)nconns, sizeof(*w->idle));
	if (!w->conns || !w->idle)
		die("out of memory");
	for (int i = 0; i < nconns; i++) {
		w->conns[i].fd = -1;
		w->conns[i].rbuf = malloc(RESP_CAP);
		if (!w->conns[i].rbuf)
			die("out of memory");
	}
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->epfd < 0 || w->tfd < 0)
		die("epoll/timerfd: %s", ng_strerror(errno));
	struct epoll_event ee = {.events = EPOLLIN, .data.ptr = NULL};
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->tfd, &ee) != 0)
		die("epoll_ctl: %s", ng_strerror(errno));
	if (opt.rate > 0) {
		/* request i of all is due at i / rate; this worker sends i = id + j * threads */
		double interval = 1e9 / opt.rate;
		w->interval_ns = interval * opt.threads;
		w->first_ns = interval * id;
	}
}

static void worker_finish(struct worker *w)
{
	for (int i = 0; i < w->nconns; i++) {
		conn_close(&w->conns[i]);
		free(w->conns[i].rbuf);
	}
	free(w->conns);
	free(w->idle);
	(void)close(w->epfd);
	(void)close(w->tfd);
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	for (int i = 0; i < opt.nbodies; i++)
		load_body(i, opt.body_files[i]);
	resolve();
	(void)signal(SIGPIPE, SIG_IGN);
	setup_tls();

	struct worker *workers = calloc((size_t)opt.threads, sizeof(*workers));
	if (!workers)
		die("out of memory");
	for (int t = 0; t < opt.threads; t++)
		worker_init(&workers[t], t,
			    opt.connections / opt.threads + (t < opt.connections % opt.threads));
	if (pthread_barrier_init(&g_barrier, NULL, (unsigned)opt.threads + 1) != 0)
		die("pthread_barrier_init failed");
	for (int t = 0; t < opt.threads; t++)
		if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]) != 0)
			die("pthread_create failed");

	(void)pthread_barrier_wait(&g_barrier);
	g_t0_ns = now_ns();
	bool failed = atomic_load(&g_setup_failed);
	(void)pthread_barrier_wait(&g_barrier);
	if (failed) {
		for (int t = 0; t < opt.threads; t++) {
			(void)pthread_join(workers[t].thread, NULL);
			if (workers[t].setup_error[0])
				(void)fprintf(stderr, "bench-loadgen: %s\n",
					      workers[t].setup_error);
		}
		(void)fprintf(stderr, "bench-loadgen: could not open %d connections to %s:%d\n",
			      opt.connections, opt.host, opt.port);
		free(workers);
		return 1;
	}
	if (opt.rate > 0)
		(void)fprintf(
		    stderr,
		    "bench-loadgen: open loop at %.0f req/s, %d connections, %d thread(s), "
		    "%.1f s warmup + %.1f s measured\n",
		    opt.rate, opt.connections, opt.threads, opt.warmup_s, opt.duration_s);
	else
		(void)fprintf(stderr,
			      "bench-loadgen: closed loop, %d connections, %d thread(s), %.1f s "
			      "warmup + %.1f s measured\n",
			      opt.connections, opt.threads, opt.warmup_s, opt.duration_s);

	/* progress once a second until the schedule is over */
	int64_t total_ns = (int64_t)((opt.warmup_s + opt.duration_s) * 1e9);
	for (int64_t tick = 1;; tick++) {
		int64_t at = g_t0_ns + tick * 1000000000;
		if (at >= g_t0_ns + total_ns)
			break;
		struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		(void)fprintf(stderr, "bench-loadgen: %3lld s: %llu answers, %llu errors%s\n",
			      (long long)tick, (unsigned long long)atomic_load(&g_answers),
			      (unsigned long long)atomic_load(&g_failures),
			      (double)tick < opt.warmup_s ? " (warmup)" : "");
	}

	struct hist *h = calloc(1, sizeof(*h));
	if (!h)
		die("out of memory");
	uint64_t nreq = 0, nerr = 0, nwarm = 0;
	int64_t max_lag_ns = 0;
	for (int t = 0; t < opt.threads; t++) {
		(void)pthread_join(workers[t].thread, NULL);
		hist_merge(h, &workers[t].hist);
		nreq += workers[t].requests;
		nerr += workers[t].errors;
		nwarm += workers[t].warmup_errors;
		if (workers[t].max_lag_ns > max_lag_ns)
			max_lag_ns = workers[t].max_lag_ns;
		worker_finish(&workers[t]);
	}
	double secs = opt.duration_s;
	(void)fprintf(stderr,
		      "bench-loadgen: %llu requests in %.1f s (%.0f/s), %llu errors (%llu more in "
		      "warmup or after the window); p50 %.1f us, p99 %.1f us, max %.1f us\n",
		      (unsigned long long)nreq, secs, (double)nreq / secs, (unsigned long long)nerr,
		      (unsigned long long)nwarm, hist_quantile_us(h, 0.5),
		      hist_quantile_us(h, 0.99), (double)h->max_ns / 1e3);
	(void)fprintf(stderr,
		      "bench-loadgen: the client woke up at worst %.1f us late for its timer\n",
		      (double)max_lag_ns / 1e3);
	(void)printf("{\"requests\":%llu,\"errors\":%llu,\"seconds\":%.3f,\"rate\":%.1f,"
		     "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
		     "\"max_us\":%.1f}\n",
		     (unsigned long long)nreq, (unsigned long long)nerr, secs, (double)nreq / secs,
		     hist_quantile_us(h, 0.5), hist_quantile_us(h, 0.9), hist_quantile_us(h, 0.99),
		     hist_quantile_us(h, 0.999), (double)h->max_ns / 1e3);
	free(h);
	for (int i = 0; i < opt.nbodies; i++)
		free(requests[i].data);
	SSL_CTX_free(ssl_ctx);
	(void)pthread_barrier_destroy(&g_barrier);
	free(workers);
	return 0;
}
