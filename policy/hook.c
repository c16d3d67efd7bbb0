#include "policy/hook.h"

#include "common/arena.h"
#include "common/jw.h"
#include "policy/disruption_internal.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"

#include <stdlib.h>
#include <string.h>

const char *pol_hook_result_str(enum pol_hook_result r)
{
	static const char *const names[] = {"pending", "ok",     "failed",    "timeout",
					    "error",   "denied", "cancelled", "later"};
	return (size_t)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

const char *pol_hook_phase_str(enum pol_hook_phase p)
{
	static const char *const names[] = {"health", "prepare", "ready", "terminate"};
	return (size_t)p < sizeof(names) / sizeof(names[0]) ? names[p] : "unknown";
}

void pol_hook_policy_from(const struct kube_snapshot *s, struct kube_hook_policy *ret)
{
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	if (ngc && !ngc->invalid) {
		*ret = ngc->hooks;
		return;
	}
	/* Without a readable config: the defaults of DESIGN.md §3.4. (An unreadable one pauses
	 * the gate, so no hook is called under it.) */
	*ret = (struct kube_hook_policy){.allow_service_refs = true,
					 .max_response_bytes = 65536,
					 .terminate_deadline_s = KUBE_DEFAULT_TERMINATE_DEADLINE_S};
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether @host matches glob @pat, ASCII case-insensitively: '*' stands for any run of
 * characters inside one DNS label and '?' for one of them, neither ever for a '.'; every other
 * character for itself. So "*.svc" matches "a.svc" but not "kubernetes.default.svc". On a
 * mismatch only the last '*' is stretched: the dots of @pat and @host pair up one to one, so an
 * earlier '*' (in an earlier label) could never help. */
static bool glob_labels(const char *pat, const char *host)
{
	const char *star = NULL, *resume = NULL;
	while (*host) {
		char p = lower(*pat), h = lower(*host);
		if (p == '*') {
			star = pat++;
			resume = host;
		} else if (p && (p == h || (p == '?' && h != '.'))) {
			pat++;
			host++;
		} else if (star && *resume != '.') {
			pat = star + 1;
			host = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

static bool host_matches(const struct kube_hook_policy *p, const struct ng_intern *pool,
			 const char *host)
{
	if (p->nhosts == 0)
		return true;
	for (uint16_t i = 0; i < p->nhosts; i++)
		if (glob_labels(ng_intern_str(pool, p->hosts[i], NULL), host))
			return true;
	return false;
}

ng_status pol_hook_allowed(const struct kube_hook *h, const struct kube_hook_policy *p,
			   const struct ng_intern *pool, struct ng_err *reterr)
{
	if (h->error != NG_INTERN_NONE)
		return ng_err_set(reterr, NG_EPARSE, 0, "hook is invalid: %s",
				  ng_intern_str(pool, h->error, NULL));
	if (h->service && !p->allow_service_refs)
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "hook not allowed: NodeGateConfig healthHooks.allowServiceRefs "
				  "is false");
	if (!h->scheme || !h->host)
		return ng_err_set(reterr, NG_EPARSE, 0, "hook is invalid: no URL");
	if (strcmp(h->scheme, "https") != 0 && !(p->allow_http && strcmp(h->scheme, "http") == 0))
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "hook not allowed: scheme \"%.20s\" (https only%s)", h->scheme,
				  strcmp(h->scheme, "http") == 0
				      ? "; NodeGateConfig healthHooks.allowHTTP permits http"
				      : "");
	if (h->userinfo)
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "hook not allowed: the URL carries credentials");
	if (!host_matches(p, pool, h->host))
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "hook not allowed: host \"%.100s\" matches no NodeGateConfig "
				  "healthHooks.allowedHosts (a * stands for one DNS label)",
				  h->host);
	return NG_OK;
}

/* Addresses no hook may reach unless allowedCIDRs opens them (pol_hook_addr_allowed()). */
static const struct kube_cidr special[] = {
    {4, 8, {0}},                   /* 0.0.0.0/8: "this network"; 0.0.0.0 is the local host */
    {4, 8, {127}},                 /* loopback */
    {4, 16, {169, 254}},           /* link-local: cloud metadata at 169.254.169.254 */
    {4, 4, {224}},                 /* multicast */
    {4, 32, {255, 255, 255, 255}}, /* limited broadcast */
    {4, 32, {100, 100, 100, 200}}, /* Alibaba Cloud's metadata service */
    {6, 128, {0}},                 /* :: unspecified */
    {6, 128, {[15] = 1}},          /* ::1 loopback */
    {6, 10, {0xfe, 0x80}},         /* fe80::/10 link-local */
    {6, 8, {0xff}},                /* ff00::/8 multicast */
    {6, 128, {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}}, /* fd00:ec2::254, AWS metadata */
};

int pol_hook_addr_normalize(int family, const uint8_t *addr, uint8_t ret[16])
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	static const uint8_t zero[12] = {0};
	memset(ret, 0, 16);
	if (family != 6) {
		memcpy(ret, addr, 4);
		return 4;
	}
	/* ::a.b.c.d (IPv4-compatible) but not :: and ::1, which are IPv6's own. */
	bool compat =
	    memcmp(addr, zero, 12) == 0 && ((addr[12] | addr[13] | addr[14]) != 0 || addr[15] > 1);
	if (memcmp(addr, mapped, 12) == 0 || memcmp(addr, nat64, 12) == 0 || compat) {
		memcpy(ret, addr + 12, 4);
		return 4;
	}
	memcpy(ret, addr, 16);
	return 6;
}

/* Whether CIDR @c holds @addr (normalized, of @family). */
static bool cidr_holds(const struct kube_cidr *c, int family, const uint8_t *addr)
{
	if (c->family != family)
		return false;
	unsigned full = c->bits / 8u, rest = c->bits % 8u;
	if (memcmp(addr, c->addr, full) != 0)
		return false;
	uint8_t mask = (uint8_t)(0xffu << (8u - rest));
	return !rest || (addr[full] & mask) == (c->addr[full] & mask);
}

/* Whether an allowedCIDRs entry of @p holds @addr and lies inside @range: the operator named
 * (part of) that range on purpose. 0.0.0.0/0 or 10.0.0.0/8 open no loopback, metadata or API
 * server address. */
static bool opened(const struct kube_hook_policy *p, const struct kube_cidr *range, int family,
		   const uint8_t *addr)
{
	for (uint16_t i = 0; i < p->ncidrs; i++) {
		const struct kube_cidr *e = &p->cidrs[i];
		if (cidr_holds(e, family, addr) && e->bits >= range->bits &&
		    cidr_holds(range, e->family, e->addr))
			return true;
	}
	return false;
}

bool pol_hook_addr_allowed(const struct kube_hook_policy *p, const struct kube_cidr *deny,
			   size_t ndeny, int family, const uint8_t *addr)
{
	uint8_t a[16];
	family = pol_hook_addr_normalize(family, addr, a);
	bool listed = p->ncidrs == 0;
	for (uint16_t i = 0; i < p->ncidrs && !listed; i++)
		listed = cidr_holds(&p->cidrs[i], family, a);
	if (!listed)
		return false;
	/* In a refused range (or several): allowed only when one of them is opened. */
	bool refused = false;
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]) + ndeny; i++) {
		const struct kube_cidr *r = i < sizeof(special) / sizeof(special[0])
						? &special[i]
						: &deny[i - sizeof(special) / sizeof(special[0])];
		if (!cidr_holds(r, family, a))
			continue;
		if (opened(p, r, family, a))
			return true;
		refused = true;
	}
	return !refused;
}

static const char *kind_str(enum kube_resource kind)
{
	return kind == KUBE_RES_NDBS ? "NodeDisruptionBudget" : "ApplicationDisruptionBudget";
}

bool pol_hook_prepared(const struct kube_snapshot *s, const struct kube_nd *nd,
		       enum kube_resource kind, uint32_t ns, uint32_t name)
{
	const struct kube_nd_detail *x = nd ? nd->detail : NULL;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (uint16_t i = 0; x && i < x->nverdicts; i++) {
		const struct kube_nd_verdict *v = &x->verdicts[i];
		const char *k = v->preparing ? ng_intern_str(pool, v->kind, NULL) : NULL;
		if (k && v->ns == ns && v->name == name && strcmp(k, kind_str(kind)) == 0)
			return true;
	}
	return false;
}

bool pol_decision_preparing(const struct pol_gate_decision *d)
{
	for (size_t i = 0; i < d->nverdicts; i++)
		if (d->verdicts[i].preparing)
			return true;
	return false;
}

ng_status pol_hooks_hold_preparing(const struct kube_snapshot *s, struct pol_ledger *l)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kube_nd *nd = &nds[i];
		if (nd->deleting || nd->state != KUBE_ND_PENDING || !pol_hooks_preparing(nd))
			continue;
		if (pol_ledger_grant(l, nd->name, nd->disrupted, nd->ndisrupted) != NG_OK)
			return NG_ENOMEM;
	}
	return NG_OK;
}

bool pol_hooks_preparing(const struct kube_nd *nd)
{
	const struct kube_nd_detail *x = nd->detail;
	for (uint16_t i = 0; x && i < x->nverdicts; i++)
		if (x->verdicts[i].preparing)
			return true;
	return false;
}

const struct kube_budget_common *pol_hook2_budget(const struct kube_snapshot *s,
						  const struct pol_budget_verdict *v)
{
	size_t n;
	const struct kube_budget_common *b = NULL;
	if (v->kind == KUBE_RES_ADBS) {
		const struct kube_adb *a = kube_snapshot_adbs(s, &n);
		b = v->index < n ? &a[v->index].b : NULL;
	} else if (v->kind == KUBE_RES_NDBS) {
		const struct kube_ndb *a = kube_snapshot_ndbs(s, &n);
		b = v->index < n ? &a[v->index].b : NULL;
	}
	return b && b->hook2.present ? b : NULL;
}

static void deny_unless_allowed(const struct kube_snapshot *s, const struct kube_hook_policy *p,
				struct pol_hook_call *c)
{
	struct ng_err why = {0};
	if (pol_hook_allowed(c->hook, p, kube_snapshot_pool(s), &why) != NG_OK) {
		ng_fmt(c->message, sizeof(c->message), "%s", why.msg);
		c->result = POL_HOOK_DENIED;
	}
}

ng_status pol_hooks_prepare(const struct kube_snapshot *s, const struct kube_nd *nd,
			    const struct pol_gate_decision *d, const struct kube_hook_policy *p,
			    struct ng_arena *arena, struct pol_hook_call **ret_calls, size_t *ret_n)
{
	size_t nadb, n = 0;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nadb);
	struct pol_hook_call *calls =
	    ng_arena_alloc(arena, (d->nverdicts ? 3 * d->nverdicts : 1) * sizeof(*calls));
	if (!calls)
		return NG_ENOMEM;
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->kind != KUBE_RES_ADBS || v->index >= nadb || !adbs[v->index].hook.present)
			continue;
		struct pol_hook_call *c = &calls[n++];
		memset(c, 0, sizeof(*c));
		c->budget = &adbs[v->index].b;
		c->hook = &adbs[v->index].hook;
		c->kind = KUBE_RES_ADBS;
		c->phase = POL_HOOK_HEALTH;
		c->verdict = i;
		c->retry_after_s = -1;
		deny_unless_allowed(s, p, c);
	}
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		const struct kube_budget_common *b = pol_hook2_budget(s, v);
		if (!b)
			continue;
		bool prepared = pol_hook_prepared(s, nd, v->kind, v->ns, v->name);
		/* Not preparing: /prepare, and /ready right after it when it answers 200. */
		for (int k = prepared; k < 2; k++) {
			struct pol_hook_call *c = &calls[n++];
			memset(c, 0, sizeof(*c));
			c->budget = b;
			c->hook = &b->hook2;
			c->kind = v->kind;
			c->phase = k ? POL_HOOK_READY : POL_HOOK_PREPARE;
			c->verdict = i;
			c->retry_after_s = -1;
			deny_unless_allowed(s, p, c);
		}
	}
	*ret_calls = calls;
	*ret_n = n;
	return NG_OK;
}

/* When a multistep hook that answered 425 is asked again: its Retry-After, bounded, else soon. */
static int64_t later_at(const struct pol_hook_call *c, int64_t now_wall_ms)
{
	if (c->retry_after_s < 0)
		return now_wall_ms + POL_HOOK_AGAIN_MS;
	int64_t s = c->retry_after_s > POL_HOOK_MAX_RETRY_AFTER_S ? POL_HOOK_MAX_RETRY_AFTER_S
								  : c->retry_after_s;
	return now_wall_ms + (s ? s * 1000 : 1000);
}

/* A multistep hook's answer @c folded into verdict @v. Returns whether it fails the request
 * (refused or failed; else it waits or is ready); *@wake gets when to decide again when it
 * waits. */
static bool apply_step(const struct ng_intern *pool, const struct pol_hook_call *c,
		       bool ready_follows, struct pol_budget_verdict *v, int64_t now_wall_ms,
		       int64_t *wake)
{
	char who[300], at[40];
	const char *ns =
	    c->budget->ns != NG_INTERN_NONE ? ng_intern_str(pool, c->budget->ns, NULL) : NULL;
	ng_fmt(who, sizeof(who), "%s %s%s%s", kind_str(c->kind), ns ? ns : "", ns ? "/" : "",
	       ng_intern_str(pool, c->budget->name, NULL));
	bool prepare = c->phase == POL_HOOK_PREPARE;
	if (!prepare) /* /ready is asked of a budget preparing, now or before */
		v->preparing = true;
	if (c->result == POL_HOOK_OK && !prepare) {
		size_t len = strlen(v->reason);
		ng_fmt(v->reason + len, sizeof(v->reason) - len, "; ready (POST /ready: %s)",
		       c->message);
		return false;
	}
	if (c->result == POL_HOOK_OK) { /* /prepare accepted: preparing; its /ready decides */
		v->preparing = true;
		if (ready_follows)
			return false;
		v->ok = false;
		*wake = now_wall_ms + POL_HOOK_NEXT_STEP_MS;
		ng_fmt(v->reason, sizeof(v->reason),
		       "%s: preparing (POST /prepare: %s); asking /ready next", who, c->message);
		return false;
	}
	v->ok = false;
	if (c->result == POL_HOOK_LATER) {
		*wake = later_at(c, now_wall_ms);
		ng_format_rfc3339_ms(*wake, at);
		ng_fmt(v->reason, sizeof(v->reason), "%s: %s (POST /%s: %s); asked again at %s",
		       who, prepare ? "asks to be asked later" : "not ready yet",
		       pol_hook_phase_str(c->phase), c->message, at);
		return false;
	}
	if (!prepare) { /* preparing, not ready: asked again, retry or not */
		*wake = now_wall_ms + POL_HOOK_AGAIN_MS;
		ng_fmt(v->reason, sizeof(v->reason), "%s: not ready: POST /ready: %s", who,
		       c->message);
		return false;
	}
	ng_fmt(v->reason, sizeof(v->reason), "%s: %s: POST /prepare: %s", who,
	       c->code == 424 ? "refused the disruption" : "cannot prepare the disruption",
	       c->message);
	return true;
}

bool pol_hooks_apply(const struct kube_snapshot *s, const struct kube_nd *nd,
		     const struct pol_hook_call *calls, size_t n, struct pol_gate_decision *d,
		     int64_t now_wall_ms)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i].result == POL_HOOK_PENDING)
			return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool failed = false;
	int64_t wake = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pol_hook_call *c = &calls[i];
		if (c->verdict >= d->nverdicts || c->result == POL_HOOK_CANCELLED)
			continue;
		struct pol_budget_verdict *v = &d->verdicts[c->verdict];
		if (c->phase != POL_HOOK_HEALTH && c->result != POL_HOOK_DENIED) {
			int64_t w = 0;
			/* The calls of one budget are adjacent: /prepare, then its /ready. */
			bool ready_follows = i + 1 < n && calls[i + 1].verdict == c->verdict &&
					     calls[i + 1].phase == POL_HOOK_READY &&
					     calls[i + 1].result != POL_HOOK_CANCELLED &&
					     calls[i + 1].result != POL_HOOK_DENIED;
			failed |= apply_step(pool, c, ready_follows, v, now_wall_ms, &w);
			if (w && (!wake || w < wake))
				wake = w;
			continue;
		}
		if (c->result == POL_HOOK_OK) {
			size_t at = strlen(v->reason);
			ng_fmt(v->reason + at, sizeof(v->reason) - at, "; health hook: %s",
			       c->message);
			continue;
		}
		v->ok = false;
		ng_fmt(v->reason, sizeof(v->reason), "%s of %s %s%s%s: %s",
		       c->phase == POL_HOOK_HEALTH ? "health hook" : "multistep hook",
		       kind_str(c->kind),
		       c->budget->ns != NG_INTERN_NONE ? ng_intern_str(pool, c->budget->ns, NULL)
						       : "",
		       c->budget->ns != NG_INTERN_NONE ? "/" : "",
		       ng_intern_str(pool, c->budget->name, NULL), c->message);
		failed = true;
	}
	if (!failed && !wake)
		return false;
	pol_decision_reason(d);
	if (failed) {
		d->outcome = nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
		return true;
	}
	/* Waiting on a multistep hook: decided again then, retry or not. */
	d->outcome = POL_GATE_PENDING;
	d->only_windows = true;
	if (!d->wake_wall_ms || wake < d->wake_wall_ms)
		d->wake_wall_ms = wake;
	return true;
}

ng_status pol_budget_nodes_in(struct pol_ledger *ledger, enum kube_resource kind, size_t index,
			      const uint32_t *nodes, size_t n, struct ng_arena *arena,
			      uint32_t **ret, size_t *ret_n)
{
	const struct bscope *sc = NULL;
	if (kind == KUBE_RES_NDBS) {
		if (pd_ndb_scope(ledger, index, &sc) != NG_OK)
			return NG_ENOMEM;
	} else {
		if (pd_adb_index(ledger) != NG_OK)
			return NG_ENOMEM;
		sc = &ledger->adb[index];
	}
	uint32_t *out = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*out));
	if (!out)
		return NG_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < sc->n && k < n; i++)
		if (in_sorted(nodes, n, sc->names[i]))
			out[k++] = sc->names[i];
	*ret = out;
	*ret_n = k;
	return NG_OK;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

ng_status pol_hook2_body(const struct kube_snapshot *s, const struct kube_nd *nd,
			 const uint32_t *nodes, size_t n, struct ng_buf *b)
{
	static const char zero[] = "0001-01-01T00:00:00.000Z"; /* Go's zero time */
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const struct kube_nd_detail *x = nd->detail;
	uint32_t by = x && x->created_by != NG_INTERN_NONE ? x->created_by : nd->requestor;
	const char *type = nd->type != NG_INTERN_NONE ? ng_intern_str(pool, nd->type, NULL) : "";
	const char *creator = by != NG_INTERN_NONE ? ng_intern_str(pool, by, NULL) : "";
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "uid", nd->uid ? nd->uid : "");
	ng_jw_kstr(&w, "name", ng_intern_str(pool, nd->name, NULL));
	ng_jw_kstr(&w, "type", type ? type : "");
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	if (!names)
		return NG_ENOMEM;
	for (size_t i = 0; i < n; i++)
		names[i] = ng_intern_str(pool, nodes[i], NULL);
	qsort(names, n, sizeof(*names), cmp_name);
	ng_jw_key(&w, "nodes");
	ng_jw_arr(&w);
	for (size_t i = 0; i < n; i++)
		ng_jw_str(&w, names[i]);
	ng_jw_arr_end(&w);
	free(names);
	ng_jw_kstr(&w, "createdBy", creator ? creator : "");
	const int64_t times[] = {nd->created_ms, x ? x->start_ms : 0, nd->deadline_ms};
	const char *const keys[] = {"creationDate", "startDate", "deadlineDate"};
	for (size_t i = 0; i < 3; i++) {
		ng_jw_key(&w, keys[i]);
		if (times[i] > 0)
			ng_jw_time_ms(&w, times[i]);
		else
			ng_jw_str(&w, zero);
	}
	ng_jw_ki64(&w, "duration", x && x->duration_ms > 0 ? x->duration_ms / 1000 : 0);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}
