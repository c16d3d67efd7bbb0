#!/usr/bin/env bash
# The container image, built from the top-level Containerfile and run as a user would run it:
#   - the base image is made from Debian packages (mmdebstrap) and imported under the name the
#     Containerfile uses, since no image registry is reachable here;
#   - `podman build`, then inside the image: `nodegate --version` prints the version passed at
#     build time; `nodegate check` answers against a snapshot mounted read-only; `nodegate certs`
#     writes a serving pair that `nodegate serve` then serves HTTPS with, as uid 65532, with a
#     read-only root filesystem and every capability dropped, answering /healthz and an
#     eviction review, and exiting 0 on SIGTERM; the image has no shell;
#   - prints the image size and the Debian packages its libraries come from.
# Writes "PASS name" / "FAIL name" / "SKIP name: reason" lines to $1 (default build-image.txt).
# Where podman cannot run (not root, no podman, no network to Debian's mirror) every check is
# skipped with the reason printed, never passed.
#
# NG_IMAGE_KEEP=1 keeps the base and test images (a second run then skips the base build).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-image.txt}
: >"$out"
version="0.1.0-test.$$"
image="localhost/nodegate:test-$$"
base="docker.io/library/debian:bookworm-slim"
checks=(image-build image-version image-check image-certs image-serve image-nonroot image-stop image-no-shell)

skip_all() {
	for c in "${checks[@]}"; do echo "SKIP $c: $*" | tee -a "$out"; done
	exit 0
}
pass() { echo "PASS $1" | tee -a "$out"; }
fail() {
	echo "FAIL $1" | tee -a "$out"
	shift
	printf '  %s\n' "$@"
}

[ "$(id -u)" -eq 0 ] || skip_all "podman needs root on these machines (uid $(id -u))"
for tool in podman runc mmdebstrap; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed (apt-get install podman runc mmdebstrap)"
done

# The two settings podman needs in this sandbox: no rlimits it may not set, cgroupfs.
conf=$(mktemp)
work=$(mktemp -d)
ctr="nodegate-test-$$"
trap 'podman rm -f "$ctr" >/dev/null 2>&1; rm -rf "$conf" "$work"; [ -n "${NG_IMAGE_KEEP:-}" ] || podman rmi -f "$image" >/dev/null 2>&1' EXIT
printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n' >"$conf"
export CONTAINERS_CONF=$conf
pod() { podman --runtime runc "$@"; }
pod info >/dev/null 2>"$work/info.err" || skip_all "podman cannot run here: $(tail -1 "$work/info.err")"

if ! pod image exists "$base"; then
	t0=$SECONDS
	mmdebstrap --variant=minbase --quiet bookworm "$work/rootfs.tar" >"$work/mmdebstrap.log" 2>&1 ||
		skip_all "no base image: mmdebstrap could not reach Debian's mirror: $(tail -1 "$work/mmdebstrap.log")"
	pod import "$work/rootfs.tar" "$base" >/dev/null || skip_all "podman import of the base image failed"
	rm -f "$work/rootfs.tar"
	echo "image: base image from mmdebstrap in $((SECONDS - t0)) s"
fi

t0=$SECONDS
if pod build --network host --build-arg "VERSION=$version" -t "$image" -f "$root/Containerfile" "$root" \
	>"$work/build.log" 2>&1; then
	pass image-build
	echo "image: built in $((SECONDS - t0)) s"
else
	fail image-build "$(tail -30 "$work/build.log")"
	for c in "${checks[@]:1}"; do fail "$c" "no image"; done
	exit 0
fi
size=$(pod image inspect --format '{{.Size}}' "$image")
echo "image: size $((size / 1000000)) MB ($size bytes)"
echo "image: Debian packages of its libraries (/usr/share/nodegate/packages):"
podman create --name "$ctr-files" "$image" >/dev/null 2>&1 &&
	podman cp "$ctr-files:/usr/share/nodegate/packages" "$work/packages" >/dev/null 2>&1
podman rm -f "$ctr-files" >/dev/null 2>&1
sed 's/^/  /' "$work/packages" 2>/dev/null

got=$(pod run --rm "$image" --version 2>&1)
[ "$got" = "nodegate $version" ] && pass image-version || fail image-version "want 'nodegate $version', got '$got'"

# check: the demo cluster's request is held by the db budget (exit 1, Pending, the budget named).
got=$(pod run --rm -v "$root/examples:/in:ro" "$image" check --snapshot /in/demo-cluster.json \
	--nd /in/nodedisruption.json 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q '"state":"Pending"' <<<"$got" && grep -q 'ApplicationDisruptionBudget default/db' <<<"$got"; then
	pass image-check
else
	fail image-check "exit $rc" "$got"
fi

# certs, as the image's user, into a directory it may write.
mkdir -m 0777 "$work/certs"
got=$(pod run --rm -v "$work/certs:/out" "$image" certs --out /out 2>&1)
[ -s "$work/certs/tls.crt" ] && [ -s "$work/certs/tls.key" ] && pass image-certs ||
	fail image-certs "$got"

# serve, locked down as the Deployment runs it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pod run -d --name "$ctr" --network host --read-only --cap-drop=ALL \
	--security-opt no-new-privileges -v "$work/certs:/certs:ro" -v "$root/examples:/in:ro" \
	"$image" serve --snapshot /in/demo-cluster.json --tls-cert /certs/tls.crt \
	--tls-key /certs/tls.key --listen "127.0.0.1:$port" --admin-listen off >/dev/null 2>&1
url="https://nodegate.nodegate.svc:$port"
tls=(--cacert "$work/certs/ca.crt" --resolve "nodegate.nodegate.svc:$port:127.0.0.1" -s --max-time 5)
for _ in $(seq 100); do
	[ "$(curl "${tls[@]}" -o /dev/null -w '%{http_code}' "$url/healthz")" = 200 ] && break
	sleep 0.2
done
health=$(curl "${tls[@]}" -o /dev/null -w '%{http_code}' "$url/healthz")
review=$(curl "${tls[@]}" -H 'Content-Type: application/json' --data-binary @"$root/examples/eviction-review.json" "$url/validate/eviction")
if [ "$health" = 200 ] && grep -q '"allowed"' <<<"$review"; then
	pass image-serve
else
	fail image-serve "healthz $health" "review: $review" "$(podman logs "$ctr" 2>&1 | tail -5)"
fi

user=$(pod image inspect --format '{{.Config.User}}' "$image")
pid=$(podman inspect --format '{{.State.Pid}}' "$ctr" 2>/dev/null)
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
[ "$user" = "65532:65532" ] && [ "$uid" = "65532" ] && pass image-nonroot ||
	fail image-nonroot "Config.User '$user', uid of serve (pid $pid) '$uid'"

podman stop -t 10 "$ctr" >/dev/null 2>&1
code=$(podman inspect --format '{{.State.ExitCode}}' "$ctr" 2>/dev/null)
[ "$code" = 0 ] && pass image-stop || fail image-stop "exit code after SIGTERM: '$code'" "$(podman logs "$ctr" 2>&1 | tail -5)"

got=$(pod run --rm --entrypoint /bin/sh "$image" -c true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass image-no-shell || fail image-no-shell "/bin/sh ran in the image: $got"
