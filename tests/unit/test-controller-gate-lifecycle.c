/* controller/gate_lifecycle: the gate ends grants against snapshots, writing through an
 * in-memory API server (tests/support/fake-api): a grant carries its expiresAt; a request past
 * its deadline gets its Events (on itself and its node) and then a DELETE conditional on its
 * uid, once; a failed delete is tried again without new Events; a 409 ends it; a stale
 * expiresAt is rewritten with the version it was read at. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "controller/gate_internal.h"
#include "kube/client.h"
#include "kube/internal.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"
#include "tests/unit/controller-gate-fixture.h"

#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"uid\":\"node-uid-" name "\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","       \
	"\"status\":\"True\"}]}}"
/* Request @name (uid u-@name, the gate's finalizer on) on n1 with @spec members, granted at
 * 15:59:00Z with @status members. */
#define GRANTED(name, spec, status)                                                                \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"uid\":\"u-" name "\",\"resourceVersion\":\"7\",\"finalizers\":"   \
	"[\"nodegate.io/gate\"]},\"spec\":{"                                                       \
	"\"nodeNames\":[\"n1\"]" spec "},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":"    \
	"[\"n1\"],\"grantedAt\":\"2025-11-24T15:59:00Z\"" status "}}"
#define CLUSTER(...) "{\"kind\":\"List\",\"items\":[" NODE("n1") "," __VA_ARGS__ "]}"

/* One round over @json, which the cache just published. */
static void round_at(struct fx *fx, const char *json, int64_t now_wall_ms)
{
	round_on(fx, json, true, now_wall_ms);
}

/* The index of the first recorded request matching, or FAKE_API_MAX. */
static size_t index_of(const struct fx *fx, const char *method, const char *path,
		       const char *body_part)
{
	for (size_t i = 0; i < fx->api.nreqs; i++) {
		const struct fake_api_request *q = &fx->api.reqs[i];
		if (strcmp(q->method, method) == 0 && strstr(q->path, path) &&
		    (!body_part || strstr(q->body, body_part)))
			return i;
	}
	return FAKE_API_MAX;
}

static void test_a_grant_carries_its_expiry(void **state)
{
	struct fx *fx = *state;
	round_at(
	    fx,
	    CLUSTER("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"m1\",\"uid\":\"u-m1\",\"resourceVersion\":\"3\"},"
		    "\"spec\":{\"nodeNames\":[\"n1\"],\"activeDeadlineSeconds\":2}}"),
	    NOW);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/m1/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"grantedAt\":\"2025-11-24T16:00:00.000Z\","
					"\"expiresAt\":\"2025-11-24T16:00:02.000Z\""));
	/* Nothing ends yet: the cache does not show the grant. */
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
}

static void test_a_passed_deadline_ends_the_request_once(void **state)
{
	struct fx *fx = *state;
	const char *c = CLUSTER(GRANTED("m1", ",\"activeDeadlineSeconds\":30",
					",\"expiresAt\":\"2025-11-24T15:59:30Z\""));
	round_at(fx, c, NOW);
	size_t on_nd = index_of(fx, "POST", "/events", "\"reason\":\"DeadlineExceeded\"");
	size_t on_node = index_of(fx, "POST", "/events", "\"kind\":\"Node\"");
	size_t del = index_of(fx, "DELETE", "/nodedisruptions/m1", NULL);
	assert_true(on_nd < del && on_node < del && del < FAKE_API_MAX);
	assert_non_null(strstr(fx->api.reqs[on_nd].body, "\"uid\":\"u-m1\""));
	assert_non_null(strstr(fx->api.reqs[on_node].body, "\"uid\":\"node-uid-n1\""));
	assert_non_null(strstr(fx->api.reqs[on_node].body, "\"reason\":\"DeadlineExceeded\""));
	assert_non_null(strstr(fx->api.reqs[del].body, "\"preconditions\":{\"uid\":\"u-m1\"}"));
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.ended[POL_END_DEADLINE], 1);
	/* The cache is behind: the same snapshot again writes nothing more. */
	fake_api_clear(&fx->api);
	round_at(fx, c, NOW + 100);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/events"), 0);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
}

static void test_a_failed_delete_is_tried_again_without_new_events(void **state)
{
	struct fx *fx = *state;
	const struct fake_api_reply fail = {"/nodedisruptions/m1", 0, NULL, true, 1};
	fake_api_reply(&fx->api, &fail);
	const char *c = CLUSTER(GRANTED("m1", ",\"activeDeadlineSeconds\":30",
					",\"expiresAt\":\"2025-11-24T15:59:30Z\""));
	round_at(fx, c, NOW);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 1);
	assert_int_equal(fx->g->lifecycle_next_wall_ms, NOW + 1000); /* the retry wakes the gate */
	fake_api_clear(&fx->api);
	round_at(fx, c, NOW + 500); /* not yet */
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	round_at(fx, c, NOW + 1000);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 1);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/events"), 0);
}

static void test_a_request_created_again_under_the_name_is_not_ended(void **state)
{
	struct fx *fx = *state;
	/* The uid precondition fails: another object holds the name now. That ends the work. */
	const struct fake_api_reply conflict = {"/nodedisruptions/m1", 409, NULL, false, 1};
	fake_api_reply(&fx->api, &conflict);
	const char *c = CLUSTER(GRANTED("m1", ",\"activeDeadlineSeconds\":30",
					",\"expiresAt\":\"2025-11-24T15:59:30Z\""));
	round_at(fx, c, NOW);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 1);
	assert_int_equal(fx->g->lifecycle_next_wall_ms, 0);
	fake_api_clear(&fx->api);
	round_at(fx, c, NOW + 2000);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	/* The new object (another uid) is looked at afresh: its own deadline counts. */
	round_at(
	    fx,
	    CLUSTER("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"m1\",\"uid\":\"u-new\",\"resourceVersion\":\"9\"},"
		    "\"spec\":{\"nodeNames\":[\"n1\"]},\"status\":{\"state\":\"Granted\","
		    "\"disruptedNodes\":[\"n1\"],\"grantedAt\":\"2025-11-24T15:59:00Z\"}}"),
	    NOW + 3000);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
}

static void test_ttl_and_stale_expiry(void **state)
{
	struct fx *fx = *state;
	/* clang-format off */
	round_at(fx, CLUSTER(
	    GRANTED("done", ",\"ttlSecondsAfterCompletion\":0",
		    ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
		    "\"Completed\",\"lastTransitionTime\":\"2025-11-24T15:59:50Z\"}]") ","
	    GRANTED("later", ",\"activeDeadlineSeconds\":3600", "")), NOW);
	/* clang-format on */
	size_t del = index_of(fx, "DELETE", "/nodedisruptions/done", NULL);
	assert_true(del < FAKE_API_MAX);
	assert_true(index_of(fx, "POST", "/events", "TTLAfterCompletionExpired") < del);
	/* "later" shows no expiresAt: written, conditional on the version read. */
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/later/status", 0);
	assert_non_null(q);
	assert_string_equal(q->body, "{\"metadata\":{\"resourceVersion\":\"7\"},\"status\":{"
				     "\"expiresAt\":\"2025-11-24T16:59:00.000Z\"}}");
	/* Its deadline is the next thing due: the gate wakes then. */
	assert_int_equal(fx->g->lifecycle_next_wall_ms, NOW + 3540 * 1000);
}

/* The gate looks at the grants again only when the requests, the nodes' shape or the
 * configuration change, or when something falls due: a grant still ends at its deadline on an
 * unchanged snapshot, and a node's deletion is seen at once. */
static void test_grants_are_looked_at_again_when_due_or_when_nodes_go(void **state)
{
	struct fx *fx = *state;
	struct kube_cache *c = kube_cache_create();
	assert_non_null(c);
	ng_test_cache_put(c, NODE("n1"), false);
	ng_test_cache_put(c, NODE("n2"), false);
	ng_test_cache_put(c,
			  GRANTED("m1", ",\"activeDeadlineSeconds\":3600",
				  ",\"expiresAt\":\"2025-11-24T16:59:00Z\""),
			  false);
	struct kube_snapshot *s1 = NULL;
	assert_int_equal(kube_cache_publish(c, &s1), NG_OK);
	gate_round(fx->g, s1, true, NOW);
	gate_round(fx->g, s1, false, NOW + 1000);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	assert_int_equal(fx->g->lifecycle_next_wall_ms, NOW + 3540 * 1000);
	/* The same snapshot when the deadline comes: it ends. */
	gate_round(fx->g, s1, false, NOW + 3540 * 1000);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", "/nodedisruptions/m1"), 1);

	/* Another grant, and then its node deleted: the status says so at once. */
	fake_api_clear(&fx->api);
	ng_test_cache_put(
	    c,
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"m2\",\"uid\":\"u-m2\",\"resourceVersion\":\"8\","
	    "\"finalizers\":[\"nodegate.io/gate\"]},\"spec\":{\"nodeNames\":[\"n2\"],"
	    "\"activeDeadlineSeconds\":3600},\"status\":{\"state\":\"Granted\","
	    "\"disruptedNodes\":[\"n2\"],\"grantedAt\":\"2025-11-24T15:59:00Z\","
	    "\"expiresAt\":\"2025-11-24T16:59:00Z\"}}",
	    false);
	struct kube_snapshot *s2 = NULL;
	assert_int_equal(kube_cache_publish(c, &s2), NG_OK);
	gate_round(fx->g, s2, true, NOW + 2000);
	gate_round(fx->g, s2, false, NOW + 3000);
	assert_null(fake_api_find(&fx->api, "PATCH", "/nodedisruptions/m2/status", 0));
	ng_test_cache_put(c, NODE("n2"), true);
	struct kube_snapshot *s3 = NULL;
	assert_int_equal(kube_cache_publish(c, &s3), NG_OK);
	assert_true(kube_snapshot_table_serial(s2, KUBE_RES_NDS) ==
		    kube_snapshot_table_serial(s3, KUBE_RES_NDS));
	gate_round(fx->g, s3, true, NOW + 4000);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/m2/status", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"n2\""));
	kube_snapshot_release(s1);
	kube_snapshot_release(s2);
	kube_snapshot_release(s3);
	kube_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_grant_carries_its_expiry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_passed_deadline_ends_the_request_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_failed_delete_is_tried_again_without_new_events,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_request_created_again_under_the_name_is_not_ended, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ttl_and_stale_expiry, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_grants_are_looked_at_again_when_due_or_when_nodes_go, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
