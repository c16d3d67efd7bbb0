#!/usr/bin/env python3
"""e2e: the what-if planner (docs/planner.md) against the gate it simulates. 30 nodes in three
zones, a NodeDisruptionBudget of 5 over them and an ApplicationDisruptionBudget of 2 over an
application on fifteen of them: `nodegate plan --kubeconfig` says which nodes go together in which
order (Q02), POST /v1/plan says the same on nodegate's live cache (Q03), and the gate, given one
NodeDisruption per node by a maintenance tool that deletes each wave after the same short
drain, grants the same sets in the same order (Q02). The same plan as a picture: `--output svg`
is a valid SVG with a bar per node (O30), and `--output html`, loaded by a real browser
(Debian's chromium, headless), renders that bar per node with no script error; its screenshot
is kept (O31).

The tool pauses the gate (NodeGateConfig paused) while it deletes a wave and unpauses it once
every deletion has been seen: the plan ends a wave's requests at the same instant, and a gate
that saw the deletions one by one could fill the first freed slot before the others are free.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import sys
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import BINARY, E2ETest, ND_PATH, WAIT_S, eventually  # noqa: E402

NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"
NODES = [f"p{i:02d}" for i in range(30)]
WEB = NODES[::2]  # the application's fifteen nodes, every other one in the ranking
START = "2026-11-27T12:00:00Z"
DRAIN_S = 1
SVG_NS = "{http://www.w3.org/2000/svg}"
# Headless chromium as the tests run it: no sandbox (containers), and nothing that reaches for
# the network (closed here), which without these flags it tries at start.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


def artifacts_dir():
    """Where a test keeps what a person may want to look at after it ran (docs/testing.md)."""
    d = os.environ.get("NG_ARTIFACTS") or os.path.join(
        os.environ.get("NG_TEST_LOGDIR") or tempfile.gettempdir(), "artifacts")
    os.makedirs(d, exist_ok=True)
    return d


class RenderedBars(html.parser.HTMLParser):
    """The rendered DOM's bars (rect elements of class bar), labels (text elements' text) and the
    page's body attributes."""

    def __init__(self):
        super().__init__()
        self.bars, self.texts, self.body, self._in_text = 0, [], {}, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "rect" and "bar" in (a.get("class") or "").split():
            self.bars += 1
        elif tag == "text":
            self._in_text = True
            self.texts.append("")
        elif tag == "body":
            self.body = a

    def handle_endtag(self, tag):
        if tag == "text":
            self._in_text = False

    def handle_data(self, data):
        if self._in_text:
            self.texts[-1] += data


class PlanTest(E2ETest):
    def setUp(self):
        super().setUp()
        code, _, _ = self.api.api("DELETE", f"{ADB_PATH}/db")  # fixture F's: not part of this
        self.assertEqual(code, 200)
        for i, name in enumerate(NODES):
            self.create("/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"plan": "yes", "topology.kubernetes.io/zone": f"z{i % 3}"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for name in WEB:
            self.create("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"web-{name}", "labels": {"app": "web"}},
                "spec": {"nodeName": name, "containers": [{"name": "c", "image": "nginx"}]}})
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "five"},
                               "spec": {"nodeSelector": {"matchLabels": {"plan": "yes"}},
                                        "maxDisruptedNodes": 5}})
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "maxDisruptions": 2}})

        def seen():
            c = self.ng.cache() or {}
            return (len(c.get("nodes", [])) == 33 and c.get("nodedisruptionbudgets")
                    and [a["name"] for a in c.get("applicationdisruptionbudgets", [])] == ["web"]
                    and sum(p["name"].startswith("web-p") for p in c.get("pods", [])) == len(WEB))
        ok, _ = eventually(seen)
        self.assertTrue(ok, "the cluster never reached nodegate's cache")

    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def cli_plan(self):
        t0 = time.monotonic()
        p = subprocess.run([BINARY, "plan", "--kubeconfig", self.api.kubeconfig, "--nodes", "plan=yes",
                            "--drain-seconds", str(DRAIN_S), "--start", START, "--output", "json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('"level":"info"', p.stderr)  # the listing's progress is not shown
        print(f"\n  nodegate plan --kubeconfig: {time.monotonic() - t0:.2f} s", file=sys.stderr)
        return json.loads(p.stdout)

    def state(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body.get("status", {}) if code == 200 else None

    def pause(self, paused):
        code, body, _ = self.api.api("PATCH", f"{NGC_PATH}/default", {"spec": {"paused": paused}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: [c.get("paused") for c in (self.ng.cache() or {}).get("nodegateconfigs", [])]
                           == [paused])
        self.assertTrue(ok, f"paused={paused} never reached nodegate")

    def settled(self, left):
        """The gate's round after an unpause is written: every request left is Granted, or Pending
        for a reason other than the pause. The Granted ones, or None while it is not."""
        granted = []
        for name in left:
            st = self.state(name)
            if not st:
                return None
            if st.get("state") == "Granted":
                granted.append(name)
                continue
            msgs = " ".join(c.get("message", "") for c in st.get("conditions", []))
            if st.get("state") != "Pending" or not msgs or "paused" in msgs:
                return None
        return sorted(granted)

    def cli_plan_picture(self, output):
        p = subprocess.run([BINARY, "plan", "--kubeconfig", self.api.kubeconfig, "--nodes", "plan=yes",
                            "--drain-seconds", str(DRAIN_S), "--start", START, "--output", output],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_O30_O31_the_plan_as_a_picture(self):
        """O30: `plan --output svg` is a well-formed SVG with one bar per planned node, each
        node's name as its row's label, and the plan's summary as its title. O31: the HTML page,
        loaded by headless chromium, renders one bar per node and every label, with no script or
        console error; its screenshot (a PNG) is kept as an artifact. What a user notices: the
        picture opens in a browser and shows every node."""
        svg = self.cli_plan_picture("svg")
        root = ET.fromstring(svg)  # O30: valid XML
        self.assertEqual(root.tag, SVG_NS + "svg")
        bars = [r for r in root.iter(SVG_NS + "rect") if "bar" in r.get("class", "").split()]
        self.assertEqual(len(bars), len(NODES))
        labels = {t.text for t in root.iter(SVG_NS + "text")}
        self.assertTrue(set(NODES) <= labels, set(NODES) - labels)
        self.assertTrue(any(t.startswith("Plan for 30 nodes from 2026-11-27T12:00:00Z") for t in labels if t))
        self.assertNotIn("http", svg.replace('xmlns="http://www.w3.org/2000/svg"', ""))
        print(f"\n  plan --output svg: {len(svg)} bytes, {len(svg) / len(NODES):.0f} per node", file=sys.stderr)

        # O31: a real browser. Skipped without chromium, except in CI where it must run.
        browser = shutil.which("chromium")
        if not browser:
            if os.environ.get("CI") == "true":
                self.fail("chromium is not installed: scripts/deps.sh installs it for CI")
            self.skipTest("chromium is not installed (apt-get install chromium); O31 needs it")
        page = self.cli_plan_picture("html")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.html")
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
            shot = os.path.join(artifacts_dir(), "O31-plan.png")
            t0 = time.monotonic()
            p = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp}/profile",
                                f"--screenshot={shot}", "--window-size=1220,700", "--dump-dom",
                                "file://" + path], capture_output=True, text=True, timeout=60)
        print(f"  chromium: {time.monotonic() - t0:.1f} s, screenshot {shot}", file=sys.stderr)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        dom = RenderedBars()
        dom.feed(p.stdout)
        self.assertEqual(dom.bars, len(NODES), p.stdout[:2000])
        self.assertTrue(set(NODES) <= set(dom.texts), set(NODES) - set(dom.texts))
        self.assertEqual(dom.body.get("data-ready"), "1", "the page's script did not run")
        self.assertNotIn("data-errors", dom.body, dom.body.get("data-errors"))
        console = [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln]
        self.assertEqual(console, [], "the page wrote to the console")
        with open(shot, "rb") as f:
            png = f.read()
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000, len(png))

    def test_Q02_Q03_the_gate_grants_the_waves_the_plan_says(self):
        plan = self.cli_plan()
        waves = [w["nodes"] for w in plan["waves"]]
        print(f"  plan: {len(waves)} waves {waves}", file=sys.stderr)
        self.assertEqual(plan["summary"]["planned"], 30)
        self.assertEqual(plan["summary"]["neverGranted"], 0)
        self.assertGreaterEqual(len(waves), 6)  # the NDB allows 5 at a time
        self.assertTrue(all(len(w) <= 5 and sum(n in WEB for n in w) <= 2 for w in waves), waves)
        self.assertTrue(any(lim["reference"] == {"kind": "ApplicationDisruptionBudget", "namespace": "default",
                                                 "name": "web"}
                            for w in plan["waves"] for lim in w["limitedBy"]), "the ADB must bite")
        self.assertEqual(plan["summary"]["totalSeconds"], len(waves) * DRAIN_S)

        # Q03: the admin endpoint answers the same on the live cache.
        status, data = self.ng.admin("POST", "/v1/plan", {
            "nodeSelector": {"matchLabels": {"plan": "yes"}}, "drainSeconds": DRAIN_S, "start": START})
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data), plan)
        status, data = self.ng.admin("POST", "/v1/plan", {"nodes": NODES, "drainSeconds": DRAIN_S,
                                                         "start": START})
        self.assertEqual((status, json.loads(data)), (200, plan))
        status, data = self.ng.admin("POST", "/v1/plan", {"nodes": NODES, "drainSeconds": 0})
        self.assertEqual(status, 422, data)
        self.assertIn("drainSeconds", json.loads(data)["message"])

        # Q02: the maintenance tool, through the gate.
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"}, "spec": {"paused": True}})
        ok, _ = eventually(lambda: (self.ng.cache() or {}).get("nodegateconfigs"))
        self.assertTrue(ok)
        for name in NODES:  # created in name order: the plan's order among equals
            self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                  "metadata": {"name": name},
                                  "spec": {"nodeNames": [name], "type": "maintenance",
                                           "requestor": "nodegate-plan", "retry": {"enabled": True}}})
        ok, _ = eventually(lambda: all((self.state(n) or {}).get("state") == "Pending" for n in NODES))
        self.assertTrue(ok, "the requests never waited on the paused gate")
        left, got = list(NODES), []
        t0 = time.monotonic()
        while left and len(got) <= len(waves):
            self.pause(False)
            wave, _ = eventually(lambda: self.settled(left), timeout=WAIT_S)
            self.assertTrue(wave, f"no wave was granted from {left}")
            time.sleep(0.3)  # and it stays that wave: nothing more is granted late
            self.assertEqual(self.settled(left), wave)
            got.append(wave)
            time.sleep(DRAIN_S)  # the drain
            self.pause(True)
            for name in wave:
                code, _, _ = self.api.api("DELETE", f"{ND_PATH}/{name}")
                self.assertEqual(code, 200)
            ok, _ = eventually(lambda: all(self.state(n) is None for n in wave))
            self.assertTrue(ok, "the gate never let the deleted requests go (its finalizer)")
            left = [n for n in left if n not in wave]
        print(f"  gate: {len(got)} waves in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertEqual(got, waves)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
