#!/usr/bin/env python3
"""B10 scaling table: the same measurements at growing cluster sizes, and how each grows.

Each size is served by bench/feed.py: NODES nodes x PODS pods per node synthesized from bytes
rendered once (plain HTTP on loopback, lists paged and WatchList streamed as the API server
does), every other path proxied to a test API server holding nodegate's CRDs and RBAC. Per size
a release build of `nodegate serve` starts against the feed (with a NodeDisruptionBudget over
every node, maxDisruptedNodes 10 %: the pool-wide budget every decision walks) and per run. The
feed's nodes post their status as kubelets do, each every 5 minutes (NODES / 300 MODIFIED events
a second on the node watch, HEARTBEAT_S), so the node table changes all the time as in a live
cluster:

- start -> /readyz, beside the floor timed on the same feed after nodegate stopped: Python
  paging the lists nodegate lists at start (bench/cache.py's floor: one keep-alive connection
  per resource, all at once, `?limit=500`, reading every byte). Target at the largest size:
  <= 1.5x the floor.
- RSS one second after /readyz, and VmHWM (the high-water mark, the initial list included);
  once per size, the same start against a feed refusing WatchList (422, so nodegate pages the
  lists; its nodes post the same heartbeats): its /readyz and VmHWM beside the streamed start's.
- bytes per cached pod: (RSS - RSS of nodegate watching the same nodes without pods) / pods,
  the reference a separate feed of the same nodes started beside; bytes per node: (RSS of that
  reference - RSS of nodegate watching an empty cluster) / nodes, the empty run once per
  benchmark. Targets at the largest size: <= 200 B per pod, RSS <= 512 MiB.
- first run only (the lease is held by the first nodegate): REQUESTS NodeDisruptions of one
  node each, created one after another as bench/grant.py does; nodegate's decision time
  (nodegate_decision_duration_seconds: mean and p99 from its buckets, target p99 <= 50 us) and
  own share (nodegate_gate_grant_latency_seconds, watch event read -> status write sent: p99,
  target <= 5 ms).
- first run only: eviction webhook throughput, bench-loadgen closed loop on 16 connections for
  WEBHOOK_S seconds, reviews of a pod of the cluster and of a pod not in the cache (both
  allowed); at the largest size beside the 5,000 x 10 figure of the same run (target >= 0.9x),
  and its per-review time's growth exponent (target <= 0.2).
- `nodegate plan --nodes ""` of every node against the feed (listed once, 10 waves under the
  budget), wall time, beside its load floor `nodegate check` of one request against the same
  feed (lists the cluster, decides one). Target: <= 30 s and <= 2x the floor. A plan still
  running after --plan-max-seconds (600) is cut and its row says so.

Then growth exponents between consecutive sizes of the 10-pods-per-node series: the slope of
log(cost) over log(size) for cache memory (RSS above the empty run), ready, the floor and plan
(target <= 1.1) and for the per-decision p99 (target <= 0.2).

Sizes: full 1,000 / 5,000 / 20,000 / 100,000 nodes x 10 pods and 5,000 x 30; --quick 1,000
and 5,000 x 10; --smoke 200 and 1,000 x 2. --sizes NxM,... picks others.

Usage: bench/scale.py [--quick|--smoke] [--runs N] [--nodegate PATH] [--sizes 1000x10,5000x10]
                      [--plan-max-seconds S]"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import cache  # noqa: E402  (the floor)
import feed  # noqa: E402
import grant  # noqa: E402  (create -> Granted, one request at a time)

SIZES = {"full": [(1000, 10), (5000, 10), (20000, 10), (100000, 10), (5000, 30)],
         "quick": [(1000, 10), (5000, 10)], "smoke": [(200, 2), (1000, 2)]}
REQUESTS = {"full": 200, "quick": 100, "smoke": 10}
WEBHOOK_S = {"full": 5, "quick": 3, "smoke": 1}  # seconds of closed-loop eviction reviews
DECISION = "nodegate_decision_duration_seconds"
START = "2026-11-27T00:00:00Z"
HEARTBEAT_S = 300  # a kubelet posts its node's status this often when nothing changed
PLAN_MAX_S = 600  # default: a plan still running then is cut (nodegate plan --max-seconds), its row says so
FLOOR = "floor: Python paging the same lists from the same feed"


def mib(kib):
    return kib / 1024 if kib is not None else None


def proc_kib(pid, field):
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def rss_of(binary, nodes, per, tmp, tag):
    """RSS (KiB) of nodegate one second after /readyz against a feed of @nodes x @per."""
    with feed.Feed(nodes, per) as f:
        ng = bl.Serve(binary, f, tmp, tag=tag)
        try:
            time.sleep(1)
            return ng.rss_kib()
        finally:
            ng.stop()


def timed(argv):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    return p, time.monotonic() - t0


def plan(binary, f, tmp, nodes, max_s):
    """(plan seconds, its load floor: check of one request, waves) against the feed."""
    p, took = timed([binary, "plan", "--kubeconfig", f.kubeconfig, "--nodes", "", "--start", START,
                     "--max-seconds", str(max_s), "--output", "json"])
    if p.returncode == 3:  # truncated at --max-seconds: the row says so
        bl.log(f"  nodegate plan did not finish within {max_s} s")
        return None, None, None
    if p.returncode != 0:
        raise SystemExit(f"nodegate plan failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    doc = json.loads(p.stdout)
    if doc["summary"]["planned"] != nodes:
        raise SystemExit(f"the plan left nodes out: {doc['summary']}")
    one = os.path.join(tmp, "one.json")
    with open(one, "w", encoding="utf-8") as out:
        json.dump({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "one"},
                   "spec": {"nodeNames": ["node-00001"], "type": "maintenance"}}, out)
    c, ctook = timed([binary, "check", "--kubeconfig", f.kubeconfig, "--nd", one])
    if c.returncode not in (0, 1):
        raise SystemExit(f"nodegate check failed ({c.returncode}): {c.stderr.strip()[-2000:]}")
    return took, ctook, doc["summary"]["waves"]


def review_bodies(tmp, nodes, per):
    """Eviction reviews for the webhook: a pod of the cluster (no budget protects it: allowed)
    and a pod not in the cache (allowed), as files for bench-loadgen."""
    with open(os.path.join(bl.ROOT, "examples", "eviction-review.json"), encoding="utf-8") as f:
        template = json.load(f)
    pods = [(f"node-{nodes // 2 + 1:05d}-p0", "bench-0")] if per else []
    out = []
    for k, (name, ns) in enumerate(pods + [("no-such-pod", "bench-1")]):
        r = json.loads(json.dumps(template))
        req = r["request"]
        req["uid"] = "705ab4f5-6393-11e8-b7cc-42010a80010%d" % k
        req["name"] = req["object"]["metadata"]["name"] = name
        req["namespace"] = req["object"]["metadata"]["namespace"] = ns
        path = os.path.join(tmp, f"review-{k}.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(r, fh)
        out.append(path)
    return out


def webhook_rate(loadgen, port, bodies, secs):
    """Eviction reviews per second, closed loop on 16 keep-alive connections; None on errors."""
    cmd = [loadgen, "--port", str(port), "--path", "/validate/eviction?timeout=10s", "--connections", "16",
           "--duration", str(secs), "--warmup", "1"]
    for b in bodies:
        cmd += ["--body", b]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 120)
    if p.returncode != 0:
        bl.log(f"  bench-loadgen failed ({p.returncode}): {p.stderr.strip()[-1000:]}")
        return None
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res["errors"]:
        bl.log(f"  bench-loadgen: {res['errors']} errors of {res['requests']}")
        return None
    return res["rate"]


def grants(f, ng, nodes, count):
    """Decision mean/p99 (µs) and own share p99 (ms) over @count requests, one at a time."""
    follow = grant.Granted(f)
    try:
        before = ng.metrics()
        names = [f"node-{1 + (i * max(1, nodes // count)) % nodes:05d}" for i in range(count)]
        res = grant.one_run(f, ng, follow, names, 0)
        after = ng.metrics()
    finally:
        bl.stop_watch(follow.stream)
    dec = bl.histogram_delta(bl.histogram(after, DECISION), bl.histogram(before, DECISION))
    p99 = bl.histogram_quantile(dec, 0.99)
    return {"dec_mean": res["decision_us"], "dec_p99": p99 * 1e6 if p99 is not None else None,
            "own_p99": res["own_p99"], "granted": res["granted"]}


def measure_size(a, nodes, per, base_kib, tmp, count):
    tag = f"{nodes}x{per}"
    bl.log(f"B10: {nodes:,} nodes x {per} pods")
    ref_kib = rss_of(a.nodegate, nodes, 0, tmp, f"nopods-{tag}")
    out = {"nodes": nodes, "per": per, "runs": [], "grant": None, "webhook": None,
           "per_node": (ref_kib - base_kib) * 1024 / nodes if nodes else None}
    with feed.Feed(nodes, per, node_heartbeats=nodes / HEARTBEAT_S) as f:
        bl.create(f, bl.NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                                   "metadata": {"name": "all"},
                                   "spec": {"nodeSelector": {}, "maxDisruptedNodes": "10%"}})
        for r in range(a.runs):
            ng = bl.Serve(a.nodegate, f, tmp, tag=f"{tag}-{r}")
            try:
                hwm = proc_kib(ng.proc.pid, "VmHWM")
                time.sleep(1)
                rss = ng.rss_kib()
                pods = ng.metrics().get('nodegate_cache_objects{resource="pods"}') or 0
                if r == 0:
                    ok = bl.wait_for(lambda: ((f.api("GET", f"{bl.NDB_PATH}/all")[1] or {}).get("status") or {})
                                     .get("watchedNodes") == nodes, 120, 0.1)
                    if not ok:
                        bl.log("  the gate never reported the budget's watchedNodes; measuring anyway")
                    out["grant"] = grants(f, ng, nodes, count)
                    if os.path.exists(a.loadgen):
                        out["webhook"] = webhook_rate(a.loadgen, ng.port, review_bodies(tmp, nodes, per),
                                                      WEBHOOK_S[bl.mode(a)])
                        bl.log(f"  eviction webhook: {out['webhook']} reviews/s")
            finally:
                ng.stop()
            fl, nbytes = cache.floor(f)
            plan_s, check_s, waves = plan(a.nodegate, f, tmp, nodes, a.plan_max_seconds)
            run = {"ready": ng.ready_s, "floor": fl, "rss": rss, "hwm": hwm, "ref": ref_kib,
                   "bpp": (rss - ref_kib) * 1024 / pods if pods else None, "pods": pods,
                   "plan": plan_s, "check": check_s, "waves": waves}
            out["runs"].append(run)
            bl.log(f"  run {r + 1}: /readyz {ng.ready_s:.2f} s, floor {fl:.2f} s ({nbytes / 1e6:.0f} MB); "
                   f"RSS {rss / 1024:.1f} MiB (no pods {ref_kib / 1024:.1f}), HWM {hwm / 1024:.1f} MiB; "
                   f"{pods:.0f} pods, {run['bpp'] or 0:.0f} B/pod; plan {plan_s} s ({waves} waves), "
                   f"check {check_s} s")
        if out["grant"]:
            bl.log(f"  grants: {out['grant']}")
    # The same start against a feed that refuses WatchList (422): nodegate falls back to paging.
    # Its nodes post the same heartbeats: without them the two starts differed in the node
    # updates nodegate handles while the pods arrive, not in how the lists come.
    with feed.Feed(nodes, per, no_watchlist=True, node_heartbeats=nodes / HEARTBEAT_S) as f:
        ng = bl.Serve(a.nodegate, f, tmp, tag=f"{tag}-paged")
        try:
            out["paged"] = {"ready": ng.ready_s, "hwm": proc_kib(ng.proc.pid, "VmHWM")}
        finally:
            ng.stop()
    bl.log(f"  paged lists (WatchList refused): /readyz {out['paged']['ready']:.2f} s, "
           f"HWM {out['paged']['hwm'] / 1024:.1f} MiB")
    return out


def exponent(c1, c2, s1, s2):
    if not c1 or not c2 or c1 <= 0 or c2 <= 0:
        return None
    return math.log(c2 / c1) / math.log(s2 / s1)


def rows_for(res, cmd, largest, count, plan_max_s):
    n, per = res["nodes"], res["per"]
    what = f"{n:,} nodes × {per} pods"
    big = (n, per) == largest
    col = lambda k: [x[k] for x in res["runs"]]  # noqa: E731

    def tgt(text, fn):
        return {"target": text if big else None, "met": fn if big else None}
    rows = [
        bl.row("B10", f"start → /readyz ({what})", col("ready"), "s", cmd, reference=col("floor"),
               reference_name=FLOOR, **tgt("≤ 1.5× the floor", lambda _, r: r is not None and r["median"] <= 1.5)),
        bl.row("B10", f"RSS after ready ({what})", [mib(x) for x in col("rss")], "MiB", cmd,
               reference=[mib(x) for x in col("ref")], reference_name="RSS with the same nodes and no pods",
               **tgt("≤ 512 MiB", lambda v, _: v["median"] <= 512)),
        bl.row("B10", f"memory high-water mark (VmHWM) at ready ({what})", [mib(x) for x in col("hwm")], "MiB", cmd,
               reference=[mib(res["paged"]["hwm"])],
               reference_name="the same with paged lists (the feed refuses WatchList)"),
        bl.row("B10", f"start → /readyz with paged lists, the feed refusing WatchList ({what})",
               [res["paged"]["ready"]], "s", cmd, reference=col("floor")[:1], reference_name=FLOOR),
        bl.row("B10", f"bytes per cached pod ({what})", col("bpp"), "B", cmd,
               **tgt("≤ 200 B/pod", lambda v, _: v["median"] <= 200)),
    ]
    if res["per_node"] is not None:
        rows.append(bl.row("B10", f"bytes per node (no pods, above an empty cluster; {n:,} nodes)",
                           [res["per_node"]], "B", cmd))
    g = res["grant"]
    if g:
        rows += [
            bl.row("B10", f"decision, mean ({what}, pool-wide NDB, {count} requests)", [g["dec_mean"]], "µs", cmd),
            bl.row("B10", f"decision, p99 from the histogram ({what})", [g["dec_p99"]], "µs", cmd,
                   **tgt("p99 ≤ 50 µs", lambda v, _: v["median"] <= 50)),
            bl.row("B10", f"create → Granted own share, p99 ({what})", [g["own_p99"]], "ms", cmd,
                   **tgt("p99 ≤ 5 ms", lambda v, _: v["median"] <= 5)),
            bl.row("B10", f"requests granted within 30 s ({what})", [g["granted"]], "count", cmd,
                   target=f"all {count}", met=lambda v, _: v["min"] == count),
        ]
    if res["webhook"] is not None:
        ref = res.get("_webhook_ref")
        rows.append(bl.row("B10", f"eviction webhook throughput, closed loop, 16 connections ({what})",
                           [res["webhook"]], "req/s", cmd,
                           reference=[ref] if ref and big else None,
                           reference_name="the same at 5,000 nodes × 10 pods, same run",
                           **(tgt("≥ 0.9× the 5,000-node figure", lambda _, r: r is not None and r["median"] >= 0.9)
                              if ref else {})))
    if any(x is None for x in col("plan")):
        rows.append(bl.row("B10", f"nodegate plan of every node against the feed ({what}): did not finish "
                           f"within {plan_max_s} s", [plan_max_s], "s", cmd, target="≤ 30 s",
                           met=lambda v, _: False))
        return rows
    rows.append(bl.row("B10", f"nodegate plan of every node against the feed ({what})", col("plan"), "s", cmd,
                       reference=col("check"), reference_name="load floor: nodegate check of one request",
                       **tgt("≤ 30 s and ≤ 2× the floor",
                             lambda v, r: v["median"] <= 30 and r is not None and r["median"] <= 2)))
    return rows


def growth_rows(results, cmd):
    """Exponents between consecutive sizes of the same pods-per-node series."""
    rows = []
    series = {}
    for res in results:
        series.setdefault(res["per"], []).append(res)
    def med(res, k):
        st = bl.stats([x[k] for x in res["runs"]])
        return st["median"] if st else None
    for per, rs in series.items():
        for r1, r2 in zip(rs, rs[1:]):
            s1, s2 = r1["nodes"], r2["nodes"]
            span = f"{s1:,} → {s2:,} nodes × {per} pods"
            mem1 = med(r1, "rss") - r1["_base"]  # nodegate's cache, its empty-cluster RSS aside
            mem2 = med(r2, "rss") - r2["_base"]
            for what, c1, c2, lim in (
                    ("cache memory (RSS above the empty run)", mem1, mem2, 1.1),
                    ("start → /readyz", med(r1, "ready"), med(r2, "ready"), 1.1),
                    ("the floor (paging the lists)", med(r1, "floor"), med(r2, "floor"), None),
                    ("plan of every node", med(r1, "plan"), med(r2, "plan"), 1.1),
                    ("decision p99", (r1["grant"] or {}).get("dec_p99"), (r2["grant"] or {}).get("dec_p99"), 0.2),
                    ("time per eviction review (1 ÷ throughput)", 1 / r1["webhook"] if r1["webhook"] else None,
                     1 / r2["webhook"] if r2["webhook"] else None, 0.2)):
                e = exponent(c1, c2, s1, s2)
                if e is None:
                    continue
                rows.append(bl.row("B10", f"growth exponent of {what}, {span}", [e], "", cmd,
                                   target=f"≤ {lim}" if lim is not None else None,
                                   met=(lambda v, _, lim=lim: v["median"] <= lim) if lim is not None else None))
    return rows


def main():
    p = bl.parser(__doc__)
    p.add_argument("--sizes", help="NODESxPODS,... instead of the mode's sizes")
    p.add_argument("--loadgen", help="bench-loadgen (default: beside the nodegate build's bench/)")
    p.add_argument("--plan-max-seconds", type=int, default=PLAN_MAX_S,
                   help="cut a plan still running after this long (its row says so)")
    a = bl.parse(p)
    a.loadgen = a.loadgen or os.path.join(os.path.dirname(os.path.dirname(a.nodegate)), "bench", "bench-loadgen")
    m = bl.mode(a)
    sizes = SIZES[m]
    extra = ""
    if a.sizes:
        sizes = [tuple(int(x) for x in s.split("x")) for s in a.sizes.split(",")]
        extra = f" --sizes {a.sizes}"
    cmd = bl.command("scale.py", a, extra)
    count = REQUESTS[m]
    largest = max(sizes, key=lambda s: s[0] * max(1, s[1]))
    tmp = tempfile.mkdtemp(prefix="ng-bench-b10-")
    results = []
    try:
        base_kib = rss_of(a.nodegate, 0, 0, tmp, "empty")
        bl.log(f"B10: nodegate watching an empty cluster: RSS {base_kib / 1024:.1f} MiB")
        for nodes, per in sizes:
            res = measure_size(a, nodes, per, base_kib, tmp, min(count, max(1, nodes // 10)))
            res["_base"] = base_kib
            results.append(res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ref = next((r["webhook"] for r in results if (r["nodes"], r["per"]) == (5000, 10)), None)
    for res in results:
        res["_webhook_ref"] = ref
    rows = []
    for res in results:
        rows += rows_for(res, cmd, largest, min(count, max(1, res["nodes"] // 10)), a.plan_max_seconds)
    rows += growth_rows(results, cmd)
    bl.finish("B10", rows)


if __name__ == "__main__":
    main()
