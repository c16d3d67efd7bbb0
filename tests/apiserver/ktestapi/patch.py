"""Patch application: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
(server-side apply is in ssa.py).

Strategic merge patch follows apimachinery's strategicpatch for the built-in types, driven by
a table of patch merge keys / strategies (PATCH_META) instead of Go struct tags. Supported
directives: `$patch: replace|delete|merge` (maps and list items), `$retainKeys`,
`$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (honoured for ordering).
"""
import copy
import json

from .errors import APIError, bad_request


class PatchError(Exception):
    pass


# ---- RFC 7386 ---------------------------------------------------------------------
def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    else:
        target = dict(target)
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


# ---- RFC 6902 ---------------------------------------------------------------------
def _unescape(tok):
    return tok.replace("~1", "/").replace("~0", "~")


def _split(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [_unescape(t) for t in path[1:].split("/")]


def _get(doc, toks):
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("doc is missing path: \"/%s\"" % "/".join(toks))
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                i = int(t)
            except ValueError:
                raise PatchError("invalid index %r" % t)
            if i < 0 or i >= len(cur):
                raise PatchError("unable to access invalid index: %d" % i)
            cur = cur[i]
        else:
            raise PatchError("doc is missing path: \"/%s\"" % "/".join(toks))
    return cur


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation %r" % (op,))
        kind = op["op"]
        path = _split(op.get("path", ""))
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError("testing value %s failed" % op.get("path"))
            continue
        if kind in ("move", "copy"):
            frm = _split(op.get("from", ""))
            val = copy.deepcopy(_get(doc, frm))
            if kind == "move":
                doc = _remove(doc, frm)
            doc = _add(doc, path, val)
            continue
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        else:
            raise PatchError("Unexpected kind: %s" % kind)
    return doc


def _add(doc, toks, val):
    if not toks:
        return val
    parent = _get(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = val
    elif isinstance(parent, list):
        if last == "-":
            parent.append(val)
        else:
            try:
                i = int(last)
            except ValueError:
                raise PatchError("invalid index %r" % last)
            if i < 0 or i > len(parent):
                raise PatchError("Unable to access invalid index: %d" % i)
            parent.insert(i, val)
    else:
        raise PatchError("doc is missing path: \"/%s\"" % "/".join(toks))
    return doc


def _remove(doc, toks):
    if not toks:
        return None
    parent = _get(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("Unable to remove nonexistent key: %s: missing value" % last)
        del parent[last]
    elif isinstance(parent, list):
        try:
            i = int(last)
        except ValueError:
            raise PatchError("invalid index %r" % last)
        if i < 0 or i >= len(parent):
            raise PatchError("Unable to access invalid index: %d" % i)
        del parent[i]
    else:
        raise PatchError("doc is missing path")
    return doc


# ---- strategic merge patch ---------------------------------------------------------
# (parent field, field) or field -> ("merge", mergeKey) | ("merge", None) for primitive sets | "replace"
# Lists not listed are replaced atomically (the default strategy).
PATCH_META = {
    "containers": ("merge", "name"),
    "initContainers": ("merge", "name"),
    "ephemeralContainers": ("merge", "name"),
    "volumes": ("merge", "name"),
    "volumeMounts": ("merge", "mountPath"),
    "volumeDevices": ("merge", "devicePath"),
    "env": ("merge", "name"),
    "imagePullSecrets": ("merge", "name"),
    "hostAliases": ("merge", "ip"),
    "conditions": ("merge", "type"),
    "addresses": ("merge", "type"),
    "ownerReferences": ("merge", "uid"),
    "finalizers": ("merge", None),
    "topologySpreadConstraints": ("merge", "topologyKey"),
    "resourceClaims": ("merge", "name"),
    "schedulingGates": ("merge", "name"),
    "containerStatuses": ("replace", None),
    ("containers", "ports"): ("merge", "containerPort"),
    ("initContainers", "ports"): ("merge", "containerPort"),
    ("spec", "ports"): ("merge", "port"),
    ("subsets", "ports"): ("replace", None),
}

RETAIN_KEYS_FIELDS = set()


def _meta(parent, field):
    m = PATCH_META.get((parent, field))
    if m is None:
        m = PATCH_META.get(field)
    if m is None or m[0] == "replace":
        return None
    return m


def strategic_merge(orig, patch, parent=None):
    """Apply a strategic merge patch map `patch` onto map `orig` (returns a new dict)."""
    if not isinstance(patch, dict):
        raise PatchError("invalid patch")
    directive = patch.get("$patch")
    if directive == "replace":
        p = {k: v for k, v in patch.items() if k != "$patch"}
        return _strip(p)
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError("Unknown patch type: %s in map: %s" % (directive, json.dumps(patch)))
    out = dict(orig) if isinstance(orig, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            f = k.split("/", 1)[1]
            if isinstance(out.get(f), list) and isinstance(v, list):
                out[f] = [x for x in out[f] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
            continue
        cur = out.get(k)
        if isinstance(v, dict):
            if v.get("$patch") == "delete":
                out.pop(k, None)
                continue
            res = strategic_merge(cur if isinstance(cur, dict) else {}, v, k)
            if res is None:
                out.pop(k, None)
            else:
                out[k] = res
        elif isinstance(v, list):
            meta = _meta(parent, k)
            order = patch.get("$setElementOrder/" + k)
            if meta is None:
                out[k] = _strip(v)
            else:
                out[k] = _merge_list(cur if isinstance(cur, list) else [], v, meta[1], k, order)
        else:
            out[k] = v
    for k in list(patch.keys()):
        if k.startswith("$setElementOrder/"):
            f = k.split("/", 1)[1]
            if f not in patch and isinstance(out.get(f), list):
                meta = _meta(parent, f)
                out[f] = _reorder(out[f], patch[k], meta[1] if meta else None)
    if retain is not None:
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _strip(v):
    """Remove directive keys from a value that replaces the original wholesale."""
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if not k.startswith("$")}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _merge_list(orig, patch, key, field, order):
    if key is None:
        # set of primitives: union, keeping original order
        out = list(orig)
        for x in patch:
            if isinstance(x, dict) and x.get("$patch") == "replace":
                return []
            if x not in out:
                out.append(x)
        return _reorder(out, order, None) if order else out
    # a `$patch: replace` element replaces the whole list
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [_strip(x) for x in patch if not (isinstance(x, dict) and x.get("$patch") == "replace")]
    out = [copy.deepcopy(x) for x in orig]
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("unable to find api field in struct for %s: list of maps expected" % field)
        if key not in item:
            raise PatchError("map: %s does not contain declared merge key: %s" % (json.dumps(item), key))
        kv = item[key]
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == kv), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_strip(item))
        else:
            out[idx] = strategic_merge(out[idx], item, field)
    if order:
        out = _reorder(out, order, key)
    return out


def _reorder(items, order, key):
    def ident(x):
        return x.get(key) if key is not None and isinstance(x, dict) else x
    pos = {}
    for i, o in enumerate(order):
        pos[json.dumps(ident(o), sort_keys=True)] = i
    indexed = list(enumerate(items))
    indexed.sort(key=lambda p: (pos.get(json.dumps(ident(p[1]), sort_keys=True), len(order) + p[0])))
    return [x for _, x in indexed]


def apply_patch(content_type, original, body, is_custom):
    """Apply a PATCH body; raises APIError for unsupported types or malformed patches."""
    ct = (content_type or "").split(";")[0].strip().lower()
    try:
        patch = json.loads(body or b"null")
    except ValueError as e:
        raise bad_request("error decoding patch: %s" % e)
    try:
        if ct == "application/merge-patch+json":
            if not isinstance(patch, dict):
                raise bad_request("error decoding patch: json: cannot unmarshal into map")
            return merge_patch(original, patch)
        if ct == "application/json-patch+json":
            return json_patch(original, patch)
        if ct == "application/strategic-merge-patch+json":
            if is_custom:
                raise APIError(415, "UnsupportedMediaType",
                               'the body of the request was in an unknown format - accepted media types include: '
                               'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml')
            if not isinstance(patch, dict):
                raise bad_request("error decoding patch: json: cannot unmarshal into map")
            res = strategic_merge(original, patch)
            return res if res is not None else {}
    except PatchError as e:
        raise APIError(422, "Invalid", str(e)) if ct == "application/json-patch+json" else bad_request(str(e))
    # application/apply-patch+yaml is server-side apply (api.Cluster.apply); CBOR is never served
    raise APIError(415, "UnsupportedMediaType",
                   'the body of the request was in an unknown format - accepted media types include: '
                   'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, '
                   'application/strategic-merge-patch+json')
