#!/usr/bin/env python3
"""B9 what-if planner: `nodegate plan` of every node of a large cluster, run by run.

The cluster is bench/gen-cluster.py's: NODES nodes in 3 zones with PODS_PER_NODE pods each,
racks of consecutive nodes with a NodeDisruptionBudget each (maxDisruptedNodes 20 %), one
ApplicationDisruptionBudget per app for half of the apps (maxDisruptions 20 %) and a zone budget
(topologyKey topology.kubernetes.io/zone, maxDisruptedDomains 1), written once as one snapshot
file. Each run times `nodegate plan --snapshot FILE --node-file ALL --output json` (every node;
wall time, loading the snapshot included) and, as its reference in the same run, `nodegate check
--snapshot FILE --nd ONE` of one request on the same snapshot: the floor of loading it.

Rows: plan wall time (target < 10 s at full scale; reference: the check), waves, decisions.

Usage: bench/plan.py [--quick|--smoke] [--runs N] [--nodegate PATH]"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

# nodes, pods per node, NDBs (racks), ADBs
SCALE = {"full": (5000, 30, 250, 2000), "quick": (2000, 30, 100, 800), "smoke": (60, 2, 3, 10)}
START = "2026-11-27T00:00:00Z"


def timed(argv):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    return p, took


def main():
    p = bl.parser(__doc__)
    a = bl.parse(p)
    m = bl.mode(a)
    nodes, per, ndbs, adbs = SCALE[m]
    cmd = bl.command("plan.py", a)
    with tempfile.TemporaryDirectory(prefix="ng-bench-plan-") as tmp:
        snap = os.path.join(tmp, "cluster.json")
        bl.log(f"  generating {nodes} nodes × {per} pods, {ndbs} NDBs, {adbs} ADBs, a zone budget")
        with open(snap, "w", encoding="utf-8") as f:
            subprocess.run([sys.executable, os.path.join(bl.ROOT, "bench", "gen-cluster.py"), str(nodes),
                            str(per), "--ndbs", str(ndbs), "--adbs", str(adbs), "--zone-budget"],
                           stdout=f, check=True, timeout=900)
        node_file = os.path.join(tmp, "nodes.txt")
        with open(node_file, "w", encoding="utf-8") as f:
            f.write("".join(f"node-{n:05d}\n" for n in range(nodes)))
        one = os.path.join(tmp, "one.json")
        with open(one, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                       "metadata": {"name": "one"},
                       "spec": {"nodeNames": ["node-00001"], "type": "maintenance"}}, f)
        plan_s, check_s, waves, decisions = [], [], [], []
        for r in range(a.runs):
            res, took = timed([a.nodegate, "plan", "--snapshot", snap, "--node-file", node_file,
                               "--start", START, "--output", "json"])
            if res.returncode != 0:
                raise SystemExit(f"nodegate plan failed ({res.returncode}): {res.stderr.strip()}")
            doc = json.loads(res.stdout)
            if doc["summary"]["planned"] != nodes:
                raise SystemExit(f"the plan left nodes out: {doc['summary']}")
            ref, ref_took = timed([a.nodegate, "check", "--snapshot", snap, "--nd", one])
            if ref.returncode not in (0, 1):
                raise SystemExit(f"nodegate check failed ({ref.returncode}): {ref.stderr.strip()}")
            plan_s.append(took)
            check_s.append(ref_took)
            waves.append(doc["summary"]["waves"])
            decisions.append(doc["summary"]["decisions"])
            bl.log(f"  run {r + 1}: plan {took:.2f} s ({doc['summary']['waves']} waves, "
                   f"{doc['summary']['decisions']} decisions), check {ref_took:.2f} s")
    what = f"{nodes} nodes × {per} pods, {ndbs} NDBs + a zone budget, {adbs} ADBs"
    rows = [
        bl.row("B9", f"nodegate plan of all {nodes} nodes ({what}), wall time", plan_s, "s", cmd,
               reference=check_s, reference_name="nodegate check of one request on the same snapshot",
               target="< 10 s" if m == "full" else None,
               met=(lambda v, _: v["max"] < 10) if m == "full" else None),
        bl.row("B9", "waves planned", waves, "count", cmd),
        bl.row("B9", "decisions made (requests whose failing budgets released nothing are not decided again)",
               decisions, "count", cmd),
    ]
    bl.finish("B9", rows)


if __name__ == "__main__":
    main()
