#!/usr/bin/env python3
"""The figures the docs state about the code match the code:
- one version everywhere: the header's FRL_VERSION_*, meson's project version, the
  Python package's, the title of doc/api.md, README's "What is here (X.Y)" and api.md's version paragraph;
- doc/api.md's function count and per-node counts equal the header's public functions
  and lib/fastrl.map's nodes, and every public function has a `###` entry there;
- the CLI's commands: `fastrl --help`, the dispatch in tools/fastrl.c, that file's
  opening comment and README's command list name the same commands;
- doc/api.md's config key table lists `fastrl config --list`'s keys in its order, each
  with its help text.

usage: check_docs.py SOURCE_ROOT FASTRL_BINARY"""
import os
import re
import subprocess
import sys


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def header_facts(header):
    v = [re.search(rf"#define FRL_VERSION_{k} (\d+)", header).group(1)
         for k in ("MAJOR", "MINOR", "PATCH")]
    abi = [re.search(rf"#define FRL_ABI_VERSION_{k} (\d+)", header).group(1)
           for k in ("MAJOR", "MINOR")]
    api = set(re.findall(r"FRL_API\s+[^;(]*?\b(frl_\w+)\s*\(", header))
    inline = set(re.findall(r"static inline \w+ (frl_\w+_init)\s*\(", header))
    return ".".join(v), ".".join(abi), api, inline


def map_nodes(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    nodes = {}
    for name, body in re.findall(r"FASTRL_([\d.]+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].replace("global:", "")
        nodes[name] = {n.strip() for n in glob.split(";") if n.strip()}
    return nodes


def check_versions(root, version, abi, problems):
    meson = re.search(r"version:\s*'([\d.]+)'", read(root, "meson.build")).group(1)
    api_md, readme = read(root, "doc/api.md"), read(root, "README.md")
    title = re.search(r"^# .*\(([\d.]+)\)", api_md, flags=re.M)
    here = re.search(r"^## What is here \(([\d.]+)\)", readme, flags=re.M)
    release = re.search(r"`FRL_VERSION_MAJOR.MINOR.PATCH` \(([\d.]+)\)", api_md)
    abi_stated = re.search(r"`FRL_ABI_VERSION_MAJOR.MINOR` \(([\d.]+)\)", api_md)
    pyproject = re.search(r'^version = "([\d.]+)"', read(root, "bindings/python/pyproject.toml"),
                          flags=re.M)
    package = re.search(r'^__version__ = "([\d.]+)"',
                        read(root, "bindings/python/fastrl/__init__.py"), flags=re.M)
    found = {"meson.build project version": meson,
             "bindings/python/pyproject.toml": pyproject and pyproject.group(1),
             "bindings/python/fastrl/__init__.py __version__": package and package.group(1),
             "doc/api.md title": title and title.group(1),
             "doc/api.md version paragraph": release and release.group(1),
             "doc/api.md ABI version": abi_stated and abi_stated.group(1),
             "README 'What is here'": here and here.group(1)}
    want = {"doc/api.md ABI version": abi,
            "README 'What is here'": version.rsplit(".", 1)[0]}
    for where, value in found.items():
        if value != want.get(where, version):
            problems.append(f"{where} says {value}; the header says "
                            f"{want.get(where, version)}")


def check_counts(root, api, inline, nodes, problems):
    api_md = read(root, "doc/api.md")
    total = re.search(r"every function in `include/fastrl.h`: (\d+) functions", api_md)
    public = api | inline
    if not total or int(total.group(1)) != len(public):
        problems.append(f"doc/api.md counts {total and total.group(1)} functions; the "
                        f"header has {len(public)} ({len(api)} exported, {len(inline)} "
                        "static inline)")
    for node, names in nodes.items():
        m = re.search(rf"`FASTRL_{re.escape(node)}` \((\d+) functions?\)", api_md)
        if not m or int(m.group(1)) != len(names):
            problems.append(f"doc/api.md gives FASTRL_{node} {m and m.group(1)} functions; "
                            f"lib/fastrl.map lists {len(names)}")
    headings = " ".join(re.findall(r"^### (.*)$", api_md, flags=re.M))
    for name in sorted(public):
        if not re.search(rf"\b{name}\b", headings):
            problems.append(f"doc/api.md has no ### entry naming {name}")


def cli_commands_from_help(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    cmds = set()
    for line in out.splitlines():
        m = re.match(r"  (\w+)(?: (env|train|--list)\b)?", line)
        if m:
            cmds.add(" ".join(x for x in m.groups() if x))
    return cmds


def check_cli(root, binary, problems):
    helped = cli_commands_from_help(binary)
    source = read(root, "tools/fastrl.c")
    dispatched = set(re.findall(r'strcmp\(cmd, "(\w+)"\)', source)) - {"help"}
    heads = {c.split()[0] for c in helped}
    if not helped or heads != dispatched:
        problems.append(f"`fastrl --help` lists {sorted(heads)}; tools/fastrl.c dispatches "
                        f"{sorted(dispatched)}")
    comment = re.match(r"/\*(.*?)\*/", source, flags=re.S).group(1)
    readme = read(root, "README.md")
    for cmd in sorted(helped):
        if not re.search(rf"\b{re.escape(cmd.split()[0])}\b", comment):
            problems.append(f"tools/fastrl.c's opening comment does not name '{cmd}'")
        if f"`{cmd}" not in readme and f" {cmd} " not in readme and f"`fastrl {cmd}" \
                not in readme:
            problems.append(f"README.md does not list the command '{cmd}'")
    return helped


def key_help(listing):
    """{key: help} from `fastrl config --list` (a key's line, then its indented help)."""
    helps, key = {}, None
    for line in listing.splitlines():
        if line and not line[0].isspace():
            key = line.split()[0]
            helps[key] = ""
        elif key:
            helps[key] = (helps[key] + " " + line.strip()).strip()
    return helps


def check_key_help(listing, table, problems):
    """Each key row's help column is the key's help text (markdown's \\| and \\* aside):
    the table is what users read, the text what frl_config_describe answers."""
    helps = key_help(listing)
    for row in re.findall(r"^\| `[a-z_0-9]+\.[a-z_0-9]+` \|.*$", table, flags=re.M):
        cells = [c.strip() for c in row.replace("\\|", "\0").strip().strip("|").split("|")]
        key = cells[0].strip("`")
        if key not in helps or len(cells) != 6:
            continue
        doc = cells[4].replace("\0", "|").replace("\\*", "*")
        if doc != helps[key]:
            problems.append(f"doc/api.md's help for {key} is not `fastrl config --list`'s: "
                            f"{doc[:60]!r}... against {helps[key][:60]!r}...")


def check_config_keys(root, binary, problems):
    """doc/api.md's key table names every key of `fastrl config --list`, in its order,
    and its count sentence agrees."""
    out = subprocess.run([binary, "config", "--list"], capture_output=True, text=True).stdout
    keys = [line.split()[0] for line in out.splitlines() if line and not line[0].isspace()]
    api_md = read(root, "doc/api.md")
    table = api_md[api_md.index("## Config keys"):]
    rows = re.findall(r"^\| `([a-z_0-9]+\.[a-z_0-9]+)` \|", table, flags=re.M)
    if rows[:len(keys)] != keys:
        missing = [k for k in keys if k not in rows]
        moved = [k for k, r in zip(keys, rows) if k != r][:3]
        problems.append(f"doc/api.md's key table differs from `fastrl config --list` "
                        f"({len(keys)} keys): missing {missing}, first out of order {moved}")
    check_key_help(out, table, problems)
    count = re.search(r"\d+\.\d+\.\d+ has (\d+)\s+keys", api_md)
    if not count or int(count.group(1)) != len(keys):
        problems.append(f"doc/api.md says {count and count.group(1)} keys; `fastrl config "
                        f"--list` lists {len(keys)}")
    return keys


def main():
    root, binary = sys.argv[1:3]
    version, abi, api, inline = header_facts(read(root, "include/fastrl.h"))
    nodes = map_nodes(read(root, "lib/fastrl.map"))
    problems = []
    check_versions(root, version, abi, problems)
    check_counts(root, api, inline, nodes, problems)
    cmds = check_cli(root, binary, problems)
    keys = check_config_keys(root, binary, problems)
    print(f"version {version}, ABI {abi}, {len(api | inline)} public functions, nodes "
          f"{ {k: len(v) for k, v in nodes.items()} }, CLI commands {sorted(cmds)}, "
          f"{len(keys)} config keys")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
