#!/usr/bin/env python3
"""Hostile clients against the real nodegate binary on loopback (docs/security.md): thousands of
silent sockets, half TLS handshakes, slowloris headers, bodies that never finish, a full server,
one address hogging connections — while a canary eviction review must keep being answered within
1 s and resident memory stay bounded. Every wait is bounded; the whole suite runs in well under
two minutes.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import resource
import select
import socket
import ssl
import sys
import tempfile
import shutil
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import test_webhook as tw  # noqa: E402  (the Server helper and review())

# The canary's bound: an eviction review on loopback takes well under 10 ms; a second means the
# webhook is being starved.
CANARY_BOUND_S = 1.0
# Resident memory nodegate may gain while the attack is held (measured: ~10 KiB per silent
# socket, 2,000 of them ~20 MiB).
RSS_GROWTH_BOUND_KIB = 96 * 1024
HEADER_TIMEOUT_S = 2
BODY_TIMEOUT_S = 2


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 16384) if hard != resource.RLIM_INFINITY else 16384
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_silent(port, n, source="127.0.0.1"):
    """n TCP connections that never send a byte (non-blocking connects, from @source)."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((source, 0))
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    return socks


def still_open(socks):
    """How many of @socks the server has not closed (no EOF, no reset)."""
    n = 0
    for s in socks:
        try:
            if s.recv(4096) != b"":
                n += 1  # bytes but no close: still open
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def accept_queue(port):
    """Connections waiting in the accept queue of the socket listening on @port (its rx_queue
    in /proc/net/tcp), 0 when there is no such socket."""
    with open("/proc/net/tcp", encoding="ascii") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                return int(fields[4].split(":")[1], 16)
    return 0


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


class Canary:
    """Sends an eviction review on a fresh connection every 0.2 s from a thread; records each
    answer's latency (a failure counts as infinite)."""

    def __init__(self, srv):
        self.srv = srv
        self.samples = []
        self.errors = []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def one(self):
        t0 = time.monotonic()
        try:
            r, body = self.srv.evict("web-1", uid="canary")
            ok = r.status == 200 and body["response"]["uid"] == "canary"
            if not ok:
                self.errors.append(f"status {r.status}")
        except Exception as e:  # noqa: BLE001 - every failure is a sample
            self.errors.append(repr(e)[:80])
            return float("inf")
        return time.monotonic() - t0

    def run(self):
        while not self.stop_flag.is_set():
            self.samples.append(self.one())
            self.stop_flag.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join(timeout=20)

    def worst(self):
        return max(self.samples) if self.samples else float("inf")


class HostileBase(unittest.TestCase):
    EXTRA = ()

    @classmethod
    def setUpClass(cls):
        cls.fd_limit = raise_fd_limit()
        cls.tmp = tempfile.mkdtemp(prefix="ng-hostile-")
        cls.srv = tw.Server(cls.tmp, extra_args=[
            "--threads", "2", "--header-timeout-seconds", str(HEADER_TIMEOUT_S),
            "--body-timeout-seconds", str(BODY_TIMEOUT_S), "--log-level", "warn", *cls.EXTRA])

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if rc != 0:
            raise AssertionError(f"nodegate exited with {rc}")

    def need_fds(self, n):
        if self.fd_limit < n + 200:
            self.skipTest(f"this process may open {self.fd_limit} files; the test needs {n + 200}")

    def report(self, what, text):
        """One line of figures on stderr (the suite's log): what the attack cost, per run."""
        print(f"\n  figures: {what}: {text}", file=sys.stderr, flush=True)

    def assert_canary(self, canary, what):
        ok = sorted(x for x in canary.samples if x != float("inf"))
        if ok:
            self.report(what, f"canary {len(canary.samples)} answers, median "
                        f"{ok[len(ok) // 2] * 1000:.1f} ms, slowest {canary.worst() * 1000:.1f} ms, "
                        f"{len(canary.errors)} failed")
        self.assertGreaterEqual(len(canary.samples), 3, what)
        self.assertEqual(canary.errors, [], what)
        self.assertLess(canary.worst(), CANARY_BOUND_S, f"{what}: slowest canary answer")

    def assert_rss(self, before_kib, what):
        if self.srv.sanitized():
            return
        grown = self.srv.rss_kib() - before_kib
        self.report(what, f"resident memory grew {grown} KiB")
        self.assertLess(grown, RSS_GROWTH_BOUND_KIB, f"{what}: resident memory grew {grown} KiB")

    def canary_while_held(self, settle_s, what, seconds=1.5):
        """Waits @settle_s for the server to take in what the test opened, then runs the canary
        for @seconds and requires it answered within the bound throughout."""
        time.sleep(settle_s)
        with Canary(self.srv) as c:
            time.sleep(seconds)
        self.assert_canary(c, what)

    def wait_accepted(self, n, within_s):
        """Seconds until the server holds at least @n open files (so has accepted the @n
        connections a test opened), or fails after @within_s. Connections beyond the listen
        backlog wait for the client's SYN to be sent again (1 s, then 3 s): a canary started
        before they are all in would time its own SYN's retry, not the server."""
        t0 = time.monotonic()
        fds = f"/proc/{self.srv.proc.pid}/fd"
        while True:
            held = len(os.listdir(fds))
            if held >= n:
                return time.monotonic() - t0
            if time.monotonic() - t0 > within_s:
                self.fail(f"the server holds {held} files, {n} connections opened {within_s} s ago")
            time.sleep(0.2)

    def wait_taken_in(self, socks, within_s):
        """Seconds until every socket of @socks is connected and the server's accept queue is
        empty (it accepted them all), or fails after @within_s. Opened at once, connections past
        the listen backlog wait for the client's SYN to be sent again (1 s, then 3 s), and so
        would a canary started meanwhile: it would time the retry, not the server."""
        t0 = time.monotonic()
        waiting = {s.fileno(): s for s in socks}
        while True:
            poll = select.poll()
            for fd in waiting:
                poll.register(fd, select.POLLOUT)
            for fd, _ in poll.poll(0):
                waiting.pop(fd, None)
            queued = accept_queue(self.srv.port)
            if not waiting and queued == 0:
                return time.monotonic() - t0
            if time.monotonic() - t0 > within_s:
                self.fail(f"{len(waiting)} of {len(socks)} connections not connected, {queued} not "
                          f"accepted, {within_s} s after they were opened")
            time.sleep(0.05)

    def wait_closed(self, socks, within_s):
        """Seconds until the server closed every socket in @socks, or fails after @within_s."""
        t0 = time.monotonic()
        while True:
            left = still_open(socks)
            if left == 0:
                return time.monotonic() - t0
            if time.monotonic() - t0 > within_s:
                self.fail(f"{left} of {len(socks)} connections still open after {within_s} s")
            time.sleep(0.2)


def tls_connect(port, ctx):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


class DeadlinesTest(HostileBase):
    def test_silent_sockets_do_not_lock_the_webhook_out(self):
        """2,000 connections that never send a byte: the canary keeps its answer time, and each
        silent socket is closed once the header deadline passes."""
        self.need_fds(2000)
        rss0 = self.srv.rss_kib()
        socks = open_silent(self.srv.port, 2000)
        try:
            took = self.wait_taken_in(socks, 20)
            self.report("2000 silent sockets", f"all accepted {took:.1f} s after they were opened")
            with Canary(self.srv) as c:
                time.sleep(1.5)
            self.assert_canary(c, "2000 silent sockets")
            self.assert_rss(rss0, "2000 silent sockets")
            self.wait_closed(socks, HEADER_TIMEOUT_S + 5)
        finally:
            close_all(socks)

    def test_half_handshakes_are_closed(self):
        """1,000 connections that send the first bytes of a ClientHello and stop."""
        self.need_fds(1000)
        socks = open_silent(self.srv.port, 1000)
        try:
            time.sleep(0.3)
            for i, s in enumerate(socks):
                try:
                    s.send(b"\x16" if i % 2 else b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                except OSError:
                    pass
            with Canary(self.srv) as c:
                time.sleep(1.0)
            self.assert_canary(c, "1000 half handshakes")
            self.wait_closed(socks, HEADER_TIMEOUT_S + 5)
        finally:
            close_all(socks)

    def slowloris(self, n):
        """@n TLS connections sending one header byte every 0.3 s until the server closes them
        all (or header deadline + 5 s pass), with a canary running. Returns (canary, seconds
        after its own connect at which each connection was closed: the deadline runs from the
        accept, and connecting 500 takes a while on a busy machine)."""
        conns = []
        opened = []
        try:
            for _ in range(n):
                opened.append(time.monotonic())
                conns.append(tls_connect(self.srv.port, self.srv.ctx))
            for t in conns:
                t.setblocking(False)
            line = b"POST /validate/eviction HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
            t0 = time.monotonic()
            closed_at = {}
            with Canary(self.srv) as c:
                i = 0
                while time.monotonic() - t0 < HEADER_TIMEOUT_S + 5 and len(closed_at) < n:
                    for k, t in enumerate(conns):
                        if k in closed_at:
                            continue
                        try:
                            t.send(line[i:i + 1])
                            if t.recv(1) == b"":
                                closed_at[k] = time.monotonic() - opened[k]
                        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                            pass
                        except OSError:
                            closed_at[k] = time.monotonic() - opened[k]
                    i = (i + 1) % len(line)
                    time.sleep(0.3)
            return c, closed_at
        finally:
            close_all(conns)

    def test_slowloris_headers_cannot_extend_the_deadline(self):
        """500 TLS connections sending one header byte every 0.3 s: closed at the header
        deadline even though bytes keep arriving."""
        self.need_fds(500)
        c, closed_at = self.slowloris(500)
        self.assert_canary(c, "500 slowloris connections")
        self.assertEqual(len(closed_at), 500,
                         "slowloris connections still open after the header deadline")
        self.assertGreaterEqual(min(closed_at.values()), HEADER_TIMEOUT_S - 1)

    def test_silent_and_slowloris_together(self):
        """The whole attack at once: 2,000 silent sockets held while 500 slowloris connections
        trickle; the canary is answered within the bound throughout."""
        self.need_fds(2600)
        rss0 = self.srv.rss_kib()
        socks = open_silent(self.srv.port, 2000)
        try:
            c, closed_at = self.slowloris(500)
            self.assert_canary(c, "2000 silent + 500 slowloris")
            self.assertEqual(len(closed_at), 500)
            self.assert_rss(rss0, "2000 silent + 500 slowloris")
        finally:
            close_all(socks)

    def test_bodies_that_never_finish_are_closed(self):
        """200 requests announcing 1,000 bytes of body and sending 10: closed at the body
        deadline, the canary unaffected."""
        conns = []
        try:
            for _ in range(200):
                t = tls_connect(self.srv.port, self.srv.ctx)
                t.sendall(b"POST /validate/eviction HTTP/1.1\r\nHost: x\r\nContent-Type: "
                          b"application/json\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\"")
                conns.append(t)
            with Canary(self.srv) as c:
                time.sleep(1.0)
            self.assert_canary(c, "200 unfinished bodies")
            t0 = time.monotonic()
            for t in conns:
                t.settimeout(BODY_TIMEOUT_S + 5 - (time.monotonic() - t0))
                try:
                    self.assertEqual(t.recv(1), b"")
                except (ConnectionResetError, ssl.SSLError):
                    pass
        finally:
            close_all(conns)


class RegexBombTest(HostileBase):
    def test_regex_bombs_are_refused_and_cost_nothing(self):
        """A NodeDisruption whose drain filter is a 26-byte regex that glibc's regcomp took
        2.5 s and 1.18 GB to compile: refused by the webhook with a message naming the field,
        resident memory unmoved, the canary unaffected while bombs keep coming."""
        bombs = ["((a{1,100}){1,100}){1,100}", "(((((((((((((((((((((((((((((((((x)))))))))))))))))"
                 ")))))))))))))))))", "a{1000}{1000}"]
        rss0 = self.srv.rss_kib()
        t0 = time.monotonic()
        took = []
        with Canary(self.srv) as c:
            i = -1
            while i < 30 or time.monotonic() - t0 < 1.0:
                i += 1
                bomb = bombs[i % len(bombs)]
                nd = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                      "metadata": {"name": f"bomb-{i}"},
                      "spec": {"nodeNames": ["node1"],
                               "drain": {"podEvictionFilters": [{"byResourceNameRegex": bomb}]}}}
                rev = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": f"b{i}", "operation": "CREATE", "name": f"bomb-{i}",
                                   "kind": {"group": "nodegate.io", "version": "v1alpha1",
                                            "kind": "NodeDisruption"},
                                   "resource": {"group": "nodegate.io", "version": "v1alpha1",
                                                "resource": "nodedisruptions"},
                                   "userInfo": {"username": "mallory"}, "object": nd}}
                t1 = time.monotonic()
                r, data = self.srv.request("POST", "/validate/nodedisruption", json.dumps(rev),
                                           {"Content-Type": "application/json"})
                took.append(time.monotonic() - t1)
                self.assertEqual(r.status, 200)
                resp = json.loads(data)["response"]
                self.assertFalse(resp["allowed"], bomb)
                self.assertIn("podEvictionFilters[0].byResourceNameRegex", resp["status"]["message"])
        took.sort()
        self.report("regex bombs", f"{len(took)} refusals, each answered (connection included) in "
                    f"median {took[len(took) // 2] * 1000:.1f} ms, slowest {took[-1] * 1000:.1f} ms")
        self.assert_canary(c, "regex bombs")
        if not self.srv.sanitized():
            grown = self.srv.rss_kib() - rss0
            self.report("regex bombs", f"resident memory grew {grown} KiB")
            self.assertLess(grown, 10 * 1024, f"resident memory grew {grown} KiB")


class FullServerTest(HostileBase):
    """A small server (400 connections) with a long header deadline: a flood of silent sockets
    fills it, and new clients still get in because the stalest waiting connections are shed."""
    EXTRA = ("--max-connections", "400", "--header-timeout-seconds", "60",
             "--max-connections-per-address", "0")

    def test_full_server_sheds_the_stalest_instead_of_refusing(self):
        self.need_fds(1200)
        socks = open_silent(self.srv.port, 1200)
        try:
            self.canary_while_held(1.0, "a full server")
            self.assertLessEqual(still_open(socks), 400)
            metrics = self.srv.request("GET", "/metrics")[1].decode()
            shed = [l for l in metrics.splitlines()
                    if l.startswith('nodegate_connections_closed_total{reason="shed"}')]
            self.assertTrue(shed and int(shed[0].split()[-1]) >= 700, shed)
        finally:
            close_all(socks)


class CapacityTest(HostileBase):
    """The default --max-connections (10,000): nodegate raises its own open-file limit and holds
    9,500 idle connections at once without shedding or refusing one, while the canary is
    answered. (The header deadline is long, so nothing is closed for silence meanwhile.)"""
    EXTRA = ("--header-timeout-seconds", "60", "--max-connections-per-address", "0")

    def test_ten_thousand_connections_fit(self):
        self.need_fds(9500)
        if self.srv.sanitized():
            # Measured: the canary's answer took 1.9 s under ASan with the suites running beside
            # it, 31 ms in a release build. The capacity is the build operators run; the release
            # stage of ./scripts/test runs this test.
            self.skipTest("capacity is measured on a build without a sanitizer")
        rss0 = self.srv.rss_kib()
        socks = open_silent(self.srv.port, 9500)
        try:
            took = self.wait_accepted(9500, 30)
            self.report("9,500 idle connections", f"all accepted {took:.1f} s after they were opened")
            self.canary_while_held(0.5, "9,500 idle connections")
            self.assertEqual(still_open(socks), 9500, "connections shed or refused below the limit")
            self.report("9,500 idle connections",
                        f"resident memory grew {self.srv.rss_kib() - rss0} KiB")
        finally:
            close_all(socks)


class PerAddressTest(HostileBase):
    """With --max-connections-per-address, one address cannot hold more: the canary, from
    another address, is not affected."""
    EXTRA = ("--max-connections-per-address", "50", "--header-timeout-seconds", "60")

    def test_one_address_cannot_take_every_slot(self):
        socks = open_silent(self.srv.port, 300, source="127.0.0.2")
        try:
            time.sleep(1.0)
            self.assertLessEqual(still_open(socks), 50)
            self.canary_while_held(0, "one address over its limit", seconds=1.0)
        finally:
            close_all(socks)


if __name__ == "__main__":
    unittest.main()
