#!/bin/sh
# Runs the GPU tests from a built tree, without Meson:
#   tests/run-gpu-tests.sh BUILD_DIR
# Each test exits 0 (pass), 77 (skip: no usable GPU) or anything else (fail);
# a skip is named with the reason the test printed ("SKIP: why").
# Exits 1 when any test failed, or when every test skipped (nothing ran).
set -u
build=${1:?usage: tests/run-gpu-tests.sh BUILD_DIR}
pass=0 fail=0 skip=0
out=$(mktemp)
trap 'rm -f "$out" "$out.rc"' EXIT

# Each test's output is shown as it runs and kept in $out, its exit status
# in $out.rc.
# result NAME RC: counts and names the outcome of test NAME.
result() {
  case $2 in
    0) echo "PASS $1"; pass=$((pass + 1)) ;;
    77) echo "SKIP $1: $(sed -n 's/^SKIP: //p' "$out" | head -n 1)"; skip=$((skip + 1)) ;;
    *) echo "FAIL $1 (exit $2)"; fail=$((fail + 1)) ;;
  esac
}

for t in test_gpu_variants test_gpu_e2e test_gpu_shapes test_gpu_runtime test_gpu_offsets \
         test_gpu_nonfinite; do
  exe="$build/tests/$t"
  if [ ! -x "$exe" ]; then
    echo "FAIL $t: $exe not built"
    fail=$((fail + 1))
    continue
  fi
  { "$exe" 2>&1; echo $? > "$out.rc"; } | tee "$out"
  result "$t" "$(cat "$out.rc")"
done
# Script tests: run from the source tree with the built convtune.
for t in test_gpu_faults test_gpu_interrupt test_gpu_memcheck; do
  { "$(dirname "$0")/$t.sh" "$build/tuner/convtune" 2>&1; echo $? > "$out.rc"; } | tee "$out"
  result "$t" "$(cat "$out.rc")"
done
echo "gpu: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
