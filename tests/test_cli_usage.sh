#!/bin/sh
# The commands' usage: `fastrl config`, `bench`, `train`, `export` and `cut` answer
# --help (exit status 0, on stdout) and print their usage for a usage error (2); bench's
# numeric options are read whole and a bad --set names its key; `fastrl --help` lists
# the options each command's own usage does. Nothing here trains or benchmarks: every
# case is refused or help.
#
#   test_cli_usage.sh FASTRL
set -u
fastrl=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_usage.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

# status WANT NAME TEXT...: the last run exited WANT and printed every TEXT.
status() {
    want=$1
    name=$2
    shift 2
    [ "$rc" -eq "$want" ] || fail "$name: exit status $rc (want $want): $out"
    for text in "$@"; do
        has "$text" || fail "$name: output lacks '$text': $out"
    done
}

run "$fastrl" config
status 2 "config" "usage: fastrl config --list"
has "unknown command" && fail "config: called unknown: $out"
run "$fastrl" config --help
status 0 "config --help" "usage: fastrl config --list"
run "$fastrl" config --list
status 0 "config --list" "runtime.seed"
# Ranges are exact: %g printed 1.04858e+06 and 9.0072e+15, below the real bounds.
for want in "train.num_envs .* range \[1, 1048576\]" "runtime.seed .* range \[0, 9007199254740992\]" \
    "env.randomize_mass .* range \[0, 0.9\]" "policy.hidden .* items in \[1, 4096\]"; do
    echo "$out" | grep -q "^$want" || fail "config --list: no line matching '$want'"
done

# --help is an answer, not a mistake: the usage on stdout (nothing on stderr), exit 0,
# for every command that takes options (export and cut once said "unknown option", 2).
for cmd in train export cut eval render; do
    help=$("$fastrl" "$cmd" --help 2>"$dir/stderr")
    rc=$?
    [ "$rc" -eq 0 ] || fail "$cmd --help: exit status $rc (want 0)"
    case $help in "usage: fastrl $cmd "*) ;; *) fail "$cmd --help: stdout: $help" ;; esac
    [ ! -s "$dir/stderr" ] || fail "$cmd --help: stderr: $(cat "$dir/stderr")"
done
# envs and info take no options: --help gives the program's usage instead of running.
for cmd in envs info; do
    help=$("$fastrl" "$cmd" --help 2>"$dir/stderr")
    rc=$?
    [ "$rc" -eq 0 ] || fail "$cmd --help: exit status $rc (want 0)"
    case $help in "usage: fastrl <command>"*) ;; *) fail "$cmd --help: stdout: $help" ;; esac
done
# ... and anything else after them is refused (2), not ignored by a run that exits 0.
for cmd in envs info; do
    run "$fastrl" "$cmd" --json
    status 2 "$cmd --json" "fastrl $cmd: takes no arguments, not '--json'"
done
help=$("$fastrl" bench train --help 2>"$dir/stderr")
[ ! -s "$dir/stderr" ] || fail "bench train --help: stderr: $(cat "$dir/stderr")"
run "$fastrl" export
status 2 "export with nothing" "usage: fastrl export"

run "$fastrl" bench env --help
status 0 "bench env --help" "usage: fastrl bench env"
run "$fastrl" bench train --help
status 0 "bench train --help" "usage: fastrl bench train"
for bad in "--envs 0" "--envs abc" "--threads -1" "--seconds 0" "--seconds abc"; do
    # shellcheck disable=SC2086 # an option and its value
    run "$fastrl" bench env CartPole-v1 $bad
    status 2 "bench env $bad" "${bad%% *}: '"
done
run "$fastrl" bench train CartPole-v1 --set nokey=1
status 2 "bench train --set nokey=1" "nokey"
# An integer past int64 is out of the key's range, said with the range (it was "cannot
# parse ... as an integer").
run "$fastrl" bench train CartPole-v1 --set train.num_envs=99999999999999999999999
status 2 "bench train --set train.num_envs=1e23" \
    "train.num_envs': 99999999999999999999999 is outside [1, 1048576]"
# A --set that sets nothing (empty, or blanks) is refused, naming the option, not taken
# as a run with the defaults.
for cmd in "train CartPole-v1" "bench train CartPole-v1" "render PixelGrid-v0 --out $dir/x.png"; do
    for blank in "" " "; do
        # shellcheck disable=SC2086 # a command and its words
        run "$fastrl" $cmd --steps 1 --set "$blank"
        status 2 "$cmd --set '$blank'" "--set: '$blank' sets nothing"
    done
done
[ ! -e "$dir/x.png" ] || fail "render with an empty --set wrote its PNG"
# Output that cannot be written (a full disk) is a failure, not exit 0 with nothing
# written; where there is no /dev/full, skip.
if [ -w /dev/full ]; then
    for cmd in envs info "config --list" "--help"; do
        # shellcheck disable=SC2086 # a command and its words
        "$fastrl" $cmd > /dev/full 2> "$dir/stderr"
        rc=$?
        [ "$rc" -ne 0 ] && grep -q "cannot write its output" "$dir/stderr" ||
            fail "$cmd > /dev/full: exit status $rc: $(cat "$dir/stderr")"
    done
fi
# A count is read exactly: 1.0000000000000001 is no whole number, though a double rounds
# it to 1 (render then went on to fail on CartPole's vector observations).
run "$fastrl" render CartPole-v1 --out "$dir/x.png" --steps 1.0000000000000001
status 2 "render --steps 1.0000000000000001" "--steps: '1.0000000000000001' is not a whole"
# Learners whose arithmetic bench train does not count are refused before training (the
# report read a PPO learner out of an ES, GA or R2D2 learner's memory: valgrind's
# invalid read, and "minibatch rows: 0").
for algo in es ga r2d2; do
    run "$fastrl" bench train CartPole-v1 --steps 1 --threads 1 --set "train.algo=$algo"
    status 2 "bench train train.algo=$algo" "train.algo=$algo has no FLOP floor"
done
# A second environment is refused (it replaced the first, and the bench ran on it).
run "$fastrl" bench train CartPole-v1 Pendulum-v1 --steps 1 --threads 1
status 2 "bench train with two envs" "one environment, not both CartPole-v1 and Pendulum-v1"
run "$fastrl" bench train CartPole-v1 --steps abc
status 2 "bench train --steps abc" "--steps: 'abc'"

# cut's own usage lists these; so must `fastrl --help`.
run "$fastrl" --help
status 0 "--help" "--max-steps"
for opt in --deterministic --seed --search --latency-model --fit-latency; do
    echo "$out" | sed -n '/^  cut /,/^  render /p' | grep -q -- "$opt" ||
        fail "--help: cut lacks $opt: $out"
done

# A FRL_MUJOCO_PLUGIN that loads but is no plugin is named as the file it is (the
# message named libfastrl-mujoco.so.0, which was not the file opened).
# (glibc's libc.so.6; where the loader has none, there is nothing to check.)
run env FRL_MUJOCO_PLUGIN=libc.so.6 "$fastrl" info
has "libc.so.6 cannot be loaded" ||
    status 0 "info with FRL_MUJOCO_PLUGIN=libc.so.6" \
        "libc.so.6 (FRL_MUJOCO_PLUGIN) has no frl_mujoco_plugin_get"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all cases passed"
