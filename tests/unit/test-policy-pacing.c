/* policy/disruption and kube/decode_budget: pacing (soakSeconds, minIntervalSeconds). A paced
 * budget lets a request add its nodes only minIntervalSeconds after the last grant that did
 * (its status.lastGrantAt, its holders' grantedAt, or a grant of the same round), the request
 * waiting for the clock; a node soaking (Ready again less than soakSeconds ago, given back as the
 * gate saw it, or listed by the budget's status) counts as disrupted until its soak ends. Over
 * fixture F (policy-gate-fixture.h) and a node4 (testselect=test1) when a test adds it. */
#include "tests/unit/policy-gate-fixture.h"

#include "common/clock.h"

#define ON_NODE1 "{\"nodeNames\":[\"node1\"]}"
#define ON_NODE2 "{\"nodeNames\":[\"node2\"]}"
/* NOW_WALL_MS is 2026-11-18T11:06:40Z; these are NOW - 60 s and NOW - 5 min. */
#define MINUTE_AGO "2026-11-18T11:05:40Z"
#define FIVE_MINUTES_AGO "2026-11-18T11:01:40Z"
/* A fourth node of the pool, Ready since @since. */
#define NODE4(since)                                                                               \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node4\",\"labels\":{"   \
	"\"testselect\":\"test1\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"   \
	"\"True\",\"lastTransitionTime\":\"" since "\"}]}}"
#define NDB_STATUS(name, spec, status)                                                             \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                         \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec ",\"status\":" status "}"

/* Decides @nd against ledger @l (kept: a round of several decisions). */
static struct pol_gate_decision decide_in(struct kube_snapshot *s, struct pol_ledger *l,
					  const char *nd, int64_t now, struct ng_arena *arena)
{
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_gate_decision d;
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, find_nd(s, nd), now, arena, &d),
			 NG_OK);
	return d;
}

static void at(int64_t ms, char *out)
{
	ng_format_rfc3339_ms(ms, out);
}

static void test_an_interval_holds_back_what_adds_nodes_until_it_ends(void **state)
{
	(void)state;
	const char *objs =
	    NDB_STATUS("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"minIntervalSeconds\":600}",
		       "{\"lastGrantAt\":\"" MINUTE_AGO "\"}") "," ND("nd", ON_NODE1);
	struct result r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, NULL); /* no retry: waiting for the clock is no failure */
	char next[32], want[200];
	at(NOW_WALL_MS + 540000, next);
	(void)snprintf(
	    want, sizeof(want),
	    "NodeDisruptionBudget pool: paced, next grant at %s (minIntervalSeconds 600)", next);
	assert_string_equal(r.d.reason, want);
	assert_true(r.d.only_windows);
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + 540000);
	done(&r);
	/* At that instant, granted. */
	r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS + 540000);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	/* Without a last grant known, nothing to wait for. */
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"minIntervalSeconds\":"
						"600}") "," ND("nd", ON_NODE1)),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* A request still holding a pool node was granted a minute ago (status.grantedAt): the interval
 * runs from there even when the budget's status says nothing; a request for that same node adds
 * nothing and is not paced. */
static void test_a_holders_grant_time_starts_the_interval(void **state)
{
	(void)state;
	const char *objs =
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"minIntervalSeconds\":"
				 "600}") ","
					 "{\"kind\":\"NodeDisruption\","
					 "\"apiVersion\":\"nodegate.io/"
					 "v1alpha1\",\"metadata\":{"
					 "\"name\":\"held\"},\"spec\":{"
					 "\"nodeNames\":[\"node2\"]},\"status\":{"
					 "\"state\":"
					 "\"Granted\",\"disruptedNodes\":[\"node2\"]"
					 ",\"grantedAt\":\"" MINUTE_AGO
					 "\"}}," ND("nd", ON_NODE1) "," ND("same", ON_NODE2);
	struct result r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "paced, next grant at");
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + 540000);
	done(&r);
	r = decide(cluster(objs), "same", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* Two requests of one round: the first granted, the second paced by it, whatever the cache
 * says yet (the ledger dates the grant it records). An unpaced pool takes both. */
static void test_one_round_never_grants_twice_into_a_paced_pool(void **state)
{
	(void)state;
	for (int paced = 1; paced >= 0; paced--) {
		struct kube_snapshot *s = cluster(
		    paced ? NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"minIntervalSeconds\":"
						 "60}") "," ND("a", ON_NODE1) "," ND("b", ON_NODE2)
			  : NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2}") "," ND(
				"a", ON_NODE1) "," ND("b", ON_NODE2));
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct pol_ledger *l = pol_ledger_create(s);
		pol_ledger_set_now(l, NOW_WALL_MS);
		struct pol_gate_decision d = decide_in(s, l, "a", NOW_WALL_MS, arena);
		assert_int_equal(d.outcome, POL_GATE_GRANT);
		assert_true(d.nverdicts == 1 && d.verdicts[0].adds);
		assert_int_equal(pol_ledger_grant(l, ng_test_id(s, "a"), d.nodes, d.nnodes), NG_OK);
		d = decide_in(s, l, "b", NOW_WALL_MS, arena);
		if (paced) {
			assert_int_equal(d.outcome, POL_GATE_PENDING);
			assert_int_equal(d.wake_wall_ms, NOW_WALL_MS + 60000);
			assert_non_null(strstr(d.reason, "paced"));
			/* The budget's status says when, and allows nothing until then. */
			struct pol_budget_now now;
			assert_int_equal(
			    pol_budget_now(s, l, KUBE_RES_NDBS, 0, NOW_WALL_MS, arena, &now),
			    NG_OK);
			assert_int_equal(now.next_grant_wall_ms, NOW_WALL_MS + 60000);
			assert_int_equal(now.allowed, 0);
			assert_int_equal(now.edge_wall_ms, NOW_WALL_MS + 60000);
		} else {
			assert_int_equal(d.outcome, POL_GATE_GRANT);
		}
		pol_ledger_destroy(l);
		ng_arena_destroy(arena);
		kube_snapshot_release(s);
	}
}

/* node4 turned Ready a minute ago: with soakSeconds 300 it counts as disrupted for 4 more
 * minutes, so a one-node pool limit is full; the request waits for that instant. A request for
 * node4 itself adds nothing. Without soakSeconds, nothing soaks. */
static void test_a_node_ready_again_soaks(void **state)
{
	(void)state;
	const char *objs = NODE4(MINUTE_AGO) "," NDB(
	    "pool",
	    ON_TEST1 ",\"maxDisruptedNodes\":1,\"soakSeconds\":"
		     "300}") "," ND("nd", ON_NODE1) "," ND("n4", "{\"nodeNames\":[\"node4\"]}");
	struct result r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
	char until[32];
	at(NOW_WALL_MS + 240000, until);
	char want[200];
	(void)snprintf(want, sizeof(want), "1 soaking (soakSeconds), the first until %s", until);
	expect(&r, POL_GATE_PENDING, want);
	expect(&r, POL_GATE_PENDING, "NodeDisruptionBudget pool: 1 of 1 in use");
	assert_true(r.d.only_windows);
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + 240000);
	done(&r);
	r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS + 240000);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(cluster(objs), "n4", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(cluster(NODE4(MINUTE_AGO) "," NDB(
		       "pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND("nd", ON_NODE1)),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* What the gate saw: node2 given back 100 s ago soaks 200 s more; not back yet, it soaks until
 * it is (no instant to wait for: a request without retry is refused like any full budget). The
 * budget's status.soakingNodes says the same to a replica that saw nothing (a new leader). */
static void test_a_node_given_back_soaks(void **state)
{
	(void)state;
	const char *objs =
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"soakSeconds\":300}") "," ND("nd",
											 ON_NODE1);
	struct kube_snapshot *s = cluster(objs);
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct pol_ledger *l = pol_ledger_create(s);
	assert_int_equal(pol_ledger_given_back(l, ng_test_id(s, "node2"), NOW_WALL_MS - 100000),
			 NG_OK);
	struct pol_gate_decision d = decide_in(s, l, "nd", NOW_WALL_MS, arena);
	assert_int_equal(d.outcome, POL_GATE_PENDING);
	assert_int_equal(d.wake_wall_ms, NOW_WALL_MS + 200000);
	/* The budget's status lists it, and counts it. */
	struct pol_budget_status bs;
	assert_int_equal(pol_budget_status(s, l, KUBE_RES_NDBS, 0, NOW_WALL_MS, arena, &bs), NG_OK);
	assert_int_equal(bs.current, 1);
	assert_int_equal(bs.allowed, 0);
	assert_int_equal(bs.now.nsoaking_nodes, 1);
	assert_int_equal(bs.now.soaking_nodes[0].node, ng_test_id(s, "node2"));
	assert_int_equal(bs.now.soaking_nodes[0].until_ms, NOW_WALL_MS + 200000);
	assert_int_equal(bs.now.edge_wall_ms, NOW_WALL_MS + 200000);
	assert_int_equal(pol_ledger_given_back(l, ng_test_id(s, "node2"), KUBE_SOAK_NOT_BACK),
			 NG_OK);
	d = decide_in(s, l, "nd", NOW_WALL_MS, arena);
	assert_int_equal(d.outcome, POL_GATE_REJECT);
	assert_non_null(strstr(d.reason, "1 soaking (soakSeconds), the first until it is back"));
	pol_ledger_destroy(l);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);

	struct result r = decide(
	    cluster(NDB_STATUS("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"soakSeconds\":300}",
			       "{\"soakingNodes\":[{\"name\":\"node2\",\"until\":\"2026-11-18T11:"
			       "08:20Z\"}]}") "," ND("nd", ON_NODE1)),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "1 soaking");
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + 100000);
	done(&r);
}

/* Values out of range are refused naming the field; the budget then fails closed. */
static void test_pacing_that_does_not_read_is_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "\"soakSeconds\":-1",         "\"soakSeconds\":604801",    "\"soakSeconds\":\"1h\"",
	    "\"minIntervalSeconds\":1.5", "\"minIntervalSeconds\":-5",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char objs[1024];
		(void)snprintf(
		    objs, sizeof(objs),
		    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,%s}") "," ND("nd", ON_NODE1),
		    bad[i]);
		struct result r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_REJECT, "NodeDisruptionBudget pool is invalid: spec.");
		expect(&r, POL_GATE_REJECT,
		       "Seconds: expected an integer of seconds from 0 to "
		       "604800 (a week)");
		done(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_an_interval_holds_back_what_adds_nodes_until_it_ends),
	    cmocka_unit_test(test_a_holders_grant_time_starts_the_interval),
	    cmocka_unit_test(test_one_round_never_grants_twice_into_a_paced_pool),
	    cmocka_unit_test(test_a_node_ready_again_soaks),
	    cmocka_unit_test(test_a_node_given_back_soaks),
	    cmocka_unit_test(test_pacing_that_does_not_read_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
