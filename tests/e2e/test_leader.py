#!/usr/bin/env python3
"""e2e: Lease-based leader election (controller/leader.h, docs/leader-election.md) against the
test API server. Each candidate is a tests/support/leader-driver process that prints a JSON line
whenever its leadership changes, stamped with CLOCK_MONOTONIC (the clock of Python's
time.monotonic() on Linux), so the test can compare moments across processes.

Short timings (lease 3000 ms, renew deadline 2000 ms, retry 500 ms) keep the suite quick.
Every wait is bounded; loopback only. Measured takeover times are printed.

Environment: LEADER_DRIVER (the driver binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVER = os.environ.get("LEADER_DRIVER", os.path.join(ROOT, "build", "tests", "leader-driver"))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
from ktestapi.testing import ServerProcess  # noqa: E402

NS = "nodegate"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
DURATION_MS, RENEW_MS, RETRY_MS = 3000, 2000, 500
# The acquire loop waits retry x [1, 2.2) (client-go's JitterFactor 1.2).
MAX_ROUND_S = 2.2 * RETRY_MS / 1000
WAIT_S = 20  # upper bound for any single wait; the expected times are a few seconds
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def eventually(fn, timeout=WAIT_S, interval=0.01):
    """Polls fn until truthy; returns the value or None after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


class Driver:
    """One leader-driver process and the events it printed."""

    def __init__(self, srv, tmp, name, tag):
        self.identity = "%s_%s-%s" % (socket.gethostname(), tag, os.urandom(4).hex())
        self.log_path = os.path.join(tmp, "%s-%s.log" % (name, tag))
        self.log = open(self.log_path, "wb")
        self.events = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [DRIVER, "--kubeconfig", srv.kubeconfig, "--identity", self.identity,
             "--namespace", NS, "--name", name, "--duration-ms", str(DURATION_MS),
             "--renew-ms", str(RENEW_MS), "--retry-ms", str(RETRY_MS)],
            stdout=subprocess.PIPE, stderr=self.log)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            ev["t"] = ev["mono_us"] / 1e6
            with self.lock:
                self.events.append(ev)

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def leading(self):
        """The last sampled state (False before the first sample)."""
        evs = [e for e in self.snapshot() if e["event"] == "leader"]
        return bool(evs) and evs[-1]["leader"]

    def gains(self):
        return [e for e in self.snapshot() if e["event"] == "leader" and e["leader"]]

    def losses(self):
        return [e for e in self.snapshot() if e["event"] == "leader" and not e["leader"]]

    def wait_gain(self, timeout=WAIT_S):
        g = eventually(self.gains, timeout)
        return g[0]["t"] if g else None

    def stderr(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-3000:]

    def terminate(self, timeout=WAIT_S):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self):
        """Stops the driver (SIGTERM, so sanitizer builds check the whole shutdown) and returns
        its exit status, or None when the test had already ended it."""
        rc = None
        if self.proc.poll() is None:
            try:
                rc = self.terminate(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                rc = "timeout"
        self.reader.join(10)
        self.proc.stdout.close()
        self.log.close()
        return rc


class LeaderElection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess()
        cls.srv.start()
        code, body, _ = cls.srv.api("POST", "/api/v1/namespaces",
                                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        assert code == 201, (code, body)
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def setUp(self):
        type(self).count += 1
        self.name = "gate-%d" % self.count
        self.tmp = tempfile.mkdtemp(prefix="leader-test-")
        self.drivers = []

    def tearDown(self):
        self.srv.api("DELETE", "/_control/faults")
        problems = []
        for d in self.drivers:
            rc = d.close()
            with open(d.log_path, encoding="utf-8", errors="replace") as f:
                err = f.read()
            if rc not in (None, 0):
                problems.append("%s exited %r" % (d.identity, rc))
            if "AddressSanitizer" in err or "LeakSanitizer" in err or "runtime error:" in err:
                problems.append("%s sanitizer report:\n%s" % (d.identity, err[-3000:]))
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(problems, [])
        self.srv.check_audit()   # the server is the class's: each test answers for its own writes

    def start(self, tag):
        d = Driver(self.srv, self.tmp, self.name, tag)
        self.drivers.append(d)
        return d

    def logs(self):
        return "\n".join("--- %s:\n%s" % (d.identity, d.stderr()) for d in self.drivers)

    def lease(self):
        code, body, _ = self.srv.api("GET", "%s/%s" % (LEASES, self.name))
        self.assertEqual(code, 200, body)
        return body

    def leader_first(self):
        """Starts A, waits for it to lead, then starts B. Returns (A, B)."""
        a = self.start("a")
        t0 = time.monotonic()
        ta = a.wait_gain()
        self.assertIsNotNone(ta, "A never became leader\n" + self.logs())
        print("\n  A acquired after %.3f s" % (ta - t0), file=sys.stderr)
        b = self.start("b")
        self.assertTrue(eventually(lambda: any(e["event"] == "start" for e in b.snapshot())),
                        "B did not start\n" + self.logs())
        return a, b

    def watch_both(self, a, b, seconds, a_alive=lambda: True):
        """Polls both drivers' latest samples for @seconds: never both leading."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.assertFalse(a_alive() and a.leading() and b.leading(), "two leaders\n" + self.logs())
            time.sleep(0.01)

    # (1)
    def test_1_acquire(self):
        a = self.start("a")
        t0 = time.monotonic()
        ta = a.wait_gain()
        self.assertIsNotNone(ta, self.logs())
        print("\n  acquired after %.3f s" % (ta - t0), file=sys.stderr)
        self.assertLess(ta - t0, 2.0, self.logs())
        spec = self.lease()["spec"]
        self.assertEqual(spec["holderIdentity"], a.identity)
        self.assertEqual(spec["leaseDurationSeconds"], DURATION_MS // 1000)
        self.assertEqual(spec["leaseTransitions"], 0)
        self.assertRegex(spec["acquireTime"], MICROTIME)
        self.assertRegex(spec["renewTime"], MICROTIME)
        # Renewals every retry period move renewTime, not acquireTime.
        first = spec["renewTime"]
        spec2 = eventually(lambda: (lambda s: s if s["renewTime"] != first else None)(self.lease()["spec"]), 5)
        self.assertIsNotNone(spec2, "renewTime never advanced\n" + self.logs())
        self.assertEqual(spec2["acquireTime"], spec["acquireTime"])
        self.assertEqual(spec2["holderIdentity"], a.identity)

    # (2) and (3)
    def test_2_follower_waits_then_takes_over_on_release(self):
        a, b = self.leader_first()
        # Longer than the lease duration: B must respect A's renewals, not the lease's age.
        self.watch_both(a, b, 2 * DURATION_MS / 1000)
        self.assertEqual(b.gains(), [], "B led while A renewed\n" + self.logs())
        self.assertEqual(a.losses(), [], self.logs())
        lease = self.lease()
        self.assertEqual(lease["spec"]["holderIdentity"], a.identity)

        stream = self.srv.watch("%s?watch=1&resourceVersion=%s&fieldSelector=metadata.name%%3D%s"
                                % (LEASES, lease["metadata"]["resourceVersion"], self.name), timeout=WAIT_S)
        try:
            t_term = time.monotonic()
            self.assertEqual(a.terminate(), 0, self.logs())
            tb = b.wait_gain()
            self.assertIsNotNone(tb, "B never took over\n" + self.logs())
            takeover = tb - t_term
            print("\n  takeover after SIGTERM (release): %.3f s" % takeover, file=sys.stderr)
            # A released the lease: B takes it at its next round, well inside a lease duration.
            self.assertLess(takeover, DURATION_MS / 1000, self.logs())
            holders = []
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline and b.identity not in holders:
                ev = stream.next()
                if ev is None:
                    break
                spec = ev["object"]["spec"]
                holders.append(spec.get("holderIdentity"))
                if spec.get("holderIdentity") == "":
                    self.assertEqual(spec["leaseDurationSeconds"], 1)
        finally:
            stream.close()
        self.assertIn("", holders, "no release was written: %r" % holders)
        self.assertIn(b.identity, holders)
        self.assertLess(holders.index(""), holders.index(b.identity), holders)
        self.assertNotIn(a.identity, holders[holders.index(""):])
        self.assertIn('"lease released"', a.stderr())
        spec = self.lease()["spec"]
        self.assertEqual(spec["holderIdentity"], b.identity)
        self.assertEqual(spec["leaseTransitions"], 1)
        self.assertEqual(spec["leaseDurationSeconds"], DURATION_MS // 1000)
        # A's own view ended before it exited.
        self.assertEqual(a.snapshot()[-1]["event"], "stopped")

    # (4)
    def test_3_takeover_after_sigkill(self):
        a, b = self.leader_first()
        self.watch_both(a, b, 1.0)  # A renews at least once with B watching
        t_kill = time.monotonic()
        a.proc.kill()
        a.proc.wait(WAIT_S)
        tb = b.wait_gain()
        self.assertIsNotNone(tb, "B never took over\n" + self.logs())
        takeover = tb - t_kill
        print("\n  takeover after SIGKILL (lease expiry): %.3f s" % takeover, file=sys.stderr)
        # Never two leaders: B's first leading sample comes after A died, and B waited for the
        # lease to expire, counted from when B last saw A's record change (at most one retry
        # period plus a request before the kill).
        a_gain = a.gains()[0]["t"]
        self.assertGreater(tb, t_kill, self.logs())
        self.assertGreater(tb, a_gain)
        self.assertGreaterEqual(takeover, (DURATION_MS - RETRY_MS) / 1000 - 0.2, self.logs())
        self.assertLess(takeover, DURATION_MS / 1000 + 2 * MAX_ROUND_S + 1.0, self.logs())
        spec = self.lease()["spec"]
        self.assertEqual(spec["holderIdentity"], b.identity)
        self.assertEqual(spec["leaseTransitions"], 1)

    # (5) while leading
    def test_4_renew_survives_conflicts(self):
        a = self.start("a")
        self.assertIsNotNone(a.wait_gain(), self.logs())
        time.sleep(RETRY_MS / 1000)
        code, body, _ = self.srv.api("POST", "/_control/faults",
                                     {"path": "/leases/%s$" % self.name, "method": "PUT", "code": 409,
                                      "count": 3})
        self.assertEqual(code, 200, body)
        before = self.lease()["spec"]["renewTime"]
        # Longer than the renew deadline: the conflicts must not cost leadership.
        time.sleep(RENEW_MS / 1000 + 1.0)
        self.assertTrue(a.leading(), self.logs())
        self.assertEqual(a.losses(), [], self.logs())
        self.assertEqual(len(a.gains()), 1)
        self.assertIn('"lease write conflict"', a.stderr())
        spec = self.lease()["spec"]
        self.assertEqual(spec["holderIdentity"], a.identity)
        self.assertGreater(spec["renewTime"], before)
        self.assertEqual(spec["leaseTransitions"], 0)

    # (5) while acquiring
    def test_5_acquire_survives_conflicts(self):
        code, body, _ = self.srv.api("POST", LEASES, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "labels": {"app": "nodegate"}},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 4}})
        self.assertEqual(code, 201, body)
        code, body, _ = self.srv.api("POST", "/_control/faults",
                                     {"path": "/leases/%s$" % self.name, "method": "PUT", "code": 409,
                                      "count": 3})
        self.assertEqual(code, 200, body)
        t0 = time.monotonic()
        a = self.start("a")
        ta = a.wait_gain()
        self.assertIsNotNone(ta, self.logs())
        print("\n  acquired through 3 conflicts after %.3f s" % (ta - t0), file=sys.stderr)
        self.assertGreaterEqual(a.stderr().count('"lease write conflict"'), 3, self.logs())
        lease = self.lease()
        self.assertEqual(lease["spec"]["holderIdentity"], a.identity)
        self.assertEqual(lease["spec"]["leaseTransitions"], 5)
        # The full-object PUT keeps what it does not own.
        self.assertEqual(lease["metadata"].get("labels"), {"app": "nodegate"})

    # Renewals that keep failing cost leadership at the renew deadline, then it is regained.
    def test_6_renew_deadline(self):
        a = self.start("a")
        self.assertIsNotNone(a.wait_gain(), self.logs())
        time.sleep(RETRY_MS / 1000)
        code, body, _ = self.srv.api("POST", "/_control/faults",
                                     {"path": "/leases/%s$" % self.name, "method": "*", "code": 500,
                                      "count": -1})
        self.assertEqual(code, 200, body)
        t_fault = time.monotonic()
        lost = eventually(a.losses)
        self.assertTrue(lost, "leadership never lost\n" + self.logs())
        after = lost[0]["t"] - t_fault
        print("\n  leadership dropped %.3f s after renewals started failing" % after, file=sys.stderr)
        # The last renewal was at most one retry period (plus a request) before the faults.
        self.assertGreater(after, (RENEW_MS - RETRY_MS) / 1000 - 0.2, self.logs())
        self.assertLess(after, RENEW_MS / 1000 + 0.5, self.logs())
        self.assertIn('"leadership lost"', a.stderr())
        self.srv.api("DELETE", "/_control/faults")
        regained = eventually(lambda: [e for e in a.gains() if e["term"] == 2])
        self.assertTrue(regained, self.logs())
        spec = self.lease()["spec"]
        self.assertEqual(spec["holderIdentity"], a.identity)
        self.assertEqual(spec["leaseTransitions"], 0)  # its own lease: no new transition


if __name__ == "__main__":
    unittest.main()
