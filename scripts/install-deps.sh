#!/usr/bin/env bash
# Installs every system dependency kftrainer builds and tests with, from
# Debian's packages. Idempotent: packages already present are not touched.
# --check only reports (exit 1 when something is missing).
#
# One dependency is built rather than installed: the controller manager is a
# static binary, and Debian's libcurl drags some twenty libraries (and OpenSSL,
# most of whose pages TLS touches) into it. So curl is compiled here from
# Debian's own source package, of the same version as the installed
# libcurl4-openssl-dev, with HTTP and HTTPS only, over mbedTLS, into
#   ${KFT_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kftrainer/deps}/curl-VERSION-mbedtls
# (lib/libcurl.a and include/). A security update of Debian's curl changes the
# version, so the next `make` builds the fixed source. KFT_SLIM_CURL=off skips
# this step (the controller is then linked dynamically against the system
# libcurl). --slim-curl-prefix prints that directory (CMake asks for it).
set -euo pipefail

packages=(
	build-essential cmake pkg-config git clang clang-format libclang-rt-14-dev
	libjansson-dev libyaml-dev libcurl4-openssl-dev libssl-dev openssl
	libsqlite3-dev libmicrohttpd-dev libmbedtls-dev libcmocka-dev python3 python3-yaml util-linux
	# `apt-get source` unpacks curl's source package with dpkg-source.
	dpkg-dev
	# The local tier and its examples: jq reads `get -o json`; the MPI example runs
	# Debian's OpenMPI with mpi4py (installed for /usr/bin/python3, which the
	# example calls by path).
	jq openmpi-bin python3-mpi4py
	# The python tier: a venv over Debian's python3 (which sees python3-mpi4py).
	python3-venv
)
# The browser tier: `kftrainer ui` in Debian's headless chromium, driven by selenium (from
# PyPI, in the tier's venv) through chromedriver. KFT_BROWSER=off (make demo, make ui) skips it.
if [ "${KFT_BROWSER:-on}" != off ]; then
	packages+=(chromium chromium-driver)
fi

deps_dir=${KFT_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kftrainer/deps}

# The Debian source version of the installed libcurl (empty when not installed).
curl_version() {
	dpkg-query -W -f='${source:Version}' libcurl4-openssl-dev 2>/dev/null || true
}

slim_curl_prefix() {
	local v
	v=$(curl_version)
	[ -n "$v" ] && echo "$deps_dir/curl-$v-mbedtls"
}

slim_curl_wanted() { [ "${KFT_SLIM_CURL:-on}" != off ]; }

slim_curl_missing() {
	local p
	slim_curl_wanted || return 1
	p=$(slim_curl_prefix) || return 0
	[ ! -f "$p/lib/libcurl.a" ] || [ ! -f "$p/include/curl/curl.h" ]
}

if [ "${1:-}" = "--slim-curl-prefix" ]; then
	slim_curl_prefix
	exit
fi

# --- the dashboard's charting library -------------------------------------------
# uPlot, from the npm registry at a pinned version whose tarball's sha256 is
# checked, unpacked into $deps_dir/uplot-VERSION (CMake embeds its two dist
# files into the kftrainer binary; nothing of it is committed). Without npm
# or the registry the build goes on and `kftrainer ui` shows numbers instead
# of charts. A failed fetch is remembered ($uplot_dir.unavailable), so later
# runs (every `make`) do not try the network again; --uplot fetches only this,
# trying again; --uplot-dir prints the directory. CMake checks the two files'
# own sha256 before it embeds them.
uplot_version=1.6.32
uplot_sha256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
uplot_dir="$deps_dir/uplot-$uplot_version"
uplot_missing() {
	[ ! -e "$uplot_dir.unavailable" ] &&
		{ [ ! -f "$uplot_dir/uPlot.iife.min.js" ] || [ ! -f "$uplot_dir/uPlot.min.css" ]; }
}

fetch_uplot() {
	uplot_missing || return 0
	mkdir -p "$deps_dir"
	if ! fetch_uplot_now; then
		: >"$uplot_dir.unavailable"
		return 1
	fi
}

fetch_uplot_now() {
	if ! command -v npm >/dev/null 2>&1; then
		echo "install-deps: npm not found: the dashboard will have no charts" >&2
		return 1
	fi
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # the path is fixed now
	trap "rm -rf '$tmp'" RETURN
	if ! (cd "$tmp" && npm pack --silent "uplot@$uplot_version" >/dev/null 2>&1) ||
		! echo "$uplot_sha256  $tmp/uplot-$uplot_version.tgz" | sha256sum -c --status; then
		echo "install-deps: cannot fetch uplot@$uplot_version from the npm registry" \
			"(or its sha256 differs): the dashboard will have no charts" >&2
		return 1
	fi
	tar -xzf "$tmp/uplot-$uplot_version.tgz" -C "$tmp" package/dist/uPlot.iife.min.js \
		package/dist/uPlot.min.css package/LICENSE
	mkdir -p "$uplot_dir"
	cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" \
		"$tmp/package/LICENSE" "$uplot_dir/"
	echo "install-deps: uplot@$uplot_version in $uplot_dir" >&2
}

case "${1:-}" in
--uplot-dir)
	echo "$uplot_dir"
	exit
	;;
--uplot)
	rm -f "$uplot_dir.unavailable"
	fetch_uplot || true
	exit 0
	;;
esac

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
	if [ ${#missing[@]} -gt 0 ] || pyyaml_missing || slim_curl_missing || uplot_missing; then
		echo "missing:${missing[*]/#/ }$(pyyaml_missing && echo ' pyyaml')$(slim_curl_missing &&
			echo " slim-libcurl:$(slim_curl_prefix || echo "$deps_dir")")$(uplot_missing &&
			echo " uplot:$uplot_dir")"
		exit 1
	fi
	exit 0
fi

if [ ${#missing[@]} -eq 0 ] && ! pyyaml_missing && ! slim_curl_missing && ! uplot_missing; then
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
fetch_uplot || true

# --- the slim libcurl -----------------------------------------------------------

src_list=/etc/apt/sources.list.d/kftrainer-deb-src.list

# deb-src twins of the configured Debian archive entries (deb.debian.org and
# mirrors, security), one-line format, whichever format they are written in.
# Third-party repositories are left out: most publish no sources, and a missing
# index would fail `apt-get update`.
deb_src_lines() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		if [ ! -f "$f" ] || [ "$f" = "$src_list" ]; then
			continue
		fi
		sed -nE 's/^[[:space:]]*deb[[:space:]]+(.*debian\.org.*)$/deb-src \1/p' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas: one line per URI and suite; an inline Signed-By key
		# (continuation lines) is dropped, the archive keyring then applies.
		awk '
		function flush(   i, j, nu, ns, u, s, opt) {
			if (types ~ /(^| )deb( |$)/ && enabled != "no") {
				nu = split(uris, u, " "); ns = split(suites, s, " ")
				opt = signed != "" ? "[signed-by=" signed "] " : ""
				for (i = 1; i <= nu; i++)
					if (u[i] ~ /debian\.org/)
						for (j = 1; j <= ns; j++)
							print "deb-src " opt u[i] " " s[j] " " comps
			}
			types = uris = suites = comps = signed = enabled = ""
		}
		/^[ \t]*$/ { flush(); next }
		/^#/ || /^[ \t]/ { next }
		{
			key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
			if (key == "types:") types = val
			else if (key == "uris:") uris = val
			else if (key == "suites:") suites = val
			else if (key == "components:") comps = val
			else if (key == "signed-by:") signed = val
			else if (key == "enabled:") enabled = tolower(val)
		}
		END { flush() }' "$f"
	done
}

curl_source_known() {
	local versions # read whole: grep -q closing the pipe early would fail it (pipefail)
	versions=$(apt-cache showsrc curl 2>/dev/null || true)
	grep -qx "Version: $1" <<<"$versions"
}

# Makes `apt-get source curl=VERSION` possible: deb-src entries of our own
# (only when the configured ones give no such source) and fresh indexes.
enable_curl_source() {
	local v=$1 lines
	curl_source_known "$v" && return 0
	lines=$(deb_src_lines | sort -u)
	if [ -z "$lines" ]; then
		echo "install-deps: no Debian archive among the apt sources; cannot fetch curl's source" >&2
		return 1
	fi
	if [ "$(cat "$src_list" 2>/dev/null)" != "$lines" ]; then
		echo "install-deps: enabling Debian source packages in $src_list" >&2
		printf '%s\n' "$lines" | $sudo tee "$src_list" >/dev/null || return 1
	fi
	$sudo apt-get update -qq >&2 || return 1
	if ! curl_source_known "$v"; then
		echo "install-deps: the archive no longer has curl $v's source; upgrade libcurl4-openssl-dev" \
			"(apt-get install --only-upgrade libcurl4-openssl-dev) and run this again" >&2
		return 1
	fi
}

# curl as the controller needs it: HTTP/1.1 and HTTPS over mbedTLS, the
# threaded resolver, verbose error strings, static and position-independent,
# nothing else (no other protocol, compression, IDN, PSL, HTTP/2, auth beyond
# basic and bearer headers). The CA bundle path is Debian's, for kubeconfigs
# that name no CA.
curl_configure() {
	./configure --prefix="$1" --disable-shared --enable-static --with-pic \
		--with-mbedtls --without-openssl --without-gnutls \
		--disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
		--disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp \
		--disable-gopher --disable-mqtt --disable-manual --disable-ntlm --disable-kerberos-auth \
		--disable-negotiate-auth --disable-aws --disable-netrc --disable-alt-svc --disable-hsts \
		--disable-cookies --disable-doh --disable-mime --disable-form-api --disable-unix-sockets \
		--disable-progress-meter --disable-dateparse \
		--without-libpsl --without-zstd --without-brotli --without-nghttp2 --without-libidn2 \
		--without-zlib --without-librtmp --without-libssh2 --without-libssh --without-ngtcp2 \
		--without-quiche --without-msh3 --without-hyper --without-gssapi \
		--enable-threaded-resolver --enable-symbol-hiding \
		--with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --without-ca-path
}

build_slim_curl() {
	local v prefix tmp src
	v=$(curl_version)
	if [ -z "$v" ]; then
		echo "install-deps: libcurl4-openssl-dev is not installed; cannot tell which curl to build" >&2
		return 1
	fi
	prefix=$(slim_curl_prefix)
	enable_curl_source "$v" || return 1
	echo "install-deps: building libcurl ${v%%-*} over mbedTLS (about 2 min)" >&2
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/kft-curl.XXXXXX") || return 1
	# shellcheck disable=SC2064 # the path is fixed now
	trap "rm -rf '$tmp'" EXIT
	if ! (
		cd "$tmp" &&
			apt-get source -qq "curl=$v" &&
			src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'curl-*' | head -n 1) &&
			cd "$src" && curl_configure "$prefix" &&
			nice make -C lib -j2 &&
			make -C lib install DESTDIR="$tmp/stage" &&
			make -C include install DESTDIR="$tmp/stage"
	) >"$tmp/build.log" 2>&1; then
		echo "install-deps: building curl $v failed; the end of its log:" >&2
		tail -n 25 "$tmp/build.log" >&2
		return 1
	fi
	# Copied beside the final place and renamed, so an interrupted run never
	# leaves a prefix that looks complete.
	mkdir -p "$deps_dir" && rm -rf "$prefix" "$prefix.new" &&
		cp -a "$tmp/stage$prefix" "$prefix.new" && mv "$prefix.new" "$prefix" || return 1
	echo "install-deps: libcurl $v (mbedTLS) in $prefix" >&2
}

# Called in a condition, where `set -e` does not act: the function checks
# each step itself.
if slim_curl_missing && ! build_slim_curl; then
	echo "install-deps: no slim libcurl; KFT_SLIM_CURL=off skips it (the controller then links" \
		"the system libcurl and OpenSSL)" >&2
	exit 1
fi
