#include "budgets/budgets.h"

#include "common/arena.h"
#include "common/intern.h"

#include <stdlib.h>
#include <string.h>

static bool pvc_selected(const struct kube_snapshot *s, const struct kube_adb *adb,
			 const struct kube_pvc *pvc)
{
	return pvc && pvc->ns == adb->b.ns &&
	       bud_selector_matches(&adb->pvc_selector, pvc->labels, pvc->nlabels,
				    kube_snapshot_pool(s));
}

bool bud_adb_selects_pod(const struct kube_snapshot *s, const struct kube_adb *adb,
			 const struct kube_pod *pod)
{
	if (adb->b.invalid || pod->ns != adb->b.ns)
		return false;
	if (bud_selector_matches(&adb->pod_selector, pod->labels, pod->nlabels,
				 kube_snapshot_pool(s)))
		return true;
	if (!adb->pvc_selector.present)
		return false;
	for (uint16_t i = 0; i < pod->nclaims; i++)
		if (pvc_selected(s, adb, kube_snapshot_find_pvc(s, pod->ns, pod->claims[i])))
			return true;
	return false;
}

bool bud_pv_pins_node(const struct kube_snapshot *s, const struct kube_pv *pv,
		      const struct kube_node *node)
{
	return bud_node_selector_matches(&pv->affinity, node, kube_snapshot_pool(s));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

ng_status bud_adb_scope(const struct kube_snapshot *s, const struct kube_adb *adb,
			struct ng_arena *arena, struct bud_adb_scope *ret)
{
	struct bud_adb_scope out = {.lost_pvc = NG_INTERN_NONE};
	size_t nns;
	const uint32_t *in_ns = kube_snapshot_pods_in_ns(s, adb->b.ns, &nns);
	size_t npods_all, nnodes_all, npvcs;
	const struct kube_pod *pods = kube_snapshot_pods(s, &npods_all);
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes_all);
	const struct kube_pvc *pvcs = kube_snapshot_pvcs(s, &npvcs);
	ng_status st = NG_OK;
	/* Upper bound of watched nodes: one per selected pod plus every node per pinning PV. */
	uint32_t *sel = nns ? ng_arena_alloc(arena, nns * sizeof(*sel)) : NULL;
	if (nns && !sel)
		return NG_ENOMEM;
	size_t nsel = 0;
	if (!adb->b.invalid) {
		for (size_t i = 0; i < nns; i++) {
			const struct kube_pod *p = &pods[in_ns[i]];
			if (p->node == NG_INTERN_NONE || p->phase == KUBE_POD_SUCCEEDED ||
			    p->phase == KUBE_POD_FAILED)
				continue;
			if (bud_adb_selects_pod(s, adb, p))
				sel[nsel++] = in_ns[i];
		}
	}
	/* Pinning PVs: selected, Bound PVCs whose PV has node affinity. */
	size_t npinning = 0;
	const struct kube_pv **pinning = NULL;
	if (!adb->b.invalid && adb->pvc_selector.present && npvcs) {
		pinning = ng_arena_alloc(arena, npvcs * sizeof(*pinning));
		if (!pinning)
			return NG_ENOMEM;
		for (size_t i = 0; i < npvcs; i++) {
			const struct kube_pvc *c = &pvcs[i];
			if (!pvc_selected(s, adb, c))
				continue;
			if (c->phase == KUBE_PVC_LOST && out.lost_pvc == NG_INTERN_NONE)
				out.lost_pvc = c->name;
			if (c->phase != KUBE_PVC_BOUND || c->volume == NG_INTERN_NONE)
				continue;
			const struct kube_pv *pv = kube_snapshot_find_pv(s, c->volume);
			if (pv && pv->affinity.present)
				pinning[npinning++] = pv;
		}
	}
	size_t cap = nsel + (npinning ? nnodes_all : 0);
	uint32_t *nodes_out = cap ? ng_arena_alloc(arena, cap * sizeof(*nodes_out)) : NULL;
	if (cap && !nodes_out)
		return NG_ENOMEM;
	size_t nn = 0;
	for (size_t i = 0; i < nsel; i++)
		/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): cap >= nsel > 0 here */
		nodes_out[nn++] = pods[sel[i]].node;
	for (size_t k = 0; npinning && k < nnodes_all; k++) {
		for (size_t j = 0; j < npinning; j++) {
			if (bud_pv_pins_node(s, pinning[j], &nodes[k])) {
				nodes_out[nn++] = nodes[k].name;
				break;
			}
		}
	}
	if (nn) {
		qsort(nodes_out, nn, sizeof(*nodes_out), cmp_u32);
		size_t u = 1;
		for (size_t i = 1; i < nn; i++)
			if (nodes_out[i] != nodes_out[u - 1])
				nodes_out[u++] = nodes_out[i];
		nn = u;
	}
	out.pods = sel;
	out.npods = nsel;
	out.nodes = nodes_out;
	out.nnodes = nn;
	*ret = out;
	return st;
}
