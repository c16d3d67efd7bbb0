/* /debug/cache: the cache's view of the cluster as JSON, so tests and operators can compare it
 * with the API server's. Written in pieces (the document's head, each section's opening, each
 * object, each section's closing, the tail) so the server can stream it from a cursor instead of
 * holding tens of MB: one writer serves both the whole dump and its parts. */
#include "kube/kinds.h"
#include "kube/kube.h"

#include "common/buf.h"
#include "common/jw.h"
#include "common/intern.h"

#include <stdint.h>
#include <string.h>

struct kube_dump_out {
	struct ng_jw w; /* resumed at each piece's place in the document */
	struct ng_buf *b;
	const struct ng_intern *pool;
};

static void str(struct kube_dump_out *o, const char *s)
{
	ng_jw_str(&o->w, s);
}

static void id(struct kube_dump_out *o, uint32_t v)
{
	if (v == NG_INTERN_NONE) {
		ng_jw_null(&o->w);
		return;
	}
	size_t len;
	const char *s = ng_intern_str(o->pool, v, &len);
	ng_jw_strn(&o->w, s, len);
}

static void field(struct kube_dump_out *o, const char *key)
{
	ng_jw_key(&o->w, key);
}

static void labels(struct kube_dump_out *o, const struct kube_label *l, size_t n)
{
	field(o, "labels");
	ng_jw_obj(&o->w);
	for (size_t i = 0; i < n; i++) {
		ng_jw_key(&o->w, ng_intern_str(o->pool, l[i].key, NULL));
		id(o, l[i].val);
	}
	ng_jw_obj_end(&o->w);
}

static void ids(struct kube_dump_out *o, const char *key, const uint32_t *v, size_t n)
{
	field(o, key);
	ng_jw_arr(&o->w);
	for (size_t i = 0; i < n; i++)
		id(o, v[i]);
	ng_jw_arr_end(&o->w);
}

static void boolean(struct kube_dump_out *o, const char *key, bool v)
{
	ng_jw_kbool(&o->w, key, v);
}

/* Each resource is an array of objects; @first_key opens every object (the piece's resumed
 * writer puts the comma before every object but the first). */
static void open_item(struct kube_dump_out *o, const char *first_key)
{
	ng_jw_obj(&o->w);
	field(o, first_key);
}

static void close_item(struct kube_dump_out *o)
{
	ng_jw_obj_end(&o->w);
}

/* One writer per resource (its row's dump): object @i of its table, written whole. */

void kube_dump_node(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_node *node = &kube_snapshot_nodes(s, &n)[i];
	open_item(o, "name");
	id(o, node->name);
	boolean(o, "ready", node->flags & KUBE_NODE_READY);
	boolean(o, "unschedulable", node->flags & KUBE_NODE_UNSCHEDULABLE);
	labels(o, node->labels, node->nlabels);
	close_item(o);
}

void kube_dump_pod(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed",
					     "Unknown"};
	size_t n;
	const struct kube_pod *p = &kube_snapshot_pods(s, &n)[i];
	open_item(o, "namespace");
	id(o, p->ns);
	field(o, "name");
	str(o, p->name);
	field(o, "node");
	id(o, p->node);
	field(o, "phase");
	str(o, phases[p->phase < 5 ? p->phase : 4]);
	field(o, "owner");
	id(o, p->owner_kind);
	boolean(o, "daemonset", p->flags & KUBE_POD_DAEMONSET);
	boolean(o, "mirror", p->flags & KUBE_POD_MIRROR);
	boolean(o, "terminating", p->flags & KUBE_POD_TERMINATING);
	ids(o, "claims", p->claims, p->nclaims);
	labels(o, p->labels, p->nlabels);
	close_item(o);
}

void kube_dump_pvc(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_pvc *pvc = &kube_snapshot_pvcs(s, &n)[i];
	open_item(o, "namespace");
	id(o, pvc->ns);
	field(o, "name");
	id(o, pvc->name);
	field(o, "volume");
	id(o, pvc->volume);
	field(o, "phase");
	str(o, pvc->phase == KUBE_PVC_BOUND  ? "Bound"
	       : pvc->phase == KUBE_PVC_LOST ? "Lost"
					     : "Pending");
	labels(o, pvc->labels, pvc->nlabels);
	close_item(o);
}

void kube_dump_pv(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_pv *pv = &kube_snapshot_pvs(s, &n)[i];
	open_item(o, "name");
	id(o, pv->name);
	boolean(o, "nodeAffinity", pv->affinity.present);
	close_item(o);
}

void kube_dump_nd(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	static const char *const states[] = {"", "Pending", "Granted", "Rejected"};
	size_t n;
	const struct kube_nd *nd = &kube_snapshot_nds(s, &n)[i];
	open_item(o, "name");
	id(o, nd->name);
	field(o, "state");
	str(o, states[nd->state < 4 ? nd->state : 0]);
	ids(o, "nodeNames", nd->node_names, nd->nnode_names);
	ids(o, "disruptedNodes", nd->disrupted, nd->ndisrupted);
	close_item(o);
}

void kube_dump_adb(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_adb *adb = &kube_snapshot_adbs(s, &n)[i];
	open_item(o, "namespace");
	id(o, adb->b.ns);
	field(o, "name");
	id(o, adb->b.name);
	boolean(o, "invalid", adb->b.invalid);
	if (adb->b.invalid) {
		field(o, "error");
		id(o, adb->b.error);
	}
	close_item(o);
}

void kube_dump_ndb(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_ndb *ndb = &kube_snapshot_ndbs(s, &n)[i];
	open_item(o, "name");
	id(o, ndb->b.name);
	boolean(o, "invalid", ndb->b.invalid);
	close_item(o);
}

void kube_dump_ngc(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	static const char *const modes[] = {"", "Enforce", "Warn", "Off"};
	size_t n;
	const struct kube_ngc *ngc = &kube_snapshot_ngcs(s, &n)[i];
	open_item(o, "name");
	id(o, ngc->name);
	boolean(o, "invalid", ngc->invalid);
	boolean(o, "paused", ngc->paused);
	field(o, "evictionMode");
	str(o, modes[ngc->eviction_mode < 4 ? ngc->eviction_mode : 0]);
	ids(o, "exemptUsers", ngc->exempt_users, ngc->nexempt);
	const struct kube_alert_gate *ag = &ngc->alert;
	if (ag->mode != KUBE_ALERT_NONE) {
		field(o, "alertGate");
		ng_jw_obj(&o->w);
		ng_jw_kstr(&o->w, "prometheusURL", ag->target.url);
		ng_jw_kstr(&o->w, ag->mode == KUBE_ALERT_QUERY ? "query" : "alertNameRegex",
			   ag->expr);
		ng_jw_ki64(&o->w, "timeoutSeconds", (int)ag->target.timeout_s);
		ng_jw_ki64(&o->w, "cacheSeconds", (int)ag->cache_s);
		ng_jw_kstr(&o->w, "failurePolicy", ag->fail_open ? "Ignore" : "Deny");
		ng_jw_obj_end(&o->w);
	}
	close_item(o);
}

void kube_dump_ndt(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_ndt *t = &kube_snapshot_ndts(s, &n)[i];
	open_item(o, "name");
	id(o, t->name);
	field(o, "spec");
	const char *spec = t->spec_json ? t->spec_json : "{}";
	ng_jw_raw(&o->w, spec, strlen(spec));
	close_item(o);
}

void kube_dump_nrem(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_nrem *r = &kube_snapshot_nrems(s, &n)[i];
	open_item(o, "name");
	id(o, r->name);
	boolean(o, "invalid", r->invalid);
	if (r->invalid) {
		field(o, "error");
		id(o, r->error);
	}
	field(o, "template");
	id(o, r->template_name);
	boolean(o, "deleting", r->deleting);
	boolean(o, "storm", r->storm);
	close_item(o);
}

void kube_dump_pdb(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_pdb *p = &kube_snapshot_pdbs(s, &n)[i];
	open_item(o, "namespace");
	id(o, p->ns);
	field(o, "name");
	id(o, p->name);
	boolean(o, "invalid", p->invalid);
	ng_jw_ki64(&o->w, "disruptionsAllowed", p->disruptions_allowed);
	close_item(o);
}

void kube_dump_machine(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_machine *m = &kube_snapshot_machines(s, &n)[i];
	open_item(o, "namespace");
	id(o, m->ns);
	field(o, "name");
	id(o, m->name);
	field(o, "node");
	id(o, m->node);
	boolean(o, "deleting", m->deleting);
	boolean(o, "hook", m->hook);
	ng_jw_ki64(&o->w, "preDrainHooks", m->npre_drain);
	close_item(o);
}

void kube_dump_lease(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i)
{
	size_t n;
	const struct kube_lease *l = &kube_snapshot_leases(s, &n)[i];
	open_item(o, "namespace");
	id(o, l->ns);
	field(o, "name");
	id(o, l->name);
	field(o, "holderIdentity");
	id(o, l->holder);
	ng_jw_ki64(&o->w, "leaseDurationSeconds", l->duration_s);
	ng_jw_ki64(&o->w, "renewTimeMs", l->renew_ms);
	close_item(o);
}

/* Resources in the order the JSON has always listed them (the rows' order): each an array
 * under its plural. */
#define NSECTIONS KUBE_RES_COUNT

/* The cursor's stages, in document order: a zeroed cursor is at DUMP_START. */
enum {
	DUMP_START, /* `{"generation":N` */
	DUMP_OPEN,  /* `,"key":[` of sections[section] */
	DUMP_ITEMS, /* object @item of the section, or its `]` once every object is written */
	DUMP_END,   /* the closing `}` and newline */
	DUMP_DONE,  /* nothing left */
};

/*
 * Writes the one piece @cur is at and returns where the next begins, or @cur unchanged when
 * @o failed (the piece may then be written in part).
 */
static struct kube_dump_cursor step(struct kube_dump_out *o, const struct kube_snapshot *s,
				    struct kube_dump_cursor cur)
{
	struct kube_dump_cursor next = cur;
	struct ng_jw *w = &o->w;
	switch (cur.stage) {
	case DUMP_START:
		ng_jw_resume(w, o->b, 0, 0);
		ng_jw_obj(w);
		ng_jw_ki64(w, "generation", (int64_t)kube_snapshot_generation(s));
		next = (struct kube_dump_cursor){.section = 0, .item = 0, .stage = DUMP_OPEN};
		break;
	case DUMP_OPEN: /* inside the document, after "generation" */
		ng_jw_resume(w, o->b, 1, 1);
		field(o, kube_kinds[cur.section].plural);
		ng_jw_arr(w);
		next.stage = DUMP_ITEMS;
		next.item = 0;
		break;
	case DUMP_ITEMS: /* inside the section's array, after @item objects */
		ng_jw_resume(w, o->b, 2, cur.item ? 3 : 1);
		if (cur.item < kube_snapshot_count(s, (enum kube_resource)cur.section)) {
			kube_kinds[cur.section].dump(o, s, cur.item);
			next.item++;
			break;
		}
		ng_jw_arr_end(w);
		next.section++;
		next.item = 0;
		next.stage = next.section < NSECTIONS ? DUMP_OPEN : DUMP_END;
		break;
	default: /* DUMP_END */
		ng_jw_resume(w, o->b, 1, 1);
		ng_jw_obj_end(w);
		if (w->st == NG_OK)
			w->st = ng_buf_puts(o->b, "\n");
		next.stage = DUMP_DONE;
		break;
	}
	return w->st == NG_OK ? next : cur;
}

static bool cursor_valid(const struct kube_dump_cursor *cur)
{
	if (cur->stage == DUMP_OPEN || cur->stage == DUMP_ITEMS)
		return cur->section >= 0 && cur->section < NSECTIONS;
	return cur->stage >= DUMP_START && cur->stage <= DUMP_DONE;
}

ng_status kube_snapshot_dump_json_part(const struct kube_snapshot *s, struct kube_dump_cursor *cur,
				       struct ng_buf *b, size_t budget, bool *ret_done)
{
	*ret_done = false;
	if (!cursor_valid(cur))
		return NG_EINVAL;
	struct kube_dump_out o = {.b = b, .pool = kube_snapshot_pool(s)};
	/* At least one piece per call, so a caller always makes progress. */
	while (cur->stage != DUMP_DONE) {
		size_t mark = b->len;
		*cur = step(&o, s, *cur);
		if (o.w.st != NG_OK) {
			/* Drop the partial piece: @b ends where the cursor stands. */
			b->len = mark;
			if (b->data)
				b->data[mark] = '\0';
			return o.w.st;
		}
		if (b->len >= budget)
			break;
	}
	*ret_done = cur->stage == DUMP_DONE;
	return NG_OK;
}

ng_status kube_snapshot_dump_json(const struct kube_snapshot *s, struct ng_buf *b)
{
	struct kube_dump_cursor cur = {0};
	bool done;
	return kube_snapshot_dump_json_part(s, &cur, b, SIZE_MAX, &done);
}
