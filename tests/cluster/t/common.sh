# Sourced by every cluster-tier test. A test reports each check on stdout as one line:
#   PASS: <name>            FAIL: <name>: <why>            SKIP: <name>: <why>
# run-tier counts those lines; anything else a test prints goes to stderr.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

pass() { echo "PASS: $1"; }
fail() {
	echo "FAIL: $1: $2"
	shift 2
	# Extra arguments are diagnostics, indented on stderr.
	local d
	for d in "$@"; do printf '%s\n' "$d" | sed 's/^/    /' >&2; done
}
skip() { echo "SKIP: $1: $2"; }

# Whether the running cluster is in full mode (controllers, scheduler, kwok, JobSet).
cluster_mode() { cat "$(state_dir)/mode" 2>/dev/null || echo none; }

# A fresh namespace for one test, ready for pods (its default service account exists).
new_namespace() {
	local ns
	ns="kft-$1-$(openssl rand -hex 3)"
	kubectl create namespace "$ns" >/dev/null || return 1
	if [ "$(cluster_mode)" = full ]; then
		wait_for 60 kubectl -n "$ns" get serviceaccount default || return 1
	fi
	echo "$ns"
}

# Everything worth seeing when a workload test fails.
diagnose() {
	local ns=$1
	kubectl -n "$ns" get jobsets,jobs,pods -o wide 2>&1 | sed 's/^/    /' >&2 || true
	kubectl -n "$ns" get events --sort-by=.lastTimestamp 2>&1 | tail -n 25 | sed 's/^/    /' >&2 || true
}
