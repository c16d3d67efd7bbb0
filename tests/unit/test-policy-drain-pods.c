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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_pod_left_is_named_with_what_holds_it),
	    cmocka_unit_test(
		test_a_pod_that_would_not_come_back_stops_the_attempt_unless_nothing_is_evicted),
	    cmocka_unit_test(test_more_than_eight_pods_left_end_with_and_n_more),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
