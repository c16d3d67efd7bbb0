/* controller/gate_leases.c: the gate's medik8s Leases written against an in-memory API server:
 * the Lease created for a granted node, taken over from an expired holder and renewed, each with
 * its precondition; deleted once the node is given back or the option is off; another holder's
 * live Lease left alone; a 409 not retried by itself; a failure tried again. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "controller/gate_internal.h"
#include "kube/client.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"
#include "tests/unit/controller-gate-fixture.h"

#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\",\"uid\":"    \
	"\"uid-" name                                                                              \
	"\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
#define GRANTED(name, nodes)                                                                       \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"resourceVersion\":\"5\",\"finalizers\":[\"nodegate.io/gate\"]},"  \
	"\"spec\":{\"nodeNames\":" nodes                                                           \
	"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":" nodes                            \
	",\"grantedAt\":\"2025-11-24T15:00:00.000Z\"}}"
#define LEASE(node, holder, renew, dur)                                                            \
	"{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"    \
	"\"node-" node "\",\"namespace\":\"medik8s-leases\",\"resourceVersion\":\"31\"},"          \
	"\"spec\":{\"holderIdentity\":\"" holder "\",\"leaseDurationSeconds\":" dur                \
	",\"renewTime\":\"" renew "\",\"leaseTransitions\":4}}"
#define CONFIG(on)                                                                                 \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"medik8sLeases\":" on "}}"
#define CLUSTER(...) "{\"kind\":\"List\",\"items\":[" NODE("n1") "," NODE("n2") "," __VA_ARGS__ "]}"
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/medik8s-leases/leases"

/* A granted node without a Lease gets one, as medik8s's manager writes it; no other write. */
static void test_a_granted_node_gets_its_lease(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(CONFIG("true") "," GRANTED("g1", "[\"n1\"]")), true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "POST", LEASES), 1);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", LEASES, 0);
	assert_string_equal(q->path, LEASES);
	assert_non_null(strstr(q->body,
			       "\"metadata\":{\"name\":\"node-n1\",\"namespace\":"
			       "\"medik8s-leases\",\"ownerReferences\":[{\"apiVersion\":"
			       "\"v1\",\"kind\":\"Node\",\"name\":\"n1\",\"uid\":\"uid-n1\"}]}"));
	assert_non_null(strstr(q->body, "\"spec\":{\"holderIdentity\":\"nodegate\","
					"\"leaseDurationSeconds\":3600,\"acquireTime\":"
					"\"2025-11-24T16:00:00.000000Z\",\"renewTime\":"
					"\"2025-11-24T16:00:00.000000Z\",\"leaseTransitions\":0}"));
	assert_int_equal(fake_api_count(&fx->api, "DELETE", LEASES), 0);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", LEASES), 0);
	/* Off, or no config: nothing. */
	fake_api_clear(&fx->api);
	round_on(fx, CLUSTER(CONFIG("false") "," GRANTED("g1", "[\"n1\"]")), true, NOW);
	round_on(fx, CLUSTER(GRANTED("g1", "[\"n1\"]")), true, NOW);
	assert_int_equal(fake_api_count(&fx->api, NULL, LEASES), 0);
}

/* nodegate's own Lease: left alone while fresh, with the gate due back when it needs renewing;
 * renewed then with a patch testing the version read; deleted, conditional on that version,
 * once no grant covers the node or the option is turned off. */
static void test_own_lease_renewed_then_released(void **state)
{
	struct fx *fx = *state;
	const char *held = CLUSTER(CONFIG("true") "," GRANTED("g1", "[\"n1\"]") "," LEASE(
	    "n1", "nodegate", "2025-11-24T15:55:00.000000Z", "3600"));
	round_on(fx, held, true, NOW);
	assert_int_equal(fake_api_count(&fx->api, NULL, LEASES), 0);
	/* Renewed at 15:55 for an hour: due at 16:05, when 50 minutes are left. */
	assert_int_equal(fx->g->leases_next_wall_ms, NOW + 5 * 60000);
	round_on(fx, held, false, NOW + 5 * 60000);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", LEASES "/node-n1", 0);
	assert_non_null(q);
	assert_string_equal(q->content_type, "application/json-patch+json");
	assert_non_null(strstr(q->body, "\"value\":\"31\""));
	assert_non_null(strstr(q->body, "{\"op\":\"add\",\"path\":\"/spec/renewTime\",\"value\":"
					"\"2025-11-24T16:05:00.000000Z\"}"));
	assert_null(strstr(q->body, "acquireTime"));
	fake_api_clear(&fx->api);
	round_on(fx,
		 CLUSTER(CONFIG("true") "," LEASE("n1", "nodegate", "2025-11-24T15:55:00.000000Z",
						  "3600")),
		 true, NOW);
	q = fake_api_find(&fx->api, "DELETE", LEASES "/node-n1", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"preconditions\":{\"resourceVersion\":\"31\"}"));
	fake_api_clear(&fx->api);
	round_on(fx,
		 CLUSTER(CONFIG("false") "," GRANTED("g1", "[\"n1\"]") "," LEASE(
		     "n1", "nodegate", "2025-11-24T15:55:00.000000Z", "3600")),
		 true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", LEASES "/node-n1"), 1);
}

/* Another holder's Lease: left alone while held (the gate comes back at its expiry, and never
 * deletes it), taken over once expired (acquireTime now, one more transition). */
static void test_another_holders_lease_waits_then_is_taken_over(void **state)
{
	struct fx *fx = *state;
	const char *live = CLUSTER(CONFIG("true") "," GRANTED("g1", "[\"n1\"]") "," LEASE(
	    "n1", "node-maintenance", "2025-11-24T15:59:00.000000Z", "120"));
	round_on(fx, live, true, NOW);
	assert_int_equal(fake_api_count(&fx->api, NULL, LEASES), 0);
	assert_int_equal(fx->g->leases_next_wall_ms, NOW + 60000);
	round_on(fx,
		 CLUSTER(CONFIG("true") "," LEASE("n1", "node-maintenance",
						  "2025-11-24T15:59:00.000000Z", "120")),
		 true, NOW);
	assert_int_equal(fake_api_count(&fx->api, NULL, LEASES), 0);
	round_on(fx, live, false, NOW + 60000);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", LEASES "/node-n1", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"value\":\"31\""));
	assert_non_null(strstr(q->body, "{\"op\":\"add\",\"path\":\"/spec/holderIdentity\","
					"\"value\":\"nodegate\"}"));
	assert_non_null(strstr(q->body, "{\"op\":\"add\",\"path\":\"/spec/acquireTime\",\"value\":"
					"\"2025-11-24T16:01:00.000000Z\"}"));
	assert_non_null(strstr(q->body, "{\"op\":\"add\",\"path\":\"/spec/leaseTransitions\","
					"\"value\":5}"));
}

/* A 409 (someone was first) waits for the cache; a failure is tried again 5 s later. */
static void test_conflict_waits_failure_retries(void **state)
{
	struct fx *fx = *state;
	const struct fake_api_reply conflict = {LEASES, 409, NULL, false, 1};
	fake_api_reply(&fx->api, &conflict);
	round_on(fx, CLUSTER(CONFIG("true") "," GRANTED("g1", "[\"n1\"]")), true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "POST", LEASES), 1);
	assert_int_equal(fx->g->leases_next_wall_ms, 0);
	const struct fake_api_reply fail = {LEASES, 503, NULL, false, 1};
	fake_api_reply(&fx->api, &fail);
	round_on(fx, CLUSTER(CONFIG("true") "," GRANTED("g1", "[\"n1\"]")), true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "POST", LEASES), 2);
	assert_int_equal(fx->g->leases_next_wall_ms, NOW + 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_granted_node_gets_its_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_own_lease_renewed_then_released, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_another_holders_lease_waits_then_is_taken_over,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conflict_waits_failure_retries, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
