#!/usr/bin/env python3
"""The include and call graph of the library (lib/), between folders and between files.

A module is a header and its implementation (rl/policy = policy.h + policy.c), plus the
few private headers named in SAME_MODULE. An arrow A -> B means a file of A includes a
header of B or names a function that B defines (a call, or a declaration in A's header);
folders inherit the arrows of their modules. LAYERS says which way arrows may point: a
folder may depend only on folders of a lower layer.

--check exits 1 on a cycle between modules that the allow-list does not name, on a
cycle between folders, on an arrow from a folder to one of the same or a higher layer,
and on an allow-list entry that no longer matches a cycle (so the list stays true). The
suite runs it (tests/meson.build, test depgraph), so a new cycle or arrow up fails there.

--doc FILE makes --check fail too when FILE does not show the folder graph exactly as
printed (doc/architecture.md, so the document stays true).

usage: tools/depgraph.py [--check] [--files] [--dot] [--allow FILE] [--doc FILE] [LIB_DIR]"""
import os
import re
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Lower numbers are lower layers; dependencies point down only, so no two folders of one
# layer depend on each other. core: allocation, errors, config, the runtime and its
# device (the plugin's loader); io: files; nn: networks and the math shared with the
# device; env: environments (their state goes through io); rl: the policy, the ring
# and the replay; algo (learners), export (policies written for use without the library)
# and sampler sit on rl side by side and never on each other; the trainer drives algo
# and sampler. lib/cuda is the plugin: loaded at run time, never
# linked into the library, so it sits on top and sees only the core's ABI header and
# the nn headers it includes. lib/mujoco is the MuJoCo plugin, the same kind of thing:
# it sees the core's rng header and env/mujoco_api.h, its interface with the vec env.
# lib/mpi is the MPI plugin: it sees the core's dist_api.h alone.
LAYERS = {"core": 0, "io": 1, "nn": 1, "env": 2, "rl": 3, "evo": 3, "algo": 4, "export": 4,
          "sampler": 4, "trainer": 5, "cuda": 6, "mujoco": 6, "mpi": 6}

# Files that belong to another file's module, with why.
SAME_MODULE = {
    # The kernels' private header: the tables (kernels_scalar.c, kernels_avx2.c, ...)
    # that the dispatcher of kernels.h chooses from. It exists so that the rest of the
    # library sees the dispatcher only; it is the kernels module's inside, not a module
    # under or over it.
    "nn/kernels_impl": "nn/kernels",
    # The settings' X-macro list and the table made from it: the config module's data,
    # split out so that one list makes the table, the key enum and the choice enums.
    "core/config_keys": "core/config",
    # The recurrent policies' passes: the policy's own (its struct, its acting and
    # workspace calls dispatch there), split out as a file by what it holds.
    "rl/policy_rnn": "rl/policy",
    # The ask/tell optimisers: evo.h is the private header of the one frl_evo handle,
    # and ES, GA and their shared noise and ranks are its implementation, split by what
    # each file holds (the handle dispatches to them; they read its struct).
    "evo/es": "evo/evo",
    "evo/ga": "evo/evo",
    "evo/noise": "evo/evo",
    # The evaluation engine is the population's (it acts through frl_population_act and
    # reads the population's struct), a file of its own by what it holds.
    "rl/population_eval": "rl/population",
    # The CUDA plugin's model: model.h holds its struct and the calls of its forward's
    # paths and of a recurrent model's step; model_forward.c and model_step.c implement
    # them (there is no model.c to pair them by name).
    "cuda/model_forward": "cuda/model",
    "cuda/model_step": "cuda/model",
}

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
                with open(path) as f:
                    yield os.path.relpath(path, lib), COMMENT.sub("", f.read())


def folder_of(module_name):
    return module_name.split("/")[0] if "/" in module_name else "."


def module(path):
    """"rl/policy" for rl/policy.[ch]; SAME_MODULE's owner for its private files."""
    name = os.path.splitext(path)[0].replace(os.sep, "/")
    return SAME_MODULE.get(name, name)


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
        for dst in deps:
            a, b = folder_of(src), folder_of(dst)
            if a != b:
                folders.setdefault(a, {}).setdefault(b, set()).add(f"{src} -> {dst}")
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


def not_down(folders):
    """Arrows from a folder to one of the same or a higher layer (or of no layer)."""
    bad = []
    for a, deps in sorted(folders.items()):
        for b, why in sorted(deps.items()):
            if LAYERS.get(a, -1) <= LAYERS.get(b, 99):
                bad.append((a, b, sorted(why)))
    return bad


def read_allow(path):
    """[(set of modules, reason, line number)] from lines "cycle A B ...: reason"."""
    allowed = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"cycle\s+([^:]+):\s*(\S.*)", line)
            if not m or len(m.group(1).split()) < 2:
                raise SystemExit(f"{path}:{n}: expected 'cycle MODULE MODULE...: reason'")
            allowed.append((set(m.group(1).split()), m.group(2), n))
    return allowed


def cycle_problems(found, allowed, allow_path):
    """Failures for cycles outside the allow-list and for entries that match none; notes
    for allowed cycles that shrank (the entry may be narrowed)."""
    problems, notes, used = [], [], set()
    for c in found:
        entry = next((e for e in allowed if set(c) <= e[0]), None)
        if entry is None:
            problems.append(f"cycle between modules: {' <-> '.join(c)}")
            continue
        used.add(entry[2])
        if set(c) != entry[0]:
            notes.append(f"allowed cycle ({allow_path}:{entry[2]}) is now {' <-> '.join(c)}")
    for mods, _, n in allowed:
        if n not in used:
            problems.append(f"{allow_path}:{n}: no cycle among {' '.join(sorted(mods))} any "
                            "more: remove the entry")
    return problems, notes


def folder_lines(folders):
    lines = ["folders (layer: folder -> folders it depends on):"]
    names = set(folders) | {b for deps in folders.values() for b in deps}
    for a in sorted(names, key=lambda f: (LAYERS.get(f, 99), f)):
        deps = ", ".join(sorted(folders.get(a, {}))) or "(nothing)"
        lines.append(f"  {LAYERS.get(a, '?')}: {a} -> {deps}")
    return lines


def doc_problems(doc, folders):
    """The document must show the folder graph as the script prints it."""
    with open(doc) as f:
        if "\n".join(folder_lines(folders)) in f.read():
            return []
    return [f"{doc} does not show the folder graph as it is now: paste the lines above"]


def print_graph(edges, folders, show_files):
    print("\n".join(folder_lines(folders)))
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
    flags, rest, allow_path, doc = set(), [], os.path.join(HERE, "depgraph_allow.txt"), None
    args = iter(argv)
    for a in args:
        if a == "--allow":
            allow_path = next(args)
        elif a == "--doc":
            doc = next(args)
        elif a.startswith("--"):
            flags.add(a)
        else:
            rest.append(a)
    lib = rest[0] if rest else os.path.join(HERE, "..", "lib")
    edges = file_graph(lib)
    folders = folder_graph(edges)
    if "--dot" in flags:
        print_dot(folders)
        return 0
    print_graph(edges, folders, "--files" in flags)
    allowed = read_allow(allow_path) if os.path.exists(allow_path) else []
    problems, notes = cycle_problems(cycles(edges), allowed, os.path.basename(allow_path))
    problems += [f"cycle between folders: {' <-> '.join(c)}" for c in cycles(folders)]
    problems += doc_problems(doc, folders) if doc else []
    for a, b, why in not_down(folders):
        problems.append(f"{a} (layer {LAYERS.get(a, '?')}) depends on {b} (layer "
                        f"{LAYERS.get(b, '?')}), not a lower layer: {'; '.join(why[:4])}")
    for c in allowed:
        print(f"allowed: cycle {' <-> '.join(sorted(c[0]))}: {c[1]}")
    for n in notes:
        print("note: " + n)
    for p in problems:
        print(("FAIL: " if "--check" in flags else "note: ") + p)
    if "--check" in flags and not problems:
        print("ok: no cycle outside the allow-list, every arrow points down")
    return 1 if problems and "--check" in flags else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
