#!/bin/sh
# Runs promtool (Debian package prometheus) with the given arguments; exits 77, which meson
# reports as a skip, with the reason printed, when promtool is not installed.
if ! command -v promtool >/dev/null 2>&1; then
	echo "SKIP: promtool not found (install the Debian package prometheus)"
	exit 77
fi
exec promtool "$@"
