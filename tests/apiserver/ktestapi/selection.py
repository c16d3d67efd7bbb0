"""Label selectors (string grammar and metav1.LabelSelector) and field selectors.

String grammar (apimachinery labels.Parse): comma-separated requirements, ANDed:
  key, !key, key=value, key==value, key!=value, key in (a,b), key notin (a,b)
Matching follows Requirement.Matches: `in`/`=` need the key present with a listed value;
`notin`/`!=` match when the key is absent or the value differs.
"""
import re

from .errors import bad_request

_NAME_RE = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
_DNS1123_SUB = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


def valid_label_key(key):
    """Qualified name: optional DNS-1123 subdomain prefix (<=253) + '/', name <= 63."""
    if "/" in key:
        prefix, name = key.split("/", 1)
        if not prefix or len(prefix) > 253 or not _DNS1123_SUB.match(prefix):
            return False
    else:
        name = key
    return 0 < len(name) <= 63 and bool(_NAME_RE.match(name))


def valid_label_value(v):
    return v == "" or (len(v) <= 63 and bool(_NAME_RE.match(v)))


class Requirement:
    __slots__ = ("key", "op", "values")

    def __init__(self, key, op, values=()):
        self.key, self.op, self.values = key, op, tuple(values)

    def matches(self, labels):
        has = self.key in labels
        if self.op in ("in", "=", "=="):
            return has and labels[self.key] in self.values
        if self.op in ("notin", "!="):
            return (not has) or labels[self.key] not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("gt", "lt"):
            if not has:
                return False
            try:
                lv = int(labels[self.key])
                rv = int(self.values[0])
            except (ValueError, IndexError):
                return False
            return lv > rv if self.op == "gt" else lv < rv
        return False

    def __repr__(self):
        return "Requirement(%r,%r,%r)" % (self.key, self.op, self.values)


class Selector:
    """A conjunction of requirements. `everything` if empty; `nothing` if nothing=True."""

    def __init__(self, reqs=(), nothing=False):
        self.reqs = list(reqs)
        self.nothing = nothing

    def matches(self, labels):
        if self.nothing:
            return False
        labels = labels or {}
        for r in self.reqs:
            if not r.matches(labels):
                return False
        return True

    def empty(self):
        return not self.nothing and not self.reqs


_TOKEN_RE = re.compile(r'\s*(!=|==|=|\(|\)|,|!|[^\s!=(),]+)')


def parse_label_selector(s):
    """Parse the string grammar; raises APIError 400 on syntax errors like the real server."""
    if s is None or s.strip() == "":
        return Selector()
    toks = []
    pos = 0
    s2 = s.strip()
    while pos < len(s2):
        m = _TOKEN_RE.match(s2, pos)
        if not m or m.end() == pos:
            raise bad_request("unable to parse requirement: invalid label selector %r" % s)
        toks.append(m.group(1))
        pos = m.end()
        while pos < len(s2) and s2[pos].isspace():
            pos += 1
    reqs = []
    i = 0

    def err(msg):
        return bad_request("unable to parse requirement: %s" % msg)

    while i < len(toks):
        neg = False
        if toks[i] == "!":
            neg = True
            i += 1
        if i >= len(toks):
            raise err("found '', expected: identifier")
        key = toks[i]
        if key in ("=", "==", "!=", "(", ")", ",", "!"):
            raise err("found '%s', expected: !, identifier, or 'end of string'" % key)
        if not valid_label_key(key):
            raise err('key: Invalid value: "%s": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric character' % key)
        i += 1
        if neg:
            reqs.append(Requirement(key, "!"))
        elif i >= len(toks) or toks[i] == ",":
            reqs.append(Requirement(key, "exists"))
        else:
            op = toks[i]
            i += 1
            if op in ("=", "==", "!="):
                val = ""
                if i < len(toks) and toks[i] not in (",",):
                    val = toks[i]
                    if val in ("(", ")", "=", "==", "!=", "!"):
                        raise err("found '%s', expected: identifier" % val)
                    i += 1
                if not valid_label_value(val):
                    raise err('values[0][%s]: Invalid value: "%s"' % (key, val))
                reqs.append(Requirement(key, op, [val]))
            elif op in ("in", "notin"):
                if i >= len(toks) or toks[i] != "(":
                    raise err("found '%s', expected: '('" % (toks[i] if i < len(toks) else ""))
                i += 1
                vals = []
                expect_val = True
                while i < len(toks) and toks[i] != ")":
                    t = toks[i]
                    if t == ",":
                        if expect_val:
                            vals.append("")
                        expect_val = True
                    else:
                        if not expect_val:
                            raise err("found '%s', expected: ',' or ')'" % t)
                        vals.append(t)
                        expect_val = False
                    i += 1
                if i >= len(toks):
                    raise err("found '', expected: ')'")
                if expect_val and vals:
                    vals.append("")
                i += 1
                if not vals:
                    raise err("for 'in', 'notin' operators, values set can't be empty")
                for v in vals:
                    if not valid_label_value(v):
                        raise err('values[0][%s]: Invalid value: "%s"' % (key, v))
                reqs.append(Requirement(key, op, vals))
            else:
                raise err("found '%s', expected: '=', '!=', '==', 'in', notin'" % op)
        if i < len(toks):
            if toks[i] != ",":
                raise err("found '%s', expected: ',' or 'end of string'" % toks[i])
            i += 1
            if i >= len(toks):
                raise err("found '', expected: !, identifier, or 'end of string'")
    return Selector(reqs)


def label_selector_from_obj(sel, empty_matches_all=True):
    """metav1.LabelSelector -> Selector. nil -> nothing; {} -> everything unless told otherwise."""
    if sel is None:
        return Selector(nothing=True)
    reqs = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append(Requirement(k, "in", [v]))
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator")
        vals = e.get("values") or []
        m = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(op)
        if m is None:
            raise ValueError("%r is not a valid label selector operator" % op)
        if m in ("in", "notin") and not vals:
            raise ValueError("values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
        if m in ("exists", "!") and vals:
            raise ValueError("values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        reqs.append(Requirement(e.get("key"), m, vals))
    if not reqs and not empty_matches_all:
        return Selector(nothing=True)
    return Selector(reqs)


# ---- field selectors ---------------------------------------------------------

def _pod_fields(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    return {
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "spec.schedulerName": spec.get("schedulerName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
        "status.phase": st.get("phase", ""),
        "status.podIP": st.get("podIP", ""),
        "status.nominatedNodeName": st.get("nominatedNodeName", ""),
    }


def _node_fields(o):
    return {"spec.unschedulable": "true" if (o.get("spec") or {}).get("unschedulable") else "false"}


def _ns_fields(o):
    return {"status.phase": (o.get("status") or {}).get("phase", "")}


def _pvc_fields(o):
    return {"status.phase": (o.get("status") or {}).get("phase", "")}


def _event_fields(o):
    io = o.get("involvedObject") or {}
    src = o.get("source") or {}
    return {"involvedObject.kind": io.get("kind", ""), "involvedObject.namespace": io.get("namespace", ""),
            "involvedObject.name": io.get("name", ""), "involvedObject.uid": io.get("uid", ""),
            "involvedObject.apiVersion": io.get("apiVersion", ""),
            "involvedObject.resourceVersion": io.get("resourceVersion", ""),
            "involvedObject.fieldPath": io.get("fieldPath", ""),
            "reason": o.get("reason", ""), "reportingComponent": o.get("reportingComponent", ""),
            "source": src.get("component", ""), "type": o.get("type", "")}


def _secret_fields(o):
    return {"type": o.get("type", "")}


# resource key ("group/resource") -> extra field extractor
FIELD_EXTRACTORS = {
    "/pods": _pod_fields,
    "/nodes": _node_fields,
    "/namespaces": _ns_fields,
    "/persistentvolumeclaims": _pvc_fields,
    "/persistentvolumes": _pvc_fields,
    "/events": _event_fields,
    "/secrets": _secret_fields,
}


class FieldSelector:
    def __init__(self, reqs, custom=None):
        self.reqs = reqs  # list of (field, op, value)
        self.custom = custom or {}  # CRD selectableFields: field -> JSONPath

    def matches(self, obj, rkey):
        if not self.reqs:
            return True
        fields = None
        md = obj.get("metadata") or {}
        for f, op, v in self.reqs:
            if f == "metadata.name":
                actual = md.get("name", "")
            elif f == "metadata.namespace":
                actual = md.get("namespace", "")
            elif f in self.custom:
                from .tables import jsonpath
                r = jsonpath(obj, self.custom[f])
                v0 = r[0] if len(r) == 1 else ""
                actual = ("true" if v0 else "false") if isinstance(v0, bool) else str(v0)
            else:
                if fields is None:
                    ex = FIELD_EXTRACTORS.get(rkey)
                    fields = ex(obj) if ex else {}
                actual = fields.get(f, "")
            if op == "!=":
                if actual == v:
                    return False
            elif actual != v:
                return False
        return True

    def get(self, field):
        """Return the value of an equality requirement on `field` (for indexed lookups), else None."""
        for f, op, v in self.reqs:
            if f == field and op in ("=", "=="):
                return v
        return None


def parse_field_selector(s, rkey, kind, crd_version=None):
    """Parse `a=b,c!=d`. Unknown fields give 400 'field label not supported' like the real server.
    For custom resources the CRD version's selectableFields (jsonPath `.spec.x` -> field
    `spec.x`) are accepted too."""
    custom = {}
    for sf in (crd_version or {}).get("selectableFields") or []:
        jp = sf.get("jsonPath", "")
        custom[jp.lstrip(".")] = jp
    if not s:
        return FieldSelector([], custom)
    reqs = []
    ex = FIELD_EXTRACTORS.get(rkey)
    known = {"metadata.name", "metadata.namespace"} | set(custom)
    if ex:
        known |= set(ex({}).keys())
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r'^([^=!]+)(==|!=|=)(.*)$', part)
        if not m:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
        f, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
        if f not in known:
            raise bad_request('"%s" is not a known field selector: only "metadata.name", "metadata.namespace"' % f
                              if not ex else 'field label not supported: %s' % f)
        reqs.append((f, op, v))
    return FieldSelector(reqs, custom)
