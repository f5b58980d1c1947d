#!/usr/bin/env bash
# The FFMA families' kernels (direct, dw, dwc) run on the CPU (tests/emu_kernel.cc: a
# std::thread per CUDA thread, blocks one after another), each case's
# output checked against the float64 reference under its precision
# contract, with NaN around the inputs and a canary around y.  `direct`:
# grouped and depthwise problems in both layouts (a channel multiplier, a
# residual and a ReLU, dilation, stride, the weight staging in several
# passes, weights read from global memory), and ungrouped ones.  `dw`:
# depthwise problems (stride, dilation, padding past the kernel, a channel
# multiplier, a residual and a ReLU, tiles overhanging the plane, one
# channel).  `dwc`: depthwise NHWC problems (partial channel and column
# tiles, a channel multiplier with stride, dilation, residual and ReLU, a
# 60-tap filter read tap by tap).  ReLU6 in each family.  `tc` and `tc3`
# (mma.sync, emulated warp by warp): a stem-like 5x5 over 3 channels,
# grouped problems with 4 output channels a group (BN = 8, half past each
# group) and with two channel blocks a group.  Nine mutated kernels (a
# group's input channels, NHWC weights read at the stride of C, the
# epilogue without its residual and ReLU, dw's tile without its padding,
# dwc's channel multiplier ignored, ReLU6 without its clamp to 6, tc's
# band from group 0, an A fragment from the wrong pixel, tc3 with its
# hi x hi products alone) must fail, so that the check can.
#   tests/test_emulated.sh EMU_SOURCE CXX SOURCE_ROOT LIBCT_TUNE LIBCT_GEN
set -u
src_tool=${1:?usage: test_emulated.sh EMU_SOURCE CXX SOURCE_ROOT LIBCT_TUNE LIBCT_GEN}
cxx=$2 root=$3 libs="$4 $5"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' > "$tmp/probe.cc"
if [ -z "$cxx" ] || ! "$cxx" -std=c++20 -o "$tmp/probe" "$tmp/probe.cc" -lpthread 2> /dev/null; then
  echo "SKIP: needs a C++20 compiler with <barrier> (found: '${cxx:-none}')"
  exit 77
fi

# run NAME SPEC VARIANT [SED]: builds and runs one case (its source
# mutated by the sed expression SED); prints its line.  Status 0: passes
# its check, 1: fails it, 2: no source, a mutation that changes nothing,
# or no build.
run() {
  local dir="$tmp/$1" prec=fp32 fam=${3%%:*}
  case "$2" in *prec=tf32*) prec=tf32 ;; esac
  mkdir -p "$dir"
  "$src_tool" "$2" $prec "$3" > "$dir/k.cu" || { echo "FAIL $2 $3: no source"; return 2; }
  if [ -n "${4:-}" ]; then # a control: the mutation must change the source
    sed "$4" "$dir/k.cu" > "$dir/m.cu" && ! cmp -s "$dir/k.cu" "$dir/m.cu" ||
      { echo "FAIL $2 $3: the mutation '$4' changes nothing"; return 2; }
    mv "$dir/m.cu" "$dir/k.cu"
  fi
  # a 3xTF32 twin's kernel is its family's (tc3: conv_tc)
  "$cxx" -std=c++20 -O1 -w -DKERNEL_SRC="\"$dir/k.cu\"" -DKERNEL_FN="conv_${fam%3}" \
    -I"$root/runtime" -I"$root/generator" -I"$root/tuner" -I"$root/templates" \
    "$root/tests/emu_kernel.cc" $libs -lm -lpthread \
    -o "$dir/emu" 2> "$dir/cc.log" || { echo "FAIL $2 $3: does not build"; head -5 "$dir/cc.log"; return 2; }
  "$dir/emu" "$2" $prec "$3"
}
export -f run
export tmp src_tool cxx root libs

cases=(
  "n=2,c=8,h=9,w=7,k=16,r=3,s=3,pad=1,groups=4|direct:THREADS=128,TP=4,TK=4"
  "n=2,c=8,h=9,w=7,k=16,r=3,s=3,pad=1,groups=4|direct:THREADS=64,TP=1,TK=1"
  "n=2,c=12,h=11,w=10,k=12,r=3,s=3,stride=2,pad=1,act=relu,groups=12|direct:THREADS=128,TP=4,TK=1"
  "n=2,c=12,h=11,w=10,k=12,r=3,s=3,stride=2,pad=1,act=relu,groups=12|direct:THREADS=256,TP=2,TK=1"
  "n=2,c=6,h=7,w=9,k=12,r=2,s=3,dil=2x1,pad=1,groups=3,layout=nhwc,residual=1,act=relu|direct:THREADS=64,TP=2,TK=4"
  "n=2,c=6,h=7,w=9,k=12,r=2,s=3,dil=2x1,pad=1,groups=3,layout=nhwc,residual=1,act=relu|direct:THREADS=128,TP=4,TK=1"
  "n=1,c=8,h=6,w=5,k=16,r=3,s=3,pad=1,groups=8,layout=nhwc|direct:THREADS=64,TP=4,TK=1"
  "n=1,c=128,h=5,w=6,k=32,r=3,s=3,pad=1,groups=2|direct:THREADS=128,TP=4,TK=16"
  "n=3,c=128,h=5,w=6,k=32,r=3,s=3,pad=1,groups=2,layout=nhwc,residual=1|direct:THREADS=64,TP=2,TK=8"
  "n=1,c=2,h=1,w=6300,k=4,r=1,s=6200,groups=2|direct:THREADS=128,TP=4,TK=1"
  "n=1,c=4,h=2,w=6300,k=4,r=2,s=6200,groups=2,layout=nhwc,bias=0|direct:THREADS=64,TP=1,TK=1"
  "n=1,c=3,h=35,w=39,k=96,r=11,s=11,stride=4,pad=2|direct:THREADS=128,TP=4,TK=8"
  "n=2,c=5,h=17,w=15,k=16,r=5,s=5,pad=2,layout=nhwc|direct:THREADS=256,TP=2,TK=16"
  "n=2,c=16,h=9,w=11,k=20,r=3,s=3,pad=1,act=relu,residual=1|direct:THREADS=64,TP=4,TK=4"
  "n=1,c=100,h=5,w=5,k=8,r=3,s=3,pad=2,dil=2|direct:THREADS=128,TP=1,TK=8"
  "n=2,c=8,h=13,w=11,k=8,r=3,s=3,pad=1,groups=8,bias=0|dw:THREADS=128,TP=2,BQ=16"
  "n=2,c=8,h=13,w=11,k=8,r=3,s=3,pad=1,groups=8|dw:THREADS=64,TP=2,BQ=8"
  "n=1,c=6,h=17,w=19,k=12,r=3,s=3,stride=2,pad=1,groups=6,act=relu|dw:THREADS=128,TP=1,BQ=16"
  "n=2,c=4,h=9,w=70,k=4,r=5,s=3,dil=2x3,pad=3x4,groups=4,act=relu,residual=1|dw:THREADS=64,TP=4,BQ=64"
  "n=1,c=3,h=7,w=7,k=9,r=7,s=7,pad=3,groups=3|dw:THREADS=64,TP=1,BQ=8"
  "n=3,c=1,h=12,w=10,k=2,r=2,s=4,stride=3x2,pad=2|dw:THREADS=64,TP=1,BQ=8"
  "n=2,c=40,h=9,w=11,k=40,r=3,s=3,pad=1,groups=40,layout=nhwc|dwc:CB=16,TP=4,RB=4"
  "n=1,c=24,h=13,w=17,k=72,r=5,s=3,stride=2,dil=1x2,pad=2x3,groups=24,layout=nhwc,act=relu,residual=1,bias=0|dwc:CB=16,TP=2,RB=2"
  "n=2,c=8,h=3,w=300,k=8,r=1,s=60,pad=0x5,groups=8,layout=nhwc|dwc:CB=16,TP=4,RB=2"
  "n=2,c=16,h=9,w=11,k=20,r=3,s=3,pad=1,act=relu6|direct:THREADS=64,TP=4,TK=4"
  "n=2,c=6,h=13,w=17,k=12,r=3,s=3,stride=2,pad=1,groups=6,act=relu6,residual=1|dw:THREADS=64,TP=2,BQ=16"
  "n=2,c=48,h=7,w=9,k=48,r=3,s=3,pad=1,groups=48,layout=nhwc,act=relu6|dwc:CB=16,TP=2,RB=2"
  "n=2,c=3,h=35,w=33,k=40,r=5,s=5,stride=2,pad=2,act=relu,prec=tf32|tc:TP=2,BN=48,WARPS=4,WN=2,STAGES=2,PERSIST=1"
  "n=2,c=3,h=35,w=33,k=40,r=5,s=5,stride=2,pad=2,prec=fp32|tc3:TP=3,BN=48,WARPS=4,WN=2,STAGES=1,PERSIST=0"
  "n=2,c=32,h=9,w=33,k=32,r=3,s=3,stride=2,pad=1,groups=8,act=relu6,prec=tf32|tc:TP=4,BN=8,WARPS=4,WN=1,STAGES=2,PERSIST=1"
  "n=2,c=32,h=9,w=33,k=32,r=3,s=3,stride=2,pad=1,groups=8,bias=0,prec=fp32|tc3:TP=3,BN=8,WARPS=4,WN=1,STAGES=1,PERSIST=0"
  "n=3,c=48,h=7,w=7,k=96,r=3,s=3,pad=1,groups=3,prec=tf32|tc:TP=4,BN=16,WARPS=4,WN=2,STAGES=1,PERSIST=2"
)
i=0
for c in "${cases[@]}"; do
  i=$((i + 1))
  echo "case$i|${c%%|*}|${c#*|}"
done | xargs -P "$(nproc)" -I{} bash -c 'IFS="|" read n s v <<< "{}"; run "$n" "$s" "$v"' > "$tmp/cases.out"
cat "$tmp/cases.out"
pass=$(grep -c '^ok ' "$tmp/cases.out")
fail=$(( ${#cases[@]} - pass ))

# The controls: each mutated kernel must build, run and fail its check.
control() { # NAME CASE-INDEX SED
  local c=${cases[$2]} rc
  run "control-$1" "${c%%|*}" "${c#*|}" "$3" > "$tmp/control.out"
  rc=$?
  if [ $rc -eq 1 ]; then
    echo "ok   control: $1 fails"; pass=$((pass + 1))
  else
    echo "FAIL control: $1: status $rc, wanted 1 (its check failing)"; sed 's/^/    /' "$tmp/control.out"
    fail=$((fail + 1))
  fi
}
control "the group's channels not offset" 0 's/x_row(NG > 1 ? (I)(k0 \/ KG) \* CG : 0, 0)/x_row(0, 0)/'
control "NHWC weights at the stride of C" 4 's/\* CG + c;/* C + c;/'
control "no residual, no ReLU" 13 's/ct_fin(acc\[kk\]\[i\] + bv, r\[i\])/(acc[kk][i] + bv)/'
control "dw: the tile without its padding" 18 's/ : 0.0f;/ : 1.0f;/'
control "dwc: the channel multiplier ignored" 22 's/const int c = k \/ M;/const int c = k % C;/'
control "ReLU6 without its clamp to 6" 24 's/v > 6.0f ? 6.0f : v/v/'
control "tc: the band from group 0" 29 's/ + c0 \* H \* W;/;/'
control "tc: an A fragment from the wrong pixel" 27 's/f.a\[i\]\[1\] = lds_at(bandb, pb\[i\]\[1\]/f.a[i][1] = lds_at(bandb, pb[i][0]/'
control "tc3: hi x hi alone (TF32 products)" 28 's/for (int term = 0; term < 3; ++term)/for (int term = 2; term < 3; ++term)/'

echo "emulated: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
