/* A budget's maintenance windows: where they stand at an instant, the verdict of a budget
 * outside them and when it may change, and an open window's own limit. */
#include "policy/disruption_internal.h"

static void earliest(int64_t *at, int64_t t)
{
	if (t >= 0 && (*at < 0 || t < *at))
		*at = t;
}

/* Where @b's windows stand at @now_ms: the first open window in spec order decides the limit;
 * outside all of them the budget denies (Deny) or applies its own limits (UseDefault). */
void pd_windows_at(const struct kube_budget_common *b, int64_t now_ms, struct win *ret)
{
	*ret = (struct win){.next_ms = -1, .edge_ms = -1, .closes_ms = -1};
	bool open = false;
	for (size_t i = 0; i < b->nwindows; i++) {
		const struct kube_window *w = &b->windows[i];
		struct ng_window_at at;
		ng_window_at(&w->cron, w->tz, w->duration_ms, now_ms, &at);
		earliest(&ret->edge_ms, at.open ? at.closes_ms : at.next_open_ms);
		if (at.open && !open) {
			open = true;
			ret->limit = w->limit.set ? &w->limit : NULL;
			ret->which = i;
			ret->closes_ms = at.closes_ms;
		} else if (!at.open && !open && at.next_open_ms >= 0 &&
			   (ret->next_ms < 0 || at.next_open_ms < ret->next_ms)) {
			ret->next_ms = at.next_open_ms;
			ret->which = i;
		}
	}
	if (open)
		ret->next_ms = -1;
	ret->open = open;
	ret->deny = !open && b->nwindows && !b->outside_use_default;
}

struct win *pd_scope_windows(struct bscope *sc, const struct kube_budget_common *b, int64_t now_ms)
{
	if (!sc->win_ready || sc->win_at_ms != now_ms) {
		pd_windows_at(b, now_ms, &sc->win);
		sc->win_at_ms = now_ms;
		sc->win_ready = true;
	}
	return &sc->win;
}

/* A verdict of a budget with windows failed: its limits change at the next window edge, when
 * the decision may change by the clock alone. */
void pd_wake_at_edge(struct eval *e, const struct pol_budget_verdict *v, const struct win *w)
{
	if (w && !v->ok && w->edge_ms > e->now_ms && (!e->wake_ms || w->edge_ms < e->wake_ms))
		e->wake_ms = w->edge_ms;
}

/* Fails @v because @b (named @what) is outside its windows, saying when the next one opens. */
void pd_fail_closed(struct eval *e, struct pol_budget_verdict *v, const char *what,
		    const struct kube_budget_common *b, const struct win *w)
{
	pd_fail_v(e, v);
	e->nclosed++;
	if (w->next_ms < 0) {
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s is outside its maintenance windows, and none opens again", what);
		return;
	}
	const struct kube_window *x = &b->windows[w->which];
	char at[32], local[32];
	ng_format_rfc3339_ms(w->next_ms, at);
	ng_format_rfc3339_ms(w->next_ms + (int64_t)ng_tz_offset(x->tz, w->next_ms / 1000) * 1000,
			     local);
	/* "2026-11-30T22:00": the local wall time, without seconds. */
	local[16] = '\0';
	ng_fmt(v->reason, sizeof(v->reason),
	       "%s is outside its maintenance windows; the next opens at %s (%s %s, schedule "
	       "\"%s\")",
	       what, at, local, str(e, x->zone), str(e, x->schedule));
	pd_wake_at_edge(e, v, w);
}

/* @lim with an open window's own maximum in place of @base's, read once per instant (a limit
 * that does not read is read again, for its message). False (and @err) when it does not
 * read. */
bool pd_window_limits(struct eval *e, struct win *w, struct bud_limits *lim, const char *field,
		      struct ng_err *err)
{
	if (!w->limit)
		return true;
	lim->has_max = true;
	if (w->limit_read) {
		lim->max = w->max;
		return true;
	}
	if (bud_int_or_percent_from(w->limit, e->pool, field, &lim->max, err) != NG_OK)
		return false;
	w->max = lim->max;
	w->limit_read = true;
	return true;
}
