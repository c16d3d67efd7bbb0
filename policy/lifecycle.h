/* How a grant ends without its requestor (docs/gate.md "How a maintenance ends"), pure: from a
 * snapshot and the time, which Granted requests end now and why (their deadline passed, or
 * their TTL after completion; for a request eviction.autoRequest made, Pending too: its evictor
 * is done), which show a stale status.expiresAt, and when the next end is due.
 * controller/gate_lifecycle.c records the Events and deletes; nothing here writes.
 *
 * Ownership: everything passed in is borrowed for the call; results live in the caller's arena
 * and point into the snapshot, which must outlive them. Threads: any, on a snapshot the caller
 * holds. */
#ifndef NG_POLICY_LIFECYCLE_H
#define NG_POLICY_LIFECYCLE_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_nd;
struct kube_ngc;
struct kube_snapshot;
struct ng_arena;

/* Why a request ends. */
enum pol_end_reason {
	POL_END_DEADLINE, /* spec.activeDeadlineSeconds (or the config's default) passed */
	POL_END_TTL,      /* spec.ttlSecondsAfterCompletion (or the default) after Completed */
	/* spec.drain.deadlineSeconds (or the config's default) passed before Drained, with
	 * spec.drain.onDeadline Release */
	POL_END_DRAIN_DEADLINE,
	POL_END_NODES_DELETED, /* every node it was granted is deleted */
	/* A request eviction.autoRequest made (pol_auto_request_end): */
	POL_END_AUTO_IDLE,       /* no eviction used it for eviction.autoRequestIdleSeconds */
	POL_END_NODE_UNCORDONED, /* its node was uncordoned after being seen cordoned */
	POL_END_NODE_DELETED,    /* its node is gone */
	POL_END_COUNT,
};

/** The Event reason of @r: "DeadlineExceeded", "TTLAfterCompletionExpired",
 * "DrainDeadlineExceeded", "NodesDeleted", "AutoRequestIdle", "NodeUncordoned", "NodeDeleted"
 * (static). */
const char *pol_end_reason_str(enum pol_end_reason r);

/**
 * When the grant of @nd, granted at @granted_wall_ms, passes its deadline: its
 * spec.activeDeadlineSeconds, else @ngc's lifecycle.defaultActiveDeadlineSeconds (@ngc NULL:
 * none; never for a request a NodeRemediation created, which ends its requests itself); 0 when
 * it has none (0 seconds, absent, or @granted_wall_ms <= 0). What the gate writes as
 * status.expiresAt. The TTL's default is skipped for the same requests.
 */
int64_t pol_grant_expires_ms(const struct kube_nd *nd, const struct kube_ngc *ngc,
			     int64_t granted_wall_ms);

/* A request that ends now. */
struct pol_end {
	const struct kube_nd *nd;
	enum pol_end_reason reason;
	int64_t due_wall_ms; /* when it fell due */
};

/* A Granted request whose status.expiresAt is not its deadline (the spec or the config's
 * default changed since it was written), or whose status.deletedNodes does not name the nodes
 * of its grant that are deleted. */
struct pol_expiry {
	const struct kube_nd *nd;
	int64_t expires_wall_ms; /* what status.expiresAt should say; 0: remove it */
	const uint32_t *deleted; /* what status.deletedNodes should say (ids, in the request's
				    order; NULL and 0: remove it) */
	uint16_t ndeleted;
	bool expires_stale, deleted_stale; /* which of the two is to be written */
};

struct pol_lifecycle {
	struct pol_end *ends; /* in the snapshot's order */
	size_t nends;
	struct pol_expiry *stale;
	size_t nstale;
	int64_t next_wall_ms; /* the earliest end not yet due; 0: none */
};

/**
 * Looks at every Granted request of @s that is not being deleted at @now_wall_ms, with the
 * snapshot's NodeGateConfig defaults (an invalid config has none). A request ends when its
 * deadline has passed (from status.grantedAt) or its TTL after completion has (from the
 * lastTransitionTime of its Ready condition with reason Completed; without one, at once),
 * or its drain deadline has with drain.onDeadline Release before its drain reached Drained,
 * whichever falls due first. A request whose drain Failed (or was quarantined) or whose
 * RequestorFailed condition is True does not end so: its nodes stay cordoned, so deleting it
 * would let budgets count them free. Any Granted request ends when every node of its grant is
 * gone from @s and its status.deletedNodes, written from an earlier snapshot, already names
 * them all (a snapshot without any node is believed about none); some gone are listed as
 * stale status. Requests not yet Granted, Rejected ones and those being deleted are not looked
 * at, except those eviction.autoRequest made, Pending or Granted (pol_auto_request_end).
 * Fills *@ret (arrays from @arena). NG_ENOMEM (then @ret is untouched).
 */
NG_NODISCARD ng_status pol_lifecycle_ends(const struct kube_snapshot *s, int64_t now_wall_ms,
					  struct ng_arena *arena, struct pol_lifecycle *ret);

/**
 * When request @nd of @s, one eviction.autoRequest made (label nodegate.io/auto-request "true",
 * name auto-*, one node), ends, and why (*@why): at once (@now_wall_ms) when its node is gone
 * (POL_END_NODE_DELETED) or schedulable after its annotation nodegate.io/node-cordoned says it
 * was seen cordoned (POL_END_NODE_UNCORDONED); else autoRequestIdleSeconds of @ngc (NULL: the
 * config is absent or invalid, then none) after it was last used (the later of its
 * creationTimestamp and its annotation nodegate.io/last-used: POL_END_AUTO_IDLE). 0: it does not
 * end (not such a request, none of these, or kept: its drain failed or its requestor did).
 */
int64_t pol_auto_request_end(const struct kube_snapshot *s, const struct kube_nd *nd,
			     const struct kube_ngc *ngc, int64_t now_wall_ms,
			     enum pol_end_reason *why);

/** How long a request eviction.autoRequest made may go unused under @ngc (NULL: the default). */
int64_t pol_auto_request_idle_ms(const struct kube_ngc *ngc);

#endif
