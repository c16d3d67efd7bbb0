#!/usr/bin/env python3
"""docs/api-reference.md is generated from the CRDs: fail when they drift apart (or when a
CRD field has no description, which the generator refuses)."""
import subprocess
import sys

generator, crd_dir, doc = sys.argv[1], sys.argv[2], sys.argv[3]
run = subprocess.run([sys.executable, generator, crd_dir], capture_output=True, text=True, timeout=60)
if run.returncode != 0:
    sys.stderr.write(run.stderr)
    sys.exit(1)
with open(doc, encoding="utf-8") as f:
    have = f.read()
if have != run.stdout:
    sys.stderr.write(f"{doc} is out of date; regenerate it with:\n"
                     f"  scripts/gen-api-reference.py > docs/api-reference.md\n")
    sys.exit(1)
print("docs/api-reference.md matches manifests/crds")
