/* server/review: the AdmissionReview v1 codec and the eviction pipeline (W01, W02 in-process). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/parse.h"
#include "server/admission.h"
#include "server/review.h"
#include "kube/records.h"
#include "kube/one.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REVIEW(req)                                                                                \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":" req "}"
#define EVICTION_REQ(uid, ns, name, extra)                                                         \
	"{\"uid\":\"" uid "\",\"kind\":{\"group\":\"policy\",\"version\":\"v1\",\"kind\":"         \
	"\"Eviction\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"    \
	"\"subResource\":\"eviction\",\"name\":\"" name "\",\"namespace\":\"" ns "\","             \
	"\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice\",\"groups\":[\"g\"]},"       \
	"\"object\":{\"kind\":\"Eviction\",\"apiVersion\":\"policy/"                               \
	"v1\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns                             \
	"\"}},\"oldObject\":null,\"dryRun\":false" extra "}"

static void test_decode_full_eviction_review(void **state)
{
	const char *body = REVIEW(EVICTION_REQ("u-1", "default", "pod1", ""));
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct srv_review r;
	struct ng_err err = {0};
	assert_int_equal(srv_review_decode(body, strlen(body), a, &r, &err), NG_OK);
	assert_string_equal(r.uid, "u-1");
	assert_string_equal(r.kind_group, "policy");
	assert_string_equal(r.kind_kind, "Eviction");
	assert_string_equal(r.resource, "pods");
	assert_string_equal(r.resource_group, "");
	assert_string_equal(r.sub_resource, "eviction");
	assert_string_equal(r.name, "pod1");
	assert_string_equal(r.ns, "default");
	assert_string_equal(r.operation, "CREATE");
	assert_string_equal(r.username, "alice");
	assert_false(r.dry_run);
	/* An Eviction is not nodegate's to decode: only what the eviction webhook reads of it. */
	assert_true(r.has_object && !r.has_old_object);
	assert_null(r.object);
	assert_null(r.old_object);
	assert_string_equal(r.object_ns, "default");
	assert_string_equal(r.object_name, "pod1");
	assert_false(r.object_has_annotations);
	srv_review_finish(&r);
	ng_arena_destroy(a);
}

#define ND_OBJECT(name, spec)                                                                      \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"annotations\":{\"nodegate.io/created-by\":\"bob\"}},"             \
	"\"spec\":" spec "}"
#define ND_REVIEW(object, old)                                                                     \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"       \
	"\"uid\":\"u-2\",\"kind\":{\"group\":\"nodegate.io\",\"version\":\"v1alpha1\",\"kind\":"   \
	"\"NodeDisruption\"},\"name\":\"x\",\"operation\":\"UPDATE\",\"userInfo\":{"               \
	"\"username\":\"alice\"},\"object\":" object ",\"oldObject\":" old "}}"

static void test_nodegate_objects_are_decoded_once_from_the_tree(void **state)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct srv_review r;
	struct ng_err err = {0};
	const char *body = ND_REVIEW(ND_OBJECT("x", "{\"nodeNames\":[\"n1\"]}"),
				     ND_OBJECT("x", "{\"priority\":\"high\"}"));
	assert_int_equal(srv_review_decode(body, strlen(body), a, &r, &err), NG_OK);
	assert_non_null(r.object);
	assert_int_equal(kube_one_resource(r.object), KUBE_RES_NDS);
	assert_int_equal(kube_one_nd(r.object)->nnode_names, 1);
	assert_true(r.object_has_annotations);
	assert_int_equal(r.object_err.status, NG_OK);
	/* An object that does not decode is not an error of the review: it says why. */
	assert_null(r.old_object);
	assert_int_equal(r.old_object_err.status, NG_EPARSE);
	assert_string_equal(r.old_object_err.msg, "spec.priority: expected an integer");
	srv_review_finish(&r);
	assert_null(r.object);
	srv_review_finish(&r); /* twice is fine */
	srv_review_finish(NULL);
	ng_arena_destroy(a);
}

static const struct {
	const char *body;
	ng_status st;
	const char *msg;
} bad_cases[] = {
    {"not json", NG_EPARSE, "body is not valid JSON"},
    {"", NG_EPARSE, "body is not valid JSON"},
    {"[]", NG_EPARSE, "expected a JSON object"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", NG_EPARSE,
     "request: required"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":5}",
     NG_EPARSE, "request: expected an object"},
    {REVIEW("{\"operation\":\"CREATE\"}"), NG_EPARSE, "request.uid: required"},
    {REVIEW("{\"uid\":\"\",\"operation\":\"CREATE\"}"), NG_EPARSE,
     "request.uid: must not be empty"},
    {REVIEW("{\"uid\":7,\"operation\":\"CREATE\"}"), NG_EPARSE, "request.uid: expected a string"},
    {"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{"
     "\"uid\":\"u\"}}",
     NG_EPARSE, "apiVersion: must be admission.k8s.io/v1"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"u\"}}",
     NG_EPARSE, "kind: must be AdmissionReview"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"PATCH\"}"), NG_EPARSE, "request.operation: must be"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"CREATE\",\"dryRun\":\"yes\"}"), NG_EPARSE,
     "request.dryRun: expected a boolean"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"CREATE\",\"userInfo\":[]}"), NG_EPARSE,
     "request.userInfo: expected an object"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"CREATE\",\"name\":[\"x\"]}"), NG_EPARSE,
     "request.name: expected a string"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"CREATE\",\"kind\":\"Eviction\"}"), NG_EPARSE,
     "request.kind: expected an object"},
    {REVIEW("{\"uid\":\"u\",\"uid\":\"v\",\"operation\":\"CREATE\"}"), NG_EPARSE,
     "duplicate JSON key \"uid\""},
    {REVIEW("{\"uid\":\"u\\u0000v\",\"operation\":\"CREATE\"}"), NG_EPARSE, "NUL"},
    {REVIEW("{\"uid\":\"u\",\"operation\":\"CREATE\",\"object\":\"x\"}"), NG_EPARSE,
     "request.object: expected an object"},
};

static void test_W02_bad_reviews_say_what_is_wrong(void **state)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct ng_arena *a = ng_arena_create(1u << 20);
		struct srv_review r;
		memset(&r, 0xad, sizeof(r));
		struct ng_err err = {0};
		ng_status st =
		    srv_review_decode(bad_cases[i].body, strlen(bad_cases[i].body), a, &r, &err);
		if (st != bad_cases[i].st || !strstr(err.msg, bad_cases[i].msg))
			fail_msg("case %zu: got %s \"%s\", expected \"%s\"", i, ng_status_str(st),
				 err.msg, bad_cases[i].msg);
		/* ret is not touched on failure */
		assert_ptr_equal(r.uid, (const char *)(uintptr_t)0xadadadadadadadadull);
		ng_arena_destroy(a);
	}
}

static void test_decode_limits(void **state)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	char uid[400];
	memset(uid, 'u', sizeof(uid));
	char body[1024];
	int n = snprintf(body, sizeof(body), REVIEW("{\"uid\":\"%.*s\",\"operation\":\"CREATE\"}"),
			 300, uid);
	struct srv_review r;
	struct ng_err err = {0};
	assert_int_equal(srv_review_decode(body, (size_t)n, a, &r, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "request.uid: longer than 256"));
	/* A tiny arena: the decoder fails cleanly instead of aborting. */
	struct ng_arena *tiny = ng_arena_create(256);
	const char *ok = REVIEW(EVICTION_REQ("u-1", "default", "pod1", ""));
	assert_int_not_equal(srv_review_decode(ok, strlen(ok), tiny, &r, &err), NG_OK);
	ng_arena_destroy(tiny);
	ng_arena_destroy(a);
}

static const cJSON *response_of(struct ng_arena *a, const struct ng_buf *out)
{
	cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(out->data, out->len, a, &root, &err), NG_OK);
	assert_string_equal(ng_json_str(root, "apiVersion"), "admission.k8s.io/v1");
	assert_string_equal(ng_json_str(root, "kind"), "AdmissionReview");
	return ng_json_get(root, "response");
}

static void test_encode_denial_and_allowance(void **state)
{
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct ng_buf out;
	ng_buf_init(&out, 65536);
	struct srv_review_response deny = {
	    .allowed = false, .code = 429, .message = "held \"here\"\n", .retry_after_seconds = 10};
	assert_int_equal(srv_review_encode("uid-\"x\"", &deny, &out), NG_OK);
	const cJSON *resp = response_of(a, &out);
	assert_string_equal(ng_json_str(resp, "uid"), "uid-\"x\"");
	assert_true(cJSON_IsFalse(ng_json_get(resp, "allowed")));
	const cJSON *st = ng_json_get(resp, "status");
	assert_int_equal((int)ng_json_get(st, "code")->valuedouble, 429);
	assert_string_equal(ng_json_str(st, "reason"), "TooManyRequests");
	assert_string_equal(ng_json_str(st, "message"), "held \"here\"\n");
	assert_int_equal(
	    (int)ng_json_get(ng_json_get(st, "details"), "retryAfterSeconds")->valuedouble, 10);
	assert_null(ng_json_get(resp, "patch"));
	ng_buf_reset(&out);
	struct srv_review_response ok = {.allowed = true, .warning = "careful"};
	assert_int_equal(srv_review_encode("u", &ok, &out), NG_OK);
	resp = response_of(a, &out);
	assert_true(cJSON_IsTrue(ng_json_get(resp, "allowed")));
	assert_null(ng_json_get(resp, "status"));
	assert_string_equal(ng_json_get(resp, "warnings")->child->valuestring, "careful");
	/* One warning a line: at most 4, each cut to the 256 bytes an API server keeps. */
	char many[1200];
	memset(many, 'x', 300);
	ng_fmt(many + 300, sizeof(many) - 300, "\nsecond\n\nthird\nfourth\nfifth");
	ok.warning = many;
	ng_buf_reset(&out);
	assert_int_equal(srv_review_encode("u", &ok, &out), NG_OK);
	resp = response_of(a, &out);
	const cJSON *ws = ng_json_get(resp, "warnings");
	assert_int_equal(cJSON_GetArraySize(ws), 4);
	assert_int_equal(strlen(ws->child->valuestring), 256);
	assert_string_equal(cJSON_GetArrayItem(ws, 1)->valuestring, "second");
	assert_string_equal(cJSON_GetArrayItem(ws, 3)->valuestring, "fourth");
	ng_buf_finish(&out);
	ng_arena_destroy(a);
}

static void test_W01_pipeline_echoes_uid_and_decides(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(ng_fixture_f);
	struct pol_eviction_config cfg = {.mode = POL_EVICTION_ENFORCE, .retry_after_seconds = 7};
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct ng_buf out;
	ng_buf_init(&out, 65536);
	const char *body = REVIEW(EVICTION_REQ("705ab4f5-6393-11e8-b7cc-42010a800002", "default",
					       "pod1", ",\"dryRun\":true"));
	/* dryRun twice is a duplicate key: rejected. */
	struct srv_admission adm;
	struct ng_err err = {0};
	assert_int_equal(srv_admit_eviction(body, strlen(body), a, s, &cfg, &out, &adm, &err),
			 NG_EPARSE);
	body = REVIEW(EVICTION_REQ("705ab4f5-6393-11e8-b7cc-42010a800002", "default", "pod1", ""));
	assert_int_equal(srv_admit_eviction(body, strlen(body), a, s, &cfg, &out, &adm, &err),
			 NG_OK);
	assert_true(adm.eviction);
	assert_false(adm.decision.allowed);
	const cJSON *resp = response_of(a, &out);
	assert_string_equal(ng_json_str(resp, "uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
	assert_int_equal((int)ng_json_get(ng_json_get(ng_json_get(resp, "status"), "details"),
					  "retryAfterSeconds")
			     ->valuedouble,
			 7);
	kube_snapshot_release(s);
	ng_buf_finish(&out);
	ng_arena_destroy(a);
}

static void test_names_fall_back_to_the_eviction_object(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(ng_fixture_f);
	struct pol_eviction_config cfg = {.mode = POL_EVICTION_ENFORCE, .retry_after_seconds = 10};
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct ng_buf out;
	ng_buf_init(&out, 65536);
	const char *body = REVIEW(
	    "{\"uid\":\"u\",\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
	    "\"subResource\":\"eviction\",\"operation\":\"CREATE\",\"object\":{\"kind\":"
	    "\"Eviction\",\"metadata\":{\"name\":\"pod1\",\"namespace\":\"default\"}}}");
	struct srv_admission adm;
	struct ng_err err = {0};
	assert_int_equal(srv_admit_eviction(body, strlen(body), a, s, &cfg, &out, &adm, &err),
			 NG_OK);
	assert_false(adm.decision.allowed);
	assert_string_equal(adm.review.name, "pod1");
	kube_snapshot_release(s);
	ng_buf_finish(&out);
	ng_arena_destroy(a);
}

static void test_non_eviction_review_is_allowed_with_warning(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(ng_fixture_f);
	struct pol_eviction_config cfg = {.mode = POL_EVICTION_ENFORCE, .retry_after_seconds = 10};
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct ng_buf out;
	ng_buf_init(&out, 65536);
	const char *body = REVIEW(
	    "{\"uid\":\"u\",\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
	    "\"subResource\":\"status\",\"name\":\"pod1\",\"namespace\":\"default\","
	    "\"operation\":\"UPDATE\"}");
	struct srv_admission adm;
	struct ng_err err = {0};
	assert_int_equal(srv_admit_eviction(body, strlen(body), a, s, &cfg, &out, &adm, &err),
			 NG_OK);
	assert_false(adm.eviction);
	const cJSON *resp = response_of(a, &out);
	assert_true(cJSON_IsTrue(ng_json_get(resp, "allowed")));
	assert_non_null(
	    strstr(ng_json_get(resp, "warnings")->child->valuestring, "not a pod eviction"));
	kube_snapshot_release(s);
	ng_buf_finish(&out);
	ng_arena_destroy(a);
}

/* The object webhooks' new checks in-process, without an API server to ask (cfg.authz NULL). */
#define OBJ_REQ(op, kind, user_info, obj, old)                                                     \
	"{\"uid\":\"u\",\"kind\":{\"group\":\"nodegate.io\",\"version\":\"v1alpha1\",\"kind\":"    \
	"\"" kind "\"},\"resource\":{\"group\":\"nodegate.io\",\"version\":\"v1alpha1\","          \
	"\"resource\":\"x\"},"                                                                     \
	"\"name\":\"t\",\"operation\":\"" op "\",\"userInfo\":" user_info ",\"object\":" obj       \
	",\"oldObject\":" old "}"
#define ALICE "{\"username\":\"alice\",\"groups\":[\"ops\",\"system:authenticated\"]}"
#define NDT(ann, spec)                                                                             \
	"{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionTemplate\","            \
	"\"metadata\":{\"name\":\"t\"" ann "},\"spec\":" spec "}"
#define PRIV_OP                                                                                    \
	"{\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"hostPID\":true,"     \
	"\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}}"
#define AUTHOR_ANN                                                                                 \
	",\"annotations\":{\"nodegate.io/created-by\":\"alice\",\"nodegate.io/"                    \
	"created-by-groups\":"                                                                     \
	"\"[\\\"ops\\\",\\\"system:authenticated\\\"]\"}"

static struct srv_object_admission admit(enum srv_object_webhook wh, const char *body,
					 struct ng_buf *out)
{
	static const char *const deciders[] = {"system:serviceaccount:nodegate:nodegate"};
	const struct srv_object_config cfg = {deciders, 1, NULL};
	struct kube_snapshot *s = ng_test_snapshot(ng_fixture_f);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct srv_object_admission r;
	struct ng_err err = {0};
	ng_buf_reset(out);
	assert_int_equal(srv_admit_object(wh, body, strlen(body), a, s, &cfg, out, &r, &err),
			 NG_OK);
	ng_arena_destroy(a);
	kube_snapshot_release(s);
	return r;
}

static void test_authors_are_recorded_and_kept(void **state)
{
	struct ng_buf out;
	ng_buf_init(&out, 1u << 20);
	/* Create: the user's name and groups, whatever the object says. */
	struct srv_object_admission r = admit(
	    SRV_OBJ_AUTHOR_MUTATE,
	    REVIEW(OBJ_REQ("CREATE", "NodeDisruptionTemplate", ALICE,
			   NDT(",\"annotations\":{\"nodegate.io/created-by\":\"mallory\"}", "{}"),
			   "null")),
	    &out);
	assert_true(r.allowed && r.patched);
	/* base64 of the JSONPatch: decode and look. */
	struct cJSON *root = NULL;
	struct ng_err err = {0};
	assert_int_equal(ng_json_parse(out.data, out.len, NULL, &root, &err), NG_OK);
	const char *b64 = ng_json_str(ng_json_get(root, "response"), "patch");
	assert_non_null(b64);
	char *dec = NULL;
	size_t n = 0;
	assert_int_equal(ng_base64_decode(b64, strlen(b64), &dec, &n), NG_OK);
	assert_string_equal(
	    dec, "[{\"op\":\"add\",\"path\":\"/metadata/annotations/nodegate.io~1created-by\","
		 "\"value\":\"alice\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/"
		 "nodegate.io~1created-by-groups\",\"value\":\"[\\\"ops\\\",\\\"system:"
		 "authenticated\\\"]\"}]");
	free(dec);
	cJSON_Delete(root);
	/* An update that leaves the spec: the stored author stays, a forged one is put back. */
	r = admit(SRV_OBJ_AUTHOR_MUTATE,
		  REVIEW(OBJ_REQ("UPDATE", "NodeDisruptionTemplate", "{\"username\":\"mallory\"}",
				 NDT(",\"annotations\":{\"nodegate.io/created-by\":\"mallory\","
				     "\"nodegate.io/created-by-groups\":\"[\\\"ops\\\",\\\"system:"
				     "authenticated\\\"]\"}",
				     "{\"priority\":1}"),
				 NDT(AUTHOR_ANN, "{\"priority\":1}"))),
		  &out);
	assert_true(r.allowed && r.patched);
	/* ... and the validating webhook refuses what was not put back. */
	r = admit(SRV_OBJ_AUTHORED,
		  REVIEW(OBJ_REQ("UPDATE", "NodeDisruptionTemplate", "{\"username\":\"mallory\"}",
				 NDT(",\"annotations\":{\"nodegate.io/created-by\":\"mallory\"}",
				     "{\"priority\":1}"),
				 NDT(AUTHOR_ANN, "{\"priority\":1}"))),
		  &out);
	assert_false(r.allowed);
	assert_int_equal(r.code, 403);
	assert_non_null(strstr(r.message, "only nodegate's author webhook"));
	/* What the mutating webhook wrote passes. */
	r = admit(SRV_OBJ_AUTHORED,
		  REVIEW(OBJ_REQ("CREATE", "NodeDisruptionTemplate", ALICE, NDT(AUTHOR_ANN, "{}"),
				 "null")),
		  &out);
	assert_true(r.allowed);
	ng_buf_finish(&out);
}

static void test_privileged_operations_are_refused_when_nobody_can_be_asked(void **state)
{
	struct ng_buf out;
	ng_buf_init(&out, 1u << 20);
	struct srv_object_admission r =
	    admit(SRV_OBJ_AUTHORED,
		  REVIEW(OBJ_REQ("CREATE", "NodeDisruptionTemplate", ALICE,
				 NDT(AUTHOR_ANN, PRIV_OP), "null")),
		  &out);
	assert_false(r.allowed);
	assert_int_equal(r.code, 403);
	assert_non_null(strstr(r.message, "spec.operation.jobTemplate.spec.template.spec.hostPID"));
	assert_non_null(strstr(r.message, "nodedisruptions/privileged-operation"));
	assert_non_null(strstr(r.message, "could not be checked"));
	/* The same through the NodeDisruption webhook. */
	r = admit(
	    SRV_OBJ_ND,
	    REVIEW(OBJ_REQ("CREATE", "NodeDisruption", ALICE,
			   "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\","
			   "\"metadata\":{\"name\":\"t\"},\"spec\":{\"nodeNames\":[\"node1\"],"
			   "\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
			   "\"hostNetwork\":true,\"containers\":[{\"name\":\"c\",\"image\":"
			   "\"x\"}]}}}}}}}",
			   "null")),
	    &out);
	assert_false(r.allowed);
	assert_non_null(strstr(r.message, "spec.hostNetwork"));
	/* A template mounting a Secret is invalid (422) before any question of rights. */
	r = admit(SRV_OBJ_AUTHORED,
		  REVIEW(OBJ_REQ("CREATE", "NodeDisruptionTemplate", ALICE,
				 NDT(AUTHOR_ANN,
				     "{\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{"
				     "\"spec\":{\"volumes\":[{\"name\":\"s\",\"secret\":{}}],"
				     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}}"),
				 "null")),
		  &out);
	assert_false(r.allowed);
	assert_int_equal(r.code, 422);
	assert_non_null(strstr(r.message, "volumes[0].secret: not allowed"));
	ng_buf_finish(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_full_eviction_review),
	    cmocka_unit_test(test_nodegate_objects_are_decoded_once_from_the_tree),
	    cmocka_unit_test(test_W02_bad_reviews_say_what_is_wrong),
	    cmocka_unit_test(test_decode_limits),
	    cmocka_unit_test(test_encode_denial_and_allowance),
	    cmocka_unit_test(test_W01_pipeline_echoes_uid_and_decides),
	    cmocka_unit_test(test_names_fall_back_to_the_eviction_object),
	    cmocka_unit_test(test_non_eviction_review_is_allowed_with_warning),
	    cmocka_unit_test(test_authors_are_recorded_and_kept),
	    cmocka_unit_test(test_privileged_operations_are_refused_when_nobody_can_be_asked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
