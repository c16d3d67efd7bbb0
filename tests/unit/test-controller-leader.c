/* controller/leader: configuration checks and a prompt stop when the API server is unreachable.
 * The election itself runs against the test API server in tests/e2e/test_leader.py. Loopback
 * only: the unreachable server is 127.0.0.1:1 (connection refused at once). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/clock.h"
#include "controller/leader.h"
#include "kube/config.h"

#include <curl/curl.h>
#include <string.h>
#include <time.h>

static struct kube_config kube = {
    .server = (char[]){"https://127.0.0.1:1"}, .token = (char[]){"t"}, .ns = (char[]){"default"}};

static struct leader_config valid(void)
{
	return (struct leader_config){.kube = &kube,
				      .ns = "nodegate",
				      .name = "nodegate-gate",
				      .identity = "host_1234",
				      .lease_duration_ms = 3000,
				      .renew_deadline_ms = 2000,
				      .retry_period_ms = 500};
}

static void test_rejects_bad_config(void **state)
{
	(void)state;
	struct {
		const char *what;
		struct leader_config cfg;
	} cases[] = {
	    {"no kube", valid()},     {"no ns", valid()},          {"bad name", valid()},
	    {"no identity", valid()}, {"short lease", valid()},    {"renew >= lease", valid()},
	    {"renew tight", valid()}, {"negative retry", valid()}, {"whole seconds", valid()},
	};
	cases[0].cfg.kube = NULL;
	cases[1].cfg.ns = NULL;
	cases[2].cfg.name = "Nodegate/../x";
	cases[3].cfg.identity = "";
	cases[4].cfg.lease_duration_ms = 999;
	cases[5].cfg.renew_deadline_ms = 3000;
	cases[6].cfg.retry_period_ms = 1700; /* 1.2 x 1700 = 2040 >= 2000 */
	cases[7].cfg.retry_period_ms = -1;
	/* 2999 ms is written as 2 s: a renew deadline of 2000 ms would not be shorter. */
	cases[8].cfg.lease_duration_ms = 2999;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_err err = {.status = NG_OK, .msg = "untouched"};
		struct leader *l = leader_start(&cases[i].cfg, &err);
		if (l) {
			leader_stop(l);
			fail_msg("%s: accepted", cases[i].what);
		}
		assert_int_equal(err.status, NG_EINVAL);
		assert_true(strncmp(err.msg, "leader: ", 8) == 0);
	}
	/* Null reterr is allowed. */
	struct leader_config c = valid();
	c.identity = NULL;
	assert_null(leader_start(&c, NULL));
}

static void test_defaults_accepted(void **state)
{
	(void)state;
	struct leader_config c = valid();
	c.lease_duration_ms = c.renew_deadline_ms = c.retry_period_ms = 0;
	struct ng_err err = {0};
	struct leader *l = leader_start(&c, &err);
	assert_non_null(l);
	leader_stop(l);
}

static void test_unreachable_not_leader_and_prompt_stop(void **state)
{
	(void)state;
	struct leader_config c = valid();
	struct ng_err err = {0};
	struct leader *l = leader_start(&c, &err);
	assert_non_null(l);
	const struct timespec ms300 = {.tv_sec = 0, .tv_nsec = 300 * 1000000L};
	nanosleep(&ms300, NULL);
	assert_false(leader_is_leader(l));
	assert_int_equal(leader_term(l), 0);
	int64_t t0 = ng_now_mono_us();
	leader_stop(l);
	/* A waiting thread wakes at once; a refused connect returns at once. */
	assert_true(ng_now_mono_us() - t0 < 1000 * 1000);
	leader_stop(NULL);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rejects_bad_config),
	    cmocka_unit_test(test_defaults_accepted),
	    cmocka_unit_test(test_unreachable_not_leader_and_prompt_stop),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
