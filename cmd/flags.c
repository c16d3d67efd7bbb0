/* Every subcommand's flags: one parser (cmd_opts_parse) reads a table of them for serve, drain,
 * certs, check and plan alike: the command line, the environment variables, --help and its
 * messages. serve's and drain's table (serve_flags with drain's overlay) also gives their
 * defaults and docs/config.md. */
#include "cmd/cmd.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/clock.h"
#include "common/parse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One flag: where its value goes in struct cmd_serve_config (@off), its default, range and docs. */
struct flag {
	const char *name, *env;
	enum cmd_opt_type type;
	size_t off;
	const char *def;
	int64_t min, max;
	const char *arg, *doc;
};

#define OFF(f) offsetof(struct cmd_serve_config, f)
static const struct flag serve_flags[] = {
    {"listen", "NG_LISTEN", CMD_OPT_STR, OFF(listen), "0.0.0.0:8443", 0, 0, "ADDR:PORT",
     "Address and port of the HTTPS server; `[::]:8443` for IPv6, port 0 picks a free one."},
    {"tls-cert", "NG_TLS_CERT", CMD_OPT_STR, OFF(tls_cert), NULL, 0, 0, "FILE",
     "PEM serving certificate (chain). Required."},
    {"tls-key", "NG_TLS_KEY", CMD_OPT_STR, OFF(tls_key), NULL, 0, 0, "FILE",
     "PEM private key of the serving certificate. Required."},
    {"kubeconfig", "NG_KUBECONFIG", CMD_OPT_STR, OFF(kubeconfig), NULL, 0, 0, "FILE",
     "Watch the API server of this kubeconfig (its current context). Without it and without "
     "--snapshot: the files of $KUBECONFIG merged as kubectl merges them, else the in-cluster "
     "service account."},
    {"kube-context", "NG_KUBE_CONTEXT", CMD_OPT_STR, OFF(kube_context), NULL, 0, 0, "NAME",
     "Use this kubeconfig context instead of current-context."},
    /* The name plan and check (and kubectl) use; no environment variable of its own. */
    {"context", NULL, CMD_OPT_STR, OFF(kube_context), NULL, 0, 0, "NAME",
     "Another name for --kube-context, as `plan`, `check` and kubectl spell it."},
    {"allow-insecure-kube-tls", "NG_ALLOW_INSECURE_KUBE_TLS", CMD_OPT_BOOL,
     OFF(allow_insecure_kube_tls), "false", 0, 1, "",
     "Accept a kubeconfig with insecure-skip-tls-verify (refused otherwise)."},
    {"watch-batch-ms", "NG_WATCH_BATCH_MS", CMD_OPT_INT, OFF(watch_batch_ms), "100", 1, 10000, "MS",
     "At most one cache publish per this many ms: an isolated change is published at once, a "
     "burst of changes together at the end of the window."},
    {"watch-list", "NG_WATCH_LIST", CMD_OPT_BOOL, OFF(watch_list), "true", 0, 1, "",
     "List each cached resource as one stream (a watch with sendInitialEvents, Kubernetes' "
     "WatchList) where the API server offers it, in pages of 500 where it does not; false: "
     "always in pages."},
    {"gate", "NG_GATE", CMD_OPT_BOOL, OFF(gate), "true", 0, 1, "",
     "Run the gate (grant and reject NodeDisruptions) when watching an API server; the replica "
     "holding the lease decides."},
    {"lease-namespace", "NG_LEASE_NAMESPACE", CMD_OPT_STR, OFF(lease_namespace), NULL, 0, 0, "NS",
     "Namespace of the gate's coordination.k8s.io Lease (default: the kubeconfig context's or the "
     "pod's namespace)."},
    {"tls-reload-seconds", "NG_TLS_RELOAD_SECONDS", CMD_OPT_INT, OFF(tls_reload_seconds), "10", 0,
     3600, "N",
     "Check --tls-cert and --tls-key for changes this often and serve a new pair from the "
     "next handshake (cert-manager and Secret volumes renew in place); 0 = only on SIGHUP. A "
     "pair that does not load is logged and the current one kept."},
    {"lease-name", "NG_LEASE_NAME", CMD_OPT_STR, OFF(lease_name), "nodegate-gate", 0, 0, "NAME",
     "Name of the gate's Lease."},
    {"snapshot", "NG_SNAPSHOT", CMD_OPT_MULTI, OFF(snapshots), NULL, 0, 0, "FILE",
     "Decide from cluster state in files instead of an API server: `kubectl get ... -o json` "
     "or `-o yaml` output (a List of mixed kinds, a ...List, or one object). Repeatable; later "
     "files replace objects of the same identity. SIGHUP reloads them."},
    {"log-level", "NG_LOG_LEVEL", CMD_OPT_STR, OFF(log_level), "info", 0, 0, "LEVEL",
     "debug, info, warn or error."},
    {"eviction-mode", "NG_EVICTION_MODE", CMD_OPT_STR, OFF(eviction_mode), "Enforce", 0, 0, "MODE",
     "Enforce (deny protected evictions with 429), Warn (allow with a warning) or Off."},
    {"exempt-user", "NG_EXEMPT_USER", CMD_OPT_MULTI, OFF(exempt_users), NULL, 0, 0, "NAME",
     "A user or group whose evictions are always allowed (userInfo.username or one of "
     "userInfo.groups); a trailing * matches by prefix, e.g. system:serviceaccount:kube-system:*. "
     "\"*\" alone is refused. Repeatable."},
    {"decider-user", "NG_DECIDER_USER", CMD_OPT_MULTI, OFF(deciders), NULL, 0, 0, "NAME",
     "A username that may change a NodeDisruption's decision (status.state, disruptedNodes, "
     "grantedAt, disruptedDisruptionBudgets) where /validate/nodedisruption-status is "
     "registered: nodegate's own service account. Repeatable; default "
     "system:serviceaccount:nodegate:nodegate."},
    {"retry-after-seconds", "NG_RETRY_AFTER_SECONDS", CMD_OPT_INT, OFF(retry_after_seconds), "10",
     1, 3600, "N", "details.retryAfterSeconds of a denied eviction."},
    {"threads", "NG_THREADS", CMD_OPT_INT, OFF(threads), "0", 0, 64, "N",
     "HTTPS server threads (one epoll daemon each, sharing the port); 0 = one per core."},
    {"max-connections", "NG_MAX_CONNECTIONS", CMD_OPT_INT, OFF(max_connections), "10000", 1, 100000,
     "N",
     "Open connections held across all threads (nodegate raises its open-file limit to match). "
     "Near the limit, each new connection sheds the one that has waited longest on its client "
     "(silent, mid-request or idle), never one being answered."},
    {"max-connections-per-address", "NG_MAX_CONNECTIONS_PER_ADDRESS", CMD_OPT_INT,
     OFF(max_connections_per_address), "0", 0, 100000, "N",
     "Open connections from one client address; more are closed at once. 0 = no limit (the API "
     "server opens many connections from few addresses)."},
    {"header-timeout-seconds", "NG_HEADER_TIMEOUT_SECONDS", CMD_OPT_INT,
     OFF(header_timeout_seconds), "5", 1, 300, "N",
     "A new connection must finish its TLS handshake and send its first request's headers "
     "within this long; trickling bytes does not extend it."},
    {"body-timeout-seconds", "NG_BODY_TIMEOUT_SECONDS", CMD_OPT_INT, OFF(body_timeout_seconds),
     "10", 1, 300, "N",
     "A request body must arrive within this long of its headers, and a response be read within "
     "this long of being ready."},
    {"connection-timeout-seconds", "NG_CONNECTION_TIMEOUT_SECONDS", CMD_OPT_INT,
     OFF(connection_timeout_seconds), "120", 0, 86400, "N",
     "Idle keep-alive connections are closed after this long, and the next request's headers "
     "must be complete within this long of the previous response. Above the API server's 90 s "
     "idle timeout, so it closes first and never reuses a connection we are closing."},
    {"shutdown-grace-seconds", "NG_SHUTDOWN_GRACE_SECONDS", CMD_OPT_INT,
     OFF(shutdown_grace_seconds), "5", 0, 300, "N",
     "On SIGTERM/SIGINT: stop accepting, then wait this long for open connections."},
    {"client-ca", "NG_CLIENT_CA", CMD_OPT_STR, OFF(client_ca), NULL, 0, 0, "FILE",
     "PEM CA bundle: the webhooks then require a client certificate signed by it (the API "
     "server's, from its admission configuration; see docs/security.md) and answer 401 to any "
     "other caller. Read at start."},
    {"admin-listen", "NG_ADMIN_LISTEN", CMD_OPT_STR, OFF(admin_listen), "127.0.0.1:8081", 0, 0,
     "ADDR:PORT",
     "The admin listener: GET /debug/cache, POST /v1/evaluate, POST /v1/plan, /metrics, "
     "/healthz, /readyz (the "
     "webhook port serves neither side door). Plain HTTP on a loopback address, HTTPS with the "
     "serving pair elsewhere; `off` for none."},
    {"admin-auth", "NG_ADMIN_AUTH", CMD_OPT_STR, OFF(admin_auth), "auto", 0, 0, "MODE",
     "Who may use the admin listener: `kubernetes` (a bearer token checked with a TokenReview "
     "and a SubjectAccessReview on the path, cached 10 s), `none`, or `auto` (none on a loopback "
     "address, kubernetes elsewhere). `none` on a non-loopback address is refused."},
    {"admin-host", "NG_ADMIN_HOST", CMD_OPT_MULTI, OFF(admin_hosts), NULL, 0, 0, "NAME",
     "A Host name the admin listener answers besides localhost, 127.0.0.1, [::1] and its own "
     "address (the port is ignored); other Host headers get 421, so that a web page cannot "
     "read it through DNS rebinding. Repeatable, or a comma-separated list. The check applies "
     "on a loopback --admin-listen, and elsewhere once a name is given (there a bearer token "
     "guards every side door)."},
    {"admin-max-plans", "NG_ADMIN_MAX_PLANS", CMD_OPT_INT, OFF(admin_max_plans), "2", 1, 16, "N",
     "POST /v1/plan computed at once on the admin listener, each on a thread of its own; more "
     "get 429 with Retry-After."},
    {"plan-max-rounds", "NG_PLAN_MAX_ROUNDS", CMD_OPT_INT, OFF(plan_max_rounds), "100000", 1,
     1000000000, "N",
     "A POST /v1/plan stops after simulating this many gate rounds and answers a truncated "
     "plan (summary.stoppedBy: rounds)."},
    {"plan-max-decisions", "NG_PLAN_MAX_DECISIONS", CMD_OPT_INT, OFF(plan_max_decisions),
     "50000000", 1, 10000000000, "N",
     "A POST /v1/plan stops after this many decisions and answers a truncated plan "
     "(summary.stoppedBy: decisions)."},
    {"plan-max-seconds", "NG_PLAN_MAX_SECONDS", CMD_OPT_INT, OFF(plan_max_seconds), "30", 1, 3600,
     "N",
     "A POST /v1/plan stops after computing this long and answers a truncated plan "
     "(summary.stoppedBy: time)."},
    {"webhook-port-metrics", "NG_WEBHOOK_PORT_METRICS", CMD_OPT_BOOL, OFF(webhook_port_metrics),
     "true", 0, 1, "",
     "Serve /metrics on the webhook port too: counts only, no cluster data (series naming "
     "objects only to a client certificate --client-ca verifies)."},
    {"auto-request-per-minute", "NG_AUTO_REQUEST_PER_MINUTE", CMD_OPT_INT,
     OFF(auto_request_per_minute), "60", 1, 100000, "N",
     "With eviction.autoRequest: NodeDisruptions nodegate creates per minute at most (a burst of "
     "as many is allowed); more denied evictions are counted and not asked for."},
    {"port-file", "NG_PORT_FILE", CMD_OPT_STR, OFF(port_file), NULL, 0, 0, "FILE",
     "Write the bound port here once serving (for tests and scripts using port 0)."},
    {"identity", "NG_IDENTITY", CMD_OPT_STR, OFF(identity), NULL, 0, 0, "NAME",
     "This replica's name in its Lease and in Events (default: hostname_pid). Give a restarted "
     "container its previous name (the pod's name) to take its Lease back at once."},
    {"self-signed", "NG_SELF_SIGNED", CMD_OPT_BOOL, OFF(self_signed), "false", 0, 1, "",
     "Make the serving certificate instead of reading --tls-cert/--tls-key: a CA kept in the "
     "Secret --ca-secret (the first replica creates it, every replica uses it), a serving "
     "certificate per replica for --service's names, renewed when two thirds of "
     "--cert-seconds have passed, and the CA written into the caBundle of every webhook of the "
     "webhook configurations matching --webhook-selector (checked every minute). Needs an API "
     "server."},
    {"ca-secret", "NG_CA_SECRET", CMD_OPT_STR, OFF(ca_secret), "nodegate/nodegate-ca", 0, 0,
     "NS/NAME",
     "With --self-signed: the Secret holding the CA (data ca.crt and ca.key). Delete it to make "
     "a new CA."},
    {"service", "NG_SERVICE", CMD_OPT_STR, OFF(service), "nodegate/nodegate", 0, 0, "NS/NAME",
     "With --self-signed: the Service the API server calls; the serving certificate names "
     "NAME, NAME.NS, NAME.NS.svc and NAME.NS.svc.cluster.local."},
    {"cert-seconds", "NG_CERT_SECONDS", CMD_OPT_INT, OFF(cert_seconds), "2592000", 10, 315360000,
     "N", "With --self-signed: validity of each serving certificate (default 30 days)."},
    {"webhook-selector", "NG_WEBHOOK_SELECTOR", CMD_OPT_STR, OFF(webhook_selector),
     "app.kubernetes.io/name=nodegate", 0, 0, "SELECTOR",
     "With --self-signed: label selector of the Validating and Mutating WebhookConfigurations "
     "whose caBundle nodegate writes; no other configuration is touched."},
    {"self-namespace", "NG_SELF_NAMESPACE", CMD_OPT_STR, OFF(self_namespace), "nodegate", 0, 0,
     "NS",
     "nodegate's own namespace: its pods there that match --self-selector are never evicted."},
    {"self-selector", "NG_SELF_SELECTOR", CMD_OPT_STR, OFF(self_selector),
     "app.kubernetes.io/name=nodegate", 0, 0, "SELECTOR",
     "Label selector (kubectl -l syntax) of nodegate's own pods in --self-namespace."},
    {"operation-service-account", "NG_OPERATION_SERVICE_ACCOUNT", CMD_OPT_STR,
     OFF(operation_service_account), "nodegate-operation", 0, 0, "NAME",
     "ServiceAccount in --operation-namespace that operation Jobs run as (a request's "
     "jobTemplate may not name one: that would lend its rights to whoever may create a "
     "request). It has no rights and its pods get no token."},
    {"operation-namespace", "NG_OPERATION_NAMESPACE", CMD_OPT_STR, OFF(operation_namespace),
     "nodegate-operations", 0, 0, "NS",
     "Namespace the operation Jobs are created in. It must not be nodegate's own "
     "(--self-namespace, or the pod's): an operation there could mount nodegate's Secrets."},
};
#undef OFF
#define NFLAGS (sizeof(serve_flags) / sizeof(serve_flags[0]))

/* The flags nodegate drain takes, with its own default and meaning where they differ from
 * serve's; the others are serve's only. */
static const struct {
	const char *name, *def, *doc; /* def and doc NULL: serve's */
} drain_flags[] = {
    {"listen", "127.0.0.1:8082",
     "Address and port of the probes and metrics (GET /healthz, /readyz, /metrics), plain "
     "HTTP: the drainer serves nothing else, so keep it on loopback or the pod network."},
    {"kubeconfig", NULL, NULL},
    {"kube-context", NULL, NULL},
    {"context", NULL, NULL},
    {"allow-insecure-kube-tls", NULL, NULL},
    {"watch-batch-ms", NULL, NULL},
    {"watch-list", NULL, NULL},
    {"lease-namespace", NULL,
     "Namespace of the drainer's coordination.k8s.io Lease (default: the kubeconfig context's or "
     "the pod's namespace)."},
    {"lease-name", "nodegate-drain", "Name of the drainer's Lease: one replica drains."},
    {"log-level", NULL, NULL},
    {"shutdown-grace-seconds", NULL, NULL},
    {"port-file", NULL, NULL},
    {"identity", NULL, NULL},
    {"self-namespace", NULL, NULL},
    {"self-selector", NULL, NULL},
    {"operation-service-account", NULL, NULL},
    {"operation-namespace", NULL, NULL},
};
#define NDRAIN (sizeof(drain_flags) / sizeof(drain_flags[0]))

/* Index in drain_flags of serve flag @k, or -1 when drain does not take it. */
static int drain_index(size_t k)
{
	for (size_t i = 0; i < NDRAIN; i++)
		if (strcmp(drain_flags[i].name, serve_flags[k].name) == 0)
			return (int)i;
	return -1;
}

/* Whether command @cmd takes flag @k, and its default and meaning there. */
static bool takes(enum cmd_kind cmd, size_t k, const char **ret_def, const char **ret_doc)
{
	int d = cmd == CMD_DRAIN ? drain_index(k) : -1;
	if (cmd == CMD_DRAIN && d < 0)
		return false;
	*ret_def = d >= 0 && drain_flags[d].def ? drain_flags[d].def : serve_flags[k].def;
	*ret_doc = d >= 0 && drain_flags[d].doc ? drain_flags[d].doc : serve_flags[k].doc;
	/* serve's own pods are the drainer's business: serve does not take them. */
	return cmd == CMD_DRAIN || (strcmp(serve_flags[k].name, "self-namespace") != 0 &&
				    strcmp(serve_flags[k].name, "self-selector") != 0 &&
				    strcmp(serve_flags[k].name, "operation-service-account") != 0);
}

/* One subcommand: the line `nodegate --help` gives it, and what its own --help says above its
 * flags. Every subcommand main.c dispatches is here, and a test holds the two lists together. */
struct cmd_info {
	const char *name, *summary, *synopsis, *about;
};

static const struct cmd_info commands[] = {
    {"serve", "the admission webhooks, the gate, POST /v1/evaluate and /metrics", "[FLAGS]",
     "The admission webhooks (POST /validate/eviction, /validate/nodedisruption, "
     "/validate/nodedisruption-status, /validate/budget, /mutate/nodedisruption), the gate "
     "(grants and rejects NodeDisruptions; the replica holding its lease decides), the admin "
     "listener (POST /v1/evaluate, GET /debug/cache) and /healthz, /readyz, /metrics, until "
     "SIGTERM or SIGINT. Exit status 0 after a signal, 1 when something fails to start, 2 for a "
     "bad flag."},
    {"drain", "the drainer: cordons, evicts and runs the operation of Granted requests", "[FLAGS]",
     "The drainer. For every Granted NodeDisruption with spec.drain or spec.operation: cordon, "
     "wait, evict, run the operation, and give the nodes back when the request is deleted (the "
     "replica holding its lease acts). Serves /healthz, /readyz and /metrics until SIGTERM or "
     "SIGINT. Exit status as serve's."},
    {"check", "decides a NodeDisruption against snapshot files or the cluster, as the gate would",
     "[--snapshot FILE... | --kubeconfig FILE] [--context NAME] --nd FILE [--now TIME]",
     "Decides the NodeDisruption in --nd (JSON or YAML) against the cluster in the snapshot "
     "files (kubectl get -o json or -o yaml output), or without them against the live cluster "
     "(--kubeconfig, $KUBECONFIG or in-cluster, as plan), as the gate would, health hooks "
     "aside, and prints the decision as JSON. "
     "Exit status 0 when it would be Granted, 1 when not, 2 when it is invalid or a file cannot "
     "be read."},
    {"status", "what the gate does now: budgets, the queue and why each request waits, drains",
     "[--kubeconfig FILE] [--context NAME] [--snapshot FILE...] [-o text|json|yaml] [--watch]",
     "One screen for an operator: whether the gate is paused, the alert gate, every budget's "
     "numbers and the requests holding it, the queue in the order the gate decides with why "
     "each request waits, the grants with their drains, and the nodes nodegate holds "
     "(docs/troubleshooting.md). --watch prints again on every change. Exit status 0, 2 when "
     "the cluster cannot be read."},
    {"why", "the chain for one request or node: budgets, holders, what would unblock it, pods",
     "NAME [--kubeconfig FILE] [--context NAME] [--snapshot FILE...] [-o text|json|yaml]",
     "Explains request NAME, or node NAME (node/NAME or nd/NAME to choose): the budgets "
     "covering it and their numbers, what holds it and since when, and for a drain every pod "
     "still on its nodes with what holds it (docs/troubleshooting.md). Exit status 0, 1 when "
     "there is no such request or node, 2 when the cluster cannot be read."},
    {"plan", "simulates rolling maintenance of nodes against every budget: waves and time",
     "[--snapshot FILE... | --kubeconfig FILE] [--context NAME] (--nodes SELECTOR | "
     "--node-file FILE) "
     "[--drain-seconds N] [--start TIME] [--type TYPE] [--requestor NAME] "
     "[--output text|json|svg|html]",
     "Simulates, with the gate's own decisions, one NodeDisruption per chosen node created at "
     "--start and each deleted --drain-seconds after its grant: prints the waves in order, what "
     "held each back, the nodes never granted and why, and the total time "
     "(docs/planner.md), or draws them as a timeline (--output svg, or html for a page holding "
     "it). Health hooks are assumed healthy. Exit status 0 when every node gets "
     "a wave, 1 when some never would, 2 for bad flags or unreadable input."},
    {"certs", "writes a CA and a serving certificate for the webhook; prints the caBundle",
     "--out DIR [--service NAME] [--namespace NS] [--dns NAME...] [--ip ADDR...] [--days N]",
     "Writes a CA (ca.crt, ca.key) and a serving certificate it signs (tls.crt, tls.key) for "
     "the Service's names into DIR, never over an existing file, and prints the CA as base64: "
     "the caBundle of the webhook configurations (docs/certificates.md). Exit status 0, 1 when "
     "a file cannot be written, 2 for bad flags."},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cmd_info *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void print_synopsis(FILE *f, const struct cmd_info *ci)
{
	(void)fprintf(f, "Usage: nodegate %s %s\n\n%s\n", ci->name, ci->synopsis, ci->about);
}

void cmd_usage(FILE *f)
{
	(void)fprintf(f, "Usage: nodegate COMMAND [FLAGS]\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		(void)fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].summary);
	(void)fprintf(f, "\n`nodegate COMMAND --help` (or -h, or `nodegate help COMMAND`) shows a "
			 "command's usage and flags.\n"
			 "`nodegate --version` prints the version; `nodegate --dump-config-doc` "
			 "prints docs/config.md, serve's and drain's flags.\n");
}

bool cmd_known(const char *name)
{
	return find_command(name) != NULL;
}

static void doc_table(enum cmd_kind cmd)
{
	(void)printf("| flag | environment | default | meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < NFLAGS; i++) {
		const struct flag *fl = &serve_flags[i];
		const char *def, *doc;
		if (!takes(cmd, i, &def, &doc))
			continue;
		(void)printf("| `--%s%s%s` | %s%s%s | %s%s%s", fl->name, *fl->arg ? " " : "",
			     fl->arg, fl->env ? "`" : "", fl->env ? fl->env : "",
			     fl->env ? "`" : "", def ? "`" : "", def ? def : "", def ? "`" : "");
		if (fl->type == CMD_OPT_INT)
			(void)printf(" (between %lld and %lld)", (long long)fl->min,
				     (long long)fl->max);
		(void)printf(" | %s |\n", doc);
	}
}

/* docs/config.md is generated from the table; a test diffs the two. */
void cmd_dump_config_doc(void)
{
	(void)printf("# nodegate: configuration\n\n"
		     "Generated by `nodegate --dump-config-doc`; a test keeps this file and the "
		     "binary in step.\nEach flag can also be set by its environment variable; a "
		     "flag given on the command line wins. `nodegate certs`, `nodegate check` and "
		     "`nodegate plan` take flags of their own, without environment variables: "
		     "see `nodegate certs --help` ([certificates.md](certificates.md)), "
		     "`nodegate check --help` ([gate.md](gate.md)) and `nodegate plan --help` "
		     "([planner.md](planner.md)).\n\n## nodegate serve\n\n");
	doc_table(CMD_SERVE);
	(void)printf("\n## nodegate drain\n\n");
	doc_table(CMD_DRAIN);
}

/* Sets the flag @o to @val; @prefix starts a refusal ("nodegate serve", or with the environment
 * variable the value came from: "nodegate serve: NG_THREADS"). */
static int set_value(const char *prefix, const struct cmd_opt *o, const char *val)
{
	switch (o->type) {
	case CMD_OPT_STR:
		*(const char **)o->dst = val;
		return 0;
	case CMD_OPT_MULTI: {
		struct cmd_multi *m = o->dst;
		if (m->n == CMD_MAX_MULTI) {
			(void)fprintf(stderr, "%s: --%s given more than %d times\n", prefix,
				      o->name, CMD_MAX_MULTI);
			return -1;
		}
		m->v[m->n++] = val;
		return 0;
	}
	case CMD_OPT_BOOL:
		if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0) {
			*(int64_t *)o->dst = 1;
			return 0;
		}
		if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0) {
			*(int64_t *)o->dst = 0;
			return 0;
		}
		(void)fprintf(stderr, "%s: --%s \"%s\": expected true or false\n", prefix, o->name,
			      val);
		return -1;
	case CMD_OPT_INT:
		return cmd_parse_int_flag(prefix, o->name, val, o->min, o->max, (int64_t *)o->dst);
	}
	return -1;
}

int cmd_parse_int_flag(const char *prefix, const char *name, const char *val, int64_t min,
		       int64_t max, int64_t *ret)
{
	if (ng_parse_i64(val, strlen(val), min, max, ret) == NG_OK)
		return 0;
	(void)fprintf(stderr, "%s: --%s \"%s\": must be an integer between %lld and %lld\n", prefix,
		      name, val, (long long)min, (long long)max);
	return -1;
}

int cmd_parse_time_flag(const char *prefix, const char *name, const char *val, int64_t *ret)
{
	*ret = ng_now_wall_ms();
	if (!val || ng_parse_rfc3339_ms(val, strlen(val), ret) == NG_OK)
		return 0;
	(void)fprintf(stderr,
		      "%s: --%s \"%s\": expected an RFC 3339 time, e.g. 2026-11-22T00:00:00Z\n",
		      prefix, name, val);
	return -1;
}

/* The option of @opts that @arg ("--name" or "--name=value") names, or NULL; *@ret_val is the
 * text after '=' or NULL. */
static const struct cmd_opt *find_opt(const struct cmd_opt *opts, size_t n, const char *arg,
				      const char **ret_val)
{
	if (strncmp(arg, "--", 2) != 0)
		return NULL;
	for (size_t k = 0; k < n; k++) {
		size_t len = strlen(opts[k].name);
		if (strncmp(arg + 2, opts[k].name, len) == 0 &&
		    (arg[2 + len] == '\0' || arg[2 + len] == '=')) {
			*ret_val = arg[2 + len] == '=' ? arg + 3 + len : NULL;
			return &opts[k];
		}
	}
	return NULL;
}

/* One flag in --help. A flag with an environment variable shows it in brackets and its default
 * as the table states it; the others show the value in @o->dst before parsing, so the help
 * cannot drift from the code. */
static void print_opt(FILE *f, const struct cmd_opt *o)
{
	if (o->env) {
		(void)fprintf(f, "  --%s%s%s  [%s]%s%s%s", o->name, *o->arg ? " " : "", o->arg,
			      o->env, o->def ? " (default " : "", o->def ? o->def : "",
			      o->def ? ")" : "");
		if (o->type == CMD_OPT_INT)
			(void)fprintf(f, " (between %lld and %lld)", (long long)o->min,
				      (long long)o->max);
		(void)fprintf(f, "\n      %s\n", o->doc);
		return;
	}
	(void)fprintf(f, "  --%s %s", o->name, o->arg);
	if (o->type == CMD_OPT_STR && *(const char *const *)o->dst)
		(void)fprintf(f, " (default %s)", *(const char *const *)o->dst);
	if (o->type == CMD_OPT_INT)
		(void)fprintf(f, " (default %lld; between %lld and %lld)",
			      (long long)*(const int64_t *)o->dst, (long long)o->min,
			      (long long)o->max);
	if (o->type == CMD_OPT_MULTI)
		(void)fprintf(f, " (repeatable, up to %d)", CMD_MAX_MULTI);
	(void)fprintf(f, "\n      %s\n", o->doc);
}

/* nodegate CMD --help: the usage, then every flag @cmd takes. */
static void opts_help(FILE *f, const char *cmd, const struct cmd_opt *opts, size_t n)
{
	const struct cmd_info *ci = find_command(cmd);
	bool env = false;
	for (size_t k = 0; k < n; k++)
		env = env || opts[k].env;
	if (ci)
		print_synopsis(f, ci);
	(void)fprintf(f, env ? "\nFlags (each also read from its environment variable, in "
			       "brackets; a flag given here wins):\n"
			     : "\nFlags:\n");
	for (size_t k = 0; k < n; k++)
		print_opt(f, &opts[k]);
	(void)fprintf(f, "  --help, -h\n      This help.\n");
}

/* Whether @argv asks for help, wherever (but not as a flag's value). */
static bool help_asked(const struct cmd_opt *opts, size_t n, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *val;
		const struct cmd_opt *o = find_opt(opts, n, argv[i], &val);
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
		if (o && !val && o->type != CMD_OPT_BOOL)
			i++;
	}
	return false;
}

/* The environment, for each flag that has a variable and is not given on the command line; a
 * repeatable flag's variable holds one value. */
static int apply_env(const char *prefix, const struct cmd_opt *opts, size_t n, int argc,
		     char **argv)
{
	bool given[CMD_MAX_OPTS] = {false};
	for (int i = 0; i < argc; i++) {
		const char *val;
		const struct cmd_opt *o = find_opt(opts, n, argv[i], &val);
		if (o)
			given[o - opts] = true;
	}
	for (size_t k = 0; k < n; k++) {
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
		const char *e = opts[k].env && !given[k] ? getenv(opts[k].env) : NULL;
		char origin[128];
		if (!e || !*e)
			continue;
		ng_fmt(origin, sizeof(origin), "%s: %s", prefix, opts[k].env);
		if (set_value(origin, &opts[k], e) != 0)
			return -1;
	}
	return 0;
}

static int apply_args(const char *prefix, const struct cmd_opt *opts, size_t n, int argc,
		      char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (strcmp(a, "-o") == 0) /* kubectl's short form of --output */
			a = "--output";
		if (strncmp(a, "--", 2) != 0) {
			(void)fprintf(stderr, "%s: unexpected argument \"%s\" (see %s --help)\n",
				      prefix, a, prefix);
			return -1;
		}
		const struct cmd_opt *o = find_opt(opts, n, a, &val);
		if (!o) {
			(void)fprintf(stderr, "%s: unknown flag \"%s\" (see %s --help)\n", prefix,
				      a, prefix);
			return -1;
		}
		if (!val && o->type == CMD_OPT_BOOL) {
			val = "true";
		} else if (!val) {
			if (i + 1 >= argc) {
				(void)fprintf(stderr, "%s: --%s needs a value (%s)\n", prefix,
					      o->name, o->arg);
				return -1;
			}
			val = argv[++i];
		}
		if (set_value(prefix, o, val) != 0)
			return -1;
	}
	return 0;
}

int cmd_opts_parse(const char *cmd, const struct cmd_opt *opts, size_t n, int argc, char **argv)
{
	/* --help first, before a bad flag or environment variable could stop it (help is what
	 * someone with a wrong command line wants), and so that the defaults it shows are the
	 * defaults and not what the flags before it set. */
	if (help_asked(opts, n, argc, argv)) {
		opts_help(stdout, cmd, opts, n);
		return 1;
	}
	char prefix[64];
	ng_fmt(prefix, sizeof(prefix), "nodegate %s", cmd);
	if (n > CMD_MAX_OPTS) {
		(void)fprintf(stderr, "%s: more than %d flags\n", prefix, CMD_MAX_OPTS);
		return -1;
	}
	if (apply_env(prefix, opts, n, argc, argv) != 0)
		return -1;
	return apply_args(prefix, opts, n, argc, argv);
}

static const char *cmd_name(enum cmd_kind cmd)
{
	return cmd == CMD_DRAIN ? "drain" : "serve";
}

/* The rows of the table that @cmd takes, as the parser's options writing into @c. */
static size_t table_opts(enum cmd_kind cmd, struct cmd_serve_config *c, struct cmd_opt *opts)
{
	size_t n = 0;
	for (size_t k = 0; k < NFLAGS; k++) {
		const struct flag *fl = &serve_flags[k];
		const char *def, *doc;
		if (takes(cmd, k, &def, &doc))
			opts[n++] = (struct cmd_opt){.name = fl->name,
						     .type = fl->type,
						     .dst = (char *)c + fl->off,
						     .arg = fl->arg,
						     .doc = doc,
						     .min = fl->min,
						     .max = fl->max,
						     .env = fl->env,
						     .def = def};
	}
	return n;
}

int cmd_flags_parse(enum cmd_kind cmd, int argc, char **argv, struct cmd_serve_config *c)
{
	struct cmd_opt opts[NFLAGS];
	memset(c, 0, sizeof(*c));
	size_t n = table_opts(cmd, c, opts);
	char prefix[64];
	ng_fmt(prefix, sizeof(prefix), "nodegate %s: default", cmd_name(cmd));
	for (size_t k = 0; k < n; k++)
		if (opts[k].def && set_value(prefix, &opts[k], opts[k].def) != 0)
			return -1;
	int rc = cmd_opts_parse(cmd_name(cmd), opts, n, argc, argv);
	if (rc > 0)
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): no thread runs yet */
		exit(0);
	return rc;
}

int cmd_set_log_level(const char *level)
{
	enum ng_log_level l;
	if (ng_log_parse_level(level, &l) != NG_OK) {
		(void)fprintf(stderr,
			      "nodegate: --log-level \"%s\": use debug, info, warn or error\n",
			      level);
		return -1;
	}
	ng_log_set_level(l);
	return 0;
}

void cmd_identity(const char *flag, char *out, size_t cap)
{
	char hostname[256] = "nodegate";
	if (flag) {
		ng_fmt(out, cap, "%s", flag);
		return;
	}
	(void)gethostname(hostname, sizeof(hostname) - 1);
	ng_fmt(out, cap, "%s_%ld", hostname, (long)getpid());
}
