/* The gate's writes about requests: a decision's status, Events, finalizers (DESIGN.md §4). */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

/* disruptedDisruptionBudgets of a decision with every budget of a 5,000-node pool fits. */
#define VERDICTS_CAP_BYTES (4u << 20)

struct status_body {
	const struct kube_snapshot *s;
	const struct kube_nd *nd;
	const struct gate_write *wr;
	const char **names; /* the decision's nodes, sorted */
	const char *verdicts;
	size_t nverdicts;
};

/* Condition Unsatisfiable: True while a budget can never allow the request, False once a
 * request that was so fits again; absent from requests that never were (no noise on every
 * status). Its lastTransitionTime stays while its status does. */
static void unsatisfiable_condition(struct ng_jw *w, const struct status_body *sb)
{
	const struct pol_gate_decision *d = sb->wr->d;
	const struct kube_nd_detail *x = sb->nd->detail;
	const struct kube_condition *was = NULL;
	for (uint16_t i = 0; x && i < x->nconditions && !was; i++)
		if (strcmp(x->conditions[i].type, "Unsatisfiable") == 0)
			was = &x->conditions[i];
	if (!d->unsatisfiable && !was)
		return;
	uint8_t now = d->unsatisfiable ? KUBE_COND_TRUE : KUBE_COND_FALSE;
	ng_jw_obj(w);
	ng_jw_kstr(w, "type", "Unsatisfiable");
	ng_jw_kstr(w, "status", d->unsatisfiable ? "True" : "False");
	ng_jw_kstr(w, "reason", d->unsatisfiable ? "ExceedsBudget" : "WithinBudgets");
	ng_jw_kstr(w, "message",
		   d->unsatisfiable ? d->reason
				    : "no budget's limit is below what the request "
				      "needs");
	ng_jw_key(w, "lastTransitionTime");
	ng_jw_time(w, was && was->status == now && was->since_ms ? was->since_ms
								 : sb->wr->now_wall_ms);
	ng_jw_obj_end(w);
}

static void status_body(struct ng_jw *w, void *ctx)
{
	const struct status_body *sb = ctx;
	const struct pol_gate_decision *d = sb->wr->d;
	const char *outcome = pol_gate_outcome_str(d->outcome);
	ng_jw_kstr(w, "state", outcome);
	ng_jw_key(w, "disruptedNodes");
	ng_jw_arr(w);
	for (size_t i = 0; i < d->nnodes; i++)
		ng_jw_str(w, sb->names[i]);
	ng_jw_arr_end(w);
	ng_jw_ki64(w, "nodeCount", (int64_t)d->nnodes);
	ng_jw_key(w, "disruptedDisruptionBudgets");
	ng_jw_raw(w, sb->verdicts, sb->nverdicts);
	ng_jw_ki64(w, "retryCount", sb->wr->retry_count);
	ng_jw_key(w, "nextRetryDate");
	if (sb->wr->next_retry_wall_ms)
		ng_jw_time_ms(w, sb->wr->next_retry_wall_ms);
	else
		ng_jw_null(w);
	if (d->outcome == POL_GATE_GRANT) {
		ng_jw_key(w, "grantedAt");
		ng_jw_time_ms(w, sb->wr->now_wall_ms);
		if (sb->wr->expires_wall_ms) {
			ng_jw_key(w, "expiresAt");
			ng_jw_time_ms(w, sb->wr->expires_wall_ms);
		}
	}
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	ng_jw_obj(w);
	ng_jw_kstr(w, "type", "Granted");
	ng_jw_kstr(w, "status", d->outcome == POL_GATE_GRANT ? "True" : "False");
	ng_jw_kstr(w, "reason", outcome);
	ng_jw_kstr(w, "message", d->reason);
	ng_jw_key(w, "lastTransitionTime");
	ng_jw_time(w, sb->wr->now_wall_ms);
	ng_jw_obj_end(w);
	unsatisfiable_condition(w, sb);
	ng_jw_arr_end(w);
}

enum kube_write_outcome gate_write_status(struct gate *g, const struct kube_snapshot *s,
					  const struct kube_nd *nd, const struct gate_write *wr,
					  struct ng_arena *arena, struct ng_err *reterr)
{
	struct kube_write_result r = {KUBE_WRITE_FAILED, 0, {0}};
	struct ng_buf verdicts;
	ng_buf_init(&verdicts, VERDICTS_CAP_BYTES);
	const char **names = pol_node_names_sorted(s, wr->d, arena);
	const char *name = ng_intern_str(kube_snapshot_pool(s), nd->name, NULL);
	if (!names ||
	    pol_verdicts_json(s, wr->d->verdicts, wr->d->nverdicts, nd, &verdicts) != NG_OK) {
		(void)ng_err_set(&r.err, NG_ENOMEM, 0, "status body: out of memory");
	} else {
		struct status_body sb = {s, nd, wr, names, verdicts.data, verdicts.len};
		const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
		if (wr->d->outcome == POL_GATE_GRANT && nd->state == KUBE_ND_UNKNOWN &&
		    nd->read_mono_us)
			ng_prom_hist_observe_us(&g->grant_latency,
						ng_now_mono_us() - nd->read_mono_us);
		kube_patch_status(g->client, &ref, nd->rv, status_body, &sb, &r);
	}
	ng_buf_finish(&verdicts);
	if (reterr)
		*reterr = r.err;
	return r.outcome;
}

static const double grant_latency_buckets_s[] = {0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005,
						 0.01,   0.025,   0.05,   0.1,   1,     10};

void gate_grant_latency_init(struct gate *g)
{
	ng_prom_hist_init(&g->grant_latency, grant_latency_buckets_s,
			  sizeof(grant_latency_buckets_s) / sizeof(grant_latency_buckets_s[0]));
}

ng_status gate_render_latency_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	ng_status st =
	    ng_prom_header(out, "nodegate_gate_grant_latency_seconds", NG_PROM_HISTOGRAM,
			   "New NodeDisruptions granted at their first decision: from the "
			   "watch reading the request to its status write being sent.");
	return st ? st
		  : ng_prom_hist_render(out, "nodegate_gate_grant_latency_seconds", NULL, 0,
					&g->grant_latency);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void gate_later_free(struct gate_later *l)
{
	const char *const s[] = {l->ns, l->name, l->uid, l->reason, l->type, l->msg};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		free((void *)(uintptr_t)s[i]); /* the queue's own copies */
}

bool gate_defer(struct gate *g, const struct gate_later *l)
{
	if (!g->deferring)
		return false;
	struct gate_later *p = ng_array_grow(g->later, &g->caplater, g->nlater, sizeof(*p));
	if (!p)
		return true;
	g->later = p;
	struct gate_later *q = &g->later[g->nlater];
	*q = *l;
	q->ns = dup_or_null(l->ns);
	q->name = dup_or_null(l->name);
	q->uid = dup_or_null(l->uid);
	q->reason = dup_or_null(l->reason);
	q->type = dup_or_null(l->type);
	q->msg = dup_or_null(l->msg);
	if ((l->name && !q->name) || (l->ns && !q->ns) || (l->uid && !q->uid) ||
	    (l->reason && !q->reason) || (l->type && !q->type) || (l->msg && !q->msg))
		gate_later_free(q);
	else
		g->nlater++;
	return true;
}

static void event_now(struct gate *g, const struct kube_ref *about, const char *uid,
		      const char *reason, const char *type, const char *msg, int64_t now_wall_ms)
{
	struct kube_event ev = {*about, reason, type, msg, g->cfg.identity, now_wall_ms, uid};
	struct kube_write_result r;
	kube_create_event(g->client, &ev, &r);
	kube_write_log("gate", "event not recorded", about, &r);
}

static void event(struct gate *g, const struct kube_ref *about, const char *uid, const char *reason,
		  const char *type, const char *msg, int64_t now_wall_ms)
{
	const struct gate_later l = {.kind = about->kind,
				     .ns = about->ns,
				     .name = about->name,
				     .uid = uid,
				     .reason = reason,
				     .type = type,
				     .msg = msg,
				     .now_wall_ms = now_wall_ms};
	if (!gate_defer(g, &l))
		event_now(g, about, uid, reason, type, msg, now_wall_ms);
}

bool gate_news(const struct gate *g)
{
	return atomic_load(&g->hooks_answered) ||
	       (g->cfg.store && kube_store_generation(g->cfg.store) != g->seen_generation);
}

void gate_flush_later(struct gate *g, int64_t now_wall_ms)
{
	g->deferring = false;
	size_t i = 0;
	/* A hook that answers meanwhile, or a change in the cluster, ends the flush: decisions
	 * come first, the rest of the queue after the next round (a request created while a
	 * round wrote its Events waited for all of them). The queue is oldest first; what has
	 * waited long enough is written regardless. */
	for (; i < g->nlater &&
	       (!gate_news(g) || now_wall_ms - g->later[i].now_wall_ms >= GATE_FLUSH_WAIT_MS);
	     i++) {
		struct gate_later *l = &g->later[i];
		if (l->hook_result) {
			gate_write_hook_result(g, l->ns, l->name, &l->c, l->now_wall_ms);
		} else {
			const struct kube_ref about = {l->kind, l->ns, l->name};
			event_now(g, &about, l->uid, l->reason, l->type, l->msg, l->now_wall_ms);
		}
		gate_later_free(l);
	}
	if (i && i < g->nlater) /* (never with NULL: memmove's arguments may not be) */
		memmove(g->later, g->later + i, (g->nlater - i) * sizeof(*g->later));
	g->nlater -= i;
}

void gate_event_nd(struct gate *g, const struct kube_nd *nd, const char *name, const char *reason,
		   const char *type, const char *msg, int64_t now_wall_ms)
{
	const struct kube_ref about = {KUBE_KIND_ND, NULL, name};
	event(g, &about, nd ? nd->uid : NULL, reason, type, msg, now_wall_ms);
}

void gate_event_budget(struct gate *g, enum kube_resource kind, const char *ns, const char *name,
		       const char *uid, const char *reason, const char *type, const char *msg,
		       int64_t now_wall_ms)
{
	const struct kube_ref about = {kind == KUBE_RES_NDBS ? KUBE_KIND_NDB : KUBE_KIND_ADB, ns,
				       name};
	event(g, &about, uid, reason, type, msg, now_wall_ms);
}

static bool has_finalizer(const struct kube_nd *nd, uint32_t fin)
{
	for (uint16_t i = 0; fin != NG_INTERN_NONE && i < nd->nfinalizers; i++)
		if (nd->finalizers[i] == fin)
			return true;
	return false;
}

bool gate_has_finalizer(const struct kube_snapshot *s, const struct kube_nd *nd)
{
	return has_finalizer(
	    nd, ng_intern_find(kube_snapshot_pool(s), GATE_FINALIZER, sizeof(GATE_FINALIZER) - 1));
}

/* Sets metadata.finalizers to the request's list with ours added or removed, carrying the
 * resourceVersion it was read at (another writer's change makes it a 409: the next round looks
 * again). */
enum kube_write_outcome gate_set_finalizer(struct gate *g, const struct kube_snapshot *s,
					   const struct kube_nd *nd, const char *name, bool present,
					   struct ng_arena *arena)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char **cur = ng_arena_alloc(arena, (nd->nfinalizers + 1u) * sizeof(*cur));
	if (!cur) {
		ng_prom_add(&g->errors, 1);
		return KUBE_WRITE_FAILED;
	}
	for (uint16_t i = 0; i < nd->nfinalizers; i++)
		cur[i] = ng_intern_str(pool, nd->finalizers[i], NULL);
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct kube_write_result r;
	kube_set_finalizer(g->client, &ref, nd->rv, cur, nd->nfinalizers, GATE_FINALIZER, present,
			   NULL, &r);
	if (r.outcome == KUBE_WRITE_OK)
		ng_prom_add(&g->writes, 1);
	else if (r.outcome == KUBE_WRITE_CONFLICT || r.outcome == KUBE_WRITE_GONE)
		ng_prom_add(&g->conflicts, 1); /* changed or gone meanwhile */
	else
		ng_prom_add(&g->errors, 1);
	kube_write_log("gate", "finalizer not written", &ref, &r);
	return r.outcome;
}

void gate_tend_finalizers(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	uint32_t fin = ng_intern_find(pool, GATE_FINALIZER, sizeof(GATE_FINALIZER) - 1);
	struct ng_arena *arena = ng_arena_create(64u << 10);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; arena && i < n && !atomic_load(g->stop); i++) {
		const struct kube_nd *nd = &nds[i];
		const char *name = ng_intern_str(pool, nd->name, NULL);
		bool has = has_finalizer(nd, fin);
		ng_arena_reset(arena);
		if (nd->deleting && has && !nd->additional_requestors) {
			/* Budgets that prepared for it are told it ended first (gate_hooks.c). */
			if (!gate_hooks_terminate(g, s, nd, name, now_wall_ms))
				continue;
			/* Released: the ledger already skips requests being deleted. */
			if (nd->state == KUBE_ND_GRANTED) {
				char msg[160];
				ng_fmt(msg, sizeof(msg), "released %u node(s)", nd->ndisrupted);
				gate_event_nd(g, nd, name, "Released", "Normal", msg, now_wall_ms);
			}
			(void)gate_set_finalizer(g, s, nd, name, false, arena);
		} else if (!nd->deleting && !has &&
			   (nd->state == KUBE_ND_GRANTED || nd->state == KUBE_ND_PENDING)) {
			(void)gate_set_finalizer(g, s, nd, name, true, arena);
		}
	}
	ng_arena_destroy(arena);
}

/* A health hook's answer as its budget's status.lastHookResult. */
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

void gate_write_hook_result(struct gate *g, const char *ns, const char *name,
			    const struct pol_hook_call *c, int64_t now_wall_ms)
{
	struct hook_result hr = {c, now_wall_ms};
	const struct kube_ref ref = {KUBE_KIND_ADB, ns, name};
	struct kube_write_result r;
	kube_patch_status(g->client, &ref, NULL, hook_result_body, &hr, &r);
	if (r.outcome == KUBE_WRITE_OK)
		ng_prom_add(&g->writes, 1);
	else if (r.outcome != KUBE_WRITE_GONE) /* deleted meanwhile: nothing to record */
		ng_prom_add(&g->errors, 1);
	if (r.outcome != KUBE_WRITE_GONE)
		kube_write_log("gate", "hook result not written", &ref, &r);
}
