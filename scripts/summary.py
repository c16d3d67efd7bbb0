#!/usr/bin/env python3
"""Counts every test result of a ./scripts/test run and prints the closing line
`N passed, N failed`. Reads meson's testlog.json of each build directory given and the
"PASS name"/"FAIL name"/"SKIP name: reason" lines of the extra result files (source checks,
the container image, fuzz smoke)."""
import json
import sys

passed, failed, skipped = 0, 0, 0
failures = []
skips = []
for path in sys.argv[1:]:
    try:
        f = open(path, encoding="utf-8")
    except OSError:
        failed += 1
        failures.append(f"{path}: missing (that stage did not run)")
        continue
    with f:
        if path.endswith(".json"):
            for line in f:
                line = line.strip()
                if not line:
                    continue
                rec = json.loads(line)
                result = rec.get("result")
                name = f"{path.split('/')[0]}:{rec.get('name')}"
                if result in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    failures.append(f"{name}: {result}")
        else:
            for line in f:
                word, _, name = line.strip().partition(" ")
                if word == "PASS":
                    passed += 1
                elif word == "FAIL":
                    failed += 1
                    failures.append(name)
                elif word == "SKIP":
                    skipped += 1
                    skips.append(name)
for s in skips:
    print(f"SKIPPED: {s}")
for f in failures:
    print(f"FAILED: {f}")
tail = f", {skipped} skipped" if skipped else ""
print(f"{passed} passed, {failed} failed{tail}")
sys.exit(1 if failed else 0)
