#!/usr/bin/env python3
"""B5 bytes per cached pod and RSS, B6 start -> /readyz beside the floor, on one cluster.

The test API server generates NODES nodes x PODS pods per node (with the CRDs and nodegate's
RBAC); a second one generates the same nodes without pods. Per run:

- B6: a release build of `nodegate serve` is started against the cluster; the time from its
  start to the first 200 from /readyz on its admin listener (every resource listed in pages of
  500, decoded, published). The floor, timed in the same run against the same server: a client
  (python http.client, one keep-alive HTTPS connection per resource, all at once as nodegate's
  informers do) pages the same lists nodegate lists at start (kube/watch.c: nodes, pods, PVCs,
  PVs and the four nodegate resources, `?limit=500`, following `continue`), reading every byte
  and parsing nothing but the continue token. Target: nodegate <= 1.5x the floor.
- B5: one second after /readyz (freed list buffers go back to the kernel), nodegate's RSS; the
  reference is the RSS of nodegate watching the nodes without pods. Bytes per cached pod =
  (RSS - RSS without pods) / pods cached (nodegate_cache_objects{resource="pods"}). Target
  <= 300 B/pod.
- B6 beside it: `nodegate status -o json` and `nodegate why node-00001 -o json`, each a fresh
  process that lists the whole cluster through the same kubeconfig and explains it (every budget,
  the queue decided in the gate's order; the node's budgets and pods), wall time against the same
  floor. Target: status and why within 1.5x the floor (the listing is most of it).
- once per benchmark: decode throughput of the cache (bench-cache-decode: parse, checks, decode,
  publish) beside cJSON alone on the same bytes (bench/gen-cluster.py 300 30, 9,000 pods).

Usage: bench/cache.py [--quick|--smoke] [--runs N] [--nodegate PATH] [--nodes N] [--pods-per-node M]"""
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

# What nodegate serve lists at start (kube/watch.c), in pages of LIST_LIMIT.
RESOURCES = ["/api/v1/nodes", "/api/v1/pods", "/api/v1/persistentvolumeclaims",
             "/api/v1/persistentvolumes", bl.ND_PATH, bl.GROUP + "/applicationdisruptionbudgets",
             bl.NDB_PATH, bl.NGC_PATH]
LIMIT = 500
SCALE = {"full": (5000, 30), "quick": (1000, 30), "smoke": (50, 4)}
CONTINUE = re.compile(rb'"continue"\s*:\s*"([^"]*)"')


def page_all(api, path, out, i):
    """Lists @path page by page on one keep-alive connection; @out[i] = bytes read."""
    conn = api.connection(timeout=600)
    token = api.tokens["system:serviceaccount:nodegate:nodegate"] if \
        "system:serviceaccount:nodegate:nodegate" in api.tokens else api.tokens["admin"]
    total, cont = 0, ""
    try:
        while True:
            q = f"{path}?limit={LIMIT}" + (f"&continue={cont}" if cont else "")
            conn.request("GET", q, headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"GET {q}: {r.status}")
            total += len(body)
            # The continue token is in the list's metadata, before the items; the tail as a
            # fallback for a server that writes metadata last.
            m = CONTINUE.search(body[:4096]) or CONTINUE.search(body[-4096:])
            cont = m.group(1).decode() if m else ""
            if not cont:
                break
    finally:
        conn.close()
    out[i] = total


def floor(api):
    """Seconds to page every resource nodegate lists, one connection per resource at once."""
    out = [0] * len(RESOURCES)
    t0 = time.monotonic()
    th = [threading.Thread(target=page_all, args=(api, p, out, i)) for i, p in enumerate(RESOURCES)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return time.monotonic() - t0, sum(out)


def measure(binary, api, tmp, tag):
    ng = bl.Serve(binary, api, tmp, tag=tag)
    try:
        time.sleep(1)  # let freed list buffers go back to the kernel
        rss = ng.rss_kib()
        pods = ng.metrics().get('nodegate_cache_objects{resource="pods"}')
        return ng.ready_s, rss, pods
    finally:
        ng.stop()


def cli_seconds(binary, api, *args):
    """Wall seconds of one `nodegate ARGS` against @api, from the process's start to its exit."""
    t0 = time.monotonic()
    p = subprocess.run([binary, *args, "--kubeconfig", api.kubeconfig, "-o", "json"],
                       capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"nodegate {args[0]} failed ({p.returncode}): {p.stderr.strip()}")
    return took


def decode_throughput(binary, tmp):
    exe = os.path.join(os.path.dirname(os.path.dirname(binary)), "bench", "bench-cache-decode")
    if not os.path.exists(exe):
        return None
    path = os.path.join(tmp, "cluster.json")
    with open(path, "wb") as f:
        subprocess.run([sys.executable, os.path.join(bl.ROOT, "bench", "gen-cluster.py"), "300", "30"],
                       stdout=f, check=True, timeout=300)
    r = subprocess.run([exe, path, "3"], capture_output=True, text=True, timeout=300, check=True)
    plain = re.search(r"cJSON parse alone:\s+([\d.]+) MB/s", r.stdout)
    cache = re.search(r"cache \(parse\+checks\+decode\):\s+([\d.]+) MB/s", r.stdout)
    if not plain or not cache:
        return None
    return float(cache.group(1)), float(plain.group(1))


def main():
    p = bl.parser(__doc__)
    p.add_argument("--nodes", type=int)
    p.add_argument("--pods-per-node", type=int)
    a = bl.parse(p)
    nodes, per = SCALE[bl.mode(a)]
    nodes, per = a.nodes or nodes, a.pods_per_node or per
    extra = f" --nodes {nodes} --pods-per-node {per}" if a.nodes or a.pods_per_node else ""
    cmd = bl.command("cache.py", a, extra)
    bl.log(f"B5/B6: {nodes} nodes x {per} pods, {a.runs} run(s)")
    tmp = tempfile.mkdtemp(prefix="ng-bench-b5-")
    runs = []
    decode = None
    empty = full = None
    try:
        empty = bl.start_api(bl.FIXTURES, f"nodes={nodes},pods-per-node=0")
        full = bl.start_api(bl.FIXTURES, f"nodes={nodes},pods-per-node={per}")
        for r in range(a.runs):
            base_s, base_rss, _ = measure(a.nodegate, empty, tmp, f"empty{r}")
            secs, rss, pods = measure(a.nodegate, full, tmp, f"full{r}")
            fl, nbytes = floor(full)
            st_s = cli_seconds(a.nodegate, full, "status")
            why_s = cli_seconds(a.nodegate, full, "why", "node-00001")
            bpp = (rss - base_rss) * 1024 / pods if pods else None
            runs.append({"secs": secs, "floor": fl, "rss": rss / 1024, "base": base_rss / 1024, "bpp": bpp,
                         "pods": pods, "status": st_s, "why": why_s})
            bl.log(f"  run {r + 1}: /readyz in {secs:.2f} s, floor {fl:.2f} s ({nbytes / 1e6:.1f} MB listed); "
                   f"RSS {rss / 1024:.1f} MiB, without pods {base_rss / 1024:.1f} MiB; {pods:.0f} pods: "
                   f"{bpp:.0f} B/pod; status {st_s:.2f} s, why {why_s:.2f} s" if bpp is not None else f"  run {r + 1}: no pod count")
        if not a.smoke:
            decode = decode_throughput(a.nodegate, tmp)
    finally:
        for api in (full, empty):
            if api is not None:
                api.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    col = lambda k: [x[k] for x in runs]  # noqa: E731
    npods = int(runs[0]["pods"] or 0) if runs else 0
    rows = [
        bl.row("B5", f"bytes per cached pod ({npods:,} pods)", col("bpp"), "B", cmd, target="≤ 300 B/pod",
               met=lambda v, _: v["median"] <= 300),
        bl.row("B5", f"RSS with {npods:,} pods", col("rss"), "MiB", cmd, reference=col("base"),
               reference_name=f"RSS watching the {nodes:,} nodes without pods"),
    ]
    if decode:
        rows.append(bl.row("B5", "decode throughput of the cache (parse, checks, decode, publish; 9,000 pods)",
                           [decode[0]], "MB/s", cmd, reference=[decode[1]], reference_name="cJSON parse alone"))
    rows.append(bl.row("B6", f"start → /readyz ({npods:,} pods, {nodes:,} nodes)", col("secs"), "s", cmd,
                       reference=col("floor"),
                       reference_name="floor: http.client paging the same lists",
                       target="≤ 1.5× the floor", met=lambda _, ratio: ratio is not None and ratio["median"] <= 1.5))
    for what, key in (("nodegate status -o json", "status"), ("nodegate why NODE -o json", "why")):
        rows.append(bl.row("B6", f"{what} from a fresh start ({npods:,} pods, {nodes:,} nodes)", col(key), "s",
                           cmd, reference=col("floor"),
                           reference_name="floor: http.client paging the same lists",
                           target="≤ 1.5× the floor", met=lambda _, ratio: ratio is not None and ratio["median"] <= 1.5))
    bl.finish("B5+B6", rows)


if __name__ == "__main__":
    main()
