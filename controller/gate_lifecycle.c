/* The gate's ends of grants (policy/lifecycle.h, docs/gate.md "How a maintenance ends"): each
 * round, a request whose deadline or TTL after completion has passed, or one autoRequest made
 * whose evictor is done, gets an Event on itself and on each of its nodes, then a DELETE
 * conditional on its uid, so a request created again under the same name is never ended; the usual
 * release path follows (finalizers, the drainer). And a Granted request whose status.expiresAt is
 * not its deadline gets it rewritten. */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"
#include "policy/lifecycle.h"

#include <stdlib.h>
#include <string.h>

/* A delete that failed (no answer, 5xx) is tried again this much later. */
#define END_AGAIN_MS 1000
/* status.expiresAt rewrites per round (a changed default touches every Granted request); the
 * rest follow MORE_MS later, so decisions never wait behind them. */
#define RESTAMPS_PER_ROUND 16
#define MORE_MS 20

static uint64_t uid_key(const char *uid)
{
	return ng_fnv1a64(NG_FNV64_INIT, uid, strlen(uid));
}

/* This term's record of request @nd's end, or NULL. */
static struct gate_ended *ended_find(struct gate *g, const struct kube_nd *nd)
{
	uint64_t uid = uid_key(nd->uid);
	for (size_t i = 0; i < g->nended; i++)
		if (g->ended[i].name == nd->name && g->ended[i].uid == uid)
			return &g->ended[i];
	return NULL;
}

/* Forgets the ends of requests @s no longer shows (gone, or another object by that name). */
static void ended_prune(struct gate *g, const struct kube_snapshot *s)
{
	for (size_t i = 0; i < g->nended;) {
		const struct kube_nd *nd = kube_snapshot_find_nd(s, g->ended[i].name);
		if (!nd || uid_key(nd->uid) != g->ended[i].uid)
			g->ended[i] = g->ended[--g->nended];
		else
			i++;
	}
}

void gate_lifecycle_forget(struct gate *g)
{
	g->nended = 0;
	g->lifecycle_next_wall_ms = 0;
	g->lifecycle_quiet.valid = false;
}

static void event_on(struct gate *g, const struct kube_ref *about, const char *uid,
		     const char *reason, const char *msg, int64_t now_wall_ms)
{
	const struct kube_event ev = {*about,          reason,      "Normal", msg,
				      g->cfg.identity, now_wall_ms, uid};
	struct kube_write_result r;
	kube_create_event(g->client, &ev, &r);
	kube_write_log("gate", "event not recorded", about, &r);
}

/* What the Event on a request eviction.autoRequest made says of its end (@at: when it fell due). */
static void auto_end_message(const struct pol_end *e, const char *at, char *msg, size_t cap)
{
	if (e->reason == POL_END_AUTO_IDLE)
		ng_fmt(msg, cap,
		       "no eviction used this request made by eviction.autoRequest since its idle "
		       "time passed at %s (its evictor is done or gave up): nodegate deletes it",
		       at);
	else if (e->reason == POL_END_NODE_UNCORDONED)
		ng_fmt(
		    msg, cap,
		    "its node was uncordoned after being cordoned while the request existed (the "
		    "maintenance is over): nodegate deletes this request made by "
		    "eviction.autoRequest");
	else
		ng_fmt(msg, cap,
		       "its node is deleted: nodegate deletes this request made by "
		       "eviction.autoRequest");
}

/* The Events of @e's end, written now (before the delete, not queued): on the request, then on
 * each of its nodes. */
static void end_events(struct gate *g, const struct kube_snapshot *s, const struct pol_end *e,
		       const char *name, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const struct kube_nd *nd = e->nd;
	char at[32], msg[320];
	ng_format_rfc3339_ms(e->due_wall_ms, at);
	const char *reason = pol_end_reason_str(e->reason);
	static const char *const why[POL_END_AUTO_IDLE] = {
	    "the grant's deadline passed at %s",
	    "Completed, and its TTL after completion passed at %s",
	    "its drain did not finish by its deadline, %s (drain.onDeadline Release)",
	    "every node of its grant is deleted (seen at %s)"};
	char what[200];
	if (e->reason >= POL_END_AUTO_IDLE) {
		auto_end_message(e, at, msg, sizeof(msg));
	} else {
		ng_fmt(what, sizeof(what), why[e->reason], at);
		ng_fmt(msg, sizeof(msg),
		       "%s: nodegate deletes the request and its %u node(s) are given back", what,
		       nd->ndisrupted);
	}
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	event_on(g, &ref, nd->uid, reason, msg, now_wall_ms);
	ng_fmt(msg, sizeof(msg), "NodeDisruption %s ended (%s at %s): the node is given back", name,
	       reason, at);
	for (uint16_t i = 0; i < nd->ndisrupted && !atomic_load(g->stop); i++) {
		const char *node = ng_intern_str(pool, nd->disrupted[i], NULL);
		const struct kube_node *n = kube_snapshot_find_node(s, nd->disrupted[i]);
		const struct kube_ref about = {KUBE_KIND_NODE, NULL, node ? node : ""};
		if (node && *node)
			event_on(g, &about, n ? n->uid : NULL, reason, msg, now_wall_ms);
	}
}

/* Ends one request: its Events once per term, then the delete, until it is done. */
static void end_one(struct gate *g, const struct kube_snapshot *s, const struct pol_end *e,
		    int64_t now_wall_ms)
{
	const struct kube_nd *nd = e->nd;
	const char *name = ng_intern_str(kube_snapshot_pool(s), nd->name, NULL);
	if (!name || !nd->uid || !*nd->uid)
		return; /* no uid to hold the delete to: never deleted blind */
	struct gate_ended *m = ended_find(g, nd);
	if (m && (m->deleted || now_wall_ms < m->retry_wall_ms))
		return; /* the cache shows the delete soon; or tried again later */
	if (!m) {
		struct gate_ended *p = ng_array_grow(g->ended, &g->capended, g->nended, sizeof(*p));
		if (p) {
			g->ended = p;
			m = &g->ended[g->nended++];
			*m = (struct gate_ended){nd->name, uid_key(nd->uid), false, 0};
		}
		end_events(g, s, e, name, now_wall_ms);
	}
	if (!gate_leading(g))
		return; /* the lease was lost meanwhile: the next leader ends it */
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct kube_write_result r;
	kube_delete_uid(g->client, &ref, nd->uid, &r);
	/* 404: gone already; 409: another object has the name now. Either way, done. */
	bool done = r.outcome == KUBE_WRITE_OK || r.outcome == KUBE_WRITE_GONE ||
		    r.outcome == KUBE_WRITE_CONFLICT;
	if (r.outcome == KUBE_WRITE_OK)
		ng_prom_add(&g->ends[e->reason], 1);
	else if (!done)
		ng_prom_add(&g->errors, 1);
	if (m) {
		m->deleted = done;
		m->retry_wall_ms = done ? 0 : now_wall_ms + END_AGAIN_MS;
	}
	kube_write_log("gate", "request not ended", &ref, &r);
	struct ng_logline l;
	if (r.outcome == KUBE_WRITE_OK && ng_log_begin(&l, NG_LOG_INFO, "gate", "request ended")) {
		ng_log_str(&l, "nd", name);
		ng_log_str(&l, "reason", pol_end_reason_str(e->reason));
		ng_log_end(&l);
	}
}

/* What a restamp writes: status.expiresAt and status.deletedNodes of one request. */
struct restamp_ctx {
	const struct pol_expiry *x;
	const struct ng_intern *pool;
};

static void expires_body(struct ng_jw *w, void *ctx)
{
	const struct restamp_ctx *c = ctx;
	const struct pol_expiry *x = c->x;
	if (x->expires_stale) {
		ng_jw_key(w, "expiresAt");
		if (x->expires_wall_ms)
			ng_jw_time_ms(w, x->expires_wall_ms);
		else
			ng_jw_null(w);
	}
	if (!x->deleted_stale)
		return;
	ng_jw_key(w, "deletedNodes");
	if (!x->ndeleted) {
		ng_jw_null(w);
		return;
	}
	ng_jw_arr(w);
	for (uint16_t i = 0; i < x->ndeleted; i++) {
		const char *node = ng_intern_str(c->pool, x->deleted[i], NULL);
		ng_jw_str(w, node ? node : "");
	}
	ng_jw_arr_end(w);
}

/* Rewrites status.expiresAt and status.deletedNodes of @x->nd, conditional on the version it was
 * read at. */
static void restamp(struct gate *g, const struct kube_snapshot *s, const struct pol_expiry *x)
{
	const char *name = ng_intern_str(kube_snapshot_pool(s), x->nd->name, NULL);
	if (!name)
		return;
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct restamp_ctx c = {x, kube_snapshot_pool(s)};
	struct kube_write_result r;
	kube_patch_status(g->client, &ref, x->nd->rv, expires_body, &c, &r);
	if (r.outcome == KUBE_WRITE_OK)
		ng_prom_add(&g->writes, 1);
	else if (r.outcome == KUBE_WRITE_CONFLICT || r.outcome == KUBE_WRITE_GONE)
		ng_prom_add(&g->conflicts, 1); /* changed meanwhile: looked at again */
	else
		ng_prom_add(&g->errors, 1);
	kube_write_log("gate", "expiresAt and deletedNodes not written", &ref, &r);
}

/* The earlier of @a and @b, 0 being none. */
static int64_t earlier(int64_t a, int64_t b)
{
	return !a || (b && b < a) ? b : a;
}

void gate_end_grants(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms,
		     struct ng_arena *arena)
{
	ended_prune(g, s);
	uint64_t nds = kube_snapshot_table_serial(s, KUBE_RES_NDS),
		 nodes = kube_snapshot_table_shape(s, KUBE_RES_NODES),
		 ngcs = kube_snapshot_table_serial(s, KUBE_RES_NGCS);
	if (g->lifecycle_quiet.valid && g->lifecycle_quiet.nds == nds &&
	    g->lifecycle_quiet.nodes == nodes && g->lifecycle_quiet.ngcs == ngcs &&
	    (!g->lifecycle_next_wall_ms || now_wall_ms < g->lifecycle_next_wall_ms))
		return;
	g->lifecycle_quiet.valid = false;
	struct pol_lifecycle l;
	ng_arena_reset(arena);
	if (pol_lifecycle_ends(s, now_wall_ms, arena, &l) != NG_OK) {
		ng_prom_add(&g->errors, 1);
		g->lifecycle_next_wall_ms = now_wall_ms + END_AGAIN_MS;
		return;
	}
	if (!l.nends && !l.nstale) {
		g->lifecycle_quiet.valid = true;
		g->lifecycle_quiet.nds = nds;
		g->lifecycle_quiet.nodes = nodes;
		g->lifecycle_quiet.ngcs = ngcs;
	}
	int64_t next = l.next_wall_ms;
	for (size_t i = 0; i < l.nends && !atomic_load(g->stop) && gate_leading(g); i++) {
		end_one(g, s, &l.ends[i], now_wall_ms);
		const struct gate_ended *m = ended_find(g, l.ends[i].nd);
		if (m && !m->deleted)
			next = earlier(next, m->retry_wall_ms);
	}
	size_t k = 0, written = 0;
	for (; k < l.nstale && written < RESTAMPS_PER_ROUND && !atomic_load(g->stop) &&
	       gate_leading(g);
	     k++) {
		const struct gate_ended *m = ended_find(g, l.stale[k].nd);
		if (m && m->deleted)
			continue; /* ended: nothing to show any more */
		restamp(g, s, &l.stale[k]);
		written++;
	}
	if (k < l.nstale)
		next = earlier(next, now_wall_ms + MORE_MS);
	g->lifecycle_next_wall_ms = next;
}
