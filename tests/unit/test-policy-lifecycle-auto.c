/* policy/lifecycle: the ends of requests eviction.autoRequest made (idle Pending or Granted,
 * used recently, uncordoned after being seen cordoned, node deleted, kept ones, no idle end
 * without a valid config). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "kube/kube.h"
#include "policy/lifecycle.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"
#include "tests/unit/policy-lifecycle-fixture.h"

#include <string.h>

/* A request autoRequest made for @node, created 60 s ago, with @ann (annotation members), in
 * state @state (status members after it in @status). */
#define AR(name, node, label, ann, state, status)                                                  \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"uid\":\"uid-" name "\",\"creationTimestamp\":" AGO_60             \
	",\"labels\":{\"nodegate.io/auto-request\":\"" label "\"},\"annotations\":{" ann "}},"     \
	"\"spec\":{\"nodeNames\":[\"" node                                                         \
	"\"],\"type\":\"eviction\"},\"status\":{\"state\":\"" state "\"" status "}}"
#define USED(at) "\"nodegate.io/last-used\":" at
#define CORDONED "\"nodegate.io/node-cordoned\":\"true\""
#define GRANTED_ON(node) ",\"disruptedNodes\":[\"" node "\"],\"grantedAt\":" AGO_60
#define IDLE_30 NGC("{\"eviction\":{\"autoRequest\":true,\"autoRequestIdleSeconds\":30}}")
#define UNSCHEDULABLE(name)                                                                        \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\"},"           \
	"\"spec\":{\"unschedulable\":true}}"

static void test_idle_pending_and_granted_end_used_ones_wait(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    IDLE_30 ","
	    AR("auto-node1", "node1", "true", "", "Pending", "") ","
	    AR("auto-node2", "node2", "true", USED(AGO_60), "Granted", GRANTED_ON("node2")) ","
	    AR("auto-node3", "node3", "true", USED(AGO_5), "Pending", "") ","
	    AR("auto-other", "node3", "false", "", "Pending", "") ","
	    AR("mine", "node3", "true", "", "Pending", ""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 2);
	const struct pol_end *e = end_of(&r, "auto-node1");
	assert_non_null(e);
	assert_int_equal(e->reason, POL_END_AUTO_IDLE);
	assert_int_equal(e->due_wall_ms, NOW - 30000); /* created 60 s ago, idle 30 s */
	assert_string_equal(pol_end_reason_str(e->reason), "AutoRequestIdle");
	assert_int_equal(end_of(&r, "auto-node2")->reason, POL_END_AUTO_IDLE);
	/* Used 5 s ago: due in 25 s, when the gate wakes. Unlabelled or not auto-*: never. */
	assert_null(end_of(&r, "auto-node3"));
	assert_int_equal(r.l.next_wall_ms, NOW + 25000);
	finish(&r);
}

static void test_default_idle_and_no_idle_without_a_valid_config(void **state)
{
	(void)state;
	struct run r = run(NGC("{\"eviction\":{\"autoRequest\":true}}") "," AR(
	    "auto-node1", "node1", "true", "", "Pending", ""));
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.next_wall_ms, NOW - 60000 + 300000); /* the default, 300 s */
	finish(&r);
	r = run(AR("auto-node1", "node1", "true", "", "Pending", ""));
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
	r = run(NGC("{\"eviction\":{\"autoRequestIdleSeconds\":0}}") "," AR(
	    "auto-node1", "node1", "true", "", "Pending", ""));
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
}

static void test_uncordoned_after_cordoned_and_node_deleted_end_at_once(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    UNSCHEDULABLE("node4") ","
	    AR("auto-node1", "node1", "true", USED(AGO_5) "," CORDONED, "Granted",
	       GRANTED_ON("node1")) ","
	    AR("auto-node2", "node2", "true", USED(AGO_5), "Granted", GRANTED_ON("node2")) ","
	    AR("auto-node4", "node4", "true", USED(AGO_5) "," CORDONED, "Pending", "") ","
	    AR("auto-node9", "node9", "true", USED(AGO_5), "Pending", ""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 2);
	const struct pol_end *e = end_of(&r, "auto-node1");
	assert_int_equal(e->reason, POL_END_NODE_UNCORDONED);
	assert_int_equal(e->due_wall_ms, NOW);
	assert_string_equal(pol_end_reason_str(e->reason), "NodeUncordoned");
	e = end_of(&r, "auto-node9");
	assert_int_equal(e->reason, POL_END_NODE_DELETED);
	assert_string_equal(pol_end_reason_str(e->reason), "NodeDeleted");
	/* Never seen cordoned, or still cordoned: they wait (no config: no idle end). */
	assert_null(end_of(&r, "auto-node2"));
	assert_null(end_of(&r, "auto-node4"));
	finish(&r);
}

static void test_failed_drains_and_requestors_are_kept(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    IDLE_30 ","
	    AR("auto-node1", "node1", "true", "", "Granted", GRANTED_ON("node1")
	       ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Failed\"}]")
	    ","
	    AR("auto-node2", "node2", "true", "", "Granted", GRANTED_ON("node2")
	       ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	       "\"DrainDeadlineExceeded\"}]") ","
	    AR("auto-node9", "node9", "true", "", "Granted", GRANTED_ON("node9")
	       ",\"conditions\":[{\"type\":\"RequestorFailed\",\"status\":\"True\"}]") ","
	    AR("auto-node3", "node3", "true", "", "Rejected", ""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idle_pending_and_granted_end_used_ones_wait),
	    cmocka_unit_test(test_default_idle_and_no_idle_without_a_valid_config),
	    cmocka_unit_test(test_uncordoned_after_cordoned_and_node_deleted_end_at_once),
	    cmocka_unit_test(test_failed_drains_and_requestors_are_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
