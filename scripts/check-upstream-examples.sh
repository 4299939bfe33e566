#!/usr/bin/env bash
# check-upstream-examples.sh [MIRROR] [TAG] - validate every trainer manifest upstream ships.
#
# Finds every TrainJob, TrainingRuntime and ClusterTrainingRuntime in upstream Kubeflow Trainer
# at TAG (default v2.3.0) in the bare git mirror MIRROR (default
# /work/.mirror/kubeflow+trainer/repo), runs `kftrainer validate` on each and prints one line
# per source, then a summary. Sources looked at:
#   - YAML and JSON files anywhere in the tree (examples/, manifests/, test data, chart files)
#     whose documents declare one of the three kinds; Helm templates (text with "{{") are
#     passed over, since they are not YAML until rendered;
#   - ```yaml / ```yml / ```json blocks in Markdown (docs/, examples/, proposals/, READMEs);
#   - Jupyter notebooks (*.ipynb): fenced blocks in Markdown cells, and triple-quoted string
#     literals in code cells that hold such a manifest.
# Everything is extracted into a temporary directory (removed on exit), never into the repo.
#
# Snippets upstream never meant to be complete (a "..." elision, a <placeholder>, a Python
# format field, an API of an older design in a proposal) fail for that reason, and a few
# upstream snippets are plainly wrong (listed in KNOWN_INVALID below, with the reason); the
# summary lists both apart from the rest, so a new failure of a real manifest stands out.
#
# Environment: KFTRAINER (default build/bin/kftrainer under the repository root).
# Exit status: 0 when every manifest is valid or the mirror is absent ("skipped: no upstream
# mirror"), 1 when some manifest outside the incomplete snippets fails, 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${1:-/work/.mirror/kubeflow+trainer/repo}
TAG=${2:-v2.3.0}
KFTRAINER=${KFTRAINER:-$ROOT/build/bin/kftrainer}

case "${1:-}" in
-h | --help)
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
if [ $# -gt 2 ]; then
	echo "usage: $0 [MIRROR] [TAG]" >&2
	exit 2
fi
if [ ! -d "$MIRROR" ] || ! git -C "$MIRROR" rev-parse -q --verify "$TAG^{commit}" >/dev/null 2>&1; then
	echo "skipped: no upstream mirror ($MIRROR at $TAG)"
	exit 0
fi
if [ ! -x "$KFTRAINER" ]; then
	echo "$0: $KFTRAINER is not built (cmake --build build)" >&2
	exit 2
fi
command -v python3 >/dev/null || {
	echo "$0: python3 is needed to read Markdown and notebooks" >&2
	exit 2
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kft-upstream-examples.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Extraction and reporting are text processing over JSON and Markdown; Python's standard
# library does it in a few lines where shell would need many fragile ones.
python3 - "$MIRROR" "$TAG" "$WORK" "$KFTRAINER" <<'PY'
import json, os, re, subprocess, sys

mirror, tag, work, kftrainer = sys.argv[1:5]
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
KIND_LINE = re.compile(r"^\s*kind:\s*[\"']?(%s)[\"']?\s*$" % "|".join(KINDS), re.M)
KIND_JSON = re.compile(r"\"kind\"\s*:\s*\"(%s)\"" % "|".join(KINDS))
FENCE = re.compile(r"^([ \t]*)(```+|~~~+)[ \t]*(yaml|yml|json)\b[^\n]*\n(.*?)^[ \t]*\2[ \t]*$",
                   re.M | re.S | re.I)
TRIPLE = re.compile(r"(?:[rRbBuUfF]{0,2})(\"\"\"|''')(.*?)\1", re.S)
# Upstream snippets that are wrong as written, checked by hand against the v2.3.0 API (and
# refused the same way by a real API server with the upstream CRDs), keyed by tag and place.
KNOWN_INVALID = {
    ("v2.3.0", "docs/operator-guides/job-scheduling/kai.md:32"):
        "upstream doc error: numNodes is put under mlPolicy.torch, and schedulerName and "
        "containers directly under the JobSet spec instead of a replicated job's pod template",
}
# Signs that a snippet was written to be read, not applied.
INCOMPLETE = [
    (re.compile(r"^\s*(#\s*)?\.\.\.\s*$|:\s*\.\.\.\s*$|^\s*-\s*\.\.\.\s*$", re.M), 'contains "..." elisions'),
    (re.compile(r"<[A-Za-z][^<>\n]*>"), "contains <placeholders>"),
    (re.compile(r"\{[A-Za-z_][A-Za-z0-9_.\[\]'\"]*\}"), "contains {format} fields filled in by code"),
    (re.compile(r"\$\{?[A-Z][A-Z0-9_]*\}?"), "contains $VARIABLES substituted by a shell"),
]


def git(*args):
    return subprocess.run(["git", "-C", mirror] + list(args), check=True,
                          capture_output=True).stdout


def declares_kind(text):
    return bool(KIND_LINE.search(text) or KIND_JSON.search(text))


def snippets(path, data):
    """(label, line, text) for each manifest-looking piece of one upstream file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    low = path.lower()
    if low.endswith((".yaml", ".yml", ".json")):
        if "{{" in text:
            return
        if declares_kind(text):
            yield path, 1, text
    elif low.endswith((".md", ".markdown")):
        for m in FENCE.finditer(text):
            yield from fenced(path, text, m)
    elif low.endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells", [])
        except ValueError:
            return
        for n, cell in enumerate(cells):
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            if cell.get("cell_type") == "markdown":
                for m in FENCE.finditer(src):
                    yield from fenced("%s cell %d" % (path, n), src, m)
            elif cell.get("cell_type") == "code":
                for k, m in enumerate(TRIPLE.finditer(src)):
                    body = dedent(m.group(2))
                    if declares_kind(body):
                        yield ("%s cell %d string %d" % (path, n, k + 1),
                               src.count("\n", 0, m.start()) + 1, body)


def fenced(label, text, m):
    body = m.group(4)
    indent = m.group(1)
    if indent:
        body = "\n".join(l[len(indent):] if l.startswith(indent) else l
                         for l in body.split("\n"))
    if declares_kind(body):
        yield label, text.count("\n", 0, m.start()) + 1, body


def dedent(s):
    lines = s.split("\n")
    widths = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(widths) if widths else 0
    return "\n".join(l[cut:] for l in lines)


def why_incomplete(where, label, text):
    known = KNOWN_INVALID.get((tag, where))
    if known:
        return known
    if label.startswith("proposals/"):
        return "design proposal (API under discussion, not the released one)"
    for rx, reason in INCOMPLETE:
        if rx.search(text):
            return reason
    return None


paths = git("ls-tree", "-r", "--name-only", tag).decode().splitlines()
wanted = [p for p in paths if p.lower().endswith((".yaml", ".yml", ".json", ".md", ".markdown", ".ipynb"))]
found = []
for path in wanted:
    data = git("show", "%s:%s" % (tag, path))
    for label, line, text in snippets(path, data):
        ext = ".json" if text.lstrip().startswith(("{", "[")) else ".yaml"
        name = os.path.join(work, "%04d%s" % (len(found), ext))
        with open(name, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        found.append((label, line, name, text))

# Counts per part of the tree: what upstream ships (docs, examples, manifests ...) and its
# design proposals, whose snippets may predate the released API.
count = {part: dict(sources=0, tried=0, valid=0, unreadable=0) for part in ("shipped", "proposals")}
bad, partial = [], []
for label, line, name, text in found:
    where = label if line == 1 else "%s:%d" % (label, line)
    c = count["proposals" if label.startswith("proposals/") else "shipped"]
    p = subprocess.run([kftrainer, "validate", "-q", "-o", "json", name],
                       capture_output=True, text=True)
    try:
        rep = json.loads(p.stdout) if p.stdout.strip() else {}
    except ValueError:
        rep = {}
    if p.returncode == 2 or not rep:
        msg = p.stderr.strip().replace(name, "<snippet>") or "unreadable"
        lines = ["input error: " + l for l in msg.splitlines()]
        n_obj = n_bad = 0
        c["unreadable"] += 1
    else:
        n_obj = rep.get("objects", 0) - rep.get("skipped", 0)
        n_bad = rep.get("invalid", 0)
        lines = ["%s: %s" % (pr.get("object"), pr.get("message"))
                 for pr in rep.get("problems", []) if pr.get("severity") == "error"]
    if p.returncode == 0 and n_obj == 0:
        continue  # e.g. a CRD, which names the kinds without being one
    c["sources"] += 1
    c["tried"] += n_obj
    c["valid"] += n_obj - n_bad
    if p.returncode == 0:
        print("ok    %s (%d object%s)" % (where, n_obj, "" if n_obj == 1 else "s"))
        continue
    reason = why_incomplete(where, label, text)
    print("%s %s" % ("part " if reason else "FAIL ", where))
    for l in lines:
        print("        " + l)
    (partial if reason else bad).append((where, reason, max(n_bad, 1)))

print()
for part, c in count.items():
    print("upstream %s %s: %d sources, %d objects tried, %d valid, %d invalid, %d unreadable sources"
          % (tag, part, c["sources"], c["tried"], c["valid"], c["tried"] - c["valid"],
             c["unreadable"]))
if partial:
    print("incomplete or known-wrong snippets (expected to fail):")
    for where, reason, _ in partial:
        print("  %s: %s" % (where, reason))
if bad:
    print("failures to look at:")
    for where, _, n in bad:
        print("  %s" % where)
sys.exit(1 if bad else 0)
PY
