/* kube/config: kubeconfig parsing, in-cluster configuration and how nodegate picks one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kube/config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PEM_CA "-----BEGIN CERTIFICATE-----\nQ0EK\n-----END CERTIFICATE-----\n"
#define PEM_CERT "-----BEGIN CERTIFICATE-----\nQ0VSVAo=\n-----END CERTIFICATE-----\n"
#define PEM_KEY "-----BEGIN PRIVATE KEY-----\nS0VZCg==\n-----END PRIVATE KEY-----\n"

/* Short enough that every path built from it fits PATH_MAX. */
static char tmpdir[256];

static int setup_tmp(void **state)
{
	const char *base = getenv("TMPDIR");
	(void)snprintf(tmpdir, sizeof(tmpdir), "%s/ng-kubeconfig-XXXXXX",
		       base && base[0] ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes @content to tmpdir/@name (creating one level of directory) and returns the path. */
static const char *write_tmp(const char *name, const char *content)
{
	static char path[8][PATH_MAX];
	static int next;
	char *p = path[next++ % 8];
	(void)snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	(void)mkdir(p, 0700);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	size_t len = strlen(content);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	return p;
}

static void b64(const char *in, char *out)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(in), o = 0;
	const unsigned char *s = (const unsigned char *)in;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

/* The 0xad pattern: a failed call must not have written any byte of its output. */
static void assert_untouched(const struct kube_config *c)
{
	const unsigned char *p = (const unsigned char *)c;
	for (size_t i = 0; i < sizeof(*c); i++)
		assert_int_equal(p[i], 0xad);
}

static ng_status parse(const char *yaml, const char *context, struct kube_config *ret,
		       struct ng_err *err)
{
	return kube_config_parse_kubeconfig(yaml, strlen(yaml), tmpdir, context, ret, err);
}

/* Expects @yaml to fail with @st and a message containing @msg, leaving the output untouched. */
static void expect_fail(const char *yaml, const char *context, ng_status st, const char *msg)
{
	struct kube_config c, before;
	memset(&c, 0xad, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	struct ng_err err = {0};
	ng_status got = parse(yaml, context, &c, &err);
	if (got != st || !strstr(err.msg, msg))
		print_error("input:\n%s\ngot %s \"%s\", want %s \"%s\"\n", yaml, ng_status_str(got),
			    err.msg, ng_status_str(st), msg);
	assert_int_equal(got, st);
	assert_non_null(strstr(err.msg, msg));
	assert_memory_equal(&c, &before, sizeof(c));
}

#define CLUSTER_A                                                                                  \
	"clusters:\n"                                                                              \
	"- name: a\n"                                                                              \
	"  cluster:\n"                                                                             \
	"    server: https://a.example:6443/\n"

static void test_data_fields_fill_the_config(void **state)
{
	char ca[256], cert[256], key[256], yaml[2048];
	b64(PEM_CA, ca);
	b64(PEM_CERT, cert);
	b64(PEM_KEY, key);
	(void)snprintf(yaml, sizeof(yaml),
		       "apiVersion: v1\nkind: Config\n"
		       "clusters:\n"
		       "- name: prod\n"
		       "  cluster:\n"
		       "    server: https://prod.example:6443/\n"
		       "    certificate-authority-data: %s\n"
		       "    tls-server-name: api.prod.example\n"
		       "users:\n"
		       "- name: admin\n"
		       "  user:\n"
		       "    client-certificate-data: %s\n"
		       "    client-key-data: %s\n"
		       "contexts:\n"
		       "- name: prod-admin\n"
		       "  context: {cluster: prod, user: admin, namespace: ops}\n"
		       "current-context: prod-admin\n"
		       "preferences: {}\n",
		       ca, cert, key);
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(parse(yaml, NULL, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://prod.example:6443");
	assert_string_equal(c.ca_pem, PEM_CA);
	assert_string_equal(c.client_cert_pem, PEM_CERT);
	assert_string_equal(c.client_key_pem, PEM_KEY);
	assert_string_equal(c.tls_server_name, "api.prod.example");
	assert_string_equal(c.ns, "ops");
	assert_null(c.token);
	assert_null(c.token_file);
	assert_false(c.insecure_skip_tls_verify);
	assert_string_equal(c.source, "kubeconfig (context prod-admin)");
	kube_config_finish(&c);
	kube_config_finish(&c); /* zeroed: a no-op */
	kube_config_finish(NULL);
}

static void test_file_fields_resolve_relative_to_the_kubeconfig_dir(void **state)
{
	write_tmp("certs/ca.crt", PEM_CA);
	write_tmp("certs/client.crt", PEM_CERT);
	write_tmp("certs/client.key", PEM_KEY);
	const char *tok = write_tmp("token", "  file-token\n");
	const char *path = write_tmp("config", "clusters:\n"
					       "- name: c\n"
					       "  cluster:\n"
					       "    server: https://c.example\n"
					       "    certificate-authority: certs/ca.crt\n"
					       "users:\n"
					       "- name: u\n"
					       "  user:\n"
					       "    client-certificate: certs/client.crt\n"
					       "    client-key: certs/client.key\n"
					       "    tokenFile: token\n"
					       "contexts:\n"
					       "- name: x\n"
					       "  context: {cluster: c, user: u}\n"
					       "current-context: x\n");
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(kube_config_load_kubeconfig(path, NULL, &c, &err), NG_OK);
	assert_string_equal(c.ca_pem, PEM_CA);
	assert_string_equal(c.client_cert_pem, PEM_CERT);
	assert_string_equal(c.client_key_pem, PEM_KEY);
	char real[PATH_MAX];
	assert_non_null(realpath(tok, real));
	assert_string_equal(c.token_file, real);
	assert_string_equal(c.ns, "default");
	assert_non_null(strstr(c.source, path));
	assert_non_null(strstr(c.source, "(context x)"));
	kube_config_finish(&c);

	/* A missing file is named, with the field it came from. */
	path = write_tmp("config2", "clusters:\n"
				    "- name: c\n"
				    "  cluster:\n"
				    "    server: https://c.example\n"
				    "    certificate-authority: nope/ca.crt\n"
				    "contexts:\n"
				    "- name: x\n"
				    "  context: {cluster: c}\n"
				    "current-context: x\n");
	memset(&c, 0xad, sizeof(c));
	assert_int_equal(kube_config_load_kubeconfig(path, NULL, &c, &err), NG_EIO);
	assert_non_null(strstr(err.msg, "certificate-authority"));
	assert_non_null(strstr(err.msg, "nope/ca.crt"));
	assert_untouched(&c);

	assert_int_equal(kube_config_load_kubeconfig("/nonexistent/kubeconfig", NULL, &c, &err),
			 NG_EIO);
	assert_non_null(strstr(err.msg, "/nonexistent/kubeconfig"));
}

static void test_token_and_token_file(void **state)
{
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(parse(CLUSTER_A "users:\n"
					 "- name: u\n"
					 "  user: {token: abc.def-ghi}\n"
					 "contexts:\n"
					 "- {name: x, context: {cluster: a, user: u}}\n"
					 "current-context: x\n",
			       NULL, &c, &err),
			 NG_OK);
	assert_string_equal(c.token, "abc.def-ghi");
	assert_null(c.token_file);
	kube_config_finish(&c);

	write_tmp("tok2", "t2\n");
	assert_int_equal(parse(CLUSTER_A "users:\n"
					 "- name: u\n"
					 "  user: {token: static, tokenFile: tok2}\n"
					 "contexts:\n"
					 "- {name: x, context: {cluster: a, user: u}}\n"
					 "current-context: x\n",
			       NULL, &c, &err),
			 NG_OK);
	assert_string_equal(c.token, "static");
	assert_non_null(strstr(c.token_file, "/tok2"));
	kube_config_finish(&c);

	expect_fail(CLUSTER_A "users:\n"
			      "- name: u\n"
			      "  user: {tokenFile: missing-token}\n"
			      "contexts:\n"
			      "- {name: x, context: {cluster: a, user: u}}\n"
			      "current-context: x\n",
		    NULL, NG_EIO, "missing-token");
	expect_fail(CLUSTER_A "users:\n"
			      "- name: u\n"
			      "  user: {token: \"a b\"}\n"
			      "contexts:\n"
			      "- {name: x, context: {cluster: a, user: u}}\n"
			      "current-context: x\n",
		    NULL, NG_EPARSE, "users[0].user.token");

	char *tok = NULL;
	struct ng_err terr = {0};
	const char *bad = write_tmp("tok-bad", "line1\nline2\n");
	assert_int_equal(kube_config_read_token(bad, &tok, &terr), NG_EPARSE);
	assert_null(tok);
	const char *empty = write_tmp("tok-empty", " \n");
	assert_int_equal(kube_config_read_token(empty, &tok, &terr), NG_EPARSE);
	assert_int_equal(kube_config_read_token(tmpdir, &tok, &terr), NG_EINVAL);
	assert_null(tok);
}

#define TWO_CONTEXTS                                                                               \
	CLUSTER_A "- name: b\n"                                                                    \
		  "  cluster: {server: \"http://b.example:8080\"}\n"                               \
		  "contexts:\n"                                                                    \
		  "- name: ctx-a\n"                                                                \
		  "  context: {cluster: a, namespace: na}\n"                                       \
		  "- name: ctx-b\n"                                                                \
		  "  context: {cluster: b}\n"

static void test_explicit_context_wins_over_current_context(void **state)
{
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(parse(TWO_CONTEXTS "current-context: ctx-a\n", NULL, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://a.example:6443");
	assert_string_equal(c.ns, "na");
	kube_config_finish(&c);
	assert_int_equal(parse(TWO_CONTEXTS "current-context: ctx-a\n", "ctx-b", &c, &err), NG_OK);
	assert_string_equal(c.server, "http://b.example:8080");
	assert_string_equal(c.ns, "default");
	assert_string_equal(c.source, "kubeconfig (context ctx-b)");
	kube_config_finish(&c);
	/* No current-context is fine when one is named. */
	assert_int_equal(parse(TWO_CONTEXTS, "ctx-a", &c, &err), NG_OK);
	kube_config_finish(&c);
	expect_fail(TWO_CONTEXTS, NULL, NG_ENOTFOUND, "current-context is not set");
}

static void test_missing_context_cluster_or_user_is_named(void **state)
{
	expect_fail(TWO_CONTEXTS "current-context: x\n", NULL, NG_ENOTFOUND,
		    "context \"x\" not found");
	expect_fail(CLUSTER_A "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n",
		    NULL, NG_ENOTFOUND, "cluster \"c\" not found");
	expect_fail(CLUSTER_A "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
			      "current-context: x\n",
		    NULL, NG_ENOTFOUND, "user \"u\" not found");
	expect_fail("clusters:\n- name: c\n  cluster: {certificate-authority-data: \"\"}\n"
		    "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "cluster \"c\": server: required");
	expect_fail(CLUSTER_A "contexts:\n- {name: x, context: {user: u}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "context \"x\": cluster: required");
	expect_fail(CLUSTER_A "contexts:\n- {name: x, context: {cluster: a}}\n"
			      "- {name: x, context: {cluster: a}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "appears twice");
	expect_fail(CLUSTER_A "contexts: {x: y}\ncurrent-context: x\n", NULL, NG_EPARSE,
		    "contexts: must be a list");
	expect_fail(CLUSTER_A "contexts: [x]\ncurrent-context: x\n", NULL, NG_EPARSE,
		    "contexts[0]: must be a mapping");
}

static void test_exec_auth_provider_and_impersonation_are_refused(void **state)
{
	static const char *users[] = {
	    ("{exec: {command: aws, apiVersion: client.authentication.k8s.io/v1, "
	     "interactiveMode: Always}}"),
	    "{auth-provider: {name: oidc}}",
	    "{username: u, password: p}",
	    "{token: t, as: admin}",
	};
	static const char *want[] = {"never gives a credential plugin a terminal",
				     "auth-provider is not supported", "username is not supported",
				     "as is not supported"};
	for (size_t i = 0; i < 4; i++) {
		char yaml[512];
		(void)snprintf(yaml, sizeof(yaml),
			       CLUSTER_A "users:\n- name: u\n  user: %s\n"
					 "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
					 "current-context: x\n",
			       users[i]);
		expect_fail(yaml, NULL, NG_EINVAL, want[i]);
	}
	expect_fail("clusters:\n- name: a\n  cluster: {server: \"https://a\", proxy-url: "
		    "\"http://p:3128\"}\n"
		    "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n",
		    NULL, NG_EINVAL, "proxy-url is not supported");
}

#define INSECURE                                                                                   \
	"clusters:\n"                                                                              \
	"- name: a\n"                                                                              \
	"  cluster: {server: \"https://a:6443\", insecure-skip-tls-verify: true}\n"                \
	"contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n"

static void test_insecure_is_refused_unless_allowed(void **state)
{
	const char *path = write_tmp("insecure", INSECURE);
	struct kube_config c;
	memset(&c, 0xad, sizeof(c));
	struct ng_err err = {0};
	assert_int_equal(kube_config_resolve(path, NULL, false, &c, &err), NG_EINVAL);
	assert_non_null(strstr(err.msg, "--allow-insecure-kube-tls"));
	assert_untouched(&c);
	assert_int_equal(kube_config_resolve(path, NULL, true, &c, &err), NG_OK);
	assert_true(c.insecure_skip_tls_verify);
	kube_config_finish(&c);

	char ca[256], yaml[1024];
	b64(PEM_CA, ca);
	(void)snprintf(yaml, sizeof(yaml),
		       "clusters:\n- name: a\n  cluster:\n    server: https://a\n"
		       "    insecure-skip-tls-verify: yes\n    certificate-authority-data: %s\n"
		       "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n",
		       ca);
	expect_fail(yaml, NULL, NG_EPARSE, "are both set");
	expect_fail("clusters:\n- name: a\n  cluster: {server: \"https://a\", "
		    "insecure-skip-tls-verify: \"true\"}\n"
		    "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "insecure-skip-tls-verify: must be true or false");
}

static void test_bad_base64_names_the_field(void **state)
{
	static const char *bad[] = {"QQ=",      "Q===",      "QQ==QQ==", "QQ=A",
				    "\"!!!!\"", "\"QU JD\"", "QUJ",      "QUJD====="};
	char good_cert[256], good_key[256];
	b64(PEM_CERT, good_cert);
	b64(PEM_KEY, good_key);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char yaml[1024];
		(void)snprintf(yaml, sizeof(yaml),
			       CLUSTER_A "users:\n"
					 "- name: ok\n"
					 "  user: {token: t}\n"
					 "- name: u\n"
					 "  user:\n"
					 "    client-certificate-data: %s\n"
					 "    client-key-data: %s\n"
					 "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
					 "current-context: x\n",
			       good_cert, bad[i]);
		expect_fail(yaml, NULL, NG_EPARSE,
			    "users[1].user.client-key-data: not valid base64");
	}
	/* Valid base64 that is not PEM. */
	char yaml[1024];
	(void)snprintf(yaml, sizeof(yaml),
		       "clusters:\n- name: a\n  cluster: {server: \"https://a\", "
		       "certificate-authority-data: \"aGVsbG8=\"}\n"
		       "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n");
	expect_fail(yaml, NULL, NG_EPARSE,
		    "clusters[0].cluster.certificate-authority-data: not PEM");
	/* Line breaks inside the data are skipped, as Go's decoder does. */
	char folded[512];
	size_t n = strlen(good_key), o = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && i % 20 == 0) {
			folded[o++] = '\n';
			for (int k = 0; k < 6; k++)
				folded[o++] = ' ';
		}
		folded[o++] = good_key[i];
	}
	folded[o] = '\0';
	(void)snprintf(yaml, sizeof(yaml),
		       CLUSTER_A "users:\n- name: u\n  user:\n"
				 "    client-certificate-data: %s\n"
				 "    client-key-data: |\n      %s\n"
				 "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
				 "current-context: x\n",
		       good_cert, folded);
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(parse(yaml, NULL, &c, &err), NG_OK);
	assert_string_equal(c.client_key_pem, PEM_KEY);
	kube_config_finish(&c);

	(void)snprintf(yaml, sizeof(yaml),
		       CLUSTER_A "users:\n- name: u\n  user: {client-certificate-data: %s}\n"
				 "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
				 "current-context: x\n",
		       good_cert);
	expect_fail(yaml, NULL, NG_EPARSE, "must be set together");
	write_tmp("k.pem", PEM_KEY);
	(void)snprintf(yaml, sizeof(yaml),
		       CLUSTER_A "users:\n- name: u\n  user: {client-certificate-data: %s, "
				 "client-key-data: %s, client-key: k.pem}\n"
				 "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
				 "current-context: x\n",
		       good_cert, good_key);
	expect_fail(yaml, NULL, NG_EPARSE, "client-key and client-key-data are both set");
}

static void test_aliases_are_refused(void **state)
{
	expect_fail("clusters:\n- &c {name: a, cluster: {server: \"https://a\"}}\n- *c\n"
		    "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "aliases are not supported");
	expect_fail("a: &a [x, x, x, x, x, x, x, x, x]\n"
		    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
		    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
		    "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
		    NULL, NG_EPARSE, "line 2: YAML aliases are not supported");
}

static void test_limits_depth_size_and_documents(void **state)
{
	char deep[256] = "a: ";
	for (int i = 0; i < 40; i++)
		(void)strncat(deep, "[", sizeof(deep) - strlen(deep) - 1);
	expect_fail(deep, NULL, NG_ELIMIT, "nested deeper than 32 levels");

	size_t big = KUBE_CONFIG_MAX_BYTES + 1;
	char *buf = malloc(big);
	assert_non_null(buf);
	memset(buf, '#', big);
	struct kube_config c;
	memset(&c, 0xad, sizeof(c));
	struct ng_err err = {0};
	assert_int_equal(kube_config_parse_kubeconfig(buf, big, NULL, NULL, &c, &err), NG_ELIMIT);
	assert_untouched(&c);
	free(buf);

	expect_fail("", NULL, NG_EPARSE, "kubeconfig: empty");
	expect_fail("- a\n", NULL, NG_EPARSE, "top level must be a mapping");
	expect_fail(INSECURE "---\n" INSECURE, NULL, NG_EPARSE, "more than one YAML document");
	expect_fail("a: [\n", NULL, NG_EPARSE, "kubeconfig: line 2");
	expect_fail(INSECURE "current-context: y\n", NULL, NG_EPARSE,
		    "duplicate key \"current-context\"");
	expect_fail("clusters:\n- name: a\n  cluster: {server: \"https://a\"}\n"
		    "contexts:\n- {name: \"x\\0y\", context: {cluster: a}}\ncurrent-context: x\n",
		    NULL, NG_EPARSE, "contexts[0].name: contains a NUL byte");
}

static void test_server_urls_are_normalised_or_refused(void **state)
{
	static const struct {
		const char *server, *want;
	} cases[] = {
	    {"a.example:6443", "https://a.example:6443"},
	    {"https://10.0.0.1", "https://10.0.0.1"},
	    {"https://[fd00::1]:6443//", "https://[fd00::1]:6443"},
	    {"https://rancher.example/k8s/clusters/c-1/",
	     "https://rancher.example/k8s/clusters/c-1"},
	    {"ftp://a", NULL},
	    {"https://a b", NULL},
	    {"https://a:99999", NULL},
	    {"https://a:+1", NULL},
	    {"https://user@a", NULL},
	    {"https://a/?x=1", NULL},
	    {"https://", NULL},
	    {"https://[::1", NULL},
	    {"https://a:1:2", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char yaml[512];
		(void)snprintf(yaml, sizeof(yaml),
			       "clusters:\n- name: a\n  cluster: {server: \"%s\"}\n"
			       "contexts:\n- {name: x, context: {cluster: a}}\n"
			       "current-context: x\n",
			       cases[i].server);
		if (!cases[i].want) {
			expect_fail(yaml, NULL, NG_EPARSE, "cluster \"a\": server:");
			continue;
		}
		struct kube_config c;
		struct ng_err err = {0};
		assert_int_equal(parse(yaml, NULL, &c, &err), NG_OK);
		assert_string_equal(c.server, cases[i].want);
		kube_config_finish(&c);
	}
}

static void test_kubeconfig_colon_list_takes_the_first_existing_file(void **state)
{
	const char *b = write_tmp("list/b", "clusters:\n- {name: a, cluster: {server: "
					    "\"https://b\"}}\n"
					    "contexts:\n- {name: x, context: {cluster: a}}\n"
					    "current-context: x\n");
	char bpath[PATH_MAX];
	(void)snprintf(bpath, sizeof(bpath), "%s", b);
	write_tmp("list/c", "clusters:\n- {name: a, cluster: {server: \"https://c\"}}\n"
			    "contexts:\n- {name: x, context: {cluster: a}}\ncurrent-context: x\n");
	char env[3 * PATH_MAX];
	(void)snprintf(env, sizeof(env), "/nonexistent/a::%s:%s/list/c", bpath, tmpdir);
	assert_int_equal(setenv("KUBECONFIG", env, 1), 0);
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(kube_config_resolve(NULL, NULL, false, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://b");
	assert_non_null(strstr(c.source, bpath));
	kube_config_finish(&c);
	/* The flag wins over the environment. */
	char cpath[PATH_MAX];
	(void)snprintf(cpath, sizeof(cpath), "%s/list/c", tmpdir);
	assert_int_equal(kube_config_resolve(cpath, "x", false, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://c");
	kube_config_finish(&c);
	/* A named context that does not exist. */
	memset(&c, 0xad, sizeof(c));
	assert_int_equal(kube_config_resolve(cpath, "nope", false, &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "context \"nope\" not found"));
	assert_non_null(strstr(err.msg, cpath));
	assert_untouched(&c);
	assert_int_equal(unsetenv("KUBECONFIG"), 0);
}

/* O20: KUBECONFIG=a:b is merged as kubectl merges it. */
static void test_O20_kubeconfig_list_is_merged_first_definition_wins(void **state)
{
	write_tmp("m/tok", "tok-one\n");
	write_tmp("m/sub/tok", "tok-two\n");
	write_tmp("m/one", "clusters:\n- {name: a, cluster: {server: \"https://one\"}}\n"
			   "users:\n- {name: u, user: {tokenFile: tok}}\n"
			   "contexts:\n- {name: x, context: {cluster: a, user: u}}\n"
			   "- {name: z, context: {cluster: a, user: w}}\n"
			   "current-context: x\n");
	write_tmp("m/sub/two", "clusters:\n- {name: a, cluster: {server: \"https://two\"}}\n"
			       "- {name: b, cluster: {server: \"https://two-b\"}}\n"
			       "users:\n- {name: u, user: {token: loses}}\n"
			       "- {name: v, user: {tokenFile: tok}}\n"
			       "contexts:\n- {name: x, context: {cluster: b}}\n"
			       "- {name: y, context: {cluster: b, user: v, namespace: n2}}\n"
			       "current-context: y\n");
	char env[3 * PATH_MAX], want[PATH_MAX];
	(void)snprintf(env, sizeof(env), "/nonexistent/kc:%s/m/one::%s/m/sub/two", tmpdir, tmpdir);
	assert_int_equal(setenv("KUBECONFIG", env, 1), 0);
	struct kube_config c;
	struct ng_err err = {0};
	/* current-context, context x, cluster a and user u: all from the first file. */
	assert_int_equal(kube_config_resolve(NULL, NULL, false, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://one");
	(void)snprintf(want, sizeof(want), "%s/m/tok", tmpdir);
	assert_string_equal(c.token_file, want);
	assert_null(c.token);
	assert_non_null(strstr(c.source, "m/one:"));
	assert_non_null(strstr(c.source, "m/sub/two (context x)"));
	kube_config_finish(&c);
	/* Context y is only in the second file; its relative tokenFile is relative to it. */
	assert_int_equal(kube_config_resolve(NULL, "y", false, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://two-b");
	(void)snprintf(want, sizeof(want), "%s/m/sub/tok", tmpdir);
	assert_string_equal(c.token_file, want);
	assert_string_equal(c.ns, "n2");
	kube_config_finish(&c);
	/* A user named but defined in no file: named, with the files. */
	memset(&c, 0xad, sizeof(c));
	assert_int_equal(kube_config_resolve(NULL, "z", false, &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "user \"w\" not found in "));
	assert_non_null(strstr(err.msg, "m/one:"));
	assert_non_null(strstr(err.msg, "m/sub/two"));
	assert_untouched(&c);
	assert_int_equal(kube_config_resolve(NULL, "nope", false, &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "context \"nope\" not found in "));
	/* More files than KUBE_CONFIG_MAX_FILES. */
	static char many[(KUBE_CONFIG_MAX_FILES + 1) * (PATH_MAX / 8)];
	size_t o = 0;
	for (int i = 0; i <= KUBE_CONFIG_MAX_FILES; i++)
		o += (size_t)snprintf(many + o, sizeof(many) - o, "%s%s/m/one", i ? ":" : "",
				      tmpdir);
	assert_true(o < sizeof(many));
	assert_int_equal(setenv("KUBECONFIG", many, 1), 0);
	assert_int_equal(kube_config_resolve(NULL, NULL, false, &c, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "more than 64 files"));
	/* A broken file in the list is an error naming it, not skipped. */
	write_tmp("m/bad", "clusters: [\n");
	(void)snprintf(env, sizeof(env), "%s/m/one:%s/m/bad", tmpdir, tmpdir);
	assert_int_equal(setenv("KUBECONFIG", env, 1), 0);
	assert_int_equal(kube_config_resolve(NULL, NULL, false, &c, &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "m/bad: "));
	assert_untouched(&c);
	assert_int_equal(unsetenv("KUBECONFIG"), 0);
}

static void write_sa(const char *ns)
{
	write_tmp("root/var/run/secrets/kubernetes.io/serviceaccount/token", "sa-token\n");
	write_tmp("root/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", PEM_CA);
	if (ns)
		write_tmp("root/var/run/secrets/kubernetes.io/serviceaccount/namespace", ns);
}

static void test_in_cluster_reads_env_and_service_account(void **state)
{
	/* write_tmp creates one directory level: build the chain first. */
	static const char *dirs[] = {"root", "root/var", "root/var/run", "root/var/run/secrets",
				     "root/var/run/secrets/kubernetes.io"};
	for (size_t i = 0; i < 5; i++) {
		char d[PATH_MAX];
		(void)snprintf(d, sizeof(d), "%s/%s", tmpdir, dirs[i]);
		(void)mkdir(d, 0700);
	}
	write_sa("kube-system\n");
	char root[512];
	(void)snprintf(root, sizeof(root), "%s/root", tmpdir);
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	struct kube_config c;
	struct ng_err err = {0};
	assert_int_equal(kube_config_in_cluster(root, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://10.96.0.1:443");
	assert_string_equal(c.token, "sa-token");
	assert_non_null(strstr(c.token_file, "/serviceaccount/token"));
	assert_string_equal(c.ca_pem, PEM_CA);
	assert_string_equal(c.ns, "kube-system");
	assert_string_equal(c.source, "in-cluster");
	kube_config_finish(&c);

	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "6443", 1), 0);
	char slash_root[PATH_MAX + 1];
	(void)snprintf(slash_root, sizeof(slash_root), "%s/", root);
	assert_int_equal(kube_config_in_cluster(slash_root, &c, &err), NG_OK);
	assert_string_equal(c.server, "https://[fd00:10:96::1]:6443");
	kube_config_finish(&c);

	char ns_path[PATH_MAX];
	(void)snprintf(ns_path, sizeof(ns_path),
		       "%s/var/run/secrets/kubernetes.io/serviceaccount/namespace", root);
	assert_int_equal(unlink(ns_path), 0);
	assert_int_equal(kube_config_in_cluster(root, &c, &err), NG_OK);
	assert_string_equal(c.ns, "default");
	kube_config_finish(&c);

	memset(&c, 0xad, sizeof(c));
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "https", 1), 0);
	assert_int_equal(kube_config_in_cluster(root, &c, &err), NG_EPARSE);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_PORT"));
	assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "a/b", 1), 0);
	assert_int_equal(kube_config_in_cluster(root, &c, &err), NG_EPARSE);
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	assert_int_equal(kube_config_in_cluster(tmpdir, &c, &err), NG_EIO);
	assert_non_null(strstr(err.msg, "serviceaccount/token"));
	assert_untouched(&c);
	assert_int_equal(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
	assert_int_equal(unsetenv("KUBERNETES_SERVICE_PORT"), 0);
}

static void test_missing_environment_gives_a_clear_error(void **state)
{
	assert_int_equal(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
	assert_int_equal(unsetenv("KUBERNETES_SERVICE_PORT"), 0);
	assert_int_equal(unsetenv("KUBECONFIG"), 0);
	struct kube_config c;
	memset(&c, 0xad, sizeof(c));
	struct ng_err err = {0};
	assert_int_equal(kube_config_in_cluster("/", &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	assert_int_equal(kube_config_resolve(NULL, NULL, false, &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "pass --kubeconfig, set KUBECONFIG or run in a pod"));
	assert_int_equal(setenv("KUBECONFIG", "/nonexistent/x:/nonexistent/y", 1), 0);
	assert_int_equal(kube_config_resolve("", NULL, false, &c, &err), NG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "none of its files exists"));
	assert_int_equal(kube_config_resolve(NULL, "prod", false, &c, &err), NG_EINVAL);
	assert_non_null(strstr(err.msg, "a context (--context) needs a kubeconfig"));
	assert_int_equal(unsetenv("KUBECONFIG"), 0);
	assert_untouched(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_data_fields_fill_the_config),
	    cmocka_unit_test(test_file_fields_resolve_relative_to_the_kubeconfig_dir),
	    cmocka_unit_test(test_token_and_token_file),
	    cmocka_unit_test(test_explicit_context_wins_over_current_context),
	    cmocka_unit_test(test_missing_context_cluster_or_user_is_named),
	    cmocka_unit_test(test_exec_auth_provider_and_impersonation_are_refused),
	    cmocka_unit_test(test_insecure_is_refused_unless_allowed),
	    cmocka_unit_test(test_bad_base64_names_the_field),
	    cmocka_unit_test(test_aliases_are_refused),
	    cmocka_unit_test(test_limits_depth_size_and_documents),
	    cmocka_unit_test(test_server_urls_are_normalised_or_refused),
	    cmocka_unit_test(test_kubeconfig_colon_list_takes_the_first_existing_file),
	    cmocka_unit_test(test_O20_kubeconfig_list_is_merged_first_definition_wins),
	    cmocka_unit_test(test_in_cluster_reads_env_and_service_account),
	    cmocka_unit_test(test_missing_environment_gives_a_clear_error),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
