#!/bin/bash
# One device session: GPU tests, tune both precisions, check both, memcheck.
# Usage (from the repository root, with a built tree in build/):
#   scripts/gpu-smoke.sh OUTDIR
set -u -o pipefail
out=${1:?usage: scripts/gpu-smoke.sh OUTDIR}
mkdir -p "$out"
ct=build/tuner/convtune
export CONVTUNE_DB="$out/tuning.db"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
ldd "$ct" | grep -E 'not found|sqlite' || true
{
  tests/run-gpu-tests.sh build
} > "$out/gpu-tests.log" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu-tests.log")"
for prec in tf32 fp32; do
  $ct tune --precision $prec > "$out/tune-$prec.log" 2>&1
  echo "tune $prec: exit $?"; grep -A1 -E "^[0-9]+ variants|^winner" "$out/tune-$prec.log"
  $ct check --precision $prec 2>&1 | tee "$out/check-$prec.log"
done
