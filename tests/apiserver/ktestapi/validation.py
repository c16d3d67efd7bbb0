"""Object validation (the 422 Invalid checks) and defaulting.

Covers what the real server enforces where tests touch it: object names, label keys and
values, namespace/scope consistency, required pod fields and pod update immutability,
PDB/webhook-configuration essentials, VolumeAttachment specs, Job status transitions, CRD
naming, and for custom resources the CRD's structural OpenAPI v3 schema (types, required,
enum, bounds, patterns, lengths, nullable, int-or-string, additionalProperties), with
defaults applied and unknown fields pruned.
CEL rules (x-kubernetes-validations) are not evaluated.
"""
import copy
import datetime
import re

from . import kindcheck
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
    elif rkey == "storage.k8s.io/volumeattachments":
        errs += validate_volume_attachment(obj, old)
    errs += kindcheck.check(rkey, obj, old)
    return errs


def _subdomain_errors(value):
    """validation.IsDNS1123Subdomain messages."""
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def _va_spec_errors(spec):
    """storage validation.validateVolumeAttachmentSpec (common to v1 and v1beta1)."""
    errs = []
    attacher = spec.get("attacher") or ""
    if not attacher:
        errs.append(("FieldValueRequired", "spec.attacher", "Required value"))
    source = spec.get("source") if isinstance(spec.get("source"), dict) else {}
    pv, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    one_of = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if pv is None and inline is None:
        errs.append(("FieldValueRequired", "spec.source", "Required value: " + one_of))
    elif pv is not None and inline is not None:
        errs.append(("FieldValueForbidden", "spec.source", "Forbidden: " + one_of))
    elif pv is not None:
        if pv == "":
            errs.append(("FieldValueRequired", "spec.source.persistentVolumeName",
                         "Required value: must specify non empty persistentVolumeName"))
    else:
        # ValidatePersistentVolumeSpec for inline volumes: only its first checks
        p = "spec.source.inlineVolumeSpec"
        inline = inline if isinstance(inline, dict) else {}
        if inline.get("claimRef") is not None:
            errs.append(("FieldValueForbidden", p + ".claimRef", "Forbidden: may not be specified in the context of "
                         "inline volumes"))
        if inline.get("capacity"):
            errs.append(("FieldValueForbidden", p + ".capacity", "Forbidden: may not be specified in the context of "
                         "inline volumes"))
        if inline.get("csi") is None:
            errs.append(("FieldValueRequired", p + ".csi", "Required value: has to be specified in the context of "
                         "inline volumes"))
        if not inline.get("accessModes"):
            errs.append(("FieldValueRequired", p + ".accessModes", "Required value"))
    node = spec.get("nodeName") or ""
    for msg in _subdomain_errors(node):   # ValidateNodeName: an empty name is invalid, not "required"
        errs.append(("FieldValueInvalid", "spec.nodeName", "Invalid value: %s: %s" % (_q(node), msg)))
    return errs


def _go_va_spec(spec):
    """The %#v rendering of the internal VolumeAttachmentSpec in "field is immutable" messages
    (pointer addresses differ from run to run on a real server too)."""
    source = spec.get("source") if isinstance(spec.get("source"), dict) else {}
    pv = source.get("persistentVolumeName")
    inline = source.get("inlineVolumeSpec")
    return ('storage.VolumeAttachmentSpec{Attacher:%s, Source:storage.VolumeAttachmentSource{PersistentVolumeName:'
            '(*string)(%s), InlineVolumeSpec:(*core.PersistentVolumeSpec)(%s)}, NodeName:%s}'
            % (_q(spec.get("attacher") or ""), "nil" if pv is None else "0xc000a41f30",
               "nil" if inline is None else "0xc000b5e000", _q(spec.get("nodeName") or "")))


def validate_volume_attachment(obj, old=None):
    """The VolumeAttachment strategy of storage.k8s.io/v1.

    Create: ValidateVolumeAttachment + ValidateVolumeAttachmentV1 (the attacher must be a CSI
    driver name, the PV name an object name). Update (main resource and /status):
    ValidateVolumeAttachment, then ValidateVolumeAttachmentUpdate, which validates the object
    again (the causes repeat) and makes the spec immutable."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    errs = _va_spec_errors(spec)
    if old is None:
        attacher = spec.get("attacher") or ""
        if not attacher:
            errs.append(("FieldValueRequired", "spec.attacher", "Required value"))
        if len(attacher) > 63:
            errs.append(("FieldValueTooLong", "spec.attacher", "Too long: must have at most 63 bytes"))
        for msg in _subdomain_errors(attacher.lower()):
            errs.append(("FieldValueInvalid", "spec.attacher", "Invalid value: %s: %s" % (_q(attacher), msg)))
        source = spec.get("source") if isinstance(spec.get("source"), dict) else {}
        pv = source.get("persistentVolumeName")
        if pv is not None:
            for msg in _subdomain_errors(pv):
                errs.append(("FieldValueInvalid", "spec.source.persistentVolumeName",
                             "Invalid value: %s: %s" % (_q(pv), msg)))
        return errs
    errs += _va_spec_errors(spec)
    if spec != (old.get("spec") or {}):
        errs.append(("FieldValueInvalid", "spec", "Invalid value: %s: field is immutable" % _go_va_spec(spec)))
    return errs


# ---- batch/v1 Job status transitions (the /status subresource) ----------------------
def _cond_true(job, typ):
    return any(isinstance(c, dict) and c.get("type") == typ and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _go_time(ts):
    """metav1.Time as a field error prints it (time.Time.String)."""
    try:
        t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")
    except (TypeError, ValueError):
        return str(ts)
    return t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _same_time(a, b):
    return (a or None) == (b or None) or (a and b and _go_time(a) == _go_time(b))


def validate_job_status_update(job, old):
    """ValidateJobUpdateStatus with the options of v1.32's default feature gates (JobManagedBy is
    beta and on, so the strict transition rules apply). The rules gated on "changed" fire only when
    the fields they look at change. Not checked: uncountedTerminatedPods and the
    completedIndexes/failedIndexes formats."""
    st, ost = job.get("status") or {}, old.get("status") or {}
    spec = job.get("spec") or {}
    errs = []
    complete, failed = _cond_true(job, "Complete"), _cond_true(job, "Failed")
    target, met = _cond_true(job, "FailureTarget"), _cond_true(job, "SuccessCriteriaMet")
    finished = complete or failed
    o_complete, o_failed = _cond_true(old, "Complete"), _cond_true(old, "Failed")
    o_target, o_met = _cond_true(old, "FailureTarget"), _cond_true(old, "SuccessCriteriaMet")
    complete_changed, failed_changed = complete != o_complete, failed != o_failed
    finished_changed = finished != (o_complete or o_failed)
    start, ostart = st.get("startTime"), ost.get("startTime")
    done, odone = st.get("completionTime"), ost.get("completionTime")
    start_changed, done_changed = not _same_time(start, ostart), not _same_time(done, odone)
    active = st.get("active") or 0
    active_changed = active != (ost.get("active") or 0)

    def invalid(field, value, msg):
        errs.append(("FieldValueInvalid", "status." + field, "Invalid value: %s: %s" % (value, msg)))

    def conditions(msg):
        errs.append(("FieldValueInvalid", "status.conditions", "Invalid value: " + msg))

    for f in ("active", "succeeded", "failed", "ready", "terminating"):
        v = st.get(f)
        if isinstance(v, int) and v < 0:
            invalid(f, v, "must be greater than or equal to 0")
    if (complete_changed or failed_changed) and complete and failed:
        conditions("cannot set Complete=True and Failed=true conditions")
    if (complete_changed or target != o_target) and complete and target:
        conditions("cannot set Complete=True and FailureTarget=true conditions")
    if (complete_changed or done_changed) and done and not complete:
        invalid("completionTime", _go_time(done), "cannot set completionTime when there is no Complete=True condition")
    if (complete_changed or done_changed) and not done and complete:
        errs.append(("FieldValueRequired", "status.completionTime", "Required value: completionTime is required for "
                     "Complete jobs"))
    if (start_changed or done_changed) and start and done and _go_time(done) < _go_time(start):
        invalid("completionTime", _go_time(done), "completionTime cannot be set before startTime")
    failed_indexes_changed = st.get("failedIndexes") != ost.get("failedIndexes")
    if (failed_changed or failed_indexes_changed) and failed and not target:
        conditions("cannot set Failed=True condition without the FailureTarget=true condition")
    if (complete_changed or met != o_met) and complete and not met:
        conditions("cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
    if (finished_changed or active_changed) and active > 0 and finished:
        invalid("active", active, "active>0 is invalid for finished job")
    # v1.32.7 on (kubernetes#132614): a suspended Job with completions 0 finishes without startTime.
    suspended_zero = spec.get("suspend") is True and spec.get("completions") == 0
    if (finished_changed or start_changed) and not suspended_zero and not start and finished:
        errs.append(("FieldValueRequired", "status.startTime", "Required value: startTime is required for finished job"))
    terminating = st.get("terminating")
    if (finished_changed or terminating != ost.get("terminating")) and (terminating or 0) > 0 and finished:
        invalid("terminating", terminating, "terminating>0 is invalid for finished job")
    ready = st.get("ready")
    if (ready != ost.get("ready") or active_changed) and ready is not None and ready > active:
        invalid("ready", ready, "cannot set more ready pods than active")
    if met and failed:
        conditions("cannot set SuccessCriteriaMet=True and Failed=true conditions")
    if met and target:
        conditions("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
    if spec.get("successPolicy") is not None and not met and complete:
        conditions("cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
    for typ, was, now in (("Failed", o_failed, failed), ("Complete", o_complete, complete),
                          ("FailureTarget", o_target, target)):
        if was and not now:
            conditions("cannot disable the terminal %s=True condition" % typ)
    if (st.get("failed") or 0) < (ost.get("failed") or 0):
        invalid("failed", st.get("failed") or 0, "cannot decrease the failed counter")
    indexed = spec.get("completionMode") == "Indexed"
    if (not indexed or spec.get("completions") != spec.get("parallelism")) and \
            (st.get("succeeded") or 0) < (ost.get("succeeded") or 0):
        invalid("succeeded", st.get("succeeded") or 0, "cannot decrease the succeeded counter")
    if done and odone and not _same_time(done, odone):
        invalid("completionTime", _go_time(done), "completionTime cannot be mutated")
    if ostart and start_changed and not spec.get("suspend"):
        errs.append(("FieldValueRequired", "status.startTime", "Required value: startTime cannot be removed for "
                     "unsuspended job"))
    if o_met and not met:
        conditions("cannot disable the SuccessCriteriaMet=True condition")
    if o_complete and not o_met and met:
        conditions("cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
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
