"""Helpers for tests that need a running test API server (used by test_apiserver.py and
reusable by nodegate's e2e tests).

    with ServerProcess(fixtures=[...]) as srv:
        code, body, headers = srv.api("GET", "/api/v1/nodes")
        out = srv.kubectl("get", "nodes")

Every wait is bounded; the process is terminated (then killed) on exit.
"""
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APISERVER = os.path.join(HERE, "apiserver.py")

# Whether stop() audits by default (see ServerProcess). Only the server's own test suite, whose
# point is to send what a real server refuses or drops, turns it off.
AUDIT_DEFAULT = True


class AuditFailure(AssertionError):
    pass


class ServerProcess:
    def __init__(self, fixtures=(), generate=None, kubelet="immediate", extra_args=(), start_timeout=30,
                 workdir=None, authz_log=None, audit=None, audit_expect=()):
        """audit: on stop() (and at the end of a `with` block), ask the server for its audit
        (GET /_control/audit: every stored object re-checked against upstream's definitions or
        its CRD schema, and every unknown field it dropped with a warning) and raise AuditFailure
        listing the findings. On by default (AUDIT_DEFAULT).
        The audit also lists writes the decoder or the upstream definitions refused (type errors,
        unknown fields under fieldValidation=Strict, missing required fields): a client that
        gets such a 400/422 may log it and carry on, and the test would never know.
        audit_expect: field paths (e.g. "spec.foo", as in the Warning) a test sends on purpose;
        dropped fields with exactly these paths, and refusals naming them, are not findings.
        workdir: use (and keep) this directory instead of a fresh temporary one, e.g. to
        restart a server with --persist on the same state dir.
        authz_log: a file to which the server appends one JSON line per authorization decision
        (--authz-log; read them back with authz_decisions()). Without it the server still
        honours $KTESTAPI_AUTHZ_LOG, inherited from the environment."""
        self.workdir = workdir
        self.authz_log = authz_log
        self.fixtures = list(fixtures)
        self.generate = generate
        self.kubelet = kubelet
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.proc = None
        self.dir = None
        self.audit_on_stop = AUDIT_DEFAULT if audit is None else audit
        self.audit_expect = set(audit_expect)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, *exc):
        # an exception already on its way out wins; findings then only go to stderr
        self.stop(audit=None if exc_type is None else "report")

    def start(self):
        self.dir = self.workdir or tempfile.mkdtemp(prefix="ktestapi-")
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home, exist_ok=True)
        args = [sys.executable, APISERVER, "--port", "0", "--state-dir", os.path.join(self.dir, "state"),
                "--kubelet", self.kubelet, "--parent-pid", str(os.getpid())] + self.extra_args
        if self.authz_log:
            args += ["--authz-log", self.authz_log]
        for f in self.fixtures:
            args += ["--fixture", f]
        if self.generate:
            args += ["--generate", self.generate]
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        ready = os.path.join(self.dir, "state", "ready")
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if os.path.exists(ready):
                break
            if self.proc.poll() is not None:
                raise RuntimeError("test API server exited: %s" % self.read_log())
            time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("test API server did not become ready")
        self.state = os.path.join(self.dir, "state")
        with open(os.path.join(self.state, "port")) as f:
            self.port = int(f.read())
        with open(os.path.join(self.state, "tokens.json")) as f:
            self.tokens = json.load(f)
        self.ca = os.path.join(self.state, "ca.crt")
        self.kubeconfig = os.path.join(self.state, "kubeconfig")
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def read_log(self):
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def audit(self):
        """The findings of GET /_control/audit as lines of text (expected drops left out)."""
        # about 0.15 ms per stored object: 150,000 pods take ~20 s
        code, body, _ = self.api("GET", "/_control/audit", timeout=600)
        if code != 200:
            return ["audit request failed: %s %s" % (code, body)]
        out = []
        for f in body.get("invalid", []):
            out.append("stored %s %s/%s: %s" % (f["resource"], f.get("namespace") or "", f.get("name"), f["problem"]))
        for d in body.get("dropped", []):
            if d["field"] in self.audit_expect:
                continue
            out.append('dropped unknown field "%s" of %s %s %s/%s (%s %s by %s)' % (
                d["field"], d["apiVersion"], d["kind"], d.get("namespace") or "", d.get("name") or "",
                d.get("verb"), d.get("path"), d.get("user")))
        for d in body.get("refused", []):
            if d.get("field") in self.audit_expect or any(x in d["message"] for x in self.audit_expect):
                continue
            out.append('refused %s %s %s/%s (%s %s by %s): %s' % (
                d["apiVersion"], d["kind"], d.get("namespace") or "", d.get("name") or "",
                d.get("verb"), d.get("path"), d.get("user"), d["message"]))
        return out

    def check_audit(self):
        """For a server shared by several tests: raise AuditFailure on findings so far, and
        start the record of dropped fields afresh for the next test."""
        findings = self.audit()
        self.reset_audit()
        if findings:
            raise AuditFailure("test API server audit: %d finding(s):\n  %s" % (len(findings), "\n  ".join(findings)))

    def reset_audit(self):
        """Forget the dropped fields and refused writes recorded so far."""
        self.control("audit", method="DELETE")

    def stop(self, audit=None):
        """Stop the server; audit first (see __init__): audit=None follows the constructor,
        False skips it, "report" only prints the findings."""
        findings = []
        if audit is not False and self.audit_on_stop and self.proc is not None and self.proc.poll() is None:
            try:
                findings = self.audit()
            except (OSError, ValueError, http.client.HTTPException) as e:
                findings = ["audit request failed: %s" % e]
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
        if self.dir and not self.workdir and not os.environ.get("KTESTAPI_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        if findings:
            msg = "test API server audit: %d finding(s):\n  %s" % (len(findings), "\n  ".join(findings))
            if audit == "report":
                sys.stderr.write(msg + "\n")
            else:
                raise AuditFailure(msg)

    def authz_decisions(self, user=None):
        """The decisions recorded in authz_log so far (dicts, in order), only @user's if given."""
        out = []
        try:
            with open(self.authz_log, encoding="utf-8") as f:
                for line in f:
                    if line.endswith("\n"):
                        e = json.loads(line)
                        if user is None or e.get("user") == user:
                            out.append(e)
        except (OSError, TypeError):
            pass
        return out

    # -- clients ---------------------------------------------------------------------
    def connection(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=timeout)

    def api(self, method, path, body=None, ctype="application/json", user="admin", headers=None, timeout=30):
        """One request. Returns (status, parsed JSON body or raw bytes, response).

        user: a token user (admin, alice, bob, system:serviceaccount:nodegate:nodegate, ...),
        "carol-cert" for the x509 client certificate (CN=carol, O=nodegate-devs), or None."""
        h = {"Accept": "application/json"}
        if user == "carol-cert":
            ctx = ssl.create_default_context(cafile=self.ca)
            ctx.load_cert_chain(os.path.join(self.state, "client-carol.crt"), os.path.join(self.state, "client-carol.key"))
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=timeout)
        else:
            conn = self.connection(timeout)
        if user and user != "carol-cert":
            h["Authorization"] = "Bearer " + self.tokens[user]
        if body is not None:
            h["Content-Type"] = ctype
            body = body if isinstance(body, (bytes, str)) else json.dumps(body)
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = data
        return resp.status, parsed, resp

    def watch(self, path, user="admin", timeout=15):
        """Open a watch; returns a WatchStream yielding decoded events."""
        conn = self.connection(timeout)
        conn.request("GET", path, headers={"Authorization": "Bearer " + self.tokens[user],
                                           "Accept": "application/json"})
        resp = conn.getresponse()
        return WatchStream(conn, resp)

    def control(self, op, body=None, method="POST"):
        return self.api(method, "/_control/" + op, body)

    def kubectl(self, *args, user="admin", timeout=60, input=None, check=False):
        env = dict(os.environ)
        env["HOME"] = self.home
        if user == "admin":
            kc = "kubeconfig"
        elif user.startswith("system:serviceaccount:"):
            kc = "kubeconfig-sa-%s-%s" % tuple(user.split(":")[2:4])
        else:
            kc = "kubeconfig-" + user
        env["KUBECONFIG"] = os.path.join(self.state, kc)
        r = subprocess.run(["kubectl"] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, input=input.encode() if isinstance(input, str) else input)
        out = (r.returncode, r.stdout.decode(), r.stderr.decode())
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed (%d): %s %s" % (" ".join(args), r.returncode, out[1], out[2]))
        return out


class WatchStream:
    def __init__(self, conn, resp):
        self.conn = conn
        self.resp = resp
        self.status = resp.status

    def next(self):
        """Next event dict, or None at end of stream. Bounded by the connection timeout."""
        line = self.resp.readline()
        if not line:
            return None
        return json.loads(line)

    def collect(self, n, max_seconds=10):
        out = []
        deadline = time.monotonic() + max_seconds
        while len(out) < n and time.monotonic() < deadline:
            ev = self.next()
            if ev is None:
                break
            out.append(ev)
        return out

    def close(self):
        try:
            self.conn.sock.close()
        except Exception:
            pass
        self.conn.close()
