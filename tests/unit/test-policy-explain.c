/* policy/explain: what `nodegate status` and `nodegate why` show. A budget names the grants that
 * hold it, the queue is in the gate's order with each request's holders and the requests ranked
 * before it that take the room, a request the gate would grant says whether hooks come first,
 * nodes nodegate holds or quarantined are listed, and `why` finds the budgets of a node and the
 * pods its drain still waits for. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "policy/explain.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

#include <string.h>

static const int64_t NOW = 1795000000000; /* 2026-11-18T11:06:40Z */

/* A pool budget of one node over node1 and node2, held by g1 on node1; p1 (high priority) and
 * p2 ask for node2. */
#define HELD                                                                                       \
	NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}")                                          \
	"," GRANTED("g1", "[\"node1\"]") "," ND(                                                   \
	    "p2", "{\"nodeNames\":[\"node2\"],\"priority\":"                                       \
		  "1}") "," ND("p1", "{\"nodeNames\":[\"node2\"],\"priority\":5}")

static void test_budget_and_queue_name_their_holders(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_cluster_f(HELD);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct pol_explain_status x;
	assert_int_equal(pol_explain_status(s, NOW, a, &x), NG_OK);
	assert_int_equal(x.nbudgets, 1);
	assert_int_equal(x.budgets[0].kind, KUBE_RES_NDBS);
	assert_int_equal(x.budgets[0].st.current, 1);
	assert_int_equal(x.budgets[0].st.allowed, 0);
	assert_int_equal(x.budgets[0].nheld, 1);
	assert_int_equal(x.budgets[0].holders[0], ng_test_id(s, "g1"));
	assert_int_equal(x.budgets[0].npending, 2);
	/* The gate's order: priority first. */
	assert_int_equal(x.nwaits, 2);
	assert_int_equal(x.waits[0].nd->name, ng_test_id(s, "p1"));
	assert_int_equal(x.waits[0].rank, 1);
	assert_int_equal(x.waits[1].nd->name, ng_test_id(s, "p2"));
	for (size_t i = 0; i < 2; i++) {
		assert_int_not_equal(x.waits[i].d.outcome, POL_GATE_GRANT);
		assert_int_equal(x.waits[i].nheld, 1);
		assert_int_equal(x.waits[i].holders[0], ng_test_id(s, "g1"));
		assert_non_null(strstr(x.waits[i].d.reason, "NodeDisruptionBudget pool"));
	}
	assert_int_equal(x.ngrants, 1);
	assert_int_equal(x.grants[0].nd->name, ng_test_id(s, "g1"));
	assert_false(x.cfg.paused);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_a_request_ranked_before_takes_the_room(void **state)
{
	(void)state;
	/* Nothing held: p1 would be granted, and then p2 waits behind it. */
	struct kube_snapshot *s =
	    ng_test_cluster_f(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND(
		"p2", "{\"nodeNames\":[\"node2\"],\"priority\":1}") "," ND("p1",
									   "{\"nodeNames\":"
									   "[\"node1\"],"
									   "\"priority\":5}"));
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct pol_explain_status x;
	assert_int_equal(pol_explain_status(s, NOW, a, &x), NG_OK);
	assert_int_equal(x.nwaits, 2);
	assert_int_equal(x.waits[0].d.outcome, POL_GATE_GRANT);
	assert_false(x.waits[0].needs_hooks);
	assert_int_not_equal(x.waits[1].d.outcome, POL_GATE_GRANT);
	assert_int_equal(x.waits[1].nahead, 1);
	assert_int_equal(x.waits[1].ahead[0], ng_test_id(s, "p1"));
	assert_int_equal(x.waits[1].nheld, 0); /* nothing granted holds it: p1 would */
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_hooks_and_pause_are_said(void **state)
{
	(void)state;
	struct kube_snapshot *s =
	    ng_test_cluster_f(NGC("{\"paused\":true}") "," POD("db-1", "node3", "db") "," ADB(
		"hooked", DB_HOOK("{\"url\":\"https://db.example/health\"}")) "," ND("p",
										     "{\"node"
										     "Names\":"
										     "[\"node3\"]"
										     "}"));
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct pol_explain_status x;
	assert_int_equal(pol_explain_status(s, NOW, a, &x), NG_OK);
	assert_true(x.cfg.paused);
	assert_int_equal(x.nwaits, 1);
	assert_int_equal(x.waits[0].d.outcome, POL_GATE_PENDING);
	assert_non_null(strstr(x.waits[0].d.reason, "paused"));
	ng_arena_destroy(a);
	kube_snapshot_release(s);

	s = ng_test_cluster_f(POD("db-1", "node3", "db") "," ADB(
	    "hooked", DB_HOOK("{\"url\":\"https://db.example/health\"}")) "," ND("p",
										 "{\"nodeNames\":"
										 "[\"node3\"]}"));
	a = ng_arena_create(1u << 20);
	assert_int_equal(pol_explain_status(s, NOW, a, &x), NG_OK);
	assert_int_equal(x.waits[0].d.outcome, POL_GATE_GRANT);
	assert_true(x.waits[0].needs_hooks);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_why_a_node_lists_its_budgets_holder_and_pods(void **state)
{
	(void)state;
	struct kube_snapshot *s =
	    ng_test_cluster_f(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," POD(
		"web-1", "node1",
		"web") ","
		       "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		       "\"metadata\":{\"name\":\"g1\"},\"spec\":{\"nodeNames\":[\"node1\"],"
		       "\"drain\":{\"force\":true}},\"status\":{\"state\":\"Granted\","
		       "\"disruptedNodes\":[\"node1\"]}}");
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct pol_explain_why y;
	assert_int_equal(pol_explain_why(s, NG_INTERN_NONE, ng_test_id(s, "node1"), NOW, a, &y),
			 NG_OK);
	assert_non_null(y.node);
	assert_true(y.granted);
	assert_int_equal(y.nd->name, ng_test_id(s, "g1"));
	assert_int_equal(y.nrequests, 1);
	assert_int_equal(y.nbudgets, 1);
	assert_int_equal(y.budgets[0].kind, KUBE_RES_NDBS);
	assert_int_equal(y.npods, 1);
	assert_string_equal(y.pods[0].pod->name, "web-1");
	assert_string_equal(y.pods[0].action, "to evict");
	/* node3 has nothing: no request, no NodeDisruptionBudget; an unknown name is not found. */
	assert_int_equal(pol_explain_why(s, NG_INTERN_NONE, ng_test_id(s, "node3"), NOW, a, &y),
			 NG_OK);
	assert_int_equal(y.nrequests, 0);
	assert_false(y.granted);
	assert_int_equal(pol_explain_why(s, NG_INTERN_NONE, NG_INTERN_NONE, NOW, a, &y),
			 NG_ENOTFOUND);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

/* A request a budget prepares for (its status says so) holds its share, as in the gate: a
 * request ranked before it for the pool's other node waits for the pool. */
static void test_a_preparing_request_holds_its_share(void **state)
{
	(void)state;
	/* clang-format off */
	struct kube_snapshot *s = ng_test_cluster_f(
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"hookV2BasePath\":{\"url\":\"https://m/\"}}") ","
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"prep\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{"
	    "\"state\":\"Pending\",\"disruptedNodes\":[\"node1\"],\"disruptedDisruptionBudgets\":[{"
	    "\"reference\":{\"kind\":\"NodeDisruptionBudget\",\"name\":\"pool\"},\"ok\":false,"
	    "\"reason\":\"preparing\",\"preparing\":true}]}}" ","
	    ND("next", "{\"nodeNames\":[\"node2\"],\"priority\":9}"));
	/* clang-format on */
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct pol_explain_status x;
	assert_int_equal(pol_explain_status(s, NOW, a, &x), NG_OK);
	assert_int_equal(x.nwaits, 2);
	assert_int_equal(x.waits[0].nd->name, ng_test_id(s, "next"));
	assert_int_not_equal(x.waits[0].d.outcome, POL_GATE_GRANT);
	assert_non_null(strstr(x.waits[0].d.reason, "NodeDisruptionBudget pool"));
	assert_int_equal(x.waits[1].nd->name, ng_test_id(s, "prep"));
	assert_int_equal(x.waits[1].d.outcome, POL_GATE_GRANT); /* once its /ready says 200 */
	assert_true(x.waits[1].needs_hooks);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_preparing_request_holds_its_share),
	    cmocka_unit_test(test_budget_and_queue_name_their_holders),
	    cmocka_unit_test(test_a_request_ranked_before_takes_the_room),
	    cmocka_unit_test(test_hooks_and_pause_are_said),
	    cmocka_unit_test(test_why_a_node_lists_its_budgets_holder_and_pods),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
