#!/usr/bin/env python3
"""B11 the randomized safety test at scale: no budget is ever granted past its limit, and a slow
health hook holds up no request that does not depend on it, with NODES nodes in the cache.

The cluster is bench/feed.py's: NODES nodes x PODS pods per node synthesized (pool-<i % 10>,
zone-a/b/c; each node posting its status every 5 minutes, as B10's), plus the pods of a few
applications on chosen nodes (--app-pods); every other resource lives on a real test API server
behind it. `nodegate serve` (--replicas, competing for the lease) runs against the feed, with
these budgets:

- a NodeDisruptionBudget per pool (`pool In [pool-k]`, maxDisruptedNodes 2-5 at random),
- `all`: every node, maxDisruptedNodes 20,
- `zones`: every node, topologyKey topology.kubernetes.io/zone, maxDisruptedDomains 2 and
  maxDisruptedNodesPerDomain 5,
- APPS ApplicationDisruptionBudgets (maxDisruptions 1), each over the pods of APP_NODES nodes,
  with a health hook that is slow, fails or times out at random (the hook server of
  tests/e2e/test_hooks.py; timeoutSeconds 1, a hang lasts 3 s), and one more over one node whose
  hook answers only when released (timeoutSeconds 25).

First the stall check: a request for the held hook's node waits on its hook; then STALL_FREE
requests for nodes no hook budget covers are created, and each must be Granted while the held
hook is still out (its request undecided, the hook not released); then the hook is released and
its request must be Granted.

Then OPS random operations (seeded): requests of 1-3 nodes created (a node of a hook budget
with probability 0.3, else any node; most with retry, some with activeDeadlineSeconds 1-3, which
the gate ends by itself), Granted or Pending ones deleted, a budget loosened now and then.
Budgets are only loosened, so a grant made under a tighter limit never looks like an excess.
An independent checker watches NodeDisruptions on the test API server and, at every transition
to Granted, recomputes every budget's disrupted nodes (pools and zones computed from the node
names as the feed names them) from the Granted requests it has seen: any excess is an
over-grant. After the run every request still there that no hook budget covers must have been
decided.

Reported: operations, requests, grants, over-grants (target 0), hook calls, and for requests no
hook budget covers the time from create to their first decision (Granted, Rejected, or Pending
with a reason), p50 and p99 (beside how many were deleted before any decision, which they
leave out), and the leader's decision time (nodegate_decision_duration_seconds:
mean, and p99 from its buckets), as figures. The program exits 1 on any over-grant or stall.

Sizes: full (by hand) 100,000 nodes x 1 pod and 2,000 operations per run; --quick 20,000 x 1
and 500; --smoke 2,000 x 1 and 200. Each run (--runs, 3 on a full run) starts its own feed and
replicas, with seed --seed + its index.

Usage: bench/safety_scale.py [--quick|--smoke] [--nodegate PATH] [--nodes N] [--pods-per-node P]
                             [--ops K] [--seed S] [--replicas R]"""
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import feed  # noqa: E402
import test_hooks  # noqa: E402
from test_hooks import HookServer, make_ca, make_server_cert, pem_b64  # noqa: E402

SCALE = {"full": (100000, 1, 2000), "quick": (20000, 1, 500), "smoke": (2000, 1, 200)}
ADB_PATH = bl.GROUP + "/namespaces/default/applicationdisruptionbudgets"
APPS = 4           # hook budgets with random hooks
APP_NODES = 4      # nodes under each
STALL_FREE = 3     # requests that must be decided while the held hook is out
HOLD_S = 25        # the held hook's timeoutSeconds (the most a hook may take)
WAIT_S = 60        # bound of every other wait for the gate
ZONE_KEY = feed.ZONE_LABEL
DECISION = "nodegate_decision_duration_seconds"
HEARTBEAT_S = 300  # a kubelet posts its node's status this often when nothing changed (as B10)


def parse_args():
    p = bl.parser(__doc__)
    p.add_argument("--nodes", type=int)
    p.add_argument("--pods-per-node", type=int)
    p.add_argument("--ops", type=int)
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--replicas", type=int, default=2, help="nodegate serve replicas competing for the lease")
    a = bl.parse(p)
    # The command a row names: the flags given beside the mode's sizes.
    a.extra = "".join(f" --{k.replace('_', '-')} {getattr(a, k)}" for k in ("nodes", "pods_per_node", "ops")
                      if getattr(a, k) is not None) + f" --seed {a.seed} --replicas {a.replicas}"
    n, per, ops = SCALE[bl.mode(a)]
    a.nodes = a.nodes or n
    a.pods_per_node = per if a.pods_per_node is None else a.pods_per_node
    a.ops = a.ops or ops
    if a.nodes < 20 or a.replicas < 1:
        p.error("--nodes must be at least 20 and --replicas at least 1")
    return a


class Checker(threading.Thread):
    """Follows NodeDisruptions through a watch on the test API server, independently of nodegate:
    at every transition to Granted, every budget's disrupted nodes recomputed from the Granted
    requests seen; each budget over its limit is an over-grant. Also the first decision of
    every request (monotonic time, state)."""

    def __init__(self, api, limits, app_nodes):
        super().__init__(daemon=True)
        self.api = api
        self.limits = limits        # budget -> {"kind": pool|all|zones|app, ...}
        self.app_nodes = app_nodes  # app budget -> set of nodes
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.granted = {}           # request -> set(nodes)
        self.first = {}             # request -> (monotonic, state)
        self.gone = set()           # requests seen deleted (or being deleted)
        self.violations = []
        self.seen = set()           # (request, budget) over-grants recorded
        self.grants = 0
        self.peak = 0               # most nodes granted at once

    def loosen(self, budget, field, value):
        with self.lock:
            self.limits[budget][field] = value

    def check(self, req):
        held = set().union(*self.granted.values()) if self.granted else set()
        self.peak = max(self.peak, len(held))
        for b, lim in self.limits.items():
            over = None
            if lim["kind"] == "pool":
                n = sum(1 for x in held if feed.node_pool(feed.node_index(x)) == lim["pool"])
                if n > lim["max"]:
                    over = f"{n} of its nodes granted, limit {lim['max']}"
            elif lim["kind"] == "all":
                if len(held) > lim["max"]:
                    over = f"{len(held)} nodes granted, limit {lim['max']}"
            elif lim["kind"] == "zones":
                per = {}
                for x in held:
                    z = feed.node_zone(feed.node_index(x))
                    per[z] = per.get(z, 0) + 1
                if len(per) > lim["domains"]:
                    over = f"{len(per)} zones disrupted, limit maxDisruptedDomains {lim['domains']}"
                elif per and max(per.values()) > lim["per"]:
                    over = f"zones {per}, limit maxDisruptedNodesPerDomain {lim['per']}"
            else:
                n = len(held & self.app_nodes[b])
                if n > lim["max"]:
                    over = f"{n} of its watched nodes granted, limit {lim['max']}"
            if over and (req, b) not in self.seen:  # once, not again at each status update
                self.seen.add((req, b))
                holders = {r: sorted(ns) for r, ns in self.granted.items()}
                self.violations.append(f"{req} granted: budget {b}: {over}; Granted: {holders}")

    def run(self):
        rv = None
        while not self.stop.is_set():
            q = f"{bl.ND_PATH}?watch=1&allowWatchBookmarks=true" + (f"&resourceVersion={rv}" if rv else "")
            w = None
            try:
                w = self.api.watch(q, timeout=5)
                while not self.stop.is_set():
                    ev = w.next()
                    if ev is None:
                        break
                    now = time.monotonic()
                    obj = ev["object"]
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if ev["type"] == "ERROR":
                        rv = None  # 410: start over with synthetic ADDED events
                        with self.lock:
                            self.granted.clear()
                        break
                    if ev["type"] == "BOOKMARK":
                        continue
                    name = obj["metadata"]["name"]
                    st = obj.get("status") or {}
                    # A request being deleted has given its nodes back, though the object stays
                    # until the gate removes its finalizer.
                    deleting = ev["type"] == "DELETED" or bool(obj["metadata"].get("deletionTimestamp"))
                    with self.lock:
                        if st.get("state") and name not in self.first:
                            self.first[name] = (now, st["state"])
                        if deleting:
                            self.gone.add(name)
                        if st.get("state") == "Granted" and not deleting:
                            if name not in self.granted:
                                self.grants += 1
                            self.granted[name] = set(st.get("disruptedNodes", [])) - set(st.get("deletedNodes", []))
                            self.check(name)
                        else:
                            self.granted.pop(name, None)
            except OSError:
                time.sleep(0.1)  # a read timeout without events, or a broken stream: again from rv
            finally:
                if w is not None:
                    w.close()


class Run:
    def __init__(self, a, f, hooks, ca, rnd):
        self.a, self.f, self.hooks, self.rnd = a, f, hooks, rnd
        self.bundle = pem_b64(ca)
        self.created = {}      # request -> (monotonic before the POST, nodes)
        self.live = []         # requests created and not deleted by the run
        self.ops = 0
        self.stall = {"free_decided": 0, "held_granted": 0}

    # --- budgets --------------------------------------------------------------------------
    def budgets(self, app_nodes, hold_node):
        rnd, f = self.rnd, self.f
        limits = {}
        for k in range(feed.POOLS):
            name, pool, mx = f"pool-{k}", feed.node_pool(k), rnd.randint(2, 5)
            bl.create(f, bl.NDB_PATH, ndb(name, {"matchExpressions": [
                {"key": feed.POOL_LABEL, "operator": "In", "values": [pool]}]}, maxDisruptedNodes=mx))
            limits[name] = {"kind": "pool", "pool": pool, "max": mx}
        bl.create(f, bl.NDB_PATH, ndb("all", {}, maxDisruptedNodes=20))
        limits["all"] = {"kind": "all", "max": 20}
        bl.create(f, bl.NDB_PATH, ndb("zones", {}, topologyKey=ZONE_KEY, maxDisruptedDomains=2,
                                      maxDisruptedNodesPerDomain=5))
        limits["zones"] = {"kind": "zones", "domains": 2, "per": 5}
        apps = {}
        for k, nodes in enumerate(app_nodes):
            # The first hook is often slow; the others fail or time out at random.
            q = "slow=2&fail=0.05&hang=0.05" if k == 0 else "slow=0.2&fail=0.2&hang=0.1"
            bl.create(f, ADB_PATH, adb(f"app-{k}", f"app-{k}", self.hooks.url(f"/random?{q}"), self.bundle, 1))
            limits[f"app-{k}"] = {"kind": "app", "max": 1}
            apps[f"app-{k}"] = set(nodes)
        bl.create(f, ADB_PATH, adb("held", "held", self.hooks.url("/hold"), self.bundle, HOLD_S))
        limits["held"] = {"kind": "app", "max": 1}
        apps["held"] = {hold_node}
        return limits, apps

    def wait_budgets(self, apps):
        """Until nodegate's status of every budget shows the cache saw its pool or pods."""
        def seen():
            ndbs = self.f.api("GET", bl.NDB_PATH)[1]["items"]
            adbs = self.f.api("GET", ADB_PATH)[1]["items"]
            return (len(ndbs) == feed.POOLS + 2 and all((x.get("status") or {}).get("watchedNodes") for x in ndbs)
                    and len(adbs) == len(apps)
                    and all((x.get("status") or {}).get("watchedNodeCount") == len(apps[x["metadata"]["name"]])
                            for x in adbs))
        if not bl.wait_for(seen, WAIT_S, 0.2):
            raise SystemExit("nodegate never reported every budget's watched nodes")

    # --- requests -------------------------------------------------------------------------
    def nd(self, name, nodes, retry=True, deadline=None):
        spec = {"nodeNames": nodes, "retry": {"enabled": retry}}
        if deadline is not None:
            spec["activeDeadlineSeconds"] = deadline
        t0 = time.monotonic()
        code, body, _ = self.f.api("POST", bl.ND_PATH, {"apiVersion": "nodegate.io/v1alpha1",
                                                        "kind": "NodeDisruption",
                                                        "metadata": {"name": name}, "spec": spec})
        if code != 201:
            raise RuntimeError(f"POST {name}: {code} {body}")
        self.created[name] = (t0, set(nodes))
        self.live.append(name)

    def state(self, name):
        code, body, _ = self.f.api("GET", f"{bl.ND_PATH}/{name}")
        return ((body or {}).get("status") or {}).get("state") if code == 200 else None

    def delete(self, name):
        self.f.api("DELETE", f"{bl.ND_PATH}/{name}")
        if name in self.live:
            self.live.remove(name)

    def stall_check(self, checker, hold_node, hooked):
        """The held hook's request waits on it; requests no hook budget covers are Granted
        meanwhile. Returns violations."""
        bad = []
        self.hooks.release.clear()
        before = len(self.hooks.requests("/hold"))  # an earlier run's calls
        self.nd("held-0", [hold_node])
        if not bl.wait_for(lambda: self.hooks.requests("/hold")[before:], WAIT_S, 0.02):
            return [f"the held hook was never called ({self.state('held-0')})"]
        # Nodes of the held node's zone (the zones budget allows two zones), other pools.
        z, p = feed.node_zone(feed.node_index(hold_node)), feed.node_pool(feed.node_index(hold_node))
        free = []
        for i in range(1, self.a.nodes + 1):
            n = feed.node_name(i)
            if (feed.node_zone(i) == z and feed.node_pool(i) != p and n not in hooked
                    and feed.node_pool(i) not in {feed.node_pool(feed.node_index(x)) for x in free}):
                free.append(n)
                if len(free) == STALL_FREE:
                    break
        names = [f"free-{k}" for k in range(len(free))]
        for name, n in zip(names, free):
            self.nd(name, [n])

        def decided():
            with checker.lock:
                return all(checker.first.get(x, (0, None))[1] == "Granted" for x in names)
        # The held hook's call is bounded by its timeoutSeconds: waiting longer would no longer
        # show that the others were decided while it was out.
        ok = bl.wait_for(decided, HOLD_S - 5, 0.01)
        with checker.lock:
            held_first = checker.first.get("held-0")
            got = [x for x in names if checker.first.get(x, (0, None))[1] == "Granted"]
        calls = self.hooks.requests("/hold")[before:]
        still_out = held_first is None and all(c["outcome"] is None for c in calls)
        self.stall["free_decided"] = len(got) if still_out else 0
        if not ok:
            bad.append(f"stall: only {got} of {names} Granted while the held hook was out")
        if not still_out:
            bad.append(f"stall: the held hook's request was decided ({held_first}) or its hook ended "
                       f"before the others were Granted")
        self.hooks.release.set()
        if bl.wait_for(lambda: self.state("held-0") == "Granted", WAIT_S, 0.05):
            self.stall["held_granted"] = 1
        else:
            bad.append(f"stall: the held hook's request was not Granted once released ({self.state('held-0')})")
        for x in ["held-0"] + names:
            self.delete(x)
        if not bl.wait_for(lambda: not checker.granted, WAIT_S, 0.05):
            bad.append(f"stall: requests still Granted after their deletion: {sorted(checker.granted)}")
        return bad

    def random_ops(self, checker, app_nodes, hold_node):
        rnd, a = self.rnd, self.a
        hook_pool = [n for nodes in app_nodes for n in nodes]
        deadline = time.monotonic() + max(120, a.ops)  # bounded in count and in time
        for i in range(a.ops):
            if time.monotonic() > deadline:
                bl.log(f"  random run cut after {i} operations (time bound)")
                break
            self.ops += 1
            op = rnd.random()
            if op < 0.5 or not self.live:
                nodes = set()
                for _ in range(rnd.choice([1, 1, 2, 3])):
                    if rnd.random() < 0.3:
                        nodes.add(rnd.choice(hook_pool))
                    else:
                        n = feed.node_name(rnd.randint(1, a.nodes))
                        if n != hold_node:
                            nodes.add(n)
                if not nodes:
                    continue
                ends = rnd.choice([None, None, None, None, 1, 2, 3])
                self.nd(f"r-{i:05d}", sorted(nodes), retry=rnd.random() < 0.8, deadline=ends)
            elif op < 0.9:
                self.delete(self.live[rnd.randrange(len(self.live))])
            else:
                self.loosen(checker)
            time.sleep(rnd.random() * 0.02)

    def loosen(self, checker):
        """One budget a little looser: the checker first, so that it never counts too tightly."""
        rnd = self.rnd
        b = rnd.choice([f"pool-{k}" for k in range(feed.POOLS)] + ["all", "zones"])
        with checker.lock:
            lim = dict(checker.limits[b])
        if b != "zones":
            field, spec_field, value = "max", "maxDisruptedNodes", lim["max"] + 1
        elif lim["domains"] < len(feed.ZONES) and rnd.random() < 0.5:
            field, spec_field, value = "domains", "maxDisruptedDomains", lim["domains"] + 1
        else:
            field, spec_field, value = "per", "maxDisruptedNodesPerDomain", lim["per"] + 1
        checker.loosen(b, field, value)
        code, body, _ = self.f.upstream.api("PATCH", f"{bl.NDB_PATH}/{b}", {"spec": {spec_field: value}},
                                            ctype="application/merge-patch+json")
        if code != 200:
            raise RuntimeError(f"PATCH {b}: {code} {body}")


def ndb(name, selector, **limits):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": name},
            "spec": dict({"nodeSelector": selector}, **limits)}


def adb(name, app, url, bundle, timeout):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSelector": {"matchLabels": {"app": app}}, "maxDisruptions": 1,
                     "healthHook": {"url": url, "caBundle": bundle, "timeoutSeconds": timeout}}}


def layout(a, rnd):
    """(app nodes per hook budget, the held hook's node, extra pods for the feed)."""
    picked = rnd.sample(range(1, a.nodes + 1), APPS * APP_NODES + 1)
    names = [feed.node_name(i) for i in picked]
    app_nodes = [names[k * APP_NODES:(k + 1) * APP_NODES] for k in range(APPS)]
    hold = names[-1]
    pods = [{"namespace": "default", "name": f"app-{k}-{n}", "node": n, "labels": {"app": f"app-{k}"}}
            for k, nodes in enumerate(app_nodes) for n in nodes]
    pods.append({"namespace": "default", "name": f"held-{hold}", "node": hold, "labels": {"app": "held"}})
    return app_nodes, hold, pods


def leader(replicas):
    return next((r for r in replicas if r.proc.poll() is None and r.metrics().get("nodegate_leader") == 1), None)


def one_run(a, seed, tmp, hooks, ca):
    """One run with its own feed, replicas and seed: its figures, and its violations."""
    rnd = random.Random(seed)
    app_nodes, hold_node, pods = layout(a, rnd)
    hooked = {n for nodes in app_nodes for n in nodes} | {hold_node}
    hooks.release.clear()
    calls0 = len(hooks.requests())
    f = feed.Feed(a.nodes, a.pods_per_node, app_pods=pods, node_heartbeats=a.nodes / HEARTBEAT_S)
    replicas, checker, bad = [], None, []
    try:
        t0 = time.monotonic()
        f.start()
        bl.log(f"  feed and test API server up in {time.monotonic() - t0:.1f} s")
        bl.create(f, bl.NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                   "metadata": {"name": "default"},
                                   "spec": {"healthHooks": {"allowedCIDRs": ["127.0.0.0/8"]},
                                            "retry": {"initialIntervalSeconds": 1, "maxIntervalSeconds": 2}}})
        run = Run(a, f, hooks, ca, rnd)
        limits, apps = run.budgets(app_nodes, hold_node)
        for k in range(a.replicas):
            replicas.append(bl.Serve(a.nodegate, f, tmp, tag=f"s{seed}-r{k}"))
            bl.log(f"  replica {k}: /readyz after {replicas[-1].ready_s:.1f} s, "
                   f"RSS {replicas[-1].rss_kib() / 1024:.0f} MiB")
        if not bl.wait_for(lambda: leader(replicas), WAIT_S, 0.1):
            raise SystemExit("no replica took the lease")
        run.wait_budgets(apps)
        checker = Checker(f.upstream, limits, apps)
        checker.start()
        time.sleep(0.5)  # the checker's watch is open
        bad += run.stall_check(checker, hold_node, hooked)
        bl.log(f"  stall check: {run.stall['free_decided']} of {STALL_FREE} requests Granted while the "
               f"held hook was out; its own request Granted once released: {bool(run.stall['held_granted'])}")
        t_run = time.monotonic()
        run.random_ops(checker, app_nodes, hold_node)
        t_ops = time.monotonic() - t_run

        # Every request still there that no hook budget covers has been decided.
        def undecided():
            with checker.lock:
                return [x for x, (_, nodes) in run.created.items()
                        if not nodes & hooked and x not in checker.first and x not in checker.gone]
        if undecided():
            bl.wait_for(lambda: not undecided(), WAIT_S, 0.1)
        left = undecided()
        if left:
            bad.append(f"never decided: {left[:10]} ({len(left)} requests no hook budget covers)")
        time.sleep(2)  # the last grants reach the checker
        m = (leader(replicas) or replicas[0]).metrics()
    finally:
        if checker is not None:
            checker.stop.set()
        for r in replicas:
            r.stop()
        f.stop()
    with checker.lock:
        lat = sorted((checker.first[x][0] - t) * 1000 for x, (t, nodes) in run.created.items()
                     if not nodes & hooked and x in checker.first)
        res = {"ops": run.ops, "requests": len(run.created), "grants": checker.grants, "peak": checker.peak,
               "hooked": sum(1 for _, nodes in run.created.values() if nodes & hooked),
               "calls": len(hooks.requests()) - calls0, "over": len(checker.violations),
               "free": run.stall["free_decided"], "decided": len(lat),
               # deleted (by the run, or ended) before any decision: not in the figures above
               "undecided_gone": sum(1 for x, (_, nodes) in run.created.items()
                                     if not nodes & hooked and x not in checker.first and x in checker.gone),
               "p50": bl.quantile(lat, 0.5), "p99": bl.quantile(lat, 0.99)}
        bad = checker.violations + bad
    n = m.get(DECISION + "_count") or 0
    p99 = bl.histogram_quantile(bl.histogram(m, DECISION), 0.99)
    res["dec_mean"] = m.get(DECISION + "_sum", 0) / n * 1e3 if n else None
    res["dec_p99"] = p99 * 1e3 if p99 is not None else None
    res["decisions"] = n
    bl.log(f"  {res['ops']} operations in {t_ops:.1f} s: {res['requests']} requests ({res['hooked']} on hook "
           f"budgets), {res['grants']} grants, at most {res['peak']} nodes granted at once, {res['calls']} hook "
           f"calls, {res['over']} over-grants; first decision of the {len(lat)} others: p50 "
           f"{res['p50'] or 0:.1f} ms, p99 {res['p99'] or 0:.1f} ms; {n:.0f} decisions by the leader, mean "
           f"{res['dec_mean'] or 0:.2f} ms, p99 {res['dec_p99'] or 0:.2f} ms")
    return res, bad


def main():
    a = parse_args()
    cmd = bl.command("safety_scale.py", a, a.extra)
    what = f"{a.nodes:,} nodes × {a.pods_per_node} pods"
    tmp = tempfile.mkdtemp(prefix="ng-bench-b11-")
    results, bad = [], []
    hooks = None
    try:
        ca, ca_key = make_ca(tmp, "hook-ca")
        cert, key = make_server_cert(tmp, ca, ca_key)
        test_hooks.HOLD_TIMEOUT = HOLD_S + 30  # /hold never blocks a hook server thread longer
        hooks = HookServer(cert, key).start()
        for r in range(a.runs):
            bl.log(f"B11: {what}, {a.ops} operations, seed {a.seed + r}, {a.replicas} replica(s)")
            res, v = one_run(a, a.seed + r, tmp, hooks, ca)
            results.append(res)
            bad += v
    finally:
        if hooks is not None:
            hooks.stop()
        if os.environ.get("NG_BENCH_KEEP"):
            bl.log(f"  kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for v in bad[:40]:
        bl.log("  VIOLATION " + v)
    col = lambda k: [x[k] for x in results]  # noqa: E731
    rows = [
        bl.row("B11", f"random operations per run ({what})", col("ops"), "count", cmd),
        bl.row("B11", "requests created", col("requests"), "count", cmd),
        bl.row("B11", "requests on nodes of hook budgets", col("hooked"), "count", cmd),
        bl.row("B11", "grants observed by the checker", col("grants"), "count", cmd),
        bl.row("B11", "most nodes granted at once", col("peak"), "count", cmd),
        bl.row("B11", "over-grants: a budget past its limit at a grant", col("over"), "count", cmd,
               target="0", met=lambda v, _: v["max"] == 0),
        bl.row("B11", "health hook calls (slow, failing or timing out at random)", col("calls"), "count", cmd),
        bl.row("B11", "requests without hooks Granted while a held hook was out", col("free"), "count", cmd,
               target=f"all {STALL_FREE}", met=lambda v, _: v["min"] == STALL_FREE),
        bl.row("B11", "requests without hooks decided (the figures below)", col("decided"), "count", cmd),
        bl.row("B11", "requests without hooks deleted before their first decision (not in them)",
               col("undecided_gone"), "count", cmd),
        bl.row("B11", "create → first decision (Granted, Rejected or Pending), requests without hooks, p50",
               col("p50"), "ms", cmd),
        bl.row("B11", "create → first decision, requests without hooks, p99", col("p99"), "ms", cmd),
        bl.row("B11", "the leader's decisions (nodegate_decision_duration_seconds)", col("decisions"), "count", cmd),
        bl.row("B11", "decision time, mean (one evaluation, no I/O)", col("dec_mean"), "ms", cmd),
        bl.row("B11", "decision time, p99 from the histogram", col("dec_p99"), "ms", cmd),
    ]
    bl.finish("B11", rows)
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
