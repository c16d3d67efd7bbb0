/* What the unit tests of the gate's decision (test-policy-disruption.c, -rank.c, -ledger.c) share:
 * fixture F (node1, node2 (testselect=test1), node3 (test2), local PVs pinned to each, pod1
 * (app=db) on node1) and deciding one request against it. Included by each of those files. */
#ifndef NG_TESTS_UNIT_POLICY_GATE_FIXTURE_H
#define NG_TESTS_UNIT_POLICY_GATE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/intern.h"
#include "common/buf.h"
#include "policy/disruption.h"
#include "policy/hook.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* Fixture F (without its ADB) plus @extra objects. */
static inline struct kube_snapshot *cluster(const char *extra)
{
	size_t n = strlen(extra) + 256;
	char *json = malloc(n);
	(void)snprintf(json, n, "%s%s%s", POD("pod1", "node1", "db"), *extra ? "," : "", extra);
	struct kube_snapshot *s = ng_test_cluster_f(json);
	free(json);
	return s;
}

struct result {
	struct pol_gate_decision d;
	struct ng_arena *arena;
	struct kube_snapshot *s;
};

/* Decides the NodeDisruption named @nd in @s (defaults unless @cfg). */
static inline struct result decide(struct kube_snapshot *s, const char *nd,
				   const struct pol_gate_config *cfg, int64_t now_wall_ms)
{
	struct result r = {.s = s, .arena = ng_arena_create(1u << 20)};
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd *req = NULL;
	for (size_t i = 0; i < n; i++)
		if (nds[i].name == ng_test_id(s, nd))
			req = &nds[i];
	assert_non_null(req);
	struct pol_gate_config def;
	pol_gate_config_from(s, &def);
	struct pol_ledger *l = pol_ledger_create(s);
	assert_int_equal(
	    pol_evaluate_disruption(s, cfg ? cfg : &def, l, req, now_wall_ms, r.arena, &r.d),
	    NG_OK);
	pol_ledger_destroy(l);
	return r;
}

/* The NodeDisruption named @name in @s; fails the test when there is none. */
static inline const struct kube_nd *find_nd(const struct kube_snapshot *s, const char *name)
{
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	for (size_t i = 0; i < n; i++)
		if (nds[i].name == ng_test_id(s, name))
			return &nds[i];
	fail_msg("no request %s", name);
	return NULL;
}

static inline void done(struct result *r)
{
	ng_arena_destroy(r->arena);
	kube_snapshot_release(r->s);
}

static const int64_t NOW_WALL_MS = 1795000000000; /* 2026-11-18 */

static inline void expect(struct result *r, enum pol_gate_outcome o, const char *reason_part)
{
	if (r->d.outcome != o || (reason_part && !strstr(r->d.reason, reason_part)))
		fail_msg("got %s \"%s\", expected %s containing \"%s\"",
			 pol_gate_outcome_str(r->d.outcome), r->d.reason, pol_gate_outcome_str(o),
			 reason_part ? reason_part : "");
}

#endif
