/* policy/disruption: a request that can never fit (its own nodes over a budget's largest limit,
 * now and in every window) says so: Rejected without retry, Pending with it, the decision
 * unsatisfiable and its reason naming the budget, the numbers and what would make it fit; a
 * request a budget holds back only for now (full, outside a window that would allow it) is
 * not. Over fixture F (policy-gate-fixture.h). */
#include "tests/unit/policy-gate-fixture.h"

#define RETRY ",\"retry\":{\"enabled\":true}}"
#define ON_NODE1 "{\"nodeNames\":[\"node1\"]"

/* Weekdays 22:00-06:00 in Paris, with @limit (JSON members) of its own. */
#define WINDOW(limit)                                                                              \
	"{\"schedule\":\"0 22 * * 1-5\",\"duration\":\"8h\",\"timeZone\":\"Europe/Paris\"" limit "}"
static const int64_t MON_NOON = 1796036400000;  /* 2026-11-30T11:00:00Z: outside */
static const int64_t MON_23H30 = 1796077800000; /* inside */

static void expect_never(struct result *r, enum pol_gate_outcome o, const char *reason)
{
	expect(r, o, NULL);
	assert_true(r->d.unsatisfiable);
	assert_string_equal(r->d.reason, reason);
	assert_int_equal(r->d.wake_wall_ms, 0); /* no window to wait for */
	assert_false(r->d.only_windows);
}

static void expect_fits_later(struct result *r, enum pol_gate_outcome o, const char *reason_part)
{
	expect(r, o, reason_part);
	assert_false(r->d.unsatisfiable);
	for (size_t i = 0; i < r->d.nverdicts; i++)
		assert_false(r->d.verdicts[i].never);
}

/* L06: two nodes under a NodeDisruptionBudget of one: Pending with retry, Rejected without,
 * and the reason says what would make it fit. */
static void test_L06_ndb_over_by_one(void **state)
{
	(void)state;
	static const char want[] =
	    "needs 2 nodes of NodeDisruptionBudget pool, which allows at most "
	    "1: raise maxDisruptedNodes to 2 or split the request";
	struct result r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND("nd", ON_TEST1 RETRY)),
	    "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_PENDING, want);
	assert_int_equal(r.d.nverdicts, 1);
	assert_true(r.d.verdicts[0].never);
	assert_string_equal(r.d.verdicts[0].reason, want);
	done(&r);
	r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_REJECT, want);
	done(&r);
	/* One node over a limit of 0: splitting would not help, so it is not suggested. */
	r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND("nd", ON_NODE1 "}")),
	    "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_REJECT,
		     "needs 1 node of NodeDisruptionBudget pool, which allows at most 0: raise "
		     "maxDisruptedNodes to 1");
	done(&r);
}

/* A budget full because of another grant holds the request back for now only. */
static void test_L06_a_full_budget_is_not_unsatisfiable(void **state)
{
	(void)state;
	struct result r =
	    decide(cluster(GRANTED("held", "[\"node2\"]") "," NDB(
		       "pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND("nd", ON_NODE1 RETRY)),
		   "nd", NULL, NOW_WALL_MS);
	expect_fits_later(&r, POL_GATE_PENDING,
			  "NodeDisruptionBudget pool: 1 of 1 in use; this request adds 1");
	done(&r);
	/* Beside a budget that can never allow it, only that one is named. */
	r = decide(
	    cluster(GRANTED("held", "[\"node3\"]") "," NDB(
		"all",
		"{\"nodeSelector\":{},"
		"\"maxDisruptedNodes\":2}") "," NDB("pool", ON_TEST1
						    ",\"maxDisruptedNodes\":1}") "," ND("nd",
											ON_TEST1
											    RETRY)),
	    "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_PENDING,
		     "needs 2 nodes of NodeDisruptionBudget pool, which allows at most 1: raise "
		     "maxDisruptedNodes to 2 or split the request");
	assert_int_equal(r.d.nverdicts, 2);
	assert_false(r.d.verdicts[0].ok);
	assert_false(r.d.verdicts[0].never); /* "all": full now, 2 fit once node3 is back */
	done(&r);
}

/* An ApplicationDisruptionBudget counts the request's nodes that run its pods. */
static void test_L06_adb(void **state)
{
	(void)state;
	struct result r = decide(
	    cluster(POD("pod2", "node2", "db") "," ADB(
		"db", "{\"podSelector\":{\"matchLabels\":{"
		      "\"app\":\"db\"}},\"maxDisruptions\":1}") "," ND("nd", ON_TEST1 RETRY)),
	    "nd", NULL, NOW_WALL_MS);
	expect_never(
	    &r, POL_GATE_PENDING,
	    "needs 2 nodes of ApplicationDisruptionBudget default/db, which allows at most 1: "
	    "raise maxDisruptions to 2 or split the request");
	done(&r);
	/* Only one of its nodes runs a pod of the budget: it fits. */
	r = decide(cluster(ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				     "\"maxDisruptions\":1}") "," ND("nd", ON_TEST1 RETRY)),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* A limit that is a percentage of the pool, and a minimum. */
static void test_L06_percentage_and_minimum(void **state)
{
	(void)state;
	struct result r = decide(cluster(NDB("all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":"
						    "\"10%\"}") "," ND("nd", ON_TEST1 "}")),
				 "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_REJECT,
		     "needs 2 nodes of NodeDisruptionBudget all, which allows at most 1 (10% of 3 "
		     "nodes): raise maxDisruptedNodes to 2 or split the request");
	done(&r);
	r = decide(cluster(NDB("all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":\"50%\"}") "," ND(
		       "nd", ON_TEST1 "}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL); /* ceil(1.5) = 2 */
	done(&r);
	r = decide(cluster(NDB("all", "{\"nodeSelector\":{},\"minUndisruptedNodes\":2}") "," ND(
		       "nd", ON_TEST1 RETRY)),
		   "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_PENDING,
		     "needs 2 nodes of NodeDisruptionBudget all, which keeps at least 2 of its 3 "
		     "nodes undisrupted: lower minUndisruptedNodes to 1 or split the request");
	done(&r);
}

/* Six nodes in three zones and a NodeDisruptionBudget over them with topology @limits. */
#define ZNODE(n, z)                                                                                \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"zone\":\"" z "\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"         \
	"\"True\"}]}}"
#define ZONES(limits, extra)                                                                       \
	"{\"kind\":\"List\",\"items\":[" ZNODE("a1", "a") "," ZNODE("a2", "a") "," ZNODE(          \
	    "b1", "b") "," ZNODE("b2",                                                             \
				 "b") "," ZNODE("c1",                                              \
						"c") "," ZNODE("c2",                               \
							       "c") "," NDB("zones",               \
									    "{\"nodeSelector\":{}" \
									    ",\"topologyKey\":"    \
									    "\"zone\"" limits      \
									    "}") "," extra "]}"

static void test_L06_topology(void **state)
{
	(void)state;
	struct result r =
	    decide(ng_test_snapshot(ZONES(",\"maxDisruptedDomains\":1",
					  ND("nd", "{\"nodeNames\":[\"a1\",\"b1\"]" RETRY))),
		   "nd", NULL, NOW_WALL_MS);
	expect_never(&r, POL_GATE_PENDING,
		     "needs nodes in 2 zone domains of NodeDisruptionBudget zones, which allows at "
		     "most 1: raise maxDisruptedDomains to 2 or split the request");
	done(&r);
	r = decide(ng_test_snapshot(ZONES(",\"maxDisruptedNodesPerDomain\":\"50%\"",
					  ND("nd", "{\"nodeNames\":[\"a1\",\"a2\"]}"))),
		   "nd", NULL, NOW_WALL_MS);
	expect_never(
	    &r, POL_GATE_REJECT,
	    "needs 2 nodes of zone=a of NodeDisruptionBudget zones, which allows at most 1 "
	    "of its 2 nodes per domain: raise maxDisruptedNodesPerDomain to 2 or split the "
	    "request");
	done(&r);
	/* Another zone disrupted: the request waits for it, no more. */
	r = decide(ng_test_snapshot(ZONES(
		       ",\"maxDisruptedDomains\":1",
		       GRANTED("held", "[\"a1\"]") "," ND("nd", "{\"nodeNames\":[\"b1\"]" RETRY))),
		   "nd", NULL, NOW_WALL_MS);
	expect_fits_later(&r, POL_GATE_PENDING, "nodes of 2 zone domains would be disrupted");
	done(&r);
}

/* Windows: the largest limit the budget can ever have decides, whether the window is open now
 * or not. */
static void test_L06_windows(void **state)
{
	(void)state;
	/* outsideWindows Deny: only the window's limit of 1 ever applies. */
	const char *one =
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"windows\":[" WINDOW(
			    ",\"maxDisruptedNodes\":1") "]}") "," ND("nd", ON_TEST1 RETRY);
	static const char want[] =
	    "needs 2 nodes of NodeDisruptionBudget pool, which allows at most 1 in its window 0 "
	    "(schedule \"0 22 * * 1-5\"), the largest limit it has: raise "
	    "windows[0].maxDisruptedNodes to 2 or split the request";
	const int64_t at[] = {MON_NOON, MON_23H30};
	for (size_t i = 0; i < 2; i++) {
		struct result r = decide(cluster(one), "nd", NULL, at[i]);
		expect_never(&r, POL_GATE_PENDING, want);
		done(&r);
	}
	/* A second window allows it: it waits for that one. */
	struct result r = decide(
	    cluster(NDB(
		"pool",
		ON_TEST1 ",\"maxDisruptedNodes\":2,\"windows\":[" WINDOW(
		    ",\"maxDisruptedNodes\":1") "," WINDOW(",\"maxDisruptedNodes\":"
							   "2") "]}") "," ND("nd", ON_TEST1 RETRY)),
	    "nd", NULL, MON_NOON);
	expect_fits_later(&r, POL_GATE_PENDING, "is outside its maintenance windows");
	assert_true(r.d.only_windows);
	done(&r);
	/* A window without a limit of its own applies the budget's own, which allows it. */
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"windows\":[" WINDOW(
					   "") "]}") "," ND("nd", ON_TEST1 RETRY)),
		   "nd", NULL, MON_NOON);
	expect_fits_later(&r, POL_GATE_PENDING, "is outside its maintenance windows");
	done(&r);
	/* UseDefault: the budget's own limit applies outside; the larger one is named. */
	r = decide(cluster(NDB("pool", ON_TEST1
			       ",\"maxDisruptedNodes\":1,\"outsideWindows\":"
			       "\"UseDefault\",\"windows\":[" WINDOW(
				   ",\"maxDisruptedNodes\":0") "]}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, MON_23H30);
	expect_never(&r, POL_GATE_REJECT,
		     "needs 2 nodes of NodeDisruptionBudget pool, which allows at most 1: raise "
		     "maxDisruptedNodes to 2 or split the request");
	done(&r);
	r = decide(
	    cluster(NDB("pool", ON_TEST1
			",\"maxDisruptedNodes\":1,\"outsideWindows\":"
			"\"UseDefault\",\"windows\":[" WINDOW(
			    ",\"maxDisruptedNodes\":\"100%\"") "]}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, MON_NOON);
	expect_fits_later(&r, POL_GATE_REJECT, "0 of 1 in use; this request adds 2");
	done(&r);
}

/* A frozen or unreadable budget holds the request back until someone changes it: not "never". */
static void test_L06_frozen_and_invalid_budgets_are_not_unsatisfiable(void **state)
{
	(void)state;
	struct result r =
	    decide(cluster(NDB("pool", ON_TEST1
			       ",\"maxDisruptedNodes\":0,\"freeze\":{\"enabled\":"
			       "true,\"reason\":\"upgrade\"}}") "," ND("nd", ON_TEST1 RETRY)),
		   "nd", NULL, NOW_WALL_MS);
	expect_fits_later(&r, POL_GATE_PENDING, "is frozen: upgrade");
	done(&r);
	r = decide(cluster(NDB("pool", ON_TEST1
			       ",\"maxDisruptedNodes\":\"150%\"}") "," ND("nd", ON_TEST1 RETRY)),
		   "nd", NULL, NOW_WALL_MS);
	expect_fits_later(&r, POL_GATE_PENDING, "is invalid");
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_L06_ndb_over_by_one),
	    cmocka_unit_test(test_L06_a_full_budget_is_not_unsatisfiable),
	    cmocka_unit_test(test_L06_adb),
	    cmocka_unit_test(test_L06_percentage_and_minimum),
	    cmocka_unit_test(test_L06_topology),
	    cmocka_unit_test(test_L06_windows),
	    cmocka_unit_test(test_L06_frozen_and_invalid_budgets_are_not_unsatisfiable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
