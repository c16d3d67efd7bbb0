/* common/memo: the written-but-not-yet-cached memo. Keys are remembered until their time, then
 * forgotten; forgetting is explicit when the cache shows the write; a full memo forgets the entry
 * that expires soonest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/memo.h"

#include <stdint.h>

static void remembers_until_its_time(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 8);
	assert_false(ng_memo_has(&m, 7, 0));
	assert_int_equal(ng_memo_next_expiry(&m), INT64_MAX);
	ng_memo_put(&m, 7, 1000);
	assert_true(ng_memo_has(&m, 7, 0));
	assert_true(ng_memo_has(&m, 7, 999));
	assert_false(ng_memo_has(&m, 8, 999));
	assert_int_equal(ng_memo_next_expiry(&m), 1000);
	assert_false(ng_memo_has(&m, 7, 1000));
	assert_int_equal(m.n, 0);
	ng_memo_free(&m);
}

static void a_second_put_keeps_the_later_time(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 8);
	ng_memo_put(&m, 1, 500);
	ng_memo_put(&m, 1, 2000);
	ng_memo_put(&m, 1, 100);
	assert_int_equal(m.n, 1);
	assert_true(ng_memo_has(&m, 1, 1999));
	assert_false(ng_memo_has(&m, 1, 2000));
	ng_memo_free(&m);
}

static void forget_when_the_cache_shows_it(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 8);
	ng_memo_put(&m, 1, 1000);
	ng_memo_put(&m, 2, 1000);
	ng_memo_forget(&m, 1);
	ng_memo_forget(&m, 99);
	assert_false(ng_memo_has(&m, 1, 0));
	assert_true(ng_memo_has(&m, 2, 0));
	ng_memo_free(&m);
	assert_false(ng_memo_has(&m, 2, 0));
}

static void a_full_memo_forgets_the_soonest(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 3);
	ng_memo_put(&m, 1, 3000);
	ng_memo_put(&m, 2, 1000);
	ng_memo_put(&m, 3, 2000);
	ng_memo_put(&m, 4, 4000);
	assert_int_equal(m.n, 3);
	assert_false(ng_memo_has(&m, 2, 0));
	assert_true(ng_memo_has(&m, 1, 0));
	assert_true(ng_memo_has(&m, 3, 0));
	assert_true(ng_memo_has(&m, 4, 0));
	assert_int_equal(ng_memo_next_expiry(&m), 2000);
	ng_memo_free(&m);
}

static void groups_and_clear(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 8);
	ng_memo_put_group(&m, 1, 10, 1000);
	ng_memo_put_group(&m, 2, 10, 2000);
	ng_memo_put_group(&m, 3, 20, 1000);
	assert_true(ng_memo_has_group(&m, 10, 0));
	assert_false(ng_memo_has_group(&m, 30, 0));
	assert_true(ng_memo_has_group(&m, 10, 1500));
	assert_false(ng_memo_has_group(&m, 20, 1500));
	ng_memo_forget(&m, 2);
	assert_false(ng_memo_has_group(&m, 10, 1500));
	ng_memo_put(&m, 4, 3000);
	ng_memo_clear(&m);
	assert_false(ng_memo_has(&m, 4, 0));
	assert_int_equal(ng_memo_next_expiry(&m), INT64_MAX);
	ng_memo_free(&m);
}

static void many_keys_grow_the_table(void **state)
{
	(void)state;
	struct ng_memo m;
	ng_memo_init(&m, 100);
	for (uint64_t k = 0; k < 100; k++)
		ng_memo_put(&m, k, 1000 + (int64_t)k);
	assert_int_equal(m.n, 100);
	ng_memo_expire(&m, 1050);
	assert_int_equal(m.n, 49);
	assert_false(ng_memo_has(&m, 50, 1050));
	assert_true(ng_memo_has(&m, 51, 1050));
	ng_memo_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(remembers_until_its_time),
	    cmocka_unit_test(a_second_put_keeps_the_later_time),
	    cmocka_unit_test(forget_when_the_cache_shows_it),
	    cmocka_unit_test(a_full_memo_forgets_the_soonest),
	    cmocka_unit_test(groups_and_clear),
	    cmocka_unit_test(many_keys_grow_the_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
