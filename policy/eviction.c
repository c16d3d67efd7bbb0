#include "policy/policy.h"
#include "policy/remediation.h"

#include "budgets/budgets.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/map.h"

#include <stdio.h>
#include <string.h>

ng_status pol_eviction_mode_parse(const char *s, enum pol_eviction_mode *ret)
{
	enum kube_eviction_mode m;
	if (kube_eviction_mode_parse(s, &m) != NG_OK)
		return NG_EPARSE;
	*ret = m == KUBE_EVICTION_WARN  ? POL_EVICTION_WARN
	       : m == KUBE_EVICTION_OFF ? POL_EVICTION_OFF
					: POL_EVICTION_ENFORCE;
	return NG_OK;
}

const char *pol_eviction_mode_str(enum pol_eviction_mode m)
{
	return m == POL_EVICTION_ENFORCE ? "Enforce" : m == POL_EVICTION_WARN ? "Warn" : "Off";
}

const char *pol_reason_str(enum pol_reason r)
{
	static const char *const names[] = {
	    "mode-off",   "exempt",      "unknown-pod", "daemonset",
	    "mirror-pod", "finished",    "terminating", "unscheduled",
	    "granted",    "unprotected", "protected",   "do-not-disrupt",
	};
	return (size_t)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

static void allow(struct pol_decision *d, enum pol_reason r)
{
	d->allowed = true;
	d->code = 200;
	d->reason = r;
}

/* The budgets that protect the pod, for the message: at most this many are named. */
#define NAMED_BUDGETS 3

/* DESIGN.md §5's eviction rule, one check per function. Allow when mode is Off, the requester
 * is exempt, the pod is unknown, a DaemonSet or mirror pod, or finished (or terminating, or on
 * no node), its node is covered by a Granted request, or no ADB protects it; otherwise Warn
 * allows with a warning and Enforce denies with 429. */

/* The mode: the flag, unless NodeGateConfig "default" sets spec.eviction.mode. */
static enum pol_eviction_mode mode_of(const struct pol_eviction_config *cfg,
				      const struct kube_ngc *ngc)
{
	if (!ngc || ngc->eviction_mode == KUBE_EVICTION_UNSET)
		return cfg->mode;
	return ngc->eviction_mode == KUBE_EVICTION_WARN  ? POL_EVICTION_WARN
	       : ngc->eviction_mode == KUBE_EVICTION_OFF ? POL_EVICTION_OFF
							 : POL_EVICTION_ENFORCE;
}

/* @name matches the exemptUsers entry @e (@elen bytes): equal to it, or, when it ends in '*',
 * starting with what comes before. "*" alone matches nothing: it would exempt everyone, and is
 * refused where entries come in, so only a caller bypassing that could hand it here. An empty
 * entry names no one. */
static bool entry_matches(const char *e, size_t elen, const char *name)
{
	if (elen == 0)
		return false;
	if (e[elen - 1] == '*')
		return elen > 1 && strncmp(name, e, elen - 1) == 0;
	return strlen(name) == elen && memcmp(name, e, elen) == 0;
}

/* The username or one of the groups of @req matches the entry @e (@elen bytes). */
static bool requester_matches(const struct pol_eviction_request *req, const char *e, size_t elen)
{
	if (req->username && entry_matches(e, elen, req->username))
		return true;
	for (size_t i = 0; i < req->ngroups; i++)
		if (req->groups[i] && entry_matches(e, elen, req->groups[i]))
			return true;
	return false;
}

/* The requester is exempt: its username or one of its groups matches an entry of NodeGateConfig
 * spec.eviction.exemptUsers when that list is set (it replaces the flag's list), else of the
 * flag's. At most 256 entries against 1 + 256 names: bounded work per review. */
static bool requester_exempt(const struct kube_snapshot *s, const struct pol_eviction_config *cfg,
			     const struct kube_ngc *ngc, const struct pol_eviction_request *req)
{
	if (ngc && ngc->has_exempt_users) {
		const struct ng_intern *pool = kube_snapshot_pool(s);
		for (size_t i = 0; i < ngc->nexempt; i++) {
			size_t len = 0;
			const char *e = ng_intern_str(pool, ngc->exempt_users[i], &len);
			if (e && requester_matches(req, e, len))
				return true;
		}
		return false;
	}
	for (size_t i = 0; i < cfg->nexempt; i++)
		if (requester_matches(req, cfg->exempt_users[i], strlen(cfg->exempt_users[i])))
			return true;
	return false;
}

/* Pods whose eviction takes nothing a budget counts: DaemonSet and mirror pods, finished or
 * terminating pods, and pods on no node. Writes why into @ret. */
static bool pod_never_protected(const struct kube_pod *pod, enum pol_reason *ret)
{
	if (pod->flags & KUBE_POD_DAEMONSET)
		*ret = POL_R_DAEMONSET;
	else if (pod->flags & KUBE_POD_MIRROR)
		*ret = POL_R_MIRROR;
	else if (pod->phase == KUBE_POD_SUCCEEDED || pod->phase == KUBE_POD_FAILED)
		*ret = POL_R_FINISHED;
	else if (pod->flags & KUBE_POD_TERMINATING)
		*ret = POL_R_TERMINATING;
	else if (pod->node == NG_INTERN_NONE)
		/* Not on any node: evicting it takes no node's capacity away. */
		*ret = POL_R_UNSCHEDULED;
	else
		return false;
	return true;
}

bool pol_pod_do_not_disrupt(const struct kube_pod *p, int64_t now_wall_ms)
{
	return p->dnd_until_ms != KUBE_DND_NONE && now_wall_ms < p->dnd_until_ms;
}

bool pol_node_do_not_disrupt(const struct kube_node *n, int64_t now_wall_ms)
{
	return n->dnd_until_ms != KUBE_DND_NONE && now_wall_ms < n->dnd_until_ms;
}

bool pol_dnd_overridden(const struct kube_snapshot *s, uint32_t type)
{
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	for (uint16_t i = 0; ngc && type != NG_INTERN_NONE && i < ngc->ndnd_override; i++)
		if (ngc->dnd_override[i] == type)
			return true;
	return false;
}

/* " until T", " (unreadable: protects until it is fixed)" or "" (for good). */
static void dnd_until_text(int64_t until_ms, bool invalid, char *out, size_t cap)
{
	char at[40];
	if (invalid)
		ng_fmt(out, cap,
		       " (its value does not read as true, false or a duration: it "
		       "protects until fixed)");
	else if (until_ms == KUBE_DND_ALWAYS)
		ng_fmt(out, cap, "%s", "");
	else {
		ng_format_rfc3339_ms(until_ms, at);
		ng_fmt(out, cap, " until %s", at);
	}
}

bool pol_node_held_by_do_not_disrupt(const struct kube_snapshot *s, const struct kube_node *n,
				     int64_t now_wall_ms, char *why, size_t cap)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	char until[160];
	if (pol_node_do_not_disrupt(n, now_wall_ms)) {
		dnd_until_text(n->dnd_until_ms, n->flags & KUBE_NODE_DND_INVALID, until,
			       sizeof(until));
		ng_fmt(why, cap, "node %s has " KUBE_DO_NOT_DISRUPT "%s",
		       ng_intern_str(pool, n->name, NULL), until);
		return true;
	}
	size_t np;
	const uint32_t *idx = kube_snapshot_pods_on_node(s, n->name, &np);
	size_t nall;
	const struct kube_pod *pods = kube_snapshot_pods(s, &nall);
	for (size_t i = 0; i < np; i++) {
		const struct kube_pod *p = &pods[idx[i]];
		enum pol_reason ignored;
		if (!pol_pod_do_not_disrupt(p, now_wall_ms) || pod_never_protected(p, &ignored))
			continue;
		dnd_until_text(p->dnd_until_ms, p->flags & KUBE_POD_DND_INVALID, until,
			       sizeof(until));
		ng_fmt(why, cap, "pod %s/%s on node %s has " KUBE_DO_NOT_DISRUPT "%s",
		       ng_intern_str(pool, p->ns, NULL), p->name,
		       ng_intern_str(pool, n->name, NULL), until);
		return true;
	}
	return false;
}

/* The ADBs of the pod's namespace that protect it: those selecting it, and invalid ones (an
 * unreadable budget protects its whole namespace). Returns how many; the first NAMED_BUDGETS
 * go into @named. */
static size_t protecting_budgets(const struct kube_snapshot *s, const struct kube_pod *pod,
				 const struct kube_adb *named[NAMED_BUDGETS])
{
	size_t nadb, nall, nprot = 0;
	const uint32_t *idx = kube_snapshot_adbs_in_ns(s, pod->ns, &nadb);
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nall);
	for (size_t i = 0; i < nadb; i++) {
		const struct kube_adb *a = &adbs[idx[i]];
		if (!a->b.invalid && !bud_adb_selects_pod(s, a, pod))
			continue;
		if (nprot < NAMED_BUDGETS)
			named[nprot] = a;
		nprot++;
	}
	return nprot;
}

/* "ns/name, ns/name (invalid, ...) and 2 more" for the message, cut to @cap. */
static void budget_list(const struct ng_intern *pool, const struct kube_adb *const *named,
			size_t nprot, char *list, size_t cap)
{
	size_t off = 0;
	for (size_t i = 0; i < nprot && i < NAMED_BUDGETS; i++) {
		int n = snprintf(list + off, cap - off, "%s%s/%s%s", i ? ", " : "",
				 ng_intern_str(pool, named[i]->b.ns, NULL),
				 ng_intern_str(pool, named[i]->b.name, NULL),
				 named[i]->b.invalid ? " (invalid, protecting its whole namespace)"
						     : "");
		if (n < 0 || (size_t)n >= cap - off) {
			off = cap - 1;
			break;
		}
		off += (size_t)n;
	}
	if (nprot > NAMED_BUDGETS && off < cap - 1)
		(void)snprintf(list + off, cap - off, " and %zu more", nprot - NAMED_BUDGETS);
}

/* Warn: allowed, with a warning saying what Enforce would do. */
static void warn(struct pol_decision *d, const char *list)
{
	allow(d, POL_R_PROTECTED);
	ng_fmt(d->warning, sizeof(d->warning),
	       "nodegate (Warn mode) would deny: pod on node %s is protected by "
	       "ApplicationDisruptionBudget %s and the node has no granted NodeDisruption",
	       d->node, list);
}

/* Enforce: 429 with a message naming the node, the budgets and how to get a grant — or, with
 * NodeGateConfig eviction.autoRequest, the request nodegate creates. */
static void deny(struct pol_decision *d, const struct pol_eviction_config *cfg,
		 const struct kube_ngc *ngc, const struct pol_eviction_request *req,
		 const char *list)
{
	d->allowed = false;
	d->code = 429;
	d->auto_request = cfg->auto_request_served && ngc && !ngc->invalid && ngc->auto_request;
	if (d->auto_request) {
		char nd[254];
		pol_auto_request_name(d->node, nd, sizeof(nd));
		ng_fmt(d->message, sizeof(d->message),
		       "nodegate: cannot evict pod %.*s/%.*s yet: node %s has no granted "
		       "NodeDisruption and the pod is protected by ApplicationDisruptionBudget %s. "
		       "nodegate requests the disruption for you (NodeDisruption %s); evictions "
		       "are allowed once it is Granted. Retrying in %ds.",
		       (int)req->ns_len, req->ns, (int)req->name_len, req->name, d->node, list, nd,
		       (int)cfg->retry_after_seconds);
		return;
	}
	ng_fmt(d->message, sizeof(d->message),
	       "nodegate: cannot evict pod %.*s/%.*s: node %s has no granted NodeDisruption "
	       "and the pod is protected by ApplicationDisruptionBudget %s. Request a "
	       "disruption of the node (a nodegate.io/v1alpha1 NodeDisruption with "
	       "spec.nodeNames: [%s]); evictions are allowed once it is Granted. Retrying "
	       "in %ds.",
	       (int)req->ns_len, req->ns, (int)req->name_len, req->name, d->node, list, d->node,
	       (int)cfg->retry_after_seconds);
}

/* A pod that says do-not-disrupt, or whose node does, is evicted only from a node granted to a
 * request of a NodeGateConfig doNotDisruptOverrideTypes type: else denied (429) with why. */
static bool do_not_disrupt(const struct kube_snapshot *s, const struct kube_pod *pod,
			   const struct kube_nd *grant, int64_t now_wall_ms, struct pol_decision *d)
{
	const struct kube_node *node = kube_snapshot_find_node(s, pod->node);
	char until[160], why[400];
	if (pol_pod_do_not_disrupt(pod, now_wall_ms)) {
		dnd_until_text(pod->dnd_until_ms, pod->flags & KUBE_POD_DND_INVALID, until,
			       sizeof(until));
		ng_fmt(why, sizeof(why), "the pod has " KUBE_DO_NOT_DISRUPT "%s", until);
	} else if (node && pol_node_do_not_disrupt(node, now_wall_ms)) {
		dnd_until_text(node->dnd_until_ms, node->flags & KUBE_NODE_DND_INVALID, until,
			       sizeof(until));
		ng_fmt(why, sizeof(why), "node %s has " KUBE_DO_NOT_DISRUPT "%s", d->node, until);
	} else {
		return false;
	}
	if (grant && pol_dnd_overridden(s, grant->type))
		return false;
	d->allowed = false;
	d->code = 429;
	d->reason = POL_R_DO_NOT_DISRUPT;
	ng_fmt(d->message, sizeof(d->message),
	       "nodegate: cannot evict pod %s/%s: %s. Only a NodeDisruption of a type listed in "
	       "NodeGateConfig doNotDisruptOverrideTypes, Granted for node %s, lets it go.",
	       ng_intern_str(kube_snapshot_pool(s), pod->ns, NULL), pod->name, why, d->node);
	return true;
}

/* Whether the request autoRequest made for @node is there (labelled, not being deleted). */
static bool auto_request_exists(const struct kube_snapshot *s, const char *node)
{
	char name[254];
	if (!*node)
		return false;
	pol_auto_request_name(node, name, sizeof(name));
	uint32_t id = ng_intern_find(kube_snapshot_pool(s), name, strlen(name));
	const struct kube_nd *nd = id == NG_INTERN_NONE ? NULL : kube_snapshot_find_nd(s, id);
	return nd && !nd->deleting && nd->detail && nd->detail->auto_request;
}

void pol_decide_eviction(const struct kube_snapshot *s, const struct pol_eviction_config *cfg,
			 const struct pol_eviction_request *req, struct pol_decision *ret)
{
	struct pol_decision d;
	memset(&d, 0, sizeof(d));
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	enum pol_eviction_mode mode = mode_of(cfg, ngc);
	enum pol_reason why;
	if (mode == POL_EVICTION_OFF) {
		allow(&d, POL_R_MODE_OFF);
		goto out;
	}
	if (requester_exempt(s, cfg, ngc, req)) {
		allow(&d, POL_R_EXEMPT);
		goto out;
	}
	const struct kube_pod *pod =
	    kube_snapshot_find_pod_str(s, req->ns, req->ns_len, req->name, req->name_len);
	if (!pod) {
		/* The API server answers 404 itself; nothing of ours to protect. */
		allow(&d, POL_R_UNKNOWN_POD);
		goto out;
	}
	if (pod->node != NG_INTERN_NONE)
		ng_fmt(d.node, sizeof(d.node), "%s", ng_intern_str(pool, pod->node, NULL));
	if (pod_never_protected(pod, &why)) {
		allow(&d, why);
		goto out;
	}
	const struct kube_nd *grant = kube_snapshot_node_grant(s, pod->node);
	if (do_not_disrupt(s, pod, grant, req->now_wall_ms, &d)) {
		d.retry_after_seconds = cfg->retry_after_seconds;
		if (mode == POL_EVICTION_WARN) {
			allow(&d, POL_R_DO_NOT_DISRUPT);
			ng_fmt(d.warning, sizeof(d.warning), "nodegate (Warn mode) would deny: %s",
			       d.message);
			d.message[0] = '\0';
		}
		goto out;
	}
	if (grant) {
		allow(&d, POL_R_GRANTED);
		goto out;
	}
	const struct kube_adb *named[NAMED_BUDGETS];
	size_t nprot = protecting_budgets(s, pod, named);
	if (nprot == 0) {
		allow(&d, POL_R_UNPROTECTED);
		goto out;
	}
	char list[256];
	budget_list(pool, named, nprot, list, sizeof(list));
	d.reason = POL_R_PROTECTED;
	d.retry_after_seconds = cfg->retry_after_seconds;
	if (mode == POL_EVICTION_WARN)
		warn(&d, list);
	else
		deny(&d, cfg, ngc, req, list);
out:
	d.auto_request_used = cfg->auto_request_served && auto_request_exists(s, d.node) &&
			      (!d.allowed || d.reason == POL_R_GRANTED);
	*ret = d;
}

void pol_auto_request_name(const char *node, char *out, size_t cap)
{
	pol_request_name("auto-", node, out, cap);
}
