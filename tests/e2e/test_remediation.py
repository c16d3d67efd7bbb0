#!/usr/bin/env python3
"""e2e: remediation (NodeDisruptionTemplate + NodeRemediation, the controller inside `nodegate
serve` that creates NodeDisruptions for sick nodes) against the test API server, with real
`nodegate serve` (gate, remediation, eviction webhook) and `nodegate drain` processes: R201-R208
and a rolling repair of 6 of 10 nodes under an NDB of 2 (R210).

Each test starts the test API server with a generated cluster (6 Ready nodes node-00001..6, two
ReplicaSet pods each; 10 nodes for R210), the RBAC and every CRD of manifests/crds, a
NodeGateConfig `default` with a short drain backoff and gate retry, `nodegate serve` (as
nodegate's service account, registered as the eviction webhook) and `nodegate drain`, as
tests/e2e/test_drain.py does. A node is made sick by patching its status subresource with the
condition `example.com/KernelDeadlock` True (lastTransitionTime now; the test API server's
kubelet stand-in never rewrites node conditions) and healed by setting it False. The tests
play the Job controller for the operation Jobs (test_drain.py's helpers: v1.32's status
sequence) and the node's reboot (a new status.nodeInfo.bootID).

They assert only what a user sees through the API server: the NodeRemediation's status
(matchedNodes, unhealthyNodes, activeRequests, storm, lastRemediated, waitingNodes,
conditions) and finalizer, the NodeDisruptions it creates (name, labels, annotations, owner
reference, spec, state, Ready condition) as a watch records them, Jobs, nodes' cordons, Events.
Every wait is bounded (WAIT_S, six times longer under NG_WRAPPER); measured delays are printed,
never asserted.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository), NG_WRAPPER (a command
prefix for both nodegate processes), NG_SHOW_LOG=1 (print the logs even when a test passes)."""
import calendar
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import (CRDS, ND_PATH, ROOT, WAIT_S, WRAPPER, Nodegate,  # noqa: E402
                             ServerProcess, eventually, has_failed, make_client_ca)
import test_drain  # noqa: E402  (its DrainScenarios is not imported by name: unittest would run it here)
from test_drain import (ANNOTATION, BACKOFF, JOBS_PATH, NDB_PATH, NGC_PATH, SA_USER,  # noqa: E402
                        DrainTest, Drainer, Watch, log)

GROUP = "/apis/nodegate.io/v1alpha1"
NREM_PATH = GROUP + "/noderemediations"
NDT_PATH = GROUP + "/nodedisruptiontemplates"
WEBHOOKS_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
REM_LABEL = "nodegate.io/remediation"
REM_NODE_ANNOTATION = "nodegate.io/remediation-node"
REM_FINALIZER = "nodegate.io/remediation"
DRAIN_FINALIZER = "nodegate.io/drain"
SICK = "example.com/KernelDeadlock"
POOL = {"matchLabels": {"kubernetes.io/os": "linux"}}
REM_CRDS = ("nodedisruptiontemplates.json", "noderemediations.json")
STRATEGIC = "application/strategic-merge-patch+json"
# R201's forSeconds: 4 as the scenario says; longer under a wrapper (valgrind), whose nodegate
# must get to write waitingNodes before the condition comes due.
FOR_S = 4 if not WRAPPER else 20


def now_ts():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def parse_ts(s):
    """Seconds since the epoch of an RFC 3339 UTC time (fractions ignored); None if it is not one."""
    try:
        return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) if s and s.endswith("Z") else None
    except (TypeError, ValueError):
        return None


def labels_of(o):
    return (o.get("metadata") or {}).get("labels") or {}


def ready_reason(nd):
    for c in ((nd or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("reason")
    return None


def job_done(job):
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class RemediationTest(DrainTest):
    """A generated cluster of 6 nodes, NodeGateConfig `default`, `nodegate serve` (its gate and
    remediation; a fixed --identity so a restarted process takes its Lease back at once) and
    `nodegate drain`; a watch of every NodeDisruption from the start (self.nds)."""

    GENERATE = "nodes=6,pods-per-node=2,namespaces=2"
    FIXTURES = ()
    NGC_SPEC = {"retry": {"initialIntervalSeconds": 1, "maxIntervalSeconds": 2}}
    NODES = [f"node-{i:05d}" for i in range(1, 7)]
    SERVE_ARGS = ("--identity", "serve-e2e")

    # The Job controller as test_drain.py plays it (v1.32's status sequence), and its Job template.
    _scenarios = test_drain.DrainScenarios
    JOB_TEMPLATE = _scenarios.JOB_TEMPLATE
    JOB_MESSAGES = _scenarios.JOB_MESSAGES
    JOB_POLL_S = _scenarios.JOB_POLL_S
    job_status = _scenarios.job_status
    job_condition = _scenarios.__dict__["job_condition"]  # the staticmethod itself
    start_job = _scenarios.start_job
    finish_job = _scenarios.finish_job
    del _scenarios

    def setUp(self):
        missing = [f for f in REM_CRDS if not os.path.exists(os.path.join(ROOT, "manifests", "crds", f))]
        if missing:
            self.fail(f"manifests/crds/{', '.join(missing)} missing: the remediation CRDs must exist for these tests")
        self.tmp = tempfile.mkdtemp(prefix="ng-rem-e2e-")
        self.ng = self.drainer = self.watch = self.nds = None
        self.old_serve_logs = []
        self.serve_runs = 1
        self.t_start = time.monotonic()
        self.client_ca, crt, key = make_client_ca(self.tmp)
        self.api = ServerProcess(fixtures=CRDS + list(self.FIXTURES), generate=self.GENERATE,
                                 kubelet="immediate", start_timeout=300,
                                 extra_args=["--webhook-client-cert", f"{crt}:{key}"])
        self.api.start()
        try:
            self.preflight()
            spec = json.loads(json.dumps(self.NGC_SPEC))
            spec.setdefault("drain", {})["backoff"] = dict(BACKOFF)
            self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                   "metadata": {"name": "default"}, "spec": spec})
            self.ng = Nodegate(self.api, self.tmp, client_ca=self.client_ca, extra_args=self.SERVE_ARGS)
            self.ng.register_webhook()
            self.ng.register_author_webhook()
            self.drainer = Drainer(self.api, self.tmp)
            self.nds = Watch(self.api, ND_PATH)
        except BaseException:
            self.abandon_setup()
            raise
        log(f"setup {time.monotonic() - self.t_start:.1f} s")

    def tearDown(self):
        if self.nds is not None:
            self.nds.stop()
        rc_drain = self.drainer.stop() if self.drainer is not None else 0
        rc_ng = self.ng.stop()
        logs = []
        if has_failed(self) or rc_drain != 0 or rc_ng != 0 or os.environ.get("NG_SHOW_LOG"):
            logs = [(f"nodegate serve (run {i}, killed)", text) for i, text in enumerate(self.old_serve_logs, 1)]
            logs += [("nodegate serve", self.ng.read_log()), ("nodegate drain", self.drainer.read_log())]
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        for name, text in logs:
            print(f"\n--- {name} log (tail) ---\n{text}", file=sys.stderr)
        self.assertEqual(rc_drain, 0, "nodegate drain did not exit 0 on SIGTERM")
        self.assertEqual(rc_ng, 0, "nodegate serve did not exit 0 on SIGTERM")

    def preflight(self):
        """The remediation kinds are served and nodegate's service account may list them (else
        serve's and drain's caches never sync): a clear failure instead of a timeout later."""
        problems = []
        for path in (NREM_PATH, NDT_PATH):
            code, body, _ = self.api.api("GET", path)
            if code != 200:
                problems.append(f"GET {path} as admin: {code} (CRD not loaded?) {body}")
                continue
            code, body, _ = self.api.api("GET", path, user=SA_USER)
            if code != 200:
                problems.append(f"GET {path} as {SA_USER}: {code}: manifests/rbac/rbac.json must grant "
                                f"list/watch: {(body or {}).get('message') if isinstance(body, dict) else body}")
        if problems:
            self.fail("remediation preflight:\n  " + "\n  ".join(problems))
        # What the controller writes (spec: delete of requests, status and finalizer patches):
        # a dry run on a name that does not exist answers 404 once authorized, 403 if not.
        for method, path in (("DELETE", f"{ND_PATH}/preflight-none"),
                             ("PATCH", f"{NREM_PATH}/preflight-none/status"),
                             ("PATCH", f"{NREM_PATH}/preflight-none")):
            code, body, _ = self.api.api(method, path + "?dryRun=All", {} if method == "PATCH" else None,
                                         ctype="application/merge-patch+json", user=SA_USER)
            if code == 403:
                log(f"WARNING: {SA_USER} may not {method} {path}: {(body or {}).get('message')}")

    # -- objects -----------------------------------------------------------------------------------
    def template(self, name="repair", **spec):
        """Creates a NodeDisruptionTemplate (defaults: requestor node-doctor, retry enabled, a
        forced drain, the operation Job of test_drain.py); a None value leaves a field out.
        Returns it as stored (schema defaults applied)."""
        full = {"type": "remediation", "requestor": "node-doctor", "retry": {"enabled": True},
                "drain": {"force": True}, "operation": {"jobTemplate": self.JOB_TEMPLATE}}
        full.update(spec)
        full = {k: v for k, v in full.items() if v is not None}
        return self.create(NDT_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate",
                                      "metadata": {"name": name}, "spec": full})

    def remediation(self, name, template="repair", for_seconds=0, **spec):
        """Creates a NodeRemediation over the whole pool on example.com/KernelDeadlock=True."""
        full = {"nodeSelector": POOL, "templateName": template,
                "rule": {"conditions": [{"type": SICK, "status": "True", "forSeconds": for_seconds}]}}
        full.update(spec)
        return self.create(NREM_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation",
                                       "metadata": {"name": name}, "spec": full})

    def get_rem(self, name):
        code, body, _ = self.api.api("GET", f"{NREM_PATH}/{name}")
        return body if code == 200 else None

    def rem_status(self, name):
        return (self.get_rem(name) or {}).get("status") or {}

    def rem_condition(self, name, typ):
        return self.condition(self.get_rem(name), typ)

    def rem_nds(self, rem):
        """The NodeDisruptions labelled nodegate.io/remediation=@rem, as listed now."""
        code, body, _ = self.api.api("GET", f"{ND_PATH}?labelSelector={REM_LABEL.replace('/', '%2F')}%3D{rem}")
        self.assertEqual(code, 200, body)
        return body["items"]

    def alive(self, name):
        """The request exists and its deletion has not started."""
        nd = self.get_nd(name)
        return nd is not None and not nd["metadata"].get("deletionTimestamp")

    @staticmethod
    def nd_name(rem, node):
        return f"{rem}-{node}"

    def last_remediated(self, rem):
        return self.rem_status(rem).get("lastRemediated") or []

    def waiting(self, rem):
        """status.waitingNodes as {node: reason}."""
        return {w.get("node"): w.get("reason") for w in self.rem_status(rem).get("waitingNodes") or []}

    def describe_rem(self, rem):
        """What a failure message shows: the NodeRemediation, its requests, the sick nodes."""
        r = self.get_rem(rem) or {}
        nds = [{"name": nd["metadata"]["name"], "nodes": nd["spec"].get("nodeNames"),
                "state": (nd.get("status") or {}).get("state"), "ready": ready_reason(nd),
                "deleting": bool(nd["metadata"].get("deletionTimestamp"))} for nd in self.rem_nds(rem)]
        code, nodes, _ = self.api.api("GET", "/api/v1/nodes")
        sick = [n["metadata"]["name"] for n in (nodes or {}).get("items", []) if self.node_sick(n)]
        cordoned = [n["metadata"]["name"] for n in (nodes or {}).get("items", []) if n["spec"].get("unschedulable")]
        return ("\nNodeRemediation " + rem + ": " + json.dumps({"metadata": {k: (r.get("metadata") or {}).get(k)
                for k in ("finalizers", "deletionTimestamp", "generation")}, "status": r.get("status")}, sort_keys=True)
                + "\nits NodeDisruptions: " + json.dumps(nds)
                + f"\nsick nodes: {sick}; cordoned nodes: {cordoned}")

    def describe(self, name):
        """(Overrides test_drain's, which reads node1.) The request and its nodes."""
        nd = self.get_nd(name)
        out = "\nND " + name + ": " + json.dumps({"metadata": (nd or {}).get("metadata", {}),
                                                   "status": (nd or {}).get("status")}, sort_keys=True)
        for node in ((nd or {}).get("spec") or {}).get("nodeNames") or []:
            out += f"\n{node}: " + json.dumps(self.node_view(node), sort_keys=True)
        rem = labels_of(nd or {}).get(REM_LABEL)
        return out + (self.describe_rem(rem) if rem else "")

    def wait_rem(self, rem, pred, what, timeout=None):
        """Waits until pred(the NodeRemediation) is truthy; returns its value."""
        t0 = time.monotonic()
        v, _ = eventually(lambda: pred(self.get_rem(rem) or {}), timeout or WAIT_S, 0.05)
        self.assertTrue(v, f"{rem}: never {what} in {time.monotonic() - t0:.1f} s:" + self.describe_rem(rem))
        return v

    def wait_rem_condition(self, rem, typ, status, reason=None, timeout=None):
        def at(r):
            c = self.condition(r, typ)
            return c if c and c.get("status") == status and (reason is None or c.get("reason") == reason) else None
        return self.wait_rem(rem, at, f"condition {typ}={status}" + (f" reason {reason}" if reason else ""), timeout)

    # -- the node's health ---------------------------------------------------------------------------
    def set_condition(self, node, status):
        """Writes the node's example.com/KernelDeadlock condition (a strategic merge patch of the
        status subresource: merged by type, the kubelet's Ready condition stays), lastTransitionTime
        now, as node-problem-detector does."""
        ts = now_ts()
        self.patch(f"/api/v1/nodes/{node}/status", {"status": {"conditions": [{
            "type": SICK, "status": status,
            "reason": "KernelHasDeadlock" if status == "True" else "KernelHasNoDeadlock",
            "message": "task blocked for more than 120 seconds" if status == "True" else "kernel is fine",
            "lastHeartbeatTime": ts, "lastTransitionTime": ts}]}}, ctype=STRATEGIC)
        return ts

    def sick(self, *nodes):
        """Makes @nodes sick; returns the lastTransitionTime written (the same second for all, or
        the first one's)."""
        first = None
        for n in nodes:
            ts = self.set_condition(n, "True")
            first = first or ts
        return first

    def heal(self, *nodes):
        for n in nodes:
            self.set_condition(n, "False")

    @staticmethod
    def node_sick(node):
        return any(c.get("type") == SICK and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    def is_sick(self, name):
        return self.node_sick(self.node(name))

    def reboot(self, node):
        """The node comes back with a new boot ID (Ready stays True)."""
        self.patch(f"/api/v1/nodes/{node}/status", {"status": {"nodeInfo": {"bootID": str(uuid.uuid4())}}},
                   ctype=STRATEGIC)

    @staticmethod
    def held(node):
        """Cordoned by nodegate: unschedulable with the drainer's annotation."""
        return bool(node["spec"].get("unschedulable")) and ANNOTATION in (node["metadata"].get("annotations") or {})

    def assert_given_back(self, *nodes):
        def back():
            return all(not self.node(n)["spec"].get("unschedulable") and self.annotation(n) is None for n in nodes)
        ok, _ = eventually(back, WAIT_S, 0.05)
        self.assertTrue(ok, "not given back: " + json.dumps({n: self.node_view(n) for n in nodes}))

    # -- requests, as the watch saw them -------------------------------------------------------------
    def events_of(self, rem=None, name=None):
        """The NodeDisruption watch's events (t, type, object) of @rem's requests or of @name."""
        out = []
        for t, typ, o in self.nds.snapshot():
            if rem is not None and labels_of(o).get(REM_LABEL) != rem:
                continue
            if name is not None and o["metadata"]["name"] != name:
                continue
            out.append((t, typ, o))
        return out

    def added(self, rem=None, name=None):
        """The names of ADDED events (a name twice if created twice), in order."""
        return [o["metadata"]["name"] for _, typ, o in self.events_of(rem, name) if typ == "ADDED"]

    def open_over_time(self, rem):
        """Replays @rem's request events: (max open at once, max existing at once, when). Open: it
        exists and its deletion has not started (nodegate let go of it); existing: not yet gone."""
        open_, exist = {}, {}
        max_open = max_exist = 0
        at = []
        for t, typ, o in self.events_of(rem):
            name = o["metadata"]["name"]
            exist[name] = typ != "DELETED"
            open_[name] = typ != "DELETED" and not o["metadata"].get("deletionTimestamp")
            n = sum(open_.values())
            if n > max_open:
                max_open, at = n, sorted(k for k, v in open_.items() if v)
            max_exist = max(max_exist, sum(exist.values()))
        return max_open, max_exist, at

    def wait_request(self, rem, node, timeout=None):
        """Waits for the request @rem-@node to exist; returns it."""
        name = self.nd_name(rem, node)
        nd, _ = eventually(lambda: self.get_nd(name), timeout or WAIT_S, 0.05)
        self.assertTrue(nd, f"no NodeDisruption {name} for sick {node}:" + self.describe_rem(rem))
        return nd

    def assert_request(self, nd, rem_obj, node, tpl, requestor):
        """What a request of @rem_obj for @node must carry (the spec's 'The requests it creates')."""
        rem = rem_obj["metadata"]["name"]
        md = nd["metadata"]
        self.assertEqual(md["name"], self.nd_name(rem, node))
        self.assertEqual(labels_of(nd).get(REM_LABEL), rem, md)
        self.assertEqual((md.get("annotations") or {}).get(REM_NODE_ANNOTATION), node, md)
        refs = md.get("ownerReferences") or []
        self.assertEqual(len(refs), 1, refs)
        ref = refs[0]
        self.assertEqual((ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid")),
                         ("nodegate.io/v1alpha1", "NodeRemediation", rem, rem_obj["metadata"]["uid"]), ref)
        self.assertIs(ref.get("controller"), True, ref)
        self.assertIs(ref.get("blockOwnerDeletion", False), False, ref)
        spec = nd["spec"]
        self.assertEqual(spec.get("nodeNames"), [node], spec)
        for k, v in tpl["spec"].items():
            if k != "requestor":
                self.assertEqual(spec.get(k), v, f"spec.{k} must be the template's")
        self.assertEqual(spec.get("requestor"), requestor, spec)
        extra = set(spec) - set(tpl["spec"]) - {"nodeNames", "requestor", "priority"}
        self.assertEqual(extra, set(), f"the request's spec holds fields the template does not: {spec}")

    # -- the Job controller and the node's recovery, played by the test -----------------------------
    def jobs_of(self, name):
        code, body, _ = self.api.api("GET", f"{JOBS_PATH}?labelSelector=nodegate.io%2Frequest%3D{name}")
        return body.get("items", []) if code == 200 else []

    def operation_job_of(self, name, node):
        """The one operation Job of request @name, on @node (waits for it)."""
        items, _ = eventually(lambda: self.jobs_of(name), WAIT_S, 0.05)
        self.assertTrue(items, f"no Job labelled nodegate.io/request={name}:" + self.describe(name))
        self.assertEqual(len(items), 1, [j["metadata"]["name"] for j in items])
        job = items[0]
        self.assertEqual(job["metadata"]["labels"].get("nodegate.io/node"), node, job["metadata"])
        self.assertEqual(job["spec"]["template"]["spec"]["containers"][0]["name"], "maintenance",
                         "the Job comes from the template's operation.jobTemplate")
        return job

    def repair_pass(self, rem):
        """One look at @rem's open requests: a Job that has not finished is completed; a node
        whose request is Completed gets healthy. Returns [(what, node)] done."""
        done = []
        for nd in self.rem_nds(rem):
            if nd["metadata"].get("deletionTimestamp"):
                continue
            name, node = nd["metadata"]["name"], (nd["spec"].get("nodeNames") or [""])[0]
            reason = ready_reason(nd)
            if reason == "Operating":
                for job in self.jobs_of(name):
                    if not job_done(job):
                        self.finish_job(job, "Complete", "CompletionsReached")
                        done.append(("job", node))
            elif reason == "Completed" and self.is_sick(node):
                self.heal(node)
                done.append(("healed", node))
        return done

    def run_repairs(self, rem, nodes, timeout=None, sample=None):
        """Repairs until every one of @nodes is in lastRemediated and none of them has a request
        left. @sample() is called on every pass. Returns {node: {what: monotonic time}}."""
        nodes = set(nodes)
        timeout = timeout or max(120, 12 * WAIT_S)
        timeline = {}
        deadline = time.monotonic() + timeout
        done = set()
        while time.monotonic() < deadline:
            for what, node in self.repair_pass(rem):
                timeline.setdefault(node, {})[what] = time.monotonic()
            if sample:
                sample()
            done = {e.get("node") for e in self.last_remediated(rem)}
            left = {(nd["spec"].get("nodeNames") or [""])[0] for nd in self.rem_nds(rem)}
            if nodes <= done and not nodes & left:
                return timeline
            time.sleep(0.1)
        self.fail(f"{rem}: not every node was repaired in {timeout} s: lastRemediated {sorted(done)}, "
                  f"wanted {sorted(nodes)}" + self.describe_rem(rem))

    # -- serve, killed and started again -------------------------------------------------------------
    def kill_serve(self):
        """kill -9 of nodegate serve (its log kept for a failure's output). Returns the time."""
        t0 = time.monotonic()
        self.ng.proc.kill()
        self.ng.proc.wait(10)
        self.ng.log.close()
        self.old_serve_logs.append(self.ng.read_log())
        return t0

    def start_serve(self):
        """A new nodegate serve (the same identity: it takes the Lease back at once), registered
        again as the eviction webhook (its port changed)."""
        self.serve_runs += 1
        d = os.path.join(self.tmp, f"serve{self.serve_runs}")
        os.makedirs(d, exist_ok=True)
        self.ng = Nodegate(self.api, d, client_ca=self.client_ca, extra_args=self.SERVE_ARGS)
        code, body, _ = self.api.api("DELETE", f"{WEBHOOKS_PATH}/nodegate")
        self.assertIn(code, (200, 404), body)
        self.ng.register_webhook()
        for kind in ("validating", "mutating"):
            code, body, _ = self.api.api(
                "DELETE", f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/nodegate-author")
            self.assertIn(code, (200, 404), body)
        self.ng.register_author_webhook()


class RemediationScenarios(RemediationTest):
    # -- R201 ----------------------------------------------------------------------------------------
    def test_R201_condition_held_for_for_seconds_starts_one_request_repaired_then_deleted(self):
        tpl = self.template("repair", operation={"jobTemplate": self.JOB_TEMPLATE, "waitForReboot": True})
        rem_obj = self.remediation("r201", for_seconds=FOR_S)
        rem_watch = Watch(self.api, NREM_PATH)
        self.addCleanup(rem_watch.stop)
        c = self.wait_rem_condition("r201", "Ready", "True")
        log(f"r201: Ready {c.get('reason')}: {c.get('message')!r}")
        self.assertEqual(c.get("reason"), "Watching", c)
        self.wait_rem("r201", lambda r: (r.get("status") or {}).get("matchedNodes") == 6, "matchedNodes 6")
        node = self.NODES[0]
        name = self.nd_name("r201", node)
        ltt = self.sick(node)
        t_sick = time.monotonic()
        # Held for less than forSeconds: waiting, with a reason; nothing started.
        reason = self.wait_rem("r201", lambda r: {w.get("node"): w.get("reason")
                                                  for w in (r.get("status") or {}).get("waitingNodes") or []}.get(node),
                               f"waitingNodes naming {node}", timeout=FOR_S - 0.5)
        log(f"r201: {node} waiting after {time.monotonic() - t_sick:.2f} s: {reason!r}")
        self.assertEqual(self.rem_status("r201").get("unhealthyNodes"), 1, self.describe_rem("r201"))
        quiet_until = t_sick + FOR_S / 2
        self.assertTrue(self.stays(lambda: not self.rem_nds("r201"), max(0.1, quiet_until - time.monotonic())),
                        f"a request before the condition held {FOR_S} s:" + self.describe_rem("r201"))
        # Held long enough: exactly one request, for that node.
        nd = self.wait_request("r201", node, timeout=FOR_S + WAIT_S)
        log(f"r201: request created {time.monotonic() - t_sick:.2f} s after the condition was set "
            f"(forSeconds {FOR_S})")
        self.assertGreaterEqual(parse_ts(nd["metadata"]["creationTimestamp"]), parse_ts(ltt) + FOR_S,
                                "created before lastTransitionTime + forSeconds")
        self.assert_request(nd, rem_obj, node, tpl, requestor="node-doctor")
        uid = nd["metadata"]["uid"]
        self.assertEqual([n["metadata"]["name"] for n in self.rem_nds("r201")], [name])
        st = self.wait_rem("r201", lambda r: (r.get("status") or {}).get("activeCount") == 1 and r["status"],
                           "activeCount 1")
        active = st.get("activeRequests") or []
        self.assertEqual([(a.get("node"), a.get("name")) for a in active], [(node, name)], st)
        self.assertIsNotNone(parse_ts(active[0].get("since")), active[0])
        self.assertIn(REM_FINALIZER, self.get_rem("r201")["metadata"].get("finalizers") or [],
                      "the NodeRemediation holds its finalizer while it has requests")
        # The gate grants it, the drainer drains and operates.
        self.wait_granted(name)
        self.wait_reason(name, "Operating", timeout=2 * WAIT_S, status="True")
        self.assertEqual(self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")[1]["items"], [],
                         f"{node} must be drained before the operation")
        st = self.wait_rem("r201", lambda r: [a for a in (r.get("status") or {}).get("activeRequests") or []
                                              if a.get("state") == "Granted" and a.get("phase")],
                           "activeRequests showing the grant and the drainer's phase")
        log(f"r201: activeRequests {json.dumps(st)}")
        job = self.operation_job_of(name, node)
        self.finish_job(job, "Complete", "CompletionsReached")
        self.wait_reason(name, "Rebooting", status="True")
        t0 = time.monotonic()
        self.reboot(node)
        self.wait_reason(name, "Completed", status="True")
        log(f"r201: new bootID -> Completed in {time.monotonic() - t0:.2f} s")
        # Completed but the node still sick: the request stays.
        self.assertTrue(self.stays(lambda: self.alive(name), 1.5),
                        "a Completed request is kept while the node's conditions still hold:" + self.describe(name))
        # Healthy again: lastRemediated names it, then the request goes and the node is given back.
        t0 = time.monotonic()
        self.heal(node)
        ok, _ = eventually(lambda: self.gone(name), 2 * WAIT_S, 0.05)
        self.assertTrue(ok, "the request was not deleted once the node was healthy:" + self.describe(name))
        log(f"r201: condition cleared -> request gone in {time.monotonic() - t0:.2f} s")
        last = self.last_remediated("r201")
        self.assertEqual([(e.get("node"), e.get("request"), e.get("uid")) for e in last], [(node, name, uid)], last)
        self.assertIsNotNone(parse_ts(last[0].get("time")), last[0])
        self.assert_given_back(node)
        st = self.wait_rem("r201", lambda r: (r.get("status") or {}).get("activeCount") == 0 and r["status"],
                           "activeCount 0")
        self.assertEqual(st.get("activeRequests") or [], [], st)
        self.assertEqual(st.get("unhealthyNodes"), 0, st)
        self.assertEqual(self.added("r201"), [name], "exactly one request was created")
        # lastRemediated was written before the deletion started (the API server's order).
        time.sleep(0.3)
        rem_rvs = [int(o["metadata"]["resourceVersion"]) for _, _, o in rem_watch.snapshot()
                   if any(e.get("node") == node for e in (o.get("status") or {}).get("lastRemediated") or [])]
        del_rvs = [int(o["metadata"]["resourceVersion"]) for _, typ, o in self.events_of(name=name)
                   if typ == "DELETED" or o["metadata"].get("deletionTimestamp")]
        self.assertTrue(rem_rvs and del_rvs, (rem_rvs, del_rvs))
        self.assertLess(min(rem_rvs), min(del_rvs), "lastRemediated must be in status before the request is deleted")
        log(f"r201: events on r201: {[(e.get('reason'), e.get('message')) for e in self.events('r201', 'NodeRemediation')]}")

    # -- R210 ----------------------------------------------------------------------------------------
    def test_R210_a_remediation_acts_with_its_authors_rights_not_nodegates(self):
        # tina may write templates and remediations, but RBAC refuses her NodeDisruptions.
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        self.create(f"{rbac}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "repairs"},
            "rules": [{"apiGroups": ["nodegate.io"], "resources": ["nodedisruptiontemplates", "noderemediations"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]})

        def bind(role):
            self.create(f"{rbac}/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": f"tina-{role}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tina"}]})
        bind("repairs")
        as_tina = {"Impersonate-User": "tina", "Impersonate-Group": "system:authenticated"}
        code, body, _ = self.api.api("POST", ND_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "tina-direct"},
            "spec": {"nodeNames": [self.NODES[0]]}}, headers=as_tina)
        self.assertEqual(code, 403, body)
        for path, obj in ((NDT_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate",
                                      "metadata": {"name": "tina-tpl"},
                                      "spec": {"type": "remediation", "drain": {"force": True}}}),
                          (NREM_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation",
                                       "metadata": {"name": "r210"},
                                       "spec": {"nodeSelector": POOL, "templateName": "tina-tpl",
                                                "rule": {"conditions": [{"type": SICK, "status": "True"}]}}})):
            code, body, _ = self.api.api("POST", path, obj, headers=as_tina)
            self.assertEqual(code, 201, body)
            self.assertEqual(body["metadata"]["annotations"]["nodegate.io/created-by"], "tina", body["metadata"])
        node = self.NODES[0]
        self.sick(node)
        c = self.wait_rem_condition("r210", "Ready", "False", "Unauthorized")
        log(f"r210: Ready False: {c.get('message')!r}")
        self.assertIn("its author tina may not create nodedisruptions", c.get("message", ""))
        self.assertTrue(self.stays(lambda: not self.rem_nds("r210"), 1.0),
                        "nodegate created a request for an author RBAC refuses:" + self.describe_rem("r210"))
        self.assertIn("Unauthorized", [e.get("reason") for e in self.events("r210", "NodeRemediation")])
        # Given the requestor's role, her remediation repairs: within the 10 s re-check.
        t0 = time.monotonic()
        bind("nodegate-requestor")
        nd = self.wait_request("r210", node, timeout=2 * WAIT_S)
        log(f"r210: request {nd['metadata']['name']} created {time.monotonic() - t0:.2f} s after the binding")
        self.wait_rem_condition("r210", "Ready", "True", "Watching")

    # -- R202 ----------------------------------------------------------------------------------------
    def test_R202_max_concurrent_one_repairs_three_nodes_one_after_another(self):
        tpl = self.template("repair", requestor=None)
        rem_obj = self.remediation("r202", maxConcurrent=1)
        nodes = self.NODES[:3]
        t0 = time.monotonic()
        self.sick(*nodes)
        first, _ = eventually(lambda: self.rem_nds("r202"), WAIT_S, 0.05)
        self.assertTrue(first, "no request for three sick nodes:" + self.describe_rem("r202"))
        node = first[0]["spec"]["nodeNames"][0]
        self.assert_request(first[0], rem_obj, node, tpl, requestor="r202.noderemediation")
        others = set(nodes) - {node}
        waiting = self.wait_rem("r202", lambda r: (lambda w: others <= set(w) and w)(
            {x.get("node"): x.get("reason") for x in (r.get("status") or {}).get("waitingNodes") or []}),
            f"waitingNodes naming {sorted(others)}")
        log(f"r202: first {node} after {time.monotonic() - t0:.2f} s; waiting {waiting}")
        active_seen = []

        def sample():
            st = self.rem_status("r202")
            active_seen.append(st.get("activeCount") or 0)
        timeline = self.run_repairs("r202", nodes, sample=sample)
        total = time.monotonic() - t0
        time.sleep(0.3)  # the watch catches up
        max_open, max_exist, at = self.open_over_time("r202")
        created = self.added("r202")
        log(f"r202: 3 nodes repaired in {total:.1f} s, in the order {created}; at most {max_open} open "
            f"({max_exist} existing, counting requests being released) at once; status.activeCount max "
            f"{max(active_seen or [0])} over {len(active_seen)} samples; timeline {self.relative(timeline, t0)}")
        self.assertEqual(sorted(created), sorted(self.nd_name("r202", n) for n in nodes),
                         "exactly one request per node")
        self.assertLessEqual(max_open, 1, f"two requests of r202 open at once: {at}")
        self.assertLessEqual(max(active_seen or [0]), 1, "status.activeCount above maxConcurrent 1")
        last = self.last_remediated("r202")
        self.assertEqual(sorted(e.get("node") for e in last), sorted(nodes), last)

    @staticmethod
    def relative(timeline, t0):
        return {n: {k: round(v - t0, 2) for k, v in d.items()} for n, d in sorted(timeline.items())}

    # -- R203 ----------------------------------------------------------------------------------------
    def test_R203_storm_guard_starts_nothing_until_enough_nodes_recover(self):
        self.template("repair")
        # forSeconds 3: no node comes due while the five are being made sick one by one.
        self.remediation("r203", for_seconds=3, maxConcurrent=2, stormGuard={"maxUnhealthy": 2})
        self.wait_rem_condition("r203", "Ready", "True")
        sick = self.NODES[:5]
        self.sick(*sick)
        t_sick = time.monotonic()
        # The nodes turn sick one by one: the storm starts at the third; wait for all five.
        st = self.wait_rem("r203", lambda r: ((r.get("status") or {}).get("storm") or {}).get("active") is True
                           and r["status"].get("unhealthyNodes") == 5 and r["status"], "storm.active over 5 nodes")
        log(f"r203: storm after {time.monotonic() - t_sick:.2f} s: {json.dumps(st.get('storm'))}")
        storm = st["storm"]
        self.assertEqual((storm.get("unhealthyNodes"), storm.get("maxUnhealthy")), (5, 2), storm)
        self.assertIsNotNone(parse_ts(storm.get("since")), storm)
        self.assertEqual(st.get("unhealthyNodes"), 5, st)
        self.assertEqual(st.get("matchedNodes"), 6, st)
        c = self.wait_rem_condition("r203", "Storm", "True")
        log(f"r203: Storm condition {c.get('reason')}: {c.get('message')!r}")
        w = self.wait_rem("r203", lambda r: (lambda w: set(sick) <= set(w) and w)(
            {x.get("node"): x.get("reason") for x in (r.get("status") or {}).get("waitingNodes") or []}),
            "waitingNodes naming the five sick nodes")
        log(f"r203: waitingNodes {w}")

        def storm_event():
            return [e for e in self.events("r203", "NodeRemediation")
                    if "storm" in (e.get("reason", "") + " " + e.get("message", "")).lower()]
        ev, _ = eventually(storm_event, WAIT_S, 0.1)
        self.assertTrue(ev, "no Event on the NodeRemediation about the storm: "
                        f"{[(e.get('reason'), e.get('message')) for e in self.events('r203', 'NodeRemediation')]}")
        log(f"r203: event {ev[0].get('type')} {ev[0].get('reason')}: {ev[0].get('message')!r}")
        # Past forSeconds, still nothing: the storm holds it back.
        self.assertTrue(self.stays(lambda: not self.rem_nds("r203"), max(2.0, t_sick + 4.5 - time.monotonic())),
                        "a request during a storm:" + self.describe_rem("r203"))
        log(f"r203: past forSeconds, waitingNodes {self.waiting('r203')}")
        # Three recover: 2 unhealthy, not more than maxUnhealthy: the two left are repaired.
        t0 = time.monotonic()
        self.heal(*sick[:3])
        left = sick[3:]
        got, _ = eventually(lambda: {nd["spec"]["nodeNames"][0] for nd in self.rem_nds("r203")} == set(left),
                            WAIT_S, 0.05)
        self.assertTrue(got, f"no requests for {left} once the storm was over:" + self.describe_rem("r203"))
        log(f"r203: 3 healed -> requests for {left} in {time.monotonic() - t0:.2f} s")
        st = self.wait_rem("r203", lambda r: ((r.get("status") or {}).get("storm") or {}).get("active") is False
                           and r["status"], "storm.active false")
        self.wait_rem_condition("r203", "Storm", "False")
        self.assertEqual(sorted(set(self.added("r203"))), sorted(self.nd_name("r203", n) for n in left),
                         "requests only for the nodes still sick")

    # -- R204 ----------------------------------------------------------------------------------------
    def test_R204_sick_again_inside_cooldown_is_a_loop_not_a_new_repair(self):
        self.template("repair")
        self.remediation("r204", cooldownSeconds=300)
        node = self.NODES[0]
        name = self.nd_name("r204", node)
        self.sick(node)
        self.wait_request("r204", node)
        self.run_repairs("r204", [node])
        self.wait_rem_condition("r204", "Ready", "True")
        loop = self.condition(self.get_rem("r204"), "Loop")
        self.assertNotEqual((loop or {}).get("status"), "True", f"Loop before any relapse: {loop}")
        # Sick again inside cooldownSeconds.
        t0 = time.monotonic()
        self.sick(node)
        c = self.wait_rem_condition("r204", "Loop", "True")
        log(f"r204: relapse -> Loop True in {time.monotonic() - t0:.2f} s: {c.get('reason')}: {c.get('message')!r}")
        self.assertIn(node, c.get("message", ""), "the Loop condition names the node")
        reason = self.wait_rem("r204", lambda r: {w.get("node"): w.get("reason")
                                                  for w in (r.get("status") or {}).get("waitingNodes") or []}.get(node),
                               f"waitingNodes naming {node}")
        log(f"r204: waiting reason {reason!r}")
        self.assertTrue("cooldown" in reason.lower() or "loop" in reason.lower(), reason)
        self.assertTrue(self.stays(lambda: not self.rem_nds("r204"), 2),
                        "a node sick again inside cooldownSeconds must not be repaired again:" + self.describe_rem("r204"))
        self.assertEqual(self.added("r204"), [name], "one request only")
        self.assertEqual([e.get("node") for e in self.last_remediated("r204")], [node])
        # The dry run (POST /v1/evaluate) over the live cache reads the same repair back from the
        # cluster's copy of the remediation: a loop, no request.
        code, out = self.ng.admin("POST", "/v1/evaluate", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation", "metadata": {"name": "r204"},
            "spec": self.get_rem("r204")["spec"]})
        self.assertEqual(code, 200, out)
        d = json.loads(out)
        self.assertEqual({n["node"]: n["action"] for n in d["nodes"]}, {node: "cooldown"}, d)
        # Under another name the remediation has repaired nothing yet: the node would get a request.
        code, out = self.ng.admin("POST", "/v1/evaluate", {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation", "metadata": {"name": "r204-new"},
            "spec": self.get_rem("r204")["spec"]})
        d = json.loads(out)
        self.assertEqual([(n["node"], n["action"], n["decision"]["state"]) for n in d["nodes"]],
                         [(node, "create", "Granted")], d)

    # -- R205 ----------------------------------------------------------------------------------------
    def test_R205_deleting_the_remediation_lets_the_granted_request_finish(self):
        self.template("repair")
        self.remediation("r205", maxConcurrent=1)
        rem_watch = Watch(self.api, NREM_PATH)
        self.addCleanup(rem_watch.stop)
        a, b = self.NODES[0], self.NODES[1]
        name_a, name_b = self.nd_name("r205", a), self.nd_name("r205", b)
        self.sick(a)
        self.wait_request("r205", a)
        self.wait_reason(name_a, "Operating", timeout=2 * WAIT_S, status="True")
        job = self.operation_job_of(name_a, a)
        self.start_job(job)
        self.sick(b)
        reason = self.wait_rem("r205", lambda r: {w.get("node"): w.get("reason")
                                                  for w in (r.get("status") or {}).get("waitingNodes") or []}.get(b),
                               f"waitingNodes naming {b}")
        log(f"r205: {b} waiting: {reason!r}")
        self.assertIn(REM_FINALIZER, self.get_rem("r205")["metadata"].get("finalizers") or [])
        t_del = time.monotonic()
        code, body, _ = self.api.api("DELETE", f"{NREM_PATH}/r205")
        self.assertEqual(code, 200, body)
        c = self.wait_rem_condition("r205", "Ready", "False", reason="Deleting")
        log(f"r205: deleting: Ready {c.get('reason')}: {c.get('message')!r}")
        # The granted request runs on; no new request; the remediation waits.
        def holding():
            return self.alive(name_a) and self.get_nd(name_b) is None and self.get_rem("r205") is not None
        self.assertTrue(self.stays(holding, 2), "while its Job runs the request must stay, no new one may start "
                        "and the NodeRemediation must wait:" + self.describe(name_a))
        self.assertEqual(self.reason(name_a), "Operating")
        t0 = time.monotonic()
        self.finish_job(job, "Complete", "CompletionsReached")
        ok, _ = eventually(lambda: self.gone(name_a), 2 * WAIT_S, 0.05)
        self.assertTrue(ok, "the request was not deleted once its Job completed:" + self.describe(name_a))
        ok, _ = eventually(lambda: self.get_rem("r205") is None, WAIT_S, 0.05)
        self.assertTrue(ok, "the NodeRemediation never went:" + self.describe_rem("r205"))
        log(f"r205: Job complete -> request and NodeRemediation gone in {time.monotonic() - t0:.2f} s "
            f"({time.monotonic() - t_del:.2f} s after the delete)")
        self.assertEqual(self.added(name=name_b), [], f"no request for {b} after the delete")
        self.assertEqual(self.added("r205"), [name_a])
        self.assert_given_back(a)
        time.sleep(0.3)
        nd_gone = [int(o["metadata"]["resourceVersion"]) for _, typ, o in self.events_of(name=name_a) if typ == "DELETED"]
        rem_gone = [int(o["metadata"]["resourceVersion"]) for _, typ, o in rem_watch.snapshot() if typ == "DELETED"]
        self.assertTrue(nd_gone and rem_gone, (nd_gone, rem_gone))
        self.assertLess(nd_gone[0], rem_gone[0], "the finalizer must hold the NodeRemediation until its request is gone")

    # -- R206 ----------------------------------------------------------------------------------------
    def test_R206_missing_template_is_reported_and_creating_it_starts_the_repair(self):
        self.remediation("r206", template="kernel-fix")
        node = self.NODES[0]
        self.sick(node)
        c = self.wait_rem_condition("r206", "Ready", "False", reason="TemplateNotFound")
        log(f"r206: Ready False {c.get('reason')}: {c.get('message')!r}")
        self.assertIn("kernel-fix", c.get("message", ""), "the message names the template")
        self.assertTrue(self.stays(lambda: not self.rem_nds("r206"), 2),
                        "nothing may be created without the template:" + self.describe_rem("r206"))
        t0 = time.monotonic()
        tpl = self.template("kernel-fix")
        nd = self.wait_request("r206", node)
        log(f"r206: template created -> request in {time.monotonic() - t0:.2f} s")
        self.assert_request(nd, self.get_rem("r206"), node, tpl, requestor="node-doctor")
        self.wait_granted(nd["metadata"]["name"])
        c = self.wait_rem_condition("r206", "Ready", "True")
        self.assertEqual(c.get("reason"), "Watching", c)

    # -- R207 ----------------------------------------------------------------------------------------
    def test_R207_serve_killed_mid_remediation_creates_no_duplicate(self):
        self.template("repair")
        self.remediation("r207", for_seconds=3, maxConcurrent=3)
        a, b, c = self.NODES[:3]
        self.sick(a)
        self.wait_request("r207", a, timeout=3 + WAIT_S)
        self.wait_reason(self.nd_name("r207", a), "Operating", timeout=2 * WAIT_S, status="True")
        # b's condition comes due while serve is down.
        self.sick(b)
        t_kill = self.kill_serve()
        time.sleep(3.5)
        self.start_serve()
        log(f"r207: serve killed with a's request open and b sick; b due while down; new serve ready "
            f"{time.monotonic() - t_kill:.2f} s after the kill")
        self.wait_request("r207", b, timeout=WAIT_S)
        # c: killed the moment its request is created (before the status write, if we are quick).
        self.sick(c)
        name_c = self.nd_name("r207", c)
        ok, _ = eventually(lambda: self.added(name=name_c), 3 + WAIT_S, 0.005)
        self.assertTrue(ok, "no request for c:" + self.describe_rem("r207"))
        t_kill = self.kill_serve()
        self.start_serve()
        log(f"r207: serve killed right after creating {name_c}; ready again after {time.monotonic() - t_kill:.2f} s")
        self.assertTrue(self.stays(lambda: len(self.rem_nds("r207")) == 3, 2),
                        "the three requests must stay as they are after the restart:" + self.describe_rem("r207"))
        self.run_repairs("r207", [a, b, c])
        time.sleep(0.3)
        created = self.added("r207")
        log(f"r207: creations seen {created}")
        self.assertEqual(sorted(created), sorted(self.nd_name("r207", n) for n in (a, b, c)),
                         "each node gets exactly one request (one ADDED) across the restarts")
        last = self.last_remediated("r207")
        self.assertEqual(sorted(e.get("node") for e in last), sorted([a, b, c]), last)

    # -- R208 ----------------------------------------------------------------------------------------
    def test_R208_a_remediation_never_bypasses_a_budget(self):
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "frozen-pool"},
                               "spec": {"nodeSelector": POOL, "maxDisruptedNodes": 0}})
        ok, _ = eventually(lambda: ((self.api.api("GET", f"{NDB_PATH}/frozen-pool")[1] or {}).get("status") or {})
                           .get("watchedNodes") == 6, WAIT_S, 0.05)
        self.assertTrue(ok, "the gate never took the NDB in")
        self.template("repair")  # retry enabled
        self.remediation("r208")
        node = self.NODES[0]
        name = self.nd_name("r208", node)
        self.sick(node)
        self.wait_request("r208", node)
        ok, _ = eventually(lambda: (self.get_nd(name) or {}).get("status", {}).get("state") == "Pending", WAIT_S, 0.05)
        self.assertTrue(ok, "the request must be Pending under maxDisruptedNodes 0:" + self.describe(name))

        def untouched():
            nd = self.get_nd(name)
            n = self.node(node)
            return (nd is not None and (nd.get("status") or {}).get("state") == "Pending"
                    and DRAIN_FINALIZER not in (nd["metadata"].get("finalizers") or [])
                    and not n["spec"].get("unschedulable") and self.annotation_of(n) is None
                    and not self.jobs_of(name))
        self.assertTrue(self.stays(untouched, 3), "a Pending request must not be drained:" + self.describe(name))
        pods = self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")[1]["items"]
        self.assertEqual(len(pods), 2, "nothing was evicted")
        st = self.wait_rem("r208", lambda r: [a for a in (r.get("status") or {}).get("activeRequests") or []
                                              if a.get("name") == name and a.get("state") == "Pending"] and r["status"],
                           "activeRequests showing the request Pending")
        log(f"r208: {name} Pending: {json.dumps(self.condition(self.get_nd(name), 'Granted'))}; "
            f"activeRequests {json.dumps(st.get('activeRequests'))}")
        self.assertEqual(self.added("r208"), [name])


class RemediationRollingTest(RemediationTest):
    """10 generated nodes (2 ReplicaSet pods each), an NDB of maxDisruptedNodes 2 over them, and a
    NodeRemediation with maxConcurrent 100 %."""
    GENERATE = "nodes=10,pods-per-node=2,namespaces=2"
    NODES = [f"node-{i:05d}" for i in range(1, 11)]
    LIMIT = 2

    def test_R210_rolling_six_of_ten(self):
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "pool"},
                               "spec": {"nodeSelector": POOL, "maxDisruptedNodes": self.LIMIT}})
        ok, _ = eventually(lambda: ((self.api.api("GET", f"{NDB_PATH}/pool")[1] or {}).get("status") or {})
                           .get("watchedNodes") == 10, WAIT_S, 0.1)
        self.assertTrue(ok, "the gate never took the NDB in")
        self.template("repair")  # retry enabled: requests over the budget wait Pending
        self.remediation("r210", maxConcurrent="100%")
        self.wait_rem("r210", lambda r: (r.get("status") or {}).get("matchedNodes") == 10, "matchedNodes 10")
        node_watch = Watch(self.api, "/api/v1/nodes")
        self.addCleanup(node_watch.stop)
        sick = [self.NODES[i] for i in (0, 2, 3, 5, 7, 9)]
        healthy = [n for n in self.NODES if n not in sick]
        t0 = time.monotonic()
        self.sick(*sick)
        polled = {"max_cordoned": 0, "max_granted": 0, "samples": 0, "violations": []}

        def sample():
            code, nodes, _ = self.api.api("GET", "/api/v1/nodes")
            code2, nds, _ = self.api.api("GET", ND_PATH)
            if code != 200 or code2 != 200:
                return
            polled["samples"] += 1
            cordoned = sorted(n["metadata"]["name"] for n in nodes["items"] if self.held(n))
            granted = sorted(nd["metadata"]["name"] for nd in nds["items"]
                             if (nd.get("status") or {}).get("state") == "Granted"
                             and not nd["metadata"].get("deletionTimestamp"))
            polled["max_cordoned"] = max(polled["max_cordoned"], len(cordoned))
            polled["max_granted"] = max(polled["max_granted"], len(granted))
            if len(cordoned) > self.LIMIT or len(granted) > self.LIMIT:
                polled["violations"].append((round(time.monotonic() - t0, 2), cordoned, granted))
        timeline = self.run_repairs("r210", sick, timeout=max(300, 20 * WAIT_S), sample=sample)
        self.assert_given_back(*sick)
        total = time.monotonic() - t0
        time.sleep(0.3)  # the watches catch up
        # Replays: nodes held by nodegate, and requests Granted (not being deleted), after every change.
        held = {n["metadata"]["name"]: self.held(n) for n in node_watch.initial}
        max_held, held_violations = 0, []
        for t, typ, o in node_watch.snapshot():
            held[o["metadata"]["name"]] = typ != "DELETED" and self.held(o)
            n_held = sum(held.values())
            max_held = max(max_held, n_held)
            if n_held > self.LIMIT:
                held_violations.append((round(t - t0, 3), sorted(k for k, v in held.items() if v)))
        granted, max_granted, granted_violations, seen = {}, 0, [], {}
        for t, typ, o in self.events_of("r210"):
            name = o["metadata"]["name"]
            st = (o.get("status") or {}).get("state")
            granted[name] = typ != "DELETED" and st == "Granted" and not o["metadata"].get("deletionTimestamp")
            n_granted = sum(granted.values())
            max_granted = max(max_granted, n_granted)
            if n_granted > self.LIMIT:
                granted_violations.append((round(t - t0, 3), sorted(k for k, v in granted.items() if v)))
            node = (o["spec"].get("nodeNames") or [""])[0]
            marks = seen.setdefault(node, {})
            if typ == "ADDED":
                marks.setdefault("created", t)
            if st == "Granted":
                marks.setdefault("granted", t)
            if ready_reason(o) in ("Drained", "Operating", "Completed", "Rebooting"):
                marks.setdefault("drained", t)
            if typ == "DELETED":
                marks.setdefault("gone", t)
        for node, marks in timeline.items():
            seen.setdefault(node, {}).update(marks)
        log(f"r210: {len(sick)} of 10 nodes repaired in {total:.1f} s; at most {max_held} held by nodegate "
            f"over {len(node_watch.snapshot())} node changes, {max_granted} Granted at once (watch); polled "
            f"{polled['samples']} times: max cordoned {polled['max_cordoned']}, max Granted {polled['max_granted']}")
        for node in sick:
            log(f"r210: {node}: " + ", ".join(f"{k} {v - t0:.2f} s" for k, v in
                                               sorted(seen.get(node, {}).items(), key=lambda kv: kv[1])))
        self.assertEqual(held_violations, [], f"more than {self.LIMIT} nodes held by nodegate at once (watch)")
        self.assertEqual(granted_violations, [], f"more than {self.LIMIT} requests Granted at once (watch)")
        self.assertEqual(polled["violations"], [], f"more than {self.LIMIT} cordoned/Granted at once (polled)")
        self.assertGreater(max_held, 0)
        self.assertEqual(sorted(self.added("r210")), sorted(self.nd_name("r210", n) for n in sick),
                         "one request per sick node, none for a healthy one")
        for n in sick:
            self.assertIn("drained", seen.get(n, {}), f"{n}'s request was never seen drained")
            self.assertEqual(self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{n}")[1]["items"], [],
                             f"{n} was drained")
        for n in healthy:
            self.assertEqual(len(self.api.api("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{n}")[1]["items"]),
                             2, f"{n} is healthy: its pods stay")
        code, nodes, _ = self.api.api("GET", "/api/v1/nodes")
        for n in nodes["items"]:
            self.assertFalse(n["spec"].get("unschedulable"), n["metadata"]["name"] + " ended cordoned")
            self.assertNotIn(ANNOTATION, n["metadata"].get("annotations") or {}, n["metadata"]["name"])
        last = self.last_remediated("r210")
        self.assertEqual(sorted(e.get("node") for e in last), sorted(sick), last)


if __name__ == "__main__":
    unittest.main()
