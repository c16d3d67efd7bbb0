/* The drainer's nodes (docs/drainer.md "How they go", "Giving the nodes back"): holding a node
 * for a request (the nodegate.io/drain note, the cordon and the taints in one conditional patch),
 * giving it back exactly as it was taken, and the request's finalizer. Runs on the drainer's
 * thread; the shared state is controller/drain_internal.h's. */
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

/* ---- nodes ---- */

/* What the note says: nodegate.io/drain's JSON is written from this. */
struct note {
	bool was_unschedulable;
	const char *const *holders;
	size_t nholders;
	const char *boot_id;
	const struct kube_taint *taints; /* those the drainer added */
	size_t ntaints;
	/* The protection annotations the drainer set, those present before, their values then
	 * (struct kube_drain_note's protect, protect_had, protect_was). */
	uint8_t protect, protect_had;
	const uint32_t *protect_was;
};

static const char *const protect_keys[KUBE_NPROTECT] = KUBE_PROTECT_ANNOTATIONS;

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
	if (note->protect) {
		ng_jw_key(&w, "protected");
		ng_jw_arr(&w);
		for (int i = 0; i < KUBE_NPROTECT; i++) {
			if (!(note->protect & (1u << i)))
				continue;
			ng_jw_obj(&w);
			ng_jw_kstr(&w, "key", protect_keys[i]);
			if (note->protect_had & (1u << i))
				ng_jw_kstr(&w, "was", str(r, note->protect_was[i]));
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

static bool send_node_patch(struct req *r, const struct kube_node *n, struct kube_json_patch *p,
			    const char *what)
{
	const struct kube_ref ref = {KUBE_KIND_NODE, NULL, str(r, n->name)};
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (p && kube_json_patch_body(p, NULL))
		kube_apply_json_patch(r->client, &ref, p, &w);
	count_write(r->d, &w, what, &ref);
	if (w.outcome == KUBE_WRITE_OK || w.outcome == KUBE_WRITE_CONFLICT)
		asked_put(r, node_key(r, n), r->now_mono_ms + ASKED_MS);
	return w.outcome == KUBE_WRITE_OK;
}

/* The protection annotations hold_node() sets on @n now (bit i: the i-th of
 * KUBE_PROTECT_ANNOTATIONS): with NodeGateConfig protectHeldNodes, those not "true" yet that the
 * drainer has not set before (one another actor changed since is left as it is). */
static uint8_t protect_wanted(const struct req *r, const struct kube_node *n)
{
	if (r->ngc && r->ngc->no_protect_held)
		return 0;
	return (uint8_t)(((1u << KUBE_NPROTECT) - 1u) & ~(unsigned)n->protect_true &
			 ~(unsigned)n->note.protect);
}

/* Writes into @p the note of @n held for the request too (@held: it is already), listing the
 * request's taint (@unlisted) and the protection annotations set now (@protect) with the values
 * they had. False when out of memory. */
static bool patch_held_note(struct req *r, struct kube_json_patch *p, const struct kube_node *n,
			    bool held, bool unlisted, uint8_t protect)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	size_t nh = n->note.present ? n->note.nholders : 0;
	const char **h = ng_arena_alloc(r->arena, (nh + 1) * sizeof(*h));
	struct kube_taint *ts = ng_arena_alloc(r->arena, (n->note.ntaints + 1u) * sizeof(*ts));
	if (!h || !ts)
		return false;
	for (size_t i = 0; i < nh; i++)
		h[i] = str(r, n->note.holders[i]);
	if (!held)
		h[nh++] = r->name;
	if (n->note.ntaints)
		memcpy(ts, n->note.taints, n->note.ntaints * sizeof(*ts));
	if (unlisted)
		ts[n->note.ntaints] = dr->taint;
	uint32_t was[KUBE_NPROTECT];
	memcpy(was, n->note.protect_was, sizeof(was));
	for (int i = 0; i < KUBE_NPROTECT; i++)
		if (protect & (1u << i))
			was[i] = n->protect_val[i];
	struct note note = {
	    n->note.present ? n->note.was_unschedulable : (n->flags & KUBE_NODE_UNSCHEDULABLE) != 0,
	    h,
	    nh,
	    n->note.present ? n->note.boot_id : n->boot_id,
	    ts,
	    n->note.ntaints + (unlisted ? 1u : 0u),
	    (uint8_t)(n->note.protect | protect),
	    (uint8_t)((n->note.protect_had & ~protect) | (n->protect_present & protect)),
	    was};
	patch_note(r, p, n, &note);
	return true;
}

/* Holds node @n for the request: the note first (with whether it was cordoned before and the
 * protection annotations' values before), then the cordon, the taint and the protection, in one
 * conditional patch. True when the node is held as asked now (the cache shows it, or the API
 * server just took the patch). */
bool hold_node(struct req *r, const struct kube_node *n)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	bool held = note_holds(&n->note, r->nd->name);
	bool cordoned = !dr->cordon || (n->flags & KUBE_NODE_UNSCHEDULABLE);
	bool tainted = !dr->has_taint || node_has_taint(n, &dr->taint);
	uint8_t protect = protect_wanted(r, n);
	if (held && cordoned && tainted && !protect)
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
	struct kube_json_patch *p = kube_json_patch_create(kube_snapshot_node_rv(r->s, n));
	if ((!held || unlisted || protect) && !patch_held_note(r, p, n, held, unlisted, protect)) {
		kube_json_patch_destroy(p);
		return false;
	}
	/* The note is in this patch whenever protection is: the annotations map exists. */
	for (int i = 0; p && i < KUBE_NPROTECT; i++)
		if (protect & (1u << i))
			kube_json_patch_annotation(p, protect_keys[i], "true", true);
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
		if (protect)
			logline(r, "protected from autoscalers", str(r, n->name), NULL);
		if (!held || !cordoned || !tainted)
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

/* DRAIN_QUARANTINE_LABEL's value for request @name, into @buf (at least 64 bytes). */
static void quarantine_value(const char *name, char *buf, size_t cap)
{
	size_t len = strlen(name);
	if (len <= 63)
		ng_fmt(buf, cap, "%s", name);
	else
		ng_fmt(buf, cap, "%.54s-%08x", name,
		       (unsigned)(ng_fnv1a64(NG_FNV64_INIT, name, len) & 0xffffffffu));
}

/* Whether @n carries DRAIN_QUARANTINE_LABEL for holder @holder: then nothing gives it back. */
static bool quarantined_for(const struct req *r, const struct kube_node *n, uint32_t holder)
{
	uint32_t key =
	    ng_intern_find(r->pool, DRAIN_QUARANTINE_LABEL, sizeof(DRAIN_QUARANTINE_LABEL) - 1);
	uint32_t val;
	if (key == NG_INTERN_NONE || !kube_labels_get(n->labels, n->nlabels, key, &val))
		return false;
	char want[64];
	quarantine_value(str(r, holder), want, sizeof(want));
	return strcmp(str(r, val), want) == 0;
}

bool quarantine_node(struct req *r, const struct kube_node *n)
{
	if (quarantined_for(r, n, r->nd->name))
		return true;
	if (node_written(r, n))
		return false;
	char value[64];
	quarantine_value(r->name, value, sizeof(value));
	struct kube_json_patch *p = kube_json_patch_create(kube_snapshot_node_rv(r->s, n));
	if (p)
		kube_json_patch_label(p, DRAIN_QUARANTINE_LABEL, value, n->nlabels > 0);
	bool ok = send_node_patch(r, n, p, "node not labelled quarantined");
	kube_json_patch_destroy(p);
	if (ok) {
		logline(r, "quarantined", str(r, n->name), value);
		char msg[300];
		ng_fmt(msg, sizeof(msg),
		       "drain deadline passed: node %s stays cordoned; remove "
		       "label " DRAIN_QUARANTINE_LABEL " to give it back once the request is gone",
		       str(r, n->name));
		node_event(r, n, "DrainDeadlineExceeded", msg);
	}
	return ok;
}

/* Adds to @p what gives @n's protection annotations back as they were before the drainer set
 * them: the value they had, or none; one already gone stays gone (removing it would fail the
 * whole patch). */
static void restore_protection(const struct req *r, struct kube_json_patch *p,
			       const struct kube_node *n)
{
	for (int i = 0; p && i < KUBE_NPROTECT; i++) {
		unsigned bit = 1u << i;
		if (!(n->note.protect & bit))
			continue;
		if (n->note.protect_had & bit)
			kube_json_patch_annotation(p, protect_keys[i],
						   str(r, n->note.protect_was[i]), true);
		else if (n->protect_present & bit)
			kube_json_patch_annotation(p, protect_keys[i], NULL, true);
	}
}

/* Gives node @n back from holder @holder (its request @x, NULL when gone): the holder leaves
 * the note; its taint goes unless another holder adds it too; the last holder out uncordons the
 * node if nodegate cordoned it, and removes the note. True when nothing was left to do or the
 * API server just took the patch that gives it back. */
bool release_node(struct req *r, const struct kube_node *n, uint32_t holder,
		  const struct kube_nd_detail *x)
{
	/* Quarantined: cordon and note stay until a person removes the label. */
	if (!note_holds(&n->note, holder) || quarantined_for(r, n, holder))
		return true;
	if (node_written(r, n))
		return false;
	struct kube_json_patch *p = kube_json_patch_create(kube_snapshot_node_rv(r->s, n));
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
		restore_protection(r, p, n);
	} else if (h) {
		struct kube_taint *kept =
		    ng_arena_alloc(r->arena, (n->note.ntaints + 1u) * sizeof(*kept));
		size_t nkept = 0;
		for (uint16_t i = 0; kept && i < n->note.ntaints; i++)
			if (!taint_in(drop, ndrop, &n->note.taints[i]))
				kept[nkept++] = n->note.taints[i];
		struct note note = {n->note.was_unschedulable,
				    h,
				    left,
				    n->note.boot_id,
				    kept,
				    nkept,
				    n->note.protect,
				    n->note.protect_had,
				    n->note.protect_was};
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

/* Adds or removes the drainer's finalizer, conditional on r->rv; the answer's version is r->rv
 * from then on. */
enum kube_write_outcome set_finalizer(struct req *r, bool present)
{
	char rv[KUBE_WRITE_RV_BYTES] = "";
	const char **cur = ng_arena_alloc(r->arena, (r->nd->nfinalizers + 1u) * sizeof(*cur));
	for (uint16_t i = 0; cur && i < r->nd->nfinalizers; i++)
		cur[i] = str(r, r->nd->finalizers[i]);
	const struct kube_ref ref = {KUBE_KIND_ND, NULL, r->name};
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (cur)
		kube_set_finalizer(r->client, &ref, r->rv, cur, r->nd->nfinalizers, DRAIN_FINALIZER,
				   present, rv, &w);
	count_write(r->d, &w, present ? "finalizer not written" : "finalizer not removed", &ref);
	nd_written(r, &w); /* the version written over */
	char *now = *rv ? ng_arena_alloc(r->arena, strlen(rv) + 1) : NULL;
	if (now) {
		memcpy(now, rv, strlen(rv) + 1);
		r->rv = now;
	}
	return w.outcome;
}

/* The nodes of the request that exist, in @ret (arena); their count. */
size_t request_nodes(struct req *r, const struct kube_node ***ret)
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

/* ---- node lifecycle conditions (docs/drainer.md "Node conditions") ---- */

static const char *const lifecycle_types[KUBE_LIFECYCLE_NTYPES] = KUBE_LIFECYCLE_TYPES;

/* What a round wants of one node: the conditions True (enum pol_lifecycle_bit) and the furthest
 * phase of its holders, which names the reason; held: a request holds it. */
struct want {
	uint8_t bits, phase;
	bool held;
};

/* Holders named in a condition's message before "+N more". */
#define LIFECYCLE_NAMED 3
/* Condition writes per round: the requests' own steps come first, so a wave of nodes changing
 * phase together waits a few short rounds for its conditions rather than delaying the next
 * round's cordons and evictions. */
#define LIFECYCLE_WRITES 8
#define LIFECYCLE_AGAIN_MS 20

static enum pol_drain_phase request_phase(const struct kube_nd_detail *x)
{
	for (uint16_t i = 0; x && i < x->nconditions; i++)
		if (strcmp(x->conditions[i].type, "Ready") == 0)
			return pol_drain_phase_of(x->conditions[i].reason);
	return POL_PH_NONE;
}

/* Whether request @nd holds node @n now: Granted, and, once it is being deleted, only while the
 * drainer's note still lists it (a request the drainer does nothing for lets go at once). */
static bool request_holds(const struct kube_nd *nd, const struct kube_node *n)
{
	if (nd->state != KUBE_ND_GRANTED)
		return false;
	return !nd->deleting || note_holds(&n->note, nd->name);
}

/* Whether request @nd names node @name among its disrupted nodes. */
static bool in_request(const struct kube_nd *nd, uint32_t name)
{
	for (uint16_t i = 0; i < nd->ndisrupted; i++)
		if (nd->disrupted[i] == name)
			return true;
	return false;
}

/* Adds to @w what request @nd wants of node @n, if it holds the node. */
static void want_of(const struct kube_node *n, const struct kube_nd *nd, struct want *w)
{
	if (!request_holds(nd, n))
		return;
	const struct kube_nd_detail *x = nd->detail;
	enum pol_drain_phase ph = request_phase(x);
	bool managed = x && (x->drain.present || x->operation.present);
	w->bits |= (uint8_t)pol_node_lifecycle(ph, managed, x && x->drain.present);
	if (!w->held || (uint8_t)ph > w->phase)
		w->phase = (uint8_t)ph;
	w->held = true;
}

/* The names of the requests holding @n, for the message: "a, b, c (+2 more)". */
static void holder_names(const struct req *r, const struct kube_node *n, char *out, size_t cap)
{
	size_t nr, named = 0, more = 0, len = 0;
	const struct kube_nd *nds = kube_snapshot_nds(r->s, &nr);
	out[0] = '\0';
	for (size_t i = 0; i < nr; i++) {
		if (!in_request(&nds[i], n->name) || !request_holds(&nds[i], n))
			continue;
		if (named == LIFECYCLE_NAMED) {
			more++;
			continue;
		}
		len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s",
					named ? ", " : "", str(r, nds[i].name));
		named++;
	}
	if (more && len < cap)
		(void)snprintf(out + len, cap - len, " (+%zu more)", more);
}

struct lifecycle_body {
	const char *status[KUBE_LIFECYCLE_NTYPES], *reason, *message[KUBE_LIFECYCLE_NTYPES];
	int64_t since_ms[KUBE_LIFECYCLE_NTYPES], now_ms;
};

static void lifecycle_json(struct ng_jw *w, void *ctx)
{
	const struct lifecycle_body *b = ctx;
	char now[32], since[32];
	ng_format_rfc3339_ms(b->now_ms, now);
	ng_jw_key(w, "conditions");
	ng_jw_arr(w);
	for (int i = 0; i < KUBE_LIFECYCLE_NTYPES; i++) {
		ng_format_rfc3339_ms(b->since_ms[i], since);
		ng_jw_obj(w);
		ng_jw_kstr(w, "type", lifecycle_types[i]);
		ng_jw_kstr(w, "status", b->status[i]);
		ng_jw_kstr(w, "reason", b->reason);
		ng_jw_kstr(w, "message", b->message[i]);
		ng_jw_kstr(w, "lastHeartbeatTime", now);
		ng_jw_kstr(w, "lastTransitionTime", since);
		ng_jw_obj_end(w);
	}
	ng_jw_arr_end(w);
}

/* The lifecycle condition @type of @n as the node has it; NULL when it has none. */
static const struct kube_node_condition *node_condition(const struct req *r,
							const struct kube_node *n, const char *type)
{
	uint32_t id = ng_intern_find(r->pool, type, strlen(type));
	for (uint16_t i = 0; id != NG_INTERN_NONE && i < n->nconditions; i++)
		if (n->conditions[i].type == id)
			return &n->conditions[i];
	return NULL;
}

/* Sets @n's lifecycle conditions to what @w says, unless the node has them so already or this
 * drainer wrote them a moment ago. One strategic merge patch of nodes/status: the conditions
 * merge by type, the kubelet's stay as they are. Whether it sent one. */
static bool write_lifecycle(struct req *r, const struct kube_node *n, const struct want *w)
{
	static const char *const words[KUBE_LIFECYCLE_NTYPES] = {
	    "maintenance planned", "drain in progress", "drained", "maintenance in progress"};
	char holders[256], reason[64], msg[KUBE_LIFECYCLE_NTYPES][384];
	struct lifecycle_body b = {.now_ms = r->now_ms};
	if (w->held) {
		holder_names(r, n, holders, sizeof(holders));
		const char *ph = pol_drain_phase_reason((enum pol_drain_phase)w->phase);
		ng_fmt(reason, sizeof(reason), KUBE_LIFECYCLE_REASON_PREFIX "%s",
		       *ph ? ph : "Granted");
	} else {
		ng_fmt(reason, sizeof(reason), KUBE_LIFECYCLE_REASON_PREFIX "Released");
	}
	b.reason = reason;
	for (int i = 0; i < KUBE_LIFECYCLE_NTYPES; i++) {
		bool on = w->bits & (1u << i);
		b.status[i] = on ? "True" : "False";
		if (!w->held)
			ng_fmt(msg[i], sizeof(msg[i]), "given back by nodegate");
		else if (on)
			ng_fmt(msg[i], sizeof(msg[i]), "%s: held by nodegate for NodeDisruption %s",
			       words[i], holders);
		else
			ng_fmt(msg[i], sizeof(msg[i]), "held by nodegate for NodeDisruption %s",
			       holders);
		b.message[i] = msg[i];
		const struct kube_node_condition *c = node_condition(r, n, lifecycle_types[i]);
		bool same = c && c->status == (on ? KUBE_COND_TRUE : KUBE_COND_FALSE);
		b.since_ms[i] = same && c->since_ms > 0 ? c->since_ms : r->now_ms;
	}
	const char *reasons[KUBE_LIFECYCLE_NTYPES] = {reason, reason, reason, reason};
	uint32_t want = kube_lifecycle_hash(b.status, reasons, b.message);
	if (want == n->lifecycle_hash)
		return false;
	const char *name = str(r, n->name);
	uint64_t key = ng_fnv1a64(NG_FNV64_INIT, "lifecycle", 10);
	key = ng_fnv1a64(ng_fnv1a64(key, name, strlen(name) + 1), &want, sizeof(want));
	if (asked_has(r, key)) {
		soon(r, r->now_mono_ms + POLL_MS);
		return false;
	}
	const struct kube_ref ref = {KUBE_KIND_NODE, NULL, name};
	struct kube_write_result res = {KUBE_WRITE_FAILED, 0, {0}};
	kube_patch_status_strategic(r->client, &ref, lifecycle_json, &b, &res);
	count_write(r->d, &res, "node conditions not written", &ref);
	if (res.outcome == KUBE_WRITE_OK)
		asked_put(r, key, r->now_mono_ms + ASKED_MS);
	else
		soon(r, r->now_mono_ms + POLL_MS);
	return true;
}

void node_lifecycle(struct drain *d, const struct kube_snapshot *s, struct ng_arena *arena,
		    int64_t now_wall_ms, int64_t now_mono_ms, int64_t *next_mono_ms)
{
	size_t nn, nr;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nn);
	const struct kube_nd *nds = kube_snapshot_nds(s, &nr);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	bool on = !(ngc && !ngc->invalid && ngc->no_node_conditions);
	struct want *w = nn ? ng_arena_alloc(arena, nn * sizeof(*w)) : NULL;
	if (!w)
		return;
	memset(w, 0, nn * sizeof(*w));
	for (size_t i = 0; on && i < nr; i++)
		for (uint16_t k = 0; k < nds[i].ndisrupted; k++) {
			const struct kube_node *n = kube_snapshot_find_node(s, nds[i].disrupted[k]);
			if (n)
				want_of(n, &nds[i], &w[n - nodes]);
		}
	struct req r =
	    round_req(d, s, arena, now_wall_ms, now_mono_ms, next_mono_ms, "(lifecycle)");
	size_t writes = 0;
	for (size_t i = 0; i < nn; i++) {
		if (!w[i].held && !(nodes[i].flags & KUBE_NODE_LIFECYCLE_OURS))
			continue;
		if (writes == LIFECYCLE_WRITES || (writes && newer_snapshot(d, s))) {
			soon(&r, now_mono_ms + LIFECYCLE_AGAIN_MS);
			break;
		}
		writes += write_lifecycle(&r, &nodes[i], &w[i]);
	}
}
