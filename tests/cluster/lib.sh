# Shared helpers for the cluster test tier: sourced by build, up, down and run-tier.
#
# The tier runs a real Kubernetes control plane on loopback, built from Go modules pinned in
# tools/<name>/go.mod. Everything a running cluster owns lives in one state directory: its
# certificates, etcd data, logs, and one pid file per process. `down` and every clean-up path
# stop processes only through those pid files, and only after checking that the process's
# command line still names the state directory, so a recycled pid is never signalled.
#
# Binaries are cached under ${XDG_CACHE_HOME:-$HOME/.cache}/kftrainer/cluster/<key>/bin, where
# the key folds in the tool module's pinned version and a hash of its files (go.mod, go.sum),
# the Go version and platform, and KFT_BUILD_RECIPE: a change to any of them builds afresh,
# anything else is reused.

KFT_CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KFT_REPO_ROOT=$(cd "$KFT_CLUSTER_DIR/../.." && pwd)
# The pinned Go modules; overridable so a test can build a deliberately broken copy.
KFT_TOOLS_DIR=${KFT_TOOLS_DIR:-$KFT_CLUSTER_DIR/tools}

# Part of every cache key. The build flags and linker flags are hashed too; bump the recipe
# for any other change to how binaries are built, so old cache entries are not reused.
KFT_BUILD_RECIPE=3
KFT_BUILD_FLAGS="CGO_ENABLED=0 -trimpath"

log() { printf 'cluster: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Locate a Go toolchain: $GO, then PATH, then the usual install location. Prints its path.
# A GO that is set is the only one considered (GO=/nonexistent simulates a machine without Go).
find_go() {
	local g
	if [ -n "${GO:-}" ]; then
		[ -x "$GO" ] && printf '%s\n' "$GO"
		return
	fi
	for g in "$(command -v go 2>/dev/null)" /usr/local/go/bin/go; do
		if [ -n "$g" ] && [ -x "$g" ]; then
			printf '%s\n' "$g"
			return 0
		fi
	done
	return 1
}

# Why this machine cannot run the tier, or nothing when it can. Used to skip with a reason.
cluster_unavailable_reason() {
	local g v
	if ! g=$(find_go); then
		if [ -n "${GO:-}" ]; then
			echo "no Go toolchain: GO=$GO is not an executable"
		else
			echo "no Go toolchain found (looked in PATH and /usr/local/go/bin)"
		fi
		return
	fi
	v=$("$g" env GOVERSION 2>/dev/null | sed 's/^go//')
	case "$v" in
	1.2[6-9]* | 1.[3-9][0-9]* | [2-9].*) ;;
	*)
		echo "Go ${v:-of unknown version} at $g is older than 1.26, which the pinned modules need"
		return
		;;
	esac
	command -v openssl >/dev/null 2>&1 || {
		echo "the openssl command is missing (needed for the cluster's certificates)"
		return
	}
	command -v flock >/dev/null 2>&1 || {
		echo "flock (util-linux) is missing"
		return
	}
}

cache_root() { printf '%s/kftrainer/cluster\n' "${XDG_CACHE_HOME:-$HOME/.cache}"; }

# The state directory of this checkout's cluster. Keyed by the checkout path so two clones on
# one machine do not share a cluster; KFT_CLUSTER_STATE overrides it (the leak test uses that).
state_dir() {
	if [ -n "${KFT_CLUSTER_STATE:-}" ]; then
		printf '%s\n' "$KFT_CLUSTER_STATE"
		return
	fi
	local h
	h=$(printf '%s' "$KFT_REPO_ROOT" | sha256sum | cut -c1-10)
	printf '%s/kftrainer-cluster-%s-%s\n' "${TMPDIR:-/tmp}" "$(id -u)" "$h"
}

# The main module each tools directory exists to build; the rest of its requirements follow.
tool_main_module() {
	case "$1" in
	k8s) echo k8s.io/kubernetes ;;
	kwok) echo sigs.k8s.io/kwok ;;
	jobset) echo sigs.k8s.io/jobset ;;
	trainer) echo github.com/kubeflow/trainer/v2 ;;
	helm) echo helm.sh/helm/v3 ;;
	kueue) echo sigs.k8s.io/kueue ;;
	seaweedfs) echo github.com/seaweedfs/seaweedfs ;;
	model-registry) echo github.com/kubeflow/model-registry ;;
	*) return 1 ;;
	esac
}

# The pinned main module of a tools directory as "path@version", read from its go.mod.
tool_pin() {
	local m
	m=$(tool_main_module "$1") || return 1
	awk -v m="$m" '$1 == m && $2 ~ /^v/ { print m "@" $2; exit }
		$1 == "require" && $2 == m { print m "@" $3; exit }' \
		"$KFT_TOOLS_DIR/$1/go.mod"
}

# Cache key for one tools module: <name>-<version>-<hash of everything that shapes the build>.
tool_key() {
	local name=$1 go ver hash
	go=$(find_go) || return 1
	ver=$(tool_pin "$name") || return 1
	ver=${ver##*@}
	hash=$({
		(cd "$KFT_TOOLS_DIR/$name" && find . -type f | LC_ALL=C sort | while IFS= read -r f; do
			echo "== $f"
			cat "$f"
		done)
		"$go" env GOVERSION GOOS GOARCH
		echo "recipe $KFT_BUILD_RECIPE $KFT_BUILD_FLAGS"
		tool_ldflags "$name"
	} | sha256sum | cut -c1-12)
	printf '%s-%s-%s\n' "$name" "$ver" "$hash"
}

tool_bin_dir() { printf '%s/%s/bin\n' "$(cache_root)" "$(tool_key "$1")"; }

# --- processes --------------------------------------------------------------------------------

# True when the pid in $STATE/pids/<name>.pid is alive and still one of ours.
proc_alive() {
	local f="$STATE/pids/$1.pid" pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f" 2>/dev/null) || return 1
	pid_is_ours "$pid"
}

# A pid is ours when its command line mentions this state directory: every process the tier
# starts is given at least one path inside it.
pid_is_ours() {
	local pid=$1
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	local cmd
	cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
	[[ "$cmd" == *"$STATE/"* ]]
}

# Start a program in its own session with output to $STATE/logs/<name>.log; record its pid.
# stdin/stdout are detached so `eval "$(up)"` is not held open by the children.
start_proc() {
	local name=$1
	shift
	# The caller's lock on the state directory must not be inherited: a child holding it would
	# keep every later up/down waiting for as long as the cluster runs.
	if [ -n "${LOCKFD:-}" ]; then
		setsid "$@" </dev/null >>"$STATE/logs/$name.log" 2>&1 {LOCKFD}>&- &
	else
		setsid "$@" </dev/null >>"$STATE/logs/$name.log" 2>&1 &
	fi
	local pid=$!
	echo "$pid" >"$STATE/pids/$name.pid"
	# Until the child has exec'd, its command line is still ours (bash's), not the program's;
	# wait for that so that proc_alive is meaningful from here on.
	for _ in $(seq 1 100); do
		[ -e "/proc/$pid" ] || break
		pid_is_ours "$pid" && break
		sleep 0.05
	done
}

# Stop one recorded process and what it started (start_proc made it a session leader, so its
# process group: mlflow's uvicorn and job workers, for one): SIGTERM, then SIGKILL to the
# leader after a grace period. Only our own pids.
stop_proc() {
	local f=$1 pid
	pid=$(cat "$f" 2>/dev/null) || return 0
	if pid_is_ours "$pid"; then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			pid_is_ours "$pid" || break
			sleep 0.1
		done
		if pid_is_ours "$pid"; then
			log "$(basename "$f" .pid) (pid $pid) ignored SIGTERM; sending SIGKILL"
			kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
			# Reap it when it is this shell's child, so bash does not report the kill.
			wait "$pid" 2>/dev/null || true
			for _ in $(seq 1 30); do
				pid_is_ours "$pid" || break
				sleep 0.1
			done
		fi
	fi
	rm -f "$f"
}

# Restart one recorded process with the command line it runs with now, after a pause of $2
# seconds (default 0) with it stopped: how the fault tests take the API server away from the
# controllers and give it back on the same port with the same flags. Only our own pids.
restart_proc() {
	local name=$1 pause=${2:-0} pid argv=()
	pid=$(cat "$STATE/pids/$name.pid" 2>/dev/null) || return 1
	pid_is_ours "$pid" || return 1
	mapfile -d '' argv <"/proc/$pid/cmdline" || return 1
	[ "${#argv[@]}" -gt 0 ] || return 1
	stop_proc "$STATE/pids/$name.pid"
	sleep "$pause"
	start_proc "$name" "${argv[@]}"
	proc_alive "$name"
}

# Restart the API server (restart_proc) and wait up to 60 s until it is ready again.
restart_apiserver() {
	restart_proc kube-apiserver "${1:-0}" || return 1
	wait_for 60 "$(cat "$STATE/bin-dir")/kubectl" --kubeconfig "$STATE/kubeconfig" get --raw /readyz
}

# Stop everything recorded in the state directory, newest components first, and remove it.
stop_all_and_remove() {
	local n kubectl paths=""
	[ -d "$STATE" ] || return 0
	# Full mode's default StorageClass is kube-controller-manager's hostPath provisioner, which
	# makes a directory /tmp/hostpath_pv/UUID per claim and removes it when the claim goes. Those
	# of claims still bound are removed here once the cluster is stopped; only paths of that
	# exact shape, read from this cluster's own PersistentVolumes.
	kubectl=$(cat "$STATE/bin-dir" 2>/dev/null || true)/kubectl
	if [ "$(cat "$STATE/mode" 2>/dev/null)" = full ] && [ -x "$kubectl" ] && [ -f "$STATE/kubeconfig" ]; then
		paths=$(timeout 10 "$kubectl" --kubeconfig "$STATE/kubeconfig" get pv \
			-o jsonpath='{range .items[*]}{.spec.hostPath.path}{"\n"}{end}' 2>/dev/null |
			grep -E '^/tmp/hostpath_pv/[0-9a-f-]{36}$' || true)
	fi
	if [ -d "$STATE/pids" ]; then
		# Controllers a test left running go first, while the API server still answers them.
		for n in "$STATE"/pids/ctrl-*.pid; do
			[ -f "$n" ] && stop_proc "$n"
		done
		for n in kueue jobset kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
			[ -f "$STATE/pids/$n.pid" ] && stop_proc "$STATE/pids/$n.pid"
		done
		for n in "$STATE"/pids/*.pid; do
			[ -f "$n" ] && stop_proc "$n"
		done
	fi
	for n in $paths; do rmdir "$n" 2>/dev/null || true; done
	rm -rf "$STATE"
}

# --- certificates -----------------------------------------------------------------------------
# The tier's CA and everything it issues live in $STATE/certs (C in `up`), with the openssl.cnf
# `up` writes there: its sections ca, server and client, the server's subjectAltName read from
# KFT_SAN. openssl's complaints go to $STATE/logs/openssl.log.

ossl() { openssl "$@" 2>>"$STATE/logs/openssl.log"; }

new_key() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

# issue <name> <subject> <extension section> [subjectAltName]: $STATE/certs/<name>.{crt,key},
# signed by the tier's CA, valid 7 days. Fails when openssl does (see logs/openssl.log).
issue() {
	local C="$STATE/certs" KFT_SAN=${4:-DNS:localhost}
	export KFT_SAN
	new_key "$C/$1.key" && chmod 600 "$C/$1.key" &&
		ossl req -new -config "$C/openssl.cnf" -key "$C/$1.key" -subj "$2" -out "$C/$1.csr" &&
		ossl x509 -req -in "$C/$1.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" \
			-set_serial "0x$(openssl rand -hex 12)" -days 7 -sha256 \
			-extfile "$C/openssl.cnf" -extensions "$3" -out "$C/$1.crt" || return 1
	rm -f "$C/$1.csr"
}

# --- Go modules -------------------------------------------------------------------------------

# Where a module's source is in the Go module cache, downloading it if needed. Run outside any
# module (in the state directory) so that no go.mod or go.sum is touched.
module_dir() {
	local go
	go=$(find_go)
	mkdir -p "$STATE/home"
	{ (cd "$STATE/home" && GOWORK=off GOFLAGS='' GOTOOLCHAIN=local "$go" mod download -json "$1" 2>/dev/null) ||
		true; } | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# --- ports ------------------------------------------------------------------------------------

# Print a TCP port nobody listens on, picked at random below the kernel's ephemeral range so
# outgoing connections do not collide with it. A lost race shows up as a bind failure, which
# the callers handle by retrying with a new port.
free_port() {
	local used p _
	used=$(listening_ports_all)
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 12000))
		if ! grep -qx "$p" <<<"$used"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Every listening TCP port on the machine, from /proc (no ss/netstat needed). With an argument,
# only sockets whose inode is in that space-separated list.
listening_ports_all() {
	local want=" ${1:-} " _sl laddr _raddr st rest inode port
	{ cat /proc/net/tcp /proc/net/tcp6 2>/dev/null || true; } | while read -r _sl laddr _raddr st rest; do
		[ "$st" = 0A ] || continue
		if [ -n "${1:-}" ]; then
			# Field 10 of the line is the inode; rest holds fields 5 onwards.
			inode=$(awk '{print $6}' <<<"$rest")
			case "$want" in *" $inode "*) ;; *) continue ;; esac
		fi
		port=${laddr##*:}
		echo $((16#$port))
	done | sort -un
}

# Ports our recorded processes listen on (for the leak test and diagnostics).
listening_ports_of_pid() {
	local pid=$1 inodes
	inodes=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null |
		sed 's/socket:\[\(.*\)\]/\1/' | sort -u | tr '\n' ' ')
	[ -n "$inodes" ] || return 0
	listening_ports_all "$inodes"
}

# Wait up to $1 seconds for a command to succeed, polling every 0.2 s.
wait_for() {
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	"$@" >/dev/null 2>&1
}

# --- building ---------------------------------------------------------------------------------

# Linker flags per tools module: strip symbols, and stamp the release version where the
# program would otherwise report a development version (clients and controllers read it).
tool_ldflags() {
	local name=$1 ver flags="-s -w" p maj min
	ver=$(tool_pin "$name")
	ver=${ver##*@}
	case "$name" in
	k8s)
		maj=${ver#v}
		maj=${maj%%.*}
		min=${ver#v*.}
		min=${min%%.*}
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			flags="$flags -X $p.gitVersion=$ver -X $p.gitMajor=$maj -X $p.gitMinor=$min"
			flags="$flags -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
		done
		;;
	jobset) flags="$flags -X sigs.k8s.io/jobset/pkg/version.GitVersion=$ver" ;;
	helm) flags="$flags -X helm.sh/helm/v3/internal/version.version=$ver" ;;
	esac
	printf '%s\n' "$flags"
}

# Name the module (and version) responsible for a failed build, from the go build log.
blame_module() {
	local logf=$1 scratch=$2 go=$3 pkg mod
	# Download, checksum and resolution errors read "<module>@<version>: <what went wrong>"
	# (paths inside the module cache also contain "@v", but are followed by "/", not ":").
	mod=$(grep -v '^go: downloading' "$logf" |
		grep -oE '[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)+@v[0-9][A-Za-z0-9.+-]*:' | head -n 1) || true
	if [ -n "$mod" ]; then
		printf '%s\n' "${mod%:}"
		return
	fi
	# A compile error is reported under "# <package>"; ask Go which module holds it.
	pkg=$(grep -m1 -E '^# ' "$logf" | sed 's/^# //; s/ .*//') || true
	if [ -n "$pkg" ]; then
		mod=$(cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local "$go" list -e \
			-f '{{with .Module}}{{.Path}}@{{.Version}}{{with .Replace}} (replaced by {{.Path}}{{with .Version}}@{{.}}{{end}}){{end}}{{end}}' \
			"$pkg" 2>/dev/null) || true
		printf '%s (package %s)\n' "${mod:-unknown module}" "$pkg"
		return
	fi
	echo "unknown module (see the log)"
}

# Build the programs of one tools module into the cache unless they are already there.
# Serialised by a lock file, so two concurrent `up`s share one build. Never prints on stdout.
build_tool() {
	local name=$1 go key root dir pin logf scratch lockfd bpid rc t0 n last b
	go=$(find_go) || die "no Go toolchain found"
	key=$(tool_key "$name") || die "cannot compute the cache key of tools/$name"
	root=$(cache_root)
	dir="$root/$key"
	[ -f "$dir/bin/.built" ] && return 0
	mkdir -p "$root/logs"
	exec {lockfd}>"$root/.lock-$name"
	if ! flock -n "$lockfd"; then
		log "another build of tools/$name is running; waiting for it"
		flock "$lockfd"
	fi
	if [ -f "$dir/bin/.built" ]; then
		exec {lockfd}>&-
		return 0
	fi
	# Leftovers of an interrupted build of this module are ours to remove (we hold its lock).
	rm -rf "$root/.build-$name."* "$dir"
	pin=$(tool_pin "$name")
	logf="$root/logs/$key.log"
	scratch=$(mktemp -d "$root/.build-$name.XXXXXX")
	# A copy, so that -mod=mod may rewrite go.mod/go.sum without touching the checkout.
	cp -R "$KFT_TOOLS_DIR/$name/." "$scratch/"
	log "building $pin from ${KFT_TOOLS_DIR#"$KFT_REPO_ROOT"/}/$name ($("$go" env GOVERSION), nice 19, -p 2)"
	log "  a cold build takes many minutes; log: $logf"
	t0=$SECONDS
	# Keep CGO_ENABLED and -trimpath in step with KFT_BUILD_FLAGS (they shape the cache key).
	(
		cd "$scratch" &&
			exec env GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
				nice -n 19 "$go" build -v -trimpath -p 2 -ldflags "$(tool_ldflags "$name")" \
				-o "$scratch/bin/" tool
	) >"$logf" 2>&1 &
	bpid=$!
	last=$SECONDS
	while kill -0 "$bpid" 2>/dev/null; do
		sleep 1
		if [ $((SECONDS - last)) -ge 60 ]; then
			last=$SECONDS
			n=$(grep -cvE '^(go: |# )' "$logf" || true)
			log "  still building $pin: $n packages compiled, $((SECONDS - t0)) s"
		fi
	done
	rc=0
	wait "$bpid" || rc=$?
	if [ "$rc" -ne 0 ]; then
		log "error: building $pin (${KFT_TOOLS_DIR#"$KFT_REPO_ROOT"/}/$name) failed after $((SECONDS - t0)) s"
		log "  failing module: $(blame_module "$logf" "$scratch" "$go")"
		log "  errors from $logf:"
		# The log also lists every package compiled (-v); show only the error lines.
		{ grep -vE '^[A-Za-z0-9._~/-]+$|^go: (downloading|finding) ' "$logf" || true; } | head -n 20 |
			sed 's/^/    /' >&2 || true
		rm -rf "$scratch"
		exec {lockfd}>&-
		return 1
	fi
	# Give the programs their usual names (Go names a binary after its package path).
	[ -f "$scratch/bin/server" ] && mv "$scratch/bin/server" "$scratch/bin/etcd"
	[ -f "$scratch/bin/jobset" ] && mv "$scratch/bin/jobset" "$scratch/bin/jobset-controller"
	for b in "$scratch"/bin/*; do
		echo "$(basename "$b") $pin"
	done >"$scratch/bin/.built"
	mkdir -p "$dir"
	mv "$scratch/bin" "$dir/bin"
	rm -rf "$scratch"
	log "built $pin in $((SECONDS - t0)) s: $(cd "$dir/bin" && echo *)"
	exec {lockfd}>&-
}
