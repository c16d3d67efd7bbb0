/* Health-hook calls (DESIGN.md §4 step 8): the I/O of step 8, above policy, which prepares the
 * calls and judges the answers (policy/hook.h). All hooks of one decision run in parallel with
 * curl multi, each under its own timeout, TLS verified, no redirects, no proxy, the answer counted
 * up to a bound and never kept, the connected address checked (pol_hook_addr_allowed()). What a
 * call reports is a fixed word (docs/health-hooks.md): whoever writes a budget chooses where its
 * hook points, so neither the answer nor curl's error text (which names addresses and ports)
 * may reach status, Events or logs. */
#include "controller/gate_internal.h"

#include "common/buf.h"
#include "common/clock.h"
#include "policy/hook.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- the calls ---- */

/* Where a call may connect: checked on each address curl is about to connect to. */
struct addr_guard {
	const struct kube_hook_policy *policy;
	const struct kube_cidr *deny;
	size_t ndeny;
	bool refused; /* an address curl was about to connect to is not allowed */
};

struct running {
	struct addr_guard guard; /* first: CURLOPT_OPENSOCKETDATA points here */
	struct pol_hook_call *call;
	CURL *h;
	struct curl_slist *headers; /* its own: a bearer token is one budget's */
	int64_t t0_us;
	int64_t max_bytes;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct running *r = arg;
	size_t n = size * nmemb;
	(void)data; /* counted, never kept */
	r->call->bytes += (int64_t)n;
	if (r->call->bytes > r->max_bytes) {
		r->call->truncated = true;
		return 0; /* stop reading: the status line has already decided */
	}
	return n;
}

/* The address is checked here, on the address curl is about to connect to: whatever DNS
 * answered (and answers next time: rebinding), no connection to a refused address is opened. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct addr_guard *r = arg;
	(void)purpose;
	int family = 0;
	const uint8_t *bytes = NULL;
	if (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) {
		family = 4;
		bytes = (const uint8_t *)&((const struct sockaddr_in *)(const void *)&a->addr)
			    ->sin_addr;
	} else if (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6)) {
		family = 6;
		bytes = (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)&a->addr)
			    ->sin6_addr;
	}
	if (!bytes || !pol_hook_addr_allowed(r->policy, r->deny, r->ndeny, family, bytes)) {
		r->refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

/* What went wrong without an answer, in the fixed words of docs/health-hooks.md. */
static const char *failure_word(CURLcode rc, long os_errno)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return "timeout";
	case CURLE_COULDNT_RESOLVE_HOST:
		return "DNS failure";
	case CURLE_COULDNT_CONNECT:
		return os_errno == ECONNREFUSED ? "connection refused" : "connection failed";
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		return "TLS certificate not verified";
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_USE_SSL_FAILED:
		return "TLS error";
	default:
		return "connection failed";
	}
}

static void finish(struct running *r, CURLcode rc)
{
	struct pol_hook_call *c = r->call;
	c->duration_ms = (ng_now_mono_us() - r->t0_us) / 1000;
	long code = 0, os_errno = 0;
	(void)curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
	(void)curl_easy_getinfo(r->h, CURLINFO_OS_ERRNO, &os_errno);
	c->code = code;
	bool answered = code > 0 && (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && c->truncated));
	if (answered && c->phase != POL_HOOK_HEALTH) {
		/* A multistep step: exactly 200 succeeds (as Criteo's client reads it), 425 asks
		 * to be asked again at Retry-After (seconds; curl reads the date form too). */
		curl_off_t after = -1;
		c->result = code == 200   ? POL_HOOK_OK
			    : code == 425 ? POL_HOOK_LATER
					  : POL_HOOK_FAILED;
		if (code == 425 &&
		    curl_easy_getinfo(r->h, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0)
			c->retry_after_s = (int64_t)after;
		else if (code == 425)
			c->retry_after_s = -1;
		ng_fmt(c->message, sizeof(c->message), "HTTP status %ld%s", code,
		       c->truncated ? "; body too large" : "");
		return;
	}
	if (answered) {
		c->result = code >= 200 && code < 300 ? POL_HOOK_OK : POL_HOOK_FAILED;
		ng_fmt(c->message, sizeof(c->message), "HTTP status %ld%s", code,
		       c->truncated ? "; body too large" : "");
		return;
	}
	c->code = 0;
	/* No connection could be opened, and an address was refused (others may have failed). */
	if (r->guard.refused && rc == CURLE_COULDNT_CONNECT) {
		c->result = POL_HOOK_DENIED;
		ng_fmt(c->message, sizeof(c->message), "address not allowed");
		return;
	}
	c->result = rc == CURLE_OPERATION_TIMEDOUT ? POL_HOOK_TIMEOUT : POL_HOOK_ERROR;
	ng_fmt(c->message, sizeof(c->message), "%s", failure_word(rc, os_errno));
}

/* What every call out of the gate does: @url under @h's timeout and CA bundle, TLS verified,
 * no redirect followed, no proxy, each address checked by @guard. */
static bool setup_common(CURL *e, const char *url, const struct kube_hook *h, bool allow_http,
			 struct addr_guard *guard, void *priv)
{
	long ms = (long)h->timeout_s * 1000L;
	bool ok =
	    curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, allow_http ? "http,https" : "https") ==
		CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_USERAGENT, "nodegate/" NG_VERSION) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, guard) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PRIVATE, priv) == CURLE_OK;
	if (ok && h->ca) {
		struct curl_blob blob = {(void *)(uintptr_t)h->ca, h->nca, CURL_BLOB_COPY};
		ok = curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob) == CURLE_OK;
	}
	return ok;
}

/* "Expect:" keeps curl from waiting for a 100 Continue the hook may never send. */
static const char *const header_lines[] = {"Content-Type: application/json",
					   "Accept: application/json", "Expect:"};

/* @r's request headers: the common ones, and its bearer token when its hook has one. */
static ng_status headers_of(struct running *r)
{
	for (size_t i = 0; i < sizeof(header_lines) / sizeof(header_lines[0]); i++) {
		struct curl_slist *more = curl_slist_append(r->headers, header_lines[i]);
		if (!more)
			return NG_ENOMEM;
		r->headers = more;
	}
	if (!r->call->token)
		return NG_OK;
	size_t n = strlen(r->call->token) + sizeof("Authorization: Bearer ");
	char *line = malloc(n);
	if (!line)
		return NG_ENOMEM;
	ng_fmt(line, n, "Authorization: Bearer %s", r->call->token);
	struct curl_slist *more = curl_slist_append(r->headers, line);
	explicit_bzero(line, n);
	free(line);
	if (!more)
		return NG_ENOMEM;
	r->headers = more;
	return NG_OK;
}

static ng_status setup(struct running *r, const char *body, size_t len)
{
	const struct pol_hook_call *c = r->call;
	const struct kube_hook *h = c->hook;
	CURL *e = r->h;
	if (c->body) {
		body = c->body;
		len = c->len;
	}
	if (headers_of(r) != NG_OK)
		return NG_ENOMEM;
	bool ok = setup_common(e, c->url ? c->url : h->url, h, r->guard.policy->allow_http,
			       &r->guard, r) &&
		  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_POST, 1L) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_WRITEDATA, r) == CURLE_OK;
	return ok ? NG_OK : NG_EIO;
}

/* A failed health hook ends the batch: the decision fails whatever the others say. A multistep
 * step never does: a budget that may be preparing must be heard to the end, or it would never
 * get its /terminate. */
static bool failed(const struct pol_hook_call *c)
{
	return c->phase == POL_HOOK_HEALTH && c->result != POL_HOOK_OK &&
	       c->result != POL_HOOK_PENDING;
}

/* The calls of one decision in flight. */
struct batch {
	CURLM *m;
	struct running *rs;
	size_t nr;
	int64_t t0_us;
};

/* Which calls a batch makes: the health hooks, the first multistep step of each budget
 * (/prepare, or /ready of a budget preparing), or the /ready that follows a /prepare. */
enum batch_of { BATCH_HEALTH, BATCH_FIRST, BATCH_THEN };

static bool in_batch(const struct pol_hook_call *calls, size_t i, enum batch_of which)
{
	bool health = calls[i].phase == POL_HOOK_HEALTH;
	bool then = !health && i > 0 && calls[i - 1].verdict == calls[i].verdict &&
		    calls[i - 1].phase == POL_HOOK_PREPARE;
	return which == BATCH_HEALTH ? health : which == BATCH_THEN ? then : !health && !then;
}

/* One easy handle per pending call of batch @which, all added to the multi handle. */
static ng_status batch_start(struct batch *b, struct pol_hook_call *calls, size_t n,
			     enum batch_of which, const struct kube_hook_policy *p,
			     const struct kube_cidr *deny, size_t ndeny, const char *body,
			     size_t len)
{
	ng_status st = NG_OK;
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		if (calls[i].result != POL_HOOK_PENDING || !in_batch(calls, i, which))
			continue;
		struct running *r = &b->rs[b->nr];
		r->call = &calls[i];
		r->guard = (struct addr_guard){p, deny, ndeny, false};
		r->max_bytes = p->max_response_bytes > 0 ? p->max_response_bytes : 65536;
		r->t0_us = b->t0_us;
		r->h = curl_easy_init();
		if (!r->h)
			return NG_ENOMEM;
		b->nr++;
		if ((st = setup(r, body, len)) == NG_OK &&
		    curl_multi_add_handle(b->m, r->h) != CURLM_OK)
			st = NG_EIO;
	}
	return st;
}

/* Drives the transfers until all @npending have ended, one failed, or @stop. */
static ng_status batch_drive(struct batch *b, size_t npending, const _Atomic bool *stop,
			     bool *ret_failed)
{
	while (npending > 0 && !*ret_failed && !atomic_load(stop)) {
		int running = 0;
		if (curl_multi_perform(b->m, &running) != CURLM_OK)
			return NG_EIO;
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(b->m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct running *r = NULL;
			(void)curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &r);
			if (!r || r->call->result != POL_HOOK_PENDING)
				continue;
			finish(r, msg->data.result);
			npending--;
			*ret_failed |= failed(r->call);
		}
		if (npending == 0 || *ret_failed)
			break;
		/* Wake at least every 100 ms to see @stop; curl's own timeouts end each call. */
		(void)curl_multi_poll(b->m, NULL, 0, 100, NULL);
	}
	return NG_OK;
}

/* Calls still running are cancelled; every handle is freed. */
static void batch_end(struct batch *b, bool any_failed)
{
	for (size_t i = 0; i < b->nr; i++) {
		struct pol_hook_call *c = b->rs[i].call;
		if (c->result == POL_HOOK_PENDING) {
			c->result = POL_HOOK_CANCELLED;
			c->duration_ms = (ng_now_mono_us() - b->t0_us) / 1000;
			ng_fmt(c->message, sizeof(c->message), "%s",
			       any_failed ? "cancelled: another health hook failed"
					  : "cancelled: nodegate is stopping");
		}
		(void)curl_multi_remove_handle(b->m, b->rs[i].h);
		curl_easy_cleanup(b->rs[i].h);
		curl_slist_free_all(b->rs[i].headers);
	}
	free(b->rs);
	if (b->m)
		(void)curl_multi_cleanup(b->m);
}

/* The pending calls of batch @which of @calls, at once. */
static ng_status call_batch(struct pol_hook_call *calls, size_t n, enum batch_of which,
			    const struct kube_hook_policy *p, const struct kube_cidr *deny,
			    size_t ndeny, const char *body, size_t len, const _Atomic bool *stop,
			    bool *ret_failed)
{
	size_t npending = 0;
	for (size_t i = 0; i < n; i++)
		npending += calls[i].result == POL_HOOK_PENDING && in_batch(calls, i, which);
	if (npending == 0)
		return NG_OK;
	struct batch b = {curl_multi_init(), calloc(npending, sizeof(struct running)), 0,
			  ng_now_mono_us()};
	ng_status st =
	    b.m && b.rs ? batch_start(&b, calls, n, which, p, deny, ndeny, body, len) : NG_ENOMEM;
	if (st == NG_OK)
		st = batch_drive(&b, npending, stop, ret_failed);
	batch_end(&b, *ret_failed);
	return st;
}

ng_status gate_hooks_call(struct pol_hook_call *calls, size_t n, const struct kube_hook_policy *p,
			  const struct kube_cidr *deny, size_t ndeny, const char *body, size_t len,
			  const _Atomic bool *stop)
{
	bool any_failed = false;
	ng_status st =
	    call_batch(calls, n, BATCH_HEALTH, p, deny, ndeny, body, len, stop, &any_failed);
	/* The multistep steps only once every health hook answered healthy. */
	if (st == NG_OK && !any_failed)
		st =
		    call_batch(calls, n, BATCH_FIRST, p, deny, ndeny, body, len, stop, &any_failed);
	/* /ready right after each /prepare that answered 200; not asked after any other. */
	for (size_t i = 1; st == NG_OK && !any_failed && i < n; i++)
		if (in_batch(calls, i, BATCH_THEN) && calls[i].result == POL_HOOK_PENDING &&
		    calls[i - 1].result != POL_HOOK_OK) {
			calls[i].result = POL_HOOK_CANCELLED;
			ng_fmt(calls[i].message, sizeof(calls[i].message),
			       "not asked: /prepare did not answer 200");
		}
	if (st == NG_OK && !any_failed)
		st = call_batch(calls, n, BATCH_THEN, p, deny, ndeny, body, len, stop, &any_failed);
	for (size_t i = 0; st == NG_OK && any_failed && i < n; i++)
		if (calls[i].result == POL_HOOK_PENDING) {
			calls[i].result = POL_HOOK_CANCELLED;
			ng_fmt(calls[i].message, sizeof(calls[i].message),
			       "not called: a health hook failed");
		}
	return st;
}

/* ---- one GET (the alert gate) ---- */

struct fetch {
	struct addr_guard guard; /* first: CURLOPT_OPENSOCKETDATA points here */
	struct ng_buf *body;
	bool too_large;
};

static size_t on_fetch_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct fetch *f = arg;
	size_t n = size * nmemb;
	if (ng_buf_append(f->body, data, n) != NG_OK) {
		f->too_large = true;
		return 0; /* stop reading: a bounded answer or none */
	}
	return n;
}

ng_status gate_http_get(const char *url, const struct kube_hook *target,
			const struct kube_hook_policy *p, const struct kube_cidr *deny,
			size_t ndeny, const _Atomic bool *stop, struct ng_buf *body, long *ret_code,
			const char **reterr_word)
{
	struct fetch f = {{p, deny, ndeny, false}, body, false};
	struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
	CURLM *m = curl_multi_init();
	CURL *e = curl_easy_init();
	const char *word = "connection failed";
	ng_status st = NG_EIO;
	if (!headers || !m || !e) {
		word = "out of memory";
		st = NG_ENOMEM;
		goto out;
	}
	if (!setup_common(e, url, target, false, &f.guard, &f) ||
	    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_fetch_body) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_WRITEDATA, &f) != CURLE_OK ||
	    curl_multi_add_handle(m, e) != CURLM_OK)
		goto out;
	CURLcode rc = CURLE_OK;
	bool done = false;
	while (!done && !atomic_load(stop)) {
		int running = 0;
		if (curl_multi_perform(m, &running) != CURLM_OK)
			goto out;
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left)))
			if (msg->msg == CURLMSG_DONE) {
				rc = msg->data.result;
				done = true;
			}
		/* Wake at least every 100 ms to see @stop; curl's own timeout ends the call. */
		if (!done)
			(void)curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	if (!done) {
		word = "cancelled";
		goto out;
	}
	long code = 0, os_errno = 0;
	(void)curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	(void)curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
	if (f.too_large) {
		word = "answer too large";
		st = NG_ELIMIT;
	} else if (rc == CURLE_OK && code > 0) {
		*ret_code = code;
		st = NG_OK;
	} else if (f.guard.refused && rc == CURLE_COULDNT_CONNECT) {
		word = "address not allowed";
		st = NG_EFORBIDDEN;
	} else {
		word = failure_word(rc, os_errno);
		st = rc == CURLE_OPERATION_TIMEDOUT ? NG_ETIMEDOUT : NG_EIO;
	}
out:
	if (st != NG_OK)
		*reterr_word = word;
	if (m && e)
		(void)curl_multi_remove_handle(m, e);
	curl_easy_cleanup(e);
	if (m)
		(void)curl_multi_cleanup(m);
	curl_slist_free_all(headers);
	return st;
}
