/* One budget's verdict for one request: its limits, pacing and exclusions, and whether it can
 * ever fit; budget_topology.c holds the topology limits, budget_windows.c the maintenance
 * windows. */
#include "policy/disruption_internal.h"

struct pol_budget_verdict *pd_verdict(struct eval *e, enum kube_resource kind,
				      const struct kube_budget_common *b, size_t index)
{
	if (e->nv == e->capv)
		return NULL;
	struct pol_budget_verdict *v = &e->v[e->nv++];
	/* The reason is written whole by whoever fills the verdict: clearing its 320 bytes for
	 * each of a decision's hundreds of verdicts was a cost of its own. */
	memset(v, 0, offsetof(struct pol_budget_verdict, reason));
	v->reason[0] = '\0';
	v->kind = kind;
	v->ns = b->ns;
	v->name = b->name;
	v->index = (uint32_t)index;
	v->ok = true;
	return v;
}

void pd_fail_v(struct eval *e, struct pol_budget_verdict *v)
{
	v->ok = false;
	e->any_failed = true;
	e->nfailed++;
}

/* A reason being written: as snprintf would write it, cut short at @cap - 1 bytes, without
 * parsing a format for each of the hundreds of verdicts a decision may have. */
struct line {
	char *p;
	size_t cap, len;
};

static void put_n(struct line *b, const char *s, size_t n)
{
	if (b->len + 1 < b->cap) {
		size_t room = b->cap - 1 - b->len;
		memcpy(b->p + b->len, s, n < room ? n : room);
		b->p[b->len + (n < room ? n : room)] = '\0';
	}
	b->len += n;
}

static void put_s(struct line *b, const char *s)
{
	put_n(b, s, strlen(s));
}

/* A string literal, its length known at compile time. */
#define PUT_LIT(b, lit) put_n((b), "" lit, sizeof(lit) - 1)

static void put_i(struct line *b, int64_t v)
{
	char tmp[24], *t = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	*--t = '\0';
	do
		*--t = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--t = '-';
	put_n(b, t, (size_t)(tmp + sizeof(tmp) - 1 - t));
}

/* Names in a failing budget's reason: the requests holding its nodes, as "; held by a, b, c" and
 * "(+N more)" past HOLDERS_NAMED. A holder is a request whose grant (or whose hooks being asked)
 * holds one of the scope's nodes. Nothing when the ledger cannot say (out of memory). */
#define HOLDERS_NAMED 3

static void put_holders_now(struct eval *e, struct line *b, const struct bscope *sc)
{
	uint32_t *h;
	size_t n;
	if (!e->ledger || pd_scope_holders(e->ledger, sc, e->arena, &h, &n) != NG_OK || !n)
		return;
	/* The first few by name, picked in one pass: every failing decision comes here, and a
	 * full sort of a large pool's holders by name would cost n log n string compares. */
	const char *first[HOLDERS_NAMED] = {NULL};
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = str(e, h[i]) ? str(e, h[i]) : "";
		size_t at = k;
		while (at > 0 && strcmp(name, first[at - 1]) < 0)
			at--;
		if (at >= HOLDERS_NAMED)
			continue;
		if (k < HOLDERS_NAMED)
			k++;
		memmove(first + at + 1, first + at, (k - 1 - at) * sizeof(*first));
		first[at] = name;
	}
	PUT_LIT(b, POL_HELD_BY);
	for (size_t i = 0; i < k; i++) {
		if (i)
			PUT_LIT(b, ", ");
		put_s(b, first[i]);
	}
	if (n > HOLDERS_NAMED) {
		PUT_LIT(b, " (+");
		put_i(b, (int64_t)(n - HOLDERS_NAMED));
		PUT_LIT(b, " more)");
	}
}

/* Text @make writes for scope @sc, kept in the ledger's arena at *@keep (*@keep_len) as of the
 * scope's grants *@gen: made again only when one of its nodes was held since. */
static void put_kept(struct eval *e, struct line *b, struct bscope *sc,
		     void (*make)(struct eval *, struct line *, const struct bscope *),
		     const char **keep, size_t *keep_len, uint32_t *gen, bool *ready)
{
	if (!*ready || *gen != sc->gen) {
		char text[sizeof(((struct pol_budget_verdict *)0)->reason)];
		struct line t = {text, sizeof(text), 0};
		text[0] = '\0';
		make(e, &t, sc);
		size_t len = strlen(text); /* t.len counts past the buffer when cut short */
		char *p = ng_arena_alloc(e->ledger->arena, len + 1);
		if (!p) {
			put_n(b, text, len);
			return;
		}
		memcpy(p, text, len + 1);
		*keep = p;
		*keep_len = len;
		*gen = sc->gen;
		*ready = true;
	}
	put_n(b, *keep, *keep_len);
}

/* "; held by ...", kept in the ledger's arena until a grant or a co-holder changes it: every
 * failing decision of a round or a plan writes it again. */
static void put_holders(struct eval *e, struct line *b, struct bscope *sc)
{
	if (!e->ledger) {
		put_holders_now(e, b, sc);
		return;
	}
	if (sc->holders_nco != e->ledger->nco) {
		sc->holders_ready = false;
		sc->holders_nco = e->ledger->nco;
	}
	put_kept(e, b, sc, put_holders_now, &sc->holders, &sc->holders_len, &sc->holders_gen,
		 &sc->holders_ready);
}

static void put_counted_now(struct eval *e, struct line *b, const struct bscope *sc);

/* "; counted unavailable: ...", kept as the holders are. */
static void put_counted(struct eval *e, struct line *b, struct bscope *sc)
{
	if (!sc->unavail || !e->ledger || !sc->ncounted)
		return;
	put_kept(e, b, sc, put_counted_now, &sc->counted, &sc->counted_len, &sc->counted_gen,
		 &sc->counted_ready);
}

/* Why pool node @n counts by its own state, in a few words. */
static const char *counted_why(const struct kube_node *n)
{
	if (n->flags & KUBE_NODE_LEAVING)
		return "marked for deletion";
	if (n->flags & KUBE_NODE_SHUTTING_DOWN)
		return "shutting down";
	if (!(n->flags & KUBE_NODE_READY))
		return "NotReady";
	if (n->flags & KUBE_NODE_UNSCHEDULABLE)
		return "cordoned";
	return "a taint target";
}

/* Names in a failing node budget's reason after the holders: the pool nodes it counts by their
 * state and no grant holds, as "; counted unavailable: a (NotReady), b (marked for deletion)"
 * and "(+N more)" past HOLDERS_NAMED, in pool order. */
static void put_counted_now(struct eval *e, struct line *b, const struct bscope *sc)
{
	size_t nn, named = 0, more = 0;
	const struct kube_node *nodes = kube_snapshot_nodes(e->s, &nn);
	for (size_t k = 0; k < sc->n; k++) {
		if (!sc->unavail[k] || pol_ledger_held_at(e->ledger, sc->idx[k]))
			continue;
		if (named == HOLDERS_NAMED) {
			more++;
			continue;
		}
		if (named++)
			PUT_LIT(b, ", ");
		else
			PUT_LIT(b, "; counted unavailable: ");
		put_s(b, str(e, sc->names[k]));
		PUT_LIT(b, " (");
		put_s(b, counted_why(&nodes[sc->idx[k]]));
		PUT_LIT(b, ")");
	}
	if (more) {
		PUT_LIT(b, " (+");
		put_i(b, (int64_t)more);
		PUT_LIT(b, " more)");
	}
}

/* Applies the limits to scope @sc (its nodes, how many are disrupted, its "what") to which the
 * request adds @added more, and reports. */
static void check_counts(struct eval *e, struct pol_budget_verdict *v, struct bscope *sc,
			 const struct bud_limits *lim, int64_t added)
{
	size_t nscope = sc->n;
	int64_t before = (int64_t)(sc->disrupted + (sc->soak_ready ? sc->soaking : 0));
	struct bud_check c;
	bud_check_limits(lim, (int64_t)nscope, before, added, &c);
	v->allowed = c.allowed;
	v->current = before;
	struct line b = {v->reason, sizeof(v->reason), 0};
	v->reason[0] = '\0';
	put_n(&b, sc->what, sc->what_len);
	PUT_LIT(&b, ": ");
	if (c.ok) {
		put_i(&b, before);
		PUT_LIT(&b, " of ");
		put_i(&b, c.max >= 0 ? c.max : (int64_t)nscope);
		PUT_LIT(&b, " in use, this request adds ");
		put_i(&b, added);
		return;
	}
	pd_fail_v(e, v);
	if (c.max >= 0 && c.after > c.max) {
		put_i(&b, before);
		PUT_LIT(&b, " of ");
		put_i(&b, c.max);
		PUT_LIT(&b, " in use; this request adds ");
		put_i(&b, added);
		PUT_LIT(&b, " (limit ");
		put_i(&b, c.max);
		PUT_LIT(&b, " of ");
		put_i(&b, (int64_t)nscope);
		PUT_LIT(&b, " nodes)");
		put_holders(e, &b, sc);
		put_counted(e, &b, sc);
	} else {
		put_i(&b, c.min);
		PUT_LIT(&b, " of ");
		put_i(&b, (int64_t)nscope);
		PUT_LIT(&b, " nodes must stay undisrupted; ");
		put_i(&b, (int64_t)nscope - c.after);
		PUT_LIT(&b, " would remain");
		put_holders(e, &b, sc);
		put_counted(e, &b, sc);
	}
}

/* ---- requests that can never fit ---- */

/* The largest maximum a budget can ever have, over its scope now. */
struct largest {
	int64_t max;                     /* a node count; -1 when some state has no maximum */
	struct bud_int_or_percent given; /* as the spec gives it */
	int window;                      /* the window whose limit it is; -1: the budget's own */
};

/* The largest maximum @b can ever have over a scope of @n nodes: each window's own, and the
 * budget's own @own where it applies (without windows, outside them with UseDefault, inside a
 * window that sets none). On a tie, the budget's own. False when a window's limit does not
 * read: the budget is then decided as it is, not called impossible. */
static bool largest_max(const struct eval *e, const struct kube_budget_common *b,
			const struct bud_limits *own, int64_t n, struct largest *ret)
{
	bool own_applies = b->nwindows == 0 || b->outside_use_default;
	struct largest l = {.max = -2, .window = -1};
	for (size_t i = 0; i < b->nwindows && i < KUBE_MAX_WINDOWS; i++) {
		struct bud_int_or_percent x;
		if (!b->windows[i].limit.set) {
			own_applies = true;
			continue;
		}
		if (bud_int_or_percent_from(&b->windows[i].limit, e->pool, "", &x, NULL) != NG_OK)
			return false;
		int64_t m = bud_int_or_percent_scaled(&x, n);
		if (m > l.max)
			l = (struct largest){m, x, (int)i};
	}
	if (own_applies && !own->has_max)
		l.max = -1; /* no maximum where the budget's own limits apply */
	else if (own_applies && bud_int_or_percent_scaled(&own->max, n) >= l.max)
		l = (struct largest){bud_int_or_percent_scaled(&own->max, n), own->max, -1};
	*ret = l;
	return true;
}

static void put_nodes(struct line *b, int64_t n)
{
	put_i(b, n);
	if (n == 1)
		PUT_LIT(b, " node");
	else
		PUT_LIT(b, " nodes");
}

/* "needs N node(s) of <what>, which ": how every such reason begins. */
static void put_needs(struct line *b, const struct bscope *sc, int64_t need)
{
	PUT_LIT(b, "needs ");
	put_nodes(b, need);
	PUT_LIT(b, " of ");
	put_n(b, sc->what, sc->what_len);
	PUT_LIT(b, ", which ");
}

/* The end of such a reason: " or split the request" when it would help. */
static void put_split(struct line *b, int64_t need)
{
	if (need > 1)
		PUT_LIT(b, " or split the request");
}

void pd_mark_never(struct eval *e, struct pol_budget_verdict *v)
{
	if (!v->never) {
		v->never = true;
		e->nnever++;
	}
}

/* Failed verdict @v of budget @b (scope @sc, its own limits @own): when the request's @own_n
 * nodes of the scope alone are over the largest maximum the budget can ever have, or leave
 * fewer than its minimum, nothing that happens elsewhere lets it through. Then @v says so,
 * with the numbers and what would make it fit; @field names the maximum
 * ("maxDisruptedNodes", "maxDisruptions"). */
static void check_never(struct eval *e, struct pol_budget_verdict *v, const struct bscope *sc,
			const struct kube_budget_common *b, const struct bud_limits *own,
			int64_t own_n, const char *field)
{
	int64_t n = (int64_t)sc->n;
	struct largest l;
	struct line out = {v->reason, sizeof(v->reason), 0};
	if (!v->ok && own_n > 0 && largest_max(e, b, own, n, &l) && l.max >= 0 && own_n > l.max) {
		put_needs(&out, sc, own_n);
		PUT_LIT(&out, "allows at most ");
		put_i(&out, l.max);
		if (l.given.is_percent) {
			PUT_LIT(&out, " (");
			put_i(&out, l.given.value);
			PUT_LIT(&out, "% of ");
			put_nodes(&out, n);
			PUT_LIT(&out, ")");
		}
		if (l.window >= 0) {
			PUT_LIT(&out, " in its window ");
			put_i(&out, l.window);
			PUT_LIT(&out, " (schedule \"");
			put_s(&out, str(e, b->windows[l.window].schedule));
			PUT_LIT(&out, "\"), the largest limit it has");
		}
		PUT_LIT(&out, ": raise ");
		if (l.window >= 0) {
			PUT_LIT(&out, "windows[");
			put_i(&out, l.window);
			PUT_LIT(&out, "].");
		}
		put_s(&out, field);
		PUT_LIT(&out, " to ");
		put_i(&out, own_n);
		put_split(&out, own_n);
		pd_mark_never(e, v);
		return;
	}
	int64_t min = own->has_min ? bud_int_or_percent_scaled(&own->min, n) : -1;
	if (v->ok || own_n <= 0 || min < 0 || n - own_n >= min)
		return;
	put_needs(&out, sc, own_n);
	PUT_LIT(&out, "keeps at least ");
	put_i(&out, min);
	PUT_LIT(&out, " of its ");
	put_nodes(&out, n);
	PUT_LIT(&out, " undisrupted: lower minUndisruptedNodes to ");
	put_i(&out, n - own_n);
	put_split(&out, own_n);
	pd_mark_never(e, v);
}

/* @sc's "what", made once: @kind then @ns/@name (@ns NG_INTERN_NONE: @name alone), cut as
 * the verdicts' 120 (NDB) or 160 (ADB) bytes would cut it. NULL when @arena is full. */
static const char *scope_what(struct eval *e, struct bscope *sc, const char *kind, uint32_t ns,
			      uint32_t name, size_t cap)
{
	if (sc->what)
		return sc->what;
	char *w = ng_arena_alloc(e->ledger->arena, cap);
	if (!w)
		return NULL;
	struct line b = {w, cap, 0};
	w[0] = '\0';
	put_s(&b, kind);
	if (ns != NG_INTERN_NONE) {
		put_s(&b, str(e, ns));
		PUT_LIT(&b, "/");
	}
	put_s(&b, str(e, name));
	sc->what = w;
	sc->what_len = b.len < cap ? b.len : cap - 1;
	return w;
}

static int cmp_touch(const void *a, const void *b)
{
	const struct touch *x = a, *y = b;
	return x->budget < y->budget ? -1 : x->budget > y->budget;
}

ng_status pd_touch_add(struct touches *t, uint32_t budget, bool adds)
{
	if (t->n == t->cap) {
		size_t c = t->cap ? 2 * t->cap : 64;
		struct touch *g = realloc(t->v, c * sizeof(*g));
		if (!g)
			return NG_ENOMEM;
		t->v = g;
		t->cap = c;
	}
	t->v[t->n++] = (struct touch){budget, adds, 1};
	return NG_OK;
}

/* Sorts by budget and sums each budget's entries into one. */
void pd_touches_group(struct touches *t)
{
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_touch);
	size_t u = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (u && t->v[u - 1].budget == t->v[i].budget) {
			t->v[u - 1].added += t->v[i].added;
			t->v[u - 1].own += t->v[i].own;
		} else
			t->v[u++] = t->v[i];
	}
	t->n = u;
}

/* pd_ndbs_of_node() callback: request node @i is in pool @k; it adds to it unless disrupted. */
ng_status pd_ndb_touch(struct pol_ledger *l, size_t k, size_t i, void *arg)
{
	size_t nb;
	const struct kube_ndb *b = &kube_snapshot_ndbs(l->s, &nb)[k];
	bool dis = l->held[i] || node_counted(&l->nodes[i], b);
	return pd_touch_add(arg, (uint32_t)k, !dis);
}

ng_status pd_eval_ndb_invalid(struct eval *e, const struct kube_ndb *b, size_t index)
{
	/* Its pool is unknowable: it holds every request back until it is fixed. */
	struct pol_budget_verdict *v = pd_verdict(e, KUBE_RES_NDBS, &b->b, index);
	if (!v)
		return NG_ENOMEM;
	pd_fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "NodeDisruptionBudget %s is invalid: %s",
	       str(e, b->b.name), str(e, b->b.error));
	return NG_OK;
}

/* Pacing, soakSeconds: @t with the request's nodes that soak in @sc (and count for that
 * alone) taken out of what it adds: they are disrupted already. @ndb: the NodeDisruptionBudget
 * @sc is of, NULL for an ApplicationDisruptionBudget. */
static ng_status soak_touch(struct eval *e, struct bscope *sc, const struct kube_budget_common *b,
			    const struct kube_ndb *ndb, struct touch *t)
{
	if (pd_scope_soak(e->ledger, sc, b, ndb, e->now_ms) != NG_OK)
		return NG_ENOMEM;
	if (!sc->soaking)
		return NG_OK;
	for (size_t x = 0; x < e->nnodes && t->added; x++) {
		const struct kube_node *n = e->recs[x];
		size_t i = n ? (size_t)(n - e->ledger->nodes) : SIZE_MAX;
		if (!pd_scope_soaks(sc, ndb, e->nodes[x], i))
			continue;
		bool counted = n ? e->ledger->held[i] != 0
				 : pol_ledger_holder(e->ledger, e->nodes[x]) != NG_INTERN_NONE;
		if (ndb && n)
			counted |= node_counted(n, ndb);
		t->added -= !counted;
	}
	return NG_OK;
}

/* Pacing, minIntervalSeconds: a request adding nodes to budget @b (named @what, scope @sc)
 * fails it until the interval since the last such grant has passed; it waits for the clock, as
 * for a window, and the gate wakes then. True when it failed. */
static bool fail_paced(struct eval *e, struct pol_budget_verdict *v, const char *what,
		       const struct kube_budget_common *b, const struct bscope *sc)
{
	int64_t last = b->last_grant_ms > sc->last_grant_ms ? b->last_grant_ms : sc->last_grant_ms;
	if (last <= 0 || e->now_ms >= last + b->min_interval_ms)
		return false;
	int64_t next = last + b->min_interval_ms;
	pd_fail_v(e, v);
	e->nclosed++;
	char at[32];
	ng_format_rfc3339_ms(next, at);
	ng_fmt(v->reason, sizeof(v->reason),
	       "%s: paced, next grant at %s (minIntervalSeconds %lld)", what, at,
	       (long long)(b->min_interval_ms / 1000));
	if (!e->wake_ms || next < e->wake_ms)
		e->wake_ms = next;
	return true;
}

/* Pacing, soakSeconds: a verdict @v failed on its counts says how many of them soak and when
 * the first soak ends; when the soaking nodes alone hold it back (@lim, @added as
 * check_counts()), it waits for that instant, as for a window. */
static void soak_note(struct eval *e, struct pol_budget_verdict *v, const struct bscope *sc,
		      const struct bud_limits *lim, int64_t added)
{
	if (v->ok || !sc->soak_ready || !sc->soaking)
		return;
	char at[32] = "";
	if (sc->soak_next_ms > 0)
		ng_format_rfc3339_ms(sc->soak_next_ms, at);
	/* The note goes before the holders, which the gate leaves out of a decision's hash. */
	char *held = strstr(v->reason, POL_HELD_BY);
	char tail[sizeof(v->reason)] = "";
	size_t len = held ? (size_t)(held - v->reason) : strlen(v->reason);
	if (held)
		ng_fmt(tail, sizeof(tail), "%s", held);
	ng_fmt(v->reason + len, sizeof(v->reason) - len,
	       "; %zu soaking (soakSeconds), the first until %s%s", sc->soaking,
	       sc->soak_next_ms > 0 ? at : "it is back", tail);
	struct bud_check c;
	bud_check_limits(lim, (int64_t)sc->n, (int64_t)sc->disrupted, added, &c);
	if (c.ok && sc->soak_next_ms > 0) {
		e->nclosed++;
		if (!e->wake_ms || sc->soak_next_ms < e->wake_ms)
			e->wake_ms = sc->soak_next_ms;
	}
}

/* A budget in one of its exclusions fails a request that adds one of its nodes, until the
 * exclusion ends; the request waits for the clock, as for a window. True when it failed. */
static bool fail_excluded(struct eval *e, struct pol_budget_verdict *v, const char *what,
			  const struct kube_budget_common *b)
{
	int64_t until;
	uint32_t reason;
	if (!pol_excluded_at(b->exclusions, b->nexclusions, e->now_ms, &until, &reason))
		return false;
	pd_fail_v(e, v);
	e->nclosed++;
	char text[200];
	pd_exclusion_text(e->pool, until, reason, text, sizeof(text));
	ng_fmt(v->reason, sizeof(v->reason), "%s is in a maintenance exclusion %s", what, text);
	if (!e->wake_ms || until < e->wake_ms)
		e->wake_ms = until;
	return true;
}

/* @sc->lim from NDB @b's spec, once per ledger. False (and @err) when a limit does not read. */
static bool ndb_limits(struct eval *e, const struct kube_ndb *b, struct bscope *sc,
		       struct ng_err *err)
{
	if (sc->lim_ok)
		return true;
	struct bud_limits lim = {0};
	if (b->max_disrupted.set) {
		lim.has_max = true;
		if (bud_int_or_percent_from(&b->max_disrupted, e->pool, "spec.maxDisruptedNodes",
					    &lim.max, err) != NG_OK)
			return false;
	}
	if (b->min_undisrupted.set) {
		lim.has_min = true;
		if (bud_int_or_percent_from(&b->min_undisrupted, e->pool,
					    "spec.minUndisruptedNodes", &lim.min, err) != NG_OK)
			return false;
	}
	if (!lim.has_max && !lim.has_min && b->topology_key == NG_INTERN_NONE) {
		(void)ng_err_set(err, NG_EPARSE, 0,
				 "one of maxDisruptedNodes and minUndisruptedNodes is required");
		return false;
	}
	if (b->max_per_domain.set &&
	    bud_int_or_percent_from(&b->max_per_domain, e->pool, "spec.maxDisruptedNodesPerDomain",
				    &(struct bud_int_or_percent){0}, err) != NG_OK)
		return false;
	sc->lim = lim;
	sc->lim_ok = true;
	return true;
}

/* A valid NodeDisruptionBudget whose pool holds @t->own nodes of the request, @t->added of them
 * not disrupted yet (what the request adds). */
ng_status pd_eval_ndb(struct eval *e, const struct kube_ndb *b, size_t index, const struct touch *t)
{
	if (!type_applies(&b->b, e->nd->type))
		return NG_OK;
	const struct bscope *csc;
	if (pd_ndb_scope(e->ledger, index, &csc) != NG_OK)
		return NG_ENOMEM;
	struct bscope *sc = &e->ledger->ndb[index];
	const char *what =
	    scope_what(e, sc, "NodeDisruptionBudget ", NG_INTERN_NONE, b->b.name, 120);
	struct pol_budget_verdict *v = pd_verdict(e, KUBE_RES_NDBS, &b->b, index);
	if (!v || !what)
		return NG_ENOMEM;
	if (b->b.frozen) {
		pd_fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is frozen: %s", what,
		       str(e, b->b.freeze_reason));
		return NG_OK;
	}
	struct touch tt = *t;
	if (b->b.soak_ms && soak_touch(e, sc, &b->b, b, &tt) != NG_OK)
		return NG_ENOMEM;
	t = &tt;
	v->adds = t->added > 0;
	if (t->added > 0 && b->b.nexclusions && fail_excluded(e, v, what, &b->b))
		return NG_OK;
	if (t->added > 0 && b->b.min_interval_ms && fail_paced(e, v, what, &b->b, sc))
		return NG_OK;
	struct ng_err err = {0};
	struct win *w = b->b.nwindows ? pd_scope_windows(sc, &b->b, e->now_ms) : NULL;
	if (w && w->deny && t->added > 0) {
		pd_fail_closed(e, v, what, &b->b, w);
		/* Waiting for a window is no use if no window would let it through. */
		if (ndb_limits(e, b, sc, &err))
			check_never(e, v, sc, &b->b, &sc->lim, t->own, "maxDisruptedNodes");
		return NG_OK;
	}
	if (!ndb_limits(e, b, sc, &err))
		goto bad;
	/* An open window's maximum replaces the budget's own for this instant only. */
	struct bud_limits lim = sc->lim;
	if (w && !pd_window_limits(e, w, &lim, "spec.windows.maxDisruptedNodes", &err))
		goto bad;
	check_counts(e, v, sc, &lim, t->added);
	soak_note(e, v, sc, &lim, t->added);
	check_never(e, v, sc, &b->b, &sc->lim, t->own, "maxDisruptedNodes");
	ng_status st =
	    v->ok && b->topology_key != NG_INTERN_NONE ? pd_check_topology(e, v, b, sc) : NG_OK;
	pd_wake_at_edge(e, v, w);
	return st;
bad:
	pd_fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
	return NG_OK;
}

static void adb_what(const struct eval *e, const struct kube_adb *a, char *what, size_t cap)
{
	ng_fmt(what, cap, "ApplicationDisruptionBudget %s/%s", str(e, a->b.ns), str(e, a->b.name));
}

/* e->ns_here, once per decision: the pods on the request's nodes, not every invalid budget's
 * namespace's pods for each (200 invalid budgets of a namespace of 5,000 pods walked a million
 * pods per decision). */
static ng_status namespaces_here(struct eval *e)
{
	if (e->ns_ready)
		return NG_OK;
	size_t total = 0, nall;
	for (size_t i = 0; i < e->nnodes; i++) {
		size_t np;
		(void)kube_snapshot_pods_on_node(e->s, e->nodes[i], &np);
		total += np;
	}
	uint32_t *ns = ng_arena_alloc(e->arena, (total ? total : 1) * sizeof(*ns));
	if (!ns)
		return NG_ENOMEM;
	const struct kube_pod *pods = kube_snapshot_pods(e->s, &nall);
	size_t n = 0;
	for (size_t i = 0; i < e->nnodes; i++) {
		size_t np;
		const uint32_t *on = kube_snapshot_pods_on_node(e->s, e->nodes[i], &np);
		for (size_t k = 0; k < np; k++)
			ns[n++] = pods[on[k]].ns;
	}
	qsort(ns, n, sizeof(*ns), cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || ns[u - 1] != ns[i])
			ns[u++] = ns[i];
	e->ns_here = ns;
	e->nns_here = u;
	e->ns_ready = true;
	return NG_OK;
}

ng_status pd_eval_adb_invalid(struct eval *e, const struct kube_adb *a, size_t index)
{
	/* Which pods it means is unknowable: hold back requests touching any node that runs a
	 * pod of its namespace. */
	if (namespaces_here(e) != NG_OK)
		return NG_ENOMEM;
	if (!in_sorted(e->ns_here, e->nns_here, a->b.ns))
		return NG_OK;
	char what[160];
	adb_what(e, a, what, sizeof(what));
	struct pol_budget_verdict *v = pd_verdict(e, KUBE_RES_ADBS, &a->b, index);
	if (!v)
		return NG_ENOMEM;
	pd_fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, str(e, a->b.error));
	return NG_OK;
}

/* @sc->lim from ADB @a's spec, once per ledger. False (and @err) when it does not read. */
static bool adb_limits(struct eval *e, const struct kube_adb *a, struct bscope *sc,
		       struct ng_err *err)
{
	if (sc->lim_ok)
		return true;
	struct bud_limits lim = {.has_max = true};
	if (bud_int_or_percent_from(&a->max_disruptions, e->pool, "spec.maxDisruptions", &lim.max,
				    err) != NG_OK)
		return false;
	sc->lim = lim;
	sc->lim_ok = true;
	return true;
}

/* A valid ApplicationDisruptionBudget watching @t->own nodes of the request, @t->added of them
 * not disrupted yet. */
ng_status pd_eval_adb(struct eval *e, const struct kube_adb *a, size_t index, const struct touch *t)
{
	if (!type_applies(&a->b, e->nd->type))
		return NG_OK;
	struct bscope *sc = &e->ledger->adb[index];
	const char *what =
	    scope_what(e, sc, "ApplicationDisruptionBudget ", a->b.ns, a->b.name, 160);
	struct pol_budget_verdict *v = pd_verdict(e, KUBE_RES_ADBS, &a->b, index);
	if (!v || !what)
		return NG_ENOMEM;
	if (a->b.frozen) {
		pd_fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason), "%s is frozen: %s", what,
		       str(e, a->b.freeze_reason));
		return NG_OK;
	}
	struct touch tt = *t;
	if (a->b.soak_ms && soak_touch(e, sc, &a->b, NULL, &tt) != NG_OK)
		return NG_ENOMEM;
	t = &tt;
	v->adds = t->added > 0;
	if (t->added > 0 && a->b.nexclusions && fail_excluded(e, v, what, &a->b))
		return NG_OK;
	if (t->added > 0 && a->b.min_interval_ms && fail_paced(e, v, what, &a->b, sc))
		return NG_OK;
	if (sc->lost_pvc != NG_INTERN_NONE) {
		pd_fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s selects PersistentVolumeClaim %s/%s in phase Lost: data may be at risk",
		       what, str(e, a->b.ns), str(e, sc->lost_pvc));
		return NG_OK;
	}
	struct ng_err err = {0};
	struct win *w = a->b.nwindows ? pd_scope_windows(sc, &a->b, e->now_ms) : NULL;
	if (w && w->deny && t->added > 0) {
		pd_fail_closed(e, v, what, &a->b, w);
		if (adb_limits(e, a, sc, &err))
			check_never(e, v, sc, &a->b, &sc->lim, t->own, "maxDisruptions");
		return NG_OK;
	}
	if (!adb_limits(e, a, sc, &err))
		goto bad;
	/* An open window's maximum replaces the budget's own for this instant only. */
	struct bud_limits lim = sc->lim;
	if (w && !pd_window_limits(e, w, &lim, "spec.windows.maxDisruptions", &err))
		goto bad;
	check_counts(e, v, sc, &lim, t->added);
	soak_note(e, v, sc, &lim, t->added);
	check_never(e, v, sc, &a->b, &sc->lim, t->own, "maxDisruptions");
	pd_wake_at_edge(e, v, w);
	return NG_OK;
bad:
	pd_fail_v(e, v);
	ng_fmt(v->reason, sizeof(v->reason), "%s is invalid: %s", what, err.msg);
	return NG_OK;
}

/* DESIGN.md §4's evaluation, one function per step. A step that decides writes the outcome and
 * reason into @d and returns true; false passes the request on to the next step. */

/* Step 1: past spec.retry.deadline → Rejected. */
