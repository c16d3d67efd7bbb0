/* What the object admission webhooks say of NodeDisruptions, budgets and the NodeGateConfig
 * (DESIGN.md §5): each object is read with the decoder the cache uses, so what is admitted is
 * exactly what the gate can read, and checked as the gate would use it. Pure; any thread. */
#ifndef NG_POLICY_VALIDATE_H
#define NG_POLICY_VALIDATE_H

#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

enum pol_check {
	POL_CHECK_OK,
	POL_CHECK_INVALID,   /* a field is malformed, out of range or immutable: 422 */
	POL_CHECK_FORBIDDEN, /* allowed in form, but not to this user or under this policy: 403 */
};

/**
 * An ApplicationDisruptionBudget, NodeDisruptionBudget or NodeGateConfig @obj: selectors,
 * IntOrString limits, an NDB with neither limit, an ADB with neither selector, the health hook
 * (valid, and allowed under @cluster's NodeGateConfig healthHooks: else FORBIDDEN), the config's
 * fields. Writes why (naming the field) into @why unless POL_CHECK_OK. Other kinds pass.
 */
enum pol_check pol_check_budget(const struct kube_snapshot *cluster, const struct cJSON *obj,
				char *why, size_t cap);

/**
 * A NodeDisruption @obj being created (@old NULL) or updated (@old the stored object): exactly
 * one of nodeSelector and nodeNames; a selector that parses and is not `{}` (it would select
 * every node); drain selectors that parse and filter regexes that compile; once @old is
 * Granted, a spec unchanged but for retry.deadline and additionalRequestors; the
 * nodegate.io/created-by annotation unchanged. Allowed requests may get a @warning about the
 * nodes spec.nodeNames names: not known to nodegate, or already granted to another request
 * ("" when none).
 */
enum pol_check pol_check_nd(const struct kube_snapshot *cluster, const struct cJSON *obj,
			    const struct cJSON *old, char *why, size_t cap, char *warning,
			    size_t wcap);

/**
 * An update of a NodeDisruption's status by @user: only the users in @deciders (nodegate's
 * service account) may change the decision — state, disruptedNodes, grantedAt,
 * disruptedDisruptionBudgets. Other status fields (conditions a requestor sets, drain progress)
 * stay open. FORBIDDEN with why otherwise.
 */
enum pol_check pol_check_nd_status(const struct cJSON *obj, const struct cJSON *old,
				   const char *user, const char *const *deciders, size_t ndeciders,
				   char *why, size_t cap);

struct ng_arena;
struct pol_gate_decision;

/**
 * Dry run (POST /v1/evaluate, `nodegate check`): decides NodeDisruption @obj, which is not in
 * the cache, against @cluster as the gate would now (DESIGN.md §4 steps 1-7 and 9; health hooks
 * are not called). The decision's arrays come from @arena and its ids are @cluster's. A request
 * pol_check_nd() refuses is not decided: its answer and why are returned instead.
 */
enum pol_check pol_evaluate_object(const struct kube_snapshot *cluster, const struct cJSON *obj,
				   int64_t now_ms, struct ng_arena *arena,
				   struct pol_gate_decision *ret, char *why, size_t cap);

#endif
