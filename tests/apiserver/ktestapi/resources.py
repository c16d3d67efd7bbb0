"""The resource registry: built-in kinds, CRD-defined kinds, and the discovery documents.

A ResourceInfo describes one (group, version, resource). Storage is keyed by `rkey`
("group/resource"), shared by every version of a resource; events.k8s.io/v1 events share
the core events storage and are converted on the way in and out (see `convert_in/out`).
"""
import threading

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class ResourceInfo:
    def __init__(self, group, version, plural, kind, namespaced, short=(), categories=(),
                 singular=None, status=False, subresources=None, verbs=None, crd=None, rkey=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short = list(short)
        self.categories = list(categories)
        self.singular = singular or kind.lower()
        self.status = status                    # has a status subresource
        self.subresources = subresources or {}  # name -> dict(kind, group, version, verbs)
        self.verbs = verbs or VERBS
        self.crd = crd                          # CRD version info dict for custom resources
        self.rkey = rkey or (group + "/" + plural)

    @property
    def api_version(self):
        return self.group + "/" + self.version if self.group else self.version

    @property
    def gvr(self):
        return {"group": self.group, "version": self.version, "resource": self.plural}

    @property
    def gvk(self):
        return {"group": self.group, "version": self.version, "kind": self.kind}

    def discovery(self):
        out = [{
            "name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
            "kind": self.kind, "verbs": list(self.verbs),
        }]
        if self.short:
            out[0]["shortNames"] = list(self.short)
        if self.categories:
            out[0]["categories"] = list(self.categories)
        subs = dict(self.subresources)
        if self.status:
            subs["status"] = {"kind": self.kind, "verbs": ["get", "patch", "update"]}
        for name, sub in sorted(subs.items()):
            e = {"name": self.plural + "/" + name, "singularName": "", "namespaced": self.namespaced,
                 "kind": sub["kind"], "verbs": sub["verbs"]}
            if "group" in sub:
                e["group"] = sub["group"]
                e["version"] = sub["version"]
            out.append(e)
        return out


def aggregated(registry, core):
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    if core:
        groups = [("", ["v1"], "v1")]
    else:
        groups = registry.groups()
    for g, versions, pref in groups:
        vs = []
        for v in [pref] + [x for x in versions if x != pref]:
            res = []
            for r in registry.all():
                if r.group != g or r.version != v:
                    continue
                e = {"resource": r.plural, "responseKind": {"group": g, "version": v, "kind": r.kind},
                     "scope": "Namespaced" if r.namespaced else "Cluster", "singularResource": r.singular,
                     "verbs": list(r.verbs)}
                if r.short:
                    e["shortNames"] = list(r.short)
                if r.categories:
                    e["categories"] = list(r.categories)
                subs = dict(r.subresources)
                if r.status:
                    subs["status"] = {"kind": r.kind, "verbs": ["get", "patch", "update"]}
                if subs:
                    e["subresources"] = [{"subresource": n,
                                          "responseKind": {"group": sub.get("group", g), "version": sub.get("version", v),
                                                           "kind": sub["kind"]},
                                          "verbs": list(sub["verbs"])} for n, sub in sorted(subs.items())]
                res.append(e)
            vs.append({"version": v, "resources": res, "freshness": "Current"})
        items.append({"metadata": {"name": g, "creationTimestamp": None}, "versions": vs})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


def _builtins():
    R = ResourceInfo
    ev = {"eviction": {"kind": "Eviction", "group": "policy", "version": "v1", "verbs": ["create"]}}
    return [
        R("", "v1", "namespaces", "Namespace", False, ["ns"], status=True),
        R("", "v1", "nodes", "Node", False, ["no"], status=True),
        R("", "v1", "pods", "Pod", True, ["po"], ["all"], status=True, subresources=ev),
        R("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"], status=True),
        R("", "v1", "persistentvolumes", "PersistentVolume", False, ["pv"], status=True),
        R("", "v1", "services", "Service", True, ["svc"], ["all"], status=True),
        R("", "v1", "endpoints", "Endpoints", True, ["ep"]),
        R("", "v1", "secrets", "Secret", True),
        R("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
        R("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
        R("", "v1", "events", "Event", True, ["ev"]),
        R("", "v1", "replicationcontrollers", "ReplicationController", True, ["rc"], ["all"], status=True),
        R("apps", "v1", "deployments", "Deployment", True, ["deploy"], ["all"], status=True),
        R("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], ["all"], status=True),
        R("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], ["all"], status=True),
        R("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], ["all"], status=True),
        R("apps", "v1", "controllerrevisions", "ControllerRevision", True),
        R("batch", "v1", "jobs", "Job", True, (), ["all"], status=True),
        R("batch", "v1", "cronjobs", "CronJob", True, ["cj"], ["all"], status=True),
        R("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"], status=True),
        R("coordination.k8s.io", "v1", "leases", "Lease", True),
        R("events.k8s.io", "v1", "events", "Event", True, ["ev"], rkey="/events"),
        R("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ["sc"]),
        R("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, status=True),
        R("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
        R("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
        R("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        R("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        R("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        R("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        R("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
          "ValidatingWebhookConfiguration", False),
        R("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
          "MutatingWebhookConfiguration", False),
        R("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
          ["crd", "crds"], status=True),
        # virtual, create-only review resources (answered by the authorizer, never stored)
        R("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=["create"]),
        R("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=["create"]),
        R("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
          verbs=["create"]),
        R("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=["create"]),
        R("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
          verbs=["create"]),
    ]


# group -> preferred version order for built-ins
class Registry:
    def __init__(self):
        self.lock = threading.RLock()
        self.builtin = _builtins()
        self.custom = {}   # crd name -> list[ResourceInfo]

    def all(self):
        with self.lock:
            out = list(self.builtin)
            for infos in self.custom.values():
                out.extend(infos)
            return out

    def lookup(self, group, version, plural):
        for r in self.all():
            if r.group == group and r.version == version and r.plural == plural:
                return r
        return None

    def by_rkey(self, rkey):
        for r in self.all():
            if r.rkey == rkey:
                return r
        return None

    def by_kind(self, api_version, kind):
        g, _, v = api_version.rpartition("/")
        for r in self.all():
            if r.group == g and r.version == v and r.kind == kind:
                return r
        return None

    def groups(self):
        """[(group, [versions in preference order])] for /apis (excluding core)."""
        order = []
        vers = {}
        for r in self.all():
            if r.group == "":
                continue
            if r.group not in vers:
                order.append(r.group)
                vers[r.group] = []
            if r.version not in vers[r.group]:
                vers[r.group].append(r.version)
        out = []
        for g in order:
            vs = vers[g]
            pref = None
            for infos in self.custom.values():
                for i in infos:
                    if i.group == g and i.crd and i.crd.get("storage"):
                        pref = i.version
            vs = sorted(vs, key=_version_priority)
            if pref is None:
                pref = vs[0]
            out.append((g, vs, pref))
        return out

    def set_crd(self, crd):
        """(Re)register the kinds a CRD defines (only when Established)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        infos = []
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            subs = v.get("subresources") or {}
            info = ResourceInfo(spec.get("group"), v["name"], names.get("plural"), names.get("kind"),
                                spec.get("scope") == "Namespaced", names.get("shortNames") or [],
                                names.get("categories") or [], names.get("singular") or names.get("kind", "").lower(),
                                status="status" in subs, crd=v)
            info.crd_name = crd["metadata"]["name"]
            infos.append(info)
        with self.lock:
            self.custom[crd["metadata"]["name"]] = infos

    def remove_crd(self, name):
        with self.lock:
            self.custom.pop(name, None)


def _version_priority(v):
    """Kubernetes version priority: GA > beta > alpha, higher numbers first, others last by name."""
    import re
    m = re.match(r'^v(\d+)(?:(alpha|beta)(\d+))?$', v)
    if not m:
        return (3, 0, 0, v)
    major = int(m.group(1))
    kind = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (kind, -major, -minor, v)


# ---- events.k8s.io/v1 <-> core/v1 Event -----------------------------------------
_EV_MAP = [("regarding", "involvedObject"), ("note", "message"), ("deprecatedSource", "source"),
           ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
           ("deprecatedCount", "count"), ("reportingController", "reportingComponent")]


def convert_in(info, obj):
    """Convert an object posted at `info`'s version into the storage form."""
    if info.group == "events.k8s.io":
        o = dict(obj)
        for new, old in _EV_MAP:
            if new in o:
                o[old] = o.pop(new)
        o["apiVersion"] = "v1"
        return o
    return obj


def convert_out(info, obj):
    """Convert a stored object to the representation served at `info`."""
    if info.group == "events.k8s.io":
        o = dict(obj)
        for new, old in _EV_MAP:
            if old in o:
                o[new] = o.pop(old)
        o["apiVersion"] = info.api_version
        return o
    if obj.get("apiVersion") != info.api_version:
        o = dict(obj)
        o["apiVersion"] = info.api_version
        return o
    return obj
