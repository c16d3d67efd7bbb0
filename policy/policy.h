/* Decisions. Pure functions over a cache snapshot: no I/O, no logging, any thread. A deny is a
 * result, not an error (STYLE.md B6).
 *
 * Ownership: every pointer argument is borrowed for the call; nothing is kept after it returns.
 * A struct pol_decision is a self-contained value (its text is copied into its arrays), so it
 * stays valid after the snapshot is released. Strings returned by the _str functions are
 * static. Errors: none; pol_decide_eviction() always writes a decision. */
#ifndef NG_POLICY_POLICY_H
#define NG_POLICY_POLICY_H

#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pol_eviction_mode {
	POL_EVICTION_ENFORCE, /* deny protected evictions with 429 */
	POL_EVICTION_WARN,    /* allow them with a warning */
	POL_EVICTION_OFF,     /* allow everything */
};

/** Parses @s (NUL-terminated): "Enforce", "Warn" or "Off". NG_OK and writes @ret, or
 * NG_EPARSE and leaves @ret alone. */
NG_NODISCARD ng_status pol_eviction_mode_parse(const char *s, enum pol_eviction_mode *ret);
/** "Enforce", "Warn" or "Off": a static string. */
const char *pol_eviction_mode_str(enum pol_eviction_mode m);

/* From flags; a NodeGateConfig named "default" in the cache overrides `mode` (spec.eviction.mode)
 * and the exempt users (spec.eviction.exemptUsers) while it exists. Borrowed by the decision;
 * immutable while the server runs. */
struct pol_eviction_config {
	enum pol_eviction_mode mode;
	/* Each entry matches userInfo.username or any of userInfo.groups: exactly, or by prefix
	 * when it ends in '*' ("system:serviceaccount:kube-system:*"). "*" alone is refused where
	 * entries come in (kube_exempt_entry_allowed()) and never matches here. */
	const char *const *exempt_users;
	size_t nexempt;
	int32_t retry_after_seconds; /* > 0 */
	/* Denials can ask for their node (NodeGateConfig eviction.autoRequest): false where
	 * nothing would create the request (snapshot mode), so no denial promises it. */
	bool auto_request_served;
};

/* Borrowed for the call: the strings usually point into the request's JSON. */
struct pol_eviction_request {
	const char *ns, *name; /* the pod: ns_len and name_len bytes, no NUL needed */
	size_t ns_len, name_len;
	const char *username; /* userInfo.username, NUL-terminated; may be NULL */
	/* userInfo.groups, NUL-terminated each; none when the review carried more than
	 * KUBE_AUTH_MAX_GROUPS (then only the username can make the requester exempt). */
	const char *const *groups;
	size_t ngroups;
	int64_t now_wall_ms; /* when it is decided: do-not-disrupt durations end */
};

/* Why the answer is what it is: a stable token for logs and metrics. */
enum pol_reason {
	POL_R_MODE_OFF,
	POL_R_EXEMPT,
	POL_R_UNKNOWN_POD,
	POL_R_DAEMONSET,
	POL_R_MIRROR,
	POL_R_FINISHED,
	POL_R_TERMINATING,
	POL_R_UNSCHEDULED,
	POL_R_GRANTED,
	POL_R_UNPROTECTED,
	POL_R_PROTECTED,      /* denied (Enforce) or warned (Warn) */
	POL_R_DO_NOT_DISRUPT, /* the pod or its node says do-not-disrupt: denied or warned */
};

/** Stable lower-case token for @r ("granted", "protected", ...): a static string. */
const char *pol_reason_str(enum pol_reason r);

/* ---- do-not-disrupt (docs/gate.md) ---- */

/** Whether pod @p says nodegate.io/do-not-disrupt at @now_wall_ms. */
bool pol_pod_do_not_disrupt(const struct kube_pod *p, int64_t now_wall_ms);
/** Whether node @n says nodegate.io/do-not-disrupt at @now_wall_ms. */
bool pol_node_do_not_disrupt(const struct kube_node *n, int64_t now_wall_ms);
/** Whether a request of @type (intern id) overrides do-not-disrupt (NodeGateConfig
 * doNotDisruptOverrideTypes of @s). */
bool pol_dnd_overridden(const struct kube_snapshot *s, uint32_t type);
/**
 * Whether something on node @n of @s says do-not-disrupt at @now_wall_ms: the node, or a pod on
 * it that a drain would move (not a DaemonSet's, a mirror, finished or terminating). Writes what
 * and until when into @why (@cap bytes), e.g. "pod default/db-0 has nodegate.io/do-not-disrupt
 * until 2026-11-27T12:30:00.000Z".
 */
bool pol_node_held_by_do_not_disrupt(const struct kube_snapshot *s, const struct kube_node *n,
				     int64_t now_wall_ms, char *why, size_t cap);

struct pol_decision {
	bool allowed;
	int32_t code; /* HTTP-style status for a denial (429) */
	enum pol_reason reason;
	int32_t retry_after_seconds;
	char message[512]; /* for a person: what happened and what to do; "" when allowed */
	char warning[256]; /* "" unless Warn mode allowed a protected eviction */
	char node[254];    /* the pod's node, "" when unknown */
	/* Denied, and NodeGateConfig eviction.autoRequest asks for a Pending NodeDisruption of
	 * the node (pol_auto_request_name) on the requester's behalf; never acted on for dryRun. */
	bool auto_request;
	/* Denied, or allowed because the node is granted, while the request autoRequest made for
	 * the node exists (labelled nodegate.io/auto-request, not being deleted): the eviction
	 * uses it, which keeps it from ending idle (policy/lifecycle.h). Only when
	 * auto_request_served; never acted on for dryRun. */
	bool auto_request_used;
};

/**
 * The name of the NodeDisruption autoRequest creates for @node (NUL-terminated): "auto-<node>",
 * shortened with a hash to stay a valid name. One name per node, so replicas and repeated
 * evictions create one request at most. Writes a NUL-terminated string of at most @cap bytes
 * into @out (caller storage; 254 bytes always hold the whole name).
 */
void pol_auto_request_name(const char *node, char *out, size_t cap);

/**
 * Decides an eviction per DESIGN.md §5, reading @s, @cfg and @req (all borrowed for the call).
 * Allows when mode is Off, the user is exempt, the pod is unknown, a DaemonSet or mirror pod,
 * finished, terminating or unscheduled, its node is covered by a Granted NodeDisruption, or no
 * ApplicationDisruptionBudget protects it. Otherwise denies (Enforce: code 429, retry-after) or
 * allows with a warning (Warn). A budget that failed validation protects every pod of its
 * namespace: an unreadable budget never weakens safety. Always writes the whole of @ret; never
 * fails.
 */
void pol_decide_eviction(const struct kube_snapshot *s, const struct pol_eviction_config *cfg,
			 const struct pol_eviction_request *req, struct pol_decision *ret);

#endif
