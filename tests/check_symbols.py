#!/usr/bin/env python3
"""The library's exports, the header, the version script and the frozen released nodes
agree:
- every FRL_API function of the header is exported at the default version ("@@") of the
  node the map lists it in, and nothing else is exported at a default version;
- the only non-default ("@") exports are the compat initialisers: static inline in the
  header since 0.3, kept at their 0.1/0.2 nodes for binaries built against 0.2;
- the newest node is FASTRL_<FRL_ABI_VERSION_MAJOR>.<FRL_ABI_VERSION_MINOR>, so a symbol
  added since the last release can only go there;
- every node of the released map is in the version script unchanged.

usage: check_symbols.py HEADER LIBRARY.so VERSION_SCRIPT RELEASED_MAP"""
import re
import subprocess
import sys


def header_api(text):
    return set(re.findall(r"FRL_API\s+[^;(]*?\b(frl_\w+)\s*\(", text))


def header_inline_inits(text):
    return set(re.findall(r"static inline void (frl_\w+_init)\s*\(", text))


def header_abi(text):
    major = re.search(r"#define FRL_ABI_VERSION_MAJOR (\d+)", text).group(1)
    minor = re.search(r"#define FRL_ABI_VERSION_MINOR (\d+)", text).group(1)
    return f"FASTRL_{major}.{minor}"


def map_nodes(path):
    """[(node, set of names)] in file order."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    nodes = []
    for name, body in re.findall(r"(FASTRL_[\d.]+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].replace("global:", "")
        nodes.append((name, {n.strip() for n in glob.split(";") if n.strip()}))
    return nodes


def exported(lib):
    """{name: (version, is_default)} of the library's defined dynamic symbols."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # "A": the version node itself
            continue
        sym = parts[2]
        if "@@" in sym:
            name, version = sym.split("@@")
            syms[name] = (version, True)
        elif "@" in sym:
            name, version = sym.split("@")
            syms[name] = (version, False)
        else:
            syms[sym] = ("", True)
    return syms


def check(header, lib, vmap, released):
    text = open(header).read()
    api, inits, newest = header_api(text), header_inline_inits(text), header_abi(text)
    nodes = map_nodes(vmap)
    node_of = {n: node for node, names in nodes for n in names}
    syms = exported(lib)
    problems = []
    if not api:
        problems.append("no FRL_API declarations found in the header")
    if not nodes or nodes[-1][0] != newest:
        problems.append(f"the newest node of {vmap} is {nodes[-1][0] if nodes else None}, "
                        f"but the header's ABI version names {newest}")
    for name in sorted(api - set(syms)):
        problems.append(f"declared FRL_API but not exported: {name}")
    for name, (version, default) in sorted(syms.items()):
        if default and name not in api:
            problems.append(f"exported but not declared FRL_API in the header: {name}")
        elif not default and name not in inits:
            problems.append(f"non-default version {name}@{version} is not a compat "
                            "initialiser (static inline in the header)")
        if name in node_of and version != node_of[name]:
            problems.append(f"{name} is exported at '{version}' but listed in "
                            f"{node_of[name]}")
    compat = {n for n, (_, default) in syms.items() if not default}
    for name in sorted((api | compat) ^ set(node_of)):
        problems.append(f"header (and compat exports) and {vmap} disagree on: {name}")
    mine = dict(nodes)
    for node, names in map_nodes(released):
        if node == newest:
            problems.append(f"{node} is in {released}, yet the header says it is the "
                            "unreleased newest node: bump FRL_ABI_VERSION_MINOR")
        elif mine.get(node) != names:
            changed = sorted(names ^ mine.get(node, set()))
            problems.append(f"released node {node} changed in {vmap}: {changed}")
    print(f"{len(api)} API functions in the header, {len(compat)} compat initialisers, "
          f"{len(syms)} exported, nodes {[n for n, _ in nodes]}, newest {newest}")
    return problems


def main():
    problems = check(*sys.argv[1:5])
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
