/* budgets/: which pods and nodes an ApplicationDisruptionBudget watches, and int-or-percent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/intern.h"
#include "tests/support/support.h"

#include <string.h>

#define NODE(n)                                                                                    \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"kubernetes.io/hostname\":\"" n "\"}}}"
#define PV(n, node)                                                                                \
	"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"" n         \
	"\"},\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{"                   \
	"\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","           \
	"\"values\":[\"" node "\"]}]}]}}}}"
#define PVC(ns, n, labels, phase, vol)                                                             \
	"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"" n    \
	"\",\"namespace\":\"" ns "\",\"labels\":" labels "},\"spec\":{\"volumeName\":\"" vol       \
	"\"},\"status\":{\"phase\":\"" phase "\"}}"
#define POD(ns, n, labels, node, phase, claim)                                                     \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" n                      \
	"\",\"namespace\":\"" ns "\",\"labels\":" labels "},\"spec\":{\"nodeName\":\"" node        \
	"\",\"volumes\":[{\"name\":"                                                               \
	"\"v\",\"persistentVolumeClaim\":{\"claimName\":\"" claim                                  \
	"\"}}]},\"status\":{\"phase\":\"" phase "\"}}"
#define ADB(ns, n, spec)                                                                           \
	"{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"ApplicationDisruptionBudget\","       \
	"\"metadata\":{\"name\":\"" n "\",\"namespace\":\"" ns "\"},\"spec\":" spec "}"

/* A fixture literal, laid out by hand. */
/* clang-format off */
static const char fixture[] =
    "{\"kind\":\"List\",\"items\":["
    NODE("n1") "," NODE("n2") "," NODE("n3") "," NODE("n4") "," NODE("n5") ","
    PV("pv-n3", "n3") "," PV("pv-n4", "n4") ","
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-net\"},"
    "\"spec\":{}},"
    PVC("app", "data-0", "{\"role\":\"data\"}", "Bound", "pv-n3") ","
    PVC("app", "data-1", "{\"role\":\"data\"}", "Pending", "pv-n4") ","
    PVC("app", "net", "{\"role\":\"data\"}", "Bound", "pv-net") ","
    PVC("other", "data-0", "{\"role\":\"data\"}", "Bound", "pv-n4") ","
    PVC("app", "lost", "{\"role\":\"lost\"}", "Lost", "pv-n4") ","
    POD("app", "web-1", "{\"app\":\"web\"}", "n1", "Running", "none") ","
    POD("app", "web-2", "{\"app\":\"web\"}", "n2", "Running", "none") ","
    POD("app", "web-done", "{\"app\":\"web\"}", "n5", "Succeeded", "none") ","
    POD("app", "db-0", "{\"app\":\"db\"}", "n3", "Running", "data-0") ","
    POD("other", "web-x", "{\"app\":\"web\"}", "n4", "Running", "data-0") ","
    ADB("app", "web", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"maxDisruptions\":1}") ","
    ADB("app", "data", "{\"pvcSelector\":{\"matchLabels\":{\"role\":\"data\"}},"
		       "\"maxDisruptions\":\"50%\"}") ","
    ADB("app", "everything", "{\"podSelector\":{}}") ","
    ADB("app", "lost", "{\"pvcSelector\":{\"matchLabels\":{\"role\":\"lost\"}}}") ","
    ADB("app", "invalid", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},"
			  "\"pvcSelector\":{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"In\"}]}}")
    "]}";
/* clang-format on */

static void expect_nodes(const struct kube_snapshot *s, const struct bud_adb_scope *sc,
			 const char *const *want, size_t nwant)
{
	if (sc->nnodes != nwant)
		fail_msg("watched %zu nodes, expected %zu", sc->nnodes, nwant);
	for (size_t i = 0; i < nwant; i++) {
		bool found = false;
		for (size_t k = 0; k < sc->nnodes; k++)
			found = found || sc->nodes[k] == ng_test_id(s, want[i]);
		if (!found)
			fail_msg("node %s not watched", want[i]);
	}
}

static void test_pod_selector_watches_running_pods_nodes(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "web"), a, &sc), NG_OK);
	/* web-done finished; web-x is in another namespace. */
	assert_int_equal(sc.npods, 2);
	expect_nodes(s, &sc, (const char *[]){"n1", "n2"}, 2);
	assert_int_equal(sc.lost_pvc, NG_INTERN_NONE);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_pvc_selector_pins_bound_pv_nodes_only(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "data"), a, &sc), NG_OK);
	/* db-0 mounts data-0 (selected): its node n3; data-0's PV pins n3; data-1 is Pending
	 * (pins nothing); net's PV has no affinity (pins nothing); other/data-0 is another
	 * namespace. */
	assert_int_equal(sc.npods, 1);
	expect_nodes(s, &sc, (const char *[]){"n3"}, 1);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_empty_selector_selects_namespace(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "everything"), a, &sc), NG_OK);
	assert_int_equal(sc.npods, 3); /* web-1, web-2, db-0 */
	expect_nodes(s, &sc, (const char *[]){"n1", "n2", "n3"}, 3);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_lost_pvc_is_reported(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "lost"), a, &sc), NG_OK);
	assert_int_equal(sc.lost_pvc, ng_test_id(s, "lost"));
	assert_int_equal(sc.nnodes, 0);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_selects_pod_directly_and_through_pvc(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	const struct kube_pod *db = kube_snapshot_find_pod_str(s, "app", 3, "db-0", 4);
	const struct kube_pod *web = kube_snapshot_find_pod_str(s, "app", 3, "web-1", 5);
	const struct kube_pod *webx = kube_snapshot_find_pod_str(s, "other", 5, "web-x", 5);
	assert_true(bud_adb_selects_pod(s, ng_test_adb(s, "data"), db));
	assert_false(bud_adb_selects_pod(s, ng_test_adb(s, "data"), web));
	assert_true(bud_adb_selects_pod(s, ng_test_adb(s, "web"), web));
	assert_false(bud_adb_selects_pod(s, ng_test_adb(s, "web"), webx)); /* other namespace */
	assert_false(bud_adb_selects_pod(s, ng_test_adb(s, "data"), webx));
	assert_true(ng_test_adb(s, "invalid")->b.invalid);
	assert_false(bud_adb_selects_pod(s, ng_test_adb(s, "invalid"), web));
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "invalid"), a, &sc), NG_OK);
	assert_int_equal(sc.nnodes, 0);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

#define RACK_NODE(n, rack)                                                                         \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"kubernetes.io/hostname\":\"" n "\",\"rack-index\":\"" rack "\"}}}"

static void test_A01_A05_A06_watched_nodes_from_pods_and_pinned_volumes(void **state)
{
	/* A01: pods app=db on n1 and n2, and a Bound PVC app=db on a PV pinned to n3. A05: a PV
	 * whose two terms (n4) OR (n5) pin both. A06: Gt on rack-index pins only the rack 7 node.
	 */
	/* A fixture literal, laid out by hand. */
	/* clang-format off */
	const char *json =
	    "{\"kind\":\"List\",\"items\":["
	    RACK_NODE("n1", "1") "," RACK_NODE("n2", "2") "," RACK_NODE("n3", "3") ","
	    RACK_NODE("n4", "4") "," RACK_NODE("n5", "5") "," RACK_NODE("r3", "3") ","
	    RACK_NODE("r7", "7") "," PV("pv-n3", "n3") ","
	    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-or\"},"
	    "\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":["
	    "{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
	    "\"values\":[\"n4\"]}]},{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","
	    "\"operator\":\"In\",\"values\":[\"n5\"]}]}]}}}},"
	    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-gt\"},"
	    "\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":["
	    "{\"key\":\"rack-index\",\"operator\":\"Gt\",\"values\":[\"4\"]},{\"key\":"
	    "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"r3\",\"r7\"]}]}]}}}},"
	    PVC("app", "data", "{\"app\":\"db\"}", "Bound", "pv-n3") ","
	    PVC("app", "or", "{\"app\":\"or\"}", "Bound", "pv-or") ","
	    PVC("app", "gt", "{\"app\":\"gt\"}", "Bound", "pv-gt") ","
	    POD("app", "db-0", "{\"app\":\"db\"}", "n1", "Running", "none") ","
	    POD("app", "db-1", "{\"app\":\"db\"}", "n2", "Running", "none") ","
	    ADB("app", "db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
			     "\"pvcSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1}") ","
	    ADB("app", "or", "{\"pvcSelector\":{\"matchLabels\":{\"app\":\"or\"}},\"maxDisruptions\":1}") ","
	    ADB("app", "gt", "{\"pvcSelector\":{\"matchLabels\":{\"app\":\"gt\"}},\"maxDisruptions\":1}")
	    "]}";
	/* clang-format on */
	struct kube_snapshot *s = ng_test_snapshot(json);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct bud_adb_scope sc;
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "db"), a, &sc), NG_OK);
	expect_nodes(s, &sc, (const char *[]){"n1", "n2", "n3"}, 3);
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "or"), a, &sc), NG_OK);
	expect_nodes(s, &sc, (const char *[]){"n4", "n5"}, 2);
	assert_int_equal(bud_adb_scope(s, ng_test_adb(s, "gt"), a, &sc), NG_OK);
	expect_nodes(s, &sc, (const char *[]){"r7"}, 1);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
}

static void test_int_or_percent(void **state)
{
	static const struct {
		const char *s;
		ng_status st;
		bool pct;
		int64_t v;
	} cases[] = {
	    {"0", NG_OK, false, 0},       {"3", NG_OK, false, 3},
	    {"25%", NG_OK, true, 25},     {"100%", NG_OK, true, 100},
	    {"0%", NG_OK, true, 0},       {"150%", NG_ELIMIT, false, 0},
	    {"-1", NG_EPARSE, false, 0},  {"%", NG_EPARSE, false, 0},
	    {"", NG_EPARSE, false, 0},    {"1.5", NG_EPARSE, false, 0},
	    {"5 %", NG_EPARSE, false, 0}, {"+5", NG_EPARSE, false, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bud_int_or_percent v = {.value = 0xad};
		struct ng_err err = {0};
		ng_status st = bud_int_or_percent_parse(cases[i].s, strlen(cases[i].s), &v, &err);
		if (st != cases[i].st)
			fail_msg("\"%s\": got %s", cases[i].s, ng_status_str(st));
		if (st == NG_OK) {
			assert_int_equal(v.is_percent, cases[i].pct);
			assert_int_equal(v.value, cases[i].v);
		} else {
			assert_int_equal(v.value, 0xad);
			assert_true(err.msg[0] != '\0');
		}
	}
	struct bud_int_or_percent p = {.is_percent = true, .value = 25};
	assert_int_equal(bud_int_or_percent_scaled(&p, 10), 3); /* 2.5 rounds up */
	assert_int_equal(bud_int_or_percent_scaled(&p, 4), 1);
	assert_int_equal(bud_int_or_percent_scaled(&p, 0), 0);
	struct bud_int_or_percent c = {.is_percent = false, .value = 2};
	assert_int_equal(bud_int_or_percent_scaled(&c, 100), 2);
	/* Decoded values: ADB data says "50%". */
	struct kube_snapshot *s = ng_test_snapshot(fixture);
	struct bud_int_or_percent out;
	struct ng_err err = {0};
	assert_int_equal(bud_int_or_percent_from(&ng_test_adb(s, "data")->max_disruptions,
						 kube_snapshot_pool(s), "spec.maxDisruptions", &out,
						 &err),
			 NG_OK);
	assert_true(out.is_percent);
	assert_int_equal(out.value, 50);
	struct kube_int_or_string neg = {.set = true, .i = -1};
	assert_int_equal(
	    bud_int_or_percent_from(&neg, kube_snapshot_pool(s), "spec.maxDisruptions", &out, &err),
	    NG_EPARSE);
	assert_non_null(strstr(err.msg, "spec.maxDisruptions: must be >= 0"));
	assert_int_equal(bud_int_or_percent_from(&ng_test_adb(s, "everything")->max_disruptions,
						 kube_snapshot_pool(s), "spec.maxDisruptions", &out,
						 &err),
			 NG_EPARSE);
	assert_non_null(strstr(err.msg, "required"));
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_selector_watches_running_pods_nodes),
	    cmocka_unit_test(test_pvc_selector_pins_bound_pv_nodes_only),
	    cmocka_unit_test(test_empty_selector_selects_namespace),
	    cmocka_unit_test(test_lost_pvc_is_reported),
	    cmocka_unit_test(test_selects_pod_directly_and_through_pvc),
	    cmocka_unit_test(test_A01_A05_A06_watched_nodes_from_pods_and_pinned_volumes),
	    cmocka_unit_test(test_int_or_percent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
