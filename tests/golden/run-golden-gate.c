/* Golden gate cases: tests/golden/gate/<case>.json holds a cluster (Kubernetes JSON: nodes, pods,
 * PVCs, PVs, budgets, NodeGateConfig, existing NodeDisruptions), the NodeDisruption to decide, a
 * fixed wall-clock `now`, and the expected decision. The runner decides it as one gate round
 * would, in-process and without health hooks: the snapshot's Granted requests (not being
 * deleted) in the ledger, every undecided or Pending request ranked, and the requests ranked
 * before the case's decided first, each grant recorded before the next decision.
 *
 * Case keys: description, cluster, nodeDisruption, now (RFC 3339), expect: {state ("Granted",
 * "Pending", "Rejected"), disruptedNodes (exact, sorted), reasonContains (substrings of the
 * reason), failedBudgets (optional: exactly the failing budgets, as "NodeDisruptionBudget NAME"
 * or "ApplicationDisruptionBudget NS/NAME"), unsatisfiable (optional: whether some budget can
 * never allow the request)}. Usage: run-golden-gate CASE.json */
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/json.h"
#include "policy/disruption.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memory for one case's decisions: a handful of nodes and budgets need a few KiB. */
#define CASE_ARENA_BYTES (16u << 20)

static int failures;

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		failures++;
		(void)fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "",
			      detail ? detail : "");
	}
}

/* The cluster's objects and the request in one snapshot, as the cache would hold them. */
static struct kube_snapshot *load(const cJSON *cluster, const cJSON *nd, const char *file)
{
	char *cluster_json = cJSON_PrintUnformatted(cluster);
	char *nd_json = cJSON_PrintUnformatted(nd);
	struct kube_builder *b = kube_builder_create();
	struct kube_snapshot *s = NULL;
	struct ng_err err = {0};
	if (!cluster_json || !nd_json || !b ||
	    kube_builder_add_json(b, cluster_json, strlen(cluster_json), &err) != NG_OK ||
	    kube_builder_add_json(b, nd_json, strlen(nd_json), &err) != NG_OK) {
		(void)fprintf(stderr, "%s: cluster: %s\n", file, err.msg);
		kube_builder_destroy(b);
	} else if (kube_builder_finish(b, &s) != NG_OK) {
		(void)fprintf(stderr, "%s: out of memory\n", file);
		s = NULL;
	}
	cJSON_free(cluster_json);
	cJSON_free(nd_json);
	return s;
}

/* Decides the gate's queue in rank order up to the request named @name; its decision goes
 * into @ret. NG_ENOTFOUND when the gate would not decide it (decided, or being deleted). */
static ng_status decide_round(const struct kube_snapshot *s, uint32_t name, int64_t now_wall_ms,
			      struct ng_arena *arena, struct pol_gate_decision *ret)
{
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	size_t n, nq = 0;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd **q = ng_arena_alloc(arena, (n ? n : 1) * sizeof(*q));
	struct pol_ledger *ledger = pol_ledger_create(s);
	ng_status st = q && ledger ? NG_OK : NG_ENOMEM;
	for (size_t i = 0; st == NG_OK && i < n; i++)
		if (!nds[i].deleting &&
		    (nds[i].state == KUBE_ND_UNKNOWN || nds[i].state == KUBE_ND_PENDING))
			q[nq++] = &nds[i];
	st = st ? st : pol_rank_pending(s, &cfg, q, nq, arena);
	bool found = false;
	for (size_t i = 0; st == NG_OK && !found && i < nq; i++) {
		struct pol_gate_decision d;
		st = pol_evaluate_disruption(s, &cfg, ledger, q[i], now_wall_ms, arena, &d);
		if (st != NG_OK)
			break;
		found = q[i]->name == name;
		if (found)
			*ret = d;
		else if (d.outcome == POL_GATE_GRANT)
			st = pol_ledger_grant(ledger, q[i]->name, d.nodes, d.nnodes);
	}
	pol_ledger_destroy(ledger);
	return st ? st : found ? NG_OK : NG_ENOTFOUND;
}

static void check_nodes(const struct kube_snapshot *s, const struct pol_gate_decision *d,
			const cJSON *want, struct ng_arena *arena)
{
	const char **names = pol_node_names_sorted(s, d, arena);
	size_t i = 0;
	bool ok = names && cJSON_IsArray(want);
	for (const cJSON *e = ok ? want->child : NULL; e; e = e->next, i++)
		ok = ok && cJSON_IsString(e) && i < d->nnodes &&
		     strcmp(names[i], e->valuestring) == 0;
	ok = ok && i == d->nnodes;
	char got[512] = "";
	size_t off = 0;
	for (size_t k = 0; names && k < d->nnodes && off < sizeof(got); k++)
		off +=
		    (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", k ? "," : "", names[k]);
	check(ok, "disruptedNodes", got);
}

static void check_failed_budgets(const struct kube_snapshot *s, const struct pol_gate_decision *d,
				 const cJSON *want)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t nfailed = 0, nwant = 0;
	for (size_t i = 0; i < d->nverdicts; i++) {
		const struct pol_budget_verdict *v = &d->verdicts[i];
		if (v->ok)
			continue;
		nfailed++;
		char ref[300];
		if (v->kind == KUBE_RES_NDBS)
			ng_fmt(ref, sizeof(ref), "NodeDisruptionBudget %s",
			       ng_intern_str(pool, v->name, NULL));
		else
			ng_fmt(ref, sizeof(ref), "ApplicationDisruptionBudget %s/%s",
			       ng_intern_str(pool, v->ns, NULL),
			       ng_intern_str(pool, v->name, NULL));
		bool listed = false;
		for (const cJSON *e = want->child; e && !listed; e = e->next)
			listed = cJSON_IsString(e) && strcmp(e->valuestring, ref) == 0;
		check(listed, "a budget failed that the case does not list", ref);
	}
	for (const cJSON *e = want->child; e; e = e->next)
		nwant++;
	check(nfailed == nwant, "failedBudgets: a listed budget did not fail", NULL);
}

static void compare(const struct kube_snapshot *s, const struct pol_gate_decision *d,
		    const cJSON *expect, struct ng_arena *arena)
{
	const char *state = ng_json_str(expect, "state");
	check(state && strcmp(state, pol_gate_outcome_str(d->outcome)) == 0, "state",
	      pol_gate_outcome_str(d->outcome));
	check_nodes(s, d, ng_json_get(expect, "disruptedNodes"), arena);
	const cJSON *reasons = ng_json_get(expect, "reasonContains");
	for (const cJSON *e = cJSON_IsArray(reasons) ? reasons->child : NULL; e; e = e->next)
		check(cJSON_IsString(e) && strstr(d->reason, e->valuestring), "reason", d->reason);
	const cJSON *failed = ng_json_get(expect, "failedBudgets");
	if (cJSON_IsArray(failed))
		check_failed_budgets(s, d, failed);
	const cJSON *never = ng_json_get(expect, "unsatisfiable");
	if (cJSON_IsBool(never))
		check(cJSON_IsTrue(never) == d->unsatisfiable, "unsatisfiable",
		      d->unsatisfiable ? "true" : "false");
	if (failures) {
		struct ng_buf b;
		ng_buf_init(&b, 1u << 20);
		if (pol_verdicts_json(s, d->verdicts, d->nverdicts, NULL, &b) == NG_OK)
			(void)fprintf(stderr, "  reason: %s\n  verdicts: %s\n", d->reason, b.data);
		ng_buf_finish(&b);
	}
}

int main(int argc, char **argv)
{
	cJSON *c = ng_test_case(argc, argv);
	const cJSON *nd = ng_json_get(c, "nodeDisruption");
	const cJSON *expect = ng_json_get(c, "expect");
	const char *now = ng_json_str(c, "now");
	const char *name = ng_json_str(ng_json_get(nd, "metadata"), "name");
	int64_t now_wall_ms;
	if (!ng_json_get(c, "cluster") || !name || !cJSON_IsObject(expect) || !now ||
	    ng_parse_rfc3339_ms(now, strlen(now), &now_wall_ms) != NG_OK) {
		(void)fprintf(stderr, "%s: needs cluster, nodeDisruption (named), now, expect\n",
			      argv[1]);
		return 2;
	}
	struct kube_snapshot *s = load(ng_json_get(c, "cluster"), nd, argv[1]);
	if (!s)
		return 2;
	struct ng_arena *arena = ng_arena_create(CASE_ARENA_BYTES);
	uint32_t id = ng_intern_find(kube_snapshot_pool(s), name, strlen(name));
	struct pol_gate_decision d;
	ng_status st = arena ? decide_round(s, id, now_wall_ms, arena, &d) : NG_ENOMEM;
	check(st == NG_OK, "the gate would not decide the request", ng_status_str(st));
	if (st == NG_OK)
		compare(s, &d, expect, arena);
	ng_arena_destroy(arena);
	kube_snapshot_release(s);
	cJSON_Delete(c);
	if (failures) {
		(void)fprintf(stderr, "%s: %d check(s) failed\n", argv[1], failures);
		return 1;
	}
	(void)printf("%s: ok\n", argv[1]);
	return 0;
}
