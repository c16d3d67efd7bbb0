/* policy/disruption: deciding one NodeDisruption against budgets (shared/acceptance/gate.md, the
 * scenarios that need no API: G01-G13, U01-U05, A02-A04, A07-A09) over fixture F
 * (policy-gate-fixture.h), and the health-hook specs and policy the decision reads. The ranking
 * is test-policy-rank.c, the ledger and budget statuses test-policy-ledger.c. */
#include "tests/unit/policy-gate-fixture.h"

static void test_G01_no_budgets_grants_the_selected_nodes(void **state)
{
	struct result r = decide(cluster(ND("nd", ON_TEST1 "}")), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	assert_int_equal(r.d.nnodes, 2);
	assert_int_equal(r.d.nverdicts, 0);
	done(&r);
}

static void test_G02_G03_empty_selection(void **state)
{
	struct result r = decide(
	    cluster(ND("nd", "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"nope\"}}}")),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "no node matched");
	struct pol_gate_config cfg = {.reject_empty = false};
	struct result r2 = decide(kube_snapshot_ref(r.s), "nd", &cfg, NOW_WALL_MS);
	expect(&r2, POL_GATE_GRANT, NULL);
	done(&r2);
	done(&r);
}

/* N03: a request covering a node with a do-not-disrupt pod waits (retry) or is Rejected, and
 * says which pod; a request of an override type goes; the protection ends with its duration. */
static void test_N03_do_not_disrupt_holds_a_request_back(void **state)
{
	(void)state;
	/* pod2 on node1 started at NOW - 10 min, protected for 30 min. */
	static const char dnd_pod[] =
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"pod2\","
	    "\"namespace\":\"default\",\"annotations\":{\"nodegate.io/do-not-disrupt\":\"30m\"}},"
	    "\"spec\":{\"nodeName\":\"node1\"},\"status\":{\"phase\":\"Running\",\"startTime\":"
	    "\"2026-11-18T10:56:40Z\"}}";
	static const char config[] =
	    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"default\"},\"spec\":{\"doNotDisruptOverrideTypes\":[\"emergency\"]}}";
	char buf[2048];
	(void)snprintf(buf, sizeof(buf), "%s,%s,%s,%s,%s", dnd_pod, config,
		       ND("wait", "{\"nodeNames\":[\"node1\"],\"retry\":{\"enabled\":true}}"),
		       ND("once", "{\"nodeNames\":[\"node1\"]}"),
		       ND("urgent", "{\"nodeNames\":[\"node1\"],\"type\":\"emergency\"}"));
	struct kube_snapshot *s = cluster(buf);
	struct result r = decide(kube_snapshot_ref(s), "wait", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING,
	       "pod default/pod2 on node node1 has nodegate.io/do-not-disrupt until "
	       "2026-11-18T11:26:40.000Z");
	done(&r);
	r = decide(kube_snapshot_ref(s), "once", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "nodegate.io/do-not-disrupt");
	done(&r);
	r = decide(kube_snapshot_ref(s), "urgent", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(kube_snapshot_ref(s), "wait", NULL, NOW_WALL_MS + 20 * 60000);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	kube_snapshot_release(s);
}

/* Six nodes in three zones (a1 a2, b1 b2, c1 c2), a NodeDisruptionBudget over them with
 * @limits, node a1 granted, and @nd. */
#define ZNODE(n, z)                                                                                \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"topology.kubernetes.io/zone\":\"" z "\"}},\"status\":{\"conditions\":[{\"type\":"       \
	"\"Ready\",\"status\":\"True\"}]}}"
#define ZONE_NODES                                                                                 \
	ZNODE("a1", "a")                                                                           \
	"," ZNODE("a2", "a") "," ZNODE("b1", "b") "," ZNODE("b2", "b") "," ZNODE(                  \
	    "c1", "c") "," ZNODE("c2", "c")
#define ZONE_KEY "{\"nodeSelector\":{},\"topologyKey\":\"topology.kubernetes.io/zone\""
#define ZONES(limits, nd)                                                                          \
	"{\"kind\":\"List\",\"items\":[" ZONE_NODES                                                \
	"," NDB("zones", ZONE_KEY limits "}") "," GRANTED("held", "[\"a1\"]") "," nd "]}"

#define READY_POD(name, node)                                                                      \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                   \
	"\",\"namespace\":\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"" node \
	"\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":"    \
	"\"True\"}]}}"
#define DB_PDB                                                                                     \
	"{\"kind\":\"PodDisruptionBudget\",\"apiVersion\":\"policy/v1\",\"metadata\":{\"name\":"   \
	"\"db\",\"namespace\":\"default\"},\"spec\":{\"maxUnavailable\":1,\"selector\":{"          \
	"\"matchLabels\":{\"app\":\"db\"}}},\"status\":{\"disruptionsAllowed\":1,"                 \
	"\"currentHealthy\":2,\"desiredHealthy\":1,\"expectedPods\":2}}"
#define RESPECT_PDBS                                                                               \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"respectPodDisruptionBudgets\":true}}"

/* P01: the only two replicas of a PodDisruptionBudget allowing one disruption, on node1 and
 * node2: with node1 granted, a request for node2 waits and names the PodDisruptionBudget; a
 * request for both at once fails the same way; without respectPodDisruptionBudgets both go. */
static void test_P01_pdb_aware_grants(void **state)
{
	(void)state;
	static const char base[] = READY_POD("db-0", "node1") "," READY_POD(
	    "db-1", "node2") "," DB_PDB "," GRANTED("first", "[\"node1\"]") ",";
	char buf[4096];
	(void)snprintf(buf, sizeof(buf), "%s%s,%s", base, RESPECT_PDBS,
		       ND("second", "{\"nodeNames\":[\"node2\"],\"retry\":{\"enabled\":true}}"));
	struct result r = decide(ng_test_cluster_f(buf), "second", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING,
	       "PodDisruptionBudget default/db: 1 healthy pods on this request's nodes and 1 on "
	       "nodes granted before, disruptionsAllowed 1 (currentHealthy 2, desiredHealthy 1)");
	assert_int_equal(r.d.verdicts[r.d.nverdicts - 1].kind, KUBE_RES_PDBS);
	done(&r);
	(void)snprintf(buf, sizeof(buf), "%s%s,%s",
		       READY_POD("db-0", "node1") "," READY_POD("db-1", "node2") "," DB_PDB ",",
		       RESPECT_PDBS, ND("both", "{\"nodeNames\":[\"node1\",\"node2\"]}"));
	r = decide(ng_test_cluster_f(buf), "both", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "2 healthy pods on this request's nodes and 0");
	done(&r);
	(void)snprintf(buf, sizeof(buf), "%s%s", base, ND("second", "{\"nodeNames\":[\"node2\"]}"));
	r = decide(ng_test_cluster_f(buf), "second", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* T01: maxDisruptedDomains 1: with a zone disrupted, a request in another zone waits; one in
 * the same zone goes; two zones in one request are two domains as well. The same with
 * soakSeconds, whose budgets count domains node by node (soaking nodes are disrupted per
 * instant) where the others use the domains the ledger keeps: nothing soaks here, so the
 * answers are the same. */
#define T01_CASES(extra)                                                                           \
	{                                                                                          \
		{ZONES(",\"maxDisruptedDomains\":1" extra,                                         \
		       ND("b", "{\"nodeNames\":[\"b1\"],\"retry\":{\"enabled\":true}}")),          \
		 "b", POL_GATE_PENDING,                                                            \
		 "nodes of 2 topology.kubernetes.io/zone domains would be disrupted at once "      \
		 "(limit "                                                                         \
		 "maxDisruptedDomains 1)"},                                                        \
		    {ZONES(",\"maxDisruptedDomains\":1" extra,                                     \
			   ND("a", "{\"nodeNames\":[\"a2\"]}")),                                   \
		     "a", POL_GATE_GRANT, NULL},                                                   \
		{                                                                                  \
			ZONES(",\"maxDisruptedDomains\":2" extra,                                  \
			      ND("bc", "{\"nodeNames\":[\"b1\",\"c1\"]}")),                        \
			    "bc", POL_GATE_REJECT,                                                 \
			    "nodes of 3 topology.kubernetes.io/zone domains"                       \
		}                                                                                  \
	}
static void test_T01_max_disrupted_domains(void **state)
{
	(void)state;
	static const struct {
		const char *cluster, *nd;
		enum pol_gate_outcome outcome;
		const char *msg;
	} cases[] = T01_CASES(""), soaking[] = T01_CASES(",\"soakSeconds\":60");
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	for (size_t i = 0; i < 2 * n; i++) {
		size_t k = i % n;
		const char *cluster = i < n ? cases[k].cluster : soaking[k].cluster;
		struct result r = decide(ng_test_snapshot(cluster), cases[k].nd, NULL, NOW_WALL_MS);
		expect(&r, cases[k].outcome, cases[k].msg);
		done(&r);
	}
}

/* T02: maxDisruptedNodesPerDomain "50%": one node of each two-node zone at a time. */
static void test_T02_max_disrupted_nodes_per_domain(void **state)
{
	(void)state;
	struct result r = decide(ng_test_snapshot(ZONES(",\"maxDisruptedNodesPerDomain\":\"50%\"",
							ND("a", "{\"nodeNames\":[\"a2\"]}"))),
				 "a", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT,
	       "topology.kubernetes.io/zone=a: 1 of its 2 nodes disrupted, this request adds 1 "
	       "(limit maxDisruptedNodesPerDomain 1)");
	done(&r);
	r = decide(ng_test_snapshot(ZONES(",\"maxDisruptedNodesPerDomain\":\"50%\"",
					  ND("bc", "{\"nodeNames\":[\"b1\",\"c1\"]}"))),
		   "bc", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* Maintenance windows: weekdays 22:00-06:00 in Paris (UTC+1 in winter). Monday 2026-11-30. */
#define WEEKNIGHTS(limit)                                                                          \
	"\"windows\":[{\"schedule\":\"0 22 * * 1-5\",\"duration\":\"8h\","                         \
	"\"timeZone\":\"Europe/Paris\"" limit "}]"
static const int64_t MON_NOON = 1796036400000;  /* 2026-11-30T11:00:00Z, 12:00 in Paris */
static const int64_t MON_22H = 1796072400000;   /* 21:00Z: the window opens */
static const int64_t MON_23H30 = 1796077800000; /* 22:30Z */
static const int64_t TUE_05H59 = 1796101140000; /* 04:59Z: still open */
static const int64_t TUE_06H = 1796101200000;   /* 05:00Z: closed */
static const int64_t TUE_22H = 1796158800000;   /* 21:00Z: the next opening */

/* S01: outside every window a request that would be granted stays Pending, retry or not, with
 * the next opening as its wake time; inside (across midnight) it is granted; the window closes
 * at its end. */
static void test_S01_windows_hold_requests_until_the_next_opening(void **state)
{
	(void)state;
	const char *objs = NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1," WEEKNIGHTS(
					   "") "}") "," ND("nd", "{\"nodeNames\":[\"node1\"]}");
	struct result r = decide(cluster(objs), "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_PENDING,
	       "NodeDisruptionBudget pool is outside its maintenance windows; the next opens at "
	       "2026-11-30T21:00:00.000Z (2026-11-30T22:00 Europe/Paris, schedule \"0 22 * * "
	       "1-5\")");
	assert_int_equal(r.d.wake_wall_ms, MON_22H);
	assert_true(r.d.only_windows);
	done(&r);
	const int64_t open[] = {MON_22H, MON_23H30, TUE_05H59};
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
		r = decide(cluster(objs), "nd", NULL, open[i]);
		expect(&r, POL_GATE_GRANT, NULL);
		assert_int_equal(r.d.wake_wall_ms, 0);
		done(&r);
	}
	r = decide(cluster(objs), "nd", NULL, TUE_06H);
	expect(&r, POL_GATE_PENDING, "the next opens at 2026-12-01T21:00:00.000Z");
	assert_int_equal(r.d.wake_wall_ms, TUE_22H);
	done(&r);
	/* A request another budget refuses (full: node2 is granted) is refused as before, and
	 * still told when the window opens. */
	r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1," WEEKNIGHTS("") "}") "," ND(
		"nd", "{\"nodeNames\":[\"node1\"]}") "," NDB("full", ON_TEST1
							     ",\"maxDisruptedNodes\":"
							     "1}") "," GRANTED("held", "[\"nod"
										       "e2\""
										       "]")),
	    "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_REJECT, "2 budgets fail");
	assert_int_equal(r.d.wake_wall_ms, MON_22H);
	done(&r);
}

/* S02: a window's own maxDisruptedNodes replaces the budget's while it is open; outside,
 * UseDefault applies the budget's own limits. */
static void test_S02_window_limits_and_use_default(void **state)
{
	(void)state;
	const char *objs =
	    NDB("pool",
		ON_TEST1 ",\"maxDisruptedNodes\":1,\"outsideWindows\":\"UseDefault\"," WEEKNIGHTS(
		    ",\"maxDisruptedNodes\":\"100%\"") "}") "," ND("nd", ON_TEST1 "}");
	struct result r = decide(cluster(objs), "nd", NULL, MON_23H30);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(cluster(objs), "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_REJECT,
	       "NodeDisruptionBudget pool: 0 of 1 in use; this request adds 2");
	/* Its limit changes when the window opens: that is when the decision may change. */
	assert_int_equal(r.d.wake_wall_ms, MON_22H);
	assert_false(r.d.only_windows);
	done(&r);
	/* A window's limit may be stricter than the budget's own (which applies outside). */
	r = decide(
	    cluster(NDB("pool", ON_TEST1
			",\"maxDisruptedNodes\":2,\"outsideWindows\":\"UseDefault\"," WEEKNIGHTS(
			    ",\"maxDisruptedNodes\":1") "}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, MON_23H30);
	expect(&r, POL_GATE_REJECT, "(limit 1 of 2 nodes)");
	assert_int_equal(r.d.wake_wall_ms, TUE_06H); /* the window's limit ends as it closes */
	done(&r);
}

/* S03: an ApplicationDisruptionBudget's windows, with maxDisruptions inside them. */
static void test_S03_application_budget_windows(void **state)
{
	(void)state;
	const char *objs = ADB(
	    "db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
		  "\"maxDisruptions\":0," WEEKNIGHTS(
		      ",\"maxDisruptions\":1") "}") "," ND("nd", "{\"nodeNames\":[\"node1\"],"
								 "\"retry\":{\"enabled\":true}}");
	struct result r = decide(cluster(objs), "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_PENDING,
	       "ApplicationDisruptionBudget default/db is outside its "
	       "maintenance windows");
	done(&r);
	r = decide(cluster(objs), "nd", NULL, MON_23H30);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	/* A request on nodes the budget does not watch is not held by its windows. */
	r = decide(cluster(ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				     "\"maxDisruptions\":0," WEEKNIGHTS(
					 "") "}") "," ND("nd3", "{\"nodeNames\":[\"node3\"]}")),
		   "nd3", NULL, MON_NOON);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* Security finding 6: a window that never closes ("* * * * *" for 744 h) is open, and a
 * request its limit holds back has no window edge to wake at (merging firing by firing gave
 * a made-up close 10,000 firings on); beside a window that does close, that one is the edge.
 * A budget's 16 such windows and a window's own limit read once per instant give the same
 * answers over many decisions of one ledger. */
static void test_S06_a_window_that_never_closes_has_no_edge(void **state)
{
	(void)state;
#define ALWAYS "{\"schedule\":\"* * * * *\",\"duration\":\"744h\",\"maxDisruptedNodes\":1}"
/* The budget's own limit applies outside its windows: the request could fit there. */
#define OWN ",\"outsideWindows\":\"UseDefault\""
	const char *objs =
	    NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2" OWN ",\"windows\":[" ALWAYS
				 "]}") "," ND("nd", ON_TEST1 "}");
	struct result r = decide(cluster(objs), "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_REJECT, "(limit 1 of 2 nodes)");
	assert_int_equal(r.d.wake_wall_ms, 0);
	done(&r);
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":2" OWN
						",\"windows\":[" ALWAYS "," ALWAYS "," ALWAYS
						"," ALWAYS "]}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_REJECT, "(limit 1 of 2 nodes)");
	assert_int_equal(r.d.wake_wall_ms, 0);
	done(&r);
	/* Beside the weeknights' window (closed at noon, opening at 22:00), that opening is the
	 * edge. */
	r = decide(cluster(NDB("pool", ON_TEST1
			       ",\"maxDisruptedNodes\":2,\"windows\":[" ALWAYS
			       ",{\"schedule\":\"0 22 * * 1-5\",\"duration\":\"8h\","
			       "\"timeZone\":\"Europe/Paris\"}]}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, MON_NOON);
	expect(&r, POL_GATE_REJECT, "(limit 1 of 2 nodes)");
	assert_int_equal(r.d.wake_wall_ms, MON_22H);
	done(&r);
#undef ALWAYS
}

/* S04: a window opening at a wall time that a daylight saving change skips opens just after
 * the change, once: 02:30 in Paris on 2026-03-29 is 03:30 CEST, 01:30 UTC. */
static void test_S04_window_opening_in_a_dst_gap(void **state)
{
	(void)state;
	const char *objs = NDB(
	    "pool", ON_TEST1
	    ",\"maxDisruptedNodes\":1,\"windows\":[{\"schedule\":\"30 2 "
	    "* * *\",\"duration\":\"1h\",\"timeZone\":\"Europe/Paris\"}]}") "," ND("nd",
										   "{\"nodeNames\":"
										   "[\"node1\"]}");
	struct result r = decide(cluster(objs), "nd", NULL, 1774746000000); /* 01:00Z */
	expect(&r, POL_GATE_PENDING,
	       "the next opens at 2026-03-29T01:30:00.000Z (2026-03-29T03:30 Europe/Paris");
	assert_int_equal(r.d.wake_wall_ms, 1774747800000);
	done(&r);
	r = decide(cluster(objs), "nd", NULL, 1774747800000);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

static void test_G04_G05_budget_full_rejects_or_waits(void **state)
{
	struct result r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "NodeDisruptionBudget pool");
	assert_int_equal(r.d.nverdicts, 1);
	assert_false(r.d.verdicts[0].ok);
	assert_int_equal(r.d.verdicts[0].kind, KUBE_RES_NDBS);
	/* Its two nodes are over the budget's limit whatever else happens: it says so. */
	assert_string_equal(
	    r.d.verdicts[0].reason,
	    "needs 2 nodes of NodeDisruptionBudget pool, which allows at most 0: raise "
	    "maxDisruptedNodes to 2 or split the request");
	assert_true(r.d.unsatisfiable);
	done(&r);
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND(
		       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true}}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "NodeDisruptionBudget pool");
	done(&r);
}

static void test_G06_G07_deadline(void **state)
{
	struct result r =
	    decide(cluster(ND("nd", ON_TEST1 ",\"retry\":{\"enabled\":true,"
					     "\"deadline\":\"2026-11-18T00:00:00Z\"}}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "deadline passed");
	done(&r);
	/* Before the deadline a full budget keeps it Pending. */
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND(
		       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true,\"deadline\":"
				      "\"2030-01-01T00:00:00Z\"}}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, NULL);
	done(&r);
}

static void test_G08_G09_overlap(void **state)
{
	const char *objs = GRANTED("a", "[\"node1\",\"node2\"]") "," ND(
	    "b", "{\"nodeNames\":[\"node2\"]}") "," NDB("pool",
							ON_TEST1 ",\"maxDisruptedNodes\":2}");
	struct pol_gate_config strict = {.reject_empty = true, .reject_overlapping = true};
	struct result r = decide(cluster(objs), "b", &strict, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "NodeDisruption a");
	done(&r);
	/* Overlap allowed: node2 is counted once, so the pool stays at 2 of 2. */
	r = decide(cluster(objs), "b", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	assert_int_equal(r.d.verdicts[0].current, 2);
	done(&r);
}

static void test_G10_allowed_types(void **state)
{
	struct kube_snapshot *s = cluster(ND("m", ON_TEST1 ",\"type\":\"maintenance\"}") "," ND(
	    "t", ON_TEST1 ",\"type\":\"toto\"}") "," ND("x", "{\"nodeNames\":[\"node3\"],"
							     "\"type\":\"maintenance1\"}"));
	uint32_t types[] = {ng_test_id(s, "maintenance"), ng_test_id(s, "maintenance1")};
	struct pol_gate_config cfg = {.reject_empty = true, .allowed_types = types, .nallowed = 2};
	struct result r = decide(kube_snapshot_ref(s), "m", &cfg, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(kube_snapshot_ref(s), "t", &cfg, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "type \"toto\"");
	done(&r);
	kube_snapshot_release(s);
}

static void test_G11_G12_budget_types(void **state)
{
	struct result r =
	    decide(cluster(ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				     "\"maxDisruptions\":0,\"supportedNodeDisruptionTypes\":["
				     "\"maintenance1\"]}") "," ND("nd", ON_TEST1
								  ",\"type\":\"maintenance\"}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL); /* the budget does not apply to that type */
	done(&r);
	r = decide(cluster(ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				     "\"maxDisruptions\":0}") "," ND("nd", ON_TEST1
								     ",\"type\":\"anything\"}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "ApplicationDisruptionBudget default/db"); /* empty = all */
	done(&r);
}

static void test_G13_paused_keeps_pending(void **state)
{
	struct result r =
	    decide(cluster("{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
			   "\"metadata\":{\"name\":\"default\"},\"spec\":{\"paused\":true}}," ND(
			       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true}}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "paused");
	done(&r);
}

/* node2 NotReady (or node1 cordoned) in a pool of max 1 that counts unavailable nodes. */
static struct kube_snapshot *unavailable(bool count, const char *which)
{
	char buf[2048];
	(void)snprintf(
	    buf, sizeof(buf),
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
	    "\"labels\":{"
	    "\"testselect\":\"test1\",\"kubernetes.io/hostname\":\"%s\"}},%s},"
	    "%s" NDB(
		"pool", ON_TEST1
		",\"maxDisruptedNodes\":1,\"countUnavailableNodes\":"
		"%s}") "," ND("to1",
			      "{\"nodeNames\":[\"node1\"]}") "," ND("to2",
								    "{\"nodeNames\":[\"node2\"]}"),
	    which, which,
	    strcmp(which, "node2") == 0
		? "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}"
		: "\"spec\":{\"unschedulable\":true},\"status\":{\"conditions\":[{"
		  "\"type\":"
		  "\"Ready\",\"status\":\"True\"}]}",
	    "", count ? "true" : "false");
	return cluster(buf);
}

static void test_U01_U02_U03_U05_unavailable_nodes_use_the_budget(void **state)
{
	struct result r = decide(unavailable(true, "node2"), "to1", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "1 of 1 in use"); /* U01 */
	done(&r);
	r = decide(unavailable(true, "node2"), "to2", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL); /* U02: node2 adds nothing */
	done(&r);
	r = decide(unavailable(false, "node2"), "to1", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL); /* U03 */
	done(&r);
	r = decide(unavailable(true, "node1"), "to2", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, NULL); /* U05: a cordoned node counts */
	assert_int_equal(r.d.verdicts[0].current, 1);
	done(&r);
}

static void test_U04_taint_targets_count_as_unavailable(void **state)
{
	/* node3 carries k1:NoSchedule; the budget over every node allows 2 and counts that taint.
	 */
	const char *extra =
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\",\"labels\":{"
	    "\"testselect\":\"test2\"}},\"spec\":{\"taints\":[{\"key\":\"k1\",\"effect\":"
	    "\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}"
	    "]}}," NDB(
		"all",
		"{\"nodeSelector\":{},\"maxDisruptedNodes\":2,\"taintTargets\":[{\"key\":\"k1\","
		"\"effect\":\"NoSchedule\",\"operator\":\"Exists\"}]}") "," ND("nd", ON_TEST1 "}");
	struct result r = decide(cluster(extra), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "1 of 2 in use; this request adds 2");
	done(&r);
	/* A target for another effect does not count. */
	r = decide(
	    cluster(
		"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\"},"
		"\"spec\":{\"taints\":[{\"key\":\"k1\",\"effect\":\"NoSchedule\"}]},"
		"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
		"," NDB("all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":2,\"taintTargets\":[{"
			       "\"key\":\"k1\",\"effect\":\"NoExecute\",\"operator\":\"Exists\"}"
			       "]}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

/* Nodes another actor is taking away count as disrupted in every NodeDisruptionBudget without
 * a taintTargets entry: the autoscalers' and clouds' deletion taints, a graceful shutdown. */
static void test_nodes_being_taken_away_count_as_disrupted(void **state)
{
	static const char *const node3[] = {
	    "\"spec\":{\"taints\":[{\"key\":\"ToBeDeletedByClusterAutoscaler\",\"value\":"
	    "\"1764000000\",\"effect\":\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":"
	    "\"Ready\",\"status\":\"True\"}]}",
	    "\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\""
	    "}]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}",
	    "\"spec\":{\"taints\":[{\"key\":\"aws-node-termination-handler/spot-itn\","
	    "\"effect\":\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":\"Ready\","
	    "\"status\":\"True\"}]}",
	    "\"spec\":{},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	    "{\"type\":\"GracefulNodeShutdownInProgress\",\"status\":\"True\"}]}",
	};
	char extra[2048];
	for (size_t i = 0; i < sizeof(node3) / sizeof(*node3); i++) {
		ng_fmt(extra, sizeof(extra),
		       "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
		       "\"node3\"},%s}," NDB(
			   "all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":2}") "," ND("nd",
											  ON_TEST1
											  "}"),
		       node3[i]);
		struct result r = decide(cluster(extra), "nd", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_REJECT, "1 of 2 in use; this request adds 2");
		/* The reason names the node and why it counts. */
		expect(&r, POL_GATE_REJECT,
		       i < 3 ? "; counted unavailable: node3 (marked for deletion)"
			     : "; counted unavailable: node3 (shutting down)");
		done(&r);
	}
	/* Whatever countUnavailableNodes says: those are voluntary disruptions, what a budget
	 * bounds. */
	ng_fmt(
	    extra, sizeof(extra),
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\"},%s}," NDB(
		"all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":2,"
		       "\"countUnavailableNodes\":false}") "," ND("nd", ON_TEST1 "}"),
	    node3[0]);
	struct result r = decide(cluster(extra), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "1 of 2 in use; this request adds 2");
	done(&r);
	/* A taint of another key, and the shutdown condition False, count nothing. */
	ng_fmt(
	    extra, sizeof(extra),
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\"},"
	    "\"spec\":{\"taints\":[{\"key\":\"DeletionCandidateOfClusterAutoscaler\","
	    "\"effect\":\"PreferNoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":"
	    "\"Ready\",\"status\":\"True\"},{\"type\":\"GracefulNodeShutdownInProgress\","
	    "\"status\":\"False\"}]}}," NDB(
		"all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":2}") "," ND("nd", ON_TEST1 "}"));
	r = decide(cluster(extra), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
}

#define PVC(name, labels, phase, vol)                                                              \
	"{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name \
	"\",\"namespace\":\"default\",\"labels\":" labels "},\"spec\":{\"volumeName\":\"" vol      \
	"\"},\"status\":{\"phase\":\"" phase "\"}}"
#define PV_REMOTE(name)                                                                            \
	"{\"kind\":\"PersistentVolume\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name      \
	"\"},\"spec\":{\"nfs\":{\"server\":\"x\",\"path\":\"/\"}}}"

static void test_A02_A03_A04_volumes(void **state)
{
	/* A02: a PVC on remote storage pins nothing: the budget watches no node. */
	struct result r =
	    decide(cluster(PV_REMOTE("nfs-pv") "," PVC(
		       "data", "{\"app\":\"x\"}", "Bound",
		       "nfs-pv") "," ADB("x", "{\"pvcSelector\":{\"matchLabels\":{\"app\":\"x\"}},"
					      "\"maxDisruptions\":0}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	/* A04: a selected PVC is Lost, and a pod of the app runs on node1. */
	r = decide(cluster(PVC("data", "{\"app\":\"db\"}", "Lost", "gone") "," ADB(
		       "db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
			     "\"pvcSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
			     "\"maxDisruptions\":5}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "default/data in phase Lost");
	done(&r);
}

static const char two_app_nodes[] =
    POD("pod2", "node2", "db") "," ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
					     "\"maxDisruptions\":1}");

static void test_A07_one_request_on_two_app_nodes_costs_two(void **state)
{
	char buf[1024];
	(void)snprintf(buf, sizeof(buf), "%s," ND("nd", ON_TEST1 "}"), two_app_nodes);
	struct result r = decide(cluster(buf), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "ApplicationDisruptionBudget default/db");
	done(&r);
}

static void test_A08_second_request_names_the_budget_in_use(void **state)
{
	char buf[1024];
	(void)snprintf(
	    buf, sizeof(buf),
	    "%s," GRANTED("first", "[\"node1\"]") "," ND("second", "{\"nodeNames\":[\"node2\"]}"),
	    two_app_nodes);
	struct result r = decide(cluster(buf), "second", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "default/db: 1 of 1 in use");
	assert_int_equal(r.d.verdicts[0].allowed, 0);
	/* ... and the request that holds it. */
	assert_string_equal(r.d.verdicts[0].reason,
			    "ApplicationDisruptionBudget default/db: 1 of 1 in use; this request "
			    "adds 1 (limit 1 of 2 nodes); held by first");
	done(&r);
}

/* A full budget names the requests holding it, sorted by name, three at most. */
#define NODE3                                                                                      \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\"},\"status\":{"  \
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
/* Four grants on two nodes, two on each, not in name order. */
#define HOLDERS                                                                                    \
	GRANTED("h-d", "[\"node2\"]")                                                              \
	"," GRANTED("h-b", "[\"node1\"]") "," GRANTED("h-a", "[\"node1\"]") "," GRANTED(           \
	    "h-c", "[\"node2\"]")
#define ON_NODE3 ND("nd", "{\"nodeNames\":[\"node3\"]}")
static void test_a_full_budget_names_its_holders(void **state)
{
	const char *objs =
	    NODE3 "," NDB("all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":2}") "," HOLDERS
										  "," ON_NODE3;
	struct result r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, NULL);
	assert_string_equal(r.d.verdicts[0].reason,
			    "NodeDisruptionBudget all: 2 of 2 in use; this request adds 1 (limit 2 "
			    "of 3 nodes); held by h-a, h-b, h-c (+1 more)");
	done(&r);
	/* A minimum names them too. */
	objs = NODE3 "," NDB("all", "{\"nodeSelector\":{},\"minUndisruptedNodes\":2}") "," GRANTED(
	    "h-a", "[\"node1\"]") "," ON_NODE3;
	r = decide(cluster(objs), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, NULL);
	assert_string_equal(r.d.verdicts[0].reason,
			    "NodeDisruptionBudget all: 2 of 3 nodes must stay undisrupted; 1 would "
			    "remain; held by h-a");
	done(&r);
}

static void test_A09_frozen_budget(void **state)
{
	struct result r = decide(
	    cluster(ADB(
		"db",
		"{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":"
		"5,\"freeze\":{\"enabled\":true,\"reason\":\"db upgrade\"}}") "," ND("nd",
										     ON_TEST1 "}")),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "db upgrade");
	done(&r);
}

/* Budgets full because node2 is granted: a request for node1 could fit once it is released. */
#define HELD_NODE2 GRANTED("held", "[\"node2\"]")
#define ON_NODE1 "{\"nodeNames\":[\"node1\"]"

static void test_every_failing_budget_is_listed(void **state)
{
	char buf[2048];
	(void)snprintf(
	    buf, sizeof(buf),
	    "%s," HELD_NODE2 "," NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," NDB(
		"all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":1}") "," ND("nd", ON_NODE1 "}"),
	    two_app_nodes);
	struct result r = decide(cluster(buf), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, NULL);
	assert_int_equal(r.d.nverdicts, 3);
	assert_false(r.d.unsatisfiable);
	/* The reason (the condition's message) names each, not only the first. */
	char want[POL_REASON_BYTES];
	ng_fmt(want, sizeof(want), "3 budgets fail: %s | %s | %s", r.d.verdicts[0].reason,
	       r.d.verdicts[1].reason, r.d.verdicts[2].reason);
	assert_string_equal(r.d.reason, want);
	for (size_t i = 0; i < r.d.nverdicts; i++)
		assert_false(r.d.verdicts[i].ok);
	done(&r);
	/* The same for a Pending request; a passing budget is not named. */
	(void)snprintf(buf, sizeof(buf),
		       HELD_NODE2 "," NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," NDB(
			   "fits", ON_TEST1
			   ",\"maxDisruptedNodes\":2}") "," NDB("all", "{\"nodeSelector\":{},"
								       "\"maxDisruptedNodes\":"
								       "1}") "," ND("nd", ON_NODE1
										    ",\"retry\":{"
										    "\"enabled\":"
										    "true}}"));
	r = decide(cluster(buf), "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "2 budgets fail: NodeDisruptionBudget ");
	assert_non_null(strstr(r.d.reason, "NodeDisruptionBudget pool: 1 of 1 in use; this "
					   "request adds 1 (limit 1 of 2 nodes)"));
	assert_non_null(strstr(r.d.reason, "NodeDisruptionBudget all: 1 of 1 in use; this "
					   "request adds 1 (limit 1 of 3 nodes)"));
	assert_null(strstr(r.d.reason, "fits"));
	done(&r);
}

/* Forty failing budgets: as many as fit are named whole, then "and K more"; bounded. */
static void test_many_failing_budgets_are_named_within_a_bound(void **state)
{
	enum { N = 40 };
	char *buf = malloc(N * 256 + 512);
	size_t len = 0;
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(
		    buf + len, 256, NDB("pool-%02d", ON_TEST1 ",\"maxDisruptedNodes\":1}") ",", i);
	(void)snprintf(buf + len, 512,
		       HELD_NODE2 "," ND("nd", ON_NODE1 ",\"retry\":{\"enabled\":true}}"));
	struct result r = decide(cluster(buf), "nd", NULL, NOW_WALL_MS);
	free(buf);
	expect(&r, POL_GATE_PENDING, "40 budgets fail: ");
	assert_int_equal(r.d.nverdicts, N);
	size_t rl = strlen(r.d.reason);
	assert_true(rl < POL_REASON_BYTES - 1);
	static const char tail[] = " more (status.disruptedDisruptionBudgets lists each)";
	assert_string_equal(r.d.reason + rl - strlen(tail), tail);
	/* The names given are the first verdicts' whole reasons, in order; with the K left out
	 * they count every budget. */
	const char *p = r.d.reason + strlen("40 budgets fail: ");
	size_t named = 0;
	while (strncmp(p, "and ", 4) != 0) {
		size_t n = strlen(r.d.verdicts[named].reason);
		assert_memory_equal(p, r.d.verdicts[named].reason, n);
		assert_memory_equal(p + n, " | ", 3);
		p += n + 3;
		named++;
	}
	assert_true(named >= 2);
	char more[32];
	ng_fmt(more, sizeof(more), "and %zu more", N - named);
	assert_memory_equal(p, more, strlen(more));
	done(&r);
}

static void test_G03_G08_G10_rules_come_from_nodegateconfig(void **state)
{
	struct result r = decide(cluster(NGC("{\"rejectEmptyDisruptions\":false}") "," ND(
				     "nd", "{\"nodeNames\":[\"ghost\"]}")),
				 "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL); /* G03 */
	done(&r);
	r = decide(cluster(NGC("{\"rejectOverlappingDisruptions\":true}") "," GRANTED(
		       "a", "[\"node1\",\"node2\"]") "," ND("b", "{\"nodeNames\":[\"node2\"]}")),
		   "b", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "NodeDisruption a"); /* G08 */
	done(&r);
	r = decide(cluster(NGC("{\"allowedTypes\":[\"maintenance\",\"maintenance1\"]}") "," ND(
		       "t", ON_TEST1 ",\"type\":\"toto\"}")),
		   "t", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "type \"toto\""); /* G10 */
	done(&r);
	r = decide(cluster(NGC("{\"allowedTypes\":\"oops\"}") "," ND("t", ON_TEST1 "}")), "t", NULL,
		   NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, NULL); /* an unreadable config pauses */
	done(&r);
}

/* base64 of "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="

static void test_hook_spec_decodes_and_service_refs_resolve_to_cluster_dns(void **state)
{
	/* clang-format off */
	struct kube_snapshot *s = cluster(
	    ADB("url", DB_HOOK("{\"url\":\"https://db.example.com/health\",\"caBundle\":\"" CA_B64 "\"}")) ","
	    ADB("svc", DB_HOOK("{\"service\":{\"namespace\":\"team\",\"name\":\"db-hook\",\"port\":8443,"
			       "\"path\":\"/health\"},\"timeoutSeconds\":2}")) ","
	    ADB("svcdef", DB_HOOK("{\"service\":{\"namespace\":\"team\",\"name\":\"db-hook\"}}")) ","
	    ADB("both", DB_HOOK("{\"url\":\"https://a/\",\"service\":{\"namespace\":\"t\",\"name\":\"n\"}}")) ","
	    ADB("slow", DB_HOOK("{\"url\":\"https://a/\",\"timeoutSeconds\":30}")) ","
	    ADB("badca", DB_HOOK("{\"url\":\"https://a/\",\"caBundle\":\"not base64!\"}")) ","
	    ADB("nohook", "{\"podSelector\":{},\"maxDisruptions\":1}"));
	/* clang-format on */
	const struct kube_adb *a = ng_test_adb(s, "url");
	assert_true(a->hook.present);
	assert_false(a->hook.service);
	assert_string_equal(a->hook.url, "https://db.example.com/health");
	assert_int_equal(a->hook.timeout_s, 5);
	assert_non_null(a->hook.ca);
	assert_non_null(strstr(a->hook.ca, "MIIB"));
	assert_int_equal(a->hook.error, NG_INTERN_NONE);
	a = ng_test_adb(s, "svc");
	assert_true(a->hook.service);
	assert_string_equal(a->hook.url, "https://db-hook.team.svc:8443/health");
	assert_int_equal(a->hook.timeout_s, 2);
	assert_null(a->hook.ca);
	assert_string_equal(ng_test_adb(s, "svcdef")->hook.url, "https://db-hook.team.svc:443/");
	static const struct {
		const char *adb, *why;
	} bad[] = {{"both", "exactly one of url and service"},
		   {"slow", "timeoutSeconds: must be 1..25"},
		   {"badca", "caBundle: must be base64 of PEM"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = ng_test_adb(s, bad[i].adb);
		assert_true(a->hook.present);
		assert_int_not_equal(a->hook.error, NG_INTERN_NONE);
		const char *why = ng_intern_str(kube_snapshot_pool(s), a->hook.error, NULL);
		if (!strstr(why, bad[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].adb, why, bad[i].why);
		/* The budget itself stays readable: only its hook fails closed. */
		assert_false(a->b.invalid);
	}
	assert_false(ng_test_adb(s, "nohook")->hook.present);
	kube_snapshot_release(s);
}

static bool allowed(const struct kube_snapshot *s, const char *adb, char *why, size_t cap)
{
	struct kube_hook_policy p;
	pol_hook_policy_from(s, &p);
	struct ng_err err = {0};
	ng_status st =
	    pol_hook_allowed(&ng_test_adb(s, adb)->hook, &p, kube_snapshot_pool(s), &err);
	ng_fmt(why, cap, "%s", err.msg);
	return st == NG_OK;
}

static void test_H09_hook_policy_hosts_schemes_credentials_and_services(void **state)
{
	/* clang-format off */
	const char *const adbs =
	    ADB("ok", DB_HOOK("{\"url\":\"https://Hooks.Example.com:8443/h\"}")) ","
	    ADB("glob", DB_HOOK("{\"url\":\"https://db.team.svc/h\"}")) ","
	    ADB("other", DB_HOOK("{\"url\":\"https://127.0.0.1:8443/h\"}")) ","
	    ADB("http", DB_HOOK("{\"url\":\"http://hooks.example.com/h\"}")) ","
	    ADB("ftp", DB_HOOK("{\"url\":\"ftp://hooks.example.com/h\"}")) ","
	    ADB("creds", DB_HOOK("{\"url\":\"https://u:p@hooks.example.com/h\"}")) ","
	    ADB("svc", DB_HOOK("{\"service\":{\"namespace\":\"team\",\"name\":\"db\"}}")) ","
	    ADB("junk", DB_HOOK("{\"url\":\"not a url\"}"));
	/* clang-format on */
	char buf[8192];
	char why[256];
	/* No NodeGateConfig: any https host, service references allowed, no http. */
	ng_fmt(buf, sizeof(buf), "%s", adbs);
	struct kube_snapshot *s = cluster(buf);
	assert_true(allowed(s, "other", why, sizeof(why)));
	assert_true(allowed(s, "svc", why, sizeof(why)));
	assert_false(allowed(s, "http", why, sizeof(why)));
	assert_non_null(strstr(why, "allowHTTP"));
	assert_false(allowed(s, "ftp", why, sizeof(why)));
	assert_false(allowed(s, "creds", why, sizeof(why)));
	assert_non_null(strstr(why, "credentials"));
	assert_false(allowed(s, "junk", why, sizeof(why)));
	assert_non_null(strstr(why, "not a URL"));
	kube_snapshot_release(s);
	ng_fmt(buf, sizeof(buf), "%s,%s", adbs,
	       NGC("{\"healthHooks\":{\"allowedHosts\":[\"hooks.example.com\",\"*.team.svc\"],"
		   "\"allowHTTP\":true,\"allowServiceRefs\":false}}"));
	s = cluster(buf);
	assert_true(allowed(s, "ok", why, sizeof(why))); /* hosts compare case-insensitively */
	assert_true(allowed(s, "glob", why, sizeof(why)));
	assert_true(allowed(s, "http", why, sizeof(why)));
	assert_false(allowed(s, "other", why, sizeof(why)));
	assert_non_null(strstr(why, "hook not allowed: host \"127.0.0.1\""));
	assert_false(allowed(s, "svc", why, sizeof(why)));
	assert_non_null(strstr(why, "allowServiceRefs"));
	kube_snapshot_release(s);
}

static void test_H02_failed_hook_rejects_or_waits_and_names_the_hook(void **state)
{
	for (int retry = 0; retry < 2; retry++) {
		struct result r = decide(
		    cluster(ADB(
			"db",
			DB_HOOK("{\"url\":\"https://"
				"hooks.example.com/\"}")) "," ND("nd",
								 "{\"nodeNames\":[\"node1\"],"
								 "\"retry\":{\"enabled\":"
								 "true}}") "," ND("nr",
										  "{\"nodeNames\":["
										  "\"node1\"]}")),
		    retry ? "nd" : "nr", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_GRANT, NULL);
		struct kube_hook_policy p;
		pol_hook_policy_from(r.s, &p);
		struct pol_hook_call *calls;
		size_t n;
		assert_int_equal(pol_hooks_prepare(r.s, NULL, &r.d, &p, r.arena, &calls, &n),
				 NG_OK);
		assert_int_equal(n, 1);
		assert_int_equal(calls[0].result, POL_HOOK_PENDING);
		assert_false(
		    pol_hooks_apply(r.s, NULL, calls, n, &r.d, NOW_WALL_MS)); /* not decided yet */
		calls[0].result = POL_HOOK_FAILED;
		calls[0].code = 503;
		ng_fmt(calls[0].message, sizeof(calls[0].message), "HTTP status 503");
		size_t nn;
		const struct kube_nd *nds = kube_snapshot_nds(r.s, &nn);
		const struct kube_nd *nd =
		    nds[0].name == ng_test_id(r.s, retry ? "nd" : "nr") ? &nds[0] : &nds[1];
		assert_true(pol_hooks_apply(r.s, nd, calls, n, &r.d, NOW_WALL_MS));
		expect(&r, retry ? POL_GATE_PENDING : POL_GATE_REJECT,
		       "health hook of ApplicationDisruptionBudget default/db: HTTP status 503");
		assert_false(r.d.verdicts[0].ok);
		done(&r);
	}
	/* Two failing hooks: the reason names both. */
	{
		struct result r = decide(
		    cluster(ADB("db", DB_HOOK("{\"url\":\"https://a/\"}")) "," ADB(
			"db2", DB_HOOK("{\"url\":\"https://b/\"}")) "," ND("nd", "{\"nodeNames\":["
										 "\"node1\"]}")),
		    "nd", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_GRANT, NULL);
		struct kube_hook_policy p;
		pol_hook_policy_from(r.s, &p);
		struct pol_hook_call *calls;
		size_t n, nn;
		assert_int_equal(pol_hooks_prepare(r.s, NULL, &r.d, &p, r.arena, &calls, &n),
				 NG_OK);
		assert_int_equal(n, 2);
		for (size_t i = 0; i < n; i++) {
			calls[i].result = POL_HOOK_FAILED;
			ng_fmt(calls[i].message, sizeof(calls[i].message), "%s",
			       i ? "timed out" : "HTTP status 503");
		}
		assert_true(
		    pol_hooks_apply(r.s, kube_snapshot_nds(r.s, &nn), calls, n, &r.d, NOW_WALL_MS));
		assert_string_equal(r.d.reason,
				    "2 budgets fail: health hook of ApplicationDisruptionBudget "
				    "default/db: HTTP status 503 | health hook of "
				    "ApplicationDisruptionBudget default/db2: timed out");
		done(&r);
	}
	/* A healthy answer keeps the grant and says so in the budget's entry. */
	struct result r = decide(cluster(ADB("db", DB_HOOK("{\"url\":\"https://h/\"}")) "," ND(
				     "nd", "{\"nodeNames\":[\"node1\"]}")),
				 "nd", NULL, NOW_WALL_MS);
	struct kube_hook_policy p;
	pol_hook_policy_from(r.s, &p);
	struct pol_hook_call *calls;
	size_t n;
	assert_int_equal(pol_hooks_prepare(r.s, NULL, &r.d, &p, r.arena, &calls, &n), NG_OK);
	calls[0].result = POL_HOOK_OK;
	ng_fmt(calls[0].message, sizeof(calls[0].message), "HTTP status 200");
	size_t nn;
	assert_false(
	    pol_hooks_apply(r.s, kube_snapshot_nds(r.s, &nn), calls, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_GRANT, NULL);
	assert_non_null(strstr(r.d.verdicts[0].reason, "; health hook: HTTP status 200"));
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_G01_no_budgets_grants_the_selected_nodes),
	    cmocka_unit_test(test_G02_G03_empty_selection),
	    cmocka_unit_test(test_G04_G05_budget_full_rejects_or_waits),
	    cmocka_unit_test(test_N03_do_not_disrupt_holds_a_request_back),
	    cmocka_unit_test(test_T01_max_disrupted_domains),
	    cmocka_unit_test(test_P01_pdb_aware_grants),
	    cmocka_unit_test(test_T02_max_disrupted_nodes_per_domain),
	    cmocka_unit_test(test_S01_windows_hold_requests_until_the_next_opening),
	    cmocka_unit_test(test_S02_window_limits_and_use_default),
	    cmocka_unit_test(test_S03_application_budget_windows),
	    cmocka_unit_test(test_S06_a_window_that_never_closes_has_no_edge),
	    cmocka_unit_test(test_S04_window_opening_in_a_dst_gap),
	    cmocka_unit_test(test_G06_G07_deadline),
	    cmocka_unit_test(test_G08_G09_overlap),
	    cmocka_unit_test(test_G10_allowed_types),
	    cmocka_unit_test(test_G11_G12_budget_types),
	    cmocka_unit_test(test_G13_paused_keeps_pending),
	    cmocka_unit_test(test_U01_U02_U03_U05_unavailable_nodes_use_the_budget),
	    cmocka_unit_test(test_U04_taint_targets_count_as_unavailable),
	    cmocka_unit_test(test_nodes_being_taken_away_count_as_disrupted),
	    cmocka_unit_test(test_A02_A03_A04_volumes),
	    cmocka_unit_test(test_A07_one_request_on_two_app_nodes_costs_two),
	    cmocka_unit_test(test_A08_second_request_names_the_budget_in_use),
	    cmocka_unit_test(test_a_full_budget_names_its_holders),
	    cmocka_unit_test(test_A09_frozen_budget),
	    cmocka_unit_test(test_every_failing_budget_is_listed),
	    cmocka_unit_test(test_many_failing_budgets_are_named_within_a_bound),
	    cmocka_unit_test(test_G03_G08_G10_rules_come_from_nodegateconfig),
	    cmocka_unit_test(test_hook_spec_decodes_and_service_refs_resolve_to_cluster_dns),
	    cmocka_unit_test(test_H09_hook_policy_hosts_schemes_credentials_and_services),
	    cmocka_unit_test(test_H02_failed_hook_rejects_or_waits_and_names_the_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
