#!/usr/bin/env bash
# Eviction webhook throughput beside nginx serving the same bytes, in one run on this machine.
# wrk drives a pool of TLS keep-alive connections with a realistic eviction review (a denial:
# the full decide + encode path); nginx answers the same POST with the same response bytes from
# memory, over the same certificate. Prints both rates and their ratio.
# Usage: bench/webhook.sh [SECONDS] [CONNECTIONS]   (needs: wrk nginx-light; builds build-release)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-64}
for p in wrk nginx; do command -v $p >/dev/null || { echo "bench needs $p (apt-get install -y wrk nginx-light)"; exit 2; }; done
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_ndebug=true >/dev/null
ninja -C build-release cmd/nodegate >/dev/null

tmp=$(mktemp -d)
cleanup() { kill "$ng_pid" "$nginx_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/key.pem" \
	-out "$tmp/cert.pem" -days 1 -subj /CN=localhost 2>/dev/null

./build-release/cmd/nodegate serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --port-file "$tmp/port" \
	--tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --snapshot examples/demo-cluster.json \
	--log-level warn 2>"$tmp/ng.log" &
ng_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
ng_port=$(cat "$tmp/port")

# The exact bytes nodegate answers, for nginx to serve.
resp=$(curl -s --cacert "$tmp/cert.pem" -H 'Content-Type: application/json' \
	--data @examples/eviction-review.json "https://localhost:$ng_port/validate/eviction" --resolve "localhost:$ng_port:127.0.0.1")
printf '%s' "$resp" > "$tmp/resp.json"
nginx_port=$((ng_port + 1))
esc=$(printf '%s' "$resp" | sed 's/\\/\\\\/g; s/"/\\"/g')
cat > "$tmp/nginx.conf" <<CONF
worker_processes 2;
error_log $tmp/nginx-error.log;
pid $tmp/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_buffer_size 64k;
  ssl_protocols TLSv1.2 TLSv1.3;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    location / { default_type application/json; return 200 "$esc"; }
  }
}
CONF
nginx -c "$tmp/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
sleep 0.5

body=$(sed 's/\\/\\\\/g; s/"/\\"/g' examples/eviction-review.json | tr -d '\n')
cat > "$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.body = "$body"
wrk.headers["Content-Type"] = "application/json"
LUA

rate() { wrk -t2 -c"$conns" -d"${secs}s" -s "$tmp/post.lua" "$1" | awk '/Requests\/sec/ {print $2}'; }
echo "eviction review: $(wc -c < examples/eviction-review.json) bytes in, $(wc -c < "$tmp/resp.json") bytes out; $conns keep-alive TLS connections, ${secs}s each"
ng=$(rate "https://127.0.0.1:$ng_port/validate/eviction?timeout=10s")
nx=$(rate "https://127.0.0.1:$nginx_port/validate/eviction")
echo "nodegate: $ng req/s"
echo "nginx:    $nx req/s (same response bytes from memory)"
awk -v a="$ng" -v b="$nx" 'BEGIN { printf "ratio nodegate/nginx: %.2f\n", a / b }'
