#!/usr/bin/env python3
"""B7 rolling maintenance with the drainer: wall time / ideal.

The test API server generates NODES nodes and runs its kubelet stand-in in `grace` mode: a pod
being deleted lingers for its terminationGracePeriodSeconds, then goes (a timer at that deadline).
Each node gets one pod with a grace period of D seconds, so draining a node takes D:
the drainer's eviction starts the pod's termination, and the node is Drained when the pod is
gone. One NodeDisruptionBudget (maxDisruptedNodes PERCENT of the nodes, 10 % by default) over all
of them; `nodegate serve` (the gate, registered as the eviction webhook every eviction passes)
and `nodegate drain`, both as nodegate's service account. The requestor (this script) creates one
NodeDisruption per node (`drain: {force: true}`, retry on) one after the other, and deletes each
as soon as a watch shows it Drained, the way a maintenance tool would; the drainer then gives the
node back and the gate grants the next request.

Wall time: from the first create to the delete of the last Drained request. Ideal:
ceil(NODES / allowed) x D, the maintenance with no overhead at all. Target: wall / ideal <= 1.05.
Also reported: grant -> Drained per node (mean), and for the first wave (the `allowed` requests
granted first, which the drainer steps together) the slowest one's grant -> Drained: what the
first wave adds to every later slot of its chain.

--journal FILE keeps the test API server's journal (every committed write, with who wrote it),
to see where a run's time goes.

Usage: bench/rolling.py [--quick|--smoke] [--runs N] [--nodegate PATH]
                        [--nodes N] [--drain-seconds D] [--percent P] [--journal FILE]"""
import base64
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from test_live_cache import make_client_ca  # noqa: E402  (tests/e2e, on the path via benchlib)

SCALE = {"full": (200, 5, 10), "quick": (40, 1, 10), "smoke": (6, 1, 50)}
NS = "bench-0"
FAR = "2099-01-01T00:00:00Z"


class Drainer:
    """`nodegate drain` as nodegate's service account, its probes on a free loopback port."""

    def __init__(self, binary, api, tmp):
        self.port = bl.free_port()
        self.log_path = os.path.join(tmp, "drain.log")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        with open(self.log_path, "wb") as logf:
            self.proc = subprocess.Popen(
                [binary, "drain", "--kubeconfig", os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate"),
                 "--listen", f"127.0.0.1:{self.port}", "--lease-namespace", "nodegate",
                 "--identity", "bench", "--shutdown-grace-seconds", "1", "--log-level", "warn"],
                stdout=logf, stderr=subprocess.STDOUT, env=env)
        if not bl.wait_for(lambda: self.proc.poll() is not None or bl.http_status(self.port, "/readyz") == 200, 120):
            self.stop()
            raise RuntimeError("nodegate drain never became ready")
        if self.proc.poll() is not None:
            raise RuntimeError("nodegate drain exited:\n" + open(self.log_path, errors="replace").read()[-3000:])

    def stop(self):
        bl.terminate(self.proc)


def register_webhook(api, ng):
    with open(ng.cert, "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    bl.create(api, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "nodegate"},
        "webhooks": [{"name": "eviction.nodegate.io", "admissionReviewVersions": ["v1"],
                      "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail", "timeoutSeconds": 5,
                      "clientConfig": {"url": f"https://127.0.0.1:{ng.port}/validate/eviction", "caBundle": ca},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["pods/eviction"], "scope": "Namespaced"}]}]})


def ready_reason(nd):
    for c in ((nd or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("reason")
    return None


class Requestor(threading.Thread):
    """Watches nodedisruptions; deletes each request as soon as it is Drained."""

    def __init__(self, api, rv):
        super().__init__(daemon=True)
        self.api = api
        self.lock = threading.Lock()
        self.granted, self.drained, self.deleted, self.gone = {}, {}, {}, {}
        self.stream = api.watch(f"{bl.ND_PATH}?watch=1&resourceVersion={rv}", timeout=3600)
        self.start()

    def delete(self, name):
        code, body, _ = self.api.api("DELETE", f"{bl.ND_PATH}/{name}")
        with self.lock:
            self.deleted[name] = time.monotonic()
        if code not in (200, 202, 404):
            bl.log(f"  DELETE {name}: {code} {body}")

    def run(self):
        while True:
            try:
                ev = self.stream.next()
            except Exception:  # noqa: BLE001  (the stream was shut down, or broke)
                return
            if ev is None:
                return
            t = time.monotonic()
            obj = ev.get("object") or {}
            name = (obj.get("metadata") or {}).get("name")
            with self.lock:
                if ev.get("type") == "DELETED":
                    self.gone.setdefault(name, t)
                    continue
                if (obj.get("status") or {}).get("state") == "Granted":
                    self.granted.setdefault(name, t)
                if ready_reason(obj) == "Drained" and name not in self.drained:
                    self.drained[name] = t
                    threading.Thread(target=self.delete, args=(name,), daemon=True).start()


def one_run(api, ng, nodes, d, allowed, run):
    # The pods: one per node, draining takes their grace period.
    for node in nodes:
        bl.create(api, f"/api/v1/namespaces/{NS}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"work-{node}-r{run}", "namespace": NS, "labels": {"app": "roll"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": d,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    want = len(nodes)
    if not bl.wait_for(lambda: len([p for p in (ng_cache(ng).get("pods") or [])
                                    if "roll" in json.dumps(p)]) >= want, 60, 0.1):
        bl.log("  nodegate's cache never showed every pod; measuring anyway")
    time.sleep(1)  # the drainer's own cache, fed by its own watch
    rv = api.api("GET", bl.ND_PATH)[1]["metadata"]["resourceVersion"]
    req = Requestor(api, rv)
    t0 = time.monotonic()
    for node in nodes:
        bl.create(api, bl.ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                    "metadata": {"name": f"maint-{node}-r{run}"},
                                    "spec": {"nodeNames": [node], "drain": {"force": True},
                                             "retry": {"enabled": True, "deadline": FAR}}})
    t_created = time.monotonic() - t0
    ideal = math.ceil(len(nodes) / allowed) * d
    deadline = t0 + 3 * ideal + 120
    bl.wait_for(lambda: len(req.gone) >= want or time.monotonic() > deadline, 3 * ideal + 130, 0.05)
    with req.lock:
        deleted = dict(req.deleted)
        drain_times = [req.drained[n] - req.granted[n] for n in req.drained if n in req.granted]
        # The first wave: the `allowed` requests granted first, and the slowest of them from its
        # grant to Drained (D when they are all drained together).
        first = sorted((t, n) for n, t in req.granted.items())[:allowed]
        first_wave = [req.drained[n] - t for t, n in first if n in req.drained]
    wall = (max(deleted.values()) - t0) if len(deleted) == want else None
    bl.log(f"  run {run + 1}: {len(deleted)}/{want} requests drained and deleted; wall "
           f"{wall if wall is None else round(wall, 2)} s, ideal {ideal} s; creates took {t_created:.2f} s; "
           f"grant -> Drained mean {sum(drain_times) / max(1, len(drain_times)):.2f} s; "
           f"first wave's slowest {max(first_wave) if first_wave else 0:.2f} s")
    # Everything given back before the next run.
    bl.wait_for(lambda: not api.api("GET", bl.ND_PATH + "?limit=1")[1]["items"], 120, 0.2)
    bl.wait_for(lambda: not any(n["spec"].get("unschedulable") for n in api.api("GET", "/api/v1/nodes")[1]["items"]),
                60, 0.2)
    bl.stop_watch(req.stream)
    return {"wall": wall, "ideal": ideal, "done": len(deleted),
            "drain": sum(drain_times) / len(drain_times) if drain_times else None,
            "first_wave": max(first_wave) if len(first_wave) == allowed else None}


def ng_cache(ng):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", ng.admin_port, timeout=20)
    try:
        c.request("GET", "/debug/cache")
        r = c.getresponse()
        return json.loads(r.read()) if r.status == 200 else {}
    except (OSError, ValueError):
        return {}
    finally:
        c.close()


def main():
    p = bl.parser(__doc__)
    p.add_argument("--nodes", type=int)
    p.add_argument("--drain-seconds", type=int)
    p.add_argument("--percent", type=int)
    p.add_argument("--journal", help="keep the test API server's journal in this file")
    a = bl.parse(p)
    n, d, pct = SCALE[bl.mode(a)]
    n, d, pct = a.nodes or n, a.drain_seconds or d, a.percent or pct
    extra = "".join(f" --{k} {v}" for k, v, given in (("nodes", n, a.nodes), ("drain-seconds", d, a.drain_seconds),
                                                      ("percent", pct, a.percent)) if given)
    cmd = bl.command("rolling.py", a, extra)
    allowed = max(1, n * pct // 100)
    bl.log(f"B7: {n} nodes, NDB maxDisruptedNodes {pct} % ({allowed}), drain {d} s per node, {a.runs} run(s)")
    tmp = tempfile.mkdtemp(prefix="ng-bench-b7-")
    ca, crt, key = make_client_ca(tmp)
    api = bl.start_api(bl.FIXTURES, f"nodes={n},pods-per-node=0,namespaces=1", kubelet="grace",
                       extra_args=["--webhook-client-cert", f"{crt}:{key}"]
                       + (["--journal", os.path.abspath(a.journal)] if a.journal else []))
    ng = drainer = None
    results = []
    try:
        bl.create(api, bl.NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                     "metadata": {"name": "default"},
                                     "spec": {"drain": {"backoff": {"base": 1, "max": 2, "jitter": 0}},
                                              "retry": {"initialIntervalSeconds": 1, "maxIntervalSeconds": 2}}})
        ng = bl.Serve(a.nodegate, api, tmp, client_ca=ca)
        register_webhook(api, ng)
        drainer = Drainer(a.nodegate, api, tmp)
        bl.create(api, bl.NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                                     "metadata": {"name": "all"},
                                     "spec": {"nodeSelector": {}, "maxDisruptedNodes": f"{pct}%"}})
        bl.wait_for(lambda: ((api.api("GET", f"{bl.NDB_PATH}/all")[1] or {}).get("status") or {})
                    .get("watchedNodes") == n, 60, 0.1)
        nodes = [x["metadata"]["name"] for x in api.api("GET", "/api/v1/nodes")[1]["items"]]
        for r in range(a.runs):
            results.append(one_run(api, ng, nodes, d, allowed, r))
    finally:
        for x in (drainer, ng):
            if x is not None:
                x.stop()
        api.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    walls = [x["wall"] for x in results]
    ideal = results[0]["ideal"] if results else None
    rows = [
        bl.row("B7", f"rolling maintenance of {n} nodes, {allowed} at a time, drain {d} s each: wall time",
               walls, "s", cmd, reference=[x["ideal"] for x in results],
               reference_name=f"ideal: ceil({n}/{allowed}) × {d} s = {ideal} s",
               target="wall ≤ 1.05 × ideal", met=lambda _, ratio: ratio is not None and ratio["median"] <= 1.05),
        bl.row("B7", "grant → Drained per node, mean", [x["drain"] for x in results], "s", cmd,
               reference=[d for _ in results], reference_name=f"the drain's simulated time D = {d} s"),
        bl.row("B7", f"first wave ({allowed} granted first): grant → Drained, slowest", [x["first_wave"] for x in results],
               "s", cmd, reference=[d for _ in results], reference_name=f"the drain's simulated time D = {d} s"),
        bl.row("B7", "requests drained and deleted", [x["done"] for x in results], "count", cmd,
               target=f"all {n}", met=lambda v, _: v["min"] == n),
    ]
    bl.finish("B7", rows)


if __name__ == "__main__":
    main()
