#!/usr/bin/env bash
# The demo as `scripts/run.sh demo` runs it, on a built tree: scripts/demo.sh (the eight apps on 4
# ranks, each verified, at DEMO_SCALE=small sizes) and scripts/scaling_demo.sh at small sizes, whose plot must appear where a
# Python with matplotlib exists (and be said to be missing otherwise).
# usage: test_demo.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=${1:?usage: test_demo.sh BUILD_DIR SOURCE_DIR}
src=${2:?source dir}
failed=0
fail() { echo "FAIL: $*"; failed=1; }
out=$(mktemp -d /tmp/tessera-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT

DEMO_SCALE=small timeout 300 bash "$src/scripts/demo.sh" "$build" >"$out/demo.log" 2>&1
rc=$?
tail -n 5 "$out/demo.log"
((rc == 0)) || fail "scripts/demo.sh exited $rc: $(tail -n 3 "$out/demo.log")"
verified=$(grep -c "verified    yes" "$out/demo.log")
((verified == 9)) || fail "scripts/demo.sh: $verified of 9 runs verified"

DEMO_N=2^20 DEMO_N_PER_RANK=2^18 SCALING_PNG=$out/plot.png timeout 300 bash "$src/scripts/scaling_demo.sh" "$build" "$out/scaling" \
  >"$out/scaling.log" 2>&1
rc=$?
tail -n 3 "$out/scaling.log"
((rc == 0)) || fail "scripts/scaling_demo.sh exited $rc"
[[ -s $out/scaling/scaling_sum.json ]] || fail "scripts/scaling_demo.sh wrote no report"
if /usr/bin/python3 -c "import matplotlib" >/dev/null 2>&1 || python3 -c "import matplotlib" >/dev/null 2>&1; then
  [[ -s $out/plot.png ]] || fail "matplotlib is here, but scripts/scaling_demo.sh drew no plot"
else
  grep -q "no Python with matplotlib" "$out/scaling.log" || fail "no plot and no word why"
fi
((failed)) && exit 1
echo "PASS"
