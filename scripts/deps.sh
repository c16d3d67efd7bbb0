# Sourced by scripts/demo and scripts/test: installs the Debian packages nodegate needs when
# any is missing. Debian bookworm package names.
NG_BUILD_PACKAGES="meson ninja-build gcc pkg-config libmicrohttpd-dev libgnutls28-dev libcjson-dev libcmocka-dev libyaml-dev libcurl4-openssl-dev libssl-dev libpcre2-dev openssl curl python3 tzdata"
NG_TEST_PACKAGES="clang libclang-rt-14-dev clang-format clang-tidy cppcheck valgrind kubernetes-client podman runc mmdebstrap prometheus wrk nginx-light chromium"

ng_install_deps() {
	local want="$*" missing="" p
	for p in $want; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	# kubectl may come from elsewhere than Debian's kubernetes-client; any kubectl will do.
	case " $missing " in *" kubernetes-client "*) command -v kubectl >/dev/null && missing="${missing/ kubernetes-client/}" ;; esac
	[ -z "${missing// /}" ] && return 0
	echo "== installing:$missing"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# The test API server checks objects against upstream's own definitions (Kubernetes v1.32's
# OpenAPI types and a CEL implementation), taken from the npm registry at the versions
# tests/apiserver/upstream/package-lock.json pins. Installs Node.js from Debian if it is missing.
ng_install_upstream_definitions() {
	local dir="tests/apiserver/upstream"
	command -v npm >/dev/null || ng_install_deps nodejs npm || return 1
	cmp -s "$dir/package-lock.json" "$dir/node_modules/.ng-installed-lock" 2>/dev/null && return 0
	echo "== installing upstream definitions (npm ci in $dir)"
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null &&
		cp package-lock.json node_modules/.ng-installed-lock)
}
