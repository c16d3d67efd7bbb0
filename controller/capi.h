/* Cluster API gating (docs/integrations/cluster-api.md): keeps nodegate's pre-drain hook
 * (pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate) on every cluster.x-k8s.io Machine
 * whose node a budget covers, asks for a NodeDisruption of type cluster-api for each such
 * Machine being deleted, removes the hook once that request is Granted (so Cluster API drains
 * only within nodegate's budgets), and deletes the request when the Machine or its node is gone.
 * What to do is policy/capi.h's; this writes it, while this replica holds the gate's Lease.
 *
 * Ownership: capi_start() returns the controller and its kube/runtime thread (freed by
 * capi_stop()); capi_config's pointers are borrowed and must outlive it. Threads: start and stop
 * from main; metrics from any thread (counters are atomics). */
#ifndef NG_CONTROLLER_CAPI_H
#define NG_CONTROLLER_CAPI_H

#include "common/status.h"

#include <stdbool.h>

struct kube_config;
struct kube_store;
struct kube_watch;
struct leader;
struct ng_buf;

struct capi_config {
	const struct kube_config *kube; /* borrowed */
	struct kube_store *store;       /* borrowed: the cache the watch keeps current */
	const struct kube_watch *watch; /* borrowed: nothing is done before it has synced */
	struct leader *leader;          /* borrowed: the gate's; NULL: always act */
	const char *identity;           /* reportingInstance of Events */
};

struct capi;

/**
 * Starts the controller on a runtime thread with its own kube client. @cfg is copied. NULL with
 * @reterr (NG_ENOMEM, NG_EIO, NG_ELIMIT). Main thread.
 */
struct capi *capi_start(const struct capi_config *cfg, struct ng_err *reterr);

/** Appends nodegate_cluster_api_actions_total{action,result}. Any thread; @c may be NULL. */
NG_NODISCARD ng_status capi_render_metrics(const struct capi *c, struct ng_buf *out);

/** Stops and joins the thread, then frees @c. Accepts NULL. Main thread. */
void capi_stop(struct capi *c);

#endif
