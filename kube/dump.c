/* /debug/cache: the cache's view of the cluster as JSON, so tests and operators can compare it
 * with the API server's. */
#include "kube/kube.h"

#include "common/buf.h"
#include "common/intern.h"

#include <string.h>

struct out {
	struct ng_buf *b;
	const struct ng_intern *pool;
	ng_status st;
};

static void put(struct out *o, const char *s)
{
	if (o->st == NG_OK)
		o->st = ng_buf_puts(o->b, s);
}

static void str(struct out *o, const char *s)
{
	if (o->st == NG_OK)
		o->st = ng_buf_json_str(o->b, s, strlen(s));
}

static void id(struct out *o, uint32_t v)
{
	if (v == NG_INTERN_NONE) {
		put(o, "null");
		return;
	}
	size_t len;
	const char *s = ng_intern_str(o->pool, v, &len);
	if (o->st == NG_OK)
		o->st = ng_buf_json_str(o->b, s, len);
}

static void field(struct out *o, const char *key)
{
	put(o, ",\"");
	put(o, key);
	put(o, "\":");
}

static void labels(struct out *o, const struct kube_label *l, size_t n)
{
	field(o, "labels");
	put(o, "{");
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(o, ",");
		id(o, l[i].key);
		put(o, ":");
		id(o, l[i].val);
	}
	put(o, "}");
}

static void ids(struct out *o, const char *key, const uint32_t *v, size_t n)
{
	field(o, key);
	put(o, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(o, ",");
		id(o, v[i]);
	}
	put(o, "]");
}

static void boolean(struct out *o, const char *key, bool v)
{
	field(o, key);
	put(o, v ? "true" : "false");
}

/* Each resource is an array of objects; @first_key opens every object. */
static void open_item(struct out *o, size_t i, const char *first_key)
{
	put(o, i ? ",{\"" : "{\"");
	put(o, first_key);
	put(o, "\":");
}

static void dump_nodes(struct out *o, const struct kube_snapshot *s)
{
	size_t n;
	const struct kube_node *nodes = kube_snapshot_nodes(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "name");
		id(o, nodes[i].name);
		boolean(o, "ready", nodes[i].flags & KUBE_NODE_READY);
		boolean(o, "unschedulable", nodes[i].flags & KUBE_NODE_UNSCHEDULABLE);
		labels(o, nodes[i].labels, nodes[i].nlabels);
		put(o, "}");
	}
}

static void dump_pods(struct out *o, const struct kube_snapshot *s)
{
	static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed",
					     "Unknown"};
	size_t n;
	const struct kube_pod *pods = kube_snapshot_pods(s, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kube_pod *p = &pods[i];
		open_item(o, i, "namespace");
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
		put(o, "}");
	}
}

static void dump_pvcs(struct out *o, const struct kube_snapshot *s)
{
	size_t n;
	const struct kube_pvc *pvcs = kube_snapshot_pvcs(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "namespace");
		id(o, pvcs[i].ns);
		field(o, "name");
		id(o, pvcs[i].name);
		field(o, "volume");
		id(o, pvcs[i].volume);
		field(o, "phase");
		str(o, pvcs[i].phase == KUBE_PVC_BOUND  ? "Bound"
		       : pvcs[i].phase == KUBE_PVC_LOST ? "Lost"
							: "Pending");
		labels(o, pvcs[i].labels, pvcs[i].nlabels);
		put(o, "}");
	}
}

static void dump_pvs(struct out *o, const struct kube_snapshot *s)
{
	size_t n;
	const struct kube_pv *pvs = kube_snapshot_pvs(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "name");
		id(o, pvs[i].name);
		boolean(o, "nodeAffinity", pvs[i].affinity.present);
		put(o, "}");
	}
}

static void dump_nds(struct out *o, const struct kube_snapshot *s)
{
	static const char *const states[] = {"", "Pending", "Granted", "Rejected"};
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "name");
		id(o, nds[i].name);
		field(o, "state");
		str(o, states[nds[i].state < 4 ? nds[i].state : 0]);
		ids(o, "nodeNames", nds[i].node_names, nds[i].nnode_names);
		ids(o, "disruptedNodes", nds[i].disrupted, nds[i].ndisrupted);
		put(o, "}");
	}
}

static void dump_adbs(struct out *o, const struct kube_snapshot *s)
{
	size_t n;
	const struct kube_adb *adbs = kube_snapshot_adbs(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "namespace");
		id(o, adbs[i].b.ns);
		field(o, "name");
		id(o, adbs[i].b.name);
		boolean(o, "invalid", adbs[i].b.invalid);
		if (adbs[i].b.invalid) {
			field(o, "error");
			id(o, adbs[i].b.error);
		}
		put(o, "}");
	}
}

static void dump_ndbs(struct out *o, const struct kube_snapshot *s)
{
	size_t n;
	const struct kube_ndb *ndbs = kube_snapshot_ndbs(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "name");
		id(o, ndbs[i].b.name);
		boolean(o, "invalid", ndbs[i].b.invalid);
		put(o, "}");
	}
}

static void dump_ngcs(struct out *o, const struct kube_snapshot *s)
{
	static const char *const modes[] = {"", "Enforce", "Warn", "Off"};
	size_t n;
	const struct kube_ngc *ngcs = kube_snapshot_ngcs(s, &n);
	for (size_t i = 0; i < n; i++) {
		open_item(o, i, "name");
		id(o, ngcs[i].name);
		boolean(o, "invalid", ngcs[i].invalid);
		boolean(o, "paused", ngcs[i].paused);
		field(o, "evictionMode");
		str(o, modes[ngcs[i].eviction_mode < 4 ? ngcs[i].eviction_mode : 0]);
		ids(o, "exemptUsers", ngcs[i].exempt_users, ngcs[i].nexempt);
		put(o, "}");
	}
}

ng_status kube_snapshot_dump_json(const struct kube_snapshot *s, struct ng_buf *b)
{
	/* Resources in the order the JSON has always listed them. */
	static const struct {
		const char *key;
		void (*dump)(struct out *o, const struct kube_snapshot *s);
	} sections[] = {
	    {"nodes", dump_nodes},
	    {"pods", dump_pods},
	    {"persistentvolumeclaims", dump_pvcs},
	    {"persistentvolumes", dump_pvs},
	    {"nodedisruptions", dump_nds},
	    {"applicationdisruptionbudgets", dump_adbs},
	    {"nodedisruptionbudgets", dump_ndbs},
	    {"nodegateconfigs", dump_ngcs},
	};
	struct out o = {.b = b, .pool = kube_snapshot_pool(s), .st = NG_OK};
	put(&o, "{\"generation\":");
	if (o.st == NG_OK)
		o.st = ng_buf_i64(b, (int64_t)kube_snapshot_generation(s));
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		field(&o, sections[i].key);
		put(&o, "[");
		sections[i].dump(&o, s);
		put(&o, "]");
	}
	put(&o, "}\n");
	return o.st;
}
