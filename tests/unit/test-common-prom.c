/* common/prom: the exact text of the Prometheus exposition every /metrics series goes through. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/prom.h"

#include <string.h>

static void test_header_escapes_help(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	assert_int_equal(ng_prom_header(&b, "x_total", NG_PROM_COUNTER, "Calls, by result."),
			 NG_OK);
	assert_int_equal(ng_prom_header(&b, "y", NG_PROM_GAUGE, "a\\b\nc \"q\""), NG_OK);
	assert_int_equal(ng_prom_header(&b, "z_seconds", NG_PROM_HISTOGRAM, ""), NG_OK);
	assert_string_equal(b.data, "# HELP x_total Calls, by result.\n"
				    "# TYPE x_total counter\n"
				    "# HELP y a\\\\b\\nc \"q\"\n"
				    "# TYPE y gauge\n"
				    "# HELP z_seconds \n"
				    "# TYPE z_seconds histogram\n");
	ng_buf_finish(&b);
}

static void test_samples_and_label_escaping(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	const struct ng_prom_label one[] = {{"resource", "pods"}};
	const struct ng_prom_label three[] = {
	    {"namespace", "ns\"1\""}, {"name", "a\\b\nc"}, {"result", ""}};
	assert_int_equal(ng_prom_u64(&b, "up", NULL, 0, 1), NG_OK);
	assert_int_equal(ng_prom_u64(&b, "events_total", one, 1, UINT64_MAX), NG_OK);
	assert_int_equal(ng_prom_u64(&b, "calls_total", three, 3, 0), NG_OK);
	assert_int_equal(ng_prom_i64(&b, "expiry_seconds", NULL, 0, 1795622666), NG_OK);
	assert_int_equal(ng_prom_i64(&b, "offset", one, 1, -5), NG_OK);
	assert_string_equal(
	    b.data, "up 1\n"
		    "events_total{resource=\"pods\"} 18446744073709551615\n"
		    "calls_total{namespace=\"ns\\\"1\\\"\",name=\"a\\\\b\\nc\",result=\"\"} 0\n"
		    "expiry_seconds 1795622666\n"
		    "offset{resource=\"pods\"} -5\n");
	ng_buf_reset(&b);
	assert_int_equal(ng_prom_label_value(&b, "plain ünïcode"), NG_OK);
	assert_string_equal(b.data, "\"plain ünïcode\"");
	ng_buf_finish(&b);
}

static void test_histogram_text(void **state)
{
	static const double bounds[] = {0.00001, 0.005, 0.1, 2.5};
	const uint64_t buckets[] = {1, 0, 3, 2};
	struct ng_prom_hist_data h = {
	    .bounds = bounds, .buckets = buckets, .nbounds = 4, .count = 7, .sum = 1.2345678};
	const struct ng_prom_label wh[] = {{"webhook", "eviction"}};
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	assert_int_equal(ng_prom_histogram(&b, "d_seconds", NULL, 0, &h), NG_OK);
	assert_int_equal(ng_prom_histogram(&b, "d_seconds", wh, 1, &h), NG_OK);
	assert_string_equal(b.data, "d_seconds_bucket{le=\"1e-05\"} 1\n"
				    "d_seconds_bucket{le=\"0.005\"} 1\n"
				    "d_seconds_bucket{le=\"0.1\"} 4\n"
				    "d_seconds_bucket{le=\"2.5\"} 6\n"
				    "d_seconds_bucket{le=\"+Inf\"} 7\n"
				    "d_seconds_sum 1.234568\n"
				    "d_seconds_count 7\n"
				    "d_seconds_bucket{webhook=\"eviction\",le=\"1e-05\"} 1\n"
				    "d_seconds_bucket{webhook=\"eviction\",le=\"0.005\"} 1\n"
				    "d_seconds_bucket{webhook=\"eviction\",le=\"0.1\"} 4\n"
				    "d_seconds_bucket{webhook=\"eviction\",le=\"2.5\"} 6\n"
				    "d_seconds_bucket{webhook=\"eviction\",le=\"+Inf\"} 7\n"
				    "d_seconds_sum{webhook=\"eviction\"} 1.234568\n"
				    "d_seconds_count{webhook=\"eviction\"} 7\n");
	ng_buf_finish(&b);
}

static void test_atomic_histogram(void **state)
{
	static const double bounds[] = {0.0001, 0.001, 1};
	struct ng_prom_hist h;
	memset(&h, 0xad, sizeof(h)); /* init must not rely on zeroed storage */
	ng_prom_hist_init(&h, bounds, 3);
	ng_prom_hist_observe_us(&h, 100);     /* exactly on a bound: that bucket */
	ng_prom_hist_observe_us(&h, 101);     /* just above: the next */
	ng_prom_hist_observe_us(&h, -3);      /* a clock step back: first bucket, 0 in the sum */
	ng_prom_hist_observe_us(&h, 2000000); /* above every bound: only +Inf */
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	const struct ng_prom_label l[] = {{"webhook", "budget"}};
	assert_int_equal(ng_prom_hist_render(&b, "a_seconds", l, 1, &h), NG_OK);
	assert_string_equal(b.data, "a_seconds_bucket{webhook=\"budget\",le=\"0.0001\"} 2\n"
				    "a_seconds_bucket{webhook=\"budget\",le=\"0.001\"} 3\n"
				    "a_seconds_bucket{webhook=\"budget\",le=\"1\"} 3\n"
				    "a_seconds_bucket{webhook=\"budget\",le=\"+Inf\"} 4\n"
				    "a_seconds_sum{webhook=\"budget\"} 2.000201\n"
				    "a_seconds_count{webhook=\"budget\"} 4\n");
	ng_buf_finish(&b);
}

static void test_counter_helpers(void **state)
{
	_Atomic uint64_t c;
	atomic_init(&c, 0);
	ng_prom_add(&c, 2);
	ng_prom_add(&c, 40);
	assert_int_equal(ng_prom_get(&c), 42);
}

static void test_buffer_cap_is_reported(void **state)
{
	static const double bounds[] = {1};
	const uint64_t buckets[] = {1};
	struct ng_prom_hist_data h = {
	    .bounds = bounds, .buckets = buckets, .nbounds = 1, .count = 1};
	struct ng_buf b;
	ng_buf_init(&b, 16);
	assert_int_equal(ng_prom_header(&b, "name", NG_PROM_GAUGE, "long enough to overflow"),
			 NG_ELIMIT);
	ng_buf_reset(&b);
	assert_int_equal(ng_prom_u64(&b, "a_rather_long_name", NULL, 0, 1), NG_ELIMIT);
	ng_buf_reset(&b);
	assert_int_equal(ng_prom_histogram(&b, "h", NULL, 0, &h), NG_ELIMIT);
	assert_true(b.len <= 16);
	ng_buf_finish(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header_escapes_help),
	    cmocka_unit_test(test_samples_and_label_escaping),
	    cmocka_unit_test(test_histogram_text),
	    cmocka_unit_test(test_atomic_histogram),
	    cmocka_unit_test(test_counter_helpers),
	    cmocka_unit_test(test_buffer_cap_is_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
