#include "controller/autorequest.h"
#include "controller/autorequest_internal.h"

#include "budgets/selector.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/log.h"
#include "common/prom.h"
#include "common/jw.h"
#include "controller/scaffold.h"
#include "kube/kube.h"
#include "kube/runtime.h"
#include "kube/write.h"
#include "policy/policy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Denied evictions come in bursts (a drain retries every pod every few seconds); each node
 * needs one request. 256 distinct nodes waiting is far beyond a burst. */
#define QUEUE_CAP 256

struct item {
	char node[254];
	char user[256];
	bool verified;
};

enum result { R_CREATED, R_EXISTS, R_DROPPED, R_UNKNOWN_NODE, R_ERROR, R_COUNT };
static const char *const result_names[R_COUNT] = {"created", "exists", "dropped", "unknown_node",
						  "error"};

struct autoreq {
	struct autoreq_config cfg;
	struct kube_runtime *rt;    /* NULL when made by autoreq_create() */
	struct kube_client *client; /* the runtime's, or the one given to autoreq_create() */
	pthread_mutex_t mu;         /* guards the queue: submitted by admission threads */
	struct item q[QUEUE_CAP];
	size_t head, n;
	/* The rate limit: a token bucket of per_minute tokens, refilled continuously. Runtime
	 * thread only. */
	double tokens;
	int64_t refilled_us;
	_Atomic uint64_t counts[R_COUNT];
};

static void count(struct autoreq *a, enum result r)
{
	ng_prom_add(&a->counts[r], 1);
}

void autoreq_submit(struct autoreq *a, const char *node, const char *user, bool verified)
{
	if (!a || !node || !*node)
		return;
	pthread_mutex_lock(&a->mu);
	bool queued = false;
	for (size_t i = 0; i < a->n && !queued; i++)
		queued = strcmp(a->q[(a->head + i) % QUEUE_CAP].node, node) == 0;
	if (!queued && a->n == QUEUE_CAP) {
		pthread_mutex_unlock(&a->mu);
		count(a, R_DROPPED);
		return;
	}
	if (!queued) {
		struct item *it = &a->q[(a->head + a->n++) % QUEUE_CAP];
		ng_fmt(it->node, sizeof(it->node), "%s", node);
		ng_fmt(it->user, sizeof(it->user), "%s", user ? user : "");
		it->verified = verified;
	}
	pthread_mutex_unlock(&a->mu);
	if (!queued)
		kube_runtime_wake(a->rt);
}

/* Whether a request that is not Rejected already names or selects @node, or the request this
 * would create exists (in any state: a Rejected one is the requester's to delete). */
static bool already_requested(const struct kube_snapshot *s, const char *node, const char *name)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	uint32_t node_id = ng_intern_find(pool, node, strlen(node));
	uint32_t name_id = ng_intern_find(pool, name, strlen(name));
	const struct kube_node *rec =
	    node_id == NG_INTERN_NONE ? NULL : kube_snapshot_find_node(s, node_id);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kube_nd *nd = &nds[i];
		if (name_id != NG_INTERN_NONE && nd->name == name_id)
			return true;
		if (nd->state == KUBE_ND_REJECTED || nd->deleting)
			continue;
		for (uint16_t k = 0; node_id != NG_INTERN_NONE && k < nd->nnode_names; k++)
			if (nd->node_names[k] == node_id)
				return true;
		if (rec && !nd->nnode_names && nd->node_selector.nreqs > 0 &&
		    bud_selector_matches(&nd->node_selector, rec->labels, rec->nlabels, pool))
			return true;
	}
	return false;
}

/* Only a node in the cache is asked for: a review names any node it likes. */
static bool node_known(const struct kube_snapshot *s, const char *node)
{
	uint32_t id = ng_intern_find(kube_snapshot_pool(s), node, strlen(node));
	return id != NG_INTERN_NONE && kube_snapshot_find_node(s, id) != NULL;
}

/* spec.requestor is a DNS subdomain: "system:serviceaccount:ns:name" becomes
 * "system-serviceaccount-ns-name", upper case lower; "unknown" when nothing is left. */
static void requestor_of(const char *user, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = user; *p && o + 1 < cap && o < 253; p++) {
		char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
		c = ok ? c : '-';
		if ((c == '-' || c == '.') && (o == 0 || out[o - 1] == '-' || out[o - 1] == '.'))
			continue;
		out[o++] = c;
	}
	while (o > 0 && (out[o - 1] == '-' || out[o - 1] == '.'))
		o--;
	out[o] = '\0';
	if (o == 0)
		ng_fmt(out, cap, "unknown");
}

struct request_body {
	const struct item *it;
	const char *name, *requestor;
};

/* The Pending NodeDisruption of a denied eviction's node, on the evicting user's behalf. */
static void request_body(struct ng_jw *w, void *ctx)
{
	const struct request_body *rb = ctx;
	ng_jw_kstr(w, "apiVersion", "nodegate.io/v1alpha1");
	ng_jw_kstr(w, "kind", "NodeDisruption");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", rb->name);
	ng_jw_key(w, "labels");
	ng_jw_obj(w);
	ng_jw_kstr(w, "nodegate.io/auto-request", "true");
	ng_jw_kstr(w, "nodegate.io/requested-by-verified", rb->it->verified ? "true" : "false");
	ng_jw_obj_end(w);
	ng_jw_key(w, "annotations");
	ng_jw_obj(w);
	ng_jw_kstr(w,
		   rb->it->verified ? "nodegate.io/requested-by"
				    : "nodegate.io/requested-by-unverified",
		   rb->it->user);
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
	ng_jw_key(w, "spec");
	ng_jw_obj(w);
	ng_jw_key(w, "nodeNames");
	ng_jw_arr(w);
	ng_jw_str(w, rb->it->node);
	ng_jw_arr_end(w);
	ng_jw_kstr(w, "requestor", rb->requestor);
	ng_jw_kstr(w, "type", "eviction");
	ng_jw_key(w, "retry");
	ng_jw_obj(w);
	ng_jw_kbool(w, "enabled", true);
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
}

static void create(struct autoreq *a, const struct item *it)
{
	char name[254], requestor[254];
	pol_auto_request_name(it->node, name, sizeof(name));
	struct kube_snapshot *s = kube_store_acquire(a->cfg.store);
	bool known = node_known(s, it->node);
	bool exists = known && already_requested(s, it->node, name);
	kube_snapshot_release(s);
	if (!known || exists) {
		count(a, known ? R_EXISTS : R_UNKNOWN_NODE);
		return;
	}
	/* A review nobody authenticated may name any user: the request does not claim one. */
	if (it->verified)
		requestor_of(it->user, requestor, sizeof(requestor));
	else
		ng_fmt(requestor, sizeof(requestor), "unverified");
	struct request_body rb = {it, name, requestor};
	struct kube_write_result wr;
	const struct kube_ref nds = {KUBE_KIND_ND, NULL, NULL};
	kube_create(a->client, &nds, request_body, &rb, &wr);
	enum result r = wr.outcome == KUBE_WRITE_OK ? R_CREATED
			: wr.outcome == KUBE_WRITE_CONFLICT
			    ? R_EXISTS /* another replica was first */
			    : R_ERROR;
	count(a, r);
	struct ng_logline l;
	if (r != R_EXISTS &&
	    ng_log_begin(&l, r == R_CREATED ? NG_LOG_INFO : NG_LOG_WARN, "autorequest",
			 r == R_CREATED ? "disruption requested for a denied eviction"
					: "could not request a disruption")) {
		ng_log_str(&l, "nd", name);
		ng_log_str(&l, "node", it->node);
		ng_log_str(&l, "user", it->user);
		ng_log_bool(&l, "user_verified", it->verified);
		if (r == R_ERROR) {
			ng_log_i64(&l, "http", wr.http);
			ng_log_str(&l, "err", wr.err.msg);
		}
		ng_log_end(&l);
	}
}

/* Takes a token for one creation; when there is none, the monotonic time one will be there. */
static int64_t take_token(struct autoreq *a)
{
	const double per_us = a->cfg.per_minute / 60e6;
	int64_t now = ng_now_mono_us();
	a->tokens += (double)(now - a->refilled_us) * per_us;
	if (a->tokens > a->cfg.per_minute)
		a->tokens = a->cfg.per_minute;
	a->refilled_us = now;
	if (a->tokens >= 1) {
		a->tokens -= 1;
		return 0;
	}
	return now + (int64_t)((1 - a->tokens) / per_us) + 1;
}

/* One request per step: the oldest queued node, when the rate allows. */
int64_t autoreq_step(struct autoreq *a)
{
	pthread_mutex_lock(&a->mu);
	if (a->n == 0) {
		pthread_mutex_unlock(&a->mu);
		return KUBE_RUNTIME_IDLE;
	}
	int64_t later = take_token(a);
	if (later) {
		pthread_mutex_unlock(&a->mu);
		return later;
	}
	struct item it = a->q[a->head];
	pthread_mutex_unlock(&a->mu);
	create(a, &it);
	pthread_mutex_lock(&a->mu);
	/* Dequeued only now: a node being requested is not queued again meanwhile. */
	a->head = (a->head + 1) % QUEUE_CAP;
	a->n--;
	bool more = a->n > 0;
	pthread_mutex_unlock(&a->mu);
	return more ? KUBE_RUNTIME_AGAIN : KUBE_RUNTIME_IDLE;
}

static int64_t step(struct kube_runtime *rt, void *ctx)
{
	(void)rt;
	return autoreq_step(ctx);
}

struct autoreq *autoreq_create(const struct autoreq_config *cfg, struct kube_client *client,
			       struct ng_err *reterr)
{
	struct autoreq *a = calloc(1, sizeof(*a));
	if (!a) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	a->client = client;
	if (!a->cfg.per_minute)
		a->cfg.per_minute = 60;
	a->tokens = a->cfg.per_minute;
	a->refilled_us = ng_now_mono_us();
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

struct autoreq *autoreq_start(const struct autoreq_config *cfg, struct ng_err *reterr)
{
	struct autoreq *a = autoreq_create(cfg, NULL, reterr);
	if (!a)
		return NULL;
	const struct scaffold_config sc = {
	    .name = "autorequest", .kube = cfg->kube, .step = step, .ctx = a};
	a->rt = scaffold_create(&sc, reterr);
	if (a->rt)
		a->client = kube_runtime_client(a->rt);
	if (!a->rt || kube_runtime_start(a->rt, reterr) != NG_OK) {
		autoreq_stop(a);
		return NULL;
	}
	return a;
}

ng_status autoreq_render_metrics(const struct autoreq *ca, struct ng_buf *out)
{
	struct autoreq *a = (struct autoreq *)(uintptr_t)ca;
	_Atomic uint64_t *counts[R_COUNT];
	for (int r = 0; a && r < R_COUNT; r++)
		counts[r] = &a->counts[r];
	return scaffold_render_counters(out, "nodegate_auto_requests_total",
					"NodeDisruptions requested for denied evictions "
					"(eviction.autoRequest), by result.",
					"result", result_names, counts, a ? R_COUNT : 0);
}

void autoreq_stop(struct autoreq *a)
{
	if (!a)
		return;
	scaffold_stop(a->rt, NULL);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
