#include "server/server.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/parse.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "server/admission.h"
#include "server/conns.h"
#include "server/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* More than this many daemons buys nothing on the machines we run on and costs threads. */
#define MAX_DAEMONS 64
/* Per-connection MHD memory pool: headers only (bodies stream to us); MHD advises that more
 * than 128 KiB gains nothing. */
#define CONN_MEMORY_BYTES (64u * 1024u)
/* An oversized body (over NG_MAX_BODY_BYTES) is read and dropped, so the client can read our
 * 413 instead of a reset; past this many bytes we stop reading and close the connection. */
#define MAX_DISCARD_BYTES (16u * 1024u * 1024u)
/* GnuTLS priorities: TLS 1.2 and 1.3 only (DESIGN.md §8). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct srv {
	struct MHD_Daemon *daemons[MAX_DAEMONS];
	int fds[MAX_DAEMONS];
	unsigned ndaemons;
	uint16_t port;
	struct kube_store *store;
	struct srv_metrics *metrics;
	struct srv_conns *conns;
	const struct pol_eviction_config *eviction;
	struct srv_object_config objects;
	const struct kube_watch *watch;
	ng_status (*metrics_extra)(struct ng_buf *out, void *ctx);
	void *metrics_ctx;
	void (*auto_request)(const char *node, const char *user, void *ctx);
	void *auto_request_ctx;
	_Atomic bool ready;
	struct tls_creds *creds_all; /* every pair loaded, newest first: freed with the server */
};

enum route {
	R_NONE,
	R_EVICTION,
	R_BUDGET,
	R_ND,
	R_ND_STATUS,
	R_ND_MUTATE,
	R_EVALUATE,
	R_HEALTHZ,
	R_READYZ,
	R_METRICS,
	R_DEBUG_CACHE,
};

/* One request's state, cached per thread between requests so a steady stream of reviews costs
 * no malloc for the body or the arena. */
struct req {
	enum route route;
	bool too_big;
	size_t discarded;
	int64_t t0_us;
	struct ng_arena *arena;
	struct ng_buf body;
	struct ng_buf out;
};

static pthread_key_t req_cache_key;
static pthread_once_t req_cache_once = PTHREAD_ONCE_INIT;

static void req_free(struct req *r)
{
	if (!r)
		return;
	ng_arena_destroy(r->arena);
	ng_buf_finish(&r->body);
	ng_buf_finish(&r->out);
	free(r);
}

static void req_cache_dtor(void *p)
{
	req_free(p);
}

static void req_cache_init(void)
{
	(void)pthread_key_create(&req_cache_key, req_cache_dtor);
}

static struct req *req_get(void)
{
	struct req *r = pthread_getspecific(req_cache_key);
	if (r) {
		(void)pthread_setspecific(req_cache_key, NULL);
		return r;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	if (!r->arena) {
		free(r);
		return NULL;
	}
	ng_buf_init(&r->body, NG_MAX_BODY_BYTES);
	/* A response holds the uid, a message and a warning: a few KiB at most. */
	ng_buf_init(&r->out, 64u * 1024u);
	return r;
}

static void req_put(struct req *r)
{
	/* Keep the cached request small: drop buffers a large request grew. */
	if (r->body.alloc > 64u * 1024u)
		ng_buf_finish(&r->body);
	ng_buf_reset(&r->body);
	ng_buf_reset(&r->out);
	ng_arena_reset(r->arena);
	r->too_big = false;
	r->discarded = 0;
	if (pthread_getspecific(req_cache_key) == NULL &&
	    pthread_setspecific(req_cache_key, r) == 0)
		return;
	req_free(r);
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned code, const char *ctype,
			       const char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, mode);
	if (!resp)
		return MHD_NO;
	(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Errors outside AdmissionReview get a Kubernetes-style Status body so a person (or the API
 * server's log) can read what was wrong. */
static enum MHD_Result respond_status(struct srv *s, struct MHD_Connection *c, unsigned code,
				      const char *msg, const char *allow)
{
	srv_metrics_http_error(s->metrics, (int)code);
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	ng_status st = ng_buf_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
				       "\"Failure\",\"message\":");
	if (st == NG_OK)
		st = ng_buf_json_str(&b, msg, strlen(msg));
	if (st == NG_OK)
		st = ng_buf_printf(&b, ",\"reason\":\"%s\",\"code\":%u}\n",
				   srv_status_reason((int32_t)code), code);
	if (st != NG_OK) {
		ng_buf_finish(&b);
		return MHD_NO;
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		ng_buf_finish(&b);
		return MHD_NO;
	}
	b.data = NULL;
	(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (allow)
		(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum route route_of(const char *url, const char **ret_method)
{
	if (strcmp(url, "/validate/eviction") == 0) {
		*ret_method = "POST";
		return R_EVICTION;
	}
	static const struct {
		const char *path;
		enum route route;
	} posts[] = {{"/validate/budget", R_BUDGET},
		     {"/validate/nodedisruption", R_ND},
		     {"/validate/nodedisruption-status", R_ND_STATUS},
		     {"/mutate/nodedisruption", R_ND_MUTATE},
		     {"/v1/evaluate", R_EVALUATE}};
	for (size_t i = 0; i < sizeof(posts) / sizeof(posts[0]); i++) {
		if (strcmp(url, posts[i].path) == 0) {
			*ret_method = "POST";
			return posts[i].route;
		}
	}
	*ret_method = "GET";
	if (strcmp(url, "/healthz") == 0)
		return R_HEALTHZ;
	if (strcmp(url, "/readyz") == 0)
		return R_READYZ;
	if (strcmp(url, "/metrics") == 0)
		return R_METRICS;
	if (strcmp(url, "/debug/cache") == 0)
		return R_DEBUG_CACHE;
	return R_NONE;
}

static bool content_type_json(const char *ct)
{
	if (!ct)
		return false;
	size_t n = strlen("application/json");
	if (strncasecmp(ct, "application/json", n) != 0)
		return false;
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static enum MHD_Result serve_get(struct srv *s, struct MHD_Connection *c, enum route route)
{
	static const char ok[] = "ok\n";
	static const char not_ready[] = "not ready\n";
	if (route == R_HEALTHZ)
		return respond(c, MHD_HTTP_OK, "text/plain", ok, sizeof(ok) - 1,
			       MHD_RESPMEM_PERSISTENT);
	if (route == R_READYZ) {
		bool ready = atomic_load_explicit(&s->ready, memory_order_relaxed) &&
			     (!s->watch || kube_watch_synced(s->watch));
		return ready ? respond(c, MHD_HTTP_OK, "text/plain", ok, sizeof(ok) - 1,
				       MHD_RESPMEM_PERSISTENT)
			     : respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", not_ready,
				       sizeof(not_ready) - 1, MHD_RESPMEM_PERSISTENT);
	}
	struct ng_buf b;
	/* The exposition is a few KiB; 1 MiB leaves room for later per-budget series. The cache
	 * dump of a 150k-pod cluster is ~40 MB; 512 MiB bounds it. */
	ng_buf_init(&b, route == R_METRICS ? 1u << 20 : 512u << 20);
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st = route == R_METRICS ? srv_metrics_render(s->metrics, snap, s->watch, &b)
					  : kube_snapshot_dump_json(snap, &b);
	if (st == NG_OK && route == R_METRICS)
		st = srv_conns_render_metrics(s->conns, &b);
	if (st == NG_OK && route == R_METRICS && s->metrics_extra)
		st = s->metrics_extra(&b, s->metrics_ctx);
	kube_snapshot_release(snap);
	if (st != NG_OK) {
		ng_buf_finish(&b);
		return respond_status(s, c, 500, "rendering failed", NULL);
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		ng_buf_finish(&b);
		return MHD_NO;
	}
	(void)MHD_add_response_header(
	    resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    route == R_METRICS ? "text/plain; version=0.0.4; charset=utf-8" : "application/json");
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void log_decision(const struct srv_admission *a, int64_t dur_us)
{
	struct ng_logline l;
	if (!ng_log_begin(&l, NG_LOG_INFO, "srv", "admission decided"))
		return;
	ng_log_str(&l, "webhook", "eviction");
	ng_log_str(&l, "uid", a->review.uid);
	ng_log_str(&l, "ns", a->review.ns);
	ng_log_str(&l, "pod", a->review.name);
	ng_log_str(&l, "node", a->decision.node);
	ng_log_str(&l, "user", a->review.username);
	ng_log_bool(&l, "dry_run", a->review.dry_run);
	ng_log_bool(&l, "allowed", a->decision.allowed);
	ng_log_str(&l, "reason", pol_reason_str(a->decision.reason));
	if (!a->decision.allowed)
		ng_log_i64(&l, "code", a->decision.code);
	ng_log_i64(&l, "dur_us", dur_us);
	ng_log_end(&l);
}

/* A review that could not be decoded: counted, logged, answered 400 with why. */
static enum MHD_Result bad_review(struct srv *s, struct MHD_Connection *c, enum srv_webhook wh,
				  const char *webhook, const struct ng_err *err, int64_t dur)
{
	srv_metrics_admission(s->metrics, wh, SRV_OUT_ERROR, dur);
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "srv", "bad admission request")) {
		ng_log_str(&l, "webhook", webhook);
		ng_log_str(&l, "err", err->msg);
		ng_log_end(&l);
	}
	return respond_status(s, c, MHD_HTTP_BAD_REQUEST, err->msg, NULL);
}

static enum MHD_Result serve_eviction(struct srv *s, struct MHD_Connection *c, struct req *r)
{
	struct srv_admission a;
	struct ng_err err = {0};
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st = srv_admit_eviction(r->body.data ? r->body.data : "", r->body.len, r->arena,
					  snap, s->eviction, &r->out, &a, &err);
	kube_snapshot_release(snap);
	int64_t dur = ng_now_mono_us() - r->t0_us;
	if (st != NG_OK)
		return bad_review(s, c, SRV_WH_EVICTION, "eviction", &err, dur);
	enum srv_outcome out = !a.decision.allowed     ? SRV_OUT_DENIED
			       : a.decision.warning[0] ? SRV_OUT_WARNED
						       : SRV_OUT_ALLOWED;
	srv_metrics_admission(s->metrics, SRV_WH_EVICTION, out, dur);
	log_decision(&a, dur);
	if (a.decision.auto_request && !a.review.dry_run && s->auto_request)
		s->auto_request(a.decision.node, a.review.username, s->auto_request_ctx);
	/* r->out lives until the request completes (after the answer is sent). */
	return respond(c, MHD_HTTP_OK, "application/json", r->out.data, r->out.len,
		       MHD_RESPMEM_PERSISTENT);
}

/* The object webhooks, in route order from R_BUDGET. */
static const struct {
	enum srv_object_webhook wh;
	enum srv_webhook metric;
	const char *name;
} object_routes[] = {
    {SRV_OBJ_BUDGET, SRV_WH_BUDGET, "budget"},
    {SRV_OBJ_ND, SRV_WH_ND, "nodedisruption"},
    {SRV_OBJ_ND_STATUS, SRV_WH_ND_STATUS, "nodedisruption-status"},
    {SRV_OBJ_ND_MUTATE, SRV_WH_ND_MUTATE, "nodedisruption-mutate"},
};

static enum MHD_Result serve_object(struct srv *s, struct MHD_Connection *c, struct req *r)
{
	const size_t k = (size_t)(r->route - R_BUDGET);
	struct srv_object_admission a;
	struct ng_err err = {0};
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st =
	    srv_admit_object(object_routes[k].wh, r->body.data ? r->body.data : "", r->body.len,
			     r->arena, snap, &s->objects, &r->out, &a, &err);
	kube_snapshot_release(snap);
	int64_t dur = ng_now_mono_us() - r->t0_us;
	if (st != NG_OK)
		return bad_review(s, c, object_routes[k].metric, object_routes[k].name, &err, dur);
	srv_metrics_admission(s->metrics, object_routes[k].metric,
			      !a.allowed     ? SRV_OUT_DENIED
			      : a.warning[0] ? SRV_OUT_WARNED
					     : SRV_OUT_ALLOWED,
			      dur);
	struct ng_logline l;
	if (ng_log_begin(&l, a.allowed && !a.patched ? NG_LOG_DEBUG : NG_LOG_INFO, "srv",
			 "admission decided")) {
		ng_log_str(&l, "webhook", object_routes[k].name);
		ng_log_str(&l, "uid", a.review.uid);
		ng_log_str(&l, "operation", a.review.operation);
		ng_log_str(&l, "kind", a.review.kind_kind);
		ng_log_str(&l, "ns", a.review.ns);
		ng_log_str(&l, "name", a.review.name);
		ng_log_str(&l, "user", a.review.username);
		ng_log_bool(&l, "allowed", a.allowed);
		if (!a.allowed)
			ng_log_str(&l, "message", a.message);
		if (a.warning[0])
			ng_log_str(&l, "warning", a.warning);
		ng_log_i64(&l, "dur_us", dur);
		ng_log_end(&l);
	}
	return respond(c, MHD_HTTP_OK, "application/json", r->out.data, r->out.len,
		       MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result serve_evaluate(struct srv *s, struct MHD_Connection *c, struct req *r)
{
	struct ng_err err = {0};
	int code = 0;
	bool granted;
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st = srv_evaluate(r->body.data ? r->body.data : "", r->body.len, r->arena, snap,
				    ng_now_wall_ms(), &r->out, &code, &granted, &err);
	kube_snapshot_release(snap);
	int64_t dur = ng_now_mono_us() - r->t0_us;
	if (st != NG_OK)
		return bad_review(s, c, SRV_WH_EVALUATE, "evaluate", &err, dur);
	srv_metrics_admission(s->metrics, SRV_WH_EVALUATE,
			      granted ? SRV_OUT_ALLOWED : SRV_OUT_DENIED, dur);
	return respond(c, (unsigned)code, "application/json", r->out.data, r->out.len,
		       MHD_RESPMEM_PERSISTENT);
}

/* What a request's header block must not hold, checked before anything else: RFC 9112 asks a
 * server to reject a message with conflicting Content-Length values, or with both a length and
 * a transfer coding (a request smuggling vector behind proxies); a NUL byte is never valid in a
 * field. (libmicrohttpd's strict mode refuses an HTTP/1.1 request without Host itself.)
 *
 * libmicrohttpd cuts a field value at a NUL without saying so, but it parses in place: names
 * and values point into the received header block, in order, with only line ends (turned into
 * NULs) and blanks between one value and the next name. Anything else there is what followed a
 * NUL. Where the pointers are not laid out that way the NUL check does not apply. */
struct head_check {
	const char *block, *block_end; /* the received header block */
	const char *prev_end;          /* where the previous field's value ended */
	const char *content_length;
	bool conflicting_length;
	bool transfer_encoding;
	bool nul;
};

/* Whether [from, to) holds only what separates fields: blanks and line ends (or their NULs). */
static bool only_separators(const char *from, const char *to)
{
	for (const char *p = from; p < to; p++)
		if (*p != '\0' && *p != '\r' && *p != '\n' && *p != ' ' && *p != '\t')
			return false;
	return true;
}

static void check_gap(struct head_check *h, const char *next)
{
	if (h->block && h->prev_end && h->prev_end <= next && next <= h->block_end &&
	    !only_separators(h->prev_end, next))
		h->nul = true;
}

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    size_t key_size, const char *value, size_t value_size)
{
	(void)kind;
	struct head_check *h = cls;
	check_gap(h, key);
	h->prev_end = value ? value + value_size : key + key_size;
	if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		h->transfer_encoding = true;
	else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		if (!value || strchr(value, ',') ||
		    (h->content_length && strcmp(h->content_length, value) != 0))
			h->conflicting_length = true;
		h->content_length = value;
	}
	return MHD_YES;
}

/* NULL when the header block is acceptable, else why not (answered 400). @method starts the
 * received header block. */
static const char *bad_head(struct MHD_Connection *c, const char *method)
{
	struct head_check h = {0};
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	if (ci) {
		h.block = method;
		h.block_end = method + ci->header_size;
	}
	(void)MHD_get_connection_values_n(c, MHD_HEADER_KIND, check_header, &h);
	check_gap(&h, h.block_end);
	if (h.nul)
		return "a header holds a NUL byte";
	if (h.conflicting_length)
		return "conflicting Content-Length headers";
	if (h.content_length && h.transfer_encoding)
		return "both Content-Length and Transfer-Encoding";
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_size, void **con_cls)
{
	struct srv *s = cls;
	struct req *r = *con_cls;
	if (!r) {
		srv_conns_event(c, SRV_CONN_HEADERS);
		const char *bad = bad_head(c, method);
		if (bad)
			return respond_status(s, c, MHD_HTTP_BAD_REQUEST, bad, NULL);
		const char *want;
		enum route route = route_of(url, &want);
		if (route == R_NONE)
			return respond_status(s, c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
		if (strcmp(method, want) != 0 &&
		    !(strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0)) {
			char msg[64];
			(void)snprintf(msg, sizeof(msg), "method %.16s not allowed; use %s", method,
				       want);
			return respond_status(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, msg, want);
		}
		if (route < R_EVICTION || route > R_EVALUATE)
			return serve_get(s, c, route);
		const char *ct =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!content_type_json(ct))
			return respond_status(s, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
					      "Content-Type must be application/json", NULL);
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		bool too_big = false;
		int64_t n = 0;
		if (cl) {
			ng_status st = ng_parse_i64(cl, strlen(cl), 0, INT64_MAX, &n);
			too_big =
			    st == NG_ELIMIT || (st == NG_OK && n > (int64_t)NG_MAX_BODY_BYTES);
			/* Far too big to be worth reading: answer now and close. */
			if (too_big && (st == NG_ELIMIT || n > (int64_t)MAX_DISCARD_BYTES))
				return respond_status(s, c, MHD_HTTP_CONTENT_TOO_LARGE,
						      "request body is larger than 3 MiB", NULL);
		}
		r = req_get();
		if (!r)
			return MHD_NO;
		r->too_big = too_big;
		r->route = route;
		r->t0_us = ng_now_mono_us();
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_big && ng_buf_append(&r->body, upload_data, *upload_size) != NG_OK) {
			/* Over the cap (chunked bodies have no Content-Length): drop what we
			 * have and discard the rest. */
			r->too_big = true;
			r->discarded = r->body.len;
			ng_buf_finish(&r->body);
		}
		if (r->too_big) {
			r->discarded += *upload_size;
			if (r->discarded > MAX_DISCARD_BYTES)
				return MHD_NO; /* an endless body: close the connection */
		}
		*upload_size = 0;
		return MHD_YES;
	}
	srv_conns_event(c, SRV_CONN_HANDLING);
	if (r->too_big)
		return respond_status(s, c, MHD_HTTP_CONTENT_TOO_LARGE,
				      "request body is larger than 3 MiB", NULL);
	if (r->route == R_EVICTION)
		return serve_eviction(s, c, r);
	return r->route == R_EVALUATE ? serve_evaluate(s, c, r) : serve_object(s, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;
	if (r)
		req_put(r);
	*con_cls = NULL;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		srv_conns_event(c, SRV_CONN_DONE);
}

/* Paths are matched as sent: "%2F" is not "/", and nodegate's paths and the one query argument
 * it reads (timeout=10s) hold no escapes, so nothing is decoded. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	/* MHD reports client-side failures (bad TLS handshakes, resets) here: worth a debug
	 * line, never more, or a port scan floods the log. */
	struct ng_logline l;
	if (!ng_log_begin(&l, NG_LOG_DEBUG, "mhd", "libmicrohttpd"))
		return;
	char msg[256];
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	ng_log_str(&l, "detail", msg);
	ng_log_end(&l);
}

static int open_listener(const char *host, uint16_t port, int reuseport, struct ng_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		sl = sizeof(*v4);
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		sl = sizeof(*v6);
	} else {
		(void)ng_err_set(err, NG_EINVAL, 0, "listen address \"%s\" is not a numeric IP",
				 host);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		(void)ng_err_set(err, NG_EIO, 0, "socket: %s", strerror(errno));
		return -1;
	}
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "SO_REUSEPORT: %s", strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "bind %s:%u: %s", host, port, strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (listen(fd, SOMAXCONN) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "listen: %s", strerror(errno));
		(void)close(fd);
		return -1;
	}
	return fd;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* ---- the serving certificate, replaceable while serving ---- */

/* A certificate chain and its key as GnuTLS serves them. Handshakes read the current pair
 * without a lock; a replaced pair stays allocated until the server is destroyed (renewals are
 * rare: a few KiB each), so no handshake can see it freed. */
#define MAX_CHAIN 8
struct tls_creds {
	gnutls_pcert_st pcerts[MAX_CHAIN];
	unsigned n;
	gnutls_privkey_t key;
	struct tls_creds *older;
};

/* The pair handshakes get. One HTTPS server per process: GnuTLS's retrieve callback has no
 * argument of ours. */
static _Atomic(struct tls_creds *) current_creds;

static void creds_free(struct tls_creds *c)
{
	while (c) {
		struct tls_creds *older = c->older;
		for (unsigned i = 0; i < c->n; i++)
			gnutls_pcert_deinit(&c->pcerts[i]);
		if (c->key)
			gnutls_privkey_deinit(c->key);
		free(c);
		c = older;
	}
}

/* Parses @cert_pem (a chain, leaf first) and @key_pem, and checks that they belong together.
 * NULL with @reterr when they do not load. */
static struct tls_creds *creds_load(const char *cert_pem, const char *key_pem,
				    struct ng_err *reterr)
{
	gnutls_datum_t cd = {(unsigned char *)(uintptr_t)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t kd = {(unsigned char *)(uintptr_t)key_pem, (unsigned)strlen(key_pem)};
	/* The pairing check GnuTLS does when a pair is installed the usual way. */
	gnutls_certificate_credentials_t check;
	if (gnutls_certificate_allocate_credentials(&check) < 0) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	int rc = gnutls_certificate_set_x509_key_mem(check, &cd, &kd, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(check);
	if (rc < 0) {
		(void)ng_err_set(reterr, NG_EINVAL, 0, "certificate and key: %s",
				 gnutls_strerror(rc));
		return NULL;
	}
	struct tls_creds *c = calloc(1, sizeof(*c));
	if (!c) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	c->n = MAX_CHAIN;
	rc = gnutls_pcert_list_import_x509_raw(c->pcerts, &c->n, &cd, GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0)
		c->n = 0;
	if (rc >= 0 && (rc = gnutls_privkey_init(&c->key)) >= 0)
		rc = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0) {
		(void)ng_err_set(reterr, NG_EINVAL, 0, "certificate and key: %s",
				 gnutls_strerror(rc));
		creds_free(c);
		return NULL;
	}
	return c;
}

static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			  const gnutls_pk_algorithm_t *pk_algos, int npk_algos,
			  gnutls_pcert_st **pcert, unsigned int *pcert_length,
			  gnutls_privkey_t *pkey)
{
	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)npk_algos;
	struct tls_creds *c = atomic_load_explicit(&current_creds, memory_order_acquire);
	if (!c)
		return -1;
	*pcert = c->pcerts;
	*pcert_length = c->n;
	*pkey = c->key;
	return 0;
}

ng_status srv_set_certificate(struct srv *s, const char *cert_pem, const char *key_pem,
			      struct ng_err *reterr)
{
	struct tls_creds *c = creds_load(cert_pem, key_pem, reterr);
	if (!c)
		return reterr ? reterr->status : NG_EINVAL;
	c->older = s->creds_all;
	s->creds_all = c;
	atomic_store_explicit(&current_creds, c, memory_order_release);
	return NG_OK;
}

struct srv *srv_create(const struct srv_config *cfg, struct kube_store *store,
		       struct ng_err *reterr)
{
	(void)pthread_once(&req_cache_once, req_cache_init);
	struct srv *s = calloc(1, sizeof(*s));
	if (!s) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	for (unsigned i = 0; i < MAX_DAEMONS; i++)
		s->fds[i] = -1;
	s->store = store;
	s->eviction = &cfg->eviction;
	s->objects = cfg->objects;
	s->watch = cfg->watch;
	s->metrics_extra = cfg->metrics_extra;
	s->metrics_ctx = cfg->metrics_ctx;
	s->auto_request = cfg->auto_request;
	s->auto_request_ctx = cfg->auto_request_ctx;
	s->metrics = srv_metrics_create();
	if (!s->metrics) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto fail;
	}
	if (srv_set_certificate(s, cfg->cert_pem, cfg->key_pem, reterr) != NG_OK)
		goto fail;
	unsigned n = cfg->threads ? cfg->threads : 1;
	if (n > MAX_DAEMONS)
		n = MAX_DAEMONS;
	unsigned per = cfg->max_connections / n;
	if (per == 0)
		per = 1;
	struct srv_conns_config cc = {
	    .header_timeout_s = cfg->header_timeout_s ? cfg->header_timeout_s : 10,
	    .body_timeout_s = cfg->body_timeout_s ? cfg->body_timeout_s : 10,
	    .idle_timeout_s = cfg->connection_timeout_s,
	    .per_daemon_limit = per,
	    .per_address_limit = cfg->max_connections_per_address,
	    .ndaemons = n,
	};
	s->conns = srv_conns_create(&cc, reterr);
	if (!s->conns)
		goto fail;
	uint16_t port = cfg->port;
	for (unsigned i = 0; i < n; i++) {
		int fd = open_listener(cfg->listen_host, port, n > 1, reterr);
		if (fd < 0)
			goto fail;
		s->fds[i] = fd;
		if (i == 0)
			port = bound_port(fd);
		struct MHD_Daemon *d = MHD_start_daemon(
		    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TLS |
			MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_TURBO,
		    0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
		    MHD_OPTION_HTTPS_CERT_CALLBACK, on_certificate, MHD_OPTION_HTTPS_PRIORITIES,
		    TLS_PRIORITIES, MHD_OPTION_CONNECTION_LIMIT, per, MHD_OPTION_CONNECTION_TIMEOUT,
		    cfg->connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		    (size_t)CONN_MEMORY_BYTES, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
		    MHD_OPTION_NOTIFY_CONNECTION, srv_conns_notify, srv_conns_list(s->conns, i),
		    MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_STRICT_FOR_CLIENT,
		    1, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
		if (!d) {
			(void)ng_err_set(reterr, NG_EIO, 0, "starting the HTTPS daemon failed");
			goto fail;
		}
		s->daemons[i] = d;
		s->ndaemons = i + 1;
	}
	s->port = port;
	atomic_store(&s->ready, true);
	return s;
fail:
	srv_destroy(s, 0);
	return NULL;
}

uint16_t srv_port(const struct srv *s)
{
	return s->port;
}

void srv_set_ready(struct srv *s, bool ready)
{
	atomic_store_explicit(&s->ready, ready, memory_order_relaxed);
}

static unsigned open_connections(struct srv *s)
{
	unsigned total = 0;
	for (unsigned i = 0; i < s->ndaemons; i++) {
		const union MHD_DaemonInfo *info =
		    MHD_get_daemon_info(s->daemons[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (info)
			total += info->num_connections;
	}
	return total;
}

void srv_destroy(struct srv *s, int64_t grace_ms)
{
	if (!s)
		return;
	atomic_store(&s->ready, false);
	/* Stop accepting everywhere first; MHD hands the listen socket back to us. */
	for (unsigned i = 0; i < s->ndaemons; i++)
		(void)MHD_quiesce_daemon(s->daemons[i]);
	int64_t deadline = ng_now_mono_us() + grace_ms * 1000;
	while (grace_ms > 0 && open_connections(s) > 0 && ng_now_mono_us() < deadline) {
		struct timespec ts = {0, 20 * 1000 * 1000};
		(void)nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < s->ndaemons; i++)
		MHD_stop_daemon(s->daemons[i]);
	for (unsigned i = 0; i < MAX_DAEMONS; i++)
		if (s->fds[i] >= 0)
			(void)close(s->fds[i]);
	srv_conns_destroy(s->conns);
	srv_metrics_destroy(s->metrics);
	atomic_store(&current_creds, NULL);
	creds_free(s->creds_all);
	free(s);
}
