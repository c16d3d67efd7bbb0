/* controller/autorequest: the autoRequest controller driven step by step, creating through an
 * in-memory API server (tests/support/fake-api): the NodeDisruption a denied eviction asks for
 * (name auto-<node>, labels, annotation and spec as docs/eviction-webhook.md says), nothing for
 * a node already requested or granted, nor for a node the cache does not know, nothing more on
 * a 409, one request per node however often it is submitted, and the queue bound; the use of a
 * request recorded on it (nodegate.io/last-used, nodegate.io/node-cordoned) at most once per
 * interval. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "controller/autorequest_internal.h"
#include "kube/client.h"
#include "kube/runtime.h"
#include "kube/snapshot.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <string.h>

#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{\"pool\":\"w\"}}}"
/* A request @name for @nodes (a JSON array) in @state. */
#define ND(name, nodes, state)                                                                     \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\"},\"spec\":{\"nodeNames\":" nodes "},\"status\":{\"state\":\"" state \
	"\"}}"
/* A request autoRequest made for node @node, created at @created, with @ann (annotation
 * members after requested-by). */
#define AUTO(node, created, ann)                                                                   \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"auto-" node "\",\"uid\":\"u-" node "\",\"resourceVersion\":\"5\","             \
	"\"creationTimestamp\":\"" created                                                         \
	"\",\"labels\":{\"nodegate.io/auto-request\":\"true\"},"                                   \
	"\"annotations\":{\"nodegate.io/requested-by\":\"u\"" ann                                  \
	"}},\"spec\":{\"nodeNames\":[\"" node                                                      \
	"\"],\"type\":\"eviction\"},\"status\":{\"state\":\"Granted\"}}"
#define CORDONED_NODE(name)                                                                        \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\"},\"spec\":{\"unschedulable\":true}}"
#define LIST(...) "{\"kind\":\"List\",\"items\":[" __VA_ARGS__ "]}"

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct kube_store *store;
	struct autoreq *a;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	fx.store = kube_store_create();
	assert_non_null(fx.store);
	struct autoreq_config cfg = {.store = fx.store, .per_minute = 1000};
	struct ng_err err = {0};
	fx.a = autoreq_create(&cfg, fx.c, &err);
	assert_non_null(fx.a);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	autoreq_stop(fx->a);
	kube_store_destroy(fx->store);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static void cluster(struct fx *fx, const char *json)
{
	kube_store_publish(fx->store, ng_test_snapshot(json));
}

/* Steps until the queue is empty; how many steps. */
static int drain(struct fx *fx)
{
	int n = 0;
	for (; n < 1000; n++)
		if (autoreq_step(fx->a) == KUBE_RUNTIME_IDLE)
			return n + 1;
	fail_msg("the queue never emptied");
	return n;
}

/* The counter of nodegate_auto_requests_total{result=@result}. */
static unsigned long long counted(const struct fx *fx, const char *result)
{
	struct ng_buf out;
	ng_buf_init(&out, 1u << 16);
	assert_int_equal(autoreq_render_metrics(fx->a, &out), NG_OK);
	char series[128];
	ng_fmt(series, sizeof(series), "nodegate_auto_requests_total{result=\"%s\"} ", result);
	const char *p = strstr(out.data, series);
	assert_non_null(p);
	unsigned long long v = 0;
	for (p += strlen(series); *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (unsigned long long)(*p - '0');
	ng_buf_finish(&out);
	return v;
}

static void test_a_verified_denial_creates_auto_node(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1")));
	autoreq_submit(fx->a, "n1", "system:serviceaccount:kube-system:Autoscaler", true);
	(void)drain(fx);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	struct ng_arena *ar = ng_arena_create(1u << 20);
	cJSON *nd = NULL;
	assert_int_equal(ng_json_parse(q->body, strlen(q->body), ar, &nd, NULL), NG_OK);
	assert_string_equal(ng_json_str(nd, "kind"), "NodeDisruption");
	const cJSON *meta = ng_json_get(nd, "metadata"), *spec = ng_json_get(nd, "spec");
	assert_string_equal(ng_json_str(meta, "name"), "auto-n1");
	const cJSON *labels = ng_json_get(meta, "labels");
	assert_string_equal(ng_json_str(labels, "nodegate.io/auto-request"), "true");
	assert_string_equal(ng_json_str(labels, "nodegate.io/requested-by-verified"), "true");
	assert_string_equal(
	    ng_json_str(ng_json_get(meta, "annotations"), "nodegate.io/requested-by"),
	    "system:serviceaccount:kube-system:Autoscaler");
	assert_int_equal(cJSON_GetArraySize(ng_json_get(spec, "nodeNames")), 1);
	assert_string_equal(ng_json_get(spec, "nodeNames")->child->valuestring, "n1");
	assert_string_equal(ng_json_str(spec, "requestor"),
			    "system-serviceaccount-kube-system-autoscaler");
	assert_string_equal(ng_json_str(spec, "type"), "eviction");
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled")));
	ng_arena_destroy(ar);
	assert_int_equal(counted(fx, "created"), 1);
}

static void test_an_unverified_denial_claims_no_user(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1")));
	autoreq_submit(fx->a, "n1", "admin", false);
	(void)drain(fx);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"requestor\":\"unverified\""));
	assert_non_null(strstr(q->body, "\"nodegate.io/requested-by-verified\":\"false\""));
	assert_non_null(strstr(q->body, "\"nodegate.io/requested-by-unverified\":\"admin\""));
	assert_null(strstr(q->body, "\"nodegate.io/requested-by\":"));
}

static void test_an_existing_request_creates_nothing(void **state)
{
	struct fx *fx = *state;
	/* auto-n1 in any state, even Rejected; another request naming n2, Granted. */
	cluster(fx, LIST(NODE("n1") "," NODE("n2") "," ND("auto-n1", "[\"n9\"]", "Rejected") "," ND(
			"m2", "[\"n2\"]", "Granted")));
	autoreq_submit(fx->a, "n1", "u", true);
	autoreq_submit(fx->a, "n2", "u", true);
	(void)drain(fx);
	assert_int_equal(fx->api.nreqs, 0);
	assert_int_equal(counted(fx, "exists"), 2);
}

static void test_a_rejected_request_of_another_name_does_not_count(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1") "," ND("m1", "[\"n1\"]", "Rejected")));
	autoreq_submit(fx->a, "n1", "u", true);
	(void)drain(fx);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
}

static void test_an_unknown_node_gets_nothing(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1")));
	autoreq_submit(fx->a, "ghost", "u", true);
	(void)drain(fx);
	assert_int_equal(fx->api.nreqs, 0);
	assert_int_equal(counted(fx, "unknown_node"), 1);
}

static void test_a_conflict_is_another_replica_first(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "/nodedisruptions",
						.http = 409,
						.body = "{\"kind\":\"Status\",\"code\":409}"});
	cluster(fx, LIST(NODE("n1")));
	autoreq_submit(fx->a, "n1", "u", true);
	(void)drain(fx);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	assert_int_equal(counted(fx, "exists"), 1);
	assert_int_equal(counted(fx, "created"), 0);
	assert_int_equal(counted(fx, "error"), 0);
}

static void test_a_node_is_queued_once(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1")));
	for (int i = 0; i < 5; i++)
		autoreq_submit(fx->a, "n1", "u", true);
	assert_int_equal(drain(fx), 1);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
}

static void test_the_queue_holds_256_nodes(void **state)
{
	struct fx *fx = *state;
	char node[32];
	for (int i = 0; i < 300; i++) {
		ng_fmt(node, sizeof(node), "n%d", i);
		autoreq_submit(fx->a, node, "u", true);
	}
	assert_int_equal(counted(fx, "dropped"), 300 - 256);
	/* None is in the (empty) cache: each queued one is looked at once. */
	(void)drain(fx);
	assert_int_equal(counted(fx, "unknown_node"), 256);
	assert_int_equal(fx->api.nreqs, 0);
}

/* A use of auto-n1 records nodegate.io/last-used, conditional on the version read; once per
 * interval, whatever the number of uses; and a denial records a use too. */
static void test_a_use_is_recorded_once_per_interval(void **state)
{
	struct fx *fx = *state;
	cluster(fx, LIST(NODE("n1") "," AUTO("n1", "2020-01-01T00:00:00Z", "")));
	autoreq_used(fx->a, "n1");
	(void)drain(fx);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptions/auto-n1"), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", "/auto-n1", 0);
	assert_non_null(strstr(q->body, "\"value\":\"5\"")); /* the resourceVersion precondition */
	assert_non_null(strstr(q->body, "/metadata/annotations/nodegate.io~1last-used"));
	assert_null(strstr(q->body, "node-cordoned")); /* n1 is schedulable */
	assert_int_equal(counted(fx, "used"), 1);
	autoreq_used(fx->a, "n1");
	autoreq_submit(fx->a, "n1", "u", true);
	(void)drain(fx);
	assert_int_equal(fx->api.nreqs, 1); /* the memo: nothing more within the interval */
	assert_int_equal(counted(fx, "exists"), 1);
}

/* A cordoned node is recorded once, even when the use is recent; a request not labelled, or
 * none, gets nothing; a request created while its node is cordoned says so at once. */
static void test_a_cordoned_node_is_recorded_on_its_request(void **state)
{
	struct fx *fx = *state;
	cluster(fx,
		LIST(CORDONED_NODE("n2") "," NODE("n3") "," CORDONED_NODE("n4") "," AUTO(
		    "n2", "2099-01-01T00:00:00Z", "") "," ND("auto-n3", "[\"n3\"]", "Granted")));
	autoreq_used(fx->a, "n2");
	autoreq_used(fx->a, "n3");
	autoreq_used(fx->a, "n9");
	(void)drain(fx);
	assert_int_equal(fx->api.nreqs, 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", "/auto-n2", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "nodegate.io~1node-cordoned"));
	assert_null(strstr(q->body, "last-used")); /* "created" later than now: used recently */
	autoreq_used(fx->a, "n2");
	(void)drain(fx);
	assert_int_equal(fx->api.nreqs, 1);
	autoreq_submit(fx->a, "n4", "u", true);
	(void)drain(fx);
	q = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"nodegate.io/node-cordoned\":\"true\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_verified_denial_creates_auto_node, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_an_unverified_denial_claims_no_user, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_an_existing_request_creates_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_rejected_request_of_another_name_does_not_count,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_an_unknown_node_gets_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_conflict_is_another_replica_first, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_node_is_queued_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_queue_holds_256_nodes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_use_is_recorded_once_per_interval, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_cordoned_node_is_recorded_on_its_request, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
