#!/usr/bin/env bash
# Runs ./scripts/demo as the README shows it, then the walkthrough it prints, command by command
# and verbatim (every line "  $ ..."), and checks what each of its four steps promises. Keeps
# the README's first command and its walkthrough honest.
set -euo pipefail
root=${NG_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(mktemp)
log=$(mktemp)
NG_DEMO_PORT=$port ./scripts/demo >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$out" "$log" "$log.cmd"' EXIT
start=$(date +%s)
for _ in $(seq 1800); do
	grep -q '^Stop with Ctrl-C' "$out" && break
	kill -0 $pid 2>/dev/null || { cat "$out"; echo "demo exited early"; exit 1; }
	sleep 0.1
done
grep -q '^Stop with Ctrl-C' "$out" || { cat "$out"; echo "demo did not print its walkthrough"; exit 1; }
echo "the demo printed its walkthrough after $(($(date +%s) - start))s"

fail() {
	echo "FAIL: $*"
	echo "--- demo output"; cat "$out"
	for f in .demo/serve.log .demo/drain.log .demo/hook.log; do echo "--- $f"; tail -30 "$f"; done
	exit 1
}
jp() { kubectl get "$1" -o "jsonpath=$2" 2>/dev/null || true; }

# The steps as printed: "N. ..." starts step N, "  $ cmd" is a command of the current step
# (step 0 before the first number: the export).
mapfile -t lines < <(awk 'BEGIN {step=0} /^[0-9]+\. / {step=$1+0} /^  \$ / {sub(/^  \$ /, ""); print step "\t" $0}' "$out")
[ "${#lines[@]}" -ge 10 ] || fail "the walkthrough has ${#lines[@]} commands"

check_step() {
	case $1 in
	0)
		[ -n "${KUBECONFIG:-}" ] || fail "the walkthrough does not set KUBECONFIG"
		;;
	1)
		grep -q 'ApplicationDisruptionBudget shop/postgres' "$log" ||
			fail "kubectl drain did not show nodegate's message naming the budget"
		grep -q 'node db-1 has no granted NodeDisruption' "$log" ||
			fail "kubectl drain did not say why the eviction was denied"
		kubectl get pod postgres-0 -n shop >/dev/null || fail "postgres-0 was evicted without a grant"
		[ "$(jp node/db-1 '{.spec.unschedulable}')" != true ] || fail "db-1 is still cordoned"
		echo "step 1: kubectl drain was held, its message names the budget"
		;;
	2)
		[ "$(jp nd/maintenance-db-1 '{.status.state}')" = Granted ] || fail "maintenance-db-1 is not Granted"
		[ "$(jp nd/maintenance-db-1 '{.status.conditions[?(@.type=="Ready")].reason}')" = Drained ] ||
			fail "db-1 was not drained"
		[ "$(jp node/db-1 '{.spec.unschedulable}')" = true ] || fail "db-1 is not cordoned"
		! kubectl get pod postgres-0 -n shop >/dev/null 2>&1 || fail "postgres-0 is still there"
		grep -q 'maintenance-db-1.*Granted.*Drained' "$log" || fail "kubectl get nd did not show Granted, Drained"
		grep -q 'health hook: asked about maintenance-db-1' .demo/hook.log || fail "the health hook was not asked"
		# Beyond the walkthrough: the request records its creator and its spec is now fixed.
		[ "$(jp nd/maintenance-db-1 '{.metadata.annotations.nodegate\.io/created-by}')" = admin ] ||
			fail "created-by is not the kubectl user"
		! kubectl patch nd maintenance-db-1 --type merge -p '{"spec":{"nodeNames":["db-3"]}}' >/dev/null 2>&1 ||
			fail "a Granted NodeDisruption's nodes could be changed"
		echo "step 2: Granted after the health hook, db-1 cordoned and postgres-0 evicted by nodegate drain"
		;;
	3)
		[ "$(jp nd/maintenance-db-2 '{.status.state}')" = Pending ] || fail "maintenance-db-2 is not Pending"
		msg=$(jp nd/maintenance-db-2 '{.status.conditions[?(@.type=="Granted")].message}')
		case $msg in *"ApplicationDisruptionBudget shop/postgres: 1 of 1 in use"*) ;;
		*) fail "the Pending message does not say the budget is spent: $msg" ;; esac
		grep -q 'maintenance-db-2.*Pending.*ApplicationDisruptionBudget shop/postgres: 1 of 1 in use' "$log" ||
			fail "kubectl get nd -o wide did not show why maintenance-db-2 waits"
		[ "$(jp node/db-2 '{.spec.unschedulable}')" != true ] || fail "db-2 was cordoned without a grant"
		kubectl get pod postgres-1 -n shop >/dev/null || fail "postgres-1 was evicted without a grant"
		echo "step 3: the second request is Pending: $msg"
		;;
	4)
		! kubectl get nd maintenance-db-1 >/dev/null 2>&1 || fail "maintenance-db-1 is still there"
		[ "$(jp node/db-1 '{.spec.unschedulable}')" != true ] || fail "db-1 was not given back"
		[ "$(jp nd/maintenance-db-2 '{.status.state}')" = Granted ] || fail "maintenance-db-2 was not Granted"
		[ "$(jp node/db-2 '{.spec.unschedulable}')" = true ] || fail "db-2 is not cordoned"
		! kubectl get pod postgres-1 -n shop >/dev/null 2>&1 || fail "postgres-1 is still there"
		echo "step 4: db-1 uncordoned, maintenance-db-2 Granted and db-2 drained"
		;;
	esac
}

step=0
: >"$log"
for line in "${lines[@]}" end; do
	n=${line%%$'\t'*}
	if [ "$line" = end ] || [ "$n" != "$step" ]; then
		check_step "$step"
		: >"$log"
		step=$n
		[ "$line" = end ] && break
	fi
	cmd=${line#*$'\t'}
	echo "\$ $cmd" | tee -a "$log"
	t0=$(date +%s)
	set +e
	eval "$cmd" >"$log.cmd" 2>&1 </dev/null
	rc=$?
	set -e
	cat "$log.cmd" | tee -a "$log"
	took=$(($(date +%s) - t0))
	case $cmd in
	"kubectl drain "*)
		[ $rc -ne 0 ] || fail "kubectl drain of a protected node succeeded without a grant"
		[ $took -lt 90 ] || fail "kubectl drain took ${took}s despite its --timeout"
		echo "  (exit status $rc after ${took}s, as expected)"
		;;
	*) [ $rc -eq 0 ] || { fail "\"$cmd\" exited with $rc"; } ;;
	esac
done
echo "the demo's walkthrough ran as printed: ${#lines[@]} commands, 4 steps"
