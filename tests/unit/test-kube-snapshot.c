/* kube/: the snapshot loader (kube/snapshot.c), the tables and indexes (kube/table.c) and
 * the typed accessors (kube/kinds.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "kube/internal.h"
#include "tests/support/support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ng_status load(const char *json, struct kube_snapshot **ret, struct ng_err *err)
{
	struct kube_builder *b = kube_builder_create();
	ng_status st = kube_builder_add_json(b, json, strlen(json), err);
	if (st != NG_OK) {
		kube_builder_destroy(b);
		return st;
	}
	return kube_builder_finish(b, ret);
}

static void test_fixture_f_loads_with_indexes(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(ng_fixture_f);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 3);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PVS), 3);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_ADBS), 1);
	const struct kube_pod *p = kube_snapshot_find_pod_str(s, "default", 7, "pod1", 4);
	assert_non_null(p);
	assert_int_equal(p->node, ng_test_id(s, "node1"));
	assert_int_equal(p->owner_kind, ng_test_id(s, "StatefulSet"));
	assert_int_equal(p->phase, KUBE_POD_RUNNING);
	uint32_t v;
	assert_true(kube_labels_get(p->labels, p->nlabels, ng_test_id(s, "app"), &v));
	assert_int_equal(v, ng_test_id(s, "db"));
	size_t n;
	const uint32_t *on1 = kube_snapshot_pods_on_node(s, ng_test_id(s, "node1"), &n);
	assert_int_equal(n, 1);
	size_t np;
	assert_ptr_equal(&kube_snapshot_pods(s, &np)[on1[0]], p);
	assert_null(kube_snapshot_pods_on_node(s, ng_test_id(s, "node2"), &n));
	assert_int_equal(n, 0);
	assert_non_null(kube_snapshot_adbs_in_ns(s, ng_test_id(s, "default"), &n));
	assert_int_equal(n, 1);
	const struct kube_node *node = kube_snapshot_find_node(s, ng_test_id(s, "node3"));
	assert_non_null(node);
	assert_true(node->flags & KUBE_NODE_READY);
	assert_null(kube_snapshot_find_pod_str(s, "default", 7, "ghost", 5));
	assert_null(kube_snapshot_find_pod_str(s, "other", 5, "pod1", 4));
	kube_snapshot_release(s);
}

static void test_single_object_and_typed_list(void **state)
{
	struct kube_snapshot *s = NULL;
	struct ng_err err = {0};
	assert_int_equal(
	    load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
		 "\"spec\":{\"nodeName\":\"n\"}}",
		 &s, &err),
	    NG_OK);
	/* A hand-written object without a namespace lands in "default", as kubectl does. */
	assert_non_null(kube_snapshot_find_pod_str(s, "default", 7, "p", 1));
	kube_snapshot_release(s);
	assert_int_equal(load("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":["
			      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\"},\"kind\":\"Pod\","
			      "\"apiVersion\":\"v1\"},"
			      "{\"metadata\":{\"name\":\"b\",\"namespace\":\"x\"},\"kind\":\"Pod\","
			      "\"apiVersion\":\"v1\",\"status\":{\"phase\":\"Succeeded\"}}]}",
			      &s, &err),
			 NG_OK);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 2);
	assert_int_equal(kube_snapshot_find_pod_str(s, "x", 1, "b", 1)->phase, KUBE_POD_SUCCEEDED);
	kube_snapshot_release(s);
}

static void test_unknown_kinds_are_skipped_and_counted(void **state)
{
	const char *json =
	    "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":["
	    "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\"}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodedisruption.criteo.com/v1alpha1\","
	    "\"metadata\":{\"name\":\"foreign\"}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n1\"}}]}";
	struct kube_builder *b = kube_builder_create();
	struct ng_err err = {0};
	assert_int_equal(kube_builder_add_json(b, json, strlen(json), &err), NG_OK);
	assert_int_equal(kube_builder_skipped(b), 2);
	struct kube_snapshot *s = NULL;
	assert_int_equal(kube_builder_finish(b, &s), NG_OK);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 1);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NDS), 0);
	kube_snapshot_release(s);
}

static void test_malformed_core_objects_name_item_and_field(void **state)
{
	static const struct {
		const char *json;
		const char *msg;
	} cases[] = {
	    {"{\"kind\":\"List\",\"items\":[{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{"
	     "\"name\":\"a\"}},{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
	     "\"p\",\"namespace\":\"d\",\"labels\":[1]}}]}",
	     "items[1] (Pod d/p): metadata.labels: expected an object"},
	    {"{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
	     "\"labels\":{}}}]}",
	     "items[0] (Pod): metadata.name: required"},
	    {"{\"kind\":\"List\",\"items\":{}}", "List: items: expected an array"},
	    {"{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\"}]}", "items[0]: kind: required"},
	    {"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"labels\":{"
	     "\"a\":1}}}",
	     "object (Pod default/p): metadata.labels: label values must be strings"},
	    {"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
	     "\"nodeName\":5}}",
	     "object (Pod default/p): spec.nodeName: expected a string"},
	    {"[1,2", "malformed JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kube_snapshot *s = (struct kube_snapshot *)0xad;
		struct ng_err err = {0};
		assert_int_not_equal(load(cases[i].json, &s, &err), NG_OK);
		assert_ptr_equal(s, (struct kube_snapshot *)0xad);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
	}
}

static void test_later_objects_replace_earlier_ones(void **state)
{
	struct kube_builder *b = kube_builder_create();
	struct ng_err err = {0};
	const char *first = "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
			    "\"namespace\":\"d\"},\"spec\":{\"nodeName\":\"n1\"}}";
	const char *second = "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
			     "\"namespace\":\"d\"},\"spec\":{\"nodeName\":\"n2\"}}";
	assert_int_equal(kube_builder_add_json(b, first, strlen(first), &err), NG_OK);
	assert_int_equal(kube_builder_add_json(b, second, strlen(second), &err), NG_OK);
	struct kube_snapshot *s = NULL;
	assert_int_equal(kube_builder_finish(b, &s), NG_OK);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	const struct kube_pod *p = kube_snapshot_find_pod_str(s, "d", 1, "p", 1);
	assert_int_equal(p->node, ng_test_id(s, "n2"));
	size_t n;
	assert_null(kube_snapshot_pods_on_node(s, ng_test_id(s, "n1"), &n));
	assert_non_null(kube_snapshot_pods_on_node(s, ng_test_id(s, "n2"), &n));
	kube_snapshot_release(s);
}

static void test_granted_nodes_map_to_their_request(void **state)
{
	const char *json =
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"b-req\"},\"spec\":{\"nodeNames\":[\"n1\",\"n2\"]},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"n1\",\"n2\"]}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"a-req\"},\"spec\":{\"nodeNames\":[\"n2\"]},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"n2\"]}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"pending\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"x\":\"y\"}},"
	    "\"priority\":5},\"status\":{\"state\":\"Pending\",\"disruptedNodes\":[\"n3\"]}}]}";
	struct kube_snapshot *s = ng_test_snapshot(json);
	const struct kube_nd *g1 = kube_snapshot_node_grant(s, ng_test_id(s, "n1"));
	const struct kube_nd *g2 = kube_snapshot_node_grant(s, ng_test_id(s, "n2"));
	assert_non_null(g1);
	assert_int_equal(g1->name, ng_test_id(s, "b-req"));
	assert_int_equal(g2->name, ng_test_id(s, "a-req")); /* first by name */
	assert_null(kube_snapshot_node_grant(s, ng_test_id(s, "n3")));
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	assert_int_equal(n, 3);
	assert_int_equal(nds[2].priority, 5);
	assert_true(nds[2].node_selector.present);
	assert_int_equal(nds[2].state, KUBE_ND_PENDING);
	kube_snapshot_release(s);
}

static void test_nodes_by_label_and_nodegateconfig(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"labels\":{"
	    "\"pool\":\"gpu\",\"zone\":\"1\"}}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"b\",\"labels\":{"
	    "\"pool\":\"cpu\",\"zone\":\"1\"}}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\",\"labels\":{"
	    "\"pool\":\"gpu\"}}},"
	    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"default\"},\"spec\":{\"paused\":true,\"eviction\":{\"mode\":\"Warn\","
	    "\"exemptUsers\":[\"ops\"]}}},"
	    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"other\"},\"spec\":{\"eviction\":{\"mode\":\"Never\"}}}]}");
	size_t n;
	const uint32_t *gpu =
	    kube_snapshot_nodes_with_label(s, ng_test_id(s, "pool"), ng_test_id(s, "gpu"), &n);
	assert_int_equal(n, 2);
	size_t nn;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	assert_int_equal(nodes[gpu[0]].name, ng_test_id(s, "a"));
	assert_int_equal(nodes[gpu[1]].name, ng_test_id(s, "c"));
	assert_non_null(
	    kube_snapshot_nodes_with_label(s, ng_test_id(s, "zone"), ng_test_id(s, "1"), &n));
	assert_int_equal(n, 2);
	assert_null(kube_snapshot_nodes_with_label(s, ng_test_id(s, "pool"), NG_INTERN_NONE, &n));
	assert_int_equal(n, 0);
	const struct kube_ngc *cfg = kube_snapshot_config(s);
	assert_non_null(cfg);
	assert_true(cfg->paused);
	assert_int_equal(cfg->eviction_mode, KUBE_EVICTION_WARN);
	assert_true(cfg->has_exempt_users);
	assert_int_equal(cfg->nexempt, 1);
	assert_int_equal(cfg->exempt_users[0], ng_test_id(s, "ops"));
	const struct kube_ngc *all = kube_snapshot_ngcs(s, &n);
	assert_int_equal(n, 2);
	/* An unknown mode makes the object invalid, and invalid enforces. */
	assert_true(all[1].invalid);
	assert_int_equal(all[1].eviction_mode, KUBE_EVICTION_ENFORCE);
	kube_snapshot_release(s);
}

static void test_load_files_reports_path(void **state)
{
	const char *paths[] = {"/nonexistent/snapshot.json"};
	struct kube_snapshot *s = NULL;
	struct ng_err err = {0};
	assert_int_equal(kube_snapshot_load_files(paths, 1, &s, &err), NG_EIO);
	assert_non_null(strstr(err.msg, "/nonexistent/snapshot.json"));
	const char *demo[] = {NG_SOURCE_ROOT "/examples/demo-cluster.json"};
	assert_int_equal(kube_snapshot_load_files(demo, 1, &s, &err), NG_OK);
	assert_true(kube_snapshot_count(s, KUBE_RES_PODS) > 0);
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_f_loads_with_indexes),
	    cmocka_unit_test(test_single_object_and_typed_list),
	    cmocka_unit_test(test_unknown_kinds_are_skipped_and_counted),
	    cmocka_unit_test(test_malformed_core_objects_name_item_and_field),
	    cmocka_unit_test(test_later_objects_replace_earlier_ones),
	    cmocka_unit_test(test_granted_nodes_map_to_their_request),
	    cmocka_unit_test(test_load_files_reports_path),
	    cmocka_unit_test(test_nodes_by_label_and_nodegateconfig),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
