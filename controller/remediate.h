/* The remediation controller (docs/remediation.md): for every NodeRemediation, while this
 * replica holds the gate's Lease, it creates a NodeDisruption from the remediation's template
 * for each node whose conditions have held long enough (policy/remediation.h decides which),
 * deletes the requests whose repair is done, and writes the remediation's status, finalizer and
 * Events. The gate and the drainer do the rest: a remediation never grants anything itself.
 *
 * It shares the gate's Lease rather than holding one of its own: it only ever writes requests
 * that the gate then decides, so running beside the gate costs no second election, and an
 * operator reads one leader for both. It runs on a kube/runtime thread of its own, woken by every
 * cache publish, by leadership changes and when a condition falls due.
 *
 * Ownership: remediate_start() returns the controller (freed by remediate_stop()); everything in
 * remediate_config is borrowed and must outlive it. Threads: start and stop from the owner
 * (main); the metrics function from any thread. */
#ifndef NG_CONTROLLER_REMEDIATE_H
#define NG_CONTROLLER_REMEDIATE_H

#include "common/status.h"

#include "kube/auth.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_config;
struct kube_store;
struct kube_watch;
struct leader;
struct ng_buf;

/* Whether @who (the author of a NodeRemediation or NodeDisruptionTemplate, as the author webhook
 * recorded it: user and groups) may `create` nodegate.io `nodedisruptions` (@subresource NULL)
 * or `nodedisruptions/<subresource>` ("privileged-operation"). serve answers with a
 * SubjectAccessReview (kube_auth_can(), cached). KUBE_AUTH_ALLOWED, KUBE_AUTH_FORBIDDEN (@err
 * says why) or KUBE_AUTH_ERROR when the API server could not be asked. Called on the
 * controller's thread. */
typedef enum kube_auth_result (*remediate_may_fn)(void *ctx, const struct kube_auth_subject *who,
						  const char *subresource, struct ng_err *err);

struct remediate_config {
	const struct kube_config *kube; /* borrowed */
	/* The authors' rights: a remediation creates a request only while both its author and its
	 * template's author may create it (docs/remediation.md). NULL: no request is created. */
	remediate_may_fn may;
	void *may_ctx;
	struct kube_store *store;       /* borrowed: the cache the watch keeps current */
	const struct kube_watch *watch; /* borrowed: nothing is done before it has synced */
	struct leader *leader;          /* borrowed: the gate's; NULL: always act */
	const char *identity;           /* reportingInstance of Events */
};

struct remediate;

/**
 * Starts the controller on a runtime thread with its own kube client. @cfg is copied. NULL with
 * @reterr: NG_ENOMEM, NG_EIO (no thread), NG_ELIMIT (the leader has no room for a watcher).
 */
struct remediate *remediate_start(const struct remediate_config *cfg, struct ng_err *reterr);

/**
 * Appends nodegate_remediation_actions_total{action,result}, and with @objects, per
 * NodeRemediation as of its last plan (a deleted one is gone from the next plan),
 * nodegate_remediation_unhealthy_nodes, nodegate_remediation_open_requests and
 * nodegate_remediation_storm: labelled with the object's name, so only for a listener whose
 * callers may see them. Any thread.
 */
NG_NODISCARD ng_status remediate_render_metrics(const struct remediate *cm, bool objects,
						struct ng_buf *out);

/** Stops and joins the thread, then frees @r. Accepts NULL. Main thread. */
void remediate_stop(struct remediate *m);

#endif
