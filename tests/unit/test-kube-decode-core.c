/* kube/decode_core.c: nodes, pods and their labels, claims, requests and drain notes. */
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
	assert_string_equal(a->rv_decoded, "7");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_flags_claims_and_requests),
	    cmocka_unit_test(test_empty_labels_object),
	    cmocka_unit_test(test_node_drain_note),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
