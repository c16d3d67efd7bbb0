#!/usr/bin/env bash
# The eviction webhook benchmarks B1 and B2 (bench/webhook.py) from a source tree: builds
# build-release (nodegate and bench-loadgen) and runs webhook.py with the arguments given,
# e.g. `bench/webhook.sh --quick` or `bench/webhook.sh --runs 3 --seconds 10`. A bare number
# as first argument is the seconds per run, as this script took before webhook.py existed.
# Needs: wrk nginx-light openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
if [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
	[ $# -ge 2 ] && echo "webhook.sh: connections are no longer an argument: B1 runs 16 and 64" >&2
	args=(--seconds "$1")
fi
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_ndebug=true >/dev/null
ninja -C build-release cmd/nodegate bench/bench-loadgen >/dev/null
exec python3 bench/webhook.py --nodegate build-release/cmd/nodegate \
	--loadgen build-release/bench/bench-loadgen "${args[@]}"
