/* kube/: the cache's string pool stays bounded while label values churn, keeps the ids of the
 * strings still in use, and kube_record_ids() visits every id a decoded object holds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/yaml.h"
#include "kube/internal.h"
#include "tests/support/support.h"

#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void decode(struct kube_cache *c, const char *json, struct kube_object *ret)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(json, strlen(json), a, &root, &err), NG_OK);
	assert_int_equal(
	    kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), root, "test", ret, &err),
	    NG_OK);
	ng_arena_destroy(a);
}

static void pod(struct kube_cache *c, unsigned i, bool del)
{
	char json[512];
	(void)snprintf(json, sizeof(json),
		       "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p%u\","
		       "\"namespace\":\"d\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":"
		       "\"h%u\"}},\"spec\":{\"nodeName\":\"n%u\"}}",
		       i, i, i % 7);
	struct kube_object obj;
	decode(c, json, &obj);
	assert_int_equal(del ? kube_cache_delete(c, &obj) : kube_cache_upsert(c, &obj), NG_OK);
}

static const char LONG_LIVED[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"keeper\","
    "\"namespace\":\"d\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"forever\"}},"
    "\"spec\":{\"nodeName\":\"n0\"}}";

/* The pool on its own: a successor keeps ids, gives new ones past every old one, and each pool
 * answers "" for what it does not hold. */
static void test_successor_keeps_ids_and_never_reuses_them(void **state)
{
	struct ng_intern *a = ng_intern_create();
	uint32_t x, y, z;
	assert_int_equal(ng_intern_add(a, "x", 1, &x), NG_OK);
	assert_int_equal(ng_intern_add(a, "y", 1, &y), NG_OK);
	assert_int_equal(ng_intern_add(a, "z", 1, &z), NG_OK);
	struct ng_intern *b = ng_intern_successor(a);
	assert_int_equal(ng_intern_keep(b, a, z), NG_OK);
	assert_int_equal(ng_intern_keep(b, a, z), NG_OK);
	assert_int_equal(ng_intern_keep(b, a, NG_INTERN_NONE), NG_OK);
	assert_int_equal(ng_intern_keep(b, a, 12345), NG_EINVAL);
	assert_int_equal(ng_intern_count(b), 1);
	assert_string_equal(ng_intern_str(b, z, NULL), "z");
	assert_int_equal(ng_intern_find(b, "z", 1), z);
	assert_string_equal(ng_intern_str(b, x, NULL), "");
	assert_false(ng_intern_has(b, x));
	assert_int_equal(ng_intern_find(b, "x", 1), NG_INTERN_NONE);
	/* "x" comes back: a new id, never the old one. */
	uint32_t x2, w;
	assert_int_equal(ng_intern_add(b, "x", 1, &x2), NG_OK);
	assert_true(x2 > z && x2 != x);
	assert_int_equal(ng_intern_keep(b, a, y), NG_EINVAL); /* added already */
	assert_int_equal(ng_intern_add(b, "w", 1, &w), NG_OK);
	assert_int_equal(w, x2 + 1);
	assert_int_equal(ng_intern_next_id(b), w + 1);
	assert_int_equal(ng_intern_rebuilds(b), 1);
	/* The predecessor reads as it was and knows nothing of the new ids. */
	assert_string_equal(ng_intern_str(a, x, NULL), "x");
	assert_string_equal(ng_intern_str(a, x2, NULL), "");
	/* A third pool keeps from the second, carried and added ids alike. */
	struct ng_intern *c = ng_intern_successor(b);
	assert_int_equal(ng_intern_keep(c, b, z), NG_OK);
	assert_int_equal(ng_intern_keep(c, b, w), NG_OK);
	assert_int_equal(ng_intern_keep(c, b, x), NG_ENOTFOUND);
	assert_string_equal(ng_intern_str(c, z, NULL), "z");
	assert_string_equal(ng_intern_str(c, w, NULL), "w");
	assert_string_equal(ng_intern_str(c, x2, NULL), "");
	uint32_t v;
	assert_int_equal(ng_intern_add(c, "v", 1, &v), NG_OK);
	assert_int_equal(v, w + 1);
	/* Many carried ids: the id table grows. */
	struct ng_intern *big = ng_intern_create();
	for (unsigned i = 0; i < 5000; i++) {
		char s[16];
		int n = snprintf(s, sizeof(s), "s%u", i);
		uint32_t id;
		assert_int_equal(ng_intern_add(big, s, (size_t)n, &id), NG_OK);
	}
	struct ng_intern *big2 = ng_intern_successor(big);
	for (uint32_t id = 0; id < 5000; id += 2)
		assert_int_equal(ng_intern_keep(big2, big, id), NG_OK);
	for (uint32_t id = 0; id < 5000; id++) {
		char s[16];
		(void)snprintf(s, sizeof(s), "s%u", id);
		assert_string_equal(ng_intern_str(big2, id, NULL), id % 2 ? "" : s);
		assert_int_equal(ng_intern_find(big2, s, strlen(s)), id % 2 ? NG_INTERN_NONE : id);
	}
	ng_intern_destroy(big2);
	ng_intern_destroy(big);
	ng_intern_destroy(c);
	ng_intern_destroy(b);
	ng_intern_destroy(a);
}

#define CHURN 100000u /* pods, each with a label value of its own */
#define ALIVE 40u     /* pods alive at a time */

/* 100,000 pods come and go, each with a pod-template-hash of its own, published in batches as
 * the watch does, beside one pod that stays and a list in progress. */
static void test_churned_label_values_do_not_grow_the_pool(void **state)
{
	struct kube_cache *c = kube_cache_create();
	kube_cache_set_intern_min(c, 1024);
	struct kube_object keep;
	decode(c, LONG_LIVED, &keep);
	uint32_t forever = keep.rec.pod.labels[1].val, ns = keep.rec.pod.ns;
	assert_int_equal(kube_cache_upsert(c, &keep), NG_OK);
	/* A list staged for the whole run: its strings must survive every rebuild. */
	struct kube_stage *stage = kube_stage_create(c, KUBE_RES_NODES);
	struct kube_object node;
	decode(c,
	       "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"staged\","
	       "\"labels\":{\"zone\":\"z-staged\"}}}",
	       &node);
	uint32_t staged = node.rec.node.labels[0].val;
	assert_int_equal(kube_stage_add(stage, &node), NG_OK);
	struct kube_snapshot *first = NULL;
	assert_int_equal(kube_cache_publish(c, &first), NG_OK);
	uint32_t max_count = 0;
	size_t max_bytes = 0;
	for (unsigned i = 0; i < CHURN; i++) {
		pod(c, i, false);
		if (i >= ALIVE)
			pod(c, i - ALIVE, true);
		if (i % 16 == 15) {
			struct kube_snapshot *s = NULL;
			assert_int_equal(kube_cache_publish(c, &s), NG_OK);
			const struct ng_intern *p = kube_snapshot_pool(s);
			if (ng_intern_count(p) > max_count)
				max_count = ng_intern_count(p);
			if (ng_intern_bytes(p) > max_bytes)
				max_bytes = ng_intern_bytes(p);
			/* Every id the snapshot holds resolves in its pool. */
			size_t n;
			const struct kube_pod *pods = kube_snapshot_pods(s, &n);
			for (size_t k = 0; k < n; k++)
				for (size_t l = 0; l < pods[k].nlabels; l++)
					assert_true(ng_intern_has(p, pods[k].labels[l].val));
			assert_string_equal(ng_intern_str(p, forever, NULL), "forever");
			assert_string_equal(ng_intern_str(p, staged, NULL), "z-staged");
			assert_int_equal(ng_intern_find(p, "forever", 7), forever);
			assert_int_equal(ng_intern_find(p, "d", 1), ns);
			kube_snapshot_release(s);
		}
	}
	struct kube_snapshot *last = NULL;
	assert_int_equal(kube_cache_publish(c, &last), NG_OK);
	const struct ng_intern *p = kube_snapshot_pool(last);
	print_message("# pool: %u strings at most, %zu bytes at most, %u rebuilds, next id %u\n",
		      max_count, max_bytes, ng_intern_rebuilds(p), ng_intern_next_id(p));
	assert_true(max_count < 3000);
	assert_true(max_bytes < 4u << 20);
	assert_true(ng_intern_rebuilds(p) > 50);
	assert_true(ng_intern_next_id(p) > CHURN);
	/* The first snapshot still reads its own pool, which the writer left long ago. */
	const struct kube_pod *k0 = kube_snapshot_find_pod_str(first, "d", 1, "keeper", 6);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(first), k0->labels[1].val, NULL),
			    "forever");
	const struct kube_pod *k1 = kube_snapshot_find_pod_str(last, "d", 1, "keeper", 6);
	assert_int_equal(k1->labels[1].val, k0->labels[1].val);
	/* An id of a pod long gone is "" in the new pool, and its string is unknown there. */
	assert_int_equal(ng_intern_find(p, "h5", 2), NG_INTERN_NONE);
	/* The staged node lands with its strings. */
	assert_int_equal(kube_cache_replace(c, stage), NG_OK);
	kube_stage_destroy(stage);
	struct kube_snapshot *s = NULL;
	assert_int_equal(kube_cache_publish_some(c, 0, &s), NG_OK);
	const struct kube_node *nr = kube_snapshot_find_node(s, ng_test_id(s, "staged"));
	assert_non_null(nr);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(s), nr->labels[0].val, NULL),
			    "z-staged");
	kube_snapshot_release(s);
	kube_snapshot_release(last);
	kube_snapshot_release(first);
	kube_cache_destroy(c);
}

/* ---- a reader resolving ids while the writer rebuilds ---- */

struct race {
	struct kube_store *store;
	_Atomic bool done;
	_Atomic unsigned checked;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->done)) {
		struct kube_snapshot *s = kube_store_acquire(r->store);
		const struct ng_intern *p = kube_snapshot_pool(s);
		size_t n;
		const struct kube_pod *pods = kube_snapshot_pods(s, &n);
		for (size_t i = 0; i < n; i++) {
			/* Pod p<i> carries pod-template-hash h<i>: the id must give that string. */
			char want[16];
			(void)snprintf(want, sizeof(want), "h%s", pods[i].name + 1);
			bool seen = false;
			for (size_t l = 0; l < pods[i].nlabels; l++) {
				const char *v = ng_intern_str(p, pods[i].labels[l].val, NULL);
				if (strcmp(v, want) == 0)
					seen = true;
				if (v[0] == '\0')
					fail_msg("an id of the snapshot does not resolve");
			}
			if (!seen)
				fail_msg("pod %s lost its label value", pods[i].name);
			if (ng_intern_find(p, want, strlen(want)) == NG_INTERN_NONE)
				fail_msg("%s not found", want);
		}
		atomic_fetch_add(&r->checked, 1);
		kube_snapshot_release(s);
	}
	return NULL;
}

static void test_readers_resolve_ids_while_the_pool_is_rebuilt(void **state)
{
	struct race r = {.store = kube_store_create()};
	struct kube_cache *c = kube_cache_create();
	kube_cache_set_intern_min(c, 256);
	struct kube_snapshot *s0 = NULL;
	assert_int_equal(kube_cache_publish(c, &s0), NG_OK);
	kube_store_publish(r.store, s0);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race_reader, &r), 0);
	for (unsigned i = 0; i < 20000; i++) {
		pod(c, i, false);
		if (i >= ALIVE)
			pod(c, i - ALIVE, true);
		if (i % 8 == 7) {
			struct kube_snapshot *s = NULL;
			assert_int_equal(kube_cache_publish(c, &s), NG_OK);
			kube_store_publish(r.store, s);
		}
	}
	atomic_store(&r.done, true);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	struct kube_snapshot *s = kube_store_acquire(r.store);
	assert_true(ng_intern_rebuilds(kube_snapshot_pool(s)) > 10);
	kube_snapshot_release(s);
	assert_true(atomic_load(&r.checked) > 0);
	kube_store_destroy(r.store);
	kube_cache_destroy(c);
}

/* ---- every id a decoded object holds is visited ---- */

struct seen {
	uint8_t *bits;
	uint32_t n;
};

static void mark(void *ctx, uint32_t id)
{
	struct seen *s = ctx;
	if (id != NG_INTERN_NONE) {
		assert_true(id < s->n);
		s->bits[id / 8] |= (uint8_t)(1u << (id % 8));
	}
}

static size_t objects, kinds_seen[KUBE_RES_COUNT];

/* What the repository's fixtures leave out, each string distinct so that no other field can
 * stand in for a missed one. */
static const char EXTRA[] =
    "{\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x-node\","
    "\"annotations\":{\"nodegate.io/drain\":\"{\\\"wasUnschedulable\\\":false,\\\"holders\\\":"
    "[\\\"x-holder\\\"],\\\"bootID\\\":\\\"b\\\",\\\"taints\\\":[{\\\"key\\\":\\\"x-note-taint\\\","
    "\\\"effect\\\":\\\"NoExecute\\\"}],\\\"protected\\\":[{\\\"key\\\":"
    "\\\"karpenter.sh/do-not-disrupt\\\",\\\"was\\\":\\\"x-was\\\"}]}\","
    "\"cluster-autoscaler.kubernetes.io/scale-down-disabled\":\"x-protect\"}},"
    "\"spec\":{\"taints\":[{\"key\":\"x-taint\",\"value\":\"x-taint-value\","
    "\"effect\":\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":\"x-condition\","
    "\"status\":\"True\"}]}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x-pod\","
    "\"namespace\":\"x-pod-ns\",\"finalizers\":[\"x-pod-fin\",\"x-other\"]}},"
    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-ndt\"},\"spec\":{\"type\":\"x-ndt-type\",\"requestor\":"
    "\"x-ndt-requestor\",\"drain\":{\"evictionStrategy\":\"Sideways\"}}},"
    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-ndt-rules\"},\"spec\":{\"drain\":{\"taint\":{\"key\":"
    "\"x-ndt-taint\",\"effect\":\"NoSchedule\"},\"rules\":[{\"podSelector\":{"
    "\"matchLabels\":{\"x-ndt-rule-key\":\"x-ndt-rule-value\"}},\"behavior\":\"Skip\"}]}}},"
    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"x-nd-rules\"},\"spec\":{\"nodeNames\":[\"x-nd-rules-node\"],\"drain\":{"
    "\"rules\":[{\"podSelector\":{\"matchLabels\":{\"x-rule-pod\":\"x-rule-pod-value\"}},"
    "\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"x-rule-ns\",\"operator\":"
    "\"In\",\"values\":[\"x-rule-ns-value\"]}]},\"behavior\":\"Drain\",\"order\":3}]}}},"
    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"default\"},\"spec\":{\"drain\":{\"rules\":[{\"namespaceSelector\":{"
    "\"matchLabels\":{\"x-ngc-rule-ns\":\"x-ngc-rule-ns-value\"}},\"behavior\":"
    "\"WaitCompleted\"}]}}},"
    "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-nrem\",\"finalizers\":[\"x-fin\"]},\"spec\":{"
    "\"nodeSelector\":{\"matchLabels\":{\"x-pool\":\"x-pool-value\"}},\"rule\":{"
    "\"conditions\":[{\"type\":\"x-rule\",\"status\":\"True\"}]},\"templateName\":"
    "\"x-template\",\"maxConcurrent\":\"x-max\",\"stormGuard\":{\"maxUnhealthy\":"
    "\"x-storm\"}},\"status\":{\"lastRemediated\":[{\"node\":\"x-last-node\",\"time\":"
    "\"2026-01-01T00:00:00Z\",\"request\":\"x-last-request\"}]}},"
    "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-nrem-bad\"},\"spec\":{\"rule\":{}}},"
    "{\"kind\":\"PersistentVolume\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x-pv\"},"
    "\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
    "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"x-field-node\"]}]}]}}}},"
    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
    "\"name\":\"x-nd\",\"annotations\":{\"nodegate.io/created-by\":\"x-creator\","
    "\"nodegate.io/cluster-api-machine\":\"x-machine-ns/x-machine\"},"
    "\"labels\":{\"nodegate.io/remediation\":\"x-remediation\","
    "\"nodegate.io/cluster-api\":\"true\"}},"
    "\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"bad key!\":\"v\"}},"
    "\"additionalRequestors\":[\"x-more\"],\"startDate\":\"not a date\"},"
    "\"status\":{\"disruptedDisruptionBudgets\":[{\"reference\":{\"kind\":\"x-kind\","
    "\"namespace\":\"x-ns\",\"name\":\"x-budget\"},\"ok\":true}]}},"
    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-adb\",\"namespace\":\"x-adb-ns\"},\"spec\":{\"maxDisruptions\":"
    "\"37%\",\"podSelector\":{\"matchLabels\":{\"a\":\"b\"}},\"healthHook\":{\"url\":"
    "\"ftp://[bad\"}}},"
    "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
    "\"metadata\":{\"name\":\"x-ndb\"},\"spec\":{\"maxDisruptedNodes\":1,\"nodeSelector\":{},"
    "\"taintTargets\":[{\"key\":\"x-target\",\"value\":\"x-target-value\",\"effect\":"
    "\"NoSchedule\"}]}},"
    "{\"kind\":\"Machine\",\"apiVersion\":\"cluster.x-k8s.io/v1beta2\",\"metadata\":{"
    "\"name\":\"x-machine\",\"namespace\":\"x-machine-ns\",\"ownerReferences\":[{"
    "\"kind\":\"x-owner-kind\",\"name\":\"x-owner\"}],\"annotations\":{"
    "\"pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate\":\"nodegate\"}},"
    "\"spec\":{\"clusterName\":\"x-cluster\"},\"status\":{\"nodeRef\":{\"name\":"
    "\"x-machine-node\"}}},"
    "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{"
    "\"name\":\"node-x-lease-node\",\"namespace\":\"medik8s-leases\"},\"spec\":{"
    "\"holderIdentity\":\"x-lease-holder\",\"leaseDurationSeconds\":3600,"
    "\"renewTime\":\"2026-01-01T00:00:00.000000Z\"}}"
    "]}";

/* Decodes @o alone into a fresh pool: every string in the pool came from decoding it, so each
 * must be an id the walk visits. */
static void check_object(const cJSON *o, const char *path)
{
	struct kube_cache *c = kube_cache_create();
	struct kube_object obj;
	struct ng_err err = {0};
	/* Id 0 goes to a string no object holds: a field left zero where it means "none" must
	 * not pass for a visit of the object's first string. */
	uint32_t zero;
	assert_int_equal(ng_intern_add(kube_cache_pool(c), "\x01", 1, &zero), NG_OK);
	assert_int_equal(zero, 0);
	if (kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), o, "fixture", &obj,
			       &err) != NG_OK) {
		if (strcmp(path, "EXTRA") == 0)
			fail_msg("EXTRA: %s", err.msg);
		kube_cache_destroy(c);
		return;
	}
	const struct ng_intern *pool = kube_cache_pool(c);
	struct seen s = {calloc(ng_intern_count(pool) / 8 + 1, 1), ng_intern_count(pool)};
	kube_record_ids(obj.res, &obj.rec, mark, &s);
	for (uint32_t id = 1; id < s.n; id++)
		if (!(s.bits[id / 8] & (1u << (id % 8))))
			fail_msg("%s: a %s holds \"%s\" (id %u), which kube_record_ids() misses",
				 path, kube_resource_name(obj.res), ng_intern_str(pool, id, NULL),
				 id);
	free(s.bits);
	objects++;
	kinds_seen[obj.res]++;
	kube_side_free(obj.side);
	kube_cache_destroy(c);
}

/* NOLINTNEXTLINE(misc-no-recursion): walks the fixed fixture F */
static void walk(const cJSON *j, const char *path)
{
	if (cJSON_IsObject(j) && ng_json_get(j, "kind") && ng_json_get(j, "metadata"))
		check_object(j, path);
	for (const cJSON *e = j ? j->child : NULL; e; e = e->next)
		walk(e, path);
}

static void check_file(const char *path)
{
	size_t len = 0;
	char *buf = ng_test_read_file(path, &len);
	struct ng_buf json;
	ng_buf_init(&json, 64u << 20);
	struct ng_err err = {0};
	const char *text = buf;
	size_t tlen = len;
	if (!ng_yaml_is_json(buf, len)) {
		if (ng_yaml_to_json(buf, len, path, &json, &err) != NG_OK)
			goto out;
		text = json.data;
		tlen = json.len;
	}
	struct ng_arena *a = ng_arena_create(SIZE_MAX);
	cJSON *root = NULL;
	if (ng_json_parse(text, tlen, a, &root, &err) == NG_OK)
		walk(root, path);
	ng_arena_destroy(a);
out:
	ng_buf_finish(&json);
	free(buf);
}

static void test_record_ids_visit_every_interned_string(void **state)
{
	static const char *const patterns[] = {
	    "/examples/*.json",   "/examples/*.yaml",       "/examples/*/*.yaml",
	    "/examples/*/*.json", "/tests/golden/*/*.json", "/tests/e2e/*.json",
	    "/manifests/*.yaml",  "/manifests/*/*.yaml",    "/docs/*.yaml",
	};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		char pat[1024];
		(void)snprintf(pat, sizeof(pat), "%s%s", NG_SOURCE_ROOT, patterns[i]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			check_file(g.gl_pathv[k]);
		globfree(&g);
	}
	struct ng_arena *a = ng_arena_create(SIZE_MAX);
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(EXTRA, strlen(EXTRA), a, &root, &err), NG_OK);
	size_t before = objects;
	walk(root, "EXTRA");
	assert_int_equal(objects - before, 14);
	ng_arena_destroy(a);
	print_message("# %zu objects checked\n", objects);
	for (int r = 0; r < KUBE_RES_COUNT; r++) {
		print_message("#   %s: %zu\n", kube_resource_name((enum kube_resource)r),
			      kinds_seen[r]);
		assert_true(kinds_seen[r] > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_successor_keeps_ids_and_never_reuses_them),
	    cmocka_unit_test(test_churned_label_values_do_not_grow_the_pool),
	    cmocka_unit_test(test_readers_resolve_ids_while_the_pool_is_rebuilt),
	    cmocka_unit_test(test_record_ids_visit_every_interned_string),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
