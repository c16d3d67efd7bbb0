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
#include "common/json.h"
#include "common/parse.h"
#include "kube/client.h"
#include "kube/runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const double hook_buckets_s[GATE_HOOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
							 0.25,  0.5,  1,     5,    25};

/* Multistep steps may take up to 60 s. */
static const double hook2_buckets_s[GATE_HOOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
							  0.25,  0.5,  1,     5,    60};

void gate_hooks_init(struct gate *g)
{
	ng_prom_hist_init(&g->hook_duration, hook_buckets_s, GATE_HOOK_BUCKETS);
	ng_prom_hist_init(&g->hook2_duration, hook2_buckets_s, GATE_HOOK_BUCKETS);
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
		if (g->hc[i].result == c->result && g->hc[i].phase == c->phase &&
		    strcmp(g->hc[i].ns, ns) == 0 && strcmp(g->hc[i].name, name) == 0)
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
			hc->phase = (uint8_t)c->phase;
		}
	}
	if (hc)
		hc->n++;
	if (c->result != POL_HOOK_DENIED)
		ng_prom_hist_observe_us(c->phase == POL_HOOK_HEALTH ? &g->hook_duration
								    : &g->hook2_duration,
					c->duration_ms * 1000);
	pthread_mutex_unlock(&g->metrics_mu);
}

/* One hook's answer: metrics, a log line, a HookFailed Event on the budget when it failed, and
 * for a health hook the budget's status.lastHookResult. */
static void record_hook(struct gate *g, const struct kube_snapshot *s, const char *nd,
			const struct pol_hook_call *c, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *ns =
	    c->budget->ns != NG_INTERN_NONE ? ng_intern_str(pool, c->budget->ns, NULL) : NULL;
	const char *name = ng_intern_str(pool, c->budget->name, NULL);
	bool ok = c->result == POL_HOOK_OK || c->result == POL_HOOK_LATER;
	count_hook(g, ns ? ns : "", name, c);
	const struct gate_later later = {.hook_result = true,
					 .kind = KUBE_KIND_ADB,
					 .ns = ns,
					 .name = name,
					 .c = *c,
					 .now_wall_ms = now_wall_ms};
	if (c->phase == POL_HOOK_HEALTH && !gate_defer(g, &later))
		gate_write_hook_result(g, ns, name, c, now_wall_ms);
	struct ng_logline l;
	if (ng_log_begin(&l, ok ? NG_LOG_INFO : NG_LOG_WARN, "gate",
			 c->phase == POL_HOOK_HEALTH ? "health hook called"
						     : "multistep hook called")) {
		ng_log_str(&l, "nd", nd);
		if (ns)
			ng_log_str(&l, "namespace", ns);
		ng_log_str(&l, "budget", name);
		if (c->phase != POL_HOOK_HEALTH)
			ng_log_str(&l, "step", pol_hook_phase_str(c->phase));
		ng_log_str(&l, "result", pol_hook_result_str(c->result));
		ng_log_i64(&l, "code", c->code);
		ng_log_i64(&l, "bytes", c->bytes);
		ng_log_i64(&l, "duration_ms", c->duration_ms);
		if (c->result == POL_HOOK_LATER)
			ng_log_i64(&l, "retry_after_s", c->retry_after_s);
		ng_log_str(&l, "message", c->message);
		ng_log_end(&l);
	}
	if (!ok) {
		char msg[400];
		ng_fmt(msg, sizeof(msg), "NodeDisruption %s: %s%s%s", nd,
		       c->phase == POL_HOOK_HEALTH ? "" : "POST /",
		       c->phase == POL_HOOK_HEALTH ? "" : pol_hook_phase_str(c->phase),
		       c->phase == POL_HOOK_HEALTH ? c->message : "");
		if (c->phase != POL_HOOK_HEALTH) {
			size_t at = strlen(msg);
			ng_fmt(msg + at, sizeof(msg) - at, ": %s", c->message);
		}
		gate_event_budget(g, c->kind, ns, name, c->budget->uid, "HookFailed", "Warning",
				  msg, now_wall_ms);
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
	struct ng_arena *mem; /* the multistep calls' URLs, bodies and tokens; may be NULL */
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

/* Frees job @j with all it owns, its thread stopped and joined first when @stop (a job whose
 * thread started and was not stopped yet). Accepts NULL. */
static void job_free(struct gate_hook_job *j, bool stop)
{
	if (!j)
		return;
	if (stop)
		gate_job_stop(&j->t);
	kube_snapshot_release(j->s);
	ng_arena_destroy(j->mem);
	free(j->nd);
	free(j->nodes);
	free(j->calls);
	free(j->body);
	free(j);
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
	job_free(j, false);
}

/* Starts the calls of @calls (@n, from the round's arena: copied) for request @nd of @s, with
 * @body and @mem (what the calls point to; both taken). NULL when there is no memory or no
 * thread: @body and @mem are freed. */
static struct gate_hook_job *
job_start(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd, const char *name,
	  const struct pol_gate_decision *d, const struct kube_hook_policy *hp,
	  const struct pol_hook_call *calls, size_t n, char *body, size_t len, struct ng_arena *mem)
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
		job_free(j, false);
		free(body);
		ng_arena_destroy(mem);
		return NULL;
	}
	j->mem = mem;
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
		job_free(j, false);
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
	const struct kube_budget_common *x = a->budget, *y = b->budget;
	const struct kube_hook *hx = a->hook, *hy = b->hook;
	return a->phase == b->phase && a->kind == b->kind && same_str(x->uid, y->uid) &&
	       same_str(ng_intern_str(ap, x->ns, NULL), ng_intern_str(bp, y->ns, NULL)) &&
	       same_str(ng_intern_str(ap, x->name, NULL), ng_intern_str(bp, y->name, NULL)) &&
	       same_str(hx->url, hy->url) && hx->timeout_s == hy->timeout_s && hx->nca == hy->nca &&
	       (!hx->nca || memcmp(hx->ca, hy->ca, hx->nca) == 0);
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
		calls[i].retry_after_s = a->retry_after_s;
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
	(void)pol_hooks_apply(s, nd, calls, n, d, now_wall_ms);
	/* Hooks cancelled by another's failure did not answer and leave no trace. */
	for (size_t i = 0; i < n; i++)
		if (calls[i].result != POL_HOOK_CANCELLED && calls[i].result != POL_HOOK_PENDING)
			record_hook(g, s, name, &calls[i], now_wall_ms);
}

/* The value of @h's tokenSecretRef, read now from the API server into @mem (*@ret; NULL when
 * the hook has none). A Secret that cannot be read gives why in @why, in fixed words: the
 * call is not made. Only OOM fails. */
static ng_status read_token(struct gate *g, const struct ng_intern *pool, const struct kube_hook *h,
			    struct ng_arena *mem, const char **ret, char *why, size_t cap)
{
	*ret = NULL;
	if (h->token_name == NG_INTERN_NONE)
		return NG_OK;
	const char *ns = ng_intern_str(pool, h->token_ns, NULL);
	const char *name = ng_intern_str(pool, h->token_name, NULL);
	const char *key = ng_intern_str(pool, h->token_key, NULL);
	char path[600];
	ng_fmt(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", ns, name);
	struct ng_buf out;
	ng_buf_init(&out, 1u << 20);
	long http = 0;
	struct ng_err err = {0};
	ng_status st = kube_client_request(g->client, "GET", path, NULL, NULL, 0,
					   KUBE_WRITE_TIMEOUT_MS, 1u << 20, &out, &http, &err);
	cJSON *o = st == NG_OK && http == 200 ? cJSON_ParseWithLength(out.data, out.len) : NULL;
	const char *b64 = ng_json_str(ng_json_get(o, "data"), key);
	char *tok = NULL;
	size_t n = 0;
	if (b64 && ng_base64_decode(b64, strlen(b64), &tok, &n) == NG_OK && n &&
	    !memchr(tok, '\r', n) && !memchr(tok, '\n', n) && !memchr(tok, '\0', n))
		*ret = ng_arena_strndup(mem, tok, n);
	else if (st == NG_OK && http == 200)
		ng_fmt(why, cap, "token Secret %s/%s has no usable key %s", ns, name, key);
	else
		ng_fmt(why, cap, "token Secret %s/%s not readable (HTTP status %ld)", ns, name,
		       st == NG_OK ? http : 0L);
	if (tok) {
		explicit_bzero(tok, n);
		free(tok);
	}
	if (out.data)
		explicit_bzero(out.data, out.len);
	cJSON_Delete(o);
	ng_buf_finish(&out);
	return *why || *ret ? NG_OK : NG_ENOMEM;
}

/* The URL (the base with the step's path), the body (Criteo's Disruption about the request's
 * nodes in the budget's scope) and the bearer token of every multistep call of @calls, into
 * @mem. @index(i) is the budget's index in the snapshot. A token that cannot be read denies
 * the call. Only OOM fails. */
static ng_status fill_steps(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd,
			    const uint32_t *nodes, size_t nnodes, struct pol_ledger *ledger,
			    struct pol_hook_call *calls, size_t n, const size_t *index,
			    struct ng_arena *mem)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < n; i++) {
		struct pol_hook_call *c = &calls[i];
		if (c->phase == POL_HOOK_HEALTH || c->result != POL_HOOK_PENDING)
			continue;
		const char *base = c->hook->url, *step = pol_hook_phase_str(c->phase);
		size_t bl = strlen(base);
		while (bl && base[bl - 1] == '/')
			bl--;
		size_t ul = bl + strlen(step) + 2;
		char *url = ng_arena_alloc(mem, ul);
		uint32_t *in;
		size_t nin;
		struct ng_buf body;
		ng_buf_init(&body, NG_MAX_BODY_BYTES);
		if (!url ||
		    pol_budget_nodes_in(ledger, c->kind, index[i], nodes, nnodes, mem, &in, &nin) !=
			NG_OK ||
		    pol_hook2_body(s, nd, in, nin, &body) != NG_OK ||
		    !(c->body = ng_arena_strndup(mem, body.data, body.len))) {
			ng_buf_finish(&body);
			return NG_ENOMEM;
		}
		c->len = body.len;
		ng_buf_finish(&body);
		ng_fmt(url, ul, "%.*s/%s", (int)bl, base, step);
		c->url = url;
		char why[200] = "";
		if (read_token(g, pool, c->hook, mem, &c->token, why, sizeof(why)) != NG_OK)
			return NG_ENOMEM;
		if (*why) {
			c->result = POL_HOOK_DENIED;
			ng_fmt(c->message, sizeof(c->message), "%s", why);
		}
	}
	return NG_OK;
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
	if (pol_hooks_prepare(s, nd, d, &hp, arena, &calls, &n) != NG_OK) {
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	if (ji != SIZE_MAX) {
		struct gate_hook_job *j = g->jobs[ji];
		if (j->held || !gate_job_done(&j->t))
			return GATE_HOOKS_WAIT; /* still out: the request is not decided meanwhile
						 */
		/* Multistep answers wait until the cache shows the finalizer written before the
		 * calls: a status written on the older version would conflict and lose them. */
		if (j->mem && !gate_has_finalizer(s, nd))
			return GATE_HOOKS_WAIT;
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
	size_t nhealth = 0, nsteps = 0;
	for (size_t i = 0; i < n; i++) {
		nhealth += calls[i].phase == POL_HOOK_HEALTH;
		nsteps += calls[i].phase != POL_HOOK_HEALTH;
	}
	/* No budget prepares before nodegate's finalizer holds the request: its /terminate
	 * must not be lost to a delete. Once the finalizer is written the calls start (the
	 * cache shows it later); a conflict or a request gone waits for the next change. */
	if (nsteps && !gate_has_finalizer(s, nd)) {
		enum kube_write_outcome o = gate_set_finalizer(g, s, nd, name, true, arena);
		if (o == KUBE_WRITE_CONFLICT || o == KUBE_WRITE_GONE)
			return GATE_HOOKS_WAIT;
		if (o != KUBE_WRITE_OK)
			return GATE_HOOKS_AGAIN;
	}
	struct ng_arena *mem = nsteps ? ng_arena_create(4u * NG_MAX_BODY_BYTES) : NULL;
	size_t *index = nsteps ? ng_arena_alloc(arena, n * sizeof(*index)) : NULL;
	for (size_t i = 0; index && i < n; i++)
		index[i] = d->verdicts[calls[i].verdict].index;
	if (nsteps &&
	    (!mem || !index ||
	     fill_steps(g, s, nd, d->nodes, d->nnodes, ledger, calls, n, index, mem) != NG_OK)) {
		ng_arena_destroy(mem);
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	size_t len = 0;
	char *body = nhealth ? hook_body(g, s, name, d, arena, &len) : NULL;
	if (nhealth && !body) {
		ng_arena_destroy(mem);
		ng_prom_add(&g->errors, 1);
		return GATE_HOOKS_AGAIN;
	}
	if (!job_start(g, s, nd, name, d, &hp, calls, n, body, len, mem)) {
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
		/* Its share is held while its hooks are out, and also once multistep answers are
		 * in but wait for the cache to show the finalizer (gate_hooks_step()): meanwhile no
		 * other request may take the place its budgets may be preparing for. Other
		 * answered requests are decided first in the round, before any other. */
		j->held = !gate_job_done(&j->t);
		bool waits = !j->held && j->mem && !gate_has_finalizer(s, nd);
		if ((j->held || waits) &&
		    pol_ledger_grant(ledger, j->name, j->nodes, j->nnodes) != NG_OK)
			return NG_ENOMEM;
		i++;
	}
	/* A request some budget prepares for holds its share while it waits to be ready; its
	 * own decision counts its nodes once (they are held by itself). */
	return pol_hooks_hold_preparing(s, ledger);
}

/* ---- /terminate: what a deleted request owes the budgets that prepared for it ---- */

/* A failed /terminate round is tried again 5 s later, doubling up to 5 minutes. */
static void term_backoff(struct gate_term *t, int64_t now_wall_ms)
{
	t->attempts++;
	t->next_wall_ms = now_wall_ms + ng_backoff_ms(5000, 300000, t->attempts - 1);
}

static size_t term_find(const struct gate *g, uint32_t name, uint64_t uid)
{
	for (size_t i = 0; i < g->nterms; i++)
		if (g->terms[i].name == name && g->terms[i].uid == uid)
			return i;
	return SIZE_MAX;
}

static void term_drop(struct gate *g, size_t i)
{
	job_free(g->terms[i].job, true);
	g->terms[i] = g->terms[--g->nterms];
}

/* The budget of status entry @v of @s, with its index; NULL when it is gone or has no
 * multistep hooks. */
static const struct kube_budget_common *entry_budget(const struct kube_snapshot *s,
						     const struct kube_nd_verdict *v,
						     enum kube_resource *ret_kind,
						     size_t *ret_index)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *kind = ng_intern_str(pool, v->kind, NULL);
	size_t n;
	if (kind && strcmp(kind, "NodeDisruptionBudget") == 0) {
		const struct kube_ndb *b = kube_snapshot_ndbs(s, &n);
		for (size_t i = 0; i < n; i++)
			if (b[i].b.name == v->name && b[i].b.hook2.present) {
				*ret_kind = KUBE_RES_NDBS;
				*ret_index = i;
				return &b[i].b;
			}
	} else if (kind && strcmp(kind, "ApplicationDisruptionBudget") == 0) {
		const struct kube_adb *b = kube_snapshot_adbs(s, &n);
		for (size_t i = 0; i < n; i++)
			if (b[i].b.name == v->name && b[i].b.ns == v->ns && b[i].b.hook2.present) {
				*ret_kind = KUBE_RES_ADBS;
				*ret_index = i;
				return &b[i].b;
			}
	}
	return NULL;
}

/* The /terminate calls @nd owes, into @calls (room for every status entry) with @index. */
static size_t term_calls(const struct kube_snapshot *s, const struct kube_nd *nd,
			 const struct kube_hook_policy *hp, struct pol_hook_call *calls,
			 size_t *index)
{
	const struct kube_nd_detail *x = nd->detail;
	size_t n = 0;
	for (uint16_t i = 0; x && i < x->nverdicts; i++) {
		enum kube_resource kind;
		size_t at;
		const struct kube_budget_common *b =
		    x->verdicts[i].preparing ? entry_budget(s, &x->verdicts[i], &kind, &at) : NULL;
		if (!b)
			continue; /* not prepared, or the budget (or its hooks) is gone */
		struct pol_hook_call *c = &calls[n];
		memset(c, 0, sizeof(*c));
		c->budget = b;
		c->hook = &b->hook2;
		c->kind = kind;
		c->phase = POL_HOOK_TERMINATE;
		c->retry_after_s = -1;
		index[n++] = at;
		struct ng_err why = {0};
		if (pol_hook_allowed(c->hook, hp, kube_snapshot_pool(s), &why) != NG_OK) {
			c->result = POL_HOOK_DENIED;
			ng_fmt(c->message, sizeof(c->message), "%s", why.msg);
		}
	}
	return n;
}

enum term_start {
	TERM_STARTED,
	TERM_NOTHING, /* nothing owed, or each call refused by policy: those can never be made */
	TERM_FAILED,  /* no memory or no thread: again later */
};

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Starts the /terminate calls of @nd. */
static enum term_start term_start(struct gate *g, const struct kube_snapshot *s,
				  const struct kube_nd *nd, const char *name, struct gate_term *t,
				  int64_t now_wall_ms)
{
	const struct kube_nd_detail *x = nd->detail;
	size_t cap = x && x->nverdicts ? x->nverdicts : 1;
	struct pol_hook_call *calls = calloc(cap, sizeof(*calls));
	size_t *index = calloc(cap, sizeof(*index));
	struct ng_arena *mem = ng_arena_create(4u * NG_MAX_BODY_BYTES);
	struct pol_ledger *ledger = pol_ledger_create(s);
	uint32_t *nodes = malloc((nd->ndisrupted ? nd->ndisrupted : 1u) * sizeof(*nodes));
	struct kube_hook_policy hp;
	pol_hook_policy_from(s, &hp);
	if (!calls || !index || !nodes) {
		free(calls);
		free(index);
		free(nodes);
		ng_arena_destroy(mem);
		pol_ledger_destroy(ledger);
		return TERM_FAILED;
	}
	memcpy(nodes, nd->disrupted, nd->ndisrupted * sizeof(*nodes));
	qsort(nodes, nd->ndisrupted, sizeof(*nodes), cmp_id);
	size_t n = term_calls(s, nd, &hp, calls, index);
	bool started = false;
	size_t pending = 0;
	for (size_t i = 0; i < n; i++) {
		if (calls[i].result == POL_HOOK_DENIED)
			record_hook(g, s, name, &calls[i], now_wall_ms);
		else
			pending++;
	}
	struct gate_hook_job *j = pending ? calloc(1, sizeof(*j)) : NULL;
	if (j && mem && ledger &&
	    fill_steps(g, s, nd, nodes, nd->ndisrupted, ledger, calls, n, index, mem) == NG_OK &&
	    (j->nd = strdup(name))) {
		j->name = nd->name;
		j->calls = calls;
		j->n = n;
		j->mem = mem;
		j->hp = hp;
		j->deny = g->deny;
		j->ndeny = g->ndeny;
		j->s = kube_snapshot_ref((struct kube_snapshot *)(uintptr_t)s);
		calls = NULL;
		mem = NULL;
		if (gate_job_start(&j->t, g, &g->hooks_answered, job_run)) {
			t->job = j;
			started = true;
		} else {
			job_free(j, false);
		}
	} else {
		job_free(j, false);
	}
	pol_ledger_destroy(ledger);
	ng_arena_destroy(mem);
	free(calls);
	free(index);
	free(nodes);
	return started ? TERM_STARTED : pending ? TERM_FAILED : TERM_NOTHING;
}

bool gate_hooks_terminate(struct gate *g, const struct kube_snapshot *s, const struct kube_nd *nd,
			  const char *name, int64_t now_wall_ms)
{
	if (!pol_hooks_preparing(nd))
		return true;
	uint64_t uid =
	    ng_fnv1a64(NG_FNV64_INIT, nd->uid ? nd->uid : "", nd->uid ? strlen(nd->uid) : 0);
	size_t i = term_find(g, nd->name, uid);
	if (i == SIZE_MAX) {
		struct gate_term *p = ng_array_grow(g->terms, &g->capterms, g->nterms, sizeof(*p));
		if (!p)
			return false;
		g->terms = p;
		i = g->nterms++;
		struct kube_hook_policy hp;
		pol_hook_policy_from(s, &hp);
		g->terms[i] =
		    (struct gate_term){nd->name, uid,
				       NULL,     now_wall_ms,
				       0,        now_wall_ms + hp.terminate_deadline_s * 1000,
				       0};
	}
	struct gate_term *t = &g->terms[i];
	if (t->job && !gate_job_done(&t->job->t))
		return false;
	if (t->job) {
		/* Answered: each call is recorded; done when every one answered 200. */
		struct gate_hook_job *j = t->job;
		bool all = j->st == NG_OK;
		for (size_t k = 0; k < j->n; k++) {
			if (j->calls[k].result == POL_HOOK_DENIED)
				continue;
			record_hook(g, s, name, &j->calls[k], now_wall_ms);
			all &= j->calls[k].result == POL_HOOK_OK;
		}
		t->job = NULL;
		job_free(j, true);
		if (all) {
			term_drop(g, i);
			return true;
		}
		term_backoff(t, now_wall_ms);
	}
	if (now_wall_ms >= t->until_wall_ms) {
		char msg[300];
		ng_fmt(msg, sizeof(msg),
		       "gave up calling /terminate after %lld s (%u attempts): the budgets that "
		       "prepared for it were not all told it ended",
		       (long long)((t->until_wall_ms - t->since_wall_ms) / 1000), t->attempts);
		gate_event_nd(g, nd, name, "TerminateAbandoned", "Warning", msg, now_wall_ms);
		term_drop(g, i);
		return true;
	}
	if (now_wall_ms < t->next_wall_ms)
		return false;
	if (g->nterms > GATE_MAX_HOOK_JOBS)
		return false; /* a job's end tends the finalizers again */
	switch (term_start(g, s, nd, name, t, now_wall_ms)) {
	case TERM_STARTED:
		return false;
	case TERM_FAILED: /* again after a while */
		term_backoff(t, now_wall_ms);
		return false;
	case TERM_NOTHING:
		break;
	}
	term_drop(g, i); /* nothing owed: every budget is gone or refused by policy */
	return true;
}

bool gate_terms_due(const struct gate *g, int64_t now_wall_ms, int64_t *ret_next)
{
	bool due = false;
	*ret_next = 0;
	for (size_t i = 0; i < g->nterms; i++) {
		const struct gate_term *t = &g->terms[i];
		if (t->job) {
			due |= gate_job_done(&t->job->t);
			continue;
		}
		int64_t at =
		    t->next_wall_ms < t->until_wall_ms ? t->next_wall_ms : t->until_wall_ms;
		if (now_wall_ms >= at)
			due = true;
		else if (!*ret_next || at < *ret_next)
			*ret_next = at;
	}
	return due;
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
	for (size_t i = 0; i < g->nterms; i++)
		if (g->terms[i].job)
			atomic_store(&g->terms[i].job->t.cancel, true);
	while (g->nterms)
		term_drop(g, g->nterms - 1);
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
		/* A NodeDisruptionBudget's (multistep hooks only) has no namespace. */
		uint32_t ns =
		    hc->ns[0] ? ng_intern_find(pool, hc->ns, strlen(hc->ns)) : NG_INTERN_NONE;
		uint32_t name = ng_intern_find(pool, hc->name, strlen(hc->name));
		uint32_t unused;
		if ((ns != NG_INTERN_NONE || !hc->ns[0]) && name != NG_INTERN_NONE &&
		    ng_map_get(present, gate_budget_key(ns, name), &unused))
			g->hc[k++] = *hc;
	}
	g->nhc = k;
}

/* The series of nodegate_hook_v2_requests_total (@steps) or of
 * nodegate_health_hook_requests_total. Under metrics_mu. */
static ng_status hook_counts(const struct gate *g, bool steps, struct ng_buf *out)
{
	ng_status st = NG_OK;
	for (size_t i = 0; st == NG_OK && i < g->nhc; i++) {
		const struct gate_hook_count *hc = &g->hc[i];
		if ((hc->phase != POL_HOOK_HEALTH) != steps)
			continue;
		const char *result = pol_hook_result_str((enum pol_hook_result)hc->result);
		const struct ng_prom_label l[] = {
		    {"namespace", hc->ns},
		    {"name", hc->name},
		    {steps ? "step" : "result",
		     steps ? pol_hook_phase_str((enum pol_hook_phase)hc->phase) : result},
		    {"result", result}};
		st = ng_prom_u64(out,
				 steps ? "nodegate_hook_v2_requests_total"
				       : "nodegate_health_hook_requests_total",
				 l, steps ? 4 : 3, hc->n);
	}
	return st;
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
	if (objects && st == NG_OK)
		st = hook_counts(g, false, out);
	if (objects && st == NG_OK)
		st = ng_prom_header(
		    out, "nodegate_hook_v2_requests_total", NG_PROM_COUNTER,
		    "Multistep hook calls (hookV2BasePath) by budget, step (prepare, "
		    "ready, terminate) and result (ok, later, failed, timeout, error, "
		    "denied).");
	if (objects && st == NG_OK)
		st = hook_counts(g, true, out);
	st = st ? st
		: ng_prom_header(out, "nodegate_health_hook_duration_seconds", NG_PROM_HISTOGRAM,
				 "How long health hook calls took.");
	st = st ? st
		: ng_prom_hist_render(out, "nodegate_health_hook_duration_seconds", NULL, 0,
				      &g->hook_duration);
	st = st ? st
		: ng_prom_header(out, "nodegate_hook_v2_duration_seconds", NG_PROM_HISTOGRAM,
				 "How long multistep hook calls (prepare, ready, terminate) took.");
	st = st ? st
		: ng_prom_hist_render(out, "nodegate_hook_v2_duration_seconds", NULL, 0,
				      &g->hook2_duration);
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
