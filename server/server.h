/* The HTTPS admission server: libmicrohttpd over GnuTLS, one epoll daemon per core sharing the
 * port through SO_REUSEPORT (the kernel spreads connections evenly; MHD's internal thread pool
 * was measured to pile every connection onto one thread at times).
 *
 * Ownership: srv_create() returns a server the caller frees with srv_destroy(). It keeps
 * pointers into its struct srv_config (the struct itself, for the eviction settings) and to
 * everything the config points to except the PEM strings: all of that is borrowed and must
 * outlive the server. The PEM strings are copied (GnuTLS keeps its own credentials).
 * Threads: srv_create() and srv_destroy() run on the main thread, srv_set_certificate() on one
 * thread at a time (nodegate: the main thread too); requests run on the server's own daemon
 * threads, one per srv_config.threads, which call the config's callbacks. srv_port() and
 * srv_set_ready() may be called from any thread. One server per process: the certificate
 * callback reads a process-wide pointer to the current pair. The admin listener is one daemon
 * with a thread per connection (at most SRV_ADMIN_MAX_CONNECTIONS), so a plan or a slow
 * TokenReview holds only its own connection: the probes, /metrics and the other side doors
 * answer meanwhile. */
#ifndef NG_SERVER_SERVER_H
#define NG_SERVER_SERVER_H

#include "common/status.h"
#include "policy/policy.h"
#include "server/admission.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_store;
struct ng_buf;
struct kube_watch;

/* Connections the admin listener holds at once, each with a thread of its own: the admin
 * listener has few callers (port-forwards, a sidecar, Prometheus, a token-holding tool), and a
 * thread each costs its stack. Near the limit, each new connection sheds the one that has
 * waited longest on its client, as on the webhook port. */
#define SRV_ADMIN_MAX_CONNECTIONS 64
/* Retry-After of a 429 for a plan over --admin-max-plans, or a second cache dump. */
#define SRV_ADMIN_RETRY_AFTER_S 5

/* What an admin listener's authorizer answers (see srv_config.admin_authorize). */
enum srv_auth {
	SRV_AUTH_ALLOWED,
	SRV_AUTH_UNAUTHENTICATED, /* no credentials, or they do not check out: 401 */
	SRV_AUTH_FORBIDDEN,       /* a known user without the right: 403 */
	SRV_AUTH_UNAVAILABLE,     /* the authority could not be asked: 503 */
};

/* Decides one admin request: @authorization is the Authorization header (NULL when absent),
 * @verb the Kubernetes verb of the method ("get", "post"), @path the request path. Writes the
 * caller's name, when known, into @user (@usercap bytes) for the log. Runs on the thread of the
 * admin connection, possibly on several at once, and may block (a TokenReview, say): neither
 * the webhooks nor the admin listener's other connections wait on it. */
typedef enum srv_auth (*srv_authorize_fn)(void *ctx, const char *authorization, const char *verb,
					  const char *path, char *user, size_t usercap);

struct srv_config {
	const char *listen_host;  /* numeric IPv4/IPv6 address, e.g. "0.0.0.0", "::1"; NULL: no
				     webhook listener (and no certificate) */
	uint16_t port;            /* 0 picks a free port (see srv_port) */
	const char *cert_pem;     /* borrowed for srv_create only; copied */
	const char *key_pem;      /* likewise; the caller may wipe it once srv_create returns */
	unsigned threads;         /* daemons, one thread each; >= 1 */
	unsigned max_connections; /* across all daemons */
	unsigned connection_timeout_s; /* idle keep-alive limit; 0 = none */
	unsigned header_timeout_s; /* accept → the first request's headers, TLS included; 0 = 10 */
	unsigned body_timeout_s;   /* headers → body; response queued → read; 0 = 10 */
	unsigned max_connections_per_address; /* 0 = no limit */
	struct pol_eviction_config eviction;  /* read through a pointer to this field: the
						 config struct must outlive the server */
	struct srv_object_config objects;     /* copied; its deciders array is borrowed and
						 must outlive the server */
	const struct kube_watch *watch;       /* borrowed, must outlive the server; NULL in
						 snapshot mode; else /readyz waits for its sync and
						 /metrics shows its series */
	/* More /metrics series from layers the server does not know (the gate, the lease): called
	 * on the scraping daemon thread, possibly on several at once, to append to @out (a buffer
	 * the server owns); NULL for none. @objects: the scrape may see series labelled with
	 * cluster objects' names (budgets, NodeRemediations); true on the admin listener and on
	 * the webhook port for a client whose certificate verified against client_ca_pem, false
	 * for anyone else on the webhook port, who gets counts only (docs/operations.md). @ctx
	 * is @metrics_ctx, borrowed, which must outlive the server. */
	ng_status (*metrics_extra)(struct ng_buf *out, bool objects, void *ctx);
	void *metrics_ctx;
	/* Called on the admission thread for an eviction denied with autoRequest (never dryRun):
	 * must only queue. @node and @user are valid for the call only: copy them to keep them.
	 * @verified: the review came over a connection whose client certificate verified against
	 * client_ca_pem (the API server's), so @user is the API server's word. NULL: autoRequest
	 * is not served (snapshot mode). @auto_request_ctx is borrowed and must outlive the
	 * server. */
	void (*auto_request)(const char *node, const char *user, bool verified, void *ctx);
	/* Called likewise (same context) for an eviction that used the request autoRequest made
	 * for @node (pol_decision.auto_request_used): must only queue. NULL: not served. */
	void (*auto_request_used)(const char *node, void *ctx);
	void *auto_request_ctx;
	/* Webhooks require a client certificate chaining to this PEM bundle (borrowed for
	 * srv_create only); NULL = any client. */
	const char *client_ca_pem;
	bool webhook_metrics; /* serve /metrics on the webhook listener too */
	/* The admin listener: /debug/cache, /v1/evaluate, /v1/plan, /metrics, /healthz, /readyz,
	 * a thread per connection. NULL host = none (the side doors are then not served at all). */
	const char *admin_host;
	uint16_t admin_port; /* 0 picks a free port (see srv_admin_port) */
	bool admin_tls;      /* HTTPS with the serving pair; else plain HTTP */
	/* Every admin request but /healthz and /readyz must pass it; NULL = none (the caller keeps
	 * such a listener on loopback). @admin_authorize_ctx is borrowed and must outlive the
	 * server. */
	srv_authorize_fn admin_authorize;
	void *admin_authorize_ctx;
	/* DNS rebinding guard: when set, the admin listener answers only requests whose Host
	 * header (port ignored, case-insensitive) is localhost, 127.0.0.1, [::1], admin_host
	 * itself or a name of admin_hosts (each entry a name or a comma-separated list of names;
	 * borrowed, must outlive the server), and 421 to any other. */
	bool admin_host_check;
	const char *const *admin_hosts;
	size_t nadmin_hosts;
	/* POST /v1/plan computed at once; more get 429 with Retry-After. 0 = 1. */
	unsigned admin_max_plans;
	/* Caps on each plan's work (copied). The server's clock replaces the time cap's, so that
	 * a plan running when the server stops ends at once. */
	struct srv_plan_caps plan_caps;
	/* The admin listener serves only /healthz, /readyz and /metrics: a process without
	 * webhooks (the drainer) sets listen_host NULL and this. */
	bool probes_only;
};

struct srv;

/**
 * Binds, and starts serving on the configured address. @cfg is borrowed and must outlive the
 * server (see struct srv_config for what is copied). @store (borrowed, must outlive the server)
 * provides the snapshot each request decides against. Returns a server the caller frees with
 * srv_destroy(); on failure returns NULL and fills @reterr (optional): NG_EINVAL (bad address,
 * TLS material rejected), NG_EIO (bind or daemon start failed), NG_ENOMEM. Main thread.
 */
struct srv *srv_create(const struct srv_config *cfg, struct kube_store *store,
		       struct ng_err *reterr);

/**
 * Serves @cert_pem (a chain, leaf first) and @key_pem from the next handshake on; connections
 * already open keep theirs. Both strings are borrowed for the call and copied into GnuTLS
 * credentials, which the server keeps until srv_destroy(). The pair must load and belong
 * together, else NG_EINVAL (NG_ENOMEM) with @reterr and the current pair stays. Any thread; calls
 * are serialised by the caller (nodegate: the main thread).
 */
NG_NODISCARD ng_status srv_set_certificate(struct srv *s, const char *cert_pem, const char *key_pem,
					   struct ng_err *reterr);

/** The bound port (the chosen one when srv_config.port was 0). Any thread. */
uint16_t srv_port(const struct srv *s);

/** The admin listener's bound port; 0 when there is none. Any thread. */
uint16_t srv_admin_port(const struct srv *s);

/** Sets what /readyz answers (200 when true, 503 otherwise). Any thread. */
void srv_set_ready(struct srv *s, bool ready);

/**
 * Stops accepting connections (/readyz turns 503), waits up to @grace_ms for open connections
 * to finish, then stops and joins every daemon and frees the server (ownership is taken). After
 * it returns no callback of srv_config runs any more. Accepts NULL. Main thread.
 */
void srv_destroy(struct srv *s, int64_t grace_ms);

#endif
