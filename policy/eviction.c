#include "policy/policy.h"

#include "budgets/budgets.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/map.h"

#include <stdio.h>
#include <string.h>

int pol_eviction_mode_parse(const char *s, enum pol_eviction_mode *ret)
{
	if (strcmp(s, "Enforce") == 0)
		*ret = POL_EVICTION_ENFORCE;
	else if (strcmp(s, "Warn") == 0)
		*ret = POL_EVICTION_WARN;
	else if (strcmp(s, "Off") == 0)
		*ret = POL_EVICTION_OFF;
	else
		return -1;
	return 0;
}

const char *pol_eviction_mode_str(enum pol_eviction_mode m)
{
	return m == POL_EVICTION_ENFORCE ? "Enforce" : m == POL_EVICTION_WARN ? "Warn" : "Off";
}

const char *pol_reason_str(enum pol_reason r)
{
	static const char *const names[] = {
	    "mode-off",    "exempt",      "unknown-pod", "daemonset",   "mirror-pod", "finished",
	    "terminating", "unscheduled", "granted",     "unprotected", "protected",
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

void pol_decide_eviction(const struct kube_snapshot *s, const struct pol_eviction_config *cfg,
			 const struct pol_eviction_request *req, struct pol_decision *ret)
{
	struct pol_decision d;
	memset(&d, 0, sizeof(d));
	const struct ng_intern *pool = kube_snapshot_pool(s);
	/* NodeGateConfig "default", while it exists, overrides the flags field by field. */
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	enum pol_eviction_mode mode = cfg->mode;
	if (ngc && ngc->eviction_mode != KUBE_EVICTION_UNSET)
		mode = ngc->eviction_mode == KUBE_EVICTION_WARN  ? POL_EVICTION_WARN
		       : ngc->eviction_mode == KUBE_EVICTION_OFF ? POL_EVICTION_OFF
								 : POL_EVICTION_ENFORCE;
	if (mode == POL_EVICTION_OFF) {
		allow(&d, POL_R_MODE_OFF);
		goto out;
	}
	if (req->username && ngc && ngc->has_exempt_users) {
		uint32_t user = ng_intern_find(pool, req->username, strlen(req->username));
		for (size_t i = 0; user != NG_INTERN_NONE && i < ngc->nexempt; i++) {
			if (ngc->exempt_users[i] == user) {
				allow(&d, POL_R_EXEMPT);
				goto out;
			}
		}
	} else {
		for (size_t i = 0; req->username && i < cfg->nexempt; i++) {
			if (strcmp(req->username, cfg->exempt_users[i]) == 0) {
				allow(&d, POL_R_EXEMPT);
				goto out;
			}
		}
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
	if (pod->flags & KUBE_POD_DAEMONSET) {
		allow(&d, POL_R_DAEMONSET);
		goto out;
	}
	if (pod->flags & KUBE_POD_MIRROR) {
		allow(&d, POL_R_MIRROR);
		goto out;
	}
	if (pod->phase == KUBE_POD_SUCCEEDED || pod->phase == KUBE_POD_FAILED) {
		allow(&d, POL_R_FINISHED);
		goto out;
	}
	if (pod->flags & KUBE_POD_TERMINATING) {
		allow(&d, POL_R_TERMINATING);
		goto out;
	}
	if (pod->node == NG_INTERN_NONE) {
		/* Not on any node: evicting it takes no node's capacity away. */
		allow(&d, POL_R_UNSCHEDULED);
		goto out;
	}
	if (kube_snapshot_node_grant(s, pod->node)) {
		allow(&d, POL_R_GRANTED);
		goto out;
	}
	size_t nadb;
	const uint32_t *idx = kube_snapshot_adbs_in_ns(s, pod->ns, &nadb);
	size_t nall;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nall);
	const struct kube_adb *named[NAMED_BUDGETS];
	size_t nprot = 0;
	bool any_invalid = false;
	for (size_t i = 0; i < nadb; i++) {
		const struct kube_adb *a = &adbs[idx[i]];
		bool protects = a->b.invalid || bud_adb_selects_pod(s, a, pod);
		if (!protects)
			continue;
		any_invalid = any_invalid || a->b.invalid;
		if (nprot < NAMED_BUDGETS)
			named[nprot] = a;
		nprot++;
	}
	if (nprot == 0) {
		allow(&d, POL_R_UNPROTECTED);
		goto out;
	}
	/* Protected and not granted. */
	char list[256];
	size_t off = 0;
	for (size_t i = 0; i < nprot && i < NAMED_BUDGETS; i++) {
		int n = snprintf(list + off, sizeof(list) - off, "%s%s/%s%s", i ? ", " : "",
				 ng_intern_str(pool, named[i]->b.ns, NULL),
				 ng_intern_str(pool, named[i]->b.name, NULL),
				 named[i]->b.invalid ? " (invalid, protecting its whole namespace)"
						     : "");
		if (n < 0 || (size_t)n >= sizeof(list) - off) {
			off = sizeof(list) - 1;
			break;
		}
		off += (size_t)n;
	}
	if (nprot > NAMED_BUDGETS && off < sizeof(list) - 1)
		(void)snprintf(list + off, sizeof(list) - off, " and %zu more",
			       nprot - NAMED_BUDGETS);
	(void)any_invalid;
	d.reason = POL_R_PROTECTED;
	d.retry_after_seconds = cfg->retry_after_seconds;
	if (mode == POL_EVICTION_WARN) {
		allow(&d, POL_R_PROTECTED);
		ng_fmt(d.warning, sizeof(d.warning),
		       "nodegate (Warn mode) would deny: pod on node %s is protected by "
		       "ApplicationDisruptionBudget %s and the node has no granted "
		       "NodeDisruption",
		       d.node, list);
		goto out;
	}
	d.allowed = false;
	d.code = 429;
	d.auto_request = cfg->auto_request_served && ngc && !ngc->invalid && ngc->auto_request;
	if (d.auto_request) {
		char nd[254];
		pol_auto_request_name(d.node, nd, sizeof(nd));
		ng_fmt(d.message, sizeof(d.message),
		       "nodegate: cannot evict pod %.*s/%.*s yet: node %s has no granted "
		       "NodeDisruption and the pod is protected by ApplicationDisruptionBudget %s. "
		       "nodegate requests the disruption for you (NodeDisruption %s); evictions "
		       "are allowed once it is Granted. Retrying in %ds.",
		       (int)req->ns_len, req->ns, (int)req->name_len, req->name, d.node, list, nd,
		       (int)cfg->retry_after_seconds);
		goto out;
	}
	ng_fmt(d.message, sizeof(d.message),
	       "nodegate: cannot evict pod %.*s/%.*s: node %s has no granted NodeDisruption "
	       "and the pod is protected by ApplicationDisruptionBudget %s. Request a "
	       "disruption of the node (a nodegate.io/v1alpha1 NodeDisruption with "
	       "spec.nodeNames: [%s]); evictions are allowed once it is Granted. Retrying "
	       "in %ds.",
	       (int)req->ns_len, req->ns, (int)req->name_len, req->name, d.node, list, d.node,
	       (int)cfg->retry_after_seconds);
out:
	*ret = d;
}

void pol_auto_request_name(const char *node, char *out, size_t cap)
{
	size_t n = strlen(node);
	/* "auto-" + a node name (a DNS subdomain of up to 253) may exceed 253: keep the start and
	 * make it unique with a hash of the whole name. */
	if (n + 5 <= 253) {
		ng_fmt(out, cap, "auto-%s", node);
		return;
	}
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, node, n);
	size_t keep = 230;
	while (keep > 0 && (node[keep - 1] == '.' || node[keep - 1] == '-'))
		keep--; /* "x.-hash" would not be a DNS subdomain */
	ng_fmt(out, cap, "auto-%.*s-%08x", (int)keep, node, (unsigned)(h & 0xffffffffu));
}
