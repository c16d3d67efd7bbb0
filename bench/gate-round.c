/* One gate round without I/O at scale: ranking N pending NodeDisruptions (pol_rank_pending) and
 * deciding each (pol_evaluate_disruption with the ledger) over a generated cluster of NODES
 * nodes (3 of them control-plane, racks of 20) with an NDB per rack. Half the requests name
 * their nodes, half select a rack; one requestor in ten. The reference, timed in the same run,
 * is qsort of N records by the same keys already computed: what ranking costs at the least.
 * Usage: bench-gate-round [NODES] [PENDING] [ROUNDS] */
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/parse.h"
#include "policy/disruption.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* When the requests are decided: wall clock, ms since the epoch (2026-11-18). */
#define NOW_WALL_MS INT64_C(1795000000000)

static int64_t arg(int argc, char **argv, int i, int64_t def, int64_t max)
{
	int64_t v = def;
	if (argc > i && ng_parse_i64(argv[i], strlen(argv[i]), 1, max, &v) != NG_OK) {
		(void)fprintf(stderr, "bad argument %s\n", argv[i]);
		exit(2);
	}
	return v;
}

static struct kube_snapshot *generate(int64_t nodes, int64_t pending)
{
	struct ng_buf b;
	ng_buf_init(&b, (size_t)1 << 30);
	ng_status st = ng_buf_puts(&b, "{\"kind\":\"List\",\"items\":[");
	for (int64_t i = 0; st == NG_OK && i < nodes; i++)
		st = ng_buf_printf(
		    &b,
		    "%s{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n%lld\","
		    "\"labels\":{\"rack\":\"r%lld\"%s}},\"status\":{\"conditions\":[{\"type\":"
		    "\"Ready\",\"status\":\"True\"}]}}",
		    i ? "," : "", (long long)i, (long long)(i / 20),
		    i < 3 ? ",\"node-role.kubernetes.io/control-plane\":\"\"" : "");
	for (int64_t r = 0; st == NG_OK && r < (nodes + 19) / 20; r++)
		st = ng_buf_printf(
		    &b,
		    ",{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
		    "v1alpha1\",\"metadata\":{\"name\":\"rack%lld\"},\"spec\":{"
		    "\"nodeSelector\":{\"matchLabels\":{\"rack\":\"r%lld\"}},"
		    "\"maxDisruptedNodes\":2}}",
		    (long long)r, (long long)r);
	for (int64_t i = 0; st == NG_OK && i < pending; i++) {
		long long rack = (long long)(3 + i % ((nodes - 3) / 20 ? (nodes - 3) / 20 : 1));
		char spec[200];
		if (i % 2)
			(void)snprintf(spec, sizeof(spec),
				       "\"nodeSelector\":{\"matchLabels\":{\"rack\":\"r%lld\"}}",
				       rack);
		else
			(void)snprintf(spec, sizeof(spec), "\"nodeNames\":[\"n%lld\"]",
				       (long long)(3 + (i * 7) % (nodes - 3)));
		st = ng_buf_printf(&b,
				   ",{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"
				   "v1alpha1\",\"metadata\":{\"name\":\"nd%lld\","
				   "\"creationTimestamp\":\"2026-11-22T08:%02lld:%02lldZ\"},"
				   "\"spec\":{%s,\"requestor\":\"team%lld\",\"priority\":%lld}}",
				   (long long)i, (long long)(i / 60 % 60), (long long)(i % 60),
				   spec, (long long)(i % 10), (long long)(i % 3));
	}
	st = st ? st : ng_buf_puts(&b, "]}");
	struct kube_builder *k = kube_builder_create();
	struct kube_snapshot *s = NULL;
	struct ng_err err = {0};
	if (st != NG_OK || !k || kube_builder_add_json(k, b.data, b.len, &err) != NG_OK ||
	    kube_builder_finish(k, &s) != NG_OK) {
		(void)fprintf(stderr, "cannot build the cluster: %s\n", err.msg);
		exit(1);
	}
	ng_buf_finish(&b);
	return s;
}

static int cmp_key(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

int main(int argc, char **argv)
{
	int64_t nodes = arg(argc, argv, 1, 5000, 1000000);
	int64_t pending = arg(argc, argv, 2, 1000, 1000000);
	int64_t rounds = arg(argc, argv, 3, 5, 1000);
	if (nodes < 23) {
		(void)fprintf(stderr, "NODES must be at least 23\n");
		return 2;
	}
	struct kube_snapshot *s = generate(nodes, pending);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	const struct kube_nd **q = malloc(n * sizeof(*q));
	int64_t(*keys)[2] = malloc(n * sizeof(*keys));
	struct ng_arena *arena = ng_arena_create((size_t)1 << 30);
	if (!q || !keys || !arena)
		return 1;
	int64_t best_rank_us = INT64_MAX, best_decide_us = INT64_MAX, best_ref_us = INT64_MAX;
	size_t granted = 0;
	for (int64_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < n; i++) {
			q[i] = &nds[i];
			keys[i][0] = -nds[i].priority;
			keys[i][1] = nds[i].created_ms;
		}
		int64_t t0_mono_us = ng_now_mono_us();
		qsort(keys, n, sizeof(*keys), cmp_key);
		int64_t t1_mono_us = ng_now_mono_us();
		struct pol_gate_config cfg;
		pol_gate_config_from(s, &cfg);
		ng_arena_reset(arena);
		if (pol_rank_pending(s, &cfg, q, n, arena) != NG_OK)
			return 1;
		int64_t t2_mono_us = ng_now_mono_us();
		struct pol_ledger *l = pol_ledger_create(s);
		granted = 0;
		for (size_t i = 0; i < n; i++) {
			struct pol_gate_decision d;
			ng_arena_reset(arena);
			if (pol_evaluate_disruption(s, &cfg, l, q[i], NOW_WALL_MS, arena, &d) !=
			    NG_OK)
				return 1;
			if (d.outcome == POL_GATE_GRANT) {
				granted++;
				if (pol_ledger_grant(l, q[i]->name, d.nodes, d.nnodes) != NG_OK)
					return 1;
			}
		}
		int64_t t3_mono_us = ng_now_mono_us();
		pol_ledger_destroy(l);
		best_ref_us =
		    t1_mono_us - t0_mono_us < best_ref_us ? t1_mono_us - t0_mono_us : best_ref_us;
		best_rank_us =
		    t2_mono_us - t1_mono_us < best_rank_us ? t2_mono_us - t1_mono_us : best_rank_us;
		best_decide_us = t3_mono_us - t2_mono_us < best_decide_us ? t3_mono_us - t2_mono_us
									  : best_decide_us;
	}
	(void)printf("nodes %lld, pending %zu, best of %lld rounds\n", (long long)nodes, n,
		     (long long)rounds);
	(void)printf("rank:   %.3f ms (reference qsort of the keys: %.3f ms, ratio %.1f)\n",
		     (double)best_rank_us / 1e3, (double)best_ref_us / 1e3,
		     best_ref_us ? (double)best_rank_us / (double)best_ref_us : 0.0);
	(void)printf("decide: %.3f ms for all %zu (%.1f us each), %zu granted\n",
		     (double)best_decide_us / 1e3, n, (double)best_decide_us / (double)n, granted);
	ng_arena_destroy(arena);
	free(keys);
	free(q);
	kube_snapshot_release(s);
	return 0;
}
