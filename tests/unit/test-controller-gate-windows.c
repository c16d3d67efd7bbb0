/* The gate's budget status follows the window in force: written as a window opens or closes
 * (the edge folded into the gate's wake time), and not written again while nothing changes. So
 * do exclusions and pacing (the next grant, soaking nodes); a paced grant's lastGrantAt is
 * written before the grant. */
#include "tests/unit/controller-gate-fixture.h"
#include "tests/support/objects.h"

#include <string.h>

/* Weekdays 22:00-06:00 in Paris (UTC+1 in winter), limit 2 while open, none outside (Deny).
 * Monday 2026-11-30. */
#define POOL                                                                                       \
	NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":\"0 22 * * "     \
			     "1-5\",\"duration\":\"8h\",\"timeZone\":\"Europe/Paris\","            \
			     "\"maxDisruptedNodes\":2}]}")
static const int64_t MON_NOON = 1796036400000; /* 2026-11-30T11:00:00Z */
static const int64_t MON_22H = 1796072400000;  /* 21:00Z: the window opens */
static const int64_t TUE_06H = 1796101200000;  /* 05:00Z: it closes */

static const char *status_body(struct fx *fx)
{
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptionbudgets/pool/status", 0);
	return q ? q->body : NULL;
}

static void round_at(struct fx *fx, struct kube_snapshot *s, bool changed, int64_t now)
{
	fake_api_clear(&fx->api);
	gate_round(fx->g, s, changed, now);
}

static void test_O44_budget_status_flips_at_each_window_edge(void **state)
{
	struct fx *fx = *state;
	struct kube_snapshot *s = ng_test_cluster_f(POOL "," GRANTED("held", "[\"node2\"]"));
	/* Closed: nothing may start, and the status says when the window opens. */
	round_at(fx, s, true, MON_NOON);
	const char *b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"currentDisruptions\":1,\"disruptionsAllowed\":0,"
				  "\"maxDisruptedNodesNow\":0,\"window\":{\"open\":false,"
				  "\"state\":\"Closed\",\"index\":null,\"closesAt\":null,"
				  "\"nextOpensAt\":\"2026-11-30T21:00:00.000Z\"}"));
	/* The gate wakes at the opening, not before. */
	assert_int_equal(fx->g->budgets_edge_wall_ms, MON_22H);
	round_at(fx, s, false, MON_22H - 1000);
	assert_null(status_body(fx));
	/* Open: the window's limit, 2, of which one is used. */
	round_at(fx, s, false, MON_22H);
	b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b,
			       "\"disruptionsAllowed\":1,\"maxDisruptedNodesNow\":2,"
			       "\"window\":{\"open\":true,\"state\":\"Open\",\"index\":0,"
			       "\"closesAt\":\"2026-12-01T05:00:00.000Z\",\"nextOpensAt\":null}"));
	assert_int_equal(fx->g->budgets_edge_wall_ms, TUE_06H);
	/* Nothing changes until it closes: not written again. */
	round_at(fx, s, true, MON_22H + 1000);
	assert_null(status_body(fx));
	round_at(fx, s, false, TUE_06H);
	b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"disruptionsAllowed\":0,\"maxDisruptedNodesNow\":0"));
	kube_snapshot_release(s);
}

/* A budget without windows writes none, and clears what an earlier version had. */
static void test_O45_no_windows_no_window_status(void **state)
{
	struct fx *fx = *state;
	struct kube_snapshot *s =
	    ng_test_cluster_f(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":\"50%\"}"));
	round_at(fx, s, true, MON_NOON);
	const char *b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"maxDisruptedNodesNow\":1,\"window\":null"));
	assert_int_equal(fx->g->budgets_edge_wall_ms, 0);
	kube_snapshot_release(s);
}

/* An exclusion: nothing allowed while it is in force, the status says until when and why, and
 * it is written again as the exclusion ends. */
static void test_O46_budget_status_shows_an_exclusion_until_it_ends(void **state)
{
	struct fx *fx = *state;
	struct kube_snapshot *s = ng_test_cluster_f(
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"exclusions\":[{\"start\":"
				 "\"2026-11-30T10:00:00Z\",\"end\":\"2026-11-30T12:00:00Z\","
				 "\"reason\":\"sales week\"}]}"));
	round_at(fx, s, true, MON_NOON - 1800000);
	const char *b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"disruptionsAllowed\":0,\"maxDisruptedNodesNow\":1,"
				  "\"window\":null,\"exclusion\":{\"until\":"
				  "\"2026-11-30T12:00:00.000Z\",\"reason\":\"sales week\"}"));
	assert_int_equal(fx->g->budgets_edge_wall_ms, MON_NOON + 3600000);
	round_at(fx, s, false, MON_NOON + 3600000);
	b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"disruptionsAllowed\":1,\"maxDisruptedNodesNow\":1,"
				  "\"window\":null,\"exclusion\":null"));
	assert_int_equal(fx->g->budgets_edge_wall_ms, 0);
	kube_snapshot_release(s);
}

/* The index of the first recorded request @method @path (containing it), SIZE_MAX none. */
static size_t req_at(struct fx *fx, const char *method, const char *path)
{
	for (size_t i = 0; i < fx->api.nreqs; i++)
		if (strcmp(fx->api.reqs[i].method, method) == 0 &&
		    strstr(fx->api.reqs[i].path, path))
			return i;
	return SIZE_MAX;
}

#define PACED NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2,\"minIntervalSeconds\":600}")

/* A paced pool: the gate writes status.lastGrantAt before the grant it paces, the second
 * request of the round waits for the interval, and the budget's status says until when (the
 * gate wakes then). */
static void test_O47_a_paced_grant_writes_last_grant_first(void **state)
{
	struct fx *fx = *state;
	struct kube_snapshot *s = ng_test_cluster_f(PACED "," ND(
	    "a", "{\"nodeNames\":[\"node1\"]}") "," ND("b", "{\"nodeNames\":[\"node2\"]}"));
	round_at(fx, s, true, MON_NOON);
	size_t last = req_at(fx, "PATCH", "/nodedisruptionbudgets/pool/status");
	size_t grant = req_at(fx, "PATCH", "/nodedisruptions/a/status");
	assert_true(last != SIZE_MAX && grant != SIZE_MAX && last < grant);
	assert_string_equal(fx->api.reqs[last].body,
			    "{\"status\":{\"lastGrantAt\":\"2026-11-30T11:00:00.000Z\"}}");
	assert_non_null(strstr(fx->api.reqs[grant].body, "Granted"));
	const struct fake_api_request *b =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/b/status", 0);
	assert_non_null(b);
	assert_non_null(strstr(b->body, "NodeDisruptionBudget pool: paced, next grant at "
					"2026-11-30T11:10:00.000Z (minIntervalSeconds 600)"));
	/* The budget's own status: nothing more allowed until then, and the gate wakes then. */
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptionbudgets/pool/status", 1);
	assert_non_null(st);
	assert_non_null(strstr(st->body, "\"disruptionsAllowed\":0,"));
	assert_non_null(strstr(st->body, "\"nextGrantAt\":\"2026-11-30T11:10:00.000Z\""));
	assert_int_equal(fx->g->budgets_edge_wall_ms, MON_NOON + 600000);
	kube_snapshot_release(s);
}

/* No lastGrantAt written, no grant: a crash after an unrecorded grant could shorten the
 * interval. */
static void test_O48_no_last_grant_no_grant(void **state)
{
	struct fx *fx = *state;
	const struct fake_api_reply fail = {"nodedisruptionbudgets/pool/status", 500, NULL, false,
					    1};
	fake_api_reply(&fx->api, &fail);
	struct kube_snapshot *s =
	    ng_test_cluster_f(PACED "," ND("a", "{\"nodeNames\":[\"node1\"]}"));
	round_at(fx, s, true, MON_NOON);
	assert_true(req_at(fx, "PATCH", "/nodedisruptionbudgets/pool/status") != SIZE_MAX);
	assert_null(fake_api_find(&fx->api, "PATCH", "/nodedisruptions/a/status", 0));
	kube_snapshot_release(s);
}

/* A grant ends: the gate sees its node Ready and schedulable at once, so it soaks from then;
 * the budget's status lists it until its soak ends and a request for another node waits. */
static void test_O49_a_node_given_back_soaks_in_status(void **state)
{
	struct fx *fx = *state;
#define SOAKED NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"soakSeconds\":300}")
	struct kube_snapshot *s = ng_test_cluster_f(SOAKED "," GRANTED("held", "[\"node2\"]"));
	round_at(fx, s, true, MON_NOON);
	kube_snapshot_release(s);
	s = ng_test_cluster_f(SOAKED "," ND("nd", "{\"nodeNames\":[\"node1\"]}"));
	round_at(fx, s, true, MON_NOON + 1000);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/nd/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "1 soaking (soakSeconds), the first until "
					"2026-11-30T11:05:01.000Z"));
	const char *b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"currentDisruptions\":1,\"disruptionsAllowed\":0,"));
	assert_non_null(strstr(b, "\"soakingNodes\":[{\"name\":\"node2\",\"until\":"
				  "\"2026-11-30T11:05:01.000Z\"}]"));
	assert_int_equal(fx->g->budgets_edge_wall_ms, MON_NOON + 301000);
	/* At its end, written again without it. */
	round_at(fx, s, false, MON_NOON + 301000);
	b = status_body(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"soakingNodes\":[]"));
	kube_snapshot_release(s);
#undef SOAKED
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_O44_budget_status_flips_at_each_window_edge, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_O45_no_windows_no_window_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_O46_budget_status_shows_an_exclusion_until_it_ends,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_O47_a_paced_grant_writes_last_grant_first, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_O48_no_last_grant_no_grant, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_O49_a_node_given_back_soaks_in_status, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
