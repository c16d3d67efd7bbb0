/* kube/decode_labels.c: LabelSelectors as the API server validates them. */
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

static void test_label_selector_json_validation(void **state)
{
	static const struct {
		const char *json;
		const char *msg; /* NULL: valid */
	} cases[] = {
	    {"{}", NULL},
	    {"{\"matchLabels\":{\"a\":\"b\"},\"matchExpressions\":[{\"key\":\"c\",\"operator\":"
	     "\"NotIn\",\"values\":[\"x\",\"y\"]},{\"key\":\"d\",\"operator\":\"Exists\"}]}",
	     NULL},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Foo\",\"values\":[\"x\"]}]}",
	     "sel.matchExpressions[0].operator: \"Foo\" is not one of In, NotIn, Exists, "
	     "DoesNotExist"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"In\",\"values\":[]}]}",
	     "sel.matchExpressions[0].values: must be non-empty when operator is In"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
	     "sel.matchExpressions[0].values: must be empty when operator is Exists"},
	    {"{\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
	     "is not one of In, NotIn, Exists, DoesNotExist"},
	    {"{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
	     "sel.matchExpressions[0].key: required"},
	    {"{\"matchLabels\":{\"bad key\":\"b\"}}",
	     "sel.matchLabels[bad key]: name part must consist of"},
	    {"{\"matchLabels\":{\"a\":\"-b\"}}", "sel.matchLabels[a]: a valid label must be"},
	    {"{\"matchLabels\":{\"Example.com/a\":\"b\"}}",
	     "prefix part a lowercase RFC 1123 subdomain"},
	    {"{\"matchLabels\":[]}", "sel.matchLabels: expected an object"},
	    {"[]", "sel: expected an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		cJSON *j = NULL;
		struct ng_err err = {0};
		assert_int_equal(
		    ng_json_parse(cases[i].json, strlen(cases[i].json), arena, &j, &err), NG_OK);
		struct kube_selector sel = {.nreqs = 0xad};
		ng_status st = kube_decode_selector(pool, arena, j, "sel", &sel, &err);
		if (!cases[i].msg) {
			assert_int_equal(st, NG_OK);
			assert_true(sel.present);
		} else {
			assert_int_not_equal(st, NG_OK);
			assert_int_equal(sel.nreqs, 0xad);
			if (!strstr(err.msg, cases[i].msg))
				fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
		}
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_label_selector_json_validation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
