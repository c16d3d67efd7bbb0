"""PodDisruptionBudget status (the disruption controller's arithmetic) and eviction checks.

compute_pdb_status mirrors pkg/controller/disruption: expected pods come from the pods'
controllers' scale (ReplicaSet / Deployment / StatefulSet / ReplicationController
spec.replicas) when maxUnavailable or a percentage minAvailable is used, and from the pod
count for an integer minAvailable. Healthy = Ready condition True, not terminating and not
in status.disruptedPods (an eviction recorded less than 2 minutes ago).
"""
import datetime
import math
import re

from .selection import label_selector_from_obj

DISRUPTED_POD_TTL = 120


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def pod_ready(pod):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def scaled(v, total, round_up):
    """GetScaledValueFromIntOrPercent."""
    if isinstance(v, int):
        return v
    m = re.match(r'^(\d+)%$', str(v))
    if not m:
        raise ValueError("invalid value for IntOrString: invalid value %r" % v)
    p = int(m.group(1))
    return int(math.ceil(p * total / 100.0)) if round_up else int(math.floor(p * total / 100.0))


def pdb_pods(store, pdb):
    """Pods (in the PDB's namespace) its selector matches; an empty selector matches none."""
    spec = pdb.get("spec") or {}
    sel = spec.get("selector")
    if not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions")):
        return []
    try:
        s = label_selector_from_obj(sel)
    except ValueError:
        return []
    ns = pdb["metadata"].get("namespace")
    items, _, _, _ = store.list("/pods", ns=ns, pred=lambda p: s.matches((p.get("metadata") or {}).get("labels")))
    return items


def _controller_ref(obj):
    for r in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if r.get("controller"):
            return r
    return None


def expected_scale(store, pods):
    """Sum of spec.replicas over the pods' distinct controllers. Raises ValueError if a pod has none."""
    seen = {}
    for p in pods:
        ns = p["metadata"].get("namespace")
        ref = _controller_ref(p)
        if ref is None:
            raise ValueError('found no controller ref for pod "%s"' % p["metadata"]["name"])
        kind = ref.get("kind")
        ctl = None
        if kind == "ReplicaSet":
            rs = store.get("apps/replicasets", "%s/%s" % (ns, ref.get("name")))
            if rs is not None and rs["metadata"].get("uid") == ref.get("uid"):
                dref = _controller_ref(rs)
                if dref is not None and dref.get("kind") == "Deployment":
                    d = store.get("apps/deployments", "%s/%s" % (ns, dref.get("name")))
                    if d is not None and d["metadata"].get("uid") == dref.get("uid"):
                        ctl = d
                if ctl is None:
                    ctl = rs
        elif kind == "StatefulSet":
            ctl = store.get("apps/statefulsets", "%s/%s" % (ns, ref.get("name")))
        elif kind == "ReplicationController":
            ctl = store.get("/replicationcontrollers", "%s/%s" % (ns, ref.get("name")))
        if ctl is None:
            raise ValueError('found no controllers for pod "%s"' % p["metadata"]["name"])
        seen[ctl["metadata"]["uid"]] = (ctl.get("spec") or {}).get("replicas", 1)
    return sum(seen.values())


def compute_pdb_status(store, pdb, now=None):
    """Return the status the disruption controller would write for `pdb`."""
    now = now or _now()
    spec = pdb.get("spec") or {}
    old = pdb.get("status") or {}
    pods = pdb_pods(store, pdb)
    disrupted = {}
    for name, ts in (old.get("disruptedPods") or {}).items():
        try:
            t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            continue
        if (now - t).total_seconds() < DISRUPTED_POD_TTL and any(
                p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp") for p in pods):
            disrupted[name] = ts
    failed = None
    try:
        if "maxUnavailable" in spec and spec["maxUnavailable"] is not None:
            expected = expected_scale(store, pods)
            mu = scaled(spec["maxUnavailable"], expected, True)
            desired = max(0, expected - mu)
        elif isinstance(spec.get("minAvailable"), int):
            expected = len(pods)
            desired = spec["minAvailable"]
        elif spec.get("minAvailable") is not None:
            expected = expected_scale(store, pods)
            desired = scaled(spec["minAvailable"], expected, True)
        else:
            expected = expected_scale(store, pods)
            desired = expected
    except ValueError as e:
        failed = str(e)
        expected, desired = 0, 0
    healthy = 0
    for p in pods:
        if p["metadata"].get("deletionTimestamp") or p["metadata"]["name"] in disrupted:
            continue
        if pod_ready(p):
            healthy += 1
    allowed = 0 if failed else max(0, healthy - desired)
    gen = pdb["metadata"].get("generation", 1)
    prev_cond = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
    if failed:
        cstatus, reason, msg = "False", "SyncFailed", failed
    elif allowed > 0:
        cstatus, reason, msg = "True", "SufficientPods", ""
    else:
        cstatus, reason, msg = "False", "InsufficientPods", ""
    ltt = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if prev_cond and prev_cond.get("status") == cstatus:
        ltt = prev_cond.get("lastTransitionTime", ltt)
    st = {"observedGeneration": gen, "disruptionsAllowed": allowed, "currentHealthy": healthy,
          "desiredHealthy": desired, "expectedPods": expected,
          "conditions": [{"type": "DisruptionAllowed", "status": cstatus, "reason": reason, "message": msg,
                          "observedGeneration": gen, "lastTransitionTime": ltt}]}
    if disrupted:
        st["disruptedPods"] = disrupted
    return st


def matching_pdbs(store, pod):
    ns = pod["metadata"].get("namespace")
    labels = pod["metadata"].get("labels") or {}
    out = []
    items, _, _, _ = store.list("policy/poddisruptionbudgets", ns=ns)
    for pdb in items:
        sel = (pdb.get("spec") or {}).get("selector")
        if not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions")):
            continue
        try:
            if label_selector_from_obj(sel).matches(labels):
                out.append(pdb)
        except ValueError:
            continue
    return out
