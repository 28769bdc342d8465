#!/usr/bin/env bash
# What `scripts/run.sh demo` would install on a machine whose Python lacks matplotlib (the demo
# draws its plot with it), asked with --dry-run, which installs and builds nothing:
#   - run.sh demo --dry-run names python3-matplotlib, and builds nothing;
#   - with a Python that has matplotlib, it does not name it;
#   - install_deps.sh test --dry-run names numpy, h5py and matplotlib, and the Python package's
#     pybind11, mpi4py, pytest and headers, for a Python without them.
# TESSERA_DEPS_PYTHON names the Pythons the script probes (/bin/false: one that imports nothing).
# usage: test_install_deps.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: test_install_deps.sh SOURCE_DIR}
failed=0
fail() { echo "FAIL: $*"; failed=1; }
build=$(mktemp -d /tmp/tessera-deps.XXXXXX)
rmdir "$build"
trap 'rm -rf "$build"' EXIT

out=$(TESSERA_DEPS_PYTHON=/bin/false BUILD_DIR=$build timeout 120 bash "$src/scripts/run.sh" demo --dry-run 2>&1)
rc=$?
echo "$out"
((rc == 0)) || fail "run.sh demo --dry-run exited $rc"
grep -q "python3-matplotlib" <<<"$out" || fail "run.sh demo --dry-run does not name python3-matplotlib for a Python without it"
[[ -e $build ]] && fail "run.sh demo --dry-run created the build directory $build"

if /usr/bin/python3 -c "import matplotlib" >/dev/null 2>&1; then
  out=$(TESSERA_DEPS_PYTHON=/usr/bin/python3 BUILD_DIR=$build timeout 120 bash "$src/scripts/run.sh" demo --dry-run 2>&1)
  grep -q "python3-matplotlib" <<<"$out" && fail "matplotlib named although /usr/bin/python3 has it: $out"
fi

out=$(TESSERA_DEPS_PYTHON=/bin/false timeout 120 bash "$src/scripts/install_deps.sh" test --dry-run 2>&1)
rc=$?
echo "$out"
((rc == 0)) || fail "install_deps.sh test --dry-run exited $rc"
for p in python3-numpy python3-h5py python3-matplotlib python3-pybind11 python3-mpi4py python3-pytest python3-dev; do
  grep -q "$p" <<<"$out" || fail "install_deps.sh test --dry-run does not name $p"
done
((failed)) && exit 1
echo "PASS"
