/* controller/gate: a request that can never fit (L06), its rounds driven by hand against
 * snapshots and written to an in-memory API server: the condition Unsatisfiable, no retry
 * backoff and no rewrite while nothing changes, the condition False once it fits, none on
 * requests that never were unsatisfiable. */
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

#define NODE(name)                                                                                 \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{\"pool\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","         \
	"\"status\":\"True\"}]}}"
/* Request m1 for n1 and n2, retry on (@retry: more of spec.retry), status @status. */
#define M1(rv, retry, status)                                                                      \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"m1\",\"resourceVersion\":\"" rv "\",\"creationTimestamp\":\"2025-11-24T"       \
	"15:00:00Z\"},\"spec\":{\"nodeNames\":[\"n1\",\"n2\"],\"retry\":{\"enabled\":true" retry   \
	"}}" status "}"
#define POOL(max)                                                                                  \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":" \
	"{\"name\":\"pool-a\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"     \
	"\"maxDisruptedNodes\":" max "}}"
#define CLUSTER(...) "{\"kind\":\"List\",\"items\":[" NODE("n1") "," NODE("n2") "," __VA_ARGS__ "]}"

#define NEVER_MSG                                                                                  \
	"needs 2 nodes of NodeDisruptionBudget pool-a, which allows at most 1: raise "             \
	"maxDisruptedNodes to 2 or split the request"
/* m1's status as the cache shows it once the gate wrote that it can never fit. */
#define UNSATISFIABLE_STATUS                                                                       \
	",\"status\":{\"state\":\"Pending\",\"retryCount\":1,\"conditions\":[{\"type\":"           \
	"\"Granted\",\"status\":\"False\",\"reason\":\"Pending\",\"message\":\"" NEVER_MSG         \
	"\"},{\"type\":\"Unsatisfiable\",\"status\":\"True\",\"reason\":\"ExceedsBudget\","        \
	"\"message\":\"" NEVER_MSG "\",\"lastTransitionTime\":\"2025-11-24T16:00:00Z\"}]}"

static const char *m1_status(struct fx *fx)
{
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptions/m1/status", 0);
	return q ? q->body : NULL;
}

static bool event_with(struct fx *fx, const char *part)
{
	const struct fake_api_request *ev;
	for (size_t i = 0; (ev = fake_api_find(&fx->api, "POST", "/events", i)); i++)
		if (strstr(ev->body, part))
			return true;
	return false;
}

/* L06: Pending with Unsatisfiable=True, no nextRetryDate, nothing rewritten while nothing
 * changes (however long); raised to 2, Granted and Unsatisfiable=False. */
static void test_L06_unsatisfiable_waits_without_retrying_until_a_budget_changes(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(POOL("1") "," M1("1", "", "")), true, NOW);
	const char *b = m1_status(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"state\":\"Pending\""));
	assert_non_null(strstr(b, "\"retryCount\":1,\"nextRetryDate\":null"));
	assert_non_null(strstr(b, "{\"type\":\"Unsatisfiable\",\"status\":\"True\",\"reason\":"
				  "\"ExceedsBudget\",\"message\":\"" NEVER_MSG "\""));
	assert_non_null(strstr(b, "\"reason\":\"Pending\",\"message\":\"" NEVER_MSG "\""));
	assert_true(event_with(fx, "\"reason\":\"Unsatisfiable\""));
	/* The cache shows it: new snapshots, and an hour without one, write nothing. */
	const char *shown = CLUSTER(POOL("1") "," M1("2", "", UNSATISFIABLE_STATUS));
	fake_api_clear(&fx->api);
	round_on(fx, shown, true, NOW + 100);
	round_on(fx, shown, false, NOW + 3600 * 1000);
	round_on(fx, shown, true, NOW + 3601 * 1000);
	assert_null(m1_status(fx));
	/* The budget raised: granted at once, and the condition says it fits now. */
	round_on(fx, CLUSTER(POOL("2") "," M1("2", "", UNSATISFIABLE_STATUS)), true,
		 NOW + 3602 * 1000);
	b = m1_status(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"state\":\"Granted\""));
	assert_non_null(strstr(b, "{\"type\":\"Unsatisfiable\",\"status\":\"False\",\"reason\":"
				  "\"WithinBudgets\""));
	assert_null(strstr(b, "2025-11-24T16:00:00Z")); /* a new transition time */
}

/* Its figures are news, since no retry would refresh them: a budget lowered further is written
 * at once. */
static void test_L06_new_figures_are_written(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(POOL("1") "," M1("1", "", "")), true, NOW);
	fake_api_clear(&fx->api);
	round_on(fx, CLUSTER(POOL("0") "," M1("2", "", UNSATISFIABLE_STATUS)), true, NOW + 100);
	const char *b = m1_status(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "which allows at most 0"));
	/* Still True: its transition time stays. */
	assert_non_null(strstr(b, "\"lastTransitionTime\":\"2025-11-24T16:00:00Z\""));
}

/* With retry.deadline, it is decided again at the deadline (and Rejected then). */
static void test_L06_a_deadline_still_ends_the_wait(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(POOL("1") "," M1("1", ",\"deadline\":\"2025-11-24T16:05:00Z\"", "")),
		 true, NOW);
	const char *b = m1_status(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"nextRetryDate\":\"2025-11-24T16:05:00.001Z\""));
}

/* A request that fits, or is only held back for now, carries no such condition. */
static void test_L06_no_condition_on_requests_that_can_fit(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(POOL("2") "," M1("1", "", "")), true, NOW);
	const char *b = m1_status(fx);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"state\":\"Granted\""));
	assert_null(strstr(b, "Unsatisfiable"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_L06_unsatisfiable_waits_without_retrying_until_a_budget_changes, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_L06_new_figures_are_written, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_L06_a_deadline_still_ends_the_wait, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_L06_no_condition_on_requests_that_can_fit, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
