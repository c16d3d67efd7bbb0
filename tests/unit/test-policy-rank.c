/* policy/rank: the order in which pending requests are decided (R01-R05), over fixture F
 * (policy-gate-fixture.h). */
#include "tests/unit/policy-gate-fixture.h"

#define NDX(name, created, spec)                                                                   \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\",\"creationTimestamp\":\"" created          \
	"\"},\"spec\":" spec "}"

/* Ranks every undecided request of @s and returns their names in order, comma-separated. */
static void rank_names(struct kube_snapshot *s, char *out, size_t cap, size_t *ret_cp)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd *q[16];
	size_t nq = 0;
	for (size_t i = 0; i < n && nq < 16; i++)
		if (nds[i].state == KUBE_ND_UNKNOWN)
			q[nq++] = &nds[i];
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct ng_arena *a = ng_arena_create(1u << 20);
	assert_int_equal(pol_rank_pending(s, &cfg, q, nq, a), NG_OK);
	out[0] = '\0';
	for (size_t i = 0; i < nq; i++) {
		size_t len = strlen(out);
		(void)snprintf(out + len, cap - len, "%s%s", i ? "," : "",
			       ng_intern_str(kube_snapshot_pool(s), q[i]->name, NULL));
	}
	if (ret_cp)
		*ret_cp = cfg.control_plane_pending;
	ng_arena_destroy(a);
}

static void test_R01_R02_R03_R04_ranking(void **state)
{
	char order[256];
	/* R01: priority first. */
	struct kube_snapshot *s =
	    cluster(NDX("a", "2026-01-01T00:00:00Z", "{\"nodeNames\":[\"node1\"]}") "," NDX(
		"b", "2026-01-02T00:00:00Z", "{\"nodeNames\":[\"node2\"],\"priority\":10}"));
	rank_names(s, order, sizeof(order), NULL);
	assert_string_equal(order, "b,a");
	kube_snapshot_release(s);
	/* R02: a requestor already holding a grant goes first, even when younger. */
	s = cluster(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"x1\"},\"spec\":{\"nodeNames\":[\"node3\"],\"requestor\":\"x\"},"
	    "\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"node3\"]}}," NDX(
		"y1", "2026-01-01T00:00:00Z",
		"{\"nodeNames\":[\"node1\"],\"requestor\":\"y\"}") "," NDX("x2",
									   "2026-01-05T00:00:00Z",
									   "{\"nodeNames\":["
									   "\"node2\"],"
									   "\"requestor\":\"x\"}"));
	rank_names(s, order, sizeof(order), NULL);
	assert_string_equal(order, "x2,y1");
	kube_snapshot_release(s);
	/* R03: fewer pending requests of the same requestor first; R04: then age, then name. */
	s = cluster(
	    NDX("y1", "2026-01-01T00:00:00Z", "{\"nodeNames\":[\"node1\"],\"requestor\":\"y\"}") "," NDX(
		"y2", "2026-01-01T00:00:00Z",
		"{\"nodeNames\":[\"node2\"],\"requestor\":\"y\"}") "," NDX("y3",
									   "2026-01-01T00:00:"
									   "00Z",
									   "{\"nodeNames\":["
									   "\"node3\"],"
									   "\"requestor\":"
									   "\"y\"}") "," NDX("z"
											     "1",
											     "2"
											     "0"
											     "2"
											     "6"
											     "-"
											     "0"
											     "1"
											     "-"
											     "0"
											     "3"
											     "T"
											     "0"
											     "0"
											     ":"
											     "0"
											     "0"
											     ":"
											     "0"
											     "0"
											     "Z",
											     "{"
											     "\"nod"
											     "eName"
											     "s\":["
											     "\"nod"
											     "e3\"]"
											     ",\"re"
											     "quest"
											     "or\":"
											     "\"z\""
											     "}"));
	rank_names(s, order, sizeof(order), NULL);
	assert_string_equal(order, "z1,y1,y2,y3");
	kube_snapshot_release(s);
	s = cluster(NDX("old", "2026-01-01T00:00:00Z", "{\"nodeNames\":[\"node1\"]}") "," NDX(
	    "new-b", "2026-01-02T00:00:00Z",
	    "{\"nodeNames\":[\"node2\"]}") "," NDX("new-a", "2026-01-02T00:00:00Z",
						   "{\"nodeNames\":[\"node3\"]}"));
	rank_names(s, order, sizeof(order), NULL);
	assert_string_equal(order, "old,new-a,new-b");
	kube_snapshot_release(s);
}

#define CP_NODE(n)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n                     \
	"\",\"labels\":{\"node-role.kubernetes.io/"                                                \
	"control-plane\":\"\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"       \
	"\"True\"}]}}"

/* R05 with the grants of @granted in the ledger: the decision for @nd. */
static enum pol_gate_outcome r05(const char *granted, const char *nd)
{
	char buf[2048];
	(void)snprintf(
	    buf, sizeof(buf),
	    CP_NODE("cp1") "," CP_NODE("cp2") ",%s%s" NDX(
		"c1", "2026-01-01T00:00:00Z",
		"{\"nodeNames\":[\"cp1\"]}") "," NDX("c2", "2026-01-02T00:00:00Z",
						     "{\"nodeNames\":[\"cp2\"]}") "," NDX("w1",
											  "2026-01-"
											  "01T00:"
											  "00:00Z",
											  "{\"nodeN"
											  "ames\":["
											  "\"node1"
											  "\"]}"),
	    granted, *granted ? "," : "");
	struct kube_snapshot *s = cluster(buf);
	char order[128];
	size_t ncp = 0;
	rank_names(s, order, sizeof(order), &ncp);
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	cfg.control_plane_pending = ncp;
	struct result r = decide(s, nd, &cfg, NOW_WALL_MS);
	enum pol_gate_outcome o = r.d.outcome;
	done(&r);
	return o;
}

static void test_R05_control_plane_one_at_a_time_first_and_alone(void **state)
{
	char order[128];
	struct kube_snapshot *s = cluster(CP_NODE("cp1") "," NDX(
	    "w1", "2026-01-01T00:00:00Z",
	    "{\"nodeNames\":[\"node1\"]}") "," NDX("c1", "2026-01-05T00:00:00Z",
						   "{\"nodeNames\":[\"cp1\"]}"));
	rank_names(s, order, sizeof(order), NULL);
	assert_string_equal(order, "c1,w1"); /* control plane first, though younger */
	kube_snapshot_release(s);
	/* A request selecting its nodes touches the control plane when its selector matches a
	 * control-plane node: it goes first and counts as a pending control-plane request. */
	size_t ncp = 0;
	s = cluster(CP_NODE("cp1") "," NDX(
	    "w1", "2026-01-01T00:00:00Z",
	    "{\"nodeNames\":[\"node1\"]}") "," NDX("sel", "2026-01-05T00:00:00Z",
						   "{\"nodeSelector\":{\"matchLabels\":{"
						   "\"node-role.kubernetes.io/control-plane\":"
						   "\"\"}}}"));
	rank_names(s, order, sizeof(order), &ncp);
	assert_string_equal(order, "sel,w1");
	assert_int_equal(ncp, 1);
	kube_snapshot_release(s);
	/* Nothing granted: cp1 goes; cp2 and the worker wait. */
	assert_int_equal(r05("", "c1"), POL_GATE_GRANT);
	assert_int_equal(r05("", "w1"), POL_GATE_PENDING);
	/* cp1 granted: cp2 waits, the worker waits. */
	assert_int_equal(r05(GRANTED("g1", "[\"cp1\"]"), "c2"), POL_GATE_PENDING);
	/* A worker holds a grant: a control-plane request waits for it. */
	assert_int_equal(r05(GRANTED("gw", "[\"node2\"]"), "c1"), POL_GATE_PENDING);
	/* Mixed or multiple control-plane nodes in one request are refused. */
	struct result r = decide(
	    cluster(CP_NODE("cp1") "," CP_NODE("cp2") "," ND(
		"mix",
		"{\"nodeNames\":[\"cp1\",\"node1\"]}") "," ND("two",
							      "{\"nodeNames\":[\"cp1\",\"cp2\"]}")),
	    "mix", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "never disrupted together with workers");
	struct result r2 = decide(kube_snapshot_ref(r.s), "two", NULL, NOW_WALL_MS);
	expect(&r2, POL_GATE_REJECT, "one at a time");
	done(&r2);
	done(&r);
}

/* A request whose share the ledger already holds (its hooks are out, or its grant is on its way
 * to the API server) is decided again: the control-plane node it holds itself does not make it
 * wait, while one held by another request does. */
static void test_R05_a_request_never_waits_for_the_node_it_holds_itself(void **state)
{
	struct kube_snapshot *s = cluster(CP_NODE("cp1") "," CP_NODE("cp2") "," NDX(
	    "c1", "2026-01-01T00:00:00Z",
	    "{\"nodeNames\":[\"cp1\"]}") "," NDX("c2", "2026-01-01T00:00:00Z",
						 "{\"nodeNames\":[\"cp2\"]}"));
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *l = pol_ledger_create(s);
	struct ng_arena *a = ng_arena_create(1u << 20);
	assert_non_null(l);
	assert_non_null(a);
	const struct kube_nd *c1 = find_nd(s, "c1");
	uint32_t cp1 = ng_test_id(s, "cp1");
	assert_int_equal(pol_ledger_grant(l, c1->name, &cp1, 1), NG_OK);
	struct pol_gate_decision d;
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, c1, NOW_WALL_MS, a, &d), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_GRANT);
	ng_arena_reset(a);
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, find_nd(s, "c2"), NOW_WALL_MS, a, &d),
			 NG_OK);
	assert_int_equal(d.outcome, POL_GATE_PENDING);
	ng_arena_destroy(a);
	pol_ledger_destroy(l);
	kube_snapshot_release(s);
}

/* NodeGateConfig controlPlane.selector replaces the node-role label: the nodes it selects go one
 * at a time and alone; nodes carrying only the label are workers then. */
static void test_R05_control_plane_selector_from_nodegateconfig(void **state)
{
	struct result r = decide(
	    cluster(NGC(
		"{\"controlPlane\":{\"selector\":{\"matchLabels\":{\"testselect\":"
		"\"test1\"}}}}") "," CP_NODE("cp1") "," CP_NODE("cp2") "," ND("two",
									      "{\"nodeNames\":["
									      "\"node1\",\"node2\"]"
									      "}") "," ND("mix",
											  "{\"nodeN"
											  "ames\":["
											  "\"node1"
											  "\","
											  "\"node3"
											  "\"]}") "," ND("labelled",
													 "{\"nodeNames\":[\"cp1\",\"cp2\"]}")),
	    "two", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_REJECT, "one at a time (2 requested)");
	struct result r2 = decide(kube_snapshot_ref(r.s), "mix", NULL, NOW_WALL_MS);
	expect(&r2, POL_GATE_REJECT, "never disrupted together with workers");
	done(&r2);
	/* cp1 and cp2 are workers under this selector. */
	r2 = decide(kube_snapshot_ref(r.s), "labelled", NULL, NOW_WALL_MS);
	expect(&r2, POL_GATE_GRANT, NULL);
	done(&r2);
	done(&r);
	/* A selector nodegate cannot read pauses the gate rather than guessing. */
	r = decide(
	    cluster(NGC(
		"{\"controlPlane\":{\"selector\":{\"matchExpressions\":[{"
		"\"key\":\"a\",\"operator\":\"Bogus\"}]}}}") "," ND("nd",
								    "{\"nodeNames\":[\"node1\"]}")),
	    "nd", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING, "paused");
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_R01_R02_R03_R04_ranking),
	    cmocka_unit_test(test_R05_control_plane_one_at_a_time_first_and_alone),
	    cmocka_unit_test(test_R05_control_plane_selector_from_nodegateconfig),
	    cmocka_unit_test(test_R05_a_request_never_waits_for_the_node_it_holds_itself),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
