"""CustomResourceDefinition schemas as apiextensions-apiserver checks them at create and update.

`check(crd)` returns (reason, field, message) causes for a 422: structural schema rules, forbidden
OpenAPI keywords, `x-kubernetes-*` combinations, defaults (valid against their schema, pruned,
not where defaults are forbidden) and every `x-kubernetes-validations` rule compiled with
Kubernetes' CEL typing (by the CEL process of ktestapi.cel). Paths are those of the internal
apiextensions type: one schema shared by all versions is `spec.validation.openAPIV3Schema`,
per-version schemas are `spec.versions[i].schema.openAPIV3Schema`. Estimated CEL cost is not
computed."""
import json
import re

from . import cel
from .validation import validate_schema, prune

_SCALARS = ("string", "integer", "number", "boolean")
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_FORBIDDEN = {
    "$ref": "$ref is not supported",
    "$schema": "$schema is not supported",
    "id": "id is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "patternProperties": "patternProperties is not supported",
}


def _q(v):
    return json.dumps(v, ensure_ascii=False)


def _go_rule(r):
    """The ValidationRule as Go's %#v prints it."""
    def s(k):
        v = r.get(k)
        return _q(v if isinstance(v, str) else "")
    reason = "(*apiextensions.FieldValueErrorReason)(%s)" % ("0xc000a1e0f0" if r.get("reason") else "nil")
    opt = "(*bool)(%s)" % ("0xc000a1e0f8" if "optionalOldSelf" in r and r["optionalOldSelf"] is not None else "nil")
    return ("apiextensions.ValidationRule{Rule:%s, Message:%s, MessageExpression:%s, Reason:%s, FieldPath:%s, "
            "OptionalOldSelf:%s}" % (s("rule"), s("message"), s("messageExpression"), reason, s("fieldPath"), opt))


def _schemas(crd):
    """[(path prefix, schema)] as the internal type holds them."""
    vs = ((crd.get("spec") or {}).get("versions")) or []
    schs = [((v.get("schema") or {}).get("openAPIV3Schema")) if isinstance(v, dict) else None for v in vs]
    present = [s for s in schs if isinstance(s, dict)]
    if present and len(present) == len(schs) and all(s == present[0] for s in present):
        return [("spec.validation.openAPIV3Schema", present[0])]
    return [("spec.versions[%d].schema.openAPIV3Schema" % i, s) for i, s in enumerate(schs) if isinstance(s, dict)]


def check(crd, celproc=None):
    errs = []
    for prefix, schema in _schemas(crd):
        _structural(schema, prefix, errs, root=True, junctor=False, in_pu=False)
        _rules(schema, prefix, errs)
        if cel.has_rules(schema) and not any(e[0] == "FieldValueRequired" and e[1].endswith(".type") for e in errs):
            proc = celproc or cel.process()
            for path, i, fld, msg in proc.compile(schema):
                node = _node(schema, path)
                rule = ((node or {}).get("x-kubernetes-validations") or [{}])[i]
                field = "%s%s.x-kubernetes-validations[%d].%s" % (prefix, "".join("." + p for p in path), i, fld)
                if msg.startswith("Required value"):
                    errs.append(("FieldValueRequired", field, msg))
                else:
                    errs.append(("FieldValueInvalid", field, "Invalid value: %s: %s" % (_go_rule(rule), msg)))
    return errs


def _node(schema, path):
    n = schema
    for p in path:
        if p.startswith("properties["):
            n = (n.get("properties") or {}).get(p[len("properties["):-1])
        elif p in ("items", "additionalProperties", "not"):
            n = n.get(p)
        else:
            k, i = p[:-1].split("[")
            n = (n.get(k) or [])[int(i)]
        if not isinstance(n, dict):
            return None
    return n


def _structural(s, path, errs, root, junctor, in_pu, metadata_root=False):
    if not isinstance(s, dict):
        return
    for k, msg in _FORBIDDEN.items():
        if k in s:
            errs.append(("FieldValueForbidden", "%s.%s" % (path, k), "Forbidden: " + msg))
    if s.get("uniqueItems") is True:
        errs.append(("FieldValueForbidden", path + ".uniqueItems",
                     "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    if "additionalItems" in s:
        errs.append(("FieldValueForbidden", path + ".additionalItems", "Forbidden: additionalItems cannot be set to false"
                     if s["additionalItems"] is False else "Forbidden: additionalItems is not supported"))
    t = s.get("type")
    ios = bool(s.get("x-kubernetes-int-or-string"))
    pu = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    if not junctor:
        if root:
            if not t:
                errs.append(("FieldValueRequired", path + ".type", "Required value: must not be empty at the root"))
            elif t != "object":
                errs.append(("FieldValueInvalid", path + ".type", "Invalid value: %s: must be object at the root" % _q(t)))
        elif not t and not ios and not pu and not in_pu:
            errs.append(("FieldValueRequired", path + ".type", "Required value: must not be empty for specified %s"
                         % ("array items" if path.endswith(".items") else "object fields")))
    if t and t not in _SCALARS + ("array", "object"):
        errs.append(("FieldValueNotSupported", path + ".type", 'Unsupported value: %s: supported values: "array", '
                     '"boolean", "integer", "number", "object", "string"' % _q(t)))
    if ios and t:
        errs.append(("FieldValueInvalid", path + ".type", "Invalid value: %s: must be empty to be structural" % _q(t)))
    if s.get("properties") and isinstance(s.get("additionalProperties"), (dict, bool)) and s.get("additionalProperties") is not False:
        errs.append(("FieldValueForbidden", path + ".additionalProperties",
                     "Forbidden: additionalProperties and properties are mutual exclusive"))
    if t == "array" and not isinstance(s.get("items"), dict) and not junctor:
        errs.append(("FieldValueRequired", path + ".items", "Required value: must be specified"))
    if isinstance(s.get("items"), list):
        errs.append(("FieldValueForbidden", path + ".items", "Forbidden: items must be a schema object and not an array"))
    if s.get("nullable") and root:
        errs.append(("FieldValueForbidden", path + ".nullable", "Forbidden: nullable cannot be true at the root"))
    # defaults
    if "default" in s:
        if root:
            errs.append(("FieldValueForbidden", path + ".default", "Forbidden: must not be set at the root"))
        elif junctor:
            errs.append(("FieldValueForbidden", path + ".default", "Forbidden: must not be set inside logical junctors"))
        elif metadata_root:
            errs.append(("FieldValueForbidden", path + ".default", "Forbidden: must not be set for metadata"))
        else:
            d = s["default"]
            if d is None and not s.get("nullable"):
                errs.append(("FieldValueInvalid", path + ".default", "Invalid value: \"null\": must not be null"))
            elif d is not None:
                sub = []
                validate_schema(s, d, _data_path(path), sub)
                for reason, field, msg in sub:
                    errs.append((reason, path + ".default", msg))
                if isinstance(d, dict) and prune(s, d) != d:
                    errs.append(("FieldValueInvalid", path + ".default", "Invalid value: %s: must not have unknown fields"
                                 % _q(d)))
    # x-kubernetes-* extensions
    lt = s.get("x-kubernetes-list-type")
    if lt is not None:
        if lt not in ("atomic", "map", "set"):
            errs.append(("FieldValueNotSupported", path + ".x-kubernetes-list-type",
                         'Unsupported value: %s: supported values: "atomic", "map", "set"' % _q(lt)))
        elif t != "array":
            errs.append(("FieldValueInvalid", path + ".x-kubernetes-list-type",
                         "Invalid value: %s: must only be used if type is array" % _q(lt)))
        else:
            it = s.get("items") if isinstance(s.get("items"), dict) else {}
            if lt == "set":
                if it.get("type") not in _SCALARS and it.get("x-kubernetes-map-type") != "atomic" and \
                        not it.get("x-kubernetes-int-or-string"):
                    errs.append(("FieldValueInvalid", path + ".items.type",
                                 'Invalid value: %s: must be a scalar type if parent array\'s x-kubernetes-list-type is set'
                                 % _q(it.get("type", ""))))
            elif lt == "map":
                keys = s.get("x-kubernetes-list-map-keys")
                if it.get("type") != "object":
                    errs.append(("FieldValueInvalid", path + ".items.type", "Invalid value: %s: must be object if parent "
                                 "array's x-kubernetes-list-type is map" % _q(it.get("type", ""))))
                if not keys:
                    errs.append(("FieldValueRequired", path + ".x-kubernetes-list-map-keys",
                                 "Required value: must not be empty if x-kubernetes-list-type is map"))
                else:
                    props = it.get("properties") or {}
                    req = set(it.get("required") or [])
                    if len(set(keys)) != len(keys):
                        errs.append(("FieldValueInvalid", path + ".x-kubernetes-list-map-keys",
                                     "Invalid value: %s: must not contain duplicate entries" % _q(keys)))
                    for k in keys:
                        ps = props.get(k)
                        if not isinstance(ps, dict):
                            errs.append(("FieldValueInvalid", path + ".x-kubernetes-list-map-keys",
                                         "Invalid value: %s: entries must all be names of item properties" % _q(keys)))
                            break
                        kp = "%s.items.properties[%s]" % (path, k)
                        if ps.get("type") not in _SCALARS and not ps.get("x-kubernetes-int-or-string"):
                            errs.append(("FieldValueInvalid", kp + ".type", "Invalid value: %s: must be a scalar type if "
                                         "parent array's x-kubernetes-list-type is map" % _q(ps.get("type", ""))))
                        if k not in req and "default" not in ps:
                            errs.append(("FieldValueRequired", kp, "Required value: all map keys must be required or "
                                         "have a default value"))
    if "x-kubernetes-list-map-keys" in s and lt != "map":
        errs.append(("FieldValueForbidden", path + ".x-kubernetes-list-map-keys",
                     "Forbidden: can only be set if x-kubernetes-list-type is map"))
    mt = s.get("x-kubernetes-map-type")
    if mt is not None:
        if mt not in ("atomic", "granular"):
            errs.append(("FieldValueNotSupported", path + ".x-kubernetes-map-type",
                         'Unsupported value: %s: supported values: "atomic", "granular"' % _q(mt)))
        elif t != "object":
            errs.append(("FieldValueInvalid", path + ".x-kubernetes-map-type",
                         "Invalid value: %s: must only be used if type is object" % _q(mt)))
    if s.get("x-kubernetes-embedded-resource"):
        if t != "object":
            errs.append(("FieldValueInvalid", path + ".type",
                         "Invalid value: %s: must be object if x-kubernetes-embedded-resource is true" % _q(t or "")))
        elif not s.get("properties") and not pu:
            errs.append(("FieldValueRequired", path + ".properties", "Required value: must not be empty if "
                         "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
    if pu and s.get("x-kubernetes-preserve-unknown-fields") is not True:
        errs.append(("FieldValueInvalid", path + ".x-kubernetes-preserve-unknown-fields",
                     "Invalid value: false: must be true or undefined"))
    # metadata at the root: only name and generateName, as strings
    if root and isinstance((s.get("properties") or {}).get("metadata"), dict):
        m = s["properties"]["metadata"]
        allowed = {"type", "properties", "description", "x-kubernetes-validations"}
        bad = [k for k in m if k not in allowed] or [k for k in (m.get("properties") or {}) if k not in ("name", "generateName")]
        if not bad:
            for k, ps in (m.get("properties") or {}).items():
                if not isinstance(ps, dict) or ps.get("type") != "string" or set(ps) - {
                        "type", "maxLength", "minLength", "pattern", "enum", "format", "description", "x-kubernetes-validations"}:
                    bad = [k]
        if (m.get("type") not in (None, "object")) or bad:
            errs.append(("FieldValueForbidden", path + ".properties[metadata]", "Forbidden: must not specify anything "
                         "other than name and generateName, but metadata is implicitly specified"))
    # children
    cpu = in_pu or pu
    for k, ps in (s.get("properties") or {}).items():
        _structural(ps, "%s.properties[%s]" % (path, k), errs, False, junctor, cpu,
                    metadata_root=root and k == "metadata")
    if isinstance(s.get("items"), dict):
        _structural(s["items"], path + ".items", errs, False, junctor, cpu)
    if isinstance(s.get("additionalProperties"), dict):
        _structural(s["additionalProperties"], path + ".additionalProperties", errs, False, junctor, cpu)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(s.get(key) or []):
            _structural(sub, "%s.%s[%d]" % (path, key, i), errs, False, True, cpu)
    if isinstance(s.get("not"), dict):
        _structural(s["not"], path + ".not", errs, False, True, cpu)


def _data_path(schema_path):
    """The object path a schema path describes (spec.x for ...properties[spec].properties[x])."""
    tail = schema_path.split("openAPIV3Schema", 1)[-1]
    out = re.sub(r"\.properties\[([^\]]*)\]", r".\1", tail)
    out = out.replace(".additionalProperties", "[*]").replace(".items", "[*]")
    return out.lstrip(".")


def _field_path_ok(s, fp):
    """Whether a rule's fieldPath names a field declared below the schema node."""
    i, n = 0, s
    while i < len(fp):
        if fp[i] == ".":
            j = i + 1
            while j < len(fp) and fp[j] not in ".[":
                j += 1
            name, i = fp[i + 1:j], j
        elif fp.startswith("['", i):
            j = fp.find("']", i)
            if j < 0:
                return False
            name, i = fp[i + 2:j], j + 2
        elif fp[i] == "[":
            j = fp.find("]", i)
            if j < 0 or not fp[i + 1:j].isdigit() or not isinstance(n.get("items"), dict):
                return False
            n, i = n["items"], j + 1
            continue
        else:
            return False
        if not name:
            return False
        props = n.get("properties") or {}
        if name in props:
            n = props[name]
        elif isinstance(n.get("additionalProperties"), dict):
            n = n["additionalProperties"]
        else:
            return False
        if not isinstance(n, dict):
            return False
    return True


def _rules(s, path, errs):
    if not isinstance(s, dict):
        return
    for i, r in enumerate(s.get("x-kubernetes-validations") or []):
        p = "%s.x-kubernetes-validations[%d]" % (path, i)
        if not isinstance(r, dict):
            continue
        if r.get("reason") is not None and r["reason"] not in _REASONS:
            errs.append(("FieldValueNotSupported", p + ".reason", "Unsupported value: %s: supported values: %s"
                         % (_q(r["reason"]), ", ".join(_q(x) for x in _REASONS))))
        fp = r.get("fieldPath")
        if fp:
            if not _field_path_ok(s, fp if fp[0] in ".[" else "." + fp):
                errs.append(("FieldValueInvalid", p + ".fieldPath", "Invalid value: %s: fieldPath must be a valid path: "
                             "does not refer to a valid field" % _q(fp)))
        msg = r.get("message")
        if isinstance(msg, str) and msg:
            if not msg.strip():
                errs.append(("FieldValueInvalid", p + ".message", "Invalid value: %s: message must be non-empty if "
                             "specified" % _q(msg)))
            elif "\n" in msg:
                errs.append(("FieldValueInvalid", p + ".message", "Invalid value: %s: message must not contain line "
                             "breaks" % _q(msg)))
    for k, ps in (s.get("properties") or {}).items():
        _rules(ps, "%s.properties[%s]" % (path, k), errs)
    if isinstance(s.get("items"), dict):
        _rules(s["items"], path + ".items", errs)
    if isinstance(s.get("additionalProperties"), dict):
        _rules(s["additionalProperties"], path + ".additionalProperties", errs)
