/* controller/remediate: passes of the remediation controller driven by hand against snapshots,
 * writing through an in-memory API server (tests/support/fake-api): the finalizer before
 * anything else, the request's exact body, the status written with the resourceVersion it was
 * planned on and only when it changed, a creation not yet in the cache holding the next one, a
 * repair recorded in status before its request is deleted (and not deleted when that write
 * fails), and the finalizer dropped once a deleted remediation has no request left. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/json.h"
#include "common/arena.h"
#include "controller/remediate_internal.h"
#include "kube/client.h"
#include "kube/snapshot.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <string.h>

/* 2026-11-27T12:00:00Z */
#define NOW 1795780800000LL

#define TEMPLATE                                                                                   \
	"{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/"                       \
	"v1alpha1\",\"metadata\":"                                                                 \
	"{\"name\":\"reboot\"},\"spec\":{\"type\":\"reboot\",\"retry\":{\"enabled\":true},"        \
	"\"drain\":{\"force\":true}}}"
#define SICK_NODE(name)                                                                            \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{"                                                                          \
	"\"pool\":\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"   \
	"{\"type\":\"example.com/Sick\",\"status\":\"True\",\"lastTransitionTime\":"               \
	"\"2026-11-27T11:00:00Z\"}]}}"
#define WELL_NODE(name)                                                                            \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{"                                                                          \
	"\"pool\":\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
/* The remediation "fix" at resourceVersion @rv, @meta and @status spliced in. */
#define NREM(rv, meta, status)                                                                     \
	"{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"     \
	"\"name\":\"fix\",\"uid\":\"uid-fix\",\"resourceVersion\":\"" rv "\"" meta "},\"spec\":{"  \
	"\"nodeSelector\":{\"matchLabels\":{\"pool\":\"w\"}},\"rule\":{\"conditions\":[{\"type\":" \
	"\"example.com/Sick\",\"status\":\"True\"}]},\"templateName\":\"reboot\","                 \
	"\"maxConcurrent\":1}" status "}"
#define FIN ",\"finalizers\":[\"nodegate.io/remediation\"]"
#define GONE ",\"deletionTimestamp\":\"2026-11-27T11:59:00Z\"" FIN
/* fix's request for @node in @state with the drainer's @phase. */
#define REQUEST(node, state, phase)                                                                \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"fix-" node "\",\"uid\":\"uid-req-" node "\",\"labels\":{"                      \
	"\"nodegate.io/remediation\":\"fix\"}},\"spec\":{\"nodeNames\":[\"" node "\"],"            \
	"\"drain\":{\"force\":true}},\"status\":{\"state\":\"" state "\",\"conditions\":[{"        \
	"\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"" phase "\"}]}}"
#define LIST(...) "{\"kind\":\"List\",\"items\":[" __VA_ARGS__ "]}"

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct remediate *m;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	struct remediate_config rc = {.identity = "serve-a"};
	struct ng_err err = {0};
	fx.m = remediate_create(&rc, fx.c, &err);
	assert_non_null(fx.m);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	remediate_stop(fx->m);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static int64_t pass(struct fx *fx, const char *json)
{
	struct kube_snapshot *s = ng_test_snapshot(json);
	int64_t next = remediate_pass(fx->m, s, NOW);
	kube_snapshot_release(s);
	return next;
}

/* Index of request @q among everything recorded (for order). */
static size_t order(const struct fx *fx, const struct fake_api_request *q)
{
	assert_non_null(q);
	return (size_t)(q - fx->api.reqs);
}

/* Parses @body (a request's JSON) into @a; the root. */
static cJSON *parse(const char *body, struct ng_arena *a)
{
	cJSON *root = NULL;
	assert_int_equal(ng_json_parse(body, strlen(body), a, &root, NULL), NG_OK);
	return root;
}

static void test_finalizer_first(void **state)
{
	struct fx *fx = *state;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("5", "", "")));
	assert_int_equal(fx->api.nreqs, 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"nodegate.io/remediation\""));
	assert_non_null(strstr(q->body, "\"resourceVersion\":\"5\""));
}

static void test_status_then_the_request_with_its_exact_body(void **state)
{
	struct fx *fx = *state;
	const char *cluster =
	    LIST(TEMPLATE "," SICK_NODE("n1") "," SICK_NODE("n2") "," NREM("6", FIN, ""));
	(void)pass(fx, cluster);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	const struct fake_api_request *cr = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	assert_true(order(fx, st) < order(fx, cr));
	assert_non_null(strstr(st->body, "\"resourceVersion\":\"6\""));
	/* maxConcurrent 1: one request, for n1 (both due together: by name). */
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	struct ng_arena *a = ng_arena_create(1u << 20);
	const cJSON *nd = parse(cr->body, a);
	const cJSON *meta = ng_json_get(nd, "metadata"), *spec = ng_json_get(nd, "spec");
	assert_string_equal(ng_json_str(meta, "name"), "fix-n1");
	assert_string_equal(ng_json_str(ng_json_get(meta, "labels"), "nodegate.io/remediation"),
			    "fix");
	const cJSON *owner = ng_json_get(meta, "ownerReferences")->child;
	assert_string_equal(ng_json_str(owner, "kind"), "NodeRemediation");
	assert_string_equal(ng_json_str(owner, "uid"), "uid-fix");
	assert_true(cJSON_IsTrue(ng_json_get(owner, "controller")));
	assert_string_equal(ng_json_str(spec, "type"), "reboot");
	assert_string_equal(ng_json_str(spec, "requestor"), "fix.noderemediation");
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "drain"), "force")));
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled")));
	assert_int_equal(cJSON_GetArraySize(ng_json_get(spec, "nodeNames")), 1);
	assert_string_equal(ng_json_get(spec, "nodeNames")->child->valuestring, "n1");
	/* The status says why n2 waits. */
	const cJSON *status = ng_json_get(parse(st->body, a), "status");
	const cJSON *waiting = ng_json_get(status, "waitingNodes")->child;
	assert_string_equal(ng_json_str(waiting, "node"), "n2");
	assert_non_null(strstr(ng_json_str(waiting, "reason"), "maxConcurrent 1"));
	assert_non_null(fake_api_find(&fx->api, "POST", "/events", 0));
	ng_arena_destroy(a);

	/* The same cluster again (the watch has not brought the request yet): the status is the
	 * same, so not written, and the creation on its way holds the next one. */
	fake_api_clear(&fx->api);
	(void)pass(fx, cluster);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 0);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
}

static void test_a_repair_is_recorded_before_its_request_goes(void **state)
{
	struct fx *fx = *state;
	const char *cluster = LIST(TEMPLATE "," WELL_NODE("n1") "," REQUEST(
	    "n1", "Granted", "Drained") "," NREM("7", FIN, ""));
	/* The status write is refused (a newer version exists): the request stays. */
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "/status",
						.http = 409,
						.body = "{\"kind\":\"Status\",\"code\":409}",
						.times = 1});
	(void)pass(fx, cluster);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/noderemediations/fix/status"), 1);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	/* Written this time: lastRemediated names the request by uid, then the request goes. */
	fake_api_clear(&fx->api);
	(void)pass(fx, cluster);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	const struct fake_api_request *del =
	    fake_api_find(&fx->api, "DELETE", "/nodedisruptions/fix-n1", 0);
	assert_true(order(fx, st) < order(fx, del));
	assert_non_null(strstr(st->body, "\"lastRemediated\":[{\"node\":\"n1\",\"time\":"));
	assert_non_null(strstr(st->body, "\"uid\":\"uid-req-n1\""));
}

static void test_a_deleted_remediation_lets_go_once_its_requests_are_gone(void **state)
{
	struct fx *fx = *state;
	/* A running request: it finishes first, nothing new starts, the finalizer stays. */
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," SICK_NODE("n2") "," REQUEST(
			   "n1", "Granted", "Operating") "," NREM("8", GONE, "")));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	assert_non_null(st);
	assert_non_null(strstr(st->body, "\"reason\":\"Deleting\""));
	/* None left: the finalizer goes, and nothing else is written. */
	fake_api_clear(&fx->api);
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("9", GONE, "")));
	assert_int_equal(fx->api.nreqs, 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix", 0);
	assert_non_null(q);
	assert_null(strstr(q->body, "nodegate.io/remediation"));
}

static void test_the_next_due_time_is_returned(void **state)
{
	struct fx *fx = *state;
	/* forSeconds 7200 from 11:00: due at 13:00. */
	static const char cluster[] = LIST(TEMPLATE "," SICK_NODE(
	    "n1") ","
		  "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		  "\"metadata\":{\"name\":\"fix\",\"uid\":\"u\",\"resourceVersion\":\"3\"" FIN
		  "},\"spec\":{\"nodeSelector\":{},\"rule\":{\"conditions\":[{\"type\":"
		  "\"example.com/Sick\",\"status\":\"True\",\"forSeconds\":7200}]},"
		  "\"templateName\":\"reboot\"}}");
	assert_int_equal(pass(fx, cluster), NOW + 3600 * 1000LL);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_finalizer_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_status_then_the_request_with_its_exact_body, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_repair_is_recorded_before_its_request_goes,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_deleted_remediation_lets_go_once_its_requests_are_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_next_due_time_is_returned, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
