#!/usr/bin/env bash
# `make demo`, the first command a newcomer runs, builds only what it runs (issue 11, item 7): the
# CLI, without the controller's slim libcurl, which scripts/install-deps.sh builds from Debian's
# curl source package after adding a deb-src list to the system's apt sources. `make build`
# keeps building everything. Read from make's plan (make -n), which runs nothing.
. "$KFT_LOCAL_DIR/lib.sh"

if ! command -v make >/dev/null; then
	skip "make demo's plan" "no make here"
	exit 0
fi
plan=$(make -n -C "$KFT_REPO_ROOT" demo BUILD="$KFT_CASE_TMP/build" 2>&1)
note "make -n demo:" "$plan"
deps=$(grep 'install-deps.sh' <<<"$plan")
expect_contains "the demo installs dependencies" "$deps" "install-deps.sh"
expect_eq "every install-deps.sh of the demo skips the slim libcurl" "" \
	"$(grep 'install-deps.sh' <<<"$plan" | tr '|' '\n' | grep 'install-deps.sh' | grep -v 'KFT_SLIM_CURL=off')"
builds=$(grep 'cmake --build' <<<"$plan")
expect_contains "the demo builds the CLI" "$builds" "--target kftrainer-cli"
expect_eq "and nothing else" "" "$(grep -v -- '--target kftrainer-cli' <<<"$builds")"

plan=$(make -n -C "$KFT_REPO_ROOT" build BUILD="$KFT_CASE_TMP/build" 2>&1)
expect_eq "make build still builds every target" 1 \
	"$(grep -c "cmake --build $KFT_CASE_TMP/build -j" <<<"$plan")"

# install-deps.sh, told to skip the slim libcurl, never asks for it (nor for Debian's sources).
run_capture env KFT_SLIM_CURL=off "$KFT_REPO_ROOT/scripts/install-deps.sh" --check
expect_not_contains "install-deps --check without the slim libcurl" "$KFT_OUT" "slim-libcurl"
