"""CEL rules (`x-kubernetes-validations`) of CRD schemas: compiled and evaluated by one
long-lived Node process per server (upstream/cel-server.mjs, on @marcbachmann/cel-js).

The process starts on first need (a CRD or custom resource whose schema has rules), speaks
JSON lines over stdin/stdout and keeps compiled schemas by key; schemas without rules never
reach it. If it dies it is restarted once; after that every request that needs CEL fails with
a 500 rather than skipping the rules."""
import atexit
import hashlib
import json
import os
import select
import shutil
import subprocess
import threading

from . import errors as E

_HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_JS = os.path.join(os.path.dirname(_HERE), "upstream", "cel-server.mjs")
LIBRARY = os.path.join(os.path.dirname(_HERE), "upstream", "node_modules", "@marcbachmann", "cel-js")
# How long one answer may take: a compile of a whole CRD is milliseconds; a process that does
# not answer in this time is killed (and restarted once, as if it had died).
ANSWER_TIMEOUT_S = float(os.environ.get("KTESTAPI_CEL_TIMEOUT") or 20)


def has_rules(schema):
    """Whether any node of the schema carries x-kubernetes-validations."""
    if isinstance(schema, dict):
        if schema.get("x-kubernetes-validations"):
            return True
        return any(has_rules(v) for v in schema.values() if isinstance(v, (dict, list)))
    if isinstance(schema, list):
        return any(has_rules(v) for v in schema)
    return False


def has_rules_cached(schema):
    """has_rules() for a schema the process has seen (by identity), else computed."""
    return process().key_for(schema)[1]


class CelUnavailable(Exception):
    pass


class CelProcess:
    """One Node process; requests are serialized (one outstanding line at a time)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc = None
        self._starts = 0
        self._known = set()      # keys whose schema the current process holds
        self._id = 0
        self._failed = None
        self._keys = {}          # id(schema) -> (schema, key, has_rules)
        atexit.register(self.close)

    def _start(self):
        if self._starts >= 2:
            raise CelUnavailable(self._failed or "CEL evaluator process exited")
        node = shutil.which("node") or "/usr/bin/node"
        if not os.path.exists(SERVER_JS) or not os.path.isdir(LIBRARY):
            self._starts = 2
            self._failed = "CEL library not installed (%s): run scripts/deps.sh" % LIBRARY
            raise CelUnavailable(self._failed)
        self._starts += 1
        self._known = set()
        try:
            self._proc = subprocess.Popen([node, SERVER_JS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, cwd=os.path.dirname(SERVER_JS),
                                          text=True, bufsize=1)
        except OSError as e:
            self._proc = None
            self._failed = "cannot start the CEL evaluator: %s" % e
            raise CelUnavailable(self._failed)

    def _call(self, req):
        for _ in range(2):
            if self._proc is None or self._proc.poll() is not None:
                self._proc = None
                self._start()
            self._id += 1
            req["id"] = self._id
            try:
                self._proc.stdin.write(json.dumps(req) + "\n")
                self._proc.stdin.flush()
                # one request outstanding at a time: the reader holds no buffered answer here
                ready, _, _ = select.select([self._proc.stdout], [], [], ANSWER_TIMEOUT_S)
                line = self._proc.stdout.readline() if ready else ""
            except (OSError, ValueError):
                line = ""
            if not line:
                self._failed = ("CEL evaluator process exited" if self._proc.poll() is not None else
                                "CEL evaluator did not answer within %g s" % ANSWER_TIMEOUT_S)
                try:
                    self._proc.kill()
                except OSError:
                    pass
                self._proc = None
                if "schema" not in req and req.get("op") == "validate":
                    raise _Resend()
                continue
            ans = json.loads(line)
            if ans.get("error"):
                raise CelUnavailable("CEL evaluator: %s" % ans["error"].splitlines()[0])
            return ans
        raise CelUnavailable(self._failed or "CEL evaluator process exited")

    def key_for(self, schema):
        ent = self._keys.get(id(schema))
        if ent is None or ent[0] is not schema:
            text = json.dumps(schema, sort_keys=True)
            ent = (schema, hashlib.sha1(text.encode()).hexdigest(), has_rules(schema))
            if len(self._keys) > 512:
                self._keys.clear()
            self._keys[id(schema)] = ent
        return ent[1], ent[2]

    def compile(self, schema):
        """[(path segments, rule index, field, message)] for every rule that does not compile."""
        with self._lock:
            return self._call({"op": "compile", "schema": schema})["errors"]

    def validate(self, schema, obj, old=None):
        """[(reason, field, message)] for every failed rule of a custom resource."""
        key, rules = self.key_for(schema)
        if not rules:
            return []
        with self._lock:
            for _ in range(3):
                req = {"op": "validate", "key": key, "obj": obj, "old": old}
                if key not in self._known:
                    req["schema"] = schema
                try:
                    ans = self._call(req)
                except _Resend:
                    continue
                if ans.get("unknown"):
                    self._known.discard(key)
                    continue
                self._known.add(key)
                return [tuple(c) for c in ans["causes"]]
        raise CelUnavailable(self._failed or "CEL evaluator did not answer")

    def close(self):
        p, self._proc = self._proc, None
        if p is not None:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.kill()
                p.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass

    @property
    def starts(self):
        return self._starts

    @property
    def pid(self):
        return self._proc.pid if self._proc is not None else None


class _Resend(Exception):
    pass


_instance = None
_ilock = threading.Lock()


def process():
    global _instance
    with _ilock:
        if _instance is None:
            _instance = CelProcess()
        return _instance


def internal_error(e):
    return E.internal("CEL validation rules cannot be evaluated: %s" % e)
