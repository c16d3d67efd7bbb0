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

bool pol_hook_addr_allowed(const struct kube_hook_policy *p, int family, const uint8_t *addr)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (p->ncidrs == 0)
		return true;
	if (family == 6 && memcmp(addr, v4mapped, 12) == 0) {
		family = 4;
		addr += 12;
	}
	for (uint16_t i = 0; i < p->ncidrs; i++) {
		const struct kube_cidr *c = &p->cidrs[i];
		if (c->family != family)
			continue;
		unsigned full = c->bits / 8u, rest = c->bits % 8u;
		if (memcmp(addr, c->addr, full) != 0)
			continue;
		uint8_t mask = (uint8_t)(0xffu << (8u - rest));
		if (rest && (addr[full] & mask) != (c->addr[full] & mask))
			continue;
		return true;
	}
	return false;
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
		if (!any)
			ng_fmt(d->reason, sizeof(d->reason), "%s", v->reason);
		any = true;
	}
	if (any)
		d->outcome = nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
	return any;
}
