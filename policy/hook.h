/* Health hooks (DESIGN.md §3.3, §4 step 8): whether an ApplicationDisruptionBudget's hook may be
 * called under NodeGateConfig's healthHooks policy, which calls a decision needs, and how their
 * answers change it. The calls themselves are I/O and live above policy, in the gate
 * controller (controller/gate_hookcall.c). Pure; any thread. */
#ifndef NG_POLICY_HOOK_H
#define NG_POLICY_HOOK_H

#include "common/status.h"
#include "kube/kube.h"
#include "policy/disruption.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;

enum pol_hook_result {
	POL_HOOK_PENDING,   /* not run yet */
	POL_HOOK_OK,        /* a 2xx answer */
	POL_HOOK_FAILED,    /* an answer outside 2xx (a redirect included: none is followed) */
	POL_HOOK_TIMEOUT,   /* no whole answer within timeoutSeconds */
	POL_HOOK_ERROR,     /* no answer: DNS, connection or TLS failure */
	POL_HOOK_DENIED,    /* not called, or refused before connecting: policy or address */
	POL_HOOK_CANCELLED, /* not finished: another hook of the same decision failed first */
	POL_HOOK_LATER,     /* a multistep hook answered 425: ask again at Retry-After */
};

/* What a call asks: a health hook, or one step of a budget's multistep hooks (hookV2BasePath;
 * docs/health-hooks.md). A multistep step succeeds on exactly 200, as Criteo's do. */
enum pol_hook_phase {
	POL_HOOK_HEALTH,
	POL_HOOK_PREPARE,
	POL_HOOK_READY,
	POL_HOOK_TERMINATE,
};

/** "health", "prepare", "ready", "terminate": the metric label and the path's last segment. */
const char *pol_hook_phase_str(enum pol_hook_phase p);

/* After /prepare answered 200, /ready is asked this soon: at once, as Criteo's controller does
 * on the status write, but never in a loop should that write not land. */
#define POL_HOOK_NEXT_STEP_MS 100
/* A multistep hook that answered 425 without a usable Retry-After, or failed /ready, is asked
 * again after this long. */
#define POL_HOOK_AGAIN_MS 10000
/* Retry-After is honoured up to this long: a hook cannot park a request for days. */
#define POL_HOOK_MAX_RETRY_AFTER_S 3600

/** "pending", "ok", "failed", "timeout", "error", "denied", "cancelled", "later": the metric
 * label. */
const char *pol_hook_result_str(enum pol_hook_result r);

/** NodeGateConfig's healthHooks from @s, or the defaults of DESIGN.md §3.4 without one. */
void pol_hook_policy_from(const struct kube_snapshot *s, struct kube_hook_policy *ret);

/**
 * Whether @h may be called under @p (strings of @p in @pool). Checks that the hook is valid,
 * https (http only with allowHTTP), carries no credentials, that a service reference is allowed,
 * and that the URL's host matches one of allowedHosts (case-insensitive globs in which '*' and
 * '?' stay inside one DNS label: "*.svc" matches "a.svc", not "kubernetes.default.svc"; a
 * service reference's host is <name>.<namespace>.svc). The address is checked where the call
 * connects (pol_hook_addr_allowed()). Returns NG_OK when it may; NG_EFORBIDDEN when the policy
 * forbids it ("hook not allowed: ..."); NG_EPARSE when the hook itself is invalid ("hook is
 * invalid: ..."); NG_ENOMEM. Why goes to @reterr (may be NULL). Pure; any thread.
 */
NG_NODISCARD ng_status pol_hook_allowed(const struct kube_hook *h, const struct kube_hook_policy *p,
					const struct ng_intern *pool, struct ng_err *reterr);

/**
 * @addr (4 or 16 bytes of @family 4 or 6) as it is checked, into @ret (16 bytes, zero-padded):
 * an IPv4 address embedded in IPv6 (::ffff:a.b.c.d mapped, ::a.b.c.d compatible other than ::
 * and ::1, 64:ff9b::a.b.c.d NAT64) becomes that IPv4 address. Returns the family (4 or 6).
 */
int pol_hook_addr_normalize(int family, const uint8_t *addr, uint8_t ret[16]);

/**
 * Whether a hook may connect to @addr (4 or 16 bytes of @family 4 or 6; embedded IPv4 is checked
 * as IPv4, pol_hook_addr_normalize()). With allowedCIDRs in @p, @addr must lie in one of them.
 * Whatever the policy, an address in a refused range is refused unless an allowedCIDRs entry
 * that holds it lies inside that range (127.0.0.0/8 opens loopback; 0.0.0.0/0 or 10.0.0.0/8 open
 * nothing refused). Refused: loopback (127.0.0.0/8, ::1), unspecified (0.0.0.0/8, ::),
 * link-local (169.254.0.0/16, fe80::/10), multicast (224.0.0.0/4, ff00::/8), 255.255.255.255,
 * the cloud metadata addresses 100.100.100.200 and fd00:ec2::254, and @deny (@ndeny normalized
 * CIDRs from the caller: the API server's and nodegate's own addresses). Pure; any thread.
 */
bool pol_hook_addr_allowed(const struct kube_hook_policy *p, const struct kube_cidr *deny,
			   size_t ndeny, int family, const uint8_t *addr);

/* One hook of one decision (or of one request's end: /terminate). */
struct pol_hook_call {
	const struct kube_budget_common *budget; /* whose hook */
	const struct kube_hook *hook;            /* the hook: its URL, CA, timeout, token */
	enum kube_resource kind;                 /* KUBE_RES_ADBS or KUBE_RES_NDBS */
	enum pol_hook_phase phase;
	size_t verdict; /* index of the budget's verdict in the decision */
	/* Set by the caller before the call: the URL (the hook's, or its base with the step's
	 * path), the body when it is the call's own (else the decision's), the bearer token
	 * (NULL: none). Memory of the caller's, outliving the call. */
	const char *url;
	const char *body;
	size_t len;
	const char *token;
	int64_t retry_after_s; /* a 425's Retry-After in seconds; -1 without one */
	enum pol_hook_result result;
	long code;           /* HTTP status; 0 without an answer */
	int64_t duration_ms; /* from the start of the call to its end */
	int64_t bytes;       /* of the answer's body received (counted, never kept) */
	bool truncated;      /* the answer was longer than maxResponseBytes: read stopped */
	/* What happened, in fixed words (docs/health-hooks.md): "HTTP status 503", "timeout",
	 * "address not allowed", ...; or why the policy forbids the hook. Never the answer's bytes
	 * nor a library's error text. */
	char message[200];
};

/** Whether @nd's status says budget @kind @ns/@name accepted /prepare for it (@nd may be
 * NULL: no). */
bool pol_hook_prepared(const struct kube_snapshot *s, const struct kube_nd *nd,
		       enum kube_resource kind, uint32_t ns, uint32_t name);

/** The budget of verdict @v of a decision on @s when it has multistep hooks (hookV2BasePath),
 * else NULL. */
const struct kube_budget_common *pol_hook2_budget(const struct kube_snapshot *s,
						  const struct pol_budget_verdict *v);

/** Whether decision @d has a budget preparing for its request (a verdict's preparing). */
bool pol_decision_preparing(const struct pol_gate_decision *d);

/**
 * Holds in @l the share of every Pending request of @s that a budget prepares for (its status
 * says so): the application gets ready for these nodes, so no other request may take their
 * place, and no more requests prepare than the budgets allow. The gate's rounds and `status`/
 * `why` both start from it. NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_hooks_hold_preparing(const struct kube_snapshot *s,
						struct pol_ledger *l);

/** Whether @nd's status says some budget accepted /prepare for it (it holds its share while
 * Pending, and owes /terminate calls when it ends). */
bool pol_hooks_preparing(const struct kube_nd *nd);

/**
 * The hooks step 8 calls for decision @d (all its capacity checks passed), from @arena: one per
 * impacted ApplicationDisruptionBudget with a healthHook (POL_HOOK_HEALTH), in verdict order,
 * then one per impacted budget of either kind with hookV2BasePath: POL_HOOK_READY when @nd's
 * status says it accepted /prepare, else POL_HOOK_PREPARE (asked only once every health hook
 * answered healthy). Hooks the policy forbids, and invalid ones, come back POL_HOOK_DENIED with
 * the reason in message; the rest POL_HOOK_PENDING. NG_ENOMEM when @arena is full.
 */
NG_NODISCARD ng_status pol_hooks_prepare(const struct kube_snapshot *s, const struct kube_nd *nd,
					 const struct pol_gate_decision *d,
					 const struct kube_hook_policy *p, struct ng_arena *arena,
					 struct pol_hook_call **ret_calls, size_t *ret_n);

/**
 * Folds the hooks' results into @d: each failed health hook, and each multistep hook that
 * refused (424) or failed, fails its budget's verdict with a reason naming the hook and saying
 * what happened (its message); any such failure makes @d Pending when @nd retries (and is
 * before its deadline, which the decision already checked), else Rejected. Otherwise a budget
 * that accepted /prepare (now preparing: its verdict's preparing is set), answered 425, or is
 * not ready yet keeps @d Pending, retry or not, to be decided again at @d->wake_wall_ms (the
 * earliest Retry-After, or soon). @d stays a grant only when every /ready answered 200. True
 * when @d is no longer a grant. Until every hook is decided (none PENDING), @d is left as it
 * is and false returned. @now_wall_ms dates the waits.
 */
bool pol_hooks_apply(const struct kube_snapshot *s, const struct kube_nd *nd,
		     const struct pol_hook_call *calls, size_t n, struct pol_gate_decision *d,
		     int64_t now_wall_ms);

/**
 * The body of multistep hook calls about request @nd and @nodes (@n intern ids: the request's
 * nodes in the budget's scope), as Criteo's controller sends it: {uid, name, type, nodes,
 * createdBy, creationDate, startDate, deadlineDate, duration}. createdBy is the request's
 * nodegate.io/created-by annotation, else its requestor; absent times are Go's zero time;
 * deadlineDate is spec.retry.deadline, duration spec.duration in seconds (0 absent). Into @b.
 */
/**
 * The nodes of @nodes (@n intern ids, sorted by id) in the scope of budget @index of @kind
 * (KUBE_RES_NDBS or KUBE_RES_ADBS) as @ledger computes it, into @arena: *@ret, *@ret_n.
 * NG_ENOMEM.
 */
NG_NODISCARD ng_status pol_budget_nodes_in(struct pol_ledger *ledger, enum kube_resource kind,
					   size_t index, const uint32_t *nodes, size_t n,
					   struct ng_arena *arena, uint32_t **ret, size_t *ret_n);

NG_NODISCARD ng_status pol_hook2_body(const struct kube_snapshot *s, const struct kube_nd *nd,
				      const uint32_t *nodes, size_t n, struct ng_buf *b);

#endif
