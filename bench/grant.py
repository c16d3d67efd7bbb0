#!/usr/bin/env python3
"""B3 grant latency: create -> status Granted through the test API server.

The test API server generates NODES nodes x PODS pods per node (with the CRDs and nodegate's
RBAC); a release build of `nodegate serve` watches it and holds the gate's lease. A
NodeDisruptionBudget over every node (maxDisruptedNodes 100 %, so it never refuses but every
decision walks the whole pool) is in the way. Per run, N NodeDisruptions (one node each) are
created one after the other, each once the previous one is Granted; a watch on nodedisruptions
timestamps each one's transition to Granted. The requests of a run are deleted before the next.

Rows: p50 and p99 of create -> Granted seen on the watch (target p99 <= 30 ms), each beside the
same percentile of create -> the request first seen on the watch (the test API server's own
round trip, nodegate not involved: the floor of this measurement); nodegate's own
share, p50 and p99 from its histogram nodegate_gate_grant_latency_seconds (watch event read ->
status write sent; estimated from the buckets by linear interpolation; target p99 <= 2 ms), or a
row "own share (metric missing)" when nodegate does not export it; the mean decision time from
nodegate_decision_duration_seconds.

Usage: bench/grant.py [--quick|--smoke] [--runs N] [--nodegate PATH]
                      [--nodes N] [--pods-per-node M] [--requests K]"""
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

OWN = "nodegate_gate_grant_latency_seconds"
API_FLOOR = "the test API server alone: create → the request seen on the watch"
SCALE = {"full": (5000, 30, 500), "quick": (1000, 10, 200), "smoke": (30, 2, 20)}


class Granted(threading.Thread):
    """Follows a watch on nodedisruptions; records when each request is first seen at all (the
    API server's own create -> watch round trip) and when it is first seen Granted."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api = api
        self.when = {}
        self.seen = {}
        self.cv = threading.Condition()
        self.stream = api.watch(bl.ND_PATH + "?watch=1", timeout=3600)
        self.start()

    def run(self):
        while True:
            try:
                ev = self.stream.next()
            except Exception:  # noqa: BLE001  (the stream was shut down, or broke)
                return
            if ev is None:
                return
            t = time.monotonic()
            obj = ev.get("object") or {}
            if ev.get("type") == "ADDED":
                with self.cv:
                    self.seen.setdefault(obj["metadata"]["name"], t)
            if ev.get("type") != "DELETED" and (obj.get("status") or {}).get("state") == "Granted":
                with self.cv:
                    self.when.setdefault(obj["metadata"]["name"], t)
                    self.cv.notify_all()

    def wait(self, name, timeout):
        with self.cv:
            return self.cv.wait_for(lambda: name in self.when, timeout)


def one_run(api, ng, follow, names, run):
    lat, seen = [], []
    before = ng.metrics()
    for i, node in enumerate(names):
        name = f"lat-{run}-{i}"
        t = time.monotonic()
        bl.create(api, bl.ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                    "metadata": {"name": name}, "spec": {"nodeNames": [node]}})
        # One at a time: each measures an idle gate.
        if follow.wait(name, 30):
            lat.append((follow.when[name] - t) * 1000)
            if name in follow.seen:
                seen.append((follow.seen[name] - t) * 1000)
    after = ng.metrics()
    lat.sort()
    seen.sort()
    own = bl.histogram_delta(bl.histogram(after, OWN), bl.histogram(before, OWN))
    own_p50 = bl.histogram_quantile(own, 0.50)
    own_p99 = bl.histogram_quantile(own, 0.99)
    s = after.get("nodegate_decision_duration_seconds_sum", 0) - before.get("nodegate_decision_duration_seconds_sum", 0)
    c = after.get("nodegate_decision_duration_seconds_count", 0) - before.get("nodegate_decision_duration_seconds_count", 0)
    res = {"granted": len(lat), "p50": bl.quantile(lat, 0.50), "p99": bl.quantile(lat, 0.99),
           "api_p50": bl.quantile(seen, 0.50), "api_p99": bl.quantile(seen, 0.99),
           "own_present": own is not None,
           "own_p50": own_p50 * 1000 if own_p50 is not None else None,
           "own_p99": own_p99 * 1000 if own_p99 is not None else None,
           "decision_us": s / c * 1e6 if c else None}
    bl.log(f"  run {run + 1}: granted {len(lat)}/{len(names)}; create -> Granted p50 {res['p50']} ms, "
           f"p99 {res['p99']} ms (create -> seen on the watch: p50 {res['api_p50']}, p99 {res['api_p99']} ms); own share p50 {res['own_p50']} ms, p99 {res['own_p99']} ms; "
           f"decision {res['decision_us']} us mean")
    # Delete the run's requests and wait until nodegate has seen them go.
    for i in range(len(names)):
        api.api("DELETE", f"{bl.ND_PATH}/lat-{run}-{i}")
    bl.wait_for(lambda: not api.api("GET", bl.ND_PATH + "?limit=1")[1]["items"], 60, 0.1)
    time.sleep(0.5)
    return res


def main():
    p = bl.parser(__doc__)
    p.add_argument("--nodes", type=int)
    p.add_argument("--pods-per-node", type=int)
    p.add_argument("--requests", type=int)
    a = bl.parse(p)
    nodes, pods, count = SCALE[bl.mode(a)]
    nodes, pods, count = a.nodes or nodes, a.pods_per_node if a.pods_per_node is not None else pods, a.requests or count
    count = min(count, nodes)
    extra = ""
    if a.nodes or a.pods_per_node is not None or a.requests:
        extra = f" --nodes {nodes} --pods-per-node {pods} --requests {count}"
    cmd = bl.command("grant.py", a, extra)
    bl.log(f"B3: {nodes} nodes x {pods} pods, {count} requests per run, {a.runs} run(s)")
    api = bl.start_api(bl.FIXTURES, f"nodes={nodes},pods-per-node={pods}")
    tmp = tempfile.mkdtemp(prefix="ng-bench-b3-")
    ng = None
    results = []
    try:
        ng = bl.Serve(a.nodegate, api, tmp)
        bl.log(f"  nodegate ready in {ng.ready_s:.1f} s")
        bl.create(api, bl.NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                                     "metadata": {"name": "all"},
                                     "spec": {"nodeSelector": {}, "maxDisruptedNodes": "100%"}})
        ok = bl.wait_for(lambda: ((api.api("GET", f"{bl.NDB_PATH}/all")[1] or {}).get("status") or {})
                         .get("watchedNodes") == nodes, 60, 0.1)
        if not ok:
            bl.log("  the gate never reported the budget's watchedNodes; measuring anyway")
        _, nodelist, _ = api.api("GET", "/api/v1/nodes")
        all_names = [n["metadata"]["name"] for n in nodelist["items"]]
        follow = Granted(api)
        for r in range(a.runs):
            names = [all_names[(r * count + i) % len(all_names)] for i in range(count)]
            results.append(one_run(api, ng, follow, names, r))
    finally:
        if ng is not None:
            ng.stop()
        api.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    col = lambda k: [r[k] for r in results]  # noqa: E731
    rows = [
        bl.row("B3", f"create → Granted p50 ({count} requests, {nodes} nodes, pool-wide NDB)",
               col("p50"), "ms", cmd, reference=col("api_p50"), reference_name=API_FLOOR),
        bl.row("B3", f"create → Granted p99 ({count} requests, {nodes} nodes, pool-wide NDB)",
               col("p99"), "ms", cmd, reference=col("api_p99"), reference_name=API_FLOOR, target="p99 ≤ 30 ms", met=lambda v, _: v["median"] <= 30),
    ]
    if all(r["own_present"] for r in results):
        rows += [
            bl.row("B3", "own share p50 (watch event read → status write sent)", col("own_p50"), "ms", cmd),
            bl.row("B3", "own share p99 (watch event read → status write sent)", col("own_p99"), "ms", cmd,
                   target="p99 ≤ 2 ms", met=lambda v, _: v["median"] <= 2),
        ]
    else:
        rows.append(bl.row("B3", "own share (metric missing)", [], "ms", cmd, target="p99 ≤ 2 ms"))
    rows.append(bl.row("B3", "decision time inside nodegate, mean", col("decision_us"), "µs", cmd))
    rows.append(bl.row("B3", "requests granted within 30 s", col("granted"), "count", cmd,
                       target=f"all {count}", met=lambda v, _: v["min"] == count))
    bl.finish("B3", rows)


if __name__ == "__main__":
    main()
