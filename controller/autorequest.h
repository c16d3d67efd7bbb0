/* NodeGateConfig eviction.autoRequest (docs/eviction-webhook.md): when the eviction webhook denies
 * an eviction because the pod's node has no grant, nodegate asks for the disruption itself — a
 * Pending NodeDisruption of that node with retry, requestor = the evicting user — so a plain
 * `kubectl drain` or an autoscaler needs nothing else. The admission thread only enqueues (no
 * I/O on the admission path); a thread of its own creates the request. Every replica may do it:
 * the name is one per node (pol_auto_request_name), so duplicates are refused by the API server.
 *
 * Ownership: autoreq_start() returns the queue and its kube/runtime thread (freed by
 * autoreq_stop()); autoreq_config's pointers are borrowed and must outlive it; strings given to
 * autoreq_submit() are copied. Threads: start and stop from main; submit and metrics from any
 * thread (the queue has its own mutex, counters are atomics). */
#ifndef NG_CONTROLLER_AUTOREQUEST_H
#define NG_CONTROLLER_AUTOREQUEST_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_config;
struct kube_store;
struct ng_buf;

struct autoreq_config {
	const struct kube_config *kube; /* borrowed; must outlive it */
	struct kube_store *store;       /* borrowed: requests already there are not asked again */
	unsigned per_minute; /* requests created per minute at most, in bursts of as many; 0 = 60 */
};

struct autoreq;

/**
 * Starts the thread with its own kube client. NULL with @reterr (NG_ENOMEM, NG_EIO). Main thread.
 */
struct autoreq *autoreq_start(const struct autoreq_config *cfg, struct ng_err *reterr);

/**
 * Asks for a disruption of @node on behalf of @user. Never blocks on I/O: the request is queued
 * (dropped and counted when the queue is full; a node already queued is not queued twice) and
 * created at the configured rate, only while @node exists in the cache. @verified: the review
 * came from an authenticated API server, so @user is its word; otherwise the request names its
 * requestor "unverified" and keeps @user only in an annotation marked so. Any thread; @a may be
 * NULL (no-op).
 */
void autoreq_submit(struct autoreq *a, const char *node, const char *user, bool verified);

/**
 * An eviction of a pod on @node used the request autoRequest made for it (allowed because it
 * is Granted, or denied): records nodegate.io/last-used on it (at most once per request per
 * max(15 s, autoRequestIdleSeconds / 4)), and nodegate.io/node-cordoned when @node is cordoned,
 * so the gate ends it once its evictor is done (policy/lifecycle.h). Never blocks on I/O, as
 * autoreq_submit(), which records a use too when the request exists. Any thread; @a may be
 * NULL.
 */
void autoreq_used(struct autoreq *a, const char *node);

/** Appends nodegate_auto_requests_total{result}. Any thread. */
NG_NODISCARD ng_status autoreq_render_metrics(const struct autoreq *a, struct ng_buf *out);

/** Stops and joins the thread. Accepts NULL. Main thread. */
void autoreq_stop(struct autoreq *a);

#endif
