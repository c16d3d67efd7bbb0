/* Budget status (DESIGN.md §4: recomputed from the same ledger, written only when it changes)
 * and the budget gauges it yields. */
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/parse.h"
#include "common/prom.h"

#include <stdlib.h>
#include <string.h>

/* ADB status.watchedNodes lists at most this many names (DESIGN.md §3.3). */
#define WATCHED_NAMES_CAP 1000
/* One budget's status: 1,000 node names and its requests. */
#define BODY_CAP_BYTES (1u << 20)

/* What was last written to a budget's status: found by (namespace, name), as a status pass
 * asks once per budget (a linear search made a pass quadratic in the budgets any namespace may
 * create). A NodeDisruptionBudget has no namespace and an ApplicationDisruptionBudget always
 * has one, so the kind is checked, not keyed. */
static struct gate_budget_written *budget_slot(struct gate *g, uint8_t kind, uint32_t ns,
					       uint32_t name)
{
	uint64_t key = (uint64_t)ns << 32 | name;
	uint32_t i;
	if (ng_map_get(&g->bw_by_key, key, &i) && g->bw[i].kind == kind)
		return &g->bw[i];
	struct gate_budget_written *p = ng_array_grow(g->bw, &g->capbw, g->nbw, sizeof(*p));
	if (!p)
		return NULL;
	g->bw = p;
	if (ng_map_put_grow(&g->bw_by_key, key, (uint32_t)g->nbw) != NG_OK)
		return NULL;
	g->bw[g->nbw] = (struct gate_budget_written){kind, ns, name, 0};
	return &g->bw[g->nbw++];
}

struct budget_body {
	const struct kube_snapshot *s;
	enum kube_resource kind;
	const struct pol_budget_status *bs;
};

/* A wall time, or null: a merge patch removes what no longer applies. */
static void time_or_null(struct ng_jw *w, const char *key, int64_t wall_ms)
{
	ng_jw_key(w, key);
	if (wall_ms >= 0)
		ng_jw_time_ms(w, wall_ms);
	else
		ng_jw_null(w);
}

/* The maximum in force now (maxDisruptedNodesNow, maxDisruptionsNow: the spec's field as it
 * applies now, a node count) and where the windows stand (window, for budgets with windows).
 * Written as null when they do not apply, so a merge patch clears an earlier value. */
static void limit_now(struct ng_jw *w, enum kube_resource kind, const struct pol_budget_now *n)
{
	ng_jw_key(w, kind == KUBE_RES_ADBS ? "maxDisruptionsNow" : "maxDisruptedNodesNow");
	if (n->limit_now >= 0 && !n->invalid)
		ng_jw_i64(w, n->limit_now);
	else
		ng_jw_null(w);
	ng_jw_key(w, "window");
	if (!n->has_windows || n->invalid) {
		ng_jw_null(w);
		return;
	}
	ng_jw_obj(w);
	ng_jw_kbool(w, "open", n->window_open);
	ng_jw_kstr(w, "state", n->window_open ? "Open" : "Closed");
	ng_jw_key(w, "index");
	if (n->window >= 0)
		ng_jw_i64(w, n->window);
	else
		ng_jw_null(w);
	time_or_null(w, "closesAt", n->window_open ? n->closes_wall_ms : -1);
	time_or_null(w, "nextOpensAt", n->window_open ? -1 : n->next_opens_wall_ms);
	ng_jw_obj_end(w);
}

static void budget_body(struct ng_jw *w, void *ctx)
{
	const struct budget_body *bb = ctx;
	const struct pol_budget_status *bs = bb->bs;
	const struct ng_intern *pool = kube_snapshot_pool(bb->s);
	ng_jw_key(w, "watchedNodes");
	if (bb->kind == KUBE_RES_ADBS) {
		ng_jw_arr(w);
		for (size_t i = 0; i < bs->watched && i < WATCHED_NAMES_CAP; i++)
			ng_jw_str(w, ng_intern_str(pool, bs->nodes[i], NULL));
		ng_jw_arr_end(w);
		ng_jw_ki64(w, "watchedNodeCount", (int64_t)bs->watched);
	} else {
		ng_jw_i64(w, (int64_t)bs->watched);
		ng_jw_ki64(w, "unavailableNodes", (int64_t)bs->unavailable);
	}
	ng_jw_ki64(w, "currentDisruptions", (int64_t)bs->current);
	ng_jw_ki64(w, "disruptionsAllowed", bs->allowed);
	limit_now(w, bb->kind, &bs->now);
	/* An exclusion in force: until when and why (null otherwise, clearing an earlier one). */
	ng_jw_key(w, "exclusion");
	if (bs->now.excluded && !bs->now.invalid) {
		const char *why = ng_intern_str(pool, bs->now.excluded_reason, NULL);
		ng_jw_obj(w);
		ng_jw_key(w, "until");
		ng_jw_time_ms(w, bs->now.excluded_until);
		ng_jw_kstr(w, "reason", why ? why : "");
		ng_jw_obj_end(w);
	} else {
		ng_jw_null(w);
	}
	/* Pacing: the next grant a minIntervalSeconds allows (null once it has passed), and the
	 * soaking nodes (null without soakSeconds); lastGrantAt is written before each grant. */
	time_or_null(w, "nextGrantAt", bs->now.invalid ? -1 : bs->now.next_grant_wall_ms);
	ng_jw_key(w, "soakingNodes");
	if (!bs->now.soaking_nodes || bs->now.invalid) {
		ng_jw_null(w);
	} else {
		ng_jw_arr(w);
		for (size_t i = 0; i < bs->now.nsoaking_nodes && i < KUBE_MAX_SOAKING; i++) {
			const struct kube_soaking *k = &bs->now.soaking_nodes[i];
			ng_jw_obj(w);
			ng_jw_kstr(w, "name", ng_intern_str(pool, k->node, NULL));
			if (k->until_ms != KUBE_SOAK_NOT_BACK) {
				ng_jw_key(w, "until");
				ng_jw_time_ms(w, k->until_ms);
			}
			ng_jw_obj_end(w);
		}
		ng_jw_arr_end(w);
	}
	ng_jw_key(w, "disruptions");
	ng_jw_arr(w);
	for (size_t i = 0; i < bs->nnds; i++) {
		ng_jw_obj(w);
		ng_jw_kstr(w, "name", ng_intern_str(pool, bs->nd_names[i], NULL));
		ng_jw_kstr(w, "state", bs->nd_states[i] == KUBE_ND_GRANTED ? "Granted" : "Pending");
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	ng_jw_obj(w);
	ng_jw_kstr(w, "type", "Valid");
	ng_jw_kstr(w, "status", bs->invalid ? "False" : "True");
	ng_jw_kstr(w, "reason", bs->invalid ? "Invalid" : "Valid");
	ng_jw_obj_end(w);
	ng_jw_arr_end(w);
}

/* The status as it is written, in @out (one object). */
static ng_status status_json(const struct budget_body *bb, struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	budget_body(&w, (void *)(uintptr_t)bb);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* The gauges a budget status pass gathers, published at its end. */
struct gauges {
	struct gate_budget_gauge *v;
	size_t n, cap;
};

/* One budget: its gauges, and its status when it changed. */
static void one_budget(struct gate *g, const struct kube_snapshot *s, struct pol_ledger *ledger,
		       enum kube_resource kind, size_t i, int64_t now_wall_ms,
		       struct ng_arena *arena, struct gauges *gauges, size_t *writes_left)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t nn;
	const struct kube_budget_common *c = kind == KUBE_RES_NDBS
						 ? &kube_snapshot_ndbs(s, &nn)[i].b
						 : &kube_snapshot_adbs(s, &nn)[i].b;
	ng_arena_reset(arena);
	struct pol_budget_status bs;
	if (pol_budget_status(s, ledger, kind, i, now_wall_ms, arena, &bs) != NG_OK)
		return;
	int64_t edge = bs.now.edge_wall_ms;
	if (edge > now_wall_ms && (!g->budgets_edge_wall_ms || edge < g->budgets_edge_wall_ms))
		g->budgets_edge_wall_ms = edge;
	const char *ns = c->ns == NG_INTERN_NONE ? NULL : ng_intern_str(pool, c->ns, NULL);
	const char *nm = ng_intern_str(pool, c->name, NULL);
	struct gate_budget_gauge *gp =
	    ng_array_grow(gauges->v, &gauges->cap, gauges->n, sizeof(*gp));
	if (gp) { /* else this budget has no gauges until the next pass */
		gauges->v = gp;
		gauges->v[gauges->n++] = (struct gate_budget_gauge){
		    (uint8_t)kind, c->ns, c->name, bs.allowed, (int64_t)bs.current};
	}
	struct budget_body bb = {s, kind, &bs};
	struct ng_buf status;
	ng_buf_init(&status, BODY_CAP_BYTES);
	/* Written once: hashed to skip an unchanged status, then sent as it is. */
	uint64_t h = status_json(&bb, &status) == NG_OK
			 ? ng_fnv1a64(NG_FNV64_INIT, status.data, status.len)
			 : 0;
	struct gate_budget_written *w = budget_slot(g, (uint8_t)kind, c->ns, c->name);
	if (h && (!w || w->hash != h) && *writes_left == 0) {
		g->budgets_more = true; /* written by a later pass */
	} else if (h && (!w || w->hash != h)) {
		(*writes_left)--;
		const struct kube_ref ref = {kind == KUBE_RES_NDBS ? KUBE_KIND_NDB : KUBE_KIND_ADB,
					     ns, nm};
		struct kube_write_result r;
		kube_patch_status_json(g->client, &ref, NULL, status.data, status.len, &r);
		if (r.outcome == KUBE_WRITE_OK && w)
			w->hash = h;
		else if (r.outcome != KUBE_WRITE_GONE && r.outcome != KUBE_WRITE_OK)
			ng_prom_add(&g->errors, 1); /* gone meanwhile: nothing to do */
		if (r.outcome != KUBE_WRITE_GONE)
			kube_write_log("gate", "budget status not written", &ref, &r);
	}
	ng_buf_finish(&status);
}

/* Swaps in the gauges /metrics shows; takes @gauges' array. */
static void publish_gauges(struct gate *g, struct gauges *gauges)
{
	pthread_mutex_lock(&g->metrics_mu);
	struct gate_budget_gauge *old = g->gauges;
	g->gauges = gauges->v;
	g->ngauges = gauges->n;
	pthread_mutex_unlock(&g->metrics_mu);
	free(old);
	*gauges = (struct gauges){0};
}

void gate_write_budget_status(struct gate *g, const struct kube_snapshot *s,
			      struct pol_ledger *ledger, int64_t now_wall_ms,
			      struct ng_arena *arena)
{
	struct gauges gauges = {0};
	/* A pass writes a few statuses at most, so decisions never wait behind a hundred of
	 * them: the rest follow in passes a few milliseconds apart (gate_round()). */
	size_t writes_left = BUDGET_WRITES_PER_PASS;
	g->budgets_more = false;
	g->budgets_edge_wall_ms = 0; /* found again by this pass */
	for (int k = 0; k < 2 && !atomic_load(g->stop); k++) {
		enum kube_resource kind = k ? KUBE_RES_ADBS : KUBE_RES_NDBS;
		size_t n = kube_snapshot_count(s, kind);
		for (size_t i = 0; i < n; i++)
			one_budget(g, s, ledger, kind, i, now_wall_ms, arena, &gauges,
				   &writes_left);
	}
	publish_gauges(g, &gauges);
}

ng_status gate_budgets_present(const struct kube_snapshot *s, struct ng_map *ret)
{
	size_t nn, na;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nn);
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
	ng_status st = ng_map_init(ret, nn + na);
	for (size_t i = 0; st == NG_OK && i < nn; i++)
		ng_map_put(ret, gate_budget_key(NG_INTERN_NONE, ndbs[i].b.name), 0);
	for (size_t i = 0; st == NG_OK && i < na; i++)
		ng_map_put(ret, gate_budget_key(adbs[i].b.ns, adbs[i].b.name), 0);
	return st;
}

/* One gauge family: a line per budget in @present (none without @s). */
static ng_status gauge_family(const struct gate *g, const struct kube_snapshot *s,
			      const struct ng_map *present, const char *metric, const char *help,
			      bool current, struct ng_buf *out)
{
	ng_status st = ng_prom_header(out, metric, NG_PROM_GAUGE, help);
	const struct ng_intern *pool = s ? kube_snapshot_pool(s) : NULL;
	for (size_t i = 0; s && st == NG_OK && i < g->ngauges; i++) {
		const struct gate_budget_gauge *b = &g->gauges[i];
		uint32_t unused;
		if (!ng_map_get(present, gate_budget_key(b->ns, b->name), &unused))
			continue;
		const struct ng_prom_label l[] = {{"kind", b->kind == KUBE_RES_NDBS
							       ? "NodeDisruptionBudget"
							       : "ApplicationDisruptionBudget"},
						  {"namespace", ng_intern_str(pool, b->ns, NULL)},
						  {"name", ng_intern_str(pool, b->name, NULL)}};
		st = ng_prom_i64(out, metric, l, 3, current ? b->current : b->allowed);
	}
	return st;
}

ng_status gate_render_budget_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	/* The newest snapshot, not the pass's: a budget deleted since has no series. A replica
	 * that no longer leads shows none (its last pass is stale). */
	struct kube_snapshot *s =
	    g->cfg.store && gate_leading(g) ? kube_store_acquire(g->cfg.store) : NULL;
	struct ng_map present = {0};
	ng_status st = s ? gate_budgets_present(s, &present) : NG_OK;
	pthread_mutex_lock(&g->metrics_mu);
	st = st ? st
		: gauge_family(g, s, &present, "nodegate_budget_disruptions_allowed",
			       "More nodes a budget allows to be disrupted now.", false, out);
	st = st ? st
		: gauge_family(g, s, &present, "nodegate_budget_current_disruptions",
			       "Nodes of a budget's scope disrupted now.", true, out);
	pthread_mutex_unlock(&g->metrics_mu);
	ng_map_finish(&present);
	kube_snapshot_release(s);
	return st;
}

/* ---- pacing ---- */

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static bool has_id(const uint32_t *v, size_t n, uint32_t id)
{
	return n && bsearch(&id, v, n, sizeof(id), cmp_id);
}

static struct gate_back *back_find(struct gate *g, uint32_t node)
{
	for (size_t i = 0; i < g->nback; i++)
		if (g->back[i].node == node)
			return &g->back[i];
	return NULL;
}

/* Notes @node as given back and not back yet, unless noted already. */
static ng_status back_note(struct gate *g, uint32_t node)
{
	if (back_find(g, node))
		return NG_OK;
	struct gate_back *p = ng_array_grow(g->back, &g->capback, g->nback, sizeof(*p));
	if (!p)
		return NG_ENOMEM;
	g->back = p;
	g->back[g->nback++] = (struct gate_back){node, KUBE_SOAK_NOT_BACK};
	return NG_OK;
}

/* The nodes Granted requests of @s hold (sorted, unique; heap) into *@ret. */
static ng_status held_now(const struct kube_snapshot *s, uint32_t **ret, size_t *ret_n)
{
	size_t n, total = 0;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++)
		if (nds[i].state == KUBE_ND_GRANTED && !nds[i].deleting)
			total += nds[i].ndisrupted;
	uint32_t *v = malloc((total ? total : 1) * sizeof(*v));
	if (!v)
		return NG_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (nds[i].state == KUBE_ND_GRANTED && !nds[i].deleting)
			for (size_t j = 0; j < nds[i].ndisrupted; j++)
				v[k++] = nds[i].disrupted[j];
	qsort(v, k, sizeof(*v), cmp_id);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*ret = v;
	*ret_n = u;
	return NG_OK;
}

/* The nodes a budget's status.soakingNodes says are not back yet: a new term takes them over
 * (the leader before noted their requests' end). */
static ng_status import_not_back(struct gate *g, const struct kube_snapshot *s,
				 const uint32_t *held, size_t nheld)
{
	size_t nn, na;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nn);
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
	for (size_t i = 0; i < nn + na; i++) {
		const struct kube_budget_common *b = i < nn ? &ndbs[i].b : &adbs[i - nn].b;
		for (size_t k = 0; b->soak_ms && k < b->nsoaking; k++)
			if (b->soaking[k].until_ms == KUBE_SOAK_NOT_BACK &&
			    !has_id(held, nheld, b->soaking[k].node) &&
			    back_note(g, b->soaking[k].node) != NG_OK)
				return NG_ENOMEM;
	}
	return NG_OK;
}

ng_status gate_pacing_track(struct gate *g, const struct kube_snapshot *s,
			    struct pol_ledger *ledger, int64_t now_wall_ms)
{
	int64_t max_soak = pol_snapshot_max_soak_ms(s);
	if (!max_soak) {
		gate_pacing_forget(g);
		return NG_OK;
	}
	uint32_t *held;
	size_t nheld;
	if (held_now(s, &held, &nheld) != NG_OK)
		return NG_ENOMEM;
	ng_status st = NG_OK;
	/* A node held at the last round and not now: its request ended (or was deleted). */
	for (size_t i = 0; st == NG_OK && i < g->nheld_prev; i++)
		if (!has_id(held, nheld, g->held_prev[i]))
			st = back_note(g, g->held_prev[i]);
	if (st == NG_OK)
		st = import_not_back(g, s, held, nheld);
	for (size_t i = 0; st == NG_OK && i < g->nback;) {
		struct gate_back *b = &g->back[i];
		const struct kube_node *n = kube_snapshot_find_node(s, b->node);
		/* Held again (a new grant counts it), gone, or soaked by every budget. */
		if (!n || has_id(held, nheld, b->node) ||
		    (b->back_wall_ms != KUBE_SOAK_NOT_BACK &&
		     b->back_wall_ms + max_soak <= now_wall_ms)) {
			g->back[i] = g->back[--g->nback];
			continue;
		}
		if (b->back_wall_ms == KUBE_SOAK_NOT_BACK && (n->flags & KUBE_NODE_READY) &&
		    !(n->flags & KUBE_NODE_UNSCHEDULABLE))
			b->back_wall_ms = now_wall_ms; /* back: its soak starts now */
		st = pol_ledger_given_back(ledger, b->node, b->back_wall_ms);
		i++;
	}
	free(g->held_prev);
	g->held_prev = held;
	g->nheld_prev = nheld;
	return st;
}

bool gate_pacing_before_grant(struct gate *g, const struct kube_snapshot *s,
			      const struct pol_gate_decision *d, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		size_t nn, na;
		const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nn);
		const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
		const struct kube_budget_common *b =
		    v->kind == KUBE_RES_NDBS   ? (v->index < nn ? &ndbs[v->index].b : NULL)
		    : v->kind == KUBE_RES_ADBS ? (v->index < na ? &adbs[v->index].b : NULL)
					       : NULL; /* a PodDisruptionBudget is not paced */
		/* Every grant touching a paced budget restarts its interval, also one whose nodes
		 * count as disrupted already: held by itself while its budgets prepared
		 * (multistep hooks), or by another grant. Later is always safe. */
		if (!b || !b->min_interval_ms)
			continue;
		char body[64];
		char at[32];
		ng_format_rfc3339_ms(now_wall_ms, at);
		ng_fmt(body, sizeof(body), "{\"lastGrantAt\":\"%s\"}", at);
		const struct kube_ref ref = {
		    v->kind == KUBE_RES_NDBS ? KUBE_KIND_NDB : KUBE_KIND_ADB,
		    v->ns == NG_INTERN_NONE ? NULL : ng_intern_str(pool, v->ns, NULL),
		    ng_intern_str(pool, v->name, NULL)};
		struct kube_write_result r;
		kube_patch_status_json(g->client, &ref, NULL, body, strlen(body), &r);
		if (r.outcome != KUBE_WRITE_OK) {
			ng_prom_add(&g->errors, 1);
			kube_write_log("gate", "lastGrantAt not written: grant held back", &ref,
				       &r);
			return false;
		}
	}
	return true;
}

void gate_pacing_forget(struct gate *g)
{
	free(g->held_prev);
	g->held_prev = NULL;
	g->nheld_prev = 0;
	free(g->back);
	g->back = NULL;
	g->nback = g->capback = 0;
}
