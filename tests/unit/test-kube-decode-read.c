/* kube/decode_read.c and common/json.h's token reader: a pod read straight from its text is the
 * record the tree decoder makes of it, and fails as it fails, for a corpus of pods: ordinary,
 * odd in every field the record reads, over every bound, and not JSON at all. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pair {
	struct ng_intern *pool;
	struct ng_arena *scratch, *tree, *reader;
};

static struct pair *pair_new(void)
{
	struct pair *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	p->pool = ng_intern_create();
	p->scratch = ng_arena_create(SIZE_MAX);
	p->tree = ng_arena_create(SIZE_MAX);
	p->reader = ng_arena_create(SIZE_MAX);
	assert_true(p->pool && p->scratch && p->tree && p->reader);
	return p;
}

static void pair_free(struct pair *p)
{
	ng_intern_destroy(p->pool);
	ng_arena_destroy(p->scratch);
	ng_arena_destroy(p->tree);
	ng_arena_destroy(p->reader);
	free(p);
}

static void same_pod(const struct kube_pod *a, const struct kube_pod *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->ns, b->ns);
	assert_int_equal(a->node, b->node);
	assert_int_equal(a->owner_kind, b->owner_kind);
	assert_int_equal(a->phase, b->phase);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->finalizer, b->finalizer);
	assert_int_equal(a->dnd_until_ms, b->dnd_until_ms);
	assert_int_equal(a->nlabels, b->nlabels);
	assert_int_equal(a->nclaims, b->nclaims);
	assert_int_equal(a->nrequests, b->nrequests);
	if (a->nlabels)
		assert_memory_equal(a->labels, b->labels, a->nlabels * sizeof(*a->labels));
	if (a->nclaims)
		assert_memory_equal(a->claims, b->claims, a->nclaims * sizeof(*a->claims));
	if (a->nrequests)
		assert_memory_equal(a->requests, b->requests, a->nrequests * sizeof(*a->requests));
}

/* Decodes @json both ways (its tree, and token by token) and asserts the same outcome: the
 * same record, or the same status and message. Returns the status; the tree's record in
 * *@ret (its side freed by the caller) when wanted. */
static ng_status both(struct pair *p, const char *json, size_t len, struct kube_object *ret)
{
	ng_arena_reset(p->tree);
	ng_arena_reset(p->reader);
	cJSON *root = NULL;
	struct ng_err perr = {0}, rerr = {0}, terr = {0}, derr = {0};
	ng_status pst = ng_json_parse(json, len, p->tree, &root, &perr);

	struct ng_json_reader r;
	ng_json_reader_init(&r, json, len, p->reader, &rerr);
	struct kube_object b = {.side = NULL};
	struct kube_read_meta meta;
	ng_status bst = NG_OK;
	bool object = ng_json_peek(&r) == NG_JSON_OBJECT;
	if (object)
		bst = kube_decode_read_as(p->pool, p->scratch, KUBE_RES_PODS, &r, "item", &b, &meta,
					  &derr);
	else
		(void)ng_json_skip(&r);
	bool ended = ng_json_reader_end(&r);
	/* The text is JSON for both or for neither, and fails at the same byte the same way. */
	assert_int_equal(ng_json_reader_status(&r), pst);
	if (pst != NG_OK) {
		assert_false(ended);
		assert_int_equal(rerr.offset, perr.offset);
		assert_string_equal(rerr.msg, perr.msg);
		if (object && bst == NG_OK)
			kube_side_free(b.side);
		return pst;
	}
	struct kube_object a = {.side = NULL};
	ng_status ast = kube_decode_as(p->pool, p->scratch, KUBE_RES_PODS, root, "item", &a, &terr);
	if (!object) {
		assert_int_not_equal(ast, NG_OK);
		return ast;
	}
	assert_int_equal(bst, ast);
	if (ast != NG_OK) {
		assert_string_equal(derr.msg, terr.msg);
		return ast;
	}
	same_pod(&a.rec.pod, &b.rec.pod);
	/* What the watch reads of the metadata besides the record. */
	const cJSON *m = ng_json_get(root, "metadata");
	const char *rv = ng_json_str(m, "resourceVersion"), *ns = ng_json_str(m, "namespace");
	assert_int_equal(meta.rv.s != NULL, rv != NULL);
	if (rv)
		assert_true(meta.rv.s && meta.rv.len == strlen(rv) &&
			    memcmp(meta.rv.s, rv, meta.rv.len) == 0);
	assert_int_equal(meta.ns.s != NULL, ns != NULL);
	if (ns)
		assert_true(meta.ns.s && meta.ns.len == strlen(ns) &&
			    memcmp(meta.ns.s, ns, meta.ns.len) == 0);
	kube_side_free(b.side);
	if (ret)
		*ret = a;
	else
		kube_side_free(a.side);
	return NG_OK;
}

static ng_status both_str(struct pair *p, const char *json)
{
	return both(p, json, strlen(json), NULL);
}

#define POD_META "\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\""

static const char *const corpus[] = {
    /* As bench/feed.py and an API server write one. */
    "{\"metadata\":{\"name\":\"node-00001-p0\",\"namespace\":\"bench-0\",\"uid\":\"10000000-0000-"
    "4000-8000-000000000001\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"resourceVersion\":"
    "\"12\",\"labels\":{\"app\":\"bench\",\"slot\":\"0\"},\"ownerReferences\":[{\"apiVersion\":"
    "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"bench\",\"uid\":\"2\",\"controller\":true,"
    "\"blockOwnerDeletion\":true}]},\"spec\":{\"nodeName\":\"node-00001\",\"containers\":[{"
    "\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.10\"}],\"restartPolicy\":\"Always\","
    "\"terminationGracePeriodSeconds\":30},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.244."
    "0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"containerStatuses\":[{"
    "\"name\":\"c\",\"ready\":true,\"restartCount\":0}]}}",
    /* Every field the record reads, in an unusual order, with escapes. */
    "{\"status\":{\"startTime\":\"2026-03-01T10:00:00Z\",\"conditions\":[1,{\"status\":\"True\","
    "\"type\":\"Ready\"},{\"type\":\"PodScheduled\",\"status\":\"True\"}],\"phase\":\"Pending\"},"
    "\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"memory\":\"1Gi\",\"nvidia.com/gpu\":"
    "1},\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},\"x\",{\"resources\":{\"requests\":{"
    "\"ephemeral-storage\":\"1\"}}}],\"volumes\":[{\"name\":\"a\",\"persistentVolumeClaim\":{"
    "\"claimName\":\"data-0\"}},{\"emptyDir\":null},{\"persistentVolumeClaim\":{\"claimName\":"
    "7}},{\"persistentVolumeClaim\":{\"claimName\":\"d\\u00e9j\\u00e0\"}}],\"nodeName\":\"n\\/1\"},"
    "\"metadata\":{\"annotations\":{\"nodegate.io/do-not-disrupt\":\"30m\","
    "\"kubernetes.io/config.mirror\":null},\"finalizers\":[\"example.com/keep\",2],"
    "\"deletionTimestamp\":\"2026-03-01T11:00:00Z\",\"ownerReferences\":[\"x\",{\"kind\":"
    "\"StatefulSet\"},{\"controller\":true,\"kind\":\"DaemonSet\"},{\"controller\":true,"
    "\"kind\":\"Job\"}],\"labels\":{\"b\":\"2\",\"a\":\"1\",\"\\u0063\":\"3\"},\"namespace\":"
    "\"\",\"name\":\"p\\\"q\",\"resourceVersion\":\"99\"}}",
    /* Fields of other types than the record reads: ignored as the tree decoder ignores them. */
    "{" POD_META ",\"labels\":null,\"annotations\":[1],\"finalizers\":{},\"ownerReferences\":"
    "{\"kind\":\"X\"},\"deletionTimestamp\":null,\"resourceVersion\":5},\"spec\":{\"nodeName\":"
    "null,\"volumes\":{},\"containers\":[{\"resources\":[]},{\"resources\":{\"requests\":[1],"
    "\"limits\":null}}]},\"status\":{\"phase\":3,\"conditions\":{},\"startTime\":\"yesterday\"}}",
    "{" POD_META "},\"spec\":[],\"status\":\"Running\"}",
    "{\"metadata\":[],\"spec\":{}}",
    "{" POD_META ",\"finalizers\":[1,\"a\"],\"annotations\":{\"nodegate.io/do-not-disrupt\":"
    "\"soon\"}},\"status\":{\"phase\":\"Weird\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"False\"}]}}",
    "{" POD_META ",\"annotations\":{\"nodegate.io/do-not-disrupt\":true}}}",
    "{" POD_META ",\"annotations\":{\"nodegate.io/do-not-disrupt\":\"true\"},\"finalizers\":"
    "[\"only\"]},\"status\":{\"phase\":\"Succeeded\"}}",
    /* Duplicate resource names across containers: kept once, in first-seen order. */
    "{" POD_META "},\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":1},"
    "\"limits\":{\"cpu\":2,\"memory\":1}}},{\"resources\":{\"limits\":{\"a\":1},\"requests\":"
    "{\"memory\":1,\"b\":1}}}]}}",
    /* Errors of the record: each the tree decoder's, with the pod's identity. */
    "{\"metadata\":{\"namespace\":\"x\"}}",
    "{\"metadata\":{\"name\":\"\"}}",
    "{\"metadata\":{\"name\":7}}",
    "{\"spec\":{\"nodeName\":\"n\"}}",
    "{" POD_META ",\"labels\":[]}}",
    "{" POD_META ",\"labels\":\"a=b\"}}",
    "{" POD_META ",\"labels\":{\"a\":\"1\",\"b\":2}}}",
    "{" POD_META "},\"spec\":{\"nodeName\":7}}",
    "{" POD_META "},\"spec\":{\"nodeName\":{}}}",
    /* Two problems: the one the tree decoder meets first wins, whatever the text's order. */
    "{\"spec\":{\"nodeName\":7}," POD_META ",\"labels\":{\"a\":1}}}",
    "{\"spec\":{\"nodeName\":7},\"metadata\":{\"labels\":{\"a\":1}}}",
    "{\"metadata\":{\"labels\":[],\"namespace\":\"n\",\"name\":\"x\"}}",
    /* Not a pod, not JSON. */
    "[]",
    "\"pod\"",
    "",
    "{",
    "{\"metadata\":{\"name\":\"a\"}",
    "{\"metadata\":{\"name\":\"a\"}}x",
    "{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}",
    "{\"metadata\":{\"name\":\"a\"},\"status\":{\"x\":[{\"k\":1,\"k\":2}]}}",
    ("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":[{\"resources\":{\"requests\":"
     "{\"cpu\":1,\"\\u0063pu\":2}}}]}}"),
    "{\"metadata\":{\"name\":\"a\\ud800\"}}",
    "{\"metadata\":{\"name\":\"a\\q\"}}",
    "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":01}}",
    "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":tru}}",
    "{\"metadata\":{\"name\":\"a\" \"b\"}}",
    "{\"metadata\":{\"name\":\"a\"},}",
    "{\"metadata\" {}}",
    "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":1,}}}",
};

static void test_corpus(void **state)
{
	struct pair *p = pair_new();
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		print_message("# corpus[%zu]\n", i);
		(void)both_str(p, corpus[i]);
	}
	/* Bytes JSON does not allow in strings, and text after a NUL. */
	static const char bad_utf8[] = "{\"metadata\":{\"name\":\"a\xff\"}}";
	assert_int_equal(both(p, bad_utf8, sizeof(bad_utf8) - 1, NULL), NG_EPARSE);
	static const char nul[] = "{\"metadata\":{\"name\":\"a\"}}\0{}";
	assert_int_equal(both(p, nul, sizeof(nul) - 1, NULL), NG_EPARSE);
	static const char ctrl[] = "{\"metadata\":{\"name\":\"a\nb\"}}";
	assert_int_equal(both(p, ctrl, sizeof(ctrl) - 1, NULL), NG_EPARSE);
	pair_free(p);
}

/* What the record holds for the corpus's second pod, beyond agreeing with the tree decoder. */
static void test_every_field(void **state)
{
	struct pair *p = pair_new();
	struct kube_object o;
	assert_int_equal(both(p, corpus[1], strlen(corpus[1]), &o), NG_OK);
	const struct kube_pod *pod = &o.rec.pod;
	assert_string_equal(pod->name, "p\"q");
	assert_string_equal(ng_intern_str(p->pool, pod->ns, NULL), "default");
	assert_string_equal(ng_intern_str(p->pool, pod->node, NULL), "n/1");
	assert_string_equal(ng_intern_str(p->pool, pod->owner_kind, NULL), "DaemonSet");
	assert_int_equal(pod->phase, KUBE_POD_PENDING);
	assert_int_equal(pod->flags, KUBE_POD_READY | KUBE_POD_TERMINATING | KUBE_POD_MIRROR |
					 KUBE_POD_EMPTYDIR | KUBE_POD_DAEMONSET |
					 KUBE_POD_MORE_FINALIZERS);
	assert_string_equal(ng_intern_str(p->pool, pod->finalizer, NULL), "example.com/keep");
	assert_int_equal(pod->nlabels, 3);
	assert_int_equal(pod->nclaims, 2);
	assert_string_equal(ng_intern_str(p->pool, pod->claims[1], NULL), "d\xc3\xa9j\xc3\xa0");
	/* Each container's requests, then its limits, whatever the text's order. */
	assert_int_equal(pod->nrequests, 4);
	const char *want[] = {"cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"};
	for (int i = 0; i < 4; i++)
		assert_string_equal(ng_intern_str(p->pool, pod->requests[i], NULL), want[i]);
	/* 30 minutes after status.startTime. */
	assert_int_equal(pod->dnd_until_ms, 1772359200000 + 30 * 60 * 1000);
	kube_side_free(o.side);
	pair_free(p);
}

static ng_status ng_buf_append_str(struct ng_buf *b, const char *s)
{
	return ng_buf_append(b, s, strlen(s));
}

/* A pod of @n labels (@bad: the last one a number), @n claims or @n resource names (@bad: the
 * second container's the first's again). */
static char *generated(const char *what, int n, bool bad)
{
	struct ng_buf b;
	ng_buf_init(&b, 1u << 24);
	char one[96];
	assert_int_equal(ng_buf_append_str(&b, "{\"metadata\":{\"name\":\"g\",\"namespace\":\"n\""),
			 NG_OK);
	if (strcmp(what, "labels") == 0) {
		assert_int_equal(ng_buf_append_str(&b, ",\"labels\":{"), NG_OK);
		for (int i = 0; i < n; i++) {
			(void)snprintf(one, sizeof(one), "%s\"k%d\":%s", i ? "," : "", i,
				       bad && i == n - 1 ? "1" : "\"v\"");
			assert_int_equal(ng_buf_append_str(&b, one), NG_OK);
		}
		assert_int_equal(ng_buf_append_str(&b, "}}}"), NG_OK);
	} else if (strcmp(what, "claims") == 0) {
		assert_int_equal(ng_buf_append_str(&b, "},\"spec\":{\"volumes\":["), NG_OK);
		for (int i = 0; i < n; i++) {
			(void)snprintf(one, sizeof(one),
				       "%s{\"persistentVolumeClaim\":{\"claimName\":\"c%d\"}}",
				       i ? "," : "", i);
			assert_int_equal(ng_buf_append_str(&b, one), NG_OK);
		}
		assert_int_equal(ng_buf_append_str(&b, "]}}"), NG_OK);
	} else {
		/* Half as requests, half as limits of two containers: the count is of all. */
		assert_int_equal(ng_buf_append_str(&b, "},\"spec\":{\"containers\":["), NG_OK);
		for (int c = 0; c < 2; c++) {
			assert_int_equal(
			    ng_buf_append_str(&b, c ? ",{\"resources\":{\"limits\":{"
						    : "{\"resources\":{\"requests\":{"),
			    NG_OK);
			for (int i = c * (n / 2); i < (c ? n : n / 2); i++) {
				(void)snprintf(one, sizeof(one), "%s\"r%d\":1",
					       i == c * (n / 2) ? "" : ",", bad ? i % (n / 2) : i);
				assert_int_equal(ng_buf_append_str(&b, one), NG_OK);
			}
			assert_int_equal(ng_buf_append_str(&b, "}}}"), NG_OK);
		}
		assert_int_equal(ng_buf_append_str(&b, "]}}"), NG_OK);
	}
	char *s = strdup(b.data);
	ng_buf_finish(&b);
	assert_non_null(s);
	return s;
}

static void test_bounds(void **state)
{
	struct pair *p = pair_new();
	static const struct {
		const char *what;
		int n;
		bool bad;
		ng_status want;
	} cases[] = {
	    {"labels", NG_MAX_LABELS, false, NG_OK},
	    {"labels", NG_MAX_LABELS + 1, false, NG_ELIMIT},
	    {"labels", NG_MAX_LABELS + 40, true, NG_ELIMIT},
	    {"labels", 40, true, NG_EPARSE},
	    {"labels", 20, false, NG_OK},
	    {"claims", NG_MAX_LABELS, false, NG_OK},
	    {"claims", NG_MAX_LABELS + 1, false, NG_ELIMIT},
	    {"requests", NG_MAX_LABELS, false, NG_OK},
	    {"requests", NG_MAX_LABELS + 2, false, NG_ELIMIT},
	    /* 300 names, 150 of them distinct: over the bound, counted before merging. */
	    {"requests", 300, true, NG_ELIMIT},
	    {"requests", 200, true, NG_OK},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *json = generated(cases[i].what, cases[i].n, cases[i].bad);
		print_message("# %s %d\n", cases[i].what, cases[i].n);
		assert_int_equal(both_str(p, json), cases[i].want);
		free(json);
	}
	pair_free(p);
}

/* Nesting: at the bound both read it, past it both refuse it at the same brace. */
static void test_depth(void **state)
{
	struct pair *p = pair_new();
	for (int depth = NG_MAX_JSON_DEPTH - 1; depth <= NG_MAX_JSON_DEPTH + 1; depth++) {
		struct ng_buf b;
		ng_buf_init(&b, 1u << 24);
		assert_int_equal(ng_buf_append_str(&b, "{\"metadata\":{\"name\":\"d\"},\"x\":"),
				 NG_OK);
		for (int i = 0; i < depth - 1; i++)
			assert_int_equal(ng_buf_append_str(&b, i % 2 ? "[" : "{\"a\":"), NG_OK);
		assert_int_equal(ng_buf_append_str(&b, "1"), NG_OK);
		for (int i = depth - 2; i >= 0; i--)
			assert_int_equal(ng_buf_append_str(&b, i % 2 ? "]" : "}"), NG_OK);
		assert_int_equal(ng_buf_append_str(&b, "}"), NG_OK);
		ng_status st = both(p, b.data, b.len, NULL);
		assert_int_equal(st, depth <= NG_MAX_JSON_DEPTH ? NG_OK : NG_ELIMIT);
		ng_buf_finish(&b);
	}
	pair_free(p);
}

/* An object of many keys is checked for duplicates as the tree parser checks it (sorted). */
static void test_many_keys(void **state)
{
	struct pair *p = pair_new();
	for (int dup = 0; dup < 2; dup++) {
		struct ng_buf b;
		ng_buf_init(&b, 1u << 24);
		assert_int_equal(ng_buf_append_str(&b, "{\"metadata\":{\"name\":\"m\"},\"spec\":{"),
				 NG_OK);
		char one[32];
		for (int i = 0; i < 40; i++) {
			(void)snprintf(one, sizeof(one), "%s\"k%d\":1", i ? "," : "",
				       dup && i == 39 ? 7 : i);
			assert_int_equal(ng_buf_append_str(&b, one), NG_OK);
		}
		assert_int_equal(ng_buf_append_str(&b, "}}"), NG_OK);
		assert_int_equal(both(p, b.data, b.len, NULL), dup ? NG_EPARSE : NG_OK);
		ng_buf_finish(&b);
	}
	pair_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_corpus),    cmocka_unit_test(test_every_field),
	    cmocka_unit_test(test_bounds),    cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_many_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
