/* NodeGateConfig medik8sLeases: a node whose medik8s Lease another holder owns is not granted,
 * and what the gate does with each node's Lease (policy/medik8s.h). */
#include "tests/unit/policy-gate-fixture.h"

#include "common/clock.h"
#include "policy/medik8s.h"

/* NOW_WALL_MS is 2026-11-18T11:06:40Z. */
#define LEASE_IN(ns, node, holder, renew, dur)                                                     \
	"{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"    \
	"\"node-" node "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"7\"},\"spec\":{"         \
	"\"holderIdentity\":\"" holder "\",\"leaseDurationSeconds\":" dur                          \
	",\"renewTime\":\"" renew "\",\"acquireTime\":\"" renew "\"}}"
#define LEASE(node, holder, renew, dur) LEASE_IN("medik8s-leases", node, holder, renew, dur)
#define CONFIG(on)                                                                                 \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"medik8sLeases\":" on "}}"
#define ONCE ND("once", "{\"nodeNames\":[\"node1\",\"node2\"]}")

static int64_t at(const char *rfc3339)
{
	int64_t ms = 0;
	assert_int_equal(ng_parse_rfc3339_ms(rfc3339, strlen(rfc3339), &ms), NG_OK);
	return ms;
}

/* A live Lease of another holder keeps the request Pending, retry or not, naming the node and
 * the holder, until it expires: the decision wakes then, and is a grant from then on. */
static void test_a_lease_held_by_another_holder_holds_the_request_back(void **state)
{
	(void)state;
	struct kube_snapshot *s = cluster(CONFIG("true") "," ONCE "," LEASE(
	    "node2", "node-healthcheck", "2026-11-18T11:00:00.000000Z", "3600"));
	struct result r = decide(kube_snapshot_ref(s), "once", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_PENDING,
	       "node node2 is held by node-healthcheck: Lease medik8s-leases/node-node2 until "
	       "2026-11-18T12:00:00.000Z");
	assert_int_equal(r.d.wake_wall_ms, at("2026-11-18T12:00:00Z"));
	assert_true(r.d.only_windows);
	done(&r);
	r = decide(kube_snapshot_ref(s), "once", NULL, at("2026-11-18T12:00:00Z"));
	expect(&r, POL_GATE_GRANT, NULL);
	done(&r);
	kube_snapshot_release(s);
}

/* An expired Lease, one without renewTime, nodegate's own, and a Lease of another namespace
 * hold nothing back. */
static void test_expired_own_and_foreign_namespace_leases_are_no_obstacle(void **state)
{
	(void)state;
	static const char *const leases[] = {
	    LEASE("node2", "node-maintenance", "2026-11-18T09:00:00.000000Z", "3600"),
	    LEASE("node2", "nodegate", "2026-11-18T11:00:00.000000Z", "3600"),
	    LEASE_IN("kube-node-lease", "node2", "node2", "2026-11-18T11:06:30.000000Z", "40"),
	    "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"
	    "\"node-node2\",\"namespace\":\"medik8s-leases\"},\"spec\":{\"holderIdentity\":"
	    "\"node-healthcheck\",\"leaseDurationSeconds\":3600}}",
	};
	for (size_t i = 0; i < sizeof(leases) / sizeof(*leases); i++) {
		char buf[2048];
		(void)snprintf(buf, sizeof(buf), "%s,%s,%s", CONFIG("true"), ONCE, leases[i]);
		struct kube_snapshot *s = cluster(buf);
		struct result r = decide(kube_snapshot_ref(s), "once", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_GRANT, NULL);
		done(&r);
		kube_snapshot_release(s);
	}
}

/* With medik8sLeases off (or no NodeGateConfig), Leases are not looked at. */
static void test_leases_are_ignored_with_the_option_off(void **state)
{
	(void)state;
	static const char *const configs[] = {CONFIG("false") ",", ""};
	for (size_t i = 0; i < 2; i++) {
		char buf[2048];
		(void)snprintf(
		    buf, sizeof(buf), "%s%s,%s", configs[i], ONCE,
		    LEASE("node2", "node-healthcheck", "2026-11-18T11:00:00.000000Z", "3600"));
		struct kube_snapshot *s = cluster(buf);
		struct result r = decide(kube_snapshot_ref(s), "once", NULL, NOW_WALL_MS);
		expect(&r, POL_GATE_GRANT, NULL);
		done(&r);
		kube_snapshot_release(s);
	}
}

/* A medik8sLeases that is not a boolean makes the config invalid (the gate pauses), and says
 * which field. */
static void test_a_malformed_option_is_refused_by_name(void **state)
{
	(void)state;
	struct kube_snapshot *s = cluster(CONFIG("\"yes\"") "," ONCE);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	assert_non_null(ngc);
	assert_true(ngc->invalid);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(s), ngc->error, NULL),
			    "spec.medik8sLeases: must be true or false");
	kube_snapshot_release(s);
}

/* What the gate does with a node's Lease: create it, leave a fresh one of its own until ten
 * minutes have passed, renew it then, wait for another holder's, take over an expired one,
 * delete its own once the node is given back and leave others' alone. */
static void test_lease_actions(void **state)
{
	(void)state;
	struct kube_snapshot *s =
	    cluster(LEASE("node1", "nodegate", "2026-11-18T11:00:00.000000Z", "3600") "," LEASE(
		"node2", "NodeHealthCheck-nhc", "2026-11-18T11:00:00.000000Z",
		"3600") "," LEASE("node3", "node-maintenance", "2026-11-18T10:00:00.000000Z",
				  "60"));
	const struct kube_lease *own = pol_medik8s_lease_of(s, "node1");
	const struct kube_lease *other = pol_medik8s_lease_of(s, "node2");
	const struct kube_lease *stale = pol_medik8s_lease_of(s, "node3");
	assert_non_null(own);
	assert_non_null(other);
	assert_non_null(stale);
	assert_null(pol_medik8s_lease_of(s, "node4"));
	int64_t next = -1;
	assert_int_equal(pol_medik8s_lease_action(s, NULL, true, NOW_WALL_MS, &next),
			 POL_LEASE_CREATE);
	assert_int_equal(next, 0);
	assert_int_equal(pol_medik8s_lease_action(s, NULL, false, NOW_WALL_MS, &next),
			 POL_LEASE_NONE);
	/* Renewed at 11:00 for an hour: renewed again once less than 50 minutes are left. */
	assert_int_equal(pol_medik8s_lease_action(s, own, true, NOW_WALL_MS, &next),
			 POL_LEASE_NONE);
	assert_int_equal(next, at("2026-11-18T11:10:00Z"));
	assert_int_equal(pol_medik8s_lease_action(s, own, true, at("2026-11-18T11:10:00Z"), &next),
			 POL_LEASE_RENEW);
	assert_int_equal(pol_medik8s_lease_action(s, own, false, NOW_WALL_MS, &next),
			 POL_LEASE_RELEASE);
	assert_int_equal(pol_medik8s_lease_action(s, other, true, NOW_WALL_MS, &next),
			 POL_LEASE_WAIT);
	assert_int_equal(next, at("2026-11-18T12:00:00Z"));
	assert_int_equal(pol_medik8s_lease_action(s, other, false, NOW_WALL_MS, &next),
			 POL_LEASE_NONE);
	assert_int_equal(pol_medik8s_lease_action(s, stale, true, NOW_WALL_MS, &next),
			 POL_LEASE_TAKE_OVER);
	assert_int_equal(pol_medik8s_lease_action(s, stale, false, NOW_WALL_MS, &next),
			 POL_LEASE_NONE);
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_lease_held_by_another_holder_holds_the_request_back),
	    cmocka_unit_test(test_expired_own_and_foreign_namespace_leases_are_no_obstacle),
	    cmocka_unit_test(test_leases_are_ignored_with_the_option_off),
	    cmocka_unit_test(test_a_malformed_option_is_refused_by_name),
	    cmocka_unit_test(test_lease_actions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
