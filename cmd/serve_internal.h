/* What the files of nodegate serve share: the state of one serve (struct serve), and the steps
 * of cmd_serve() that serve_config.c (the flags into settings) and serve_certificate.c (the
 * serving certificate) hold, documented at their definitions. Internal to cmd/: only serve.c,
 * serve_config.c and serve_certificate.c include it. */
#ifndef NG_CMD_SERVE_INTERNAL_H
#define NG_CMD_SERVE_INTERNAL_H

#include "cmd/cmd.h"
#include "cmd/controllers.h"

#include "controller/selfsigned.h"
#include "kube/config.h"
#include "policy/policy.h"
#include "server/server.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct autoreq;
struct capi;
struct gate;
struct kube_auth;
struct kube_store;
struct kube_watch;
struct leader;
struct remediate;
struct selfsigned;
struct srv;

/* What the served certificate files were when last read: a change of either is a renewal. */
struct tls_files {
	struct stat cert, key;
};

/* Everything serve runs. Lives on cmd_serve's stack: the server, gate and lease borrow parts
 * of it (flags, identity, metrics) until shut_down() stops them. */
struct serve {
	struct cmd_serve_config c;
	struct pol_eviction_config ev;
	char host[64];
	uint16_t port;
	char admin_host[64]; /* "" when --admin-listen off */
	uint16_t admin_port;
	bool admin_kube_auth;    /* --admin-auth resolved: TokenReview + SubjectAccessReview */
	struct kube_auth *auth;  /* the admin listener's callers: authz, or NULL (--admin-auth) */
	struct kube_auth *authz; /* every access check (live only): access_checks() */
	char *client_ca;         /* --client-ca, as read */
	bool live;               /* watching an API server, not serving snapshot files */
	struct kube_config kcfg;
	sigset_t signals; /* blocked in every thread; the main thread waits for them */
	char *cert, *key; /* PEM, as read; the key is wiped once handed to the server */
	struct kube_store *store;
	struct kube_watch *watch;
	struct autoreq *autoreq;
	struct capi *capi;
	struct leader *leader;
	struct gate *gate;
	struct remediate *remediate;
	char identity[300];             /* this replica in the Lease and in events: hostname_pid */
	_Atomic int64_t cert_not_after; /* the serving certificate's notAfter, Unix seconds; 0
					   unknown */
	struct cmd_wiring wiring;       /* serve_rows, on this serve */
	struct tls_files tls;
	struct srv_config sc; /* srv_create keeps a pointer to sc.eviction: must outlive srv */
	struct srv *srv;
	/* --self-signed: where the CA lives, the names served, the renewer. */
	char ca_ns[64], ca_name[254], svc_ns[64], svc_name[64];
	struct selfsigned_config ssc;
	struct selfsigned_first first;
	struct selfsigned *renewer;
};

/* serve_config.c */
bool serve_loopback(const char *host);
int serve_configure(struct serve *s, int argc, char **argv);

/* serve_certificate.c */
char *serve_read_pem(const char *path, const char *what, bool secret);
bool serve_tls_files_changed(const struct cmd_serve_config *c, struct tls_files *last);
void serve_reload_certificate(const struct cmd_serve_config *c, struct srv *srv,
			      _Atomic int64_t *not_after);
int serve_make_certificate(struct serve *s);

#endif
