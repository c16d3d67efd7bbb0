#include "controller/leader.h"

#include "common/alloc.h"
#include "common/backoff.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/jw.h"
#include "common/log.h"
#include "kube/client.h"
#include "kube/lease.h"
#include "kube/runtime.h"
#include "kube/write.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Largest Lease response we read. A Lease is a few hundred bytes; labels, annotations and
 * managedFields add some KiB. The API server caps annotations at 256 KiB in total, so 512 KiB
 * holds any real Lease and refuses only a misdirected path. */
#define LEASE_MAX_RESPONSE_BYTES (512u * 1024u)

/* Largest request body we build: the Lease's metadata, echoed from a response bounded above,
 * plus a spec of at most a few KiB. */
#define LEASE_MAX_BODY_BYTES (LEASE_MAX_RESPONSE_BYTES + 8192u)

/* Attempts to release the Lease on stop: client-go retries on conflict; two conflicts in a row
 * mean another writer is active and the lease is probably no longer ours to release. */
#define RELEASE_ATTEMPTS 3

/* "2006-01-02T15:04:05.000000Z" plus the NUL (MicroTime, apimachinery micro_time.go). */
#define MICRO_TIME_BYTES 28

/* client-go's JitterFactor for the acquire loop: the wait is retry_period x [1, 2.2]. Expressed
 * in tenths to stay in integers. */
#define JITTER_TENTHS 12
#define JITTER_PCT (JITTER_TENTHS * 10)

enum round {
	ROUND_OK,       /* the Lease is ours, written now */
	ROUND_HELD,     /* another holder's lease is still valid */
	ROUND_CONFLICT, /* 409: another writer was first; re-read next round */
	ROUND_ERROR,    /* transport error, unexpected status or malformed Lease */
};

struct leader {
	/* Immutable after leader_start(). */
	char *ns, *name, *identity;
	char *path; /* /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME */
	int64_t lease_ms, renew_ms, retry_ms, request_ms;
	struct kube_runtime *rt; /* the election thread: stop, wake and the client */

	/* Shared: the published state (atomics), and who is told when it changes (watch_mu). */
	atomic_bool leading;
	_Atomic uint64_t term;
	pthread_mutex_t watch_mu;
	struct {
		void (*fn)(void *ctx);
		void *ctx;
	} watchers[LEADER_MAX_WATCHERS];

	/* Election thread only. */
	struct kube_client *kc;       /* the runtime's */
	struct ng_buf resp;           /* the last response body */
	bool is_leader;               /* the thread's own view; published to .leading */
	struct kube_lease_record obs; /* the last Lease spec seen or written */
	bool have_obs;
	char *obs_meta;        /* its metadata as JSON (with resourceVersion); NULL = must GET */
	int64_t obs_mono_us;   /* local time obs last changed: validity starts here */
	int64_t last_renew_us; /* start of the last successful round while leading */
	struct ng_rng rng;     /* seeded with the identity: candidates drift apart */
};

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* client-go compares the raw record bytes; comparing every field is the same thing. */
static bool record_equal(const struct kube_lease_record *a, const struct kube_lease_record *b)
{
	return str_eq(a->holder, b->holder) && str_eq(a->acquire_time, b->acquire_time) &&
	       str_eq(a->renew_time, b->renew_time) && str_eq(a->strategy, b->strategy) &&
	       str_eq(a->preferred_holder, b->preferred_holder) && a->duration_s == b->duration_s &&
	       a->transitions == b->transitions;
}

static void micro_time_now(char out[static MICRO_TIME_BYTES])
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	(void)gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, 20, "%Y-%m-%dT%H:%M:%S", &tm);
	ng_fmt(out + n, MICRO_TIME_BYTES - n, ".%06ldZ", (long)(ts.tv_nsec / 1000));
}

/* The body of a create (@meta NULL: name and namespace only) or of a full-object update. */
static ng_status lease_encode(const struct leader *l, const char *meta,
			      const struct kube_lease_record *r, struct ng_buf *out)
{
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "coordination.k8s.io/v1");
	ng_jw_kstr(&w, "kind", "Lease");
	ng_jw_key(&w, "metadata");
	if (meta) {
		ng_jw_raw(&w, meta, strlen(meta)); /* as read: resourceVersion included */
	} else {
		ng_jw_obj(&w);
		ng_jw_kstr(&w, "name", l->name);
		ng_jw_kstr(&w, "namespace", l->ns);
		ng_jw_obj_end(&w);
	}
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "holderIdentity", r->holder);
	ng_jw_ki64(&w, "leaseDurationSeconds", r->duration_s);
	ng_jw_ki64(&w, "leaseTransitions", r->transitions);
	const char *keys[] = {"acquireTime", "renewTime", "strategy", "preferredHolder"};
	const char *vals[] = {r->acquire_time, r->renew_time, r->strategy, r->preferred_holder};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (vals[i])
			ng_jw_kstr(&w, keys[i], vals[i]);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

/* Detail for a non-2xx answer: the Status message when the body is one. */
static ng_status http_error(struct leader *l, const char *method, long http, struct ng_err *err)
{
	char msg[128];
	kube_status_message(l->resp.data, l->resp.len, msg, sizeof(msg));
	ng_err_set(err, NG_EKUBE, 0, "%s lease: HTTP %ld%s%.100s", method, http, *msg ? ": " : "",
		   msg);
	return NG_EKUBE;
}

/* Whether the observed record is still valid: its own leaseDurationSeconds (ours when it has
 * none) after the local time we saw it change (client-go isLeaseValid). */
static bool lease_valid(const struct leader *l, int64_t now_us)
{
	if (!l->have_obs)
		return false;
	int64_t dur_ms = l->obs.duration_s > 0 ? l->obs.duration_s * 1000 : l->lease_ms;
	return l->obs_mono_us + dur_ms * 1000 > now_us;
}

/* Makes @rec (ownership is taken) and @meta (taken; NULL = unknown, the next round must GET) the
 * observed Lease. The validity clock restarts only when the record changed. */
static void observe(struct leader *l, struct kube_lease_record *rec, char *meta)
{
	if (!l->have_obs || !record_equal(&l->obs, rec)) {
		kube_lease_record_finish(&l->obs);
		l->obs = *rec;
		l->have_obs = true;
		l->obs_mono_us = ng_now_mono_us();
	} else {
		kube_lease_record_finish(rec);
	}
	memset(rec, 0, sizeof(*rec));
	free(l->obs_meta);
	l->obs_meta = meta;
}

/* Writes @want (ownership is taken): POST when @meta is NULL (create), else PUT of the full
 * object with @meta. On success @want, or the server's answer, becomes the observed record. */
static enum round write_lease(struct leader *l, const char *meta, struct kube_lease_record *want,
			      int64_t timeout_ms, struct ng_err *err)
{
	const char *method = meta ? "PUT" : "POST";
	struct ng_buf body;
	ng_buf_init(&body, LEASE_MAX_BODY_BYTES);
	enum round r = ROUND_ERROR;
	ng_status st = lease_encode(l, meta, want, &body);
	if (st != NG_OK) {
		ng_err_set(err, st, 0, "%s lease: cannot build the body: %s", method,
			   ng_status_str(st));
		goto out;
	}
	const struct kube_ref ref = {KUBE_KIND_LEASE, l->ns, meta ? l->name : NULL};
	struct kube_write_result wr;
	kube_send_object(l->kc, method, &ref, body.data, body.len, timeout_ms, &l->resp, &wr);
	if (wr.outcome == KUBE_WRITE_CONFLICT) {
		ng_err_set(err, NG_EKUBE, 0, "%s lease: HTTP 409 (another writer was first)",
			   method);
		r = ROUND_CONFLICT;
		goto out;
	}
	if (wr.outcome != KUBE_WRITE_OK) {
		if (wr.http)
			(void)http_error(l, method, wr.http, err);
		else
			*err = wr.err;
		goto out;
	}
	struct kube_lease_record got = {0};
	char *got_meta = NULL;
	if (kube_lease_decode(l->resp.data, l->resp.len, &got, &got_meta, NULL) != NG_OK) {
		/* Written, but the answer is unusable: what we sent is the record, and the next
		 * round reads the resourceVersion afresh. */
		observe(l, want, NULL);
		r = ROUND_OK;
		goto out;
	}
	bool same = str_eq(got.holder, want->holder);
	observe(l, &got, got_meta);
	if (!same) {
		ng_err_set(err, NG_EKUBE, 0, "%s lease: the server answered another holder",
			   method);
		goto out;
	}
	r = ROUND_OK;
out:
	kube_lease_record_finish(want);
	ng_buf_finish(&body);
	return r;
}

/* The record we write: @holder with @duration_s, acquireTime and renewTime, and transitions
 * as decided by the caller; strategy and preferredHolder are kept from the observed record. */
static ng_status want_record(const struct leader *l, const char *holder, int64_t duration_s,
			     const char *acquire_time, const char *renew_time, int64_t transitions,
			     struct kube_lease_record *ret)
{
	struct kube_lease_record r = {.duration_s = duration_s, .transitions = transitions};
	ng_status st;
	if ((st = kube_lease_strdup(holder, &r.holder)) != NG_OK ||
	    (st = kube_lease_strdup(acquire_time, &r.acquire_time)) != NG_OK ||
	    (st = kube_lease_strdup(renew_time, &r.renew_time)) != NG_OK ||
	    (st = kube_lease_strdup(l->have_obs ? l->obs.strategy : NULL, &r.strategy)) != NG_OK ||
	    (st = kube_lease_strdup(l->have_obs ? l->obs.preferred_holder : NULL,
				    &r.preferred_holder)) != NG_OK) {
		kube_lease_record_finish(&r);
		return st;
	}
	*ret = r;
	return NG_OK;
}

/* GET the Lease into the observed record. NG_ENOTFOUND on 404. */
static ng_status read_lease(struct leader *l, int64_t timeout_ms, struct ng_err *err)
{
	long http = 0;
	ng_status st = kube_client_request(l->kc, "GET", l->path, NULL, NULL, 0, timeout_ms,
					   LEASE_MAX_RESPONSE_BYTES, &l->resp, &http, err);
	if (st != NG_OK)
		return st;
	if (http == 404)
		return NG_ENOTFOUND;
	if (http != 200)
		return http_error(l, "GET", http, err);
	struct kube_lease_record rec;
	char *meta = NULL;
	st = kube_lease_decode(l->resp.data, l->resp.len, &rec, &meta, err);
	if (st != NG_OK)
		return st;
	observe(l, &rec, meta);
	return NG_OK;
}

static bool stop_requested(struct leader *l)
{
	return kube_runtime_stopping(l->rt);
}

/* The timeout for the round's next request: the request bound, cut at @deadline_us (monotonic)
 * so that a leader never waits on the API server past its renew deadline. False, with @err
 * set, when the deadline has passed or a stop was requested (the round ends early). */
static bool next_timeout(struct leader *l, int64_t deadline_us, int64_t *ret_ms, struct ng_err *err)
{
	int64_t left_ms = (deadline_us - ng_now_mono_us()) / 1000;
	if (left_ms <= 0) {
		ng_err_set(err, NG_ETIMEDOUT, 0, "renew deadline reached");
		return false;
	}
	if (stop_requested(l)) {
		ng_err_set(err, NG_OK, 0, "stopping");
		return false;
	}
	*ret_ms = left_ms < l->request_ms ? left_ms : l->request_ms;
	return true;
}

/* client-go's tryAcquireOrRenew, one round; no request runs past @deadline_us. */
static enum round try_acquire_or_renew(struct leader *l, int64_t deadline_us, struct ng_err *err)
{
	char now[MICRO_TIME_BYTES];
	micro_time_now(now);
	int64_t duration_s = l->lease_ms / 1000;
	int64_t timeout_ms = 0;
	struct kube_lease_record want;

	/* 1. The leader's fast path: update from the last observed copy, no GET. */
	if (l->is_leader && l->obs_meta && lease_valid(l, ng_now_mono_us())) {
		if (!next_timeout(l, deadline_us, &timeout_ms, err))
			return ROUND_ERROR;
		if (want_record(l, l->identity, duration_s, l->obs.acquire_time, now,
				l->obs.transitions, &want) != NG_OK) {
			ng_err_set(err, NG_ENOMEM, 0, "out of memory");
			return ROUND_ERROR;
		}
		struct ng_err fast = {0};
		if (write_lease(l, l->obs_meta, &want, timeout_ms, &fast) == ROUND_OK)
			return ROUND_OK;
		struct ng_logline ll;
		if (ng_log_begin(&ll, NG_LOG_DEBUG, "leader",
				 "optimistic renew failed, re-reading")) {
			ng_log_str(&ll, "err", fast.msg);
			ng_log_end(&ll);
		}
	}

	/* 2. Read, or create when there is none. */
	if (!next_timeout(l, deadline_us, &timeout_ms, err))
		return ROUND_ERROR;
	ng_status st = read_lease(l, timeout_ms, err);
	if (st == NG_ENOTFOUND) {
		if (!next_timeout(l, deadline_us, &timeout_ms, err))
			return ROUND_ERROR;
		if (want_record(l, l->identity, duration_s, now, now, 0, &want) != NG_OK) {
			ng_err_set(err, NG_ENOMEM, 0, "out of memory");
			return ROUND_ERROR;
		}
		return write_lease(l, NULL, &want, timeout_ms, err);
	}
	if (st != NG_OK)
		return ROUND_ERROR;

	/* 3. Someone else's lease that has not expired (measured locally). */
	bool mine = strcmp(l->obs.holder, l->identity) == 0;
	if (l->obs.holder[0] && !mine && lease_valid(l, ng_now_mono_us())) {
		ng_err_set(err, NG_OK, 0, "held by another holder");
		return ROUND_HELD;
	}

	/* 4. Take it over (a new transition) or renew what is ours. */
	if (!next_timeout(l, deadline_us, &timeout_ms, err))
		return ROUND_ERROR;
	st = mine
		 ? want_record(l, l->identity, duration_s, l->obs.acquire_time, now,
			       l->obs.transitions, &want)
		 : want_record(l, l->identity, duration_s, now, now, l->obs.transitions + 1, &want);
	if (st != NG_OK) {
		ng_err_set(err, NG_ENOMEM, 0, "out of memory");
		return ROUND_ERROR;
	}
	return write_lease(l, l->obs_meta, &want, timeout_ms, err);
}

static void log_state(struct leader *l, enum ng_log_level level, const char *msg,
		      const char *reason)
{
	struct ng_logline ll;
	if (!ng_log_begin(&ll, level, "leader", msg))
		return;
	ng_log_str(&ll, "ns", l->ns);
	ng_log_str(&ll, "name", l->name);
	ng_log_str(&ll, "identity", l->identity);
	ng_log_i64(&ll, "term", (int64_t)atomic_load(&l->term));
	if (l->have_obs && l->obs.holder[0] && strcmp(l->obs.holder, l->identity) != 0)
		ng_log_str(&ll, "holder", l->obs.holder);
	if (reason)
		ng_log_str(&ll, "err", reason);
	ng_log_end(&ll);
}

/* Tells the watchers that leader_is_leader() changed. */
static void tell(struct leader *l)
{
	pthread_mutex_lock(&l->watch_mu);
	for (size_t i = 0; i < LEADER_MAX_WATCHERS; i++)
		if (l->watchers[i].fn)
			l->watchers[i].fn(l->watchers[i].ctx);
	pthread_mutex_unlock(&l->watch_mu);
}

ng_status leader_watch(struct leader *l, void (*fn)(void *ctx), void *ctx)
{
	ng_status st = fn ? NG_ELIMIT : NG_OK;
	pthread_mutex_lock(&l->watch_mu);
	for (size_t i = 0; i < LEADER_MAX_WATCHERS; i++)
		if (l->watchers[i].fn && l->watchers[i].ctx == ctx) {
			l->watchers[i].fn = fn; /* replaced, or removed when fn is NULL */
			st = NG_OK;
			fn = NULL;
		}
	for (size_t i = 0; fn && i < LEADER_MAX_WATCHERS; i++)
		if (!l->watchers[i].fn) {
			l->watchers[i].fn = fn;
			l->watchers[i].ctx = ctx;
			st = NG_OK;
			break;
		}
	pthread_mutex_unlock(&l->watch_mu);
	return st;
}

static void gain(struct leader *l)
{
	/* The term first, so a worker that sees leading also sees the new term. */
	atomic_fetch_add_explicit(&l->term, 1, memory_order_release);
	atomic_store_explicit(&l->leading, true, memory_order_release);
	l->is_leader = true;
	log_state(l, NG_LOG_INFO, "leadership gained", NULL);
	tell(l);
}

static void lose(struct leader *l, const char *reason)
{
	atomic_store_explicit(&l->leading, false, memory_order_release);
	l->is_leader = false;
	log_state(l, NG_LOG_INFO, "leadership lost", reason);
	tell(l);
}

/* client-go's wait.Jitter(retry, 1.2): retry + [0, 1.2 x retry]. */
static int64_t jittered(struct leader *l, int64_t ms)
{
	return ng_jitter_ms(&l->rng, ms, 0, JITTER_PCT);
}

/* client-go's release(): re-read, and if the lease is still ours write it back with no holder
 * and a one-second duration, so a successor does not wait out the lease. */
static void release(struct leader *l)
{
	int64_t deadline_us = ng_now_mono_us() + l->renew_ms * 1000;
	struct ng_err err = {0};
	for (int i = 0; i < RELEASE_ATTEMPTS; i++) {
		int64_t left_ms = (deadline_us - ng_now_mono_us()) / 1000;
		if (left_ms <= 0)
			break;
		int64_t timeout_ms = left_ms < l->request_ms ? left_ms : l->request_ms;
		ng_status st = read_lease(l, timeout_ms, &err);
		if (st == NG_ENOTFOUND)
			return;
		if (st != NG_OK)
			continue;
		if (strcmp(l->obs.holder, l->identity) != 0) {
			log_state(l, NG_LOG_INFO, "lease not released: no longer ours", NULL);
			return;
		}
		char now[MICRO_TIME_BYTES];
		micro_time_now(now);
		struct kube_lease_record want;
		if (want_record(l, "", 1, now, now, l->obs.transitions, &want) != NG_OK) {
			ng_err_set(&err, NG_ENOMEM, 0, "out of memory");
			break;
		}
		if (write_lease(l, l->obs_meta, &want, timeout_ms, &err) == ROUND_OK) {
			log_state(l, NG_LOG_INFO, "lease released", NULL);
			return;
		}
	}
	log_state(l, NG_LOG_WARN, "lease release failed", err.msg);
}

static void log_round(struct leader *l, enum round r, const struct ng_err *err)
{
	struct ng_logline ll;
	if (r == ROUND_CONFLICT &&
	    ng_log_begin(&ll, NG_LOG_INFO, "leader", "lease write conflict")) {
		ng_log_str(&ll, "name", l->name);
		ng_log_str(&ll, "err", err->msg);
		ng_log_end(&ll);
	} else if (r == ROUND_ERROR && !stop_requested(l) /* not a round ended for a stop */ &&
		   ng_log_begin(&ll, NG_LOG_WARN, "leader", "lease request failed")) {
		ng_log_str(&ll, "ns", l->ns);
		ng_log_str(&ll, "name", l->name);
		ng_log_str(&ll, "err", err->msg);
		ng_log_end(&ll);
	}
}

/* One election round on the runtime's thread; returns when to run the next one. */
static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct leader *l = ctx;
	int64_t t0 = ng_now_mono_us();
	/* A leader's requests must not outlive its renew deadline: past it, it is no longer
	 * leader whatever the answer. */
	int64_t deadline_us = INT64_MAX;
	if (l->is_leader) {
		deadline_us = l->last_renew_us + l->renew_ms * 1000;
		if (deadline_us <= t0) {
			lose(l, "no successful renewal within the renew deadline");
			return KUBE_RUNTIME_AGAIN;
		}
	}
	struct ng_err err = {0};
	enum round r = try_acquire_or_renew(l, deadline_us, &err);
	if (r == ROUND_OK) {
		l->last_renew_us = t0;
		if (!l->is_leader)
			gain(l);
	} else if (r == ROUND_HELD && l->is_leader) {
		/* Only if someone wrote over our lease: stop at once rather than wait for the
		 * deadline. */
		lose(l, "the lease has another holder");
	}
	log_round(l, r, &err);
	int64_t now_mono_us = ng_now_mono_us();
	int64_t next = now_mono_us + (l->is_leader ? l->retry_ms : jittered(l, l->retry_ms)) * 1000;
	if (l->is_leader && r != ROUND_OK) {
		/* Wake at the deadline to drop leadership on time. */
		int64_t deadline = l->last_renew_us + l->renew_ms * 1000;
		if (deadline < next)
			next = deadline;
	}
	return next;
}

/* On stop: workers stop acting before the lease is handed back. */
static void finish(struct kube_runtime *rt, void *ctx)
{
	struct leader *l = ctx;
	if (l->is_leader) {
		atomic_store_explicit(&l->leading, false, memory_order_release);
		l->is_leader = false;
		tell(l);
		release(l);
	}
}

/* DNS-1123 subdomain characters: what may appear unescaped in the request path. */
static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > LEADER_MAX_NAME_BYTES)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static ng_status check_config(const struct leader_config *cfg, int64_t *lease_ms, int64_t *renew_ms,
			      int64_t *retry_ms, struct ng_err *reterr)
{
	if (!cfg || !cfg->kube)
		return ng_err_set(reterr, NG_EINVAL, 0, "leader: no kube configuration");
	if (!name_ok(cfg->ns))
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "leader: namespace must be 1-253 of [a-z0-9.-]");
	if (!name_ok(cfg->name))
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "leader: lease name must be 1-253 of [a-z0-9.-]");
	if (!cfg->identity || !cfg->identity[0] ||
	    strlen(cfg->identity) > LEADER_MAX_IDENTITY_BYTES)
		return ng_err_set(reterr, NG_EINVAL, 0, "leader: identity must be 1-%d bytes",
				  LEADER_MAX_IDENTITY_BYTES);
	int64_t lease =
	    cfg->lease_duration_ms ? cfg->lease_duration_ms : LEADER_DEFAULT_LEASE_DURATION_MS;
	int64_t renew =
	    cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LEADER_DEFAULT_RENEW_DEADLINE_MS;
	int64_t retry =
	    cfg->retry_period_ms ? cfg->retry_period_ms : LEADER_DEFAULT_RETRY_PERIOD_MS;
	/* An hour bounds the arithmetic and is far beyond any sensible lease. */
	const int64_t max_ms = 3600 * 1000;
	if (lease < 1000 || lease > max_ms || renew < 1 || retry < 1)
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "leader: lease duration must be 1000..3600000 ms and the renew "
				  "deadline and retry period positive");
	/* client-go: LeaseDuration > RenewDeadline > JitterFactor x RetryPeriod. The record
	 * carries whole seconds, which is what other candidates wait for. */
	if ((lease / 1000) * 1000 <= renew)
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "leader: lease duration (%lld whole s) must exceed the renew "
				  "deadline (%lld ms)",
				  (long long)(lease / 1000), (long long)renew);
	if (renew * 10 <= retry * JITTER_TENTHS)
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "leader: renew deadline (%lld ms) must exceed 1.2 x the retry "
				  "period (%lld ms)",
				  (long long)renew, (long long)retry);
	*lease_ms = lease;
	*renew_ms = renew;
	*retry_ms = retry;
	return NG_OK;
}

static char *join_path(const char *ns, const char *name)
{
	struct ng_buf b;
	ng_buf_init(&b, 1024);
	if (ng_buf_printf(&b, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", ns,
			  name ? "/" : "", name ? name : "") != NG_OK) {
		ng_buf_finish(&b);
		return NULL;
	}
	return ng_buf_take(&b, NULL);
}

static void destroy(struct leader *l)
{
	if (!l)
		return;
	kube_runtime_destroy(l->rt);
	pthread_mutex_destroy(&l->watch_mu);
	ng_buf_finish(&l->resp);
	kube_lease_record_finish(&l->obs);
	free(l->obs_meta);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l->path);
	free(l);
}

struct leader *leader_start(const struct leader_config *cfg, struct ng_err *reterr)
{
	int64_t lease_ms = 0, renew_ms = 0, retry_ms = 0;
	if (check_config(cfg, &lease_ms, &renew_ms, &retry_ms, reterr) != NG_OK)
		return NULL;
	struct leader *l = ng_xcalloc(1, sizeof(*l));
	pthread_mutex_init(&l->watch_mu, NULL);
	l->ns = ng_xstrdup(cfg->ns);
	l->name = ng_xstrdup(cfg->name);
	l->identity = ng_xstrdup(cfg->identity);
	l->path = join_path(cfg->ns, cfg->name);
	l->lease_ms = lease_ms;
	l->renew_ms = renew_ms;
	l->retry_ms = retry_ms;
	l->request_ms = retry_ms < LEADER_MAX_REQUEST_MS ? retry_ms : LEADER_MAX_REQUEST_MS;
	atomic_init(&l->leading, false);
	atomic_init(&l->term, 0);
	ng_buf_init(&l->resp, LEASE_MAX_RESPONSE_BYTES);
	/* Seeded per process and identity so that candidates started together drift apart. */
	ng_rng_seed(&l->rng, l->identity);
	if (!l->path) {
		ng_err_set(reterr, NG_ENOMEM, 0, "leader: cannot allocate its state");
		destroy(l);
		return NULL;
	}
	const struct kube_runtime_config rc = {
	    .name = "leader", .kube = cfg->kube, .step = step, .finish = finish, .ctx = l};
	l->rt = kube_runtime_create(&rc, reterr);
	if (!l->rt) {
		destroy(l);
		return NULL;
	}
	l->kc = kube_runtime_client(l->rt);
	if (kube_runtime_start(l->rt, reterr) != NG_OK) {
		destroy(l);
		return NULL;
	}
	return l;
}

bool leader_is_leader(const struct leader *l)
{
	return atomic_load_explicit(&l->leading, memory_order_acquire);
}

uint64_t leader_term(const struct leader *l)
{
	return atomic_load_explicit(&l->term, memory_order_acquire);
}

void leader_stop(struct leader *l)
{
	destroy(l); /* stops the runtime first: the lease is released on its thread */
}
