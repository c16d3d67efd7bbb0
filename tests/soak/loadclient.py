#!/usr/bin/env python3
"""The soak's admission load: eviction reviews (AdmissionReview v1 for pods/eviction CREATE) at a
steady rate to nodegate's webhook, the way the API server sends them, with every answer recorded.

Open loop: review i is due at t0 + i/rate whatever happened to the ones before, and its latency
runs from that due time, so a stall of the server is not hidden by the client slowing down.
Workers keep one keep-alive HTTPS connection each, verify the serving certificate against the
CA, and spread reviews over the replicas listed in --endpoints (re-read every 0.5 s: the
orchestrator takes a replica out of it before killing it, as a Service drops a pod that is going
away). A review goes to a random pod of --pods (re-read every 5 s: the orchestrator keeps it to
the pods that exist, with the odd one just gone).

One JSON line per review to --out: t (due, wall clock), lat (s), code (HTTP status, 0 when no
answer), allowed, pod (ns/name), ep (port), error. SIGTERM stops it; the summary (reviews sent,
rate achieved) goes to --summary.

Usage: loadclient.py --rate R --endpoints FILE --ca FILE --pods FILE --out FILE --summary FILE"""
import argparse
import copy
import http.client
import json
import os
import random
import signal
import ssl
import threading
import time

TEMPLATE = {
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {"uid": "", "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
                "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "requestSubResource": "eviction", "name": "", "namespace": "", "operation": "CREATE",
                "userInfo": {"username": "system:serviceaccount:kube-system:cluster-autoscaler",
                             "groups": ["system:serviceaccounts", "system:authenticated"]},
                "object": {"kind": "Eviction", "apiVersion": "policy/v1",
                           "metadata": {"name": "", "namespace": ""}, "deleteOptions": {}},
                "oldObject": None, "dryRun": False,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}


class Load:
    def __init__(self, a):
        self.a = a
        self.ctx = ssl.create_default_context(cafile=a.ca)
        self.ctx.check_hostname = False  # the certificate names 127.0.0.1 and the Service; verified by CA
        with open(a.pods, encoding="utf-8") as f:
            self.pods = json.load(f)
        self.endpoints = []
        self.lock = threading.Lock()
        self.next = 0
        self.stop = threading.Event()
        self.out = open(a.out, "a", encoding="utf-8", buffering=1)
        self.sent = 0
        self.t0 = time.time() + 0.5

    def read_endpoints(self):
        n = 0
        while not self.stop.is_set():
            try:
                with open(self.a.endpoints, encoding="utf-8") as f:
                    self.endpoints = json.load(f)
                if n % 10 == 0:
                    with open(self.a.pods, encoding="utf-8") as f:
                        self.pods = json.load(f) or self.pods
            except (OSError, ValueError):
                pass
            n += 1
            self.stop.wait(0.5)

    def take(self):
        with self.lock:
            i = self.next
            self.next += 1
        return self.t0 + i / self.a.rate, i

    def worker(self, wid):
        conn, port = None, None
        rnd = random.Random(wid)
        while not self.stop.is_set():
            due, i = self.take()
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
            if self.stop.is_set():
                break
            eps = list(self.endpoints)
            if conn is not None and port not in eps:
                conn.close()
                conn = None
            if conn is None:
                if not eps:
                    self.record(due, 0, None, "no endpoint in service", "", None)
                    continue
                port = eps[(i + wid) % len(eps)]
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=self.ctx, timeout=10)
            ns_name = rnd.choice(self.pods)
            ns, name = ns_name.split("/", 1)
            review = copy.deepcopy(TEMPLATE)  # each worker its own: the body must name this pod
            req = review["request"]
            req["uid"] = f"soak-{i}"
            req["name"] = req["object"]["metadata"]["name"] = name
            req["namespace"] = req["object"]["metadata"]["namespace"] = ns
            body = json.dumps(review, separators=(",", ":"))
            code, allowed, err = 0, None, None
            for attempt in (0, 1):
                try:
                    conn.request("POST", "/validate/eviction", body=body,
                                 headers={"Content-Type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    code = r.status
                    if code == 200:
                        allowed = bool(json.loads(data)["response"]["allowed"])
                    else:
                        err = data[:200].decode(errors="replace")
                    break
                except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
                    conn.close()
                    conn = http.client.HTTPSConnection("127.0.0.1", port, context=self.ctx, timeout=10)
                    err = f"{type(e).__name__}: {e}"
                    # A keep-alive connection the server closed while idle (its idle timeout,
                    # a certificate swap) fails on first use; the API server's client retries
                    # such a request once on a new connection, and so does this one.
                    if attempt == 0 and isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError,
                                                       BrokenPipeError)):
                        continue
                    break
            self.record(due, code, allowed, err if code != 200 else None, ns_name, port)

    def record(self, due, code, allowed, err, pod, port):
        rec = {"t": round(due, 6), "lat": round(time.time() - due, 6), "code": code, "allowed": allowed,
               "pod": pod, "ep": port}
        if err:
            rec["error"] = err
        with self.lock:
            self.sent += 1
            self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")


def main():
    ap = argparse.ArgumentParser()
    for f in ("endpoints", "ca", "pods", "out", "summary"):
        ap.add_argument("--" + f, required=True)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--workers", type=int, default=16)
    a = ap.parse_args()
    load = Load(a)
    signal.signal(signal.SIGTERM, lambda *_: load.stop.set())
    threading.Thread(target=load.read_endpoints, daemon=True).start()
    ws = [threading.Thread(target=load.worker, args=(w,), daemon=True) for w in range(a.workers)]
    for w in ws:
        w.start()
    while not load.stop.is_set():
        load.stop.wait(1)
    t1 = time.time()
    for w in ws:
        w.join(15)
    with load.lock:
        s = {"sent": load.sent, "seconds": round(t1 - load.t0, 3), "rate": round(load.sent / max(1e-9, t1 - load.t0), 1),
             "target_rate": a.rate}
    with open(a.summary + ".tmp", "w", encoding="utf-8") as f:
        json.dump(s, f)
    os.replace(a.summary + ".tmp", a.summary)


if __name__ == "__main__":
    main()
