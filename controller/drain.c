/* The drainer (controller/drain.h, docs/drainer.md): one pass over every request per step. Each
 * request's place in the sequence is its Ready condition's reason; each node's is the
 * annotation nodegate.io/drain. Deciding which pods go is policy/drain.c's, and what comes next
 * in the sequence policy/drain_step.c's; this file gathers the facts, reads the snapshot, writes
 * through kube/write and keeps only what a restart may forget (which pods were asked to leave a
 * moment ago). */
#include "controller/drain_internal.h"

#include "budgets/selector.h"
#include "common/arena.h"
#include "common/backoff.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/map.h"
#include "common/prom.h"
#include "common/regex.h"
#include "controller/leader.h"
#include "kube/lookup.h"
#include "kube/records.h"
#include "kube/runtime.h"
#include "kube/snapshot.h"
#include "kube/write.h"
#include "policy/drain.h"
#include "policy/drain_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const failure_names[F_COUNT] = {"blocked", "held", "timeout", "spec",
						   "operation"};

const char *const strategy_names[4] = {"Evict", "Delete", "ForceDelete", "None"};

static const double duration_buckets_s[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};

/* ---- small things ---- */

const char *str(const struct req *r, uint32_t id)
{
	const char *s = id == NG_INTERN_NONE ? NULL : ng_intern_str(r->pool, id, NULL);
	return s ? s : "";
}

void soon(struct req *r, int64_t at_mono_ms)
{
	if (at_mono_ms < *r->next_mono_ms)
		*r->next_mono_ms = at_mono_ms;
}

void logline(const struct req *r, const char *msg, const char *node, const char *detail)
{
	struct ng_logline l;
	if (!ng_log_begin(&l, NG_LOG_INFO, "drain", msg))
		return;
	ng_log_str(&l, "request", r->name);
	if (node)
		ng_log_str(&l, "node", node);
	if (detail)
		ng_log_str(&l, "detail", detail);
	ng_log_end(&l);
}

void count_write(struct drain *d, const struct kube_write_result *w, const char *what,
		 const struct kube_ref *ref)
{
	if (w->outcome == KUBE_WRITE_OK)
		ng_prom_add(&d->writes, 1);
	else if (w->outcome == KUBE_WRITE_CONFLICT)
		ng_prom_add(&d->conflicts, 1);
	else
		ng_prom_add(&d->errors, 1);
	if (w->outcome != KUBE_WRITE_CONFLICT)
		kube_write_log("drain", what, ref, w);
}

static void write_event(struct kube_client *client, const struct kube_event *ev)
{
	struct kube_write_result w;
	kube_create_event(client, ev, &w);
	kube_write_log("drain", "event not recorded", &ev->about, &w);
}

/* Copies @s to @at, returns the place after it. */
static char *put_str(char *at, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(at, s, n);
	return at + n;
}

/* Queues an Event for the end of the round (flush_events()); written at once, through the step's
 * client, when the queue is full or out of memory. */
static void event_about(struct req *r, const struct kube_ref about, const char *uid,
			const char *reason, const char *type, const char *msg)
{
	struct drain *d = r->d;
	const char *ns = about.ns ? about.ns : "", *name = about.name ? about.name : "";
	uid = uid ? uid : "";
	size_t len = strlen(ns) + strlen(name) + strlen(uid) + strlen(reason) + strlen(type) +
		     strlen(msg) + 6;
	char *buf = malloc(len);
	pthread_mutex_lock(&d->mu);
	struct queued_event *q =
	    d->nevents < EVENTS_QUEUED_MAX
		? ng_array_grow(d->events, &d->capevents, d->nevents, sizeof(*q))
		: NULL;
	if (q)
		d->events = q;
	if (!q || !buf) {
		pthread_mutex_unlock(&d->mu);
		free(buf);
		struct kube_event ev = {about, reason, type, msg, d->cfg.identity, r->now_ms, uid};
		write_event(r->client, &ev);
		return;
	}
	q = &d->events[d->nevents++];
	q->kind = about.kind;
	q->at_ms = r->now_ms;
	char *at = buf;
	q->ns = at;
	at = put_str(at, ns);
	q->name = at;
	at = put_str(at, name);
	q->uid = at;
	at = put_str(at, uid);
	q->reason = at;
	at = put_str(at, reason);
	q->type = at;
	at = put_str(at, type);
	q->msg = at;
	(void)put_str(at, msg);
	pthread_mutex_unlock(&d->mu);
}

bool newer_snapshot(const struct drain *d, const struct kube_snapshot *s)
{
	return d->cfg.store && kube_store_generation(d->cfg.store) != kube_snapshot_generation(s);
}

/* Writes the round's queued Events, oldest first; once a newer snapshot is out, the rest after
 * the first EVENTS_AT_LEAST wait for the end of the next round (which that publish brings at
 * once), so a busy cluster still sees them all. */
static void flush_events(struct drain *d, const struct kube_snapshot *s)
{
	size_t i = 0;
	for (; i < d->nevents && (i < EVENTS_AT_LEAST || !newer_snapshot(d, s)); i++) {
		struct queued_event *q = &d->events[i];
		struct kube_event ev = {{q->kind, *q->ns ? q->ns : NULL, q->name},
					q->reason,
					q->type,
					q->msg,
					d->cfg.identity,
					q->at_ms,
					q->uid};
		write_event(d->client, &ev);
		free(q->ns);
	}
	if (i && i < d->nevents)
		memmove(d->events, d->events + i, (d->nevents - i) * sizeof(*d->events));
	d->nevents -= i;
}

/* An Event on the request. */
void event(struct req *r, const char *reason, const char *type, const char *msg)
{
	event_about(r, (struct kube_ref){KUBE_KIND_ND, NULL, r->name}, r->nd ? r->nd->uid : NULL,
		    reason, type, msg);
}

/* An Event on node @n, naming the request: what `kubectl describe node` readers look for. */
void node_event(struct req *r, const struct kube_node *n, const char *reason, const char *msg)
{
	char m[600];
	ng_fmt(m, sizeof(m), "%s (NodeDisruption %s)", msg, r->name);
	event_about(r, (struct kube_ref){KUBE_KIND_NODE, NULL, str(r, n->name)}, n->uid, reason,
		    "Normal", m);
}

static const struct kube_condition *condition(const struct kube_nd_detail *x, const char *type)
{
	for (uint16_t i = 0; i < x->nconditions; i++)
		if (strcmp(x->conditions[i].type, type) == 0)
			return &x->conditions[i];
	return NULL;
}

static bool has_finalizer(const struct req *r)
{
	for (uint16_t i = 0; i < r->nd->nfinalizers; i++)
		if (strcmp(str(r, r->nd->finalizers[i]), DRAIN_FINALIZER) == 0)
			return true;
	return false;
}

bool note_holds(const struct kube_drain_note *n, uint32_t name)
{
	for (uint16_t i = 0; n->present && !n->invalid && i < n->nholders; i++)
		if (n->holders[i] == name)
			return true;
	return false;
}

bool node_has_taint(const struct kube_node *n, const struct kube_taint *t)
{
	for (uint32_t i = 0; i < n->ntaints; i++)
		if (n->taints[i].key == t->key && n->taints[i].effect == t->effect)
			return true;
	return false;
}

uint64_t pod_key(const struct req *r, const struct kube_pod *p)
{
	const char *ns = str(r, p->ns);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, ns, strlen(ns) + 1);
	return ng_fnv1a64(h, p->name, strlen(p->name));
}

/* The version of the request this drainer has written over, as a key of the asked table: a step
 * that still sees it would only write again and be refused with a conflict. */
static uint64_t nd_key(const struct req *r)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, "nd", 3);
	h = ng_fnv1a64(h, r->name, strlen(r->name) + 1);
	return r->rv ? ng_fnv1a64(h, r->rv, strlen(r->rv)) : h;
}

bool asked_has(struct req *r, uint64_t key)
{
	pthread_mutex_lock(&r->d->mu);
	bool has = ng_memo_has(&r->d->asked, key, r->now_mono_ms);
	pthread_mutex_unlock(&r->d->mu);
	return has;
}

void asked_put(struct req *r, uint64_t key, int64_t until_mono_ms)
{
	pthread_mutex_lock(&r->d->mu);
	ng_memo_put(&r->d->asked, key, until_mono_ms);
	pthread_mutex_unlock(&r->d->mu);
}

/* After a write that changed the request, or one refused because it had changed (409: a newer
 * version exists), this version is not written against again. */
void nd_written(struct req *r, const struct kube_write_result *w)
{
	if ((w->outcome == KUBE_WRITE_OK && w->http) || w->outcome == KUBE_WRITE_CONFLICT)
		asked_put(r, nd_key(r), r->now_mono_ms + ASKED_MS);
}

/* ---- status ---- */

struct status_body {
	const struct req *r;
	bool ready_true;
	int64_t since_ms;
};

static void status_body(struct ng_jw *w, void *ctx)
{
	const struct status_body *sb = ctx;
	const struct req *r = sb->r;
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	for (uint16_t i = 0; i < r->x->nconditions; i++) {
		const struct kube_condition *c = &r->x->conditions[i];
		if (strcmp(c->type, "Ready") == 0)
			continue;
		static const char *const st[3] = {"Unknown", "True", "False"};
		ng_jw_obj(w);
		ng_jw_kstr(w, "type", c->type);
		ng_jw_kstr(w, "status", st[c->status < 3 ? c->status : 0]);
		if (*c->reason)
			ng_jw_kstr(w, "reason", c->reason);
		if (*c->message)
			ng_jw_kstr(w, "message", c->message);
		if (c->since_ms) {
			ng_jw_key(w, "lastTransitionTime");
			ng_jw_time(w, c->since_ms);
		}
		ng_jw_obj_end(w);
	}
	ng_jw_obj(w);
	ng_jw_kstr(w, "type", "Ready");
	ng_jw_kstr(w, "status", sb->ready_true ? "True" : "False");
	ng_jw_kstr(w, "reason", pol_drain_phase_reason(r->phase));
	ng_jw_kstr(w, "message", r->msg);
	ng_jw_key(w, "lastTransitionTime");
	ng_jw_time(w, sb->since_ms);
	ng_jw_obj_end(w);
	ng_jw_arr_end(w);
	ng_jw_key(w, "drain");
	ng_jw_obj(w);
	ng_jw_ki64(w, "totalPods", r->ds.total);
	ng_jw_ki64(w, "evictedPods", r->ds.evicted);
	ng_jw_ki64(w, "remainingPods", r->ds.remaining);
	ng_jw_ki64(w, "progress", r->ds.progress);
	ng_jw_ki64(w, "attempts", r->ds.attempts);
	ng_jw_key(w, "backoffUntil");
	if (r->ds.backoff_until_ms)
		ng_jw_time_ms(w, r->ds.backoff_until_ms);
	else
		ng_jw_null(w);
	ng_jw_key(w, "attemptStartedAt");
	if (r->ds.attempt_started_ms)
		ng_jw_time_ms(w, r->ds.attempt_started_ms);
	else
		ng_jw_null(w);
	ng_jw_obj_end(w);
}

/* Writes the status @r built when it differs from what the request shows. Events and metrics
 * of a phase change go with it. Returns whether the request is as @r says now. */
bool write_status(struct req *r)
{
	const struct kube_nd_drain_status *old = &r->x->drain_status;
	struct kube_nd_drain_status *ds = &r->ds;
	ds->progress = pol_drain_phase_ready(r->phase) ? 100
		       : ds->total                     ? ds->evicted * 100 / ds->total
						       : 0;
	bool ready_true = pol_drain_phase_ready(r->phase);
	const struct kube_condition *c = r->ready;
	bool same = c && c->status == (ready_true ? KUBE_COND_TRUE : KUBE_COND_FALSE) &&
		    r->was == r->phase && strcmp(c->message, r->msg) == 0 &&
		    memcmp(old, ds, sizeof(*ds)) == 0;
	if (same)
		return true;
	struct status_body sb = {r, ready_true, c && r->was == r->phase ? c->since_ms : r->now_ms};
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, r->name};
	struct kube_write_result w;
	kube_patch_status(r->client, &ref, r->rv, status_body, &sb, &w);
	count_write(r->d, &w, "status not written", &ref);
	nd_written(r, &w);
	if (w.outcome != KUBE_WRITE_OK)
		return false;
	if (r->began) {
		ng_prom_add(&r->d->attempts, 1);
		r->began = false;
	}
	if (r->was != r->phase) {
		logline(r, pol_drain_phase_reason(r->phase), NULL, r->msg);
		static const char *const ev[POL_PH_COUNT] = {
		    [POL_PH_DRAINED] = "Drained",
		    [POL_PH_OPERATING] = "Operating",
		    [POL_PH_COMPLETED] = "Completed",
		    [POL_PH_FAILED] = "Failed",
		    [POL_PH_REQUESTOR_FAILED] = "RequestorFailed",
		    [POL_PH_QUARANTINED] = "DrainDeadlineExceeded"};
		bool bad = r->phase == POL_PH_FAILED || r->phase == POL_PH_QUARANTINED;
		if (ev[r->phase])
			event(r, ev[r->phase], bad ? "Warning" : "Normal", r->msg);
		if (r->phase == POL_PH_DRAINED && r->x->granted_ms > 0)
			ng_prom_hist_observe_us(&r->d->duration,
						(r->now_ms - r->x->granted_ms) * 1000);
		if (r->phase == POL_PH_DRAINED)
			for (uint16_t i = 0; i < r->nd->ndisrupted; i++) {
				const struct kube_node *n =
				    kube_snapshot_find_node(r->s, r->nd->disrupted[i]);
				if (n)
					node_event(r, n, "Drained", "no pod left to move");
			}
	}
	return true;
}

/* The attempt failed: count it, back off, say why. */
void fail_attempt(struct req *r, enum failure f, const char *why)
{
	const struct kube_ngc *g = r->ngc;
	int64_t base =
	    g && g->drain_backoff_base_ms >= 0 ? g->drain_backoff_base_ms : BACKOFF_BASE_MS;
	int64_t max = g && g->drain_backoff_max_ms >= 0 ? g->drain_backoff_max_ms : BACKOFF_MAX_MS;
	int64_t jitter =
	    g && g->drain_backoff_jitter_ms >= 0 ? g->drain_backoff_jitter_ms : BACKOFF_JITTER_MS;
	pthread_mutex_lock(&r->d->mu);
	int64_t draw = jitter > 0 ? (int64_t)(ng_rng_next(&r->d->rng) % (uint64_t)jitter) : 0;
	pthread_mutex_unlock(&r->d->mu);
	r->ds.attempts++;
	int64_t wait = pol_drain_backoff_ms(r->ds.attempts, base, max, draw);
	r->ds.backoff_until_ms = r->now_ms + wait;
	r->ds.attempt_started_ms = 0;
	r->phase = POL_PH_DRAINING;
	ng_fmt(r->msg, sizeof(r->msg), "attempt %lld failed: %s; next attempt in %llds",
	       (long long)r->ds.attempts, why, (long long)((wait + 999) / 1000));
	if (write_status(r)) {
		ng_prom_add(&r->d->failures[f], 1);
		event(r, "DrainFailed", "Warning", r->msg);
		logline(r, "drain attempt failed", NULL, r->msg);
	}
	soon(r, r->now_mono_ms + wait);
}

/* The version of node @n this drainer has patched, as a key of the asked table: until the cache
 * shows the node as written, a step sees the old version and must not patch it again (the
 * repeat would fail, or undo another holder's change). */
uint64_t node_key(const struct req *r, const struct kube_node *n)
{
	const char *name = str(r, n->name);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, "node", 5);
	h = ng_fnv1a64(h, name, strlen(name) + 1);
	const char *rv = kube_snapshot_node_rv(r->s, n);
	return rv ? ng_fnv1a64(h, rv, strlen(rv)) : h;
}

/* Whether node @n is in a version this drainer has written over (or was refused a write on with
 * 409): the cache has not caught up; the step comes back once the watch has the new one. */
bool node_written(struct req *r, const struct kube_node *n)
{
	if (!asked_has(r, node_key(r, n)))
		return false;
	soon(r, r->now_mono_ms + POLL_MS);
	return true;
}

static void job_name(const struct req *r, const struct kube_node *n, char *out, size_t cap)
{
	const char *node = str(r, n->name);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, r->name, strlen(r->name) + 1);
	h = ng_fnv1a64(h, node, strlen(node));
	(void)snprintf(out, cap, "nodegate-op-%016llx", (unsigned long long)h);
}

/* Creates node @n's operation Job @ns/@name from operation.jobTemplate. False when it cannot
 * be created at all: the request then failed, and its status says so. */
static bool create_job(struct req *r, const struct kube_node *n, const char *ns, const char *name)
{
	const char *node = str(r, n->name);
	bool short_name = strlen(r->name) <= 63;
	const char *keys[2] = {"nodegate.io/node", "nodegate.io/request"};
	const char *vals[2] = {node, r->name};
	const struct kube_nd_drain *dr = &r->x->drain;
	struct kube_taint_spec t = {str(r, dr->taint.key),
				    dr->taint.val == NG_INTERN_NONE ? NULL : str(r, dr->taint.val),
				    str(r, dr->taint.effect)};
	const struct kube_job_spec j = {ns,
					name,
					node,
					keys,
					vals,
					short_name ? 2u : 1u,
					dr->has_taint ? &t : NULL,
					dr->has_taint ? 1u : 0u,
					r->d->cfg.operation_service_account};
	struct kube_write_result w;
	kube_create_job(r->client, r->x->operation.job_template, &j, &w);
	const struct kube_ref ref = {KUBE_KIND_JOB, ns, name};
	if (w.outcome != KUBE_WRITE_CONFLICT)
		count_write(r->d, &w, "operation Job not created", &ref);
	if (w.outcome == KUBE_WRITE_OK)
		logline(r, "operation Job created", node, name);
	else if (w.outcome == KUBE_WRITE_REFUSED ||
		 (w.outcome == KUBE_WRITE_FAILED && w.http == 0 && w.err.status == NG_EPARSE)) {
		r->phase = POL_PH_FAILED;
		ng_prom_add(&r->d->failures[F_OPERATION], 1);
		ng_fmt(r->msg, sizeof(r->msg),
		       "operation Job for node %s could not be created: %.300s", node, w.err.msg);
		(void)write_status(r);
		return false;
	}
	return true;
}

/* operation.jobTemplate: one Job per node. True when every Job completed. */
static bool operate(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	const char *ns = r->d->cfg.operation_namespace ? r->d->cfg.operation_namespace : "default";
	size_t done = 0;
	for (size_t i = 0; i < nn; i++) {
		char name[64], why[320] = "";
		job_name(r, nodes[i], name, sizeof(name));
		enum kube_job_state js;
		struct ng_err err = {0};
		if (kube_get_job(r->client, ns, name, &js, why, sizeof(why), &err) != NG_OK) {
			soon(r, r->now_mono_ms + POLL_MS);
			return false;
		}
		switch (pol_drain_job_next(js, r->was, r->ready != NULL,
					   r->ready ? r->ready->since_ms : 0, r->now_ms)) {
		case POL_JOB_DONE:
			done++;
			break;
		case POL_JOB_FAILED:
			r->phase = POL_PH_FAILED;
			ng_prom_add(&r->d->failures[F_OPERATION], 1);
			ng_fmt(r->msg, sizeof(r->msg), "operation Job %s/%s on node %s failed: %s",
			       ns, name, str(r, nodes[i]->name),
			       js == KUBE_JOB_FAILED ? why : "the Job was deleted");
			(void)write_status(r);
			return false;
		case POL_JOB_CREATE:
			if (!create_job(r, nodes[i], ns, name))
				return false;
			break;
		case POL_JOB_WAIT:
			break;
		}
	}
	if (done == nn)
		return true;
	r->phase = POL_PH_OPERATING;
	ng_fmt(r->msg, sizeof(r->msg), "%zu of %zu operation Job(s) completed", done, nn);
	(void)write_status(r);
	soon(r, r->now_mono_ms + POLL_MS);
	return false;
}

/* Whether @r's drain deadline calls for quarantine now; a drain that may still reach it wakes
 * the drainer when it passes. */
static bool quarantine_due(struct req *r)
{
	if (r->x->drain.on_deadline != KUBE_ON_DEADLINE_QUARANTINE || pol_drain_phase_ready(r->was))
		return false;
	int64_t at = pol_drain_deadline_ms(r->x, r->ngc);
	if (at > r->now_ms)
		soon(r, r->now_mono_ms + (at - r->now_ms));
	return at > 0 && at <= r->now_ms;
}

/* What the sequence needs to know of @r before it has done anything this step. */
static struct pol_drain_facts facts_of(struct req *r)
{
	const struct kube_nd_detail *x = r->x;
	const struct kube_condition *rf = condition(x, "RequestorFailed");
	return (struct pol_drain_facts){.gone = r->nd->deleting || r->nd->state != KUBE_ND_GRANTED,
					.has_finalizer = has_finalizer(r),
					.held_by_others = r->nd->additional_requestors,
					.requestor_failed = rf && rf->status == KUBE_COND_TRUE,
					.spec_error = x->spec_error != NG_INTERN_NONE,
					.wants_drain = x->drain.present,
					.wants_operation = x->operation.present,
					.job_template = x->operation.job_template != NULL,
					.wait_for_reboot = x->operation.wait_for_reboot,
					.quarantine_due = quarantine_due(r),
					.was = r->was};
}

/* Holds every node of the request; what the sequence learns from it goes into @f. */
static void hold_nodes(struct req *r, struct pol_drain_facts *f, const struct kube_node ***nodes,
		       size_t *nn)
{
	*nn = request_nodes(r, nodes);
	bool all_held = true;
	for (size_t i = 0; i < *nn; i++)
		if (!hold_node(r, (*nodes)[i]))
			all_held = false;
	f->held = all_held ? POL_FACT_YES : POL_FACT_NO;
	f->nodes = *nn;
	f->rebooted = pol_drain_rebooted(*nodes, *nn);
}

/* Sets @a's phase; the message is already in r->msg. Whether the status was written. */
static bool set_status(struct req *r, const struct pol_drain_action *a)
{
	r->phase = a->phase;
	return write_status(r);
}

/* The pods of the request's nodes are gone: status Drained. False when it was not written. */
static bool mark_drained(struct req *r, const struct pol_drain_action *a, size_t nn)
{
	r->ds.evicted = r->ds.total;
	r->ds.remaining = 0;
	r->ds.backoff_until_ms = 0;
	r->ds.attempt_started_ms = 0;
	ng_fmt(r->msg, sizeof(r->msg), "%zu node(s) drained", nn);
	if (!set_status(r, a))
		return false;
	forget_chosen(r->d, r->name);
	r->was = POL_PH_DRAINED;
	return true;
}

/* A request being deleted (or no longer Granted): its nodes back, then its finalizer off. */
static void give_back(struct req *r)
{
	const struct kube_nd_detail *x = r->x;
	size_t nn;
	const struct kube_node *nodes = kube_snapshot_nodes(r->s, &nn);
	bool all = true;
	for (size_t i = 0; i < nn; i++) {
		/* A note that no longer parses may hold this request: keep the finalizer. */
		for (uint16_t k = 0; nodes[i].note.invalid && k < r->nd->ndisrupted; k++)
			if (r->nd->disrupted[k] == nodes[i].name)
				all = false;
		if (!release_node(r, &nodes[i], r->nd->name, x))
			all = false;
	}
	if (!all || !has_finalizer(r))
		return;
	if (set_finalizer(r, false) == KUBE_WRITE_OK) {
		forget_chosen(r->d, r->name);
		logline(r, "finalizer removed", NULL, NULL);
		if (r->nd->deleting)
			event(r, "Released", "Normal", "the drainer gave the node(s) back");
	}
}

/* The drain deadline passed with onDeadline Quarantine: every node labelled, then the request
 * fails with reason DrainDeadlineExceeded. The nodes stay cordoned (docs/drainer.md). */
static void quarantine(struct req *r, const struct pol_drain_action *a,
		       const struct kube_node *const *nodes, size_t nn)
{
	bool all = true;
	for (size_t i = 0; i < nn; i++)
		if (!quarantine_node(r, nodes[i]))
			all = false;
	if (!all) {
		soon(r, r->now_mono_ms + POLL_MS);
		return;
	}
	int64_t secs = r->x->drain.deadline_s >= 0 ? r->x->drain.deadline_s
						   : (r->ngc ? r->ngc->drain_deadline_s : 0);
	char was[sizeof(r->msg)];
	ng_fmt(was, sizeof(was), "%s", *r->msg ? r->msg : "no progress");
	ng_fmt(r->msg, sizeof(r->msg),
	       "drain deadline of %llds passed with the drain unfinished (%s): %zu node(s) stay "
	       "cordoned and labelled " DRAIN_QUARANTINE_LABEL "; delete the request, then "
	       "remove the label from each node to give it back",
	       (long long)secs, was, nn);
	(void)set_status(r, a);
}

/* A Granted request asks for a drain or an operation: does @a. True when the sequence goes on. */
static bool perform(struct req *r, const struct pol_drain_action *a, struct pol_drain_facts *f,
		    const struct kube_node ***nodes, size_t *nn)
{
	const struct kube_condition *rf;
	switch (a->what) {
	case POL_DO_FAIL_SPEC:
		ng_fmt(r->msg, sizeof(r->msg), "%s", str(r, r->x->spec_error));
		(void)set_status(r, a);
		return false;
	case POL_DO_ADD_FINALIZER: /* before any node is touched: a deleted request never has one */
		/* Taken, with the new version in the answer: the nodes are held in this step, and
		 * its status writes carry that version. Else the watch brings it. */
		if (set_finalizer(r, true) != KUBE_WRITE_OK || r->rv == r->nd->rv)
			return false;
		f->has_finalizer = true;
		return true;
	case POL_DO_HOLD_NODES:
		hold_nodes(r, f, nodes, nn);
		return true;
	case POL_DO_STILL_HOLDING:
		r->phase = a->phase;
		if (r->phase == POL_PH_CORDONING && !*r->msg)
			ng_fmt(r->msg, sizeof(r->msg), "cordoning %zu node(s)", *nn);
		if (r->phase == POL_PH_CORDONING)
			(void)write_status(r);
		return false;
	case POL_DO_REQUESTOR_FAILED:
		rf = condition(r->x, "RequestorFailed");
		ng_fmt(r->msg, sizeof(r->msg),
		       "the requestor reported a failure (%s); the node(s) stay cordoned until "
		       "the condition is cleared",
		       *rf->message ? rf->message : rf->reason);
		(void)set_status(r, a);
		return false;
	case POL_DO_DRAIN:
		f->drained = waiting_for_pods(r, *nodes, *nn) || !drain_pods(r, *nodes, *nn)
				 ? POL_FACT_NO
				 : POL_FACT_YES;
		return true;
	case POL_DO_MARK_DRAINED:
		if (!mark_drained(r, a, *nn))
			return false;
		f->was = POL_PH_DRAINED;
		return true;
	case POL_DO_OPERATE:
		f->operated = operate(r, *nodes, *nn) ? POL_FACT_YES : POL_FACT_NO;
		return true;
	case POL_DO_WAIT_REBOOT:
		ng_fmt(r->msg, sizeof(r->msg), "%zu of %zu node(s) rebooted and Ready", f->rebooted,
		       *nn);
		(void)set_status(r, a);
		return false;
	case POL_DO_COMPLETE:
		ng_fmt(r->msg, sizeof(r->msg), "operation completed on %zu node(s)", *nn);
		(void)set_status(r, a);
		return false;
	case POL_DO_QUARANTINE:
		quarantine(r, a, *nodes, *nn);
		return false;
	case POL_DO_GIVE_BACK:
		give_back(r);
		return false;
	case POL_DO_NOTHING:
		return false;
	}
	return false;
}

void drain_one_request(struct drain *d, struct kube_client *client, const struct kube_snapshot *s,
		       const struct kube_nd *nd, struct ng_arena *arena, int64_t now_wall_ms,
		       int64_t now_mono_ms, int64_t *next_mono_ms)
{
	struct req r = {.d = d,
			.client = client,
			.s = s,
			.pool = kube_snapshot_pool(s),
			.ngc = kube_snapshot_config(s),
			.nd = nd,
			.x = nd->detail,
			.rv = nd->rv,
			.arena = arena,
			.now_ms = now_wall_ms,
			.now_mono_ms = now_mono_ms,
			.next_mono_ms = next_mono_ms};
	if (r.ngc && r.ngc->invalid)
		r.ngc = NULL; /* defaults, as the gate does */
	r.name = str(&r, nd->name);
	if (!r.x)
		return;
	if (asked_has(&r, nd_key(&r))) {
		soon(&r, r.now_mono_ms + POLL_MS); /* the watch has not brought our write yet */
		return;
	}
	r.ready = condition(r.x, "Ready");
	r.was = pol_drain_phase_of(r.ready ? r.ready->reason : NULL);
	r.phase = r.was;
	r.ds = r.x->drain_status;
	if (r.ready)
		ng_fmt(r.msg, sizeof(r.msg), "%s", r.ready->message);
	/* Gather, ask policy/drain_step what comes next, do it, and ask again. */
	struct pol_drain_facts f = facts_of(&r);
	const struct kube_node **nodes = NULL;
	size_t nn = 0;
	for (;;) {
		struct pol_drain_action a = pol_drain_next(&f);
		if (!perform(&r, &a, &f, &nodes, &nn))
			return;
	}
}

struct req round_req(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		     int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms,
		     const char *name)
{
	return (struct req){.d = d,
			    .client = d->client,
			    .s = s,
			    .pool = kube_snapshot_pool(s),
			    .arena = arena,
			    .now_ms = now_wall_ms,
			    .now_mono_ms = now_mono_ms,
			    .next_mono_ms = next_mono_ms,
			    .name = name};
}

/* Notes naming requests that no longer exist (their finalizer was removed by hand): those
 * holders leave, so a node is never kept cordoned by a request nobody can see. */
static void sweep(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		  int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms)
{
	size_t nn, nr;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	const struct kube_nd *nds = kube_snapshot_nds(s, &nr);
	uint64_t held = 0;
	struct req r = round_req(d, s, arena, now_wall_ms, now_mono_ms, next_mono_ms, "(gone)");
	for (size_t i = 0; i < nn; i++) {
		const struct kube_drain_note *note = &nodes[i].note;
		if (!note->present || note->invalid)
			continue;
		held++;
		for (uint16_t h = 0; h < note->nholders; h++) {
			bool exists = false;
			for (size_t k = 0; k < nr && !exists; k++)
				exists = nds[k].name == note->holders[h];
			if (exists)
				continue;
			r.name = str(&r, note->holders[h]);
			(void)release_node(&r, &nodes[i], note->holders[h], NULL);
			break; /* the node changed: the next publish shows it */
		}
	}
	atomic_store(&d->nodes_held, held);
}

static bool leading(const struct drain *d)
{
	return !d->cfg.leader || leader_is_leader(d->cfg.leader);
}

bool drain_stopping(const struct drain *d)
{
	return (d->rt && kube_runtime_stopping(d->rt)) || !leading(d);
}

int64_t drain_round(struct drain *d, const struct kube_snapshot *s, int64_t now_wall_ms,
		    int64_t now_mono_ms)
{
	int64_t next = now_mono_ms + IDLE_MS;
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	/* Every request's step at once: the requests of a wave are evicted together. */
	drain_wave_round(d->wave, d, s, nds, n, now_wall_ms, now_mono_ms, &next);
	struct ng_arena *arena = ng_arena_create(STEP_ARENA_BYTES);
	if (arena && !drain_stopping(d)) {
		ng_arena_reset(arena);
		sweep(d, s, arena, now_wall_ms, now_mono_ms, &next);
		ng_arena_reset(arena);
		node_lifecycle(d, s, arena, now_wall_ms, now_mono_ms, &next);
	}
	ng_arena_destroy(arena);
	flush_events(d, s);
	return next;
}

static int64_t step(struct kube_runtime *rt, void *ctx)
{
	struct drain *d = ctx;
	(void)rt;
	if (!leading(d))
		return KUBE_RUNTIME_IDLE;
	struct kube_snapshot *s = kube_store_acquire(d->cfg.store);
	if (!s)
		return KUBE_RUNTIME_IDLE;
	int64_t now_mono_ms = ng_now_mono_us() / 1000;
	int64_t next = drain_round(d, s, ng_now_wall_ms(), now_mono_ms);
	kube_snapshot_release(s);
	if (next < now_mono_ms + 50)
		next = now_mono_ms + 50; /* a deadline just passed: not a busy loop */
	return next * 1000;
}

struct drain *drain_create(const struct drain_config *cfg, struct kube_client *client,
			   struct ng_err *reterr)
{
	struct drain *d = calloc(1, sizeof(*d));
	if (!d) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	d->cfg = *cfg;
	d->client = client;
	pthread_mutex_init(&d->mu, NULL);
	ng_memo_init(&d->asked, ASKED_MAX);
	ng_rng_seed(&d->rng, cfg->identity ? cfg->identity : "drain");
	ng_prom_hist_init(&d->duration, duration_buckets_s,
			  sizeof(duration_buckets_s) / sizeof(duration_buckets_s[0]));
	if (cfg->self_selector) {
		/* Checked once here so a typo fails at start, not silently at every step. */
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *a = ng_arena_create(1u << 20);
		struct kube_selector sel;
		ng_status st =
		    pool && a ? pol_selector_for_pool(cfg->self_selector, pool, a, &sel, reterr)
			      : ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		ng_arena_destroy(a);
		ng_intern_destroy(pool);
		if (st != NG_OK) {
			free(d);
			return NULL;
		}
	}
	return d;
}

struct drain *drain_start(const struct drain_config *cfg, struct ng_err *reterr)
{
	struct drain *d = drain_create(cfg, NULL, reterr);
	if (!d)
		return NULL;
	const struct scaffold_config sc = {.name = "drain",
					   .kube = cfg->kube,
					   .store = cfg->store,
					   .watch = cfg->watch,
					   .leader = cfg->leader,
					   .step = step,
					   .ctx = d};
	d->rt = scaffold_create(&sc, reterr);
	if (d->rt)
		d->client = kube_runtime_client(d->rt);
	if (d->rt)
		d->wave = drain_wave_start(d); /* none: one request after another */
	if (!d->rt || kube_runtime_start(d->rt, reterr) != NG_OK) {
		drain_stop(d);
		return NULL;
	}
	return d;
}

void drain_stop(struct drain *d)
{
	if (!d)
		return;
	scaffold_stop(d->rt, d->cfg.leader);
	drain_wave_stop(d->wave);
	ng_memo_free(&d->asked);
	for (size_t i = 0; i < d->nevents; i++)
		free(d->events[i].ns);
	free(d->events);
	free(d->chosen);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

ng_status drain_render_metrics(struct drain *d, const struct leader *leader, struct ng_buf *out)
{
	if (!d)
		return NG_OK;
	ng_status st =
	    scaffold_render_leader(out, "1 while this replica holds the drainer's lease.", leader);
	_Atomic uint64_t *evicted[3] = {&d->evicted[0], &d->evicted[1], &d->evicted[2]};
	st = st ? st
		: scaffold_render_counters(out, "nodegate_drain_pods_evicted_total",
					   "Pods the drainer evicted or deleted, by how.",
					   "strategy", strategy_names, evicted, 3);
	st = st ? st
		: ng_prom_header(
		      out, "nodegate_drain_attempts_total", NG_PROM_COUNTER,
		      "Drain attempts started (a failed attempt backs off and starts another).");
	st = st ? st
		: ng_prom_u64(out, "nodegate_drain_attempts_total", NULL, 0,
			      ng_prom_get(&d->attempts));
	_Atomic uint64_t *failures[F_COUNT];
	for (int i = 0; i < F_COUNT; i++)
		failures[i] = &d->failures[i];
	st = st ? st
		: scaffold_render_counters(out, "nodegate_drain_failures_total",
					   "Drain failures, by reason.", "reason", failure_names,
					   failures, F_COUNT);
	st = st ? st
		: ng_prom_header(out, "nodegate_drain_nodes_held", NG_PROM_GAUGE,
				 "Nodes the drainer holds (annotation nodegate.io/drain).");
	st = st ? st
		: ng_prom_u64(out, "nodegate_drain_nodes_held", NULL, 0,
			      atomic_load(&d->nodes_held));
	static const char *const results[3] = {"ok", "conflict", "error"};
	_Atomic uint64_t *writes[3] = {&d->writes, &d->conflicts, &d->errors};
	st = st ? st
		: scaffold_render_counters(out, "nodegate_drain_writes_total",
					   "The drainer's writes to the API server, by result.",
					   "result", results, writes, 3);
	st = st ? st
		: ng_prom_header(out, "nodegate_drain_duration_seconds", NG_PROM_HISTOGRAM,
				 "From grant to Drained, per request.");
	return st ? st
		  : ng_prom_hist_render(out, "nodegate_drain_duration_seconds", NULL, 0,
					&d->duration);
}
