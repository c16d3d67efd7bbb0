#!/usr/bin/env python3
"""The soak's health-hook server: HTTPS on 127.0.0.1, one process of its own (so its threads do
not share a GIL with the load client). POST /hook?slow=P&fail=P answers 200 after a short think,
but with probability `slow` takes 1.5 s and with probability `fail` answers 503. Faults switch
every hook at once (GET /_mode/<mode>):
  normal    the above
  hang      every hook sleeps 30 s (longer than any timeoutSeconds): nodegate must time out
  down      the listening socket is closed: connections are refused
Counts of what it answered, and the most calls one request made to one hook, are at GET /_stats.

Usage: hooks.py --cert FILE --key FILE --port-file FILE"""
import argparse
import http.server
import json
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        srv = self.server
        if self.path.startswith("/_mode/"):
            mode = self.path[len("/_mode/"):]
            if mode not in ("normal", "hang", "down"):
                return self.answer(400, "unknown mode")
            self.answer(200, mode)
            threading.Thread(target=srv.set_mode, args=(mode,), daemon=True).start()
            return
        if self.path == "/_stats":
            with srv.lock:
                return self.answer(200, json.dumps(srv.stats))
        self.answer(404, "no")

    def do_POST(self):
        srv = self.server
        n = int(self.headers.get("Content-Length") or 0)
        try:
            nd = json.loads(self.rfile.read(min(n, 1 << 20)))["metadata"]["name"]
        except (ValueError, KeyError, TypeError):
            nd = "?"
        srv.asked(nd, self.path)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        slow, fail = float(q.get("slow", ["0"])[0]), float(q.get("fail", ["0"])[0])
        if srv.mode == "hang":
            srv.count("hung")
            time.sleep(30)
            return self.answer(200, "late")
        r = random.random()
        if r < fail:
            srv.count("failed")
            return self.answer(503, "replica lagging")
        time.sleep(1.5 if r < fail + slow else 0.01)
        srv.count("slow" if r < fail + slow else "ok")
        self.answer(200, "healthy")


class HookServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, port, ctx):
        self.ctx = ctx
        self.mode = "normal"
        self.lock = threading.Lock()
        self.stats = {"calls": 0, "ok": 0, "slow": 0, "failed": 0, "hung": 0, "modes": {},
                      "most_per_request": 0, "most_asked": None}
        self.per_call = {}  # (request, hook) -> calls
        super().__init__(("127.0.0.1", port), Handler)

    def asked(self, nd, path):
        with self.lock:
            self.per_call[(nd, path)] = self.per_call.get((nd, path), 0) + 1
            self.stats["calls"] += 1
            if self.per_call[(nd, path)] > self.stats["most_per_request"]:
                self.stats["most_per_request"] = self.per_call[(nd, path)]
                self.stats["most_asked"] = nd

    def count(self, what):
        with self.lock:
            self.stats[what] += 1

    def finish_request(self, request, client_address):
        request.settimeout(60)
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except OSError:
            return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        except OSError:
            pass
        finally:
            conn.close()

    def set_mode(self, mode):
        with self.lock:
            self.stats["modes"][mode] = self.stats["modes"].get(mode, 0) + 1
        if mode == "down":
            self.listening(False)
            time.sleep(10)
            self.listening(True)
            mode = "normal"
        self.mode = mode

    def listening(self, on):
        """Closes the listening socket (connections refused) or opens it again on the same port."""
        if not on:
            self.socket.close()
            return
        port = self.server_address[1]
        for _ in range(100):
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
                s.listen(self.request_queue_size)
                self.socket = s
                return
            except OSError:
                time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv = HookServer(0, ctx)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(a.port_file + ".tmp", a.port_file)
    while True:
        try:
            srv.serve_forever(poll_interval=0.1)
        except (OSError, ValueError):
            time.sleep(0.1)  # the socket was closed under it ("down"); serve the new one


if __name__ == "__main__":
    main()
