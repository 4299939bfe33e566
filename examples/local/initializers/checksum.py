#!/usr/bin/env python3
"""The trainer of the initializers example: prove it sees what the initializers fetched.

The dataset and model initializers download into a volume the runtime mounts at /workspace
(/workspace/dataset and /workspace/model). This prints one line per file found under each
directory given on the command line, in sha256sum's format with the path relative to the
workspace ("<hex>  dataset/train.csv"), then a digest over all those lines, and fails when a
directory is missing or empty, so a trainer that saw nothing cannot pass.

Locally, /workspace is a directory under the job's state; the local backend rewrites
arguments that start with a mount path, and KFTRAINER_MOUNTS maps each mount path to its
directory, which this also consults for paths it is given in other forms.
"""
import hashlib
import json
import os
import sys


def host_path(path):
    """The path on this machine: through KFTRAINER_MOUNTS when a mount prefix matches."""
    mounts = json.loads(os.environ.get("KFTRAINER_MOUNTS", "{}") or "{}")
    for mount in sorted(mounts, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return mounts[mount] + path[len(mount.rstrip("/")):]
    return path


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(dirs):
    if not dirs:
        print("usage: checksum.py DIR...", file=sys.stderr)
        return 2
    lines = []
    for d in dirs:
        root = host_path(d)
        label = os.path.basename(d.rstrip("/"))
        found = []
        for base, subdirs, files in os.walk(root):
            subdirs.sort()
            for name in sorted(files):
                full = os.path.join(base, name)
                found.append((os.path.join(label, os.path.relpath(full, root)), full))
        if not found:
            print(f"{d}: no files (looked in {root})", file=sys.stderr)
            return 1
        for rel, full in found:
            lines.append(f"{file_sha256(full)}  {rel}")
    for line in lines:
        print(line)
    total = hashlib.sha256("".join(l + "\n" for l in lines).encode()).hexdigest()
    print(f"total {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
