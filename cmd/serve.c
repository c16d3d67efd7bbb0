/* nodegate serve: configure from the flags, fill the cache (snapshot files or a watch), start
 * the controllers and the HTTPS server, then wait for signals on the main thread. The flags are
 * read in serve_config.c, the serving certificate kept in serve_certificate.c. */
#include "cmd/cmd.h"
#include "cmd/controllers.h"
#include "cmd/serve_internal.h"

#include "certs/certs.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/prom.h"
#include "common/regex.h"
#include "common/status.h"
#include "kube/auth.h"
#include "kube/config.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "controller/autorequest.h"
#include "controller/capi.h"
#include "controller/gate.h"
#include "controller/leader.h"
#include "controller/remediate.h"
#include "controller/selfsigned.h"
#include "policy/policy.h"
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static struct kube_snapshot *load_snapshot(const struct cmd_serve_config *c)
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

int cmd_write_port_file(const char *path, uint16_t port)
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

/* The eviction webhook's autoRequest hook: queued, never waited on. */
static void submit_auto_request(const char *node, const char *user, bool verified, void *ctx)
{
	autoreq_submit(ctx, node, user, verified);
}

/* The eviction webhook's record of a use of an autoRequest request: queued likewise. */
static void used_auto_request(const char *node, void *ctx)
{
	autoreq_used(ctx, node);
}

/* The admin listener's authorizer with --admin-auth kubernetes: a TokenReview and a
 * SubjectAccessReview, cached. Refusals are logged with who and why. */
static enum srv_auth authorize_admin(void *ctx, const char *authorization, const char *verb,
				     const char *path, char *user, size_t usercap)
{
	struct kube_auth_user u = {{0}};
	struct ng_err err = {0};
	enum kube_auth_result r = kube_auth_check(ctx, authorization, verb, path, &u, &err);
	ng_fmt(user, usercap, "%s", u.name);
	struct ng_logline l;
	if (r != KUBE_AUTH_ALLOWED &&
	    ng_log_begin(&l, r == KUBE_AUTH_ERROR ? NG_LOG_WARN : NG_LOG_INFO, "cmd",
			 "admin request refused")) {
		ng_log_str(&l, "result", kube_auth_result_str(r));
		ng_log_str(&l, "verb", verb);
		ng_log_str(&l, "path", path);
		ng_log_str(&l, "user", u.name);
		ng_log_str(&l, "err", err.msg);
		ng_log_end(&l);
	}
	switch (r) {
	case KUBE_AUTH_ALLOWED:
		return SRV_AUTH_ALLOWED;
	case KUBE_AUTH_UNAUTHENTICATED:
		return SRV_AUTH_UNAUTHENTICATED;
	case KUBE_AUTH_FORBIDDEN:
		return SRV_AUTH_FORBIDDEN;
	default:
		return SRV_AUTH_UNAVAILABLE;
	}
}

/* Signals go to the main thread only: block them before any thread starts. */
static void block_signals(struct serve *s)
{
	sigemptyset(&s->signals);
	sigaddset(&s->signals, SIGTERM);
	sigaddset(&s->signals, SIGINT);
	sigaddset(&s->signals, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &s->signals, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
}

/* The serving pair and the empty store. 0, or -1 (the PEM errors are printed). */
static int open_store(struct serve *s)
{
	if (s->c.self_signed) {
		if (serve_make_certificate(s) != 0)
			return -1;
	} else {
		s->cert = serve_read_pem(s->c.tls_cert, "--tls-cert", false);
		s->key = s->cert ? serve_read_pem(s->c.tls_key, "--tls-key", true) : NULL;
	}
	if (s->key && s->c.client_ca) {
		s->client_ca = serve_read_pem(s->c.client_ca, "--client-ca", false);
		if (!s->client_ca)
			return -1;
	}
	s->store = kube_store_create();
	return s->key && s->store ? 0 : -1;
}

/* Fills the store: a watch of the API server, or the snapshot files once now (SIGHUP reloads
 * them). 0 or -1. */
static int load_or_watch_cache(struct serve *s)
{
	if (!s->live) {
		struct kube_snapshot *snap = load_snapshot(&s->c);
		if (!snap)
			return -1;
		kube_store_publish(s->store, snap);
		return 0;
	}
	struct kube_watch_config wc = {.cfg = &s->kcfg,
				       .store = s->store,
				       .batch_ms = s->c.watch_batch_ms,
				       .page_lists = !s->c.watch_list};
	struct ng_err werr = {0};
	s->watch = kube_watch_start(&wc, &werr);
	if (!s->watch) {
		(void)fprintf(stderr, "nodegate: %s\n", werr.msg);
		return -1;
	}
	return 0;
}

/* The one authenticator of a live serve: the admin listener's callers (--admin-auth
 * kubernetes), the object webhooks' privileged operations and remediation's authors all ask
 * the API server through it, with one cache, one bound on requests in flight and one set of
 * nodegate_auth_* series. Its timeout leaves a webhook time to answer within the API server's
 * 5 s. 0, or -1 after printing why. */
static int start_access_checks(void *ctx)
{
	struct serve *s = ctx;
	const struct kube_auth_options ao = {.timeout_ms = KUBE_AUTH_ADMISSION_TIMEOUT_MS};
	struct ng_err err = {0};
	s->authz = kube_auth_create(&s->kcfg, &ao, &err);
	if (!s->authz) {
		(void)fprintf(stderr, "nodegate: the access checks: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_access_checks(void *ctx)
{
	struct serve *s = ctx;
	kube_auth_destroy(s->authz);
	s->authz = NULL;
}

static ng_status render_access_checks(struct ng_buf *out, bool objects, const void *ctx)
{
	(void)objects;
	const struct serve *s = ctx;
	return s->authz ? kube_auth_render_metrics(s->authz, out) : NG_OK;
}

/* Whether a remediation's author may create the requests nodegate would create for it. */
static enum kube_auth_result remediation_may(void *ctx, const struct kube_auth_subject *who,
					     const char *subresource, struct ng_err *err)
{
	const struct kube_auth_resource what = {.verb = SRV_PRIVILEGED_VERB,
						.group = SRV_PRIVILEGED_GROUP,
						.resource = SRV_PRIVILEGED_RESOURCE,
						.subresource = subresource};
	return kube_auth_can(ctx, who, &what, err);
}

/* The controllers run only with a live cache; the lease, the gate and remediation (which
 * creates the requests the gate decides, so runs where the gate does) unless --gate=false. */
static bool live(const void *ctx)
{
	return ((const struct serve *)ctx)->live;
}

static bool gated(const void *ctx)
{
	const struct serve *s = ctx;
	return s->live && s->c.gate;
}

static bool self_signed(const void *ctx)
{
	return ((const struct serve *)ctx)->c.self_signed != 0;
}

/* The autoRequest queue; logs that the cache watches the API server. */
static int start_autoreq(void *ctx)
{
	struct serve *s = ctx;
	struct autoreq_config ac = {.kube = &s->kcfg,
				    .store = s->store,
				    .per_minute = (unsigned)s->c.auto_request_per_minute};
	struct ng_err err = {0};
	s->autoreq = autoreq_start(&ac, &err);
	if (!s->autoreq) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "watching the API server")) {
		ng_log_str(&l, "server", s->kcfg.server);
		ng_log_str(&l, "source", s->kcfg.source);
		ng_log_end(&l);
	}
	return 0;
}

static void stop_autoreq(void *ctx)
{
	struct serve *s = ctx;
	autoreq_stop(s->autoreq);
	s->autoreq = NULL;
}

static ng_status render_autoreq(struct ng_buf *out, bool objects, const void *ctx)
{
	(void)objects;
	const struct serve *s = ctx;
	return s->autoreq ? autoreq_render_metrics(s->autoreq, out) : NG_OK;
}

/* The Lease: the gate and remediation decide only while this replica holds it. */
static int start_lease(void *ctx)
{
	struct serve *s = ctx;
	cmd_identity(s->c.identity, s->identity, sizeof(s->identity));
	struct leader_config lc = {
	    .kube = &s->kcfg,
	    .ns = s->c.lease_namespace ? s->c.lease_namespace : s->kcfg.ns,
	    .name = s->c.lease_name,
	    .identity = s->identity,
	};
	struct ng_err err = {0};
	s->leader = leader_start(&lc, &err);
	if (!s->leader) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_lease(void *ctx)
{
	struct serve *s = ctx;
	leader_stop(s->leader); /* releases the lease for a quick takeover */
	s->leader = NULL;
}

static int start_gate(void *ctx)
{
	struct serve *s = ctx;
	struct gate_config gc = {.kube = &s->kcfg,
				 .store = s->store,
				 .watch = s->watch,
				 .leader = s->leader,
				 .identity = s->identity};
	struct ng_err err = {0};
	s->gate = gate_start(&gc, &err);
	if (!s->gate) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_gate(void *ctx)
{
	struct serve *s = ctx;
	gate_stop(s->gate);
	s->gate = NULL;
}

/* The gate's series and the lease's gauge, also without either (snapshot files, --gate=false). */
static ng_status render_gate(struct ng_buf *out, bool objects, const void *ctx)
{
	const struct serve *s = ctx;
	return gate_render_metrics(s->gate, s->leader, objects, out);
}

/* Remediation, with its authors' rights, which the API server judges. */
static int start_remediate(void *ctx)
{
	struct serve *s = ctx;
	struct remediate_config rc = {.kube = &s->kcfg,
				      .may = remediation_may,
				      .may_ctx = s->authz,
				      .store = s->store,
				      .watch = s->watch,
				      .leader = s->leader,
				      .identity = s->identity};
	struct ng_err err = {0};
	s->remediate = remediate_start(&rc, &err);
	if (!s->remediate) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_remediate(void *ctx)
{
	struct serve *s = ctx;
	remediate_stop(s->remediate);
	s->remediate = NULL;
}

static ng_status render_remediate(struct ng_buf *out, bool objects, const void *ctx)
{
	const struct serve *s = ctx;
	return s->remediate ? remediate_render_metrics(s->remediate, objects, out) : NG_OK;
}

/* Cluster API gating, while this replica holds the gate's Lease. */
static int start_capi(void *ctx)
{
	struct serve *s = ctx;
	struct capi_config cc = {.kube = &s->kcfg,
				 .store = s->store,
				 .watch = s->watch,
				 .leader = s->leader,
				 .identity = s->identity};
	struct ng_err err = {0};
	s->capi = capi_start(&cc, &err);
	if (!s->capi) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_capi(void *ctx)
{
	struct serve *s = ctx;
	capi_stop(s->capi);
	s->capi = NULL;
}

static ng_status render_capi(struct ng_buf *out, bool objects, const void *ctx)
{
	(void)objects;
	const struct serve *s = ctx;
	return capi_render_metrics(s->capi, out);
}

/* The serving certificate's notAfter, once known. */
static ng_status render_certificate(struct ng_buf *out, bool objects, const void *ctx)
{
	(void)objects;
	const struct serve *s = ctx;
	int64_t not_after = atomic_load(&s->cert_not_after);
	if (!not_after)
		return NG_OK;
	static const char *const name = "nodegate_certificate_expiry_timestamp_seconds";
	ng_status st =
	    ng_prom_header(out, name, NG_PROM_GAUGE,
			   "When the serving certificate expires (notAfter, Unix seconds).");
	return st ? st : ng_prom_i64(out, name, NULL, 0, not_after);
}

/* serve_rows' indexes. */
enum serve_row {
	ROW_AUTOREQ,
	ROW_LEASE,
	ROW_GATE,
	ROW_ACCESS_CHECKS,
	ROW_REMEDIATE,
	ROW_CAPI,
	ROW_SERVER,
	ROW_RENEWER,
	ROW_COUNT
};

/* /metrics lists the rows' series in this order, which predates the table's start order. */
static const uint8_t serve_metrics_order[] = {ROW_SERVER,        ROW_AUTOREQ, ROW_REMEDIATE,
					      ROW_ACCESS_CHECKS, ROW_GATE,    ROW_CAPI};

/* The series of the layers the server does not know: every row's. */
static ng_status render_rows(struct ng_buf *out, bool objects, void *ctx)
{
	const struct serve *s = ctx;
	return cmd_wiring_render(&s->wiring, serve_metrics_order, sizeof(serve_metrics_order), out,
				 objects);
}

/* The server's settings: the flags, the cache's watch and the controllers' hooks. */
static void server_config(struct serve *s)
{
	static const char *const default_deciders[] = {"system:serviceaccount:nodegate:nodegate"};
	const struct cmd_serve_config *c = &s->c;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->ev.auto_request_served = s->autoreq != NULL;
	s->sc = (struct srv_config){
	    .listen_host = s->host,
	    .port = s->port,
	    .cert_pem = s->cert,
	    .key_pem = s->key,
	    .threads = c->threads ? (unsigned)c->threads : (unsigned)(ncpu > 0 ? ncpu : 1),
	    .max_connections = (unsigned)c->max_connections,
	    .connection_timeout_s = (unsigned)c->connection_timeout_seconds,
	    .header_timeout_s = (unsigned)c->header_timeout_seconds,
	    .body_timeout_s = (unsigned)c->body_timeout_seconds,
	    .max_connections_per_address = (unsigned)c->max_connections_per_address,
	    .eviction = s->ev,
	    .objects = {c->deciders.n ? c->deciders.v : default_deciders,
			c->deciders.n ? c->deciders.n : 1, s->authz},
	    .watch = s->watch,
	    .metrics_extra = render_rows,
	    .metrics_ctx = s,
	    .auto_request = s->autoreq ? submit_auto_request : NULL,
	    .auto_request_used = s->autoreq ? used_auto_request : NULL,
	    .auto_request_ctx = s->autoreq,
	    .client_ca_pem = s->client_ca,
	    .webhook_metrics = c->webhook_port_metrics != 0,
	    .admin_host = s->admin_host[0] ? s->admin_host : NULL,
	    .admin_port = s->admin_port,
	    .admin_tls = s->admin_host[0] && !serve_loopback(s->admin_host),
	    .admin_authorize = s->auth ? authorize_admin : NULL,
	    .admin_authorize_ctx = s->auth,
	    /* On loopback (a port-forward, a sidecar) a web page could rebind its name to the
	     * listener, which has no authentication there; elsewhere every side door wants a
	     * bearer token, which a browser never sends on its own, and callers name the pod by
	     * addresses nodegate cannot list: the check applies once names are given. */
	    .admin_host_check =
		s->admin_host[0] && (serve_loopback(s->admin_host) || c->admin_hosts.n),
	    .admin_hosts = c->admin_hosts.v,
	    .nadmin_hosts = c->admin_hosts.n,
	    .admin_max_plans = (unsigned)c->admin_max_plans,
	    .plan_caps = {.max_rounds = (size_t)c->plan_max_rounds,
			  .max_decisions = (size_t)c->plan_max_decisions,
			  .max_mono_us = c->plan_max_seconds * 1000000},
	};
}

/* Every connection is a descriptor: the soft open-file limit (often 1024) is raised toward the
 * hard one so --max-connections can be reached; short of it, a warning says what will happen. */
static void raise_open_file_limit(int64_t max_connections)
{
	/* Room for the cache's, the controllers' and the libraries' own descriptors. */
	rlim_t want = (rlim_t)max_connections + 256;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < want) {
		rl.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	struct ng_logline l;
	if (rl.rlim_cur < want &&
	    ng_log_begin(&l, NG_LOG_WARN, "cmd",
			 "open-file limit below --max-connections: connections "
			 "beyond it are refused by the kernel")) {
		ng_log_i64(&l, "limit", (int64_t)rl.rlim_cur);
		ng_log_i64(&l, "max_connections", max_connections);
		ng_log_end(&l);
	}
}

/* Binds and serves; writes --port-file and logs "serving". 0 or -1 (logged or printed). */
static int start_server(void *ctx)
{
	struct serve *s = ctx;
	if (!s->c.self_signed)
		serve_tls_files_changed(&s->c, &s->tls); /* remembers what is being served */
	int64_t exp = 0;
	struct ng_err err = {0};
	if (cert_not_after(s->cert, &exp, &err) == NG_OK)
		atomic_store(&s->cert_not_after, exp); /* else GnuTLS judges the file below */
	/* Who may use the admin listener off loopback, and who may ask for a privileged
	 * operation, are the API server's to say (the access checks' row). Without one (snapshot
	 * files) nobody may ask for a privileged operation. */
	s->auth = s->admin_kube_auth ? s->authz : NULL;
	server_config(s);
	raise_open_file_limit(s->c.max_connections);
	s->srv = srv_create(&s->sc, s->store, &err);
	/* The PEM key has been handed to GnuTLS; don't keep a second copy around. */
	memset(s->key, 0, strlen(s->key));
	struct ng_logline l;
	if (!s->srv) {
		if (ng_log_begin(&l, NG_LOG_ERROR, "cmd", "server start failed")) {
			ng_log_str(&l, "err", err.msg);
			ng_log_end(&l);
		}
		return -1;
	}
	const char *port_file = s->c.port_file;
	if (port_file && cmd_write_port_file(port_file, srv_port(s->srv)) != 0) {
		(void)fprintf(stderr, "nodegate: --port-file %s: %s\n", port_file,
			      ng_strerror(errno));
		return -1;
	}
	if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "serving")) {
		ng_log_str(&l, "version", NG_VERSION);
		ng_log_str(&l, "host", s->host);
		ng_log_i64(&l, "port", srv_port(s->srv));
		ng_log_i64(&l, "threads", s->sc.threads);
		ng_log_i64(&l, "admin_port", srv_admin_port(s->srv));
		ng_log_str(&l, "admin_auth", s->auth ? "kubernetes" : "none");
		ng_log_bool(&l, "client_ca", s->client_ca != NULL);
		ng_log_str(&l, "eviction_mode", pol_eviction_mode_str(s->ev.mode));
		ng_log_i64(&l, "exempt_users", (int64_t)s->ev.nexempt);
		ng_log_bool(&l, "self_signed", s->c.self_signed != 0);
		ng_log_end(&l);
	}
	return 0;
}

static void stop_server(void *ctx)
{
	struct serve *s = ctx;
	srv_destroy(s->srv, s->c.shutdown_grace_seconds * 1000);
	s->srv = NULL;
}

/* --self-signed: renews the serving pair and hands it to the server. */
static int start_renewer(void *ctx)
{
	struct serve *s = ctx;
	struct ng_err err = {0};
	s->renewer = selfsigned_start(&s->ssc, &s->first, &err);
	if (!s->renewer) {
		(void)fprintf(stderr, "nodegate: --self-signed: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_renewer(void *ctx)
{
	struct serve *s = ctx;
	selfsigned_stop(s->renewer);
	s->renewer = NULL;
}

/* What serve runs, in start order; stopped in reverse, readers before what they read (the
 * renewer hands pairs to the server, the server asks the gate and the access checks, the
 * controllers follow the lease). */
static const struct cmd_controller serve_rows[ROW_COUNT] = {
    [ROW_AUTOREQ] = {.name = "autorequest",
		     .enabled = live,
		     .start = start_autoreq,
		     .stop = stop_autoreq,
		     .render = render_autoreq},
    [ROW_LEASE] = {.name = "lease", .enabled = gated, .start = start_lease, .stop = stop_lease},
    [ROW_GATE] = {.name = "gate",
		  .enabled = gated,
		  .start = start_gate,
		  .stop = stop_gate,
		  .render = render_gate},
    [ROW_ACCESS_CHECKS] = {.name = "access checks",
			   .enabled = live,
			   .start = start_access_checks,
			   .stop = stop_access_checks,
			   .render = render_access_checks},
    [ROW_REMEDIATE] = {.name = "remediation",
		       .enabled = gated,
		       .start = start_remediate,
		       .stop = stop_remediate,
		       .render = render_remediate},
    [ROW_CAPI] = {.name = "cluster api",
		  .enabled = gated,
		  .start = start_capi,
		  .stop = stop_capi,
		  .render = render_capi},
    [ROW_SERVER] = {.name = "server",
		    .start = start_server,
		    .stop = stop_server,
		    .render = render_certificate},
    [ROW_RENEWER] = {.name = "renewer",
		     .enabled = self_signed,
		     .start = start_renewer,
		     .stop = stop_renewer},
};

/* Until SIGTERM or SIGINT: SIGHUP and --tls-reload-seconds reload the serving pair, and SIGHUP
 * reloads the snapshot files (a live cache needs no reload). */
static void wait_for_signals(struct serve *s)
{
	const struct cmd_serve_config *c = &s->c;
	for (;;) {
		/* With --self-signed the renewer replaces the pair; there are no files. */
		bool files = !c->self_signed;
		struct timespec poll = {c->tls_reload_seconds ? c->tls_reload_seconds : 3600, 0};
		int sig = sigtimedwait(&s->signals, NULL, &poll);
		if (sig < 0) {
			if (errno == EAGAIN && files && c->tls_reload_seconds &&
			    serve_tls_files_changed(c, &s->tls))
				serve_reload_certificate(c, s->srv, &s->cert_not_after);
			continue;
		}
		if (sig == SIGHUP && files) {
			(void)serve_tls_files_changed(c, &s->tls);
			serve_reload_certificate(c, s->srv, &s->cert_not_after);
		}
		if (sig == SIGHUP && s->live)
			continue; /* the watch keeps the cache current */
		if (sig == SIGHUP) {
			/* Build, validate, swap: a bad file keeps the current state. */
			struct kube_snapshot *next = load_snapshot(c);
			if (next)
				kube_store_publish(s->store, next);
			continue;
		}
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "shutting down")) {
			ng_log_str(&l, "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			ng_log_end(&l);
		}
		return;
	}
}

/* Stops whatever started, readers before what they read: the rows, then the cache. */
static void shut_down(struct serve *s)
{
	cmd_wiring_stop(&s->wiring);
	free(s->client_ca);
	kube_watch_stop(s->watch);
	kube_store_destroy(s->store);
	ng_regex_teardown(); /* the compiled drain filters, now nothing can match them */
	kube_config_finish(&s->kcfg);
	free(s->cert);
	free(s->key);
	free(s->first.ca_pem);
}

int cmd_serve(int argc, char **argv)
{
	struct serve s = {0};
	int rc = serve_configure(&s, argc, argv);
	if (rc != 0)
		return rc;
	block_signals(&s);
	rc = 1;
	s.wiring = (struct cmd_wiring){.rows = serve_rows, .n = ROW_COUNT, .ctx = &s};
	if (open_store(&s) == 0 && load_or_watch_cache(&s) == 0 &&
	    cmd_wiring_start(&s.wiring) == 0) {
		wait_for_signals(&s);
		rc = 0;
	}
	shut_down(&s);
	return rc;
}
