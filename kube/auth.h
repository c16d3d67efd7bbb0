/* Kubernetes authentication and authorization of callers of nodegate's side doors (/debug/cache,
 * /v1/evaluate, /metrics), as controller-runtime protects its metrics endpoint: the caller's
 * bearer token is checked with a TokenReview, and the user it names is authorized with a
 * SubjectAccessReview for {verb, path} (nonResourceAttributes). Answers are cached briefly
 * (docs/kubernetes-client.md, "Authenticating callers").
 *
 * Ownership: a kube_auth is the caller's (kube_auth_destroy()); it owns its kube clients and its
 * cache. Every pointer passed in is borrowed for the call only. The cache keeps a SHA-256 of
 * (token, verb, path), the result, its expiry and the user name: never a token.
 * Threads: kube_auth_check() and kube_auth_render_metrics() may be called from any number of
 * threads at once (the cache behind a mutex never held across a request; at most max_inflight
 * requests to the API server at a time, each on a client of its own). Create, destroy and the
 * test hooks run while no check is running.
 * Errors: a check's result says what the server answers; @err says why, for the log. */
#ifndef NG_KUBE_AUTH_H
#define NG_KUBE_AUTH_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

struct kube_config;
struct kube_transport;
struct ng_buf;
struct kube_auth;

/* Longest bearer token accepted. Projected service-account tokens are JWTs of about 1 KB; OIDC
 * tokens with many groups reach a few KB. 8 KiB also bounds the TokenReview sent for one. */
#define KUBE_AUTH_TOKEN_MAX_BYTES 8192

/* Room for a user name, NUL included: system:serviceaccount:<namespace 63>:<name 253> is 339
 * bytes. A longer name is still used whole in the SubjectAccessReview; only this copy, for the
 * log, is cut short. */
#define KUBE_AUTH_USERNAME_MAX 384

/* Groups taken from a TokenReview. Real users carry a handful; more is refused (the check is
 * KUBE_AUTH_ERROR) rather than authorized with some groups dropped. */
#define KUBE_AUTH_MAX_GROUPS 256

/* Longest verb and path checked: the caller's own route names, far below this. */
#define KUBE_AUTH_VERB_MAX_BYTES 32
#define KUBE_AUTH_PATH_MAX_BYTES 1024

/* Longest audience option: audiences are URLs or short names. */
#define KUBE_AUTH_AUDIENCE_MAX_BYTES 512

/* Defaults of struct kube_auth_options, as controller-runtime's authentication and authorization
 * caches (10 s allowed); refusals are kept shorter so a new RoleBinding takes effect soon. */
#define KUBE_AUTH_ALLOWED_TTL_MS 10000
#define KUBE_AUTH_REFUSED_TTL_MS 2000
#define KUBE_AUTH_TIMEOUT_MS 5000
#define KUBE_AUTH_MAX_ENTRIES 1024
#define KUBE_AUTH_MAX_INFLIGHT 2

struct kube_auth_options {
	int64_t allowed_ttl_ms; /* ALLOWED cached this long; 0: default, < 0: not cached */
	int64_t refused_ttl_ms; /* UNAUTHENTICATED and FORBIDDEN; 0: default, < 0: not cached */
	int64_t timeout_ms;     /* each request to the API server; 0: default */
	size_t max_entries;     /* cache bound; 0: default */
	unsigned max_inflight;  /* concurrent requests to the API server (clients); 0: default */
	const char *audience;   /* NULL: the API server's audiences; else sent in the TokenReview
				   and required in its answer (copied) */
	int64_t (*now_mono_us)(void); /* NULL: ng_now_mono_us; tests inject a clock */
};

enum kube_auth_result {
	KUBE_AUTH_ALLOWED,         /* serve the request */
	KUBE_AUTH_UNAUTHENTICATED, /* no, malformed or rejected bearer token: 401 */
	KUBE_AUTH_FORBIDDEN,       /* authenticated, but the SubjectAccessReview said no: 403 */
	KUBE_AUTH_ERROR,           /* the API server could not be asked or answered oddly: 503 */
	KUBE_AUTH_RESULT_COUNT,
};

/** "allowed", "unauthenticated", "forbidden", "error": for logs and metric labels. */
const char *kube_auth_result_str(enum kube_auth_result r);

/* Who the caller is, once authenticated. */
struct kube_auth_user {
	char name[KUBE_AUTH_USERNAME_MAX]; /* "" unless ALLOWED or FORBIDDEN; cut to fit */
};

/**
 * Creates an authenticator that talks to the API server of @cfg (borrowed; copied into clients
 * of its own) with the options @o (borrowed; NULL: every default). Returns NULL on failure with
 * @err: NG_EINVAL (max_entries or max_inflight above 1 << 20 or 64, an audience that is empty,
 * over KUBE_AUTH_AUDIENCE_MAX_BYTES or not printable ASCII), NG_ENOMEM. Any thread; free with
 * kube_auth_destroy().
 */
struct kube_auth *kube_auth_create(const struct kube_config *cfg, const struct kube_auth_options *o,
				   struct ng_err *err);

/** Frees @a, its clients and its cache (wiped). No check may be running. Accepts NULL. */
void kube_auth_destroy(struct kube_auth *a);

/**
 * May the caller whose request carried @authorization_header (the header's value, NULL when
 * absent) do @verb ("get", "post": the request method in lower case, as Kubernetes names
 * non-resource verbs) on @path (the request path, starting with '/')?
 *
 * The header must be `Bearer <token>`: the scheme in any case (RFC 7235), one or more spaces, a
 * token of the RFC 6750 alphabet (letters, digits, - . _ ~ + / then trailing =) of at most
 * KUBE_AUTH_TOKEN_MAX_BYTES, optional spaces and tabs around. A cached answer (same token, verb
 * and path, not expired) is returned without a request; otherwise a TokenReview and, when the
 * token is authenticated, a SubjectAccessReview are sent (each within the timeout) and the
 * answer is cached: ALLOWED for allowed_ttl_ms, UNAUTHENTICATED and FORBIDDEN for
 * refused_ttl_ms. ERROR is never cached. Two checks of one token at once may both ask.
 *
 * Writes the user to @ret_user (may be NULL; name "" unless authenticated). For every result but
 * ALLOWED, @err (may be NULL) says why: "no bearer token", "token not authenticated: ...",
 * "forbidden: ...", or the API server's failure (NG_ETIMEDOUT, NG_EIO, NG_EKUBE with the HTTP
 * status and message, NG_EPARSE for an answer that is not a review). ERROR with NG_EINVAL for a
 * @verb or @path that is empty, too long (KUBE_AUTH_VERB_MAX_BYTES, KUBE_AUTH_PATH_MAX_BYTES) or
 * holds bytes outside printable ASCII: a caller bug. Any thread.
 */
enum kube_auth_result kube_auth_check(struct kube_auth *a, const char *authorization_header,
				      const char *verb, const char *path,
				      struct kube_auth_user *ret_user, struct ng_err *err);

/* A user as an AdmissionReview's userInfo gives it (every pointer borrowed for the call). */
struct kube_auth_extra {
	const char *key;
	const char *const *values;
	size_t nvalues;
};
struct kube_auth_subject {
	const char *user; /* required */
	const char *uid;  /* NULL or "": none */
	const char *const *groups;
	size_t ngroups; /* at most KUBE_AUTH_MAX_GROUPS */
	const struct kube_auth_extra *extra;
	size_t nextra; /* at most KUBE_AUTH_MAX_GROUPS keys */
};

/* What is asked (resourceAttributes); NULL or "" for a field not set. */
struct kube_auth_resource {
	const char *verb, *group, *resource, *subresource, *ns, *name;
};

/* The admission checks' timeout: the webhook answers within the API server's 5 s even after
 * waiting for a free client. */
#define KUBE_AUTH_ADMISSION_TIMEOUT_MS 2000

/**
 * May @who (borrowed) do @what (borrowed)? A SubjectAccessReview with resourceAttributes for
 * exactly that user (name, uid, groups, extra), cached as kube_auth_check() caches (the key is
 * a SHA-256 of every field of both): ALLOWED, FORBIDDEN (@err: "User \"alice\" cannot create
 * resource ..."), or ERROR when the API server could not be asked (the reasons of
 * kube_auth_check(); NG_EINVAL for a subject without a user, over the bounds above, or a
 * field that is not printable ASCII). Never UNAUTHENTICATED: @who is already authenticated (the
 * API server says so in the review). Any thread.
 */
enum kube_auth_result kube_auth_can(struct kube_auth *a, const struct kube_auth_subject *who,
				    const struct kube_auth_resource *what, struct ng_err *err);

/**
 * Appends the authenticator's series to @out: nodegate_auth_checks_total{result} (every
 * check), nodegate_auth_cache_hits_total, nodegate_auth_reviews_total{review, outcome} (requests
 * to the API server) and the gauge nodegate_auth_cache_entries. NG_ELIMIT or NG_ENOMEM from the
 * buffer. Any thread.
 */
NG_NODISCARD ng_status kube_auth_render_metrics(struct kube_auth *a, struct ng_buf *out);

/** Entries in the cache that have not expired. Any thread. */
size_t kube_auth_cache_entries(struct kube_auth *a);

/**
 * Test hook: every later request of every client of @a goes through @t (copied; NULL restores
 * libcurl), as kube_client_set_transport(). No check may be running.
 */
void kube_auth_set_transport(struct kube_auth *a, const struct kube_transport *t);

#endif
