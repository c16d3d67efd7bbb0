/* Cluster API gating, pure (docs/integrations/cluster-api.md): from a snapshot, what nodegate
 * does with one cluster.x-k8s.io Machine now — keep its pre-drain hook
 * (pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate) while a budget covers its node, ask
 * for a NodeDisruption of type cluster-api when it is being deleted, give the hook up only once
 * that request is Granted — and which of those requests have outlived their Machine or node.
 * controller/capi.c writes what these say; nothing here writes.
 *
 * Ownership: everything passed in is borrowed for the call; a decision points into the
 * snapshot, which must outlive it. Threads: any, on a snapshot the caller holds. */
#ifndef NG_POLICY_CAPI_H
#define NG_POLICY_CAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_machine;
struct kube_nd;
struct kube_snapshot;

/* Longest NodeDisruption name (a DNS subdomain) and its NUL. */
#define POL_CAPI_NAME_CAP 254

/* What to do with one Machine now. */
enum pol_capi_action {
	POL_CAPI_NONE,        /* it is as it should be */
	POL_CAPI_ADD_HOOK,    /* not being deleted, a budget covers its node, no hook yet */
	POL_CAPI_REMOVE_HOOK, /* not being deleted and nothing covers it, or see @release */
	POL_CAPI_REQUEST,     /* being deleted with our hook, its node there, no request yet */
	POL_CAPI_WAIT,        /* being deleted with our hook: its request is not Granted */
};

struct pol_capi_decision {
	enum pol_capi_action action;
	/* POL_CAPI_REMOVE_HOOK of a Machine being deleted: its request is Granted (or its node
	 * is gone, @request NULL then): Cluster API may drain now. */
	bool release;
	const struct kube_nd *request; /* its request in the snapshot, when there is one */
	char name[POL_CAPI_NAME_CAP];  /* the request's name (pol_capi_request_name) */
	const char *why;               /* for logs and Events: a constant string */
};

/**
 * The name of the NodeDisruption asked for Machine @ns/@name: "capi-<ns>.<name>" (a namespace
 * has no dot, so no two Machines share it), cut and suffixed with a hash of the rest when
 * longer than 253 characters. @out holds POL_CAPI_NAME_CAP bytes.
 */
void pol_capi_request_name(const char *ns, const char *name, char *out, size_t cap);

/**
 * Whether node @node (intern id of @s) is in a budget's scope: a NodeDisruptionBudget's
 * nodeSelector matches it, or it runs a pod (not finished) an ApplicationDisruptionBudget
 * selects. Invalid budgets count with the scope they were read with (fail closed: an invalid
 * ApplicationDisruptionBudget covers every pod of its namespace, as the eviction webhook holds).
 */
bool pol_capi_node_covered(const struct kube_snapshot *s, uint32_t node);

/**
 * What gating does with Machine @m of @s now. The hook is never added to a Machine being
 * deleted, and never removed from one whose node is still there unless its request (named as
 * pol_capi_request_name() says, annotated with this Machine) is Granted with that node among
 * its disrupted nodes. Writes the whole of @ret.
 */
void pol_capi_decide(const struct kube_snapshot *s, const struct kube_machine *m,
		     struct pol_capi_decision *ret);

/**
 * Whether @nd is a request gating made (label nodegate.io/cluster-api, its name the one its
 * annotated Machine's request has) that has outlived its purpose: its Machine is gone, or the
 * Machine's node is. False for every other request.
 */
bool pol_capi_request_stale(const struct kube_snapshot *s, const struct kube_nd *nd);

/**
 * The requestor (spec.requestor, a DNS subdomain) of Machine @m's request: its first owner as
 * "<kind>.<namespace>.<name>" lower-cased ("machineset.default.md-0-5d8f"), or
 * "machine.<namespace>.<name>" without owner; characters a DNS subdomain lacks become '-'.
 */
void pol_capi_requestor(const struct kube_snapshot *s, const struct kube_machine *m, char *out,
			size_t cap);

#endif
