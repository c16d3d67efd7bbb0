/* policy/ledger and budget statuses: the ledger that keeps a grant from being given twice, its
 * counts against counts from scratch, and what a budget's status lists, over fixture F
 * (policy-gate-fixture.h). */
#include "tests/unit/policy-gate-fixture.h"

#include "common/json.h"
#include "kube/internal.h"

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
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, &nds[0], NOW_WALL_MS, a, &d), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_GRANT);
	assert_int_equal(pol_ledger_grant(l, nds[0].name, d.nodes, d.nnodes), NG_OK);
	assert_int_equal(pol_ledger_holder(l, ng_test_id(s, "node1")), ng_test_id(s, "a"));
	size_t nnodes;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	for (size_t i = 0; i < nnodes; i++) /* the per-index view agrees with the holders */
		assert_int_equal(pol_ledger_held_at(l, i),
				 pol_ledger_holder(l, nodes[i].name) != NG_INTERN_NONE);
	assert_false(pol_ledger_held_at(l, nnodes)); /* out of range: not held */
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, &nds[1], NOW_WALL_MS, a, &d), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_REJECT);
	assert_non_null(strstr(d.reason, "1 of 1 in use"));
	ng_arena_destroy(a);
	pol_ledger_destroy(l);
	kube_snapshot_release(s);
}

/* One ledger serves a whole round: budget scopes are computed once and reused, while grants made
 * during the round still count. Each decision must equal the one a fresh ledger, holding the
 * same grants, makes. Two overlapping pools, an application on node1 and node2, a pool by
 * selector and requests by name and by selector. */
static void test_one_ledger_per_round_decides_as_fresh_ledgers_do(void **state)
{
	/* clang-format off */
	struct kube_snapshot *s = cluster(
	    POD("pod2", "node2", "db") ","
	    NDB("test1", ON_TEST1 ",\"maxDisruptedNodes\":1}") ","
	    NDB("all", "{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"testselect\","
		       "\"operator\":\"Exists\"}]},\"maxDisruptedNodes\":2}") ","
	    ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1}") ","
	    ND("a", "{\"nodeNames\":[\"node3\"]}") ","
	    ND("b", "{\"nodeNames\":[\"node1\"]}") ","
	    ND("c", "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"test1\"}}}") ","
	    ND("d", "{\"nodeNames\":[\"node2\"]}"));
	/* clang-format on */
	static const char *const order[] = {"a", "b", "c", "d"};
	static const enum pol_gate_outcome want[] = {POL_GATE_GRANT, POL_GATE_GRANT,
						     POL_GATE_REJECT, POL_GATE_REJECT};
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *round = pol_ledger_create(s);
	struct ng_arena *a = ng_arena_create(1u << 20), *b = ng_arena_create(1u << 20);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd *granted[4] = {0};
	size_t ng = 0;
	for (size_t k = 0; k < 4; k++) {
		const struct kube_nd *nd = NULL;
		for (size_t i = 0; i < n; i++)
			if (nds[i].name == ng_test_id(s, order[k]))
				nd = &nds[i];
		assert_non_null(nd);
		struct pol_gate_decision d, fresh_d;
		ng_arena_reset(a);
		ng_arena_reset(b);
		assert_int_equal(pol_evaluate_disruption(s, &cfg, round, nd, NOW_WALL_MS, a, &d),
				 NG_OK);
		struct pol_ledger *fresh = pol_ledger_create(s);
		for (size_t g = 0; g < ng; g++)
			assert_int_equal(pol_ledger_grant(fresh, granted[g]->name,
							  granted[g]->node_names,
							  granted[g]->nnode_names),
					 NG_OK);
		assert_int_equal(
		    pol_evaluate_disruption(s, &cfg, fresh, nd, NOW_WALL_MS, b, &fresh_d), NG_OK);
		pol_ledger_destroy(fresh);
		if (d.outcome != want[k] || fresh_d.outcome != d.outcome ||
		    strcmp(d.reason, fresh_d.reason) != 0 || d.nverdicts != fresh_d.nverdicts)
			fail_msg("%s: %s \"%s\" (fresh ledger: %s \"%s\"), expected %s", order[k],
				 pol_gate_outcome_str(d.outcome), d.reason,
				 pol_gate_outcome_str(fresh_d.outcome), fresh_d.reason,
				 pol_gate_outcome_str(want[k]));
		for (size_t v = 0; v < d.nverdicts; v++)
			assert_string_equal(d.verdicts[v].reason, fresh_d.verdicts[v].reason);
		if (d.outcome == POL_GATE_GRANT) {
			/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): asserted above */
			assert_int_equal(pol_ledger_grant(round, nd->name, d.nodes, d.nnodes),
					 NG_OK);
			granted[ng++] = nd;
		}
	}
	/* Budget status from the same ledger: "test1" holds node1 of its two nodes. */
	struct pol_budget_status bs;
	ng_arena_reset(a);
	assert_int_equal(pol_budget_status(s, round, KUBE_RES_NDBS, 0, NOW_WALL_MS, a, &bs), NG_OK);
	assert_int_equal(bs.watched, 2);
	assert_int_equal(bs.current, 1);
	assert_int_equal(bs.allowed, 0);
	ng_arena_destroy(a);
	ng_arena_destroy(b);
	pol_ledger_destroy(round);
	kube_snapshot_release(s);
}

/* ---- the ledger's incremental counts ---- */

static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 16);
}

/* A cluster with every kind of scope: 60 nodes in racks of 10 and 3 zones (some NotReady,
 * cordoned or tainted, one control-plane), 4 pods a node of 12 apps (and two on nodes the
 * cache does not know, one finished), ADBs by matchLabels, by an In of two values, by Exists
 * only and by pvcSelector, NDBs by rack, by zone In, pool-wide, by Exists without counting
 * unavailable nodes and with a taint target; @nreq requests of one node each (n0, n1, ...),
 * three by rack, two of two nodes, and a Granted one holding a node and a second unknown one. */
static struct kube_snapshot *counted_cluster(int nreq)
{
	struct ng_buf b;
	ng_buf_init(&b, 1u << 24);
	ng_status st = ng_buf_puts(&b, "{\"kind\":\"List\",\"items\":[");
	for (int i = 0; st == NG_OK && i < 60; i++)
		st = ng_buf_printf(
		    &b,
		    "%s{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n%d\","
		    "\"labels\":{\"rack\":\"r%d\",\"zone\":\"z%d\"%s}},\"spec\":{%s%s},"
		    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
		    i ? "," : "", i, i / 10, i % 3,
		    i == 0 ? ",\"node-role.kubernetes.io/control-plane\":\"\"" : "",
		    i % 13 == 7 ? "\"unschedulable\":true" : "",
		    i % 7 == 3 ? (i % 13 == 7 ? ",\"taints\":[{\"key\":\"maint\",\"effect\":"
						"\"NoSchedule\"}]"
					      : "\"taints\":[{\"key\":\"maint\",\"effect\":"
						"\"NoSchedule\"}]")
			       : "",
		    i % 11 == 5 ? "False" : "True");
	for (int i = 0; st == NG_OK && i < 60; i++)
		for (int k = 0; st == NG_OK && k < 4; k++)
			st = ng_buf_printf(
			    &b,
			    ",{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
			    "\"p%d-%d\",\"namespace\":\"default\",\"labels\":{\"app\":\"a%d\"}},"
			    "\"spec\":{\"nodeName\":\"n%d\"%s},\"status\":{\"phase\":\"%s\"}}",
			    i, k, (i * 4 + k * 7) % 12, i,
			    k == 3 && i % 9 == 0
				? ",\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{"
				  "\"claimName\":\"data\"}}]"
				: "",
			    i == 9 && k == 0 ? "Succeeded" : "Running");
	st = st ? st
		: ng_buf_puts(
		      &b,
		      ",{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"lost\","
		      "\"namespace\":\"default\",\"labels\":{\"app\":\"a1\"}},\"spec\":{"
		      "\"nodeName\":\"ghost\"}},"
		      "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"lost2\","
		      "\"namespace\":\"default\",\"labels\":{\"app\":\"a3\"}},\"spec\":{"
		      "\"nodeName\":\"ghost2\"}},"
		      "{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{"
		      "\"name\":\"data\",\"namespace\":\"default\",\"labels\":{\"keep\":\"yes\"}},"
		      "\"spec\":{},\"status\":{\"phase\":\"Bound\"}}");
	for (int a = 0; st == NG_OK && a < 8; a++)
		st = ng_buf_printf(&b,
				   "," ADB("m%d",
					   "{\"podSelector\":{\"matchLabels\":{\"app\":\"a%d\"}},"
					   "\"maxDisruptions\":%s}"),
				   a, a, a % 2 ? "\"50%\"" : "3");
	st = st ? st
		: ng_buf_puts(&b,
			      "," ADB("two",
				      "{\"podSelector\":{\"matchExpressions\":[{\"key\":\"app\","
				      "\"operator\":\"In\",\"values\":[\"a8\",\"a9\",\"a8\"]}]},"
				      "\"maxDisruptions\":4}") "," ADB("any",
								       "{\"podSelector\":{"
								       "\"matchExpressions\":[{"
								       "\"key\":\"app\","
								       "\"operator\":"
								       "\"Exists\"}]},"
								       "\"maxDisruptions\":\"30%"
								       "\"}") "," ADB("claims",
										      "{\"pvcSelect"
										      "or\":{"
										      "\"matchLabel"
										      "s\":{"
										      "\"keep\":"
										      "\"yes\"}},"
										      "\"maxDisrupt"
										      "ions\":1}"));
	for (int r = 0; st == NG_OK && r < 6; r++)
		st = ng_buf_printf(&b,
				   "," NDB("rack%d", "{\"nodeSelector\":{\"matchLabels\":{\"rack\":"
						     "\"r%d\"}},\"maxDisruptedNodes\":\"50%%\"}"),
				   r, r);
	st =
	    st ? st
	       : ng_buf_puts(
		     &b,
		     "," NDB(
			 "zones",
			 "{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"zone\","
			 "\"operator\":\"In\",\"values\":[\"z0\",\"z1\"]}]},"
			 "\"minUndisruptedNodes\":\"60%\"}") "," NDB("pool",
								     "{\"nodeSelector\":{},"
								     "\"maxDisruptedNodes\":\"40%"
								     "\"}") "," NDB("zoned",
										    "{\"nodeSelecto"
										    "r\":{"
										    "\"matchExpress"
										    "ions\":[{"
										    "\"key\":"
										    "\"zone\","
										    "\"operator\":"
										    "\"Exists\"}]},"
										    "\"maxDisrupted"
										    "Nodes\":20,"
										    "\"countUnavail"
										    "ableNodes\":"
										    "false}") "," NDB("tainted",
												      "{\"nodeSelector\":{\"matchLabels\":{\"zone\":\"z2\"}},"
												      "\"maxDisruptedNodes\":6,\"taintTargets\":[{\"key\":\"maint\","
												      "\"operator\":\"Exists\"}]}") ","
																    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
																    "\"metadata\":{\"name\":\"held\"},\"spec\":{\"nodeNames\":[\"n12\"]},"
																    "\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"n12\",\"ghost2\"]}}");
	for (int i = 0; st == NG_OK && i < nreq; i++)
		st = ng_buf_printf(&b, "," ND("q%d", "{\"nodeNames\":[\"n%d\"]}"), i, i);
	for (int r = 1; st == NG_OK && r < 4; r++)
		st = ng_buf_printf(
		    &b,
		    "," ND("rack-%d", "{\"nodeSelector\":{\"matchLabels\":{\"rack\":\"r%d\"}}}"), r,
		    r);
	st = st ? st
		: ng_buf_puts(&b, "," ND("pair1", "{\"nodeNames\":[\"n21\",\"n44\"]}") "," ND(
				      "pair2", "{\"nodeNames\":[\"n3\",\"n36\"]}") "]}");
	assert_int_equal(st, NG_OK);
	struct kube_builder *k = kube_builder_create();
	struct kube_snapshot *s = NULL;
	struct ng_err err = {0};
	assert_non_null(k);
	if (kube_builder_add_json(k, b.data, b.len, &err) != NG_OK)
		fail_msg("cluster: %s", err.msg);
	assert_int_equal(kube_builder_finish(k, &s), NG_OK);
	ng_buf_finish(&b);
	return s;
}

static bool has_id(const uint32_t *v, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* A budget's status lists the requests that touch its scope (found from the scope's nodes
 * through one index of the requests by node, or from the requests' nodes when they are fewer
 * than the scope's): the same, in the same order, as testing every request's nodes against
 * the scope, for every budget of a cluster with granted nodes that have no Node record and
 * pods on such nodes, two statuses per budget from one ledger; with a request on every node
 * (more request nodes than any scope has) and with two (fewer than the pool-wide scope). */
static void budget_status_lists_the_requests(int nreq)
{
	struct kube_snapshot *s = counted_cluster(nreq);
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *l = pol_ledger_create(s);
	struct ng_arena *a = ng_arena_create(1u << 22), *b = ng_arena_create(1u << 22);
	assert_non_null(l);
	size_t nnd;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	size_t listed = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < 2; k++) {
			enum kube_resource kind = k ? KUBE_RES_ADBS : KUBE_RES_NDBS;
			for (size_t i = 0; i < kube_snapshot_count(s, kind); i++) {
				struct pol_budget_status bs;
				ng_arena_reset(a);
				assert_int_equal(
				    pol_budget_status(s, l, kind, i, NOW_WALL_MS, a, &bs), NG_OK);
				size_t want = 0;
				for (size_t r = 0; r < nnd; r++) {
					if (nds[r].state == KUBE_ND_REJECTED)
						continue;
					const uint32_t *nodes = nds[r].disrupted;
					size_t n = nds[r].ndisrupted;
					struct pol_gate_decision d;
					if (nds[r].state != KUBE_ND_GRANTED) {
						ng_arena_reset(b);
						struct pol_ledger *x = pol_ledger_create(s);
						assert_int_equal(
						    pol_evaluate_disruption(s, &cfg, x, &nds[r],
									    NOW_WALL_MS, b, &d),
						    NG_OK);
						pol_ledger_destroy(x);
						nodes = d.nodes;
						n = d.nnodes;
					}
					bool touches = false;
					for (size_t j = 0; j < n && !touches; j++)
						touches = has_id(bs.nodes, bs.watched, nodes[j]);
					if (!touches)
						continue;
					assert_true(want < bs.nnds);
					assert_int_equal(bs.nd_names[want], nds[r].name);
					assert_int_equal(bs.nd_states[want],
							 nds[r].state == KUBE_ND_GRANTED
							     ? KUBE_ND_GRANTED
							     : KUBE_ND_PENDING);
					want++;
				}
				assert_int_equal(bs.nnds, want);
				listed += want;
			}
		}
	assert_true(listed > (nreq > 2 ? 100u : 20u));
	ng_arena_destroy(a);
	ng_arena_destroy(b);
	pol_ledger_destroy(l);
	kube_snapshot_release(s);
}

static void test_budget_status_lists_the_requests_touching_its_scope(void **state)
{
	(void)state;
	budget_status_lists_the_requests(60);
	budget_status_lists_the_requests(2);
}

struct grant_rec {
	uint32_t name;
	uint32_t nodes[3];
	size_t n;
};

/* After any sequence of grants, a ledger that computed its scopes first and counted the
 * grants as they came decides every request exactly as a fresh ledger given the same grants,
 * and each verdict's count of disrupted nodes equals the one pol_budget_status() recounts from
 * the scope's nodes. */
static void test_ledger_counts_equal_counts_from_scratch_after_grants(void **state)
{
	struct kube_snapshot *s = counted_cluster(60);
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	size_t n, nnodes;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	struct pol_ledger *round = pol_ledger_create(s);
	struct ng_arena *a = ng_arena_create(1u << 22), *b = ng_arena_create(1u << 22);
	struct grant_rec grants[80];
	size_t ng = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	assert_non_null(round);
	assert_true(n > 0);
	for (int step = 0; step < 70; step++) {
		/* Every request decided by both ledgers (the first pass computes every scope of
		 * the round ledger before any grant). */
		struct pol_ledger *fresh = pol_ledger_create(s);
		assert_non_null(fresh);
		for (size_t g = 0; g < ng; g++)
			assert_int_equal(
			    pol_ledger_grant(fresh, grants[g].name, grants[g].nodes, grants[g].n),
			    NG_OK);
		for (size_t i = 0; i < n; i++) {
			if (nds[i].state == KUBE_ND_GRANTED)
				continue;
			struct pol_gate_decision d, f;
			ng_arena_reset(a);
			ng_arena_reset(b);
			assert_int_equal(
			    pol_evaluate_disruption(s, &cfg, round, &nds[i], NOW_WALL_MS, a, &d),
			    NG_OK);
			assert_int_equal(
			    pol_evaluate_disruption(s, &cfg, fresh, &nds[i], NOW_WALL_MS, b, &f),
			    NG_OK);
			if (d.outcome != f.outcome || strcmp(d.reason, f.reason) != 0 ||
			    d.nverdicts != f.nverdicts)
				fail_msg("step %d, %s: %s \"%s\", fresh ledger %s \"%s\"", step,
					 ng_intern_str(kube_snapshot_pool(s), nds[i].name, NULL),
					 pol_gate_outcome_str(d.outcome), d.reason,
					 pol_gate_outcome_str(f.outcome), f.reason);
			for (size_t v = 0; v < d.nverdicts; v++) {
				const struct pol_budget_verdict *x = &d.verdicts[v];
				assert_int_equal(x->index, f.verdicts[v].index);
				assert_int_equal(x->current, f.verdicts[v].current);
				assert_int_equal(x->allowed, f.verdicts[v].allowed);
				assert_string_equal(x->reason, f.verdicts[v].reason);
				struct pol_budget_status bs;
				assert_int_equal(pol_budget_status(s, fresh, x->kind, x->index,
								   NOW_WALL_MS, b, &bs),
						 NG_OK);
				if (x->ok || strstr(x->reason, " in use"))
					assert_int_equal(x->current, (int64_t)bs.current);
			}
		}
		pol_ledger_destroy(fresh);
		if (ng == sizeof(grants) / sizeof(grants[0]))
			break;
		/* The next grant: a request granted as the gate would, or any nodes (the unknown
		 * one, control-plane, held ones too) recorded for any request. */
		struct grant_rec *g = &grants[ng];
		/* NOLINTNEXTLINE(clang-analyzer-core.DivideZero): n > 0 is asserted above */
		const struct kube_nd *nd = &nds[rnd(&seed) % n];
		g->name = nd->name;
		if (rnd(&seed) % 2) {
			struct pol_gate_decision d;
			ng_arena_reset(a);
			assert_int_equal(
			    pol_evaluate_disruption(s, &cfg, round, nd, NOW_WALL_MS, a, &d), NG_OK);
			if (d.outcome != POL_GATE_GRANT || d.nnodes > 3)
				continue;
			memcpy(g->nodes, d.nodes, d.nnodes * sizeof(*d.nodes));
			g->n = d.nnodes;
		} else {
			g->n = 1 + rnd(&seed) % 3;
			for (size_t j = 0; j < g->n; j++)
				g->nodes[j] = rnd(&seed) % 8 == 0 ? ng_test_id(s, "ghost")
								  : nodes[rnd(&seed) % nnodes].name;
		}
		assert_int_equal(pol_ledger_grant(round, g->name, g->nodes, g->n), NG_OK);
		ng++;
	}
	assert_true(ng > 20);
	ng_arena_destroy(a);
	ng_arena_destroy(b);
	pol_ledger_destroy(round);
	kube_snapshot_release(s);
}

/* ---- step 8: health hooks ---- */

/* Decides @nd in @s with a fresh ledger and with one taking its pools from @pools: both must
 * answer alike; returns that outcome. */
static enum pol_gate_outcome decide_both(struct kube_snapshot *s, struct pol_scope_cache *pools,
					 const char *nd)
{
	enum pol_gate_outcome out[2];
	for (int k = 0; k < 2; k++) {
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct pol_ledger *l = pol_ledger_create(s);
		assert_non_null(l);
		if (k)
			pol_ledger_use_cache(l, pools);
		struct pol_gate_config cfg;
		pol_gate_config_from(s, &cfg);
		struct pol_gate_decision d;
		assert_int_equal(
		    pol_evaluate_disruption(s, &cfg, l, find_nd(s, nd), NOW_WALL_MS, arena, &d),
		    NG_OK);
		out[k] = d.outcome;
		pol_ledger_destroy(l);
		ng_arena_destroy(arena);
	}
	assert_int_equal(out[0], out[1]);
	return out[0];
}

#define TNODE(n)                                                                                   \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"pool\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

/* The gate keeps NodeDisruptionBudget pools from one round's ledger to the next while the
 * nodes and budgets are unchanged: the kept pool must count the nodes each ledger holds, as a
 * pool computed afresh does, through grants coming and going, and be dropped when a budget
 * changes. */
static void test_pools_kept_across_ledgers_count_what_each_ledger_holds(void **state)
{
	(void)state;
	struct kube_cache *c = kube_cache_create();
	struct pol_scope_cache *pools = pol_scope_cache_create();
	assert_non_null(c);
	assert_non_null(pools);
	static const char *const nodes[] = {TNODE("n1"), TNODE("n2"), TNODE("n3"), TNODE("n4")};
	for (size_t i = 0; i < 4; i++)
		ng_test_cache_put(c, nodes[i], false);
	const char *ndb2 = NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
				       "\"maxDisruptedNodes\":2}");
	ng_test_cache_put(c, ndb2, false);
	ng_test_cache_put(c, GRANTED("a", "[\"n1\"]"), false);
	ng_test_cache_put(c, ND("b", "{\"nodeNames\":[\"n2\"],\"retry\":{\"enabled\":true}}"),
			  false);
	struct kube_snapshot *s1 = NULL;
	assert_int_equal(kube_cache_publish(c, &s1), NG_OK);
	assert_int_equal(decide_both(s1, pools, "b"), POL_GATE_GRANT); /* 1 held, +1 of 2 */

	/* Another grant: only the requests changed, so the pool is the kept one. */
	ng_test_cache_put(c, GRANTED("c", "[\"n3\"]"), false);
	struct kube_snapshot *s2 = NULL;
	assert_int_equal(kube_cache_publish(c, &s2), NG_OK);
	assert_true(kube_snapshot_table_serial(s1, KUBE_RES_NODES) ==
		    kube_snapshot_table_serial(s2, KUBE_RES_NODES));
	assert_true(kube_snapshot_table_serial(s1, KUBE_RES_NDBS) ==
		    kube_snapshot_table_serial(s2, KUBE_RES_NDBS));
	assert_int_equal(decide_both(s2, pools, "b"), POL_GATE_PENDING); /* 2 held: full */

	/* The first grant gone: room again. */
	ng_test_cache_put(c, GRANTED("a", "[\"n1\"]"), true);
	struct kube_snapshot *s3 = NULL;
	assert_int_equal(kube_cache_publish(c, &s3), NG_OK);
	assert_int_equal(decide_both(s3, pools, "b"), POL_GATE_GRANT);

	/* n4's kubelet posts its status: a new table of the same shape, the pool kept. */
	ng_test_cache_put(c,
			  "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n4\","
			  "\"resourceVersion\":\"77\",\"labels\":{\"pool\":\"a\"}},\"status\":{"
			  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
			  "\"lastHeartbeatTime\":\"2026-11-29T10:00:00Z\"}]}}",
			  false);
	struct kube_snapshot *s3h = NULL;
	assert_int_equal(kube_cache_publish(c, &s3h), NG_OK);
	assert_true(kube_snapshot_table_serial(s3, KUBE_RES_NODES) !=
		    kube_snapshot_table_serial(s3h, KUBE_RES_NODES));
	assert_true(kube_snapshot_table_shape(s3, KUBE_RES_NODES) ==
		    kube_snapshot_table_shape(s3h, KUBE_RES_NODES));
	assert_int_equal(decide_both(s3h, pools, "b"), POL_GATE_GRANT);

	/* An autoscaler marks n4 for deletion: counted as disrupted, the pool is full again. A
	 * pool kept across that change would grant. */
	ng_test_cache_put(
	    c,
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n4\","
	    "\"resourceVersion\":\"78\",\"labels\":{\"pool\":\"a\"}},\"spec\":{\"taints\":"
	    "[{\"key\":\"ToBeDeletedByClusterAutoscaler\",\"effect\":\"NoSchedule\"}]},"
	    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	    false);
	struct kube_snapshot *s3t = NULL;
	assert_int_equal(kube_cache_publish(c, &s3t), NG_OK);
	assert_int_equal(decide_both(s3t, pools, "b"), POL_GATE_PENDING);

	/* The budget changed: its pool is made again (limit 1, one held). */
	ng_test_cache_put(c,
			  NDB("pool", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
				      "\"maxDisruptedNodes\":1}"),
			  false);
	struct kube_snapshot *s4 = NULL;
	assert_int_equal(kube_cache_publish(c, &s4), NG_OK);
	assert_int_equal(decide_both(s4, pools, "b"), POL_GATE_PENDING);

	kube_snapshot_release(s1);
	kube_snapshot_release(s2);
	kube_snapshot_release(s3);
	kube_snapshot_release(s3h);
	kube_snapshot_release(s3t);
	kube_snapshot_release(s4);
	pol_scope_cache_destroy(pools);
	kube_cache_destroy(c);
}

#define ZNODE(n, z, rv)                                                                            \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n                     \
	"\",\"resourceVersion\":\"" rv "\",\"labels\":{\"topology.kubernetes.io/zone\":\"" z       \
	"\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

/* A budget by zone keeps its pool's domains across ledgers too: each ledger must count the
 * domains its own held nodes disrupt, as domains made afresh do. */
static void test_kept_pools_count_each_ledgers_domains(void **state)
{
	(void)state;
	struct kube_cache *c = kube_cache_create();
	struct pol_scope_cache *pools = pol_scope_cache_create();
	assert_non_null(c);
	assert_non_null(pools);
	ng_test_cache_put(c, ZNODE("a1", "a", "1"), false);
	ng_test_cache_put(c, ZNODE("a2", "a", "1"), false);
	ng_test_cache_put(c, ZNODE("b1", "b", "1"), false);
	ng_test_cache_put(c, ZNODE("b2", "b", "1"), false);
	ng_test_cache_put(c,
			  NDB("zones",
			      "{\"nodeSelector\":{},\"topologyKey\":"
			      "\"topology.kubernetes.io/zone\",\"maxDisruptedDomains\":1}"),
			  false);
	ng_test_cache_put(c, GRANTED("a", "[\"a1\"]"), false);
	ng_test_cache_put(c, ND("same", "{\"nodeNames\":[\"a2\"],\"retry\":{\"enabled\":true}}"),
			  false);
	ng_test_cache_put(c, ND("other", "{\"nodeNames\":[\"b1\"],\"retry\":{\"enabled\":true}}"),
			  false);
	struct kube_snapshot *s1 = NULL;
	assert_int_equal(kube_cache_publish(c, &s1), NG_OK);
	/* Zone a is disrupted: a2 joins it, b1 would be a second domain. */
	assert_int_equal(decide_both(s1, pools, "same"), POL_GATE_GRANT);
	assert_int_equal(decide_both(s1, pools, "other"), POL_GATE_PENDING);

	/* a1 given back, b2 taken, a heartbeat: the kept domains, this ledger's holders. */
	ng_test_cache_put(c, GRANTED("a", "[\"a1\"]"), true);
	ng_test_cache_put(c, GRANTED("z", "[\"b2\"]"), false);
	ng_test_cache_put(c, ZNODE("a1", "a", "2"), false);
	struct kube_snapshot *s2 = NULL;
	assert_int_equal(kube_cache_publish(c, &s2), NG_OK);
	assert_true(kube_snapshot_table_shape(s1, KUBE_RES_NODES) ==
		    kube_snapshot_table_shape(s2, KUBE_RES_NODES));
	assert_int_equal(decide_both(s2, pools, "same"), POL_GATE_PENDING);
	assert_int_equal(decide_both(s2, pools, "other"), POL_GATE_GRANT);

	kube_snapshot_release(s1);
	kube_snapshot_release(s2);
	pol_scope_cache_destroy(pools);
	kube_cache_destroy(c);
}

#define PNODE(n, pool)                                                                             \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"pool\":\"" pool                                                                         \
	"\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

/* Nodes held in one pool never count in another whose nodes lie around them: a budget finds
 * where a held node sits in its pool from the pool's nodes in node order (every node of a
 * pool-wide budget at its own place, the others searched), and a node between two of its nodes
 * is not one of them. */
static void test_nodes_held_outside_a_pool_do_not_count_in_it(void **state)
{
	(void)state;
	struct kube_cache *c = kube_cache_create();
	struct pol_scope_cache *pools = pol_scope_cache_create();
	assert_non_null(c);
	assert_non_null(pools);
	ng_test_cache_put(c, PNODE("n1", "a"), false);
	ng_test_cache_put(c, PNODE("n2", "b"), false);
	ng_test_cache_put(c, PNODE("n3", "a"), false);
	ng_test_cache_put(c, PNODE("n4", "b"), false);
	ng_test_cache_put(c, PNODE("n5", "a"), false);
	ng_test_cache_put(c,
			  NDB("a", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
				   "\"maxDisruptedNodes\":1}"),
			  false);
	ng_test_cache_put(c, NDB("all", "{\"nodeSelector\":{},\"maxDisruptedNodes\":3}"), false);
	/* n2 and n4, of pool b, held: between n1, n3 and n5 of pool a. */
	ng_test_cache_put(c, GRANTED("b2", "[\"n2\"]"), false);
	ng_test_cache_put(c, GRANTED("b4", "[\"n4\"]"), false);
	ng_test_cache_put(c, ND("a3", "{\"nodeNames\":[\"n3\"],\"retry\":{\"enabled\":true}}"),
			  false);
	struct kube_snapshot *s1 = NULL;
	assert_int_equal(kube_cache_publish(c, &s1), NG_OK);
	/* Pool a holds none of its 1; the pool-wide budget 2 of its 3. */
	assert_int_equal(decide_both(s1, pools, "a3"), POL_GATE_GRANT);
	assert_int_equal(decide_both(s1, pools, "a3"), POL_GATE_GRANT); /* the kept pools */

	/* n5 of pool a held too: pool a is full, and so is the pool-wide budget. */
	ng_test_cache_put(c, GRANTED("a5", "[\"n5\"]"), false);
	struct kube_snapshot *s2 = NULL;
	assert_int_equal(kube_cache_publish(c, &s2), NG_OK);
	assert_int_equal(decide_both(s2, pools, "a3"), POL_GATE_PENDING);

	/* n2 given back: the pool-wide budget has room, pool a still none. */
	ng_test_cache_put(c, GRANTED("b2", "[\"n2\"]"), true);
	struct kube_snapshot *s3 = NULL;
	assert_int_equal(kube_cache_publish(c, &s3), NG_OK);
	assert_int_equal(decide_both(s3, pools, "a3"), POL_GATE_PENDING);

	/* n5 given back: pool a has room again. */
	ng_test_cache_put(c, GRANTED("a5", "[\"n5\"]"), true);
	struct kube_snapshot *s4 = NULL;
	assert_int_equal(kube_cache_publish(c, &s4), NG_OK);
	assert_int_equal(decide_both(s4, pools, "a3"), POL_GATE_GRANT);

	kube_snapshot_release(s1);
	kube_snapshot_release(s2);
	kube_snapshot_release(s3);
	kube_snapshot_release(s4);
	pol_scope_cache_destroy(pools);
	kube_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ledger_never_grants_the_same_capacity_twice),
	    cmocka_unit_test(test_one_ledger_per_round_decides_as_fresh_ledgers_do),
	    cmocka_unit_test(test_budget_status_lists_the_requests_touching_its_scope),
	    cmocka_unit_test(test_ledger_counts_equal_counts_from_scratch_after_grants),
	    cmocka_unit_test(test_pools_kept_across_ledgers_count_what_each_ledger_holds),
	    cmocka_unit_test(test_kept_pools_count_each_ledgers_domains),
	    cmocka_unit_test(test_nodes_held_outside_a_pool_do_not_count_in_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
