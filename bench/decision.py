#!/usr/bin/env python3
"""B4 decision cost: one gate round without I/O (bench-gate-round), run by run.

bench-gate-round generates a cluster in memory (NODES nodes, racks of 20, budgets), ranks PENDING
NodeDisruptions as the gate does and decides each with one ledger; its reference, timed in the
same process, is qsort of the same requests by precomputed keys. Each run is one invocation
(the best of ROUNDS rounds inside it).

It is called as `bench-gate-round --nodes N --pods-per-node M --adbs A --ndbs B --granted G
--pending P --rounds R --json` (last line {"decide_us_per_request", "rank_ms", "qsort_ms",
"granted"}); a build whose bench-gate-round does not take these flags (it prints its usage and
exits non-zero) is run as `bench-gate-round NODES PENDING ROUNDS` and its text is read instead:
then only NODES and PENDING apply.

Rows: decision per request (target <= 20 us; reference: qsort per request), ranking (reference:
qsort), requests granted, the budget status pass that follows a round (every budget's status on
the round's ledger). Then the same cluster with hostile budgets beside it (security finding 6:
budgets any namespace may create must not slow the gate for everyone): a namespace with a pod on
every node and HOSTILE ApplicationDisruptionBudgets over all of them, each with 16 always-open
maintenance windows (`--hostile-adbs`, `--hostile-windows`), so every request touches each of
them; its decision per request, its round's first decision (which computes the budgets' scopes
and windows) and its status pass, each beside the same figure without them in the same run;
and the decision per request with the same budgets over one node no request touches
(`--hostile-nodes 1`: unrelated to every request). Last, pacing (it costs only the budgets that
set it): the decision per request with every budget paced (`--paced`: soakSeconds 900 and
minIntervalSeconds 600, so fewer grants) and with every budget soaking only (`--soaked`: the same
grants), each beside the same figure without pacing.

Usage: bench/decision.py [--quick|--smoke] [--runs N] [--gate-round PATH]"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

# nodes, pods per node, ADBs, NDBs, granted, pending, rounds
SCALE = {"full": (5000, 30, 2000, 250, 500, 1000, 3), "quick": (5000, 30, 2000, 250, 500, 1000, 1),
         "smoke": (200, 2, 20, 10, 10, 50, 1)}
# Hostile budgets beside the cluster, and windows each (the finding: 200 x 16).
HOSTILE = {"full": (200, 16), "quick": (200, 16), "smoke": (20, 16)}


def run_json(exe, s, extra=()):
    nodes, ppn, adbs, ndbs, granted, pending, rounds = s
    args = [exe, "--nodes", str(nodes), "--pods-per-node", str(ppn), "--adbs", str(adbs),
            "--ndbs", str(ndbs), "--granted", str(granted), "--pending", str(pending),
            "--rounds", str(rounds), "--json", *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None, r.stderr.strip()
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    try:
        return json.loads(lines[-1]), None
    except (IndexError, ValueError):
        return None, "no JSON line"


def run_positional(exe, s):
    nodes, _, _, _, _, pending, rounds = s
    r = subprocess.run([exe, str(nodes), str(pending), str(rounds)], capture_output=True, text=True,
                       timeout=600, check=True)
    rank = re.search(r"rank:\s+([\d.]+) ms \(reference qsort of the keys: ([\d.]+) ms", r.stdout)
    dec = re.search(r"decide:\s+[\d.]+ ms for all (\d+) \(([\d.]+) us each\), (\d+) granted", r.stdout)
    if not rank or not dec:
        raise RuntimeError("cannot read bench-gate-round's output:\n" + r.stdout)
    return {"decide_us_per_request": float(dec.group(2)), "rank_ms": float(rank.group(1)),
            "qsort_ms": float(rank.group(2)), "granted": int(dec.group(3)), "pending": int(dec.group(1))}


def main():
    p = bl.parser(__doc__)
    p.add_argument("--gate-round", help="bench-gate-round (default: beside --nodegate's build)")
    a = bl.parse(p)
    exe = a.gate_round or os.path.join(os.path.dirname(os.path.dirname(a.nodegate)), "bench", "bench-gate-round")
    s = SCALE[bl.mode(a)]
    nodes, ppn, adbs, ndbs, granted0, pending, rounds = s
    cmd = bl.command("decision.py", a)
    nhostile, nwindows = HOSTILE[bl.mode(a)]
    results, hostile, unrelated, paced, soaked = [], [], [], [], []
    legacy = False
    for r in range(a.runs):
        res, why = (None, "positional") if legacy else run_json(exe, s)
        if res is None:
            if not legacy:
                bl.log(f"  bench-gate-round does not take --json ({why.splitlines()[0] if why else ''}): "
                       "positional interface, NODES PENDING ROUNDS only")
            legacy = True
            res = run_positional(exe, s)
        res.setdefault("pending", pending)
        bl.log(f"  run {r + 1}: decide {res['decide_us_per_request']:.1f} us per request, rank "
               f"{res['rank_ms']:.3f} ms, qsort {res['qsort_ms']:.3f} ms, {res['granted']} granted")
        results.append(res)
        # A build without --hostile-adbs (or without the status pass) leaves those rows empty.
        h = None
        if not legacy and "status_pass_ms" in res:
            h, why = run_json(exe, s, ("--hostile-adbs", str(nhostile), "--hostile-windows", str(nwindows)))
            if h is not None:
                bl.log(f"  run {r + 1}, {nhostile} hostile budgets x {nwindows} windows: decide "
                       f"{h['decide_us_per_request']:.1f} us per request, first decision "
                       f"{h['first_decision_us']:.0f} us, status pass {h['status_pass_ms']:.3f} ms")
        hostile.append(h)
        # The same budgets over one node no request touches: unrelated to every request.
        u = None
        if h is not None:
            u, why = run_json(exe, s, ("--hostile-adbs", str(nhostile), "--hostile-windows", str(nwindows),
                                       "--hostile-nodes", "1"))
            if u is not None:
                bl.log(f"  run {r + 1}, the same on a node no request touches: decide "
                       f"{u['decide_us_per_request']:.1f} us per request")
        unrelated.append(u)
        # Every budget paced, then every budget soaking only (a build without the flags: none).
        pc = run_json(exe, s, ("--paced",))[0] if not legacy else None
        sk = run_json(exe, s, ("--soaked",))[0] if pc is not None else None
        if pc is not None and sk is not None:
            bl.log(f"  run {r + 1}, every budget paced: decide {pc['decide_us_per_request']:.1f} us per request "
                   f"({pc['granted']} granted); soaking only: {sk['decide_us_per_request']:.1f} us")
        paced.append(pc)
        soaked.append(sk)
    if legacy:
        what = f"{nodes} nodes, {pending} pending, racks of 20 with an NDB each"
    else:
        what = (f"{nodes} nodes × {ppn} pods, {adbs} ADBs, {ndbs} NDBs, {granted0} granted, "
                f"{pending} pending")
    col = lambda k: [x[k] for x in results]  # noqa: E731
    per_req_qsort = [x["qsort_ms"] * 1000 / x["pending"] for x in results]
    rows = [
        bl.row("B4", f"decision per request ({what}; best of {rounds} rounds)",
               col("decide_us_per_request"), "µs", cmd, reference=per_req_qsort,
               reference_name="qsort of the same requests, per request", target="≤ 20 µs",
               met=lambda v, _: v["median"] <= 20),
        bl.row("B4", f"ranking all {pending} pending", col("rank_ms"), "ms", cmd,
               reference=col("qsort_ms"), reference_name="qsort of the same requests by precomputed keys"),
        bl.row("B4", "requests granted in the round", col("granted"), "count", cmd),
    ]
    if any(h is not None for h in hostile):
        base = lambda k: [x.get(k) if h is not None else None for x, h in zip(results, hostile)]  # noqa: E731
        hcol = lambda k: [h[k] if h is not None else None for h in hostile]  # noqa: E731
        beside = f"{nhostile} hostile ADBs × {nwindows} always-open windows over every node beside it"
        rows += [
            bl.row("B4", "budget status pass after a round (every budget's status)",
                   base("status_pass_ms"), "ms", cmd),
            bl.row("B4", f"decision per request, {beside}", hcol("decide_us_per_request"), "µs", cmd,
                   reference=base("decide_us_per_request"), reference_name="the same without them"),
            bl.row("B4", f"first decision of a round (it computes every budget's scope and windows), {beside}",
                   [v / 1000 if v is not None else None for v in hcol("first_decision_us")], "ms", cmd,
                   reference=[v / 1000 if v is not None else None for v in base("first_decision_us")],
                   reference_name="the same without them"),
            bl.row("B4", f"budget status pass, {beside}", hcol("status_pass_ms"), "ms", cmd,
                   reference=base("status_pass_ms"), reference_name="the same without them"),
        ]
    if any(u is not None for u in unrelated):
        rows.append(bl.row(
            "B4", f"decision per request, the same {nhostile} hostile ADBs over one node no request touches",
            [u["decide_us_per_request"] if u is not None else None for u in unrelated], "µs", cmd,
            reference=[x["decide_us_per_request"] if u is not None else None for x, u in zip(results, unrelated)],
            reference_name="the same without them"))
    if any(x is not None for x in paced):
        mine = lambda v: [x["decide_us_per_request"] if x is not None else None for x in v]  # noqa: E731
        base = [x["decide_us_per_request"] if p is not None else None for x, p in zip(results, paced)]
        rows += [
            bl.row("B4", "decision per request, every budget paced (soakSeconds 900, minIntervalSeconds 600: "
                   f"{paced[0]['granted'] if paced[0] else '?'} granted instead of {results[0]['granted']})",
                   mine(paced), "µs", cmd, reference=base, reference_name="the same without pacing"),
            bl.row("B4", "decision per request, every budget with soakSeconds 900 (the same grants)",
                   mine(soaked), "µs", cmd, reference=base, reference_name="the same without pacing"),
        ]
    bl.finish("B4", rows)


if __name__ == "__main__":
    main()
