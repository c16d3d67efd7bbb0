#!/usr/bin/env python3
"""e2e: NodeGateConfig medik8sLeases against the test API server. medik8s's actors
(node-healthcheck-operator, node-maintenance-operator, self-node-remediation) agree on who may
disrupt a node through one Lease per node, medik8s-leases/node-<node>: nodegate grants no node
whose Lease another holder owns, and holds the Lease of every node it grants as holder nodegate
until the request ends. A few seconds in all; runs once, in the sanitizer stage (suite 'once').

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gate import NGC_PATH  # noqa: E402
from test_live_cache import BINARY, E2ETest, ND_PATH, eventually  # noqa: E402

LEASES = "/apis/coordination.k8s.io/v1/namespaces/medik8s-leases/leases"


def micro_now():
    """A MicroTime as medik8s writes renewTime and acquireTime."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


class Medik8sTest(E2ETest):
    def setUp(self):
        super().setUp()
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"medik8sLeases": True}})
        ok, _ = eventually(lambda: self.ng.cache()["nodegateconfigs"])
        self.assertTrue(ok, "the NodeGateConfig never reached nodegate's cache")

    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def nd(self, name, spec):
        return self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                     "metadata": {"name": name}, "spec": spec})

    def status(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body.get("status", {}) if code == 200 else {}

    def wait_state(self, name, state):
        st, _ = eventually(lambda: self.status(name) if self.status(name).get("state") == state else None)
        self.assertIsNotNone(st, f"{name} never became {state}: {self.status(name)}")
        return st

    def evaluate(self, body):
        status, data = self.ng.admin("POST", "/v1/evaluate", body)
        return status, json.loads(data)

    def lease(self, node):
        code, body, _ = self.api.api("GET", f"{LEASES}/node-{node}")
        return body if code == 200 else None

    def holder(self, node):
        return ((self.lease(node) or {}).get("spec") or {}).get("holderIdentity")

    def why(self, name):
        p = subprocess.run([BINARY, "why", name, "-o", "text"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, KUBECONFIG=self.api.kubeconfig, HOME=self.api.home))
        return p.stdout + p.stderr

    def test_a_lease_of_another_holder_blocks_the_node_until_it_is_deleted(self):
        """node-healthcheck holds node1's Lease (an hour, renewed now): a request for node1 stays
        Pending, without retry, naming the node and the holder in its condition, in `nodegate
        why` and in a dry run; nodegate leaves that Lease alone. Deleting the Lease (medik8s
        releasing the node) lets the request be granted, and nodegate then holds the Lease."""
        now = micro_now()
        self.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                             "metadata": {"name": "node-node1", "namespace": "medik8s-leases"},
                             "spec": {"holderIdentity": "node-healthcheck", "leaseDurationSeconds": 3600,
                                      "acquireTime": now, "renewTime": now, "leaseTransitions": 0}})
        ok, _ = eventually(lambda: self.ng.cache()["leases"])
        self.assertTrue(ok, "the Lease never reached nodegate's cache")
        self.nd("m8s-a", {"nodeNames": ["node1"]})
        st = self.wait_state("m8s-a", "Pending")
        msg = [c for c in st["conditions"] if c["type"] == "Granted"][0]["message"]
        self.assertIn("node node1 is held by node-healthcheck: Lease medik8s-leases/node-node1 until", msg)
        self.assertIn("node node1 is held by node-healthcheck", self.why("m8s-a"))
        code, d = self.evaluate({"spec": {"nodeNames": ["node1"]}})
        self.assertEqual((code, d["state"]), (200, "Pending"), d)
        self.assertIn("held by node-healthcheck", d.get("reason", "") + d.get("message", ""), d)
        self.assertEqual(self.holder("node1"), "node-healthcheck")
        t0 = time.monotonic()
        code, _, _ = self.api.api("DELETE", f"{LEASES}/node-node1")
        self.assertEqual(code, 200)
        self.wait_state("m8s-a", "Granted")
        print(f"\n  Lease deleted -> Granted in {time.monotonic() - t0:.2f} s", file=sys.stderr)
        ok, _ = eventually(lambda: self.holder("node1") == "nodegate")
        self.assertTrue(ok, f"nodegate does not hold node1's Lease: {self.lease('node1')}")

    def test_a_grant_holds_the_node_lease_and_its_end_releases_it(self):
        """A request for node2 is granted: nodegate creates medik8s-leases/node-node2 as medik8s's
        lease manager would (holder nodegate, an hour, acquired and renewed now, owned by the
        Node), so medik8s's actors leave node2 alone; deleting the request deletes the Lease."""
        self.nd("m8s-b", {"nodeNames": ["node2"]})
        self.wait_state("m8s-b", "Granted")
        ok, _ = eventually(lambda: self.holder("node2") == "nodegate")
        self.assertTrue(ok, f"no Lease held by nodegate for node2: {self.lease('node2')}")
        lease = self.lease("node2")
        spec = lease["spec"]
        self.assertEqual(spec["leaseDurationSeconds"], 3600)
        self.assertTrue(spec["acquireTime"] and spec["renewTime"], spec)
        code, node, _ = self.api.api("GET", "/api/v1/nodes/node2")
        self.assertEqual(code, 200)
        self.assertEqual([(o["kind"], o["name"], o["uid"]) for o in lease["metadata"].get("ownerReferences", [])],
                         [("Node", "node2", node["metadata"]["uid"])])
        code, _, _ = self.api.api("DELETE", f"{ND_PATH}/m8s-b")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: self.lease("node2") is None)
        self.assertTrue(ok, f"node2's Lease outlived the request: {self.lease('node2')}")


if __name__ == "__main__":
    unittest.main()
