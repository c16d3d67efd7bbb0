#!/usr/bin/env python3
"""B1 and B2: the eviction webhook's throughput and its latency at half of that rate, each
beside nginx serving nodegate's own answer bytes over the same certificate in the same run.

The cluster (written as a snapshot file, served with `nodegate serve --snapshot`): 5,000
nodes, 150,000 pods of 4,000 apps, 2,000 ApplicationDisruptionBudgets (one per protected app,
maxDisruptions 1) and one NodeDisruption Granted for five nodes (--quick: a tenth of it). The
load mixes four eviction reviews, each checked against its expected answer first:
  (a) a protected pod on a node without a grant   -> denied (429)
  (b) a protected pod on a granted node           -> allowed
  (c) a pod no budget protects                    -> allowed
  (d) a pod not in the cache                      -> allowed (docs/eviction-webhook.md)

B1: wrk -t2 -cC (C = 16, 64) against nodegate, then nginx, --runs times: req/s and ratio; once
with the four reviews in turn (the mix) and once with every review (a), a denial (429, its
message and log line: what a mass drain of protected pods sends). nginx is tuned as its users
tune it for this: one listening socket per worker (`reuseport`, so the kernel spreads the
connections evenly over the two workers), as many workers as cores, keep-alive without a limit,
no access log.
B2: bench-loadgen at a fixed rate of half nodegate's B1 median at 16 connections, open loop
(latency from each request's scheduled time), 16 connections: p50, p99, p99.9, and nginx at the
same rate. nodegate, nginx and the load clients share the machine's cores (no pinning).

Builds nothing: give it a release nodegate and bench-loadgen. Needs wrk, nginx and openssl.
Progress on stderr; the last stdout line is the JSON result (docs/benchmarks.md).
Usage: bench/webhook.py --nodegate PATH --loadgen PATH [--runs N] [--seconds S] [--quick]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

PATH = "/validate/eviction?timeout=10s"
B1_TARGET = 0.9
B2_P99_TARGET_US = 1000.0


def log(msg):
    print(f"webhook: {msg}", file=sys.stderr, flush=True)


def fail(msg):
    log(f"error: {msg}")
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_cluster(path, nodes, pods, apps, budgets, granted):
    """A List as `kubectl get -o json` prints it, written as text directly (json.dumps of
    150,000 dicts would be most of the run's setup time). Pod i runs on node i // per-node,
    belongs to app i % apps in namespace team-(app % 50); apps below `budgets` are protected."""
    per = pods // nodes
    out = []
    for n in range(nodes):
        out.append(
            '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-%05d","uid":'
            '"00000000-0000-4000-8000-%012d","labels":{"kubernetes.io/hostname":"node-%05d",'
            '"topology.kubernetes.io/zone":"zone-%d","pool":"pool-%d"}},"status":{"conditions":'
            '[{"type":"Ready","status":"True"}]}}' % (n, n, n, n % 3, n % 10))
    for i in range(pods):
        app = i % apps
        out.append(
            '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"app-%d-%06d","namespace":'
            '"team-%d","uid":"10000000-0000-4000-8000-%012d","labels":{"app":"app-%d",'
            '"pod-template-hash":"6d4b75cb6d","tier":"backend"},"ownerReferences":[{"apiVersion":'
            '"apps/v1","kind":"ReplicaSet","name":"app-%d-6d4b75cb6d","uid":'
            '"20000000-0000-4000-8000-%012d","controller":true}]},"spec":{"nodeName":"node-%05d",'
            '"containers":[{"name":"main","image":"registry.example.com/app-%d:2.4.1",'
            '"resources":{"requests":{"cpu":"250m","memory":"256Mi"}}}]},'
            '"status":{"phase":"Running"}}'
            % (app, i, app % 50, i, app, app, app, min(i // per, nodes - 1), app))
    for b in range(budgets):
        out.append(
            '{"apiVersion":"nodegate.io/v1alpha1","kind":"ApplicationDisruptionBudget",'
            '"metadata":{"name":"app-%d","namespace":"team-%d"},"spec":{"podSelector":'
            '{"matchLabels":{"app":"app-%d"}},"maxDisruptions":1}}' % (b, b % 50, b))
    names = json.dumps(["node-%05d" % n for n in range(granted)])
    out.append(
        '{"apiVersion":"nodegate.io/v1alpha1","kind":"NodeDisruption","metadata":{"name":'
        '"bench-maintenance"},"spec":{"nodeNames":%s,"type":"maintenance","requestor":'
        '"bench"},"status":{"state":"Granted","disruptedNodes":%s}}' % (names, names))
    with open(path, "w") as f:
        f.write('{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[\n')
        f.write(",\n".join(out))
        f.write("\n]}\n")
    return per


def pod_name(i, apps):
    app = i % apps
    return "app-%d-%06d" % (app, i), "team-%d" % (app % 50)


def reviews(template, nodes, pods, apps, budgets, granted, per):
    """The four review kinds: (label, namespace/name, expected allowed)."""
    def find(pred):
        for i in range(pods):
            if pred(i % apps, i // per):
                return i
        fail("the generated cluster has no pod for a review kind")

    a = find(lambda app, node: app < budgets and node >= granted)
    b = find(lambda app, node: app < budgets and node < granted)
    c = find(lambda app, node: app >= budgets and node >= granted)
    kinds = [("a protected pod", pod_name(a, apps), False),
             ("a pod on a granted node", pod_name(b, apps), True),
             ("an unprotected pod", pod_name(c, apps), True),
             ("a pod not in the cache", ("no-such-pod", "team-1"), True)]
    out = []
    for k, (label, (name, ns), allowed) in enumerate(kinds):
        r = json.loads(json.dumps(template))
        req = r["request"]
        req["uid"] = "705ab4f5-6393-11e8-b7cc-42010a80000%d" % k
        req["name"] = name
        req["namespace"] = ns
        req["object"]["metadata"]["name"] = name
        req["object"]["metadata"]["namespace"] = ns
        out.append((label, f"{ns}/{name}", allowed,
                    json.dumps(r, separators=(",", ":")).encode()))
    return out


def post(port, body):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    try:
        conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def wait_port_file(path, proc, what, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with status {proc.returncode}")
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    fail(f"{what} did not start serving within {timeout_s} s")


def wait_listening(port, proc, what, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    fail(f"{what} is not listening on port {port}")


def nginx_conf(tmp, port, answer):
    text = answer.decode()
    if "$" in text:  # nginx would read it as a variable
        fail("nodegate's answer holds a '$': nginx cannot serve it with `return`")
    esc = text.replace("\\", "\\\\").replace('"', '\\"')
    # Without reuseport both workers accept from one socket and one of them takes most of the
    # connections: measured here, nginx then served 62-84k req/s instead of 98-105k.
    return f"""worker_processes auto;
error_log {tmp}/nginx-error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_buffer_size 64k;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:1m;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{port} ssl reuseport;
    ssl_certificate {tmp}/cert.pem;
    ssl_certificate_key {tmp}/key.pem;
    location / {{ default_type application/json; return 200 "{esc}"; }}
  }}
}}
"""


def wrk_script(bodies):
    """Cycles through the review bodies; each request string is built once per wrk thread."""
    lits = []
    for b in bodies:
        s = b.decode()
        if "]==]" in s:
            fail("a review body holds ]==]")
        lits.append("[==[" + s + "]==]")
    return ("local bodies = {" + ",\n".join(lits) + "}\n"
            "local reqs = nil\nlocal n = 0\n"
            "request = function()\n"
            "  if not reqs then\n"
            "    reqs = {}\n"
            "    for i, b in ipairs(bodies) do\n"
            "      reqs[i] = wrk.format(\"POST\", nil, {[\"Content-Type\"] = \"application/json\"}, b)\n"
            "    end\n"
            "  end\n"
            "  n = n % #reqs + 1\n"
            "  return reqs[n]\n"
            "end\n")


def run_wrk(script, port, conns, secs, what):
    out = subprocess.run(
        ["wrk", "-t2", f"-c{conns}", "-d%gs" % secs, "-s", script,
         f"https://127.0.0.1:{port}{PATH}"],
        capture_output=True, text=True, timeout=secs + 60)
    if out.returncode != 0:
        fail(f"wrk against {what} failed: {out.stderr.strip() or out.stdout.strip()}")
    m = re.search(r"Requests/sec:\s*([0-9.]+)", out.stdout)
    if not m:
        fail(f"no Requests/sec in wrk's output:\n{out.stdout}")
    for bad in ("Non-2xx or 3xx responses", "Socket errors"):
        for line in out.stdout.splitlines():
            if bad in line:
                log(f"warning: wrk against {what}: {line.strip()}")
    return float(m.group(1))


def run_loadgen(loadgen, bodies, port, rate, secs, warmup, what):
    cmd = [loadgen, "--port", str(port), "--path", PATH, "--connections", "16",
           "--rate", "%.0f" % rate, "--duration", str(secs), "--warmup", str(warmup)]
    for b in bodies:
        cmd += ["--body", b]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + warmup + 60)
    if out.returncode != 0:
        fail(f"bench-loadgen against {what} failed:\n{out.stderr.strip()}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    m = re.search(r"woke up at worst ([0-9.]+) us late", out.stderr)
    res["client_late_us"] = float(m.group(1)) if m else None
    if res["errors"]:
        log(f"warning: bench-loadgen against {what}: {res['errors']} errors of "
            f"{res['requests']} requests:\n{out.stderr.strip()}")
    return res


def stats(values):
    return {"min": round(min(values), 1), "median": round(statistics.median(values), 1),
            "max": round(max(values), 1)}


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodegate", required=True, help="a release build of cmd/nodegate")
    ap.add_argument("--loadgen", required=True, help="bench-loadgen")
    ap.add_argument("--runs", type=int, default=None, help="runs of each measure (3)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per run (10)")
    ap.add_argument("--quick", action="store_true",
                    help="a tenth of the cluster, 3 s runs, 1 run unless --runs")
    args = ap.parse_args()
    runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    secs = args.seconds if args.seconds is not None else (3 if args.quick else 10)
    if runs < 1 or secs <= 0:
        fail("--runs and --seconds must be positive")
    secs_s = ("%g" % secs)
    for exe in (args.nodegate, args.loadgen):
        if not os.access(exe, os.X_OK):
            fail(f"{exe} is not an executable")
    for prog in ("wrk", "nginx", "openssl"):
        if not shutil.which(prog):
            fail(f"needs {prog} (apt-get install -y wrk nginx-light openssl)")
    command = "bench/webhook.py" + (" --quick" if args.quick else "") + \
        f" --runs {runs} --seconds {secs_s}"
    if args.quick:
        nodes, pods, apps, budgets, granted = 500, 15000, 400, 200, 5
    else:
        nodes, pods, apps, budgets, granted = 5000, 150000, 4000, 2000, 5
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "examples", "eviction-review.json")) as f:
        template = json.load(f)

    tmp = tempfile.mkdtemp(prefix="ng-bench-webhook-")
    ng = nx = None
    try:
        t = time.monotonic()
        per = write_cluster(f"{tmp}/cluster.json", nodes, pods, apps, budgets, granted)
        log(f"cluster: {nodes} nodes, {pods} pods, {budgets} ApplicationDisruptionBudgets, "
            f"{granted} nodes granted; {os.path.getsize(tmp + '/cluster.json') / 1e6:.1f} MB "
            f"written in {time.monotonic() - t:.1f} s")
        kinds = reviews(template, nodes, pods, apps, budgets, granted, per)
        body_files = []
        for k, (_, _, _, body) in enumerate(kinds):
            body_files.append(f"{tmp}/review-{k}.json")
            with open(body_files[-1], "wb") as f:
                f.write(body)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{tmp}/key.pem",
                        "-out", f"{tmp}/cert.pem", "-days", "1", "-subj", "/CN=localhost"],
                       check=True, capture_output=True)

        t = time.monotonic()
        ng_log = open(f"{tmp}/nodegate.log", "w")
        ng = subprocess.Popen(
            [args.nodegate, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
             "--port-file", f"{tmp}/port", "--tls-cert", f"{tmp}/cert.pem", "--tls-key",
             f"{tmp}/key.pem", "--snapshot", f"{tmp}/cluster.json", "--log-level", "warn"],
            stdout=subprocess.DEVNULL, stderr=ng_log)
        ng_port = wait_port_file(f"{tmp}/port", ng, "nodegate serve")
        log(f"nodegate serving on port {ng_port} after {time.monotonic() - t:.1f} s")

        answer_a = None
        for label, pod, allowed, body in kinds:
            status, raw = post(ng_port, body)
            try:
                got = json.loads(raw)["response"]["allowed"]
            except (ValueError, KeyError, TypeError):
                fail(f"{label} ({pod}): HTTP {status}, not an AdmissionReview: {raw[:300]!r}")
            if status != 200 or got is not allowed:
                fail(f"{label} ({pod}): expected allowed={allowed}, nodegate answered HTTP "
                     f"{status} allowed={got}: {raw[:400]!r}")
            log(f"check: {label} ({pod}): allowed={got}, as expected")
            if answer_a is None:
                answer_a = raw
        with open(f"{tmp}/answer.json", "wb") as f:
            f.write(answer_a)

        nx_port = free_port()
        with open(f"{tmp}/nginx.conf", "w") as f:
            f.write(nginx_conf(tmp, nx_port, answer_a))
        nx = subprocess.Popen(["nginx", "-e", f"{tmp}/nginx-error.log", "-c",
                               f"{tmp}/nginx.conf", "-g", "daemon off;"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(nx_port, nx, "nginx")
        status, raw = post(nx_port, kinds[0][3])
        if status != 200 or raw != answer_a:
            fail(f"nginx does not serve nodegate's answer: HTTP {status} {raw[:200]!r}")
        sizes = ", ".join(str(len(k[3])) for k in kinds)
        log(f"nginx (a worker per core, reuseport) on port {nx_port} serves the {len(answer_a)} bytes nodegate "
            f"answered to (a); review bodies {sizes} bytes")
        log("nodegate, nginx, wrk and bench-loadgen share all cores (no pinning): "
            "compare the ratio, not the absolute rates")

        with open(f"{tmp}/reviews.lua", "w") as f:
            f.write(wrk_script([k[3] for k in kinds]))
        with open(f"{tmp}/denials.lua", "w") as f:
            f.write(wrk_script([kinds[0][3]]))

        rows = []
        b1_ng16 = None
        for script, what in (("reviews", "the four reviews in turn"),
                             ("denials", "every review a denial (429)")):
            for conns in (16, 64):
                ngv, nxv, ratio = [], [], []
                for r in range(runs):
                    a = run_wrk(f"{tmp}/{script}.lua", ng_port, conns, secs, "nodegate")
                    b = run_wrk(f"{tmp}/{script}.lua", nx_port, conns, secs, "nginx")
                    ngv.append(a)
                    nxv.append(b)
                    ratio.append(a / b)
                    log(f"B1 {script}, {conns} connections, run {r + 1}/{runs}: nodegate "
                        f"{a:,.0f} req/s, nginx {b:,.0f} req/s, ratio {a / b:.2f}")
                rs = {k: round(v, 3) for k, v in
                      (("min", min(ratio)), ("median", statistics.median(ratio)),
                       ("max", max(ratio)))}
                rows.append({"bench": "B1", "measure": f"throughput, {conns} connections, {what}",
                             "value": stats(ngv), "unit": "req/s", "reference": stats(nxv),
                             "reference_name": "nginx (reuseport), same certificate and answer",
                             "ratio": rs, "target": f"≥ {B1_TARGET}× nginx",
                             "met": rs["median"] >= B1_TARGET, "command": command})
                if conns == 16 and script == "reviews":
                    b1_ng16 = statistics.median(ngv)

        rate = b1_ng16 / 2
        warmup = 0.5 if args.quick else 1
        log(f"B2: open loop at {rate:,.0f} req/s (half of nodegate's B1 median at 16 "
            f"connections), 16 connections, {warmup} s warmup + {secs_s} s per run")
        lat = {"p50_us": ([], []), "p99_us": ([], []), "p999_us": ([], [])}
        for r in range(runs):
            a = run_loadgen(args.loadgen, body_files, ng_port, rate, secs, warmup, "nodegate")
            b = run_loadgen(args.loadgen, body_files, nx_port, rate, secs, warmup, "nginx")
            for key, (ngl, nxl) in lat.items():
                ngl.append(a[key])
                nxl.append(b[key])
            log(f"B2 run {r + 1}/{runs}: nodegate p50 {a['p50_us']} us, p99 {a['p99_us']} us, "
                f"p99.9 {a['p999_us']} us ({a['requests']} requests, {a['errors']} errors, "
                f"client at worst {a['client_late_us']} us late); nginx p50 {b['p50_us']} us, "
                f"p99 {b['p99_us']} us, p99.9 {b['p999_us']} us (client at worst "
                f"{b['client_late_us']} us late)")
        for key, name in (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")):
            ngl, nxl = lat[key]
            v = stats(ngl)
            is_p99 = key == "p99_us"
            rows.append({"bench": "B2",
                         "measure": f"latency {name} at 50 % of the maximum rate "
                                    f"({rate:,.0f} req/s open loop, 16 connections)",
                         "value": v, "unit": "µs", "reference": stats(nxl),
                         "reference_name": "nginx, same certificate and answer, same rate",
                         "ratio": None, "target": "≤ 1 ms" if is_p99 else None,
                         "met": (v["median"] <= B2_P99_TARGET_US) if is_p99 else None,
                         "command": command})
        print(json.dumps({"id": "B1+B2", "rows": rows}, ensure_ascii=False), flush=True)
    finally:
        stop(nx)
        stop(ng)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
