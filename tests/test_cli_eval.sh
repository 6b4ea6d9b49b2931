#!/bin/sh
# `fastrl eval` on files it must refuse, each with the reason: a missing path, an empty
# file, a directory, a foreign file, a corrupted checkpoint, a bare policy without
# --env, and checkpoints evaluated on an env whose spaces differ from the policy's;
# then the cases that must work (a checkpoint, a bare policy with --env, a checkpoint
# whose env.* settings shape its environment); numeric options read strictly, and the
# step limit (--max-steps) said in the CLI's terms.
#
#   test_cli_eval.sh FASTRL CLI_MAKE_POLICY
#
# Every failing case must exit non-zero, print the reader's (or the library's)
# message, and never call a file that is not a policy "a bare policy".
set -u
fastrl=$1
make_policy=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_eval.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

# refused NAME TEXT...: the last run exited non-zero, printed every TEXT and did not
# blame a missing --env.
refused() {
    name=$1
    shift
    before=$failures
    [ "$rc" -ne 0 ] || fail "$name: exit status 0 (want non-zero); output: $out"
    for want in "$@"; do
        has "$want" || fail "$name: output lacks '$want': $out"
    done
    has "bare policy" && fail "$name: blamed on a bare policy: $out"
    [ "$failures" -eq "$before" ] && echo "ok: $name: $out"
}

# The one-line flip of byte $2 of file $1 (its bits inverted), with od and dd only.
flip_byte() {
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((255 - b)))" |
        dd of="$1" bs=1 seek="$2" count=1 conv=notrunc 2>/dev/null
}

train() {
    "$fastrl" train "$1" --steps 2000 --seed 1 --out "$dir/$2" --quiet >/dev/null 2>&1 ||
        { echo "cannot train $1 (setup failed)"; exit 1; }
}

train CartPole-v1 cartpole
train Pendulum-v1 pendulum
train MountainCar-v0 mountaincar
"$make_policy" CartPole-v1 "$dir/bare.frl" || { echo "cannot save a policy"; exit 1; }

run "$fastrl" eval "$dir/missing.frl"
refused "missing path" "FRL_ERR_IO" "missing.frl" "No such file or directory"

: >"$dir/empty.frl"
run "$fastrl" eval "$dir/empty.frl"
refused "empty file" "FRL_ERR_FORMAT" "empty file, not a fastrl checkpoint"

mkdir "$dir/adir"
run "$fastrl" eval "$dir/adir"
refused "directory" "FRL_ERR_IO" "not a regular file"

echo "not a checkpoint at all, but long enough to hold a header of sixty-four bytes" \
    >"$dir/text.frl"
run "$fastrl" eval "$dir/text.frl"
refused "foreign file" "FRL_ERR_FORMAT" "text.frl"

# A byte in the middle of the compressed payload: the payload's checksum catches it.
cp "$dir/cartpole/checkpoint.frl" "$dir/corrupt.frl"
size=$(wc -c <"$dir/corrupt.frl")
flip_byte "$dir/corrupt.frl" $((size / 2))
cmp -s "$dir/corrupt.frl" "$dir/cartpole/checkpoint.frl" && fail "the byte was not flipped"
run "$fastrl" eval "$dir/corrupt.frl"
refused "corrupted checkpoint" "FRL_ERR_FORMAT" "checksum mismatch"
# The flip in the header's checksummed bytes is caught too, with --env given.
cp "$dir/cartpole/checkpoint.frl" "$dir/corrupt_header.frl"
flip_byte "$dir/corrupt_header.frl" 20
run "$fastrl" eval "$dir/corrupt_header.frl" --env CartPole-v1
refused "corrupted header with --env" "FRL_ERR_FORMAT" "header checksum mismatch"

# A bare policy names no environment: this is the one case for the --env hint.
run "$fastrl" eval "$dir/bare.frl"
[ "$rc" -eq 2 ] || fail "bare policy: exit status $rc (want 2): $out"
has "bare.frl is a bare policy; name its environment with --env" ||
    fail "bare policy: no --env hint: $out"
[ "$rc" -eq 2 ] && echo "ok: bare policy without --env: $out"

# Spaces that differ: Pendulum's 3 observations against CartPole's 4, and MountainCar's
# discrete(3) actions against MountainCarContinuous' box[1] (both 2 observations, both
# one action value wide: only the space check tells them apart).
run "$fastrl" eval "$dir/pendulum/checkpoint.frl" --env CartPole-v1 --episodes 4
refused "Pendulum checkpoint on CartPole-v1" "FRL_ERR_SIZE" "observation spaces" \
    "box[3] and box[4]"
run "$fastrl" eval "$dir/mountaincar/checkpoint.frl" --env MountainCarContinuous-v0 \
    --episodes 4
refused "MountainCar checkpoint on MountainCarContinuous-v0" "FRL_ERR_SIZE" \
    "action spaces" "discrete(3) and box[1]"

run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --env NoSuchEnv-v0
refused "unknown env" "FRL_ERR_UNKNOWN_NAME" "NoSuchEnv-v0"
# An empty --env, or an option in its place, is a usage error naming --env (an empty
# one was read as none: "a bare policy; name its environment with --env").
run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --env ''
[ "$rc" -eq 2 ] && has "--env: an empty name" && ! has "bare policy" ||
    fail "--env '': exit status $rc: $out"
run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --env --deterministic
[ "$rc" -eq 2 ] && has "--env takes an ENV, not an option ('--deterministic')" ||
    fail "--env --deterministic: exit status $rc: $out"

# What must work.
run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --episodes 10 --deterministic
[ "$rc" -eq 0 ] || fail "checkpoint: exit status $rc: $out"
for line in "episodes: 10" "mean_return: " "std_return: " "min_return: " "max_return: " \
    "mean_length: "; do
    has "$line" || fail "checkpoint: output lacks '$line': $out"
done
first=$out
run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --episodes 10 --deterministic
[ "$out" = "$first" ] || fail "checkpoint: two runs differ: '$first' and '$out'"
echo "checkpoint: $(echo "$out" | tr '\n' ' ')"

run "$fastrl" eval "$dir/bare.frl" --env CartPole-v1 --episodes 3
[ "$rc" -eq 0 ] && has "episodes: 3" || fail "bare policy with --env: exit $rc: $out"
echo "bare policy with --env: $(echo "$out" | tr '\n' ' ')"

# The environment is made with the run's env.* settings: MemoryProbe trained with 6 cues
# and a delay of 3 has 7 observations and episodes of 3 + 2 steps.
"$fastrl" train MemoryProbe-v0 --steps 2000 --seed 1 --out "$dir/probe" --quiet \
    --set env.memory_cues=6 --set env.memory_delay=3 >/dev/null 2>&1 ||
    fail "cannot train MemoryProbe-v0"
run "$fastrl" eval "$dir/probe/checkpoint.frl" --episodes 12
[ "$rc" -eq 0 ] && has "mean_length: 5.00" || fail "MemoryProbe with its settings: $rc: $out"
echo "MemoryProbe with its settings: $(echo "$out" | tr '\n' ' ')"

# Numbers are read whole or refused as usage errors naming the option: 4294967297 does
# not wrap to 1, junk is not 0.
for bad in "--episodes 0" "--episodes 4294967297" "--episodes abc" "--seed abc" \
    "--seed -1" "--max-steps -1"; do
    # shellcheck disable=SC2086 # $bad is an option and its value
    run "$fastrl" eval "$dir/cartpole/checkpoint.frl" $bad
    [ "$rc" -eq 2 ] && has "${bad%% *}: '" || fail "$bad: exit $rc (want 2): $out"
done

# The evaluation's step limit (frl_eval_args.max_steps) is the CLI's --max-steps, and
# running into it says so in the CLI's terms; without an episode time limit it says that.
run "$fastrl" eval "$dir/cartpole/checkpoint.frl" --episodes 5 --max-steps 10
[ "$rc" -eq 1 ] && has "0 of 5 episodes ended within 10 env steps" && has "raise --max-steps" &&
    ! has "args->" || fail "--max-steps 10: exit $rc: $out"
"$fastrl" train CartPole-v1 --steps 2048 --seed 1 --out "$dir/nolimit" --quiet \
    --set env.max_episode_steps=0 >/dev/null 2>&1 || fail "cannot train without a time limit"
run "$fastrl" eval "$dir/nolimit/checkpoint.frl" --episodes 5 --max-steps 10
[ "$rc" -eq 1 ] && has "no episode time limit" || fail "no time limit, --max-steps 10: $out"
run "$fastrl" eval "$dir/nolimit/checkpoint.frl" --episodes 5 --max-steps 0
[ "$rc" -eq 0 ] && has "episodes: 5" || fail "--max-steps 0: exit $rc: $out"

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all cases passed"
