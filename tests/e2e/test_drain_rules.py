#!/usr/bin/env python3
"""e2e: drain rules (docs/drainer.md "Drain rules") against the test API server: one node whose
pods drain in three order batches, with a pod skipped by its cluster.x-k8s.io/drain label, one
skipped by a NodeGateConfig rule's namespaceSelector and one the drain waits for
(WaitCompleted) without evicting it.

The harness is test_drain.py's (the test API server, `nodegate serve` as the eviction webhook
and gate, `nodegate drain`), with the fixture tests/apiserver/fixtures/drain-rules.yaml and the
kubelet stand-in honouring grace periods (1 s per pod), so a batch is seen terminating before it
is gone. Batches are judged from one pod watch, whose events are totally ordered: no pod of a
batch starts terminating before every pod of the batch before it is deleted. Every wait is
bounded; no duration is asserted."""
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_drain import (BINARY, ND_PATH, ROOT, WAIT_S, DrainTest, PodWatch, drain_setup,  # noqa: E402
                        eventually, log)

RULES_FIXTURE = os.path.join(ROOT, "tests", "apiserver", "fixtures", "drain-rules.yaml")

# The batches the rules make, in the order they must leave.
BATCHES = (("shop/front-a", "shop/front-b"),  # order -10: the request's rule over the config's 30
           ("shop/mid-a", "shop/mid-b"),      # order 0: no rule matches them
           ("shop/store-a",))                 # order 20: NodeGateConfig's rule
SKIPPED = ("shop/agent", "infra/monitor")     # the label; the config's namespaceSelector rule
REPORT = "shop/report"                        # WaitCompleted (the request's rule), no controller

NGC_RULES = [
    {"podSelector": {"matchLabels": {"tier": "front"}}, "behavior": "Drain", "order": 30},
    {"podSelector": {"matchLabels": {"tier": "storage"}}, "behavior": "Drain", "order": 20},
    {"namespaceSelector": {"matchLabels": {"team": "infra"}}, "behavior": "Skip"},
]
ND_RULES = [
    {"podSelector": {"matchLabels": {"role": "report"}}, "behavior": "WaitCompleted"},
    {"podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]},
     "behavior": "Drain", "order": -10},
]


class DrainRulesTest(DrainTest):
    FIXTURES = (RULES_FIXTURE,)

    def leaving(self, events):
        """{pod: (index of its first terminating or deleted event, index of its deletion)}."""
        out = {}
        for i, (_, typ, o) in enumerate(events):
            ref = f"{o['metadata'].get('namespace')}/{o['metadata'].get('name')}"
            first, gone = out.get(ref, (None, None))
            if first is None and (typ == "DELETED" or o["metadata"].get("deletionTimestamp")):
                first = i
            if typ == "DELETED":
                gone = i
            out[ref] = (first, gone)
        return out

    def cli(self, *args):
        """nodegate ARGS against the test API server."""
        return subprocess.run([BINARY] + list(args), env=dict(os.environ, KUBECONFIG=self.api.kubeconfig),
                              capture_output=True, text=True, timeout=60)

    def message(self, name):
        return (self.condition(self.get_nd(name)) or {}).get("message", "")

    @drain_setup(kubelet="grace", ngc_drain={"rules": NGC_RULES})
    def test_pods_drain_in_order_batches_skip_and_wait_completed(self):
        # An order where nothing is evicted means nothing: refused, naming the rule.
        code, body, _ = self.api.api("POST", ND_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "bad"},
            "spec": {"nodeNames": ["node1"], "drain": {"rules": [{"behavior": "Skip", "order": 1}]}}})
        self.assertEqual(code, 422, body)
        self.assertIn("spec.drain.rules[0]", json.dumps(body))
        self.assertIn("order is only allowed with behavior Drain", json.dumps(body))
        self.watch = PodWatch(self.api)
        self.nd("rules", {"rules": ND_RULES})
        # The first batch is in progress, with the rest named.
        first, _ = eventually(lambda: re.search(r"batch order -10: \d pods? left \(2 more batches "
                                                r"after it\)", self.message("rules"))
                              and self.message("rules"), WAIT_S, 0.02)
        self.assertTrue(first, "the first batch was never shown:" + self.describe("rules"))
        log(f"rules: {first!r}")
        self.assertIn("1 pod waited for to complete (wait-completed): shop/report", first)
        self.assertIn("2 pods skipped", first)
        # `nodegate why` names the batch in progress too, and each pod's order.
        doc = json.loads(self.cli("why", "rules", "-o", "json").stdout or "{}")
        orders = {f"{p['namespace']}/{p['name']}": p.get("order") for p in doc.get("pods", [])}
        if orders.get("shop/store-a") is not None:  # unless it is gone already
            self.assertEqual(orders["shop/store-a"], 20, doc)
        self.assertIn("wait-completed", doc.get("drainBatch", ""), doc)

        # Every Drain pod goes; then the drain waits for the report alone.
        def waits_for_report():
            m = self.message("rules")
            return m.startswith("attempt 1: 1 pod waited for to complete (wait-completed): "
                                "shop/report") and m
        msg, _ = eventually(waits_for_report, 2 * WAIT_S, 0.05)
        self.assertTrue(msg, "the drain never came to wait for the report alone:" + self.describe("rules"))
        self.assertEqual(msg, "attempt 1: 1 pod waited for to complete (wait-completed): shop/report; "
                              "2 pods skipped")
        self.assertEqual(self.reason("rules"), "Draining")
        self.assertTrue(self.stays(lambda: self.present(REPORT) and self.reason("rules") == "Draining", 1),
                        "the report must stay, and the drain wait for it:" + self.describe("rules"))
        # The report completes: the drain is done, with the skipped pods still running.
        self.patch("/api/v1/namespaces/shop/pods/report/status", {"status": {"phase": "Succeeded"}})
        nd = self.wait_drained("rules")
        self.assert_pods(present=SKIPPED + (REPORT,), absent=sum(BATCHES, ()))
        self.assertEqual(nd["status"]["drain"].get("remainingPods"), 0, nd["status"])

        evicted = self.evicted_refs()
        self.assertEqual(evicted, sorted(sum(BATCHES, ())), "only the Drain pods are evicted")
        events = self.watch.snapshot()
        seen = self.leaving(events)
        for ref in SKIPPED + (REPORT,):
            self.assertEqual(seen.get(ref, (None, None)), (None, None), f"{ref} was asked to leave")
        # Batches never overlap: each starts after the one before it is entirely gone.
        for before, after in zip(BATCHES, BATCHES[1:]):
            last_gone = max(seen[p][1] for p in before)
            first_leaving = min(seen[p][0] for p in after)
            self.assertLess(last_gone, first_leaving,
                            f"{after} began leaving (event {first_leaving}) before {before} was gone "
                            f"(event {last_gone})")
        log("rules: batches left in order: " + ", ".join(
            "/".join(p.split("/")[1] for p in b) for b in BATCHES))


if __name__ == "__main__":
    unittest.main()
