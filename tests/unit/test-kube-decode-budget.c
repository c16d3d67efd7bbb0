/* kube/decode_budget.c: budgets that do not read are kept and marked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "kube/internal.h"
#include "tests/support/support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_invalid_budget_is_kept_and_marked(void **state)
{
	const char *json =
	    "{\"kind\":\"List\",\"items\":["
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"bad\",\"namespace\":\"d\"},\"spec\":{\"podSelector\":{"
	    "\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}}},"
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"none\",\"namespace\":\"d\"},\"spec\":{\"maxDisruptions\":1}},"
	    "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"pool\"},\"spec\":{\"nodeSelector\":{},\"maxDisruptedNodes\":"
	    "\"25%\",\"countUnavailableNodes\":false,\"freeze\":{\"enabled\":true,\"reason\":"
	    "\"peak\"}}}]}";
	struct kube_snapshot *s = ng_test_snapshot(json);
	size_t n;
	const struct kube_adb *a = kube_snapshot_adbs(s, &n);
	assert_int_equal(n, 2);
	assert_true(a[0].b.invalid);
	assert_non_null(strstr(ng_intern_str(kube_snapshot_pool(s), a[0].b.error, NULL),
			       "spec.podSelector.matchExpressions[0].operator"));
	assert_true(a[1].b.invalid);
	assert_non_null(strstr(ng_intern_str(kube_snapshot_pool(s), a[1].b.error, NULL),
			       "at least one of podSelector and pvcSelector"));
	const struct kube_ndb *d = kube_snapshot_ndbs(s, &n);
	assert_int_equal(n, 1);
	assert_false(d->b.invalid);
	assert_true(d->node_selector.present);
	assert_int_equal(d->node_selector.nreqs, 0);
	assert_true(d->max_disrupted.is_str);
	assert_false(d->count_unavailable);
	assert_true(d->b.frozen);
	assert_string_equal(ng_intern_str(kube_snapshot_pool(s), d->b.freeze_reason, NULL), "peak");
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_invalid_budget_is_kept_and_marked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
