#!/usr/bin/env bash
# Runs ./scripts/demo as the README shows it, then the curl line it prints, verbatim: the
# answer must be the 429 denial of default/pod1. Keeps the README's first command honest.
set -euo pipefail
root=${NG_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(mktemp)
NG_DEMO_PORT=$port ./scripts/demo >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 1200); do
	grep -q '"msg":"serving"' "$out" && break
	kill -0 $pid 2>/dev/null || { cat "$out"; echo "demo exited early"; exit 1; }
	sleep 0.1
done
grep -q '"msg":"serving"' "$out" || { cat "$out"; echo "demo did not start serving"; exit 1; }
# The curl command is the indented block after "Ask it about".
cmd=$(awk '/^Ask it about/ {on=1; next} on && /^  / {print} on && /^$/ && seen {exit} on && /^  / {seen=1}' "$out" | sed 's/\\$//' | tr '\n' ' ')
[ -n "$cmd" ] || { cat "$out"; echo "no curl line printed"; exit 1; }
answer=$(bash -c "$cmd")
echo "$answer"
python3 - "$answer" <<'PY'
import json, sys
r = json.loads(sys.argv[1])["response"]
assert r["allowed"] is False, r
assert r["status"]["code"] == 429, r
assert "default/db" in r["status"]["message"], r
print("demo answered the sample eviction with a 429 denial")
PY
