#!/usr/bin/env bash
# On the GPU machine, from the repository root, with .devpack/ carried (made by
# bench/gpu/pack_for_device.sh): the kernel tests, compute-sanitizer memcheck on them,
# training on the GPU, and the benchmarks. Every step has its own time limit; the
# limits add up to 16 minutes, more than one device call's 10, so run it as two calls:
#   STEPS="ops memcheck train train_async"   (at most 570 s)
#   STEPS="infer handoff ppo"                (at most 390 s)
# The logs go to $OUT (or /tmp). With no STEPS every step runs.
set -u
P=$PWD/.devpack
O=${OUT:-/tmp/on_device}
mkdir -p "$O"
cudalib=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
export LD_LIBRARY_PATH=$P/lib:${cudalib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FRL_CUDA_PLUGIN=$P/lib/libfastrl-cuda.so.0 PYTHONUNBUFFERED=1
steps=${STEPS:-ops memcheck train train_async infer handoff ppo}

step() { # name limit command...
  local name=$1 limit=$2; shift 2
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  echo "=== $name (limit ${limit}s): $*"
  local t0=$SECONDS
  timeout "$limit" "$@" > "$O/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$O/$name.log"
  echo "=== $name: rc=$rc, $((SECONDS - t0)) s"
}

nvidia-smi -L || echo "nvidia-smi: none"
step ops 90 "$P/test_cuda_ops"
step memcheck 240 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
  "$P/test_cuda_ops"
step train 120 "$P/fastrl" train CartPole-v1 --set runtime.device=cuda --out "$O/run"
# The async sampler on the GPU: inference on its own stream, each weight version taken
# from the learner's stream behind an event (model_stage/model_take).
step train_async 120 "$P/fastrl" train CartPole-v1 --set runtime.device=cuda \
  --set sampler.mode=async --out "$O/run_async"
step infer 150 python3 bench/gpu/compare_torch.py --bench "$P/bench_gpu_infer" \
  --plugin "$FRL_CUDA_PLUGIN" --rounds 2 --csv-out "$O/infer.csv"
step handoff 40 sh -c "'$P/bench_gpu_infer' --batches 1 --handoff --budget 1 &&
  '$P/bench_gpu_infer' --batches 1 --hidden 1024,1024 --handoff --budget 1"
step ppo 200 python3 bench/gpu/ppo_cpu_vs_gpu.py --fastrl "$P/fastrl" \
  --plugin "$FRL_CUDA_PLUGIN" --reps 1 --steps 4e6
