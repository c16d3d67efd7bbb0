/* The controllers' start, stop and shared /metrics helpers (scaffold.h). */
#include "controller/scaffold.h"

#include "common/prom.h"
#include "controller/leader.h"
#include "kube/runtime.h"

/* The lease's watcher: gained or lost, a step at once, no polling. */
static void wake(void *rt)
{
	kube_runtime_wake(rt);
}

struct kube_runtime *scaffold_create(const struct scaffold_config *cfg, struct ng_err *reterr)
{
	const struct kube_runtime_config rc = {.name = cfg->name,
					       .kube = cfg->kube,
					       .store = cfg->store,
					       .watch = cfg->watch,
					       .step = cfg->step,
					       .ctx = cfg->ctx};
	struct kube_runtime *rt = kube_runtime_create(&rc, reterr);
	if (rt && cfg->leader && leader_watch(cfg->leader, wake, rt) != NG_OK) {
		(void)ng_err_set(reterr, NG_ELIMIT, 0, "the leader has no room for a watcher");
		kube_runtime_destroy(rt);
		return NULL;
	}
	return rt;
}

void scaffold_stop(struct kube_runtime *rt, struct leader *leader)
{
	if (!rt)
		return;
	if (leader)
		leader_watch(leader, NULL, rt);
	kube_runtime_destroy(rt);
}

ng_status scaffold_render_leader(struct ng_buf *out, const char *help, const struct leader *leader)
{
	ng_status st = ng_prom_header(out, "nodegate_leader", NG_PROM_GAUGE, help);
	return st ? st
		  : ng_prom_u64(out, "nodegate_leader", NULL, 0,
				leader && leader_is_leader(leader) ? 1 : 0);
}

ng_status scaffold_render_counters(struct ng_buf *out, const char *name, const char *help,
				   const char *label, const char *const *values,
				   _Atomic uint64_t *const *counters, size_t n)
{
	ng_status st = ng_prom_header(out, name, NG_PROM_COUNTER, help);
	for (size_t i = 0; st == NG_OK && i < n; i++) {
		const struct ng_prom_label l[] = {{label, values[i]}};
		st = ng_prom_u64(out, name, l, 1, ng_prom_get(counters[i]));
	}
	return st;
}
