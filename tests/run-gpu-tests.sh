#!/bin/sh
# Runs the GPU tests from a built tree, without Meson:
#   tests/run-gpu-tests.sh BUILD_DIR
# Each test exits 0 (pass), 77 (skip: no usable GPU) or anything else (fail).
# Exits non-zero when any test failed, or when every test skipped.
set -u
build=${1:?usage: tests/run-gpu-tests.sh BUILD_DIR}
pass=0 fail=0 skip=0
for t in test_gpu_variants test_gpu_e2e test_gpu_shapes test_gpu_runtime test_gpu_offsets; do
  exe="$build/tests/$t"
  if [ ! -x "$exe" ]; then
    echo "FAIL $t: $exe not built"
    fail=$((fail + 1))
    continue
  fi
  "$exe"
  rc=$?
  case $rc in
    0) echo "PASS $t"; pass=$((pass + 1)) ;;
    77) echo "SKIP $t"; skip=$((skip + 1)) ;;
    *) echo "FAIL $t (exit $rc)"; fail=$((fail + 1)) ;;
  esac
done
# Script tests: run from the source tree with the built convtune.
for t in test_gpu_faults test_gpu_interrupt; do
  "$(dirname "$0")/$t.sh" "$build/tuner/convtune"
  rc=$?
  case $rc in
    0) echo "PASS $t"; pass=$((pass + 1)) ;;
    77) echo "SKIP $t"; skip=$((skip + 1)) ;;
    *) echo "FAIL $t (exit $rc)"; fail=$((fail + 1)) ;;
  esac
done
echo "gpu: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
