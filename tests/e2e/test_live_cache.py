#!/usr/bin/env python3
"""e2e: nodegate watching the test API server (DESIGN.md §7, §11). kubectl and the API changes
objects; the API server calls nodegate's eviction webhook exactly as kube-apiserver does; the
decisions must follow every change. Fault tests drop watches, expire history (410) and restart
the API server, then compare nodegate's /debug/cache with the API server's own lists.

Every wait is bounded (the acceptance scenarios allow 5 s on loopback); the measured delay from
a change to the decision that reflects it is printed, not asserted against a timing threshold.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import base64
import glob
import http.client
import json
import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("NODEGATE", os.path.join(ROOT, "build", "cmd", "nodegate"))
# A command prefix for the binary, e.g. "valgrind --leak-check=full --error-exitcode=99".
WRAPPER = shlex.split(os.environ.get("NG_WRAPPER", ""))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
from ktestapi.testing import ServerProcess  # noqa: E402

# nodegate's RBAC as the manifests grant it, plus the auth-delegator binding that
# --admin-auth kubernetes needs (AdminAuthTest), then every CRD of manifests/crds (serve and
# drain watch all of nodegate's kinds, the remediation ones included).
CRDS = [os.path.join(ROOT, "manifests", "rbac", "rbac.json"),
        os.path.join(ROOT, "manifests", "rbac", "users", "users.json"),
        os.path.join(ROOT, "manifests", "rbac", "admin-auth", "admin-auth.json")] + sorted(
    glob.glob(os.path.join(ROOT, "manifests", "crds", "*.json")))
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture-f.json")
ND_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptions"
ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"
WAIT_S = 60 if WRAPPER else 10  # acceptance: 5 s on loopback; doubled for sanitizer builds on a shared machine


def has_failed(case):
    """Whether @case (a running unittest.TestCase) has failed so far, for its tearDown to show the
    logs. Not case._outcome.success: Python 3.11 sets it back to True while tearDown runs."""
    result = getattr(case._outcome, "result", None)
    return any(t is case for t, _ in (getattr(result, "failures", None) or [])
               + (getattr(result, "errors", None) or []))


def eventually(fn, timeout=WAIT_S, interval=0.02):
    """Polls fn until it returns a truthy value; returns (value, seconds waited) or (None, t)."""
    t0 = time.monotonic()
    while True:
        v = fn()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return None, time.monotonic() - t0
        time.sleep(interval)


def kubectl_rows(api, *args):
    """`kubectl get ARGS` as printed: one dict per row, column name -> cell. Columns are cut at
    the header's offsets, since an empty cell leaves only spaces."""
    rc, out, err = api.kubectl("get", *args, timeout=60)
    if rc != 0:
        raise AssertionError(f"kubectl get {' '.join(args)}: {err}")
    lines = out.splitlines()
    head = lines[0]
    starts = [i for i, c in enumerate(head) if c != " " and (i == 0 or head[i - 1] == " ")]
    spans = list(zip(starts, starts[1:] + [None]))
    return [{head[a:b].strip(): row[a:b].strip() for a, b in spans} for row in lines[1:]]


def free_port():
    """A loopback port nothing listens on now (for a listener that takes no port file)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_client_ca(tmp):
    """A CA and a client certificate it signed, as an API server's admission configuration
    carries: returns (ca.pem, client.pem, client.key)."""
    ca_key, ca = os.path.join(tmp, "client-ca.key"), os.path.join(tmp, "client-ca.pem")
    key, csr, crt = (os.path.join(tmp, "apiserver-client." + e) for e in ("key", "csr", "pem"))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run = lambda args: subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)  # noqa: E731
    run(["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=apiserver-client-ca"])
    run(["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=kube-apiserver"])
    run(["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt, "-days", "1"])
    return ca, crt, key


class Nodegate:
    """nodegate serve --kubeconfig against a ServerProcess, registered as its eviction webhook.
    The cache dump and /v1/evaluate are on its admin listener (plain HTTP on loopback)."""

    def __init__(self, api, tmp, client_ca=None, extra_args=()):
        self.api = api
        self.tmp = tmp
        self.cert = os.path.join(tmp, "ng.crt")
        self.key = os.path.join(tmp, "ng.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "1", "-subj", "/CN=nodegate",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=30)
        self.port_file = os.path.join(tmp, "ng.port")
        self.log_path = os.path.join(tmp, "ng.log")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        # The admin listener takes no port file: its port is picked free here, and another test
        # running at the same time may take it first. Such a start is tried again on a new port.
        for attempt in range(3):
            if os.path.exists(self.port_file):
                os.unlink(self.port_file)
            self.log = open(self.log_path, "wb")
            self.admin_port = free_port()
            extra = ["--admin-listen", f"127.0.0.1:{self.admin_port}", *extra_args]
            if client_ca:
                extra += ["--client-ca", client_ca]
            self.proc = subprocess.Popen(
                WRAPPER + [BINARY, "serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file,
                 "--tls-cert", self.cert, "--tls-key", self.key,
                 "--kubeconfig", os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate")
                 if os.path.exists(os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate"))
                 else api.kubeconfig, "--shutdown-grace-seconds", "1",
                 "--lease-namespace", "nodegate", *extra],
                stdout=self.log, stderr=subprocess.STDOUT, env=env)
            ok, _ = eventually(lambda: os.path.exists(self.port_file) or self.proc.poll() is not None,
                               3 * WAIT_S)
            if self.proc.poll() is None or "Address already in use" not in self.read_log() or attempt == 2:
                break
            self.log.close()
        if self.proc.poll() is not None:
            raise RuntimeError("nodegate exited:\n" + self.read_log())
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read())
        self.ctx = ssl.create_default_context(cafile=self.cert)
        ready, _ = eventually(lambda: self.get("/readyz")[0] == 200, 3 * WAIT_S)
        if not ready:
            raise RuntimeError("nodegate never became ready:\n" + self.read_log())

    @staticmethod
    def call(c, method, path, body=None):
        """One request on connection @c, closed after: (status, body bytes); (0, b"") when
        nothing answers. @body (JSON-encodable) is sent as application/json."""
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return r.status, r.read()
        except OSError:
            return 0, b""
        finally:
            c.close()

    def webhook(self, method, path, body=None):
        """A request to the webhook port (HTTPS, no client certificate)."""
        return self.call(http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                                     timeout=20), method, path, body)

    def get(self, path):
        return self.webhook("GET", path)

    def admin(self, method, path, body=None):
        """A request to the admin listener (plain HTTP on loopback)."""
        return self.call(http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=20),
                         method, path, body)

    def cache(self):
        status, body = self.admin("GET", "/debug/cache")
        return json.loads(body) if status == 200 else None

    def metric(self, name, admin=False):
        """@name's value (name and labels as printed) on the webhook port's /metrics, or with
        @admin on the admin listener's, which alone carries the series that name objects."""
        _, body = self.admin("GET", "/metrics") if admin else self.get("/metrics")
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def register_webhook(self):
        with open(self.cert, "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        cfg = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "nodegate"},
               "webhooks": [{"name": "eviction.nodegate.io", "admissionReviewVersions": ["v1"],
                             "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail", "timeoutSeconds": 5,
                             "clientConfig": {"url": f"https://127.0.0.1:{self.port}/validate/eviction",
                                              "caBundle": ca},
                             "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                        "resources": ["pods/eviction"], "scope": "Namespaced"}]}]}
        code, body, _ = self.api.api("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
        assert code == 201, (code, body)

    def register_budget_webhook(self, resources):
        """nodegate as the validating webhook (/validate/budget) of the nodegate.io @resources."""
        with open(self.cert, "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        cfg = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "nodegate-budget"},
               "webhooks": [{"name": "budget.nodegate.io", "admissionReviewVersions": ["v1"],
                             "sideEffects": "None", "failurePolicy": "Fail",
                             "clientConfig": {"url": f"https://127.0.0.1:{self.port}/validate/budget",
                                              "caBundle": ca},
                             "rules": [{"apiGroups": ["nodegate.io"], "apiVersions": ["v1alpha1"],
                                        "operations": ["CREATE", "UPDATE"], "resources": resources}]}]}
        code, body, _ = self.api.api("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
        assert code == 201, (code, body)

    def register_author_webhook(self):
        """nodegate as the webhook that records who writes NodeDisruptionTemplates and
        NodeRemediations (/mutate/author) and checks it (/validate/authored), as
        manifests/base/webhooks.yaml registers it: a remediation acts with its authors' rights."""
        with open(self.cert, "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        rules = [{"apiGroups": ["nodegate.io"], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"],
                  "resources": ["nodedisruptiontemplates", "noderemediations", "noderemediations/status"]}]
        for kind, name, path in (("Mutating", "author.nodegate.io", "/mutate/author"),
                                 ("Validating", "authored.nodegate.io", "/validate/authored")):
            cfg = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind + "WebhookConfiguration",
                   "metadata": {"name": "nodegate-author"},
                   "webhooks": [{"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                                 "failurePolicy": "Fail", "timeoutSeconds": 5,
                                 "clientConfig": {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ca},
                                 "rules": rules}]}
            code, body, _ = self.api.api(
                "POST", f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}webhookconfigurations", cfg)
            assert code == 201, (code, body)

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3 * WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        return self.proc.returncode


def evict(api, name, ns="default", dry_run=True, user="admin"):
    """Asks the API server to evict; returns (HTTP status, body, response)."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
    q = "?dryRun=All" if dry_run else ""
    return api.api("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction{q}", body, user=user)


def allowed(api, name, ns="default"):
    code, _, _ = evict(api, name, ns)
    return code in (200, 201)


def denied(api, name, ns="default"):
    code, _, _ = evict(api, name, ns)
    return code == 429


def grant(api, name, nodes):
    code, body, _ = api.api("POST", ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                              "metadata": {"name": name}, "spec": {"nodeNames": nodes}})
    assert code == 201, (code, body)
    code, body, _ = api.api("PATCH", f"{ND_PATH}/{name}/status",
                            {"status": {"state": "Granted", "disruptedNodes": nodes}},
                            ctype="application/merge-patch+json")
    assert code == 200, (code, body)


def api_state(api):
    """The API server's pods and nodes, as nodegate's /debug/cache names them."""
    _, pods, _ = api.api("GET", "/api/v1/pods")
    _, nodes, _ = api.api("GET", "/api/v1/nodes")
    return ({(p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName"),
              json.dumps(p["metadata"].get("labels") or {}, sort_keys=True)) for p in pods["items"]},
            {n["metadata"]["name"] for n in nodes["items"]})


def cache_state(ng):
    c = ng.cache()
    if c is None:
        return None
    return ({(p["namespace"], p["name"], p["node"], json.dumps(p["labels"], sort_keys=True)) for p in c["pods"]},
            {n["name"] for n in c["nodes"]})


class E2ETest(unittest.TestCase):
    """A test API server with fixture F, and nodegate registered as its eviction webhook.
    Subclasses may set GENERATE (a --generate spec) to load a generated cluster instead."""

    GENERATE = None
    # The webhooks require the API server's client certificate (--client-ca), as deployed.
    CLIENT_CA = True
    NODEGATE_ARGS = ()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-e2e-")
        ca = None
        extra = []
        if self.CLIENT_CA:
            ca, crt, key = make_client_ca(self.tmp)
            extra = ["--webhook-client-cert", f"{crt}:{key}"]
        if self.GENERATE:
            self.api = ServerProcess(fixtures=CRDS, generate=self.GENERATE, start_timeout=300,
                                     extra_args=extra)
        else:
            self.api = ServerProcess(fixtures=CRDS + [FIXTURE], extra_args=extra)
        self.api.start()
        try:
            self.ng = Nodegate(self.api, self.tmp, client_ca=ca, extra_args=self.NODEGATE_ARGS)
            self.ng.register_webhook()
        except BaseException:
            # tearDown does not run when setUp fails: leave no server behind.
            if getattr(self, "ng", None):
                self.ng.stop()
            self.api.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise

    def tearDown(self):
        rc = self.ng.stop()
        log = self.ng.read_log() if rc != 0 or os.environ.get("NG_SHOW_LOG") or has_failed(self) else ""
        try:
            self.api.stop()   # audits the server: fails the test on anything it refused or dropped
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if log:
                print("\n--- nodegate log (tail) ---\n" + log, file=sys.stderr)
        self.assertEqual(rc, 0, "nodegate did not exit cleanly")

    def converged(self):
        return cache_state(self.ng) == api_state(self.api)


class LiveCacheTest(E2ETest):
    def test_E01_eviction_through_the_api_server_is_denied_with_429(self):
        code, body, resp = evict(self.api, "pod1", dry_run=False)
        self.assertEqual(code, 429, body)
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertIn('admission webhook "eviction.nodegate.io" denied the request: nodegate: cannot evict pod default/pod1', body["message"])
        self.assertEqual(resp.getheader("Retry-After"), "10")
        code, _, _ = self.api.api("GET", "/api/v1/namespaces/default/pods/pod1")
        self.assertEqual(code, 200, "the pod must still exist")
        # An unprotected pod is evicted (and deleted) for real.
        code, body, _ = evict(self.api, "web-1", dry_run=False)
        self.assertIn(code, (200, 201), body)

    def test_E02_grant_allows_eviction_promptly(self):
        self.assertTrue(denied(self.api, "pod1"))
        t0 = time.monotonic()
        grant(self.api, "maintenance-node1", ["node1"])
        ok, waited = eventually(lambda: allowed(self.api, "pod1"))
        print(f"\n  grant -> eviction allowed after {time.monotonic() - t0:.3f} s", file=sys.stderr)
        self.assertTrue(ok, "the grant never reached the decision")
        # Deleting the request takes the grant away again.
        code, _, _ = self.api.api("DELETE", f"{ND_PATH}/maintenance-node1")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: denied(self.api, "pod1"))
        self.assertTrue(ok)

    def test_label_changes_protect_and_unprotect_pods(self):
        self.assertTrue(allowed(self.api, "web-1"))
        t0 = time.monotonic()
        rc, out, err = self.api.kubectl("label", "--overwrite", "pod", "web-1", "app=db")
        self.assertEqual(rc, 0, err)
        ok, _ = eventually(lambda: denied(self.api, "web-1"))
        print(f"\n  label -> protected after {time.monotonic() - t0:.3f} s", file=sys.stderr)
        self.assertTrue(ok)
        rc, out, err = self.api.kubectl("label", "pod", "pod1", "app-")
        self.assertEqual(rc, 0, err)
        ok, _ = eventually(lambda: allowed(self.api, "pod1"))
        self.assertTrue(ok)

    def test_E11_kubectl_drain_waits_for_a_grant_then_completes(self):
        env = dict(os.environ, KUBECONFIG=self.api.kubeconfig, HOME=self.api.home)
        drain = subprocess.Popen(["kubectl", "drain", "node1", "--ignore-daemonsets",
                                  "--delete-emptydir-data", "--timeout=60s"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            # The eviction of pod1 is answered 429 again and again: the drain waits.
            ok, _ = eventually(lambda: any(c["request"].get("name") == "pod1"
                                           and c.get("result", {}).get("allowed") is False
                                           for c in self.webhook_calls()), timeout=20)
            self.assertTrue(ok, "kubectl drain never asked for the eviction")
            time.sleep(1)
            self.assertIsNone(drain.poll(), "the drain must wait while the node is not granted")
            t0 = time.monotonic()
            code, body, _ = self.api.api("POST", ND_PATH, {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                "metadata": {"name": "drain-node1"}, "spec": {"nodeNames": ["node1"]}})
            self.assertEqual(code, 201, body)
            out, _ = drain.communicate(timeout=30)
            took = time.monotonic() - t0
            print(f"\n  NodeDisruption created -> drain done in {took:.1f} s", file=sys.stderr)
            self.assertEqual(drain.returncode, 0, out.decode())
            self.assertIn(b"evicted", out)
            # kubectl retries every 5 s; a grant that never reached the decision would run into
            # the drain's own 60 s timeout instead.
            self.assertLess(took, 30, "the drain must finish soon after the grant")
        finally:
            if drain.poll() is None:
                drain.kill()
                drain.wait(10)

    def webhook_calls(self):
        code, body, _ = self.api.control("webhook-calls", method="GET")
        return body.get("calls", []) if code == 200 else []

    def test_E10_budget_and_volume_changes_reach_decisions(self):
        # A budget selecting pods by PVC, and a new pod mounting such a PVC.
        adb = {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
               "metadata": {"name": "cache", "namespace": "default"},
               "spec": {"pvcSelector": {"matchLabels": {"tier": "cache"}}, "maxDisruptions": 1}}
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "cache-data", "namespace": "default", "labels": {"tier": "cache"}},
               "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-storage",
                        "volumeName": "node2-pv-local", "resources": {"requests": {"storage": "1Gi"}}}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cache-0", "namespace": "default"},
               "spec": {"nodeName": "node2", "containers": [{"name": "c", "image": "redis"}],
                        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "cache-data"}}]}}
        for path, obj in ((ADB_PATH, adb), ("/api/v1/namespaces/default/persistentvolumeclaims", pvc),
                          ("/api/v1/namespaces/default/pods", pod)):
            code, body, _ = self.api.api("POST", path, obj)
            self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: denied(self.api, "cache-0"))
        self.assertTrue(ok, "a pod protected through its PVC must be denied")
        code, _, _ = self.api.api("DELETE", f"{ADB_PATH}/cache")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: allowed(self.api, "cache-0"))
        self.assertTrue(ok, "deleting the budget must unprotect the pod")
        code, _, _ = self.api.api("DELETE", f"{ADB_PATH}/db")
        ok, _ = eventually(lambda: allowed(self.api, "pod1"))
        self.assertTrue(ok)

    def auto_requests(self):
        code, body, _ = self.api.api("GET", ND_PATH + "?labelSelector=nodegate.io%2Fauto-request%3Dtrue")
        return body.get("items", []) if code == 200 else []

    def test_E08_E07_auto_request_asks_for_the_node_once_never_on_dry_run(self):
        # Hold node1's pool at zero so the request the eviction asks for stays Pending.
        code, body, _ = self.api.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": "hold"},
            "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}}, "maxDisruptedNodes": 0}})
        self.assertEqual(code, 201, body)
        code, body, _ = self.api.api("POST", "/apis/nodegate.io/v1alpha1/nodegateconfigs", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
            "spec": {"eviction": {"autoRequest": True}}})
        self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodegateconfigs")
                           and (self.ng.cache() or {}).get("nodedisruptionbudgets"))
        self.assertTrue(ok)
        # E08: a dry run is denied and asks for nothing.
        code, body, _ = evict(self.api, "pod1", dry_run=True)
        self.assertEqual(code, 429, body)
        self.assertIn("nodegate requests the disruption for you (NodeDisruption auto-node1)", body["message"])
        time.sleep(1)
        self.assertEqual(self.auto_requests(), [], "a dry run must not create a NodeDisruption")
        self.assertEqual(self.ng.metric('nodegate_auto_requests_total{result="created"}'), 0)
        # E07: a real one is denied and asks for node1, as the evicting user.
        code, body, _ = evict(self.api, "pod1", dry_run=False)
        self.assertEqual(code, 429, body)
        reqs, waited = eventually(self.auto_requests)
        self.assertTrue(reqs, "the denied eviction never asked for a disruption")
        print(f"\n  denied eviction -> NodeDisruption created in {waited:.3f} s", file=sys.stderr)
        nd = reqs[0]
        self.assertEqual(nd["metadata"]["name"], "auto-node1")
        self.assertEqual(nd["spec"]["nodeNames"], ["node1"])
        self.assertEqual(nd["spec"]["requestor"], "admin")
        self.assertTrue(nd["spec"]["retry"]["enabled"])
        pending, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/auto-node1")[1]
                                .get("status", {}).get("state") == "Pending")
        self.assertTrue(pending, "the requested disruption must wait for the budget")
        # More denials, from this replica or another, ask for nothing more.
        for user in ("admin", "alice"):
            code, body, _ = evict(self.api, "pod1", dry_run=False, user=user)
            self.assertIn(code, (403, 429), body)
        time.sleep(1)
        self.assertEqual(len(self.auto_requests()), 1)
        self.assertEqual(self.ng.metric('nodegate_auto_requests_total{result="created"}'), 1)
        # Once the budget allows it, the request is granted and the eviction goes through.
        code, body, _ = self.api.api("DELETE", "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets/hold")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: allowed(self.api, "pod1"))
        self.assertTrue(ok, "the auto request must be granted once the budget is gone")

    def start_drain(self, node):
        env = dict(os.environ, KUBECONFIG=self.api.kubeconfig, HOME=self.api.home)
        return subprocess.Popen(["kubectl", "drain", node, "--ignore-daemonsets",
                                 "--delete-emptydir-data", "--timeout=60s"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def stop_drain(self, drain):
        if drain.poll() is None:
            drain.kill()
        drain.wait(10)

    def end_event(self, name, reason):
        code, body, _ = self.api.api("GET", "/api/v1/namespaces/default/events")
        return [e for e in body.get("items", []) if e.get("involvedObject", {}).get("name") == name
                and e.get("reason") == reason]

    def auto_request(self):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/auto-node1")
        return body if code == 200 else None

    def test_L07_auto_request_ends_when_its_evictor_is_done(self):
        path = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
        code, body, _ = self.api.api("POST", path, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
            "spec": {"eviction": {"autoRequest": True, "autoRequestIdleSeconds": 2}}})
        self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodegateconfigs"))
        self.assertTrue(ok)
        # kubectl drain: the denied eviction of pod1 creates auto-node1; then the evictor stops
        # (killed before its next retry): unused for 2 s, the request is deleted.
        drain = self.start_drain("node1")
        try:
            nd, waited = eventually(self.auto_request, timeout=20)
            self.assertTrue(nd, "kubectl drain never caused auto-node1")
        finally:
            self.stop_drain(drain)
        t0 = time.monotonic()
        gone, _ = eventually(lambda: self.auto_request() is None, timeout=10)
        took = time.monotonic() - t0
        print(f"\n  L07: evictor stopped -> auto-node1 deleted idle in {took:.1f} s", file=sys.stderr)
        self.assertTrue(gone, "an idle auto request must be deleted")
        self.assertTrue(self.end_event("auto-node1", "AutoRequestIdle"))
        # kubectl uncordon after a drain: the request ends at once. A long idle time now, so
        # only the uncordon can end it.
        code, body, _ = self.api.api("PATCH", f"{path}/default",
                                     {"spec": {"eviction": {"autoRequestIdleSeconds": 3600}}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        time.sleep(0.3)
        drain = self.start_drain("node1")
        try:
            nd, _ = eventually(lambda: (self.auto_request() or {}).get("metadata", {})
                               .get("annotations", {}).get("nodegate.io/node-cordoned") == "true",
                               timeout=20)
            self.assertTrue(nd, f"auto-node1 never recorded its node cordoned: {self.auto_request()}")
        finally:
            self.stop_drain(drain)
        rc, _, err = self.api.kubectl("uncordon", "node1")
        self.assertEqual(rc, 0, err)
        t0 = time.monotonic()
        gone, _ = eventually(lambda: self.auto_request() is None, timeout=10)
        print(f"  L07: uncordon -> auto-node1 deleted in {time.monotonic() - t0:.2f} s", file=sys.stderr)
        self.assertTrue(gone, "uncordoning the node must end its auto request")
        self.assertTrue(self.end_event("auto-node1", "NodeUncordoned"))
        self.assertEqual(self.ng.metric('nodegate_requests_ended_total{reason="AutoRequestIdle"}'), 1)
        self.assertEqual(self.ng.metric('nodegate_requests_ended_total{reason="NodeUncordoned"}'), 1)

    def test_E06_E09_nodegateconfig_changes_the_eviction_mode_live(self):
        path = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
        ngc = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
               "spec": {"eviction": {"mode": "Warn"}}}
        code, body, _ = self.api.api("POST", path, ngc)
        self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: allowed(self.api, "pod1"))
        self.assertTrue(ok, "Warn mode must allow the protected pod")
        code, body, resp = evict(self.api, "pod1")
        self.assertIn("default/db", resp.getheader("Warning") or "")
        # Back to Enforce, with alice exempt.
        code, body, _ = self.api.api("PATCH", f"{path}/default",
                                     {"spec": {"eviction": {"mode": "Enforce", "exemptUsers": ["alice"]}}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: denied(self.api, "pod1"))
        self.assertTrue(ok)
        rbac = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "alice-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "User", "name": "alice"}]}
        code, body, _ = self.api.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rbac)
        self.assertEqual(code, 201, body)
        code, body, _ = evict(self.api, "pod1", user="alice")
        self.assertIn(code, (200, 201), body)

    def test_cache_matches_the_api_server_after_many_changes(self):
        for i in range(30):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"batch-{i}", "namespace": "default", "labels": {"i": str(i)}},
                   "spec": {"nodeName": f"node{1 + i % 3}", "containers": [{"name": "c", "image": "busybox"}]}}
            code, body, _ = self.api.api("POST", "/api/v1/namespaces/default/pods", pod)
            self.assertEqual(code, 201, body)
        for i in range(0, 30, 3):
            self.api.api("DELETE", f"/api/v1/namespaces/default/pods/batch-{i}")
        rc, _, err = self.api.kubectl("label", "--overwrite", "pods", "-l", "i", "wave=2")
        self.assertEqual(rc, 0, err)
        ok, waited = eventually(self.converged)
        self.assertTrue(ok, f"cache never matched the API server: {cache_state(self.ng)} vs {api_state(self.api)}")
        self.assertGreater(self.ng.metric('nodegate_watch_events_total{resource="pods",type="ADDED"}'), 0)
        # The pool holds at least the namespace, the nodes and the label keys and values above.
        self.assertGreater(self.ng.metric("nodegate_cache_intern_strings"), 30)


class FaultTest(E2ETest):
    def change(self, tag):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{tag}", "namespace": "default",
                                                               "labels": {"app": "db"}},
               "spec": {"nodeName": "node3", "containers": [{"name": "c", "image": "busybox"}]}}
        code, body, _ = self.api.api("POST", "/api/v1/namespaces/default/pods", pod)
        self.assertEqual(code, 201, body)
        rc, _, err = self.api.kubectl("label", "--overwrite", "pod", "pod1", f"tag={tag}")
        self.assertEqual(rc, 0, err)

    def test_dropped_watches_resume_without_missing_updates(self):
        for round_ in range(3):
            code, _, _ = self.api.control("drop-watches")
            self.assertEqual(code, 200)
            self.change(f"drop{round_}")
        ok, _ = eventually(self.converged)
        self.assertTrue(ok)
        self.assertTrue(denied(self.api, "p-drop2"))

    def test_expired_history_relists_and_converges(self):
        relists0 = self.ng.metric('nodegate_watch_relists_total{resource="pods"}')
        code, _, _ = self.api.control("compact")
        self.assertEqual(code, 200)
        self.api.control("drop-watches")
        self.change("gone")
        code, _, _ = self.api.control("compact")
        ok, _ = eventually(self.converged)
        self.assertTrue(ok)
        ok, _ = eventually(lambda: self.ng.metric('nodegate_watch_relists_total{resource="pods"}') > relists0)
        self.assertTrue(ok, "a compacted history must make nodegate relist")
        self.assertTrue(denied(self.api, "p-gone"))

    def test_api_server_restart_keeps_decisions_current(self):
        code, _, _ = self.api.control("restart", {"downSeconds": 1})
        self.assertIn(code, (200, 202))
        time.sleep(0.2)
        def up():
            try:
                return self.api.api("GET", "/version", user=None)[0] == 200
            except OSError:
                return False  # refused while the API server is down

        ok, _ = eventually(up, timeout=10)
        self.assertTrue(ok)
        self.change("restart")
        ok, _ = eventually(self.converged, timeout=15)  # reconnect backoff starts at 0.8 s
        self.assertTrue(ok)
        self.assertTrue(denied(self.api, "p-restart"))
        # Whether a reconnect hit the down window (and counted as a restart) depends on timing;
        # what matters is that nothing was missed, checked above.


class StreamedListTest(E2ETest):
    """Lists are streamed (a watch with sendInitialEvents, WatchList) where the API server offers
    it; a server that refuses it gets pages, and nothing is missed either way."""

    def listed(self):
        with open(self.ng.log_path, encoding="utf-8", errors="replace") as f:
            lines = [json.loads(l) for l in f if l.startswith("{")]
        return lines

    def test_lists_are_streamed_then_paged_once_the_server_refuses(self):
        ok, _ = eventually(self.converged)
        self.assertTrue(ok)
        first = {l["resource"]: l for l in self.listed() if l.get("msg") == "listed"}
        self.assertIn("pods", first)
        self.assertTrue(all(l.get("method") == "stream" for l in first.values()), first)
        self.assertEqual(first["pods"]["objects"], len(self.api.api("GET", "/api/v1/pods")[1]["items"]))
        # The API server loses the feature (a downgrade, another replica of the API server):
        # the next relist is refused and goes in pages, and what changed meanwhile arrives.
        code, _, _ = self.api.control("watch-list", {"enabled": False})
        self.assertEqual(code, 200)
        relists0 = self.ng.metric('nodegate_watch_relists_total{resource="pods"}')
        self.api.control("compact")
        self.api.control("drop-watches")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-paged", "namespace": "default",
                                                               "labels": {"app": "db"}},
               "spec": {"nodeName": "node3", "containers": [{"name": "c", "image": "busybox"}]}}
        code, body, _ = self.api.api("POST", "/api/v1/namespaces/default/pods", pod)
        self.assertEqual(code, 201, body)
        self.api.control("compact")
        ok, _ = eventually(lambda: self.ng.metric('nodegate_watch_relists_total{resource="pods"}') > relists0)
        self.assertTrue(ok, "a compacted history must make nodegate relist")
        ok, _ = eventually(self.converged)
        self.assertTrue(ok, f"{cache_state(self.ng)} vs {api_state(self.api)}")
        lines = self.listed()
        refused = [l for l in lines if l.get("msg", "").startswith("the API server does not stream lists")]
        self.assertEqual(len(refused), 1, "said once, not per resource")
        self.assertEqual(refused[0]["http"], 422)
        paged = [l for l in lines if l.get("msg") == "listed" and l["resource"] == "pods" and "pages" in l]
        self.assertTrue(paged, "the pods were listed again in pages")
        self.assertTrue(denied(self.api, "p-paged"))


class PagedListTest(E2ETest):
    """--watch-list=false: every list in pages of 500, never a stream."""

    NODEGATE_ARGS = ("--watch-list=false",)

    def test_lists_go_in_pages_when_told(self):
        ok, _ = eventually(self.converged)
        self.assertTrue(ok)
        with open(self.ng.log_path, encoding="utf-8", errors="replace") as f:
            listed = [json.loads(l) for l in f if l.startswith("{") and '"msg":"listed"' in l]
        self.assertTrue(listed)
        self.assertTrue(all(l.get("pages") == 1 and "method" not in l for l in listed), listed)


class RelistTest(E2ETest):
    """A relist of the pods, slowed down page by page, must not hold up the other resources."""

    GENERATE = "nodes=10,pods-per-node=150"  # 1,500 pods: three pages of 500

    def test_a_slow_pods_relist_does_not_delay_other_resources(self):
        # Every pods request (list page, streamed list or watch) now takes 1.5 s: the relist
        # below takes at least that.
        code, _, _ = self.api.control("faults", {"path": "^/api/v1/pods$", "method": "GET",
                                                 "latencyMs": 1500, "count": -1})
        self.assertEqual(code, 200)
        relists0 = self.ng.metric('nodegate_watch_relists_total{resource="pods"}')
        self.api.control("compact")
        self.api.control("drop-watches")  # every watch resumes into 410: each resource relists
        # Only the relist can bring this pod: it is created after the history was dropped.
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-relist", "namespace": "default"},
               "spec": {"nodeName": "node-00001", "containers": [{"name": "c", "image": "busybox"}]}}
        code, body, _ = self.api.api("POST", "/api/v1/namespaces/default/pods", pod)
        self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: self.ng.metric('nodegate_watch_relists_total{resource="pods"}') > relists0)
        self.assertTrue(ok, "the pods watch never expired")
        time.sleep(0.5)  # the other resources' short relists are done; the pods one is paging
        t0 = time.monotonic()
        code, body, _ = self.api.api("POST", ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                                       "metadata": {"name": "during-relist"},
                                                       "spec": {"nodeNames": ["node-00002"]}})
        self.assertEqual(code, 201, body)
        rc, _, err = self.api.kubectl("label", "--overwrite", "node", "node-00003", "relist=during")
        self.assertEqual(rc, 0, err)

        def seen():
            c = self.ng.cache()
            if c is None:
                return None
            nd = any(d["name"] == "during-relist" for d in c["nodedisruptions"])
            node = any(n["name"] == "node-00003" and n["labels"].get("relist") == "during" for n in c["nodes"])
            pod = any(p["name"] == "p-relist" for p in c["pods"])
            return (nd, node, pod) if (nd and node) or pod else None

        found, _ = eventually(seen)
        self.assertIsNotNone(found, "neither the changes nor the relist reached the cache")
        nd, node, pod = found
        print(f"\n  NodeDisruption and Node label visible {time.monotonic() - t0:.3f} s into the pods relist",
              file=sys.stderr)
        # Both must be published while the pods relist is still paging, i.e. before the pod
        # only that relist can bring shows up.
        self.assertTrue(nd and node and not pod,
                        f"other resources waited for the pods relist: nd={nd} node={node} relisted pod={pod}")
        self.api.api("DELETE", "/_control/faults")
        ok, _ = eventually(lambda: any(p["name"] == "p-relist" for p in (self.ng.cache() or {}).get("pods", [])),
                           timeout=3 * WAIT_S)
        self.assertTrue(ok, "the pods relist never finished")
        ok, _ = eventually(self.converged)
        self.assertTrue(ok, "the cache does not match the API server after the relist")


if __name__ == "__main__":
    unittest.main()
