#!/usr/bin/env bash
# `kftrainer validate` (and so `train`) refuses core/v1 content exactly as the API server does,
# word for word and at the same field path. The cases are the validate tier's files that pin
# Kubernetes' own checks (tests/validate/invalid/109-114); each "# expect:" line is compared with
# what this real server (v1.36.2) answers:
#   server: <case>        a Secret or ConfigMap: kubectl create --dry-run=server refuses it with
#                         exactly the expected lines (a decoding error: its message ends the line)
#   crd accepts: <case>   a TrainJob: the CRD does not check env names, so the server accepts it;
#                         this is why validate/train check them up front
#   pods refuse: <case>   the same env lists in a Job's containers are refused by the server with
#                         exactly the expected messages (paths mapped back to the TrainJob's)
#   agree: <case>         kftrainer validate reports exactly the expected lines
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kft=${KFTRAINER:-$KFT_REPO_ROOT/build/bin/kftrainer}
crd_dir=${KFT_CRD_DIR:-$KFT_REPO_ROOT/manifests/crds}
cases=$(ls "$KFT_REPO_ROOT"/tests/validate/invalid/1{09,10,11,12,13,14}-*.yaml 2>/dev/null)
if [ -z "$cases" ]; then
	fail "core checks" "no cases under tests/validate/invalid/109-114"
	exit 0
fi
ns=$(new_namespace core) || {
	fail "core checks" "cannot create a namespace"
	exit 0
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT

# The server's answer as one "FIELD: message" line per problem (sorted); a decoding error
# (BadRequest) as "DECODE: message".
server_lines() {
	python3 -c '
import re, sys
out = sys.stdin.read()
lines = []
for m in re.finditer(r"Error from server \(BadRequest\): error when creating \"[^\"]*\": (.*)", out):
    lines.append("DECODE: " + m.group(1))
for block in re.split(r"(?m)^(?=Error from server|The )", out):
    m = re.search(r" is invalid: ?(.*)", block, re.S)
    if not m or "BadRequest" in block:
        continue
    body = m.group(1).strip()
    if body.startswith("["):
        lines += [x.strip() for x in re.split(r", (?=\S+: )", body.strip("[]"))]
    elif "\n* " in "\n" + body:
        lines += [x[2:] for x in body.splitlines() if x.startswith("* ")]
    else:
        lines.append(body)
print("\n".join(sorted(lines)))
'
}

for f in $cases; do
	c=$(basename "$f" .yaml)
	sed "s/namespace: team-a/namespace: $ns/" "$f" >"$tmp/in.yaml"
	sed -n 's/^# expect: *//p' "$f" | sort >"$tmp/want"
	if grep -q '^kind: TrainJob' "$f"; then
		if ! compgen -G "$crd_dir/*.yaml" >/dev/null; then
			skip "crd accepts: $c" "no CRDs installed"
		elif out=$(kubectl create --dry-run=server -f "$tmp/in.yaml" 2>&1); then
			pass "crd accepts: $c"
		else
			fail "crd accepts: $c" "the server refused the TrainJob itself" "$out"
		fi
		# One container per env list of the TrainJob, in a Job the server validates as pods.
		python3 - "$tmp/in.yaml" "$tmp/job.json" "$tmp/paths" <<'PY'
import json, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
found = []
def walk(v, path):
    if isinstance(v, dict):
        for k, c in v.items():
            p = f"{path}.{k}"
            if k == "env" and isinstance(c, list):
                found.append((p, c))
            else:
                walk(c, p)
    elif isinstance(v, list):
        for i, c in enumerate(v):
            walk(c, f"{path}[{i}]")
walk(job["spec"], "spec")
containers = [{"name": f"c{i}", "image": "busybox", "env": env} for i, (_, env) in enumerate(found)]
json.dump({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "env-check", "namespace": job["metadata"]["namespace"]},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": containers}}}},
          open(sys.argv[2], "w"))
open(sys.argv[3], "w").write("\n".join(p for p, _ in found) + "\n")
PY
		out=$(kubectl create --dry-run=server -f "$tmp/job.json" 2>&1)
		server_lines <<<"$out" >"$tmp/server"
		i=0
		while IFS= read -r p; do
			sed -i "s|^spec\.template\.spec\.containers\[$i\]\.env|$p|" "$tmp/server"
			i=$((i + 1))
		done <"$tmp/paths"
		sort -o "$tmp/server" "$tmp/server"
		if diff -u "$tmp/want" "$tmp/server" >"$tmp/diff"; then
			pass "pods refuse: $c"
		else
			fail "pods refuse: $c" "the server's words differ (- expected, + server):" "$(cat "$tmp/diff")"
		fi
	else
		out=$(kubectl create --dry-run=server -f "$tmp/in.yaml" 2>&1)
		server_lines <<<"$out" >"$tmp/server"
		if grep -q '^DECODE: ' "$tmp/server"; then
			# The server names no path for a decoding error; the expected line must end with
			# its message, and be the only one.
			msg=$(sed -n 's/^DECODE: //p' "$tmp/server")
			if [ "$(wc -l <"$tmp/want")" = 1 ] && [ "$(wc -l <"$tmp/server")" = 1 ] &&
				[ "${msg}" = "$(sed -E 's/^.*: ([A-Za-z]+ in version "v1" cannot be handled)/\1/' "$tmp/want")" ]; then
				pass "server: $c"
			else
				fail "server: $c" "the server's words differ" "server: $out" "expected: $(cat "$tmp/want")"
			fi
		elif diff -u "$tmp/want" "$tmp/server" >"$tmp/diff"; then
			pass "server: $c"
		else
			fail "server: $c" "the server's words differ (- expected, + server):" "$(cat "$tmp/diff")"
		fi
	fi
	if [ ! -x "$kft" ]; then
		skip "agree: $c" "${kft#"$KFT_REPO_ROOT"/} is not built"
		continue
	fi
	"$kft" validate -q "$tmp/in.yaml" >"$tmp/kout" 2>&1
	sed -E 's/^[^:]+: [^ ]+: //' "$tmp/kout" | sort >"$tmp/mine"
	if diff -u "$tmp/want" "$tmp/mine" >"$tmp/diff"; then
		pass "agree: $c"
	else
		fail "agree: $c" "kftrainer validate differs (- expected, + kftrainer):" "$(cat "$tmp/diff")"
	fi
done
