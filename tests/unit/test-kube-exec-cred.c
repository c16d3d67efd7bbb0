/* kube/exec_cred: kubeconfig exec credential plugins, run for real as small shell scripts the
 * tests write: their answers, the cache, and every way a plugin can misbehave. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/clock.h"
#include "kube/config.h"
#include "kube/exec_cred.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define V1 "client.authentication.k8s.io/v1"
#define PEM_CERT "-----BEGIN CERTIFICATE-----\\nQ0VSVAo=\\n-----END CERTIFICATE-----\\n"
#define PEM_KEY "-----BEGIN PRIVATE KEY-----\\nS0VZCg==\\n-----END PRIVATE KEY-----\\n"

static char tmpdir[256];

static int setup_tmp(void **state)
{
	const char *base = getenv("TMPDIR");
	(void)snprintf(tmpdir, sizeof(tmpdir), "%s/ng-exec-XXXXXX",
		       base && base[0] ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes an executable shell script tmpdir/@name with @body; returns its path (static). */
static const char *script(const char *name, const char *body)
{
	static char path[4][PATH_MAX];
	static int next;
	char *p = path[next++ % 4];
	(void)snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	(void)mkdir(p, 0700);
	*slash = '/';
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	(void)fprintf(f, "#!/bin/sh\n%s\n", body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, 0700), 0);
	return p;
}

/* A configuration whose user runs @command with the exec fields @extra ("" or ", k: v"). */
static void config_for(const char *command, const char *extra, struct kube_config *c)
{
	char yaml[4096], mode[512];
	/* v1 needs interactiveMode, as kubectl says. */
	(void)snprintf(mode, sizeof(mode), "%s, interactiveMode: Never", extra);
	(void)snprintf(yaml, sizeof(yaml),
		       "clusters:\n- name: a\n  cluster:\n    server: https://a:6443\n"
		       "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
		       "      extension: {audience: nodegate, n: 3, on: true}\n"
		       "users:\n- name: u\n  user:\n    exec: {command: \"%s\", apiVersion: " V1
		       "%s}\n"
		       "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
		       "current-context: x\n",
		       command, strstr(extra, "interactiveMode") ? extra : mode);
	struct ng_err err = {0};
	ng_status st = kube_config_parse_kubeconfig(yaml, strlen(yaml), tmpdir, NULL, c, &err);
	if (st != NG_OK)
		print_error("%s\n", err.msg);
	assert_int_equal(st, NG_OK);
	assert_non_null(c->exec);
}

static ng_status get(struct kube_config *c, struct kube_exec_answer *a, uint64_t *gen,
		     struct ng_err *err)
{
	memset(a, 0, sizeof(*a));
	return kube_exec_cred_get(c->exec, a, gen, err);
}

static void test_answer_parser_takes_tokens_and_certificates(void **state)
{
	struct kube_exec_answer a;
	struct ng_err err = {0};
	const char *tok = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{"
			  "\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}";
	assert_int_equal(kube_exec_cred_parse(tok, strlen(tok), V1, &a, &err), NG_OK);
	assert_string_equal(a.token, "abc");
	assert_int_equal(a.expires_wall_ms, 1893456000000LL);
	kube_exec_answer_finish(&a);
	const char *cert =
	    "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{"
	    "\"clientCertificateData\":\"" PEM_CERT "\",\"clientKeyData\":\"" PEM_KEY "\"}}";
	assert_int_equal(kube_exec_cred_parse(cert, strlen(cert), V1, &a, &err), NG_OK);
	assert_null(a.token);
	assert_non_null(strstr(a.cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(a.key_pem, "BEGIN PRIVATE KEY"));
	assert_int_equal(a.expires_wall_ms, 0);
	kube_exec_answer_finish(&a);
}

static void test_answer_parser_refuses_what_is_not_a_credential(void **state)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
	    {"{", "not JSON"},
	    {"{\"kind\":\"Pod\",\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"a\"}}",
	     "kind must be ExecCredential"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
	     "v1beta1\",\"status\":{\"token\":\"a\"}}",
	     "is not the kubeconfig's"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\"}", "status: required"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{}}",
	     "neither token nor"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
	     "\",\"status\":{\"token\":\"a b\"}}",
	     "not allowed in a token"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
	     "\",\"status\":{\"clientCertificateData\":\"" PEM_CERT "\"}}",
	     "must be set together"},
	    {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
	     "\",\"status\":{\"token\":\"a\",\"expirationTimestamp\":\"soon\"}}",
	     "expirationTimestamp"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kube_exec_answer a;
		memset(&a, 0xad, sizeof(a));
		struct ng_err err = {0};
		assert_int_equal(
		    kube_exec_cred_parse(bad[i].json, strlen(bad[i].json), V1, &a, &err),
		    NG_EPARSE);
		if (!strstr(err.msg, bad[i].want))
			print_error("%zu: %s\n", i, err.msg);
		assert_non_null(strstr(err.msg, bad[i].want));
		for (size_t k = 0; k < sizeof(a); k++)
			assert_int_equal(((unsigned char *)&a)[k], 0xad);
	}
}

/* O21: a plugin that answers a token, given args, env and KUBERNETES_EXEC_INFO as kubectl
 * gives them; the answer is cached until a 401 says otherwise. */
static void test_O21_good_plugin_runs_once_and_gets_cluster_info(void **state)
{
	char body[PATH_MAX * 2];
	(void)snprintf(body, sizeof(body),
		       "echo \"$KUBERNETES_EXEC_INFO\" > %s/info; echo \"$1 $FOO\" > %s/args\n"
		       "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
		       "\",\"status\":{\"token\":\"tok-1\"}}'",
		       tmpdir, tmpdir);
	script("bin/good", body);
	struct kube_config c;
	config_for("./bin/good",
		   ", args: [hello], env: [{name: FOO, value: bar}], provideClusterInfo: true, "
		   "interactiveMode: IfAvailable",
		   &c);
	struct kube_exec_answer a;
	struct ng_err err = {0};
	uint64_t gen = 0;
	assert_int_equal(get(&c, &a, &gen, &err), NG_OK);
	assert_string_equal(a.token, "tok-1");
	kube_exec_answer_finish(&a);
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	kube_exec_answer_finish(&a);
	assert_int_equal(kube_exec_cred_runs(c.exec), 1);
	/* A 401 on an older credential does not run it again; on the current one it does. */
	kube_exec_cred_invalidate(c.exec, gen - 1);
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	kube_exec_answer_finish(&a);
	assert_int_equal(kube_exec_cred_runs(c.exec), 1);
	kube_exec_cred_invalidate(c.exec, gen);
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	kube_exec_answer_finish(&a);
	assert_int_equal(kube_exec_cred_runs(c.exec), 2);

	char path[PATH_MAX + 8], buf[4096] = {0};
	(void)snprintf(path, sizeof(path), "%s/info", tmpdir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	(void)fclose(f);
	assert_non_null(strstr(buf, "\"kind\":\"ExecCredential\""));
	assert_non_null(strstr(buf, "\"interactive\":false"));
	assert_non_null(strstr(buf, "\"server\":\"https://a:6443\""));
	assert_non_null(strstr(buf, "\"config\":{\"audience\":\"nodegate\",\"n\":3,\"on\":true}"));
	(void)snprintf(path, sizeof(path), "%s/args", tmpdir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	(void)fclose(f);
	assert_string_equal(buf, "hello bar\n");
	kube_config_finish(&c);
}

/* O27: a credential that expires is fetched again when it does. */
static void test_O27_expiring_credential_runs_the_plugin_again(void **state)
{
	char body[PATH_MAX * 2];
	(void)snprintf(body, sizeof(body),
		       "echo run >> %s/runs\n"
		       "exp=$(date -u -d @$(( $(date +%%s) + 1 )) +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
		       "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
		       "\",\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"'$exp'\"}}'",
		       tmpdir);
	struct kube_config c;
	config_for(script("expiring", body), "", &c);
	struct kube_exec_answer a;
	struct ng_err err = {0};
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	kube_exec_answer_finish(&a);
	struct timespec ts = {1, 100 * 1000 * 1000};
	(void)nanosleep(&ts, NULL);
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	kube_exec_answer_finish(&a);
	assert_int_equal(kube_exec_cred_runs(c.exec), 2);
	kube_config_finish(&c);
}

/* A plugin that leaves something running with its stderr open (a background refresher): the
 * answer is complete when it exits, so nodegate does not wait for the timeout. */
static void test_a_plugin_leaving_a_child_behind_is_not_waited_for(void **state)
{
	struct kube_config c;
	config_for(script("daemon", "(sleep 5 >/dev/null) &\n"
				    "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
				    "\",\"status\":{\"token\":\"t\"}}'"),
		   "", &c);
	kube_exec_cred_set_timeout_ms(c.exec, 3000);
	struct kube_exec_answer a;
	struct ng_err err = {0};
	int64_t t0 = ng_now_mono_us();
	assert_int_equal(get(&c, &a, NULL, &err), NG_OK);
	assert_true(ng_now_mono_us() - t0 < 2000 * 1000);
	assert_string_equal(a.token, "t");
	kube_exec_answer_finish(&a);
	kube_config_finish(&c);
}

struct racer {
	struct kube_config *c;
	ng_status st;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct kube_exec_answer a = {0};
	r->st = kube_exec_cred_get(r->c->exec, &a, NULL, NULL);
	kube_exec_answer_finish(&a);
	return NULL;
}

/* Threads asking at once share one run of the plugin. */
static void test_concurrent_callers_share_one_run(void **state)
{
	struct kube_config c;
	config_for(script("slow", "sleep 0.3; echo '{\"kind\":\"ExecCredential\",\"apiVersion\":"
				  "\"" V1 "\",\"status\":{\"token\":\"t\"}}'"),
		   "", &c);
	pthread_t t[4];
	struct racer r[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){&c, NG_EIO};
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].st, NG_OK);
	}
	assert_int_equal(kube_exec_cred_runs(c.exec), 1);
	kube_config_finish(&c);
}

/* Expects the plugin @command (with exec fields @extra) to fail with @st and @want in the
 * message, within @max_ms. */
static void expect_plugin_fails(const char *command, const char *extra, int64_t timeout_ms,
				ng_status st, const char *want, int64_t max_ms)
{
	struct kube_config c;
	config_for(command, extra, &c);
	kube_exec_cred_set_timeout_ms(c.exec, timeout_ms);
	struct kube_exec_answer a;
	memset(&a, 0xad, sizeof(a));
	struct ng_err err = {0};
	int64_t t0 = ng_now_mono_us();
	ng_status got = kube_exec_cred_get(c.exec, &a, NULL, &err);
	int64_t took_ms = (ng_now_mono_us() - t0) / 1000;
	if (got != st || !strstr(err.msg, want) || took_ms > max_ms)
		print_error("got %s \"%s\" in %lld ms, want %s \"%s\"\n", ng_status_str(got),
			    err.msg, (long long)took_ms, ng_status_str(st), want);
	assert_int_equal(got, st);
	assert_non_null(strstr(err.msg, want));
	assert_true(took_ms <= max_ms);
	assert_int_equal(((unsigned char *)&a)[0], 0xad);
	kube_config_finish(&c);
}

/* O24, O25, O28, O29: missing, failing, hanging, flooding and malformed plugins are errors that
 * name the plugin and say what it did. */
static void test_O24_O25_O28_O29_misbehaving_plugins_are_named_errors(void **state)
{
	/* O28: hangs (its child too): killed at the timeout. */
	expect_plugin_fails(script("hang", "echo waiting for the browser >&2; sleep 30 & wait"), "",
			    300, NG_ETIMEDOUT, "no answer within 300 ms, killed", 3000);
	expect_plugin_fails(script("hang", "echo waiting for the browser >&2; sleep 30 & wait"), "",
			    300, NG_ETIMEDOUT, "its stderr ends: waiting for the browser", 3000);
	/* O25: exits non-zero: the end of its stderr, not its beginning. */
	expect_plugin_fails(
	    script("fail", "i=0; while [ $i -lt 200 ]; do echo noise $i >&2; i=$((i+1)); done\n"
			   "echo 'error: SSO session expired' >&2; exit 3"),
	    "", 5000, NG_EIO, "exited with status 3; its stderr ends: ", 5000);
	expect_plugin_fails(script("fail", "echo 'error: SSO session expired' >&2; exit 3"), "",
			    5000, NG_EIO, "error: SSO session expired", 5000);
	/* O29: floods stdout: capped and killed. */
	expect_plugin_fails(script("flood", "yes"), "", 5000, NG_ELIMIT, "printed more than", 5000);
	/* O24: missing: the installHint says how to get it. */
	expect_plugin_fails("ng-no-such-plugin",
			    ", installHint: \"install it with: apt install ng-plugin\"", 5000,
			    NG_ENOTFOUND,
			    "credential plugin ng-no-such-plugin of user \"u\" not found: install "
			    "it with: apt install ng-plugin",
			    5000);
	/* O29: answers something that is not an ExecCredential. */
	expect_plugin_fails(script("junk", "echo 'please log in'"), "", 5000, NG_EPARSE,
			    "/junk: ExecCredential: not JSON", 5000);
}

static void test_exec_block_is_checked(void **state)
{
	static const struct {
		const char *user, *want;
	} bad[] = {
	    {"{exec: {command: x}}", "exec.apiVersion must be"},
	    {"{exec: {command: x, apiVersion: " V1 "}}", "interactiveMode is required"},
	    {"{exec: {apiVersion: " V1 "}}", "exec.command: required"},
	    {"{exec: {command: x, apiVersion: " V1 ", interactiveMode: Sometimes}}",
	     "interactiveMode: must be"},
	    {"{token: t, exec: {command: x, apiVersion: " V1 "}}", "exec and token are both set"},
	    {"{exec: {command: x, apiVersion: " V1 ", interactiveMode: Never, env: [{value: v}]}}",
	     "name: required"},
	    {"{exec: {command: x, apiVersion: " V1 ", interactiveMode: Never, args: [[a]]}}",
	     "args[0]: must be a string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char yaml[1024];
		(void)snprintf(yaml, sizeof(yaml),
			       "clusters:\n- {name: a, cluster: {server: https://a}}\n"
			       "users:\n- name: u\n  user: %s\n"
			       "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
			       "current-context: x\n",
			       bad[i].user);
		struct kube_config c;
		struct ng_err err = {0};
		assert_int_equal(
		    kube_config_parse_kubeconfig(yaml, strlen(yaml), tmpdir, NULL, &c, &err),
		    NG_EPARSE);
		if (!strstr(err.msg, bad[i].want))
			print_error("%zu: %s\n", i, err.msg);
		assert_non_null(strstr(err.msg, bad[i].want));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_answer_parser_takes_tokens_and_certificates),
	    cmocka_unit_test(test_answer_parser_refuses_what_is_not_a_credential),
	    cmocka_unit_test(test_O21_good_plugin_runs_once_and_gets_cluster_info),
	    cmocka_unit_test(test_O27_expiring_credential_runs_the_plugin_again),
	    cmocka_unit_test(test_concurrent_callers_share_one_run),
	    cmocka_unit_test(test_a_plugin_leaving_a_child_behind_is_not_waited_for),
	    cmocka_unit_test(test_O24_O25_O28_O29_misbehaving_plugins_are_named_errors),
	    cmocka_unit_test(test_exec_block_is_checked),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
