/* The addresses no health hook may reach besides the fixed ranges of policy/hook.c: the API
 * server's (the host of the kubeconfig server URL, and KUBERNETES_SERVICE_HOST) and this
 * process's own (every interface address, which covers its pod). Found once, when the gate is
 * created: DNS and getifaddrs are I/O, so they live here and policy gets the result. */
#include "controller/gate_internal.h"

#include "common/buf.h"
#include "common/log.h"
#include "kube/config.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* More is a broken host: the list is scanned for every connection a hook opens. */
#define MAX_DENY 256

struct deny_list {
	struct kube_cidr *a;
	size_t n, cap;
	ng_status st; /* NG_ENOMEM once an address could not be kept */
};

/* Adds the address at @bytes (AF_INET or AF_INET6 @af), normalized, once. */
static void add(struct deny_list *l, int af, const void *bytes)
{
	struct kube_cidr c = {0};
	if (af != AF_INET && af != AF_INET6)
		return;
	c.family = (uint8_t)pol_hook_addr_normalize(af == AF_INET ? 4 : 6, bytes, c.addr);
	c.bits = c.family == 4 ? 32 : 128;
	for (size_t i = 0; i < l->n; i++)
		if (memcmp(&l->a[i], &c, sizeof(c)) == 0)
			return;
	if (l->n == MAX_DENY)
		return;
	struct kube_cidr *more = ng_array_grow(l->a, &l->cap, l->n, sizeof(*more));
	if (!more) {
		l->st = NG_ENOMEM;
		return;
	}
	l->a = more;
	l->a[l->n++] = c;
}

/* Adds every address @host (a name or a literal, @what for the log) resolves to. */
static void add_host(struct deny_list *l, const char *host, const char *what)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	struct ng_logline line;
	if (rc != 0 && ng_log_begin(&line, NG_LOG_WARN, "gate",
				    "cannot resolve the API server for the health-hook address "
				    "checks; its addresses are not refused")) {
		ng_log_str(&line, "from", what);
		ng_log_str(&line, "host", host);
		ng_log_str(&line, "err", gai_strerror(rc));
		ng_log_end(&line);
	}
	for (const struct addrinfo *ai = rc == 0 ? res : NULL; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			add(l, AF_INET,
			    &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr);
		else if (ai->ai_family == AF_INET6)
			add(l, AF_INET6,
			    &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr);
	}
	if (res)
		freeaddrinfo(res);
}

/* The host of @url (an IPv6 literal without its brackets) into @buf; false when it has none. */
static bool url_host(const char *url, char *buf, size_t cap)
{
	CURLU *u = curl_url();
	char *host = NULL;
	bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
		  curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host && *host;
	if (ok) {
		size_t n = strlen(host);
		bool bracketed = host[0] == '[' && n > 2 && host[n - 1] == ']';
		ng_fmt(buf, cap, "%.*s", (int)(n - 2 * bracketed), host + bracketed);
	}
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

static void add_interfaces(struct deny_list *l)
{
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) != 0) {
		struct ng_logline line;
		if (ng_log_begin(&line, NG_LOG_WARN, "gate",
				 "cannot list this host's addresses for the health-hook address "
				 "checks; only loopback is refused"))
			ng_log_end(&line);
		return;
	}
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;
		if (sa && sa->sa_family == AF_INET)
			add(l, AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
		else if (sa && sa->sa_family == AF_INET6)
			add(l, AF_INET6,
			    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	}
	freeifaddrs(ifs);
}

/* One info line listing what was found, so an operator can see what allowedCIDRs must name. */
static void log_found(const struct deny_list *l)
{
	char text[1024] = "";
	size_t at = 0;
	for (size_t i = 0; i < l->n && at + INET6_ADDRSTRLEN + 2 < sizeof(text); i++) {
		char one[INET6_ADDRSTRLEN] = "?";
		(void)inet_ntop(l->a[i].family == 4 ? AF_INET : AF_INET6, l->a[i].addr, one,
				sizeof(one));
		ng_fmt(text + at, sizeof(text) - at, "%s%s", at ? "," : "", one);
		at += strlen(text + at);
	}
	struct ng_logline line;
	if (ng_log_begin(&line, NG_LOG_INFO, "gate",
			 "health hooks may not reach the API server or nodegate itself")) {
		ng_log_i64(&line, "count", (int64_t)l->n);
		ng_log_str(&line, "addresses", text);
		ng_log_end(&line);
	}
}

ng_status gate_hook_deny_find(const struct kube_config *kube, struct kube_cidr **ret, size_t *ret_n)
{
	struct deny_list l = {0};
	char host[256];
	if (kube && kube->server && url_host(kube->server, host, sizeof(host)))
		add_host(&l, host, "kubeconfig server");
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *env = getenv("KUBERNETES_SERVICE_HOST");
	if (env && *env)
		add_host(&l, env, "KUBERNETES_SERVICE_HOST");
	add_interfaces(&l);
	if (l.st != NG_OK) {
		free(l.a);
		return l.st;
	}
	log_found(&l);
	*ret = l.a;
	*ret_n = l.n;
	return NG_OK;
}
