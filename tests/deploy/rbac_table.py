#!/usr/bin/env python3
"""Compares docs/controller.md's RBAC table with manifests/controller's ClusterRole and Role.

Each side becomes a set of (role, API group, resource, resource name, verb) grants; any grant
on one side only is printed and the exit status is 1 (2 when a side cannot be read). A table
row is "| role | groups | resources | verbs | why |": groups and resources are backticked
names (`""` is the core group), resources may end with "named `X`" for resourceNames, verbs
are comma-separated; role is "ClusterRole" or "Role (...)".

    tests/deploy/rbac_table.py [REPO_ROOT]
"""
import re
import sys

import yaml


def manifest_grants(path):
    grants = set()
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if not doc or doc.get("kind") not in ("ClusterRole", "Role"):
                continue
            role = doc["kind"]
            for rule in doc.get("rules") or []:
                names = rule.get("resourceNames") or [""]
                for g in rule.get("apiGroups") or []:
                    for r in rule.get("resources") or []:
                        for n in names:
                            for v in rule.get("verbs") or []:
                                grants.add((role, g, r, n, v))
    return grants


def doc_grants(path):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^## RBAC\n(.*?)^## ", text, re.S | re.M)
    if not m:
        raise ValueError(f"{path}: no '## RBAC' section")
    grants, rows = set(), 0
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[0].startswith(("ClusterRole", "Role")):
            continue
        rows += 1
        role = "ClusterRole" if cells[0].startswith("ClusterRole") else "Role"
        groups = ["" if g == '""' else g for g in re.findall(r"`([^`]*)`", cells[1])]
        res_cell, _, name_cell = cells[2].partition(" named ")
        resources = re.findall(r"`([^`]*)`", res_cell)
        names = re.findall(r"`([^`]*)`", name_cell) or [""]
        verbs = [v.strip() for v in cells[3].split(",") if v.strip()]
        if not groups or not resources or not verbs:
            raise ValueError(f"{path}: cannot read the row: {line}")
        for g in groups:
            for r in resources:
                for n in names:
                    for v in verbs:
                        grants.add((role, g, r, n, v))
    if not rows:
        raise ValueError(f"{path}: the RBAC section has no table rows")
    return grants


def show(g):
    role, group, res, name, verb = g
    return f"{role}: {group or 'core'} {res}{' named ' + name if name else ''}: {verb}"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    try:
        have = manifest_grants(f"{root}/manifests/controller/cluster_role.yaml")
        have |= manifest_grants(f"{root}/manifests/controller/role.yaml")
        have |= manifest_grants(f"{root}/manifests/controller/webhook_rbac.yaml")
        said = doc_grants(f"{root}/docs/controller.md")
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(e)
        return 2
    bad = [f"manifests only: {show(g)}" for g in sorted(have - said)]
    bad += [f"docs only: {show(g)}" for g in sorted(said - have)]
    print("\n".join(bad) if bad else f"{len(have)} grants agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
