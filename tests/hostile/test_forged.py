#!/usr/bin/env python3
"""Hostile callers against a live nodegate, the test API server as its cluster (docs/security.md):
the side doors are not on the webhook port; with --client-ca only the API server's certificate
reaches the webhooks; without it, a forged eviction review with autoRequest on can make nodegate
ask for a node only in the cache, once, at the configured rate, and never under the forger's
chosen name; the admin listener with --admin-auth kubernetes answers nobody without a token the
API server vouches for and RBAC allows; the admin listener answers only its own Host names (no DNS
rebinding), and serves its probes and a second plan while plans run, up to --admin-max-plans.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from test_live_cache import (BINARY, WAIT_S, WRAPPER, E2ETest, ND_PATH, Nodegate, eventually, evict,  # noqa: E402
                             free_port)
from test_webhook import review  # noqa: E402

NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"


def ask_admin(port, method, path, host=None, body=None, headers=None):
    """One request to the admin listener on 127.0.0.1:@port, with Host @host when given (as a
    web page that rebound its own name to 127.0.0.1 would send it): (status, headers, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        h = dict(headers or {})
        if host:
            h["Host"] = host
        if body is not None:
            h["Content-Type"] = "application/json"
        c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def post_review(ng, body, path="/validate/eviction"):
    """A review sent straight to nodegate's webhook port, as anyone who reaches it could."""
    status, data = ng.webhook("POST", path, body)
    return status, json.loads(data or b"null")


class DoorsTest(E2ETest):
    """Deployed as documented: --client-ca set, side doors on the loopback admin listener."""

    def test_webhook_port_serves_no_side_door(self):
        for method, path in (("GET", "/debug/cache"), ("POST", "/v1/evaluate"), ("POST", "/v1/plan")):
            status, data = self.ng.webhook(method, path, {} if method == "POST" else None)
            self.assertEqual(status, 404, path)
            self.assertIn("admin listener", json.loads(data)["message"])
            self.assertNotIn(b"pod1", data)
        status, body = self.ng.admin("GET", "/debug/cache")
        self.assertEqual(status, 200)
        self.assertIn("pods", json.loads(body))

    def test_admin_listener_answers_only_its_own_host_names(self):
        """Finding 3: a page on evil.example whose name now resolves to 127.0.0.1 (DNS rebinding)
        sends its own name as Host; the port-forwarded listener must not answer it."""
        port = self.ng.admin_port
        for method, path in (("GET", "/debug/cache"), ("POST", "/v1/plan"), ("POST", "/v1/evaluate"),
                             ("GET", "/healthz"), ("GET", "/metrics")):
            for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}",
                         f"localhost.evil.example:{port}"):
                status, _, data = ask_admin(port, method, path, host=host,
                                            body={"nodes": ["node1"]} if method == "POST" else None)
                self.assertEqual(status, 421, (path, host, data))
                self.assertNotIn(b"pod1", data)
                msg = json.loads(data)["message"]
                self.assertIn("--admin-host", msg)
                self.assertIn("evil.example", msg)
        for host in (f"localhost:{port}", "LOCALHOST", f"127.0.0.1:{port}", f"[::1]:{port}", "[::1]"):
            status, _, data = ask_admin(port, "GET", "/debug/cache", host=host)
            self.assertEqual(status, 200, (host, data))
        self.assertIn("pods", json.loads(data))

    def test_only_the_api_servers_certificate_reaches_the_webhooks(self):
        status, body = post_review(self.ng, review("pod1", user="mallory"))
        self.assertEqual(status, 401)
        self.assertIn("client certificate", body["message"])
        # Through the API server, which presents its certificate, the webhook decides.
        code, body, _ = evict(self.api, "pod1", dry_run=True)
        self.assertEqual(code, 429, body)
        self.assertIn("NodeDisruption", body["message"])


    def scrape(self, door, cert=None):
        """/metrics of @door ("admin" or "webhook"; on the webhook port with client certificate
        @cert, a (crt, key) pair, if given)."""
        if door == "admin":
            status, body = self.ng.admin("GET", "/metrics")
        else:
            ctx = ssl.create_default_context(cafile=self.ng.cert)
            if cert:
                ctx.load_cert_chain(*cert)
            status, body = Nodegate.call(http.client.HTTPSConnection(
                "127.0.0.1", self.ng.port, context=ctx, timeout=20), "GET", "/metrics")
        self.assertEqual(status, 200)
        return body.decode()

    def test_webhook_port_metrics_are_counts_only(self):
        # Budgets whose names are cluster data: the admin listener names them, the webhook port
        # (anyone on the pod network) does not; a deleted one's series go.
        for path, obj in ((NDB_PATH, {"kind": "NodeDisruptionBudget", "metadata": {"name": "payroll-pool"},
                                      "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}},
                                               "maxDisruptedNodes": 1}}),
                          (ADB_PATH, {"kind": "ApplicationDisruptionBudget", "metadata": {"name": "payroll-db"},
                                      "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                                               "maxDisruptions": 1}})):
            code, body, _ = self.api.api("POST", path, {"apiVersion": "nodegate.io/v1alpha1", **obj})
            self.assertEqual(code, 201, body)
        text, _ = eventually(lambda: (lambda t: t if 'name="payroll-db"' in t and 'name="payroll-pool"' in t
                                      else None)(self.scrape("admin")))
        self.assertIsNotNone(text, "the admin listener's /metrics never named the budgets")
        self.assertIn('nodegate_budget_disruptions_allowed{kind="ApplicationDisruptionBudget",'
                      'namespace="default",name="payroll-db"}', text)
        web = self.scrape("webhook")
        self.assertIn("nodegate_gate_decisions_total", web)  # the counts are there
        for word in ("payroll", "namespace=", "name=", "node=", "user=", "remediation=", "url="):
            self.assertNotIn(word, web)
        # A client whose certificate verified against --client-ca (only the API server's here)
        # may see them on the webhook port too.
        pair = tuple(os.path.join(self.tmp, "apiserver-client." + e) for e in ("pem", "key"))
        self.assertIn('name="payroll-db"', self.scrape("webhook", cert=pair))
        code, body, _ = self.api.api("DELETE", ADB_PATH + "/payroll-db")
        self.assertIn(code, (200, 202), body)
        gone, _ = eventually(lambda: "payroll-db" not in self.scrape("admin"))
        self.assertTrue(gone, "a deleted budget's series stayed")
        self.assertIn('name="payroll-pool"', self.scrape("admin"))


class ForgedReviewTest(E2ETest):
    """No --client-ca: anyone reaching the port can send a review. autoRequest then asks only
    for nodes in the cache, once each, at most --auto-request-per-minute, as "unverified"."""
    CLIENT_CA = False
    NODEGATE_ARGS = ("--auto-request-per-minute", "1")

    def setUp(self):
        super().setUp()
        for path, obj in ((NDB_PATH, {"kind": "NodeDisruptionBudget", "metadata": {"name": "hold"},
                                      "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}},
                                               "maxDisruptedNodes": 0}}),
                          (NGC_PATH, {"kind": "NodeGateConfig", "metadata": {"name": "default"},
                                      "spec": {"eviction": {"autoRequest": True}}}),
                          (ADB_PATH, {"kind": "ApplicationDisruptionBudget", "metadata": {"name": "web"},
                                      "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                                               "maxDisruptions": 1}})):
            code, body, _ = self.api.api("POST", path, {"apiVersion": "nodegate.io/v1alpha1", **obj})
            self.assertEqual(code, 201, body)
        ok, _ = eventually(lambda: len((self.ng.cache() or {}).get("applicationdisruptionbudgets", [])) == 2
                           and (self.ng.cache() or {}).get("nodegateconfigs"))
        self.assertTrue(ok)

    def auto_requests(self):
        code, body, _ = self.api.api("GET", ND_PATH + "?labelSelector=nodegate.io%2Fauto-request%3Dtrue")
        return body.get("items", []) if code == 200 else []

    def test_forged_review_cannot_choose_who_asked_or_exceed_the_rate(self):
        # A pod the cache does not know: no decision to make, nothing asked for.
        status, body = post_review(self.ng, review("ghost", user="mallory", uid="f0"))
        self.assertEqual(status, 200)
        self.assertTrue(body["response"]["allowed"])
        # A real pod under a made-up user: the request is made, but not in mallory's name.
        status, body = post_review(self.ng, review("pod1", user="mallory", uid="f1"))
        self.assertEqual(status, 200)
        self.assertFalse(body["response"]["allowed"])
        reqs, _ = eventually(self.auto_requests)
        self.assertEqual(len(reqs), 1)
        nd = reqs[0]
        self.assertEqual(nd["spec"]["requestor"], "unverified")
        self.assertEqual(nd["metadata"]["labels"]["nodegate.io/requested-by-verified"], "false")
        self.assertEqual(nd["metadata"]["annotations"].get("nodegate.io/requested-by-unverified"), "mallory")
        self.assertNotIn("nodegate.io/requested-by", nd["metadata"]["annotations"])
        # The same node again, many times: still one request.
        for i in range(20):
            post_review(self.ng, review("pod1", user=f"mallory{i}", uid=f"g{i}"))
        # Another node within the minute: over the rate (1 per minute), queued, not created.
        status, body = post_review(self.ng, review("web-1", user="mallory", uid="f2"))
        self.assertFalse(body["response"]["allowed"])
        time.sleep(3)
        self.assertEqual([n["metadata"]["name"] for n in self.auto_requests()], ["auto-node1"])
        self.assertEqual(self.ng.metric('nodegate_auto_requests_total{result="created"}'), 1)


class AdminAuthTest(E2ETest):
    """--admin-auth kubernetes: a bearer token checked with a TokenReview, the path with a
    SubjectAccessReview."""
    NODEGATE_ARGS = ("--admin-auth", "kubernetes")

    def admin_as(self, token, path="/debug/cache"):
        c = http.client.HTTPConnection("127.0.0.1", self.ng.admin_port, timeout=20)
        try:
            c.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def test_side_doors_need_a_token_and_the_right(self):
        with open(os.path.join(self.api.state, "tokens.json"), encoding="utf-8") as f:
            tokens = json.load(f)
        status, body = self.admin_as(None)
        self.assertEqual(status, 401)
        self.assertNotIn(b"pod1", body)
        # On loopback the Host check applies with authentication too, and comes first.
        status, _, body = ask_admin(self.ng.admin_port, "GET", "/debug/cache", host="evil.example",
                                    headers={"Authorization": f"Bearer {tokens['alice']}"})
        self.assertEqual(status, 421, body)
        status, _ = self.admin_as("not-a-token")
        self.assertEqual(status, 401)
        # alice is a known user without the right: 403 until a ClusterRole grants the path.
        status, body = self.admin_as(tokens["alice"])
        self.assertEqual(status, 403, body)
        self.assertIn(b"alice", body)
        for path, obj in (("/apis/rbac.authorization.k8s.io/v1/clusterroles",
                           {"kind": "ClusterRole", "metadata": {"name": "nodegate-debug"},
                            "rules": [{"nonResourceURLs": ["/debug/*"], "verbs": ["get"]}]}),
                          ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                           {"kind": "ClusterRoleBinding", "metadata": {"name": "alice-debug"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                        "name": "nodegate-debug"},
                            "subjects": [{"kind": "User", "name": "alice"}]})):
            code, body, _ = self.api.api("POST", path, {"apiVersion": "rbac.authorization.k8s.io/v1", **obj})
            self.assertEqual(code, 201, body)
        # A refusal is cached briefly (2 s): the grant shows within a few seconds.
        ok, _ = eventually(lambda: self.admin_as(tokens["alice"])[0] == 200)
        self.assertTrue(ok)
        self.assertIn("pods", json.loads(self.admin_as(tokens["alice"])[1]))
        # Probes need nothing.
        self.assertEqual(self.admin_as(None, "/healthz")[0], 200)


SLOW_NODES = 8000  # one at a time: 32 million decisions, far more than PLAN_SECONDS of work
PLAN_SECONDS = 3


class AdminListenerTest(unittest.TestCase):
    """nodegate serve --snapshot (no API server needed): a cluster whose plan of every node takes
    far longer than --plan-max-seconds, --admin-max-plans 2, and two --admin-host names."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-admin-")
        snap = os.path.join(self.tmp, "cluster.json")
        items = [{"kind": "Node", "apiVersion": "v1",
                  "metadata": {"name": f"n{i:05d}", "labels": {"pool": "a"}},
                  "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for i in range(SLOW_NODES)]
        items.append({"kind": "NodeDisruptionBudget", "apiVersion": "nodegate.io/v1alpha1",
                      "metadata": {"name": "one"},
                      "spec": {"nodeSelector": {"matchLabels": {"pool": "a"}}, "maxDisruptedNodes": 1}})
        with open(snap, "w", encoding="utf-8") as f:
            json.dump({"kind": "List", "items": items}, f)
        cert, key = os.path.join(self.tmp, "ng.crt"), os.path.join(self.tmp, "ng.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=nodegate"],
                       check=True, capture_output=True, timeout=30)
        port_file = os.path.join(self.tmp, "ng.port")
        self.log = open(os.path.join(self.tmp, "ng.log"), "wb")
        self.port = free_port()
        self.proc = subprocess.Popen(
            WRAPPER + [BINARY, "serve", "--snapshot", snap, "--listen", "127.0.0.1:0", "--port-file", port_file,
                       "--tls-cert", cert, "--tls-key", key, "--admin-listen", f"127.0.0.1:{self.port}",
                       "--admin-max-plans", "2", "--plan-max-seconds", str(PLAN_SECONDS),
                       "--admin-host", "nodegate.example,ng.internal", "--admin-host", "Other.Example",
                       "--shutdown-grace-seconds", "1"],
            stdout=self.log, stderr=subprocess.STDOUT)
        ok, _ = eventually(lambda: self.proc.poll() is not None
                           or self.get("/readyz")[0] == 200, 3 * WAIT_S)
        if self.proc.poll() is not None or not ok:
            self.tearDown()
            self.fail("nodegate did not start")

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3 * WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        rc = self.proc.returncode
        with open(os.path.join(self.tmp, "ng.log"), encoding="utf-8", errors="replace") as f:
            log = f.read()[-4000:]
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(rc, 0, "nodegate did not exit cleanly:\n" + log)

    def get(self, path, host=None):
        try:
            status, _, data = ask_admin(self.port, "GET", path, host=host)
            return status, data
        except OSError:
            return 0, b""

    def test_admin_host_names_are_answered(self):
        for host in ("nodegate.example:8081", "ng.internal", "other.example", "NODEGATE.EXAMPLE"):
            self.assertEqual(self.get("/debug/cache", host)[0], 200, host)
        for host in ("evil.example", "example", "nodegate.example.evil", "ng.internal,evil"):
            status, data = self.get("/debug/cache", host)
            self.assertEqual(status, 421, (host, data))
            self.assertNotIn(b"n00001", data)

    def test_dumps_asked_one_after_another_are_never_refused(self):
        """One dump at a time is sent, but a client that has read a whole dump and asks again
        at once (a script polling the cache) is never told one is still being sent: the slot
        is given back before the answer's last bytes go out."""
        refused = [i for i in range(40) if self.get("/debug/cache")[0] != 200]
        self.assertEqual(refused, [], "dumps asked after the previous one was read were refused")

    def test_plans_run_beside_the_probes_and_one_over_the_limit_gets_429(self):
        """Finding 4: while two plans run (each for PLAN_SECONDS, its time cap), the probes,
        /metrics and /v1/evaluate answer at once, and a third plan gets 429 with Retry-After."""
        answers = {}

        def plan(i):
            answers[i] = ask_admin(self.port, "POST", "/v1/plan", body={"nodeSelector": {}})

        threads = [threading.Thread(target=plan, args=(i,)) for i in range(2)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.5)  # both plans are being computed: they take PLAN_SECONDS
        for path in ("/healthz", "/readyz", "/metrics", "/debug/cache"):
            t1 = time.monotonic()
            status, _ = self.get(path)
            waited = time.monotonic() - t1
            print(f"\n  figures: {path} answered in {waited * 1000:.0f} ms while two plans ran", file=sys.stderr)
            self.assertEqual(status, 200, path)
            self.assertLess(waited, 5)
            self.assertTrue(all(t.is_alive() for t in threads), f"{path} waited for the plans")
        status, _, data = ask_admin(self.port, "POST", "/v1/evaluate", body={"spec": {"nodeNames": ["n00001"]}})
        self.assertEqual(status, 200, data)
        self.assertTrue(all(t.is_alive() for t in threads), "/v1/evaluate waited for the plans")
        status, headers, data = ask_admin(self.port, "POST", "/v1/plan", body={"nodes": ["n00001"]})
        self.assertEqual(status, 429, data)
        self.assertEqual(headers.get("Retry-After"), "5")
        self.assertIn("--admin-max-plans", json.loads(data)["message"])
        for t in threads:
            t.join(60)
        took = time.monotonic() - t0
        print(f"  figures: two plans answered in {took:.1f} s (time cap {PLAN_SECONDS} s)", file=sys.stderr)
        for i in range(2):
            status, _, data = answers[i]
            self.assertEqual(status, 200, data)
            summary = json.loads(data)["summary"]
            self.assertTrue(summary["truncated"])
            self.assertEqual(summary["stoppedBy"], "time")
            self.assertGreater(summary["notPlanned"], 0)
        # Their slots are free again.
        status, _, data = ask_admin(self.port, "POST", "/v1/plan", body={"nodes": ["n00001"]})
        self.assertEqual(status, 200, data)


if __name__ == "__main__":
    unittest.main()
