#!/usr/bin/env bash
# The main job: set up, build (release), train PPO on CartPole-v1 with a live progress
# bar, then evaluate the checkpoint it wrote. Extra arguments go to `fastrl train`
# (e.g. --steps 1000000 --seed 3 --set train.num_envs=32).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
frl_setup
echo "building (release) in build/ ..."
frl_build build --buildtype=release
out=runs/cartpole
mkdir -p "$out"
echo "training CartPole-v1 (stops at a mean return of 475 over 100 episodes; results in $out)"
build/tools/fastrl train CartPole-v1 --steps 500000 --set train.target_return=475 --out "$out" \
    --overwrite "$@"
echo "evaluating $out/checkpoint.frl (100 episodes, greedy actions)"
build/tools/fastrl eval "$out/checkpoint.frl" --episodes 100 --deterministic
