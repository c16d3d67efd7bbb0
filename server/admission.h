/* The admission pipelines, transport-free: bytes in, AdmissionReview bytes out. The HTTP layer
 * (server.c) and the golden tests (tests/golden) both run exactly this code. */
#ifndef NG_SERVER_ADMISSION_H
#define NG_SERVER_ADMISSION_H

#include "common/status.h"
#include "policy/policy.h"
#include "server/review.h"

struct ng_arena;
struct ng_buf;
struct kube_auth;

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

/* The object webhooks (DESIGN.md §5), one pipeline: */
enum srv_object_webhook {
	SRV_OBJ_BUDGET,    /* POST /validate/budget: ADB, NDB, NodeGateConfig CREATE/UPDATE */
	SRV_OBJ_ND,        /* POST /validate/nodedisruption: CREATE/UPDATE */
	SRV_OBJ_ND_STATUS, /* POST /validate/nodedisruption-status: UPDATE of .../status */
	SRV_OBJ_ND_MUTATE, /* POST /mutate/nodedisruption: CREATE records the creator */
	/* POST /validate/authored: NodeDisruptionTemplate and NodeRemediation CREATE/UPDATE (and
	 * their status): the author annotations are the author webhook's; a template's spec as a
	 * request's would be checked, its privileged operation as the user may. */
	SRV_OBJ_AUTHORED,
	/* POST /mutate/author: the same kinds; records the author at create and at each change
	 * of spec, and keeps the recorded one otherwise. */
	SRV_OBJ_AUTHOR_MUTATE,
};

/* What a requestor needs, checked by SubjectAccessReview, to ask for a privileged operation
 * (struct kube_nd_operation.privileged) in a NodeDisruption or a NodeDisruptionTemplate. */
#define SRV_PRIVILEGED_VERB "create"
#define SRV_PRIVILEGED_GROUP "nodegate.io"
#define SRV_PRIVILEGED_RESOURCE "nodedisruptions"
#define SRV_PRIVILEGED_SUBRESOURCE "privileged-operation"

struct srv_object_config {
	/* Users who may change a NodeDisruption's decision (nodegate's service account). */
	const char *const *deciders;
	size_t ndeciders;
	/* Asks the API server whether a user may ask for a privileged operation (borrowed; NULL
	 * when nodegate runs without an API server: such operations are then refused). */
	struct kube_auth *authz;
};

/* What one object admission call decided. */
struct srv_object_admission {
	struct srv_review review; /* valid when the body decoded */
	bool allowed;
	int32_t code;      /* 422 (invalid) or 403 (forbidden) when denied */
	bool patched;      /* a mutating webhook answered with a patch */
	char message[480]; /* why, when denied */
	char warning[400]; /* "" when none */
};

/**
 * Decodes an AdmissionReview for webhook @wh and answers it (pol_check_budget, pol_check_nd,
 * pol_check_nd_status against @snap and @cfg; the mutating webhook's JSONPatch). Requests the
 * webhook does not judge (other kinds, operations, subresources) are allowed. Appends the
 * response to @out. Errors as srv_admit_eviction().
 */
NG_NODISCARD ng_status srv_admit_object(enum srv_object_webhook wh, const char *body, size_t len,
					struct ng_arena *arena, const struct kube_snapshot *snap,
					const struct srv_object_config *cfg, struct ng_buf *out,
					struct srv_object_admission *ret, struct ng_err *reterr);

/**
 * POST /v1/evaluate: a dry run of a NodeDisruption given as JSON (a whole object, or one with
 * only a spec) against @snap, as the gate would decide it now, health hooks aside. Appends the
 * answer to @out and its HTTP status to @ret_code: 200 with {state, reason, disruptedNodes,
 * disruptedDisruptionBudgets, healthHooks (the hooks a grant would still call)}, or 422/403 with
 * {message} for a request the NodeDisruption webhook would refuse; @ret_granted: it would be
 * Granted. A body of kind NodeRemediation is explained instead: 200 with {kind, matchedNodes,
 * unhealthyNodes, maxConcurrent, maxUnhealthy, storm, problem, nodes: [{node, action, reason,
 * request, decision: {state, reason, disruptedDisruptionBudgets}}]} (pol_explain_remediation()),
 * 422 with {message} when it does not validate; @ret_granted: some request it would create
 * would be Granted. NG_EPARSE/NG_ELIMIT with
 * @reterr when the body is not JSON (400), NG_ENOMEM.
 */
NG_NODISCARD ng_status srv_evaluate(const char *body, size_t len, struct ng_arena *arena,
				    const struct kube_snapshot *snap, int64_t now_wall_ms,
				    struct ng_buf *out, int *ret_code, bool *ret_granted,
				    struct ng_err *reterr);

/* Caps on one plan's work (struct pol_plan_input's max_rounds, max_decisions, max_mono_us);
 * 0: none. A plan that reaches one is answered 200, truncated (docs/planner.md). With
 * @clock_mono_us (NULL: the monotonic clock), the time cap reads that clock instead: the
 * server's makes a plan stop at once when the server stops. */
struct srv_plan_caps {
	size_t max_rounds, max_decisions;
	int64_t max_mono_us;
	int64_t (*clock_mono_us)(void *clock_ctx);
	void *clock_ctx;
};

/**
 * POST /v1/plan: the what-if planner (policy/plan.h) over @snap. The body is
 * {"nodes": [names] | "nodeSelector": LabelSelector, "drainSeconds": N (1..2592000, default
 * 300), "start": RFC 3339 (default @now_wall_ms), "type" (default "maintenance"), "requestor"
 * (default "nodegate-plan")}; other members are refused. Appends the answer to @out and its
 * HTTP status to @ret_code: 200 with the plan as pol_plan_json() writes it, 422 with {message}
 * for a body that does not say what to plan. NG_EPARSE/NG_ELIMIT with @reterr when the body is
 * not JSON (400), NG_ENOMEM. The plan's memory is its own (at most 256 MiB), freed on return.
 * @caps (borrowed for the call; NULL: none) bound the plan's work.
 */
NG_NODISCARD ng_status srv_plan(const char *body, size_t len, struct ng_arena *arena,
				const struct kube_snapshot *snap, int64_t now_wall_ms,
				const struct srv_plan_caps *caps, struct ng_buf *out, int *ret_code,
				struct ng_err *reterr);

#endif
