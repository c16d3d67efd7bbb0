#!/usr/bin/env python3
"""e2e: the gate grants and rejects NodeDisruptions (shared/acceptance/gate.md) against the test
API server: nodegate watches it as its service account, holds the lease, and writes each
decision to the request's status. Every wait is bounded (10 s; the scenarios allow 2-5 s on
loopback); measured delays are printed, not asserted.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import http.client
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import E2ETest, ND_PATH, allowed, denied, eventually, evict  # noqa: E402

NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
ON_TEST1 = {"nodeSelector": {"matchLabels": {"testselect": "test1"}}}


ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"


class GateTest(E2ETest):
    def setUp(self):
        super().setUp()
        # Fixture F of the gate scenarios has no budget: drop the eviction scenarios' ADB.
        code, _, _ = self.api.api("DELETE", f"{ADB_PATH}/db")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: not self.ng.cache()["applicationdisruptionbudgets"])
        self.assertTrue(ok)

    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def nd(self, name, spec):
        return self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                     "metadata": {"name": name}, "spec": spec})

    def ndb(self, name, spec):
        return self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                                      "metadata": {"name": name}, "spec": spec})

    def status(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body.get("status", {}) if code == 200 else {}

    def state_is(self, name, state):
        st = self.status(name)
        return st if st.get("state") == state else None

    def wait_state(self, name, state):
        t0 = time.monotonic()
        st, _ = eventually(lambda: self.state_is(name, state))
        self.assertIsNotNone(st, f"{name} never became {state}: {self.status(name)}")
        return st, time.monotonic() - t0

    def events(self, name):
        code, body, _ = self.api.api("GET", "/api/v1/namespaces/default/events")
        return [e for e in body.get("items", []) if e.get("involvedObject", {}).get("name") == name]

    def test_G01_no_budgets_grants_with_an_event(self):
        # Timed from before the create: the gate may read the watch event before the create's
        # own answer reaches this client (under valgrind it does), so its share, which starts
        # at that read, lies inside this span and not inside one started after the answer.
        t0 = time.monotonic()
        self.nd("g01", ON_TEST1)
        st, _ = self.wait_state("g01", "Granted")
        took = time.monotonic() - t0
        print(f"\n  create -> Granted in {took:.3f} s", file=sys.stderr)
        self.assertEqual(st["disruptedNodes"], ["node1", "node2"])
        self.assertTrue(st.get("grantedAt"))
        ok, _ = eventually(lambda: any(e["reason"] == "Granted" for e in self.events("g01")))
        self.assertTrue(ok, "a Granted event must be recorded")
        # nodegate's own share of that latency: one grant at a first decision observed.
        self.assertEqual(self.ng.metric("nodegate_gate_grant_latency_seconds_count"), 1)
        own = self.ng.metric("nodegate_gate_grant_latency_seconds_sum")
        self.assertGreater(own, 0)
        self.assertLess(own, took)
        print(f"  of which nodegate's own share (watch read -> write sent): {own * 1000:.2f} ms",
              file=sys.stderr)

    def test_crd_schema_defaults_and_rejects_bad_specs(self):
        # The served CRD schema defaults omitted fields and refuses malformed specs with a
        # 422 that names the field, before the gate ever sees them.
        body = self.nd("schema-ok", {"nodeNames": ["node1"]})
        self.assertEqual(body["spec"]["priority"], 0)
        for spec, field in (({"nodeNames": ["node1"], "priority": "high"}, "spec.priority"),
                            ({"nodeNames": ["node1"], "duration": "10 minutes"}, "spec.duration"),
                            ({"nodeNames": ["node1"], "requestor": "Not_Valid"}, "spec.requestor")):
            code, resp, _ = self.api.api("POST", ND_PATH, {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                "metadata": {"name": "schema-bad"}, "spec": spec})
            self.assertEqual(code, 422, resp)
            self.assertEqual(resp.get("reason"), "Invalid")
            self.assertIn(field, resp.get("message", ""))

    def evaluate(self, body):
        status, data = self.ng.admin("POST", "/v1/evaluate", body)
        return status, json.loads(data)

    def test_evaluate_is_a_dry_run_against_the_live_cluster(self):
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=1))
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodedisruptionbudgets"))
        self.assertTrue(ok)
        code, d = self.evaluate({"spec": {"nodeNames": ["node1"]}})
        self.assertEqual((code, d["state"], d["disruptedNodes"]), (200, "Granted", ["node1"]))
        code, d = self.evaluate({"spec": ON_TEST1})
        self.assertEqual((code, d["state"]), (200, "Rejected"))
        self.assertIn("NodeDisruptionBudget pool", d["disruptedDisruptionBudgets"][0]["reason"])
        self.assertTrue(d.get("unsatisfiable"), d)  # two nodes under a budget of one, ever
        # It asked for nothing: no request exists.
        code, body, _ = self.api.api("GET", ND_PATH)
        self.assertEqual(body["items"], [])
        # It sees the grants the gate made.
        self.nd("real", {"nodeNames": ["node2"]})
        self.wait_state("real", "Granted")
        ok, _ = eventually(lambda: self.evaluate({"spec": {"nodeNames": ["node1"]}})[1]["state"] == "Rejected")
        self.assertTrue(ok, "a dry run must count the nodes granted since")
        code, d = self.evaluate({"spec": {"nodeSelector": {}}})
        self.assertEqual(code, 422)
        self.assertIn("would select every node", d["message"])

    def test_G02_empty_selection_is_rejected(self):
        self.nd("g02", {"nodeSelector": {"matchLabels": {"testselect": "nope"}}})
        st, _ = self.wait_state("g02", "Rejected")
        self.assertIn("no node matched", st["conditions"][0]["message"])

    def test_G04_G05_full_budget_rejects_or_waits_then_grants_on_change(self):
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=0))
        self.nd("g04", ON_TEST1)
        st, _ = self.wait_state("g04", "Rejected")
        entries = st["disruptedDisruptionBudgets"]
        self.assertEqual(len(entries), 1)
        self.assertEqual(entries[0]["reference"], {"kind": "NodeDisruptionBudget", "name": "pool"})
        self.assertFalse(entries[0]["ok"])
        self.assertIn("which allows at most 0", entries[0]["reason"])
        # G05 with a budget that is full (held by another grant), not one the request can never
        # fit (L06): it waits on its backoff.
        code, body, _ = self.api.api("PATCH", f"{NDB_PATH}/pool", {"spec": {"maxDisruptedNodes": 1}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.nd("g05-holder", {"nodeNames": ["node1"]})
        self.wait_state("g05-holder", "Granted")
        self.nd("g05", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        st, _ = self.wait_state("g05", "Pending")
        self.assertTrue(st.get("nextRetryDate"))
        t0 = time.monotonic()
        code, body, _ = self.api.api("PATCH", f"{NDB_PATH}/pool", {"spec": {"maxDisruptedNodes": 2}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.wait_state("g05", "Granted")
        print(f"\n  budget raised -> Granted in {time.monotonic() - t0:.3f} s (event-driven)",
              file=sys.stderr)

    def test_L06_a_request_that_can_never_fit_says_so(self):
        """L06: two nodes under a budget of one. Without retry: Rejected at once, saying so.
        With retry: Pending with Unsatisfiable=True and no nextRetryDate, not rewritten while
        nothing changes (retries every second would be, here); the budget raised to 2, it is
        Granted and Unsatisfiable turns False."""
        want = ("needs 2 nodes of NodeDisruptionBudget pool, which allows at most 1: "
                "raise maxDisruptedNodes to 2 or split the request")

        def unsatisfiable(st):
            return [c for c in st.get("conditions", []) if c["type"] == "Unsatisfiable"]
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"},
                               "spec": {"retry": {"initialIntervalSeconds": 1, "maxIntervalSeconds": 1}}})
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=1))
        ok, _ = eventually(lambda: self.ng.cache()["nodegateconfigs"] and self.ng.cache()["nodedisruptionbudgets"])
        self.assertTrue(ok)
        self.nd("l06-once", ON_TEST1)
        st, _ = self.wait_state("l06-once", "Rejected")
        self.assertEqual(st["conditions"][0]["message"], want)
        self.assertEqual([(c["status"], c["reason"]) for c in unsatisfiable(st)], [("True", "ExceedsBudget")])
        self.nd("l06", dict(ON_TEST1, retry={"enabled": True}))
        st, _ = self.wait_state("l06", "Pending")
        cond = unsatisfiable(st)
        self.assertEqual([(c["status"], c["reason"], c["message"]) for c in cond], [("True", "ExceedsBudget", want)])
        self.assertFalse(st.get("nextRetryDate"), st)
        ok, _ = eventually(lambda: any(e["reason"] == "Unsatisfiable" for e in self.events("l06")))
        self.assertTrue(ok, "an Unsatisfiable event must be recorded")
        # The gate's finalizer comes in a write of its own after the first decision: the one
        # write besides it (slow under valgrind), taken before the request is watched for more.
        def with_finalizer():
            o = self.api.api("GET", f"{ND_PATH}/l06")[1]
            return o if "nodegate.io/gate" in (o["metadata"].get("finalizers") or []) else None
        before, _ = eventually(with_finalizer)
        self.assertTrue(before, "a Pending request carries the finalizer nodegate.io/gate")
        time.sleep(2)
        after = self.api.api("GET", f"{ND_PATH}/l06")[1]
        self.assertEqual(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
                         "an unsatisfiable request must not be rewritten; before:\n"
                         f"{json.dumps(before, indent=1)}\nafter:\n{json.dumps(after, indent=1)}")
        code, body, _ = self.api.api("PATCH", f"{NDB_PATH}/pool", {"spec": {"maxDisruptedNodes": 2}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        st, took = self.wait_state("l06", "Granted")
        self.assertEqual([(c["status"], c["reason"]) for c in unsatisfiable(st)], [("False", "WithinBudgets")])
        print(f"\n  budget raised -> Granted in {took:.3f} s", file=sys.stderr)

    def test_N04_do_not_disrupt_holds_evictions_and_requests_until_removed(self):
        """N04: pod1 (node1) annotated nodegate.io/do-not-disrupt through the API: its eviction is
        denied with why, a request for node1 waits naming it; removing the annotation lets both
        go. An override type is granted at once."""
        def annotate(value):
            code, body, _ = self.api.api("PATCH", "/api/v1/namespaces/default/pods/pod1",
                                         {"metadata": {"annotations": {"nodegate.io/do-not-disrupt": value}}},
                                         ctype="application/merge-patch+json")
            self.assertEqual(code, 200, body)
        annotate("true")
        ok, _ = eventually(lambda: denied(self.api, "pod1"))
        self.assertTrue(ok, "the annotated pod was evicted")
        _, body, _ = evict(self.api, "pod1")
        self.assertIn("the pod has nodegate.io/do-not-disrupt", json.dumps(body))
        self.nd("n04", {"nodeNames": ["node1"], "retry": {"enabled": True}})
        st, _ = self.wait_state("n04", "Pending")
        granted = [c for c in st.get("conditions", []) if c.get("type") == "Granted"]
        self.assertIn("pod default/pod1 on node node1 has nodegate.io/do-not-disrupt", granted[0]["message"])
        # An override type: granted although pod1 still says no, and pod1 may go.
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"},
                               "spec": {"doNotDisruptOverrideTypes": ["emergency"]}})
        self.nd("n04-urgent", {"nodeNames": ["node2"], "type": "emergency"})
        self.wait_state("n04-urgent", "Granted")
        # The annotation removed ("false" reads as absent): the eviction and the request go.
        t0 = time.monotonic()
        annotate("false")
        ok, _ = eventually(lambda: allowed(self.api, "pod1"))
        self.assertTrue(ok, "pod1 still denied after its annotation went")
        self.wait_state("n04", "Granted")
        print(f"\n  annotation removed -> Granted in {time.monotonic() - t0:.2f} s (the request's retry)",
              file=sys.stderr)

    def test_T03_two_zones_are_never_granted_together(self):
        """T03: fixture F's nodes in three zones, an NDB with maxDisruptedDomains 1: of two requests
        in two zones made together, one is Granted and the other waits naming the limit; deleting
        the first lets the second through."""
        for node, zone in (("node1", "a"), ("node2", "b"), ("node3", "c")):
            code, body, _ = self.api.api("PATCH", f"/api/v1/nodes/{node}",
                                         {"metadata": {"labels": {"topology.kubernetes.io/zone": zone}}},
                                         ctype="application/merge-patch+json")
            self.assertEqual(code, 200, body)
        self.ndb("zones", {"nodeSelector": {}, "topologyKey": "topology.kubernetes.io/zone",
                           "maxDisruptedDomains": 1, "countUnavailableNodes": False})
        ok, _ = eventually(lambda: self.ng.cache()["nodedisruptionbudgets"] and all(
            "topology.kubernetes.io/zone" in n["labels"] for n in self.ng.cache()["nodes"]))
        self.assertTrue(ok, "the zones and the budget never reached nodegate's cache")
        self.nd("t03-a", {"nodeNames": ["node1"], "retry": {"enabled": True}})
        self.nd("t03-b", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        ok, _ = eventually(lambda: sorted(self.status(n).get("state", "") for n in ("t03-a", "t03-b"))
                           == ["Granted", "Pending"])
        self.assertTrue(ok, f"{self.status('t03-a')} {self.status('t03-b')}")
        first, second = ("t03-a", "t03-b") if self.status("t03-a")["state"] == "Granted" else ("t03-b", "t03-a")
        waiting = [c for c in self.status(second)["conditions"] if c["type"] == "Granted"][0]
        self.assertIn("2 topology.kubernetes.io/zone domains would be disrupted at once", waiting["message"])
        code, _, _ = self.api.api("DELETE", f"{ND_PATH}/{first}")
        self.assertEqual(code, 200)
        self.wait_state(second, "Granted")

    def test_P02_pdb_aware_grants_never_grant_past_a_pdb(self):
        """P02: the only two replicas of a PodDisruptionBudget that allows one disruption, on
        node1 and node2 (the API server computes its status); with respectPodDisruptionBudgets,
        two requests for the two nodes made together are never both Granted, and the one held
        names the PodDisruptionBudget."""
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"respectPodDisruptionBudgets": True}})
        for name, node in (("cache-0", "node1"), ("cache-1", "node2")):
            self.create("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "cache"}},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
            code, body, _ = self.api.api("PATCH", f"/api/v1/namespaces/default/pods/{name}/status", {
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                ctype="application/merge-patch+json")
            self.assertEqual(code, 200, body)
        self.create("/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "cache"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "cache"}}}})
        ok, _ = eventually(lambda: any(p["name"] == "cache" and p["disruptionsAllowed"] == 1
                                       for p in self.ng.cache()["poddisruptionbudgets"]))
        self.assertTrue(ok, f"the PodDisruptionBudget never reached nodegate: {self.ng.cache()['poddisruptionbudgets']}")
        self.nd("p02-a", {"nodeNames": ["node1"], "retry": {"enabled": True}})
        self.nd("p02-b", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        ok, _ = eventually(lambda: sorted(self.status(n).get("state", "") for n in ("p02-a", "p02-b"))
                           == ["Granted", "Pending"])
        self.assertTrue(ok, f"{self.status('p02-a')} {self.status('p02-b')}")
        held = "p02-b" if self.status("p02-a")["state"] == "Granted" else "p02-a"
        failing = [v for v in self.status(held)["disruptedDisruptionBudgets"] if not v["ok"]]
        self.assertEqual([v["reference"] for v in failing],
                         [{"kind": "PodDisruptionBudget", "namespace": "default", "name": "cache"}])
        self.assertIn("disruptionsAllowed 1", failing[0]["reason"])
        for _ in range(5):  # and it stays held while the other is Granted
            time.sleep(0.2)
            self.assertEqual(self.status(held).get("state"), "Pending")

    def test_G06_deadline_passed(self):
        self.nd("g06", {"nodeNames": ["node3"], "retry": {"enabled": True, "deadline": "2020-01-01T00:00:00Z"}})
        st, _ = self.wait_state("g06", "Rejected")
        self.assertIn("deadline passed", st["conditions"][0]["message"])

    def test_G13_paused_then_unpaused(self):
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"paused": True}})
        ok, _ = eventually(lambda: self.ng.cache() and self.ng.cache()["nodegateconfigs"])
        self.nd("g13", {"nodeNames": ["node3"], "retry": {"enabled": True}})
        st, _ = self.wait_state("g13", "Pending")
        self.assertIn("paused", st["conditions"][0]["message"])
        code, _, _ = self.api.api("PATCH", f"{NGC_PATH}/default", {"spec": {"paused": False}},
                                  ctype="application/merge-patch+json")
        self.assertEqual(code, 200)
        self.wait_state("g13", "Granted")

    def test_G14_A08_deleting_a_grant_releases_its_nodes(self):
        # The app (pod1 on node1, pod2 on node2) allows one disruption.
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "db", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "maxDisruptions": 1}})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod2", "namespace": "default",
                                                               "labels": {"app": "db"}},
               "spec": {"nodeName": "node2", "containers": [{"name": "c", "image": "postgres"}]}}
        self.create("/api/v1/namespaces/default/pods", pod)
        ok, _ = eventually(lambda: any(p["name"] == "pod2" for p in self.ng.cache()["pods"]))
        self.assertTrue(ok)
        self.nd("first", {"nodeNames": ["node1"]})
        self.wait_state("first", "Granted")
        self.nd("second", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        st, _ = self.wait_state("second", "Pending")
        self.assertIn("1 of 1 in use", st["disruptedDisruptionBudgets"][0]["reason"])
        code, body, _ = self.api.api("GET", f"{ND_PATH}/first")
        self.assertIn("nodegate.io/gate", body["metadata"].get("finalizers", []))
        t0 = time.monotonic()
        code, _, _ = self.api.api("DELETE", f"{ND_PATH}/first")
        self.assertEqual(code, 200)
        self.wait_state("second", "Granted")
        print(f"\n  grant deleted -> next Granted in {time.monotonic() - t0:.3f} s", file=sys.stderr)
        # The finalizer held the object until the release was recorded, then let it go.
        ok, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/first")[0] == 404)
        self.assertTrue(ok, "the gate must remove its finalizer from a deleted request")
        # The Released Event is written after the round that let the request go: waited for,
        # not read at once (under valgrind it came after the 404).
        ok, _ = eventually(lambda: any(e["reason"] == "Released" for e in self.events("first")))
        self.assertTrue(ok, "no Released Event for the deleted grant")

    # -- L01, L03: a grant ends at its deadline ------------------------------------------------
    @staticmethod
    def ms(rfc3339):
        """Milliseconds since the epoch of an RFC 3339 UTC time as nodegate writes it."""
        from datetime import datetime
        return round(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)

    def gone(self, name):
        ok, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/{name}")[0] == 404)
        self.assertTrue(ok, f"{name} was never deleted: {self.status(name)}")

    def assert_ended(self, name, node):
        """The DeadlineExceeded Events on request @name and on its @node."""
        for about in (name, node):
            ok, _ = eventually(lambda: any(e["reason"] == "DeadlineExceeded" for e in self.events(about)))
            self.assertTrue(ok, f"no DeadlineExceeded Event on {about}: {[e['reason'] for e in self.events(about)]}")

    def test_L01_deadline_ends_a_grant(self):
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=1))
        self.nd("l01", {"nodeNames": ["node1"], "activeDeadlineSeconds": 2})
        st, _ = self.wait_state("l01", "Granted")
        self.assertEqual(self.ms(st["expiresAt"]) - self.ms(st["grantedAt"]), 2000, st)
        # A second request waits on the budget's only place...
        self.nd("l01-next", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        st, _ = self.wait_state("l01-next", "Pending")
        self.assertIn("1 of 1 in use", st["disruptedDisruptionBudgets"][0]["reason"])
        # ...until the deadline ends the first grant: Events, delete, release.
        t0 = time.monotonic()
        self.gone("l01")
        print(f"\n  expiresAt -> deleted {time.monotonic() - t0:.3f} s after Pending was seen",
              file=sys.stderr)
        self.assert_ended("l01", "node1")
        self.wait_state("l01-next", "Granted")
        self.assertNotIn("expiresAt", self.status("l01-next"))
        self.assertEqual(self.ng.metric('nodegate_requests_ended_total{reason="DeadlineExceeded"}'), 1)

    def test_L08_deleted_nodes_leave_budgets_and_end_their_requests(self):
        # A third node of the pool, so that a request can wait on the pool's budget.
        node4 = json.loads(json.dumps(self.api.api("GET", "/api/v1/nodes/node2")[1]))
        node4["metadata"] = {"name": "node4", "labels": dict(node4["metadata"]["labels"],
                                                             **{"kubernetes.io/hostname": "node4"})}
        self.create("/api/v1/nodes", node4)
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=2))
        self.nd("l08", {"nodeNames": ["node1", "node2"]})
        self.wait_state("l08", "Granted")
        self.nd("l08-next", {"nodeNames": ["node4"], "retry": {"enabled": True}})
        st, _ = self.wait_state("l08-next", "Pending")
        self.assertIn("2 of 2 in use", json.dumps(st["disruptedDisruptionBudgets"]))
        # node2 is deleted: the grant names it, and the budget counts it no more.
        self.assertEqual(self.api.api("DELETE", "/api/v1/nodes/node2")[0], 200)
        ok, _ = eventually(lambda: self.status("l08").get("deletedNodes") == ["node2"])
        self.assertTrue(ok, f"status.deletedNodes must name node2: {self.status('l08')}")
        self.wait_state("l08-next", "Granted")
        # node1 goes too: nothing is left of the grant, and the request ends.
        self.assertEqual(self.api.api("DELETE", "/api/v1/nodes/node1")[0], 200)
        self.gone("l08")
        ok, _ = eventually(lambda: any(e["reason"] == "NodesDeleted" for e in self.events("l08")))
        self.assertTrue(ok, f"no NodesDeleted Event: {[e['reason'] for e in self.events('l08')]}")
        self.assertEqual(self.ng.metric('nodegate_requests_ended_total{reason="NodesDeleted"}'), 1)

    def test_L03_config_default_deadline(self):
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"},
                               "spec": {"lifecycle": {"defaultActiveDeadlineSeconds": 3600}}})
        ok, _ = eventually(lambda: self.ng.cache() and self.ng.cache()["nodegateconfigs"])
        self.nd("l03-default", {"nodeNames": ["node1"]})
        self.nd("l03-zero", {"nodeNames": ["node3"], "activeDeadlineSeconds": 0})
        st, _ = self.wait_state("l03-default", "Granted")
        self.assertEqual(self.ms(st["expiresAt"]) - self.ms(st["grantedAt"]), 3600 * 1000, st)
        st, _ = self.wait_state("l03-zero", "Granted")
        self.assertNotIn("expiresAt", st)
        # A shorter default applies to the Granted request that sets none, at once: its grant is
        # older than a second.
        time.sleep(1)
        code, _, _ = self.api.api("PATCH", f"{NGC_PATH}/default",
                                  {"spec": {"lifecycle": {"defaultActiveDeadlineSeconds": 1}}},
                                  ctype="application/merge-patch+json")
        self.assertEqual(code, 200)
        self.gone("l03-default")
        self.assert_ended("l03-default", "node1")
        # An explicit 0 keeps the request, whatever the default.
        st = self.state_is("l03-zero", "Granted")
        self.assertIsNotNone(st, self.status("l03-zero"))
        self.assertNotIn("expiresAt", st)

    def budget_status(self, path):
        code, body, _ = self.api.api("GET", path)
        return body.get("status", {}) if code == 200 else {}

    def test_U06_ndb_status_follows_the_pool(self):
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=1))
        path = f"{NDB_PATH}/pool"
        ok, _ = eventually(lambda: self.budget_status(path).get("watchedNodes") == 2)
        self.assertTrue(ok, self.budget_status(path))
        self.assertEqual(self.budget_status(path)["disruptionsAllowed"], 1)
        node4 = {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": "node4", "labels": {"testselect": "test1"}},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        self.create("/api/v1/nodes", node4)
        ok, _ = eventually(lambda: self.budget_status(path).get("watchedNodes") == 3)
        self.assertTrue(ok, self.budget_status(path))
        code, _, _ = self.api.api("DELETE", "/api/v1/nodes/node4")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: self.budget_status(path).get("watchedNodes") == 2)
        self.assertTrue(ok, self.budget_status(path))

    def test_A01_A10_adb_status_watched_nodes_and_disruptions(self):
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "db-data", "namespace": "default", "labels": {"app": "db"}},
               "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-storage",
                        "volumeName": "node3-pv-local", "resources": {"requests": {"storage": "1Gi"}}}}
        self.create("/api/v1/namespaces/default/persistentvolumeclaims", pvc)
        # The test API server has no volume controller: bind the claim as it would.
        code, body, _ = self.api.api("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/db-data/status",
                                     {"status": {"phase": "Bound"}}, ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "db", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "db"}},
                                        "pvcSelector": {"matchLabels": {"app": "db"}}, "maxDisruptions": 2}})
        path = f"{ADB_PATH}/db"
        ok, _ = eventually(lambda: self.budget_status(path).get("watchedNodes") == ["node1", "node3"])
        self.assertTrue(ok, self.budget_status(path))  # A01: pod1's node and the PVC's pinned node
        self.nd("a10", {"nodeNames": ["node1"]})
        self.wait_state("a10", "Granted")
        ok, _ = eventually(lambda: self.budget_status(path).get("currentDisruptions") == 1)
        st = self.budget_status(path)
        self.assertTrue(ok, st)
        self.assertEqual(st["disruptionsAllowed"], 1)
        self.assertEqual(st["disruptions"], [{"name": "a10", "state": "Granted"}])
        self.assertEqual(st["watchedNodeCount"], 2)
        labels = '{kind="ApplicationDisruptionBudget",namespace="default",name="db"}'
        # Per-budget series: on the admin listener only (docs/operations.md).
        self.assertEqual(self.ng.metric("nodegate_budget_current_disruptions" + labels, admin=True), 1)
        self.assertEqual(self.ng.metric("nodegate_budget_disruptions_allowed" + labels, admin=True), 1)
        self.assertIsNone(self.ng.metric("nodegate_budget_disruptions_allowed" + labels))

    def test_ledger_never_grants_more_than_the_budget_under_a_burst(self):
        self.ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 1})
        for i, node in enumerate(["node1", "node2", "node3"]):
            self.nd(f"burst-{i}", {"nodeNames": [node]})
        ok, _ = eventually(lambda: all(self.status(f"burst-{i}").get("state") in ("Granted", "Rejected")
                                       for i in range(3)))
        self.assertTrue(ok)
        granted = [i for i in range(3) if self.status(f"burst-{i}").get("state") == "Granted"]
        self.assertEqual(len(granted), 1, "exactly one request fits a budget of one node")


if __name__ == "__main__":
    unittest.main()
