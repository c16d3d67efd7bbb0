/* Coordination with medik8s (node-healthcheck-operator, node-maintenance-operator,
 * self-node-remediation) through their node Leases (docs/integrations/medik8s.md): a Lease
 * "node-<node name>" in namespace medik8s-leases says who holds a node; it is held while
 * renewTime + leaseDurationSeconds is in the future, as medik8s's shared lease manager
 * (medik8s/common pkg/lease) treats it. Pure: no I/O.
 *
 * Ownership: every pointer argument is borrowed for the call; records and strings returned
 * point into the snapshot and stay valid while it does. Threads: any. */
#ifndef NG_POLICY_MEDIK8S_H
#define NG_POLICY_MEDIK8S_H

#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The holderIdentity nodegate writes (medik8s's own holders are "node-maintenance",
 * "NodeHealthCheck-<name>", ...). */
#define POL_MEDIK8S_HOLDER "nodegate"
/* leaseDurationSeconds of nodegate's Leases: node-maintenance-operator's, the medik8s holder
 * whose hold (a node in maintenance for as long as it takes) is nodegate's. */
#define POL_MEDIK8S_LEASE_S 3600
/* Renewed once less than this is left, i.e. every 10 minutes: a leader change (seconds) or an
 * API server outage of up to 50 minutes never lets the Lease lapse while nodegate holds the
 * node. */
#define POL_MEDIK8S_RENEW_LEFT_S 3000

/** The cached Lease of node @node (its name) in medik8s-leases; NULL when there is none. */
const struct kube_lease *pol_medik8s_lease_of(const struct kube_snapshot *s, const char *node);

/**
 * Whether @l is held at @now_wall_ms: it has a holder, a renewTime and a leaseDurationSeconds,
 * and renewTime + leaseDurationSeconds is after @now_wall_ms (a renewTime in the future counts
 * as held: clock skew never lets two actors disrupt one node). Writes the expiry into
 * *@ret_until_ms (may be NULL) when held.
 */
bool pol_medik8s_lease_held(const struct kube_lease *l, int64_t now_wall_ms, int64_t *ret_until_ms);

/** Whether @l's holder is nodegate (POL_MEDIK8S_HOLDER). */
bool pol_medik8s_lease_ours(const struct kube_snapshot *s, const struct kube_lease *l);

/**
 * Whether node @node (intern id) of @s is held by another medik8s holder at @now_wall_ms, with
 * NodeGateConfig medik8sLeases on (@enabled): its Lease is held and its holder is not nodegate.
 * Then writes a sentence naming the node, the Lease, the holder and the expiry into @why (@cap
 * bytes) and the expiry into *@ret_until_ms.
 */
bool pol_medik8s_node_blocked(const struct kube_snapshot *s, bool enabled, uint32_t node,
			      int64_t now_wall_ms, char *why, size_t cap, int64_t *ret_until_ms);

/* What nodegate does with one node's Lease now. */
enum pol_lease_action {
	POL_LEASE_NONE,      /* nothing now */
	POL_LEASE_CREATE,    /* absent, and nodegate holds the node: create it */
	POL_LEASE_RENEW,     /* ours, less than POL_MEDIK8S_RENEW_LEFT_S left: renew */
	POL_LEASE_TAKE_OVER, /* another holder's, expired: take it over (acquireTime now) */
	POL_LEASE_WAIT,      /* another holder's and held: nodegate cannot hold it until then */
	POL_LEASE_RELEASE,   /* ours, and nodegate no longer holds the node: delete it */
};

/** "none", "create", "renew", "take-over", "wait", "release": a static string. */
const char *pol_lease_action_str(enum pol_lease_action a);

/**
 * What to do with node lease @l (NULL: none exists) at @now_wall_ms when nodegate holds the
 * node (@hold: a Granted request covers it and medik8sLeases is on) or not. Sets *@ret_next_ms
 * to when the answer changes by the clock alone (a renewal falls due, another holder's Lease
 * expires), 0 when it does not.
 */
enum pol_lease_action pol_medik8s_lease_action(const struct kube_snapshot *s,
					       const struct kube_lease *l, bool hold,
					       int64_t now_wall_ms, int64_t *ret_next_ms);

#endif
