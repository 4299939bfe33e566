#!/usr/bin/env bash
# Where `kftrainer` finds runtimes when no -r is given (issue 11, item 7: a built binary run
# outside the checkout found none, so the README's tour failed as written). The order:
# $KFTRAINER_RUNTIMES, ./manifests/runtimes, BIN/../share/kftrainer/runtimes (an installed
# tree, wherever it is), the checkout's manifests/runtimes for the build tree's own binary, the
# configured install prefix.
. "$KFT_LOCAL_DIR/lib.sh"

names() { awk 'NR > 1 {print $1}' <<<"$KFT_OUT" | tr '\n' ' ' | sed 's/ $//'; }
cd "$KFT_CASE_TMP" || exit 1
all=$(cd "$KFT_REPO_ROOT" && "$KFTRAINER" runtimes -r manifests/runtimes | awk 'NR > 1 {print $1}' |
	tr '\n' ' ' | sed 's/ $//')

run_capture env -u KFTRAINER_RUNTIMES "$KFTRAINER" runtimes
expect_eq "the build tree's binary, elsewhere: the checkout's runtimes" "0 $all" "$KFT_RC $(names)"

# An installed tree (a copy of the binary in PREFIX/bin) uses PREFIX/share/kftrainer/runtimes.
mkdir -p prefix/bin prefix/share/kftrainer/runtimes
cp "$KFTRAINER" prefix/bin/kftrainer
cp "$KFT_REPO_ROOT/manifests/runtimes/torch-distributed.yaml" prefix/share/kftrainer/runtimes/
run_capture env -u KFTRAINER_RUNTIMES prefix/bin/kftrainer runtimes
expect_eq "an installed tree: its own share directory" "0 torch-distributed" "$KFT_RC $(names)"

# A copy with no share directory beside it does not reach into the checkout.
mkdir -p alone && cp "$KFTRAINER" alone/kftrainer
if [ -d /usr/local/share/kftrainer/runtimes ]; then
	skip "a lone copy finds nothing" "/usr/local/share/kftrainer/runtimes exists here"
else
	run_capture env -u KFTRAINER_RUNTIMES alone/kftrainer runtimes
	expect_eq "a lone copy finds nothing: exit 2" 2 "$KFT_RC"
	expect_contains "and says where it looked" "$KFT_ERR" "no runtimes: give -r FILE|DIR or set KFTRAINER_RUNTIMES"
fi

# Precedence is unchanged: $KFTRAINER_RUNTIMES, then ./manifests/runtimes, before the binary's.
mkdir -p one two/manifests/runtimes
cp "$KFT_REPO_ROOT/manifests/runtimes/xgboost-distributed.yaml" one/
cp "$KFT_REPO_ROOT/manifests/runtimes/jax-distributed.yaml" two/manifests/runtimes/
run_capture env KFTRAINER_RUNTIMES="$PWD/one" "$KFTRAINER" runtimes
expect_eq "\$KFTRAINER_RUNTIMES first" "xgboost-distributed" "$(names)"
run_capture sh -c "cd two && env -u KFTRAINER_RUNTIMES '$KFTRAINER' runtimes"
expect_eq "./manifests/runtimes next" "jax-distributed" "$(names)"
run_capture env KFTRAINER_RUNTIMES="$PWD/one" "$KFTRAINER" runtimes -r two/manifests/runtimes
expect_eq "-r wins over all" "jax-distributed" "$(names)"
