/* controller/drain: the drainer's rounds driven by hand against snapshots, writing through an
 * in-memory API server (tests/support/fake-api): the finalizer before any node is touched, the
 * one conditional patch that holds a node, the release that gives back exactly what the drainer
 * took, the sweep of a note whose request is gone, and no write repeated against a version the
 * drainer has already written over or been refused on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "controller/drain_internal.h"
#include "kube/client.h"
#include "kube/snapshot.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000
#define MONO 5000000

#define NODE(name, rv, extra_meta, spec)                                                           \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"resourceVersion\":\"" rv "\"" extra_meta "},\"spec\":{" spec "},\"status\":{"        \
	"\"nodeInfo\":{\"bootID\":\"boot-1\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"     \
	"\"True\"}]}}"
/* The annotation as it sits in metadata: JSON in a JSON string. */
#define NOTE(was, holders, taints)                                                                 \
	",\"annotations\":{\"nodegate.io/drain\":\"{\\\"wasUnschedulable\\\":" was                 \
	",\\\"holders\\\":[" holders "],\\\"bootID\\\":\\\"boot-1\\\"" taints "}\"}"
#define MAINT "{\"key\":\"example.com/m\",\"effect\":\"NoSchedule\"}"
/* The same inside the note (escaped once more). */
#define MAINT_E "{\\\"key\\\":\\\"example.com/m\\\",\\\"effect\\\":\\\"NoSchedule\\\"}"
#define OTHER "{\"key\":\"other\",\"effect\":\"NoExecute\"}"
#define ND(name, rv, extra_meta)                                                                   \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"" extra_meta "},\"spec\":{"           \
	"\"nodeNames\":[\"n1\"],\"drain\":{\"force\":true,\"deleteEmptyDir\":true,"                \
	"\"taint\":" MAINT                                                                         \
	"}},\"status\":{\"state\":\"Granted\",\"grantedAt\":\"2025-11-24T15:59:59.500Z\","         \
	"\"disruptedNodes\":[\"n1\"]}}"
#define FIN ",\"finalizers\":[\"nodegate.io/drain\"]"
#define DELETING FIN ",\"deletionTimestamp\":\"2025-11-24T16:00:00Z\""
#define LIST1(a) "{\"kind\":\"List\",\"items\":[" a "]}"
#define LIST2(a, b) LIST1(a "," b)
#define LIST3(a, b, c) LIST1(a "," b "," c)
/* A running pod of a ReplicaSet on n1. */
#define POD_ON_N1(ns, name)                                                                        \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"" ns "\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"      \
	"\"ReplicaSet\",\"name\":\"o\",\"uid\":\"u\",\"controller\":true}]},\"spec\":{"            \
	"\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}"

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct drain *d;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	struct drain_config dc = {.identity = "drain-a", .self_namespace = "nodegate"};
	struct ng_err err = {0};
	fx.d = drain_create(&dc, fx.c, &err);
	assert_non_null(fx.d);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	drain_stop(fx->d);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static void round_on(struct fx *fx, const char *json, int64_t later_ms)
{
	struct kube_snapshot *s = ng_test_snapshot(json);
	(void)drain_round(fx->d, s, NOW + later_ms, MONO + later_ms);
	kube_snapshot_release(s);
}

/* The @i-th patch of node n1 itself (not of its status: the lifecycle conditions). */
static const char *node_patch(struct fx *fx, size_t i)
{
	const struct fake_api_request *q;
	for (size_t k = 0; (q = fake_api_find(&fx->api, "PATCH", "/api/v1/nodes/n1", k)); k++)
		if (!strstr(q->path, "/status") && i-- == 0)
			return q->body;
	return NULL;
}

/* The @i-th patch of node n1's status. */
static const char *status_patch(struct fx *fx, size_t i)
{
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/api/v1/nodes/n1/status", i);
	return q ? q->body : NULL;
}

static void test_finalizer_first_node_untouched(void **state)
{
	struct fx *fx = *state;
	round_on(fx, LIST2(NODE("n1", "10", "", ""), ND("r1", "5", "")), 0);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"resourceVersion\":\"5\""));
	assert_non_null(strstr(q->body, "nodegate.io/drain"));
	assert_null(node_patch(fx, 0));
	/* The watch has not brought the finalizer yet: the same version is not written again. */
	round_on(fx, LIST2(NODE("n1", "10", "", ""), ND("r1", "5", "")), 100);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/"), 1);
}

/* The API server took the finalizer and answered the new version: the node is held and its pods
 * asked to leave in the same round, and the status of that round is conditional on the version
 * the finalizer's answer gave, not on the one the round read. */
static void test_a_taken_finalizer_holds_and_evicts_in_the_same_round(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api, &(struct fake_api_reply){
				     "/nodedisruptions/r1", 200,
				     "{\"kind\":\"NodeDisruption\",\"metadata\":{\"name\":"
				     "\"r1\",\"resourceVersion\":\"6\"}}",
				     false, 1});
	const char *before =
	    LIST3(NODE("n1", "10", "", ""), ND("r1", "5", ""), POD_ON_N1("shop", "p1"));
	round_on(fx, before, 0);
	const struct fake_api_request *fin =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1", 0);
	assert_non_null(fin);
	assert_non_null(strstr(fin->body, "\"resourceVersion\":\"5\""));
	assert_non_null(strstr(fin->body, "nodegate.io/drain"));
	/* Then, in this round, the cordon, the eviction and the status. */
	const struct fake_api_request *cordon = fake_api_find(&fx->api, "PATCH", "/nodes/n1", 0);
	assert_non_null(cordon);
	assert_true(cordon > fin);
	assert_non_null(strstr(cordon->body, "/spec/unschedulable"));
	const struct fake_api_request *evict =
	    fake_api_find(&fx->api, "POST", "/namespaces/shop/pods/p1/eviction", 0);
	assert_non_null(evict);
	assert_true(evict > cordon);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1/status", 0);
	assert_non_null(st);
	assert_non_null(strstr(st->body, "\"resourceVersion\":\"6\""));
	assert_non_null(strstr(st->body, "\"reason\":\"Draining\""));
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/r1"), 2);
	/* The Events of the round (Cordoned, on the request and on the node) come after every
	 * write the drain waits on. */
	const struct fake_api_request *ev = fake_api_find(&fx->api, "POST", "/events", 0);
	assert_non_null(ev);
	assert_true(ev > st);
	assert_non_null(strstr(ev->body, "\"reason\":\"Cordoned\""));
	/* Rounds that see the version read or the finalizer's, both written over, write nothing. */
	round_on(fx, before, 100);
	round_on(fx, LIST3(NODE("n1", "10", "", ""), ND("r1", "6", FIN), POD_ON_N1("shop", "p1")),
		 200);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/r1"), 2);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/eviction"), 1);
}

static void test_hold_is_one_conditional_patch_that_lists_the_taint(void **state)
{
	struct fx *fx = *state;
	round_on(fx, LIST2(NODE("n1", "10", "", "\"taints\":[" OTHER "]"), ND("r1", "6", FIN)), 0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	/* The precondition first, then the note, the cordon and the taint added to the others. */
	assert_non_null(
	    strstr(b, "{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\",\"value\":"
		      "\"10\"}"));
	assert_non_null(strstr(b, "\\\"wasUnschedulable\\\":false"));
	assert_non_null(strstr(b, "\\\"holders\\\":[\\\"r1\\\"]"));
	assert_non_null(strstr(b, "\\\"taints\\\":[{\\\"key\\\":\\\"example.com/"
				  "m\\\",\\\"effect\\\":\\\"NoSchedule\\\"}]"));
	assert_non_null(
	    strstr(b, "{\"op\":\"add\",\"path\":\"/spec/unschedulable\",\"value\":true}"));
	assert_non_null(strstr(b,
			       "\"value\":[{\"key\":\"other\",\"effect\":\"NoExecute\"},{\"key\":"
			       "\"example.com/m\",\"effect\":\"NoSchedule\"}]"));
	/* A round that sees the request's new status but not yet the node's write patches
	 * nothing: the node is as written. */
	round_on(fx, LIST2(NODE("n1", "10", "", "\"taints\":[" OTHER "]"), ND("r1", "7", FIN)),
		 100);
	assert_null(node_patch(fx, 1));
}

static void test_a_taint_already_there_is_not_listed(void **state)
{
	struct fx *fx = *state;
	round_on(fx, LIST2(NODE("n1", "10", "", "\"taints\":[" MAINT "]"), ND("r1", "6", FIN)), 0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	assert_null(strstr(b, "taints\\\""));
	assert_null(strstr(b, "/spec/taints"));
}

static void test_release_gives_back_exactly_what_was_taken(void **state)
{
	struct fx *fx = *state;
	/* Cordoned by the drainer, its taint listed, another taint that is not its own. */
	round_on(
	    fx,
	    LIST2(NODE("n1", "20", NOTE("false", "\\\"r1\\\"", ",\\\"taints\\\":[" MAINT_E "]"),
		       "\"unschedulable\":true,\"taints\":[" OTHER "," MAINT "]"),
		  ND("r1", "7", DELETING)),
	    0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"value\":\"20\""));
	assert_non_null(strstr(b, "{\"op\":\"remove\",\"path\":\"/metadata/annotations/"
				  "nodegate.io~1drain\"}"));
	assert_non_null(
	    strstr(b, "{\"op\":\"add\",\"path\":\"/spec/unschedulable\",\"value\":false}"));
	assert_non_null(strstr(b, "\"path\":\"/spec/taints\",\"value\":[{\"key\":\"other\","
				  "\"effect\":\"NoExecute\"}]}"));
	/* The API server took the node back: the finalizer goes in the same round, after it. */
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/r1"), 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1", 0);
	assert_non_null(strstr(q->body, "\"finalizers\":[]"));
	assert_true(q > fake_api_find(&fx->api, "PATCH", "/nodes/n1", 0));
	/* Nothing again against the versions already written, while the cache lags. */
	round_on(
	    fx,
	    LIST2(NODE("n1", "20", NOTE("false", "\\\"r1\\\"", ",\\\"taints\\\":[" MAINT_E "]"),
		       "\"unschedulable\":true,\"taints\":[" OTHER "," MAINT "]"),
		  ND("r1", "7", DELETING)),
	    100);
	assert_null(node_patch(fx, 1));
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/r1"), 1);
}

static void test_a_node_cordoned_before_stays_cordoned(void **state)
{
	struct fx *fx = *state;
	round_on(fx,
		 LIST2(NODE("n1", "20", NOTE("true", "\\\"r1\\\"", ""), "\"unschedulable\":true"),
		       ND("r1", "7", DELETING)),
		 0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "/metadata/annotations/nodegate.io~1drain"));
	assert_null(strstr(b, "/spec/unschedulable"));
}

static void test_another_holder_keeps_the_node_and_the_shared_cordon(void **state)
{
	struct fx *fx = *state;
	round_on(fx,
		 LIST3(NODE("n1", "20",
			    NOTE("false", "\\\"r1\\\",\\\"r2\\\"", ",\\\"taints\\\":[" MAINT_E "]"),
			    "\"unschedulable\":true,\"taints\":[" MAINT "]"),
		       ND("r1", "7", DELETING), ND("r2", "8", FIN)),
		 0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	/* r1 leaves the note; r2 adds the same taint, so it stays listed and on the node. */
	assert_non_null(strstr(b, "\\\"holders\\\":[\\\"r2\\\"]"));
	assert_non_null(strstr(b, "\\\"taints\\\":[{"));
	assert_null(strstr(b, "/spec/unschedulable"));
	assert_null(strstr(b, "/spec/taints"));
}

static void test_a_note_whose_request_is_gone_is_swept(void **state)
{
	struct fx *fx = *state;
	round_on(
	    fx,
	    LIST1(NODE("n1", "30", NOTE("false", "\\\"gone\\\"", ",\\\"taints\\\":[" MAINT_E "]"),
		       "\"unschedulable\":true,\"taints\":[" MAINT "]")),
	    0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "/metadata/annotations/nodegate.io~1drain"));
	assert_non_null(strstr(b, "\"value\":false"));
	assert_non_null(strstr(b, "{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":[]}"));
}

static void test_a_conflict_waits_for_the_newer_version(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "/api/v1/nodes/n1",
						.http = 409,
						.body = "{\"kind\":\"Status\",\"code\":409}",
						.times = 1});
	const char *cluster = LIST2(NODE("n1", "10", "", ""), ND("r1", "6", FIN));
	round_on(fx, cluster, 0);
	assert_non_null(node_patch(fx, 0));
	/* Refused on version 10: a newer one exists, so nothing is sent until the watch has it. */
	round_on(fx, LIST2(NODE("n1", "10", "", ""), ND("r1", "7", FIN)), 100);
	assert_null(node_patch(fx, 1));
	/* (The status written in the first round is in this version of the request too.) */
	round_on(fx, LIST2(NODE("n1", "11", "", ""), ND("r1", "8", FIN)), 200);
	const char *b = node_patch(fx, 1);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"value\":\"11\""));
}

/* A Granted request for n1 with the drainer's finalizer, its status at drain phase @reason. */
#define ND_AT(name, rv, reason)                                                                    \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"" FIN "},\"spec\":{"                  \
	"\"nodeNames\":[\"n1\"],\"drain\":{\"force\":true}},\"status\":{\"state\":\"Granted\","    \
	"\"disruptedNodes\":[\"n1\"],\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","    \
	"\"reason\":\"" reason "\",\"message\":\"\"}]}}"
/* A node n1 held by r1 (its note) with extra @conditions after Ready. */
#define NODE_COND(rv, conditions)                                                                  \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n1\","                  \
	"\"resourceVersion\":\"" rv                                                                \
	"\"" NOTE("false", "\\\"r1\\\"",                                                           \
		  "") "},\"spec\":{"                                                               \
		      "\"unschedulable\":true},\"status\":{\"nodeInfo\":{\"bootID\":\"boot-1\"},"  \
		      "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}" conditions "]}}"

static void test_conditions_follow_the_phase_and_clear_on_release(void **state)
{
	struct fx *fx = *state;
	round_on(fx, LIST2(NODE_COND("20", ""), ND_AT("r1", "7", "Draining")), 0);
	const char *b = status_patch(fx, 0);
	assert_non_null(b);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/api/v1/nodes/n1/status", 0);
	assert_string_equal(q->content_type, "application/strategic-merge-patch+json");
	/* Unconditional (the kubelet writes the status too), the four types, one True. */
	assert_null(strstr(b, "resourceVersion"));
	assert_non_null(
	    strstr(b, "{\"type\":\"DrainInProgress\",\"status\":\"True\","
		      "\"reason\":\"NodegateDraining\",\"message\":\"drain in progress: held "
		      "by nodegate for NodeDisruption r1\""));
	assert_non_null(strstr(b, "{\"type\":\"MaintenancePlanned\",\"status\":\"False\""));
	assert_non_null(strstr(b, "{\"type\":\"Drained\",\"status\":\"False\""));
	assert_non_null(strstr(b, "{\"type\":\"MaintenanceInProgress\",\"status\":\"False\""));
	/* Not again while the cache has not brought it. */
	round_on(fx, LIST2(NODE_COND("20", ""), ND_AT("r1", "7", "Draining")), 100);
	assert_null(status_patch(fx, 1));
	/* Drained: the next write. */
	round_on(fx, LIST2(NODE_COND("21", ""), ND_AT("r1", "8", "Drained")), 200);
	b = status_patch(fx, 1);
	assert_non_null(b);
	assert_non_null(strstr(b, "{\"type\":\"Drained\",\"status\":\"True\","
				  "\"reason\":\"NodegateDrained\""));
	/* The request is gone and its note too; the node still shows a condition of nodegate's:
	 * all four False, reason NodegateReleased. */
	round_on(fx,
		 LIST1(NODE(
		     "n1", "22", "",
		     "") ","
			 "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n2\"},"
			 "\"status\":{\"conditions\":[{\"type\":\"Drained\",\"status\":\"True\","
			 "\"reason\":\"NodegateDrained\"}]}}"),
		 300);
	const struct fake_api_request *r2 =
	    fake_api_find(&fx->api, "PATCH", "/api/v1/nodes/n2/status", 0);
	assert_non_null(r2);
	assert_non_null(strstr(r2->body, "{\"type\":\"Drained\",\"status\":\"False\","
					 "\"reason\":\"NodegateReleased\""));
	/* n1 never had nodegate's conditions True in this snapshot: nothing written to it. */
	assert_null(status_patch(fx, 2));
}

static void test_conditions_of_another_writer_are_left_alone(void **state)
{
	struct fx *fx = *state;
	/* Nobody holds n1; its DrainInProgress is an administrator's. */
	round_on(fx,
		 LIST1(NODE_COND("20", ",{\"type\":\"DrainInProgress\",\"status\":\"True\","
				       "\"reason\":\"AdminRequested\"}")),
		 0);
	assert_null(status_patch(fx, 0));
	/* nodeConditions: false writes nothing for a held node. */
	round_on(fx,
		 LIST3(NODE_COND("21", ""), ND_AT("r1", "7", "Draining"),
		       "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		       "\"metadata\":{\"name\":\"default\"},\"spec\":{\"nodeConditions\":false}}"),
		 100);
	assert_null(status_patch(fx, 0));
}

/* The autoscalers' annotations: set to "true" with the note recording what was there, and given
 * back exactly on release. */
static void test_held_nodes_are_protected_from_autoscalers_and_restored(void **state)
{
	struct fx *fx = *state;
	round_on(fx,
		 LIST2(NODE("n1", "10",
			    ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"false\"}", ""),
		       ND("r1", "6", FIN)),
		 0);
	const char *b = node_patch(fx, 0);
	assert_non_null(b);
	assert_non_null(strstr(b,
			       "\\\"protected\\\":[{\\\"key\\\":\\\"cluster-autoscaler."
			       "kubernetes.io/scale-down-disabled\\\"},{\\\"key\\\":\\\"karpenter."
			       "sh/do-not-disrupt\\\",\\\"was\\\":\\\"false\\\"}]"));
	assert_non_null(strstr(b,
			       "{\"op\":\"add\",\"path\":\"/metadata/annotations/"
			       "cluster-autoscaler.kubernetes.io~1scale-down-disabled\",\"value\":"
			       "\"true\"}"));
	assert_non_null(strstr(b, "{\"op\":\"add\",\"path\":\"/metadata/annotations/"
				  "karpenter.sh~1do-not-disrupt\",\"value\":\"true\"}"));
	/* Release: the one that was absent goes, the other gets "false" back. */
	round_on(
	    fx,
	    LIST2(NODE("n1", "20",
		       ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\","
		       "\"cluster-autoscaler.kubernetes.io/scale-down-disabled\":\"true\","
		       "\"nodegate.io/drain\":\"{\\\"wasUnschedulable\\\":false,\\\"holders\\\":"
		       "[\\\"r1\\\"],\\\"bootID\\\":\\\"boot-1\\\",\\\"protected\\\":[{"
		       "\\\"key\\\":\\\"cluster-autoscaler.kubernetes.io/"
		       "scale-down-disabled\\\"},{\\\"key\\\":\\\"karpenter.sh/"
		       "do-not-disrupt\\\",\\\"was\\\":\\\"false\\\"}]}\"}",
		       "\"unschedulable\":true"),
		  ND("r1", "7", DELETING)),
	    100);
	b = node_patch(fx, 1);
	assert_non_null(b);
	assert_non_null(strstr(b, "{\"op\":\"remove\",\"path\":\"/metadata/annotations/"
				  "cluster-autoscaler.kubernetes.io~1scale-down-disabled\"}"));
	assert_non_null(strstr(b, "{\"op\":\"add\",\"path\":\"/metadata/annotations/"
				  "karpenter.sh~1do-not-disrupt\",\"value\":\"false\"}"));
}

/* A request holding n1 (finalizer, note, cordon) whose drain has rules @rules. */
#define ND_RULES(rules)                                                                            \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"r1\",\"resourceVersion\":\"9\"" FIN "},\"spec\":{\"nodeNames\":[\"n1\"],"      \
	"\"drain\":{\"rules\":" rules "}},\"status\":{\"state\":\"Granted\",\"grantedAt\":"        \
	"\"2025-11-24T15:59:59.500Z\",\"disruptedNodes\":[\"n1\"]}}"
#define HELD_NODE NODE("n1", "30", NOTE("false", "\\\"r1\\\"", ""), "\"unschedulable\":true")
#define RS_POD(ns, name, labels)                                                                   \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"" ns "\",\"labels\":{" labels "},\"ownerReferences\":[{"                  \
	"\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"o\",\"uid\":\"u\","         \
	"\"controller\":true}]},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":"             \
	"\"Running\"}}"

/* Only the batch of the lowest order is asked to leave; skipped pods never are; a namespace
 * a rule's namespaceSelector needs is read once per step however many of its pods there are. */
static void test_rules_ask_only_the_first_batch_reading_each_namespace_once(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){
			   .path_contains = "/api/v1/namespaces/infra",
			   .http = 200,
			   .body = "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":"
				   "{\"name\":\"infra\",\"labels\":{\"team\":\"infra\"}}}"});
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){
			   .path_contains = "/api/v1/namespaces/shop",
			   .http = 200,
			   .body = "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":"
				   "{\"name\":\"shop\",\"labels\":{\"team\":\"shop\"}}}"});
	round_on(
	    fx,
	    LIST1(
		HELD_NODE
		"," RS_POD("infra", "first-a", "") "," RS_POD("infra", "first-b", "") "," RS_POD(
		    "shop", "later",
		    "") "," RS_POD("shop", "skip",
				   "\"cluster.x-k8s.io/drain\":\"skip\"") "," ND_RULES("[{"
										       "\"namespace"
										       "Selector\":"
										       "{\"matchLab"
										       "els\":{"
										       "\"team\":"
										       "\"infra\"}}"
										       ",\"behavior"
										       "\":"
										       "\"Drain\","
										       "\"order\":-"
										       "1}]")),
	    0);
	assert_non_null(
	    fake_api_find(&fx->api, "POST", "/namespaces/infra/pods/first-a/eviction", 0));
	assert_non_null(
	    fake_api_find(&fx->api, "POST", "/namespaces/infra/pods/first-b/eviction", 0));
	assert_null(fake_api_find(&fx->api, "POST", "/namespaces/shop/pods/later/eviction", 0));
	assert_null(fake_api_find(&fx->api, "POST", "/namespaces/shop/pods/skip/eviction", 0));
	assert_int_equal(fake_api_count(&fx->api, "GET", "/api/v1/namespaces/infra"), 1);
	assert_int_equal(fake_api_count(&fx->api, "GET", "/api/v1/namespaces/shop"), 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "batch order -1: 2 pods left (1 more batch after it): "
					"infra/first-a, infra/first-b; 1 pod skipped"));
	/* The first batch gone, the next is asked. */
	fake_api_clear(&fx->api);
	round_on(
	    fx,
	    LIST1(HELD_NODE "," RS_POD("shop", "later", "") "," RS_POD(
		"shop", "skip",
		"\"cluster.x-k8s.io/drain\":\"skip\"") "," ND_RULES("[{\"namespaceSelector\":{"
								    "\"matchLabels\":{\"team\":"
								    "\"infra\"}},\"behavior\":"
								    "\"Drain\",\"order\":-1}]")),
	    20000);
	assert_non_null(fake_api_find(&fx->api, "POST", "/namespaces/shop/pods/later/eviction", 0));
	assert_null(fake_api_find(&fx->api, "POST", "/namespaces/shop/pods/skip/eviction", 0));
}

/* A namespace whose labels cannot be read leaves its pods undecided: nobody is asked to leave,
 * since they might belong to an earlier batch, and the status says why. */
static void test_an_unreadable_namespace_holds_every_batch(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = "/api/v1/namespaces/",
							  .http = 500,
							  .body = "{\"message\":\"etcd away\"}"});
	round_on(fx,
		 LIST1(HELD_NODE "," RS_POD("shop", "a", "") "," ND_RULES(
		     "[{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"infra\"}},\"behavior\":"
		     "\"Skip\"}]")),
		 0);
	assert_int_equal(fake_api_count(&fx->api, "POST", NULL), 0);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "1 pod not asked yet: their namespace's labels could not "
					"be read for the drain rules: shop/a"));
}

/* A pod skipped by its label keeps its PersistentVolume attached: the wait for volumes to detach
 * leaves that one out, and waits for any other. */
static void test_a_skipped_pods_volume_does_not_hold_the_drain(void **state)
{
	struct fx *fx = *state;
#define SKIP_WITH_PVC                                                                              \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"db\",\"namespace\":"     \
	"\"shop\",\"labels\":{\"cluster.x-k8s.io/drain\":\"skip\"}},\"spec\":{\"nodeName\":"       \
	"\"n1\",\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":"            \
	"\"data\"}}]},\"status\":{\"phase\":\"Running\"}},"                                        \
	"{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"        \
	"\"data\",\"namespace\":\"shop\"},\"spec\":{\"volumeName\":\"pv-db\"},\"status\":{"        \
	"\"phase\":\"Bound\"}}"
#define VA(name, pv)                                                                               \
	"{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"nodeName\":\"n1\",\"attacher\":\"x\","  \
	"\"source\":{\"persistentVolumeName\":\"" pv "\"}}}"
	fake_api_reply(&fx->api, &(struct fake_api_reply){
				     .path_contains = "/volumeattachments",
				     .http = 200,
				     .body = "{\"kind\":\"VolumeAttachmentList\",\"metadata\":{},"
					     "\"items\":[" VA("va-db", "pv-db") "]}",
				     .times = 1});
	round_on(fx, LIST1(HELD_NODE "," SKIP_WITH_PVC "," ND_RULES("[]")), 0);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"reason\":\"Drained\""));
	/* another volume still attached is waited for */
	fake_api_clear(&fx->api);
	drain_stop(fx->d);
	struct drain_config dc = {.identity = "drain-a", .self_namespace = "nodegate"};
	struct ng_err err = {0};
	fx->d = drain_create(&dc, fx->c, &err);
	assert_non_null(fx->d);
	fake_api_reply(&fx->api, &(struct fake_api_reply){
				     .path_contains = "/volumeattachments",
				     .http = 200,
				     .body = "{\"kind\":\"VolumeAttachmentList\",\"metadata\":{},"
					     "\"items\":[" VA("va-db", "pv-db") "," VA(
						 "va-web", "pv-web") "]}"});
	round_on(fx, LIST1(HELD_NODE "," SKIP_WITH_PVC "," ND_RULES("[]")), 0);
	q = fake_api_find(&fx->api, "PATCH", "/nodedisruptions/r1/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "waiting for 1 volume attachment(s) to detach"));
#undef VA
#undef SKIP_WITH_PVC
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_finalizer_first_node_untouched, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_taken_finalizer_holds_and_evicts_in_the_same_round, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hold_is_one_conditional_patch_that_lists_the_taint,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_taint_already_there_is_not_listed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_release_gives_back_exactly_what_was_taken, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_node_cordoned_before_stays_cordoned, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_another_holder_keeps_the_node_and_the_shared_cordon, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_note_whose_request_is_gone_is_swept, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_conditions_follow_the_phase_and_clear_on_release,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conditions_of_another_writer_are_left_alone, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_held_nodes_are_protected_from_autoscalers_and_restored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_conflict_waits_for_the_newer_version, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_rules_ask_only_the_first_batch_reading_each_namespace_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_an_unreadable_namespace_holds_every_batch, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_skipped_pods_volume_does_not_hold_the_drain,
					    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
