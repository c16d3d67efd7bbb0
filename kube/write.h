/* The API-write toolkit: every write a controller makes to the API server, built and classified
 * in one place, so no controller concatenates JSON or reads HTTP codes itself (STYLE.md B15).
 *
 * - Objects are named by a struct kube_ref (kind, namespace, name); the toolkit knows each
 *   kind's path.
 * - Conditional writes carry the resourceVersion they were decided on: a merge patch puts it
 *   in metadata.resourceVersion, a JSON patch starts with a "test" of it. Another writer's
 *   change in between makes the API server answer 409, which comes back as KUBE_WRITE_CONFLICT
 *   ("read again and decide again"); a 404 is KUBE_WRITE_GONE ("forget it").
 * - Bodies are written with the JSON writer of common/jw.h into buffers the toolkit owns.
 *
 * Threads: each call uses the caller's kube_client, so the thread that owns that client. All
 * pointers passed in are borrowed for the call only. Nothing here logs: the result says what
 * happened and kube_write_log() writes the one line a failure deserves. */
#ifndef NG_KUBE_WRITE_H
#define NG_KUBE_WRITE_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_client;
struct ng_buf;
struct ng_jw;

/* The kinds nodegate writes. */
enum kube_kind {
	KUBE_KIND_NONE, /* not written: the write target of a cached kind nodegate only reads */
	KUBE_KIND_NODE,
	KUBE_KIND_POD,
	KUBE_KIND_EVENT,
	KUBE_KIND_LEASE,
	KUBE_KIND_ND,   /* NodeDisruption */
	KUBE_KIND_NDB,  /* NodeDisruptionBudget */
	KUBE_KIND_ADB,  /* ApplicationDisruptionBudget */
	KUBE_KIND_NGC,  /* NodeGateConfig */
	KUBE_KIND_NREM, /* NodeRemediation */
	KUBE_KIND_JOB,  /* batch/v1 Job: the drainer's operation */
	KUBE_KIND_SECRET,
	KUBE_KIND_VWC,     /* admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration */
	KUBE_KIND_MWC,     /* admissionregistration.k8s.io/v1 MutatingWebhookConfiguration */
	KUBE_KIND_MACHINE, /* cluster.x-k8s.io Machine: its pre-drain hook annotation */
	KUBE_KIND_COUNT,
};

/** The kind's name as objects spell it ("NodeDisruption"). */
const char *kube_kind_name(enum kube_kind k);

/* An object, or with name NULL its collection. ns is NULL for cluster-scoped kinds. */
struct kube_ref {
	enum kube_kind kind;
	const char *ns, *name;
};

enum kube_write_outcome {
	KUBE_WRITE_OK,       /* 2xx */
	KUBE_WRITE_CONFLICT, /* 409: changed meanwhile (or, for a create, already exists) */
	KUBE_WRITE_GONE,     /* 404 */
	KUBE_WRITE_REFUSED,  /* another 4xx: the API server or a webhook said no */
	KUBE_WRITE_FAILED,   /* no answer, 5xx, or the body could not be built */
};

struct kube_write_result {
	enum kube_write_outcome outcome;
	long http;         /* 0 without an answer */
	struct ng_err err; /* why, when not OK: curl's text or the start of the answer */
};

/** "ok", "conflict", "gone", "refused", "failed": for logs and metric labels. */
const char *kube_write_outcome_str(enum kube_write_outcome o);

/* One bound for every write: the API server answers in milliseconds; 10 s bounds a stuck one. */
#define KUBE_WRITE_TIMEOUT_MS 10000

/**
 * The path of @ref (with "/" @sub appended when not NULL, e.g. "status") into @out (@cap
 * bytes). NG_ELIMIT when it does not fit, NG_EINVAL for a namespaced kind without namespace.
 */
NG_NODISCARD ng_status kube_ref_path(const struct kube_ref *ref, const char *sub, char *out,
				     size_t cap);

/**
 * A body writer: called with a JSON writer positioned where the caller's part goes (inside an
 * object for status and object bodies). @ctx is the caller's.
 */
typedef void (*kube_body_fn)(struct ng_jw *w, void *ctx);

/**
 * Merge patch of @ref's status subresource: {"metadata":{"resourceVersion":@rv},"status":{…}}
 * with @fn writing the members of status. @rv NULL: unconditional (budget status, which only
 * nodegate writes). Returns the outcome in @ret (never fails otherwise).
 */
void kube_patch_status(struct kube_client *c, const struct kube_ref *ref, const char *rv,
		       kube_body_fn fn, void *ctx, struct kube_write_result *ret);

/**
 * Strategic merge patch of a core kind's status subresource, unconditional: {"status":{…}} with
 * @fn writing the members. Lists merge by their key (a Node's conditions by type), so a
 * condition is set without a version and without touching the kubelet's own.
 */
void kube_patch_status_strategic(struct kube_client *c, const struct kube_ref *ref, kube_body_fn fn,
				 void *ctx, struct kube_write_result *ret);

/**
 * As kube_patch_status(), with the status already written: @status is @len bytes of one JSON
 * object (borrowed), for a caller that keeps the bytes (to hash them, to skip an unchanged
 * write) and must not build them twice.
 */
void kube_patch_status_json(struct kube_client *c, const struct kube_ref *ref, const char *rv,
			    const char *status, size_t len, struct kube_write_result *ret);

/* Room for a resourceVersion an answer gives back (kube_set_finalizer()'s @ret_rv). */
#define KUBE_WRITE_RV_BYTES 64

/**
 * Sets metadata.finalizers to @current (@n strings) with @fin added (@present) or removed, as a
 * merge patch carrying @rv: another writer's change in between is a 409. No request when the
 * list would not change (outcome OK, http 0). With @ret_rv (KUBE_WRITE_RV_BYTES bytes, may be
 * NULL): the object's new metadata.resourceVersion as the answer gives it, so the caller's next
 * conditional write of the same step can carry it instead of waiting for its cache; "" when the
 * write was not OK, sent nothing, or the answer has none (or a longer one).
 */
void kube_set_finalizer(struct kube_client *c, const struct kube_ref *ref, const char *rv,
			const char *const *current, size_t n, const char *fin, bool present,
			char *ret_rv, struct kube_write_result *ret);

/* A core/v1 Event (DESIGN.md §9). */
struct kube_event {
	struct kube_ref about; /* the involved object */
	const char *reason;    /* CamelCase: "Granted", "HookFailed" */
	const char *type;      /* "Normal" or "Warning" */
	const char *message;
	const char *instance; /* reportingInstance: this replica */
	int64_t now_wall_ms;
	const char
	    *uid; /* involvedObject.uid (NULL or "": none): `kubectl describe` looks for it */
};

/**
 * Creates @ev in the involved object's namespace ("default" for cluster-scoped objects), named
 * after the object with a unique suffix.
 */
void kube_create_event(struct kube_client *c, const struct kube_event *ev,
		       struct kube_write_result *ret);

/**
 * POST of a new object into @collection (name NULL): @fn writes the members of the object
 * (apiVersion, kind, metadata, spec). An existing name comes back as KUBE_WRITE_CONFLICT.
 */
void kube_create(struct kube_client *c, const struct kube_ref *collection, kube_body_fn fn,
		 void *ctx, struct kube_write_result *ret);

/**
 * A full-object write whose answer the caller reads (the lease: a PUT carrying the
 * resourceVersion it read, a POST to create): @method "PUT" to @ref or "POST" to its collection
 * (name NULL), @body (@len bytes of JSON), within @timeout_ms. The answer's body replaces @resp
 * (capped at its cap) when there was one.
 */
void kube_send_object(struct kube_client *c, const char *method, const struct kube_ref *ref,
		      const char *body, size_t len, int64_t timeout_ms, struct ng_buf *resp,
		      struct kube_write_result *ret);

/**
 * Asks the Eviction API to evict pod @ns/@name (POST pods/@name/eviction, policy/v1). A 429 (a
 * PodDisruptionBudget or a webhook said "not now") is KUBE_WRITE_REFUSED with http 429 and
 * *@ret_retry_after_s the answer's details.retryAfterSeconds (0 when it names none). A refusal
 * (4xx) carries the answer's message and its first cause's in @ret->err, not the raw answer.
 */
void kube_evict_pod(struct kube_client *c, const char *ns, const char *name,
		    int64_t *ret_retry_after_s, struct kube_write_result *ret);

/**
 * DELETE of @ref with DeleteOptions gracePeriodSeconds @grace_s (< 0: the object's own) and, for
 * a Job, propagationPolicy Background so its pods go too. Already gone is KUBE_WRITE_GONE.
 */
void kube_delete(struct kube_client *c, const struct kube_ref *ref, int64_t grace_s,
		 struct kube_write_result *ret);

/**
 * DELETE of @ref only if it is still at resourceVersion @rv (DeleteOptions
 * preconditions.resourceVersion): a change since it was read is KUBE_WRITE_CONFLICT (409).
 * Already gone is KUBE_WRITE_GONE.
 */
void kube_delete_rv(struct kube_client *c, const struct kube_ref *ref, const char *rv,
		    struct kube_write_result *ret);

/**
 * DELETE of @ref only if it is still the object whose metadata.uid is @uid (DeleteOptions
 * preconditions.uid): an object deleted and created again under the same name is another
 * object, and its delete is KUBE_WRITE_CONFLICT (409). Already gone is KUBE_WRITE_GONE.
 */
void kube_delete_uid(struct kube_client *c, const struct kube_ref *ref, const char *uid,
		     struct kube_write_result *ret);

/* The Job a drain's operation runs on one node (NodeDisruption spec.operation.jobTemplate). */
struct kube_job_spec {
	const char *ns, *name, *node; /* where it is created, its name, the node it is pinned to */
	const char *const *label_keys, *const *label_values; /* added to the Job and its pods */
	size_t nlabels;
	const struct kube_taint_spec *tolerate; /* taints its pods tolerate (besides the cordon) */
	size_t ntolerate;
	const char
	    *service_account; /* its pods' serviceAccountName (replacing any in the template) */
};

/* spec.ttlSecondsAfterFinished of an operation Job whose template sets none. */
#define KUBE_JOB_TTL_S 86400

/**
 * Creates the Job of @j from @template_json (a batch/v1 JobTemplateSpec as compact JSON): its
 * metadata and spec, with name and namespace set, the labels added, spec.template.spec.nodeName
 * set to the node and tolerations for node.kubernetes.io/unschedulable and @j->tolerate
 * appended. A template that is not an object with a spec is KUBE_WRITE_FAILED (NG_EPARSE);
 * an existing Job of that name is KUBE_WRITE_CONFLICT.
 */
void kube_create_job(struct kube_client *c, const char *template_json,
		     const struct kube_job_spec *j, struct kube_write_result *ret);

/* A JSON patch (RFC 6902) under construction: labels, annotations, taints, unschedulable.
 * Operations are appended in order. The precondition is a first "replace" of
 * /metadata/resourceVersion with the version the change was decided on: the API server treats a
 * resourceVersion in the patched object as a precondition and answers 409 when it is stale.
 * Keys are escaped as JSON pointers (~0, ~1) here. */
struct kube_json_patch;

/**
 * Starts a patch conditional on @rv (NULL: unconditional). NULL on OOM. Free with
 * kube_json_patch_destroy(), which accepts NULL.
 */
struct kube_json_patch *kube_json_patch_create(const char *rv);
void kube_json_patch_destroy(struct kube_json_patch *p);
/**
 * metadata.labels[@key] = @value, or removed when @value is NULL (the key must exist then).
 * @map_exists: whether the object has a labels map now (JSON patch cannot add into a missing
 * one, so the map is added whole).
 */
void kube_json_patch_label(struct kube_json_patch *p, const char *key, const char *value,
			   bool map_exists);
/** metadata.annotations[@key], as kube_json_patch_label(). */
void kube_json_patch_annotation(struct kube_json_patch *p, const char *key, const char *value,
				bool map_exists);
/** The integer at JSON pointer @path (already escaped; "add" sets or replaces it). */
void kube_json_patch_i64(struct kube_json_patch *p, const char *path, int64_t value);
/** A Node's spec.unschedulable. */
void kube_json_patch_unschedulable(struct kube_json_patch *p, bool on);
/** The string at JSON pointer @path (already escaped; "add" sets or replaces it). */
void kube_json_patch_string(struct kube_json_patch *p, const char *path, const char *value);

struct kube_taint_spec {
	const char *key, *value, *effect; /* value may be NULL */
};
/** A Node's spec.taints replaced by @taints (@n; 0 writes an empty list). */
void kube_json_patch_taints(struct kube_json_patch *p, const struct kube_taint_spec *taints,
			    size_t n);
/** The patch so far as JSON (borrowed until the next change). NULL after an error. */
const char *kube_json_patch_body(const struct kube_json_patch *p, size_t *ret_len);

/** Sends @p to @ref (application/json-patch+json). A stale precondition is CONFLICT. */
void kube_apply_json_patch(struct kube_client *c, const struct kube_ref *ref,
			   const struct kube_json_patch *p, struct kube_write_result *ret);

/**
 * One warn line for a failed write (component @component, message @what, the object, the
 * outcome, http, err). Nothing for OK. Any thread.
 */
void kube_write_log(const char *component, const char *what, const struct kube_ref *ref,
		    const struct kube_write_result *r);

/**
 * @len bytes of an object as the API server returned it, with status.@field replaced by the
 * strings @values (@n): the body health hooks get (the request with status.disruptedNodes
 * filled). On success *@ret is malloc'ed JSON (caller frees with free()) of *@ret_len bytes.
 * NG_EPARSE when @json is not an object, NG_ENOMEM.
 */
NG_NODISCARD ng_status kube_object_with_status_list(const char *json, size_t len, const char *field,
						    const char *const *values, size_t n, char **ret,
						    size_t *ret_len, struct ng_err *reterr);

#endif
