"""A minimal OpenAPI v3 surface, generated from the registry.

kubectl (create/apply/replace) decides whether the server supports server-side field
validation by looking, in /openapi/v3/<api|apis/g>/<v>, for the PATCH operation of the kind
(`x-kubernetes-group-version-kind`) and its `fieldValidation` query parameter. When it finds
it, kubectl sends `?fieldValidation=Strict` and validates nothing itself; without it kubectl
needs full schemas to validate client-side. We serve exactly that: one path per resource with
get/put/patch/delete operations, the gvk extension and the common query parameters, the
CRDs' structural schemas as components (so `kubectl explain` works for custom resources),
no schemas for built-in kinds, and no PATCH request body content types (so `kubectl apply` computes strategic merge
patches from its compiled-in types, and JSON merge patches for custom resources, as it does
with a real server when OpenAPI lacks patch metadata). /openapi/v2 stays 404.
"""
import hashlib
import json

PARAMS = [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
          for n in ("dryRun", "fieldManager", "fieldValidation", "pretty")]


def _gv_key(group, version):
    return "api/%s" % version if not group else "apis/%s/%s" % (group, version)


def gv_doc(registry, group, version):
    paths = {}
    for r in registry.all():
        if r.group != group or r.version != version:
            continue
        base = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
        p = base + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.plural + "/{name}"
        ext = {"group": group, "version": version, "kind": r.kind}
        item = {}
        for verb, action in (("get", "get"), ("put", "put"), ("patch", "patch"), ("delete", "delete")):
            item[verb] = {"operationId": "%s%s" % (verb, r.kind), "x-kubernetes-action": action,
                          "x-kubernetes-group-version-kind": ext, "parameters": list(PARAMS),
                          "responses": {"200": {"description": "OK"}}}
        paths[p] = item
        if r.status:
            paths[p + "/status"] = {"patch": {"operationId": "patch%sStatus" % r.kind, "x-kubernetes-action": "patch",
                                              "x-kubernetes-group-version-kind": ext, "parameters": list(PARAMS),
                                              "responses": {"200": {"description": "OK"}}}}
    if not paths:
        return None
    schemas = {}
    for r in registry.all():
        if r.group == group and r.version == version and r.crd is not None:
            sch = dict((r.crd.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"})
            sch["x-kubernetes-group-version-kind"] = [{"group": group, "version": version, "kind": r.kind}]
            rev = ".".join(reversed(group.split(".")))
            schemas["%s.%s.%s" % (rev, version, r.kind)] = sch
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (ktestapi)", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": schemas}}


def root(registry):
    gvs = []
    for r in registry.all():
        k = _gv_key(r.group, r.version)
        if k not in gvs:
            gvs.append(k)
    out = {}
    for k in gvs:
        parts = k.split("/")
        g, v = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        h = hashlib.sha256(json.dumps(gv_doc(registry, g, v), sort_keys=True).encode()).hexdigest()[:32].upper()
        out[k] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (k, h)}
    return {"paths": out}


def _pb_str(field, value):
    b = value.encode()
    return bytes([(field << 3) | 2, len(b)]) + b


def v2_document(as_protobuf):
    """A valid OpenAPI v2 document without definitions.

    kubectl downloads it (as gnostic protobuf, Accept application/com.github.proto-openapi.spec.v2@v1.0+protobuf)
    to validate the items of a `kind: List` file client-side; a kind missing from the
    definitions is skipped, so an empty document lets Lists through, with server-side
    validation (fieldValidation=Strict) still applied to each item."""
    if as_protobuf:
        info = _pb_str(1, "Kubernetes") + _pb_str(2, "v1.32.0")
        return _pb_str(1, "2.0") + bytes([(2 << 3) | 2, len(info)]) + info
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": {}, "definitions": {}}
