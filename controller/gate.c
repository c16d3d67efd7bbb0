#include "controller/gate.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/map.h"
#include "controller/leader.h"
#include "kube/client.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "policy/gate.h"
#include "policy/hook.h"
#include "common/json.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often the loop looks for a new snapshot: the cache publishes at most every 100 ms, so
 * 10 ms adds little to a decision's latency and costs one mutex round trip. */
#define POLL_MS 10
/* One status write. The API server answers in milliseconds; 10 s bounds a stuck one. */
#define WRITE_TIMEOUT_MS 10000
/* A grant we wrote but the cache does not show yet holds its nodes this long at most (the
 * watch delivers it in well under a second). */
#define INFLIGHT_MS 30000
/* Decisions of one round share an arena: a 5,000-node cluster needs a few hundred KB per
 * decision; 64 MiB bounds a pathological one. */
#define ROUND_ARENA_BYTES (64u << 20)

const double gate_decision_buckets_s[8] = {0.00001, 0.00005, 0.0001, 0.0005,
					   0.001,   0.005,   0.01,   0.1};

/* nodegate_health_hook_duration_seconds buckets: hooks time out at 1..25 s. */
#define HOOK_BUCKETS 10
static const double hook_buckets_s[HOOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
						    0.25,  0.5,  1,     5,    25};

/* nodegate_health_hook_requests_total{namespace,name,result}: one row per budget and result. */
struct hook_count {
	char ns[64], name[254];
	uint8_t result; /* enum pol_hook_result */
	uint64_t n;
};

/* What this replica last wrote for a request, so an unchanged decision is not written again. */
struct written {
	uint32_t name;
	uint8_t outcome;
	uint64_t reason_hash;
	int64_t next_retry_ms; /* when to decide again while Pending with retry */
	uint32_t retry_count;
	bool hook_failed; /* the last decision failed on a health hook */
	uint64_t rv_hash; /* hash of the resourceVersion that decision was made on */
};

/* What this replica last wrote to a budget's status. */
struct budget_written {
	uint8_t kind;
	uint32_t ns, name;
	uint64_t hash;
};

/* A grant written whose effect the cache does not show yet. */
struct inflight {
	uint32_t name;
	uint32_t *nodes;
	size_t n;
	int64_t until_ms;
};

struct gate {
	struct gate_config cfg;
	struct kube_client *client;
	pthread_t thread;
	bool started;
	_Atomic bool stop;
	uint64_t seen_generation;
	uint64_t term;
	struct written *w;
	size_t nw, capw;
	struct ng_map w_by_name; /* name -> index into w */
	struct inflight *inf;
	size_t ninf, capinf;
	struct budget_written *bw;
	size_t nbw, capbw;
	int64_t budgets_written_ms;
	pthread_mutex_t metrics_mu; /* guards metrics_text: written by the gate, read by /metrics */
	char *metrics_text;
	bool budgets_dirty;    /* the cache changed since budget status was last written */
	int64_t again_ms;      /* run a round at this time even when nothing changed; 0 = none */
	struct hook_count *hc; /* guarded by metrics_mu */
	size_t nhc, caphc;
	uint64_t hook_buckets[HOOK_BUCKETS + 1]; /* guarded by metrics_mu; last is +Inf */
	double hook_seconds_sum;
	unsigned int seed;
	_Atomic uint64_t decisions[3], writes, conflicts, errors, decision_us_sum, buckets[8];
};

static void inc(_Atomic uint64_t *v, uint64_t by)
{
	atomic_fetch_add_explicit(v, by, memory_order_relaxed);
}

static struct written *written_get(struct gate *g, uint32_t name)
{
	uint32_t i;
	return ng_map_get(&g->w_by_name, name, &i) ? &g->w[i] : NULL;
}

static struct written *written_put(struct gate *g, uint32_t name)
{
	struct written *w = written_get(g, name);
	if (w)
		return w;
	struct written *p = ng_array_grow(g->w, &g->capw, g->nw, sizeof(*p));
	if (!p)
		return NULL;
	g->w = p;
	if (ng_map_put_grow(&g->w_by_name, name, (uint32_t)g->nw) != NG_OK)
		return NULL;
	w = &g->w[g->nw++];
	memset(w, 0, sizeof(*w));
	w->name = name;
	return w;
}

static void inflight_drop(struct gate *g, size_t i)
{
	free(g->inf[i].nodes);
	g->inf[i] = g->inf[--g->ninf];
}

static void inflight_add(struct gate *g, uint32_t name, const uint32_t *nodes, size_t n,
			 int64_t now)
{
	struct inflight *p = ng_array_grow(g->inf, &g->capinf, g->ninf, sizeof(*p));
	if (!p)
		return;
	g->inf = p;
	uint32_t *copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, nodes, n * sizeof(*copy));
	g->inf[g->ninf++] = (struct inflight){name, copy, n, now + INFLIGHT_MS};
}

static const struct kube_nd *find_nd(const struct kube_snapshot *s, uint32_t name)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++)
		if (nds[i].name == name)
			return &nds[i];
	return NULL;
}

/* Grants written but not yet in the cache still hold their nodes. Names are intern ids of the
 * pool the snapshots share, so they stay comparable across snapshots. */
static ng_status ledger_add_inflight(struct gate *g, const struct kube_snapshot *s,
				     struct pol_ledger *l, int64_t now)
{
	for (size_t i = 0; i < g->ninf;) {
		const struct kube_nd *nd = find_nd(s, g->inf[i].name);
		if (!nd || nd->deleting || nd->state == KUBE_ND_GRANTED ||
		    now > g->inf[i].until_ms) {
			inflight_drop(g, i);
			continue;
		}
		if (pol_ledger_grant(l, g->inf[i].name, g->inf[i].nodes, g->inf[i].n) != NG_OK)
			return NG_ENOMEM;
		i++;
	}
	return NG_OK;
}

static ng_status put_time(struct ng_buf *b, int64_t ms)
{
	char ts[32];
	size_t n = ng_format_rfc3339_ms(ms, ts);
	/* Kubernetes Time has second precision: drop the milliseconds. */
	memcpy(ts + n - 5, "Z", 2);
	return ng_buf_json_str(b, ts, strlen(ts));
}

static ng_status put_str(struct ng_buf *b, const char *s)
{
	return ng_buf_json_str(b, s, strlen(s));
}

/* The merge patch for /status, with the resourceVersion precondition inside the body. */
static ng_status status_patch(const struct kube_snapshot *s, const struct kube_nd *nd,
			      const struct pol_gate_decision *d, int64_t now, int64_t next_retry,
			      uint32_t retry_count, struct ng_arena *arena, struct ng_buf *b)
{
	const char **names = pol_node_names_sorted(s, d, arena);
	if (!names)
		return NG_ENOMEM;
	ng_status st = ng_buf_puts(b, "{\"metadata\":{\"resourceVersion\":");
	st = st ? st : put_str(b, nd->rv);
	st = st ? st : ng_buf_puts(b, "},\"status\":{\"state\":");
	st = st ? st : put_str(b, pol_gate_outcome_str(d->outcome));
	st = st ? st : ng_buf_puts(b, ",\"disruptedNodes\":[");
	for (size_t i = 0; st == NG_OK && i < d->nnodes; i++) {
		st = i ? ng_buf_puts(b, ",") : NG_OK;
		st = st ? st : put_str(b, names[i]);
	}
	st = st ? st : ng_buf_puts(b, "],\"disruptedDisruptionBudgets\":");
	st = st ? st : pol_verdicts_json(s, d->verdicts, d->nverdicts, b);
	st = st ? st : ng_buf_puts(b, ",\"retryCount\":");
	st = st ? st : ng_buf_i64(b, retry_count);
	st = st ? st : ng_buf_puts(b, ",\"nextRetryDate\":");
	st = st ? st : (next_retry ? put_time(b, next_retry) : ng_buf_puts(b, "null"));
	if (st == NG_OK && d->outcome == POL_GATE_GRANT) {
		st = ng_buf_puts(b, ",\"grantedAt\":");
		st = st ? st : put_time(b, now);
	}
	st = st ? st : ng_buf_puts(b, ",\"conditions\":[{\"type\":\"Granted\",\"status\":");
	st = st ? st : put_str(b, d->outcome == POL_GATE_GRANT ? "True" : "False");
	st = st ? st : ng_buf_puts(b, ",\"reason\":");
	st = st ? st : put_str(b, pol_gate_outcome_str(d->outcome));
	st = st ? st : ng_buf_puts(b, ",\"message\":");
	st = st ? st : put_str(b, d->reason);
	st = st ? st : ng_buf_puts(b, ",\"lastTransitionTime\":");
	st = st ? st : put_time(b, now);
	st = st ? st : ng_buf_puts(b, "}]}}");
	return st;
}

/* An Event on object @kind @name (core/v1, in @ns, or "default" for cluster-scoped objects).
 * Best effort: a failed event is logged, never retried. */
static void post_event_on(struct gate *g, const char *kind, const char *ns, const char *nd,
			  const char *reason, const char *type, const char *msg, int64_t now)
{
	struct ng_buf b;
	ng_buf_init(&b, 8192);
	char name[300];
	ng_fmt(name, sizeof(name), "%.200s.%llx", nd, (unsigned long long)ng_now_mono_us());
	ng_status st = ng_buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{"
				       "\"name\":");
	st = st ? st : put_str(&b, name);
	st = st ? st : ng_buf_puts(&b, ",\"namespace\":");
	st = st ? st : put_str(&b, ns ? ns : "default");
	st = st ? st
		: ng_buf_puts(&b, "},\"involvedObject\":{\"apiVersion\":\"nodegate.io/v1alpha1\","
				  "\"kind\":");
	st = st ? st : put_str(&b, kind);
	if (st == NG_OK && ns) {
		st = ng_buf_puts(&b, ",\"namespace\":");
		st = st ? st : put_str(&b, ns);
	}
	st = st ? st : ng_buf_puts(&b, ",\"name\":");
	st = st ? st : put_str(&b, nd);
	st = st ? st : ng_buf_puts(&b, "},\"reason\":");
	st = st ? st : put_str(&b, reason);
	st = st ? st : ng_buf_puts(&b, ",\"message\":");
	st = st ? st : put_str(&b, msg);
	st = st ? st : ng_buf_puts(&b, ",\"type\":");
	st = st ? st : put_str(&b, type);
	st = st ? st
		: ng_buf_puts(&b, ",\"source\":{\"component\":\"nodegate\"},"
				  "\"reportingComponent\":\"nodegate\",\"reportingInstance\":");
	st = st ? st : put_str(&b, g->cfg.identity ? g->cfg.identity : "nodegate");
	st = st ? st : ng_buf_puts(&b, ",\"count\":1,\"firstTimestamp\":");
	st = st ? st : put_time(&b, now);
	st = st ? st : ng_buf_puts(&b, ",\"lastTimestamp\":");
	st = st ? st : put_time(&b, now);
	st = st ? st : ng_buf_puts(&b, "}");
	struct ng_buf out;
	ng_buf_init(&out, 64 * 1024);
	long http = 0;
	struct ng_err err = {0};
	char path[128];
	ng_fmt(path, sizeof(path), "/api/v1/namespaces/%s/events", ns ? ns : "default");
	if (st == NG_OK)
		st = kube_client_request(g->client, "POST", path, "application/json", b.data, b.len,
					 WRITE_TIMEOUT_MS, 64 * 1024, &out, &http, &err);
	struct ng_logline l;
	if ((st != NG_OK || http != 201) &&
	    ng_log_begin(&l, NG_LOG_WARN, "gate", "event not recorded")) {
		ng_log_str(&l, "kind", kind);
		ng_log_str(&l, "name", nd);
		ng_log_i64(&l, "http", http);
		ng_log_str(&l, "err", st == NG_OK ? (out.data ? out.data : "") : err.msg);
		ng_log_end(&l);
	}
	ng_buf_finish(&out);
	ng_buf_finish(&b);
}

/* An Event on NodeDisruption @nd (cluster-scoped: the Event lives in "default"). */
static void post_event(struct gate *g, const char *nd, const char *reason, const char *type,
		       const char *msg, int64_t now)
{
	post_event_on(g, "NodeDisruption", NULL, nd, reason, type, msg, now);
}

static int64_t backoff_ms(struct gate *g, const struct pol_gate_config *cfg, uint32_t retry_count)
{
	/* NodeGateConfig's retry settings, else the defaults (5 s, 300 s). */
	int64_t ms = cfg->retry_initial_ms ? cfg->retry_initial_ms : g->cfg.retry_initial_ms;
	int64_t max = cfg->retry_max_ms ? cfg->retry_max_ms : g->cfg.retry_max_ms;
	for (uint32_t i = 0; i < retry_count && ms < max; i++)
		ms *= 2;
	if (ms > max)
		ms = max;
	int64_t span = ms / 5; /* ±20 % */
	return ms - span + (span ? (int64_t)(rand_r(&g->seed) % (unsigned)(2 * span + 1)) : 0);
}

/* ---- health hooks (DESIGN.md §4 step 8) ---- */

/* The body every hook of a decision gets: the request as the API server has it, with
 * status.disruptedNodes filled. malloc'ed (free with cJSON_free); NULL when it cannot be read. */
static char *hook_body(struct gate *g, const struct kube_snapshot *s, const char *name,
		       const struct pol_gate_decision *d, struct ng_arena *arena, size_t *ret_len)
{
	char path[512];
	ng_fmt(path, sizeof(path), "/apis/nodegate.io/v1alpha1/nodedisruptions/%s", name);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	long http = 0;
	struct ng_err err = {0};
	cJSON *root = NULL;
	char *body = NULL;
	const char **names = pol_node_names_sorted(s, d, arena);
	ng_status st = kube_client_request(g->client, "GET", path, NULL, NULL, 0, WRITE_TIMEOUT_MS,
					   NG_MAX_BODY_BYTES, &out, &http, &err);
	if (st == NG_OK && http == 200 && names &&
	    ng_json_parse(out.data, out.len, NULL, &root, &err) == NG_OK) {
		cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
		if (!cJSON_IsObject(status)) {
			cJSON_DeleteItemFromObjectCaseSensitive(root, "status");
			status = cJSON_AddObjectToObject(root, "status");
		}
		cJSON *list = cJSON_CreateArray();
		for (size_t i = 0; list && i < d->nnodes; i++)
			cJSON_AddItemToArray(list, cJSON_CreateString(names[i]));
		cJSON_DeleteItemFromObjectCaseSensitive(status, "disruptedNodes");
		if (status && list && cJSON_AddItemToObject(status, "disruptedNodes", list))
			body = cJSON_PrintUnformatted(root);
		else
			cJSON_Delete(list);
	}
	struct ng_logline l;
	if (!body &&
	    ng_log_begin(&l, NG_LOG_WARN, "gate", "cannot read the request for its hooks")) {
		ng_log_str(&l, "nd", name);
		ng_log_i64(&l, "http", http);
		ng_log_str(&l, "err", st == NG_OK ? (out.data ? out.data : "") : err.msg);
		ng_log_end(&l);
	}
	cJSON_Delete(root);
	ng_buf_finish(&out);
	*ret_len = body ? strlen(body) : 0;
	return body;
}

static void count_hook(struct gate *g, const char *ns, const char *name,
		       const struct pol_hook_call *c)
{
	pthread_mutex_lock(&g->metrics_mu);
	struct hook_count *hc = NULL;
	for (size_t i = 0; i < g->nhc && !hc; i++)
		if (g->hc[i].result == c->result && strcmp(g->hc[i].ns, ns) == 0 &&
		    strcmp(g->hc[i].name, name) == 0)
			hc = &g->hc[i];
	if (!hc) {
		struct hook_count *p = ng_array_grow(g->hc, &g->caphc, g->nhc, sizeof(*p));
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
		while (i < HOOK_BUCKETS && secs > hook_buckets_s[i])
			i++;
		g->hook_buckets[i]++;
		g->hook_seconds_sum += secs;
	}
	pthread_mutex_unlock(&g->metrics_mu);
}

/* What the hooks of a decision answered: metrics, the budget's status.lastHookResult, a
 * HookFailed Event on the budget, a log line. Hooks cancelled by another's failure did not
 * answer and leave no trace. */
static void record_hooks(struct gate *g, const struct kube_snapshot *s, const char *nd,
			 const struct pol_hook_call *calls, size_t n, int64_t now)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < n; i++) {
		const struct pol_hook_call *c = &calls[i];
		if (c->result == POL_HOOK_CANCELLED || c->result == POL_HOOK_PENDING)
			continue;
		const char *ns = ng_intern_str(pool, c->adb->b.ns, NULL);
		const char *name = ng_intern_str(pool, c->adb->b.name, NULL);
		bool ok = c->result == POL_HOOK_OK;
		count_hook(g, ns, name, c);
		struct ng_buf b, out;
		ng_buf_init(&b, 64 * 1024);
		ng_buf_init(&out, 1u << 20);
		ng_status st = ng_buf_puts(&b, "{\"status\":{\"lastHookResult\":{\"time\":");
		st = st ? st : put_time(&b, now);
		st =
		    st ? st
		       : ng_buf_puts(&b, ok ? ",\"ok\":true,\"code\":" : ",\"ok\":false,\"code\":");
		st = st ? st : ng_buf_i64(&b, c->code);
		st = st ? st : ng_buf_puts(&b, ",\"message\":");
		st = st ? st : put_str(&b, c->message);
		st = st ? st : ng_buf_puts(&b, ",\"durationMs\":");
		st = st ? st : ng_buf_i64(&b, c->duration_ms);
		st = st ? st : ng_buf_puts(&b, "}}}");
		char path[600];
		ng_fmt(path, sizeof(path),
		       "/apis/nodegate.io/v1alpha1/namespaces/%s/applicationdisruptionbudgets/%s/"
		       "status",
		       ns, name);
		long http = 0;
		struct ng_err err = {0};
		if (st == NG_OK)
			st = kube_client_request(g->client, "PATCH", path,
						 "application/merge-patch+json", b.data, b.len,
						 WRITE_TIMEOUT_MS, 1u << 20, &out, &http, &err);
		if (st == NG_OK && http == 200)
			inc(&g->writes, 1);
		else if (!(st == NG_OK && http == 404)) /* deleted meanwhile */
			inc(&g->errors, 1);
		ng_buf_finish(&b);
		ng_buf_finish(&out);
		struct ng_logline l;
		if (ng_log_begin(&l, ok ? NG_LOG_INFO : NG_LOG_WARN, "gate",
				 "health hook called")) {
			ng_log_str(&l, "nd", nd);
			ng_log_str(&l, "namespace", ns);
			ng_log_str(&l, "budget", name);
			ng_log_str(&l, "result", pol_hook_result_str(c->result));
			ng_log_i64(&l, "code", c->code);
			ng_log_i64(&l, "duration_ms", c->duration_ms);
			ng_log_str(&l, "message", c->message);
			ng_log_end(&l);
		}
		if (!ok) {
			char msg[400];
			ng_fmt(msg, sizeof(msg), "NodeDisruption %s: %s", nd, c->message);
			post_event_on(g, "ApplicationDisruptionBudget", ns, name, "HookFailed",
				      "Warning", msg, now);
		}
	}
}

/* Step 8 for a decision whose capacity checks all passed: calls the impacted budgets' hooks and
 * folds their answers into @d. False when the decision cannot be made now (the request could
 * not be read, or nodegate is stopping): nothing is written and the gate looks again soon. */
static bool run_hooks(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd,
		      const char *name, struct pol_gate_decision *d, bool *ret_called, int64_t now,
		      struct ng_arena *arena)
{
	struct kube_hook_policy hp;
	pol_hook_policy_from(s, &hp);
	struct pol_hook_call *calls;
	size_t n;
	*ret_called = false;
	if (pol_hooks_prepare(s, d, &hp, arena, &calls, &n) != NG_OK) {
		inc(&g->errors, 1);
		return false;
	}
	if (n == 0)
		return true;
	*ret_called = true;
	bool denied = false;
	for (size_t i = 0; i < n; i++)
		denied |= calls[i].result == POL_HOOK_DENIED;
	if (denied) {
		/* A hook that may not be called fails the decision before any other is called. */
		for (size_t i = 0; i < n; i++)
			if (calls[i].result == POL_HOOK_PENDING) {
				calls[i].result = POL_HOOK_CANCELLED;
				ng_fmt(calls[i].message, sizeof(calls[i].message),
				       "not called: another health hook is not allowed");
			}
	} else {
		size_t len;
		char *body = hook_body(g, s, name, d, arena, &len);
		if (!body) {
			inc(&g->errors, 1);
			return false;
		}
		ng_status st = pol_hooks_run(calls, n, &hp, body, len, &g->stop);
		cJSON_free(body);
		if (st != NG_OK || atomic_load(&g->stop)) {
			inc(&g->errors, st != NG_OK);
			return false;
		}
	}
	(void)pol_hooks_apply(s, nd, calls, n, d);
	record_hooks(g, s, name, calls, n, now);
	return true;
}

ng_status gate_render_hook_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	pthread_mutex_lock(&g->metrics_mu);
	ng_status st = ng_buf_puts(
	    out, "# HELP nodegate_health_hook_requests_total Health hook calls by budget and "
		 "result (ok, failed, timeout, error, denied).\n"
		 "# TYPE nodegate_health_hook_requests_total counter\n");
	for (size_t i = 0; st == NG_OK && i < g->nhc; i++) {
		st = ng_buf_puts(out, "nodegate_health_hook_requests_total{namespace=");
		st = st ? st : put_str(out, g->hc[i].ns);
		st = st ? st : ng_buf_puts(out, ",name=");
		st = st ? st : put_str(out, g->hc[i].name);
		st = st ? st
			: ng_buf_printf(out, ",result=\"%s\"} %llu\n",
					pol_hook_result_str((enum pol_hook_result)g->hc[i].result),
					(unsigned long long)g->hc[i].n);
	}
	st = st ? st
		: ng_buf_puts(out, "# HELP nodegate_health_hook_duration_seconds How long health "
				   "hook calls took.\n"
				   "# TYPE nodegate_health_hook_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (int i = 0; st == NG_OK && i < HOOK_BUCKETS; i++) {
		cum += g->hook_buckets[i];
		st = ng_buf_printf(out,
				   "nodegate_health_hook_duration_seconds_bucket{le=\"%g\"} %llu\n",
				   hook_buckets_s[i], (unsigned long long)cum);
	}
	cum += g->hook_buckets[HOOK_BUCKETS];
	st = st ? st
		: ng_buf_printf(out,
				"nodegate_health_hook_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
				"nodegate_health_hook_duration_seconds_sum %.6f\n"
				"nodegate_health_hook_duration_seconds_count %llu\n",
				(unsigned long long)cum, g->hook_seconds_sum,
				(unsigned long long)cum);
	pthread_mutex_unlock(&g->metrics_mu);
	return st;
}

/* Decides one request and writes the answer when it changed. Returns false when the round
 * must end (a conflict: the cache is behind; decide again on the next snapshot). */
static bool decide_one(struct gate *g, const struct kube_snapshot *s,
		       const struct pol_gate_config *cfg, struct pol_ledger *ledger,
		       const struct kube_nd *nd, const char *name, int64_t now,
		       struct ng_arena *arena)
{
	struct pol_gate_decision d;
	int64_t t0 = ng_now_mono_us();
	if (pol_evaluate_disruption(s, cfg, ledger, nd, now, arena, &d) != NG_OK) {
		inc(&g->errors, 1);
		return true;
	}
	uint64_t us = (uint64_t)(ng_now_mono_us() - t0);
	inc(&g->decision_us_sum, us);
	for (int i = 0; i < 8; i++)
		if ((double)us / 1e6 <= gate_decision_buckets_s[i]) {
			inc(&g->buckets[i], 1);
			break;
		}
	struct written *w = written_get(g, nd->name);
	bool hooks_called = false;
	if (d.outcome == POL_GATE_GRANT && d.nverdicts) {
		/* Hooks are not asked twice about one version of a request: not while the cache
		 * still shows the version this replica already decided (its write is on the way),
		 * and after a failure not before the retry falls due, whatever else changes. */
		uint64_t rv = ng_fnv1a64(NG_FNV64_INIT, nd->rv, strlen(nd->rv));
		if (w && (w->rv_hash == rv ||
			  (w->hook_failed && w->next_retry_ms && now < w->next_retry_ms)))
			return true;
		if (!run_hooks(g, s, nd, name, &d, &hooks_called, now, arena)) {
			g->again_ms = ng_now_wall_ms() + 1000;
			return false;
		}
		/* Hooks take time: the answer is dated when it is known. */
		now = ng_now_wall_ms();
		if (g->cfg.leader && !leader_is_leader(g->cfg.leader))
			return false;
		w = written_get(g, nd->name);
	}
	inc(&g->decisions[d.outcome], 1);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, d.reason, strlen(d.reason));
	bool pending = d.outcome == POL_GATE_PENDING;
	bool retry_due = w && pending && w->next_retry_ms && now >= w->next_retry_ms;
	if (w && w->outcome == d.outcome && w->reason_hash == h && !retry_due &&
	    nd->state != KUBE_ND_UNKNOWN)
		return true; /* nothing new to say */
	uint32_t retry_count = nd->retry_count;
	int64_t next_retry = 0;
	if (pending && nd->retry) {
		if (retry_due || !w)
			retry_count++;
		next_retry = now + backoff_ms(g, cfg, retry_count);
	}
	struct ng_buf body, out;
	ng_buf_init(&body, 1u << 20);
	ng_buf_init(&out, 1u << 20);
	char path[512];
	ng_fmt(path, sizeof(path), "/apis/nodegate.io/v1alpha1/nodedisruptions/%s/status", name);
	long http = 0;
	struct ng_err err = {0};
	ng_status st = status_patch(s, nd, &d, now, next_retry, retry_count, arena, &body);
	if (st == NG_OK)
		st = kube_client_request(g->client, "PATCH", path, "application/merge-patch+json",
					 body.data, body.len, WRITE_TIMEOUT_MS, 1u << 20, &out,
					 &http, &err);
	bool cont = true;
	struct ng_logline l;
	if (st == NG_OK && http == 200) {
		inc(&g->writes, 1);
		w = written_put(g, nd->name);
		if (w) {
			w->outcome = (uint8_t)d.outcome;
			w->reason_hash = h;
			w->next_retry_ms = next_retry;
			w->retry_count = retry_count;
			w->hook_failed = hooks_called && d.outcome != POL_GATE_GRANT;
			w->rv_hash = ng_fnv1a64(NG_FNV64_INIT, nd->rv, strlen(nd->rv));
		}
		if (d.outcome == POL_GATE_GRANT) {
			/* Recorded before the next decision: a stale cache cannot grant it twice.
			 * Without memory for that, no further decision this round. */
			if (pol_ledger_grant(ledger, nd->name, d.nodes, d.nnodes) != NG_OK)
				cont = false;
			inflight_add(g, nd->name, d.nodes, d.nnodes, now);
		}
		if (ng_log_begin(&l, NG_LOG_INFO, "gate", "disruption decided")) {
			ng_log_str(&l, "nd", name);
			ng_log_str(&l, "state", pol_gate_outcome_str(d.outcome));
			ng_log_i64(&l, "nodes", (int64_t)d.nnodes);
			ng_log_str(&l, "reason", d.reason);
			ng_log_i64(&l, "decision_us", (int64_t)us);
			ng_log_end(&l);
		}
		if (d.outcome != POL_GATE_PENDING || !w || w->retry_count <= 1)
			post_event(g, name,
				   d.outcome == POL_GATE_GRANT    ? "Granted"
				   : d.outcome == POL_GATE_REJECT ? "Rejected"
								  : "Retrying",
				   d.outcome == POL_GATE_GRANT ? "Normal" : "Warning", d.reason,
				   now);
	} else if (st == NG_OK && http == 409) {
		inc(&g->conflicts, 1);
		cont = false;
	} else {
		inc(&g->errors, 1);
		/* The write may have happened: a grant we cannot confirm holds its nodes until the
		 * cache says otherwise, so capacity is never counted twice. */
		if (d.outcome == POL_GATE_GRANT && st != NG_OK)
			inflight_add(g, nd->name, d.nodes, d.nnodes, now);
		if (ng_log_begin(&l, NG_LOG_WARN, "gate", "status write failed")) {
			ng_log_str(&l, "nd", name);
			ng_log_i64(&l, "http", http);
			ng_log_str(&l, "err", st == NG_OK ? (out.data ? out.data : "") : err.msg);
			ng_log_end(&l);
		}
		cont = false;
	}
	ng_buf_finish(&body);
	ng_buf_finish(&out);
	return cont;
}

/* Held on every request the gate decided to grant or keep Pending, so a deletion is seen,
 * released and recorded before the object goes. */
#define FINALIZER "nodegate.io/gate"

static bool has_finalizer(const struct kube_nd *nd, uint32_t fin)
{
	for (uint16_t i = 0; fin != NG_INTERN_NONE && i < nd->nfinalizers; i++)
		if (nd->finalizers[i] == fin)
			return true;
	return false;
}

/* Sets metadata.finalizers to the request's list with ours added or removed, as a merge patch
 * carrying the resourceVersion it was read at (another writer's change makes it a 409). */
static void patch_finalizers(struct gate *g, const struct kube_snapshot *s,
			     const struct kube_nd *nd, const char *name, bool add)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	uint32_t fin = ng_intern_find(pool, FINALIZER, sizeof(FINALIZER) - 1);
	struct ng_buf body, out;
	ng_buf_init(&body, 64 * 1024);
	ng_buf_init(&out, 1u << 20);
	ng_status st = ng_buf_puts(&body, "{\"metadata\":{\"resourceVersion\":");
	st = st ? st : put_str(&body, nd->rv);
	st = st ? st : ng_buf_puts(&body, ",\"finalizers\":[");
	bool first = true;
	for (uint16_t i = 0; st == NG_OK && i < nd->nfinalizers; i++) {
		if (nd->finalizers[i] == fin)
			continue;
		st = first ? NG_OK : ng_buf_puts(&body, ",");
		st = st ? st : put_str(&body, ng_intern_str(pool, nd->finalizers[i], NULL));
		first = false;
	}
	if (st == NG_OK && add)
		st = first ? put_str(&body, FINALIZER) : ng_buf_puts(&body, ",\"" FINALIZER "\"");
	st = st ? st : ng_buf_puts(&body, "]}}");
	char path[512];
	ng_fmt(path, sizeof(path), "/apis/nodegate.io/v1alpha1/nodedisruptions/%s", name);
	long http = 0;
	struct ng_err err = {0};
	if (st == NG_OK)
		st = kube_client_request(g->client, "PATCH", path, "application/merge-patch+json",
					 body.data, body.len, WRITE_TIMEOUT_MS, 1u << 20, &out,
					 &http, &err);
	if (st == NG_OK && http == 200)
		inc(&g->writes, 1);
	else if (st == NG_OK && (http == 409 || http == 404))
		inc(&g->conflicts, 1); /* changed or gone meanwhile: the next round looks again */
	else
		inc(&g->errors, 1);
	ng_buf_finish(&body);
	ng_buf_finish(&out);
}

/* Requests being deleted give their nodes back (the ledger already skips them); record it and
 * let the object go once no other requestor holds it. Requests the gate granted or keeps
 * Pending get the finalizer. */
static void tend_finalizers(struct gate *g, const struct kube_snapshot *s, int64_t now)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	uint32_t fin = ng_intern_find(pool, FINALIZER, sizeof(FINALIZER) - 1);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n && !atomic_load(&g->stop); i++) {
		const struct kube_nd *nd = &nds[i];
		const char *name = ng_intern_str(pool, nd->name, NULL);
		bool has = has_finalizer(nd, fin);
		if (nd->deleting && has && !nd->additional_requestors) {
			if (nd->state == KUBE_ND_GRANTED) {
				char msg[160];
				ng_fmt(msg, sizeof(msg), "released %u node(s)", nd->ndisrupted);
				post_event(g, name, "Released", "Normal", msg, now);
			}
			patch_finalizers(g, s, nd, name, false);
		} else if (!nd->deleting && !has &&
			   (nd->state == KUBE_ND_GRANTED || nd->state == KUBE_ND_PENDING)) {
			patch_finalizers(g, s, nd, name, true);
		}
	}
}

/* Budget status is refreshed at most this often: pod churn republishes the cache every
 * window, and each refresh walks every budget's scope. */
#define BUDGET_STATUS_MS 500
/* ADB status.watchedNodes lists at most this many names (DESIGN.md §3.3). */
#define WATCHED_NAMES_CAP 1000

static struct budget_written *budget_slot(struct gate *g, uint8_t kind, uint32_t ns, uint32_t name)
{
	for (size_t i = 0; i < g->nbw; i++)
		if (g->bw[i].kind == kind && g->bw[i].ns == ns && g->bw[i].name == name)
			return &g->bw[i];
	struct budget_written *p = ng_array_grow(g->bw, &g->capbw, g->nbw, sizeof(*p));
	if (!p)
		return NULL;
	g->bw = p;
	g->bw[g->nbw] = (struct budget_written){kind, ns, name, 0};
	return &g->bw[g->nbw++];
}

static ng_status budget_body(const struct kube_snapshot *s, enum kube_resource kind,
			     const struct pol_budget_status *bs, struct ng_buf *b)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	ng_status st = ng_buf_puts(b, "{\"status\":{\"watchedNodes\":");
	if (kind == KUBE_RES_ADBS) {
		st = st ? st : ng_buf_puts(b, "[");
		for (size_t i = 0; st == NG_OK && i < bs->watched && i < WATCHED_NAMES_CAP; i++) {
			st = i ? ng_buf_puts(b, ",") : NG_OK;
			st = st ? st : put_str(b, ng_intern_str(pool, bs->nodes[i], NULL));
		}
		st = st ? st : ng_buf_puts(b, "],\"watchedNodeCount\":");
		st = st ? st : ng_buf_i64(b, (int64_t)bs->watched);
	} else {
		st = st ? st : ng_buf_i64(b, (int64_t)bs->watched);
		st = st ? st : ng_buf_puts(b, ",\"unavailableNodes\":");
		st = st ? st : ng_buf_i64(b, (int64_t)bs->unavailable);
	}
	st = st ? st : ng_buf_puts(b, ",\"currentDisruptions\":");
	st = st ? st : ng_buf_i64(b, (int64_t)bs->current);
	st = st ? st : ng_buf_puts(b, ",\"disruptionsAllowed\":");
	st = st ? st : ng_buf_i64(b, bs->allowed);
	st = st ? st : ng_buf_puts(b, ",\"disruptions\":[");
	for (size_t i = 0; st == NG_OK && i < bs->nnds; i++) {
		st = ng_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		st = st ? st : put_str(b, ng_intern_str(pool, bs->nd_names[i], NULL));
		st = st ? st : ng_buf_puts(b, ",\"state\":");
		st = st ? st
			: put_str(b, bs->nd_states[i] == KUBE_ND_GRANTED ? "Granted" : "Pending");
		st = st ? st : ng_buf_puts(b, "}");
	}
	st = st ? st : ng_buf_puts(b, "],\"conditions\":[{\"type\":\"Valid\",\"status\":");
	st = st ? st : put_str(b, bs->invalid ? "False" : "True");
	st = st ? st : ng_buf_puts(b, ",\"reason\":");
	st = st ? st : put_str(b, bs->invalid ? "Invalid" : "Valid");
	st = st ? st : ng_buf_puts(b, "}]}}");
	return st;
}

static ng_status metric_line(struct ng_buf *m, const char *metric, enum kube_resource kind,
			     const char *ns, const char *name, int64_t v)
{
	ng_status st = ng_buf_printf(m, "%s{kind=\"%s\",namespace=", metric,
				     kind == KUBE_RES_NDBS ? "NodeDisruptionBudget"
							   : "ApplicationDisruptionBudget");
	st = st ? st : ng_buf_json_str(m, ns, strlen(ns));
	st = st ? st : ng_buf_puts(m, ",name=");
	st = st ? st : ng_buf_json_str(m, name, strlen(name));
	st = st ? st : ng_buf_printf(m, "} %lld\n", (long long)v);
	return st;
}

/* Writes every budget's status that changed since this replica last wrote it. */
static void write_budget_status(struct gate *g, const struct kube_snapshot *s,
				struct pol_ledger *ledger, struct ng_arena *arena)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct ng_buf allowed, current;
	ng_buf_init(&allowed, 8u << 20);
	ng_buf_init(&current, 8u << 20);
	for (int k = 0; k < 2 && !atomic_load(&g->stop); k++) {
		enum kube_resource kind = k ? KUBE_RES_ADBS : KUBE_RES_NDBS;
		size_t n = kube_snapshot_count(s, kind);
		for (size_t i = 0; i < n; i++) {
			size_t nn;
			const struct kube_budget_common *c = kind == KUBE_RES_NDBS
								 ? &kube_snapshot_ndbs(s, &nn)[i].b
								 : &kube_snapshot_adbs(s, &nn)[i].b;
			ng_arena_reset(arena);
			struct pol_budget_status bs;
			struct ng_buf body, out;
			ng_buf_init(&body, 1u << 20);
			ng_buf_init(&out, 1u << 20);
			if (pol_budget_status(s, ledger, kind, i, arena, &bs) != NG_OK ||
			    budget_body(s, kind, &bs, &body) != NG_OK) {
				ng_buf_finish(&body);
				continue;
			}
			const char *ns =
			    c->ns == NG_INTERN_NONE ? "" : ng_intern_str(pool, c->ns, NULL);
			const char *nm = ng_intern_str(pool, c->name, NULL);
			(void)metric_line(&allowed, "nodegate_budget_disruptions_allowed", kind, ns,
					  nm, bs.allowed);
			(void)metric_line(&current, "nodegate_budget_current_disruptions", kind, ns,
					  nm, (int64_t)bs.current);
			uint64_t h = ng_fnv1a64(NG_FNV64_INIT, body.data, body.len);
			struct budget_written *w = budget_slot(g, (uint8_t)kind, c->ns, c->name);
			if (w && w->hash == h) {
				ng_buf_finish(&body);
				continue;
			}
			char path[600];
			if (kind == KUBE_RES_NDBS)
				ng_fmt(path, sizeof(path),
				       "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets/%s/status",
				       ng_intern_str(pool, c->name, NULL));
			else
				ng_fmt(path, sizeof(path),
				       "/apis/nodegate.io/v1alpha1/namespaces/%s/"
				       "applicationdisruptionbudgets/%s/status",
				       ng_intern_str(pool, c->ns, NULL),
				       ng_intern_str(pool, c->name, NULL));
			long http = 0;
			struct ng_err err = {0};
			ng_status st = kube_client_request(
			    g->client, "PATCH", path, "application/merge-patch+json", body.data,
			    body.len, WRITE_TIMEOUT_MS, 1u << 20, &out, &http, &err);
			if (st == NG_OK && http == 200 && w)
				w->hash = h;
			else if (!(st == NG_OK &&
				   http == 404)) /* deleted meanwhile: nothing to do */
				inc(&g->errors, 1);
			ng_buf_finish(&body);
			ng_buf_finish(&out);
		}
	}
	struct ng_buf text;
	ng_buf_init(&text, 16u << 20);
	if (ng_buf_puts(&text, "# HELP nodegate_budget_disruptions_allowed More nodes a budget "
			       "allows to be disrupted now.\n"
			       "# TYPE nodegate_budget_disruptions_allowed gauge\n") == NG_OK &&
	    ng_buf_append(&text, allowed.data ? allowed.data : "", allowed.len) == NG_OK &&
	    ng_buf_puts(&text, "# HELP nodegate_budget_current_disruptions Nodes of a budget's "
			       "scope disrupted now.\n"
			       "# TYPE nodegate_budget_current_disruptions gauge\n") == NG_OK &&
	    ng_buf_append(&text, current.data ? current.data : "", current.len) == NG_OK) {
		char *p = ng_buf_take(&text, NULL);
		pthread_mutex_lock(&g->metrics_mu);
		char *old = g->metrics_text;
		g->metrics_text = p;
		pthread_mutex_unlock(&g->metrics_mu);
		free(old);
	}
	ng_buf_finish(&text);
	ng_buf_finish(&allowed);
	ng_buf_finish(&current);
}

ng_status gate_render_budget_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	pthread_mutex_lock(&g->metrics_mu);
	ng_status st = g->metrics_text ? ng_buf_puts(out, g->metrics_text) : NG_OK;
	pthread_mutex_unlock(&g->metrics_mu);
	return st;
}

static void run_round(struct gate *g, struct kube_snapshot *s, bool changed, int64_t now)
{
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *ledger = pol_ledger_create(s);
	struct ng_arena *arena = ng_arena_create(ROUND_ARENA_BYTES);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd **c = malloc((n ? n : 1) * sizeof(*c));
	if (!ledger || !arena || !c || ledger_add_inflight(g, s, ledger, now) != NG_OK)
		goto out;
	size_t nc = 0;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < n; i++) {
		const struct kube_nd *nd = &nds[i];
		if (nd->deleting || (nd->state != KUBE_ND_UNKNOWN && nd->state != KUBE_ND_PENDING))
			continue;
		c[nc++] = nd; /* the whole queue is ranked, even when few are decided */
	}
	if (pol_rank_pending(s, &cfg, c, nc, arena) != NG_OK)
		goto out;
	for (size_t i = 0; i < nc && !atomic_load(&g->stop); i++) {
		if (g->cfg.leader && !leader_is_leader(g->cfg.leader))
			break;
		/* Nothing changed since the last round: only retries that fell due are decided. */
		const struct written *w = written_get(g, c[i]->name);
		bool due = w && w->next_retry_ms && now >= w->next_retry_ms;
		if (!changed && !due && c[i]->state != KUBE_ND_UNKNOWN)
			continue;
		ng_arena_reset(arena);
		if (!decide_one(g, s, &cfg, ledger, c[i], ng_intern_str(pool, c[i]->name, NULL),
				now, arena))
			break;
	}
	if (changed && (!g->cfg.leader || leader_is_leader(g->cfg.leader)))
		tend_finalizers(g, s, now);
	g->budgets_dirty |= changed;
	if (g->budgets_dirty && now - g->budgets_written_ms >= BUDGET_STATUS_MS &&
	    (!g->cfg.leader || leader_is_leader(g->cfg.leader))) {
		write_budget_status(g, s, ledger, arena);
		g->budgets_written_ms = now;
		g->budgets_dirty = false;
	}
out:
	free(c);
	ng_arena_destroy(arena);
	pol_ledger_destroy(ledger);
}

static int64_t next_due(const struct gate *g)
{
	int64_t due = 0;
	for (size_t i = 0; i < g->nw; i++)
		if (g->w[i].next_retry_ms && (!due || g->w[i].next_retry_ms < due))
			due = g->w[i].next_retry_ms;
	return due;
}

static void *run(void *arg)
{
	struct gate *g = arg;
	while (!atomic_load(&g->stop)) {
		struct timespec ts = {0, POLL_MS * 1000000L};
		if (g->cfg.leader && !leader_is_leader(g->cfg.leader)) {
			g->nw = 0; /* a new term starts from what the cache says */
			g->nbw = 0;
			g->budgets_dirty = true;
			ng_map_finish(&g->w_by_name);
			while (g->ninf)
				inflight_drop(g, 0);
			(void)nanosleep(&ts, NULL);
			continue;
		}
		uint64_t term = g->cfg.leader ? leader_term(g->cfg.leader) : 1;
		if (g->cfg.watch && !kube_watch_synced(g->cfg.watch)) {
			/* Deciding before every budget is known could grant what a budget forbids.
			 */
			(void)nanosleep(&ts, NULL);
			continue;
		}
		uint64_t gen = kube_store_generation(g->cfg.store);
		int64_t now = ng_now_wall_ms();
		int64_t due = next_due(g);
		bool changed = gen != g->seen_generation || term != g->term ||
			       (g->again_ms && now >= g->again_ms);
		if (changed)
			g->again_ms = 0;
		bool budgets_due =
		    g->budgets_dirty && now - g->budgets_written_ms >= BUDGET_STATUS_MS;
		if (changed || (due && now >= due) || g->ninf || budgets_due) {
			g->seen_generation = gen;
			g->term = term;
			struct kube_snapshot *s = kube_store_acquire(g->cfg.store);
			if (kube_store_generation(g->cfg.store) > 0)
				run_round(g, s, changed, now);
			kube_snapshot_release(s);
		}
		(void)nanosleep(&ts, NULL);
	}
	return NULL;
}

struct gate *gate_start(const struct gate_config *cfg, struct ng_err *reterr)
{
	struct gate *g = calloc(1, sizeof(*g));
	if (!g) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	g->cfg = *cfg;
	pthread_mutex_init(&g->metrics_mu, NULL);
	if (g->cfg.retry_initial_ms <= 0)
		g->cfg.retry_initial_ms = 5000;
	if (g->cfg.retry_max_ms <= 0)
		g->cfg.retry_max_ms = 300000;
	g->seed = (unsigned int)ng_now_wall_ms();
	g->client = kube_client_create(cfg->kube);
	if (!g->client) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto fail;
	}
	if (pthread_create(&g->thread, NULL, run, g) != 0) {
		(void)ng_err_set(reterr, NG_EIO, 0, "cannot start the gate thread");
		goto fail;
	}
	g->started = true;
	return g;
fail:
	gate_stop(g);
	return NULL;
}

void gate_get_stats(const struct gate *cg, struct gate_stats *ret)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	memset(ret, 0, sizeof(*ret));
	for (int i = 0; i < 3; i++)
		ret->decisions[i] = atomic_load_explicit(&g->decisions[i], memory_order_relaxed);
	ret->writes = atomic_load_explicit(&g->writes, memory_order_relaxed);
	ret->conflicts = atomic_load_explicit(&g->conflicts, memory_order_relaxed);
	ret->errors = atomic_load_explicit(&g->errors, memory_order_relaxed);
	ret->decision_us_sum = atomic_load_explicit(&g->decision_us_sum, memory_order_relaxed);
	for (int i = 0; i < 8; i++)
		ret->decision_buckets[i] =
		    atomic_load_explicit(&g->buckets[i], memory_order_relaxed);
}

void gate_stop(struct gate *g)
{
	if (!g)
		return;
	atomic_store(&g->stop, true);
	if (g->started)
		(void)pthread_join(g->thread, NULL);
	while (g->ninf)
		inflight_drop(g, 0);
	free(g->inf);
	free(g->w);
	free(g->bw);
	free(g->metrics_text);
	free(g->hc);
	pthread_mutex_destroy(&g->metrics_mu);
	ng_map_finish(&g->w_by_name);
	kube_client_destroy(g->client);
	free(g);
}
