#!/usr/bin/env python3
"""The soak's independent checker: judges nodegate from the test API server's journal (every
committed write, with who wrote it: tests/apiserver --journal) and from the load client's record
of every eviction review it sent, never from nodegate's logs, metrics or caches.

Invariants, each a violation when broken:
  budget     At every transition of a NodeDisruption to Granted, every NodeDisruptionBudget and
             ApplicationDisruptionBudget that the request touches holds: its disrupted nodes
             (the nodes of every Granted request not being deleted, plus, for NDBs that count
             them, pool nodes that are NotReady or cordoned) within maxDisruptedNodes /
             maxDisruptions and above minUndisruptedNodes, and it is not frozen.
  eviction   No pod protected by an ApplicationDisruptionBudget is evicted through the API
             server unless its node was granted to a request.
  admission  Every eviction review sent to nodegate was answered (HTTP 200, an AdmissionReview)
             within LATENCY_LIMIT, and none allowed the eviction of a protected pod whose node
             was not granted.
  cordon     No node stays cordoned for longer than CORDON_SLACK without a live request
             (one not yet deleted) that covers it.
  decide     Every request is decided within DECIDE_SLACK of its creation, and every Pending
             request is looked at again (its status changes) within DECIDE_SLACK of its
             nextRetryDate.

nodegate decides from a cache fed by a watch; a fact younger than WINDOW seconds may not have
reached it. So each judgement gives nodegate the benefit of that window, and no more: a node
counts as unavailable, and a pod as an application's, only if it was so for the whole WINDOW
before the decision; a percentage is taken of the largest scope seen in the window, and a budget
edit counts with the loosest version in force in it; a node counts as granted if it was at any
moment in it. Everything else is exact: the journal is in commit order, and a request counts as
Granted from the write that granted it until the write that deletes it.

Usage (the soak runs it as its own process):
  checker.py --journal FILE --admissions FILE --stop FILE --out FILE
It follows both files until FILE --stop exists, reads what is left, and writes a JSON summary
to --out; exit status 1 when anything was violated."""
import argparse
import bisect
import calendar
import collections
import json
import math
import os
import sys
import time

WINDOW = 2.0          # s: how stale nodegate's cache may be at a decision
DECIDE_SLACK = 30.0   # s: a lease takeover (15 s) plus a restart and a resync
CORDON_SLACK = 60.0   # s: the drainer's takeover plus its backoff before it uncordons
LATENCY_LIMIT = 1.0   # s: an admission answer slower than this is a violation (release build)
KEEP = 120.0          # s: how long history (gone pods, grant intervals) is kept

ND = "nodegate.io/nodedisruptions"
NDB = "nodegate.io/nodedisruptionbudgets"
ADB = "nodegate.io/applicationdisruptionbudgets"


def parse_time(s):
    """RFC 3339 (as the API server and nodegate write it) to epoch seconds; None if absent."""
    if not s:
        return None
    frac = 0.0
    base = s.rstrip("Z")
    if "." in base:
        base, f = base.split(".", 1)
        frac = float("0." + f)
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + frac


def selector_matches(sel, labels):
    """A LabelSelector ({matchLabels, matchExpressions}); None selects nothing, {} everything."""
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def resolve(v, size):
    """An int-or-percent against @size (percentages round up, as PodDisruptionBudget's)."""
    if v is None:
        return None
    if isinstance(v, str) and v.endswith("%"):
        return math.ceil(int(v[:-1]) * size / 100)
    return int(v)


class Versions:
    """The specs a budget had over time: [(since, spec)]."""

    def __init__(self):
        self.items = []

    def add(self, t, spec):
        if not self.items or self.items[-1][1] != spec:
            self.items.append((t, spec))
            if len(self.items) > 64:
                del self.items[:-64]

    def in_window(self, a, b):
        """Every spec in force at some moment of [a, b]."""
        out = []
        for i, (since, spec) in enumerate(self.items):
            until = self.items[i + 1][0] if i + 1 < len(self.items) else float("inf")
            if since <= b and until >= a:
                out.append(spec)
        return out


class Pod:
    __slots__ = ("ns", "name", "labels", "node", "since", "gone", "finished", "terminating")

    def __init__(self, obj, t):
        md = obj["metadata"]
        self.ns, self.name = md.get("namespace", ""), md["name"]
        self.labels = md.get("labels") or {}
        self.node = (obj.get("spec") or {}).get("nodeName")
        self.since = t
        self.gone = None
        self.finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        self.terminating = t if md.get("deletionTimestamp") else None

    def counted_throughout(self, a, b):
        return self.node and not self.finished and self.since <= a and (self.gone is None or self.gone >= b)

    def counted_sometime(self, a, b):
        return self.node and not self.finished and self.since <= b and (self.gone is None or self.gone >= a)


class Checker:
    def __init__(self, window=WINDOW, decide_slack=DECIDE_SLACK, cordon_slack=CORDON_SLACK,
                 latency_limit=LATENCY_LIMIT):
        self.window, self.decide_slack = window, decide_slack
        self.cordon_slack, self.latency_limit = cordon_slack, latency_limit
        self.now = 0.0
        self.violations = []
        self.counts = collections.Counter()
        self.nodes = {}            # name -> labels
        self.unavail_since = {}    # node -> time it became NotReady or cordoned
        self.cordoned_since = {}   # node -> time spec.unschedulable became true
        self.pods = {}             # ns/name -> Pod
        self.pods_by_ns = collections.defaultdict(set)
        self.gone_pods = collections.deque()  # (t, key, Pod) of deleted pods, kept KEEP seconds
        self.gone_by_key = {}      # key -> Pod, the same pods
        self.gone_by_ns = collections.defaultdict(dict)
        self.ndbs = collections.defaultdict(Versions)
        self.adbs = collections.defaultdict(Versions)
        self.nds = {}              # name -> last object
        self.granted = {}          # nd name -> set(nodes): Granted and not being deleted
        self.grant_intervals = collections.defaultdict(list)  # node -> [[start, end or None]]
        self.covering = collections.defaultdict(set)  # node -> live requests naming it
        self.uncovered_since = {}  # node -> when its last covering request went away
        self.due = {}              # nd name -> time by which its status must change
        self.reported = set()      # (kind, key) already reported, so one fault is one violation
        self.pending_admissions = collections.deque()
        self.latencies = []

    # -- reporting -----------------------------------------------------------------------
    def violate(self, kind, key, msg):
        if (kind, key) in self.reported:
            return
        self.reported.add((kind, key))
        self.violations.append({"kind": kind, "t": round(self.now, 3), "message": msg})
        print(f"checker: VIOLATION {kind}: {msg}", file=sys.stderr, flush=True)

    # -- the journal ---------------------------------------------------------------------
    def feed(self, e):
        t = e["t"]
        self.now = max(self.now, t)
        res, typ, obj = e["resource"], e["type"], e["object"]
        if res == "/nodes":
            self.on_node(t, typ, obj)
        elif res == "/pods":
            self.on_pod(t, typ, obj, e.get("by"))
        elif res == ND:
            self.on_nd(t, typ, obj)
        elif res == NDB:
            self.ndbs[obj["metadata"]["name"]].add(t, None if typ == "DELETED" else obj.get("spec") or {})
        elif res == ADB:
            md = obj["metadata"]
            self.adbs[f"{md.get('namespace')}/{md['name']}"].add(t, None if typ == "DELETED" else obj.get("spec") or {})
        self.counts["journal entries"] += 1

    def on_node(self, t, typ, obj):
        name = obj["metadata"]["name"]
        if typ == "DELETED":
            self.nodes.pop(name, None)
            self.unavail_since.pop(name, None)
            self.cordoned_since.pop(name, None)
            return
        self.nodes[name] = obj["metadata"].get("labels") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (obj.get("status") or {}).get("conditions") or [])
        cordoned = bool((obj.get("spec") or {}).get("unschedulable"))
        if cordoned:
            self.cordoned_since.setdefault(name, t)
        else:
            self.cordoned_since.pop(name, None)
        if cordoned or not ready:
            self.unavail_since.setdefault(name, t)
        else:
            self.unavail_since.pop(name, None)

    def on_pod(self, t, typ, obj, by):
        md = obj["metadata"]
        key = f"{md.get('namespace', '')}/{md['name']}"
        if by and by.get("path", "").endswith("/eviction"):
            self.on_eviction(t, key, obj)
        if typ == "DELETED":
            p = self.pods.pop(key, None)
            if p:
                p.gone = t
                self.pods_by_ns[p.ns].discard(key)
                self.gone_pods.append((t, key, p))
                self.gone_by_key[key] = p
                self.gone_by_ns[p.ns][key] = p
            return
        p = self.pods.get(key)
        if p is None:
            p = self.pods[key] = Pod(obj, t)
            self.pods_by_ns[p.ns].add(key)
        else:
            p.node = (obj.get("spec") or {}).get("nodeName") or p.node
            p.finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if obj["metadata"].get("deletionTimestamp") and p.terminating is None:
                p.terminating = t

    def protected(self, p, a, b):
        """The ADBs that protected pod @p for the whole of [a, b]. A pod already being deleted
        is protected by nothing: evicting it changes nothing (the API server's eviction skips
        disruption budgets for it too)."""
        if not p.counted_throughout(a, b) or (p.terminating is not None and p.terminating <= b):
            return []
        out = []
        for key, vs in self.adbs.items():
            ns = key.split("/", 1)[0]
            if ns != p.ns:
                continue
            specs = vs.in_window(a, b)
            if specs and all(s is not None and selector_matches(s.get("podSelector"), p.labels) for s in specs):
                out.append(key)
        return out

    def granted_during(self, node, a, b):
        return any(s <= b and (e is None or e >= a) for s, e in self.grant_intervals.get(node, ()))

    def on_eviction(self, t, key, obj):
        p = self.pods.get(key)
        if p is None or p.gone is not None:
            return
        self.counts["evictions"] += 1
        adbs = self.protected(p, t - self.window, t)
        if not adbs:
            return
        self.counts["protected evictions"] += 1
        if not self.granted_during(p.node, t - self.window, t):
            self.violate("eviction", key, f"pod {key} on node {p.node}, protected by {', '.join(adbs)}, "
                                          "was evicted while no request had its node granted")

    def on_nd(self, t, typ, obj):
        name = obj["metadata"]["name"]
        prev = self.nds.get(name)
        pst = (prev or {}).get("status") or {}
        st = obj.get("status") or {}
        deleting = bool(obj["metadata"].get("deletionTimestamp"))
        # which nodes it names, for the cordon rule: while it exists, its nodes may be cordoned
        named = set(st.get("disruptedNodes") or []) | set((obj.get("spec") or {}).get("nodeNames") or [])
        old_named = set(pst.get("disruptedNodes") or []) | set(((prev or {}).get("spec") or {}).get("nodeNames") or [])
        if typ == "DELETED":
            named = set()
            self.nds.pop(name, None)
            self.due.pop(name, None)
        else:
            self.nds[name] = obj
        for n in old_named - named:
            self.covering[n].discard(name)
            if not self.covering[n]:
                self.uncovered_since[n] = t
        for n in named:
            self.covering[n].add(name)
        # Granted: from the write that grants until the one that starts deleting
        now_granted = typ != "DELETED" and st.get("state") == "Granted" and not deleting
        if now_granted and name not in self.granted:
            self.granted[name] = set(st.get("disruptedNodes") or [])
            self.counts["grants"] += 1
            self.check_budgets(t, name, obj)
            for n in self.granted[name]:
                self.grant_intervals[n].append([t, None])
        elif not now_granted and name in self.granted:
            for n in self.granted.pop(name):
                if not any(n in ns for ns in self.granted.values()):
                    for iv in self.grant_intervals[n]:
                        if iv[1] is None:
                            iv[1] = t
        if typ != "DELETED":
            ready = [c.get("reason") for c in st.get("conditions") or [] if c.get("type") == "Ready"]
            pready = [c.get("reason") for c in pst.get("conditions") or [] if c.get("type") == "Ready"]
            if ready == ["Drained"] and pready != ["Drained"]:
                self.counts["drains"] += 1
            if st.get("state") == "Rejected" and pst.get("state") != "Rejected":
                self.counts["rejections"] += 1
            # decide: a new request, and a Pending one, must see its status change in time
            if prev is None:
                self.due[name] = t + self.decide_slack
            elif st != pst:
                self.due.pop(name, None)
            if st != pst or prev is None:
                nrd = parse_time(st.get("nextRetryDate"))
                if st.get("state") == "Pending" and nrd:
                    self.due[name] = nrd + self.decide_slack
            if deleting:
                self.due.pop(name, None)

    def check_budgets(self, t, name, obj):
        nodes = self.granted[name]
        typ = (obj.get("spec") or {}).get("type") or ""
        a, b = t - self.window, t
        all_granted = set().union(*self.granted.values())
        for bname, vs in self.ndbs.items():
            specs = [s for s in vs.in_window(a, b) if s is not None]
            if not specs:
                continue
            sel = specs[-1].get("nodeSelector")
            pool = {n for n, labels in self.nodes.items() if selector_matches(sel, labels)}
            if not pool & nodes or not applies(specs, typ):
                continue
            if all((s.get("freeze") or {}).get("enabled") for s in specs):
                self.violate("budget", (bname, name), f"{name} granted {sorted(nodes)} in frozen NodeDisruptionBudget {bname}")
                continue
            disrupted = pool & all_granted
            if all(s.get("countUnavailableNodes", True) for s in specs):
                disrupted |= {n for n in pool if self.unavail_since.get(n, b + 1) <= a}
            self.judge("NodeDisruptionBudget", bname, name, specs, "maxDisruptedNodes", "minUndisruptedNodes",
                       len(pool), disrupted)
        for key, vs in self.adbs.items():
            specs = [s for s in vs.in_window(a, b) if s is not None]
            if not specs or any(s.get("pvcSelector") is not None for s in specs) or not applies(specs, typ):
                continue  # PVC-backed scopes are not followed by this checker
            ns = key.split("/", 1)[0]
            sel = specs[-1].get("podSelector")
            pods = [self.pods[k] for k in self.pods_by_ns.get(ns, ())]
            pods += list(self.gone_by_ns[ns].values())
            inside, sometime = set(), set()
            for p in pods:
                if not selector_matches(sel, p.labels):
                    continue
                if p.counted_throughout(a, b):
                    inside.add(p.node)
                if p.counted_sometime(a, b):
                    sometime.add(p.node)
            if not sometime & nodes:
                continue
            if all((s.get("freeze") or {}).get("enabled") for s in specs):
                self.violate("budget", (key, name), f"{name} granted {sorted(nodes)} in frozen ApplicationDisruptionBudget {key}")
                continue
            self.judge("ApplicationDisruptionBudget", key, name, specs, "maxDisruptions", None,
                       len(sometime), inside & all_granted)

    def judge(self, kind, bname, name, specs, max_field, min_field, size, disrupted):
        """Over budget when no version in force in the window allows @disrupted."""
        def allows(s):
            mx = resolve(s.get(max_field), size)
            mn = resolve(s.get(min_field), size) if min_field else None
            return (mx is None or len(disrupted) <= mx) and (mn is None or size - len(disrupted) >= mn)
        self.counts["budget checks"] += 1
        if not any(allows(s) for s in specs):
            lim = "/".join(str(s.get(max_field) if s.get(max_field) is not None else f"min {s.get(min_field)}") for s in specs)
            self.violate("budget", (bname, name),
                         f"granting {name} put {kind} {bname} at {len(disrupted)} disrupted of {size} "
                         f"(allows {lim}): {sorted(disrupted)[:12]}")

    # -- the load client's record ----------------------------------------------------------
    def admission(self, rec):
        """One eviction review: {t, lat, code, allowed, pod, error}. Judged once the journal
        has passed its answer, so the grant history around it is known."""
        self.pending_admissions.append(rec)

    def judge_admissions(self, upto):
        while self.pending_admissions and self.pending_admissions[0]["t"] + self.pending_admissions[0]["lat"] + 0.5 <= upto:
            rec = self.pending_admissions.popleft()
            self.counts["admission reviews"] += 1
            self.latencies.append(rec["lat"])
            key = ("admission", rec["t"], rec["pod"])
            if rec.get("code") != 200 or rec.get("error"):
                self.violate("admission", key, f"review of {rec['pod']} at {rec['t']:.3f} failed: "
                                              f"{rec.get('code')} {rec.get('error') or ''}".strip())
                continue
            if rec["lat"] > self.latency_limit:
                self.violate("admission", key, f"review of {rec['pod']} took {rec['lat']:.3f} s")
            if not rec.get("allowed"):
                self.counts["admission denials"] += 1
                continue
            p = self.pods.get(rec["pod"]) or self.gone_by_key.get(rec["pod"])
            if p is None:
                continue
            a, b = rec["t"] - self.window, rec["t"] + rec["lat"]
            adbs = self.protected(p, a, b)
            if adbs and not self.granted_during(p.node, a, b):
                self.violate("admission", key, f"allowed the eviction of {rec['pod']} on node {p.node}, "
                                              f"protected by {', '.join(adbs)}, with no grant for its node")

    # -- time ------------------------------------------------------------------------------
    def tick(self, now):
        """The rules that fire on time passing rather than on a write."""
        self.now = max(self.now, now)
        now = self.now
        self.judge_admissions(now)
        for name, due in list(self.due.items()):
            if now > due:
                st = (self.nds.get(name) or {}).get("status") or {}
                self.violate("decide", (name, due), f"request {name} ({st.get('state') or 'new'}, nextRetryDate "
                                                    f"{st.get('nextRetryDate')}) not looked at {self.decide_slack:.0f} s past due")
                self.due.pop(name)
        for node, since in self.cordoned_since.items():
            if self.covering.get(node):
                continue
            orphan = max(since, self.uncovered_since.get(node, since))
            if now - orphan > self.cordon_slack:
                self.violate("cordon", (node, orphan), f"node {node} cordoned for {now - orphan:.0f} s with no live request")
        while self.gone_pods and self.gone_pods[0][0] < now - KEEP:
            _, key, p = self.gone_pods.popleft()
            if self.gone_by_key.get(key) is p:
                del self.gone_by_key[key]
                del self.gone_by_ns[p.ns][key]
        for node, ivs in self.grant_intervals.items():
            if len(ivs) > 8:
                ivs[:] = [iv for iv in ivs if iv[1] is None or iv[1] >= now - KEEP]

    def finish(self, now):
        """After the run: every admission judged, and nothing left cordoned."""
        self.tick(now)
        self.judge_admissions(float("inf"))
        for node in self.cordoned_since:
            if not self.covering.get(node):
                self.violate("cordon", (node, "end"), f"node {node} still cordoned at the end with no live request")

    def summary(self):
        lat = sorted(self.latencies)

        def q(x):
            return round(lat[min(len(lat) - 1, int(x * len(lat)))] * 1000, 2) if lat else None
        by_kind = collections.Counter(v["kind"] for v in self.violations)
        return {"counts": dict(self.counts), "violations": self.violations, "violations_by_kind": dict(by_kind),
                "admission_ms": {"p50": q(0.5), "p99": q(0.99), "max": round(lat[-1] * 1000, 2) if lat else None}}


def applies(specs, typ):
    return any(not s.get("supportedNodeDisruptionTypes") or typ in s["supportedNodeDisruptionTypes"] for s in specs)


class Follower:
    """Reads whole lines appended to a file, as they come."""

    def __init__(self, path):
        self.path, self.f, self.rest = path, None, ""

    def lines(self):
        if self.f is None:
            if not os.path.exists(self.path):
                return []
            self.f = open(self.path, encoding="utf-8")
        data = self.rest + self.f.read()
        parts = data.split("\n")
        self.rest = parts.pop()
        return [json.loads(p) for p in parts if p]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--journal", required=True)
    ap.add_argument("--admissions", required=True)
    ap.add_argument("--stop", required=True, help="finish once this file exists")
    ap.add_argument("--out", required=True)
    ap.add_argument("--latency-limit", type=float, default=LATENCY_LIMIT,
                    help="seconds: an admission answer slower than this is a violation")
    a = ap.parse_args()
    c = Checker(latency_limit=a.latency_limit)
    journal, adm = Follower(a.journal), Follower(a.admissions)
    while True:
        stopping = os.path.exists(a.stop)
        # Everything committed before this moment is in what is read next (the API server
        # writes each line through as it commits): time-based rules are judged at this moment,
        # not at the end of reading, so a checker that falls behind never judges a moment whose
        # writes it has not read yet.
        t_read = time.time()
        for e in journal.lines():
            c.feed(e)
        for r in adm.lines():
            c.admission(r)
        if stopping:
            break
        c.tick(t_read)
        time.sleep(0.2)
    c.finish(time.time())
    s = c.summary()
    with open(a.out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(s, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return 1 if c.violations else 0


if __name__ == "__main__":
    sys.exit(main())
