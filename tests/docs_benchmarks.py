#!/usr/bin/env python3
"""docs/benchmarks.md keeps the shape scripts/bench writes into: a facts block and a marker pair
per benchmark B1..B11, in order, and every table row between the markers names the command that
measured it (a file under bench/ or scripts/ of this repository).

Usage: docs_benchmarks.py REPOSITORY_ROOT"""
import os
import re
import sys
import unittest

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
IDS = [f"B{i}" for i in range(1, 12)]


def between(text, key):
    m = re.search(re.escape(f"<!-- bench:begin {key} -->") + r"(.*?)" + re.escape(f"<!-- bench:end {key} -->"),
                  text, re.S)
    return m.group(1) if m else None


class BenchmarksDoc(unittest.TestCase):
    def setUp(self):
        with open(DOC, encoding="utf-8") as f:
            self.text = f.read()

    def test_markers_in_order(self):
        pos = []
        for key in ["facts"] + IDS:
            for which in ("begin", "end"):
                marker = f"<!-- bench:{which} {key} -->"
                self.assertEqual(self.text.count(marker), 1, f"{marker} must appear exactly once")
                pos.append(self.text.index(marker))
        self.assertEqual(pos, sorted(pos), "markers out of order (facts, then B1..B11, begin before end)")

    def test_facts_block(self):
        block = between(self.text, "facts")
        self.assertIsNotNone(block)
        if "not yet generated" in block:
            return
        for fact in ("`nproc`", "CPU", "kernel", "date", "commit"):
            self.assertIn(fact, block, f"the facts block names {fact}")

    def test_every_row_names_its_command(self):
        for key in IDS:
            block = between(self.text, key)
            self.assertIsNotNone(block, key)
            rows = [line for line in block.splitlines() if line.startswith("|")]
            if "not yet generated" in block and not rows:
                continue
            self.assertGreaterEqual(len(rows), 3, f"{key}: a table with a header, a rule and rows")
            header = [c.strip() for c in rows[0].strip("|").split("|")]
            self.assertEqual(header[-1], "command", f"{key}: the last column is the command")
            for line in rows[2:]:
                cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
                self.assertEqual(len(cells), len(header), f"{key}: {line}")
                cmd = cells[-1].strip("`").split()
                self.assertTrue(cmd, f"{key}: a row without a command: {line}")
                path = cmd[0]
                self.assertTrue(path.startswith(("bench/", "scripts/")), f"{key}: {path} not under bench/ or scripts/")
                self.assertTrue(os.path.isfile(os.path.join(ROOT, path)), f"{key}: {path} does not exist")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
