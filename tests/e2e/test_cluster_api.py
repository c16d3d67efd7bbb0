#!/usr/bin/env python3
"""e2e: Cluster API gating (docs/integrations/cluster-api.md). The test API server serves
cluster.x-k8s.io Machines (tests/e2e/cluster-api-crds.json); a Cluster API stand-in, a thread of
this test, follows the documented Machine deletion phases for every Machine being deleted: it
waits while any pre-drain.delete.hook.machine.cluster.x-k8s.io/* annotation is on it, cordons the
node and evicts its pods, waits for its volumes to detach and for pre-terminate hooks, deletes
the Node and removes the Machine's finalizer. nodegate serve (the gate) is the only other actor.

Under a NodeDisruptionBudget of one node, a rollout deletes five Machines at once: the
stand-in never drains two nodes at once, never finds a pre-drain hook gone while the Machine's
request is not Granted, all five finish, and no cluster-api request is left. A Machine no
budget covers never gets the hook.

Every wait is bounded; durations are printed, never asserted.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import (CRDS, ND_PATH, WAIT_S, E2ETest, Nodegate, ServerProcess,  # noqa: E402
                             eventually, make_client_ca)

MACHINE_CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster-api-crds.json")
NS = "capi"
MACHINES = f"/apis/cluster.x-k8s.io/v1beta1/namespaces/{NS}/machines"
NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
PRE_DRAIN = "pre-drain.delete.hook.machine.cluster.x-k8s.io/"
PRE_TERMINATE = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/"
HOOK = PRE_DRAIN + "nodegate"
FINALIZER = "machine.cluster.x-k8s.io/stand-in"  # qualified, as the test API server requires
ROLLOUT = [f"md-0-{i}" for i in range(5)]
TIMEOUT_S = 4 * WAIT_S


def log(msg):
    print("\n  " + msg, file=sys.stderr)


class StandIn(threading.Thread):
    """Cluster API's Machine controller, for Machines being deleted: one pass over them every
    20 ms, each Machine moved one phase at a time. Records what a user would check: the nodes
    drained at once (from cordon to Node deletion) and any hook found gone while its request was
    not Granted."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api = api
        self.stop = threading.Event()
        self.draining = set()
        self.most_at_once = 0
        self.done = []
        self.violations = []
        self.phase = {}

    def request_state(self, machine):
        code, nd, _ = self.api.api("GET", f"{ND_PATH}/capi-{NS}.{machine}")
        return (nd.get("status") or {}).get("state", "") if code == 200 else f"absent ({code})"

    def step(self, m):
        name = m["metadata"]["name"]
        node = ((m.get("status") or {}).get("nodeRef") or {}).get("name")
        ann = m["metadata"].get("annotations") or {}
        phase = self.phase.get(name, "preDrain")
        if phase == "preDrain":
            if any(k.startswith(PRE_DRAIN) for k in ann):
                return
            # The hook is gone: nodegate must have had a grant for this node first.
            state = self.request_state(name)
            if state != "Granted":
                self.violations.append(f"{name}: pre-drain hook gone while its request is {state}")
            self.draining.add(node)
            self.most_at_once = max(self.most_at_once, len(self.draining))
            self.api.api("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}},
                         ctype="application/merge-patch+json")
            _, pods, _ = self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName={node}")
            for p in pods["items"]:
                pns, pname = p["metadata"]["namespace"], p["metadata"]["name"]
                code, body, _ = self.api.api(
                    "POST", f"/api/v1/namespaces/{pns}/pods/{pname}/eviction",
                    {"apiVersion": "policy/v1", "kind": "Eviction",
                     "metadata": {"name": pname, "namespace": pns}})
                if code not in (200, 201):
                    self.violations.append(f"{name}: eviction of {pns}/{pname} answered {code}: {body}")
            self.phase[name] = "volumes"
        elif phase == "volumes":
            _, vas, _ = self.api.api("GET", "/apis/storage.k8s.io/v1/volumeattachments")
            if not any(v["spec"].get("nodeName") == node for v in vas["items"]):
                self.phase[name] = "preTerminate"
        elif phase == "preTerminate":
            if any(k.startswith(PRE_TERMINATE) for k in ann):
                return
            self.api.api("DELETE", f"/api/v1/nodes/{node}")
            self.draining.discard(node)
            self.api.api("PATCH", f"{MACHINES}/{name}", {"metadata": {"finalizers": None}},
                         ctype="application/merge-patch+json")
            self.phase[name] = "gone"
            self.done.append(name)

    def run(self):
        while not self.stop.is_set():
            code, ms, _ = self.api.api("GET", MACHINES)
            for m in ms.get("items", []) if code == 200 else []:
                if m["metadata"].get("deletionTimestamp"):
                    self.step(m)
            time.sleep(0.02)


class ClusterAPITest(E2ETest):
    def setUp(self):
        # E2ETest's setUp with the Machine CRD installed and no fixture F: the cluster is made
        # here, before nodegate starts.
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="ng-e2e-capi-")
        ca, crt, key = make_client_ca(self.tmp)
        self.api = ServerProcess(fixtures=CRDS + [MACHINE_CRDS],
                                 extra_args=["--webhook-client-cert", f"{crt}:{key}"])
        self.api.start()
        self.standin = None
        try:
            self.make_cluster()
            self.ng = Nodegate(self.api, self.tmp, client_ca=ca)
            self.ng.register_webhook()
        except BaseException:
            if getattr(self, "ng", None):
                self.ng.stop()
            self.api.stop()
            raise

    def tearDown(self):
        if self.standin:
            self.standin.stop.set()
            self.standin.join(10)
        super().tearDown()

    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def machine(self, name, node, pool):
        self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node, "labels": {"pool": pool}}})
        code, body, _ = self.api.api("PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
             "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.create(f"/api/v1/namespaces/{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"app-{node}", "namespace": NS, "labels": {"app": "web"}}, "spec": {
            "nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}})
        self.create(MACHINES, {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "metadata": {
            "name": name, "namespace": NS, "finalizers": [FINALIZER],
            "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
                                 "name": "md-0-7f9c", "uid": "00000000-0000-0000-0000-00000000000a"}]},
            "spec": {"clusterName": "prod"}})
        code, body, _ = self.api.api("PATCH", f"{MACHINES}/{name}/status", {"status": {
            "phase": "Running", "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": node}}},
            ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)

    def make_cluster(self):
        self.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        # Pending requests are decided again every second, so the queue moves as grants end.
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"retry": {
                                   "initialIntervalSeconds": 1, "maxIntervalSeconds": 1}}})
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "workers"}, "spec": {
                                   "nodeSelector": {"matchLabels": {"pool": "workers"}},
                                   "maxDisruptedNodes": 1}})
        for i, name in enumerate(ROLLOUT):
            self.machine(name, f"worker-{i}", "workers")
        self.machine("spare", "spare-0", "unbudgeted")

    def annotations(self, name):
        code, m, _ = self.api.api("GET", f"{MACHINES}/{name}")
        return (m["metadata"].get("annotations") or {}) if code == 200 else None

    def capi_requests(self):
        _, nds, _ = self.api.api("GET", f"{ND_PATH}?labelSelector=nodegate.io/cluster-api%3Dtrue")
        return nds["items"]

    def test_rollout_of_five_machines_under_a_budget_of_one(self):
        t0 = time.monotonic()
        hooked, took = eventually(lambda: all(HOOK in (self.annotations(n) or {}) for n in ROLLOUT),
                                  TIMEOUT_S)
        self.assertTrue(hooked, {n: self.annotations(n) for n in ROLLOUT})
        log(f"hooks on the 5 covered Machines after {took:.2f}s")
        self.assertNotIn(HOOK, self.annotations("spare"), "a Machine no budget covers got the hook")

        self.standin = StandIn(self.api)
        self.standin.start()
        for name in ROLLOUT:  # a rollout with maxUnavailable 5: all at once
            code, body, _ = self.api.api("DELETE", f"{MACHINES}/{name}")
            self.assertIn(code, (200, 202), body)

        # While the first is granted, the others wait: Pending, hook still on, and told so.
        def queued():
            pending = [nd for nd in self.capi_requests()
                       if (nd.get("status") or {}).get("state") == "Pending"]
            return pending if len(pending) >= 3 else None
        pending, _ = eventually(queued, TIMEOUT_S)
        self.assertTrue(pending, self.capi_requests())
        for nd in pending:
            machine = nd["metadata"]["annotations"]["nodegate.io/cluster-api-machine"].split("/")[1]
            self.assertEqual(nd["spec"]["type"], "cluster-api")
            self.assertEqual(nd["spec"]["requestor"], f"machineset.{NS}.md-0-7f9c")
            self.assertTrue(nd["spec"]["retry"]["enabled"])
            self.assertNotIn("drain", nd["spec"])
            ann = self.annotations(machine)
            if ann is not None and (nd.get("status") or {}).get("state") == "Pending":
                self.assertIn(HOOK, ann, f"{machine}'s hook is gone while {nd['metadata']['name']} is Pending")

        def waiting_event():
            _, evs, _ = self.api.api("GET", f"/api/v1/namespaces/{NS}/events")
            return [e for e in evs["items"] if e["involvedObject"].get("kind") == "Machine"
                    and e["message"].startswith("waiting for nodegate's grant: capi-")]
        seen, _ = eventually(waiting_event, TIMEOUT_S)
        self.assertTrue(seen, "no Event says a Machine waits for its grant")

        finished, took = eventually(lambda: len(self.standin.done) == len(ROLLOUT), TIMEOUT_S * 3)
        self.assertTrue(finished, f"done: {self.standin.done}, requests: {self.capi_requests()}")
        log(f"rollout of 5 finished {took:.2f}s after the deletes; at most "
            f"{self.standin.most_at_once} node(s) drained at once")
        self.assertEqual(self.standin.violations, [])
        self.assertEqual(self.standin.most_at_once, 1)
        gone, _ = eventually(lambda: self.capi_requests() == [], TIMEOUT_S)
        self.assertTrue(gone, f"cluster-api requests left: {[n['metadata']['name'] for n in self.capi_requests()]}")
        _, ms, _ = self.api.api("GET", MACHINES)
        self.assertEqual([m["metadata"]["name"] for m in ms["items"]], ["spare"])
        self.assertNotIn(HOOK, self.annotations("spare"))
        log(f"whole scenario {time.monotonic() - t0:.2f}s")

    def test_hook_follows_budgets_and_the_switch(self):
        def hooks():
            return {n for n in ROLLOUT + ["spare"] if HOOK in (self.annotations(n) or {})}
        ok, _ = eventually(lambda: hooks() == set(ROLLOUT), TIMEOUT_S)
        self.assertTrue(ok, hooks())
        code, body, _ = self.api.api("PATCH", f"{NGC_PATH}/default", {"spec": {"clusterAPI": {"enabled": False}}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: hooks() == set(), TIMEOUT_S)
        self.assertTrue(ok, f"spec.clusterAPI.enabled false, hooks left on {hooks()}")
        code, body, _ = self.api.api("PATCH", f"{NGC_PATH}/default", {"spec": {"clusterAPI": {"enabled": True}}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: hooks() == set(ROLLOUT), TIMEOUT_S)
        self.assertTrue(ok, hooks())
        # Another owner's hook is never touched, and the budget gone takes only ours away.
        code, body, _ = self.api.api("PATCH", f"{MACHINES}/md-0-0", {"metadata": {"annotations": {
            PRE_DRAIN + "other-tool": "ops"}}}, ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        code, body, _ = self.api.api("DELETE", f"{NDB_PATH}/workers")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: hooks() == set(), TIMEOUT_S)
        self.assertTrue(ok, f"no budget covers them, hooks left on {hooks()}")
        self.assertEqual(self.annotations("md-0-0").get(PRE_DRAIN + "other-tool"), "ops")


if __name__ == "__main__":
    unittest.main()
