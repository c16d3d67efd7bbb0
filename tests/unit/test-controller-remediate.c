/* controller/remediate: passes of the remediation controller driven by hand against snapshots,
 * writing through an in-memory API server (tests/support/fake-api): the finalizer before
 * anything else, the request's exact body, the status written with the resourceVersion it was
 * planned on and only when it changed, a creation not yet in the cache holding the next one, a
 * repair recorded in status before its request is deleted (and not deleted when that write
 * fails), and the finalizer dropped once a deleted remediation has no request left. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/json.h"
#include "common/arena.h"
#include "common/buf.h"
#include "controller/remediate_internal.h"
#include "kube/client.h"
#include "kube/snapshot.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <string.h>

/* 2026-11-27T12:00:00Z */
#define NOW 1795780800000LL

/* The author annotations the webhook writes: @user in the groups ops and system:authenticated. */
#define AUTHOR(user)                                                                               \
	"\"annotations\":{\"nodegate.io/created-by\":\"" user "\",\"nodegate.io/created-by-"       \
	"groups\":\"[\\\"ops\\\",\\\"system:authenticated\\\"]\"}"
/* The template "reboot" written by @user, with @operation spliced into its spec. */
#define TEMPLATE_BY(user, operation)                                                               \
	"{\"kind\":\"NodeDisruptionTemplate\",\"apiVersion\":\"nodegate.io/"                       \
	"v1alpha1\",\"metadata\":"                                                                 \
	"{\"name\":\"reboot\"," AUTHOR(                                                            \
	    user) "},\"spec\":{\"type\":\"reboot\",\"retry\":{"                                    \
		  "\"enabled\":true},\"drain\":{\"force\":true}" operation "}}"
#define TEMPLATE TEMPLATE_BY("tmpl-author", "")
/* A reboot: a privileged, hostPID Job. */
#define REBOOT                                                                                     \
	",\"operation\":{\"waitForReboot\":true,\"jobTemplate\":{\"spec\":{\"template\":{"         \
	"\"spec\":{\"restartPolicy\":\"Never\",\"hostPID\":true,\"containers\":[{\"name\":"        \
	"\"reboot\",\"image\":\"tools:1\",\"securityContext\":{\"privileged\":true}}]}}}}}"
#define SICK_NODE(name)                                                                            \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{"                                                                          \
	"\"pool\":\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"   \
	"{\"type\":\"example.com/Sick\",\"status\":\"True\",\"lastTransitionTime\":"               \
	"\"2026-11-27T11:00:00Z\"}]}}"
#define WELL_NODE(name)                                                                            \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{"                                                                          \
	"\"pool\":\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
/* The remediation "fix" written by rem-author at resourceVersion @rv, @meta and @status spliced
 * in; NREM_AS for another @author annotation (or none: ""). */
#define NREM(rv, meta, status) NREM_AS("," AUTHOR("rem-author"), rv, meta, status)
#define NREM_AS(author, rv, meta, status)                                                          \
	"{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"     \
	"\"name\":\"fix\",\"uid\":\"uid-fix\",\"resourceVersion\":\"" rv "\"" meta author "},"     \
	"\"spec\":{"                                                                               \
	"\"nodeSelector\":{\"matchLabels\":{\"pool\":\"w\"}},\"rule\":{\"conditions\":[{\"type\":" \
	"\"example.com/Sick\",\"status\":\"True\"}]},\"templateName\":\"reboot\","                 \
	"\"maxConcurrent\":1}" status "}"
#define FIN ",\"finalizers\":[\"nodegate.io/remediation\"]"
#define GONE ",\"deletionTimestamp\":\"2026-11-27T11:59:00Z\"" FIN
/* fix's request for @node in @state with the drainer's @phase. */
#define REQUEST(node, state, phase)                                                                \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"fix-" node "\",\"uid\":\"uid-req-" node "\",\"labels\":{"                      \
	"\"nodegate.io/remediation\":\"fix\"}},\"spec\":{\"nodeNames\":[\"" node "\"],"            \
	"\"drain\":{\"force\":true}},\"status\":{\"state\":\"" state "\",\"conditions\":[{"        \
	"\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"" phase "\"}]}}"
#define LIST(...) "{\"kind\":\"List\",\"items\":[" __VA_ARGS__ "]}"

/* The SubjectAccessReviews the controller asks, answered from a list of refusals. */
struct authz {
	const char *deny_user, *deny_sub; /* refused: this user (NULL: nobody) for this
					     subresource ("": creating requests at all) */
	bool unavailable;                 /* every question fails */
	char asked[16][128];              /* "user groups... subresource", in order */
	size_t nasked;
};

static enum kube_auth_result may(void *ctx, const struct kube_auth_subject *s,
				 const char *subresource, struct ng_err *err)
{
	struct authz *a = ctx;
	if (a->nasked < 16) {
		char *q = a->asked[a->nasked++];
		ng_fmt(q, 128, "%s", s->user);
		for (size_t i = 0; i < s->ngroups; i++)
			ng_fmt(q + strlen(q), 128 - strlen(q), " %s", s->groups[i]);
		ng_fmt(q + strlen(q), 128 - strlen(q), " %s", subresource ? subresource : "-");
	}
	if (a->unavailable) {
		(void)ng_err_set(err, NG_ETIMEDOUT, 0, "SubjectAccessReview: timed out");
		return KUBE_AUTH_ERROR;
	}
	if (a->deny_user && strcmp(s->user, a->deny_user) == 0 &&
	    strcmp(subresource ? subresource : "", a->deny_sub) == 0) {
		(void)ng_err_set(err, NG_EFORBIDDEN, 0, "forbidden");
		return KUBE_AUTH_FORBIDDEN;
	}
	return KUBE_AUTH_ALLOWED;
}

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct remediate *m;
	struct authz authz;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	memset(&fx.authz, 0, sizeof(fx.authz));
	struct remediate_config rc = {.identity = "serve-a", .may = may, .may_ctx = &fx.authz};
	struct ng_err err = {0};
	fx.m = remediate_create(&rc, fx.c, &err);
	assert_non_null(fx.m);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	remediate_stop(fx->m);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static int64_t pass(struct fx *fx, const char *json)
{
	struct kube_snapshot *s = ng_test_snapshot(json);
	int64_t next = remediate_pass(fx->m, s, NOW);
	kube_snapshot_release(s);
	return next;
}

/* Index of request @q among everything recorded (for order). */
static size_t order(const struct fx *fx, const struct fake_api_request *q)
{
	assert_non_null(q);
	return (size_t)(q - fx->api.reqs);
}

/* Parses @body (a request's JSON) into @a; the root. */
static cJSON *parse(const char *body, struct ng_arena *a)
{
	cJSON *root = NULL;
	assert_int_equal(ng_json_parse(body, strlen(body), a, &root, NULL), NG_OK);
	return root;
}

static void test_finalizer_first(void **state)
{
	struct fx *fx = *state;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("5", "", "")));
	assert_int_equal(fx->api.nreqs, 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix", 0);
	assert_non_null(q);
	assert_non_null(strstr(q->body, "\"nodegate.io/remediation\""));
	assert_non_null(strstr(q->body, "\"resourceVersion\":\"5\""));
}

static void test_status_then_the_request_with_its_exact_body(void **state)
{
	struct fx *fx = *state;
	const char *cluster =
	    LIST(TEMPLATE "," SICK_NODE("n1") "," SICK_NODE("n2") "," NREM("6", FIN, ""));
	(void)pass(fx, cluster);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	const struct fake_api_request *cr = fake_api_find(&fx->api, "POST", "/nodedisruptions", 0);
	assert_true(order(fx, st) < order(fx, cr));
	assert_non_null(strstr(st->body, "\"resourceVersion\":\"6\""));
	/* maxConcurrent 1: one request, for n1 (both due together: by name). */
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	struct ng_arena *a = ng_arena_create(1u << 20);
	const cJSON *nd = parse(cr->body, a);
	const cJSON *meta = ng_json_get(nd, "metadata"), *spec = ng_json_get(nd, "spec");
	assert_string_equal(ng_json_str(meta, "name"), "fix-n1");
	assert_string_equal(ng_json_str(ng_json_get(meta, "labels"), "nodegate.io/remediation"),
			    "fix");
	const cJSON *owner = ng_json_get(meta, "ownerReferences")->child;
	assert_string_equal(ng_json_str(owner, "kind"), "NodeRemediation");
	assert_string_equal(ng_json_str(owner, "uid"), "uid-fix");
	assert_true(cJSON_IsTrue(ng_json_get(owner, "controller")));
	assert_string_equal(ng_json_str(spec, "type"), "reboot");
	assert_string_equal(ng_json_str(spec, "requestor"), "fix.noderemediation");
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "drain"), "force")));
	assert_true(cJSON_IsTrue(ng_json_get(ng_json_get(spec, "retry"), "enabled")));
	assert_int_equal(cJSON_GetArraySize(ng_json_get(spec, "nodeNames")), 1);
	assert_string_equal(ng_json_get(spec, "nodeNames")->child->valuestring, "n1");
	/* The status says why n2 waits. */
	const cJSON *status = ng_json_get(parse(st->body, a), "status");
	const cJSON *waiting = ng_json_get(status, "waitingNodes")->child;
	assert_string_equal(ng_json_str(waiting, "node"), "n2");
	assert_non_null(strstr(ng_json_str(waiting, "reason"), "maxConcurrent 1"));
	assert_non_null(fake_api_find(&fx->api, "POST", "/events", 0));
	ng_arena_destroy(a);

	/* The same cluster again (the watch has not brought the request yet): the status is the
	 * same, so not written, and the creation on its way holds the next one. */
	fake_api_clear(&fx->api);
	(void)pass(fx, cluster);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 0);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
}

static void test_a_repair_is_recorded_before_its_request_goes(void **state)
{
	struct fx *fx = *state;
	const char *cluster = LIST(TEMPLATE "," WELL_NODE("n1") "," REQUEST(
	    "n1", "Granted", "Drained") "," NREM("7", FIN, ""));
	/* The status write is refused (a newer version exists): the request stays. */
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "/status",
						.http = 409,
						.body = "{\"kind\":\"Status\",\"code\":409}",
						.times = 1});
	(void)pass(fx, cluster);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/noderemediations/fix/status"), 1);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	/* Written this time: lastRemediated names the request by uid, then the request goes. */
	fake_api_clear(&fx->api);
	(void)pass(fx, cluster);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	const struct fake_api_request *del =
	    fake_api_find(&fx->api, "DELETE", "/nodedisruptions/fix-n1", 0);
	assert_true(order(fx, st) < order(fx, del));
	assert_non_null(strstr(st->body, "\"lastRemediated\":[{\"node\":\"n1\",\"time\":"));
	assert_non_null(strstr(st->body, "\"uid\":\"uid-req-n1\""));
}

static void test_a_deleted_remediation_lets_go_once_its_requests_are_gone(void **state)
{
	struct fx *fx = *state;
	/* A running request: it finishes first, nothing new starts, the finalizer stays. */
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," SICK_NODE("n2") "," REQUEST(
			   "n1", "Granted", "Operating") "," NREM("8", GONE, "")));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
	assert_int_equal(fake_api_count(&fx->api, "DELETE", NULL), 0);
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	assert_non_null(st);
	assert_non_null(strstr(st->body, "\"reason\":\"Deleting\""));
	/* None left: the finalizer goes, and nothing else is written. */
	fake_api_clear(&fx->api);
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("9", GONE, "")));
	assert_int_equal(fx->api.nreqs, 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix", 0);
	assert_non_null(q);
	assert_null(strstr(q->body, "nodegate.io/remediation"));
}

static void test_the_next_due_time_is_returned(void **state)
{
	struct fx *fx = *state;
	/* forSeconds 7200 from 11:00: due at 13:00. */
	static const char cluster[] = LIST(TEMPLATE "," SICK_NODE(
	    "n1") ","
		  "{\"kind\":\"NodeRemediation\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		  "\"metadata\":{\"name\":\"fix\",\"uid\":\"u\",\"resourceVersion\":\"3\"" FIN
		  "},\"spec\":{\"nodeSelector\":{},\"rule\":{\"conditions\":[{\"type\":"
		  "\"example.com/Sick\",\"status\":\"True\",\"forSeconds\":7200}]},"
		  "\"templateName\":\"reboot\"}}");
	assert_int_equal(pass(fx, cluster), NOW + 3600 * 1000LL);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
}

/* The status patch of the last pass, parsed into @a: its Ready condition. */
static const cJSON *ready(struct fx *fx, struct ng_arena *a)
{
	const struct fake_api_request *st =
	    fake_api_find(&fx->api, "PATCH", "/noderemediations/fix/status", 0);
	assert_non_null(st);
	const cJSON *c = ng_json_get(ng_json_get(parse(st->body, a), "status"), "conditions");
	for (const cJSON *x = c ? c->child : NULL; x; x = x->next)
		if (strcmp(ng_json_str(x, "type"), "Ready") == 0)
			return x;
	fail_msg("no Ready condition");
	return NULL;
}

/* Nothing is created, and Ready is False with @reason and a message holding @msg; a Warning
 * Event of that reason when Ready has just become so. */
static void assert_held_as(struct fx *fx, const char *reason, const char *msg, bool new_reason)
{
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 0);
	struct ng_arena *a = ng_arena_create(1u << 20);
	const cJSON *r = ready(fx, a);
	assert_string_equal(ng_json_str(r, "status"), "False");
	assert_string_equal(ng_json_str(r, "reason"), reason);
	if (!strstr(ng_json_str(r, "message"), msg))
		fail_msg("message %s lacks %s", ng_json_str(r, "message"), msg);
	ng_arena_destroy(a);
	const struct fake_api_request *ev = fake_api_find(&fx->api, "POST", "/events", 0);
	if (!new_reason) {
		assert_null(ev);
		return;
	}
	assert_non_null(ev);
	assert_non_null(strstr(ev->body, reason));
	assert_non_null(strstr(ev->body, "Warning"));
}

static void assert_held(struct fx *fx, const char *reason, const char *msg)
{
	assert_held_as(fx, reason, msg, true);
}

static void test_the_authors_are_asked_with_their_groups(void **state)
{
	struct fx *fx = *state;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("6", FIN, "")));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
	assert_int_equal(fx->authz.nasked, 2);
	assert_string_equal(fx->authz.asked[0], "rem-author ops system:authenticated -");
	assert_string_equal(fx->authz.asked[1], "tmpl-author ops system:authenticated -");
}

static void test_a_remediation_without_an_author_creates_nothing(void **state)
{
	struct fx *fx = *state;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM_AS("", "6", FIN, "")));
	assert_held(fx, "AuthorUnknown", "NodeRemediation fix has no recorded author");
	assert_int_equal(fx->authz.nasked, 0);
}

static void test_an_author_without_the_right_creates_nothing(void **state)
{
	struct fx *fx = *state;
	/* The remediation's author may not create requests: the one RBAC refused
	 * `create nodedisruptions` gets nothing through nodegate either. */
	fx->authz.deny_user = "rem-author";
	fx->authz.deny_sub = "";
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("6", FIN, "")));
	assert_held(fx, "Unauthorized",
		    "NodeRemediation fix: its author rem-author may not create nodedisruptions");
	/* The template's author, likewise. */
	fake_api_clear(&fx->api);
	fx->authz.deny_user = "tmpl-author";
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("7", FIN, "")));
	assert_held_as(fx, "Unauthorized", "NodeDisruptionTemplate reboot: its author tmpl-author",
		       false);
	/* Granted the right (or the author replaced): the next pass creates the request. */
	fake_api_clear(&fx->api);
	fx->authz.deny_user = NULL;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("8", FIN, "")));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
}

static void test_a_privileged_operation_needs_its_own_right(void **state)
{
	struct fx *fx = *state;
	const char *cluster =
	    LIST(TEMPLATE_BY("tmpl-author", REBOOT) "," SICK_NODE("n1") "," NREM("6", FIN, ""));
	fx->authz.deny_user = "rem-author";
	fx->authz.deny_sub = "privileged-operation";
	(void)pass(fx, cluster);
	assert_held(fx, "Unauthorized",
		    "may not create nodedisruptions/privileged-operation (the template's operation "
		    "is privileged: ");
	assert_string_equal(fx->authz.asked[1],
			    "rem-author ops system:authenticated privileged-operation");
	fake_api_clear(&fx->api);
	fx->authz.deny_user = NULL;
	(void)pass(fx, cluster);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/nodedisruptions"), 1);
}

static void test_an_unanswered_check_creates_nothing_and_retries(void **state)
{
	struct fx *fx = *state;
	fx->authz.unavailable = true;
	(void)pass(fx, LIST(TEMPLATE "," SICK_NODE("n1") "," NREM("6", FIN, "")));
	assert_held(fx, "AuthorizationUnavailable", "could not be checked (SubjectAccessReview");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_finalizer_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_status_then_the_request_with_its_exact_body, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_repair_is_recorded_before_its_request_goes,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_deleted_remediation_lets_go_once_its_requests_are_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_next_due_time_is_returned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_authors_are_asked_with_their_groups, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_remediation_without_an_author_creates_nothing,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_an_author_without_the_right_creates_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_privileged_operation_needs_its_own_right, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_an_unanswered_check_creates_nothing_and_retries,
					    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
