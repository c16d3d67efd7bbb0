#!/usr/bin/env python3
"""Writes a synthetic cluster as `kubectl get -o json` would print it: N nodes, M pods per node
with realistic labels, owner references, containers and resource requests, and a few budgets.
Usage: gen-cluster.py NODES PODS_PER_NODE [--ndbs N] [--adbs N] [--zone-budget] > cluster.json

Without flags: 500 apps and 50 ApplicationDisruptionBudgets (maxDisruptions 1). --adbs N: twice N
apps (at least 500), N of them with an ApplicationDisruptionBudget (maxDisruptions 20 %).
--ndbs N: N racks of consecutive nodes (label `rack`), a NodeDisruptionBudget each
(maxDisruptedNodes 20 %). --zone-budget: one more NodeDisruptionBudget over every node with
topologyKey topology.kubernetes.io/zone and maxDisruptedDomains 1 (nodes are in 3 zones)."""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("nodes", type=int)
ap.add_argument("per", type=int)
ap.add_argument("--ndbs", type=int, default=0)
ap.add_argument("--adbs", type=int, default=None)
ap.add_argument("--zone-budget", action="store_true")
args = ap.parse_args()
nodes, per = args.nodes, args.per
napps = 500 if args.adbs is None else max(500, (2 * args.adbs + 49) // 50 * 50)
rack = (nodes + args.ndbs - 1) // args.ndbs if args.ndbs else 0
items = []
for n in range(nodes):
    name = f"node-{n:05d}"
    items.append({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "uid": f"00000000-0000-4000-8000-{n:012d}", "resourceVersion": str(1000 + n),
        "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                   "topology.kubernetes.io/zone": f"zone-{n % 3}", "node.kubernetes.io/instance-type": "m5.2xlarge",
                   "pool": f"pool-{n % 10}", **({"rack": f"rack-{n // rack}"} if rack else {})}},
        "spec": {"podCIDR": f"10.{n // 256}.{n % 256}.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastHeartbeatTime": "2026-11-22T05:00:00Z"}],
                   "nodeInfo": {"bootID": f"boot-{n}", "kubeletVersion": "v1.32.4"}}})
    for p in range(per):
        app = f"app-{(n * per + p) % napps}"
        pod = f"{app}-{n:05d}-{p:03d}"
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": pod, "namespace": f"team-{(n * per + p) % 50}", "uid": f"10000000-0000-4000-8000-{n * per + p:012d}",
            "resourceVersion": str(100000 + n * per + p), "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": {"app": app, "pod-template-hash": "6d4b75cb6d", "tier": "backend", "version": "v2"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T09:59:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-6d4b75cb6d",
                                 "uid": "20000000-0000-4000-8000-000000000001", "controller": True,
                                 "blockOwnerDeletion": True}]},
            "spec": {"nodeName": name, "serviceAccountName": "default", "restartPolicy": "Always",
                     "containers": [{"name": "main", "image": f"registry.example.com/{app}:2.4.1",
                                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                     "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                                   "limits": {"memory": "512Mi"}},
                                     "env": [{"name": "LOG_LEVEL", "value": "info"}]}]},
            "status": {"phase": "Running", "podIP": f"10.{n // 256}.{n % 256}.{p + 2}",
                       "conditions": [{"type": "Ready", "status": "True"}]}})
if args.adbs is None:
    for t in range(50):
        items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                      "metadata": {"name": f"app-{t}", "namespace": f"team-{t}"},
                      "spec": {"podSelector": {"matchLabels": {"app": f"app-{t}"}}, "maxDisruptions": 1}})
else:
    # Pod k of the cluster is app k % napps in namespace team-(k % 50), and napps is a multiple
    # of 50: app t's pods are all in team-(t % 50).
    for t in range(args.adbs):
        items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                      "metadata": {"name": f"app-{t}", "namespace": f"team-{t % 50}"},
                      "spec": {"podSelector": {"matchLabels": {"app": f"app-{t}"}}, "maxDisruptions": "20%"}})
for r in range(args.ndbs):
    items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                  "metadata": {"name": f"rack-{r}"},
                  "spec": {"nodeSelector": {"matchLabels": {"rack": f"rack-{r}"}}, "maxDisruptedNodes": "20%"}})
if args.zone_budget:
    items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                  "metadata": {"name": "one-zone-at-a-time"},
                  "spec": {"nodeSelector": {}, "topologyKey": "topology.kubernetes.io/zone",
                           "maxDisruptedDomains": 1}})
json.dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items},
          sys.stdout, indent=4)
