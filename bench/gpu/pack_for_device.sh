#!/usr/bin/env bash
# Build the GPU pieces here and pack them, with the shared libraries the GPU machine's
# image lacks (OpenBLAS, zstd; it has CUDA, cuBLAS and PyTorch but fetches nothing),
# into .devpack/ for the device tool to carry. Then, on the GPU machine:
#   run(command='STEPS="ops memcheck train train_async" bash bench/gpu/on_device.sh', carry=[".devpack"])
#   run(command='STEPS="infer handoff ppo" bash bench/gpu/on_device.sh', carry=[".devpack"])
# Both machines are x86-64 Linux; the binaries built here against Debian 12's glibc run
# on the newer glibc there.
set -euo pipefail
cd "$(dirname "$0")/../.."
b=build-gpu
[ -f $b/build.ninja ] || meson setup $b --buildtype=release -Dcuda=enabled >/dev/null
ninja -C $b >/dev/null
rm -rf .devpack && mkdir -p .devpack/lib
cp -L $b/lib/libfastrl-cuda.so.0 $b/tools/fastrl $b/tests/test_cuda_ops \
      $b/bench/gpu/bench_gpu_infer $b/bench/gpu/bench_gpu_floor \
      $b/bench/gpu/bench_gpu_population .devpack/
mv .devpack/libfastrl-cuda.so.0 .devpack/lib/
# What the binaries need beyond libc, libstdc++ and CUDA's libraries (the image's).
for f in .devpack/fastrl .devpack/test_cuda_ops .devpack/bench_gpu_population \
         .devpack/lib/libfastrl-cuda.so.0; do
  ldd "$f" | awk '/=> \// {print $3}' | grep -E 'openblas|gfortran|quadmath|zstd' || true
done | sort -u | while read -r so; do cp -L "$so" .devpack/lib/; done
# bench_gpu_floor (the batch-1 floor and copy bandwidths compare_torch.py reads; beside
# bench_gpu_infer, where compare_torch.py looks by default) links the CUDA runtime
# statically and needs nothing more.
strip --strip-unneeded .devpack/fastrl .devpack/test_cuda_ops .devpack/bench_gpu_infer \
      .devpack/bench_gpu_population \
      .devpack/bench_gpu_floor .devpack/lib/* 2>/dev/null || true
du -sh .devpack
ls .devpack .devpack/lib
