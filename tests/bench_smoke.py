#!/usr/bin/env python3
"""The bench suite: `scripts/bench --smoke` (every benchmark at a tiny scale, one run) against
the build under test, and every benchmark B1..B11 produced its rows with numbers. B1/B2 may be
skipped, with the SKIP reason printed, when wrk or nginx (or bench/webhook.py) is missing.
Behaviour only: no timing is compared with a threshold.

Environment: NG_SOURCE_ROOT (the repository), NG_BUILD_DIR (the build directory under test)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BUILD = os.environ.get("NG_BUILD_DIR", os.path.join(ROOT, "build"))
IDS = [f"B{i}" for i in range(1, 12)]


def numbers(stats):
    return isinstance(stats, dict) and all(isinstance(stats.get(k), (int, float))
                                           for k in ("min", "median", "max"))


class BenchSmoke(unittest.TestCase):
    def test_every_benchmark_produces_rows(self):
        with tempfile.TemporaryDirectory(prefix="ng-bench-smoke-") as tmp:
            out = os.path.join(tmp, "rows.json")
            p = subprocess.run([os.path.join(ROOT, "scripts", "bench"), "--smoke", "--build", BUILD,
                                "--json", out], stdout=subprocess.PIPE, text=True, timeout=560)
            print(p.stdout)
            self.assertEqual(p.returncode, 0, "scripts/bench --smoke failed")
            with open(out, encoding="utf-8") as f:
                res = json.load(f)
        skipped = "SKIP B1/B2" in p.stdout
        for b in IDS:
            rows = res["benchmarks"].get(b)
            self.assertTrue(rows, f"{b}: no rows")
            if b in ("B1", "B2") and skipped:
                self.assertTrue(all(r["measure"].startswith("not run") for r in rows), rows)
                continue
            for r in rows:
                self.assertTrue(r.get("command"), f"{b}: a row without its command: {r}")
                self.assertTrue(r["measure"], r)
                if "metric missing" in r["measure"]:
                    continue  # B3's own share on a build without the histogram
                self.assertTrue(numbers(r.get("value")), f"{b}: {r['measure']}: no numbers: {r}")
                if r.get("reference") is not None:  # a reference may stand beside without a
                    self.assertTrue(numbers(r["reference"]), r)  # ratio (B2's latencies)
                if r.get("ratio") is not None:
                    self.assertTrue(numbers(r["ratio"]), r)
                self.assertIn(r.get("met"), (True, False, None))
        self.assertIn("nproc", res["facts"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
