#!/usr/bin/env bash
# The live cache at scale: the test API server generates NODES nodes x PODS pods per node;
# nodegate (release build) watches it. Reports the time from start to /readyz (every resource
# listed and published), nodegate's RSS, and bytes per cached pod = (RSS - RSS of the same
# nodegate watching the same nodes with no pods) / pods. Then the decode throughput of the
# cache beside cJSON alone on the same bytes (bench-cache-decode).
# Usage: bench/cache.sh [NODES] [PODS_PER_NODE]     (defaults 5000 30: 150,000 pods)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-5000}
per=${2:-30}
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_ndebug=true >/dev/null
ninja -C build-release cmd/nodegate bench/bench-cache-decode >/dev/null
# NODEGATE=path compares another build (e.g. a copy of the previous one) on the same cluster.
ng_bin=${NODEGATE:-./build-release/cmd/nodegate}
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/key.pem" \
	-out "$tmp/cert.pem" -days 1 -subj /CN=localhost 2>/dev/null
crds=()
for f in manifests/crds/*.json; do crds+=(--fixture "$f"); done

# run NAME PODS_PER_NODE: starts an API server and nodegate, waits for /readyz, prints
# "seconds rss_kib pods".
run() {
	local dir=$tmp/$1
	mkdir -p "$dir"
	python3 tests/apiserver/apiserver.py --port 0 --state-dir "$dir/api" "${crds[@]}" \
		--generate "nodes=$nodes,pods-per-node=$2" >"$dir/api.log" 2>&1 &
	local api=$!
	for _ in $(seq 6000); do [ -f "$dir/api/ready" ] && break; sleep 0.1; done
	local t0; t0=$(date +%s.%N)
	"$ng_bin" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --port-file "$dir/port" \
		--tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --kubeconfig "$dir/api/kubeconfig" \
		--log-level warn 2>"$dir/ng.log" &
	local ng=$!
	for _ in $(seq 600); do [ -s "$dir/port" ] && break; sleep 0.05; done
	local port; port=$(cat "$dir/port")
	for _ in $(seq 6000); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/cert.pem" --resolve "localhost:$port:127.0.0.1" "https://localhost:$port/readyz")" = 200 ] && break
		sleep 0.05
	done
	local t1; t1=$(date +%s.%N)
	sleep 1 # let freed list buffers go back to the kernel
	local rss; rss=$(awk '/VmRSS/ {print $2}' /proc/$ng/status)
	local pods; pods=$(curl -s --cacert "$tmp/cert.pem" --resolve "localhost:$port:127.0.0.1" "https://localhost:$port/metrics" | awk -F' ' '/^nodegate_cache_objects\{resource="pods"\}/ {print $2}')
	echo "$(echo "$t1 - $t0" | bc) $rss $pods"
	# run() is called in a subshell: it stops what it started itself.
	kill $ng $api; wait $ng $api 2>/dev/null || true
}

read -r _ base_rss _ < <(run empty 0)
read -r secs rss pods < <(run full "$per")
echo "cluster: $nodes nodes, $pods pods"
echo "time to /readyz (list every resource, build and publish the cache): ${secs} s"
echo "nodegate RSS: $((rss / 1024)) MiB with pods, $((base_rss / 1024)) MiB without"
echo "bytes per cached pod: $(( (rss - base_rss) * 1024 / pods ))"
python3 bench/gen-cluster.py 300 30 > "$tmp/cluster.json"
./build-release/bench/bench-cache-decode "$tmp/cluster.json" 3
