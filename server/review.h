/* The AdmissionReview admission.k8s.io/v1 codec. The decoder is the fuzz target
 * (tests/fuzz/fuzz-admission-review.c): it never crashes on any input. */
#ifndef NG_SERVER_REVIEW_H
#define NG_SERVER_REVIEW_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;
struct ng_buf;
struct cJSON;

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
	const struct cJSON *object, *old_object; /* NULL when absent or null */
};

/**
 * Decodes @len bytes of an AdmissionReview. The JSON tree and every string live in @arena.
 * NG_EPARSE with a message naming the field (body not JSON, wrong apiVersion/kind, `request`
 * or `request.uid` missing, a field of the wrong type), NG_ELIMIT (too deep, strings too long),
 * NG_ENOMEM (arena cap). Writes @ret only on success. Any thread.
 */
NG_NODISCARD ng_status srv_review_decode(const char *buf, size_t len, struct ng_arena *arena,
					 struct srv_review *ret, struct ng_err *reterr);

struct srv_review_response {
	bool allowed;
	int32_t code;                /* for denials: becomes the HTTP status the client sees */
	const char *message;         /* for denials */
	int32_t retry_after_seconds; /* > 0: details.retryAfterSeconds */
	const char *warning;         /* NULL or "": none */
	const char *patch;           /* allowed, from a mutating webhook: a JSONPatch; NULL: none */
};

/** Kubernetes' StatusReason for an HTTP code ("TooManyRequests" for 429, ...). */
const char *srv_status_reason(int32_t code);

/**
 * Appends the response AdmissionReview for @uid to @out. NG_ELIMIT/NG_ENOMEM from the buffer.
 */
NG_NODISCARD ng_status srv_review_encode(const char *uid, const struct srv_review_response *resp,
					 struct ng_buf *out);

#endif
