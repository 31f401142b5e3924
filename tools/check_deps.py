#!/usr/bin/env python3
"""Check the workspace's dependencies against deny.toml: every crate's licence
expression must be satisfiable with the allowed licences, and no crate may appear in
two versions unless deny.toml's [bans] skip list names that version.

This is the licences-and-bans part of `cargo deny check licenses bans`, with no network
(cargo-deny fetches an advisory database). It reads `cargo metadata`, so the crates it
sees are exactly those Cargo.lock resolves, for every target platform.

Usage: python3 tools/check_deps.py [--manifest-path Cargo.toml]
Exit status 0 when the policy holds, 1 with one line per problem otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib


def tokens(expr):
    """SPDX expression tokens; the old `A/B` form means `A OR B`."""
    expr = expr.replace("/", " OR ")
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+", expr)


def satisfiable(expr, allowed):
    """Whether some choice in the SPDX expression uses only allowed licences.

    Grammar: or := and ('OR' and)*; and := atom ('AND' atom)*;
    atom := '(' or ')' | license ['WITH' exception]. A trailing '+' (or later) is
    accepted when the base licence is allowed.
    """
    toks = tokens(expr)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def atom():
        if peek() == "(":
            take()
            v = disjunction()
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in {expr!r}")
            return v
        lic = take()
        if peek() == "WITH":
            take()
            lic = f"{lic} WITH {take()}"
        return lic in allowed or lic.rstrip("+") in allowed

    def conjunction():
        v = atom()
        while peek() == "AND":
            take()
            v = atom() and v
        return v

    def disjunction():
        v = conjunction()
        while peek() == "OR":
            take()
            v = conjunction() or v
        return v

    result = disjunction()
    if pos != len(toks):
        raise ValueError(f"cannot parse licence expression {expr!r}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest-path", default="Cargo.toml")
    args = ap.parse_args()
    root = os.path.dirname(os.path.abspath(args.manifest_path))
    with open(os.path.join(root, "deny.toml"), "rb") as f:
        policy = tomllib.load(f)
    allowed = set(policy["licenses"]["allow"])
    skip = {(s["name"], s.get("version")) for s in policy["bans"].get("skip", [])}
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked",
             "--manifest-path", args.manifest_path],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    members = set(meta["workspace_members"])
    resolved = {n["id"] for n in meta["resolve"]["nodes"]}
    problems = []
    versions = {}
    for p in meta["packages"]:
        if p["id"] not in resolved or p["id"] in members:
            continue
        versions.setdefault(p["name"], set()).add(p["version"])
        lic = p.get("license")
        if not lic:
            problems.append(f"{p['name']} {p['version']}: no licence expression")
            continue
        try:
            ok = satisfiable(lic, allowed)
        except ValueError as e:
            problems.append(f"{p['name']} {p['version']}: {e}")
            continue
        if not ok:
            problems.append(f"{p['name']} {p['version']}: licence {lic!r} is not allowed")
    if policy["bans"].get("multiple-versions") == "deny":
        for name, vs in sorted(versions.items()):
            if len(vs) < 2:
                continue
            unexplained = [v for v in sorted(vs) if (name, v) not in skip and (name, None) not in skip]
            # one version may stay unlisted: the one the others duplicate
            if len(unexplained) > 1:
                problems.append(
                    f"{name}: versions {', '.join(sorted(vs))}; list all but one in deny.toml's [bans] skip with a reason, or remove the duplicate"
                )
        for name, version in sorted(skip, key=lambda s: (s[0], s[1] or "")):
            if version and version not in versions.get(name, set()):
                problems.append(f"deny.toml skips {name} {version}, which is no longer in the graph")
            elif len(versions.get(name, ())) < 2:
                problems.append(f"deny.toml skips {name}, which is no longer duplicated")
    for line in problems:
        print(line)
    count = sum(len(v) for v in versions.values())
    if problems:
        print(f"dependency policy: {len(problems)} problem(s) in {count} crates", file=sys.stderr)
        return 1
    print(f"dependency policy: {count} crates, licences allowed, no unexplained duplicates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
