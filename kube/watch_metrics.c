/* The watch's /metrics series: rendered here from kube_watch_get_stats() so the server that
 * serves /metrics need not know what the watch counts. */
#include "kube/watch.h"

#include "common/prom.h"

static ng_status render_events(const struct kube_watch_stats *ws, struct ng_buf *out)
{
	static const char *const name = "nodegate_watch_events_total";
	ng_status st = ng_prom_header(out, name, NG_PROM_COUNTER,
				      "Watch events received, by resource and type.");
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++) {
		for (int k = 0; st == NG_OK && k < 4; k++) {
			const struct ng_prom_label l[] = {
			    {"resource", kube_resource_name((enum kube_resource)r)},
			    {"type", kube_watch_event_names[k]},
			};
			st = ng_prom_u64(out, name, l, 2, ws->events[r][k]);
		}
	}
	return st;
}

/* A counter family with one series per resource. */
static ng_status render_per_resource(struct ng_buf *out, const char *name, const char *help,
				     const uint64_t *v)
{
	ng_status st = ng_prom_header(out, name, NG_PROM_COUNTER, help);
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++) {
		const struct ng_prom_label l[] = {
		    {"resource", kube_resource_name((enum kube_resource)r)}};
		st = ng_prom_u64(out, name, l, 1, v[r]);
	}
	return st;
}

ng_status kube_watch_render_metrics(const struct kube_watch *w, struct ng_buf *out)
{
	struct kube_watch_stats ws;
	kube_watch_get_stats(w, &ws);
	ng_status st = render_events(&ws, out);
	st = st ? st
		: render_per_resource(
		      out, "nodegate_watch_restarts_total",
		      "Lists and watches that failed and were retried with backoff.", ws.restarts);
	st = st ? st
		: render_per_resource(
		      out, "nodegate_watch_relists_total",
		      "Watches whose history expired (410 Gone), answered by a fresh list.",
		      ws.relists);
	st = st ? st
		: render_per_resource(
		      out, "nodegate_watch_decode_errors_total",
		      "Objects or events that could not be decoded and were skipped.",
		      ws.decode_errors);
	st = st ? st
		: ng_prom_header(out, "nodegate_cache_synced", NG_PROM_GAUGE,
				 "1 once the resource was listed and published.");
	for (int r = 0; st == NG_OK && r < KUBE_RES_COUNT; r++) {
		const struct ng_prom_label l[] = {
		    {"resource", kube_resource_name((enum kube_resource)r)}};
		st = ng_prom_u64(out, "nodegate_cache_synced", l, 1, ws.synced[r] ? 1 : 0);
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_cache_publishes_total", NG_PROM_COUNTER,
				 "Snapshots published by the watch.");
	return st ? st : ng_prom_u64(out, "nodegate_cache_publishes_total", NULL, 0, ws.publishes);
}
