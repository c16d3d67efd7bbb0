#!/usr/bin/env python3
"""Integration: the real nodegate binary on loopback, spoken to over HTTPS (W01-W06, E01, E02,
E10 end to end, metrics, logs, reload and shutdown). Every wait is bounded.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository), optional NG_WRAPPER
(a command prefix such as "valgrind --leak-check=full --error-exitcode=99")."""
import base64
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("NODEGATE", os.path.join(ROOT, "build", "cmd", "nodegate"))
WRAPPER = shlex.split(os.environ.get("NG_WRAPPER", ""))
# Under valgrind everything is ~50x slower; scale the bounded waits, not the assertions.
SLOW = 20 if WRAPPER else 1


def eventually_value(fn, timeout):
    """Polls fn until it returns a truthy value: (value, seconds) or (None, seconds)."""
    t0 = time.monotonic()
    while True:
        v = fn()
        if v or time.monotonic() - t0 > timeout:
            return v, time.monotonic() - t0
        time.sleep(0.05)


def make_cert(d):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", os.path.join(d, "key.pem"),
                    "-out", os.path.join(d, "cert.pem"), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=30)
    return os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")


def review(name, ns="default", uid="uid-1", user="alice", groups=("system:authenticated",)):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
        "name": name, "namespace": ns, "operation": "CREATE",
        "userInfo": {"username": user, "groups": list(groups)},
        "object": {"kind": "Eviction", "apiVersion": "policy/v1",
                   "metadata": {"name": name, "namespace": ns}},
        "dryRun": False}}


def to_yaml(v, indent=0):
    """v as block-style YAML, the way `kubectl get -o yaml` writes it: plain scalars where YAML
    reads them back as the same string, quoted otherwise."""
    pad = "  " * indent
    if isinstance(v, dict):
        if not v:
            return " {}\n"
        return "\n" + "".join(f"{pad}{scalar_yaml(k)}:{to_yaml(x, indent + 1)}" for k, x in v.items())
    if isinstance(v, list):
        if not v:
            return " []\n"
        return "\n" + "".join(f"{pad}-{to_yaml(x, indent + 1)}" for x in v)
    return " " + scalar_yaml(v) + "\n"


def scalar_yaml(v):
    if isinstance(v, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", v) and v.lower() not in (
            "y", "n", "yes", "no", "on", "off", "true", "false", "null"):
        return v
    return json.dumps(v, ensure_ascii=False)


class Server:
    """One nodegate process with its own certificate, snapshot copy and log file."""

    def __init__(self, tmp, extra_args=(), cert=None, key=None):
        self.tmp = tmp
        self.cert, self.key = (cert, key) if cert else make_cert(tmp)
        self.snapshot = os.path.join(tmp, "cluster.json")
        shutil.copy(os.path.join(ROOT, "examples", "demo-cluster.json"), self.snapshot)
        self.port_file = os.path.join(tmp, "port")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)  # a previous server's port
        self.log_path = os.path.join(tmp, "nodegate.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            WRAPPER + [BINARY, "serve", "--listen", "127.0.0.1:0", "--tls-cert", self.cert,
                       "--tls-key", self.key, "--snapshot", self.snapshot, "--port-file",
                       self.port_file, "--shutdown-grace-seconds", "1",
                       "--admin-listen", "127.0.0.1:0", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20 * SLOW
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("nodegate did not start:\n" + self.read_log())
            time.sleep(0.05)
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read().strip())
        self.ctx = ssl.create_default_context(cafile=self.cert)

    def conn(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                           timeout=10 * SLOW)

    def request(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r, data

    def evict(self, name, **kw):
        r, data = self.request("POST", "/validate/eviction?timeout=10s",
                               json.dumps(review(name, **kw)),
                               {"Content-Type": "application/json"})
        return r, json.loads(data)

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def log_lines(self):
        out = []
        for line in self.read_log().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def sanitized(self):
        """True under ASan (its quarantine keeps freed memory resident on purpose) or a wrapper
        such as valgrind (it manages memory itself): resident-memory checks mean nothing there.
        The plain release run checks them."""
        if WRAPPER:
            return True
        with open(f"/proc/{self.proc.pid}/maps", encoding="utf-8") as f:
            return "libasan" in f.read()

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()
        return self.proc.returncode


class WebhookTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ng-it-")
        cls.srv = Server(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc != 0:
            raise AssertionError(f"nodegate exited with {rc}")

    def assert_serving(self):
        r, body = self.srv.evict("web-1", uid="still-serving")
        self.assertEqual(r.status, 200)
        self.assertEqual(body["response"]["uid"], "still-serving")

    def test_W01_valid_review_gets_v1_admission_review(self):
        r, body = self.srv.evict("web-1", uid="705ab4f5-6393-11e8-b7cc-42010a800002")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Type"), "application/json")
        self.assertEqual(body["apiVersion"], "admission.k8s.io/v1")
        self.assertEqual(body["kind"], "AdmissionReview")
        self.assertEqual(body["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002")
        self.assertTrue(body["response"]["allowed"])

    def test_W01_keep_alive_connection_serves_many_reviews(self):
        c = self.srv.conn()
        try:
            for i in range(50):
                r, data = self.srv.request("POST", "/validate/eviction",
                                           json.dumps(review("pod1", uid=f"ka-{i}")),
                                           {"Content-Type": "application/json"}, conn=c)
                self.assertEqual(r.status, 200)
                self.assertEqual(json.loads(data)["response"]["uid"], f"ka-{i}")
        finally:
            c.close()

    def test_W02_malformed_bodies_get_400_with_a_message(self):
        cases = [(b"not json", "body is not valid JSON"),
                 (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', "request: required"),
                 (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "request": {"operation": "CREATE"}}).encode(), "request.uid: required"),
                 (b"", "body is not valid JSON"),
                 (b"[" * 100000, "nested deeper than 64")]
        for body, msg in cases:
            r, data = self.srv.request("POST", "/validate/eviction", body,
                                       {"Content-Type": "application/json"})
            self.assertEqual(r.status, 400, body[:40])
            status = json.loads(data)
            self.assertEqual(status["kind"], "Status")
            self.assertEqual(status["code"], 400)
            self.assertIn(msg, status["message"])
        self.assert_serving()

    def post_chunked(self, total_bytes):
        c = self.srv.conn()
        c.putrequest("POST", "/validate/eviction")
        c.putheader("Content-Type", "application/json")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        chunk = b" " * 65536
        try:
            for _ in range(total_bytes // len(chunk)):
                c.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            c.send(b"0\r\n\r\n")
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def test_W03_oversized_body_gets_413_and_memory_does_not_grow(self):
        big = b"{" + b" " * (4 * 1024 * 1024) + b"}"

        def one_round():
            r, data = self.srv.request("POST", "/validate/eviction", big,
                                       {"Content-Type": "application/json"})
            self.assertEqual(r.status, 413)
            self.assertIn("larger than 3 MiB", json.loads(data)["message"])
            self.assertEqual(json.loads(data)["reason"], "RequestEntityTooLarge")
            # Chunked: no Content-Length, so the cap is enforced while reading.
            status, data = self.post_chunked(4 * 1024 * 1024)
            self.assertEqual(status, 413)
            self.assertIn("larger than 3 MiB", json.loads(data)["message"])

        for _ in range(2):  # warm up every server thread's buffers
            one_round()
        before = self.srv.rss_kib()
        for _ in range(10):
            one_round()
        after = self.srv.rss_kib()
        # 80 MiB went in; resident memory must not follow it.
        if not self.srv.sanitized():
            self.assertLess(after - before, 1024, f"RSS grew from {before} to {after} KiB")
        self.assert_serving()

    def test_W04_wrong_content_type_gets_415(self):
        for ct in ("text/plain", "application/yaml", None):
            headers = {"Content-Type": ct} if ct else {}
            r, data = self.srv.request("POST", "/validate/eviction", json.dumps(review("pod1")),
                                       headers)
            self.assertEqual(r.status, 415, ct)
            self.assertIn("application/json", json.loads(data)["message"])
            self.assertEqual(json.loads(data)["reason"], "UnsupportedMediaType")
        r, _ = self.srv.request("POST", "/validate/eviction", json.dumps(review("pod1")),
                                {"Content-Type": "application/json; charset=utf-8"})
        self.assertEqual(r.status, 200)

    def test_W05_unknown_path_404_and_wrong_method_405(self):
        r, _ = self.srv.request("POST", "/validate/nothing", b"{}",
                                {"Content-Type": "application/json"})
        self.assertEqual(r.status, 404)
        r, _ = self.srv.request("GET", "/nope")
        self.assertEqual(r.status, 404)
        r, data = self.srv.request("GET", "/validate/eviction")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.getheader("Allow"), "POST")
        self.assertEqual(json.loads(data)["reason"], "MethodNotAllowed")
        r, _ = self.srv.request("POST", "/metrics", b"x", {"Content-Type": "application/json"})
        self.assertEqual(r.status, 405)
        self.assert_serving()

    def raw_exchange(self, head, body=b""):
        """Sends bytes as they are (no client library fixing them up); returns (status, Status
        body or None)."""
        raw = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10 * SLOW)
        with self.srv.ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(head + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                data += chunk
            head_part, _, rest = data.partition(b"\r\n\r\n")
            length = int(next((l.split(b":")[1] for l in head_part.split(b"\r\n")
                               if l.lower().startswith(b"content-length:")), b"0"))
            while len(rest) < length:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                rest += chunk
        status = int(head_part.split(b" ")[1])
        return status, json.loads(rest) if rest.startswith(b"{") else None

    def test_W07_malformed_request_heads_get_400(self):
        body = json.dumps(review("web-1")).encode()
        n = str(len(body)).encode()
        post = b"POST /validate/eviction HTTP/1.1\r\nContent-Type: application/json\r\n"
        cases = [
            (post + b"Host: x\r\nContent-Length: " + n + b"\r\nContent-Length: 5\r\n\r\n",
             "conflicting Content-Length headers"),
            # libmicrohttpd refuses a list-valued length itself, with its own 400 page.
            (post + b"Host: x\r\nContent-Length: " + n + b", 5\r\n\r\n", None),
            (post + b"Host: x\r\nContent-Length: " + n + b"\r\nTransfer-Encoding: chunked\r\n\r\n",
             "both Content-Length and Transfer-Encoding"),
            # As is a request without Host.
            (post + b"Content-Length: " + n + b"\r\n\r\n", None),
            (post + b"Host: x\r\nX-Note: a\x00b\r\nContent-Length: " + n + b"\r\n\r\n",
             "NUL byte"),
        ]
        for head, msg in cases:
            status, st = self.raw_exchange(head, body)
            self.assertEqual(status, 400, head)
            if msg:
                self.assertIn(msg, st["message"])
                self.assertEqual(st["reason"], "BadRequest")
        # The same request, well formed (repeated identical lengths are one length).
        status, _ = self.raw_exchange(post + b"Host: x\r\nContent-Length: " + n +
                                      b"\r\nContent-Length: " + n + b"\r\n\r\n", body)
        self.assertEqual(status, 200)
        self.assert_serving()

    def test_W07_escaped_slash_is_not_a_path_separator(self):
        body = json.dumps(review("web-1")).encode()
        status, st = self.raw_exchange(
            b"POST /validate%2Feviction HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n", body)
        self.assertEqual(status, 404)
        self.assertEqual(st["reason"], "NotFound")

    def test_W06_plain_http_is_refused(self):
        with socket.create_connection(("127.0.0.1", self.srv.port), timeout=10 * SLOW) as s:
            s.sendall(b"POST /validate/eviction HTTP/1.1\r\nHost: x\r\nContent-Type: "
                      b"application/json\r\nContent-Length: 2\r\n\r\n{}")
            data = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except (ConnectionResetError, socket.timeout):
                pass
        self.assertNotIn(b"HTTP/1.1 200", data)
        self.assertNotIn(b"AdmissionReview", data)
        self.assert_serving()

    def test_W06_tls_1_0_and_1_1_are_refused(self):
        for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            # SECLEVEL=0 lets this OpenSSL speak the old versions at all; the server must
            # still refuse them.
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            ctx.minimum_version = version
            ctx.maximum_version = version
            with self.assertRaises((ssl.SSLError, ConnectionResetError, OSError)):
                with socket.create_connection(("127.0.0.1", self.srv.port),
                                              timeout=10 * SLOW) as raw:
                    with ctx.wrap_socket(raw) as tls:
                        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                        tls.recv(100)
        # TLS 1.2 (and 1.3) are accepted.
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            ctx = ssl.create_default_context(cafile=self.srv.cert)
            ctx.minimum_version = version
            ctx.maximum_version = version
            with socket.create_connection(("127.0.0.1", self.srv.port), timeout=10 * SLOW) as raw:
                with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                    self.assertEqual(tls.version(), "TLSv1.2" if version == ssl.TLSVersion.TLSv1_2
                                     else "TLSv1.3")
        self.assert_serving()

    def test_E01_protected_pod_is_denied_with_429_over_https(self):
        r, body = self.srv.evict("pod1", uid="e01")
        self.assertEqual(r.status, 200)
        resp = body["response"]
        self.assertFalse(resp["allowed"])
        self.assertEqual(resp["status"]["code"], 429)
        self.assertEqual(resp["status"]["reason"], "TooManyRequests")
        self.assertGreater(resp["status"]["details"]["retryAfterSeconds"], 0)
        for word in ("node1", "default/db", "NodeDisruption"):
            self.assertIn(word, resp["status"]["message"])

    def test_E02_granted_node_allows_eviction(self):
        # The demo cluster grants node3 to maintenance-bot; pod3 there carries app=db.
        r, body = self.srv.evict("pod3", uid="e02")
        self.assertTrue(body["response"]["allowed"])

    def test_E10_pvc_protected_pod_is_denied(self):
        r, body = self.srv.evict("cache-0", uid="e10")
        self.assertFalse(body["response"]["allowed"])
        self.assertIn("default/cache", body["response"]["status"]["message"])

    def test_decisions_are_logged_one_json_line_each(self):
        self.srv.evict("pod1", uid="log-me-1")
        deadline = time.monotonic() + 5 * SLOW
        line = None
        while line is None and time.monotonic() < deadline:
            line = next((l for l in self.srv.log_lines() if l.get("uid") == "log-me-1"), None)
            time.sleep(0.02)
        self.assertIsNotNone(line)
        self.assertEqual(line["msg"], "admission decided")
        self.assertEqual(line["pod"], "pod1")
        self.assertEqual(line["node"], "node1")
        self.assertFalse(line["allowed"])
        self.assertEqual(line["reason"], "protected")
        self.assertIn("dur_us", line)

    def test_health_ready_and_metrics(self):
        r, data = self.srv.request("GET", "/healthz")
        self.assertEqual((r.status, data), (200, b"ok\n"))
        r, data = self.srv.request("GET", "/readyz")
        self.assertEqual((r.status, data), (200, b"ok\n"))

        def metric(text, name):
            for line in text.splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[-1])
            return None

        _, before = self.srv.request("GET", "/metrics")
        self.srv.evict("pod1", uid="m1")
        self.srv.evict("web-1", uid="m2")
        r, after = self.srv.request("GET", "/metrics")
        self.assertTrue(r.getheader("Content-Type").startswith("text/plain"))
        before, after = before.decode(), after.decode()
        denied = 'nodegate_admission_requests_total{webhook="eviction",decision="denied"}'
        allowed = 'nodegate_admission_requests_total{webhook="eviction",decision="allowed"}'
        self.assertEqual(metric(after, denied) - metric(before, denied), 1)
        self.assertEqual(metric(after, allowed) - metric(before, allowed), 1)
        self.assertEqual(metric(after, 'nodegate_cache_objects{resource="pods"}'), 6)
        self.assertEqual(metric(after, 'nodegate_cache_objects{resource="nodes"}'), 3)
        count = metric(after, 'nodegate_admission_duration_seconds_count{webhook="eviction"}')
        inf = metric(after, 'nodegate_admission_duration_seconds_bucket{webhook="eviction",le="+Inf"}')
        self.assertEqual(count, inf)


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-it-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_sighup_reloads_the_snapshot_and_a_bad_file_keeps_the_old_state(self):
        srv = Server(self.tmp)
        try:
            _, body = srv.evict("pod1")
            self.assertFalse(body["response"]["allowed"])
            with open(srv.snapshot, encoding="utf-8") as f:
                cluster = json.load(f)
            cluster["items"].append({
                "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                "metadata": {"name": "node1-reboot"}, "spec": {"nodeNames": ["node1"]},
                "status": {"state": "Granted", "disruptedNodes": ["node1"]}})
            with open(srv.snapshot, "w", encoding="utf-8") as f:
                json.dump(cluster, f)
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10 * SLOW
            allowed = False
            while not allowed and time.monotonic() < deadline:
                allowed = srv.evict("pod1")[1]["response"]["allowed"]
                time.sleep(0.05)
            self.assertTrue(allowed, "the reloaded grant was not honoured")
            # A broken file: the error is logged and the last good state keeps serving.
            with open(srv.snapshot, "w", encoding="utf-8") as f:
                f.write('{"kind":"List","items":[')
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10 * SLOW
            while time.monotonic() < deadline and not any(
                    l.get("msg") == "snapshot load failed" for l in srv.log_lines()):
                time.sleep(0.05)
            self.assertTrue(any(l.get("msg") == "snapshot load failed" for l in srv.log_lines()))
            self.assertTrue(srv.evict("pod1")[1]["response"]["allowed"])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_sigterm_shuts_down_cleanly(self):
        srv = Server(self.tmp)
        srv.evict("pod1")
        self.assertEqual(srv.stop(), 0)
        msgs = [l.get("msg") for l in srv.log_lines()]
        self.assertIn("shutting down", msgs)

    def test_E06_E09_warn_mode_and_exempt_users_over_https(self):
        srv = Server(self.tmp, ["--eviction-mode", "Warn", "--exempt-user", "ops-admin"])
        try:
            r, body = srv.evict("pod1", uid="e06")
            self.assertTrue(body["response"]["allowed"])
            self.assertIn("default/db", body["response"]["warnings"][0])
            _, body = srv.evict("pod1", uid="e09", user="ops-admin")
            self.assertTrue(body["response"]["allowed"])
            self.assertNotIn("warnings", body["response"])
            _, metrics = srv.request("GET", "/metrics")
            self.assertIn('nodegate_admission_requests_total{webhook="eviction",decision="warned"} 1',
                          metrics.decode())
        finally:
            self.assertEqual(srv.stop(), 0)
        srv = Server(self.tmp, ["--exempt-user", "ops-admin", "--retry-after-seconds", "3"])
        try:
            _, body = srv.evict("pod1", user="ops-admin")
            self.assertTrue(body["response"]["allowed"])
            _, body = srv.evict("pod1", user="alice")
            self.assertFalse(body["response"]["allowed"])
            self.assertEqual(body["response"]["status"]["details"]["retryAfterSeconds"], 3)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_E09_exempt_groups_and_prefixes_over_https(self):
        # A descheduler or a VPA updater evicting one pod is no node disruption: exempt the
        # kube-system service accounts by their group, and VPA's by a username prefix.
        ngc = os.path.join(self.tmp, "ngc.json")
        with open(ngc, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                       "metadata": {"name": "default"},
                       "spec": {"eviction": {"exemptUsers": [
                           "system:serviceaccounts:kube-system",
                           "system:serviceaccount:vpa:*"]}}}, f)
        srv = Server(self.tmp, ["--snapshot", ngc])
        try:
            sa = ("system:serviceaccounts", "system:serviceaccounts:kube-system",
                  "system:authenticated")
            _, body = srv.evict("pod1", uid="by-group",
                                user="system:serviceaccount:kube-system:descheduler", groups=sa)
            self.assertTrue(body["response"]["allowed"], body)
            _, body = srv.evict("pod1", uid="by-prefix",
                                user="system:serviceaccount:vpa:vpa-updater")
            self.assertTrue(body["response"]["allowed"], body)
            other = ("system:serviceaccounts", "system:serviceaccounts:default",
                     "system:authenticated")
            _, body = srv.evict("pod1", uid="other",
                                user="system:serviceaccount:default:descheduler", groups=other)
            self.assertFalse(body["response"]["allowed"], body)
            self.assertEqual(body["response"]["status"]["code"], 429)
            _, body = srv.evict("pod1", uid="alice")
            self.assertFalse(body["response"]["allowed"], body)
            reasons = [l.get("reason") for l in srv.log_lines() if l.get("uid") in (
                "by-group", "by-prefix")]
            self.assertEqual(reasons, ["exempt", "exempt"])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_E09_exempt_user_star_alone_is_refused(self):
        p = subprocess.run(WRAPPER + [BINARY, "serve", "--snapshot",
                                      os.path.join(ROOT, "examples", "demo-cluster.json"),
                                      "--exempt-user", "*"],
                           capture_output=True, text=True, timeout=30 * SLOW)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('--exempt-user "*": "*" alone would exempt every user', p.stderr)

    def check(self, *files, nd):
        path = os.path.join(self.tmp, "nd.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(nd, f)
        args = [BINARY, "check", "--now", "2026-11-22T00:00:00Z", "--nd", path]
        for f in files:
            args += ["--snapshot", f]
        p = subprocess.run(WRAPPER + args, capture_output=True, text=True, timeout=60 * SLOW)
        return p.returncode, p.stdout, p.stderr

    def test_check_decides_a_request_offline_as_the_gate_would(self):
        fixture = os.path.join(ROOT, "tests", "e2e", "fixture-f.json")
        # Granted: fixture F's budget default/db allows one of its nodes.
        rc, out, err = self.check(fixture, nd={"spec": {"nodeNames": ["node1"]}})
        self.assertEqual(rc, 0, err)
        d = json.loads(out)
        self.assertEqual((d["state"], d["disruptedNodes"]), ("Granted", ["node1"]))
        self.assertEqual(d["disruptedDisruptionBudgets"][0]["reference"],
                         {"kind": "ApplicationDisruptionBudget", "namespace": "default", "name": "db"})
        self.assertNotIn("expiresAt", d)  # no deadline
        # With a deadline, the grant says when it would end (granted at --now).
        rc, out, err = self.check(fixture, nd={"spec": {"nodeNames": ["node1"], "activeDeadlineSeconds": 90}})
        self.assertEqual((rc, json.loads(out).get("expiresAt")), (0, "2026-11-22T00:01:30.000Z"), err)
        # The same request next to a Granted one on node1 and a pool budget of one, full: every
        # failing budget is listed, and the exit status says "not granted".
        more = os.path.join(self.tmp, "more.json")
        with open(more, "w", encoding="utf-8") as f:
            json.dump({"kind": "List", "items": [
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                 "metadata": {"name": "pool"},
                 "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}}, "maxDisruptedNodes": 1}},
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "held"},
                 "spec": {"nodeNames": ["node1"]},
                 "status": {"state": "Granted", "disruptedNodes": ["node1"]}}]}, f)
        rc, out, err = self.check(fixture, more, nd={"metadata": {"name": "mine"},
                                                      "spec": {"nodeNames": ["node2"]}})
        self.assertEqual(rc, 1, err)
        d = json.loads(out)
        self.assertEqual(d["state"], "Rejected")
        failed = sorted(e["reference"]["name"] for e in d["disruptedDisruptionBudgets"] if not e["ok"])
        self.assertEqual(failed, ["pool"])
        self.assertIn("1 of 1 in use; this request adds 1 (limit 1 of 2 nodes)", d["reason"])
        self.assertNotIn("unsatisfiable", d)
        # With retry it would wait instead.
        rc, out, _ = self.check(fixture, more, nd={"spec": {"nodeNames": ["node2"], "retry": {"enabled": True}}})
        self.assertEqual((rc, json.loads(out)["state"]), (1, "Pending"))
        # L06: both nodes can never fit a budget of one: the answer says so, and what would.
        rc, out, _ = self.check(fixture, more, nd={"spec": {"nodeNames": ["node1", "node2"],
                                                            "retry": {"enabled": True}}})
        d = json.loads(out)
        self.assertEqual((rc, d["state"], d.get("unsatisfiable")), (1, "Pending", True))
        self.assertEqual(d["reason"], "needs 2 nodes of NodeDisruptionBudget pool, which allows at most 1: "
                                      "raise maxDisruptedNodes to 2 or split the request")
        # A request the webhook would refuse is not decided: exit 2 with why.
        rc, out, err = self.check(fixture, nd={"spec": {"nodeSelector": {}}})
        self.assertEqual(rc, 2)
        self.assertIn("would select every node", err)
        rc, out, err = self.check(os.path.join(self.tmp, "missing.json"), nd={"spec": {"nodeNames": ["node1"]}})
        self.assertEqual(rc, 2)
        self.assertIn("missing.json", err)

    def test_O55_check_answers_people_in_text_and_yaml(self):
        """`check -o text` prints a verdict a person reads at a glance, `-o yaml` the answer as
        kubectl prints YAML, and an invalid request is one sentence on stderr, never raw JSON."""
        fixture = os.path.join(ROOT, "tests", "e2e", "fixture-f.json")
        path = os.path.join(self.tmp, "nd.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"spec": {"nodeNames": ["node1"]}}, f)
        base = [BINARY, "check", "--now", "2026-11-22T00:00:00Z", "--snapshot", fixture, "--nd", path]
        p = subprocess.run(WRAPPER + base + ["-o", "text"], capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stdout),
                         (0, "Granted: granted\n  nodes: node1\n"
                             "  ok   ApplicationDisruptionBudget default/db: 0 of 1 in use, this request adds 1\n"),
                         p.stderr)
        p = subprocess.run(WRAPPER + base + ["--output", "yaml"], capture_output=True, text=True,
                           timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("state: Granted\nreason: granted\ndisruptedNodes:\n- node1\n"),
                        p.stdout)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"spec": {"nodeNames": ["node1"], "priority": "high"}}, f)
        p = subprocess.run(WRAPPER + base, capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stdout, p.stderr),
                         (2, "", "nodegate check: spec.priority: expected an integer\n"))
        p = subprocess.run(WRAPPER + base + ["-o", "xml"], capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stderr),
                         (2, 'nodegate check: --output "xml": expected text, json or yaml\n'))

    def test_O58_O59_check_and_plan_refuse_unknown_fields(self):
        """A misspelled field in check's --nd file or in a nodegate object of a --snapshot file
        (check and plan) is refused naming its path and the field meant, instead of being
        dropped and the request decided without it."""
        fixture = os.path.join(ROOT, "tests", "e2e", "fixture-f.json")
        rc, out, err = self.check(fixture, nd={"spec": {"nodeNames": ["node1"], "priorty": 5}})
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("spec.priorty: unknown field (did you mean priority?)", err)
        typo = os.path.join(self.tmp, "typo.json")
        with open(typo, "w", encoding="utf-8") as f:
            json.dump({"kind": "List", "items": [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}, "kubectl": "prints anything"},
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": "p"},
                 "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}}, "maxDisruptedNode": 1}}]}, f)
        rc, out, err = self.check(fixture, typo, nd={"spec": {"nodeNames": ["node1"]}})
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("typo.json: items[1]: spec.maxDisruptedNode: unknown field (did you mean maxDisruptedNodes?)",
                      err)
        p = subprocess.run(WRAPPER + [BINARY, "plan", "--snapshot", fixture, "--snapshot", typo, "--nodes",
                                      "testselect=test1"], capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("items[1]: spec.maxDisruptedNode: unknown field", p.stderr)

    def test_O56_O57_a_plan_of_no_node_is_refused(self):
        """`plan --nodes pool=nothing` exits 2 saying it selects no node, and a node file naming
        nodes the cluster lacks exits 2 counting them, instead of planning `0 of 0 nodes`."""
        fixture = os.path.join(ROOT, "tests", "e2e", "fixture-f.json")
        base = [BINARY, "plan", "--snapshot", fixture, "--start", "2026-11-22T00:00:00Z"]
        p = subprocess.run(WRAPPER + base + ["--nodes", "pool=nothing"], capture_output=True, text=True,
                           timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stdout, p.stderr),
                         (2, "", 'nodegate plan: --nodes "pool=nothing" selects no node\n'))
        names = os.path.join(self.tmp, "nodes.txt")
        with open(names, "w", encoding="utf-8") as f:
            f.write("node1\n" + "".join(f"ghost-{i}\n" for i in range(5)))
        p = subprocess.run(WRAPPER + base + ["--node-file", names], capture_output=True, text=True,
                           timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("5 of 6 nodes are not in the cluster: ghost-0, ghost-1, ghost-2 and 2 more", p.stderr)
        p = subprocess.run(WRAPPER + base + ["--nodes", "testselect=test1", "-o", "yaml"], capture_output=True,
                           text=True, timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("\nsummary:\n  nodes: 2\n", p.stdout)

    def test_check_explains_a_node_remediation(self):
        """A NodeRemediation given to check: its unhealthy nodes, what happens to each and, for
        the requests it would create, the gate's decision in order (the second waits for the
        first under a pool budget of 1)."""
        cluster = os.path.join(self.tmp, "pool.json")

        def node(name, sick_since=None, unknown=False):
            conds = [{"type": "Ready", "status": "True"}]
            if sick_since:
                conds.append({"type": "example.com/KernelDeadlock", "status": "True",
                              "lastTransitionTime": sick_since})
            if unknown:
                conds.append({"type": "example.com/KernelDeadlock", "status": "Unknown"})
            return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": "w"}},
                    "status": {"conditions": conds}}
        with open(cluster, "w", encoding="utf-8") as f:
            json.dump({"kind": "List", "items": [
                node("w1", "2026-11-21T23:00:00Z"), node("w2", "2026-11-21T23:10:00Z"),
                node("w3", "2026-11-21T23:58:00Z"), node("w4"), node("w5", unknown=True),
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": "w"},
                 "spec": {"nodeSelector": {"matchLabels": {"pool": "w"}}, "maxDisruptedNodes": 1}},
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate",
                 "metadata": {"name": "reboot"}, "spec": {"type": "reboot", "retry": {"enabled": True}}}]}, f)
        nrem = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation", "metadata": {"name": "kd"},
                "spec": {"nodeSelector": {"matchLabels": {"pool": "w"}}, "templateName": "reboot",
                         "rule": {"conditions": [{"type": "example.com/KernelDeadlock", "status": "True",
                                                  "forSeconds": 300}]},
                         "maxConcurrent": "40%", "stormGuard": {"maxUnhealthy": 3}}}
        rc, out, err = self.check(cluster, nd=nrem)
        self.assertEqual(rc, 0, err)
        d = json.loads(out)
        self.assertEqual((d["kind"], d["matchedNodes"], d["unhealthyNodes"], d["maxConcurrent"], d["storm"]),
                         ("NodeRemediation", 5, 3, 2, False))
        nodes = {n["node"]: n for n in d["nodes"]}
        self.assertEqual({k: v["action"] for k, v in nodes.items()},
                         {"w1": "create", "w2": "create", "w3": "waiting", "w5": "unknown"})
        self.assertEqual(nodes["w1"]["decision"]["state"], "Granted")
        self.assertEqual(nodes["w2"]["decision"]["state"], "Pending")
        self.assertIn("NodeDisruptionBudget w: 1 of 1 in use", nodes["w2"]["decision"]["reason"])
        self.assertIn("due at 2026-11-22T00:03:00.000Z", nodes["w3"]["reason"])
        # A storm: more unhealthy nodes than allowed starts nothing, and exit 1 says so.
        nrem["spec"]["stormGuard"]["maxUnhealthy"] = 2
        rc, out, err = self.check(cluster, nd=nrem)
        self.assertEqual(rc, 1, err)
        d = json.loads(out)
        self.assertTrue(d["storm"])
        self.assertEqual(sorted(n["action"] for n in d["nodes"]), ["storm", "storm", "unknown", "waiting"])
        # The template missing: nothing would start, and the problem names it.
        nrem["spec"]["templateName"] = "nope"
        nrem["spec"].pop("stormGuard")
        rc, out, err = self.check(cluster, nd=nrem)
        self.assertEqual(rc, 1, err)
        self.assertEqual(json.loads(out)["problem"], "NodeDisruptionTemplate nope not found")
        # A remediation that does not validate is refused with why (exit 2).
        nrem["spec"]["rule"]["conditions"] = []
        rc, out, err = self.check(cluster, nd=nrem)
        self.assertEqual(rc, 2)
        self.assertIn("spec.rule.conditions: expected 1 to 16 conditions", err)

    def check_files(self, nd, *snapshots):
        args = [BINARY, "check", "--now", "2026-11-22T00:00:00Z", "--nd", nd]
        for f in snapshots:
            args += ["--snapshot", f]
        p = subprocess.run(WRAPPER + args, capture_output=True, text=True, timeout=60 * SLOW)
        return p.returncode, p.stdout, p.stderr

    def test_check_reads_yaml_as_kubectl_users_write_it(self):
        """--nd (and --snapshot) files in YAML, as kubectl users write them and `kubectl get
        -o yaml` prints them, decide exactly as their JSON does."""
        demo = os.path.join(ROOT, "examples", "demo-cluster.json")
        nd_yaml = os.path.join(ROOT, "examples", "nodedisruption.yaml")
        nd_json = os.path.join(ROOT, "examples", "nodedisruption.json")
        want = self.check_files(nd_json, demo)
        self.assertIn(want[0], (0, 1), want[2])
        self.assertEqual(self.check_files(nd_yaml, demo), want)
        # A YAML snapshot, written as `kubectl get -o yaml` writes: block style, plain scalars.
        with open(demo, encoding="utf-8") as f:
            cluster = json.load(f)
        snap_yaml = os.path.join(self.tmp, "cluster.yaml")
        with open(snap_yaml, "w", encoding="utf-8") as f:
            f.write("# kubectl get nodes,pods,... -o yaml\n" + to_yaml(cluster).lstrip("\n"))
        self.assertEqual(self.check_files(nd_yaml, snap_yaml), want)
        fixture = os.path.join(ROOT, "tests", "e2e", "fixture-f.json")
        with open(fixture, encoding="utf-8") as f:
            fixture_yaml = os.path.join(self.tmp, "fixture-f.yaml")
            with open(fixture_yaml, "w", encoding="utf-8") as out:
                out.write(to_yaml(json.load(f)))
        self.assertEqual(self.check_files(nd_yaml, fixture_yaml), self.check_files(nd_yaml, fixture))
        with open(nd_yaml, encoding="utf-8") as f:
            example = f.read()
        # A trailing "---" (an empty document) is fine; a second request is not: one file,
        # one request, one answer and exit status.
        path = os.path.join(self.tmp, "nd.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(example + "---\n")
        self.assertEqual(self.check_files(path, demo), want)
        with open(path, "w", encoding="utf-8") as f:
            f.write(example + "---\n" + example)
        rc, _, err = self.check_files(path, demo)
        self.assertEqual(rc, 2)
        line = example.count("\n") + 2 + 3  # the second document's first key
        self.assertIn(f"--nd {path}: YAML: line {line}: more than one YAML document", err)
        # Malformed YAML says where; it is no longer "malformed JSON at byte 0".
        with open(path, "w", encoding="utf-8") as f:
            f.write("spec:\n  nodeNames: [node1\n")
        rc, _, err = self.check_files(path, demo)
        self.assertEqual(rc, 2)
        self.assertRegex(err, r"--nd .*nd\.yaml: YAML: line \d+ column \d+: ")
        self.assertNotIn("malformed JSON", err)
        # Bounded as JSON is: the JSON a YAML file converts to is held to the 3 MiB of --nd.
        with open(path, "w", encoding="utf-8") as f:
            f.write("spec: {nodeNames: [" + "a," * (1 << 20) + "]}\n")
        rc, _, err = self.check_files(path, demo)
        self.assertEqual(rc, 2)
        self.assertIn("more than 3145728 bytes as JSON", err)

    def test_certs_make_a_ca_and_a_serving_certificate_serve_uses(self):
        out = os.path.join(self.tmp, "certs")
        os.mkdir(out)
        p = subprocess.run(WRAPPER + [BINARY, "certs", "--out", out, "--days", "30"],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        ca = os.path.join(out, "ca.crt")
        with open(ca, "rb") as f:
            self.assertEqual(base64.b64decode(p.stdout.strip()), f.read(), "stdout is the caBundle")
        for name, mode in (("ca.key", 0o600), ("tls.key", 0o600), ("tls.crt", 0o644)):
            self.assertEqual(os.stat(os.path.join(out, name)).st_mode & 0o777, mode, name)
        srv = Server(self.tmp, cert=os.path.join(out, "tls.crt"), key=os.path.join(out, "tls.key"))
        try:
            # A client that trusts the CA and checks the Service's name, as the API server does.
            ctx = ssl.create_default_context(cafile=ca)
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10 * SLOW) as raw:
                with ctx.wrap_socket(raw, server_hostname="nodegate.nodegate.svc") as tls:
                    not_after = ssl.cert_time_to_seconds(tls.getpeercert()["notAfter"])
                    tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    body = b""
                    while chunk := tls.recv(65536):
                        body += chunk
            self.assertIn(f"nodegate_certificate_expiry_timestamp_seconds {not_after}".encode(), body)
            self.assertAlmostEqual(not_after, time.time() + 30 * 86400, delta=600)
        finally:
            self.assertEqual(srv.stop(), 0)
        # Never over an existing file: the CA key survives a second run.
        with open(os.path.join(out, "ca.key"), "rb") as f:
            before = f.read()
        p = subprocess.run([BINARY, "certs", "--out", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("ca.crt: File exists", p.stderr)
        with open(os.path.join(out, "ca.key"), "rb") as f:
            self.assertEqual(f.read(), before)
        p = subprocess.run([BINARY, "certs", "--out", out, "--service", "Bad_Name"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("DNS labels", p.stderr)

    def test_certs_ip_sans_verify_a_webhook_called_by_address(self):
        """A webhook registered as https://127.0.0.1:PORT: the client checks the address against
        the certificate's IP SANs, so --ip, and a --dns value that is an address, must write
        IP SANs (a DNS SAN "127.0.0.1" never verifies)."""
        for flag in ("--ip", "--dns"):
            out = os.path.join(self.tmp, "certs" + flag)
            os.mkdir(out)
            p = subprocess.run(WRAPPER + [BINARY, "certs", "--out", out, flag, "127.0.0.1",
                                          "--ip", "::1", "--dns", "localhost"],
                               capture_output=True, text=True, timeout=60 * SLOW)
            self.assertEqual(p.returncode, 0, p.stderr)
            crt, ca = os.path.join(out, "tls.crt"), os.path.join(out, "ca.crt")
            text = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-ext", "subjectAltName"],
                                  capture_output=True, text=True, check=True, timeout=30).stdout
            sans = [s.strip() for s in text.splitlines()[1].split(",")]
            self.assertEqual(sorted(sans), sorted([
                "DNS:nodegate", "DNS:nodegate.nodegate", "DNS:nodegate.nodegate.svc",
                "DNS:nodegate.nodegate.svc.cluster.local", "DNS:localhost",
                "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1"]), flag)
            srv = Server(self.tmp, cert=crt, key=os.path.join(out, "tls.key"))
            try:
                # Python's ssl checks an IP server_hostname against IP SANs (OpenSSL's
                # X509_VERIFY_PARAM_set1_ip), as Go's crypto/tls in the API server does.
                ctx = ssl.create_default_context(cafile=ca)
                with socket.create_connection(("127.0.0.1", srv.port), timeout=10 * SLOW) as raw:
                    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        self.assertIn(("IP Address", "127.0.0.1"), tls.getpeercert()["subjectAltName"])
                if shutil.which("curl"):
                    c = subprocess.run(["curl", "-sS", "--cacert", ca, "-o", "/dev/null", "-w",
                                        "%{http_code}", f"https://127.0.0.1:{srv.port}/metrics"],
                                       capture_output=True, text=True, timeout=30 * SLOW)
                    self.assertEqual((c.returncode, c.stdout), (0, "200"), c.stderr)
                # The same CA does not vouch for another address.
                with socket.create_connection(("127.0.0.1", srv.port), timeout=10 * SLOW) as raw:
                    with self.assertRaises(ssl.SSLCertVerificationError):
                        ctx.wrap_socket(raw, server_hostname="127.0.0.2")
            finally:
                self.assertEqual(srv.stop(), 0)
        p = subprocess.run([BINARY, "certs", "--out", self.tmp, "--ip", "localhost"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn('"localhost" is not an IPv4 or IPv6 address', p.stderr)

    def peer(self, port, ca, name="nodegate.nodegate.svc"):
        """(serial, notAfter) of the certificate a new connection is served."""
        ctx = ssl.create_default_context(cafile=ca)
        with socket.create_connection(("127.0.0.1", port), timeout=10 * SLOW) as raw:
            with ctx.wrap_socket(raw, server_hostname=name) as tls:
                cert = tls.getpeercert()
                return cert["serialNumber"], ssl.cert_time_to_seconds(cert["notAfter"])

    def test_renewed_certificate_is_served_without_a_restart(self):
        dirs = []
        for days in ("30", "60", "90"):
            d = os.path.join(self.tmp, "certs" + days)
            os.mkdir(d)
            p = subprocess.run([BINARY, "certs", "--out", d, "--days", days],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            dirs.append(d)
        cert, key = os.path.join(self.tmp, "tls.crt"), os.path.join(self.tmp, "tls.key")
        shutil.copy(os.path.join(dirs[0], "tls.crt"), cert)
        shutil.copy(os.path.join(dirs[0], "tls.key"), key)
        srv = Server(self.tmp, cert=cert, key=key, extra_args=("--tls-reload-seconds", "1"))
        try:
            serial0, _ = self.peer(srv.port, os.path.join(dirs[0], "ca.crt"))
            # A connection opened before the renewal (the name is checked by peer()).
            ctx0 = ssl.create_default_context(cafile=os.path.join(dirs[0], "ca.crt"))
            ctx0.check_hostname = False
            kept = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx0, timeout=10 * SLOW)
            hdr = {"Content-Type": "application/json"}
            r, _ = srv.request("POST", "/validate/eviction", json.dumps(review("web-1")), hdr, conn=kept)
            self.assertEqual(r.status, 200)
            # The renewal replaces the files in place, as a Secret volume update does.
            for name in ("tls.crt", "tls.key"):
                tmp = os.path.join(self.tmp, name + ".new")
                shutil.copy(os.path.join(dirs[1], name), tmp)
                os.replace(tmp, os.path.join(self.tmp, name))
            t0 = time.monotonic()
            ca1 = os.path.join(dirs[1], "ca.crt")

            def renewed():
                try:
                    return self.peer(srv.port, ca1)
                except (ssl.SSLError, OSError):
                    return None
            got, _ = eventually_value(renewed, 20 * SLOW)
            self.assertIsNotNone(got, "the renewed pair was never served")
            print(f"\n  files replaced -> new certificate served in {time.monotonic() - t0:.1f} s",
                  file=sys.stderr)
            self.assertNotEqual(got[0], serial0)
            ctx1 = ssl.create_default_context(cafile=ca1)
            ctx1.check_hostname = False
            c1 = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx1, timeout=10 * SLOW)
            _, body = srv.request("GET", "/metrics", conn=c1)
            c1.close()
            self.assertIn(f"nodegate_certificate_expiry_timestamp_seconds {int(got[1])}".encode(), body)
            # The old connection goes on, on its old certificate (a new handshake would fail
            # verification with the old CA).
            r, _ = srv.request("POST", "/validate/eviction", json.dumps(review("web-1")), hdr, conn=kept)
            self.assertEqual(r.status, 200)
            kept.close()
            # A pair that does not belong together is refused; the current one stays.
            shutil.copy(os.path.join(dirs[2], "tls.crt"), os.path.join(self.tmp, "tls.crt"))
            srv.proc.send_signal(signal.SIGHUP)
            ok, _ = eventually_value(lambda: "serving certificate not reloaded" in srv.read_log(), 20 * SLOW)
            self.assertTrue(ok, srv.read_log())
            self.assertEqual(self.peer(srv.port, ca1)[0], got[0])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_bad_flags_fail_fast_with_a_message(self):
        cases = [(["serve"], "--tls-cert and --tls-key are required"),
                 (["serve", "--listen", "nowhere", "--tls-cert", "c", "--tls-key", "k",
                   "--snapshot", "s"], "expected ADDR:PORT"),
                 (["serve", "--threads", "x"], '--threads "x": must be an integer between 0 and 64'),
                 (["serve", "--bogus"], "unknown flag"),
                 (["serve", "--eviction-mode", "Maybe", "--tls-cert", "c", "--tls-key", "k"],
                  "use Enforce, Warn or Off"),
                 (["frobnicate"], "unknown command")]
        for args, msg in cases:
            p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(msg, p.stderr)
        cert, key = make_cert(self.tmp)
        p = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert,
                            "--tls-key", key, "--snapshot", os.path.join(self.tmp, "missing.json")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing.json", p.stderr)
        p = subprocess.run([BINARY, "--version"], capture_output=True, text=True, timeout=30)
        self.assertTrue(p.stdout.startswith("nodegate "))


    def test_every_integer_flag_names_its_range_when_refused(self):
        """`certs --days 3651` said `unexpected "--days"`: a refused number must say the range
        it has to be in, for every integer flag of every subcommand."""
        doc = subprocess.run([BINARY, "--dump-config-doc"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
        section, flags = None, []
        for line in doc.splitlines():
            if line.startswith("## nodegate "):
                section = line.split()[2]
            m = re.match(r"\| `--([a-z0-9-]+) (N|MS)` \| `(NG_[A-Z0-9_]+)`", line)
            if m:
                flags.append((section, m.group(1), m.group(3)))
        self.assertGreaterEqual(len(flags), 12, doc)
        self.assertEqual({s for s, _, _ in flags}, {"serve", "drain"})
        rng = r"must be an integer between -?\d+ and \d+\n"
        for cmd, flag, env in flags:
            for val in ("99999999999", "-99999999999", "x"):
                p = subprocess.run([BINARY, cmd, f"--{flag}", val], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(p.returncode, 2, (cmd, flag, val))
                self.assertRegex(p.stderr, f'--{flag} "{re.escape(val)}": {rng}')
            p = subprocess.run([BINARY, cmd], capture_output=True, text=True, timeout=30,
                               env=dict(os.environ, **{env: "99999999999"}))
            self.assertEqual(p.returncode, 2, (cmd, env))
            self.assertRegex(p.stderr, f'{env}: --{flag} "99999999999": {rng}')
        for val in ("3651", "0", "-1", "x", ""):
            for args in (["--days", val], [f"--days={val}"]):
                p = subprocess.run([BINARY, "certs", "--out", self.tmp, *args],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, args)
                self.assertEqual(p.stderr, f'nodegate certs: --days "{val}": must be an integer '
                                           "between 1 and 3650\n")
        self.assertEqual(os.listdir(self.tmp), [], "nothing written")
        # Ports are numbers with a range too.
        for args in (["serve", "--listen", "127.0.0.1:65536", "--tls-cert", "c", "--tls-key", "k"],
                     ["serve", "--admin-listen", "127.0.0.1:65536", "--tls-cert", "c",
                      "--tls-key", "k", "--snapshot", "s"],
                     ["drain", "--listen", "127.0.0.1:65536"]):
            p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("PORT between 0 and 65535", p.stderr)
        # The other refusals of certs and check say which flag and why, not "unexpected".
        for args, msg in ((["certs", "--days"], "nodegate certs: --days needs a value"),
                          (["certs", "--out"], "nodegate certs: --out needs a value"),
                          (["certs", "--frob", "1"], 'nodegate certs: unknown flag "--frob"'),
                          (["certs", *sum((["--dns", "a"] for _ in range(65)), [])],
                           "nodegate certs: --dns given more than 64 times"),
                          (["check", "--nd"], "nodegate check: --nd needs a value"),
                          (["check", "--nd", "x", "--snapshot", "y", "--now", "soon"],
                           'nodegate check: --now "soon": expected an RFC 3339 time'),
                          (["check", "stray"], 'nodegate check: unexpected argument "stray"')):
            p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(msg, p.stderr)

    def test_every_subcommand_parses_flags_the_same_way(self):
        """One parser for every subcommand: the same refusal of an unknown flag, a stray
        argument and a missing value, an integer's range named, and an environment variable
        read when its flag is not given (and overridden when it is)."""
        run = lambda *a, env=None: subprocess.run([BINARY, *a], capture_output=True, text=True,
                                                  timeout=30, env=env)
        for cmd in ("serve", "drain", "check", "plan", "certs"):
            p = run(cmd, "--frob", "1")
            self.assertEqual((p.returncode, p.stdout), (2, ""), cmd)
            self.assertEqual(p.stderr, f'nodegate {cmd}: unknown flag "--frob" '
                                       f"(see nodegate {cmd} --help)\n")
            p = run(cmd, "stray")
            self.assertEqual(p.returncode, 2, cmd)
            self.assertEqual(p.stderr, f'nodegate {cmd}: unexpected argument "stray" '
                                       f"(see nodegate {cmd} --help)\n")
        for args, want in ((["serve", "--threads"], "nodegate serve: --threads needs a value (N)\n"),
                           (["drain", "--lease-name"],
                            "nodegate drain: --lease-name needs a value (NAME)\n"),
                           (["plan", "--start"], "nodegate plan: --start needs a value (TIME)\n"),
                           (["serve", "--threads=65"],
                            'nodegate serve: --threads "65": must be an integer between 0 and 64\n'),
                           (["drain", "--watch-batch-ms", "0"],
                            'nodegate drain: --watch-batch-ms "0": must be an integer between '
                            "1 and 10000\n"),
                           (["plan", "--max-seconds=-1"],
                            'nodegate plan: --max-seconds "-1": must be an integer between 0 and '
                            "86400\n"),
                           (["serve", "--gate=maybe"],
                            'nodegate serve: --gate "maybe": expected true or false\n')):
            p = run(*args)
            self.assertEqual((p.returncode, p.stderr), (2, want), args)
        for cmd in ("serve", "drain"):
            env = dict(os.environ, NG_WATCH_BATCH_MS="0")
            p = run(cmd, env=env)
            self.assertEqual(p.returncode, 2, cmd)
            self.assertEqual(p.stderr, f'nodegate {cmd}: NG_WATCH_BATCH_MS: --watch-batch-ms "0": '
                                       "must be an integer between 1 and 10000\n")
            # A flag on the command line wins over its variable: the bad value is never read.
            p = run(cmd, "--watch-batch-ms", "x", env=env)
            self.assertEqual(p.stderr, f'nodegate {cmd}: --watch-batch-ms "x": must be an '
                                       "integer between 1 and 10000\n")
        # The variable is read: serve with NG_TLS_CERT and NG_TLS_KEY set gets past "required".
        p = run("serve", "--snapshot", os.path.join(self.tmp, "missing.json"),
                env=dict(os.environ, NG_TLS_CERT="c", NG_TLS_KEY="k", NG_LISTEN="127.0.0.1:0"))
        self.assertNotIn("are required", p.stderr)
        self.assertNotEqual(p.returncode, 0)

    def test_every_subcommand_has_its_own_help(self):
        """`nodegate --help` lists each subcommand on one line, and each answers --help and -h
        with its usage and every flag it takes, exit 0 (certs and check used to refuse it)."""
        run = lambda *a: subprocess.run([BINARY, *a], capture_output=True, text=True, timeout=30)
        p = run("--help")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        listed = re.findall(r"^  ([a-z]+) +(\S.*)$", p.stdout.split("Commands:\n")[1], re.M)
        self.assertEqual([c for c, _ in listed], ["serve", "drain", "check", "status", "why", "plan", "certs"], p.stdout)
        self.assertEqual(run("-h").stdout, p.stdout)
        self.assertEqual(run("help").stdout, p.stdout)
        bare = run()
        self.assertEqual(bare.returncode, 2)
        self.assertEqual(bare.stderr, p.stdout, "no command: the same overview, on stderr")
        # Each one's flags: serve's and drain's from the generated reference, certs' and
        # check's and plan's as documented in certificates.md, gate.md and planner.md.
        doc = run("--dump-config-doc").stdout
        want = {"certs": ["out", "service", "namespace", "dns", "ip", "days"],
                "check": ["snapshot", "kubeconfig", "context", "nd", "now", "output"],
                "status": ["kubeconfig", "context", "snapshot", "output", "now", "watch"],
                "why": ["kubeconfig", "context", "snapshot", "output", "now"],
                "plan": ["snapshot", "kubeconfig", "context", "nodes", "node-file", "drain-seconds", "start", "type",
                         "requestor", "output", "max-rounds", "max-decisions", "max-seconds"]}
        for section in doc.split("\n## nodegate ")[1:]:
            want[section.split()[0]] = re.findall(r"^\| `--([a-z0-9-]+)", section, re.M)
        self.assertEqual(sorted(want), sorted(c for c, _ in listed))
        for cmd, flags in want.items():
            outs = []
            for args in ([cmd, "--help"], [cmd, "-h"], ["help", cmd], ["--help", cmd]):
                p = run(*args)
                self.assertEqual((p.returncode, p.stderr), (0, ""), args)
                outs.append(p.stdout)
            self.assertEqual(len(set(outs)), 1, cmd)
            self.assertTrue(outs[0].startswith(f"Usage: nodegate {cmd} "), outs[0])
            got = re.findall(r"^  --([a-z0-9-]+)", outs[0], re.M)
            self.assertEqual(got, flags + ["help"], cmd)
        # Help wins over a bad flag or variable before it; a flag's value is not help.
        for args in (["serve", "--threads", "x", "--help"], ["drain", "--bogus", "-h"],
                     ["certs", "--days", "9999", "--help"], ["check", "--frob", "-h"],
                     ["plan", "--drain-seconds", "0", "--help"]):
            p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30,
                               env=dict(os.environ, NG_THREADS="x"))
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertTrue(p.stdout.startswith("Usage: nodegate " + args[0]))
        p = run("certs", "--help", "--days", "5")
        self.assertIn("--days N (default 365; between 1 and 3650)", p.stdout)
        self.assertIn("is written as an IP SAN", p.stdout)
        p = run("certs", "--out", "--help")
        self.assertNotEqual(p.returncode, 0, "--help is --out's value here")
        for args in (["help", "frobnicate"], ["frobnicate", "--help"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn('unknown command "frobnicate"', p.stderr)

if __name__ == "__main__":
    unittest.main()
