#include "controller/autorequest.h"
#include "controller/autorequest_internal.h"

#include "budgets/selector.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/log.h"
#include "common/map.h"
#include "common/prom.h"
#include "common/jw.h"
#include "controller/scaffold.h"
#include "kube/kube.h"
#include "kube/runtime.h"
#include "kube/write.h"
#include "policy/lifecycle.h"
#include "policy/policy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Denied evictions come in bursts (a drain retries every pod every few seconds); each node
 * needs one request. 256 distinct nodes waiting is far beyond a burst. */
#define QUEUE_CAP 256

/* Uses recorded at most: once per request per max(USE_EVERY_MIN_MS, idle / 4). */
#define USE_EVERY_MIN_MS 15000
/* Requests whose recorded use is remembered (the oldest is forgotten first). */
#define MEMO_CAP 256

struct item {
	char node[254];
	char user[256];
	bool verified;
	bool create; /* a denial: create the request when there is none; else only a use */
};

/* What this replica last wrote on request @name (uid hash @uid). */
struct memo {
	char name[254];
	uint64_t uid;
	int64_t used_wall_ms; /* the nodegate.io/last-used it wrote; 0: none */
	bool cordoned;        /* it wrote nodegate.io/node-cordoned */
};

enum result { R_CREATED, R_EXISTS, R_DROPPED, R_UNKNOWN_NODE, R_ERROR, R_USED, R_COUNT };
static const char *const result_names[R_COUNT] = {"created",      "exists", "dropped",
						  "unknown_node", "error",  "used"};

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
	struct memo memo[MEMO_CAP]; /* runtime thread only */
	_Atomic uint64_t counts[R_COUNT];
};

static void count(struct autoreq *a, enum result r)
{
	ng_prom_add(&a->counts[r], 1);
}

/* Queues @node once: a denial (@create) upgrades a use already queued. */
static void enqueue(struct autoreq *a, const char *node, const char *user, bool verified,
		    bool create)
{
	if (!a || !node || !*node)
		return;
	pthread_mutex_lock(&a->mu);
	struct item *it = NULL;
	for (size_t i = 0; i < a->n && !it; i++)
		if (strcmp(a->q[(a->head + i) % QUEUE_CAP].node, node) == 0)
			it = &a->q[(a->head + i) % QUEUE_CAP];
	bool queued = it != NULL;
	if (!queued && a->n == QUEUE_CAP) {
		pthread_mutex_unlock(&a->mu);
		count(a, R_DROPPED);
		return;
	}
	if (!queued) {
		it = &a->q[(a->head + a->n++) % QUEUE_CAP];
		ng_fmt(it->node, sizeof(it->node), "%s", node);
		it->create = false;
	}
	if (create && !it->create) {
		ng_fmt(it->user, sizeof(it->user), "%s", user ? user : "");
		it->verified = verified;
		it->create = true;
	}
	pthread_mutex_unlock(&a->mu);
	if (!queued)
		kube_runtime_wake(a->rt);
}

void autoreq_submit(struct autoreq *a, const char *node, const char *user, bool verified)
{
	enqueue(a, node, user, verified, true);
}

void autoreq_used(struct autoreq *a, const char *node)
{
	enqueue(a, node, NULL, false, false);
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

/* Only a node in the cache is asked for: a review names any node it likes. Its record, or NULL. */
static const struct kube_node *node_known(const struct kube_snapshot *s, const char *node)
{
	uint32_t id = ng_intern_find(kube_snapshot_pool(s), node, strlen(node));
	return id == NG_INTERN_NONE ? NULL : kube_snapshot_find_node(s, id);
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
	bool cordoned; /* the node is cordoned as the request is created */
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
	if (rb->cordoned)
		ng_jw_kstr(w, KUBE_NODE_CORDONED_ANNOTATION, "true");
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
	const struct kube_node *node = node_known(s, it->node);
	bool exists = node && already_requested(s, it->node, name);
	bool cordoned = node && (node->flags & KUBE_NODE_UNSCHEDULABLE);
	kube_snapshot_release(s);
	if (!node || exists) {
		count(a, node ? R_EXISTS : R_UNKNOWN_NODE);
		return;
	}
	/* A review nobody authenticated may name any user: the request does not claim one. */
	if (it->verified)
		requestor_of(it->user, requestor, sizeof(requestor));
	else
		ng_fmt(requestor, sizeof(requestor), "unverified");
	struct request_body rb = {it, name, requestor, cordoned};
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

/* This replica's memo of request @name (uid @uid): found, or the slot of the least recent use
 * made its. */
static struct memo *memo_of(struct autoreq *a, const char *name, const char *uid)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, uid, strlen(uid));
	struct memo *oldest = &a->memo[0];
	for (size_t i = 0; i < MEMO_CAP; i++) {
		struct memo *m = &a->memo[i];
		if (m->uid == h && strcmp(m->name, name) == 0)
			return m;
		if (m->used_wall_ms < oldest->used_wall_ms)
			oldest = m;
	}
	*oldest = (struct memo){.uid = h};
	ng_fmt(oldest->name, sizeof(oldest->name), "%s", name);
	return oldest;
}

/* The latest of @a, @b, @c. */
static int64_t latest(int64_t a, int64_t b, int64_t c)
{
	int64_t m = a > b ? a : b;
	return m > c ? m : c;
}

/* The patch recording on request @nd (autoRequest's, for node @node) a use at @now_wall_ms
 * unless one was recorded less than max(USE_EVERY_MIN_MS, idle / 4) ago, and that its node is
 * cordoned unless that is recorded; conditional on the version read. NULL: nothing to write. */
static struct kube_json_patch *use_patch(const struct kube_snapshot *s, const struct kube_nd *nd,
					 const struct kube_node *node, const struct memo *m,
					 int64_t now_wall_ms, bool *ret_used, bool *ret_cordoned)
{
	const struct kube_nd_detail *x = nd->detail;
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	int64_t every = pol_auto_request_idle_ms(ngc && !ngc->invalid ? ngc : NULL) / 4;
	if (every < USE_EVERY_MIN_MS)
		every = USE_EVERY_MIN_MS;
	*ret_used = now_wall_ms - latest(nd->created_ms, x->last_used_ms, m->used_wall_ms) >= every;
	*ret_cordoned =
	    node && (node->flags & KUBE_NODE_UNSCHEDULABLE) && !x->node_cordoned && !m->cordoned;
	if (!*ret_used && !*ret_cordoned)
		return NULL;
	struct kube_json_patch *p = kube_json_patch_create(nd->rv);
	bool map = x->has_annotations;
	char at[32];
	ng_format_rfc3339_ms(now_wall_ms, at);
	if (p && *ret_used) {
		kube_json_patch_annotation(p, KUBE_LAST_USED_ANNOTATION, at, map);
		map = true;
	}
	if (p && *ret_cordoned)
		kube_json_patch_annotation(p, KUBE_NODE_CORDONED_ANNOTATION, "true", map);
	return p;
}

/* An eviction of a pod on @it->node used the request autoRequest made for it, if there is one
 * (labelled, not being deleted): records that (use_patch). A 409 or 404 writes nothing: the
 * next use tries again on what the cache shows then. */
static void record_use(struct autoreq *a, const struct item *it)
{
	char name[254];
	pol_auto_request_name(it->node, name, sizeof(name));
	struct kube_snapshot *s = kube_store_acquire(a->cfg.store);
	uint32_t id = ng_intern_find(kube_snapshot_pool(s), name, strlen(name));
	const struct kube_nd *nd = id == NG_INTERN_NONE ? NULL : kube_snapshot_find_nd(s, id);
	struct kube_json_patch *p = NULL;
	struct memo *m = NULL;
	bool used = false, cordoned = false;
	int64_t now = ng_now_wall_ms();
	if (nd && nd->detail && nd->detail->auto_request && !nd->deleting && nd->uid && *nd->uid) {
		m = memo_of(a, name, nd->uid);
		p = use_patch(s, nd, node_known(s, it->node), m, now, &used, &cordoned);
	}
	kube_snapshot_release(s);
	if (!p)
		return;
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct kube_write_result r;
	kube_apply_json_patch(a->client, &ref, p, &r);
	kube_json_patch_destroy(p);
	if (r.outcome == KUBE_WRITE_OK) {
		m->used_wall_ms = used ? now : m->used_wall_ms;
		m->cordoned = m->cordoned || cordoned;
		count(a, R_USED);
	} else if (r.outcome != KUBE_WRITE_CONFLICT && r.outcome != KUBE_WRITE_GONE) {
		count(a, R_ERROR);
	}
	kube_write_log("autorequest", "use not recorded", &ref, &r);
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
	/* Only creations are rate limited: a use writes at most once per request per interval. */
	int64_t later = a->q[a->head].create ? take_token(a) : 0;
	if (later) {
		pthread_mutex_unlock(&a->mu);
		return later;
	}
	struct item it = a->q[a->head];
	pthread_mutex_unlock(&a->mu);
	if (it.create)
		create(a, &it);
	record_use(a, &it);
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
