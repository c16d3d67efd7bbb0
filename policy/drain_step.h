/* The drainer's sequence, pure (no I/O): from what a request asks, where its status says it is
 * and what the drainer has found out this step, the next thing to do (docs/drainer.md "Step by
 * step"). controller/drain.c gathers the facts, asks, does what the answer says, records the
 * outcome in the facts and asks again until the answer is to stop.
 *
 * Ownership: everything passed in is borrowed for the call; answers are values. Threads: any. */
#ifndef NG_POLICY_DRAIN_STEP_H
#define NG_POLICY_DRAIN_STEP_H

#include "kube/lookup.h"
#include "kube/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a request is, in order; its Ready condition's reason names it. */
enum pol_drain_phase {
	POL_PH_NONE,
	POL_PH_CORDONING,
	POL_PH_WAITING,
	POL_PH_DRAINING,
	POL_PH_DRAINED,
	POL_PH_OPERATING,
	POL_PH_REBOOTING,
	POL_PH_COMPLETED,
	POL_PH_FAILED,
	POL_PH_REQUESTOR_FAILED,
	POL_PH_QUARANTINED, /* reason DrainDeadlineExceeded: the nodes stay cordoned, labelled */
	POL_PH_COUNT,
};

/** The Ready reason of @p ("Cordoning", …; "" for POL_PH_NONE). */
const char *pol_drain_phase_reason(enum pol_drain_phase p);

/** The phase whose reason is @reason (NULL: none); POL_PH_NONE for any other. */
enum pol_drain_phase pol_drain_phase_of(const char *reason);

/** Whether @p ended the request without its work done (Failed, DrainDeadlineExceeded). */
bool pol_drain_phase_failed(enum pol_drain_phase p);

/** Whether Ready is True in @p: the pods are gone (Drained to Completed). */
bool pol_drain_phase_ready(enum pol_drain_phase p);

/* The node lifecycle conditions, as bits in the order of kube/records.h KUBE_LIFECYCLE_TYPES. */
enum pol_lifecycle_bit {
	POL_LC_PLANNED = 1u << 0,     /* MaintenancePlanned */
	POL_LC_DRAINING = 1u << 1,    /* DrainInProgress */
	POL_LC_DRAINED = 1u << 2,     /* Drained */
	POL_LC_MAINTENANCE = 1u << 3, /* MaintenanceInProgress */
};

/**
 * The lifecycle conditions that are True on a node held by a request in drain phase @ph
 * (docs/drainer.md "Node conditions"): granted and not started, MaintenancePlanned; cordoning,
 * waiting and draining, DrainInProgress; drained, Drained; operating and waiting for the reboot,
 * MaintenanceInProgress (and Drained when the request drained the node); stopped by a failure,
 * MaintenanceInProgress (the node stays held for a person); completed, Drained when it drained.
 * @managed: the request asks the drainer for a drain or an operation (else whoever executes
 * it does, and the node is only MaintenancePlanned); @drains: for a drain.
 */
unsigned pol_node_lifecycle(enum pol_drain_phase ph, bool managed, bool drains);

/* What the drainer has found out this step about one thing: not yet, no, yes. */
enum pol_drain_fact { POL_FACT_UNKNOWN, POL_FACT_NO, POL_FACT_YES };

/* What the sequence needs to know about one request. */
struct pol_drain_facts {
	bool gone;                    /* being deleted, or no longer Granted */
	bool has_finalizer;           /* nodegate.io/drain */
	bool held_by_others;          /* additionalRequestors keep its nodes */
	bool requestor_failed;        /* the RequestorFailed condition is True */
	bool spec_error;              /* the spec could not be read */
	bool wants_drain;             /* spec.drain */
	bool wants_operation;         /* spec.operation */
	bool job_template;            /* spec.operation.jobTemplate */
	bool wait_for_reboot;         /* spec.operation.waitForReboot */
	bool quarantine_due;          /* the drain deadline passed and onDeadline is Quarantine */
	enum pol_drain_phase was;     /* where the status says it is */
	enum pol_drain_fact held;     /* every node cordoned, tainted and noted */
	enum pol_drain_fact drained;  /* no pod left to move (the drain step said so) */
	enum pol_drain_fact operated; /* every operation Job completed */
	size_t nodes, rebooted;       /* the request's nodes; those back with a new boot ID */
};

/* The next thing to do. */
enum pol_drain_do {
	POL_DO_NOTHING,          /* until something changes */
	POL_DO_GIVE_BACK,        /* release its nodes, then remove the finalizer */
	POL_DO_FAIL_SPEC,        /* status Failed with the spec error */
	POL_DO_ADD_FINALIZER,    /* before any node is touched */
	POL_DO_HOLD_NODES,       /* cordon, taint and note every node */
	POL_DO_STILL_HOLDING,    /* some node not held yet: status stays at .phase */
	POL_DO_REQUESTOR_FAILED, /* status RequestorFailed; the nodes stay held */
	POL_DO_DRAIN,            /* wait for or move the pods (sets .drained) */
	POL_DO_MARK_DRAINED,     /* status Drained */
	POL_DO_OPERATE,          /* create or watch the operation Jobs (sets .operated) */
	POL_DO_WAIT_REBOOT,      /* status Rebooting, .rebooted of .nodes */
	POL_DO_COMPLETE,         /* status Completed */
	POL_DO_QUARANTINE, /* label the held nodes quarantined; status DrainDeadlineExceeded */
};

struct pol_drain_action {
	enum pol_drain_do what;
	enum pol_drain_phase phase; /* the status phase it sets (POL_PH_NONE: none) */
};

/** The next action for a request in @f. */
struct pol_drain_action pol_drain_next(const struct pol_drain_facts *f);

/** How many of @nodes (@n) came back: Ready, noted, with a boot ID other than the noted one. */
size_t pol_drain_rebooted(const struct kube_node *const *nodes, size_t n);

/**
 * Whether a wait begun at @start_ms with a timeout of @timeout_s (<= 0: none) is over at @now_ms:
 * waitForPods from entering WaitingForPods, an attempt's timeout from its start.
 */
bool pol_drain_timed_out(int64_t start_ms, int64_t timeout_s, int64_t now_ms);

/** Whether a failed attempt is still backing off at @now_ms (@until_ms; 0: it is not). */
bool pol_drain_backing_off(int64_t until_ms, int64_t now_ms);

/* What one node's operation Job calls for. */
enum pol_drain_job { POL_JOB_DONE, POL_JOB_FAILED, POL_JOB_CREATE, POL_JOB_WAIT };

/**
 * The Job in state @js: done, failed (it failed, or it is absent while the request has been
 * Operating, @was, for more than a minute: Ready, @has_ready, since @since_ms), to create, or
 * running.
 */
enum pol_drain_job pol_drain_job_next(enum kube_job_state js, enum pol_drain_phase was,
				      bool has_ready, int64_t since_ms, int64_t now_ms);

#endif
