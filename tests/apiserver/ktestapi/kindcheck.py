"""Per-kind enum and field rules of kube-apiserver v1.32, restated for the kinds nodegate writes.

Sources (kubernetes/kubernetes v1.32): pkg/apis/core/validation/validation.go (pods, services,
secrets), pkg/apis/batch/validation/validation.go, pkg/apis/apps/validation/validation.go,
pkg/apis/rbac/validation/validation.go, pkg/apis/coordination/validation/validation.go,
pkg/apis/networking/validation/validation.go, pkg/apis/admissionregistration/validation/validation.go,
pkg/apis/policy/validation/validation.go. Values missing here are defaulted by the server (pods,
services) or by upstream's defaulting before validation, so an absent field is never refused.
Each cause is (reason, field, message) in field.Error's words.
"""
import base64
import binascii
import json
import re

from .selection import valid_label_value

# One table of enums. "sorted" marks lists upstream builds with sets.List (sorted output);
# the others keep upstream's literal order.
ENUMS = {
    "restartPolicy": sorted(("Always", "OnFailure", "Never")),
    "dnsPolicy": sorted(("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")),
    "imagePullPolicy": sorted(("Always", "IfNotPresent", "Never")),
    "portProtocol": sorted(("TCP", "UDP", "SCTP")),
    "tolerationOperator": ["Equal", "Exists"],
    "taintEffect": ["NoSchedule", "PreferNoSchedule", "NoExecute"],
    "preemptionPolicy": ["PreemptLowerPriority", "PreemptNever"],
    "jobRestartPolicy": ["OnFailure", "Never"],
    "completionMode": ["NonIndexed", "Indexed"],
    "deploymentStrategy": ["Recreate", "RollingUpdate"],
    "serviceType": sorted(("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")),
    "sessionAffinity": sorted(("None", "ClientIP")),
    "policyTypes": sorted(("Ingress", "Egress")),
    "netpolProtocol": ["TCP", "UDP", "SCTP"],
    "roleBindingRefKind": ["Role", "ClusterRole"],
    "clusterRoleBindingRefKind": ["ClusterRole"],
    "subjectKind": ["ServiceAccount", "User", "Group"],
    "operations": sorted(("CREATE", "UPDATE", "DELETE", "CONNECT", "*")),
    "scope": sorted(("Cluster", "Namespaced", "*")),
    "matchPolicy": sorted(("Exact", "Equivalent")),
    "reinvocationPolicy": sorted(("Never", "IfNeeded")),
    "unhealthyPodEvictionPolicy": sorted(("IfHealthyBudget", "AlwaysAllow")),
}

RBAC_GROUP = "rbac.authorization.k8s.io"
DNS1123_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
CONFIG_KEY = re.compile(r'^[-._a-zA-Z0-9]+$')
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                  "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
MAX_SECRET_SIZE = 1024 * 1024


def _q(v):
    return json.dumps(v)


def not_supported(path, value, enum):
    return ("FieldValueNotSupported", path, "Unsupported value: %s: supported values: %s"
            % (_q(value), ", ".join(_q(v) for v in ENUMS[enum])))


def required(path, detail=""):
    return ("FieldValueRequired", path, "Required value" + (": " + detail if detail else ""))


def invalid(path, value, detail):
    return ("FieldValueInvalid", path, "Invalid value: %s: %s" % (_q(value), detail))


def _enum(errs, d, key, path, enum):
    """Check d[key] against an enum when present (absent values are defaulted upstream)."""
    if isinstance(d, dict) and key in d and d[key] is not None and d[key] not in ENUMS[enum]:
        errs.append(not_supported(path, d[key], enum))


def _nonneg(errs, d, key, path):
    v = d.get(key) if isinstance(d, dict) else None
    if isinstance(v, int) and v < 0:
        errs.append(invalid(path, v, "must be greater than or equal to 0"))


def _dns_label(errs, value, path):
    if len(value) > 63:
        errs.append(invalid(path, value, "must be no more than 63 characters"))
    if not DNS1123_LABEL.match(value):
        errs.append(invalid(path, value, LABEL_MSG))


def _go_toleration(t):
    ts = t.get("tolerationSeconds")
    return ('core.Toleration{Key:%s, Operator:%s, Value:%s, Effect:%s, TolerationSeconds:%s}'
            % (_q(t.get("key", "")), _q(t.get("operator", "")), _q(t.get("value", "")), _q(t.get("effect", "")),
               "(*int64)(nil)" if ts is None else "(*int64)(0x%x)" % id(t)))


def pod_spec(spec, path):
    """ValidatePodSpec's enum and name rules (validation.go: validateRestartPolicy, validateDNSPolicy,
    validatePullPolicy, validateContainerCommon, validateContainerPorts, ValidateTolerations,
    validatePreemptionPolicy)."""
    errs = []
    if not isinstance(spec, dict):
        return errs
    _enum(errs, spec, "restartPolicy", path + ".restartPolicy", "restartPolicy")
    _enum(errs, spec, "dnsPolicy", path + ".dnsPolicy", "dnsPolicy")
    _enum(errs, spec, "preemptionPolicy", path + ".preemptionPolicy", "preemptionPolicy")
    ads = spec.get("activeDeadlineSeconds")
    if isinstance(ads, int) and not 1 <= ads <= 2147483647:
        errs.append(invalid(path + ".activeDeadlineSeconds", ads, "must be between 1 and 2147483647, inclusive"))
    for lst in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(lst) or []):
            if not isinstance(c, dict):
                continue
            p = "%s.%s[%d]" % (path, lst, i)
            if isinstance(c.get("name"), str) and c["name"]:
                _dns_label(errs, c["name"], p + ".name")
            _enum(errs, c, "imagePullPolicy", p + ".imagePullPolicy", "imagePullPolicy")
            tmp = c.get("terminationMessagePolicy")
            if tmp is not None and tmp not in ("File", "FallbackToLogsOnError"):
                errs.append(invalid(p + ".terminationMessagePolicy", tmp, "must be 'File' or 'FallbackToLogsOnError'"))
            for j, port in enumerate(c.get("ports") or []):
                _enum(errs, port, "protocol", "%s.ports[%d].protocol" % (p, j), "portProtocol")
    for i, t in enumerate(spec.get("tolerations") or []):
        if not isinstance(t, dict):
            continue
        p = "%s.tolerations[%d]" % (path, i)
        op = t.get("operator", "")
        if op in ("Equal", ""):
            if t.get("value") and not valid_label_value(t["value"]):
                errs.append(invalid(p + ".value", t["value"], "a valid label must be an empty string or consist of "
                                    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                                    "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
                                    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"))
        elif op == "Exists":
            if t.get("value"):
                errs.append(("FieldValueInvalid", p + ".operator", "Invalid value: %s: value must be empty when "
                             "`operator` is 'Exists'" % _go_toleration(t)))
        else:
            errs.append(not_supported(p + ".operator", op, "tolerationOperator"))
        if t.get("effect"):
            _enum(errs, t, "effect", p + ".effect", "taintEffect")
    return errs


def _template_spec(obj):
    return (((obj.get("spec") or {}).get("template") or {}).get("spec"))


def job(obj):
    """batch/validation/validation.go: validateJobSpec."""
    errs = []
    spec = obj.get("spec") or {}
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        _nonneg(errs, spec, f, "spec." + f)
    _enum(errs, spec, "completionMode", "spec.completionMode", "completionMode")
    ts = _template_spec(obj)
    if isinstance(ts, dict):
        rp = ts.get("restartPolicy")
        if rp not in ENUMS["jobRestartPolicy"]:
            errs.append(not_supported("spec.template.spec.restartPolicy", rp if rp is not None else "",
                                      "jobRestartPolicy"))
        errs += [e for e in pod_spec(ts, "spec.template.spec") if not e[1].endswith("spec.restartPolicy")]
    return errs


def _go_map(m):
    return "map[string]string{%s}" % ", ".join("%s:%s" % (_q(k), _q(v)) for k, v in sorted(m.items()))


def deployment(obj):
    """apps/validation/validation.go: ValidateDeploymentSpec, ValidateDeploymentStrategy,
    ValidatePodTemplateSpecForReplicaSet."""
    from .selection import label_selector_from_obj
    errs = []
    spec = obj.get("spec") or {}
    _nonneg(errs, spec, "replicas", "spec.replicas")
    sel = spec.get("selector")
    tmpl = spec.get("template") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    if sel is None:
        errs.append(required("spec.selector"))
    else:
        if not (sel.get("matchLabels") or sel.get("matchExpressions")):
            errs.append(("FieldValueInvalid", "spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:"
                         "map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty "
                         "selector is invalid for deployment"))
        else:
            try:
                matches = label_selector_from_obj(sel).matches(labels)
            except (ValueError, AttributeError):
                matches = True
            if not matches:
                errs.append(("FieldValueInvalid", "spec.template.metadata.labels", "Invalid value: %s: `selector` "
                             "does not match template `labels`" % _go_map(labels)))
    st = spec.get("strategy") or {}
    _enum(errs, st, "type", "spec.strategy.type", "deploymentStrategy")
    ts = tmpl.get("spec")
    if isinstance(ts, dict):
        rp = ts.get("restartPolicy")
        if rp is not None and rp != "Always":
            errs.append(("FieldValueNotSupported", "spec.template.spec.restartPolicy",
                         'Unsupported value: %s: supported values: "Always"' % _q(rp)))
        errs += [e for e in pod_spec(ts, "spec.template.spec") if not e[1].endswith("spec.restartPolicy")]
    return errs


def lease(obj):
    """coordination/validation/validation.go: ValidateLeaseSpec."""
    errs = []
    spec = obj.get("spec") or {}
    v = spec.get("leaseDurationSeconds")
    if isinstance(v, int) and v <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", v, "must be greater than 0"))
    _nonneg(errs, spec, "leaseTransitions", "spec.leaseTransitions")
    return errs


def secret(obj, old):
    """core validation.go: ValidateSecret, ValidateSecretUpdate."""
    errs = []
    data = obj.get("data") or {}
    total = 0
    for k, v in data.items():
        if not CONFIG_KEY.match(k) or len(k) > 253:
            errs.append(invalid("data[%s]" % k, k, CONFIG_KEY_MSG))
        try:
            total += len(base64.b64decode(v or "", validate=True))
        except (binascii.Error, TypeError, ValueError):
            pass
    typ = obj.get("type") or "Opaque"
    if typ == "kubernetes.io/service-account-token":
        if not ((obj.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif typ == "kubernetes.io/dockerconfigjson":
        if ".dockerconfigjson" not in data:
            errs.append(required("data[.dockerconfigjson]"))
    elif typ == "kubernetes.io/tls":
        for k in ("tls.crt", "tls.key"):
            if k not in data:
                errs.append(required("data[%s]" % k))
    if total > MAX_SECRET_SIZE:
        errs.append(("FieldValueTooLong", "data", "Too long: may not be more than %d bytes" % MAX_SECRET_SIZE))
    if old is not None:
        if (old.get("type") or "Opaque") != typ:
            errs.append(invalid("type", typ, "field is immutable"))
        if old.get("immutable"):
            if not obj.get("immutable"):
                errs.append(("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"))
            if (old.get("data") or {}) != data:
                errs.append(("FieldValueForbidden", "data", "Forbidden: field is immutable when `immutable` is set"))
    return errs


def service(obj):
    """core validation.go: ValidateService, validateServicePort."""
    errs = []
    spec = obj.get("spec") or {}
    _enum(errs, spec, "type", "spec.type", "serviceType")
    _enum(errs, spec, "sessionAffinity", "spec.sessionAffinity", "sessionAffinity")
    ports = spec.get("ports") or []
    names = set()
    for i, p in enumerate(ports):
        if not isinstance(p, dict):
            continue
        pp = "spec.ports[%d]" % i
        n = p.get("name") or ""
        if len(ports) > 1 and not n:
            errs.append(required(pp + ".name"))
        elif n:
            _dns_label(errs, n, pp + ".name")
            if n in names:
                errs.append(("FieldValueDuplicate", pp + ".name", "Duplicate value: %s" % _q(n)))
            names.add(n)
        port = p.get("port")
        if isinstance(port, int) and not 1 <= port <= 65535:
            errs.append(invalid(pp + ".port", port, "must be between 1 and 65535, inclusive"))
        _enum(errs, p, "protocol", pp + ".protocol", "portProtocol")
    return errs


def network_policy(obj):
    """networking/validation/validation.go: ValidateNetworkPolicySpec, ValidateNetworkPolicyPort."""
    errs = []
    spec = obj.get("spec") or {}
    pts = spec.get("policyTypes") or []
    for i, t in enumerate(pts):
        if t not in ENUMS["policyTypes"]:
            errs.append(not_supported("spec.policyTypes[%d]" % i, t, "policyTypes"))
    if len(pts) > 2:
        errs.append(("FieldValueInvalid", "spec.policyTypes", "Invalid value: []networking.PolicyType{%s}: may not "
                     "specify more than two policyTypes" % ", ".join(_q(t) for t in pts)))
    for direction in ("ingress", "egress"):
        for i, r in enumerate(spec.get(direction) or []):
            for j, p in enumerate((r or {}).get("ports") or []):
                _enum(errs, p, "protocol", "spec.%s[%d].ports[%d].protocol" % (direction, i, j), "netpolProtocol")
    return errs


def policy_rules(obj, namespaced):
    """rbac/validation/validation.go: ValidatePolicyRule."""
    errs = []
    for i, r in enumerate(obj.get("rules") or []):
        if not isinstance(r, dict):
            continue
        p = "rules[%d]" % i
        if not r.get("verbs"):
            errs.append(required(p + ".verbs", "verbs must contain at least one value"))
        if r.get("nonResourceURLs"):
            if namespaced:
                errs.append(invalid(p + ".nonResourceURLs", r["nonResourceURLs"],
                                    "namespaced rules cannot apply to non-resource URLs"))
            if r.get("apiGroups") or r.get("resources"):
                errs.append(invalid(p + ".nonResourceURLs", r["nonResourceURLs"],
                                    "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not r.get("apiGroups"):
            errs.append(required(p + ".apiGroups", "resource rules must supply at least one api group"))
        if not r.get("resources"):
            errs.append(required(p + ".resources", "resource rules must supply at least one resource"))
    return errs


def _go_roleref(r):
    return "rbac.RoleRef{APIGroup:%s, Kind:%s, Name:%s}" % (_q(r.get("apiGroup", "")), _q(r.get("kind", "")),
                                                           _q(r.get("name", "")))


def role_binding(obj, old, namespaced):
    """rbac/validation/validation.go: ValidateRoleBinding, ValidateClusterRoleBinding,
    ValidateRoleBindingSubject, ...Update (roleRef immutable). Subjects' apiGroup is defaulted
    for User/Group by SetDefaults_Subject before validation."""
    errs = []
    rr = obj.get("roleRef") or {}
    if rr.get("apiGroup", "") != RBAC_GROUP:
        errs.append(("FieldValueNotSupported", "roleRef.apiGroup", "Unsupported value: %s: supported values: %s"
                     % (_q(rr.get("apiGroup", "")), _q(RBAC_GROUP))))
    enum = "roleBindingRefKind" if namespaced else "clusterRoleBindingRefKind"
    if rr.get("kind", "") not in ENUMS[enum]:
        errs.append(not_supported("roleRef.kind", rr.get("kind", ""), enum))
    if not rr.get("name"):
        errs.append(required("roleRef.name"))
    for i, s in enumerate(obj.get("subjects") or []):
        if not isinstance(s, dict):
            continue
        p = "subjects[%d]" % i
        if not s.get("name"):
            errs.append(required(p + ".name"))
        kind, group = s.get("kind", ""), s.get("apiGroup", "")
        if kind == "ServiceAccount":
            if group:
                errs.append(("FieldValueNotSupported", p + ".apiGroup",
                             'Unsupported value: %s: supported values: ""' % _q(group)))
            if not namespaced and not s.get("namespace"):
                errs.append(required(p + ".namespace"))
        elif kind in ("User", "Group"):
            if group not in ("", RBAC_GROUP):
                errs.append(("FieldValueNotSupported", p + ".apiGroup", "Unsupported value: %s: supported values: %s"
                             % (_q(group), _q(RBAC_GROUP))))
        else:
            errs.append(not_supported(p + ".kind", kind, "subjectKind"))
    if old is not None:
        orr = old.get("roleRef") or {}
        if any(orr.get(k, "") != rr.get(k, "") for k in ("apiGroup", "kind", "name")):
            errs.append(("FieldValueInvalid", "roleRef", "Invalid value: %s: cannot change roleRef" % _go_roleref(rr)))
    return errs


def webhooks(obj, mutating):
    """admissionregistration/validation/validation.go: validateRuleWithOperations, validateRule,
    validateValidatingWebhook/validateMutatingWebhook (matchPolicy, reinvocationPolicy)."""
    errs = []
    for i, w in enumerate(obj.get("webhooks") or []):
        if not isinstance(w, dict):
            continue
        p = "webhooks[%d]" % i
        for j, r in enumerate(w.get("rules") or []):
            if not isinstance(r, dict):
                continue
            rp = "%s.rules[%d]" % (p, j)
            ops = r.get("operations") or []
            if not ops:
                errs.append(required(rp + ".operations"))
            if len(ops) > 1 and "*" in ops:
                errs.append(invalid(rp + ".operations", ops, "if '*' is present, must not specify other operations"))
            for k, op in enumerate(ops):
                if op not in ENUMS["operations"]:
                    errs.append(not_supported("%s.operations[%d]" % (rp, k), op, "operations"))
            _enum(errs, r, "scope", rp + ".scope", "scope")
        _enum(errs, w, "matchPolicy", p + ".matchPolicy", "matchPolicy")
        if mutating:
            _enum(errs, w, "reinvocationPolicy", p + ".reinvocationPolicy", "reinvocationPolicy")
    return errs


def check(rkey, obj, old):
    """The rules above for one object; called from validation.validate_builtin."""
    if rkey == "/pods":
        return pod_spec(obj.get("spec"), "spec")
    if rkey == "batch/jobs":
        return job(obj)
    if rkey == "apps/deployments":
        return deployment(obj)
    if rkey == "coordination.k8s.io/leases":
        return lease(obj)
    if rkey == "/secrets":
        return secret(obj, old)
    if rkey == "/services":
        return service(obj)
    if rkey == "networking.k8s.io/networkpolicies":
        return network_policy(obj)
    if rkey in ("rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/clusterroles"):
        return policy_rules(obj, rkey.endswith("/roles"))
    if rkey in ("rbac.authorization.k8s.io/rolebindings", "rbac.authorization.k8s.io/clusterrolebindings"):
        return role_binding(obj, old, rkey.endswith("/rolebindings"))
    if rkey in ("admissionregistration.k8s.io/validatingwebhookconfigurations",
                "admissionregistration.k8s.io/mutatingwebhookconfigurations"):
        return webhooks(obj, rkey.endswith("/mutatingwebhookconfigurations"))
    if rkey == "policy/poddisruptionbudgets":
        errs = []
        _enum(errs, obj.get("spec"), "unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy",
              "unhealthyPodEvictionPolicy")
        return errs
    return []


QUALIFIED_NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                      "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
EVENT_LIMIT = 128
NOTE_LIMIT = 1024


def event_create(ev, events_v1):
    """core/validation/events.go: ValidateEventCreate on the stored (core) form. legacyValidateEvent
    applies to every request; the strict rules only to events.k8s.io/v1 requests. Paths are the
    core field names, as upstream validates the internal type."""
    from .selection import valid_label_key
    errs = []
    ns = (ev.get("metadata") or {}).get("namespace", "")
    inv = ev.get("involvedObject") or {}
    ins = inv.get("namespace", "")
    mismatch = ("FieldValueInvalid", "involvedObject.namespace",
                "Invalid value: %s: does not match event.namespace" % _q(ins))
    if not ev.get("eventTime"):
        if not ins:
            if ns not in ("", "default"):
                errs.append(mismatch)
        elif ns != ins:
            errs.append(mismatch)
    else:
        if not ins and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        # core v1's reportingComponent is the internal ReportingController; upstream names the latter
        rc = ev.get("reportingComponent") or ""
        if not rc:
            errs.append(required("reportingController"))
            errs.append(invalid("reportingController", rc, "name part must be non-empty"))
        if not valid_label_key(rc):
            errs.append(invalid("reportingController", rc, QUALIFIED_NAME_MSG))
        for f in ("reportingInstance", "action", "reason"):
            v = ev.get(f) or ""
            if not v:
                errs.append(required(f))
            if len(v) > EVENT_LIMIT:
                errs.append(invalid(f, "", "can have at most %d characters" % EVENT_LIMIT))
        if len(ev.get("message") or "") > NOTE_LIMIT:
            errs.append(invalid("message", "", "can have at most %d characters" % NOTE_LIMIT))
    if not events_v1:
        return errs
    series = ev.get("series")
    if isinstance(series, dict):
        if (series.get("count") or 0) < 2:
            errs.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(required("series.lastObservedTime"))
    if not ev.get("eventTime"):
        errs.append(required("eventTime"))
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append(invalid("type", "", "has invalid value: %s" % (ev.get("type") or "")))
    for f in ("firstTimestamp", "lastTimestamp"):
        if ev.get(f):
            errs.append(invalid(f, "", "needs to be unset"))
    if ev.get("count"):
        errs.append(invalid("count", "", "needs to be unset"))
    src = ev.get("source") or {}
    if src.get("component") or src.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs
