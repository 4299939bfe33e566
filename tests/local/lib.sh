# shellcheck shell=bash
# Sourced by every local-tier case (tests/local/cases/*.sh). run-tier gives each case:
#   KFTRAINER            the binary under test
#   KFTRAINER_STATE_DIR  a fresh, empty state directory (the binary reads it from env)
#   KFT_CASE_TMP         a fresh scratch directory for the case's own files
#   TMPDIR               a directory the harness checks for leaked kftrainer*/kft-* files
#   KFT_REPO_ROOT, KFT_LOCAL_DIR, KFT_BUILD_DIR, KFT_CASE_NAME
# Run by hand, a case falls back to a state directory of its own under a new temp dir.
#
# Reporting: one line per check on stdout, "PASS: name", "FAIL: name: why", "SKIP: name: why";
# diagnostics go to stderr. The check helpers below print those lines and return 0 (passed) or
# 1 (failed), so a case can stop at the first failure that makes the rest meaningless:
#   expect_eq "job name" "$want" "$got" || exit 0
#
# Cleanup: helpers that start something in the background (file servers) register it with
# on_exit; the EXIT trap set here runs those commands in reverse order. A case that needs its own
# trap must call on_exit instead of trap.

KFT_LOCAL_DIR=${KFT_LOCAL_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
KFT_REPO_ROOT=${KFT_REPO_ROOT:-$(cd "$KFT_LOCAL_DIR/../.." && pwd)}
KFT_BUILD_DIR=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}
KFTRAINER=${KFTRAINER:-$KFT_BUILD_DIR/bin/kftrainer}
KFT_CASE_NAME=${KFT_CASE_NAME:-$(basename "$0" .sh)}
if [ -z "${KFTRAINER_STATE_DIR:-}" ] || [ -z "${KFT_CASE_TMP:-}" ]; then
	_kft_own_tmp=$(mktemp -d "${TMPDIR:-/tmp}/kft-case.XXXXXX") || exit 1
	KFTRAINER_STATE_DIR=$_kft_own_tmp/state KFT_CASE_TMP=$_kft_own_tmp/tmp
	mkdir -p "$KFTRAINER_STATE_DIR" "$KFT_CASE_TMP"
fi
export KFTRAINER KFTRAINER_STATE_DIR KFT_CASE_TMP KFT_REPO_ROOT KFT_BUILD_DIR
# Cases run jobs from example directories (a job's processes start in the caller's directory),
# where ./manifests/runtimes does not exist: point the runtime lookup at the repository's.
KFTRAINER_RUNTIMES=${KFTRAINER_RUNTIMES:-$KFT_REPO_ROOT/manifests/runtimes}
export KFTRAINER_RUNTIMES
# Examples use Debian's python (it has mpi4py); the file server runs on any python3.
KFT_PYTHON=${KFT_PYTHON:-python3}

# --- reporting ------------------------------------------------------------------------------

pass() { echo "PASS: $1"; }
# fail NAME WHY [DIAGNOSTIC...]: extra arguments are printed indented on stderr.
fail() {
	echo "FAIL: $1: $2"
	shift 2
	local d
	for d in "$@"; do printf '%s\n' "$d" | sed 's/^/    /' >&2; done
	return 1
}
skip() { echo "SKIP: $1: $2"; }
note() { printf '%s: %s\n' "$KFT_CASE_NAME" "$*" >&2; }

# expect_eq NAME WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "want '$2', got '$3'"
	fi
}

# expect_contains NAME HAYSTACK NEEDLE
expect_contains() {
	case "$2" in
	*"$3"*) pass "$1" ;;
	*) fail "$1" "does not contain '$3'" "$2" ;;
	esac
}

# expect_not_contains NAME HAYSTACK NEEDLE
expect_not_contains() {
	case "$2" in
	*"$3"*) fail "$1" "unexpectedly contains '$3'" "$2" ;;
	*) pass "$1" ;;
	esac
}

# expect_exit NAME WANT_CODE CMD...: runs CMD, stdout and stderr into $KFT_OUT and $KFT_ERR.
KFT_OUT='' KFT_ERR='' KFT_RC=''
expect_exit() {
	local name=$1 want=$2
	shift 2
	run_capture "$@"
	if [ "$KFT_RC" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "exit $KFT_RC, want $want: $*" "stdout: $KFT_OUT" "stderr: $KFT_ERR"
	fi
}

# run_capture CMD...: runs CMD; sets KFT_RC, KFT_OUT (stdout) and KFT_ERR (stderr).
run_capture() {
	local o="$KFT_CASE_TMP/.out.$$" e="$KFT_CASE_TMP/.err.$$"
	KFT_RC=0
	"$@" >"$o" 2>"$e" || KFT_RC=$?
	KFT_OUT=$(cat "$o") KFT_ERR=$(cat "$e")
	rm -f "$o" "$e"
}

# --- running kftrainer ----------------------------------------------------------------------

# The binary on the case's state directory (from env, as a user would set it).
kft() { "$KFTRAINER" "$@"; }

# wait_for SECONDS CMD...: polls CMD (output discarded) until it succeeds or time runs out.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	"$@" >/dev/null 2>&1
}

# trainjob_file FILE NAME RUNTIME: writes a TrainJob manifest named NAME that runs `true` on
# the ClusterTrainingRuntime RUNTIME, for cases that only care which runtime it names.
trainjob_file() {
	cat >"$1" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: $2
spec:
  runtimeRef:
    name: $3
  trainer:
    command: ["true"]
YAML
}

# The job's TrainJob as JSON (kftrainer get NAME -o json).
job_json() { kft get "$1" -o json 2>/dev/null; }

# job_cond NAME TYPE: prints "STATUS|REASON|MESSAGE" of condition TYPE on one line (a failure's
# message goes on with the output's last lines: its newlines are printed as "\n"), nothing when
# absent.
job_cond() {
	job_json "$1" | jq -r --arg t "$2" \
		'.status.conditions // [] | map(select(.type == $t))[0] // empty
		 | "\(.status)|\(.reason // "")|\(.message // "" | gsub("\n"; "\\n"))"'
}

# Whether job NAME has condition TYPE with status True.
job_has() { [ "$(job_cond "$1" "$2" | cut -d'|' -f1)" = True ]; }

# Whether job NAME has finished (Complete or Failed is True).
job_finished() { job_has "$1" Complete || job_has "$1" Failed; }

# wait_job NAME SECONDS: waits until the job finishes; prints Complete or Failed (or "timeout").
wait_job() {
	if wait_for "$2" job_finished "$1"; then
		if job_has "$1" Complete; then echo Complete; else echo Failed; fi
	else
		echo timeout
	fi
}

# Live pids (one a line) of the job processes and supervisors of this case's state directory:
# processes whose command line names it (the supervisor's --state-dir) or whose environment
# holds a path under it (every job process has KFTRAINER_STATUS_FILE there). The case's own
# shell, its helpers and file servers only have KFTRAINER_STATE_DIR itself, without the "/",
# so they are not counted. The harness does its own, wider search after the case.
job_pids() {
	local state=${1:-$KFTRAINER_STATE_DIR} d pid
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		[ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
		# A zombie has an empty cmdline; it holds nothing. (-s is no use: /proc files have size 0.)
		grep -qsa . "$d/cmdline" || continue
		if grep -qsaF -- "$state" "$d/cmdline" || grep -qsaF -- "$state/" "$d/environ"; then
			echo "$pid"
		fi
	done
}

# Pids of this state directory's supervisors (the hidden `supervise` verb).
supervisor_pids() {
	local p
	for p in $(job_pids); do
		{ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qw supervise && echo "$p"
	done
}

# Pids of this state directory's job processes whose environment has NAME=VALUE exactly.
job_pids_with_env() {
	local p
	for p in $(job_pids); do
		{ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF -- "$1" && echo "$p"
	done
}

# Whether a job process with NAME=VALUE in its environment runs (for wait_for, which runs its
# command afresh each time; `wait_for 9 test -n "$(...)"` would expand only once).
job_proc_with_env() { [ -n "$(job_pids_with_env "$1")" ]; }

# Whether any pid in the list (words) is still alive and not a zombie.
any_alive() {
	local p
	for p in "$@"; do
		grep -qsa . "/proc/$p/cmdline" && return 0
	done
	return 1
}

# Whether no process of this case's state directory is left.
no_processes_left() { [ -z "$(job_pids)" ]; }

# expect_no_processes NAME [SECONDS]: waits (default 10 s) for every process of the state
# directory to end; FAIL naming the ones left.
expect_no_processes() {
	if wait_for "${2:-10}" no_processes_left; then
		pass "$1"
	else
		local p d=()
		for p in $(job_pids); do d+=("$p: $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)"); done
		fail "$1" "processes still running" "${d[@]}"
	fi
}

# --- cleanup --------------------------------------------------------------------------------

_kft_on_exit=()
on_exit() { _kft_on_exit+=("$*"); }
_kft_run_exit() {
	local i
	for ((i = ${#_kft_on_exit[@]} - 1; i >= 0; i--)); do eval "${_kft_on_exit[$i]}" || true; done
	[ -n "${_kft_own_tmp:-}" ] && rm -rf "$_kft_own_tmp"
	return 0
}
trap _kft_run_exit EXIT
trap 'exit 143' TERM INT HUP

# --- ports and servers ----------------------------------------------------------------------

# A loopback TCP port nobody listens on right now (the kernel's choice).
free_port() {
	"$KFT_PYTHON" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Whether something accepts connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_file_server DIR [--tls]: serves DIR over HTTP (or HTTPS with a throwaway self-signed
# certificate, whose path is then in FS_CA) on a loopback port the kernel picks. Sets FS_URL
# (e.g. http://127.0.0.1:PORT), FS_PORT, FS_PID and FS_LOG (one line per request). Stopped
# when the case exits. Returns 1 when the server did not come up. With FS_RATE=N set, every reply
# goes at about N bytes a second; with FS_REDIRECTS="FROM=TO ...", those redirects (see
# fileserver.py --redirect); with FS_ERRORS="PREFIX=STATUS ...", those error replies
# (--error); with FS_S3_PAGE=N, S3 list replies of N keys (--s3-page-size).
start_file_server() {
	local dir=$1 tls=${2:-} pf args=()
	pf=$(mktemp "$KFT_CASE_TMP/fs-port.XXXXXX")
	FS_LOG=$(mktemp "$KFT_CASE_TMP/fs-log.XXXXXX")
	FS_CA=
	if [ "$tls" = --tls ]; then
		FS_CA="$KFT_CASE_TMP/fs-cert.pem"
		openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
			-addext subjectAltName=IP:127.0.0.1 -keyout "$KFT_CASE_TMP/fs-key.pem" \
			-out "$FS_CA" >/dev/null 2>&1 || return 1
		args=(--cert "$FS_CA" --key "$KFT_CASE_TMP/fs-key.pem")
	fi
	[ -n "${FS_RATE:-}" ] && args+=(--rate "$FS_RATE")
	local r
	for r in ${FS_REDIRECTS:-}; do args+=(--redirect "$r"); done
	for r in ${FS_ERRORS:-}; do args+=(--error "$r"); done
	[ -n "${FS_S3_PAGE:-}" ] && args+=(--s3-page-size "$FS_S3_PAGE")
	"$KFT_PYTHON" "$KFT_LOCAL_DIR/fileserver.py" --root "$dir" --port-file "$pf" \
		--log "$FS_LOG" "${args[@]}" </dev/null >/dev/null 2>>"$FS_LOG" &
	FS_PID=$!
	on_exit "kill $FS_PID 2>/dev/null; wait $FS_PID 2>/dev/null"
	wait_for 10 test -s "$pf" || return 1
	FS_PORT=$(cat "$pf")
	if [ "$tls" = --tls ]; then FS_URL="https://127.0.0.1:$FS_PORT"; else FS_URL="http://127.0.0.1:$FS_PORT"; fi
	export FS_URL FS_PORT FS_PID FS_LOG FS_CA
}

# sha256 of a file (hex only).
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
