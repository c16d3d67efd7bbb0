#!/usr/bin/env python3
"""e2e: the alert gate (docs/gate.md "Alert gate", acceptance F01-F05). NodeGateConfig
spec.alertGate names a Prometheus; before the gate grants anything it asks it, once per round at
most and once per cacheSeconds, and while the answer says firing (or the question failed under
failurePolicy Deny) every request that would be granted stays Pending with a reason naming the
alerts, never Rejected. The Prometheus here is a stand-in served by the test (python3 standard
library, HTTPS on loopback with a certificate from a private CA made in the test's tmp dir) that
answers /api/v1/query and /api/v1/alerts, can be switched between firing, clear, an error and a
silence, and records every request it receives. Loopback is refused to nodegate's outgoing calls
by default, so the NodeGateConfig's healthHooks.allowedCIDRs names 127.0.0.0/8.

Every wait is bounded (WAIT_S); measured delays are printed. Two assertions involve time: F01,
that the end of an alert lets the held requests through within cacheSeconds plus WAIT_S / 2 of
slack, which is what the feature promises; F04, that questions come at most once per
cacheSeconds (an upper bound on a count, whatever the machine's speed).

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import WAIT_S, eventually  # noqa: E402
from test_gate import NDB_PATH, NGC_PATH, GateTest  # noqa: E402
from test_hooks import (HookHandler, HookServer, make_ca, make_server_cert,  # noqa: E402
                        pem_b64)

SECRET = "SECRET-prometheus-text"  # in every answer's free text: must never reach status or Events
POLICY = {"allowedCIDRs": ["127.0.0.0/8"]}  # the stand-in is on loopback: open it


class PromHandler(HookHandler):
    """GET /api/v1/query and /api/v1/alerts, answered by the server's mode:
      firing  the server's alert names: a sample each (query), a firing alert each (alerts), next
              to a pending NodeDown alert and a firing Watchdog that alertNameRegex never matches
      clear   an empty vector; only the pending and the Watchdog alerts
      error   503 with a body that must not be quoted
      hang    no answer for 5 s (past a 1 s timeoutSeconds)"""

    def handle_one(self):
        self.close_connection = True
        url = urllib.parse.urlsplit(self.path)
        self.server.record(self.command, self.path, self.headers, b"")
        mode, names = self.server.mode, list(self.server.names)
        try:
            if mode == "hang":
                time.sleep(5)
                self.answer(200, b"{}")
            elif mode == "error":
                self.answer(503, f"overloaded {SECRET}".encode())
            elif url.path == "/api/v1/query":
                result = [] if mode == "clear" else [
                    {"metric": {"__name__": "ALERTS", "alertname": n, "alertstate": "firing",
                                "summary": SECRET}, "value": [time.time(), "1"]} for n in names]
                self.json({"status": "success", "data": {"resultType": "vector", "result": result}})
            elif url.path == "/api/v1/alerts":
                alerts = [{"labels": {"alertname": "NodeDown"}, "state": "pending"},
                          {"labels": {"alertname": "Watchdog"}, "state": "firing"}]
                if mode == "firing":
                    alerts += [{"labels": {"alertname": n}, "annotations": {"summary": SECRET},
                                "state": "firing", "activeAt": "2025-11-24T15:00:00Z"} for n in names]
                self.json({"status": "success", "data": {"alerts": alerts}})
            else:
                self.answer(404, b"not found")
        except OSError:
            pass  # nodegate gave up (its timeout)

    def json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    do_GET = do_POST = handle_one


class PromServer(HookServer):
    def __init__(self, cert, key):
        super().__init__(cert, key)
        self.RequestHandlerClass = PromHandler
        self.mode = "clear"
        self.names = ["NodeDown", "EtcdHighLatency"]

    def questions(self):
        return [r for r in self.requests() if r["path"].startswith("/api/v1/")]


class AlertGateTest(GateTest):
    """Fixture F without the "db" budget (GateTest): node1, node2 (test1), node3 (test2); no
    budget, so every request would be granted but for the alert gate."""

    def setUp(self):
        super().setUp()
        try:
            self.ca, ca_key = make_ca(self.tmp, "prom-ca")
            cert, key = make_server_cert(self.tmp, self.ca, ca_key)
            self.prom = PromServer(cert, key).start()
        except BaseException:
            super().tearDown()
            raise

    def tearDown(self):
        try:
            super().tearDown()
        finally:
            self.prom.stop()

    def gate_spec(self, **kw):
        return dict({"prometheusURL": f"https://127.0.0.1:{self.prom.port}",
                     "caBundle": pem_b64(self.ca), "alertNameRegex": "NodeDown|Etcd.*",
                     "cacheSeconds": 2}, **kw)

    def ngc(self, alert_gate):
        """Creates (or replaces the spec of) NodeGateConfig default with @alert_gate and waits
        until nodegate reads it."""
        obj = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
               "metadata": {"name": "default"},
               "spec": {"healthHooks": POLICY, "alertGate": alert_gate}}
        code, body, _ = self.api.api("GET", f"{NGC_PATH}/default")
        if code == 200:
            obj["metadata"]["resourceVersion"] = body["metadata"]["resourceVersion"]
            code, body, _ = self.api.api("PUT", f"{NGC_PATH}/default", obj)
            self.assertEqual(code, 200, body)
        else:
            self.create(NGC_PATH, obj)

        want = {k: v for k, v in alert_gate.items() if k != "caBundle"}

        def seen():
            got = ((self.ng.cache() or {}).get("nodegateconfigs") or [{}])[0].get("alertGate") or {}
            return all(got.get(k) == v for k, v in want.items())
        ok, _ = eventually(seen)
        self.assertTrue(ok, f"nodegate never read alertGate {want}: {self.ng.cache().get('nodegateconfigs')}")

    def message(self, name):
        conds = self.status(name).get("conditions") or [{}]
        return conds[0].get("message", "")

    def wait_message(self, name, fragment):
        st, _ = eventually(lambda: self.state_is(name, "Pending")
                           if fragment in self.message(name) else None)
        self.assertIsNotNone(st, f"{name} never Pending with {fragment!r}: {self.status(name)}")
        return st

    def assert_not_leaked(self, *names):
        for n in names:
            self.assertNotIn(SECRET, json.dumps(self.status(n)))
            self.assertNotIn(SECRET, json.dumps(self.events(n)))
            self.assertNotIn("overloaded", json.dumps(self.status(n)))

    def test_F01_a_firing_alert_holds_every_grant_until_it_ends(self):
        self.prom.mode = "firing"
        self.ngc(self.gate_spec())
        names = ["f01a", "f01b", "f01c"]
        self.nd("f01a", {"nodeNames": ["node1"]})
        self.nd("f01b", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        self.nd("f01c", {"nodeNames": ["node3"]})
        reason = "alert gate: 2 alerts firing: NodeDown, EtcdHighLatency"
        for n in names:
            st = self.wait_message(n, reason)
            self.assertTrue(st.get("nextRetryDate"), st)  # without retry.enabled too
        # Held across two expiries of the answer (asked again each time), not rejected, one
        # Event each however often it is decided again, and nothing of the answer but the names
        # shown.
        asked = len(self.prom.questions())
        time.sleep(4.5)
        self.assertGreater(len(self.prom.questions()), asked)
        for n in names:
            self.assertEqual(self.status(n).get("state"), "Pending")
            self.assertIn(reason, self.message(n))
            self.assertEqual(len([e for e in self.events(n) if e["reason"] == "Retrying"]), 1,
                             self.events(n))
        self.assert_not_leaked(*names)
        self.assertEqual(self.ng.metric("nodegate_alert_gate_firing"), 1)
        self.assertGreaterEqual(self.ng.metric('nodegate_alert_gate_evaluations_total{result="firing"}'), 1)
        # Only the alerts API was asked, and never the query API.
        self.assertTrue(all(r["path"] == "/api/v1/alerts" for r in self.prom.questions()))
        # A dry run does not ask Prometheus, and says so.
        status, data = self.ng.admin("POST", "/v1/evaluate", {"spec": {"nodeNames": ["node1"]}})
        self.assertEqual(status, 200)
        d = json.loads(data)
        self.assertEqual(d.get("alertGate"), "not evaluated in a dry run", d)

        # The alert ends: every held request is granted within about cacheSeconds.
        self.prom.mode = "clear"
        t0 = time.monotonic()
        done = {}

        def granted():
            for n in names:
                if n not in done and self.state_is(n, "Granted"):
                    done[n] = time.monotonic() - t0
            return len(done) == len(names)
        ok, _ = eventually(granted, timeout=WAIT_S)
        self.assertTrue(ok, f"not all granted after the alert ended: {done}")
        took = max(done.values())
        print(f"\n  F01: alert ended -> granted after {', '.join(f'{n} {t:.2f} s' for n, t in sorted(done.items()))}"
              f" (cacheSeconds 2)", file=sys.stderr)
        # cacheSeconds, the question's own time and the writes: 5 s of slack on loopback (more
        # under a sanitizer or valgrind, WAIT_S).
        self.assertLess(took, 2 + WAIT_S / 2,
                        "the end of an alert must let requests through within about cacheSeconds")
        self.assertEqual(self.ng.metric("nodegate_alert_gate_firing"), 0)

    def test_F05_an_alert_name_with_a_newline_is_matched_as_prometheus_matches_it(self):
        # Prometheus 3 matches a label value with "^(?s:" re ")$": "." matches a newline too.
        # "Node.*" once stopped at the newline, and the firing alert let the grant through.
        self.prom.mode = "firing"
        self.prom.names = ["Node\nDown"]
        self.ngc(self.gate_spec(alertNameRegex="Node.*"))
        self.nd("f05", {"nodeNames": ["node1"]})
        self.wait_message("f05", "alert gate: 1 alert firing: Node?Down")  # sanitized name

    def test_F02_a_failed_question_holds_under_deny_and_not_under_ignore(self):
        # A query: its samples, named by alertname, hold the grant...
        self.prom.mode = "firing"
        spec = self.gate_spec(query='ALERTS{alertstate="firing"}')
        del spec["alertNameRegex"]
        self.ngc(spec)
        self.nd("f02", {"nodeNames": ["node1"], "retry": {"enabled": True}})
        self.wait_message("f02", "alert gate: 2 alerts firing: NodeDown, EtcdHighLatency")
        # ... and so does the query failing, under failurePolicy Deny.
        self.prom.mode = "error"
        self.wait_message("f02", "alert gate: query failed (HTTP status 5xx); failurePolicy Deny")
        self.assertTrue(all(r["path"].startswith("/api/v1/query?query=ALERTS%7B")
                            for r in self.prom.questions()), self.prom.questions())
        # A silent Prometheus: the question times out (1 s) and still holds.
        self.prom.mode = "hang"
        self.ngc(dict(spec, timeoutSeconds=1))
        self.wait_message("f02", "alert gate: query failed (timeout); failurePolicy Deny")
        self.assert_not_leaked("f02")
        self.assertGreaterEqual(self.ng.metric('nodegate_alert_gate_evaluations_total{result="error"}'), 2)
        # failurePolicy Ignore: the same failure lets the grant through, counted.
        self.prom.mode = "error"
        t0 = time.monotonic()
        self.ngc(dict(spec, failurePolicy="Ignore"))
        _, took = self.wait_state("f02", "Granted")
        print(f"\n  F02: NodeGateConfig changed to failurePolicy Ignore -> granted after {time.monotonic() - t0:.2f} s",
              file=sys.stderr)
        self.assertGreaterEqual(self.ng.metric("nodegate_alert_gate_errors_ignored_total"), 1)

    def test_F03_the_webhook_refuses_invalid_alert_gates(self):
        self.ng.register_budget_webhook(["nodegateconfigs"])
        good = self.gate_spec()
        cases = [
            (dict(good, prometheusURL="http://127.0.0.1:9090"), "spec.alertGate.prometheusURL"),
            (dict(good, prometheusURL="https://prom:9090/?x=1"),
             "spec.alertGate.prometheusURL: must hold no query"),
            (dict(good, prometheusURL="https://"), "spec.alertGate.prometheusURL"),
            (dict(good, prometheusURL="https://user:pw@127.0.0.1:9090"),
             "spec.alertGate.prometheusURL: must carry no credentials"),
            (dict(good, alertNameRegex="Node(Down"),
             "spec.alertGate.alertNameRegex: does not compile: missing closing parenthesis at offset 9"),
            (dict(good, query="up"), "exactly one of query and alertNameRegex"),
            ({k: v for k, v in good.items() if k != "alertNameRegex"},
             "exactly one of query and alertNameRegex"),
            (dict(good, failurePolicy="Maybe"), "spec.alertGate.failurePolicy"),
            (dict(good, cacheSeconds=0), "spec.alertGate.cacheSeconds"),
        ]
        for spec, fragment in cases:
            code, body, _ = self.api.api("POST", NGC_PATH, {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                "metadata": {"name": "default"}, "spec": {"healthHooks": POLICY, "alertGate": spec}})
            msg = body.get("message", "") if isinstance(body, dict) else str(body)
            self.assertTrue(400 <= code < 500, (spec, code, body))
            self.assertIn(fragment, msg, spec)
            print(f"\n  F03: {msg}", file=sys.stderr)
        # A host healthHooks.allowedHosts does not list is refused too.
        code, body, _ = self.api.api("POST", NGC_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
            "spec": {"healthHooks": dict(POLICY, allowedHosts=["*.monitoring.svc"]), "alertGate": good}})
        self.assertTrue(400 <= code < 500, (code, body))
        self.assertIn("matches no NodeGateConfig healthHooks.allowedHosts", body.get("message", ""))
        # The valid one passes, and nothing was ever asked.
        self.ngc(good)
        self.assertEqual(self.prom.questions(), [])

    def test_F04_asked_only_when_something_would_be_granted_once_per_cache(self):
        self.prom.mode = "firing"
        self.ngc(self.gate_spec())
        # A request held by its budget would not be granted: no question.
        self.ndb("none", {"nodeSelector": {"matchLabels": {"testselect": "test2"}}, "maxDisruptedNodes": 0})
        self.nd("f04-budget", {"nodeNames": ["node3"], "retry": {"enabled": True}})
        self.wait_message("f04-budget", "NodeDisruptionBudget none")
        time.sleep(1.5)
        self.assertEqual(self.prom.questions(), [], "asked while nothing would be granted")
        # Under load — six requests that would be granted, status churn — one question per
        # cacheSeconds (2 s), whatever the number of rounds.
        for i in range(3):
            self.nd(f"f04-{i}", {"nodeNames": ["node1"]})
            self.nd(f"f04-r{i}", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        t0 = time.monotonic()
        for n in [f"f04-{i}" for i in range(3)] + [f"f04-r{i}" for i in range(3)]:
            self.wait_message(n, "alert gate: 2 alerts firing")
        time.sleep(max(0.0, 6 - (time.monotonic() - t0)))
        q = self.prom.questions()
        span = q[-1]["t"] - q[0]["t"] if q else 0
        print(f"\n  F04: {len(q)} questions in {span:.2f} s for 6 held requests (cacheSeconds 2)",
              file=sys.stderr)
        # One question per cache period at most: the first, then one each time 2 s expire.
        self.assertLessEqual(len(q), 1 + int(span / 2) + 1, [r["t"] for r in q])
        self.assertGreaterEqual(len(q), 2, "a held request must be asked about again once the cache expires")


def load_tests(loader, tests, pattern):
    """Only AlertGateTest's own tests: GateTest's scenarios (inherited, and imported into this
    module) run in e2e-gate."""
    return unittest.TestSuite(AlertGateTest(n) for n in loader.getTestCaseNames(AlertGateTest)
                              if n in vars(AlertGateTest))


if __name__ == "__main__":
    unittest.main()
