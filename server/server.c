#include "server/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/status.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "server/admission.h"
#include "server/conns.h"
#include "server/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Per-connection MHD memory pool: the request line and headers (bodies stream to us); past it
 * a request gets 414 or 431. libmicrohttpd clears the whole pool between requests: at 64 KiB
 * that was 4 % of an eviction review's CPU; an API server's headers take well under 2 KiB. */
#define CONN_MEMORY_BYTES (16u * 1024u)
/* GnuTLS priorities: TLS 1.2 and 1.3 only (DESIGN.md §8). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	/* MHD reports client-side failures (bad TLS handshakes, resets) here: worth a debug
	 * line, never more, or a port scan floods the log. */
	struct ng_logline l;
	if (!ng_log_begin(&l, NG_LOG_DEBUG, "mhd", "libmicrohttpd"))
		return;
	char msg[256];
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	ng_log_str(&l, "detail", msg);
	ng_log_end(&l);
}

static int open_listener(const char *host, uint16_t port, int reuseport, struct ng_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		sl = sizeof(*v4);
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		sl = sizeof(*v6);
	} else {
		(void)ng_err_set(err, NG_EINVAL, 0, "listen address \"%s\" is not a numeric IP",
				 host);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		(void)ng_err_set(err, NG_EIO, 0, "socket: %s", ng_strerror(errno));
		return -1;
	}
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "SO_REUSEPORT: %s", ng_strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "bind %s:%u: %s", host, port, ng_strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (listen(fd, SOMAXCONN) != 0) {
		(void)ng_err_set(err, NG_EIO, 0, "listen: %s", ng_strerror(errno));
		(void)close(fd);
		return -1;
	}
	return fd;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* ---- the serving certificate, replaceable while serving ---- */

/* A certificate chain and its key as GnuTLS serves them. Handshakes read the current pair
 * without a lock; a replaced pair stays allocated until the server is destroyed (renewals are
 * rare: a few KiB each), so no handshake can see it freed. */
#define MAX_CHAIN 8
struct tls_creds {
	gnutls_pcert_st pcerts[MAX_CHAIN];
	unsigned n;
	gnutls_privkey_t key;
	struct tls_creds *older;
};

/* The pair handshakes get. One HTTPS server per process: GnuTLS's retrieve callback has no
 * argument of ours. */
static _Atomic(struct tls_creds *) current_creds;

static void creds_free(struct tls_creds *c)
{
	while (c) {
		struct tls_creds *older = c->older;
		for (unsigned i = 0; i < c->n; i++)
			gnutls_pcert_deinit(&c->pcerts[i]);
		if (c->key)
			gnutls_privkey_deinit(c->key);
		free(c);
		c = older;
	}
}

/* Parses @cert_pem (a chain, leaf first) and @key_pem, and checks that they belong together.
 * NULL with @reterr when they do not load. */
static struct tls_creds *creds_load(const char *cert_pem, const char *key_pem,
				    struct ng_err *reterr)
{
	gnutls_datum_t cd = {(unsigned char *)(uintptr_t)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t kd = {(unsigned char *)(uintptr_t)key_pem, (unsigned)strlen(key_pem)};
	/* The pairing check GnuTLS does when a pair is installed the usual way. */
	gnutls_certificate_credentials_t check;
	if (gnutls_certificate_allocate_credentials(&check) < 0) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	int rc = gnutls_certificate_set_x509_key_mem(check, &cd, &kd, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(check);
	if (rc < 0) {
		(void)ng_err_set(reterr, NG_EINVAL, 0, "certificate and key: %s",
				 gnutls_strerror(rc));
		return NULL;
	}
	struct tls_creds *c = calloc(1, sizeof(*c));
	if (!c) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	c->n = MAX_CHAIN;
	rc = gnutls_pcert_list_import_x509_raw(c->pcerts, &c->n, &cd, GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0)
		c->n = 0;
	if (rc >= 0 && (rc = gnutls_privkey_init(&c->key)) >= 0)
		rc = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0) {
		(void)ng_err_set(reterr, NG_EINVAL, 0, "certificate and key: %s",
				 gnutls_strerror(rc));
		creds_free(c);
		return NULL;
	}
	return c;
}

static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			  const gnutls_pk_algorithm_t *pk_algos, int npk_algos,
			  gnutls_pcert_st **pcert, unsigned int *pcert_length,
			  gnutls_privkey_t *pkey)
{
	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)npk_algos;
	struct tls_creds *c = atomic_load_explicit(&current_creds, memory_order_acquire);
	if (!c)
		return -1;
	*pcert = c->pcerts;
	*pcert_length = c->n;
	*pkey = c->key;
	return 0;
}

ng_status srv_set_certificate(struct srv *s, const char *cert_pem, const char *key_pem,
			      struct ng_err *reterr)
{
	struct tls_creds *c = creds_load(cert_pem, key_pem, reterr);
	if (!c)
		return reterr ? reterr->status : NG_EINVAL;
	c->older = s->creds_all;
	s->creds_all = c;
	atomic_store_explicit(&current_creds, c, memory_order_release);
	return NG_OK;
}

/* The options every daemon shares, then the TLS ones when @tls; @trust (a PEM bundle, or NULL)
 * makes the daemon ask for client certificates and verify them against it. With
 * @per_connection, a thread per connection (the admin listener: see server.h) instead of one
 * epoll loop. */
static struct MHD_Daemon *start_daemon(struct srv *s, unsigned i, int fd, struct srv_door *door,
				       bool tls, const char *trust, unsigned limit,
				       unsigned idle_timeout_s, bool per_connection)
{
	struct MHD_OptionItem opts[16];
	size_t n = 0;
#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (void *)(p)})
	OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	OPT(MHD_OPTION_CONNECTION_LIMIT, limit, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_s, NULL);
	OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_BYTES, NULL);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)srv_http_completed, door);
	OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv_conns_notify, srv_conns_list(s->conns, i));
	OPT(MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)srv_http_no_unescape, NULL);
	OPT(MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL);
	OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL);
	if (tls) {
		/* One pointer argument: it goes in the item's pointer member. */
		OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)TLS_PRIORITIES);
		if (trust)
			OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)(uintptr_t)trust);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
			 (tls ? MHD_USE_TLS : 0) |
			 (per_connection ? MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL
					 : MHD_USE_EPOLL | MHD_USE_TURBO);
	/* A function pointer cannot sit in the item's object pointer: the certificate callback
	 * goes as an argument (libmicrohttpd ignores it without MHD_USE_TLS). */
	return MHD_start_daemon(flags, 0, NULL, NULL, srv_http_request, door, MHD_OPTION_ARRAY,
				opts, MHD_OPTION_HTTPS_CERT_CALLBACK, on_certificate,
				MHD_OPTION_END);
}

/* The webhook listener: @n daemons sharing the port. NG_OK or @reterr. */
static ng_status start_webhook_daemons(struct srv *s, const struct srv_config *cfg, unsigned n,
				       unsigned per, struct ng_err *reterr)
{
	uint16_t port = cfg->port;
	for (unsigned i = 0; i < n; i++) {
		int fd = open_listener(cfg->listen_host, port, n > 1, reterr);
		if (fd < 0)
			return reterr ? reterr->status : NG_EIO;
		s->fds[i] = fd;
		if (i == 0)
			port = bound_port(fd);
		s->daemons[i] = start_daemon(s, i, fd, &s->webhook_door, true, cfg->client_ca_pem,
					     per, cfg->connection_timeout_s, false);
		if (!s->daemons[i])
			return ng_err_set(reterr, NG_EIO, 0, "starting the HTTPS daemon failed");
		s->ndaemons = i + 1;
	}
	s->port = port;
	return NG_OK;
}

/* The admin listener, when configured: one daemon, after the webhook ones, a thread per
 * connection. */
static ng_status start_admin_daemon(struct srv *s, const struct srv_config *cfg,
				    struct ng_err *reterr)
{
	if (!cfg->admin_host)
		return NG_OK;
	unsigned i = s->ndaemons;
	int fd = open_listener(cfg->admin_host, cfg->admin_port, 0, reterr);
	if (fd < 0)
		return reterr ? reterr->status : NG_EIO;
	s->fds[i] = fd;
	s->admin_port = bound_port(fd);
	s->daemons[i] = start_daemon(s, i, fd, &s->admin_door, cfg->admin_tls, NULL,
				     SRV_ADMIN_MAX_CONNECTIONS, cfg->connection_timeout_s, true);
	if (!s->daemons[i])
		return ng_err_set(reterr, NG_EIO, 0, "starting the admin listener failed");
	s->ndaemons = i + 1;
	return NG_OK;
}

/* The clock of a plan's time cap: the monotonic clock, or, once the server is stopping, one far
 * ahead, so that a plan still running ends at its next look (server.h). */
static int64_t plan_clock(void *ctx)
{
	const struct srv *s = ctx;
	return atomic_load_explicit(&s->stopping, memory_order_relaxed) ? INT64_MAX / 2
									: ng_now_mono_us();
}

static void copy_config(struct srv *s, const struct srv_config *cfg, struct kube_store *store)
{
	for (unsigned i = 0; i <= SRV_MAX_DAEMONS; i++)
		s->fds[i] = -1;
	s->webhook_door = (struct srv_door){s, false};
	s->admin_door = (struct srv_door){s, true};
	s->store = store;
	s->eviction = &cfg->eviction;
	s->objects = cfg->objects;
	s->watch = cfg->watch;
	s->metrics_extra = cfg->metrics_extra;
	s->metrics_ctx = cfg->metrics_ctx;
	s->auto_request = cfg->auto_request;
	s->auto_request_used = cfg->auto_request_used;
	s->auto_request_ctx = cfg->auto_request_ctx;
	s->admin_authorize = cfg->admin_authorize;
	s->admin_authorize_ctx = cfg->admin_authorize_ctx;
	s->admin_host_check = cfg->admin_host_check;
	s->admin_hosts = cfg->admin_hosts;
	s->nadmin_hosts = cfg->nadmin_hosts;
	if (cfg->admin_host)
		ng_fmt(s->admin_self, sizeof(s->admin_self),
		       strchr(cfg->admin_host, ':') ? "[%.64s]" : "%.64s", cfg->admin_host);
	s->admin_max_plans = cfg->admin_max_plans ? cfg->admin_max_plans : 1;
	s->plan_caps = cfg->plan_caps;
	if (!s->plan_caps.max_mono_us)
		s->plan_caps.max_mono_us = INT64_MAX / 4; /* no cap, but stopping still stops */
	s->plan_caps.clock_mono_us = plan_clock;
	s->plan_caps.clock_ctx = s;
	s->client_ca = cfg->client_ca_pem != NULL;
	s->webhook_metrics = cfg->webhook_metrics;
	s->probes_only = cfg->probes_only;
}

struct srv *srv_create(const struct srv_config *cfg, struct kube_store *store,
		       struct ng_err *reterr)
{
	srv_http_init();
	struct srv *s = calloc(1, sizeof(*s));
	if (!s) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	copy_config(s, cfg, store);
	s->metrics = srv_metrics_create();
	if (!s->metrics) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto fail;
	}
	if (cfg->listen_host &&
	    srv_set_certificate(s, cfg->cert_pem, cfg->key_pem, reterr) != NG_OK)
		goto fail;
	unsigned n = !cfg->listen_host ? 0 : cfg->threads ? cfg->threads : 1;
	if (n > SRV_MAX_DAEMONS)
		n = SRV_MAX_DAEMONS;
	unsigned per = cfg->max_connections / (n ? n : 1);
	if (per == 0)
		per = 1;
	struct srv_conns_config cc = {
	    .header_timeout_s = cfg->header_timeout_s ? cfg->header_timeout_s : 10,
	    .body_timeout_s = cfg->body_timeout_s ? cfg->body_timeout_s : 10,
	    .idle_timeout_s = cfg->connection_timeout_s,
	    .per_daemon_limit = per,
	    .per_address_limit = cfg->max_connections_per_address,
	    .ndaemons = n + (cfg->admin_host ? 1 : 0),
	    .last_daemon_limit = cfg->admin_host ? SRV_ADMIN_MAX_CONNECTIONS : 0,
	};
	s->conns = srv_conns_create(&cc, reterr);
	if (!s->conns || start_webhook_daemons(s, cfg, n, per, reterr) != NG_OK ||
	    start_admin_daemon(s, cfg, reterr) != NG_OK)
		goto fail;
	atomic_store(&s->ready, true);
	return s;
fail:
	srv_destroy(s, 0);
	return NULL;
}

uint16_t srv_admin_port(const struct srv *s)
{
	return s->admin_port;
}

uint16_t srv_port(const struct srv *s)
{
	return s->port;
}

void srv_set_ready(struct srv *s, bool ready)
{
	atomic_store_explicit(&s->ready, ready, memory_order_relaxed);
}

static unsigned open_connections(struct srv *s)
{
	unsigned total = 0;
	for (unsigned i = 0; i < s->ndaemons; i++) {
		const union MHD_DaemonInfo *info =
		    MHD_get_daemon_info(s->daemons[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (info)
			total += info->num_connections;
	}
	return total;
}

void srv_destroy(struct srv *s, int64_t grace_ms)
{
	if (!s)
		return;
	atomic_store(&s->ready, false);
	atomic_store(&s->stopping, true);
	/* Stop accepting everywhere first; MHD hands the listen socket back to us. */
	for (unsigned i = 0; i < s->ndaemons; i++)
		(void)MHD_quiesce_daemon(s->daemons[i]);
	int64_t deadline = ng_now_mono_us() + grace_ms * 1000;
	while (grace_ms > 0 && open_connections(s) > 0 && ng_now_mono_us() < deadline) {
		struct timespec ts = {0, 20 * 1000 * 1000};
		(void)nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < s->ndaemons; i++)
		MHD_stop_daemon(s->daemons[i]);
	for (unsigned i = 0; i <= SRV_MAX_DAEMONS; i++)
		if (s->fds[i] >= 0)
			(void)close(s->fds[i]);
	srv_conns_destroy(s->conns);
	srv_metrics_destroy(s->metrics);
	atomic_store(&current_creds, NULL);
	creds_free(s->creds_all);
	free(s);
}
