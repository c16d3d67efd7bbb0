#include "policy/capi.h"

#include "budgets/budgets.h"
#include "budgets/selector.h"
#include "common/buf.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "policy/remediation.h"

#include <string.h>

void pol_capi_request_name(const char *ns, const char *name, char *out, size_t cap)
{
	char key[600];
	ng_fmt(key, sizeof(key), "%.253s.%.253s", ns, name);
	pol_request_name("capi-", key, out, cap);
}

/* A pod on the node that an ApplicationDisruptionBudget of its namespace selects (an invalid
 * one selects every pod of its namespace). */
static bool pod_covered(const struct kube_snapshot *s, const struct kube_pod *pod)
{
	size_t na, n;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &na);
	const uint32_t *in_ns = kube_snapshot_adbs_in_ns(s, pod->ns, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kube_adb *a = &adbs[in_ns[i]];
		if (a->b.invalid || bud_adb_selects_pod(s, a, pod))
			return true;
	}
	return false;
}

bool pol_capi_node_covered(const struct kube_snapshot *s, uint32_t node)
{
	const struct kube_node *rec = kube_snapshot_find_node(s, node);
	if (!rec)
		return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t nb;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &nb);
	for (size_t i = 0; i < nb; i++)
		if (bud_selector_matches(&ndbs[i].node_selector, rec->labels, rec->nlabels, pool))
			return true;
	size_t np, n;
	const struct kube_pod *pods = kube_snapshot_pods(s, &np);
	const uint32_t *on = kube_snapshot_pods_on_node(s, node, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kube_pod *p = &pods[on[i]];
		if (p->phase == KUBE_POD_SUCCEEDED || p->phase == KUBE_POD_FAILED)
			continue;
		if (pod_covered(s, p))
			return true;
	}
	return false;
}

/* Whether @nd was made for Machine @ns/@name: its annotation names it. */
static bool made_for(const struct kube_snapshot *s, const struct kube_nd *nd, const char *ns,
		     const char *name)
{
	if (!nd->detail || nd->detail->capi_machine == NG_INTERN_NONE)
		return false;
	const char *m = ng_intern_str(kube_snapshot_pool(s), nd->detail->capi_machine, NULL);
	size_t nl = strlen(ns);
	return strncmp(m, ns, nl) == 0 && m[nl] == '/' && strcmp(m + nl + 1, name) == 0;
}

/* Whether Granted @nd holds node @node. */
static bool holds(const struct kube_nd *nd, uint32_t node)
{
	if (nd->state != KUBE_ND_GRANTED || nd->deleting)
		return false;
	for (uint16_t i = 0; i < nd->ndisrupted; i++)
		if (nd->disrupted[i] == node)
			return true;
	return false;
}

void pol_capi_decide(const struct kube_snapshot *s, const struct kube_machine *m,
		     struct pol_capi_decision *ret)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *ns = ng_intern_str(pool, m->ns, NULL);
	const char *name = ng_intern_str(pool, m->name, NULL);
	memset(ret, 0, sizeof(*ret));
	pol_capi_request_name(ns, name, ret->name, sizeof(ret->name));
	bool node = m->node != NG_INTERN_NONE && kube_snapshot_find_node(s, m->node);
	if (!m->deleting) {
		bool covered = node && pol_capi_node_covered(s, m->node);
		if (covered && !m->hook) {
			ret->action = POL_CAPI_ADD_HOOK;
			ret->why = "a disruption budget covers its node";
		} else if (!covered && m->hook) {
			ret->action = POL_CAPI_REMOVE_HOOK;
			ret->why = node ? "no disruption budget covers its node" : "it has no node";
		} else {
			ret->action = POL_CAPI_NONE;
			ret->why = m->hook ? "a disruption budget covers its node" : "not gated";
		}
		return;
	}
	if (!m->hook) {
		ret->action = POL_CAPI_NONE;
		ret->why = "being deleted without nodegate's hook";
		return;
	}
	uint32_t id = ng_intern_find(pool, ret->name, strlen(ret->name));
	const struct kube_nd *nd = kube_snapshot_find_nd(s, id);
	if (nd && !made_for(s, nd, ns, name)) {
		/* Someone else's request under this name: never read as ours. */
		ret->action = POL_CAPI_WAIT;
		ret->why = "a NodeDisruption of its request's name was not made for it";
		return;
	}
	ret->request = nd;
	if (!node) {
		/* Nothing left to drain: the hook would only keep the Machine forever. */
		ret->action = POL_CAPI_REMOVE_HOOK;
		ret->release = true;
		ret->why = "its node is gone";
	} else if (!nd) {
		ret->action = POL_CAPI_REQUEST;
		ret->why = "being deleted: its node needs a grant";
	} else if (holds(nd, m->node)) {
		ret->action = POL_CAPI_REMOVE_HOOK;
		ret->release = true;
		ret->why = "its request is Granted";
	} else {
		ret->action = POL_CAPI_WAIT;
		ret->why =
		    nd->deleting ? "its request is being deleted" : "its request is not Granted";
	}
}

bool pol_capi_request_stale(const struct kube_snapshot *s, const struct kube_nd *nd)
{
	if (!nd->detail || nd->detail->capi_machine == NG_INTERN_NONE)
		return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *key = ng_intern_str(pool, nd->detail->capi_machine, NULL);
	const char *slash = strchr(key, '/');
	if (!slash || slash == key || !slash[1])
		return false;
	char ns[254], mine[POL_CAPI_NAME_CAP];
	ng_fmt(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
	pol_capi_request_name(ns, slash + 1, mine, sizeof(mine));
	if (strcmp(mine, ng_intern_str(pool, nd->name, NULL)) != 0)
		return false; /* not the name gating gives that Machine's request: not ours */
	uint32_t ns_id = ng_intern_find(pool, ns, strlen(ns));
	uint32_t name_id = ng_intern_find(pool, slash + 1, strlen(slash + 1));
	const struct kube_machine *m = kube_snapshot_find_machine(s, ns_id, name_id);
	return !m || m->node == NG_INTERN_NONE || !kube_snapshot_find_node(s, m->node);
}

/* Appends @src to @out (at *@o, @cap bytes) lower-cased, characters a DNS subdomain lacks as
 * '-'. */
static void append_dns(char *out, size_t cap, size_t *o, const char *src)
{
	for (const char *p = src; *p && *o + 1 < cap && *o < 253; p++) {
		char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
		out[(*o)++] = ok ? c : '-';
	}
	out[*o] = '\0';
}

void pol_capi_requestor(const struct kube_snapshot *s, const struct kube_machine *m, char *out,
			size_t cap)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool owner = m->owner_kind != NG_INTERN_NONE && m->owner_name != NG_INTERN_NONE;
	size_t o = 0;
	out[0] = '\0';
	append_dns(out, cap, &o, owner ? ng_intern_str(pool, m->owner_kind, NULL) : "machine");
	append_dns(out, cap, &o, ".");
	append_dns(out, cap, &o, ng_intern_str(pool, m->ns, NULL));
	append_dns(out, cap, &o, ".");
	append_dns(out, cap, &o, ng_intern_str(pool, owner ? m->owner_name : m->name, NULL));
	/* A DNS subdomain starts and ends with an alphanumeric. */
	while (o > 0 && (out[o - 1] == '-' || out[o - 1] == '.'))
		out[--o] = '\0';
	size_t skip = strspn(out, "-.");
	memmove(out, out + skip, o - skip + 1);
	if (!out[0])
		ng_fmt(out, cap, "cluster-api");
}
