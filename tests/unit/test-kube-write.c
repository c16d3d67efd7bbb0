/* kube/write: the bodies the toolkit sends, the preconditions they carry, and how answers are
 * classified — through a kube_client whose transport is the in-memory fake API server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/jw.h"
#include "kube/client.h"
#include "kube/write.h"
#include "tests/support/fake-api.h"

#include <string.h>

struct fx {
	struct fake_api api;
	struct kube_client *c;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static void granted(struct ng_jw *w, void *ctx)
{
	ng_jw_kstr(w, "state", ctx);
}

static void test_status_patch_carries_the_resource_version(void **state)
{
	struct fx *fx = *state;
	struct kube_write_result r;
	const struct kube_ref nd = {KUBE_KIND_ND, NULL, "maint-1"};
	kube_patch_status(fx->c, &nd, "42", granted, (void *)"Granted", &r);
	assert_int_equal(r.outcome, KUBE_WRITE_OK);
	assert_int_equal(r.http, 200);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_non_null(q);
	assert_string_equal(q->path, "/apis/nodegate.io/v1alpha1/nodedisruptions/maint-1/status");
	assert_string_equal(q->content_type, "application/merge-patch+json");
	assert_string_equal(q->body,
			    "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"state\":"
			    "\"Granted\"}}");
	/* Budget status is written unconditionally, in the budget's namespace. */
	const struct kube_ref adb = {KUBE_KIND_ADB, "team-a", "db"};
	kube_patch_status(fx->c, &adb, NULL, granted, (void *)"x", &r);
	q = fake_api_find(&fx->api, "PATCH", "applicationdisruptionbudgets", 0);
	assert_string_equal(
	    q->path, "/apis/nodegate.io/v1alpha1/namespaces/team-a/applicationdisruptionbudgets/db/"
		     "status");
	assert_string_equal(q->body, "{\"status\":{\"state\":\"x\"}}");
	/* A status the caller already wrote (and hashed) goes out as it is. */
	kube_patch_status_json(fx->c, &adb, NULL, "{\"watchedNodeCount\":3}", 22, &r);
	q = fake_api_find(&fx->api, "PATCH", "applicationdisruptionbudgets", 1);
	assert_string_equal(q->body, "{\"status\":{\"watchedNodeCount\":3}}");
}

static void test_outcomes_are_classified(void **state)
{
	struct fx *fx = *state;
	static const struct {
		long http;
		bool fail;
		enum kube_write_outcome want;
	} cases[] = {
	    {201, false, KUBE_WRITE_OK},      {409, false, KUBE_WRITE_CONFLICT},
	    {404, false, KUBE_WRITE_GONE},    {403, false, KUBE_WRITE_REFUSED},
	    {422, false, KUBE_WRITE_REFUSED}, {500, false, KUBE_WRITE_FAILED},
	    {0, true, KUBE_WRITE_FAILED},
	};
	const struct kube_ref nd = {KUBE_KIND_ND, NULL, "x"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_api_reply(&fx->api,
			       &(struct fake_api_reply){
				   .http = cases[i].http,
				   .fail = cases[i].fail,
				   .body = "{\"message\":\"the object has been modified\"}",
				   .times = 1});
		struct kube_write_result r;
		kube_patch_status(fx->c, &nd, "1", granted, (void *)"Pending", &r);
		assert_int_equal(r.outcome, cases[i].want);
		if (cases[i].want != KUBE_WRITE_OK && !cases[i].fail) {
			assert_int_equal(r.http, cases[i].http);
			assert_non_null(strstr(r.err.msg, "the object has been modified"));
		}
		if (cases[i].fail)
			assert_int_equal(r.http, 0);
	}
}

static void test_finalizer_add_remove_and_noop(void **state)
{
	struct fx *fx = *state;
	struct kube_write_result r;
	const struct kube_ref nd = {KUBE_KIND_ND, NULL, "maint-1"};
	const char *const current[] = {"other.io/keep"};
	/* The answer is the object as written: its new version comes back to the caller. */
	fake_api_reply(&fx->api, &(struct fake_api_reply){
				     "/nodedisruptions/maint-1", 200,
				     "{\"kind\":\"NodeDisruption\",\"metadata\":{\"name\":"
				     "\"maint-1\",\"resourceVersion\":\"12\"}}",
				     false, 1});
	char rv[KUBE_WRITE_RV_BYTES] = "stale";
	kube_set_finalizer(fx->c, &nd, "7", current, 1, "nodegate.io/gate", true, rv, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_OK);
	assert_string_equal(rv, "12");
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_string_equal(q->path, "/apis/nodegate.io/v1alpha1/nodedisruptions/maint-1");
	assert_string_equal(q->body, "{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":["
				     "\"other.io/keep\",\"nodegate.io/gate\"]}}");
	const char *const both[] = {"nodegate.io/gate", "other.io/keep"};
	kube_set_finalizer(fx->c, &nd, "8", both, 2, "nodegate.io/gate", false, NULL, &r);
	q = fake_api_find(&fx->api, "PATCH", NULL, 1);
	assert_string_equal(q->body, "{\"metadata\":{\"resourceVersion\":\"8\",\"finalizers\":["
				     "\"other.io/keep\"]}}");
	/* Already as wanted: no request at all. */
	size_t before = fx->api.nreqs;
	kube_set_finalizer(fx->c, &nd, "9", both, 2, "nodegate.io/gate", true, rv, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_OK);
	assert_int_equal(fx->api.nreqs, before);
	assert_string_equal(rv, ""); /* nothing written: no new version */
	/* A refused write gives no version either. */
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){"/nodedisruptions/maint-1", 409, NULL, false, 1});
	kube_set_finalizer(fx->c, &nd, "9", current, 1, "nodegate.io/gate", true, rv, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_CONFLICT);
	assert_string_equal(rv, "");
}

static void test_event_names_its_object(void **state)
{
	struct fx *fx = *state;
	struct kube_write_result r;
	struct kube_event ev = {{KUBE_KIND_ADB, "team-a", "db"},
				"HookFailed",
				"Warning",
				"NodeDisruption m: \"lagging\"",
				"pod-1_abc",
				1764000000000,
				NULL};
	kube_create_event(fx->c, &ev, &r);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", NULL, 0);
	assert_string_equal(q->path, "/api/v1/namespaces/team-a/events");
	assert_non_null(strstr(q->body, "\"involvedObject\":{\"apiVersion\":\"nodegate.io/"
					"v1alpha1\",\"kind\":\"ApplicationDisruptionBudget\","
					"\"namespace\":\"team-a\",\"name\":\"db\"}"));
	assert_non_null(strstr(q->body, "\"message\":\"NodeDisruption m: \\\"lagging\\\"\""));
	assert_non_null(strstr(q->body, "\"reportingInstance\":\"pod-1_abc\""));
	assert_non_null(strstr(q->body, "\"lastTimestamp\":\"2025-11-24T16:00:00Z\""));
	/* Cluster-scoped objects' events live in "default", without a namespace of their own. */
	struct kube_event ev2 = {
	    {KUBE_KIND_ND, NULL, "m"}, "Granted", "Normal", "ok", NULL, 0, "5f1c-uid"};
	kube_create_event(fx->c, &ev2, &r);
	q = fake_api_find(&fx->api, "POST", NULL, 1);
	assert_string_equal(q->path, "/api/v1/namespaces/default/events");
	assert_non_null(strstr(q->body,
			       "\"involvedObject\":{\"apiVersion\":\"nodegate.io/"
			       "v1alpha1\",\"kind\":\"NodeDisruption\",\"name\":\"m\",\"uid\":"
			       "\"5f1c-uid\"}"));
}

static void test_json_patch_escapes_keys_and_sets_precondition(void **state)
{
	struct fx *fx = *state;
	struct kube_json_patch *p = kube_json_patch_create("11");
	kube_json_patch_annotation(p, "nodegate.io/was-unschedulable", "false", true);
	kube_json_patch_label(p, "a~b/c", NULL, true);
	kube_json_patch_label(p, "x", "y", false);
	kube_json_patch_unschedulable(p, true);
	const struct kube_taint_spec t[] = {{"nodegate.io/drain", NULL, "NoSchedule"}};
	kube_json_patch_taints(p, t, 1);
	struct kube_write_result r;
	const struct kube_ref node = {KUBE_KIND_NODE, NULL, "node1"};
	kube_apply_json_patch(fx->c, &node, p, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_OK);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", NULL, 0);
	assert_string_equal(q->path, "/api/v1/nodes/node1");
	assert_string_equal(q->content_type, "application/json-patch+json");
	assert_string_equal(
	    q->body,
	    "[{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\",\"value\":\"11\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/annotations/nodegate.io~1was-unschedulable\","
	    "\"value\":\"false\"},"
	    "{\"op\":\"remove\",\"path\":\"/metadata/labels/a~0b~1c\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"x\":\"y\"}},"
	    "{\"op\":\"add\",\"path\":\"/spec/unschedulable\",\"value\":true},"
	    "{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":[{\"key\":\"nodegate.io/drain\","
	    "\"effect\":\"NoSchedule\"}]}]");
	kube_json_patch_destroy(p);
	kube_json_patch_destroy(NULL);
}

/* The operation Job: the template's spec kept, the node pinned, the cordon and the request's
 * taint tolerated, labels on the Job and its pods, restartPolicy and a TTL only where the
 * template sets none. */
static void test_job_from_template(void **state)
{
	struct fx *fx = *state;
	const char *const keys[] = {"nodegate.io/node"}, *const values[] = {"node1"};
	const struct kube_taint_spec tol[] = {{"example.com/m", NULL, "NoSchedule"}};
	const struct kube_job_spec j = {.name = "nodegate-op-1",
					.ns = "nodegate",
					.node = "node1",
					.label_keys = keys,
					.label_values = values,
					.nlabels = 1,
					.tolerate = tol,
					.ntolerate = 1,
					.service_account = "nodegate-operation"};
	struct kube_write_result r;
	kube_create_job(
	    fx->c,
	    "{\"metadata\":{\"generateName\":\"x-\"},\"spec\":{\"backoffLimit\":0,"
	    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}",
	    &j, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_OK);
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", NULL, 0);
	assert_string_equal(q->path, "/apis/batch/v1/namespaces/nodegate/jobs");
	assert_non_null(strstr(q->body, "\"name\":\"nodegate-op-1\""));
	assert_null(strstr(q->body, "generateName"));
	assert_non_null(strstr(q->body, "\"backoffLimit\":0"));
	assert_non_null(strstr(q->body, "\"ttlSecondsAfterFinished\":86400"));
	assert_non_null(strstr(q->body, "\"nodeName\":\"node1\""));
	assert_non_null(strstr(q->body, "\"serviceAccountName\":\"nodegate-operation\""));
	assert_non_null(strstr(q->body, "\"restartPolicy\":\"Never\""));
	assert_non_null(strstr(q->body, "\"key\":\"node.kubernetes.io/unschedulable\""));
	assert_non_null(strstr(q->body, "\"key\":\"example.com/m\""));
	assert_non_null(strstr(q->body, "\"labels\":{\"nodegate.io/node\":\"node1\"}"));
	/* The template's own TTL and restart policy win. */
	kube_create_job(fx->c,
			"{\"spec\":{\"ttlSecondsAfterFinished\":5,\"template\":{\"spec\":{"
			"\"restartPolicy\":\"OnFailure\",\"serviceAccount\":\"nodegate\","
			"\"serviceAccountName\":\"nodegate\",\"containers\":[{\"name\":\"c\"}]}}}}",
			&j, &r);
	q = fake_api_find(&fx->api, "POST", NULL, 1);
	assert_non_null(strstr(q->body, "\"ttlSecondsAfterFinished\":5"));
	assert_null(strstr(q->body, "86400"));
	assert_non_null(strstr(q->body, "\"restartPolicy\":\"OnFailure\""));
	/* A template's ServiceAccount never survives (the webhook refuses it before). */
	assert_null(strstr(q->body, "\"serviceAccount\":"));
	assert_null(strstr(q->body, "\"serviceAccountName\":\"nodegate\""));
	/* No token, whatever the template says about it (a true is refused below). */
	assert_non_null(strstr(q->body, "\"automountServiceAccountToken\":false"));
	/* Not an object with a spec: refused before anything is sent. */
	kube_create_job(fx->c, "[1]", &j, &r);
	assert_int_equal(r.outcome, KUBE_WRITE_FAILED);
	assert_null(fake_api_find(&fx->api, "POST", NULL, 2));
	/* Secrets and tokens: refused before anything is sent, webhook or not. */
	static const char *const bad[] = {
	    "{\"spec\":{\"template\":{\"spec\":{\"volumes\":[{\"name\":\"s\",\"secret\":{"
	    "\"secretName\":\"nodegate-ca\"}}],\"containers\":[{\"name\":\"c\"}]}}}}",
	    "{\"spec\":{\"template\":{\"spec\":{\"automountServiceAccountToken\":true,"
	    "\"containers\":[{\"name\":\"c\"}]}}}}",
	    "{\"spec\":{\"template\":{\"spec\":{\"volumes\":[{\"name\":\"t\",\"projected\":{"
	    "\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}}]}}],\"containers\":[{"
	    "\"name\":\"c\"}]}}}}",
	};
	static const char *const field[] = {"volumes[0].secret", "automountServiceAccountToken",
					    "volumes[0].projected.sources[0].serviceAccountToken"};
	for (size_t i = 0; i < 3; i++) {
		kube_create_job(fx->c, bad[i], &j, &r);
		assert_int_equal(r.outcome, KUBE_WRITE_FAILED);
		assert_int_equal(r.err.status, NG_EPARSE);
		assert_non_null(strstr(r.err.msg, field[i]));
	}
	assert_null(fake_api_find(&fx->api, "POST", NULL, 2));
}

static void test_paths(void **state)
{
	char path[64];
	const struct kube_ref pods = {KUBE_KIND_POD, "default", NULL};
	assert_int_equal(kube_ref_path(&pods, NULL, path, sizeof(path)), NG_OK);
	assert_string_equal(path, "/api/v1/namespaces/default/pods");
	const struct kube_ref ev = {KUBE_KIND_POD, "default", "web-1"};
	assert_int_equal(kube_ref_path(&ev, "eviction", path, sizeof(path)), NG_OK);
	assert_string_equal(path, "/api/v1/namespaces/default/pods/web-1/eviction");
	const struct kube_ref no_ns = {KUBE_KIND_ADB, NULL, "db"};
	assert_int_equal(kube_ref_path(&no_ns, NULL, path, sizeof(path)), NG_EINVAL);
	const struct kube_ref lease = {KUBE_KIND_LEASE, "nodegate", "a-very-long-lease-name-x"};
	assert_int_equal(kube_ref_path(&lease, NULL, path, 32), NG_ELIMIT);
	/* a cached kind's path comes from its cache row, a written-only kind's from write.c */
	const struct kube_ref nd = {KUBE_KIND_ND, NULL, "m1"};
	assert_int_equal(kube_ref_path(&nd, "status", path, sizeof(path)), NG_OK);
	assert_string_equal(path, "/apis/nodegate.io/v1alpha1/nodedisruptions/m1/status");
	const struct kube_ref job = {KUBE_KIND_JOB, "ops", NULL};
	assert_int_equal(kube_ref_path(&job, NULL, path, sizeof(path)), NG_OK);
	assert_string_equal(path, "/apis/batch/v1/namespaces/ops/jobs");
	/* a reference that names no kind has no path */
	const struct kube_ref none = {KUBE_KIND_NONE, "default", "x"};
	assert_int_equal(kube_ref_path(&none, NULL, path, sizeof(path)), NG_EINVAL);
	assert_string_equal(kube_kind_name(KUBE_KIND_NONE), "?");
	/* every kind nodegate writes has a name and a path */
	for (int k = KUBE_KIND_NONE + 1; k < KUBE_KIND_COUNT; k++) {
		const struct kube_ref any = {(enum kube_kind)k, "ns", "x"};
		char long_path[128];
		assert_string_not_equal(kube_kind_name((enum kube_kind)k), "?");
		assert_int_equal(kube_ref_path(&any, NULL, long_path, sizeof(long_path)), NG_OK);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_status_patch_carries_the_resource_version, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_outcomes_are_classified, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finalizer_add_remove_and_noop, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_event_names_its_object, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_from_template, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json_patch_escapes_keys_and_sets_precondition,
					    setup, teardown),
	    cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
