/* Informers: list then watch every cached resource from an API server and keep the store's
 * snapshot current (DESIGN.md §7). One thread drives all watches through curl multi. */
#ifndef NG_KUBE_WATCH_H
#define NG_KUBE_WATCH_H

#include "common/status.h"
#include "kube/kube.h"
#include "kube/records.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_config;

struct kube_watch_config {
	const struct kube_config *cfg; /* borrowed; must outlive the watch */
	struct kube_store *store;      /* borrowed: where snapshots are published */
	int64_t batch_ms; /* at most one publish per this many ms; an isolated change goes at once
			     (100) */
	int64_t page_timeout_ms;    /* one list page (60000) */
	int64_t backoff_initial_ms; /* reconnect backoff, doubled per failure (800) */
	int64_t backoff_max_ms;     /* (30000) */
	bool page_lists; /* list in pages of 500 only; else as a stream (WatchList) where the API
			    server offers it, in pages where it does not */
};

struct kube_watch_stats {
	uint64_t events[KUBE_RES_COUNT][4]; /* ADDED, MODIFIED, DELETED, BOOKMARK */
	uint64_t restarts[KUBE_RES_COUNT];  /* lists and watches that failed and were retried */
	uint64_t relists[KUBE_RES_COUNT];   /* 410 Gone: the watch history was lost */
	uint64_t decode_errors[KUBE_RES_COUNT];
	uint64_t publishes;
	bool synced[KUBE_RES_COUNT];
};

/** Names of the event types in kube_watch_stats.events, for metric labels. */
extern const char *const kube_watch_event_names[4];

struct kube_watch;

/**
 * Starts the informer thread: every resource is listed (streamed as a watch with
 * sendInitialEvents where the API server offers it, else in pages of 500) and then watched from
 * the list's resourceVersion with bookmarks; a 410 Gone relists and replaces; failures reconnect
 * with capped exponential backoff and jitter. Returns NULL with @reterr when the thread cannot
 * start. curl_global_init() must have run. Main thread.
 */
struct kube_watch *kube_watch_start(const struct kube_watch_config *cfg, struct ng_err *reterr);

/** True once every resource has been listed and published. Any thread. */
bool kube_watch_synced(const struct kube_watch *w);

/** A consistent-enough copy of the counters (each read atomically). Any thread. */
void kube_watch_get_stats(const struct kube_watch *w, struct kube_watch_stats *ret);

/* Deletions awaited at once at most (kube_watch_await_gone()); past this the soonest to expire is
 * forgotten, and its deletion waits for the batch window like any other change. */
#define KUBE_WATCH_AWAITED_MAX 4096

/**
 * A controller waits to see object @ns/@name (@ns NULL or "" when cluster-scoped) of resource
 * @res deleted — the drainer, for a pod it asked to leave: when the watch brings that deletion,
 * the resource's changes are published at once instead of at the end of the batch window.
 * Remembered until @until_mono_ms (ng_now_mono_us() / 1000's clock; asking again extends it), or
 * until the deletion arrives. Any thread.
 */
void kube_watch_await_gone(const struct kube_watch *w, enum kube_resource res, const char *ns,
			   const char *name, int64_t until_mono_ms);

/** Stops and joins the thread and frees everything. Accepts NULL. Main thread. */
void kube_watch_stop(struct kube_watch *w);

struct ng_buf;
/**
 * Appends the watch's series to @out (caller-owned) in the Prometheus text format:
 * nodegate_watch_events_total{resource,type}, nodegate_watch_restarts_total,
 * nodegate_watch_relists_total and nodegate_watch_decode_errors_total{resource},
 * nodegate_cache_synced{resource} and nodegate_cache_publishes_total, read with
 * kube_watch_get_stats(). @w is borrowed. NG_ELIMIT or NG_ENOMEM from the buffer. Any thread.
 */
NG_NODISCARD ng_status kube_watch_render_metrics(const struct kube_watch *w, struct ng_buf *out);

#endif
