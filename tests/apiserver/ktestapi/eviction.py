"""PodDisruptionBudget status (the disruption controller's arithmetic) and eviction checks.

compute_pdb_status mirrors pkg/controller/disruption: expected pods come from the pods'
controllers' scale (ReplicaSet / Deployment / StatefulSet / ReplicationController
spec.replicas) when maxUnavailable or a percentage minAvailable is used, and from the pod
count for an integer minAvailable; with neither set, 0. Pods without a controller are
"unmanaged": left out of the scale, not an error. Healthy = Ready condition True, not
terminating and not in status.disruptedPods (an eviction recorded less than 2 minutes ago).
disruptionsAllowed is 0 while no pod is expected. A selector that does not parse, or a
controller that cannot be found, fails the sync as the controller's failSafe does: the last
counts and observedGeneration stay, disruptionsAllowed becomes 0, the condition says SyncFailed.
A policy/v1 selector {} selects every pod of the namespace; an absent one none.
tests/apiserver/test_pdb_table.py restates the controller's own tests against this.
"""
import datetime
import math
import re

from .selection import label_selector_from_obj, valid_label_key, valid_label_value

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
    """Pods (in the PDB's namespace) its selector matches: an absent selector matches none, {}
    every pod. Raises ValueError when the selector does not parse."""
    sel = (pdb.get("spec") or {}).get("selector")
    if sel is None:
        return []
    # As metav1.LabelSelectorAsSelector: keys and matchLabels values must be label syntax.
    for k, v in (sel.get("matchLabels") or {}).items():
        if not valid_label_key(k) or not valid_label_value(str(v)):
            raise ValueError("invalid label selector: matchLabels %s=%s" % (k, v))
    for e in sel.get("matchExpressions") or []:
        if not valid_label_key(str(e.get("key"))):
            raise ValueError("invalid label selector: key %r" % e.get("key"))
    s = label_selector_from_obj(sel)
    ns = pdb["metadata"].get("namespace")
    items, _, _, _ = store.list("/pods", ns=ns, pred=lambda p: s.matches((p.get("metadata") or {}).get("labels")))
    return items


def _controller_ref(obj):
    for r in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if r.get("controller"):
            return r
    return None


def expected_scale(store, pods):
    """Sum of spec.replicas over the pods' distinct controllers; pods without a controller are
    left out. Raises ValueError when a pod's controller is not found."""
    seen = {}
    for p in pods:
        ns = p["metadata"].get("namespace")
        ref = _controller_ref(p)
        if ref is None:
            continue
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
    try:
        pods = pdb_pods(store, pdb)
        if spec.get("maxUnavailable") is not None:
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
            expected, desired = 0, 0
    except ValueError as e:
        return _fail_safe(old, str(e), now)
    disrupted = {}
    for name, ts in (old.get("disruptedPods") or {}).items():
        try:
            t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            continue
        if (now - t).total_seconds() < DISRUPTED_POD_TTL and any(
                p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp") for p in pods):
            disrupted[name] = ts
    healthy = 0
    for p in pods:
        if p["metadata"].get("deletionTimestamp") or p["metadata"]["name"] in disrupted:
            continue
        if pod_ready(p):
            healthy += 1
    # No pod expected: a budget whose first pods have just appeared is safe until counted.
    allowed = max(0, healthy - desired) if expected > 0 else 0
    gen = pdb["metadata"].get("generation", 1)
    if allowed > 0:
        cstatus, reason = "True", "SufficientPods"
    else:
        cstatus, reason = "False", "InsufficientPods"
    st = {"observedGeneration": gen, "disruptionsAllowed": allowed, "currentHealthy": healthy,
          "desiredHealthy": desired, "expectedPods": expected,
          "conditions": [_condition(old, cstatus, reason, "", gen, now)]}
    if disrupted:
        st["disruptedPods"] = disrupted
    return st


def _condition(old, cstatus, reason, msg, gen, now):
    prev = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
    ltt = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if prev and prev.get("status") == cstatus:
        ltt = prev.get("lastTransitionTime", ltt)
    return {"type": "DisruptionAllowed", "status": cstatus, "reason": reason, "message": msg,
            "observedGeneration": gen, "lastTransitionTime": ltt}


def _fail_safe(old, msg, now):
    """The controller's failSafe: the last status with disruptionsAllowed 0 and SyncFailed."""
    gen = old.get("observedGeneration", 0)
    st = {"observedGeneration": gen, "disruptionsAllowed": 0,
          "currentHealthy": old.get("currentHealthy", 0), "desiredHealthy": old.get("desiredHealthy", 0),
          "expectedPods": old.get("expectedPods", 0),
          "conditions": [_condition(old, "False", "SyncFailed", msg, gen, now)]}
    if old.get("disruptedPods"):
        st["disruptedPods"] = old["disruptedPods"]
    return st


def matching_pdbs(store, pod):
    ns = pod["metadata"].get("namespace")
    labels = pod["metadata"].get("labels") or {}
    out = []
    items, _, _, _ = store.list("policy/poddisruptionbudgets", ns=ns)
    for pdb in items:
        # As the eviction handler: an absent selector matches nothing, {} every pod.
        sel = (pdb.get("spec") or {}).get("selector")
        if sel is None:
            continue
        try:
            if label_selector_from_obj(sel).matches(labels):
                out.append(pdb)
        except ValueError:
            continue
    return out
