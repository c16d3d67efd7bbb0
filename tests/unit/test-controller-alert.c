/* controller/alert.h: the alert gate's reading of Prometheus's answers (an instant query's
 * vector, the list of alerts) and the reason a held request gives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/regex.h"
#include "controller/alert.h"

#include <stdlib.h>
#include <string.h>

static ng_status parse(enum gate_alert_question q, const char *text, const char *regex,
		       struct gate_alert_answer *ret, const char **ret_word)
{
	struct ng_regex *re = NULL;
	if (regex)
		assert_int_equal(ng_regex_get(regex, strlen(regex), &re, NULL), NG_OK);
	ng_status st = gate_alert_parse(q, text, strlen(text), re, ret, ret_word);
	ng_regex_put(re);
	return st;
}

static void reason_of(const struct gate_alert_answer *a, char *out, size_t cap)
{
	gate_alert_reason(a, out, cap);
}

static void test_an_empty_vector_is_clear(void **state)
{
	struct gate_alert_answer a;
	assert_int_equal(parse(GATE_ALERT_QUERY,
			       "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
			       "\"result\":[]}}",
			       NULL, &a, NULL),
			 NG_OK);
	assert_int_equal(a.nfiring, 0);
	assert_int_equal(a.nnames, 0);
}

static void test_a_vector_names_each_sample_by_alertname_else_its_metric(void **state)
{
	struct gate_alert_answer a;
	const char *answer =
	    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
	    "{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"NodeDown\",\"alertstate\":"
	    "\"firing\"},\"value\":[1764000000,\"1\"]},"
	    "{\"metric\":{\"alertname\":\"EtcdHighLatency\"},\"value\":[1764000000,\"1\"]},"
	    "{\"metric\":{\"alertname\":\"NodeDown\",\"instance\":\"n2\"},\"value\":[1,\"1\"]},"
	    "{\"metric\":{\"__name__\":\"up\",\"job\":\"etcd\"},\"value\":[1,\"0\"]}]}}";
	assert_int_equal(parse(GATE_ALERT_QUERY, answer, NULL, &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 4);
	assert_int_equal(a.nnames, 3); /* NodeDown twice is one name */
	assert_string_equal(a.names[0], "NodeDown");
	assert_string_equal(a.names[1], "EtcdHighLatency");
	assert_string_equal(a.names[2], "up{job=\"etcd\"}");
	char r[1024];
	reason_of(&a, r, sizeof(r));
	assert_string_equal(
	    r, "alert gate: 4 alerts firing: NodeDown, EtcdHighLatency, up{job=\"etcd\"}");
}

static void test_alerts_count_only_firing_ones_whose_name_matches(void **state)
{
	struct gate_alert_answer a;
	const char *answer =
	    "{\"status\":\"success\",\"data\":{\"alerts\":["
	    "{\"labels\":{\"alertname\":\"NodeDown\"},\"state\":\"firing\",\"activeAt\":\"x\"},"
	    "{\"labels\":{\"alertname\":\"NodeDownSoon\"},\"state\":\"firing\"},"
	    "{\"labels\":{\"alertname\":\"NodeDown\"},\"state\":\"pending\"},"
	    "{\"labels\":{\"alertname\":\"EtcdHighLatency\"},\"state\":\"firing\"},"
	    "{\"labels\":{\"severity\":\"page\"},\"state\":\"firing\"},"
	    "{\"labels\":{\"alertname\":\"Watchdog\"},\"state\":\"firing\"}]}}";
	/* Anchored as the gate anchors it: NodeDownSoon does not match ^(?:NodeDown|Etcd.*)$. */
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "^(?:NodeDown|Etcd.*)$", &a, NULL),
			 NG_OK);
	assert_int_equal(a.nfiring, 2);
	assert_string_equal(a.names[0], "NodeDown");
	assert_string_equal(a.names[1], "EtcdHighLatency");
	/* Nothing firing matches: clear. */
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "^(?:KubeAPIDown)$", &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 0);
	assert_int_equal(parse(GATE_ALERT_ALERTS,
			       "{\"status\":\"success\",\"data\":{\"alerts\":[]}}", "^(?:.*)$", &a,
			       NULL),
			 NG_OK);
	assert_int_equal(a.nfiring, 0);
}

static void test_names_are_sanitized_and_bounded(void **state)
{
	struct gate_alert_answer a;
	char answer[2048];
	char longname[200];
	memset(longname, 'A', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ng_fmt(answer, sizeof(answer),
	       "{\"status\":\"success\",\"data\":{\"alerts\":["
	       "{\"labels\":{\"alertname\":\"Bad<script>\\t\\u00e9\"},\"state\":\"firing\"},"
	       "{\"labels\":{\"alertname\":\"%s\"},\"state\":\"firing\"}]}}",
	       longname);
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "^(?:.*)$", &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 2);
	/* '<', '>', tab and each byte of é become '?'. */
	assert_string_equal(a.names[0], "Bad?script????");
	assert_int_equal(strlen(a.names[1]), GATE_ALERT_NAME_BYTES - 1);
	assert_memory_equal(a.names[1] + GATE_ALERT_NAME_BYTES - 4, "...", 3);
}

static void test_a_reason_lists_as_many_names_as_fit_then_how_many_more(void **state)
{
	struct gate_alert_answer a;
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(ng_buf_puts(&b, "{\"status\":\"success\",\"data\":{\"resultType\":"
					 "\"vector\",\"result\":["),
			 NG_OK);
	for (int i = 0; i < 40; i++)
		assert_int_equal(ng_buf_printf(&b,
					       "%s{\"metric\":{\"alertname\":\"Alert%02d"
					       "WithAFairlyLongName\"}}",
					       i ? "," : "", i),
				 NG_OK);
	assert_int_equal(ng_buf_puts(&b, "]}}"), NG_OK);
	assert_int_equal(gate_alert_parse(GATE_ALERT_QUERY, b.data, b.len, NULL, &a, NULL), NG_OK);
	ng_buf_finish(&b);
	assert_int_equal(a.nfiring, 40);
	assert_int_equal(a.nnames, GATE_ALERT_NAMES);
	assert_int_equal(a.nmore, 40 - GATE_ALERT_NAMES);
	char r[1024];
	reason_of(&a, r, sizeof(r));
	/* 26 bytes a name: seven fit in 200, the other 33 are counted. */
	assert_non_null(strstr(r, "alert gate: 40 alerts firing: Alert00WithAFairlyLongName, "));
	assert_non_null(strstr(r, "Alert06WithAFairlyLongName and 33 more"));
	assert_null(strstr(r, "Alert07"));
	assert_true(strlen(r) < 300);
	/* One alert: singular. */
	struct gate_alert_answer one = {.nfiring = 1, .nnames = 1};
	memcpy(one.names[0], "NodeDown", 9);
	reason_of(&one, r, sizeof(r));
	assert_string_equal(r, "alert gate: 1 alert firing: NodeDown");
}

static void test_bad_answers_are_errors_in_fixed_words(void **state)
{
	static const struct {
		enum gate_alert_question q;
		const char *text;
		ng_status st;
		const char *word;
	} cases[] = {
	    {GATE_ALERT_QUERY, "<html>proxy error SECRET</html>", NG_EPARSE, "answer not JSON"},
	    {GATE_ALERT_QUERY, "", NG_EPARSE, "answer not JSON"},
	    {GATE_ALERT_QUERY,
	     "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"SECRET\"}", NG_EPARSE,
	     "Prometheus reported an error"},
	    {GATE_ALERT_QUERY, "{\"data\":{}}", NG_EPARSE, "answer not understood"},
	    {GATE_ALERT_QUERY, "[1,2]", NG_EPARSE, "answer not understood"},
	    {GATE_ALERT_QUERY,
	     "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}}",
	     NG_EPARSE, "answer not understood"},
	    {GATE_ALERT_QUERY,
	     "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[1]}}",
	     NG_EPARSE, "answer not understood"},
	    {GATE_ALERT_QUERY,
	     "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
	     "[]}]}}",
	     NG_EPARSE, "answer not understood"},
	    {GATE_ALERT_ALERTS, "{\"status\":\"success\",\"data\":{\"alerts\":{}}}", NG_EPARSE,
	     "answer not understood"},
	    {GATE_ALERT_ALERTS, "{\"status\":\"success\",\"data\":{\"alerts\":[\"x\"]}}", NG_EPARSE,
	     "answer not understood"},
	    {GATE_ALERT_ALERTS, "{\"status\":\"success\",\"status\":\"success\"}", NG_EPARSE,
	     "answer not JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* A failed parse leaves the answer as it was. */
		struct gate_alert_answer a;
		memset(&a, 0xad, sizeof(a));
		const char *word = NULL;
		ng_status st = parse(cases[i].q, cases[i].text, "^(?:.*)$", &a, &word);
		if (st != cases[i].st || !word || strcmp(word, cases[i].word) != 0)
			fail_msg("case %zu: %s \"%s\"", i, ng_status_str(st), word ? word : "");
		assert_int_equal(a.nfiring, 0xadadadad);
	}
}

static void test_an_answer_over_the_bound_is_refused(void **state)
{
	size_t len = GATE_ALERT_MAX_BYTES + 1;
	char *big = malloc(len);
	assert_non_null(big);
	memset(big, ' ', len);
	struct gate_alert_answer a;
	const char *word = NULL;
	assert_int_equal(gate_alert_parse(GATE_ALERT_QUERY, big, len, NULL, &a, &word), NG_ELIMIT);
	assert_string_equal(word, "answer too large");
	free(big);
	/* Nesting past the JSON layer's depth bound. */
	char deep[400];
	memset(deep, '[', sizeof(deep));
	assert_int_equal(gate_alert_parse(GATE_ALERT_QUERY, deep, sizeof(deep), NULL, &a, &word),
			 NG_ELIMIT);
	assert_string_equal(word, "answer too large");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_an_empty_vector_is_clear),
	    cmocka_unit_test(test_a_vector_names_each_sample_by_alertname_else_its_metric),
	    cmocka_unit_test(test_alerts_count_only_firing_ones_whose_name_matches),
	    cmocka_unit_test(test_names_are_sanitized_and_bounded),
	    cmocka_unit_test(test_a_reason_lists_as_many_names_as_fit_then_how_many_more),
	    cmocka_unit_test(test_bad_answers_are_errors_in_fixed_words),
	    cmocka_unit_test(test_an_answer_over_the_bound_is_refused),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	ng_regex_teardown();
	return rc;
}
