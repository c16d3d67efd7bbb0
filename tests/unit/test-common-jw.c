/* common/jw (the JSON writer) and common/backoff (jitter and capped backoff). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/backoff.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/jw.h"

#include <string.h>

static void test_writer_commas_and_escapes(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "a", "q\"uote\\back\nline\x01");
	ng_jw_key(&w, "list");
	ng_jw_arr(&w);
	ng_jw_i64(&w, -3);
	ng_jw_bool(&w, true);
	ng_jw_null(&w);
	ng_jw_obj(&w);
	ng_jw_obj_end(&w);
	ng_jw_arr(&w);
	ng_jw_arr_end(&w);
	ng_jw_arr_end(&w);
	ng_jw_key(&w, "t");
	ng_jw_time(&w, 1764000000123);
	ng_jw_kstr(&w, "n", NULL);
	ng_jw_key(&w, "raw");
	ng_jw_raw(&w, "{\"x\":1}", 7);
	ng_jw_obj_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_OK);
	assert_string_equal(b.data, "{\"a\":\"q\\\"uote\\\\back\\nline\\u0001\",\"list\":[-3,true,"
				    "null,{},[]],\"t\":\"2025-11-24T16:00:00Z\",\"n\":null,"
				    "\"raw\":{\"x\":1}}");
	/* What it writes is JSON nodegate's own parser accepts. */
	cJSON *root = NULL;
	assert_int_equal(ng_json_parse(b.data, b.len, NULL, &root, NULL), NG_OK);
	cJSON_Delete(root);
	ng_buf_finish(&b);
}

static void test_writer_errors_are_sticky(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 8); /* too small for what follows */
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "key", "a value longer than the cap");
	ng_jw_ki64(&w, "k", 1);
	ng_jw_obj_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_ELIMIT);
	ng_buf_finish(&b);

	ng_buf_init(&b, 64);
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	assert_int_equal(ng_jw_finish(&w), NG_EINVAL); /* left open */
	ng_buf_reset(&b);
	ng_jw_init(&w, &b);
	ng_jw_arr_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_EINVAL); /* closed what was never opened */
	ng_buf_reset(&b);
	ng_jw_init(&w, &b);
	for (int i = 0; i <= NG_JW_MAX_DEPTH; i++)
		ng_jw_arr(&w);
	assert_int_equal(ng_jw_finish(&w), NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_writer_base64(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_arr(&w);
	ng_jw_base64(&w, "[{\"op\":\"add\"}]", 14);
	ng_jw_base64(&w, "", 0);
	ng_jw_base64(&w, "ab", 2);
	ng_jw_arr_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_OK);
	assert_string_equal(b.data, "[\"W3sib3AiOiJhZGQifV0=\",\"\",\"YWI=\"]");
	ng_buf_finish(&b);
	/* Over the cap: the error sticks like any other value's. */
	ng_buf_init(&b, 8);
	ng_jw_init(&w, &b);
	ng_jw_base64(&w, "0123456789", 10);
	assert_int_equal(ng_jw_finish(&w), NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_writer_value_from_another_encoder(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "a", "x");
	ng_jw_key(&w, "v");
	ng_jw_fail(&w, ng_buf_puts(ng_jw_value_buf(&w), "[1,2]"));
	ng_jw_ki64(&w, "n", 3);
	ng_jw_key(&w, "list");
	ng_jw_arr(&w);
	ng_jw_fail(&w, ng_buf_puts(ng_jw_value_buf(&w), "{}"));
	ng_jw_fail(&w, ng_buf_puts(ng_jw_value_buf(&w), "{}"));
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_OK);
	assert_string_equal(b.data, "{\"a\":\"x\",\"v\":[1,2],\"n\":3,\"list\":[{},{}]}");
	/* The encoder's error sticks; after an error there is no buffer to write into. */
	ng_buf_reset(&b);
	ng_jw_init(&w, &b);
	ng_jw_arr(&w);
	assert_non_null(ng_jw_value_buf(&w));
	ng_jw_fail(&w, NG_ELIMIT);
	ng_jw_fail(&w, NG_ENOMEM);
	assert_null(ng_jw_value_buf(&w));
	ng_jw_arr_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_ELIMIT);
	ng_buf_finish(&b);
}

/* An object extended with members of its own: commas only where members meet. */
static void test_writer_extends_an_object(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_arr(&w);
	ng_jw_obj_extend(&w, "{\"a\":1,\"b\":[2]}", 15);
	ng_jw_kstr(&w, "c", "x");
	ng_jw_obj_end(&w);
	ng_jw_obj_extend(&w, "{}", 2);
	ng_jw_kstr(&w, "c", "y");
	ng_jw_obj_end(&w);
	ng_jw_obj_extend(&w, "{}", 2);
	ng_jw_obj_end(&w);
	ng_jw_arr_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_OK);
	assert_string_equal(b.data, "[{\"a\":1,\"b\":[2],\"c\":\"x\"},{\"c\":\"y\"},{}]");
	/* Not an object: the error sticks. */
	ng_buf_reset(&b);
	ng_jw_init(&w, &b);
	ng_jw_obj_extend(&w, "[1]", 3);
	ng_jw_obj_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_EINVAL);
	ng_buf_finish(&b);
}

/* A document written in three pieces reads as one written whole. */
static void test_writer_resumes_a_document_in_pieces(void **state)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_ki64(&w, "n", 1);
	ng_jw_key(&w, "items");
	ng_jw_arr(&w);
	assert_int_equal(w.st, NG_OK);
	ng_jw_resume(&w, &b, 2, 1); /* the array is empty so far */
	ng_jw_i64(&w, 7);
	ng_jw_resume(&w, &b, 2, 3); /* it holds a member now */
	ng_jw_obj(&w);
	ng_jw_kbool(&w, "x", true);
	ng_jw_obj_end(&w);
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	assert_int_equal(ng_jw_finish(&w), NG_OK);
	assert_string_equal(b.data, "{\"n\":1,\"items\":[7,{\"x\":true}]}");
	ng_jw_resume(&w, &b, NG_JW_MAX_DEPTH + 1, 0);
	assert_int_equal(w.st, NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_backoff_doubles_to_the_cap(void **state)
{
	assert_int_equal(ng_backoff_ms(5000, 300000, 0), 5000);
	assert_int_equal(ng_backoff_ms(5000, 300000, 1), 10000);
	assert_int_equal(ng_backoff_ms(5000, 300000, 5), 160000);
	assert_int_equal(ng_backoff_ms(5000, 300000, 6), 300000);
	assert_int_equal(ng_backoff_ms(5000, 300000, 4000000000u), 300000);
	assert_int_equal(ng_backoff_ms(INT64_MAX / 2 + 1, INT64_MAX, 3), INT64_MAX);
}

static void test_jitter_stays_in_its_band_and_spreads(void **state)
{
	struct ng_rng r;
	ng_rng_seed(&r, "replica-a");
	int64_t lo = INT64_MAX, hi = 0;
	for (int i = 0; i < 10000; i++) {
		int64_t v = ng_jitter_ms(&r, 1000, 20, 20);
		assert_true(v >= 800 && v <= 1200);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		int64_t u = ng_jitter_ms(&r, 2000, 0, 120);
		assert_true(u >= 2000 && u <= 4400);
	}
	/* Spread over the band, not stuck at one value. */
	assert_true(lo < 850 && hi > 1150);
	assert_int_equal(ng_jitter_ms(&r, 0, 20, 20), 0);
	assert_int_equal(ng_jitter_ms(&r, 1, 20, 20), 1);
	/* Two replicas seeded differently disagree. */
	struct ng_rng a, b;
	ng_rng_seed(&a, "replica-a");
	ng_rng_seed(&b, "replica-b");
	int same = 0;
	for (int i = 0; i < 100; i++)
		same += ng_rng_next(&a) == ng_rng_next(&b);
	assert_true(same < 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_commas_and_escapes),
	    cmocka_unit_test(test_writer_errors_are_sticky),
	    cmocka_unit_test(test_writer_base64),
	    cmocka_unit_test(test_writer_value_from_another_encoder),
	    cmocka_unit_test(test_writer_resumes_a_document_in_pieces),
	    cmocka_unit_test(test_writer_extends_an_object),
	    cmocka_unit_test(test_backoff_doubles_to_the_cap),
	    cmocka_unit_test(test_jitter_stays_in_its_band_and_spreads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
