/* libFuzzer target for POST /v1/plan (docs/planner.md): srv_plan()'s body parser (nodes,
 * nodeSelector as a LabelSelector turned into the string grammar, drainSeconds, start, type,
 * requestor) and the planner it feeds (policy/plan.c) over a fixed cluster: six nodes in three
 * zones, a NodeDisruptionBudget of 2, a zone budget (maxDisruptedDomains 1), a frozen one, an
 * ApplicationDisruptionBudget over two pods, a control-plane node and a Granted request.
 *
 * Invariants, each abort()ing when broken:
 * - the answer is NG_OK with 200 or 422 and a body that parses back as a JSON object; or a
 *   refusal (NG_EPARSE or NG_ELIMIT) with a readable message (ng_fuzz_message_ok());
 * - a 422 has a readable message;
 * - a 200 is a plan: summary.nodes = planned + neverGranted + notPlanned; the waves are
 *   numbered 1.., each with at least one node, at offsets that never decrease and are at
 *   most the total time; the waves' nodes count to planned, neverGranted lists as many as
 *   the summary says; totalSeconds >= 0. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/snapshot.h"
#include "policy/plan.h"
#include "server/admission.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 2026-11-27T12:00:00Z */
#define NOW_MS 1795780800000LL

#define NODE(n, zone, extra)                                                                       \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"zone\":\"" zone "\",\"pool\":\"a\"" extra "}},\"status\":{\"conditions\":[{\"type\":"   \
	"\"Ready\",\"status\":\"True\"}]}}"

static const char *const cluster_items[] = {
    NODE("n0", "z0", ""),
    NODE("n1", "z1", ""),
    NODE("n2", "z2", ""),
    NODE("n3", "z0", ""),
    NODE("n4", "z1", ",\"frozen\":\"yes\""),
    NODE("n5", "z2", ""),
    NODE("cp", "z0", ",\"node-role.kubernetes.io/control-plane\":\"\""),
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionBudget\",\"metadata\":"
    "{\"name\":\"two\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"
    "\"maxDisruptedNodes\":2}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionBudget\",\"metadata\":"
    "{\"name\":\"zones\"},\"spec\":{\"nodeSelector\":{},\"topologyKey\":\"zone\","
    "\"maxDisruptedDomains\":1}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionBudget\",\"metadata\":"
    "{\"name\":\"frozen\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"frozen\":\"yes\"}},"
    "\"maxDisruptedNodes\":1,\"freeze\":{\"enabled\":true,\"reason\":\"move\"}}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-0\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"n0\"}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-1\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"n3\"}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"ApplicationDisruptionBudget\","
    "\"metadata\":{\"name\":\"db\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":"
    "{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
    "{\"name\":\"old\"},\"spec\":{\"nodeNames\":[\"n5\"],\"duration\":\"10m\"},\"status\":"
    "{\"state\":\"Granted\",\"disruptedNodes\":[\"n5\"],\"grantedAt\":"
    "\"2026-11-27T11:55:00Z\"}}",
};

static const struct kube_snapshot *cluster(void)
{
	static struct kube_snapshot *s;
	if (s)
		return s;
	s = ng_fuzz_snapshot(cluster_items, sizeof(cluster_items) / sizeof(cluster_items[0]));
	ng_fuzz_check(kube_snapshot_count(s, KUBE_RES_NODES) == 7);
	return s;
}

static int64_t num(const cJSON *o, const char *key)
{
	int64_t v = -1;
	ng_fuzz_check(ng_json_int64(ng_json_get(o, key), &v));
	return v;
}

/* A 200's plan holds together. */
static void check_plan(const cJSON *doc)
{
	const cJSON *sum = ng_json_get(doc, "summary");
	int64_t nodes = num(sum, "nodes"), planned = num(sum, "planned");
	int64_t never = num(sum, "neverGranted"), unplanned = num(sum, "notPlanned");
	int64_t total = num(sum, "totalSeconds");
	ng_fuzz_check(nodes == planned + never + unplanned && total >= 0);
	const cJSON *waves = ng_json_get(doc, "waves"), *w;
	ng_fuzz_check(cJSON_IsArray(waves) && num(sum, "waves") == cJSON_GetArraySize(waves));
	int64_t i = 0, last = 0, in_waves = 0;
	cJSON_ArrayForEach(w, waves)
	{
		ng_fuzz_check(num(w, "wave") == ++i);
		int64_t off = num(w, "offsetSeconds");
		ng_fuzz_check(off >= last && off <= total);
		last = off;
		int n = cJSON_GetArraySize(ng_json_get(w, "nodes"));
		ng_fuzz_check(n >= 1);
		in_waves += n;
	}
	ng_fuzz_check(in_waves == planned);
	const cJSON *nv = ng_json_get(doc, "neverGranted");
	ng_fuzz_check(cJSON_IsArray(nv) && cJSON_GetArraySize(nv) == never);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > NG_MAX_BODY_BYTES)
		return 0;
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	struct ng_buf out;
	ng_buf_init(&out, 32u << 20);
	struct ng_err err = {0};
	int code = 0;
	/* The server's default caps but time: a fuzzer's slowest input is stopped the same way. */
	static const struct srv_plan_caps caps = {.max_rounds = POL_PLAN_DEFAULT_MAX_ROUNDS,
						  .max_decisions = POL_PLAN_DEFAULT_MAX_DECISIONS};
	ng_status st =
	    srv_plan((const char *)data, size, arena, cluster(), NOW_MS, &caps, &out, &code, &err);
	if (st != NG_OK) {
		ng_fuzz_check((st == NG_EPARSE || st == NG_ELIMIT) && err.status == st);
		ng_fuzz_check(ng_fuzz_message_ok(err.msg, data, size));
		goto out;
	}
	ng_fuzz_check(code == 200 || code == 422);
	ng_arena_reset(arena);
	cJSON *answer = NULL;
	st = ng_json_parse(out.data, out.len, arena, &answer, NULL);
	if (st != NG_OK)
		(void)fprintf(stderr, "plan: the answer does not parse:\n%s\n", out.data);
	ng_fuzz_check(st == NG_OK && cJSON_IsObject(answer));
	if (code == 422)
		ng_fuzz_check(ng_json_str(answer, "message") &&
			      ng_fuzz_message_ok(ng_json_str(answer, "message"), data, size));
	else
		check_plan(answer);
out:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	return 0;
}
