/* Reads the drainer makes outside the cache: objects it looks at only for the few nodes it is
 * draining (a Job it started, the VolumeAttachments of a node, a namespace's labels), where a
 * cluster-wide watch would cost every replica memory for nothing.
 *
 * Each call is one bounded, synchronous GET (KUBE_WRITE_TIMEOUT_MS) on the caller's client, so
 * on the thread that owns it. Errors: NG_EKUBE (the API server answered an unexpected status;
 * the message says which), NG_EIO/NG_ETIMEDOUT (no answer), NG_EPARSE (an answer that is not the
 * object), NG_ENOMEM. */
#ifndef NG_KUBE_LOOKUP_H
#define NG_KUBE_LOOKUP_H

#include "common/status.h"
#include "kube/kinds.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_client;
struct kube_label;
struct ng_arena;
struct ng_intern;

enum kube_job_state {
	KUBE_JOB_ABSENT,   /* 404 */
	KUBE_JOB_RUNNING,  /* neither condition below is True yet */
	KUBE_JOB_COMPLETE, /* condition Complete=True */
	KUBE_JOB_FAILED,   /* condition Failed=True; its reason in @reason */
};

/**
 * The state of Job @ns/@name. For KUBE_JOB_FAILED, @reason (@cap bytes) gets the condition's
 * reason and message ("BackoffLimitExceeded: Job has reached the specified backoff limit").
 */
NG_NODISCARD ng_status kube_get_job(struct kube_client *c, const char *ns, const char *name,
				    enum kube_job_state *ret, char *reason, size_t cap,
				    struct ng_err *reterr);

/**
 * How many storage.k8s.io/v1 VolumeAttachments name @node in spec.nodeName (pages of 500), but
 * for those whose spec.source.persistentVolumeName is one of @keep (@nkeep; may be NULL): the
 * volumes of pods the drain leaves on the node. An API server that does not serve the resource
 * (404) has none.
 */
NG_NODISCARD ng_status kube_count_volume_attachments(struct kube_client *c, const char *node,
						     const char *const *keep, size_t nkeep,
						     size_t *ret, struct ng_err *reterr);

/**
 * The newest resourceVersion among the objects of kind @r the API server holds now (a list, in
 * pages of 500), as kube_rv_number() reads it: 0 when there are none, or when one is not a
 * number (then versions cannot be compared). A cache whose kube_snapshot_rv() of @r has reached
 * it shows every object of @r as it is now, or later.
 */
NG_NODISCARD ng_status kube_newest_rv(struct kube_client *c, enum kube_resource r, uint64_t *ret,
				      struct ng_err *reterr);

/**
 * The labels of namespace @ns as ids of @pool, sorted by key id, in @arena: the keys @pool does
 * not hold are left out (no selector decoded into @pool can name them) and a value it does not
 * hold is NG_INTERN_NONE (it equals no selector value). A missing namespace has no labels.
 */
NG_NODISCARD ng_status kube_get_namespace_labels(struct kube_client *c, const char *ns,
						 const struct ng_intern *pool,
						 struct ng_arena *arena,
						 const struct kube_label **ret, uint16_t *ret_n,
						 struct ng_err *reterr);

/**
 * The values of @keys (@n) in the data of Secret @ns/@name, base64-decoded, into @ret (malloc'ed,
 * NUL-terminated; NULL for a key the Secret lacks; the caller frees them, wiping secrets).
 * *@ret_found is false for a missing Secret (every @ret NULL). @ret_rv (@rvcap) gets its
 * resourceVersion.
 */
NG_NODISCARD ng_status kube_get_secret_data(struct kube_client *c, const char *ns, const char *name,
					    const char *const *keys, size_t n, char **ret,
					    bool *ret_found, char *ret_rv, size_t rvcap,
					    struct ng_err *reterr);

/* One webhook of a webhook configuration, as kube_each_webhook() reports it. */
struct kube_webhook_ref {
	int kind;              /* KUBE_KIND_VWC or KUBE_KIND_MWC */
	const char *name;      /* the configuration's */
	const char *rv;        /* its resourceVersion */
	size_t index;          /* in webhooks[] */
	const char *ca_bundle; /* clientConfig.caBundle as written (base64); "" when absent */
};

/**
 * Calls @fn for every webhook of every Validating and Mutating WebhookConfiguration matching the
 * label selector @selector (kubectl -l syntax, sent as labelSelector). Stops early, returning
 * what @fn returned, when @fn returns other than NG_OK.
 */
NG_NODISCARD ng_status kube_each_webhook(struct kube_client *c, const char *selector,
					 ng_status (*fn)(const struct kube_webhook_ref *w,
							 void *ctx),
					 void *ctx, struct ng_err *reterr);

#endif
