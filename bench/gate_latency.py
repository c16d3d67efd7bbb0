#!/usr/bin/env python3
"""Gate latency at scale: the test API server generates NODES nodes x PODS pods per node (plus
the CRDs and nodegate's RBAC); nodegate (NODEGATE, a release build) watches it and holds the
gate's lease. N NodeDisruptions (one node each, no budget in the way) are created one after the
other; a watch on nodedisruptions timestamps each one's transition to Granted. Prints p50/p99
of create-to-Granted and nodegate's own decision time (nodegate_decision_duration_seconds).
With BUDGET `ndb`, a NodeDisruptionBudget selecting every node (max 100 %, so it never refuses)
is in the way: each decision then matches the whole pool and counts its disrupted nodes.

Usage: NODEGATE=build-release/cmd/nodegate bench/gate_latency.py [NODES] [PODS] [N] [none|ndb]"""
import json
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
os.environ.setdefault("NODEGATE", os.path.join(ROOT, "build-release", "cmd", "nodegate"))
from ktestapi.testing import ServerProcess  # noqa: E402
import test_live_cache as harness  # noqa: E402

nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
pods = int(sys.argv[2]) if len(sys.argv) > 2 else 30
count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
budget = sys.argv[4] if len(sys.argv) > 4 else "none"

api = ServerProcess(fixtures=harness.CRDS, generate=f"nodes={nodes},pods-per-node={pods}",
                    start_timeout=600)
api.start()
tmp = tempfile.mkdtemp()
try:
    t0 = time.monotonic()
    ng = harness.Nodegate(api, tmp)
    print(f"cluster: {nodes} nodes, {nodes * pods} pods; nodegate ready in {time.monotonic() - t0:.1f} s")
    if budget == "ndb":
        code, body, _ = api.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
            "metadata": {"name": "all"}, "spec": {"nodeSelector": {}, "maxDisruptedNodes": "100%"}})
        assert code == 201, body
        while not ng.cache()["nodedisruptionbudgets"]:
            time.sleep(0.01)
        print("budget: one NodeDisruptionBudget over every node")
    _, nodelist, _ = api.api("GET", "/api/v1/nodes?limit=%d" % count)
    names = [n["metadata"]["name"] for n in nodelist["items"]][:count]
    granted = {}
    watch = api.watch(harness.ND_PATH + "?watch=1", timeout=600)

    def follow():
        while len(granted) < len(names):
            ev = watch.next()
            if ev is None:
                return
            obj = ev["object"]
            if obj.get("status", {}).get("state") == "Granted":
                granted.setdefault(obj["metadata"]["name"], time.monotonic())

    th = threading.Thread(target=follow, daemon=True)
    th.start()
    created = {}
    for i, node in enumerate(names):
        name = f"lat-{i}"
        created[name] = time.monotonic()
        code, body, _ = api.api("POST", harness.ND_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
            "metadata": {"name": name}, "spec": {"nodeNames": [node]}})
        assert code == 201, body
        # Wait for this one before the next, so each measures an idle gate.
        deadline = time.monotonic() + 30
        while name not in granted and time.monotonic() < deadline:
            time.sleep(0.001)
    th.join(5)
    lat = sorted((granted[n] - created[n]) * 1000 for n in created if n in granted)
    print(f"granted {len(lat)} of {len(created)}")
    if lat:
        p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
        print(f"create -> Granted: p50 {p(0.50):.1f} ms, p99 {p(0.99):.1f} ms, max {lat[-1]:.1f} ms")
    s = ng.metric("nodegate_decision_duration_seconds_sum")
    c = ng.metric("nodegate_decision_duration_seconds_count")
    if c:
        print(f"decision time inside nodegate: {s / c * 1e6:.1f} us mean over {int(c)} decisions")
    ng.stop()
finally:
    api.stop()
