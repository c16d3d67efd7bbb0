#include "controller/capi.h"
#include "controller/capi_internal.h"

#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/map.h"
#include "common/memo.h"
#include "common/prom.h"
#include "controller/leader.h"
#include "controller/scaffold.h"
#include "kube/kube.h"
#include "kube/runtime.h"
#include "kube/write.h"
#include "policy/capi.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes remembered until the cache shows them (a Machine's version written over, a request
 * created or deleted): one rollout's Machines, with room to spare. */
#define MEMO_CAP 1024
/* How long a write is trusted to show up in the cache before it is tried again. */
#define WRITTEN_TTL_MS 30000
/* The same gated message is said again on a Machine at most this often (`kubectl describe`
 * shows the latest Events; a new message is said at once). */
#define EVENT_EVERY_MS 600000

enum action { A_ADD, A_REMOVE, A_RELEASE, A_CREATE, A_DELETE, A_EVENT, A_COUNT };
static const char *const action_names[A_COUNT] = {
    "hook_added", "hook_removed", "hook_released", "request_created", "request_deleted", "event"};
#define OUTCOMES (KUBE_WRITE_FAILED + 1)

struct capi {
	struct capi_config cfg;
	struct kube_runtime *rt;
	struct kube_client *client;
	struct ng_memo written; /* runtime thread only */
	struct ng_memo said;    /* Events said lately: runtime thread only */
	_Atomic uint64_t counts[A_COUNT][OUTCOMES];
};

/* One Machine being acted on, its strings resolved. */
struct job {
	struct capi *c;
	const struct kube_snapshot *s;
	const struct kube_machine *m;
	const char *ns, *name, *node;
	struct kube_ref ref;
	struct pol_capi_decision d;
};

static int64_t now_mono_ms(void)
{
	return ng_now_mono_us() / 1000;
}

static void count(struct capi *c, enum action a, enum kube_write_outcome o)
{
	ng_prom_add(&c->counts[a][o <= KUBE_WRITE_FAILED ? o : KUBE_WRITE_FAILED], 1);
}

static uint64_t key_of(const char *a, const char *b, const char *d)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, a, strlen(a) + 1);
	h = ng_fnv1a64(h, b, strlen(b) + 1);
	return ng_fnv1a64(h, d, strlen(d));
}

static void log_write(const struct job *j, enum action a, const struct kube_write_result *r)
{
	struct ng_logline l;
	bool ok = r->outcome == KUBE_WRITE_OK;
	if (!ok && (r->outcome == KUBE_WRITE_CONFLICT || r->outcome == KUBE_WRITE_GONE))
		return; /* read again and decide again */
	if (!ng_log_begin(&l, ok ? NG_LOG_INFO : NG_LOG_WARN, "capi",
			  ok ? "machine gated" : "write failed"))
		return;
	ng_log_str(&l, "action", action_names[a]);
	ng_log_str(&l, "machine_namespace", j->ns);
	ng_log_str(&l, "machine", j->name);
	ng_log_str(&l, "node", j->node);
	ng_log_str(&l, "nd", j->d.name);
	ng_log_str(&l, "why", j->d.why);
	if (!ok) {
		ng_log_i64(&l, "http", r->http);
		ng_log_str(&l, "err", r->err.msg);
	}
	ng_log_end(&l);
}

/* The hook added (@on) or removed, conditional on the version decided on. */
static void patch_hook(struct job *j, bool on, enum action a)
{
	struct kube_json_patch *p = kube_json_patch_create(j->m->rv);
	struct kube_write_result r = {.outcome = KUBE_WRITE_FAILED};
	if (p) {
		kube_json_patch_annotation(p, KUBE_CAPI_HOOK, on ? KUBE_CAPI_HOOK_VALUE : NULL,
					   j->m->has_annotations);
		kube_apply_json_patch(j->c->client, &j->ref, p, &r);
	}
	kube_json_patch_destroy(p);
	count(j->c, a, r.outcome);
	log_write(j, a, &r);
	if (r.outcome == KUBE_WRITE_OK)
		ng_memo_put(&j->c->written, key_of(j->m->uid, j->m->rv, action_names[a]),
			    now_mono_ms() + WRITTEN_TTL_MS);
}

struct body {
	const struct job *j;
	const char *requestor;
};

/* The request of a deleted Machine's node: Pending until the gate grants it, retried. No
 * spec.drain and no spec.operation: Cluster API drains, nodegate's drainer stays out. */
static void request_body(struct ng_jw *w, void *ctx)
{
	const struct body *b = ctx;
	const struct job *j = b->j;
	const struct ng_intern *pool = kube_snapshot_pool(j->s);
	char machine[520], by[600];
	ng_fmt(machine, sizeof(machine), "%s/%s", j->ns, j->name);
	if (j->m->owner_kind != NG_INTERN_NONE && j->m->owner_name != NG_INTERN_NONE)
		ng_fmt(by, sizeof(by), "%s %s/%s", ng_intern_str(pool, j->m->owner_kind, NULL),
		       j->ns, ng_intern_str(pool, j->m->owner_name, NULL));
	else
		ng_fmt(by, sizeof(by), "Machine %s", machine);
	ng_jw_kstr(w, "apiVersion", "nodegate.io/v1alpha1");
	ng_jw_kstr(w, "kind", "NodeDisruption");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", j->d.name);
	ng_jw_key(w, "labels");
	ng_jw_obj(w);
	ng_jw_kstr(w, KUBE_CAPI_REQUEST_LABEL, "true");
	ng_jw_obj_end(w);
	ng_jw_key(w, "annotations");
	ng_jw_obj(w);
	ng_jw_kstr(w, KUBE_CAPI_MACHINE_ANNOTATION, machine);
	ng_jw_kstr(w, "nodegate.io/requested-by", by);
	if (j->m->cluster != NG_INTERN_NONE)
		ng_jw_kstr(w, "nodegate.io/cluster-api-cluster",
			   ng_intern_str(pool, j->m->cluster, NULL));
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
	ng_jw_key(w, "spec");
	ng_jw_obj(w);
	ng_jw_key(w, "nodeNames");
	ng_jw_arr(w);
	ng_jw_str(w, j->node);
	ng_jw_arr_end(w);
	ng_jw_kstr(w, "requestor", b->requestor);
	ng_jw_kstr(w, "type", "cluster-api");
	ng_jw_key(w, "retry");
	ng_jw_obj(w);
	ng_jw_kbool(w, "enabled", true);
	ng_jw_obj_end(w);
	ng_jw_obj_end(w);
}

static void create_request(struct job *j)
{
	char requestor[254];
	pol_capi_requestor(j->s, j->m, requestor, sizeof(requestor));
	struct body b = {j, requestor};
	const struct kube_ref nds = {KUBE_KIND_ND, NULL, NULL};
	struct kube_write_result r;
	kube_create(j->c->client, &nds, request_body, &b, &r);
	count(j->c, A_CREATE, r.outcome);
	log_write(j, A_CREATE, &r);
	if (r.outcome == KUBE_WRITE_OK || r.outcome == KUBE_WRITE_CONFLICT)
		ng_memo_put(&j->c->written, key_of("create", j->d.name, ""),
			    now_mono_ms() + WRITTEN_TTL_MS);
}

/* An Event on the Machine, unless the same was said on it lately. Returns the writes made. */
static int event(struct job *j, const char *reason, const char *msg)
{
	int64_t now = now_mono_ms();
	uint64_t key = key_of(j->m->uid, reason, msg);
	if (ng_memo_has(&j->c->said, key, now))
		return 0;
	struct kube_event ev = {j->ref,           reason,   "Normal", msg, j->c->cfg.identity,
				ng_now_wall_ms(), j->m->uid};
	struct kube_write_result r;
	kube_create_event(j->c->client, &ev, &r);
	count(j->c, A_EVENT, r.outcome);
	if (r.outcome == KUBE_WRITE_OK)
		ng_memo_put(&j->c->said, key, now + EVENT_EVERY_MS);
	else
		kube_write_log("capi", "event not recorded", &j->ref, &r);
	return 1;
}

/* Returns the writes made. */
static int waiting_event(struct job *j)
{
	const struct kube_nd *nd = j->d.request;
	if (!nd)
		return 0; /* just asked for: the next pass, which sees it, says so */
	const char *state = nd->state == KUBE_ND_REJECTED ? "Rejected" : "Pending";
	const char *why =
	    nd->status_reason && *nd->status_reason ? nd->status_reason : "not decided yet";
	char msg[700];
	ng_fmt(msg, sizeof(msg), "waiting for nodegate's grant: %s %s: %.500s", j->d.name, state,
	       why);
	return event(j, "WaitingForGrant", msg);
}

/* Acts on one Machine. Returns the writes made. */
static int machine_step(struct capi *c, const struct kube_snapshot *s, const struct kube_machine *m,
			bool enabled)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	struct job j = {.c = c, .s = s, .m = m};
	j.ns = ng_intern_str(pool, m->ns, NULL);
	j.name = ng_intern_str(pool, m->name, NULL);
	j.node = m->node == NG_INTERN_NONE ? "" : ng_intern_str(pool, m->node, NULL);
	j.ref = (struct kube_ref){KUBE_KIND_MACHINE, j.ns, j.name};
	pol_capi_decide(s, m, &j.d);
	if (!enabled && !m->deleting) {
		/* Turned off: no new hooks, and ours leave the Machines that are not being deleted.
		 * Those being deleted are seen through: their hook goes only with a grant. */
		if (!m->hook)
			return 0;
		j.d.action = POL_CAPI_REMOVE_HOOK;
		j.d.why = "spec.clusterAPI.enabled is false";
	}
	int64_t now = now_mono_ms();
	switch (j.d.action) {
	case POL_CAPI_NONE:
		return 0;
	case POL_CAPI_ADD_HOOK:
	case POL_CAPI_REMOVE_HOOK: {
		enum action a = j.d.action == POL_CAPI_ADD_HOOK ? A_ADD
				: j.d.release                   ? A_RELEASE
								: A_REMOVE;
		if (ng_memo_has(&c->written, key_of(m->uid, m->rv, action_names[a]), now))
			return 0;
		patch_hook(&j, j.d.action == POL_CAPI_ADD_HOOK, a);
		if (a == A_RELEASE && j.d.request) {
			char msg[400];
			ng_fmt(
			    msg, sizeof(msg),
			    "nodegate granted %s: its pre-drain hook is removed, Cluster API may "
			    "drain the node",
			    j.d.name);
			return 1 + event(&j, "Granted", msg);
		}
		return 1;
	}
	case POL_CAPI_REQUEST:
		if (ng_memo_has(&c->written, key_of("create", j.d.name, ""), now))
			return 0;
		create_request(&j);
		return 1;
	case POL_CAPI_WAIT:
		return waiting_event(&j);
	}
	return 0;
}

/* Deletes @nd, a request whose Machine or node is gone, if it is still the object read. */
static int cleanup(struct capi *c, const struct kube_snapshot *s, const struct kube_nd *nd)
{
	const char *name = ng_intern_str(kube_snapshot_pool(s), nd->name, NULL);
	int64_t now = now_mono_ms();
	uint64_t key = key_of("delete", name, nd->uid ? nd->uid : "");
	if (nd->deleting || ng_memo_has(&c->written, key, now))
		return 0;
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, name};
	struct kube_write_result r;
	kube_delete_uid(c->client, &ref, nd->uid ? nd->uid : "", &r);
	count(c, A_DELETE, r.outcome);
	struct ng_logline l;
	if (r.outcome == KUBE_WRITE_OK &&
	    ng_log_begin(&l, NG_LOG_INFO, "capi", "request ended: its Machine or node is gone")) {
		ng_log_str(&l, "nd", name);
		ng_log_end(&l);
	}
	kube_write_log("capi", "request not deleted", &ref, &r);
	if (r.outcome == KUBE_WRITE_OK)
		ng_memo_put(&c->written, key, now + WRITTEN_TTL_MS);
	return 1;
}

bool capi_pass(struct capi *c, const struct kube_snapshot *s)
{
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	bool enabled = !(ngc && !ngc->invalid && ngc->capi_disabled);
	ng_memo_expire(&c->written, now_mono_ms());
	int writes = 0;
	size_t n;
	const struct kube_machine *ms = kube_snapshot_machines(s, &n);
	for (size_t i = 0; i < n && writes < CAPI_WRITES_PER_PASS; i++)
		writes += machine_step(c, s, &ms[i], enabled);
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n && writes < CAPI_WRITES_PER_PASS; i++)
		if (pol_capi_request_stale(s, &nds[i]))
			writes += cleanup(c, s, &nds[i]);
	return writes >= CAPI_WRITES_PER_PASS;
}

static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct capi *c = ctx;
	(void)rt;
	if (c->cfg.leader && !leader_is_leader(c->cfg.leader)) {
		ng_memo_clear(&c->written);
		return KUBE_RUNTIME_IDLE; /* the leader's watch wakes this thread */
	}
	struct kube_snapshot *s = kube_store_acquire(c->cfg.store);
	if (!s)
		return KUBE_RUNTIME_IDLE;
	bool more = capi_pass(c, s);
	kube_snapshot_release(s);
	if (more)
		return KUBE_RUNTIME_AGAIN;
	/* Writes not yet seen are looked at again once trusted no longer. */
	int64_t next = ng_memo_next_expiry(&c->written);
	return next == INT64_MAX ? KUBE_RUNTIME_IDLE : next * 1000;
}

struct capi *capi_create(const struct capi_config *cfg, struct kube_client *client,
			 struct ng_err *reterr)
{
	struct capi *c = calloc(1, sizeof(*c));
	if (!c) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	c->cfg = *cfg;
	c->client = client;
	ng_memo_init(&c->written, MEMO_CAP);
	ng_memo_init(&c->said, MEMO_CAP);
	return c;
}

struct capi *capi_start(const struct capi_config *cfg, struct ng_err *reterr)
{
	struct capi *c = capi_create(cfg, NULL, reterr);
	if (!c)
		return NULL;
	const struct scaffold_config sc = {.name = "capi",
					   .kube = cfg->kube,
					   .store = cfg->store,
					   .watch = cfg->watch,
					   .leader = cfg->leader,
					   .step = step,
					   .ctx = c};
	c->rt = scaffold_create(&sc, reterr);
	if (c->rt)
		c->client = kube_runtime_client(c->rt);
	if (!c->rt || kube_runtime_start(c->rt, reterr) != NG_OK) {
		capi_stop(c);
		return NULL;
	}
	return c;
}

ng_status capi_render_metrics(const struct capi *cc, struct ng_buf *out)
{
	struct capi *c = (struct capi *)(uintptr_t)cc;
	ng_status st = ng_prom_header(out, "nodegate_cluster_api_actions_total", NG_PROM_COUNTER,
				      "Writes of Cluster API gating, by action and outcome.");
	for (int a = 0; st == NG_OK && c && a < A_COUNT; a++)
		for (int o = 0; st == NG_OK && o < OUTCOMES; o++) {
			const struct ng_prom_label l[] = {
			    {"action", action_names[a]},
			    {"result", kube_write_outcome_str((enum kube_write_outcome)o)}};
			st = ng_prom_u64(out, "nodegate_cluster_api_actions_total", l, 2,
					 ng_prom_get(&c->counts[a][o]));
		}
	return st;
}

void capi_stop(struct capi *c)
{
	if (!c)
		return;
	scaffold_stop(c->rt, c->cfg.leader);
	ng_memo_free(&c->written);
	ng_memo_free(&c->said);
	free(c);
}
