/* The drainer (docs/drainer.md): while this replica holds the drainer's lease, for every Granted
 * NodeDisruption that asks for it, it cordons and taints the request's nodes, waits for the pods
 * it was told to wait for, evicts the rest as `kubectl drain` would, waits until they are gone,
 * runs the operation Job and waits for a reboot; when the request is deleted it gives the nodes
 * back. Every step is written to the request's status and the nodes' annotation before the next
 * one, so a drainer killed at any point and started again goes on from what it reads.
 *
 * Ownership: drain_start() returns the drainer (freed by drain_stop()); everything in
 * drain_config is borrowed and must outlive it. Threads: start and stop from the owner (main);
 * drain_render_metrics() from any thread. */
#ifndef NG_CONTROLLER_DRAIN_H
#define NG_CONTROLLER_DRAIN_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_config;
struct kube_store;
struct kube_watch;
struct leader;
struct ng_buf;

/* The finalizer the drainer holds on a request whose nodes it touched. */
#define DRAIN_FINALIZER "nodegate.io/drain"
/* The node annotation that records what the drainer must give back (struct kube_drain_note). */
#define DRAIN_NOTE_ANNOTATION "nodegate.io/drain"
/* On a node a drain left past its deadline with onDeadline Quarantine: the request (its name, or
 * for a name longer than a label value, its first 54 characters, "-" and 8 hex digits of its
 * hash). The node stays cordoned while it is there; a person removes it to give the node back. */
#define DRAIN_QUARANTINE_LABEL "nodegate.io/quarantined"

struct drain_config {
	const struct kube_config *kube;        /* borrowed; must outlive the drainer */
	struct kube_store *store;              /* borrowed: the cache the watch keeps current */
	const struct kube_watch *watch;        /* borrowed; nothing is done before it has synced */
	struct leader *leader;                 /* borrowed; NULL: always act */
	const char *identity;                  /* reportingInstance of events */
	const char *self_namespace;            /* nodegate's namespace: its pods there are never */
	const char *self_selector;             /* evicted when they match this selector string */
	const char *operation_service_account; /* operation Jobs' ServiceAccount (NULL: default) */
	const char *operation_namespace;       /* where operation Jobs run (NULL: "default"); never
						* nodegate's own, whose Secrets they could mount */
};

struct drain;

/**
 * Starts the drainer on a runtime thread with its own kube client. @cfg is copied; what it
 * points to is borrowed. NULL with @reterr: NG_ENOMEM, NG_EPARSE (self_selector), NG_EIO.
 */
struct drain *drain_start(const struct drain_config *cfg, struct ng_err *reterr);

/**
 * Appends the drainer's series (nodegate_leader for @leader, nodegate_drain_*) to @out. @d NULL
 * appends nothing. Any thread.
 */
NG_NODISCARD ng_status drain_render_metrics(struct drain *d, const struct leader *leader,
					    struct ng_buf *out);

/** Stops the runtime (a step in progress ends after its current write) and frees @d. NULL ok. */
void drain_stop(struct drain *d);

#endif
