#!/usr/bin/env bash
# On the GPU machine, from the repository root, with .devpack/ carried (made by
# bench/gpu/pack_for_device.sh): the kernel tests, compute-sanitizer on them, the
# batch-1 floor, every forward path, the comparison with PyTorch, PPO with the old
# launch-by-launch paths (FRL_CUDA_GRAPHS=0 FRL_CUDA_FORWARD=launch) against the default,
# and training on the GPU. Every step has its own time limit; together they exceed one
# device call's 10 minutes, so choose with STEPS, e.g.
#   STEPS="ops floor paths infer ppo_before ppo"          (at most 710 s; about 5 min)
#   STEPS="memcheck racecheck train train_async handoff"   (at most 560 s)
# The logs go to $OUT (or /tmp). With no STEPS every step runs.
set -u
P=$PWD/.devpack
O=${OUT:-/tmp/on_device}
mkdir -p "$O"
cudalib=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
export LD_LIBRARY_PATH=$P/lib:${cudalib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FRL_CUDA_PLUGIN=$P/lib/libfastrl-cuda.so.0 PYTHONUNBUFFERED=1
steps=${STEPS:-ops floor paths paths_variants infer ppo_before ppo ppo_unfused ppo_async pixels recurrent infer_recurrent memcheck racecheck train train_async handoff}

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
ppo="python3 bench/gpu/ppo_cpu_vs_gpu.py --fastrl $P/fastrl --plugin $FRL_CUDA_PLUGIN --reps 2 --steps 4e6"
step ops 120 "$P/test_cuda_ops"
step floor 60 "$P/bench_gpu_floor"
step paths 150 "$P/bench_gpu_infer" --paths launch,graph,fused,mapped,streams,runs,auto \
  --reps 400 --budget 0.25
# The fused forward a block a row (FRL_CUDA_CLUSTERS=0) against a cluster a row, and
# the large batches with TF32 products.
step paths_variants 90 sh -c "FRL_CUDA_CLUSTERS=0 '$P/test_cuda_ops' forward_fused &&
  FRL_CUDA_CLUSTERS=0 '$P/bench_gpu_infer' --paths mapped,fused --batches 1,16,64 --budget 0.25 &&
  '$P/bench_gpu_infer' --tf32 1 --paths graph,streams --batches 4096,16384,65536 --budget 0.25"
step infer 200 python3 bench/gpu/compare_torch.py --bench "$P/bench_gpu_infer" \
  --plugin "$FRL_CUDA_PLUGIN" --floor "$P/bench_gpu_floor" --rounds 1 --csv-out "$O/infer.csv"
# The same PPO with the forward op by op and the learner's epochs unbatched (the paths
# before graphs), then as built.
step ppo_before 90 env FRL_CUDA_GRAPHS=0 FRL_CUDA_FORWARD=launch $ppo
step ppo 90 $ppo
# The learner's backward and gathers op by op (FRL_CUDA_FUSE=0: act_bwd, linear_bwd_weight
# and a gather an array, the kernels before wgrad and gather_fields) against the default.
step ppo_unfused 90 env FRL_CUDA_FUSE=0 $ppo
# The new ops under the sanitizers (the whole test under memcheck takes minutes). API
# errors are not reported: the graph test makes a capture fail on purpose, and the test
# checks every call's result itself.
step memcheck 240 sh -c 'for f in forward_fused forward_runs graph adam linear wgrad gather_fields mlp_tiled rnn_cell; do
  compute-sanitizer --tool memcheck --leak-check full --report-api-errors no \
    --error-exitcode 3 "$0" $f || exit $?;
  done' "$P/test_cuda_ops"
step racecheck 120 compute-sanitizer --tool racecheck --error-exitcode 3 "$P/test_cuda_ops" \
  forward_fused forward_runs wgrad mlp_tiled
step train 60 "$P/fastrl" train CartPole-v1 --set runtime.device=cuda --out "$O/run"
# The async sampler on the GPU: inference on its own stream, each weight version taken
# from the learner's stream behind an event (model_stage/model_take).
step train_async 60 "$P/fastrl" train CartPole-v1 --set runtime.device=cuda \
  --set sampler.mode=async --out "$O/run_async"
# The async sampler at the 4,096-env shape (issue 27: its device learner against sync's,
# which the ppo step gives in the same call).
step ppo_async 120 $ppo --reps 1 --set sampler.mode=async
# Pixel observations on the device (issue 23): the conv encoder with a mixed image and
# vector row (with and without the vector's normalisation) and with frame stacks (sync
# and async samplers), each trained on the GPU and its last-100 return printed beside
# what the CPU reaches in the same budget (bench/learning.py's tasks, doc/pixels.md).
step pixels 150 bash bench/gpu/cuda_vs_cpu.sh "$P/fastrl" 'PixelGoal-v0 60000' \
  'PixelGoal-v0 60000 --set policy.obs_norm=true' \
  'PixelGrid-v0 40000 --set policy.frame_stack=2' \
  'PixelGrid-v0 60000 --set policy.frame_stack=3 --set sampler.mode=async'
# Recurrent policies acting on the device (issue 24, the plugin's model_step): R2D2 in
# SEED's layout (two actors' env groups through the async sampler's central inference)
# and recurrent PPO (sync sampler), each on the GPU and on the CPU in the same budget:
# the last line of each run gives its return and throughput (bench/learning.py's
# r2d2-nv-async settings, a shorter budget).
r2d2="--set train.algo=r2d2 --set train.seq_length=40 --set train.seq_overlap=20 \
  --set train.burn_in=10 --set train.learning_starts=2000 --set train.batch_size=64 \
  --set train.adam_eps=1e-5 --set train.buffer_size=100000 --set train.target_period=200 \
  --set train.replay_ratio=16 --set sampler.mode=async --set sampler.groups=2"
step recurrent 200 bash bench/gpu/cuda_vs_cpu.sh "$P/fastrl" "CartPoleNoVel-v1 300000 $r2d2" \
  'CartPoleNoVel-v1 300000 --set policy.core=gru --set train.num_envs=64'
# The recurrent step's latency by batch (model_step: op by op, then captured) beside the
# MLP forward of the same encoder and head (launch, then auto): what a step's extra
# launches and state copies cost, and what its graph saves.
step infer_recurrent 120 sh -c "for c in none gru lstm; do
  '$P/bench_gpu_infer' --core \$c --obs 4 --hidden 64 --actions 2 --budget 0.25 \
    --batches 1,16,64,256,1024,4096,16384 --paths launch,auto || exit \$?; done"
step handoff 40 sh -c "'$P/bench_gpu_infer' --batches 1 --handoff --budget 1 &&
  '$P/bench_gpu_infer' --batches 1 --hidden 1024,1024 --handoff --budget 1"
