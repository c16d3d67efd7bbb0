/* The admission pipelines, transport-free: bytes in, AdmissionReview bytes out. The HTTP layer
 * (server.c) and the golden tests (tests/golden) both run exactly this code. */
#ifndef NG_SERVER_ADMISSION_H
#define NG_SERVER_ADMISSION_H

#include "common/status.h"
#include "policy/policy.h"
#include "server/review.h"

struct ng_arena;
struct ng_buf;

/* What one admission call decided, for the log line and metrics. */
struct srv_admission {
	struct srv_review review;     /* valid when the body decoded */
	struct pol_decision decision; /* valid when the body decoded */
	bool eviction;                /* the review was a pods/eviction CREATE */
};

/**
 * Decodes an eviction AdmissionReview, decides it against @snap, and appends the response
 * AdmissionReview to @out. A review that is not a pods/eviction CREATE is allowed with a warning
 * (the webhook is registered for evictions only; a misrouted call must not block the API).
 * Returns NG_EPARSE/NG_ELIMIT/NG_ENOMEM with @reterr when the body cannot be decoded (the caller
 * answers HTTP 400); otherwise NG_OK with @ret filled.
 */
NG_NODISCARD ng_status srv_admit_eviction(const char *body, size_t len, struct ng_arena *arena,
					  const struct kube_snapshot *snap,
					  const struct pol_eviction_config *cfg, struct ng_buf *out,
					  struct srv_admission *ret, struct ng_err *reterr);

/* What one budget admission call decided. */
struct srv_budget_admission {
	struct srv_review review; /* valid when the body decoded */
	bool allowed;
	int32_t code;      /* 422 (invalid) or 403 (a hook the policy forbids) when denied */
	char message[480]; /* why, when denied */
};

/**
 * POST /validate/budget: decodes an AdmissionReview for an ApplicationDisruptionBudget,
 * NodeDisruptionBudget or NodeGateConfig CREATE/UPDATE and denies what the gate could not use
 * (pol_check_budget(), against the policy in @snap); anything else is allowed. Appends the
 * response to @out. Errors as srv_admit_eviction().
 */
NG_NODISCARD ng_status srv_admit_budget(const char *body, size_t len, struct ng_arena *arena,
					const struct kube_snapshot *snap, struct ng_buf *out,
					struct srv_budget_admission *ret, struct ng_err *reterr);

#endif
