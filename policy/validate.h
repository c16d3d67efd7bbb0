/* What the object admission webhooks say of NodeDisruptions, budgets and the NodeGateConfig
 * (DESIGN.md §5). Each object comes decoded by the decoder the cache uses (kube_one_decode()), so
 * what is admitted is exactly what the gate can read, and it is checked as the gate would use it.
 *
 * Errors: a refusal is an ng_status with the message in @reterr, naming the field: NG_EPARSE or
 * NG_ELIMIT for an object that is malformed, out of range or changes what may not change (the
 * webhooks answer 422), NG_EFORBIDDEN for one the form allows but not this user or the
 * NodeGateConfig policy (403), NG_ENOMEM. Ownership: every pointer is borrowed for the call;
 * nothing is kept. Pure (but that drain filter regexes, once compiled, stay in common/regex.h's
 * process-wide cache for the drainer); any thread. */
#ifndef NG_POLICY_VALIDATE_H
#define NG_POLICY_VALIDATE_H

#include "common/status.h"
#include "kube/one.h"

#include <stddef.h>
#include <stdint.h>

struct kube_one;
struct kube_snapshot;
struct ng_arena;
struct pol_gate_decision;

/**
 * An ApplicationDisruptionBudget, NodeDisruptionBudget or NodeGateConfig @obj: selectors,
 * IntOrString limits, an NDB with neither limit, an ADB with neither selector, the health hook
 * (valid, and allowed under @cluster's NodeGateConfig healthHooks: else NG_EFORBIDDEN), the
 * config's fields. NG_OK for other kinds.
 */
NG_NODISCARD ng_status pol_check_budget(const struct kube_snapshot *cluster,
					const struct kube_one *obj, struct ng_err *reterr);

/**
 * Warnings on a budget @obj pol_check_budget() admits, into @warning (@wcap bytes, "" when
 * none): an ApplicationDisruptionBudget that selects no pod (and, with a pvcSelector, no PVC)
 * in @cluster now, a NodeDisruptionBudget that selects no node now. Nothing is said while
 * @cluster holds no node (no view of the cluster yet) or when memory runs out.
 */
void pol_warn_budget(const struct kube_snapshot *cluster, const struct kube_one *obj, char *warning,
		     size_t wcap);

/**
 * A NodeDisruption @obj being created (@old NULL) or updated (@old the stored object): exactly
 * one of nodeSelector and nodeNames; a selector that parses and is not `{}` (it would select
 * every node); spec.drain, spec.operation, additionalRequestors, startDate and duration well
 * formed; drain selectors that parse and filter regexes that compile; once @old is Granted, every
 * spec field unchanged but retry.deadline and additionalRequestors; the nodegate.io/created-by
 * annotation unchanged. Allowed requests may get a @warning (@wcap bytes, "" when none) about the
 * nodes spec.nodeNames names: not known to nodegate, or already granted to another request.
 */
NG_NODISCARD ng_status pol_check_nd(const struct kube_snapshot *cluster, const struct kube_one *obj,
				    const struct kube_one *old, char *warning, size_t wcap,
				    struct ng_err *reterr);

/**
 * An update of a NodeDisruption's status by @user, from @old to @obj (either NULL: no status):
 * only the users in @deciders (nodegate's service account) may change the decision — state,
 * disruptedNodes, grantedAt, disruptedDisruptionBudgets, compared as decoded. Other status
 * fields (conditions a requestor sets, drain progress) stay open. NG_EFORBIDDEN otherwise.
 */
NG_NODISCARD ng_status pol_check_nd_status(const struct kube_one *obj, const struct kube_one *old,
					   const char *user, const char *const *deciders,
					   size_t ndeciders, struct ng_err *reterr);

/**
 * Dry run (POST /v1/evaluate, `nodegate check`): decides NodeDisruption @obj, which is not in
 * the cache, against @cluster as the gate would now (DESIGN.md §4 steps 1-7 and 9; health hooks
 * are not called). Its status is ignored, and a request without a name is named "evaluate". The
 * decision's arrays come from @arena and its ids are @cluster's. A request pol_check_nd() refuses
 * is not decided: its error is returned instead.
 */
NG_NODISCARD ng_status pol_evaluate_object(const struct kube_snapshot *cluster,
					   const struct kube_one *obj, int64_t now_wall_ms,
					   struct ng_arena *arena, struct pol_gate_decision *ret,
					   struct ng_err *reterr);

#include "policy/remediation.h"

/* A dry run of a NodeRemediation: its plan over the cluster, and for each node that would get a
 * request (POL_REM_CREATE) the gate's decision on that request (decisions[i] for nodes[i]). */
struct pol_rem_explain {
	struct pol_rem_plan plan;
	struct pol_gate_decision *decisions; /* plan.n entries, valid where the action is create */
};

/**
 * Dry run (POST /v1/evaluate, `nodegate check`) of NodeRemediation @obj against @cluster: which
 * pool nodes are unhealthy now, which would get a request, and the gate's decision on each such
 * request, decided in order with the earlier ones granted where they would be (health hooks are
 * not called). The remediation's repairs (status.lastRemediated) are the cluster's copy's when
 * the cluster has one by that name. Arrays from @arena, ids @cluster's. NG_EPARSE for a
 * remediation that does not validate (@reterr says why), NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_explain_remediation(const struct kube_snapshot *cluster,
					       const struct kube_one *obj, int64_t now_wall_ms,
					       struct ng_arena *arena, struct pol_rem_explain *ret,
					       struct ng_err *reterr);

#endif
