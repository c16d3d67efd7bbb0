/* kube/auth: callers authenticated by TokenReview and authorized by SubjectAccessReview, the
 * Authorization header's grammar, and the cache (what it keys on, how long, how big) — through
 * clients whose transport is the in-memory fake API server, with a clock the tests move. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "kube/auth.h"
#include "kube/client.h"
#include "kube/config.h"
#include "tests/support/fake-api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TR "tokenreviews"
#define SAR "subjectaccessreviews"

static const char alice_tr[] =
    "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"spec\":{\"token\":"
    "\"tok-alice\"},\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\","
    "\"uid\":\"u-1\",\"groups\":[\"ops\",\"system:authenticated\"],\"extra\":{\"scopes\":"
    "[\"a\",\"b\"]}},\"audiences\":[\"https://kubernetes.default.svc\"]}}";
static const char allowed_sar[] = "{\"status\":{\"allowed\":true,\"reason\":\"RBAC: allowed\"}}";
static const char denied_sar[] = "{\"status\":{\"allowed\":false,\"reason\":\"no RBAC rule\"}}";
/* What the API server answers a token it does not know: status.user is {} and authenticated
 * (omitempty) is absent. */
static const char unknown_tr[] = "{\"status\":{\"user\":{}}}";

static _Atomic int64_t now_us = 1000000;

static int64_t fake_now(void)
{
	return atomic_load(&now_us);
}

static void advance_ms(int64_t ms)
{
	atomic_fetch_add(&now_us, ms * 1000);
}

struct fx {
	struct fake_api api;
	struct kube_auth *a;
};

static struct kube_auth *make(struct fake_api *api, struct kube_auth_options o)
{
	struct kube_config cfg = {.server = (char *)"https://127.0.0.1:1"};
	o.now_mono_us = fake_now;
	struct ng_err err = {0};
	struct kube_auth *a = kube_auth_create(&cfg, &o, &err);
	assert_non_null(a);
	kube_auth_set_transport(a, &api->transport);
	return a;
}

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.a = make(&fx.api, (struct kube_auth_options){0});
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	kube_auth_destroy(fx->a);
	fake_api_finish(&fx->api);
	return 0;
}

static void reply(struct fx *fx, const char *path, long http, const char *body)
{
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = path, .http = http, .body = body});
}

static enum kube_auth_result check(struct fx *fx, const char *header, const char *path,
				   struct kube_auth_user *u, struct ng_err *err)
{
	return kube_auth_check(fx->a, header, "get", path, u, err);
}

static void test_allowed_sends_both_reviews(void **state)
{
	struct fx *fx = *state;
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, allowed_sar);
	struct kube_auth_user u;
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, &err), KUBE_AUTH_ALLOWED);
	assert_string_equal(u.name, "alice");
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", TR, 0);
	assert_non_null(q);
	assert_string_equal(q->path, "/apis/authentication.k8s.io/v1/tokenreviews");
	assert_string_equal(q->content_type, "application/json");
	assert_string_equal(q->body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
				     "\"TokenReview\",\"spec\":{\"token\":\"tok-alice\"}}");
	q = fake_api_find(&fx->api, "POST", SAR, 0);
	assert_non_null(q);
	assert_string_equal(q->path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
	assert_string_equal(
	    q->body, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
		     "\"spec\":{\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":\"get\"},"
		     "\"user\":\"alice\",\"groups\":[\"ops\",\"system:authenticated\"],\"uid\":"
		     "\"u-1\",\"extra\":{\"scopes\":[\"a\",\"b\"]}}}");
	assert_int_equal(fx->api.nreqs, 2);
}

static void test_unknown_token_is_unauthenticated_without_access_review(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){
			   .path_contains = TR, .http = 201, .body = unknown_tr, .times = 1});
	struct kube_auth_user u;
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer nope", "/metrics", &u, &err), KUBE_AUTH_UNAUTHENTICATED);
	assert_string_equal(u.name, "");
	assert_non_null(strstr(err.msg, "token not authenticated"));
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 0);
	/* The authenticator's own error is passed on for the log; authenticated: false counts. */
	reply(fx, TR, 201,
	      "{\"status\":{\"authenticated\":false,\"user\":{},\"error\":\"token has expired\"}}");
	assert_int_equal(check(fx, "Bearer expired", "/metrics", &u, &err),
			 KUBE_AUTH_UNAUTHENTICATED);
	assert_non_null(strstr(err.msg, "token has expired"));
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 0);
}

static void test_authenticated_but_denied_is_forbidden(void **state)
{
	struct fx *fx = *state;
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, denied_sar);
	struct kube_auth_user u;
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer tok-alice", "/debug/cache", &u, &err),
			 KUBE_AUTH_FORBIDDEN);
	assert_string_equal(u.name, "alice");
	assert_int_equal(err.status, NG_EFORBIDDEN);
	assert_string_equal(err.msg, "forbidden: User \"alice\" cannot get path \"/debug/cache\": "
				     "no RBAC rule");
	/* No opinion (neither allowed nor denied) is a refusal too; both at once is an error. */
	fx->api.replies[1].body = "{\"status\":{}}";
	assert_int_equal(check(fx, "Bearer tok-alice", "/a", &u, &err), KUBE_AUTH_FORBIDDEN);
	fx->api.replies[1].body = "{\"status\":{\"allowed\":true,\"denied\":true}}";
	assert_int_equal(check(fx, "Bearer tok-alice", "/b", &u, &err), KUBE_AUTH_ERROR);
	fx->api.replies[1].body = "{\"status\":{\"allowed\":\"yes\"}}";
	assert_int_equal(check(fx, "Bearer tok-alice", "/c", &u, &err), KUBE_AUTH_ERROR);
}

static void test_api_failures_are_errors_and_not_cached(void **state)
{
	struct fx *fx = *state;
	struct ng_err err = {0};
	static const struct {
		long http;
		bool fail;
		const char *body;
		ng_status want;
	} cases[] = {
	    {0, true, NULL, NG_EIO},
	    {403, false,
	     "{\"kind\":\"Status\",\"message\":\"tokenreviews.authentication.k8s.io is "
	     "forbidden\"}",
	     NG_EKUBE},
	    {500, false, "{}", NG_EKUBE},
	    {201, false, "not json", NG_EPARSE},
	    {201, false, "{\"kind\":\"TokenReview\"}", NG_EPARSE},
	    {201, false, "{\"status\":{\"authenticated\":true,\"user\":{}}}", NG_EPARSE},
	    {201, false, "{\"status\":{\"authenticated\":\"true\"}}", NG_EPARSE},
	    {201, false,
	     "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"x\",\"groups\":[1]}}}",
	     NG_ELIMIT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = TR,
								  .http = cases[i].http,
								  .fail = cases[i].fail,
								  .body = cases[i].body,
								  .times = 2});
		for (int k = 0; k < 2; k++) { /* an error is not cached: asked twice */
			size_t before = fake_api_count(&fx->api, NULL, TR);
			assert_int_equal(check(fx, "Bearer t", "/metrics", NULL, &err),
					 KUBE_AUTH_ERROR);
			assert_int_equal(err.status, cases[i].want);
			assert_int_equal(fake_api_count(&fx->api, NULL, TR), before + 1);
			assert_non_null(strstr(err.msg, "TokenReview"));
		}
	}
	assert_non_null(strstr(err.msg, "user.groups"));
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 0);
	/* The access review failing is an error too. */
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 503, "{\"kind\":\"Status\",\"message\":\"etcd is sad\"}");
	assert_int_equal(check(fx, "Bearer t", "/metrics", NULL, &err), KUBE_AUTH_ERROR);
	assert_int_equal(err.status, NG_EKUBE);
	assert_string_equal(err.msg, "SubjectAccessReview: HTTP 503: etcd is sad");
}

static void test_too_many_groups_is_an_error(void **state)
{
	struct fx *fx = *state;
	struct ng_buf b;
	ng_buf_init(&b, 1 << 20);
	assert_int_equal(ng_buf_puts(&b, "{\"status\":{\"authenticated\":true,\"user\":{"
					 "\"username\":\"x\",\"groups\":["),
			 NG_OK);
	for (int i = 0; i <= KUBE_AUTH_MAX_GROUPS; i++)
		assert_int_equal(ng_buf_printf(&b, "%s\"g%d\"", i ? "," : "", i), NG_OK);
	assert_int_equal(ng_buf_puts(&b, "]}}}"), NG_OK);
	reply(fx, TR, 201, b.data);
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer t", "/metrics", NULL, &err), KUBE_AUTH_ERROR);
	assert_int_equal(err.status, NG_ELIMIT);
	ng_buf_finish(&b);
}

static void test_malformed_headers_ask_nothing(void **state)
{
	struct fx *fx = *state;
	char *big = malloc(KUBE_AUTH_TOKEN_MAX_BYTES + 128);
	assert_non_null(big);
	memcpy(big, "Bearer ", 7);
	memset(big + 7, 'a', KUBE_AUTH_TOKEN_MAX_BYTES + 1);
	big[7 + KUBE_AUTH_TOKEN_MAX_BYTES + 1] = '\0';
	const struct {
		const char *h;
		ng_status want;
	} cases[] = {
	    {NULL, NG_EPARSE},
	    {"", NG_EPARSE},
	    {"   ", NG_EPARSE},
	    {"Basic YWxpY2U6eA==", NG_EPARSE},
	    {"Bearer", NG_EPARSE},
	    {"Bearer ", NG_EPARSE},
	    {"Bearer   ", NG_EPARSE},
	    {"Bearerabc", NG_EPARSE},
	    {"Bearer\tabc", NG_EPARSE},
	    {"Bearer a b", NG_EPARSE},
	    {"Bearer a,b", NG_EPARSE},
	    {"Bearer ab=c", NG_EPARSE},
	    {"Bearer a\"b", NG_EPARSE},
	    {"Bearer \xc3\xa9", NG_EPARSE},
	    {"Bearer a\r\nX: y", NG_EPARSE},
	    {"Token abc", NG_EPARSE},
	    {"Bear abc", NG_EPARSE},
	    {big, NG_ELIMIT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_err err = {0};
		struct kube_auth_user u = {.name = "stale"};
		assert_int_equal(check(fx, cases[i].h, "/metrics", &u, &err),
				 KUBE_AUTH_UNAUTHENTICATED);
		assert_int_equal(err.status, cases[i].want);
		assert_string_equal(u.name, "");
	}
	assert_int_equal(fx->api.nreqs, 0);
	/* A header that is mostly spaces is read no further than the cap. */
	memset(big, ' ', KUBE_AUTH_TOKEN_MAX_BYTES + 100);
	big[KUBE_AUTH_TOKEN_MAX_BYTES + 100] = '\0';
	struct ng_err err = {0};
	assert_int_equal(check(fx, big, "/metrics", NULL, &err), KUBE_AUTH_UNAUTHENTICATED);
	assert_int_equal(err.status, NG_ELIMIT);
	free(big);
	assert_int_equal(fx->api.nreqs, 0);
}

static void test_well_formed_headers_are_asked_about(void **state)
{
	struct fx *fx = *state;
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, allowed_sar);
	char *big = malloc(KUBE_AUTH_TOKEN_MAX_BYTES + 16);
	assert_non_null(big);
	memcpy(big, "Bearer ", 7);
	memset(big + 7, 'x', KUBE_AUTH_TOKEN_MAX_BYTES);
	big[7 + KUBE_AUTH_TOKEN_MAX_BYTES] = '\0';
	/* The scheme is case-insensitive (RFC 7235); spaces around are optional whitespace. */
	const struct {
		const char *h, *token;
	} cases[] = {
	    {"bearer t1", "t1"},
	    {"BEARER t2", "t2"},
	    {" \tBearer    t3 \t", "t3"},
	    {"Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_~+/==",
	     "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_~+/=="},
	    {big, big + 7},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ng_err err = {0};
		assert_int_equal(check(fx, cases[i].h, "/metrics", NULL, &err), KUBE_AUTH_ALLOWED);
		const struct fake_api_request *q = fake_api_find(&fx->api, "POST", TR, i);
		assert_non_null(q);
		char want[KUBE_AUTH_TOKEN_MAX_BYTES + 128];
		(void)snprintf(want, sizeof(want), "\"token\":\"%s\"}", cases[i].token);
		assert_non_null(strstr(q->body, want));
	}
	free(big);
}

static void test_bad_verb_or_path_is_a_caller_error(void **state)
{
	struct fx *fx = *state;
	char path[KUBE_AUTH_PATH_MAX_BYTES + 2];
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	struct ng_err err = {0};
	assert_int_equal(kube_auth_check(fx->a, "Bearer t", "", "/m", NULL, &err), KUBE_AUTH_ERROR);
	assert_int_equal(err.status, NG_EINVAL);
	assert_int_equal(kube_auth_check(fx->a, "Bearer t", "get", "/m\n", NULL, &err),
			 KUBE_AUTH_ERROR);
	assert_int_equal(kube_auth_check(fx->a, "Bearer t", "get", path, NULL, &err),
			 KUBE_AUTH_ERROR);
	assert_int_equal(kube_auth_check(fx->a, "Bearer t", "get", NULL, NULL, &err),
			 KUBE_AUTH_ERROR);
	assert_int_equal(fx->api.nreqs, 0);
}

static void test_allowed_is_cached_for_its_ttl(void **state)
{
	struct fx *fx = *state;
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, allowed_sar);
	struct kube_auth_user u;
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 2);
	advance_ms(KUBE_AUTH_ALLOWED_TTL_MS - 1);
	memset(&u, 0, sizeof(u));
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, NULL), KUBE_AUTH_ALLOWED);
	assert_string_equal(u.name, "alice"); /* the cached answer keeps the user */
	assert_int_equal(fx->api.nreqs, 2);
	assert_int_equal(kube_auth_cache_entries(fx->a), 1);
	/* The key is token, verb and path: another of any asks again. */
	assert_int_equal(check(fx, "Bearer tok-alice", "/debug/cache", NULL, NULL),
			 KUBE_AUTH_ALLOWED);
	assert_int_equal(kube_auth_check(fx->a, "Bearer tok-alice", "post", "/metrics", NULL, NULL),
			 KUBE_AUTH_ALLOWED);
	assert_int_equal(check(fx, "Bearer tok-bob", "/metrics", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 8);
	/* After the TTL the first answer is asked for again. */
	advance_ms(1);
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 10);
	struct ng_buf m;
	ng_buf_init(&m, 1 << 16);
	assert_int_equal(kube_auth_render_metrics(fx->a, &m), NG_OK);
	assert_non_null(strstr(m.data, "nodegate_auth_checks_total{result=\"allowed\"} 6\n"));
	assert_non_null(strstr(m.data, "nodegate_auth_checks_total{result=\"forbidden\"} 0\n"));
	assert_non_null(strstr(m.data, "nodegate_auth_cache_hits_total 1\n"));
	assert_non_null(strstr(
	    m.data, "nodegate_auth_reviews_total{review=\"tokenreview\",outcome=\"ok\"} 5\n"));
	assert_non_null(strstr(m.data, "nodegate_auth_reviews_total{review=\"subjectaccessreview\","
				       "outcome=\"failed\"} 0\n"));
	assert_non_null(strstr(m.data, "nodegate_auth_cache_entries 4\n"));
	ng_buf_finish(&m);
}

static void test_refusals_are_cached_for_the_shorter_ttl(void **state)
{
	struct fx *fx = *state;
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, denied_sar);
	struct kube_auth_user u;
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, &err), KUBE_AUTH_FORBIDDEN);
	assert_int_equal(fx->api.nreqs, 2);
	advance_ms(KUBE_AUTH_REFUSED_TTL_MS - 1);
	memset(&err, 0, sizeof(err));
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, &err), KUBE_AUTH_FORBIDDEN);
	assert_string_equal(u.name, "alice");
	assert_int_equal(err.status, NG_EFORBIDDEN);
	assert_non_null(strstr(err.msg, "cached"));
	assert_int_equal(fx->api.nreqs, 2);
	advance_ms(1);
	assert_int_equal(check(fx, "Bearer tok-alice", "/metrics", &u, &err), KUBE_AUTH_FORBIDDEN);
	assert_int_equal(fx->api.nreqs, 4);
	/* An unauthenticated token is remembered as long. */
	fx->api.replies[0].body = unknown_tr;
	assert_int_equal(check(fx, "Bearer tok-x", "/metrics", &u, &err),
			 KUBE_AUTH_UNAUTHENTICATED);
	assert_int_equal(fx->api.nreqs, 5);
	advance_ms(KUBE_AUTH_REFUSED_TTL_MS - 1);
	assert_int_equal(check(fx, "Bearer tok-x", "/metrics", &u, &err),
			 KUBE_AUTH_UNAUTHENTICATED);
	assert_int_equal(fx->api.nreqs, 5);
	advance_ms(1);
	assert_int_equal(check(fx, "Bearer tok-x", "/metrics", &u, &err),
			 KUBE_AUTH_UNAUTHENTICATED);
	assert_int_equal(fx->api.nreqs, 6);
}

static void test_ttls_are_options_and_negative_disables(void **state)
{
	struct fx *fx = *state;
	kube_auth_destroy(fx->a);
	fx->a =
	    make(&fx->api, (struct kube_auth_options){.allowed_ttl_ms = 50, .refused_ttl_ms = -1});
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, allowed_sar);
	assert_int_equal(check(fx, "Bearer a", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	advance_ms(49);
	assert_int_equal(check(fx, "Bearer a", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 2);
	advance_ms(1);
	assert_int_equal(check(fx, "Bearer a", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 4);
	fx->api.replies[1].body = denied_sar;
	assert_int_equal(check(fx, "Bearer a", "/x", NULL, NULL), KUBE_AUTH_FORBIDDEN);
	assert_int_equal(check(fx, "Bearer a", "/x", NULL, NULL), KUBE_AUTH_FORBIDDEN);
	assert_int_equal(fx->api.nreqs, 8);
}

static void test_cache_is_bounded(void **state)
{
	struct fx *fx = *state;
	kube_auth_destroy(fx->a);
	fx->a = make(&fx->api, (struct kube_auth_options){.max_entries = 4});
	reply(fx, TR, 201, alice_tr);
	reply(fx, SAR, 201, allowed_sar);
	char h[32];
	for (int i = 0; i < 5; i++) {
		(void)snprintf(h, sizeof(h), "Bearer t%d", i);
		assert_int_equal(check(fx, h, "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
		advance_ms(1);
	}
	assert_int_equal(kube_auth_cache_entries(fx->a), 4);
	/* The oldest answer made room for the fifth; the newest are still cached. */
	fake_api_clear(&fx->api);
	assert_int_equal(check(fx, "Bearer t4", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(check(fx, "Bearer t1", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 0);
	assert_int_equal(check(fx, "Bearer t0", "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fx->api.nreqs, 2);
	/* The default bound holds under many tokens. */
	kube_auth_destroy(fx->a);
	fx->a = make(&fx->api, (struct kube_auth_options){0});
	for (int i = 0; i < 3 * KUBE_AUTH_MAX_ENTRIES; i++) {
		(void)snprintf(h, sizeof(h), "Bearer many-%d", i);
		assert_int_equal(check(fx, h, "/m", NULL, NULL), KUBE_AUTH_ALLOWED);
		fake_api_clear(&fx->api);
	}
	size_t n = kube_auth_cache_entries(fx->a);
	assert_true(n <= KUBE_AUTH_MAX_ENTRIES);
	assert_true(n > KUBE_AUTH_MAX_ENTRIES / 2);
}

static void test_audience_is_sent_and_required(void **state)
{
	struct fx *fx = *state;
	kube_auth_destroy(fx->a);
	fx->a = make(&fx->api, (struct kube_auth_options){.audience = "nodegate"});
	reply(fx, TR, 201, alice_tr); /* audiences: the API server's only */
	reply(fx, SAR, 201, allowed_sar);
	struct ng_err err = {0};
	assert_int_equal(check(fx, "Bearer a", "/m", NULL, &err), KUBE_AUTH_UNAUTHENTICATED);
	assert_non_null(strstr(err.msg, "not for audience nodegate"));
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", TR, 0);
	assert_non_null(strstr(q->body, "\"spec\":{\"token\":\"a\",\"audiences\":[\"nodegate\"]}"));
	fx->api.replies[0].body = "{\"status\":{\"authenticated\":true,\"user\":{\"username\":"
				  "\"svc\"},\"audiences\":[\"x\",\"nodegate\"]}}";
	assert_int_equal(check(fx, "Bearer b", "/m", NULL, &err), KUBE_AUTH_ALLOWED);
	q = fake_api_find(&fx->api, "POST", SAR, 0);
	assert_string_equal(
	    q->body, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
		     "\"spec\":{\"nonResourceAttributes\":{\"path\":\"/m\",\"verb\":\"get\"},"
		     "\"user\":\"svc\"}}");
}

static void test_options_are_checked(void **state)
{
	(void)state;
	struct kube_config cfg = {.server = (char *)"https://127.0.0.1:1"};
	struct ng_err err = {0};
	assert_null(kube_auth_create(&cfg, &(struct kube_auth_options){.max_inflight = 65}, &err));
	assert_int_equal(err.status, NG_EINVAL);
	assert_null(kube_auth_create(&cfg, &(struct kube_auth_options){.audience = ""}, &err));
	assert_null(kube_auth_create(&cfg, &(struct kube_auth_options){.audience = "a\nb"}, &err));
	assert_null(
	    kube_auth_create(&cfg, &(struct kube_auth_options){.max_entries = 1u << 21}, &err));
	struct kube_auth *a = kube_auth_create(&cfg, NULL, &err);
	assert_non_null(a);
	assert_int_equal(kube_auth_cache_entries(a), 0);
	kube_auth_destroy(a);
	kube_auth_destroy(NULL);
	assert_string_equal(kube_auth_result_str(KUBE_AUTH_FORBIDDEN), "forbidden");
}

/* A thread-safe transport for the concurrent test: every token is alice, allowed. */
static atomic_int inflight, max_inflight_seen, calls;

static ng_status threaded_answer(void *ctx, const struct kube_request *rq, struct ng_buf *out,
				 long *ret_http, struct ng_err *reterr)
{
	(void)ctx;
	(void)reterr;
	int n = atomic_fetch_add(&inflight, 1) + 1;
	int seen = atomic_load(&max_inflight_seen);
	while (n > seen && !atomic_compare_exchange_weak(&max_inflight_seen, &seen, n))
		;
	atomic_fetch_add(&calls, 1);
	*ret_http = 201;
	ng_status st = ng_buf_puts(out, strstr(rq->path, TR) ? alice_tr : allowed_sar);
	atomic_fetch_sub(&inflight, 1);
	return st;
}

static void *hammer(void *arg)
{
	struct kube_auth *a = arg;
	char h[32];
	for (int i = 0; i < 300; i++) {
		(void)snprintf(h, sizeof(h), "Bearer tok-%d", i % 37);
		struct kube_auth_user u;
		if (kube_auth_check(a, h, "get", i % 2 ? "/metrics" : "/debug/cache", &u, NULL) !=
			KUBE_AUTH_ALLOWED ||
		    strcmp(u.name, "alice") != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_concurrent_checks(void **state)
{
	(void)state;
	struct kube_config cfg = {.server = (char *)"https://127.0.0.1:1"};
	struct ng_err err = {0};
	struct kube_auth *a = kube_auth_create(
	    &cfg, &(struct kube_auth_options){.max_inflight = 2, .max_entries = 16}, &err);
	assert_non_null(a);
	const struct kube_transport t = {threaded_answer, NULL};
	kube_auth_set_transport(a, &t);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hammer, a), 0);
	for (int i = 0; i < 4; i++) {
		void *ret = NULL;
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
	assert_true(atomic_load(&max_inflight_seen) <= 2);
	assert_true(atomic_load(&calls) > 0);
	assert_true(kube_auth_cache_entries(a) <= 16);
	kube_auth_destroy(a);
}

/* A resource check of a user given whole (an admission review's userInfo): the body names the
 * user, groups, uid, extra and the attributes; the answer is cached per user and attributes. */
static void test_resource_check_for_a_given_user(void **state)
{
	struct fx *fx = *state;
	static const char *const answers[] = {denied_sar, allowed_sar, allowed_sar, "{}"};
	for (int i = 0; i < 4; i++)
		fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = SAR,
								  .http = i == 3 ? 500 : 201,
								  .body = answers[i],
								  .times = 1});
	static const char *const groups[] = {"ops", "system:authenticated"};
	static const char *const scopes[] = {"a"};
	const struct kube_auth_extra extra[] = {{"scopes", scopes, 1}};
	const struct kube_auth_subject alice = {"alice", "u-1", groups, 2, extra, 1};
	const struct kube_auth_resource what = {
	    "create", "nodegate.io", "nodedisruptions", "privileged-operation", NULL, NULL};
	struct ng_err err = {0};
	assert_int_equal(kube_auth_can(fx->a, &alice, &what, &err), KUBE_AUTH_FORBIDDEN);
	assert_non_null(strstr(err.msg,
			       "User \"alice\" cannot create "
			       "nodedisruptions/privileged-operation in API group nodegate.io"));
	const struct fake_api_request *q = fake_api_find(&fx->api, "POST", SAR, 0);
	assert_string_equal(
	    q->body,
	    "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
	    "\"spec\":{\"resourceAttributes\":{\"verb\":\"create\",\"group\":\"nodegate.io\","
	    "\"resource\":\"nodedisruptions\",\"subresource\":\"privileged-operation\"},"
	    "\"user\":\"alice\",\"groups\":[\"ops\",\"system:authenticated\"],\"uid\":"
	    "\"u-1\",\"extra\":{\"scopes\":[\"a\"]}}}");
	/* Cached for the refused TTL: the same question is not asked again. */
	assert_int_equal(kube_auth_can(fx->a, &alice, &what, &err), KUBE_AUTH_FORBIDDEN);
	assert_non_null(strstr(err.msg, "(cached)"));
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 1);
	/* Another group is another user: asked. */
	const struct kube_auth_subject other = {"alice", "u-1", groups, 1, extra, 1};
	assert_int_equal(kube_auth_can(fx->a, &other, &what, NULL), KUBE_AUTH_ALLOWED);
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 2);
	/* The refusal expires: asked again, and now allowed. */
	advance_ms(KUBE_AUTH_REFUSED_TTL_MS + 1);
	assert_int_equal(kube_auth_can(fx->a, &alice, &what, &err), KUBE_AUTH_ALLOWED);
	assert_int_equal(fake_api_count(&fx->api, NULL, SAR), 3);
	/* The API server down: an error, never cached, never allowed. */
	advance_ms(KUBE_AUTH_ALLOWED_TTL_MS + 1);
	assert_int_equal(kube_auth_can(fx->a, &alice, &what, &err), KUBE_AUTH_ERROR);
	/* A subject without a user is a caller bug. */
	const struct kube_auth_subject nobody = {0};
	assert_int_equal(kube_auth_can(fx->a, &nobody, &what, &err), KUBE_AUTH_ERROR);
	assert_int_equal(err.status, NG_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_allowed_sends_both_reviews, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_unknown_token_is_unauthenticated_without_access_review, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_authenticated_but_denied_is_forbidden, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_api_failures_are_errors_and_not_cached, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_too_many_groups_is_an_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_headers_ask_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_well_formed_headers_are_asked_about, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_bad_verb_or_path_is_a_caller_error, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_allowed_is_cached_for_its_ttl, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals_are_cached_for_the_shorter_ttl, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_ttls_are_options_and_negative_disables, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_cache_is_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_audience_is_sent_and_required, setup, teardown),
	    cmocka_unit_test(test_options_are_checked),
	    cmocka_unit_test_setup_teardown(test_resource_check_for_a_given_user, setup, teardown),
	    cmocka_unit_test(test_concurrent_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
