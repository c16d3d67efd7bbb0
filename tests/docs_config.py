#!/usr/bin/env python3
"""docs/config.md is generated from nodegate's flag table: fail when they drift apart."""
import subprocess
import sys

binary, doc = sys.argv[1], sys.argv[2]
want = subprocess.run([binary, "--dump-config-doc"], check=True, capture_output=True,
                      text=True, timeout=30).stdout
with open(doc, encoding="utf-8") as f:
    have = f.read()
if have != want:
    sys.stderr.write(f"{doc} is out of date; regenerate it with:\n"
                     f"  {binary} --dump-config-doc > docs/config.md\n")
    sys.exit(1)
print("docs/config.md matches the flag table")
