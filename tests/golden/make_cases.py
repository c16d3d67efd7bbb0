#!/usr/bin/env python3
"""Writes the golden eviction cases (tests/golden/eviction/*.json) from fixture F of
shared/acceptance/README.md. The cases are committed; rerun this after changing it."""
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


def review(name, ns="default", user="alice", uid="705ab4f5-6393-11e8-b7cc-42010a800002", dry=False):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid,
        "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
        "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "requestSubResource": "eviction",
        "name": name, "namespace": ns, "operation": "CREATE",
        "userInfo": {"username": user, "uid": "1234", "groups": ["system:authenticated"]},
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
