/* nodegate: flags -> config -> wiring -> signals. */
#include "certs/certs.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/prom.h"
#include "kube/config.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "controller/autorequest.h"
#include "controller/gate.h"
#include "controller/leader.h"

#include "policy/policy.h"
#include "server/server.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Repeatable flags hold at most this many values. */
#define MAX_MULTI 64
/* Certificate and key files are a few KiB; 1 MiB rejects a wrong path early. */
#define MAX_PEM_BYTES (1u << 20)

struct multi {
	const char *v[MAX_MULTI];
	size_t n;
};

struct serve_config {
	const char *listen;
	const char *tls_cert, *tls_key;
	struct multi snapshots;
	const char *log_level;
	const char *eviction_mode;
	struct multi exempt_users;
	struct multi deciders;
	int64_t retry_after_seconds;
	int64_t threads;
	int64_t max_connections;
	int64_t connection_timeout_seconds;
	int64_t shutdown_grace_seconds;
	const char *port_file;
	const char *kubeconfig;
	const char *kube_context;
	int64_t allow_insecure_kube_tls;
	int64_t watch_batch_ms;
	int64_t tls_reload_seconds;
	int64_t gate;
	const char *lease_namespace;
	const char *lease_name;
};

enum ftype { F_STR, F_INT, F_MULTI, F_BOOL };

/* One table drives parsing, environment variables, defaults, --help and docs/config.md. */
struct flag {
	const char *name, *env;
	enum ftype type;
	size_t off;
	const char *def;
	int64_t min, max;
	const char *arg, *doc;
};

#define OFF(f) offsetof(struct serve_config, f)
static const struct flag serve_flags[] = {
    {"listen", "NG_LISTEN", F_STR, OFF(listen), "0.0.0.0:8443", 0, 0, "ADDR:PORT",
     "Address and port of the HTTPS server; `[::]:8443` for IPv6, port 0 picks a free one."},
    {"tls-cert", "NG_TLS_CERT", F_STR, OFF(tls_cert), NULL, 0, 0, "FILE",
     "PEM serving certificate (chain). Required."},
    {"tls-key", "NG_TLS_KEY", F_STR, OFF(tls_key), NULL, 0, 0, "FILE",
     "PEM private key of the serving certificate. Required."},
    {"kubeconfig", "NG_KUBECONFIG", F_STR, OFF(kubeconfig), NULL, 0, 0, "FILE",
     "Watch the API server of this kubeconfig (its current context). Without it and without "
     "--snapshot: the first file of $KUBECONFIG, else the in-cluster service account."},
    {"kube-context", "NG_KUBE_CONTEXT", F_STR, OFF(kube_context), NULL, 0, 0, "NAME",
     "Use this kubeconfig context instead of current-context."},
    {"allow-insecure-kube-tls", "NG_ALLOW_INSECURE_KUBE_TLS", F_BOOL, OFF(allow_insecure_kube_tls),
     "false", 0, 1, "", "Accept a kubeconfig with insecure-skip-tls-verify (refused otherwise)."},
    {"watch-batch-ms", "NG_WATCH_BATCH_MS", F_INT, OFF(watch_batch_ms), "100", 1, 10000, "MS",
     "At most one cache publish per this many ms: an isolated change is published at once, a "
     "burst of changes together at the end of the window."},
    {"gate", "NG_GATE", F_BOOL, OFF(gate), "true", 0, 1, "",
     "Run the gate (grant and reject NodeDisruptions) when watching an API server; the replica "
     "holding the lease decides."},
    {"lease-namespace", "NG_LEASE_NAMESPACE", F_STR, OFF(lease_namespace), NULL, 0, 0, "NS",
     "Namespace of the gate's coordination.k8s.io Lease (default: the kubeconfig context's or the "
     "pod's namespace)."},
    {"tls-reload-seconds", "NG_TLS_RELOAD_SECONDS", F_INT, OFF(tls_reload_seconds), "10", 0, 3600,
     "N",
     "Check --tls-cert and --tls-key for changes this often and serve a new pair from the "
     "next handshake (cert-manager and Secret volumes renew in place); 0 = only on SIGHUP. A "
     "pair that does not load is logged and the current one kept."},
    {"lease-name", "NG_LEASE_NAME", F_STR, OFF(lease_name), "nodegate-gate", 0, 0, "NAME",
     "Name of the gate's Lease."},
    {"snapshot", "NG_SNAPSHOT", F_MULTI, OFF(snapshots), NULL, 0, 0, "FILE",
     "Decide from cluster state in files instead of an API server: `kubectl get ... -o json` "
     "output (a List of mixed kinds, a ...List, or one object). Repeatable; later files "
     "replace objects of the same identity. SIGHUP reloads them."},
    {"log-level", "NG_LOG_LEVEL", F_STR, OFF(log_level), "info", 0, 0, "LEVEL",
     "debug, info, warn or error."},
    {"eviction-mode", "NG_EVICTION_MODE", F_STR, OFF(eviction_mode), "Enforce", 0, 0, "MODE",
     "Enforce (deny protected evictions with 429), Warn (allow with a warning) or Off."},
    {"exempt-user", "NG_EXEMPT_USER", F_MULTI, OFF(exempt_users), NULL, 0, 0, "NAME",
     "A username whose evictions are always allowed. Repeatable."},
    {"decider-user", "NG_DECIDER_USER", F_MULTI, OFF(deciders), NULL, 0, 0, "NAME",
     "A username that may change a NodeDisruption's decision (status.state, disruptedNodes, "
     "grantedAt, disruptedDisruptionBudgets) where /validate/nodedisruption-status is "
     "registered: nodegate's own service account. Repeatable; default "
     "system:serviceaccount:nodegate:nodegate."},
    {"retry-after-seconds", "NG_RETRY_AFTER_SECONDS", F_INT, OFF(retry_after_seconds), "10", 1,
     3600, "N", "details.retryAfterSeconds of a denied eviction."},
    {"threads", "NG_THREADS", F_INT, OFF(threads), "0", 0, 64, "N",
     "HTTPS server threads (one epoll daemon each, sharing the port); 0 = one per core."},
    {"max-connections", "NG_MAX_CONNECTIONS", F_INT, OFF(max_connections), "1000", 1, 100000, "N",
     "Open connections accepted across all threads."},
    {"connection-timeout-seconds", "NG_CONNECTION_TIMEOUT_SECONDS", F_INT,
     OFF(connection_timeout_seconds), "120", 0, 86400, "N",
     "Idle keep-alive connections are closed after this long. Above the API server's 90 s "
     "idle timeout, so it closes first and never reuses a connection we are closing."},
    {"shutdown-grace-seconds", "NG_SHUTDOWN_GRACE_SECONDS", F_INT, OFF(shutdown_grace_seconds), "5",
     0, 300, "N", "On SIGTERM/SIGINT: stop accepting, then wait this long for open connections."},
    {"port-file", "NG_PORT_FILE", F_STR, OFF(port_file), NULL, 0, 0, "FILE",
     "Write the bound port here once serving (for tests and scripts using port 0)."},
};
#undef OFF
#define NFLAGS (sizeof(serve_flags) / sizeof(serve_flags[0]))

static void usage(FILE *f)
{
	(void)fprintf(f,
		      "Usage: nodegate serve [FLAGS]\n"
		      "       nodegate check --snapshot FILE [--snapshot FILE...] --nd FILE "
		      "[--now TIME]\n"
		      "       nodegate --version | --help | --dump-config-doc\n\n"
		      "check: decides the NodeDisruption in --nd against the cluster in the "
		      "snapshot files (kubectl get -o json output) as the gate would, health "
		      "hooks aside, and prints the decision as JSON. Exit status 0 when it would "
		      "be Granted, 1 when not, 2 when it is invalid or a file cannot be read.\n\n"
		      "serve: the admission webhooks (POST /validate/eviction, "
		      "/validate/nodedisruption, /validate/nodedisruption-status, "
		      "/validate/budget, /mutate/nodedisruption), the gate, POST /v1/evaluate, "
		      "/healthz, /readyz, /metrics.\n\nFlags (each also read from its environment "
		      "variable; flags win):\n");
	for (size_t i = 0; i < NFLAGS; i++) {
		const struct flag *fl = &serve_flags[i];
		(void)fprintf(f, "  --%s%s%s  [%s]%s%s%s\n      %s\n", fl->name,
			      *fl->arg ? " " : "", fl->arg, fl->env, fl->def ? " (default " : "",
			      fl->def ? fl->def : "", fl->def ? ")" : "", fl->doc);
	}
}

/* docs/config.md is generated from the table; a test diffs the two. */
static void dump_config_doc(void)
{
	(void)printf("# nodegate serve: configuration\n\n"
		     "Generated by `nodegate --dump-config-doc`; a test keeps this file and the "
		     "binary in step.\nEach flag can also be set by its environment variable; a "
		     "flag given on the command line wins.\n\n"
		     "| flag | environment | default | meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < NFLAGS; i++) {
		const struct flag *fl = &serve_flags[i];
		(void)printf("| `--%s%s%s` | `%s` | %s%s%s | %s |\n", fl->name, *fl->arg ? " " : "",
			     fl->arg, fl->env, fl->def ? "`" : "", fl->def ? fl->def : "",
			     fl->def ? "`" : "", fl->doc);
	}
}

static int set_flag(struct serve_config *c, const struct flag *fl, const char *val,
		    const char *origin)
{
	char *base = (char *)c;
	switch (fl->type) {
	case F_STR:
		*(const char **)(base + fl->off) = val;
		return 0;
	case F_MULTI: {
		struct multi *m = (struct multi *)(base + fl->off);
		if (m->n == MAX_MULTI) {
			(void)fprintf(stderr, "nodegate: %s: --%s given more than %d times\n",
				      origin, fl->name, MAX_MULTI);
			return -1;
		}
		m->v[m->n++] = val;
		return 0;
	}
	case F_BOOL:
		if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0) {
			*(int64_t *)(base + fl->off) = 1;
			return 0;
		}
		if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0) {
			*(int64_t *)(base + fl->off) = 0;
			return 0;
		}
		(void)fprintf(stderr, "nodegate: %s: --%s \"%s\": expected true or false\n", origin,
			      fl->name, val);
		return -1;
	case F_INT: {
		int64_t v;
		ng_status st = ng_parse_i64(val, strlen(val), fl->min, fl->max, &v);
		if (st != NG_OK) {
			(void)fprintf(stderr,
				      "nodegate: %s: --%s \"%s\": expected an integer in "
				      "%lld..%lld\n",
				      origin, fl->name, val, (long long)fl->min,
				      (long long)fl->max);
			return -1;
		}
		*(int64_t *)(base + fl->off) = v;
		return 0;
	}
	}
	return -1;
}

static int parse_serve(int argc, char **argv, struct serve_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NFLAGS; i++)
		if (serve_flags[i].def &&
		    set_flag(c, &serve_flags[i], serve_flags[i].def, "default") != 0)
			return -1;
	/* Environment next; a multi-valued variable holds one value. */
	bool from_flag[NFLAGS] = {false};
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0)
			continue;
		a += 2;
		for (size_t k = 0; k < NFLAGS; k++) {
			size_t n = strlen(serve_flags[k].name);
			if (strncmp(a, serve_flags[k].name, n) == 0 &&
			    (a[n] == '\0' || a[n] == '='))
				from_flag[k] = true;
		}
	}
	for (size_t k = 0; k < NFLAGS; k++) {
		const char *e = getenv(serve_flags[k].env);
		if (e && *e && !from_flag[k] && set_flag(c, &serve_flags[k], e, serve_flags[k].env))
			return -1;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0) {
			(void)fprintf(
			    stderr, "nodegate serve: unexpected argument \"%s\" (see --help)\n", a);
			return -1;
		}
		a += 2;
		const struct flag *fl = NULL;
		const char *val = NULL;
		for (size_t k = 0; k < NFLAGS && !fl; k++) {
			size_t n = strlen(serve_flags[k].name);
			if (strncmp(a, serve_flags[k].name, n) == 0 &&
			    (a[n] == '\0' || a[n] == '=')) {
				fl = &serve_flags[k];
				val = a[n] == '=' ? a + n + 1 : NULL;
			}
		}
		if (!fl) {
			(void)fprintf(stderr, "nodegate serve: unknown flag \"%s\" (see --help)\n",
				      argv[i]);
			return -1;
		}
		if (!val && fl->type == F_BOOL) {
			val = "true";
		} else if (!val) {
			if (i + 1 >= argc) {
				(void)fprintf(stderr, "nodegate serve: --%s needs a value (%s)\n",
					      fl->name, fl->arg);
				return -1;
			}
			val = argv[++i];
		}
		if (set_flag(c, fl, val, "command line") != 0)
			return -1;
	}
	return 0;
}

static int split_listen(const char *s, char *host, size_t hostcap, uint16_t *port)
{
	const char *colon;
	const char *h = s;
	size_t hlen;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -1;
		h = s + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= hostcap)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	int64_t p;
	if (ng_parse_i64(colon + 1, strlen(colon + 1), 0, 65535, &p) != NG_OK)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

/* The PEM files: reported and NULL on error. */
static char *read_pem(const char *path, const char *what, bool secret)
{
	char *buf = NULL;
	size_t len;
	struct ng_err err = {0};
	if (ng_read_file(path, MAX_PEM_BYTES, what, secret, &buf, &len, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return NULL;
	}
	if (len == 0) {
		(void)fprintf(stderr, "nodegate: %s %s: empty\n", what, path);
		free(buf);
		return NULL;
	}
	return buf;
}

static struct kube_snapshot *load_snapshot(const struct serve_config *c)
{
	struct ng_err err = {0};
	struct kube_snapshot *snap = NULL;
	int64_t t0 = ng_now_mono_us();
	ng_status st = kube_snapshot_load_files(c->snapshots.v, c->snapshots.n, &snap, &err);
	struct ng_logline l;
	if (st != NG_OK) {
		if (ng_log_begin(&l, NG_LOG_ERROR, "cmd", "snapshot load failed")) {
			ng_log_str(&l, "err", err.msg);
			ng_log_end(&l);
		}
		return NULL;
	}
	if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "snapshot loaded")) {
		for (int r = 0; r < KUBE_RES_COUNT; r++)
			ng_log_i64(&l, kube_resource_name((enum kube_resource)r),
				   (int64_t)kube_snapshot_count(snap, (enum kube_resource)r));
		ng_log_i64(&l, "dur_us", ng_now_mono_us() - t0);
		ng_log_end(&l);
	}
	return snap;
}

static int write_port_file(const char *path, uint16_t port)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -1;
	(void)fprintf(f, "%u\n", port);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

/* The gate's and the lease's series for /metrics: the server does not know those layers. */
struct controller_metrics {
	const struct gate *gate;
	const struct leader *leader;
	const struct autoreq *autoreq;
	_Atomic int64_t cert_not_after; /* the serving certificate's notAfter, Unix seconds; 0
					   unknown */
};

/* The eviction webhook's autoRequest hook: queued, never waited on. */
static void submit_auto_request(const char *node, const char *user, void *ctx)
{
	autoreq_submit(ctx, node, user);
}

static ng_status render_controller(struct ng_buf *out, void *ctx)
{
	const struct controller_metrics *cm = ctx;
	int64_t not_after = atomic_load(&cm->cert_not_after);
	ng_status st = NG_OK;
	if (not_after) {
		static const char *const name = "nodegate_certificate_expiry_timestamp_seconds";
		st = ng_prom_header(
		    out, name, NG_PROM_GAUGE,
		    "When the serving certificate expires (notAfter, Unix seconds).");
		st = st ? st : ng_prom_i64(out, name, NULL, 0, not_after);
	}
	if (cm->autoreq)
		st = st ? st : autoreq_render_metrics(cm->autoreq, out);
	return st ? st : gate_render_metrics(cm->gate, cm->leader, out);
}

/* What the served certificate files were when last read: a change of either is a renewal. */
struct tls_files {
	struct stat cert, key;
};

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Whether --tls-cert or --tls-key changed since the last call (which it records). A file
 * that cannot be stat'ed is not a change: a renewal replaces files, it does not remove them. */
static bool tls_files_changed(const struct serve_config *c, struct tls_files *last)
{
	struct tls_files now;
	if (stat(c->tls_cert, &now.cert) != 0 || stat(c->tls_key, &now.key) != 0)
		return false;
	bool changed = !same_file(&now.cert, &last->cert) || !same_file(&now.key, &last->key);
	*last = now;
	return changed;
}

/* Reads the pair again and serves it from the next handshake; a pair that does not load is
 * logged and the current one kept. */
static void reload_certificate(const struct serve_config *c, struct srv *srv,
			       _Atomic int64_t *not_after)
{
	char *cert = read_pem(c->tls_cert, "--tls-cert", false);
	char *key = cert ? read_pem(c->tls_key, "--tls-key", true) : NULL;
	struct ng_err err = {0};
	int64_t exp = 0;
	ng_status st = cert && key ? srv_set_certificate(srv, cert, key, &err) : NG_EINVAL;
	if (st == NG_OK && cert_not_after(cert, &exp, &err) == NG_OK)
		atomic_store(not_after, exp);
	struct ng_logline l;
	if (ng_log_begin(&l, st == NG_OK ? NG_LOG_INFO : NG_LOG_ERROR, "cmd",
			 st == NG_OK
			     ? "serving certificate reloaded"
			     : "serving certificate not reloaded: keeping the current one")) {
		ng_log_str(&l, "cert", c->tls_cert);
		if (st == NG_OK)
			ng_log_i64(&l, "not_after", exp);
		else
			ng_log_str(&l, "err", err.msg[0] ? err.msg : "the files do not read");
		ng_log_end(&l);
	}
	if (key)
		explicit_bzero(key, strlen(key));
	free(key);
	free(cert);
}

static int cmd_serve(int argc, char **argv)
{
	struct serve_config c;
	if (parse_serve(argc, argv, &c) != 0)
		return 2;
	enum ng_log_level level;
	if (ng_log_parse_level(c.log_level, &level) != 0) {
		(void)fprintf(stderr,
			      "nodegate: --log-level \"%s\": use debug, info, warn or error\n",
			      c.log_level);
		return 2;
	}
	ng_log_set_level(level);
	/* Request bodies of up to 3 MiB are buffered and freed. glibc would raise its mmap
	 * threshold after the first such free and keep later ones on the heap, so resident memory
	 * would ratchet up; a fixed threshold returns big buffers to the kernel at once. */
	(void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	struct pol_eviction_config ev = {
	    .exempt_users = c.exempt_users.v,
	    .nexempt = c.exempt_users.n,
	    .retry_after_seconds = (int32_t)c.retry_after_seconds,
	};
	if (pol_eviction_mode_parse(c.eviction_mode, &ev.mode) != 0) {
		(void)fprintf(stderr,
			      "nodegate: --eviction-mode \"%s\": use Enforce, Warn or Off\n",
			      c.eviction_mode);
		return 2;
	}
	char host[64];
	uint16_t port;
	if (split_listen(c.listen, host, sizeof(host), &port) != 0) {
		(void)fprintf(stderr,
			      "nodegate: --listen \"%s\": expected ADDR:PORT, e.g. 0.0.0.0:8443 or "
			      "[::]:8443\n",
			      c.listen);
		return 2;
	}
	if (!c.tls_cert || !c.tls_key) {
		(void)fprintf(stderr, "nodegate: --tls-cert and --tls-key are required (the API "
				      "server only calls webhooks over HTTPS)\n");
		return 2;
	}
	struct kube_config kcfg = {0};
	bool live = c.snapshots.n == 0;
	if (live) {
		struct ng_err kerr = {0};
		if (kube_config_resolve(c.kubeconfig, c.kube_context,
					c.allow_insecure_kube_tls != 0, &kcfg, &kerr) != NG_OK) {
			(void)fprintf(stderr, "nodegate: finding the API server: %s\n", kerr.msg);
			return 2;
		}
	}
	/* Signals go to the main thread only: block them before any thread starts. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	char *cert = read_pem(c.tls_cert, "--tls-cert", false);
	char *key = cert ? read_pem(c.tls_key, "--tls-key", true) : NULL;
	struct kube_store *store = kube_store_create();
	struct kube_watch *watch = NULL;
	struct leader *leader = NULL;
	struct gate *gate = NULL;
	struct autoreq *autoreq = NULL;
	char identity[300];
	struct srv *srv = NULL;
	int rc = 1;
	struct ng_logline l;
	if (!key || !store)
		goto out;
	if (live) {
		struct kube_watch_config wc = {
		    .cfg = &kcfg, .store = store, .batch_ms = c.watch_batch_ms};
		struct ng_err werr = {0};
		watch = kube_watch_start(&wc, &werr);
		if (!watch) {
			(void)fprintf(stderr, "nodegate: %s\n", werr.msg);
			goto out;
		}
		struct autoreq_config ac = {.kube = &kcfg, .store = store};
		autoreq = autoreq_start(&ac, &werr);
		if (!autoreq) {
			(void)fprintf(stderr, "nodegate: %s\n", werr.msg);
			goto out;
		}
		if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "watching the API server")) {
			ng_log_str(&l, "server", kcfg.server);
			ng_log_str(&l, "source", kcfg.source);
			ng_log_end(&l);
		}
		if (c.gate) {
			char hostname[256] = "nodegate";
			(void)gethostname(hostname, sizeof(hostname) - 1);
			ng_fmt(identity, sizeof(identity), "%s_%ld", hostname, (long)getpid());
			struct leader_config lc = {
			    .kube = &kcfg,
			    .ns = c.lease_namespace ? c.lease_namespace : kcfg.ns,
			    .name = c.lease_name,
			    .identity = identity,
			};
			leader = leader_start(&lc, &werr);
			struct gate_config gc = {.kube = &kcfg,
						 .store = store,
						 .watch = watch,
						 .leader = leader,
						 .identity = identity};
			gate = leader ? gate_start(&gc, &werr) : NULL;
			if (!gate) {
				(void)fprintf(stderr, "nodegate: %s\n", werr.msg);
				goto out;
			}
		}
	} else {
		struct kube_snapshot *snap = load_snapshot(&c);
		if (!snap)
			goto out;
		kube_store_publish(store, snap);
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct controller_metrics cm = {.gate = gate, .leader = leader, .autoreq = autoreq};
	struct tls_files tls = {0};
	tls_files_changed(&c, &tls); /* remembers what is being served */
	int64_t exp = 0;
	struct ng_err cerr = {0};
	if (cert_not_after(cert, &exp, &cerr) == NG_OK)
		atomic_store(&cm.cert_not_after, exp); /* else GnuTLS judges the file below */
	static const char *const default_deciders[] = {"system:serviceaccount:nodegate:nodegate"};
	ev.auto_request_served = autoreq != NULL;
	struct srv_config sc = {
	    .listen_host = host,
	    .port = port,
	    .cert_pem = cert,
	    .key_pem = key,
	    .threads = c.threads ? (unsigned)c.threads : (unsigned)(ncpu > 0 ? ncpu : 1),
	    .max_connections = (unsigned)c.max_connections,
	    .connection_timeout_s = (unsigned)c.connection_timeout_seconds,
	    .eviction = ev,
	    .objects = {c.deciders.n ? c.deciders.v : default_deciders,
			c.deciders.n ? c.deciders.n : 1},
	    .watch = watch,
	    .metrics_extra = render_controller,
	    .metrics_ctx = &cm,
	    .auto_request = autoreq ? submit_auto_request : NULL,
	    .auto_request_ctx = autoreq,
	};
	struct ng_err err = {0};
	srv = srv_create(&sc, store, &err);
	/* The PEM key has been handed to GnuTLS; don't keep a second copy around. */
	memset(key, 0, strlen(key));
	if (!srv) {
		if (ng_log_begin(&l, NG_LOG_ERROR, "cmd", "server start failed")) {
			ng_log_str(&l, "err", err.msg);
			ng_log_end(&l);
		}
		goto out;
	}
	if (c.port_file && write_port_file(c.port_file, srv_port(srv)) != 0) {
		(void)fprintf(stderr, "nodegate: --port-file %s: %s\n", c.port_file,
			      strerror(errno));
		goto out;
	}
	if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "serving")) {
		ng_log_str(&l, "version", NG_VERSION);
		ng_log_str(&l, "host", host);
		ng_log_i64(&l, "port", srv_port(srv));
		ng_log_i64(&l, "threads", sc.threads);
		ng_log_str(&l, "eviction_mode", pol_eviction_mode_str(ev.mode));
		ng_log_i64(&l, "exempt_users", (int64_t)ev.nexempt);
		ng_log_end(&l);
	}
	for (;;) {
		struct timespec poll = {c.tls_reload_seconds ? c.tls_reload_seconds : 3600, 0};
		int sig = sigtimedwait(&set, NULL, &poll);
		if (sig < 0) {
			if (errno == EAGAIN && c.tls_reload_seconds && tls_files_changed(&c, &tls))
				reload_certificate(&c, srv, &cm.cert_not_after);
			continue;
		}
		if (sig == SIGHUP) {
			(void)tls_files_changed(&c, &tls);
			reload_certificate(&c, srv, &cm.cert_not_after);
		}
		if (sig == SIGHUP && live)
			continue; /* the watch keeps the cache current */
		if (sig == SIGHUP) {
			/* Build, validate, swap: a bad file keeps the current state. */
			struct kube_snapshot *next = load_snapshot(&c);
			if (next)
				kube_store_publish(store, next);
			continue;
		}
		if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "shutting down")) {
			ng_log_str(&l, "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			ng_log_end(&l);
		}
		break;
	}
	rc = 0;
out:
	srv_destroy(srv, c.shutdown_grace_seconds * 1000);
	gate_stop(gate);
	autoreq_stop(autoreq);
	leader_stop(leader); /* releases the lease for a quick takeover */
	kube_watch_stop(watch);
	kube_store_destroy(store);
	kube_config_finish(&kcfg);
	free(cert);
	free(key);
	return rc;
}

/* Writes @data to @dir/@name, refusing to replace a file (a CA key is not overwritten by a
 * typo). 0 or -1 with errno. */
static int write_new_file(const char *dir, const char *name, const char *data, mode_t mode)
{
	char path[4096];
	ng_fmt(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	size_t len = strlen(data), off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			(void)close(fd);
			errno = e;
			return -1;
		}
		off += (size_t)n;
	}
	return close(fd);
}

/* nodegate certs: a CA and a serving certificate for the webhook's Service. */
static int cmd_certs(int argc, char **argv)
{
	const char *out = NULL, *extra[MAX_MULTI];
	struct cert_request r = {.service = "nodegate", .ns = "nodegate", .days = 365};
	for (int i = 0; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int64_t days;
		if (strcmp(argv[i], "--out") == 0 && val)
			out = argv[++i];
		else if (strcmp(argv[i], "--service") == 0 && val)
			r.service = argv[++i];
		else if (strcmp(argv[i], "--namespace") == 0 && val)
			r.ns = argv[++i];
		else if (strcmp(argv[i], "--dns") == 0 && val && r.nextra < MAX_MULTI)
			extra[r.nextra++] = argv[++i];
		else if (strcmp(argv[i], "--days") == 0 && val &&
			 ng_parse_i64(val, strlen(val), 1, 3650, &days) == NG_OK) {
			r.days = (int)days;
			i++;
		} else {
			(void)fprintf(stderr,
				      "nodegate certs: unexpected \"%s\" (see nodegate --help)\n",
				      argv[i]);
			return 2;
		}
	}
	r.extra_dns = extra;
	if (!out) {
		(void)fprintf(stderr, "nodegate certs: --out DIR is required\n");
		return 2;
	}
	struct cert_pair p;
	struct ng_err err = {0};
	if (cert_generate(&r, &p, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate certs: %s\n", err.msg);
		return 2;
	}
	static const char *const names[4] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
	const char *data[4] = {p.ca_pem, p.ca_key_pem, p.cert_pem, p.key_pem};
	int rc = 0;
	for (int i = 0; i < 4 && rc == 0; i++) {
		if (write_new_file(out, names[i], data[i], i % 2 ? 0600 : 0644) != 0) {
			(void)fprintf(stderr, "nodegate certs: %s/%s: %s\n", out, names[i],
				      strerror(errno));
			rc = 1;
		}
	}
	if (rc == 0) {
		/* What a webhook configuration's clientConfig.caBundle takes. */
		struct ng_buf b;
		ng_buf_init(&b, 64 * 1024);
		if (ng_buf_base64(&b, p.ca_pem, strlen(p.ca_pem)) == NG_OK)
			(void)printf("%s\n", b.data);
		ng_buf_finish(&b);
	}
	cert_pair_finish(&p);
	return rc;
}

/* nodegate check: the dry run of POST /v1/evaluate, offline. */
static int cmd_check(int argc, char **argv)
{
	const char *snaps[MAX_MULTI];
	size_t nsnaps = 0;
	const char *nd = NULL, *now_s = NULL;
	for (int i = 0; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--snapshot") == 0 && val && nsnaps < MAX_MULTI)
			snaps[nsnaps++] = argv[++i];
		else if (strcmp(argv[i], "--nd") == 0 && val)
			nd = argv[++i];
		else if (strcmp(argv[i], "--now") == 0 && val)
			now_s = argv[++i];
		else {
			(void)fprintf(stderr,
				      "nodegate check: unexpected \"%s\" (see nodegate --help)\n",
				      argv[i]);
			return 2;
		}
	}
	int64_t now = ng_now_wall_ms();
	if (!nsnaps || !nd || (now_s && ng_parse_rfc3339_ms(now_s, strlen(now_s), &now) != 0)) {
		(void)fprintf(stderr, "nodegate check: --snapshot FILE and --nd FILE are required; "
				      "--now takes an RFC 3339 time\n");
		return 2;
	}
	struct ng_err err = {0};
	struct kube_snapshot *snap = NULL;
	char *body = NULL;
	size_t len = 0;
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES * 8);
	struct ng_buf out;
	ng_buf_init(&out, 16u << 20);
	int rc = 2, code = 0;
	bool granted = false;
	if (kube_snapshot_load_files(snaps, nsnaps, &snap, &err) != NG_OK ||
	    ng_read_file(nd, NG_MAX_BODY_BYTES, "--nd", false, &body, &len, &err) != NG_OK ||
	    !arena ||
	    srv_evaluate(body, len, arena, snap, now, &out, &code, &granted, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate check: %s\n",
			      err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	(void)fputs(out.data, code == 200 ? stdout : stderr);
	rc = code != 200 ? 2 : granted ? 0 : 1;
out:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	free(body);
	kube_snapshot_release(snap);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		(void)printf("nodegate %s\n", NG_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--dump-config-doc") == 0) {
		dump_config_doc();
		return 0;
	}
	if (strcmp(argv[1], "serve") == 0) {
		/* Before any thread starts (STYLE.md B9 rule 5). */
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			(void)fprintf(stderr, "nodegate: curl_global_init failed\n");
			return 1;
		}
		int rc = cmd_serve(argc - 2, argv + 2);
		curl_global_cleanup();
		return rc;
	}
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (strcmp(argv[1], "certs") == 0)
		return cmd_certs(argc - 2, argv + 2);
	(void)fprintf(stderr, "nodegate: unknown command \"%s\" (see nodegate --help)\n", argv[1]);
	return 2;
}
