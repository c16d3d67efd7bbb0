/* Prometheus metrics of the admission server (docs/operations.md, "Metrics"), written with
 * common/prom.h.
 *
 * Ownership: struct srv_metrics is created and destroyed by the server (srv_create,
 * srv_destroy); the other functions borrow every pointer for the duration of the call.
 * Threads: counters are relaxed atomics, so any admission thread may record while the /metrics
 * handler renders, without a lock (STYLE.md B9 rule 1); create and destroy run on the thread
 * that creates and destroys the server, when no other thread uses the metrics. */
#ifndef NG_SERVER_METRICS_H
#define NG_SERVER_METRICS_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct ng_buf;
struct kube_snapshot;
struct kube_watch;

enum srv_webhook {
	SRV_WH_EVICTION,
	SRV_WH_BUDGET,
	SRV_WH_ND,
	SRV_WH_ND_STATUS,
	SRV_WH_ND_MUTATE,
	SRV_WH_AUTHORED,      /* POST /validate/authored */
	SRV_WH_AUTHOR_MUTATE, /* POST /mutate/author */
	SRV_WH_EVALUATE, /* POST /v1/evaluate: allowed = would be Granted, denied = would not */
	SRV_WH_COUNT,
};

enum srv_outcome {
	SRV_OUT_ALLOWED,
	SRV_OUT_DENIED,
	SRV_OUT_WARNED, /* allowed with a warning (Warn mode) */
	SRV_OUT_ERROR,  /* the request could not be decoded */
	SRV_OUT_COUNT,
};

struct srv_metrics;

/** Creates zeroed metrics; caller frees with srv_metrics_destroy(). NULL on OOM. */
struct srv_metrics *srv_metrics_create(void);
/** Frees @m (ownership is taken). Accepts NULL. */
void srv_metrics_destroy(struct srv_metrics *m);

/** Records one admission call and its duration (@dur_us, microseconds). Any thread. */
void srv_metrics_admission(struct srv_metrics *m, enum srv_webhook wh, enum srv_outcome out,
			   int64_t dur_us);
/**
 * Records an HTTP answer that is not an admission decision (400, 404, 405, 413, 415, 500, 503;
 * other codes are not counted). Any thread.
 */
void srv_metrics_http_error(struct srv_metrics *m, int code);

/**
 * Appends the Prometheus text exposition to @out (caller-owned): build info, the admission
 * request counters and latency histogram (when @admission: not on a listener that serves no
 * webhook, where they would only ever read zero), HTTP errors, the cache object counts of @snap and
 * the watch's series (kube_watch_render_metrics() of @watch). @snap and @watch are borrowed and may
 * be NULL (no snapshot yet; snapshot mode). NG_ELIMIT or NG_ENOMEM from the buffer, which then
 * holds a partial exposition to discard. Any thread (the /metrics handler's).
 */
NG_NODISCARD ng_status srv_metrics_render(struct srv_metrics *m, const struct kube_snapshot *snap,
					  const struct kube_watch *watch, bool admission,
					  struct ng_buf *out);

#endif
