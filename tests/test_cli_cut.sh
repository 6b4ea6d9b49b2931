#!/bin/sh
# `fastrl cut`: a short elastic run on Pendulum, then its Pareto front, a cut for a
# budget (saved, evaluated by `fastrl eval`, exported, and run by examples/robot_loop,
# as a controller would), a cut by architecture, and the refusals: an unknown width or a
# malformed --arch, a budget no sub-policy meets (naming the fastest), a checkpoint of a
# plain run, a cut policy, a latency model of another batch, of another machine or
# truncated, malformed or repeated probe times, --out with --list alone or where it
# cannot be written, a latency model of another run with --arch.
#
#   test_cli_cut.sh FASTRL ROBOT_LOOP
set -u
fastrl=$1
robot_loop=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_cut.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

small="--set train.num_envs=4 --set train.rollout=256 --set policy.hidden=16,16"
run "$fastrl" train Pendulum-v1 --steps 16384 --seed 3 --quiet --out "$dir/el" $small \
    --set elastic.widths=4,8 --set elastic.full_fraction=0.25
ok "elastic run"
run "$fastrl" train Pendulum-v1 --steps 2048 --seed 3 --quiet --out "$dir/plain" $small
ok "plain run"
ck="$dir/el/checkpoint.frl"

run "$fastrl" cut "$ck" --list --episodes 4 --latency-model "$dir/model.txt"
ok "list"
has "Pareto front at batch 1" || fail "list: no front: $out"
[ -s "$dir/model.txt" ] || fail "list: the latency model was not written"
# A budget every sub-policy meets: the best return is chosen, measured, saved.
run "$fastrl" cut "$ck" --latency-us 1000000 --episodes 4 --latency-model "$dir/model.txt" \
    --out "$dir/cut.frl"
ok "budget"
for k in widths: predicted_us: measured_us: return: "saved: $dir/cut.frl"; do
    has "$k" || fail "budget: output lacks '$k': $out"
done
run "$fastrl" eval "$dir/cut.frl" --env Pendulum-v1 --episodes 2
ok "eval of the cut policy"
run "$fastrl" export "$dir/cut.frl" --onnx "$dir/cut.onnx"
ok "ONNX export of the cut policy"
[ -s "$dir/cut.onnx" ] || fail "the cut policy's ONNX file is missing"
run "$robot_loop" "$dir/cut.frl" --iterations 200
ok "robot_loop on the cut policy"
has "p99" || fail "robot_loop: no latency percentiles: $out"
run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 --out "$dir/cut48.frl"
ok "by architecture"
has "widths: 4,8" || fail "by architecture: $out"
run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 --out "$ck"
[ "$rc" -eq 2 ] && has "checkpoint itself" || fail "--out over its own checkpoint: $out"
# The latency model is never written over the checkpoint, --out or the probe times.
cp "$ck" "$dir/kept.frl"
printf '# widths ns\n4 310\n8 420\n16,16 960\n' > "$dir/times.txt"
run "$fastrl" cut "$ck" --fit-latency "$dir/times.txt" --latency-us 0.8 --episodes 2 \
    --latency-model "$ck"
refused "--latency-model over the checkpoint" "which the model would replace"
cmp -s "$ck" "$dir/kept.frl" || fail "the refused --latency-model changed the checkpoint"
run "$fastrl" cut "$ck" --fit-latency "$dir/times.txt" --latency-us 0.8 --episodes 2 \
    --latency-model "$dir/times.txt"
refused "--latency-model over the probe times" "which the model would replace"
run "$fastrl" cut "$ck" --latency-us 1000000 --episodes 2 --latency-model "$dir/same.frl" \
    --out "$dir/same.frl"
refused "--latency-model as --out" "which the model would replace"
[ ! -e "$dir/same.frl" ] || fail "the refused --latency-model/--out pair wrote a file"
# ...nor spelled two ways before either exists (DIR/./same.txt and DIR/same.txt)
run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 --latency-model "$dir/./same.txt" \
    --out "$dir/same.txt"
refused "--latency-model as --out, spelled another way" "which the model would replace"
[ ! -e "$dir/same.txt" ] || fail "the refused ./same.txt/same.txt pair wrote a file"
# --out is not the probe times either; an empty --out is refused before any work.
printf '4 310\n8 420\n16,16 960\n' > "$dir/times_out.txt"
cp "$dir/times_out.txt" "$dir/times_kept.txt"
run "$fastrl" cut "$ck" --fit-latency "$dir/times_out.txt" --arch 4,8 --episodes 2 \
    --out "$dir/times_out.txt"
[ "$rc" -eq 2 ] && has "names the --fit-latency file" || fail "--out over the probe times: $out"
cmp -s "$dir/times_out.txt" "$dir/times_kept.txt" || fail "--out changed the probe times"
run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 --out ''
[ "$rc" -eq 2 ] && has "--out: an empty path" && ! has "return:" ||
    fail "an empty --out, refused first: $out"
# So are an empty --latency-model and --fit-latency, and a path option followed by an
# option, as train's and export's are (--out --list wrote the cut to a file called
# --list). Run where a stray ./--list would show.
for opt in --latency-model --fit-latency; do
    run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 "$opt" ''
    [ "$rc" -eq 2 ] && has "$opt: an empty path" || fail "an empty $opt: exit $rc: $out"
done
here=$(pwd)
case $fastrl in /*) ;; *) fastrl=$here/$fastrl ;; esac
cd "$dir" || exit 1
for opt in --out --latency-model --fit-latency; do
    run "$fastrl" cut "$ck" --latency-us 1000 --episodes 2 "$opt" --list
    [ "$rc" -eq 2 ] && has "$opt takes a FILE, not an option ('--list'" && [ ! -e ./--list ] ||
        fail "$opt --list: exit $rc: $out"
    rm -f ./--list
done
cd "$here" || exit 1

# A model file with a NUL byte (a NUL ended its text early, so a file cut short read as
# whole), and one that is a directory: refused, not measured again over it.
head -c 200 "$dir/model.txt" > "$dir/nul.txt"
printf '\000\000\000\000' >> "$dir/nul.txt"
tail -c +201 "$dir/model.txt" >> "$dir/nul.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/nul.txt"
[ "$rc" -eq 1 ] && has "a NUL byte" || fail "a latency model with a NUL byte: $out"
# A model cut short at a line's end (its last layer line gone): the layer it lacks is
# named as missing, not priced as free.
grep -v "$(grep '^layer ' "$dir/model.txt" | tail -n 1)" "$dir/model.txt" > "$dir/short.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/short.txt"
[ "$rc" -eq 1 ] && has "cut short" || fail "a latency model without its last layer: $out"
# A model without its deepest depth's intercept line names that line.
grep -v '^intercept_us 2 ' "$dir/model.txt" > "$dir/no_intercept.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/no_intercept.txt"
[ "$rc" -eq 1 ] && has "intercept_us line of depth 2" ||
    fail "a latency model without depth 2's intercept: $out"
mkdir "$dir/model_dir"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/model_dir"
[ "$rc" -eq 1 ] && [ -d "$dir/model_dir" ] && has "not a regular file" ||
    fail "a directory as the latency model: $out"
# A FIFO no one writes: fopen waited for a writer for good; now refused at once (timeout
# turns a hang into a failure).
mkfifo "$dir/fifo"
run timeout 60 "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/fifo"
[ "$rc" -eq 1 ] && has "not a regular file" || fail "a FIFO as the latency model: $out"
run timeout 60 "$fastrl" cut "$ck" --fit-latency "$dir/fifo" --latency-us 1
[ "$rc" -eq 1 ] && has "not a regular file" || fail "a FIFO as the probe times: $out"
run "$fastrl" cut "$ck" --fit-latency "$dir/model_dir" --latency-us 1
[ "$rc" -eq 1 ] && has "not a regular file" || fail "a directory as the probe times: $out"

# Another target's probe times (ns a call) fit a batch-1 model; nothing is measured here.
printf '# widths ns\n4 310\n8 420\n16,16 960\n' > "$dir/times.txt"
run "$fastrl" cut "$ck" --fit-latency "$dir/times.txt" --latency-us 0.8 --episodes 2 \
    --latency-model "$dir/target.txt"
ok "fitted from probe times"
has "measured_us: n/a" || fail "fitted: measured here: $out"
grep -q "kernels probe" "$dir/target.txt" || fail "fitted: the model file does not say probe"
# bad_probes FILE CONTENT NAME WANT...: a fit from probe times FILE holds is refused,
# its output holding each WANT.
bad_probes() {
    file=$1 content=$2
    shift 2
    printf '%b' "$content" > "$dir/$file"
    run "$fastrl" cut "$ck" --fit-latency "$dir/$file" --latency-us 1
    refused "$@"
}
bad_probes few.txt '4 310\n8 420\n' "two probe times" "at least 3 architectures"
bad_probes bad.txt '4 310\n5 420\n16,16 960\n' "a probe time of an unknown width" \
    "bad.txt:2" "width 5"
run "$fastrl" cut "$ck" --fit-latency "$dir/times.txt" --latency-us 1 --batch 4
refused "a probe model at batch 4" "leave --batch at 1"
# A line is "WIDTHS NS" and nothing more, and each architecture comes once: a third
# field, a unit, or a repeated line (which once made 2 architectures pass for the 3 a
# fit needs) is refused at its line.
bad_probes junk.txt '4 310\n8 420 junk\n16,16 960\n' "a probe line with junk" "junk.txt:2" \
    "nothing more"
bad_probes unit.txt '4 310ns\n8 420\n16,16 960\n' "a probe time with a unit" "unit.txt:1"
bad_probes twice.txt '4 310\n8 420\n8 420\n' "a repeated probe line" "twice.txt:3" "line 2"
bad_probes again.txt '4 310\n8 420\n16,16 960\n4 300\n' "an architecture timed twice" \
    "again.txt:4" "line 1"
bad_probes comma.txt '4, 310\n8 420\n16,16 960\n' "a probe line's trailing comma" "comma.txt:1"
# Comment lines may be indented and of any length (a long one was read as lines).
long=$(printf '%0300d' 0)
printf '# %s\n  # indented\n4 310\n8 420\n16,16 960\n' "$long" > "$dir/comments.txt"
run "$fastrl" cut "$ck" --fit-latency "$dir/comments.txt" --latency-us 0.8 --episodes 2
ok "probe times with long and indented comments"

# Once-for-all's evolutionary search (what spaces of more than 4,096 architectures get).
run "$fastrl" cut "$ck" --search evolution --latency-us 1000000 --episodes 2
ok "evolutionary search"
has "widths:" || fail "evolutionary search: $out"
run "$fastrl" cut "$ck" --search random --list
refused "unknown search" "exhaustive or evolution"
# An exhaustive search asked for over more than 4,096 architectures (here 8 + 64 + 512 +
# 4,096) is refused, not silently run as the evolutionary one.
run "$fastrl" train Pendulum-v1 --steps 1024 --seed 3 --quiet --out "$dir/deep" \
    --set train.num_envs=4 --set train.rollout=256 --set policy.hidden=8,8,8,8 \
    --set elastic.widths=1,2,3,4,5,6,7
ok "deep elastic run"
run "$fastrl" cut "$dir/deep/checkpoint.frl" --search exhaustive --list --episodes 1 \
    --latency-model "$dir/deep_model.txt"
refused "exhaustive search of 4,680 architectures" "--search exhaustive" "4680 architectures"

run "$fastrl" cut "$ck" --arch 5,8 --episodes 2
refused "unknown width" "width 5" "takes 4,8,16"
run "$fastrl" cut "$ck" --arch 8,8,8 --episodes 2
refused "too deep" "depth 3"
# --arch's text is read whole before the checkpoint is: an empty element ("8," once cut
# depth 1) or junk is a usage error.
for bad in "8," "8,,8" ",8" "" "8,x" "+8"; do
    run "$fastrl" cut "$ck" --arch "$bad" --episodes 2 --out "$dir/never.frl"
    [ "$rc" -eq 2 ] && has "--arch: elastic architecture \"$bad\"" ||
        fail "--arch '$bad': exit status $rc (want 2): $out"
done
[ ! -e "$dir/never.frl" ] || fail "a refused --arch wrote its --out"
# --out with --list alone (no budget: nothing is cut) is refused, not ignored.
run "$fastrl" cut "$ck" --list --episodes 2 --out "$dir/never.frl"
[ "$rc" -eq 2 ] && has "cuts nothing" || fail "--list --out: exit status $rc: $out"
[ ! -e "$dir/never.frl" ] || fail "--list --out wrote a file"
# An --out that cannot be written is found before the work: the latency model, measured
# and written first, is not there.
run "$fastrl" cut "$ck" --latency-us 1000000 --episodes 2 --out "$dir/no/such/cut.frl" \
    --latency-model "$dir/fresh.txt"
refused "an unwritable --out" "--out $dir/no/such/cut.frl" "$dir/no/such does not exist"
[ ! -e "$dir/fresh.txt" ] || fail "the unwritable --out was found after measuring"
run "$fastrl" cut "$ck" --arch 4,8 --episodes 2 --out "$dir"
refused "--out a directory" "is a directory"
run "$fastrl" cut "$ck" --latency-us 1000000 --latency-model "$dir/no/model.txt"
refused "an unwritable --latency-model" "--latency-model $dir/no/model.txt"
# A cut policy (a plain policy file) cut again: said to be a policy file, not a run
# trained without elastic.widths.
run "$fastrl" cut "$dir/cut48.frl" --list --episodes 2
refused "a cut policy cut again" "is a policy file" "not a trainer checkpoint"
has "trained without elastic.widths" && fail "a cut policy: said to be a plain run: $out"
run "$fastrl" cut "$ck" --latency-us 0.0001 --latency-model "$dir/model.txt"
refused "budget none meets" "no sub-policy meets" "the fastest, widths"
# Measured times need not grow with the widths (at batch 1 a width-8 layer can time
# faster than a width-4 one), so the fastest is not the narrowest of some depth: here
# width-4 layers cost 5 us, width-8 ones 1 and width-16 ones 2, depth 1's call 10 us
# and depth 2's none, and 8,8 (3 us) is the fastest; the error once named 4,4 at 15.
{
    grep -E '^(fastrl-latency-model|batch|deterministic|kernels|machine) ' "$dir/model.txt"
    printf 'intercept_us 1 10.0\nintercept_us 2 0.0\n'
    awk '$1 == "layer" { w = $3 == 1 ? $2 : $3
                         print "layer", $2, $3, $4, w == 4 ? "5.0" : w == 8 ? "1.0" : "2.0" }' \
        "$dir/model.txt"
} > "$dir/bumpy.txt"
run "$fastrl" cut "$ck" --latency-us 1 --episodes 2 --latency-model "$dir/bumpy.txt"
refused "budget none meets, times not growing with widths" "no sub-policy meets" \
    "the fastest, widths 8,8, is predicted at 3.000 us"
# A budget that little more than the fastest sub-policy meets: both searches find one
# (the evolution's random draws may all miss it; then it tries the fastest). The model
# fitted from probe times makes the choice measurement-free.
run "$fastrl" cut "$ck" --latency-us 0.0001 --latency-model "$dir/target.txt" --episodes 2 \
    --deterministic
fastest=$(printf '%s\n' "$out" | sed -n 's/.*is predicted at \([0-9.]*\) us.*/\1/p')
[ -n "$fastest" ] || fail "no fastest sub-policy named: $out"
budget=$(awk "BEGIN { print $fastest + 0.0005 }")
for search in exhaustive evolution; do
    run "$fastrl" cut "$ck" --search $search --latency-us "$budget" --episodes 2 \
        --latency-model "$dir/target.txt" --deterministic
    ok "$search search at the fastest's budget"
    has "widths:" || fail "$search at the fastest's budget: $out"
done
# Sub-policies of equal return (an untrained MountainCar policy: -200 each) are not
# equally good: the faster dominates, so a budget every one meets takes the front's
# last member. The cut once took the first enumerated (widths 4, 20 us here), which
# the front it printed did not hold (8,8 at 3 us).
run "$fastrl" train MountainCar-v0 --steps 1024 --seed 3 --quiet --out "$dir/mc" \
    --set train.num_envs=4 --set train.rollout=128 --set policy.hidden=16,16 \
    --set elastic.widths=4,8 --set elastic.full_fraction=0.25
ok "MountainCar elastic run"
run "$fastrl" cut "$dir/mc/checkpoint.frl" --arch 4 --episodes 1 --deterministic \
    --latency-model "$dir/mc_model.txt"
ok "MountainCar latency model"
{
    grep -E '^(fastrl-latency-model|batch|deterministic|kernels|machine) ' "$dir/mc_model.txt"
    printf 'intercept_us 1 10.0\nintercept_us 2 0.0\n'
    awk '$1 == "layer" { w = $4 == 0 ? $2 : $3
                         print "layer", $2, $3, $4, w == 4 ? "5.0" : w == 8 ? "1.0" : "2.0" }' \
        "$dir/mc_model.txt"
} > "$dir/mc_bumpy.txt"
run "$fastrl" cut "$dir/mc/checkpoint.frl" --list --latency-us 1000000 --episodes 2 \
    --deterministic --latency-model "$dir/mc_bumpy.txt"
ok "front and cut of equal returns"
last=$(printf '%s\n' "$out" | awk '/^widths  / { front = 1; next } /^widths:/ { front = 0 }
                                    front && NF == 4 { w = $1 } END { print w }')
[ -n "$last" ] && has "widths: $last
" || fail "the cut is not the front's best (last) member '$last': $out"
# Architectures of equal predicted latency: only the best return among them is on the
# front (the others are dominated). With every one predicted at 3 us, the front once
# listed each that beat those enumerated before it.
{
    grep -E '^(fastrl-latency-model|batch|deterministic|kernels|machine) ' "$dir/model.txt"
    printf 'intercept_us 1 1.0\nintercept_us 2 0.0\n'
    awk '$1 == "layer" { print "layer", $2, $3, $4, "1.0" }' "$dir/model.txt"
} > "$dir/flat.txt"
run "$fastrl" cut "$ck" --list --episodes 4 --latency-model "$dir/flat.txt"
ok "front of equal latencies"
rows=$(printf '%s\n' "$out" | grep -c ' 3\.000 ')
[ "$rows" -eq 1 ] || fail "a front of equal latencies lists $rows architectures: $out"
run "$fastrl" cut "$dir/plain/checkpoint.frl" --list
refused "plain checkpoint" "not an elastic run's checkpoint"
run "$fastrl" cut "$ck" --list --batch 8 --latency-model "$dir/model.txt"
refused "model of another batch" "measured at batch 1, not 8"
# A model measured on another machine (another CPU, or other kernels) is refused: its
# times do not hold here, and it was once used without a word.
grep -q "^machine " "$dir/model.txt" || fail "the latency model does not name its machine"
sed 's/^machine .*/machine Some Other CPU @ 1.00GHz/' "$dir/model.txt" > "$dir/other.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/other.txt"
refused "model of another CPU" "on Some Other CPU @ 1.00GHz" "do not hold here"
sed 's/^kernels .*/kernels otherkern/' "$dir/model.txt" > "$dir/other.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/other.txt"
refused "model of other kernels" "with the kernels otherkern" "do not hold here"
# A model file cut short (its last line unfinished) is refused, not read as another.
awk 'NR > 1 { print last } { last = $0 }
     END { printf "%s", substr(last, 1, length(last) - 2) }' "$dir/model.txt" > "$dir/short.txt"
run "$fastrl" cut "$ck" --list --episodes 2 --latency-model "$dir/short.txt"
refused "truncated model" "truncated"
run "$fastrl" cut "$ck"
refused "nothing asked" "say what to cut"
# A budget is read whole (not "say what to cut" for -5, nor 0 for junk); --arch cuts one
# architecture, so it does not go with a search (--list with --latency-us does: the
# front, then the cut for the budget).
# A batch beyond what the latency model measures (1,048,576 rows) is one too: it was
# refused only after loading the checkpoint, with exit status 1.
for bad in "--latency-us -5" "--latency-us abc" "--episodes 0 --list" "--batch x --list" \
    "--batch 2000000 --list"; do
    # shellcheck disable=SC2086 # options and their values
    run "$fastrl" cut "$ck" $bad
    [ "$rc" -eq 2 ] && has "${bad%% *}: '" && has "is not a" && ! has "say what to cut" ||
        fail "$bad: exit status $rc (want 2, naming the option): $out"
done
for two in "--list --arch 4,8" "--latency-us 20 --arch 4,8"; do
    # shellcheck disable=SC2086
    run "$fastrl" cut "$ck" $two --episodes 2
    [ "$rc" -eq 2 ] && has "give --arch alone" || fail "$two: exit status $rc: $out"
done
run "$fastrl" cut "$dir/missing.frl" --list
refused "missing file" "missing.frl"
# A latency model of another elastic run (hidden 16,16) lacks this run's width-32 layers:
# --arch refuses it as --list does (it once printed predicted_us: -1.000).
run "$fastrl" train Pendulum-v1 --steps 1024 --seed 3 --quiet --out "$dir/el32" \
    --set train.num_envs=4 --set train.rollout=256 --set policy.hidden=32,32 \
    --set elastic.widths=8,32
ok "second elastic run"
run "$fastrl" cut "$dir/el32/checkpoint.frl" --arch 32,32 --episodes 2 \
    --latency-model "$dir/model.txt"
refused "--arch with another run's model" "lacks a layer"
has "predicted_us" && fail "--arch with another run's model: printed a cut: $out"

[ "$failures" -eq 0 ] || exit 1
echo "test_cli_cut: all passed"
