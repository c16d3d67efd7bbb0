"""Admission webhooks, called the way kube-apiserver calls them.

For each webhook of every ValidatingWebhookConfiguration (and MutatingWebhookConfiguration)
the dispatcher checks rules (operations, apiGroups, apiVersions, resources incl.
subresources, scope), matchPolicy (Equivalent = other served versions of the same resource
match too), namespaceSelector (namespace labels; a Namespace uses its own labels; other
cluster-scoped objects always match) and objectSelector (object or oldObject labels).
Matching webhooks are POSTed an admission.k8s.io/v1 AdmissionReview over HTTPS:
  * URL = clientConfig.url, or for a service ref https://<name>.<ns>.svc:<port><path>, dialled
    at the address from the service-endpoint map (see Dispatcher.service_endpoints) with TLS
    server name <name>.<ns>.svc;
  * the server certificate is verified against caBundle (no caBundle: system roots);
  * `?timeout=<N>s` is appended, N = timeoutSeconds (default 10), which bounds the call;
  * connections are kept alive and reused (see ConnectionPool).
Validating webhooks run in parallel; the first failure in configuration order wins.
Transport/response errors follow failurePolicy (default Fail -> 500 InternalError, Ignore ->
continue). Denials keep the webhook's code/reason/details; the message is prefixed
`admission webhook "<name>" denied the request: `. warnings are returned for Warning headers.
Webhooks are never called for webhook configuration objects.
"""
import base64
import http.client
import json
import socket
import ssl
import threading
import uuid

from .errors import APIError
from .patch import json_patch, PatchError
from .selection import label_selector_from_obj

SKIP_RKEYS = {"admissionregistration.k8s.io/validatingwebhookconfigurations",
              "admissionregistration.k8s.io/mutatingwebhookconfigurations"}


class Attributes:
    """What is being admitted."""

    def __init__(self, info, operation, name, namespace, obj, old, user, dry_run, subresource="",
                 kind=None, options=None):
        self.info = info
        self.operation = operation
        self.name = name
        self.namespace = namespace
        self.obj = obj
        self.old = old
        self.user = user
        self.dry_run = dry_run
        self.subresource = subresource
        self.kind = kind or info.gvk
        self.options = options


def _match_rule(rule, op, group, version, resource, sub, namespaced):
    ops = rule.get("operations") or []
    if "*" not in ops and op not in ops:
        return False
    gs = rule.get("apiGroups") or []
    if "*" not in gs and group not in gs:
        return False
    vs = rule.get("apiVersions") or []
    if "*" not in vs and version not in vs:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and namespaced:
        return False
    if scope == "Namespaced" and not namespaced:
        return False
    full = resource + ("/" + sub if sub else "")
    for r in rule.get("resources") or []:
        if r == "*/*":
            return True
        if r == "*" and not sub:
            return True
        if r == full:
            return True
        if "/" in r:
            a, b = r.split("/", 1)
            if a == "*" and b == sub and sub:
                return True
            if b == "*" and a == resource and sub:
                return True
    return False


class ConnectionPool:
    """Keep-alive connections to webhooks, like client-go's transport: at most 25 idle
    connections per endpoint, dropped after 90 s idle. A connection the webhook has closed
    while idle (readable when it should be silent: EOF or a TLS close_notify) is discarded
    before reuse, as Go's per-connection read loop notices; if the webhook closes it in the
    instant between that check and the request, the call fails with EOF (Go does not retry
    a POST), and the failurePolicy applies — the race real webhooks must avoid by keeping
    idle connections open longer than the client does."""
    MAX_IDLE = 25
    IDLE_TIMEOUT = 90.0

    def __init__(self):
        self.lock = threading.Lock()
        self.idle = {}

    def get(self, key):
        import select
        import time
        while True:
            with self.lock:
                lst = self.idle.get(key)
                if not lst:
                    return None
                conn, t = lst.pop()
            try:
                dead = time.monotonic() - t > self.IDLE_TIMEOUT or conn.sock is None or \
                    bool(select.select([conn.sock], [], [], 0)[0])
            except (OSError, ValueError):
                dead = True
            if not dead:
                return conn
            conn.close()

    def put(self, key, conn):
        import time
        with self.lock:
            lst = self.idle.setdefault(key, [])
            if len(lst) >= self.MAX_IDLE:
                conn.close()
                return
            lst.append((conn, time.monotonic()))


class Dispatcher:
    def __init__(self, cluster):
        self.cluster = cluster
        self.pool = ConnectionPool()
        self.service_endpoints = {}   # "ns/name" or "ns/name:port" -> (host, port)
        # (cert file, key file) presented to every webhook, as kube-apiserver does with the
        # client certificate of its AdmissionConfiguration kubeconfig; None = none.
        self.client_cert = None
        self.calls = []               # recent call log (for tests/debugging), bounded
        self.lock = threading.Lock()

    # -- matching ------------------------------------------------------------------
    def _equivalents(self, info):
        out = [info]
        for r in self.cluster.registry.all():
            if r.rkey == info.rkey and r is not info and (r.group, r.version) != (info.group, info.version):
                out.append(r)
        return out

    def _matches(self, hook, a):
        if a.info.rkey in SKIP_RKEYS:
            return None
        policy = hook.get("matchPolicy") or "Equivalent"
        candidates = [a.info] if policy == "Exact" else self._equivalents(a.info)
        matched = None
        for cand in candidates:
            for rule in hook.get("rules") or []:
                if _match_rule(rule, a.operation, cand.group, cand.version, cand.plural, a.subresource,
                               cand.namespaced):
                    matched = cand
                    break
            if matched:
                break
        if matched is None:
            return None
        # namespaceSelector
        nsel = hook.get("namespaceSelector")
        if nsel is not None and (nsel.get("matchLabels") or nsel.get("matchExpressions")):
            sel = label_selector_from_obj(nsel)
            if a.info.rkey == "/namespaces":
                labels = ((a.obj or a.old or {}).get("metadata") or {}).get("labels") or {}
                if not sel.matches(labels):
                    return None
            elif a.info.namespaced:
                ns = self.cluster.store.get("/namespaces", a.namespace)
                labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
                if not sel.matches(labels):
                    return None
        osel = hook.get("objectSelector")
        if osel is not None and (osel.get("matchLabels") or osel.get("matchExpressions")):
            sel = label_selector_from_obj(osel)
            ok = False
            for o in (a.obj, a.old):
                if isinstance(o, dict) and sel.matches(((o.get("metadata") or {}).get("labels")) or {}):
                    ok = True
            if not ok:
                return None
        return matched

    def _configs(self, rkey):
        items, _, _, _ = self.cluster.store.list(rkey)
        return sorted(items, key=lambda c: c["metadata"]["name"])

    # -- review --------------------------------------------------------------------
    def _review(self, hook, a, matched):
        from .resources import convert_out
        conv = lambda o: convert_out(matched, o) if (o is not None and a.subresource != "eviction") else o
        req = {
            "uid": str(uuid.uuid4()),
            "kind": a.kind if a.subresource == "eviction" else matched.gvk,
            "resource": matched.gvr,
            "requestKind": a.kind,
            "requestResource": a.info.gvr,
            "name": a.name,
            "namespace": a.namespace,
            "operation": a.operation,
            "userInfo": a.user.user_info(),
            "object": conv(a.obj),
            "oldObject": conv(a.old),
            "dryRun": bool(a.dry_run),
            "options": a.options or {"kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions",
                                              "DELETE": "DeleteOptions"}.get(a.operation, "CreateOptions"),
                                     "apiVersion": "meta.k8s.io/v1"},
        }
        if a.subresource:
            req["subResource"] = a.subresource
            req["requestSubResource"] = a.subresource
        if not a.name:
            del req["name"]
        if not a.namespace:
            del req["namespace"]
        return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req}

    def _endpoint(self, cc):
        """Return (display_url, connect_host, connect_port, server_hostname, path)."""
        if cc.get("url"):
            from urllib.parse import urlsplit
            u = urlsplit(cc["url"])
            host = u.hostname
            port = u.port or 443
            path = u.path or "/"
            return cc["url"], host, port, host, path
        svc = cc.get("service") or {}
        ns, name = svc.get("namespace", ""), svc.get("name", "")
        port = svc.get("port", 443)
        path = svc.get("path") or "/"
        sni = "%s.%s.svc" % (name, ns)
        url = "https://%s:%d%s" % (sni, port, path)
        ep = self.service_endpoints.get("%s/%s:%d" % (ns, name, port)) or self.service_endpoints.get("%s/%s" % (ns, name))
        if ep is None:
            s = self.cluster.store.get("/services", "%s/%s" % (ns, name))
            ann = ((s or {}).get("metadata") or {}).get("annotations") or {}
            target = ann.get("ktestapi.nodegate.io/endpoint")
            if target:
                h, _, p = target.rpartition(":")
                ep = (h, int(p))
            elif s is None:
                raise OSError('service "%s" not found' % name)
            else:
                raise OSError('no endpoints available for service "%s"' % name)
        return url, ep[0], ep[1], sni, path

    def _call(self, hook, review):
        """POST the review. Returns (response_dict, None) or (None, error_message)."""
        cc = hook.get("clientConfig") or {}
        timeout = hook.get("timeoutSeconds") or 10
        try:
            url, host, port, sni, path = self._endpoint(cc)
        except OSError as e:
            return None, "failed to call webhook: %s" % e
        full = url + ("&" if "?" in url else "?") + "timeout=%ds" % timeout
        path_q = path + ("&" if "?" in path else "?") + "timeout=%ds" % timeout
        if host not in ("127.0.0.1", "localhost", "::1"):
            return None, 'failed to call webhook: Post "%s": dial tcp: address %s: only loopback is allowed in the test API server' % (full, host)
        ctx = ssl.create_default_context()
        ctx.set_alpn_protocols(["http/1.1"])
        if self.client_cert:
            ctx.load_cert_chain(*self.client_cert)
        ca = cc.get("caBundle")
        if ca:
            try:
                ctx.load_verify_locations(cadata=base64.b64decode(ca).decode())
            except Exception as e:
                return None, 'failed to call webhook: Post "%s": invalid caBundle: %s' % (full, e)
        body = json.dumps(review).encode()
        key = (host, port, sni, ca or "")
        conn = self.pool.get(key)
        try:
            if conn is None:
                raw = socket.create_connection(("127.0.0.1" if host == "localhost" else host, port), timeout=timeout)
                try:
                    tls = ctx.wrap_socket(raw, server_hostname=sni)
                except ssl.SSLCertVerificationError as e:
                    raw.close()
                    return None, 'failed to call webhook: Post "%s": tls: failed to verify certificate: %s' % (
                        full, e.verify_message)
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
                conn.sock = tls
            conn.sock.settimeout(timeout)
            conn.request("POST", path_q, body=body, headers={"Content-Type": "application/json",
                                                             "Accept": "application/json, */*",
                                                             "User-Agent": "kube-apiserver-admission",
                                                             "Host": "%s:%d" % (sni, port)})
            resp = conn.getresponse()
            data = resp.read(8 << 20)
        except socket.timeout:
            conn and conn.close()
            return None, 'failed to call webhook: Post "%s": context deadline exceeded' % full
        except http.client.RemoteDisconnected:
            conn.close()
            return None, 'failed to call webhook: Post "%s": EOF' % full
        except (OSError, http.client.HTTPException) as e:
            conn and conn.close()
            return None, 'failed to call webhook: Post "%s": %s' % (full, e)
        if conn.sock is not None and not resp.will_close:
            self.pool.put(key, conn)
        else:
            conn.close()
        if resp.status < 200 or resp.status >= 300:
            return None, ('failed to call webhook: an error on the server ("%s") has prevented the request from '
                          'succeeding' % data[:200].decode(errors="replace"))
        try:
            rv = json.loads(data)
        except ValueError as e:
            return None, "received invalid webhook response: %s" % e
        if not isinstance(rv, dict) or not isinstance(rv.get("response"), dict):
            return None, "received invalid webhook response: webhook response was absent"
        r = rv["response"]
        if r.get("uid") != review["request"]["uid"]:
            return None, 'received invalid webhook response: expected response.uid="%s", got "%s"' % (
                review["request"]["uid"], r.get("uid", ""))
        if rv.get("apiVersion") != "admission.k8s.io/v1" or rv.get("kind") != "AdmissionReview":
            return None, ("received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
                          "Kind=AdmissionReview, got %s, Kind=%s" % (rv.get("apiVersion", ""), rv.get("kind", "")))
        return r, None

    def _log(self, hook, review, result):
        with self.lock:
            self.calls.append({"webhook": hook.get("name"), "request": review["request"], "result": result})
            del self.calls[:-200]

    def _outcome(self, hook, a, matched, mutating):
        """Call one webhook. Returns (patched_obj_or_None, warnings, APIError_or_None)."""
        review = self._review(hook, a, matched)
        if a.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            return None, [], APIError(400, "BadRequest", 'admission webhook "%s" does not support dry run' % hook.get("name"))
        resp, err = self._call(hook, review)
        self._log(hook, review, resp if resp is not None else {"error": err})
        name = hook.get("name")
        if err is not None:
            msg = 'failed calling webhook "%s": %s' % (name, err)
            if (hook.get("failurePolicy") or "Fail") == "Ignore":
                return None, [], None
            return None, [], APIError(500, "InternalError", "Internal error occurred: " + msg,
                                      {"causes": [{"message": msg}]})
        warnings = [w for w in resp.get("warnings") or [] if isinstance(w, str)]
        if not mutating and (resp.get("patch") or resp.get("patchType")):
            msg = 'failed calling webhook "%s": received invalid webhook response: validating webhook may not return response.patch' % name
            if (hook.get("failurePolicy") or "Fail") == "Ignore":
                return None, warnings, None
            return None, warnings, APIError(500, "InternalError", "Internal error occurred: " + msg)
        if not resp.get("allowed"):
            st = dict(resp.get("status") or {})
            code = st.get("code") or 0
            if code < 400:
                code = 400
            deny = 'admission webhook "%s" denied the request' % name
            if st.get("message"):
                msg = "%s: %s" % (deny, st["message"])
            elif st.get("reason"):
                msg = "%s: %s" % (deny, st["reason"])
            else:
                msg = deny + " without explanation"
            # code, reason and details pass through unchanged (webhook errors.ToStatusErr); a
            # details.retryAfterSeconds > 0 becomes the Retry-After header when the error is written
            return None, warnings, APIError(code, st.get("reason", ""), msg, st.get("details"))
        if mutating and resp.get("patch"):
            try:
                ops = json.loads(base64.b64decode(resp["patch"]))
                return json_patch(a.obj, ops), warnings, None
            except (ValueError, PatchError) as e:
                return None, warnings, APIError(500, "InternalError", "Internal error occurred: JSON patch from "
                                                'webhook "%s" could not be applied: %s' % (name, e))
        return None, warnings, None

    def _hooks(self, rkey, a):
        out = []
        for cfg in self._configs(rkey):
            for hook in cfg.get("webhooks") or []:
                m = self._matches(hook, a)
                if m is not None:
                    out.append((hook, m))
        return out

    def mutate(self, a):
        """Run mutating webhooks in order; returns (object, warnings). Raises APIError."""
        warnings = []
        if a.info.rkey in SKIP_RKEYS:
            return a.obj, warnings
        for hook, m in self._hooks("admissionregistration.k8s.io/mutatingwebhookconfigurations", a):
            obj, w, err = self._outcome(hook, a, m, True)
            warnings += w
            if err is not None:
                err.warnings = warnings
                raise err
            if obj is not None:
                a.obj = obj
        return a.obj, warnings

    def validate(self, a):
        """Run validating webhooks in parallel; returns warnings. Raises the first APIError."""
        if a.info.rkey in SKIP_RKEYS:
            return []
        hooks = self._hooks("admissionregistration.k8s.io/validatingwebhookconfigurations", a)
        if not hooks:
            return []
        results = [None] * len(hooks)

        def run(i, hook, m):
            try:
                results[i] = self._outcome(hook, a, m, False)
            except Exception as e:  # a bug here must not hang the request
                results[i] = (None, [], APIError(500, "InternalError", "Internal error occurred: %s" % e))
        threads = [threading.Thread(target=run, args=(i, h, m), daemon=True) for i, (h, m) in enumerate(hooks)]
        for t in threads:
            t.start()
        for t, (h, _) in zip(threads, hooks):
            t.join((h.get("timeoutSeconds") or 10) + 5)
        warnings = []
        first = None
        for r in results:
            if r is None:
                continue
            warnings += r[1]
            if r[2] is not None and first is None:
                first = r[2]
        if first is not None:
            first.warnings = warnings
            raise first
        return warnings
