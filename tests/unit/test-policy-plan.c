/* policy/plan: the what-if planner (acceptance Q01): waves under a NodeDisruptionBudget, an
 * ApplicationDisruptionBudget and a topology limit, nodes never granted and why, a grant of
 * the snapshot holding capacity at the start, and the JSON document. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "policy/plan.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t START_WALL_MS = 1795000000000; /* 2026-11-18T11:06:40Z */
static const int64_t DRAIN_MS = 300000;

/* Node @i: labels zone=z(@i % 3) and pool=a. */
#define NODE(i, zone)                                                                              \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n" #i "\",\"labels\":{" \
	"\"zone\":\"z" #zone                                                                       \
	"\",\"pool\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","                     \
	"\"status\":\"True\"}]}}"
#define SIX_NODES                                                                                  \
	NODE(0, 0) "," NODE(1, 1) "," NODE(2, 2) "," NODE(3, 0) "," NODE(4, 1) "," NODE(5, 2)
#define LIST(items) "{\"kind\":\"List\",\"items\":[" items "]}"

struct run {
	struct kube_snapshot *s;
	struct ng_arena *arena;
	struct pol_plan_input in;
	struct pol_plan p;
};

/* Plans the nodes in @nodes (NULL-terminated) over the cluster @json. */
static struct run plan(const char *json, const char *const *nodes)
{
	struct run r = {.s = ng_test_snapshot(json), .arena = ng_arena_create(8u << 20)};
	size_t n = 0;
	while (nodes[n])
		n++;
	r.in = (struct pol_plan_input){.nodes = nodes,
				       .nnodes = n,
				       .start_wall_ms = START_WALL_MS,
				       .drain_ms = DRAIN_MS,
				       .type = "maintenance",
				       .requestor = "nodegate-plan"};
	assert_int_equal(pol_plan_run(r.s, &r.in, r.arena, &r.p), NG_OK);
	return r;
}

static void done(struct run *r)
{
	ng_arena_destroy(r->arena);
	kube_snapshot_release(r->s);
}

/* Wave @i starts @offset_ms after the start with exactly the nodes @names ("n0 n1"). */
static void expect_wave(const struct run *r, size_t i, int64_t offset_ms, const char *names)
{
	assert_true(i < r->p.nwaves);
	const struct pol_plan_wave *w = &r->p.waves[i];
	char got[256] = "";
	size_t len = 0;
	for (size_t k = 0; k < w->nnodes; k++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", k ? " " : "",
					ng_intern_str(kube_snapshot_pool(r->s), w->nodes[k], NULL));
	if (strcmp(got, names) != 0 || w->start_wall_ms != START_WALL_MS + offset_ms)
		fail_msg("wave %zu: got [%s] at +%lld ms, expected [%s] at +%lld ms", i + 1, got,
			 (long long)(w->start_wall_ms - START_WALL_MS), names,
			 (long long)offset_ms);
}

/* Wave @i's first limit is budget @name (of @kind) holding back @waiting requests. */
static void expect_limit(const struct run *r, size_t i, enum kube_resource kind, const char *name,
			 size_t waiting)
{
	const struct pol_plan_wave *w = &r->p.waves[i];
	assert_true(w->nlimits >= 1);
	assert_true(w->limits[0].budget);
	assert_int_equal(w->limits[0].kind, kind);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(r->s), w->limits[0].name, NULL), name);
	assert_int_equal(w->limits[0].waiting, waiting);
	assert_non_null(strstr(w->limits[0].reason, name));
}

static const char *const ALL6[] = {"n0", "n1", "n2", "n3", "n4", "n5", NULL};

static void test_Q01_ndb_of_two_over_six_nodes_makes_three_waves(void **state)
{
	(void)state;
	struct run r = plan(
	    LIST(SIX_NODES "," NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
					   "\"maxDisruptedNodes\":2}")),
	    ALL6);
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "n0 n1");
	expect_wave(&r, 1, DRAIN_MS, "n2 n3");
	expect_wave(&r, 2, 2 * DRAIN_MS, "n4 n5");
	expect_limit(&r, 0, KUBE_RES_NDBS, "pool", 4);
	expect_limit(&r, 1, KUBE_RES_NDBS, "pool", 2);
	assert_int_equal(r.p.waves[2].nlimits, 0);
	assert_int_equal(r.p.nplanned, 6);
	assert_int_equal(r.p.nnever, 0);
	assert_int_equal(r.p.end_wall_ms, START_WALL_MS + 3 * DRAIN_MS);
	done(&r);
}

/* Pacing: a paced pool's waves are spaced by its interval though its limit would take them at
 * once; with soakSeconds a node given back (at the end of its drain) holds its place in the
 * budget until its soak ends. */
static void test_Q06_pacing_spaces_waves(void **state)
{
	(void)state;
	static const char *const three[] = {"n0", "n1", "n2", NULL};
	struct run r = plan(
	    LIST(SIX_NODES "," NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
					   "\"maxDisruptedNodes\":3,\"minIntervalSeconds\":120}")),
	    three);
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "n0");
	expect_wave(&r, 1, 120000, "n1");
	expect_wave(&r, 2, 240000, "n2");
	assert_non_null(strstr(r.p.waves[0].limits[0].reason, "paced, next grant at"));
	done(&r);
	r = plan(
	    LIST(SIX_NODES "," NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
					   "\"maxDisruptedNodes\":1,\"soakSeconds\":60}")),
	    three);
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "n0");
	expect_wave(&r, 1, DRAIN_MS + 60000, "n1");
	expect_wave(&r, 2, 2 * (DRAIN_MS + 60000), "n2");
	done(&r);
}

static void test_Q01_adb_holds_its_application_nodes_apart(void **state)
{
	(void)state;
	/* app=db runs on n0, n1 and n2; its budget allows one of them at a time. */
	struct run r =
	    plan(LIST(SIX_NODES "," POD("db-0", "n0", "db") "," POD("db-1", "n1", "db") "," POD(
		     "db-2", "n2",
		     "db") "," ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
					 "\"maxDisruptions\":1}")),
		 (const char *const[]){"n0", "n1", "n2", "n3", NULL});
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "n0 n3");
	expect_wave(&r, 1, DRAIN_MS, "n1");
	expect_wave(&r, 2, 2 * DRAIN_MS, "n2");
	expect_limit(&r, 0, KUBE_RES_ADBS, "db", 2);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(r.s), r.p.waves[0].limits[0].ns, NULL),
			    "default");
	done(&r);
}

static void test_Q01_topology_limit_takes_one_zone_per_wave(void **state)
{
	(void)state;
	struct run r = plan(LIST(SIX_NODES "," NDB("zones", "{\"nodeSelector\":{},\"topologyKey\":"
							    "\"zone\",\"maxDisruptedDomains\":1}")),
			    ALL6);
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "n0 n3");
	expect_wave(&r, 1, DRAIN_MS, "n1 n4");
	expect_wave(&r, 2, 2 * DRAIN_MS, "n2 n5");
	expect_limit(&r, 0, KUBE_RES_NDBS, "zones", 4);
	done(&r);
}

/* Q04: a budget's maintenance window (daily 12:00-12:12 UTC, one node at a time): the clock
 * jumps to the opening, three 5-minute drains start inside the window, and the fourth waits
 * for the next day's; budgets whose windows never meet leave their node never granted, and the
 * plan still ends. */
static void test_Q04_waves_wait_for_maintenance_windows(void **state)
{
	(void)state;
	struct run r = plan(
	    LIST(SIX_NODES "," NDB("noon", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
					   "\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":"
					   "\"0 12 * * *\",\"duration\":\"12m\"}]}")),
	    (const char *const[]){"n0", "n1", "n2", "n3", NULL});
	const int64_t opens = 3200000; /* 12:00:00Z, from 11:06:40Z */
	assert_int_equal(r.p.nwaves, 4);
	expect_wave(&r, 0, opens, "n0");
	expect_wave(&r, 1, opens + DRAIN_MS, "n1");
	expect_wave(&r, 2, opens + 2 * DRAIN_MS, "n2");
	expect_wave(&r, 3, opens + 86400000, "n3");
	assert_int_equal(r.p.nnever, 0);
	done(&r);
	r = plan(
	    LIST(SIX_NODES "," NDB(
		"night", "{\"nodeSelector\":{\"matchLabels\":{\"zone\":\"z0\"}},"
			 "\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":\"0 1 * "
			 "* *\",\"duration\":\"1h\"}]}") "," NDB("morning", "{\"nodeSelector\":{"
									    "\"matchLabels\":{"
									    "\"zone\":\"z0\"}},"
									    "\"maxDisruptedNodes\":"
									    "1,\"windows\":[{"
									    "\"schedule\":\"0 5 "
									    "* * *\",\"duration\":"
									    "\"1h\"}]}")),
	    (const char *const[]){"n0", "n1", NULL});
	expect_wave(&r, 0, 0, "n1");
	assert_int_equal(r.p.nwaves, 1);
	assert_int_equal(r.p.nnever, 1);
	assert_string_equal(r.p.never[0].name, "n0");
	assert_non_null(strstr(r.p.never[0].reason, "outside its maintenance windows"));
	done(&r);
}

/* O32: the windows a picture of the plan shades: the open spans of the budget that held the
 * nodes back, from the start to the plan's end and cut there; a budget with windows over no
 * node of the plan is not listed. */
static void test_O32_plan_lists_the_open_spans_of_its_windows(void **state)
{
	(void)state;
	struct run r =
	    plan(LIST(SIX_NODES "," NDB(
		     "noon",
		     "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
		     "\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":"
		     "\"0 12 * * *\",\"duration\":\"12m\"}]}") "," NDB("elsewhere",
								       "{\"nodeSelector\":{"
								       "\"matchLabels\":{\"zone\":"
								       "\"z9\"}},"
								       "\"maxDisruptedNodes\":1,"
								       "\"windows\":[{\"schedule\":"
								       "\"0 1 * * *\","
								       "\"duration\":\"1h\"}]}")),
		 (const char *const[]){"n0", "n1", "n2", "n3", NULL});
	struct pol_plan_windows *w = NULL;
	size_t n = 9, more = 9;
	assert_int_equal(pol_plan_windows(r.s, &r.in, &r.p, r.arena, &w, &n, &more), NG_OK);
	assert_int_equal(n, 1);
	assert_int_equal(more, 0);
	assert_int_equal(w[0].kind, KUBE_RES_NDBS);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(r.s), w[0].name, NULL), "noon");
	assert_false(w[0].outside_use_default);
	const int64_t opens = START_WALL_MS + 3200000; /* 12:00:00Z */
	assert_int_equal(w[0].nspans, 2);
	assert_false(w[0].more_spans);
	assert_int_equal(w[0].spans[0].from_wall_ms, opens);
	assert_int_equal(w[0].spans[0].to_wall_ms, opens + 720000);
	/* The plan ends at the fourth drain's end, 5 minutes into the next day's window. */
	assert_int_equal(r.p.end_wall_ms, opens + 86400000 + DRAIN_MS);
	assert_int_equal(w[0].spans[1].from_wall_ms, opens + 86400000);
	assert_int_equal(w[0].spans[1].to_wall_ms, r.p.end_wall_ms);
	done(&r);
}

static void test_Q01_nodes_never_granted_say_why_and_the_plan_ends(void **state)
{
	(void)state;
	/* n4 is under a frozen budget, n5 under one that allows nothing, "ghost" is no node;
	 * names given twice count once. */
	struct run r = plan(
	    LIST(SIX_NODES "," NDB(
		"frozen",
		"{\"nodeSelector\":{\"matchLabels\":{\"zone\":\"z1\"}},"
		"\"maxDisruptedNodes\":5,\"freeze\":{\"enabled\":true,"
		"\"reason\":\"datacenter move\"}}") "," NDB("zero",
							    "{\"nodeSelector\":{\"matchLabels\":{"
							    "\"zone\":\"z2\"}},"
							    "\"maxDisruptedNodes\":0}")),
	    (const char *const[]){"ghost", "n0", "n3", "n4", "n5", "ghost", "n0", NULL});
	assert_int_equal(r.p.nwaves, 1);
	expect_wave(&r, 0, 0, "n0 n3");
	assert_int_equal(r.p.nplanned, 2);
	assert_int_equal(r.p.nnever, 3);
	assert_string_equal(r.p.never[0].name, "ghost");
	assert_true(r.p.never[0].rejected);
	assert_non_null(strstr(r.p.never[0].reason, "not a node"));
	assert_string_equal(r.p.never[1].name, "n4");
	assert_false(r.p.never[1].rejected);
	assert_non_null(strstr(r.p.never[1].reason, "datacenter move"));
	assert_false(r.p.never[1].unsatisfiable); /* a freeze ends */
	assert_string_equal(r.p.never[2].name, "n5");
	assert_non_null(strstr(r.p.never[2].reason, "zero"));
	assert_true(r.p.never[2].unsatisfiable); /* known at once */
	/* The plan ends with the last wave, not with the nodes that never go. */
	assert_int_equal(r.p.end_wall_ms, START_WALL_MS + DRAIN_MS);
	done(&r);
}

static void test_Q01_granted_request_holds_capacity_until_it_ends(void **state)
{
	(void)state;
	/* "old" holds n0 under a budget of 2: one slot is left at the start. Without a grant
	 * time or duration it holds for the drain time from the start. */
	struct run r =
	    plan(LIST(SIX_NODES "," NDB(
		     "pool",
		     "{\"nodeSelector\":{\"matchLabels\":{"
		     "\"pool\":\"a\"}},\"maxDisruptedNodes\":2}") "," GRANTED("old", "[\"n0\"]")),
		 (const char *const[]){"n1", "n2", "n3", NULL});
	assert_int_equal(r.p.held_at_start, 1);
	assert_int_equal(r.p.nwaves, 2);
	expect_wave(&r, 0, 0, "n1");
	expect_wave(&r, 1, DRAIN_MS, "n2 n3");
	expect_limit(&r, 0, KUBE_RES_NDBS, "pool", 2);
	assert_non_null(strstr(r.p.waves[0].limits[0].reason, "2 of 2 in use"));
	done(&r);
}

static void test_Q01_granted_request_ends_its_duration_after_its_grant(void **state)
{
	(void)state;
	/* "old" holds n5, the budget's one slot: granted 2 minutes before the start for 5
	 * minutes, it ends 3 minutes after the start, and the first wave starts then. */
	struct run r = plan(
	    LIST(SIX_NODES "," NDB(
		"pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
			"\"maxDisruptedNodes\":1}") ","
						    "{\"kind\":\"NodeDisruption\",\"apiVersion\":"
						    "\"nodegate.io/v1alpha1\","
						    "\"metadata\":{\"name\":\"old\"},\"spec\":{"
						    "\"nodeNames\":[\"n5\"],"
						    "\"duration\":\"5m\"},\"status\":{\"state\":"
						    "\"Granted\","
						    "\"disruptedNodes\":[\"n5\"],\"grantedAt\":"
						    "\"2026-11-18T11:04:40Z\"}}"),
	    (const char *const[]){"n0", "n1", NULL});
	assert_int_equal(r.p.held_at_start, 1);
	assert_int_equal(r.p.nwaves, 2);
	expect_wave(&r, 0, 180000, "n0");
	expect_wave(&r, 1, 180000 + DRAIN_MS, "n1");
	assert_int_equal(r.p.end_wall_ms, START_WALL_MS + 180000 + 2 * DRAIN_MS);
	done(&r);
}

static void test_Q01_granted_request_ends_at_its_deadline_when_sooner(void **state)
{
	(void)state;
	/* "old" would hold n5 for 5 minutes, but its 2-minute deadline from its grant, 2 minutes
	 * before the start, has passed: the gate ends it, so the first wave starts at once. */
	struct run r = plan(
	    LIST(SIX_NODES "," NDB(
		"pool",
		"{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
		"\"maxDisruptedNodes\":1}") ","
					    "{\"kind\":\"NodeDisruption\",\"apiVersion\":"
					    "\"nodegate.io/v1alpha1\",\"metadata\":"
					    "{\"name\":\"old\"},\"spec\":{\"nodeNames\":[\"n5\"],"
					    "\"duration\":\"5m\","
					    "\"activeDeadlineSeconds\":120},\"status\":{\"state\":"
					    "\"Granted\",\"disruptedNodes\":"
					    "[\"n5\"],\"grantedAt\":\"2026-11-18T11:04:40Z\"}}"),
	    (const char *const[]){"n0", NULL});
	assert_int_equal(r.p.held_at_start, 1);
	assert_int_equal(r.p.nwaves, 1);
	expect_wave(&r, 0, 0, "n0");
	done(&r);
}

/* A Running, Ready pod of app=cache on @node. */
#define CACHE_POD(name, node)                                                                      \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                   \
	"\",\"namespace\":\"default\",\"labels\":{\"app\":\"cache\"}},\"spec\":{\"nodeName\":"     \
	"\"" node "\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","     \
	"\"status\":\"True\"}]}}"

static void test_Q01_pod_disruption_budget_holds_nodes_apart_when_respected(void **state)
{
	(void)state;
	struct run r = plan(
	    LIST(SIX_NODES "," NGC("{\"respectPodDisruptionBudgets\":true}") "," CACHE_POD(
		"cache-0", "n0") "," CACHE_POD("cache-1",
					       "n1") ","
						     "{\"kind\":\"PodDisruptionBudget\","
						     "\"apiVersion\":\"policy/v1\","
						     "\"metadata\":{\"name\":\"cache\","
						     "\"namespace\":\"default\"},"
						     "\"spec\":{\"minAvailable\":1,\"selector\":{"
						     "\"matchLabels\":{"
						     "\"app\":\"cache\"}}},\"status\":{"
						     "\"observedGeneration\":1,"
						     "\"disruptionsAllowed\":1,\"currentHealthy\":"
						     "2,\"desiredHealthy\":1,"
						     "\"expectedPods\":2}}"),
	    (const char *const[]){"n0", "n1", NULL});
	assert_int_equal(r.p.nwaves, 2);
	expect_wave(&r, 0, 0, "n0");
	expect_wave(&r, 1, DRAIN_MS, "n1");
	expect_limit(&r, 0, KUBE_RES_PDBS, "cache", 1);
	done(&r);
}

static void test_Q01_control_plane_nodes_go_one_at_a_time_first(void **state)
{
	(void)state;
	struct run r =
	    plan(LIST("{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cp1\","
		      "\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}}}, "
		      "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cp2\","
		      "\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}}}," SIX_NODES),
		 (const char *const[]){"n0", "cp1", "cp2", "n1", NULL});
	assert_int_equal(r.p.nwaves, 3);
	expect_wave(&r, 0, 0, "cp1");
	expect_wave(&r, 1, DRAIN_MS, "cp2");
	expect_wave(&r, 2, 2 * DRAIN_MS, "n0 n1");
	assert_true(r.p.waves[0].nlimits >= 1);
	assert_false(r.p.waves[0].limits[0].budget); /* the control-plane rule, not a budget */
	done(&r);
}

static void test_Q01_type_not_allowed_is_rejected_at_once(void **state)
{
	(void)state;
	struct run r = plan(LIST(SIX_NODES "," NGC("{\"allowedTypes\":[\"reboot\"]}")),
			    (const char *const[]){"n0", NULL});
	assert_int_equal(r.p.nwaves, 0);
	assert_int_equal(r.p.nnever, 1);
	assert_true(r.p.never[0].rejected);
	assert_non_null(strstr(r.p.never[0].reason, "not an allowed disruption type"));
	assert_int_equal(r.p.end_wall_ms, START_WALL_MS);
	done(&r);
}

static void test_Q01_wave_cap_lists_the_nodes_not_planned(void **state)
{
	(void)state;
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct kube_snapshot *s = ng_test_snapshot(LIST(SIX_NODES "," NDB(
	    "pool",
	    "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},\"maxDisruptedNodes\":2}")));
	struct pol_plan_input in = {.nodes = ALL6,
				    .nnodes = 6,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = DRAIN_MS,
				    .max_waves = 2};
	struct pol_plan p;
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_OK);
	assert_true(p.truncated);
	assert_int_equal(p.nwaves, 2);
	assert_int_equal(p.nplanned, 4);
	assert_int_equal(p.nunplanned, 2);
	assert_string_equal(p.unplanned[0], "n4");
	assert_string_equal(p.unplanned[1], "n5");
	assert_int_equal(p.nnever, 0);
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_plan_json(s, &in, &p, &b), NG_OK);
	assert_non_null(strstr(b.data, "\"notPlanned\":[\"n4\",\"n5\"]"));
	assert_non_null(strstr(b.data, "\"truncated\":true,\"stoppedBy\":\"waves\""));
	ng_buf_finish(&b);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* Finding 5 of the hostile review: 100 nodes under a budget of one at a time whose window opens
 * every other minute, each held 30 days. Before window edges that free nothing were skipped,
 * every edge before each release (43,200 of them) was a round of 99 decisions: hours of work.
 * The budget has failed every waiting request both inside its window (1 of 1 in use) and
 * outside it (closed) by the second edge, so the clock goes to the next release instead. */
#define POOL_NODES 100
static const int64_t MONTH_MS = 2592000000;

static struct kube_snapshot *windowed_pool(const char ***ret_names)
{
	static char names[POOL_NODES][8];
	static const char *v[POOL_NODES + 1];
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(ng_buf_puts(&b, "{\"kind\":\"List\",\"items\":["), NG_OK);
	for (int i = 0; i < POOL_NODES; i++) {
		(void)snprintf(names[i], sizeof(names[i]), "n%03d", i);
		v[i] = names[i];
		assert_int_equal(
		    ng_buf_printf(&b,
				  "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":"
				  "{\"name\":\"%s\",\"labels\":{\"pool\":\"a\"}},"
				  "\"status\":{\"conditions\":[{\"type\":\"Ready\","
				  "\"status\":\"True\"}]}},",
				  names[i]),
		    NG_OK);
	}
	v[POOL_NODES] = NULL;
	assert_int_equal(
	    ng_buf_puts(&b,
			NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
				    "\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":\"*/2 * "
				    "* * *\",\"duration\":\"1m\"}]}") "]}"),
	    NG_OK);
	struct kube_snapshot *s = ng_test_snapshot(b.data);
	ng_buf_finish(&b);
	*ret_names = v;
	return s;
}

static void test_Q05_window_edges_that_free_nothing_are_skipped(void **state)
{
	(void)state;
	const char **names;
	struct kube_snapshot *s = windowed_pool(&names);
	struct ng_arena *arena = ng_arena_create(8u << 20);
	struct pol_plan_input in = {.nodes = names,
				    .nnodes = POOL_NODES,
				    .start_wall_ms =
					START_WALL_MS, /* 11:06:40Z: the window is open */
				    .drain_ms = MONTH_MS,
				    .max_rounds = 1000};
	struct pol_plan p;
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_OK);
	if (p.truncated)
		fail_msg("stopped by %s after %zu rounds, %zu decisions",
			 pol_plan_stop_str(p.stopped), p.rounds, p.decisions);
	assert_int_equal(p.nwaves, POOL_NODES);
	assert_int_equal(p.nplanned, POOL_NODES);
	/* Each wave at a release, in the window (releases come at the same minute parity). */
	assert_int_equal(p.waves[1].start_wall_ms, START_WALL_MS + MONTH_MS);
	assert_int_equal(p.end_wall_ms, START_WALL_MS + POOL_NODES * MONTH_MS);
	/* A round at each release and one at the window's closing after it. */
	assert_true(p.rounds <= 2 * POOL_NODES + 2);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* The caps: a plan stopped by its rounds cap says so, where on the simulated clock, and lists
 * the nodes it did not reach. */
static void test_Q05_rounds_cap_truncates_and_says_where(void **state)
{
	(void)state;
	const char **names;
	struct kube_snapshot *s = windowed_pool(&names);
	struct ng_arena *arena = ng_arena_create(8u << 20);
	struct pol_plan_input in = {.nodes = names,
				    .nnodes = POOL_NODES,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = MONTH_MS,
				    .type = "maintenance",
				    .requestor = "nodegate-plan",
				    .max_rounds = 5};
	struct pol_plan p;
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_OK);
	assert_true(p.truncated);
	assert_int_equal(p.stopped, POL_PLAN_STOP_ROUNDS);
	assert_int_equal(p.rounds, 5);
	assert_true(p.nwaves >= 2);
	assert_int_equal(p.nplanned + p.nunplanned, POOL_NODES);
	assert_true(p.stopped_wall_ms > START_WALL_MS);
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_plan_json(s, &in, &p, &b), NG_OK);
	assert_non_null(
	    strstr(b.data, "\"truncated\":true,\"stoppedBy\":\"rounds\",\"stoppedAt\":\""));
	ng_buf_finish(&b);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* The decisions cap stops in the middle of a round: its grants so far are the last wave. */
static void test_Q05_decisions_cap_stops_mid_round(void **state)
{
	(void)state;
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct kube_snapshot *s = ng_test_snapshot(LIST(SIX_NODES "," NDB(
	    "pool",
	    "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},\"maxDisruptedNodes\":2}")));
	struct pol_plan_input in = {.nodes = ALL6,
				    .nnodes = 6,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = DRAIN_MS,
				    .max_decisions = 3};
	struct pol_plan p;
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_OK);
	assert_true(p.truncated);
	assert_int_equal(p.stopped, POL_PLAN_STOP_DECISIONS);
	assert_int_equal(p.decisions, 3);
	assert_int_equal(p.nwaves, 1);
	assert_int_equal(p.waves[0].nnodes, 2);
	assert_int_equal(p.waves[0].waiting, 4); /* n2 decided, n3-n5 not reached */
	assert_int_equal(p.nunplanned, 4);
	assert_int_equal(p.stopped_wall_ms, START_WALL_MS);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* A clock that moves 1 ms each time it is read: the time cap, deterministic. */
static int64_t ticking_clock(void *ctx)
{
	int64_t *t = ctx;
	return *t += 1000;
}

static void test_Q05_time_cap_stops_the_plan(void **state)
{
	(void)state;
	const char **names;
	struct kube_snapshot *s = windowed_pool(&names);
	struct ng_arena *arena = ng_arena_create(8u << 20);
	int64_t t = 0;
	struct pol_plan_input in = {.nodes = names,
				    .nnodes = POOL_NODES,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = MONTH_MS,
				    .max_mono_us = 10000,
				    .clock_mono_us = ticking_clock,
				    .clock_ctx = &t};
	struct pol_plan p;
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_OK);
	assert_true(p.truncated);
	assert_int_equal(p.stopped, POL_PLAN_STOP_TIME);
	assert_true(p.nunplanned > 0);
	assert_int_equal(p.nplanned + p.nunplanned, POOL_NODES);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

static void test_over_the_node_limit_is_refused_and_leaves_the_plan_alone(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_snapshot(LIST(SIX_NODES));
	struct ng_arena *arena = ng_arena_create(1u << 20);
	const char **names = calloc(POL_PLAN_MAX_NODES + 1, sizeof(*names));
	for (size_t i = 0; i <= POL_PLAN_MAX_NODES; i++)
		names[i] = "n0";
	struct pol_plan_input in = {.nodes = names,
				    .nnodes = POL_PLAN_MAX_NODES + 1,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = DRAIN_MS};
	struct pol_plan p;
	memset(&p, 0xad, sizeof(p));
	assert_int_equal(pol_plan_run(s, &in, arena, &p), NG_ELIMIT);
	assert_int_equal(p.nwaves, (size_t)0xadadadadadadadadull);
	free(names);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

static const cJSON *get(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		fail_msg("no \"%s\"", key);
	return v;
}

static void test_Q01_json_document_shape(void **state)
{
	(void)state;
	struct run r = plan(
	    LIST(SIX_NODES "," NDB(
		"pool",
		"{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
		"\"maxDisruptedNodes\":2}") "," NDB("zero", "{\"nodeSelector\":{\"matchLabels\":{"
							    "\"zone\":\"z2\"}},"
							    "\"maxDisruptedNodes\":0}")),
	    (const char *const[]){"n0", "n1", "n3", "n5", NULL});
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_plan_json(r.s, &r.in, &r.p, &b), NG_OK);
	assert_int_equal(b.data[b.len - 1], '\n');
	cJSON *doc = cJSON_Parse(b.data);
	assert_non_null(doc);
	assert_string_equal(get(doc, "start")->valuestring, "2026-11-18T11:06:40Z");
	assert_int_equal(get(doc, "drainSeconds")->valueint, 300);
	assert_string_equal(get(doc, "type")->valuestring, "maintenance");
	assert_string_equal(get(doc, "requestor")->valuestring, "nodegate-plan");
	assert_true(cJSON_GetArraySize(get(doc, "assumptions")) >= 2);
	assert_string_equal(cJSON_GetArrayItem(get(doc, "assumptions"), 0)->valuestring,
			    "health hooks answer healthy");
	const cJSON *sum = get(doc, "summary");
	assert_int_equal(get(sum, "nodes")->valueint, 4);
	assert_int_equal(get(sum, "planned")->valueint, 3);
	assert_int_equal(get(sum, "neverGranted")->valueint, 1);
	assert_int_equal(get(sum, "notPlanned")->valueint, 0);
	assert_int_equal(get(sum, "waves")->valueint, 2);
	assert_int_equal(get(sum, "heldAtStart")->valueint, 0);
	assert_int_equal(get(sum, "totalSeconds")->valueint, 600);
	assert_string_equal(get(sum, "end")->valuestring, "2026-11-18T11:16:40Z");
	assert_true(cJSON_IsFalse(get(sum, "truncated")));
	assert_true(cJSON_IsNumber(get(sum, "rounds")));
	assert_true(cJSON_IsNumber(get(sum, "decisions")));
	const cJSON *waves = get(doc, "waves");
	assert_int_equal(cJSON_GetArraySize(waves), 2);
	const cJSON *w1 = cJSON_GetArrayItem(waves, 0), *w2 = cJSON_GetArrayItem(waves, 1);
	assert_int_equal(get(w1, "wave")->valueint, 1);
	assert_int_equal(get(w1, "offsetSeconds")->valueint, 0);
	assert_string_equal(get(w1, "start")->valuestring, "2026-11-18T11:06:40Z");
	assert_int_equal(cJSON_GetArraySize(get(w1, "nodes")), 2);
	assert_string_equal(cJSON_GetArrayItem(get(w1, "nodes"), 0)->valuestring, "n0");
	assert_string_equal(cJSON_GetArrayItem(get(w1, "nodes"), 1)->valuestring, "n1");
	/* n3 waits; n5, which "zero" can never allow, is known never granted at once. */
	assert_int_equal(get(w1, "waiting")->valueint, 1);
	const cJSON *lim = get(w1, "limitedBy");
	assert_int_equal(cJSON_GetArraySize(lim), 1);
	const cJSON *l0 = cJSON_GetArrayItem(lim, 0);
	assert_string_equal(get(get(l0, "reference"), "kind")->valuestring, "NodeDisruptionBudget");
	assert_string_equal(get(get(l0, "reference"), "name")->valuestring, "pool");
	assert_null(cJSON_GetObjectItemCaseSensitive(get(l0, "reference"), "namespace"));
	assert_int_equal(get(l0, "waiting")->valueint, 1);
	assert_true(cJSON_IsString(get(l0, "reason")));
	assert_int_equal(get(w1, "moreLimits")->valueint, 0);
	assert_int_equal(get(w2, "offsetSeconds")->valueint, 300);
	assert_string_equal(cJSON_GetArrayItem(get(w2, "nodes"), 0)->valuestring, "n3");
	const cJSON *never = get(doc, "neverGranted");
	assert_int_equal(cJSON_GetArraySize(never), 1);
	assert_string_equal(get(cJSON_GetArrayItem(never, 0), "node")->valuestring, "n5");
	/* Its reason names "zero" only: "pool" is full for now, "zero" never has room. */
	const char *why = get(cJSON_GetArrayItem(never, 0), "reason")->valuestring;
	assert_string_equal(why, "needs 1 node of NodeDisruptionBudget zero, which allows at most "
				 "0: raise maxDisruptedNodes to 1");
	assert_true(cJSON_IsFalse(get(cJSON_GetArrayItem(never, 0), "rejected")));
	assert_true(cJSON_IsTrue(get(cJSON_GetArrayItem(never, 0), "unsatisfiable")));
	assert_int_equal(cJSON_GetArraySize(get(doc, "notPlanned")), 0);
	cJSON_Delete(doc);
	ng_buf_finish(&b);
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_Q01_ndb_of_two_over_six_nodes_makes_three_waves),
	    cmocka_unit_test(test_Q06_pacing_spaces_waves),
	    cmocka_unit_test(test_Q01_adb_holds_its_application_nodes_apart),
	    cmocka_unit_test(test_Q01_topology_limit_takes_one_zone_per_wave),
	    cmocka_unit_test(test_Q04_waves_wait_for_maintenance_windows),
	    cmocka_unit_test(test_O32_plan_lists_the_open_spans_of_its_windows),
	    cmocka_unit_test(test_Q01_nodes_never_granted_say_why_and_the_plan_ends),
	    cmocka_unit_test(test_Q01_granted_request_holds_capacity_until_it_ends),
	    cmocka_unit_test(test_Q01_granted_request_ends_its_duration_after_its_grant),
	    cmocka_unit_test(test_Q01_granted_request_ends_at_its_deadline_when_sooner),
	    cmocka_unit_test(test_Q01_pod_disruption_budget_holds_nodes_apart_when_respected),
	    cmocka_unit_test(test_Q01_control_plane_nodes_go_one_at_a_time_first),
	    cmocka_unit_test(test_Q01_type_not_allowed_is_rejected_at_once),
	    cmocka_unit_test(test_Q01_wave_cap_lists_the_nodes_not_planned),
	    cmocka_unit_test(test_Q05_window_edges_that_free_nothing_are_skipped),
	    cmocka_unit_test(test_Q05_rounds_cap_truncates_and_says_where),
	    cmocka_unit_test(test_Q05_decisions_cap_stops_mid_round),
	    cmocka_unit_test(test_Q05_time_cap_stops_the_plan),
	    cmocka_unit_test(test_over_the_node_limit_is_refused_and_leaves_the_plan_alone),
	    cmocka_unit_test(test_Q01_json_document_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
