#!/usr/bin/env python3
"""The soak's checker on hand-written journals: each rule reports what breaks it and stays quiet
about what does not, including the cases where nodegate's watch may lag (the window)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import ADB, ND, NDB, Checker  # noqa: E402

T0 = 1_800_000_000.0


def node(name, pool="p", ready=True, cordoned=False):
    return {"metadata": {"name": name, "labels": {"pool": pool}}, "spec": {"unschedulable": cordoned},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name, node_name, app="a", ns="app"):
    return {"metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"nodeName": node_name}, "status": {"phase": "Running"}}


def nd(name, nodes, state=None, deleting=False, next_retry=None, ready=None):
    st = {}
    if state:
        st = {"state": state, "disruptedNodes": sorted(nodes) if state == "Granted" else []}
    if next_retry:
        st["nextRetryDate"] = next_retry
    if ready:
        st["conditions"] = [{"type": "Ready", "reason": ready}]
    md = {"name": name}
    if deleting:
        md["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    return {"metadata": md, "spec": {"nodeNames": nodes}, "status": st}


class Journal:
    def __init__(self, **kw):
        self.c = Checker(**kw)
        self.t = T0

    def at(self, dt):
        self.t = T0 + dt
        return self

    def w(self, resource, typ, obj, by=None):
        self.c.feed({"t": self.t, "resource": resource, "type": typ, "object": obj, "by": by})
        return self

    def kinds(self):
        return [v["kind"] for v in self.c.violations]


def cluster(j, n=4, ndb_max=1, adb_max=None):
    for i in range(n):
        j.w("/nodes", "INITIAL", node(f"n{i}"))
    j.w(NDB, "INITIAL", {"metadata": {"name": "pool"}, "spec": {"nodeSelector": {"matchLabels": {"pool": "p"}},
                                                                "maxDisruptedNodes": ndb_max}})
    if adb_max is not None:
        for i in range(n):
            j.w("/pods", "INITIAL", pod(f"a{i}", f"n{i}"))
        j.w(ADB, "INITIAL", {"metadata": {"name": "a", "namespace": "app"},
                             "spec": {"podSelector": {"matchLabels": {"app": "a"}}, "maxDisruptions": adb_max}})
    return j


class BudgetRule(unittest.TestCase):
    def test_two_grants_over_an_ndb_of_one_is_a_violation(self):
        j = cluster(Journal(), ndb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w(ND, "ADDED", nd("r2", ["n1"])).w(ND, "MODIFIED", nd("r2", ["n1"], "Granted"))
        self.assertEqual(j.kinds(), ["budget"])
        self.assertIn("NodeDisruptionBudget pool at 2 disrupted of 4", j.c.violations[0]["message"])

    def test_a_release_before_the_next_grant_is_fine(self):
        j = cluster(Journal(), ndb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted", deleting=True))
        j.at(12).w(ND, "ADDED", nd("r2", ["n1"])).w(ND, "MODIFIED", nd("r2", ["n1"], "Granted"))
        self.assertEqual(j.kinds(), [])
        self.assertEqual(j.c.counts["grants"], 2)

    def test_an_unavailable_node_counts_once_it_is_older_than_the_window(self):
        j = cluster(Journal(), ndb_max=1)
        j.at(5).w("/nodes", "MODIFIED", node("n3", ready=False))
        j.at(6).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))  # 1 s: excused
        self.assertEqual(j.kinds(), [])
        j.at(20).w(ND, "ADDED", nd("r2", ["n1"])).w(ND, "MODIFIED", nd("r2", ["n1"], "Granted"))
        self.assertEqual(j.kinds(), ["budget"])

    def test_a_loosened_budget_counts_from_its_edit(self):
        j = cluster(Journal(), ndb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w(NDB, "MODIFIED", {"metadata": {"name": "pool"}, "spec": {
            "nodeSelector": {"matchLabels": {"pool": "p"}}, "maxDisruptedNodes": "50%"}})
        j.at(12).w(ND, "ADDED", nd("r2", ["n1"])).w(ND, "MODIFIED", nd("r2", ["n1"], "Granted"))
        self.assertEqual(j.kinds(), [])
        j.at(13).w(ND, "ADDED", nd("r3", ["n2"])).w(ND, "MODIFIED", nd("r3", ["n2"], "Granted"))
        self.assertEqual(j.kinds(), ["budget"])

    def test_an_adb_counts_nodes_of_its_pods(self):
        j = cluster(Journal(), ndb_max=4, adb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0", "n1"])).w(ND, "MODIFIED", nd("r1", ["n0", "n1"], "Granted"))
        self.assertEqual(j.kinds(), ["budget"])
        self.assertIn("ApplicationDisruptionBudget app/a at 2", j.c.violations[0]["message"])

    def test_a_frozen_budget_grants_nothing(self):
        j = cluster(Journal(), ndb_max=4)
        j.at(1).w(NDB, "MODIFIED", {"metadata": {"name": "pool"}, "spec": {
            "nodeSelector": {"matchLabels": {"pool": "p"}}, "maxDisruptedNodes": 4, "freeze": {"enabled": True}}})
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        self.assertEqual(j.kinds(), ["budget"])


class EvictionRule(unittest.TestCase):
    EV = {"user": "admin", "verb": "POST", "path": "/api/v1/namespaces/app/pods/a0/eviction"}

    def test_an_eviction_without_a_grant_is_a_violation(self):
        j = cluster(Journal(), adb_max=1)
        j.at(10).w("/pods", "DELETED", pod("a0", "n0"), by=self.EV)
        self.assertEqual(j.kinds(), ["eviction"])

    def test_an_eviction_on_a_granted_node_is_fine_and_so_is_one_just_after_the_release(self):
        j = cluster(Journal(), adb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w("/pods", "MODIFIED", pod("a0", "n0"), by=self.EV)
        j.at(12).w(ND, "DELETED", nd("r1", ["n0"], "Granted"))
        j.at(13).w("/pods", "DELETED", pod("a0", "n0"), by=self.EV)
        self.assertEqual(j.kinds(), [])
        self.assertEqual(j.c.counts["protected evictions"], 2)

    def test_an_unprotected_pod_may_go(self):
        j = cluster(Journal(), adb_max=1)
        j.at(1).w("/pods", "ADDED", pod("free", "n0", app="other"))
        j.at(10).w("/pods", "DELETED", pod("free", "n0", app="other"), by=self.EV)
        self.assertEqual(j.kinds(), [])

    def test_a_pod_already_being_deleted_is_not_protected(self):
        j = cluster(Journal(), adb_max=1)
        gone = pod("a0", "n0")
        gone["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:05Z"
        j.at(5).w("/pods", "MODIFIED", gone, by={"user": "admin", "verb": "DELETE", "path": "/api/v1/namespaces/app/pods/a0"})
        j.at(6).w("/pods", "MODIFIED", gone, by=self.EV)
        j.c.admission({"t": T0 + 7, "lat": 0.002, "code": 200, "allowed": True, "pod": "app/a0"})
        j.c.finish(T0 + 30)
        self.assertEqual(j.kinds(), [])

    def test_a_deletion_that_is_not_an_eviction_is_not_judged(self):
        j = cluster(Journal(), adb_max=1)
        j.at(10).w("/pods", "DELETED", pod("a0", "n0"),
                   by={"user": "admin", "verb": "DELETE", "path": "/api/v1/namespaces/app/pods/a0"})
        self.assertEqual(j.kinds(), [])


class AdmissionRule(unittest.TestCase):
    def test_failures_slow_answers_and_unguarded_allows(self):
        j = cluster(Journal(), adb_max=1)
        j.at(10)
        c = j.c
        c.admission({"t": T0 + 5, "lat": 0.002, "code": 200, "allowed": False, "pod": "app/a0"})
        c.admission({"t": T0 + 5, "lat": 0.002, "code": 0, "error": "connection reset", "pod": "app/a1"})
        c.admission({"t": T0 + 6, "lat": 1.5, "code": 200, "allowed": False, "pod": "app/a1"})
        c.admission({"t": T0 + 7, "lat": 0.002, "code": 200, "allowed": True, "pod": "app/a2"})
        c.finish(T0 + 30)
        self.assertEqual(j.kinds(), ["admission"] * 3)
        self.assertEqual(c.counts["admission reviews"], 4)

    def test_an_allow_on_a_granted_node_is_fine(self):
        j = cluster(Journal(), adb_max=1)
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.c.admission({"t": T0 + 11, "lat": 0.002, "code": 200, "allowed": True, "pod": "app/a0"})
        j.c.finish(T0 + 30)
        self.assertEqual(j.kinds(), [])


class CordonAndDecideRules(unittest.TestCase):
    def test_a_node_left_cordoned_after_its_request_is_gone(self):
        j = cluster(Journal(cordon_slack=60))
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w("/nodes", "MODIFIED", node("n0", cordoned=True))
        j.at(20).w(ND, "DELETED", nd("r1", ["n0"], "Granted"))
        j.c.tick(T0 + 70)
        self.assertEqual(j.kinds(), [])
        j.c.tick(T0 + 81)
        self.assertEqual(j.kinds(), ["cordon"])

    def test_a_cordon_with_its_request_alive_is_fine(self):
        j = cluster(Journal(cordon_slack=60))
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(11).w("/nodes", "MODIFIED", node("n0", cordoned=True))
        j.c.finish(T0 + 500)
        self.assertEqual(j.kinds(), [])

    def test_a_pending_request_must_be_looked_at_again(self):
        j = cluster(Journal(decide_slack=30))
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"]))
        j.at(11).w(ND, "MODIFIED", nd("r1", ["n0"], "Pending", next_retry="2027-01-15T08:00:15Z"))
        due = 1_800_000_000 + 0  # T0 is 2027-01-15T08:00:00Z
        j.c.tick(due + 15 + 29)
        self.assertEqual(j.kinds(), [])
        j.c.tick(due + 15 + 31)
        self.assertEqual(j.kinds(), ["decide"])

    def test_a_new_request_must_be_decided(self):
        j = cluster(Journal(decide_slack=30))
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"]))
        j.at(12).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(13).w(ND, "ADDED", nd("r2", ["n1"]))
        j.c.tick(T0 + 50)
        self.assertEqual(j.kinds(), ["decide"])
        self.assertIn("r2", j.c.violations[0]["message"])

    def test_drains_are_counted(self):
        j = cluster(Journal())
        j.at(10).w(ND, "ADDED", nd("r1", ["n0"])).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted"))
        j.at(12).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted", ready="Drained"))
        j.at(13).w(ND, "MODIFIED", nd("r1", ["n0"], "Granted", ready="Drained"))
        self.assertEqual(j.c.counts["drains"], 1)


if __name__ == "__main__":
    unittest.main()
