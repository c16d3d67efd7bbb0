#!/usr/bin/env python3
"""serve --self-signed against the test API server: the CA kept in a Secret and shared by the
replicas, the caBundle written into the labelled webhook configurations only, and the serving
certificate renewed while eviction reviews keep coming over new and kept-alive connections (the
API server calling the webhook through its Service, verifying it against the caBundle), with no
request failing.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT, NG_WRAPPER (e.g. valgrind), as the other
e2e suites."""
import base64
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import BINARY, CRDS, ROOT, WAIT_S, WRAPPER, Nodegate, eventually  # noqa: E402
from ktestapi.testing import ServerProcess  # noqa: E402

# Short enough that a renewal (at two thirds) comes every 8 s.
CERT_SECONDS = 12
SNI = "nodegate.nodegate.svc"
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
SECRET_PATH = "/api/v1/namespaces/nodegate/secrets/nodegate-ca"

FIXTURE = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default"},
     "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "i"}]},
     "status": {"phase": "Running"}},
]}


def log(msg):
    print(f"  {msg}", flush=True)


def eviction_hook(name, labelled, ca=None):
    hook = {"name": "eviction.nodegate.io", "admissionReviewVersions": ["v1"],
            "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail", "timeoutSeconds": 5,
            "clientConfig": {"service": {"namespace": "nodegate", "name": "nodegate",
                                         "path": "/validate/eviction", "port": 443}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods/eviction"], "scope": "Namespaced"}]}
    if ca:
        hook["clientConfig"]["caBundle"] = ca
    meta = {"name": name}
    if labelled:
        meta["labels"] = {"app.kubernetes.io/name": "nodegate"}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": meta, "webhooks": [hook]}


class Replica:
    """nodegate serve --self-signed with its own log and port."""

    def __init__(self, api, tmp, tag):
        self.port_file = os.path.join(tmp, f"{tag}.port")
        self.log_path = os.path.join(tmp, f"{tag}.log")
        self.log = open(self.log_path, "wb")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        self.proc = subprocess.Popen(
            WRAPPER + [BINARY, "serve", "--self-signed", "--cert-seconds", str(CERT_SECONDS),
                       "--listen", "127.0.0.1:0", "--port-file", self.port_file,
                       "--admin-listen", "off", "--gate=false", "--identity", tag,
                       "--kubeconfig", os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate"),
                       "--shutdown-grace-seconds", "1", "--lease-namespace", "nodegate"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        ok, _ = eventually(lambda: os.path.exists(self.port_file) or self.proc.poll() is not None,
                           3 * WAIT_S)
        if self.proc.poll() is not None or not ok:
            raise RuntimeError(f"{tag} did not start:\n" + self.read_log())
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read())

    def read_log(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-6000:]

    def lines(self, msg):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            out = []
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == msg:
                    out.append(rec)
            return out

    stop = Nodegate.stop


class SelfSignedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-selfsigned-")
        fixture = os.path.join(self.tmp, "cluster.json")
        with open(fixture, "w", encoding="utf-8") as f:
            json.dump(FIXTURE, f)
        # The rights --self-signed needs are opt-in (the default overlay includes them).
        rbac = os.path.join(ROOT, "manifests", "rbac", "self-signed", "self-signed.json")
        self.api = ServerProcess(fixtures=CRDS + [rbac, fixture], start_timeout=300)
        self.api.start()
        self.replicas = []

    def tearDown(self):
        for r in self.replicas:
            code = r.stop()
            if code not in (0, None):
                print(r.read_log())
            self.assertEqual(code, 0, "nodegate must exit 0 on SIGTERM")
        self.api.stop()

    def replica(self, tag):
        r = Replica(self.api, self.tmp, tag)
        self.replicas.append(r)
        return r

    def ca_pem(self):
        code, body, _ = self.api.api("GET", SECRET_PATH)
        if code != 200:
            return None
        return base64.b64decode(body["data"]["ca.crt"]).decode()

    def bundle(self, name):
        code, body, _ = self.api.api("GET", f"{VWC_PATH}/{name}")
        self.assertEqual(code, 200, body)
        return body["webhooks"][0]["clientConfig"].get("caBundle")

    def test_ca_shared_bundle_patched_renewed_under_load(self):
        for obj in (eviction_hook("nodegate-eviction", True),
                    eviction_hook("someone-else", False, ca=base64.b64encode(b"not ours").decode())):
            code, body, _ = self.api.api("POST", VWC_PATH, obj)
            self.assertEqual(code, 201, body)
        # The other configuration points at nodegate too but must not be touched; Ignore so it
        # does not fail the evictions.
        code, body, _ = self.api.api("PATCH", f"{VWC_PATH}/someone-else",
                                     {"webhooks": [dict(eviction_hook("x", False)["webhooks"][0],
                                                        failurePolicy="Ignore",
                                                        clientConfig={"url": "https://127.0.0.1:1/x",
                                                                      "caBundle": base64.b64encode(b"not ours").decode()})]},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        a = self.replica("replica-a")
        self.api.control("service-endpoint", {"service": "nodegate/nodegate:443",
                                              "address": f"127.0.0.1:{a.port}"})
        ca = self.ca_pem()
        self.assertTrue(ca and "BEGIN CERTIFICATE" in ca, "the CA Secret was not created")
        self.assertEqual(len(a.lines("CA created")), 1, a.read_log())
        want = base64.b64encode(ca.encode()).decode()
        ok, _ = eventually(lambda: self.bundle("nodegate-eviction") == want, WAIT_S, 0.1)
        self.assertTrue(ok, "caBundle never written:\n" + a.read_log())
        self.assertEqual(self.bundle("someone-else"), base64.b64encode(b"not ours").decode(),
                         "a configuration without nodegate's label was changed")

        # A second replica uses the same CA: no second CA, its certificate verifies with it.
        b = self.replica("replica-b")
        self.assertEqual(b.lines("CA created"), [], b.read_log())
        self.assertEqual(self.ca_pem(), ca)
        ctx = ssl.create_default_context(cadata=ca)
        with socket.create_connection(("127.0.0.1", b.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=SNI) as tls:
                self.assertTrue(tls.getpeercert())

        # Load through two renewals: evictions through the API server (which calls nodegate by
        # its Service and verifies it against the caBundle), and direct reviews on one
        # kept-alive connection and on new ones.
        with open(os.path.join(os.environ.get("NG_SOURCE_ROOT", "."), "examples",
                               "eviction-review.json"), "rb") as f:
            review = f.read()
        stop = threading.Event()
        results = {"api": [0, []], "kept": [0, []], "new": [0, []]}
        serials = set()

        def api_load():
            body = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "web-1", "namespace": "default"}}
            while not stop.is_set():
                code, resp, _ = self.api.api(
                    "POST", "/api/v1/namespaces/default/pods/web-1/eviction?dryRun=All", body)
                results["api"][0] += 1
                if code not in (200, 201):
                    results["api"][1].append((code, str(resp)[:200]))
                time.sleep(0.02)

        def direct(kept):
            key = "kept" if kept else "new"
            conn = None
            while not stop.is_set():
                try:
                    if conn is None or not kept:
                        conn = http.client.HTTPSConnection("127.0.0.1", a.port, timeout=5,
                                                           context=ctx)
                        conn.connect()
                    conn.request("POST", "/validate/eviction", body=review,
                                 headers={"Content-Type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    results[key][0] += 1
                    if r.status != 200 or b'"allowed"' not in data:
                        results[key][1].append((r.status, data[:200]))
                    if not kept:
                        serials.add(conn.sock.getpeercert()["serialNumber"])
                        conn.close()
                except (OSError, ssl.SSLError, http.client.HTTPException) as e:
                    results[key][0] += 1
                    results[key][1].append(("error", repr(e)))
                    conn = None
                time.sleep(0.01)
            if conn is not None:
                conn.close()

        # ssl verification against the SNI name: a context bound to the name.
        ctx = ssl.create_default_context(cadata=ca)
        orig_wrap = ctx.wrap_socket
        ctx.wrap_socket = lambda sock, server_hostname=None, **kw: orig_wrap(
            sock, server_hostname=SNI, **kw)
        threads = [threading.Thread(target=api_load), threading.Thread(target=direct, args=(True,)),
                   threading.Thread(target=direct, args=(False,))]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        ok, _ = eventually(lambda: len(a.lines("serving certificate renewed")) >= 2,
                           3 * CERT_SECONDS + WAIT_S, 0.2)
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join(30)
        renewals = a.lines("serving certificate renewed")
        log(f"renewals of replica-a in {time.monotonic() - t0:.1f} s: {len(renewals)}; "
            f"serving certificates seen on new connections: {len(serials)}")
        for k, (n, failures) in results.items():
            log(f"{k}: {n} requests, {len(failures)} failed {failures[:3]}")
        self.assertTrue(ok, "no two renewals:\n" + a.read_log())
        self.assertGreaterEqual(len(serials), 3, "new connections never saw a renewed certificate")
        for k, (n, failures) in results.items():
            self.assertGreater(n, 20, f"{k}: too few requests to mean anything")
            self.assertEqual(failures, [], f"{k}: requests failed across renewals")
        self.assertFalse(any(r.get("new_ca") for r in renewals))
        self.assertEqual(self.bundle("nodegate-eviction"), want)
        # The expiry metric follows the renewals (admin listener off: the webhook port serves it).
        conn = http.client.HTTPSConnection("127.0.0.1", a.port, timeout=5, context=ctx)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        exp = [float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("nodegate_certificate_expiry_timestamp_seconds")]
        self.assertTrue(exp and exp[0] > time.time(), text[-500:])

    def test_flags_refused_together(self):
        env = dict(os.environ)
        p = subprocess.run([BINARY, "serve", "--self-signed", "--tls-cert", "x", "--tls-key", "y"],
                           capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--self-signed", p.stderr)
        p = subprocess.run([BINARY, "serve", "--self-signed", "--ca-secret", "nodegate-ca"],
                           capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("NAMESPACE/NAME", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
