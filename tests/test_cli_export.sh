#!/bin/sh
# `fastrl export`: a trained CartPole policy as C99 source (float32 and int8) compiles
# with -std=c99 -Wall -Wextra -Werror -pedantic and balances the pole for 500 steps in
# a program that links nothing of fastrl (examples/exported_controller.c); the latency
# probe builds and runs, for an LSTM policy too; the ONNX file is written (an LSTM's
# with no unused constant); an export named fastrl includes beside the library's
# header; bad input fails with a clear message, the same for both formats.
# (bindings/python/tests/test_export.py compares both formats' numbers with the library.)
#
#   test_cli_export.sh FASTRL CC SRCDIR [plain|sanitized]
#
# sanitized (a sanitizer build): a short training run, so the exports are built, compiled
# and run but the policy is not expected to balance; the plain builds check that.
set -u
fastrl=$1
cc=$2
src=$3
mode=${4:-plain}
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_export.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

# PPO solves CartPole in about 200K steps (a second on two cores; longer under the
# sanitizers). A deterministic policy that reaches 500 is what the export must keep.
steps=200000
if [ "$mode" = sanitized ]; then
    steps=8192
    echo "sanitizer build: $steps training steps; balancing is checked in the plain builds"
fi
run "$fastrl" train CartPole-v1 --steps $steps --seed 3 --out "$dir/run" --quiet
[ "$rc" -eq 0 ] || { echo "cannot train CartPole-v1 (setup failed): $out"; exit 1; }

# An export named fastrl: its header's guard is not the library's FASTRL_H, so a program
# that includes both sees both (the second was once skipped whole). Checked before the
# balance test below, which may skip the rest.
mkdir "$dir/gen"
run "$fastrl" export "$dir/run/checkpoint.frl" --c "$dir/gen/fastrl"
[ "$rc" -eq 0 ] || fail "export --c .../fastrl: $out"
cat > "$dir/both.c" <<'EOF'
#include <fastrl.h>
#include "gen/fastrl.h"
int main(void)
{
    float obs[FASTRL_OBS_SIZE] = {0};
    return frl_status_name(FRL_OK) == 0 || fastrl_act(obs) < 0;
}
EOF
run $cc -std=c11 -Wall -Wextra -Werror -I"$src/include" -I"$dir" -c "$dir/both.c" \
    -o "$dir/both.o"
[ "$rc" -eq 0 ] || fail "a program including fastrl.h and an export named fastrl: $out"

if [ "$mode" = plain ]; then
    run "$fastrl" eval "$dir/run/checkpoint.frl" --deterministic --episodes 10
    case $out in
        *"min_return: 500"*) ;;
        *) echo "SKIP: the trained policy does not balance every episode itself: $out"
           exit 77 ;;
    esac
fi

cflags="-std=c99 -Wall -Wextra -Werror -pedantic -O2"
for weights in float32 int8; do
    prefix="$dir/cartpole_$weights"
    opt=""
    [ "$weights" = int8 ] && opt="--int8"
    run "$fastrl" export "$dir/run/checkpoint.frl" --c "$prefix" $opt --probe
    [ "$rc" -eq 0 ] && has "wrote $prefix.h and $prefix.c" || fail "export --c $weights: $out"
    run $cc $cflags -I"$dir" "$src/examples/exported_controller.c" "$prefix.c" -lm \
        -DPOLICY_HEADER="\"cartpole_$weights.h\"" -DPOLICY_ACT="cartpole_${weights}_act" \
        -o "$dir/balance_$weights"
    [ "$rc" -eq 0 ] || { fail "the $weights export does not compile cleanly: $out"; continue; }
    run "$dir/balance_$weights" 20
    [ "$rc" -eq 0 ] || [ "$mode" = sanitized ] ||
        fail "the $weights export does not balance CartPole: $out"
    echo "$weights: $(echo "$out" | tail -n 1)"
    # No episode is no pass (0 ran nothing and exited 0).
    for bad in 0 abc; do
        run "$dir/balance_$weights" $bad
        [ "$rc" -eq 2 ] && has "usage:" || fail "controller with $bad episodes: status $rc: $out"
    done
    run $cc $cflags -I"$dir" "$prefix"_probe.c "$prefix.c" -lm -o "$dir/probe_$weights"
    [ "$rc" -eq 0 ] || { fail "the $weights probe does not compile cleanly: $out"; continue; }
    run "$dir/probe_$weights"
    [ "$rc" -eq 0 ] && has "ns per call" || fail "the $weights probe: $out"
    echo "$out"
done

# The header is valid C++ too (an engine's code includes it).
if command -v c++ > /dev/null 2>&1; then
    printf '#include "cartpole_float32.h"\nint main() { float o[4] = {0}; return cartpole_float32_act(o) < 0; }\n' \
        > "$dir/use.cpp"
    run c++ -Wall -Wextra -Werror -pedantic -I"$dir" -c "$dir/use.cpp" -o "$dir/use.o"
    [ "$rc" -eq 0 ] || fail "the header does not compile as C++: $out"
fi

run "$fastrl" export "$dir/run/checkpoint.frl" --onnx "$dir/cartpole.onnx"
[ "$rc" -eq 0 ] && [ -s "$dir/cartpole.onnx" ] || fail "export --onnx: $out"

# Bad input: each fails, says why, and writes nothing.
run "$fastrl" export "$dir/run/checkpoint.frl" --c "$dir/9lives"
[ "$rc" -ne 0 ] && has "not a C identifier" || fail "a name starting with a digit: $out"
[ ! -e "$dir/9lives.c" ] || fail "a refused name left $dir/9lives.c"
run "$fastrl" export "$dir/run/checkpoint.frl" --onnx "$dir/no/such/dir/p.onnx"
[ "$rc" -ne 0 ] && has "FRL_ERR_IO" && has "no/such/dir" || fail "an unwritable path: $out"
run "$fastrl" export "$dir/missing.frl" --onnx "$dir/p.onnx"
[ "$rc" -ne 0 ] && has "missing.frl" || fail "a missing checkpoint: $out"
cp "$dir/run/checkpoint.frl" "$dir/kept.frl"
run "$fastrl" export "$dir/run/checkpoint.frl" --onnx "$dir/run/../run/checkpoint.frl"
[ "$rc" -eq 2 ] && has "would overwrite" || fail "an output over its own checkpoint: $out"
cmp -s "$dir/run/checkpoint.frl" "$dir/kept.frl" || fail "the refused export changed the checkpoint"
# --c PREFIX writes PREFIX.c, PREFIX.h (and PREFIX_probe.c): a checkpoint named so is kept.
for name in pol.h pol.c pol_probe.c; do
    cp "$dir/kept.frl" "$dir/$name"
    run "$fastrl" export "$dir/$name" --c "$dir/pol" --probe
    [ "$rc" -eq 2 ] && has "over the checkpoint itself" || fail "--c over $name: $out"
    cmp -s "$dir/$name" "$dir/kept.frl" || fail "the refused --c export changed $name"
done
head -c 100 "$dir/run/checkpoint.frl" > "$dir/truncated.frl"
run "$fastrl" export "$dir/truncated.frl" --onnx "$dir/p.onnx"
[ "$rc" -ne 0 ] && has "FRL_ERR_FORMAT" || fail "a truncated checkpoint: $out"
run "$fastrl" export "$dir/run/checkpoint.frl" --onnx "$dir/p.onnx" --int8
[ "$rc" -eq 2 ] && has "go with --c" || fail "--int8 with --onnx: $out"
# An option where the file goes is refused (it wrote a file named --int8).
run "$fastrl" export "$dir/run/checkpoint.frl" --onnx --int8
[ "$rc" -eq 2 ] && has "not an option" && [ ! -e ./--int8 ] || fail "--onnx --int8: $out"
# An empty output is a usage error too, as train's and cut's are (it failed in the
# writer: exit status 1).
for opt in --onnx --c; do
    run "$fastrl" export "$dir/run/checkpoint.frl" "$opt" ''
    [ "$rc" -eq 2 ] && has "$opt: an empty path" && has "usage: fastrl export" ||
        fail "$opt '': exit status $rc: $out"
done
# A path too long: the same error in both formats, naming it (ONNX once said FRL_ERR_IO).
long="$dir/$(printf '%4100s' '' | tr ' ' d)"
for fmt in "--onnx $long.onnx" "--c $long/p"; do
    # shellcheck disable=SC2086 # an option and its value
    run "$fastrl" export "$dir/run/checkpoint.frl" $fmt
    [ "$rc" -eq 1 ] && has "FRL_ERR_INVALID_ARGUMENT" && has "bytes long" && has "$dir/ddd" ||
        fail "${fmt%% *} to a path too long: exit status $rc: $(echo "$out" | cut -c1-200)"
done
run "$fastrl" export "$dir/run/checkpoint.frl"
[ "$rc" -eq 2 ] && has "--onnx FILE or --c PREFIX" || fail "no output named: $out"

# A recurrent policy (an LSTM): the C export and its probe compile as strict C99 and run.
run "$fastrl" train CartPole-v1 --steps 256 --set policy.core=lstm --set train.num_envs=4 \
    --set train.rollout=128 --out "$dir/lstm" --quiet
if [ "$rc" -eq 0 ]; then
    run "$fastrl" export "$dir/lstm/checkpoint.frl" --c "$dir/lstm_policy" --probe
    [ "$rc" -eq 0 ] || fail "export --c of an LSTM policy: $out"
    run $cc $cflags -I"$dir" "$dir/lstm_policy_probe.c" "$dir/lstm_policy.c" -lm \
        -o "$dir/lstm_probe"
    [ "$rc" -eq 0 ] || fail "the LSTM export does not compile cleanly: $out"
    run "$dir/lstm_probe"
    [ "$rc" -eq 0 ] && has "ns per call" || fail "the LSTM probe: $out"
    echo "$out"
    run "$fastrl" export "$dir/lstm/checkpoint.frl" --onnx "$dir/lstm.onnx"
    [ "$rc" -eq 0 ] || fail "export --onnx of an LSTM policy: $out"
    # The GRU's constant 1 is no initializer of an LSTM's graph (it was, unused).
    ! grep -aq "core.one" "$dir/lstm.onnx" || fail "the LSTM's ONNX model carries core.one"
else
    fail "cannot train an LSTM policy: $out"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
