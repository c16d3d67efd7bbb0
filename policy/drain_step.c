/* The drainer's sequence (policy/drain_step.h, docs/drainer.md "Step by step"). */
#include "policy/drain_step.h"

#include <string.h>

static const char *const reasons[POL_PH_COUNT] = {
    "",
    "Cordoning",
    "WaitingForPods",
    "Draining",
    "Drained",
    "Operating",
    "Rebooting",
    "Completed",
    "Failed",
    "RequestorFailed",
    "DrainDeadlineExceeded",
};

const char *pol_drain_phase_reason(enum pol_drain_phase p)
{
	return (unsigned)p < POL_PH_COUNT ? reasons[p] : "";
}

enum pol_drain_phase pol_drain_phase_of(const char *reason)
{
	for (int p = 1; reason && p < POL_PH_COUNT; p++)
		if (strcmp(reason, reasons[p]) == 0)
			return (enum pol_drain_phase)p;
	return POL_PH_NONE;
}

bool pol_drain_phase_failed(enum pol_drain_phase p)
{
	return p == POL_PH_FAILED || p == POL_PH_QUARANTINED;
}

bool pol_drain_phase_ready(enum pol_drain_phase p)
{
	return p >= POL_PH_DRAINED && p <= POL_PH_COMPLETED;
}

unsigned pol_node_lifecycle(enum pol_drain_phase ph, bool managed, bool drains)
{
	unsigned drained = drains ? POL_LC_DRAINED : 0;
	if (!managed)
		return POL_LC_PLANNED;
	switch (ph) {
	case POL_PH_NONE:
		return POL_LC_PLANNED;
	case POL_PH_CORDONING:
	case POL_PH_WAITING:
	case POL_PH_DRAINING:
		return POL_LC_DRAINING;
	case POL_PH_DRAINED:
		/* An operation without a drain: cordoned, the operation next. */
		return drains ? POL_LC_DRAINED : POL_LC_PLANNED;
	case POL_PH_OPERATING:
	case POL_PH_REBOOTING:
		return POL_LC_MAINTENANCE | drained;
	case POL_PH_COMPLETED:
		return drained;
	case POL_PH_FAILED:
	case POL_PH_REQUESTOR_FAILED:
	case POL_PH_QUARANTINED:
	case POL_PH_COUNT:
		break;
	}
	return POL_LC_MAINTENANCE;
}

static struct pol_drain_action act(enum pol_drain_do what, enum pol_drain_phase phase)
{
	return (struct pol_drain_action){what, phase};
}

/* Once the nodes are held: the pods, then the operation, then done. */
static struct pol_drain_action after_hold(const struct pol_drain_facts *f)
{
	if (f->requestor_failed)
		return act(POL_DO_REQUESTOR_FAILED, POL_PH_REQUESTOR_FAILED);
	/* A cleared RequestorFailed resumes where the pods are decided again. */
	enum pol_drain_phase at = f->was == POL_PH_REQUESTOR_FAILED ? POL_PH_DRAINING : f->was;
	if (pol_drain_phase_failed(at) || at == POL_PH_COMPLETED)
		return act(POL_DO_NOTHING, POL_PH_NONE);
	/* Past its deadline, a drain that has not finished keeps its nodes for a person. */
	if (at < POL_PH_DRAINED && f->wants_drain && f->quarantine_due)
		return act(POL_DO_QUARANTINE, POL_PH_QUARANTINED);
	if (at < POL_PH_DRAINED) {
		if (f->wants_drain && f->drained == POL_FACT_UNKNOWN)
			return act(POL_DO_DRAIN, POL_PH_NONE);
		if (f->wants_drain && f->drained == POL_FACT_NO)
			return act(POL_DO_NOTHING, POL_PH_NONE);
		/* An operation without a drain: the nodes are only cordoned. */
		return act(POL_DO_MARK_DRAINED, POL_PH_DRAINED);
	}
	if (!f->wants_operation)
		return act(POL_DO_NOTHING, POL_PH_NONE);
	if (f->job_template && f->was <= POL_PH_OPERATING) {
		if (f->operated == POL_FACT_UNKNOWN)
			return act(POL_DO_OPERATE, POL_PH_NONE);
		if (f->operated == POL_FACT_NO)
			return act(POL_DO_NOTHING, POL_PH_NONE);
	}
	if (f->wait_for_reboot && f->rebooted < f->nodes)
		return act(POL_DO_WAIT_REBOOT, POL_PH_REBOOTING);
	return act(POL_DO_COMPLETE, POL_PH_COMPLETED);
}

struct pol_drain_action pol_drain_next(const struct pol_drain_facts *f)
{
	if (f->gone) {
		/* Held by another requestor or a reported failure: finalizer and cordon stay. */
		bool give = f->has_finalizer && !f->held_by_others && !f->requestor_failed;
		return act(give ? POL_DO_GIVE_BACK : POL_DO_NOTHING, POL_PH_NONE);
	}
	if (!f->wants_drain && !f->wants_operation)
		return act(POL_DO_NOTHING, POL_PH_NONE);
	if (f->spec_error)
		return act(POL_DO_FAIL_SPEC, POL_PH_FAILED);
	if (!f->has_finalizer)
		return act(POL_DO_ADD_FINALIZER, POL_PH_NONE);
	if (f->held == POL_FACT_UNKNOWN)
		return act(POL_DO_HOLD_NODES, POL_PH_NONE);
	if (f->held == POL_FACT_NO) {
		bool kept = f->was >= POL_PH_CORDONING && f->was <= POL_PH_DRAINING;
		return act(POL_DO_STILL_HOLDING, kept ? f->was : POL_PH_CORDONING);
	}
	return after_hold(f);
}

size_t pol_drain_rebooted(const struct kube_node *const *nodes, size_t n)
{
	size_t done = 0;
	for (size_t i = 0; i < n; i++) {
		const struct kube_node *x = nodes[i];
		if ((x->flags & KUBE_NODE_READY) && x->note.present && *x->boot_id &&
		    strcmp(x->boot_id, x->note.boot_id) != 0)
			done++;
	}
	return done;
}

bool pol_drain_timed_out(int64_t start_ms, int64_t timeout_s, int64_t now_ms)
{
	return timeout_s > 0 && now_ms >= start_ms + timeout_s * 1000;
}

bool pol_drain_backing_off(int64_t until_ms, int64_t now_ms)
{
	return until_ms > now_ms;
}

enum pol_drain_job pol_drain_job_next(enum kube_job_state js, enum pol_drain_phase was,
				      bool has_ready, int64_t since_ms, int64_t now_ms)
{
	if (js == KUBE_JOB_COMPLETE)
		return POL_JOB_DONE;
	/* A Job gone a minute into Operating was deleted, not yet to be seen by the cache. */
	if (js == KUBE_JOB_FAILED || (js == KUBE_JOB_ABSENT && was == POL_PH_OPERATING &&
				      has_ready && now_ms - since_ms > 60000))
		return POL_JOB_FAILED;
	return js == KUBE_JOB_ABSENT ? POL_JOB_CREATE : POL_JOB_WAIT;
}
