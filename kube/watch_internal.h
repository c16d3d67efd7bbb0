/* The watch's internals shared by kube/watch.c (the watches, their stream and the publishing
 * rhythm) and kube/watch_list.c (the lists that start them: in pages or streamed); prefix kw_,
 * each function described where it is defined. Not for use outside those files.
 * Threads: the watch's own thread only, except the counters and synced flags (atomics). */
#ifndef NG_KUBE_WATCH_INTERNAL_H
#define NG_KUBE_WATCH_INTERNAL_H

#include "kube/watch.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/memo.h"
#include "kube/internal.h"
#include "kube/kinds.h"
#include "kube/runtime.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Page size of lists: client-go's pager default. */
#define LIST_LIMIT 500
/* One list page: 500 large objects; the API server's own response limit is far above what 500
 * real objects need, 256 MiB bounds a hostile answer. */
#define LIST_PAGE_CAP (256u * 1024u * 1024u)
/* The chunks of a list page's tree (kube/watch_list.c); only what is written is resident. */
#define PAGE_TREE_CHUNK (16u * 1024u * 1024u)
/* One watch event: an object is at most 1.5 MB in etcd; its JSON with the event envelope stays
 * well under 8 MiB. */
#define EVENT_CAP (8u * 1024u * 1024u)
/* What one event's tree may take (a few times its text). */
#define EVENT_ARENA_CAP (4 * (size_t)EVENT_CAP)
/* Watches end after a random 5-10 minutes, as client-go's reflector does, so reconnections of
 * many replicas spread out. */
#define WATCH_MIN_S 300
#define WATCH_SPREAD_S 300
/* curl's receive buffer for watches (its default is 16 KiB): a streamed list of a million
 * objects is most of a GB, read in this many bytes per recv() and per callback. Not for list
 * pages: each is a transfer of its own, whose buffer would be mapped and faulted in anew. */
#define RECV_BUFFER (256L * 1024L)
/* resourceVersion is opaque; real ones are short decimal strings. */
#define RV_BYTES 128

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
	 * and the kinds one of them arrived for since they were last published (the watch
	 * thread's). */
	pthread_mutex_t await_mu;
	bool await_mu_ok;
	struct ng_memo awaited;
	unsigned hurry;
	/* Urgent kinds whose version a bookmark moved since they were last published: published
	 * too, so a reader waiting for a version (a new leader's sync) sees it without a change. */
	unsigned moved;
};

/* kube/watch.c */
int64_t kw_now_ms(void);
void kw_inc(_Atomic uint64_t *v);
void kw_retry_later(struct informer *in, enum istate st, const char *what, const char *err);
void kw_publish_mask(struct kube_watch *w, unsigned mask);
void kw_status_message(const char *body, size_t len, char *out, size_t cap);
ng_status kw_open_stream(struct informer *in, const char *query, int secs, struct ng_err *err);

/* kube/watch_list.c */
void kw_start_list(struct informer *in);
void kw_end_page(struct informer *in, CURLcode res);
void kw_list_cleanup(struct informer *in);
void kw_skipped(struct informer *in, const char *err);
ng_status kw_stage_decoded(struct informer *in, ng_status st, struct kube_object *obj,
			   const char *err);
void kw_check_stream_stalled(struct informer *in, int64_t now_mono);
void kw_stream_event(struct informer *in, int kind, const cJSON *obj, const char *rv);
void kw_stream_ended(struct informer *in, CURLcode res, long http, const char *msg);

#endif
