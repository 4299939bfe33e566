# Sourced: makes (once) and prints the virtual environment that holds real torch from PyPI
# with the kftrainer package installed from this checkout, for the frameworks tier and the SDK
# bench. Over Debian's python3 like the python tier; torch is some 3 GB with its CUDA
# libraries (they load only on a GPU), downloaded once into pip's cache.
kft_frameworks_venv() {
	local repo=$1 build=$2 py=${KFT_PYTHON:-/usr/bin/python3}
	local venv=$build/frameworks-venv
	if [ ! -x "$venv/bin/python" ]; then
		"$py" -m venv --system-site-packages "$venv" >&2 || return 1
	fi
	local pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
	"${pip[@]}" install 'kubeflow==0.5.0' 'pytest>=7' torch >&2 || return 1
	"${pip[@]}" install "$repo" >&2 || return 1
	echo "$venv"
}
