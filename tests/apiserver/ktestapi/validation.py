"""Object validation (the 422 Invalid checks) and defaulting.

Covers what the real server enforces where tests touch it: object names, label keys and
values, namespace/scope consistency, required pod fields and pod update immutability,
PDB/webhook-configuration essentials, CRD naming, and for custom resources the CRD's
structural OpenAPI v3 schema (types, required, enum, bounds, patterns, lengths, nullable,
int-or-string, additionalProperties), with defaults applied and unknown fields pruned.
CEL rules (x-kubernetes-validations) are not evaluated.
"""
import copy
import re

from .selection import valid_label_key, valid_label_value, label_selector_from_obj

DNS1123_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
DNS1123_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
DNS1035_LABEL = re.compile(r'^[a-z]([-a-z0-9]*[a-z0-9])?$')

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
               "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
               "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def _q(v):
    import json
    return json.dumps(v)


def validate_name(rkey, name):
    """Return a list of (reason, field, message) for an invalid object name."""
    if rkey in ("/namespaces",):
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            return [("FieldValueInvalid", "metadata.name", "Invalid value: %s: %s" % (_q(name), LABEL_MSG))]
        return []
    if rkey == "/services":
        if len(name) > 63 or not DNS1035_LABEL.match(name):
            return [("FieldValueInvalid", "metadata.name", "Invalid value: %s: %s" % (_q(name), DNS1035_MSG))]
        return []
    if rkey.startswith("rbac.authorization.k8s.io/"):
        if "/" in name or "%" in name or name in (".", ".."):
            return [("FieldValueInvalid", "metadata.name", "Invalid value: %s: may not contain '/'" % _q(name))]
        return []
    if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [("FieldValueInvalid", "metadata.name", "Invalid value: %s: %s" % (_q(name), SUBDOMAIN_MSG))]
    return []


def validate_meta(rkey, obj):
    errs = []
    md = obj.get("metadata") or {}
    name = md.get("name")
    if not name:
        errs.append(("FieldValueRequired", "metadata.name", "Required value: name or generateName is required"))
    else:
        errs += validate_name(rkey, name)
    for k, v in (md.get("labels") or {}).items():
        if not valid_label_key(k):
            errs.append(("FieldValueInvalid", "metadata.labels", "Invalid value: %s: name part must consist of "
                         "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                         "character" % _q(k)))
        if not isinstance(v, str) or not valid_label_value(v):
            errs.append(("FieldValueInvalid", "metadata.labels", "Invalid value: %s: a valid label must be an empty "
                         "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                         "with an alphanumeric character" % _q(v)))
    for k, v in (md.get("annotations") or {}).items():
        if not valid_label_key(k):
            errs.append(("FieldValueInvalid", "metadata.annotations", "Invalid value: %s: name part must consist of "
                         "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                         "character" % _q(k)))
        if not isinstance(v, str):
            errs.append(("FieldValueInvalid", "metadata.annotations", "Invalid value: must be a string"))
    for f in md.get("finalizers") or []:
        if "/" not in f and f not in ("kubernetes", "orphan", "foregroundDeletion"):
            errs.append(("FieldValueInvalid", "metadata.finalizers", "Invalid value: %s: name is neither a standard "
                         "finalizer name nor is it fully qualified" % _q(f)))
    return errs


def validate_builtin(rkey, obj, old=None):
    """Per-kind checks for built-ins. Returns a list of causes."""
    errs = []
    spec = obj.get("spec")
    if rkey == "/pods":
        spec = spec or {}
        cs = spec.get("containers")
        if not cs:
            errs.append(("FieldValueRequired", "spec.containers", "Required value"))
        seen = set()
        for i, c in enumerate(cs or []):
            if not c.get("name"):
                errs.append(("FieldValueRequired", "spec.containers[%d].name" % i, "Required value"))
            elif c["name"] in seen:
                errs.append(("FieldValueDuplicate", "spec.containers[%d].name" % i, "Duplicate value: %s" % _q(c["name"])))
            seen.add(c.get("name"))
            if not c.get("image") and old is None:
                errs.append(("FieldValueRequired", "spec.containers[%d].image" % i, "Required value"))
        if old is not None:
            def mutable_view(s):
                s = copy.deepcopy(s or {})
                for lst in ("containers", "initContainers"):
                    for c in s.get(lst) or []:
                        c.pop("image", None)
                s.pop("activeDeadlineSeconds", None)
                s.pop("tolerations", None)
                s.pop("terminationGracePeriodSeconds", None)
                s.pop("schedulingGates", None)
                return s
            if mutable_view(spec) != mutable_view(old.get("spec")):
                errs.append(("FieldValueForbidden", "spec", "Forbidden: pod updates may not change fields other than "
                             "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                             "`spec.tolerations` (only additions to existing tolerations),"
                             "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"))
    elif rkey == "policy/poddisruptionbudgets":
        spec = spec or {}
        if "minAvailable" in spec and "maxUnavailable" in spec:
            errs.append(("FieldValueInvalid", "spec", "Invalid value: %s: minAvailable and maxUnavailable cannot be both set"
                         % _q(spec)))
        for f in ("minAvailable", "maxUnavailable"):
            v = spec.get(f)
            if v is None:
                continue
            if isinstance(v, int):
                if v < 0:
                    errs.append(("FieldValueInvalid", "spec." + f, "Invalid value: %d: must be greater than or equal to 0" % v))
            elif isinstance(v, str):
                m = re.match(r'^(\d+)%$', v)
                if not m:
                    errs.append(("FieldValueInvalid", "spec." + f, "Invalid value: %s: a valid percent string must be a "
                                 "numeric string followed by an ending '%%' (e.g. '1%%',  or '93%%', regex used for "
                                 "validation is '[0-9]+%%')" % _q(v)))
                elif int(m.group(1)) > 100:
                    errs.append(("FieldValueInvalid", "spec." + f, "Invalid value: %s: must not be greater than 100%%" % _q(v)))
        sel = spec.get("selector")
        if sel is not None:
            try:
                label_selector_from_obj(sel)
            except ValueError as e:
                errs.append(("FieldValueInvalid", "spec.selector", str(e)))
    elif rkey in ("admissionregistration.k8s.io/validatingwebhookconfigurations",
                  "admissionregistration.k8s.io/mutatingwebhookconfigurations"):
        names = set()
        for i, w in enumerate(obj.get("webhooks") or []):
            p = "webhooks[%d]" % i
            n = w.get("name", "")
            if not n:
                errs.append(("FieldValueRequired", p + ".name", "Required value"))
            elif n.count(".") < 2 or not DNS1123_SUBDOMAIN.match(n):
                errs.append(("FieldValueInvalid", p + ".name", "Invalid value: %s: should be a domain with at least "
                             "three segments separated by dots" % _q(n)))
            if n in names:
                errs.append(("FieldValueDuplicate", p + ".name", "Duplicate value: %s" % _q(n)))
            names.add(n)
            if not w.get("admissionReviewVersions"):
                errs.append(("FieldValueRequired", p + ".admissionReviewVersions", "Required value: must specify one "
                             "of v1, v1beta1"))
            elif not any(v in ("v1", "v1beta1") for v in w["admissionReviewVersions"]):
                errs.append(("FieldValueInvalid", p + ".admissionReviewVersions", "Invalid value: %s: must include at "
                             "least one of v1, v1beta1" % _q(w["admissionReviewVersions"])))
            if w.get("sideEffects") not in ("None", "NoneOnDryRun"):
                if w.get("sideEffects") is None:
                    errs.append(("FieldValueRequired", p + ".sideEffects", "Required value: must specify one of None, NoneOnDryRun"))
                else:
                    errs.append(("FieldValueNotSupported", p + ".sideEffects", 'Unsupported value: %s: supported values: "None", "NoneOnDryRun"' % _q(w.get("sideEffects"))))
            cc = w.get("clientConfig") or {}
            if ("url" in cc) == ("service" in cc):
                errs.append(("FieldValueRequired", p + ".clientConfig", "Required value: exactly one of url or service is required"))
            elif "url" in cc and not str(cc["url"]).startswith("https://"):
                errs.append(("FieldValueInvalid", p + ".clientConfig.url", "Invalid value: %s: 'https' is the only allowed URL scheme" % _q(cc["url"])))
            ts = w.get("timeoutSeconds")
            if ts is not None and not (1 <= ts <= 30):
                errs.append(("FieldValueInvalid", p + ".timeoutSeconds", "Invalid value: %d: the timeout value must be between 1 and 30 seconds" % ts))
            fp = w.get("failurePolicy")
            if fp is not None and fp not in ("Fail", "Ignore"):
                errs.append(("FieldValueNotSupported", p + ".failurePolicy", 'Unsupported value: %s: supported values: "Fail", "Ignore"' % _q(fp)))
    elif rkey == "apiextensions.k8s.io/customresourcedefinitions":
        spec = spec or {}
        names = spec.get("names") or {}
        name = (obj.get("metadata") or {}).get("name", "")
        expect = "%s.%s" % (names.get("plural", ""), spec.get("group", ""))
        if name != expect:
            errs.append(("FieldValueInvalid", "metadata.name", 'Invalid value: %s: must be spec.names.plural+"."+spec.group' % _q(name)))
        if not names.get("kind"):
            errs.append(("FieldValueRequired", "spec.names.kind", "Required value"))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            errs.append(("FieldValueNotSupported", "spec.scope", 'Unsupported value: %s: supported values: "Cluster", "Namespaced"' % _q(spec.get("scope"))))
        vs = spec.get("versions") or []
        if not vs:
            errs.append(("FieldValueInvalid", "spec.versions", "Invalid value: null: must have exactly one version marked as storage version"))
        elif sum(1 for v in vs if v.get("storage")) != 1:
            errs.append(("FieldValueInvalid", "spec.versions", "Invalid value: %s: must have exactly one version marked as storage version" % _q([v.get("name") for v in vs])))
        for i, v in enumerate(vs):
            sch = (v.get("schema") or {}).get("openAPIV3Schema")
            if sch is None:
                errs.append(("FieldValueRequired", "spec.versions[%d].schema.openAPIV3Schema" % i, "Required value: schemas are required"))
    elif rkey == "/nodes":
        errs += validate_taints((spec or {}).get("taints"), "spec.taints")
    return errs


# ---- CRD structural schema --------------------------------------------------------
def apply_defaults(schema, value):
    """Apply `default`s from a structural schema (returns new value)."""
    if not isinstance(schema, dict):
        return value
    t = schema.get("type")
    if isinstance(value, dict) and (t == "object" or "properties" in schema):
        out = dict(value)
        for k, ps in (schema.get("properties") or {}).items():
            if k not in out and isinstance(ps, dict) and "default" in ps:
                out[k] = copy.deepcopy(ps["default"])
            if k in out and out[k] is not None:
                out[k] = apply_defaults(ps, out[k])
        ap = schema.get("additionalProperties")
        if isinstance(ap, dict):
            for k in list(out):
                if k not in (schema.get("properties") or {}):
                    out[k] = apply_defaults(ap, out[k])
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(schema["items"], x) for x in value]
    return value


def prune(schema, value, root=False):
    """Drop fields not in the schema unless x-kubernetes-preserve-unknown-fields."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        if schema.get("x-kubernetes-embedded-resource") or root:
            keep = {"apiVersion", "kind", "metadata"}
        else:
            keep = set()
        props = schema.get("properties") or {}
        ap = schema.get("additionalProperties")
        if schema.get("x-kubernetes-preserve-unknown-fields") or ap is True:
            out = dict(value)
            for k, ps in props.items():
                if k in out and not (root and k in keep):
                    out[k] = prune(ps, out[k])
            return out
        out = {}
        for k, v in value.items():
            if root and k in keep:
                out[k] = v  # apiVersion/kind/metadata of the object are never pruned by its schema
            elif k in props:
                out[k] = prune(props[k], v)
            elif isinstance(ap, dict):
                out[k] = prune(ap, v)
            elif k in keep:
                out[k] = v
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(schema["items"], x) for x in value]
    return value


def _typename(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def validate_schema(schema, value, path, errs, root=False):
    """Collect (reason, field, message) causes like the apiextensions validator."""
    if not isinstance(schema, dict):
        return
    if value is None:
        if schema.get("nullable"):
            return
        if schema.get("type"):
            errs.append(("FieldValueTypeInvalid", path, 'Invalid value: "null": %s in body must be of type %s: "null"'
                         % (path, schema.get("type"))))
        return
    t = schema.get("type")
    actual = _typename(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            errs.append(("FieldValueTypeInvalid", path, 'Invalid value: "%s": %s in body must be of type integer,string: "%s"'
                         % (actual, path, actual)))
            return
    elif t:
        ok = actual == t or (t == "number" and actual == "integer")
        if not ok:
            errs.append(("FieldValueTypeInvalid", path, 'Invalid value: "%s": %s in body must be of type %s: "%s"'
                         % (actual, path, t, actual)))
            return
    if "enum" in schema and value not in schema["enum"]:
        errs.append(("FieldValueNotSupported", path, "Unsupported value: %s: supported values: %s"
                     % (_q(value), ", ".join(_q(e) for e in schema["enum"]))))
    if actual in ("integer", "number"):
        if "minimum" in schema:
            if (schema.get("exclusiveMinimum") and value <= schema["minimum"]) or value < schema["minimum"]:
                errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be greater than or equal to %s"
                             % (value, path, schema["minimum"])))
        if "maximum" in schema:
            if (schema.get("exclusiveMaximum") and value >= schema["maximum"]) or value > schema["maximum"]:
                errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be less than or equal to %s"
                             % (value, path, schema["maximum"])))
    if actual == "string":
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(("FieldValueTooLong", path, "Too long: may not be more than %d bytes" % schema["maxLength"]))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should be at least %d chars long"
                         % (_q(value), path, schema["minLength"])))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body should match '%s'"
                         % (_q(value), path, schema["pattern"])))
        if schema.get("format") == "date-time" and not re.match(
                r'^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$', value):
            errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body must be of type date-time: %s"
                         % (_q(value), path, _q(value))))
    if actual == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(("FieldValueTooMany", path, "Too many: %d: must have at most %d items" % (len(value), schema["maxItems"])))
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at least %d items"
                         % (len(value), path, schema["minItems"])))
        it = schema.get("items")
        for i, x in enumerate(value):
            validate_schema(it, x, "%s[%d]" % (path, i), errs)
    if actual == "object":
        for r in schema.get("required") or []:
            if r not in value:
                errs.append(("FieldValueRequired", (path + "." + r) if path else r, "Required value"))
        props = schema.get("properties") or {}
        ap = schema.get("additionalProperties")
        for k, v in value.items():
            if root and k in ("apiVersion", "kind", "metadata"):
                continue
            sub = (path + "." + k) if path else k
            if k in props:
                validate_schema(props[k], v, sub, errs)
            elif isinstance(ap, dict):
                validate_schema(ap, v, sub, errs)
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append(("FieldValueTooMany", path, "Too many: %d: must have at most %d items" % (len(value), schema["maxProperties"])))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errs.append(("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at least %d properties"
                         % (len(value), path, schema["minProperties"])))
    for sub in schema.get("allOf") or []:
        validate_schema(sub, value, path, errs)
    if schema.get("oneOf"):
        n = 0
        for sub in schema["oneOf"]:
            e = []
            validate_schema(dict(sub, type=sub.get("type")), value, path, e)
            if not e:
                n += 1
        if n != 1:
            errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body must validate one and only one schema (oneOf)"
                         % (_q(value) if not isinstance(value, (dict, list)) else '"object"', path or "<root>")))
    if schema.get("anyOf"):
        ok = False
        for sub in schema["anyOf"]:
            e = []
            validate_schema(sub, value, path, e)
            if not e:
                ok = True
                break
        if not ok:
            errs.append(("FieldValueInvalid", path, "Invalid value: %s: %s in body must validate at least one schema (anyOf)"
                         % ('"object"' if isinstance(value, (dict, list)) else _q(value), path or "<root>")))
    if isinstance(schema.get("not"), dict):
        e = []
        validate_schema(schema["not"], value, path, e)
        if not e:
            errs.append(("FieldValueInvalid", path, "Invalid value: %s in body must not validate the schema (not)" % path))


# ---- top-level fields of built-in kinds (for fieldValidation and dropping unknown fields) ----
_SPEC_STATUS = ("spec", "status")
TOP_LEVEL = {
    "/namespaces": _SPEC_STATUS, "/nodes": _SPEC_STATUS, "/pods": _SPEC_STATUS,
    "/persistentvolumeclaims": _SPEC_STATUS, "/persistentvolumes": _SPEC_STATUS, "/services": _SPEC_STATUS,
    "/replicationcontrollers": _SPEC_STATUS, "apps/deployments": _SPEC_STATUS, "apps/replicasets": _SPEC_STATUS,
    "apps/statefulsets": _SPEC_STATUS, "apps/daemonsets": _SPEC_STATUS, "batch/jobs": _SPEC_STATUS,
    "batch/cronjobs": _SPEC_STATUS, "policy/poddisruptionbudgets": _SPEC_STATUS,
    "storage.k8s.io/volumeattachments": _SPEC_STATUS, "apiextensions.k8s.io/customresourcedefinitions": _SPEC_STATUS,
    "coordination.k8s.io/leases": ("spec",),
    "/endpoints": ("subsets",),
    "/secrets": ("data", "stringData", "type", "immutable"),
    "/configmaps": ("data", "binaryData", "immutable"),
    "/serviceaccounts": ("secrets", "imagePullSecrets", "automountServiceAccountToken"),
    "/events": ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
                "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"),
    "storage.k8s.io/storageclasses": ("provisioner", "parameters", "reclaimPolicy", "mountOptions",
                                      "allowVolumeExpansion", "volumeBindingMode", "allowedTopologies"),
    "scheduling.k8s.io/priorityclasses": ("value", "globalDefault", "description", "preemptionPolicy"),
    "networking.k8s.io/networkpolicies": ("spec",),
    "apps/controllerrevisions": ("data", "revision"),
    "rbac.authorization.k8s.io/roles": ("rules",),
    "rbac.authorization.k8s.io/clusterroles": ("rules", "aggregationRule"),
    "rbac.authorization.k8s.io/rolebindings": ("subjects", "roleRef"),
    "rbac.authorization.k8s.io/clusterrolebindings": ("subjects", "roleRef"),
    "admissionregistration.k8s.io/validatingwebhookconfigurations": ("webhooks",),
    "admissionregistration.k8s.io/mutatingwebhookconfigurations": ("webhooks",),
}


def _keys(*names, **subs):
    d = {n: None for n in names}
    d.update(subs)
    return d


OWNER_REFERENCE = _keys("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
OBJECT_META = _keys("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
                    "finalizers", "managedFields", ownerReferences=("list", OWNER_REFERENCE))
CONTAINER = _keys("name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
                  "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
                  "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy",
                  "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty")
POD_CONDITION = _keys("type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")
NODE_CONDITION = _keys("type", "status", "lastHeartbeatTime", "lastTransitionTime", "reason", "message")
TAINT = _keys("key", "value", "effect", "timeAdded")
# second-level field sets of the built-in kinds nodegate and its tests touch most
NESTED = {
    "/pods": {
        "spec": _keys("volumes", "ephemeralContainers", "restartPolicy", "terminationGracePeriodSeconds",
                      "activeDeadlineSeconds", "dnsPolicy", "nodeSelector", "serviceAccountName", "serviceAccount",
                      "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID", "hostIPC",
                      "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname", "subdomain",
                      "affinity", "schedulerName", "tolerations", "hostAliases", "priorityClassName", "priority",
                      "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks", "preemptionPolicy",
                      "overhead", "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers",
                      "schedulingGates", "resourceClaims", "resources",
                      containers=("list", CONTAINER), initContainers=("list", CONTAINER)),
        "status": _keys("phase", "message", "reason", "nominatedNodeName", "hostIP", "hostIPs", "podIP", "podIPs",
                        "startTime", "initContainerStatuses", "containerStatuses", "qosClass",
                        "ephemeralContainerStatuses", "resize", "resourceClaimStatuses",
                        conditions=("list", POD_CONDITION)),
    },
    "/nodes": {
        "spec": _keys("podCIDR", "podCIDRs", "providerID", "unschedulable", "configSource", "externalID",
                      taints=("list", TAINT)),
        "status": _keys("capacity", "allocatable", "phase", "addresses", "daemonEndpoints", "images", "volumesInUse",
                        "volumesAttached", "config", "runtimeHandlers", "features",
                        conditions=("list", NODE_CONDITION),
                        nodeInfo=_keys("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                                       "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                                       "operatingSystem", "architecture", "swap")),
    },
    "policy/poddisruptionbudgets": {
        "spec": _keys("minAvailable", "maxUnavailable", "selector", "unhealthyPodEvictionPolicy"),
        "status": _keys("observedGeneration", "disruptedPods", "disruptionsAllowed", "currentHealthy",
                        "desiredHealthy", "expectedPods", "conditions"),
    },
    "coordination.k8s.io/leases": {
        "spec": _keys("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions",
                      "strategy", "preferredHolder"),
    },
}


def _walk_unknown(schema, value, path, out):
    """Remove fields not in `schema` from `value` (in place); record their paths."""
    if isinstance(schema, tuple) and schema[0] == "list":
        if isinstance(value, list):
            for i, item in enumerate(value):
                _walk_unknown(schema[1], item, "%s[%d]" % (path, i), out)
        return
    if not isinstance(schema, dict) or not isinstance(value, dict):
        return
    for k in list(value):
        p = (path + "." + k) if path else k
        if k not in schema:
            out.append(p)
            del value[k]
        elif schema[k] is not None:
            _walk_unknown(schema[k], value[k], p, out)


def drop_unknown_fields(rkey, obj, custom=False):
    """Drop (and return the paths of) fields the Go types would not decode: unknown top-level
    fields of built-in kinds, unknown metadata fields of every kind, and unknown fields in the
    second-level structures listed in NESTED. Nested fields elsewhere are not checked."""
    out = []
    if not custom:
        allowed = TOP_LEVEL.get(rkey)
        if allowed is not None:
            for k in list(obj):
                if k not in allowed and k not in ("apiVersion", "kind", "metadata"):
                    out.append(k)
                    del obj[k]
        for field, sch in NESTED.get(rkey, {}).items():
            if isinstance(obj.get(field), dict):
                _walk_unknown(sch, obj[field], field, out)
    if isinstance(obj.get("metadata"), dict):
        _walk_unknown(OBJECT_META, obj["metadata"], "metadata", out)
    return out


# ---- JSON decoding type errors (400 BadRequest, before validation) ----------------------
# (rkey or "*", dotted path, Go type, Go struct) for scalars nodegate writes most often
TYPED = [
    ("*", "metadata.name", "string", "ObjectMeta"), ("*", "metadata.namespace", "string", "ObjectMeta"),
    ("/nodes", "spec.unschedulable", "bool", "NodeSpec"),
    ("/pods", "spec.nodeName", "string", "PodSpec"),
    ("/pods", "spec.terminationGracePeriodSeconds", "int64", "PodSpec"),
    ("coordination.k8s.io/leases", "spec.holderIdentity", "string", "LeaseSpec"),
    ("coordination.k8s.io/leases", "spec.leaseDurationSeconds", "int32", "LeaseSpec"),
    ("coordination.k8s.io/leases", "spec.leaseTransitions", "int32", "LeaseSpec"),
]


def _json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def decode_error(rkey, obj):
    """The encoding/json error decoding `obj` into the Go type would give, or None."""
    md = obj.get("metadata")
    if isinstance(md, dict):
        for f in ("labels", "annotations"):
            m = md.get(f)
            if m is not None and not isinstance(m, dict):
                return ("json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.%s of type "
                        "map[string]string" % (_json_type(m), f))
            for v in (m or {}).values():
                if not isinstance(v, str):
                    return ("json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.%s of type string"
                            % (_json_type(v), f))
        fins = md.get("finalizers")
        if fins is not None and (not isinstance(fins, list) or any(not isinstance(x, str) for x in fins)):
            bad = fins if not isinstance(fins, list) else next(x for x in fins if not isinstance(x, str))
            return ("json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.finalizers of type %s"
                    % (_json_type(bad), "[]string" if not isinstance(fins, list) else "string"))
    for rk, path, gotype, struct in TYPED:
        if rk != "*" and rk != rkey:
            continue
        cur = obj
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur is None:
            continue
        jt = _json_type(cur)
        ok = (gotype == "string" and jt == "string") or (gotype == "bool" and jt == "bool") or \
             (gotype.startswith("int") and jt == "number" and float(cur) == int(cur))
        if not ok:
            what = jt if not (jt == "number" and gotype.startswith("int")) else "number %s" % cur
            return "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (what, struct, path, gotype)
    return None


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_taints(taints, path):
    errs = []
    seen = set()
    for i, t in enumerate(taints or []):
        p = "%s[%d]" % (path, i)
        if not isinstance(t, dict):
            continue
        key = t.get("key", "")
        if not key:
            errs.append(("FieldValueRequired", p + ".key", "Required value"))
        elif not valid_label_key(key):
            errs.append(("FieldValueInvalid", p + ".key", "Invalid value: %s: name part must consist of alphanumeric "
                         "characters, '-', '_' or '.', and must start and end with an alphanumeric character" % _q(key)))
        if t.get("value") and not valid_label_value(t["value"]):
            errs.append(("FieldValueInvalid", p + ".value", "Invalid value: %s: a valid label must be an empty string "
                         "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                         "alphanumeric character" % _q(t["value"])))
        eff = t.get("effect", "")
        if not eff:
            errs.append(("FieldValueRequired", p + ".effect", "Required value"))
        elif eff not in TAINT_EFFECTS:
            errs.append(("FieldValueNotSupported", p + ".effect", 'Unsupported value: %s: supported values: '
                         '"NoSchedule", "PreferNoSchedule", "NoExecute"' % _q(eff)))
        if (key, eff) in seen:
            errs.append(("FieldValueDuplicate", p, 'Duplicate value: %s: taints must be unique by key and effect pair'
                         % _q("%s:%s" % (key, eff))))
        seen.add((key, eff))
    return errs
