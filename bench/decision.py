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
qsort), requests granted.

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


def run_json(exe, s):
    nodes, ppn, adbs, ndbs, granted, pending, rounds = s
    args = [exe, "--nodes", str(nodes), "--pods-per-node", str(ppn), "--adbs", str(adbs),
            "--ndbs", str(ndbs), "--granted", str(granted), "--pending", str(pending),
            "--rounds", str(rounds), "--json"]
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
    results = []
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
    bl.finish("B4", rows)


if __name__ == "__main__":
    main()
