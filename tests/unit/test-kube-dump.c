/* kube/dump.c: the /debug/cache dump, whole and in parts. */
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
    "tiontemplates\":[],\"noderemediations\":[],\"poddisruptionbudgets\":[],\"machines\":[],"
    "\"leases\":[]}\n";

static const char dump_empty_json[] =
    "{\"generation\":1,\"nodes\":[],\"pods\":[],\"persistentvolumeclaims\":[],"
    "\"persistentvolumes\":[],\"nodedisruptions\":[],\"applicationdisruptionbudgets\":[],"
    "\"nodedisruptionbudgets\":[],\"nodegateconfigs\":[],\"nodedisruptiontemplates\":[],"
    "\"noderemediations\":[],\"poddisruptionbudgets\":[],\"machines\":[],\"leases\":[]}\n";

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
	    cmocka_unit_test(test_dump_parts_concatenate_to_the_whole_dump),
	    cmocka_unit_test(test_dump_part_over_the_buffer_cap_keeps_its_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
