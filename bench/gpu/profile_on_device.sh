#!/usr/bin/env bash
# On the GPU machine, with .devpack/ carried (bench/gpu/pack_for_device.sh): where the
# time of a batch-1 forward and of a learner update goes. Three readings, about a minute:
#   clocks   the SM clock nvidia-smi reads while bench_gpu_infer runs batch 1 back to
#            back (the GPU idles between such calls, and its clock with it);
#   fused    ncu's duration and SM clock for the fused forward's kernel at batch 1 (a
#            cluster a row, then FRL_CUDA_CLUSTERS=0: a block a row);
#   learner  ncu's duration of every kernel of about two PPO updates on 4096 envs (which
#            kernels the learner's minibatch steps are made of, and what each costs).
# ncu runs with --clock-control none (the card's clocks are left alone) and
# --cache-control none (no flush before each kernel: the weights stay in L2 between
# forwards, as they do outside the profiler). Logs to $OUT.
set -u
P=$PWD/.devpack
O=${OUT:-/tmp/profile}
mkdir -p "$O"
cudalib=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
export LD_LIBRARY_PATH=$P/lib:${cudalib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FRL_CUDA_PLUGIN=$P/lib/libfastrl-cuda.so.0
NCU="ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"

# PARTS picks some of them (e.g. PARTS=learner); all three by default.
parts=" ${PARTS:-clocks fused learner} "
if [[ $parts == *" clocks "* ]]; then
echo "=== clocks during batch-1 calls"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader -lms 200 \
  > "$O/clocks.csv" &
smi=$!
"$P/bench_gpu_infer" --paths fused --batches 1 --reps 100000 --budget 2 | tail -n 2
kill $smi
sort "$O/clocks.csv" | uniq -c | sort -rn | head -n 5
fi

if [[ $parts == *" fused "* ]]; then
echo "=== fused forward at batch 1 (cluster, then a block a row)"
for c in 1 0; do
  FRL_CUDA_CLUSTERS=$c timeout 120 $NCU -k regex:forward_fused --launch-skip 50 --launch-count 3 \
    "$P/bench_gpu_infer" --paths fused --batches 1 --reps 60 --budget 1 > "$O/fused_$c.log" 2>&1
  grep -E "forward_fused|gpu__time_duration|sm__cycles_elapsed" "$O/fused_$c.log" | head -n 9
done
fi

[[ $parts == *" learner "* ]] || exit 0
# 1,200 kernels from the 1,201st on (past the first updates, whose first epoch runs op
# by op before its graph is captured): about two updates of the tiled learner.
echo "=== the kernels of PPO updates (4096 envs x 32 steps, 8 minibatches, 4 epochs)"
timeout 240 $NCU --launch-skip 1200 --launch-count 1200 --csv --print-units base \
  "$P/fastrl" train CartPole-v1 --steps 1500000 --quiet --out "$O/run" \
  --set runtime.device=cuda --set train.num_envs=4096 --set train.rollout=32 \
  --set train.minibatches=8 \
  > "$O/learner.csv" 2> "$O/learner.err"
python3 - "$O/learner.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no ncu rows")
head = rows[0]; k = head.index("Kernel Name"); m = head.index("Metric Name"); v = head.index("Metric Value")
t = collections.defaultdict(list)
for r in rows[1:]:
    if r[m] == "gpu__time_duration.sum":
        t[r[k][:60]].append(float(r[v].replace(",", "")))
tot = sum(sum(x) for x in t.values())
print(f"{sum(len(x) for x in t.values())} kernels, {tot/1e3:.1f} us of kernel time")
for name, x in sorted(t.items(), key=lambda e: -sum(e[1]))[:25]:
    print(f"{len(x):6d} x {sum(x)/len(x)/1e3:8.2f} us = {sum(x)/1e3:9.1f} us  {name}")
PY
