#!/bin/sh
# What dist.mode=ddppo refuses, in every build (no MPI needed): a missing MPI plugin
# (the message says why and how to build it; a file that does not load, the loader's
# reason, whatever the path's length), and the runs it cannot distribute (an
# algorithm other than PPO's family, the async sampler), each
# named before any rank starts waiting for the others.
#
#   test_dist_refusals.sh FASTRL
set -u
fastrl=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_dist_refusals.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"

dd="--steps 2048 --quiet --set dist.mode=ddppo"
run env FRL_MPI_PLUGIN="$dir/none/libfastrl-mpi.so.0" "$fastrl" train CartPole-v1 $dd
refused "no plugin" "FRL_ERR_UNSUPPORTED" "needs the MPI plugin" "FRL_MPI_PLUGIN="
# A plugin that does not load, at a long path: the loader's reason survives the cut.
long="$dir/an-install-prefix-long-enough-to-fill-a-message/of-several-folders/each-one-long"
mkdir -p "$long/lib" && head -c 4096 /dev/zero > "$long/lib/libfastrl-mpi.so.0"
run env FRL_MPI_PLUGIN="$long/lib/libfastrl-mpi.so.0" "$fastrl" train CartPole-v1 $dd
refused "a plugin that does not load" "needs the MPI plugin" "invalid ELF header"
run "$fastrl" train CartPole-v1 $dd --set train.algo=dqn
refused "dqn" "dist.mode=ddppo trains train.algo=ppo, impala or a2c, not dqn"
run "$fastrl" train CartPole-v1 $dd --set sampler.mode=async
refused "async" "sampler.mode=sync"
run "$fastrl" train CartPole-v1 $dd --set dist.mode=nonsense
refused "unknown mode" "dist.mode"

echo "$failures failures"
[ "$failures" -eq 0 ]
