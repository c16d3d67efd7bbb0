/* nodegate serve's flags into its settings: the listen addresses, the admin listener and
 * who may use it, --self-signed's names and the API server to watch. Every error is a bad
 * flag (exit status 2) and is printed. */
#include "cmd/serve_internal.h"

#include "common/parse.h"
#include "common/status.h"
#include "kube/config.h"
#include "kube/kube.h"
#include "policy/policy.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int cmd_split_listen(const char *s, char *host, size_t hostcap, uint16_t *port)
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

/* "NS/NAME" into @ns and @name. 0, or -1 when it is not that. */
static int split_ref(const char *s, char *ns, size_t nscap, char *name, size_t namecap)
{
	const char *slash = strchr(s, '/');
	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/') ||
	    (size_t)(slash - s) >= nscap || strlen(slash + 1) >= namecap)
		return -1;
	(void)snprintf(ns, nscap, "%.*s", (int)(slash - s), s);
	(void)snprintf(name, namecap, "%s", slash + 1);
	return 0;
}

bool serve_loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/* Whether every name of --admin-host (each value a name or a comma-separated list) looks like
 * a Host header's name: no blanks, no port, at most 253 bytes. 0, or 2 after printing. */
static int check_admin_hosts(const struct cmd_multi *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const char *p = m->v[i];
		do {
			size_t n = strcspn(p, ",");
			bool ok = n > 0 && n <= 253;
			for (size_t k = 0; ok && k < n; k++)
				ok = p[k] > ' ' && p[k] < 0x7f && p[k] != '/' &&
				     (p[k] != ':' || p[0] == '[');
			if (!ok) {
				(void)fprintf(stderr,
					      "nodegate: --admin-host \"%s\": expected host names "
					      "without a port (e.g. nodegate.example or "
					      "a,b), [v6] for an IPv6 address\n",
					      m->v[i]);
				return 2;
			}
			p += n;
		} while (*p++ == ',');
	}
	return 0;
}

/* --admin-listen, --admin-auth and --admin-host. 0, or 2 after printing what is wrong. */
static int configure_admin(struct serve *s)
{
	const struct cmd_serve_config *c = &s->c;
	if (check_admin_hosts(&c->admin_hosts) != 0)
		return 2;
	if (strcmp(c->admin_listen, "off") == 0)
		return 0;
	if (cmd_split_listen(c->admin_listen, s->admin_host, sizeof(s->admin_host),
			     &s->admin_port) != 0) {
		(void)fprintf(stderr,
			      "nodegate: --admin-listen \"%s\": expected ADDR:PORT with PORT "
			      "between 0 and 65535 (e.g. 127.0.0.1:8081) or off\n",
			      c->admin_listen);
		return 2;
	}
	bool lo = serve_loopback(s->admin_host);
	if (strcmp(c->admin_auth, "auto") == 0 || strcmp(c->admin_auth, "kubernetes") == 0) {
		s->admin_kube_auth = strcmp(c->admin_auth, "kubernetes") == 0 || !lo;
	} else if (strcmp(c->admin_auth, "none") != 0) {
		(void)fprintf(stderr,
			      "nodegate: --admin-auth \"%s\": use auto, kubernetes or none\n",
			      c->admin_auth);
		return 2;
	} else if (!lo) {
		(void)fprintf(stderr,
			      "nodegate: --admin-auth none on %s would give the cache dump to "
			      "anyone who can reach it: use a loopback address or kubernetes\n",
			      c->admin_listen);
		return 2;
	}
	if (s->admin_kube_auth && !s->live) {
		(void)fprintf(stderr,
			      "nodegate: --admin-auth kubernetes needs an API server to ask "
			      "(not --snapshot); use a loopback --admin-listen\n");
		return 2;
	}
	return 0;
}

/* The flags into settings; every error is a bad flag (exit status 2) and is printed. */
int serve_configure(struct serve *s, int argc, char **argv)
{
	struct cmd_serve_config *c = &s->c;
	if (cmd_flags_parse(CMD_SERVE, argc, argv, c) != 0)
		return 2;
	if (cmd_set_log_level(c->log_level) != 0)
		return 2;
	s->ev = (struct pol_eviction_config){
	    .exempt_users = c->exempt_users.v,
	    .nexempt = c->exempt_users.n,
	    .retry_after_seconds = (int32_t)c->retry_after_seconds,
	};
	for (size_t i = 0; i < c->exempt_users.n; i++) {
		const char *why = kube_exempt_entry_problem(c->exempt_users.v[i]);
		if (why) {
			(void)fprintf(stderr, "nodegate: --exempt-user \"%s\": %s\n",
				      c->exempt_users.v[i], why);
			return 2;
		}
	}
	if (pol_eviction_mode_parse(c->eviction_mode, &s->ev.mode) != NG_OK) {
		(void)fprintf(stderr,
			      "nodegate: --eviction-mode \"%s\": use Enforce, Warn or Off\n",
			      c->eviction_mode);
		return 2;
	}
	if (cmd_split_listen(c->listen, s->host, sizeof(s->host), &s->port) != 0) {
		(void)fprintf(stderr,
			      "nodegate: --listen \"%s\": expected ADDR:PORT with PORT between 0 "
			      "and 65535, e.g. 0.0.0.0:8443 or [::]:8443\n",
			      c->listen);
		return 2;
	}
	s->live = c->snapshots.n == 0;
	if (c->self_signed && (c->tls_cert || c->tls_key || !s->live)) {
		(void)fprintf(stderr,
			      "nodegate: --self-signed makes the serving certificate and keeps "
			      "its CA in the cluster: it takes neither --tls-cert/--tls-key "
			      "nor --snapshot\n");
		return 2;
	}
	if (c->self_signed &&
	    (split_ref(c->ca_secret, s->ca_ns, sizeof(s->ca_ns), s->ca_name, sizeof(s->ca_name)) ||
	     split_ref(c->service, s->svc_ns, sizeof(s->svc_ns), s->svc_name,
		       sizeof(s->svc_name)))) {
		(void)fprintf(stderr,
			      "nodegate: --ca-secret \"%s\" and --service \"%s\": expected "
			      "NAMESPACE/NAME\n",
			      c->ca_secret, c->service);
		return 2;
	}
	if (!c->self_signed && (!c->tls_cert || !c->tls_key)) {
		(void)fprintf(stderr, "nodegate: --tls-cert and --tls-key are required (the API "
				      "server only calls webhooks over HTTPS), or --self-signed\n");
		return 2;
	}
	struct ng_err kerr = {0};
	if (s->live &&
	    kube_config_resolve(c->kubeconfig, c->kube_context, c->allow_insecure_kube_tls != 0,
				&s->kcfg, &kerr) != NG_OK) {
		(void)fprintf(stderr, "nodegate: finding the API server: %s\n", kerr.msg);
		return 2;
	}
	return configure_admin(s);
}
