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
		assert_int_equal(ng_regex_get_label_matcher(regex, strlen(regex), &re, NULL),
				 NG_OK);
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
	/* Anchored as Prometheus anchors it: NodeDownSoon does not match NodeDown|Etcd.*. */
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "NodeDown|Etcd.*", &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 2);
	assert_string_equal(a.names[0], "NodeDown");
	assert_string_equal(a.names[1], "EtcdHighLatency");
	/* Nothing firing matches: clear. */
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "KubeAPIDown", &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 0);
	assert_int_equal(parse(GATE_ALERT_ALERTS,
			       "{\"status\":\"success\",\"data\":{\"alerts\":[]}}", ".*", &a, NULL),
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
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, ".*", &a, NULL), NG_OK);
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
		ng_status st = parse(cases[i].q, cases[i].text, ".*", &a, &word);
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

/* One firing alert named @json_name (a JSON string's inside), asked with @regex. */
static uint32_t firing_with(const char *json_name, const char *regex)
{
	char answer[4096];
	ng_fmt(answer, sizeof(answer),
	       "{\"status\":\"success\",\"data\":{\"alerts\":["
	       "{\"labels\":{\"alertname\":\"%s\"},\"state\":\"firing\"}]}}",
	       json_name);
	struct gate_alert_answer a;
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, regex, &a, NULL), NG_OK);
	return a.nfiring;
}

/* Prometheus 3 matches a label value with "^(?s:" re ")$": `.` matches newlines. A firing alert
 * whose name held a newline once slipped past `.*` (anchored as ^(?:.*)$ without (?s)). */
static void test_alert_names_match_across_newlines(void **state)
{
	assert_int_equal(firing_with("Node\\nDown", ".*"), 1);
	assert_int_equal(firing_with("Node\\nDown", "Node.*"), 1);
	assert_int_equal(firing_with("Node\\r\\nDown", "Node.Down|Node..Down"), 1);
	assert_int_equal(firing_with("\\n", ".+"), 1);
	/* $ is the end of the name, not a line's: NodeDown does not match "NodeDown\n", as in
	 * Prometheus (Go's $ without (?m)); .* does. */
	assert_int_equal(firing_with("NodeDown\\n", "NodeDown"), 0);
	assert_int_equal(firing_with("NodeDown\\n", "NodeDown.*"), 1);
	/* Control characters are characters like any other. */
	assert_int_equal(firing_with("Node\\u0001Down", "Node.Down"), 1);
	assert_int_equal(firing_with("Node\\u0001Down", "NodeDown"), 0);
}

static void test_alert_names_match_whole(void **state)
{
	assert_int_equal(firing_with("KubeNodeDown", "Node.*"), 0);
	assert_int_equal(firing_with("NodeDown", "Down"), 0);
	assert_int_equal(firing_with("NodeDownSoon", "NodeDown"), 0);
	/* An alternation is inside the anchors: each branch matches a whole name. */
	assert_int_equal(firing_with("xNodeDown", "Etcd.*|NodeDown"), 0);
	assert_int_equal(firing_with("EtcdHighLatency", "Etcd.*|NodeDown"), 1);
	assert_int_equal(firing_with("NodeDown", "Etcd.*|NodeDown"), 1);
	/* Anchors written by the user are redundant, as in Prometheus. */
	assert_int_equal(firing_with("NodeDown", "^NodeDown$"), 1);
	/* A pattern cannot reach outside the group: it must compile on its own. */
	struct ng_regex *re = NULL;
	assert_int_not_equal(ng_regex_get_label_matcher("\\Qx", 3, &re, NULL), NG_OK);
	assert_null(re);
	assert_int_not_equal(ng_regex_get_label_matcher("a)|(b", 5, &re, NULL), NG_OK);
	assert_int_not_equal(ng_regex_get_label_matcher("(?x)a#", 6, &re, NULL), NG_OK);
}

static void test_names_that_cannot_be_matched_safely_count(void **state)
{
	struct ng_regex *re = NULL;
	assert_int_equal(ng_regex_get_label_matcher("NodeDown", 8, &re, NULL), NG_OK);
	assert_true(gate_alert_name_counts(re, "NodeDown", 8));
	assert_false(gate_alert_name_counts(re, "EtcdDown", 8));
	/* Not UTF-8: counted whatever the pattern (the JSON reader refuses such an answer
	 * before, as an error for failurePolicy; this is the second line). */
	assert_true(gate_alert_name_counts(re, "\xff\xfeNode", 6));
	assert_true(gate_alert_name_counts(re, "Node\xc3", 5));
	/* Over the length bound: counted without a match; at the bound, matched. */
	char *name = malloc(GATE_ALERT_NAME_MAX_BYTES + 1);
	assert_non_null(name);
	memset(name, 'x', GATE_ALERT_NAME_MAX_BYTES + 1);
	assert_false(gate_alert_name_counts(re, name, GATE_ALERT_NAME_MAX_BYTES));
	assert_true(gate_alert_name_counts(re, name, GATE_ALERT_NAME_MAX_BYTES + 1));
	ng_regex_put(re);
	/* A match the engine's bounds stop: counted. */
	assert_int_equal(ng_regex_get_label_matcher("(x|xx)*(y|z)", 12, &re, NULL), NG_OK);
	bool matched = true;
	assert_int_equal(ng_regex_match(re, name, 60, &matched, NULL), NG_ELIMIT);
	assert_true(gate_alert_name_counts(re, name, 60));
	ng_regex_put(re);
	/* Through the answer: an overlong firing alert counts, named by its first bytes. */
	char *answer = malloc(GATE_ALERT_NAME_MAX_BYTES + 256);
	assert_non_null(answer);
	ng_fmt(answer, GATE_ALERT_NAME_MAX_BYTES + 256,
	       "{\"status\":\"success\",\"data\":{\"alerts\":[{\"labels\":{\"alertname\":\"%.*s\"},"
	       "\"state\":\"firing\"}]}}",
	       (int)(GATE_ALERT_NAME_MAX_BYTES + 1), name);
	struct gate_alert_answer a;
	assert_int_equal(parse(GATE_ALERT_ALERTS, answer, "NodeDown", &a, NULL), NG_OK);
	assert_int_equal(a.nfiring, 1);
	assert_memory_equal(a.names[0], "xxxx", 4);
	free(answer);
	free(name);
	/* An answer with bytes that are not UTF-8 is an error, never "clear". */
	const char bad[] = "{\"status\":\"success\",\"data\":{\"alerts\":[{\"labels\":"
			   "{\"alertname\":\"\xff\"},\"state\":\"firing\"}]}}";
	const char *word = NULL;
	assert_int_equal(parse(GATE_ALERT_ALERTS, bad, "NodeDown", &a, &word), NG_EPARSE);
	assert_string_equal(word, "answer not JSON");
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
	    cmocka_unit_test(test_alert_names_match_across_newlines),
	    cmocka_unit_test(test_alert_names_match_whole),
	    cmocka_unit_test(test_names_that_cannot_be_matched_safely_count),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	ng_regex_teardown();
	return rc;
}
