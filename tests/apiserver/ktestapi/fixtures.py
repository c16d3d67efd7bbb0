"""Fixture loading (JSON or the YAML subset of yamlish) and the large-cluster generator.

Fixture objects are stored as given (status included), bypassing admission and the
create-time status reset, the way objects restored from etcd would be. Kinds are resolved
by apiVersion+kind against the registry; CRDs in a fixture are registered first, so custom
resources of those kinds may follow in the same files. `List` objects are expanded. An object
defined more than once (same kind, namespace, name) is loaded from its last definition.
`metadata.uid` may be fixed in a fixture so that ownerReferences can point at it.
"""
import copy
import json

from .api import now_ts
from .store import make_key


def read_objects(path):
    with open(path) as f:
        text = f.read()
    docs = None
    s = text.lstrip()
    if s.startswith("{") or s.startswith("["):
        try:
            d = json.loads(text)
            docs = d if isinstance(d, list) else [d]
        except ValueError:
            docs = None
    if docs is None:
        from .yamlish import load_all
        docs = load_all(text)
    out = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            out.extend(d["items"])
        elif d is not None:
            out.append(d)
    return out


def load(cluster, paths):
    objs = []
    for p in paths:
        objs.extend(read_objects(p))
    # an object defined in several files (same kind, namespace and name): the last one wins
    last = {}
    for i, o in enumerate(objs):
        md = o.get("metadata") or {}
        last[(o.get("apiVersion"), o.get("kind"), md.get("namespace") or "", md.get("name"))] = i
    objs = [o for i, o in enumerate(objs) if last[(o.get("apiVersion"), o.get("kind"),
                                                     (o.get("metadata") or {}).get("namespace") or "",
                                                     (o.get("metadata") or {}).get("name"))] == i]
    order = {"Namespace": 0, "CustomResourceDefinition": 1}
    objs.sort(key=lambda o: order.get(o.get("kind"), 2))
    for o in objs:
        info = cluster.registry.by_kind(o.get("apiVersion", ""), o.get("kind", ""))
        if info is None:
            raise ValueError("fixture: unknown kind %s %s" % (o.get("apiVersion"), o.get("kind")))
        o = copy.deepcopy(o)
        md = o.setdefault("metadata", {})
        if info.namespaced:
            md.setdefault("namespace", "default")
            if cluster.store.get("/namespaces", md["namespace"]) is None:
                cluster.create_internal("/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": md["namespace"]}})
        else:
            md.pop("namespace", None)
        if info.rkey == "apiextensions.k8s.io/customresourcedefinitions" and not o.get("status"):
            cluster._crd_status(o)
        if info.rkey == "/pods" and md.get("namespace"):
            cluster._ensure_default_sa(md["namespace"])
        key = make_key(md.get("namespace") if info.namespaced else None, md["name"])
        if cluster.store.get(info.rkey, key) is not None:
            if info.rkey in ("/namespaces",) or (info.rkey == "/serviceaccounts" and md["name"] == "default"):
                continue
        cluster.create_internal(info.rkey, o)
    cluster.sync_pdbs()


def restore(cluster, path):
    """Load a state.json written by store.save: same objects, uids and resourceVersions.

    The revision counter continues from the saved one; the watch history starts empty (so a
    watch from a version before the restart gets 410 and relists, unlike etcd-backed restarts)."""
    with open(path) as f:
        data = json.load(f)
    st = cluster.store
    with st.lock:
        for rk, objs in data["tables"].items():
            if rk == "apiextensions.k8s.io/customresourcedefinitions":
                for o in objs:
                    cluster.registry.set_crd(o)
            t = st.table(rk)
            for k in list(t.keys):
                st._unindex(rk, k, t.objs[k])
            t.objs.clear()
            t.keys = []
            for o in objs:
                md = o["metadata"]
                st.bulk_load(rk, make_key(md.get("namespace"), md["name"]), o)
        st.rv = max(st.rv, int(data["resourceVersion"]))
        st.history.clear()
        st.history_rvs.clear()
        st.compacted_rv = st.rv
    cluster.pdb_dirty.set()


KNOWN = ("nodes", "pods-per-node", "pvcs-per-node", "pvcs", "namespaces")


def parse_spec(spec):
    out = {}
    for part in (spec or "").split(","):
        if part.strip():
            k, _, v = part.partition("=")
            if k.strip() not in KNOWN:
                raise ValueError("--generate: unknown key %r (known: %s)" % (k.strip(), ", ".join(KNOWN)))
            out[k.strip()] = int(v)
    return out


def generate(cluster, spec):
    """Generate a large cluster. spec: nodes=N,pods-per-node=M[,pvcs-per-node=K][,namespaces=S].

    Nodes node-00001.. (Ready, zone labels), pods `<node>-p<j>` in namespaces bench-<j % S>
    (Running, Ready, owned by one ReplicaSet per namespace), PVCs bound to local PVs pinned to
    their node by nodeAffinity. Objects are bulk-loaded (no watch history).
    """
    p = parse_spec(spec)
    nodes = p.get("nodes", 0)
    ppn = p.get("pods-per-node", 0)
    pvcs = p.get("pvcs-per-node", p.get("pvcs", 0))  # "pvcs" is accepted as an alias
    nss = max(1, p.get("namespaces", 10))
    st = cluster.store
    ts = now_ts()
    import uuid
    with st.lock:
        rv = str(st.next_rv())
        for i in range(nss):
            ns = "bench-%d" % i
            if st.get("/namespaces", ns) is None:
                cluster.create_internal("/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        rsets = {}
        for i in range(nss):
            ns = "bench-%d" % i
            cnt = sum(1 for j in range(ppn) if j % nss == i) * nodes
            rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": "bench", "namespace": ns, "uid": str(uuid.uuid4()), "generation": 1,
                               "creationTimestamp": ts, "resourceVersion": rv, "labels": {"app": "bench"}},
                  "spec": {"replicas": cnt, "selector": {"matchLabels": {"app": "bench"}},
                           "template": {"metadata": {"labels": {"app": "bench"}},
                                        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}},
                  "status": {"replicas": cnt, "readyReplicas": cnt, "availableReplicas": cnt}}
            st.bulk_load("apps/replicasets", make_key(ns, "bench"), rs)
            rsets[ns] = rs
        zones = ["zone-a", "zone-b", "zone-c"]
        for n in range(1, nodes + 1):
            name = "node-%05d" % n
            st.bulk_load("/nodes", name, {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": str(uuid.uuid4()), "creationTimestamp": ts, "resourceVersion": rv,
                             "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                        "topology.kubernetes.io/zone": zones[n % 3],
                                        "pool": "pool-%d" % (n % 10)}},
                "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "lastHeartbeatTime": ts, "lastTransitionTime": ts}],
                           "addresses": [{"type": "InternalIP", "address": "10.%d.%d.%d" % (n >> 16, (n >> 8) & 255, n & 255)},
                                         {"type": "Hostname", "address": name}],
                           "nodeInfo": {"kubeletVersion": "v1.32.0", "bootID": str(uuid.uuid4()), "osImage": "Linux",
                                        "kernelVersion": "6.1", "containerRuntimeVersion": "containerd://1.7",
                                        "architecture": "amd64", "operatingSystem": "linux"}}})
            for j in range(ppn):
                ns = "bench-%d" % (j % nss)
                pname = "%s-p%d" % (name, j)
                rs = rsets[ns]
                st.bulk_load("/pods", make_key(ns, pname), {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pname, "namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": ts,
                                 "resourceVersion": rv, "labels": {"app": "bench", "slot": str(j)},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bench",
                                                      "uid": rs["metadata"]["uid"], "controller": True,
                                                      "blockOwnerDeletion": True}]},
                    "spec": {"nodeName": name, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                             "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                             "serviceAccountName": "default"},
                    "status": {"phase": "Running", "podIP": "10.244.%d.%d" % (n % 250, j % 250),
                               "conditions": [{"type": "Ready", "status": "True"}],
                               "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                                      "state": {"running": {"startedAt": ts}}}]}})
            for k in range(pvcs):
                ns = "bench-%d" % (k % nss)
                pvc = "%s-data-%d" % (name, k)
                pv = "pv-%s-%d" % (name, k)
                st.bulk_load("/persistentvolumes", pv, {
                    "apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": pv, "uid": str(uuid.uuid4()), "creationTimestamp": ts, "resourceVersion": rv},
                    "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                             "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "local",
                             "local": {"path": "/mnt/disks/%d" % k},
                             "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": pvc},
                             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}]}}},
                    "status": {"phase": "Bound"}})
                st.bulk_load("/persistentvolumeclaims", make_key(ns, pvc), {
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": pvc, "namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": ts,
                                 "resourceVersion": rv, "labels": {"app": "bench"}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                             "storageClassName": "local", "volumeName": pv},
                    "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}})
        # nothing before this point can be watched from: like a fresh watch cache
        st.compacted_rv = st.rv
