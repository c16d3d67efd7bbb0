/* One gate round without I/O at scale: ranking the pending NodeDisruptions (pol_rank_pending)
 * and deciding each (pol_evaluate_disruption with one ledger, each grant recorded before the
 * next decision) over a generated cluster. The reference, timed in the same run, is qsort of
 * the requests by the same keys already computed: what ranking costs at the least.
 *
 * The cluster: NODES nodes (3 of them control-plane) in racks, a NodeDisruptionBudget per rack
 * (maxDisruptedNodes: 20 % of a rack), and with pods: PODS_PER_NODE pods on every node, of apps
 * spread over the cluster (two pods of one app never share a node unless the cluster is small),
 * in ten namespaces; ADBS ApplicationDisruptionBudgets each protect one app (maxDisruptions:
 * 20 %), the other half of the apps have none. GRANTED requests already hold a node each,
 * spread over the racks; PENDING requests wait: half name a node, half select a rack; one
 * requestor in ten, three priorities. With the pool-wide budget (the default of the flag form),
 * one more NodeDisruptionBudget selects every node (maxDisruptedNodes: 15 %), so every decision
 * has a budget over the whole cluster.
 *
 * With --paced every budget sets soakSeconds 900 and minIntervalSeconds 600 (pacing costs only the
 * budgets that set it; this is the most it costs, though the intervals also grant fewer); with
 * --soaked soakSeconds 900 only, which grants the same (no node of the cluster soaks).
 *
 * With --hostile-adbs H (security finding 6: budgets any namespace may create must not slow the
 * gate for everyone), one more namespace, "hostile", runs a pod on every node and holds H
 * ApplicationDisruptionBudgets selecting all of its pods (so every request touches each of them)
 * with maxDisruptions 100 % (so none denies) and --hostile-windows W maintenance windows each,
 * always open: firings never further apart than the duration (every minute, every two minutes,
 * hourly, daily...), durations up to 744 h, in UTC and in two zones with daylight saving time.
 * --hostile-nodes N puts its pods on the first N nodes only (node 0 is a control-plane node no
 * pending request names): the budgets are then unrelated to the requests.
 *
 * Usage:
 *   bench-gate-round [--nodes N] [--pods-per-node N] [--adbs N] [--ndbs N] [--granted N]
 *                    [--pending N] [--rounds N] [--pool-wide | --no-pool-wide]
 *                    [--hostile-adbs N] [--hostile-windows N] [--hostile-nodes N] [--paced]
 *                    [--soaked] [--scope-cache] [--json]
 *     defaults: 5000 nodes, 30 pods per node, 2000 ADBs, 250 NDBs, 500 granted, 1000 pending,
 *     3 rounds, pool-wide on, no hostile budgets (16 windows each when asked). --json: the last
 * line of stdout is
 *     {"decide_us_per_request":X,"rank_ms":Y,"qsort_ms":Z,"granted":N,"decisions":M,
 *     "first_decision_us":F,"status_pass_ms":S}, the medians over the rounds; "granted"
 *     counts the grants the round made, F is the round's first decision (it computes the
 *     ledger's budget scopes and windows) and S the budget status pass after the round
 *     (pol_budget_status of every budget on the round's ledger).
 *   bench-gate-round [NODES] [PENDING] [ROUNDS]
 *     the first form of this benchmark: no pods, no ADBs, nothing granted, no pool-wide budget,
 *     racks of 20, 5 rounds by default. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/map.h"
#include "common/parse.h"
#include "policy/disruption.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* When the requests are decided: wall clock, ms since the epoch (2026-11-18). */
#define NOW_WALL_MS INT64_C(1795000000000)

/* Namespaces the pods and ADBs are spread over: a handful, as teams are. */
#define NAMESPACES 10

struct scenario {
	int64_t nodes, pods_per_node, adbs, ndbs, granted, pending, rounds;
	int64_t hostile_adbs, hostile_windows;
	int64_t hostile_nodes; /* its pods run on the first this many nodes; -1: every node */
	bool pool_wide, json;
	bool paced;  /* --paced: every budget sets soakSeconds 900 and minIntervalSeconds 600 */
	bool soaked; /* --soaked: every budget sets soakSeconds 900 only (the same grants) */
	/* --scope-cache: the rounds share a pol_scope_cache, as the gate's do, so a round's first
	 * decision costs what the gate's does when the node and budget tables did not change */
	bool scope_cache;
	bool first_form; /* positional: the cluster of the first measurements */
};

static int64_t num(const char *s, int64_t min, int64_t max)
{
	int64_t v;
	if (ng_parse_i64(s, strlen(s), min, max, &v) != NG_OK) {
		(void)fprintf(stderr, "bad number %s (%lld..%lld)\n", s, (long long)min,
			      (long long)max);
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): this benchmark has one thread */
		exit(2);
	}
	return v;
}

static void usage(void)
{
	(void)fprintf(
	    stderr, "usage: bench-gate-round [--nodes N] [--pods-per-node N] [--adbs N] "
		    "[--ndbs N] [--granted N] [--pending N] [--rounds N] [--pool-wide | "
		    "--no-pool-wide] [--hostile-adbs N] [--hostile-windows N] [--hostile-nodes N] "
		    "[--paced] [--soaked] [--scope-cache] [--json]\n"
		    "       bench-gate-round [NODES] [PENDING] [ROUNDS]\n");
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): this benchmark has one thread */
	exit(2);
}

static void parse_args(int argc, char **argv, struct scenario *sc)
{
	if (argc > 1 && argv[1][0] != '-') {
		/* The first form: positional, the cluster of the first measurements. */
		*sc = (struct scenario){
		    .nodes = 5000, .pending = 1000, .rounds = 5, .first_form = true};
		if (argc > 4)
			usage();
		sc->nodes = argc > 1 ? num(argv[1], 1, 1000000) : sc->nodes;
		sc->pending = argc > 2 ? num(argv[2], 1, 1000000) : sc->pending;
		sc->rounds = argc > 3 ? num(argv[3], 1, 1000) : sc->rounds;
		sc->ndbs = (sc->nodes + 19) / 20;
		return;
	}
	*sc = (struct scenario){.nodes = 5000,
				.pods_per_node = 30,
				.adbs = 2000,
				.ndbs = 250,
				.granted = 500,
				.pending = 1000,
				.rounds = 3,
				.hostile_windows = 16,
				.hostile_nodes = -1,
				.pool_wide = true};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int64_t *v = !strcmp(a, "--nodes")             ? &sc->nodes
			     : !strcmp(a, "--pods-per-node")   ? &sc->pods_per_node
			     : !strcmp(a, "--adbs")            ? &sc->adbs
			     : !strcmp(a, "--ndbs")            ? &sc->ndbs
			     : !strcmp(a, "--granted")         ? &sc->granted
			     : !strcmp(a, "--pending")         ? &sc->pending
			     : !strcmp(a, "--rounds")          ? &sc->rounds
			     : !strcmp(a, "--hostile-adbs")    ? &sc->hostile_adbs
			     : !strcmp(a, "--hostile-windows") ? &sc->hostile_windows
			     : !strcmp(a, "--hostile-nodes")   ? &sc->hostile_nodes
							       : NULL;
		if (v) {
			if (i + 1 == argc)
				usage();
			*v = num(argv[++i], 0, 1000000);
		} else if (!strcmp(a, "--pool-wide")) {
			sc->pool_wide = true;
		} else if (!strcmp(a, "--no-pool-wide")) {
			sc->pool_wide = false;
		} else if (!strcmp(a, "--json")) {
			sc->json = true;
		} else if (!strcmp(a, "--paced")) {
			sc->paced = true;
		} else if (!strcmp(a, "--soaked")) {
			sc->soaked = true;
		} else if (!strcmp(a, "--scope-cache")) {
			sc->scope_cache = true;
		} else {
			usage();
		}
	}
	if (sc->rounds < 1 || sc->pending < 1 || sc->ndbs < 1)
		usage();
}

/* The rack of worker node @i (nodes 0-2 are control-plane, in rack 0 with the first workers). */
static long long rack_of(const struct scenario *sc, int64_t i)
{
	int64_t size = (sc->nodes + sc->ndbs - 1) / sc->ndbs;
	return (long long)(i / (size ? size : 1));
}

/* The app of pod @k on node @i: consecutive pods of a node belong to different apps, and one
 * app's pods land on nodes far apart. Half of the apps have an ADB. */
static int64_t app_of(const struct scenario *sc, int64_t i, int64_t k)
{
	int64_t napps = sc->adbs ? 2 * sc->adbs : 1;
	return (i * sc->pods_per_node + k) % napps;
}

/* The hostile budgets' windows, each always open: its schedule never leaves a gap longer than
 * its duration, daylight saving changes included (a zone's fall-back hour adds its length to a
 * gap). Durations from 5 minutes to 744 hours. */
static const struct hostile_window {
	const char *schedule, *zone;
	int64_t minutes;
} hostile_kinds[] = {
    {"* * * * *", "UTC", 744 * 60},
    {"* * * * *", "Europe/Paris", 744 * 60},
    {"*/2 * * * *", "America/New_York", 600 * 60},
    {"@hourly", "Europe/Paris", 744 * 60},
    {"0 * * * *", "UTC", 60},
    {"*/5 * * * *", "UTC", 5},
    {"0 0 * * *", "America/New_York", 744 * 60},
    {"*/15 * * * *", "Europe/Paris", 700 * 60},
    {"* * * * *", "America/New_York", 500 * 60},
    {"30 * * * *", "UTC", 61},
    {"0 */2 * * *", "Europe/Paris", 400 * 60},
    {"@daily", "UTC", 24 * 60},
    {"*/10 * * * *", "America/New_York", 300 * 60},
    {"0 0 * * *", "Europe/Paris", 744 * 60},
    {"*/3 * * * *", "UTC", 3},
    {"0,30 * * * *", "Europe/Paris", 744 * 60},
};

static struct kube_snapshot *generate(const struct scenario *sc)
{
	struct ng_buf b;
	ng_buf_init(&b, (size_t)1 << 31);
	int64_t workers = sc->nodes - 3;
	ng_status st = ng_buf_puts(&b, "{\"kind\":\"List\",\"items\":[");
	for (int64_t i = 0; st == NG_OK && i < sc->nodes; i++)
		st = ng_buf_printf(
		    &b,
		    "%s{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n%lld\","
		    "\"labels\":{\"rack\":\"r%lld\"%s}},\"status\":{\"conditions\":[{\"type\":"
		    "\"Ready\",\"status\":\"True\"}]}}",
		    i ? "," : "", (long long)i, rack_of(sc, i),
		    i < 3 ? ",\"node-role.kubernetes.io/control-plane\":\"\"" : "");
	/* A positional run keeps its first budgets: 2 of each rack of 20. */
	bool first_form = sc->first_form;
	const char *pace = sc->paced    ? ",\"soakSeconds\":900,\"minIntervalSeconds\":600"
			   : sc->soaked ? ",\"soakSeconds\":900"
					: "";
	for (int64_t r = 0; st == NG_OK && r < sc->ndbs; r++)
		st = ng_buf_printf(
		    &b,
		    ",{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
		    "v1alpha1\",\"metadata\":{\"name\":\"rack%lld\"},\"spec\":{"
		    "\"nodeSelector\":{\"matchLabels\":{\"rack\":\"r%lld\"}},"
		    "\"maxDisruptedNodes\":%s%s}}",
		    (long long)r, (long long)r, first_form ? "2" : "\"20%\"", pace);
	if (st == NG_OK && sc->pool_wide)
		st = ng_buf_printf(
		    &b,
		    ",{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":"
		    "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":\"pool\"},"
		    "\"spec\":{\"nodeSelector\":{},\"maxDisruptedNodes\":\"15%%\"%s}}",
		    pace);
	for (int64_t i = 0; st == NG_OK && i < sc->nodes; i++)
		for (int64_t k = 0; st == NG_OK && k < sc->pods_per_node; k++) {
			int64_t app = app_of(sc, i, k);
			st = ng_buf_printf(
			    &b,
			    ",{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
			    "\"p%lld-%lld\",\"namespace\":\"ns%lld\",\"labels\":{\"app\":"
			    "\"a%lld\",\"tier\":\"t%lld\"}},\"spec\":{\"nodeName\":\"n%lld\"},"
			    "\"status\":{\"phase\":\"Running\"}}",
			    (long long)i, (long long)k, (long long)(app % NAMESPACES),
			    (long long)app, (long long)(app % 3), (long long)i);
		}
	for (int64_t a = 0; st == NG_OK && a < sc->adbs; a++)
		st = ng_buf_printf(&b,
				   ",{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":"
				   "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":\"adb%lld\","
				   "\"namespace\":\"ns%lld\"},\"spec\":{\"podSelector\":{"
				   "\"matchLabels\":{\"app\":\"a%lld\"}},\"maxDisruptions\":"
				   "\"20%%\"%s}}",
				   (long long)a, (long long)(a % NAMESPACES), (long long)a, pace);
	/* The hostile namespace: a pod on every node, budgets over all of them with windows. */
	int64_t hostile_nodes =
	    sc->hostile_nodes < 0 || sc->hostile_nodes > sc->nodes ? sc->nodes : sc->hostile_nodes;
	for (int64_t i = 0; st == NG_OK && sc->hostile_adbs && i < hostile_nodes; i++)
		st =
		    ng_buf_printf(&b,
				  ",{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
				  "\"h%lld\",\"namespace\":\"hostile\",\"labels\":{\"app\":"
				  "\"h\"}},\"spec\":{\"nodeName\":\"n%lld\"},\"status\":{"
				  "\"phase\":\"Running\"}}",
				  (long long)i, (long long)i);
	for (int64_t a = 0; st == NG_OK && a < sc->hostile_adbs; a++) {
		st = ng_buf_printf(&b,
				   ",{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":"
				   "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":\"h%lld\","
				   "\"namespace\":\"hostile\"},\"spec\":{\"podSelector\":{},"
				   "\"maxDisruptions\":\"100%%\",\"windows\":[",
				   (long long)a);
		for (int64_t w = 0; st == NG_OK && w < sc->hostile_windows; w++) {
			const struct hostile_window *h =
			    &hostile_kinds[(size_t)w %
					   (sizeof(hostile_kinds) / sizeof(hostile_kinds[0]))];
			/* Each budget's durations differ a little: no two windows are alike. */
			int64_t min = h->minutes + (h->minutes >= 6000 ? -(a % 600) : 0);
			st = ng_buf_printf(&b,
					   "%s{\"schedule\":\"%s\",\"duration\":\"%lldm\","
					   "\"timeZone\":\"%s\"}",
					   w ? "," : "", h->schedule, (long long)min, h->zone);
		}
		st = st ? st : ng_buf_puts(&b, "]}}");
	}
	/* Granted requests hold one worker node each, spread evenly over the cluster. */
	for (int64_t g = 0; st == NG_OK && g < sc->granted && workers > 0; g++) {
		long long node = 3 + g * workers / (sc->granted ? sc->granted : 1);
		st = ng_buf_printf(
		    &b,
		    ",{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"
		    "v1alpha1\",\"metadata\":{\"name\":\"held%lld\","
		    "\"creationTimestamp\":\"2026-11-21T08:00:00Z\"},\"spec\":{"
		    "\"nodeNames\":[\"n%lld\"],\"requestor\":\"team%lld\"},"
		    "\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"n%lld\"]}}",
		    (long long)g, node, (long long)(g % 10), node);
	}
	int64_t racks = rack_of(sc, sc->nodes - 1) + 1;
	for (int64_t i = 0; st == NG_OK && i < sc->pending; i++) {
		/* Racks past the control-plane nodes' own. */
		long long rack = 1 + i % (racks > 1 ? racks - 1 : 1);
		if (first_form)
			rack = 3 + i % ((sc->nodes - 3) / 20 ? (sc->nodes - 3) / 20 : 1);
		char spec[200];
		if (i % 2)
			(void)snprintf(spec, sizeof(spec),
				       "\"nodeSelector\":{\"matchLabels\":{\"rack\":\"r%lld\"}}",
				       rack);
		else
			(void)snprintf(spec, sizeof(spec), "\"nodeNames\":[\"n%lld\"]",
				       3 + (long long)(i * 7) % (workers > 0 ? workers : 1));
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
		/* NOLINTNEXTLINE(concurrency-mt-unsafe): this benchmark has one thread */
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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median, min and max of @n samples (sorted in place). */
struct stats {
	int64_t median, min, max;
};

static struct stats stats_of(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	int64_t median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return (struct stats){median, v[0], v[n - 1]};
}

static uint64_t answer_digest(uint64_t h, const struct pol_gate_decision *d)
{
	uint8_t o = (uint8_t)d->outcome;
	h = ng_fnv1a64(h, &o, 1);
	h = ng_fnv1a64(h, d->reason, strlen(d->reason) + 1);
	for (size_t v = 0; v < d->nverdicts; v++) {
		const struct pol_budget_verdict *x = &d->verdicts[v];
		uint8_t ok = x->ok;
		h = ng_fnv1a64(h, &ok, 1);
		h = ng_fnv1a64(h, &x->index, sizeof(x->index));
		h = ng_fnv1a64(h, &x->allowed, sizeof(x->allowed));
		h = ng_fnv1a64(h, &x->current, sizeof(x->current));
		h = ng_fnv1a64(h, x->reason, strlen(x->reason) + 1);
	}
	return h;
}

int main(int argc, char **argv)
{
	struct scenario sc;
	parse_args(argc, argv, &sc);
	if (sc.nodes < 23) {
		(void)fprintf(stderr, "at least 23 nodes\n");
		return 2;
	}
	struct kube_snapshot *s = generate(&sc);
	size_t nall, n = 0;
	const struct kube_nd *nds = kube_snapshot_nds(s, &nall);
	const struct kube_nd **q = malloc((nall ? nall : 1) * sizeof(*q));
	int64_t(*keys)[2] = malloc((nall ? nall : 1) * sizeof(*keys));
	int64_t *rank_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	int64_t *ref_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	int64_t *decide_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	int64_t *first_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	int64_t *status_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	int64_t *eval_us = calloc((size_t)sc.rounds, sizeof(int64_t));
	struct ng_arena *arena = ng_arena_create((size_t)1 << 30);
	struct pol_scope_cache *cache = sc.scope_cache ? pol_scope_cache_create() : NULL;
	struct pol_ledger *l = NULL;
	int rc = 1;
	if (!q || !keys || !rank_us || !ref_us || !decide_us || !first_us || !status_us ||
	    !eval_us || !arena || (sc.scope_cache && !cache))
		goto out;
	size_t granted = 0;
	/* Every answer of a round (outcome, reason, each verdict): two builds that print the same
	 * digest decided the same. Taken in one more round, not timed. */
	uint64_t digest = NG_FNV64_INIT;
	for (int64_t r = 0; r <= sc.rounds; r++) {
		/* The queue as the gate builds it: undecided and Pending requests. */
		n = 0;
		for (size_t i = 0; i < nall; i++)
			if (!nds[i].deleting &&
			    (nds[i].state == KUBE_ND_UNKNOWN || nds[i].state == KUBE_ND_PENDING)) {
				keys[n][0] = -nds[i].priority;
				keys[n][1] = nds[i].created_ms;
				q[n++] = &nds[i];
			}
		int64_t t0_mono_us = ng_now_mono_us();
		qsort(keys, n, sizeof(*keys), cmp_key);
		int64_t t1_mono_us = ng_now_mono_us();
		struct pol_gate_config cfg;
		pol_gate_config_from(s, &cfg);
		ng_arena_reset(arena);
		if (pol_rank_pending(s, &cfg, q, n, arena) != NG_OK)
			goto out;
		int64_t t2_mono_us = ng_now_mono_us();
		l = pol_ledger_create(s);
		if (!l)
			goto out;
		if (cache)
			pol_ledger_use_cache(l, cache);
		pol_ledger_set_now(l,
				   NOW_WALL_MS); /* grants dated: a paced budget's interval bites */
		granted = 0;
		int64_t first_mono_us = 0, eval0_mono_us = 0;
		for (size_t i = 0; i < n; i++) {
			struct pol_gate_decision d;
			ng_arena_reset(arena);
			if (i == 0)
				eval0_mono_us = ng_now_mono_us();
			if (pol_evaluate_disruption(s, &cfg, l, q[i], NOW_WALL_MS, arena, &d) !=
			    NG_OK)
				goto out;
			if (i == 0)
				first_mono_us = ng_now_mono_us();
			if (r == sc.rounds)
				digest = answer_digest(digest, &d);
			if (d.outcome == POL_GATE_GRANT) {
				granted++;
				if (pol_ledger_grant(l, q[i]->name, d.nodes, d.nnodes) != NG_OK)
					goto out;
			}
		}
		int64_t t3_mono_us = ng_now_mono_us();
		/* The budget status pass that follows a round in the gate (controller/
		 * gate_budgets.c), on the round's ledger: every budget's status. */
		for (int k = 0; k < 2; k++) {
			enum kube_resource kind = k ? KUBE_RES_ADBS : KUBE_RES_NDBS;
			for (size_t i = 0; i < kube_snapshot_count(s, kind); i++) {
				struct pol_budget_status bs;
				ng_arena_reset(arena);
				if (pol_budget_status(s, l, kind, i, NOW_WALL_MS, arena, &bs) !=
				    NG_OK)
					goto out;
			}
		}
		int64_t t4_mono_us = ng_now_mono_us();
		pol_ledger_destroy(l);
		l = NULL;
		if (r == sc.rounds)
			break;
		ref_us[r] = t1_mono_us - t0_mono_us;
		rank_us[r] = t2_mono_us - t1_mono_us;
		decide_us[r] = t3_mono_us - t2_mono_us;
		first_us[r] = first_mono_us - t2_mono_us;
		eval_us[r] = first_mono_us - eval0_mono_us;
		status_us[r] = t4_mono_us - t3_mono_us;
	}
	struct stats ref = stats_of(ref_us, (size_t)sc.rounds);
	struct stats rank = stats_of(rank_us, (size_t)sc.rounds);
	struct stats dec = stats_of(decide_us, (size_t)sc.rounds);
	struct stats first = stats_of(first_us, (size_t)sc.rounds);
	struct stats status = stats_of(status_us, (size_t)sc.rounds);
	struct stats eval = stats_of(eval_us, (size_t)sc.rounds);
	double per = (double)dec.median / (double)(n ? n : 1);
	(void)printf("nodes %lld, pods %lld, ADBs %lld, NDBs %lld%s, granted before %lld, "
		     "pending %zu, hostile ADBs %lld x %lld windows; median (min-max) of %lld "
		     "rounds\n",
		     (long long)sc.nodes, (long long)sc.nodes * sc.pods_per_node,
		     (long long)sc.adbs, (long long)sc.ndbs, sc.pool_wide ? " + pool-wide" : "",
		     (long long)sc.granted, n, (long long)sc.hostile_adbs,
		     (long long)(sc.hostile_adbs ? sc.hostile_windows : 0), (long long)sc.rounds);
	(void)printf("rank:   %.3f ms (%.3f-%.3f); reference qsort of the keys: %.3f ms "
		     "(%.3f-%.3f), ratio %.1f\n",
		     (double)rank.median / 1e3, (double)rank.min / 1e3, (double)rank.max / 1e3,
		     (double)ref.median / 1e3, (double)ref.min / 1e3, (double)ref.max / 1e3,
		     ref.median ? (double)rank.median / (double)ref.median : 0.0);
	(void)printf("decide: %.3f ms for all %zu (%.1f us each; %.1f-%.1f), %zu granted\n",
		     (double)dec.median / 1e3, n, per, (double)dec.min / (double)(n ? n : 1),
		     (double)dec.max / (double)(n ? n : 1), granted);
	(void)printf(
	    "first decision of a round (the ledger's scopes and windows computed): %.1f us "
	    "(%.1f-%.1f)\n",
	    (double)first.median, (double)first.min, (double)first.max);
	(void)printf("the first decision alone (pol_evaluate_disruption, what the gate's "
		     "nodegate_decision_duration_seconds times): %.1f us (%.1f-%.1f)\n",
		     (double)eval.median, (double)eval.min, (double)eval.max);
	(void)printf("budget status pass (every budget): %.3f ms (%.3f-%.3f)\n",
		     (double)status.median / 1e3, (double)status.min / 1e3,
		     (double)status.max / 1e3);
	(void)printf("answers: digest %016llx\n", (unsigned long long)digest);
	if (sc.json)
		(void)printf("{\"decide_us_per_request\":%.2f,\"rank_ms\":%.3f,\"qsort_ms\":%.3f,"
			     "\"granted\":%zu,\"decisions\":%zu,\"first_decision_us\":%.1f,"
			     "\"status_pass_ms\":%.3f,\"first_eval_us\":%.1f}\n",
			     per, (double)rank.median / 1e3, (double)ref.median / 1e3, granted, n,
			     (double)first.median, (double)status.median / 1e3,
			     (double)eval.median);
	rc = 0;
out:
	pol_ledger_destroy(l);
	pol_scope_cache_destroy(cache);
	ng_arena_destroy(arena);
	free(eval_us);
	free(status_us);
	free(first_us);
	free(decide_us);
	free(ref_us);
	free(rank_us);
	free(keys);
	free(q);
	kube_snapshot_release(s);
	return rc;
}
