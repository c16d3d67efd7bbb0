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
# Serving comes before the first list; the answer below needs the cluster state.
for _ in $(seq 300); do
	curl -sf --cacert .demo/cert.pem "https://127.0.0.1:$port/readyz" >/dev/null && break
	sleep 0.1
done
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
# The kubectl steps the demo prints: ask for node1, see it Granted, and the same eviction is
# allowed (the admission answer, then a real eviction through the API server by kubectl drain).
export KUBECONFIG=.demo/cluster/kubeconfig
kubectl create -f examples/nodedisruption.json
state=""
for _ in $(seq 100); do
	state=$(kubectl get nd maintenance-node1 -o jsonpath='{.status.state}')
	[ "$state" = Granted ] && break
	sleep 0.1
done
[ "$state" = Granted ] || { kubectl get nd -o yaml; echo "the demo's NodeDisruption was not granted"; exit 1; }
creator=$(kubectl get nd maintenance-node1 -o jsonpath='{.metadata.annotations.nodegate\.io/created-by}')
[ "$creator" = admin ] || { echo "created-by is \"$creator\", not the kubectl user"; exit 1; }
echo "the NodeDisruption records its creator: $creator"
if kubectl patch nd maintenance-node1 --type merge -p '{"spec":{"nodeNames":["node2"]}}' 2>/dev/null; then
	echo "a Granted NodeDisruption's nodes could be changed"
	exit 1
fi
echo "a Granted NodeDisruption's spec is refused a change"
answer=$(bash -c "$cmd")
python3 - "$answer" <<'PY'
import json, sys
r = json.loads(sys.argv[1])["response"]
assert r["allowed"] is True, r
print("after the grant, the same eviction is allowed")
PY
timeout 120 kubectl drain node1 --ignore-daemonsets --timeout=60s
if kubectl get pod pod1 -n default >/dev/null 2>&1; then
	echo "kubectl drain did not evict pod1"
	exit 1
fi
echo "kubectl drain evicted pod1 from the granted node"
# The drainer: a request with drain set ends with node2 cordoned and its pod gone; deleting the
# request gives node2 back.
kubectl create -f examples/nodedisruption-drain.json
reason=""
for _ in $(seq 300); do
	reason=$(kubectl get nd maintenance-node2 -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
	[ "$reason" = Drained ] && break
	sleep 0.1
done
[ "$reason" = Drained ] || { kubectl get nd maintenance-node2 -o yaml; echo "node2 was not drained"; exit 1; }
[ "$(kubectl get node node2 -o jsonpath='{.spec.unschedulable}')" = true ] || { echo "node2 is not cordoned"; exit 1; }
if kubectl get pod web-1 -n default >/dev/null 2>&1; then
	echo "the drainer did not evict web-1 from node2"
	exit 1
fi
echo "nodegate drain cordoned node2 and evicted its pod"
kubectl delete nd maintenance-node2 --timeout=30s
[ "$(kubectl get node node2 -o jsonpath='{.spec.unschedulable}')" != true ] || { kubectl get node node2 -o yaml; echo "node2 is still cordoned"; exit 1; }
echo "deleting the request gave node2 back"
