/* nodegate serve's certificate: the --tls-cert and --tls-key files, read at the start and
 * again when they change, or with --self-signed a pair made from the cluster's CA and handed
 * over by the renewer. */
#include "cmd/serve_internal.h"

#include "certs/certs.h"
#include "common/file.h"
#include "common/log.h"
#include "common/status.h"
#include "kube/client.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Certificate and key files are a few KiB; 1 MiB rejects a wrong path early. */
#define MAX_PEM_BYTES (1u << 20)

/* The PEM files: reported and NULL on error. */
char *serve_read_pem(const char *path, const char *what, bool secret)
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

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Whether --tls-cert or --tls-key changed since the last call (which it records). A file
 * that cannot be stat'ed is not a change: a renewal replaces files, it does not remove them. */
bool serve_tls_files_changed(const struct cmd_serve_config *c, struct tls_files *last)
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
void serve_reload_certificate(const struct cmd_serve_config *c, struct srv *srv,
			      _Atomic int64_t *not_after)
{
	char *cert = serve_read_pem(c->tls_cert, "--tls-cert", false);
	char *key = cert ? serve_read_pem(c->tls_key, "--tls-key", true) : NULL;
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

/* A new serving pair from the renewer (its thread): served from the next handshake. */
static void install_certificate(void *ctx, const char *cert, const char *key, int64_t not_after)
{
	struct serve *s = ctx;
	struct ng_err err = {0};
	if (srv_set_certificate(s->srv, cert, key, &err) == NG_OK) {
		atomic_store(&s->cert_not_after, not_after);
		return;
	}
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_ERROR, "cmd", "renewed certificate not served")) {
		ng_log_str(&l, "err", err.msg);
		ng_log_end(&l);
	}
}

/* --self-signed: the CA from the cluster and a first serving pair. 0, or -1 (logged). */
int serve_make_certificate(struct serve *s)
{
	s->ssc = (struct selfsigned_config){.kube = &s->kcfg,
					    .secret_ns = s->ca_ns,
					    .secret_name = s->ca_name,
					    .service_ns = s->svc_ns,
					    .service_name = s->svc_name,
					    .cert_seconds = s->c.cert_seconds,
					    .selector = s->c.webhook_selector,
					    .install = install_certificate,
					    .ctx = s};
	struct kube_client *client = kube_client_create(&s->kcfg);
	struct ng_err err = {0};
	ng_status st = client ? selfsigned_bootstrap(&s->ssc, client, 60, &s->first, &err)
			      : ng_err_set(&err, NG_ENOMEM, 0, "out of memory");
	kube_client_destroy(client);
	if (st != NG_OK) {
		(void)fprintf(stderr, "nodegate: --self-signed: %s\n", err.msg);
		return -1;
	}
	s->cert = s->first.cert_pem;
	s->key = s->first.key_pem;
	s->first.cert_pem = s->first.key_pem = NULL;
	return 0;
}
