#!/usr/bin/env python3
"""A plugin (libfastrl-cuda.so.0, libfastrl-mujoco.so.0) does not link libfastrl, so any
frl_ symbol it leaves undefined makes dlopen fail on every machine, GPU or not; the
test builds of the plugins link the library's internals and cannot show it. This
lists the plugin's undefined dynamic symbols and fails on any frl_ one.

usage: check_plugin_symbols.py PLUGIN.so [...]"""
import subprocess
import sys


def undefined_frl(path):
    out = subprocess.run(["nm", "-D", "--undefined-only", path], check=True,
                         capture_output=True, text=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines()
                  if line.split() and line.split()[-1].startswith("frl_"))


def main():
    bad = 0
    for path in sys.argv[1:]:
        missing = undefined_frl(path)
        for name in missing:
            print(f"{path}: undefined {name} (compile its source into the plugin)")
        print(f"{path}: {len(missing)} undefined frl_ symbols")
        bad += len(missing)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
