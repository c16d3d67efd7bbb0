#include "tests/support/support.h"
#include "tests/support/objects.h"

#include "common/arena.h"
#include "common/file.h"
#include "common/intern.h"
#include "common/json.h"
#include "kube/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kube_snapshot *ng_test_snapshot(const char *json)
{
	struct kube_builder *b = kube_builder_create();
	struct ng_err err = {0};
	struct kube_snapshot *s = NULL;
	if (!b || kube_builder_add_json(b, json, strlen(json), &err) != NG_OK) {
		(void)fprintf(stderr, "fixture does not load: %s\n", err.msg);
		abort();
	}
	if (kube_builder_finish(b, &s) != NG_OK)
		abort();
	return s;
}

void ng_test_cache_put(struct kube_cache *c, const char *json, bool del)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	cJSON *root = NULL;
	struct ng_err err = {0};
	struct kube_object obj;
	if (!a || ng_json_parse(json, strlen(json), a, &root, &err) != NG_OK ||
	    kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), root, "test", &obj,
			       &err) != NG_OK ||
	    (del ? kube_cache_delete(c, &obj) : kube_cache_upsert(c, &obj)) != NG_OK) {
		(void)fprintf(stderr, "object does not go into the cache: %s\n", err.msg);
		abort();
	}
	ng_arena_destroy(a);
}

const struct kube_adb *ng_test_adb(const struct kube_snapshot *snap, const char *name)
{
	size_t n;
	const struct kube_adb *a = kube_snapshot_adbs(snap, &n);
	for (size_t i = 0; i < n; i++)
		if (a[i].b.name == ng_test_id(snap, name))
			return &a[i];
	(void)fprintf(stderr, "no ApplicationDisruptionBudget %s in the fixture\n", name);
	abort();
}

uint32_t ng_test_id(const struct kube_snapshot *snap, const char *s)
{
	return ng_intern_find(kube_snapshot_pool(snap), s, strlen(s));
}

char *ng_test_read_file(const char *path, size_t *ret_len)
{
	char *buf = NULL;
	size_t len;
	struct ng_err err = {0};
	/* Test inputs are small; 64 MiB rejects a wrong path pointing at something huge. */
	if (ng_read_file(path, 64u << 20, "test input", false, &buf, &len, &err) != NG_OK) {
		(void)fprintf(stderr, "%s\n", err.msg);
		abort();
	}
	if (ret_len)
		*ret_len = len;
	return buf;
}

#define NODE(n, sel)                                                                               \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"testselect\":\"" sel "\",\"kubernetes.io/hostname\":\"" n "\"}},\"status\":{"           \
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
#define PV(n)                                                                                      \
	"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"" n         \
	"-pv-local\"},\"spec\":{\"local\":{\"path\":\"/mnt\"},\"nodeAffinity\":{\"required\":{"    \
	"\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","       \
	"\"operator\":\"In\",\"values\":[\"" n "\"]}]}]}}}}"

const char ng_fixture_f[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[" NODE("node1", "test1") "," NODE(
	"node2",
	"test1") "," NODE("node3",
			  "test2") "," PV("node1") "," PV("node2") "," PV("node3") ","
										   "{\"apiVersion\""
										   ":\"v1\","
										   "\"kind\":"
										   "\"Pod\","
										   "\"metadata\":{"
										   "\"name\":"
										   "\"pod1\","
										   "\"namespace\":"
										   "\"default\","
										   "\"labels\":{"
										   "\"app\":\"db\"}"
										   ",\"ownerReferen"
										   "ces\":[{"
										   "\"apiVersion\":"
										   "\"apps/v1\","
										   "\"kind\":"
										   "\"StatefulSet\""
										   ",\"name\":"
										   "\"db\",\"uid\":"
										   "\"u1\","
										   "\"controller\":"
										   "true}]},"
										   "\"spec\":{"
										   "\"nodeName\":"
										   "\"node1\","
										   "\"containers\":"
										   "[{\"name\":"
										   "\"db\"}]},"
										   "\"status\":{"
										   "\"phase\":"
										   "\"Running\"}},"
										   "{\"apiVersion\""
										   ":\"nodegate.io/"
										   "v1alpha1\","
										   "\"kind\":"
										   "\"ApplicationDi"
										   "sruptionBudget"
										   "\","
										   "\"metadata\":{"
										   "\"name\":"
										   "\"db\","
										   "\"namespace\":"
										   "\"default\"},"
										   "\"spec\":{"
										   "\"podSelector\""
										   ":{"
										   "\"matchLabels\""
										   ":{\"app\":"
										   "\"db\"}},"
										   "\"maxDisruption"
										   "s\":1}}]}";

struct kube_snapshot *ng_test_cluster_f(const char *extra)
{
	static const char nodes[] =
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node1\",\"labels\":{"
	    "\"testselect\":\"test1\",\"kubernetes.io/hostname\":\"node1\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node2\",\"labels\":{"
	    "\"testselect\":\"test1\",\"kubernetes.io/hostname\":\"node2\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\",\"labels\":{"
	    "\"testselect\":\"test2\",\"kubernetes.io/hostname\":\"node3\"}},\"status\":{"
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
	size_t n = strlen(nodes) + strlen(extra) + 64;
	char *json = malloc(n);
	if (!json)
		abort();
	(void)snprintf(json, n, "{\"kind\":\"List\",\"items\":[%s%s%s]}", nodes, *extra ? "," : "",
		       extra);
	struct kube_snapshot *s = ng_test_snapshot(json);
	free(json);
	return s;
}

cJSON *ng_test_case(int argc, char **argv)
{
	if (argc != 2) {
		(void)fprintf(stderr, "usage: %s CASE.json\n", argc ? argv[0] : "run-golden");
		exit(2);
	}
	size_t len;
	char *text = ng_test_read_file(argv[1], &len);
	cJSON *c = NULL;
	struct ng_err err = {0};
	ng_status st = ng_json_parse(text, len, NULL, &c, &err);
	free(text);
	if (st != NG_OK) {
		(void)fprintf(stderr, "%s: %s\n", argv[1], err.msg);
		exit(2);
	}
	return c;
}
