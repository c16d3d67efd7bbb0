/* kube/strict: unknown fields in nodegate's objects refused against the CRDs' own schemas, as
 * kube-apiserver's strict field validation refuses them (check and plan input files). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kube/strict.h"

#include <stdio.h>
#include <string.h>

#define ND(spec)                                                                                   \
	"{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":{"      \
	"\"name\":\"a\",\"labels\":{\"x\":\"y\"}},\"spec\":" spec "}"

static void expect(const char *json, ng_status want, const char *msg)
{
	struct ng_err err = {0};
	ng_status got = kube_strict_check_json(json, strlen(json), &err);
	if (got != want || (msg && strcmp(err.msg, msg) != 0))
		fail_msg("%s: got %s \"%s\", expected %s \"%s\"", json, ng_status_str(got), err.msg,
			 ng_status_str(want), msg ? msg : "");
}

static void test_O58_unknown_fields_are_named_with_the_field_meant(void **state)
{
	(void)state;
	/* Known fields, maps (matchLabels), preserved subtrees (jobTemplate), lists of objects. */
	expect(ND("{\"nodeNames\":[\"n\"],\"priority\":3,\"nodeSelector\":{\"matchLabels\":{"
		  "\"any\":\"x\"}},\"operation\":{\"jobTemplate\":{\"spec\":{\"whatever\":1}}},"
		  "\"drain\":{\"podEvictionFilters\":[{\"byResourceNameRegex\":\"a\"}]}}"),
	       NG_OK, NULL);
	/* A status as kubectl prints it is checked too, and passes. */
	expect("{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"spec\":{},"
	       "\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"n\"]}}",
	       NG_OK, NULL);
	expect(ND("{\"nodeNames\":[\"n\"],\"priorty\":3}"), NG_EPARSE,
	       "spec.priorty: unknown field (did you mean priority?)");
	expect(ND("{\"drain\":{\"podEvictionFilters\":[{},{\"byResourceNameRegx\":\"a\"}]}}"),
	       NG_EPARSE,
	       "spec.drain.podEvictionFilters[1].byResourceNameRegx: unknown field (did you mean "
	       "byResourceNameRegex?)");
	/* Nothing close: no suggestion. A top-level unknown member is named alone. */
	expect(ND("{\"zzzzzzzz\":1}"), NG_EPARSE, "spec.zzzzzzzz: unknown field");
	expect("{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeGateConfig\",\"spce\":{}}",
	       NG_EPARSE, "spce: unknown field (did you mean spec?)");
	/* Keys that are not printable are shown as '?'. */
	expect(ND("{\"\\u0001x\":1}"), NG_EPARSE, "spec.\"?x\": unknown field");
	/* An odd key is quoted, so a message never starts with a space. */
	expect("{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\" spec\":{}}",
	       NG_EPARSE, "\" spec\": unknown field (did you mean spec?)");
}

static void test_other_kinds_and_groups_are_not_checked(void **state)
{
	(void)state;
	expect("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"},"
	       "\"anything\":1}",
	       NG_OK, NULL);
	expect("{\"apiVersion\":\"example.com/v1\",\"kind\":\"NodeDisruption\",\"x\":1}", NG_OK,
	       NULL);
	expect("[1,2]", NG_OK, NULL);
	expect("{\"a\":", NG_EPARSE, NULL);
	/* Every kind is generated from its CRD, and a where prefixes the message. */
	assert_int_equal(kube_ncrd_schemas, 6);
	struct kube_strict *s = kube_strict_create();
	assert_non_null(s);
	for (size_t i = 0; i < kube_ncrd_schemas; i++) {
		char json[256];
		struct ng_err err = {0};
		(void)snprintf(
		    json, sizeof(json),
		    "{\"apiVersion\":\"%s/v1alpha1\",\"kind\":\"%s\",\"spec\":{\"nope\":1}}",
		    kube_crd_schemas[i].group, kube_crd_schemas[i].kind);
		cJSON *root = cJSON_Parse(json);
		assert_int_equal(kube_strict_check(s, root, "items[4]", &err), NG_EPARSE);
		assert_string_equal(err.msg, "items[4]: spec.nope: unknown field");
		cJSON_Delete(root);
	}
	kube_strict_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_O58_unknown_fields_are_named_with_the_field_meant),
	    cmocka_unit_test(test_other_kinds_and_groups_are_not_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
