#!/bin/sh
# `fastrl train ENV --resume DIR`: ENV must be the environment of the run saved in DIR.
# Another one is refused, naming both, before anything in DIR changes; the same ENV, or
# none, continues the run.
#
#   test_cli_train.sh FASTRL
set -u
fastrl=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_train.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

# CartPole's defaults: 16 envs x 128 steps, 2048 steps an update.
run "$fastrl" train CartPole-v1 --steps 2048 --seed 1 --out "$dir/run" --quiet
[ "$rc" -eq 0 ] || { echo "cannot train CartPole-v1 (setup failed): $out"; exit 1; }
cp "$dir/run/checkpoint.frl" "$dir/saved.frl"
cp "$dir/run/metrics.csv" "$dir/saved.csv"

run "$fastrl" train Pendulum-v1 --resume "$dir/run" --steps 4096 --quiet
before=$failures
[ "$rc" -ne 0 ] || fail "Pendulum-v1 on a CartPole-v1 run: exit status 0; output: $out"
for want in "CartPole-v1" "Pendulum-v1" "$dir/run"; do
    has "$want" || fail "Pendulum-v1 on a CartPole-v1 run: output lacks '$want': $out"
done
cmp -s "$dir/run/checkpoint.frl" "$dir/saved.frl" || fail "the refused resume changed the checkpoint"
cmp -s "$dir/run/metrics.csv" "$dir/saved.csv" || fail "the refused resume changed metrics.csv"
[ "$failures" -eq "$before" ] && echo "ok: another env refused: $out"

run "$fastrl" train CartPole-v1 --resume "$dir/missing" --quiet
[ "$rc" -ne 0 ] && has "FRL_ERR_IO" || fail "a missing run: exit status $rc: $out"

run "$fastrl" train CartPole-v1 --resume "$dir/run" --steps 4096 --quiet
[ "$rc" -eq 0 ] && has "steps: 4096" || fail "the same env: exit status $rc: $out"

run "$fastrl" train --resume "$dir/run" --steps 6144 --quiet
[ "$rc" -eq 0 ] && has "steps: 6144" || fail "no env: exit status $rc: $out"

# --max-seconds stops a long run as Ctrl-C does (saved, exit status 0); a negative limit
# is refused.
run "$fastrl" train CartPole-v1 --steps 1000000000 --max-seconds 1 --out "$dir/timed" --quiet
[ "$rc" -eq 0 ] && has "time limit" && [ -f "$dir/timed/checkpoint.frl" ] ||
    fail "--max-seconds: exit status $rc: $out"
run "$fastrl" train CartPole-v1 --max-seconds -1 --quiet
[ "$rc" -eq 2 ] && has "max-seconds" || fail "--max-seconds -1: exit status $rc: $out"

# --verbose shows the library's info lines (where runtime.device=auto put the networks,
# the ring's memory); without it only warnings come.
run "$fastrl" train CartPole-v1 --steps 2048 --quiet --verbose --set runtime.device=auto
[ "$rc" -eq 0 ] && has "runtime.device=auto: on the CPU" && has "info: ring:" ||
    fail "--verbose: exit status $rc: $out"
run "$fastrl" train CartPole-v1 --steps 2048 --quiet --set runtime.device=auto
[ "$rc" -eq 0 ] && ! has "info:" || fail "without --verbose: exit status $rc: $out"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all cases passed"
