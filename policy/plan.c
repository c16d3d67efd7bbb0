/* The what-if planner: the gate's rounds replayed on a simulated clock (policy/plan.h). */
#include "policy/plan.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/clock.h"
#include "common/cron.h"
#include "budgets/selector.h"
#include "kube/snapshot.h"
#include "policy/disruption.h"
#include "policy/drain.h"
#include "policy/lifecycle.h"

#include <stdlib.h>
#include <string.h>

/* A round's decisions share one scratch arena, reset before each (as the gate's round does). */
#define PLAN_SCRATCH_BYTES (64u << 20)
/* Failing budgets kept per waiting request: one of them still failing is enough to know the
 * request still waits, so a subset serves as well as the whole list. */
#define PLAN_FAILING_KEPT 8
/* Window edges the clock may jump to in a row, with nothing in flight, before the requests
 * still waiting are called never granted (budgets whose windows never open together). */
#define PLAN_IDLE_JUMPS 64
/* Decisions between two looks at the clock of max_mono_us: a decision takes microseconds, a
 * look tens of nanoseconds. */
#define PLAN_CLOCK_EVERY 8

enum req_state { REQ_WAIT, REQ_HELD, REQ_DONE, REQ_NEVER };

/* One synthetic request. The record comes first: the ranked pointers are to it. */
struct req {
	struct kube_nd nd;
	uint32_t node;
	uint8_t state; /* enum req_state */
	uint8_t nfailing;
	uint32_t failing[PLAN_FAILING_KEPT]; /* budget keys (below) of its last failing verdicts */
	uint32_t first;                      /* key of the first failing verdict, or NO_BUDGET */
	size_t last_round;                   /* round of its last decision; 0: never decided */
	int64_t until_wall_ms;               /* held: when it is deleted */
	int64_t granted_wall_ms;             /* held or done: when it was granted */
	int64_t wake_wall_ms; /* waiting: when a window edge may change its decision; 0 none */
	uint32_t *impacted;   /* held: every budget its grant counted against */
	size_t nimpacted;
	/* Per budget with maintenance windows that failed it (up to PLAN_FAILING_KEPT): the
	 * window states (window_bit()) it failed the request in since round since[k]. While the
	 * budget releases nothing, its nodes held only grow, so it fails the request again in a
	 * state it failed it in before; once it has failed it in every state, no window edge can
	 * help and the request sleeps until the budget releases (its wake is cleared). */
	uint32_t wkey[PLAN_FAILING_KEPT];
	uint32_t wstates[PLAN_FAILING_KEPT];
	size_t wsince[PLAN_FAILING_KEPT];
	uint8_t nw;
	char reason[POL_PLAN_REASON_BYTES]; /* its last decision's first reason */
};

/* A budget's key: NodeDisruptionBudget k is k, ApplicationDisruptionBudget k is nndb + k,
 * PodDisruptionBudget k (with respectPodDisruptionBudgets) nndb + nadb + k. */
#define NO_BUDGET UINT32_MAX

/* A Granted request of the snapshot and when the simulation ends it. */
struct held0 {
	uint32_t name;
	int64_t until_wall_ms;
	bool ended;
};

struct sim {
	const struct kube_snapshot *s;
	const struct pol_plan_input *in;
	struct ng_arena *out; /* the plan's memory */
	struct ng_arena *scratch;
	struct req *r;
	size_t nr;
	size_t nndb, nadb, npdb;
	size_t *released;    /* per budget key: the last round that released one of its nodes */
	size_t *seen;        /* per budget key: the last round it was counted as a wave's limit */
	size_t all_released; /* the last round something ended whose budgets are not known */
	struct held0 *h0;
	size_t nh0;
	uint32_t *ended; /* names of the snapshot grants that ended, sorted */
	size_t nended;
	struct pol_plan *p;
	size_t cap_waves;
	size_t *win_round;  /* per budget key: the round win_bit[] was computed for */
	uint32_t *win_bit;  /* per budget key: its window state then (window_bit()) */
	int64_t t0_mono_us; /* when the plan began, on the caps' clock */
	unsigned clock_in;  /* decisions until the next look at the clock */
};

const char *pol_plan_stop_str(enum pol_plan_stop why)
{
	switch (why) {
	case POL_PLAN_STOP_WAVES:
		return "waves";
	case POL_PLAN_STOP_ROUNDS:
		return "rounds";
	case POL_PLAN_STOP_DECISIONS:
		return "decisions";
	case POL_PLAN_STOP_TIME:
		return "time";
	default:
		return NULL;
	}
}

static int64_t caps_clock(const struct sim *m)
{
	return m->in->clock_mono_us ? m->in->clock_mono_us(m->in->clock_ctx) : ng_now_mono_us();
}

/* Whether the plan must stop (recording why at @now): before a round (@round) or before a
 * decision. The clock is read before every round and every PLAN_CLOCK_EVERY decisions. */
static bool must_stop(struct sim *m, bool round, int64_t now)
{
	const struct pol_plan_input *in = m->in;
	struct pol_plan *p = m->p;
	enum pol_plan_stop why = POL_PLAN_COMPLETE;
	if (round && in->max_rounds && p->rounds >= in->max_rounds)
		why = POL_PLAN_STOP_ROUNDS;
	else if (!round && in->max_decisions && p->decisions >= in->max_decisions)
		why = POL_PLAN_STOP_DECISIONS;
	else if (in->max_mono_us && (round || m->clock_in == 0)) {
		m->clock_in = PLAN_CLOCK_EVERY;
		if (caps_clock(m) - m->t0_mono_us >= in->max_mono_us)
			why = POL_PLAN_STOP_TIME;
	}
	if (!round && m->clock_in)
		m->clock_in--;
	if (why == POL_PLAN_COMPLETE)
		return false;
	p->stopped = why;
	p->stopped_wall_ms = now;
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

struct named {
	const char *name;
	uint32_t id;
};

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_never(const void *a, const void *b)
{
	return strcmp(((const struct pol_plan_never *)a)->name,
		      ((const struct pol_plan_never *)b)->name);
}

/* NO_BUDGET for a kind of verdict the planner does not know: such a failure is decided again
 * in every round. */
static uint32_t verdict_key(const struct sim *m, const struct pol_budget_verdict *v)
{
	switch (v->kind) {
	case KUBE_RES_NDBS:
		return v->index < m->nndb ? v->index : NO_BUDGET;
	case KUBE_RES_ADBS:
		return v->index < m->nadb ? (uint32_t)m->nndb + v->index : NO_BUDGET;
	case KUBE_RES_PDBS:
		return v->index < m->npdb ? (uint32_t)(m->nndb + m->nadb) + v->index : NO_BUDGET;
	default:
		return NO_BUDGET;
	}
}

static ng_status add_never(struct sim *m, uint32_t node, const char *name, const char *reason,
			   bool rejected, bool unsatisfiable)
{
	struct pol_plan_never *n = &m->p->never[m->p->nnever];
	n->node = node;
	n->name = name;
	n->reason = ng_arena_strndup(m->out, reason, strlen(reason));
	n->rejected = rejected;
	n->unsatisfiable = unsatisfiable;
	if (!n->reason)
		return NG_ENOMEM;
	m->p->nnever++;
	return NG_OK;
}

/* The chosen nodes as synthetic Pending requests, each named after its node (so the gate's
 * last tie-break, the name, orders them by node name), created at the start, retry enabled and
 * no deadline, as a maintenance tool that waits for its turn creates them. */
static ng_status make_requests(struct sim *m)
{
	const struct ng_intern *pool = kube_snapshot_pool(m->s);
	const struct pol_plan_input *in = m->in;
	uint32_t type =
	    in->type ? ng_intern_find(pool, in->type, strlen(in->type)) : NG_INTERN_NONE;
	uint32_t who = in->requestor ? ng_intern_find(pool, in->requestor, strlen(in->requestor))
				     : NG_INTERN_NONE;
	uint32_t *ids = malloc((in->nnodes ? in->nnodes : 1) * sizeof(*ids));
	const char **unknown = malloc((in->nnodes ? in->nnodes : 1) * sizeof(*unknown));
	m->r = calloc(in->nnodes ? in->nnodes : 1, sizeof(*m->r));
	m->p->never = ng_arena_alloc(m->out, (in->nnodes ? in->nnodes : 1) * sizeof(*m->p->never));
	ng_status st = ids && unknown && m->r && m->p->never ? NG_OK : NG_ENOMEM;
	size_t n = 0, nu = 0;
	for (size_t i = 0; st == NG_OK && i < in->nnodes; i++) {
		const char *name = in->nodes[i];
		uint32_t id = ng_intern_find(pool, name, strlen(name));
		if (id == NG_INTERN_NONE || !kube_snapshot_find_node(m->s, id))
			unknown[nu++] = name;
		else
			ids[n++] = id;
	}
	/* Names that are no node: listed once each (sorted, so a repeat is the one before). */
	if (st == NG_OK)
		qsort(unknown, nu, sizeof(*unknown), cmp_str);
	for (size_t i = 0; st == NG_OK && i < nu; i++) {
		if (i && strcmp(unknown[i], unknown[i - 1]) == 0)
			continue;
		const char *copy = ng_arena_strndup(m->out, unknown[i], strlen(unknown[i]));
		st = copy ? add_never(m, NG_INTERN_NONE, copy, "not a node of the cluster", true,
				      false)
			  : NG_ENOMEM;
	}
	free(unknown);
	if (st != NG_OK) {
		free(ids);
		return st;
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (size_t i = 0; i < n; i++) {
		if (m->nr && m->r[m->nr - 1].node == ids[i])
			continue; /* named twice */
		struct req *r = &m->r[m->nr++];
		r->node = ids[i];
		r->nd = (struct kube_nd){
		    .name = ids[i],
		    .state = KUBE_ND_PENDING,
		    .type = type,
		    .requestor = who,
		    .nnode_names = 1,
		    .node_names = &r->node,
		    .retry = true,
		    .created_ms = in->start_wall_ms,
		    .rv = "",
		    .uid = "",
		    .status_reason = "",
		};
		r->first = NO_BUDGET;
	}
	free(ids);
	return NG_OK;
}

/* The snapshot's Granted requests: each holds its nodes until its spec.duration after its
 * grant, or the drain time when it has none, or its deadline when that comes sooner, and at
 * least until the start. */
static ng_status held_at_start(struct sim *m)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(m->s, &n);
	m->h0 = calloc(n ? n : 1, sizeof(*m->h0));
	m->ended = calloc(n ? n : 1, sizeof(*m->ended));
	if (!m->h0 || !m->ended)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (nds[i].state != KUBE_ND_GRANTED || nds[i].deleting)
			continue;
		const struct kube_nd_detail *d = nds[i].detail;
		int64_t granted = d && d->granted_ms > 0 ? d->granted_ms : m->in->start_wall_ms;
		int64_t hold = d && d->duration_ms >= 0 ? d->duration_ms : m->in->drain_ms;
		/* A duration of centuries ends with the times a status can say. */
		int64_t until =
		    hold > NG_RFC3339_MAX_MS - granted ? NG_RFC3339_MAX_MS : granted + hold;
		/* Its deadline ends it sooner: the gate deletes it then (policy/lifecycle.h). */
		int64_t expires =
		    pol_grant_expires_ms(&nds[i], kube_snapshot_config(m->s), granted);
		if (expires && expires < until)
			until = expires;
		m->h0[m->nh0++] = (struct held0){
		    nds[i].name, until > m->in->start_wall_ms ? until : m->in->start_wall_ms,
		    false};
	}
	m->p->held_at_start = m->nh0;
	return NG_OK;
}

/* Ends at @now what is due: the simulated requests deleted after their drain (their budgets
 * may now let others through), the snapshot's grants at their end. */
static void release_due(struct sim *m, size_t round, int64_t now)
{
	for (size_t i = 0; i < m->nr; i++) {
		struct req *r = &m->r[i];
		if (r->state != REQ_HELD || r->until_wall_ms > now)
			continue;
		r->state = REQ_DONE;
		for (size_t k = 0; k < r->nimpacted; k++)
			if (r->impacted[k] != NO_BUDGET)
				m->released[r->impacted[k]] = round;
			else
				m->all_released = round; /* a budget the planner has no key for */
		free(r->impacted);
		r->impacted = NULL;
		r->nimpacted = 0;
	}
	bool ended = false;
	for (size_t i = 0; i < m->nh0; i++)
		if (!m->h0[i].ended && m->h0[i].until_wall_ms <= now) {
			m->h0[i].ended = true;
			m->ended[m->nended++] = m->h0[i].name;
			ended = true;
		}
	if (ended) {
		qsort(m->ended, m->nended, sizeof(*m->ended), cmp_u32);
		m->all_released = round; /* which budgets it counted against is not known here */
	}
}

/* The budget of key @key, with windows, as its common part; NULL for a PodDisruptionBudget or a
 * budget without windows. */
static const struct kube_budget_common *windowed(const struct sim *m, uint32_t key)
{
	size_t n;
	const struct kube_budget_common *b = NULL;
	if (key < m->nndb)
		b = &kube_snapshot_ndbs(m->s, &n)[key].b;
	else if (key < m->nndb + m->nadb)
		b = &kube_snapshot_adbs(m->s, &n)[key - m->nndb].b;
	/* A budget with exclusions or pacing is not memoised by window state: an exclusion's end,
	 * an interval's or a soak's changes its verdict too, and the decision's wake time covers
	 * it. */
	return b && b->nwindows && !b->nexclusions && !b->min_interval_ms && !b->soak_ms ? b : NULL;
}

/* Budget @b's window state at @now as a bit: bit 0 when no window is open, bit 1 + i when
 * window i is the first open one in spec order (the one whose limits apply). Its limits, and so
 * its verdict for a given set of held nodes, are a function of this state. Computed once per
 * round per budget. */
static uint32_t window_bit(struct sim *m, uint32_t key, const struct kube_budget_common *b,
			   size_t round, int64_t now)
{
	if (m->win_round[key] == round)
		return m->win_bit[key];
	uint32_t bit = 1;
	for (size_t i = 0; i < b->nwindows && i < 31; i++) {
		struct ng_window_at at;
		ng_window_at(&b->windows[i].cron, b->windows[i].tz, b->windows[i].duration_ms, now,
			     &at);
		if (at.open) {
			bit = 1u << (i + 1);
			break;
		}
	}
	m->win_round[key] = round;
	m->win_bit[key] = bit;
	return bit;
}

/* Records that @r's decision at @now (round @round) failed on its budgets with windows, in
 * their current window states. True when one of them has now failed it in every state it can
 * be in since it last released a node: no window edge can change the decision before a release,
 * so the request need not be woken at the edges. */
static bool note_window_failures(struct sim *m, struct req *r, size_t round, int64_t now)
{
	bool sleeps = false;
	for (uint8_t k = 0; k < r->nfailing; k++) {
		uint32_t key = r->failing[k];
		const struct kube_budget_common *b = windowed(m, key);
		if (!b)
			continue;
		uint32_t bit = window_bit(m, key, b, round, now);
		size_t j = 0, free_slot = PLAN_FAILING_KEPT;
		for (; j < r->nw && r->wkey[j] != key; j++)
			if (free_slot == PLAN_FAILING_KEPT &&
			    (m->released[r->wkey[j]] > r->wsince[j] ||
			     m->all_released > r->wsince[j]))
				free_slot = j;
		if (j == r->nw) {
			if (r->nw < PLAN_FAILING_KEPT)
				r->nw++;
			else if (free_slot < PLAN_FAILING_KEPT)
				j = free_slot;
			else
				continue; /* the memo is full of budgets still valid */
			r->wkey[j] = key;
			r->wstates[j] = 0;
			r->wsince[j] = round;
		}
		/* A release since the entry began: what it saw no longer holds. */
		if (m->released[key] > r->wsince[j] || m->all_released > r->wsince[j]) {
			r->wstates[j] = 0;
			r->wsince[j] = round;
		}
		r->wstates[j] |= bit;
		size_t nstates = b->nwindows < 31 ? b->nwindows + 1u : 32u;
		uint32_t all = nstates == 32 ? UINT32_MAX : (1u << nstates) - 1u;
		if ((r->wstates[j] & all) == all)
			sleeps = true;
	}
	return sleeps;
}

/* Whether @r, which waited after its last decision, still must: one of the budgets that failed
 * it then has released nothing since, so it holds at least as many nodes now (grants only add)
 * and fails again. Not decided again, it keeps its reason. Without failing budgets (held back
 * by another rule), or after an end whose budgets are unknown, it is decided again. */
static bool still_waits(const struct sim *m, const struct req *r, int64_t now)
{
	/* A window edge of a budget that held it back has come: its limits changed. */
	if (!r->last_round || m->all_released > r->last_round ||
	    (r->wake_wall_ms && now >= r->wake_wall_ms))
		return false;
	for (uint8_t k = 0; k < r->nfailing; k++)
		if (m->released[r->failing[k]] <= r->last_round)
			return true;
	return false;
}

/* A wave's limits while its round runs: budgets by key, other rules by reason. */
struct round_limits {
	struct pol_plan_limit l[POL_PLAN_MAX_LIMITS];
	uint32_t key[POL_PLAN_MAX_LIMITS];
	size_t n, more, waiting;
};

/* Counts @r, waiting after round @round, against the first reason it waits for. */
static void note_limit(struct sim *m, struct round_limits *rl, const struct req *r, size_t round)
{
	rl->waiting++;
	for (size_t i = 0; i < rl->n; i++)
		if (rl->key[i] == r->first &&
		    (r->first != NO_BUDGET || strcmp(rl->l[i].reason, r->reason) == 0)) {
			rl->l[i].waiting++;
			return;
		}
	bool budget = r->first != NO_BUDGET;
	if (budget && m->seen[r->first] == round)
		return; /* counted among the ones not listed */
	if (budget)
		m->seen[r->first] = round;
	if (rl->n == POL_PLAN_MAX_LIMITS) {
		rl->more += budget;
		return;
	}
	struct pol_plan_limit *l = &rl->l[rl->n];
	*l = (struct pol_plan_limit){.budget = budget,
				     .ns = NG_INTERN_NONE,
				     .name = NG_INTERN_NONE,
				     .waiting = 1,
				     .reason = r->reason};
	size_t n, k = r->first;
	if (budget && k < m->nndb) {
		const struct kube_ndb *b = &kube_snapshot_ndbs(m->s, &n)[k];
		*l = (struct pol_plan_limit){true, KUBE_RES_NDBS, b->b.ns, b->b.name, 1, r->reason};
	} else if (budget && k < m->nndb + m->nadb) {
		const struct kube_adb *b = &kube_snapshot_adbs(m->s, &n)[k - m->nndb];
		*l = (struct pol_plan_limit){true, KUBE_RES_ADBS, b->b.ns, b->b.name, 1, r->reason};
	} else if (budget) {
		const struct kube_pdb *b = &kube_snapshot_pdbs(m->s, &n)[k - m->nndb - m->nadb];
		*l = (struct pol_plan_limit){true, KUBE_RES_PDBS, b->ns, b->name, 1, r->reason};
	}
	rl->key[rl->n++] = r->first;
}

/* What @d says about @r, which waits: the failing budgets (the first PLAN_FAILING_KEPT) and
 * the first reason. */
static void keep_failure(struct sim *m, struct req *r, const struct pol_gate_decision *d)
{
	r->nfailing = 0;
	r->first = NO_BUDGET;
	const char *why = NULL;
	for (size_t k = 0; k < d->nverdicts; k++) {
		const struct pol_budget_verdict *v = &d->verdicts[k];
		if (v->ok)
			continue;
		uint32_t key = verdict_key(m, v);
		if (!why) {
			r->first = key;
			why = v->reason;
		}
		if (key != NO_BUDGET && r->nfailing < PLAN_FAILING_KEPT)
			r->failing[r->nfailing++] = key;
	}
	why = why ? why : d->reason;
	ng_fmt(r->reason, sizeof(r->reason), "%s", why);
}

/* @r granted at @now by @d: it holds its node for the drain time, counted against @d's
 * budgets, which its deletion releases. */
static ng_status hold(struct sim *m, struct req *r, const struct pol_gate_decision *d, int64_t now)
{
	r->impacted = malloc((d->nverdicts ? d->nverdicts : 1) * sizeof(*r->impacted));
	if (!r->impacted)
		return NG_ENOMEM;
	for (size_t k = 0; k < d->nverdicts; k++)
		r->impacted[k] = verdict_key(m, &d->verdicts[k]);
	r->nimpacted = d->nverdicts;
	r->state = REQ_HELD;
	r->granted_wall_ms = now;
	r->until_wall_ms = now + m->in->drain_ms;
	return NG_OK;
}

/* The wave of round @round at @now: the @n nodes granted (sorted here by name) and its limits. */
static ng_status add_wave(struct sim *m, const uint32_t *nodes, size_t n,
			  const struct round_limits *rl, int64_t now)
{
	const struct ng_intern *pool = kube_snapshot_pool(m->s);
	struct pol_plan_wave *w = &m->p->waves[m->p->nwaves];
	struct named *byname = malloc(n * sizeof(*byname));
	uint32_t *ids = ng_arena_alloc(m->out, n * sizeof(*ids));
	w->limits = ng_arena_alloc(m->out, (rl->n ? rl->n : 1) * sizeof(*w->limits));
	if (!byname || !ids || !w->limits) {
		free(byname);
		return NG_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		byname[i] = (struct named){ng_intern_str(pool, nodes[i], NULL), nodes[i]};
	qsort(byname, n, sizeof(*byname), cmp_named);
	for (size_t i = 0; i < n; i++)
		ids[i] = byname[i].id;
	free(byname);
	w->start_wall_ms = now;
	w->nodes = ids;
	w->nnodes = n;
	for (size_t i = 0; i < rl->n; i++) {
		w->limits[i] = rl->l[i];
		w->limits[i].reason =
		    ng_arena_strndup(m->out, rl->l[i].reason, strlen(rl->l[i].reason));
		if (!w->limits[i].reason)
			return NG_ENOMEM;
	}
	w->nlimits = rl->n;
	w->more_limits = rl->more;
	w->waiting = rl->waiting;
	m->p->nwaves++;
	return NG_OK;
}

/* One gate round at @now, as controller/gate.c runs it: a ledger of what is held, the waiting
 * requests ranked, each decided in turn, each grant recorded before the next decision. With
 * @all, requests known to wait still are decided too (for their reasons as of now). */
static ng_status decide_round(struct sim *m, size_t round, int64_t now, bool all)
{
	m->p->rounds++;
	struct pol_gate_config cfg;
	pol_gate_config_from(m->s, &cfg);
	struct pol_ledger *l = pol_ledger_create_without(m->s, m->ended, m->nended);
	if (l)
		pol_ledger_set_now(l, now);
	const struct kube_nd **q = malloc((m->nr ? m->nr : 1) * sizeof(*q));
	uint32_t *granted = malloc((m->nr ? m->nr : 1) * sizeof(*granted));
	struct round_limits *rl = calloc(1, sizeof(*rl));
	size_t nq = 0, ng = 0;
	ng_status st = l && q && granted && rl ? NG_OK : NG_ENOMEM;
	for (size_t i = 0; st == NG_OK && i < m->nr; i++) {
		struct req *r = &m->r[i];
		if (r->state == REQ_HELD) {
			st = pol_ledger_grant_at(l, r->nd.name, &r->node, 1, r->granted_wall_ms);
		} else if (r->state == REQ_DONE && r->granted_wall_ms) {
			/* Pacing: its grant still spaces the next one of a paced budget, and its
			 * node, back when it was deleted, soaks from then. */
			pol_ledger_past_grant(l, r->node, r->granted_wall_ms);
			st = pol_ledger_given_back(l, r->node, r->until_wall_ms);
		} else if (r->state == REQ_WAIT)
			q[nq++] = &r->nd;
	}
	ng_arena_reset(m->scratch);
	st = st ? st : pol_rank_pending(m->s, &cfg, q, nq, m->scratch);
	for (size_t i = 0; st == NG_OK && i < nq; i++) {
		struct req *r = (struct req *)(uintptr_t)q[i]; /* the record is its first member */
		if (!all && still_waits(m, r, now)) {
			note_limit(m, rl, r, round);
			continue;
		}
		if (must_stop(m, false, now)) {
			/* Stopped mid-round: the requests not reached count as waiting. */
			rl->waiting += nq - i;
			break;
		}
		struct pol_gate_decision d;
		ng_arena_reset(m->scratch);
		st = pol_evaluate_disruption(m->s, &cfg, l, q[i], now, m->scratch, &d);
		if (st != NG_OK)
			break;
		m->p->decisions++;
		r->last_round = round;
		r->wake_wall_ms = d.outcome == POL_GATE_PENDING ? d.wake_wall_ms : 0;
		if (d.outcome == POL_GATE_GRANT) {
			/* Health hooks are assumed to answer healthy. */
			st = pol_ledger_grant_at(l, r->nd.name, d.nodes, d.nnodes, now);
			st = st ? st : hold(m, r, &d, now);
			granted[ng++] = r->node;
		} else if (d.outcome == POL_GATE_REJECT || d.unsatisfiable) {
			/* Budgets do not change in a plan: one that can never allow the request
			 * never will, and nothing needs to be waited for to know it. */
			r->state = REQ_NEVER;
			st = add_never(m, r->node,
				       ng_intern_str(kube_snapshot_pool(m->s), r->node, NULL),
				       d.reason, d.outcome == POL_GATE_REJECT, d.unsatisfiable);
		} else {
			keep_failure(m, r, &d);
			if (note_window_failures(m, r, round, now))
				r->wake_wall_ms = 0;
			note_limit(m, rl, r, round);
		}
	}
	if (st == NG_OK && ng)
		st = add_wave(m, granted, ng, rl, now);
	free(rl);
	free(granted);
	free(q);
	pol_ledger_destroy(l);
	return st;
}

/* The earliest window edge after @now at which a waiting request's decision may change; 0:
 * none. */
static int64_t next_wake(const struct sim *m, int64_t now)
{
	int64_t next = 0;
	for (size_t i = 0; i < m->nr; i++) {
		int64_t t = m->r[i].wake_wall_ms;
		if (m->r[i].state == REQ_WAIT && t > now && (!next || t < next))
			next = t;
	}
	return next;
}

/* The next end of a grant (0: none in flight); *@ret_waiting gets the requests waiting. */
static int64_t next_end(const struct sim *m, size_t *ret_waiting)
{
	size_t waiting = 0;
	int64_t next = 0;
	for (size_t i = 0; i < m->nr; i++) {
		waiting += m->r[i].state == REQ_WAIT;
		if (m->r[i].state == REQ_HELD && (!next || m->r[i].until_wall_ms < next))
			next = m->r[i].until_wall_ms;
	}
	for (size_t i = 0; i < m->nh0; i++)
		if (!m->h0[i].ended && (!next || m->h0[i].until_wall_ms < next))
			next = m->h0[i].until_wall_ms;
	*ret_waiting = waiting;
	return next;
}

/* Allocates what the simulation keeps per budget, its requests and its waves. */
static ng_status sim_start(struct sim *m)
{
	const struct kube_snapshot *s = m->s;
	const struct pol_plan_input *in = m->in;
	(void)kube_snapshot_ndbs(s, &m->nndb);
	(void)kube_snapshot_adbs(s, &m->nadb);
	(void)kube_snapshot_pdbs(s, &m->npdb);
	m->released = calloc(m->nndb + m->nadb + m->npdb + 1, sizeof(*m->released));
	m->seen = calloc(m->nndb + m->nadb + m->npdb + 1, sizeof(*m->seen));
	m->win_round = calloc(m->nndb + m->nadb + m->npdb + 1, sizeof(*m->win_round));
	m->win_bit = calloc(m->nndb + m->nadb + m->npdb + 1, sizeof(*m->win_bit));
	m->scratch = ng_arena_create(PLAN_SCRATCH_BYTES);
	m->t0_mono_us = caps_clock(m);
	ng_status st =
	    m->released && m->seen && m->win_round && m->win_bit && m->scratch ? NG_OK : NG_ENOMEM;
	st = st ? st : make_requests(m);
	st = st ? st : held_at_start(m);
	m->cap_waves = in->max_waves && in->max_waves < POL_PLAN_MAX_WAVES ? in->max_waves
									   : POL_PLAN_MAX_WAVES;
	if (m->cap_waves > m->nr)
		m->cap_waves = m->nr;
	m->p->waves = st ? NULL : ng_arena_alloc(m->out, (m->cap_waves + 1) * sizeof(*m->p->waves));
	if (st == NG_OK && !m->p->waves)
		st = NG_ENOMEM;
	return st;
}

/* Nothing is in flight and no window will change a decision: the waiting requests are never
 * granted. */
static ng_status never_granted_all(struct sim *m)
{
	ng_status st = NG_OK;
	for (size_t i = 0; st == NG_OK && i < m->nr; i++)
		if (m->r[i].state == REQ_WAIT) {
			m->r[i].state = REQ_NEVER;
			st = add_never(m, m->r[i].node,
				       ng_intern_str(kube_snapshot_pool(m->s), m->r[i].node, NULL),
				       m->r[i].reason, false, false);
		}
	return st;
}

/* The gate's rounds, from the plan's start until nothing waits or the plan stops;
 * *@ret_waiting gets the requests still waiting. */
static ng_status run_rounds(struct sim *m, size_t *ret_waiting)
{
	struct pol_plan *p = m->p;
	ng_status st = NG_OK;
	int64_t now = m->in->start_wall_ms;
	size_t waiting = m->nr;
	size_t idle = 0; /* rounds in a row with nothing granted and nothing in flight */
	for (size_t round = 1; st == NG_OK && waiting; round++) {
		release_due(m, round, now);
		if (p->nwaves == m->cap_waves) {
			/* Capped: what is left is listed as not planned. */
			p->stopped = POL_PLAN_STOP_WAVES;
			p->stopped_wall_ms = now;
			break;
		}
		if (must_stop(m, true, now))
			break;
		size_t waves = p->nwaves;
		st = decide_round(m, round, now, false);
		if (p->stopped)
			break;
		int64_t next = next_end(m, &waiting);
		if (st == NG_OK && waiting && !next) {
			/* Nothing in flight: decided once more, all of them, so that the reasons
			 * are those of now (a request that was not decided again kept an older
			 * one). */
			if (must_stop(m, true, now))
				break;
			st = decide_round(m, ++round, now, true);
			if (p->stopped)
				break;
			next = next_end(m, &waiting);
		}
		idle = next || p->nwaves > waves ? 0 : idle + 1;
		/* The clock jumps to the next window edge that may change a decision, if that
		 * comes before the next end of a grant; with nothing in flight, at most
		 * PLAN_IDLE_JUMPS times in a row. */
		int64_t wake = next_wake(m, now);
		if (wake && (next ? wake < next : idle <= PLAN_IDLE_JUMPS))
			next = wake;
		if (st == NG_OK && waiting && !next) {
			st = never_granted_all(m);
			waiting = 0;
		}
		now = next ? next : now;
	}
	*ret_waiting = waiting;
	return st;
}

/* The requests still waiting (@waiting of them), listed as not planned, sorted. */
static ng_status list_unplanned(struct sim *m, size_t waiting)
{
	struct pol_plan *p = m->p;
	p->truncated = true;
	p->unplanned = ng_arena_alloc(m->out, waiting * sizeof(*p->unplanned));
	if (!p->unplanned)
		return NG_ENOMEM;
	for (size_t i = 0; i < m->nr; i++)
		if (m->r[i].state == REQ_WAIT)
			p->unplanned[p->nunplanned++] =
			    ng_intern_str(kube_snapshot_pool(m->s), m->r[i].node, NULL);
	qsort(p->unplanned, p->nunplanned, sizeof(*p->unplanned), cmp_str);
	return NG_OK;
}

static void sim_free(struct sim *m)
{
	for (size_t i = 0; m->r && i < m->nr; i++)
		free(m->r[i].impacted);
	free(m->r);
	free(m->h0);
	free(m->ended);
	free(m->released);
	free(m->seen);
	free(m->win_round);
	free(m->win_bit);
	ng_arena_destroy(m->scratch);
}

ng_status pol_plan_run(const struct kube_snapshot *s, const struct pol_plan_input *in,
		       struct ng_arena *arena, struct pol_plan *ret)
{
	if (in->nnodes > POL_PLAN_MAX_NODES)
		return NG_ELIMIT;
	struct pol_plan p = {0};
	struct sim m = {.s = s, .in = in, .out = arena, .p = &p};
	ng_status st = sim_start(&m);
	size_t waiting = m.nr;
	if (st == NG_OK)
		st = run_rounds(&m, &waiting);
	if (st == NG_OK && p.stopped) {
		waiting = 0;
		for (size_t i = 0; i < m.nr; i++)
			waiting += m.r[i].state == REQ_WAIT;
	}
	if (st == NG_OK && waiting)
		st = list_unplanned(&m, waiting);
	if (st == NG_OK) {
		qsort(p.never, p.nnever, sizeof(*p.never), cmp_never);
		p.end_wall_ms = in->start_wall_ms;
		for (size_t i = 0; i < p.nwaves; i++) {
			p.nplanned += p.waves[i].nnodes;
			if (p.waves[i].start_wall_ms + in->drain_ms > p.end_wall_ms)
				p.end_wall_ms = p.waves[i].start_wall_ms + in->drain_ms;
		}
		*ret = p;
	}
	sim_free(&m);
	return st;
}

static void json_limit(struct ng_jw *w, const struct ng_intern *pool,
		       const struct pol_plan_limit *l)
{
	ng_jw_obj(w);
	ng_jw_key(w, "reference");
	if (l->budget) {
		ng_jw_obj(w);
		ng_jw_kstr(w, "kind",
			   l->kind == KUBE_RES_NDBS   ? "NodeDisruptionBudget"
			   : l->kind == KUBE_RES_ADBS ? "ApplicationDisruptionBudget"
						      : "PodDisruptionBudget");
		if (l->ns != NG_INTERN_NONE)
			ng_jw_kstr(w, "namespace", ng_intern_str(pool, l->ns, NULL));
		ng_jw_kstr(w, "name", ng_intern_str(pool, l->name, NULL));
		ng_jw_obj_end(w);
	} else {
		ng_jw_null(w);
	}
	ng_jw_kstr(w, "reason", l->reason);
	ng_jw_ki64(w, "waiting", (int64_t)l->waiting);
	ng_jw_obj_end(w);
}

/* The plan's "summary" member. */
static void json_summary(struct ng_jw *w, const struct pol_plan_input *in, const struct pol_plan *p)
{
	ng_jw_key(w, "summary");
	ng_jw_obj(w);
	ng_jw_ki64(w, "nodes", (int64_t)(p->nplanned + p->nnever + p->nunplanned));
	ng_jw_ki64(w, "planned", (int64_t)p->nplanned);
	ng_jw_ki64(w, "neverGranted", (int64_t)p->nnever);
	ng_jw_ki64(w, "notPlanned", (int64_t)p->nunplanned);
	ng_jw_ki64(w, "waves", (int64_t)p->nwaves);
	ng_jw_ki64(w, "heldAtStart", (int64_t)p->held_at_start);
	ng_jw_key(w, "end");
	ng_jw_time(w, p->end_wall_ms);
	ng_jw_ki64(w, "totalSeconds", (p->end_wall_ms - in->start_wall_ms) / 1000);
	ng_jw_kbool(w, "truncated", p->truncated);
	const char *why = p->truncated ? pol_plan_stop_str(p->stopped) : NULL;
	ng_jw_key(w, "stoppedBy");
	if (why)
		ng_jw_str(w, why);
	else
		ng_jw_null(w);
	ng_jw_key(w, "stoppedAt");
	if (why)
		ng_jw_time(w, p->stopped_wall_ms);
	else
		ng_jw_null(w);
	ng_jw_ki64(w, "rounds", (int64_t)p->rounds);
	ng_jw_ki64(w, "decisions", (int64_t)p->decisions);
	ng_jw_obj_end(w);
}

/* Wave @i, @v, as an element of "waves". */
static void json_wave(struct ng_jw *w, const struct ng_intern *pool,
		      const struct pol_plan_input *in, const struct pol_plan_wave *v, size_t i)
{
	ng_jw_obj(w);
	ng_jw_ki64(w, "wave", (int64_t)i + 1);
	ng_jw_key(w, "start");
	ng_jw_time(w, v->start_wall_ms);
	ng_jw_ki64(w, "offsetSeconds", (v->start_wall_ms - in->start_wall_ms) / 1000);
	ng_jw_key(w, "nodes");
	ng_jw_arr(w);
	for (size_t k = 0; k < v->nnodes; k++)
		ng_jw_str(w, ng_intern_str(pool, v->nodes[k], NULL));
	ng_jw_arr_end(w);
	ng_jw_ki64(w, "waiting", (int64_t)v->waiting);
	ng_jw_key(w, "limitedBy");
	ng_jw_arr(w);
	for (size_t k = 0; k < v->nlimits; k++)
		json_limit(w, pool, &v->limits[k]);
	ng_jw_arr_end(w);
	ng_jw_ki64(w, "moreLimits", (int64_t)v->more_limits);
	ng_jw_obj_end(w);
}

ng_status pol_plan_json(const struct kube_snapshot *s, const struct pol_plan_input *in,
			const struct pol_plan *p, struct ng_buf *b)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_key(&w, "start");
	ng_jw_time(&w, in->start_wall_ms);
	ng_jw_ki64(&w, "drainSeconds", in->drain_ms / 1000);
	ng_jw_kstr(&w, "type", in->type);
	ng_jw_kstr(&w, "requestor", in->requestor);
	ng_jw_key(&w, "assumptions");
	ng_jw_arr(&w);
	ng_jw_str(&w, "health hooks answer healthy");
	ng_jw_str(&w, "multistep hooks prepare and are ready at once");
	ng_jw_str(&w, "the alert gate lets grants through");
	ng_jw_str(&w, "Pending requests already in the cluster are not simulated");
	ng_jw_str(&w, "nodes, pods and budgets stay as the snapshot shows them");
	ng_jw_arr_end(&w);
	json_summary(&w, in, p);
	ng_jw_key(&w, "waves");
	ng_jw_arr(&w);
	for (size_t i = 0; i < p->nwaves; i++) {
		json_wave(&w, pool, in, &p->waves[i], i);
	}
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "neverGranted");
	ng_jw_arr(&w);
	for (size_t i = 0; i < p->nnever; i++) {
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "node", p->never[i].name);
		ng_jw_kstr(&w, "reason", p->never[i].reason);
		ng_jw_kbool(&w, "rejected", p->never[i].rejected);
		if (p->never[i].unsatisfiable)
			ng_jw_kbool(&w, "unsatisfiable", true);
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "notPlanned");
	ng_jw_arr(&w);
	for (size_t i = 0; i < p->nunplanned; i++)
		ng_jw_str(&w, p->unplanned[i]);
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	ng_status st = ng_jw_finish(&w);
	return st ? st : ng_buf_puts(b, "\n");
}

ng_status pol_plan_select(const struct kube_snapshot *s, const char *text, struct ng_arena *arena,
			  const char ***ret_names, size_t *ret_n, struct ng_err *reterr)
{
	struct kube_selector sel;
	ng_status st = pol_selector_for_pool(text, kube_snapshot_pool(s), arena, &sel, reterr);
	return st ? st : pol_plan_select_nodes(s, &sel, arena, ret_names, ret_n, reterr);
}

ng_status pol_plan_select_nodes(const struct kube_snapshot *s, const struct kube_selector *sel,
				struct ng_arena *arena, const char ***ret_names, size_t *ret_n,
				struct ng_err *reterr)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t n, k = 0;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &n);
	const char **v = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*v));
	if (!v)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (bud_selector_matches(sel, nodes[i].labels, nodes[i].nlabels, pool))
			v[k++] = ng_intern_str(pool, nodes[i].name, NULL);
	if (k > POL_PLAN_MAX_NODES)
		return ng_err_set(reterr, NG_ELIMIT, 0,
				  "the selector selects %zu nodes; at most %d", k,
				  POL_PLAN_MAX_NODES);
	*ret_names = v;
	*ret_n = k;
	return NG_OK;
}
