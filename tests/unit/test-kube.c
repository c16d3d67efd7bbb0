/* kube/: the snapshot loader, records, indexes, the store and the /debug/cache dump. */
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

static void test_empty_labels_object(void **state)
{
	/* kubectl label pod p app- leaves "labels": {}: no labels, not an error. */
	struct kube_snapshot *s = ng_test_snapshot(
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
	    "\"p\",\"namespace\":\"d\",\"labels\":{}},\"spec\":{\"nodeName\":\"n\"}}");
	const struct kube_pod *p = kube_snapshot_find_pod_str(s, "d", 1, "p", 1);
	assert_non_null(p);
	assert_int_equal(p->nlabels, 0);
	kube_snapshot_release(s);
}

static void test_pod_flags_claims_and_requests(void **state)
{
	const char *json =
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ds\",\"namespace\":"
	    "\"k\",\"ownerReferences\":[{\"kind\":\"Node\",\"controller\":false,\"name\":\"x\"},"
	    "{\"kind\":\"DaemonSet\",\"controller\":true,\"name\":\"d\"}]},\"spec\":{\"nodeName\":"
	    "\"n\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"m\",\"namespace\":"
	    "\"k\",\"annotations\":{\"kubernetes.io/config.mirror\":\"abc\"},\"deletionTimestamp\":"
	    "\"2026-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n\",\"volumes\":[{\"name\":\"v\","
	    "\"persistentVolumeClaim\":{\"claimName\":\"data\"}},{\"name\":\"e\",\"emptyDir\":{}}],"
	    "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\","
	    "\"nvidia.com/gpu\":\"1\"}}},{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":"
	    "\"1\"}}}]}}]}";
	struct kube_snapshot *s = ng_test_snapshot(json);
	const struct kube_pod *ds = kube_snapshot_find_pod_str(s, "k", 1, "ds", 2);
	assert_true(ds->flags & KUBE_POD_DAEMONSET);
	assert_false(ds->flags & KUBE_POD_MIRROR);
	assert_int_equal(ds->owner_kind, ng_test_id(s, "DaemonSet"));
	const struct kube_pod *m = kube_snapshot_find_pod_str(s, "k", 1, "m", 1);
	assert_true(m->flags & KUBE_POD_MIRROR);
	assert_true(m->flags & KUBE_POD_TERMINATING);
	assert_int_equal(m->owner_kind, NG_INTERN_NONE);
	assert_int_equal(m->nclaims, 1);
	assert_int_equal(m->claims[0], ng_test_id(s, "data"));
	assert_int_equal(m->nrequests, 2); /* cpu counted once */
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

static void test_label_selector_json_validation(void **state)
{
	static const struct {
		const char *json;
		const char *msg; /* NULL: valid */
	} cases[] = {
	    {"{}", NULL},
	    {"{\"matchLabels\":{\"a\":\"b\"},\"matchExpressions\":[{\"key\":\"c\",\"operator\":"
	     "\"NotIn\",\"values\":[\"x\",\"y\"]},{\"key\":\"d\",\"operator\":\"Exists\"}]}",
	     NULL},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Foo\",\"values\":[\"x\"]}]}",
	     "sel.matchExpressions[0].operator: \"Foo\" is not one of In, NotIn, Exists, "
	     "DoesNotExist"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"In\",\"values\":[]}]}",
	     "sel.matchExpressions[0].values: must be non-empty when operator is In"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
	     "sel.matchExpressions[0].values: must be empty when operator is Exists"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
	     "is not one of In, NotIn, Exists, DoesNotExist"},
	    {"{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
	     "sel.matchExpressions[0].key: required"},
	    {"{\"matchLabels\":{\"bad key\":\"b\"}}",
	     "sel.matchLabels[bad key]: name part must consist of"},
	    {"{\"matchLabels\":{\"a\":\"-b\"}}", "sel.matchLabels[a]: a valid label must be"},
	    {"{\"matchLabels\":{\"Example.com/a\":\"b\"}}",
	     "prefix part a lowercase RFC 1123 subdomain"},
	    {"{\"matchLabels\":[]}", "sel.matchLabels: expected an object"},
	    {"[]", "sel: expected an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		cJSON *j = NULL;
		struct ng_err err = {0};
		assert_int_equal(
		    ng_json_parse(cases[i].json, strlen(cases[i].json), arena, &j, &err), NG_OK);
		struct kube_selector sel = {.nreqs = 0xad};
		ng_status st = kube_decode_selector(pool, arena, j, "sel", &sel, &err);
		if (!cases[i].msg) {
			assert_int_equal(st, NG_OK);
			assert_true(sel.present);
		} else {
			assert_int_not_equal(st, NG_OK);
			assert_int_equal(sel.nreqs, 0xad);
			if (!strstr(err.msg, cases[i].msg))
				fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
		}
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

static void test_invalid_budget_is_kept_and_marked(void **state)
{
	const char *json =
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"bad\",\"namespace\":\"d\"},\"spec\":{\"podSelector\":{"
	    "\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}}},"
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"none\",\"namespace\":\"d\"},\"spec\":{\"maxDisruptions\":1}},"
	    "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"pool\"},\"spec\":{\"nodeSelector\":{},\"maxDisruptedNodes\":"
	    "\"25%\",\"countUnavailableNodes\":false,\"freeze\":{\"enabled\":true,\"reason\":"
	    "\"peak\"}}}]}";
	struct kube_snapshot *s = ng_test_snapshot(json);
	size_t n;
	const struct kube_adb *a = kube_snapshot_adbs(s, &n);
	assert_int_equal(n, 2);
	assert_true(a[0].b.invalid);
	assert_non_null(strstr(ng_intern_str(kube_snapshot_pool(s), a[0].b.error, NULL),
			       "spec.podSelector.matchExpressions[0].operator"));
	assert_true(a[1].b.invalid);
	assert_non_null(strstr(ng_intern_str(kube_snapshot_pool(s), a[1].b.error, NULL),
			       "at least one of podSelector and pvcSelector"));
	const struct kube_ndb *d = kube_snapshot_ndbs(s, &n);
	assert_int_equal(n, 1);
	assert_false(d->b.invalid);
	assert_true(d->node_selector.present);
	assert_int_equal(d->node_selector.nreqs, 0);
	assert_true(d->max_disrupted.is_str);
	assert_false(d->count_unavailable);
	assert_true(d->b.frozen);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(s), d->b.freeze_reason, NULL), "peak");
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

struct stress {
	struct kube_store *store;
	int rounds;
};

static void *reader(void *arg)
{
	struct stress *st = arg;
	for (int i = 0; i < st->rounds * 20; i++) {
		struct kube_snapshot *s = kube_store_acquire(st->store);
		size_t n = kube_snapshot_count(s, KUBE_RES_NODES);
		if (n != 0 && n != 3)
			abort();
		kube_snapshot_release(s);
	}
	return NULL;
}

/* The drainer's note on a node: what it holds, the taints it added; a note that does not parse
 * is marked invalid and the node is kept. */
static void test_node_drain_note(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_snapshot(
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\","
	    "\"resourceVersion\":"
	    "\"7\",\"annotations\":{\"nodegate.io/drain\":\"{\\\"wasUnschedulable\\\":true,"
	    "\\\"holders\\\":[\\\"r1\\\",\\\"r2\\\"],\\\"bootID\\\":\\\"b-1\\\",\\\"taints\\\":[{"
	    "\\\"key\\\":\\\"example.com/m\\\",\\\"effect\\\":\\\"NoSchedule\\\"}]}\"}},"
	    "\"status\":{\"nodeInfo\":{\"bootID\":\"b-2\"}}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"b\",\"annotations\":"
	    "{"
	    "\"nodegate.io/drain\":\"{\\\"wasUnschedulable\\\":false,\\\"holders\\\":[],"
	    "\\\"taints\\\":[{\\\"key\\\":\\\"k\\\"}]}\"}}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\",\"annotations\":"
	    "{"
	    "\"nodegate.io/drain\":\"not json\"}}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"d\",\"annotations\":"
	    "{"
	    "\"other\":\"x\"}}}]}");
	size_t nn;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	assert_int_equal(nn, 4);
	const struct kube_node *a = kube_snapshot_find_node(s, ng_test_id(s, "a"));
	assert_non_null(a);
	assert_true(a->note.present && !a->note.invalid && a->note.was_unschedulable);
	assert_int_equal(a->note.nholders, 2);
	assert_int_equal(a->note.holders[1], ng_test_id(s, "r2"));
	assert_string_equal(a->note.boot_id, "b-1");
	assert_string_equal(a->boot_id, "b-2");
	assert_string_equal(a->rv, "7");
	assert_int_equal(a->note.ntaints, 1);
	assert_int_equal(a->note.taints[0].key, ng_test_id(s, "example.com/m"));
	assert_int_equal(a->note.taints[0].effect, ng_test_id(s, "NoSchedule"));
	/* A taint without an effect, or a note that is not JSON: invalid, node kept. */
	const struct kube_node *b = kube_snapshot_find_node(s, ng_test_id(s, "b"));
	assert_true(b && b->note.present && b->note.invalid);
	const struct kube_node *c = kube_snapshot_find_node(s, ng_test_id(s, "c"));
	assert_true(c && c->note.present && c->note.invalid);
	const struct kube_node *d = kube_snapshot_find_node(s, ng_test_id(s, "d"));
	assert_true(d && !d->note.present && d->has_annotations);
	(void)nodes;
	kube_snapshot_release(s);
}

static void test_store_publish_while_readers_acquire(void **state)
{
	struct stress st = {.store = kube_store_create(), .rounds = 200};
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &st), 0);
	for (int i = 0; i < st.rounds; i++)
		kube_store_publish(st.store, ng_test_snapshot(ng_fixture_f));
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(kube_store_generation(st.store), (uint64_t)st.rounds);
	struct kube_snapshot *s = kube_store_acquire(st.store);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 3);
	kube_snapshot_release(s);
	kube_store_destroy(st.store);
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

/* ---- the live cache: incremental changes and publishing ---- */

static void apply(struct kube_cache *c, const char *json, bool del)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(json, strlen(json), a, &root, &err), NG_OK);
	struct kube_object obj;
	assert_int_equal(
	    kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), root, "test", &obj, &err),
	    NG_OK);
	if (del)
		assert_int_equal(kube_cache_delete(c, &obj), NG_OK);
	else
		assert_int_equal(kube_cache_upsert(c, &obj), NG_OK);
	ng_arena_destroy(a);
}

#define POD_ON(name, node, app)                                                                    \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                   \
	"\",\"namespace\":\"d\",\"labels\":{\"app\":\"" app "\"}},\"spec\":{\"nodeName\":\"" node  \
	"\"}}"
#define NODE_NAMED(name)                                                                           \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\"}}"

static struct kube_snapshot *publish(struct kube_cache *c)
{
	struct kube_snapshot *s = NULL;
	assert_int_equal(kube_cache_publish(c, &s), NG_OK);
	return s;
}

static void test_cache_publishes_changes_and_shares_unchanged_tables(void **state)
{
	struct kube_cache *c = kube_cache_create();
	apply(c, POD_ON("a", "n1", "db"), false);
	apply(c, POD_ON("b", "n1", "web"), false);
	apply(c, NODE_NAMED("n1"), false);
	assert_true(kube_cache_dirty(c));
	struct kube_snapshot *s1 = publish(c);
	assert_false(kube_cache_dirty(c));
	assert_int_equal(kube_snapshot_count(s1, KUBE_RES_PODS), 2);
	assert_int_equal(kube_snapshot_generation(s1), 1);
	/* A pod moves, one is deleted, one is added; nodes do not change. */
	apply(c, POD_ON("a", "n2", "db"), false);
	apply(c, POD_ON("b", "n1", "web"), true);
	apply(c, POD_ON("c", "n2", "db"), false);
	struct kube_snapshot *s2 = publish(c);
	assert_int_equal(kube_snapshot_count(s2, KUBE_RES_PODS), 2);
	assert_ptr_equal(s1->t[KUBE_RES_NODES], s2->t[KUBE_RES_NODES]);
	assert_ptr_not_equal(s1->t[KUBE_RES_PODS], s2->t[KUBE_RES_PODS]);
	/* The old snapshot is untouched: readers keep their point in time. */
	const struct kube_pod *a1 = kube_snapshot_find_pod_str(s1, "d", 1, "a", 1);
	const struct kube_pod *a2 = kube_snapshot_find_pod_str(s2, "d", 1, "a", 1);
	assert_int_equal(a1->node, ng_test_id(s1, "n1"));
	assert_int_equal(a2->node, ng_test_id(s2, "n2"));
	assert_non_null(kube_snapshot_find_pod_str(s1, "d", 1, "b", 1));
	assert_null(kube_snapshot_find_pod_str(s2, "d", 1, "b", 1));
	assert_non_null(kube_snapshot_find_pod_str(s2, "d", 1, "c", 1));
	size_t n;
	assert_non_null(kube_snapshot_pods_on_node(s2, ng_test_id(s2, "n2"), &n));
	assert_int_equal(n, 2);
	assert_null(kube_snapshot_pods_on_node(s2, ng_test_id(s2, "n1"), &n));
	/* Releasing in any order frees everything (ASan/LSan check this). */
	kube_snapshot_release(s1);
	struct kube_snapshot *s3 = publish(c); /* nothing pending: shares every table */
	assert_ptr_equal(s3->t[KUBE_RES_PODS], s2->t[KUBE_RES_PODS]);
	kube_cache_destroy(c);
	assert_string_equal(kube_snapshot_find_pod_str(s3, "d", 1, "c", 1)->name, "c");
	kube_snapshot_release(s2);
	kube_snapshot_release(s3);
}

static void test_cache_later_change_in_a_batch_wins(void **state)
{
	struct kube_cache *c = kube_cache_create();
	apply(c, POD_ON("a", "n1", "db"), false);
	apply(c, POD_ON("a", "n2", "db"), false);
	apply(c, POD_ON("a", "n3", "db"), false);
	apply(c, POD_ON("gone", "n3", "db"), false);
	apply(c, POD_ON("gone", "n3", "db"), true);
	struct kube_snapshot *s = publish(c);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	assert_int_equal(kube_snapshot_find_pod_str(s, "d", 1, "a", 1)->node, ng_test_id(s, "n3"));
	/* Deleting what never existed is harmless. */
	apply(c, POD_ON("never", "n3", "db"), true);
	kube_snapshot_release(s);
	s = publish(c);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	kube_snapshot_release(s);
	kube_cache_destroy(c);
}

static void test_cache_reset_replaces_and_discard_restores(void **state)
{
	struct kube_cache *c = kube_cache_create();
	apply(c, POD_ON("a", "n1", "db"), false);
	apply(c, POD_ON("b", "n1", "db"), false);
	struct kube_snapshot *s1 = publish(c);
	/* A relist that fails half-way changes nothing. */
	kube_cache_reset(c, KUBE_RES_PODS);
	apply(c, POD_ON("x", "n9", "db"), false);
	kube_cache_discard(c, KUBE_RES_PODS);
	assert_false(kube_cache_dirty(c));
	/* A relist that completes replaces everything. */
	kube_cache_reset(c, KUBE_RES_PODS);
	apply(c, POD_ON("b", "n2", "db"), false);
	apply(c, POD_ON("c", "n2", "db"), false);
	struct kube_snapshot *s2 = publish(c);
	assert_int_equal(kube_snapshot_count(s2, KUBE_RES_PODS), 2);
	assert_null(kube_snapshot_find_pod_str(s2, "d", 1, "a", 1));
	assert_int_equal(kube_snapshot_find_pod_str(s2, "d", 1, "b", 1)->node,
			 ng_test_id(s2, "n2"));
	assert_int_equal(kube_snapshot_count(s1, KUBE_RES_PODS), 2);
	kube_snapshot_release(s2);
	kube_cache_destroy(c);
	kube_snapshot_release(s1);
}

static void stage(struct kube_cache *c, struct kube_stage *st, const char *json)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(json, strlen(json), a, &root, &err), NG_OK);
	struct kube_object obj;
	assert_int_equal(
	    kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), root, "test", &obj, &err),
	    NG_OK);
	assert_int_equal(kube_stage_add(st, &obj), NG_OK);
	ng_arena_destroy(a);
}

static void test_cache_stage_replaces_a_resource_in_one_step(void **state)
{
	struct kube_cache *c = kube_cache_create();
	apply(c, POD_ON("a", "n1", "db"), false);
	apply(c, POD_ON("b", "n1", "db"), false);
	struct kube_snapshot *s1 = publish(c);
	/* A list in progress: the changes of other resources still publish, without it. */
	struct kube_stage *st = kube_stage_create(c, KUBE_RES_PODS);
	stage(c, st, POD_ON("b", "n2", "db"));
	stage(c, st, POD_ON("c", "n2", "db"));
	stage(c, st, POD_ON("b", "n3", "db")); /* listed twice: the later one wins */
	assert_int_equal(kube_stage_count(st), 2);
	apply(c, POD_ON("x", "n9", "db"), false); /* a pod change before the list ends */
	assert_int_equal(kube_cache_replace(c, st), NG_OK);
	kube_stage_destroy(st);
	/* An empty list empties the resource. */
	struct kube_stage *empty = kube_stage_create(c, KUBE_RES_PVCS);
	assert_int_equal(kube_cache_replace(c, empty), NG_OK);
	kube_stage_destroy(empty);
	assert_false(kube_cache_dirty(c)); /* the list superseded the pending pod change */
	struct kube_snapshot *s2 = NULL;
	assert_int_equal(kube_cache_publish_some(c, 0, &s2), NG_OK);
	assert_int_equal(kube_snapshot_count(s2, KUBE_RES_PODS), 2);
	assert_null(kube_snapshot_find_pod_str(s2, "d", 1, "a", 1));
	assert_null(kube_snapshot_find_pod_str(s2, "d", 1, "x", 1));
	assert_int_equal(kube_snapshot_find_pod_str(s2, "d", 1, "b", 1)->node,
			 ng_test_id(s2, "n3"));
	assert_int_equal(kube_snapshot_find_pod_str(s2, "d", 1, "c", 1)->node,
			 ng_test_id(s2, "n2"));
	size_t n = 0;
	kube_snapshot_pods_on_node(s2, ng_test_id(s2, "n2"), &n);
	assert_int_equal(n, 1);
	/* The older snapshot still reads the replaced pods (their side data retired with it). */
	assert_int_equal(kube_snapshot_count(s1, KUBE_RES_PODS), 2);
	assert_string_equal(kube_snapshot_find_pod_str(s1, "d", 1, "a", 1)->name, "a");
	/* Later changes apply on top of the replaced table. */
	apply(c, POD_ON("c", "n1", "db"), true);
	struct kube_snapshot *s3 = publish(c);
	assert_int_equal(kube_snapshot_count(s3, KUBE_RES_PODS), 1);
	kube_snapshot_release(s3);
	kube_snapshot_release(s2);
	kube_cache_destroy(c);
	kube_snapshot_release(s1);
	/* A stage dropped half-way frees what it holds. */
	c = kube_cache_create();
	st = kube_stage_create(c, KUBE_RES_PODS);
	stage(c, st, POD_ON("d", "n2", "db"));
	kube_stage_destroy(st);
	kube_cache_destroy(c);
}

struct live_stress {
	struct kube_store *store;
	_Atomic bool done;
};

static void *live_reader(void *arg)
{
	struct live_stress *st = arg;
	while (!atomic_load(&st->done)) {
		struct kube_snapshot *s = kube_store_acquire(st->store);
		/* Invariant the writer keeps: every pod named p<i> sits on node n<i % 7>, and the
		 * by-node index agrees with the records. */
		size_t n;
		const struct kube_pod *pods = kube_snapshot_pods(s, &n);
		for (size_t i = 0; i < n; i++) {
			const char *name = pods[i].name;
			if (name[0] != 'p')
				abort();
			size_t m;
			const uint32_t *on = kube_snapshot_pods_on_node(s, pods[i].node, &m);
			bool found = false;
			for (size_t k = 0; k < m; k++)
				found = found || on[k] == i;
			if (!found ||
			    kube_snapshot_find_pod_str(s, "d", 1, name, strlen(name)) != &pods[i])
				abort();
		}
		kube_snapshot_release(s);
	}
	return NULL;
}

static void test_store_stress_live_cache_writer_and_readers(void **state)
{
	struct live_stress st = {.store = kube_store_create()};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, live_reader, &st), 0);
	struct kube_cache *c = kube_cache_create();
	char json[256];
	unsigned seed = 42;
	for (int round = 0; round < 300; round++) {
		for (int k = 0; k < 20; k++) {
			int i = rand_r(&seed) % 200;
			(void)snprintf(json, sizeof(json),
				       "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
				       "\"name\":\"p%d\",\"namespace\":\"d\",\"labels\":{\"r\":"
				       "\"%d\"}},\"spec\":{\"nodeName\":\"n%d\"}}",
				       i, round, i % 7);
			apply(c, json, rand_r(&seed) % 4 == 0);
		}
		if (round % 50 == 49)
			kube_cache_reset(c, KUBE_RES_PODS); /* an occasional relist */
		kube_store_publish(st.store, publish(c));
	}
	atomic_store(&st.done, true);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	kube_cache_destroy(c);
	kube_store_destroy(st.store);
}

/* A NodeDisruption decoded on its own; the test fails on any error. */
static struct kube_one *one_nd(const char *json)
{
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	if (kube_one_parse(json, strlen(json), &one, &err) != NG_OK)
		fail_msg("%s: %s", json, err.msg);
	assert_non_null(kube_one_nd(one));
	return one;
}

static const char *str_of(const struct kube_one *one, uint32_t id)
{
	return ng_intern_str(kube_one_pool(one), id, NULL);
}

static void test_nd_drain_operation_requestors_and_creator(void **state)
{
	struct kube_one *one = one_nd(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd\",\"annotations\":{\"nodegate.io/created-by\":\"alice\"}},\"spec\":{"
	    "\"nodeNames\":[\"n1\"],\"startDate\":\"2026-01-02T03:04:05Z\",\"duration\":\"1h30m\","
	    "\"drain\":{\"cordon\":false,\"taint\":{\"key\":\"maint\",\"effect\":\"NoSchedule\"},"
	    "\"waitForPodCompletion\":{\"podSelector\":\"job=batch\",\"timeoutSeconds\":600},"
	    "\"evictionStrategy\":\"ForceDelete\",\"podSelector\":\"app in (a,b)\","
	    "\"podEvictionFilters\":[{\"byResourceNameRegex\":\"nvidia.com/.*\"},{}],"
	    "\"force\":true,\"deleteEmptyDir\":true,\"timeoutSeconds\":30,"
	    "\"skipWaitingForEviction\":true,\"waitForVolumeDetach\":false},"
	    "\"operation\":{\"waitForReboot\":true,\"jobTemplate\":{\"spec\":{\"b\":[1,2.5,"
	    "true,null],\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
	    "\"busybox\"}]}},\"a\":\"x\"}}},\"additionalRequestors\":[\"drainer\",\"ops\"]},"
	    "\"status\":{\"state\":\"Granted\",\"grantedAt\":\"2026-01-02T03:05:00Z\","
	    "\"disruptedNodes\":[\"n1\"],\"disruptedDisruptionBudgets\":[{\"reference\":{\"kind\":"
	    "\"NodeDisruptionBudget\",\"name\":\"pool\"},\"ok\":true,\"reason\":\"fits\"}]}}");
	const struct kube_nd *nd = kube_one_nd(one);
	const struct kube_nd_detail *x = nd->detail;
	assert_non_null(x);
	assert_int_equal(x->spec_error, NG_INTERN_NONE);
	assert_true(x->has_node_names && !x->has_node_selector);
	assert_string_equal(str_of(one, x->created_by), "alice");
	assert_int_equal(x->duration_ms, 90 * 60 * 1000);
	assert_true(x->start_ms > 0 && x->granted_ms == x->start_ms + 55000);
	const struct kube_nd_drain *d = &x->drain;
	assert_true(d->present && !d->cordon && d->has_taint && d->has_wait);
	assert_string_equal(str_of(one, d->taint.key), "maint");
	assert_int_equal(d->taint.val, NG_INTERN_NONE);
	assert_string_equal(str_of(one, d->taint.effect), "NoSchedule");
	assert_string_equal(d->wait_pod_selector, "job=batch");
	assert_int_equal(d->wait_timeout_s, 600);
	assert_int_equal(d->strategy, KUBE_DRAIN_FORCE_DELETE);
	assert_string_equal(d->pod_selector, "app in (a,b)");
	assert_int_equal(d->nfilters, 2);
	assert_string_equal(d->filters[0].by_resource_name_regex, "nvidia.com/.*");
	assert_null(d->filters[1].by_resource_name_regex);
	assert_true(d->force && d->delete_empty_dir && d->skip_waiting_for_eviction);
	assert_false(d->wait_for_volume_detach);
	assert_int_equal(d->timeout_s, 30);
	assert_true(x->operation.present && x->operation.wait_for_reboot);
	/* Keys sorted: equal templates are equal strings. */
	assert_string_equal(
	    x->operation.job_template,
	    "{\"spec\":{\"a\":\"x\",\"b\":[1,2.5,true,null],\"template\":{"
	    "\"spec\":{\"containers\":[{\"image\":\"busybox\",\"name\":\"c\"}]}}}}");
	assert_true(nd->additional_requestors);
	assert_int_equal(x->nmore_requestors, 2);
	assert_string_equal(str_of(one, x->more_requestors[1]), "ops");
	assert_int_equal(x->nverdicts, 1);
	assert_string_equal(str_of(one, x->verdicts[0].kind), "NodeDisruptionBudget");
	assert_int_equal(x->verdicts[0].ns, NG_INTERN_NONE);
	assert_true(x->verdicts[0].ok);
	assert_string_equal(x->verdicts[0].reason, "fits");
	kube_one_destroy(one);
	/* Without drain and operation: the defaults. */
	one = one_nd("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		     "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeSelector\":{}}}");
	x = kube_one_nd(one)->detail;
	assert_true(x->has_node_selector && !x->has_node_names);
	assert_true(!x->drain.present && x->drain.cordon && x->drain.wait_for_volume_detach);
	assert_int_equal(x->drain.strategy, KUBE_DRAIN_EVICT);
	assert_true(x->drain.timeout_s == -1 && x->drain.wait_timeout_s == -1);
	assert_true(!x->operation.present && !x->operation.job_template);
	assert_true(x->created_by == NG_INTERN_NONE && x->duration_ms == -1);
	assert_int_equal(x->nmore_requestors, 0);
	kube_one_destroy(one);
}

/* Which fields make an operation privileged: the first one is named, for the refusal. */
static void test_operation_privileged_fields(void **state)
{
	(void)state;
	static const struct {
		const char *pod_spec, *field; /* NULL: not privileged */
	} cases[] = {
	    {"", NULL},
	    {"\"hostPID\":false,\"hostNetwork\":false,", NULL},
	    {"\"hostPID\":true,", "hostPID"},
	    {"\"hostNetwork\":true,", "hostNetwork"},
	    {"\"hostIPC\":true,", "hostIPC"},
	    {"\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"r\",\"hostPath\":{"
	     "\"path\":\"/\"}}],",
	     "volumes[1].hostPath"},
	    {"\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"securityContext\":{"
	     "\"privileged\":true}}],",
	     "initContainers[0].securityContext.privileged"},
	    {"\"ephemeralContainers\":[{\"name\":\"e\",\"image\":\"x\",\"securityContext\":{"
	     "\"allowPrivilegeEscalation\":true}}],",
	     "ephemeralContainers[0].securityContext.allowPrivilegeEscalation"},
	    {"\"securityContext\":{\"runAsUser\":0},", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n\"],"
		    "\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{%s"
		    "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}}}",
		    cases[i].pod_spec);
		struct kube_one *one = one_nd(json);
		const char *got = kube_one_nd(one)->detail->operation.privileged;
		if (!cases[i].field) {
			assert_null(got);
		} else {
			char want[160];
			(void)snprintf(want, sizeof(want),
				       "spec.operation.jobTemplate.spec.template.spec.%s",
				       cases[i].field);
			assert_non_null(got);
			assert_string_equal(got, want);
		}
		assert_int_equal(kube_one_nd(one)->detail->spec_error, NG_INTERN_NONE);
		kube_one_destroy(one);
	}
	/* Capabilities added to a container, and in a template. */
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	const char *ndt =
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"operation\":{\"jobTemplate\":{\"spec\":{"
	    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":"
	    "\"b\",\"image\":\"x\",\"securityContext\":{\"capabilities\":{\"drop\":[\"ALL\"],"
	    "\"add\":[\"SYS_BOOT\"]}}}]}}}}}}}";
	assert_int_equal(kube_one_parse(ndt, strlen(ndt), &one, &err), NG_OK);
	assert_non_null(kube_one_ndt(one));
	assert_string_equal(kube_one_ndt(one)->privileged,
			    "spec.operation.jobTemplate.spec.template.spec.containers[1]."
			    "securityContext.capabilities.add");
	assert_int_equal(kube_one_ndt(one)->error, NG_INTERN_NONE);
	kube_one_destroy(one);
	/* A template mounting a Secret is refused as a request's would be. */
	const char *bad =
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"operation\":{\"jobTemplate\":{\"spec\":{"
	    "\"template\":{\"spec\":{\"volumes\":[{\"name\":\"s\",\"secret\":{\"secretName\":"
	    "\"nodegate-ca\"}}],\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}}}}}}";
	assert_int_equal(kube_one_parse(bad, strlen(bad), &one, &err), NG_OK);
	assert_non_null(
	    strstr(str_of(one, kube_one_ndt(one)->error),
		   "spec.operation.jobTemplate.spec.template.spec.volumes[0].secret: not "
		   "allowed"));
	kube_one_destroy(one);
}

/* The author annotations of templates and remediations, read for remediation's check. */
static void test_authors_of_templates_and_remediations(void **state)
{
	(void)state;
	static const char *const objs[] = {
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\",\"annotations\":{%s}},\"spec\":{}}",
	    "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"r\",\"annotations\":{%s}},\"spec\":{\"nodeSelector\":{},"
	    "\"rule\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]},"
	    "\"templateName\":\"t\"}}",
	};
	static const struct {
		const char *ann;
		const char *author; /* NULL: none */
		size_t ngroups;
	} cases[] = {
	    {"\"nodegate.io/created-by\":\"alice\",\"nodegate.io/created-by-groups\":"
	     "\"[\\\"ops\\\",\\\"system:authenticated\\\"]\"",
	     "alice", 2},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"[]\"", "bob",
	     0},
	    {"\"nodegate.io/created-by\":\"bob\"", NULL, 0},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"ops\"", NULL,
	     0},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"[1]\"", NULL,
	     0},
	    {"\"other\":\"x\"", NULL, 0},
	};
	for (size_t k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char json[1024];
			(void)snprintf(json, sizeof(json), objs[k], cases[i].ann);
			struct kube_one *one = NULL;
			struct ng_err err = {0};
			if (kube_one_parse(json, strlen(json), &one, &err) != NG_OK)
				fail_msg("%s: %s", json, err.msg);
			const struct kube_author *a =
			    k == 0 ? &kube_one_ndt(one)->author : &kube_one_nrem(one)->author;
			if (!cases[i].author) {
				assert_int_equal(a->name, NG_INTERN_NONE);
				assert_int_equal(a->ngroups, 0);
			} else {
				assert_string_equal(str_of(one, a->name), cases[i].author);
				assert_int_equal(a->ngroups, cases[i].ngroups);
				if (cases[i].ngroups == 2) {
					assert_string_equal(str_of(one, a->groups[0]), "ops");
					assert_string_equal(str_of(one, a->groups[1]),
							    "system:authenticated");
				}
			}
			kube_one_destroy(one);
		}
	}
}

static void test_nd_malformed_drain_fields_name_the_field(void **state)
{
	static const struct {
		const char *spec, *why;
	} cases[] = {
	    {"\"drain\":7", "spec.drain: expected an object"},
	    {"\"drain\":{\"podSelector\":3}", "spec.drain.podSelector: expected a label selector"},
	    {"\"drain\":{\"waitForPodCompletion\":{\"podSelector\":[]}}",
	     "spec.drain.waitForPodCompletion.podSelector: expected a label selector string"},
	    {"\"drain\":{\"waitForPodCompletion\":{\"timeoutSeconds\":-1}}",
	     "spec.drain.waitForPodCompletion.timeoutSeconds: expected a non-negative"},
	    {"\"drain\":{\"podEvictionFilters\":{}}", "spec.drain.podEvictionFilters: expected"},
	    {"\"drain\":{\"podEvictionFilters\":[1]}",
	     "spec.drain.podEvictionFilters[0]: expected an object"},
	    {"\"drain\":{\"podEvictionFilters\":[{},{\"byResourceNameRegex\":5}]}",
	     "spec.drain.podEvictionFilters[1].byResourceNameRegex: expected a regular "
	     "expression of at most 1024 bytes"},
	    {"\"drain\":{\"taint\":{\"effect\":\"NoSchedule\"}}", "spec.drain.taint.key: required"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":\"Never\"}}",
	     "spec.drain.taint.effect: must be one of"},
	    {"\"drain\":{\"evictionStrategy\":\"Shred\"}", "spec.drain.evictionStrategy: must be"},
	    {"\"drain\":{\"cordon\":\"yes\"}", "spec.drain.cordon: expected true or false"},
	    {"\"drain\":{\"force\":1}", "spec.drain.force: expected true or false"},
	    {"\"drain\":{\"deleteEmptyDir\":null,\"timeoutSeconds\":1.5}",
	     "spec.drain.timeoutSeconds: expected a non-negative integer"},
	    {"\"drain\":{\"waitForVolumeDetach\":\"no\"}", "spec.drain.waitForVolumeDetach"},
	    {"\"drain\":{\"skipWaitingForEviction\":0}", "spec.drain.skipWaitingForEviction"},
	    {"\"operation\":[]", "spec.operation: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccountName\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccountName: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccount\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}"
	     "}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccount: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"ca\",\"secret\":{\"secretName\":\"nodegate-ca\"}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].secret: not allowed: an "
	     "operation may not read Secrets"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"p\",\"projected\":{"
	     "\"sources\":[{\"configMap\":{\"name\":\"m\"}},{\"secret\":{\"name\":\"s\"}}]}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[1].projected.sources[1].secret:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"t\",\"projected\":{\"sources\":[{\"serviceAccountToken\":"
	     "{\"path\":\"t\"}}]}}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].projected.sources[0]."
	     "serviceAccountToken: not allowed: an operation gets no service account token"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"automountServiceAccountToken\":true,\"containers\":[{\"name\":\"c\",\"image\":"
	     "\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.automountServiceAccountToken: not "
	     "allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"env\":[{\"name\":\"K\","
	     "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].env[0].valueFrom."
	     "secretKeyRef: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"envFrom\":[{\"secretRef\":{"
	     "\"name\":\"s\"}}]}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.initContainers[0].envFrom[0].secretRef:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":\"x\"}", "spec.operation.jobTemplate: expected"},
	    {"\"operation\":{\"jobTemplate\":{}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required: at least one "
	     "container"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":null}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":7}}}",
	     "spec.operation.jobTemplate.spec.template: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":{}}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: expected an array"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[\"c\"]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0]: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[1].name: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].image: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\",\"image\":\"\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].image: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"Main_1\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].name: 'Main_1' is not a "
	     "DNS-1123 label"},
	    {"\"drain\":{\"taint\":{\"key\":\"bad key\",\"effect\":\"NoSchedule\"}}",
	     "spec.drain.taint.key: invalid 'bad key': name part must consist of"},
	    {"\"drain\":{\"taint\":{\"key\":\"Example.com/k\",\"effect\":\"NoSchedule\"}}",
	     "spec.drain.taint.key: invalid 'Example.com/k': prefix part"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"value\":\"-v\",\"effect\":"
	     "\"NoSchedule\"}}",
	     "spec.drain.taint.value: invalid '-v': a valid label must be"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\"}}", "spec.drain.taint.effect: must be one of"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":7}}",
	     "spec.drain.taint.effect: must be one of"},
	    {"\"operation\":{\"waitForReboot\":\"x\"}", "spec.operation.waitForReboot"},
	    {"\"additionalRequestors\":\"me\"", "spec.additionalRequestors: expected an array"},
	    {"\"additionalRequestors\":[1]", "spec.additionalRequestors: expected an array"},
	    {"\"startDate\":\"tomorrow\"", "spec.startDate: expected an RFC 3339 time"},
	    {"\"duration\":\"5 minutes\"", "spec.duration: expected a duration"},
	    {"\"duration\":\"m\"", "spec.duration: expected a duration"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n\"],%s}}",
		    cases[i].spec);
		/* The request stays readable (the gate never reads these); it says why. */
		struct kube_one *one = one_nd(json);
		const struct kube_nd_detail *x = kube_one_nd(one)->detail;
		const char *why = str_of(one, x->spec_error);
		if (x->spec_error == NG_INTERN_NONE || !strstr(why, cases[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].spec, why, cases[i].why);
		kube_one_destroy(one);
	}
}

static void test_kube_one_entry_points(void **state)
{
	struct kube_one *one = (struct kube_one *)(uintptr_t)0xad;
	struct ng_err err = {0};
	/* Fields the gate reads still refuse the object, naming the field without a prefix. */
	static const char bad[] = "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"
				  "v1alpha1\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"priority\":"
				  "\"high\"}}";
	assert_int_equal(kube_one_parse(bad, strlen(bad), &one, &err), NG_EPARSE);
	assert_string_equal(err.msg, "spec.priority: expected an integer");
	assert_ptr_equal(one, (struct kube_one *)(uintptr_t)0xad); /* untouched on failure */
	static const char pod[] = "{\"kind\":\"Eviction\",\"apiVersion\":\"policy/v1\"}";
	assert_int_equal(kube_one_parse(pod, strlen(pod), &one, &err), NG_ENOTFOUND);
	static const char noname[] = "{\"spec\":{\"nodeNames\":[\"a\"]}}";
	cJSON *tree = NULL;
	assert_int_equal(ng_json_parse(noname, strlen(noname), NULL, &tree, NULL), NG_OK);
	assert_int_equal(kube_one_decode_as(KUBE_RES_NDS, tree, 0, &one, &err), NG_EPARSE);
	assert_string_equal(err.msg, "metadata.name: required");
	assert_int_equal(kube_one_decode_as(KUBE_RES_NDS, tree, KUBE_ONE_NAME_OPTIONAL, &one, &err),
			 NG_OK);
	assert_int_equal(kube_one_resource(one), KUBE_RES_NDS);
	assert_int_equal(kube_one_nd(one)->name, NG_INTERN_NONE);
	assert_null(kube_one_adb(one));
	kube_one_destroy(one);
	cJSON_Delete(tree);
	/* A budget decodes as invalid, as in the cache. */
	static const char ndb[] = "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
				  "v1alpha1\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
				  "\"nodeSelector\":{\"matchLabels\":{\"a\":5}}}}";
	assert_int_equal(kube_one_parse(ndb, strlen(ndb), &one, &err), NG_OK);
	assert_true(kube_one_ndb(one)->b.invalid);
	kube_one_destroy(one);
	kube_one_destroy(NULL);
}

/* A NodeGateConfig selector over the limit of requirements makes the config invalid, as a
 * malformed one does; it was refused as unreadable (NG_ELIMIT, with no message), so the cache
 * dropped the config and its healthHooks and eviction policy with it. */
static void test_ngc_selector_over_limit_is_invalid(void **state)
{
	static const char *const where[] = {"\"drain\":{\"protectedNamespaces\"",
					    "\"drain\":{\"protectedJobPods\"",
					    "\"controlPlane\":{\"selector\""};
	for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++) {
		struct ng_buf b;
		ng_buf_init(&b, 1u << 20);
		assert_int_equal(ng_buf_printf(&b,
					       "{\"kind\":\"NodeGateConfig\",\"apiVersion\":"
					       "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":"
					       "\"default\"},\"spec\":{\"eviction\":{\"mode\":"
					       "\"Off\"},%s:{\"matchLabels\":{",
					       where[k]),
				 NG_OK);
		for (int i = 0; i <= NG_MAX_SELECTOR_TERMS; i++)
			assert_int_equal(ng_buf_printf(&b, "%s\"k%d\":\"v\"", i ? "," : "", i),
					 NG_OK);
		assert_int_equal(ng_buf_puts(&b, "}}}}}"), NG_OK);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(b.data, b.len, &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_true(g->invalid);
		assert_int_equal(g->eviction_mode, KUBE_EVICTION_ENFORCE);
		assert_non_null(strstr(str_of(one, g->error), "more than 64 requirements"));
		kube_one_destroy(one);
		ng_buf_finish(&b);
	}
}

/* ---- /debug/cache dump ------------------------------------------------------------------ */

/* Every kind the dump lists, with the variants its writers branch on: labels (one needing an
 * escape) and none, unschedulable, pods owned, unplaced, daemon, mirror and terminating, a claim,
 * Bound and Pending PVCs, PVs with and without affinity, a granted and a new NodeDisruption, a
 * valid and an invalid ADB, an NDB and the NodeGateConfig. */
static const char dump_fixture[] =
    "{\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n1\",\"labels\":{"
    "\"pool\":\"gpu\",\"q\":\"a\\\"b\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"}]}},"
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n2\"},\"spec\":{"
    "\"unschedulable\":true}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"web\"},\"ownerReferences\":[{\"kind\":\"ReplicaSet\","
    "\"controller\":true,\"name\":\"r\"}]},\"spec\":{\"nodeName\":\"n1\",\"volumes\":[{"
    "\"name\":\"v\",\"persistentVolumeClaim\":{\"claimName\":\"data\"}}]},\"status\":{"
    "\"phase\":\"Running\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ds\",\"namespace\":"
    "\"kube-system\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":true,"
    "\"name\":\"d\"}]},\"spec\":{\"nodeName\":\"n2\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"m\",\"namespace\":"
    "\"kube-system\",\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"},"
    "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n1\"},"
    "\"status\":{\"phase\":\"Failed\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"unplaced\","
    "\"namespace\":\"default\"},\"spec\":{}},"
    "{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
    "\"data\",\"namespace\":\"default\",\"labels\":{\"app\":\"web\"}},\"spec\":{"
    "\"volumeName\":\"pv1\"},\"status\":{\"phase\":\"Bound\"}},"
    "{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
    "\"later\",\"namespace\":\"default\"},\"spec\":{}},"
    "{\"kind\":\"PersistentVolume\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"pv1\"},"
    "\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":"
    "[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}},"
    "{\"kind\":\"PersistentVolume\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"pv2\"},"
    "\"spec\":{}},"
    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"granted\"},\"spec\":{\"nodeNames\":[\"n1\",\"n2\"]},\"status\":{\"state\":"
    "\"Granted\",\"disruptedNodes\":[\"n1\"]}},"
    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"new\"},\"spec\":{\"nodeNames\":[\"n2\"]}},"
    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":{"
    "\"matchLabels\":{\"app\":\"web\"}},\"maxDisruptions\":1}},"
    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"bad\",\"namespace\":\"default\"},\"spec\":{"
    "\"maxDisruptions\":1}},"
    "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"pool\"},\"spec\":{\"nodeSelector\":{},\"maxDisruptedNodes\":"
    "1}},"
    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"default\"},\"spec\":{\"paused\":true,\"eviction\":{\"mode\":\"Warn\","
    "\"exemptUsers\":[\"ops\",\"sre\"]}}}]}";

/* Today's bytes for dump_fixture: the streaming rewrite must not change them. */
static const char dump_fixture_json[] =
    "{\"generation\":1,\"nodes\":[{\"name\":\"n1\",\"ready\":true,\"unschedulable\":false"
    ",\"labels\":{\"pool\":\"gpu\",\"q\":\"a\\\"b\"}},{\"name\":\"n2\",\"ready\":false,\""
    "unschedulable\":true,\"labels\":{}}],\"pods\":[{\"namespace\":\"default\",\"name\":"
    "\"web\",\"node\":\"n1\",\"phase\":\"Running\",\"owner\":\"ReplicaSet\",\"daemonset\""
    ":false,\"mirror\":false,\"terminating\":false,\"claims\":[\"data\"],\"labels\":{\"ap"
    "p\":\"web\"}},{\"namespace\":\"kube-system\",\"name\":\"ds\",\"node\":\"n2\",\"phase"
    "\":\"Pending\",\"owner\":\"DaemonSet\",\"daemonset\":true,\"mirror\":false,\"termina"
    "ting\":false,\"claims\":[],\"labels\":{}},{\"namespace\":\"kube-system\",\"name\":\""
    "m\",\"node\":\"n1\",\"phase\":\"Failed\",\"owner\":null,\"daemonset\":false,\"mirror"
    "\":true,\"terminating\":true,\"claims\":[],\"labels\":{}},{\"namespace\":\"default\""
    ",\"name\":\"unplaced\",\"node\":null,\"phase\":\"Pending\",\"owner\":null,\"daemonse"
    "t\":false,\"mirror\":false,\"terminating\":false,\"claims\":[],\"labels\":{}}],\"per"
    "sistentvolumeclaims\":[{\"namespace\":\"default\",\"name\":\"data\",\"volume\":\"pv1"
    "\",\"phase\":\"Bound\",\"labels\":{\"app\":\"web\"}},{\"namespace\":\"default\",\"na"
    "me\":\"later\",\"volume\":null,\"phase\":\"Pending\",\"labels\":{}}],\"persistentvol"
    "umes\":[{\"name\":\"pv1\",\"nodeAffinity\":true},{\"name\":\"pv2\",\"nodeAffinity\":"
    "false}],\"nodedisruptions\":[{\"name\":\"granted\",\"state\":\"Granted\",\"nodeNames"
    "\":[\"n1\",\"n2\"],\"disruptedNodes\":[\"n1\"]},{\"name\":\"new\",\"state\":\"\",\"n"
    "odeNames\":[\"n2\"],\"disruptedNodes\":[]}],\"applicationdisruptionbudgets\":[{\"nam"
    "espace\":\"default\",\"name\":\"web\",\"invalid\":false},{\"namespace\":\"default\","
    "\"name\":\"bad\",\"invalid\":true,\"error\":\"spec: at least one of podSelector and "
    "pvcSelector is required\"}],\"nodedisruptionbudgets\":[{\"name\":\"pool\",\"invalid"
    "\":false}],\"nodegateconfigs\":[{\"name\":\"default\",\"invalid\":false,\"paused\":t"
    "rue,\"evictionMode\":\"Warn\",\"exemptUsers\":[\"ops\",\"sre\"]}],\"nodedisrup"
    "tiontemplates\":[],\"noderemediations\":[],\"poddisruptionbudgets\":[]}\n";

static const char dump_empty_json[] =
    "{\"generation\":1,\"nodes\":[],\"pods\":[],\"persistentvolumeclaims\":[],"
    "\"persistentvolumes\":[],\"nodedisruptions\":[],\"applicationdisruptionbudgets\":[],"
    "\"nodedisruptionbudgets\":[],\"nodegateconfigs\":[],\"nodedisruptiontemplates\":[],"
    "\"noderemediations\":[],\"poddisruptionbudgets\":[]}\n";

/* Objects of every kind in @s: with the head, the tail and each section's opening and closing,
 * the number of pieces a dump of @s has. */
static size_t dump_pieces(const struct kube_snapshot *s)
{
	size_t n = 2 + 2 * KUBE_RES_COUNT;
	for (int r = 0; r < KUBE_RES_COUNT; r++)
		n += kube_snapshot_count(s, (enum kube_resource)r);
	return n;
}

/* Field by field: a cursor's padding is not part of its value. */
static bool same_cursor(const struct kube_dump_cursor *a, const struct kube_dump_cursor *b)
{
	return a->section == b->section && a->item == b->item && a->stage == b->stage;
}

/*
 * Dumps @s in parts of @budget bytes, each into an emptied buffer as the server's callback
 * does, and checks that they concatenate to @whole, that each part but the last reaches the
 * budget, and that a finished cursor stays finished. Returns the number of parts.
 */
static size_t dump_in_parts(const struct kube_snapshot *s, size_t budget,
			    const struct ng_buf *whole)
{
	struct kube_dump_cursor cur = {0};
	struct ng_buf part, all;
	ng_buf_init(&part, 1u << 20);
	ng_buf_init(&all, 1u << 20);
	bool done = false;
	size_t nparts = 0;
	while (!done) {
		assert_true(nparts <= whole->len); /* every part holds at least one byte */
		ng_buf_reset(&part);
		assert_int_equal(kube_snapshot_dump_json_part(s, &cur, &part, budget, &done),
				 NG_OK);
		assert_true(part.len > 0);
		assert_true(done || part.len >= budget);
		assert_int_equal(ng_buf_append(&all, part.data, part.len), NG_OK);
		nparts++;
	}
	assert_int_equal(all.len, whole->len);
	assert_memory_equal(all.data, whole->data, whole->len);
	/* Done stays done: nothing more is appended, whatever the budget. */
	struct kube_dump_cursor end = cur;
	for (int i = 0; i < 2; i++) {
		done = false;
		assert_int_equal(
		    kube_snapshot_dump_json_part(s, &cur, &all, i ? SIZE_MAX : 1, &done), NG_OK);
		assert_true(done);
		assert_int_equal(all.len, whole->len);
		assert_true(same_cursor(&cur, &end));
	}
	ng_buf_finish(&part);
	ng_buf_finish(&all);
	return nparts;
}

static void check_dump_parts(const char *json, const char *expect)
{
	struct kube_snapshot *s = ng_test_snapshot(json);
	struct ng_buf whole;
	ng_buf_init(&whole, 1u << 20);
	assert_int_equal(kube_snapshot_dump_json(s, &whole), NG_OK);
	assert_string_equal(whole.data, expect);
	/* Budget 1 (and 0): one piece a part. */
	assert_int_equal(dump_in_parts(s, 0, &whole), dump_pieces(s));
	assert_int_equal(dump_in_parts(s, 1, &whole), dump_pieces(s));
	size_t n64 = dump_in_parts(s, 64, &whole);
	assert_true(n64 > 1 && n64 < dump_pieces(s));
	assert_int_equal(dump_in_parts(s, 4096, &whole), 1);
	assert_int_equal(dump_in_parts(s, SIZE_MAX, &whole), 1);
	/* The budget counts what @b holds: appending to one buffer, 64 bytes more each call. */
	struct kube_dump_cursor cur = {0};
	struct ng_buf all;
	ng_buf_init(&all, 1u << 20);
	bool done = false;
	while (!done)
		assert_int_equal(kube_snapshot_dump_json_part(s, &cur, &all, all.len + 64, &done),
				 NG_OK);
	assert_string_equal(all.data, expect);
	ng_buf_finish(&all);
	ng_buf_finish(&whole);
	kube_snapshot_release(s);
}

static void test_dump_parts_concatenate_to_the_whole_dump(void **state)
{
	check_dump_parts(dump_fixture, dump_fixture_json);
	check_dump_parts("{\"kind\":\"List\",\"items\":[]}", dump_empty_json);
}

static void test_dump_part_over_the_buffer_cap_keeps_its_place(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(dump_fixture);
	struct kube_dump_cursor cur = {0};
	bool done = true;
	/* A piece that can never fit: nothing written, the cursor stays at the start. */
	struct ng_buf tiny;
	ng_buf_init(&tiny, 8);
	assert_int_equal(kube_snapshot_dump_json_part(s, &cur, &tiny, SIZE_MAX, &done), NG_ELIMIT);
	assert_false(done);
	assert_int_equal(tiny.len, 0);
	struct kube_dump_cursor zero = {0};
	assert_true(same_cursor(&cur, &zero));
	ng_buf_finish(&tiny);
	/* A buffer that fills mid-dump holds whole pieces only; emptied, the call carries on. */
	struct ng_buf part, all;
	ng_buf_init(&part, 512);
	ng_buf_init(&all, 1u << 20);
	size_t fills = 0;
	for (done = false; !done;) {
		ng_status st = kube_snapshot_dump_json_part(s, &cur, &part, SIZE_MAX, &done);
		assert_true(st == NG_OK || (st == NG_ELIMIT && !done && part.len > 0));
		fills += st == NG_ELIMIT;
		assert_int_equal(ng_buf_append(&all, part.data, part.len), NG_OK);
		ng_buf_reset(&part);
	}
	assert_true(fills >= 3);
	assert_string_equal(all.data, dump_fixture_json);
	ng_buf_finish(&part);
	ng_buf_finish(&all);
	/* A cursor no call made is refused. */
	struct kube_dump_cursor bad = {.section = 99, .stage = 2};
	assert_int_equal(kube_snapshot_dump_json_part(s, &bad, &part, 1, &done), NG_EINVAL);
	bad = (struct kube_dump_cursor){.stage = 7};
	assert_int_equal(kube_snapshot_dump_json_part(s, &bad, &part, 1, &done), NG_EINVAL);
	assert_false(done);
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
	    cmocka_unit_test(test_pod_flags_claims_and_requests),
	    cmocka_unit_test(test_empty_labels_object),
	    cmocka_unit_test(test_granted_nodes_map_to_their_request),
	    cmocka_unit_test(test_label_selector_json_validation),
	    cmocka_unit_test(test_invalid_budget_is_kept_and_marked),
	    cmocka_unit_test(test_store_publish_while_readers_acquire),
	    cmocka_unit_test(test_load_files_reports_path),
	    cmocka_unit_test(test_cache_publishes_changes_and_shares_unchanged_tables),
	    cmocka_unit_test(test_nodes_by_label_and_nodegateconfig),
	    cmocka_unit_test(test_node_drain_note),
	    cmocka_unit_test(test_cache_later_change_in_a_batch_wins),
	    cmocka_unit_test(test_cache_reset_replaces_and_discard_restores),
	    cmocka_unit_test(test_cache_stage_replaces_a_resource_in_one_step),
	    cmocka_unit_test(test_store_stress_live_cache_writer_and_readers),
	    cmocka_unit_test(test_nd_drain_operation_requestors_and_creator),
	    cmocka_unit_test(test_nd_malformed_drain_fields_name_the_field),
	    cmocka_unit_test(test_operation_privileged_fields),
	    cmocka_unit_test(test_authors_of_templates_and_remediations),
	    cmocka_unit_test(test_kube_one_entry_points),
	    cmocka_unit_test(test_ngc_selector_over_limit_is_invalid),
	    cmocka_unit_test(test_dump_parts_concatenate_to_the_whole_dump),
	    cmocka_unit_test(test_dump_part_over_the_buffer_cap_keeps_its_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
