#!/usr/bin/env python3
"""PodDisruptionBudget status as the test API server computes it (ktestapi/eviction.py), against
the disruption controller's own tests, restated from kubernetes/kubernetes
pkg/controller/disruption/disruption_test.go (TestNoSelector, TestUnavailable,
TestIntegerMaxUnavailable, TestIntegerMaxUnavailableWithScaling,
TestPercentageMaxUnavailableWithScaling, TestNakedPod, TestUnsupportedControllerPod,
TestStatusForUnmanagedPod, TestReplicaSet, TestMultipleControllers, TestReplicationController,
TestStatefulSetController, TestTwoControllers, TestUpdateDisruptedPods, TestInvalidSelectors).

Each upstream test syncs one budget step by step; every step it checks is a row here, the
cluster as it stands at that step: (disruptionsAllowed, currentHealthy, desiredHealthy,
expectedPods), as upstream's VerifyPdbStatus orders them, or disruptionsAllowed alone where
upstream checks only that (VerifyDisruptionAllowed). nodegate's own rows are marked."""
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ktestapi.eviction import compute_pdb_status, matching_pdbs  # noqa: E402
from ktestapi.store import Store, make_key                        # noqa: E402

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0, tzinfo=datetime.timezone.utc)
FOO_BAR = {"foo": "bar"}
RC_LABELS = {"foo": "bar", "baz": "quux"}
D_LABELS = {"foo": "bar", "baz": "quuux"}


def ts(minutes_ago=0):
    return (NOW - datetime.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name, labels=None, ready=True, owner=None, deleting=False):
    meta = {"name": name, "namespace": "default", "uid": "uid-pod-" + name,
            "labels": dict(FOO_BAR if labels is None else labels)}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                    "uid": owner[3], "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = ts()
    conds = [{"type": "Ready", "status": "True"}] if ready else []
    return ("/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {},
                      "status": {"conditions": conds}})


def ctl(kind, replicas, name="foobar", uid=None):
    rkey, api = {"ReplicaSet": ("apps/replicasets", "apps/v1"),
                 "Deployment": ("apps/deployments", "apps/v1"),
                 "StatefulSet": ("apps/statefulsets", "apps/v1"),
                 "ReplicationController": ("/replicationcontrollers", "v1")}[kind]
    uid = uid or "uid-%s-%s" % (kind, name)
    obj = {"apiVersion": api, "kind": kind,
           "metadata": {"name": name, "namespace": "default", "uid": uid},
           "spec": {"replicas": replicas}}
    return (rkey, obj), (api, kind, name, uid)


def pdb(min_available=None, max_unavailable=None, selector=None, status=None):
    spec = {"selector": {"matchLabels": FOO_BAR} if selector is None else selector}
    if selector == "absent":
        del spec["selector"]
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    out = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "foobar", "namespace": "default", "generation": 1}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def store_of(objs):
    st = Store()
    with st.lock:
        for rkey, obj in objs:
            obj["metadata"]["resourceVersion"] = str(st.next_rv())
            st.commit(rkey, make_key(obj["metadata"]["namespace"], obj["metadata"]["name"]), obj, "ADDED")
    return st


RS7, RS7_REF = ctl("ReplicaSet", 7)
RS5, _ = ctl("ReplicaSet", 5)
RS3, _ = ctl("ReplicaSet", 3)
RS10, RS10_REF = ctl("ReplicaSet", 10)
RC1, RC1_REF = ctl("ReplicationController", 1, name="rc 1")
RC3, RC3_REF = ctl("ReplicationController", 3)
SS3, SS3_REF = ctl("StatefulSet", 3)
RC11, RC11_REF = ctl("ReplicationController", 11)
D11, _ = ctl("Deployment", 11)
RS11, RS11_REF = ctl("ReplicaSet", 11, name="rs")
ALIEN = ("apps.test.io/v1", "TestWorkload", "fake-controller", "b7329742-8daa-493a-8881-6ca07139172b")


def n_pods(prefix, n, **kw):
    return [pod("%s %d" % (prefix, i), **kw) for i in range(n)]


def two_controllers(rc_ready, rs_pods=0, rs_ready=0, unready_rc=()):
    """TestTwoControllers at one step: 11 RC pods of which the first 6 unready (and any listed
    in unready_rc), then rs_pods ReplicaSet pods of which all but rs_ready are unready first."""
    objs = [RC11]
    for i in range(1, 12):
        ready = i > 11 - rc_ready and (i - 1) not in unready_rc
        objs.append(pod("quux %d" % i, labels=RC_LABELS, ready=ready, owner=RC11_REF))
    if rs_pods:
        objs += [D11, RS11]
        for i in range(1, rs_pods + 1):
            objs.append(pod("quuux %d" % i, labels=D_LABELS, ready=i > rs_pods - rs_ready,
                            owner=RS11_REF))
    return objs


# (test, budget, objects, want): want is (allowed, healthy, desired, expected), or an int for
# disruptionsAllowed alone; "SyncFailed" in a 5th place when the sync must fail safe.
CASES = [
    ("TestNoSelector: no pods", pdb(3, selector={}), [], (0, 0, 3, 0)),
    ("TestNoSelector: one pod", pdb(3, selector={}), [pod("yo-yo-yo")], (0, 1, 3, 1)),
    ("TestUnavailable: 0 pods", pdb(3), [], (0, 0, 3, 0)),
    ("TestUnavailable: 1 pod", pdb(3), n_pods("yo-yo-yo", 1), (0, 1, 3, 1)),
    ("TestUnavailable: 2 pods", pdb(3), n_pods("yo-yo-yo", 2), (0, 2, 3, 2)),
    ("TestUnavailable: 3 pods", pdb(3), n_pods("yo-yo-yo", 3), (0, 3, 3, 3)),
    ("TestUnavailable: 4 pods", pdb(3), n_pods("yo-yo-yo", 4), (1, 4, 3, 4)),
    ("TestUnavailable: one unready", pdb(3),
     [pod("yo-yo-yo 0", ready=False)] + n_pods("yo-yo-yo", 4)[1:], (0, 3, 3, 4)),
    ("TestIntegerMaxUnavailable: no pods", pdb(max_unavailable=1), [], 0),
    ("TestIntegerMaxUnavailable: naked pod", pdb(max_unavailable=1), [pod("naked")], 0),
    ("TestIntegerMaxUnavailableWithScaling: 7 replicas", pdb(max_unavailable=2),
     [RS7, pod("pod", owner=RS7_REF)], (0, 1, 5, 7)),
    ("TestIntegerMaxUnavailableWithScaling: 5 replicas", pdb(max_unavailable=2),
     [RS5, pod("pod", owner=RS7_REF)], (0, 1, 3, 5)),
    ("TestPercentageMaxUnavailableWithScaling: 7 replicas", pdb(max_unavailable="30%"),
     [RS7, pod("pod", owner=RS7_REF)], (0, 1, 4, 7)),
    ("TestPercentageMaxUnavailableWithScaling: 3 replicas", pdb(max_unavailable="30%"),
     [RS3, pod("pod", owner=RS7_REF)], (0, 1, 2, 3)),
    ("TestNakedPod: no pods", pdb("28%"), [], 0),
    ("TestNakedPod: naked pod", pdb("28%"), [pod("naked")], 0),
    ("TestUnsupportedControllerPod", pdb("28%"), [pod("naked", owner=ALIEN)],
     (0, 0, 0, 0, "SyncFailed")),
    ("TestStatusForUnmanagedPod", pdb("28%"), [pod("unmanaged")], (0, 1, 0, 0)),
    ("TestReplicaSet", pdb("20%"), [RS10, pod("pod", owner=RS10_REF)], (0, 1, 2, 10)),
    ("TestMultipleControllers: no controllers", pdb("1%"), n_pods("pod", 2), 0),
    ("TestMultipleControllers: one RC", pdb("1%"), [RC1] + n_pods("pod", 2, owner=RC1_REF), 1),
    ("TestReplicationController: no pods", pdb("34%"), [RC3], (0, 0, 0, 0)),
    ("TestReplicationController: 1 pod", pdb("34%"),
     [RC3] + n_pods("foobar", 1, labels=RC_LABELS, owner=RC3_REF), (0, 1, 2, 3)),
    ("TestReplicationController: 2 pods", pdb("34%"),
     [RC3] + n_pods("foobar", 2, labels=RC_LABELS, owner=RC3_REF), (0, 2, 2, 3)),
    ("TestReplicationController: 3 pods", pdb("34%"),
     [RC3] + n_pods("foobar", 3, labels=RC_LABELS, owner=RC3_REF), (1, 3, 2, 3)),
    ("TestReplicationController: rogue pod", pdb("34%"),
     [RC3, pod("rogue")] + n_pods("foobar", 3, labels=RC_LABELS, owner=RC3_REF), 2),
    ("TestStatefulSetController: no pods", pdb("34%"), [SS3], (0, 0, 0, 0)),
    ("TestStatefulSetController: 1 pod", pdb("34%"),
     [SS3] + n_pods("foobar", 1, labels=RC_LABELS, owner=SS3_REF), (0, 1, 2, 3)),
    ("TestStatefulSetController: 2 pods", pdb("34%"),
     [SS3] + n_pods("foobar", 2, labels=RC_LABELS, owner=SS3_REF), (0, 2, 2, 3)),
    ("TestStatefulSetController: 3 pods", pdb("34%"),
     [SS3] + n_pods("foobar", 3, labels=RC_LABELS, owner=SS3_REF), (1, 3, 2, 3)),
    ("TestTwoControllers: no pods", pdb("28%"), [RC11], (0, 0, 0, 0)),
    ("TestTwoControllers: 6 unready RC pods", pdb("28%"), two_controllers(0)[:7], (0, 0, 4, 11)),
    ("TestTwoControllers: 4 ready of 10 RC pods", pdb("28%"), two_controllers(0)[:7] + [
        pod("quux %d" % i, labels=RC_LABELS, owner=RC11_REF) for i in range(7, 11)], (0, 4, 4, 11)),
    ("TestTwoControllers: 5 ready of 11 RC pods", pdb("28%"), two_controllers(5), (1, 5, 4, 11)),
    ("TestTwoControllers: Deployment and ReplicaSet, no pods yet", pdb("28%"),
     two_controllers(5) + [D11, RS11], (1, 5, 4, 11)),
    ("TestTwoControllers: 7 unready ReplicaSet pods", pdb("28%"), two_controllers(5, 7, 0),
     (0, 5, 7, 22)),
    ("TestTwoControllers: 2 ready ReplicaSet pods", pdb("28%"), two_controllers(5, 9, 2),
     (0, 7, 7, 22)),
    ("TestTwoControllers: 4 ready ReplicaSet pods", pdb("28%"), two_controllers(5, 11, 4),
     (2, 9, 7, 22)),
    ("TestTwoControllers: one RC pod down", pdb("28%"), two_controllers(5, 11, 4, unready_rc=(10,)),
     (1, 8, 7, 22)),
    ("TestTwoControllers: two RC pods down", pdb("28%"), two_controllers(5, 11, 4, unready_rc=(9, 10)),
     (0, 7, 7, 22)),
    ("TestTwoControllers: one back", pdb("28%"), two_controllers(5, 11, 4, unready_rc=(9,)),
     (1, 8, 7, 22)),
    ("TestUpdateDisruptedPods", pdb(1, status={"disruptedPods": {
        "p1": ts(), "p2": ts(3), "p3": ts(1), "notthere": ts()}}),
     [pod("p1", deleting=True), pod("p2"), pod("p3")], (0, 1, 1, 3)),
    ("TestInvalidSelectors: illegal value key",
     pdb(3, selector={"matchLabels": {"k8s.io/too/many/slashes": "value"}}), [pod("p")],
     (0, 0, 0, 0, "SyncFailed")),
    ("TestInvalidSelectors: illegal operator",
     pdb(3, selector={"matchExpressions": [{"key": "foo", "operator": "illegal", "values": ["bar"]}]}),
     [pod("p")], (0, 0, 0, 0, "SyncFailed")),
    # nodegate's own: {} selects pods whatever their labels; an absent selector none; neither
    # minAvailable nor maxUnavailable expects no pod and so allows nothing.
    ("nodegate: {} selects unlabelled pods", pdb(1, selector={}), [pod("bare", labels={}),
                                                                  pod("other")], (1, 2, 1, 2)),
    ("nodegate: no selector selects nothing", pdb(0, selector="absent"), [pod("p")], (0, 0, 0, 0)),
    ("nodegate: neither minAvailable nor maxUnavailable", pdb(), [RS7, pod("pod", owner=RS7_REF)],
     (0, 1, 0, 0)),
]


class TestPdbStatusTable(unittest.TestCase):
    def test_status_agrees_with_the_disruption_controller(self):
        for name, budget, objs, want in CASES:
            with self.subTest(name):
                st = compute_pdb_status(store_of(list(objs)), budget, now=NOW)
                got = (st["disruptionsAllowed"], st["currentHealthy"], st["desiredHealthy"],
                       st["expectedPods"])
                cond = st["conditions"][0]
                if isinstance(want, int):
                    self.assertEqual(got[0], want)
                else:
                    self.assertEqual(got, tuple(want[:4]))
                failed = len(want) > 4 if isinstance(want, tuple) else False
                self.assertEqual(cond["reason"] == "SyncFailed", failed, cond)
                self.assertEqual(cond["status"], "True" if got[0] > 0 else "False")

    def test_disrupted_pods_kept_as_upstream(self):
        # TestUpdateDisruptedPods: only p3 stays (p1 is being deleted, p2 expired, notthere gone).
        budget = pdb(1, status={"disruptedPods": {"p1": ts(), "p2": ts(3), "p3": ts(1), "notthere": ts()}})
        st = compute_pdb_status(store_of([pod("p1", deleting=True), pod("p2"), pod("p3")]), budget, now=NOW)
        self.assertEqual(st["disruptedPods"], {"p3": ts(1)})

    def test_fail_safe_keeps_the_last_counts(self):
        # The controller's failSafe writes the old status with disruptionsAllowed 0.
        old = {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 4,
               "desiredHealthy": 3, "expectedPods": 4}
        budget = pdb("28%", status=old)
        budget["metadata"]["generation"] = 2
        st = compute_pdb_status(store_of([pod("naked", owner=ALIEN)]), budget, now=NOW)
        self.assertEqual((st["disruptionsAllowed"], st["currentHealthy"], st["desiredHealthy"],
                          st["expectedPods"], st["observedGeneration"]), (0, 4, 3, 4, 1))
        self.assertIn("found no controllers", st["conditions"][0]["message"])

    def test_eviction_finds_budgets_with_an_empty_selector(self):
        # The eviction handler lets a policy/v1 {} selector match every pod; absent matches none.
        st = store_of([("policy/poddisruptionbudgets", pdb(1, selector={})),
                       ("policy/poddisruptionbudgets", dict(pdb(1), metadata={
                           "name": "none", "namespace": "default", "generation": 1},
                           spec={"minAvailable": 1}))])
        found = matching_pdbs(st, pod("bare", labels={})[1])
        self.assertEqual([p["metadata"]["name"] for p in found], ["foobar"])


if __name__ == "__main__":
    unittest.main()
