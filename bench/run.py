#!/usr/bin/env python3
"""Runs nodegate's benchmarks B1-B11 (called by scripts/bench, which builds build-bench first),
prints their results as tables and, on a full run (or with --write), rewrites the generated
tables of docs/benchmarks.md between their markers.

Each benchmark is a program under bench/ whose last stdout line is {"id", "rows"} (see
bench/benchlib.py); its progress goes to stderr, passed through here.

Usage: bench/run.py --build DIR [--quick|--smoke] [--only B3,B8] [--write]"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
ALL = ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10", "B11"]
TITLES = {
    "B1": "B1 eviction webhook throughput",
    "B2": "B2 eviction webhook latency at a fixed rate",
    "B3": "B3 grant latency through the test API server",
    "B4": "B4 decision cost (a gate round without I/O)",
    "B5": "B5 bytes per cached pod and RSS",
    "B6": "B6 start → /readyz beside the floor",
    "B7": "B7 rolling maintenance with the drainer",
    "B8": "B8 hook isolation",
    "B9": "B9 what-if planner",
    "B10": "B10 scaling table (1,000 to 100,000 nodes)",
    "B11": "B11 randomized safety at scale (100,000 nodes)",
}
COLUMNS = ["measure", "min", "median", "max", "reference (median)", "ratio", "target", "met", "command"]


def programs(build, nodegate):
    """[(benchmarks covered, argv without mode flags, why it cannot run or None)]."""
    out = []
    webhook = os.path.join(ROOT, "bench", "webhook.py")
    loadgen = os.path.join(build, "bench", "bench-loadgen")
    why = None
    if not os.path.exists(webhook):
        why = "bench/webhook.py is not in this tree"
    elif not shutil.which("wrk") or not shutil.which("nginx"):
        why = "wrk or nginx is not installed"
    elif not os.path.exists(loadgen):
        why = "build-bench/bench/bench-loadgen was not built"
    out.append((["B1", "B2"], [sys.executable, webhook, "--nodegate", nodegate, "--loadgen", loadgen], why))
    for ids, script, *extra in ((["B3"], "grant.py"), (["B4"], "decision.py"), (["B5", "B6"], "cache.py"),
                                (["B7"], "rolling.py"), (["B8"], "hooks.py"), (["B8"], "hooks.py", "--v2"),
                                (["B9"], "plan.py"), (["B10"], "scale.py"),
                                (["B11"], "safety_scale.py")):
        out.append((ids, [sys.executable, os.path.join(ROOT, "bench", script), "--nodegate", nodegate, *extra],
                    None))
    return out


def facts():
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if dirty:
            commit += " (with uncommitted changes)"
    except OSError:
        commit = "unknown"
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit}


def fmt(x, unit=""):
    if x is None:
        return "—"
    if isinstance(x, float) and not x.is_integer() or isinstance(x, float) and abs(x) < 10:
        a = abs(x)
        s = f"{x:.3f}" if a < 1 else f"{x:.2f}" if a < 10 else f"{x:.1f}" if a < 1000 else f"{x:,.0f}"
    else:
        s = f"{int(x):,}"
    return s if unit == "count" else f"{s} {unit}".strip()


def table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        v, unit = r.get("value") or {}, r.get("unit") or ""
        ref = r.get("reference")
        refcell = "—"
        if ref:
            refcell = f"{fmt(ref['median'], unit)} ({r.get('reference_name') or 'reference'})"
        ratio = r.get("ratio")
        met = {True: "yes", False: "**no**", None: "—"}[r.get("met")]
        cells = [r["measure"], fmt(v.get("min"), unit), fmt(v.get("median"), unit), fmt(v.get("max"), unit),
                 refcell, fmt(ratio["median"]) if ratio else "—", r.get("target") or "—", met,
                 f"`{r['command']}`"]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def not_run(bench, why):
    return {"bench": bench, "measure": f"not run: {why}", "value": None, "unit": None, "reference": None,
            "reference_name": None, "ratio": None, "target": None, "met": None, "command": "scripts/bench"}


def run_program(argv, mode_flags, timeout):
    """Runs one benchmark; returns (rows, error). stderr goes through to ours."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv + mode_flags, stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout,
                           cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    took = time.monotonic() - t0
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    try:
        res = json.loads(lines[-1])
        rows = res["rows"]
    except (IndexError, ValueError, KeyError, TypeError):
        return None, f"exit status {p.returncode}, no result line"
    print(f"   ({os.path.basename(argv[1])}: {took:.0f} s)", file=sys.stderr, flush=True)
    return rows, None if p.returncode == 0 else f"exit status {p.returncode}"


def rewrite(ids, by_bench, f):
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    block = (f"- `nproc`: {f['nproc']}\n- CPU: {f['cpu']}\n- kernel: {f['kernel']}\n"
             f"- date: {f['date']}\n- commit: {f['commit']}\n")
    text = replace_between(text, "facts", block)
    for b in ids:
        body = (f"Measured {f['date']} at {f['commit']}.\n\n" + table(by_bench.get(b) or [not_run(b, "no rows")]) + "\n")
        text = replace_between(text, b, body)
    with open(DOC, "w", encoding="utf-8") as fh:
        fh.write(text)


def replace_between(text, key, body):
    begin, end = f"<!-- bench:begin {key} -->", f"<!-- bench:end {key} -->"
    pat = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pat.search(text):
        raise SystemExit(f"docs/benchmarks.md has no {begin} … {end}")
    return pat.sub(lambda _: f"{begin}\n{body}{end}", text, count=1)


def main():
    ap = argparse.ArgumentParser(description="nodegate's benchmarks B1-B11")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true")
    g.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", help="comma-separated subset, e.g. B3,B8")
    ap.add_argument("--write", action="store_true", help="rewrite docs/benchmarks.md after a --quick run too")
    ap.add_argument("--json", help="also write every row to this file")
    a = ap.parse_args()
    want = ALL if not a.only else [x.strip().upper() for x in a.only.split(",") if x.strip()]
    bad = [x for x in want if x not in ALL]
    if bad:
        ap.error(f"unknown benchmark {', '.join(bad)}; known: {', '.join(ALL)}")
    nodegate = os.path.join(os.path.abspath(a.build), "cmd", "nodegate")
    mode = ["--smoke"] if a.smoke else ["--quick"] if a.quick else []
    f = facts()
    print(f"== nodegate benchmarks ({'smoke' if a.smoke else 'quick' if a.quick else 'full'}): "
          f"{f['nproc']} × {f['cpu']}, kernel {f['kernel']}, {f['date']}, commit {f['commit']}", flush=True)
    t_all = time.monotonic()
    by_bench, failures = {}, []
    for ids, argv, why in programs(os.path.abspath(a.build), nodegate):
        ids = [b for b in ids if b in want]
        if not ids:
            continue
        if why:
            print(f"SKIP {'/'.join(ids)}: {why}", flush=True)
            for b in ids:
                by_bench[b] = [not_run(b, why)]
            continue
        print(f"== {'/'.join(ids)}: {' '.join(os.path.relpath(x, ROOT) if x.startswith(ROOT) else x for x in argv[1:2])}",
              file=sys.stderr, flush=True)
        flags = list(mode)
        if ids == ["B1", "B2"]:
            # bench/webhook.py takes --quick, --runs and --seconds (no --smoke).
            flags = (["--quick", "--runs", "1", "--seconds", "1"] if a.smoke else
                     ["--quick", "--runs", "1"] if a.quick else ["--runs", "3"])
        # B10's full run lists up to a million pods per run, B11's decides at 100,000 nodes: by
        # hand, with hours to spare.
        full = {"B10": 14400, "B11": 3600}.get(ids[0]) if not mode else None
        rows, err = run_program(argv, flags, timeout=full or 900)
        if rows is None:
            failures.append(f"{'/'.join(ids)}: {err}")
            for b in ids:
                by_bench[b] = [not_run(b, f"failed ({err})")]
            continue
        if err:
            failures.append(f"{'/'.join(ids)}: {err}")
        for r in rows:
            by_bench.setdefault(r.get("bench"), []).append(r)
    total = time.monotonic() - t_all
    for b in want:
        print(f"\n### {TITLES[b]}\n\n{table(by_bench.get(b) or [not_run(b, 'no rows')])}")
    print(f"\nall benchmarks: {total:.0f} s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"facts": f, "seconds": total, "benchmarks": {b: by_bench.get(b) or [] for b in want}}, fh,
                      indent=1)
    if not mode or a.write:
        rewrite(want, by_bench, f)
        print(f"rewrote {os.path.relpath(DOC, ROOT)}: {', '.join(want)}")
    for x in failures:
        print("FAILED " + x, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
