#!/bin/sh
# A GPU test that skips says why where people look: `meson test --suite gpu`
# prints the reason of every skipped GPU test, and tests/run-gpu-tests.sh
# names each skip with its reason and exits 1 when every test skipped.
# The driver is hidden (CONVTUNE_LIBCUDA), so this holds on GPU machines.
#   tests/test_gpu_skips.sh MESON BUILD_DIR SOURCE_DIR
set -u
meson=${1:?usage: test_gpu_skips.sh MESON BUILD_DIR SOURCE_DIR}
build=${2:?}
src=${3:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CONVTUNE_LIBCUDA="$tmp/none/libcuda.so.1"
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass + 1)); else echo "FAIL $1: $2"; fail=$((fail + 1)); fi; }
gpu_tests="gpu_variants gpu_e2e gpu_shapes gpu_runtime gpu_offsets gpu_nonfinite gpu_faults gpu_interrupt gpu_memcheck"

"$src/tests/run-gpu-tests.sh" "$build" > "$tmp/run.out" 2>&1
rc=$?
check "run-gpu-tests.sh exits 1 when every test skips" "[ $rc -eq 1 ]"
for t in $gpu_tests; do
  check "run-gpu-tests.sh: test_$t skips with its reason" "grep -q '^SKIP test_$t: .*no usable GPU' '$tmp/run.out'"
done
check "run-gpu-tests.sh: the summary counts the skips" "grep -q '^gpu: 0 passed, 0 failed, 9 skipped' '$tmp/run.out'"

# A nested `meson test`, with its own log (--logbase), not rebuilding.
"$meson" test -C "$build" --no-rebuild --suite gpu --logbase gpu-skips > "$tmp/meson.out" 2>&1
rc=$?
check "meson test --suite gpu passes with every test skipped" "[ $rc -eq 0 ]"
for t in $gpu_tests; do
  check "meson test shows $t as SKIP" "grep -q ' / $t  *SKIP' '$tmp/meson.out'"
done
n=$(grep -c 'SKIP: no usable GPU' "$tmp/meson.out")
check "meson test prints every skip's reason ($n of 9)" "[ $n -eq 9 ]"
[ "$fail" -eq 0 ] || sed 's/^/    /' "$tmp/meson.out" "$tmp/run.out"
echo "gpu skips: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
