#!/usr/bin/env bash
# Installs what Tessera needs and is missing, on Debian 12 or Ubuntu 24.04, and says which
# packages are missing where it cannot install them (not root, no apt, no network).
#   scripts/install_deps.sh build   what building needs
#   scripts/install_deps.sh demo    that, plus what the demo needs (matplotlib, for its scaling plot)
#   scripts/install_deps.sh test    building, plus what the test suite needs (h5py, numpy, matplotlib, Slurm,
#                                   and the Python package's pybind11, mpi4py, pytest and Python headers)
#   ... --dry-run                   only say what is missing and what would be installed
# Idempotent: a machine that has everything is left alone, whatever put it there (apt, modules,
# a toolkit in /usr/local): each need is checked by what it provides, not by package name.
# TESSERA_DEPS_PYTHON: the Pythons to look in (default: /usr/bin/python3 and the python3 on PATH).
set -u
profile=${1:-build}
dry_run=0
[ "${2:-}" = "--dry-run" ] && dry_run=1
case "$profile" in
  build|demo|test) ;;
  *) echo "usage: scripts/install_deps.sh build|demo|test [--dry-run]" >&2; exit 2 ;;
esac

missing_required=()   # needed to build and run
missing_optional=()   # tests that need these report "skipped" without them

have() { command -v "$1" >/dev/null 2>&1; }

version_ge() {  # version_ge A B: A >= B
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

cmake_ok() {
  have cmake || return 1
  version_ge "$(cmake --version | head -n1 | awk '{print $3}')" 3.25
}

header_in() {  # header_in NAME DIR...: true if NAME exists in one of the dirs
  local name=$1; shift
  for d in "$@"; do [ -e "$d/$name" ] && return 0; done
  return 1
}

python_with() {  # python_with MODULES: true if some python3 imports them all
  for py in ${TESSERA_DEPS_PYTHON:-/usr/bin/python3 $(command -v python3 2>/dev/null)}; do
    [ -x "$py" ] && "$py" -c "import $1" >/dev/null 2>&1 && return 0
  done
  return 1
}

python_headers() {  # true if some python3 has its C headers (Python.h), for building the package
  for py in ${TESSERA_DEPS_PYTHON:-/usr/bin/python3 $(command -v python3 2>/dev/null)}; do
    [ -x "$py" ] && "$py" -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" >/dev/null 2>&1 && return 0
  done
  return 1
}

cmake_ok || missing_required+=(cmake)
have g++ || missing_required+=(g++)
{ have mpicxx && have mpiexec; } || missing_required+=(libopenmpi-dev openmpi-bin)
header_in hdf5.h /usr/include/hdf5/openmpi /usr/include/hdf5/serial /usr/include /usr/local/include ${HDF5_DIR:+$HDF5_DIR/include} \
  || missing_required+=(libhdf5-openmpi-dev)
# FFTW3 (the distributed FFT's local transforms) and FFTW-MPI (only the FFT benchmark's baseline:
# without it the benchmark runs without the FFTW-MPI rows).
header_in fftw3.h /usr/include /usr/local/include ${FFTW_ROOT:+$FFTW_ROOT/include} || missing_required+=(libfftw3-dev)
header_in fftw3-mpi.h /usr/include /usr/local/include ${FFTW_ROOT:+$FFTW_ROOT/include} || missing_optional+=(libfftw3-mpi-dev)
header_in gtest/gtest.h /usr/include /usr/local/include || missing_required+=(libgtest-dev)
# OpenBLAS (the cpu backend's vendor GEMM; without it that engine runs the blocked kernel). Debian's
# libopenblas-dev brings the pthread variant; its headers sit in a directory of their own.
openblas=0
for f in /usr/include/openblas_config.h /usr/include/*/openblas*/openblas_config.h /usr/include/openblas/openblas_config.h \
         /usr/local/include/openblas_config.h ${OpenBLAS_ROOT:+$OpenBLAS_ROOT/include/openblas_config.h}; do
  [ -e "$f" ] && openblas=1
done
[ $openblas = 1 ] || missing_optional+=(libopenblas-dev)
have ninja || missing_optional+=(ninja-build)  # faster builds; make works too
if [ "$profile" = demo ]; then
  python_with "matplotlib" || missing_optional+=(python3-matplotlib)  # the scaling demo's plot
fi
if [ "$profile" = test ]; then
  have h5dump || missing_optional+=(hdf5-tools)
  python_with "numpy, h5py" || missing_optional+=(python3-numpy python3-h5py)
  # The Python package (python/) and its tests: built where these are found.
  python_with "pybind11" || missing_optional+=(python3-pybind11)
  python_with "mpi4py" || missing_optional+=(python3-mpi4py)
  python_with "pytest" || missing_optional+=(python3-pytest)
  python_headers || missing_optional+=(python3-dev)
  python_with "matplotlib" || missing_optional+=(python3-matplotlib)
  { have slurmctld && have slurmd && have sbatch; } || missing_optional+=(slurmctld slurmd slurm-client)
  have munged || missing_optional+=(munge)
  have ip && have tc || missing_optional+=(iproute2)  # the multi-node test's namespaces and shaping
  [ -e /usr/lib/x86_64-linux-gnu/libpmix.so.2 ] || ls /usr/lib/*/libpmix.so.2 >/dev/null 2>&1 || missing_optional+=(libpmix2)
fi

all=("${missing_required[@]}" "${missing_optional[@]}")
if [ ${#all[@]} -eq 0 ]; then
  echo "install_deps: everything Tessera needs for '$profile' is present"
  exit 0
fi

echo "install_deps: missing for '$profile': ${all[*]}"
if [ $dry_run -eq 1 ]; then
  echo "install_deps: --dry-run: would run: apt-get install --no-install-recommends ${all[*]}"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && have apt-get; then
  export DEBIAN_FRONTEND=noninteractive
  # Ubuntu 24.04 renamed some libraries in its 64-bit time_t transition (libpmix2 -> libpmix2t64).
  resolve() { apt-cache show "$1" >/dev/null 2>&1 || ! apt-cache show "$1t64" >/dev/null 2>&1 && echo "$1" || echo "$1t64"; }
  if timeout 120 apt-get update -qq >/dev/null 2>&1 &&
     names=$(for p in "${all[@]}"; do resolve "$p"; done) &&
     apt-get install -y -qq --no-install-recommends $names >/tmp/tessera-apt.log 2>&1; then
    echo "install_deps: installed ${all[*]}"
    exit 0
  fi
  echo "install_deps: apt-get could not install them (no network?); see /tmp/tessera-apt.log"
else
  echo "install_deps: not root or no apt-get: ask an administrator to install: ${all[*]}"
fi
if [ ${#missing_required[@]} -gt 0 ]; then
  echo "install_deps: cannot build without: ${missing_required[*]}" >&2
  exit 1
fi
echo "install_deps: building is possible; tests that need ${missing_optional[*]} will be reported as skipped"
exit 0
