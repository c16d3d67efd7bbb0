/* budgets/: the budget arithmetic of DESIGN.md §4 step 7 (shared/acceptance/gate.md M01-M09). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "budgets/budgets.h"
#include "common/intern.h"
#include "kube/records.h"

#include <string.h>

static struct bud_limits limits(const char *max, const char *min)
{
	struct bud_limits l = {0};
	if (max) {
		l.has_max = true;
		assert_int_equal(bud_int_or_percent_parse(max, strlen(max), &l.max, NULL), NG_OK);
	}
	if (min) {
		l.has_min = true;
		assert_int_equal(bud_int_or_percent_parse(min, strlen(min), &l.min, NULL), NG_OK);
	}
	return l;
}

static struct arith_case {
	const char *id, *max, *min;
	int64_t pool, before, added;
	bool ok;
	int64_t allowed;
} cases[] = {
    {"test_M01_budget_arithmetic", "1", "0", 34, 1, 1, false, 0},
    {"test_M02_budget_arithmetic", "3", "0", 10, 2, 1, true, 1},
    {"test_M03_budget_arithmetic", "10", "10", 12, 1, 1, true, 1}, /* 12 - 2 >= 10 */
    {"test_M04_budget_arithmetic", "10", "10", 5, 1, 1, false, 0}, /* 5 - 2 < 10 */
    {"test_M05_budget_arithmetic", "2", "0", 3, 0, 3, false, 2},   /* 3 > 2 */
    {"test_M06_budget_arithmetic", "2", "0", 3, 0, 2, true, 2},
    {"test_M07_budget_arithmetic", "10%", NULL, 5, 0, 1, true, 1}, /* ceil(0.5) = 1 */
    {"test_M08_budget_arithmetic", NULL, "50%", 5, 2, 1, false,
     0}, /* ceil(2.5) = 3 must stay; 5 - 3 < 3 */
    {"test_M09_budget_arithmetic", "1", NULL, 3, 1, 0, true,
     0}, /* the node asked for is already counted */
};

/* One row of the table, run as its own test named after the scenario. */
static void test_budget_arithmetic_row(void **state)
{
	const struct arith_case *k = *state;
	struct bud_limits l = limits(k->max, k->min);
	struct bud_check c;
	bud_check_limits(&l, k->pool, k->before, k->added, &c);
	if (c.ok != k->ok || c.allowed != k->allowed)
		fail_msg("%s: ok=%d allowed=%lld, expected ok=%d allowed=%lld", k->id, c.ok,
			 (long long)c.allowed, k->ok, (long long)k->allowed);
	assert_int_equal(c.after, k->before + k->added);
}

static void test_limits_in_node_counts(void **state)
{
	struct bud_limits l = limits("25%", "50%");
	struct bud_check c;
	bud_check_limits(&l, 10, 0, 0, &c);
	assert_int_equal(c.max, 3); /* ceil(2.5) */
	assert_int_equal(c.min, 5);
	assert_int_equal(c.allowed, 3);
	/* No limits at all: everything may go. */
	struct bud_limits none = {0};
	bud_check_limits(&none, 4, 1, 3, &c);
	assert_true(c.ok);
	assert_int_equal(c.allowed, 3);
	assert_int_equal(c.max, -1);
	/* An empty pool with max 0 holds for a request adding nothing. */
	struct bud_limits zero = limits("0", NULL);
	bud_check_limits(&zero, 0, 0, 0, &c);
	assert_true(c.ok);
	assert_int_equal(c.allowed, 0);
}

/* An IntOrString as the API server hands it: an integer, or a string (@s non-NULL). */
static ng_status from(struct ng_intern *pool, const char *s, int64_t i,
		      struct bud_int_or_percent *ret)
{
	struct kube_int_or_string v = {.set = true, .is_str = s != NULL, .i = i};
	if (s)
		assert_int_equal(ng_intern_add(pool, s, strlen(s), &v.str), NG_OK);
	return bud_int_or_percent_from(&v, pool, "spec.x", ret, NULL);
}

/* Restated from kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/intstr/
 * intstr_test.go TestGetIntFromIntOrPercent (GetScaledValueFromIntOrPercent), 7 of its 8 cases,
 * and TestGetIntFromIntOrString (getIntOrPercentValueSafely), its 9 cases: a string is a
 * percentage or an error, and a percentage scales up. nodegate scales only rounding up, as the
 * disruption controller does for minAvailable and maxUnavailable, so the round-down case ("90%"
 * of 95 down to 85) has no counterpart. Total 0 where the table leaves it unset. The rows after
 * the restated ones are nodegate's own: its budgets refuse what the API's validation of an
 * IntOrString percentage refuses (a sign, over 100%). */
static const struct intstr_case {
	const char *str; /* NULL: the integer @i */
	int64_t i, total;
	bool ok;
	int64_t scaled; /* rounding up; when ok */
} intstr_cases[] = {
    /* TestGetIntFromIntOrPercent */
    {NULL, 123, 0, true, 123},
    {"90%", 0, 100, true, 90},
    {"90%", 0, 95, true, 86},
    {"%", 0, 0, false, 0},
    {"90#", 0, 0, false, 0},
    {"#%", 0, 0, false, 0},
    {"90", 0, 0, false, 0},
    /* TestGetIntFromIntOrString */
    {NULL, 200, 0, true, 200},
    {"200", 0, 0, false, 0},
    {"30%0", 0, 0, false, 0},
    {"40%", 0, 0, true, 0},
    {"%", 0, 0, false, 0},
    {"a%", 0, 0, false, 0},
    {"a", 0, 0, false, 0},
    {"40#", 0, 0, false, 0},
    {"40%%", 0, 0, false, 0},
    /* nodegate's own */
    {"10", 0, 10, false, 0},
    {"abc%", 0, 10, false, 0},
    {"-10%", 0, 10, false, 0},
    {"+10%", 0, 10, false, 0},
    {"101%", 0, 10, false, 0},
    {NULL, -1, 10, false, 0},
    {"0%", 0, 10, true, 0},
    {"100%", 0, 7, true, 7},
    {"1%", 0, 1, true, 1},
    {"33%", 0, 10, true, 4},
    {"50%", 0, 5, true, 3},
};

static void test_int_or_percent_agrees_with_intstr(void **state)
{
	(void)state;
	struct ng_intern *pool = ng_intern_create();
	assert_non_null(pool);
	for (size_t i = 0; i < sizeof(intstr_cases) / sizeof(intstr_cases[0]); i++) {
		const struct intstr_case *k = &intstr_cases[i];
		struct bud_int_or_percent v = {.is_percent = true, .value = 0xad};
		ng_status st = from(pool, k->str, k->i, &v);
		if ((st == NG_OK) != k->ok)
			fail_msg("case %zu (%s): status %s", i, k->str ? k->str : "int",
				 ng_status_str(st));
		if (!k->ok) {
			/* A refused value leaves the output alone. */
			assert_true(v.is_percent);
			assert_int_equal(v.value, 0xad);
			continue;
		}
		if (bud_int_or_percent_scaled(&v, k->total) != k->scaled)
			fail_msg("case %zu (%s of %lld): %lld, want %lld", i,
				 k->str ? k->str : "int", (long long)k->total,
				 (long long)bud_int_or_percent_scaled(&v, k->total),
				 (long long)k->scaled);
	}
	ng_intern_destroy(pool);
}

int main(void)
{
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[NCASES + 2];
	for (size_t i = 0; i < NCASES; i++)
		tests[i] = (struct CMUnitTest){.name = cases[i].id,
					       .test_func = test_budget_arithmetic_row,
					       .initial_state = &cases[i]};
	tests[NCASES] = (struct CMUnitTest)cmocka_unit_test(test_limits_in_node_counts);
	tests[NCASES + 1] =
	    (struct CMUnitTest)cmocka_unit_test(test_int_or_percent_agrees_with_intstr);
	return _cmocka_run_group_tests("budgets-arith", tests, NCASES + 2, NULL, NULL);
}
