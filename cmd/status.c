/* nodegate status and nodegate why: what waits and why, for an operator (docs/troubleshooting.md).
 * The cluster is listed once (or read from snapshot files), explained by policy/explain.h and
 * printed as text, JSON or YAML; status --watch keeps the watch and redraws on change. */
#include "cmd/cmd.h"
#include "cmd/live.h"
#include "cmd/out.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/parse.h"
#include "kube/kube.h"
#include "policy/explain.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What one explanation may use: the queue's decisions and the pods of a drain. */
#define EXPLAIN_ARENA_BYTES (512u << 20)

/* The command line of status and why. */
struct status_args {
	struct cmd_cluster cluster;
	struct cmd_multi snaps;
	const char *output, *now_s;
	int64_t watch;
	struct cmd_out out;
	int64_t now_wall_ms;
};

/* ---- JSON ---- */

static const char *str(const struct kube_snapshot *s, uint32_t id)
{
	const char *v =
	    id == NG_INTERN_NONE ? NULL : ng_intern_str(kube_snapshot_pool(s), id, NULL);
	return v ? v : "";
}

static void jw_names(struct ng_jw *w, const struct kube_snapshot *s, const char *key,
		     const uint32_t *v, size_t n)
{
	ng_jw_key(w, key);
	ng_jw_arr(w);
	for (size_t i = 0; i < n; i++)
		ng_jw_str(w, str(s, v[i]));
	ng_jw_arr_end(w);
}

static void jw_time_or_null(struct ng_jw *w, const char *key, int64_t wall_ms)
{
	ng_jw_key(w, key);
	if (wall_ms > 0)
		ng_jw_time(w, wall_ms);
	else
		ng_jw_null(w);
}

/* status.state as the API shows it; "" before the gate's first decision. */
static const char *nd_state_str(uint8_t state)
{
	static const char *const states[] = {"", "Pending", "Granted", "Rejected"};
	return state < sizeof(states) / sizeof(states[0]) ? states[state] : "";
}

static const char *budget_kind(enum kube_resource kind)
{
	return kind == KUBE_RES_NDBS ? "NodeDisruptionBudget" : "ApplicationDisruptionBudget";
}

static void jw_budget(struct ng_jw *w, const struct kube_snapshot *s,
		      const struct pol_explain_budget *b)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "kind", budget_kind(b->kind));
	if (b->b->ns != NG_INTERN_NONE)
		ng_jw_kstr(w, "namespace", str(s, b->b->ns));
	ng_jw_kstr(w, "name", str(s, b->b->name));
	ng_jw_ki64(w, "watched", (int64_t)b->st.watched);
	ng_jw_ki64(w, "current", (int64_t)b->st.current);
	ng_jw_ki64(w, "allowed", b->st.allowed);
	ng_jw_kbool(w, "invalid", b->st.invalid);
	ng_jw_kbool(w, "frozen", b->b->frozen);
	ng_jw_key(w, "limitNow");
	if (b->st.now.limit_now >= 0)
		ng_jw_i64(w, b->st.now.limit_now);
	else
		ng_jw_null(w);
	ng_jw_key(w, "window");
	if (!b->st.now.has_windows) {
		ng_jw_null(w);
	} else {
		ng_jw_obj(w);
		ng_jw_kbool(w, "open", b->st.now.window_open);
		jw_time_or_null(w, "closesAt",
				b->st.now.window_open ? b->st.now.closes_wall_ms : 0);
		jw_time_or_null(w, "nextOpensAt",
				b->st.now.window_open ? 0 : b->st.now.next_opens_wall_ms);
		ng_jw_obj_end(w);
	}
	ng_jw_key(w, "exclusion");
	if (!b->st.now.excluded) {
		ng_jw_null(w);
	} else {
		ng_jw_obj(w);
		jw_time_or_null(w, "until", b->st.now.excluded_until);
		ng_jw_kstr(w, "reason", str(s, b->st.now.excluded_reason));
		ng_jw_obj_end(w);
	}
	/* Pacing: the next grant a minIntervalSeconds allows, the nodes soaking (until null: not
	 * back yet). */
	jw_time_or_null(w, "nextGrantAt",
			b->st.now.next_grant_wall_ms > 0 ? b->st.now.next_grant_wall_ms : 0);
	ng_jw_key(w, "soakingNodes");
	ng_jw_arr(w);
	for (size_t i = 0; i < b->st.now.nsoaking_nodes; i++) {
		const struct kube_soaking *k = &b->st.now.soaking_nodes[i];
		ng_jw_obj(w);
		ng_jw_kstr(w, "name", str(s, k->node));
		jw_time_or_null(w, "until", k->until_ms == KUBE_SOAK_NOT_BACK ? 0 : k->until_ms);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
	jw_names(w, s, "heldBy", b->holders, b->nholders);
	ng_jw_ki64(w, "heldCount", (int64_t)b->nheld);
	ng_jw_ki64(w, "pendingCount", (int64_t)b->npending);
	ng_jw_obj_end(w);
}

static void jw_condition(struct ng_jw *w, const char *key, const struct kube_condition *c)
{
	ng_jw_key(w, key);
	if (!c) {
		ng_jw_null(w);
		return;
	}
	ng_jw_obj(w);
	ng_jw_kstr(w, "reason", c->reason);
	ng_jw_kstr(w, "message", c->message);
	jw_time_or_null(w, "since", c->since_ms);
	ng_jw_obj_end(w);
}

/* The nodes a request names: those granted, else those decided, else spec.nodeNames. */
static void nd_nodes(const struct kube_nd *nd, const struct pol_gate_decision *d,
		     const uint32_t **ret, size_t *ret_n)
{
	*ret = nd->disrupted;
	*ret_n = nd->ndisrupted;
	if (d && d->nnodes) {
		*ret = d->nodes;
		*ret_n = d->nnodes;
	} else if (!*ret_n) {
		*ret = nd->node_names;
		*ret_n = nd->nnode_names;
	}
}

static void jw_wait(struct ng_jw *w, const struct kube_snapshot *s,
		    const struct pol_explain_wait *q)
{
	const uint32_t *nodes;
	size_t n;
	nd_nodes(q->nd, &q->d, &nodes, &n);
	ng_jw_obj(w);
	ng_jw_ki64(w, "rank", (int64_t)q->rank);
	ng_jw_kstr(w, "name", str(s, q->nd->name));
	jw_names(w, s, "nodes", nodes, n);
	ng_jw_kstr(w, "decision", pol_gate_outcome_str(q->d.outcome));
	ng_jw_kstr(w, "reason", q->d.reason);
	ng_jw_kbool(w, "needsHooks", q->needs_hooks);
	jw_names(w, s, "heldBy", q->holders, q->nholders);
	ng_jw_ki64(w, "heldCount", (int64_t)q->nheld);
	jw_names(w, s, "grantedBeforeIt", q->ahead, q->nahead);
	jw_time_or_null(w, "changesAt", q->d.wake_wall_ms);
	jw_time_or_null(w, "nextRetryAt", q->nd->next_retry_ms);
	jw_time_or_null(w, "deadline", q->nd->deadline_ms);
	jw_condition(w, "lastDecision", q->written);
	ng_jw_obj_end(w);
}

static void jw_grant(struct ng_jw *w, const struct kube_snapshot *s,
		     const struct pol_explain_grant *g)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", str(s, g->nd->name));
	jw_names(w, s, "nodes", g->nd->disrupted, g->nd->ndisrupted);
	jw_time_or_null(w, "grantedAt", g->granted_ms);
	jw_time_or_null(w, "expiresAt", g->ends_ms);
	jw_condition(w, "drain", g->ready);
	ng_jw_obj_end(w);
}

static void jw_held(struct ng_jw *w, const struct kube_snapshot *s,
		    const struct pol_explain_held_node *h)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", str(s, h->node->name));
	ng_jw_kbool(w, "unschedulable", (h->node->flags & KUBE_NODE_UNSCHEDULABLE) != 0);
	ng_jw_kbool(w, "wasUnschedulable", h->node->note.was_unschedulable);
	jw_names(w, s, "holders", h->node->note.holders, h->node->note.nholders);
	if (h->quarantined)
		ng_jw_kstr(w, "quarantinedBy", str(s, h->quarantined_by));
	ng_jw_obj_end(w);
}

static void jw_gate(struct ng_jw *w, const struct kube_snapshot *s,
		    const struct pol_explain_status *x)
{
	ng_jw_kbool(w, "paused", x->cfg.paused);
	ng_jw_key(w, "excludedUntil");
	if (x->excluded)
		ng_jw_time_ms(w, x->excluded_until);
	else
		ng_jw_null(w);
	ng_jw_kbool(w, "configInvalid", x->ngc && x->ngc->invalid);
	ng_jw_key(w, "alertGate");
	if (!x->ngc || x->ngc->alert.mode == KUBE_ALERT_NONE) {
		ng_jw_null(w);
		return;
	}
	ng_jw_obj(w);
	ng_jw_kstr(w, x->ngc->alert.mode == KUBE_ALERT_QUERY ? "query" : "alertNameRegex",
		   x->ngc->alert.expr ? x->ngc->alert.expr : "");
	ng_jw_kstr(w, "failurePolicy", x->ngc->alert.fail_open ? "Ignore" : "Deny");
	ng_jw_obj_end(w);
	(void)s;
}

static ng_status status_json(const struct kube_snapshot *s, const struct pol_explain_status *x,
			     int64_t now_wall_ms, struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	jw_time_or_null(&w, "time", now_wall_ms);
	jw_gate(&w, s, x);
	ng_jw_key(&w, "budgets");
	ng_jw_arr(&w);
	for (size_t i = 0; i < x->nbudgets; i++)
		jw_budget(&w, s, &x->budgets[i]);
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "queue");
	ng_jw_arr(&w);
	for (size_t i = 0; i < x->nwaits; i++)
		jw_wait(&w, s, &x->waits[i]);
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "granted");
	ng_jw_arr(&w);
	for (size_t i = 0; i < x->ngrants; i++)
		jw_grant(&w, s, &x->grants[i]);
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "heldNodes");
	ng_jw_arr(&w);
	for (size_t i = 0; i < x->nheld; i++)
		jw_held(&w, s, &x->held[i]);
	ng_jw_arr_end(&w);
	ng_jw_ki64(&w, "rejectedCount", (int64_t)x->nrejected);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* ---- text ---- */

static void names_text(FILE *f, const struct kube_snapshot *s, const uint32_t *v, size_t n,
		       size_t total)
{
	for (size_t i = 0; i < n; i++)
		(void)fprintf(f, "%s%s", i ? ", " : "", str(s, v[i]));
	if (total > n)
		(void)fprintf(f, "%s%zu more", n ? " and " : "", total - n);
}

static void budget_name(FILE *f, const struct kube_snapshot *s, const struct kube_budget_common *b)
{
	if (b->ns != NG_INTERN_NONE)
		(void)fprintf(f, "%s/", str(s, b->ns));
	(void)fputs(str(s, b->name), f);
}

/* Where a budget's maintenance windows stand: ", window 0 open until T" or ", windows closed
 * until T". */
static void window_text(FILE *f, const struct pol_budget_now *n)
{
	if (!n->has_windows)
		return;
	if (n->window_open) {
		(void)fprintf(f, ", window %d open", n->window);
		if (n->closes_wall_ms > 0) {
			(void)fprintf(f, " until ");
			cmd_out_time(f, n->closes_wall_ms);
		}
		return;
	}
	(void)fprintf(f, ", windows closed");
	if (n->next_opens_wall_ms > 0) {
		(void)fprintf(f, " until ");
		cmd_out_time(f, n->next_opens_wall_ms);
	}
}

static void budget_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
			const struct pol_explain_budget *b)
{
	(void)fprintf(f, "  %-3s ", b->kind == KUBE_RES_NDBS ? "NDB" : "ADB");
	budget_name(f, s, b->b);
	if (b->st.invalid) {
		(void)fprintf(f, ": %sinvalid%s (fails closed): %s\n", cmd_out_bad(o),
			      cmd_out_end(o), str(s, b->b->error));
		return;
	}
	(void)fprintf(f, ": %zu of %zu nodes disrupted", b->st.current, b->st.watched);
	if (b->st.now.limit_now >= 0)
		(void)fprintf(f, ", limit %lld now", (long long)b->st.now.limit_now);
	(void)fprintf(f, ", %s%lld more allowed%s",
		      b->st.allowed ? cmd_out_good(o) : cmd_out_bad(o), (long long)b->st.allowed,
		      cmd_out_end(o));
	if (b->b->frozen)
		(void)fprintf(f, ", frozen");
	window_text(f, &b->st.now);
	if (b->st.now.excluded) {
		(void)fprintf(f, ", %sexcluded%s until ", cmd_out_bad(o), cmd_out_end(o));
		cmd_out_time(f, b->st.now.excluded_until);
		const char *why = str(s, b->st.now.excluded_reason);
		if (why && *why)
			(void)fprintf(f, " (%s)", why);
	}
	if (b->st.now.next_grant_wall_ms > 0) {
		(void)fprintf(f, ", %spaced%s: next grant at ", cmd_out_bad(o), cmd_out_end(o));
		cmd_out_time(f, b->st.now.next_grant_wall_ms);
	}
	if (b->st.now.nsoaking_nodes) {
		/* The soaks that end first: a place frees then. */
		const struct kube_soaking *k = b->st.now.soaking_nodes;
		int64_t first = KUBE_SOAK_NOT_BACK;
		for (size_t i = 0; i < b->st.now.nsoaking_nodes; i++)
			if (k[i].until_ms < first)
				first = k[i].until_ms;
		(void)fprintf(f, ", %zu soaking", b->st.now.nsoaking_nodes);
		if (first != KUBE_SOAK_NOT_BACK) {
			(void)fprintf(f, " (the first until ");
			cmd_out_time(f, first);
			(void)fputc(')', f);
		} else {
			(void)fprintf(f, " (not back yet)");
		}
	}
	if (b->nheld) {
		(void)fprintf(f, "; held by ");
		names_text(f, s, b->holders, b->nholders, b->nheld);
	}
	if (b->npending)
		(void)fprintf(f, "; %zu pending", b->npending);
	(void)fputc('\n', f);
}

/* Whether the gate's reason already names every request holding @q back (its budgets name up to
 * three holders each): the list is then not said twice. */
static bool reason_names_all(const struct kube_snapshot *s, const struct pol_explain_wait *q)
{
	if (!strstr(q->d.reason, POL_HELD_BY) || q->nholders < q->nheld)
		return false;
	for (size_t i = 0; i < q->nholders; i++) {
		const char *name = str(s, q->holders[i]);
		if (!name || !strstr(q->d.reason, name))
			return false;
	}
	return true;
}

static void wait_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
		      const struct pol_explain_wait *q, int64_t now_wall_ms)
{
	const uint32_t *nodes;
	size_t n;
	nd_nodes(q->nd, &q->d, &nodes, &n);
	(void)fprintf(f, "  %zu. %s%s%s [", q->rank, cmd_out_bold(o), str(s, q->nd->name),
		      cmd_out_end(o));
	names_text(f, s, nodes, n < 3 ? n : 3, n);
	(void)fprintf(f, "]: ");
	if (q->d.outcome == POL_GATE_GRANT) {
		(void)fprintf(f, "%sgranted at the gate's next round%s%s", cmd_out_good(o),
			      q->needs_hooks ? " once its hooks answer" : "", cmd_out_end(o));
		if (q->written && q->written->message[0])
			(void)fprintf(f, "\n     the gate last said: %s", q->written->message);
		(void)fputc('\n', f);
		return;
	}
	(void)fprintf(f, "%s%s%s", cmd_out_bad(o), q->d.reason, cmd_out_end(o));
	if (q->nheld && !reason_names_all(s, q)) {
		(void)fprintf(f, "\n     held by ");
		names_text(f, s, q->holders, q->nholders, q->nheld);
	}
	int64_t since =
	    q->written && q->written->since_ms ? q->written->since_ms : q->nd->created_ms;
	if (since > 0) {
		(void)fprintf(f, "\n     waiting ");
		cmd_out_duration(f, now_wall_ms - since);
		(void)fprintf(f, " (since ");
		cmd_out_time(f, since);
		(void)fputc(')', f);
	}
	if (q->nahead) {
		(void)fprintf(f, "\n     after ");
		names_text(f, s, q->ahead, q->nahead, q->nahead);
		(void)fprintf(f, ", ranked before it, are granted");
	}
	if (q->d.wake_wall_ms > 0) {
		(void)fprintf(f, "\n     a window, an exclusion or pacing changes at ");
		cmd_out_time(f, q->d.wake_wall_ms);
		(void)fprintf(f, " (in ");
		cmd_out_duration(f, q->d.wake_wall_ms - now_wall_ms);
		(void)fputc(')', f);
	}
	(void)fputc('\n', f);
}

static void grant_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
		       const struct pol_explain_grant *g, int64_t now_wall_ms)
{
	(void)fprintf(f, "  %s%s%s [", cmd_out_bold(o), str(s, g->nd->name), cmd_out_end(o));
	names_text(f, s, g->nd->disrupted, g->nd->ndisrupted < 3 ? g->nd->ndisrupted : 3,
		   g->nd->ndisrupted);
	(void)fprintf(f, "]");
	if (g->granted_ms) {
		(void)fprintf(f, " granted ");
		cmd_out_duration(f, now_wall_ms - g->granted_ms);
		(void)fprintf(f, " ago");
	}
	if (g->ends_ms) {
		(void)fprintf(f, ", ends ");
		cmd_out_time(f, g->ends_ms);
	}
	if (g->ready)
		(void)fprintf(f, "\n     drain: %s%s%s", g->ready->reason,
			      g->ready->message[0] ? ": " : "", g->ready->message);
	(void)fputc('\n', f);
}

static void held_text(FILE *f, const struct kube_snapshot *s, const struct pol_explain_held_node *h)
{
	(void)fprintf(f, "  %s: %s", str(s, h->node->name),
		      h->node->flags & KUBE_NODE_UNSCHEDULABLE ? "cordoned" : "schedulable");
	if (h->node->note.nholders) {
		(void)fprintf(f, ", held for ");
		names_text(f, s, h->node->note.holders, h->node->note.nholders,
			   h->node->note.nholders);
	}
	if (h->node->note.was_unschedulable)
		(void)fprintf(f, " (it was cordoned before nodegate held it)");
	if (h->quarantined)
		(void)fprintf(f, ", quarantined by %s", str(s, h->quarantined_by));
	(void)fputc('\n', f);
}

static void gate_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
		      const struct pol_explain_status *x)
{
	if (x->ngc && x->ngc->invalid)
		(void)fprintf(f, "gate: %sPAUSED%s: NodeGateConfig default is invalid: %s\n",
			      cmd_out_bad(o), cmd_out_end(o), str(s, x->ngc->error));
	else if (x->cfg.paused)
		(void)fprintf(f, "gate: %sPAUSED%s (NodeGateConfig default spec.paused)\n",
			      cmd_out_bad(o), cmd_out_end(o));
	else if (x->excluded) {
		(void)fprintf(f, "gate: %sEXCLUDED%s until ", cmd_out_bad(o), cmd_out_end(o));
		cmd_out_time(f, x->excluded_until);
		const char *why = str(s, x->excluded_reason);
		(void)fprintf(f, " (NodeGateConfig default spec.exclusions%s%s)\n",
			      *why ? ": " : "", why);
	} else
		(void)fprintf(f, "gate: %sdeciding%s\n", cmd_out_good(o), cmd_out_end(o));
	if (x->ngc && x->ngc->alert.mode != KUBE_ALERT_NONE)
		(void)fprintf(f, "alert gate: no grant while %s \"%s\" fires (failurePolicy %s)\n",
			      x->ngc->alert.mode == KUBE_ALERT_QUERY ? "the query"
								     : "an alert like",
			      x->ngc->alert.expr ? x->ngc->alert.expr : "",
			      x->ngc->alert.fail_open ? "Ignore" : "Deny");
}

static void status_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
			const struct pol_explain_status *x, int64_t now_wall_ms)
{
	(void)fprintf(f, "nodegate status at ");
	cmd_out_time(f, now_wall_ms);
	(void)fputc('\n', f);
	gate_text(f, o, s, x);
	(void)fprintf(f, "\n%sBudgets (%zu)%s\n", cmd_out_bold(o), x->nbudgets, cmd_out_end(o));
	for (size_t i = 0; i < x->nbudgets; i++)
		budget_text(f, o, s, &x->budgets[i]);
	(void)fprintf(f, "\n%sWaiting (%zu, in the order the gate decides)%s\n", cmd_out_bold(o),
		      x->nwaits, cmd_out_end(o));
	for (size_t i = 0; i < x->nwaits; i++)
		wait_text(f, o, s, &x->waits[i], now_wall_ms);
	(void)fprintf(f, "\n%sGranted (%zu)%s\n", cmd_out_bold(o), x->ngrants, cmd_out_end(o));
	for (size_t i = 0; i < x->ngrants; i++)
		grant_text(f, o, s, &x->grants[i], now_wall_ms);
	(void)fprintf(f, "\n%sNodes nodegate holds (%zu)%s\n", cmd_out_bold(o), x->nheld,
		      cmd_out_end(o));
	for (size_t i = 0; i < x->nheld; i++)
		held_text(f, s, &x->held[i]);
	if (x->nrejected)
		(void)fprintf(f, "\n%zu rejected request%s (kubectl get nd shows them)\n",
			      x->nrejected, x->nrejected == 1 ? "" : "s");
}

/* ---- why ---- */

static void why_json_body(struct ng_jw *w, const struct kube_snapshot *s,
			  const struct pol_explain_why *y)
{
	if (y->node) {
		ng_jw_key(w, "node");
		ng_jw_obj(w);
		ng_jw_kstr(w, "name", str(s, y->node->name));
		ng_jw_kbool(w, "ready", (y->node->flags & KUBE_NODE_READY) != 0);
		ng_jw_kbool(w, "unschedulable", (y->node->flags & KUBE_NODE_UNSCHEDULABLE) != 0);
		jw_names(w, s, "heldFor", y->node->note.holders, y->node->note.nholders);
		ng_jw_key(w, "requests");
		ng_jw_arr(w);
		for (size_t i = 0; i < y->nrequests; i++) {
			ng_jw_obj(w);
			ng_jw_kstr(w, "name", str(s, y->requests[i]->name));
			ng_jw_kstr(w, "state", nd_state_str(y->requests[i]->state));
			ng_jw_obj_end(w);
		}
		ng_jw_arr_end(w);
		ng_jw_obj_end(w);
	}
	if (y->nd) {
		ng_jw_key(w, "request");
		ng_jw_obj(w);
		ng_jw_kstr(w, "name", str(s, y->nd->name));
		ng_jw_kstr(w, "state", nd_state_str(y->nd->state));
		ng_jw_obj_end(w);
	}
	ng_jw_key(w, "budgets");
	ng_jw_arr(w);
	for (size_t i = 0; i < y->nbudgets; i++)
		jw_budget(w, s, &y->budgets[i]);
	ng_jw_arr_end(w);
	if (y->waiting) {
		ng_jw_key(w, "waiting");
		jw_wait(w, s, &y->wait);
	}
	if (y->granted) {
		ng_jw_key(w, "granted");
		jw_grant(w, s, &y->grant);
	}
}

static ng_status why_json(const struct kube_snapshot *s, const struct pol_explain_why *y,
			  struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	why_json_body(&w, s, y);
	ng_jw_key(&w, "pods");
	ng_jw_arr(&w);
	for (size_t i = 0; i < y->npods; i++) {
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "namespace", str(s, y->pods[i].pod->ns));
		ng_jw_kstr(&w, "name", y->pods[i].pod->name);
		ng_jw_kstr(&w, "drain", y->pods[i].action);
		ng_jw_ki64(&w, "order", y->pods[i].order);
		/* The blocker reads " (why)": the words inside. */
		size_t bl = strlen(y->pods[i].blocker);
		ng_jw_key(&w, "heldBy");
		if (bl > 3)
			ng_jw_strn(&w, y->pods[i].blocker + 2, bl - 3);
		else
			ng_jw_null(&w);
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	if (y->drain_stop[0])
		ng_jw_kstr(&w, "drainProblem", y->drain_stop);
	if (y->drain_batch[0])
		ng_jw_kstr(&w, "drainBatch", y->drain_batch);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* What would let the waiting request @q go. */
static void unblock_text(FILE *f, const struct kube_snapshot *s, const struct pol_explain_wait *q,
			 bool paused)
{
	if (q->d.outcome == POL_GATE_GRANT)
		return;
	(void)fprintf(f, "  it can go when ");
	if (paused) {
		(void)fprintf(f, "NodeGateConfig default is no longer paused\n");
		return;
	}
	if (q->d.unsatisfiable) {
		(void)fprintf(f,
			      "the budget changes or the request asks for fewer nodes: as it is, "
			      "no budget state can allow it\n");
		return;
	}
	const char *sep = "";
	if (q->nheld) {
		names_text(f, s, q->holders, q->nholders, q->nheld);
		(void)fprintf(f, " end%s (deleted, expired or released)", q->nheld == 1 ? "s" : "");
		sep = ", or ";
	}
	if (q->d.wake_wall_ms > 0) {
		(void)fprintf(f, "%sa maintenance window changes at ", sep);
		cmd_out_time(f, q->d.wake_wall_ms);
		sep = ", or ";
	}
	if (!*sep)
		(void)fprintf(f, "what its reason names changes");
	(void)fputc('\n', f);
}

static void why_node_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
			  const struct pol_explain_why *y)
{
	const struct kube_node *n = y->node;
	(void)fprintf(f, "node %s%s%s: %s, %s\n", cmd_out_bold(o), str(s, n->name), cmd_out_end(o),
		      n->flags & KUBE_NODE_READY ? "Ready" : "not Ready",
		      n->flags & KUBE_NODE_UNSCHEDULABLE ? "cordoned" : "schedulable");
	if (n->note.nholders) {
		(void)fprintf(f, "  held by nodegate for ");
		names_text(f, s, n->note.holders, n->note.nholders, n->note.nholders);
		(void)fputc('\n', f);
	}
	if (!y->nrequests)
		(void)fprintf(f, "  no request names it\n");
	for (size_t i = 0; i < y->nrequests; i++)
		(void)fprintf(f, "  request %s: %s\n", str(s, y->requests[i]->name),
			      y->requests[i]->state ? nd_state_str(y->requests[i]->state)
						    : "not decided yet");
}

static void why_text(FILE *f, const struct cmd_out *o, const struct kube_snapshot *s,
		     const struct pol_explain_why *y, int64_t now_wall_ms)
{
	if (y->node)
		why_node_text(f, o, s, y);
	if (y->nd && !y->node)
		(void)fprintf(f, "request %s%s%s: %s\n", cmd_out_bold(o), str(s, y->nd->name),
			      cmd_out_end(o),
			      y->nd->state ? nd_state_str(y->nd->state) : "not decided yet");
	if (y->nd && y->nd->state == KUBE_ND_REJECTED && y->nd->status_reason[0])
		(void)fprintf(f, "  rejected: %s\n", y->nd->status_reason);
	(void)fprintf(f, "\n%sBudgets covering it (%zu)%s\n", cmd_out_bold(o), y->nbudgets,
		      cmd_out_end(o));
	for (size_t i = 0; i < y->nbudgets; i++)
		budget_text(f, o, s, &y->budgets[i]);
	if (y->waiting) {
		(void)fprintf(f, "\n%sWhy it waits%s (place %zu in the queue)\n", cmd_out_bold(o),
			      cmd_out_end(o), y->wait.rank);
		wait_text(f, o, s, &y->wait, now_wall_ms);
		unblock_text(f, s, &y->wait, y->paused);
	}
	if (y->granted) {
		(void)fprintf(f, "\n%sGranted%s\n", cmd_out_bold(o), cmd_out_end(o));
		grant_text(f, o, s, &y->grant, now_wall_ms);
	}
	if (y->drain_stop[0])
		(void)fprintf(f, "  the drain cannot choose its pods: %s\n", y->drain_stop);
	if (y->drain_batch[0])
		(void)fprintf(f, "  the drain's pods: %s\n", y->drain_batch);
	if (y->npods)
		(void)fprintf(f, "\n%sPods still on its nodes (%zu)%s\n", cmd_out_bold(o), y->npods,
			      cmd_out_end(o));
	for (size_t i = 0; i < y->npods; i++)
		(void)fprintf(f, "  %s/%s on %s: %s%s\n", str(s, y->pods[i].pod->ns),
			      y->pods[i].pod->name, str(s, y->pods[i].pod->node), y->pods[i].action,
			      y->pods[i].blocker);
}

/* ---- the commands ---- */

/* Fills @a from @argv (NAME already taken out by why): 0, 1 after --help, -1 after an error. */
static int parse_args(const char *cmd, int argc, char **argv, struct status_args *a)
{
	*a = (struct status_args){.output = NULL};
	const struct cmd_opt opts[] = {
	    CMD_CLUSTER_OPTS(&a->cluster),
	    {"snapshot", CMD_OPT_MULTI, &a->snaps, "FILE",
	     "Explain these files (kubectl get -o json or -o yaml output) instead of the live "
	     "cluster.",
	     0, 0, NULL, NULL},
	    {"output", CMD_OPT_STR, &a->output, "FORMAT",
	     "text, json or yaml; default text on a terminal, json otherwise. -o for short.", 0, 0,
	     NULL, NULL},
	    {"now", CMD_OPT_STR, &a->now_s, "TIME",
	     "Explain as of this RFC 3339 time instead of now (with --snapshot).", 0, 0, NULL,
	     NULL},
	    {"watch", CMD_OPT_BOOL, &a->watch, NULL,
	     "Keep watching the cluster and print again on every change.", 0, 1, NULL, NULL},
	};
	/* --watch, the last row, is status's only. */
	size_t n = sizeof(opts) / sizeof(opts[0]) - (strcmp(cmd, "why") == 0);
	int rc = cmd_opts_parse(cmd, opts, n, argc, argv);
	if (rc != 0)
		return rc;
	char prefix[32];
	ng_fmt(prefix, sizeof(prefix), "nodegate %s", cmd);
	if (a->snaps.n && (a->cluster.kubeconfig || a->cluster.context || a->watch)) {
		(void)fprintf(stderr,
			      "%s: --snapshot reads files: it does not go with --kubeconfig, "
			      "--context or --watch\n",
			      prefix);
		return -1;
	}
	if (cmd_out_parse(prefix, a->output, stdout, &a->out) != 0)
		return -1;
	return cmd_parse_time_flag(prefix, "now", a->now_s, &a->now_wall_ms);
}

/* One status of @s into @f. */
static ng_status status_once(FILE *f, const struct status_args *a, const struct kube_snapshot *s,
			     int64_t now_wall_ms, struct ng_err *err)
{
	struct ng_arena *arena = ng_arena_create(EXPLAIN_ARENA_BYTES);
	struct pol_explain_status x;
	ng_status st = arena ? pol_explain_status(s, now_wall_ms, arena, &x) : NG_ENOMEM;
	if (st == NG_OK && a->out.format == CMD_OUT_TEXT) {
		status_text(f, &a->out, s, &x, now_wall_ms);
	} else if (st == NG_OK) {
		struct ng_buf b;
		ng_buf_init(&b, 256u << 20);
		st = status_json(s, &x, now_wall_ms, &b);
		if (st == NG_OK)
			st = cmd_out_print(f, &a->out, b.data, b.len, err);
		ng_buf_finish(&b);
	}
	ng_arena_destroy(arena);
	if (st != NG_OK && !err->msg[0])
		(void)ng_err_set(err, st, 0, "out of memory");
	return st;
}

/* status --watch: print on every change of the cluster until killed. */
static int status_watch(const struct status_args *a)
{
	struct cmd_live *l = NULL;
	struct ng_err err = {0};
	if (cmd_live_start(&a->cluster, &l, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate status: %s\n", err.msg);
		return 2;
	}
	uint64_t shown = 0;
	for (;;) {
		struct kube_snapshot *s = kube_store_acquire(cmd_live_store(l));
		uint64_t gen = kube_snapshot_generation(s);
		ng_status st = NG_OK;
		if (gen != shown) {
			cmd_out_clear(stdout, &a->out);
			st = status_once(stdout, a, s, ng_now_wall_ms(), &err);
			(void)fflush(stdout);
			shown = gen;
		}
		kube_snapshot_release(s);
		if (st != NG_OK) {
			(void)fprintf(stderr, "nodegate status: %s\n", err.msg);
			cmd_live_stop(l);
			return 2;
		}
		struct timespec ts = {0, 250 * 1000 * 1000};
		(void)nanosleep(&ts, NULL);
	}
}

static ng_status load(const struct status_args *a, struct kube_snapshot **ret, struct ng_err *err)
{
	return a->snaps.n ? kube_snapshot_load_files(a->snaps.v, a->snaps.n, ret, err)
			  : cmd_live_load(&a->cluster, ret, err);
}

int cmd_status(int argc, char **argv)
{
	struct status_args a;
	int rc = parse_args("status", argc, argv, &a);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	if (a.watch)
		return status_watch(&a);
	struct ng_err err = {0};
	struct kube_snapshot *s = NULL;
	ng_status st = load(&a, &s, &err);
	if (st == NG_OK)
		st = status_once(stdout, &a, s, a.now_wall_ms, &err);
	if (st != NG_OK)
		(void)fprintf(stderr, "nodegate status: %s\n", err.msg);
	kube_snapshot_release(s);
	return st == NG_OK ? 0 : 2;
}

/* @name as a request or a node of @s: "node/NAME", "nodedisruption/NAME" (or "nd/NAME"), or a
 * bare NAME (a request by that name, else a node). */
static void why_target(const struct kube_snapshot *s, const char *name, uint32_t *ret_nd,
		       uint32_t *ret_node)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool node_only = strncmp(name, "node/", 5) == 0 || strncmp(name, "no/", 3) == 0;
	bool nd_only = strncmp(name, "nodedisruption/", 15) == 0 || strncmp(name, "nd/", 3) == 0;
	const char *bare = node_only || nd_only ? strchr(name, '/') + 1 : name;
	uint32_t id = ng_intern_find(pool, bare, strlen(bare));
	*ret_nd = NG_INTERN_NONE;
	*ret_node = NG_INTERN_NONE;
	if (id == NG_INTERN_NONE)
		return;
	if (!node_only && kube_snapshot_find_nd(s, id))
		*ret_nd = id;
	else if (!nd_only && kube_snapshot_find_node(s, id))
		*ret_node = id;
}

int cmd_why(int argc, char **argv)
{
	if (argc < 1 || argv[0][0] == '-') {
		if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0))
			return parse_args("why", argc, argv, &(struct status_args){0}) > 0 ? 0 : 2;
		(void)fprintf(stderr, "nodegate why: name a request or a node: nodegate why NAME "
				      "(node/NAME or nd/NAME to choose)\n");
		return 2;
	}
	const char *name = argv[0];
	struct status_args a;
	int rc = parse_args("why", argc - 1, argv + 1, &a);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	struct ng_err err = {0};
	struct kube_snapshot *s = NULL;
	struct ng_arena *arena = ng_arena_create(EXPLAIN_ARENA_BYTES);
	struct pol_explain_why y;
	ng_status st = arena ? load(&a, &s, &err) : ng_err_set(&err, NG_ENOMEM, 0, "out of memory");
	uint32_t nd = NG_INTERN_NONE, node = NG_INTERN_NONE;
	if (st == NG_OK)
		why_target(s, name, &nd, &node);
	if (st == NG_OK && nd == NG_INTERN_NONE && node == NG_INTERN_NONE)
		st = ng_err_set(&err, NG_ENOTFOUND, 0, "no NodeDisruption or node named \"%.200s\"",
				name);
	if (st == NG_OK && pol_explain_why(s, nd, node, a.now_wall_ms, arena, &y) != NG_OK)
		st = ng_err_set(&err, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK && a.out.format == CMD_OUT_TEXT) {
		why_text(stdout, &a.out, s, &y, a.now_wall_ms);
	} else if (st == NG_OK) {
		struct ng_buf b;
		ng_buf_init(&b, 64u << 20);
		st = why_json(s, &y, &b);
		st = st ? ng_err_set(&err, st, 0, "the answer does not fit in memory")
			: cmd_out_print(stdout, &a.out, b.data, b.len, &err);
		ng_buf_finish(&b);
	}
	if (st != NG_OK)
		(void)fprintf(stderr, "nodegate why: %s\n", err.msg);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
	return st == NG_OK ? 0 : st == NG_ENOTFOUND ? 1 : 2;
}
