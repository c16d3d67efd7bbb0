/* The live cluster as the CLI sees it (plan, check, status, why): the kubeconfig flags every
 * such subcommand takes, and a list+watch of the cluster into a store of its own.
 *
 * Ownership: a struct cmd_live owns its config, store and watch; cmd_live_stop() frees them.
 * Threads: start and stop on the main thread; the watch runs on a thread of its own and
 * publishes into the store, which any thread may acquire.
 * Errors: ng_status with a sentence in @err naming the kubeconfig, context or limit. */
#ifndef NG_CMD_LIVE_H
#define NG_CMD_LIVE_H

#include "common/status.h"

#include <stdint.h>

struct kube_snapshot;
struct kube_store;

/* How long a subcommand waits for the first full list of the cluster. */
#define CMD_LIVE_SYNC_TIMEOUT_MS 60000

/* The flags naming the cluster, the same on every subcommand that talks to one. */
struct cmd_cluster {
	const char *kubeconfig; /* --kubeconfig FILE; NULL: $KUBECONFIG, else ~/.kube/config, else
				 * in-cluster */
	const char *context;    /* --context NAME; NULL: the kubeconfig's current-context */
};

/* The rows of struct cmd_opt (cmd/cmd.h) for @cl (a struct cmd_cluster *), for a subcommand's
 * flag table. */
#define CMD_CLUSTER_OPTS(cl)                                                                       \
	{"kubeconfig",                                                                             \
	 CMD_OPT_STR,                                                                              \
	 &(cl)->kubeconfig,                                                                        \
	 "FILE",                                                                                   \
	 "The kubeconfig naming the cluster; default $KUBECONFIG (a colon-separated list), else "  \
	 "~/.kube/config, else the pod's service account.",                                        \
	 0,                                                                                        \
	 0,                                                                                        \
	 NULL,                                                                                     \
	 NULL},                                                                                    \
	{                                                                                          \
		"context", CMD_OPT_STR, &(cl)->context, "NAME",                                    \
		    "The kubeconfig context to use instead of its current-context.", 0, 0, NULL,   \
		    NULL                                                                           \
	}

struct cmd_live;

/**
 * Lists and watches the cluster @cl names into a store of its own, and waits until every kind
 * has been listed once (at most CMD_LIVE_SYNC_TIMEOUT_MS). The watch keeps running and
 * publishing every change until cmd_live_stop(). The watch's progress lines are not logged.
 */
ng_status cmd_live_start(const struct cmd_cluster *cl, struct cmd_live **ret, struct ng_err *err);

/** The store @l publishes into; borrowed, valid until cmd_live_stop(). */
struct kube_store *cmd_live_store(struct cmd_live *l);

/** Stops the watch and frees @l. Accepts NULL. */
void cmd_live_stop(struct cmd_live *l);

/** The cluster @cl names as listed once, into *@ret (a reference the caller releases). */
ng_status cmd_live_load(const struct cmd_cluster *cl, struct kube_snapshot **ret,
			struct ng_err *err);

#endif
