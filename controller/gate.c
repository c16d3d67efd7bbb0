/* The gate controller's round (DESIGN.md §4): rank the Pending requests, decide them one at a
 * time, record each grant in the ledger before the next decision, write what changed. */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/log.h"
#include "common/prom.h"
#include "controller/leader.h"
#include "controller/scaffold.h"
#include "kube/lookup.h"
#include "kube/runtime.h"
#include "kube/snapshot.h"
#include "kube/watch.h"

#include <stdlib.h>
#include <string.h>

/* A grant we wrote but the cache does not show yet holds its nodes this long at most (the
 * watch delivers it in well under a second). */
#define INFLIGHT_MS 30000
/* Decisions of one round share an arena: a 5,000-node cluster needs a few hundred KB per
 * decision; 64 MiB bounds a pathological one. */
#define ROUND_ARENA_BYTES (64u << 20)
/* Budget status is refreshed at most this often: pod churn republishes the cache every
 * window, and each refresh walks every budget's scope. */
#define BUDGET_STATUS_MS 500
/* A status pass waits while something new is to be decided (a request that arrived while the
 * round wrote), but never longer than this since the last pass: a steady stream of requests
 * cannot keep the statuses from being written. */
#define BUDGET_DEFER_MAX_MS 2000
/* After a decision could not be made (a request unreadable for its hooks), look again. */
#define AGAIN_MS 1000

/* 5 µs to 100 ms in steps of 2-2.5x: a decision takes microseconds, and a p99 read from wide
 * buckets (100-500 µs) was off by up to 3x. */
const double gate_decision_buckets_s[GATE_DECISION_BUCKETS] = {
    0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1};

static const _Atomic bool never_stop = false;

struct gate_written *gate_written_get(struct gate *g, uint32_t name)
{
	uint32_t i;
	return ng_map_get(&g->w_by_name, name, &i) ? &g->w[i] : NULL;
}

struct gate_written *gate_written_put(struct gate *g, uint32_t name)
{
	struct gate_written *w = gate_written_get(g, name);
	if (w)
		return w;
	struct gate_written *p = ng_array_grow(g->w, &g->capw, g->nw, sizeof(*p));
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
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): each entry owns its own copy of nodes */
	free(g->inf[i].nodes);
	g->inf[i] = g->inf[--g->ninf];
}

void gate_inflight_add(struct gate *g, uint32_t name, const uint32_t *nodes, size_t n,
		       int64_t now_wall_ms)
{
	struct gate_inflight *p = ng_array_grow(g->inf, &g->capinf, g->ninf, sizeof(*p));
	if (!p)
		return;
	g->inf = p;
	uint32_t *copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, nodes, n * sizeof(*copy));
	struct gate_inflight *e = &g->inf[g->ninf++];
	e->name = name;
	e->nodes = copy;
	e->n = n;
	e->until_wall_ms = now_wall_ms + INFLIGHT_MS;
}

/* Grants written but not yet in the cache still hold their nodes. Names are intern ids, which
 * stay comparable across snapshots (a rebuilt pool keeps the ids of the strings in use). */
static ng_status ledger_add_inflight(struct gate *g, const struct kube_snapshot *s,
				     struct pol_ledger *l, int64_t now_wall_ms)
{
	for (size_t i = 0; i < g->ninf;) {
		const struct kube_nd *nd = kube_snapshot_find_nd(s, g->inf[i].name);
		if (!nd || nd->deleting || nd->state == KUBE_ND_GRANTED ||
		    nd->state == KUBE_ND_REJECTED || now_wall_ms > g->inf[i].until_wall_ms) {
			inflight_drop(g, i);
			continue;
		}
		/* Dated when it was written (pacing: the interval starts there). */
		int64_t at = g->inf[i].until_wall_ms - INFLIGHT_MS;
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): a dropped entry is not read again */
		if (pol_ledger_grant_at(l, g->inf[i].name, g->inf[i].nodes, g->inf[i].n, at) !=
		    NG_OK)
			return NG_ENOMEM;
		i++;
	}
	return NG_OK;
}

/* ---- one decision: evaluate (steps 1-7, 9), ask the hooks (8), plan the write, write ---- */

/* Hooks are not asked twice about one version of a request: not while the cache still shows
 * the version this replica already decided (its write is on the way), and after a failure
 * not before the retry falls due, whatever else changes. */
static bool hooks_wait(const struct gate_written *w, const struct kube_nd *nd, int64_t now_wall_ms)
{
	uint64_t rv = ng_fnv1a64(NG_FNV64_INIT, nd->rv, strlen(nd->rv));
	return w && (w->rv_hash == rv || (w->hook_failed && w->next_retry_wall_ms &&
					  now_wall_ms < w->next_retry_wall_ms));
}

/* Deciding, without writing: whether decision @d about @nd is news, and the retry bookkeeping
 * that goes with it. False when nothing new is to be said. Pure. */
/* What a decision says, for telling whether it is news: the outcome's reason, but for a request
 * held back by budgets, which budgets fail and how (each failing verdict's budget and its reason
 * with the digits left out), not their counts. Under churn the counts move all the time ("2 of
 * 3 in use", "limit 3 of 41 nodes"); rewriting a Pending request's status for each of them cost
 * a status write a second per waiting request, each one waking every watcher. The counts are
 * written again at the request's next retry. */
static uint64_t decision_hash(const struct ng_intern *pool, const struct pol_gate_decision *d)
{
	uint64_t h = NG_FNV64_INIT;
	size_t failing = 0;
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->ok)
			continue;
		failing++;
		const char *ns = ng_intern_str(pool, v->ns, NULL),
			   *name = ng_intern_str(pool, v->name, NULL);
		h = ng_fnv1a64(h, &v->kind, sizeof(v->kind));
		h = ng_fnv1a64(h, ns ? ns : "", ns ? strlen(ns) + 1 : 1);
		h = ng_fnv1a64(h, name ? name : "", name ? strlen(name) + 1 : 1);
		const char *held = strstr(v->reason, POL_HELD_BY);
		for (const char *c = v->reason; *c && c != held; c++)
			if (*c < '0' || *c > '9')
				h = ng_fnv1a64(h, c, 1);
	}
	/* A request that can never fit has no retry to refresh its figures: they are news. */
	if (!failing || d->outcome != POL_GATE_PENDING || d->unsatisfiable)
		h = ng_fnv1a64(h, d->reason, strlen(d->reason));
	return ng_fnv1a64(h, &d->outcome, sizeof(d->outcome));
}

/* @retry_by_wall_ms (0: none): a Pending decision's retry comes no later (the alert gate's
 * answer it waits on expires then), with retry or without. */
static bool plan_write(struct gate *g, const struct kube_snapshot *s,
		       const struct pol_gate_config *cfg, const struct gate_written *w,
		       const struct kube_nd *nd, const struct pol_gate_decision *d,
		       int64_t now_wall_ms, int64_t retry_by_wall_ms, struct gate_write *ret)
{
	uint64_t h = decision_hash(kube_snapshot_pool(s), d);
	bool pending = d->outcome == POL_GATE_PENDING;
	bool retry_due =
	    w && pending && w->next_retry_wall_ms && now_wall_ms >= w->next_retry_wall_ms;
	if (w && w->outcome == d->outcome && w->reason_hash == h && !retry_due &&
	    nd->state != KUBE_ND_UNKNOWN)
		return false;
	*ret = (struct gate_write){d, now_wall_ms, 0, nd->retry_count, h, 0};
	if (d->outcome == POL_GATE_GRANT)
		ret->expires_wall_ms =
		    pol_grant_expires_ms(nd, kube_snapshot_config(s), now_wall_ms);
	if (pending && d->unsatisfiable) {
		/* Retrying changes nothing: a change of a budget or of the nodes (a new snapshot)
		 * decides it again. Only its deadline, if any, is a time to look again. */
		if (!w)
			ret->retry_count++;
		ret->next_retry_wall_ms = nd->deadline_ms ? nd->deadline_ms + 1 : 0;
		return true;
	}
	/* A request waiting for a maintenance window is decided again when it opens, retry or
	 * not: sooner would change nothing, later would waste the window. */
	if (pending && d->wake_wall_ms && (d->only_windows || !nd->retry)) {
		if (retry_due || !w)
			ret->retry_count++;
		ret->next_retry_wall_ms = d->wake_wall_ms;
	} else if (pending && nd->retry) {
		if (retry_due || !w)
			ret->retry_count++;
		/* NodeGateConfig's retry settings, else the gate's (5 s, 300 s); ±20 %. */
		int64_t initial =
		    cfg->retry_initial_ms ? cfg->retry_initial_ms : g->cfg.retry_initial_ms;
		int64_t max = cfg->retry_max_ms ? cfg->retry_max_ms : g->cfg.retry_max_ms;
		ret->next_retry_wall_ms =
		    now_wall_ms +
		    ng_jitter_ms(&g->rng, ng_backoff_ms(initial, max, ret->retry_count), 20, 20);
	}
	/* Held back by a budget whose window limits change before the retry: decided then. */
	if (pending && d->wake_wall_ms && d->wake_wall_ms < ret->next_retry_wall_ms)
		ret->next_retry_wall_ms = d->wake_wall_ms;
	if (pending && retry_by_wall_ms &&
	    (!ret->next_retry_wall_ms || ret->next_retry_wall_ms > retry_by_wall_ms))
		ret->next_retry_wall_ms = retry_by_wall_ms;
	/* Held by the alert gate without retry.enabled, it is decided again all the same: counted
	 * like a retry, so its Event is written once, not at every expiry of the answer. */
	if (pending && retry_by_wall_ms && !nd->retry && (retry_due || !w))
		ret->retry_count++;
	return true;
}

/* What a written decision leaves behind: the written record, the ledger, a log line, an Event.
 * False when the round must end (no memory to hold the grant in the ledger). */
static bool after_write(struct gate *g, struct pol_ledger *ledger, const struct kube_nd *nd,
			const char *name, const struct gate_write *wr, bool hooks_called,
			uint64_t us)
{
	const struct pol_gate_decision *d = wr->d;
	bool cont = true;
	ng_prom_add(&g->writes, 1);
	struct gate_written *w = gate_written_put(g, nd->name);
	if (w) {
		w->outcome = (uint8_t)d->outcome;
		w->reason_hash = wr->hash;
		w->next_retry_wall_ms = wr->next_retry_wall_ms;
		w->retry_count = wr->retry_count;
		w->hook_failed = hooks_called && d->outcome != POL_GATE_GRANT;
		w->rv_hash = ng_fnv1a64(NG_FNV64_INIT, nd->rv, strlen(nd->rv));
	}
	if (d->outcome == POL_GATE_GRANT) {
		/* Recorded before the next decision: a stale cache cannot grant it twice. Without
		 * memory for that, no further decision this round. */
		cont = pol_ledger_grant_at(ledger, nd->name, d->nodes, d->nnodes,
					   wr->now_wall_ms) == NG_OK;
		gate_inflight_add(g, nd->name, d->nodes, d->nnodes, wr->now_wall_ms);
	} else if (d->outcome == POL_GATE_PENDING && pol_decision_preparing(d)) {
		/* Its budgets prepare for it: it holds its share from now on, before the cache
		 * shows the status that says so (gate_hooks_hold() holds it from then on). */
		cont = pol_ledger_grant(ledger, nd->name, d->nodes, d->nnodes) == NG_OK;
		gate_inflight_add(g, nd->name, d->nodes, d->nnodes, wr->now_wall_ms);
	}
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_INFO, "gate", "disruption decided")) {
		ng_log_str(&l, "nd", name);
		ng_log_str(&l, "state", pol_gate_outcome_str(d->outcome));
		ng_log_i64(&l, "nodes", (int64_t)d->nnodes);
		ng_log_str(&l, "reason", d->reason);
		ng_log_i64(&l, "decision_us", (int64_t)us);
		ng_log_end(&l);
	}
	if (d->outcome != POL_GATE_PENDING || !w || w->retry_count <= 1)
		gate_event_nd(g, nd, name,
			      d->outcome == POL_GATE_GRANT    ? "Granted"
			      : d->outcome == POL_GATE_REJECT ? "Rejected"
			      : d->unsatisfiable              ? "Unsatisfiable"
							      : "Retrying",
			      d->outcome == POL_GATE_GRANT ? "Normal" : "Warning", d->reason,
			      wr->now_wall_ms);
	return cont;
}

/* Writes @wr and what follows from it. False when the round must end: a conflict (the cache
 * is behind: decide again on the next snapshot) or a failed write. */
static bool write_decision(struct gate *g, const struct kube_snapshot *s, struct pol_ledger *ledger,
			   const struct kube_nd *nd, const char *name, const struct gate_write *wr,
			   bool hooks_called, uint64_t us, struct ng_arena *arena)
{
	struct ng_err err = {0};
	enum kube_write_outcome o = gate_write_status(g, s, nd, wr, arena, &err);
	if (o == KUBE_WRITE_OK)
		return after_write(g, ledger, nd, name, wr, hooks_called, us);
	if (o == KUBE_WRITE_CONFLICT) {
		ng_prom_add(&g->conflicts, 1);
		return false;
	}
	ng_prom_add(&g->errors, 1);
	/* The write may have happened: a grant we cannot confirm holds its nodes until the cache
	 * says otherwise, so capacity is never counted twice. */
	if (wr->d->outcome == POL_GATE_GRANT && o == KUBE_WRITE_FAILED)
		gate_inflight_add(g, nd->name, wr->d->nodes, wr->d->nnodes, wr->now_wall_ms);
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "gate", "status write failed")) {
		ng_log_str(&l, "nd", name);
		ng_log_str(&l, "outcome", kube_write_outcome_str(o));
		ng_log_str(&l, "err", err.msg);
		ng_log_end(&l);
	}
	return false;
}

/* Decides one request and writes the answer when it changed. Returns false when the round
 * must end. */
static bool decide_one(struct gate *g, const struct kube_snapshot *s,
		       const struct pol_gate_config *cfg, struct pol_ledger *ledger,
		       const struct kube_nd *nd, const char *name, int64_t now_wall_ms,
		       struct ng_arena *arena)
{
	/* Its hooks are out and its share is held in the ledger: decided when they answer. */
	if (gate_hooks_out(g, nd->name))
		return true;
	struct pol_gate_decision d;
	int64_t t0_us = ng_now_mono_us();
	if (pol_evaluate_disruption(s, cfg, ledger, nd, now_wall_ms, arena, &d) != NG_OK) {
		ng_prom_add(&g->errors, 1);
		return true;
	}
	uint64_t us = (uint64_t)(ng_now_mono_us() - t0_us);
	ng_prom_hist_observe_us(&g->decision_duration, (int64_t)us);
	bool hooks_called = false;
	int64_t retry_by_wall_ms = 0;
	/* The alert gate before the hooks: no hook is asked while it holds grants. */
	struct gate_written *aw = gate_written_get(g, nd->name);
	if (aw)
		aw->alert_wait = false;
	if (d.outcome == POL_GATE_GRANT &&
	    gate_alert_check(g, s, &d, now_wall_ms, &retry_by_wall_ms) == GATE_ALERT_WAIT) {
		if (aw)
			aw->alert_wait = true;
		return true; /* decided when it answers; the round goes on */
	}
	if (d.outcome != POL_GATE_GRANT || !d.nverdicts)
		gate_hooks_drop(g, nd->name); /* answers it no longer needs, if any */
	else {
		if (!gate_hooks_answered(g, nd->name) &&
		    hooks_wait(gate_written_get(g, nd->name), nd, now_wall_ms))
			return true;
		switch (gate_hooks_step(g, s, nd, name, &d, ledger, now_wall_ms, arena)) {
		case GATE_HOOKS_NONE:
			break;
		case GATE_HOOKS_ANSWERED:
			hooks_called = true;
			/* Hooks take time: the answer is dated when it is known. */
			now_wall_ms = ng_now_wall_ms();
			break;
		case GATE_HOOKS_ASKED:
		case GATE_HOOKS_WAIT:
			return true; /* decided when they answer; the round goes on */
		case GATE_HOOKS_AGAIN:
			g->again_wall_ms = ng_now_wall_ms() + AGAIN_MS;
			return false;
		}
		if (!gate_leading(g))
			return false;
	}
	ng_prom_add(&g->decisions[d.outcome], 1);
	struct gate_write wr;
	if (!plan_write(g, s, cfg, gate_written_get(g, nd->name), nd, &d, now_wall_ms,
			retry_by_wall_ms, &wr))
		return true; /* nothing new to say */
	/* A paced budget's interval starts before its grant is written, never after. */
	if (d.outcome == POL_GATE_GRANT && !gate_pacing_before_grant(g, s, &d, now_wall_ms)) {
		g->again_wall_ms = ng_now_wall_ms() + AGAIN_MS;
		return false;
	}
	return write_decision(g, s, ledger, nd, name, &wr, hooks_called, us, arena);
}

/* ---- the round ---- */

static void decide_pending(struct gate *g, const struct kube_snapshot *s,
			   struct pol_gate_config *cfg, struct pol_ledger *ledger, bool changed,
			   int64_t now_wall_ms, struct ng_arena *arena)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd **c = malloc((n ? n : 1) * sizeof(*c));
	if (!c)
		return;
	size_t nc = 0;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < n; i++)
		if (!nds[i].deleting &&
		    (nds[i].state == KUBE_ND_UNKNOWN || nds[i].state == KUBE_ND_PENDING))
			c[nc++] =
			    &nds[i]; /* the whole queue is ranked, even when few are decided */
	if (pol_rank_pending(s, cfg, c, nc, arena) != NG_OK)
		nc = 0;
	/* Requests whose hooks have answered held their share while they waited: they are
	 * decided first, before any other request can take it. */
	for (size_t i = 0; i < nc && !atomic_load(g->stop) && gate_leading(g); i++) {
		if (!gate_hooks_answered(g, c[i]->name))
			continue;
		ng_arena_reset(arena);
		if (!decide_one(g, s, cfg, ledger, c[i], ng_intern_str(pool, c[i]->name, NULL),
				now_wall_ms, arena))
			goto out;
	}
	for (size_t i = 0; i < nc && !atomic_load(g->stop) && gate_leading(g); i++) {
		/* Nothing changed since the last round: only retries that fell due are decided. */
		const struct gate_written *w = gate_written_get(g, c[i]->name);
		bool due = w && w->next_retry_wall_ms && now_wall_ms >= w->next_retry_wall_ms;
		if (!changed && !due && c[i]->state != KUBE_ND_UNKNOWN)
			continue;
		ng_arena_reset(arena);
		if (!decide_one(g, s, cfg, ledger, c[i], ng_intern_str(pool, c[i]->name, NULL),
				now_wall_ms, arena))
			break;
	}
out:
	free(c);
}

void gate_round(struct gate *g, const struct kube_snapshot *s, bool changed, int64_t now_wall_ms)
{
	struct pol_gate_config cfg;
	g->round_mono_us = ng_now_mono_us();
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *ledger = pol_ledger_create(s);
	struct ng_arena *arena = ng_arena_create(ROUND_ARENA_BYTES);
	if (ledger) {
		pol_ledger_set_now(ledger, now_wall_ms);
		pol_ledger_use_cache(ledger, g->pools);
	}
	if (!ledger || !arena || ledger_add_inflight(g, s, ledger, now_wall_ms) != NG_OK ||
	    gate_hooks_hold(g, s, ledger) != NG_OK ||
	    gate_pacing_track(g, s, ledger, now_wall_ms) != NG_OK) {
		ng_prom_add(&g->errors, 1);
		goto out;
	}
	/* Events and hook results wait until the round's decisions are written. */
	g->deferring = true;
	decide_pending(g, s, &cfg, ledger, changed, now_wall_ms, arena);
	int64_t term_next;
	if ((changed || gate_terms_due(g, now_wall_ms, &term_next)) && gate_leading(g))
		gate_tend_finalizers(g, s, now_wall_ms);
	gate_flush_later(g, now_wall_ms);
	/* After the decisions: ending a grant frees nothing in this round's ledger. */
	if (gate_leading(g))
		gate_end_grants(g, s, now_wall_ms, arena);
	if (gate_leading(g))
		gate_tend_leases(g, s, now_wall_ms);
	/* A window of a budget opened or closed: its limit in force, and its status, changed.
	 * The next pass finds the next edge. */
	if (g->budgets_edge_wall_ms && now_wall_ms >= g->budgets_edge_wall_ms) {
		g->budgets_edge_wall_ms = 0;
		g->budgets_dirty = true;
	}
	g->budgets_dirty |= changed;
	int64_t since = now_wall_ms - g->budgets_written_wall_ms;
	if (g->budgets_dirty && since >= BUDGET_STATUS_MS && gate_leading(g) &&
	    (since >= BUDGET_DEFER_MAX_MS || !gate_news(g))) {
		gate_write_budget_status(g, s, ledger, now_wall_ms, arena);
		/* Statuses left for the next pass: it comes BUDGET_MORE_MS from now. */
		g->budgets_written_wall_ms =
		    g->budgets_more ? now_wall_ms - BUDGET_STATUS_MS + BUDGET_MORE_MS : now_wall_ms;
		g->budgets_dirty = g->budgets_more;
	}
out:
	ng_arena_destroy(arena);
	pol_ledger_destroy(ledger);
}

/* The earliest wall time something is due without a change: a retry, the end of an inflight
 * grant's hold, budget status, a decision to try again. 0: nothing. */
static int64_t next_due_wall_ms(const struct gate *g)
{
	int64_t due = g->again_wall_ms;
	if (g->nlater) /* Events and hook results still to write: a round now */
		return ng_now_wall_ms();
	for (size_t i = 0; i < g->nw; i++)
		if (g->w[i].next_retry_wall_ms && (!due || g->w[i].next_retry_wall_ms < due) &&
		    !(g->w[i].alert_wait && g->alert_job))
			due = g->w[i].next_retry_wall_ms;
	for (size_t i = 0; i < g->ninf; i++)
		if (!due || g->inf[i].until_wall_ms < due)
			due = g->inf[i].until_wall_ms;
	/* The next grant to end: the gate wakes when it is due, not by polling. */
	if (g->lifecycle_next_wall_ms && (!due || g->lifecycle_next_wall_ms < due))
		due = g->lifecycle_next_wall_ms;
	/* A medik8s Lease to renew, to take over once expired, or to write again. */
	if (g->leases_next_wall_ms && (!due || g->leases_next_wall_ms < due))
		due = g->leases_next_wall_ms;
	if (g->budgets_dirty) {
		int64_t b = g->budgets_written_wall_ms + BUDGET_STATUS_MS;
		if (!due || b < due)
			due = b;
	}
	/* A /terminate call to try again, or to give up on. */
	int64_t term_next;
	if (gate_terms_due(g, ng_now_wall_ms(), &term_next))
		return ng_now_wall_ms();
	if (term_next && (!due || term_next < due))
		due = term_next;
	/* The next window edge of a budget: its status follows the limit in force. */
	if (g->budgets_edge_wall_ms && (!due || g->budgets_edge_wall_ms < due))
		due = g->budgets_edge_wall_ms;
	return due;
}

/* A new term starts from what the cache says. */
static void forget(struct gate *g)
{
	gate_hooks_forget(g);
	gate_alert_forget(g);
	gate_lifecycle_forget(g);
	gate_pacing_forget(g);
	g->leases_next_wall_ms = 0;
	while (g->nlater) /* a new term writes only what it decides itself */
		gate_later_free(&g->later[--g->nlater]);
	g->nw = 0;
	g->nbw = 0;
	ng_map_finish(&g->bw_by_key);
	g->budgets_dirty = true;
	g->budgets_edge_wall_ms = 0;
	ng_map_finish(&g->w_by_name);
	while (g->ninf)
		inflight_drop(g, 0);
	g->sync_needed = true;
	g->sync_rv = 0;
	g->sync_since_wall_ms = 0;
}

/* Retry of a failed read of the version a new term waits for. */
#define SYNC_RETRY_MS 1000

/* Whether a new term may decide on @s: only once the cache shows NodeDisruptions as new as the
 * API server held them when the term began (read once per term, with a list). Otherwise sets
 * *@ret_due_wall_ms to when to look again (0: at the next publish). */
static bool synced_for_term(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms,
			    int64_t *ret_due_wall_ms)
{
	*ret_due_wall_ms = 0;
	if (g->sync_needed) {
		struct ng_err err = {0};
		uint64_t rv = 0;
		if (!g->sync_since_wall_ms)
			g->sync_since_wall_ms = now_wall_ms;
		if (kube_newest_rv(g->client, KUBE_RES_NDS, &rv, &err) != NG_OK) {
			struct ng_logline l;
			if (ng_log_begin(
				&l, NG_LOG_WARN, "gate",
				"cannot read NodeDisruptions' versions: deciding nothing yet")) {
				ng_log_str(&l, "err", err.msg);
				ng_log_end(&l);
			}
			*ret_due_wall_ms = now_wall_ms + SYNC_RETRY_MS;
			return false;
		}
		g->sync_needed = false;
		g->sync_rv = rv;
		struct ng_logline l;
		if (rv && kube_snapshot_rv(s, KUBE_RES_NDS) < rv &&
		    ng_log_begin(&l, NG_LOG_INFO, "gate",
				 "leading: deciding nothing until the cache catches up")) {
			ng_log_i64(&l, "rv", (int64_t)rv);
			ng_log_i64(&l, "cache_rv", (int64_t)kube_snapshot_rv(s, KUBE_RES_NDS));
			ng_log_end(&l);
		}
	}
	if (g->sync_rv && kube_snapshot_rv(s, KUBE_RES_NDS) < g->sync_rv)
		return false; /* the watch brings it: every publish wakes the gate */
	if (g->sync_since_wall_ms) {
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_INFO, "gate", "leading: the cache has caught up")) {
			ng_log_i64(&l, "waited_ms", now_wall_ms - g->sync_since_wall_ms);
			ng_log_i64(&l, "rv", (int64_t)g->sync_rv);
			ng_log_end(&l);
		}
	}
	g->sync_rv = 0;
	g->sync_since_wall_ms = 0;
	return true;
}

/* The runtime's step: a round when the cache changed, the term changed or something fell due.
 * Woken by every publish; returns the next due time. */
static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct gate *g = ctx;
	g->client = kube_runtime_client(rt);
	int64_t now_mono_us = ng_now_mono_us();
	if (!gate_leading(g)) {
		forget(g);
		return KUBE_RUNTIME_IDLE; /* the lease wakes us when it is gained */
	}
	uint64_t term = g->cfg.leader ? leader_term(g->cfg.leader) : 1;
	if (term != g->term)
		forget(g); /* lost and regained between two steps: still a new term */
	uint64_t gen = kube_store_generation(g->cfg.store);
	if (gen == 0)
		return KUBE_RUNTIME_IDLE; /* nothing to decide on before the first publish */
	int64_t now_wall_ms = ng_now_wall_ms();
	if (g->sync_needed || g->sync_rv) {
		struct kube_snapshot *s = kube_store_acquire(g->cfg.store);
		int64_t again_wall_ms;
		bool ok = synced_for_term(g, s, now_wall_ms, &again_wall_ms);
		kube_snapshot_release(s);
		if (!ok)
			return again_wall_ms ? now_mono_us + (again_wall_ms - now_wall_ms) * 1000
					     : KUBE_RUNTIME_IDLE;
	}
	int64_t due = next_due_wall_ms(g);
	bool answered = atomic_exchange(&g->hooks_answered, false);
	answered |= atomic_exchange(&g->alert_answered, false);
	bool changed = gen != g->seen_generation || term != g->term || answered ||
		       (g->again_wall_ms && now_wall_ms >= g->again_wall_ms);
	if (changed)
		g->again_wall_ms = 0;
	if (changed || (due && now_wall_ms >= due)) {
		g->seen_generation = gen;
		g->term = term;
		struct kube_snapshot *s = kube_store_acquire(g->cfg.store);
		gate_round(g, s, changed, now_wall_ms);
		kube_snapshot_release(s);
	}
	due = next_due_wall_ms(g);
	return due ? now_mono_us + (due - ng_now_wall_ms()) * 1000 : KUBE_RUNTIME_IDLE;
}

struct gate *gate_create(const struct gate_config *cfg, struct kube_client *client)
{
	struct gate *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = *cfg;
	g->client = client;
	g->stop = &never_stop;
	pthread_mutex_init(&g->metrics_mu, NULL);
	pthread_mutex_init(&g->wake_mu, NULL);
	gate_grant_latency_init(g);
	ng_prom_hist_init(&g->decision_duration, gate_decision_buckets_s, GATE_DECISION_BUCKETS);
	gate_hooks_init(g);
	if (g->cfg.retry_initial_ms <= 0)
		g->cfg.retry_initial_ms = 5000;
	if (g->cfg.retry_max_ms <= 0)
		g->cfg.retry_max_ms = 300000;
	ng_rng_seed(&g->rng, cfg->identity);
	g->pools = pol_scope_cache_create();
	if (!g->pools || gate_hook_deny_find(cfg->kube, &g->deny, &g->ndeny) != NG_OK) {
		gate_destroy(g);
		return NULL;
	}
	return g;
}

struct gate *gate_start(const struct gate_config *cfg, struct ng_err *reterr)
{
	struct gate *g = gate_create(cfg, NULL);
	if (!g) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	const struct scaffold_config sc = {.name = "gate",
					   .kube = cfg->kube,
					   .store = cfg->store,
					   .watch = cfg->watch,
					   .leader = cfg->leader,
					   .step = step,
					   .ctx = g};
	g->rt = scaffold_create(&sc, reterr);
	if (g->rt) {
		g->client = kube_runtime_client(g->rt);
		pthread_mutex_lock(&g->wake_mu);
		g->wake_rt = g->rt;
		pthread_mutex_unlock(&g->wake_mu);
		g->stop = kube_runtime_stop_flag(g->rt);
	}
	if (!g->rt || kube_runtime_start(g->rt, reterr) != NG_OK) {
		gate_stop(g);
		return NULL;
	}
	return g;
}

void gate_get_stats(const struct gate *cg, struct gate_stats *ret)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	memset(ret, 0, sizeof(*ret));
	for (int i = 0; i < 3; i++)
		ret->decisions[i] = ng_prom_get(&g->decisions[i]);
	ret->writes = ng_prom_get(&g->writes);
	ret->conflicts = ng_prom_get(&g->conflicts);
	ret->errors = ng_prom_get(&g->errors);
	for (int i = 0; i < POL_END_COUNT; i++)
		ret->ended[i] = ng_prom_get(&g->ends[i]);
	ret->decision_count = ng_prom_get(&g->decision_duration.count);
	ret->decision_us_sum = ng_prom_get(&g->decision_duration.sum_us);
	for (int i = 0; i < GATE_DECISION_BUCKETS; i++)
		ret->decision_buckets[i] = ng_prom_get(&g->decision_duration.buckets[i]);
}

void gate_destroy(struct gate *g)
{
	if (!g)
		return;
	gate_hooks_forget(g);
	gate_alert_forget(g);
	pol_scope_cache_destroy(g->pools);
	free(g->jobs);
	free(g->terms);
	while (g->nlater) /* best effort: what a stopping gate had left is dropped */
		gate_later_free(&g->later[--g->nlater]);
	free(g->later);
	while (g->ninf)
		inflight_drop(g, 0);
	free(g->inf);
	free(g->w);
	free(g->bw);
	free(g->gauges);
	ng_map_finish(&g->bw_by_key);
	free(g->hc);
	free(g->deny);
	free(g->ended);
	gate_pacing_forget(g);
	pthread_mutex_destroy(&g->metrics_mu);
	pthread_mutex_destroy(&g->wake_mu);
	ng_map_finish(&g->w_by_name);
	free(g);
}

void gate_stop(struct gate *g)
{
	if (!g)
		return;
	/* A hook's thread that ends from now on wakes no one: the runtime is going. */
	pthread_mutex_lock(&g->wake_mu);
	g->wake_rt = NULL;
	pthread_mutex_unlock(&g->wake_mu);
	scaffold_stop(g->rt, g->cfg.leader); /* joins the thread: nothing below races a round */
	gate_destroy(g);
}
