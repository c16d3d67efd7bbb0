/* The AdmissionReview admission.k8s.io/v1 codec. The decoder is the fuzz target
 * (tests/fuzz/fuzz-admission-review.c): it never crashes on any input. nodegate's own objects in a
 * review are decoded by kube/ into typed records (kube/records.h); no JSON tree leaves review.c. */
#ifndef NG_SERVER_REVIEW_H
#define NG_SERVER_REVIEW_H

#include "common/status.h"
#include "kube/auth.h"
#include "kube/one.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;
struct ng_buf;
struct kube_one;

/* Every string borrows from the arena the review was decoded into; "" when absent. */
struct srv_review {
	const char *uid;
	const char *kind_group, *kind_version, *kind_kind;
	const char *resource_group, *resource_version, *resource;
	const char *sub_resource;
	const char *name, *ns;
	const char *operation; /* CREATE, UPDATE, DELETE or CONNECT */
	const char *username;
	bool dry_run;
	bool has_object, has_old_object; /* request.object / oldObject is a JSON object */
	/* request.object's metadata.namespace and metadata.name (an Eviction names its pod there
	 * when request.namespace/name are empty); "" when absent. */
	const char *object_ns, *object_name;
	bool object_has_annotations; /* request.object.metadata.annotations is an object */
	/* request.object and oldObject decoded by kube/ (kube_one_decode(), straight from the
	 * parsed tree) when request.kind's group is nodegate.io: the review owns them until
	 * srv_review_finish(). NULL when absent, of another group, or not decodable; then
	 * object_err / old_object_err says why (NG_ENOTFOUND: a kind nodegate does not read;
	 * NG_EPARSE/NG_ELIMIT naming the field; NG_ENOMEM), else its status is NG_OK. */
	struct kube_one *object, *old_object;
	struct ng_err object_err, old_object_err;
	/* request.userInfo as the subject of a SubjectAccessReview (user "" when absent; arrays
	 * in the arena). @user_over: more than KUBE_AUTH_MAX_GROUPS groups, extra keys or values
	 * of one key, or a value that is not a string: the user is not fully known, and must not
	 * be asked about with some of it left out. */
	struct kube_auth_subject user;
	bool user_over;
	/* CREATE: true. Otherwise whether request.object's spec differs from oldObject's as JSON
	 * values (the order of keys aside; absent equals absent). */
	bool spec_changed;
	/* The author annotations (KUBE_AUTHOR_ANNOTATION, KUBE_AUTHOR_GROUPS_ANNOTATION) of
	 * request.object and oldObject; NULL when absent or not a string. */
	const char *author, *author_groups, *old_author, *old_author_groups;
};

/**
 * Decodes @len bytes of an AdmissionReview (parsed once: the objects are decoded from the same
 * tree). The JSON tree and every string live in @arena; the decoded objects are the review's,
 * freed by srv_review_finish(). NG_EPARSE with a message naming the field (body not JSON, wrong
 * apiVersion/kind, `request` or `request.uid` missing, a field of the wrong type), NG_ELIMIT (too
 * deep, strings too long), NG_ENOMEM (arena cap); an object that does not decode is not an error
 * of the review (see srv_review.object_err). Writes @ret only on success. Any thread.
 */
NG_NODISCARD ng_status srv_review_decode(const char *buf, size_t len, struct ng_arena *arena,
					 struct srv_review *ret, struct ng_err *reterr);

/** Frees the decoded objects of @r and sets them NULL; the strings stay valid. Accepts NULL. */
void srv_review_finish(struct srv_review *r);

struct srv_review_response {
	bool allowed;
	int32_t code;                /* for denials: becomes the HTTP status the client sees */
	const char *message;         /* for denials */
	int32_t retry_after_seconds; /* > 0: details.retryAfterSeconds */
	/* NULL or "": none; else one warning a line, at most 4 sent, each cut to 256 bytes */
	const char *warning;
	const char *patch; /* allowed, from a mutating webhook: a JSONPatch; NULL: none */
};

/** Kubernetes' StatusReason for an HTTP code ("TooManyRequests" for 429, ...). */
const char *srv_status_reason(int32_t code);

/**
 * Appends the response AdmissionReview for @uid to @out. NG_ELIMIT/NG_ENOMEM from the buffer.
 */
NG_NODISCARD ng_status srv_review_encode(const char *uid, const struct srv_review_response *resp,
					 struct ng_buf *out);

#endif
