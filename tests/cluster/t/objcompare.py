#!/usr/bin/env python3
"""Compare the objects a controller made on the cluster with the ones expected.

    objcompare.py [--skip-data KIND/NAME ...] EXPECTED.json ACTUAL.json

Both files hold a JSON object with "items" (a v1 List, as kubectl prints). Objects are matched by
kind and name. What the API server sets on its own, and what no controller chooses, is ignored:
metadata uid, resourceVersion, creationTimestamp, managedFields, generation, namespace (the
expectation is dry-run in a scratch namespace), the uid of owner references, and status. Secret
values are compared by key only, since the controllers generate keys (SSH, CURVE) at random.

--skip-data leaves out the data of one object altogether, for a documented deviation (Flux's
scripts are kftrainer's own, so they are not compared with upstream's).

Prints one line per difference, "KIND/NAME: PATH: expected X, got Y", and exits 1 when there is
any; prints nothing and exits 0 when everything matches.
"""
import json
import sys

IGNORED_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation",
                "namespace", "selfLink")


def normalise(obj):
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata", {})
    for key in IGNORED_META:
        meta.pop(key, None)
    for ref in meta.get("ownerReferences", []):
        ref.pop("uid", None)
    obj.pop("status", None)
    if obj.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if field in obj:
                obj[field] = {k: "<masked>" for k in obj[field]}
    return obj


def short(value):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def diff(path, want, got, out):
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            sub = f"{path}.{key}" if path else key
            if key not in got:
                out.append(f"{sub}: expected {short(want[key])}, missing")
            elif key not in want:
                out.append(f"{sub}: not expected, got {short(got[key])}")
            else:
                diff(sub, want[key], got[key], out)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{path}: expected {len(want)} items {short(want)}, got {len(got)} {short(got)}")
            return
        for i, (w, g) in enumerate(zip(want, got)):
            diff(f"{path}[{i}]", w, g, out)
    elif want != got:
        out.append(f"{path}: expected {short(want)}, got {short(got)}")


def index(doc, skip_data):
    out = {}
    for o in doc.get("items", []):
        key = (o.get("kind"), o.get("metadata", {}).get("name"))
        out[key] = normalise(o)
        if f"{key[0]}/{key[1]}" in skip_data:
            out[key].pop("data", None)
    return out


def main():
    args, skip_data = sys.argv[1:], set()
    while len(args) > 2 and args[0] == "--skip-data":
        skip_data.add(args[1])
        args = args[2:]
    if len(args) != 2:
        sys.exit("usage: objcompare.py [--skip-data KIND/NAME ...] EXPECTED.json ACTUAL.json")
    with open(args[0]) as f:
        expected = index(json.load(f), skip_data)
    with open(args[1]) as f:
        actual = index(json.load(f), skip_data)
    out = []
    for key in sorted(expected, key=str):
        label = f"{key[0]}/{key[1]}"
        if key not in actual:
            out.append(f"{label}: expected, but the controller did not make it")
            continue
        lines = []
        diff("", expected[key], actual[key], lines)
        out.extend(f"{label}: {line}" for line in lines)
    for key in sorted(set(actual) - set(expected), key=str):
        out.append(f"{key[0]}/{key[1]}: made by the controller, not expected")
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
