#!/usr/bin/env bash
# A failed build names the module and version that failed. A copy of tools/jobset whose go.sum
# has a wrong hash for one dependency is built into a scratch cache: the build must fail, say
# which module@version broke, and leave neither binaries nor scratch directories behind.
# Needs no network: the module is already in the module cache from the tier's own build.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

name="a failed build names the failing module@version"
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-buildfail.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tools/jobset" "$work/cache"
cp "$KFT_CLUSTER_DIR/tools/jobset/go.mod" "$work/tools/jobset/"
victim=github.com/go-logr/logr
ver=$(awk -v m="$victim" '$1 == m && $3 ~ /^h1:/ && $2 !~ /go.mod/ {print $2; exit}' \
	"$KFT_CLUSTER_DIR/tools/jobset/go.sum")
if [ -z "$ver" ]; then
	fail "$name" "tools/jobset/go.sum no longer lists $victim; pick another victim"
	exit 0
fi
# Replace the module's content hash with a well-formed but wrong one.
awk -v m="$victim" -v v="$ver" '$1 == m && $2 == v { $3 = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" } { print }' \
	"$KFT_CLUSTER_DIR/tools/jobset/go.sum" >"$work/tools/jobset/go.sum"

out=$(KFT_TOOLS_DIR="$work/tools" XDG_CACHE_HOME="$work/cache" bash -c \
	'. "$1/lib.sh"; build_tool jobset' _ "$KFT_CLUSTER_DIR" 2>&1)
rc=$?
if [ "$rc" != 0 ] && grep -qF "failing module: $victim@$ver" <<<"$out"; then
	pass "$name"
else
	fail "$name" "exit $rc; expected the message to name $victim@$ver" "$out"
fi
left=$(find "$work/cache/kftrainer/cluster" -mindepth 1 -maxdepth 1 ! -name logs ! -name '.lock-*' 2>/dev/null)
if [ -z "$left" ]; then
	pass "a failed build leaves no binaries or scratch behind"
else
	fail "a failed build leaves no binaries or scratch behind" "found:" "$left"
fi
