/* pol_budget_now(): a budget's limit in force at an instant (its windows open or closed, Deny or
 * UseDefault), the next opening across a day boundary and in another time zone, and the
 * Granted requests holding its nodes. */
#include "tests/unit/policy-gate-fixture.h"

/* Weekdays 22:00-06:00 in Paris (UTC+1 in winter), limit 2 while open. Monday 2026-11-30. */
#define WEEKNIGHTS(limit)                                                                          \
	"\"windows\":[{\"schedule\":\"0 22 * * 1-5\",\"duration\":\"8h\","                         \
	"\"timeZone\":\"Europe/Paris\"" limit "}]"
static const int64_t MON_NOON = 1796036400000;     /* 2026-11-30T11:00:00Z, 12:00 in Paris */
static const int64_t MON_22H = 1796072400000;      /* 21:00Z: the window opens */
static const int64_t MON_23H30 = 1796077800000;    /* 22:30Z */
static const int64_t TUE_06H = 1796101200000;      /* 05:00Z: it closes */
static const int64_t SAT_NOON = 1796468400000;     /* 2026-12-05T11:00:00Z */
static const int64_t NEXT_MON_22H = 1796677200000; /* 2026-12-07T21:00:00Z */

/* Budget @kind number 0 of @s at @now, with the grants the snapshot shows. */
static struct pol_budget_now now_of(struct kube_snapshot *s, enum kube_resource kind, int64_t now,
				    struct ng_arena *a)
{
	struct pol_ledger *l = pol_ledger_create(s);
	assert_non_null(l);
	struct pol_budget_now bn;
	memset(&bn, 0xad, sizeof(bn));
	assert_int_equal(pol_budget_now(s, l, kind, 0, now, a, &bn), NG_OK);
	/* The status computes the same numbers. */
	struct pol_budget_status bs;
	assert_int_equal(pol_budget_status(s, l, kind, 0, now, a, &bs), NG_OK);
	assert_int_equal(bs.allowed, bn.allowed);
	assert_int_equal(bs.current, bn.in_use);
	assert_int_equal(bs.now.limit_now, bn.limit_now);
	pol_ledger_destroy(l);
	return bn;
}

static void test_O40_window_open_closed_deny(void **state)
{
	(void)state;
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct kube_snapshot *s = cluster(
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1," WEEKNIGHTS(
			    ",\"maxDisruptedNodes\":2") "}") "," GRANTED("held", "[\"node2\"]"));
	/* Outside: Deny allows nothing; the window opens at 22:00 Paris. */
	struct pol_budget_now n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_true(n.has_windows);
	assert_false(n.window_open);
	assert_int_equal(n.window, -1);
	assert_int_equal(n.limit_now, 0);
	assert_int_equal(n.allowed, 0);
	assert_int_equal(n.in_use, 1);
	assert_int_equal(n.watched, 2);
	assert_int_equal(n.next_opens_wall_ms, MON_22H);
	assert_int_equal(n.closes_wall_ms, -1);
	assert_int_equal(n.edge_wall_ms, MON_22H);
	/* Inside: the window's own limit, 2, of which "held" uses 1. */
	n = now_of(s, KUBE_RES_NDBS, MON_22H, a);
	assert_true(n.window_open);
	assert_int_equal(n.window, 0);
	assert_int_equal(n.limit_now, 2);
	assert_int_equal(n.allowed, 1);
	assert_int_equal(n.closes_wall_ms, TUE_06H);
	assert_int_equal(n.next_opens_wall_ms, -1);
	assert_int_equal(n.edge_wall_ms, TUE_06H);
	n = now_of(s, KUBE_RES_NDBS, MON_23H30, a);
	assert_int_equal(n.limit_now, 2);
	/* Closed as it ends; the next opening is the next evening. */
	n = now_of(s, KUBE_RES_NDBS, TUE_06H, a);
	assert_false(n.window_open);
	assert_int_equal(n.limit_now, 0);
	assert_int_equal(n.next_opens_wall_ms, MON_22H + 86400000);
	kube_snapshot_release(s);
	ng_arena_destroy(a);
}

static void test_O41_outside_with_use_default_and_without_windows(void **state)
{
	(void)state;
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct kube_snapshot *s = cluster(
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"outsideWindows\":"
				 "\"UseDefault\"," WEEKNIGHTS(",\"maxDisruptedNodes\":2") "}"));
	struct pol_budget_now n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_false(n.window_open);
	assert_int_equal(n.limit_now, 1); /* the budget's own */
	assert_int_equal(n.allowed, 1);
	assert_int_equal(n.next_opens_wall_ms, MON_22H);
	kube_snapshot_release(s);
	/* Without windows: the budget's own limits, no window fields, no edge. */
	s = cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":\"50%\"}"));
	n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_false(n.has_windows);
	assert_int_equal(n.window, -1);
	assert_int_equal(n.edge_wall_ms, -1);
	assert_int_equal(n.limit_now, 1);
	kube_snapshot_release(s);
	/* Only a minimum: no maximum in force. */
	s = cluster(NDB("pool", ON_TEST1 ",\"minUndisruptedNodes\":1}"));
	n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_int_equal(n.limit_now, -1);
	assert_int_equal(n.allowed, 1);
	kube_snapshot_release(s);
	ng_arena_destroy(a);
}

static void test_O42_next_opening_across_days_and_zones(void **state)
{
	(void)state;
	struct ng_arena *a = ng_arena_create(1u << 20);
	/* Saturday: weekdays only, so the next opening is Monday evening, two days on. */
	struct kube_snapshot *s =
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1," WEEKNIGHTS("") "}"));
	struct pol_budget_now n = now_of(s, KUBE_RES_NDBS, SAT_NOON, a);
	assert_int_equal(n.next_opens_wall_ms, NEXT_MON_22H);
	kube_snapshot_release(s);
	/* 01:00 in Tokyo (UTC+9) is 16:00Z the day before: at 12:00Z (21:00 Tokyo) it is the
	 * next Tokyo day's opening, the same UTC day. */
	s = cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":"
					 "\"0 1 * * *\",\"duration\":\"2h\",\"timeZone\":"
					 "\"Asia/Tokyo\"}]}"));
	n = now_of(s, KUBE_RES_NDBS, MON_NOON + 3600000, a);
	assert_false(n.window_open);
	assert_int_equal(n.next_opens_wall_ms, MON_NOON + 5 * 3600000); /* 16:00Z */
	n = now_of(s, KUBE_RES_NDBS, MON_NOON + 5 * 3600000 + 60000, a);
	assert_true(n.window_open);
	assert_int_equal(n.closes_wall_ms, MON_NOON + 7 * 3600000);
	assert_int_equal(n.limit_now, 1);
	kube_snapshot_release(s);
	ng_arena_destroy(a);
}

/* The Granted requests holding a budget's nodes, sorted by name, each once, found from the held
 * nodes (fewer than the scope) or from the scope (fewer than the held nodes). */
static void test_O43_holders_by_name(void **state)
{
	(void)state;
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct kube_snapshot *s = cluster(ADB(
	    "db", "{\"podSelector\":{\"matchLabels\":{\"app\":"
		  "\"db\"}},\"maxDisruptions\":1}") "," GRANTED("auto-db-3",
								"[\"node1\"]") "," GRANTED("other",
											   "[\"node"
											   "3\"]"));
	struct pol_budget_now n = now_of(s, KUBE_RES_ADBS, MON_NOON, a);
	assert_int_equal(n.in_use, 1);
	assert_int_equal(n.limit_now, 1);
	assert_int_equal(n.allowed, 0);
	assert_int_equal(n.nholders, 1);
	assert_int_equal(n.holders[0], ng_test_id(s, "auto-db-3"));
	kube_snapshot_release(s);
	/* One held node, fewer than the pool's two: found from the held nodes. */
	s = cluster(
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2}") "," GRANTED("alpha", "[\"node2\"]"));
	n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_int_equal(n.in_use, 1);
	assert_int_equal(n.nholders, 1);
	assert_int_equal(n.holders[0], ng_test_id(s, "alpha"));
	kube_snapshot_release(s);
	/* Five held nodes (two without a Node record), more than the pool: found from it. */
	s = cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2}") "," GRANTED(
	    "zeta",
	    "[\"node1\"]") "," GRANTED("alpha",
				       "[\"node2\"]") "," GRANTED("mid",
								  "[\"node3\"]") "," GRANTED("gone",
											     "[\"no"
											     "deX\""
											     ",\"no"
											     "deY\""
											     "]"));
	n = now_of(s, KUBE_RES_NDBS, MON_NOON, a);
	assert_int_equal(n.in_use, 2);
	assert_int_equal(n.allowed, 0);
	assert_int_equal(n.nholders, 2);
	assert_int_equal(n.holders[0], ng_test_id(s, "alpha"));
	assert_int_equal(n.holders[1], ng_test_id(s, "zeta"));
	kube_snapshot_release(s);
	ng_arena_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_O40_window_open_closed_deny),
	    cmocka_unit_test(test_O41_outside_with_use_default_and_without_windows),
	    cmocka_unit_test(test_O42_next_opening_across_days_and_zones),
	    cmocka_unit_test(test_O43_holders_by_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
