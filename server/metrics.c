#include "server/metrics.h"

#include "common/buf.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "kube/watch.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Buckets in seconds. Decisions take microseconds; the upper buckets catch a stalled machine.
 * They include the kube-apiserver's own webhook buckets (5 ms, 25 ms, 100 ms, ...) so the two
 * sides' histograms line up. */
static const double bucket_s[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
				  0.01,   0.025,   0.1,    0.5,   1,      2.5};
#define NBUCKETS (sizeof(bucket_s) / sizeof(bucket_s[0]))

/* HTTP codes counted separately. */
static const int http_codes[] = {400, 404, 405, 413, 415, 500, 503};
#define NCODES (sizeof(http_codes) / sizeof(http_codes[0]))

struct hist {
	_Atomic uint64_t buckets[NBUCKETS]; /* non-cumulative; summed at render */
	_Atomic uint64_t count;
	_Atomic uint64_t sum_us;
};

struct srv_metrics {
	_Atomic uint64_t requests[SRV_WH_COUNT][SRV_OUT_COUNT];
	struct hist dur[SRV_WH_COUNT];
	_Atomic uint64_t http[NCODES];
};

static const char *const wh_names[SRV_WH_COUNT] = {
    "eviction", "budget", "nodedisruption", "nodedisruption-status", "nodedisruption-mutate",
    "evaluate"};
static const char *const out_names[SRV_OUT_COUNT] = {"allowed", "denied", "warned", "error"};

struct srv_metrics *srv_metrics_create(void)
{
	return calloc(1, sizeof(struct srv_metrics));
}

void srv_metrics_destroy(struct srv_metrics *m)
{
	free(m);
}

void srv_metrics_admission(struct srv_metrics *m, enum srv_webhook wh, enum srv_outcome out,
			   int64_t dur_us)
{
	atomic_fetch_add_explicit(&m->requests[wh][out], 1, memory_order_relaxed);
	struct hist *h = &m->dur[wh];
	double s = (double)dur_us / 1e6;
	size_t b = 0;
	while (b < NBUCKETS && s > bucket_s[b])
		b++;
	if (b < NBUCKETS)
		atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, (uint64_t)(dur_us > 0 ? dur_us : 0),
				  memory_order_relaxed);
}

void srv_metrics_http_error(struct srv_metrics *m, int code)
{
	for (size_t i = 0; i < NCODES; i++) {
		if (http_codes[i] == code) {
			atomic_fetch_add_explicit(&m->http[i], 1, memory_order_relaxed);
			return;
		}
	}
}

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static ng_status render_watch(const struct kube_watch *w, struct ng_buf *out)
{
	struct kube_watch_stats ws;
	kube_watch_get_stats(w, &ws);
	ng_status st = ng_buf_puts(out, "# HELP nodegate_watch_events_total Watch events "
					"received, by resource and type.\n"
					"# TYPE nodegate_watch_events_total counter\n");
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++)
		for (int k = 0; st == NG_OK && k < 4; k++)
			st = ng_buf_printf(
			    out,
			    "nodegate_watch_events_total{resource=\"%s\",type=\"%s\"} "
			    "%llu\n",
			    kube_resource_name((enum kube_resource)r), kube_watch_event_names[k],
			    (unsigned long long)ws.events[r][k]);
	static const char *const names[3][2] = {
	    {"nodegate_watch_restarts_total",
	     "Lists and watches that failed and were retried with backoff."},
	    {"nodegate_watch_relists_total",
	     "Watches whose history expired (410 Gone), answered by a fresh list."},
	    {"nodegate_watch_decode_errors_total",
	     "Objects or events that could not be decoded and were skipped."},
	};
	for (int k = 0; st == NG_OK && k < 3; k++) {
		st = ng_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", names[k][0],
				   names[k][1], names[k][0]);
		for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++) {
			uint64_t v = k == 0   ? ws.restarts[r]
				     : k == 1 ? ws.relists[r]
					      : ws.decode_errors[r];
			st = ng_buf_printf(out, "%s{resource=\"%s\"} %llu\n", names[k][0],
					   kube_resource_name((enum kube_resource)r),
					   (unsigned long long)v);
		}
	}
	if (st == NG_OK)
		st = ng_buf_puts(out, "# HELP nodegate_cache_synced 1 once the resource was listed "
				      "and published.\n# TYPE nodegate_cache_synced gauge\n");
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++)
		st = ng_buf_printf(out, "nodegate_cache_synced{resource=\"%s\"} %d\n",
				   kube_resource_name((enum kube_resource)r), ws.synced[r] ? 1 : 0);
	if (st == NG_OK)
		st = ng_buf_printf(
		    out,
		    "# HELP nodegate_cache_publishes_total Snapshots published by the "
		    "watch.\n# TYPE nodegate_cache_publishes_total counter\n"
		    "nodegate_cache_publishes_total %llu\n",
		    (unsigned long long)ws.publishes);
	return st;
}

ng_status srv_metrics_render(struct srv_metrics *m, const struct kube_snapshot *snap,
			     const struct kube_watch *watch, struct ng_buf *out)
{
	ng_status st = ng_buf_puts(
	    out, "# HELP nodegate_build_info nodegate version.\n"
		 "# TYPE nodegate_build_info gauge\n"
		 "nodegate_build_info{version=\"" NG_VERSION "\"} 1\n"
		 "# HELP nodegate_admission_requests_total Admission reviews answered, by "
		 "webhook and decision.\n"
		 "# TYPE nodegate_admission_requests_total counter\n");
	for (int w = 0; st == NG_OK && w < SRV_WH_COUNT; w++)
		for (int o = 0; st == NG_OK && o < SRV_OUT_COUNT; o++)
			st = ng_buf_printf(out,
					   "nodegate_admission_requests_total{webhook=\"%s\","
					   "decision=\"%s\"} %llu\n",
					   wh_names[w], out_names[o],
					   (unsigned long long)ld(&m->requests[w][o]));
	if (st == NG_OK)
		st = ng_buf_puts(out, "# HELP nodegate_admission_duration_seconds Time from a "
				      "review's headers to its answer.\n"
				      "# TYPE nodegate_admission_duration_seconds histogram\n");
	for (int w = 0; st == NG_OK && w < SRV_WH_COUNT; w++) {
		struct hist *h = &m->dur[w];
		uint64_t count = ld(&h->count), cum = 0;
		for (size_t b = 0; st == NG_OK && b < NBUCKETS; b++) {
			cum += ld(&h->buckets[b]);
			st = ng_buf_printf(
			    out,
			    "nodegate_admission_duration_seconds_bucket{webhook=\"%s\","
			    "le=\"%g\"} %llu\n",
			    wh_names[w], bucket_s[b], (unsigned long long)cum);
		}
		if (st == NG_OK)
			st = ng_buf_printf(
			    out,
			    "nodegate_admission_duration_seconds_bucket{webhook=\"%s\",le=\"+Inf\"}"
			    " "
			    "%llu\n"
			    "nodegate_admission_duration_seconds_sum{webhook=\"%s\"} %.6f\n"
			    "nodegate_admission_duration_seconds_count{webhook=\"%s\"} %llu\n",
			    wh_names[w], (unsigned long long)count, wh_names[w],
			    (double)ld(&h->sum_us) / 1e6, wh_names[w], (unsigned long long)count);
	}
	if (st == NG_OK)
		st = ng_buf_puts(out, "# HELP nodegate_http_errors_total HTTP answers that are not "
				      "admission decisions, by status code.\n"
				      "# TYPE nodegate_http_errors_total counter\n");
	for (size_t i = 0; st == NG_OK && i < NCODES; i++)
		st = ng_buf_printf(out, "nodegate_http_errors_total{code=\"%d\"} %llu\n",
				   http_codes[i], (unsigned long long)ld(&m->http[i]));
	if (st == NG_OK && snap) {
		st = ng_buf_puts(out, "# HELP nodegate_cache_objects Objects in the cache, by "
				      "resource.\n"
				      "# TYPE nodegate_cache_objects gauge\n");
		for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++)
			st = ng_buf_printf(out, "nodegate_cache_objects{resource=\"%s\"} %zu\n",
					   kube_resource_name((enum kube_resource)r),
					   kube_snapshot_count(snap, (enum kube_resource)r));
		if (st == NG_OK)
			st = ng_buf_printf(out,
					   "# HELP nodegate_cache_intern_bytes Bytes held by the "
					   "cache's string pool.\n"
					   "# TYPE nodegate_cache_intern_bytes gauge\n"
					   "nodegate_cache_intern_bytes %zu\n",
					   ng_intern_bytes(kube_snapshot_pool(snap)));
	}
	if (st == NG_OK && snap) {
		static const char *const states[] = {"Pending", "Pending", "Granted", "Rejected"};
		uint64_t counts[4] = {0};
		size_t n;
		const struct kube_nd *nds = kube_snapshot_nds(snap, &n);
		for (size_t i = 0; i < n; i++)
			counts[nds[i].state < 4 ? nds[i].state : 0]++;
		st =
		    ng_buf_puts(out, "# HELP nodegate_disruptions NodeDisruptions in the cache, by "
				     "state (no status yet counts as Pending).\n"
				     "# TYPE nodegate_disruptions gauge\n");
		for (int k = 1; st == NG_OK && k < 4; k++)
			st = ng_buf_printf(
			    out, "nodegate_disruptions{state=\"%s\"} %llu\n", states[k],
			    (unsigned long long)(counts[k] + (k == 1 ? counts[0] : 0)));
	}
	if (st == NG_OK && watch)
		st = render_watch(watch, out);
	return st;
}
