#!/usr/bin/env bash
# The installed CRDs really enforce their schema and CEL rules, and `kftrainer validate` agrees
# with the API server. For every case under cases/valid and cases/invalid:
#   server: <case>   the server's verdict (kubectl create --dry-run=server) matches the folder,
#                    and an invalid case is refused with the message its "# server:" line names
#   agree: <case>    kftrainer validate -f gives the same verdict as the server
# KFTRAINER overrides the binary (default build/bin/kftrainer), KFT_CASES the cases directory.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cases=${KFT_CASES:-$KFT_CLUSTER_DIR/cases}
crd_dir=${KFT_CRD_DIR:-$KFT_REPO_ROOT/manifests/crds}
kft=${KFTRAINER:-$KFT_REPO_ROOT/build/bin/kftrainer}

if ! compgen -G "$crd_dir/*.yaml" >/dev/null; then
	skip "dry-run cases" "no CRDs in ${crd_dir#"$KFT_REPO_ROOT"/} yet, so the server cannot judge TrainJobs"
	exit 0
fi
have_kft=1
if [ ! -x "$kft" ]; then
	have_kft=0
	skip "kftrainer validate agrees with the server" "${kft#"$KFT_REPO_ROOT"/} is not built"
fi

ns=$(new_namespace cases) || {
	fail "dry-run cases" "cannot create a namespace"
	exit 0
}
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT

# The server's reasons for refusing an object because of its content; anything else (no such
# kind, connection refused, ...) means the server could not judge it, which is a failure.
judged='is invalid|Invalid value|Required value|Unsupported value|unknown field|must be|should be|BadRequest|cannot be'

n=0
for want in valid invalid; do
	for f in "$cases/$want"/*.yaml; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		c="$want/$(basename "$f" .yaml)"
		if out=$(kubectl -n "$ns" create --dry-run=server -f "$f" 2>&1); then
			server=valid
		elif grep -qE "$judged" <<<"$out"; then
			server=invalid
		else
			fail "server: $c" "the server could not judge it" "$out"
			continue
		fi
		# An invalid case names the server's reason in a "# server: <text>" line: it must be
		# refused for that reason, not some accidental other one.
		why=$(sed -n 's/^# server: //p' "$f" | head -n 1)
		if [ "$server" = "$want" ] && [ -n "$why" ] && ! grep -qF -- "$why" <<<"$out"; then
			fail "server: $c" "refused, but not with \"$why\"" "$out"
		elif [ "$server" = "$want" ]; then
			pass "server: $c"
		else
			fail "server: $c" "the server found it $server" "$out"
		fi
		[ "$have_kft" = 1 ] || continue
		rc=0
		kout=$("$kft" validate -f "$f" 2>&1) || rc=$?
		case "$rc" in
		0) mine=valid ;;
		1) mine=invalid ;;
		*)
			fail "agree: $c" "kftrainer validate exited $rc" "$kout"
			continue
			;;
		esac
		if [ "$mine" = "$server" ]; then
			pass "agree: $c"
		else
			fail "agree: $c" "kftrainer says $mine, the server says $server" "server: $out" "kftrainer: $kout"
		fi
	done
done
[ "$n" -gt 0 ] || fail "dry-run cases" "no cases found in $cases"
