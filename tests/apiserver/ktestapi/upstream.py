"""Built-in kinds checked against upstream's own definitions.

The definitions are Kubernetes v1.32's OpenAPI models as generated into the npm package
@kubernetes/client-node (installed into tests/apiserver/upstream/node_modules by
`. scripts/deps.sh; ng_install_upstream_definitions`). Every model is a pair
`dist/gen/models/<Model>.js` (`<Model>.attributeTypeMap = [...]`: wire name, type, format)
and `<Model>.d.ts` (`'name': T;` for required properties, `'name'?: T;` for optional ones).
They are compiled once into a JSON table cached next to the package (or in the temp dir)
and keyed on the package version and the models directory's mtime.

`check(model, obj)` walks an object through its model the way the Go types decode it
(encoding/json as kube-apiserver's case-sensitive, strict-capable decoder runs it) and
returns the first decode error, the unknown fields (removed from the object) and the
required fields that are missing (outside `status`).
"""
import json
import os
import re
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# $KTESTAPI_UPSTREAM: another copy of the package (the server's own tests point it at nothing)
PKG_DIR = os.environ.get("KTESTAPI_UPSTREAM") or os.path.join(HERE, "upstream", "node_modules", "@kubernetes",
                                                              "client-node")
MODELS_DIR = os.path.join(PKG_DIR, "dist", "gen", "models")
INSTALL_HINT = ("upstream definitions missing (%s): run `. scripts/deps.sh; ng_install_upstream_definitions` "
                "in the repository root" % MODELS_DIR)


class Missing(Exception):
    pass


_ATTR = re.compile(r'^(\w+)\.attributeTypeMap = (\[.*?\]);', re.S | re.M)
_PROP = re.compile(r"^\s+'([^']+)'(\??): ", re.M)


def _compile():
    models = {}
    for fn in os.listdir(MODELS_DIR):
        if not fn.endswith(".js"):
            continue
        with open(os.path.join(MODELS_DIR, fn), encoding="utf-8") as f:
            js = f.read()
        m = _ATTR.search(js)
        if not m:
            continue
        name = m.group(1)
        attrs = json.loads(m.group(2))
        required = set()
        dts = os.path.join(MODELS_DIR, fn[:-3] + ".d.ts")
        if os.path.exists(dts):
            with open(dts, encoding="utf-8") as f:
                for pm in _PROP.finditer(f.read()):
                    if not pm.group(2):
                        required.add(pm.group(1))
        fields = {}
        req = []
        for a in attrs:
            fields[a["baseName"]] = [a["type"], a.get("format") or ""]
            if a["name"] in required:
                req.append(a["baseName"])
        models[name] = {"fields": fields, "required": req}
    return models


def _cache_path():
    with open(os.path.join(PKG_DIR, "package.json"), encoding="utf-8") as f:
        version = json.load(f).get("version", "0")
    stamp = "%s-%d" % (version, int(os.stat(MODELS_DIR).st_mtime))
    return stamp, [os.path.join(HERE, "upstream", "node_modules", ".ktestapi-models-%s.json" % stamp),
                   os.path.join(tempfile.gettempdir(), "ktestapi-models-%s-%d.json" % (stamp, os.getuid()))]


MODELS = None
VERSION = None


def load():
    """Load (compiling and caching on first use) the model table. Raises Missing."""
    global MODELS, VERSION
    if MODELS is not None:
        return MODELS
    if not os.path.isdir(MODELS_DIR):
        raise Missing(INSTALL_HINT)
    stamp, paths = _cache_path()
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                MODELS = json.load(f)
            VERSION = stamp
            return MODELS
        except (OSError, ValueError):
            pass
    MODELS = _compile()
    if "V1Pod" not in MODELS:
        MODELS = None
        raise Missing(INSTALL_HINT)
    VERSION = stamp
    for p in paths:
        try:
            tmp = "%s.%d.tmp" % (p, os.getpid())
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(MODELS, f, separators=(",", ":"))
            os.replace(tmp, p)
            break
        except OSError:
            continue
    return MODELS


# ---- kinds ------------------------------------------------------------------------------
_GROUP_PREFIX = {"": "Core"}


def model_for(group, version, kind):
    """The root model of a built-in kind, or None."""
    models = load()
    v = version[:1].upper() + version[1:]
    g = _GROUP_PREFIX.get(group)
    if g is None:
        g = group.split(".")[0]
        g = g[:1].upper() + g[1:]
    for cand in (g + v + kind, v + kind):
        if cand in models:
            return cand
    return None


# fields whose OpenAPI type is a resource.Quantity (the generated models flatten it to string)
QUANTITY = {
    ("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"), ("V1VolumeResourceRequirements", "requests"),
    ("V1NodeStatus", "capacity"), ("V1NodeStatus", "allocatable"), ("V1PodSpec", "overhead"),
    ("V1Overhead", "podFixed"), ("V1EmptyDirVolumeSource", "sizeLimit"),
    ("V1PersistentVolumeSpec", "capacity"), ("V1PersistentVolumeClaimStatus", "capacity"),
    ("V1PersistentVolumeClaimStatus", "allocatedResources"), ("V1ContainerStatus", "allocatedResources"),
    ("V1ResourceQuotaSpec", "hard"), ("V1ResourceQuotaStatus", "hard"), ("V1ResourceQuotaStatus", "used"),
    ("V1LimitRangeItem", "default"), ("V1LimitRangeItem", "defaultRequest"), ("V1LimitRangeItem", "max"),
    ("V1LimitRangeItem", "min"), ("V1LimitRangeItem", "maxLimitRequestRatio"),
    ("V1CSIStorageCapacity", "capacity"), ("V1CSIStorageCapacity", "maximumVolumeSize"),
    ("V1VolumeNodeResources", "count"),
}
QUANTITY_RE = re.compile(r'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

# required properties whose zero value the real validation accepts (OpenAPI marks every
# non-omitempty Go field required; a missing bool or number decodes to false/0)
_LENIENT_TYPES = ("boolean",)
# required in OpenAPI, accepted empty by kube-apiserver's validation
_NOT_REQUIRED = {
    ("V1PriorityClass", "value"),            # 0 is a valid priority
    ("V1ControllerRevision", "revision"),    # 0 is a valid revision
    ("CoreV1Event", "involvedObject"),       # checked field by field (namespace), never as a whole
}


class Result:
    def __init__(self):
        self.error = None      # first decode error message
        self.unknown = []      # paths of unknown fields (removed)
        self.required = []     # paths of missing required fields


def _jt(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _num_text(v):
    return repr(v) if isinstance(v, float) else str(v)


def _pkg(model):
    m = re.match(r'^(?:Core|Events|Rbac|Storage|Discovery|Authentication|Flowcontrol|Apiextensions|'
                 r'Admissionregistration|Policy)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$', model)
    if not m:
        return "v1", model
    return m.group(1).lower(), m.group(2)


def struct_name(model):
    return _pkg(model)[1]


def go_type(t, fmt=""):
    if t.startswith("Array<"):
        inner = t[6:-1]
        return "[]" + go_type(inner, "")
    if t.startswith("{ [key: string]: "):
        inner = t[len("{ [key: string]: "):-3]
        return "map[string]" + go_type(inner, fmt)
    if t == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if t == "number":
        return {"int32": "int32", "int64": "int64", "double": "float64"}.get(fmt, "float64")
    if t == "boolean":
        return "bool"
    if t == "Date":
        return "v1.Time"
    if t == "V1MicroTime":
        return "v1.MicroTime"
    if t == "IntOrString":
        return "intstr.IntOrString"
    if t in ("any", "object"):
        return "interface {}"
    pkg, name = _pkg(t)
    return "%s.%s" % (pkg, name)


# ---- time (metav1.Time: RFC 3339, metav1.MicroTime: RFC 3339 with exactly 6 fraction digits)
_LAYOUT = [("2006", 4), ("-", None), ("01", 2), ("-", None), ("02", 2), ("T", None), ("15", 2), (":", None),
           ("04", 2), (":", None), ("05", 2)]


def time_error(s, micro=False):
    """time.Parse(RFC3339[Micro], s)'s error text, or None."""
    layout = "2006-01-02T15:04:05.000000Z07:00" if micro else "2006-01-02T15:04:05Z07:00"
    rest = s
    vals = {}

    def err(elem):
        return 'parsing time %s as "%s": cannot parse %s as "%s"' % (json.dumps(s), layout, json.dumps(rest), elem)
    for elem, n in _LAYOUT:
        if n is None:
            if not rest.startswith(elem):
                return err(elem)
            rest = rest[len(elem):]
            continue
        if len(rest) < n or not rest[:n].isdigit():
            return err(elem)
        vals[elem] = int(rest[:n])
        rest = rest[n:]
    if micro:
        if not re.match(r'^\.\d{6}', rest):
            return err(".000000")
        rest = rest[7:]
    else:
        m = re.match(r'^[.,]\d+', rest)
        if m:
            rest = rest[m.end():]
    if rest == "Z":
        rest = ""
    elif re.match(r'^[+-]\d\d:\d\d$', rest):
        if int(rest[1:3]) > 23 or int(rest[4:6]) > 59:
            return 'parsing time %s: time zone offset out of range' % json.dumps(s)
        rest = ""
    else:
        return err("Z07:00")
    for elem, lim, what in (("01", (1, 12), "month"), ("02", (1, 31), "day"), ("15", (0, 23), "hour"),
                            ("04", (0, 59), "minute"), ("05", (0, 59), "second")):
        if not lim[0] <= vals[elem] <= lim[1]:
            return 'parsing time %s: %s out of range' % (json.dumps(s), what)
    return None


def base64_error(s):
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    clean = [(i, c) for i, c in enumerate(s) if c not in "\r\n"]
    for j, (i, c) in enumerate(clean):
        if c == "=":
            tail = "".join(x for _, x in clean[j:])
            if tail.strip("=") or j % 4 < 2 or (j % 4 == 2 and tail != "==") or (j % 4 == 3 and tail != "="):
                return "illegal base64 data at input byte %d" % i
            break
        if c not in alphabet:
            return "illegal base64 data at input byte %d" % i
    if len(clean) % 4:
        # a quantum cut short without its padding: Go reports where that quantum starts
        return "illegal base64 data at input byte %d" % clean[len(clean) - len(clean) % 4][0]
    return None


# ---- the walk ---------------------------------------------------------------------------
def _join(path, key):
    return path + "." + key if path else key


def check(model, obj, res=None):
    """Walk `obj` (a dict, modified in place: unknown fields are removed) through `model`."""
    res = res or Result()
    _struct(model, obj, "", [], res, False)
    return res


def check_metadata(obj, res=None):
    """Only `metadata` (custom resources: the rest is the CRD schema's business)."""
    res = res or Result()
    if "metadata" in obj:
        _value("V1ObjectMeta", "metadata", "V1ObjectMeta", "", obj["metadata"], "metadata", ["metadata"], res, False)
    return res


def _type_err(res, value, struct, stack, gotype):
    if res.error is None:
        res.error = "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (
            value, struct, ".".join(stack), gotype)


def _struct(model, value, path, stack, res, in_status):
    models = MODELS
    m = models.get(model)
    if m is None or not isinstance(value, dict):
        return
    fields = m["fields"]
    for k in list(value):
        if k not in fields:
            res.unknown.append(_join(path, k))
            del value[k]
            continue
        t, fmt = fields[k]
        if value[k] is None:
            # nil slice/map/pointer (omitted when encoded) or a zero value left alone
            del value[k]
            continue
        _value(model, k, t, fmt, value[k], _join(path, k), stack + [k], res,
               in_status or (path == "" and k == "status"))
    if not in_status:
        for k in m["required"]:
            if (model, k) in _NOT_REQUIRED or fields[k][0] in _LENIENT_TYPES:
                continue
            if value.get(k) is None:
                res.required.append(_join(path, k))


def _value(model, field, t, fmt, v, path, stack, res, in_status):
    struct = struct_name(model)
    if v is None:
        return
    jt = _jt(v)
    if (model, field) in QUANTITY:
        if t.startswith("{"):
            if not isinstance(v, dict):
                _type_err(res, jt, struct, stack, "v1.ResourceList")
                return
            items = v.values()
        else:
            items = [v]
        for q in items:
            if q is None or isinstance(q, bool):
                if isinstance(q, bool) and res.error is None:
                    res.error = QUANTITY_MSG
                continue
            if isinstance(q, (int, float)):
                continue
            if not isinstance(q, str) or not QUANTITY_RE.match(q.strip()):
                if res.error is None:
                    res.error = QUANTITY_MSG
        return
    if model == "V1JSONSchemaProps" and field in ("items", "additionalProperties", "additionalItems"):
        if isinstance(v, dict):
            _struct("V1JSONSchemaProps", v, path, stack, res, in_status)
        elif isinstance(v, list) and field == "items":
            for i, it in enumerate(v):
                _struct("V1JSONSchemaProps", it, "%s[%d]" % (path, i), stack, res, in_status)
        return
    if t.startswith("Array<"):
        inner = t[6:-1]
        if not isinstance(v, list):
            _type_err(res, jt, struct, stack, go_type(t, fmt))
            return
        for i, it in enumerate(v):
            _elem(model, field, inner, fmt, it, "%s[%d]" % (path, i), stack, res, in_status)
        return
    if t.startswith("{ [key: string]: "):
        inner = t[len("{ [key: string]: "):-3]
        if not isinstance(v, dict):
            _type_err(res, jt, struct, stack, go_type(t, fmt))
            return
        for k, it in v.items():
            _elem(model, field, inner, fmt, it, _join(path, k), stack, res, in_status)
        return
    _elem(model, field, t, fmt, v, path, stack, res, in_status)


def _elem(model, field, t, fmt, v, path, stack, res, in_status):
    """One value of type t (not an Array/map) in field `field` of `model`."""
    if v is None:
        return
    struct = struct_name(model)
    jt = _jt(v)
    if t.startswith("Array<") or t.startswith("{"):
        return _value(model, field, t, fmt, v, path, stack, res, in_status)
    if t == "string":
        if jt != "string":
            _type_err(res, jt, struct, stack, go_type(t, fmt))
        elif fmt == "byte":
            e = base64_error(v)
            if e and res.error is None:
                res.error = e
        return
    if t == "boolean":
        if jt != "bool":
            _type_err(res, jt, struct, stack, "bool")
        return
    if t == "number":
        gt = go_type(t, fmt)
        if jt != "number":
            _type_err(res, jt, struct, stack, gt)
            return
        if gt.startswith("int"):
            bits = 31 if gt == "int32" else 63
            if isinstance(v, float) or not -(1 << bits) <= v < (1 << bits):
                _type_err(res, "number " + _num_text(v), struct, stack, gt)
        return
    if t in ("Date", "V1MicroTime"):
        if jt != "string":
            if res.error is None:
                res.error = "json: cannot unmarshal %s into Go value of type string" % jt
            return
        e = time_error(v, micro=(t == "V1MicroTime"))
        if e and res.error is None:
            res.error = e
        return
    if t == "IntOrString":
        if jt == "number":
            if isinstance(v, float) or not -(1 << 31) <= v < (1 << 31):
                if res.error is None:
                    res.error = "json: cannot unmarshal number %s into Go value of type int32" % _num_text(v)
        elif jt != "string" and res.error is None:
            res.error = "json: cannot unmarshal %s into Go value of type int32" % jt
        return
    if t in ("any", "object"):
        return
    if t in MODELS:
        if jt != "object":
            _type_err(res, jt, struct, stack, go_type(t))
            return
        _struct(t, v, path, stack, res, in_status)
