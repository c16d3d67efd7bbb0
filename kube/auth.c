/* Callers authenticated by TokenReview and authorized by SubjectAccessReview (kube/auth.h). */
#include "kube/auth.h"

#include "common/alloc.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/prom.h"
#include "kube/client.h"
#include "kube/lease.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define TOKENREVIEWS "/apis/authentication.k8s.io/v1/tokenreviews"
#define SUBJECTACCESSREVIEWS "/apis/authorization.k8s.io/v1/subjectaccessreviews"

/* A review's answer echoes its spec: the token (8 KiB at most) or the user's groups and extra.
 * 1 MiB is far above both and bounds what a confused server can make us hold. */
#define RESPONSE_CAP_BYTES (1u << 20)
/* The bodies we send: the token, or a user with at most KUBE_AUTH_MAX_GROUPS groups and the
 * extra the TokenReview gave (bounded by the response cap). */
#define BODY_CAP_BYTES (2u << 20)
/* Ways per cache bucket: an entry is found among 4, and a full bucket drops its oldest. */
#define WAYS 4
#define MAX_ENTRIES_LIMIT (1u << 20)
#define MAX_INFLIGHT_LIMIT 64
#define KEY_BYTES 32

enum review { REVIEW_TOKEN, REVIEW_ACCESS, REVIEW_COUNT };

struct entry {
	uint8_t key[KEY_BYTES]; /* SHA-256 of token, verb and path */
	int64_t expires_us;     /* monotonic */
	bool used;
	uint8_t result; /* enum kube_auth_result */
	char name[KUBE_AUTH_USERNAME_MAX];
};

struct kube_auth {
	pthread_mutex_t mu;     /* the cache and the clients' busy flags */
	pthread_cond_t free_cv; /* CLOCK_MONOTONIC: a client was released */
	struct entry *entries;  /* nbuckets * ways */
	size_t nbuckets, ways;
	struct kube_client **clients;
	bool *busy;
	unsigned nclients;
	int64_t allowed_ttl_us, refused_ttl_us, timeout_ms;
	char *audience;
	int64_t (*now_mono_us)(void);
	EVP_MD *sha256;
	_Atomic uint64_t checks[KUBE_AUTH_RESULT_COUNT];
	_Atomic uint64_t hits;
	_Atomic uint64_t reviews[REVIEW_COUNT][2]; /* [review][failed] */
};

const char *kube_auth_result_str(enum kube_auth_result r)
{
	static const char *const names[] = {"allowed", "unauthenticated", "forbidden", "error"};
	return r < KUBE_AUTH_RESULT_COUNT ? names[r] : "?";
}

/* ---------------------------------------------------------------- lifecycle */

static int64_t ttl_us(int64_t ms, int64_t dflt_ms)
{
	return ms == 0 ? dflt_ms * 1000 : ms < 0 ? -1 : ms * 1000;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

static ng_status check_options(const struct kube_auth_options *o, struct ng_err *err)
{
	if (o->max_entries > MAX_ENTRIES_LIMIT)
		return ng_err_set(err, NG_EINVAL, 0, "auth: max_entries over %u",
				  MAX_ENTRIES_LIMIT);
	if (o->max_inflight > MAX_INFLIGHT_LIMIT)
		return ng_err_set(err, NG_EINVAL, 0, "auth: max_inflight over %u",
				  MAX_INFLIGHT_LIMIT);
	if (o->audience &&
	    (!o->audience[0] || !printable(o->audience) ||
	     strnlen(o->audience, KUBE_AUTH_AUDIENCE_MAX_BYTES + 1) > KUBE_AUTH_AUDIENCE_MAX_BYTES))
		return ng_err_set(err, NG_EINVAL, 0,
				  "auth: audience empty, over %d bytes or not printable ASCII",
				  KUBE_AUTH_AUDIENCE_MAX_BYTES);
	return NG_OK;
}

static bool init_sync(struct kube_auth *a)
{
	pthread_condattr_t ca;
	if (pthread_condattr_init(&ca) != 0)
		return false;
	bool ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		  pthread_cond_init(&a->free_cv, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (ok && pthread_mutex_init(&a->mu, NULL) != 0) {
		pthread_cond_destroy(&a->free_cv);
		ok = false;
	}
	return ok;
}

struct kube_auth *kube_auth_create(const struct kube_config *cfg, const struct kube_auth_options *o,
				   struct ng_err *err)
{
	static const struct kube_auth_options defaults = {0};
	o = o ? o : &defaults;
	if (check_options(o, err) != NG_OK)
		return NULL;
	struct kube_auth *a = calloc(1, sizeof(*a));
	if (!a || !init_sync(a)) {
		free(a);
		(void)ng_err_set(err, NG_ENOMEM, 0, "auth: cannot allocate its state");
		return NULL;
	}
	size_t max = o->max_entries ? o->max_entries : KUBE_AUTH_MAX_ENTRIES;
	a->ways = max < WAYS ? max : WAYS;
	a->nbuckets = max / a->ways;
	a->nclients = o->max_inflight ? o->max_inflight : KUBE_AUTH_MAX_INFLIGHT;
	a->allowed_ttl_us = ttl_us(o->allowed_ttl_ms, KUBE_AUTH_ALLOWED_TTL_MS);
	a->refused_ttl_us = ttl_us(o->refused_ttl_ms, KUBE_AUTH_REFUSED_TTL_MS);
	a->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : KUBE_AUTH_TIMEOUT_MS;
	a->now_mono_us = o->now_mono_us ? o->now_mono_us : ng_now_mono_us;
	a->entries = calloc(a->nbuckets * a->ways, sizeof(*a->entries));
	a->clients = calloc(a->nclients, sizeof(*a->clients));
	a->busy = calloc(a->nclients, sizeof(*a->busy));
	a->audience = o->audience ? strdup(o->audience) : NULL;
	a->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	bool ok = a->entries && a->clients && a->busy && a->sha256 && (a->audience || !o->audience);
	for (unsigned i = 0; ok && i < a->nclients; i++)
		ok = (a->clients[i] = kube_client_create(cfg)) != NULL;
	if (!ok) {
		kube_auth_destroy(a);
		(void)ng_err_set(err, NG_ENOMEM, 0, "auth: cannot allocate its state");
		return NULL;
	}
	return a;
}

void kube_auth_destroy(struct kube_auth *a)
{
	if (!a)
		return;
	for (unsigned i = 0; a->clients && i < a->nclients; i++)
		kube_client_destroy(a->clients[i]);
	if (a->entries)
		OPENSSL_cleanse(a->entries, a->nbuckets * a->ways * sizeof(*a->entries));
	free(a->entries);
	free(a->clients);
	free(a->busy);
	free(a->audience);
	EVP_MD_free(a->sha256);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->free_cv);
	free(a);
}

void kube_auth_set_transport(struct kube_auth *a, const struct kube_transport *t)
{
	for (unsigned i = 0; i < a->nclients; i++)
		kube_client_set_transport(a->clients[i], t);
}

/* ---------------------------------------------------------------- the request's parts */

/* RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static bool b64token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

static size_t skip_ows(const char *h, size_t i, size_t n)
{
	while (i < n && (h[i] == ' ' || h[i] == '\t'))
		i++;
	return i;
}

/* The token of `Bearer <token>` in @h: *@ret points into @h. NG_EPARSE or NG_ELIMIT. */
static ng_status bearer_token(const char *h, const char **ret, size_t *ret_len, struct ng_err *err)
{
	if (!h)
		return ng_err_set(err, NG_EPARSE, 0, "no bearer token: no Authorization header");
	/* Room for the scheme and some spaces around a token of the largest size. */
	const size_t cap = KUBE_AUTH_TOKEN_MAX_BYTES + 64;
	size_t n = strnlen(h, cap);
	if (n == cap)
		return ng_err_set(err, NG_ELIMIT, 0, "Authorization header over %zu bytes",
				  cap - 1);
	size_t i = skip_ows(h, 0, n);
	if (n - i < 6 || strncasecmp(h + i, "Bearer", 6) != 0 || (i + 6 < n && h[i + 6] != ' '))
		return ng_err_set(err, NG_EPARSE, 0,
				  "no bearer token: Authorization is not Bearer");
	i += 6;
	while (i < n && h[i] == ' ')
		i++;
	size_t start = i;
	while (i < n && b64token_char(h[i]))
		i++;
	while (i < n && h[i] == '=')
		i++;
	size_t len = i - start;
	if (len == 0 && skip_ows(h, i, n) == n)
		return ng_err_set(err, NG_EPARSE, 0, "no bearer token: empty");
	if (len == 0 || skip_ows(h, i, n) != n)
		return ng_err_set(err, NG_EPARSE, 0, "malformed bearer token");
	if (len > KUBE_AUTH_TOKEN_MAX_BYTES)
		return ng_err_set(err, NG_ELIMIT, 0, "bearer token over %d bytes",
				  KUBE_AUTH_TOKEN_MAX_BYTES);
	*ret = h + start;
	*ret_len = len;
	return NG_OK;
}

static ng_status check_attr(const char *what, const char *s, size_t max, struct ng_err *err)
{
	if (!s || !s[0] || strnlen(s, max + 1) > max || !printable(s))
		return ng_err_set(err, NG_EINVAL, 0,
				  "auth: %s empty, over %zu bytes or not printable", what, max);
	return NG_OK;
}

/* SHA-256 of token, verb and path. None holds a newline (checked), so the joined text is
 * unambiguous. */
static ng_status cache_key(struct kube_auth *a, const char *tok, size_t len, const char *verb,
			   const char *path, uint8_t key[KEY_BYTES], struct ng_err *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned n = 0;
	bool ok = ctx && EVP_DigestInit_ex(ctx, a->sha256, NULL) &&
		  EVP_DigestUpdate(ctx, tok, len) && EVP_DigestUpdate(ctx, "\n", 1) &&
		  EVP_DigestUpdate(ctx, verb, strlen(verb)) && EVP_DigestUpdate(ctx, "\n", 1) &&
		  EVP_DigestUpdate(ctx, path, strlen(path)) && EVP_DigestFinal_ex(ctx, key, &n) &&
		  n == KEY_BYTES;
	EVP_MD_CTX_free(ctx);
	return ok ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "auth: SHA-256 failed");
}

/* ---------------------------------------------------------------- the cache */

static struct entry *bucket(struct kube_auth *a, const uint8_t key[KEY_BYTES])
{
	uint64_t h;
	memcpy(&h, key, sizeof(h));
	return &a->entries[(h % a->nbuckets) * a->ways];
}

/* A live entry for @key, copied out: true and *@ret_result, @name (KUBE_AUTH_USERNAME_MAX). */
static bool cache_get(struct kube_auth *a, const uint8_t key[KEY_BYTES],
		      enum kube_auth_result *ret_result, char *name)
{
	bool hit = false;
	pthread_mutex_lock(&a->mu);
	int64_t now = a->now_mono_us();
	struct entry *b = bucket(a, key);
	for (size_t w = 0; w < a->ways && !hit; w++) {
		if (!b[w].used || b[w].expires_us <= now || memcmp(b[w].key, key, KEY_BYTES) != 0)
			continue;
		hit = true;
		*ret_result = (enum kube_auth_result)b[w].result;
		memcpy(name, b[w].name, KUBE_AUTH_USERNAME_MAX);
	}
	pthread_mutex_unlock(&a->mu);
	return hit;
}

/* Keeps @result for @key: in its own slot, a free or expired one, or the one expiring first. */
static void cache_put(struct kube_auth *a, const uint8_t key[KEY_BYTES],
		      enum kube_auth_result result, const char *name)
{
	int64_t ttl = result == KUBE_AUTH_ALLOWED ? a->allowed_ttl_us : a->refused_ttl_us;
	if (result == KUBE_AUTH_ERROR || ttl < 0)
		return;
	pthread_mutex_lock(&a->mu);
	int64_t now = a->now_mono_us();
	struct entry *b = bucket(a, key), *slot = NULL;
	for (size_t w = 0; w < a->ways && !slot; w++)
		if (b[w].used && memcmp(b[w].key, key, KEY_BYTES) == 0)
			slot = &b[w];
	for (size_t w = 0; w < a->ways && !slot; w++)
		if (!b[w].used || b[w].expires_us <= now)
			slot = &b[w];
	if (!slot) {
		slot = b;
		for (size_t w = 1; w < a->ways; w++)
			if (b[w].expires_us < slot->expires_us)
				slot = &b[w];
	}
	memcpy(slot->key, key, KEY_BYTES);
	slot->expires_us = now + ttl;
	slot->used = true;
	slot->result = (uint8_t)result;
	ng_fmt(slot->name, sizeof(slot->name), "%s", name);
	pthread_mutex_unlock(&a->mu);
}

size_t kube_auth_cache_entries(struct kube_auth *a)
{
	size_t n = 0;
	pthread_mutex_lock(&a->mu);
	int64_t now = a->now_mono_us();
	for (size_t i = 0; i < a->nbuckets * a->ways; i++)
		n += a->entries[i].used && a->entries[i].expires_us > now;
	pthread_mutex_unlock(&a->mu);
	return n;
}

/* ---------------------------------------------------------------- clients */

/* A free client, waiting up to the request timeout for one. NULL when none freed in time. */
static struct kube_client *acquire(struct kube_auth *a, unsigned *ret_i)
{
	int64_t deadline_us = ng_now_mono_us() + a->timeout_ms * 1000;
	struct timespec ts = {.tv_sec = (time_t)(deadline_us / 1000000),
			      .tv_nsec = (long)(deadline_us % 1000000) * 1000};
	struct kube_client *c = NULL;
	pthread_mutex_lock(&a->mu);
	for (;;) {
		for (unsigned i = 0; i < a->nclients && !c; i++) {
			if (!a->busy[i]) {
				a->busy[i] = true;
				c = a->clients[i];
				*ret_i = i;
			}
		}
		if (c || pthread_cond_timedwait(&a->free_cv, &a->mu, &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&a->mu);
	return c;
}

static void release(struct kube_auth *a, unsigned i)
{
	pthread_mutex_lock(&a->mu);
	a->busy[i] = false;
	pthread_cond_signal(&a->free_cv);
	pthread_mutex_unlock(&a->mu);
}

/* ---------------------------------------------------------------- the reviews */

/* Who a TokenReview says the caller is; every pointer borrowed from the answer's tree. */
struct who {
	const char *name, *uid;
	const cJSON *groups, *extra; /* NULL: none */
};

/* Room reserved in a body buffer before the token is written, so it never moves (a realloc
 * would leave a copy of the token behind in freed memory): the JSON around the token and the
 * audience (KUBE_AUTH_AUDIENCE_MAX_BYTES) fit in it. */
#define TOKEN_BODY_SLACK 2048

static ng_status token_review_body(const struct kube_auth *a, const char *tok, size_t len,
				   struct ng_buf *b)
{
	static const char zeros[256];
	ng_status st = NG_OK;
	for (size_t n = 0; st == NG_OK && n < len + TOKEN_BODY_SLACK; n += sizeof(zeros))
		st = ng_buf_append(b, zeros, sizeof(zeros));
	ng_buf_reset(b);
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "authentication.k8s.io/v1");
	ng_jw_kstr(&w, "kind", "TokenReview");
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_key(&w, "token");
	ng_jw_strn(&w, tok, len);
	if (a->audience) {
		ng_jw_key(&w, "audiences");
		ng_jw_arr(&w);
		ng_jw_str(&w, a->audience);
		ng_jw_arr_end(&w);
	}
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	ng_status wst = ng_jw_finish(&w);
	return st != NG_OK ? st : wst;
}

/* A list of strings, or absent/null (true); at most @max of them when @max > 0. */
static bool string_list(const cJSON *v, int max)
{
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsArray(v) || (max > 0 && cJSON_GetArraySize(v) > max))
		return false;
	const cJSON *s;
	cJSON_ArrayForEach(s, v)
	{
		if (!cJSON_IsString(s))
			return false;
	}
	return true;
}

/* user.extra: an object of string lists, or absent/null. */
static bool extra_map(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsObject(v))
		return false;
	const cJSON *m;
	cJSON_ArrayForEach(m, v)
	{
		if (!string_list(m, 0))
			return false;
	}
	return true;
}

static bool has_string(const cJSON *list, const char *s)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, list)
	{
		if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0)
			return true;
	}
	return false;
}

/* A TokenReview's status: ALLOWED here means authenticated as *@ret (the SubjectAccessReview
 * decides); UNAUTHENTICATED; ERROR for an answer that is not a TokenReview's. */
static enum kube_auth_result decode_token_review(const struct kube_auth *a, const cJSON *root,
						 struct who *ret, struct ng_err *err)
{
	const cJSON *status = ng_json_get(root, "status");
	const cJSON *au = ng_json_get(status, "authenticated");
	if (au && !cJSON_IsBool(au) && !cJSON_IsNull(au)) {
		(void)ng_err_set(err, NG_EPARSE, 0,
				 "TokenReview: status.authenticated: not a bool");
		return KUBE_AUTH_ERROR;
	}
	if (!cJSON_IsTrue(au)) {
		const char *e = ng_json_str(status, "error");
		(void)ng_err_set(err, NG_EFORBIDDEN, 0, "token not authenticated: %.200s",
				 e && e[0] ? e : "the TokenReview says no");
		return KUBE_AUTH_UNAUTHENTICATED;
	}
	const cJSON *user = ng_json_get(status, "user");
	*ret = (struct who){ng_json_str(user, "username"), ng_json_str(user, "uid"),
			    ng_json_get(user, "groups"), ng_json_get(user, "extra")};
	if (!ret->name || !ret->name[0]) {
		(void)ng_err_set(err, NG_EPARSE, 0,
				 "TokenReview: authenticated without a username");
		return KUBE_AUTH_ERROR;
	}
	if (!string_list(ret->groups, KUBE_AUTH_MAX_GROUPS) || !extra_map(ret->extra)) {
		(void)ng_err_set(err, NG_ELIMIT, 0,
				 "TokenReview: user.groups not a list of at most %d strings, or "
				 "user.extra not a map of string lists",
				 KUBE_AUTH_MAX_GROUPS);
		return KUBE_AUTH_ERROR;
	}
	const cJSON *auds = ng_json_get(status, "audiences");
	if (a->audience && (!string_list(auds, 0) || !has_string(auds, a->audience))) {
		(void)ng_err_set(err, NG_EFORBIDDEN, 0,
				 "token not authenticated: not for audience %s", a->audience);
		return KUBE_AUTH_UNAUTHENTICATED;
	}
	return KUBE_AUTH_ALLOWED;
}

static void write_list(struct ng_jw *w, const char *key, const cJSON *list)
{
	const cJSON *v;
	ng_jw_key(w, key);
	ng_jw_arr(w);
	cJSON_ArrayForEach(v, list)
	{
		ng_jw_str(w, v->valuestring);
	}
	ng_jw_arr_end(w);
}

static ng_status access_review_body(const struct who *u, const char *verb, const char *path,
				    struct ng_buf *b)
{
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "authorization.k8s.io/v1");
	ng_jw_kstr(&w, "kind", "SubjectAccessReview");
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_key(&w, "nonResourceAttributes");
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "path", path);
	ng_jw_kstr(&w, "verb", verb);
	ng_jw_obj_end(&w);
	ng_jw_kstr(&w, "user", u->name);
	if (cJSON_IsArray(u->groups))
		write_list(&w, "groups", u->groups);
	if (u->uid && u->uid[0])
		ng_jw_kstr(&w, "uid", u->uid);
	if (cJSON_IsObject(u->extra) && cJSON_GetArraySize(u->extra) > 0) {
		const cJSON *m;
		ng_jw_key(&w, "extra");
		ng_jw_obj(&w);
		cJSON_ArrayForEach(m, u->extra)
		{
			if (cJSON_IsArray(m))
				write_list(&w, m->string, m);
		}
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* A SubjectAccessReview's status, as the API server's webhook authorizer reads one: allowed
 * and denied together is an error, allowed is ALLOWED, anything else (denied, no opinion) is
 * FORBIDDEN, with "forbidden: User "@name" cannot @what" and the reviewer's reason in @err. */
static enum kube_auth_result decode_access_review(const cJSON *root, const char *name,
						  const char *what, struct ng_err *err)
{
	const cJSON *status = ng_json_get(root, "status");
	const cJSON *allowed = ng_json_get(status, "allowed");
	const cJSON *denied = ng_json_get(status, "denied");
	if ((allowed && !cJSON_IsBool(allowed)) || (denied && !cJSON_IsBool(denied))) {
		(void)ng_err_set(err, NG_EPARSE, 0,
				 "SubjectAccessReview: status.allowed or denied: not a bool");
		return KUBE_AUTH_ERROR;
	}
	if (cJSON_IsTrue(allowed) && cJSON_IsTrue(denied)) {
		(void)ng_err_set(err, NG_EPARSE, 0, "SubjectAccessReview: both allowed and denied");
		return KUBE_AUTH_ERROR;
	}
	if (cJSON_IsTrue(allowed))
		return KUBE_AUTH_ALLOWED;
	const char *reason = ng_json_str(status, "reason");
	const char *eval = ng_json_str(status, "evaluationError");
	(void)ng_err_set(err, NG_EFORBIDDEN, 0,
			 "forbidden: User \"%.100s\" cannot %.200s%s%.80s%s%.60s", name, what,
			 reason && reason[0] ? ": " : "", reason ? reason : "",
			 eval && eval[0] ? "; evaluation error: " : "", eval ? eval : "");
	return KUBE_AUTH_FORBIDDEN;
}

/* Drops a TokenReview's tree, wiping the token it echoes. */
static void drop_tree(cJSON *root)
{
	cJSON *tok = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(root, "spec"), "token");
	if (cJSON_IsString(tok))
		OPENSSL_cleanse(tok->valuestring, strlen(tok->valuestring));
	cJSON_Delete(root);
}

/* POSTs @body as review @r and parses the answer into *@ret_root (cJSON_Delete()); @resp is
 * wiped afterwards. NG_EKUBE for a non-2xx answer, NG_EPARSE for one without a status, and the
 * transport's errors, each with the review's kind in front. */
static ng_status post_review(struct kube_auth *a, struct kube_client *c, enum review r,
			     const struct ng_buf *body, struct ng_buf *resp, cJSON **ret_root,
			     struct ng_err *err)
{
	static const char *const paths[] = {TOKENREVIEWS, SUBJECTACCESSREVIEWS};
	static const char *const kinds[] = {"TokenReview", "SubjectAccessReview"};
	struct ng_err e = {0};
	cJSON *root = NULL;
	long http = 0;
	ng_status st =
	    kube_client_request(c, "POST", paths[r], "application/json", body->data, body->len,
				a->timeout_ms, RESPONSE_CAP_BYTES, resp, &http, &e);
	if (st == NG_OK && (http < 200 || http > 299)) {
		char msg[160];
		kube_status_message(resp->data, resp->len, msg, sizeof(msg));
		st = ng_err_set(&e, NG_EKUBE, 0, "HTTP %ld: %s", http, msg);
	}
	if (st == NG_OK)
		st = ng_json_parse(resp->data ? resp->data : "", resp->len, NULL, &root, &e);
	if (st == NG_OK && !cJSON_IsObject(ng_json_get(root, "status")))
		st = ng_err_set(&e, NG_EPARSE, 0, "the answer has no status");
	if (resp->data)
		OPENSSL_cleanse(resp->data, resp->len);
	ng_prom_add(&a->reviews[r][st != NG_OK], 1);
	if (st != NG_OK) {
		drop_tree(root);
		return ng_err_set(err, st, e.offset, "%s: %s", kinds[r], e.msg);
	}
	*ret_root = root;
	return NG_OK;
}

/* Asks the API server on @c: a TokenReview, then a SubjectAccessReview for the user it names
 * (copied into @name). */
static enum kube_auth_result ask(struct kube_auth *a, struct kube_client *c, const char *tok,
				 size_t len, const char *verb, const char *path, char *name,
				 struct ng_err *err)
{
	struct ng_buf body, resp;
	ng_buf_init(&body, BODY_CAP_BYTES);
	ng_buf_init(&resp, RESPONSE_CAP_BYTES);
	cJSON *tr = NULL, *sar = NULL;
	struct who u = {0};
	enum kube_auth_result r = KUBE_AUTH_ERROR;
	ng_status st = token_review_body(a, tok, len, &body);
	if (st != NG_OK)
		(void)ng_err_set(err, st, 0, "TokenReview: body: %s", ng_status_str(st));
	else if (post_review(a, c, REVIEW_TOKEN, &body, &resp, &tr, err) == NG_OK)
		r = decode_token_review(a, tr, &u, err);
	if (body.data)
		OPENSSL_cleanse(body.data, body.alloc);
	ng_buf_reset(&body);
	if (r == KUBE_AUTH_ALLOWED) {
		ng_fmt(name, KUBE_AUTH_USERNAME_MAX, "%s", u.name);
		r = KUBE_AUTH_ERROR;
		st = access_review_body(&u, verb, path, &body);
		if (st != NG_OK)
			(void)ng_err_set(err, st, 0, "SubjectAccessReview: body: %s",
					 ng_status_str(st));
		else if (post_review(a, c, REVIEW_ACCESS, &body, &resp, &sar, err) == NG_OK) {
			char what[KUBE_AUTH_VERB_MAX_BYTES + 80];
			ng_fmt(what, sizeof(what), "%s path \"%.60s\"", verb, path);
			r = decode_access_review(sar, name, what, err);
		}
	}
	drop_tree(tr);
	cJSON_Delete(sar);
	ng_buf_finish(&body);
	ng_buf_finish(&resp);
	return r;
}

/* ---------------------------------------------------------------- the check */

static enum kube_auth_result check(struct kube_auth *a, const char *header, const char *verb,
				   const char *path, char *name, struct ng_err *err)
{
	const char *tok = NULL;
	size_t len = 0;
	uint8_t key[KEY_BYTES];
	enum kube_auth_result r;
	if (check_attr("verb", verb, KUBE_AUTH_VERB_MAX_BYTES, err) != NG_OK ||
	    check_attr("path", path, KUBE_AUTH_PATH_MAX_BYTES, err) != NG_OK)
		return KUBE_AUTH_ERROR;
	if (bearer_token(header, &tok, &len, err) != NG_OK)
		return KUBE_AUTH_UNAUTHENTICATED;
	if (cache_key(a, tok, len, verb, path, key, err) != NG_OK)
		return KUBE_AUTH_ERROR;
	if (cache_get(a, key, &r, name)) {
		ng_prom_add(&a->hits, 1);
		if (r == KUBE_AUTH_FORBIDDEN)
			(void)ng_err_set(
			    err, NG_EFORBIDDEN, 0,
			    "forbidden: User \"%.100s\" cannot %s path \"%.60s\" (cached)", name,
			    verb, path);
		else if (r == KUBE_AUTH_UNAUTHENTICATED)
			(void)ng_err_set(err, NG_EFORBIDDEN, 0, "token not authenticated (cached)");
		return r;
	}
	unsigned i = 0;
	struct kube_client *c = acquire(a, &i);
	if (!c) {
		(void)ng_err_set(err, NG_ETIMEDOUT, 0,
				 "auth: %u checks asked the API server for longer than %lld ms",
				 a->nclients, (long long)a->timeout_ms);
		return KUBE_AUTH_ERROR;
	}
	r = ask(a, c, tok, len, verb, path, name, err);
	release(a, i);
	cache_put(a, key, r, name);
	return r;
}

enum kube_auth_result kube_auth_check(struct kube_auth *a, const char *authorization_header,
				      const char *verb, const char *path,
				      struct kube_auth_user *ret_user, struct ng_err *err)
{
	char name[KUBE_AUTH_USERNAME_MAX] = "";
	enum kube_auth_result r = check(a, authorization_header, verb, path, name, err);
	ng_prom_add(&a->checks[r], 1);
	if (ret_user)
		ng_fmt(ret_user->name, sizeof(ret_user->name), "%s", name);
	return r;
}

/* ---------------------------------------------------------------- resource checks */

static bool digest_str(EVP_MD_CTX *ctx, const char *s)
{
	/* Each string with its NUL: no string holds one, so the sequence is unambiguous. */
	return EVP_DigestUpdate(ctx, s ? s : "", strlen(s ? s : "") + 1) != 0;
}

static bool digest_list(EVP_MD_CTX *ctx, const char *const *v, size_t n)
{
	bool ok = EVP_DigestUpdate(ctx, &n, sizeof(n)) != 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = digest_str(ctx, v[i]);
	return ok;
}

/* SHA-256 of the subject and the attributes. The leading "R" keeps these keys apart from the
 * token checks' (whose first byte is a token character). */
static ng_status resource_key(struct kube_auth *a, const struct kube_auth_subject *who,
			      const struct kube_auth_resource *what, uint8_t key[KEY_BYTES],
			      struct ng_err *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned n = 0;
	bool ok = ctx && EVP_DigestInit_ex(ctx, a->sha256, NULL) && digest_str(ctx, "R") &&
		  digest_str(ctx, who->user) && digest_str(ctx, who->uid) &&
		  digest_list(ctx, who->groups, who->ngroups) &&
		  EVP_DigestUpdate(ctx, &who->nextra, sizeof(who->nextra));
	for (size_t i = 0; ok && i < who->nextra; i++)
		ok = digest_str(ctx, who->extra[i].key) &&
		     digest_list(ctx, who->extra[i].values, who->extra[i].nvalues);
	const char *const attrs[] = {what->verb,        what->group, what->resource,
				     what->subresource, what->ns,    what->name};
	for (size_t i = 0; ok && i < sizeof(attrs) / sizeof(attrs[0]); i++)
		ok = digest_str(ctx, attrs[i]);
	ok = ok && EVP_DigestFinal_ex(ctx, key, &n) && n == KEY_BYTES;
	EVP_MD_CTX_free(ctx);
	return ok ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "auth: SHA-256 failed");
}

static bool strs_printable(const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i] || !printable(v[i]))
			return false;
	return true;
}

static ng_status check_subject(const struct kube_auth_subject *who,
			       const struct kube_auth_resource *what, struct ng_err *err)
{
	bool ok = who->user && who->user[0] && printable(who->user) &&
		  (!who->uid || printable(who->uid)) && who->ngroups <= KUBE_AUTH_MAX_GROUPS &&
		  who->nextra <= KUBE_AUTH_MAX_GROUPS && strs_printable(who->groups, who->ngroups);
	for (size_t i = 0; ok && i < who->nextra; i++)
		ok = who->extra[i].key && printable(who->extra[i].key) &&
		     who->extra[i].nvalues <= KUBE_AUTH_MAX_GROUPS &&
		     strs_printable(who->extra[i].values, who->extra[i].nvalues);
	if (!ok)
		return ng_err_set(err, NG_EINVAL, 0,
				  "auth: a user without a name, with more than %d groups or extra "
				  "values, or with bytes outside printable ASCII",
				  KUBE_AUTH_MAX_GROUPS);
	ng_status st = check_attr("verb", what->verb, KUBE_AUTH_VERB_MAX_BYTES, err);
	st = st ? st : check_attr("resource", what->resource, KUBE_AUTH_PATH_MAX_BYTES, err);
	const char *const opt[] = {what->group, what->subresource, what->ns, what->name};
	for (size_t i = 0; st == NG_OK && i < sizeof(opt) / sizeof(opt[0]); i++)
		if (opt[i] && opt[i][0])
			st = check_attr("attribute", opt[i], KUBE_AUTH_PATH_MAX_BYTES, err);
	return st;
}

static void write_strs(struct ng_jw *w, const char *key, const char *const *v, size_t n)
{
	ng_jw_key(w, key);
	ng_jw_arr(w);
	for (size_t i = 0; i < n; i++)
		ng_jw_str(w, v[i]);
	ng_jw_arr_end(w);
}

static void opt_kstr(struct ng_jw *w, const char *key, const char *v)
{
	if (v && v[0])
		ng_jw_kstr(w, key, v);
}

static ng_status resource_review_body(const struct kube_auth_subject *who,
				      const struct kube_auth_resource *what, struct ng_buf *b)
{
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "authorization.k8s.io/v1");
	ng_jw_kstr(&w, "kind", "SubjectAccessReview");
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_key(&w, "resourceAttributes");
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "verb", what->verb);
	opt_kstr(&w, "group", what->group);
	ng_jw_kstr(&w, "resource", what->resource);
	opt_kstr(&w, "subresource", what->subresource);
	opt_kstr(&w, "namespace", what->ns);
	opt_kstr(&w, "name", what->name);
	ng_jw_obj_end(&w);
	ng_jw_kstr(&w, "user", who->user);
	if (who->ngroups)
		write_strs(&w, "groups", who->groups, who->ngroups);
	opt_kstr(&w, "uid", who->uid);
	if (who->nextra) {
		ng_jw_key(&w, "extra");
		ng_jw_obj(&w);
		for (size_t i = 0; i < who->nextra; i++)
			write_strs(&w, who->extra[i].key, who->extra[i].values,
				   who->extra[i].nvalues);
		ng_jw_obj_end(&w);
	}
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* "create nodedisruptions/privileged-operation in nodegate.io" into @out. */
static void describe(const struct kube_auth_resource *what, char *out, size_t cap)
{
	bool sub = what->subresource && what->subresource[0];
	bool grp = what->group && what->group[0];
	ng_fmt(out, cap, "%.32s %.100s%s%.60s%s%.60s", what->verb, what->resource, sub ? "/" : "",
	       sub ? what->subresource : "", grp ? " in API group " : "", grp ? what->group : "");
}

static enum kube_auth_result ask_resource(struct kube_auth *a, struct kube_client *c,
					  const struct kube_auth_subject *who,
					  const struct kube_auth_resource *what, struct ng_err *err)
{
	struct ng_buf body, resp;
	ng_buf_init(&body, BODY_CAP_BYTES);
	ng_buf_init(&resp, RESPONSE_CAP_BYTES);
	cJSON *sar = NULL;
	enum kube_auth_result r = KUBE_AUTH_ERROR;
	ng_status st = resource_review_body(who, what, &body);
	if (st != NG_OK)
		(void)ng_err_set(err, st, 0, "SubjectAccessReview: body: %s", ng_status_str(st));
	else if (post_review(a, c, REVIEW_ACCESS, &body, &resp, &sar, err) == NG_OK) {
		char d[300];
		describe(what, d, sizeof(d));
		r = decode_access_review(sar, who->user, d, err);
	}
	cJSON_Delete(sar);
	ng_buf_finish(&body);
	ng_buf_finish(&resp);
	return r;
}

enum kube_auth_result kube_auth_can(struct kube_auth *a, const struct kube_auth_subject *who,
				    const struct kube_auth_resource *what, struct ng_err *err)
{
	uint8_t key[KEY_BYTES];
	char name[KUBE_AUTH_USERNAME_MAX] = "";
	enum kube_auth_result r = KUBE_AUTH_ERROR;
	if (check_subject(who, what, err) != NG_OK || resource_key(a, who, what, key, err) != NG_OK)
		goto out;
	if (cache_get(a, key, &r, name)) {
		ng_prom_add(&a->hits, 1);
		if (r == KUBE_AUTH_FORBIDDEN) {
			char d[300];
			describe(what, d, sizeof(d));
			(void)ng_err_set(err, NG_EFORBIDDEN, 0, "User \"%.60s\" cannot %s (cached)",
					 who->user, d);
		}
		goto out;
	}
	unsigned i = 0;
	struct kube_client *c = acquire(a, &i);
	if (!c) {
		(void)ng_err_set(err, NG_ETIMEDOUT, 0,
				 "auth: %u checks asked the API server for longer than %lld ms",
				 a->nclients, (long long)a->timeout_ms);
		goto out;
	}
	r = ask_resource(a, c, who, what, err);
	release(a, i);
	cache_put(a, key, r, who->user);
out:
	ng_prom_add(&a->checks[r], 1);
	return r;
}

/* ---------------------------------------------------------------- metrics */

ng_status kube_auth_render_metrics(struct kube_auth *a, struct ng_buf *out)
{
	static const char *const reviews[] = {"tokenreview", "subjectaccessreview"};
	static const char *const outcomes[] = {"ok", "failed"};
	ng_status st = ng_prom_header(out, "nodegate_auth_checks_total", NG_PROM_COUNTER,
				      "Access checks (the admin endpoints' callers, privileged "
				      "operations, remediation authors), by result.");
	for (int r = 0; st == NG_OK && r < KUBE_AUTH_RESULT_COUNT; r++) {
		const struct ng_prom_label l[] = {
		    {"result", kube_auth_result_str((enum kube_auth_result)r)}};
		st = ng_prom_u64(out, "nodegate_auth_checks_total", l, 1,
				 ng_prom_get(&a->checks[r]));
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_auth_cache_hits_total", NG_PROM_COUNTER,
				 "Checks answered from the cache, without asking the API server.");
	st =
	    st ? st
	       : ng_prom_u64(out, "nodegate_auth_cache_hits_total", NULL, 0, ng_prom_get(&a->hits));
	st = st ? st
		: ng_prom_header(out, "nodegate_auth_reviews_total", NG_PROM_COUNTER,
				 "TokenReviews and SubjectAccessReviews sent, by outcome.");
	for (int r = 0; st == NG_OK && r < REVIEW_COUNT; r++) {
		for (int f = 0; st == NG_OK && f < 2; f++) {
			const struct ng_prom_label l[] = {{"review", reviews[r]},
							  {"outcome", outcomes[f]}};
			st = ng_prom_u64(out, "nodegate_auth_reviews_total", l, 2,
					 ng_prom_get(&a->reviews[r][f]));
		}
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_auth_cache_entries", NG_PROM_GAUGE,
				 "Cached answers that have not expired.");
	return st ? st
		  : ng_prom_u64(out, "nodegate_auth_cache_entries", NULL, 0,
				kube_auth_cache_entries(a));
}
