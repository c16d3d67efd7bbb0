#!/usr/bin/env python3
"""A synthetic cluster feed for benchmarks at sizes the test API server cannot list quickly.

Plain HTTP on loopback. Nodes and pods (GET /api/v1/nodes, /api/v1/pods, and single objects)
are synthesized: NODES nodes x PODS pods per node, named and labelled as the test API server's
`--generate nodes=N,pods-per-node=M` names them (node-00001.., pool-<n % 10>, zones; pods
<node>-p<j> in bench-<j % 10>), each object rendered to bytes once at start; node_name(),
node_pool() and node_zone() give those names and labels to benchmarks. --app-pods adds pods of
one's own (namespace, name, node, labels): an application on chosen nodes, for a budget to
select. Lists page as the API server does (`limit`, `continue`, metadata.resourceVersion,
remainingItemCount; a typed list carries kind/apiVersion, its items do not). Watches stay open
until their timeoutSeconds with a BOOKMARK every --bookmark-seconds when
allowWatchBookmarks=true; the WatchList form
(`watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`)
sends every object as an ADDED event, then a BOOKMARK annotated k8s.io/initial-events-end at
the list's resourceVersion, then goes on as a watch. --node-heartbeats R sends, on every node
watch, R MODIFIED events a second, node after node, each at a resourceVersion of its own and
otherwise unchanged: kubelets posting their status (every 5 minutes each, nodes / 300 a
second). --no-watchlist answers 422 to any sendInitialEvents request (the server without the
feature), so both start-up paths can be measured against the same feed.

Everything else (nodegate's resources, leases, events, RBAC reviews, discovery, every write,
and PVs/PVCs) is proxied to a real test API server (--upstream), watches streamed through
chunk by chunk. Requests need a bearer token the upstream knows (its tokens.json).

Run by hand: bench/feed.py --nodes N --pods-per-node M --upstream-state DIR --state DIR
(writes DIR/port and kubeconfigs); from Python: Feed(nodes, per).start() also starts the
upstream test API server with nodegate's CRDs and RBAC, and quacks like ServerProcess
(state, kubeconfig, tokens, connection(), api(), watch()) for bench/benchlib.py."""
import argparse
import base64
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

RV = 1000            # the synthesized lists' resourceVersion
MAX_WATCH_S = 3600   # a watch without timeoutSeconds, or with a larger one, ends after this
IO_TIMEOUT_S = 120   # a client or upstream read/write that stalls this long ends its connection
UP_TIMEOUT_S = 60    # a proxied (non-watch) request's upstream deadline
NAMESPACES = 10
NAMESPACED = object()  # a namespace's pod list: not served (nodegate lists across namespaces)
TS = "2026-11-20T10:00:00Z"

NODE = ('{"metadata":{"name":"%(n)s","uid":"00000000-0000-4000-8000-%(i)012d","creationTimestamp":"' + TS + '",'
        '"resourceVersion":"%(rv)d","labels":{"kubernetes.io/hostname":"%(n)s","kubernetes.io/os":"linux",'
        '"topology.kubernetes.io/zone":"%(z)s","pool":"%(p)s"}},"spec":{},'
        '"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady",'
        '"lastHeartbeatTime":"' + TS + '","lastTransitionTime":"' + TS + '"}],'
        '"addresses":[{"type":"InternalIP","address":"10.%(a)d.%(b)d.%(c)d"},{"type":"Hostname","address":"%(n)s"}],'
        '"nodeInfo":{"kubeletVersion":"v1.32.0","bootID":"b0000000-0000-4000-8000-%(i)012d","osImage":"Linux",'
        '"kernelVersion":"6.1","containerRuntimeVersion":"containerd://1.7","architecture":"amd64",'
        '"operatingSystem":"linux"}}}')
POD = ('{"metadata":{"name":"%(n)s-p%(j)d","namespace":"bench-%(ns)d","uid":"10000000-0000-4000-8000-%(u)012d",'
       '"creationTimestamp":"' + TS + '","resourceVersion":"%(rv)d","labels":{"app":"bench","slot":"%(j)d"},'
       '"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"bench",'
       '"uid":"20000000-0000-4000-8000-%(ns)012d","controller":true,"blockOwnerDeletion":true}]},'
       '"spec":{"nodeName":"%(n)s","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],'
       '"restartPolicy":"Always","terminationGracePeriodSeconds":30,"serviceAccountName":"default"},'
       '"status":{"phase":"Running","podIP":"10.244.%(a)d.%(b)d","conditions":[{"type":"Ready","status":"True"}],'
       '"containerStatuses":[{"name":"c","ready":true,"restartCount":0,"state":{"running":{"startedAt":"' + TS
       + '"}}}]}}')


class Kind:
    """One synthesized resource: its items as bytes (no kind/apiVersion, as in a typed list)."""

    def __init__(self, kind, items, names):
        self.kind = kind
        self.items = items
        self.index = names  # name (namespace/name for pods) -> position
        self.head = ('{"kind":"%s","apiVersion":"v1",' % kind).encode()       # one object
        self.list_head = ('{"kind":"%sList","apiVersion":"v1",' % kind).encode()  # a typed list


# --- the synthesized cluster's names and labels (benchmarks compute them from a node's name) ---
POOLS = 10
ZONES = "abc"
POOL_LABEL = "pool"
ZONE_LABEL = "topology.kubernetes.io/zone"


def node_name(i):
    """The name of node @i (1..NODES)."""
    return "node-%05d" % i


def node_index(name):
    """The i of node_name(i)."""
    return int(name.rsplit("-", 1)[1])


def node_pool(i):
    """Node @i's `pool` label."""
    return "pool-%d" % (i % POOLS)


def node_zone(i):
    """Node @i's topology.kubernetes.io/zone label."""
    return "zone-" + ZONES[i % len(ZONES)]


def app_pod(k, p):
    """Extra pod @k (--app-pods): {namespace, name, node, labels}, Running and Ready."""
    obj = {"metadata": {"name": p["name"], "namespace": p["namespace"], "uid": "30000000-0000-4000-8000-%012d" % k,
                        "creationTimestamp": TS, "resourceVersion": str(RV), "labels": p.get("labels") or {}},
           "spec": {"nodeName": p["node"], "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    "restartPolicy": "Always", "serviceAccountName": "default"},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                             "state": {"running": {"startedAt": TS}}}]}}
    return json.dumps(obj, separators=(",", ":")).encode()


def node_bytes(i, rv):
    """Node number @i (1..) at resourceVersion @rv, as a list item."""
    return (NODE % {"n": node_name(i), "i": i, "rv": rv, "z": node_zone(i), "p": node_pool(i),
                    "a": i >> 16, "b": (i >> 8) & 255, "c": i & 255}).encode()


def build(nodes, per, app_pods=()):
    t0 = time.monotonic()
    nitems, nidx, pitems, pidx = [], {}, [], {}
    for i in range(1, nodes + 1):
        n = node_name(i)
        nidx[n] = len(nitems)
        nitems.append(node_bytes(i, RV))
        for j in range(per):
            ns = j % NAMESPACES
            pidx["bench-%d/%s-p%d" % (ns, n, j)] = len(pitems)
            pitems.append((POD % {"n": n, "j": j, "ns": ns, "u": i * 1000 + j, "rv": RV,
                                  "a": i % 250, "b": j % 250}).encode())
    for k, p in enumerate(app_pods):
        pidx[p["namespace"] + "/" + p["name"]] = len(pitems)
        pitems.append(app_pod(k, p))
    kinds = {"nodes": Kind("Node", nitems, nidx), "pods": Kind("Pod", pitems, pidx)}
    size = sum(len(b) for k in kinds.values() for b in k.items)
    print(f"feed: {nodes} nodes, {len(pitems)} pods rendered ({size / 1e6:.0f} MB) in "
          f"{time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    return kinds


def status(code, reason, message):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code}).encode()


def encode_continue(start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": RV, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(tok):
    try:
        d = json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)))
        start = int(d["start"])
        if d.get("rv") != RV or start < 0:
            return None
        return start
    except (ValueError, KeyError, TypeError):
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IO_TIMEOUT_S
    disable_nagle_algorithm = True  # a header write then a body write must not wait for an ACK
    server_version = "nodegate-bench-feed"

    def log_message(self, *args):  # quiet: one line per request would cost more than a page
        pass

    # --- plumbing ------------------------------------------------------------------------
    def send_bytes(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_parts(self, parts):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(sum(len(p) for p in parts)))
        self.end_headers()
        self.wfile.write(b"".join(parts))

    def start_chunked(self, code=200, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > 16 << 20:
            raise ValueError("request body too large")
        return self.rfile.read(n) if n else None

    # --- dispatch ------------------------------------------------------------------------
    def handle_any(self, method):
        srv = self.server
        tok = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if tok not in srv.tokens:
            self.body()
            self.send_bytes(401, status(401, "Unauthorized", "Unauthorized"))
            return
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        if q.get("sendInitialEvents") == "true" and srv.no_watchlist:
            self.body()
            self.send_bytes(422, status(422, "Invalid", "sendInitialEvents: Forbidden: sendInitialEvents is "
                                        "forbidden for watch unless the WatchList feature gate is enabled"))
            return
        kind, name = self.synthesized(u.path)
        if kind is None:
            self.proxy(method, q)
            return
        self.body()
        if method != "GET":
            self.send_bytes(405, status(405, "MethodNotAllowed", "the bench feed's nodes and pods are read-only"))
        elif name is NAMESPACED:
            self.send_bytes(400, status(400, "BadRequest", "the bench feed lists pods across namespaces only"))
        elif name is not None:
            i = kind.index.get(name)
            if i is None:
                self.send_bytes(404, status(404, "NotFound", f'{kind.kind.lower()}s "{name}" not found'))
            else:
                self.send_parts([kind.head, kind.items[i][1:]])
        elif "labelSelector" in q or "fieldSelector" in q:
            self.send_bytes(400, status(400, "BadRequest", "the bench feed does not filter synthesized lists"))
        elif q.get("watch") in ("1", "true"):
            self.watch(kind, q)
        else:
            self.list(kind, q)

    def synthesized(self, path):
        """(Kind, object name or None) when @path is a synthesized node or pod; (None, None)."""
        k = self.server.kinds
        if path == "/api/v1/nodes":
            return k["nodes"], None
        if path == "/api/v1/pods":
            return k["pods"], None
        p = path.split("/")
        if len(p) == 5 and p[:4] == ["", "api", "v1", "nodes"]:
            return k["nodes"], p[4]
        if len(p) == 7 and p[:4] == ["", "api", "v1", "namespaces"] and p[5] == "pods":
            return k["pods"], p[4] + "/" + p[6]
        if len(p) == 6 and p[:4] == ["", "api", "v1", "namespaces"] and p[5] == "pods":
            return k["pods"], NAMESPACED
        return None, None

    def list(self, kind, q):
        items = kind.items
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            self.send_bytes(400, status(400, "BadRequest", "limit: not an integer"))
            return
        start = 0
        if q.get("continue"):
            start = decode_continue(q["continue"])
            if start is None:
                self.send_bytes(410, status(410, "Expired", "continue: the token is not valid or has expired"))
                return
        end = len(items) if limit <= 0 else min(len(items), start + limit)
        meta = {"resourceVersion": str(RV)}
        if end < len(items):
            meta["continue"] = encode_continue(end)
            meta["remainingItemCount"] = len(items) - end
        parts = [kind.list_head, b'"metadata":', json.dumps(meta, separators=(",", ":")).encode(), b',"items":[']
        sep = b""
        for b in items[start:end]:
            parts.append(sep)
            parts.append(b)
            sep = b","
        parts.append(b"]}")
        self.send_parts(parts)

    def watch(self, kind, q):
        srv = self.server
        initial = q.get("sendInitialEvents") == "true"
        bookmarks = q.get("allowWatchBookmarks") == "true"
        if initial and (not bookmarks or q.get("resourceVersionMatch") != "NotOlderThan"):
            self.send_bytes(422, status(422, "Invalid", "sendInitialEvents requires allowWatchBookmarks=true "
                                        "and resourceVersionMatch=NotOlderThan"))
            return
        try:
            secs = int(q.get("timeoutSeconds") or MAX_WATCH_S)
        except ValueError:
            secs = MAX_WATCH_S
        deadline = time.monotonic() + max(1, min(secs, MAX_WATCH_S))
        self.start_chunked(headers=[("Content-Type", "application/json")])
        obj_head = b'{"type":"ADDED","object":' + kind.head
        mark = ('{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"v1","metadata":{"resourceVersion":"%%d"%%s}}}\n'
                % kind.kind)
        beats = srv.heartbeats if kind.kind == "Node" else 0
        rv = RV
        try:
            if initial:
                batch = []
                for b in kind.items:
                    batch.append(obj_head)
                    batch.append(b[1:])
                    batch.append(b"}\n")
                    if len(batch) >= 3 * 256:
                        self.chunk(b"".join(batch))
                        batch = []
                self.chunk(b"".join(batch))
                self.chunk((mark % (RV, ',"annotations":{"k8s.io/initial-events-end":"true"}')).encode())
            # Kubelet status heartbeats: node after node MODIFIED at @beats a second, each with
            # a resourceVersion of its own (nothing else changes, as a heartbeat changes nothing
            # a budget reads).
            t0, sent, last_mark = time.monotonic(), 0, time.monotonic()
            while not srv.stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if srv.stopping.wait(min(left, srv.bookmark_s, 0.1 if beats else srv.bookmark_s)):
                    break
                due = int((time.monotonic() - t0) * beats) - sent
                if due > 0:
                    batch = []
                    for _ in range(due):
                        rv += 1
                        batch.append(b'{"type":"MODIFIED","object":' + kind.head
                                     + node_bytes(1 + sent % len(kind.items), rv)[1:] + b"}\n")
                        sent += 1
                    self.chunk(b"".join(batch))
                if bookmarks and time.monotonic() < deadline and time.monotonic() - last_mark >= srv.bookmark_s - 0.05:
                    self.chunk((mark % (rv, "")).encode())
                    last_mark = time.monotonic()
            self.end_chunked()
        except OSError:
            self.close_connection = True

    # --- proxy ---------------------------------------------------------------------------
    def proxy(self, method, q):
        srv = self.server
        try:
            body = self.body()
        except ValueError as e:
            self.send_bytes(413, status(413, "RequestEntityTooLarge", str(e)))
            self.close_connection = True
            return
        watch = q.get("watch") in ("1", "true")
        timeout = UP_TIMEOUT_S
        if watch:
            try:
                timeout = min(int(q.get("timeoutSeconds") or MAX_WATCH_S), MAX_WATCH_S) + 30
            except ValueError:
                timeout = MAX_WATCH_S
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "connection", "keep-alive", "transfer-encoding", "content-length")}
        # A watch gets its own upstream connection; other requests reuse this client
        # connection's (a TLS handshake per write would be most of a proxied write's cost).
        up = None if watch else getattr(self, "upstream", None)
        try:
            if up is None:
                up = http.client.HTTPSConnection("127.0.0.1", srv.upstream_port, context=srv.upstream_ctx,
                                                 timeout=timeout)
                up.connect()
                up.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                up.request(method, self.path, body=body, headers=headers)
                r = up.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if watch or up is not getattr(self, "upstream", None):
                    raise
                # the reused connection had been closed by the upstream while idle: once more
                up.close()
                self.upstream = None
                up = http.client.HTTPSConnection("127.0.0.1", srv.upstream_port, context=srv.upstream_ctx,
                                                 timeout=timeout)
                up.connect()
                up.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                up.request(method, self.path, body=body, headers=headers)
                r = up.getresponse()
            hop = ("connection", "keep-alive", "transfer-encoding", "content-length")
            fwd = [(k, v) for k, v in r.getheaders() if k.lower() not in hop]
            if r.chunked or watch:
                self.start_chunked(r.status, fwd)
                while True:
                    data = r.read1(65536)
                    if not data:
                        break
                    self.chunk(data)
                self.end_chunked()
            else:
                data = r.read()
                self.send_response(r.status)
                for k, v in fwd:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            if not watch and not r.will_close:
                self.upstream, up = up, None
        except (OSError, http.client.HTTPException) as e:
            self.close_connection = True
            try:
                self.send_bytes(502, status(502, "InternalError", f"bench feed: upstream: {e}"))
            except OSError:
                pass
        finally:
            if up is not None:
                up.close()
                if getattr(self, "upstream", None) is up:
                    self.upstream = None

    def finish(self):
        up = getattr(self, "upstream", None)
        if up is not None:
            up.close()
        super().finish()

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")


class FeedServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def kubeconfig(path, port, user, token):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "feed",
                   "clusters": [{"name": "feed", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                   "users": [{"name": user, "user": {"token": token}}],
                   "contexts": [{"name": "feed", "context": {"cluster": "feed", "user": user,
                                                             "namespace": "default"}}]}, f)


def serve(a):
    with open(os.path.join(a.upstream_state, "port"), encoding="utf-8") as f:
        up_port = int(f.read())
    with open(os.path.join(a.upstream_state, "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    app_pods = []
    if a.app_pods:
        with open(a.app_pods, encoding="utf-8") as f:
            app_pods = json.load(f)
    kinds = build(a.nodes, a.pods_per_node, app_pods)
    srv = FeedServer(("127.0.0.1", a.port), Handler)
    srv.kinds = kinds
    srv.tokens = set(tokens.values())
    srv.no_watchlist = a.no_watchlist
    srv.bookmark_s = a.bookmark_seconds
    srv.heartbeats = a.node_heartbeats
    srv.stopping = threading.Event()
    srv.upstream_port = up_port
    srv.upstream_ctx = ssl.create_default_context(cafile=os.path.join(a.upstream_state, "ca.crt"))
    port = srv.server_address[1]
    os.makedirs(a.state, exist_ok=True)
    kubeconfig(os.path.join(a.state, "kubeconfig"), port, "admin", tokens["admin"])
    for user, tok in tokens.items():
        if user.startswith("system:serviceaccount:"):
            kubeconfig(os.path.join(a.state, "kubeconfig-sa-" + user.split(":", 2)[2].replace(":", "-")),
                       port, user, tok)
    with open(os.path.join(a.state, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump(tokens, f)

    def stop(*_):
        srv.stopping.set()
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    tmp = os.path.join(a.state, "port.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(port))
    os.replace(tmp, os.path.join(a.state, "port"))
    srv.serve_forever(poll_interval=0.2)
    srv.server_close()


class Feed:
    """The feed and its upstream test API server (nodegate's CRDs and RBAC), as one client-side
    object with ServerProcess' attributes; start() returns once both answer."""

    def __init__(self, nodes, per, no_watchlist=False, bookmark_seconds=30, start_timeout=900,
                 node_heartbeats=0, app_pods=()):
        self.nodes, self.per = nodes, per
        self.node_heartbeats = node_heartbeats
        self.app_pods = list(app_pods)
        self.no_watchlist = no_watchlist
        self.bookmark_seconds = bookmark_seconds
        self.start_timeout = start_timeout
        self.proc = None
        self.upstream = None
        self.dir = None

    def start(self):
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
        sys.path.insert(0, os.path.join(root, "tests", "apiserver"))
        from ktestapi.testing import ServerProcess
        crds = os.path.join(root, "manifests", "crds")
        fixtures = [os.path.join(root, "manifests", "rbac", "rbac.json")] + [
            os.path.join(crds, f) for f in ("nodedisruptions.json", "applicationdisruptionbudgets.json",
                                            "nodedisruptionbudgets.json", "nodegateconfigs.json")]
        self.upstream = ServerProcess(fixtures=fixtures, start_timeout=120)
        self.upstream.start()
        self.dir = tempfile.mkdtemp(prefix="ng-feed-")
        self.state = os.path.join(self.dir, "state")
        args = [sys.executable, os.path.abspath(__file__), "--nodes", str(self.nodes), "--pods-per-node",
                str(self.per), "--upstream-state", self.upstream.state, "--state", self.state,
                "--bookmark-seconds", str(self.bookmark_seconds),
                "--node-heartbeats", str(self.node_heartbeats)] + (["--no-watchlist"] if self.no_watchlist else [])
        if self.app_pods:
            path = os.path.join(self.dir, "app-pods.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.app_pods, f)
            args += ["--app-pods", path]
        self.log = open(os.path.join(self.dir, "feed.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        port_file = os.path.join(self.state, "port")
        deadline = time.monotonic() + self.start_timeout
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("bench feed did not start: " + self.read_log())
            time.sleep(0.05)
        with open(port_file, encoding="utf-8") as f:
            self.port = int(f.read())
        with open(os.path.join(self.state, "tokens.json"), encoding="utf-8") as f:
            self.tokens = json.load(f)
        self.kubeconfig = os.path.join(self.state, "kubeconfig")
        return self

    def read_log(self):
        try:
            with open(os.path.join(self.dir, "feed.log"), "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            import benchlib  # beside this file; only the client side of the feed needs it
            benchlib.terminate(self.proc)
        if self.upstream is not None:
            self.upstream.stop(audit=False)
        if self.dir:
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- clients (as ServerProcess) ---------------------------------------------------------
    def connection(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def api(self, method, path, body=None, user="admin", timeout=30):
        conn = self.connection(timeout)
        h = {"Accept": "application/json", "Authorization": "Bearer " + self.tokens[user]}
        if body is not None:
            h["Content-Type"] = "application/json"
            body = json.dumps(body)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
        finally:
            conn.close()
        try:
            return r.status, (json.loads(data) if data else None), r
        except ValueError:
            return r.status, data, r

    def watch(self, path, user="admin", timeout=15):
        from ktestapi.testing import WatchStream
        conn = self.connection(timeout)
        conn.request("GET", path, headers={"Authorization": "Bearer " + self.tokens[user],
                                           "Accept": "application/json"})
        return WatchStream(conn, conn.getresponse())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--pods-per-node", type=int, default=0)
    p.add_argument("--upstream-state", required=True, help="the test API server's --state-dir")
    p.add_argument("--state", required=True, help="where the feed writes port, tokens.json and kubeconfigs")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--no-watchlist", action="store_true", help="answer 422 to sendInitialEvents")
    p.add_argument("--bookmark-seconds", type=float, default=30)
    p.add_argument("--node-heartbeats", type=float, default=0,
                   help="MODIFIED node events a second on every node watch, node after node, as kubelets "
                        "posting their status (a real cluster: nodes / 300)")
    p.add_argument("--app-pods", help="a JSON file: a list of extra pods {namespace, name, node, labels}")
    a = p.parse_args()
    if a.nodes < 0 or a.nodes > 1_000_000 or a.pods_per_node < 0 or a.pods_per_node > 999:
        p.error("--nodes must be 0..1000000 and --pods-per-node 0..999")
    socket.setdefaulttimeout(IO_TIMEOUT_S)
    serve(a)


if __name__ == "__main__":
    main()
