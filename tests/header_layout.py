#!/usr/bin/env python3
"""The public structs are laid out alike in every language a caller may use: the
header programs (tests/header_checks.h) built as the library's C11 (the reference, given
first), as strict C99 and as C++11 print the same sizeof and field offsets of every
public struct and the same bytes from every static inline initialiser. A difference
means the library and such a caller would disagree on where a field is.

Each program must also exit 0 (its own checks), and the reference must cover the header:
every field of every `typedef struct frl_X { ... } frl_X;` and every static inline
frl_*_init, so a field or table added to fastrl.h without a line in header_checks.h
fails here instead of going unchecked.

usage: header_layout.py HEADER REFERENCE_PROGRAM PROGRAM..."""
import difflib
import re
import subprocess
import sys


def declared_names(decl):
    """Field names of one declaration: `int (*f)(...)`, `double a, b`, `T x[8]`."""
    fn = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
    if fn:
        return [fn.group(1)]
    return [re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", part).group(1)
            for part in decl.split(",")]


def header_fields(text):
    """{"frl_X.field", ...} for every public struct with a body."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    fields = set()
    for name, body in re.findall(r"typedef struct (frl_\w+) \{(.*?)\} \1;", text, re.S):
        for decl in body.split(";"):
            if decl.strip():
                fields.update(f"{name}.{f}" for f in declared_names(decl.strip()))
    return fields


def coverage_errors(output, header):
    """What the header declares and the output lacks, and the reverse: a field printed
    but not found in the header means this script no longer reads the header right."""
    printed = set(re.findall(r"^(frl_\w+\.\w+) offset ", output, re.M))
    printed |= set(re.findall(r"^(frl_\w+_init) leaves ", output, re.M))
    declared = header_fields(header)
    declared |= set(re.findall(r"static inline void (frl_\w+_init)\s*\(", header))
    errors = []
    if declared - printed:
        errors.append("tests/header_checks.h does not print "
                      + ", ".join(sorted(declared - printed)))
    if printed - declared:
        errors.append("not found in the header: " + ", ".join(sorted(printed - declared)))
    return errors


def run(program):
    """The program's stdout, and a failure line if it exited non-zero."""
    r = subprocess.run([program], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {program} exited {r.returncode}:\n{r.stderr}", end="")
    return r.stdout, r.returncode == 0


def differs(ref_prog, ref, prog, out):
    if out == ref:
        return False
    print(f"FAIL: {prog} differs from {ref_prog}:")
    sys.stdout.writelines(difflib.unified_diff(
        ref.splitlines(True), out.splitlines(True), ref_prog, prog))
    return True


def main():
    header = open(sys.argv[1]).read()
    ref_prog, others = sys.argv[2], sys.argv[3:]
    if not others:
        sys.exit("FAIL: no program to compare with the reference")
    ref, ok = run(ref_prog)
    for error in coverage_errors(ref, header):
        ok = False
        print("FAIL: " + error)
    for prog in others:
        out, ran = run(prog)
        ok = not differs(ref_prog, ref, prog, out) and ran and ok
    if not ok:
        return 1
    print(f"{len(ref.splitlines())} lines, alike in {ref_prog} and " + ", ".join(others))
    sys.stdout.write(ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
