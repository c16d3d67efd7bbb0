#include "policy/hook.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

const char *pol_hook_result_str(enum pol_hook_result r)
{
	static const char *const names[] = {"pending", "ok",     "failed",   "timeout",
					    "error",   "denied", "cancelled"};
	return (size_t)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

void pol_hook_policy_from(const struct kube_snapshot *s, struct kube_hook_policy *ret)
{
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	if (ngc && !ngc->invalid) {
		*ret = ngc->hooks;
		return;
	}
	/* Without a readable config: the defaults of DESIGN.md §3.4. (An unreadable one pauses
	 * the gate, so no hook is called under it.) */
	*ret = (struct kube_hook_policy){.allow_service_refs = true, .max_response_bytes = 65536};
}

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static bool host_matches(const struct kube_hook_policy *p, const struct ng_intern *pool,
			 const char *host)
{
	if (p->nhosts == 0)
		return true;
	for (uint16_t i = 0; i < p->nhosts; i++) {
		char pat[256];
		ng_fmt(pat, sizeof(pat), "%s", ng_intern_str(pool, p->hosts[i], NULL));
		lower(pat);
		if (fnmatch(pat, host, 0) == 0)
			return true;
	}
	return false;
}

ng_status pol_hook_allowed(const struct kube_hook *h, const struct kube_hook_policy *p,
			   const struct ng_intern *pool, struct ng_err *reterr)
{
	if (h->error != NG_INTERN_NONE)
		return ng_err_set(reterr, NG_EPARSE, 0, "hook is invalid: %s",
				  ng_intern_str(pool, h->error, NULL));
	if (h->service && !p->allow_service_refs)
		return ng_err_set(reterr, NG_EFORBIDDEN, 0,
				  "hook not allowed: NodeGateConfig healthHooks.allowServiceRefs "
				  "is false");
	CURLU *u = curl_url();
	if (!u)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	char *scheme = NULL, *host = NULL, *user = NULL;
	ng_status st = NG_OK;
	if (curl_url_set(u, CURLUPART_URL, h->url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "hook is invalid: \"%.100s\" is not a URL",
				h->url);
		goto out;
	}
	lower(scheme);
	lower(host);
	if (strcmp(scheme, "https") != 0 && !(p->allow_http && strcmp(scheme, "http") == 0)) {
		st = ng_err_set(reterr, NG_EFORBIDDEN, 0,
				"hook not allowed: scheme \"%.20s\" (https only%s)", scheme,
				strcmp(scheme, "http") == 0
				    ? "; NodeGateConfig healthHooks.allowHTTP permits http"
				    : "");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		st = ng_err_set(reterr, NG_EFORBIDDEN, 0,
				"hook not allowed: the URL carries credentials");
		goto out;
	}
	/* An IPv6 literal comes back bracketed; globs are written without. */
	size_t hl = strlen(host);
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (!host_matches(p, pool, host))
		st = ng_err_set(reterr, NG_EFORBIDDEN, 0,
				"hook not allowed: host \"%.100s\" matches no NodeGateConfig "
				"healthHooks.allowedHosts",
				host);
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(u);
	return st;
}

bool pol_hook_addr_allowed(const struct kube_hook_policy *p, int family, const uint8_t *addr)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (p->ncidrs == 0)
		return true;
	if (family == 6 && memcmp(addr, v4mapped, 12) == 0) {
		family = 4;
		addr += 12;
	}
	for (uint16_t i = 0; i < p->ncidrs; i++) {
		const struct kube_cidr *c = &p->cidrs[i];
		if (c->family != family)
			continue;
		unsigned full = c->bits / 8u, rest = c->bits % 8u;
		if (memcmp(addr, c->addr, full) != 0)
			continue;
		uint8_t mask = (uint8_t)(0xffu << (8u - rest));
		if (rest && (addr[full] & mask) != (c->addr[full] & mask))
			continue;
		return true;
	}
	return false;
}

ng_status pol_hooks_prepare(const struct kube_snapshot *s, const struct pol_gate_decision *d,
			    const struct kube_hook_policy *p, struct ng_arena *arena,
			    struct pol_hook_call **ret_calls, size_t *ret_n)
{
	size_t nadb, n = 0;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &nadb);
	struct pol_hook_call *calls =
	    ng_arena_alloc(arena, (d->nverdicts ? d->nverdicts : 1) * sizeof(*calls));
	if (!calls)
		return NG_ENOMEM;
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->kind != KUBE_RES_ADBS || v->index >= nadb || !adbs[v->index].hook.present)
			continue;
		struct pol_hook_call *c = &calls[n++];
		memset(c, 0, sizeof(*c));
		c->adb = &adbs[v->index];
		c->verdict = i;
		struct ng_err why = {0};
		if (pol_hook_allowed(&c->adb->hook, p, kube_snapshot_pool(s), &why) != NG_OK) {
			ng_fmt(c->message, sizeof(c->message), "%s", why.msg);
			c->result = POL_HOOK_DENIED;
		}
	}
	*ret_calls = calls;
	*ret_n = n;
	return NG_OK;
}

/* ---- the calls ---- */

/* The start of an answer kept for the reason. */
#define KEEP_BYTES 120

struct running {
	struct pol_hook_call *call;
	const struct kube_hook_policy *policy;
	CURL *h;
	int64_t t0_us;
	int64_t max_bytes, got;
	char keep[KEEP_BYTES];
	size_t nkeep;
	char errbuf[CURL_ERROR_SIZE];
	char refused[80]; /* the address allowedCIDRs refused, when it did */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct running *r = arg;
	size_t n = size * nmemb;
	size_t k = n < KEEP_BYTES - r->nkeep ? n : KEEP_BYTES - r->nkeep;
	memcpy(r->keep + r->nkeep, data, k);
	r->nkeep += k;
	r->got += (int64_t)n;
	if (r->got > r->max_bytes) {
		r->call->truncated = true;
		return 0; /* stop reading: the status line has already decided */
	}
	return n;
}

/* allowedCIDRs is checked here, on the address curl is about to connect to: whatever DNS
 * answered, no connection to a refused address is ever opened. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct running *r = arg;
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
	if (!bytes || !pol_hook_addr_allowed(r->policy, family, bytes)) {
		char text[INET6_ADDRSTRLEN] = "?";
		if (bytes)
			(void)inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes, text,
					sizeof(text));
		ng_fmt(r->refused, sizeof(r->refused), "%s", text);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

/* Printable ASCII only, whitespace runs as one space, quoted: a hook's answer goes into
 * status, events and logs. */
static void quote_printable(const char *s, size_t n, bool more, char *out, size_t cap)
{
	size_t o = 0;
	if (cap < 8)
		return;
	out[o++] = '"';
	bool space = false;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
			space = o > 1;
			continue;
		}
		if (space)
			out[o++] = ' ';
		space = false;
		out[o++] = ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' ? (char)ch : '?';
	}
	if (more && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = '\0';
}

static void finish(struct running *r, CURLcode rc)
{
	struct pol_hook_call *c = r->call;
	c->duration_ms = (ng_now_mono_us() - r->t0_us) / 1000;
	long code = 0;
	(void)curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
	c->code = code;
	bool answered = code > 0 && (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && c->truncated));
	if (answered) {
		char quoted[KEEP_BYTES + 8];
		quote_printable(r->keep, r->nkeep, r->got > (int64_t)r->nkeep, quoted,
				sizeof(quoted));
		c->result = code >= 200 && code < 300 ? POL_HOOK_OK : POL_HOOK_FAILED;
		ng_fmt(c->message, sizeof(c->message), "HTTP %ld%s%s%s%s", code,
		       code >= 300 && code < 400 ? " (redirects are not followed)" : "",
		       r->nkeep ? ": " : "", r->nkeep ? quoted : "",
		       c->truncated ? " (truncated: longer than maxResponseBytes)" : "");
		return;
	}
	c->code = 0;
	if (r->refused[0]) {
		c->result = POL_HOOK_DENIED;
		ng_fmt(c->message, sizeof(c->message),
		       "hook not allowed: address %s is in no NodeGateConfig "
		       "healthHooks.allowedCIDRs",
		       r->refused);
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		c->result = POL_HOOK_TIMEOUT;
		ng_fmt(c->message, sizeof(c->message), "no answer within %d s (timeout)",
		       (int)c->adb->hook.timeout_s);
	} else {
		c->result = POL_HOOK_ERROR;
		bool tls = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CONNECT_ERROR ||
			   rc == CURLE_SSL_CACERT_BADFILE;
		ng_fmt(c->message, sizeof(c->message), "%s%s", tls ? "TLS: " : "",
		       r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
	}
}

static ng_status setup(struct running *r, const char *body, size_t len, struct curl_slist *headers)
{
	const struct kube_hook *h = &r->call->adb->hook;
	CURL *e = r->h;
	long ms = (long)h->timeout_s * 1000L;
	bool ok =
	    curl_easy_setopt(e, CURLOPT_URL, h->url) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR,
			     r->policy->allow_http ? "http,https" : "https") == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_USERAGENT, "nodegate/" NG_VERSION) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_POST, 1L) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_WRITEDATA, r) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf) == CURLE_OK &&
	    curl_easy_setopt(e, CURLOPT_PRIVATE, r) == CURLE_OK;
	if (ok && h->ca) {
		struct curl_blob blob = {(void *)(uintptr_t)h->ca, h->nca, CURL_BLOB_COPY};
		ok = curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob) == CURLE_OK;
	}
	return ok ? NG_OK : NG_EIO;
}

static bool failed(enum pol_hook_result r)
{
	return r != POL_HOOK_OK && r != POL_HOOK_PENDING;
}

ng_status pol_hooks_run(struct pol_hook_call *calls, size_t n, const struct kube_hook_policy *p,
			const char *body, size_t len, const _Atomic bool *stop)
{
	size_t npending = 0;
	for (size_t i = 0; i < n; i++)
		npending += calls[i].result == POL_HOOK_PENDING;
	if (npending == 0)
		return NG_OK;
	CURLM *m = curl_multi_init();
	struct running *rs = calloc(npending, sizeof(*rs));
	/* "Expect:" keeps curl from waiting for a 100 Continue the hook may never send. */
	static const char *const lines[] = {"Content-Type: application/json",
					    "Accept: application/json", "Expect:"};
	struct curl_slist *headers = NULL;
	ng_status st = m && rs ? NG_OK : NG_ENOMEM;
	for (size_t i = 0; st == NG_OK && i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct curl_slist *more = curl_slist_append(headers, lines[i]);
		if (!more)
			st = NG_ENOMEM;
		else
			headers = more;
	}
	size_t nr = 0;
	int64_t t0 = ng_now_mono_us();
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		if (calls[i].result != POL_HOOK_PENDING)
			continue;
		struct running *r = &rs[nr];
		r->call = &calls[i];
		r->policy = p;
		r->max_bytes = p->max_response_bytes > 0 ? p->max_response_bytes : 65536;
		r->t0_us = t0;
		r->h = curl_easy_init();
		if (!r->h) {
			st = NG_ENOMEM;
			break;
		}
		nr++;
		if ((st = setup(r, body, len, headers)) == NG_OK &&
		    curl_multi_add_handle(m, r->h) != CURLM_OK)
			st = NG_EIO;
	}
	bool any_failed = false;
	while (st == NG_OK && npending > 0 && !any_failed && !atomic_load(stop)) {
		int running = 0;
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			st = NG_EIO;
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct running *r = NULL;
			(void)curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &r);
			if (!r || r->call->result != POL_HOOK_PENDING)
				continue;
			finish(r, msg->data.result);
			npending--;
			any_failed |= failed(r->call->result);
		}
		if (npending == 0 || any_failed)
			break;
		/* Wake at least every 100 ms to see @stop; curl's own timeouts end each call. */
		(void)curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (size_t i = 0; i < nr; i++) {
		if (rs[i].call->result == POL_HOOK_PENDING) {
			rs[i].call->result = POL_HOOK_CANCELLED;
			rs[i].call->duration_ms = (ng_now_mono_us() - t0) / 1000;
			ng_fmt(rs[i].call->message, sizeof(rs[i].call->message), "%s",
			       any_failed ? "cancelled: another health hook failed"
					  : "cancelled: nodegate is stopping");
		}
		(void)curl_multi_remove_handle(m, rs[i].h);
		curl_easy_cleanup(rs[i].h);
	}
	curl_slist_free_all(headers);
	free(rs);
	if (m)
		(void)curl_multi_cleanup(m);
	return st;
}

bool pol_hooks_apply(const struct kube_snapshot *s, const struct kube_nd *nd,
		     const struct pol_hook_call *calls, size_t n, struct pol_gate_decision *d)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i].result == POL_HOOK_PENDING)
			return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		const struct pol_hook_call *c = &calls[i];
		if (c->verdict >= d->nverdicts || c->result == POL_HOOK_CANCELLED)
			continue;
		struct pol_budget_verdict *v = &d->verdicts[c->verdict];
		if (c->result == POL_HOOK_OK) {
			size_t at = strlen(v->reason);
			ng_fmt(v->reason + at, sizeof(v->reason) - at, "; health hook: %s",
			       c->message);
			continue;
		}
		v->ok = false;
		ng_fmt(v->reason, sizeof(v->reason),
		       "health hook of ApplicationDisruptionBudget %s/%s: %s",
		       ng_intern_str(pool, c->adb->b.ns, NULL),
		       ng_intern_str(pool, c->adb->b.name, NULL), c->message);
		if (!any)
			ng_fmt(d->reason, sizeof(d->reason), "%s", v->reason);
		any = true;
	}
	if (any)
		d->outcome = nd->retry ? POL_GATE_PENDING : POL_GATE_REJECT;
	return any;
}
