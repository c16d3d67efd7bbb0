/* The row of each cached resource kind (kube/kinds.h), and the snapshot's typed accessors and
 * lookups (kube/snapshot.h) that name a kind: with its record struct (kube/records.h) and its
 * decoder (kube/decode_*.c), the only place in kube/ a kind is named. */
#include "kube/kinds.h"

#include "kube/decode_internal.h"

#include "common/intern.h"

#include <stdio.h>
#include <string.h>

/* ---- identity keys ---- */

static uint64_t key_node(const void *rec)
{
	return ((const struct kube_node *)rec)->name;
}

static uint64_t key_pvc(const void *rec)
{
	return kube_key2(((const struct kube_pvc *)rec)->ns, ((const struct kube_pvc *)rec)->name);
}

static uint64_t key_pv(const void *rec)
{
	return ((const struct kube_pv *)rec)->name;
}

static uint64_t key_nd(const void *rec)
{
	return ((const struct kube_nd *)rec)->name;
}

static uint64_t key_adb(const void *rec)
{
	return kube_key2(((const struct kube_adb *)rec)->b.ns,
			 ((const struct kube_adb *)rec)->b.name);
}

static uint64_t key_ndb(const void *rec)
{
	return ((const struct kube_ndb *)rec)->b.name;
}

static uint64_t key_ngc(const void *rec)
{
	return ((const struct kube_ngc *)rec)->name;
}

static uint64_t key_ndt(const void *rec)
{
	return ((const struct kube_ndt *)rec)->name;
}

static uint64_t key_nrem(const void *rec)
{
	return ((const struct kube_nrem *)rec)->name;
}

static uint64_t key_pdb(const void *rec)
{
	return kube_key2(((const struct kube_pdb *)rec)->ns, ((const struct kube_pdb *)rec)->name);
}

static uint64_t key_machine(const void *rec)
{
	return kube_key2(((const struct kube_machine *)rec)->ns,
			 ((const struct kube_machine *)rec)->name);
}

static uint64_t key_lease(const void *rec)
{
	return kube_key2(((const struct kube_lease *)rec)->ns,
			 ((const struct kube_lease *)rec)->name);
}

static uint64_t key_pod(const void *rec)
{
	const struct kube_pod *p = rec;
	return kube_pod_key(p->ns, p->name, strlen(p->name));
}

/* Pod names are not interned: equal hashes are told apart by namespace and name. */
static bool same_pod(const void *a, const void *b)
{
	const struct kube_pod *x = a, *y = b;
	return x->ns == y->ns && strcmp(x->name, y->name) == 0;
}

/* ---- the rows ---- */

/* ---- shapes (kube_kind_row.same_shape) ---- */

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool taints_same(const struct kube_taint *a, const struct kube_taint *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].key != b[i].key || a[i].val != b[i].val || a[i].effect != b[i].effect)
			return false;
	return true;
}

/* Whether node records @pa and @pb place a node alike for every budget: its name, labels, taints
 * and state flags (not its conditions' times, resourceVersion or notes). */
static bool node_same_shape(const void *pa, const void *pb)
{
	const struct kube_node *a = pa, *b = pb;
	if (a->name != b->name || a->flags != b->flags || a->nlabels != b->nlabels ||
	    a->ntaints != b->ntaints)
		return false;
	for (uint32_t i = 0; i < a->nlabels; i++)
		if (a->labels[i].key != b->labels[i].key || a->labels[i].val != b->labels[i].val)
			return false;
	return taints_same(a->taints, b->taints, a->ntaints);
}

/* Every field of struct kube_node but rv_decoded is compared below: a field added to the record
 * must be compared there too, or an update of it alone would be lost as a heartbeat. */
_Static_assert(sizeof(struct kube_node) == 160, "compare the new field in node_same_but_version");

/* Whether node record @pb is @pa in a later version that changed nothing nodegate reads (a
 * kubelet's status heartbeat: new condition heartbeat times, a new resourceVersion). */
static bool node_same_but_version(const void *pa, const void *pb)
{
	const struct kube_node *a = pa, *b = pb;
	const struct kube_drain_note *x = &a->note, *y = &b->note;
	if (!node_same_shape(a, b) || a->nconditions != b->nconditions ||
	    !str_same(a->boot_id, b->boot_id) || !str_same(a->uid, b->uid) ||
	    a->has_annotations != b->has_annotations || a->protect_present != b->protect_present ||
	    a->protect_true != b->protect_true ||
	    memcmp(a->protect_val, b->protect_val, sizeof(a->protect_val)) != 0 ||
	    a->lifecycle_hash != b->lifecycle_hash || a->dnd_until_ms != b->dnd_until_ms)
		return false;
	for (uint16_t i = 0; i < a->nconditions; i++)
		if (a->conditions[i].type != b->conditions[i].type ||
		    a->conditions[i].status != b->conditions[i].status ||
		    a->conditions[i].since_ms != b->conditions[i].since_ms)
			return false;
	return x->present == y->present && x->invalid == y->invalid &&
	       x->was_unschedulable == y->was_unschedulable && x->nholders == y->nholders &&
	       (!x->nholders ||
		memcmp(x->holders, y->holders, x->nholders * sizeof(*x->holders)) == 0) &&
	       str_same(x->boot_id, y->boot_id) && x->ntaints == y->ntaints &&
	       taints_same(x->taints, y->taints, x->ntaints) && x->protect == y->protect &&
	       x->protect_had == y->protect_had &&
	       memcmp(x->protect_was, y->protect_was, sizeof(x->protect_was)) == 0;
}

static bool selector_same(const struct kube_selector *a, const struct kube_selector *b)
{
	if (a->present != b->present || a->nreqs != b->nreqs)
		return false;
	for (uint16_t i = 0; i < a->nreqs; i++) {
		const struct kube_requirement *x = &a->reqs[i], *y = &b->reqs[i];
		if (x->key != y->key || x->op != y->op || x->nvalues != y->nvalues ||
		    x->num != y->num)
			return false;
		for (uint16_t v = 0; v < x->nvalues; v++)
			if (x->values[v] != y->values[v])
				return false;
	}
	return true;
}

/* Whether NodeDisruptionBudget records @pa and @pb make the same pool of nodes with the same
 * domains, counted alike: name, validity, node selector, topology key, taint targets and
 * countUnavailableNodes (not its limits, windows or status: the gate writes that after grants). */
static bool ndb_same_shape(const void *pa, const void *pb)
{
	const struct kube_ndb *a = pa, *b = pb;
	if (a->b.name != b->b.name || a->b.invalid != b->b.invalid ||
	    a->topology_key != b->topology_key || a->count_unavailable != b->count_unavailable ||
	    a->ntargets != b->ntargets || !selector_same(&a->node_selector, &b->node_selector))
		return false;
	for (uint16_t i = 0; i < a->ntargets; i++) {
		const struct kube_taint_target *x = &a->taint_targets[i], *y = &b->taint_targets[i];
		if (x->key != y->key || x->val != y->val || x->effect != y->effect ||
		    x->exists != y->exists)
			return false;
	}
	return true;
}

const struct kube_kind_row kube_kinds[KUBE_RES_COUNT] = {
    [KUBE_RES_NODES] =
	{
	    .group = "",
	    .version = "v1",
	    .plural = "nodes",
	    .kind = "Node",
	    .size = sizeof(struct kube_node),
	    .key = key_node,
	    .ids = kube_ids_node,
	    .decode = kd_decode_node,
	    .index = kube_index_node_labels,
	    .same_shape = node_same_shape,
	    .same_but_version = node_same_but_version,
	    .dump = kube_dump_node,
	    .write = KUBE_KIND_NODE,
	},
    [KUBE_RES_PODS] =
	{
	    .group = "",
	    .version = "v1",
	    .plural = "pods",
	    .kind = "Pod",
	    .namespaced = true,
	    .size = sizeof(struct kube_pod),
	    .key = key_pod,
	    .same = same_pod,
	    .compact = kd_compact_pod,
	    .ids = kube_ids_pod,
	    .decode = kd_decode_pod,
	    .read_from_text = true,
	    .index = kube_index_pods,
	    .dump = kube_dump_pod,
	    .write = KUBE_KIND_POD,
	},
    [KUBE_RES_PVCS] =
	{
	    .group = "",
	    .version = "v1",
	    .plural = "persistentvolumeclaims",
	    .kind = "PersistentVolumeClaim",
	    .namespaced = true,
	    .size = sizeof(struct kube_pvc),
	    .key = key_pvc,
	    .ids = kube_ids_pvc,
	    .decode = kd_decode_pvc,
	    .dump = kube_dump_pvc,
	},
    [KUBE_RES_PVS] =
	{
	    .group = "",
	    .version = "v1",
	    .plural = "persistentvolumes",
	    .kind = "PersistentVolume",
	    .size = sizeof(struct kube_pv),
	    .key = key_pv,
	    .ids = kube_ids_pv,
	    .decode = kd_decode_pv,
	    .dump = kube_dump_pv,
	},
    [KUBE_RES_NDS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "nodedisruptions",
	    .kind = "NodeDisruption",
	    .any_version = true,
	    .urgent = true,
	    .size = sizeof(struct kube_nd),
	    .key = key_nd,
	    .ids = kube_ids_nd,
	    .decode = kd_decode_nd,
	    .index = kube_index_nd_grants,
	    .dump = kube_dump_nd,
	    .write = KUBE_KIND_ND,
	},
    [KUBE_RES_ADBS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "applicationdisruptionbudgets",
	    .kind = "ApplicationDisruptionBudget",
	    .namespaced = true,
	    .any_version = true,
	    .urgent = true,
	    .size = sizeof(struct kube_adb),
	    .key = key_adb,
	    .ids = kube_ids_adb,
	    .decode = kd_decode_adb,
	    .index = kube_index_adbs,
	    .dump = kube_dump_adb,
	    .write = KUBE_KIND_ADB,
	},
    [KUBE_RES_NDBS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "nodedisruptionbudgets",
	    .kind = "NodeDisruptionBudget",
	    .any_version = true,
	    .urgent = true,
	    .size = sizeof(struct kube_ndb),
	    .key = key_ndb,
	    .ids = kube_ids_ndb,
	    .decode = kd_decode_ndb,
	    .same_shape = ndb_same_shape,
	    .dump = kube_dump_ndb,
	    .write = KUBE_KIND_NDB,
	},
    [KUBE_RES_NGCS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "nodegateconfigs",
	    .kind = "NodeGateConfig",
	    .any_version = true,
	    .urgent = true,
	    .size = sizeof(struct kube_ngc),
	    .key = key_ngc,
	    .ids = kube_ids_ngc,
	    .decode = kd_decode_ngc,
	    .dump = kube_dump_ngc,
	    .write = KUBE_KIND_NGC,
	},
    [KUBE_RES_NDTS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "nodedisruptiontemplates",
	    .kind = "NodeDisruptionTemplate",
	    .any_version = true,
	    .optional = true,
	    .urgent = true,
	    .size = sizeof(struct kube_ndt),
	    .key = key_ndt,
	    .ids = kube_ids_ndt,
	    .decode = kd_decode_ndt,
	    .dump = kube_dump_ndt,
	},
    [KUBE_RES_NREMS] =
	{
	    .group = "nodegate.io",
	    .version = "v1alpha1",
	    .plural = "noderemediations",
	    .kind = "NodeRemediation",
	    .any_version = true,
	    .optional = true,
	    .urgent = true,
	    .size = sizeof(struct kube_nrem),
	    .key = key_nrem,
	    .ids = kube_ids_nrem,
	    .decode = kd_decode_nrem,
	    .dump = kube_dump_nrem,
	    .write = KUBE_KIND_NREM,
	},
    [KUBE_RES_PDBS] =
	{
	    .group = "policy",
	    .version = "v1",
	    .plural = "poddisruptionbudgets",
	    .kind = "PodDisruptionBudget",
	    .namespaced = true,
	    .size = sizeof(struct kube_pdb),
	    .key = key_pdb,
	    .ids = kube_ids_pdb,
	    .decode = kd_decode_pdb,
	    .index = kube_index_pdbs,
	    .dump = kube_dump_pdb,
	},
    /* v1beta1: served by every Cluster API release since 1.0, v1beta2's 1.11 and later
     * included (converted by Cluster API's webhook); what nodegate reads is the same in both,
     * and any version decodes (snapshot files). A cluster without Cluster API has none. */
    [KUBE_RES_MACHINES] =
	{
	    .group = "cluster.x-k8s.io",
	    .version = "v1beta1",
	    .plural = "machines",
	    .kind = "Machine",
	    .namespaced = true,
	    .any_version = true,
	    .optional = true,
	    .size = sizeof(struct kube_machine),
	    .key = key_machine,
	    .ids = kube_ids_machine,
	    .decode = kd_decode_machine,
	    .dump = kube_dump_machine,
	    .write = KUBE_KIND_MACHINE,
	},
    /* Only medik8s's namespace: kube-node-lease holds a Lease per node renewed every 10 s,
     * and nodegate's own leader Leases are read directly. */
    [KUBE_RES_LEASES] =
	{
	    .group = "coordination.k8s.io",
	    .version = "v1",
	    .plural = "leases",
	    .kind = "Lease",
	    .namespaced = true,
	    .namespace = KUBE_MEDIK8S_NAMESPACE,
	    .optional = true,
	    .size = sizeof(struct kube_lease),
	    .key = key_lease,
	    .ids = kube_ids_lease,
	    .decode = kd_decode_lease,
	    .dump = kube_dump_lease,
	    .write = KUBE_KIND_LEASE,
	},
};

const struct kube_kind_row *kube_kind_of_write(enum kube_kind k)
{
	for (size_t r = 0; k != KUBE_KIND_NONE && r < KUBE_RES_COUNT; r++)
		if (kube_kinds[r].write == k)
			return &kube_kinds[r];
	return NULL;
}

const char *kube_resource_name(enum kube_resource r)
{
	return r < KUBE_RES_COUNT ? kube_kinds[r].plural : "unknown";
}

void kube_kind_path(enum kube_resource r, char *buf, size_t cap)
{
	const struct kube_kind_row *k = &kube_kinds[r];
	(void)snprintf(buf, cap, "%s%s/%s/%s%s%s%s", *k->group ? "/apis/" : "/api", k->group,
		       k->version, k->namespace ? "namespaces/" : "",
		       k->namespace ? k->namespace : "", k->namespace ? "/" : "", k->plural);
}

/* ---- the snapshot's typed accessors ---- */

#define ACCESSOR(fn, type, res)                                                                    \
	const type *fn(const struct kube_snapshot *s, size_t *ret_n)                               \
	{                                                                                          \
		*ret_n = s->t[res]->n;                                                             \
		return s->t[res]->recs;                                                            \
	}
ACCESSOR(kube_snapshot_nodes, struct kube_node, KUBE_RES_NODES)
ACCESSOR(kube_snapshot_pods, struct kube_pod, KUBE_RES_PODS)
ACCESSOR(kube_snapshot_pvcs, struct kube_pvc, KUBE_RES_PVCS)
ACCESSOR(kube_snapshot_pvs, struct kube_pv, KUBE_RES_PVS)
ACCESSOR(kube_snapshot_nds, struct kube_nd, KUBE_RES_NDS)
ACCESSOR(kube_snapshot_adbs, struct kube_adb, KUBE_RES_ADBS)
ACCESSOR(kube_snapshot_ndbs, struct kube_ndb, KUBE_RES_NDBS)
ACCESSOR(kube_snapshot_ngcs, struct kube_ngc, KUBE_RES_NGCS)
ACCESSOR(kube_snapshot_ndts, struct kube_ndt, KUBE_RES_NDTS)
ACCESSOR(kube_snapshot_nrems, struct kube_nrem, KUBE_RES_NREMS)
ACCESSOR(kube_snapshot_pdbs, struct kube_pdb, KUBE_RES_PDBS)
ACCESSOR(kube_snapshot_machines, struct kube_machine, KUBE_RES_MACHINES)
ACCESSOR(kube_snapshot_leases, struct kube_lease, KUBE_RES_LEASES)
#undef ACCESSOR

static const void *find_by_key(const struct kube_table *t, uint64_t key)
{
	uint32_t i;
	return ng_map_get(&t->by_key, key, &i)
		   ? (const char *)t->recs + i * kube_record_size(t->res)
		   : NULL;
}

const struct kube_ngc *kube_snapshot_config(const struct kube_snapshot *s)
{
	uint32_t id = ng_intern_find(s->pool->in, "default", 7);
	return id == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NGCS], id);
}

const struct kube_nd *kube_snapshot_find_nd(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NDS], name);
}

const struct kube_lease *kube_snapshot_find_lease_str(const struct kube_snapshot *s, const char *ns,
						      const char *name, size_t name_len)
{
	uint32_t ns_id = ng_intern_find(s->pool->in, ns, strlen(ns));
	uint32_t name_id = ng_intern_find(s->pool->in, name, name_len);
	if (ns_id == NG_INTERN_NONE || name_id == NG_INTERN_NONE)
		return NULL;
	return find_by_key(s->t[KUBE_RES_LEASES], kube_key2(ns_id, name_id));
}

const struct kube_ndt *kube_snapshot_find_ndt(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NDTS], name);
}

const uint32_t *kube_snapshot_nodes_with_label(const struct kube_snapshot *s, uint32_t key,
					       uint32_t val, size_t *ret_n)
{
	const struct kube_index *ix = &s->t[KUBE_RES_NODES]->idx_a;
	uint32_t r;
	if (key == NG_INTERN_NONE || val == NG_INTERN_NONE || !ix->ranges ||
	    !ng_map_get(&ix->map, kube_key2(key, val), &r)) {
		*ret_n = 0;
		return NULL;
	}
	*ret_n = ix->ranges[r].count;
	return ix->items + ix->ranges[r].start;
}

const struct kube_node *kube_snapshot_find_node(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_NODES], name);
}

const char *kube_snapshot_node_rv(const struct kube_snapshot *s, const struct kube_node *n)
{
	const struct kube_table *t = s->t[KUBE_RES_NODES];
	uintptr_t at = (uintptr_t)n, recs = (uintptr_t)t->recs;
	if (!t->npatches || at < recs || at >= recs + t->n * sizeof(*n))
		return n->rv_decoded;
	size_t i = (at - recs) / sizeof(*n);
	return ((const struct kube_node *)kube_table_rec(t, i))->rv_decoded;
}

const struct kube_pod *kube_snapshot_find_pod_str(const struct kube_snapshot *s, const char *ns,
						  size_t ns_len, const char *name, size_t name_len)
{
	uint32_t ns_id = ng_intern_find(s->pool->in, ns, ns_len);
	if (ns_id == NG_INTERN_NONE)
		return NULL;
	const struct kube_table *t = s->t[KUBE_RES_PODS];
	const struct kube_pod *pods = t->recs;
	uint32_t i;
	for (uint64_t k = kube_pod_key(ns_id, name, name_len); ng_map_get(&t->by_key, k, &i); k++)
		if (pods[i].ns == ns_id && strncmp(pods[i].name, name, name_len) == 0 &&
		    pods[i].name[name_len] == '\0')
			return &pods[i];
	return NULL;
}

const struct kube_pvc *kube_snapshot_find_pvc(const struct kube_snapshot *s, uint32_t ns,
					      uint32_t name)
{
	if (ns == NG_INTERN_NONE || name == NG_INTERN_NONE)
		return NULL;
	return find_by_key(s->t[KUBE_RES_PVCS], kube_key2(ns, name));
}

const struct kube_machine *kube_snapshot_find_machine(const struct kube_snapshot *s, uint32_t ns,
						      uint32_t name)
{
	if (ns == NG_INTERN_NONE || name == NG_INTERN_NONE)
		return NULL;
	return find_by_key(s->t[KUBE_RES_MACHINES], kube_key2(ns, name));
}

const struct kube_pv *kube_snapshot_find_pv(const struct kube_snapshot *s, uint32_t name)
{
	return name == NG_INTERN_NONE ? NULL : find_by_key(s->t[KUBE_RES_PVS], name);
}

const uint32_t *kube_snapshot_pods_on_node(const struct kube_snapshot *s, uint32_t node,
					   size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PODS]->idx_a, node, ret_n);
}

const uint32_t *kube_snapshot_pods_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PODS]->idx_b, ns, ret_n);
}

const uint32_t *kube_snapshot_adbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_ADBS]->idx_a, ns, ret_n);
}

const uint32_t *kube_snapshot_pdbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n)
{
	return kube_index_get(&s->t[KUBE_RES_PDBS]->idx_a, ns, ret_n);
}

const struct kube_nd *kube_snapshot_node_grant(const struct kube_snapshot *s, uint32_t node)
{
	const struct kube_table *t = s->t[KUBE_RES_NDS];
	uint32_t i;
	return ng_map_get(&t->grant, node, &i) ? &((const struct kube_nd *)t->recs)[i] : NULL;
}
