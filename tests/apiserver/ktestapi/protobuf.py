"""Decoding of Kubernetes protobuf request bodies for a few simple kinds.

kubectl's typed commands (`kubectl create namespace|configmap|secret|serviceaccount`,
`kubectl auth whoami|can-i`) send
`application/vnd.kubernetes.protobuf`: the 4-byte magic "k8s\\0", then a runtime.Unknown
message {1: typeMeta{1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType},
where raw is the object's own protobuf. This module decodes those kinds (field numbers from
k8s.io/api core/v1 and apimachinery meta/v1 generated.proto) into the JSON form. Any other
kind gets 415, as from a server that does not speak protobuf.
"""
import base64


class ProtoError(ValueError):
    pass


def _varint(b, i):
    shift = 0
    out = 0
    while True:
        if i >= len(b):
            raise ProtoError("truncated varint")
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        if not c & 0x80:
            return out, i
        shift += 7
        if shift > 70:
            raise ProtoError("varint too long")


def fields(b):
    """Yield (field_number, wire_type, value) for a message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            if len(v) != n:
                raise ProtoError("truncated field")
            i += n
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        yield fn, wt, v


def _signed(v):
    return v - (1 << 64) if v >= (1 << 63) else v


def _decode(schema, b):
    out = {}
    for fn, wt, v in fields(b):
        spec = schema.get(fn)
        if spec is None:
            continue
        name, typ = spec
        if typ in ("string", "int", "bool", "time") and not v and name not in ("k", "v"):
            continue  # zero values are omitted from the JSON form (omitempty)
        if typ == "string":
            out[name] = v.decode()
        elif typ == "bytes":
            out[name] = base64.b64encode(v).decode()
        elif typ == "int":
            out[name] = _signed(v)
        elif typ == "bool":
            out[name] = bool(v)
        elif typ == "time":
            t = _decode({1: ("seconds", "int"), 2: ("nanos", "int")}, v)
            import datetime
            out[name] = datetime.datetime.fromtimestamp(t.get("seconds", 0), datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
        elif typ == "strings":
            out.setdefault(name, []).append(v.decode())
        elif isinstance(typ, tuple) and typ[0] == "map":
            kv = _decode({1: ("k", "string"), 2: ("v", typ[1])}, v)
            out.setdefault(name, {})[kv.get("k", "")] = kv.get("v", "" if typ[1] == "string" else "")
        elif isinstance(typ, tuple) and typ[0] == "msg":
            out[name] = _decode(typ[1], v)
        elif isinstance(typ, tuple) and typ[0] == "msgs":
            out.setdefault(name, []).append(_decode(typ[1], v))
    return out


OWNER_REF = {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"), 5: ("apiVersion", "string"),
             6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
OBJECT_META = {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
               5: ("uid", "string"), 6: ("resourceVersion", "string"), 7: ("generation", "int"),
               8: ("creationTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int"),
               11: ("labels", ("map", "string")), 12: ("annotations", ("map", "string")),
               13: ("ownerReferences", ("msgs", OWNER_REF)), 14: ("finalizers", "strings")}
OBJECT_REF = {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"), 4: ("uid", "string"),
              5: ("apiVersion", "string"), 6: ("resourceVersion", "string"), 7: ("fieldPath", "string")}
RESOURCE_ATTRS = {1: ("namespace", "string"), 2: ("verb", "string"), 3: ("group", "string"),
                  4: ("version", "string"), 5: ("resource", "string"), 6: ("subresource", "string"),
                  7: ("name", "string")}
NON_RESOURCE_ATTRS = {1: ("path", "string"), 2: ("verb", "string")}
KINDS = {
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", ("msg", OBJECT_META))},
    ("authentication.k8s.io/v1", "TokenReview"): {
        1: ("metadata", ("msg", OBJECT_META)),
        2: ("spec", ("msg", {1: ("token", "string"), 2: ("audiences", "strings")}))},
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", ("msg", OBJECT_META)),
        2: ("spec", ("msg", {1: ("resourceAttributes", ("msg", RESOURCE_ATTRS)),
                             2: ("nonResourceAttributes", ("msg", NON_RESOURCE_ATTRS))}))},
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: ("metadata", ("msg", OBJECT_META)), 2: ("spec", ("msg", {1: ("namespace", "string")}))},
    ("authorization.k8s.io/v1", "SubjectAccessReview"): {
        1: ("metadata", ("msg", OBJECT_META)),
        2: ("spec", ("msg", {1: ("resourceAttributes", ("msg", RESOURCE_ATTRS)),
                             2: ("nonResourceAttributes", ("msg", NON_RESOURCE_ATTRS)),
                             3: ("user", "string"), 4: ("groups", "strings"), 6: ("uid", "string")}))},
    ("v1", "Namespace"): {1: ("metadata", ("msg", OBJECT_META)),
                          2: ("spec", ("msg", {1: ("finalizers", "strings")})),
                          3: ("status", ("msg", {1: ("phase", "string")}))},
    ("v1", "ConfigMap"): {1: ("metadata", ("msg", OBJECT_META)), 2: ("data", ("map", "string")),
                          3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    ("v1", "Secret"): {1: ("metadata", ("msg", OBJECT_META)), 2: ("data", ("map", "bytes")),
                       3: ("type", "string"), 4: ("stringData", ("map", "string")), 5: ("immutable", "bool")},
    ("v1", "ServiceAccount"): {1: ("metadata", ("msg", OBJECT_META)), 2: ("secrets", ("msgs", OBJECT_REF)),
                               3: ("imagePullSecrets", ("msgs", {1: ("name", "string")})),
                               4: ("automountServiceAccountToken", "bool")},
}


def decode(body):
    """Decode a k8s protobuf envelope. Returns the JSON object, or raises ProtoError."""
    if not body.startswith(b"k8s\x00"):
        raise ProtoError("missing protobuf magic")
    env = _decode({1: ("typeMeta", ("msg", {1: ("apiVersion", "string"), 2: ("kind", "string")})),
                   2: ("raw", "bytes"), 3: ("contentEncoding", "string"), 4: ("contentType", "string")}, body[4:])
    tm = env.get("typeMeta") or {}
    key = (tm.get("apiVersion", ""), tm.get("kind", ""))
    if key not in KINDS:
        raise ProtoError("protobuf decoding of %s %s is not supported by the test API server" % key)
    obj = _decode(KINDS[key], base64.b64decode(env.get("raw", "")))
    obj["apiVersion"], obj["kind"] = key
    return obj
