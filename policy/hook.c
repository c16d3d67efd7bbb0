#include "policy/hook.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"

#include <stdlib.h>
#include <string.h>

const char *pol_hook_result_str(enum pol_hook_result r)
{
	static const char *const names[] = {"pending", "ok",     "failed",   "timeout",
					    "error",   "denied", "cancelled"};
	return (size_t)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
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
	*ret = (struct kube_hook_policy){.allow_service_refs = true, .max_response_bytes = 65536};
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

ng_status pol_hooks_prepare(const struct kube_snapshot *s, const struct pol_gate_decision *d,
			    const struct kube_hook_policy *p, struct ng_arena *arena,
			    struct pol_hook_call **ret_calls, size_t *ret_n)
{
	size_t nadb, n = 0;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nadb);
	struct pol_hook_call *calls =
	    ng_arena_alloc(arena, (d->nverdicts ? d->nverdicts : 1) * sizeof(*calls));
	if (!calls)
		return NG_ENOMEM;
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->kind != KUBE_RES_ADBS || v->index >= nadb || !adbs[v->index].hook.present)
			continue;
		struct pol_hook_call *c = &calls[n++];
		memset(c, 0, sizeof(*c));
		c->adb = &adbs[v->index];
		c->verdict = i;
		struct ng_err why = {0};
		if (pol_hook_allowed(&c->adb->hook, p, kube_snapshot_pool(s), &why) != NG_OK) {
			ng_fmt(c->message, sizeof(c->message), "%s", why.msg);
			c->result = POL_HOOK_DENIED;
		}
	}
	*ret_calls = calls;
	*ret_n = n;
	return NG_OK;
}

bool pol_hooks_apply(const struct kube_snapshot *s, const struct kube_nd *nd,
		     const struct pol_hook_call *calls, size_t n, struct pol_gate_decision *d)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i].result == POL_HOOK_PENDING)
			return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		const struct pol_hook_call *c = &calls[i];
		if (c->verdict >= d->nverdicts || c->result == POL_HOOK_CANCELLED)
			continue;
		struct pol_budget_verdict *v = &d->verdicts[c->verdict];
		if (c->result == POL_HOOK_OK) {
			size_t at = strlen(v->reason);
			ng_fmt(v->reason + at, sizeof(v->reason) - at, "; health hook: %s",
			       c->message);
			continue;
		}
		v->ok = false;
		ng_fmt(v->reason, sizeof(v->reason),
		       "health hook of ApplicationDisruptionBudget %s/%s: %s",
		       ng_intern_str(pool, c->adb->b.ns, NULL),
		       ng_intern_str(pool, c->adb->b.name, NULL), c->message);
		any = true;
	}
	if (any) {
		pol_decision_reason(d);
		d->outcome = nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
	}
	return any;
}
