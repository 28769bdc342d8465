#!/usr/bin/env bash
# The README's two commands:
#   scripts/run.sh demo   install what is missing, build, run the eight apps and a scaling study
#   scripts/run.sh test   install what is missing, build, run the whole test suite
#   ... --dry-run         only say what would be installed; install, build and run nothing
# One MPI rank per GPU where there are GPUs, else 4 ranks on the CPU. Build directory: $BUILD_DIR
# (default ./build). Safe to run again: configure and build are incremental.
set -euo pipefail
what=${1:-demo}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

case "$what" in
  demo|test) ;;
  *) echo "usage: scripts/run.sh demo|test [--dry-run]" >&2; exit 2 ;;
esac
if [ "${2:-}" = "--dry-run" ]; then
  exec bash "$root/scripts/install_deps.sh" "$what" --dry-run
fi
bash "$root/scripts/install_deps.sh" "$what"

# Open MPI refuses root without these, and more ranks than cores without oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
# NVLink multicast stays off on shared multi-GPU hosts.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
arch_args=()
# The test command on a machine without a GPU cannot run GPU code; it only proves that the CUDA
# backend, its tests and the apps compile. So the device code is compiled once, to PTX for
# compute_80 (80-virtual: what any GPU from sm_80 on runs, the driver compiling it at the first
# launch), and ptxas, which would turn it into machine code for one GPU, does not run: 15-35% of a
# CUDA file's compile time. The local kernels' benchmarks against CUB, cuBLAS and Thrust
# (bench/kernels: a quarter of the whole build's compile time on 2 cores) are left out, and the
# tests that run on either backend are compiled as C++ for the cpu backend they run on here
# (TESSERA_CUDA_TESTS=OFF; nvcc would take 3-4 times as long), while the GPU tests are still
# compiled by nvcc. CMAKE_ARGS chooses otherwise (-DCMAKE_CUDA_ARCHITECTURES=...,
# -DTESSERA_BUILD_GPU_BENCH=ON, -DTESSERA_CUDA_TESTS=ON).
if [ "$what" = test ] && ! nvidia-smi -L >/dev/null 2>&1; then
  [[ "${CMAKE_ARGS:-}" == *CMAKE_CUDA_ARCHITECTURES* ]] || arch_args+=(-DCMAKE_CUDA_ARCHITECTURES=80-virtual)
  [[ "${CMAKE_ARGS:-}" == *TESSERA_BUILD_GPU_BENCH* ]] || arch_args+=(-DTESSERA_BUILD_GPU_BENCH=OFF)
  [[ "${CMAKE_ARGS:-}" == *TESSERA_CUDA_TESTS* ]] || arch_args+=(-DTESSERA_CUDA_TESTS=OFF)
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  if [ ${#arch_args[@]} -gt 0 ]; then
    echo "run.sh: no GPU here: CUDA code (where nvcc exists) is compiled to PTX for compute_80 only, without the GPU kernels' benchmarks; the tests that run on the cpu backend are compiled as C++"
  fi
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${arch_args[@]}" ${CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$jobs"

case "$what" in
  demo)
    bash "$root/scripts/demo.sh" "$build"
    echo
    echo "== A scaling study: the GPUs where there are two or more, and the CPU cores"
    bash "$root/scripts/scaling_demo.sh" "$build"
    ;;
  test)
    cd "$build"
    # Tests declare the cores they use (PROCESSORS); ctest packs them onto the machine.
    ctest --output-on-failure --timeout 900 -j "$jobs" ${CTEST_ARGS:-}
    ;;
esac
