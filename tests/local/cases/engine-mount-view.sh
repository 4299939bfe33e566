#!/usr/bin/env bash
# A local job never reads or writes outside its own directories (issue 20, item 1). A pod sees
# each volume at its mountPath, as the kubelet binds it in a container (Kubernetes
# volumeMounts; upstream's torchtune runtimes mount the "initializer" claim at /workspace and
# pass `output_dir=/workspace/output` and `checkpointer.checkpoint_dir=/workspace/model` to
# `tune run`), however the path reaches the process: an argv word, a value after '=', a
# flag's value, the program's own code, an env value, the working directory. The host's
# /workspace is never created; a mount path that exists on the host shows the job's volume,
# not the host's files; a readOnly configMap volume refuses writes.
# With KFTRAINER_MOUNT_NAMESPACE=off (the fallback where the kernel allows no mount
# namespaces) argv words and env values that start with a mount path or carry one after their
# first '=' are rewritten, so torchtune's key=value arguments still land in the job.
. "$KFT_LOCAL_DIR/lib.sh"

if [ -e /workspace ]; then
	skip "mount view" "/workspace exists on this host; the case needs it absent to tell"
	exit 0
fi
hostdir=$KFT_CASE_TMP/host-data # a mount path that exists on the host, with a file of its own
mkdir -p "$hostdir"
echo "the host's" >"$hostdir/secret"
etcdir=/etc/kft-view-$$ # under a host directory, absent: made in the view only

cat >"$KFT_CASE_TMP/job.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: view-config
data:
  setting: "on"
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: view-rt
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: busybox
                  workingDir: /workspace
                  env:
                  - name: OUT_DIR
                    value: /workspace/output
                  volumeMounts:
                  - {name: work, mountPath: /workspace}
                  - {name: data, mountPath: $hostdir}
                  - {name: conf, mountPath: $etcdir, readOnly: true}
                volumes:
                - {name: work, emptyDir: {}}
                - {name: data, emptyDir: {}}
                - {name: conf, configMap: {name: view-config}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: NAME
spec:
  runtimeRef:
    name: view-rt
    kind: TrainingRuntime
  trainer:
    command:
    - python3
    - -c
    - |
      import os, sys
      kv = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a and not a.startswith("-"))
      os.makedirs(kv["output_dir"], exist_ok=True)
      open(os.path.join(kv["output_dir"], "from-kv"), "w").write("kv\n")
      flag = [a for a in sys.argv[1:] if a.startswith("--data=")][0].split("=", 1)[1]
      open(os.path.join(flag, "from-flag"), "w").write("flag\n")
      open(sys.argv[1], "w").write("word\n")
      try:
          open("/workspace/from-code", "w").write("code\n")
      except OSError as e:
          print("code write failed:", e.strerror)
      open(os.path.join(os.environ["OUT_DIR"], "from-env"), "w").write("env\n")
      open("from-cwd", "w").write("cwd\n")
      print("cwd", os.getcwd())
      print("host file visible:", os.path.exists("$hostdir/secret"))
      if len(sys.argv) > 4:  # the view's own checks, by paths in the code
          open("$hostdir/from-job", "w").write("job\n")
          print("setting", open("$etcdir/setting").read())
          try:
              open("$etcdir/new", "w")
              print("read-only volume written")
          except OSError as e:
              print("read-only volume refused:", e.strerror)
    - /workspace/from-word
    - output_dir=/workspace/output
    - --data=/workspace/output
    - VIEW
YAML

# run NAME [ENV...]: the job above as NAME, followed to its end.
run() {
	local name=$1
	shift
	sed -e "s/^  name: NAME$/  name: $name/" -e "${view_checks:+/^    - VIEW$/d}" \
		"$KFT_CASE_TMP/job.yaml" >"$KFT_CASE_TMP/$name.yaml"
	run_capture env "$@" timeout 120 "$KFTRAINER" train -f "$KFT_CASE_TMP/$name.yaml" --follow
}

run viewed
expect_eq "the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
vol=$KFTRAINER_STATE_DIR/jobs/default/viewed/volumes
for f in output/from-kv output/from-flag from-word from-code output/from-env from-cwd; do
	expect_eq "$f landed in the job's /workspace" "$(basename "$f" | sed 's/from-//')" \
		"$(cat "$vol/work/$f" 2>/dev/null)"
done
expect_contains "the working directory is /workspace, as declared" "$KFT_OUT" "cwd /workspace"
expect_contains "a mount path that exists on the host shows the job's volume" "$KFT_OUT" \
	"host file visible: False"
expect_eq "the job's write there went to its volume" "job" "$(cat "$vol/data/from-job")"
expect_eq "not to the host's directory" "secret" "$(ls "$hostdir")"
expect_contains "the configMap volume is read at its path" "$KFT_OUT" "setting on"
expect_contains "and refuses writes, as readOnly" "$KFT_OUT" \
	"read-only volume refused: Read-only file system"
if [ -e /workspace ] || [ -e "$etcdir" ]; then
	fail "nothing was made on the host" "$(ls -ld /workspace "$etcdir" 2>&1)"
else
	pass "nothing was made on the host"
fi

view_checks=no run rewritten KFTRAINER_MOUNT_NAMESPACE=off
expect_eq "without a view the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
vol=$KFTRAINER_STATE_DIR/jobs/default/rewritten/volumes
for f in output/from-kv output/from-flag from-word output/from-env from-cwd; do
	expect_eq "without a view $f is rewritten into the job" \
		"$(basename "$f" | sed 's/from-//')" "$(cat "$vol/work/$f" 2>/dev/null)"
done
# A path in the program's own code is beyond a rewrite: without a view that write fails (the
# host has no /workspace), and it never makes one.
expect_contains "without a view the code's own path is not the job's" "$KFT_OUT" \
	"code write failed: No such file or directory"
if [ -e /workspace ]; then
	fail "without a view, nothing reaches the host's /workspace" "$(ls -R /workspace)"
else
	pass "without a view, nothing reaches the host's /workspace"
fi
# Where the kernel refuses the namespaces (unshare(2) failing with EPERM, injected here with
# LD_PRELOAD into the supervisor), the job still runs, rewritten, and says so once: an event
# on the pod and a line in its log.
if command -v cc >/dev/null; then
	cat >"$KFT_CASE_TMP/nounshare.c" <<'C'
#include <errno.h>
int unshare(int flags) { (void)flags; errno = EPERM; return -1; }
C
	cc -shared -fPIC -o "$KFT_CASE_TMP/nounshare.so" "$KFT_CASE_TMP/nounshare.c"
	view_checks=no run refused LD_PRELOAD="$KFT_CASE_TMP/nounshare.so"
	expect_eq "refused a view, the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
	expect_contains "its log says so" "$KFT_OUT" \
		"no private mount view here (mount namespace: create the namespaces: Operation not permitted)"
	expect_contains "an event says so" "$(kft events refused 2>&1)" "MountNamespaceUnavailable"
	expect_eq "the key=value argument was rewritten" "kv" \
		"$(cat "$KFTRAINER_STATE_DIR/jobs/default/refused/volumes/work/output/from-kv")"
	expect_exit "delete" 0 kft delete refused
else
	skip "a refused view" "no C compiler to build the unshare(2) fault"
fi
expect_exit "delete" 0 kft delete viewed rewritten
expect_no_processes "no process left"
