#!/usr/bin/env python3
"""The library exports exactly the header's FRL_API functions, all in a version node
of lib/fastrl.map, and the map's global list equals the header's list.

usage: check_symbols.py HEADER LIBRARY.so VERSION_SCRIPT"""
import re
import subprocess
import sys


def header_api(path):
    text = open(path).read()
    return set(re.findall(r"FRL_API\s+[^;(]*?\b(frl_\w+)\s*\(", text))


def map_globals(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    names, nodes = set(), re.findall(r"(FASTRL_[\d.]+)\s*\{(.*?)\}", text, flags=re.S)
    for _, body in nodes:
        glob = body.split("local:")[0].replace("global:", "")
        names |= {n.strip() for n in glob.split(";") if n.strip()}
    return names, [n for n, _ in nodes]


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # "A": the version node itself
            continue
        name, _, version = parts[2].partition("@@")
        syms[name] = version
    return syms


def main():
    header, lib, vmap = sys.argv[1:4]
    api = header_api(header)
    mapped, nodes = map_globals(vmap)
    syms = exported(lib)
    problems = []
    if not api:
        problems.append("no FRL_API declarations found in the header")
    for name in sorted(set(syms) - api):
        problems.append(f"exported but not declared FRL_API in the header: {name}")
    for name in sorted(api - set(syms)):
        problems.append(f"declared FRL_API but not exported: {name}")
    for name in sorted(api ^ mapped):
        problems.append(f"header and {vmap} disagree on: {name}")
    for name, version in sorted(syms.items()):
        if version not in nodes:
            problems.append(f"{name} has version '{version}', not one of {nodes}")
    print(f"{len(api)} API functions in the header, {len(syms)} exported, nodes {nodes}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
