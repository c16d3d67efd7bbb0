/* controller/selfsigned: serve --self-signed against an in-memory API server
 * (tests/support/fake-api): the CA Secret created when there is none, a valid one reused without
 * a write, a serving certificate renewed when due and not before, and the caBundle patches of
 * the webhook configurations (only the webhooks that lack the CA, on the version read). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "certs/certs.h"
#include "common/buf.h"
#include "common/clock.h"
#include "controller/selfsigned_internal.h"
#include "kube/client.h"
#include "tests/support/fake-api.h"

#include <stdlib.h>
#include <string.h>

#define SECRET_PATH "/api/v1/namespaces/ng/secrets/ng-ca"

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct selfsigned_config cfg;
	unsigned installed;
	int64_t installed_not_after;
	char ca_b64[8192], ca_key_b64[8192]; /* a CA made for the test */
	char *ca_pem;
	char secret[20000]; /* the Secret holding it, as the API server returns it */
};

static void install(void *ctx, const char *cert_pem, const char *key_pem, int64_t not_after)
{
	struct fx *fx = ctx;
	assert_non_null(strstr(cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(key_pem, "PRIVATE KEY"));
	fx->installed++;
	fx->installed_not_after = not_after;
}

static void base64(const char *s, char *out, size_t cap)
{
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(ng_buf_base64(&b, s, strlen(s)), NG_OK);
	assert_true(b.len < cap);
	memcpy(out, b.data, b.len + 1);
	ng_buf_finish(&b);
}

static int setup(void **state)
{
	static struct fx fx;
	memset(&fx, 0, sizeof(fx));
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	fx.cfg = (struct selfsigned_config){.secret_ns = "ng",
					    .secret_name = "ng-ca",
					    .service_ns = "ng",
					    .service_name = "nodegate",
					    .cert_seconds = 3600,
					    .selector = "app.kubernetes.io/name=nodegate",
					    .install = install,
					    .ctx = &fx};
	const struct cert_request r = {.service = "nodegate", .ns = "ng", .days = 30};
	struct cert_pair p;
	struct ng_err err = {0};
	assert_int_equal(cert_generate(&r, &p, &err), NG_OK);
	base64(p.ca_pem, fx.ca_b64, sizeof(fx.ca_b64));
	base64(p.ca_key_pem, fx.ca_key_b64, sizeof(fx.ca_key_b64));
	fx.ca_pem = strdup(p.ca_pem);
	cert_pair_finish(&p);
	ng_fmt(fx.secret, sizeof(fx.secret),
	       "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ng-ca\","
	       "\"namespace\":\"ng\",\"resourceVersion\":\"3\"},\"data\":{\"ca.crt\":\"%s\","
	       "\"ca.key\":\"%s\"}}",
	       fx.ca_b64, fx.ca_key_b64);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	free(fx->ca_pem);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static size_t writes(const struct fx *fx)
{
	return fake_api_count(&fx->api, "POST", NULL) + fake_api_count(&fx->api, "PUT", NULL) +
	       fake_api_count(&fx->api, "PATCH", NULL) + fake_api_count(&fx->api, "DELETE", NULL);
}

static void first_finish(struct selfsigned_first *f)
{
	free(f->cert_pem);
	cert_free_secret(f->key_pem);
	free(f->ca_pem);
}

static void test_the_ca_secret_is_created_when_none_exists(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = SECRET_PATH,
						.http = 404,
						.body = "{\"kind\":\"Status\",\"code\":404}"});
	struct selfsigned_first f;
	struct ng_err err = {0};
	assert_int_equal(selfsigned_bootstrap(&fx->cfg, fx->c, 0, &f, &err), NG_OK);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/api/v1/namespaces/ng/secrets"), 1);
	assert_int_equal(writes(fx), 1);
	const struct fake_api_request *q =
	    fake_api_find(&fx->api, "POST", "/api/v1/namespaces/ng/secrets", 0);
	assert_non_null(strstr(q->body, "\"kind\":\"Secret\""));
	assert_non_null(strstr(q->body, "\"name\":\"ng-ca\""));
	assert_non_null(strstr(q->body, "\"namespace\":\"ng\""));
	assert_non_null(strstr(q->body, "\"app.kubernetes.io/name\":\"nodegate\""));
	assert_non_null(strstr(q->body, "\"ca.key\":\""));
	/* The CA written is the CA returned. */
	char ca_b64[8192];
	base64(f.ca_pem, ca_b64, sizeof(ca_b64));
	char want[8300];
	ng_fmt(want, sizeof(want), "\"ca.crt\":\"%s\"", ca_b64);
	assert_non_null(strstr(q->body, want));
	int64_t now_s = ng_now_wall_ms() / 1000;
	assert_true(f.not_after > now_s + 3000 && f.not_after <= now_s + 3600);
	first_finish(&f);
}

static void test_a_valid_secret_is_reused_without_a_write(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = SECRET_PATH,
							  .http = 200,
							  .body = fx->secret});
	struct selfsigned_first f;
	struct ng_err err = {0};
	assert_int_equal(selfsigned_bootstrap(&fx->cfg, fx->c, 0, &f, &err), NG_OK);
	assert_int_equal(writes(fx), 0);
	assert_string_equal(f.ca_pem, fx->ca_pem);
	first_finish(&f);
}

/* A validating configuration whose webhook 0 has the CA and 1 an old one, and a mutating one
 * with no caBundle. */
static void webhooks(struct fx *fx, char *vwc, size_t cap)
{
	ng_fmt(vwc, cap,
	       "{\"kind\":\"ValidatingWebhookConfigurationList\",\"items\":[{\"metadata\":{"
	       "\"name\":\"ng-v\",\"resourceVersion\":\"7\"},\"webhooks\":[{\"name\":\"a.nodegate."
	       "io\",\"clientConfig\":{\"caBundle\":\"%s\"}},{\"name\":\"b.nodegate.io\","
	       "\"clientConfig\":{\"caBundle\":\"b2xk\"}}]}]}",
	       fx->ca_b64);
	fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = SECRET_PATH,
							  .http = 200,
							  .body = fx->secret});
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "validatingwebhookconfigurations?",
						.http = 200,
						.body = vwc});
	fake_api_reply(
	    &fx->api,
	    &(struct fake_api_reply){
		.path_contains = "mutatingwebhookconfigurations?",
		.http = 200,
		.body = "{\"kind\":\"MutatingWebhookConfigurationList\",\"items\":[{"
			"\"metadata\":{\"name\":\"ng-m\",\"resourceVersion\":\"9\"},"
			"\"webhooks\":[{\"name\":\"m.nodegate.io\",\"clientConfig\":{}}]}]}"});
}

static struct selfsigned *renewer(struct fx *fx, int64_t not_after)
{
	const struct selfsigned_first f = {.ca_pem = fx->ca_pem, .not_after = not_after};
	struct ng_err err = {0};
	struct selfsigned *s = selfsigned_create(&fx->cfg, &f, fx->c, &err);
	assert_non_null(s);
	return s;
}

static void test_a_certificate_near_expiry_is_renewed(void **state)
{
	struct fx *fx = *state;
	static char vwc[20000];
	webhooks(fx, vwc, sizeof(vwc));
	int64_t now_s = ng_now_wall_ms() / 1000;
	struct selfsigned *s = renewer(fx, now_s);
	(void)selfsigned_step(s);
	assert_int_equal(fx->installed, 1);
	assert_true(fx->installed_not_after > now_s + 3000);
	/* Renewed: not again on the next step. */
	(void)selfsigned_step(s);
	assert_int_equal(fx->installed, 1);
	/* No new CA: the Secret is not written. */
	assert_int_equal(writes(fx) - fake_api_count(&fx->api, "PATCH", "webhookconfigurations/"),
			 0);
	selfsigned_stop(s);
}

static void test_a_certificate_not_due_is_kept(void **state)
{
	struct fx *fx = *state;
	static char vwc[20000];
	webhooks(fx, vwc, sizeof(vwc));
	struct selfsigned *s = renewer(fx, ng_now_wall_ms() / 1000 + 3600);
	int64_t next = selfsigned_step(s);
	assert_int_equal(fx->installed, 0);
	/* Next: the minute's caBundle check. */
	assert_true(next > ng_now_mono_us() + 50 * 1000000LL);
	assert_true(next <= ng_now_mono_us() + 61 * 1000000LL);
	selfsigned_stop(s);
}

static void test_the_ca_bundles_are_patched_where_missing(void **state)
{
	struct fx *fx = *state;
	static char vwc[20000];
	webhooks(fx, vwc, sizeof(vwc));
	struct selfsigned *s = renewer(fx, ng_now_wall_ms() / 1000 + 3600);
	(void)selfsigned_step(s);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", NULL), 2);
	const struct fake_api_request *v =
	    fake_api_find(&fx->api, "PATCH", "/validatingwebhookconfigurations/ng-v", 0);
	const struct fake_api_request *m =
	    fake_api_find(&fx->api, "PATCH", "/mutatingwebhookconfigurations/ng-m", 0);
	assert_non_null(v);
	assert_non_null(m);
	assert_string_equal(v->content_type, "application/json-patch+json");
	/* On the version read; webhook 1 only (0 has the CA already). */
	assert_non_null(strstr(v->body, "\"path\":\"/metadata/resourceVersion\""));
	assert_non_null(strstr(v->body, "\"7\""));
	assert_non_null(strstr(v->body, "\"/webhooks/1/clientConfig/caBundle\""));
	assert_null(strstr(v->body, "\"/webhooks/0/clientConfig/caBundle\""));
	assert_non_null(strstr(v->body, fx->ca_b64));
	assert_non_null(strstr(m->body, "\"9\""));
	assert_non_null(strstr(m->body, "\"/webhooks/0/clientConfig/caBundle\""));
	assert_non_null(strstr(m->body, fx->ca_b64));
	selfsigned_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_the_ca_secret_is_created_when_none_exists, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_valid_secret_is_reused_without_a_write, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_certificate_near_expiry_is_renewed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_certificate_not_due_is_kept, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_ca_bundles_are_patched_where_missing, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
