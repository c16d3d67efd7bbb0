/* nodegate drain: the drainer sidecar (controller/drain.h) with its own cache, lease and a plain
 * HTTP listener for the probes and /metrics. It takes no TLS flags: it serves nothing else. */
#include "cmd/cmd.h"
#include "cmd/controllers.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/regex.h"
#include "common/status.h"
#include "controller/drain.h"
#include "controller/leader.h"
#include "kube/config.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct drainer {
	struct cmd_serve_config c;
	char host[256];
	uint16_t port;
	char identity[300];
	struct kube_config kcfg;
	sigset_t signals;
	struct kube_store *store;
	struct kube_watch *watch;
	struct leader *leader;
	struct drain *drain;
	struct srv_config sc;
	struct srv *srv;
	struct cmd_wiring wiring; /* the rows below, on this drainer */
};

/* The series of every row (the drainer's name no cluster object: counts by reason, strategy,
 * result). */
static ng_status render(struct ng_buf *out, bool objects, void *ctx)
{
	const struct drainer *d = ctx;
	return cmd_wiring_render(&d->wiring, NULL, 0, out, objects);
}

static int configure(struct drainer *d, int argc, char **argv)
{
	struct cmd_serve_config *c = &d->c;
	if (cmd_flags_parse(CMD_DRAIN, argc, argv, c) != 0)
		return 2;
	if (cmd_set_log_level(c->log_level) != 0)
		return 2;
	if (cmd_split_listen(c->listen, d->host, sizeof(d->host), &d->port) != 0) {
		(void)fprintf(
		    stderr,
		    "nodegate: --listen \"%s\": expected ADDR:PORT with PORT between 0 and 65535, "
		    "e.g. 127.0.0.1:8082\n",
		    c->listen);
		return 2;
	}
	if (!ng_dns_label(c->operation_namespace)) {
		(void)fprintf(
		    stderr,
		    "nodegate: --operation-namespace \"%s\": expected a namespace name (a "
		    "DNS-1123 label)\n",
		    c->operation_namespace ? c->operation_namespace : "");
		return 2;
	}
	struct ng_err kerr = {0};
	if (kube_config_resolve(c->kubeconfig, c->kube_context, c->allow_insecure_kube_tls != 0,
				&d->kcfg, &kerr) != NG_OK) {
		(void)fprintf(stderr, "nodegate: finding the API server: %s\n", kerr.msg);
		return 2;
	}
	/* An operation Job may mount any Secret of its namespace and run privileged: in
	 * nodegate's own it could read the CA's key and nodegate's token. */
	const char *own[2] = {c->self_namespace, d->kcfg.ns};
	for (int i = 0; i < 2; i++) {
		if (own[i] && strcmp(own[i], c->operation_namespace) == 0) {
			(void)fprintf(stderr,
				      "nodegate: --operation-namespace \"%s\" is nodegate's own "
				      "namespace (%s): operation Jobs there could read nodegate's "
				      "Secrets; give them a namespace of their own (default "
				      "nodegate-operations)\n",
				      c->operation_namespace,
				      i == 0 ? "--self-namespace" : "the pod's or kubeconfig's");
			kube_config_finish(&d->kcfg);
			return 2;
		}
	}
	return 0;
}

/* The cache the drainer and the probes read. 0, or -1 after printing why. */
static int start_cache(struct drainer *d)
{
	struct ng_err err = {0};
	d->store = kube_store_create();
	struct kube_watch_config wc = {.cfg = &d->kcfg,
				       .store = d->store,
				       .batch_ms = d->c.watch_batch_ms,
				       .page_lists = !d->c.watch_list};
	d->watch = d->store ? kube_watch_start(&wc, &err) : NULL;
	if (!d->watch) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg[0] ? err.msg : "out of memory");
		return -1;
	}
	return 0;
}

static int start_lease(void *ctx)
{
	struct drainer *d = ctx;
	struct ng_err err = {0};
	cmd_identity(d->c.identity, d->identity, sizeof(d->identity));
	struct leader_config lc = {
	    .kube = &d->kcfg,
	    .ns = d->c.lease_namespace ? d->c.lease_namespace : d->kcfg.ns,
	    .name = d->c.lease_name,
	    .identity = d->identity,
	};
	d->leader = leader_start(&lc, &err);
	if (!d->leader) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_lease(void *ctx)
{
	struct drainer *d = ctx;
	leader_stop(d->leader);
	d->leader = NULL;
}

static int start_drainer(void *ctx)
{
	struct drainer *d = ctx;
	struct ng_err err = {0};
	struct drain_config dc = {.kube = &d->kcfg,
				  .store = d->store,
				  .watch = d->watch,
				  .leader = d->leader,
				  .identity = d->identity,
				  .self_namespace = d->c.self_namespace,
				  .self_selector = d->c.self_selector,
				  .operation_service_account = d->c.operation_service_account,
				  .operation_namespace = d->c.operation_namespace};
	d->drain = drain_start(&dc, &err);
	if (!d->drain) {
		(void)fprintf(stderr, "nodegate: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_drainer(void *ctx)
{
	struct drainer *d = ctx;
	drain_stop(d->drain);
	d->drain = NULL;
}

static ng_status render_drainer(struct ng_buf *out, bool objects, const void *ctx)
{
	(void)objects;
	const struct drainer *d = ctx;
	return drain_render_metrics(d->drain, d->leader, out);
}

/* The probes' and /metrics' plain HTTP listener; writes --port-file and logs "draining". */
static int start_listener(void *ctx)
{
	struct drainer *d = ctx;
	struct ng_err err = {0};
	d->sc = (struct srv_config){
	    .max_connections = 64,
	    .connection_timeout_s = 120,
	    .header_timeout_s = 5,
	    .body_timeout_s = 10,
	    .watch = d->watch,
	    .metrics_extra = render,
	    .metrics_ctx = d,
	    .admin_host = d->host,
	    .admin_port = d->port,
	    .probes_only = true,
	};
	d->srv = srv_create(&d->sc, d->store, &err);
	if (!d->srv) {
		(void)fprintf(stderr, "nodegate: --listen %s: %s\n", d->c.listen, err.msg);
		return -1;
	}
	if (d->c.port_file && cmd_write_port_file(d->c.port_file, srv_admin_port(d->srv)) != 0) {
		(void)fprintf(stderr, "nodegate: --port-file %s: %s\n", d->c.port_file,
			      ng_strerror(errno));
		return -1;
	}
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "draining")) {
		ng_log_str(&l, "version", NG_VERSION);
		ng_log_str(&l, "server", d->kcfg.server);
		ng_log_str(&l, "host", d->host);
		ng_log_i64(&l, "port", srv_admin_port(d->srv));
		ng_log_str(&l, "lease", d->c.lease_name);
		ng_log_end(&l);
	}
	return 0;
}

static void stop_listener(void *ctx)
{
	struct drainer *d = ctx;
	srv_destroy(d->srv, d->c.shutdown_grace_seconds * 1000);
	d->srv = NULL;
}

/* What the drainer runs, in start order; stopped in reverse (readers before what they read:
 * the listener, the drainer, the lease). */
static const struct cmd_controller drain_rows[] = {
    {.name = "lease", .start = start_lease, .stop = stop_lease},
    {.name = "drainer", .start = start_drainer, .stop = stop_drainer, .render = render_drainer},
    {.name = "listener", .start = start_listener, .stop = stop_listener},
};

int cmd_drain(int argc, char **argv)
{
	struct drainer d = {0};
	int rc = configure(&d, argc, argv);
	if (rc != 0)
		return rc;
	sigemptyset(&d.signals);
	sigaddset(&d.signals, SIGTERM);
	sigaddset(&d.signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &d.signals, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	rc = 1;
	d.wiring = (struct cmd_wiring){
	    .rows = drain_rows, .n = sizeof(drain_rows) / sizeof(drain_rows[0]), .ctx = &d};
	if (start_cache(&d) == 0 && cmd_wiring_start(&d.wiring) == 0) {
		int sig = 0;
		while (sigwait(&d.signals, &sig) != 0)
			;
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_INFO, "cmd", "shutting down")) {
			ng_log_str(&l, "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			ng_log_end(&l);
		}
		rc = 0;
	}
	/* Readers before what they read: the rows, then the cache. */
	cmd_wiring_stop(&d.wiring);
	kube_watch_stop(d.watch);
	kube_store_destroy(d.store);
	ng_regex_teardown();
	kube_config_finish(&d.kcfg);
	return rc;
}
