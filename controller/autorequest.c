#include "controller/autorequest.h"

#include "budgets/selector.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/log.h"
#include "kube/client.h"
#include "kube/kube.h"
#include "policy/policy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Denied evictions come in bursts (a drain retries every pod every few seconds); each node
 * needs one request. 256 distinct nodes waiting is far beyond a burst. */
#define QUEUE_CAP 256
#define WRITE_TIMEOUT_MS 10000

struct item {
	char node[254];
	char user[256];
};

enum result { R_CREATED, R_EXISTS, R_DROPPED, R_ERROR, R_COUNT };
static const char *const result_names[R_COUNT] = {"created", "exists", "dropped", "error"};

struct autoreq {
	struct autoreq_config cfg;
	struct kube_client *client;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	struct item q[QUEUE_CAP];
	size_t head, n;
	_Atomic uint64_t counts[R_COUNT];
};

static void count(struct autoreq *a, enum result r)
{
	atomic_fetch_add_explicit(&a->counts[r], 1, memory_order_relaxed);
}

void autoreq_submit(struct autoreq *a, const char *node, const char *user)
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
		pthread_cond_signal(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
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

static void create(struct autoreq *a, const struct item *it)
{
	char name[254], requestor[254];
	pol_auto_request_name(it->node, name, sizeof(name));
	struct kube_snapshot *s = kube_store_acquire(a->cfg.store);
	bool exists = already_requested(s, it->node, name);
	kube_snapshot_release(s);
	if (exists) {
		count(a, R_EXISTS);
		return;
	}
	requestor_of(it->user, requestor, sizeof(requestor));
	struct ng_buf b, out;
	ng_buf_init(&b, 8192);
	ng_buf_init(&out, 1u << 20);
	ng_status st = ng_buf_puts(&b, "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
				       "\"NodeDisruption\",\"metadata\":{\"name\":");
	st = st ? st : ng_buf_json_str(&b, name, strlen(name));
	st = st ? st
		: ng_buf_puts(&b, ",\"labels\":{\"nodegate.io/auto-request\":\"true\"},"
				  "\"annotations\":{\"nodegate.io/requested-by\":");
	st = st ? st : ng_buf_json_str(&b, it->user, strlen(it->user));
	st = st ? st : ng_buf_puts(&b, "}},\"spec\":{\"nodeNames\":[");
	st = st ? st : ng_buf_json_str(&b, it->node, strlen(it->node));
	st = st ? st : ng_buf_puts(&b, "],\"requestor\":");
	st = st ? st : ng_buf_json_str(&b, requestor, strlen(requestor));
	st = st ? st : ng_buf_puts(&b, ",\"type\":\"eviction\",\"retry\":{\"enabled\":true}}}");
	long http = 0;
	struct ng_err err = {0};
	if (st == NG_OK)
		st = kube_client_request(a->client, "POST",
					 "/apis/nodegate.io/v1alpha1/nodedisruptions",
					 "application/json", b.data, b.len, WRITE_TIMEOUT_MS,
					 1u << 20, &out, &http, &err);
	enum result r = st == NG_OK && http == 201   ? R_CREATED
			: st == NG_OK && http == 409 ? R_EXISTS /* another replica was first */
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
		if (r == R_ERROR) {
			ng_log_i64(&l, "http", http);
			ng_log_str(&l, "err", st == NG_OK ? (out.data ? out.data : "") : err.msg);
		}
		ng_log_end(&l);
	}
	ng_buf_finish(&b);
	ng_buf_finish(&out);
}

static void *run(void *arg)
{
	struct autoreq *a = arg;
	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		if (a->n == 0) {
			pthread_cond_wait(&a->cv, &a->mu);
			continue;
		}
		struct item it = a->q[a->head];
		pthread_mutex_unlock(&a->mu);
		create(a, &it);
		pthread_mutex_lock(&a->mu);
		/* Dequeued only now: a node being requested is not queued again meanwhile. */
		a->head = (a->head + 1) % QUEUE_CAP;
		a->n--;
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

struct autoreq *autoreq_start(const struct autoreq_config *cfg, struct ng_err *reterr)
{
	struct autoreq *a = calloc(1, sizeof(*a));
	if (!a) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	a->client = kube_client_create(cfg->kube);
	if (!a->client) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		autoreq_stop(a);
		return NULL;
	}
	if (pthread_create(&a->thread, NULL, run, a) != 0) {
		(void)ng_err_set(reterr, NG_EIO, 0, "cannot start the autoRequest thread");
		autoreq_stop(a);
		return NULL;
	}
	a->started = true;
	return a;
}

ng_status autoreq_render_metrics(const struct autoreq *ca, struct ng_buf *out)
{
	struct autoreq *a = (struct autoreq *)(uintptr_t)ca;
	ng_status st = ng_buf_puts(out, "# HELP nodegate_auto_requests_total NodeDisruptions "
					"requested for denied evictions (eviction.autoRequest), by "
					"result.\n# TYPE nodegate_auto_requests_total counter\n");
	for (int r = 0; st == NG_OK && a && r < R_COUNT; r++)
		st = ng_buf_printf(
		    out, "nodegate_auto_requests_total{result=\"%s\"} %llu\n", result_names[r],
		    (unsigned long long)atomic_load_explicit(&a->counts[r], memory_order_relaxed));
	return st;
}

void autoreq_stop(struct autoreq *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (a->started)
		(void)pthread_join(a->thread, NULL);
	kube_client_destroy(a->client);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
