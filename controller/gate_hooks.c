/* Step 8 of a decision (DESIGN.md §4): the impacted budgets' health hooks, asked before a grant;
 * what they answered goes to the budget's status.lastHookResult, an Event, the log and the
 * metrics. */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/prom.h"
#include "kube/client.h"
#include "kube/runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const double hook_buckets_s[GATE_HOOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
							 0.25,  0.5,  1,     5,    25};

void gate_hooks_init(struct gate *g)
{
	ng_prom_hist_init(&g->hook_duration, hook_buckets_s, GATE_HOOK_BUCKETS);
}

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
	if (c->result != POL_HOOK_DENIED)
		ng_prom_hist_observe_us(&g->hook_duration, c->duration_ms * 1000);
	pthread_mutex_unlock(&g->metrics_mu);
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
	const struct gate_later later = {.hook_result = true,
					 .kind = KUBE_KIND_ADB,
					 .ns = ns,
					 .name = name,
					 .c = *c,
					 .now_wall_ms = now_wall_ms};
	if (!gate_defer(g, &later))
		gate_write_hook_result(g, ns, name, c, now_wall_ms);
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

/* ---- requests whose hooks are out ---- */

/* One request's hooks, asked on a thread of their own. Everything the thread reads is its own
 * or lives longer than it: the snapshot reference keeps the budgets, hooks and policy the calls
 * point into; the deny list is the gate's, which joins every job before freeing it. */
struct gate_hook_job {
	struct gate_job t; /* first: the thread that calls the hooks */
	uint32_t name;     /* the request (intern id; stable across snapshots) */
	char *nd;          /* its name, for logs and Events */
	uint32_t *nodes;
	size_t nnodes;
	struct kube_snapshot *s; /* a reference of the job's own */
	struct kube_hook_policy hp;
	struct pol_hook_call *calls;
	size_t n;
	char *body;
	size_t len;
	const struct kube_cidr *deny;
	size_t ndeny;
	bool held; /* held in this round's ledger: not decided before the next */
	ng_status st;
};

static void job_run(struct gate_job *t)
{
	struct gate_hook_job *j = (struct gate_hook_job *)t;
	j->st =
	    gate_hooks_call(j->calls, j->n, &j->hp, j->deny, j->ndeny, j->body, j->len, &t->cancel);
}

static size_t job_find(const struct gate *g, uint32_t name)
{
	for (size_t i = 0; i < g->njobs; i++)
		if (g->jobs[i]->name == name)
			return i;
	return SIZE_MAX;
}

/* Ends job @i (stopping its calls when they still run) and frees it. With @record, the answers
 * it has are recorded although no decision uses them: each was a call a budget's team sees. */
static void job_drop(struct gate *g, size_t i, bool record)
{
	struct gate_hook_job *j = g->jobs[i];
	g->jobs[i] = g->jobs[--g->njobs];
	atomic_store(&g->hooks_waiting, g->njobs);
	if (!gate_job_done(&j->t))
		record = false;
	gate_job_stop(&j->t);
	for (size_t k = 0; record && j->st == NG_OK && k < j->n; k++)
		if (j->calls[k].result != POL_HOOK_CANCELLED &&
		    j->calls[k].result != POL_HOOK_PENDING)
			record_hook(g, j->s, j->nd, &j->calls[k], ng_now_wall_ms());
	kube_snapshot_release(j->s);
	free(j->nd);
	free(j->nodes);
	free(j->calls);
	free(j->body);
	free(j);
}

/* Starts the calls of @calls (@n, from the round's arena: copied) for request @nd of @s, with
 * @body (taken). NULL when there is no memory or no thread: @body is freed. */
static struct gate_hook_job *
job_start(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd, const char *name,
	  const struct pol_gate_decision *d, const struct kube_hook_policy *hp,
	  const struct pol_hook_call *calls, size_t n, char *body, size_t len)
{
	struct gate_hook_job **p = ng_array_grow(g->jobs, &g->capjobs, g->njobs, sizeof(*p));
	struct gate_hook_job *j = p ? calloc(1, sizeof(*j)) : NULL;
	if (p)
		g->jobs = p;
	if (j) {
		j->nd = strdup(name);
		j->nodes = calloc(d->nnodes ? d->nnodes : 1, sizeof(*j->nodes));
		j->calls = malloc(n * sizeof(*j->calls));
	}
	if (!j || !j->nd || !j->nodes || !j->calls) {
		if (j) {
			free(j->nd);
			free(j->nodes);
			free(j->calls);
		}
		free(j);
		free(body);
		return NULL;
	}
	j->name = nd->name;
	memcpy(j->nodes, d->nodes, d->nnodes * sizeof(*j->nodes));
	j->nnodes = d->nnodes;
	memcpy(j->calls, calls, n * sizeof(*j->calls));
	j->n = n;
	j->hp = *hp;
	j->body = body;
	j->len = len;
	j->deny = g->deny;
	j->ndeny = g->ndeny;
	j->s = kube_snapshot_ref((struct kube_snapshot *)(uintptr_t)s);
	if (!gate_job_start(&j->t, g, &g->hooks_answered, job_run)) {
		kube_snapshot_release(j->s);
		free(j->nd);
		free(j->nodes);
		free(j->calls);
		free(j->body);
		free(j);
		return NULL;
	}
	g->jobs[g->njobs++] = j;
	atomic_store(&g->hooks_waiting, g->njobs);
	return j;
}

static bool same_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Whether call @a of snapshot @ap and call @b of snapshot @bp ask the same hook of the same
 * budget. */
static bool same_call(const struct pol_hook_call *a, const struct ng_intern *ap,
		      const struct pol_hook_call *b, const struct ng_intern *bp)
{
	const struct kube_adb *x = a->adb, *y = b->adb;
	return same_str(x->b.uid, y->b.uid) &&
	       same_str(ng_intern_str(ap, x->b.ns, NULL), ng_intern_str(bp, y->b.ns, NULL)) &&
	       same_str(ng_intern_str(ap, x->b.name, NULL), ng_intern_str(bp, y->b.name, NULL)) &&
	       same_str(x->hook.url, y->hook.url) && x->hook.timeout_s == y->hook.timeout_s &&
	       x->hook.nca == y->hook.nca &&
	       (!x->hook.nca || memcmp(x->hook.ca, y->hook.ca, x->hook.nca) == 0);
}

/* Whether job @j asked, about the same nodes, the very hooks decision @d needs now (@calls, @n
 * of snapshot @s): then its answers stand for them, and @calls gets them. The budgets are
 * matched by identity, not by position: every snapshot may list them in another order (the
 * gate's own budget status writes reorder them), and a hook answer must never be thrown away
 * for that — it would be asked again and again while the request waits. */
static bool job_answers(const struct gate_hook_job *j, const struct kube_snapshot *s,
			const struct pol_gate_decision *d, struct pol_hook_call *calls, size_t n)
{
	if (j->st != NG_OK || j->n != n || j->nnodes != d->nnodes ||
	    memcmp(j->nodes, d->nodes, d->nnodes * sizeof(*d->nodes)) != 0)
		return false;
	const struct ng_intern *jp = kube_snapshot_pool(j->s), *sp = kube_snapshot_pool(s);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < n && !same_call(&j->calls[k], jp, &calls[i], sp))
			k++;
		if (k == n)
			return false;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (!same_call(&j->calls[k], jp, &calls[i], sp))
			k++;
		const struct pol_hook_call *a = &j->calls[k];
		calls[i].result = a->result;
		calls[i].code = a->code;
		calls[i].duration_ms = a->duration_ms;
		calls[i].bytes = a->bytes;
		calls[i].truncated = a->truncated;
		memcpy(calls[i].message, a->message, sizeof(calls[i].message));
	}
	return true;
}

/* Folds @calls into @d and records each one that answered. */
static void apply_and_record(struct gate *g, const struct kube_snapshot *s,
			     const struct kube_nd *nd, const char *name,
			     const struct pol_hook_call *calls, size_t n,
			     struct pol_gate_decision *d, int64_t now_wall_ms)
{
	(void)pol_hooks_apply(s, nd, calls, n, d);
	/* Hooks cancelled by another's failure did not answer and leave no trace. */
	for (size_t i = 0; i < n; i++)
		if (calls[i].result != POL_HOOK_CANCELLED && calls[i].result != POL_HOOK_PENDING)
			record_hook(g, s, name, &calls[i], now_wall_ms);
}

enum gate_hooks_step gate_hooks_step(struct gate *g, const struct kube_snapshot *s,
				     const struct kube_nd *nd, const char *name,
				     struct pol_gate_decision *d, struct pol_ledger *ledger,
				     int64_t now_wall_ms, struct ng_arena *arena)
{
	struct kube_hook_policy hp;
	pol_hook_policy_from(s, &hp);
	struct pol_hook_call *calls;
	size_t n;
	size_t ji = job_find(g, nd->name);
	if (pol_hooks_prepare(s, d, &hp, arena, &calls, &n) != NG_OK) {
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	if (ji != SIZE_MAX) {
		struct gate_hook_job *j = g->jobs[ji];
		if (j->held || !gate_job_done(&j->t))
			return GATE_HOOKS_WAIT; /* still out: the request is not decided meanwhile
						 */
		bool answers = n && job_answers(j, s, d, calls, n);
		/* Answers about other hooks or nodes are recorded, and asked again for these. */
		job_drop(g, ji, !answers);
		if (answers) {
			apply_and_record(g, s, nd, name, calls, n, d, now_wall_ms);
			return GATE_HOOKS_ANSWERED;
		}
	}
	if (n == 0)
		return GATE_HOOKS_NONE;
	if (cancel_if_denied(calls, n)) {
		apply_and_record(g, s, nd, name, calls, n, d, now_wall_ms);
		return GATE_HOOKS_ANSWERED;
	}
	if (g->njobs >= GATE_MAX_HOOK_JOBS)
		return GATE_HOOKS_WAIT; /* a job's end starts a round */
	size_t len = 0;
	char *body = hook_body(g, s, name, d, arena, &len);
	if (!body) {
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	if (!job_start(g, s, nd, name, d, &hp, calls, n, body, len)) {
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	/* Its share is held from now on: the rest of this round cannot take it. */
	if (pol_ledger_grant(ledger, nd->name, d->nodes, d->nnodes) != NG_OK) {
		job_drop(g, g->njobs - 1, false);
		return GATE_HOOKS_AGAIN;
	}
	g->jobs[g->njobs - 1]->held = true;
	return GATE_HOOKS_ASKED;
}

ng_status gate_hooks_hold(struct gate *g, const struct kube_snapshot *s, struct pol_ledger *ledger)
{
	for (size_t i = 0; i < g->njobs;) {
		struct gate_hook_job *j = g->jobs[i];
		const struct kube_nd *nd = kube_snapshot_find_nd(s, j->name);
		if (!nd || nd->deleting ||
		    (nd->state != KUBE_ND_PENDING && nd->state != KUBE_ND_UNKNOWN)) {
			job_drop(g, i, true); /* gone or decided elsewhere: nothing waits on it */
			continue;
		}
		j->held = !gate_job_done(&j->t);
		if (j->held && pol_ledger_grant(ledger, j->name, j->nodes, j->nnodes) != NG_OK)
			return NG_ENOMEM;
		i++;
	}
	return NG_OK;
}

bool gate_hooks_out(const struct gate *g, uint32_t name)
{
	size_t i = job_find(g, name);
	return i != SIZE_MAX && g->jobs[i]->held;
}

bool gate_hooks_answered(const struct gate *g, uint32_t name)
{
	size_t i = job_find(g, name);
	return i != SIZE_MAX && !g->jobs[i]->held && gate_job_done(&g->jobs[i]->t);
}

void gate_hooks_drop(struct gate *g, uint32_t name)
{
	size_t i = job_find(g, name);
	if (i != SIZE_MAX)
		job_drop(g, i, true);
}

void gate_hooks_forget(struct gate *g)
{
	for (size_t i = 0; i < g->njobs; i++)
		atomic_store(&g->jobs[i]->t.cancel,
			     true); /* all stop at once, then each is joined */
	while (g->njobs)
		job_drop(g, g->njobs - 1, false);
}

/* Drops the counts of budgets @s no longer holds (@present: gate_budgets_present()): a
 * deleted budget's series go. Under metrics_mu. */
static void drop_deleted_hook_counts(struct gate *g, const struct kube_snapshot *s,
				     const struct ng_map *present)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t k = 0;
	for (size_t i = 0; i < g->nhc; i++) {
		const struct gate_hook_count *hc = &g->hc[i];
		uint32_t ns = ng_intern_find(pool, hc->ns, strlen(hc->ns));
		uint32_t name = ng_intern_find(pool, hc->name, strlen(hc->name));
		uint32_t unused;
		/* Hooks are ApplicationDisruptionBudgets': always in a namespace. */
		if (ns != NG_INTERN_NONE && name != NG_INTERN_NONE &&
		    ng_map_get(present, gate_budget_key(ns, name), &unused))
			g->hc[k++] = *hc;
	}
	g->nhc = k;
}

ng_status gate_render_hook_metrics(const struct gate *cg, bool objects, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	struct kube_snapshot *s = objects && g->cfg.store ? kube_store_acquire(g->cfg.store) : NULL;
	struct ng_map present = {0};
	ng_status st = s ? gate_budgets_present(s, &present) : NG_OK;
	pthread_mutex_lock(&g->metrics_mu);
	if (s && st == NG_OK)
		drop_deleted_hook_counts(g, s, &present);
	if (objects && st == NG_OK)
		st = ng_prom_header(out, "nodegate_health_hook_requests_total", NG_PROM_COUNTER,
				    "Health hook calls by budget and result (ok, failed, timeout, "
				    "error, denied).");
	for (size_t i = 0; objects && st == NG_OK && i < g->nhc; i++) {
		const struct ng_prom_label l[] = {
		    {"namespace", g->hc[i].ns},
		    {"name", g->hc[i].name},
		    {"result", pol_hook_result_str((enum pol_hook_result)g->hc[i].result)}};
		st = ng_prom_u64(out, "nodegate_health_hook_requests_total", l, 3, g->hc[i].n);
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_health_hook_duration_seconds", NG_PROM_HISTOGRAM,
				 "How long health hook calls took.");
	st = st ? st
		: ng_prom_hist_render(out, "nodegate_health_hook_duration_seconds", NULL, 0,
				      &g->hook_duration);
	st = st ? st
		: ng_prom_header(
		      out, "nodegate_health_hook_requests_waiting", NG_PROM_GAUGE,
		      "NodeDisruptions whose health hooks are being asked; each holds its "
		      "share of its budgets meanwhile.");
	st = st ? st
		: ng_prom_u64(out, "nodegate_health_hook_requests_waiting", NULL, 0,
			      atomic_load(&g->hooks_waiting));
	pthread_mutex_unlock(&g->metrics_mu);
	ng_map_finish(&present);
	kube_snapshot_release(s);
	return st;
}
