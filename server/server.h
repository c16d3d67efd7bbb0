/* The HTTPS admission server: libmicrohttpd over GnuTLS, one epoll daemon per core sharing the
 * port through SO_REUSEPORT (the kernel spreads connections evenly; MHD's internal thread pool
 * was measured to pile every connection onto one thread at times). */
#ifndef NG_SERVER_SERVER_H
#define NG_SERVER_SERVER_H

#include "common/status.h"
#include "policy/policy.h"
#include "server/admission.h"

#include <stdbool.h>
#include <stdint.h>

struct kube_store;
struct ng_buf;
struct kube_watch;

struct srv_config {
	const char *listen_host; /* numeric IPv4/IPv6 address, e.g. "0.0.0.0", "::1" */
	uint16_t port;           /* 0 picks a free port (see srv_port) */
	const char *cert_pem;    /* borrowed for srv_create only; copied */
	const char *key_pem;
	unsigned threads;                    /* daemons, one thread each; >= 1 */
	unsigned max_connections;            /* across all daemons */
	unsigned connection_timeout_s;       /* idle keep-alive limit; 0 = none */
	struct pol_eviction_config eviction; /* borrowed; must outlive the server */
	struct srv_object_config objects;    /* the object webhooks; borrowed likewise */
	const struct kube_watch *watch;      /* NULL in snapshot mode; else /readyz waits for its
						sync and /metrics shows its counters */
	/* More /metrics series from layers the server does not know (the gate, the lease): called
	 * on the scraping thread; NULL for none. */
	ng_status (*metrics_extra)(struct ng_buf *out, void *ctx);
	void *metrics_ctx;
	/* Called on the admission thread for an eviction denied with autoRequest (never dryRun):
	 * must only queue. NULL: autoRequest is not served (snapshot mode). */
	void (*auto_request)(const char *node, const char *user, void *ctx);
	void *auto_request_ctx;
};

struct srv;

/**
 * Binds, and starts serving on the configured address. @store (borrowed, must outlive the
 * server) provides the snapshot each request decides against. On failure returns NULL and fills
 * @reterr (bad address, bind failure, TLS material rejected).
 */
struct srv *srv_create(const struct srv_config *cfg, struct kube_store *store,
		       struct ng_err *reterr);

/**
 * Serves @cert_pem (a chain, leaf first) and @key_pem from the next handshake on; connections
 * already open keep theirs. The pair must load and belong together, else NG_EINVAL with
 * @reterr and the current pair stays. Any thread; calls are serialised by the caller.
 */
NG_NODISCARD ng_status srv_set_certificate(struct srv *s, const char *cert_pem, const char *key_pem,
					   struct ng_err *reterr);

/** The bound port. */
uint16_t srv_port(const struct srv *s);

/** Sets what /readyz answers (200 when true, 503 otherwise). Any thread. */
void srv_set_ready(struct srv *s, bool ready);

/**
 * Stops accepting connections, waits up to @grace_ms for open connections to finish, then stops
 * every daemon and frees the server. Accepts NULL. Main thread.
 */
void srv_destroy(struct srv *s, int64_t grace_ms);

#endif
