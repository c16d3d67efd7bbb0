/* What server.c (listeners, daemons, certificates) and http.c (requests) share: the server
 * struct and the request callbacks. Not for use outside server/.
 *
 * Ownership and threads as in server/server.h: the struct is written by srv_create() before any
 * daemon starts and read by the daemon threads afterwards; `ready`, `dumping`, `planning` and
 * `stopping` are atomics. */
#ifndef NG_SERVER_INTERNAL_H
#define NG_SERVER_INTERNAL_H

#include "server/server.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* More than this many daemons buys nothing on the machines we run on and costs threads. */
#define SRV_MAX_DAEMONS 64

/* Which listener a request came in on: the request callbacks' closure. */
struct srv_door {
	struct srv *s;
	bool admin;
};

struct srv {
	/* The webhook daemons, then the admin listener's when there is one. */
	struct MHD_Daemon *daemons[SRV_MAX_DAEMONS + 1];
	int fds[SRV_MAX_DAEMONS + 1];
	unsigned ndaemons;
	uint16_t port, admin_port;
	struct srv_door webhook_door, admin_door;
	struct kube_store *store;
	struct srv_metrics *metrics;
	struct srv_conns *conns;
	const struct pol_eviction_config *eviction;
	struct srv_object_config objects;
	const struct kube_watch *watch;
	ng_status (*metrics_extra)(struct ng_buf *out, bool objects, void *ctx);
	void *metrics_ctx;
	void (*auto_request)(const char *node, const char *user, bool verified, void *ctx);
	void (*auto_request_used)(const char *node, void *ctx);
	void *auto_request_ctx;
	srv_authorize_fn admin_authorize;
	void *admin_authorize_ctx;
	bool admin_host_check;
	const char *const *admin_hosts;
	size_t nadmin_hosts;
	char admin_self[72]; /* the admin listener's own address as a Host names it */
	unsigned admin_max_plans;
	struct srv_plan_caps plan_caps;
	bool client_ca;            /* the webhooks require a client certificate that verifies */
	bool webhook_metrics;      /* /metrics on the webhook listener too */
	bool probes_only;          /* the admin listener serves the probes and /metrics only */
	_Atomic bool dumping;      /* a /debug/cache answer is being sent */
	_Atomic unsigned planning; /* POST /v1/plan being computed */
	_Atomic bool stopping;     /* srv_destroy() has begun: plans stop at once */
	_Atomic bool ready;
	struct tls_creds *creds_all; /* every pair loaded, newest first: freed with the server */
};

/** Once per process, before the first request: the per-thread request cache. */
void srv_http_init(void);

/** The MHD_AccessHandlerCallback of every daemon; @cls is a struct srv_door. */
enum MHD_Result srv_http_request(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_size, void **con_cls);

/** The MHD_RequestCompletedCallback of every daemon. */
void srv_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			enum MHD_RequestTerminationCode toe);

/** MHD_OPTION_UNESCAPE_CALLBACK: nothing is decoded (see http.c). */
size_t srv_http_no_unescape(void *cls, struct MHD_Connection *c, char *s);

#endif
