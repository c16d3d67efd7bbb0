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

/* One step's scratch: selectors, names, patch bodies. */
#define STEP_ARENA_BYTES (16u << 20)
/* Jobs, VolumeAttachments and reboots are not in the cache: they are looked at this often. */
#define POLL_MS 2000
/* Without a publish, a step runs at least this often (backoffs and timeouts set sooner). */
#define IDLE_MS 30000
/* An eviction or delete that was answered is not repeated for this long: the cache shows the
 * pod terminating or gone well before. A 429 waits for the answer's Retry-After instead. */
#define ASKED_MS 15000
#define DEFAULT_RETRY_AFTER_S 5
/* NodeGateConfig spec.drain.backoff defaults (DESIGN.md §3.4), in ms. */
#define BACKOFF_BASE_MS 300000
#define BACKOFF_MAX_MS 1200000
#define BACKOFF_JITTER_MS 300000
/* Pods named in a message before "and N more". */
#define MSG_PODS 8

/* Failure reasons of nodegate_drain_failures_total. */
enum failure { F_BLOCKED, F_HELD, F_TIMEOUT, F_SPEC, F_OPERATION, F_COUNT };
static const char *const failure_names[F_COUNT] = {"blocked", "held", "timeout", "spec",
						   "operation"};

static const char *const strategy_names[4] = {"Evict", "Delete", "ForceDelete", "None"};

static const double duration_buckets_s[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};

struct asked {
	uint64_t key; /* hash of namespace/name */
	int64_t until_mono_ms;
};

struct chosen {
	uint64_t key; /* hash of the request's name */
	int64_t pods;
};

struct drain {
	struct drain_config cfg;
	struct kube_runtime *rt;
	struct kube_client *client;
	struct ng_rng rng;
	struct asked *asked;
	size_t nasked, capasked;
	/* The most pods the current attempts chose, per request, so totalPods survives a status
	 * write lost to a conflict while pods were already leaving; forgotten once Drained. */
	struct chosen *chosen;
	size_t nchosen, capchosen;
	_Atomic uint64_t evicted[4]; /* by enum kube_drain_strategy */
	_Atomic uint64_t attempts;
	_Atomic uint64_t failures[F_COUNT];
	_Atomic uint64_t nodes_held;
	_Atomic uint64_t writes, conflicts, errors;
	struct ng_prom_hist duration;
};

/* One request in one step: what was read, and the status being built. */
struct req {
	struct drain *d;
	const struct kube_snapshot *s;
	const struct ng_intern *pool;
	const struct kube_ngc *ngc; /* NULL: defaults */
	const struct kube_nd *nd;
	const struct kube_nd_detail *x;
	const char *name;
	struct ng_arena *arena;
	int64_t now_ms, now_mono_ms;
	int64_t *next_mono_ms;
	const struct kube_condition *ready; /* the current Ready condition; NULL: none */
	enum pol_drain_phase was;           /* its reason as a phase */
	bool began;                         /* this step starts a drain attempt */
	/* The status this step wants. */
	enum pol_drain_phase phase;
	char msg[1024];
	struct kube_nd_drain_status ds;
	/* Namespaces whose protection this step has read (one GET each, not one per pod). */
	uint32_t ns_seen[16];
	bool ns_protected[16];
	size_t nns;
};

/* ---- small things ---- */

static const char *str(const struct req *r, uint32_t id)
{
	const char *s = id == NG_INTERN_NONE ? NULL : ng_intern_str(r->pool, id, NULL);
	return s ? s : "";
}

static void soon(struct req *r, int64_t at_mono_ms)
{
	if (at_mono_ms < *r->next_mono_ms)
		*r->next_mono_ms = at_mono_ms;
}

static void logline(const struct req *r, const char *msg, const char *node, const char *detail)
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

static void count_write(struct drain *d, const struct kube_write_result *w, const char *what,
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

static void event_about(struct req *r, const struct kube_ref about, const char *uid,
			const char *reason, const char *type, const char *msg)
{
	struct kube_event ev = {about, reason, type, msg, r->d->cfg.identity, r->now_ms, uid};
	struct kube_write_result w;
	kube_create_event(r->d->client, &ev, &w);
	kube_write_log("drain", "event not recorded", &about, &w);
}

/* An Event on the request. */
static void event(struct req *r, const char *reason, const char *type, const char *msg)
{
	event_about(r, (struct kube_ref){KUBE_KIND_ND, NULL, r->name}, r->nd ? r->nd->uid : NULL,
		    reason, type, msg);
}

/* An Event on node @n, naming the request: what `kubectl describe node` readers look for. */
static void node_event(struct req *r, const struct kube_node *n, const char *reason,
		       const char *msg)
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

static bool note_holds(const struct kube_drain_note *n, uint32_t name)
{
	for (uint16_t i = 0; n->present && !n->invalid && i < n->nholders; i++)
		if (n->holders[i] == name)
			return true;
	return false;
}

static bool node_has_taint(const struct kube_node *n, const struct kube_taint *t)
{
	for (uint32_t i = 0; i < n->ntaints; i++)
		if (n->taints[i].key == t->key && n->taints[i].effect == t->effect)
			return true;
	return false;
}

static uint64_t pod_key(const struct req *r, const struct kube_pod *p)
{
	const char *ns = str(r, p->ns);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, ns, strlen(ns) + 1);
	return ng_fnv1a64(h, p->name, strlen(p->name));
}

/* Whether pod @key was asked to leave less than its hold ago; forgets expired entries. */
static bool asked_recently(struct drain *d, uint64_t key, int64_t now_mono_ms)
{
	for (size_t i = 0; i < d->nasked;) {
		if (d->asked[i].until_mono_ms <= now_mono_ms) {
			d->asked[i] = d->asked[--d->nasked];
			continue;
		}
		if (d->asked[i].key == key)
			return true;
		i++;
	}
	return false;
}

static void mark_asked(struct drain *d, uint64_t key, int64_t until_mono_ms)
{
	struct asked *a = ng_array_grow(d->asked, &d->capasked, d->nasked, sizeof(*a));
	if (!a)
		return; /* only costs a repeated request */
	d->asked = a;
	d->asked[d->nasked++] = (struct asked){key, until_mono_ms};
}

/* The version of the request this drainer has written over, as a key of the asked table: a step
 * that still sees it would only write again and be refused with a conflict. */
static uint64_t nd_key(const struct req *r)
{
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, "nd", 3);
	h = ng_fnv1a64(h, r->name, strlen(r->name) + 1);
	return r->nd->rv ? ng_fnv1a64(h, r->nd->rv, strlen(r->nd->rv)) : h;
}

/* After a write that changed the request, or one refused because it had changed (409: a newer
 * version exists), this version is not written against again. */
static void nd_written(struct req *r, const struct kube_write_result *w)
{
	if ((w->outcome == KUBE_WRITE_OK && w->http) || w->outcome == KUBE_WRITE_CONFLICT)
		mark_asked(r->d, nd_key(r), r->now_mono_ms + ASKED_MS);
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
static bool write_status(struct req *r)
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
	kube_patch_status(r->d->client, &ref, r->nd->rv, status_body, &sb, &w);
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
		static const char *const ev[POL_PH_COUNT] = {[POL_PH_DRAINED] = "Drained",
							     [POL_PH_OPERATING] = "Operating",
							     [POL_PH_COMPLETED] = "Completed",
							     [POL_PH_FAILED] = "Failed",
							     [POL_PH_REQUESTOR_FAILED] =
								 "RequestorFailed"};
		if (ev[r->phase])
			event(r, ev[r->phase], r->phase == POL_PH_FAILED ? "Warning" : "Normal",
			      r->msg);
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
static void fail_attempt(struct req *r, enum failure f, const char *why)
{
	const struct kube_ngc *g = r->ngc;
	int64_t base =
	    g && g->drain_backoff_base_ms >= 0 ? g->drain_backoff_base_ms : BACKOFF_BASE_MS;
	int64_t max = g && g->drain_backoff_max_ms >= 0 ? g->drain_backoff_max_ms : BACKOFF_MAX_MS;
	int64_t jitter =
	    g && g->drain_backoff_jitter_ms >= 0 ? g->drain_backoff_jitter_ms : BACKOFF_JITTER_MS;
	int64_t draw = jitter > 0 ? (int64_t)(ng_rng_next(&r->d->rng) % (uint64_t)jitter) : 0;
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

/* ---- nodes ---- */

/* What the note says: nodegate.io/drain's JSON is written from this. */
struct note {
	bool was_unschedulable;
	const char *const *holders;
	size_t nholders;
	const char *boot_id;
	const struct kube_taint *taints; /* those the drainer added */
	size_t ntaints;
};

static bool taint_in(const struct kube_taint *set, size_t n, const struct kube_taint *t)
{
	for (size_t i = 0; i < n; i++)
		if (set[i].key == t->key && set[i].effect == t->effect)
			return true;
	return false;
}

/* @note as JSON, written into @b. */
static const char *note_json(const struct req *r, struct ng_buf *b, const struct note *note)
{
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kbool(&w, "wasUnschedulable", note->was_unschedulable);
	ng_jw_key(&w, "holders");
	ng_jw_arr(&w);
	for (size_t i = 0; i < note->nholders; i++)
		ng_jw_str(&w, note->holders[i]);
	ng_jw_arr_end(&w);
	ng_jw_kstr(&w, "bootID", note->boot_id ? note->boot_id : "");
	if (note->ntaints) {
		ng_jw_key(&w, "taints");
		ng_jw_arr(&w);
		for (size_t i = 0; i < note->ntaints; i++) {
			ng_jw_obj(&w);
			ng_jw_kstr(&w, "key", str(r, note->taints[i].key));
			ng_jw_kstr(&w, "effect", str(r, note->taints[i].effect));
			ng_jw_obj_end(&w);
		}
		ng_jw_arr_end(&w);
	}
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w) == NG_OK ? b->data : NULL;
}

/* Adds the annotation @note to @p (NULL: nothing). */
static void patch_note(const struct req *r, struct kube_json_patch *p, const struct kube_node *n,
		       const struct note *note)
{
	struct ng_buf b;
	ng_buf_init(&b, 64u << 10);
	const char *json = note_json(r, &b, note);
	if (p && json)
		kube_json_patch_annotation(p, DRAIN_NOTE_ANNOTATION, json, n->has_annotations);
	ng_buf_finish(&b);
}

/* The node's taints as strings, with @add appended (NULL: none) and those in @drop (@ndrop; key
 * and effect) left out. */
static struct kube_taint_spec *taint_list(struct req *r, const struct kube_node *n,
					  const struct kube_taint *add,
					  const struct kube_taint *drop, size_t ndrop,
					  size_t *ret_n)
{
	struct kube_taint_spec *t = ng_arena_alloc(r->arena, (n->ntaints + 1) * sizeof(*t));
	size_t k = 0;
	for (uint32_t i = 0; t && i < n->ntaints; i++) {
		const struct kube_taint *x = &n->taints[i];
		if (taint_in(drop, ndrop, x))
			continue;
		t[k++] = (struct kube_taint_spec){
		    str(r, x->key), x->val == NG_INTERN_NONE ? NULL : str(r, x->val),
		    x->effect == NG_INTERN_NONE ? NULL : str(r, x->effect)};
	}
	if (t && add)
		t[k++] = (struct kube_taint_spec){
		    str(r, add->key), add->val == NG_INTERN_NONE ? NULL : str(r, add->val),
		    str(r, add->effect)};
	*ret_n = k;
	return t;
}

/* The version of node @n this drainer has patched, as a key of the asked table: until the cache
 * shows the node as written, a step sees the old version and must not patch it again (the
 * repeat would fail, or undo another holder's change). */
static uint64_t node_key(const struct req *r, const struct kube_node *n)
{
	const char *name = str(r, n->name);
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, "node", 5);
	h = ng_fnv1a64(h, name, strlen(name) + 1);
	return n->rv ? ng_fnv1a64(h, n->rv, strlen(n->rv)) : h;
}

/* Whether node @n is in a version this drainer has written over (or was refused a write on with
 * 409): the cache has not caught up; the step comes back once the watch has the new one. */
static bool node_written(struct req *r, const struct kube_node *n)
{
	if (!asked_recently(r->d, node_key(r, n), r->now_mono_ms))
		return false;
	soon(r, r->now_mono_ms + POLL_MS);
	return true;
}

static bool send_node_patch(struct req *r, const struct kube_node *n, struct kube_json_patch *p,
			    const char *what)
{
	const struct kube_ref ref = {KUBE_KIND_NODE, NULL, str(r, n->name)};
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (p && kube_json_patch_body(p, NULL))
		kube_apply_json_patch(r->d->client, &ref, p, &w);
	count_write(r->d, &w, what, &ref);
	if (w.outcome == KUBE_WRITE_OK || w.outcome == KUBE_WRITE_CONFLICT)
		mark_asked(r->d, node_key(r, n), r->now_mono_ms + ASKED_MS);
	return w.outcome == KUBE_WRITE_OK;
}

/* Holds node @n for the request: the note first (with whether it was cordoned before), then the
 * cordon and the taint, in one conditional patch. True when the node is held as asked now (the
 * cache shows it, or the API server just took the patch). */
static bool hold_node(struct req *r, const struct kube_node *n)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	bool held = note_holds(&n->note, r->nd->name);
	bool cordoned = !dr->cordon || (n->flags & KUBE_NODE_UNSCHEDULABLE);
	bool tainted = !dr->has_taint || node_has_taint(n, &dr->taint);
	if (held && cordoned && tainted)
		return true;
	if (node_written(r, n))
		return false;
	if (n->note.invalid) {
		ng_fmt(r->msg, sizeof(r->msg),
		       "node %s: annotation " DRAIN_NOTE_ANNOTATION
		       " does not parse; fix or remove it",
		       str(r, n->name));
		return false;
	}
	/* Only a taint the drainer adds is listed, so only that one is taken away again. */
	bool adding = dr->has_taint && !tainted;
	bool unlisted = adding && !taint_in(n->note.taints, n->note.ntaints, &dr->taint);
	struct kube_json_patch *p = kube_json_patch_create(n->rv);
	if (!held || unlisted) {
		size_t nh = n->note.present ? n->note.nholders : 0;
		const char **h = ng_arena_alloc(r->arena, (nh + 1) * sizeof(*h));
		struct kube_taint *ts =
		    ng_arena_alloc(r->arena, (n->note.ntaints + 1u) * sizeof(*ts));
		if (!h || !ts) {
			kube_json_patch_destroy(p);
			return false;
		}
		for (size_t i = 0; i < nh; i++)
			h[i] = str(r, n->note.holders[i]);
		if (!held)
			h[nh++] = r->name;
		if (n->note.ntaints)
			memcpy(ts, n->note.taints, n->note.ntaints * sizeof(*ts));
		if (unlisted)
			ts[n->note.ntaints] = dr->taint;
		struct note note = {n->note.present ? n->note.was_unschedulable
						    : (n->flags & KUBE_NODE_UNSCHEDULABLE) != 0,
				    h,
				    nh,
				    n->note.present ? n->note.boot_id : n->boot_id,
				    ts,
				    n->note.ntaints + (unlisted ? 1u : 0u)};
		patch_note(r, p, n, &note);
	}
	if (p && !cordoned)
		kube_json_patch_unschedulable(p, true);
	if (p && adding) {
		size_t nt;
		struct kube_taint_spec *t = taint_list(r, n, &dr->taint, NULL, 0, &nt);
		if (t)
			kube_json_patch_taints(p, t, nt);
	}
	bool ok = send_node_patch(r, n, p, "node not held");
	kube_json_patch_destroy(p);
	if (ok) {
		char msg[300];
		ng_fmt(msg, sizeof(msg), "node %s %s", str(r, n->name),
		       !cordoned && !tainted ? "cordoned and tainted"
		       : !cordoned           ? "cordoned"
					     : "tainted");
		logline(r, "cordoned", str(r, n->name), dr->has_taint ? "tainted" : NULL);
		if (!cordoned || !tainted) {
			event(r, "Cordoned", "Normal", msg);
			node_event(r, n, "Cordoned", msg);
		}
	}
	/* The API server took the patch: the node is held now, and the drain goes on in this
	 * step instead of waiting for the cache to show it (a batch window later). */
	return ok;
}

/* Whether another holder of @n than @self (request name id) adds the same taint as @t. */
static bool taint_shared(const struct req *r, const struct kube_node *n, uint32_t self,
			 const struct kube_taint *t)
{
	size_t nn;
	const struct kube_nd *nds = kube_snapshot_nds(r->s, &nn);
	for (uint16_t i = 0; i < n->note.nholders; i++) {
		if (n->note.holders[i] == self)
			continue;
		for (size_t k = 0; k < nn; k++) {
			const struct kube_nd_detail *x = nds[k].detail;
			if (nds[k].name == n->note.holders[i] && x && x->drain.has_taint &&
			    x->drain.taint.key == t->key && x->drain.taint.effect == t->effect)
				return true;
		}
	}
	return false;
}

/* Gives node @n back from holder @holder (its request @x, NULL when gone): the holder leaves
 * the note; its taint goes unless another holder adds it too; the last holder out uncordons the
 * node if nodegate cordoned it, and removes the note. True when nothing was left to do or the
 * API server just took the patch that gives it back. */
static bool release_node(struct req *r, const struct kube_node *n, uint32_t holder,
			 const struct kube_nd_detail *x)
{
	if (!note_holds(&n->note, holder))
		return true;
	if (node_written(r, n))
		return false;
	struct kube_json_patch *p = kube_json_patch_create(n->rv);
	size_t left = 0;
	const char **h = ng_arena_alloc(r->arena, n->note.nholders * sizeof(*h) + 1);
	for (uint16_t i = 0; h && i < n->note.nholders; i++)
		if (n->note.holders[i] != holder)
			h[left++] = str(r, n->note.holders[i]);
	/* The taints that go: all the drainer added once the last holder is out, else the
	 * holder's own unless another holder adds it too. A request already gone (@x NULL) leaves
	 * its taint to the last holder out. */
	const struct kube_taint *drop = n->note.taints;
	size_t ndrop = n->note.ntaints;
	if (left) {
		const struct kube_taint *t = x && x->drain.has_taint ? &x->drain.taint : NULL;
		bool own = t && taint_in(n->note.taints, n->note.ntaints, t) &&
			   !taint_shared(r, n, holder, t);
		drop = own ? t : NULL;
		ndrop = own ? 1 : 0;
	}
	bool on_node = false;
	for (size_t i = 0; i < ndrop; i++)
		on_node = on_node || node_has_taint(n, &drop[i]);
	if (on_node) {
		size_t nt;
		struct kube_taint_spec *ts = taint_list(r, n, NULL, drop, ndrop, &nt);
		if (p && ts)
			kube_json_patch_taints(p, ts, nt);
	}
	if (left == 0) {
		if (p)
			kube_json_patch_annotation(p, DRAIN_NOTE_ANNOTATION, NULL, true);
		if (p && !n->note.was_unschedulable && (n->flags & KUBE_NODE_UNSCHEDULABLE))
			kube_json_patch_unschedulable(p, false);
	} else if (h) {
		struct kube_taint *kept =
		    ng_arena_alloc(r->arena, (n->note.ntaints + 1u) * sizeof(*kept));
		size_t nkept = 0;
		for (uint16_t i = 0; kept && i < n->note.ntaints; i++)
			if (!taint_in(drop, ndrop, &n->note.taints[i]))
				kept[nkept++] = n->note.taints[i];
		struct note note = {n->note.was_unschedulable, h,    left,
				    n->note.boot_id,           kept, nkept};
		if (kept)
			patch_note(r, p, n, &note);
	}
	bool ok = send_node_patch(r, n, p, "node not released");
	kube_json_patch_destroy(p);
	if (ok) {
		const char *how = left == 0 && !n->note.was_unschedulable ? "uncordoned"
				  : left == 0 ? "left cordoned: it was unschedulable before"
					      : "left cordoned: other requests hold it";
		logline(r, left ? "released (other holders remain)" : "released", str(r, n->name),
			how);
		char msg[300];
		ng_fmt(msg, sizeof(msg), "node %s given back, %s", str(r, n->name), how);
		node_event(r, n, "Released", msg);
	}
	return ok; /* given back now: the finalizer may go in this step */
}

/* Adds or removes the drainer's finalizer, conditional on the version read. */
static enum kube_write_outcome set_finalizer(struct req *r, bool present)
{
	const char **cur = ng_arena_alloc(r->arena, (r->nd->nfinalizers + 1u) * sizeof(*cur));
	for (uint16_t i = 0; cur && i < r->nd->nfinalizers; i++)
		cur[i] = str(r, r->nd->finalizers[i]);
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, r->name};
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (cur)
		kube_set_finalizer(r->d->client, &ref, r->nd->rv, cur, r->nd->nfinalizers,
				   DRAIN_FINALIZER, present, &w);
	count_write(r->d, &w, present ? "finalizer not written" : "finalizer not removed", &ref);
	nd_written(r, &w);
	return w.outcome;
}

/* ---- the sequence ---- */

/* The nodes of the request that exist, in @ret (arena); their count. */
static size_t request_nodes(struct req *r, const struct kube_node ***ret)
{
	const struct kube_node **out =
	    ng_arena_alloc(r->arena, (r->nd->ndisrupted + 1u) * sizeof(*out));
	size_t n = 0;
	for (uint16_t i = 0; out && i < r->nd->ndisrupted; i++) {
		const struct kube_node *node = kube_snapshot_find_node(r->s, r->nd->disrupted[i]);
		if (node)
			out[n++] = node;
	}
	*ret = out;
	return out ? n : 0;
}

/* Appends "ns/name" of @p to @buf (@cap) as the @k-th of a list, "and N more" past MSG_PODS. */
static void list_pod(const struct req *r, char *buf, size_t cap, size_t k, const struct kube_pod *p,
		     const char *why)
{
	size_t len = strlen(buf);
	if (k < MSG_PODS)
		(void)snprintf(buf + len, cap - len, "%s%s/%s%s", k ? ", " : "", str(r, p->ns),
			       p->name, why ? why : "");
}

static void list_more(char *buf, size_t cap, size_t k)
{
	size_t len = strlen(buf);
	if (k > MSG_PODS)
		(void)snprintf(buf + len, cap - len, " and %zu more", k - MSG_PODS);
}

/* waitForPodCompletion: true while it still waits. */
static bool waiting_for_pods(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	if (!dr->has_wait || r->was > POL_PH_WAITING)
		return false;
	struct kube_selector sel = {true, 0, NULL};
	struct ng_err err = {0};
	if (dr->wait_pod_selector &&
	    pol_selector_for_pool(dr->wait_pod_selector, r->pool, r->arena, &sel, &err) != NG_OK)
		return false; /* refused by the webhook; checked with the spec */
	size_t np, waiting = 0;
	const struct kube_pod *pods = kube_snapshot_pods(r->s, &np);
	char names[512] = "";
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(r->s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			const struct kube_pod *p = &pods[idx[j]];
			if (pol_pod_active(p) &&
			    bud_selector_matches(&sel, p->labels, p->nlabels, r->pool))
				list_pod(r, names, sizeof(names), waiting++, p, NULL);
		}
	}
	list_more(names, sizeof(names), waiting);
	if (!waiting)
		return false;
	int64_t since = r->was == POL_PH_WAITING && r->ready ? r->ready->since_ms : r->now_ms;
	if (pol_drain_timed_out(since, dr->wait_timeout_s, r->now_ms))
		return false;
	if (dr->wait_timeout_s > 0)
		soon(r, r->now_mono_ms + (since + dr->wait_timeout_s * 1000 - r->now_ms));
	r->phase = POL_PH_WAITING;
	ng_fmt(r->msg, sizeof(r->msg), "waiting for %zu pod(s) to complete: %s", waiting, names);
	(void)write_status(r);
	return true;
}

/* Compiles the drain's filters and selector into @rules. False with @r->msg on a bad spec. */
static bool drain_rules(struct req *r, struct pol_drain_rules *rules, struct kube_selector *sel,
			struct kube_selector *self)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	struct drain *d = r->d;
	struct ng_err err = {0};
	memset(rules, 0, sizeof(*rules));
	rules->force = dr->force;
	rules->delete_empty_dir = dr->delete_empty_dir;
	rules->self_ns = d->cfg.self_namespace ? ng_intern_find(r->pool, d->cfg.self_namespace,
								strlen(d->cfg.self_namespace))
					       : NG_INTERN_NONE;
	if (d->cfg.self_selector &&
	    pol_selector_for_pool(d->cfg.self_selector, r->pool, r->arena, self, &err) == NG_OK)
		rules->self_selector = self;
	if (dr->pod_selector) {
		if (pol_selector_for_pool(dr->pod_selector, r->pool, r->arena, sel, &err) !=
		    NG_OK) {
			ng_fmt(r->msg, sizeof(r->msg), "spec.drain.podSelector: %s", err.msg);
			return false;
		}
		rules->pod_selector = sel;
	}
	struct ng_regex **f =
	    dr->nfilters ? ng_arena_alloc(r->arena, dr->nfilters * sizeof(*f)) : NULL;
	if (dr->nfilters && !f)
		return false;
	for (uint16_t i = 0; i < dr->nfilters; i++) {
		const char *re = dr->filters[i].by_resource_name_regex;
		if (ng_regex_get(re ? re : "", re ? strlen(re) : 0, &f[i], &err) != NG_OK) {
			for (uint16_t k = 0; k < i; k++)
				ng_regex_put(f[k]);
			ng_fmt(r->msg, sizeof(r->msg),
			       "spec.drain.podEvictionFilters[%u].byResourceNameRegex %s", i,
			       err.msg);
			return false;
		}
	}
	rules->filters = f;
	rules->nfilters = dr->nfilters;
	return true;
}

static void put_rules(struct pol_drain_rules *rules)
{
	for (size_t i = 0; i < rules->nfilters; i++)
		ng_regex_put(rules->filters[i]);
}

/* Whether pod @p's namespace is protected (NodeGateConfig drain.protectedNamespaces). A
 * namespace that cannot be read counts as protected: the Eviction API is the safe way. */
static bool ns_protected(struct req *r, const struct kube_pod *p)
{
	const struct kube_selector *sel = r->ngc ? &r->ngc->protected_namespaces : NULL;
	if (!sel || !sel->present)
		return false;
	for (size_t i = 0; i < r->nns; i++)
		if (r->ns_seen[i] == p->ns)
			return r->ns_protected[i];
	const struct kube_label *labels;
	uint16_t n;
	struct ng_err err = {0};
	bool protected = kube_get_namespace_labels(r->d->client, str(r, p->ns), r->pool, r->arena,
						   &labels, &n, &err) != NG_OK ||
			 bud_selector_matches(sel, labels, n, r->pool);
	if (r->nns < sizeof(r->ns_seen) / sizeof(r->ns_seen[0])) {
		r->ns_seen[r->nns] = p->ns;
		r->ns_protected[r->nns++] = protected;
	}
	return protected;
}

/* Asks pod @p to leave by the drain's strategy. Returns whether it was answered yes. */
static bool evict_one(struct req *r, const struct kube_pod *p, uint64_t key, char *refusal,
		      size_t cap)
{
	struct drain *d = r->d;
	uint8_t strategy = r->x->drain.strategy;
	const char *ns = str(r, p->ns);
	struct kube_write_result w;
	int64_t retry_s = 0;
	bool use_eviction = strategy == KUBE_DRAIN_EVICT || ns_protected(r, p);
	if (use_eviction) {
		kube_evict_pod(d->client, ns, p->name, &retry_s, &w);
	} else {
		const struct kube_ref ref = {KUBE_KIND_POD, ns, p->name};
		kube_delete(d->client, &ref, strategy == KUBE_DRAIN_FORCE_DELETE ? 0 : -1, &w);
	}
	if (w.outcome == KUBE_WRITE_OK || w.outcome == KUBE_WRITE_GONE) {
		mark_asked(d, key, r->now_mono_ms + ASKED_MS);
		if (w.outcome == KUBE_WRITE_OK) {
			ng_prom_add(&d->evicted[use_eviction ? KUBE_DRAIN_EVICT : strategy], 1);
			char what[300];
			ng_fmt(what, sizeof(what), "%s/%s by %s", ns, p->name,
			       use_eviction ? "eviction" : strategy_names[strategy]);
			logline(r, "evicted", str(r, p->node), what);
		}
		return w.outcome == KUBE_WRITE_OK;
	}
	int64_t wait_ms = (w.http == 429 ? (retry_s > 0 ? retry_s : DEFAULT_RETRY_AFTER_S)
					 : DEFAULT_RETRY_AFTER_S) *
			  1000;
	mark_asked(d, key, r->now_mono_ms + wait_ms);
	soon(r, r->now_mono_ms + wait_ms);
	if (!*refusal)
		ng_fmt(refusal, cap, "%s/%s: %s", ns, p->name,
		       w.http == 429 ? "eviction refused for now (429)" : w.err.msg);
	if (w.http != 429)
		count_write(d, &w, "pod not evicted",
			    &(struct kube_ref){KUBE_KIND_POD, ns, p->name});
	return false;
}

/* First pass of an attempt: pods that stop it before anything is evicted (kubectl's blocking
 * rule, protected Job pods). True when the attempt failed for them (already written). */
static bool attempt_stopped(struct req *r, const struct kube_node *const *nodes, size_t nn,
			    const struct pol_drain_rules *rules)
{
	size_t np;
	const struct kube_pod *pods = kube_snapshot_pods(r->s, &np);
	char blocked[600] = "", held[400] = "";
	size_t nblocked = 0, nheld = 0;
	const struct kube_selector *jobs = r->ngc ? &r->ngc->protected_job_pods : NULL;
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(r->s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			const struct kube_pod *p = &pods[idx[j]];
			enum pol_drain_pod c = pol_drain_classify(r->pool, p, rules);
			/* Nothing is evicted with strategy None: nothing can be lost. */
			if ((c == POL_DRAIN_BLOCK_NO_CONTROLLER || c == POL_DRAIN_BLOCK_EMPTYDIR) &&
			    r->x->drain.strategy != KUBE_DRAIN_NONE)
				list_pod(r, blocked, sizeof(blocked), nblocked++, p,
					 c == POL_DRAIN_BLOCK_NO_CONTROLLER
					     ? " has no controller (set force)"
					     : " uses emptyDir (set deleteEmptyDir)");
			else if (c == POL_DRAIN_EVICT && pol_drain_protected_job(r->pool, p, jobs))
				list_pod(r, held, sizeof(held), nheld++, p, NULL);
		}
	}
	if (!nblocked && !nheld)
		return false;
	list_more(blocked, sizeof(blocked), nblocked);
	list_more(held, sizeof(held), nheld);
	char why[1100];
	if (nblocked)
		ng_fmt(why, sizeof(why), "cannot drain: %s", blocked);
	else
		ng_fmt(why, sizeof(why), "held back by running Job pod %s", held);
	fail_attempt(r, nblocked ? F_BLOCKED : F_HELD, why);
	return true;
}

/* Second pass: asks each chosen pod that is not yet leaving to go. Returns how many chosen pods
 * are still there, named in @remaining; the first refusal is in @refusal. */
static size_t ask_to_leave(struct req *r, const struct kube_node *const *nodes, size_t nn,
			   const struct pol_drain_rules *rules, char *remaining, size_t cap,
			   char *refusal, size_t refusal_cap)
{
	size_t np, left = 0;
	const struct kube_pod *pods = kube_snapshot_pods(r->s, &np);
	for (size_t i = 0; i < nn; i++) {
		size_t k;
		const uint32_t *idx = kube_snapshot_pods_on_node(r->s, nodes[i]->name, &k);
		for (size_t j = 0; j < k; j++) {
			const struct kube_pod *p = &pods[idx[j]];
			if (pol_drain_classify(r->pool, p, rules) != POL_DRAIN_EVICT)
				continue;
			uint64_t key = pod_key(r, p);
			if (r->x->drain.strategy != KUBE_DRAIN_NONE &&
			    !(p->flags & KUBE_POD_TERMINATING) &&
			    !asked_recently(r->d, key, r->now_mono_ms))
				(void)evict_one(r, p, key, refusal, refusal_cap);
			list_pod(r, remaining, cap, left++, p, NULL);
		}
	}
	list_more(remaining, cap, left);
	return left;
}

/* The request's entry in the chosen-pod counts (added when @add); NULL when none, or on OOM
 * (only the count is lost then). */
static struct chosen *chosen_of(struct drain *d, const char *name, bool add)
{
	uint64_t key = ng_fnv1a64(NG_FNV64_INIT, name, strlen(name));
	for (size_t i = 0; i < d->nchosen; i++)
		if (d->chosen[i].key == key)
			return &d->chosen[i];
	struct chosen *c =
	    add ? ng_array_grow(d->chosen, &d->capchosen, d->nchosen, sizeof(*c)) : NULL;
	if (!c)
		return NULL;
	d->chosen = c;
	d->chosen[d->nchosen] = (struct chosen){key, 0};
	return &d->chosen[d->nchosen++];
}

static void forget_chosen(struct drain *d, const char *name)
{
	struct chosen *c = chosen_of(d, name, false);
	if (c)
		*c = d->chosen[--d->nchosen];
}

/* status.drain's counts from the pods left: totalPods is the most the attempts chose,
 * evictedPods those gone since. */
static void count_pods(struct req *r, size_t left)
{
	struct chosen *c = chosen_of(r->d, r->name, true);
	if (c && c->pods > r->ds.total)
		r->ds.total = c->pods;
	if (r->ds.total < (int64_t)left)
		r->ds.total = (int64_t)left;
	if (c)
		c->pods = r->ds.total;
	r->ds.evicted = r->ds.total - (int64_t)left;
	r->ds.remaining = r->x->drain.skip_waiting_for_eviction ? 0 : (int64_t)left;
}

/* VolumeAttachments still naming the nodes (one that cannot be read counts as attached). */
static size_t volumes_attached(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	size_t attached = 0;
	if (!dr->wait_for_volume_detach || dr->strategy == KUBE_DRAIN_NONE)
		return 0;
	for (size_t i = 0; i < nn; i++) {
		size_t n = 0;
		struct ng_err err = {0};
		if (kube_count_volume_attachments(r->d->client, str(r, nodes[i]->name), &n, &err) !=
		    NG_OK)
			n = 1;
		attached += n;
	}
	if (attached)
		soon(r, r->now_mono_ms + POLL_MS);
	return attached;
}

/* The attempt's evictions and waits. True when the pods are gone (and the volumes detached). */
static bool drain_pods(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	if (pol_drain_backing_off(r->ds.backoff_until_ms, r->now_ms)) {
		/* Still backing off: keep the message of the failed attempt. */
		soon(r, r->now_mono_ms + (r->ds.backoff_until_ms - r->now_ms));
		return false;
	}
	r->ds.backoff_until_ms = 0;
	if (!r->ds.attempt_started_ms) {
		r->ds.attempt_started_ms = r->now_ms;
		r->began = true;
	}
	struct pol_drain_rules rules;
	struct kube_selector sel, self;
	if (!drain_rules(r, &rules, &sel, &self)) {
		r->phase = POL_PH_FAILED;
		ng_prom_add(&r->d->failures[F_SPEC], 1);
		(void)write_status(r);
		return false;
	}
	char remaining[400] = "", refusal[300] = "";
	bool stopped = attempt_stopped(r, nodes, nn, &rules);
	size_t left = stopped ? 0
			      : ask_to_leave(r, nodes, nn, &rules, remaining, sizeof(remaining),
					     refusal, sizeof(refusal));
	put_rules(&rules);
	if (stopped)
		return false;
	count_pods(r, left);
	size_t attached = r->ds.remaining ? 0 : volumes_attached(r, nodes, nn);
	if (r->ds.remaining == 0 && attached == 0)
		return true;
	const char *sep = *refusal ? "; " : "";
	if (pol_drain_timed_out(r->ds.attempt_started_ms, dr->timeout_s, r->now_ms)) {
		char why[900];
		if (r->ds.remaining)
			ng_fmt(why, sizeof(why),
			       "timed out after %llds with %lld pod(s) left: %s%s%s",
			       (long long)dr->timeout_s, (long long)r->ds.remaining, remaining, sep,
			       refusal);
		else
			ng_fmt(why, sizeof(why),
			       "timed out after %llds waiting for %zu volume attachment(s)",
			       (long long)dr->timeout_s, attached);
		fail_attempt(r, F_TIMEOUT, why);
		return false;
	}
	if (dr->timeout_s > 0)
		soon(r, r->now_mono_ms +
			    (r->ds.attempt_started_ms + dr->timeout_s * 1000 - r->now_ms));
	r->phase = POL_PH_DRAINING;
	if (r->ds.remaining)
		ng_fmt(r->msg, sizeof(r->msg),
		       "attempt %lld: waiting for %lld pod(s) to go: %s%s%s",
		       (long long)r->ds.attempts + 1, (long long)r->ds.remaining, remaining, sep,
		       refusal);
	else
		ng_fmt(r->msg, sizeof(r->msg), "waiting for %zu volume attachment(s) to detach",
		       attached);
	(void)write_status(r);
	return false;
}

/* The operation Job's name for one node: stable, short enough for a label value. */
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
	kube_create_job(r->d->client, r->x->operation.job_template, &j, &w);
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
		if (kube_get_job(r->d->client, ns, name, &js, why, sizeof(why), &err) != NG_OK) {
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

/* What the sequence needs to know of @r before it has done anything this step. */
static struct pol_drain_facts facts_of(const struct req *r)
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
		(void)set_finalizer(r, true);
		return false;
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
	case POL_DO_GIVE_BACK:
		give_back(r);
		return false;
	case POL_DO_NOTHING:
		return false;
	}
	return false;
}

static void one_request(struct drain *d, const struct kube_snapshot *s, const struct kube_nd *nd,
			struct ng_arena *arena, int64_t now_wall_ms, int64_t now_mono_ms,
			int64_t *next_mono_ms)
{
	struct req r = {.d = d,
			.s = s,
			.pool = kube_snapshot_pool(s),
			.ngc = kube_snapshot_config(s),
			.nd = nd,
			.x = nd->detail,
			.arena = arena,
			.now_ms = now_wall_ms,
			.now_mono_ms = now_mono_ms,
			.next_mono_ms = next_mono_ms};
	if (r.ngc && r.ngc->invalid)
		r.ngc = NULL; /* defaults, as the gate does */
	r.name = str(&r, nd->name);
	if (!r.x)
		return;
	if (asked_recently(d, nd_key(&r), r.now_mono_ms)) {
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

/* Notes naming requests that no longer exist (their finalizer was removed by hand): those
 * holders leave, so a node is never kept cordoned by a request nobody can see. */
static void sweep(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		  int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms)
{
	size_t nn, nr;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	const struct kube_nd *nds = kube_snapshot_nds(s, &nr);
	uint64_t held = 0;
	struct req r = {.d = d,
			.s = s,
			.pool = kube_snapshot_pool(s),
			.arena = arena,
			.now_ms = now_wall_ms,
			.now_mono_ms = now_mono_ms,
			.next_mono_ms = next_mono_ms,
			.name = "(gone)"};
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

static bool stopping(const struct drain *d)
{
	return (d->rt && kube_runtime_stopping(d->rt)) || !leading(d);
}

int64_t drain_round(struct drain *d, const struct kube_snapshot *s, int64_t now_wall_ms,
		    int64_t now_mono_ms)
{
	int64_t next = now_mono_ms + IDLE_MS;
	struct ng_arena *arena = ng_arena_create(STEP_ARENA_BYTES);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; arena && i < n && !stopping(d); i++) {
		ng_arena_reset(arena);
		one_request(d, s, &nds[i], arena, now_wall_ms, now_mono_ms, &next);
	}
	if (arena && !stopping(d)) {
		ng_arena_reset(arena);
		sweep(d, s, arena, now_wall_ms, now_mono_ms, &next);
	}
	ng_arena_destroy(arena);
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
	free(d->asked);
	free(d->chosen);
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
