#!/usr/bin/env bash
# compute-sanitizer's memcheck over the general families (gm, gmp, gmk, gme, pw,
# pwq, pwe, pwqe, tap and their 3xTF32 twins) and their layout passes, and
# the depthwise families dw and dwc: for each shape and
# precision, an in-process tune (--no-isolate, so the sanitizer sees every
# launch: the layout and packing kernels, the main kernels, the float64
# reference) of about one variant of each family the shape is offered,
# which must end with no sanitizer error, every trial timed (none wrong,
# faulted or failed) and each offered family timed at least once.  The
# shapes: odd C, K, H and W with a stride, padding and a partial tile
# (gm, gmp, gmk); a dilated, padded filter over 44-wide rows (tap's
# windows off the 16-byte boundary); a 14 x 14 plane (tap's flat form);
# a 1x1 over C = 130 (pw, with a partial channel block); a 1x1 over
# 36 x 36 planes (pwq's ping-pong consumers, partial tiles both ways); a
# 1x1 over 7 x 9 planes with C % 4 = 0 (gm's weight map over the
# caller's w); a 1x1 at stride 2 with C % 4 = 0 (gmp's weight map over
# the caller's w, at tf32); 1x1s whose w is 16 KiB, 64 x 64, NCHW and
# NHWC (pw's and gm's weight maps over the caller's w where no box
# crosses its bounds); a 1x1 over 7 x 7 planes, C = 132, K = 70 (pw's
# whole-image runs, a partial channel block); depthwise problems (dw's
# staged tiles overhanging the plane, a channel multiplier, a stride, a
# dilated 5x3 filter with a residual; dwc's partial channel and column
# tiles over NHWC).  The sanitizer
# writes its report to a log file (by default it shares stdout, which
# carries the tune's JSON).
# Exits 77 where no GPU is usable or compute-sanitizer is not installed.
#   tests/test_gpu_memcheck.sh PATH/TO/convtune
set -u
ct=${1:?usage: test_gpu_memcheck.sh CONVTUNE}
ct=$(cd "$(dirname "$ct")" && pwd)/$(basename "$ct")
if ! python3 -c 'import json' 2>/dev/null; then
  echo "FAIL: needs python3"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CONVTUNE_TEST_FAKE_GPU CONVTUNE_TEST_FAMILIES
. "$(dirname "$0")/tune_test_lib.sh"
# The GPU first (listing a space reads the device's limits), then the tool.
if ! "$ct" space --problem "n=1,c=4,h=8,w=8,k=4,r=3,s=3" > /dev/null 2> "$tmp/space.err"; then
  if grep -q "no CUDA driver\|no CUDA device" "$tmp/space.err"; then
    echo "SKIP: no usable GPU: $(grep -m1 'CUDA' "$tmp/space.err")"
    exit 77
  fi
  echo "FAIL: convtune space: $(cat "$tmp/space.err")"
  exit 1
fi
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$san" ]; then
  echo "SKIP: compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
  exit 77
fi

families="gm,gm3,gmp,gmp3,gmk,gmk3,gme,gme3,pw,pw3,pwq,pwe,pwqe,tap,tap3,dw,dwc"
shapes=(
  "n=2,c=5,h=17,w=19,k=20,r=3,s=3,stride=2,pad=1"
  "n=3,c=40,h=20,w=44,k=70,r=3,s=5,pad=1x2,dil=1x2,act=relu"
  "n=4,c=48,h=14,w=14,k=70,r=3,s=3,pad=1"
  "n=3,c=130,h=12,w=30,k=70,r=1,s=1"
  "n=16,c=130,h=36,w=36,k=70,r=1,s=1"
  "n=3,c=256,h=7,w=9,k=136,r=1,s=1"
  "n=2,c=256,h=15,w=17,k=132,r=1,s=1,stride=2"
  "n=2,c=64,h=16,w=17,k=64,r=1,s=1"
  "n=4,c=64,h=15,w=13,k=64,r=1,s=1,layout=nhwc"
  "n=8,c=132,h=7,w=7,k=70,r=1,s=1"
  "n=3,c=130,h=12,w=30,k=70,r=1,s=1,act=relu,residual=1"
  "n=4,c=48,h=14,w=14,k=70,r=3,s=3,pad=1,residual=1,layout=nhwc"
  "n=8,c=132,h=7,w=7,k=70,r=1,s=1,residual=1"
  "n=2,c=12,h=17,w=19,k=24,r=3,s=3,stride=2,pad=1,groups=12"
  "n=3,c=8,h=9,w=70,k=8,r=5,s=3,pad=2x1,dil=1x2,act=relu,residual=1,groups=8"
  "n=2,c=40,h=9,w=11,k=80,r=3,s=3,stride=2,pad=1,groups=40,residual=1,layout=nhwc"
)
# offered SPEC PREC: the general families the space offers, comma-separated.
offered() {
  "$ct" space --problem "$1" --precision "$2" --families "$families" --json 2>"$tmp/space.err" |
    python3 -c 'import json,sys; print(",".join(sorted({v["family"] for v in json.load(sys.stdin)["variants"]})))'
}
for spec in "${shapes[@]}"; do
  for prec in tf32 fp32; do
    fams=$(offered "$spec" "$prec")
    if [ -z "$fams" ]; then
      bad "$spec $prec: no general family offered ($(head -c 300 "$tmp/space.err"))"
      continue
    fi
    nfam=$(echo "$fams" | tr ',' '\n' | wc -l)
    t0=$(date +%s)
    "$san" --tool memcheck --error-exitcode 3 --print-limit 10 --log-file "$tmp/san.log" \
      "$ct" tune --no-isolate --problem "$spec" --precision "$prec" --families "$fams" \
      --max-variants "$nfam" --trials 1 --final-trials 2 --finalists 1 --fresh \
      --db "$tmp/m.db" --json > "$tmp/t.json" 2> "$tmp/t.err"
    rc=$?
    echo "$spec $prec ($fams): exit $rc in $(( $(date +%s) - t0 )) s"
    grep -E "^=========" "$tmp/san.log" | grep -v "COMPUTE-SANITIZER" | head -12
    [ $rc -eq 0 ] || tail -n 5 "$tmp/t.err" | sed 's/^/  | /'
    check "$spec $prec: memcheck clean, the tune ends (exit 0)" "[ $rc -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' '$tmp/san.log'"
    [ -s "$tmp/t.json" ] || continue
    check "$spec $prec: every trial timed" "python3 -c '
import json, sys
bad = [(t[\"variant\"], t[\"status\"], t[\"message\"]) for t in json.load(open(sys.argv[1]))[\"trials\"] if t[\"status\"] != \"timed\"]
print(*bad, sep=\"\\n\") if bad else None
sys.exit(bool(bad))' '$tmp/t.json'"
    for f in $(echo "$fams" | tr ',' ' '); do
      check "$spec $prec: $f ran" "[ $(timed_of "$tmp/t.json" "$f:") -ge 1 ]"
    done
  done
done
echo "gpu memcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
