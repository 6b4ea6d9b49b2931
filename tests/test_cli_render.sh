#!/bin/sh
# `fastrl render`: each ray task's frame as a PNG that decodes (zlib's Adler-32 and every
# chunk's CRC-32 checked by Python's zlib), with the size and colour type the settings
# ask for and pixels that are not all one value; PixelGrid-v0 with random actions; bad
# input refused with a message.
#
#   test_cli_render.sh FASTRL
set -u
fastrl=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_render.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

# PNG FILE WIDTH HEIGHT CHANNELS: decode FILE and check what it holds.
png_ok() {
    python3 - "$@" <<'PY'
import struct, sys, zlib
path, w, h, ch = sys.argv[1], *map(int, sys.argv[2:])
d = open(path, "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "signature"
pos, chunks = 8, {}
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    crc = struct.unpack(">I", d[pos + 8 + n:pos + 12 + n])[0]
    assert zlib.crc32(kind + body) == crc, f"CRC of {kind}"
    chunks[kind] = body
    pos += 12 + n
iw, ih, depth, ctype = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
assert (iw, ih, depth, ctype) == (w, h, 8, 0 if ch == 1 else 2), (iw, ih, depth, ctype)
raw = zlib.decompress(chunks[b"IDAT"])
assert len(raw) == (w * ch + 1) * h, len(raw)
pixels = b"".join(raw[r * (w * ch + 1) + 1:(r + 1) * (w * ch + 1)] for r in range(h))
assert len(set(pixels)) > 1, "a flat image"
assert b"IEND" in chunks
PY
}

for task in RayRoom-v0 RayMaze-v0 RayCollect-v0; do
    run "$fastrl" render $task --out "$dir/$task.png" --steps 5
    [ "$rc" -eq 0 ] && has "84 x 84 x 1" || fail "$task: $out"
    png_ok "$dir/$task.png" 84 84 1 || fail "$task: not the PNG expected"
    run "$fastrl" render $task --out "$dir/$task-rgb.png" --seed 3 --policy random \
        --set "env.grayscale=false env.width=128 env.height=72"
    [ "$rc" -eq 0 ] && has "random policy" || fail "$task rgb: $out"
    png_ok "$dir/$task-rgb.png" 128 72 3 || fail "$task rgb: not the PNG expected"
done
# Past 65,535 bytes of rows the zlib stream takes more than one stored block.
run "$fastrl" render RayRoom-v0 --out "$dir/big.png" --set "env.grayscale=false env.width=192" \
    --set env.height=144
[ "$rc" -eq 0 ] && png_ok "$dir/big.png" 192 144 3 || fail "a 192 x 144 RGB frame: $out"
run "$fastrl" render PixelGrid-v0 --out "$dir/grid.png" --steps 3
[ "$rc" -eq 0 ] && png_ok "$dir/grid.png" 40 40 3 || fail "PixelGrid-v0: $out"

# A write that fails part-way (here the file size limit, its signal ignored: EFBIG)
# leaves the file that was there as it was, and no partial or temporary file beside it.
cp "$dir/grid.png" "$dir/kept.png"
(
    trap '' XFSZ
    ulimit -f 8
    "$fastrl" render RayRoom-v0 --out "$dir/kept.png" --set "env.grayscale=false env.width=192" \
        --set env.height=144 > "$dir/efbig.out" 2>&1
) && fail "a render past the file size limit: exit status 0"
grep -q "cannot write" "$dir/efbig.out" || fail "past the file size limit: $(cat "$dir/efbig.out")"
cmp -s "$dir/kept.png" "$dir/grid.png" || fail "a failed render changed the file it would replace"
[ "$(ls "$dir" | grep -c '^kept\.png')" -eq 1 ] || fail "a failed render left: $(ls "$dir")"

run "$fastrl" render CartPole-v1 --out "$dir/x.png"
[ "$rc" -ne 0 ] && has "not an image" || fail "a vector env was rendered: $out"
run "$fastrl" render PixelGrid-v0 --out "$dir/x.png" --policy oracle
[ "$rc" -ne 0 ] && has "no scripted oracle" || fail "an oracle for PixelGrid-v0: $out"
run "$fastrl" render RayHall-v0 --out "$dir/x.png"
[ "$rc" -ne 0 ] && has "unknown env " || fail "an unknown env: $out"
run "$fastrl" render RayRoom-v0 --out "$dir/no/such/dir/x.png"
[ "$rc" -ne 0 ] && has "cannot write" || fail "an unwritable path: $out"
run "$fastrl" render RayRoom-v0
[ "$rc" -ne 0 ] && has "usage" || fail "no --out: $out"
# An empty --out, or an option where the file goes, is a usage error before the env is
# made (--out --steps wrote a PNG called --steps; '' failed to write, exit status 1).
run "$fastrl" render RayRoom-v0 --out ''
[ "$rc" -eq 2 ] && has "--out: an empty path" || fail "--out '': exit status $rc: $out"
here=$(pwd)
case $fastrl in /*) ;; *) fastrl=$here/$fastrl ;; esac
cd "$dir" || exit 1
run "$fastrl" render RayRoom-v0 --out --steps 3
[ "$rc" -eq 2 ] && has "--out takes a FILE, not an option ('--steps'" && [ ! -e ./--steps ] ||
    fail "--out --steps: exit status $rc: $out"
cd "$here" || exit 1
for bad in "--steps abc" "--steps 4296967296" "--steps -1" "--seed x"; do
    # shellcheck disable=SC2086 # an option and its value
    run "$fastrl" render RayRoom-v0 --out "$dir/x.png" $bad
    [ "$rc" -eq 2 ] && has "${bad%% *}: '" || fail "$bad: exit status $rc (want 2): $out"
done
run "$fastrl" render RayRoom-v0 --out "$dir/x.png" --policy trained
[ "$rc" -eq 2 ] && has "oracle and random" || fail "--policy trained: $rc: $out"
run "$fastrl" render RayRoom-v0 --out "$dir/x.png" --frames 3
[ "$rc" -eq 2 ] && has "unknown option --frames" || fail "--frames: $rc: $out"
run "$fastrl" render RayRoom-v0 --out "$dir/x.png" --set env.width=8
[ "$rc" -ne 0 ] && has "env.width" || fail "a frame too small: $out"

[ "$failures" -eq 0 ] || exit 1
echo "render: all cases passed"
