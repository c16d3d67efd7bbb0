"""Object storage with etcd-like semantics.

* One global resourceVersion counter (like an etcd revision), bumped by every write.
* Objects are stored as dicts and are never mutated after commit (writers copy first),
  so readers can serialise them without holding the lock for long.
* Keys are "name" (cluster scoped) or "namespace/name", kept sorted per resource so
  paginated lists walk them in etcd key order.
* Every write appends (rv, rkey, type, object, previous) to a bounded history. Watches
  replay it from their resourceVersion; a version older than the retained window is
  "too old" (410 Expired). Paginated lists with a continue token are served from the
  snapshot at the token's revision by undoing later history entries, and expire (410)
  when that history has been compacted — as etcd compaction does.
"""
import base64
import bisect
import json
import threading
import time

# The request a handler thread is serving (user, verb, path), for the journal: set by the HTTP
# layer around each request; the server's own controllers (kubelet, garbage collector, node
# lifecycle) write with none.
REQUEST = threading.local()


class ResourceTable:
    __slots__ = ("objs", "keys")

    def __init__(self):
        self.objs = {}
        self.keys = []

    def put(self, key, obj):
        if key not in self.objs:
            bisect.insort(self.keys, key)
        self.objs[key] = obj

    def remove(self, key):
        if key in self.objs:
            del self.objs[key]
            i = bisect.bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                del self.keys[i]


class Expired(Exception):
    pass


def make_key(ns, name):
    return "%s/%s" % (ns, name) if ns else name


def encode_continue(rv, start_key):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start_key + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(tok):
    pad = "=" * (-len(tok) % 4)
    try:
        d = json.loads(base64.urlsafe_b64decode(tok + pad).decode())
        if d.get("v") != "meta.k8s.io/v1":
            raise ValueError
        return int(d["rv"]), d["start"]
    except Exception:
        raise ValueError("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")


class Store:
    def __init__(self, history_limit=20000):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 1
        self.tables = {}
        self.history = []          # list of (rv, rkey, type, obj, prev)
        self.history_rvs = []      # parallel list of rv, for bisect
        self.history_limit = history_limit
        self.compacted_rv = 1      # watches from rv >= this can be served
        self.watch_epoch = 0       # bumped to drop every open watch
        self.closed = False
        self.dependents = {}       # owner uid -> {(rkey, key)}: the garbage collector's graph
        self.uids = {}             # uid -> (rkey, key) of live objects
        self.journal = None        # a text file: one JSON line per committed write (--journal)

    # -- low level -------------------------------------------------------------
    def table(self, rkey):
        t = self.tables.get(rkey)
        if t is None:
            t = self.tables[rkey] = ResourceTable()
        return t

    def get(self, rkey, key):
        with self.lock:
            t = self.tables.get(rkey)
            return t.objs.get(key) if t else None

    def next_rv(self):
        self.rv += 1
        return self.rv

    def _record(self, rv, rkey, typ, obj, prev):
        if self.journal is not None:
            self._journal(rv, rkey, typ, obj)
        self.history.append((rv, rkey, typ, obj, prev))
        self.history_rvs.append(rv)
        if len(self.history) > self.history_limit + 1000:
            self._trim(len(self.history) - self.history_limit)
        self.cond.notify_all()

    def open_journal(self, path):
        """Start the journal at @path (appended to): first every stored object as an INITIAL
        line at the current resourceVersion, then each write as it commits."""
        with self.lock:
            self.journal = open(path, "a", encoding="utf-8")
            for rkey in sorted(self.tables):
                t = self.tables[rkey]
                for key in t.keys:
                    self._journal(self.rv, rkey, "INITIAL", t.objs[key])

    def _journal(self, rv, rkey, typ, obj):
        """One line per write, in commit order (the caller holds the lock): the new
        resourceVersion, wall time, resource, event type, the object as stored, and who wrote it
        ("by": user, verb, path; null for the server's own controllers). Written through at once,
        so a reader following the file sees each write as it commits."""
        ctx = getattr(REQUEST, "ctx", None)
        line = json.dumps({"rv": rv, "t": round(time.time(), 6), "resource": rkey, "type": typ,
                           "by": ctx, "object": obj}, separators=(",", ":"))
        self.journal.write(line + "\n")
        self.journal.flush()

    def _trim(self, n):
        if n <= 0:
            return
        n = min(n, len(self.history))
        last = self.history_rvs[n - 1]
        del self.history[:n]
        del self.history_rvs[:n]
        self.compacted_rv = max(self.compacted_rv, last)

    def compact(self):
        """Drop all history: every watch/continue from an older version now gets 410."""
        with self.lock:
            self._trim(len(self.history))
            self.compacted_rv = self.rv
            self.cond.notify_all()

    def drop_watches(self):
        with self.lock:
            self.watch_epoch += 1
            self.cond.notify_all()

    def commit(self, rkey, key, obj, typ, rv=None):
        """Store `obj` (already carrying its new metadata.resourceVersion) and record the event.
        typ is ADDED/MODIFIED/DELETED. Caller holds self.lock and called next_rv()."""
        t = self.table(rkey)
        prev = t.objs.get(key)
        if prev is not None:
            self._unindex(rkey, key, prev)
        if typ == "DELETED":
            t.remove(key)
        else:
            t.put(key, obj)
            self._index(rkey, key, obj)
        self._record(int(obj["metadata"]["resourceVersion"]), rkey, typ, obj, prev)

    def bulk_load(self, rkey, key, obj):
        """Insert without history (fixtures/generator). Caller holds the lock."""
        t = self.table(rkey)
        prev = t.objs.get(key)
        if prev is not None:
            self._unindex(rkey, key, prev)
        t.put(key, obj)
        self._index(rkey, key, obj)

    def _index(self, rkey, key, obj):
        md = obj["metadata"]
        if md.get("uid"):
            self.uids[md["uid"]] = (rkey, key)
        for ref in md.get("ownerReferences") or []:
            if ref.get("uid"):
                self.dependents.setdefault(ref["uid"], set()).add((rkey, key))

    def _unindex(self, rkey, key, obj):
        md = obj["metadata"]
        if md.get("uid") and self.uids.get(md["uid"]) == (rkey, key):
            del self.uids[md["uid"]]
        for ref in md.get("ownerReferences") or []:
            deps = self.dependents.get(ref.get("uid"))
            if deps is not None:
                deps.discard((rkey, key))
                if not deps:
                    del self.dependents[ref.get("uid")]

    # -- list ------------------------------------------------------------------
    def list(self, rkey, ns=None, pred=None, limit=0, cont=None):
        """Return (items, list_rv, continue_token, remaining_count_or_None).

        pred(obj) -> bool filters. Snapshot semantics as described in the module docstring.
        """
        with self.lock:
            t = self.table(rkey)
            if cont:
                snap_rv, start = decode_continue(cont)
                if snap_rv < self.compacted_rv:
                    raise Expired("The provided continue parameter is too old to display a consistent list result. "
                                  "You can start a new list without the continue parameter, or use the continue token "
                                  "in this response to retrieve the remainder of the results. Continuing with the "
                                  "provided token results in an inconsistent list - objects that were created, "
                                  "modified, or deleted between the time the first chunk was returned and now may "
                                  "show up in the list.")
            else:
                snap_rv, start = self.rv, None
            overlay = {}
            if snap_rv < self.rv:
                i = bisect.bisect_right(self.history_rvs, snap_rv)
                for j in range(len(self.history) - 1, i - 1, -1):
                    ev = self.history[j]
                    if ev[1] == rkey:
                        k = _obj_key(ev[3])
                        overlay[k] = ev[4]
            keys = t.keys
            prefix = (ns + "/") if ns else None
            lo = 0
            hi = len(keys)
            if prefix:
                lo = bisect.bisect_left(keys, prefix)
                hi = bisect.bisect_left(keys, ns + "0")  # '0' is the char after '/'
            if start is not None:
                lo = max(lo, bisect.bisect_left(keys, start))
            extra = []
            if overlay:
                extra = sorted(k for k in overlay if k not in t.objs and overlay[k] is not None
                               and (prefix is None or k.startswith(prefix))
                               and (start is None or k >= start))
            items = []
            last_key = None
            more = False
            ei = 0
            idx = lo
            while True:
                # merge the sorted current keys [idx, hi) with `extra`
                if idx < hi and (ei >= len(extra) or keys[idx] <= extra[ei]):
                    k = keys[idx]
                    idx += 1
                elif ei < len(extra):
                    k = extra[ei]
                    ei += 1
                else:
                    break
                obj = overlay[k] if k in overlay else t.objs[k]
                if obj is None:
                    continue
                if pred is not None and not pred(obj):
                    continue
                if limit and len(items) >= limit:
                    more = True
                    break
                items.append(obj)
                last_key = k
            token = None
            remaining = None
            if more:
                token = encode_continue(snap_rv, last_key)
                if pred is None:
                    remaining = (hi - idx + 1) + (len(extra) - ei)
            return items, snap_rv, token, remaining

    # -- watch -----------------------------------------------------------------
    def events_since(self, rv):
        """Return history entries with rv > `rv`, or raise Expired. Caller holds the lock."""
        if rv < self.compacted_rv:
            raise Expired("too old resource version: %d (%d)" % (rv, self.compacted_rv))
        i = bisect.bisect_right(self.history_rvs, rv)
        return self.history[i:]


def save(store, path):
    """Write every object and the revision counter to `path` (JSON, atomically)."""
    import os
    with store.lock:
        data = {"resourceVersion": store.rv,
                "tables": {rk: [t.objs[k] for k in t.keys] for rk, t in store.tables.items()}}
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, separators=(",", ":"))
    os.replace(tmp, path)


def _obj_key(obj):
    md = obj["metadata"]
    return make_key(md.get("namespace"), md["name"])
