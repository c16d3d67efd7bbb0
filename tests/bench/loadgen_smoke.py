#!/usr/bin/env python3
"""bench-loadgen against `nodegate serve --snapshot examples/demo-cluster.json`: one second
closed loop and one second at a fixed 200 requests/s. Asserts behaviour, not speed: answers
came back, none was an error, and the fixed rate sent about rate x seconds requests.
Env: NODEGATE, LOADGEN (the executables), NG_SOURCE_ROOT."""
import json
import os
import subprocess
import sys
import tempfile
import time

NODEGATE = os.environ["NODEGATE"]
LOADGEN = os.environ["LOADGEN"]
ROOT = os.environ["NG_SOURCE_ROOT"]


def loadgen(port, ca, *extra):
    cmd = [LOADGEN, "--port", str(port), "--path", "/validate/eviction?timeout=10s",
           "--body", os.path.join(ROOT, "examples", "eviction-review.json"),
           "--connections", "4", "--duration", "1", "--cacert", ca, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    sys.stderr.write(p.stderr)
    assert p.returncode == 0, f"bench-loadgen exited with {p.returncode}"
    res = json.loads(p.stdout.strip().splitlines()[-1])
    print(" ".join(cmd[1:]), "->", json.dumps(res))
    for key in ("requests", "errors", "seconds", "rate", "p50_us", "p90_us", "p99_us",
                "p999_us", "max_us"):
        assert key in res, f"no {key} in {res}"
    assert res["requests"] > 0, res
    assert res["errors"] == 0, res
    assert res["p50_us"] <= res["p99_us"] <= res["max_us"], res
    return res


def main():
    with tempfile.TemporaryDirectory(prefix="ng-loadgen-smoke-") as tmp:
        certs = os.path.join(tmp, "certs")
        os.mkdir(certs)
        p = subprocess.run([NODEGATE, "certs", "--out", certs, "--ip", "127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"nodegate certs: {p.stderr}"
        port_file = os.path.join(tmp, "port")
        with open(os.path.join(tmp, "nodegate.log"), "w") as log:
            ng = subprocess.Popen(
                [NODEGATE, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "off",
                 "--port-file", port_file, "--tls-cert", os.path.join(certs, "tls.crt"),
                 "--tls-key", os.path.join(certs, "tls.key"), "--snapshot",
                 os.path.join(ROOT, "examples", "demo-cluster.json"), "--log-level", "warn"],
                stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 30
            port = None
            while port is None:
                assert ng.poll() is None, f"nodegate exited with {ng.returncode}"
                assert time.monotonic() < deadline, "nodegate did not write its port"
                if os.path.exists(port_file) and open(port_file).read().strip():
                    port = int(open(port_file).read())
                else:
                    time.sleep(0.05)
            ca = os.path.join(certs, "ca.crt")
            loadgen(port, ca)
            rate = 200
            res = loadgen(port, ca, "--rate", str(rate))
            expected = rate * res["seconds"]
            assert abs(res["requests"] - expected) <= 0.3 * expected, \
                f"{res['requests']} requests at {rate}/s for {res['seconds']} s"
        finally:
            ng.terminate()
            try:
                ng.wait(timeout=30)
            except subprocess.TimeoutExpired:
                ng.kill()
                ng.wait()
    print("ok")


if __name__ == "__main__":
    main()
