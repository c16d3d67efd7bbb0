#include "server/metrics.h"

#include "common/buf.h"
#include "common/intern.h"
#include "common/prom.h"
#include "kube/kube.h"
#include "kube/watch.h"

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

struct srv_metrics {
	_Atomic uint64_t requests[SRV_WH_COUNT][SRV_OUT_COUNT];
	struct ng_prom_hist dur[SRV_WH_COUNT];
	_Atomic uint64_t http[NCODES];
};

static const char *const wh_names[SRV_WH_COUNT] = {
    "eviction", "budget",        "nodedisruption", "nodedisruption-status", "nodedisruption-mutate",
    "authored", "author-mutate", "evaluate"};
static const char *const out_names[SRV_OUT_COUNT] = {"allowed", "denied", "warned", "error"};

struct srv_metrics *srv_metrics_create(void)
{
	struct srv_metrics *m = calloc(1, sizeof(struct srv_metrics));
	for (int w = 0; m && w < SRV_WH_COUNT; w++)
		ng_prom_hist_init(&m->dur[w], bucket_s, NBUCKETS);
	return m;
}

void srv_metrics_destroy(struct srv_metrics *m)
{
	free(m);
}

void srv_metrics_admission(struct srv_metrics *m, enum srv_webhook wh, enum srv_outcome out,
			   int64_t dur_us)
{
	ng_prom_add(&m->requests[wh][out], 1);
	ng_prom_hist_observe_us(&m->dur[wh], dur_us);
}

void srv_metrics_http_error(struct srv_metrics *m, int code)
{
	for (size_t i = 0; i < NCODES; i++) {
		if (http_codes[i] == code) {
			ng_prom_add(&m->http[i], 1);
			return;
		}
	}
}

/* nodegate_admission_requests_total and the latency histogram, by webhook. */
static ng_status render_admission(struct srv_metrics *m, struct ng_buf *out)
{
	static const char *const reqs = "nodegate_admission_requests_total";
	static const char *const dur = "nodegate_admission_duration_seconds";
	ng_status st = ng_prom_header(out, reqs, NG_PROM_COUNTER,
				      "Admission reviews answered, by webhook and decision.");
	for (int w = 0; st == NG_OK && w < SRV_WH_COUNT; w++) {
		for (int o = 0; st == NG_OK && o < SRV_OUT_COUNT; o++) {
			const struct ng_prom_label l[] = {{"webhook", wh_names[w]},
							  {"decision", out_names[o]}};
			st = ng_prom_u64(out, reqs, l, 2, ng_prom_get(&m->requests[w][o]));
		}
	}
	st = st ? st
		: ng_prom_header(out, dur, NG_PROM_HISTOGRAM,
				 "Time from a review's headers to its answer.");
	for (int w = 0; st == NG_OK && w < SRV_WH_COUNT; w++) {
		const struct ng_prom_label l[] = {{"webhook", wh_names[w]}};
		st = ng_prom_hist_render(out, dur, l, 1, &m->dur[w]);
	}
	return st;
}

static ng_status render_http_errors(struct srv_metrics *m, struct ng_buf *out)
{
	static const char *const name = "nodegate_http_errors_total";
	ng_status st =
	    ng_prom_header(out, name, NG_PROM_COUNTER,
			   "HTTP answers that are not admission decisions, by status code.");
	for (size_t i = 0; st == NG_OK && i < NCODES; i++) {
		char code[16];
		ng_fmt(code, sizeof(code), "%d", http_codes[i]);
		const struct ng_prom_label l[] = {{"code", code}};
		st = ng_prom_u64(out, name, l, 1, ng_prom_get(&m->http[i]));
	}
	return st;
}

/* What the snapshot holds: objects by resource, the string pool, NodeDisruptions by state. */
static ng_status render_cache(const struct kube_snapshot *snap, struct ng_buf *out)
{
	ng_status st = ng_prom_header(out, "nodegate_cache_objects", NG_PROM_GAUGE,
				      "Objects in the cache, by resource.");
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++) {
		const struct ng_prom_label l[] = {
		    {"resource", kube_resource_name((enum kube_resource)r)}};
		st = ng_prom_u64(out, "nodegate_cache_objects", l, 1,
				 kube_snapshot_count(snap, (enum kube_resource)r));
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_cache_intern_bytes", NG_PROM_GAUGE,
				 "Bytes held by the cache's string pool.");
	st = st ? st
		: ng_prom_u64(out, "nodegate_cache_intern_bytes", NULL, 0,
			      ng_intern_bytes(kube_snapshot_pool(snap)));
	st = st ? st
		: ng_prom_header(out, "nodegate_cache_intern_strings", NG_PROM_GAUGE,
				 "Distinct strings in the cache's string pool.");
	st = st ? st
		: ng_prom_u64(out, "nodegate_cache_intern_strings", NULL, 0,
			      ng_intern_count(kube_snapshot_pool(snap)));
	st = st ? st
		: ng_prom_header(out, "nodegate_cache_intern_rebuilds_total", NG_PROM_COUNTER,
				 "Times the cache's string pool was rebuilt with only the strings "
				 "still in use.");
	st = st ? st
		: ng_prom_u64(out, "nodegate_cache_intern_rebuilds_total", NULL, 0,
			      ng_intern_rebuilds(kube_snapshot_pool(snap)));
	/* kube_nd.state: unknown (no status yet), Pending, Granted, Rejected. */
	static const char *const states[] = {"Pending", "Pending", "Granted", "Rejected"};
	uint64_t counts[4] = {0};
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(snap, &n);
	for (size_t i = 0; i < n; i++)
		counts[nds[i].state < 4 ? nds[i].state : 0]++;
	st = st ? st
		: ng_prom_header(out, "nodegate_disruptions", NG_PROM_GAUGE,
				 "NodeDisruptions in the cache, by state (no status yet counts as "
				 "Pending).");
	for (int k = 1; st == NG_OK && k < 4; k++) {
		const struct ng_prom_label l[] = {{"state", states[k]}};
		st = ng_prom_u64(out, "nodegate_disruptions", l, 1,
				 counts[k] + (k == 1 ? counts[0] : 0));
	}
	return st;
}

ng_status srv_metrics_render(struct srv_metrics *m, const struct kube_snapshot *snap,
			     const struct kube_watch *watch, bool admission, struct ng_buf *out)
{
	const struct ng_prom_label version[] = {{"version", NG_VERSION}};
	ng_status st =
	    ng_prom_header(out, "nodegate_build_info", NG_PROM_GAUGE, "nodegate version.");
	st = st ? st : ng_prom_u64(out, "nodegate_build_info", version, 1, 1);
	if (admission)
		st = st ? st : render_admission(m, out);
	st = st ? st : render_http_errors(m, out);
	if (snap)
		st = st ? st : render_cache(snap, out);
	if (watch)
		st = st ? st : kube_watch_render_metrics(watch, out);
	return st;
}
