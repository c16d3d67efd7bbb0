/* The libcurl request layer for the Kubernetes API server (docs/kubernetes-client.md).
 *
 * A kube_client holds what every request needs (URL base, TLS material, the bearer token and its
 * re-reading) plus one reusable curl easy handle for synchronous requests. curl handles are not
 * shared between threads: each thread that talks to the API server creates its own client (or
 * at least its own handles for kube_client_prepare()).
 *
 * Threads: kube_client_prepare() may be called from several threads at once on one client (only
 * the token cache is shared, behind a mutex held for a copy, never across file I/O).
 * kube_client_request() uses the client's own easy handle, so one thread at a time.
 * curl_global_init() must have been called (by main) before any client is created. */
#ifndef NG_KUBE_CLIENT_H
#define NG_KUBE_CLIENT_H

#include "common/status.h"

#include <curl/curl.h>

#include <stddef.h>
#include <stdint.h>

struct kube_config;
struct ng_buf;
struct kube_client;

/* Default interval between re-reads of the token file: client-go's one minute, well inside the
 * kubelet's rotation at 80 % of a projected token's one-hour lifetime (reference §3.5). */
#define KUBE_CLIENT_TOKEN_REFRESH_MS 60000

/* Connect timeout for every request: a reachable API server answers the TCP and TLS handshake
 * in milliseconds; 5 s tolerates a loaded control plane and fails fast on a black hole. */
#define KUBE_CLIENT_CONNECT_TIMEOUT_MS 5000

/**
 * Creates a client for @cfg (borrowed; everything needed is copied, so @cfg may be finished
 * afterwards). Returns NULL on OOM only; a @cfg whose server is not a valid URL makes every later
 * request fail with NG_EINVAL. Caller frees with kube_client_destroy(). Any thread.
 */
struct kube_client *kube_client_create(const struct kube_config *cfg);

/** Frees the client, its easy handle and its key material (wiped). Accepts NULL. */
void kube_client_destroy(struct kube_client *c);

/**
 * Test hook: re-read the token file when the cached token is older than @ms (default
 * KUBE_CLIENT_TOKEN_REFRESH_MS). Any thread.
 */
void kube_client_set_token_refresh_ms(struct kube_client *c, int64_t ms);

/**
 * Forces the token file to be re-read before the next request, as client-go does on a 401; with
 * a credential plugin (kube/exec_cred.h), the plugin runs again unless another request already
 * fetched a newer credential.
 * kube_client_request() calls it itself on a 401; watch code that uses kube_client_prepare()
 * calls it when it sees one. Any thread.
 */
void kube_client_invalidate_token(struct kube_client *c);

/**
 * Prepares @h (borrowed; the caller's easy handle, typically fresh or curl_easy_reset()) for a
 * request to @path (borrowed; starts with '/', e.g. "/api/v1/pods?limit=500", no spaces or
 * control bytes): URL, CA and client certificate as blobs (copied into @h), peer and host
 * verification (off only with insecure-skip-tls-verify), TLS >= 1.2, the tls-server-name (URL
 * host plus CURLOPT_CONNECT_TO), "Authorization: Bearer" (the token file is re-read when the
 * cached copy is older than the refresh interval; with a credential plugin, its token and client
 * certificate, running it when its answer is missing or expired: its errors are this call's),
 * "Accept: application/json", User-Agent
 * nodegate/NG_VERSION, CURLOPT_NOSIGNAL, a 5 s connect timeout, TCP keepalive, no redirects,
 * HTTP/1.1, only the server's scheme. It sets no total timeout (watches are long): callers do,
 * along with the method, body and write callback.
 *
 * On success *ret_headers is the header list the handle now points to; the caller frees it with
 * curl_slist_free_all() after the transfer (it holds the token: free it promptly). @h must not
 * outlive @c (the CONNECT_TO list belongs to the client). Errors: NG_EINVAL (bad @path or
 * server URL, an option libcurl refuses), NG_EIO (the token file cannot be read and no token
 * was ever read), NG_ENOMEM. On failure *ret_headers is untouched and @h may be partly set.
 */
NG_NODISCARD ng_status kube_client_prepare(struct kube_client *c, CURL *h, const char *path,
					   struct curl_slist **ret_headers, struct ng_err *reterr);

/**
 * A synchronous request on the client's own easy handle, reused across calls so the connection
 * to the API server is kept alive. @method is "GET", "POST", "PUT", "PATCH" or "DELETE"; @body
 * (borrowed, @body_len bytes, may be NULL) needs @content_type (borrowed) and is refused for
 * GET. @timeout_ms (> 0) bounds the whole request; the response body may hold at most
 * @cap_bytes.
 *
 * On success writes the HTTP status to *ret_http and replaces @out (its previous storage is
 * freed) with a buffer holding the body, NUL-terminated, with cap @cap_bytes. An HTTP error
 * status is a success here: the caller decides (a 401 also invalidates the cached token; with a
 * credential plugin it runs the plugin again and sends the request once more). On
 * failure @out and *ret_http are untouched: NG_ETIMEDOUT, NG_ELIMIT (body over @cap_bytes),
 * NG_EIO (connection, TLS or protocol failure; reterr carries curl's text, e.g. "SSL
 * certificate problem: ..."), NG_EINVAL, NG_ENOMEM. One thread at a time per client.
 */
NG_NODISCARD ng_status kube_client_request(struct kube_client *c, const char *method,
					   const char *path, const char *content_type,
					   const char *body, size_t body_len, int64_t timeout_ms,
					   size_t cap_bytes, struct ng_buf *out, long *ret_http,
					   struct ng_err *reterr);

/* One synchronous request, as kube_client_request() was asked for it. Borrowed by a transport
 * for the duration of the call. */
struct kube_request {
	const char *method, *path, *content_type; /* content_type NULL without a body */
	const char *body;                         /* NULL: none */
	size_t body_len;
	int64_t timeout_ms; /* > 0 */
	size_t cap_bytes;   /* the response body may hold at most this */
};

/* What carries kube_client_request()'s requests instead of libcurl: tests put an API server in
 * memory under a client (STYLE.md B12), so a controller's writes and their 409s are unit-tested
 * without a socket. request() appends the response body to @out (a buffer with the request's
 * cap) and writes the HTTP status; it returns what libcurl would: NG_ETIMEDOUT, NG_EIO, NG_ELIMIT,
 * NG_ENOMEM with @reterr. Called on the client's thread; @ctx is the caller's. */
struct kube_transport {
	ng_status (*request)(void *ctx, const struct kube_request *rq, struct ng_buf *out,
			     long *ret_http, struct ng_err *reterr);
	void *ctx; /* borrowed; must outlive the client or the next set_transport */
};

/**
 * Sends every later kube_client_request() of @c through @t (copied; NULL restores libcurl).
 * kube_client_prepare() (watches) is not affected. Same thread as the client's requests.
 */
void kube_client_set_transport(struct kube_client *c, const struct kube_transport *t);

#endif
