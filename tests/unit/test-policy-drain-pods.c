/* policy/drain_pods: the drainer's survey of an attempt's pods without a server — which pods
 * stop the attempt, which it chooses, and the words naming what holds each chosen pod that has
 * not gone (a PodDisruptionBudget, do-not-disrupt, a finalizer of a terminating pod). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/intern.h"
#include "kube/snapshot.h"
#include "policy/drain.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\"},"           \
	"\"spec\":{\"unschedulable\":true}}"
/* A Ready, running pod on n1 with a controller; @meta adds metadata members. */
#define POD(name, app, meta)                                                                       \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"shop\",\"labels\":{\"app\":\"" app "\"},\"ownerReferences\":[{"           \
	"\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"o\",\"uid\":\"u\","         \
	"\"controller\":true}]" meta "},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":"     \
	"\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
#define LONE_POD                                                                                   \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"lone\",\"namespace\":"   \
	"\"shop\"},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}"
#define PDB(name, app, allowed)                                                                    \
	"{\"kind\":\"PodDisruptionBudget\",\"apiVersion\":\"policy/v1\",\"metadata\":{\"name\":"   \
	"\"" name "\",\"namespace\":\"shop\"},\"spec\":{\"maxUnavailable\":1,\"selector\":{"       \
	"\"matchLabels\":{\"app\":\"" app "\"}}},\"status\":{\"disruptionsAllowed\":" allowed ","  \
	"\"currentHealthy\":2,\"desiredHealthy\":2,\"expectedPods\":2}}"

#define DND ",\"annotations\":{\"nodegate.io/do-not-disrupt\":\"true\"}"
#define FLUSHING                                                                                   \
	",\"deletionTimestamp\":\"2025-11-24T15:59:00Z\",\"finalizers\":[\"example.com/flush\","   \
	"\"example.com/other\"]"
#define CLUSTER_PODS                                                                               \
	POD("db-0", "db", "")                                                                      \
	"," POD("web-0", "web", "") "," POD("cache-0", "cache", DND) "," POD("queue-0", "queue",   \
									     FLUSHING)
static const char cluster_json[] = "{\"kind\":\"List\",\"items\":[" NODE(
    "n1") "," CLUSTER_PODS "," PDB("db", "db", "0") "," PDB("web", "web", "1") "]}";

struct fixture {
	struct kube_snapshot *s;
	struct ng_arena *arena;
	struct pol_drain_rules rules;
	struct pol_drain_context cx;
	struct pol_drain_survey sv;
};

static void survey(struct fixture *f, const char *json, bool evicts)
{
	memset(f, 0, sizeof(*f));
	f->s = ng_test_snapshot(json);
	f->arena = ng_arena_create(1u << 16);
	assert_non_null(f->arena);
	f->rules = (struct pol_drain_rules){.self_ns = NG_INTERN_NONE};
	f->cx = (struct pol_drain_context){&f->rules, evicts, NULL, NULL, NOW};
	const struct kube_node *n1 = kube_snapshot_find_node(f->s, ng_test_id(f->s, "n1"));
	assert_non_null(n1);
	assert_int_equal(pol_drain_survey(f->s, &n1, 1, &f->cx, f->arena, &f->sv), NG_OK);
}

static void done(struct fixture *f)
{
	ng_arena_destroy(f->arena);
	kube_snapshot_release(f->s);
}

/* What holds the chosen pod shop/@name, as the survey's message says it. */
static const char *blocker(struct fixture *f, const char *name, char *buf, size_t cap)
{
	const struct kube_pod *p = kube_snapshot_find_pod_str(f->s, "shop", 4, name, strlen(name));
	assert_non_null(p);
	pol_drain_pod_blocker(f->s, NULL, p, NOW, buf, cap);
	return buf;
}

static void test_each_pod_left_is_named_with_what_holds_it(void **state)
{
	(void)state;
	struct fixture f;
	survey(&f, cluster_json, true);
	assert_string_equal(f.sv.stop, "");
	assert_int_equal(f.sv.nchosen, 4);
	char buf[300];
	assert_string_equal(blocker(&f, "db-0", buf, sizeof(buf)),
			    " (PodDisruptionBudget shop/db allows 0 disruptions: 2 healthy, 2 "
			    "needed)");
	/* a budget that allows one holds nothing */
	assert_string_equal(blocker(&f, "web-0", buf, sizeof(buf)), "");
	assert_string_equal(blocker(&f, "cache-0", buf, sizeof(buf)),
			    " (the pod has nodegate.io/do-not-disrupt)");
	assert_string_equal(blocker(&f, "queue-0", buf, sizeof(buf)),
			    " (terminating, held by finalizer example.com/flush and others)");
	assert_non_null(strstr(f.sv.left, "shop/db-0 (PodDisruptionBudget shop/db allows 0"));
	assert_non_null(strstr(f.sv.left, "shop/web-0, "));
	done(&f);
}

static void
test_a_pod_that_would_not_come_back_stops_the_attempt_unless_nothing_is_evicted(void **state)
{
	(void)state;
	static const char json[] =
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," LONE_POD
							"," POD("web-0", "web", "") "]}";
	struct fixture f;
	survey(&f, json, true);
	assert_string_equal(f.sv.stop, "cannot drain: shop/lone has no controller (set force)");
	assert_int_equal(f.sv.nblocked, 1);
	done(&f);
	/* strategy None evicts nothing, so nothing can be lost: lone is neither blocking nor
	 * chosen */
	survey(&f, json, false);
	assert_string_equal(f.sv.stop, "");
	assert_int_equal(f.sv.nchosen, 1);
	const struct kube_pod *only = f.sv.chosen ? f.sv.chosen[0] : NULL;
	assert_non_null(only);
	if (only)
		assert_string_equal(only->name, "web-0");
	assert_string_equal(f.sv.left, "shop/web-0");
	done(&f);
}

static void test_more_than_eight_pods_left_end_with_and_n_more(void **state)
{
	(void)state;
	static const char json[] =
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," POD("p0", "a", "") "," POD("p1", "a", "") "," POD(
		"p2", "a",
		"") "," POD("p3", "a",
			    "") "," POD("p4", "a",
					"") "," POD("p5", "a",
						    "") "," POD("p6", "a",
								"") "," POD("p7", "a",
									    "") "," POD("p8", "a",
											"") "," POD("p9",
												    "a",
												    "") "]}";
	struct fixture f;
	survey(&f, json, true);
	assert_int_equal(f.sv.nchosen, 10);
	assert_non_null(strstr(f.sv.left, "shop/p7 and 2 more"));
	done(&f);
}

/* ---- drain rules: batches, Skip, WaitCompleted, the label, which rules come first ---- */

/* A pod of namespace @ns on n1 with labels @labels (JSON members), @phase. */
#define RPOD(ns, name, labels, phase)                                                              \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"" ns "\",\"labels\":{" labels "},\"ownerReferences\":[{"                  \
	"\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"o\",\"uid\":\"u\","         \
	"\"controller\":true}]},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"" phase     \
	"\"}}"
/* A request on n1 with spec.drain.rules @rules. */
#define RND(rules)                                                                                 \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n1\"],\"drain\":{\"rules\":" rules "}}}"
#define RNGC(rules)                                                                                \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"drain\":{\"rules\":" rules "}}}"

/* Namespace labels the tests know: "infra" is tier=infra, "broken" cannot be read. */
struct ns_fixture {
	struct kube_snapshot *s;
	struct kube_label infra;
	int calls;
};

static bool test_ns_labels(void *ctx, uint32_t ns, const struct kube_label **ret, uint16_t *ret_n)
{
	struct ns_fixture *f = ctx;
	f->calls++;
	*ret = NULL;
	*ret_n = 0;
	if (ns == ng_test_id(f->s, "broken"))
		return false;
	if (ns == ng_test_id(f->s, "infra")) {
		f->infra = (struct kube_label){ng_test_id(f->s, "tier"), ng_test_id(f->s, "infra")};
		*ret = &f->infra;
		*ret_n = 1;
	}
	return true;
}

/* The survey of n1 under the request's and NodeGateConfig's rules of snapshot @json. */
static void rules_survey(struct fixture *f, struct ns_fixture *nsf, const char *json)
{
	memset(f, 0, sizeof(*f));
	f->s = ng_test_snapshot(json);
	f->arena = ng_arena_create(1u << 16);
	assert_non_null(f->arena);
	size_t n;
	const struct kube_nd *nd = kube_snapshot_nds(f->s, &n);
	assert_int_equal(n, 1);
	assert_int_equal(nd->detail->spec_error, NG_INTERN_NONE);
	struct kube_selector sel;
	struct ng_err err = {0};
	assert_int_equal(pol_drain_rules_from(kube_snapshot_pool(f->s), &nd->detail->drain,
					      f->arena, &f->rules, &sel, &err),
			 NG_OK);
	*nsf = (struct ns_fixture){.s = f->s};
	pol_drain_rules_config(&f->rules, kube_snapshot_config(f->s), test_ns_labels, nsf);
	f->cx = (struct pol_drain_context){&f->rules, true, NULL, nd, NOW};
	const struct kube_node *n1 = kube_snapshot_find_node(f->s, ng_test_id(f->s, "n1"));
	assert_non_null(n1);
	assert_int_equal(pol_drain_survey(f->s, &n1, 1, &f->cx, f->arena, &f->sv), NG_OK);
}

/* The names of the chosen pods, sorted, comma-separated. */
static const char *chosen_names(const struct fixture *f, char *buf, size_t cap)
{
	const char *names[16];
	size_t n = f->sv.nchosen < 16 ? f->sv.nchosen : 16;
	for (size_t i = 0; i < n; i++)
		names[i] = f->sv.chosen[i]->name;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	*buf = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(buf);
		(void)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", names[i]);
	}
	return buf;
}

#define BATCH_PODS                                                                                 \
	RPOD("shop", "late", "\"tier\":\"storage\"", "Running")                                    \
	"," RPOD("shop", "early-a", "\"tier\":\"front\"",                                          \
		 "Running") "," RPOD("shop", "early-b", "\"tier\":\"front\"",                      \
				     "Running") "," RPOD("shop", "plain", "", "Running")
#define BATCH_RULES                                                                                \
	"[{\"podSelector\":{\"matchLabels\":{\"tier\":\"front\"}},\"behavior\":\"Drain\","         \
	"\"order\":-5},{\"podSelector\":{\"matchLabels\":{\"tier\":\"storage\"}},"                 \
	"\"behavior\":\"Drain\",\"order\":10}]"

/* Only the lowest order still on the node is chosen; the later ones wait their turn, each
 * order after the current one a batch; a pod no rule matches is order 0. */
static void test_rules_drain_the_lowest_order_first(void **state)
{
	(void)state;
	struct fixture f;
	struct ns_fixture nsf;
	char buf[1200];
	rules_survey(&f, &nsf,
		     "{\"kind\":\"List\",\"items\":[" NODE("n1") "," BATCH_PODS
								 "," RND(BATCH_RULES) "]}");
	assert_string_equal(f.sv.stop, "");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "early-a,early-b");
	assert_int_equal(f.sv.batch_order, -5);
	assert_int_equal(f.sv.nlater, 2);
	assert_int_equal(f.sv.nbatches_after, 2);
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "batch order -5: 2 pods left (2 more batches after it): "
				 "shop/early-a, shop/early-b");
	/* no namespaceSelector: no namespace is read */
	assert_int_equal(nsf.calls, 0);
	done(&f);
	/* once the first batch is gone, order 0 is next, then 10 */
	rules_survey(
	    &f, &nsf,
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
		"shop", "late", "\"tier\":\"storage\"",
		"Running") "," RPOD("shop", "plain", "", "Running") "," RND(BATCH_RULES) "]}");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "plain");
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "batch order 0: 1 pod left (1 more batch after it): shop/plain");
	done(&f);
	rules_survey(
	    &f, &nsf,
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
		"shop", "late", "\"tier\":\"storage\"", "Running") "," RND(BATCH_RULES) "]}");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "late");
	assert_int_equal(f.sv.nbatches_after, 0);
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "batch order 10: 1 pod left: shop/late");
	done(&f);
	/* rules that order nothing differently leave the plain message to the drainer */
	rules_survey(&f, &nsf,
		     "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
			 "shop", "plain", "", "Running") "," RND(BATCH_RULES) "]}");
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "");
	done(&f);
}

/* Skip pods are neither chosen nor waited for; WaitCompleted pods are never chosen but waited
 * for while they run, and no more once finished. A pod without a controller that a rule skips
 * or waits for does not stop the attempt: nothing would evict it. */
static void test_skip_and_wait_completed_pods_are_never_chosen(void **state)
{
	(void)state;
	struct fixture f;
	struct ns_fixture nsf;
	char buf[1200];
	rules_survey(
	    &f, &nsf,
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
		"shop", "agent", "\"role\":\"agent\"",
		"Running") "," RPOD("shop", "job", "\"role\":\"batch\"",
				    "Running") "," RPOD("shop", "job-done", "\"role\":\"batch\"",
							"Succeeded") "," RPOD("shop", "web", "",
									      "Running") "," LONE_POD
											 "," RND(
											     "[{"
											     "\"pod"
											     "Selec"
											     "tor\""
											     ":{"
											     "\"mat"
											     "chLab"
											     "els\""
											     ":{"
											     "\"rol"
											     "e\":"
											     "\"age"
											     "nt\"}"
											     "},"
											     "\"beh"
											     "avior"
											     "\":"
											     "\"Ski"
											     "p\"},"
											     "{\"po"
											     "dSele"
											     "ctor"
											     "\":{"
											     "\"mat"
											     "chLab"
											     "els\""
											     ":{"
											     "\"rol"
											     "e\":"
											     "\"bat"
											     "ch\"}"
											     "},"
											     "\"beh"
											     "avior"
											     "\":"
											     "\"Wai"
											     "tComp"
											     "leted"
											     "\"},{"
											     "\"pod"
											     "Selec"
											     "tor\""
											     ":{},"
											     "\"nam"
											     "espac"
											     "eSele"
											     "ctor"
											     "\":{"
											     "\"mat"
											     "chLab"
											     "els\""
											     ":{"
											     "\"kub"
											     "ernet"
											     "es."
											     "io/"
											     "metad"
											     "ata."
											     "name"
											     "\":"
											     "\"now"
											     "here"
											     "\"}},"
											     "\"beh"
											     "avior"
											     "\":"
											     "\"Ski"
											     "p\"}"
											     "]") "]}");
	/* lone has no controller: no rule spares it, so it stops the attempt */
	assert_string_equal(f.sv.stop, "cannot drain: shop/lone has no controller (set force)");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "web");
	assert_int_equal(f.sv.nskipped, 1);
	assert_int_equal(f.sv.nwaiting, 1);
	assert_string_equal(f.sv.waiting, "shop/job");
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "batch order 0: 1 pod left: shop/web; 1 pod waited for to "
				 "complete (wait-completed): shop/job; 1 pod skipped");
	done(&f);
	/* the same pod without a controller, skipped by its label: nothing stops the attempt */
	rules_survey(&f, &nsf,
		     "{\"kind\":\"List\",\"items\":[" NODE(
			 "n1") ",{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
			       "\"lone\",\"namespace\":\"shop\",\"labels\":{\"cluster.x-k8s.io/"
			       "drain\":\"skip\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{"
			       "\"phase\":\"Running\"}}," RND("[]") "]}");
	assert_string_equal(f.sv.stop, "");
	assert_int_equal(f.sv.nchosen, 0);
	assert_int_equal(f.sv.nskipped, 1);
	done(&f);
}

/* The pod's cluster.x-k8s.io/drain label wins over every rule; another value is not the
 * label's and the rules decide. */
static void test_the_drain_label_takes_precedence_over_rules(void **state)
{
	(void)state;
	struct fixture f;
	struct ns_fixture nsf;
	char buf[1200];
	rules_survey(
	    &f, &nsf,
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
		"shop", "skipper", "\"cluster.x-k8s.io/drain\":\"skip\",\"app\":\"x\"",
		"Running") "," RPOD("shop", "waiter",
				    "\"cluster.x-k8s.io/drain\":\"wait-completed\",\"app\":\"x\"",
				    "Running") "," RPOD("shop", "other",
							"\"cluster.x-k8s.io/drain\":\"later\","
							"\"app\":\"x\"",
							"Running") "," RND("[{\"podSelector\":{"
									   "\"matchLabels\":{"
									   "\"app\":"
									   "\"x\"}},\"behavior\":"
									   "\"Drain\",\"order\":3}"
									   "]") "]}");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "other");
	assert_int_equal(f.sv.batch_order, 3);
	assert_int_equal(f.sv.nskipped, 1);
	assert_string_equal(f.sv.waiting, "shop/waiter");
	done(&f);
}

/* The request's rules come before NodeGateConfig's; the first match in list order decides. */
static void test_request_rules_come_before_the_config_rules(void **state)
{
	(void)state;
	struct fixture f;
	struct ns_fixture nsf;
	char buf[1200];
	rules_survey(&f, &nsf,
		     "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
			 "shop", "db", "\"app\":\"db\"",
			 "Running") "," RPOD("shop", "web", "\"app\":\"web\"",
					     "Running") "," RND("[{\"podSelector\":{"
								"\"matchLabels\":{\"app\":"
								"\"db\"}},\"behavior\":\"Drain\","
								"\"order\":"
								"7},{\"podSelector\":{"
								"\"matchLabels\":{"
								"\"app\":\"db\"}},\"behavior\":"
								"\"Skip\"}]") "," RNGC("[{"
										       "\"podSelect"
										       "or\":{"
										       "\"matchLabe"
										       "ls\":{"
										       "\"app\":"
										       "\"db\"}},"
										       "\"behavior"
										       "\":"
										       "\"Skip\"},"
										       "{\"podSelec"
										       "tor\":{"
										       "\"matchLabe"
										       "ls\":{"
										       "\"app\":"
										       "\"web\"}},"
										       "\"behavior"
										       "\":"
										       "\"Drain\","
										       "\"order\":"
										       "9}]") "]}");
	/* db: the request's first rule (order 7), not its second or the config's Skip; web: the
	 * config's rule (order 9) */
	assert_int_equal(f.sv.nskipped, 0);
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "db");
	assert_int_equal(f.sv.batch_order, 7);
	assert_int_equal(f.sv.nlater, 1);
	int32_t order = 0;
	char source[64];
	const struct kube_pod *web = kube_snapshot_find_pod_str(f.s, "shop", 4, "web", 3);
	assert_int_equal(pol_drain_classify_ordered(kube_snapshot_pool(f.s), web, &f.rules, &order,
						    source, sizeof(source)),
			 POL_DRAIN_EVICT);
	assert_int_equal(order, 9);
	assert_string_equal(source, "NodeGateConfig rule 1");
	done(&f);
}

/* A namespaceSelector is matched against the namespace's labels; a namespace whose labels
 * cannot be read leaves its pods undecided, and the progress says so. */
static void test_namespace_selectors_read_the_namespace_labels(void **state)
{
	(void)state;
	struct fixture f;
	struct ns_fixture nsf;
	char buf[1200];
	rules_survey(
	    &f, &nsf,
	    "{\"kind\":\"List\",\"items\":[" NODE("n1") "," RPOD(
		"infra", "agent", "",
		"Running") "," RPOD("shop", "web", "",
				    "Running") "," RPOD("broken", "x", "",
							"Running") "," RND("[{"
									   "\"namespaceSelector\":{"
									   "\"matchLabels\":{"
									   "\"tier\":\"infra\"}},"
									   "\"behavior\":\"Skip\"}"
									   "]") "]}");
	assert_string_equal(chosen_names(&f, buf, sizeof(buf)), "web");
	assert_int_equal(f.sv.nskipped, 1);
	assert_int_equal(f.sv.nundecided, 1);
	pol_drain_progress(&f.sv, buf, sizeof(buf));
	assert_string_equal(buf, "batch order 0: 1 pod left: shop/web; 1 pod not asked yet: their "
				 "namespace's labels could not be read for the drain rules: "
				 "broken/x; 1 pod skipped");
	done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_pod_left_is_named_with_what_holds_it),
	    cmocka_unit_test(
		test_a_pod_that_would_not_come_back_stops_the_attempt_unless_nothing_is_evicted),
	    cmocka_unit_test(test_more_than_eight_pods_left_end_with_and_n_more),
	    cmocka_unit_test(test_rules_drain_the_lowest_order_first),
	    cmocka_unit_test(test_skip_and_wait_completed_pods_are_never_chosen),
	    cmocka_unit_test(test_the_drain_label_takes_precedence_over_rules),
	    cmocka_unit_test(test_request_rules_come_before_the_config_rules),
	    cmocka_unit_test(test_namespace_selectors_read_the_namespace_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
