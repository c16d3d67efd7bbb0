#!/usr/bin/env python3
"""e2e: the drainer (`nodegate drain`) against the test API server: D01-D20 of
shared/acceptance/drain.md, the drainer's evictions passing nodegate's eviction webhook, a
rolling maintenance of 20 nodes under an NDB of 3, and the time from grant to Drained for a node
with 30 pods.

Each test starts the test API server (fixture tests/apiserver/fixtures/drain-node1.yaml, the
CRDs and manifests/rbac/rbac.json), a NodeGateConfig `default` whose drain backoff is short
({base: 1, max: 2, jitter: 0}), `nodegate serve` registered as the API server's eviction webhook
(it is also the gate: it grants the NodeDisruptions the tests create, since no budget forbids
them), and `nodegate drain`, both as nodegate's service account. The tests assert only what a
user sees through the API server: pods present or gone, the node's spec.unschedulable, taints
and `nodegate.io/drain` annotation, the request's Ready condition and status.drain, Jobs,
Events, the request gone after deletion. Evictions are counted from the API server's record of
the eviction webhook's calls (GET /_control/webhook-calls), deletions from a pod watch.

Every wait is bounded (WAIT_S, six times longer under NG_WRAPPER); measured delays are printed,
never asserted.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository), NG_WRAPPER (a command
prefix for both nodegate processes, e.g. valgrind), NG_SHOW_LOG=1 (print the logs even when a
test passes)."""
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import (BINARY, CRDS, ND_PATH, ROOT, WAIT_S, WRAPPER, Nodegate,  # noqa: E402
                             ServerProcess, eventually, evict, kubectl_rows, make_client_ca, has_failed)
from ktestapi.yamlish import load_all  # noqa: E402  (tests/apiserver is on sys.path now)

DRAIN_FIXTURE = os.path.join(ROOT, "tests", "apiserver", "fixtures", "drain-node1.yaml")
NGC_PATH = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
JOBS_PATH = "/apis/batch/v1/jobs"
VA_PATH = "/apis/storage.k8s.io/v1/volumeattachments"
SA_USER = "system:serviceaccount:nodegate:nodegate"
OPERATION_NS = "nodegate-operations"  # --operation-namespace's default, created by rbac.json
ANNOTATION = "nodegate.io/drain"
FINALIZER = "nodegate.io/drain"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
FAR = "2099-01-01T00:00:00Z"
BACKOFF = {"base": 1, "max": 2, "jitter": 0}

# The fixture's pods on node1, as namespace/name.
WEB, GPU, BARE, SCRATCH = "default/web-1", "default/gpu-1", "default/bare", "default/scratch"
DS, STATIC, DONE, JOB = "kube-system/ds-1", "kube-system/static-1", "default/done", "batch/job-1"
# What `drain: {force: true, deleteEmptyDir: true}` evicts (D02), and what it never touches.
EVICTABLE = (WEB, GPU, BARE, SCRATCH, JOB)
NEVER = (DS, STATIC)
ALL_PODS = EVICTABLE + NEVER + (DONE,)
MAINT_TAINT = {"key": "example.com/maintenance", "effect": "NoSchedule"}
FORCE = {"force": True, "deleteEmptyDir": True}
KARPENTER = "karpenter.sh/do-not-disrupt"
SCALE_DOWN = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
LIFECYCLE = ("MaintenancePlanned", "DrainInProgress", "Drained", "MaintenanceInProgress")


def log(msg):
    print("\n  " + msg, file=sys.stderr)


def drain_setup(**kw):
    """Per-test setup options, read by DrainTest.setUp:
    ngc_drain: merged into the NodeGateConfig's spec.drain (before any nodegate starts);
    kubelet: "immediate" (default) or "grace" (terminating pods linger for their grace period);
    grace_seconds: terminationGracePeriodSeconds given to the fixture's pods on node1;
    journal: the API server writes its journal (every committed write, in order) to self.journal."""
    def deco(fn):
        fn.drain_setup = kw
        return fn
    return deco


class Drainer:
    """`nodegate drain` against a ServerProcess, as nodegate's service account. Its listener is
    plain HTTP on loopback (/healthz, /readyz, /metrics). The log file is appended to, so a
    restarted drainer's log follows the killed one's."""

    def __init__(self, api, tmp, identity="drain-e2e", extra_args=()):
        self.api = api
        self.port_file = os.path.join(tmp, "drain.port")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        self.log_path = os.path.join(tmp, "drain.log")
        self.log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        # The same identity across restarts, as a restarted container of the same pod: the new
        # process takes its own Lease back at once instead of waiting for it to expire.
        self.proc = subprocess.Popen(
            WRAPPER + [BINARY, "drain",
                       "--kubeconfig", os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate"),
                       "--listen", "127.0.0.1:0", "--port-file", self.port_file,
                       "--lease-namespace", "nodegate", "--identity", identity,
                       "--shutdown-grace-seconds", "1", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        eventually(lambda: os.path.exists(self.port_file) and os.path.getsize(self.port_file) > 0
                   or self.proc.poll() is not None, 3 * WAIT_S)
        if self.proc.poll() is not None or not os.path.exists(self.port_file):
            self.kill()
            raise RuntimeError("nodegate drain exited or wrote no port file:\n" + self.read_log())
        time.sleep(0.05)  # the port file may be in the middle of being written
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read().strip())
        ready, _ = eventually(lambda: self.get("/readyz")[0] == 200, 3 * WAIT_S, 0.05)
        if not ready:
            self.kill()
            raise RuntimeError("nodegate drain never became ready:\n" + self.read_log())

    def get(self, path):
        return Nodegate.call(http.client.HTTPConnection("127.0.0.1", self.port, timeout=20), "GET", path)

    def metrics(self):
        """{series (name and labels as printed): value}."""
        return serve_metrics(self)

    def metric(self, name, **labels):
        """The sum of the series of @name whose labels include @labels (None if none)."""
        return metric_sum(self.metrics(), name, **labels)

    def read_log(self, tail=6000):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-tail:]

    def log_lines(self):
        """The drainer's JSON log lines (both runs when restarted)."""
        out = []
        for line in self.read_log(tail=10 ** 9).splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def kill(self):
        """SIGKILL, as a crash or an OOM kill would."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()

    stop = Nodegate.stop  # SIGTERM, SIGKILL after a while; a closed log stays closed


def metric_sum(series, name, **labels):
    found = None
    for k, v in series.items():
        if k != name and not k.startswith(name + "{"):
            continue
        if all(f'{lk}="{lv}"' in k for lk, lv in labels.items()):
            found = (found or 0) + v
    return found


def serve_metrics(ng):
    """{series: value} of the /metrics of @ng (anything with get(path) -> (code, body))."""
    code, body = ng.get("/metrics")
    out = {}
    for line in body.decode(errors="replace").splitlines() if code == 200 else ():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


class Watch(threading.Thread):
    """Records every event of @path from now on, with the time it arrived (resuming after a
    dropped stream). `initial` holds the objects listed at the start."""

    def __init__(self, api, path):
        super().__init__(daemon=True)
        self.api = api
        self.path = path
        code, body, _ = api.api("GET", path)
        assert code == 200, body
        self.initial = body["items"]
        self.rv = body["metadata"]["resourceVersion"]
        self.events = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.start()

    def run(self):
        while not self.done.is_set():
            conn = None
            try:
                conn = self.api.connection(timeout=10)
                conn.request("GET", f"{self.path}?watch=1&allowWatchBookmarks=true&resourceVersion={self.rv}",
                             headers={"Authorization": "Bearer " + self.api.tokens["admin"],
                                      "Accept": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    time.sleep(0.2)
                    continue
                while not self.done.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        break
                    self.rv = ev["object"]["metadata"].get("resourceVersion", self.rv)
                    if ev.get("type") != "BOOKMARK":
                        with self.lock:
                            self.events.append((time.monotonic(), ev["type"], ev["object"]))
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.05)
            finally:
                if conn is not None:
                    conn.close()

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def stop(self):
        self.done.set()
        self.join(5)


class PodWatch(Watch):
    """Every pod event, to tell a graceful delete (a MODIFIED event with deletionTimestamp and a
    grace period > 0) from one with grace 0."""

    def __init__(self, api):
        super().__init__(api, "/api/v1/pods")

    def of(self, ref):
        ns, name = ref.split("/")
        with self.lock:
            return [(t, typ, o) for t, typ, o in self.events
                    if o["metadata"].get("namespace") == ns and o["metadata"].get("name") == name]

    def graceful_delete_seen(self, ref):
        """The grace periods of the pod's terminating states seen, in order. As in a real cluster a
        grace-0 delete first writes the deletion timestamp (grace 0), and the kubelet's final
        delete of a pod terminating gracefully shows one more state, with grace 0."""
        return [o["metadata"].get("deletionGracePeriodSeconds") for _, typ, o in self.of(ref)
                if typ == "MODIFIED" and o["metadata"].get("deletionTimestamp")]

    def deleted(self, ref):
        return any(typ == "DELETED" for _, typ, _ in self.of(ref))


class DrainTest(unittest.TestCase):
    """The test API server with the drainer fixture (or GENERATE), NodeGateConfig `default`,
    `nodegate serve` as the eviction webhook and gate, and `nodegate drain`."""

    GENERATE = None
    FIXTURES = (DRAIN_FIXTURE,)
    NGC_SPEC = {}

    def setUp(self):
        opts = getattr(getattr(self, self._testMethodName), "drain_setup", {})
        self.tmp = tempfile.mkdtemp(prefix="ng-drain-e2e-")
        self.ng = self.drainer = self.watch = None
        self.t_start = time.monotonic()
        ca, crt, key = make_client_ca(self.tmp)
        fixtures = list(self.FIXTURES)
        if opts.get("grace_seconds") is not None:
            fixtures = [self.fixture_with_grace(opts["grace_seconds"])]
        self.journal = os.path.join(self.tmp, "journal.jsonl") if opts.get("journal") else None
        self.api = ServerProcess(fixtures=CRDS + fixtures, generate=self.GENERATE,
                                 kubelet=opts.get("kubelet", "immediate"), start_timeout=300,
                                 extra_args=["--webhook-client-cert", f"{crt}:{key}"]
                                 + (["--journal", self.journal] if self.journal else []))
        self.api.start()
        try:
            spec = json.loads(json.dumps(self.NGC_SPEC))
            spec.setdefault("drain", {})["backoff"] = dict(BACKOFF)
            spec["drain"].update(opts.get("ngc_drain", {}))
            self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                   "metadata": {"name": "default"}, "spec": spec})
            self.ng = Nodegate(self.api, self.tmp, client_ca=ca)
            self.ng.register_webhook()
            self.drainer = Drainer(self.api, self.tmp)
        except BaseException:
            self.abandon_setup()
            raise
        log(f"setup {time.monotonic() - self.t_start:.1f} s")

    def abandon_setup(self):
        """tearDown does not run when setUp fails: show the logs and leave no process behind."""
        for p in (self.drainer, self.ng):
            if p is not None:
                print("\n--- log (tail) ---\n" + p.read_log(), file=sys.stderr)
                p.stop()
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tearDown(self):
        if self.watch is not None:
            self.watch.stop()
        failed = has_failed(self)
        rc_drain = self.drainer.stop() if self.drainer is not None else 0
        rc_ng = self.ng.stop()
        show = failed or rc_drain != 0 or rc_ng != 0 or os.environ.get("NG_SHOW_LOG")
        logs = []
        if show:
            if self.drainer is not None:
                logs.append(("nodegate drain", self.drainer.read_log()))
            logs.append(("nodegate serve", self.ng.read_log()))
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        for name, text in logs:
            print(f"\n--- {name} log (tail) ---\n{text}", file=sys.stderr)
        self.assertEqual(rc_drain, 0, "nodegate drain did not exit 0 on SIGTERM")
        self.assertEqual(rc_ng, 0, "nodegate serve did not exit 0 on SIGTERM")

    @staticmethod
    def fixture_with_grace(seconds):
        """The drainer fixture with terminationGracePeriodSeconds set on node1's pods, as JSON."""
        with open(DRAIN_FIXTURE, encoding="utf-8") as f:
            objs = [o for o in load_all(f.read()) if o]
        for o in objs:
            if o.get("kind") == "Pod":
                o["spec"]["terminationGracePeriodSeconds"] = seconds
        fd, path = tempfile.mkstemp(prefix="drain-grace-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(objs, f)
        return path

    # -- the API, as a user sees it ------------------------------------------------------------
    def create(self, path, obj):
        code, body, _ = self.api.api("POST", path, obj)
        self.assertEqual(code, 201, body)
        return body

    def patch(self, path, body, ctype="application/merge-patch+json"):
        code, out, _ = self.api.api("PATCH", path, body, ctype=ctype)
        self.assertEqual(code, 200, out)
        return out

    def nd(self, name, drain=None, nodes=("node1",), **spec):
        """Creates a NodeDisruption; the gate (nodegate serve) grants it when no budget forbids."""
        spec = dict(spec, nodeNames=list(nodes))
        if drain is not None:
            spec["drain"] = drain
        self.t_created = time.monotonic()
        return self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                     "metadata": {"name": name}, "spec": spec})

    def get_nd(self, name):
        code, body, _ = self.api.api("GET", f"{ND_PATH}/{name}")
        return body if code == 200 else None

    def gone(self, name):
        return self.api.api("GET", f"{ND_PATH}/{name}")[0] == 404

    @staticmethod
    def condition(nd, typ="Ready"):
        for c in ((nd or {}).get("status") or {}).get("conditions") or []:
            if c.get("type") == typ:
                return c
        return None

    def reason(self, name):
        c = self.condition(self.get_nd(name))
        return c.get("reason") if c else None

    def drain_status(self, name):
        return ((self.get_nd(name) or {}).get("status") or {}).get("drain") or {}

    def describe(self, name):
        """What the failure message shows: the request's status and the node."""
        nd = self.get_nd(name)
        return (f"\nND {name}: " + json.dumps({"metadata": (nd or {}).get("metadata", {}),
                                                "status": (nd or {}).get("status")}, sort_keys=True)
                + "\nnode1: " + json.dumps(self.node_view("node1"), sort_keys=True))

    def wait_reason(self, name, reason, timeout=None, status=None):
        """Waits for the Ready condition's reason (and status); returns (the ND, seconds)."""
        t0 = time.monotonic()

        def at():
            nd = self.get_nd(name)
            c = self.condition(nd)
            if c and c.get("reason") == reason and (status is None or c.get("status") == status):
                return nd
            return None
        nd, _ = eventually(at, timeout or WAIT_S, 0.05)
        took = time.monotonic() - t0
        self.assertIsNotNone(nd, f"{name} never reached Ready reason {reason} in {took:.1f} s:"
                             + self.describe(name))
        return nd, took

    def wait_granted(self, name):
        nd, took = eventually(lambda: (self.get_nd(name) or {}).get("status", {}).get("state") == "Granted"
                              and self.get_nd(name), WAIT_S, 0.05)
        self.assertTrue(nd, f"the gate never granted {name}:" + self.describe(name))
        return nd

    def wait_drained(self, name, timeout=None):
        nd, took = self.wait_reason(name, "Drained", timeout)
        log(f"{name}: created -> Drained in {time.monotonic() - self.t_created:.2f} s")
        c = self.condition(nd)
        self.assertEqual(c["status"], "True", c)
        self.assertEqual(nd["status"]["drain"].get("progress"), 100, nd["status"])
        return nd

    def delete_nd(self, name):
        code, body, _ = self.api.api("DELETE", f"{ND_PATH}/{name}")
        self.assertEqual(code, 200, body)

    def wait_gone(self, name, timeout=None):
        t0 = time.monotonic()
        ok, _ = eventually(lambda: self.gone(name), timeout or WAIT_S, 0.05)
        self.assertTrue(ok, f"{name} was never removed:" + self.describe(name))
        log(f"{name}: delete -> gone in {time.monotonic() - t0:.2f} s")

    def events(self, name, kind="NodeDisruption"):
        code, body, _ = self.api.api("GET", "/api/v1/events")
        return sorted((e for e in body.get("items", []) if e.get("involvedObject", {}).get("name") == name
                       and e.get("involvedObject", {}).get("kind") == kind),
                      key=lambda e: int(e["metadata"]["resourceVersion"]))

    def assert_event(self, name, reason):
        ok, _ = eventually(lambda: any(e.get("reason") == reason for e in self.events(name)), WAIT_S, 0.1)
        self.assertTrue(ok, f"no {reason} event on {name}: {[e.get('reason') for e in self.events(name)]}")

    def node(self, name="node1"):
        code, body, _ = self.api.api("GET", f"/api/v1/nodes/{name}")
        self.assertEqual(code, 200, body)
        return body

    @staticmethod
    def annotation_of(node):
        raw = (node["metadata"].get("annotations") or {}).get(ANNOTATION)
        return json.loads(raw) if raw is not None else None

    def annotation(self, name="node1"):
        return self.annotation_of(self.node(name))

    @staticmethod
    def taint_keys(node):
        return [t["key"] for t in (node.get("spec") or {}).get("taints") or []]

    def node_view(self, name):
        n = self.node(name)
        return {"unschedulable": bool(n["spec"].get("unschedulable")), "taints": n["spec"].get("taints"),
                "annotation": (n["metadata"].get("annotations") or {}).get(ANNOTATION)}

    def cordoned(self, name="node1"):
        return bool(self.node(name)["spec"].get("unschedulable"))

    def pod(self, ref):
        ns, name = ref.split("/")
        code, body, _ = self.api.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        return body if code == 200 else None

    def present(self, ref):
        return self.pod(ref) is not None

    def assert_pods(self, present=(), absent=()):
        self.assertEqual([p for p in present if not self.present(p)], [], "these pods must still exist")
        self.assertEqual([p for p in absent if self.present(p)], [], "these pods must be gone")

    def wait_pods_gone(self, refs, timeout=None):
        ok, _ = eventually(lambda: not any(self.present(p) for p in refs), timeout or WAIT_S, 0.05)
        self.assertTrue(ok, f"still present: {[p for p in refs if self.present(p)]}")

    def webhook_calls(self):
        code, body, _ = self.api.control("webhook-calls", method="GET")
        return body.get("calls", []) if code == 200 else []

    def drainer_evictions(self):
        """The drainer's (real, not dry-run) evictions as the eviction webhook saw them:
        [(namespace/name, allowed)]."""
        out = []
        for c in self.webhook_calls():
            r = c.get("request") or {}
            if r.get("subResource") == "eviction" and (r.get("userInfo") or {}).get("username") == SA_USER \
                    and not r.get("dryRun"):
                out.append((f"{r.get('namespace')}/{r.get('name')}", bool((c.get("result") or {}).get("allowed"))))
        return out

    def evicted_refs(self):
        return sorted({p for p, _ in self.drainer_evictions()})

    def assert_cordoned_by(self, nd_name, was_unschedulable=False):
        node = self.node()
        self.assertTrue(node["spec"].get("unschedulable"), "node1 must be cordoned")
        ann = self.annotation_of(node)
        self.assertIsNotNone(ann, f"node1 must carry the {ANNOTATION} annotation")
        self.assertEqual(ann.get("wasUnschedulable"), was_unschedulable, ann)
        self.assertIn(nd_name, ann.get("holders", []), ann)
        self.assertEqual(ann.get("bootID"), "boot-node1-1", ann)

    def assert_released(self):
        """node1 schedulable again, its annotation and the cordon taint gone."""
        ok, _ = eventually(lambda: not self.cordoned() and self.annotation() is None
                           and UNSCHEDULABLE_TAINT not in self.taint_keys(self.node()), WAIT_S, 0.05)
        self.assertTrue(ok, "node1 was not given back: " + json.dumps(self.node_view("node1")))

    def node_conditions(self, name="node1"):
        """{type: (status, reason)} of the node lifecycle conditions nodegate writes."""
        return {c["type"]: (c.get("status"), c.get("reason"))
                for c in (self.node(name).get("status") or {}).get("conditions") or []
                if c.get("type") in LIFECYCLE}

    def assert_no_marks_left(self, name="node1"):
        """Nothing of nodegate's left on a node given back: no note, no autoscaler annotation it
        set (none was there before), its lifecycle conditions False."""
        ann = self.node(name)["metadata"].get("annotations") or {}
        self.assertEqual([k for k in (ANNOTATION, KARPENTER, SCALE_DOWN) if k in ann], [], ann)
        ok, _ = eventually(lambda: all(v == ("False", "NodegateReleased")
                                       for v in self.node_conditions(name).values()), WAIT_S, 0.05)
        self.assertTrue(ok, f"{name} conditions after release: {self.node_conditions(name)}")

    def assert_d02_final(self, name):
        """D02's final state: every evictable pod gone, DaemonSet and mirror pods kept, Drained,
        node1 cordoned by the request."""
        nd = self.wait_drained(name)
        self.assert_pods(present=NEVER, absent=EVICTABLE)
        st = nd["status"]["drain"]
        self.assertEqual(st.get("remainingPods"), 0, st)
        self.assertEqual(st.get("evictedPods"), st.get("totalPods"), st)
        self.assertIn(st.get("totalPods"), (5, 6), st)  # `done` may be deleted or ignored
        self.assertNotIn("backoffUntil", st)
        self.assert_cordoned_by(name)
        self.assertIn(FINALIZER, nd["metadata"].get("finalizers", []))
        return nd

    def stays(self, fn, seconds):
        """fn() holds every time it is polled for @seconds (the failing value is returned)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if not fn():
                return False
            time.sleep(0.1)
        return True


class DrainScenarios(DrainTest):
    # -- D01-D04: choosing pods ----------------------------------------------------------------
    def test_D01_defaults_block_on_bare_and_emptydir_pods_and_back_off(self):
        self.nd("d01", {})
        nd, took = self.wait_reason("d01", "Draining")
        # Cordoned first, the annotation recording that node1 was schedulable before.
        self.assert_cordoned_by("d01", was_unschedulable=False)
        ok, _ = eventually(lambda: UNSCHEDULABLE_TAINT in self.taint_keys(self.node()), WAIT_S, 0.05)
        self.assertTrue(ok, "a cordoned node gets the unschedulable taint (node lifecycle stand-in)")
        self.assertIn(FINALIZER, nd["metadata"].get("finalizers", []))
        # The attempt fails, naming both blocking pods, and backs off.
        seen, at = {}, {}

        def failed_twice():
            nd = self.get_nd("d01")
            st = nd["status"].get("drain") or {}
            c = self.condition(nd)
            at.setdefault(st.get("attempts") or 0, time.monotonic())
            if st.get("backoffUntil"):
                seen["backoffUntil"] = st["backoffUntil"]
                seen["message"] = c.get("message", "")
            return (st.get("attempts") or 0) >= 2 and "backoffUntil" in seen
        ok, waited = eventually(failed_twice, 2 * WAIT_S, 0.02)
        self.assertTrue(ok, "the blocked drain must count attempts and back off:" + self.describe("d01"))
        log(f"d01: two failed attempts after {waited:.2f} s; message: {seen['message']!r}")
        eventually(lambda: failed_twice() and 3 in at, 3 * WAIT_S, 0.02)
        if 1 in at:
            log(f"d01: attempts 2 and 3 seen {at.get(2, 0) - at[1]:.2f} s and {at.get(3, 0) - at[1]:.2f} s "
                f"after attempt 1 (backoff {BACKOFF}: 1 s, then 2 s more)")
        c = self.condition(self.get_nd("d01"))
        self.assertEqual((c["reason"], c["status"]), ("Draining", "False"), c)
        for msg in (seen["message"], c.get("message", "")):
            self.assertIn("cannot drain", msg)
            self.assertIn("default/bare", msg)
            self.assertIn("default/scratch", msg)
        self.assertTrue(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", seen["backoffUntil"]), seen)
        # kubectl's rule: nothing at all was evicted, on any attempt.
        self.assert_pods(present=ALL_PODS)
        self.assertEqual(self.drainer_evictions(), [])
        self.assertTrue(self.cordoned(), "the node stays cordoned while the drain backs off")
        self.assert_event("d01", "Cordoned")
        self.assert_event("d01", "DrainFailed")

    def test_D02_force_and_delete_emptydir_evict_all_but_daemonset_and_mirror_pods(self):
        self.nd("d02", FORCE)
        self.assert_d02_final("d02")
        evicted = self.drainer_evictions()
        self.assertEqual(sorted(p for p, _ in evicted if p != DONE), sorted(EVICTABLE), evicted)
        self.assertTrue(all(ok for _, ok in evicted), evicted)
        self.assert_event("d02", "Drained")
        n = self.drainer.metric("nodegate_drain_pods_evicted_total", strategy="Evict")
        log(f"d02: nodegate_drain_pods_evicted_total{{strategy=\"Evict\"}} = {n}")
        self.assertIn(n, (5.0, 6.0))
        # One JSON log line per step, component "drain".
        steps = [ln for ln in self.drainer.log_lines() if ln.get("component") == "drain"]
        msgs = [ln.get("msg") for ln in steps]
        log(f"d02: drain log steps {msgs}")
        self.assertIn("cordoned", msgs)
        self.assertGreaterEqual(msgs.count("evicted"), 5, "one 'evicted' line per evicted pod")

    def test_D03_pod_selector_evicts_only_matching_pods(self):
        self.nd("d03", {"force": True, "podSelector": "app=web"})
        nd = self.wait_drained("d03")
        self.assert_pods(present=[p for p in ALL_PODS if p != WEB], absent=[WEB])
        self.assertEqual(self.evicted_refs(), [WEB])
        self.assertEqual(nd["status"]["drain"].get("totalPods"), 1, nd["status"])

    def test_D04_resource_name_filter_evicts_only_the_gpu_pod(self):
        self.nd("d04", dict(FORCE, podEvictionFilters=[{"byResourceNameRegex": "nvidia.com/gpu-*"}]))
        nd = self.wait_drained("d04")
        self.assert_pods(present=[p for p in ALL_PODS if p != GPU], absent=[GPU])
        self.assertEqual(self.evicted_refs(), [GPU])
        self.assertEqual(nd["status"]["drain"].get("totalPods"), 1, nd["status"])

    # -- D05-D06: waitForPodCompletion -----------------------------------------------------------
    def test_D05_wait_for_pod_completion_without_timeout_waits_until_the_pod_is_gone(self):
        self.nd("d05", dict(FORCE, waitForPodCompletion={"podSelector": "app=batch", "timeoutSeconds": 0}))
        nd, _ = self.wait_reason("d05", "WaitingForPods", status="False")
        self.assert_cordoned_by("d05")
        held = self.stays(lambda: self.reason("d05") == "WaitingForPods", 3)
        self.assertTrue(held, "timeoutSeconds 0 must wait forever:" + self.describe("d05"))
        self.assert_pods(present=ALL_PODS)
        self.assertEqual(self.drainer_evictions(), [])
        # The batch job finishes: its pod goes away.
        t0 = time.monotonic()
        code, body, _ = self.api.api("DELETE", "/api/v1/namespaces/batch/pods/job-1",
                                     {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: self.reason("d05") != "WaitingForPods", WAIT_S, 0.05)
        self.assertTrue(ok, "the drain never moved on once the pod was gone")
        log(f"d05: job pod gone -> draining after {time.monotonic() - t0:.2f} s")
        self.wait_drained("d05")
        self.assert_pods(present=NEVER, absent=EVICTABLE)
        self.assertNotIn(JOB, self.evicted_refs(), "the finished job pod must not be evicted")

    def test_D06_wait_for_pod_completion_times_out_and_moves_on(self):
        self.nd("d06", dict(FORCE, waitForPodCompletion={"podSelector": "app=batch", "timeoutSeconds": 2}))
        self.wait_reason("d06", "WaitingForPods")
        t0 = time.monotonic()
        ok, _ = eventually(lambda: self.reason("d06") != "WaitingForPods", 3 + WAIT_S, 0.05)
        self.assertTrue(ok, "the wait never timed out:" + self.describe("d06"))
        log(f"d06: WaitingForPods seen -> moved on after {time.monotonic() - t0:.2f} s (timeoutSeconds 2)")
        self.assert_d02_final("d06")

    # -- D07-D10: eviction strategies -------------------------------------------------------------
    def web_pdb(self):
        self.create("/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
        code, _, _ = evict(self.api, "web-1", dry_run=True)
        self.assertEqual(code, 429, "the PDB must allow no disruption of web-1")

    def assert_pdb_backoff(self, name):
        seen = {}

        def backed_off_twice():
            st = self.drain_status(name)
            if st.get("backoffUntil"):
                seen["backoffUntil"] = st["backoffUntil"]
            return (st.get("attempts") or 0) >= 2 and seen
        ok, waited = eventually(backed_off_twice, 4 * WAIT_S, 0.02)
        self.assertTrue(ok, "the attempt must time out and back off:" + self.describe(name))
        c = self.condition(self.get_nd(name))
        log(f"{name}: 2 failed attempts after {waited:.1f} s; Ready {c.get('reason')}: {c.get('message')!r}")
        self.assertEqual(c["status"], "False", c)
        self.assertNotEqual(c["reason"], "Drained", c)
        self.assertIn("default/web-1 (PodDisruptionBudget default/web allows 0 disruptions", c["message"],
                      "the wait must name the PodDisruptionBudget that holds the pod")
        self.assertTrue(self.present(WEB), "the PDB-protected pod must not be removed")
        self.assertTrue(self.cordoned(), "the node stays cordoned")
        tries = [ok for p, ok in self.drainer_evictions() if p == WEB]
        log(f"{name}: {len(tries)} evictions of web-1 asked (each answered 429 by the PDB)")
        self.assertGreaterEqual(len(tries), 2, "web-1's eviction must be asked again (one per attempt at least)")

    @drain_setup(ngc_drain={"protectedNamespaces": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}})
    def test_D07_pdb_429_is_retried_until_the_attempt_times_out_then_backs_off(self):
        self.web_pdb()
        self.nd("d07", {"evictionStrategy": "Evict", "podSelector": "app=web", "timeoutSeconds": 3})
        self.assert_pdb_backoff("d07")

    # -- O01-O03: nodegate status and why, through kubectl's plugin link ----------------------------
    def cli(self, *args, kubectl=False):
        """nodegate ARGS against the test API server: through `kubectl nodegate` (the binary
        linked as kubectl-nodegate on PATH) when @kubectl."""
        env = dict(os.environ, KUBECONFIG=self.api.kubeconfig)
        if kubectl:
            bindir = os.path.join(self.tmp, "bin")
            os.makedirs(bindir, exist_ok=True)
            link = os.path.join(bindir, "kubectl-nodegate")
            if not os.path.exists(link):
                os.symlink(os.path.abspath(BINARY), link)
            env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
            cmd = ["kubectl", "nodegate"] + list(args)
        else:
            cmd = [BINARY] + list(args)
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    def held_drain(self):
        """o01 drains node1 and is held by web-1's PodDisruptionBudget; o01b, on node2 under a
        NodeDisruptionBudget of one node over both, waits for o01."""
        self.web_pdb()
        self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                      "metadata": {"name": "node2", "labels": {"pool": "p"}},
                                      "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        rc, _, err = self.api.kubectl("label", "node", "node1", "pool=p")
        self.assertEqual(rc, 0, err)
        self.create("/apis/nodegate.io/v1alpha1/nodedisruptionbudgets", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": "pool"},
            "spec": {"nodeSelector": {"matchLabels": {"pool": "p"}}, "maxDisruptedNodes": 1}})
        self.nd("o01", {"evictionStrategy": "Evict", "podSelector": "app=web", "timeoutSeconds": 30})
        self.wait_reason("o01", "Draining")
        self.nd("o01b", nodes=("node2",), retry={"enabled": True})
        ok, _ = eventually(lambda: (self.get_nd("o01b").get("status") or {}).get("state") == "Pending")
        self.assertTrue(ok, "o01b must wait for the budget o01 holds:" + self.describe("o01b"))

    def test_O01_kubectl_nodegate_status_names_what_holds_the_queue_and_the_drain(self):
        self.held_drain()
        p = self.cli("status", "-o", "text", kubectl=True)
        log(f"o01: kubectl nodegate status -o text:\n{p.stdout}")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("NDB pool: 1 of 2 nodes disrupted, limit 1 now, 0 more allowed; held by o01", p.stdout)
        # The gate's own message names the holder, so status does not say it twice.
        self.assertRegex(p.stdout, r"1\. o01b \[node2\]: NodeDisruptionBudget pool: .*; held by o01\n\s+waiting")
        self.assertRegex(p.stdout, r"o01 \[node1\] granted \d+s ago\n\s+drain: Draining")
        self.assertRegex(p.stdout, r"node1: cordoned, held for o01")
        doc = json.loads(self.cli("status", "-o", "json").stdout)
        self.assertEqual([q["name"] for q in doc["queue"]], ["o01b"])
        self.assertEqual(doc["queue"][0]["heldBy"], ["o01"])
        self.assertEqual([g["name"] for g in doc["granted"]], ["o01"])
        self.assertEqual(doc["granted"][0]["drain"]["reason"], "Draining")
        # kubectl get nd -o wide: how many nodes, the drain's step and what it waits for.
        rows = {r["NAME"]: r for r in kubectl_rows(self.api, "nodedisruptions", "-o", "wide")}
        log(f"o01: kubectl get nd -o wide: {rows}")
        self.assertEqual((rows["o01"]["NODE"], rows["o01"]["NODES"], rows["o01"]["STATE"], rows["o01"]["DRAIN"]),
                         ("node1", "1", "Granted", "Draining"))
        self.assertIn("web", rows["o01"]["DRAIN-MESSAGE"])
        self.assertEqual((rows["o01b"]["NODES"], rows["o01b"]["STATE"], rows["o01b"]["DRAIN-MESSAGE"]),
                         ("1", "Pending", ""))
        self.assertIn("NodeDisruptionBudget pool", rows["o01b"]["MESSAGE"])

    def test_O02_why_gives_the_chain_for_a_request_and_for_a_node(self):
        self.held_drain()
        doc = json.loads(self.cli("why", "o01b", "-o", "json").stdout)
        self.assertEqual(doc["request"], {"name": "o01b", "state": "Pending"})
        self.assertEqual(doc["waiting"]["heldBy"], ["o01"])
        self.assertIn("NodeDisruptionBudget pool", doc["waiting"]["reason"])
        self.assertEqual([b["name"] for b in doc["budgets"]], ["pool"])
        p = self.cli("why", "nd/o01b", "-o", "text")
        self.assertIn("it can go when o01 ends", p.stdout)
        p = self.cli("why", "node1", "-o", "text")
        log(f"o02: nodegate why node1:\n{p.stdout}")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("default/web-1 on node1: to evict (PodDisruptionBudget default/web allows 0 disruptions",
                      p.stdout)
        doc = json.loads(self.cli("why", "node/node1", "-o", "json").stdout)
        web = [x for x in doc["pods"] if x["name"] == "web-1"]
        self.assertEqual(len(web), 1, doc["pods"])
        self.assertIn("PodDisruptionBudget default/web", web[0]["heldBy"])
        # Without --kubeconfig and $KUBECONFIG, ~/.kube/config, as kubectl reads it.
        home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(home, ".kube"))
        shutil.copy(self.api.kubeconfig, os.path.join(home, ".kube", "config"))
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        p = subprocess.run([BINARY, "why", "o01b", "-o", "json"], env=dict(env, HOME=home),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(json.loads(p.stdout)["waiting"]["heldBy"], ["o01"], p.stderr)
        p = self.cli("why", "nothing-here")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, 'nodegate why: no NodeDisruption or node named "nothing-here"\n')

    def test_O03_status_watch_prints_again_on_a_change(self):
        env = dict(os.environ, KUBECONFIG=self.api.kubeconfig)
        w = subprocess.Popen([BINARY, "status", "--watch", "-o", "json"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        frames = []
        reader = threading.Thread(target=lambda: [frames.append(json.loads(line)) for line in w.stdout
                                                  if line.strip()], daemon=True)
        reader.start()
        try:
            ok, _ = eventually(lambda: frames)
            self.assertTrue(ok, "status --watch printed nothing")
            self.assertEqual(frames[0]["granted"], [])
            self.nd("o03", {"evictionStrategy": "None", "skipWaitingForEviction": True})
            ok, _ = eventually(lambda: any(g["name"] == "o03" for g in frames[-1]["granted"]))
            self.assertTrue(ok, f"status --watch never showed the grant: {frames[-1:]}")
        finally:
            w.terminate()
            w.wait(timeout=10)

    @drain_setup(ngc_drain={"protectedNamespaces": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}})
    def test_D07b_delete_strategy_in_a_protected_namespace_still_honours_the_pdb(self):
        self.web_pdb()
        self.nd("d07b", {"evictionStrategy": "Delete", "podSelector": "app=web", "timeoutSeconds": 3})
        self.assert_pdb_backoff("d07b")

    def test_L04_a_drain_past_its_deadline_with_release_gives_the_node_back(self):
        self.web_pdb()
        self.nd("l04", {"podSelector": "app=web", "deadlineSeconds": 2, "onDeadline": "Release"})
        self.wait_reason("l04", "Draining")
        t0 = time.monotonic()
        self.wait_gone("l04", timeout=2 + WAIT_S)
        log(f"l04: Draining -> ended and gone {time.monotonic() - t0:.2f} s later (deadlineSeconds 2)")
        ok, _ = eventually(lambda: not self.cordoned() and self.annotation() is None, WAIT_S, 0.05)
        self.assertTrue(ok, "the release path must give the node back:" + self.describe("l04"))
        reasons = [e.get("reason") for e in self.events("l04")]
        self.assertIn("DrainDeadlineExceeded", reasons)
        node_reasons = [e.get("reason") for e in self.events("node1", "Node")]
        self.assertIn("DrainDeadlineExceeded", node_reasons)
        self.assertTrue(self.present(WEB), "the PDB-protected pod must not be removed")

    def test_L05_a_drain_past_its_deadline_quarantines_its_node_until_a_person_gives_it_back(self):
        self.web_pdb()
        self.nd("l05", {"podSelector": "app=web", "deadlineSeconds": 2, "onDeadline": "Quarantine"})
        nd, took = self.wait_reason("l05", "DrainDeadlineExceeded", timeout=2 + WAIT_S)
        c = self.condition(nd)
        log(f"l05: DrainDeadlineExceeded {took:.1f} s after creation (deadlineSeconds 2): {c.get('message')!r}")
        self.assertEqual(c["status"], "False", c)
        self.assertIn("PodDisruptionBudget default/web", c["message"], "the message keeps what held the drain")
        self.assert_event("l05", "DrainDeadlineExceeded")
        labels = self.node()["metadata"].get("labels") or {}
        self.assertEqual(labels.get("nodegate.io/quarantined"), "l05", labels)
        self.assertTrue(self.cordoned())
        self.assertTrue(self.present(WEB), "the PDB-protected pod must not be removed")
        # The request can go; the node stays cordoned and noted while it carries the label.
        self.delete_nd("l05")
        self.wait_gone("l05")
        time.sleep(0.5)
        self.assertTrue(self.cordoned(), "a quarantined node stays cordoned after its request is gone")
        self.assertIsNotNone(self.annotation(), "the note stays with the quarantine")
        # A person removes the label: the drainer gives the node back.
        self.patch("/api/v1/nodes/node1", {"metadata": {"labels": {"nodegate.io/quarantined": None}}})
        ok, waited = eventually(lambda: not self.cordoned() and self.annotation() is None, WAIT_S, 0.05)
        self.assertTrue(ok, "removing the label must give the node back:" + self.describe("l05"))
        log(f"l05: label removed -> node uncordoned in {waited:.2f} s")

    @drain_setup(ngc_drain={"protectedNamespaces": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}})
    def test_D08_delete_strategy_deletes_past_the_pdb_outside_protected_namespaces(self):
        self.web_pdb()
        self.watch = PodWatch(self.api)
        self.nd("d08", {"evictionStrategy": "Delete", "podSelector": "app=web"})
        self.wait_drained("d08")
        self.assert_pods(present=[p for p in ALL_PODS if p != WEB], absent=[WEB])
        self.assertEqual(self.evicted_refs(), [], "Delete must not go through the Eviction API here")
        ok, _ = eventually(lambda: self.watch.deleted(WEB), WAIT_S)
        graces = self.watch.graceful_delete_seen(WEB)
        log(f"d08: web-1 terminating states seen with grace periods {graces}")
        # The first is the drainer's delete; the kubelet stand-in's final delete (grace 0) follows.
        self.assertTrue(graces and graces[0] and graces[0] > 0, "Delete uses the pod's default grace period")

    @drain_setup(kubelet="grace")
    def test_D09_force_delete_removes_pods_with_grace_period_zero(self):
        # With the kubelet stand-in honouring grace periods, a default (30 s) deletion would
        # leave the pods Terminating; grace 0 removes them at once.
        self.watch = PodWatch(self.api)
        self.nd("d09", dict(FORCE, evictionStrategy="ForceDelete"))
        self.wait_drained("d09", timeout=WAIT_S)
        self.assert_pods(present=NEVER, absent=EVICTABLE)
        self.assertEqual(self.evicted_refs(), [], "ForceDelete must not go through the Eviction API here")
        time.sleep(0.3)
        for p in EVICTABLE:
            self.assertTrue(self.watch.deleted(p), p)
            self.assertEqual([g for g in self.watch.graceful_delete_seen(p) if g], [],
                             f"{p} must be deleted with gracePeriodSeconds 0")

    def test_D10_strategy_none_with_skip_waiting_is_drained_at_once(self):
        self.nd("d10", {"evictionStrategy": "None", "skipWaitingForEviction": True})
        self.wait_drained("d10")
        self.assert_pods(present=ALL_PODS)
        self.assertEqual(self.drainer_evictions(), [])
        self.assert_cordoned_by("d10")

    # -- other actors -----------------------------------------------------------------------------
    def test_a_node_an_autoscaler_takes_away_counts_as_disrupted(self):
        """An autoscaler stand-in marks node2 for deletion, then deletes it: while the taint is
        on, the pool's one place is taken and a request for node1 waits; once the node is gone,
        it is granted."""
        self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": "node2", "labels": {"kubernetes.io/hostname": "node2"}}})
        self.patch("/api/v1/nodes/node2/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "all"},
                               "spec": {"nodeSelector": {}, "maxDisruptedNodes": 1}})
        # The cluster-autoscaler's scale-down taint (its value: when it decided).
        self.patch("/api/v1/nodes/node2", {"spec": {"taints": [
            {"key": "ToBeDeletedByClusterAutoscaler", "value": str(int(time.time())),
             "effect": "NoSchedule"}]}})
        ok, _ = eventually(lambda: ((self.api.api("GET", f"{NDB_PATH}/all")[1].get("status") or {})
                                    .get("unavailableNodes")) == 1, WAIT_S, 0.05)
        self.assertTrue(ok, json.dumps(self.api.api("GET", f"{NDB_PATH}/all")[1].get("status")))
        self.nd("a1", retry={"enabled": True})
        ok, _ = eventually(lambda: "1 of 1 in use; this request adds 1 (limit 1 of 2 nodes); counted "
                           "unavailable: node2 (marked for deletion)"
                           in json.dumps((self.get_nd("a1") or {}).get("status")), WAIT_S, 0.05)
        self.assertTrue(ok, self.describe("a1"))
        self.assertEqual(self.get_nd("a1")["status"].get("state"), "Pending")
        code, body, _ = self.api.api("DELETE", "/api/v1/nodes/node2")
        self.assertEqual(code, 200, body)
        self.wait_granted("a1")

    # -- D11-D15: release -------------------------------------------------------------------------
    def test_D11_deleting_the_request_uncordons_and_removes_the_annotation(self):
        # An annotation of Karpenter's set before: held, it reads "true"; released, "false" again.
        self.patch("/api/v1/nodes/node1", {"metadata": {"annotations": {KARPENTER: "false"}}})
        self.nd("d11", FORCE)
        self.wait_drained("d11")
        self.assert_cordoned_by("d11")
        ann = self.node()["metadata"]["annotations"]
        self.assertEqual((ann.get(KARPENTER), ann.get(SCALE_DOWN)), ("true", "true"), ann)
        self.assertEqual(self.annotation()["protected"],
                         [{"key": SCALE_DOWN}, {"key": KARPENTER, "was": "false"}])
        # The lifecycle conditions, as `kubectl describe node` shows them.
        want = {"MaintenancePlanned": ("False", "NodegateDrained"),
                "DrainInProgress": ("False", "NodegateDrained"),
                "Drained": ("True", "NodegateDrained"),
                "MaintenanceInProgress": ("False", "NodegateDrained")}
        ok, _ = eventually(lambda: self.node_conditions() == want, WAIT_S, 0.05)
        self.assertTrue(ok, f"node1 conditions: {self.node_conditions()}")
        rc, out, err = self.api.kubectl("describe", "node", "node1")
        self.assertEqual(rc, 0, err)
        conditions = out.split("Conditions:", 1)[-1].split("Addresses:", 1)[0]
        self.assertRegex(conditions, r"Drained\s+True\s.*NodegateDrained\s+drained: held by "
                         r"nodegate for NodeDisruption d11")
        # kubectl describe finds the Events by the object's uid, which they carry.
        for what, reasons in ((("nd", "d11"), ("Granted", "Cordoned", "Drained")),
                              (("node", "node1"), ("Cordoned", "Drained"))):
            rc, out, err = self.api.kubectl("describe", *what)
            self.assertEqual(rc, 0, err)
            events = out.split("Events:", 1)[-1]
            missing = [r for r in reasons if r not in events]
            self.assertEqual(missing, [], f"kubectl describe {' '.join(what)}: {out[-1500:]}")
        self.delete_nd("d11")
        self.wait_gone("d11")
        self.assert_released()
        ann = self.node()["metadata"].get("annotations") or {}
        self.assertEqual((ann.get(KARPENTER), ann.get(SCALE_DOWN)), ("false", None), ann)
        released = {t: ("False", "NodegateReleased") for t in LIFECYCLE}
        ok, _ = eventually(lambda: self.node_conditions() == released, WAIT_S, 0.05)
        self.assertTrue(ok, f"node1 conditions after release: {self.node_conditions()}")
        # (The gate records a Released event of its own, so that event proves nothing here.)
        log(f"d11: events {[e.get('reason') for e in self.events('d11')]}")
        # The node's own Events tell its story, each naming the request.
        ok, _ = eventually(lambda: [e.get("reason") for e in self.events("node1", "Node")]
                           == ["Cordoned", "Drained", "Released"], WAIT_S, 0.1)
        node_events = self.events("node1", "Node")
        self.assertTrue(ok, f"node1 events: {[(e.get('reason'), e.get('message')) for e in node_events]}")
        self.assertTrue(all("NodeDisruption d11" in e["message"] for e in node_events), node_events)
        self.assertIn("uncordoned", node_events[-1]["message"])
        # Given back in one write: no patch repeated against a node the cache had not caught up with.
        self.assertEqual(self.drainer.metric("nodegate_drain_writes_total", result="error") or 0, 0,
                         self.drainer.read_log())

    def test_D12_a_node_cordoned_by_hand_stays_cordoned(self):
        rc, out, err = self.api.kubectl("cordon", "node1")
        self.assertEqual(rc, 0, err)
        self.nd("d12", FORCE)
        self.wait_drained("d12")
        self.assert_cordoned_by("d12", was_unschedulable=True)
        self.delete_nd("d12")
        self.wait_gone("d12")
        ok, _ = eventually(lambda: self.annotation() is None, WAIT_S, 0.05)
        self.assertTrue(ok, "the annotation must be removed on release")
        self.assertTrue(self.stays(lambda: self.cordoned(), 1), "node1 was cordoned before: it must stay so")

    def test_D13_additional_requestors_hold_the_release(self):
        self.nd("d13", FORCE, additionalRequestors=["b"])
        self.wait_drained("d13")
        self.delete_nd("d13")
        held = self.stays(lambda: (self.get_nd("d13") or {}).get("metadata", {}).get("deletionTimestamp")
                          and self.cordoned() and self.annotation() is not None, 2)
        self.assertTrue(held, "the request and the cordon must stay while additionalRequestors is not empty:"
                        + self.describe("d13"))
        self.assertIn(FINALIZER, self.get_nd("d13")["metadata"]["finalizers"])
        self.patch(f"{ND_PATH}/d13", {"spec": {"additionalRequestors": []}})
        self.wait_gone("d13")
        self.assert_released()

    def set_requestor_failed(self, name, status):
        nd = self.get_nd(name)
        conds = nd["status"].get("conditions") or []
        i = next((i for i, c in enumerate(conds) if c.get("type") == "RequestorFailed"), None)
        cond = {"type": "RequestorFailed", "status": status, "reason": "TestRequestor",
                "message": "the requestor's own step failed",
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        ops = ([{"op": "test", "path": f"/status/conditions/{i}/type", "value": "RequestorFailed"},
                {"op": "replace", "path": f"/status/conditions/{i}", "value": cond}] if i is not None
               else [{"op": "add", "path": "/status/conditions/-", "value": cond}])
        self.patch(f"{ND_PATH}/{name}/status", ops, ctype="application/json-patch+json")

    def test_D14_requestor_failed_keeps_the_node_cordoned_until_cleared(self):
        self.nd("d14", FORCE)
        self.wait_drained("d14")
        self.set_requestor_failed("d14", "True")
        nd, _ = self.wait_reason("d14", "RequestorFailed", status="False")
        rf = self.condition(nd, "RequestorFailed")
        self.assertEqual((rf or {}).get("status"), "True", "the drainer must keep the requestor's condition")
        self.delete_nd("d14")
        held = self.stays(lambda: self.get_nd("d14") is not None and self.cordoned()
                          and self.annotation() is not None, 2)
        self.assertTrue(held, "nothing may be released while RequestorFailed is True, even after deletion:"
                        + self.describe("d14"))
        self.assertEqual(self.reason("d14"), "RequestorFailed")
        self.set_requestor_failed("d14", "False")
        self.wait_gone("d14")
        self.assert_released()

    def test_D15_taint_without_cordon(self):
        taint = MAINT_TAINT
        self.nd("d15", dict(FORCE, cordon=False, taint=taint))
        self.wait_drained("d15")
        node = self.node()
        self.assertFalse(node["spec"].get("unschedulable"), "cordon: false must leave node1 schedulable")
        taints = [t for t in node["spec"].get("taints") or [] if t["key"] == "example.com/maintenance"]
        self.assertEqual(len(taints), 1, node["spec"])
        self.assertEqual(taints[0]["effect"], "NoSchedule")
        self.assertNotIn(UNSCHEDULABLE_TAINT, self.taint_keys(node))
        self.assertEqual(self.annotation_of(node).get("wasUnschedulable"), False)
        self.assert_pods(present=NEVER, absent=EVICTABLE)
        self.delete_nd("d15")
        self.wait_gone("d15")
        ok, _ = eventually(lambda: "example.com/maintenance" not in self.taint_keys(self.node())
                           and self.annotation() is None, WAIT_S, 0.05)
        self.assertTrue(ok, "the taint and the annotation must be removed: " + json.dumps(self.node_view("node1")))
        self.assertFalse(self.cordoned())

    # -- D16-D17: operation ----------------------------------------------------------------------
    JOB_TEMPLATE = {"spec": {"backoffLimit": 0, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "maintenance", "image": "busybox:1.36",
                        "command": ["sh", "-c", "echo maintenance of $NODE"]}]}}}}

    def operation_job(self, name):
        """The one Job the drainer created for @name on node1 (waits for it)."""
        def jobs():
            code, body, _ = self.api.api("GET", f"{JOBS_PATH}?labelSelector=nodegate.io%2Frequest%3D{name}")
            return body.get("items") if code == 200 else None
        items, _ = eventually(jobs, WAIT_S, 0.05)
        self.assertTrue(items, f"no Job labelled nodegate.io/request={name}:" + self.describe(name))
        self.assertEqual(len(items), 1, [j["metadata"]["name"] for j in items])
        job = items[0]
        self.assertEqual(job["metadata"]["labels"].get("nodegate.io/node"), "node1", job["metadata"])
        self.assertEqual(job["metadata"]["namespace"], OPERATION_NS,
                         "operation Jobs run in --operation-namespace, away from nodegate's Secrets")
        pod = job["spec"]["template"]["spec"]
        pinned = pod.get("nodeName") == "node1" or "node1" in json.dumps(pod.get("affinity") or {})
        self.assertTrue(pinned, f"the Job must be pinned to node1: {pod}")
        tolerated = [t.get("key") for t in pod.get("tolerations") or []]
        self.assertIn(UNSCHEDULABLE_TAINT, tolerated, pod.get("tolerations"))
        self.assertEqual(pod["containers"][0]["name"], "maintenance")
        self.assertEqual(pod.get("serviceAccountName"), "nodegate-operation",
                         "operation Jobs run as the drainer's operation ServiceAccount")
        self.assertIs(pod.get("automountServiceAccountToken"), False, "an operation gets no token")
        return job

    # The tests play the Job controller. The API server validates Job status as v1.32 does
    # (JobManagedBy on by default), so they write what v1.32's controller writes, in its order:
    # startTime when the Job starts; when its pod ends, the pod counted and the interim condition
    # (SuccessCriteriaMet or FailureTarget); then, no pod left, the terminal condition (Complete
    # with completionTime, or Failed) with the interim one's reason and message.
    JOB_MESSAGES = {"CompletionsReached": "Reached expected number of succeeded pods",
                    "BackoffLimitExceeded": "Job has reached the specified backoff limit"}
    JOB_POLL_S = 2.0  # controller/drain.c POLL_MS: how often the drainer reads its operation Job

    def job_status(self, job, status):
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        return self.patch(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}/status", {"status": status})["status"]

    @staticmethod
    def job_condition(typ, reason, message):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {"type": typ, "status": "True", "reason": reason, "message": message,
                "lastProbeTime": now, "lastTransitionTime": now}

    def start_job(self, job):
        """The controller's first sync of the Job: startTime, its one pod created (not ready)."""
        return self.job_status(job, {"startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "active": 1, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}})

    def finish_job(self, job, typ, reason, hold=0):
        """The Job's pod ends and the controller finishes the Job as Complete or Failed (@reason).
        @hold: seconds for which the request must stay Operating on the interim condition alone."""
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        code, cur, _ = self.api.api("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
        self.assertEqual(code, 200, cur)
        status = cur.get("status") or {}
        if not status.get("startTime"):
            status = self.start_job(job)
        interim, counter = ("SuccessCriteriaMet", "succeeded") if typ == "Complete" else ("FailureTarget", "failed")
        message = self.JOB_MESSAGES.get(reason, f"test: {reason}")
        conditions = (status.get("conditions") or []) + [self.job_condition(interim, reason, message)]
        self.job_status(job, {"active": 0, "ready": 0, "terminating": 0, "conditions": conditions,
                              counter: (status.get(counter) or 0) + 1})
        if hold:
            request = job["metadata"]["labels"]["nodegate.io/request"]
            self.assertTrue(self.stays(lambda: self.reason(request) == "Operating", hold),
                            f"{interim} alone does not end the operation:" + self.describe(request))
        terminal = self.job_condition(typ, reason, message)
        done = {"conditions": conditions + [terminal]}
        if typ == "Complete":
            done["completionTime"] = terminal["lastTransitionTime"]
        return self.job_status(job, done)

    def test_D16_operation_job_runs_after_the_drain(self):
        self.nd("d16", FORCE, operation={"jobTemplate": self.JOB_TEMPLATE})
        nd, _ = self.wait_reason("d16", "Operating", status="True")
        self.assert_pods(present=NEVER, absent=EVICTABLE)  # after Drained
        job = self.operation_job("d16")
        # Kubernetes removes it a day after it finishes (the template sets no TTL).
        self.assertEqual(job["spec"].get("ttlSecondsAfterFinished"), 86400, job["spec"])
        self.start_job(job)
        held = self.stays(lambda: self.reason("d16") == "Operating", 1)
        self.assertTrue(held, "Operating until the Job completes:" + self.describe("d16"))
        self.finish_job(job, "Complete", "CompletionsReached", hold=self.JOB_POLL_S + 0.5)
        t0 = time.monotonic()
        nd, _ = self.wait_reason("d16", "Completed", status="True")
        log(f"d16: Job complete -> Completed in {time.monotonic() - t0:.2f} s")
        self.operation_job("d16")  # still exactly one
        self.assert_event("d16", "Operating")
        self.assert_event("d16", "Completed")

    def test_L02_ttl_after_completion_gives_the_node_back(self):
        self.nd("l02", FORCE, operation={"jobTemplate": self.JOB_TEMPLATE}, ttlSecondsAfterCompletion=1)
        self.wait_reason("l02", "Operating", status="True")
        self.assert_cordoned_by("l02")
        self.finish_job(self.operation_job("l02"), "Complete", "CompletionsReached")
        self.wait_reason("l02", "Completed", status="True")
        t0 = time.monotonic()
        # A second after Completed the gate deletes it; the drainer gives node1 back.
        self.wait_gone("l02")
        self.assert_released()
        log(f"l02: Completed -> gone and node1 uncordoned in {time.monotonic() - t0:.2f} s")
        self.assert_event("l02", "TTLAfterCompletionExpired")
        ok, _ = eventually(lambda: any(e.get("reason") == "TTLAfterCompletionExpired"
                                       for e in self.events("node1", kind="Node")), WAIT_S, 0.1)
        self.assertTrue(ok, "no TTLAfterCompletionExpired Event on node1")

    def test_D16b_failed_operation_job_fails_the_request_with_its_reason(self):
        self.nd("d16b", FORCE, operation={"jobTemplate": self.JOB_TEMPLATE})
        self.wait_reason("d16b", "Operating")
        job = self.operation_job("d16b")
        self.start_job(job)
        self.finish_job(job, "Failed", "BackoffLimitExceeded", hold=self.JOB_POLL_S + 0.5)
        nd, _ = self.wait_reason("d16b", "Failed", status="False")
        self.assertIn("BackoffLimitExceeded", self.condition(nd)["message"])
        self.assertTrue(self.cordoned(), "a failed operation leaves the node cordoned")

    def test_D16c_an_operation_mounting_a_secret_is_never_created(self):
        # no object webhook here: the drainer itself refuses (the webhook refuses it first)
        tpl = json.loads(json.dumps(self.JOB_TEMPLATE))
        tpl["metadata"] = {"namespace": "nodegate"}
        tpl["spec"]["template"]["spec"]["volumes"] = [{"name": "ca", "secret": {"secretName": "nodegate-ca"}}]
        self.nd("d16c", FORCE, operation={"jobTemplate": tpl})
        nd, _ = self.wait_reason("d16c", "Failed", status="False")
        msg = self.condition(nd)["message"]
        self.assertIn("spec.template.spec.volumes[0].secret", msg)
        code, body, _ = self.api.api("GET", f"{JOBS_PATH}?labelSelector=nodegate.io%2Frequest%3Dd16c")
        self.assertEqual((code, body.get("items")), (200, []), "no Job was created")

    def test_D16d_the_operation_namespace_is_never_nodegates_own(self):
        kubeconfig = os.path.join(self.api.state, "kubeconfig-sa-nodegate-nodegate")
        p = subprocess.run(WRAPPER + [BINARY, "drain", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0",
                                      "--operation-namespace", "nodegate"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--operation-namespace \"nodegate\" is nodegate's own namespace", p.stderr)

    def set_node_status(self, boot_id, ready):
        self.patch("/api/v1/nodes/node1/status", {"status": {
            "nodeInfo": {"bootID": boot_id},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady"}]}})

    def test_D17_wait_for_reboot_until_a_new_boot_id_and_ready(self):
        self.nd("d17", FORCE, operation={"jobTemplate": self.JOB_TEMPLATE, "waitForReboot": True})
        self.wait_reason("d17", "Operating")
        job = self.operation_job("d17")
        self.finish_job(job, "Complete", "CompletionsReached")
        nd, _ = self.wait_reason("d17", "Rebooting", status="True")
        self.assertTrue(self.stays(lambda: self.reason("d17") == "Rebooting", 1.5),
                        "the same bootID: still Rebooting")
        self.set_node_status("boot-node1-2", ready=False)  # rebooted, not Ready yet
        self.assertTrue(self.stays(lambda: self.reason("d17") == "Rebooting", 1.5),
                        "a new bootID while NotReady: still Rebooting:" + self.describe("d17"))
        t0 = time.monotonic()
        self.set_node_status("boot-node1-2", ready=True)
        self.wait_reason("d17", "Completed", status="True")
        log(f"d17: node Ready with a new bootID -> Completed in {time.monotonic() - t0:.2f} s")

    # -- D18: restart ------------------------------------------------------------------------------
    @drain_setup(kubelet="grace", grace_seconds=3)
    def test_D18_killed_mid_drain_resumes_from_status(self):
        # Each eviction takes 0.3 s, so the kill lands between the first eviction and the last.
        code, body, _ = self.api.control("faults", {"path": "/pods/[^/]+/eviction$", "method": "POST",
                                                    "latencyMs": 300, "count": -1})
        self.assertEqual(code, 200, body)
        self.nd("d18", FORCE)

        def terminating():
            return [p for p in EVICTABLE if (self.pod(p) or {}).get("metadata", {}).get("deletionTimestamp")]
        some, waited = eventually(terminating, WAIT_S, 0.01)
        self.assertTrue(some, "no pod was evicted:" + self.describe("d18"))
        self.drainer.kill()
        t_kill = time.monotonic()
        time.sleep(0.5)  # an eviction in flight when the drainer died lands (as a restart takes time)
        before = self.drainer_evictions()
        log(f"d18: killed after {waited:.2f} s; terminating then: {some}; evictions asked before: "
            f"{[p for p, _ in before]}; status: {json.dumps(self.drain_status('d18'))}")
        self.drainer = Drainer(self.api, self.tmp)
        log(f"d18: restarted and ready {time.monotonic() - t_kill:.2f} s after the kill")
        self.assert_d02_final("d18")
        log(f"d18: kill -> Drained in {time.monotonic() - t_kill:.2f} s")
        counts = {}
        for p, _ in self.drainer_evictions():
            counts[p] = counts.get(p, 0) + 1
        log(f"d18: evictions per pod: {counts}")
        self.assertEqual({p: n for p, n in counts.items() if n > 1}, {},
                         "a pod already evicted (terminating or gone) must not be evicted again")
        self.assertEqual(sorted(p for p in counts if p != DONE), sorted(EVICTABLE))
        # The restarted drainer found the node held (annotations from the first one's patch)
        # and writes the conditions the requests want, not what it remembers.
        ann = self.node()["metadata"]["annotations"]
        self.assertEqual((ann.get(KARPENTER), ann.get(SCALE_DOWN)), ("true", "true"), ann)
        ok, _ = eventually(lambda: self.node_conditions().get("Drained") == ("True", "NodegateDrained"),
                           WAIT_S, 0.05)
        self.assertTrue(ok, f"node1 conditions: {self.node_conditions()}")
        # It remembered that node1 was schedulable before: deleting the request gives it back.
        self.delete_nd("d18")
        self.wait_gone("d18")
        self.assert_released()
        self.assert_no_marks_left()

    # -- D19-D20 -----------------------------------------------------------------------------------
    @drain_setup(ngc_drain={"protectedJobPods": {"matchLabels": {"app": "batch"}}})
    def test_D19_protected_running_job_pod_holds_the_drain_back(self):
        self.nd("d19", FORCE)

        def held_back():
            nd = self.get_nd("d19")
            c = self.condition(nd) or {}
            st = (nd.get("status") or {}).get("drain") or {}
            return "batch/job-1" in c.get("message", "") and (st.get("attempts") or 0) >= 1 and c
        c, waited = eventually(held_back, 2 * WAIT_S, 0.05)
        self.assertTrue(c, "the drain must say it is held back by batch/job-1:" + self.describe("d19"))
        log(f"d19: held back after {waited:.2f} s: {c.get('reason')}: {c.get('message')!r}")
        self.assertIn("held back by running Job pod batch/job-1", c["message"])
        self.assertEqual(c["status"], "False")
        self.assertTrue(self.stays(lambda: all(self.present(p) for p in ALL_PODS), 2),
                        "nothing may be evicted while the protected Job pod runs")
        self.assertEqual(self.drainer_evictions(), [])
        self.assertTrue(self.cordoned())
        # job-1 ends: the drain proceeds (the finished pod is not evicted).
        t0 = time.monotonic()
        self.patch("/api/v1/namespaces/batch/pods/job-1/status", {"status": {"phase": "Succeeded"}})
        nd = self.wait_drained("d19", timeout=2 * WAIT_S)
        log(f"d19: job pod Succeeded -> Drained in {time.monotonic() - t0:.2f} s")
        self.assert_pods(present=NEVER + (JOB,), absent=(WEB, GPU, BARE, SCRATCH))
        self.assertNotIn(JOB, self.evicted_refs())

    def test_D20_nodegate_own_pod_is_never_evicted(self):
        rs = self.create("/apis/apps/v1/namespaces/nodegate/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "nodegate", "namespace": "nodegate", "labels": {"app.kubernetes.io/name": "nodegate"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "nodegate"}},
                     "template": {"metadata": {"labels": {"app.kubernetes.io/name": "nodegate"}},
                                  "spec": {"containers": [{"name": "nodegate", "image": "nodegate:dev"}]}}}})
        self.create("/api/v1/namespaces/nodegate/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nodegate-0", "namespace": "nodegate", "labels": {"app.kubernetes.io/name": "nodegate"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "nodegate",
                                              "uid": rs["metadata"]["uid"], "controller": True}]},
            "spec": {"nodeName": "node1", "serviceAccountName": "nodegate",
                     "containers": [{"name": "nodegate", "image": "nodegate:dev"}]}})
        self.patch("/api/v1/namespaces/nodegate/pods/nodegate-0/status",
                   {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
        self.nd("d20", FORCE)
        self.wait_drained("d20")
        self.assert_pods(present=NEVER + ("nodegate/nodegate-0",), absent=EVICTABLE)
        self.assertNotIn("nodegate/nodegate-0", self.evicted_refs())

    # -- contract steps beyond the scenario table ---------------------------------------------------
    def test_finalizer_is_added_before_the_node_is_touched(self):
        nd_watch, node_watch = Watch(self.api, ND_PATH), Watch(self.api, "/api/v1/nodes")
        self.addCleanup(nd_watch.stop)
        self.addCleanup(node_watch.stop)
        self.nd("order", FORCE)
        self.wait_drained("order")
        time.sleep(0.3)
        fin = [int(o["metadata"]["resourceVersion"]) for _, _, o in nd_watch.snapshot()
               if FINALIZER in (o["metadata"].get("finalizers") or [])]
        touched = [int(o["metadata"]["resourceVersion"]) for _, _, o in node_watch.snapshot()
                   if o["spec"].get("unschedulable") or ANNOTATION in (o["metadata"].get("annotations") or {})]
        self.assertTrue(fin and touched, (fin, touched))
        log(f"order: finalizer at resourceVersion {min(fin)}, node1 first touched at {min(touched)}")
        self.assertLess(min(fin), min(touched), "the finalizer must be on the request before node1 is touched")

    def test_request_not_granted_is_not_touched(self):
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "hold"},
                               "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}}, "maxDisruptedNodes": 0}})
        ok, _ = eventually(lambda: ((self.api.api("GET", f"{NDB_PATH}/hold")[1] or {}).get("status") or {})
                           .get("watchedNodes") == 1, WAIT_S, 0.05)
        self.assertTrue(ok, "the gate never took the NDB in")
        self.nd("pending", FORCE, retry={"enabled": True, "deadline": FAR})
        ok, _ = eventually(lambda: (self.get_nd("pending") or {}).get("status", {}).get("state") == "Pending", WAIT_S, 0.05)
        self.assertTrue(ok, self.describe("pending"))
        untouched = self.stays(lambda: not self.cordoned() and self.annotation() is None
                               and FINALIZER not in (self.get_nd("pending")["metadata"].get("finalizers") or []), 2)
        self.assertTrue(untouched, "a Pending request must not be acted on:" + self.describe("pending"))
        self.assert_pods(present=ALL_PODS)
        # Once granted, it is.
        code, body, _ = self.api.api("DELETE", f"{NDB_PATH}/hold")
        self.assertEqual(code, 200, body)
        self.assert_d02_final("pending")

    def test_release_when_the_request_no_longer_exists(self):
        # The request disappears while no drainer runs (its finalizer removed by hand): the next
        # drainer gives node1 back all the same.
        self.nd("vanish", dict(FORCE, taint=MAINT_TAINT))
        self.wait_drained("vanish")
        self.assertEqual(self.annotation().get("taints"), [MAINT_TAINT], self.annotation())
        self.assertEqual(self.drainer.stop(), 0)
        self.delete_nd("vanish")
        self.patch(f"{ND_PATH}/vanish", [{"op": "replace", "path": "/metadata/finalizers", "value": []}],
                   ctype="application/json-patch+json")
        ok, _ = eventually(lambda: self.gone("vanish"), WAIT_S, 0.05)
        self.assertTrue(ok)
        self.assertTrue(self.cordoned(), "nothing gave node1 back yet")
        self.drainer = Drainer(self.api, self.tmp)
        self.assert_released()
        # The taint it added goes too: the note lists it, so nobody needs the request's spec.
        self.assertNotIn(MAINT_TAINT["key"], self.taint_keys(self.node()))

    def test_a_taint_already_on_the_node_stays_after_release(self):
        # Someone else put the same taint on node1 first: the drainer did not add it, so it does
        # not take it away.
        self.patch("/api/v1/nodes/node1", {"spec": {"taints": [MAINT_TAINT]}})
        self.nd("pre", dict(FORCE, taint=MAINT_TAINT))
        self.wait_drained("pre")
        self.assertNotIn("taints", self.annotation(), self.annotation())
        self.delete_nd("pre")
        self.wait_gone("pre")
        self.assert_released_but_tainted()

    def assert_released_but_tainted(self):
        ok, _ = eventually(lambda: not self.cordoned() and self.annotation() is None, WAIT_S, 0.05)
        self.assertTrue(ok, json.dumps(self.node_view("node1")))
        self.assertIn(MAINT_TAINT["key"], self.taint_keys(self.node()), "a taint nodegate did not add must stay")

    # -- metrics (contract: Metrics) ------------------------------------------------------------
    def test_metrics_named_in_the_contract(self):
        self.nd("blocked", {})  # fails its attempts (bare, scratch)
        ok, _ = eventually(lambda: (self.drain_status("blocked").get("attempts") or 0) >= 1, WAIT_S, 0.05)
        self.assertTrue(ok, self.describe("blocked"))
        self.delete_nd("blocked")
        self.wait_gone("blocked")
        self.nd("m", FORCE)
        self.wait_drained("m")
        m = self.drainer.metrics()
        log("metrics: " + ", ".join(f"{k} {v:g}" for k, v in sorted(m.items()) if "drain" in k or "leader" in k))
        self.assertEqual(metric_sum(m, "nodegate_drain_pods_evicted_total", strategy="Evict"), 5)
        self.assertEqual(metric_sum(m, "nodegate_drain_nodes_held"), 1)
        self.assertEqual(metric_sum(m, "nodegate_leader"), 1)
        self.assertGreaterEqual(metric_sum(m, "nodegate_drain_duration_seconds_count") or 0, 1)
        self.assertGreaterEqual(metric_sum(m, "nodegate_drain_failures_total") or 0, 1)
        missing = [name for name in ("nodegate_drain_pods_evicted_total", "nodegate_drain_attempts_total",
                                     "nodegate_drain_failures_total", "nodegate_drain_duration_seconds_bucket",
                                     "nodegate_drain_nodes_held", "nodegate_leader")
                   if metric_sum(m, name) is None]
        self.assertEqual(missing, [], "series the contract names are missing from /metrics")
        # The drainer serves no webhook: no admission series that could only ever read zero.
        self.assertIsNone(metric_sum(m, "nodegate_admission_requests_total"), sorted(m))
        self.assertGreaterEqual(metric_sum(m, "nodegate_drain_attempts_total"), 2)
        self.delete_nd("m")
        self.wait_gone("m")
        ok, _ = eventually(lambda: self.drainer.metric("nodegate_drain_nodes_held") == 0, WAIT_S, 0.05)
        self.assertTrue(ok, "nodegate_drain_nodes_held must drop to 0 once the node is given back")

    # -- the eviction webhook ---------------------------------------------------------------------
    def test_drainer_evictions_pass_the_eviction_webhook_allowed_by_the_grant(self):
        # web-1 is protected by an ApplicationDisruptionBudget: without a grant, nodegate's
        # eviction webhook refuses to let it go (429).
        self.create("/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "maxDisruptions": 1}})
        ok, _ = eventually(lambda: evict(self.api, "web-1", dry_run=True)[0] == 429, WAIT_S)
        self.assertTrue(ok, "web-1 must be protected by the ADB before the grant")
        code, body, _ = evict(self.api, "web-1", dry_run=True, user=SA_USER)
        self.assertEqual(code, 429, "the drainer's own account gets no exemption: " + json.dumps(body))
        self.assertIn("nodegate", body.get("message", ""))
        allowed0 = metric_sum(serve_metrics(self.ng), "nodegate_admission_requests_total",
                              webhook="eviction", decision="allowed") or 0
        code, _, _ = self.api.control("webhook-calls", method="DELETE")
        self.assertEqual(code, 200)
        # The gate grants node1 (the ADB allows one disruption); the drainer evicts web-1.
        self.nd("webhook", {"podSelector": "app=web"})
        self.wait_granted("webhook")
        self.wait_drained("webhook")
        self.assertFalse(self.present(WEB))
        calls = [c for c in self.webhook_calls()
                 if (c.get("request") or {}).get("subResource") == "eviction"
                 and (c["request"].get("userInfo") or {}).get("username") == SA_USER
                 and c["request"].get("name") == "web-1"]
        self.assertTrue(calls, "the drainer's eviction of web-1 never reached nodegate's eviction webhook")
        self.assertEqual(calls[0]["webhook"], "eviction.nodegate.io")
        self.assertTrue(calls[-1]["result"].get("allowed"), calls[-1]["result"])
        self.assertFalse(calls[-1]["request"].get("dryRun"))
        allowed1 = metric_sum(serve_metrics(self.ng), "nodegate_admission_requests_total",
                              webhook="eviction", decision="allowed") or 0
        log(f"webhook: {len(calls)} eviction review(s) of web-1 by the drainer, allowed; "
            f"nodegate_admission_requests_total{{webhook=\"eviction\",decision=\"allowed\"}} {allowed0:.0f} -> {allowed1:.0f}")
        self.assertGreaterEqual(allowed1 - allowed0, 1)

    # -- waitForVolumeDetach (contract step 4) ------------------------------------------------------
    def test_waits_for_volume_detach_before_drained(self):
        self.create(VA_PATH, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                              "metadata": {"name": "va-node1"},
                              "spec": {"attacher": "csi.example.com", "nodeName": "node1",
                                       "source": {"persistentVolumeName": "pv-1"}}})
        self.nd("va", FORCE)
        self.wait_pods_gone(EVICTABLE)
        held = self.stays(lambda: self.reason("va") != "Drained", 2)
        self.assertTrue(held, "a VolumeAttachment on node1 must hold Drained back:" + self.describe("va"))
        t0 = time.monotonic()
        code, body, _ = self.api.api("DELETE", f"{VA_PATH}/va-node1")
        self.assertEqual(code, 200, body)
        self.wait_drained("va")
        log(f"va: VolumeAttachment deleted -> Drained in {time.monotonic() - t0:.2f} s")

    def test_wait_for_volume_detach_false_ignores_attachments(self):
        self.create(VA_PATH, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                              "metadata": {"name": "va-node1"},
                              "spec": {"attacher": "csi.example.com", "nodeName": "node1",
                                       "source": {"persistentVolumeName": "pv-1"}}})
        self.nd("va-off", dict(FORCE, waitForVolumeDetach=False))
        self.wait_drained("va-off")


class ThirtyPodsTest(DrainTest):
    """One generated node with 30 ReplicaSet pods."""
    GENERATE = "nodes=1,pods-per-node=30,namespaces=3"
    FIXTURES = ()

    def test_grant_to_drained_for_a_node_with_30_pods(self):
        self.nd("thirty", {}, nodes=("node-00001",))
        t_granted = None

        def granted():
            return (self.get_nd("thirty") or {}).get("status", {}).get("state") == "Granted"
        ok, _ = eventually(granted, WAIT_S, 0.01)
        if not ok:  # describe() reads node1, which this generated cluster does not have
            self.fail(json.dumps(self.get_nd("thirty")))
        t_granted = time.monotonic()
        nd, _ = eventually(lambda: self.reason("thirty") == "Drained" and self.get_nd("thirty"), 6 * WAIT_S, 0.02)
        self.assertTrue(nd, "never Drained: " + json.dumps((self.get_nd("thirty") or {}).get("status")))
        took = time.monotonic() - t_granted
        st = nd["status"]["drain"]
        log(f"30 pods: grant -> Drained in {took:.2f} s (created -> Granted "
            f"{t_granted - self.t_created:.2f} s); status.drain {json.dumps(st)}")
        self.assertEqual((st.get("totalPods"), st.get("evictedPods"), st.get("progress")), (30, 30, 100), st)
        code, body, _ = self.api.api("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-00001")
        self.assertEqual(body["items"], [])


class WaveTest(DrainTest):
    """Two generated nodes with one ReplicaSet pod each: a wave of two requests."""
    GENERATE = "nodes=2,pods-per-node=1,namespaces=1"
    FIXTURES = ()
    NODES = ("node-00001", "node-00002")

    def journal_lines(self):
        with open(self.journal, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    @drain_setup(journal=True)
    def test_a_waves_requests_are_evicted_together(self):
        """Two requests granted together: the drainer evicts their pods together, not the second
        request's pod only after the first request's step is done. Each pod's eviction is
        answered 3 s late (an injected latency), so a drainer stepping one request after the
        other would put the second request's finalizer after the first pod's eviction in the
        API server's journal; the drainer puts both requests' finalizers before either."""
        pods = {}
        for node in self.NODES:
            code, body, _ = self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")
            self.assertEqual(len(body["items"]), 1, body)
            md = body["items"][0]["metadata"]
            pods[node] = (md["namespace"], md["name"])
        # Granted while no drainer runs, so the drainer's first round sees both at once.
        self.assertEqual(self.drainer.stop(), 0)
        self.drainer = None
        for ns, name in pods.values():
            code, body, _ = self.api.control("faults", {"path": f"^/api/v1/namespaces/{ns}/pods/{name}/eviction$",
                                                        "method": "POST", "latencyMs": 3000, "count": 1})
            self.assertEqual(code, 200, body)
        for node in self.NODES:
            self.nd("wave-" + node, {}, nodes=(node,))
        for node in self.NODES:
            ok, _ = eventually(lambda n=node: (self.get_nd("wave-" + n) or {}).get("status", {})
                               .get("state") == "Granted", WAIT_S, 0.05)
            self.assertTrue(ok, json.dumps(self.get_nd("wave-" + node)))
        self.drainer = Drainer(self.api, self.tmp)
        for node in self.NODES:
            nd, _ = eventually(lambda n=node: self.reason("wave-" + n) == "Drained", 6 * WAIT_S, 0.05)
            self.assertTrue(nd, "never Drained: " + json.dumps((self.get_nd("wave-" + node) or {}).get("status")))
        # The journal, in commit order: each request's finalizer on, each pod's eviction.
        finalized, evicted = {}, {}
        for i, e in enumerate(self.journal_lines()):
            obj, by = e.get("object") or {}, e.get("by") or {}
            md = obj.get("metadata") or {}
            if e["resource"].endswith("nodedisruptions") and "nodegate.io/drain" in (md.get("finalizers") or []):
                finalized.setdefault(md["name"], i)
            if e["resource"].endswith("pods") and (by.get("path") or "").endswith("/eviction"):
                evicted.setdefault((md.get("namespace"), md.get("name")), i)
        self.assertEqual(sorted(finalized), ["wave-" + n for n in self.NODES], finalized)
        self.assertEqual(sorted(evicted), sorted(pods.values()), evicted)
        first_eviction = min(evicted.values())
        log(f"wave: finalizers at journal lines {finalized}, evictions at {evicted}")
        for name, at in finalized.items():
            self.assertLess(at, first_eviction, f"{name}'s step waited for another request's eviction")
        self.assertEqual(sorted(p for p, allowed in self.drainer_evictions() if allowed),
                         sorted(f"{ns}/{n}" for ns, n in pods.values()))


class RollingMaintenanceTest(DrainTest):
    """20 generated nodes (3 ReplicaSet pods each), an NDB of maxDisruptedNodes 3 over all of
    them, one NodeDisruption per node, and a requestor that deletes each request a moment after
    it is Drained."""
    GENERATE = "nodes=20,pods-per-node=3,namespaces=3"
    FIXTURES = ()
    NGC_SPEC = {"retry": {"initialIntervalSeconds": 1, "maxIntervalSeconds": 2}}
    NODES = [f"node-{i:05d}" for i in range(1, 21)]
    MOMENT = 0.3  # the requestor's delay between Drained and its delete

    @staticmethod
    def held(node):
        """Cordoned by nodegate: unschedulable with the drainer's annotation."""
        return bool(node["spec"].get("unschedulable")) and ANNOTATION in (node["metadata"].get("annotations") or {})

    def test_rolling_maintenance_20_nodes(self):
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "all"},
                               "spec": {"nodeSelector": {"matchExpressions": [
                                   {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                                   "maxDisruptedNodes": 3}})
        ok, _ = eventually(lambda: ((self.api.api("GET", f"{NDB_PATH}/all")[1] or {}).get("status") or {})
                           .get("watchedNodes") == 20, WAIT_S, 0.1)
        self.assertTrue(ok, "the gate never took the NDB in")
        # Every change of the nodes and the requests, in the API server's order, with the time
        # it arrived: an exact record beside the polling below.
        node_watch, nd_watch = Watch(self.api, "/api/v1/nodes"), Watch(self.api, ND_PATH)
        self.addCleanup(node_watch.stop)
        self.addCleanup(nd_watch.stop)
        names = {}
        t0 = time.monotonic()
        self.t_created = t0
        for node in self.NODES:
            name = "maint-" + node
            names[name] = node
            self.create(ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                  "metadata": {"name": name},
                                  "spec": {"nodeNames": [node], "drain": {"force": True},
                                           "retry": {"enabled": True, "deadline": FAR}}})
        # The requestor: deletes each request MOMENT after it saw it Drained. The same loop
        # polls the nodes: never more than 3 cordoned by nodegate at any sampled moment.
        granted, drained, deleted, released = {}, {}, {}, {}
        max_cordoned, max_seen_at, samples = 0, None, 0
        violations = []
        deadline = t0 + max(300, 20 * WAIT_S)
        while len(released) < len(names) and time.monotonic() < deadline:
            now = time.monotonic()
            code, nds, _ = self.api.api("GET", ND_PATH)
            code2, nodes, _ = self.api.api("GET", "/api/v1/nodes")
            if code != 200 or code2 != 200:
                time.sleep(0.05)
                continue
            samples += 1
            cordoned = sorted(n["metadata"]["name"] for n in nodes["items"] if self.held(n))
            if len(cordoned) > max_cordoned:
                max_cordoned, max_seen_at = len(cordoned), cordoned
            if len(cordoned) > 3:
                violations.append((round(now - t0, 2), cordoned))
            annotated = {n["metadata"]["name"] for n in nodes["items"]
                         if ANNOTATION in (n["metadata"].get("annotations") or {})}
            present = {}
            for nd in nds["items"]:
                name = nd["metadata"]["name"]
                present[name] = nd
                if (nd.get("status") or {}).get("state") == "Granted":
                    granted.setdefault(name, now)
                if self.condition(nd) and self.condition(nd).get("reason") == "Drained":
                    drained.setdefault(name, now)
            for name, t in drained.items():
                if name not in deleted and now - t >= self.MOMENT:
                    code, body, _ = self.api.api("DELETE", f"{ND_PATH}/{name}")
                    self.assertIn(code, (200, 404), body)
                    deleted[name] = time.monotonic()
            for name in deleted:
                if name not in released and name not in present and names[name] not in annotated:
                    released[name] = now
            time.sleep(0.05)
        total = time.monotonic() - t0
        time.sleep(0.3)  # the watches catch up
        node_events, nd_events = node_watch.snapshot(), nd_watch.snapshot()
        # Replay the node events: the number held after every change the API server made.
        state = {n["metadata"]["name"]: self.held(n) for n in node_watch.initial}
        annotated = {n["metadata"]["name"]: ANNOTATION in (n["metadata"].get("annotations") or {})
                     for n in node_watch.initial}
        exact_max, exact_violations, releases = 0, [], []
        for t, typ, o in node_events:
            name = o["metadata"]["name"]
            state[name] = typ != "DELETED" and self.held(o)
            has = typ != "DELETED" and ANNOTATION in (o["metadata"].get("annotations") or {})
            if annotated.get(name) and not has:
                releases.append((int(o["metadata"]["resourceVersion"]), t, name))
            annotated[name] = has
            n_held = sum(state.values())
            exact_max = max(exact_max, n_held)
            if n_held > 3:
                exact_violations.append((round(t - t0, 3), sorted(k for k, v in state.items() if v)))
        grants, seen = [], set()
        for t, typ, o in nd_events:
            name = o["metadata"]["name"]
            if name not in seen and (o.get("status") or {}).get("state") == "Granted":
                seen.add(name)
                grants.append((int(o["metadata"]["resourceVersion"]), t, name))
        grants.sort()
        releases.sort()
        # The idle time: from the release (a node given back) that let each later grant in to
        # that grant, both in the API server's order (resourceVersion), timed on arrival.
        idles = []
        for rv, tg, _ in grants[3:]:
            before = [tr for rr, tr, _ in releases if rr < rv]
            if before:
                idles.append(tg - before[-1])
        drain_times = [drained[n] - granted[n] for n in drained if n in granted]
        log(f"rolling: {len(released)}/20 nodes processed in {total:.1f} s; max cordoned by nodegate at once: "
            f"{max_cordoned} in {samples} samples {max_seen_at}, {exact_max} over {len(node_events)} node changes")
        if idles:
            log(f"rolling: idle time release -> next grant: mean {sum(idles) / len(idles) * 1000:.0f} ms, "
                f"max {max(idles) * 1000:.0f} ms, min {min(idles) * 1000:.0f} ms over {len(idles)} grants")
        if drain_times:
            log(f"rolling: grant -> Drained (sampled): mean {sum(drain_times) / len(drain_times):.2f} s, "
                f"max {max(drain_times):.2f} s; requestor delay {self.MOMENT} s")
        self.assertEqual(exact_violations, [], "more than 3 nodes cordoned by nodegate at once (watch)")
        self.assertEqual(violations, [], "more than 3 nodes cordoned by nodegate at once (polled)")
        self.assertEqual(sorted(released), sorted(names), "not every request was processed: "
                         f"granted {len(granted)}, drained {len(drained)}, deleted {len(deleted)}")
        self.assertGreater(max_cordoned, 0)
        code, nodes, _ = self.api.api("GET", "/api/v1/nodes")
        for n in nodes["items"]:
            self.assertFalse(n["spec"].get("unschedulable"), n["metadata"]["name"] + " ended cordoned")
            self.assert_no_marks_left(n["metadata"]["name"])
        code, pods, _ = self.api.api("GET", "/api/v1/pods?labelSelector=app%3Dbench")
        self.assertEqual([p["metadata"]["name"] for p in pods["items"]], [], "every node was drained")


if __name__ == "__main__":
    unittest.main()
