/* server/admission.c's POST /v1/plan (srv_plan()): the body says which nodes to plan, by name or
 * by a LabelSelector, and bad bodies are answered 422 with what is wrong (acceptance Q03 at the
 * unit level; the plan itself is tests/unit/test-policy-plan.c's). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/limits.h"
#include "server/admission.h"
#include "tests/support/support.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

/* 2026-11-27T12:00:00Z */
static const int64_t NOW_WALL_MS = 1795780800000LL;

#define NODE(n, zone)                                                                              \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"zone\":\"" zone "\",\"pool\":\"a\"}}}"
#define CLUSTER                                                                                    \
	"{\"kind\":\"List\",\"items\":[" NODE("n0", "z0") "," NODE("n1", "z1") "," NODE(           \
	    "n2", "z2") "," NODE("n3", "z0") ",{\"kind\":\"Node\",\"apiVersion\":\"v1\","          \
					     "\"metadata\":{\"name\":\"odd\"}}]}"

struct answer {
	int code;
	cJSON *doc;
};

static struct answer ask_capped(const char *body, const struct srv_plan_caps *caps)
{
	struct kube_snapshot *s = ng_test_snapshot(CLUSTER);
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct ng_buf out;
	ng_buf_init(&out, 1u << 20);
	struct ng_err err = {0};
	struct answer a = {0};
	assert_int_equal(
	    srv_plan(body, strlen(body), arena, s, NOW_WALL_MS, caps, &out, &a.code, &err), NG_OK);
	a.doc = cJSON_Parse(out.data);
	assert_non_null(a.doc);
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
	return a;
}

static struct answer ask(const char *body)
{
	return ask_capped(body, NULL);
}

/* The plan's nodes, wave after wave, as "n0 n1 | n2". */
static void expect_waves(const cJSON *doc, const char *want)
{
	char got[256] = "";
	size_t len = 0;
	const cJSON *w, *n;
	cJSON_ArrayForEach(w, cJSON_GetObjectItem(doc, "waves"))
	{
		const char *sep = len ? " | " : "";
		cJSON_ArrayForEach(n, cJSON_GetObjectItem(w, "nodes"))
		{
			len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", sep,
						n->valuestring);
			sep = " ";
		}
	}
	assert_string_equal(got, want);
}

static void test_Q03_selector_with_expressions_selects_its_nodes(void **state)
{
	(void)state;
	/* No budget: every selected node goes in the first wave. */
	struct answer a = ask("{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"},"
			      "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\","
			      "\"values\":[\"z0\"]}]},\"drainSeconds\":60}");
	assert_int_equal(a.code, 200);
	expect_waves(a.doc, "n1 n2");
	assert_int_equal(cJSON_GetObjectItem(a.doc, "drainSeconds")->valueint, 60);
	assert_string_equal(cJSON_GetObjectItem(a.doc, "start")->valuestring,
			    "2026-11-27T12:00:00Z");
	cJSON_Delete(a.doc);
	a = ask("{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":"
		"\"DoesNotExist\"}]}}");
	expect_waves(a.doc, "odd");
	cJSON_Delete(a.doc);
	a = ask("{\"nodeSelector\":{}}");
	expect_waves(a.doc, "n0 n1 n2 n3 odd");
	cJSON_Delete(a.doc);
}

static void test_Q03_names_start_type_and_requestor(void **state)
{
	(void)state;
	struct answer a = ask("{\"nodes\":[\"n3\",\"ghost\"],\"start\":\"2026-12-01T08:00:00Z\","
			      "\"type\":\"reboot\",\"requestor\":\"ops\"}");
	assert_int_equal(a.code, 200);
	expect_waves(a.doc, "n3");
	assert_string_equal(cJSON_GetObjectItem(a.doc, "start")->valuestring,
			    "2026-12-01T08:00:00Z");
	assert_string_equal(cJSON_GetObjectItem(a.doc, "type")->valuestring, "reboot");
	assert_string_equal(cJSON_GetObjectItem(a.doc, "requestor")->valuestring, "ops");
	const cJSON *never = cJSON_GetObjectItem(a.doc, "neverGranted");
	assert_int_equal(cJSON_GetArraySize(never), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(never, 0), "node")->valuestring,
			    "ghost");
	cJSON_Delete(a.doc);
}

static void test_Q03_bad_bodies_are_422_saying_what_is_wrong(void **state)
{
	(void)state;
	static const struct {
		const char *body, *says;
	} cases[] = {
	    {"{}", "give nodes"},
	    {"{\"nodes\":[\"n0\"],\"nodeSelector\":{}}", "give nodes"},
	    {"{\"nodes\":[\"n0\"],\"drainSeconds\":0}", "drainSeconds"},
	    {"{\"nodes\":[\"n0\"],\"drainSeconds\":1.5}", "drainSeconds"},
	    {"{\"nodes\":[\"n0\"],\"start\":\"tomorrow\"}", "start"},
	    {"{\"nodes\":[1]}", "nodes"},
	    {"{\"nodes\":\"n0\"}", "nodes"},
	    {"{\"nodes\":[\"n0\"],\"extra\":true}", "unknown field \"extra\""},
	    {"{\"nodeSelector\":{\"matchLabels\":{\"a,b\":\"c\"}}}", "matchLabels"},
	    {"{\"nodeSelector\":{\"matchLabels\":{\"a\":\"x)\"}}}", "matchLabels"},
	    {"{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}}",
	     "matchExpressions"},
	    {"{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\","
	     "\"values\":[\"1\"]}]}}",
	     "matchExpressions"},
	    {"{\"nodeSelector\":{\"nodeNames\":[]}}", "not a LabelSelector field"},
	    /* Checked as the API server checks a LabelSelector, not only for the characters. */
	    {"{\"nodeSelector\":{\"matchLabels\":{\"-a\":\"b\"}}}", "nodeSelector.matchLabels"},
	    {"{\"nodeSelector\":{\"matchLabels\":{\"a\":\"-b\"}}}", "nodeSelector.matchLabels"},
	    {"[]", "expected a plan request object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct answer a = ask(cases[i].body);
		const cJSON *msg = cJSON_GetObjectItem(a.doc, "message");
		if (a.code != 422 || !cJSON_IsString(msg) ||
		    !strstr(msg->valuestring, cases[i].says))
			fail_msg("%s: got %d %s, expected 422 saying \"%s\"", cases[i].body, a.code,
				 cJSON_IsString(msg) ? msg->valuestring : "(no message)",
				 cases[i].says);
		cJSON_Delete(a.doc);
	}
}

static void test_body_that_is_not_json_is_an_error(void **state)
{
	(void)state;
	struct kube_snapshot *s = ng_test_snapshot(CLUSTER);
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct ng_buf out;
	ng_buf_init(&out, 1u << 20);
	struct ng_err err = {0};
	int code = 0;
	assert_int_equal(srv_plan("{\"nodes\":", 9, arena, s, NOW_WALL_MS, NULL, &out, &code, &err),
			 NG_EPARSE);
	assert_true(err.msg[0] != '\0');
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
}

/* The server's caps reach the plan: a plan stopped by one is a 200 that says so. */
static void test_caps_truncate_the_answer(void **state)
{
	(void)state;
	const struct srv_plan_caps caps = {.max_decisions = 1};
	struct answer a = ask_capped("{\"nodes\":[\"n0\",\"n1\",\"n2\"]}", &caps);
	assert_int_equal(a.code, 200);
	const cJSON *sum = cJSON_GetObjectItem(a.doc, "summary");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sum, "truncated")));
	assert_string_equal(cJSON_GetObjectItem(sum, "stoppedBy")->valuestring, "decisions");
	assert_int_equal(cJSON_GetObjectItem(sum, "decisions")->valueint, 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(a.doc, "notPlanned")), 2);
	cJSON_Delete(a.doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_Q03_selector_with_expressions_selects_its_nodes),
	    cmocka_unit_test(test_Q03_names_start_type_and_requestor),
	    cmocka_unit_test(test_Q03_bad_bodies_are_422_saying_what_is_wrong),
	    cmocka_unit_test(test_body_that_is_not_json_is_an_error),
	    cmocka_unit_test(test_caps_truncate_the_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
