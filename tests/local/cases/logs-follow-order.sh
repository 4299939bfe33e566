#!/usr/bin/env bash
# `logs -f` (and `train --follow`) across nodes prints lines in the order they were written,
# not node by node: node 1 writes first and third, node 0 second, 0.1 s apart, after the
# follower is already waiting. Draining each log in turn every 200 ms printed node 0's line
# before node 1's first one whenever both fell into one round.
. "$KFT_LOCAL_DIR/lib.sh"
script='if [ "$PET_NODE_RANK" = 1 ]; then sleep 1; echo first; sleep 0.2; echo third;
else sleep 1.1; echo second; fi'
run_capture timeout 60 "$KFTRAINER" train --runtime torch-distributed --nodes 2 --name order \
	--follow -- sh -c "$script"
expect_eq "train --follow exits 0" 0 "$KFT_RC"
expect_eq "lines in the order written" "[node-1] first|[node-0] second|[node-1] third" \
	"$(grep -E 'first|second|third' <<<"$KFT_OUT" | paste -sd'|')"
