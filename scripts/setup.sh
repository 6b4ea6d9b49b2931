#!/usr/bin/env bash
# Install what a fresh Debian 12 machine lacks to build and test libfastrl.
# Sourced by scripts/main.sh and scripts/test.sh; safe to run again (installs
# only what is missing; apt-get update only when something is).
set -euo pipefail

FRL_DEB_PACKAGES=(
  gcc g++ clang pkgconf meson ninja-build python3 python3-venv
  libzstd-dev libopenblas-serial-dev check abigail-tools binutils
  openmpi-bin libopenmpi-dev
  locales  # localedef and glibc's locale sources: test_locale makes a decimal-comma locale
)

frl_missing_packages() {
  local p
  for p in "${FRL_DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

frl_setup() {
  local missing
  missing=$(frl_missing_packages)
  if [ -n "$missing" ]; then
    echo "setup: installing:" $missing
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
}

# The CUDA toolkit is not a Debian package here: it lives under /usr/local/cuda (or
# CUDA_HOME). Put its nvcc on PATH when it is not there yet, for the plugin build.
frl_cuda_path() {
  local home=${CUDA_HOME:-/usr/local/cuda}
  if ! command -v nvcc >/dev/null 2>&1 && [ -x "$home/bin/nvcc" ]; then
    export PATH="$home/bin:$PATH"
  fi
}

# Configure (or reconfigure) a build directory and build it: frl_build DIR [meson options]
frl_build() {
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" >/dev/null
}

frl_cuda_path

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  frl_setup
fi
