#!/usr/bin/env bash
# The main job: set up, build (release), and run it. Until training exists the main
# job is the environment benchmark (CartPole-v1, 4096 envs, 2 threads).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
frl_setup
echo "building (release) in build/ ..."
frl_build build --buildtype=release
exec build/tools/fastrl bench env CartPole-v1 --envs 4096 --threads 2 "$@"
