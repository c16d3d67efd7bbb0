"""The API semantics, independent of HTTP: create/get/list/update/patch/delete/evict.

Cluster owns the Store, the Registry and the admission Dispatcher, and implements what the
generic registry and the built-in strategies of kube-apiserver do:
  * uid / creationTimestamp / resourceVersion / generation (bumped on spec change; for custom
    resources on any change outside metadata and status) / generateName;
  * status subresource semantics: create and main-endpoint updates keep the stored status
    (pods are created Pending, PVCs/PVs/workloads with empty status; nodes keep theirs),
    the /status endpoint changes only .status;
  * optimistic concurrency (409 Conflict on stale resourceVersion in PUT or in a patch),
    no-op updates do not bump resourceVersion;
  * finalizers and deletionTimestamp; graceful pod deletion with a kubelet stand-in
    (`kubelet` = "immediate" removes the pod at once, "grace" after its grace period);
  * namespace lifecycle (creation in a missing/terminating namespace is refused; deleting a
    namespace deletes its contents, then the namespace), a default ServiceAccount per namespace;
  * CRDs: registration of served versions (Established), schema defaults/pruning/validation,
    deletion of the custom resources when the CRD goes;
  * PodDisruptionBudget status kept current (disruption controller stand-in) and the eviction
    subresource;
  * managedFields on every write through the API and server-side apply (the merge itself is in
    ssa.py).
"""
import copy
import datetime
import heapq
import json
import random
import threading
import time
import uuid

from . import errors as E
from . import ssa
from . import upstream
from .admission import Attributes, Dispatcher
from .eviction import compute_pdb_status, matching_pdbs, pod_ready
from .resources import Registry, convert_in, convert_out
from .selection import parse_label_selector, parse_field_selector
from .store import Store, Expired, make_key, REQUEST
from . import cel, crdcheck
from . import kindcheck
from .validation import (validate_meta, validate_builtin, apply_defaults, prune, validate_schema,
                         validate_job_status_update)

GEN_RKEYS = {"apps/deployments", "apps/replicasets", "apps/statefulsets", "apps/daemonsets", "batch/jobs",
             "batch/cronjobs", "policy/poddisruptionbudgets", "apiextensions.k8s.io/customresourcedefinitions",
             "admissionregistration.k8s.io/validatingwebhookconfigurations",
             "admissionregistration.k8s.io/mutatingwebhookconfigurations", "/replicationcontrollers",
             "networking.k8s.io/networkpolicies"}
RETURN_DELETED = {"/pods", "storage.k8s.io/volumeattachments"}   # ReturnDeletedObject stores
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ts_in(seconds):
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _parse_ts(ts):
    try:
        return datetime.datetime.strptime(ts or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def _shift_ts(ts, seconds):
    """`ts` moved by `seconds` (a malformed timestamp counts as now)."""
    t = _parse_ts(ts) or datetime.datetime.now(datetime.timezone.utc)
    return (t + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds_until(ts):
    t = _parse_ts(ts)
    if t is None:
        return 0.0
    return max(0.0, (t - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


class User:
    """An authenticated user: every one is in system:authenticated, which `groups` leaves out.

    The subject of a SubjectAccessReview is not a request's user: it is in exactly the groups the
    review names (`implicit_authenticated=False`), as with kube-apiserver."""

    def __init__(self, name, groups, token, uid=None, implicit_authenticated=True):
        self.name = name
        self.groups = list(groups)
        self.token = token
        self.uid = uid or str(uuid.uuid4())
        self.implicit_authenticated = implicit_authenticated

    def user_info(self):
        out = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        out["groups"] = self.groups + ["system:authenticated"]
        return out


SYSTEM = User("system:apiserver", ["system:masters"], None, "system")


def _body_spec(obj):
    """Everything outside metadata/status/apiVersion/kind (what bumps generation)."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Cluster:
    def __init__(self, kubelet="immediate", history=20000, node_lifecycle=True):
        self.store = Store(history_limit=history)
        self.registry = Registry()
        self.admission = Dispatcher(self)
        self.kubelet = kubelet
        self.pdb_dirty = threading.Event()
        self.stop = threading.Event()
        self.pending_pod_deletes = {}   # key -> monotonic deadline
        # The kubelet stand-in's timer (grace mode): (deadline, key) in deadline order; an entry
        # whose key is no longer pending at that deadline was cancelled or rescheduled.
        self.kubelet_due = []
        self.kubelet_cv = threading.Condition()
        self.node_lifecycle = node_lifecycle
        self.dirty_nodes = set()
        self.gc_queue = set()            # uids of deleted owners whose dependents need collecting
        self.gc_owners = set()           # (rkey, uid) of owners in foreground/orphan deletion
        self.dropped = []                # unknown fields dropped with a warning (see audit())
        self.refused = []                # writes the decoder or the upstream definitions refused
        self.dropped_lock = threading.Lock()
        self.ctl = threading.Thread(target=self._controllers, name="controllers", daemon=True)
        self.kubelet_thread = threading.Thread(target=self._kubelet_timer, name="kubelet", daemon=True)
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create_internal("/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        from .authz import bootstrap_objects
        for o in bootstrap_objects():
            self.create_internal("rbac.authorization.k8s.io/" + ("clusterroles" if o["kind"] == "ClusterRole"
                                                                 else "clusterrolebindings"), o)
        self.create_internal("/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "type": "ClusterIP",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}})

    # ------------------------------------------------------------------ helpers
    def info_for(self, rkey):
        return self.registry.by_rkey(rkey)

    def _finish_new(self, info, obj):
        md = obj.setdefault("metadata", {})
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_ts()
        if info.rkey in GEN_RKEYS or info.crd is not None:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        md.pop("deletionTimestamp", None)
        md.pop("deletionGracePeriodSeconds", None)
        md.pop("selfLink", None)
        return obj

    def _commit(self, rkey, key, obj, typ):
        with self.store.lock:
            rv = self.store.next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            self.store.commit(rkey, key, obj, typ)
        self._after_write(rkey, obj, typ)
        return obj

    def _after_write(self, rkey, obj, typ):
        if typ == "DELETED" and obj["metadata"].get("uid") in self.store.dependents:
            self.gc_queue.add(obj["metadata"]["uid"])
        if typ != "DELETED" and obj["metadata"].get("deletionTimestamp") and \
                set(obj["metadata"].get("finalizers") or []) & {"foregroundDeletion", "orphan"}:
            self.gc_owners.add((rkey, obj["metadata"].get("uid")))
        if rkey == "/nodes" and typ != "DELETED" and self.node_lifecycle:
            self.dirty_nodes.add(obj["metadata"]["name"])
        if rkey in ("/pods", "policy/poddisruptionbudgets", "apps/replicasets", "apps/deployments",
                    "apps/statefulsets", "/replicationcontrollers"):
            self.pdb_dirty.set()
        if rkey == "apiextensions.k8s.io/customresourcedefinitions":
            if typ == "DELETED":
                self.registry.remove_crd(obj["metadata"]["name"])
            else:
                self.registry.set_crd(obj)

    def create_internal(self, rkey, obj):
        """Create without admission/validation (fixtures, controllers). Returns the stored object."""
        info = self.info_for(rkey)
        obj = copy.deepcopy(obj)
        md = obj.setdefault("metadata", {})
        self._defaults(info, obj, None)
        if "uid" not in md:
            self._finish_new(info, obj)
            md = obj["metadata"]
        else:  # a fixture may fix the uid (for ownerReferences); fill in the rest
            md.setdefault("creationTimestamp", now_ts())
            if (info.rkey in GEN_RKEYS or info.crd is not None) and "generation" not in md:
                md["generation"] = 1
        key = make_key(md.get("namespace") if info.namespaced else None, md["name"])
        with self.store.lock:
            if self.store.get(rkey, key) is not None:
                raise E.already_exists(info.plural, info.group, md["name"])
            self._commit(rkey, key, obj, "ADDED")
        if rkey == "/namespaces":
            self._ensure_default_sa(md["name"])
        return obj

    def _ensure_default_sa(self, ns):
        if self.store.get("/serviceaccounts", ns + "/default") is None:
            try:
                self.create_internal("/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                          "metadata": {"name": "default", "namespace": ns}})
            except E.APIError:
                pass

    # ------------------------------------------------------------------ defaults
    # built-in kinds whose spec / status are Go structs (always serialised, at least as {})
    SPEC_STRUCT = {"/namespaces", "/nodes", "/pods", "/persistentvolumeclaims", "/persistentvolumes", "/services",
                   "/replicationcontrollers", "apps/deployments", "apps/replicasets", "apps/statefulsets",
                   "apps/daemonsets", "batch/jobs", "batch/cronjobs", "policy/poddisruptionbudgets",
                   "coordination.k8s.io/leases", "storage.k8s.io/volumeattachments",
                   "apiextensions.k8s.io/customresourcedefinitions", "networking.k8s.io/networkpolicies"}
    STATUS_STRUCT = SPEC_STRUCT - {"coordination.k8s.io/leases", "networking.k8s.io/networkpolicies"}

    def _defaults(self, info, obj, old):
        """Defaulting + PrepareForCreate/PrepareForUpdate of the built-in strategies."""
        rk = info.rkey
        md = obj["metadata"]
        if rk in self.SPEC_STRUCT and not isinstance(obj.get("spec"), dict):
            obj["spec"] = {}
        if rk in self.STATUS_STRUCT and not isinstance(obj.get("status"), dict):
            obj["status"] = {}
        if rk == "/namespaces":
            md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md.get("name", "")
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            if old is None:
                obj["status"] = {"phase": "Active"}
        elif rk == "/pods":
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("securityContext", {})
            spec.setdefault("enableServiceLinks", True)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            spec.setdefault("priority", 0)
            if old is None:
                spec.setdefault("serviceAccountName", "default")
                spec.setdefault("serviceAccount", spec["serviceAccountName"])
                tol = spec.setdefault("tolerations", [])
                keys = {t.get("key") for t in tol}
                for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
                    if k not in keys:
                        tol.append({"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                if not isinstance(c, dict):
                    continue
                img = c.get("image", "")
                c.setdefault("imagePullPolicy", "Always" if (img.endswith(":latest") or ":" not in img.rsplit("/", 1)[-1]) else "IfNotPresent")
                c.setdefault("terminationMessagePath", "/dev/termination-log")
                c.setdefault("terminationMessagePolicy", "File")
                c.setdefault("resources", {})
                for p in c.get("ports") or []:
                    p.setdefault("protocol", "TCP")
        elif rk == "/services":
            spec = obj.setdefault("spec", {})
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if old is None and spec.get("clusterIP") in (None, ""):
                n = random.randint(1, 65000)
                spec["clusterIP"] = "10.96.%d.%d" % (n // 256, n % 256)
                spec["clusterIPs"] = [spec["clusterIP"]]
            elif old is not None:
                spec.setdefault("clusterIP", (old.get("spec") or {}).get("clusterIP"))
            for p in spec.get("ports") or []:
                p.setdefault("protocol", "TCP")
                p.setdefault("targetPort", p.get("port"))
        elif rk == "/secrets":
            if not obj.get("type"):
                obj["type"] = "Opaque"
            sd = obj.pop("stringData", None)
            if isinstance(sd, dict):
                import base64
                data = obj.setdefault("data", {})
                for k, v in sd.items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
        elif rk == "apps/deployments":
            spec = obj.setdefault("spec", {})
            spec.setdefault("replicas", 1)
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
            spec.setdefault("strategy", {"type": "RollingUpdate",
                                         "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        elif rk in ("apps/replicasets", "apps/statefulsets", "/replicationcontrollers"):
            obj.setdefault("spec", {}).setdefault("replicas", 1)
        elif rk == "/persistentvolumes":
            obj.setdefault("spec", {}).setdefault("persistentVolumeReclaimPolicy", "Retain")
            obj["spec"].setdefault("volumeMode", "Filesystem")
        elif rk == "/persistentvolumeclaims":
            obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        elif rk == "admissionregistration.k8s.io/validatingwebhookconfigurations" or \
                rk == "admissionregistration.k8s.io/mutatingwebhookconfigurations":
            for w in obj.get("webhooks") or []:
                w.setdefault("failurePolicy", "Fail")
                w.setdefault("matchPolicy", "Equivalent")
                w.setdefault("namespaceSelector", {})
                w.setdefault("objectSelector", {})
                w.setdefault("timeoutSeconds", 10)
                for r in w.get("rules") or []:
                    r.setdefault("scope", "*")
                if "service" in (w.get("clientConfig") or {}):
                    w["clientConfig"]["service"].setdefault("port", 443)
                if rk.endswith("mutatingwebhookconfigurations"):
                    w.setdefault("reinvocationPolicy", "Never")
        elif rk == "policy/poddisruptionbudgets":
            pass
        elif rk == "networking.k8s.io/networkpolicies":
            spec = obj.setdefault("spec", {})
            spec.setdefault("podSelector", {})
            for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
                ports = rule.get("ports") if isinstance(rule, dict) else None
                for p in ports or []:
                    if isinstance(p, dict):
                        p.setdefault("protocol", "TCP")
            if not spec.get("policyTypes"):
                spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
        elif rk == "apiextensions.k8s.io/customresourcedefinitions":
            spec = obj.setdefault("spec", {})
            names = spec.setdefault("names", {})
            if names.get("kind"):
                names.setdefault("singular", names["kind"].lower())
                names.setdefault("listKind", names["kind"] + "List")
            spec.setdefault("conversion", {"strategy": "None"})
        if info.crd is not None:
            sch = (info.crd.get("schema") or {}).get("openAPIV3Schema") or {}
            obj.update(apply_defaults(sch, obj))

    def _reset_status_for_create(self, info, obj):
        rk = info.rkey
        if not info.status or rk == "/nodes" or rk == "/namespaces":
            return
        if rk == "/pods":
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        elif rk == "/persistentvolumes":
            obj["status"] = {"phase": "Pending"}
        elif rk == "/persistentvolumeclaims":
            obj["status"] = {"phase": "Pending"}
        elif rk == "apiextensions.k8s.io/customresourcedefinitions":
            obj["status"] = {}
        else:
            obj["status"] = {}
            if rk in ("apps/deployments", "apps/replicasets", "apps/statefulsets", "apps/daemonsets", "batch/jobs",
                      "policy/poddisruptionbudgets", "/services", "batch/cronjobs", "/replicationcontrollers",
                      "storage.k8s.io/volumeattachments"):
                obj["status"] = {} if rk != "/services" else {"loadBalancer": {}}
                if rk == "policy/poddisruptionbudgets":
                    obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    @staticmethod
    def storage_model(info):
        """The upstream model objects of `info` are stored as (None for custom resources)."""
        if info.crd is not None:
            return None
        if info.group == "events.k8s.io":
            return upstream.model_for("", "v1", "Event")
        return upstream.model_for(info.group, info.version, info.kind)

    def _decode(self, info, obj, model):
        """Decode `obj` as the Go type `model` would (built-ins; only metadata for custom
        resources): a type error is a 400; unknown fields are removed. Returns the upstream.Result."""
        res = upstream.check(model, obj) if model else upstream.check_metadata(obj)
        if res.error:
            msg = '%s in version "%s" cannot be handled as a %s: %s' % (info.kind, info.version, info.kind,
                                                                        res.error)
            self._record("refused", info, obj, None, msg)
            raise E.bad_request(msg)
        return res

    def _record(self, what, info, obj, field, message=None):
        """Note for audit() a field dropped with a warning or a write refused by the decoder or
        the upstream definitions, with the request that sent it."""
        ctx = getattr(REQUEST, "ctx", None) or {}
        md = (obj or {}).get("metadata") if isinstance(obj, dict) else None
        md = md if isinstance(md, dict) else {}
        e = {"user": ctx.get("user"), "verb": ctx.get("verb"), "path": ctx.get("path"),
             "apiVersion": info.api_version, "kind": info.kind,
             "namespace": md.get("namespace"), "name": md.get("name"), "field": field}
        if message is not None:
            e["message"] = message
        with self.dropped_lock:
            (self.dropped if what == "dropped" else self.refused).append(e)

    def _decode_body(self, info, obj):
        """Decode a request body as served (events.k8s.io Events before their conversion),
        before defaulting, as kube-apiserver decodes before anything else: type errors are 400s,
        nulls and unknown fields go. Returns the unknown fields removed."""
        if info.group == "events.k8s.io":
            model = upstream.model_for(info.group, info.version, info.kind)
        else:
            model = self.storage_model(info)
        return self._decode(info, obj, model).unknown

    def _unknown_fields(self, info, unknown, field_validation, obj=None):
        """Strict: 400; Warn: warnings (recorded for audit()); Ignore: nothing."""
        if not unknown:
            return []
        if field_validation == "Strict":
            msg = '%s in version "%s" cannot be handled as a %s: strict decoding error: %s' % (
                info.kind, info.version, info.kind, ", ".join('unknown field "%s"' % u for u in unknown))
            for u in unknown:
                self._record("refused", info, obj, u, msg)
            raise E.bad_request(msg)
        if field_validation == "Ignore":
            return []
        for u in unknown:
            self._record("dropped", info, obj, u)
        return ['unknown field "%s"' % u for u in unknown]

    def audit(self, reset=False):
        """Re-check every stored object against its definitions (upstream models for built-ins,
        the CRD's structural schema for custom resources) and list the unknown fields dropped
        with a warning since start (or the last reset). Returns {"invalid": [...], "dropped": [...]}."""
        invalid = []
        with self.store.lock:
            objs = [(rkey, o) for rkey, t in sorted(self.store.tables.items()) for o in t.objs.values()]
        for rkey, o in objs:
            o = copy.deepcopy(o)
            md = o.get("metadata") or {}
            where = {"resource": rkey, "namespace": md.get("namespace"), "name": md.get("name")}
            info = self.registry.by_kind(o.get("apiVersion") or "", o.get("kind") or "")
            if info is None:
                info = self.registry.by_rkey(rkey)
            if info is None:
                invalid.append(dict(where, problem="no kind serves this object"))
                continue
            if info.crd is None:
                model = self.storage_model(info)
                if model is None:
                    continue
                res = upstream.check(model, o)
                problems = ([res.error] if res.error else []) + \
                    ['unknown field "%s"' % u for u in res.unknown] + \
                    ["%s: Required value" % r for r in res.required]
            else:
                res = upstream.check_metadata(o)
                sch = (info.crd.get("schema") or {}).get("openAPIV3Schema") or {}
                pruned = prune(sch, o, root=True)
                problems = ([res.error] if res.error else []) + \
                    ['unknown field "%s"' % u for u in res.unknown + _diff_fields(o, pruned)]
                errs = []
                validate_schema(sch, pruned, "", errs, root=True)
                problems += ["%s: %s" % (f, m) for _, f, m in errs]
            for p in problems:
                invalid.append(dict(where, problem=p))
        with self.dropped_lock:
            dropped, refused = list(self.dropped), list(self.refused)
            if reset:
                self.dropped.clear()
                self.refused.clear()
        return {"invalid": invalid, "dropped": dropped, "refused": refused}

    def _validate(self, info, obj, old, field_validation="Warn", served_unknown=()):
        """Return (causes, warnings) for the object; CR schema pruning happens here too."""
        causes = validate_meta(info.rkey, obj)
        warnings = []
        res = self._decode(info, obj, self.storage_model(info))
        unknown = list(served_unknown) + res.unknown
        if info.crd is None:
            warnings += self._unknown_fields(info, unknown, field_validation, obj)
            causes += validate_builtin(info.rkey, obj, old)
            if info.rkey == "/events" and old is None:
                causes += kindcheck.event_create(obj, info.group == "events.k8s.io")
            have = {c[1] for c in causes}
            for p in res.required:
                if p not in have:
                    causes.append(("FieldValueRequired", p, "Required value"))
                    self._record("refused", info, obj, p, "%s: Required value" % p)
            if info.rkey == "apiextensions.k8s.io/customresourcedefinitions" and not causes:
                try:
                    causes += crdcheck.check(obj)
                except cel.CelUnavailable as e:
                    raise cel.internal_error(e)
        else:
            sch = (info.crd.get("schema") or {}).get("openAPIV3Schema") or {}
            pruned = prune(sch, obj, root=True)
            unknown = unknown + _diff_fields(obj, pruned)
            warnings += self._unknown_fields(info, unknown, field_validation, obj)
            obj.clear()
            obj.update(pruned)
            validate_schema(sch, obj, "", causes, root=True)
            causes += self._validate_rules(sch, obj, old, causes)
        return causes, warnings

    @staticmethod
    def _validate_rules(sch, obj, old, causes):
        """x-kubernetes-validations of a custom resource (after defaulting, pruning and the schema)."""
        if not cel.has_rules_cached(sch):
            return []
        if any(c[0] == "FieldValueTypeInvalid" for c in causes):
            return [("FieldValueInvalid", "<nil>", 'Invalid value: "null": some validation rules were not checked '
                     'because the object was invalid; correct the existing errors to complete validation')]
        try:
            return [(r, f or "<nil>", m) for r, f, m in cel.process().validate(sch, obj, old)]
        except cel.CelUnavailable as e:
            raise cel.internal_error(e)

    # ------------------------------------------------------------------ read
    def get(self, info, ns, name):
        obj = self.store.get(info.rkey, make_key(ns if info.namespaced else None, name))
        if obj is None:
            raise E.not_found(info.plural, info.group, name)
        return convert_out(info, obj)

    def list(self, info, ns, label_selector=None, field_selector=None, limit=0, cont=None):
        ls = parse_label_selector(label_selector)
        fs = parse_field_selector(field_selector, info.rkey, info.kind, info.crd)
        if fs.get("metadata.namespace") is not None and info.namespaced:
            if ns and ns != fs.get("metadata.namespace"):
                return [], str(self.store.rv), None, None
            ns = fs.get("metadata.namespace")
        pred = None
        if not ls.empty() or fs.reqs:
            def pred(o):
                return ls.matches((o.get("metadata") or {}).get("labels")) and fs.matches(o, info.rkey)
        try:
            items, rv, tok, rem = self.store.list(info.rkey, ns=ns if info.namespaced else None, pred=pred,
                                                  limit=limit, cont=cont)
        except Expired as e:
            raise E.gone(str(e))
        except ValueError as e:
            raise E.bad_request(str(e))
        return [convert_out(info, o) for o in items], str(rv), tok, rem

    # ------------------------------------------------------------------ create
    def _check_namespace(self, info, ns, creating=True):
        if not info.namespaced:
            return
        nso = self.store.get("/namespaces", ns)
        if nso is None:
            raise E.not_found("namespaces", "", ns)
        if creating and (nso["metadata"].get("deletionTimestamp") or (nso.get("status") or {}).get("phase") == "Terminating"):
            raise E.APIError(403, "Forbidden", "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                             "because it is being terminated" % (info.plural, "", ns),
                             {"name": "", "kind": info.plural, "causes": [{"reason": "NamespaceTerminating",
                              "message": "namespace %s is being terminated" % ns, "field": "metadata.namespace"}]})

    def _check_type(self, info, obj):
        if not isinstance(obj, dict):
            raise E.bad_request("the object provided is unrecognized (must be of type %s)" % info.kind)
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if kind and kind != info.kind:
            raise E.bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                % (av, info.api_version) if av != info.api_version else
                                "the kind in the data (%s) does not match the expected kind (%s)" % (kind, info.kind))
        if av and av != info.api_version:
            # accept other served versions of the same group/kind (conversion None)
            other = self.registry.by_kind(av, kind or info.kind)
            if other is None or other.rkey != info.rkey:
                raise E.bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                    % (av, info.api_version))
        if not isinstance(obj.get("metadata", {}), dict):
            raise E.bad_request("metadata must be an object")

    def create(self, info, ns, body, user, dry_run=False, field_validation="Warn", field_manager=None,
               manager=None, managed=None):
        """POST. Returns (201, object, warnings).

        manager: the field manager the write is recorded under (fieldManager or the User-Agent
        prefix; None = no managedFields tracking); managed: managedFields computed by an apply."""
        obj = copy.deepcopy(body)
        self._check_type(info, obj)
        obj["apiVersion"] = info.api_version
        obj["kind"] = info.kind
        md = obj.setdefault("metadata", {})
        if info.namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + "".join(random.choice(NAME_CHARS) for _ in range(5))
        if md.get("resourceVersion"):
            # the storage layer refuses it; the error is not a Status, so it surfaces as 500 Unknown
            raise E.APIError(500, "Unknown", "resourceVersion should not be set on objects to be created")
        for k in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "selfLink"):
            md.pop(k, None)
        body_mf = md.pop("managedFields", None)
        served_unknown = self._decode_body(info, obj)
        obj = convert_in(info, obj)
        self._defaults(info, obj, None)
        self._reset_status_for_create(info, obj)
        if info.crd is not None and info.status:
            obj.pop("status", None)
        self._check_namespace(info, ns if info.namespaced else None)
        if info.rkey == "/pods":
            sa = obj["spec"].get("serviceAccountName")
            if sa and self.store.get("/serviceaccounts", "%s/%s" % (ns, sa)) is None:
                raise E.APIError(403, "Forbidden", 'pods "%s" is forbidden: error looking up service account %s/%s: '
                                 'serviceaccount "%s" not found' % (md.get("name", ""), ns, sa, sa),
                                 {"name": md.get("name", ""), "kind": "pods"})
        a = Attributes(info, "CREATE", md.get("name", ""), md.get("namespace", ""), obj, None, user, dry_run,
                       options={"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                **({"fieldManager": field_manager} if field_manager else {}),
                                **({"dryRun": ["All"]} if dry_run else {})})
        obj, warnings = self.admission.mutate(a)
        causes, w2 = self._validate(info, obj, None, field_validation, served_unknown)
        warnings += w2
        if causes:
            raise E.invalid(info.kind, info.group, md.get("name", ""), causes)
        if managed is not None:
            ssa.set_managed_fields(obj, managed)
        elif manager is not None:
            ssa.set_managed_fields(obj, ssa.track_update(ssa.Types.for_info(info), None, obj, body_mf, manager,
                                                         info.api_version, "", info.status, now_ts(), creating=True))
        if info.rkey == "apiextensions.k8s.io/customresourcedefinitions":
            self._crd_status(obj)
        self._finish_new(info, obj)
        a.obj = obj
        warnings += self.admission.validate(a)
        key = make_key(md.get("namespace") if info.namespaced else None, md["name"])
        with self.store.lock:
            if self.store.get(info.rkey, key) is not None:
                raise E.already_exists(info.plural, info.group, md["name"])
            if dry_run:
                obj["metadata"]["resourceVersion"] = ""
            else:
                self._commit(info.rkey, key, obj, "ADDED")
        if info.rkey == "/namespaces" and not dry_run:
            self._ensure_default_sa(md["name"])
        return 201, convert_out(info, obj), warnings

    def _crd_status(self, obj):
        names = (obj.get("spec") or {}).get("names") or {}
        t = now_ts()
        obj["status"] = {
            "acceptedNames": dict(names),
            "storedVersions": [v["name"] for v in (obj.get("spec") or {}).get("versions") or [] if v.get("storage")],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": t},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": t}]}

    # ------------------------------------------------------------------ update
    def update(self, info, ns, name, body, user, dry_run=False, subresource="", field_validation="Warn",
               field_manager=None, _patch=False, manager=None, managed=None):
        """PUT (or the second half of PATCH). Returns (200, object, warnings).

        manager/managed: as for create (managedFields the request carries replace the stored
        ones when they decode; an empty list keeps them)."""
        obj = copy.deepcopy(body)
        self._check_type(info, obj)
        if obj.get("metadata") is None:
            obj["metadata"] = {}
        md = obj["metadata"]
        if md.get("name") and md["name"] != name:
            raise E.bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (md["name"], name))
        if info.namespaced and md.get("namespace") and md["namespace"] != ns:
            raise E.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        key = make_key(ns if info.namespaced else None, name)
        old = self.store.get(info.rkey, key)
        if old is None:
            raise E.not_found(info.plural, info.group, name)
        rv = md.get("resourceVersion")
        if not rv and not _patch and (info.crd is not None or info.rkey in ("apiextensions.k8s.io/customresourcedefinitions",)):
            raise E.invalid(info.kind, info.group, name, [("FieldValueInvalid", "metadata.resourceVersion",
                                                           "Invalid value: 0x0: must be specified for an update")])
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise E.conflict(info.plural, info.group, name)
        body_mf = md.get("managedFields")
        served_unknown = self._decode_body(info, obj)
        obj = convert_in(info, obj)
        obj["apiVersion"] = old.get("apiVersion", info.api_version)
        obj["kind"] = info.kind
        new = self._prepare_update(info, obj, old, subresource)
        a = Attributes(info, "UPDATE", name, ns if info.namespaced else "", new, old, user, dry_run, subresource,
                       options={"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1",
                                **({"fieldManager": field_manager} if field_manager else {}),
                                **({"dryRun": ["All"]} if dry_run else {})})
        new, warnings = self.admission.mutate(a)
        if subresource == "status":
            causes, w2 = self._validate(info, new, old, field_validation, served_unknown)
            if info.rkey == "batch/jobs":
                causes += validate_job_status_update(new, old)
        else:
            causes, w2 = self._validate(info, new, old, field_validation, served_unknown)
        warnings += w2
        if old["metadata"].get("deletionTimestamp"):
            added = [f for f in new["metadata"].get("finalizers") or [] if f not in (old["metadata"].get("finalizers") or [])]
            if added:
                causes.append(("FieldValueForbidden", "metadata.finalizers", "Forbidden: no new finalizers can be "
                               "added if the object is being deleted, found new finalizers []string{%s}"
                               % ", ".join('"%s"' % f for f in added)))
        if causes:
            raise E.invalid(info.kind, info.group, name, causes)
        if managed is not None:
            ssa.set_managed_fields(new, managed)
        else:
            ssa.set_managed_fields(new, ssa.track_update(
                ssa.Types.for_info(info), old, new, body_mf, manager, info.api_version, subresource, info.status,
                now_ts()))
        # generation
        if "generation" in old["metadata"] and _body_spec(new) != _body_spec(old):
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1
        a.obj = new
        warnings += self.admission.validate(a)
        with self.store.lock:
            cur = self.store.get(info.rkey, key)
            if cur is None:
                raise E.not_found(info.plural, info.group, name)
            if cur["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise E.conflict(info.plural, info.group, name)
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            ssa.keep_timestamps(new, old)
            if new == old:
                return 200, convert_out(info, old), warnings
            if dry_run:
                return 200, convert_out(info, new), warnings
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                    new["metadata"].get("deletionGracePeriodSeconds", 0) == 0:
                self._commit(info.rkey, key, new, "DELETED")
                self._on_deleted(info, new)
            else:
                self._commit(info.rkey, key, new, "MODIFIED")
        return 200, convert_out(info, new), warnings

    def _prepare_update(self, info, obj, old, subresource):
        omd = old["metadata"]
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return new
        new = obj
        md = new["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "name",
                  "namespace"):
            if k in omd:
                md[k] = omd[k]
            else:
                md.pop(k, None)
        md.pop("selfLink", None)
        md.pop("managedFields", None)
        if info.status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        self._defaults(info, new, old)
        return new

    def patch(self, info, ns, name, content_type, body, user, dry_run=False, subresource="",
              field_validation="Warn", field_manager=None, manager=None):
        from .patch import apply_patch
        for attempt in range(5):
            cur = self.get(info, ns, name)
            patched = apply_patch(content_type, copy.deepcopy(cur), body, info.crd is not None)
            if not isinstance(patched, dict):
                raise E.bad_request("patch produced a non-object")
            pmd = patched.get("metadata") if isinstance(patched.get("metadata"), dict) else {}
            rv_in_patch = pmd.get("resourceVersion") != cur["metadata"].get("resourceVersion")
            if not pmd.get("resourceVersion"):
                patched.setdefault("metadata", {})["resourceVersion"] = cur["metadata"]["resourceVersion"]
            try:
                return self.update(info, ns, name, patched, user, dry_run, subresource, field_validation,
                                   field_manager, _patch=True, manager=manager)
            except E.APIError as e:
                if e.code == 409 and e.reason == "Conflict" and not rv_in_patch and attempt < 4:
                    continue
                raise
        raise E.conflict(info.plural, info.group, name)

    # ------------------------------------------------------------------ server-side apply
    def apply(self, info, ns, name, body, user, dry_run=False, subresource="", field_validation="Warn",
              field_manager=None, force=False, authorize_create=None):
        """PATCH with application/apply-patch+yaml. Returns (201 when created | 200, object, warnings).

        The configuration (YAML or JSON) is merged into the live object by `ssa.apply`; a missing
        object is created through the same path as a POST (after `authorize_create`, as
        kube-apiserver checks the create verb too), an existing one is updated as by PUT."""
        cfg = _decode_apply_body(body)
        gvk = "%s/%s, Kind=%s" % (info.group, info.version, cfg.get("kind") or "")
        if cfg.get("apiVersion") != info.api_version:
            raise E.bad_request("Incorrect version specified in apply patch. Specified patch version: %s, expected: %s"
                                % (cfg.get("apiVersion") or "", info.api_version))
        cmd = cfg.get("metadata")
        if cmd is not None and not isinstance(cmd, dict):
            raise E.bad_request("error decoding YAML: metadata must be an object")
        cmd = cmd or {}
        if cmd.get("managedFields") is not None:
            raise E.bad_request("metadata.managedFields must be nil")
        if cfg.get("kind") != info.kind:
            raise E.APIError(500, "", "failed to create typed patch object (%s): no corresponding type for %s"
                             % (gvk, gvk))
        # the Go types (built-ins) or the structural schema (custom resources) must know every field
        probe = copy.deepcopy(cfg)
        model = self.storage_model(info)
        if info.group == "events.k8s.io":
            model = upstream.model_for(info.group, info.version, info.kind)
        unknown = upstream.check(model, probe).unknown if model else upstream.check_metadata(probe).unknown
        if info.crd is not None:
            sch = (info.crd.get("schema") or {}).get("openAPIV3Schema") or {}
            unknown += _diff_fields(probe, prune(sch, probe, root=True))
        if unknown:
            errs = ["." + u + ": field not declared in schema" for u in unknown]
            raise E.APIError(500, "", "failed to create typed patch object (%s): %s"
                             % (gvk, errs[0] if len(errs) == 1 else "errors:\n  " + "\n  ".join(errs)))
        if info.namespaced and cmd.get("namespace") and cmd["namespace"] != ns:
            raise E.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        types = ssa.Types.for_info(info)
        rv_given = bool(cmd.get("resourceVersion"))
        key = make_key(ns if info.namespaced else None, name)
        for attempt in range(5):
            live = self.store.get(info.rkey, key)
            if live is None and subresource:
                raise E.not_found(info.plural, info.group, name)
            if cmd.get("name", "") != name and (cmd.get("name") or live is None):
                raise E.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                    % (cmd.get("name", ""), name))
            try:
                merged, mf, _ = ssa.apply(types, convert_out(info, live) if live is not None else None, cfg,
                                          field_manager, force, info.api_version, subresource, info.status, now_ts())
            except ssa.Conflict as c:
                msg, details = c.status()
                raise E.APIError(409, "Conflict", msg, details)
            except ssa.SSAError as e:
                raise E.APIError(500, "", "failed to create typed patch object (%s): %s" % (gvk, e))
            except (ValueError, TypeError) as e:
                raise E.APIError(500, "", "failed to decode managed fields: %s" % e)
            ssa.set_managed_fields(merged, mf)
            if live is None:
                if authorize_create is not None:
                    authorize_create()
                try:
                    return self.create(info, ns, merged, user, dry_run, field_validation, field_manager, managed=mf)
                except E.APIError as e:
                    if e.code == 409 and e.reason == "AlreadyExists" and attempt < 4:
                        continue   # created meanwhile: apply to it
                    raise
            md = merged.setdefault("metadata", {})
            if not md.get("resourceVersion"):
                md["resourceVersion"] = live["metadata"]["resourceVersion"]
            try:
                return self.update(info, ns, name, merged, user, dry_run, subresource, field_validation,
                                   field_manager, _patch=True, managed=mf)
            except E.APIError as e:
                if e.code == 409 and e.reason == "Conflict" and not rv_given and attempt < 4:
                    continue   # written meanwhile: merge into the new version
                raise
        raise E.conflict(info.plural, info.group, name)

    # ------------------------------------------------------------------ delete
    def delete(self, info, ns, name, opts, user, dry_run=False):
        """DELETE. Returns (code, body)."""
        opts = opts or {}
        key = make_key(ns if info.namespaced else None, name)
        old = self.store.get(info.rkey, key)
        if old is None:
            raise E.not_found(info.plural, info.group, name)
        pre = opts.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
            raise E.conflict(info.plural, info.group, name,
                             "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                             % (pre["uid"], old["metadata"].get("uid")))
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"].get("resourceVersion"):
            raise E.conflict(info.plural, info.group, name,
                             "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
                             % (pre["resourceVersion"], old["metadata"].get("resourceVersion")))
        a = Attributes(info, "DELETE", name, ns if info.namespaced else "", None, old, user, dry_run,
                       options={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                                **({"dryRun": ["All"]} if dry_run else {}),
                                **({"gracePeriodSeconds": opts["gracePeriodSeconds"]}
                                   if opts.get("gracePeriodSeconds") is not None else {}),
                                **({"propagationPolicy": opts["propagationPolicy"]}
                                   if opts.get("propagationPolicy") else {})})
        warnings = self.admission.validate(a)
        return self._delete_obj(info, key, old, opts, dry_run) + (warnings,)

    def _status_success(self, info, old):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": old["metadata"]["name"], "group": info.group, "kind": info.plural,
                            "uid": old["metadata"].get("uid")}}

    def _delete_obj(self, info, key, old, opts, dry_run):
        md = old["metadata"]
        grace = 0
        explicit = opts.get("gracePeriodSeconds")
        if explicit is not None and explicit < 0:
            explicit = 1   # rest.BeforeDelete: a negative grace period means 1 s
        if info.rkey == "/pods":
            # the pod strategy's CheckGracefulDelete
            grace = explicit
            if grace is None:
                grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            phase = (old.get("status") or {}).get("phase")
            if not (old.get("spec") or {}).get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0
            if grace < 0:
                grace = 1
        if info.rkey == "/namespaces":
            with self.store.lock:
                cur = self.store.get(info.rkey, key)
                if cur["metadata"].get("deletionTimestamp"):
                    return 200, convert_out(info, cur)
                new = copy.deepcopy(cur)
                new["metadata"]["deletionTimestamp"] = now_ts()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                new["status"] = {"phase": "Terminating"}
                if dry_run:
                    return 200, new
                self._commit(info.rkey, key, new, "MODIFIED")
            self._finish_namespace(md["name"])
            cur = self.store.get(info.rkey, key)
            return 200, convert_out(info, cur or new)
        policy = opts.get("propagationPolicy")
        if policy is None and opts.get("orphanDependents") is not None:
            policy = "Orphan" if opts["orphanDependents"] else "Background"
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise E.bad_request('propagationPolicy: Unsupported value: "%s": supported values: "Foreground", '
                                '"Background", "Orphan"' % policy)
        with self.store.lock:
            cur = self.store.get(info.rkey, key)
            if cur is None:
                raise E.not_found(info.plural, info.group, md["name"])
            gc_fin = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(policy)
            if gc_fin and not dry_run and cur["metadata"].get("uid") in self.store.dependents and \
                    gc_fin not in (cur["metadata"].get("finalizers") or []):
                # the GC finalizer goes on before deletion starts (below); on an object that is
                # already terminating it is added on its own
                cur = copy.deepcopy(cur)
                cur["metadata"]["finalizers"] = (cur["metadata"].get("finalizers") or []) + [gc_fin]
                if cur["metadata"].get("deletionTimestamp"):
                    self._commit(info.rkey, key, cur, "MODIFIED")
                    return 200, convert_out(info, cur)
            finalizers = cur["metadata"].get("finalizers") or []
            if cur["metadata"].get("deletionTimestamp"):
                # already terminating (rest.BeforeDelete): only an explicitly shorter grace period
                # changes anything; the deletion timestamp moves back by the difference
                cur_grace = cur["metadata"].get("deletionGracePeriodSeconds") or 0
                if info.rkey == "/pods" and cur_grace and explicit is not None and explicit < cur_grace:
                    new = self._shorten_grace(cur, explicit)
                    if dry_run:
                        return 200, convert_out(info, new)
                    self._commit(info.rkey, key, new, "MODIFIED")
                    if explicit == 0 and not finalizers:
                        return 200, convert_out(info, self._remove_now(info, key, new))
                    if explicit > 0:
                        self._kubelet_delete(key, _seconds_until(new["metadata"]["deletionTimestamp"]))
                    return 200, convert_out(info, self.store.get(info.rkey, key) or new)
                return 200, convert_out(info, cur)
            if finalizers or grace > 0:
                new = copy.deepcopy(cur)
                new["metadata"]["deletionTimestamp"] = ts_in(grace) if grace > 0 else now_ts()
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                if "generation" in new["metadata"]:
                    new["metadata"]["generation"] += 1
                if dry_run:
                    return 200, convert_out(info, new)
                self._commit(info.rkey, key, new, "MODIFIED")
                if info.rkey == "/pods" and grace > 0:
                    self._kubelet_delete(key, grace)
                return 200, convert_out(info, self.store.get(info.rkey, key) or new)
            new = copy.deepcopy(cur)
            if info.rkey == "/pods":
                # pods delete gracefully even with grace 0: deletionTimestamp and a zero grace
                # period are written first (a MODIFIED event), then the pod is removed
                new["metadata"]["deletionTimestamp"] = now_ts()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if not dry_run:
                    self._commit(info.rkey, key, new, "MODIFIED")
                    new = copy.deepcopy(new)
            if dry_run:
                return 200, (convert_out(info, new) if info.rkey in RETURN_DELETED or info.crd is not None
                             else self._status_success(info, cur))
            self._commit(info.rkey, key, new, "DELETED")
        self._on_deleted(info, new)
        if info.rkey in RETURN_DELETED or info.crd is not None:
            return 200, convert_out(info, new)
        return 200, self._status_success(info, new)

    @staticmethod
    def _shorten_grace(cur, grace):
        new = copy.deepcopy(cur)
        nmd = new["metadata"]
        nmd["deletionTimestamp"] = _shift_ts(nmd["deletionTimestamp"], grace - (nmd.get("deletionGracePeriodSeconds") or 0))
        nmd["deletionGracePeriodSeconds"] = grace
        return new

    def _remove_now(self, info, key, obj):
        """Delete a terminating object whose grace period is 0 and that has no finalizers."""
        with self.store.lock:
            gone = copy.deepcopy(obj)
            self._commit(info.rkey, key, gone, "DELETED")
        self._on_deleted(info, gone)
        return gone

    @staticmethod
    def _eviction_preconditions(pod, dopts):
        """The checks addConditionAndDeletePod makes (resource spelled "Pod", as there)."""
        pre = dopts.get("preconditions") or {}
        md = pod["metadata"]
        if pre.get("uid") and pre["uid"] != md.get("uid"):
            raise E.conflict("Pod", "", md["name"], "the UID in the precondition (%s) does not match the UID in "
                             "record (%s). The object might have been deleted and then recreated" % (pre["uid"], md.get("uid")))
        if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
            raise E.conflict("Pod", "", md["name"], "the ResourceVersion in the precondition (%s) does not match the "
                             "ResourceVersion in record (%s). The object might have been modified"
                             % (pre["resourceVersion"], md.get("resourceVersion")))

    def _mark_disruption_target(self, key):
        """PodDisruptionConditions (GA): an evicted pod gets DisruptionTarget=True before deletion."""
        with self.store.lock:
            cur = self.store.get("/pods", key)
            if cur is None or cur["metadata"].get("deletionTimestamp"):
                return
            new = copy.deepcopy(cur)
            conds = [c for c in (new.setdefault("status", {}).get("conditions") or []) if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                          "message": "Eviction API: evicting", "lastTransitionTime": now_ts(),
                          "lastProbeTime": None})
            new["status"]["conditions"] = conds
            self._commit("/pods", key, new, "MODIFIED")

    def set_kubelet(self, mode):
        """Switch the kubelet stand-in; in immediate mode pods waiting out a grace period go at once."""
        with self.store.lock:
            self.kubelet = mode
            due = sorted(self.pending_pod_deletes) if mode == "immediate" else []
            for k in due:
                del self.pending_pod_deletes[k]
        for k in due:
            self._force_delete_pod(k)

    def _kubelet_delete(self, key, grace):
        """Kubelet stand-in: a terminating pod goes away now ("immediate") or when its grace period
        ends ("grace"), as a kubelet removes it once its containers have exited: a timer at the
        deadline, not a poll."""
        if self.kubelet == "immediate":
            self._force_delete_pod(key)
            return
        deadline = time.monotonic() + grace
        with self.store.lock:
            self.pending_pod_deletes[key] = deadline
        with self.kubelet_cv:
            heapq.heappush(self.kubelet_due, (deadline, key))
            self.kubelet_cv.notify()

    def _kubelet_timer(self):
        """Background thread: removes each terminating pod at its deadline (grace mode)."""
        while not self.stop.is_set():
            with self.kubelet_cv:
                now = time.monotonic()
                if not self.kubelet_due or self.kubelet_due[0][0] > now:
                    wait = self.kubelet_due[0][0] - now if self.kubelet_due else 1.0
                    self.kubelet_cv.wait(min(wait, 1.0))
                    continue
                deadline, key = heapq.heappop(self.kubelet_due)
            with self.store.lock:
                if self.pending_pod_deletes.get(key) != deadline:
                    continue  # cancelled, finished already, or rescheduled to another deadline
                del self.pending_pod_deletes[key]
            try:
                self._force_delete_pod(key)
            except Exception:  # keep the timer alive; errors show up in tests as stale state
                import traceback
                traceback.print_exc()

    def _force_delete_pod(self, key):
        """The kubelet's final DELETE (gracePeriodSeconds=0): the grace period drops to 0 (a
        MODIFIED event), then the pod is removed unless finalizers still hold it."""
        with self.store.lock:
            cur = self.store.get("/pods", key)
            if cur is None or not cur["metadata"].get("deletionTimestamp"):
                return
            info = self.info_for("/pods")
            if cur["metadata"].get("deletionGracePeriodSeconds"):
                cur = self._shorten_grace(cur, 0)
                self._commit("/pods", key, cur, "MODIFIED")
            if cur["metadata"].get("finalizers"):
                return
            self._remove_now(info, key, cur)

    def _on_deleted(self, info, obj):
        if info.rkey == "apiextensions.k8s.io/customresourcedefinitions":
            spec = obj.get("spec") or {}
            rk = "%s/%s" % (spec.get("group"), (spec.get("names") or {}).get("plural"))
            with self.store.lock:
                t = self.store.tables.get(rk)
                for k in list(t.keys) if t else []:
                    o = copy.deepcopy(t.objs[k])
                    self._commit(rk, k, o, "DELETED")

    def _finish_namespace(self, ns):
        """Namespace controller stand-in: delete every namespaced object, then the namespace."""
        remaining = 0
        for info in self.registry.all():
            if not info.namespaced or info.group == "events.k8s.io":
                continue
            if info.crd is not None and info.version != _storage_version(info, self.registry):
                continue
            items, _, _, _ = self.store.list(info.rkey, ns=ns)
            for o in items:
                key = make_key(ns, o["metadata"]["name"])
                try:
                    self._delete_obj(info, key, o, {"gracePeriodSeconds": 0} if info.rkey == "/pods" else {}, False)
                except E.APIError:
                    pass
                if self.store.get(info.rkey, key) is not None:
                    remaining += 1
        if remaining == 0:
            with self.store.lock:
                cur = self.store.get("/namespaces", ns)
                if cur is not None and cur["metadata"].get("deletionTimestamp"):
                    new = copy.deepcopy(cur)
                    new["spec"] = {"finalizers": []}
                    if new["metadata"].get("finalizers"):
                        self._commit("/namespaces", ns, new, "MODIFIED")
                    else:
                        self._commit("/namespaces", ns, new, "DELETED")

    def delete_collection(self, info, ns, label_selector, field_selector, opts, user, dry_run=False):
        items, rv, _, _ = self.list(info, ns, label_selector, field_selector)
        deleted = []
        for o in items:
            try:
                self.delete(info, o["metadata"].get("namespace"), o["metadata"]["name"], opts, user, dry_run)
                deleted.append(o)
            except E.APIError as e:
                if e.code != 404:
                    raise
        return {"kind": info.kind + "List", "apiVersion": info.api_version, "metadata": {"resourceVersion": rv},
                "items": deleted}

    # ------------------------------------------------------------------ eviction
    def evict(self, ns, name, body, user, dry_run=False, field_validation="Warn"):
        """POST pods/<name>/eviction. Returns (201, Status, warnings)."""
        pods = self.registry.by_rkey("/pods")
        if not isinstance(body, dict) or body.get("kind") not in ("Eviction", None):
            raise E.bad_request("the object provided is unrecognized (must be of type Eviction)")
        av = body.get("apiVersion") or "policy/v1"
        if av not in ("policy/v1", "policy/v1beta1"):
            raise E.bad_request("the API version in the data (%s) does not match the expected API version (policy/v1)" % av)
        ev = copy.deepcopy(body)
        # decoded as the Go type policy/v1 Eviction is: type errors are 400s, unknown fields
        # (deleteOptions' among them) dropped with a warning or refused under Strict
        einfo = _EvictionInfo(av.split("/")[1])
        warnings = self._unknown_fields(einfo, self._decode(einfo, ev, upstream.model_for("policy", "v1", "Eviction"))
                                        .unknown, field_validation, ev)
        emd = ev.setdefault("metadata", {})
        if emd.get("name") and emd["name"] != name:
            raise E.bad_request("name in URL does not match name in Eviction object")
        if emd.get("namespace") and emd["namespace"] != ns:
            raise E.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        emd.setdefault("name", name)
        emd.setdefault("namespace", ns)
        emd.setdefault("creationTimestamp", None)
        dopts = ev.get("deleteOptions") or {}
        if dry_run:
            if dopts.get("dryRun") not in (None, [], ["All"]):
                raise E.bad_request("the dryRun alpha feature is disabled")
            dopts["dryRun"] = ["All"]
            ev["deleteOptions"] = dopts
        elif dopts.get("dryRun"):
            dry_run = True
        a = Attributes(pods, "CREATE", name, ns, ev, None, user, dry_run, "eviction",
                       kind={"group": "policy", "version": "v1", "kind": "Eviction"},
                       options={"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                **({"dryRun": ["All"]} if dry_run else {})})
        warnings += self.admission.validate(a)
        key = make_key(ns, name)
        pod = self.store.get("/pods", key)
        if pod is None:
            raise E.not_found("pods", "", name)
        phase = (pod.get("status") or {}).get("phase")
        ok = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
            self._evict_now(pods, key, pod, dopts, dry_run)
            return 201, ok, warnings
        with self.store.lock:
            pdbs = matching_pdbs(self.store, pod)
            if len(pdbs) > 1:
                # the real handler returns this Status as its result; the request finisher turns the
                # non-Success Status into an error: HTTP 500, no reason
                raise E.APIError(500, "", "This pod has more than one PodDisruptionBudget, which the "
                                 "eviction subresource does not support.")
            if pdbs:
                pdb = pdbs[0]
                st = compute_pdb_status(self.store, pdb)
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
                ready = pod_ready(pod)
                skip = False
                if not ready:
                    if policy == "AlwaysAllow":
                        skip = True
                    elif st["currentHealthy"] >= st["desiredHealthy"] and st["desiredHealthy"] > 0:
                        skip = True
                if not skip:
                    if st["disruptionsAllowed"] < 0:
                        raise E.APIError(403, "Forbidden", "pdb disruptions allowed is negative")
                    if len(st.get("disruptedPods") or {}) > 2000:
                        raise E.APIError(403, "Forbidden", "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
                    if st["disruptionsAllowed"] == 0:
                        raise E.APIError(429, "TooManyRequests",
                                         "Cannot evict pod as it would violate the pod's disruption budget.",
                                         {"causes": [{"reason": "DisruptionBudget",
                                                      "message": "The disruption budget %s needs %d healthy pods and has %d currently"
                                                      % (pdb["metadata"]["name"], st["desiredHealthy"], st["currentHealthy"])}]})
                    if not dry_run:
                        new = copy.deepcopy(pdb)
                        st["disruptionsAllowed"] -= 1
                        st.setdefault("disruptedPods", {})[name] = now_ts()
                        new["status"] = st
                        self._commit("policy/poddisruptionbudgets", make_key(ns, pdb["metadata"]["name"]), new, "MODIFIED")
            self._evict_now(pods, key, pod, dopts, dry_run)
        return 201, ok, warnings

    def _evict_now(self, pods, key, pod, dopts, dry_run):
        """The end of an allowed eviction: preconditions, the DisruptionTarget condition, delete."""
        self._eviction_preconditions(pod, dopts)
        if not dry_run:
            self._mark_disruption_target(key)
            pod = self.store.get("/pods", key) or pod
        self._delete_obj(pods, key, pod, dopts, dry_run)

    # ------------------------------------------------------------------ controllers
    def start(self):
        self.ctl.start()
        self.kubelet_thread.start()

    def _controllers(self):
        """Background loop: terminating namespaces, node taints, garbage, PDB status."""
        while not self.stop.wait(0.2):
            try:
                items, _, _, _ = self.store.list("/namespaces")
                for ns in items:
                    if ns["metadata"].get("deletionTimestamp"):
                        self._finish_namespace(ns["metadata"]["name"])
                if self.dirty_nodes:
                    with self.store.lock:
                        names, self.dirty_nodes = self.dirty_nodes, set()
                    for n in sorted(names):
                        self.sync_node_taints(n)
                if self.gc_queue or self.gc_owners:
                    self.collect_garbage()
                if self.pdb_dirty.is_set():
                    self.pdb_dirty.clear()
                    self.sync_pdbs()
            except Exception:  # keep the loop alive; errors show up in tests as stale state
                import traceback
                traceback.print_exc()

    def collect_garbage(self):
        """Garbage collector stand-in.

        * Background (the default propagation): once an owner is gone, dependents none of
          whose ownerReferences resolve to a live object (by uid) are deleted.
        * Foreground: the owner carries the `foregroundDeletion` finalizer; its dependents are
          deleted first, then the finalizer is removed (and the owner goes).
        * Orphan: the owner carries the `orphan` finalizer; the references to it are removed
          from its dependents, then the finalizer is removed."""
        with self.store.lock:
            queue, self.gc_queue = self.gc_queue, set()
            owners, self.gc_owners = self.gc_owners, set()
        for uid in sorted(queue):
            with self.store.lock:
                deps = sorted(self.store.dependents.get(uid, ()))
            for rkey, key in deps:
                with self.store.lock:
                    o = self.store.get(rkey, key)
                    if o is None or o["metadata"].get("deletionTimestamp"):
                        continue
                    if any(r.get("uid") in self.store.uids for r in o["metadata"].get("ownerReferences") or []):
                        continue
                info = self.info_for(rkey)
                if info is not None:
                    try:
                        self._delete_obj(info, key, o, {"propagationPolicy": "Background"}, False)
                    except E.APIError:
                        pass
        for rkey, uid in sorted(owners):
            with self.store.lock:
                loc = self.store.uids.get(uid)
                owner = self.store.get(*loc) if loc else None
                if owner is None:
                    continue
                fins = owner["metadata"].get("finalizers") or []
                deps = sorted(self.store.dependents.get(uid, ()))
            if "orphan" in fins:
                for drk, dkey in deps:
                    with self.store.lock:
                        d = self.store.get(drk, dkey)
                        if d is None:
                            continue
                        nd = copy.deepcopy(d)
                        nd["metadata"]["ownerReferences"] = [r for r in nd["metadata"].get("ownerReferences") or []
                                                             if r.get("uid") != uid]
                        if not nd["metadata"]["ownerReferences"]:
                            del nd["metadata"]["ownerReferences"]
                        self._commit(drk, dkey, nd, "MODIFIED")
                self._remove_finalizer(loc, "orphan")
            elif "foregroundDeletion" in fins:
                remaining = 0
                for drk, dkey in deps:
                    d = self.store.get(drk, dkey)
                    info = self.info_for(drk)
                    if d is None or info is None:
                        continue
                    if not d["metadata"].get("deletionTimestamp"):
                        try:
                            self._delete_obj(info, dkey, d, {"propagationPolicy": "Foreground"}, False)
                        except E.APIError:
                            pass
                    if self.store.get(drk, dkey) is not None:
                        remaining += 1
                if remaining:
                    with self.store.lock:
                        self.gc_owners.add((rkey, uid))
                else:
                    self._remove_finalizer(loc, "foregroundDeletion")

    def _remove_finalizer(self, loc, fin):
        with self.store.lock:
            cur = self.store.get(*loc)
            if cur is None:
                return
            new = copy.deepcopy(cur)
            new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or [] if f != fin]
            if not new["metadata"]["finalizers"]:
                del new["metadata"]["finalizers"]
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                    new["metadata"].get("deletionGracePeriodSeconds", 0) == 0:
                self._commit(loc[0], loc[1], new, "DELETED")
                info = self.info_for(loc[0])
                if info is not None:
                    self._on_deleted(info, new)
            else:
                self._commit(loc[0], loc[1], new, "MODIFIED")

    MANAGED_TAINTS = ("node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready",
                      "node.kubernetes.io/unreachable")

    def sync_node_taints(self, name):
        """Node lifecycle controller stand-in (TaintNodesByCondition): NoSchedule taints for
        spec.unschedulable (node.kubernetes.io/unschedulable), Ready=False (not-ready) and
        Ready=Unknown (unreachable). Other taints are left alone."""
        with self.store.lock:
            cur = self.store.get("/nodes", name)
            if cur is None:
                return
            want = []
            if (cur.get("spec") or {}).get("unschedulable"):
                want.append("node.kubernetes.io/unschedulable")
            ready = next((c.get("status") for c in (cur.get("status") or {}).get("conditions") or []
                          if c.get("type") == "Ready"), None)
            if ready == "False":
                want.append("node.kubernetes.io/not-ready")
            elif ready == "Unknown":
                want.append("node.kubernetes.io/unreachable")
            taints = list((cur.get("spec") or {}).get("taints") or [])
            keep = [t for t in taints if not (t.get("key") in self.MANAGED_TAINTS and t.get("effect") == "NoSchedule")
                    or t.get("key") in want]
            have = {t.get("key") for t in keep if t.get("effect") == "NoSchedule"}
            new_taints = keep + [{"key": k, "effect": "NoSchedule"} for k in want if k not in have]
            if new_taints == taints:
                return
            new = copy.deepcopy(cur)
            if new_taints:
                new.setdefault("spec", {})["taints"] = new_taints
            else:
                new.get("spec", {}).pop("taints", None)
            self._commit("/nodes", name, new, "MODIFIED")

    def sync_pdbs(self):
        items, _, _, _ = self.store.list("policy/poddisruptionbudgets")
        for pdb in items:
            with self.store.lock:
                cur = self.store.get("policy/poddisruptionbudgets", make_key(pdb["metadata"]["namespace"], pdb["metadata"]["name"]))
                if cur is None:
                    continue
                st = compute_pdb_status(self.store, cur)
                if st != cur.get("status"):
                    new = copy.deepcopy(cur)
                    new["status"] = st
                    self._commit("policy/poddisruptionbudgets", make_key(cur["metadata"]["namespace"], cur["metadata"]["name"]),
                                 new, "MODIFIED")


class _EvictionInfo:
    """What the decoder's messages and the audit's records name for a pods/eviction body."""
    kind = "Eviction"
    group = "policy"

    def __init__(self, version):
        self.version = version
        self.api_version = "policy/" + version


def _decode_apply_body(body):
    """The apply configuration: YAML (the first document) or JSON, which must be a map."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    body = body or ""
    if not body.strip():
        return {}
    try:
        cfg = json.loads(body)
    except ValueError:
        from .yamlish import load_all
        try:
            docs = load_all(body)
        except Exception as e:
            raise E.bad_request("error decoding YAML: %s" % e)
        cfg = docs[0] if docs else {}
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise E.bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
                            "%s into Go value of type map[string]interface {}"
                            % ("array" if isinstance(cfg, list) else "string" if isinstance(cfg, str) else "number"))
    return cfg


def _storage_version(info, registry):
    for r in registry.all():
        if r.rkey == info.rkey and r.crd is not None and r.crd.get("storage"):
            return r.version
    return info.version


def _diff_fields(a, b, path=""):
    """Field paths present in `a` but not in `b` (what pruning removed)."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k, v in a.items():
            p = (path + "." + k) if path else k
            if k not in b:
                out.append(p)
            else:
                out += _diff_fields(v, b[k], p)
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            out += _diff_fields(x, y, "%s[%d]" % (path, i))
    return out
