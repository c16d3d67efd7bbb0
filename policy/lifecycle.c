/* How a grant ends without its requestor (policy/lifecycle.h). */
#include "policy/lifecycle.h"

#include "common/arena.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "policy/drain.h"
#include "policy/drain_step.h"

#include <string.h>

const char *pol_end_reason_str(enum pol_end_reason r)
{
	static const char *const names[POL_END_COUNT] = {
	    "DeadlineExceeded", "TTLAfterCompletionExpired", "DrainDeadlineExceeded",
	    "NodesDeleted",     "AutoRequestIdle",           "NodeUncordoned",
	    "NodeDeleted"};
	return (unsigned)r < POL_END_COUNT ? names[r] : "?";
}

/* Whether @ngc's defaults apply to @nd: not to the requests of a NodeRemediation, which ends
 * them itself (it records a repair before it deletes, and keeps a node that is still unhealthy
 * cordoned on purpose). */
static bool defaults_apply(const struct kube_nd *nd)
{
	return !nd->detail || nd->detail->remediation == NG_INTERN_NONE;
}

int64_t pol_grant_expires_ms(const struct kube_nd *nd, const struct kube_ngc *ngc,
			     int64_t granted_wall_ms)
{
	int64_t s = nd->detail ? nd->detail->active_deadline_s : -1;
	if (s < 0 && ngc && ngc->has_default_deadline && defaults_apply(nd))
		s = ngc->default_deadline_s;
	return s > 0 && granted_wall_ms > 0 ? granted_wall_ms + s * 1000 : 0;
}

/* The request's condition of type @type, or NULL. */
static const struct kube_condition *condition(const struct kube_nd_detail *x, const char *type)
{
	for (uint16_t i = 0; i < x->nconditions; i++)
		if (strcmp(x->conditions[i].type, type) == 0)
			return &x->conditions[i];
	return NULL;
}

/* Whether the request's nodes are kept for a person: its drain Failed (or was quarantined past
 * its deadline), or its requestor says it failed. */
static bool kept(const struct kube_nd_detail *x)
{
	const struct kube_condition *ready = condition(x, "Ready");
	const struct kube_condition *rf = condition(x, "RequestorFailed");
	return (ready && pol_drain_phase_failed(pol_drain_phase_of(ready->reason))) ||
	       (rf && rf->status == KUBE_COND_TRUE);
}

/* When drain.onDeadline Release ends @nd: its drain deadline, while its drain has not reached
 * Drained; 0: never. */
static int64_t drain_release_due_ms(const struct kube_nd *nd, const struct kube_ngc *ngc)
{
	const struct kube_nd_detail *x = nd->detail;
	const struct kube_condition *ready = condition(x, "Ready");
	if (x->drain.on_deadline != KUBE_ON_DEADLINE_RELEASE ||
	    (ready && pol_drain_phase_ready(pol_drain_phase_of(ready->reason))))
		return 0;
	return pol_drain_deadline_ms(x, ngc);
}

/* The nodes of @nd's grant that @s no longer holds, into @l's arena-backed list; their number. */
static uint16_t deleted_nodes(const struct kube_snapshot *s, const struct kube_nd *nd,
			      struct ng_arena *arena, const uint32_t **ret)
{
	uint32_t *gone =
	    nd->ndisrupted ? ng_arena_alloc(arena, nd->ndisrupted * sizeof(*gone)) : NULL;
	uint16_t n = 0;
	for (uint16_t i = 0; gone && i < nd->ndisrupted; i++)
		if (!kube_snapshot_find_node(s, nd->disrupted[i]))
			gone[n++] = nd->disrupted[i];
	*ret = gone;
	return n;
}

static bool same_ids(const uint32_t *a, uint16_t na, const uint32_t *b, uint16_t nb)
{
	return na == nb && (!na || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* When the TTL after completion of @nd ends it; 0: never (not Completed, or no TTL). */
static int64_t ttl_due_ms(const struct kube_nd *nd, const struct kube_ngc *ngc, int64_t now_wall_ms)
{
	const struct kube_condition *ready = condition(nd->detail, "Ready");
	if (!ready || ready->status != KUBE_COND_TRUE || strcmp(ready->reason, "Completed") != 0)
		return 0;
	int64_t s = nd->detail->ttl_after_completion_s;
	if (s < 0 && ngc && ngc->has_default_ttl && defaults_apply(nd))
		s = ngc->default_ttl_s;
	if (s < 0)
		return 0;
	/* Completed without a time (a status written by hand): its TTL has run already. */
	return ready->since_ms > 0 ? ready->since_ms + s * 1000 : now_wall_ms;
}

/* Keeps the earlier of the due time @*due (0: none) and @at for reason @r. */
static void sooner(int64_t *due, enum pol_end_reason *why, int64_t at, enum pol_end_reason r)
{
	if (at && (!*due || at < *due)) {
		*due = at;
		*why = r;
	}
}

/* Looks at one Granted request: records an end, a stale status, or the next due time. */
static void look(const struct kube_snapshot *s, const struct kube_nd *nd,
		 const struct kube_ngc *ngc, int64_t now_wall_ms, struct ng_arena *arena,
		 struct pol_lifecycle *l)
{
	const struct kube_nd_detail *x = nd->detail;
	int64_t expires = pol_grant_expires_ms(nd, ngc, x->granted_ms);
	const uint32_t *gone;
	uint16_t ngone = deleted_nodes(s, nd, arena, &gone);
	/* All gone, as a status written from an earlier snapshot already says: one snapshot alone
	 * never ends a grant, and one without any node is believed about none. */
	size_t nnodes;
	(void)kube_snapshot_nodes(s, &nnodes);
	if (!nnodes)
		ngone = 0;
	bool all_gone = nd->ndisrupted && ngone == nd->ndisrupted &&
			same_ids(gone, ngone, x->deleted_nodes, x->ndeleted_nodes);
	bool expires_stale = x->expires_ms != expires;
	bool deleted_stale = !same_ids(gone, ngone, x->deleted_nodes, x->ndeleted_nodes);
	if (expires_stale || deleted_stale)
		l->stale[l->nstale++] = (struct pol_expiry){
		    nd, expires, ngone ? gone : NULL, ngone, expires_stale, deleted_stale};
	/* Nothing is left to keep when every node is gone: budgets count none of them. */
	if (kept(x) && !all_gone)
		return;
	int64_t due = 0;
	enum pol_end_reason why = POL_END_DEADLINE;
	if (!kept(x)) {
		sooner(&due, &why, expires, POL_END_DEADLINE);
		sooner(&due, &why, ttl_due_ms(nd, ngc, now_wall_ms), POL_END_TTL);
		sooner(&due, &why, drain_release_due_ms(nd, ngc), POL_END_DRAIN_DEADLINE);
	}
	if (all_gone)
		sooner(&due, &why, now_wall_ms, POL_END_NODES_DELETED);
	if (!due)
		return;
	if (due <= now_wall_ms)
		l->ends[l->nends++] = (struct pol_end){nd, why, due};
	else if (!l->next_wall_ms || due < l->next_wall_ms)
		l->next_wall_ms = due;
}

int64_t pol_auto_request_idle_ms(const struct kube_ngc *ngc)
{
	int64_t s = ngc && ngc->auto_request_idle_s > 0 ? ngc->auto_request_idle_s
							: KUBE_DEFAULT_AUTO_IDLE_S;
	return s * 1000;
}

/* Whether @nd is a request eviction.autoRequest made, Pending or Granted, for one node. */
static bool auto_made(const struct kube_snapshot *s, const struct kube_nd *nd)
{
	if (!nd->detail || !nd->detail->auto_request || nd->deleting || nd->nnode_names != 1 ||
	    (nd->state != KUBE_ND_PENDING && nd->state != KUBE_ND_GRANTED))
		return false;
	const char *name = ng_intern_str(kube_snapshot_pool(s), nd->name, NULL);
	return name && strncmp(name, "auto-", 5) == 0;
}

int64_t pol_auto_request_end(const struct kube_snapshot *s, const struct kube_nd *nd,
			     const struct kube_ngc *ngc, int64_t now_wall_ms,
			     enum pol_end_reason *why)
{
	if (!auto_made(s, nd))
		return 0;
	const struct kube_nd_detail *x = nd->detail;
	const struct kube_condition *ready = condition(x, "Ready");
	if (kept(x) || (ready && pol_drain_phase_failed(pol_drain_phase_of(ready->reason))))
		return 0;
	const struct kube_node *node = kube_snapshot_find_node(s, nd->node_names[0]);
	*why = !node ? POL_END_NODE_DELETED : POL_END_NODE_UNCORDONED;
	if (!node || (x->node_cordoned && !(node->flags & KUBE_NODE_UNSCHEDULABLE)))
		return now_wall_ms;
	int64_t used = nd->created_ms > x->last_used_ms ? nd->created_ms : x->last_used_ms;
	*why = POL_END_AUTO_IDLE;
	return ngc && used > 0 ? used + pol_auto_request_idle_ms(ngc) : 0;
}

/* Looks at one request eviction.autoRequest made, unless it ends already. */
static void look_auto(const struct kube_snapshot *s, const struct kube_nd *nd,
		      const struct kube_ngc *ngc, int64_t now_wall_ms, struct pol_lifecycle *l)
{
	enum pol_end_reason why;
	if (l->nends && l->ends[l->nends - 1].nd == nd)
		return;
	int64_t due = pol_auto_request_end(s, nd, ngc, now_wall_ms, &why);
	if (due && due <= now_wall_ms)
		l->ends[l->nends++] = (struct pol_end){nd, why, due};
	else if (due && (!l->next_wall_ms || due < l->next_wall_ms))
		l->next_wall_ms = due;
}

ng_status pol_lifecycle_ends(const struct kube_snapshot *s, int64_t now_wall_ms,
			     struct ng_arena *arena, struct pol_lifecycle *ret)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	if (ngc && ngc->invalid)
		ngc = NULL;
	struct pol_lifecycle l = {0};
	l.ends = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*l.ends));
	l.stale = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*l.stale));
	if (!l.ends || !l.stale)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct kube_nd *nd = &nds[i];
		if (!nd->deleting && nd->state == KUBE_ND_GRANTED && nd->detail)
			look(s, nd, ngc, now_wall_ms, arena, &l);
		look_auto(s, nd, ngc, now_wall_ms, &l);
	}
	*ret = l;
	return NG_OK;
}
