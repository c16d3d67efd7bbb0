/* What a NodeRemediation should do now (docs/remediation.md), pure: from a snapshot and one
 * NodeRemediation to a plan (which nodes are unhealthy, which get a request, which requests are
 * done, and why each waiting node waits). The remediation controller executes plans; the dry
 * run (POST /v1/evaluate, `nodegate check`) explains them.
 *
 * Ownership: a plan's arrays come from the caller's arena; its ids and record pointers are the
 * snapshot's, valid while the snapshot is. Threads: any, with a snapshot reference held. */
#ifndef NG_POLICY_REMEDIATION_H
#define NG_POLICY_REMEDIATION_H

#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;

/* What happens to one node of a plan: a node listed is unhealthy now, or has a request of the
 * remediation, or both. */
enum pol_rem_action {
	POL_REM_CREATE,      /* due, nothing holds it back: create its request now */
	POL_REM_ACTIVE,      /* its request is open: the gate and the drainer have it */
	POL_REM_DONE,        /* its request is Completed (Drained without an operation) and the
			      * node healthy: record the repair, then delete the request */
	POL_REM_DELETE,      /* its request is no longer wanted (see reason): delete it */
	POL_REM_REJECTED,    /* its request was Rejected: left for a person to read and delete */
	POL_REM_WAIT_FOR,    /* unhealthy, but not for long enough yet (rule forSeconds) */
	POL_REM_COOLDOWN,    /* unhealthy again within cooldownSeconds of its repair: a loop */
	POL_REM_STORM,       /* held back: more pool nodes unhealthy than stormGuard allows */
	POL_REM_MAX,         /* held back: maxConcurrent requests are open */
	POL_REM_NO_TEMPLATE, /* held back: the template is missing or broken, or the remediation
			      * is invalid */
	POL_REM_DELETING,    /* held back: the remediation is being deleted */
	POL_REM_UNKNOWN,     /* a rule condition is Unknown: nothing starts until it is known */
};

/** "create", "active", ...: a static string for logs and dry runs. */
const char *pol_rem_action_str(enum pol_rem_action a);

struct pol_rem_node {
	uint32_t node; /* intern id */
	enum pol_rem_action action;
	bool unhealthy;                /* every rule condition holds now */
	bool unknown;                  /* a rule condition is Unknown: neither healthy nor not */
	int64_t due_ms;                /* wall time every condition has held its forSeconds */
	const struct kube_nd *request; /* the remediation's request for the node, or NULL */
	const char *phase;             /* the request's Ready reason (the drainer's step), or "" */
	char reason[200];              /* why, for status.waitingNodes and the dry run */
};

struct pol_rem_plan {
	const struct kube_ndt *tmpl; /* the template, NULL when missing */
	size_t matched;              /* pool nodes */
	size_t unhealthy;            /* pool nodes whose conditions hold now */
	int64_t max_concurrent;      /* resolved against the pool */
	int64_t max_unhealthy;       /* resolved; -1 without stormGuard */
	size_t open;       /* requests counted against maxConcurrent, creations included */
	bool storm;        /* unhealthy > max_unhealthy */
	size_t loops;      /* nodes in POL_REM_COOLDOWN */
	int64_t next_ms;   /* wall time the plan changes without any event; 0: never */
	char problem[320]; /* why nothing can start (invalid, template), or "" */
	size_t n;
	struct pol_rem_node *nodes; /* by node name's id order of discovery: requests first */
};

/**
 * Plans @r (a record of @s, ids of @s's pool) as of @now_wall_ms. NG_ENOMEM when @arena is full.
 * Rules: a node is unhealthy when each rule condition is present with its status; due when each
 * has held (since its lastTransitionTime; none: since ever) for its forSeconds; healthy when one
 * is absent or has another status than Unknown; else unknown, which neither starts a repair
 * nor ends one (its request stays). A request of the
 * remediation (label nodegate.io/remediation) is kept while open; deleted once Completed and
 * the node healthy (DONE), or before its grant when the node is healthy again, or when the
 * remediation is being deleted and it is not running; left alone when Rejected. A due node
 * without request gets one unless the remediation is being deleted or invalid, its template is
 * missing or broken, it was repaired less than cooldownSeconds ago, a storm holds, or
 * maxConcurrent open requests (Rejected ones excluded) are reached; earliest due first.
 */
NG_NODISCARD ng_status pol_remediation_plan(const struct kube_snapshot *s,
					    const struct kube_nrem *r, int64_t now_wall_ms,
					    struct ng_arena *arena, struct pol_rem_plan *ret);

/**
 * As pol_remediation_plan(), with @r's templateName and its maxConcurrent and maxUnhealthy
 * strings ids of @values (the pool @r was decoded into) while its other ids are @s's: a dry
 * run's remediation, whose template the cluster may not have.
 */
NG_NODISCARD ng_status pol_remediation_plan_in(const struct kube_snapshot *s,
					       const struct kube_nrem *r,
					       const struct ng_intern *values, int64_t now_wall_ms,
					       struct ng_arena *arena, struct pol_rem_plan *ret);

/**
 * The name of @rem's request for @node into @out (@cap >= 254): "<rem>-<node>", shortened as
 * pol_request_name() says. @rem is at most 63 characters (the decoder refuses longer).
 */
void pol_remediation_request_name(const char *rem, const char *node, char *out, size_t cap);

/**
 * The name of a request @prefix + @node (e.g. "auto-") into @out (@cap >= 254), at most 253
 * characters: when longer, @prefix and the first 235 - strlen(@prefix) characters of @node are
 * kept (never ending on '.' or '-') and "-" and a hash of @node appended. @prefix is at most 64
 * characters.
 */
void pol_request_name(const char *prefix, const char *node, char *out, size_t cap);

#endif
