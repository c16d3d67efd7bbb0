/* Lease-based leader election (coordination.k8s.io/v1), with client-go's semantics
 * (tools/leaderelection, reference kubernetes-interfaces.md §3.7; docs/leader-election.md).
 *
 * One thread per struct leader acquires the Lease, then renews it every retry period. Every write
 * is a full-object PUT carrying the resourceVersion last read, so of two competing writers one
 * gets 409 and re-reads. Another holder's lease counts as valid until leaseDurationSeconds after
 * the local monotonic time this process last saw the record change: clock skew between hosts
 * does not matter. A leader that has not renewed within the renew deadline stops leading at
 * once; since the renew deadline is shorter than the lease duration, no other candidate can take
 * over before that. On leader_stop() a leader releases the lease (holderIdentity "" and
 * leaseDurationSeconds 1, client-go's ReleaseOnCancel) so a successor takes over at its next
 * retry instead of after the lease duration.
 *
 * Threads: leader_is_leader() and leader_term() are atomic reads, callable from any thread.
 * leader_start() and leader_stop() are called by the owner (typically main), once each. The
 * module's thread is the only user of its kube_client. The module logs (component "leader"):
 * info when leadership is gained, lost or released, warn on request errors (at most one per
 * retry round). */
#ifndef NG_CONTROLLER_LEADER_H
#define NG_CONTROLLER_LEADER_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_config;
struct leader;

/* client-go's defaults for "core clients" (reference §3.7). */
#define LEADER_DEFAULT_LEASE_DURATION_MS 15000
#define LEADER_DEFAULT_RENEW_DEADLINE_MS 10000
#define LEADER_DEFAULT_RETRY_PERIOD_MS 2000

/* Longest single request to the API server. A Lease is a few hundred bytes: a request that takes
 * longer than this is not going to help, and the thread must come back to check the renew
 * deadline and a stop request. Requests are also bounded by the retry period. */
#define LEADER_MAX_REQUEST_MS 5000

/* Longest identity, namespace or name accepted. Kubernetes object names are at most 253 bytes
 * (DNS-1123 subdomain); an identity is hostname (<= 253) plus "_" plus a random suffix. */
#define LEADER_MAX_NAME_BYTES 253
#define LEADER_MAX_IDENTITY_BYTES 512

struct leader_config {
	const struct kube_config *kube; /* borrowed; only read by leader_start() */
	const char *ns, *name;          /* the Lease, e.g. "nodegate" / "nodegate-gate"; borrowed
					   (copied) */
	const char *identity;           /* holderIdentity: hostname + "_" + random, unique per
					   process; borrowed (copied) */
	/* 0 selects the defaults above. Must satisfy, as client-go requires, lease_duration >
	 * renew_deadline > 1.2 x retry_period > 0; the Lease records the duration in whole seconds
	 * (rounded down, as client-go does), so lease_duration_ms must be at least 1000 and its
	 * whole seconds must still exceed the renew deadline. */
	int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
};

/**
 * Validates @cfg (borrowed; nothing in it is referenced after the call), creates the module's
 * own kube_client from cfg->kube and starts the election thread, which tries to acquire the
 * Lease at once and then every retry period (with client-go's jitter, up to 2.2x) until it
 * succeeds, and renews it every retry period while leading. Returns the handle (caller frees
 * with leader_stop()), or NULL with @reterr (optional) filled: NG_EINVAL for a missing or
 * out-of-range field (the message names it), NG_ENOMEM, NG_EIO when the thread cannot be
 * created. curl_global_init() must have been called. Signals are blocked in the new thread.
 */
struct leader *leader_start(const struct leader_config *cfg, struct ng_err *reterr);

/**
 * True while this process holds the Lease: from a successful acquire until leader_stop() or
 * until renewals have failed for the renew deadline. Atomic (acquire ordering); any thread.
 */
bool leader_is_leader(const struct leader *l);

/**
 * The number of times leadership has been gained since leader_start() (0 before the first
 * time). A worker that saves the term when it starts acting and later sees a different one (or
 * leader_is_leader() false) knows it lost leadership in between, even if it has it again now.
 * The term is incremented before leader_is_leader() turns true. Atomic; any thread.
 */
uint64_t leader_term(const struct leader *l);

/* The controllers that share one Lease (the gate and remediation), with room to spare. */
#define LEADER_MAX_WATCHERS 4

/**
 * Calls @fn(@ctx) on the election thread each time leader_is_leader() changes (gained, lost,
 * stopping), so a worker sleeps until then instead of polling. Watchers are told apart by @ctx:
 * a second call with the same @ctx replaces its @fn, and NULL @fn removes it, after which @fn is
 * not running and will not be called. @fn must be quick and must not call into @l (a
 * condition-variable signal). NG_ELIMIT when LEADER_MAX_WATCHERS others watch already. Any
 * thread.
 */
ng_status leader_watch(struct leader *l, void (*fn)(void *ctx), void *ctx);

/**
 * Stops the election: wakes the thread (a request in flight finishes first, bounded by
 * min(retry period, LEADER_MAX_REQUEST_MS)), and if it is leading, leader_is_leader() turns
 * false and the Lease is released (GET, then PUT with holderIdentity "" and
 * leaseDurationSeconds 1, retried on conflict, at most 3 attempts within the renew deadline).
 * Then joins the thread and frees @l and its client. Accepts NULL. Call it once, from the thread
 * that called leader_start(), after every other user of @l is done with it.
 */
void leader_stop(struct leader *l);

#endif
