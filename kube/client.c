/* libcurl request layer (kube/client.h). */
#include "kube/client.h"

#include "common/buf.h"
#include "common/clock.h"
#include "kube/config.h"
#include "kube/exec_cred.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kube_client {
	bool valid;        /* the server URL could be split */
	char *url_base;    /* scheme://host[:port][/prefix]; host is the tls-server-name if set */
	char *host_header; /* "Host: <server authority>" when tls-server-name is set */
	struct curl_slist
	    *connect_to; /* "<sni>:<port>:<host>:<port>" when tls-server-name is set */
	bool https;
	bool insecure;
	char *ca_pem, *cert_pem, *key_pem;
	char *token_file;
	struct kube_exec_cred *exec; /* the credential plugin (shared cache); NULL without */

	pthread_mutex_t mu; /* guards the five fields below */
	char *token;        /* static token, or the last one read from token_file */
	bool token_read;    /* token came from token_file */
	int64_t token_read_us;
	int64_t refresh_ms;
	uint64_t exec_gen; /* generation of the plugin's credential last sent */

	CURL *easy;                      /* kube_client_request's handle */
	struct kube_transport transport; /* tests: replaces libcurl for requests */
	char errbuf[CURL_ERROR_SIZE];
};

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* strdup that tolerates NULL; *ok turns false on OOM. */
static char *dup_opt(const char *s, bool *ok)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	if (!p)
		*ok = false;
	return p;
}

static char *concat3(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *p = malloc(la + lb + lc + 1);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	memcpy(p + la, b, lb);
	memcpy(p + la + lb, c, lc + 1);
	return p;
}

/* Splits @server ("scheme://authority[/prefix]") to aim the URL at the tls-server-name and let
 * CURLOPT_CONNECT_TO send the connection to the real host: curl has no separate SNI option, and
 * this also makes it verify the certificate against that name, as client-go's ServerName does. */
static bool setup_server(struct kube_client *c, const char *server, const char *sni)
{
	const char *sep = strstr(server, "://");
	if (!sep || sep == server)
		return true; /* leaves c->valid false */
	c->https = (size_t)(sep - server) == 5 && memcmp(server, "https", 5) == 0;
	bool http = (size_t)(sep - server) == 4 && memcmp(server, "http", 4) == 0;
	if (!c->https && !http)
		return true;
	if (!sni) {
		c->url_base = strdup(server);
		c->valid = c->url_base != NULL;
		return c->url_base != NULL;
	}
	const char *auth = sep + 3;
	const char *prefix = strchr(auth, '/');
	size_t alen = prefix ? (size_t)(prefix - auth) : strlen(auth);
	if (!prefix)
		prefix = "";
	size_t hlen = alen;
	const char *port = c->https ? "443" : "80";
	size_t plen = strlen(port);
	if (alen > 0 && auth[0] == '[') {
		const char *close = memchr(auth, ']', alen);
		if (!close)
			return true;
		hlen = (size_t)(close - auth) + 1;
	} else {
		const char *colon = memchr(auth, ':', alen);
		if (colon)
			hlen = (size_t)(colon - auth);
	}
	if (hlen < alen) {
		if (auth[hlen] != ':')
			return true;
		port = auth + hlen + 1;
		plen = alen - hlen - 1;
	}
	if (hlen == 0 || plen == 0)
		return true;
	size_t slen = strlen(sni);
	size_t n = slen + plen + hlen + plen + 4;
	char *entry = malloc(n);
	if (!entry)
		return false;
	(void)snprintf(entry, n, "%s:%.*s:%.*s:%.*s", sni, (int)plen, port, (int)hlen, auth,
		       (int)plen, port);
	struct curl_slist *list = curl_slist_append(NULL, entry);
	free(entry);
	if (!list)
		return false;
	c->connect_to = list;
	n = (size_t)(sep - server) + 3 + slen + 1 + plen + strlen(prefix) + 1;
	c->url_base = malloc(n);
	if (!c->url_base)
		return false;
	(void)snprintf(c->url_base, n, "%.*s://%s:%.*s%s", (int)(sep - server), server, sni,
		       (int)plen, port, prefix);
	n = alen + 7;
	c->host_header = malloc(n);
	if (!c->host_header)
		return false;
	(void)snprintf(c->host_header, n, "Host: %.*s", (int)alen, auth);
	c->valid = true;
	return true;
}

struct kube_client *kube_client_create(const struct kube_config *cfg)
{
	struct kube_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (pthread_mutex_init(&c->mu, NULL) != 0) {
		free(c);
		return NULL;
	}
	bool ok = true;
	c->refresh_ms = KUBE_CLIENT_TOKEN_REFRESH_MS;
	c->insecure = cfg->insecure_skip_tls_verify;
	c->ca_pem = dup_opt(cfg->ca_pem, &ok);
	c->cert_pem = dup_opt(cfg->client_cert_pem, &ok);
	c->key_pem = dup_opt(cfg->client_key_pem, &ok);
	c->token = dup_opt(cfg->token, &ok);
	c->token_file = dup_opt(cfg->token_file, &ok);
	c->exec = kube_exec_cred_ref(cfg->exec);
	if (cfg->server && !setup_server(c, cfg->server, cfg->tls_server_name))
		ok = false;
	if (!ok) {
		kube_client_destroy(c);
		return NULL;
	}
	return c;
}

void kube_client_destroy(struct kube_client *c)
{
	if (!c)
		return;
	if (c->easy)
		curl_easy_cleanup(c->easy);
	free(c->url_base);
	free(c->host_header);
	curl_slist_free_all(c->connect_to);
	free(c->ca_pem);
	free(c->cert_pem);
	wipe_free(c->key_pem);
	wipe_free(c->token);
	free(c->token_file);
	kube_exec_cred_unref(c->exec);
	pthread_mutex_destroy(&c->mu);
	explicit_bzero(c->errbuf, sizeof(c->errbuf));
	free(c);
}

void kube_client_set_token_refresh_ms(struct kube_client *c, int64_t ms)
{
	pthread_mutex_lock(&c->mu);
	c->refresh_ms = ms;
	pthread_mutex_unlock(&c->mu);
}

void kube_client_invalidate_token(struct kube_client *c)
{
	pthread_mutex_lock(&c->mu);
	c->token_read_us = INT64_MIN;
	uint64_t gen = c->exec_gen;
	pthread_mutex_unlock(&c->mu);
	/* The plugin runs again only if no other request has fetched a newer credential. */
	kube_exec_cred_invalidate(c->exec, gen);
}

/* Returns a malloc'd copy of the token to send (NULL in *ret when there is none). The file is
 * read outside the lock (B9: no lock across I/O); two threads may both read it, which is
 * harmless. A failed re-read keeps the last good token, as client-go's cachingTokenSource does:
 * the kubelet rewrites the file atomically, so a failure is transient or the token still works
 * until it expires. */
static ng_status current_token(struct kube_client *c, char **ret, struct ng_err *err)
{
	bool due = false;
	int64_t now_mono_us = ng_now_mono_us();
	pthread_mutex_lock(&c->mu);
	if (c->token_file && (!c->token_read || c->token_read_us == INT64_MIN ||
			      now_mono_us - c->token_read_us >= c->refresh_ms * 1000)) {
		due = true;
		c->token_read_us =
		    now_mono_us; /* claim the refresh so other threads don't pile in */
	}
	pthread_mutex_unlock(&c->mu);

	char *fresh = NULL;
	struct ng_err read_err = {0};
	ng_status read_st = due ? kube_config_read_token(c->token_file, &fresh, &read_err) : NG_OK;

	ng_status st = NG_OK;
	char *copy = NULL;
	pthread_mutex_lock(&c->mu);
	if (fresh) {
		wipe_free(c->token);
		c->token = fresh;
		c->token_read = true;
	} else if (read_st != NG_OK && !c->token) {
		c->token_read_us = INT64_MIN; /* try again next time */
		st = ng_err_set(err, NG_EIO, 0, "%s", read_err.msg);
	}
	if (st == NG_OK && c->token) {
		copy = strdup(c->token);
		if (!copy)
			st = ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	}
	pthread_mutex_unlock(&c->mu);
	if (st == NG_OK)
		*ret = copy;
	return st;
}

/* The credential plugin's current answer (kube/exec_cred.h: cached, or run now), remembering
 * its generation for kube_client_invalidate_token(). */
static ng_status exec_credential(struct kube_client *c, struct kube_exec_answer *ret,
				 struct ng_err *err)
{
	uint64_t gen = 0;
	ng_status st = kube_exec_cred_get(c->exec, ret, &gen, err);
	if (st == NG_OK) {
		pthread_mutex_lock(&c->mu);
		c->exec_gen = gen;
		pthread_mutex_unlock(&c->mu);
	}
	return st;
}

static bool path_ok(const char *path)
{
	if (!path || path[0] != '/')
		return false;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return false;
	return true;
}

/* Appends @s to *list; false on OOM (the list is kept). */
/* Sets libcurl options one after the other in a function holding `CURL *h` and `CURLcode rc`:
 * once one fails, rc keeps that failure and the rest are skipped. */
#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (rc == CURLE_OK)                                                                \
			rc = curl_easy_setopt(h, opt, val);                                        \
	} while (0)

static ng_status refused_option(CURLcode rc, struct ng_err *reterr)
{
	return ng_err_set(reterr, rc == CURLE_OUT_OF_MEMORY ? NG_ENOMEM : NG_EINVAL, 0,
			  "kube client: libcurl refused an option: %s", curl_easy_strerror(rc));
}

static bool add_header(struct curl_slist **list, const char *s)
{
	struct curl_slist *n = curl_slist_append(*list, s);
	if (!n)
		return false;
	*list = n;
	return true;
}

static void free_headers(struct curl_slist *list)
{
	for (struct curl_slist *l = list; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(list);
}

/* TLS >= 1.2, verification, the CA and the client certificate (@cert_pem and @key_pem: the
 * kubeconfig's or the credential plugin's), all as blobs libcurl copies. */
static CURLcode set_tls(const struct kube_client *c, CURL *h, char *cert_pem, char *key_pem)
{
	CURLcode rc = CURLE_OK;
	SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	SET(CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	if (c->ca_pem) {
		struct curl_blob blob = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
		SET(CURLOPT_CAINFO_BLOB, &blob);
	}
	if (cert_pem && key_pem) {
		struct curl_blob cert = {cert_pem, strlen(cert_pem), CURL_BLOB_COPY};
		struct curl_blob key = {key_pem, strlen(key_pem), CURL_BLOB_COPY};
		SET(CURLOPT_SSLCERT_BLOB, &cert);
		SET(CURLOPT_SSLCERTTYPE, "PEM");
		SET(CURLOPT_SSLKEY_BLOB, &key);
		SET(CURLOPT_SSLKEYTYPE, "PEM");
	}
	return rc;
}

ng_status kube_client_prepare(struct kube_client *c, CURL *h, const char *path,
			      struct curl_slist **ret_headers, struct ng_err *reterr)
{
	if (!c || !h || !ret_headers)
		return ng_err_set(reterr, NG_EINVAL, 0, "kube client: missing argument");
	if (!c->valid)
		return ng_err_set(reterr, NG_EINVAL, 0, "kube client: server is not a valid URL");
	if (!path_ok(path))
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "kube client: path must start with / and hold no spaces or "
				  "control bytes");
	char *token = NULL, *auth = NULL, *url = NULL;
	struct curl_slist *headers = NULL;
	struct kube_exec_answer cred = {0};
	ng_status st;
	if (c->exec) {
		st = exec_credential(c, &cred, reterr);
		token = cred.token; /* moved: freed as token below */
		cred.token = NULL;
	} else {
		st = current_token(c, &token, reterr);
	}
	if (st != NG_OK)
		return st;
	url = concat3(c->url_base, path, "");
	if (token)
		auth = concat3("Authorization: Bearer ", token, "");
	if (!url || (token && !auth) || !add_header(&headers, "Accept: application/json") ||
	    /* No 100-continue round trip before small JSON bodies. */
	    !add_header(&headers, "Expect:") || (auth && !add_header(&headers, auth)) ||
	    (c->host_header && !add_header(&headers, c->host_header))) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}

	CURLcode rc = CURLE_OK;
	SET(CURLOPT_URL, url);
	SET(CURLOPT_PROTOCOLS_STR, c->https ? "https" : "http");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)KUBE_CLIENT_CONNECT_TIMEOUT_MS);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	/* Notice a dead API server on an idle watch within about a minute. */
	SET(CURLOPT_TCP_KEEPIDLE, 30L);
	SET(CURLOPT_TCP_KEEPINTVL, 10L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_USERAGENT, "nodegate/" NG_VERSION);
	SET(CURLOPT_HTTPHEADER, headers);
	SET(CURLOPT_CONNECT_TO, c->connect_to);
	if (rc == CURLE_OK && c->https)
		rc = set_tls(c, h, c->exec ? cred.cert_pem : c->cert_pem,
			     c->exec ? cred.key_pem : c->key_pem);
	if (rc != CURLE_OK) {
		st = refused_option(rc, reterr);
		goto out;
	}
	*ret_headers = headers;
	headers = NULL;
out:
	if (headers) {
		(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
		free_headers(headers);
	}
	wipe_free(auth);
	wipe_free(token);
	kube_exec_answer_finish(&cred);
	free(url);
	return st;
}

struct sink {
	struct ng_buf *buf;
	ng_status st;
};

static size_t write_body(char *data, size_t size, size_t nmemb, void *user)
{
	struct sink *s = user;
	size_t n = size * nmemb;
	ng_status st = ng_buf_append(s->buf, data, n);
	if (st != NG_OK) {
		s->st = st;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

static bool method_ok(const char *m)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (m && strcmp(m, methods[i]) == 0)
			return true;
	return false;
}

static bool header_value_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return false;
	return true;
}

static CURLcode set_request_options(struct kube_client *c, CURL *h, const struct kube_request *rq,
				    struct curl_slist *headers, struct sink *sink)
{
	CURLcode rc = CURLE_OK;
	SET(CURLOPT_HTTPHEADER, headers);
	if (strcmp(rq->method, "GET") == 0) {
		SET(CURLOPT_HTTPGET, 1L);
	} else if (rq->body || strcmp(rq->method, "DELETE") != 0) {
		/* POSTFIELDS sends the body (Content-Length: 0 when there is none) and
		 * CUSTOMREQUEST the method; libcurl does not copy the body. */
		SET(CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? rq->body_len : 0));
		SET(CURLOPT_CUSTOMREQUEST, rq->method);
	} else {
		SET(CURLOPT_CUSTOMREQUEST, rq->method);
	}
	SET(CURLOPT_TIMEOUT_MS, (long)rq->timeout_ms);
	SET(CURLOPT_WRITEFUNCTION, write_body);
	SET(CURLOPT_WRITEDATA, sink);
	/* Refuses early when Content-Length already says too much. */
	SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)rq->cap_bytes);
	SET(CURLOPT_ERRORBUFFER, c->errbuf);
	return rc;
}

/* What a finished transfer means: its curl code and what the body sink saw. */
static ng_status transfer_status(struct kube_client *c, const struct kube_request *rq, CURLcode rc,
				 ng_status sink_st, struct ng_err *reterr)
{
	const char *why = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return ng_err_set(reterr, NG_ETIMEDOUT, 0, "%s %.48s: timed out after %lld ms (%s)",
				  rq->method, rq->path, (long long)rq->timeout_ms, why);
	if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && sink_st == NG_ELIMIT))
		return ng_err_set(reterr, NG_ELIMIT, 0, "%s %.48s: response larger than %zu bytes",
				  rq->method, rq->path, rq->cap_bytes);
	if (rc == CURLE_OUT_OF_MEMORY || (rc == CURLE_WRITE_ERROR && sink_st != NG_OK))
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s %.48s: out of memory", rq->method,
				  rq->path);
	if (rc != CURLE_OK) /* curl's text first: it is what a person acts on */
		return ng_err_set(reterr, NG_EIO, 0, "%s (%s %.48s)", why, rq->method, rq->path);
	return NG_OK;
}

/* One request with libcurl on the client's own easy handle, into @resp (capped). */
static ng_status curl_request(struct kube_client *c, const struct kube_request *rq,
			      struct ng_buf *resp, long *ret_http, struct ng_err *reterr)
{
	if (!c->easy) {
		c->easy = curl_easy_init();
		if (!c->easy)
			return ng_err_set(reterr, NG_ENOMEM, 0,
					  "kube client: curl_easy_init failed");
	} else {
		/* Forgets options, keeps the connection cache: the connection is reused. */
		curl_easy_reset(c->easy);
	}
	CURL *h = c->easy;
	struct curl_slist *headers = NULL;
	char *ctype = NULL;
	struct sink sink = {resp, NG_OK};
	ng_status st = kube_client_prepare(c, h, rq->path, &headers, reterr);
	if (st != NG_OK)
		goto out;
	if (rq->content_type) {
		ctype = concat3("Content-Type: ", rq->content_type, "");
		struct curl_slist *n = ctype ? curl_slist_append(headers, ctype) : NULL;
		if (!n) {
			st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
			goto out;
		}
		headers = n;
	}
	CURLcode rc = set_request_options(c, h, rq, headers, &sink);
	if (rc != CURLE_OK) {
		st = refused_option(rc, reterr);
		goto out;
	}
	c->errbuf[0] = '\0';
	rc = curl_easy_perform(h);
	st = transfer_status(c, rq, rc, sink.st, reterr);
	if (st == NG_OK)
		(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, ret_http);
out:
	/* The handle must not keep pointers to what is freed here. */
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
	(void)curl_easy_setopt(h, CURLOPT_ERRORBUFFER, (char *)NULL);
	free_headers(headers);
	free(ctype);
	return st;
}

void kube_client_set_transport(struct kube_client *c, const struct kube_transport *t)
{
	if (t)
		c->transport = *t;
	else
		c->transport = (struct kube_transport){0};
}

ng_status kube_client_request(struct kube_client *c, const char *method, const char *path,
			      const char *content_type, const char *body, size_t body_len,
			      int64_t timeout_ms, size_t cap_bytes, struct ng_buf *out,
			      long *ret_http, struct ng_err *reterr)
{
	if (!c || !out || !ret_http || !method_ok(method) || timeout_ms <= 0)
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "kube client: bad method, timeout or output argument");
	bool is_get = strcmp(method, "GET") == 0;
	if ((body && !content_type) || (body && is_get) ||
	    (content_type && !header_value_ok(content_type)) || (!body && body_len))
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "kube client: a body needs a content type and a method other "
				  "than GET");
	const struct kube_request rq = {method,   path,       content_type, body,
					body_len, timeout_ms, cap_bytes};
	struct ng_buf resp;
	ng_buf_init(&resp, cap_bytes);
	long code = 0;
	ng_status st = NG_OK;
	/* With a credential plugin, a 401 runs it again and the request is sent once more, as
	 * kubectl does; a second 401 stands. */
	for (int attempt = 0; attempt < (c->exec ? 2 : 1); attempt++) {
		if (attempt)
			ng_buf_reset(&resp);
		st = c->transport.request
			 ? c->transport.request(c->transport.ctx, &rq, &resp, &code, reterr)
			 : curl_request(c, &rq, &resp, &code, reterr);
		if (st != NG_OK || code != 401)
			break;
		if (attempt == 0) /* after the retry the 401 stands, the new credential kept */
			kube_client_invalidate_token(c);
	}
	/* An empty body still gets storage, so callers can rely on a NUL-terminated data. */
	if (st == NG_OK && ng_buf_append(&resp, "", 0) != NG_OK)
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK) {
		ng_buf_finish(out);
		*out = resp;
		ng_buf_init(&resp, 0);
		*ret_http = code;
	}
	ng_buf_finish(&resp);
	return st;
}
