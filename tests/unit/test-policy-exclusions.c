/* policy/disruption and kube/decode_budget: maintenance exclusions. A budget in one of its
 * exclusions lets no request add one of its nodes, a NodeGateConfig's hold every request; the
 * request waits for the clock (Pending, retry or not), its reason names the end and the reason,
 * and it is decided again at the end. Exclusions that overlap or touch end together; dates are
 * whole days on their zone's wall clock. Over fixture F (policy-gate-fixture.h). */
#include "tests/unit/policy-gate-fixture.h"

#include "policy/validate.h"

#define ON_NODE1 "{\"nodeNames\":[\"node1\"]}"
/* NOW_WALL_MS is 2026-11-18T11:06:40Z. */
static const int64_t NOV18 = 1795000000000;
static const int64_t NOV20 = 1795132800000; /* 2026-11-20T00:00:00Z */
static const int64_t NOV21 = 1795219200000; /* 2026-11-21T00:00:00Z */

static void test_a_budget_in_an_exclusion_holds_back_what_adds_its_nodes(void **state)
{
	(void)state;
	const char *objs = NDB(
	    "pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"exclusions\":[{"
			     "\"start\":\"2026-11-17T00:00:00Z\",\"end\":\"2026-11-20T00:00:00Z\","
			     "\"reason\":\"sales week\"}]}") "," ND("nd", ON_NODE1);
	struct result r = decide(cluster(objs), "nd", NULL, NOV18);
	expect(&r, POL_GATE_PENDING,
	       NULL); /* no retry asked: waiting for the clock is no failure */
	assert_string_equal(r.d.reason, "NodeDisruptionBudget pool is in a maintenance exclusion "
					"until 2026-11-20T00:00:00.000Z (sales week)");
	assert_true(r.d.only_windows);
	assert_int_equal(r.d.wake_wall_ms, NOV20);
	done(&r);
	/* At its end, granted. */
	r = decide(cluster(objs), "nd", NULL, NOV20);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	/* Before it, too. */
	r = decide(cluster(objs), "nd", NULL, NOV18 - 2 * 86400000);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

static void test_exclusions_that_overlap_end_together_and_dates_are_whole_days(void **state)
{
	(void)state;
	/* The first ends on the 19th (a date: the end of that day in Paris, 23:00Z), the second
	 * begins before that and ends at the start of the 21st UTC. Listed out of order. */
	const char *objs =
	    ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
		      "\"maxDisruptions\":1,"
		      "\"exclusions\":[{\"start\":\"2026-11-19T12:00:00Z\",\"end\":"
		      "\"2026-11-21T00:00:00Z\",\"reason\":\"freeze, part two\"},{\"start\":"
		      "\"2026-11-16\",\"end\":\"2026-11-19\",\"timeZone\":\"Europe/"
		      "Paris\"}]}") "," ND("nd", ON_NODE1);
	struct result r = decide(cluster(objs), "nd", NULL, NOV18);
	expect(&r, POL_GATE_PENDING, NULL);
	assert_string_equal(r.d.reason,
			    "ApplicationDisruptionBudget default/db is in a maintenance "
			    "exclusion until 2026-11-21T00:00:00.000Z (no reason given)");
	assert_int_equal(r.d.wake_wall_ms, NOV21);
	done(&r);
	/* In the second alone, its reason. */
	r = decide(cluster(objs), "nd", NULL, NOV20);
	expect(&r, POL_GATE_PENDING, "(freeze, part two)");
	done(&r);
	/* The Paris dates start at local midnight, 2026-11-15T23:00Z, not at 00:00Z. */
	const int64_t paris_start = NOV20 - 4 * 86400000 - 3600000;
	r = decide(cluster(objs), "nd", NULL, paris_start + 1800000);
	expect(&r, POL_GATE_PENDING, NULL);
	done(&r);
	r = decide(cluster(objs), "nd", NULL, paris_start - 1);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

static void test_a_nodegateconfig_exclusion_holds_every_request(void **state)
{
	(void)state;
	const char *objs =
	    NGC("{\"exclusions\":[{\"start\":\"2026-11-18T00:00:00Z\",\"end\":"
		"\"2026-11-20T00:00:00Z\",\"reason\":\"Black Friday\"}]}") "," ND("nd", ON_NODE1);
	struct result r = decide(cluster(objs), "nd", NULL, NOV18);
	expect(&r, POL_GATE_PENDING, NULL);
	assert_string_equal(r.d.reason, "maintenance excluded by NodeGateConfig until "
					"2026-11-20T00:00:00.000Z (Black Friday)");
	assert_true(r.d.only_windows);
	assert_int_equal(r.d.wake_wall_ms, NOV20);
	done(&r);
	r = decide(cluster(objs), "nd", NULL, NOV20);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* What does not read is refused, naming the field; the budget then fails closed. */
static void test_exclusions_that_do_not_read_are_refused(void **state)
{
	(void)state;
	static const struct {
		const char *excl, *msg;
	} bad[] = {
	    {"{\"start\":\"2026-11-20\",\"end\":\"2026-11-19\"}",
	     "spec.exclusions[0].end: must be after start"},
	    {"{\"start\":\"2026-11-20T00:00:00Z\",\"end\":\"2026-11-20T00:00:00Z\"}",
	     "spec.exclusions[0].end: must be after start"},
	    {"{\"start\":\"tomorrow\",\"end\":\"2026-11-19\"}",
	     "spec.exclusions[0].start: expected an RFC 3339 instant (2026-12-20T00:00:00Z) or a "
	     "date (2026-12-20)"},
	    {"{\"start\":\"2026-02-30\",\"end\":\"2026-03-02\"}",
	     "spec.exclusions[0].start: expected an RFC 3339 instant"},
	    {"{\"start\":\"2026-11-20\"}", "spec.exclusions[0].end: expected an RFC 3339 instant"},
	    {"{\"start\":\"2026-11-20\",\"end\":\"2026-11-21\",\"timeZone\":\"Mars/Olympus\"}",
	     "spec.exclusions[0].timeZone: "},
	    {"{\"start\":\"2026-11-20\",\"end\":\"2026-11-21\",\"reason\":7}",
	     "spec.exclusions[0].reason: expected text of at most 256 bytes"},
	    {"7", "spec.exclusions[0]: expected an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char spec[512];
		(void)snprintf(spec, sizeof(spec),
			       ON_TEST1 ",\"maxDisruptedNodes\":1,\"exclusions\":[%s]}",
			       bad[i].excl);
		char objs[1024];
		(void)snprintf(objs, sizeof(objs), NDB("pool", "%s") "," ND("nd", ON_NODE1), spec);
		struct result r = decide(cluster(objs), "nd", NULL, NOV18);
		expect(&r, POL_GATE_REJECT, "NodeDisruptionBudget pool is invalid");
		if (!strstr(r.d.reason, bad[i].msg))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].excl, r.d.reason,
				 bad[i].msg);
		done(&r);
	}
	/* At most 32. */
	char many[4096] = "";
	for (int i = 0; i < 33; i++)
		(void)snprintf(many + strlen(many), sizeof(many) - strlen(many),
			       "%s{\"start\":\"2026-11-%02d\",\"end\":\"2026-11-%02d\"}",
			       i ? "," : "", 1 + i % 28, 1 + i % 28);
	char objs[8192];
	(void)snprintf(objs, sizeof(objs),
		       NDB("pool", ON_TEST1
			   ",\"maxDisruptedNodes\":1,\"exclusions\":[%s]}") "," ND("nd", ON_NODE1),
		       many);
	struct result r = decide(cluster(objs), "nd", NULL, NOV18);
	expect(&r, POL_GATE_REJECT, "spec.exclusions: at most 32 exclusions (33 given)");
	done(&r);
	/* A NodeGateConfig that does not read pauses the gate. */
	r = decide(cluster(NGC("{\"exclusions\":[{\"start\":\"x\",\"end\":\"y\"}]}") "," ND(
		       "nd", ON_NODE1)),
		   "nd", NULL, NOV18);
	expect(&r, POL_GATE_PENDING, "paused by NodeGateConfig");
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_budget_in_an_exclusion_holds_back_what_adds_its_nodes),
	    cmocka_unit_test(test_exclusions_that_overlap_end_together_and_dates_are_whole_days),
	    cmocka_unit_test(test_a_nodegateconfig_exclusion_holds_every_request),
	    cmocka_unit_test(test_exclusions_that_do_not_read_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
