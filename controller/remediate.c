/* The remediation controller (controller/remediate.h, docs/remediation.md): plans with
 * policy/remediation.h, writes with kube/write.h. */
#include "controller/remediate_internal.h"

#include "common/arena.h"
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
#include "policy/remediation.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One NodeRemediation's status: a thousand lastRemediated and activeRequests entries. */
#define STATUS_CAP (1u << 20)
/* status.activeRequests and status.waitingNodes list at most this many nodes. */
#define ACTIVE_CAP 1000
#define WAITING_CAP 100
/* Requests created but not yet seen in the cache hold that remediation's next creations (so a
 * stale cache can never exceed maxConcurrent), for at most this long. */
#define CREATION_CAP 256
#define CREATION_WAIT_MS 10000
/* After the API server refuses a request (a webhook, a quota), the remediation creates nothing
 * for this long: one Warning Event per refusal, not one per cache publish. */
#define REFUSED_BACKOFF_MS 30000
/* A write that got no answer (or a 5xx) is tried again this soon, changes or not. */
#define FAILED_RETRY_MS 5000
/* An author RBAC refuses is asked about again this soon: a new RoleBinding changes nothing
 * nodegate watches. */
#define AUTH_RECHECK_MS 10000

enum action { A_CREATE, A_DELETE, A_STATUS, A_FINALIZER, A_COUNT };
static const char *const action_names[A_COUNT] = {"create", "delete", "status", "finalizer"};
#define OUTCOMES 5 /* enum kube_write_outcome */

enum cond { C_READY, C_STORM, C_LOOP, C_COUNT };

/* The kinds a plan reads (pass_needed()). */
#define READS 4
static const char *const cond_types[C_COUNT] = {"Ready", "Storm", "Loop"};

/* What the controller remembers of one NodeRemediation between steps (by uid). */
struct tracked {
	char uid[64], name[64];
	uint64_t written; /* hash of the status last written; 0: none */
	struct conds {
		bool status[C_COUNT]; /* the conditions as last written */
		char reason[C_COUNT][32];
		int64_t since[C_COUNT]; /* their lastTransitionTime */
	} c;
	int64_t refused_until_mono_ms;
	bool seen; /* in this step's snapshot */
	/* for the metrics, under mu */
	size_t unhealthy, open;
	bool storm;
};

struct remediate {
	struct remediate_config cfg;
	struct kube_runtime *rt;
	struct kube_client *client;
	struct ng_arena *arena;
	struct ng_buf body;
	pthread_mutex_t mu; /* guards t's metric fields and nt for the metrics reader */
	struct tracked *t;
	size_t nt, capt;
	/* Requests created and not yet seen in the cache: key the request's name, group its
	 * remediation's (name_key()). Runtime thread only. */
	struct ng_memo made;
	/* Runtime thread only: what the last pass read (table serials) and when it asked to run
	 * again (monotonic µs, 0: only on a change). */
	bool passed;
	uint64_t serials[READS];
	int64_t due_mono_us;
	bool retry_soon; /* a write of the last pass failed without an answer */
	bool auth_wait;  /* an author of the last pass was refused */
	_Atomic uint64_t counts[A_COUNT][OUTCOMES];
};

static int64_t now_mono_ms(void)
{
	return ng_now_mono_us() / 1000;
}

static void count(struct remediate *m, enum action a, const struct kube_write_result *wr)
{
	/* No answer or a 5xx: nothing in the cache will change for it, so the next pass is
	 * asked for by time (next_due()). */
	m->retry_soon |= wr->outcome == KUBE_WRITE_FAILED;
	ng_prom_add(&m->counts[a][wr->outcome < OUTCOMES ? wr->outcome : KUBE_WRITE_FAILED], 1);
}

static struct tracked *track(struct remediate *m, const char *uid, const char *name)
{
	for (size_t i = 0; i < m->nt; i++)
		if (strcmp(m->t[i].uid, uid) == 0)
			return &m->t[i];
	pthread_mutex_lock(&m->mu);
	struct tracked *p = ng_array_grow(m->t, &m->capt, m->nt, sizeof(*p));
	if (p) {
		m->t = p;
		p = &m->t[m->nt++];
		memset(p, 0, sizeof(*p));
		ng_fmt(p->uid, sizeof(p->uid), "%s", uid);
		ng_fmt(p->name, sizeof(p->name), "%s", name);
	}
	pthread_mutex_unlock(&m->mu);
	return p;
}

/* Forgets the NodeRemediations that were not in this step's snapshot. */
static void untrack_unseen(struct remediate *m)
{
	pthread_mutex_lock(&m->mu);
	size_t k = 0;
	for (size_t i = 0; i < m->nt; i++)
		if (m->t[i].seen) {
			m->t[i].seen = false;
			m->t[k++] = m->t[i];
		}
	m->nt = k;
	pthread_mutex_unlock(&m->mu);
}

static uint64_t name_key(const char *name)
{
	return ng_fnv1a64(NG_FNV64_INIT, name, strlen(name));
}

/* Creations the cache shows now, or made too long ago, are forgotten; true when one of @rem's
 * is still on its way. */
static bool creation_in_flight(struct remediate *m, const struct kube_snapshot *s, const char *rem)
{
	if (!m->made.n)
		return false;
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t nnd;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	for (size_t j = 0; j < nnd && m->made.n; j++) {
		size_t len;
		const char *name = ng_intern_str(pool, nds[j].name, &len);
		ng_memo_forget(&m->made, ng_fnv1a64(NG_FNV64_INIT, name, len));
	}
	return ng_memo_has_group(&m->made, name_key(rem), now_mono_ms());
}

static void remember_creation(struct remediate *m, const char *name, const char *rem)
{
	ng_memo_put_group(&m->made, name_key(name), name_key(rem),
			  now_mono_ms() + CREATION_WAIT_MS + 1);
}

/* Whether a remediation may act for its authors (authorize()). */
enum auth { AUTH_OK, AUTH_NO_AUTHOR, AUTH_FORBIDDEN, AUTH_UNAVAILABLE };
/* Its Ready reason when it may not. */
static const char *const auth_reasons[] = {"Watching", "AuthorUnknown", "Unauthorized",
					   "AuthorizationUnavailable"};

/* One step's view of one NodeRemediation. */
struct job {
	struct remediate *m;
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	const struct kube_nrem *rec;
	struct tracked *tr;
	const char *name;
	struct kube_ref ref;
	struct pol_rem_plan plan;
	int64_t now;
	enum auth auth;
	char auth_msg[512];
};

static const char *str(const struct job *j, uint32_t id)
{
	return ng_intern_str(j->pool, id, NULL);
}

static void event(struct job *j, const char *reason, const char *type, const char *msg)
{
	struct kube_event ev = {j->ref, reason, type, msg, j->m->cfg.identity, j->now, j->rec->uid};
	struct kube_write_result wr;
	kube_create_event(j->m->client, &ev, &wr);
	kube_write_log("remediation", "event not recorded", &j->ref, &wr);
}

/* ---- whose rights ---- */

/* Asks whether @a, the author of @kind @name, may create requests (and, when the template's
 * operation is privileged, privileged ones); false with j->auth and j->auth_msg when not. */
static bool author_may(struct job *j, const char *kind, const char *name,
		       const struct kube_author *a)
{
	if (a->name == NG_INTERN_NONE) {
		j->auth = AUTH_NO_AUTHOR;
		ng_fmt(j->auth_msg, sizeof(j->auth_msg),
		       "%s %s has no recorded author (annotation " KUBE_AUTHOR_ANNOTATION
		       ", written by nodegate's webhook when its spec changes): no request is "
		       "created until its spec is written with the webhook installed",
		       kind, name);
		return false;
	}
	const char **groups = ng_arena_alloc(j->m->arena, (a->ngroups + 1u) * sizeof(*groups));
	if (!groups) {
		j->auth = AUTH_UNAVAILABLE;
		ng_fmt(j->auth_msg, sizeof(j->auth_msg), "%s %s: out of memory", kind, name);
		return false;
	}
	for (uint16_t i = 0; i < a->ngroups; i++)
		groups[i] = str(j, a->groups[i]);
	const struct kube_auth_subject subj = {
	    .user = str(j, a->name), .groups = groups, .ngroups = a->ngroups};
	const char *privileged = j->plan.tmpl->privileged;
	const char *const subs[2] = {NULL, "privileged-operation"};
	for (int k = 0; k < (privileged ? 2 : 1); k++) {
		struct ng_err err = {0};
		enum kube_auth_result r =
		    j->m->cfg.may ? j->m->cfg.may(j->m->cfg.may_ctx, &subj, subs[k], &err)
				  : KUBE_AUTH_ERROR;
		if (r == KUBE_AUTH_ALLOWED)
			continue;
		char what[200];
		if (k)
			ng_fmt(
			    what, sizeof(what),
			    "create nodedisruptions/privileged-operation (the template's operation "
			    "is privileged: %s)",
			    privileged);
		else
			ng_fmt(what, sizeof(what), "create nodedisruptions");
		if (r == KUBE_AUTH_FORBIDDEN) {
			j->auth = AUTH_FORBIDDEN;
			j->m->auth_wait = true;
			ng_fmt(
			    j->auth_msg, sizeof(j->auth_msg),
			    "%s %s: its author %s may not %s: no request is created on its behalf",
			    kind, name, subj.user, what);
		} else {
			j->auth = AUTH_UNAVAILABLE;
			j->m->retry_soon = true;
			ng_fmt(j->auth_msg, sizeof(j->auth_msg),
			       "%s %s: whether its author %s may %s could not be checked (%s): no "
			       "request is created until it is",
			       kind, name, subj.user, what,
			       j->m->cfg.may ? err.msg : "no authorizer");
		}
		return false;
	}
	return true;
}

/* Whether the remediation may create requests now: a remediation acts with its author's rights
 * and its template's author's, never nodegate's own. Asked only when it could create one. */
static void authorize(struct job *j)
{
	j->auth = AUTH_OK;
	const struct pol_rem_plan *p = &j->plan;
	if (j->rec->deleting || j->rec->invalid || !p->tmpl || p->problem[0])
		return;
	if (author_may(j, "NodeRemediation", j->name, &j->rec->author))
		(void)author_may(j, "NodeDisruptionTemplate", str(j, p->tmpl->name),
				 &p->tmpl->author);
}

/* ---- the request ---- */

struct request_body {
	const struct job *j;
	const char *req_name, *node;
};

/* The template's spec (canonical JSON, an object) with nodeNames and, unless the template has
 * one, the requestor added. */
static void request_spec(struct ng_jw *w, const struct request_body *rb)
{
	const struct kube_ndt *t = rb->j->plan.tmpl;
	const char *spec = t->spec_json ? t->spec_json : "{}";
	ng_jw_key(w, "spec");
	ng_jw_obj_extend(w, spec, strlen(spec));
	ng_jw_key(w, "nodeNames");
	ng_jw_arr(w);
	ng_jw_str(w, rb->node);
	ng_jw_arr_end(w);
	if (t->requestor == NG_INTERN_NONE) {
		char requestor[128];
		ng_fmt(requestor, sizeof(requestor), "%s.noderemediation", rb->j->name);
		ng_jw_kstr(w, "requestor", requestor);
	}
	ng_jw_obj_end(w);
}

static void request_body(struct ng_jw *w, void *ctx)
{
	const struct request_body *rb = ctx;
	const struct job *j = rb->j;
	ng_jw_kstr(w, "apiVersion", "nodegate.io/v1alpha1");
	ng_jw_kstr(w, "kind", "NodeDisruption");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", rb->req_name);
	ng_jw_key(w, "labels");
	ng_jw_obj(w);
	ng_jw_kstr(w, KUBE_REMEDIATION_LABEL, j->name);
	ng_jw_obj_end(w);
	ng_jw_key(w, "annotations");
	ng_jw_obj(w);
	ng_jw_kstr(w, "nodegate.io/remediation-node", rb->node);
	ng_jw_obj_end(w);
	ng_jw_key(w, "ownerReferences");
	ng_jw_arr(w);
	ng_jw_obj(w);
	ng_jw_kstr(w, "apiVersion", "nodegate.io/v1alpha1");
	ng_jw_kstr(w, "kind", "NodeRemediation");
	ng_jw_kstr(w, "name", j->name);
	ng_jw_kstr(w, "uid", j->rec->uid);
	ng_jw_kbool(w, "controller", true);
	ng_jw_kbool(w, "blockOwnerDeletion", false);
	ng_jw_obj_end(w);
	ng_jw_arr_end(w);
	ng_jw_obj_end(w);
	request_spec(w, rb);
}

static void log_write(const struct job *j, const char *msg, const char *node, const char *req,
		      const struct kube_write_result *wr)
{
	struct ng_logline l;
	bool ok = wr->outcome == KUBE_WRITE_OK;
	if (!ng_log_begin(&l, ok ? NG_LOG_INFO : NG_LOG_WARN, "remediation", msg))
		return;
	ng_log_str(&l, "remediation", j->name);
	ng_log_str(&l, "node", node);
	ng_log_str(&l, "nd", req);
	if (!ok) {
		ng_log_str(&l, "outcome", kube_write_outcome_str(wr->outcome));
		ng_log_i64(&l, "http", wr->http);
		ng_log_str(&l, "err", wr->err.msg);
	}
	ng_log_end(&l);
}

/* Creates @e's request. False when the API server refused it (then nothing more is created for
 * REFUSED_BACKOFF_MS). */
static bool create(struct job *j, const struct pol_rem_node *e)
{
	const char *node = str(j, e->node);
	char req[254];
	pol_remediation_request_name(j->name, node, req, sizeof(req));
	struct request_body rb = {j, req, node};
	const struct kube_ref nds = {KUBE_KIND_ND, NULL, NULL};
	struct kube_write_result wr;
	kube_create(j->m->client, &nds, request_body, &rb, &wr);
	count(j->m, A_CREATE, &wr);
	if (wr.outcome == KUBE_WRITE_CONFLICT)
		return true; /* it exists: the cache will show it */
	log_write(j, wr.outcome == KUBE_WRITE_OK ? "request created" : "request not created", node,
		  req, &wr);
	char msg[600];
	if (wr.outcome == KUBE_WRITE_OK) {
		remember_creation(j->m, req, j->name);
		ng_fmt(msg, sizeof(msg), "node %s: conditions held; NodeDisruption %s created",
		       node, req);
		event(j, "RemediationStarted", "Normal", msg);
		return true;
	}
	if (wr.outcome == KUBE_WRITE_REFUSED) {
		ng_fmt(msg, sizeof(msg), "node %s: NodeDisruption %s refused (HTTP %ld): %s", node,
		       req, wr.http, wr.err.msg);
		event(j, "RequestRefused", "Warning", msg);
		j->tr->refused_until_mono_ms = now_mono_ms() + REFUSED_BACKOFF_MS;
		return false;
	}
	return true; /* failed: tried again on the next step */
}

static void delete_request(struct job *j, const struct pol_rem_node *e)
{
	const char *req = str(j, e->request->name), *node = str(j, e->node);
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, req};
	struct kube_write_result wr;
	kube_delete(j->m->client, &ref, -1, &wr);
	count(j->m, A_DELETE, &wr);
	if (wr.outcome == KUBE_WRITE_GONE)
		return;
	log_write(j, wr.outcome == KUBE_WRITE_OK ? "request deleted" : "request not deleted", node,
		  req, &wr);
	if (wr.outcome == KUBE_WRITE_OK && e->action == POL_REM_DONE) {
		char msg[600];
		ng_fmt(msg, sizeof(msg),
		       "node %s repaired: NodeDisruption %s Completed and the conditions are gone",
		       node, req);
		event(j, "Remediated", "Normal", msg);
	}
}

/* ---- status ---- */

/* A condition of the status: rendered from the plan, its transition time remembered. */
static void condition(struct ng_jw *w, struct job *j, enum cond c, bool status, const char *reason,
		      const char *msg)
{
	struct tracked *tr = j->tr;
	if (!tr->c.since[c] || tr->c.status[c] != status || strcmp(tr->c.reason[c], reason) != 0) {
		tr->c.status[c] = status;
		ng_fmt(tr->c.reason[c], sizeof(tr->c.reason[c]), "%s", reason);
		tr->c.since[c] = j->now;
	}
	ng_jw_obj(w);
	ng_jw_kstr(w, "type", cond_types[c]);
	ng_jw_kstr(w, "status", status ? "True" : "False");
	ng_jw_kstr(w, "reason", reason);
	ng_jw_kstr(w, "message", msg);
	ng_jw_key(w, "lastTransitionTime");
	ng_jw_time(w, tr->c.since[c]);
	ng_jw_obj_end(w);
}

static void status_conditions(struct ng_jw *w, struct job *j)
{
	const struct pol_rem_plan *p = &j->plan;
	char msg[512];
	const char *reason = "Watching";
	if (j->rec->deleting)
		reason = "Deleting";
	else if (j->rec->invalid)
		reason = "Invalid";
	else if (!p->tmpl)
		reason = "TemplateNotFound";
	else if (p->problem[0])
		reason = "TemplateInvalid";
	else if (j->auth != AUTH_OK)
		reason = auth_reasons[j->auth];
	if (p->problem[0])
		ng_fmt(msg, sizeof(msg), "%s", p->problem);
	else if (j->auth != AUTH_OK)
		ng_fmt(msg, sizeof(msg), "%s", j->auth_msg);
	else if (j->rec->deleting)
		ng_fmt(msg, sizeof(msg), "being deleted: open requests finish, none starts");
	else
		ng_fmt(msg, sizeof(msg), "watching %zu nodes", p->matched);
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	condition(w, j, C_READY, strcmp(reason, "Watching") == 0, reason, msg);
	if (p->storm)
		ng_fmt(msg, sizeof(msg),
		       "%zu of %zu pool nodes unhealthy, stormGuard.maxUnhealthy %lld: no new "
		       "repair starts",
		       p->unhealthy, p->matched, (long long)p->max_unhealthy);
	else
		ng_fmt(msg, sizeof(msg), "%zu of %zu pool nodes unhealthy", p->unhealthy,
		       p->matched);
	condition(w, j, C_STORM, p->storm, p->storm ? "StormGuard" : "NoStorm", msg);
	size_t o = 0;
	msg[0] = '\0';
	for (size_t i = 0; i < p->n && o + 80 < sizeof(msg); i++)
		if (p->nodes[i].action == POL_REM_COOLDOWN)
			o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s%s", o ? ", " : "",
					      str(j, p->nodes[i].node));
	if (!p->loops)
		ng_fmt(msg, sizeof(msg), "no node is unhealthy again within cooldownSeconds");
	condition(w, j, C_LOOP, p->loops > 0, p->loops ? "RemediationLoop" : "NoLoop", msg);
	ng_jw_arr_end(w);
}

static void active_requests(struct ng_jw *w, const struct job *j)
{
	static const char *const states[] = {"", "Pending", "Granted", "Rejected"};
	size_t k = 0;
	ng_jw_key(w, "activeRequests");
	ng_jw_arr(w);
	for (size_t i = 0; i < j->plan.n && k < ACTIVE_CAP; i++) {
		const struct pol_rem_node *e = &j->plan.nodes[i];
		if (!e->request || e->action == POL_REM_DELETE)
			continue;
		ng_jw_obj(w);
		ng_jw_kstr(w, "node", str(j, e->node));
		ng_jw_kstr(w, "name", str(j, e->request->name));
		ng_jw_key(w, "since");
		ng_jw_time(w, e->request->created_ms);
		ng_jw_kstr(w, "state", states[e->request->state < 4 ? e->request->state : 0]);
		ng_jw_kstr(w, "phase", e->phase);
		ng_jw_obj_end(w);
		k++;
	}
	ng_jw_arr_end(w);
	ng_jw_ki64(w, "activeCount", (int64_t)k);
}

static void last_entry(struct ng_jw *w, const char *node, int64_t at, const char *req,
		       const char *uid)
{
	ng_jw_obj(w);
	ng_jw_kstr(w, "node", node);
	ng_jw_key(w, "time");
	ng_jw_time(w, at);
	ng_jw_kstr(w, "request", req);
	ng_jw_kstr(w, "uid", uid);
	ng_jw_obj_end(w);
}

/* status.lastRemediated: the repairs just done, then those read back whose cooldown runs. */
static void last_remediated(struct ng_jw *w, const struct job *j)
{
	const struct kube_nrem *r = j->rec;
	size_t k = 0;
	ng_jw_key(w, "lastRemediated");
	ng_jw_arr(w);
	for (size_t i = 0; i < j->plan.n && k < KUBE_MAX_REM_LAST; i++) {
		const struct pol_rem_node *e = &j->plan.nodes[i];
		if (e->action != POL_REM_DONE)
			continue;
		bool recorded = false;
		for (uint16_t x = 0; x < r->nlast && !recorded; x++)
			recorded = r->last[x].node == e->node &&
				   strcmp(r->last[x].uid, e->request->uid) == 0;
		if (!recorded) {
			last_entry(w, str(j, e->node), j->now, str(j, e->request->name),
				   e->request->uid);
			k++;
		}
	}
	for (uint16_t x = 0; x < r->nlast && k < KUBE_MAX_REM_LAST; x++) {
		const struct kube_rem_last *l = &r->last[x];
		bool replaced = false;
		for (size_t i = 0; i < j->plan.n && !replaced; i++)
			replaced = j->plan.nodes[i].action == POL_REM_DONE &&
				   j->plan.nodes[i].node == l->node &&
				   strcmp(l->uid, j->plan.nodes[i].request->uid) != 0;
		if (replaced || l->at_ms + r->cooldown_ms <= j->now)
			continue;
		last_entry(w, str(j, l->node), l->at_ms, str(j, l->request), l->uid);
		k++;
	}
	ng_jw_arr_end(w);
}

static void status_body(struct ng_jw *w, struct job *j)
{
	const struct pol_rem_plan *p = &j->plan;
	ng_jw_obj(w);
	ng_jw_ki64(w, "matchedNodes", (int64_t)p->matched);
	ng_jw_ki64(w, "unhealthyNodes", (int64_t)p->unhealthy);
	active_requests(w, j);
	ng_jw_key(w, "storm");
	ng_jw_obj(w);
	ng_jw_kbool(w, "active", p->storm);
	if (p->storm) {
		ng_jw_key(w, "since");
		ng_jw_time(w, j->rec->storm && j->rec->storm_since_ms ? j->rec->storm_since_ms
								      : j->now);
	}
	ng_jw_ki64(w, "unhealthyNodes", (int64_t)p->unhealthy);
	if (p->max_unhealthy >= 0)
		ng_jw_ki64(w, "maxUnhealthy", p->max_unhealthy);
	ng_jw_obj_end(w);
	last_remediated(w, j);
	ng_jw_key(w, "waitingNodes");
	ng_jw_arr(w);
	size_t k = 0;
	for (size_t i = 0; i < p->n && k < WAITING_CAP; i++) {
		const struct pol_rem_node *e = &p->nodes[i];
		if (e->request || e->action == POL_REM_CREATE)
			continue;
		ng_jw_obj(w);
		ng_jw_kstr(w, "node", str(j, e->node));
		ng_jw_kstr(w, "reason", e->reason);
		ng_jw_obj_end(w);
		k++;
	}
	ng_jw_arr_end(w);
	status_conditions(w, j);
	ng_jw_obj_end(w);
}

/* Writes the status when it changed, with the resourceVersion it was planned on. False when it
 * could not be written (a 409: the next publish brings the newer object). */
static bool write_status(struct job *j)
{
	struct remediate *m = j->m;
	bool before[C_COUNT];
	char ready_before[32];
	for (int c = 0; c < C_COUNT; c++)
		before[c] = j->tr->c.status[c] && j->tr->c.since[c];
	ng_fmt(ready_before, sizeof(ready_before), "%s", j->tr->c.reason[C_READY]);
	const struct conds saved = j->tr->c;
	ng_buf_reset(&m->body);
	struct ng_jw w;
	ng_jw_init(&w, &m->body);
	status_body(&w, j);
	if (ng_jw_finish(&w) != NG_OK || !m->body.data) {
		j->tr->c = saved;
		return false;
	}
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, m->body.data, m->body.len) | 1;
	if (h == j->tr->written)
		return true;
	struct kube_write_result wr;
	kube_patch_status_json(m->client, &j->ref, j->rec->rv, m->body.data, m->body.len, &wr);
	count(m, A_STATUS, &wr);
	if (wr.outcome != KUBE_WRITE_OK) {
		j->tr->c = saved; /* the conditions rendered were not written: their Events wait */
		if (wr.outcome != KUBE_WRITE_CONFLICT)
			kube_write_log("remediation", "status not written", &j->ref, &wr);
		return false;
	}
	j->tr->written = h;
	const struct pol_rem_plan *p = &j->plan;
	char msg[600];
	if (p->storm && !before[C_STORM]) {
		ng_fmt(
		    msg, sizeof(msg),
		    "%zu of %zu pool nodes unhealthy, above stormGuard.maxUnhealthy %lld: no new "
		    "repair starts until fewer are",
		    p->unhealthy, p->matched, (long long)p->max_unhealthy);
		event(j, "StormDetected", "Warning", msg);
	}
	if (p->loops && !before[C_LOOP]) {
		ng_fmt(msg, sizeof(msg),
		       "%zu node(s) unhealthy again within cooldownSeconds %lld of their repair: "
		       "not repaired (status.waitingNodes)",
		       p->loops, (long long)(j->rec->cooldown_ms / 1000));
		event(j, "RemediationLoop", "Warning", msg);
	}
	if (strcmp(ready_before, j->tr->c.reason[C_READY]) != 0 && (p->problem[0] || j->auth))
		event(j, j->tr->c.reason[C_READY], "Warning",
		      p->problem[0] ? p->problem : j->auth_msg);
	return true;
}

/* ---- one NodeRemediation ---- */

static bool has_requests(const struct pol_rem_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].request)
			return true;
	return false;
}

/* The finalizer: added while the remediation lives, removed once it is deleted and its
 * requests are gone. False when this step should go no further. */
static bool finalizer(struct job *j)
{
	const struct kube_nrem *r = j->rec;
	bool want = !r->deleting || has_requests(&j->plan);
	if (!want && !r->has_finalizer)
		return false; /* on its way out: nothing left to write */
	if (want == r->has_finalizer)
		return true;
	const char **cur = ng_arena_alloc(j->m->arena, (r->nfinalizers + 1u) * sizeof(*cur));
	if (!cur)
		return false;
	for (uint16_t i = 0; i < r->nfinalizers; i++)
		cur[i] = str(j, r->finalizers[i]);
	struct kube_write_result wr;
	kube_set_finalizer(j->m->client, &j->ref, r->rv, cur, r->nfinalizers,
			   KUBE_REMEDIATION_FINALIZER, want, NULL, &wr);
	count(j->m, A_FINALIZER, &wr);
	if (wr.outcome != KUBE_WRITE_OK && wr.outcome != KUBE_WRITE_CONFLICT)
		kube_write_log("remediation", "finalizer not written", &j->ref, &wr);
	return false; /* the object changed: plan again on the new version */
}

static void act(struct job *j)
{
	const struct pol_rem_plan *p = &j->plan;
	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].action == POL_REM_DONE || p->nodes[i].action == POL_REM_DELETE)
			delete_request(j, &p->nodes[i]);
	if (j->auth != AUTH_OK || j->tr->refused_until_mono_ms > now_mono_ms() ||
	    creation_in_flight(j->m, j->s, j->name))
		return;
	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].action == POL_REM_CREATE && !create(j, &p->nodes[i]))
			return;
}

static void publish_metrics(struct job *j)
{
	pthread_mutex_lock(&j->m->mu);
	j->tr->unhealthy = j->plan.unhealthy;
	j->tr->open = j->plan.open;
	j->tr->storm = j->plan.storm;
	pthread_mutex_unlock(&j->m->mu);
}

/* Plans and acts for @rec; lowers *@next_wall to when its plan changes on its own. */
static void one(struct remediate *m, const struct kube_snapshot *s, const struct kube_nrem *rec,
		int64_t now, int64_t *next_wall)
{
	struct job j = {.m = m, .s = s, .pool = kube_snapshot_pool(s), .rec = rec, .now = now};
	j.name = str(&j, rec->name);
	j.ref = (struct kube_ref){KUBE_KIND_NREM, NULL, j.name};
	ng_arena_reset(m->arena);
	if (!(j.tr = track(m, rec->uid, j.name)))
		return;
	j.tr->seen = true;
	if (pol_remediation_plan(s, rec, now, m->arena, &j.plan) != NG_OK) {
		struct ng_logline l;
		if (ng_log_begin(&l, NG_LOG_ERROR, "remediation", "planning failed")) {
			ng_log_str(&l, "remediation", j.name);
			ng_log_str(&l, "err", "out of memory");
			ng_log_end(&l);
		}
		return;
	}
	publish_metrics(&j);
	authorize(&j);
	if (j.plan.next_ms && (!*next_wall || j.plan.next_ms < *next_wall))
		*next_wall = j.plan.next_ms;
	/* Progress goes to status before the requests change: a repair is recorded
	 * (lastRemediated) before its request is deleted, so a restart keeps the cooldown. */
	if (finalizer(&j) && write_status(&j))
		act(&j);
}

int64_t remediate_pass(struct remediate *m, const struct kube_snapshot *s, int64_t now_wall_ms)
{
	int64_t next_wall = 0;
	size_t n;
	const struct kube_nrem *recs = kube_snapshot_nrems(s, &n);
	for (size_t i = 0; i < n && !(m->rt && kube_runtime_stopping(m->rt)); i++)
		one(m, s, &recs[i], now_wall_ms, &next_wall);
	untrack_unseen(m);
	return next_wall;
}

/* Whether a pass is needed: one of the tables a plan reads changed since the last pass, or what
 * that pass asked to be woken for has come. Pods churn the cache; they change no plan. */
static bool pass_needed(struct remediate *m, const struct kube_snapshot *s)
{
	static const enum kube_resource reads[READS] = {KUBE_RES_NODES, KUBE_RES_NDS, KUBE_RES_NDTS,
							KUBE_RES_NREMS};
	bool changed = !m->passed;
	for (int i = 0; i < READS; i++) {
		uint64_t serial = kube_snapshot_table_serial(s, reads[i]);
		changed |= serial != m->serials[i];
		m->serials[i] = serial;
	}
	return changed || (m->due_mono_us && ng_now_mono_us() >= m->due_mono_us);
}

/* When the next pass is due without any change (monotonic µs), or 0. */
static int64_t next_due(const struct remediate *m, int64_t next_wall, int64_t now_wall)
{
	int64_t now_ms = now_mono_ms(), due_ms = 0;
	if (next_wall)
		due_ms = now_ms + (next_wall > now_wall ? next_wall - now_wall : 0) + 50;
	if (m->made.n && (!due_ms || due_ms > now_ms + CREATION_WAIT_MS))
		due_ms = now_ms + CREATION_WAIT_MS;
	if (m->retry_soon && (!due_ms || due_ms > now_ms + FAILED_RETRY_MS))
		due_ms = now_ms + FAILED_RETRY_MS;
	if (m->auth_wait && (!due_ms || due_ms > now_ms + AUTH_RECHECK_MS))
		due_ms = now_ms + AUTH_RECHECK_MS;
	for (size_t i = 0; i < m->nt; i++) {
		int64_t r = m->t[i].refused_until_mono_ms;
		if (r > now_ms && (!due_ms || r < due_ms))
			due_ms = r;
	}
	return due_ms * 1000;
}

static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct remediate *m = ctx;
	(void)rt;
	if (m->cfg.leader && !leader_is_leader(m->cfg.leader)) {
		ng_memo_clear(&m->made);
		m->passed = false;        /* a new term starts with a pass */
		return KUBE_RUNTIME_IDLE; /* the leader's watch wakes this thread */
	}
	struct kube_snapshot *s = kube_store_acquire(m->cfg.store);
	if (!s)
		return KUBE_RUNTIME_IDLE;
	if (!pass_needed(m, s)) {
		kube_snapshot_release(s);
		return m->due_mono_us ? m->due_mono_us : KUBE_RUNTIME_IDLE;
	}
	int64_t now = ng_now_wall_ms();
	m->retry_soon = m->auth_wait = false;
	int64_t next_wall = remediate_pass(m, s, now);
	kube_snapshot_release(s);
	m->passed = true;
	m->due_mono_us = next_due(m, next_wall, now);
	return m->due_mono_us ? m->due_mono_us : KUBE_RUNTIME_IDLE;
}

struct remediate *remediate_create(const struct remediate_config *cfg, struct kube_client *client,
				   struct ng_err *reterr)
{
	struct remediate *m = calloc(1, sizeof(*m));
	if (!m || !(m->arena = ng_arena_create(64u << 20))) {
		free(m);
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	m->client = client;
	ng_buf_init(&m->body, STATUS_CAP);
	ng_memo_init(&m->made, CREATION_CAP);
	pthread_mutex_init(&m->mu, NULL);
	return m;
}

struct remediate *remediate_start(const struct remediate_config *cfg, struct ng_err *reterr)
{
	struct remediate *m = remediate_create(cfg, NULL, reterr);
	if (!m)
		return NULL;
	const struct scaffold_config sc = {.name = "remediation",
					   .kube = cfg->kube,
					   .store = cfg->store,
					   .watch = cfg->watch,
					   .leader = cfg->leader,
					   .step = step,
					   .ctx = m};
	m->rt = scaffold_create(&sc, reterr);
	if (m->rt)
		m->client = kube_runtime_client(m->rt);
	if (!m->rt || kube_runtime_start(m->rt, reterr) != NG_OK) {
		remediate_stop(m);
		return NULL;
	}
	return m;
}

ng_status remediate_render_metrics(const struct remediate *cm, bool objects, struct ng_buf *out)
{
	struct remediate *m = (struct remediate *)(uintptr_t)cm;
	ng_status st =
	    ng_prom_header(out, "nodegate_remediation_actions_total", NG_PROM_COUNTER,
			   "Writes of the remediation controller, by action and outcome.");
	for (int a = 0; st == NG_OK && m && a < A_COUNT; a++)
		for (int o = 0; st == NG_OK && o < OUTCOMES; o++) {
			const struct ng_prom_label l[] = {
			    {"action", action_names[a]},
			    {"result", kube_write_outcome_str((enum kube_write_outcome)o)}};
			st = ng_prom_u64(out, "nodegate_remediation_actions_total", l, 2,
					 ng_prom_get(&m->counts[a][o]));
		}
	static const struct {
		const char *name, *help;
	} gauges[] = {
	    {"nodegate_remediation_unhealthy_nodes",
	     "Pool nodes whose rule conditions hold now, per NodeRemediation."},
	    {"nodegate_remediation_open_requests",
	     "Requests of the NodeRemediation counted against maxConcurrent."},
	    {"nodegate_remediation_storm", "1 while the NodeRemediation's storm guard holds."},
	};
	/* Labelled with the NodeRemediation's name: only where objects may be named. */
	for (size_t g = 0; objects && st == NG_OK && g < 3; g++) {
		st = ng_prom_header(out, gauges[g].name, NG_PROM_GAUGE, gauges[g].help);
		if (!m)
			continue;
		pthread_mutex_lock(&m->mu);
		for (size_t i = 0; st == NG_OK && i < m->nt; i++) {
			const struct ng_prom_label l[] = {{"remediation", m->t[i].name}};
			uint64_t v = g == 0   ? m->t[i].unhealthy
				     : g == 1 ? m->t[i].open
					      : m->t[i].storm;
			st = ng_prom_u64(out, gauges[g].name, l, 1, v);
		}
		pthread_mutex_unlock(&m->mu);
	}
	return st;
}

void remediate_stop(struct remediate *m)
{
	if (!m)
		return;
	scaffold_stop(m->rt, m->cfg.leader);
	ng_buf_finish(&m->body);
	ng_arena_destroy(m->arena);
	pthread_mutex_destroy(&m->mu);
	free(m->t);
	ng_memo_free(&m->made);
	free(m);
}
