"""meta.k8s.io/v1 Table responses, as served for `kubectl get`.

Column sets follow kubernetes/pkg/printers/internalversion for the kinds kubectl users see
most (pods, nodes, namespaces, PVCs, PVs, services, deployments, PDBs, leases, events,
volume attachments); other built-ins get the default "Name, Created At" table. Custom resources use the
CRD version's additionalPrinterColumns (default: Age), evaluated with simple JSONPath.
Built-in age cells are pre-rendered strings (as the real server does); CR `date` columns are
timestamps that kubectl renders as ages.
"""
import datetime
import functools
import json
import re


@functools.lru_cache(maxsize=8192)
def parse_time(ts):
    try:
        return datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    except Exception:
        return None


def human_duration(seconds):
    """apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return "%ds" % seconds
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return "%dm" % minutes if s == 0 else "%dm%ds" % (minutes, s)
    if minutes < 180:
        return "%dm" % minutes
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return "%dh" % hours if m == 0 else "%dh%dm" % (hours, m)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        h = hours % 24
        return "%dd" % (hours // 24) if h == 0 else "%dd%dh" % (hours // 24, h)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def age(ts):
    t = parse_time(ts or "")
    if t is None:
        return "<unknown>"
    return human_duration(int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()))


def col(name, typ="string", priority=0, fmt="", desc=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


NAME = col("Name", fmt="name", desc="Name must be unique within a namespace. Is required when creating resources, "
           "although some resources may allow a client to request the generation of an appropriate name "
           "automatically. Name is primarily intended for creation idempotence and configuration definition. "
           "Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")


def _md(o):
    return o.get("metadata") or {}


def _pod_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    total = len(spec.get("containers") or [])
    ready = 0
    restarts = 0
    reason = st.get("reason") or st.get("phase") or "Pending"
    for cs in st.get("containerStatuses") or []:
        restarts += cs.get("restartCount", 0)
        if cs.get("ready"):
            ready += 1
        state = cs.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if _md(o).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return ["%s" % _md(o).get("name"), "%d/%d" % (ready, total), reason, str(restarts), age(_md(o).get("creationTimestamp")),
            st.get("podIP") or "<none>", spec.get("nodeName") or "<none>", st.get("nominatedNodeName") or "<none>",
            "<none>" if not gates else "%d/%d" % (0, len(gates))]


def _node_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conds.get("Ready") == "True":
        status = ["Ready"]
    elif "Ready" in conds and conds["Ready"] == "False":
        status = ["NotReady"]
    else:
        status = ["Unknown"]
    if spec.get("unschedulable"):
        status.append("SchedulingDisabled")
    roles = sorted(k.split("/", 1)[1] for k in (_md(o).get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1])
    if "kubernetes.io/role" in (_md(o).get("labels") or {}):
        roles.append(_md(o)["labels"]["kubernetes.io/role"])
    info = st.get("nodeInfo") or {}
    addrs = {}
    for a in st.get("addresses") or []:
        addrs.setdefault(a.get("type"), a.get("address"))
    return [_md(o).get("name"), ",".join(status), ",".join(roles) or "<none>", age(_md(o).get("creationTimestamp")),
            info.get("kubeletVersion", ""), addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _modes(m):
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(x, x) for x in (m or []))


def _pvc_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    phase = st.get("phase", "Pending")
    if _md(o).get("deletionTimestamp"):
        phase = "Terminating"
    cap = (st.get("capacity") or {}).get("storage", "")
    return [_md(o).get("name"), phase, spec.get("volumeName", ""), cap, _modes(st.get("accessModes")),
            spec.get("storageClassName") or "<unset>", spec.get("volumeAttributesClassName") or "<unset>",
            age(_md(o).get("creationTimestamp")), spec.get("volumeMode", "Filesystem")]


def _pv_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    claim = ""
    cr = spec.get("claimRef")
    if cr:
        claim = "%s/%s" % (cr.get("namespace", ""), cr.get("name", ""))
    phase = st.get("phase", "")
    if _md(o).get("deletionTimestamp"):
        phase = "Terminating"
    return [_md(o).get("name"), (spec.get("capacity") or {}).get("storage", ""), _modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim, spec.get("storageClassName") or "<unset>",
            spec.get("volumeAttributesClassName") or "<unset>", st.get("reason", ""), age(_md(o).get("creationTimestamp")),
            spec.get("volumeMode", "Filesystem")]


def _svc_row(o):
    spec = o.get("spec") or {}
    ports = []
    for p in spec.get("ports") or []:
        s = "%s/%s" % (p.get("port"), p.get("protocol", "TCP"))
        if p.get("nodePort"):
            s = "%s:%s/%s" % (p.get("port"), p["nodePort"], p.get("protocol", "TCP"))
        ports.append(s)
    sel = spec.get("selector")
    return [_md(o).get("name"), spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>",
            ",".join(spec.get("externalIPs") or []) or "<none>", ",".join(ports) or "<none>",
            age(_md(o).get("creationTimestamp")),
            ",".join("%s=%s" % kv for kv in sorted(sel.items())) if sel else "<none>"]


def _ns_row(o):
    return [_md(o).get("name"), (o.get("status") or {}).get("phase", "Active"), age(_md(o).get("creationTimestamp"))]


def _deploy_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    return [_md(o).get("name"), "%d/%d" % (st.get("readyReplicas", 0), spec.get("replicas", 1)),
            st.get("updatedReplicas", 0), st.get("availableReplicas", 0), age(_md(o).get("creationTimestamp"))]


def _pdb_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    mn = spec.get("minAvailable")
    mx = spec.get("maxUnavailable")
    return [_md(o).get("name"), "N/A" if mn is None else str(mn), "N/A" if mx is None else str(mx),
            st.get("disruptionsAllowed", 0), age(_md(o).get("creationTimestamp"))]


def _lease_row(o):
    return [_md(o).get("name"), (o.get("spec") or {}).get("holderIdentity", ""), age(_md(o).get("creationTimestamp"))]


def _event_row(o):
    io = o.get("involvedObject") or {}
    last = o.get("lastTimestamp") or o.get("eventTime") or _md(o).get("creationTimestamp")
    first = o.get("firstTimestamp") or o.get("eventTime")
    src = o.get("source") or {}
    obj = "%s/%s" % ((io.get("kind") or "").lower(), io.get("name", ""))
    return [age(last), o.get("type", ""), o.get("reason", ""), obj, io.get("fieldPath", ""),
            ", ".join(x for x in (src.get("component") or o.get("reportingComponent"), src.get("host")) if x),
            o.get("message", "").strip(), age(first), o.get("count", 1), _md(o).get("name")]


def _va_row(o):
    spec = o.get("spec") or {}
    return [_md(o).get("name"), spec.get("attacher", ""), (spec.get("source") or {}).get("persistentVolumeName") or "",
            spec.get("nodeName", ""), bool((o.get("status") or {}).get("attached")), age(_md(o).get("creationTimestamp"))]


def _default_row(o):
    return [_md(o).get("name"), _md(o).get("creationTimestamp")]


BUILTIN = {
    "/pods": ([NAME, col("Ready"), col("Status"), col("Restarts"), col("Age"), col("IP", priority=1),
               col("Node", priority=1), col("Nominated Node", priority=1), col("Readiness Gates", priority=1)], _pod_row),
    "/nodes": ([NAME, col("Status"), col("Roles"), col("Age"), col("Version"), col("Internal-IP", priority=1),
                col("External-IP", priority=1), col("OS-Image", priority=1), col("Kernel-Version", priority=1),
                col("Container-Runtime", priority=1)], _node_row),
    "/namespaces": ([NAME, col("Status"), col("Age")], _ns_row),
    "/persistentvolumeclaims": ([NAME, col("Status"), col("Volume"), col("Capacity"), col("Access Modes"),
                                 col("StorageClass"), col("VolumeAttributesClass"), col("Age"),
                                 col("VolumeMode", priority=1)], _pvc_row),
    "/persistentvolumes": ([NAME, col("Capacity"), col("Access Modes"), col("Reclaim Policy"), col("Status"),
                            col("Claim"), col("StorageClass"), col("VolumeAttributesClass"), col("Reason"), col("Age"),
                            col("VolumeMode", priority=1)], _pv_row),
    "/services": ([NAME, col("Type"), col("Cluster-IP"), col("External-IP"), col("Port(s)"), col("Age"),
                   col("Selector", priority=1)], _svc_row),
    "apps/deployments": ([NAME, col("Ready"), col("Up-to-date", "integer"), col("Available", "integer"), col("Age")],
                         _deploy_row),
    "policy/poddisruptionbudgets": ([NAME, col("Min Available"), col("Max Unavailable"),
                                     col("Allowed Disruptions", "integer"), col("Age")], _pdb_row),
    "coordination.k8s.io/leases": ([NAME, col("Holder"), col("Age")], _lease_row),
    "storage.k8s.io/volumeattachments": ([NAME, col("Attacher", fmt="name"), col("PV"), col("Node"),
                                          col("Attached", "boolean"), col("Age")], _va_row),
    "/events": ([col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Subobject", priority=1),
                 col("Source", priority=1), col("Message"), col("First Seen", priority=1),
                 col("Count", "integer", priority=1), col("Name", priority=1)], _event_row),
}
DEFAULT = ([NAME, col("Created At", "date", desc="CreationTimestamp is a timestamp representing the server time "
                      "when this object was created.")], _default_row)


# ---- JSONPath for printer columns ---------------------------------------------------
# The subset of k8s.io/client-go/util/jsonpath that additionalPrinterColumns use (the API
# server rejects recursive descent in them): `.field`, `['field']`, `[n]` (negative counts
# from the end), `[a:b]`, `[*]` / `.*`, and filters `[?(@.a.b == "v")]` / `!=` comparing a
# string, number, true/false or null, or `[?(@.a)]` (the field exists).
_FIELD = re.compile(r'[A-Za-z0-9_\-$/]+')
_FILTER = re.compile(r'\[\?\(\s*@((?:\.[A-Za-z0-9_\-$/]+|\[\'[^\']*\'\])*)\s*'
                     r'(?:(==|!=)\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|-?\d+(?:\.\d+)?|true|false|null)\s*)?\)\]')
_INDEX = re.compile(r'\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?\]')


def _parse(path):
    """[(op, arg)] with op field|index|slice|all|filter; raises ValueError on a bad path."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1].strip()
    if path.startswith("$"):
        path = path[1:]
    segs, pos = [], 0
    while pos < len(path):
        if path.startswith("..", pos):
            raise ValueError("recursive descent is not supported in printer columns")
        if path.startswith(".*", pos) or path.startswith("[*]", pos):
            segs.append(("all", None))
            pos += 2 if path[pos + 1] == "*" and path[pos] == "." else 3
            continue
        if path[pos] == ".":
            m = _FIELD.match(path, pos + 1)
            if not m:
                raise ValueError("bad field at %d in %r" % (pos, path))
            segs.append(("field", m.group(0)))
            pos = m.end()
            continue
        if path.startswith("['", pos):
            end = path.find("']", pos + 2)
            if end < 0:
                raise ValueError("unterminated ['...'] in %r" % path)
            segs.append(("field", path[pos + 2:end]))
            pos = end + 2
            continue
        m = _FILTER.match(path, pos)
        if m:
            sub = _parse(m.group(1)) if m.group(1) else []
            value = None
            if m.group(2):
                value = json.loads(m.group(3)) if not m.group(3).startswith("'") else m.group(3)[1:-1]
            segs.append(("filter", (sub, m.group(2), value)))
            pos = m.end()
            continue
        m = _INDEX.match(path, pos)
        if m and (m.group(1) or m.group(2) is not None):
            if m.group(2) is None:
                segs.append(("index", int(m.group(1))))
            else:
                segs.append(("slice", (int(m.group(1)) if m.group(1) else None,
                                       int(m.group(2)) if m.group(2) else None)))
            pos = m.end()
            continue
        raise ValueError("unsupported JSONPath at %d in %r" % (pos, path))
    return segs


def _walk(segs, values):
    cur = list(values)
    for op, arg in segs:
        nxt = []
        for c in cur:
            if op == "field":
                if isinstance(c, dict) and arg in c:
                    nxt.append(c[arg])
            elif op == "index":
                if isinstance(c, list) and -len(c) <= arg < len(c):
                    nxt.append(c[arg])
            elif op == "slice":
                if isinstance(c, list):
                    nxt.extend(c[arg[0]:arg[1]])
            elif op == "all":
                if isinstance(c, dict):
                    nxt.extend(c[k] for k in sorted(c))
                elif isinstance(c, list):
                    nxt.extend(c)
            elif isinstance(c, list):  # filter: over a list's items (anything else: no result)
                sub, cmp, want = arg
                for item in c:
                    got = _walk(sub, [item])
                    if cmp is None:
                        keep = bool(got)
                    elif cmp == "==":
                        keep = bool(got) and _same(got[0], want)
                    else:
                        keep = bool(got) and not _same(got[0], want)
                    if keep:
                        nxt.append(item)
        cur = nxt
    return cur


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def jsonpath(obj, path):
    """Every result of @path on @obj, in order ([] when nothing matches or the path is not
    in the supported subset)."""
    try:
        return _walk(_parse(path), [obj])
    except ValueError:
        return []


def _cell(typ, value):
    if typ == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (dict, list)):
            return json.dumps(value, separators=(",", ":"))
        return str(value)
    if typ == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value == int(value):
            return int(value)
        return None
    if typ == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if typ == "boolean":
        return value if isinstance(value, bool) else None
    if typ == "date":
        return age(value) if isinstance(value, str) else None
    return None


def crd_columns(version):
    cols = version.get("additionalPrinterColumns") or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    defs = [NAME]
    for c in cols:
        defs.append({"name": c.get("name"), "type": c.get("type", "string"), "format": c.get("format", ""),
                     "description": c.get("description", ""), "priority": c.get("priority", 0)})
    return defs, cols


def to_table(info, objs, list_meta, include="Metadata"):
    """Build a Table for `objs` of resource `info`."""
    if info.crd is not None:
        defs, cols = crd_columns(info.crd)

        def row(o):
            cells = [_md(o).get("name")]
            for c in cols:
                # as kube-apiserver's table convertor: the first result only (a path that
                # yields several values prints one), none -> an empty cell
                r = jsonpath(o, c.get("jsonPath", ""))
                cells.append(_cell(c.get("type", "string"), r[0]) if r else None)
            return cells
    else:
        defs, row = BUILTIN.get(info.rkey, DEFAULT)
    rows = []
    for o in objs:
        r = {"cells": row(o)}
        if include == "Object":
            r["object"] = o
        elif include != "None":
            r["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _md(o)}
        rows.append(r)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": defs, "rows": rows}
