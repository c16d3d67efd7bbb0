/* List + watch for every cached resource, on one thread with curl multi. Events land in the
 * cache's pending changes and are published together — at once when nothing was published in
 * the last batch_ms, else at the end of that window — so admission threads always read one
 * consistent snapshot. */
#include "kube/watch.h"

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

/* Page size of lists: client-go's pager default. */
#define LIST_LIMIT 500
/* One list page: 500 large objects; the API server's own response limit is far above what 500
 * real objects need, 256 MiB bounds a hostile answer. */
#define LIST_PAGE_CAP (256u * 1024u * 1024u)
/* One watch event: an object is at most 1.5 MB in etcd; its JSON with the event envelope stays
 * well under 8 MiB. */
#define EVENT_CAP (8u * 1024u * 1024u)
/* Watches end after a random 5-10 minutes, as client-go's reflector does, so reconnections of
 * many replicas spread out. */
#define WATCH_MIN_S 300
#define WATCH_SPREAD_S 300
/* resourceVersion is opaque; real ones are short decimal strings. */
#define RV_BYTES 128

const char *const kube_watch_event_names[4] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};

enum istate {
	ST_LIST,  /* list (again) when due */
	ST_WATCH, /* start a watch from rv when due */
	ST_WATCHING,
	ST_LISTING,   /* a list page is in flight */
	ST_STREAMING, /* a streamed list (a watch with sendInitialEvents) before its end mark */
};

struct informer {
	struct kube_watch *w;
	enum kube_resource res;
	char path[KUBE_KIND_PATH_MAX]; /* its row's list and watch path */
	enum istate state;
	int64_t due_ms; /* monotonic */
	int64_t backoff_ms;
	uint32_t attempt; /* failures in a row, for the backoff */
	char rv[RV_BYTES];
	CURL *h;
	struct curl_slist *hdrs;
	struct kube_lines lines; /* the event stream's bytes not yet handed over */
	struct ng_arena *arena;
	bool gone;   /* a 410 ERROR event arrived: relist */
	bool broken; /* the stream cannot be trusted: reconnect */
	long http;
	/* The list in progress (ST_LISTING): its staged objects, the page being received and its
	 * tree, where it goes on from. */
	struct kube_stage *stage;
	struct ng_buf page;
	struct ng_arena *page_arena;
	char cont[2048];
	char list_rv[RV_BYTES];
	int list_attempt; /* 1 once an expired continue token restarted it */
	size_t pages;
	int64_t list_t0_ms;
	int64_t data_ms; /* monotonic: the last bytes of a streamed list */
	bool not_served; /* an optional kind answered 404 (logged once until served again) */
	_Atomic bool synced;
	_Atomic uint64_t events[4], restarts, relists, decode_errors;
};

struct kube_watch {
	/* First: what a runtime given this watch waits on (kube/runtime.h). */
	struct kube_runtime_gate gate;
	struct kube_watch_config cfg;
	struct kube_runtime *rt;    /* the watch thread */
	struct kube_client *client; /* the runtime's */
	const _Atomic bool *stop;   /* the runtime's */
	struct kube_cache *cache;
	CURLM *multi;
	struct informer inf[KUBE_RES_COUNT];
	/* Kinds published as soon as they change (rows urgent: nodegate's own objects, few and
	 * small, and a NodeDisruption waits for its answer); the others once per batch window. */
	unsigned urgent;
	int64_t dirty_since_ms;  /* monotonic; 0: nothing pending */
	int64_t last_publish_ms; /* monotonic */
	_Atomic uint64_t publishes;
	struct ng_rng *rng; /* the runtime's */
	/* The API server refused a streamed list, or never marked one's end: pages from then on. */
	bool no_stream;
	/* Deletions a controller waits for (kube_watch_await_gone(), any thread, under await_mu),
	 * and the kinds one of them arrived for since the last publish (the watch thread's). */
	pthread_mutex_t await_mu;
	bool await_mu_ok;
	struct ng_memo awaited;
	unsigned hurry;
};

static int64_t now_mono_ms(void)
{
	return ng_now_mono_us() / 1000;
}

/* ±20 % jitter, so replicas that lost the API server together do not return together. */
static int64_t jitter(struct kube_watch *w, int64_t ms)
{
	return ng_jitter_ms(w->rng, ms, 20, 20);
}

static void inc(_Atomic uint64_t *v)
{
	ng_prom_add(v, 1);
}

static void retry_later(struct informer *in, enum istate st, const char *what, const char *err)
{
	struct kube_watch *w = in->w;
	inc(&in->restarts);
	in->state = st;
	in->attempt = in->backoff_ms ? in->attempt + 1 : 0;
	in->backoff_ms =
	    ng_backoff_ms(w->cfg.backoff_initial_ms, w->cfg.backoff_max_ms, in->attempt);
	int64_t delay = jitter(w, in->backoff_ms);
	in->due_ms = now_mono_ms() + delay;
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "kube", what)) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_str(&l, "err", err);
		ng_log_i64(&l, "retry_ms", delay);
		ng_log_end(&l);
	}
}

static void publish_mask(struct kube_watch *w, unsigned mask)
{
	struct kube_snapshot *s = NULL;
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
	inc(&w->publishes);
	if (!kube_cache_dirty(w->cache))
		w->dirty_since_ms = 0;
	if (mask & ~w->urgent)
		w->last_publish_ms = now_mono_ms();
}

static void publish(struct kube_watch *w)
{
	publish_mask(w, ~0u);
	w->hurry = 0;
}

static uint64_t await_key(enum kube_resource res, const char *ns, const char *name)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, &res, sizeof(res));
	h = ng_fnv1a64(h, ns ? ns : "", ns ? strlen(ns) + 1 : 1);
	return ng_fnv1a64(h, name, strlen(name));
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

/* A deletion of @obj (a watch event's object) arrived for @in: when a controller awaits it, its
 * kind is published without waiting for the window. */
static void awaited_gone(struct kube_watch *w, const struct informer *in, const cJSON *obj)
{
	const cJSON *meta = ng_json_get(obj, "metadata");
	const char *name = ng_json_str(meta, "name");
	if (!name || !w->await_mu_ok)
		return;
	uint64_t key = await_key(in->res, ng_json_str(meta, "namespace"), name);
	pthread_mutex_lock(&w->await_mu);
	bool awaited = ng_memo_has(&w->awaited, key, now_mono_ms());
	if (awaited)
		ng_memo_forget(&w->awaited, key);
	pthread_mutex_unlock(&w->await_mu);
	if (awaited)
		w->hurry |= 1u << in->res;
}

static void mark_dirty(struct kube_watch *w)
{
	if (!w->dirty_since_ms)
		w->dirty_since_ms = now_mono_ms();
}

/* Reads a Status body's message for logs. */
static void status_message(const char *body, size_t len, char *out, size_t cap)
{
	cJSON *root = NULL;
	const char *msg = NULL;
	struct ng_arena *a = ng_arena_create(1u << 20);
	if (a && ng_json_parse(body, len, a, &root, NULL) == NG_OK)
		msg = ng_json_str(root, "message");
	(void)snprintf(out, cap, "%.200s", msg ? msg : "(no Status message)");
	ng_arena_destroy(a);
}

/* ---- list ----
 *
 * A list is a chain of page requests on the same curl multi as the watches: the thread moves
 * every other stream on (and publishes their changes) while a page is in flight, and decodes a
 * page only once it has arrived whole. Objects go into a stage of their own (struct
 * kube_stage), published in one go when the last page is in, so a list is never seen half-way
 * and a failed one changes nothing. */

static void list_cleanup(struct informer *in)
{
	struct kube_watch *w = in->w;
	if (in->h) {
		(void)curl_multi_remove_handle(w->multi, in->h);
		curl_easy_cleanup(in->h);
		curl_slist_free_all(in->hdrs);
		in->h = NULL;
		in->hdrs = NULL;
	}
	kube_stage_destroy(in->stage);
	in->stage = NULL;
	ng_arena_destroy(in->page_arena);
	in->page_arena = NULL;
	ng_buf_finish(&in->page);
}

static void list_failed(struct informer *in, const char *msg)
{
	list_cleanup(in);
	in->state = ST_LIST;
	in->due_ms = 0;
	if (!atomic_load(in->w->stop))
		retry_later(in, ST_LIST, "list failed", msg);
}

static size_t on_page_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct informer *in = ud;
	size_t n = size * nmemb;
	if (ng_buf_append(&in->page, ptr, n) != NG_OK) {
		in->broken = true; /* a page over LIST_PAGE_CAP */
		return 0;
	}
	return n;
}

/* Requests the page at in->cont (the first page when empty). */
static void start_page(struct informer *in)
{
	struct kube_watch *w = in->w;
	char path[4096];
	char *esc = NULL;
	if (in->cont[0] && !(esc = curl_easy_escape(NULL, in->cont, 0))) {
		list_failed(in, "out of memory");
		return;
	}
	int n = snprintf(path, sizeof(path), "%s?limit=%d%s%s", in->path, LIST_LIMIT,
			 esc ? "&continue=" : "", esc ? esc : "");
	curl_free(esc);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		list_failed(in, "continue token too long");
		return;
	}
	struct ng_err err = {0};
	ng_buf_reset(&in->page);
	in->broken = false;
	in->h = curl_easy_init();
	if (!in->h) {
		list_failed(in, "out of memory");
		return;
	}
	if (kube_client_prepare(w->client, in->h, path, &in->hdrs, &err) != NG_OK) {
		list_failed(in, err.msg);
		return;
	}
	(void)curl_easy_setopt(in->h, CURLOPT_WRITEFUNCTION, on_page_data);
	(void)curl_easy_setopt(in->h, CURLOPT_WRITEDATA, in);
	(void)curl_easy_setopt(in->h, CURLOPT_PRIVATE, in);
	(void)curl_easy_setopt(in->h, CURLOPT_TIMEOUT_MS, (long)w->cfg.page_timeout_ms);
	if (curl_multi_add_handle(w->multi, in->h) != CURLM_OK) {
		list_failed(in, "curl_multi_add_handle");
		return;
	}
	in->pages++;
	in->state = ST_LISTING;
}

static void start_stream(struct informer *in);

static void start_list(struct informer *in)
{
	struct kube_watch *w = in->w;
	/* Changes of this resource received before the relist go out first: a relist that fails
	 * must not lose them. Other resources keep their own rhythm. */
	if (kube_cache_dirty_mask(w->cache) & (1u << in->res))
		publish_mask(w, 1u << in->res);
	in->list_t0_ms = now_mono_ms();
	in->list_attempt = 0;
	in->pages = 0;
	in->cont[0] = '\0';
	in->stage = kube_stage_create(w->cache, in->res);
	if (!in->stage) {
		list_failed(in, "out of memory");
		return;
	}
	if (!w->cfg.page_lists && !w->no_stream) {
		start_stream(in);
		return;
	}
	ng_buf_init(&in->page, LIST_PAGE_CAP);
	/* A list page's tree: 500 objects, a few MB of JSON, a few times that in nodes. */
	in->page_arena = ng_arena_create(4 * (size_t)LIST_PAGE_CAP);
	if (!in->page_arena) {
		list_failed(in, "out of memory");
		return;
	}
	start_page(in);
}

/* A whole list is staged (@count objects, at version in->list_rv): it is the resource's table
 * now, published at once, and the watch goes on from its version. */
static void listed(struct informer *in, size_t count)
{
	struct kube_watch *w = in->w;
	memcpy(in->rv, in->list_rv, sizeof(in->rv));
	kube_cache_note_rv(w->cache, in->res, in->rv);
	publish_mask(w, 1u << in->res);
	atomic_store(&in->synced, true);
	in->backoff_ms = 0;
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_INFO, "kube", "listed")) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_i64(&l, "objects", (int64_t)count);
		if (in->state == ST_STREAMING)
			ng_log_str(&l, "method", "stream");
		else
			ng_log_i64(&l, "pages", (int64_t)in->pages);
		ng_log_str(&l, "rv", in->rv);
		ng_log_i64(&l, "dur_ms", now_mono_ms() - in->list_t0_ms);
		ng_log_end(&l);
	}
}

/* The last page is in: the staged objects replace the resource's table. */
static void finish_list(struct informer *in)
{
	struct kube_watch *w = in->w;
	size_t count = kube_stage_count(in->stage);
	if (kube_cache_replace(w->cache, in->stage) != NG_OK) {
		list_failed(in, "out of memory");
		return;
	}
	list_cleanup(in);
	listed(in, count);
	in->state = ST_WATCH;
	in->due_ms = 0;
}

/* How often a kind the API server does not serve (its row optional) is listed again, to notice
 * its CRD being installed. */
#define NOT_SERVED_RELIST_MS 60000

/* An optional kind answered 404 (@http): its CRD is not installed; or 403: nodegate may not list
 * it (a CLI user without the rights, an install without the optional rule). The cache holds
 * none of it (an empty table, synced) and lists it again later, so nodegate runs, without that
 * feature, rather than never syncing. */
static void not_served(struct informer *in, long http)
{
	struct kube_watch *w = in->w;
	kube_stage_destroy(in->stage);
	in->stage = kube_stage_create(w->cache, in->res);
	if (!in->stage || kube_cache_replace(w->cache, in->stage) != NG_OK) {
		list_failed(in, "out of memory");
		return;
	}
	list_cleanup(in);
	publish_mask(w, 1u << in->res);
	atomic_store(&in->synced, true);
	in->state = ST_LIST;
	in->due_ms = now_mono_ms() + NOT_SERVED_RELIST_MS;
	struct ng_logline l;
	/* A CRD not installed is normal (a cluster without Cluster API): info, so that the CLI,
	 * which prints warnings on stderr, stays quiet; not permitted is a misconfiguration. */
	if (!in->not_served &&
	    ng_log_begin(&l, http == 403 ? NG_LOG_WARN : NG_LOG_INFO, "kube",
			 http == 403 ? "resource not permitted to list: treated as empty"
				     : "resource not served (its CRD is not installed): treated as "
				       "empty")) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_i64(&l, "relist_ms", NOT_SERVED_RELIST_MS);
		ng_log_end(&l);
	}
	in->not_served = true;
}

/* Whether a finished page request (@res: curl's result, @http its status) brought a page to
 * read; when not, what it brought is handled here (a failure, a restart, a kind not served). */
static bool page_answered(struct informer *in, CURLcode res, long http)
{
	struct kube_watch *w = in->w;
	char msg[256];
	if (res != CURLE_OK || atomic_load(w->stop)) {
		(void)snprintf(msg, sizeof(msg), "%s",
			       in->broken ? "list page too large" : curl_easy_strerror(res));
		list_failed(in, msg);
		return false;
	}
	if (http == 410 && in->list_attempt == 0) {
		/* An expired continue token: the list restarts once from the top. */
		in->list_attempt = 1;
		in->cont[0] = '\0';
		kube_stage_destroy(in->stage);
		in->stage = kube_stage_create(w->cache, in->res);
		if (!in->stage)
			list_failed(in, "out of memory");
		else
			start_page(in);
		return false;
	}
	if ((http == 404 || http == 403) && kube_kinds[in->res].optional) {
		not_served(in, http);
		return false;
	}
	in->not_served = false;
	if (http != 200) {
		if (http == 401)
			kube_client_invalidate_token(w->client);
		char sm[210];
		status_message(in->page.data ? in->page.data : "", in->page.len, sm, sizeof(sm));
		(void)snprintf(msg, sizeof(msg), "HTTP %ld: %s", http, sm);
		list_failed(in, msg);
		return false;
	}
	return true;
}

/* An object of @in that does not decode (@err): counted and logged, and left out. */
static void skipped(struct informer *in, const char *err)
{
	inc(&in->decode_errors);
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "kube", "object skipped")) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_str(&l, "err", err);
		ng_log_end(&l);
	}
}

/* Decodes one listed object @e into the list's stage, skipping (and counting) it when it does
 * not decode. NG_ENOMEM when it cannot be staged. */
static ng_status stage_one(struct informer *in, const cJSON *e)
{
	struct kube_watch *w = in->w;
	struct kube_object obj;
	struct ng_err derr = {0};
	if (kube_decode_as(kube_cache_pool(w->cache), kube_cache_scratch(w->cache), in->res, e,
			   "list item", &obj, &derr) != NG_OK) {
		skipped(in, derr.msg);
		return NG_OK;
	}
	return kube_stage_add(in->stage, &obj);
}

/* Stages a page's @items. False when out of memory, the list then failed. */
static bool stage_items(struct informer *in, const cJSON *items)
{
	for (const cJSON *e = cJSON_IsArray(items) ? items->child : NULL; e; e = e->next) {
		if (stage_one(in, e) != NG_OK) {
			list_failed(in, "out of memory");
			return false;
		}
	}
	return true;
}

/* A page request finished (@res: curl's result). */
static void end_page(struct informer *in, CURLcode res)
{
	struct kube_watch *w = in->w;
	long http = 0;
	(void)curl_easy_getinfo(in->h, CURLINFO_RESPONSE_CODE, &http);
	(void)curl_multi_remove_handle(w->multi, in->h);
	curl_easy_cleanup(in->h);
	curl_slist_free_all(in->hdrs);
	in->h = NULL;
	in->hdrs = NULL;
	if (!page_answered(in, res, http))
		return;
	ng_arena_reset(in->page_arena);
	cJSON *root = NULL;
	struct ng_err err = {0};
	if (ng_json_parse(in->page.data, in->page.len, in->page_arena, &root, &err) != NG_OK) {
		list_failed(in, err.msg);
		return;
	}
	const cJSON *meta = ng_json_get(root, "metadata");
	const char *rv = ng_json_str(meta, "resourceVersion");
	const char *next = ng_json_str(meta, "continue");
	const cJSON *items = ng_json_get(root, "items");
	if (!rv || strlen(rv) >= RV_BYTES ||
	    (items && !cJSON_IsArray(items) && !cJSON_IsNull(items))) {
		list_failed(in, "list response without metadata.resourceVersion or items");
		return;
	}
	if (next && strlen(next) >= sizeof(in->cont)) {
		list_failed(in, "continue token too long");
		return;
	}
	memcpy(in->list_rv, rv, strlen(rv) + 1);
	(void)snprintf(in->cont, sizeof(in->cont), "%s", next ? next : "");
	/* The tree holds copies of the page's strings: the next page can be on its way while
	 * this one is decoded. */
	if (in->cont[0]) {
		start_page(in);
		if (in->state != ST_LISTING)
			return; /* failed and cleaned up */
	}
	if (stage_items(in, items) && !in->cont[0])
		finish_list(in);
}

/* ---- streamed list ----
 *
 * Where the API server offers it (WatchList: on by default since Kubernetes 1.32), a list is a
 * watch with sendInitialEvents: every object comes as an ADDED event, decoded into the stage
 * one at a time, and a bookmark annotated k8s.io/initial-events-end closes the list at its
 * resourceVersion; the same stream then goes on as the watch. Nothing larger than one event
 * is held, and no page waits on the one before. A server without the feature refuses the
 * options (422): lists go in pages from then on. */

static ng_status open_stream(struct informer *in, const char *query, int secs, struct ng_err *err);

static void start_stream(struct informer *in)
{
	struct kube_watch *w = in->w;
	char query[160];
	int secs = WATCH_MIN_S + (int)(ng_rng_next(w->rng) % WATCH_SPREAD_S);
	(void)snprintf(query, sizeof(query),
		       "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=%d",
		       secs);
	struct ng_err err = {0};
	if (open_stream(in, query, secs, &err) != NG_OK) {
		list_failed(in, err.msg);
		return;
	}
	in->state = ST_STREAMING;
	in->data_ms = now_mono_ms();
}

/* A streamed list that brought nothing for a page's timeout is given up, as a page would be:
 * a watch may be quiet for minutes, its initial events may not. */
static void check_stream_stalled(struct informer *in, int64_t now_mono)
{
	struct kube_watch *w = in->w;
	if (in->state != ST_STREAMING || now_mono - in->data_ms < w->cfg.page_timeout_ms)
		return;
	list_failed(in, "the streamed list brought nothing within the page timeout");
}

/* Whether the bookmark @obj closes the initial events. */
static bool ends_initial_events(const cJSON *obj)
{
	const cJSON *ann = ng_json_get(ng_json_get(obj, "metadata"), "annotations");
	const char *v = ng_json_str(ann, "k8s.io/initial-events-end");
	return v && strcmp(v, "true") == 0;
}

/* One event of a streamed list before its end (@kind an index of kube_watch_event_names). */
static void stream_event(struct informer *in, int kind, const cJSON *obj, const char *rv)
{
	struct kube_watch *w = in->w;
	if (kind == 0) {
		if (stage_one(in, obj) != NG_OK)
			in->broken = true; /* out of memory: the list starts again */
		return;
	}
	if (kind != 3) {
		in->broken = true; /* only ADDED comes before the end mark */
		return;
	}
	if (!ends_initial_events(obj))
		return;
	if (!rv || strlen(rv) >= RV_BYTES) {
		in->broken = true;
		return;
	}
	memcpy(in->list_rv, rv, strlen(rv) + 1);
	size_t count = kube_stage_count(in->stage);
	if (kube_cache_replace(w->cache, in->stage) != NG_OK) {
		in->broken = true;
		return;
	}
	kube_stage_destroy(in->stage);
	in->stage = NULL;
	in->not_served = false;
	listed(in, count);
	in->state = ST_WATCHING;
}

/* A streamed list ended before its end mark (@http, @res: curl's result; @msg for the log). A
 * refusal of its options, or a stream that ran its whole course without the mark, means the
 * API server does not stream lists: pages from now on, at once. Cut short otherwise, it is
 * tried again after the backoff. */
static void stream_ended(struct informer *in, CURLcode res, long http, const char *msg)
{
	struct kube_watch *w = in->w;
	kube_stage_destroy(in->stage);
	in->stage = NULL;
	if ((http == 404 || http == 403) && kube_kinds[in->res].optional) {
		not_served(in, http);
		return;
	}
	if (in->gone) { /* 410 in the stream: start over at once */
		inc(&in->relists);
		in->state = ST_LIST;
		in->due_ms = 0;
		return;
	}
	/* Ran its whole course (at least the shortest timeoutSeconds asked): a stream cut
	 * earlier (a dropped connection, an API server restarting) is tried again as a stream. */
	bool ran_out = http == 200 && !in->broken && !in->gone &&
		       (res == CURLE_OK || res == CURLE_OPERATION_TIMEDOUT) &&
		       now_mono_ms() - in->list_t0_ms >= (int64_t)WATCH_MIN_S * 1000;
	if (http == 400 || http == 422 || ran_out) {
		struct ng_logline l;
		if (!w->no_stream &&
		    ng_log_begin(
			&l, NG_LOG_INFO, "kube",
			"the API server does not stream lists (WatchList): listing in pages")) {
			ng_log_str(&l, "resource", kube_resource_name(in->res));
			ng_log_i64(&l, "http", http);
			ng_log_str(&l, "answer", ran_out ? "no end of the initial events" : msg);
			ng_log_end(&l);
		}
		w->no_stream = true;
		in->state = ST_LIST;
		in->due_ms = 0;
		return;
	}
	if (http == 401)
		kube_client_invalidate_token(w->client);
	retry_later(in, ST_LIST, "list failed", in->broken ? "bad event stream" : msg);
}

/* ---- watch ---- */

static void handle_event(struct informer *in, const char *line, size_t len)
{
	struct kube_watch *w = in->w;
	cJSON *root = NULL;
	struct ng_err err = {0};
	ng_arena_reset(in->arena);
	if (ng_json_parse(line, len, in->arena, &root, &err) != NG_OK) {
		inc(&in->decode_errors);
		in->broken = true;
		return;
	}
	const char *type = ng_json_str(root, "type");
	const cJSON *obj = ng_json_get(root, "object");
	if (!type || !cJSON_IsObject(obj)) {
		inc(&in->decode_errors);
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
		inc(&in->decode_errors);
		return;
	}
	const char *rv = ng_json_str(ng_json_get(obj, "metadata"), "resourceVersion");
	if (in->state == ST_STREAMING) {
		stream_event(in, kind, obj, rv);
		return;
	}
	inc(&in->events[kind]);
	if (kind != 3) {
		struct kube_object o;
		ng_status st =
		    kube_decode_as(kube_cache_pool(w->cache), kube_cache_scratch(w->cache), in->res,
				   obj, "watch event", &o, &err);
		if (st != NG_OK) {
			/* The previous version stays: an undecodable update must not turn a
			 * protected pod into an unknown (and so evictable) one. */
			skipped(in, err.msg);
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
	}
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
	size_t start = 0;
	bool go = true;
	for (size_t i = l->scanned; go && i < l->buf.len; i++) {
		if (l->buf.data[i] != '\n')
			continue;
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
	handle_event(in, line, len);
	return !in->gone && !in->broken;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct informer *in = ud;
	size_t n = size * nmemb;
	if (in->state == ST_STREAMING)
		in->data_ms = now_mono_ms();
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
static ng_status open_stream(struct informer *in, const char *query, int secs, struct ng_err *err)
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
	if (open_stream(in, query, secs, &err) != NG_OK) {
		retry_later(in, ST_WATCH, "watch failed", err.msg);
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
		status_message(in->lines.buf.data, in->lines.buf.len, sm, sizeof(sm));
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
		stream_ended(in, res, http, msg);
		return;
	}
	if (in->gone || http == 410) {
		/* The history we would resume from is gone: list again and replace. */
		inc(&in->relists);
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
		retry_later(in, ST_WATCH, "watch failed", in->broken ? "bad event stream" : msg);
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
		check_stream_stalled(in, now_mono);
		if (in->state == ST_LIST && in->due_ms <= now_mono)
			start_list(in);
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
			end_page(in, m->data.result);
		else if (in)
			end_watch(in, m->data.result);
	}
}

/* One pass of the informers on the runtime's thread: start what is due, move the transfers,
 * publish, and wait in curl (woken by kube_runtime_destroy through interrupt()). All times are
 * monotonic milliseconds. */
static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct kube_watch *w = ctx;
	int64_t next_due = start_due(w, now_mono_ms());
	drive_transfers(w);
	int64_t now_mono = now_mono_ms();
	/* Everything that arrived together is published at once, but not more than once per
	 * batch_ms: an isolated change is visible in milliseconds, a burst costs one table
	 * rebuild per window. */
	int64_t publish_at = w->last_publish_ms + w->cfg.batch_ms;
	if (w->dirty_since_ms && now_mono >= publish_at) {
		publish(w);
	} else if (kube_cache_dirty_mask(w->cache) & (w->urgent | w->hurry)) {
		/* nodegate's own kinds, and a kind whose awaited deletion just arrived */
		publish_mask(w, w->urgent | w->hurry);
		w->hurry = 0;
	}
	if (w->dirty_since_ms && publish_at < next_due)
		next_due = publish_at;
	int64_t wait = next_due - now_mono_ms();
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
		in->arena = ng_arena_create(4 * (size_t)EVENT_CAP);
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
		list_cleanup(in); /* also ends a watch's transfer */
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
