/* kube/decode_config.c: templates, remediations and NodeGateConfig. */
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

static const char *str_of(const struct kube_one *one, uint32_t id)
{
	return ng_intern_str(kube_one_pool(one), id, NULL);
}

/* The author annotations of templates and remediations, read for remediation's check. */
static void test_authors_of_templates_and_remediations(void **state)
{
	(void)state;
	static const char *const objs[] = {
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\",\"annotations\":{%s}},\"spec\":{}}",
	    "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"r\",\"annotations\":{%s}},\"spec\":{\"nodeSelector\":{},"
	    "\"rule\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]},"
	    "\"templateName\":\"t\"}}",
	};
	static const struct {
		const char *ann;
		const char *author; /* NULL: none */
		size_t ngroups;
	} cases[] = {
	    {"\"nodegate.io/created-by\":\"alice\",\"nodegate.io/created-by-groups\":"
	     "\"[\\\"ops\\\",\\\"system:authenticated\\\"]\"",
	     "alice", 2},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"[]\"", "bob",
	     0},
	    {"\"nodegate.io/created-by\":\"bob\"", NULL, 0},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"ops\"", NULL,
	     0},
	    {"\"nodegate.io/created-by\":\"bob\",\"nodegate.io/created-by-groups\":\"[1]\"", NULL,
	     0},
	    {"\"other\":\"x\"", NULL, 0},
	};
	for (size_t k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char json[1024];
			(void)snprintf(json, sizeof(json), objs[k], cases[i].ann);
			struct kube_one *one = NULL;
			struct ng_err err = {0};
			if (kube_one_parse(json, strlen(json), &one, &err) != NG_OK)
				fail_msg("%s: %s", json, err.msg);
			const struct kube_author *a =
			    k == 0 ? &kube_one_ndt(one)->author : &kube_one_nrem(one)->author;
			if (!cases[i].author) {
				assert_int_equal(a->name, NG_INTERN_NONE);
				assert_int_equal(a->ngroups, 0);
			} else {
				assert_string_equal(str_of(one, a->name), cases[i].author);
				assert_int_equal(a->ngroups, cases[i].ngroups);
				if (cases[i].ngroups == 2) {
					assert_string_equal(str_of(one, a->groups[0]), "ops");
					assert_string_equal(str_of(one, a->groups[1]),
							    "system:authenticated");
				}
			}
			kube_one_destroy(one);
		}
	}
}

/* A NodeGateConfig selector over the limit of requirements makes the config invalid, as a
 * malformed one does; it was refused as unreadable (NG_ELIMIT, with no message), so the cache
 * dropped the config and its healthHooks and eviction policy with it. */
static void test_ngc_selector_over_limit_is_invalid(void **state)
{
	static const char *const where[] = {"\"drain\":{\"protectedNamespaces\"",
					    "\"drain\":{\"protectedJobPods\"",
					    "\"controlPlane\":{\"selector\""};
	for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++) {
		struct ng_buf b;
		ng_buf_init(&b, 1u << 20);
		assert_int_equal(ng_buf_printf(&b,
					       "{\"kind\":\"NodeGateConfig\",\"apiVersion\":"
					       "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":"
					       "\"default\"},\"spec\":{\"eviction\":{\"mode\":"
					       "\"Off\"},%s:{\"matchLabels\":{",
					       where[k]),
				 NG_OK);
		for (int i = 0; i <= NG_MAX_SELECTOR_TERMS; i++)
			assert_int_equal(ng_buf_printf(&b, "%s\"k%d\":\"v\"", i ? "," : "", i),
					 NG_OK);
		assert_int_equal(ng_buf_puts(&b, "}}}}}"), NG_OK);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(b.data, b.len, &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_true(g->invalid);
		assert_int_equal(g->eviction_mode, KUBE_EVICTION_ENFORCE);
		assert_non_null(strstr(str_of(one, g->error), "more than 64 requirements"));
		kube_one_destroy(one);
		ng_buf_finish(&b);
	}
}

/* spec.lifecycle: each default present or not (a TTL of 0 is a value); one out of range makes
 * the config invalid, naming the field, and keeps neither. */
static void test_ngc_lifecycle_defaults(void **state)
{
	(void)state;
	static const struct {
		const char *lifecycle, *error;
		bool has_deadline, has_ttl;
		int64_t deadline_s, ttl_s;
	} cases[] = {
	    {"{}", NULL, false, false, 0, 0},
	    {"{\"defaultActiveDeadlineSeconds\":3600}", NULL, true, false, 3600, 0},
	    {"{\"defaultTTLSecondsAfterCompletion\":0}", NULL, false, true, 0, 0},
	    {"{\"defaultActiveDeadlineSeconds\":-5,\"defaultTTLSecondsAfterCompletion\":9}",
	     "spec.lifecycle.defaultActiveDeadlineSeconds: must be an integer of seconds in "
	     "0..315360000",
	     false, false, 0, 0},
	    {"{\"defaultTTLSecondsAfterCompletion\":\"1m\"}",
	     "spec.lifecycle.defaultTTLSecondsAfterCompletion: must be", false, false, 0, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char json[512];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"default\"},\"spec\":{\"lifecycle\":%s}}",
		    cases[k].lifecycle);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(json, strlen(json), &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_int_equal(g->invalid, cases[k].error != NULL);
		if (cases[k].error)
			assert_non_null(strstr(str_of(one, g->error), cases[k].error));
		assert_int_equal(g->has_default_deadline, cases[k].has_deadline);
		assert_int_equal(g->has_default_ttl, cases[k].has_ttl);
		if (g->has_default_deadline)
			assert_int_equal(g->default_deadline_s, cases[k].deadline_s);
		if (g->has_default_ttl)
			assert_int_equal(g->default_ttl_s, cases[k].ttl_s);
		kube_one_destroy(one);
	}
}

/* spec.drain.deadlineSeconds: requests' default drain deadline, 1..31536000; out of range makes
 * the config invalid, naming the field. */
static void test_ngc_drain_deadline(void **state)
{
	(void)state;
	static const struct {
		const char *drain, *error;
		int64_t deadline_s;
	} cases[] = {
	    {"{}", NULL, -1},
	    {"{\"deadlineSeconds\":900}", NULL, 900},
	    {"{\"deadlineSeconds\":0}",
	     "spec.drain.deadlineSeconds: must be an integer of seconds in 1..31536000", -1},
	    {"{\"deadlineSeconds\":\"15m\"}", "spec.drain.deadlineSeconds: must be", -1},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char json[512];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"default\"},\"spec\":{\"drain\":%s}}",
		    cases[k].drain);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(json, strlen(json), &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_int_equal(g->invalid, cases[k].error != NULL);
		if (cases[k].error)
			assert_non_null(strstr(str_of(one, g->error), cases[k].error));
		assert_int_equal(g->drain_deadline_s, cases[k].deadline_s);
		kube_one_destroy(one);
	}
}

/* spec.drain.rules of a NodeGateConfig: decoded in their order with their defaults; a malformed
 * rule makes the config invalid, naming the rule and its field, as a request's are checked. */
static void test_ngc_drain_rules(void **state)
{
	(void)state;
	static const struct {
		const char *rules, *error;
		uint16_t n;
	} cases[] = {
	    {"[{\"podSelector\":{\"matchLabels\":{\"app\":\"px\"}},\"behavior\":\"Drain\","
	     "\"order\":-100},{\"namespaceSelector\":{},\"behavior\":\"WaitCompleted\"},"
	     "{\"behavior\":\"Skip\"}]",
	     NULL, 3},
	    {"null", NULL, 0},
	    {"[{\"behavior\":\"Drain\"},{\"behavior\":\"drain\"}]",
	     "spec.drain.rules[1].behavior: must be Drain, Skip or WaitCompleted", 0},
	    {"[{\"behavior\":\"Skip\",\"order\":1}]",
	     "spec.drain.rules[0].order: only allowed with behavior Drain", 0},
	    {"[{\"behavior\":\"Drain\",\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\","
	     "\"operator\":\"Near\"}]}}]",
	     "spec.drain.rules[0].podSelector.matchExpressions[0]", 0},
	    {"{\"behavior\":\"Skip\"}", "spec.drain.rules: expected an array of at most 32 rules",
	     0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char json[768];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"default\"},\"spec\":{\"drain\":{\"rules\":%"
		    "s}}}",
		    cases[k].rules);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(json, strlen(json), &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		if (g->invalid != (cases[k].error != NULL) ||
		    (cases[k].error && !strstr(str_of(one, g->error), cases[k].error)))
			fail_msg("%s: invalid %d, \"%s\"", cases[k].rules, g->invalid,
				 g->invalid ? str_of(one, g->error) : "");
		if (!cases[k].error)
			assert_int_equal(g->ndrain_rules, cases[k].n);
		if (k == 0) {
			const struct kube_drain_rule *r = g->drain_rules;
			assert_int_equal(r[0].behavior, KUBE_DRAIN_BEHAVIOR_DRAIN);
			assert_int_equal(r[0].order, -100);
			assert_true(r[0].pod_selector.present);
			assert_int_equal(r[0].pod_selector.nreqs, 1);
			assert_false(r[0].ns_selector.present);
			assert_int_equal(r[1].behavior, KUBE_DRAIN_BEHAVIOR_WAIT_COMPLETED);
			assert_true(r[1].ns_selector.present);
			assert_int_equal(r[1].ns_selector.nreqs, 0);
			assert_int_equal(r[2].behavior, KUBE_DRAIN_BEHAVIOR_SKIP);
			assert_int_equal(r[2].order, 0);
		}
		kube_one_destroy(one);
	}
}

/* spec.eviction.autoRequestIdleSeconds: the default when absent; out of 1..86400 the config is
 * invalid, naming the field. */
static void test_ngc_auto_request_idle(void **state)
{
	(void)state;
	static const struct {
		const char *eviction, *error;
		int64_t idle_s;
	} cases[] = {
	    {"{\"autoRequest\":true}", NULL, 300},
	    {"{\"autoRequestIdleSeconds\":null}", NULL, 300},
	    {"{\"autoRequestIdleSeconds\":1}", NULL, 1},
	    {"{\"autoRequestIdleSeconds\":86400}", NULL, 86400},
	    {"{\"autoRequestIdleSeconds\":0}",
	     "spec.eviction.autoRequestIdleSeconds: must be an integer of seconds in 1..86400", 0},
	    {"{\"autoRequestIdleSeconds\":86401}", "spec.eviction.autoRequestIdleSeconds", 0},
	    {"{\"autoRequestIdleSeconds\":\"5m\"}", "spec.eviction.autoRequestIdleSeconds", 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char json[512];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"default\"},\"spec\":{\"eviction\":%s}}",
		    cases[k].eviction);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(json, strlen(json), &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_int_equal(g->invalid, cases[k].error != NULL);
		if (cases[k].error)
			assert_non_null(strstr(str_of(one, g->error), cases[k].error));
		else
			assert_int_equal(g->auto_request_idle_s, cases[k].idle_s);
		kube_one_destroy(one);
	}
}

/* spec.clusterAPI.enabled: gating on when absent or null, off only for false; a value that is
 * not a boolean, or a clusterAPI that is not an object, makes the config invalid, naming the
 * field. */
static void test_ngc_cluster_api(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *error;
		bool disabled;
	} cases[] = {
	    {"{}", NULL, false},
	    {"{\"clusterAPI\":null}", NULL, false},
	    {"{\"clusterAPI\":{}}", NULL, false},
	    {"{\"clusterAPI\":{\"enabled\":true}}", NULL, false},
	    {"{\"clusterAPI\":{\"enabled\":false}}", NULL, true},
	    {"{\"clusterAPI\":{\"enabled\":\"false\"}}",
	     "spec.clusterAPI.enabled: expected a boolean", false},
	    {"{\"clusterAPI\":true}", "spec.clusterAPI: expected an object", false},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char json[512];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"default\"},\"spec\":%s}",
		    cases[k].spec);
		struct kube_one *one = NULL;
		struct ng_err err = {0};
		assert_int_equal(kube_one_parse(json, strlen(json), &one, &err), NG_OK);
		const struct kube_ngc *g = kube_one_ngc(one);
		assert_int_equal(g->invalid, cases[k].error != NULL);
		if (cases[k].error)
			assert_non_null(strstr(str_of(one, g->error), cases[k].error));
		else
			assert_int_equal(g->capi_disabled, cases[k].disabled);
		kube_one_destroy(one);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_authors_of_templates_and_remediations),
	    cmocka_unit_test(test_ngc_selector_over_limit_is_invalid),
	    cmocka_unit_test(test_ngc_lifecycle_defaults),
	    cmocka_unit_test(test_ngc_drain_deadline),
	    cmocka_unit_test(test_ngc_auto_request_idle),
	    cmocka_unit_test(test_ngc_cluster_api),
	    cmocka_unit_test(test_ngc_drain_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
