/* Requests: routing by listener, authentication, the handlers of every path, and the checks
 * every request passes first (header block, body size, phase deadlines). */
#include "server/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/jw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/parse.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "server/admission.h"
#include "server/conns.h"
#include "server/metrics.h"

#include <gnutls/gnutls.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

/* An oversized body (over NG_MAX_BODY_BYTES) is read and dropped, so the client can read our
 * 413 instead of a reset; past this many bytes we stop reading and close the connection. */
#define MAX_DISCARD_BYTES (16u * 1024u * 1024u)
/* A review's answer holds the uid, a message and a warning: a few KiB at most. */
#define REVIEW_OUT_BYTES (64u * 1024u)
/* An evaluation's answer lists every node and budget it touches: ~150 bytes per node. */
#define EVALUATE_OUT_BYTES (8u * 1024u * 1024u)
/* A plan's answer: a few dozen bytes per node plus its waves' reasons. */
#define PLAN_OUT_BYTES (32u * 1024u * 1024u)

enum route {
	R_NONE,
	R_EVICTION,
	R_BUDGET,
	R_ND,
	R_ND_STATUS,
	R_ND_MUTATE,
	R_AUTHORED,
	R_AUTHOR_MUTATE,
	R_EVALUATE,
	R_PLAN,
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
	bool verified; /* came with a client certificate that verified against --client-ca */
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

void srv_http_init(void)
{
	(void)pthread_once(&req_cache_once, req_cache_init);
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
	ng_buf_init(&r->out, REVIEW_OUT_BYTES);
	return r;
}

static void req_put(struct req *r)
{
	/* Keep the cached request small: drop buffers a large request grew. */
	if (r->body.alloc > 64u * 1024u)
		ng_buf_finish(&r->body);
	if (r->out.alloc > REVIEW_OUT_BYTES)
		ng_buf_finish(&r->out);
	r->out.cap = REVIEW_OUT_BYTES;
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

/* libmicrohttpd sends a response's head and body as two TLS records, each its own sendmsg.
 * A small answer is corked in GnuTLS instead, and srv_http_completed() uncorks it: one record,
 * one send. Only while the socket has nothing unsent, so the uncork cannot find the send
 * buffer full (a client that stops reading never gets here). libmicrohttpd corks the socket
 * itself (TCP_CORK) before a TLS response's head and pushes with TCP_NODELAY after its body,
 * never uncorking: the first time, the socket is uncorked here, or the record sent after
 * libmicrohttpd's push would wait for the kernel's 200 ms cork timer. libmicrohttpd believes
 * it still corked and never corks it again. */
#define COALESCE_MAX_BYTES 8192

static gnutls_session_t tls_session(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	return ci ? (gnutls_session_t)ci->tls_session : NULL;
}

static void cork_small(struct MHD_Connection *c, size_t len)
{
	if (len > COALESCE_MAX_BYTES)
		return;
	gnutls_session_t ses = tls_session(c);
	int fd = ses ? srv_conns_tcp_fd(c, NULL) : -1;
	int unsent = -1;
	if (fd >= 0 && ioctl(fd, SIOCOUTQ, &unsent) == 0 && unsent == 0)
		gnutls_record_cork(ses);
}

/* Sends what cork_small() held. A send buffer that is somehow full gets one short wait; past it
 * the connection is shut so the client sees it end rather than wait for an answer that stays
 * here. */
static void uncork(struct MHD_Connection *c)
{
	gnutls_session_t ses = tls_session(c);
	if (!ses || gnutls_record_check_corked(ses) == 0)
		return;
	bool first = false;
	int fd = srv_conns_tcp_fd(c, &first);
	if (first) {
		int off = 0;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	}
	int r = gnutls_record_uncork(ses, 0);
	if (r >= 0 || (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED))
		return;
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	if (fd >= 0 && poll(&p, 1, 100) == 1 && gnutls_record_uncork(ses, 0) >= 0)
		return;
	if (fd >= 0)
		(void)shutdown(fd, SHUT_RDWR);
}

/* The Date header (RFC 9110 §6.6.1), formatted once a second per thread: libmicrohttpd would
 * format it for every response (gmtime and a printf, 1.5 % of a review's CPU), and skips its
 * own when the response has one. */
static const char *date_header(void)
{
	static _Thread_local time_t at = -1;
	static _Thread_local char buf[40];
	time_t now = time(NULL);
	if (now != at) {
		struct tm tm;
		if (!gmtime_r(&now, &tm) ||
		    strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
			return NULL;
		at = now;
	}
	return buf;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned code, const char *ctype,
			       const char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, mode);
	if (!resp)
		return MHD_NO;
	(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	const char *date = date_header();
	if (date)
		(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_DATE, date);
	srv_conns_event(c, SRV_CONN_QUEUED);
	cork_small(c, len);
	enum MHD_Result ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Errors outside AdmissionReview get a Kubernetes-style Status body so a person (or the API
 * server's log) can read what was wrong; @header (NULL: none) with @value goes along (Allow,
 * Retry-After). */
static enum MHD_Result respond_status_with(struct srv *s, struct MHD_Connection *c, unsigned code,
					   const char *msg, const char *header, const char *value)
{
	srv_metrics_http_error(s->metrics, (int)code);
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "kind", "Status");
	ng_jw_kstr(&w, "apiVersion", "v1");
	ng_jw_kstr(&w, "status", "Failure");
	ng_jw_kstr(&w, "message", msg);
	ng_jw_kstr(&w, "reason", srv_status_reason((int32_t)code));
	ng_jw_ki64(&w, "code", code);
	ng_jw_obj_end(&w);
	ng_status st = ng_jw_finish(&w);
	if (st == NG_OK)
		st = ng_buf_puts(&b, "\n");
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
	if (header)
		(void)MHD_add_response_header(resp, header, value);
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result respond_status(struct srv *s, struct MHD_Connection *c, unsigned code,
				      const char *msg, const char *allow)
{
	return respond_status_with(s, c, code, msg, allow ? MHD_HTTP_HEADER_ALLOW : NULL, allow);
}

/* 429 with Retry-After: the admin listener's one dump and its --admin-max-plans plans. */
static enum MHD_Result too_many(struct srv *s, struct MHD_Connection *c, const char *msg)
{
	char after[16];
	ng_fmt(after, sizeof(after), "%d", SRV_ADMIN_RETRY_AFTER_S);
	return respond_status_with(s, c, MHD_HTTP_TOO_MANY_REQUESTS, msg,
				   MHD_HTTP_HEADER_RETRY_AFTER, after);
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
		     {"/validate/authored", R_AUTHORED},
		     {"/mutate/author", R_AUTHOR_MUTATE},
		     {"/v1/evaluate", R_EVALUATE},
		     {"/v1/plan", R_PLAN}};
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

/* /debug/cache, streamed: the snapshot is held until the answer is sent and one part of the
 * dump at a time is in memory. At most one dump is sent at a time (s->dumping). */
struct dump_stream {
	struct srv *s;
	struct MHD_Connection *c;
	struct kube_snapshot *snap;
	struct kube_dump_cursor cur;
	struct ng_buf part;
	size_t off;
	bool done;
	bool released; /* the snapshot and the one-dump slot given back (dump_release()) */
};

/* What one pull of the dump renders: the stream stays this small whatever the cache's size. */
#define DUMP_PART_BYTES (64u * 1024u)
/* An item is written whole after the budget: a pod's labels and annotations are bounded. */
#define DUMP_PART_CAP (16u * 1024u * 1024u)

/* Gives back the snapshot and the one-dump slot, once. Done when the last part is handed over,
 * before the chunked answer's end is sent: a client that reads the whole answer and asks again
 * at once never finds the slot still taken by the answer it has already read. */
static void dump_release(struct dump_stream *d)
{
	if (d->released)
		return;
	d->released = true;
	kube_snapshot_release(d->snap);
	d->snap = NULL;
	atomic_store(&d->s->dumping, false);
}

static ssize_t dump_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct dump_stream *d = cls;
	while (d->off == d->part.len) {
		if (d->done || d->released) {
			dump_release(d);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		ng_buf_reset(&d->part);
		d->off = 0;
		if (kube_snapshot_dump_json_part(d->snap, &d->cur, &d->part, DUMP_PART_BYTES,
						 &d->done) != NG_OK) {
			dump_release(d);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
	/* The client is reading: its send deadline starts again. */
	srv_conns_event(d->c, SRV_CONN_QUEUED);
	size_t n = d->part.len - d->off < max ? d->part.len - d->off : max;
	memcpy(out, d->part.data + d->off, n);
	d->off += n;
	return (ssize_t)n;
}

static void dump_free(void *cls)
{
	struct dump_stream *d = cls;
	dump_release(d);
	ng_buf_finish(&d->part);
	free(d);
}

static enum MHD_Result serve_dump(struct srv *s, struct MHD_Connection *c)
{
	if (atomic_exchange(&s->dumping, true))
		return too_many(s, c, "a cache dump is being sent; try again when it ends");
	struct dump_stream *d = calloc(1, sizeof(*d));
	struct MHD_Response *resp = NULL;
	if (d) {
		d->s = s;
		d->c = c;
		d->snap = kube_store_acquire(s->store);
		ng_buf_init(&d->part, DUMP_PART_CAP);
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, DUMP_PART_BYTES,
							 dump_read, d, dump_free);
		if (!resp)
			dump_free(d);
	} else {
		atomic_store(&s->dumping, false);
	}
	if (!resp)
		return respond_status(s, c, 500, "out of memory", NULL);
	(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* @objects: the caller may see series that name cluster objects (struct srv_config
 * metrics_extra). */
static enum MHD_Result serve_metrics(struct srv *s, struct MHD_Connection *c, bool objects)
{
	struct ng_buf b;
	/* The exposition is a few KiB; 1 MiB leaves room for later per-budget series. */
	ng_buf_init(&b, 1u << 20);
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st = srv_metrics_render(s->metrics, snap, s->watch, !s->probes_only, &b);
	kube_snapshot_release(snap);
	if (st == NG_OK)
		st = srv_conns_render_metrics(s->conns, &b);
	if (st == NG_OK && s->metrics_extra)
		st = s->metrics_extra(&b, objects, s->metrics_ctx);
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
	(void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				      "text/plain; version=0.0.4; charset=utf-8");
	srv_conns_event(c, SRV_CONN_QUEUED);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result serve_get(struct srv *s, struct MHD_Connection *c, enum route route,
				 bool objects)
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
	return route == R_METRICS ? serve_metrics(s, c, objects) : serve_dump(s, c);
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
		s->auto_request(a.decision.node, a.review.username, r->verified,
				s->auto_request_ctx);
	else if (a.decision.auto_request_used && !a.review.dry_run && s->auto_request_used)
		s->auto_request_used(a.decision.node, s->auto_request_ctx);
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
    {SRV_OBJ_AUTHORED, SRV_WH_AUTHORED, "authored"},
    {SRV_OBJ_AUTHOR_MUTATE, SRV_WH_AUTHOR_MUTATE, "author-mutate"},
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

/* POST /v1/plan: at most --admin-max-plans at once (s->planning), each on its connection's own
 * thread and within the caps: a plan of thousands of nodes holds a core for seconds. */
static enum MHD_Result serve_plan(struct srv *s, struct MHD_Connection *c, struct req *r)
{
	if (atomic_fetch_add(&s->planning, 1) >= s->admin_max_plans) {
		atomic_fetch_sub(&s->planning, 1);
		char msg[96];
		ng_fmt(msg, sizeof(msg),
		       "%u plan%s being computed (--admin-max-plans); try again when one ends",
		       s->admin_max_plans, s->admin_max_plans == 1 ? " is" : "s are");
		return too_many(s, c, msg);
	}
	struct ng_err err = {0};
	int code = 0;
	struct kube_snapshot *snap = kube_store_acquire(s->store);
	ng_status st = srv_plan(r->body.data ? r->body.data : "", r->body.len, r->arena, snap,
				ng_now_wall_ms(), &s->plan_caps, &r->out, &code, &err);
	kube_snapshot_release(snap);
	atomic_fetch_sub(&s->planning, 1);
	int64_t dur = ng_now_mono_us() - r->t0_us;
	struct ng_logline l;
	if (ng_log_begin(&l, st == NG_OK ? NG_LOG_INFO : NG_LOG_WARN, "srv", "plan")) {
		ng_log_i64(&l, "code", st == NG_OK ? code : 400);
		if (st != NG_OK)
			ng_log_str(&l, "err", err.msg);
		ng_log_i64(&l, "dur_us", dur);
		ng_log_end(&l);
	}
	if (st != NG_OK)
		return respond_status(s, c, st == NG_ENOMEM ? 500 : MHD_HTTP_BAD_REQUEST, err.msg,
				      NULL);
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

/* Whether this connection's client certificate verifies against --client-ca; the answer is
 * kept for the connection (one verification per handshake, not per request). */
static bool client_verified(struct MHD_Connection *c)
{
	int v = srv_conns_peer(c);
	if (v)
		return v > 0;
	gnutls_session_t ses = tls_session(c);
	unsigned n = 0, status = 0;
	bool ok = ses && gnutls_certificate_get_peers(ses, &n) && n > 0 &&
		  gnutls_certificate_verify_peers2(ses, &status) == GNUTLS_E_SUCCESS && status == 0;
	srv_conns_set_peer(c, ok ? 1 : -1);
	return ok;
}

/* Whether the Host header's name @host (port and all) is @name (@n bytes), case aside. */
static bool host_is(const char *host, size_t hlen, const char *name, size_t n)
{
	return hlen == n && strncasecmp(host, name, n) == 0;
}

/* The DNS rebinding guard (server.h, srv_config.admin_host_check): NULL when the admin request's
 * Host names the listener, else why not (answered 421). A web page that rebinds its own name to
 * 127.0.0.1 reaches a port-forward or a loopback listener with its own name in Host. */
static const char *misdirected(const struct srv *s, struct MHD_Connection *c, char *msg, size_t cap)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (!host)
		return "the admin listener answers only requests with a Host header (DNS "
		       "rebinding guard)";
	/* The name without the port: "[::1]:8081" is "[::1]", "localhost:8081" "localhost". */
	size_t hlen = strlen(host);
	const char *end = host[0] == '[' ? strchr(host, ']') : strrchr(host, ':');
	if (host[0] == '[' && end)
		hlen = (size_t)(end - host) + 1;
	else if (host[0] != '[' && end && end == strchr(host, ':'))
		hlen = (size_t)(end - host);
	static const char *const local[] = {"localhost", "127.0.0.1", "[::1]"};
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if (host_is(host, hlen, local[i], strlen(local[i])))
			return NULL;
	if (s->admin_self[0] && host_is(host, hlen, s->admin_self, strlen(s->admin_self)))
		return NULL;
	for (size_t i = 0; i < s->nadmin_hosts; i++) {
		for (const char *p = s->admin_hosts[i]; *p;) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);
			if (n && host_is(host, hlen, p, n))
				return NULL;
			p += n + (comma ? 1 : 0);
		}
	}
	ng_fmt(msg, cap,
	       "Host \"%.*s\" is not a name of the admin listener: it answers only localhost, "
	       "127.0.0.1, [::1], its own address and the names of --admin-host (DNS rebinding "
	       "guard)",
	       (int)(hlen < 100 ? hlen : 100), host);
	return msg;
}

/* Where each path is served: the webhooks on the webhook listener; the side doors (cache dump,
 * evaluate) on the admin listener only; /metrics on the admin listener and, unless turned
 * off, the webhook one; the probes on both. NULL when @door serves @route, else why not. */
static const char *door_refuses(const struct srv_door *door, enum route route)
{
	const struct srv *s = door->s;
	if (s->probes_only && route != R_HEALTHZ && route != R_READYZ && route != R_METRICS)
		return "this process serves only /healthz, /readyz and /metrics";
	switch (route) {
	case R_HEALTHZ:
	case R_READYZ:
		return NULL;
	case R_METRICS:
		return door->admin || s->webhook_metrics
			   ? NULL
			   : "/metrics is served on the admin listener (--admin-listen)";
	case R_EVALUATE:
	case R_PLAN:
	case R_DEBUG_CACHE:
		return door->admin ? NULL
				   : "served on the admin listener (--admin-listen), not on the "
				     "webhook port";
	default:
		return door->admin ? "the webhooks are served on the webhook port, not the admin "
				     "listener"
				   : NULL;
	}
}

/* Who may call: a webhook needs a verified client certificate when --client-ca is set; an admin
 * path (probes aside) needs the authorizer's yes. 0 when the request may go on, else the HTTP
 * code to answer with @msg. */
static unsigned refuse_caller(const struct srv_door *door, struct MHD_Connection *c,
			      enum route route, const char *method, const char *url, char *msg,
			      size_t cap)
{
	const struct srv *s = door->s;
	if (route == R_HEALTHZ || route == R_READYZ)
		return 0;
	if (!door->admin) {
		if (!s->client_ca || route == R_METRICS || client_verified(c))
			return 0;
		ng_fmt(msg, cap, "a client certificate signed by --client-ca is required");
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (!s->admin_authorize)
		return 0;
	const char *authz =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	/* Kubernetes names a non-resource verb by the method, in lower case. */
	const char *verb = strcmp(method, "POST") == 0 ? "post" : "get";
	char user[128] = "";
	switch (s->admin_authorize(s->admin_authorize_ctx, authz, verb, url, user, sizeof(user))) {
	case SRV_AUTH_ALLOWED:
		return 0;
	case SRV_AUTH_UNAUTHENTICATED:
		ng_fmt(msg, cap, "a valid bearer token is required");
		return MHD_HTTP_UNAUTHORIZED;
	case SRV_AUTH_FORBIDDEN:
		ng_fmt(msg, cap, "user \"%.100s\" may not %s %s", user, verb, url);
		return MHD_HTTP_FORBIDDEN;
	default:
		ng_fmt(msg, cap, "the caller could not be authenticated now; try again");
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	}
}

/* The first call of a request, headers complete: checks in order (header block, path, method,
 * listener, caller, content type, length), answers what fails, else readies the body. */
static enum MHD_Result begin_request(struct srv_door *door, struct MHD_Connection *c,
				     const char *url, const char *method, void **con_cls)
{
	struct srv *s = door->s;
	srv_conns_event(c, SRV_CONN_HEADERS);
	const char *bad = bad_head(c, method);
	if (bad)
		return respond_status(s, c, MHD_HTTP_BAD_REQUEST, bad, NULL);
	char hostmsg[256];
	const char *elsewhere_host =
	    door->admin && s->admin_host_check ? misdirected(s, c, hostmsg, sizeof(hostmsg)) : NULL;
	if (elsewhere_host)
		return respond_status(s, c, MHD_HTTP_MISDIRECTED_REQUEST, elsewhere_host, NULL);
	const char *want;
	enum route route = route_of(url, &want);
	if (route == R_NONE)
		return respond_status(s, c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	if (strcmp(method, want) != 0 &&
	    !(strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0)) {
		char msg[64];
		ng_fmt(msg, sizeof(msg), "method %.16s not allowed; use %s", method, want);
		return respond_status(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, msg, want);
	}
	const char *elsewhere = door_refuses(door, route);
	if (elsewhere)
		return respond_status(s, c, MHD_HTTP_NOT_FOUND, elsewhere, NULL);
	char msg[256];
	unsigned code = refuse_caller(door, c, route, method, url, msg, sizeof(msg));
	if (code)
		return respond_status(s, c, code, msg, NULL);
	if (route < R_EVICTION || route > R_PLAN)
		return serve_get(s, c, route, door->admin || (s->client_ca && client_verified(c)));
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
		too_big = st == NG_ELIMIT || (st == NG_OK && n > (int64_t)NG_MAX_BODY_BYTES);
		/* Far too big to be worth reading: answer now and close. */
		if (too_big && (st == NG_ELIMIT || n > (int64_t)MAX_DISCARD_BYTES))
			return respond_status(s, c, MHD_HTTP_CONTENT_TOO_LARGE,
					      "request body is larger than 3 MiB", NULL);
	}
	struct req *r = req_get();
	if (!r)
		return MHD_NO;
	r->too_big = too_big;
	r->route = route;
	r->verified = !door->admin && s->client_ca && client_verified(c);
	r->t0_us = ng_now_mono_us();
	/* An evaluation lists every node it touches: far more than a review's answer. */
	r->out.cap = route == R_PLAN       ? PLAN_OUT_BYTES
		     : route == R_EVALUATE ? EVALUATE_OUT_BYTES
					   : REVIEW_OUT_BYTES;
	*con_cls = r;
	return MHD_YES;
}

enum MHD_Result srv_http_request(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_size, void **con_cls)
{
	(void)version;
	struct srv_door *door = cls;
	struct srv *s = door->s;
	struct req *r = *con_cls;
	if (!r)
		return begin_request(door, c, url, method, con_cls);
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
	if (r->route == R_PLAN)
		return serve_plan(s, c, r);
	return r->route == R_EVALUATE ? serve_evaluate(s, c, r) : serve_object(s, c, r);
}

void srv_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		uncork(c);
	struct req *r = *con_cls;
	if (r)
		req_put(r);
	*con_cls = NULL;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		srv_conns_event(c, SRV_CONN_DONE);
}

/* Paths are matched as sent: "%2F" is not "/", and nodegate's paths and the one query argument
 * it reads (timeout=10s) hold no escapes, so nothing is decoded. */
size_t srv_http_no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}
