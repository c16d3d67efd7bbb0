/* kube/cache.c: the live cache, its incremental changes, stages and publishing. */
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
	ng_test_cache_put(c, POD_ON("a", "n1", "db"), false);
	ng_test_cache_put(c, POD_ON("b", "n1", "web"), false);
	ng_test_cache_put(c, NODE_NAMED("n1"), false);
	assert_true(kube_cache_dirty(c));
	struct kube_snapshot *s1 = publish(c);
	assert_false(kube_cache_dirty(c));
	assert_int_equal(kube_snapshot_count(s1, KUBE_RES_PODS), 2);
	assert_int_equal(kube_snapshot_generation(s1), 1);
	/* A pod moves, one is deleted, one is added; nodes do not change. */
	ng_test_cache_put(c, POD_ON("a", "n2", "db"), false);
	ng_test_cache_put(c, POD_ON("b", "n1", "web"), true);
	ng_test_cache_put(c, POD_ON("c", "n2", "db"), false);
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
	ng_test_cache_put(c, POD_ON("a", "n1", "db"), false);
	ng_test_cache_put(c, POD_ON("a", "n2", "db"), false);
	ng_test_cache_put(c, POD_ON("a", "n3", "db"), false);
	ng_test_cache_put(c, POD_ON("gone", "n3", "db"), false);
	ng_test_cache_put(c, POD_ON("gone", "n3", "db"), true);
	struct kube_snapshot *s = publish(c);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	assert_int_equal(kube_snapshot_find_pod_str(s, "d", 1, "a", 1)->node, ng_test_id(s, "n3"));
	/* Deleting what never existed is harmless. */
	ng_test_cache_put(c, POD_ON("never", "n3", "db"), true);
	kube_snapshot_release(s);
	s = publish(c);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_PODS), 1);
	kube_snapshot_release(s);
	kube_cache_destroy(c);
}

static void test_cache_reset_replaces_and_discard_restores(void **state)
{
	struct kube_cache *c = kube_cache_create();
	ng_test_cache_put(c, POD_ON("a", "n1", "db"), false);
	ng_test_cache_put(c, POD_ON("b", "n1", "db"), false);
	struct kube_snapshot *s1 = publish(c);
	/* A relist that fails half-way changes nothing. */
	kube_cache_reset(c, KUBE_RES_PODS);
	ng_test_cache_put(c, POD_ON("x", "n9", "db"), false);
	kube_cache_discard(c, KUBE_RES_PODS);
	assert_false(kube_cache_dirty(c));
	/* A relist that completes replaces everything. */
	kube_cache_reset(c, KUBE_RES_PODS);
	ng_test_cache_put(c, POD_ON("b", "n2", "db"), false);
	ng_test_cache_put(c, POD_ON("c", "n2", "db"), false);
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
	ng_test_cache_put(c, POD_ON("a", "n1", "db"), false);
	ng_test_cache_put(c, POD_ON("b", "n1", "db"), false);
	struct kube_snapshot *s1 = publish(c);
	/* A list in progress: the changes of other resources still publish, without it. */
	struct kube_stage *st = kube_stage_create(c, KUBE_RES_PODS);
	stage(c, st, POD_ON("b", "n2", "db"));
	stage(c, st, POD_ON("c", "n2", "db"));
	stage(c, st, POD_ON("b", "n3", "db")); /* listed twice: the later one wins */
	assert_int_equal(kube_stage_count(st), 2);
	ng_test_cache_put(c, POD_ON("x", "n9", "db"),
			  false); /* a pod change before the list ends */
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
	ng_test_cache_put(c, POD_ON("c", "n1", "db"), true);
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
			ng_test_cache_put(c, json, rand_r(&seed) % 4 == 0);
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

/* A snapshot carries, per kind, the resourceVersion its table reflects: what was noted for the
 * kinds it published, what the last publish of the others had. A new leader waits on it. */
static void test_cache_snapshot_carries_each_kinds_resource_version(void **state)
{
	(void)state;
	assert_int_equal(kube_rv_number("184467"), 184467);
	assert_int_equal(kube_rv_number("18446744073709551615"), UINT64_MAX);
	assert_int_equal(kube_rv_number("18446744073709551616"), 0); /* does not fit */
	assert_int_equal(kube_rv_number(""), 0);
	assert_int_equal(kube_rv_number(NULL), 0);
	assert_int_equal(kube_rv_number("12a"), 0);
	assert_int_equal(kube_rv_number("-1"), 0);
	struct kube_cache *c = kube_cache_create();
	struct kube_snapshot *s = publish(c);
	assert_int_equal(kube_snapshot_rv(s, KUBE_RES_NODES), 0); /* nothing noted: unknown */
	kube_snapshot_release(s);
	ng_test_cache_put(c, NODE_NAMED("n1"), false);
	kube_cache_note_rv(c, KUBE_RES_NODES, "41");
	kube_cache_note_rv(c, KUBE_RES_PODS, "40");
	/* Published: only the pods. The nodes' version waits for their changes. */
	assert_int_equal(kube_cache_publish_some(c, 1u << KUBE_RES_PODS, &s), NG_OK);
	assert_int_equal(kube_snapshot_rv(s, KUBE_RES_PODS), 40);
	assert_int_equal(kube_snapshot_rv(s, KUBE_RES_NODES), 0);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 0);
	kube_snapshot_release(s);
	s = publish(c);
	assert_int_equal(kube_snapshot_rv(s, KUBE_RES_NODES), 41);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 1);
	kube_snapshot_release(s);
	/* A bookmark moves the version without a change. */
	kube_cache_note_rv(c, KUBE_RES_NODES, "57");
	s = publish(c);
	assert_int_equal(kube_snapshot_rv(s, KUBE_RES_NODES), 57);
	kube_snapshot_release(s);
	kube_cache_destroy(c);
}

#define NODE_AT(name, rv, pool, ready)                                                             \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"resourceVersion\":\"" rv "\",\"labels\":{\"pool\":\"" pool "\"}},\"status\":{"       \
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\",\"lastHeartbeatTime\":"      \
	"\"2026-11-29T10:00:" rv "Z\"}]}}"

/* The position of node @name in @s's node table. */
static size_t node_pos(const struct kube_snapshot *s, const char *name)
{
	size_t n;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &n);
	const struct kube_node *k = kube_snapshot_find_node(s, ng_test_id(s, name));
	assert_non_null(k);
	assert_true((size_t)(k - nodes) < n);
	return (size_t)(k - nodes);
}

static const char *node_rv(const struct kube_snapshot *s, const char *name)
{
	const struct kube_node *k = kube_snapshot_find_node(s, ng_test_id(s, name));
	assert_non_null(k);
	return kube_snapshot_node_rv(s, k);
}

/* Node n<i> of pool p<i % 4> at version @rv, Ready or not, with a do-not-disrupt annotation
 * when @dnd. */
static void put_node(struct kube_cache *c, int i, int rv, bool ready, bool dnd, bool del)
{
	char json[512];
	(void)snprintf(json, sizeof(json),
		       "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n%d\","
		       "\"resourceVersion\":\"%d\",\"labels\":{\"pool\":\"p%d\"}%s},"
		       "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\","
		       "\"lastHeartbeatTime\":\"2026-11-29T10:%02d:00Z\"}]}}",
		       i, rv, i % 4,
		       dnd ? ",\"annotations\":{\"nodegate.io/do-not-disrupt\":\"true\"}" : "",
		       ready ? "True" : "False", rv % 60);
	ng_test_cache_put(c, json, del);
}

/* Heartbeats that change nothing but the version (at 100,000 nodes, hundreds a second) are
 * published as patches over the node table, not copies of it: every snapshot answers each
 * node's version as of its publish, records and indexes are shared, and snapshots outlive
 * one another in any order. Past a sixteenth of the table the patches are folded into a
 * table of its own; an update that changes anything else (Ready, an annotation nodegate
 * reads, a label), a node added or deleted is a table of its own as before, with the versions
 * the patches had. */
static void test_cache_node_versions_are_patches_over_a_shared_table(void **state)
{
	struct kube_cache *c = kube_cache_create();
	for (int i = 0; i < 64; i++)
		put_node(c, i, 100 + i, true, false, false);
	struct kube_snapshot *s1 = publish(c);
	size_t n1, n2;
	const struct kube_node *r1 = kube_snapshot_nodes(s1, &n1);
	put_node(c, 1, 201, true, false, false);
	put_node(c, 3, 203, true, false, false);
	struct kube_snapshot *s2 = publish(c);
	const struct kube_node *r2 = kube_snapshot_nodes(s2, &n2);
	assert_ptr_equal(r1, r2); /* shared, not copied */
	assert_int_equal(n2, 64);
	assert_int_not_equal(kube_snapshot_table_serial(s1, KUBE_RES_NODES),
			     kube_snapshot_table_serial(s2, KUBE_RES_NODES));
	assert_int_equal(kube_snapshot_table_shape(s1, KUBE_RES_NODES),
			 kube_snapshot_table_shape(s2, KUBE_RES_NODES));
	assert_string_equal(node_rv(s1, "n1"), "101");
	assert_string_equal(node_rv(s2, "n1"), "201");
	assert_string_equal(node_rv(s2, "n3"), "203");
	assert_string_equal(node_rv(s2, "n2"), "102");
	/* The first snapshot goes first: the second keeps the records it shares. */
	kube_snapshot_release(s1);
	put_node(c, 1, 301, true, false, false); /* supersedes its patch */
	struct kube_snapshot *s3 = publish(c);
	assert_string_equal(node_rv(s2, "n1"), "201");
	assert_string_equal(node_rv(s3, "n1"), "301");
	assert_string_equal(node_rv(s3, "n3"), "203");
	size_t np;
	(void)kube_snapshot_nodes_with_label(s3, ng_test_id(s3, "pool"), ng_test_id(s3, "p1"), &np);
	assert_int_equal(np, 16);
	kube_snapshot_release(s2);
	/* More than 64 / 16 patches: a table of its own, every version kept. */
	for (int i = 10; i < 14; i++)
		put_node(c, i, 400 + i, true, false, false);
	struct kube_snapshot *s4 = publish(c);
	assert_ptr_not_equal(kube_snapshot_nodes(s4, &n2), kube_snapshot_nodes(s3, &n1));
	assert_int_equal(kube_snapshot_table_shape(s3, KUBE_RES_NODES),
			 kube_snapshot_table_shape(s4, KUBE_RES_NODES));
	assert_string_equal(node_rv(s4, "n1"), "301");
	assert_string_equal(node_rv(s4, "n3"), "203");
	assert_string_equal(node_rv(s4, "n13"), "413");
	assert_string_equal(node_rv(s4, "n14"), "114");
	/* Patches again, then changes that are more than a version. */
	put_node(c, 5, 505, true, false, false);
	struct kube_snapshot *s5 = publish(c);
	assert_ptr_equal(kube_snapshot_nodes(s4, &n1), kube_snapshot_nodes(s5, &n2));
	put_node(c, 6, 506, false, false, false);
	put_node(c, 7, 507, true, true, false);
	struct kube_snapshot *s6 = publish(c);
	const struct kube_node *k6 = kube_snapshot_find_node(s6, ng_test_id(s6, "n6"));
	const struct kube_node *k7 = kube_snapshot_find_node(s6, ng_test_id(s6, "n7"));
	assert_false(k6->flags & KUBE_NODE_READY);
	assert_true(k7->dnd_until_ms == KUBE_DND_ALWAYS);
	assert_string_equal(node_rv(s6, "n5"), "505");
	assert_string_equal(node_rv(s6, "n6"), "506");
	assert_string_equal(node_rv(s6, "n7"), "507");
	put_node(c, 8, 508, true, false, false);
	struct kube_snapshot *s7 = publish(c);
	put_node(c, 9, 509, true, false, true); /* deleted while n8 is a patch */
	put_node(c, 64, 564, true, false, false);
	struct kube_snapshot *s8 = publish(c);
	assert_int_equal(kube_snapshot_count(s8, KUBE_RES_NODES), 64);
	assert_null(kube_snapshot_find_node(s8, ng_test_id(s8, "n9")));
	assert_string_equal(node_rv(s8, "n8"), "508");
	assert_string_equal(node_rv(s8, "n64"), "564");
	assert_string_equal(node_rv(s7, "n8"), "508");
	assert_string_equal(node_rv(s7, "n9"), "109");
	/* A relist while patched. */
	put_node(c, 20, 620, true, false, false);
	struct kube_snapshot *s9 = publish(c);
	kube_cache_reset(c, KUBE_RES_NODES);
	put_node(c, 20, 621, true, false, false);
	struct kube_snapshot *s10 = publish(c);
	assert_int_equal(kube_snapshot_count(s10, KUBE_RES_NODES), 1);
	assert_string_equal(node_rv(s10, "n20"), "621");
	assert_string_equal(node_rv(s9, "n20"), "620");
	struct kube_snapshot *all[] = {s3, s4, s5, s6, s7, s8, s9, s10};
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
		kube_snapshot_release(all[i]);
	/* Destroyed with a patched table current. */
	put_node(c, 30, 630, true, false, false);
	for (int i = 0; i < 40; i++)
		put_node(c, 30 + i, 700 + i, true, false, false);
	kube_snapshot_release(publish(c));
	put_node(c, 31, 800, true, false, false);
	kube_snapshot_release(publish(c));
	kube_cache_destroy(c);
}

/* A kubelet's status heartbeat (a new resourceVersion and condition time) keeps the node in
 * its place and the table's shape: what the gate keeps of its budget pools stays valid. A
 * label, a state change, a node added or removed gives a new shape. */
static void test_cache_node_heartbeat_keeps_position_and_shape(void **state)
{
	struct kube_cache *c = kube_cache_create();
	ng_test_cache_put(c, NODE_AT("n1", "10", "a", "True"), false);
	ng_test_cache_put(c, NODE_AT("n2", "11", "a", "True"), false);
	ng_test_cache_put(c, NODE_AT("n3", "12", "b", "True"), false);
	struct kube_snapshot *s1 = publish(c);
	size_t p1 = node_pos(s1, "n1");
	ng_test_cache_put(c, NODE_AT("n1", "20", "a", "True"), false); /* heartbeats */
	ng_test_cache_put(c, NODE_AT("n3", "21", "b", "True"), false);
	struct kube_snapshot *s2 = publish(c);
	assert_int_not_equal(kube_snapshot_table_serial(s1, KUBE_RES_NODES),
			     kube_snapshot_table_serial(s2, KUBE_RES_NODES));
	assert_int_equal(kube_snapshot_table_shape(s1, KUBE_RES_NODES),
			 kube_snapshot_table_shape(s2, KUBE_RES_NODES));
	assert_int_equal(node_pos(s2, "n1"), p1);
	/* Its indexes are copies of the old table's: they answer after that one is gone. */
	kube_snapshot_release(s1);
	assert_string_equal(node_rv(s2, "n1"), "20");
	assert_string_equal(node_rv(s2, "n3"), "21");
	size_t na, nb;
	const uint32_t *in_a =
	    kube_snapshot_nodes_with_label(s2, ng_test_id(s2, "pool"), ng_test_id(s2, "a"), &na);
	(void)kube_snapshot_nodes_with_label(s2, ng_test_id(s2, "pool"), ng_test_id(s2, "b"), &nb);
	assert_int_equal(na, 2);
	assert_int_equal(nb, 1);
	assert_true(in_a[0] == p1 || in_a[1] == p1);
	/* NotReady: the same place, another shape. */
	ng_test_cache_put(c, NODE_AT("n2", "22", "a", "False"), false);
	struct kube_snapshot *s3 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s2, KUBE_RES_NODES),
			     kube_snapshot_table_shape(s3, KUBE_RES_NODES));
	/* A label changes; then a node comes; then one goes. */
	ng_test_cache_put(c, NODE_AT("n2", "23", "b", "False"), false);
	struct kube_snapshot *s4 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s3, KUBE_RES_NODES),
			     kube_snapshot_table_shape(s4, KUBE_RES_NODES));
	ng_test_cache_put(c, NODE_AT("n4", "24", "b", "True"), false);
	struct kube_snapshot *s5 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s4, KUBE_RES_NODES),
			     kube_snapshot_table_shape(s5, KUBE_RES_NODES));
	ng_test_cache_put(c, NODE_AT("n1", "25", "a", "True"), true);
	struct kube_snapshot *s6 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s5, KUBE_RES_NODES),
			     kube_snapshot_table_shape(s6, KUBE_RES_NODES));
	assert_int_equal(kube_snapshot_count(s6, KUBE_RES_NODES), 3);
	assert_null(kube_snapshot_find_node(s6, ng_test_id(s6, "n1")));
	/* A relist builds a new table: a new shape even with the same nodes. */
	kube_cache_reset(c, KUBE_RES_NODES);
	ng_test_cache_put(c, NODE_AT("n2", "23", "b", "False"), false);
	ng_test_cache_put(c, NODE_AT("n3", "21", "b", "True"), false);
	ng_test_cache_put(c, NODE_AT("n4", "24", "b", "True"), false);
	struct kube_snapshot *s7 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s6, KUBE_RES_NODES),
			     kube_snapshot_table_shape(s7, KUBE_RES_NODES));
	struct kube_snapshot *all[] = {s2, s3, s4, s5, s6, s7};
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
		kube_snapshot_release(all[i]);
	kube_cache_destroy(c);
}

#define NDB_SEL(name, pool, max, rv)                                                               \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":" \
	"{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"},\"spec\":{\"nodeSelector\":{"      \
	"\"matchLabels\":{\"pool\":\"" pool "\"}},\"maxDisruptedNodes\":" max "}}"

/* A budget's status write or new limit keeps the budget table's shape (the gate's pools stay);
 * another selector, a budget added or removed gives a new one. */
static void test_cache_budget_status_keeps_shape(void **state)
{
	struct kube_cache *c = kube_cache_create();
	ng_test_cache_put(c, NDB_SEL("x", "a", "1", "1"), false);
	ng_test_cache_put(c, NDB_SEL("y", "b", "1", "2"), false);
	struct kube_snapshot *s1 = publish(c);
	ng_test_cache_put(c, NDB_SEL("x", "a", "3", "3"), false);
	struct kube_snapshot *s2 = publish(c);
	assert_int_not_equal(kube_snapshot_table_serial(s1, KUBE_RES_NDBS),
			     kube_snapshot_table_serial(s2, KUBE_RES_NDBS));
	assert_int_equal(kube_snapshot_table_shape(s1, KUBE_RES_NDBS),
			 kube_snapshot_table_shape(s2, KUBE_RES_NDBS));
	size_t n1, n2;
	const struct kube_ndb *b1 = kube_snapshot_ndbs(s1, &n1), *b2 = kube_snapshot_ndbs(s2, &n2);
	assert_int_equal(n2, 2);
	assert_int_equal(b1[0].b.name, b2[0].b.name); /* in its place */
	ng_test_cache_put(c, NDB_SEL("x", "c", "3", "4"), false);
	struct kube_snapshot *s3 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s2, KUBE_RES_NDBS),
			     kube_snapshot_table_shape(s3, KUBE_RES_NDBS));
	ng_test_cache_put(c, NDB_SEL("z", "c", "3", "5"), false);
	struct kube_snapshot *s4 = publish(c);
	assert_int_not_equal(kube_snapshot_table_shape(s3, KUBE_RES_NDBS),
			     kube_snapshot_table_shape(s4, KUBE_RES_NDBS));
	struct kube_snapshot *all[] = {s1, s2, s3, s4};
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
		kube_snapshot_release(all[i]);
	kube_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cache_publishes_changes_and_shares_unchanged_tables),
	    cmocka_unit_test(test_cache_later_change_in_a_batch_wins),
	    cmocka_unit_test(test_cache_reset_replaces_and_discard_restores),
	    cmocka_unit_test(test_cache_stage_replaces_a_resource_in_one_step),
	    cmocka_unit_test(test_store_stress_live_cache_writer_and_readers),
	    cmocka_unit_test(test_cache_snapshot_carries_each_kinds_resource_version),
	    cmocka_unit_test(test_cache_node_heartbeat_keeps_position_and_shape),
	    cmocka_unit_test(test_cache_node_versions_are_patches_over_a_shared_table),
	    cmocka_unit_test(test_cache_budget_status_keeps_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
