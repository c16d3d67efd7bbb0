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

static bool send_node_patch(struct req *r, const struct kube_node *n, struct kube_json_patch *p,
			    const char *what)
{
	const struct kube_ref ref = {KUBE_KIND_NODE, NULL, str(r, n->name)};
	struct kube_write_result w = {KUBE_WRITE_FAILED, 0, {0}};
	if (p && kube_json_patch_body(p, NULL))
		kube_apply_json_patch(r->d->client, &ref, p, &w);
	count_write(r->d, &w, what, &ref);
	if (w.outcome == KUBE_WRITE_OK || w.outcome == KUBE_WRITE_CONFLICT)
		ng_memo_put(&r->d->asked, node_key(r, n), r->now_mono_ms + ASKED_MS);
	return w.outcome == KUBE_WRITE_OK;
}

/* Holds node @n for the request: the note first (with whether it was cordoned before), then the
 * cordon and the taint, in one conditional patch. True when the node is held as asked now (the
 * cache shows it, or the API server just took the patch). */
bool hold_node(struct req *r, const struct kube_node *n)
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
	struct kube_json_patch *p = kube_json_patch_create(n->rv);
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
enum kube_write_outcome set_finalizer(struct req *r, bool present)
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
