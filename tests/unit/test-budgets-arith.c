/* budgets/: the budget arithmetic of DESIGN.md §4 step 7 (shared/acceptance/gate.md M01-M09). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "budgets/budgets.h"

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

int main(void)
{
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[NCASES + 1];
	for (size_t i = 0; i < NCASES; i++)
		tests[i] = (struct CMUnitTest){.name = cases[i].id,
					       .test_func = test_budget_arithmetic_row,
					       .initial_state = &cases[i]};
	tests[NCASES] = (struct CMUnitTest)cmocka_unit_test(test_limits_in_node_counts);
	return _cmocka_run_group_tests("budgets-arith", tests, NCASES + 1, NULL, NULL);
}
