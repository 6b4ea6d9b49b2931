#!/usr/bin/env bash
# On the GPU machine with .devpack carried (bench/gpu/pack_for_device.sh): the population
# kernel tests, memcheck on them, the comparison with PyTorch bmm, and ES on the CPU and the device.
P=$PWD/.devpack
cudalib=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
export LD_LIBRARY_PATH=$P/lib:${cudalib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FRL_CUDA_PLUGIN=$P/lib/libfastrl-cuda.so.0 PYTHONUNBUFFERED=1
nvidia-smi -L
echo "=== ops"; timeout 100 $P/test_cuda_ops forward_members forward_fused 2>&1 | tail -12
echo "=== memcheck"; timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 $P/test_cuda_ops forward_members; echo "=== racecheck"; timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 $P/test_cuda_ops forward_members 2>&1 | tail -4
echo "=== torch"; timeout 150 python3 bench/gpu/compare_population_torch.py --bench $P/bench_gpu_population 2>&1 | tail -12
for d in cpu cuda; do for e in 256 4096; do echo "=== ES $d envs $e"; timeout 40 $P/fastrl train CartPole-v1 --steps 3000000 --quiet --set train.algo=es --set runtime.device=$d --set train.num_envs=$e --set runtime.threads=16 2>&1 | tail -2; done; done
