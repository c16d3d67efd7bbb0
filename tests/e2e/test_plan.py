#!/usr/bin/env python3
"""e2e: the what-if planner (docs/planner.md) against the gate it simulates. 30 nodes in three
zones, a NodeDisruptionBudget of 5 over them and an ApplicationDisruptionBudget of 2 over an
application on fifteen of them: `nodegate plan --kubeconfig` says which nodes go together in which
order (Q02), POST /v1/plan says the same on nodegate's live cache (Q03), and the gate, given one
NodeDisruption per node by a maintenance tool that deletes each wave after the same short
drain, grants the same sets in the same order (Q02).

The tool pauses the gate (NodeGateConfig paused) while it deletes a wave and unpauses it once
every deletion has been seen: the plan ends a wave's requests at the same instant, and a gate
that saw the deletions one by one could fill the first freed slot before the others are free.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import BINARY, E2ETest, ND_PATH, WAIT_S, eventually  # noqa: E402

NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"
NODES = [f"p{i:02d}" for i in range(30)]
WEB = NODES[::2]  # the application's fifteen nodes, every other one in the ranking
START = "2026-11-27T12:00:00Z"
DRAIN_S = 1


class PlanTest(E2ETest):
    def setUp(self):
        super().setUp()
        code, _, _ = self.api.api("DELETE", f"{ADB_PATH}/db")  # fixture F's: not part of this
        self.assertEqual(code, 200)
        for i, name in enumerate(NODES):
            self.create("/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"plan": "yes", "topology.kubernetes.io/zone": f"z{i % 3}"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for name in WEB:
            self.create("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"web-{name}", "labels": {"app": "web"}},
                "spec": {"nodeName": name, "containers": [{"name": "c", "image": "nginx"}]}})
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "five"},
                               "spec": {"nodeSelector": {"matchLabels": {"plan": "yes"}},
                                        "maxDisruptedNodes": 5}})
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "maxDisruptions": 2}})

        def seen():
            c = self.ng.cache() or {}
            return (len(c.get("nodes", [])) == 33 and c.get("nodedisruptionbudgets")
                    and [a["name"] for a in c.get("applicationdisruptionbudgets", [])] == ["web"]
                    and sum(p["name"].startswith("web-p") for p in c.get("pods", [])) == len(WEB))
        ok, _ = eventually(seen)
        self.assertTrue(ok, "the cluster never reached nodegate's cache")

    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def cli_plan(self):
        t0 = time.monotonic()
        p = subprocess.run([BINARY, "plan", "--kubeconfig", self.api.kubeconfig, "--nodes", "plan=yes",
                            "--drain-seconds", str(DRAIN_S), "--start", START, "--output", "json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('"level":"info"', p.stderr)  # the listing's progress is not shown
        print(f"\n  nodegate plan --kubeconfig: {time.monotonic() - t0:.2f} s", file=sys.stderr)
        return json.loads(p.stdout)

    def state(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body.get("status", {}) if code == 200 else None

    def pause(self, paused):
        code, body, _ = self.api.api("PATCH", f"{NGC_PATH}/default", {"spec": {"paused": paused}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: [c.get("paused") for c in (self.ng.cache() or {}).get("nodegateconfigs", [])]
                           == [paused])
        self.assertTrue(ok, f"paused={paused} never reached nodegate")

    def settled(self, left):
        """The gate's round after an unpause is written: every request left is Granted, or Pending
        for a reason other than the pause. The Granted ones, or None while it is not."""
        granted = []
        for name in left:
            st = self.state(name)
            if not st:
                return None
            if st.get("state") == "Granted":
                granted.append(name)
                continue
            msgs = " ".join(c.get("message", "") for c in st.get("conditions", []))
            if st.get("state") != "Pending" or not msgs or "paused" in msgs:
                return None
        return sorted(granted)

    def test_Q02_Q03_the_gate_grants_the_waves_the_plan_says(self):
        plan = self.cli_plan()
        waves = [w["nodes"] for w in plan["waves"]]
        print(f"  plan: {len(waves)} waves {waves}", file=sys.stderr)
        self.assertEqual(plan["summary"]["planned"], 30)
        self.assertEqual(plan["summary"]["neverGranted"], 0)
        self.assertGreaterEqual(len(waves), 6)  # the NDB allows 5 at a time
        self.assertTrue(all(len(w) <= 5 and sum(n in WEB for n in w) <= 2 for w in waves), waves)
        self.assertTrue(any(lim["reference"] == {"kind": "ApplicationDisruptionBudget", "namespace": "default",
                                                 "name": "web"}
                            for w in plan["waves"] for lim in w["limitedBy"]), "the ADB must bite")
        self.assertEqual(plan["summary"]["totalSeconds"], len(waves) * DRAIN_S)

        # Q03: the admin endpoint answers the same on the live cache.
        status, data = self.ng.admin("POST", "/v1/plan", {
            "nodeSelector": {"matchLabels": {"plan": "yes"}}, "drainSeconds": DRAIN_S, "start": START})
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data), plan)
        status, data = self.ng.admin("POST", "/v1/plan", {"nodes": NODES, "drainSeconds": DRAIN_S,
                                                         "start": START})
        self.assertEqual((status, json.loads(data)), (200, plan))
        status, data = self.ng.admin("POST", "/v1/plan", {"nodes": NODES, "drainSeconds": 0})
        self.assertEqual(status, 422, data)
        self.assertIn("drainSeconds", json.loads(data)["message"])

        # Q02: the maintenance tool, through the gate.
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"paused": True}})
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodegateconfigs"))
        self.assertTrue(ok)
        for name in NODES:  # created in name order: the plan's order among equals
            self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                  "metadata": {"name": name},
                                  "spec": {"nodeNames": [name], "type": "maintenance",
                                           "requestor": "nodegate-plan", "retry": {"enabled": True}}})
        ok, _ = eventually(lambda: all((self.state(n) or {}).get("state") == "Pending" for n in NODES))
        self.assertTrue(ok, "the requests never waited on the paused gate")
        left, got = list(NODES), []
        t0 = time.monotonic()
        while left and len(got) <= len(waves):
            self.pause(False)
            wave, _ = eventually(lambda: self.settled(left), timeout=WAIT_S)
            self.assertTrue(wave, f"no wave was granted from {left}")
            time.sleep(0.3)  # and it stays that wave: nothing more is granted late
            self.assertEqual(self.settled(left), wave)
            got.append(wave)
            time.sleep(DRAIN_S)  # the drain
            self.pause(True)
            for name in wave:
                code, _, _ = self.api.api("DELETE", f"{ND_PATH}/{name}")
                self.assertEqual(code, 200)
            ok, _ = eventually(lambda: all(self.state(n) is None for n in wave))
            self.assertTrue(ok, "the gate never let the deleted requests go (its finalizer)")
            left = [n for n in left if n not in wave]
        print(f"  gate: {len(got)} waves in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertEqual(got, waves)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
