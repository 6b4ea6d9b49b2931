#!/bin/sh
# `fastrl train ENV --resume DIR`: ENV must be the environment of the run saved in DIR.
# Another one is refused, naming both, before anything in DIR changes; the same ENV, or
# none, continues the run. Then the options: numbers read strictly, refusals before
# anything is written, a resumed run's evaluations and progress line, progress in a log;
# signals in the final save, launcher ranks without dist.mode, bench train's epochs.
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

# A new run into a directory that holds one is refused (exit 2, nothing changed) unless
# --overwrite says to replace it.
cp "$dir/run/checkpoint.frl" "$dir/saved.frl"
run "$fastrl" train Acrobot-v1 --steps 2048 --out "$dir/run" --quiet
[ "$rc" -eq 2 ] && has "already holds a run (CartPole-v1)" && has "--overwrite" ||
    fail "a new run over an old one: exit status $rc: $out"
cmp -s "$dir/run/checkpoint.frl" "$dir/saved.frl" || fail "the refused run changed the checkpoint"
run "$fastrl" train Acrobot-v1 --steps 2048 --out "$dir/run" --quiet --overwrite
[ "$rc" -eq 0 ] || fail "--overwrite: exit status $rc: $out"
run "$fastrl" train --resume "$dir/run" --steps 4096 --quiet
[ "$rc" -eq 0 ] && has "steps: 4096" || fail "resuming the replaced run: exit status $rc: $out"

# A run killed before it saved leaves its metrics, settings and events but no
# checkpoint: a new run there took them without a word (its only record).
mkdir -p "$dir/killed"
printf 'step,return\n1,2\n' > "$dir/killed/metrics.csv"
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/killed" --quiet
[ "$rc" -eq 2 ] && has "holds metrics.csv, but no checkpoint.frl" && has "--overwrite" ||
    fail "a new run over a killed one's metrics: exit status $rc: $out"
[ "$(cat "$dir/killed/metrics.csv")" = "$(printf 'step,return\n1,2')" ] ||
    fail "the refused run changed the killed run's metrics.csv"
rm "$dir/killed/metrics.csv"
: > "$dir/killed/events.out.tfevents.1.host"
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/killed" --quiet
[ "$rc" -eq 2 ] && has "holds events.out.tfevents.1.host" ||
    fail "a new run over a killed one's events: exit status $rc: $out"
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/killed" --quiet --overwrite
[ "$rc" -eq 0 ] && [ ! -e "$dir/killed/events.out.tfevents.1.host" ] ||
    fail "--overwrite over a killed run: exit status $rc: $out"

# --max-seconds stops a long run as Ctrl-C does (saved, exit status 0), saying the limit
# as given; a negative limit is refused.
run "$fastrl" train CartPole-v1 --steps 1000000000 --max-seconds 1.5 --out "$dir/timed" --quiet
[ "$rc" -eq 0 ] && has "stopped after 1.5 s" && [ -f "$dir/timed/checkpoint.frl" ] ||
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

# Numeric options are read whole or refused (exit status 2, naming the option) before
# --out is made: junk, overflow, out of range. Whole numbers written as reals still count.
for bad in "--steps abc" "--steps 99999999999999999999999" "--steps -1" "--steps 2048.5" \
    "--eval-every abc" "--eval-every 0" "--max-seconds abc" "--max-seconds inf" \
    "--eval-target abc --eval-every 2048" "--eval-episodes 0 --eval-every 2048" \
    "--eval-max-steps -1 --eval-every 2048" "--eval-max-steps 1e30 --eval-every 2048"; do
    # shellcheck disable=SC2086 # $bad is an option and its value
    run "$fastrl" train CartPole-v1 $bad --out "$dir/bad" --quiet
    [ "$rc" -eq 2 ] && has "${bad%% *}: '" && has "is not a" ||
        fail "$bad: exit status $rc (want 2 naming the option): $out"
    [ ! -e "$dir/bad" ] || { fail "$bad: made --out before refusing"; rm -rf "$dir/bad"; }
done
run "$fastrl" train CartPole-v1 --steps 2.048e3 --quiet
[ "$rc" -eq 0 ] && has "steps: 2048" || fail "--steps 2.048e3: exit status $rc: $out"
# The evaluation's settings without --eval-every would be ignored: refused.
for opt in "--eval-target 100" "--eval-episodes 5" "--eval-max-steps 100"; do
    # shellcheck disable=SC2086
    run "$fastrl" train CartPole-v1 --steps 2048 $opt --quiet
    [ "$rc" -eq 2 ] && has "${opt%% *} needs --eval-every" ||
        fail "$opt without --eval-every: exit status $rc: $out"
done
# Settings the config refuses are usage errors too, with its reason.
run "$fastrl" train CartPole-v1 --seed -1 --quiet
[ "$rc" -eq 2 ] && has "FRL_ERR_RANGE" && has "runtime.seed" || fail "--seed -1: $rc: $out"

# A resumed run evaluates on an env made with the run's settings (episodes cut at 5
# steps here; the command line's default would allow 500), and its evaluations continue
# the schedule: resumed at 8192 steps with --eval-every 4096 the first comes at 12288,
# not after the first update (10240).
run "$fastrl" train CartPole-v1 --steps 8192 --seed 1 --set env.max_episode_steps=5 \
    --out "$dir/short" --quiet
ok "a run of 5-step episodes"
run "$fastrl" train --resume "$dir/short" --steps 12288 --eval-every 4096 --eval-episodes 4 \
    --quiet
evals=$(echo "$out" | grep '^eval:')
[ "$rc" -eq 0 ] && [ "$(echo "$evals" | wc -l)" -eq 1 ] && has "eval: env_steps=12288 " ||
    fail "resumed evaluations: exit status $rc: want one at 12288: $out"
echo "$evals" | awk -F'mean_return=' '{ split($2, f, " "); if (f[1] + 0 > 5) exit 1 }' ||
    fail "resumed evaluation on an env without the run's 5-step limit: $evals"

# A resumed async run shows its policy lag (the mode is the checkpoint's); --verbose
# prints the ring's memory once (the library's line).
run "$fastrl" train CartPole-v1 --steps 4096 --set sampler.mode=async --out "$dir/async" \
    --quiet
ok "an async run"
run "$fastrl" train --resume "$dir/async" --steps 8192
[ "$rc" -eq 0 ] && has " lag " || fail "a resumed async run: no lag: $out"
run "$fastrl" train CartPole-v1 --steps 2048 --verbose
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c 'ring:')" -eq 1 ] ||
    fail "--verbose: want one ring line: $out"

# In a log (stderr not a terminal) each progress line says something new: a one-update
# run writes its line once, not a running line and then the same final one.
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/log" --overwrite
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c '100%')" -eq 1 ] ||
    fail "a one-update run in a log: want one 100% line: $out"

# --out's missing parents are made, as mkdir -p would (runs/x once failed without runs/);
# a file in the way is named.
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/runs/deep/x" --quiet
[ "$rc" -eq 0 ] && [ -s "$dir/runs/deep/x/checkpoint.frl" ] ||
    fail "--out under missing directories: exit status $rc: $out"
: > "$dir/plainfile"
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/plainfile/x" --quiet
refused "--out under a file" "cannot create $dir/plainfile/x" "Not a directory"
run "$fastrl" train --help
[ "$rc" -eq 0 ] && has "usage: fastrl train ENV" || fail "train --help: exit status $rc: $out"

# A resume that asks for another env count or network is refused in the settings' terms.
run "$fastrl" train --resume "$dir/run" --steps 8192 --quiet --set train.num_envs=3
refused "--resume with train.num_envs=3" "FRL_ERR_INVALID_ARGUMENT" "train.num_envs"
run "$fastrl" train --resume "$dir/run" --steps 8192 --quiet --set policy.hidden=8
refused "--resume with policy.hidden=8" "FRL_ERR_INVALID_ARGUMENT" "policy.hidden"

# A run resumed into another --out that holds a run (--overwrite) starts that directory's
# metrics afresh: the replaced run's rows were kept where their update numbers came
# before the checkpoint's, mixed with the resumed run's, and its TensorBoard events
# file stayed beside the new one (TensorBoard drew both as one run).
run "$fastrl" train Acrobot-v1 --steps 6144 --seed 2 --out "$dir/other" --quiet
ok "a run to replace"
run "$fastrl" train --resume "$dir/run" --steps 8192 --out "$dir/other" --overwrite --quiet
ok "--resume into another run's directory with --overwrite"
rows=$(tail -n +2 "$dir/other/metrics.csv" | cut -d, -f1 | tr '\n' ' ')
[ "$rows" = "3 4 " ] || fail "--resume --out --overwrite: want rows 3 4 alone, got: $rows"
events=$(ls "$dir/other" | grep -c '^events\.out\.tfevents\.')
[ "$events" -eq 1 ] || fail "--overwrite: want one events file, got $events: $(ls "$dir/other")"
# --out naming the resumed run's own directory in other words continues it in place,
# its metrics kept.
run "$fastrl" train --resume "$dir/other" --steps 10240 --out "$dir/./other" --quiet
rows=$(tail -n +2 "$dir/other/metrics.csv" | cut -d, -f1 | tr '\n' ' ')
[ "$rc" -eq 0 ] && [ "$rows" = "3 4 5 " ] || fail "--out DIR/./other: exit $rc, rows $rows: $out"
# The same for a new run over another with --overwrite: one events file, its own.
run "$fastrl" train CartPole-v1 --steps 2048 --out "$dir/other" --overwrite --quiet
ok "--overwrite over a resumed run"
events=$(ls "$dir/other" | grep -c '^events\.out\.tfevents\.')
[ "$events" -eq 1 ] || fail "--overwrite (new run): want one events file, got $events"

# --steps is the run's total: resuming a run that has done as many says so (exit 0, the
# checkpoint as it was) rather than printing 0 steps/s as if it had trained.
cp "$dir/run/checkpoint.frl" "$dir/saved.frl"
run "$fastrl" train --resume "$dir/run" --steps 2048 --quiet
[ "$rc" -eq 0 ] && has "has done 4096 env steps" && has "nothing to train" ||
    fail "resuming a finished run: exit status $rc: $out"
cmp -s "$dir/run/checkpoint.frl" "$dir/saved.frl" || fail "resuming a finished run changed it"

# A resumed run keeps its saved seed, so another --seed (or runtime.seed) with --resume
# is refused, naming both, before anything changes (it was ignored: the run went on with
# the saved seed, exit 0); the run's own seed is accepted.
run "$fastrl" train CartPole-v1 --steps 2048 --seed 5 --out "$dir/seeded" --quiet
ok "a run with --seed 5"
cp "$dir/seeded/checkpoint.frl" "$dir/saved.frl"
for opt in "--seed 6" "--set runtime.seed=6"; do
    # shellcheck disable=SC2086 # an option and its value
    run "$fastrl" train --resume "$dir/seeded" --steps 4096 $opt --quiet
    [ "$rc" -eq 2 ] && has "seed 6" && has "saved seed, 5" || fail "$opt with --resume: $rc: $out"
done
# So is another train.seed_offset (it was ignored, the settings record saying otherwise),
# alone or with a --seed whose sum with it is another seed.
for opt in "--set train.seed_offset=1" "--seed 5 --set train.seed_offset=1"; do
    # shellcheck disable=SC2086 # options and their values
    run "$fastrl" train --resume "$dir/seeded" --steps 4096 $opt --quiet
    [ "$rc" -eq 2 ] && has "seed 5, train.seed_offset 1" &&
        has "saved seed, 5, and train.seed_offset, 0" || fail "$opt with --resume: $rc: $out"
done
cmp -s "$dir/seeded/checkpoint.frl" "$dir/saved.frl" || fail "a refused seed changed the run"
run "$fastrl" train --resume "$dir/seeded" --steps 4096 --seed 5 --quiet
ok "--resume with the run's own --seed"

# SIGTERM (a batch system's stop, docker stop, a CI timeout) stops as Ctrl-C does: the
# update ends, the checkpoint is written, and the exit status is 143 (128 + 15).
csv="$dir/term/metrics.csv"
"$fastrl" train CartPole-v1 --steps 1000000000 --quiet --out "$dir/term" \
    > "$dir/term.log" 2>&1 &
pid=$!
n=0
until [ "$(cat "$csv" 2>/dev/null | wc -l)" -ge 2 ] || [ $n -ge 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" -eq 143 ] && [ -s "$dir/term/checkpoint.frl" ] &&
    grep -q "continue with --resume" "$dir/term.log" ||
    fail "SIGTERM: exit status $rc: $(cat "$dir/term.log")"
run "$fastrl" train --resume "$dir/term" --steps 4096 --quiet
ok "--resume after SIGTERM"

# On a terminal the last progress line clears what the running one left to its right (a
# long ETA stayed: "ETA 0:0023"), a run stopped short of --steps by --max-seconds shows
# its ETA, not 0:00, and the time limit's message starts a line. util-linux's script
# gives the run a terminal; without it, skip.
if script -qc true /dev/null > /dev/null 2>&1; then
    tty_all=$(script -qc "'$fastrl' train CartPole-v1 --steps 1000000000 --max-seconds 2" \
        /dev/null | tr '\r' '\n')
    tty_out=$(echo "$tty_all" | grep '^\[' | tail -n 1)
    # ... and the time limit's line is a line of its own, not the bar's tail.
    echo "$tty_all" | grep -q '^time limit: stopped' ||
        fail "on a terminal the time limit's line follows the bar on its line: $tty_all"
    # Ctrl-C on a terminal: the bar's last line ends before "checkpoint: ..." (it was
    # written onto the bar's line), and the exit status is 130.
    # (the signal once the first update's metrics row is written: training has begun)
    csv="$dir/int/metrics.csv"
    tty_all=$(script -qc "'$fastrl' train CartPole-v1 --steps 1000000000 --out '$dir/int' &
        n=0; until [ \$(cat '$csv' 2>/dev/null | wc -l) -ge 2 ] || [ \$n -ge 600 ]; do
        sleep 0.1; n=\$((n + 1)); done; kill -INT \$!; wait \$!; echo rc=\$?" /dev/null |
        tr '\r' '\n')
    echo "$tty_all" | grep -q '^checkpoint: ' && echo "$tty_all" | grep -q '^rc=130' ||
        fail "Ctrl-C on a terminal: $tty_all"
    esc=$(printf '\033')
    case $tty_out in
        *"ETA 0:00"*) fail "a stopped run's last line says ETA 0:00: $tty_out" ;;
    esac
    case $tty_out in
        *"$esc[K"*) ;;
        *) fail "the last progress line on a terminal does not clear the line: $tty_out" ;;
    esac
else
    echo "skip: no util-linux script for a terminal"
fi

# --overwrite without --out has nothing to replace: refused, not ignored (with --resume
# alone the run went on as if it were not there).
run "$fastrl" train --resume "$dir/run" --steps 2048 --overwrite --quiet
[ "$rc" -eq 2 ] && has "--overwrite goes with --out" || fail "--overwrite alone: $rc: $out"

# An empty --out or --resume is refused as a usage error (--resume '' read
# /checkpoint.frl, a file at the root).
for opt in --out --resume; do
    run "$fastrl" train CartPole-v1 "$opt" "" --steps 2048 --quiet
    [ "$rc" -eq 2 ] && has "$opt: an empty path" || fail "$opt '': exit status $rc: $out"
done

# A path option followed by an option takes no value from it: "--out --quiet" made a
# directory called --quiet (and trained into it); refused as a usage error, as an
# empty path is. Run where a stray ./--quiet would show.
here=$(pwd)
case $fastrl in /*) ;; *) fastrl=$here/$fastrl ;; esac
cd "$dir" || exit 1
for opt in --out --resume; do
    run "$fastrl" train CartPole-v1 "$opt" --quiet --steps 2048
    [ "$rc" -eq 2 ] && has "$opt takes a DIR, not an option ('--quiet'" && [ ! -e ./--quiet ] ||
        fail "$opt --quiet: exit status $rc: $out"
    rm -rf ./--quiet
done
cd "$here" || exit 1

# A failed periodic evaluation is said in its own words, not as "the metrics callback
# returned 1": without a time limit Pendulum's episodes never end, and the evaluation
# runs into its step limit, --eval-max-steps (the default, 10M steps, took 290 s of
# this test's 293 under TSan).
run "$fastrl" train Pendulum-v1 --steps 4096 --threads 1 --quiet --eval-every 4096 \
    --eval-episodes 1 --eval-max-steps 20000 --set env.max_episode_steps=0
[ "$rc" -eq 1 ] && has "FRL_ERR_RANGE" && has "frl_policy_evaluate" && ! has "callback" &&
    has "max_steps 20000 allows no further step" && has "eval-max-steps M sets it" ||
    fail "a failed --eval-every evaluation: exit status $rc: $out"

# --eval-max-steps 0 lifts the limit; episodes that end still end the evaluation.
run "$fastrl" train CartPole-v1 --steps 2048 --eval-every 2048 --eval-episodes 2 \
    --eval-max-steps 0 --quiet
[ "$rc" -eq 0 ] && has "eval: env_steps=2048 " ||
    fail "--eval-max-steps 0: exit status $rc: $out"

# A launcher's rank (srun, mpirun) is a distributed run's only with dist.mode: rank 1 of
# a job of single-process runs printed nothing, replaced a run without --overwrite,
# and exited 0 after SIGTERM.
for var in SLURM_PROCID OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK; do
    run env "$var=1" "$fastrl" train CartPole-v1 --steps 2048 --threads 1 --out "$dir/run"
    [ "$rc" -eq 2 ] && has "already holds a run" || fail "$var=1 over a run: $rc: $out"
done
run env SLURM_PROCID=1 "$fastrl" train CartPole-v1 --steps 2048 --threads 1
[ "$rc" -eq 0 ] && has "100%" && has "mean_return:" || fail "SLURM_PROCID=1: $rc: $out"
csv="$dir/rank1/metrics.csv"
SLURM_PROCID=1 "$fastrl" train CartPole-v1 --steps 1000000000 --threads 1 --quiet \
    --out "$dir/rank1" > "$dir/rank1.log" 2>&1 &
pid=$!
n=0
until [ "$(cat "$csv" 2>/dev/null | wc -l)" -ge 2 ] || [ $n -ge 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" -eq 143 ] && grep -q "continue with --resume" "$dir/rank1.log" ||
    fail "SIGTERM with SLURM_PROCID=1: exit status $rc: $(cat "$dir/rank1.log")"

# A signal in the final save only marks the run, as in training: the handlers were
# reset once training returned, and SIGTERM then killed the save of a finished run,
# which kept no checkpoint. A large network (uniform weights are quick to make) makes
# the save long enough to signal within it, once the last update's line is written.
"$fastrl" train CartPole-v1 --steps 8 --threads 1 --set train.num_envs=1 \
    --set train.rollout=8 --set train.epochs=1 --set train.minibatches=1 \
    --set policy.hidden=1536,1536 --set policy.init=uniform --out "$dir/late" \
    > "$dir/late.log" 2>&1 &
pid=$!
n=0
until grep -q '100%' "$dir/late.log" || [ $n -ge 1000 ]; do
    sleep 0.02
    n=$((n + 1))
done
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" -eq 0 ] && [ -s "$dir/late/checkpoint.frl" ] && grep -q "^checkpoint: " "$dir/late.log" ||
    fail "SIGTERM in the final save: exit status $rc: $(cat "$dir/late.log")"
rm -rf "$dir/late"

# A run whose last update passes --steps (here 2048 steps an update for 1000) has
# nothing left: its last line says ETA 0:00, not --:--.
run "$fastrl" train CartPole-v1 --steps 1000 --threads 1
[ "$rc" -eq 0 ] && has "ETA 0:00" && ! has "ETA --:--" || fail "--steps 1000: $out"

# bench train counts the epochs the learner runs: A2C makes one whatever train.epochs
# says (it counted 4, and reported 1.5 times the floor it could reach).
flops() {
    "$fastrl" bench train CartPole-v1 --steps 400 --threads 1 --set train.algo=a2c "$@" |
        sed -n 's/^network FLOPs per env step: \([^ ]*\) K.*/\1/p'
}
one=$(flops --set train.epochs=1)
four=$(flops --set train.epochs=4)
[ -n "$one" ] && [ "$one" = "$four" ] ||
    fail "bench train a2c: FLOPs per step $one K with train.epochs=1, $four K with 4"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all cases passed"
