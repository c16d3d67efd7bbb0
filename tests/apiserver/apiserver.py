#!/usr/bin/env python3
"""The nodegate test API server. See README.md in this folder.

  python3 tests/apiserver/apiserver.py --port 0 --state-dir DIR [--fixture FILE ...]
      [--generate nodes=N,pods-per-node=M,pvcs-per-node=K] [--kubelet immediate|grace]
      [--service-endpoint ns/name[:port]=127.0.0.1:PORT ...] [--history N]
      [--bookmark-interval S] [--watch-expired event|http] [--authorization rbac|always-allow]
      [--node-lifecycle on|off] [--aggregated-discovery on|off] [--persist] [--parent-pid PID]
      [--authz-log FILE] [--verbose]

Writes DIR/ca.crt, DIR/kubeconfig (admin), DIR/kubeconfig-<user>, DIR/kubeconfig-carol-cert
(x509 client certificate: user carol, group nodegate-devs), DIR/tokens.json,
DIR/port and, once serving, DIR/ready. Stops on SIGTERM/SIGINT. SIGHUP = restart
(listener closed and connections dropped for 1 s, state kept).
"""
import argparse
import json
import os
import signal
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ktestapi.api import Cluster, User            # noqa: E402
from ktestapi.certs import make_ca, make_leaf     # noqa: E402
from ktestapi.server import APIServer, AuthzLog, Faults  # noqa: E402
from ktestapi import fixtures                     # noqa: E402
from ktestapi import upstream                     # noqa: E402
from ktestapi.authz import Authorizer             # noqa: E402

USERS = [
    ("admin", ["system:masters"]),
    ("alice", []),
    ("bob", []),
    ("system:serviceaccount:nodegate:nodegate", ["system:serviceaccounts", "system:serviceaccounts:nodegate"]),
    ("system:serviceaccount:kube-system:eviction-controller", ["system:serviceaccounts",
                                                                "system:serviceaccounts:kube-system"]),
]


def file_name(user):
    if user == "admin":
        return "kubeconfig"
    if user.startswith("system:serviceaccount:"):
        _, _, ns, name = user.split(":")
        return "kubeconfig-sa-%s-%s" % (ns, name)
    return "kubeconfig-" + user


def write_kubeconfig(path, server, ca, user, token=None, cert=None):
    import base64

    def b64(p):
        with open(p, "rb") as f:
            return base64.b64encode(f.read()).decode()
    ca_data = b64(ca)
    cred = {"token": token} if token else {"client-certificate-data": b64(cert[0]), "client-key-data": b64(cert[1])}
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "ktestapi",
           "clusters": [{"name": "ktestapi", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
           "users": [{"name": user, "user": cred}],
           "contexts": [{"name": "ktestapi", "context": {"cluster": "ktestapi", "user": user, "namespace": "default"}}],
           "preferences": {}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=1)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _alive(pid):
    """True while process `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--fixture", action="append", default=[])
    ap.add_argument("--generate", default="")
    ap.add_argument("--kubelet", choices=["immediate", "grace"], default="immediate")
    ap.add_argument("--service-endpoint", action="append", default=[])
    ap.add_argument("--webhook-client-cert", default="",
                    help="CERT:KEY (PEM files) presented to webhooks, like the client certificate "
                         "of kube-apiserver's admission configuration")
    ap.add_argument("--history", type=int, default=20000, help="watch history window (events)")
    ap.add_argument("--bookmark-interval", type=float, default=5.0)
    ap.add_argument("--watch-expired", choices=["event", "http"], default="event")
    ap.add_argument("--watch-list", choices=["on", "off"], default="on",
                    help="stream lists as watches with sendInitialEvents (the WatchList feature, on by default "
                         "since Kubernetes 1.32); off answers them 422 as a server without the feature does")
    ap.add_argument("--authorization", choices=["rbac", "always-allow"], default="rbac",
                    help="RBAC (default, like kube-apiserver) or allow every authenticated request")
    ap.add_argument("--authz-log", default=os.environ.get("KTESTAPI_AUTHZ_LOG", ""),
                    help="append one JSON line per authorization decision (user, verb, apiGroup, resource, "
                         "subresource, namespace, name, allowed) to this file; default $KTESTAPI_AUTHZ_LOG")
    ap.add_argument("--journal", default="",
                    help="append one JSON line per committed write to this file: rv, t (wall time), resource, "
                         "type, by (user, verb, path; null for the server's own controllers) and the object "
                         "as stored; it starts with every object present at start as type INITIAL")
    ap.add_argument("--node-lifecycle", choices=["on", "off"], default="on",
                    help="taint nodes by condition (unschedulable, not-ready, unreachable) like the node lifecycle controller")
    ap.add_argument("--persist", action="store_true",
                    help="save all objects to DIR/state.json on exit and load them at start (if present)")
    ap.add_argument("--aggregated-discovery", choices=["on", "off"], default="on",
                    help="serve apidiscovery.k8s.io/v2 to clients that ask for it (off: legacy documents only)")
    ap.add_argument("--parent-pid", type=int, default=0,
                    help="exit when this process is gone (test harnesses pass their pid so that a killed "
                         "test run leaves no server behind)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    try:
        upstream.load()
    except upstream.Missing as e:
        sys.stderr.write("apiserver: %s\n" % e)
        return 2

    d = os.path.abspath(a.state_dir)
    os.makedirs(d, exist_ok=True)
    for f in ("ready", "port"):
        try:
            os.unlink(os.path.join(d, f))
        except FileNotFoundError:
            pass
    ca_crt, ca_key = make_ca(d)
    crt, key = make_leaf(d, "apiserver", ca_crt, ca_key,
                         dns=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
                         ips=["127.0.0.1"], cn="kube-apiserver")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(crt, key)
    ctx.verify_mode = ssl.CERT_OPTIONAL        # x509 client-certificate authentication
    ctx.load_verify_locations(ca_crt)
    carol = make_leaf(d, "client-carol", ca_crt, ca_key, dns=(), ips=(), cn="carol", orgs=("nodegate-devs",))
    ctx.set_alpn_protocols(["http/1.1"])

    tok_path = os.path.join(d, "tokens.json")
    tokens = {}
    if os.path.exists(tok_path):
        with open(tok_path) as f:
            tokens = json.load(f)
    users = {}
    for name, groups in USERS:
        t = tokens.get(name) or os.urandom(16).hex()
        tokens[name] = t
        users[t] = User(name, groups, t)
    with open(tok_path, "w") as f:
        json.dump(tokens, f, indent=1)

    cluster = Cluster(kubelet=a.kubelet, history=a.history, node_lifecycle=a.node_lifecycle == "on")
    for se in a.service_endpoint:
        svc, _, addr = se.partition("=")
        h, _, p = addr.rpartition(":")
        if h not in ("127.0.0.1", "localhost"):
            ap.error("--service-endpoint must point at 127.0.0.1")
        cluster.admission.service_endpoints[svc] = (h, int(p))
    if a.webhook_client_cert:
        cert, _, key = a.webhook_client_cert.partition(":")
        cluster.admission.client_cert = (cert, key)
    t0 = time.monotonic()
    state_file = os.path.join(d, "state.json")
    if a.persist and os.path.exists(state_file):
        fixtures.restore(cluster, state_file)
    if a.fixture:
        fixtures.load(cluster, a.fixture)
    if a.generate:
        fixtures.generate(cluster, a.generate)
    if a.journal:
        cluster.store.open_journal(a.journal)
    if a.fixture or a.generate:
        print("ktestapi: loaded fixtures in %.1fs" % (time.monotonic() - t0), file=sys.stderr)

    options = {"bookmark_interval": a.bookmark_interval, "watch_expired": a.watch_expired,
               "watch_list": a.watch_list == "on",
               "verbose": a.verbose, "faults": Faults(),
               "authorizer": Authorizer(cluster.store) if a.authorization == "rbac" else None,
               "aggregated_discovery": a.aggregated_discovery == "on",
               "authz_log": AuthzLog(a.authz_log) if a.authz_log else None}
    state = {"server": APIServer(("127.0.0.1", a.port), cluster, ctx, users, options)}
    port = state["server"].server_address[1]
    server_url = "https://127.0.0.1:%d" % port
    for name, _ in USERS:
        write_kubeconfig(os.path.join(d, file_name(name)), server_url, ca_crt, name, tokens[name])
    write_kubeconfig(os.path.join(d, "kubeconfig-carol-cert"), server_url, ca_crt, "carol", cert=carol)

    stop = threading.Event()
    lock = threading.Lock()

    def serve(srv):
        srv.serve_forever(poll_interval=0.2)

    def restart(down):
        """Close the listener and every connection, wait `down` seconds, listen again."""
        with lock:
            old = state["server"]
            cluster.store.drop_watches()
            old.shutdown()
            old.server_close()
            old.close_all_connections()
            time.sleep(max(0.0, min(down, 60.0)))
            for _ in range(50):
                try:
                    state["server"] = APIServer(("127.0.0.1", port), cluster, ctx, users, options)
                    break
                except OSError:
                    time.sleep(0.1)
            threading.Thread(target=serve, args=(state["server"],), daemon=True).start()

    options["restart_hook"] = restart
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: threading.Thread(target=restart, args=(1.0,), daemon=True).start())
    cluster.start()
    threading.Thread(target=serve, args=(state["server"],), daemon=True).start()
    with open(os.path.join(d, "port"), "w") as f:
        f.write("%d\n" % port)
    with open(os.path.join(d, "ready"), "w") as f:
        f.write(server_url + "\n")
    print("ktestapi: serving on %s (state dir %s)" % (server_url, d), file=sys.stderr, flush=True)
    while not stop.wait(0.5):
        if a.parent_pid and not _alive(a.parent_pid):
            print("ktestapi: parent %d is gone, exiting" % a.parent_pid, file=sys.stderr)
            break
    cluster.stop.set()
    if a.persist:
        from ktestapi.store import save
        save(cluster.store, state_file)
    cluster.store.closed = True
    cluster.store.drop_watches()
    from ktestapi import cel
    cel.process().close()   # the CEL evaluator ends with the server
    with lock:
        state["server"].shutdown()
        state["server"].server_close()
        state["server"].close_all_connections()
    for f in ("ready",):
        try:
            os.unlink(os.path.join(d, f))
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
