/* The lists that start every watch (kube/watch.c): in pages, or streamed as a watch with
 * sendInitialEvents where the API server offers it; either way the objects go into a stage of
 * their own that replaces the kind's table when the list is whole. */
#include "kube/watch_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/backoff.h"
#include "kube/client.h"
#include "kube/kinds.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- list ----
 *
 * A list is a chain of page requests on the same curl multi as the watches: the thread moves
 * every other stream on (and publishes their changes) while a page is in flight, and decodes a
 * page only once it has arrived whole. Objects go into a stage of their own (struct
 * kube_stage), published in one go when the last page is in, so a list is never seen half-way
 * and a failed one changes nothing. */

/* Ends @in's list in progress, if any: its transfer, stage, page and tree. */
void kw_list_cleanup(struct informer *in)
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
	kw_list_cleanup(in);
	in->state = ST_LIST;
	in->due_ms = 0;
	if (!atomic_load(in->w->stop))
		kw_retry_later(in, ST_LIST, "list failed", msg);
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

/* Starts listing @in (again): streamed unless the API server does not stream lists or
 * --watch-list=false, else its first page. */
void kw_start_list(struct informer *in)
{
	struct kube_watch *w = in->w;
	/* Changes of this resource received before the relist go out first: a relist that fails
	 * must not lose them. Other resources keep their own rhythm. */
	if (kube_cache_dirty_mask(w->cache) & (1u << in->res))
		kw_publish_mask(w, 1u << in->res);
	in->list_t0_ms = kw_now_ms();
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
	/* A list page's tree: 500 objects, a few MB of JSON, a few times that in nodes. Its chunks
	 * are PAGE_TREE_CHUNK: a reset between pages keeps one, so a page of ordinary objects is
	 * parsed without a malloc (16 KiB chunks were ~150 allocations a page, their memory given
	 * back to the kernel and faulted in again page after page). */
	in->page_arena = ng_arena_create_sized(4 * (size_t)LIST_PAGE_CAP, PAGE_TREE_CHUNK);
	if (!in->page_arena) {
		list_failed(in, "out of memory");
		return;
	}
	start_page(in);
}

/* @in's new table is in the cache: published, and @in synced. The list that makes nodegate
 * ready also publishes what the others held back meanwhile (batch_window()), before anyone
 * waiting for the sync can look. */
static void publish_synced(struct informer *in)
{
	struct kube_watch *w = in->w;
	bool last = !atomic_load(&in->synced);
	for (int r = 0; last && r < KUBE_RES_COUNT; r++)
		last = r == (int)in->res || atomic_load(&w->inf[r].synced);
	kw_publish_mask(w, last ? ~0u : 1u << in->res);
	atomic_store(&in->synced, true);
}

/* A whole list is staged (@count objects, at version in->list_rv): it is the resource's table
 * now, published at once, and the watch goes on from its version. */
static void listed(struct informer *in, size_t count)
{
	struct kube_watch *w = in->w;
	memcpy(in->rv, in->list_rv, sizeof(in->rv));
	kube_cache_note_rv(w->cache, in->res, in->rv);
	publish_synced(in);
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
		ng_log_i64(&l, "dur_ms", kw_now_ms() - in->list_t0_ms);
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
	kw_list_cleanup(in);
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
	kw_list_cleanup(in);
	publish_synced(in);
	in->state = ST_LIST;
	in->due_ms = kw_now_ms() + NOT_SERVED_RELIST_MS;
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
		kw_status_message(in->page.data ? in->page.data : "", in->page.len, sm, sizeof(sm));
		(void)snprintf(msg, sizeof(msg), "HTTP %ld: %s", http, sm);
		list_failed(in, msg);
		return false;
	}
	return true;
}

/* An object of @in that does not decode (@err): counted and logged, and left out. */
void kw_skipped(struct informer *in, const char *err)
{
	kw_inc(&in->decode_errors);
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "kube", "object skipped")) {
		ng_log_str(&l, "resource", kube_resource_name(in->res));
		ng_log_str(&l, "err", err);
		ng_log_end(&l);
	}
}

/* One listed object, decoded into @obj (@st: how that went, @err its message when it failed),
 * into the list's stage; skipped (and counted) when it did not decode. NG_ENOMEM when it
 * cannot be staged. */
ng_status kw_stage_decoded(struct informer *in, ng_status st, struct kube_object *obj,
			   const char *err)
{
	if (st != NG_OK) {
		kw_skipped(in, err);
		return NG_OK;
	}
	return kube_stage_add(in->stage, obj);
}

/* Decodes one listed object @e into the list's stage (kw_stage_decoded()). */
static ng_status stage_one(struct informer *in, const cJSON *e)
{
	struct kube_watch *w = in->w;
	struct kube_object obj;
	struct ng_err derr = {0};
	ng_status st = kube_decode_as(kube_cache_pool(w->cache), kube_cache_scratch(w->cache),
				      in->res, e, "list item", &obj, &derr);
	return kw_stage_decoded(in, st, &obj, derr.msg);
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
void kw_end_page(struct informer *in, CURLcode res)
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

static void start_stream(struct informer *in)
{
	struct kube_watch *w = in->w;
	char query[160];
	int secs = WATCH_MIN_S + (int)(ng_rng_next(w->rng) % WATCH_SPREAD_S);
	(void)snprintf(query, sizeof(query),
		       "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=%d",
		       secs);
	struct ng_err err = {0};
	if (kw_open_stream(in, query, secs, &err) != NG_OK) {
		list_failed(in, err.msg);
		return;
	}
	in->state = ST_STREAMING;
	in->data_ms = kw_now_ms();
}

/* A streamed list that brought nothing for a page's timeout is given up, as a page would be:
 * a watch may be quiet for minutes, its initial events may not. */
void kw_check_stream_stalled(struct informer *in, int64_t now_mono)
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
void kw_stream_event(struct informer *in, int kind, const cJSON *obj, const char *rv)
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
void kw_stream_ended(struct informer *in, CURLcode res, long http, const char *msg)
{
	struct kube_watch *w = in->w;
	kube_stage_destroy(in->stage);
	in->stage = NULL;
	if ((http == 404 || http == 403) && kube_kinds[in->res].optional) {
		not_served(in, http);
		return;
	}
	if (in->gone) { /* 410 in the stream: start over at once */
		kw_inc(&in->relists);
		in->state = ST_LIST;
		in->due_ms = 0;
		return;
	}
	/* Ran its whole course (at least the shortest timeoutSeconds asked): a stream cut
	 * earlier (a dropped connection, an API server restarting) is tried again as a stream. */
	bool ran_out = http == 200 && !in->broken && !in->gone &&
		       (res == CURLE_OK || res == CURLE_OPERATION_TIMEDOUT) &&
		       kw_now_ms() - in->list_t0_ms >= (int64_t)WATCH_MIN_S * 1000;
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
	kw_retry_later(in, ST_LIST, "list failed", in->broken ? "bad event stream" : msg);
}
