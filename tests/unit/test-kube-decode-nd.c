/* kube/decode_nd.c: NodeDisruption drain, operation, requestors and the fields that refuse. */
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

/* A NodeDisruption decoded on its own; the test fails on any error. */
static struct kube_one *one_nd(const char *json)
{
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	if (kube_one_parse(json, strlen(json), &one, &err) != NG_OK)
		fail_msg("%s: %s", json, err.msg);
	assert_non_null(kube_one_nd(one));
	return one;
}

static const char *str_of(const struct kube_one *one, uint32_t id)
{
	return ng_intern_str(kube_one_pool(one), id, NULL);
}

static void test_nd_drain_operation_requestors_and_creator(void **state)
{
	struct kube_one *one = one_nd(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd\",\"annotations\":{\"nodegate.io/created-by\":\"alice\"}},\"spec\":{"
	    "\"nodeNames\":[\"n1\"],\"startDate\":\"2026-01-02T03:04:05Z\",\"duration\":\"1h30m\","
	    "\"drain\":{\"cordon\":false,\"taint\":{\"key\":\"maint\",\"effect\":\"NoSchedule\"},"
	    "\"waitForPodCompletion\":{\"podSelector\":\"job=batch\",\"timeoutSeconds\":600},"
	    "\"evictionStrategy\":\"ForceDelete\",\"podSelector\":\"app in (a,b)\","
	    "\"podEvictionFilters\":[{\"byResourceNameRegex\":\"nvidia.com/.*\"},{}],"
	    "\"force\":true,\"deleteEmptyDir\":true,\"timeoutSeconds\":30,"
	    "\"skipWaitingForEviction\":true,\"waitForVolumeDetach\":false,"
	    "\"deadlineSeconds\":900,\"onDeadline\":\"Quarantine\"},"
	    "\"operation\":{\"waitForReboot\":true,\"jobTemplate\":{\"spec\":{\"b\":[1,2.5,"
	    "true,null],\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
	    "\"busybox\"}]}},\"a\":\"x\"}}},\"additionalRequestors\":[\"drainer\",\"ops\"]},"
	    "\"status\":{\"state\":\"Granted\",\"grantedAt\":\"2026-01-02T03:05:00Z\","
	    "\"disruptedNodes\":[\"n1\"],\"disruptedDisruptionBudgets\":[{\"reference\":{\"kind\":"
	    "\"NodeDisruptionBudget\",\"name\":\"pool\"},\"ok\":true,\"reason\":\"fits\"}]}}");
	const struct kube_nd *nd = kube_one_nd(one);
	const struct kube_nd_detail *x = nd->detail;
	assert_non_null(x);
	assert_int_equal(x->spec_error, NG_INTERN_NONE);
	assert_true(x->has_node_names && !x->has_node_selector);
	assert_string_equal(str_of(one, x->created_by), "alice");
	assert_int_equal(x->duration_ms, 90 * 60 * 1000);
	assert_true(x->start_ms > 0 && x->granted_ms == x->start_ms + 55000);
	const struct kube_nd_drain *d = &x->drain;
	assert_true(d->present && !d->cordon && d->has_taint && d->has_wait);
	assert_string_equal(str_of(one, d->taint.key), "maint");
	assert_int_equal(d->taint.val, NG_INTERN_NONE);
	assert_string_equal(str_of(one, d->taint.effect), "NoSchedule");
	assert_string_equal(d->wait_pod_selector, "job=batch");
	assert_int_equal(d->wait_timeout_s, 600);
	assert_int_equal(d->strategy, KUBE_DRAIN_FORCE_DELETE);
	assert_string_equal(d->pod_selector, "app in (a,b)");
	assert_int_equal(d->nfilters, 2);
	assert_string_equal(d->filters[0].by_resource_name_regex, "nvidia.com/.*");
	assert_null(d->filters[1].by_resource_name_regex);
	assert_true(d->force && d->delete_empty_dir && d->skip_waiting_for_eviction);
	assert_false(d->wait_for_volume_detach);
	assert_int_equal(d->timeout_s, 30);
	assert_int_equal(d->deadline_s, 900);
	assert_int_equal(d->on_deadline, KUBE_ON_DEADLINE_QUARANTINE);
	assert_true(x->operation.present && x->operation.wait_for_reboot);
	/* Keys sorted: equal templates are equal strings. */
	assert_string_equal(
	    x->operation.job_template,
	    "{\"spec\":{\"a\":\"x\",\"b\":[1,2.5,true,null],\"template\":{"
	    "\"spec\":{\"containers\":[{\"image\":\"busybox\",\"name\":\"c\"}]}}}}");
	assert_true(nd->additional_requestors);
	assert_int_equal(x->nmore_requestors, 2);
	assert_string_equal(str_of(one, x->more_requestors[1]), "ops");
	assert_int_equal(x->nverdicts, 1);
	assert_string_equal(str_of(one, x->verdicts[0].kind), "NodeDisruptionBudget");
	assert_int_equal(x->verdicts[0].ns, NG_INTERN_NONE);
	assert_true(x->verdicts[0].ok);
	assert_string_equal(x->verdicts[0].reason, "fits");
	kube_one_destroy(one);
	/* Without drain and operation: the defaults. */
	one = one_nd("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		     "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeSelector\":{}}}");
	x = kube_one_nd(one)->detail;
	assert_true(x->has_node_selector && !x->has_node_names);
	assert_true(!x->drain.present && x->drain.cordon && x->drain.wait_for_volume_detach);
	assert_int_equal(x->drain.strategy, KUBE_DRAIN_EVICT);
	assert_true(x->drain.timeout_s == -1 && x->drain.wait_timeout_s == -1);
	assert_true(x->drain.deadline_s == -1 && x->drain.on_deadline == KUBE_ON_DEADLINE_RETRY);
	assert_true(!x->operation.present && !x->operation.job_template);
	assert_true(x->created_by == NG_INTERN_NONE && x->duration_ms == -1);
	assert_int_equal(x->nmore_requestors, 0);
	kube_one_destroy(one);
}

/* Which fields make an operation privileged: the first one is named, for the refusal. */
static void test_operation_privileged_fields(void **state)
{
	(void)state;
	static const struct {
		const char *pod_spec, *field; /* NULL: not privileged */
	} cases[] = {
	    {"", NULL},
	    {"\"hostPID\":false,\"hostNetwork\":false,", NULL},
	    {"\"hostPID\":true,", "hostPID"},
	    {"\"hostNetwork\":true,", "hostNetwork"},
	    {"\"hostIPC\":true,", "hostIPC"},
	    {"\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"r\",\"hostPath\":{"
	     "\"path\":\"/\"}}],",
	     "volumes[1].hostPath"},
	    {"\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"securityContext\":{"
	     "\"privileged\":true}}],",
	     "initContainers[0].securityContext.privileged"},
	    {"\"ephemeralContainers\":[{\"name\":\"e\",\"image\":\"x\",\"securityContext\":{"
	     "\"allowPrivilegeEscalation\":true}}],",
	     "ephemeralContainers[0].securityContext.allowPrivilegeEscalation"},
	    {"\"securityContext\":{\"runAsUser\":0},", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n\"],"
		    "\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{%s"
		    "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}}}",
		    cases[i].pod_spec);
		struct kube_one *one = one_nd(json);
		const char *got = kube_one_nd(one)->detail->operation.privileged;
		if (!cases[i].field) {
			assert_null(got);
		} else {
			char want[160];
			(void)snprintf(want, sizeof(want),
				       "spec.operation.jobTemplate.spec.template.spec.%s",
				       cases[i].field);
			assert_non_null(got);
			assert_string_equal(got, want);
		}
		assert_int_equal(kube_one_nd(one)->detail->spec_error, NG_INTERN_NONE);
		kube_one_destroy(one);
	}
	/* Capabilities added to a container, and in a template. */
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	const char *ndt =
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"operation\":{\"jobTemplate\":{\"spec\":{"
	    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":"
	    "\"b\",\"image\":\"x\",\"securityContext\":{\"capabilities\":{\"drop\":[\"ALL\"],"
	    "\"add\":[\"SYS_BOOT\"]}}}]}}}}}}}";
	assert_int_equal(kube_one_parse(ndt, strlen(ndt), &one, &err), NG_OK);
	assert_non_null(kube_one_ndt(one));
	assert_string_equal(kube_one_ndt(one)->privileged,
			    "spec.operation.jobTemplate.spec.template.spec.containers[1]."
			    "securityContext.capabilities.add");
	assert_int_equal(kube_one_ndt(one)->error, NG_INTERN_NONE);
	kube_one_destroy(one);
	/* A template mounting a Secret is refused as a request's would be. */
	const char *bad =
	    "{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"operation\":{\"jobTemplate\":{\"spec\":{"
	    "\"template\":{\"spec\":{\"volumes\":[{\"name\":\"s\",\"secret\":{\"secretName\":"
	    "\"nodegate-ca\"}}],\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}}}}}}";
	assert_int_equal(kube_one_parse(bad, strlen(bad), &one, &err), NG_OK);
	assert_non_null(
	    strstr(str_of(one, kube_one_ndt(one)->error),
		   "spec.operation.jobTemplate.spec.template.spec.volumes[0].secret: not "
		   "allowed"));
	kube_one_destroy(one);
}

static void test_nd_malformed_drain_fields_name_the_field(void **state)
{
	static const struct {
		const char *spec, *why;
	} cases[] = {
	    {"\"drain\":7", "spec.drain: expected an object"},
	    {"\"activeDeadlineSeconds\":-1",
	     "spec.activeDeadlineSeconds: expected an integer of seconds in 0..315360000"},
	    {"\"activeDeadlineSeconds\":\"1h\"", "spec.activeDeadlineSeconds: expected"},
	    {"\"ttlSecondsAfterCompletion\":315360001",
	     "spec.ttlSecondsAfterCompletion: expected an integer of seconds in 0..315360000"},
	    {"\"drain\":{\"podSelector\":3}", "spec.drain.podSelector: expected a label selector"},
	    {"\"drain\":{\"waitForPodCompletion\":{\"podSelector\":[]}}",
	     "spec.drain.waitForPodCompletion.podSelector: expected a label selector string"},
	    {"\"drain\":{\"waitForPodCompletion\":{\"timeoutSeconds\":-1}}",
	     "spec.drain.waitForPodCompletion.timeoutSeconds: expected a non-negative"},
	    {"\"drain\":{\"podEvictionFilters\":{}}", "spec.drain.podEvictionFilters: expected"},
	    {"\"drain\":{\"podEvictionFilters\":[1]}",
	     "spec.drain.podEvictionFilters[0]: expected an object"},
	    {"\"drain\":{\"podEvictionFilters\":[{},{\"byResourceNameRegex\":5}]}",
	     "spec.drain.podEvictionFilters[1].byResourceNameRegex: expected a regular "
	     "expression of at most 1024 bytes"},
	    {"\"drain\":{\"taint\":{\"effect\":\"NoSchedule\"}}", "spec.drain.taint.key: required"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":\"Never\"}}",
	     "spec.drain.taint.effect: must be one of"},
	    {"\"drain\":{\"evictionStrategy\":\"Shred\"}", "spec.drain.evictionStrategy: must be"},
	    {"\"drain\":{\"cordon\":\"yes\"}", "spec.drain.cordon: expected true or false"},
	    {"\"drain\":{\"force\":1}", "spec.drain.force: expected true or false"},
	    {"\"drain\":{\"deleteEmptyDir\":null,\"timeoutSeconds\":1.5}",
	     "spec.drain.timeoutSeconds: expected a non-negative integer"},
	    {"\"drain\":{\"waitForVolumeDetach\":\"no\"}", "spec.drain.waitForVolumeDetach"},
	    {"\"drain\":{\"skipWaitingForEviction\":0}", "spec.drain.skipWaitingForEviction"},
	    {"\"drain\":{\"deadlineSeconds\":-5}",
	     "spec.drain.deadlineSeconds: expected a non-negative integer"},
	    {"\"drain\":{\"onDeadline\":\"Panic\"}",
	     "spec.drain.onDeadline: must be one of Retry, Release, Quarantine"},
	    {"\"drain\":{\"rules\":{}}", "spec.drain.rules: expected an array of at most 32 rules"},
	    {"\"drain\":{\"rules\":[1]}", "spec.drain.rules[0]: expected an object"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Drain\"},{\"behavior\":\"Skip\"},{}]}",
	     "spec.drain.rules[2].behavior: must be Drain, Skip or WaitCompleted"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Evict\"}]}",
	     "spec.drain.rules[0].behavior: must be Drain, Skip or WaitCompleted"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"WaitCompleted\",\"order\":0}]}",
	     "spec.drain.rules[0].order: only allowed with behavior Drain"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Drain\",\"order\":2147483648}]}",
	     "spec.drain.rules[0].order: expected an integer in -2147483648..2147483647"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Drain\",\"order\":1.5}]}",
	     "spec.drain.rules[0].order: expected an integer"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Skip\",\"namespaceSelector\":5}]}",
	     "spec.drain.rules[0].namespaceSelector: expected an object"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Skip\",\"podSelector\":{\"matchLabels\":"
	     "{\"-x\":\"y\"}}}]}",
	     "spec.drain.rules[0].podSelector.matchLabels"},
	    {"\"operation\":[]", "spec.operation: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccountName\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccountName: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccount\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}"
	     "}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccount: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"ca\",\"secret\":{\"secretName\":\"nodegate-ca\"}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].secret: not allowed: an "
	     "operation may not read Secrets"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"p\",\"projected\":{"
	     "\"sources\":[{\"configMap\":{\"name\":\"m\"}},{\"secret\":{\"name\":\"s\"}}]}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[1].projected.sources[1].secret:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"t\",\"projected\":{\"sources\":[{\"serviceAccountToken\":"
	     "{\"path\":\"t\"}}]}}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].projected.sources[0]."
	     "serviceAccountToken: not allowed: an operation gets no service account token"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"automountServiceAccountToken\":true,\"containers\":[{\"name\":\"c\",\"image\":"
	     "\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.automountServiceAccountToken: not "
	     "allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"env\":[{\"name\":\"K\","
	     "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].env[0].valueFrom."
	     "secretKeyRef: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"envFrom\":[{\"secretRef\":{"
	     "\"name\":\"s\"}}]}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.initContainers[0].envFrom[0].secretRef:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":\"x\"}", "spec.operation.jobTemplate: expected"},
	    {"\"operation\":{\"jobTemplate\":{}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required: at least one "
	     "container"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":null}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":7}}}",
	     "spec.operation.jobTemplate.spec.template: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":{}}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: expected an array"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[\"c\"]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0]: expected an object"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[1].name: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].image: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"a\",\"image\":\"\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].image: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"Main_1\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].name: 'Main_1' is not a "
	     "DNS-1123 label"},
	    {"\"drain\":{\"taint\":{\"key\":\"bad key\",\"effect\":\"NoSchedule\"}}",
	     "spec.drain.taint.key: invalid 'bad key': name part must consist of"},
	    {"\"drain\":{\"taint\":{\"key\":\"Example.com/k\",\"effect\":\"NoSchedule\"}}",
	     "spec.drain.taint.key: invalid 'Example.com/k': prefix part"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"value\":\"-v\",\"effect\":"
	     "\"NoSchedule\"}}",
	     "spec.drain.taint.value: invalid '-v': a valid label must be"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\"}}", "spec.drain.taint.effect: must be one of"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":7}}",
	     "spec.drain.taint.effect: must be one of"},
	    {"\"operation\":{\"waitForReboot\":\"x\"}", "spec.operation.waitForReboot"},
	    {"\"additionalRequestors\":\"me\"", "spec.additionalRequestors: expected an array"},
	    {"\"additionalRequestors\":[1]", "spec.additionalRequestors: expected an array"},
	    {"\"startDate\":\"tomorrow\"", "spec.startDate: expected an RFC 3339 time"},
	    {"\"duration\":\"5 minutes\"", "spec.duration: expected a duration"},
	    {"\"duration\":\"m\"", "spec.duration: expected a duration"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		(void)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n\"],%s}}",
		    cases[i].spec);
		/* The request stays readable (the gate never reads these); it says why. */
		struct kube_one *one = one_nd(json);
		const struct kube_nd_detail *x = kube_one_nd(one)->detail;
		const char *why = str_of(one, x->spec_error);
		if (x->spec_error == NG_INTERN_NONE || !strstr(why, cases[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].spec, why, cases[i].why);
		kube_one_destroy(one);
	}
}

/* spec.drain.rules: in their order, absent selectors not present (every pod, every namespace),
 * order 0 unless set, down to int32's least; more than 32 rules are refused. */
static void test_nd_drain_rules(void **state)
{
	(void)state;
	struct kube_one *one = one_nd(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n1\"],\"drain\":{\"rules\":[{"
	    "\"podSelector\":{\"matchLabels\":{\"app\":\"px\"}},\"namespaceSelector\":{"
	    "\"matchLabels\":{\"tier\":\"infra\"}},\"behavior\":\"Drain\",\"order\":-2147483648},"
	    "{\"behavior\":\"Skip\"},{\"behavior\":\"WaitCompleted\",\"order\":null}]}}}");
	const struct kube_nd_detail *x = kube_one_nd(one)->detail;
	assert_int_equal(x->spec_error, NG_INTERN_NONE);
	assert_int_equal(x->drain.nrules, 3);
	const struct kube_drain_rule *r = x->drain.rules;
	assert_int_equal(r[0].behavior, KUBE_DRAIN_BEHAVIOR_DRAIN);
	assert_int_equal(r[0].order, INT32_MIN);
	assert_true(r[0].pod_selector.present);
	assert_string_equal(str_of(one, r[0].pod_selector.reqs[0].key), "app");
	assert_string_equal(str_of(one, r[0].ns_selector.reqs[0].key), "tier");
	assert_int_equal(r[1].behavior, KUBE_DRAIN_BEHAVIOR_SKIP);
	assert_false(r[1].pod_selector.present);
	assert_false(r[1].ns_selector.present);
	assert_int_equal(r[2].behavior, KUBE_DRAIN_BEHAVIOR_WAIT_COMPLETED);
	assert_int_equal(r[2].order, 0);
	kube_one_destroy(one);
	/* 32 rules are the most */
	for (int n = 32; n <= 33; n++) {
		char json[2048];
		size_t len = (size_t)snprintf(
		    json, sizeof(json),
		    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		    "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n1\"],\"drain\":{"
		    "\"rules\":[");
		for (int i = 0; i < n; i++)
			len += (size_t)snprintf(json + len, sizeof(json) - len,
						"%s{\"behavior\":\"Drain\",\"order\":%d}",
						i ? "," : "", i);
		(void)snprintf(json + len, sizeof(json) - len, "]}}}");
		one = one_nd(json);
		x = kube_one_nd(one)->detail;
		if (n == 32) {
			assert_int_equal(x->spec_error, NG_INTERN_NONE);
			assert_int_equal(x->drain.nrules, 32);
			assert_int_equal(x->drain.rules[31].order, 31);
		} else {
			assert_string_equal(
			    str_of(one, x->spec_error),
			    "spec.drain.rules: expected an array of at most 32 rules");
		}
		kube_one_destroy(one);
	}
}

/* spec.activeDeadlineSeconds, spec.ttlSecondsAfterCompletion and status.expiresAt; absent
 * reads as -1 (0 is a value: no deadline, or at once). */
static void test_nd_lifecycle_fields(void **state)
{
	(void)state;
	struct kube_one *one = one_nd(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n1\"],\"activeDeadlineSeconds\":0,"
	    "\"ttlSecondsAfterCompletion\":600},\"status\":{\"state\":\"Granted\","
	    "\"grantedAt\":\"2026-01-02T03:05:00Z\",\"expiresAt\":\"2026-01-02T04:05:00.250Z\"}}");
	const struct kube_nd_detail *x = kube_one_nd(one)->detail;
	assert_int_equal(x->spec_error, NG_INTERN_NONE);
	assert_int_equal(x->active_deadline_s, 0);
	assert_int_equal(x->ttl_after_completion_s, 600);
	assert_int_equal(x->expires_ms - x->granted_ms, 3600250);
	kube_one_destroy(one);
	one = one_nd("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		     "\"metadata\":{\"name\":\"nd\"},\"spec\":{\"nodeNames\":[\"n1\"]}}");
	x = kube_one_nd(one)->detail;
	assert_int_equal(x->active_deadline_s, -1);
	assert_int_equal(x->ttl_after_completion_s, -1);
	assert_int_equal(x->expires_ms, 0);
	kube_one_destroy(one);
}

/* The label of a request autoRequest made and the annotations recording its use. */
static void test_nd_auto_request_marks(void **state)
{
	(void)state;
	struct kube_one *one = one_nd(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"auto-n1\",\"labels\":{\"nodegate.io/auto-request\":\"true\"},"
	    "\"annotations\":{\"nodegate.io/last-used\":\"2026-01-02T03:05:00.250Z\","
	    "\"nodegate.io/node-cordoned\":\"true\"}},\"spec\":{\"nodeNames\":[\"n1\"]}}");
	const struct kube_nd_detail *x = kube_one_nd(one)->detail;
	assert_true(x->auto_request);
	assert_true(x->node_cordoned);
	assert_int_equal(x->last_used_ms % 1000, 250);
	kube_one_destroy(one);
	one = one_nd("{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		     "\"metadata\":{\"name\":\"auto-n1\",\"labels\":{\"nodegate.io/auto-request\":"
		     "\"false\"},\"annotations\":{\"nodegate.io/last-used\":\"yesterday\","
		     "\"nodegate.io/node-cordoned\":\"yes\"}},\"spec\":{\"nodeNames\":[\"n1\"]}}");
	x = kube_one_nd(one)->detail;
	assert_false(x->auto_request);
	assert_false(x->node_cordoned);
	assert_int_equal(x->last_used_ms, 0);
	kube_one_destroy(one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nd_drain_operation_requestors_and_creator),
	    cmocka_unit_test(test_nd_malformed_drain_fields_name_the_field),
	    cmocka_unit_test(test_nd_drain_rules),
	    cmocka_unit_test(test_nd_lifecycle_fields),
	    cmocka_unit_test(test_nd_auto_request_marks),
	    cmocka_unit_test(test_operation_privileged_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
