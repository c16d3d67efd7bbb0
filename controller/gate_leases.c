/* The gate's medik8s Leases (NodeGateConfig medik8sLeases, docs/integrations/medik8s.md): while
 * a Granted request covers a node, the leader holds the Lease medik8s-leases/node-<node> with
 * holderIdentity "nodegate", as medik8s's own lease manager (medik8s/common pkg/lease) holds
 * it for node-maintenance-operator or node-healthcheck-operator: created when absent, taken over
 * when another holder's has expired, renewed long before it expires, deleted when the node is
 * given back. What to do with each Lease is policy/medik8s.h's; every write here is conditional
 * on the resourceVersion it was decided on (a create on the name being free), and a 409 waits
 * for the cache to show the newer Lease. Nothing is remembered across rounds but when to look
 * again: a new leader finds nodegate's Leases in the cache, by their holder. */
#include "controller/gate_internal.h"

#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"
#include "policy/medik8s.h"

#include <string.h>

/* A write that failed (no answer, 5xx, a namespace missing) is tried again this much later. */
#define LEASE_AGAIN_MS 5000
/* "node-" and a node name (at most 253 bytes). */
#define LEASE_NAME_MAX 272

/* A MicroTime as the API server reads it: "2026-11-29T02:31:01.123000Z" (six digits). */
static void micro_time(int64_t wall_ms, char out[32])
{
	size_t n = ng_format_rfc3339_ms(wall_ms, out);
	memcpy(out + n - 1, "000Z", 5);
}

struct lease_body {
	const char *name, *node;
	const struct kube_node *n; /* the Node (its uid owns the Lease), or NULL */
	const char *now;
};

/* The Lease medik8s's manager creates: owned by the Node, so it goes with it. */
static void lease_body(struct ng_jw *w, void *ctx)
{
	const struct lease_body *b = ctx;
	ng_jw_kstr(w, "apiVersion", "coordination.k8s.io/v1");
	ng_jw_kstr(w, "kind", "Lease");
	ng_jw_key(w, "metadata");
	ng_jw_obj(w);
	ng_jw_kstr(w, "name", b->name);
	ng_jw_kstr(w, "namespace", KUBE_MEDIK8S_NAMESPACE);
	if (b->n && b->n->uid && *b->n->uid) {
		ng_jw_key(w, "ownerReferences");
		ng_jw_arr(w);
		ng_jw_obj(w);
		ng_jw_kstr(w, "apiVersion", "v1");
		ng_jw_kstr(w, "kind", "Node");
		ng_jw_kstr(w, "name", b->node);
		ng_jw_kstr(w, "uid", b->n->uid);
		ng_jw_obj_end(w);
		ng_jw_arr_end(w);
	}
	ng_jw_obj_end(w);
	ng_jw_key(w, "spec");
	ng_jw_obj(w);
	ng_jw_kstr(w, "holderIdentity", POL_MEDIK8S_HOLDER);
	ng_jw_ki64(w, "leaseDurationSeconds", POL_MEDIK8S_LEASE_S);
	ng_jw_kstr(w, "acquireTime", b->now);
	ng_jw_kstr(w, "renewTime", b->now);
	ng_jw_ki64(w, "leaseTransitions", 0);
	ng_jw_obj_end(w);
}

/* One write of @a on node @node's Lease @l (NULL when absent). False when it failed in a way
 * worth trying again later (a 409 is not: the cache brings the newer Lease and a new round). */
static bool lease_write(struct gate *g, const struct kube_snapshot *s, enum pol_lease_action a,
			const char *node, const struct kube_lease *l, int64_t now_wall_ms)
{
	char name[LEASE_NAME_MAX], now[32];
	ng_fmt(name, sizeof(name), KUBE_MEDIK8S_LEASE_PREFIX "%s", node);
	micro_time(now_wall_ms, now);
	struct kube_ref ref = {KUBE_KIND_LEASE, KUBE_MEDIK8S_NAMESPACE, name};
	struct kube_write_result r = {0};
	if (a == POL_LEASE_CREATE) {
		const struct kube_ref coll = {KUBE_KIND_LEASE, KUBE_MEDIK8S_NAMESPACE, NULL};
		struct lease_body b = {name, node, NULL, now};
		uint32_t id = ng_intern_find(kube_snapshot_pool(s), node, strlen(node));
		b.n = kube_snapshot_find_node(s, id);
		kube_create(g->client, &coll, lease_body, &b, &r);
	} else if (a == POL_LEASE_RELEASE) {
		/* As medik8s's InvalidateLease: the Lease goes, unless it changed since read. */
		kube_delete_rv(g->client, &ref, l->rv, &r);
		if (r.outcome == KUBE_WRITE_GONE)
			r.outcome = KUBE_WRITE_OK;
	} else {
		struct kube_json_patch *p = kube_json_patch_create(l->rv);
		if (!p)
			return false;
		kube_json_patch_string(p, "/spec/holderIdentity", POL_MEDIK8S_HOLDER);
		kube_json_patch_i64(p, "/spec/leaseDurationSeconds", POL_MEDIK8S_LEASE_S);
		kube_json_patch_string(p, "/spec/renewTime", now);
		if (a == POL_LEASE_TAKE_OVER) {
			kube_json_patch_string(p, "/spec/acquireTime", now);
			kube_json_patch_i64(p, "/spec/leaseTransitions", l->transitions + 1);
		}
		kube_apply_json_patch(g->client, &ref, p, &r);
		kube_json_patch_destroy(p);
	}
	struct ng_logline ll;
	if (r.outcome == KUBE_WRITE_OK &&
	    ng_log_begin(&ll, a == POL_LEASE_RENEW ? NG_LOG_DEBUG : NG_LOG_INFO, "gate",
			 "medik8s lease written")) {
		ng_log_str(&ll, "lease", name);
		ng_log_str(&ll, "action", pol_lease_action_str(a));
		ng_log_end(&ll);
	}
	if (r.outcome == KUBE_WRITE_OK || r.outcome == KUBE_WRITE_CONFLICT)
		return true;
	kube_write_log("gate", "medik8s lease not written", &ref, &r);
	return false;
}

/* Folds @at (0: nothing) into the next time the Leases are looked at. */
static void due_at(struct gate *g, int64_t at)
{
	if (at && (!g->leases_next_wall_ms || at < g->leases_next_wall_ms))
		g->leases_next_wall_ms = at;
}

/* Node @node's Lease: what policy/medik8s.h says to do, done. */
static void tend_one(struct gate *g, const struct kube_snapshot *s, const char *node, bool hold,
		     int64_t now_wall_ms)
{
	const struct kube_lease *l = pol_medik8s_lease_of(s, node);
	int64_t next = 0;
	enum pol_lease_action a = pol_medik8s_lease_action(s, l, hold, now_wall_ms, &next);
	due_at(g, next);
	if (a == POL_LEASE_NONE || a == POL_LEASE_WAIT)
		return;
	if (!lease_write(g, s, a, node, l, now_wall_ms))
		due_at(g, now_wall_ms + LEASE_AGAIN_MS);
}

void gate_tend_leases(struct gate *g, const struct kube_snapshot *s, int64_t now_wall_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	bool on = ngc && !ngc->invalid && ngc->medik8s_leases;
	g->leases_next_wall_ms = 0;
	/* nodegate's Leases first: renewed while their node is held, deleted once it is not
	 * (or once medik8sLeases is turned off). */
	size_t nl;
	const struct kube_lease *ls = kube_snapshot_leases(s, &nl);
	const size_t plen = sizeof(KUBE_MEDIK8S_LEASE_PREFIX) - 1;
	for (size_t i = 0; i < nl && !atomic_load(g->stop); i++) {
		const char *name = ng_intern_str(pool, ls[i].name, NULL);
		if (!pol_medik8s_lease_ours(s, &ls[i]) || !name ||
		    strncmp(name, KUBE_MEDIK8S_LEASE_PREFIX, plen) != 0 || !name[plen])
			continue;
		uint32_t node = ng_intern_find(pool, name + plen, strlen(name + plen));
		bool hold = on && node != NG_INTERN_NONE && kube_snapshot_node_grant(s, node);
		tend_one(g, s, name + plen, hold, now_wall_ms);
	}
	if (!on)
		return;
	/* Then the held nodes whose Lease is not nodegate's yet: created, or taken over. */
	size_t nnd;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nnd);
	for (size_t i = 0; i < nnd && !atomic_load(g->stop); i++) {
		if (nds[i].state != KUBE_ND_GRANTED || nds[i].deleting)
			continue;
		for (uint16_t k = 0; k < nds[i].ndisrupted; k++) {
			const char *node = ng_intern_str(pool, nds[i].disrupted[k], NULL);
			const struct kube_lease *l = node ? pol_medik8s_lease_of(s, node) : NULL;
			/* Another request holding the node first tends it. */
			if (!node || !*node || pol_medik8s_lease_ours(s, l) ||
			    kube_snapshot_node_grant(s, nds[i].disrupted[k]) != &nds[i])
				continue;
			tend_one(g, s, node, true, now_wall_ms);
		}
	}
}
