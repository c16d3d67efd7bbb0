/* kube/client: requests against a python3 HTTPS server on 127.0.0.1 with a throwaway CA.
 *
 * The server echoes what it received as JSON (method, path, Authorization, Content-Type, Host,
 * body) and a per-connection number, so tests can see connection reuse. /sleep answers after
 * 3 s, /big sends 100000 bytes with a Content-Length, /bigchunked the same chunked, and
 * /status/N answers with status N. Loopback only; every wait is bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/parse.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/exec_cred.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char server_py[] =
    "import http.server, json, os, socketserver, ssl, sys, threading, time\n"
    "lock = threading.Lock()\n"
    "count = [0]\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def setup(self):\n"
    "        super().setup()\n"
    "        with lock:\n"
    "            count[0] += 1\n"
    "            self.conn = count[0]\n"
    "    def log_message(self, *a):\n"
    "        pass\n"
    "    def reply(self, status, body, chunked=False):\n"
    "        self.send_response(status)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        if chunked:\n"
    "            self.send_header('Transfer-Encoding', 'chunked')\n"
    "            self.end_headers()\n"
    "            for i in range(0, len(body), 4096):\n"
    "                part = body[i:i + 4096]\n"
    "                self.wfile.write(b'%x\\r\\n' % len(part) + part + b'\\r\\n')\n"
    "            self.wfile.write(b'0\\r\\n\\r\\n')\n"
    "        else:\n"
    "            self.send_header('Content-Length', str(len(body)))\n"
    "            self.end_headers()\n"
    "            self.wfile.write(body)\n"
    "    def any(self):\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        body = self.rfile.read(n).decode() if n else ''\n"
    "        if self.path == '/sleep':\n"
    "            time.sleep(3)\n"
    "        if self.path == '/big':\n"
    "            return self.reply(200, b'x' * 100000)\n"
    "        if self.path == '/bigchunked':\n"
    "            return self.reply(200, b'x' * 100000, True)\n"
    "        status = int(self.path[8:]) if self.path.startswith('/status/') else 200\n"
    "        h = self.headers\n"
    "        out = {'method': self.command, 'path': self.path, 'conn': self.conn,\n"
    "               'auth': h.get('Authorization', ''), 'ctype': h.get('Content-Type', ''),\n"
    "               'host': h.get('Host', ''), 'ua': h.get('User-Agent', ''), 'body': body}\n"
    "        self.reply(status, json.dumps(out, sort_keys=True).encode())\n"
    "    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = any\n"
    "class S(socketserver.ThreadingMixIn, http.server.HTTPServer):\n"
    "    daemon_threads = True\n"
    "srv = S(('127.0.0.1', 0), H)\n"
    "ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
    "ctx.load_cert_chain(sys.argv[1], sys.argv[2])\n"
    "srv.socket = ctx.wrap_socket(srv.socket, server_side=True)\n"
    "print(srv.server_address[1], flush=True)\n"
    "def watch_parent():\n"
    "    sys.stdin.read()\n"
    "    os._exit(0)\n"
    "threading.Thread(target=watch_parent, daemon=True).start()\n"
    "srv.serve_forever()\n";

/* Short enough that every path built from it fits PATH_MAX. */
static char tmpdir[256];
static char server_url[64];
static char *ca_pem, *wrong_ca_pem;
static pid_t server_pid = -1;
static int server_stdin = -1;

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = buf ? fread(buf, 1, 65535, f) : 0;
	(void)fclose(f);
	if (buf && n == 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void write_file(const char *path, const char *content)
{
	char tmp[PATH_MAX + 8];
	(void)snprintf(tmp, sizeof(tmp), "%s.new", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	size_t len = strlen(content);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	/* Atomic replace, as the kubelet does for projected tokens. */
	assert_int_equal(rename(tmp, path), 0);
}

static int make_cert(const char *name)
{
	char cmd[3 * PATH_MAX];
	(void)snprintf(
	    cmd, sizeof(cmd),
	    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
	    "-days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
	    "-keyout '%s/%s.key' -out '%s/%s.crt' >/dev/null 2>&1",
	    tmpdir, name, tmpdir, name);
	return system(cmd) == 0 ? 0 : -1;
}

static int start_server(void)
{
	char script[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	(void)snprintf(script, sizeof(script), "%s/server.py", tmpdir);
	(void)snprintf(cert, sizeof(cert), "%s/server.crt", tmpdir);
	(void)snprintf(key, sizeof(key), "%s/server.key", tmpdir);
	FILE *f = fopen(script, "we");
	if (!f || fputs(server_py, f) < 0 || fclose(f) != 0)
		return -1;
	int out[2], in[2];
	if (pipe(out) != 0 || pipe(in) != 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		(void)fcntl(out[i], F_SETFD, FD_CLOEXEC);
		(void)fcntl(in[i], F_SETFD, FD_CLOEXEC);
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	char *argv[] = {"python3", script, cert, key, NULL};
	int rc = posix_spawnp(&server_pid, "python3", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	(void)close(in[0]);
	(void)close(out[1]);
	server_stdin = in[1];
	if (rc != 0) {
		(void)close(out[0]);
		return -1;
	}
	/* The port line, within 10 s. */
	char line[32] = {0};
	size_t n = 0;
	while (n < sizeof(line) - 1 && !strchr(line, '\n')) {
		struct pollfd p = {.fd = out[0], .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0)
			break;
		ssize_t r = read(out[0], line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	(void)close(out[0]);
	char *nl = strchr(line, '\n');
	if (!nl)
		return -1;
	*nl = '\0';
	(void)snprintf(server_url, sizeof(server_url), "https://127.0.0.1:%s", line);
	return 0;
}

static int setup(void **state)
{
	/* Proxies from the environment would take loopback requests elsewhere. */
	(void)unsetenv("https_proxy");
	(void)unsetenv("HTTPS_PROXY");
	(void)unsetenv("http_proxy");
	(void)unsetenv("all_proxy");
	(void)unsetenv("ALL_PROXY");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	const char *base = getenv("TMPDIR");
	(void)snprintf(tmpdir, sizeof(tmpdir), "%s/ng-kubeclient-XXXXXX",
		       base && base[0] ? base : "/tmp");
	if (!mkdtemp(tmpdir) || make_cert("server") != 0 || make_cert("wrong") != 0)
		return -1;
	char path[PATH_MAX];
	(void)snprintf(path, sizeof(path), "%s/server.crt", tmpdir);
	ca_pem = read_all(path);
	(void)snprintf(path, sizeof(path), "%s/wrong.crt", tmpdir);
	wrong_ca_pem = read_all(path);
	if (!ca_pem || !wrong_ca_pem)
		return -1;
	return start_server();
}

static int teardown(void **state)
{
	if (server_pid > 0) {
		(void)kill(server_pid, SIGTERM);
		(void)waitpid(server_pid, NULL, 0);
	}
	if (server_stdin >= 0)
		(void)close(server_stdin);
	free(ca_pem);
	free(wrong_ca_pem);
	char cmd[PATH_MAX + 16];
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	int rc = system(cmd);
	curl_global_cleanup();
	return rc == 0 ? 0 : -1;
}

static struct kube_config config(char *ca)
{
	struct kube_config c = {0};
	c.server = server_url;
	c.ca_pem = ca; /* borrowed: never passed to kube_config_finish */
	return c;
}

/* GET @path; asserts success and 200, returns the body (caller frees). */
static char *get_ok(struct kube_client *kc, const char *path)
{
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	ng_status st =
	    kube_client_request(kc, "GET", path, NULL, NULL, 0, 5000, 1 << 20, &out, &http, &err);
	if (st != NG_OK)
		print_error("GET %s: %s: %s\n", path, ng_status_str(st), err.msg);
	assert_int_equal(st, NG_OK);
	assert_int_equal(http, 200);
	assert_non_null(out.data);
	return ng_buf_take(&out, NULL);
}

static void test_ca_pem_verifies_the_server(void **state)
{
	struct kube_config cfg = config(ca_pem);
	struct kube_client *kc = kube_client_create(&cfg);
	assert_non_null(kc);
	char *body = get_ok(kc, "/api/v1/pods?limit=500");
	assert_non_null(strstr(body, "\"path\": \"/api/v1/pods?limit=500\""));
	assert_non_null(strstr(body, "\"method\": \"GET\""));
	assert_non_null(strstr(body, "\"ua\": \"nodegate/" NG_VERSION "\""));
	assert_non_null(strstr(body, "\"auth\": \"\""));
	free(body);
	kube_client_destroy(kc);
	kube_client_destroy(NULL);
}

static void test_wrong_ca_fails_naming_the_certificate(void **state)
{
	struct kube_config cfg = config(wrong_ca_pem);
	struct kube_client *kc = kube_client_create(&cfg);
	assert_non_null(kc);
	struct ng_buf out = {.data = (char *)0xad, .len = 0xad, .alloc = 0xad, .cap = 0xad};
	long http = 0xad;
	struct ng_err err = {0};
	assert_int_equal(
	    kube_client_request(kc, "GET", "/api", NULL, NULL, 0, 5000, 4096, &out, &http, &err),
	    NG_EIO);
	assert_non_null(strstr(err.msg, "certificate"));
	assert_ptr_equal(out.data, (char *)0xad);
	assert_int_equal(out.len, 0xad);
	assert_int_equal(http, 0xad);
	kube_client_destroy(kc);

	/* Without a CA the system roots are used, which do not include our throwaway CA. */
	cfg = config(NULL);
	kc = kube_client_create(&cfg);
	assert_int_equal(
	    kube_client_request(kc, "GET", "/api", NULL, NULL, 0, 5000, 4096, &out, &http, &err),
	    NG_EIO);
	assert_non_null(strstr(err.msg, "certificate"));
	kube_client_destroy(kc);

	/* insecure-skip-tls-verify (only after --allow-insecure-kube-tls) skips it. */
	cfg.insecure_skip_tls_verify = true;
	kc = kube_client_create(&cfg);
	free(get_ok(kc, "/api"));
	kube_client_destroy(kc);
}

static void test_tls_server_name_is_verified(void **state)
{
	struct kube_config cfg = config(ca_pem);
	cfg.tls_server_name = "localhost";
	struct kube_client *kc = kube_client_create(&cfg);
	char *body = get_ok(kc, "/version");
	char want[96];
	/* The Host header still names the configured server. */
	(void)snprintf(want, sizeof(want), "\"host\": \"%s\"", server_url + strlen("https://"));
	assert_non_null(strstr(body, want));
	free(body);
	kube_client_destroy(kc);

	cfg.tls_server_name = "wrong.example";
	kc = kube_client_create(&cfg);
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(kube_client_request(kc, "GET", "/version", NULL, NULL, 0, 5000, 4096, &out,
					     &http, &err),
			 NG_EIO);
	assert_non_null(strstr(err.msg, "certificate"));
	kube_client_destroy(kc);
}

static void test_bearer_token_is_sent(void **state)
{
	struct kube_config cfg = config(ca_pem);
	cfg.token = "static-token";
	struct kube_client *kc = kube_client_create(&cfg);
	char *body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer static-token\""));
	free(body);
	kube_client_destroy(kc);
}

static void test_token_file_is_reread_after_it_changes(void **state)
{
	char path[PATH_MAX];
	(void)snprintf(path, sizeof(path), "%s/token", tmpdir);
	write_file(path, "token-one\n");
	struct kube_config cfg = config(ca_pem);
	cfg.token_file = path;
	struct kube_client *kc = kube_client_create(&cfg);
	char *body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer token-one\""));
	free(body);

	/* Within the 60 s interval the cached token is used. */
	write_file(path, "token-two\n");
	body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer token-one\""));
	free(body);

	kube_client_set_token_refresh_ms(kc, 20);
	struct timespec ts = {0, 50 * 1000 * 1000};
	(void)nanosleep(&ts, NULL);
	body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer token-two\""));
	free(body);

	/* A file that became unreadable keeps the last good token. */
	assert_int_equal(unlink(path), 0);
	(void)nanosleep(&ts, NULL);
	body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer token-two\""));
	free(body);
	kube_client_destroy(kc);

	/* No token ever read: the request fails and says why. */
	kc = kube_client_create(&cfg);
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(
	    kube_client_request(kc, "GET", "/api", NULL, NULL, 0, 5000, 4096, &out, &http, &err),
	    NG_EIO);
	assert_non_null(strstr(err.msg, "token"));
	kube_client_destroy(kc);
}

static void test_401_rereads_the_token_at_once(void **state)
{
	char path[PATH_MAX];
	(void)snprintf(path, sizeof(path), "%s/token401", tmpdir);
	write_file(path, "old");
	struct kube_config cfg = config(ca_pem);
	cfg.token_file = path;
	struct kube_client *kc = kube_client_create(&cfg);
	free(get_ok(kc, "/api"));
	write_file(path, "new");
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(kube_client_request(kc, "GET", "/status/401", NULL, NULL, 0, 5000, 4096,
					     &out, &http, &err),
			 NG_OK);
	assert_int_equal(http, 401);
	assert_non_null(strstr(out.data, "Bearer old"));
	ng_buf_finish(&out);
	char *body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer new\""));
	free(body);
	kube_client_destroy(kc);
}

/* O22: with a credential plugin, a 401 runs it again and the request is sent once more; a
 * second 401 stands and does not run it a third time. */
static void test_O22_401_runs_the_credential_plugin_and_retries_once(void **state)
{
	char path[PATH_MAX], body_sh[3 * PATH_MAX];
	(void)snprintf(path, sizeof(path), "%s/plugin.sh", tmpdir);
	(void)snprintf(
	    body_sh, sizeof(body_sh),
	    "#!/bin/sh\necho run >> %s/plugin.runs\n"
	    "n=$(wc -l < %s/plugin.runs)\n"
	    "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s."
	    "io/v1\",\"status\":{\"token\":\"run-%%s\"}}\\n' $n\n",
	    tmpdir, tmpdir);
	write_file(path, body_sh);
	assert_int_equal(chmod(path, 0700), 0);
	struct kube_exec_spec spec = {.command = strdup(path),
				      .api_version = strdup("client.authentication.k8s.io/v1"),
				      .user = strdup("u")};
	struct kube_config cfg = config(ca_pem);
	cfg.exec = kube_exec_cred_create(&spec);
	assert_non_null(cfg.exec);
	struct kube_client *kc = kube_client_create(&cfg);
	char *body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer run-1\""));
	free(body);
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(kube_client_request(kc, "GET", "/status/401", NULL, NULL, 0, 5000, 4096,
					     &out, &http, &err),
			 NG_OK);
	assert_int_equal(http, 401);
	assert_non_null(strstr(out.data, "Bearer run-2"));
	ng_buf_finish(&out);
	assert_int_equal(kube_exec_cred_runs(cfg.exec), 2);
	body = get_ok(kc, "/api");
	assert_non_null(strstr(body, "\"auth\": \"Bearer run-2\""));
	free(body);
	assert_int_equal(kube_exec_cred_runs(cfg.exec), 2);
	kube_client_destroy(kc);
	kube_exec_cred_unref(cfg.exec);
}

static void test_response_over_the_cap_is_elimit(void **state)
{
	struct kube_config cfg = config(ca_pem);
	struct kube_client *kc = kube_client_create(&cfg);
	static const char *paths[] = {"/big", "/bigchunked"};
	for (size_t i = 0; i < 2; i++) {
		struct ng_buf out = {.data = (char *)0xad, .len = 0xad};
		long http = 0xad;
		struct ng_err err = {0};
		assert_int_equal(kube_client_request(kc, "GET", paths[i], NULL, NULL, 0, 5000, 1024,
						     &out, &http, &err),
				 NG_ELIMIT);
		assert_non_null(strstr(err.msg, "larger than 1024 bytes"));
		assert_ptr_equal(out.data, (char *)0xad);
		assert_int_equal(http, 0xad);
	}
	/* Exactly fitting is fine. */
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(kube_client_request(kc, "GET", "/bigchunked", NULL, NULL, 0, 5000, 100000,
					     &out, &http, &err),
			 NG_OK);
	assert_int_equal(out.len, 100000);
	ng_buf_finish(&out);
	kube_client_destroy(kc);
}

static void test_slow_server_is_etimedout(void **state)
{
	struct kube_config cfg = config(ca_pem);
	struct kube_client *kc = kube_client_create(&cfg);
	struct ng_buf out = {0};
	long http = 0xad;
	struct ng_err err = {0};
	assert_int_equal(
	    kube_client_request(kc, "GET", "/sleep", NULL, NULL, 0, 300, 4096, &out, &http, &err),
	    NG_ETIMEDOUT);
	assert_non_null(strstr(err.msg, "timed out after 300 ms"));
	assert_null(out.data);
	assert_int_equal(http, 0xad);
	/* The client recovers on a new connection. */
	free(get_ok(kc, "/api"));
	kube_client_destroy(kc);
}

static int conn_of(const char *body)
{
	const char *p = strstr(body, "\"conn\": ");
	assert_non_null(p);
	p += 8;
	size_t n = strspn(p, "0123456789");
	int64_t v = 0;
	assert_int_equal(ng_parse_i64(p, n, 1, 1000000, &v), NG_OK);
	return (int)v;
}

static void test_connection_is_reused_across_requests(void **state)
{
	struct kube_config cfg = config(ca_pem);
	cfg.token = "t";
	struct kube_client *kc = kube_client_create(&cfg);
	char *a = get_ok(kc, "/a");
	struct ng_buf out = {0};
	long http = 0;
	struct ng_err err = {0};
	assert_int_equal(kube_client_request(kc, "PATCH", "/api/v1/nodes/n1",
					     "application/merge-patch+json",
					     "{\"spec\":{\"unschedulable\":true}}", 31, 5000, 4096,
					     &out, &http, &err),
			 NG_OK);
	char *b = get_ok(kc, "/b");
	assert_int_equal(conn_of(a), conn_of(b));
	assert_int_equal(conn_of(a), conn_of(out.data));
	assert_non_null(strstr(out.data, "\"method\": \"PATCH\""));
	assert_non_null(strstr(out.data, "\"ctype\": \"application/merge-patch+json\""));
	assert_non_null(strstr(out.data, "\\\"unschedulable\\\": true") ||
			strstr(out.data, "\\\"unschedulable\\\":true"));
	ng_buf_finish(&out);
	assert_int_equal(kube_client_request(kc, "DELETE", "/api/v1/pods/p", NULL, NULL, 0, 5000,
					     4096, &out, &http, &err),
			 NG_OK);
	assert_non_null(strstr(out.data, "\"method\": \"DELETE\""));
	ng_buf_finish(&out);
	free(a);
	free(b);
	kube_client_destroy(kc);
}

static void test_bad_arguments_are_einval(void **state)
{
	struct kube_config cfg = config(ca_pem);
	struct kube_client *kc = kube_client_create(&cfg);
	CURL *h = curl_easy_init();
	assert_non_null(h);
	struct curl_slist *headers = (struct curl_slist *)0xad;
	struct ng_err err = {0};
	static const char *paths[] = {"api", "/a b", "/a\r\nX: y", ""};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(kube_client_prepare(kc, h, paths[i], &headers, &err), NG_EINVAL);
		assert_ptr_equal(headers, (struct curl_slist *)0xad);
	}
	assert_int_equal(kube_client_prepare(kc, h, "/api", &headers, &err), NG_OK);
	assert_true(headers != (struct curl_slist *)0xad);
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);

	struct ng_buf out = {0};
	long http = 0;
	assert_int_equal(
	    kube_client_request(kc, "TRACE", "/", NULL, NULL, 0, 5000, 10, &out, &http, &err),
	    NG_EINVAL);
	assert_int_equal(kube_client_request(kc, "GET", "/", "application/json", "{}", 2, 5000, 10,
					     &out, &http, &err),
			 NG_EINVAL);
	assert_int_equal(
	    kube_client_request(kc, "POST", "/", NULL, "{}", 2, 5000, 10, &out, &http, &err),
	    NG_EINVAL);
	assert_int_equal(
	    kube_client_request(kc, "GET", "/", NULL, NULL, 0, 0, 10, &out, &http, &err),
	    NG_EINVAL);
	kube_client_destroy(kc);

	cfg.server = "not a url";
	kc = kube_client_create(&cfg);
	assert_non_null(kc);
	assert_int_equal(
	    kube_client_request(kc, "GET", "/", NULL, NULL, 0, 5000, 10, &out, &http, &err),
	    NG_EINVAL);
	kube_client_destroy(kc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ca_pem_verifies_the_server),
	    cmocka_unit_test(test_wrong_ca_fails_naming_the_certificate),
	    cmocka_unit_test(test_tls_server_name_is_verified),
	    cmocka_unit_test(test_bearer_token_is_sent),
	    cmocka_unit_test(test_token_file_is_reread_after_it_changes),
	    cmocka_unit_test(test_401_rereads_the_token_at_once),
	    cmocka_unit_test(test_O22_401_runs_the_credential_plugin_and_retries_once),
	    cmocka_unit_test(test_response_over_the_cap_is_elimit),
	    cmocka_unit_test(test_slow_server_is_etimedout),
	    cmocka_unit_test(test_connection_is_reused_across_requests),
	    cmocka_unit_test(test_bad_arguments_are_einval),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
