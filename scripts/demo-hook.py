#!/usr/bin/env python3
"""The demo's health hook for ApplicationDisruptionBudget shop/postgres: an HTTPS server on
127.0.0.1 that answers every POST with 200 ("the database can lose a node now") and logs which
NodeDisruption asked. The gate calls it before each grant on a database node.

Usage: demo-hook.py PORT CERT KEY   (exits when its parent process is gone)"""
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            nd = json.loads(body)
            what = "%s (nodes %s)" % (nd["metadata"]["name"],
                                      ",".join(nd.get("status", {}).get("disruptedNodes", [])))
        except (ValueError, KeyError, TypeError):
            what = "an unreadable body"
        sys.stderr.write("health hook: asked about %s: answering 200\n" % what)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


def main():
    port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    srv = ThreadingHTTPServer(("127.0.0.1", port), Hook)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
