#!/usr/bin/env bash
# Installs every system dependency kftrainer builds and tests with, from
# Debian's packages. Idempotent: packages already present are not touched.
# --check only reports (exit 1 when something is missing).
set -euo pipefail

packages=(
	build-essential cmake pkg-config git clang clang-format libclang-rt-14-dev
	libjansson-dev libyaml-dev libcurl4-openssl-dev libssl-dev openssl
	libsqlite3-dev libmicrohttpd-dev libcmocka-dev python3 python3-yaml util-linux
	# The local tier and its examples: jq reads `get -o json`; the MPI example runs
	# Debian's OpenMPI with mpi4py (installed for /usr/bin/python3, which the
	# example calls by path).
	jq openmpi-bin python3-mpi4py
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

# The golden tier compares YAML with PyYAML, in whichever python3 is first on
# PATH (it may not be Debian's).
pyyaml_missing() { ! python3 -c 'import yaml' >/dev/null 2>&1; }

if [ "${1:-}" = "--check" ]; then
	if [ ${#missing[@]} -gt 0 ] || pyyaml_missing; then
		echo "missing: ${missing[*]}$(pyyaml_missing && echo ' pyyaml')"
		exit 1
	fi
	exit 0
fi

if [ ${#missing[@]} -eq 0 ] && ! pyyaml_missing; then
	echo "install-deps: all dependencies present" >&2
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}" >&2
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
if pyyaml_missing; then
	echo "install-deps: installing PyYAML for $(command -v python3)" >&2
	python3 -m pip install -q pyyaml >&2
fi
