/* Coordination with medik8s through its node Leases (policy/medik8s.h). */
#include "policy/medik8s.h"

#include "common/clock.h"
#include "common/buf.h"
#include "common/intern.h"

#include <string.h>

/* "node-" and a node name (a DNS subdomain: at most 253 bytes). */
#define LEASE_NAME_MAX 272

const struct kube_lease *pol_medik8s_lease_of(const struct kube_snapshot *s, const char *node)
{
	char name[LEASE_NAME_MAX];
	size_t n = strlen(node);
	if (!n || n + sizeof(KUBE_MEDIK8S_LEASE_PREFIX) > sizeof(name))
		return NULL;
	memcpy(name, KUBE_MEDIK8S_LEASE_PREFIX, sizeof(KUBE_MEDIK8S_LEASE_PREFIX) - 1);
	memcpy(name + sizeof(KUBE_MEDIK8S_LEASE_PREFIX) - 1, node, n);
	return kube_snapshot_find_lease_str(s, KUBE_MEDIK8S_NAMESPACE, name,
					    sizeof(KUBE_MEDIK8S_LEASE_PREFIX) - 1 + n);
}

bool pol_medik8s_lease_held(const struct kube_lease *l, int64_t now_wall_ms, int64_t *ret_until_ms)
{
	if (!l || l->holder == NG_INTERN_NONE || l->renew_ms <= 0 || l->duration_s < 0)
		return false;
	int64_t until = l->renew_ms + l->duration_s * 1000;
	if (until <= now_wall_ms)
		return false;
	if (ret_until_ms)
		*ret_until_ms = until;
	return true;
}

bool pol_medik8s_lease_ours(const struct kube_snapshot *s, const struct kube_lease *l)
{
	const char *h = l ? ng_intern_str(kube_snapshot_pool(s), l->holder, NULL) : NULL;
	return h && strcmp(h, POL_MEDIK8S_HOLDER) == 0;
}

bool pol_medik8s_node_blocked(const struct kube_snapshot *s, bool enabled, uint32_t node,
			      int64_t now_wall_ms, char *why, size_t cap, int64_t *ret_until_ms)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	const char *name = enabled ? ng_intern_str(pool, node, NULL) : NULL;
	const struct kube_lease *l = name ? pol_medik8s_lease_of(s, name) : NULL;
	int64_t until;
	if (!l || !pol_medik8s_lease_held(l, now_wall_ms, &until) || pol_medik8s_lease_ours(s, l))
		return false;
	char at[32];
	ng_format_rfc3339_ms(until, at);
	ng_fmt(why, cap,
	       "node %s is held by %s: Lease " KUBE_MEDIK8S_NAMESPACE "/" KUBE_MEDIK8S_LEASE_PREFIX
	       "%s until %s (medik8s)",
	       name, ng_intern_str(pool, l->holder, NULL), name, at);
	*ret_until_ms = until;
	return true;
}

const char *pol_lease_action_str(enum pol_lease_action a)
{
	static const char *const names[] = {"none",      "create", "renew",
					    "take-over", "wait",   "release"};
	return a <= POL_LEASE_RELEASE ? names[a] : "?";
}

enum pol_lease_action pol_medik8s_lease_action(const struct kube_snapshot *s,
					       const struct kube_lease *l, bool hold,
					       int64_t now_wall_ms, int64_t *ret_next_ms)
{
	*ret_next_ms = 0;
	bool ours = pol_medik8s_lease_ours(s, l);
	if (!hold)
		return ours ? POL_LEASE_RELEASE : POL_LEASE_NONE;
	if (!l)
		return POL_LEASE_CREATE;
	int64_t until = 0;
	bool held = pol_medik8s_lease_held(l, now_wall_ms, &until);
	if (!ours && !held)
		return POL_LEASE_TAKE_OVER;
	if (!ours) {
		*ret_next_ms = until;
		return POL_LEASE_WAIT;
	}
	int64_t renew_at = held ? until - (int64_t)POL_MEDIK8S_RENEW_LEFT_S * 1000 : now_wall_ms;
	if (now_wall_ms >= renew_at)
		return POL_LEASE_RENEW;
	*ret_next_ms = renew_at;
	return POL_LEASE_NONE;
}
