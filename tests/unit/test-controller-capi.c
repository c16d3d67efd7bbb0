/* controller/capi: Cluster API gating driven pass by pass against an in-memory API server
 * (tests/support/fake-api): the hook patches (conditional on the Machine's resourceVersion, on
 * the v1beta1 path), the request body, nothing written again while the cache does not show a
 * write yet, a 409 writing nothing more, the Event on a gated Machine said once, stale requests
 * deleted on their uid, and the switch spec.clusterAPI.enabled. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "controller/capi_internal.h"
#include "kube/client.h"
#include "kube/snapshot.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <string.h>

#define LIST(...) "{\"kind\":\"List\",\"items\":[" __VA_ARGS__ "]}"
#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{\"pool\":\"w\"}}}"
#define NDB                                                                                        \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                         \
	"v1alpha1\",\"metadata\":{"                                                                \
	"\"name\":\"w\"},\"spec\":{\"maxDisruptedNodes\":1,\"nodeSelector\":{\"matchLabels\":{"    \
	"\"pool\":\"w\"}}}}"
/* Machine @name on node @node; @extra: metadata members after the annotations. */
#define MACHINE(name, node, ann, extra)                                                            \
	"{\"kind\":\"Machine\",\"apiVersion\":\"cluster.x-k8s.io/v1beta1\",\"metadata\":{"         \
	"\"name\":\"" name "\",\"namespace\":\"capi\",\"uid\":\"u-" name                           \
	"\",\"resourceVersion\":\"42\",\"ownerReferences\":[{\"kind\":\"MachineSet\",\"name\":"    \
	"\"ms\"}],\"annotations\":{" ann "}" extra "},\"spec\":{\"clusterName\":\"c\"},"           \
	"\"status\":{\"nodeRef\":{\"name\":\"" node "\"}}}"
#define HOOK "\"pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate\":\"nodegate\""
#define DELETING ",\"deletionTimestamp\":\"2026-11-27T12:00:00Z\""
#define REQUEST(machine, node, state)                                                              \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"capi-capi." machine "\",\"uid\":\"nd-" machine "\",\"labels\":{"               \
	"\"nodegate.io/cluster-api\":\"true\"},\"annotations\":{"                                  \
	"\"nodegate.io/cluster-api-machine\":\"capi/" machine                                      \
	"\"}},\"spec\":{\"nodeNames\":[\"" node "\"]},\"status\":{\"state\":\"" state              \
	"\",\"disruptedNodes\":[\"" node "\"],"                                                    \
	"\"disruptedDisruptionBudgets\":[{\"reference\":{\"kind\":\"NodeDisruptionBudget\","       \
	"\"name\":\"w\"},\"ok\":false,\"reason\":\"NodeDisruptionBudget w: 1 of 1 in use\"}]}}"
#define NGC(enabled)                                                                               \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"clusterAPI\":{\"enabled\":" enabled "}}}"

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct capi *g;
	struct kube_snapshot *s;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	struct capi_config cfg = {.identity = "test"};
	struct ng_err err = {0};
	fx.g = capi_create(&cfg, fx.c, &err);
	assert_non_null(fx.g);
	fx.s = NULL;
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	capi_stop(fx->g);
	if (fx->s)
		kube_snapshot_release(fx->s);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static void pass(struct fx *fx, const char *json)
{
	if (fx->s)
		kube_snapshot_release(fx->s);
	fx->s = ng_test_snapshot(json);
	assert_non_null(fx->s);
	assert_false(capi_pass(fx->g, fx->s));
}

static void test_covered_machine_gets_the_hook_once(void **state)
{
	struct fx *fx = *state;
	const char *c = LIST(NODE("n1") "," NDB "," MACHINE("m1", "n1", "\"x\":\"1\"",
							    "") "," MACHINE("m2", "n2", "", ""));
	pass(fx, c);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_string_equal(q->path, "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machines/m1");
	assert_string_equal(q->content_type, "application/json-patch+json");
	assert_non_null(strstr(q->body, "\"42\""));
	assert_non_null(
	    strstr(q->body, "pre-drain.delete.hook.machine.cluster.x-k8s.io~1nodegate"));
	assert_non_null(strstr(q->body, "\"value\":\"nodegate\""));
	/* The cache does not show it yet: not written again. */
	pass(fx, c);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 1);
}

static void test_deleted_machine_waits_then_is_released(void **state)
{
	struct fx *fx = *state;
	pass(fx, LIST(NODE("n1") "," NDB "," MACHINE("m1", "n1", HOOK, DELETING)));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	struct ng_arena *ar = ng_arena_create(1u << 20);
	cJSON *nd = NULL;
	assert_int_equal(ng_json_parse(q->body, strlen(q->body), ar, &nd, NULL), NG_OK);
	const cJSON *meta = ng_json_get(nd, "metadata"), *spec = ng_json_get(nd, "spec");
	assert_string_equal(ng_json_str(meta, "name"), "capi-capi.m1");
	assert_string_equal(ng_json_str(ng_json_get(meta, "labels"), "nodegate.io/cluster-api"),
			    "true");
	const cJSON *ann = ng_json_get(meta, "annotations");
	assert_string_equal(ng_json_str(ann, "nodegate.io/cluster-api-machine"), "capi/m1");
	assert_string_equal(ng_json_str(ann, "nodegate.io/requested-by"), "MachineSet capi/ms");
	assert_string_equal(ng_json_get(spec, "nodeNames")->child->valuestring, "n1");
	assert_string_equal(ng_json_str(spec, "type"), "cluster-api");
	assert_string_equal(ng_json_str(spec, "requestor"), "machineset.capi.ms");
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled")));
	assert_null(ng_json_get(spec, "drain"));
	ng_arena_destroy(ar);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 0);

	/* Pending: an Event, said once, and the hook stays. */
	const char *pending = LIST(NODE("n1") "," NDB "," MACHINE(
	    "m1", "n1", HOOK, DELETING) "," REQUEST("m1", "n1", "Pending"));
	pass(fx, pending);
	pass(fx, pending);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 0);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/events"), 1);
	q = fake_api_find(&fx->api, "POST", "/events", 0);
	assert_non_null(strstr(q->body, "waiting for nodegate's grant: capi-capi.m1 Pending: "
					"NodeDisruptionBudget w: 1 of 1 in use"));
	assert_non_null(strstr(q->body, "\"kind\":\"Machine\""));
	assert_non_null(strstr(q->body, "\"apiVersion\":\"cluster.x-k8s.io/v1beta1\""));

	/* Granted: the hook goes, conditional on the version read. */
	pass(fx, LIST(NODE("n1") "," NDB "," MACHINE("m1", "n1", HOOK,
						     DELETING) "," REQUEST("m1", "n1", "Granted")));
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 1);
	q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_non_null(strstr(q->body, "\"op\":\"remove\""));
	assert_non_null(strstr(q->body, "\"42\""));

	/* The node gone: the request is deleted, on its uid. */
	pass(fx,
	     LIST(NDB "," MACHINE("m1", "n1", "", DELETING) "," REQUEST("m1", "n1", "Granted")));
	assert_int_equal(fake_api_count(&fx->api, "DELETE", "/nodedisruptions/capi-capi.m1"), 1);
	q = fake_api_find(&fx->api, "DELETE", NULL, 0);
	assert_non_null(strstr(q->body, "nd-m1"));
}

/* A 409 (the Machine changed meanwhile) writes nothing more in the pass and is tried again on
 * the next version. */
static void test_conflict_is_decided_again(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api, &(struct fake_api_reply){
				     .path_contains = "/machines/", .http = 409, .times = 1});
	const char *c = LIST(NODE("n1") "," NDB "," MACHINE("m1", "n1", "", ""));
	pass(fx, c);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 1);
	pass(fx, c);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 2);
}

static void test_switched_off_removes_hooks_but_not_from_deleted_machines(void **state)
{
	struct fx *fx = *state;
	pass(fx,
	     LIST(NODE("n1") "," NODE("n2") "," NDB "," NGC("false") "," MACHINE(
		 "m1", "n1", HOOK,
		 "") "," MACHINE("m2", "n2", HOOK,
				 DELETING) "," REQUEST("m2", "n2",
						       "Pending") "," MACHINE("m3", "n1", "", "")));
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_non_null(strstr(q->path, "/machines/m1"));
	assert_non_null(strstr(q->body, "\"op\":\"remove\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_covered_machine_gets_the_hook_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_deleted_machine_waits_then_is_released, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_conflict_is_decided_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_switched_off_removes_hooks_but_not_from_deleted_machines, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
