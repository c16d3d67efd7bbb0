"""What every benchmark under bench/ shares: its command line (--nodegate, --runs, --quick,
--smoke), progress on stderr, statistics over runs, the result rows and the one JSON line they
end with, and nodegate serve started against the test API server with its admin listener.

The last line a benchmark prints on stdout is {"id": ..., "rows": [row, ...]}, each row:
  bench, measure, value {min, median, max}, unit, reference (same shape or null),
  reference_name, ratio (value / reference per run, same shape, or null), target, met, command.
scripts/bench (bench/run.py) collects these lines and writes docs/benchmarks.md from them."""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from ktestapi.testing import ServerProcess  # noqa: E402,F401  (re-exported for the benchmarks)

CRD_DIR = os.path.join(ROOT, "manifests", "crds")
# nodegate's RBAC as the manifests grant it, then the CRDs.
FIXTURES = [os.path.join(ROOT, "manifests", "rbac", "rbac.json")] + [
    os.path.join(CRD_DIR, f) for f in ("nodedisruptions.json", "applicationdisruptionbudgets.json",
                                       "nodedisruptionbudgets.json", "nodegateconfigs.json")]
GROUP = "/apis/nodegate.io/v1alpha1"
ND_PATH = GROUP + "/nodedisruptions"
NDB_PATH = GROUP + "/nodedisruptionbudgets"
NGC_PATH = GROUP + "/nodegateconfigs"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parser(doc):
    """The flags every benchmark takes; the caller adds its own."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--nodegate", default=os.environ.get(
        "NODEGATE", os.path.join(ROOT, "build-bench", "cmd", "nodegate")))
    p.add_argument("--runs", type=int, default=None, help="runs (default 3; 1 with --quick/--smoke)")
    p.add_argument("--quick", action="store_true", help="smaller scale, one run")
    p.add_argument("--smoke", action="store_true", help="tiny scale, one run: does it work at all")
    return p


def parse(p):
    a = p.parse_args()
    if a.runs is None:
        a.runs = 1 if a.quick or a.smoke else 3
    a.nodegate = os.path.abspath(a.nodegate)
    return a


def mode(a):
    return "smoke" if a.smoke else "quick" if a.quick else "full"


def command(script, a, extra=""):
    """The command a row names: the script and the flags that change what it measures."""
    flags = {"smoke": " --smoke", "quick": " --quick", "full": ""}[mode(a)]
    return f"bench/{script}{flags} --runs {a.runs}{extra}"


def stats(values):
    """{min, median, max} of the non-None @values; None when there are none."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"min": min(v), "median": statistics.median(v), "max": max(v)}


def row(bench, measure, values, unit, cmd, reference=None, reference_name=None, target=None,
        met=None):
    """A result row. @values and @reference are lists (one figure per run); the ratio is taken
    run by run. @met is a function of the row's value stats (and ratio stats) or None."""
    value = stats(values)
    ref = stats(reference) if reference is not None else None
    ratio = None
    if reference is not None:
        ratio = stats([v / r for v, r in zip(values, reference)
                       if v is not None and r is not None and r != 0])
    ok = None
    if met is not None and value is not None:
        ok = bool(met(value, ratio))
    return {"bench": bench, "measure": measure, "value": value, "unit": unit, "reference": ref,
            "reference_name": reference_name if ref is not None else None, "ratio": ratio,
            "target": target, "met": ok, "command": cmd}


def finish(bench_id, rows):
    """The benchmark's last stdout line."""
    sys.stdout.flush()
    print(json.dumps({"id": bench_id, "rows": rows}), flush=True)


def quantile(sorted_values, q):
    """The @q quantile of a sorted list (nearest rank), None when empty."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, max(0, int(q * len(sorted_values) + 0.5) - 1))]


# --- Prometheus text ------------------------------------------------------------------------

def scrape(port):
    """{series as printed (name and labels): value} from http://127.0.0.1:@port/metrics."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode(errors="replace") if r.status == 200 else ""
    except OSError:
        body = ""
    finally:
        c.close()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def histogram(series, name):
    """[(le, cumulative count)] of histogram @name (labels other than le summed), sorted; None
    when nodegate does not export it."""
    buckets = {}
    for k, v in series.items():
        if not k.startswith(name + "_bucket{"):
            continue
        le = k.split('le="', 1)[1].split('"', 1)[0]
        le = float("inf") if le == "+Inf" else float(le)
        buckets[le] = buckets.get(le, 0) + v
    return sorted(buckets.items()) or None


def histogram_delta(after, before):
    if after is None:
        return None
    b = dict(before or [])
    return [(le, c - b.get(le, 0)) for le, c in after]


def histogram_quantile(buckets, q):
    """@q quantile estimated from cumulative @buckets by linear interpolation inside the bucket
    it falls in (as Prometheus' histogram_quantile does); None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return buckets[-1][0]


# --- processes --------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def self_signed(tmp, name="nodegate"):
    cert, key = os.path.join(tmp, name + ".crt"), os.path.join(tmp, name + ".key")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=" + name, "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=30)
    return cert, key


def http_status(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return 0
    finally:
        c.close()


class Serve:
    """`nodegate serve` against @api as nodegate's service account (admin kubeconfig when the
    API server has no RBAC fixture), its admin listener on a free loopback port. The clock
    starts just before the process does; ready_s is the time to its first /readyz 200."""

    def __init__(self, binary, api, tmp, tag="serve", extra=(), ready_timeout=600, client_ca=None):
        self.tmp = tmp
        cert, key = self_signed(tmp)
        self.cert = cert
        self.admin_port = free_port()
        self.port_file = os.path.join(tmp, tag + ".port")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        self.log_path = os.path.join(tmp, tag + ".log")
        sa = os.path.join(api.state, "kubeconfig-sa-nodegate-nodegate")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        args = [binary, "serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file,
                "--tls-cert", cert, "--tls-key", key,
                "--kubeconfig", sa if os.path.exists(sa) else api.kubeconfig,
                "--admin-listen", f"127.0.0.1:{self.admin_port}", "--lease-namespace", "nodegate",
                "--shutdown-grace-seconds", "1", "--log-level", os.environ.get("NG_BENCH_LOG_LEVEL", "warn"), *extra]
        if client_ca:
            args += ["--client-ca", client_ca]
        with open(self.log_path, "wb") as logf:
            self.t0 = time.monotonic()
            self.proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, env=env)
        deadline = self.t0 + ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("nodegate serve exited:\n" + self.read_log())
            if http_status(self.admin_port, "/readyz") == 200:
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("nodegate serve never became ready:\n" + self.read_log())
            time.sleep(0.02)
        self.ready_s = time.monotonic() - self.t0
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read().strip())

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def metrics(self):
        return scrape(self.admin_port)

    def read_log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        return terminate(self.proc)


def terminate(proc):
    """Stops @proc (a Popen): SIGTERM, 30 s to exit, then SIGKILL. Its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def stop_watch(stream):
    """Ends a ServerProcess watch stream another thread may be reading: shutting the socket down
    wakes that reader (closing the response here would wait for the reader's buffer lock)."""
    try:
        stream.conn.sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):
        pass


def wait_for(fn, timeout, interval=0.02):
    """Polls @fn until truthy; returns its value or None after @timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


def create(api, path, obj):
    code, body, _ = api.api("POST", path, obj)
    if code != 201:
        raise RuntimeError(f"POST {path}: {code} {body}")
    return body


def start_api(fixtures, generate=None, kubelet="immediate", extra_args=()):
    api = ServerProcess(fixtures=fixtures, generate=generate, kubelet=kubelet,
                        extra_args=list(extra_args), start_timeout=900)
    t0 = time.monotonic()
    api.start()
    log(f"  test API server up in {time.monotonic() - t0:.1f} s ({generate or 'no generated objects'})")
    return api
