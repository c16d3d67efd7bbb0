#!/usr/bin/env python3
"""Writes the golden eviction cases (tests/golden/eviction/*.json) and gate cases
(tests/golden/gate/*.json) from fixture F of shared/acceptance/README.md. The cases are
committed; rerun this after changing it."""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def node(name, sel):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"testselect": sel, "kubernetes.io/hostname": name}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def pv(n):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{n}-pv-local"},
            "spec": {"local": {"path": "/mnt/disks/vol1"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [n]}]}]}}}}


def pod(name, node_name, labels, owner=None, extra_meta=None, spec_extra=None, phase="Running"):
    meta = {"name": name, "namespace": "default", "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": owner.lower(),
                                    "uid": "0f0e0d0c-0000-4000-8000-00000000000" + str(len(name) % 10),
                                    "controller": True}]
    meta.update(extra_meta or {})
    spec = {"nodeName": node_name, "containers": [{"name": "main", "image": "example/app"}]}
    spec.update(spec_extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


FIXTURE = [node("node1", "test1"), node("node2", "test1"), node("node3", "test2"),
           pv("node1"), pv("node2"), pv("node3"),
           pod("pod1", "node1", {"app": "db"}, owner="StatefulSet"),
           {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "maxDisruptions": 1}}]


def review(name, ns="default", user="alice", uid="705ab4f5-6393-11e8-b7cc-42010a800002", dry=False,
           groups=("system:authenticated",)):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid,
        "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
        "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "requestSubResource": "eviction",
        "name": name, "namespace": ns, "operation": "CREATE",
        "userInfo": {"username": user, "uid": "1234", "groups": list(groups)},
        "object": {"kind": "Eviction", "apiVersion": "policy/v1",
                   "metadata": {"name": name, "namespace": ns, "creationTimestamp": None},
                   "deleteOptions": {}},
        "oldObject": None, "dryRun": dry,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}


def case(file, description, extra_objects, rev, expect, config=None):
    items = copy.deepcopy(FIXTURE) + extra_objects
    doc = {"description": description,
           "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
           "config": config or {"mode": "Enforce", "retryAfterSeconds": 10},
           "review": rev, "expect": expect}
    with open(os.path.join(HERE, "eviction", file), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


GRANTED_NODE1 = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                 "metadata": {"name": "maintenance-node1"},
                 "spec": {"nodeNames": ["node1"], "type": "maintenance"},
                 "status": {"state": "Granted", "disruptedNodes": ["node1"]}}

case("E01_denied_without_grant.json",
     "Evicting pod1 (node1) with no NodeDisruption for node1 is denied with 429 naming the node, the ADB and what to do.",
     [], review("pod1"),
     {"allowed": False, "code": 429, "retryAfterSeconds": 10, "reason": "protected",
      "messageContains": ["node1", "default/db", "NodeDisruption", "Granted"]})
case("E02_allowed_node_granted.json",
     "A Granted NodeDisruption covering node1 allows evicting pod1.",
     [GRANTED_NODE1], review("pod1"), {"allowed": True, "reason": "granted", "warning": False})
case("E03_unprotected_pod_allowed.json",
     "A pod no ADB selects may be evicted.",
     [pod("web-1", "node1", {"app": "web"}, owner="ReplicaSet")], review("web-1"),
     {"allowed": True, "reason": "unprotected", "warning": False})
case("E04_daemonset_pod_allowed.json",
     "A DaemonSet pod on node1 is allowed even though its labels match the ADB.",
     [pod("agent-x", "node1", {"app": "db"}, owner="DaemonSet")], review("agent-x"),
     {"allowed": True, "reason": "daemonset"})
case("E04_mirror_pod_allowed.json",
     "A mirror (static) pod on node1 is allowed even though its labels match the ADB.",
     [pod("etcd-node1", "node1", {"app": "db"}, extra_meta={"annotations": {"kubernetes.io/config.mirror": "abc"}})],
     review("etcd-node1"), {"allowed": True, "reason": "mirror-pod"})
case("E05_unknown_pod_allowed.json",
     "A pod that is not in the cache is allowed; the API server answers 404 itself.",
     [], review("ghost"), {"allowed": True, "reason": "unknown-pod"})
case("E06_warn_mode_allows_with_warning.json",
     "eviction mode Warn: as E01 but allowed, with a warning naming the budget.",
     [], review("pod1"), {"allowed": True, "reason": "protected", "warningContains": ["default/db", "node1"]},
     config={"mode": "Warn", "retryAfterSeconds": 10})
case("E09_exempt_user_allowed.json",
     "A requester listed in the exempt users is allowed.",
     [], review("pod1", user="system:serviceaccount:kube-system:cluster-autoscaler"),
     {"allowed": True, "reason": "exempt"},
     config={"mode": "Enforce", "exemptUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"]})
NGC = lambda spec: {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                    "metadata": {"name": "default"}, "spec": spec}
case("E06_warn_mode_from_nodegateconfig.json",
     "NodeGateConfig default with eviction.mode Warn overrides the Enforce flag: allowed with a warning.",
     [NGC({"eviction": {"mode": "Warn"}})], review("pod1"),
     {"allowed": True, "reason": "protected", "warningContains": ["default/db"]})
case("E09_exempt_user_from_nodegateconfig.json",
     "A requester listed in NodeGateConfig eviction.exemptUsers is allowed.",
     [NGC({"eviction": {"exemptUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"]}})],
     review("pod1", user="system:serviceaccount:kube-system:cluster-autoscaler"),
     {"allowed": True, "reason": "exempt"})
case("E09_nodegateconfig_exempt_list_replaces_flags.json",
     "When NodeGateConfig lists exempt users, a user exempt only by flag is not exempt.",
     [NGC({"eviction": {"exemptUsers": ["someone-else"]}})], review("pod1", user="ops-admin"),
     {"allowed": False, "code": 429}, config={"mode": "Enforce", "exemptUsers": ["ops-admin"]})
case("E09_exempt_group_from_nodegateconfig.json",
     "An exempt entry naming a group exempts its members: a kube-system service account (a "
     "descheduler) by the group system:serviceaccounts:kube-system.",
     [NGC({"eviction": {"exemptUsers": ["system:serviceaccounts:kube-system"]}})],
     review("pod1", user="system:serviceaccount:kube-system:descheduler",
            groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")),
     {"allowed": True, "reason": "exempt"})
case("E09_exempt_group_other_namespace_denied.json",
     "A service account of another namespace is not in system:serviceaccounts:kube-system: denied.",
     [NGC({"eviction": {"exemptUsers": ["system:serviceaccounts:kube-system"]}})],
     review("pod1", user="system:serviceaccount:default:descheduler",
            groups=("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")),
     {"allowed": False, "code": 429})
case("E09_exempt_prefix_flag.json",
     "An exempt entry ending in * matches by prefix: a VPA updater in kube-system is exempt.",
     [], review("pod1", user="system:serviceaccount:kube-system:vpa-updater"),
     {"allowed": True, "reason": "exempt"},
     config={"mode": "Enforce", "exemptUsers": ["system:serviceaccount:kube-system:*"]})
case("E09_exempt_prefix_is_whole.json",
     "The prefix is everything before the *: kube-system-2 is another namespace, denied.",
     [], review("pod1", user="system:serviceaccount:kube-system-2:vpa-updater"),
     {"allowed": False, "code": 429},
     config={"mode": "Enforce", "exemptUsers": ["system:serviceaccount:kube-system:*"]})
case("E09_nodegateconfig_star_alone_enforces.json",
     "NodeGateConfig exemptUsers with * alone is refused (it would exempt everyone): the config is "
     "invalid and enforces, exempting no one.",
     [NGC({"eviction": {"mode": "Warn", "exemptUsers": ["*"]}})], review("pod1"),
     {"allowed": False, "code": 429})
case("E06_invalid_nodegateconfig_enforces.json",
     "A NodeGateConfig with an unknown eviction mode never loosens the guard: Enforce.",
     [NGC({"eviction": {"mode": "Sometimes"}})], review("pod1"),
     {"allowed": False, "code": 429}, config={"mode": "Warn"})
case("E10_protected_through_pvc_denied.json",
     "A pod protected only through a PVC it mounts (ADB pvcSelector) is denied as E01.",
     [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "cache-data", "namespace": "default", "labels": {"tier": "cache"}},
       "spec": {"volumeName": "node2-pv-local"}, "status": {"phase": "Bound"}},
      pod("cache-0", "node2", {"app": "cache"}, owner="StatefulSet",
          spec_extra={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "cache-data"}}]}),
      {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
       "metadata": {"name": "cache", "namespace": "default"},
       "spec": {"pvcSelector": {"matchLabels": {"tier": "cache"}}, "maxDisruptions": 1}}],
     review("cache-0"),
     {"allowed": False, "code": 429, "retryAfterSeconds": 10, "reason": "protected",
      "messageContains": ["node2", "default/cache"]})
case("W01_response_echoes_uid.json",
     "The response is an admission.k8s.io/v1 AdmissionReview whose uid is the request's.",
     [], review("pod1", uid="0b1c2d3e-aaaa-bbbb-cccc-000000000042"),
     {"allowed": False, "code": 429})
case("W02_not_json.json", "A body that is not JSON is a 400 with a message.",
     [], "this is not json", {"badRequestContains": "body is not valid JSON"})
no_request = review("pod1")
del no_request["request"]
case("W02_missing_request.json", "JSON without `request` is a 400 naming the field.",
     [], no_request, {"badRequestContains": "request: required"})
no_uid = review("pod1")
del no_uid["request"]["uid"]
case("W02_missing_request_uid.json", "A request without uid is a 400 naming the field.",
     [], no_uid, {"badRequestContains": "request.uid: required"})


# ---- gate cases: the decision for one NodeDisruption (run by run-golden-gate.c) ----

NOW = "2026-11-18T00:00:00Z"
GATE_FIXTURE = [o for o in FIXTURE if o["kind"] != "ApplicationDisruptionBudget"]
TEST1 = {"nodeSelector": {"matchLabels": {"testselect": "test1"}}}
DB_PODS = {"podSelector": {"matchLabels": {"app": "db"}}}
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"


def nd(name, spec, state=None, disrupted=None, meta=None):
    o = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
         "metadata": {"name": name, "creationTimestamp": "2026-11-17T00:00:00Z"}, "spec": spec}
    o["metadata"].update(meta or {})
    if state:
        o["status"] = {"state": state, "disruptedNodes": disrupted or []}
    return o


def ndb(name, spec):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
            "metadata": {"name": name}, "spec": spec}


def adb(name, spec):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def ngc(spec):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
            "metadata": {"name": "default"}, "spec": spec}


def not_ready(name, sel):
    n = node(name, sel)
    n["status"]["conditions"][0]["status"] = "False"
    return n


def control_plane(name):
    n = node(name, "cp")
    n["metadata"]["labels"][CONTROL_PLANE] = ""
    return n


def gate_case(file, description, extra_objects, request, state, nodes, reason, failed=None,
              fixture=None, never=None):
    expect = {"state": state, "disruptedNodes": nodes, "reasonContains": reason}
    if failed is not None:
        expect["failedBudgets"] = failed
    if never is not None:
        expect["unsatisfiable"] = never
    items = copy.deepcopy(GATE_FIXTURE if fixture is None else fixture) + extra_objects
    doc = {"description": description,
           "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
           "nodeDisruption": request, "now": NOW, "expect": expect}
    with open(os.path.join(HERE, "gate", file), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


RETRY = {"retry": {"enabled": True}}
os.makedirs(os.path.join(HERE, "gate"), exist_ok=True)

# Steps 1-2: deadline, empty selection.
gate_case("G01_granted_without_budgets.json",
          "No budgets: a request on test1 is Granted with node1 and node2.",
          [], nd("nd", TEST1), "Granted", ["node1", "node2"], ["granted"], failed=[])
gate_case("G02_empty_selection_rejected.json",
          "A selector matching no node is Rejected (rejectEmptyDisruptions defaults to true).",
          [], nd("nd", {"nodeSelector": {"matchLabels": {"testselect": "nope"}}}),
          "Rejected", [], ["no node matched the request"])
gate_case("G03_empty_selection_granted.json",
          "With NodeGateConfig rejectEmptyDisruptions: false an empty selection is Granted.",
          [ngc({"rejectEmptyDisruptions": False})],
          nd("nd", {"nodeSelector": {"matchLabels": {"testselect": "nope"}}}),
          "Granted", [], ["no node matched the request"])
gate_case("G06_deadline_passed_rejected.json",
          "A request whose retry.deadline is a second before now is Rejected, whatever else holds.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=0))],
          nd("nd", dict(TEST1, retry={"enabled": True, "deadline": "2026-11-17T23:59:59Z"})),
          "Rejected", ["node1", "node2"], ["deadline passed"])

# Steps 3-6: paused, types, overlap, control plane.
gate_case("G13_paused_pending.json",
          "NodeGateConfig paused: the request stays Pending with the reason.",
          [ngc({"paused": True})], nd("nd", dict(TEST1, **RETRY)),
          "Pending", ["node1", "node2"], ["paused by NodeGateConfig"])
gate_case("G10_type_not_allowed_rejected.json",
          "allowedTypes [maintenance, maintenance1]: a request of type toto is Rejected.",
          [ngc({"allowedTypes": ["maintenance", "maintenance1"]})],
          nd("nd", dict(TEST1, type="toto")),
          "Rejected", ["node1", "node2"], ['type "toto" is not an allowed disruption type'])
gate_case("G10_type_allowed_granted.json",
          "allowedTypes [maintenance, maintenance1]: a request of type maintenance is Granted.",
          [ngc({"allowedTypes": ["maintenance", "maintenance1"]})],
          nd("nd", dict(TEST1, type="maintenance")), "Granted", ["node1", "node2"], ["granted"])
gate_case("G08_overlap_rejected.json",
          "rejectOverlappingDisruptions: a request on node2, already granted to a, is Rejected naming a.",
          [ngc({"rejectOverlappingDisruptions": True}),
           nd("a", TEST1, "Granted", ["node1", "node2"])],
          nd("b", {"nodeNames": ["node2"]}),
          "Rejected", ["node2"], ["node node2 is already granted to NodeDisruption a"])
gate_case("G09_overlap_counted_once.json",
          "Overlap allowed, NDB on test1 max 2 with a holding node1 and node2: b on node2 adds nothing and is Granted.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=2)),
           nd("a", TEST1, "Granted", ["node1", "node2"])],
          nd("b", {"nodeNames": ["node2"]}), "Granted", ["node2"], ["granted"], failed=[])
cp_fixture = GATE_FIXTURE + [control_plane("cp1"), control_plane("cp2")]
gate_case("R05_control_plane_with_workers_rejected.json",
          "controlPlane.serial: a request mixing a control-plane node with a worker is Rejected.",
          [], nd("nd", {"nodeNames": ["cp1", "node1"]}), "Rejected", ["cp1", "node1"],
          ["control-plane nodes are never disrupted together with workers"], fixture=cp_fixture)
gate_case("R05_control_plane_one_at_a_time_rejected.json",
          "controlPlane.serial: a request naming two control-plane nodes is Rejected.",
          [], nd("nd", {"nodeNames": ["cp1", "cp2"]}), "Rejected", ["cp1", "cp2"],
          ["control-plane nodes are disrupted one at a time (2 requested)"], fixture=cp_fixture)
gate_case("R05_worker_waits_for_control_plane.json",
          "A pending request for cp1 ranks first and is granted; the worker request then waits (Pending).",
          [nd("cp", {"nodeNames": ["cp1"]}, meta={"creationTimestamp": "2026-11-17T12:00:00Z"})],
          nd("worker", {"nodeNames": ["node1"]}), "Pending", ["node1"],
          ["waiting: control-plane nodes are disrupted first"], fixture=cp_fixture)
gate_case("R05_control_plane_waits_for_workers.json",
          "A control-plane node goes alone: while node1 is granted, a request for cp1 waits (Pending).",
          [nd("w", {"nodeNames": ["node1"]}, "Granted", ["node1"])],
          nd("cp", {"nodeNames": ["cp1"]}), "Pending", ["cp1"],
          ["waiting: a control-plane node goes alone"], fixture=cp_fixture)

# Step 7 and 9: NodeDisruptionBudgets.
gate_case("G04_ndb_max_int_rejected.json",
          "NDB on test1 with maxDisruptedNodes 0, no retry: Rejected naming the budget and its limit, "
          "which the request can never fit.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=0))], nd("nd", TEST1),
          "Rejected", ["node1", "node2"],
          ["needs 2 nodes of NodeDisruptionBudget test1, which allows at most 0: raise "
           "maxDisruptedNodes to 2 or split the request"],
          failed=["NodeDisruptionBudget test1"], never=True)
gate_case("G05_ndb_max_int_retry_pending.json",
          "As G04 with retry enabled and no deadline: Pending with the same reason.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=0))], nd("nd", dict(TEST1, **RETRY)),
          "Pending", ["node1", "node2"], ["NodeDisruptionBudget test1, which allows at most 0"],
          failed=["NodeDisruptionBudget test1"], never=True)
gate_case("M07_ndb_max_percent_granted.json",
          "NDB over all 3 nodes with maxDisruptedNodes 50%: ceil(1.5) = 2, so test1's 2 nodes are Granted.",
          [ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": "50%"})], nd("nd", TEST1),
          "Granted", ["node1", "node2"], ["granted"], failed=[])
gate_case("M07_ndb_max_percent_rejected.json",
          "NDB over all 3 nodes with maxDisruptedNodes 10%: ceil(0.3) = 1, so test1's 2 nodes are Rejected.",
          [ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": "10%"})], nd("nd", TEST1),
          "Rejected", ["node1", "node2"],
          ["needs 2 nodes of NodeDisruptionBudget all, which allows at most 1 (10% of 3 nodes): "
           "raise maxDisruptedNodes to 2 or split the request"],
          failed=["NodeDisruptionBudget all"], never=True)
gate_case("M08_ndb_min_undisrupted_rejected.json",
          "NDB over all 3 nodes with minUndisruptedNodes 50%: 2 must stay, test1's 2 nodes would leave 1.",
          [ndb("all", {"nodeSelector": {}, "minUndisruptedNodes": "50%"})], nd("nd", TEST1),
          "Rejected", ["node1", "node2"],
          ["needs 2 nodes of NodeDisruptionBudget all, which keeps at least 2 of its 3 nodes "
           "undisrupted: lower minUndisruptedNodes to 1 or split the request"],
          failed=["NodeDisruptionBudget all"], never=True)
gate_case("M08_ndb_min_undisrupted_granted.json",
          "As the rejected M08 case, but one node: 2 remain, enough.",
          [ndb("all", {"nodeSelector": {}, "minUndisruptedNodes": "50%"})],
          nd("nd", {"nodeNames": ["node1"]}), "Granted", ["node1"], ["granted"], failed=[])
U_NDB = ndb("test1", dict(TEST1, maxDisruptedNodes=1, countUnavailableNodes=True))
u_fixture = [o for o in GATE_FIXTURE if o["metadata"]["name"] != "node2"] + [not_ready("node2", "test1")]
gate_case("U01_ndb_counts_not_ready_node_rejected.json",
          "NDB on test1 max 1 counting unavailable nodes; node2 NotReady already uses it: node1 is Rejected.",
          [U_NDB], nd("nd", {"nodeNames": ["node1"]}), "Rejected", ["node1"],
          ["NodeDisruptionBudget test1: 1 of 1 in use"], failed=["NodeDisruptionBudget test1"],
          fixture=u_fixture)
gate_case("U02_ndb_unavailable_node_adds_nothing.json",
          "As U01, a request for node2 itself: it is already counted, so it adds nothing and is Granted.",
          [U_NDB], nd("nd", {"nodeNames": ["node2"]}), "Granted", ["node2"], ["granted"],
          failed=[], fixture=u_fixture)
gate_case("U03_ndb_not_counting_unavailable_granted.json",
          "As U01 with countUnavailableNodes false: node1 is Granted.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=1, countUnavailableNodes=False))],
          nd("nd", {"nodeNames": ["node1"]}), "Granted", ["node1"], ["granted"], failed=[],
          fixture=u_fixture)
tainted = [o for o in GATE_FIXTURE if o["metadata"]["name"] != "node3"] + [node("node3", "test2")]
tainted[-1]["spec"] = {"taints": [{"key": "k1", "effect": "NoSchedule"}]}
gate_case("U04_ndb_taint_target_counted_rejected.json",
          "NDB over all nodes max 2 with taintTargets k1:NoSchedule; node3 carries it: test1's 2 nodes make 3 > 2.",
          [ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 2,
                       "taintTargets": [{"key": "k1", "effect": "NoSchedule", "operator": "Exists"}]})],
          nd("nd", TEST1), "Rejected", ["node1", "node2"], ["1 of 2 in use; this request adds 2"],
          failed=["NodeDisruptionBudget all"], fixture=tainted)
gate_case("G14_deleted_grant_releases_nodes.json",
          "A Granted request being deleted no longer holds node1: NDB test1 max 1 grants node2.",
          [ndb("test1", dict(TEST1, maxDisruptedNodes=1)),
           nd("old", {"nodeNames": ["node1"]}, "Granted", ["node1"],
              meta={"deletionTimestamp": "2026-11-17T23:00:00Z", "finalizers": ["nodegate.io/gate"]})],
          nd("nd", {"nodeNames": ["node2"]}), "Granted", ["node2"], ["granted"], failed=[])
gate_case("R01_higher_priority_granted_first.json",
          "NDB over all nodes max 1: b (priority 10) ranks before the older a (priority 0) and takes the budget; a waits.",
          [ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 1}),
           nd("b", {"nodeNames": ["node2"], "priority": 10}, meta={"creationTimestamp": "2026-11-17T12:00:00Z"})],
          nd("a", {"nodeNames": ["node1"], "retry": {"enabled": True}}), "Pending", ["node1"],
          ["NodeDisruptionBudget all: 1 of 1 in use"], failed=["NodeDisruptionBudget all"])

# Step 7 and 9: ApplicationDisruptionBudgets.
two_db_pods = [pod("pod2", "node2", {"app": "db"}, owner="StatefulSet")]
gate_case("A07_adb_request_on_two_app_nodes_costs_two.json",
          "ADB max 1 with db pods on node1 and node2: one request on test1 costs two and is Rejected.",
          two_db_pods + [adb("db", dict(DB_PODS, maxDisruptions=1))], nd("nd", TEST1),
          "Rejected", ["node1", "node2"],
          ["needs 2 nodes of ApplicationDisruptionBudget default/db, which allows at most 1: "
           "raise maxDisruptions to 2 or split the request"],
          failed=["ApplicationDisruptionBudget default/db"], never=True)
gate_case("A08_adb_one_of_one_in_use_rejected.json",
          "As A07 with node1 granted to x: a request on node2 is Rejected with 1 of 1 in use.",
          two_db_pods + [adb("db", dict(DB_PODS, maxDisruptions=1)),
                         nd("x", {"nodeNames": ["node1"]}, "Granted", ["node1"])],
          nd("nd", {"nodeNames": ["node2"]}), "Rejected", ["node2"],
          ["ApplicationDisruptionBudget default/db", "1 of 1 in use"],
          failed=["ApplicationDisruptionBudget default/db"], never=False)
gate_case("A01_adb_pvc_on_local_pv_watches_its_node.json",
          "ADB max 0 selecting only a PVC bound to node3's local PV: its node affinity makes node3 watched, so node3 is Rejected.",
          [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default", "labels": {"app": "db"}},
            "spec": {"volumeName": "node3-pv-local"}, "status": {"phase": "Bound"}},
           adb("data", {"pvcSelector": {"matchLabels": {"app": "db"}}, "maxDisruptions": 0})],
          nd("nd", {"nodeNames": ["node3"]}), "Rejected", ["node3"],
          ["needs 1 node of ApplicationDisruptionBudget default/data, which allows at most 0: "
           "raise maxDisruptions to 1"],
          failed=["ApplicationDisruptionBudget default/data"])
gate_case("A04_adb_lost_pvc_rejected.json",
          "An ADB selecting a PVC in phase Lost fails every request on its watched nodes, naming the PVC.",
          [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default", "labels": {"app": "db"}},
            "spec": {"volumeName": "node1-pv-local"}, "status": {"phase": "Lost"}},
           adb("db", dict(DB_PODS, pvcSelector={"matchLabels": {"app": "db"}}, maxDisruptions=1))],
          nd("nd", {"nodeNames": ["node1"]}), "Rejected", ["node1"],
          ["PersistentVolumeClaim default/data in phase Lost"],
          failed=["ApplicationDisruptionBudget default/db"])
gate_case("A09_adb_frozen_rejected.json",
          "A frozen ADB fails requests on its nodes with the freeze reason.",
          [adb("db", dict(DB_PODS, maxDisruptions=1, freeze={"enabled": True, "reason": "db upgrade"}))],
          nd("nd", TEST1), "Rejected", ["node1", "node2"], ["is frozen: db upgrade"],
          failed=["ApplicationDisruptionBudget default/db"])
gate_case("G11_adb_type_not_supported_ignored.json",
          "ADB max 0 supporting only maintenance1: a maintenance request ignores it and is Granted.",
          [adb("db", dict(DB_PODS, maxDisruptions=0, supportedNodeDisruptionTypes=["maintenance1"]))],
          nd("nd", dict(TEST1, type="maintenance")), "Granted", ["node1", "node2"], ["granted"],
          failed=[])
gate_case("G12_adb_empty_types_applies_to_all.json",
          "ADB max 0 with an empty supportedNodeDisruptionTypes applies to every type: Rejected.",
          [adb("db", dict(DB_PODS, maxDisruptions=0, supportedNodeDisruptionTypes=[]))],
          nd("nd", dict(TEST1, type="maintenance")), "Rejected", ["node1", "node2"],
          ["ApplicationDisruptionBudget default/db"], failed=["ApplicationDisruptionBudget default/db"])

# Budgets nodegate cannot read fail closed; every failing budget is listed.
gate_case("invalid_ndb_fails_closed.json",
          "An NDB whose selector cannot be read has an unknowable pool: it fails every request, even on node3.",
          [ndb("broken", {"nodeSelector": {"matchExpressions": [
              {"key": "testselect", "operator": "Bogus", "values": ["test1"]}]}, "maxDisruptedNodes": 1})],
          nd("nd", {"nodeNames": ["node3"]}), "Rejected", ["node3"],
          ["NodeDisruptionBudget broken is invalid", "operator"], failed=["NodeDisruptionBudget broken"])
gate_case("invalid_ndb_limit_fails_closed.json",
          "An NDB on test1 with maxDisruptedNodes 150% cannot be applied: it fails the requests on its pool.",
          [ndb("broken", dict(TEST1, maxDisruptedNodes="150%"))], nd("nd", {"nodeNames": ["node1"]}),
          "Rejected", ["node1"], ["NodeDisruptionBudget broken is invalid", "spec.maxDisruptedNodes"],
          failed=["NodeDisruptionBudget broken"])
gate_case("invalid_adb_fails_closed_in_its_namespace.json",
          "An ADB with neither podSelector nor pvcSelector cannot be read: requests on nodes running pods of its namespace fail.",
          [adb("broken", {"maxDisruptions": 1})], nd("nd", {"nodeNames": ["node1"]}),
          "Rejected", ["node1"], ["ApplicationDisruptionBudget default/broken is invalid"],
          failed=["ApplicationDisruptionBudget default/broken"])
gate_case("invalid_adb_spares_other_nodes.json",
          "The invalid ADB of the previous case holds back no node without pods of its namespace: node3 is Granted.",
          [adb("broken", {"maxDisruptions": 1})], nd("nd", {"nodeNames": ["node3"]}),
          "Granted", ["node3"], ["granted"], failed=[])
# Budgets full because x holds node2: a request for node1 fits once x is done.
SEVERAL = two_db_pods + [nd("x", {"nodeNames": ["node2"]}, "Granted", ["node2"]),
                         ndb("test1", dict(TEST1, maxDisruptedNodes=1)),
                         ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 1}),
                         ndb("elsewhere", {"nodeSelector": {"matchLabels": {"testselect": "test2"}},
                                           "maxDisruptedNodes": 0}),
                         adb("db", dict(DB_PODS, maxDisruptions=1))]
SEVERAL_REASON = ["3 budgets fail: ",
                  "NodeDisruptionBudget test1: 1 of 1 in use; this request adds 1 (limit 1 of 2 nodes)",
                  " | NodeDisruptionBudget all: 1 of 1 in use; this request adds 1 (limit 1 of 3 nodes)",
                  " | ApplicationDisruptionBudget default/db: 1 of 1 in use; this request adds 1 (limit 1 of 2 nodes)"]
SEVERAL_FAILED = ["NodeDisruptionBudget test1", "NodeDisruptionBudget all",
                  "ApplicationDisruptionBudget default/db"]
gate_case("several_failing_budgets_all_listed.json",
          "Two NDBs and an ADB, full while x holds node2, all fail: every one is listed, and the reason names each.",
          SEVERAL, nd("nd", {"nodeNames": ["node1"]}), "Rejected", ["node1"], SEVERAL_REASON,
          failed=SEVERAL_FAILED, never=False)
gate_case("several_failing_budgets_pending_names_each.json",
          "The same request with retry waits: its condition names each failing budget, not only the first.",
          SEVERAL, nd("nd", {"nodeNames": ["node1"], **RETRY}), "Pending", ["node1"], SEVERAL_REASON,
          failed=SEVERAL_FAILED, never=False)
NEVER = [ndb("test1", dict(TEST1, maxDisruptedNodes=0)),
         ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 1}),
         adb("db", dict(DB_PODS, maxDisruptions=0))]
gate_case("several_budgets_never_allow_it_names_each.json",
          "Two NDBs and an ADB whose limits test1's 2 nodes exceed with nothing else disrupted: the request "
          "can never fit, and the reason names each budget and what would make it fit.",
          NEVER, nd("nd", dict(TEST1, **RETRY)), "Pending", ["node1", "node2"],
          ["3 budgets can never allow it: needs 2 nodes of NodeDisruptionBudget test1, which allows at most 0: "
           "raise maxDisruptedNodes to 2 or split the request",
           " | needs 2 nodes of NodeDisruptionBudget all, which allows at most 1: raise maxDisruptedNodes to 2 "
           "or split the request",
           " | needs 1 node of ApplicationDisruptionBudget default/db, which allows at most 0: raise "
           "maxDisruptions to 1"],
          failed=SEVERAL_FAILED, never=True)
gate_case("never_fits_names_only_what_never_allows_it.json",
          "A full budget (x holds node3) and one test1's 2 nodes exceed: only the one that can never allow it is named.",
          [nd("x", {"nodeNames": ["node3"]}, "Granted", ["node3"]),
           ndb("all", {"nodeSelector": {}, "maxDisruptedNodes": 2}),
           ndb("test1", dict(TEST1, maxDisruptedNodes=1))],
          nd("nd", dict(TEST1, **RETRY)), "Pending", ["node1", "node2"],
          ["needs 2 nodes of NodeDisruptionBudget test1, which allows at most 1: raise maxDisruptedNodes to 2 "
           "or split the request"],
          failed=["NodeDisruptionBudget all", "NodeDisruptionBudget test1"], never=True)
gate_case("many_failing_budgets_named_within_a_bound.json",
          "Thirty full NDBs (x holds node2): the reason names the first ones whole, then says how many more, "
          "within 1 KiB.",
          [nd("x", {"nodeNames": ["node2"]}, "Granted", ["node2"])] +
          [ndb(f"pool-{i:02d}", dict(TEST1, maxDisruptedNodes=1)) for i in range(30)],
          nd("nd", {"nodeNames": ["node1"], **RETRY}), "Pending", ["node1"],
          ["30 budgets fail: NodeDisruptionBudget pool-00: 1 of 1 in use; this request adds 1 (limit 1 of 2 nodes)",
           " | NodeDisruptionBudget pool-01: ", " more (status.disruptedDisruptionBudgets lists each)"],
          failed=[f"NodeDisruptionBudget pool-{i:02d}" for i in range(30)])
