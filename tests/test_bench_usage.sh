#!/bin/sh
# The C benchmarks' command lines (bench/bench_args.h): each answers --help and -h with its
# usage on stdout and exit status 0, and refuses a malformed or out-of-range value, an
# unknown option and a missing value on stderr, exit status 2, before it runs anything
# (bench_conv read "--help" as batch 0 and benchmarked). Nothing here benchmarks: every
# case is help or refused.
#
#   test_bench_usage.sh BENCH...      (the built programs, named as bench/meson.build does)
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_bench_usage.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# refused PROGRAM NAME TEXT ARGS...: PROGRAM ARGS exits 2, prints nothing on stdout (it did
# not run) and says TEXT on stderr, with its usage.
refused() {
    prog=$1
    name=$2
    text=$3
    shift 3
    "$prog" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name $*: exit status $rc (want 2): $(cat "$dir/out" "$dir/err")"
    [ ! -s "$dir/out" ] || fail "$name $*: ran: $(cat "$dir/out")"
    grep -qF -- "$text" "$dir/err" || fail "$name $*: stderr lacks '$text': $(cat "$dir/err")"
    grep -q "^usage: " "$dir/err" || fail "$name $*: stderr lacks the usage: $(cat "$dir/err")"
}

for prog in "$@"; do
    name=$(basename "$prog")
    for help in --help -h; do
        "$prog" $help >"$dir/out" 2>"$dir/err"
        rc=$?
        [ "$rc" -eq 0 ] || fail "$name $help: exit status $rc (want 0)"
        case $(head -n 1 "$dir/out") in
            "usage: $name "* | "usage: mpirun "*"$name "*) ;;
            *) fail "$name $help: stdout: $(cat "$dir/out")" ;;
        esac
        [ ! -s "$dir/err" ] || fail "$name $help: stderr: $(cat "$dir/err")"
    done
    # --help after a valid option is still help, not a value or a run.
    case $name in
        bench_conv | bench_kernels) args=1 ;;
        train_stacked) args=CartPole-v1 ;;
        *) args="--reps 1" ;;
    esac
    # shellcheck disable=SC2086 # an option and its value
    "$prog" $args --help >"$dir/out" 2>&1 || fail "$name $args --help: $(cat "$dir/out")"

    case $name in
        bench_conv | bench_kernels)
            refused "$prog" "$name" "'abc' is not a whole number" abc
            refused "$prog" "$name" "'0' is not a whole number" 0
            refused "$prog" "$name" "'-3' is not a whole number" 64 -3
            refused "$prog" "$name" "'2.5' is not a whole number" 2.5
            refused "$prog" "$name" "'0x10' is not a whole number" 0x10
            ;;
        bench_async)
            refused "$prog" "$name" "--threads: '0'" --threads 0
            refused "$prog" "$name" "--reps: '32'" --reps 32
            refused "$prog" "$name" "--groups: 'x'" --groups 2,x
            refused "$prog" "$name" "--cost-ns: '-1'" --cost-ns -1
            refused "$prog" "$name" "more worlds than --agents" --agents 2 --groups 4
            # --hidden went unchecked to the trainer, whose error named something else
            refused "$prog" "$name" "--hidden: 'abc'" --hidden abc
            ;;
        bench_evo)
            refused "$prog" "$name" "--generations: '0'" --generations 0
            refused "$prog" "$name" "--threads: 'abc'" --threads abc
            ;;
        bench_latency)
            refused "$prog" "$name" "--rounds: an odd number" --rounds 4
            refused "$prog" "$name" "--batches: 'x'" --batches 1,x
            ;;
        bench_population)
            refused "$prog" "$name" "--members: '0'" --members 0
            refused "$prog" "$name" "--sample-ms: 'abc'" --sample-ms abc
            ;;
        bench_replay)
            refused "$prog" "$name" "--batch: '0'" --batch 0
            refused "$prog" "$name" "--obs: '4x'" --obs 4x
            ;;
        bench_raycast)
            # --seconds 0 timed no step and printed 0 / 0 frames a second.
            refused "$prog" "$name" "--seconds: '0'" --seconds 0
            refused "$prog" "$name" "--episodes: 'abc'" --episodes abc
            # an unknown key made every return 0, exit status 0
            refused "$prog" "$name" "unknown config key 'nokey'" --set nokey=1
            ;;
        train_stacked)
            refused "$prog" "$name" "--stack: '0'" CartPole-v1 --stack 0
            refused "$prog" "$name" "--steps: 'abc'" CartPole-v1 --steps abc
            refused "$prog" "$name" "no ENV" --steps 1
            refused "$prog" "$name" "nokey" CartPole-v1 --set nokey=1
            ;;
        bench_gpu_population)
            refused "$prog" "$name" "--members: '0'" --members 0
            ;;
        bench_gpu_infer)
            refused "$prog" "$name" "'--budget'" --budget 2x
            ;;
        bench_gpu_floor)
            # its --help once went to stderr
            refused "$prog" "$name" "--obs-bytes: '4x'" --obs-bytes 4x
            refused "$prog" "$name" "bad --obs-bytes" --obs-bytes 6
            ;;
        *) fail "$name: no cases for this program" ;;
    esac
    # An unknown option and a missing value, in every program that takes options.
    case $name in
        bench_conv | bench_kernels) ;;
        bench_gpu_infer) refused "$prog" "$name" "'--nope'" --nope 1 ;;
        *)
            refused "$prog" "$name" "unknown option '--nope'" --nope 1
            refused "$prog" "$name" "--reps needs a value" --reps
            ;;
    esac
done

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all cases passed"
