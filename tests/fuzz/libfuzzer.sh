#!/usr/bin/env bash
# The fuzz targets under libFuzzer, coverage-guided, with ASan and UBSan: the suite runs
# them on generated corpora only. Builds the library instrumented (clang), links the
# targets, seeds each from its corpus maker and runs each for SECONDS.
#
#   bash tests/fuzz/libfuzzer.sh [SECONDS] [BUILD_DIR] [TARGET ...]
#                           (defaults: 60, build-libfuzzer, every target)
#
# Targets: container (the checkpoint reader), policy (whole files), policy_sealed (the
# uncompressed payload, sealed in the target so mutations get past zstd and the
# checksums; it found the box-shape over-read that 4d215a5 fixed within seconds),
# config (the settings parser) and trainer (frl_trainer_load on sealed payloads, a
# loaded trainer trained one more rollout; seeded with CartPole checkpoints of PPO, of
# DQN with its replay, ES, GA and R2D2).
# Big but valid settings (a million envs) can make libFuzzer report a timeout or its
# memory limit rather than a bug: read the input before fixing anything. A crash
# leaves crash-* in BUILD_DIR/fuzz/TARGET/ and the script exits 1; once it is fixed,
# add a test that rewrites a checkpoint the same way (tests/trainer_checks.h).
set -uo pipefail
cd "$(dirname "$0")/../.."
case ${1:-60} in
    -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *[!0-9]* | '') echo "libfuzzer: SECONDS must be a whole number, not '$1'" >&2; exit 2 ;;
esac
seconds=${1:-60}
dir=${2:-build-libfuzzer}
shift $(($# < 2 ? $# : 2))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(container policy policy_sealed config trainer)
root=$PWD
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

if [ ! -f "$dir/build.ninja" ]; then
    CC=clang meson setup "$dir" --buildtype=debugoptimized -Dtests=false -Dcuda=disabled \
        -Dmujoco=disabled -Dmpi=disabled -Db_lundef=false \
        "-Dc_args=-fsanitize=fuzzer-no-link $san" "-Dc_link_args=$san" >/dev/null || exit 1
fi
ninja -C "$dir" lib/libfastrl.a >/dev/null ||
    { echo "libfuzzer: the library did not build"; exit 1; }

libs=("$dir/lib/libfastrl.a" -lzstd -lm -lpthread -ldl
      $(pkg-config --libs openblas 2>/dev/null || echo -lopenblas))
cflags=(-g -O1 -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/lib" -I"$root/tests/fuzz" $san)
out=$dir/fuzz
bin=$out/bin
mkdir -p "$bin"
link() { # NAME SOURCES... [-DFLAGS]: a libFuzzer binary
    local name=$1
    shift
    clang "${cflags[@]}" -fsanitize=fuzzer "$@" "${libs[@]}" -o "$bin/$name" ||
        { echo "libfuzzer: $name did not link"; exit 1; }
}
maker() { # NAME SOURCE: a corpus maker (no libFuzzer main)
    clang "${cflags[@]}" "$2" "${libs[@]}" -o "$bin/$1" || { echo "libfuzzer: $1"; exit 1; }
}
link container tests/fuzz/fuzz_container.c
link policy tests/fuzz/fuzz_policy.c
link policy_sealed tests/fuzz/fuzz_policy.c -DFRL_FUZZ_SEALED
link config tests/fuzz/fuzz_config.c
link trainer tests/fuzz/fuzz_trainer.c
maker make_corpus tests/fuzz/make_corpus.c
maker make_policy_corpus tests/fuzz/make_policy_corpus.c
maker make_config_corpus tests/fuzz/make_config_corpus.c

rm -rf "$out/seeds" && mkdir -p "$out/seeds"
"$bin/make_corpus" "$out/seeds/container" >/dev/null &&
    "$bin/make_policy_corpus" "$out/seeds/policy" "$out/seeds/policy_sealed" >/dev/null &&
    "$bin/make_config_corpus" "$out/seeds/config" >/dev/null &&
    mkdir -p "$out/seeds/trainer" &&
    cp "$out"/seeds/policy_sealed/ok_trainer_* "$out/seeds/trainer/" ||
    { echo "libfuzzer: a corpus maker failed"; exit 1; }

status=0
for t in "${targets[@]}"; do
    rm -f "$out/$t"/crash-* && mkdir -p "$out/$t/corpus"
    (cd "$out/$t" && ASAN_OPTIONS=detect_leaks=1 "../bin/$t" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=4096 -max_len=400000 -print_final_stats=1 \
        corpus "../seeds/$t" >log 2>&1)
    rc=$?
    runs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$out/$t/log" | grep -o "[0-9]*$")
    if [ $rc -ne 0 ]; then
        status=1
        echo "$t: FAILED after ${runs:-?} runs; $out/$t/log, $(ls "$out/$t" | grep -m1 crash-)"
        grep -m1 -A3 "ERROR\|invariant broken" "$out/$t/log"
    else
        echo "$t: ${runs:-?} runs in ${seconds} s, no crash"
    fi
done
exit $status
