/* Step 8 of a decision (DESIGN.md §4): the impacted budgets' health hooks, asked before a grant;
 * what they answered goes to the budget's status.lastHookResult, an Event, the log and the
 * metrics. */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/prom.h"
#include "kube/client.h"

#include <stdlib.h>
#include <string.h>

static const double hook_buckets_s[GATE_HOOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
							 0.25,  0.5,  1,     5,    25};

/* The body every hook of a decision gets: the request as the API server has it, with
 * status.disruptedNodes filled. malloc'ed (caller frees); NULL when it cannot be read. */
static char *hook_body(struct gate *g, const struct kube_snapshot *s, const char *name,
		       const struct pol_gate_decision *d, struct ng_arena *arena, size_t *ret_len)
{
	char path[512];
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	long http = 0;
	struct ng_err err = {0};
	char *body = NULL;
	const char **names = pol_node_names_sorted(s, d, arena);
	ng_status st = kube_ref_path(&ref, NULL, path, sizeof(path));
	st = st ? st
		: kube_client_request(g->client, "GET", path, NULL, NULL, 0, KUBE_WRITE_TIMEOUT_MS,
				      NG_MAX_BODY_BYTES, &out, &http, &err);
	if (st == NG_OK && http == 200 && names)
		st = kube_object_with_status_list(out.data, out.len, "disruptedNodes", names,
						  d->nnodes, &body, ret_len, &err);
	struct ng_logline l;
	if (!body &&
	    ng_log_begin(&l, NG_LOG_WARN, "gate", "cannot read the request for its hooks")) {
		ng_log_str(&l, "nd", name);
		ng_log_i64(&l, "http", http);
		ng_log_str(&l, "err", st == NG_OK ? (out.data ? out.data : "") : err.msg);
		ng_log_end(&l);
	}
	ng_buf_finish(&out);
	return body;
}

static void count_hook(struct gate *g, const char *ns, const char *name,
		       const struct pol_hook_call *c)
{
	pthread_mutex_lock(&g->metrics_mu);
	struct gate_hook_count *hc = NULL;
	for (size_t i = 0; i < g->nhc && !hc; i++)
		if (g->hc[i].result == c->result && strcmp(g->hc[i].ns, ns) == 0 &&
		    strcmp(g->hc[i].name, name) == 0)
			hc = &g->hc[i];
	if (!hc) {
		struct gate_hook_count *p = ng_array_grow(g->hc, &g->caphc, g->nhc, sizeof(*p));
		if (p) {
			g->hc = p;
			hc = &g->hc[g->nhc++];
			memset(hc, 0, sizeof(*hc));
			ng_fmt(hc->ns, sizeof(hc->ns), "%s", ns);
			ng_fmt(hc->name, sizeof(hc->name), "%s", name);
			hc->result = (uint8_t)c->result;
		}
	}
	if (hc)
		hc->n++;
	if (c->result != POL_HOOK_DENIED) {
		double secs = (double)c->duration_ms / 1000.0;
		int i = 0;
		while (i < GATE_HOOK_BUCKETS && secs > hook_buckets_s[i])
			i++;
		g->hook_buckets[i]++;
		g->hook_seconds_sum += secs;
	}
	pthread_mutex_unlock(&g->metrics_mu);
}

struct hook_result {
	const struct pol_hook_call *c;
	int64_t now_wall_ms;
};

static void hook_result_body(struct ng_jw *w, void *ctx)
{
	const struct hook_result *hr = ctx;
	ng_jw_key(w, "lastHookResult");
	ng_jw_obj(w);
	ng_jw_key(w, "time");
	ng_jw_time(w, hr->now_wall_ms);
	ng_jw_kbool(w, "ok", hr->c->result == POL_HOOK_OK);
	ng_jw_ki64(w, "code", hr->c->code);
	ng_jw_kstr(w, "message", hr->c->message);
	ng_jw_ki64(w, "durationMs", hr->c->duration_ms);
	ng_jw_obj_end(w);
}

/* One hook's answer: metrics, the budget's status.lastHookResult, a log line, and a HookFailed
 * Event on the budget when it failed. */
static void record_hook(struct gate *g, const struct kube_snapshot *s, const char *nd,
			const struct pol_hook_call *c, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *ns = ng_intern_str(pool, c->adb->b.ns, NULL);
	const char *name = ng_intern_str(pool, c->adb->b.name, NULL);
	bool ok = c->result == POL_HOOK_OK;
	count_hook(g, ns, name, c);
	struct hook_result hr = {c, now_wall_ms};
	const struct kube_ref ref = {KUBE_KIND_ADB, ns, name};
	struct kube_write_result r;
	kube_patch_status(g->client, &ref, NULL, hook_result_body, &hr, &r);
	if (r.outcome == KUBE_WRITE_OK)
		gate_count(&g->writes, 1);
	else if (r.outcome != KUBE_WRITE_GONE) /* deleted meanwhile: nothing to record */
		gate_count(&g->errors, 1);
	if (r.outcome != KUBE_WRITE_GONE)
		kube_write_log("gate", "hook result not written", &ref, &r);
	struct ng_logline l;
	if (ng_log_begin(&l, ok ? NG_LOG_INFO : NG_LOG_WARN, "gate", "health hook called")) {
		ng_log_str(&l, "nd", nd);
		ng_log_str(&l, "namespace", ns);
		ng_log_str(&l, "budget", name);
		ng_log_str(&l, "result", pol_hook_result_str(c->result));
		ng_log_i64(&l, "code", c->code);
		ng_log_i64(&l, "bytes", c->bytes);
		ng_log_i64(&l, "duration_ms", c->duration_ms);
		ng_log_str(&l, "message", c->message);
		ng_log_end(&l);
	}
	if (!ok) {
		char msg[400];
		ng_fmt(msg, sizeof(msg), "NodeDisruption %s: %s", nd, c->message);
		gate_event_adb(g, ns, name, c->adb->b.uid, "HookFailed", "Warning", msg,
			       now_wall_ms);
	}
}

/* A hook that may not be called fails the decision before any other is called. */
static bool cancel_if_denied(struct pol_hook_call *calls, size_t n)
{
	bool denied = false;
	for (size_t i = 0; i < n; i++)
		denied |= calls[i].result == POL_HOOK_DENIED;
	for (size_t i = 0; denied && i < n; i++)
		if (calls[i].result == POL_HOOK_PENDING) {
			calls[i].result = POL_HOOK_CANCELLED;
			ng_fmt(calls[i].message, sizeof(calls[i].message),
			       "not called: another health hook is not allowed");
		}
	return denied;
}

bool gate_run_hooks(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd,
		    const char *name, struct pol_gate_decision *d, bool *ret_called,
		    int64_t now_wall_ms, struct ng_arena *arena)
{
	struct kube_hook_policy hp;
	pol_hook_policy_from(s, &hp);
	struct pol_hook_call *calls;
	size_t n;
	*ret_called = false;
	if (pol_hooks_prepare(s, d, &hp, arena, &calls, &n) != NG_OK) {
		gate_count(&g->errors, 1);
		return false;
	}
	if (n == 0)
		return true;
	*ret_called = true;
	if (!cancel_if_denied(calls, n)) {
		size_t len = 0;
		char *body = hook_body(g, s, name, d, arena, &len);
		if (!body) {
			gate_count(&g->errors, 1);
			return false;
		}
		ng_status st =
		    gate_hooks_call(calls, n, &hp, g->deny, g->ndeny, body, len, g->stop);
		free(body);
		if (st != NG_OK || atomic_load(g->stop)) {
			gate_count(&g->errors, st != NG_OK);
			return false;
		}
	}
	(void)pol_hooks_apply(s, nd, calls, n, d);
	/* Hooks cancelled by another's failure did not answer and leave no trace. */
	for (size_t i = 0; i < n; i++)
		if (calls[i].result != POL_HOOK_CANCELLED && calls[i].result != POL_HOOK_PENDING)
			record_hook(g, s, name, &calls[i], now_wall_ms);
	return true;
}

ng_status gate_render_hook_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	pthread_mutex_lock(&g->metrics_mu);
	ng_status st =
	    ng_prom_header(out, "nodegate_health_hook_requests_total", NG_PROM_COUNTER,
			   "Health hook calls by budget and result (ok, failed, timeout, "
			   "error, denied).");
	for (size_t i = 0; st == NG_OK && i < g->nhc; i++) {
		const struct ng_prom_label l[] = {
		    {"namespace", g->hc[i].ns},
		    {"name", g->hc[i].name},
		    {"result", pol_hook_result_str((enum pol_hook_result)g->hc[i].result)}};
		st = ng_prom_u64(out, "nodegate_health_hook_requests_total", l, 3, g->hc[i].n);
	}
	uint64_t count = 0;
	for (int i = 0; i <= GATE_HOOK_BUCKETS; i++)
		count += g->hook_buckets[i];
	const struct ng_prom_hist_data h = {hook_buckets_s, g->hook_buckets, GATE_HOOK_BUCKETS,
					    count, g->hook_seconds_sum};
	st = st ? st
		: ng_prom_header(out, "nodegate_health_hook_duration_seconds", NG_PROM_HISTOGRAM,
				 "How long health hook calls took.");
	st = st ? st : ng_prom_histogram(out, "nodegate_health_hook_duration_seconds", NULL, 0, &h);
	pthread_mutex_unlock(&g->metrics_mu);
	return st;
}
