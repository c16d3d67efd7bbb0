/* serve --self-signed (controller/selfsigned.h). */
#include "controller/selfsigned.h"
#include "controller/selfsigned_internal.h"

#include "certs/certs.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/jw.h"
#include "common/log.h"
#include "controller/scaffold.h"
#include "kube/lookup.h"
#include "kube/runtime.h"
#include "kube/write.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The CA outlives every replica; rotating it means deleting the Secret (docs/certificates.md). */
#define CA_DAYS 3650
/* How often the caBundles are checked, and a failed step retried. */
#define PATCH_EVERY_S 60
#define RETRY_S 10
/* Webhook configurations patched per check; more are patched on the next one. */
#define MAX_CONFIGS 32

struct ca {
	char *cert, *key; /* PEM */
};

static void ca_free(struct ca *ca)
{
	free(ca->cert);
	cert_free_secret(ca->key);
	ca->cert = ca->key = NULL;
}

static void log_err(const char *msg, const struct ng_err *err)
{
	struct ng_logline l;
	if (ng_log_begin(&l, NG_LOG_WARN, "certs", msg)) {
		ng_log_str(&l, "err", err->msg);
		ng_log_end(&l);
	}
}

struct secret_body {
	const struct selfsigned_config *cfg;
	const char *cert_b64, *key_b64;
};

static void secret_body(struct ng_jw *w, void *ctx)
{
	const struct secret_body *b = ctx;
	ng_jw_kstr(w, "apiVersion", "v1");
	ng_jw_kstr(w, "kind", "Secret");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", b->cfg->secret_name);
	ng_jw_kstr(w, "namespace", b->cfg->secret_ns);
	ng_jw_key(w, "labels");
	ng_jw_obj(w);
	ng_jw_kstr(w, "app.kubernetes.io/name", "nodegate");
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
	ng_jw_kstr(w, "type", "Opaque");
	ng_jw_key(w, "data");
	ng_jw_obj(w);
	ng_jw_kstr(w, "ca.crt", b->cert_b64);
	ng_jw_kstr(w, "ca.key", b->key_b64);
	ng_jw_obj_end(w);
}

/* A new CA written to the Secret: NG_OK with *@ret filled, or with *@ret_taken when another
 * replica created the Secret first (read it then). */
static ng_status create_ca(const struct selfsigned_config *cfg, struct kube_client *c,
			   struct ca *ret, bool *ret_taken, struct ng_err *reterr)
{
	*ret_taken = false;
	const struct cert_request r = {
	    .service = cfg->service_name, .ns = cfg->service_ns, .days = CA_DAYS};
	struct cert_pair p;
	ng_status st = cert_generate(&r, &p, reterr);
	if (st != NG_OK)
		return st;
	struct ng_buf cert, key;
	ng_buf_init(&cert, 1u << 20);
	ng_buf_init(&key, 1u << 20);
	st = ng_buf_base64(&cert, p.ca_pem, strlen(p.ca_pem));
	st = st ? st : ng_buf_base64(&key, p.ca_key_pem, strlen(p.ca_key_pem));
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (st == NG_OK) {
		struct secret_body b = {cfg, cert.data, key.data};
		const struct kube_ref secrets = {KUBE_KIND_SECRET, cfg->secret_ns, NULL};
		kube_create(c, &secrets, secret_body, &b, &w);
	}
	if (key.data)
		explicit_bzero(key.data, key.len);
	ng_buf_finish(&cert);
	ng_buf_finish(&key);
	if (st != NG_OK) {
		cert_pair_finish(&p);
		return ng_err_set(reterr, st, 0, "out of memory");
	}
	if (w.outcome == KUBE_WRITE_OK) {
		ret->cert = p.ca_pem;
		ret->key = p.ca_key_pem;
		p.ca_pem = p.ca_key_pem = NULL;
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_INFO, "certs", "CA created")) {
			ng_log_str(&l, "secret_namespace", cfg->secret_ns);
			ng_log_str(&l, "secret", cfg->secret_name);
			ng_log_end(&l);
		}
	}
	cert_pair_finish(&p);
	if (w.outcome == KUBE_WRITE_OK)
		return NG_OK;
	if (w.outcome == KUBE_WRITE_CONFLICT) {
		*ret_taken = true;
		return NG_OK;
	}
	return ng_err_set(reterr, NG_EKUBE, 0, "creating Secret %s/%s: %s", cfg->secret_ns,
			  cfg->secret_name, w.err.msg[0] ? w.err.msg : "refused");
}

/* The CA from its Secret, created when there is none. */
static ng_status load_or_create_ca(const struct selfsigned_config *cfg, struct kube_client *c,
				   struct ca *ret, struct ng_err *reterr)
{
	static const char *const keys[] = {"ca.crt", "ca.key"};
	for (int round = 0; round < 2; round++) {
		char *v[2];
		bool found;
		char rv[64];
		ng_status st = kube_get_secret_data(c, cfg->secret_ns, cfg->secret_name, keys, 2, v,
						    &found, rv, sizeof(rv), reterr);
		if (st != NG_OK)
			return st;
		if (found && v[0] && v[1]) {
			ret->cert = v[0];
			ret->key = v[1];
			return NG_OK;
		}
		if (found) {
			struct ca partial = {v[0], v[1]};
			ca_free(&partial);
			return ng_err_set(
			    reterr, NG_EPARSE, 0,
			    "Secret %s/%s has no data.%s: delete it and nodegate makes "
			    "a new CA",
			    cfg->secret_ns, cfg->secret_name, v[0] ? "ca.key" : "ca.crt");
		}
		bool taken;
		st = create_ca(cfg, c, ret, &taken, reterr);
		if (st != NG_OK || !taken)
			return st;
	}
	return ng_err_set(reterr, NG_EKUBE, 0, "Secret %s/%s: created and gone again",
			  cfg->secret_ns, cfg->secret_name);
}

/* A serving certificate from @ca. */
static ng_status issue(const struct selfsigned_config *cfg, const struct ca *ca,
		       struct selfsigned_first *ret, struct ng_err *reterr)
{
	const struct cert_request r = {
	    .service = cfg->service_name, .ns = cfg->service_ns, .days = 1};
	ng_status st = cert_issue(&r, ca->cert, ca->key, cfg->cert_seconds, &ret->cert_pem,
				  &ret->key_pem, reterr);
	if (st == NG_OK && cert_not_after(ret->cert_pem, &ret->not_after, reterr) != NG_OK) {
		free(ret->cert_pem);
		cert_free_secret(ret->key_pem);
		ret->cert_pem = ret->key_pem = NULL;
		st = NG_EIO;
	}
	return st;
}

ng_status selfsigned_bootstrap(const struct selfsigned_config *cfg, struct kube_client *c,
			       int64_t wait_s, struct selfsigned_first *ret, struct ng_err *reterr)
{
	memset(ret, 0, sizeof(*ret));
	int64_t until = ng_now_mono_us() / 1000000 + wait_s;
	struct ca ca = {0};
	ng_status st;
	while ((st = load_or_create_ca(cfg, c, &ca, reterr)) != NG_OK) {
		if (st == NG_EPARSE || st == NG_ENOMEM || ng_now_mono_us() / 1000000 >= until)
			return st;
		log_err("CA not read yet; trying again", reterr);
		struct timespec ts = {1, 0};
		(void)nanosleep(&ts, NULL);
	}
	st = issue(cfg, &ca, ret, reterr);
	if (st == NG_OK && !(ret->ca_pem = strdup(ca.cert)))
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	ca_free(&ca);
	return st;
}

struct selfsigned {
	struct selfsigned_config cfg;
	struct kube_runtime *rt;    /* NULL when made by selfsigned_create() */
	struct kube_client *client; /* the runtime's, or the one given to selfsigned_create() */
	char *ca_pem;               /* the CA the current serving certificate is from */
	int64_t renew_at_s;         /* Unix seconds */
};

/* A webhook configuration whose caBundles need the CA. */
struct stale {
	int kind;
	char name[254], rv[64];
	uint64_t hooks; /* bit i: webhooks[i] */
};

struct stale_list {
	const char *want;
	struct stale v[MAX_CONFIGS];
	size_t n;
};

static ng_status collect_stale(const struct kube_webhook_ref *w, void *ctx)
{
	struct stale_list *l = ctx;
	if (strcmp(w->ca_bundle, l->want) == 0 || w->index >= 64)
		return NG_OK;
	struct stale *s = l->n ? &l->v[l->n - 1] : NULL;
	if (!s || s->kind != w->kind || strcmp(s->name, w->name) != 0) {
		if (l->n == MAX_CONFIGS)
			return NG_OK;
		s = &l->v[l->n++];
		*s = (struct stale){.kind = w->kind};
		(void)snprintf(s->name, sizeof(s->name), "%s", w->name);
		(void)snprintf(s->rv, sizeof(s->rv), "%s", w->rv);
	}
	s->hooks |= 1ull << w->index;
	return NG_OK;
}

/* Writes the CA into the caBundle of every labelled webhook that lacks it: one patch per
 * configuration, conditional on the version read (a 409 is retried on the next check). */
static void patch_bundles(struct selfsigned *s, struct kube_client *c)
{
	struct ng_buf want;
	ng_buf_init(&want, 1u << 20);
	struct ng_err err = {0};
	struct stale_list *l = calloc(1, sizeof(*l));
	ng_status st = l ? ng_buf_base64(&want, s->ca_pem, strlen(s->ca_pem)) : NG_ENOMEM;
	if (st == NG_OK) {
		l->want = want.data;
		st = kube_each_webhook(c, s->cfg.selector, collect_stale, l, &err);
		if (st != NG_OK)
			log_err("webhook configurations not read", &err);
	}
	for (size_t i = 0; st == NG_OK && i < l->n; i++) {
		struct kube_json_patch *p = kube_json_patch_create(l->v[i].rv);
		for (unsigned h = 0; p && h < 64; h++) {
			if (!(l->v[i].hooks & (1ull << h)))
				continue;
			char path[64];
			(void)snprintf(path, sizeof(path), "/webhooks/%u/clientConfig/caBundle", h);
			kube_json_patch_string(p, path, want.data);
		}
		const struct kube_ref ref = {(enum kube_kind)l->v[i].kind, NULL, l->v[i].name};
		struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
		if (p && kube_json_patch_body(p, NULL))
			kube_apply_json_patch(c, &ref, p, &w);
		kube_json_patch_destroy(p);
		struct ng_logline line;
		if (w.outcome == KUBE_WRITE_OK &&
		    ng_log_begin(&line, NG_LOG_INFO, "certs", "caBundle patched")) {
			ng_log_str(&line, "kind", kube_kind_name(ref.kind));
			ng_log_str(&line, "name", ref.name);
			ng_log_end(&line);
		} else if (w.outcome != KUBE_WRITE_CONFLICT) {
			kube_write_log("certs", "caBundle not patched", &ref, &w);
		}
	}
	free(l);
	ng_buf_finish(&want);
}

int64_t selfsigned_step(struct selfsigned *s)
{
	struct kube_client *c = s->client;
	int64_t now_s = ng_now_wall_ms() / 1000;
	int64_t next_s = now_s + PATCH_EVERY_S;
	struct ca ca = {0};
	struct ng_err err = {0};
	if (load_or_create_ca(&s->cfg, c, &ca, &err) != NG_OK) {
		log_err("CA not read", &err);
		next_s = now_s + RETRY_S;
	} else {
		bool new_ca = strcmp(ca.cert, s->ca_pem) != 0;
		if (new_ca || now_s >= s->renew_at_s) {
			struct selfsigned_first p;
			if (issue(&s->cfg, &ca, &p, &err) == NG_OK) {
				s->cfg.install(s->cfg.ctx, p.cert_pem, p.key_pem, p.not_after);
				s->renew_at_s = now_s + (p.not_after - now_s) * 2 / 3;
				free(s->ca_pem);
				s->ca_pem = ca.cert;
				ca.cert = NULL;
				struct ng_logline l;
				if (ng_log_begin(&l, NG_LOG_INFO, "certs",
						 "serving certificate renewed")) {
					ng_log_bool(&l, "new_ca", new_ca);
					ng_log_i64(&l, "not_after", p.not_after);
					ng_log_end(&l);
				}
				free(p.cert_pem);
				cert_free_secret(p.key_pem);
			} else {
				log_err("serving certificate not renewed", &err);
				next_s = now_s + RETRY_S;
			}
		}
		patch_bundles(s, c);
	}
	ca_free(&ca);
	if (s->renew_at_s < next_s)
		next_s = s->renew_at_s > now_s ? s->renew_at_s : now_s + 1;
	return ng_now_mono_us() + (next_s - now_s) * 1000000;
}

static int64_t step(struct kube_runtime *rt, void *ctx)
{
	(void)rt;
	return selfsigned_step(ctx);
}

struct selfsigned *selfsigned_create(const struct selfsigned_config *cfg,
				     const struct selfsigned_first *first,
				     struct kube_client *client, struct ng_err *reterr)
{
	struct selfsigned *s = calloc(1, sizeof(*s));
	if (!s || !(s->ca_pem = strdup(first->ca_pem))) {
		free(s);
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	int64_t now_s = ng_now_wall_ms() / 1000;
	s->renew_at_s = now_s + (first->not_after - now_s) * 2 / 3;
	s->client = client;
	return s;
}

struct selfsigned *selfsigned_start(const struct selfsigned_config *cfg,
				    const struct selfsigned_first *first, struct ng_err *reterr)
{
	struct selfsigned *s = selfsigned_create(cfg, first, NULL, reterr);
	if (!s)
		return NULL;
	const struct scaffold_config sc = {
	    .name = "certs", .kube = cfg->kube, .step = step, .ctx = s};
	s->rt = scaffold_create(&sc, reterr);
	if (s->rt)
		s->client = kube_runtime_client(s->rt);
	if (!s->rt || kube_runtime_start(s->rt, reterr) != NG_OK) {
		selfsigned_stop(s);
		return NULL;
	}
	return s;
}

void selfsigned_stop(struct selfsigned *s)
{
	if (!s)
		return;
	scaffold_stop(s->rt, NULL);
	free(s->ca_pem);
	free(s);
}
