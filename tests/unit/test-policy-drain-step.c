/* policy/drain_step and policy/drain: the drainer's decisions without a server. One case per row
 * of docs/drainer.md's step table, per "Which pods go" rule, for timeouts and backoff, and for
 * giving the nodes back; each asserts what a user would see: the status reason, the pod that
 * goes or stays, the node given back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "kube/snapshot.h"
#include "policy/drain.h"
#include "policy/drain_step.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

/* A granted request with a finalizer whose drain asks for pods to go. */
static struct pol_drain_facts drain_request(enum pol_drain_phase was)
{
	return (struct pol_drain_facts){.has_finalizer = true, .wants_drain = true, .was = was};
}

/* The status reason the action sets ("" when it sets none). */
static const char *reason_of(struct pol_drain_action a)
{
	return pol_drain_phase_reason(a.phase);
}

static void test_a_granted_request_gets_the_finalizer_before_any_node(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_NONE);
	f.has_finalizer = false;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_ADD_FINALIZER);
}

static void test_cordoning_holds_the_nodes_and_says_cordoning(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_NONE);
	assert_int_equal(pol_drain_next(&f).what, POL_DO_HOLD_NODES);
	f.held = POL_FACT_NO;
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_STILL_HOLDING);
	assert_string_equal(reason_of(a), "Cordoning");
	assert_false(pol_drain_phase_ready(a.phase));
}

static void test_waiting_for_pods_keeps_its_reason_while_a_node_is_not_held(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_WAITING);
	f.held = POL_FACT_NO;
	assert_string_equal(reason_of(pol_drain_next(&f)), "WaitingForPods");
	f.held = POL_FACT_YES;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_DRAIN);
}

static void test_draining_goes_on_until_no_pod_is_left(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINING);
	f.held = POL_FACT_YES;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_DRAIN);
	f.drained = POL_FACT_NO; /* pods still leaving: the drain step said why */
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
}

static void test_drained_once_the_pods_are_gone(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINING);
	f.held = POL_FACT_YES;
	f.drained = POL_FACT_YES;
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_MARK_DRAINED);
	assert_string_equal(reason_of(a), "Drained");
	assert_true(pol_drain_phase_ready(a.phase));
	/* Without an operation, a drained request stays Drained. */
	f.was = POL_PH_DRAINED;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
}

static void test_an_operation_without_a_drain_only_cordons(void **state)
{
	(void)state;
	struct pol_drain_facts f = {
	    .has_finalizer = true, .wants_operation = true, .held = POL_FACT_YES};
	assert_string_equal(reason_of(pol_drain_next(&f)), "Drained");
}

static void test_operating_runs_the_jobs_until_each_completed(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINED);
	f.held = POL_FACT_YES;
	f.wants_operation = f.job_template = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_OPERATE);
	f.operated = POL_FACT_NO;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	assert_int_equal(pol_drain_job_next(KUBE_JOB_ABSENT, POL_PH_DRAINED, true, NOW, NOW),
			 POL_JOB_CREATE);
	assert_int_equal(pol_drain_job_next(KUBE_JOB_RUNNING, POL_PH_OPERATING, true, NOW, NOW),
			 POL_JOB_WAIT);
	assert_int_equal(pol_drain_job_next(KUBE_JOB_COMPLETE, POL_PH_OPERATING, true, NOW, NOW),
			 POL_JOB_DONE);
	f.operated = POL_FACT_YES;
	assert_string_equal(reason_of(pol_drain_next(&f)), "Completed");
}

#define NODE(name, boot, note_boot)                                                                \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","            \
	"\"resourceVersion\":\"1\",\"annotations\":{\"nodegate.io/drain\":\"{\\\"wasUnschedul"     \
	"able\\\":false,\\\"holders\\\":[\\\"m1\\\"],\\\"bootID\\\":\\\"" note_boot "\\\"}\"}},"   \
	"\"spec\":{\"unschedulable\":true},\"status\":{\"nodeInfo\":{\"bootID\":\"" boot "\"},"    \
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

static void test_rebooting_waits_for_every_node_to_come_back(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_snapshot("{\"kind\":\"List\",\"items\":[" NODE(
	    "n1", "boot-2", "boot-1") "," NODE("n2", "boot-1", "boot-1") "]}");
	const struct kube_node *nodes[2] = {kube_snapshot_find_node(s, ng_test_id(s, "n1")),
					    kube_snapshot_find_node(s, ng_test_id(s, "n2"))};
	assert_non_null(nodes[0]);
	assert_non_null(nodes[1]);
	struct pol_drain_facts f = drain_request(POL_PH_DRAINED);
	f.held = POL_FACT_YES;
	f.wants_operation = f.wait_for_reboot = true;
	f.nodes = 2;
	f.rebooted = pol_drain_rebooted(nodes, 2); /* n1 has a new boot ID, n2 not yet */
	assert_int_equal(f.rebooted, 1);
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_WAIT_REBOOT);
	assert_string_equal(reason_of(a), "Rebooting");
	f.rebooted = 2;
	assert_string_equal(reason_of(pol_drain_next(&f)), "Completed");
	kube_snapshot_release(s);
}

static void test_completed_and_failed_requests_stay_where_they_are(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_COMPLETED);
	f.held = POL_FACT_YES;
	f.wants_operation = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	f.was = POL_PH_FAILED;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	assert_int_equal(pol_drain_phase_of("Completed"), POL_PH_COMPLETED);
	assert_int_equal(pol_drain_phase_of("Granted"), POL_PH_NONE);
}

static void test_failed_for_a_spec_error_or_an_operation_that_failed(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_NONE);
	f.spec_error = true;
	f.has_finalizer = false; /* before anything is touched */
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_FAIL_SPEC);
	assert_string_equal(reason_of(a), "Failed");
	assert_int_equal(pol_drain_job_next(KUBE_JOB_FAILED, POL_PH_OPERATING, true, NOW, NOW),
			 POL_JOB_FAILED);
}

static void test_a_job_deleted_a_minute_into_operating_fails_the_request(void **state)
{
	(void)state;
	assert_int_equal(
	    pol_drain_job_next(KUBE_JOB_ABSENT, POL_PH_OPERATING, true, NOW - 60001, NOW),
	    POL_JOB_FAILED);
	assert_int_equal(
	    pol_drain_job_next(KUBE_JOB_ABSENT, POL_PH_OPERATING, true, NOW - 60000, NOW),
	    POL_JOB_CREATE);
	assert_int_equal(pol_drain_job_next(KUBE_JOB_ABSENT, POL_PH_OPERATING, false, 0, NOW),
			 POL_JOB_CREATE);
}

static void test_requestor_failed_keeps_the_nodes_and_a_cleared_one_drains_again(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINED);
	f.held = POL_FACT_YES;
	f.requestor_failed = true;
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_REQUESTOR_FAILED);
	assert_string_equal(reason_of(a), "RequestorFailed");
	f.requestor_failed = false;
	f.was = POL_PH_REQUESTOR_FAILED;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_DRAIN);
}

static void test_give_back_releases_unless_someone_still_holds_the_nodes(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINED);
	f.gone = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_GIVE_BACK);
	f.held_by_others = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	f.held_by_others = false;
	f.requestor_failed = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	f.requestor_failed = false;
	f.has_finalizer = false; /* already given back */
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
}

#define POD(name, ns, meta, spec, phase)                                                           \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"" ns "\"" meta "},\"spec\":{\"nodeName\":\"n1\"" spec "},"                \
	"\"status\":{\"phase\":\"" phase "\"}}"
#define OWNER(kind)                                                                                \
	",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"" kind "\",\"name\":\"o\","  \
	"\"uid\":\"u\",\"controller\":true}]"
#define APP(v) ",\"labels\":{\"app\":\"" v "\"}"
#define EMPTYDIR ",\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{}}]"

/* clang-format off: one pod per line */
static const char pods_json[] =
    "{\"kind\":\"List\",\"items\":[" POD("done", "default", OWNER("ReplicaSet"), "", "Succeeded") "," POD(
	"agent", "default", OWNER("DaemonSet"), "",
	"Running") "," POD("static", "default",
			   ",\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}", "",
			   "Running") "," POD("nodegate-0", "nodegate",
					      OWNER("ReplicaSet") APP("nodegate"), "",
					      "Running") "," POD("other", "default",
								 OWNER("ReplicaSet") APP("other"),
								 "",
								 "Running") "," POD("bare",
										    "default",
										    APP("web"), "",
										    "Running") "," POD("scratch",
												       "default",
												       OWNER(
													   "ReplicaSet")
													   APP("web"),
												       EMPTYDIR,
												       "Running") "," POD("web",
															  "default",
															  OWNER(
															      "ReplicaSet")
															      APP("web"),
															  "",
															  "Running") "]}";
/* clang-format on */

/* clang-format off */
#define BATCH(name) POD(name, "default", OWNER("Job") APP("batch"), "", "Running") ","
static const char waiting_json[] =
    "{\"kind\":\"List\",\"items\":[" NODE("n1", "boot-1", "boot-1") ","
    BATCH("b0") BATCH("b1") BATCH("b2") BATCH("b3") BATCH("b4") BATCH("b5") BATCH("b6")
    BATCH("b7") BATCH("b8")
    POD("b9", "default", OWNER("Job") APP("batch"), "", "Succeeded") ","
    POD("web", "default", OWNER("ReplicaSet") APP("web"), "", "Running") "]}";
/* clang-format on */

/* waitForPodCompletion's message: " and N more" past eight names. */
static void test_waiting_names_the_active_matching_pods(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_snapshot(waiting_json);
	const struct kube_node *n1 = kube_snapshot_find_node(s, ng_test_id(s, "n1"));
	assert_non_null(n1);
	struct ng_arena *arena = ng_arena_create(1u << 16);
	assert_non_null(arena);
	struct kube_selector batch;
	struct ng_err err = {0};
	assert_int_equal(
	    pol_selector_for_pool("app=batch", kube_snapshot_pool(s), arena, &batch, &err), NG_OK);
	char msg[1024] = "";
	/* b9 finished, web is not selected */
	assert_int_equal(pol_drain_waiting(s, &n1, 1, &batch, msg, sizeof(msg)), 9);
	assert_string_equal(msg, "waiting for 9 pod(s) to complete: default/b0, default/b1, "
				 "default/b2, default/b3, default/b4, default/b5, default/b6, "
				 "default/b7 and 1 more");
	assert_int_equal(pol_drain_waiting(s, &n1, 1, NULL, msg, sizeof(msg)), 10);
	assert_int_equal(pol_drain_waiting(s, &n1, 0, NULL, msg, sizeof(msg)), 0);
	struct kube_selector none;
	assert_int_equal(
	    pol_selector_for_pool("app=none", kube_snapshot_pool(s), arena, &none, &err), NG_OK);
	(void)snprintf(msg, sizeof(msg), "unchanged");
	assert_int_equal(pol_drain_waiting(s, &n1, 1, &none, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "unchanged");
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* How a drain with @force and @delete_empty_dir treats pod default/@name (or nodegate/…). */
static enum pol_drain_pod classify(const char *ns, const char *name, bool force, bool empty_dir)
{
	struct kube_snapshot *s = ng_test_snapshot(pods_json);
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct ng_arena *arena = ng_arena_create(1u << 16);
	assert_non_null(arena);
	struct kube_selector pods, self;
	struct ng_err err = {0};
	assert_int_equal(pol_selector_for_pool("app in (web,nodegate)", pool, arena, &pods, &err),
			 NG_OK);
	assert_int_equal(pol_selector_for_pool("app=nodegate", pool, arena, &self, &err), NG_OK);
	const struct pol_drain_rules r = {.pod_selector = &pods,
					  .force = force,
					  .delete_empty_dir = empty_dir,
					  .self_ns = ng_test_id(s, "nodegate"),
					  .self_selector = &self};
	const struct kube_pod *p =
	    kube_snapshot_find_pod_str(s, ns, strlen(ns), name, strlen(name));
	assert_non_null(p);
	enum pol_drain_pod c = pol_drain_classify(pool, p, &r);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
	return c;
}

static void test_which_pods_go(void **state)
{
	(void)state;
	assert_int_equal(classify("default", "done", false, false), POL_DRAIN_SKIP_FINISHED);
	assert_int_equal(classify("default", "agent", false, false), POL_DRAIN_SKIP_DAEMONSET);
	assert_int_equal(classify("default", "static", false, false), POL_DRAIN_SKIP_MIRROR);
	assert_int_equal(classify("nodegate", "nodegate-0", true, true), POL_DRAIN_SKIP_SELF);
	assert_int_equal(classify("default", "other", true, true), POL_DRAIN_SKIP_UNSELECTED);
	assert_int_equal(classify("default", "web", false, false), POL_DRAIN_EVICT);
	assert_string_equal(pol_drain_pod_str(POL_DRAIN_EVICT), "evict");
}

static void test_pods_that_would_not_come_back_stop_the_drain_unless_allowed(void **state)
{
	(void)state;
	assert_int_equal(classify("default", "bare", false, false), POL_DRAIN_BLOCK_NO_CONTROLLER);
	assert_int_equal(classify("default", "bare", true, false), POL_DRAIN_EVICT);
	assert_int_equal(classify("default", "scratch", false, false), POL_DRAIN_BLOCK_EMPTYDIR);
	assert_int_equal(classify("default", "scratch", false, true), POL_DRAIN_EVICT);
}

static void test_a_failed_attempt_backs_off_doubling_to_the_cap_plus_jitter(void **state)
{
	(void)state;
	assert_int_equal(pol_drain_backoff_ms(1, 300000, 1200000, 0), 300000);
	assert_int_equal(pol_drain_backoff_ms(2, 300000, 1200000, 0), 600000);
	assert_int_equal(pol_drain_backoff_ms(3, 300000, 1200000, 0), 1200000);
	assert_int_equal(pol_drain_backoff_ms(40, 300000, 1200000, 0), 1200000);
	assert_int_equal(pol_drain_backoff_ms(2, 300000, 1200000, 1234), 601234);
	assert_int_equal(pol_drain_backoff_ms(2, 300000, 1200000, -5), 600000);
	assert_int_equal(pol_drain_backoff_ms(3, -1, 1200000, 0), 0);
	assert_int_equal(pol_drain_backoff_ms(1, 5000, 1000, 0), 1000);
	assert_int_equal(pol_drain_backoff_ms(0, 5000, 60000, 0), 5000);
	assert_int_equal(pol_drain_backoff_ms(INT64_MAX, INT64_MAX / 2 + 1, INT64_MAX, 0),
			 INT64_MAX);
}

static void test_waits_time_out_and_a_backoff_ends(void **state)
{
	(void)state;
	/* waitForPods of 60s entered a minute ago: over; a second earlier it was not. */
	assert_true(pol_drain_timed_out(NOW - 60000, 60, NOW));
	assert_false(pol_drain_timed_out(NOW - 59999, 60, NOW));
	/* No timeout: never over. */
	assert_false(pol_drain_timed_out(NOW - 86400000, 0, NOW));
	assert_false(pol_drain_backing_off(0, NOW));
	assert_true(pol_drain_backing_off(NOW + 1, NOW));
	assert_false(pol_drain_backing_off(NOW, NOW));
}

/* onDeadline Quarantine past the drain deadline: an unfinished drain stops where it is, with
 * reason DrainDeadlineExceeded, and stays there; a finished one is not touched. */
static void test_a_drain_past_its_deadline_is_quarantined_only_while_unfinished(void **state)
{
	(void)state;
	struct pol_drain_facts f = drain_request(POL_PH_DRAINING);
	f.held = POL_FACT_YES;
	f.quarantine_due = true;
	struct pol_drain_action a = pol_drain_next(&f);
	assert_int_equal(a.what, POL_DO_QUARANTINE);
	assert_string_equal(reason_of(a), "DrainDeadlineExceeded");
	assert_true(pol_drain_phase_failed(a.phase));
	assert_false(pol_drain_phase_ready(a.phase));
	assert_int_equal(pol_drain_phase_of("DrainDeadlineExceeded"), POL_PH_QUARANTINED);
	f.was = POL_PH_QUARANTINED;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_NOTHING);
	f.was = POL_PH_DRAINED;
	f.wants_operation = true;
	f.job_template = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_OPERATE);
	/* deleted: the nodes go back through the release path, which leaves labelled ones */
	f.was = POL_PH_QUARANTINED;
	f.gone = true;
	assert_int_equal(pol_drain_next(&f).what, POL_DO_GIVE_BACK);
}

/* The deadline counts from the grant: the request's own, else the NodeGateConfig default; an
 * explicit 0 means none, and an ungranted request has none yet. */
static void test_the_drain_deadline_counts_from_the_grant(void **state)
{
	(void)state;
	struct kube_nd_detail x;
	memset(&x, 0, sizeof(x));
	x.drain.present = true;
	x.drain.deadline_s = 60;
	x.granted_ms = NOW;
	struct kube_ngc g;
	memset(&g, 0, sizeof(g));
	g.drain_deadline_s = 600;
	assert_int_equal(pol_drain_deadline_ms(&x, &g), NOW + 60000);
	x.drain.deadline_s = -1;
	assert_int_equal(pol_drain_deadline_ms(&x, &g), NOW + 600000);
	assert_int_equal(pol_drain_deadline_ms(&x, NULL), 0);
	g.invalid = true; /* an invalid config is the defaults: no deadline */
	assert_int_equal(pol_drain_deadline_ms(&x, &g), 0);
	g.invalid = false;
	x.drain.deadline_s = 0;
	assert_int_equal(pol_drain_deadline_ms(&x, &g), 0);
	x.drain.deadline_s = 60;
	x.granted_ms = 0;
	assert_int_equal(pol_drain_deadline_ms(&x, &g), 0);
	x.granted_ms = NOW;
	x.drain.present = false;
	assert_int_equal(pol_drain_deadline_ms(&x, &g), 0);
}

/* The node lifecycle conditions a holder's phase makes True (docs/drainer.md "Node conditions"). */
static void test_node_lifecycle_follows_the_phase(void **state)
{
	(void)state;
	assert_int_equal(pol_node_lifecycle(POL_PH_NONE, true, true), POL_LC_PLANNED);
	assert_int_equal(pol_node_lifecycle(POL_PH_DRAINING, false, false), POL_LC_PLANNED);
	assert_int_equal(pol_node_lifecycle(POL_PH_CORDONING, true, true), POL_LC_DRAINING);
	assert_int_equal(pol_node_lifecycle(POL_PH_WAITING, true, true), POL_LC_DRAINING);
	assert_int_equal(pol_node_lifecycle(POL_PH_DRAINED, true, true), POL_LC_DRAINED);
	/* An operation without a drain is only cordoned before it runs. */
	assert_int_equal(pol_node_lifecycle(POL_PH_DRAINED, true, false), POL_LC_PLANNED);
	assert_int_equal(pol_node_lifecycle(POL_PH_REBOOTING, true, true),
			 POL_LC_MAINTENANCE | POL_LC_DRAINED);
	assert_int_equal(pol_node_lifecycle(POL_PH_OPERATING, true, false), POL_LC_MAINTENANCE);
	assert_int_equal(pol_node_lifecycle(POL_PH_COMPLETED, true, true), POL_LC_DRAINED);
	assert_int_equal(pol_node_lifecycle(POL_PH_COMPLETED, true, false), 0);
	assert_int_equal(pol_node_lifecycle(POL_PH_QUARANTINED, true, true), POL_LC_MAINTENANCE);
	assert_int_equal(pol_node_lifecycle(POL_PH_FAILED, true, true), POL_LC_MAINTENANCE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_granted_request_gets_the_finalizer_before_any_node),
	    cmocka_unit_test(test_cordoning_holds_the_nodes_and_says_cordoning),
	    cmocka_unit_test(test_waiting_for_pods_keeps_its_reason_while_a_node_is_not_held),
	    cmocka_unit_test(test_draining_goes_on_until_no_pod_is_left),
	    cmocka_unit_test(test_drained_once_the_pods_are_gone),
	    cmocka_unit_test(test_an_operation_without_a_drain_only_cordons),
	    cmocka_unit_test(test_operating_runs_the_jobs_until_each_completed),
	    cmocka_unit_test(test_rebooting_waits_for_every_node_to_come_back),
	    cmocka_unit_test(test_completed_and_failed_requests_stay_where_they_are),
	    cmocka_unit_test(test_failed_for_a_spec_error_or_an_operation_that_failed),
	    cmocka_unit_test(test_a_job_deleted_a_minute_into_operating_fails_the_request),
	    cmocka_unit_test(test_requestor_failed_keeps_the_nodes_and_a_cleared_one_drains_again),
	    cmocka_unit_test(test_give_back_releases_unless_someone_still_holds_the_nodes),
	    cmocka_unit_test(test_which_pods_go),
	    cmocka_unit_test(test_pods_that_would_not_come_back_stop_the_drain_unless_allowed),
	    cmocka_unit_test(test_a_failed_attempt_backs_off_doubling_to_the_cap_plus_jitter),
	    cmocka_unit_test(test_waits_time_out_and_a_backoff_ends),
	    cmocka_unit_test(test_waiting_names_the_active_matching_pods),
	    cmocka_unit_test(test_a_drain_past_its_deadline_is_quarantined_only_while_unfinished),
	    cmocka_unit_test(test_the_drain_deadline_counts_from_the_grant),
	    cmocka_unit_test(test_node_lifecycle_follows_the_phase),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
