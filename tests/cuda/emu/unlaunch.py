#!/usr/bin/env python3
"""Rewrites CUDA launches for the emulator (cuda_runtime.h): each
`kernel<<<grid, block, shmem, stream>>>(args)` becomes
`frl_emu::launch(kernel, "kernel", grid, block, shmem, stream)(args)`, which C++ can
compile. Everything else is copied as it is. Usage: unlaunch.py in.cu out.cc"""
import re
import sys

LAUNCH = re.compile(r"\b([A-Za-z_]\w*(?:<[^<>;()]*>)?)\s*<<<(.*?)>>>\s*\(", re.S)


def rewrite(src):
    count = 0

    def one(m):
        nonlocal count
        count += 1
        kernel, config = m.group(1), " ".join(m.group(2).split())
        # the launch's line breaks are kept, so that diagnostics point at the .cu's lines
        breaks = "\n" * m.group(0).count("\n")
        return f'frl_emu::launch({kernel}, "{kernel}", {config})({breaks}'

    out = LAUNCH.sub(one, src)
    if "<<<" in out:
        sys.exit("unlaunch.py: a launch it could not rewrite is left")
    return out, count


def main():
    src_path, out_path = sys.argv[1], sys.argv[2]
    with open(src_path, encoding="utf-8") as f:
        out, count = rewrite(f.read())
    if count == 0:
        sys.exit(f"unlaunch.py: no launch found in {src_path}")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{src_path}"\n')
        f.write(out)


if __name__ == "__main__":
    main()
