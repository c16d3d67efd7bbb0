/* policy/gate: deciding one NodeDisruption against budgets (shared/acceptance/gate.md, the
 * scenarios that need no API: G01-G13, U01-U05, A02-A04, A07-A09), and the ledger that keeps a
 * grant from being given twice. Fixture F: node1, node2 (testselect=test1), node3 (test2), local
 * PVs pinned to each, pod1 (app=db) on node1. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/intern.h"
#include "policy/gate.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ND(name, spec)                                                                             \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec "}"
#define GRANTED(name, nodes)                                                                       \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"nodeNames\":" nodes           \
	"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":" nodes "}}"
#define NDB(name, spec)                                                                            \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                         \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec "}"
#define ADB(name, spec)                                                                            \
	"{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                  \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\"},\"spec\":" spec \
	"}"
#define POD(name, node, app)                                                                       \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                   \
	"\",\"namespace\":\"default\",\"labels\":{\"app\":\"" app                                  \
	"\"}},\"spec\":{\"nodeName\":\"" node "\"}}"
#define ON_TEST1 "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"test1\"}}"

/* Fixture F (without its ADB) plus @extra objects. */
static struct kube_snapshot *cluster(const char *extra)
{
	static const char nodes[] =
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node1\",\"labels\":{"
	    "\"testselect\":\"test1\",\"kubernetes.io/hostname\":\"node1\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node2\",\"labels\":{"
	    "\"testselect\":\"test1\",\"kubernetes.io/hostname\":\"node2\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\",\"labels\":{"
	    "\"testselect\":\"test2\",\"kubernetes.io/hostname\":\"node3\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}," POD("pod1", "node1",
									       "db");
	size_t n = strlen(nodes) + strlen(extra) + 64;
	char *json = malloc(n);
	(void)snprintf(json, n, "{\"kind\":\"List\",\"items\":[%s%s%s]}", nodes, *extra ? "," : "",
		       extra);
	struct kube_snapshot *s = ng_test_snapshot(json);
	free(json);
	return s;
}

struct result {
	struct pol_gate_decision d;
	struct ng_arena *arena;
	struct kube_snapshot *s;
};

/* Decides the NodeDisruption named @nd in @s (defaults unless @cfg). */
static struct result decide(struct kube_snapshot *s, const char *nd,
			    const struct pol_gate_config *cfg, int64_t now_ms)
{
	struct result r = {.s = s, .arena = ng_arena_create(1u << 20)};
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd *req = NULL;
	for (size_t i = 0; i < n; i++)
		if (nds[i].name == ng_test_id(s, nd))
			req = &nds[i];
	assert_non_null(req);
	struct pol_gate_config def;
	pol_gate_config_from(s, &def);
	struct pol_ledger *l = pol_ledger_create(s);
	assert_int_equal(
	    pol_evaluate_disruption(s, cfg ? cfg : &def, l, req, now_ms, r.arena, &r.d), NG_OK);
	pol_ledger_destroy(l);
	return r;
}

static void done(struct result *r)
{
	ng_arena_destroy(r->arena);
	kube_snapshot_release(r->s);
}

static const int64_t NOW = 1795000000000; /* 2026-11-18 */

static void expect(struct result *r, enum pol_gate_outcome o, const char *reason_part)
{
	if (r->d.outcome != o || (reason_part && !strstr(r->d.reason, reason_part)))
		fail_msg("got %s \"%s\", expected %s containing \"%s\"",
			 pol_gate_outcome_str(r->d.outcome), r->d.reason, pol_gate_outcome_str(o),
			 reason_part ? reason_part : "");
}

static void test_G01_no_budgets_grants_the_selected_nodes(void **state)
{
	struct result r = decide(cluster(ND("nd", ON_TEST1 "}")), "nd", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL);
	assert_int_equal(r.d.nnodes, 2);
	assert_int_equal(r.d.nverdicts, 0);
	done(&r);
}

static void test_G02_G03_empty_selection(void **state)
{
	struct result r = decide(
	    cluster(ND("nd", "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"nope\"}}}")),
	    "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "no node matched");
	struct pol_gate_config cfg = {.reject_empty = false};
	struct result r2 = decide(kube_snapshot_ref(r.s), "nd", &cfg, NOW);
	expect(&r2, POL_GATE_GRANT, NULL);
	done(&r2);
	done(&r);
}

static void test_G04_G05_budget_full_rejects_or_waits(void **state)
{
	struct result r = decide(
	    cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND("nd", ON_TEST1 "}")),
	    "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "NodeDisruptionBudget pool");
	assert_int_equal(r.d.nverdicts, 1);
	assert_false(r.d.verdicts[0].ok);
	assert_int_equal(r.d.verdicts[0].kind, KUBE_RES_NDBS);
	assert_non_null(strstr(r.d.verdicts[0].reason, "limit 0 of 2"));
	done(&r);
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND(
		       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true}}")),
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_PENDING, "NodeDisruptionBudget pool");
	done(&r);
}

static void test_G06_G07_deadline(void **state)
{
	struct result r =
	    decide(cluster(ND("nd", ON_TEST1 ",\"retry\":{\"enabled\":true,"
					     "\"deadline\":\"2026-11-18T00:00:00Z\"}}")),
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "deadline passed");
	done(&r);
	/* Before the deadline a full budget keeps it Pending. */
	r = decide(cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":0}") "," ND(
		       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true,\"deadline\":"
				      "\"2030-01-01T00:00:00Z\"}}")),
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_PENDING, NULL);
	done(&r);
}

static void test_G08_G09_overlap(void **state)
{
	const char *objs = GRANTED("a", "[\"node1\",\"node2\"]") "," ND(
	    "b", "{\"nodeNames\":[\"node2\"]}") "," NDB("pool",
							ON_TEST1 ",\"maxDisruptedNodes\":2}");
	struct pol_gate_config strict = {.reject_empty = true, .reject_overlapping = true};
	struct result r = decide(cluster(objs), "b", &strict, NOW);
	expect(&r, POL_GATE_REJECT, "NodeDisruption a");
	done(&r);
	/* Overlap allowed: node2 is counted once, so the pool stays at 2 of 2. */
	r = decide(cluster(objs), "b", NULL, NOW);
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
	struct result r = decide(kube_snapshot_ref(s), "m", &cfg, NOW);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	r = decide(kube_snapshot_ref(s), "t", &cfg, NOW);
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
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL); /* the budget does not apply to that type */
	done(&r);
	r = decide(cluster(ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				     "\"maxDisruptions\":0}") "," ND("nd", ON_TEST1
								     ",\"type\":\"anything\"}")),
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "ApplicationDisruptionBudget default/db"); /* empty = all */
	done(&r);
}

static void test_G13_paused_keeps_pending(void **state)
{
	struct result r =
	    decide(cluster("{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
			   "\"metadata\":{\"name\":\"default\"},\"spec\":{\"paused\":true}}," ND(
			       "nd", ON_TEST1 ",\"retry\":{\"enabled\":true}}")),
		   "nd", NULL, NOW);
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

static void test_U01_U03_U05_unavailable_nodes_use_the_budget(void **state)
{
	struct result r = decide(unavailable(true, "node2"), "to1", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "1 of 1 in use"); /* U01 */
	done(&r);
	r = decide(unavailable(true, "node2"), "to2", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL); /* U02: node2 adds nothing */
	done(&r);
	r = decide(unavailable(false, "node2"), "to1", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL); /* U03 */
	done(&r);
	r = decide(unavailable(true, "node1"), "to2", NULL, NOW);
	expect(&r, POL_GATE_REJECT, NULL); /* U05: a cordoned node counts */
	assert_int_equal(r.d.verdicts[0].current, 1);
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
		   "nd", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	/* A04: a selected PVC is Lost, and a pod of the app runs on node1. */
	r = decide(cluster(PVC("data", "{\"app\":\"db\"}", "Lost", "gone") "," ADB(
		       "db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
			     "\"pvcSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
			     "\"maxDisruptions\":5}") "," ND("nd", ON_TEST1 "}")),
		   "nd", NULL, NOW);
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
	struct result r = decide(cluster(buf), "nd", NULL, NOW);
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
	struct result r = decide(cluster(buf), "second", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "default/db: 1 of 1 in use");
	assert_int_equal(r.d.verdicts[0].allowed, 0);
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
	    "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "db upgrade");
	done(&r);
}

static void test_every_failing_budget_is_listed(void **state)
{
	char buf[2048];
	(void)snprintf(
	    buf, sizeof(buf),
	    "%s," NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," NDB(
		"all", "{\"nodeSelector\":{},\"minUndisruptedNodes\":\"100%%\"}") "," ND("nd",
											 ON_TEST1
											 "}"),
	    two_app_nodes);
	struct result r = decide(cluster(buf), "nd", NULL, NOW);
	expect(&r, POL_GATE_REJECT, NULL);
	assert_int_equal(r.d.nverdicts, 3);
	for (size_t i = 0; i < r.d.nverdicts; i++)
		assert_false(r.d.verdicts[i].ok);
	done(&r);
}

#define NGC(spec)                                                                                  \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"default\"},\"spec\":" spec "}"

static void test_G03_G08_G10_rules_come_from_nodegateconfig(void **state)
{
	struct result r = decide(cluster(NGC("{\"rejectEmptyDisruptions\":false}") "," ND(
				     "nd", "{\"nodeNames\":[\"ghost\"]}")),
				 "nd", NULL, NOW);
	expect(&r, POL_GATE_GRANT, NULL); /* G03 */
	done(&r);
	r = decide(cluster(NGC("{\"rejectOverlappingDisruptions\":true}") "," GRANTED(
		       "a", "[\"node1\",\"node2\"]") "," ND("b", "{\"nodeNames\":[\"node2\"]}")),
		   "b", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "NodeDisruption a"); /* G08 */
	done(&r);
	r = decide(cluster(NGC("{\"allowedTypes\":[\"maintenance\",\"maintenance1\"]}") "," ND(
		       "t", ON_TEST1 ",\"type\":\"toto\"}")),
		   "t", NULL, NOW);
	expect(&r, POL_GATE_REJECT, "type \"toto\""); /* G10 */
	done(&r);
	r = decide(cluster(NGC("{\"allowedTypes\":\"oops\"}") "," ND("t", ON_TEST1 "}")), "t", NULL,
		   NOW);
	expect(&r, POL_GATE_PENDING, NULL); /* an unreadable config pauses */
	done(&r);
}

static void test_ledger_never_grants_the_same_capacity_twice(void **state)
{
	struct kube_snapshot *s = cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}") "," ND(
	    "a", "{\"nodeNames\":[\"node1\"]}") "," ND("b", "{\"nodeNames\":[\"node2\"]}"));
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *l = pol_ledger_create(s);
	struct ng_arena *a = ng_arena_create(1u << 20);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	struct pol_gate_decision d;
	/* Both look grantable against the (stale) snapshot, but the first grant goes into the
	 * ledger before the second is evaluated. */
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, &nds[0], NOW, a, &d), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_GRANT);
	assert_int_equal(pol_ledger_grant(l, nds[0].name, d.nodes, d.nnodes), NG_OK);
	assert_int_equal(pol_ledger_holder(l, ng_test_id(s, "node1")), ng_test_id(s, "a"));
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, &nds[1], NOW, a, &d), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_REJECT);
	assert_non_null(strstr(d.reason, "1 of 1 in use"));
	ng_arena_destroy(a);
	pol_ledger_destroy(l);
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_G01_no_budgets_grants_the_selected_nodes),
	    cmocka_unit_test(test_G02_G03_empty_selection),
	    cmocka_unit_test(test_G04_G05_budget_full_rejects_or_waits),
	    cmocka_unit_test(test_G06_G07_deadline),
	    cmocka_unit_test(test_G08_G09_overlap),
	    cmocka_unit_test(test_G10_allowed_types),
	    cmocka_unit_test(test_G11_G12_budget_types),
	    cmocka_unit_test(test_G13_paused_keeps_pending),
	    cmocka_unit_test(test_U01_U03_U05_unavailable_nodes_use_the_budget),
	    cmocka_unit_test(test_A02_A03_A04_volumes),
	    cmocka_unit_test(test_A07_one_request_on_two_app_nodes_costs_two),
	    cmocka_unit_test(test_A08_second_request_names_the_budget_in_use),
	    cmocka_unit_test(test_A09_frozen_budget),
	    cmocka_unit_test(test_every_failing_budget_is_listed),
	    cmocka_unit_test(test_G03_G08_G10_rules_come_from_nodegateconfig),
	    cmocka_unit_test(test_ledger_never_grants_the_same_capacity_twice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
