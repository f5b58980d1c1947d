#!/bin/bash
# One GPU session from a built tree: GPU tests, tune and check both
# precisions of the headline problem, memcheck, a profile of the tf32
# winner, the bench against PyTorch.  Results go to OUTDIR:
#   session.log  everything printed, in order
#   tuning.db    the database the session tuned into
#   ncu.txt      Nsight Compute's report on the tf32 winner
#   bench/       bench.py's JSON and chart
# Usage (from the repository root): scripts/gpu-session.sh OUTDIR [STEPS]
# STEPS: any of tests tune memcheck ncu bench (default: all).
set -u -o pipefail
out=${1:?usage: scripts/gpu-session.sh OUTDIR [STEPS]}
steps=${2:-"tests tune memcheck ncu bench"}
mkdir -p "$out"
ct=build/tuner/convtune
export CONVTUNE_DB="$out/tuning.db"
export PYTHONUNBUFFERED=1
small="n=2,c=3,h=45,w=47,k=70,r=11,s=11,stride=4,pad=2"
log() { echo "== $*"; }
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if has tests; then
  log "GPU tests"; timeout 300 tests/run-gpu-tests.sh build
fi
if has tune; then
  for prec in tf32 fp32; do
    log "tune $prec"; timeout 240 $ct tune --precision $prec
    log "re-tune $prec (resumes from the database)"
    timeout 120 $ct tune --precision $prec | grep -E "variants|^winner"
    log "check $prec"; timeout 60 $ct check --precision $prec
  done
fi
if has memcheck; then
  log "memcheck: the default variant"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    $ct check --problem "$small" --db "$out/none.db" --trials 1
  echo "memcheck default: exit $?"
  log "memcheck: every variant of every family on $small"
  for prec in tf32 fp32; do
    timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 5 \
      $ct tune --problem "$small" --precision $prec --db "$out/memcheck.db" \
      --trials 1 --final-trials 1 --finalists 1 --quiet --no-isolate --fresh | tail -3
    echo "memcheck $prec: exit $?"
  done
fi
if has ncu; then
  log "ncu on the tf32 winner"
  timeout 180 ncu --clock-control none --launch-skip 3 --launch-count 1 \
    -k regex:'conv_' --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    $ct check --precision tf32 --trials 3 > "$out/ncu.txt" 2>&1
  echo "ncu: exit $?"; grep -E "Duration|Throughput|Pipe|Warp Cycles|Achieved Occupancy" "$out/ncu.txt" | head -30
fi
if has bench; then
  log "bench"
  timeout 400 python3 bench/bench.py --out "$out/bench"
  echo "bench: exit $?"
  log "ModelNew self-check"
  timeout 120 python3 bench/kernelbench_l1_p50.py; echo "modelnew: exit $?"
fi
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$out/tuning.db" 2>/dev/null
rm -f "$out/none.db"* "$out/memcheck.db"*
} 2>&1 | tee "$out/session.log"
