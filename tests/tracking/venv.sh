#!/usr/bin/env bash
# The tracking tier's Python environment, shared with the cluster tier's tracking test
# (tests/cluster/t/94c-controller-tracking.sh): <build>/tracking-tier with mlflow, boto3,
# pytest, ruff and the Kubeflow SDK from PyPI. Made or completed under a lock, so two tiers
# never pip into it at once. Prints the venv's directory; exits 77 when PyPI cannot be
# reached, 1 when installing failed otherwise.
#
#   tests/tracking/venv.sh BUILD_DIR
set -euo pipefail
build=$1
py=${KFT_PYTHON:-/usr/bin/python3}
venv=$build/tracking-tier
mkdir -p "$build"
exec {lock}>"$build/.tracking-tier.lock"
flock "$lock"
if [ ! -x "$venv/bin/python" ]; then
	"$py" -m venv "$venv" >&2
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
if ! "${pip[@]}" install 'mlflow==3.17.2' 'boto3>=1.34' 'pytest>=7' 'kubeflow==0.5.0' 'ruff>=0.5' >&2; then
	if ! "${pip[@]}" download --no-deps -d "$(mktemp -d)" pytest >/dev/null 2>&1; then
		echo "PyPI cannot be reached (mlflow, boto3, pytest, kubeflow)" >&2
		exit 77
	fi
	echo "installing the tracking tier's packages failed" >&2
	exit 1
fi
echo "$venv"
