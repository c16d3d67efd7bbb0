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

static const struct {
	const char *id, *max, *min;
	int64_t pool, before, added;
	bool ok;
	int64_t allowed;
} cases[] = {
    {"M01", "1", "0", 34, 1, 1, false, 0},
    {"M02", "3", "0", 10, 2, 1, true, 1},
    {"M03", "10", "10", 12, 1, 1, true, 1}, /* 12 - 2 >= 10 */
    {"M04", "10", "10", 5, 1, 1, false, 0}, /* 5 - 2 < 10 */
    {"M05", "2", "0", 3, 0, 3, false, 2},   /* 3 > 2 */
    {"M06", "2", "0", 3, 0, 2, true, 2},
    {"M07", "10%", NULL, 5, 0, 1, true, 1},  /* ceil(0.5) = 1 */
    {"M08", NULL, "50%", 5, 2, 1, false, 0}, /* ceil(2.5) = 3 must stay; 5 - 3 < 3 */
    {"M09", "1", NULL, 3, 1, 0, true, 0},    /* the node asked for is already counted */
};

static void test_M01_M09_budget_arithmetic(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bud_limits l = limits(cases[i].max, cases[i].min);
		struct bud_check c;
		bud_check_limits(&l, cases[i].pool, cases[i].before, cases[i].added, &c);
		if (c.ok != cases[i].ok || c.allowed != cases[i].allowed)
			fail_msg("%s: ok=%d allowed=%lld, expected ok=%d allowed=%lld", cases[i].id,
				 c.ok, (long long)c.allowed, cases[i].ok,
				 (long long)cases[i].allowed);
		assert_int_equal(c.after, cases[i].before + cases[i].added);
	}
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
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_M01_M09_budget_arithmetic),
	    cmocka_unit_test(test_limits_in_node_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
