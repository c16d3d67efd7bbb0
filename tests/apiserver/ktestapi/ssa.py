"""Server-side apply and managedFields, after kube-apiserver's field manager and
sigs.k8s.io/structured-merge-diff (SMD).

Field sets are Python sets of paths; a path is a tuple of path elements:
  ("f", name)        a map field                    FieldsV1 "f:name"
  ("k", key-json)    an associative-list item        FieldsV1 'k:{"name":"c"}'
  ("v", value-json)  a set item                      FieldsV1 'v:"x"'
  ("i", index)       a list item without its keys    FieldsV1 "i:0"
(FieldsV1 "." marks a path that is a member while it also has children.)

What SMD takes from the OpenAPI schema, `Types` answers from a table for the built-in kinds
(associative lists and their keys, sets, atomic selectors; every other list is atomic and every
other map granular) and from `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and
`x-kubernetes-map-type` of a CRD's structural schema (lists are atomic unless annotated).

The operations, as SMD's Updater does them:
  * Update (create/PUT/PATCH): the fields the write added or changed go to the writer's
    Update entry and are taken from every other manager; removed fields leave every set.
    An object without managedFields is only tracked from its creation on (an update of an
    untracked object stays untracked, as kube-apiserver's skip-non-applied manager does).
  * Apply: the configuration is merged into the live object (maps field by field,
    associative lists item by item, sets by value, atomic lists and maps replaced); the
    applier's set becomes exactly the configuration's field set; a field another manager
    owns whose value the configuration changes is a conflict (409) unless forced, when
    ownership moves to the applier; fields the applier owned before, no longer applies and
    nobody else owns are removed. Applying to an untracked object first gives all its fields
    to "before-first-apply".
"""
import copy
import json

MISSING = object()

# metadata fields never tracked (StripMetaManager)
META_STRIP = {"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
              "managedFields", "resourceVersion"}


class SSAError(Exception):
    """A value SMD cannot type (e.g. a list item without its keys)."""

    def __init__(self, path, msg):
        super().__init__(msg)
        self.path = path
        self.msg = msg

    def __str__(self):
        return "%s: %s" % (path_string(self.path), self.msg)


def _dump(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def path_string(path):
    """SMD's fieldpath.Path.String(): .spec.containers[name="c"].image, .metadata.finalizers[="x"]."""
    out = ""
    for kind, x in path:
        if kind == "f":
            out += "." + x
        elif kind == "k":
            d = json.loads(x)
            out += "[" + ",".join("%s=%s" % (k, _dump(d[k])) for k in sorted(d)) + "]"
        elif kind == "v":
            out += "[=%s]" % x
        else:
            out += "[%d]" % x
    return out


# ---- types ------------------------------------------------------------------------
ATOMIC = ("atomic",)
SET = ("set",)


def _assoc(keys, defaults=None):
    return ("map", tuple(keys), defaults or {})


_TCP = {"protocol": "TCP"}
# associative lists of the built-in kinds (x-kubernetes-list-type: map), by field name
BUILTIN_LISTS = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "volumes": ("name",), "env": ("name",), "imagePullSecrets": ("name",), "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",), "hostAliases": ("ip",), "resourceClaims": ("name",),
    "schedulingGates": ("name",), "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
# maps of the built-in kinds that are atomic (LabelSelector, Service selector, key references)
BUILTIN_ATOMIC_MAPS = {"selector", "podSelector", "namespaceSelector", "objectSelector", "labelSelector",
                       "secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"}
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _builtin_list(rkey, names):
    last = names[-1] if names else ""
    parent = names[-2] if len(names) > 1 else ""
    if names == ("metadata", "finalizers"):
        return SET
    if names == ("metadata", "ownerReferences"):
        return _assoc(("uid",))
    if names[:1] == ("metadata",):
        return ATOMIC
    if last == "ports":
        if rkey == "/services" and names == ("spec", "ports"):
            return _assoc(("port", "protocol"), _TCP)
        if parent in CONTAINER_LISTS:
            return _assoc(("containerPort", "protocol"), _TCP)
        return ATOMIC
    if last == "conditions":
        return _assoc(("type",)) if parent == "status" else ATOMIC
    if last == "webhooks":
        return _assoc(("name",)) if rkey.startswith("admissionregistration.k8s.io/") else ATOMIC
    keys = BUILTIN_LISTS.get(last)
    return _assoc(keys) if keys else ATOMIC


class Types:
    """List/map types for one resource. `node` is the CRD schema node at a position (None
    for built-in kinds and for positions the schema does not describe)."""

    def __init__(self, rkey, schema=None):
        self.rkey = rkey
        self.custom = schema is not None
        self.root = schema if isinstance(schema, dict) else None

    @classmethod
    def for_info(cls, info):
        if info.crd is None:
            return cls(info.rkey)
        return cls(info.rkey, (info.crd.get("schema") or {}).get("openAPIV3Schema") or {})

    def _builtin(self, names):
        return not self.custom or names[:1] == ("metadata",)

    def child(self, node, names, key):
        """(schema node of field `key` under `names`, whether it is a map element rather than
        a named field)."""
        if not self.custom or not names and key == "metadata" or names[:1] == ("metadata",):
            return None, False
        if not isinstance(node, dict):
            return None, True
        props = node.get("properties") or {}
        if key in props:
            return props[key], False
        if not names and key in ("apiVersion", "kind"):
            return None, False
        ap = node.get("additionalProperties")
        return (ap if isinstance(ap, dict) else None), True

    @staticmethod
    def item(node):
        return node.get("items") if isinstance(node, dict) and isinstance(node.get("items"), dict) else None

    def list_type(self, names, node):
        if self._builtin(names):
            return _builtin_list(self.rkey, names)
        if isinstance(node, dict):
            lt = node.get("x-kubernetes-list-type")
            if lt == "set":
                return SET
            if lt == "map" and node.get("x-kubernetes-list-map-keys"):
                props = (self.item(node) or {}).get("properties") or {}
                keys = tuple(node["x-kubernetes-list-map-keys"])
                defaults = {k: props[k]["default"] for k in keys
                            if isinstance(props.get(k), dict) and "default" in props[k]}
                return _assoc(keys, defaults)
        return ATOMIC

    def map_atomic(self, names, node):
        if self._builtin(names):
            return bool(names) and names[-1] in BUILTIN_ATOMIC_MAPS and names[0] != "metadata"
        return isinstance(node, dict) and node.get("x-kubernetes-map-type") == "atomic"


def _item_elem(lt, item, path, idx, strict):
    """The path element of a list item (raises SSAError for untypable items when strict)."""
    if lt[0] == "set":
        if isinstance(item, (dict, list)):
            if strict:
                raise SSAError(path, "element %d: expected a scalar in a set" % idx)
            return ("i", idx)
        return ("v", _dump(item))
    keys, defaults = lt[1], lt[2]
    if not isinstance(item, dict):
        if strict:
            raise SSAError(path, "element %d: associative list with keys may not have non-map elements" % idx)
        return ("i", idx)
    kd = {}
    for k in keys:
        if item.get(k) is not None:
            kd[k] = item[k]
        elif k in defaults:
            kd[k] = defaults[k]
        else:
            if strict:
                raise SSAError(path, 'element %d: associative list with keys has an element that omits key field '
                                     '"%s" (and doesn\'t have default value)' % (idx, k))
            return ("i", idx)
    return ("k", _dump(kd))


def _index(lt, items, path, strict):
    """[(path element, item)] in order, first occurrence of each element."""
    out, seen = [], set()
    for i, item in enumerate(items):
        pe = _item_elem(lt, item, path, i, strict)
        if pe in seen:
            if strict:
                raise SSAError(path, "duplicate entries for key %s" % path_string((pe,)))
            continue
        seen.add(pe)
        out.append((pe, item))
    return out


# ---- field sets -----------------------------------------------------------------------
def field_set(obj, types, strict=False):
    """SMD's ToFieldSet: leaves, atomic lists/maps, set items, associative-list items and map
    elements (not named fields) of `obj`."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            node, _ = types.child(types.root, (), k)
            _fs(v, types, (k,), node, (("f", k),), out, strict)
    return out


def _fs(v, types, names, node, path, out, strict, element=False):
    if isinstance(v, dict):
        if types.map_atomic(names, node):
            out.add(path)
            return
        if element:
            out.add(path)
        for k, x in v.items():
            cn, el = types.child(node, names, k)
            _fs(x, types, names + (k,), cn, path + (("f", k),), out, strict, el)
    elif isinstance(v, list):
        lt = types.list_type(names, node)
        if lt[0] == "atomic":
            out.add(path)
            return
        inode = types.item(node)
        for pe, item in _index(lt, v, path, strict):
            ip = path + (pe,)
            out.add(ip)
            if lt[0] == "map" and isinstance(item, dict):
                for k, x in item.items():
                    cn, el = types.child(inode, names, k)
                    _fs(x, types, names + (k,), cn, ip + (("f", k),), out, strict, el)
    else:
        out.add(path)


def _all_paths(v, types, names, node, path, out):
    """Every path of a value present on one side only (Compare's added/removed)."""
    out.add(path)
    if isinstance(v, dict) and v and not types.map_atomic(names, node):
        for k, x in v.items():
            cn, _ = types.child(node, names, k)
            _all_paths(x, types, names + (k,), cn, path + (("f", k),), out)
    elif isinstance(v, list) and v:
        lt = types.list_type(names, node)
        if lt[0] != "atomic":
            inode = types.item(node)
            for pe, item in _index(lt, v, path, False):
                _all_paths(item, types, names, inode, path + (pe,), out)


def _equal(a, b):
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return _dump(a) == _dump(b)
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def compare(old, new, types):
    """SMD's Compare: (added, removed, modified) paths between two objects."""
    added, removed, modified = set(), set(), set()
    _cmp(old, new, types, (), types.root, (), added, removed, modified)
    return added, removed, modified


def _cmp(a, b, types, names, node, path, added, removed, modified):
    if a is MISSING:
        _all_paths(b, types, names, node, path, added)
        return
    if b is MISSING:
        _all_paths(a, types, names, node, path, removed)
        return
    if isinstance(a, dict) and isinstance(b, dict) and (a or b) and not types.map_atomic(names, node):
        for k in list(a) + [k for k in b if k not in a]:
            cn, _ = types.child(node, names, k)
            _cmp(a.get(k, MISSING), b.get(k, MISSING), types, names + (k,), cn, path + (("f", k),),
                 added, removed, modified)
        return
    if isinstance(a, list) and isinstance(b, list) and (a or b):
        lt = types.list_type(names, node)
        if lt[0] != "atomic":
            ia = dict(_index(lt, a, path, False))
            ib = dict(_index(lt, b, path, False))
            inode = types.item(node)
            for pe in list(ia) + [pe for pe in ib if pe not in ia]:
                _cmp(ia.get(pe, MISSING), ib.get(pe, MISSING), types, names, inode, path + (pe,),
                     added, removed, modified)
            return
    if not _equal(a, b):
        modified.add(path)


# ---- merge ------------------------------------------------------------------------
def merge(live, cfg, types):
    """SMD's Merge (keep the configuration's values): returns a new object."""
    return _merge(copy.deepcopy(live), cfg, types, (), types.root, ())


def _merge(l, r, types, names, node, path):
    if isinstance(r, dict):
        if names and types.map_atomic(names, node):
            return copy.deepcopy(r)
        out = l if isinstance(l, dict) else {}
        for k, rv in r.items():
            if rv is None:  # an explicit null removes the field (typed objects omit nulls)
                out.pop(k, None)
                continue
            cn, _ = types.child(node, names, k)
            out[k] = _merge(out.get(k, MISSING), rv, types, names + (k,), cn, path + (("f", k),))
        return out
    if isinstance(r, list):
        lt = types.list_type(names, node)
        if lt[0] == "atomic":
            return copy.deepcopy(r)
        return _merge_list(l if isinstance(l, list) else [], r, lt, types, names, types.item(node), path)
    return r


def _merge_list(l, r, lt, types, names, inode, path):
    """Items in SMD's order: left items keep their place, right items come in right order."""
    lo = _index(lt, l, path, False)
    ro = _index(lt, r, path, True)
    lmap, rmap = dict(lo), dict(ro)
    shared = [pe for pe, _ in ro if pe in lmap]
    nxt = shared.pop(0) if shared else None
    out = []

    def one(pe):
        if lt[0] == "map":
            return _merge(lmap.get(pe, MISSING), rmap[pe], types, names, inode, path + (pe,))
        return copy.deepcopy(rmap[pe])

    li = ri = 0
    while li < len(lo) or ri < len(ro):
        progress = (li, ri)
        if li < len(lo) and ri < len(ro):
            pe = lo[li][0]
            if pe == ro[ri][0]:
                out.append(one(pe))
                li += 1
                ri += 1
                nxt = shared.pop(0) if shared else None
                continue
            if pe in rmap and nxt is not None and nxt != pe:
                li += 1
                continue
        if li < len(lo) and lo[li][0] not in rmap:
            out.append(lo[li][1])
            li += 1
            continue
        if ri < len(ro):
            pe = ro[ri][0]
            out.append(one(pe))
            ri += 1
            if nxt is not None and nxt == pe:
                nxt = shared.pop(0) if shared else None
            continue
        if progress == (li, ri):  # a left item already merged from the right
            li += 1
    return out


def remove_path(obj, path, types):
    """Remove the value at `path`; maps and lists it leaves empty go too (not `metadata`)."""
    cur, names, node = obj, (), types.root
    trail = []
    for pe in path:
        kind, x = pe
        if kind == "f":
            if not isinstance(cur, dict) or x not in cur:
                return
            trail.append((cur, x))
            node, _ = types.child(node, names, x)
            names += (x,)
            cur = cur[x]
        else:
            if not isinstance(cur, list):
                return
            lt = types.list_type(names, node)
            if lt[0] == "atomic":
                return
            idx = next((i for i, item in enumerate(cur) if _item_elem(lt, item, (), i, False) == pe), None)
            if idx is None:
                return
            trail.append((cur, idx))
            node = types.item(node)
            cur = cur[idx]
    if not trail:
        return
    container, key = trail.pop()
    del container[key]
    while trail:
        container, key = trail.pop()
        if container[key] not in ({}, []) or (container is obj and key == "metadata"):
            break
        del container[key]


# ---- managedFields ------------------------------------------------------------------
def _pe_key(pe):
    kind, x = pe
    return "%s:%s" % (kind, x)


_KIND_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def fields_v1(paths):
    """A field set as FieldsV1 (nested maps of "f:name" / "k:{...}" / "v:..." / "i:N", "." for a
    member that also has children), keys in SMD's order."""
    tree = {}
    for p in paths:
        node = tree
        for pe in p:
            node = node.setdefault(pe, {})
    members = set(paths)

    def render(node, prefix):
        out = {}
        if node and prefix in members:
            out["."] = {}
        for pe in sorted(node, key=lambda e: (_KIND_ORDER[e[0]], e[1])):
            out[_pe_key(pe)] = render(node[pe], prefix + (pe,))
        return out
    return render(tree, ())


def paths_from_fields(fv, prefix=()):
    if not isinstance(fv, dict):
        raise ValueError("fieldsV1 must be an object")
    out = set()
    for k, v in fv.items():
        if k == ".":
            if prefix:
                out.add(prefix)
            continue
        kind, sep, rest = k.partition(":")
        if not sep or kind not in _KIND_ORDER:
            raise ValueError("invalid path element %r" % k)
        if kind == "f":
            pe = ("f", rest)
        elif kind == "i":
            pe = ("i", int(rest))
        else:
            pe = (kind, _dump(json.loads(rest)))
        p = prefix + (pe,)
        if not isinstance(v, dict):
            raise ValueError("fieldsV1 must be an object")
        if v and set(v) != {"."}:
            out |= paths_from_fields(v, p)
        else:
            out.add(p)
    return out


class Manager:
    __slots__ = ("manager", "operation", "api_version", "time", "subresource", "paths")

    def __init__(self, manager, operation, api_version, time, subresource, paths):
        self.manager, self.operation, self.api_version = manager, operation, api_version
        self.time, self.subresource, self.paths = time, subresource, set(paths)

    def ident(self):
        # apiVersion identifies Update managers only (BuildManagerIdentifier)
        return (self.manager, self.operation, self.api_version if self.operation == "Update" else "",
                self.subresource)

    def entry(self):
        e = {}
        if self.manager:
            e["manager"] = self.manager
        e["operation"] = self.operation
        if self.api_version:
            e["apiVersion"] = self.api_version
        if self.time:
            e["time"] = self.time
        e["fieldsType"] = "FieldsV1"
        e["fieldsV1"] = fields_v1(self.paths)
        if self.subresource:
            e["subresource"] = self.subresource
        return e

    def describe(self):
        """printManager of the apiserver's conflict messages."""
        s = _dump(self.manager)
        if self.subresource:
            s += " with subresource %s" % _dump(self.subresource)
        if self.operation == "Update":
            s += " using %s" % self.api_version + (" at %s" % self.time if self.time else "")
        return s


def decode(entries):
    """managedFields -> {ident: Manager}; raises ValueError when they cannot be decoded."""
    out = {}
    if entries is None:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for e in entries:
        if not isinstance(e, dict):
            raise ValueError("managedFields entries must be objects")
        if e.get("fieldsType") not in (None, "", "FieldsV1"):
            raise ValueError("unsupported fieldsType %r" % e.get("fieldsType"))
        m = Manager(e.get("manager") or "", e.get("operation") or "", e.get("apiVersion") or "",
                    e.get("time"), e.get("subresource") or "", paths_from_fields(e.get("fieldsV1") or {}))
        out[m.ident()] = m
    return out


def encode(managers):
    ms = [m for m in managers.values() if m.paths]
    ms.sort(key=lambda m: (m.operation, m.time or "", m.manager, m.api_version, m.subresource))
    return [m.entry() for m in ms]


def set_managed_fields(obj, entries):
    md = obj.setdefault("metadata", {})
    if entries:
        md["managedFields"] = entries
    else:
        md.pop("managedFields", None)


def _tracked(s, has_status, subresource):
    """Drop the paths no manager owns: apiVersion, kind, system metadata, and the status
    (main resource) or everything but the status (status subresource)."""
    out = set()
    for p in s:
        if not p or p[0] in (("f", "apiVersion"), ("f", "kind")):
            continue
        if p[0] == ("f", "metadata") and (len(p) == 1 or p[1][1] in META_STRIP):
            continue
        if subresource == "status":
            if p[0] != ("f", "status"):
                continue
        elif has_status and p[0] == ("f", "status"):
            continue
        out.add(p)
    return out


def _bare(obj):
    """A shallow copy without metadata.managedFields."""
    if not isinstance(obj, dict):
        return {}
    o = dict(obj)
    if isinstance(o.get("metadata"), dict) and "managedFields" in o["metadata"]:
        o["metadata"] = {k: v for k, v in o["metadata"].items() if k != "managedFields"}
    return o


def zero_object(types, like):
    """The empty object of the kind of `like` (what a create is compared with): built-in kinds
    are Go structs whose metadata and spec struct always exist."""
    if types.custom or not isinstance(like.get("spec"), dict):
        return {"metadata": {}}
    return {"metadata": {}, "spec": {}}


def track_update(types, old, new, new_entries, manager, api_version, subresource, has_status, now,
                 creating=False):
    """managedFields after a create/update/non-apply patch by `manager` (FieldManager.Update).

    new_entries: the managedFields the request carried (used instead of the live object's when
    non-empty and decodable: that is how clients edit or reset them). Returns the entries, or
    None when the object is (or stays) untracked."""
    base = None
    if new_entries and not subresource:
        try:
            base = decode(new_entries)
        except (ValueError, TypeError):
            base = None
    if base is None:
        try:
            base = decode(((old or {}).get("metadata") or {}).get("managedFields"))
        except (ValueError, TypeError):
            base = {}
        if not base and not creating:
            return None
    if manager is None:
        return encode(base)
    try:
        added, removed, modified = compare(_bare(old) if old else zero_object(types, new), _bare(new), types)
    except SSAError:
        return None  # UpdateNoErrors: managedFields that cannot be computed are dropped
    changed = _tracked(added | modified, has_status, subresource)
    removed = _tracked(removed, has_status, subresource)
    for m in base.values():
        m.paths -= changed
        m.paths -= removed
    if changed:
        me = Manager(manager, "Update", api_version, now, subresource, ())
        prev = base.get(me.ident())
        me.paths = changed | (prev.paths if prev else set())
        base[me.ident()] = me
    return encode(base)


def keep_timestamps(new, old):
    """IgnoreManagedFieldsTimestampsTransformer: a write that changes nothing but managedFields
    times keeps the stored managedFields (so it stays a no-op)."""
    nm = (new.get("metadata") or {}).get("managedFields")
    om = (old.get("metadata") or {}).get("managedFields")
    if not nm or not om or nm == om or len(nm) != len(om):
        return
    if _bare(new) != _bare(old):
        return
    untimed = [[{k: v for k, v in e.items() if k != "time"} for e in mf] for mf in (nm, om)]
    if untimed[0] == untimed[1]:
        new["metadata"]["managedFields"] = om


class Conflict(Exception):
    def __init__(self, conflicts):
        super().__init__("conflict")
        self.conflicts = conflicts   # [(Manager, path)]

    def status(self):
        cs = self.conflicts
        causes = [{"reason": "FieldManagerConflict", "message": "conflict with %s" % m.describe(),
                   "field": path_string(p)} for m, p in cs]
        if len(cs) == 1:
            msg = "Apply failed with 1 conflict: conflict with %s: %s" % (cs[0][0].describe(), path_string(cs[0][1]))
        else:
            lines = []
            last = None
            for m, p in cs:
                if m is not last:
                    lines.append("conflicts with %s:" % m.describe())
                    last = m
                lines.append("- %s" % path_string(p))
            msg = "Apply failed with %d conflicts: %s" % (len(cs), "\n".join(lines))
        return msg, {"causes": causes}


def _path_sort_key(p):
    return [(_KIND_ORDER[k], x if isinstance(x, str) else "%020d" % x) for k, x in p]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(obj):
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED) if isinstance(obj, dict) else None


def _allowed_by_last_applied(types, live, api_version):
    """The paths client-side apply still owns (lastAppliedManager): those of the
    last-applied-configuration annotation whose values the live object still has."""
    try:
        la = json.loads(_last_applied(live) or "")
    except ValueError:
        return set()
    if not isinstance(la, dict) or la.get("apiVersion") != api_version:
        return set()
    try:
        la_set = field_set(la, types, strict=True)
        added, removed, modified = compare(la, _bare(live), types)
    except SSAError:
        return set()
    return la_set - added - removed - modified


def _build_last_applied(cfg):
    """The annotation kubectl's client-side apply would have written for `cfg`."""
    o = copy.deepcopy(cfg)
    ann = (o.get("metadata") or {}).get("annotations")
    if isinstance(ann, dict):
        ann.pop(LAST_APPLIED, None)
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def apply(types, live, cfg, manager, force, api_version, subresource, has_status, now):
    """Server-side apply of configuration `cfg` by `manager` onto `live` (None: create).

    Returns (merged object without managedFields, managedFields entries, whether the object
    changed). Raises Conflict, SSAError (configuration not typable) or ValueError (live
    managedFields not decodable)."""
    creating = live is None
    live_b = {} if creating else _bare(live)
    managers = {} if creating else decode((live.get("metadata") or {}).get("managedFields"))
    if not managers and not creating:
        a, _, m = compare(zero_object(types, live_b), live_b, types)
        owned = _tracked(a | m, has_status, subresource)
        if owned:
            bfa = Manager("before-first-apply", "Update", api_version, now, subresource, owned)
            managers[bfa.ident()] = bfa
    cfg_b = _bare(cfg)
    applied = _tracked(field_set(cfg_b, types, strict=True), has_status, subresource)
    merged = merge(live_b, cfg_b, types)
    me = Manager(manager, "Apply", api_version, now, subresource, applied)
    last = managers.get(me.ident())
    managers[me.ident()] = me
    if last is not None and last.paths:
        owned = set()
        for m in managers.values():
            owned |= m.paths
        above = {p[:i] for p in owned for i in range(1, len(p))}
        for p in sorted(last.paths - owned - above, key=len):
            if len(p) > 1 and p[-2][0] == "k" and p[-1][0] == "f" and p[-1][1] in json.loads(p[-2][1]):
                continue  # the key of an item that stays (else: gone with its item)
            remove_path(merged, p, types)
    added, removed, modified = compare(live_b, merged, types)
    changed = _tracked(added | modified, has_status, subresource)
    removed = _tracked(removed, has_status, subresource)
    conflicts = []
    for ident, m in sorted(managers.items(), key=lambda kv: (kv[1].manager, kv[1].operation, kv[0])):
        if ident == me.ident():
            continue
        c = m.paths & changed
        conflicts += [(m, p) for p in sorted(c, key=_path_sort_key)]
    if conflicts and not force and manager == "kubectl" and _last_applied(live):
        # upgrading from client-side apply: what the annotation still describes is not a conflict
        allowed = _allowed_by_last_applied(types, live, api_version)
        conflicts = [(m, p) for m, p in conflicts if p not in allowed]
        force = not conflicts
    if conflicts and not force:
        raise Conflict(conflicts)
    for ident, m in managers.items():
        if ident != me.ident():
            m.paths -= changed
            m.paths -= removed
    if manager == "kubectl" and _last_applied(live):
        # lastAppliedUpdater: keep the annotation in step, so client-side apply still works after
        merged.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = _build_last_applied(cfg)
    object_changed = creating or not _equal(live_b, merged)
    if not object_changed and last is not None:
        me.time = last.time
    return merged, encode(managers), object_changed
