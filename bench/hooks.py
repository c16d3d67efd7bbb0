#!/usr/bin/env python3
"""B8 hook isolation: one slow health hook must not hold back the other requests.

The test API server generates NODES nodes (100 by default); each node gets one pod, and each pod
an ApplicationDisruptionBudget (maxDisruptions 1) whose health hook is served by a local HTTPS
hook server (loopback, certificates from a private CA; the NodeGateConfig allows 127.0.0.0/8
for hooks). Every hook answers 200 at once except the first budget's, which answers after
SLOW seconds (20). NODES NodeDisruptions, one per node, are created at once (eight clients in
parallel, the slow one's request first). Measured: from the first create to the moment the
other NODES - 1 are all Granted (a watch on nodedisruptions), or the run's window (SLOW + 10 s)
if they never are. Target: all of them within 1 s. After each run the slow hook is released (it
answers at once), the requests are deleted, and the next run starts from an idle gate.

With --v2 the budgets carry multistep hooks (hookV2BasePath) instead: every /prepare and /ready
answers 200 at once, except the first budget's /prepare (answers after SLOW seconds) and the
second budget's /ready, which answers 425 with Retry-After: 1 for the whole run. Measured: the
other NODES - 2 Granted (each through prepare, then ready).

Usage: bench/hooks.py [--quick|--smoke] [--runs N] [--nodegate PATH] [--nodes N] [--slow-seconds S]
       [--v2]"""
import concurrent.futures
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import test_hooks  # noqa: E402
import test_hooks_v2  # noqa: E402
from test_hooks import HookServer, make_ca, make_server_cert, pem_b64  # noqa: E402

ADB_PATH = bl.GROUP + "/namespaces/default/applicationdisruptionbudgets"
SCALE = {"full": (100, 20), "quick": (100, 10), "smoke": (10, 4)}


class Granted(threading.Thread):
    def __init__(self, api, rv):
        super().__init__(daemon=True)
        self.when = {}
        self.lock = threading.Lock()
        self.stream = api.watch(f"{bl.ND_PATH}?watch=1&resourceVersion={rv}", timeout=3600)
        self.start()

    def run(self):
        while True:
            try:
                ev = self.stream.next()
            except Exception:  # noqa: BLE001  (the stream was shut down, or broke)
                return
            if ev is None:
                return
            obj = ev.get("object") or {}
            if ev.get("type") != "DELETED" and (obj.get("status") or {}).get("state") == "Granted":
                with self.lock:
                    self.when.setdefault(obj["metadata"]["name"], time.monotonic())


def one_run(api, hooks, nodes, slow, run, skip=1):
    hooks.release.clear()
    rv = api.api("GET", bl.ND_PATH)[1]["metadata"]["resourceVersion"]
    g = Granted(api, rv)
    names = [f"iso-{i}-r{run}" for i in range(len(nodes))]

    def make(i):
        bl.create(api, bl.ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                    "metadata": {"name": names[i]}, "spec": {"nodeNames": [nodes[i]]}})
    t0 = time.monotonic()
    make(0)  # the slow hook's request first
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(make, range(1, len(nodes))))
    t_created = time.monotonic() - t0
    others = set(names[skip:])
    window = slow + 10
    bl.wait_for(lambda: others <= set(g.when), window, 0.01)
    with g.lock:
        when = dict(g.when)
    got = [when[n] - t0 for n in others if n in when]
    complete = len(got) == len(others)
    took = max(got) if complete else window
    slow_at = when.get(names[0])
    late = sorted(others - set(when))
    if late:  # what holds the first of them, for whoever reads the run
        st = (api.api("GET", f"{bl.ND_PATH}/{late[0]}")[1] or {}).get("status") or {}
        bl.log(f"  {late[0]} not Granted: {st.get('state')}: "
               f"{((st.get('conditions') or [{}])[0]).get('message')}")
    bl.log(f"  run {run + 1}: {len(got)}/{len(others)} others Granted, the last at "
           f"{max(got) if got else float('nan'):.2f} s (creates took {t_created:.2f} s); the slow one "
           f"{'at %.2f s' % (slow_at - t0) if slow_at else 'not yet'}")
    hooks.release.set()  # the slow hook answers now
    if hasattr(hooks, "script"):  # v2: /ready of budget 1 answers at last, /prepare of 0 at once
        hooks.script[("/b1", "ready")] = [(200, None, 0)]
        hooks.script[("/b0", "prepare")] = [(200, None, 0)]
    bl.stop_watch(g.stream)
    for n in names:
        api.api("DELETE", f"{bl.ND_PATH}/{n}")
    bl.wait_for(lambda: not api.api("GET", bl.ND_PATH + "?limit=1")[1]["items"], 60, 0.1)
    time.sleep(1)
    return {"took": took, "granted": len(got), "within1": sum(1 for x in got if x <= 1.0)}


def main():
    p = bl.parser(__doc__)
    p.add_argument("--nodes", type=int)
    p.add_argument("--slow-seconds", type=int)
    p.add_argument("--v2", action="store_true", help="multistep hooks instead of health hooks")
    a = bl.parse(p)
    n, slow = SCALE[bl.mode(a)]
    n, slow = a.nodes or n, a.slow_seconds or slow
    extra = "".join(f" --{k} {v}" for k, v, given in (("nodes", n, a.nodes), ("slow-seconds", slow, a.slow_seconds))
                    if given) + (" --v2" if a.v2 else "")
    cmd = bl.command("hooks.py", a, extra)
    bl.log(f"B8: {n} requests on {n} budgets with hooks, one hook answers after {slow} s, {a.runs} run(s)")
    tmp = tempfile.mkdtemp(prefix="ng-bench-b8-")
    ca, ca_key = make_ca(tmp, "hook-ca")
    cert, key = make_server_cert(tmp, ca, ca_key)
    test_hooks.HOLD_TIMEOUT = slow  # /hold answers after this, or when a run releases it
    hooks = (test_hooks_v2.StepServer if a.v2 else HookServer)(cert, key).start()
    api = bl.start_api(bl.FIXTURES, f"nodes={n},pods-per-node=0")
    ng = None
    results = []
    try:
        bl.create(api, bl.NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                     "metadata": {"name": "default"},
                                     "spec": {"healthHooks": {"allowedCIDRs": ["127.0.0.0/8"]}}})
        ng = bl.Serve(a.nodegate, api, tmp)
        nodes = [x["metadata"]["name"] for x in api.api("GET", "/api/v1/nodes")[1]["items"]][:n]
        bundle = pem_b64(ca)
        for i, node in enumerate(nodes):
            bl.create(api, "/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"app-{i}", "namespace": "default", "labels": {"slot": str(i)}},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
            # /hold answers when the run releases it, or after HOLD_TIMEOUT: the slow hook.
            path = "/hold" if i == 0 else "/ok"
            hook = {"healthHook": {"url": hooks.url(path), "caBundle": bundle, "timeoutSeconds": 25}}
            if a.v2:
                ok = [(200, None, 0)]
                hooks.script[(f"/b{i}", "prepare")] = [(200, None, slow)] if i == 0 else ok
                hooks.script[(f"/b{i}", "ready")] = [(425, 1, 0)] if i == 1 else ok
                hooks.script[(f"/b{i}", "terminate")] = ok
                hook = {"hookV2BasePath": {"url": hooks.url(f"/b{i}"), "caBundle": bundle,
                                           "timeoutSeconds": 60}}
            bl.create(api, ADB_PATH, {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                "metadata": {"name": f"app-{i}", "namespace": "default"},
                "spec": dict({"podSelector": {"matchLabels": {"slot": str(i)}}, "maxDisruptions": 1},
                             **hook)})

        def watched():
            items = api.api("GET", ADB_PATH)[1]["items"]
            return len(items) == n and all((x.get("status") or {}).get("watchedNodes") for x in items)
        if not bl.wait_for(watched, 60, 0.2):
            bl.log("  nodegate never reported every budget's watchedNodes; measuring anyway")
        for r in range(a.runs):
            if a.v2:  # each run starts with the slow /prepare and the looping /ready again
                hooks.script[("/b0", "prepare")] = [(200, None, slow)]
                hooks.script[("/b1", "ready")] = [(425, 1, 0)]
            results.append(one_run(api, hooks, nodes, slow, r, 2 if a.v2 else 1))
    finally:
        if ng is not None:
            ng.stop()
        api.stop()
        hooks.stop()
        if os.environ.get("NG_BENCH_KEEP"):
            bl.log(f"  kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    col = lambda k: [x[k] for x in results]  # noqa: E731
    k = n - 2 if a.v2 else n - 1
    what = (f"multistep hooks, one /prepare answers after {slow} s, one /ready 425 Retry-After 1"
            if a.v2 else f"one hook answers after {slow} s")
    rows = [
        bl.row("B8", f"first create → the other {k} Granted ({what}; {slow + 10} s when never)",
               col("took"), "s", cmd, target=f"all {k} within 1 s", met=lambda v, _: v["median"] <= 1.0),
        bl.row("B8", "others Granted within 1 s", col("within1"), "count", cmd),
        bl.row("B8", f"others Granted within {slow + 10} s", col("granted"), "count", cmd,
               target=f"all {k}", met=lambda v, _: v["min"] == k),
    ]
    bl.finish("B8", rows)


if __name__ == "__main__":
    main()
