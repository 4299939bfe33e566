#!/bin/sh
# Compare our built-in ClusterTrainingRuntimes with upstream Kubeflow Trainer.
#
# Usage: tests/runtimes/compare-upstream.sh [UPSTREAM_GIT_DIR] [TAG]
#   UPSTREAM_GIT_DIR  a (bare) clone of kubeflow/trainer,
#                     default /work/.mirror/kubeflow+trainer/repo
#   TAG               default v2.3.0
#
# A developer tool, run by hand: CI has no upstream clone, so a missing clone
# is a skip, not a failure. Exit 0 when everything matches, 1 on any
# difference, 2 when the comparison itself cannot run.
#
# What is compared, after turning every document into canonical JSON (sorted
# keys, so only comments, key order and YAML spelling are ignored):
#   1. each runtime of upstream's default set (the files reachable from
#      manifests/base/runtimes/kustomization.yaml) against ours, by
#      metadata.name, and the two sets of names;
#   2. the labels and images transformers of our kustomization against
#      upstream's manifests/overlays/runtimes, which is what gets installed;
#   3. when kubectl is available, the full `kubectl kustomize` output of
#      both, as an end-to-end check of the two points above.
set -eu

MIRROR=${1:-/work/.mirror/kubeflow+trainer/repo}
TAG=${2:-v2.3.0}
HERE=$(cd "$(dirname "$0")" && pwd)
OURS=$(cd "$HERE/../../manifests/runtimes" && pwd)

if [ ! -e "$MIRROR" ]; then
	echo "skipped: no upstream mirror at $MIRROR"
	exit 0
fi
if ! git -C "$MIRROR" rev-parse --verify --quiet "$TAG^{commit}" >/dev/null; then
	echo "error: $MIRROR has no tag $TAG" >&2
	exit 2
fi

if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "PyYAML missing, installing it with pip" >&2
	python3 -m pip install --quiet pyyaml >&2 || {
		echo "error: cannot install PyYAML" >&2
		exit 2
	}
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
# A plain tree of the two upstream directories, for Python and kubectl alike.
git -C "$MIRROR" archive "$TAG" manifests/base/runtimes manifests/overlays/runtimes |
	tar -x -C "$WORK"
UP="$WORK/manifests"

status=0
python3 - "$OURS" "$UP" <<'PY' || status=$?
import difflib
import json
import os
import sys

import yaml

ours_dir, up_dir = sys.argv[1], sys.argv[2]


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def canon(obj):
    return json.dumps(obj, sort_keys=True, indent=2).splitlines()


def kustomization(d):
    return load_all(os.path.join(d, "kustomization.yaml"))[0]


def runtimes(d, seen=None):
    """Documents reachable from the kustomization in d, keyed by name."""
    seen = {} if seen is None else seen
    for res in kustomization(d).get("resources", []):
        path = os.path.normpath(os.path.join(d, res))
        if os.path.isdir(path):
            runtimes(path, seen)
            continue
        for doc in load_all(path):
            name = doc["metadata"]["name"]
            if name in seen:
                sys.exit("error: %s defined twice (%s)" % (name, path))
            seen[name] = doc
    return seen


def diff(label, a, b):
    lines = list(difflib.unified_diff(canon(a), canon(b), "upstream/" + label,
                                      "ours/" + label, lineterm=""))
    print("\n".join(lines) if lines else "same: " + label)
    return bool(lines)


base = os.path.join(up_dir, "base", "runtimes")
up, ours = runtimes(base), runtimes(ours_dir)
bad = False
for name in sorted(set(up) | set(ours)):
    if name not in ours:
        print("missing in ours: " + name)
        bad = True
    elif name not in up:
        print("not in upstream's default set: " + name)
        bad = True
    else:
        bad |= diff(name, up[name], ours[name])

# Runtimes upstream keeps under base/runtimes but does not install by default.
extra = set()
for root, _, files in os.walk(base):
    for f in files:
        if f.endswith(".yaml") and f != "kustomization.yaml":
            for doc in load_all(os.path.join(root, f)):
                extra.add(doc["metadata"]["name"])
for name in sorted(extra - set(up)):
    print("note: upstream %s is outside the default set, not compared" % name)


def transformers(k):
    images = sorted(k.get("images", []), key=lambda i: i["name"])
    return {"labels": k.get("labels", []), "images": images}


overlay = kustomization(os.path.join(up_dir, "overlays", "runtimes"))
bad |= diff("kustomization (labels, images)", transformers(overlay),
            transformers(kustomization(ours_dir)))
sys.exit(1 if bad else 0)
PY

if command -v kubectl >/dev/null 2>&1; then
	kubectl kustomize "$UP/overlays/runtimes" >"$WORK/up.yaml"
	kubectl kustomize "$OURS" >"$WORK/ours.yaml"
	python3 - "$WORK/up.yaml" "$WORK/ours.yaml" <<'PY' || status=1
import difflib
import json
import sys

import yaml


def named(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    return {d["kind"] + "/" + d["metadata"]["name"]: d for d in docs}


def canon(docs):
    return json.dumps(docs, sort_keys=True, indent=2).splitlines()


up, ours = named(sys.argv[1]), named(sys.argv[2])
lines = list(difflib.unified_diff(canon(up), canon(ours), "upstream/kustomize-build",
                                  "ours/kustomize-build", lineterm=""))
print("\n".join(lines) if lines else "same: kustomize build (%d objects)" % len(ours))
sys.exit(1 if lines else 0)
PY
else
	echo "note: kubectl not found, kustomize build not compared"
fi

if [ "$status" -eq 0 ]; then
	echo "result: no differences from upstream $TAG"
else
	echo "result: DIFFERENCES from upstream $TAG" >&2
fi
exit "$status"
