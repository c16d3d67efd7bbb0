#!/usr/bin/env python3
"""e2e: multistep application hooks (hookV2BasePath), as Criteo's node-disruption-controller
speaks them. Once every other check of a request passes, nodegate POSTs Criteo's Disruption
(uid, name, type, nodes, createdBy, creationDate, startDate, deadlineDate, duration) to
<base>/prepare; 200 makes the budget preparing (the request stays Pending and holds its share),
424 refuses, 425 + Retry-After asks to be asked again then; a preparing budget gets <base>/ready
until it answers 200, and the request is granted when every such budget is ready. When the
request is deleted, every budget that prepared gets <base>/terminate, and nodegate's finalizer
holds the object until each answered 200.

The hook server here is a Criteo application manager in a few lines: per base path a script of
answers for each step, every request recorded (path, body, Authorization). Loopback HTTPS with a
private CA, as in test_hooks.py.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import base64
import json
import os
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import WAIT_S, eventually  # noqa: E402
from test_gate import ADB_PATH, NDB_PATH, ON_TEST1  # noqa: E402
from test_hooks import HookHandler, HookServer, HookTest, pem_b64  # noqa: E402

ND_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptions"
SECRETS = "/api/v1/namespaces/default/secrets"


class StepHandler(HookHandler):
    """POST <base>/<step>: the server's script for (base, step) says what to answer, one entry
    per call (the last one repeats): (code, retry_after or None, sleep seconds)."""

    def handle_one(self):
        self.close_connection = True
        body = self.read_body()
        url = urllib.parse.urlsplit(self.path)
        base, _, step = url.path.rpartition("/")
        rec = self.server.record(self.command, self.path, self.headers, body)
        rec["auth"] = self.headers.get("Authorization")
        with self.server.lock:
            script = self.server.script.get((base, step)) or [(404, None, 0)]
            n = self.server.calls.get((base, step), 0)
            self.server.calls[(base, step)] = n + 1
            code, after, sleep = script[min(n, len(script) - 1)]
        try:
            time.sleep(sleep)
            self.answer(code, b"", [("Retry-After", str(after))] if after is not None else [])
            rec["outcome"] = "complete"
        except OSError as e:
            rec["outcome"] = f"aborted: {type(e).__name__}"

    do_POST = handle_one


class StepServer(HookServer):
    def __init__(self, cert, key):
        super().__init__(cert, key)
        self.RequestHandlerClass = StepHandler
        self.script = {}  # (base, step) -> [(code, retry_after, sleep)]
        self.calls = {}

    def steps(self, base, path=None):
        """The requests to @base (every step, or /@path), in arrival order."""
        return [r for r in self.requests() if urllib.parse.urlsplit(r["path"]).path.startswith(base + "/")
                and (path is None or r["path"].endswith("/" + path))]


class HookV2Test(HookTest):
    def setUp(self):
        super().setUp()
        # The same certificates, a server that speaks the multistep protocol.
        self.hooks.stop()
        self.hooks = StepServer(os.path.join(self.tmp, "hook.crt"),
                                os.path.join(self.tmp, "hook.key")).start()

    def script(self, base, **steps):
        for step, answers in steps.items():
            self.hooks.script[(base, step)] = answers

    def v2_adb(self, name, base, max_disruptions=1, **hook):
        body = self.create(ADB_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "maxDisruptions": max_disruptions,
                     "hookV2BasePath": dict({"url": self.hooks.url(base), "caBundle": pem_b64(self.ca)},
                                            **hook)}})
        ok, _ = eventually(lambda: self.budget_status(f"{ADB_PATH}/{name}").get("watchedNodes") == ["node1"])
        self.assertTrue(ok, f"ADB {name} never watched node1")
        return body

    def get_nd(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body if code == 200 else None

    def delete_nd(self, name):
        code, body, _ = self.api.api("DELETE", f"{ND_PATH}/{name}")
        self.assertEqual(code, 200, body)

    def v2_entry(self, st, kind, name, ns="default"):
        ref = {"kind": kind, "name": name}
        if ns:
            ref["namespace"] = ns
        found = [e for e in st.get("disruptedDisruptionBudgets") or [] if e.get("reference") == ref]
        self.assertEqual(len(found), 1, f"no single verdict for {kind} {name}: {st}")
        return found[0]

    def test_V01_prepare_then_ready_grants_and_delete_terminates(self):
        self.script("/db", prepare=[(200, None, 0)], ready=[(200, None, 0)],
                    terminate=[(200, None, 0)])
        self.v2_adb("app", "/db")
        nd = self.nd("v01", dict(ON_TEST1, type="kernel-upgrade", duration="1h"))
        st, took = self.wait_state("v01", "Granted")
        print(f"\n  create -> prepare -> ready -> Granted in {took:.3f} s", file=sys.stderr)
        e = self.v2_entry(st, "ApplicationDisruptionBudget", "app")
        self.assertEqual((e["ok"], e.get("preparing")), (True, True), e)
        self.assertIn("ready (POST /ready: HTTP status 200)", e["reason"])
        steps = [urllib.parse.urlsplit(r["path"]).path for r in self.hooks.steps("/db")]
        self.assertEqual(steps, ["/db/prepare", "/db/ready"])
        sent = json.loads(self.hooks.steps("/db", "prepare")[0]["body"])
        # Criteo's Disruption: the nodes are those of the budget (pod1 is on node1).
        self.assertEqual(sent["uid"], nd["metadata"]["uid"])
        self.assertEqual((sent["name"], sent["type"], sent["nodes"], sent["duration"]),
                         ("v01", "kernel-upgrade", ["node1"], 3600))
        for k in ("createdBy", "creationDate", "startDate", "deadlineDate"):
            self.assertIn(k, sent)
        self.assertIsNone(self.hooks.steps("/db", "prepare")[0]["auth"])
        # Deleted: /terminate first, then the object goes.
        self.delete_nd("v01")
        ok, _ = eventually(lambda: self.get_nd("v01") is None)
        self.assertTrue(ok, "v01 never went after its /terminate")
        term = self.hooks.steps("/db", "terminate")
        self.assertEqual(len(term), 1)
        self.assertEqual(json.loads(term[0]["body"])["uid"], nd["metadata"]["uid"])
        self.assertEqual(self.metric_sum("nodegate_hook_v2_requests_total", name="app",
                                         step="prepare", result="ok"), 1)

    def test_V02_prepare_refused_rejects_and_owes_no_terminate(self):
        self.script("/no", prepare=[(424, None, 0)], terminate=[(200, None, 0)])
        self.v2_adb("app", "/no")
        self.nd("v02", ON_TEST1)
        st, _ = self.wait_state("v02", "Rejected")
        e = self.v2_entry(st, "ApplicationDisruptionBudget", "app")
        self.assertFalse(e["ok"])
        self.assertFalse(e.get("preparing", False))
        self.assertIn("refused the disruption: POST /prepare: HTTP status 424", e["reason"])
        self.delete_nd("v02")
        ok, _ = eventually(lambda: self.get_nd("v02") is None)
        self.assertTrue(ok)
        self.assertEqual(self.hooks.steps("/no", "terminate"), [])

    def v2_ndb(self, name, base, max_nodes, **hook):
        self.create(NDB_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
            "metadata": {"name": name},
            "spec": dict(ON_TEST1, maxDisruptedNodes=max_nodes,
                         hookV2BasePath=dict({"url": self.hooks.url(base), "caBundle": pem_b64(self.ca)},
                                             **hook))})
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodedisruptionbudgets"))
        self.assertTrue(ok)

    def test_V03_ready_425_is_asked_again_at_retry_after(self):
        # Not ready twice (Retry-After: 1), then ready. The request holds its share of the pool
        # meanwhile, so a second request for the pool's other node does not even prepare.
        self.script("/slow", prepare=[(200, None, 0)],
                    ready=[(425, 1, 0), (425, 1, 0), (200, None, 0)], terminate=[(200, None, 0)])
        self.v2_ndb("pool", "/slow", 1)
        self.nd("v03", {"nodeNames": ["node1"]})
        ok, _ = eventually(lambda: self.hooks.steps("/slow", "prepare"))
        self.assertTrue(ok)
        self.nd("v03b", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        st, took = self.wait_state("v03", "Granted")
        e = self.v2_entry(st, "NodeDisruptionBudget", "pool", ns=None)
        self.assertEqual((e["ok"], e.get("preparing")), (True, True), e)
        ready = self.hooks.steps("/slow", "ready")
        self.assertEqual(len(ready), 3, [r["path"] for r in ready])
        gaps = [b["t"] - a["t"] for a, b in zip(ready, ready[1:])]
        print(f"\n  /ready asked {len(ready)} times, gaps {[round(g, 2) for g in gaps]} s",
              file=sys.stderr)
        for g in gaps:
            self.assertGreaterEqual(g, 0.9, gaps)  # Retry-After: 1 honoured
        st_b = self.status("v03b")
        self.assertEqual(st_b.get("state"), "Pending", st_b)
        self.assertIn("NodeDisruptionBudget pool: 1 of 1 in use", st_b["conditions"][0]["message"])
        prepared = [json.loads(r["body"])["name"] for r in self.hooks.steps("/slow", "prepare")]
        self.assertEqual(prepared, ["v03"],
                         "the second request must not prepare while the first holds the pool")
        self.assertEqual(self.metric_sum("nodegate_hook_v2_requests_total", name="pool",
                                         step="ready", result="later"), 2)

    def test_V04_terminate_failing_holds_the_delete_until_it_answers(self):
        self.script("/stuck", prepare=[(200, None, 0)], ready=[(200, None, 0)],
                    terminate=[(503, None, 0)])
        self.v2_adb("app", "/stuck")
        self.nd("v04", ON_TEST1)
        self.wait_state("v04", "Granted")
        self.delete_nd("v04")
        ok, _ = eventually(lambda: len(self.hooks.steps("/stuck", "terminate")) >= 2)
        self.assertTrue(ok, "a failed /terminate must be asked again")
        obj = self.get_nd("v04")
        self.assertIsNotNone(obj, "the finalizer must hold the request until /terminate answers")
        self.assertTrue(obj["metadata"].get("deletionTimestamp"))
        self.script("/stuck", terminate=[(200, None, 0)])
        # The third attempt comes 10 s after the second (5 s doubling).
        ok, _ = eventually(lambda: self.get_nd("v04") is None, timeout=WAIT_S + 12)
        self.assertTrue(ok, "v04 never went once /terminate answered 200")

    def test_V07_terminate_that_never_answers_is_given_up_at_the_deadline(self):
        self.ngc({"healthHooks": {"terminateDeadlineSeconds": 3}})
        self.script("/mute", prepare=[(200, None, 0)], ready=[(200, None, 0)],
                    terminate=[(200, None, 30)])
        self.v2_adb("app", "/mute", timeoutSeconds=1)
        self.nd("v07", ON_TEST1)
        self.wait_state("v07", "Granted")
        t0 = time.monotonic()
        self.delete_nd("v07")
        ok, _ = eventually(lambda: self.get_nd("v07") is None)
        took = time.monotonic() - t0
        print(f"\n  a /terminate that never answers: the request went {took:.1f} s after its delete "
              f"(terminateDeadlineSeconds 3, timeoutSeconds 1)", file=sys.stderr)
        self.assertTrue(ok, "v07 must go once terminateDeadlineSeconds passed")
        self.assertGreaterEqual(len(self.hooks.steps("/mute", "terminate")), 1)
        ev, _ = eventually(lambda: [e for e in self.events("v07") if e["reason"] == "TerminateAbandoned"])
        self.assertTrue(ev, "a TerminateAbandoned Event must say the budgets were not told")
        self.assertGreaterEqual(self.metric_sum("nodegate_hook_v2_requests_total", name="app",
                                                step="terminate", result="timeout") or 0, 1)

    def test_V05_node_budget_hook_with_a_bearer_token(self):
        self.create(SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook-token"},
                              "data": {"token": base64.b64encode(b"s3cr3t-jwt").decode()}})
        # nodegate reads that one Secret only: its team grants it, by name.
        self.create("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "nodegate-hook-token"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["hook-token"],
                       "verbs": ["get"]}]})
        self.create("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "nodegate-hook-token"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "nodegate-hook-token"},
            "subjects": [{"kind": "ServiceAccount", "name": "nodegate", "namespace": "nodegate"}]})
        self.script("/pool", prepare=[(200, None, 0)], ready=[(200, None, 0)],
                    terminate=[(200, None, 0)])
        self.v2_ndb("pool", "/pool", 2, tokenSecretRef={"namespace": "default", "name": "hook-token",
                                                        "key": "token"})
        self.nd("v05", ON_TEST1)
        st, _ = self.wait_state("v05", "Granted")
        e = self.v2_entry(st, "NodeDisruptionBudget", "pool", ns=None)
        self.assertTrue(e.get("preparing"), e)
        for r in self.hooks.steps("/pool"):
            self.assertEqual(r["auth"], "Bearer s3cr3t-jwt")
        self.assertEqual(sorted(json.loads(self.hooks.steps("/pool", "prepare")[0]["body"])["nodes"]),
                         ["node1", "node2"])
        # The token is never logged.
        self.assertNotIn("s3cr3t-jwt", self.ng.read_log())

    def test_V06_a_slow_prepare_holds_up_no_other_request(self):
        self.script("/lazy", prepare=[(200, None, 6)], ready=[(200, None, 0)],
                    terminate=[(200, None, 0)])
        self.v2_adb("app", "/lazy")
        self.nd("v06", {"nodeNames": ["node1"]})
        ok, _ = eventually(lambda: self.hooks.steps("/lazy", "prepare"))
        self.assertTrue(ok)
        t0 = time.monotonic()
        self.nd("other", {"nodeNames": ["node3"]})
        self.wait_state("other", "Granted")
        took = time.monotonic() - t0
        print(f"\n  an unrelated request granted in {took:.3f} s while /prepare sleeps 6 s",
              file=sys.stderr)
        # Granted while the hook server was still sleeping on /prepare.
        self.assertIsNone(self.hooks.steps("/lazy", "prepare")[0]["outcome"],
                          "an unrelated request waited for a slow /prepare")
        self.wait_state("v06", "Granted")


def load_tests(loader, tests, pattern):
    return unittest.TestSuite(HookV2Test(n) for n in loader.getTestCaseNames(HookV2Test)
                              if n in vars(HookV2Test))


if __name__ == "__main__":
    unittest.main()
