#!/usr/bin/env python3
"""The include and call graph of the library (lib/), between folders and between files.

A module is a header and its implementation (rl/policy = policy.h + policy.c). An
arrow A -> B means a file of A includes a header of B or calls a function that B
defines; folders inherit the arrows of their modules. The layers below say which way arrows may point: a folder may depend only on
folders of a lower layer or its own. --check exits 1 on a cycle between modules or
folders, or on an arrow up to a higher layer, so a new one fails the suite.

usage: tools/depgraph.py [--check] [--files] [--dot] [LIB_DIR]"""
import os
import re
import sys

# Lower numbers are lower layers. lib/cuda is the plugin: it is loaded at run time,
# never linked into the core, and sees only the math and ABI headers it includes.
# rl holds the policy, the ring and the replay; algorithms (learners) and samplers sit
# on them side by side and never on each other; the trainer drives both.
LAYERS = {"core": 0, "io": 1, "nn": 1, "env": 1, "rl": 2, "algo": 3, "sampler": 3,
          "trainer": 4, "cuda": 5}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A definition at column 0: return type, name, parameters, then "{" before any ";".
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*?\b(frl_\w+)\s*\([^;{]*\)\s*\{",
                        re.M)
CALL = re.compile(r"\b(frl_\w+)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def sources(lib):
    for folder, _, names in os.walk(lib):
        for name in sorted(names):
            if name.endswith((".c", ".h", ".cu")):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, lib), COMMENT.sub("", open(path).read())


def folder_of(path):
    return path.split(os.sep)[0] if os.sep in path else "."


def module(path):
    """A header and its implementation are one module: "rl/policy" for policy.[ch]."""
    return os.path.splitext(path)[0]


def file_graph(lib):
    """{module: {module it depends on: reasons}}."""
    texts = dict(sources(lib))
    defined = {}
    for path, text in texts.items():
        if path.endswith((".c", ".cu")):
            for name in DEFINITION.findall(text):
                defined.setdefault(name, path)
    edges = {}
    for path, text in texts.items():
        me = module(path)
        deps = edges.setdefault(me, {})
        for inc in INCLUDE.findall(text):
            target = inc if inc in texts else os.path.normpath(
                os.path.join(os.path.dirname(path), inc))
            if target in texts and module(target) != me:
                deps.setdefault(module(target), set()).add("#include")
        for name in set(CALL.findall(text)):
            target = defined.get(name)
            if target and module(target) != me:
                deps.setdefault(module(target), set()).add(name)
    return edges


def folder_graph(edges):
    folders = {}
    for src, deps in edges.items():
        for dst, why in deps.items():
            a, b = folder_of(src), folder_of(dst)
            if a != b:
                folders.setdefault(a, {}).setdefault(b, set()).update(
                    {f"{src} -> {dst}"})
    return folders


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def upward(folders):
    bad = []
    for a, deps in sorted(folders.items()):
        for b, why in sorted(deps.items()):
            if LAYERS.get(a, 99) < LAYERS.get(b, 99):
                bad.append((a, b, sorted(why)))
    return bad


def print_graph(edges, folders, show_files):
    print("folders (layer: folder -> folders it depends on):")
    for a in sorted(folders, key=lambda f: (LAYERS.get(f, 99), f)):
        print(f"  {LAYERS.get(a, '?')}: {a} -> {', '.join(sorted(folders[a]))}")
    if show_files:
        print("files:")
        for src in sorted(edges):
            if edges[src]:
                print(f"  {src} -> {', '.join(sorted(edges[src]))}")


def print_dot(folders):
    print("digraph lib {")
    for a, deps in sorted(folders.items()):
        for b in sorted(deps):
            print(f'  "{a}" -> "{b}";')
    print("}")


def main(argv):
    flags = {a for a in argv if a.startswith("--")}
    rest = [a for a in argv if not a.startswith("--")]
    lib = rest[0] if rest else os.path.join(os.path.dirname(__file__), "..", "lib")
    edges = file_graph(lib)
    folders = folder_graph(edges)
    if "--dot" in flags:
        print_dot(folders)
        return 0
    print_graph(edges, folders, "--files" in flags)
    problems = [f"cycle between modules: {' <-> '.join(c)}" for c in cycles(edges)]
    problems += [f"cycle between folders: {' <-> '.join(c)}" for c in cycles(folders)]
    for a, b, why in upward(folders):
        problems.append(f"{a} (layer {LAYERS.get(a)}) depends on the higher {b} "
                        f"(layer {LAYERS.get(b)}): {'; '.join(why[:4])}")
    for p in problems:
        print(("FAIL: " if "--check" in flags else "note: ") + p)
    return 1 if problems and "--check" in flags else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
