/* policy/lifecycle: which Granted requests end now (deadline from grantedAt, TTL after
 * Completed, the NodeGateConfig defaults, an explicit 0), which are kept (Failed,
 * RequestorFailed, not granted, being deleted), stale expiresAt, and the next due time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "kube/kube.h"
#include "policy/lifecycle.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"
#include "tests/unit/policy-lifecycle-fixture.h"

#include <string.h>

/* A request granted node1 at @at with @spec (members after nodeNames) and @status (members
 * after grantedAt). */
#define GR(name, spec, at, status)                                                                 \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"uid\":\"uid-" name "\"},\"spec\":{\"nodeNames\":[\"node1\"]" spec \
	"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"node1\"],\"grantedAt\":" at     \
	    status "}}"
#define READY(status, reason, since)                                                               \
	",\"conditions\":[{\"type\":\"Ready\",\"status\":\"" status "\",\"reason\":\"" reason      \
	"\",\"lastTransitionTime\":" since "}]"

static const struct pol_expiry *stale_of(const struct run *r, const char *name)
{
	for (size_t i = 0; i < r->l.nstale; i++)
		if (r->l.stale[i].nd->name == ng_test_id(r->s, name))
			return &r->l.stale[i];
	return NULL;
}

static void test_deadline_counts_from_granted_at(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    GR("past", ",\"activeDeadlineSeconds\":30", AGO_60,
	       ",\"expiresAt\":\"2026-11-18T11:06:10Z\"") ","
	    GR("later", ",\"activeDeadlineSeconds\":60", AGO_5, "") ","
	    GR("none", "", AGO_60, ""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	const struct pol_end *e = end_of(&r, "past");
	assert_non_null(e);
	assert_int_equal(e->reason, POL_END_DEADLINE);
	assert_int_equal(e->due_wall_ms, NOW - 30000);
	assert_string_equal(pol_end_reason_str(e->reason), "DeadlineExceeded");
	/* The next end: "later", 55 s from now; the gate wakes then. */
	assert_int_equal(r.l.next_wall_ms, NOW + 55000);
	/* "later" shows no expiresAt yet: stale; "past" shows its own; "none" has none. */
	assert_int_equal(r.l.nstale, 1);
	assert_int_equal(stale_of(&r, "later")->expires_wall_ms, NOW - 5000 + 60000);
	finish(&r);
}

static void test_config_default_applies_unless_the_request_says_zero(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    NGC("{\"lifecycle\":{\"defaultActiveDeadlineSeconds\":10}}") ","
	    GR("dflt", "", AGO_60, ",\"expiresAt\":\"2026-11-18T11:05:50Z\"") ","
	    GR("zero", ",\"activeDeadlineSeconds\":0", AGO_60, "") ","
	    GR("own", ",\"activeDeadlineSeconds\":3600", AGO_60,
	       ",\"expiresAt\":\"2026-11-18T11:05:50Z\""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	assert_int_equal(end_of(&r, "dflt")->reason, POL_END_DEADLINE);
	assert_null(end_of(&r, "zero"));
	/* "own" shows the default's expiry, not its own: rewritten. */
	assert_int_equal(r.l.nstale, 1);
	assert_int_equal(stale_of(&r, "own")->expires_wall_ms, NOW - 60000 + 3600000);
	assert_int_equal(r.l.next_wall_ms, NOW - 60000 + 3600000);
	finish(&r);
}

static void test_defaults_leave_a_remediations_requests_alone(void **state)
{
	(void)state;
	/* NodeRemediation ends its requests itself: neither default applies, own fields do. */
	/* clang-format off */
	struct run r = run(
	    NGC("{\"lifecycle\":{\"defaultActiveDeadlineSeconds\":10,"
		"\"defaultTTLSecondsAfterCompletion\":0}}") ","
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"rem\",\"labels\":{\"nodegate.io/remediation\":\"kernel\"}},\"spec\":{"
	    "\"nodeNames\":[\"node1\"]},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":"
	    "[\"node1\"],\"grantedAt\":" AGO_60 READY("True", "Completed", AGO_5) "}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"rem-own\",\"labels\":{\"nodegate.io/remediation\":\"kernel\"}},\"spec\":{"
	    "\"nodeNames\":[\"node2\"],\"activeDeadlineSeconds\":30},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"node2\"],\"grantedAt\":" AGO_60 "}}");
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	assert_int_equal(end_of(&r, "rem-own")->reason, POL_END_DEADLINE);
	assert_null(end_of(&r, "rem"));
	finish(&r);
}

static void test_a_changed_default_rewrites_expires_at(void **state)
{
	(void)state;
	/* The default was removed: the expiresAt written with it is stale (0: remove it). */
	struct run r = run(GR("was", "", AGO_60, ",\"expiresAt\":\"2026-11-18T11:05:50Z\""));
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.nstale, 1);
	assert_int_equal(stale_of(&r, "was")->expires_wall_ms, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
}

static void test_ttl_after_completion(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    NGC("{\"lifecycle\":{\"defaultTTLSecondsAfterCompletion\":0}}") ","
	    GR("ttl", ",\"ttlSecondsAfterCompletion\":1", AGO_60, READY("True", "Completed", AGO_5)) ","
	    GR("wait", ",\"ttlSecondsAfterCompletion\":30", AGO_60,
	       READY("True", "Completed", AGO_5)) ","
	    GR("dflt", "", AGO_60, READY("True", "Completed", AGO_5)) ","
	    GR("drained", ",\"ttlSecondsAfterCompletion\":0", AGO_60, READY("True", "Drained", AGO_5)) ","
	    GR("failed", ",\"ttlSecondsAfterCompletion\":0", AGO_60, READY("False", "Failed", AGO_5)));
	/* clang-format on */
	assert_int_equal(r.l.nends, 2);
	assert_int_equal(end_of(&r, "ttl")->reason, POL_END_TTL);
	assert_int_equal(end_of(&r, "ttl")->due_wall_ms, NOW - 4000);
	assert_string_equal(pol_end_reason_str(POL_END_TTL), "TTLAfterCompletionExpired");
	assert_int_equal(end_of(&r, "dflt")->due_wall_ms, NOW - 5000); /* the default 0: at once */
	assert_null(end_of(&r, "drained")); /* Drained is not Completed */
	assert_null(end_of(&r, "failed"));  /* Failed keeps its nodes for a person */
	assert_int_equal(r.l.next_wall_ms, NOW + 25000);
	finish(&r);
}

static void test_no_default_ttl_keeps_completed_requests(void **state)
{
	(void)state;
	struct run r = run(GR("kept", "", AGO_60, READY("True", "Completed", AGO_60)));
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
}

static void test_failed_and_requestor_failed_are_kept_past_their_deadline(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    GR("failed", ",\"activeDeadlineSeconds\":1", AGO_60, READY("False", "Failed", AGO_5)) ","
	    GR("rf", ",\"activeDeadlineSeconds\":1", AGO_60,
	       ",\"conditions\":[{\"type\":\"RequestorFailed\",\"status\":\"True\"}]") ","
	    GR("rf-cleared", ",\"activeDeadlineSeconds\":1", AGO_60,
	       ",\"conditions\":[{\"type\":\"RequestorFailed\",\"status\":\"False\"}]"));
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	assert_non_null(end_of(&r, "rf-cleared"));
	/* Their expiresAt is still written: it says when the grant was meant to end. */
	assert_int_equal(r.l.nstale, 3);
	finish(&r);
}

static void test_pending_rejected_and_deleting_are_not_looked_at(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    ND("new", "{\"nodeNames\":[\"node1\"],\"activeDeadlineSeconds\":1}") ","
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"pend\"},\"spec\":{\"nodeNames\":[\"node1\"],\"activeDeadlineSeconds\":1},"
	    "\"status\":{\"state\":\"Pending\",\"grantedAt\":" AGO_60 "}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"gone\",\"deletionTimestamp\":" AGO_5 ",\"finalizers\":[\"nodegate.io/gate\"]},"
	    "\"spec\":{\"nodeNames\":[\"node1\"],\"activeDeadlineSeconds\":1},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"node1\"],\"grantedAt\":" AGO_60 "}}");
	/* clang-format on */
	assert_int_equal(r.l.nends, 0);
	assert_int_equal(r.l.nstale, 0);
	assert_int_equal(r.l.next_wall_ms, 0);
	finish(&r);
}

static void test_an_invalid_config_ends_nothing_by_its_defaults(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    NGC("{\"lifecycle\":{\"defaultActiveDeadlineSeconds\":10},\"retry\":"
		"{\"initialIntervalSeconds\":0}}") ","
	    GR("dflt", "", AGO_60, "") ","
	    GR("own", ",\"activeDeadlineSeconds\":10", AGO_60, ""));
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	assert_non_null(end_of(&r, "own"));
	finish(&r);
}

static void test_expires_at_of_a_grant(void **state)
{
	(void)state;
	struct kube_snapshot *s =
	    ng_test_cluster_f(NGC("{\"lifecycle\":{\"defaultActiveDeadlineSeconds\":10}}") "," ND(
		"a", "{\"nodeNames\":[\"node1\"]}") "," ND("b", "{\"nodeNames\":[\"node2\"],"
								"\"activeDeadlineSeconds\":0}"));
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	for (size_t i = 0; i < n; i++) {
		bool a = nds[i].name == ng_test_id(s, "a");
		assert_int_equal(pol_grant_expires_ms(&nds[i], ngc, NOW), a ? NOW + 10000 : 0);
		assert_int_equal(pol_grant_expires_ms(&nds[i], NULL, NOW), 0);
		assert_int_equal(pol_grant_expires_ms(&nds[i], ngc, 0), 0); /* not granted */
	}
	kube_snapshot_release(s);
}

#define RELEASE_AFTER(secs) ",\"drain\":{\"deadlineSeconds\":" secs ",\"onDeadline\":\"Release\"}"

/* drain.onDeadline Release: a drain not Drained by its deadline ends the request; a drained one,
 * one that retries and one already quarantined are left alone. */
static void test_a_drain_past_its_deadline_with_release_ends_the_request(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    GR("rel", RELEASE_AFTER("30"), AGO_60, READY("False", "Draining", AGO_60)) ","
	    GR("drained", RELEASE_AFTER("30"), AGO_60, READY("True", "Drained", AGO_5)) ","
	    GR("retry", ",\"drain\":{\"deadlineSeconds\":30}", AGO_60,
	       READY("False", "Draining", AGO_60)) ","
	    GR("quarantined", RELEASE_AFTER("30"), AGO_60,
	       READY("False", "DrainDeadlineExceeded", AGO_5)) ","
	    GR("soon", RELEASE_AFTER("120"), AGO_60, READY("False", "Draining", AGO_60)));
	/* clang-format on */
	assert_int_equal(r.l.nends, 1);
	const struct pol_end *e = end_of(&r, "rel");
	assert_non_null(e);
	assert_int_equal(e->reason, POL_END_DRAIN_DEADLINE);
	assert_int_equal(e->due_wall_ms, NOW - 30000);
	assert_string_equal(pol_end_reason_str(e->reason), "DrainDeadlineExceeded");
	assert_int_equal(r.l.next_wall_ms, NOW + 60000);
	finish(&r);
}

/* A Granted request of @name on nodes @nodes (a JSON array) with @status members. */
#define GRN(name, nodes, status)                                                                   \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"uid\":\"uid-" name "\"},\"spec\":{\"nodeNames\":" nodes "},"      \
	"\"status\":{\"state\":\"Granted\",\"disruptedNodes\":" nodes                              \
	",\"grantedAt\":" AGO_60 status "}}"

/* Deleted nodes: a grant with some gone names them in status.deletedNodes, once; one all of whose
 * nodes are gone names them all first, and ends once its status says so (even a Failed one:
 * nothing is left to keep). */
static void test_a_grant_whose_nodes_are_deleted(void **state)
{
	(void)state;
	/* clang-format off */
	struct run r = run(
	    GRN("first", "[\"gone-a\",\"gone-b\"]", "") ","
	    GRN("all", "[\"gone-a\",\"gone-b\"]", ",\"deletedNodes\":[\"gone-a\",\"gone-b\"]") ","
	    GRN("failed", "[\"gone-a\"]", ",\"deletedNodes\":[\"gone-a\"]"
		READY("False", "Failed", AGO_5)) ","
	    GRN("some", "[\"node1\",\"gone-c\"]", "") ","
	    GRN("named", "[\"node2\",\"gone-d\"]", ",\"deletedNodes\":[\"gone-d\"]") ","
	    GRN("back", "[\"node3\"]", ",\"deletedNodes\":[\"node3\"]"));
	/* clang-format on */
	assert_int_equal(r.l.nends, 2);
	assert_null(end_of(&r, "first"));
	assert_int_equal(stale_of(&r, "first")->ndeleted, 2);
	assert_int_equal(end_of(&r, "all")->reason, POL_END_NODES_DELETED);
	assert_int_equal(end_of(&r, "all")->due_wall_ms, NOW);
	assert_int_equal(end_of(&r, "failed")->reason, POL_END_NODES_DELETED);
	assert_string_equal(pol_end_reason_str(POL_END_NODES_DELETED), "NodesDeleted");
	const struct pol_expiry *x = stale_of(&r, "some");
	assert_non_null(x);
	assert_true(x->deleted_stale && !x->expires_stale);
	assert_int_equal(x->ndeleted, 1);
	assert_int_equal(x->deleted[0], ng_test_id(r.s, "gone-c"));
	assert_null(stale_of(&r, "named"));
	/* a node listed as deleted that is back (recreated): the list is emptied */
	x = stale_of(&r, "back");
	assert_non_null(x);
	assert_true(x->deleted_stale && x->ndeleted == 0);
	finish(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deadline_counts_from_granted_at),
	    cmocka_unit_test(test_config_default_applies_unless_the_request_says_zero),
	    cmocka_unit_test(test_defaults_leave_a_remediations_requests_alone),
	    cmocka_unit_test(test_a_changed_default_rewrites_expires_at),
	    cmocka_unit_test(test_ttl_after_completion),
	    cmocka_unit_test(test_no_default_ttl_keeps_completed_requests),
	    cmocka_unit_test(test_failed_and_requestor_failed_are_kept_past_their_deadline),
	    cmocka_unit_test(test_pending_rejected_and_deleting_are_not_looked_at),
	    cmocka_unit_test(test_an_invalid_config_ends_nothing_by_its_defaults),
	    cmocka_unit_test(test_expires_at_of_a_grant),
	    cmocka_unit_test(test_a_drain_past_its_deadline_with_release_ends_the_request),
	    cmocka_unit_test(test_a_grant_whose_nodes_are_deleted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
