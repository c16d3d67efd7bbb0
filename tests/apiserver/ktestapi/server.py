"""HTTP(S) front end: routing, authentication, content negotiation, watch streams, faults.

Paths served:
  /version /healthz /livez /readyz                         (no auth needed)
  /api  /api/v1  /apis  /apis/<g>  /apis/<g>/<v>            legacy discovery (aggregated
      discovery requests get the legacy documents with Content-Type application/json,
      which client-go accepts as a fallback)
  /api/v1/...  /apis/<g>/<v>/...                            resources (+ /status, /eviction)
  /openapi/v2 /openapi/v3                                   404 (kubectl falls back)
  /_control/...                                            fault switches (admin token)
Auth: `Authorization: Bearer <token>`; otherwise 401 Status Unauthorized.
All authenticated users are authorised for everything (RBAC objects are stored, not enforced).
"""
import json
import re
import socket
import ssl
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

from . import errors as E
from .tables import to_table
from .resources import convert_out
from .store import REQUEST, Expired

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-ktestapi", "gitCommit": "ktestapi",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23",
           "compiler": "gc", "platform": "linux/amd64"}


class Faults:
    """Injected faults: [{path: regex, query: regex, method: str|'*', code: int, latencyMs: int,
    count: int}]; `query` (optional) is searched in the raw query string, so a rule can take
    watches (`watch=`) and leave lists of the same path alone."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, rule):
        with self.lock:
            r = dict(rule)
            r["re"] = re.compile(r.get("path", ".*"))
            r["query_re"] = re.compile(r["query"]) if r.get("query") else None
            r.setdefault("method", "*")
            r.setdefault("count", 1)
            self.rules.append(r)

    def clear(self):
        with self.lock:
            self.rules = []

    def take(self, method, path, query=""):
        with self.lock:
            for r in self.rules:
                if r["count"] != 0 and (r["method"] in ("*", method)) and r["re"].search(path) \
                        and (r["query_re"] is None or r["query_re"].search(query)):
                    if r["count"] > 0:
                        r["count"] -= 1
                    return dict(r)
        return None


class AuthzLog:
    """--authz-log FILE: one JSON line per authorization decision of a request (what
    kube-apiserver's audit log records as user, verb and objectRef, and its authorization
    decision): {"user", "groups", "verb", "apiGroup", "resource", "subresource", "namespace",
    "name", "allowed"}, or {"user", "groups", "verb", "path", "allowed"} for a non-resource
    URL. Impersonation checks are recorded too, as verb `impersonate`. Appended, flushed per
    line, so a reader sees every decision made before it opened the file."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.f = open(path, "a", encoding="utf-8")

    def record(self, user, attrs, allowed):
        if attrs.get("path") is not None:
            e = {"user": user.name, "groups": list(user.groups), "verb": attrs["verb"],
                 "path": attrs["path"], "allowed": bool(allowed)}
        else:
            e = {"user": user.name, "groups": list(user.groups), "verb": attrs["verb"],
                 "apiGroup": attrs.get("group") or "", "resource": attrs.get("resource") or "",
                 "subresource": attrs.get("subresource") or "", "namespace": attrs.get("namespace") or "",
                 "name": attrs.get("name") or "", "allowed": bool(allowed)}
        line = json.dumps(e, sort_keys=True) + "\n"
        with self.lock:
            self.f.write(line)
            self.f.flush()

    def close(self):
        with self.lock:
            self.f.close()


class APIServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, cluster, ssl_ctx, users, options):
        self.cluster = cluster
        self.ssl_ctx = ssl_ctx
        self.users = users                    # token -> User
        self.options = options                # dict: bookmark_interval, watch_expired, control hooks
        self.faults = options.setdefault("faults", Faults())
        self.conns = set()
        self.conns_lock = threading.Lock()
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        try:
            # Responses go out as headers and body in separate writes; with Nagle on, the
            # body waits for the client's delayed ACK (40 ms), which kube-apiserver (Go sets
            # TCP_NODELAY) never adds to a request.
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request.settimeout(30)
            tls = self.ssl_ctx.wrap_socket(request, server_side=True)
            tls.settimeout(None)
        except (ssl.SSLError, OSError):
            try:
                request.close()
            except OSError:
                pass
            return
        with self.conns_lock:
            self.conns.add(tls)
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            with self.conns_lock:
                self.conns.discard(tls)

    def close_all_connections(self):
        with self.conns_lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address):
        pass

    def authenticate_token(self, token):
        """The User a bearer token belongs to (tokens.json), or None: for requests and TokenReviews."""
        return self.users.get(token) if token else None


def _q(query, name, default=None):
    v = query.get(name)
    return v[-1] if v else default


def _bool(v):
    return v in ("1", "true", "True")


def _agent_manager(user_agent):
    """The field manager of a write without fieldManager: the User-Agent up to the first "/",
    printable characters only, at most 128 bytes (kube-apiserver's prefixFromUserAgent)."""
    out = ""
    for ch in (user_agent or "").split("/")[0]:
        if not ch.isprintable():
            continue
        if len((out + ch).encode()) > 128:
            break
        out += ch
    return out


def _field_manager_causes(fm):
    """ValidateFieldManager: at most 128 bytes, printable characters only."""
    if not fm:
        return []
    if len(fm.encode()) > 128:
        return [("FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes")]
    for i, ch in enumerate(fm):
        if not ch.isprintable():
            return [("FieldValueInvalid", "fieldManager", "Invalid value: %s: invalid character U+%04X (at position %d)"
                     % (json.dumps(fm), ord(ch), i))]
    return []


def warning_header(warnings):
    """The Warning headers of an answer (code 299, the text as an escaped quoted-string)."""
    if not warnings:
        return {}
    return {"Warning": ['299 - "%s"' % w.replace('\\', '\\\\').replace('"', '\\"') for w in warnings]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ktestapi"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.options.get("verbose"):
            super().log_message(fmt, *args)

    # -- plumbing --------------------------------------------------------------
    def _send(self, code, body, headers=None, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                for x in v:
                    self.send_header(k, x)
            else:
                self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, err, warnings=None):
        h = dict(err.headers)
        if err.retry_after() is not None:
            h["Retry-After"] = str(err.retry_after())
        h.update(warning_header(warnings if warnings is not None else getattr(err, "warnings", None)))
        self._send(err.code, err.status(), h)

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            for _ in range(100000):
                line = self.rfile.readline()
                size = int(line.strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                out += self.rfile.read(size)
                self.rfile.readline()
            return out
        return b""

    def _json_body(self, raw):
        ct = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ct == "application/vnd.kubernetes.protobuf":
            from .protobuf import decode, ProtoError
            try:
                return decode(raw)
            except ProtoError as e:
                raise E.unsupported_media('the body of the request was in an unknown format - accepted media '
                                          'types include: application/json, application/yaml (%s)' % e)
        if ct == "application/cbor":
            raise E.unsupported_media('the body of the request was in an unknown format - accepted media types '
                                      'include: application/json, application/yaml, application/vnd.kubernetes.protobuf')
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            ct = self.headers.get("Content-Type", "")
            if "yaml" in ct:
                from .yamlish import load_all
                try:
                    docs = load_all(raw.decode())
                    return docs[0] if docs else None
                except Exception as e:
                    raise E.bad_request("error decoding YAML: %s" % e)
            raise E.bad_request("couldn't get version/kind; json parse error: invalid JSON")

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _user(self):
        """x509 client certificate (CN = user, O = groups) first, then the bearer token."""
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError, OSError):
            cert = None
        if cert:
            cn, orgs = None, []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            if cn:
                from .api import User
                return User(cn, orgs, None, "")
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            return self.server.authenticate_token(auth[7:].strip())
        return None

    def _dispatch(self, method):
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = parse_qs(url.query, keep_blank_values=True)
        try:
            raw = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
            if path in ("/version", "/healthz", "/livez", "/readyz") and method == "GET":
                return self._send(200, VERSION) if path == "/version" else self._send(200, b"ok", ctype="text/plain")
            user = self._user()
            if user is None:
                return self._send(401, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
            if path.startswith("/_control"):
                if "system:masters" not in user.groups:
                    raise E.APIError(403, "Forbidden", "control endpoint needs the admin token")
                return self._control(method, path, raw)
            user = self._impersonate(user)
            REQUEST.ctx = {"user": user.name, "verb": method, "path": path}
            fault = self.server.faults.take(method, path, url.query)
            if fault:
                if fault.get("latencyMs"):
                    time.sleep(min(fault["latencyMs"], 60000) / 1000.0)
                code = fault.get("code")
                if code:
                    reason = {409: "Conflict", 500: "InternalError", 429: "TooManyRequests", 503: "ServiceUnavailable",
                              504: "Timeout", 410: "Expired", 404: "NotFound", 403: "Forbidden"}.get(code, "Unknown")
                    msg = fault.get("message") or {409: "Operation cannot be fulfilled: injected conflict",
                                                   500: "Internal error occurred: injected fault"}.get(code, "injected fault")
                    # a Status error with Retry-After carries details.retryAfterSeconds (as
                    # NewTooManyRequests / NewTimeoutError do); _error derives the header from it
                    raise E.APIError(code, reason, msg,
                                     {"retryAfterSeconds": int(fault["retryAfter"])} if fault.get("retryAfter") else None)
            self._route(method, path, query, raw, user)
        except E.APIError as e:
            self._error(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # a server bug: answer 500 and keep serving
            import traceback
            traceback.print_exc()
            try:
                self._error(E.internal("%s: %s" % (type(e).__name__, e)))
            except OSError:
                self.close_connection = True
        finally:
            REQUEST.ctx = None

    # -- authorization ----------------------------------------------------------------
    def _authorize(self, user, attrs):
        az = self.server.options.get("authorizer")
        ok = az is None or az.allowed(user, attrs)
        audit = self.server.options.get("authz_log")
        if audit is not None:
            audit.record(user, attrs, ok)
        if ok:
            return
        from .authz import forbidden_message
        if attrs.get("path") is not None:
            raise E.APIError(403, "Forbidden", forbidden_message(user, attrs), {})
        raise E.APIError(403, "Forbidden", forbidden_message(user, attrs),
                         {"name": attrs.get("name") or "", "group": attrs["group"], "kind": attrs["resource"]})

    def _impersonate(self, user):
        """Impersonate-User / -Group / -Uid headers, authorised by the `impersonate` verb."""
        name = self.headers.get("Impersonate-User")
        groups = self.headers.get_all("Impersonate-Group") or []
        if not name:
            if groups:
                raise E.bad_request("requested %s without impersonating a user" % groups)
            return user
        from .api import User
        if name.startswith("system:serviceaccount:") and name.count(":") == 3:
            _, _, ns, sa = name.split(":")
            attrs = {"verb": "impersonate", "group": "", "resource": "serviceaccounts", "name": sa, "namespace": ns}
            derived = ["system:serviceaccounts", "system:serviceaccounts:" + ns]
        else:
            attrs = {"verb": "impersonate", "group": "", "resource": "users", "name": name, "namespace": ""}
            derived = []
        self._authorize(user, attrs)
        for g in groups:
            self._authorize(user, {"verb": "impersonate", "group": "", "resource": "groups", "name": g,
                                   "namespace": ""})
        return User(name, groups or derived, None, self.headers.get("Impersonate-Uid") or "")

    # -- discovery -----------------------------------------------------------------
    def _route(self, method, path, query, raw, user):
        cl = self.server.cluster
        reg = cl.registry
        parts = [p for p in path.split("/") if p]
        if not (parts[:1] == ["api"] and len(parts) >= 3) and not (parts[:1] == ["apis"] and len(parts) >= 4):
            self._authorize(user, {"verb": method.lower() if method != "GET" else "get", "path": path})
        if path == "/openapi/v3":
            from .openapi import root
            return self._send(200, root(reg))
        if path.startswith("/openapi/v3/"):
            from .openapi import gv_doc
            p = parts[2:]
            doc = None
            if p[:1] == ["api"] and len(p) == 2:
                doc = gv_doc(reg, "", p[1])
            elif p[:1] == ["apis"] and len(p) == 3:
                doc = gv_doc(reg, p[1], p[2])
            if doc is None:
                raise E.APIError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, doc)
        if path == "/openapi/v2":
            from .openapi import v2_document
            if "protobuf" in (self.headers.get("Accept") or ""):
                return self._send(200, v2_document(True),
                                  ctype="application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            return self._send(200, v2_document(False))
        if path.startswith("/openapi") or path.startswith("/swagger"):
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        if path in ("/api", "/apis") and self._wants_aggregated():
            from .resources import aggregated
            return self._send(200, aggregated(reg, path == "/api"),
                              ctype="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        if path == "/api":
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                    "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            groups = []
            for g, vs, pref in reg.groups():
                groups.append({"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in vs],
                               "preferredVersion": {"groupVersion": "%s/%s" % (g, pref), "version": pref}})
            return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        if parts[0] == "api" and len(parts) == 2:
            if parts[1] != "v1":
                raise E.APIError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, self._resource_list("", "v1"))
        if parts[0] == "apis" and len(parts) == 2:
            for g, vs, pref in reg.groups():
                if g == parts[1]:
                    return self._send(200, {"kind": "APIGroup", "apiVersion": "v1", "name": g,
                                            "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in vs],
                                            "preferredVersion": {"groupVersion": "%s/%s" % (g, pref), "version": pref}})
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        if parts[0] == "apis" and len(parts) == 3:
            rl = self._resource_list(parts[1], parts[2])
            if not rl["resources"]:
                raise E.APIError(404, "NotFound", "the server could not find the requested resource")
            return self._send(200, rl)
        if parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path = True
            rest = rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            info3 = reg.lookup(group, version, rest[2])
            if info3 is not None and info3.namespaced:
                ns = rest[1]
                rest = rest[2:]
        if not rest:
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        info = reg.lookup(group, version, rest[0])
        if info is None or (ns is not None and not info.namespaced):
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3:
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        if sub:
            allowed = set(info.subresources) | ({"status"} if info.status else set())
            if sub not in allowed:
                raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        if ns is None and info.namespaced and name is not None:
            raise E.APIError(404, "NotFound", "the server could not find the requested resource")
        return self._resource(method, info, ns, name, sub, query, raw, user, watch_path)

    def _wants_aggregated(self):
        """Aggregated discovery (apidiscovery.k8s.io/v2) when the client lists it first and the
        server runs with --aggregated-discovery on; otherwise the legacy documents."""
        if not self.server.options.get("aggregated_discovery", True):
            return False
        first = (self.headers.get("Accept") or "").split(",")[0]
        return "g=apidiscovery.k8s.io" in first and "v=v2" in first and "as=APIGroupDiscoveryList" in first

    def _resource_list(self, group, version):
        res = []
        for r in self.server.cluster.registry.all():
            if r.group == group and r.version == version:
                res.extend(r.discovery())
        gv = "%s/%s" % (group, version) if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res}

    # -- resources ---------------------------------------------------------------------
    def _wants_table(self):
        acc = self.headers.get("Accept") or ""
        first = acc.split(",")[0]
        return "as=Table" in first and "g=meta.k8s.io" in first

    def _check_accept(self):
        acc = self.headers.get("Accept") or ""
        if not acc:
            return
        ok = False
        for part in acc.split(","):
            mt = part.split(";")[0].strip()
            if mt in ("application/json", "*/*", "application/*", "application/json-seq") or "as=Table" in part:
                ok = True
        if not ok:
            raise E.APIError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                             "application/yaml, application/vnd.kubernetes.protobuf")

    def _respond_obj(self, info, code, obj, warnings=None, query=None):
        h = warning_header(warnings)
        if self._wants_table() and obj.get("kind") not in ("Status",):
            inc = _q(query or {}, "includeObject", "Metadata")
            obj = to_table(info, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}, inc)
        self._send(code, obj, h)

    def _resource(self, method, info, ns, name, sub, query, raw, user, watch_path):
        cl = self.server.cluster
        dry = _q(query, "dryRun")
        if dry not in (None, "", "All"):
            raise E.bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % dry)
        dry = dry == "All"
        fv = _q(query, "fieldValidation", "Warn") or "Warn"
        fm = _q(query, "fieldManager")
        mgr = fm or _agent_manager(self.headers.get("User-Agent"))   # who managedFields record
        self._check_accept()
        if method == "GET":
            verb = "watch" if (watch_path or _bool(_q(query, "watch"))) else ("get" if name else "list")
        elif method == "DELETE" and not name:
            verb = "deletecollection"
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        self._authorize(user, {"verb": verb, "group": info.group, "resource": info.plural, "subresource": sub,
                               "name": name or "", "namespace": ns or ""})
        if method == "GET":
            if watch_path or _bool(_q(query, "watch")):
                if name:
                    query = dict(query)
                    fs = _q(query, "fieldSelector")
                    query["fieldSelector"] = ["metadata.name=%s" % name + ("," + fs if fs else "")]
                return self._watch(info, ns, query)
            if name:
                if sub == "eviction":
                    raise E.method_not_allowed()
                obj = cl.get(info, ns, name)
                return self._respond_obj(info, 200, obj, query=query)
            return self._list(info, ns, query)
        if method == "POST":
            if name and sub == "eviction":
                body = self._json_body(raw)
                code, st, w = cl.evict(ns, name, body, user, dry, fv)
                return self._send(code, st, warning_header(w))
            if name or (info.namespaced and ns is None):
                raise E.method_not_allowed()
            body = self._json_body(raw)
            if info.group in ("authentication.k8s.io", "authorization.k8s.io"):
                return self._send(201, self._review(info, body or {}, user))
            code, obj, w = cl.create(info, ns, body, user, dry, fv, fm, manager=mgr)
            return self._respond_obj(info, code, obj, w, query)
        if not name:
            if method == "DELETE":
                body = self._json_body(raw) or {}
                out = cl.delete_collection(info, ns, _q(query, "labelSelector"), _q(query, "fieldSelector"),
                                           _delete_opts(body, query), user, dry or _body_dry_run(body))
                return self._send(200, out)
            raise E.method_not_allowed()
        if sub == "eviction":
            raise E.method_not_allowed()
        if method == "PUT":
            body = self._json_body(raw)
            code, obj, w = cl.update(info, ns, name, body, user, dry, sub, fv, fm, manager=mgr)
            return self._respond_obj(info, code, obj, w, query)
        if method == "PATCH":
            if "patch" not in info.verbs:  # create-only reviews have no item paths
                raise E.APIError(404, "NotFound", "the server could not find the requested resource")
            ctype = self.headers.get("Content-Type")
            apply = (ctype or "").split(";")[0].strip().lower() == "application/apply-patch+yaml"
            force = _q(query, "force")
            causes = []  # ValidatePatchOptions
            if apply and not fm:
                causes.append(("FieldValueRequired", "fieldManager", "Required value: is required for apply patch"))
            if not apply and force is not None:
                causes.append(("FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply patch"))
            causes += _field_manager_causes(fm)
            if causes:
                raise E.invalid("PatchOptions", "meta.k8s.io", "", causes)
            if apply:
                def authorize_create():
                    self._authorize(user, {"verb": "create", "group": info.group, "resource": info.plural,
                                           "subresource": sub, "name": name, "namespace": ns or ""})
                code, obj, w = cl.apply(info, ns, name, raw, user, dry, sub, fv, fm, _bool(force), authorize_create)
            else:
                code, obj, w = cl.patch(info, ns, name, ctype, raw, user, dry, sub, fv, fm, manager=mgr)
            return self._respond_obj(info, code, obj, w, query)
        if method == "DELETE":
            if sub:
                raise E.method_not_allowed()
            body = self._json_body(raw) or {}
            dry = dry or _body_dry_run(body)
            code, out, w = cl.delete(info, ns, name, _delete_opts(body, query), user, dry)
            return self._send(code, out, warning_header(w))
        raise E.method_not_allowed()

    # The audiences of tokens reviewed without spec.audiences: kube-apiserver's --api-audiences,
    # which default to its service-account issuer.
    API_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]

    def _token_review(self, spec):
        """TokenReview status: the token authenticated exactly as a request's bearer token is.

        As kube-apiserver: an empty token is 400; a token nobody owns is `{"user": {}}`
        (authenticated and error are omitempty); the static tokens are audience-agnostic, so
        the audiences asked for (or the API server's) come back."""
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise E.bad_request("token is required for TokenReview in authentication")
        user = self.server.authenticate_token(token)
        if user is None:
            return {"user": {}}
        auds = spec.get("audiences") or self.API_AUDIENCES
        return {"authenticated": True, "user": user.user_info(), "audiences": list(auds)}

    def _review(self, info, body, user):
        """SelfSubjectReview / TokenReview / SelfSubjectAccessReview / SubjectAccessReview answers."""
        out = dict(body)
        out["apiVersion"], out["kind"] = info.api_version, info.kind
        out.setdefault("metadata", {})["creationTimestamp"] = None
        if info.plural == "selfsubjectreviews":
            out["status"] = {"userInfo": user.user_info()}
            return out
        spec = body.get("spec") or {}
        if info.plural == "tokenreviews":
            out["status"] = self._token_review(spec)
            return out
        subject = user
        if info.plural == "selfsubjectrulesreviews":
            from .authz import rules_for
            az = self.server.options.get("authorizer")
            if az is None:
                res, nonres = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], \
                    [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            else:
                res, nonres = rules_for(az, user, spec.get("namespace", ""))
            out["status"] = {"resourceRules": res, "nonResourceRules": nonres, "incomplete": False}
            return out
        if info.plural == "subjectaccessreviews":
            from .api import User
            if not spec.get("user") and not spec.get("groups"):
                raise E.invalid(info.kind, info.group, "", [("FieldValueInvalid", "spec.user",
                                                             'Invalid value: "": at least one of user or group '
                                                             'must be specified')])
            # exactly the groups named: no implicit system:authenticated, as kube-apiserver
            subject = User(spec.get("user", ""), spec.get("groups") or [], None, spec.get("uid", ""),
                           implicit_authenticated=False)
        ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if ra is not None:
            attrs = {"verb": ra.get("verb", ""), "group": ra.get("group", ""), "resource": ra.get("resource", ""),
                     "subresource": ra.get("subresource", ""), "name": ra.get("name", ""),
                     "namespace": ra.get("namespace", "")}
        elif nra is not None:
            attrs = {"verb": nra.get("verb", ""), "path": nra.get("path", "")}
        else:
            raise E.invalid(info.kind, info.group, "", [("FieldValueRequired", "spec.resourceAttributes",
                                                         "Required value: exactly one of nonResourceAttributes or "
                                                         "resourceAttributes must be specified")])
        az = self.server.options.get("authorizer")
        ok = az is None or az.allowed(subject, attrs)
        out["status"] = {"allowed": ok}
        if ok and az is not None:
            out["status"]["reason"] = "allowed by RBAC"
        return out

    def _list(self, info, ns, query):
        cl = self.server.cluster
        limit = int(_q(query, "limit", "0") or 0)
        cont = _q(query, "continue") or None
        rv = _q(query, "resourceVersion")
        if cont and rv not in (None, "", "0"):
            raise E.bad_request("specifying resource version is not allowed when using continue")
        items, lrv, tok, rem = cl.list(info, ns, _q(query, "labelSelector"), _q(query, "fieldSelector"), limit, cont)
        meta = {"resourceVersion": lrv}
        if tok:
            meta["continue"] = tok
            if rem is not None:
                meta["remainingItemCount"] = rem
        if self._wants_table():
            return self._send(200, to_table(info, items, meta, _q(query, "includeObject", "Metadata")))
        if info.crd is None:
            # typed lists carry no TypeMeta on their items (custom resource lists do)
            items = [{k: v for k, v in o.items() if k != "apiVersion" and k != "kind"} for o in items]
        self._send(200, {"kind": info.kind + "List", "apiVersion": info.api_version, "metadata": meta,
                         "items": items})

    # -- watch ---------------------------------------------------------------------
    def _check_watch_list(self, query, send_initial, bookmarks):
        """A watch's ListOptions as kube-apiserver validates them: sendInitialEvents (the
        WatchList feature, on unless --watch-list off) needs resourceVersionMatch=NotOlderThan and
        allowWatchBookmarks; resourceVersionMatch without it is forbidden on a watch."""
        rvm = _q(query, "resourceVersionMatch")
        causes = []
        if send_initial and not self.server.options.get("watch_list", True):
            causes.append(("FieldValueForbidden", "sendInitialEvents",
                           "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
        elif send_initial:
            if rvm != "NotOlderThan":
                causes.append(("FieldValueForbidden", "resourceVersionMatch",
                               "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
            if not bookmarks:
                causes.append(("FieldValueForbidden", "allowWatchBookmarks",
                               "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true"))
        elif rvm:
            causes.append(("FieldValueForbidden", "resourceVersionMatch",
                           "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
        if causes:
            raise E.invalid("ListOptions", "meta.k8s.io", "", causes)

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, info, ns, query):
        from .selection import parse_label_selector, parse_field_selector
        cl = self.server.cluster
        st = cl.store
        ls = parse_label_selector(_q(query, "labelSelector"))
        fs = parse_field_selector(_q(query, "fieldSelector"), info.rkey, info.kind, info.crd)
        if fs.get("metadata.namespace") is not None and info.namespaced:
            ns = fs.get("metadata.namespace")
        bookmarks = _bool(_q(query, "allowWatchBookmarks"))
        send_initial = _bool(_q(query, "sendInitialEvents"))
        rv = _q(query, "resourceVersion")
        self._check_watch_list(query, send_initial, bookmarks)
        ts = _q(query, "timeoutSeconds")
        try:
            timeout = float(ts) if ts else 0.0
        except ValueError:
            raise E.bad_request('timeoutSeconds: Invalid value: "%s"' % ts)
        if timeout <= 0:
            timeout = float(self.server.options.get("watch_timeout", 1800))
        table = self._wants_table()
        bm_interval = float(self.server.options.get("bookmark_interval", 5))
        opts = self.server.options

        def visible(o):
            if o is None:
                return False
            md = o.get("metadata") or {}
            if info.namespaced and ns and md.get("namespace") != ns:
                return False
            return ls.matches(md.get("labels")) and fs.matches(o, info.rkey)

        initial = []
        with st.lock:
            epoch = st.watch_epoch
            if rv in (None, "", "0") or send_initial:
                items, _, _, _ = st.list(info.rkey, ns=ns if info.namespaced else None, pred=visible)
                initial = [("ADDED", o) for o in items]
                pos = st.rv
            else:
                try:
                    pos = int(rv)
                except ValueError:
                    raise E.bad_request('resourceVersion: Invalid value: "%s": must be a valid resourceVersion' % rv)
                if pos > st.rv:
                    st.cond.wait_for(lambda: st.rv >= pos, 3)
                    if pos > st.rv:
                        raise E.APIError(504, "Timeout", "Too large resource version: %d, current: %d" % (pos, st.rv),
                                         {"causes": [{"reason": "ResourceVersionTooLarge",
                                                      "message": "Too large resource version"}], "retryAfterSeconds": 1})
                expired = pos < st.compacted_rv
                if expired and opts.get("watch_expired") == "http":
                    raise E.gone("too old resource version: %d (%d)" % (pos, st.compacted_rv))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        first_table = [True]

        def emit(typ, obj):
            if typ in ("ADDED", "MODIFIED", "DELETED"):
                obj = convert_out(info, obj)
                if table:
                    t = to_table(info, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion")},
                                 _q(query, "includeObject", "Metadata"))
                    if not first_table[0]:
                        t["columnDefinitions"] = []
                    first_table[0] = False
                    obj = t
            self._chunk(json.dumps({"type": typ, "object": obj}, separators=(",", ":")).encode() + b"\n")

        def bookmark(rv_, annotations=None):
            md = {"resourceVersion": str(rv_), "creationTimestamp": None}
            if annotations:
                md["annotations"] = annotations
            self._chunk(json.dumps({"type": "BOOKMARK", "object": {"kind": info.kind, "apiVersion": info.api_version,
                                                                   "metadata": md}}).encode() + b"\n")

        try:
            if rv not in (None, "", "0") and not send_initial and pos < st.compacted_rv:
                emit("ERROR", E.gone("too old resource version: %d (%d)" % (pos, st.compacted_rv)).status())
                self._chunk(b"")
                return
            for typ, o in initial:
                emit(typ, o)
            if send_initial and bookmarks:
                bookmark(pos, {"k8s.io/initial-events-end": "true"})
            deadline = time.monotonic() + max(0.0, timeout)
            last_bm = time.monotonic()
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                with st.lock:
                    if st.watch_epoch != epoch or st.closed:
                        break
                    if not (st.history_rvs and st.history_rvs[-1] > pos):
                        st.cond.wait(min(deadline - now, bm_interval, 1.0))
                    if st.watch_epoch != epoch or st.closed:
                        break
                    try:
                        evs = st.events_since(pos)
                    except Expired as e:
                        evs = None
                        err = str(e)
                    top = st.rv
                if evs is None:
                    emit("ERROR", E.gone(err).status())
                    break
                for (erv, rkey, typ, obj, prev) in evs:
                    pos = erv
                    if rkey != info.rkey:
                        continue
                    now_vis = visible(obj) if typ != "DELETED" else False
                    was_vis = visible(prev) if prev is not None else False
                    if typ == "DELETED":
                        if was_vis or visible(obj):
                            emit("DELETED", obj)
                    elif now_vis and was_vis:
                        emit("MODIFIED", obj)
                    elif now_vis:
                        emit("ADDED", obj)
                    elif was_vis:
                        emit("DELETED", obj)
                # every event up to `top` has been seen (events_since returned all of them)
                pos = max(pos, top)
                if bookmarks and time.monotonic() - last_bm >= bm_interval:
                    bookmark(pos)
                    last_bm = time.monotonic()
            if bookmarks and time.monotonic() >= deadline:
                bookmark(pos)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True

    # -- control -----------------------------------------------------------------------
    def _control(self, method, path, raw):
        cl = self.server.cluster
        body = json.loads(raw) if raw else {}
        op = path[len("/_control/"):]
        opts = self.server.options
        if op == "drop-watches" and method == "POST":
            cl.store.drop_watches()
        elif op == "compact" and method == "POST":
            cl.store.compact()
        elif op == "faults" and method == "POST":
            self.server.faults.add(body)
        elif op == "faults" and method == "DELETE":
            self.server.faults.clear()
        elif op == "kubelet" and method == "POST":
            if body.get("mode") not in ("immediate", "grace"):
                raise E.bad_request("mode must be immediate or grace")
            cl.set_kubelet(body["mode"])
        elif op == "watch-expired" and method == "POST":
            opts["watch_expired"] = body.get("mode", "event")
        elif op == "watch-list" and method == "POST":
            opts["watch_list"] = bool(body.get("enabled", True))
        elif op == "service-endpoint" and method == "POST":
            h, _, p = body["address"].rpartition(":")
            cl.admission.service_endpoints[body["service"]] = (h, int(p))
        elif op == "webhook-calls" and method == "GET":
            with cl.admission.lock:
                return self._send(200, {"calls": list(cl.admission.calls)})
        elif op == "webhook-calls" and method == "DELETE":
            with cl.admission.lock:
                cl.admission.calls.clear()
        elif op == "restart" and method == "POST":
            hook = opts.get("restart_hook")
            if hook is None:
                raise E.internal("restart not available")
            self._send(202, {"status": "restarting", "downSeconds": body.get("downSeconds", 1)})
            self.close_connection = True
            threading.Thread(target=hook, args=(float(body.get("downSeconds", 1)),), daemon=True).start()
            return
        elif op == "audit" and method == "GET":
            return self._send(200, cl.audit())
        elif op == "audit" and method == "DELETE":
            cl.audit(reset=True)
        elif op == "cel" and method == "GET":
            from . import cel
            pr = cel.process()
            return self._send(200, {"pid": pr.pid, "starts": pr.starts})
        elif op == "state" and method == "GET":
            with cl.store.lock:
                return self._send(200, {"resourceVersion": str(cl.store.rv), "compactedRV": cl.store.compacted_rv,
                                        "historyLength": len(cl.store.history), "kubelet": cl.kubelet,
                                        "counts": {k: len(t.objs) for k, t in cl.store.tables.items()}})
        else:
            raise E.APIError(404, "NotFound", "unknown control operation %s %s" % (method, op))
        self._send(200, {"status": "ok"})


def _body_dry_run(body):
    """DeleteOptions.dryRun in the body (kubectl delete --dry-run=server sends it there)."""
    d = body.get("dryRun") if isinstance(body, dict) else None
    if d in (None, []):
        return False
    if d != ["All"]:
        raise E.bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % (d,))
    return True


def _delete_opts(body, query):
    o = dict(body or {})
    gp = _q(query, "gracePeriodSeconds")
    if gp is not None:
        o["gracePeriodSeconds"] = int(gp)
    pp = _q(query, "propagationPolicy")
    if pp:
        o["propagationPolicy"] = pp
    return o
