/* List + watch for every cached resource, on one thread with curl multi. Events land in the
 * cache's pending changes and are published together — at once when nothing was published in
 * the last batch_ms, else at the end of that window — so admission threads always read one
 * consistent snapshot. The lists that start each watch are kube/watch_list.c. */
#include "kube/watch_internal.h"

#include "kube/runtime.h"

#include "common/arena.h"
#include "common/backoff.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/map.h"
#include "common/memo.h"
#include "common/prom.h"
#include "kube/client.h"
#include "kube/kinds.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kube_watch_event_names[4] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};

/* Monotonic milliseconds: every time the watch keeps. */
int64_t kw_now_ms(void)
{
	return ng_now_mono_us() / 1000;
}

/* ±20 % jitter, so replicas that lost the API server together do not return together. */
static int64_t jitter(struct kube_watch *w, int64_t ms)
{
	return ng_jitter_ms(w->rng, ms, 20, 20);
}

/* One more on a counter the metrics read. */
void kw_inc(_Atomic uint64_t *v)
{
	ng_prom_add(v, 1);
}

/* A list or watch of @in failed (@what, @err for the log): it goes to state @st, due again
 * after the backoff. */
void kw_retry_later(struct informer *in, enum istate st, const char *what, const char *err)
{
	struct kube_watch *w = in->w;
	kw_inc(&in->restarts);
	in->state = st;
	in->attempt = in->backoff_ms ? in->attempt + 1 : 0;
	in->backoff_ms =
	    ng_backoff_ms(w->cfg.backoff_initial_ms, w->cfg.backoff_max_ms, in->attempt);
	int64_t delay = jitter(w, in->backoff_ms);
	in->due_ms = kw_now_ms() + delay;
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "kube", what)) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_str(&l, "err", err);
		ng_log_i64(&l, "retry_ms", delay);
		ng_log_end(&l);
	}
}

/* Publishes the pending changes of the kinds in @mask as the store's next snapshot. */
void kw_publish_mask(struct kube_watch *w, unsigned mask)
{
	struct kube_snapshot *s = NULL;
	w->hurry &= ~mask;
	w->moved &= ~mask;
	if (kube_cache_publish_some(w->cache, mask, &s) != NG_OK) {
		/* Pending changes stay; the next loop tries again. */
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_ERROR, "kube", "publishing the cache failed")) {
			ng_log_str(&l, "err", "out of memory");
			ng_log_end(&l);
		}
		return;
	}
	kube_store_publish(w->cfg.store, s);
	kw_inc(&w->publishes);
	if (!kube_cache_dirty(w->cache))
		w->dirty_since_ms = 0;
	if (mask & ~w->urgent)
		w->last_publish_ms = kw_now_ms();
}

static void publish(struct kube_watch *w)
{
	kw_publish_mask(w, ~0u);
}

/* The key of a deletion awaited: @ns (NULL: none) is hashed with a NUL after it. */
static uint64_t await_key_n(enum kube_resource res, const char *ns, size_t ns_len, const char *name,
			    size_t name_len)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, &res, sizeof(res));
	if (ns)
		h = ng_fnv1a64(h, ns, ns_len);
	h = ng_fnv1a64(h, "", 1);
	return ng_fnv1a64(h, name, name_len);
}

static uint64_t await_key(enum kube_resource res, const char *ns, const char *name)
{
	return await_key_n(res, ns, ns ? strlen(ns) : 0, name, strlen(name));
}

void kube_watch_await_gone(const struct kube_watch *cw, enum kube_resource res, const char *ns,
			   const char *name, int64_t until_mono_ms)
{
	struct kube_watch *w = (struct kube_watch *)(uintptr_t)cw;
	if (!w || !w->await_mu_ok || !name)
		return;
	uint64_t key = await_key(res, ns, name);
	pthread_mutex_lock(&w->await_mu);
	ng_memo_put(&w->awaited, key, until_mono_ms);
	pthread_mutex_unlock(&w->await_mu);
}

/* A deletion of the object @key names arrived for @in: when a controller awaits it, its kind is
 * published without waiting for the window. */
static void awaited_key_gone(struct kube_watch *w, const struct informer *in, uint64_t key)
{
	pthread_mutex_lock(&w->await_mu);
	bool awaited = ng_memo_has(&w->awaited, key, kw_now_ms());
	if (awaited)
		ng_memo_forget(&w->awaited, key);
	pthread_mutex_unlock(&w->await_mu);
	if (awaited)
		w->hurry |= 1u << in->res;
}

/* awaited_key_gone() of @obj, a watch event's object. */
static void awaited_gone(struct kube_watch *w, const struct informer *in, const cJSON *obj)
{
	const cJSON *meta = ng_json_get(obj, "metadata");
	const char *name = ng_json_str(meta, "name");
	if (name && w->await_mu_ok)
		awaited_key_gone(w, in, await_key(in->res, ng_json_str(meta, "namespace"), name));
}

static void mark_dirty(struct kube_watch *w)
{
	if (!w->dirty_since_ms)
		w->dirty_since_ms = kw_now_ms();
}

/* Reads a Status body's message for logs. */
void kw_status_message(const char *body, size_t len, char *out, size_t cap)
{
	cJSON *root = NULL;
	const char *msg = NULL;
	struct ng_arena *a = ng_arena_create(1u << 20);
	if (a && ng_json_parse(body, len, a, &root, NULL) == NG_OK)
		msg = ng_json_str(root, "message");
	(void)snprintf(out, cap, "%.200s", msg ? msg : "(no Status message)");
	ng_arena_destroy(a);
}
/* ---- watch ---- */

static void handle_event(struct informer *in, const char *line, size_t len)
{
	struct kube_watch *w = in->w;
	cJSON *root = NULL;
	struct ng_err err = {0};
	ng_arena_reset(in->arena);
	if (ng_json_parse(line, len, in->arena, &root, &err) != NG_OK) {
		kw_inc(&in->decode_errors);
		in->broken = true;
		return;
	}
	const char *type = ng_json_str(root, "type");
	const cJSON *obj = ng_json_get(root, "object");
	if (!type || !cJSON_IsObject(obj)) {
		kw_inc(&in->decode_errors);
		in->broken = true;
		return;
	}
	if (strcmp(type, "ERROR") == 0) {
		int64_t code = 0;
		const char *reason = ng_json_str(obj, "reason");
		(void)ng_json_int64(ng_json_get(obj, "code"), &code);
		if (code == 410 ||
		    (reason && (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)))
			in->gone = true;
		else
			in->broken = true;
		return;
	}
	int kind = -1;
	for (int i = 0; i < 4; i++)
		if (strcmp(type, kube_watch_event_names[i]) == 0)
			kind = i;
	if (kind < 0) {
		kw_inc(&in->decode_errors);
		return;
	}
	const char *rv = ng_json_str(ng_json_get(obj, "metadata"), "resourceVersion");
	if (in->state == ST_STREAMING) {
		kw_stream_event(in, kind, obj, rv);
		return;
	}
	kw_inc(&in->events[kind]);
	if (kind != 3) {
		struct kube_object o;
		ng_status st =
		    kube_decode_as(kube_cache_pool(w->cache), kube_cache_scratch(w->cache), in->res,
				   obj, "watch event", &o, &err);
		if (st != NG_OK) {
			/* The previous version stays: an undecodable update must not turn a
			 * protected pod into an unknown (and so evictable) one. */
			kw_skipped(in, err.msg);
		} else {
			st = kind == 2 ? kube_cache_delete(w->cache, &o)
				       : kube_cache_upsert(w->cache, &o);
			if (st != NG_OK) {
				in->broken = true; /* OOM: resume from the last good rv */
				return;
			}
			mark_dirty(w);
			if (kind == 2)
				awaited_gone(w, in, obj);
		}
	}
	if (rv && strlen(rv) < RV_BYTES) {
		memcpy(in->rv, rv, strlen(rv) + 1);
		kube_cache_note_rv(w->cache, in->res, rv);
		if (kind == 3)
			w->moved |= w->urgent & (1u << in->res);
	}
}

/* The longest event read straight from its text. A longer one's tree might not fit the event
 * arena (a value per two bytes of text, 64 bytes a value), where the reader, which builds no
 * tree, would go on: such a line is read as a tree, as handle_event() always did. */
#define READ_EVENT_MAX (EVENT_ARENA_CAP / 64)

/* handle_event() for the kinds read straight from their text (kube_decode_read_as()): an
 * ADDED, MODIFIED or DELETED event (only ADDED in a streamed list) whose object is decoded
 * without its tree, as it would be from the tree. False for any other line — not JSON, another
 * type, no object —: handle_event() reads it as a tree and decides, as always. */
static bool handle_event_read(struct informer *in, const char *line, size_t len)
{
	struct kube_watch *w = in->w;
	if (!kube_decode_reads(in->res) || len > READ_EVENT_MAX)
		return false;
	ng_arena_reset(in->arena);
	struct ng_json_reader r;
	ng_json_reader_init(&r, line, len, in->arena, NULL);
	if (ng_json_peek(&r) != NG_JSON_OBJECT)
		return false;
	const char *where = in->state == ST_STREAMING ? "list item" : "watch event";
	int kind = -1;
	bool decoded = false;
	ng_status st = NG_OK;
	struct kube_object o = {.side = NULL};
	struct kube_read_meta meta = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
	struct ng_err derr = {0};
	struct ng_json_str k, type;
	(void)ng_json_enter(&r);
	while (ng_json_next(&r, &k)) {
		if (NG_JSON_IS(k, "type")) {
			if (!ng_json_string(&r, &type))
				continue;
			for (int i = 0; i < 3; i++)
				if (type.len == strlen(kube_watch_event_names[i]) &&
				    memcmp(type.s, kube_watch_event_names[i], type.len) == 0)
					kind = i;
		} else if (NG_JSON_IS(k, "object") && ng_json_peek(&r) == NG_JSON_OBJECT) {
			if (decoded && st == NG_OK) /* a second "object": a duplicate key */
				kube_side_free(o.side);
			st = kube_decode_read_as(kube_cache_pool(w->cache),
						 kube_cache_scratch(w->cache), in->res, &r, where,
						 &o, &meta, &derr);
			decoded = ng_json_reader_status(&r) == NG_OK;
		} else {
			(void)ng_json_skip(&r);
		}
	}
	if (!ng_json_reader_end(&r) || kind < 0 || !decoded ||
	    (in->state == ST_STREAMING && kind != 0)) {
		if (decoded && st == NG_OK)
			kube_side_free(o.side);
		return false;
	}
	if (in->state == ST_STREAMING) {
		if (kw_stage_decoded(in, st, &o, derr.msg) != NG_OK)
			in->broken = true; /* out of memory: the list starts again */
		return true;
	}
	kw_inc(&in->events[kind]);
	if (st != NG_OK) {
		kw_skipped(in, derr.msg); /* the previous version stays (handle_event()) */
	} else {
		st = kind == 2 ? kube_cache_delete(w->cache, &o) : kube_cache_upsert(w->cache, &o);
		if (st != NG_OK) {
			in->broken = true; /* OOM: resume from the last good rv */
			return true;
		}
		mark_dirty(w);
		if (kind == 2 && meta.name.s && w->await_mu_ok)
			awaited_key_gone(w, in,
					 await_key_n(in->res, meta.ns.s, meta.ns.len, meta.name.s,
						     meta.name.len));
	}
	if (meta.rv.s && meta.rv.len < RV_BYTES) {
		memcpy(in->rv, meta.rv.s, meta.rv.len);
		in->rv[meta.rv.len] = '\0';
		kube_cache_note_rv(w->cache, in->res, in->rv);
	}
	return true;
}

/* ---- the stream's framing: newline-delimited events, cut anywhere by the HTTP chunks ---- */

void kube_lines_init(struct kube_lines *l, size_t cap)
{
	ng_buf_init(&l->buf, cap);
	l->scanned = 0;
}

void kube_lines_reset(struct kube_lines *l)
{
	ng_buf_reset(&l->buf);
	l->scanned = 0;
}

void kube_lines_finish(struct kube_lines *l)
{
	ng_buf_finish(&l->buf);
	l->scanned = 0;
}

ng_status kube_lines_feed(struct kube_lines *l, const char *p, size_t n, kube_line_fn fn, void *ctx)
{
	if (n) {
		ng_status st = ng_buf_append(&l->buf, p, n);
		if (st != NG_OK)
			return st;
	}
	if (!l->buf.len)
		return NG_OK;
	size_t start = 0;
	bool go = true;
	const char *end = l->buf.data + l->buf.len;
	for (const char *nl = l->buf.data + l->scanned;
	     go && (nl = memchr(nl, '\n', (size_t)(end - nl))); nl++) {
		size_t i = (size_t)(nl - l->buf.data);
		if (i > start)
			go = fn(ctx, l->buf.data + start, i - start);
		start = i + 1;
	}
	if (start) {
		memmove(l->buf.data, l->buf.data + start, l->buf.len - start);
		l->buf.len -= start;
		l->buf.data[l->buf.len] = '\0';
	}
	/* After a stop, what is held was not all searched: the next call starts over. */
	l->scanned = go ? l->buf.len : 0;
	return NG_OK;
}

static bool on_line(void *ctx, const char *line, size_t len)
{
	struct informer *in = ctx;
	if (!handle_event_read(in, line, len))
		handle_event(in, line, len);
	return !in->gone && !in->broken;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct informer *in = ud;
	size_t n = size * nmemb;
	if (in->state == ST_STREAMING)
		in->data_ms = kw_now_ms();
	if (!in->http)
		(void)curl_easy_getinfo(in->h, CURLINFO_RESPONSE_CODE, &in->http);
	if (in->http != 200) {
		/* An error answer: keep its start for the log. */
		struct ng_buf *b = &in->lines.buf;
		size_t room = b->len < 4096 ? 4096 - b->len : 0;
		if (room && ng_buf_append(b, ptr, n < room ? n : room) != NG_OK)
			return 0;
		return n;
	}
	if (kube_lines_feed(&in->lines, ptr, n, on_line, in) != NG_OK) {
		in->broken = true; /* an event larger than EVENT_CAP */
		return 0;
	}
	/* A stop ends the transfer; the completion handler decides what next. */
	return in->gone || in->broken ? 0 : n;
}

/* Opens the watch stream of @in with @query (after watch=1&allowWatchBookmarks=true), which
 * the server ends after @secs. */
ng_status kw_open_stream(struct informer *in, const char *query, int secs, struct ng_err *err)
{
	struct kube_watch *w = in->w;
	char path[512];
	int n =
	    snprintf(path, sizeof(path), "%s?watch=1&allowWatchBookmarks=true&%s", in->path, query);
	if (n < 0 || (size_t)n >= sizeof(path))
		return ng_err_set(err, NG_EINVAL, 0, "watch path too long");
	in->h = curl_easy_init();
	if (!in->h)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	ng_status st = kube_client_prepare(w->client, in->h, path, &in->hdrs, err);
	if (st != NG_OK) {
		curl_easy_cleanup(in->h);
		in->h = NULL;
		return st;
	}
	kube_lines_reset(&in->lines);
	in->gone = in->broken = false;
	in->http = 0;
	(void)curl_easy_setopt(in->h, CURLOPT_WRITEFUNCTION, on_data);
	(void)curl_easy_setopt(in->h, CURLOPT_BUFFERSIZE, RECV_BUFFER);
	(void)curl_easy_setopt(in->h, CURLOPT_WRITEDATA, in);
	(void)curl_easy_setopt(in->h, CURLOPT_PRIVATE, in);
	/* The server ends the watch after secs; past that plus a margin, the peer is gone. */
	(void)curl_easy_setopt(in->h, CURLOPT_TIMEOUT_MS, (long)(secs + 30) * 1000L);
	if (curl_multi_add_handle(w->multi, in->h) != CURLM_OK) {
		curl_slist_free_all(in->hdrs);
		in->hdrs = NULL;
		curl_easy_cleanup(in->h);
		in->h = NULL;
		return ng_err_set(err, NG_ENOMEM, 0, "curl_multi_add_handle");
	}
	return NG_OK;
}

static void start_watch(struct informer *in)
{
	struct kube_watch *w = in->w;
	char query[RV_BYTES + 64];
	int secs = WATCH_MIN_S + (int)(ng_rng_next(w->rng) % WATCH_SPREAD_S);
	(void)snprintf(query, sizeof(query), "resourceVersion=%s&timeoutSeconds=%d", in->rv, secs);
	struct ng_err err = {0};
	if (kw_open_stream(in, query, secs, &err) != NG_OK) {
		kw_retry_later(in, ST_WATCH, "watch failed", err.msg);
		return;
	}
	in->state = ST_WATCHING;
}

static void end_watch(struct informer *in, CURLcode res)
{
	struct kube_watch *w = in->w;
	long http = in->http;
	if (!http)
		(void)curl_easy_getinfo(in->h, CURLINFO_RESPONSE_CODE, &http);
	char msg[256];
	if (http != 200 && http != 0 && in->lines.buf.len) {
		char sm[210];
		kw_status_message(in->lines.buf.data, in->lines.buf.len, sm, sizeof(sm));
		(void)snprintf(msg, sizeof(msg), "HTTP %ld: %s", http, sm);
	} else {
		(void)snprintf(msg, sizeof(msg), "%s", curl_easy_strerror(res));
	}
	(void)curl_multi_remove_handle(w->multi, in->h);
	curl_easy_cleanup(in->h);
	curl_slist_free_all(in->hdrs);
	in->h = NULL;
	in->hdrs = NULL;
	if (in->state == ST_STREAMING) {
		kw_stream_ended(in, res, http, msg);
		return;
	}
	if (in->gone || http == 410) {
		/* The history we would resume from is gone: list again and replace. */
		kw_inc(&in->relists);
		in->state = ST_LIST;
		in->due_ms = 0;
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_INFO, "kube", "watch expired, relisting")) {
			ng_log_str(&l, "resource", kube_resource_name(in->res));
			ng_log_str(&l, "rv", in->rv);
			ng_log_end(&l);
		}
		return;
	}
	if (in->broken || http != 200 || (res != CURLE_OK && res != CURLE_OPERATION_TIMEDOUT)) {
		kw_retry_later(in, ST_WATCH, "watch failed", in->broken ? "bad event stream" : msg);
		return;
	}
	/* A watch that ran its course: resume at once from the last resourceVersion. */
	in->state = ST_WATCH;
	in->due_ms = 0;
	in->backoff_ms = 0;
}

/* Lists and watches that are due start now; returns when the next one falls due (monotonic
 * ms; at most a second away). */
static int64_t start_due(struct kube_watch *w, int64_t now_mono)
{
	int64_t next_due = now_mono + 1000;
	for (int r = 0; r < KUBE_RES_COUNT && !atomic_load(w->stop); r++) {
		struct informer *in = &w->inf[r];
		kw_check_stream_stalled(in, now_mono);
		if (in->state == ST_LIST && in->due_ms <= now_mono)
			kw_start_list(in);
		else if (in->state == ST_WATCH && in->due_ms <= now_mono)
			start_watch(in);
		if ((in->state == ST_LIST || in->state == ST_WATCH) && in->due_ms < next_due)
			next_due = in->due_ms;
	}
	return next_due;
}

/* Moves the transfers on and ends the watches that finished. */
static void drive_transfers(struct kube_watch *w)
{
	int running = 0;
	(void)curl_multi_perform(w->multi, &running);
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(w->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct informer *in = NULL;
		(void)curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&in);
		if (in && in->state == ST_LISTING)
			kw_end_page(in, m->data.result);
		else if (in)
			end_watch(in, m->data.result);
	}
}

/* Until every kind has been listed once, nodegate is not ready and nothing that waits for it
 * reads the cache; the kinds listed already publish their changes (a large cluster's node
 * heartbeats) at most once per STARTUP_BATCH_MS meanwhile, rather than once per batch window:
 * every publish has its cost (a heartbeat is a patch over the node table, but a node that
 * changed otherwise copies it), and while 1,000,000 pods stream in, each one is taken from the
 * list. What is held back is at most one pending change per object of those kinds.
 * The last list to finish publishes everything (publish_synced() in kube/watch_list.c). */
#define STARTUP_BATCH_MS 5000

static int64_t batch_window(const struct kube_watch *w)
{
	if (w->cfg.batch_ms >= STARTUP_BATCH_MS || kube_watch_synced(w))
		return w->cfg.batch_ms;
	return STARTUP_BATCH_MS;
}

/* One pass of the informers on the runtime's thread: start what is due, move the transfers,
 * publish, and wait in curl (woken by kube_runtime_destroy through interrupt()). All times are
 * monotonic milliseconds. */
static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct kube_watch *w = ctx;
	int64_t next_due = start_due(w, kw_now_ms());
	drive_transfers(w);
	int64_t now_mono = kw_now_ms();
	/* Everything that arrived together is published at once, but not more than once per
	 * batch_ms: an isolated change is visible in milliseconds, a burst costs one table
	 * rebuild per window. */
	int64_t publish_at = w->last_publish_ms + batch_window(w);
	if (w->dirty_since_ms && now_mono >= publish_at) {
		publish(w);
	} else if ((kube_cache_dirty_mask(w->cache) & (w->urgent | w->hurry)) || w->moved) {
		/* nodegate's own kinds, a kind whose awaited deletion just arrived, and an urgent
		 * kind a bookmark moved */
		kw_publish_mask(w, w->urgent | w->hurry | w->moved);
	}
	if (w->dirty_since_ms && publish_at < next_due)
		next_due = publish_at;
	int64_t wait = next_due - kw_now_ms();
	if (wait > 0)
		(void)curl_multi_poll(w->multi, NULL, 0, (int)(wait > 1000 ? 1000 : wait), NULL);
	return KUBE_RUNTIME_AGAIN;
}

static void interrupt(void *ctx)
{
	struct kube_watch *w = ctx;
	if (w->multi)
		(void)curl_multi_wakeup(w->multi);
}

static bool gate_ready(const struct kube_runtime_gate *g)
{
	return kube_watch_synced((const struct kube_watch *)(const void *)g);
}

struct kube_watch *kube_watch_start(const struct kube_watch_config *cfg, struct ng_err *reterr)
{
	struct kube_watch *w = calloc(1, sizeof(*w));
	if (!w) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	w->gate.ready = gate_ready;
	w->cfg = *cfg;
	ng_memo_init(&w->awaited, KUBE_WATCH_AWAITED_MAX);
	w->await_mu_ok = pthread_mutex_init(&w->await_mu, NULL) == 0;
	if (w->cfg.batch_ms <= 0)
		w->cfg.batch_ms = 100;
	if (w->cfg.page_timeout_ms <= 0)
		w->cfg.page_timeout_ms = 60000;
	if (w->cfg.backoff_initial_ms <= 0)
		w->cfg.backoff_initial_ms = 800;
	if (w->cfg.backoff_max_ms <= 0)
		w->cfg.backoff_max_ms = 30000;
	w->cache = kube_cache_create();
	w->multi = curl_multi_init();
	const struct kube_runtime_config rc = {
	    .name = "watch", .kube = cfg->cfg, .step = step, .interrupt = interrupt, .ctx = w};
	w->rt = w->cache && w->multi ? kube_runtime_create(&rc, reterr) : NULL;
	if (w->rt) {
		w->client = kube_runtime_client(w->rt);
		w->stop = kube_runtime_stop_flag(w->rt);
		w->rng = kube_runtime_rng(w->rt);
	}
	if (!w->client || !w->cache || !w->multi) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto fail;
	}
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		struct informer *in = &w->inf[r];
		in->w = w;
		in->res = (enum kube_resource)r;
		kube_kind_path(in->res, in->path, sizeof(in->path));
		if (kube_kinds[r].urgent)
			w->urgent |= 1u << r;
		in->state = ST_LIST;
		kube_lines_init(&in->lines, EVENT_CAP);
		in->arena = ng_arena_create(EVENT_ARENA_CAP);
		if (!in->arena) {
			(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
			goto fail;
		}
	}
	if (kube_runtime_start(w->rt, reterr) != NG_OK)
		goto fail;
	return w;
fail:
	kube_watch_stop(w);
	return NULL;
}

bool kube_watch_synced(const struct kube_watch *w)
{
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		if (!atomic_load(&((struct kube_watch *)(uintptr_t)w)->inf[r].synced))
			return false;
	return true;
}

void kube_watch_get_stats(const struct kube_watch *cw, struct kube_watch_stats *ret)
{
	struct kube_watch *w = (struct kube_watch *)(uintptr_t)cw;
	memset(ret, 0, sizeof(*ret));
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		struct informer *in = &w->inf[r];
		for (int k = 0; k < 4; k++)
			ret->events[r][k] =
			    atomic_load_explicit(&in->events[k], memory_order_relaxed);
		ret->restarts[r] = atomic_load_explicit(&in->restarts, memory_order_relaxed);
		ret->relists[r] = atomic_load_explicit(&in->relists, memory_order_relaxed);
		ret->decode_errors[r] =
		    atomic_load_explicit(&in->decode_errors, memory_order_relaxed);
		ret->synced[r] = atomic_load(&in->synced);
	}
	ret->publishes = atomic_load_explicit(&w->publishes, memory_order_relaxed);
}

void kube_watch_stop(struct kube_watch *w)
{
	if (!w)
		return;
	kube_runtime_destroy(w->rt); /* interrupts the poll and joins the thread */
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		struct informer *in = &w->inf[r];
		kw_list_cleanup(in); /* also ends a watch's transfer */
		kube_lines_finish(&in->lines);
		ng_arena_destroy(in->arena);
	}
	if (w->multi)
		(void)curl_multi_cleanup(w->multi);
	kube_cache_destroy(w->cache);
	ng_memo_free(&w->awaited);
	if (w->await_mu_ok)
		pthread_mutex_destroy(&w->await_mu);
	free(w);
}
