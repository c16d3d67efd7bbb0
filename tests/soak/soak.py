#!/usr/bin/env python3
"""The soak: nodegate under churn and faults for a given time, judged by an independent checker.

A generated cluster on the test API server (NODES nodes in 50 pools, PODS_PER_NODE pods each
over 150 application namespaces; one NodeDisruptionBudget per pool, two
ApplicationDisruptionBudgets per namespace, some with a health hook), two `nodegate serve`
replicas (webhooks and gate; the API server calls them through a Service for every eviction) and
two `nodegate drain` replicas, all as nodegate's service account. Meanwhile:
  load       eviction reviews at RATE/s to the webhook (tests/soak/loadclient.py, its own process)
  requestors two maintenance tools rolling through every node (one request per node, with
             drain, deleted once Drained), and an autoscaler taking one or two nodes for a few
             seconds without drain, its requests with a deadline of a few seconds and half of
             the granted ones forgotten (their deadline must end them)
  churn      pods created and deleted, nodes going NotReady and back, budgets edited, evictions
             of random pods through the API server by an operator
  faults     one every PERIOD seconds, kinds in turn: watches dropped, 410 Gone (history
             compacted), 409 and 500 on writes, API server restart, the gate's and the
             drainer's leader SIGKILLed (a new replica replaces it), health hooks hanging past
             their timeout or down, the serving certificate rotated
The checker (tests/soak/checker.py, its own process) reads the API server's journal and the load
client's record, and reports every violation. At the end the requestors delete their requests
and everything must come back: no request left, no node cordoned. Resident memory of every
nodegate process is sampled each 5 s; its slope over the last half of the run must not show
growth.

Usage: soak.py [MINUTES] [--nodes N] [--pods-per-node N] [--rate R] [--seed S] [--keep]
Environment: NODEGATE (the binary; default build-release/cmd/nodegate)."""
import argparse
import base64
import collections
import datetime
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
from ktestapi.testing import ServerProcess  # noqa: E402

GROUP = "/apis/nodegate.io/v1alpha1"
ND_PATH = GROUP + "/nodedisruptions"
NDB_PATH = GROUP + "/nodedisruptionbudgets"
NGC_PATH = GROUP + "/nodegateconfigs"
SA = "system:serviceaccount:nodegate:nodegate"
FIXTURES = [os.path.join(ROOT, "manifests", "rbac", "rbac.json")] + [
    os.path.join(ROOT, "manifests", "crds", f) for f in
    ("nodedisruptions.json", "applicationdisruptionbudgets.json", "nodedisruptionbudgets.json", "nodegateconfigs.json")]
POOLS, APPS = 50, 150
FAR = "2099-01-01T00:00:00Z"
FAULTS = ["watch-drop", "gone-410", "conflict-409", "error-500", "apiserver-restart",
          "gate-leader-kill", "drain-leader-kill", "hook-timeout", "cert-rotation"]
MERGE = "application/merge-patch+json"
# How long past its deadline a Granted request may still be seen (a gate leader killed just then
# is replaced within its lease).
DEADLINE_SLACK_S = 20


def admission_latency_limit(binary):
    """Seconds an admission answer may take: 1 s for the build operators run; three times that
    for a sanitizer build (ASan or TSan: 2-3x slower, and the suite's 2-minute run uses one),
    whose run is there to catch memory and thread errors under churn, not to time answers."""
    try:
        libs = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        libs = ""
    return 3.0 if ("libasan" in libs or "libtsan" in libs) else 1.0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def wait_for(fn, timeout, interval=0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    return fn()


class Certs:
    """The soak's CA, and serving certificates for 127.0.0.1 and the Service's name."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.ca, self.ca_key = os.path.join(tmp, "ca.crt"), os.path.join(tmp, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", self.ca_key, "-out", self.ca, "-days", "2", "-subj", "/CN=soak-ca",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
        self.serial = 0

    def leaf(self, name, dns=()):
        """Writes NAME.crt/NAME.key atomically (key first: a reader that sees the new certificate
        finds its key). Returns (cert, key, serial)."""
        self.serial += 1
        crt, key = os.path.join(self.tmp, f"{name}.crt"), os.path.join(self.tmp, f"{name}.key")
        tcrt, tkey, csr, ext = crt + ".new", key + ".new", crt + ".csr", crt + ".ext"
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", tkey, "-out", csr, "-subj", f"/CN={name}")
        with open(ext, "w", encoding="utf-8") as f:
            f.write("subjectAltName=" + ",".join(["IP:127.0.0.1"] + [f"DNS:{d}" for d in dns]) +
                    "\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")
        serial = "%x" % (0x5000 + self.serial)
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key, "-out", tcrt, "-days", "2",
                "-set_serial", "0x" + serial, "-extfile", ext)
        os.replace(tkey, key)
        os.replace(tcrt, crt)
        return crt, key, serial

    def b64(self):
        with open(self.ca, "rb") as f:
            return base64.b64encode(f.read()).decode()


def generate(path, nodes, ppn, hook_url, ca_b64, rnd):
    """The cluster as one List for --fixture; returns the pods as ns/name."""
    items = []
    for a in range(APPS):
        items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"app-{a:03d}"}})
    ts = "2026-01-01T00:00:00Z"
    pods = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        items.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "pool": f"pool-{i % POOLS:02d}",
                                                            "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
                      "spec": {},
                      "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                 "lastHeartbeatTime": ts, "lastTransitionTime": ts}],
                                 "nodeInfo": {"bootID": f"boot-{i}", "kubeletVersion": "v1.32.0"}}})
        for j in range(ppn):
            a = rnd.randrange(APPS)
            items.append(pod_object(f"app-{a:03d}", f"{name}-p{j}", name, rnd))
            pods.append(f"app-{a:03d}/{name}-p{j}")
    for p in range(POOLS):
        items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                      "metadata": {"name": f"pool-{p:02d}"},
                      "spec": {"nodeSelector": {"matchLabels": {"pool": f"pool-{p:02d}"}},
                               "maxDisruptedNodes": 2 if p % 3 else "30%"}})
    for a in range(APPS):
        for tier in ("a", "b"):
            spec = {"podSelector": {"matchLabels": {"app": f"app-{a:03d}", "tier": tier}},
                    "maxDisruptions": 3 if tier == "a" else "10%"}
            if tier == "a" and a % 5 == 0:
                spec["healthHook"] = {"url": hook_url + ("?slow=0.1&fail=0.1" if a % 10 == 0 else "?slow=0.02&fail=0.02"),
                                      "caBundle": ca_b64, "timeoutSeconds": 2}
            items.append({"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                          "metadata": {"name": f"tier-{tier}", "namespace": f"app-{a:03d}"}, "spec": spec})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    return pods


def pod_object(ns, name, node, rnd):
    # tier a and b are protected by a budget each; tier c (one pod in ten) by none
    r = rnd.random()
    tier = "c" if r < 0.1 else ("a" if r < 0.55 else "b")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": ns, "tier": tier},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": ns,
                                              "uid": "00000000-0000-0000-0000-%012d" % int(ns[4:]), "controller": True}]},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": rnd.choice([0, 1, 2, 3]),
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


class Proc:
    """One nodegate process (serve or drain) that can be killed and replaced."""

    def __init__(self, soak, role, slot):
        self.soak, self.role, self.slot = soak, role, slot
        self.gen = 0
        self.proc = None
        self.port = None
        self.rss = []   # (t, kB, incarnation, leading: held its Lease at the sample)
        self.start()

    @property
    def identity(self):
        return f"{self.role}-{self.slot}-{self.gen}"

    def start(self):
        s = self.soak
        self.gen += 1
        d = os.path.join(s.tmp, self.identity)
        os.makedirs(d, exist_ok=True)
        self.log_path = os.path.join(d, "log")
        kc = os.path.join(s.api.state, "kubeconfig-sa-nodegate-nodegate")
        common = ["--kubeconfig", kc, "--lease-namespace", "nodegate", "--identity", self.identity,
                  "--shutdown-grace-seconds", "1", "--log-level", "info"]
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        if self.role == "serve":
            port_file = os.path.join(d, "port")
            args = ["serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                    "--tls-cert", s.serving[0], "--tls-key", s.serving[1], "--tls-reload-seconds", "2",
                    "--admin-listen", "off", *common]
        else:
            self.port = free_port()
            args = ["drain", "--listen", f"127.0.0.1:{self.port}", *common]
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen([s.binary, *args], stdout=logf, stderr=subprocess.STDOUT, env=env)
        if self.role == "serve":
            if not wait_for(lambda: os.path.exists(port_file) or self.proc.poll() is not None, 60):
                raise RuntimeError(f"{self.identity} never wrote its port")
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.identity} exited:\n" + self.tail())
            with open(port_file, encoding="utf-8") as f:
                self.port = int(f.read())
        if not wait_for(lambda: self.proc.poll() is not None or self.ready(), 120):
            raise RuntimeError(f"{self.identity} never became ready:\n" + self.tail())
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.identity} exited:\n" + self.tail())

    def get(self, path):
        """GET @path from the process's own port (HTTPS for serve, plain HTTP for drain):
        (status, body). Raises OSError when it cannot be asked."""
        import http.client
        import ssl
        if self.role == "serve":
            ctx = ssl.create_default_context(cafile=self.soak.certs.ca)
            ctx.check_hostname = False
            c = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=5)
        else:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def ready(self):
        try:
            return self.get("/readyz")[0] == 200
        except OSError:
            return False

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def sample(self, leading):
        """Resident memory now, kept with whether the process held its Lease (@leading), and
        written with the process's cache figures (from its /metrics) to rss.jsonl in the work
        directory, to tell a growing cache from a leak."""
        try:
            with open(f"/proc/{self.proc.pid}/status", encoding="utf-8") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        self.rss.append((time.time(), int(line.split()[1]), self.gen, leading))
        except OSError:
            return
        rec = {"t": round(time.time(), 1), "proc": self.identity, "leading": leading,
               "rss_kb": self.rss[-1][1] if self.rss else None}
        rec.update(self.cache_metrics())
        with open(os.path.join(self.soak.tmp, "rss.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")

    def cache_metrics(self):
        try:
            text = self.get("/metrics")[1].decode(errors="replace")
        except OSError:
            return {}
        out = {}
        for line in text.splitlines():
            if line.startswith(("nodegate_cache_intern_bytes", "nodegate_cache_intern_strings",
                                "nodegate_cache_objects")):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def tail(self, n=3000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def slope(samples):
    """Least-squares slope (kB per minute) of (t, kB) samples."""
    n = len(samples)
    if n < 3:
        return None
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    if den == 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in samples) / den * 60


def rss_rows(procs):
    """Rows of the summary table and problems from the resident memory samples of @procs."""
    rows, problems = [], []
    # Resident memory, per process: the slope over the last half of its last tenure in one
    # role (leader or standby), for tenures of 4 min or more. A replica that takes the Lease
    # over starts work a standby never does (the gate's rounds, the drainer's steps) and
    # steps up to a higher plateau once; a slope across that step is not a leak, while
    # one inside a tenure is.
    for p in procs:
        by_gen = collections.defaultdict(list)
        for t, kb, gen, leading in p.rss:
            by_gen[gen].append((t, kb, leading))
        for gen, s in sorted(by_gen.items()):
            life = s[-1][0] - s[0][0]
            k = len(s) - 1
            while k > 0 and s[k - 1][2] == s[-1][2]:
                k -= 1
            tenure = s[k:]
            held = tenure[-1][0] - tenure[0][0]
            last = [(t, kb) for t, kb, _ in tenure if t >= tenure[0][0] + held / 2]
            sl = slope(last) if held >= 240 else None
            whole = slope([(t, kb) for t, kb, _ in s]) if life >= 240 else None
            name = f"{p.role}-{p.slot}-{gen}"
            role = "leader" if s[-1][2] else "standby"
            desc = (f"{s[-1][1] / 1024:.1f} MiB, lived {life / 60:.1f} min, the last "
                    f"{held / 60:.1f} as {role}" +
                    (f", slope {sl / 1024:+.2f} MiB/min over that tenure's last half" if sl is not None else "") +
                    (f" ({whole / 1024:+.2f} over the whole life)" if whole is not None else ""))
            rows.append((f"RSS {name}", desc))
            if sl is not None and sl * (held / 2) / 60 > max(0.1 * s[-1][1], 16 * 1024):
                problems.append(f"{name}: resident memory grew {sl / 1024:+.2f} MiB/min over the last half "
                                f"of its {held / 60:.1f} min as {role}")
    return rows, problems


class Soak:
    def __init__(self, a):
        self.a = a
        self.rnd = random.Random(a.seed)
        self.binary = os.environ.get("NODEGATE") or os.path.join(ROOT, "build-release", "cmd", "nodegate")
        self.latency_limit = admission_latency_limit(self.binary)
        self.tmp = tempfile.mkdtemp(prefix="ng-soak-")
        self.stop = threading.Event()
        self.quiesce = threading.Event()
        self.faults = collections.Counter()
        self.ops = collections.Counter()
        self.errors = collections.Counter()
        self.overdue = {}      # request -> seconds past its status.expiresAt, at most
        self.expired = set()   # requests seen past their status.expiresAt
        self.lock = threading.Lock()
        self.pods = []          # ns/name of pods this run created or was generated with (not all live)
        self.live_nds = {}      # name -> (requestor, object) as last listed
        self.serve, self.drain = [], []
        self.procs = []
        self.api = None

    # -- the API server ----------------------------------------------------------------------
    def call(self, method, path, body=None, ctype="application/json", user="admin"):
        try:
            code, out, _ = self.api.api(method, path, body, ctype=ctype, user=user, timeout=15)
            return code, out
        except (OSError, http.client.HTTPException) as e:
            # HTTPException: an answer cut short, as by the API server's restart fault.
            return 0, str(e)

    def counted(self, what, code, ok=(200, 201)):
        with self.lock:
            self.ops[what] += 1
            if code not in ok:
                self.errors[f"{what} {code or 'unreachable'}"] += 1

    def setup(self):
        a = self.a
        self.certs = Certs(self.tmp)
        hook_crt, hook_key, _ = self.certs.leaf("hooks")
        port_file = os.path.join(self.tmp, "hooks.port")
        self.hooks = subprocess.Popen([sys.executable, os.path.join(HERE, "hooks.py"), "--cert", hook_crt,
                                       "--key", hook_key, "--port-file", port_file])
        self.procs.append(self.hooks)
        if not wait_for(lambda: os.path.exists(port_file), 30):
            raise RuntimeError("the hook server never started")
        with open(port_file, encoding="utf-8") as f:
            self.hook_port = int(f.read())
        cluster = os.path.join(self.tmp, "cluster.json")
        t0 = time.monotonic()
        self.pods = generate(cluster, a.nodes, a.pods_per_node, f"https://127.0.0.1:{self.hook_port}/hook",
                             self.certs.b64(), self.rnd)
        self.nodes = [f"node-{i:04d}" for i in range(a.nodes)]
        with open(os.path.join(self.tmp, "pods.json"), "w", encoding="utf-8") as f:
            json.dump(self.pods, f)
        self.journal = os.path.join(self.tmp, "journal.jsonl")
        self.api = ServerProcess(fixtures=FIXTURES + [cluster], kubelet="grace", start_timeout=900,
                                 extra_args=["--journal", self.journal, "--history", "200000"])
        self.api.start()
        log(f"test API server up with {a.nodes} nodes, {len(self.pods)} pods, {POOLS} NDBs, {2 * APPS} ADBs "
            f"in {time.monotonic() - t0:.1f} s")
        code, out = self.call("POST", NGC_PATH, {
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
            "spec": {"healthHooks": {"allowedCIDRs": ["127.0.0.0/8"]},
                     "retry": {"initialIntervalSeconds": 2, "maxIntervalSeconds": 10},
                     "drain": {"backoff": {"base": 1, "max": 4, "jitter": 1}}}})
        if code != 201:
            raise RuntimeError(f"NodeGateConfig: {code} {out}")
        self.serving = self.certs.leaf("serving", dns=["nodegate.nodegate.svc"])[:2]
        t0 = time.monotonic()
        self.serve = [Proc(self, "serve", i) for i in range(2)]
        self.drain = [Proc(self, "drain", i) for i in range(2)]
        log(f"2 serve and 2 drain replicas ready in {time.monotonic() - t0:.1f} s")
        self.endpoints_file = os.path.join(self.tmp, "endpoints.json")
        self.in_service = {p.slot: True for p in self.serve}
        self.publish_endpoints()
        code, out = self.call("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "nodegate"},
            "webhooks": [{"name": "eviction.nodegate.io", "admissionReviewVersions": ["v1"],
                          "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail", "timeoutSeconds": 5,
                          "clientConfig": {"service": {"namespace": "nodegate", "name": "nodegate", "port": 443,
                                                       "path": "/validate/eviction"}, "caBundle": self.certs.b64()},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                     "resources": ["pods/eviction"], "scope": "Namespaced"}]}]})
        if code != 201:
            raise RuntimeError(f"webhook configuration: {code} {out}")

    def publish_endpoints(self):
        """The Service: the ports of the serve replicas in service, for the load client and for
        the API server's calls to the eviction webhook."""
        ports = [p.port for p in self.serve if self.in_service.get(p.slot)]
        with open(self.endpoints_file + ".tmp", "w", encoding="utf-8") as f:
            json.dump(ports, f)
        os.replace(self.endpoints_file + ".tmp", self.endpoints_file)
        if ports:
            self.api.control("service-endpoint", {"service": "nodegate/nodegate:443",
                                                  "address": f"127.0.0.1:{self.rnd.choice(ports)}"})

    def start_observers(self):
        self.stop_file = os.path.join(self.tmp, "stop")
        self.admissions = os.path.join(self.tmp, "admissions.jsonl")
        self.check_out = os.path.join(self.tmp, "checker.json")
        self.load_out = os.path.join(self.tmp, "load.json")
        self.checker = subprocess.Popen([sys.executable, os.path.join(HERE, "checker.py"), "--journal", self.journal,
                                         "--admissions", self.admissions, "--stop", self.stop_file,
                                         "--out", self.check_out, "--latency-limit", str(self.latency_limit)])
        self.load = subprocess.Popen([sys.executable, os.path.join(HERE, "loadclient.py"), "--rate", str(self.a.rate),
                                      "--endpoints", self.endpoints_file, "--ca", self.certs.ca,
                                      "--pods", os.path.join(self.tmp, "pods.json"), "--out", self.admissions,
                                      "--summary", self.load_out])
        self.procs += [self.checker, self.load]

    # -- requestors ------------------------------------------------------------------------
    def poll_requests(self):
        """Lists the requests twice a second: what the requestors act on."""
        while not self.stop.is_set():
            code, out = self.call("GET", ND_PATH)
            if code == 200:
                live = {}
                for o in out.get("items") or []:
                    live[o["metadata"]["name"]] = o
                with self.lock:
                    self.live_nds = live
                self.watch_deadlines(live)
            time.sleep(0.5)

    def watch_deadlines(self, live):
        """A Granted request past its status.expiresAt must be ended by the gate (deleted) within
        DEADLINE_SLACK_S: a new leader after a kill takes a few seconds to act."""
        now = time.time()
        for name, o in live.items():
            st = o.get("status") or {}
            if st.get("state") != "Granted" or not st.get("expiresAt") or o["metadata"].get("deletionTimestamp"):
                continue
            past = now - datetime.datetime.fromisoformat(st["expiresAt"].replace("Z", "+00:00")).timestamp()
            if past > 0:
                self.expired.add(name)
            if past > DEADLINE_SLACK_S:
                self.overdue[name] = max(self.overdue.get(name, 0), round(past, 1))

    def create_nd(self, name, requestor, nodes, drain, retry=True, typ="maintenance", deadline_s=None):
        spec = {"nodeNames": nodes, "requestor": requestor, "type": typ,
                "retry": {"enabled": retry, "deadline": FAR}}
        if drain:
            # A drain stuck for a minute gives its node back (the gate ends the request).
            spec["drain"] = {"force": True, "deleteEmptyDir": True, "timeoutSeconds": 30,
                             "deadlineSeconds": 60, "onDeadline": "Release"}
        if deadline_s:
            spec["activeDeadlineSeconds"] = deadline_s
        code, out = self.call("POST", ND_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                                "metadata": {"name": name}, "spec": spec}, user="admin")
        self.counted("request created", code, (201,))
        return code == 201

    def delete_nd(self, name):
        code, _ = self.call("DELETE", f"{ND_PATH}/{name}")
        self.counted("request deleted", code, (200, 202, 404))

    def maintenance(self, requestor, nodes, parallel):
        """A maintenance tool: one drained request per node, in order, `parallel` open at a time;
        each deleted a moment after it is Drained (the node 'rebooted'), then the next node."""
        todo = collections.deque(nodes)
        mine = {}   # request name -> (node, time Drained seen or None)
        k = 0
        while not self.stop.is_set():
            with self.lock:
                live = dict(self.live_nds)
            for name in list(mine):
                o = live.get(name)
                if o is None:
                    if name not in self.created_recently(mine, name):
                        mine.pop(name)
                    continue
                node, drained_at = mine[name]
                reasons = [c.get("reason") for c in (o.get("status") or {}).get("conditions") or []
                           if c.get("type") == "Ready"]
                if o.get("metadata", {}).get("deletionTimestamp"):
                    continue
                if reasons == ["Drained"]:
                    if drained_at is None:
                        mine[name] = (node, time.monotonic())
                    elif time.monotonic() - drained_at > self.rnd.uniform(0.5, 3):
                        self.delete_nd(name)
            if not self.quiesce.is_set():
                while len(mine) < parallel and todo:
                    node = todo.popleft()
                    todo.append(node)   # round and round: a rolling maintenance that never ends
                    k += 1
                    name = f"{requestor}-{k:05d}-{node}"
                    if not self.create_nd(name, requestor, [node], drain=True):
                        break   # the API server refused or is down: the next tick tries again
                    mine[name] = (node, None)
                    self.created_at[name] = time.monotonic()
            else:
                for name in list(mine):
                    if name in live and not live[name]["metadata"].get("deletionTimestamp"):
                        self.delete_nd(name)
            time.sleep(0.5)

    def created_recently(self, mine, name):
        """Requests created in the last 3 s, which a list may not show yet."""
        t = self.created_at.get(name)
        return {name} if t is not None and time.monotonic() - t < 3 else set()

    def autoscaler(self):
        """Takes one or two nodes without drain for a few seconds, gives them back; deletes what is
        rejected or still pending after 30 s. Every request has a deadline of a few seconds, and
        half of the granted ones are forgotten: their deadline must end them."""
        mine = {}
        k = 0
        while not self.stop.is_set():
            with self.lock:
                live = dict(self.live_nds)
            for name, (t0, hold) in list(mine.items()):
                o = live.get(name)
                if o is None:
                    if time.monotonic() - t0 > 3:
                        mine.pop(name)
                    continue
                st = (o.get("status") or {}).get("state")
                age = time.monotonic() - t0
                if o["metadata"].get("deletionTimestamp"):
                    continue
                forgotten = hold < 4  # a tool that gave up: only the grant's deadline ends it
                if st == "Granted" and forgotten and not self.quiesce.is_set():
                    continue
                if st == "Rejected" or (st == "Granted" and age > hold) or age > 30 or self.quiesce.is_set():
                    self.delete_nd(name)
            if len(mine) < 4 and not self.quiesce.is_set():
                k += 1
                name = f"autoscaler-{k:05d}"
                nodes = self.rnd.sample(self.nodes, self.rnd.choice([1, 1, 2]))
                if self.create_nd(name, "autoscaler", nodes, drain=False, retry=self.rnd.random() < 0.5,
                                  typ="scale-down", deadline_s=self.rnd.randint(3, 8)):
                    mine[name] = (time.monotonic(), self.rnd.uniform(2, 6))
            time.sleep(0.5)

    # -- churn -----------------------------------------------------------------------------
    def churn(self):
        """Pods created (to keep the count) and deleted, nodes NotReady and back, budgets edited,
        evictions of random pods through the API server by an operator."""
        target = len(self.pods)
        n = 0
        flapping = {}
        while not self.stop.is_set():
            n += 1
            live_pods = self.count_pods()
            # pods: a few deleted, and new ones where nodes were drained
            if self.rnd.random() < 0.5:
                victim = self.rnd.choice(self.pods)
                ns, name = victim.split("/", 1)
                code, _ = self.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}")
                self.counted("pod deleted", code, (200, 404))
            missing = target - live_pods if live_pods is not None else 0
            for _ in range(min(max(0, missing), 10)):
                self.create_pod()
            # a real eviction of a random pod through the API server (the webhook decides)
            victim = self.rnd.choice(self.pods)
            ns, name = victim.split("/", 1)
            code, _ = self.call("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction",
                                {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})
            self.counted("operator eviction", code, (201, 429, 404))
            with self.lock:
                self.ops[f"operator eviction {code}"] += 1
            # nodes going NotReady for a few seconds
            now = time.monotonic()
            for node, until in list(flapping.items()):
                if now > until:
                    self.set_ready(node, True)
                    flapping.pop(node)
            if n % 10 == 0 and len(flapping) < 3:
                node = self.rnd.choice(self.nodes)
                if node not in flapping:
                    self.set_ready(node, False)
                    flapping[node] = now + self.rnd.uniform(3, 10)
            # budgets edited
            if n % 25 == 0:
                if self.rnd.random() < 0.5:
                    p = self.rnd.randrange(POOLS)
                    code, _ = self.call("PATCH", f"{NDB_PATH}/pool-{p:02d}",
                                        {"spec": {"maxDisruptedNodes": self.rnd.choice([1, 2, 3, "20%", "30%"])}}, ctype=MERGE)
                    self.counted("NDB edited", code)
                else:
                    a = self.rnd.randrange(APPS)
                    tier = self.rnd.choice("ab")
                    code, _ = self.call("PATCH", f"{GROUP}/namespaces/app-{a:03d}/applicationdisruptionbudgets/tier-{tier}",
                                        {"spec": {"maxDisruptions": self.rnd.choice([1, 2, 3, "5%", "10%"])}}, ctype=MERGE)
                    self.counted("ADB edited", code)
            time.sleep(0.2)
        for node in flapping:
            self.set_ready(node, True)

    def count_pods(self):
        now = time.monotonic()
        if now - getattr(self, "_pods_at", 0) < 5:
            return self._pods_n
        code, out = self.call("GET", "/api/v1/pods?limit=1")
        if code != 200:
            return None
        self._pods_at = now
        self._pods_n = 1 + int(out.get("metadata", {}).get("remainingItemCount") or 0)
        return self._pods_n

    def create_pod(self):
        node = self.rnd.choice(self.nodes)
        a = self.rnd.randrange(APPS)
        with self.lock:
            self.ops["pod seq"] += 1
            name = f"churn-{self.ops['pod seq']:06d}"
        ns = f"app-{a:03d}"
        code, _ = self.call("POST", f"/api/v1/namespaces/{ns}/pods", pod_object(ns, name, node, self.rnd))
        self.counted("pod created", code, (201,))
        if code == 201:
            with self.lock:
                self.pods.append(f"{ns}/{name}")

    def set_ready(self, node, ready):
        code, _ = self.call("PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady" if ready else "KubeletNotReady"}]}},
            ctype=MERGE)
        self.counted("node Ready" if ready else "node NotReady", code)

    # -- faults ----------------------------------------------------------------------------
    def lease_holder(self, name):
        code, out = self.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/nodegate/leases/{name}")
        return (out.get("spec") or {}).get("holderIdentity") if code == 200 else None

    def fault(self, kind):
        ok = True
        if kind == "watch-drop":
            ok = self.api.control("drop-watches")[0] == 200
        elif kind == "gone-410":
            ok = self.api.control("compact")[0] == 200 and self.api.control("drop-watches")[0] == 200
        elif kind in ("conflict-409", "error-500"):
            code = 409 if kind == "conflict-409" else 500
            for method in ("PATCH", "PUT", "POST"):
                ok &= self.api.control("faults", {"path": "^/api/v1/(nodes|namespaces/[^/]+/pods)/|^/apis/nodegate.io/",
                                                  "method": method, "code": code, "count": 8})[0] == 200
        elif kind == "apiserver-restart":
            ok = self.api.control("restart", {"downSeconds": 2})[0] == 202
        elif kind == "gate-leader-kill":
            ok = self.kill_leader(self.serve, "nodegate-gate")
        elif kind == "drain-leader-kill":
            ok = self.kill_leader(self.drain, "nodegate-drain")
        elif kind == "hook-timeout":
            ok = self.hook_mode(self.rnd.choice(["hang", "down"]))
            threading.Timer(10, self.hook_mode, ("normal",)).start()
        elif kind == "cert-rotation":
            ok = self.rotate()
        with self.lock:
            self.faults[kind] += 1 if ok else 0
            if not ok:
                self.errors[f"fault {kind}"] += 1
        log(f"fault {kind}: {'done' if ok else 'not injected'}")
        return ok

    def kill_leader(self, group, lease):
        holder = self.lease_holder(lease)
        victim = next((p for p in group if p.identity == holder and p.proc.poll() is None), None)
        if victim is None:
            return False
        if victim.role == "serve":
            # out of the Service first, as a pod being deleted is; then killed without warning
            self.in_service[victim.slot] = False
            self.publish_endpoints()
            time.sleep(1.5)
        victim.kill()
        self.dead_since = time.monotonic()
        victim.start()   # a new pod: a new identity, so the other replica must take the lease over
        if victim.role == "serve":
            self.in_service[victim.slot] = True
            self.publish_endpoints()
        return True

    def hook_mode(self, mode):
        import http.client
        import ssl
        ctx = ssl.create_default_context(cafile=self.certs.ca)
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.hook_port, context=ctx, timeout=5)
            c.request("GET", f"/_mode/{mode}")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except OSError:
            return mode == "normal"  # after "down" the server comes back by itself

    def hook_stats(self):
        import http.client
        import ssl
        ctx = ssl.create_default_context(cafile=self.certs.ca)
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.hook_port, context=ctx, timeout=5)
            c.request("GET", "/_stats")
            out = json.loads(c.getresponse().read())
            c.close()
            return out
        except (OSError, ValueError):
            return {}

    def rotate(self):
        """A new serving certificate (same CA); both replicas must serve it within their reload
        interval, and the load must not notice."""
        import socket
        import ssl
        _, _, serial = self.certs.leaf("serving", dns=["nodegate.nodegate.svc"])

        def served(port):
            ctx = ssl.create_default_context(cafile=self.certs.ca)
            ctx.check_hostname = False
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    with ctx.wrap_socket(s) as t:
                        der = t.getpeercert(binary_form=True)
            except OSError:
                return None
            out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der,
                                 capture_output=True, timeout=10).stdout.decode()
            return out.strip().split("=")[-1].lower().lstrip("0")
        return all(wait_for(lambda p=p: served(p.port) == serial, 15, 0.5) for p in self.serve)

    def inject_faults(self, period):
        kinds = list(FAULTS)
        i = 0
        next_at = time.monotonic() + period / 2
        while not self.stop.is_set() and not self.quiesce.is_set():
            if time.monotonic() < next_at:
                time.sleep(0.2)
                continue
            if i % len(kinds) == 0:
                self.rnd.shuffle(kinds)
            try:
                ok = self.fault(kinds[i % len(kinds)])
            except Exception as e:  # noqa: BLE001  (a fault that cannot be injected is reported, not fatal)
                log(f"fault {kinds[i % len(kinds)]}: {e}")
                self.errors["fault error"] += 1
                ok = False
            if not ok:
                # not injected (no leader to kill while the lease changes hands, the API server
                # not answering): the same kind again shortly, so each still comes as often
                next_at = time.monotonic() + 5
                continue
            i += 1
            next_at += period
        self.api.control("faults", method="DELETE")

    def refresh_pods(self):
        """The pods that exist, every 30 s, for the load client to review evictions of."""
        while not self.stop.wait(30):
            names, cont = [], ""
            for _ in range(100):
                code, out = self.call("GET", "/api/v1/pods?limit=5000" + (f"&continue={cont}" if cont else ""))
                if code != 200:
                    names = None
                    break
                names += [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in out.get("items") or []]
                cont = (out.get("metadata") or {}).get("continue")
                if not cont:
                    break
            if names:
                path = os.path.join(self.tmp, "pods.json")
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    json.dump(names, f)
                os.replace(path + ".tmp", path)

    def sample_rss(self):
        while not self.stop.is_set():
            holders = {"serve": self.lease_holder("nodegate-gate"),
                       "drain": self.lease_holder("nodegate-drain")}
            for p in self.serve + self.drain:
                p.sample(holders[p.role] == p.identity)
            time.sleep(5)

    # -- the run ---------------------------------------------------------------------------
    def run(self):
        a = self.a
        seconds = a.minutes * 60
        period = min(40.0, seconds / (len(FAULTS) + 1))
        self.created_at = {}
        self.setup()
        self.start_observers()
        half = len(self.nodes) // 2
        threads = [threading.Thread(target=f, args=args, daemon=True) for f, args in (
            (self.poll_requests, ()), (self.maintenance, ("maintenance-a", self.nodes[:half], 8)),
            (self.maintenance, ("maintenance-b", self.nodes[half:], 8)), (self.autoscaler, ()),
            (self.churn, ()), (self.inject_faults, (period,)), (self.sample_rss, ()), (self.refresh_pods, ()))]
        self.t_start = time.time()
        for t in threads:
            t.start()
        log(f"soak running for {a.minutes} min: load {a.rate}/s, a fault every {period:.0f} s; work dir {self.tmp}")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(min(30, max(0.1, end - time.monotonic())))
            self.progress()
            for p in self.serve + self.drain:
                if p.proc.poll() is not None and p.proc.returncode != -signal.SIGKILL:
                    raise RuntimeError(f"{p.identity} exited with {p.proc.returncode}:\n{p.tail()}")
        self.t_end = time.time()
        log("run over: load stopped, requests deleted, waiting for every node to come back")
        self.load.send_signal(signal.SIGTERM)
        self.quiesce.set()
        self.hook_mode("normal")
        self.api.control("faults", method="DELETE")
        settled = wait_for(self.settled, 180, 1)
        self.stop.set()
        for t in threads:
            t.join(30)
        with open(self.stop_file, "w") as f:
            f.write("stop\n")
        self.load.wait(60)
        self.checker.wait(600)
        return self.report(settled)

    def settled(self):
        code, out = self.call("GET", ND_PATH)
        if code != 200 or out.get("items"):
            return False
        code, out = self.call("GET", "/api/v1/nodes")
        return code == 200 and not any(n["spec"].get("unschedulable") for n in out["items"])

    def progress(self):
        with self.lock:
            live = dict(self.live_nds)
        states = collections.Counter((o.get("status") or {}).get("state") or "new" for o in live.values())
        log(f"  requests {dict(states)}; faults {sum(self.faults.values())}; "
            f"pods created {self.ops['pod created']}, operator evictions {self.ops['operator eviction']}")

    def report(self, settled):
        with open(self.check_out, encoding="utf-8") as f:
            chk = json.load(f)
        with open(self.load_out, encoding="utf-8") as f:
            load = json.load(f)
        counts = chk["counts"]
        minutes = self.a.minutes
        need = max(1, (5 * minutes) // 30)
        rows = [("duration", f"{(self.t_end - self.t_start) / 60:.1f} min"),
                ("cluster", f"{self.a.nodes} nodes, {len(self.pods)} pods seen, {POOLS} NDBs, {2 * APPS} ADBs "
                            f"({APPS // 5} with health hooks)"),
                ("load held", f"{load['rate']:.1f} reviews/s of {load['target_rate']:.0f} ({load['sent']} reviews)"),
                ("admission latency", f"p50 {chk['admission_ms']['p50']} ms, p99 {chk['admission_ms']['p99']} ms, "
                                      f"max {chk['admission_ms']['max']} ms (limit {self.latency_limit:g} s)"),
                ("grants", counts.get("grants", 0)), ("drains (Ready=Drained)", counts.get("drains", 0)),
                ("rejections", counts.get("rejections", 0)),
                ("evictions through the API server", f"{counts.get('evictions', 0)} "
                                                     f"({counts.get('protected evictions', 0)} of protected pods)"),
                ("operator evictions", ", ".join(f"{k.split()[-1]}: {v}" for k, v in sorted(self.ops.items())
                                                 if k.startswith("operator eviction ")))]
        hs = self.hook_stats()
        rows.append(("health hook calls", f"{hs.get('calls')} (ok {hs.get('ok')}, slow {hs.get('slow')}, "
                                          f"failed {hs.get('failed')}, hung {hs.get('hung')}); most by one request "
                                          f"to one hook: {hs.get('most_per_request')} ({hs.get('most_asked')})"))
        rows += [(f"fault {k}", self.faults.get(k, 0)) for k in FAULTS]
        problems = []
        for k in FAULTS:
            if self.faults.get(k, 0) < need:
                problems.append(f"fault {k} injected {self.faults.get(k, 0)} times, fewer than {need}")
        if load["rate"] < 0.95 * load["target_rate"]:
            problems.append(f"load held {load['rate']}/s, under 95 % of {load['target_rate']}/s")
        if counts.get("grants", 0) == 0 or counts.get("drains", 0) == 0:
            problems.append("nothing was granted or drained")
        if not settled:
            problems.append("requests or cordons still there 180 s after the end")
        rows.append(("grants seen past their deadline (each must end)", len(self.expired)))
        for name, past in sorted(self.overdue.items()):
            problems.append(f"{name} still Granted {past} s past its status.expiresAt")
        if not self.expired:
            problems.append("no grant reached its deadline: the deadlines were not exercised")
        r, pr = rss_rows(self.serve + self.drain)
        rows += r
        problems += pr
        vk = chk["violations_by_kind"]
        rows.append(("violations", sum(vk.values())))
        for k in ("budget", "eviction", "admission", "cordon", "decide"):
            rows.append((f"  {k}", vk.get(k, 0)))
        rows.append(("harness errors (API calls refused, tolerated)", dict(self.errors) or 0))
        width = max(len(str(r[0])) for r in rows)
        print("\n| what | measured |\n|---|---|")
        for k, v in rows:
            print(f"| {str(k).ljust(width)} | {v} |")
        for v in chk["violations"][:30]:
            print(f"VIOLATION {v['kind']}: {v['message']}")
        for p in problems:
            print(f"PROBLEM: {p}")
        ok = not chk["violations"] and not problems
        print(f"\nsoak {'PASSED' if ok else 'FAILED'} ({self.tmp})")
        return 0 if ok else 1

    def cleanup(self):
        for p in self.serve + self.drain:
            p.stop()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        if self.api:
            self.api.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("minutes", nargs="?", type=float, default=30)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, journal) even on success")
    a = ap.parse_args()
    log(f"seed {a.seed}")
    s = Soak(a)
    rc = 1
    try:
        rc = s.run()
    finally:
        s.cleanup()
        if rc == 0 and not a.keep:
            shutil.rmtree(s.tmp, ignore_errors=True)
        else:
            print(f"work directory kept: {s.tmp}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
