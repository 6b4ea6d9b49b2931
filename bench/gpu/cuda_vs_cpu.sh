#!/usr/bin/env bash
# Each task trained on the GPU and then on the CPU, the same seed and budget, with the
# last line of each run (its last-100 return and throughput) printed after the task:
#   bash bench/gpu/cuda_vs_cpu.sh FASTRL 'ENV STEPS [--set key=value ...]' ...
# on_device.sh's pixels and recurrent steps call it (the device's plugin comes from
# FRL_CUDA_PLUGIN, as there).
set -u
fastrl=$1
shift
for task in "$@"; do
  # shellcheck disable=SC2086 # a task is words: the env, the steps, then the settings
  set -- $task
  env=$1 steps=$2
  shift 2
  for dev in cuda cpu; do
    printf '%s %s steps %s %s: ' "$env" "$dev" "$steps" "$*"
    "$fastrl" train "$env" --seed 1 --steps "$steps" --quiet --set runtime.device=$dev "$@" |
      tail -n 1
  done
done
