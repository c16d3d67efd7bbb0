/* Cluster API kinds: the cluster.x-k8s.io Machine, as Cluster API gating reads it
 * (controller/capi.c, docs/integrations/cluster-api.md). Only what gating needs is decoded. */
#include "kube/decode_internal.h"

#include "kube/internal.h"

#include "common/arena.h"
#include "common/intern.h"
#include "common/json.h"

#include <string.h>

/* Pre-drain hooks counted on one Machine: more than a handful is not a real cluster, and the
 * count only has to say "some" (the record's 16-bit field bounds it). */
#define MAX_PRE_DRAIN_HOOKS 65535

/* The first ownerReferences entry's kind and name: who asked for the Machine (a MachineSet, a
 * KubeadmControlPlane, a MachinePool), named as the requestor of its NodeDisruption. */
static ng_status machine_owner(struct kd_ctx *c, const cJSON *meta, struct kube_machine *m)
{
	const cJSON *owners = ng_json_get(meta, "ownerReferences");
	const cJSON *first = cJSON_IsArray(owners) ? owners->child : NULL;
	ng_status st =
	    kd_opt_str(c, first, "kind", "metadata.ownerReferences.kind", &m->owner_kind);
	if (st == NG_OK)
		st = kd_opt_str(c, first, "name", "metadata.ownerReferences.name", &m->owner_name);
	return st;
}

ng_status kd_decode_machine(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	struct kube_machine *m = kd_record(c, KUBE_RES_MACHINES);
	m->ns = id->ns_id;
	m->name = id->name_id;
	const cJSON *meta = ng_json_get(o, "metadata");
	m->uid = kd_dup_or_empty(c, ng_json_str(meta, "uid"));
	m->rv = kd_dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	if (!m->uid || !m->rv)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	m->deleting = del && !cJSON_IsNull(del);
	const cJSON *ann = ng_json_get(meta, "annotations");
	m->has_annotations = cJSON_IsObject(ann);
	const size_t plen = strlen(KUBE_CAPI_PRE_DRAIN_PREFIX);
	for (const cJSON *a = m->has_annotations ? ann->child : NULL; a; a = a->next) {
		if (!a->string || strncmp(a->string, KUBE_CAPI_PRE_DRAIN_PREFIX, plen) != 0)
			continue;
		if (m->npre_drain < MAX_PRE_DRAIN_HOOKS)
			m->npre_drain++;
		if (strcmp(a->string, KUBE_CAPI_HOOK) == 0)
			m->hook = true;
	}
	ng_status st = machine_owner(c, meta, m);
	if (st != NG_OK)
		return st;
	const cJSON *node_ref = ng_json_path(o, (const char *const[]){"status", "nodeRef", NULL});
	if ((st = kd_opt_str(c, node_ref, "name", "status.nodeRef.name", &m->node)) != NG_OK)
		return st;
	if (m->node != NG_INTERN_NONE && !*ng_intern_str(c->pool, m->node, NULL))
		m->node = NG_INTERN_NONE;
	return kd_opt_str(c, ng_json_get(o, "spec"), "clusterName", "spec.clusterName",
			  &m->cluster);
}
